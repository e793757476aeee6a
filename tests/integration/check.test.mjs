// `mcpwarden check` and `mcpwarden diff` (issue 4, item 4) as a pipeline
// runs them: exit codes, --json shapes, and the connection rules, against
// @modelcontextprotocol/server-everything over Streamable HTTP and over
// legacy SSE, and against our contract peer (paginated and broken
// listings, redirects, 401, an expiring session, oversized replies, the
// 2026-07-28 era), plus --tools-file and diff on a pair per change code.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, mkdtempSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import {
  EVERYTHING_ENTRY, REPO_ROOT, requireWarden, spawnTracked, startEverything, stop, stopAll, waitForPort, WARDEN_BIN,
} from './lib/procs.mjs';
import { withTimeout, waitFor } from './lib/util.mjs';
import { startContractPeer, GOOD } from './peers/contract-peer.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';
import { postJson } from './lib/http.mjs';
import http from 'node:http';

/**
 * A server answering every request with `status`, `headers` and `body`
 * (a Playwright MCP-like 403 that explains itself). Returns {url, close()}.
 */
async function startRefusing({ status, headers = {}, body }) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => { res.writeHead(status, { 'content-type': 'text/plain', ...headers }); res.end(body); });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/mcp`,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

const T = { timeout: 30000 };
const MASK = '••••';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-check-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));
let nfile = 0;
function file(obj) {
  const p = path.join(tmp, `f${nfile++}.json`);
  writeFileSync(p, typeof obj === 'string' ? obj : JSON.stringify(obj));
  return p;
}

/** Runs ./mcpwarden with args and env: {code, stdout, stderr, out, json()}. */
async function warden(args, { env = {}, timeout = 15000 } = {}) {
  requireWarden();
  const h = spawnTracked('mcpwarden-check', WARDEN_BIN, args, { env });
  let status;
  try {
    status = await withTimeout(h.exited, timeout, `mcpwarden ${args.join(' ')}`);
  } finally {
    await stop(h, { signal: 'SIGKILL' });
  }
  return {
    code: status.code,
    stdout: h.stdout,
    stderr: h.stderr,
    out: `${h.stdout}\n${h.stderr}`,
    json() {
      try { return JSON.parse(h.stdout); } catch { throw new Error(`stdout is not JSON:\n${h.stdout}\nstderr:\n${h.stderr}`); }
    },
  };
}
const check = (args, opts) => warden(['check', ...args], opts);
const diff = (args, opts) => warden(['diff', ...args], opts);
const show = (r) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

after(async () => { await stopAll(); });

describe('check against server-everything', () => {
  let se;
  let legacy;

  before(async () => {
    se = await startEverything(await freePort());
    const port = await freePort();
    const h = spawnTracked(`server-everything-sse:${port}`, process.execPath,
      ['--import', path.join(REPO_ROOT, 'tests/integration/lib/everything-preload.mjs'), EVERYTHING_ENTRY, 'sse'],
      { env: { PORT: String(port), MCPWARDEN_IT_STDIN_GUARD: '1' }, stdinPipe: true });
    await waitForPort(h, port, 15000);
    legacy = { proc: h, port, base: `http://127.0.0.1:${port}` };
  }, T);

  test('Streamable HTTP: passes, exit 0, and the session is deleted', T, async () => {
    const r = await check([se.url]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /transport streamable_http, protocol 2025-11-25, 1 page/);
    assert.match(r.stdout, /^PASSED: 0 problems, 0 breaking changes$/m);
    // server-everything logs the DELETE it received.
    await waitFor(() => /session termination request/i.test(se.proc.stdout + se.proc.stderr), { what: 'the DELETE' });
  });

  test('Streamable HTTP --json: the documented shape', T, async () => {
    const r = await check([se.url, '--json']);
    assert.equal(r.code, 0, show(r));
    const j = r.json();
    assert.ok(Array.isArray(j.tools) && j.tools.length >= 10, show(r));
    const echo = j.tools.find((t) => t.name === 'echo');
    assert.deepEqual(echo, { name: 'echo', problems: [], warnings: [] });
    assert.deepEqual(j.problems, []);
    assert.deepEqual(j.changes, []);
    assert.equal(j.score, 1);
    assert.equal(j.passed, true);
    assert.equal(j.source.transport, 'streamable_http');
    assert.equal(j.source.url, se.url);
  });

  test('legacy SSE at /sse: passes over the HTTP+SSE transport', T, async () => {
    const r = await check([`${legacy.base}/sse`, '--json']);
    assert.equal(r.code, 0, show(r));
    const j = r.json();
    assert.equal(j.source.transport, 'sse');
    assert.ok(j.tools.some((t) => t.name === 'echo'));
    assert.equal(j.passed, true);
  });

  // Issue 17: `check` and `--upstream-transport auto` follow ONE rule
  // (upstream_sse_auto_first / _probe_refused / _stream_refused): the other
  // transport on the URL as given (docs/transports.md), no sibling /sse.
  // Before, check derived /sse from /mcp and passed where the proxy, in
  // front of the same URL, answered 502.
  for (const [p, ok] of [['/mcp', false], ['/sse', true]]) {
    test(`auto on ${p} of a legacy server: check and the proxy agree (${ok ? 'both work' : 'both fail'})`, T, async () => {
      const url = `${legacy.base}${p}`;
      const r = await check([url]);
      const port = await freePort();
      const w = spawnTracked(`mcpwarden-auto:${port}`, WARDEN_BIN,
        ['--listen', `127.0.0.1:${port}`, '--upstream', url, '--upstream-transport', 'auto', '--admin', 'off']);
      try {
        await waitForPort(w, port, 10000);
        const init = await postJson(`http://127.0.0.1:${port}/mcp`, {
          jsonrpc: '2.0', id: 1, method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'it', version: '1' } },
        });
        if (ok) {
          assert.equal(r.code, 0, show(r));
          assert.match(r.stdout, /transport sse/);
          assert.equal(init.status, 200, init.text);
        } else {
          assert.equal(r.code, 2, show(r));
          // The fallback GET went to the URL as given, as the proxy's does.
          assert.match(r.stderr, new RegExp(`no SSE stream at ${url.replace(/[.]/g, '\\.')}: HTTP 404`));
          // The hint names the rule instead of guessing a URL.
          assert.match(r.stderr, /give its SSE URL/);
          assert.equal(init.status, 502, init.text);
        }
      } finally {
        await stop(w);
      }
    });
  }

  test('--transport streamable_http on a legacy server: exit 2, no fallback', T, async () => {
    const r = await check([`${legacy.base}/mcp`, '--transport', 'streamable_http']);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /initialize at http:\/\/127\.0\.0\.1:\d+\/mcp: HTTP 404/);
  });

  test('--transport sse on a Streamable HTTP server: exit 2', T, async () => {
    const r = await check([se.url, '--transport', 'sse']);
    assert.equal(r.code, 2, show(r));
    // The URL as given (the proxy's rule): no sibling /sse.
    assert.match(r.stderr, /no SSE stream at http:\/\/127\.0\.0\.1:\d+\/mcp: HTTP 4\d\d/);
  });
});

describe('check against the contract peer', () => {
  let peer;
  before(async () => { peer = await startContractPeer(); });
  after(async () => { await peer?.close(); });

  for (const format of ['json', 'sse']) {
    test(`a broken paginated listing (${format}): exit 1, findings with pointers into the pages`, T, async () => {
      const r = await check([peer.url('broken', format), '--json']);
      assert.equal(r.code, 1, show(r));
      const j = r.json();
      assert.deepEqual(j.tools.map((t) => t.name), ['search', 'nodesc', 'search', 'fetch']);
      const nodesc = j.tools[1];
      assert.deepEqual(nodesc.problems.map((p) => [p.code, p.pointer]), [['description-missing', '/0/tools/1/description']]);
      assert.deepEqual(j.problems.map((p) => [p.code, p.pointer]), [['duplicate-name', '/1/tools/0/name']]);
      assert.equal(j.score, 0.75);
      assert.equal(j.passed, false);
      assert.equal(j.source.pages, 2);
      assert.equal(j.exit, 1);
    });
  }

  test('the text report names the problems and says FAILED', T, async () => {
    const r = await check([peer.url('broken')]);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stdout, /transport streamable_http, protocol 2025-11-25, 2 pages/);
    assert.match(r.stdout, /description-missing/);
    assert.match(r.stdout, /^FAILED: 2 problems, 0 breaking changes$/m);
  });

  test('every page is listed and the session is deleted', T, async () => {
    const before = peer.received.length;
    const r = await check([peer.url('paged')]);
    assert.equal(r.code, 0, show(r));
    const mine = peer.received.slice(before);
    const cursors = mine.filter((x) => x.body?.method === 'tools/list').map((x) => x.body.params?.cursor ?? null);
    assert.deepEqual(cursors, [null, 'paged-p1', 'paged-p2']);
    const del = mine.filter((x) => x.method === 'DELETE');
    assert.equal(del.length, 1);
    assert.match(del[0].headers['mcp-session-id'], /^sess-\d+$/);
    // Order: discover probe, initialize, initialized, pages, DELETE.
    assert.deepEqual(mine.map((x) => x.body?.method ?? x.method).slice(0, 3),
      ['server/discover', 'initialize', 'notifications/initialized']);
    assert.equal(mine[1].headers['mcp-protocol-version'], undefined);
    assert.equal(mine[3].headers['mcp-protocol-version'], '2025-11-25');
  });

  test('--lenient: problems are reported but exit 0', T, async () => {
    const r = await check([peer.url('broken'), '--lenient', '--json']);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.json().passed, false);
    assert.equal(r.json().exit, 0);
  });

  test('--spec-only: usability problems become warnings', T, async () => {
    const r = await check([peer.url('broken'), '--spec-only', '--json']);
    assert.equal(r.code, 0, show(r));
    const j = r.json();
    assert.deepEqual(j.problems, []);
    assert.ok(j.warnings.some((w) => w.code === 'duplicate-name'));
  });

  test('a cursor that does not advance: cursor-loop, exit 1, no endless paging', T, async () => {
    const before = peer.calls('tools/list').length;
    const r = await check([peer.url('loop'), '--json']);
    assert.equal(r.code, 1, show(r));
    const j = r.json();
    assert.ok(j.problems.some((p) => p.code === 'cursor-loop'), show(r));
    assert.ok(j.source.notes.some((n) => /nextCursor repeats/.test(n)));
    assert.equal(peer.calls('tools/list').length - before, 2);
  });

  test('an empty listing: no-tools, exit 1', T, async () => {
    const r = await check([peer.url('empty'), '--json']);
    assert.equal(r.code, 1, show(r));
    assert.deepEqual(r.json().problems.map((p) => p.code), ['no-tools']);
  });

  test('--save-baseline, then --baseline: a removed tool is breaking even with --lenient', T, async () => {
    const base = path.join(tmp, 'saved-baseline.json');
    const s = await check([peer.url('paged'), '--save-baseline', base]);
    assert.equal(s.code, 0, show(s));
    assert.match(s.stderr, /baseline saved to .* \(3 tools\)/);
    const saved = JSON.parse(readFileSync(base, 'utf8'));
    assert.deepEqual(saved.tools.map((t) => t.name), ['search', 'fetch', 'store']);
    // The same server again: no change.
    const same = await check([peer.url('paged'), '--baseline', base, '--json']);
    assert.equal(same.code, 0, show(same));
    assert.deepEqual(same.json().changes, []);
    // "clean" lists search and fetch only: store was removed.
    const r = await check([peer.url('clean'), '--baseline', base, '--lenient', '--json']);
    assert.equal(r.code, 1, show(r));
    const j = r.json();
    assert.equal(j.breaking, 1);
    assert.deepEqual(j.changes, [{ code: 'tool-removed', kind: 'breaking', tool: 'store', pointer: '/tools/2', message: 'tool "store" removed' }]);
    const t = await check([peer.url('clean'), '--baseline', base]);
    assert.match(t.stdout, /breaking tool-removed tool "store"/);
    assert.match(t.stdout, /^FAILED: 0 problems, 1 breaking change$/m);
  });

  test('a listing cut by a cursor loop is never saved as a baseline', T, async () => {
    const base = path.join(tmp, 'loop-baseline.json');
    const r = await check([peer.url('loop'), '--save-baseline', base]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /baseline NOT saved/);
    assert.equal(existsSync(base), false);
  });

  test('a reply over 8 MiB fails with exit 2', T, async () => {
    const big = await startContractPeer({ bigList: true });
    try {
      const r = await check([big.url()]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, /over 8 MiB/);
    } finally { await big.close(); }
  });

  test('--protocol pins the initialize version and skips the discover probe', T, async () => {
    const before = peer.received.length;
    const r = await check([peer.url('clean'), '--protocol', '2025-06-18', '--json']);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.json().source.protocol, '2025-06-18');
    const mine = peer.received.slice(before);
    assert.equal(mine[0].body.method, 'initialize');
    assert.equal(mine[0].body.params.protocolVersion, '2025-06-18');
    assert.ok(!mine.some((x) => x.body?.method === 'server/discover'));
  });
});

describe('check: connecting', () => {
  const peers = [];
  const mk = async (opts) => { const p = await startContractPeer(opts); peers.push(p); return p; };
  after(async () => { for (const p of peers) await p.close(); });

  test('the 2026-07-28 era: server/discover, then stateless tools/list with the envelope', T, async () => {
    const p = await mk({ modern: true, listings: { bare: { pages: [[GOOD('a')]], bare: true } } });
    const r = await check([p.url('paged'), '--json']);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.json().source.protocol, '2026-07-28');
    const lists = p.calls('tools/list');
    assert.equal(lists.length, 3);
    assert.equal(lists[0].headers['mcp-protocol-version'], '2026-07-28');
    assert.equal(lists[0].headers['mcp-method'], 'tools/list');
    assert.equal(lists[0].body.params._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
    assert.equal(lists[0].headers['mcp-session-id'], undefined);
    assert.equal(p.calls('initialize').length, 0);
    assert.ok(!p.received.some((x) => x.method === 'DELETE'));
    // A modern listing without resultType/ttlMs/cacheScope fails.
    const b = await check([p.url('bare'), '--json']);
    assert.equal(b.code, 1, show(b));
    assert.deepEqual(b.json().problems.map((x) => x.code).sort(),
      ['cache-fields-missing', 'cache-fields-missing', 'result-type-missing']);
  });

  test('an expiring session: 404 → initialize again, list again from page 1', T, async () => {
    const p = await mk({ expireFirstList: true });
    const r = await check([p.url('paged'), '--json']);
    assert.equal(r.code, 0, show(r));
    assert.ok(r.json().source.notes.some((n) => /session expired/.test(n)), show(r));
    assert.equal(p.calls('initialize').length, 2);
    const lists = p.calls('tools/list');
    assert.deepEqual(lists.map((x) => x.headers['mcp-session-id']), ['sess-1', 'sess-2', 'sess-2', 'sess-2']);
    const del = p.received.filter((x) => x.method === 'DELETE');
    assert.deepEqual(del.map((x) => x.headers['mcp-session-id']), ['sess-2']);
  });

  test('401: exit 2 at once with a hint, no fallback to SSE', T, async () => {
    const p = await mk({ authToken: 'correct-horse-battery' });
    const r = await check([p.url()]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /HTTP 401 .*--header 'Authorization: Bearer \$\{TOKEN\}'/);
    assert.equal(p.received.length, 1, 'one request, then stop');
  });

  // Issue 17: a 403 is not always about credentials (Playwright MCP's says
  // which Host it accepts): check prints the status and the server's words,
  // bounded and sanitised, and says "credentials" only for 401, or for a
  // 403 whose WWW-Authenticate says insufficient_scope. Before, every 403
  // got the credentials hint and its body was dropped.
  test('403 with a text body: the status and the body, no credentials hint', T, async () => {
    const p = await startRefusing({ status: 403, body: 'Access is only allowed at localhost:8931\n' });
    try {
      const r = await check([p.url]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, /HTTP 403 from http:\/\/127\.0\.0\.1:\d+\/mcp for \S+: Access is only allowed at localhost:8931/);
      assert.doesNotMatch(r.out, /credentials|--header/);
    } finally { await p.close(); }
  });

  test('403 insufficient_scope: the credentials hint, and the server\'s words', T, async () => {
    const p = await startRefusing({
      status: 403,
      headers: { 'www-authenticate': 'Bearer error="insufficient_scope", scope="tools:read"' },
      body: 'scope tools:read needed',
    });
    try {
      const r = await check([p.url]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, /HTTP 403 .*insufficient_scope/);
      assert.match(r.stderr, /credentials/);
      assert.match(r.stderr, /scope tools:read needed/);
    } finally { await p.close(); }
  });

  test('a refusal body is printed bounded, without control characters or credentials', T, async () => {
    const secret = 'tok-0123456789-secret';
    const body = `\x1b[31mdenied\x1b[0m\r\nyou sent Bearer ${secret} and Basic dXNlcjpwYXNz\x00 ${'x'.repeat(5000)}`;
    const p = await startRefusing({ status: 403, body });
    try {
      const r = await check([p.url, '--header', `Authorization: Bearer ${secret}`]);
      assert.equal(r.code, 2, show(r));
      const line = r.stderr.split('\n').find((l) => /HTTP 403/.test(l)) ?? '';
      assert.match(line, /denied/);
      // eslint-disable-next-line no-control-regex
      assert.doesNotMatch(line, /[\x00-\x08\x0b-\x1f\x7f]/);
      assert.ok(!r.out.includes(secret), 'the token is never printed');
      assert.ok(!r.out.includes('dXNlcjpwYXNz'), 'a Basic credential is never printed');
      assert.ok(line.length < 800, `line of ${line.length} characters`);
    } finally { await p.close(); }
  });

  test('--header with ${ENV}: filled in on the wire, printed as ••••', T, async () => {
    const secret = 'correct-horse-battery';
    const p = await mk({ authToken: secret });
    const r = await check([p.url(), '--header', 'Authorization: Bearer ${MW_TEST_TOKEN}', '--json'],
      { env: { MW_TEST_TOKEN: secret } });
    assert.equal(r.code, 0, show(r));
    assert.ok(!r.out.includes(secret), 'the secret never appears');
    assert.deepEqual(r.json().source.headers, { Authorization: MASK });
    assert.ok(p.received.every((x) => x.headers.authorization === `Bearer ${secret}`));
    const t = await check([p.url(), '--header', 'Authorization: Bearer ${MW_TEST_TOKEN}'], { env: { MW_TEST_TOKEN: secret } });
    assert.match(t.stdout, /headers: Authorization: ••••/);
    assert.ok(!t.out.includes(secret));
  });

  test('a server that echoes a header value: the value is masked in the error', T, async () => {
    const key = 'k-1234567890-secret';
    const p = await mk({ echoHeaderError: 'x-api-key' });
    const r = await check([p.url(), '--header', 'X-Api-Key: ${MW_TEST_KEY}'], { env: { MW_TEST_KEY: key } });
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /rejected x-api-key ••••/);
    assert.ok(!r.out.includes(key));
  });

  test('an unset ${ENV} in --header is a usage error (exit 2)', T, async () => {
    const r = await check(['http://127.0.0.1:1/mcp', '--header', 'Authorization: Bearer ${MW_SURELY_UNSET_VAR}']);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /MW_SURELY_UNSET_VAR is not set/);
  });

  test('an odd ${…} name in --header is a usage error (exit 2), the conf\'s rule', T, async () => {
    // Before, check looked MW-TOKEN up (and found it) and failed only on connecting.
    const r = await check(['http://127.0.0.1:1/mcp', '--header', 'Authorization: Bearer ${MW-TOKEN}'],
      { env: { 'MW-TOKEN': 'tok-odd-name-1' } });
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /--header Authorization: \$\{…\} must name an environment variable \(\[A-Za-z_\]/);
    assert.ok(!r.out.includes('tok-odd-name-1'));
  });

  test('URLs are printed without user, password or query', T, async () => {
    const p = await mk({});
    const r = await check([`http://alice:pw-s3cret-1@127.0.0.1:${p.port}/clean/json/mcp?token=qq-secret-9`]);
    assert.equal(r.code, 0, show(r));
    assert.ok(r.stdout.includes(`http://127.0.0.1:${p.port}/clean/json/mcp`), show(r));
    for (const s of ['alice', 'pw-s3cret-1', 'qq-secret-9', 'token=']) assert.ok(!r.out.includes(s), `${s} leaked:\n${r.out}`);
    // user:password became Basic auth on the wire; the query was sent.
    assert.equal(p.received[0].headers.authorization, `Basic ${Buffer.from('alice:pw-s3cret-1').toString('base64')}`);
    assert.equal(p.received[0].url, '/clean/json/mcp?token=qq-secret-9');
  });

  test('a redirect to another origin drops the configured headers', T, async () => {
    const target = await mk({});
    const front = await mk({ redirectTo: target.url('clean') });
    const r = await check([front.url(), '--header', 'Authorization: Bearer ${MW_TEST_TOKEN}', '--header', 'X-Team: blue'],
      { env: { MW_TEST_TOKEN: 'front-only-token' } });
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /note: redirected to another origin/);
    assert.equal(front.received.length, 1);
    assert.equal(front.received[0].headers.authorization, 'Bearer front-only-token');
    assert.ok(target.received.length >= 4);
    for (const x of target.received) {
      assert.equal(x.headers.authorization, undefined, 'Authorization crossed origins');
      assert.equal(x.headers['x-team'], undefined);
    }
  });

  test('a redirect on the same origin keeps them', T, async () => {
    const p = await mk({ redirects: { '/old/mcp': '/clean/json/mcp' } });
    const r = await check([`${p.base}/old/mcp`, '--header', 'X-Team: blue']);
    assert.equal(r.code, 0, show(r));
    assert.equal(p.received[0].url, '/old/mcp');
    assert.ok(p.received.slice(1).every((x) => x.url === '/clean/json/mcp' && x.headers['x-team'] === 'blue'));
  });

  test('more than 3 redirects: exit 2', T, async () => {
    const p = await mk({ redirectLoop: true });
    const r = await check([`${p.base}/hop0/mcp`]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /more than 3 redirects/);
    assert.equal(p.received.length, 4);
  });

  test('a server that never answers: --timeout, exit 2', T, async () => {
    const p = await startScriptedPeer({ mode: 'silent' });
    try {
      const t0 = Date.now();
      const r = await check([p.url, '--timeout', '0.5']);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, /no answer within 0\.5 s while waiting for server\/discover/);
      assert.ok(Date.now() - t0 < 5000);
    } finally { await p.close(); }
  });

  test('nothing listening: exit 2 with the reason', T, async () => {
    const port = await freePort();
    const r = await check([`http://127.0.0.1:${port}/mcp`, '--json']);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /connection refused/);
    const j = r.json();
    assert.equal(j.passed, false);
    assert.match(j.error, /connection refused/);
  });

  test('tools/list answered with an error: exit 2', T, async () => {
    const p = await mk({});
    const r = await check([p.url('nosuchlisting')]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /tools\/list failed: JSON-RPC error -32601/);
  });
});

describe('check --tools-file', () => {
  const listing = { tools: [GOOD('search'), { name: 'bad', inputSchema: { type: 'object' } }] };

  test('{"tools":[...]}, a JSON-RPC response and a bare array read alike', T, async () => {
    for (const doc of [listing, { jsonrpc: '2.0', id: 1, result: listing }, listing.tools]) {
      const r = await check(['--tools-file', file(doc), '--json']);
      assert.equal(r.code, 1, show(r));
      const j = r.json();
      assert.deepEqual(j.tools[1].problems.map((p) => [p.code, p.pointer]), [['description-missing', '/tools/1/description']]);
      assert.equal(j.score, 0.5);
      assert.equal(j.source.protocol, null);
    }
  });

  test('--protocol 2026-07-28 adds the era checks; a good modern response passes', T, async () => {
    const good = { jsonrpc: '2.0', id: 1, result: { resultType: 'complete', ttlMs: 1000, cacheScope: 'public', tools: [GOOD('a')] } };
    const r = await check(['--tools-file', file(good), '--protocol', '2026-07-28']);
    assert.equal(r.code, 0, show(r));
    const b = await check(['--tools-file', file({ tools: [GOOD('a')] }), '--protocol', '2026-07-28', '--json']);
    assert.equal(b.code, 1, show(b));
    assert.ok(b.json().problems.some((p) => p.code === 'result-type-missing'));
  });

  test('with --baseline', T, async () => {
    const old = file({ tools: [GOOD('search'), GOOD('gone')] });
    const r = await check(['--tools-file', file({ tools: [GOOD('search')] }), '--baseline', old, '--json']);
    assert.equal(r.code, 1, show(r));
    assert.deepEqual(r.json().changes.map((c) => c.code), ['tool-removed']);
  });

  test('unreadable or tool-less files: exit 2', T, async () => {
    assert.equal((await check(['--tools-file', path.join(tmp, 'nope.json')])).code, 2);
    assert.equal((await check(['--tools-file', file({ nothing: 1 })])).code, 2);
    assert.equal((await check(['--tools-file', file('{"tools": [')])).code, 2);
    assert.equal((await check(['--tools-file', file(listing), '--baseline', file({ x: 1 })])).code, 2);
  });
});

describe('diff', () => {
  const tool = (over = {}) => ({
    name: 't',
    description: 'A perfectly fine tool used by the diff tests',
    inputSchema: {
      type: 'object',
      properties: {
        mode: { type: 'string', enum: ['a', 'b'], description: 'mode' },
        n: { type: 'integer', description: 'count' },
      },
      required: ['mode'],
    },
    outputSchema: { type: 'object', properties: { out: { type: 'string' } }, required: ['out'] },
    annotations: { readOnlyHint: true },
    ...over,
  });
  const base = tool();
  const withInput = (f) => { const t = structuredClone(base); f(t.inputSchema); return t; };
  const withOutput = (f) => { const t = structuredClone(base); f(t.outputSchema); return t; };
  const cases = [
    ['tool-removed', [], 1],
    ['param-removed', [withInput((s) => { delete s.properties.n; })], 1],
    ['param-now-required', [withInput((s) => { s.required.push('n'); })], 1],
    ['param-type-changed', [withInput((s) => { s.properties.n.type = 'string'; })], 1],
    ['enum-value-removed', [withInput((s) => { s.properties.mode.enum = ['a']; })], 1],
    ['output-property-removed', [withOutput((s) => { delete s.properties.out; s.required = []; })], 1],
    ['output-type-changed', [withOutput((s) => { s.properties.out.type = ['string', 'null']; })], 1],
    ['hint-weakened', [tool({ annotations: { readOnlyHint: false } })], 1],
    ['tool-added', [base, { ...tool(), name: 'u' }], 0],
    ['param-added', [withInput((s) => { s.properties.extra = { type: 'string', description: 'x' }; })], 0],
    ['enum-value-added', [withInput((s) => { s.properties.mode.enum.push('c'); })], 0],
    ['description-changed', [tool({ description: 'A different but still long description' })], 0],
    ['annotations-changed', [tool({ annotations: { readOnlyHint: true, title: 'T' } })], 0],
  ];
  const oldFile = file({ tools: [base] });

  for (const [code, newTools, exit] of cases) {
    test(`${code}: exit ${exit}`, T, async () => {
      const newFile = file({ tools: newTools });
      const r = await diff([oldFile, newFile, '--json']);
      assert.equal(r.code, exit, show(r));
      const j = r.json();
      assert.ok(j.changes.some((c) => c.code === code), `no ${code}:\n${r.stdout}`);
      assert.equal(j.breaking, j.changes.filter((c) => c.kind === 'breaking').length);
      assert.equal(j.breaking > 0, exit === 1);
      const t = await diff([oldFile, newFile]);
      assert.equal(t.code, exit);
      assert.ok(t.stdout.includes(code), t.stdout);
      assert.match(t.stdout, exit ? /^FAILED: breaking changes$/m : /^PASSED: no breaking change$/m);
    });
  }

  test('identical listings (any saved form): no change, exit 0', T, async () => {
    const r = await diff([oldFile, file({ jsonrpc: '2.0', id: 3, result: { tools: [base] } }), '--json']);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(r.json(), { changes: [], breaking: 0 });
  });

  test('bad usage or files: exit 2', T, async () => {
    assert.equal((await diff([oldFile])).code, 2);
    assert.equal((await diff([oldFile, oldFile, oldFile])).code, 2);
    assert.equal((await diff([oldFile, path.join(tmp, 'missing.json')])).code, 2);
    assert.equal((await diff([oldFile, file({ no: 'tools' })])).code, 2);
    assert.equal((await diff([oldFile, oldFile, '--yaml'])).code, 2);
  });
});

describe('check usage', () => {
  for (const [args, re] of [
    [[], /give a URL or --tools-file/],
    [['http://127.0.0.1:1/mcp', '--bogus'], /unknown option --bogus/],
    [['http://127.0.0.1:1/mcp', '--transport', 'carrier-pigeon'], /--transport must be/],
    [['http://127.0.0.1:1/mcp', '--tools-file', 'x.json'], /give a URL or --tools-file/],
    [['http://127.0.0.1:1/mcp', '--timeout', 'soon'], /--timeout wants seconds/],
    [['http://127.0.0.1:1/mcp', '--header', 'no colon'], /'Name: value'/],
    [['http://127.0.0.1:1/mcp', '--header', 'Host: evil'], /set by mcpwarden itself/],
    [['ftp://127.0.0.1/mcp'], /http:\/\/ or https:\/\//],
  ]) {
    test(`${JSON.stringify(args)}: exit 2`, T, async () => {
      const r = await check(args);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, re);
    });
  }

  test('--help: exit 0, documents the flags and exit codes', T, async () => {
    const r = await check(['--help']);
    assert.equal(r.code, 0);
    for (const f of ['--transport', '--header', '--json', '--lenient', '--baseline', '--save-baseline', '--timeout', '--tools-file', '--protocol']) {
      assert.ok(r.stdout.includes(f), f);
    }
    assert.match(r.stdout, /0 passed, 1 problems/);
    const d = await diff(['--help']);
    assert.equal(d.code, 0);
  });
});

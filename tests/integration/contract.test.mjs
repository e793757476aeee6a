// The live tool-list contract (issue 4, item 2): the real ./mcpwarden
// between the official SDK client (1.x) and our contract peer, which serves
// broken, paginated listings as JSON and as SSE. Each mode (report, filter,
// fail) per upstream, pages checked together (a duplicate on a later page),
// cursor loops, a baseline's breaking changes, the command-line flags, and
// a bad contract section.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import { runWarden, startWarden, stopAll } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { postJson } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout, waitFor } from './lib/util.mjs';
import { startContractPeer, GOOD } from './peers/contract-peer.mjs';
import { startAdminWarden, adminGet, metricValue } from './lib/admin-util.mjs';

const T = { timeout: 20000 };
const names = (page) => page.tools.map((t) => t.name);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-contract-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));

// The "paged" listing is search | fetch | store; the baseline knew fetch
// with one more parameter and a tool that is gone now.
const BASELINE = path.join(tmp, 'baseline.json');
writeFileSync(BASELINE, JSON.stringify({
  tools: [GOOD('search'), GOOD('fetch', { limit: { type: 'integer', description: 'at most' } }), GOOD('store'), GOOD('retired')],
}));

async function list(url, pages = 5) {
  const s = await connectClient(url);
  const got = [];
  try {
    let cursor;
    for (let i = 0; i < pages; i++) {
      const p = await withTimeout(s.client.listTools(cursor ? { cursor } : undefined), CALL_TIMEOUT, `tools/list ${url}`);
      got.push(p);
      cursor = p.nextCursor;
      if (!cursor) break;
    }
    return { pages: got, session: s };
  } catch (e) {
    await s.close();
    throw e;
  }
}

/** Pages until an error; returns {pages, error}. */
async function listUntilError(url, pages = 5) {
  const s = await connectClient(url);
  const got = [];
  let cursor;
  try {
    for (let i = 0; i < pages; i++) {
      const p = await withTimeout(s.client.listTools(cursor ? { cursor } : undefined), CALL_TIMEOUT, `tools/list ${url}`);
      got.push(p);
      cursor = p.nextCursor;
      if (!cursor) break;
    }
    return { pages: got, error: null, session: s };
  } catch (e) {
    return { pages: got, error: e, session: s };
  }
}

function assertContractError(e, ...words) {
  assert.ok(e, 'expected tools/list to fail');
  assert.equal(e.code, -32003, `code: ${e.message}`);
  for (const w of words) assert.ok(e.message.includes(w), `message should name ${w}: ${e.message}`);
}

after(async () => { await stopAll(); });

describe('live contract: each mode, JSON and SSE replies, paginated', () => {
  let peer;
  let warden;

  before(async () => {
    peer = await startContractPeer();
    const wp = await freePort();
    const up = (name, listing, format, contract) => ({ name, path: `/${name}/mcp`, url: peer.url(listing, format), contract });
    const conf = writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [
        up('report-json', 'broken', 'json', { mode: 'report' }),
        up('report-sse', 'broken', 'sse', {}),
        up('filter-json', 'broken', 'json', { mode: 'filter' }),
        up('filter-sse', 'broken', 'sse', { mode: 'filter' }),
        up('fail-json', 'broken', 'json', { mode: 'fail' }),
        up('fail-sse', 'broken', 'sse', { mode: 'fail' }),
        up('clean-fail', 'clean', 'sse', { mode: 'fail' }),
        up('dup-fail', 'dup', 'json', { mode: 'fail' }),
        up('dup-filter', 'dup', 'sse', { mode: 'filter' }),
        up('loop-fail', 'loop', 'json', { mode: 'fail' }),
        up('loop-report', 'loop', 'sse', { mode: 'report' }),
        up('spec-fail', 'broken', 'json', { mode: 'fail', spec_only: true }),
        up('base-fail', 'paged', 'json', { mode: 'fail', baseline: BASELINE }),
        up('base-filter', 'paged', 'sse', { mode: 'filter', baseline: BASELINE }),
      ],
    });
    warden = await startWarden(wp, ['-c', conf, '--log-level', 'info']);
  }, T);

  after(async () => { await peer?.close(); });

  for (const format of ['json', 'sse']) {
    test(`report (${format}): forwarded unchanged, one log line with score and codes`, T, async () => {
      const { pages, session } = await list(`${warden.base}/report-${format}/mcp`);
      try {
        assert.deepEqual(pages.map(names), [['search', 'nodesc'], ['search', 'fetch']]);
        assert.equal(pages[0].nextCursor, 'broken-p1');
        if (format === 'sse') {
          const posts = session.fetchLog.filter((f) => f.method === 'POST' && f.status === 200);
          assert.ok(posts.some((f) => /text\/event-stream/.test(f.contentType ?? '')), 'the upstream replied with SSE');
        }
      } finally { await session.close(); }
      const line = await warden.proc.waitForStderr(new RegExp(`contract: upstream report-${format}: tools/list FAILED[^\\n]*`));
      assert.match(line[0], /score 0\.75, 4 tools on 2 pages, 2 problems/);
      assert.match(line[0], /description-missing "nodesc"/);
      assert.match(line[0], /duplicate-name "search"/);
    });

    test(`filter (${format}): the broken tool and the later duplicate never reach the client`, T, async () => {
      const { pages, session } = await list(`${warden.base}/filter-${format}/mcp`);
      await session.close();
      assert.deepEqual(pages.map(names), [['search'], ['fetch']]);
      assert.equal(pages[0].nextCursor, 'broken-p1', 'paging stays intact');
      assert.equal(pages[1].nextCursor, undefined);
      // Kept tools cross whole.
      assert.deepEqual(pages[0].tools[0], GOOD('search'));
    });

    test(`fail (${format}): a JSON-RPC error -32003 naming each problem`, T, async () => {
      const { pages, error, session } = await listUntilError(`${warden.base}/fail-${format}/mcp`);
      await session.close();
      assert.equal(pages.length, 0);
      assertContractError(error, 'description-missing', 'nodesc', 'fail-' + format);
      assert.equal(error.data?.problems?.[0]?.pointer, '/tools/1/description');
      assert.equal(error.data?.upstream, `fail-${format}`);
    });
  }

  test('fail: the raw reply keeps the request id and is one JSON-RPC error', T, async () => {
    const s = await connectClient(`${warden.base}/fail-json/mcp`);
    try {
      const res = await postJson(`${warden.base}/fail-json/mcp`, { jsonrpc: '2.0', id: 'list-7', method: 'tools/list' },
        { headers: { 'mcp-session-id': s.transport.sessionId, 'mcp-protocol-version': '2025-11-25' } });
      assert.equal(res.status, 200);
      const body = res.json();
      assert.equal(body.id, 'list-7');
      assert.equal(body.error.code, -32003);
      assert.equal(body.result, undefined);
      assert.ok(body.error.data.problems.some((p) => p.code === 'description-missing' && p.tool === 'nodesc'));
    } finally { await s.close(); }
  });

  test('fail: a clean listing crosses untouched', T, async () => {
    const { pages, session } = await list(`${warden.base}/clean-fail/mcp`);
    await session.close();
    assert.deepEqual(pages.map(names), [['search', 'fetch']]);
  });

  test('fail: pages are checked together (duplicate on page 3)', T, async () => {
    const { pages, error, session } = await listUntilError(`${warden.base}/dup-fail/mcp`);
    await session.close();
    assert.deepEqual(pages.map(names), [['search'], ['fetch']]);
    assertContractError(error, 'duplicate-name', 'search');
    assert.equal(error.data.problems[0].pointer, '/2/tools/0/name');
  });

  test('filter: the duplicate on page 3 is withheld (SSE)', T, async () => {
    const { pages, session } = await list(`${warden.base}/dup-filter/mcp`);
    await session.close();
    assert.deepEqual(pages.map(names), [['search'], ['fetch'], []]);
  });

  test('fail: a cursor that does not advance is cursor-loop, and stays refused', T, async () => {
    const { pages, error, session } = await listUntilError(`${warden.base}/loop-fail/mcp`);
    try {
      assert.deepEqual(pages.map(names), [['search']]);
      assertContractError(error, 'cursor-loop');
      // A client that insists gets the same answer.
      await assert.rejects(() => s2list(session, 'loop-p1'), (e) => e.code === -32003);
    } finally { await session.close(); }
  });

  test('report: a cursor loop is forwarded but logged as cursor-loop', T, async () => {
    const s = await connectClient(`${warden.base}/loop-report/mcp`);
    try {
      const p1 = await s.client.listTools();
      const p2 = await s.client.listTools({ cursor: p1.nextCursor });
      assert.equal(p2.nextCursor, 'loop-p1');
    } finally { await s.close(); }
    await warden.proc.waitForStderr(/contract: upstream loop-report: tools\/list FAILED[^\n]*cursor-loop/);
  });

  test('spec_only: usability problems no longer fail', T, async () => {
    const { pages, session } = await list(`${warden.base}/spec-fail/mcp`);
    await session.close();
    // duplicate-name is a usability rule too: both pages cross.
    assert.deepEqual(pages.map(names), [['search', 'nodesc'], ['search', 'fetch']]);
  });

  test('baseline, fail: a removed parameter fails page 2', T, async () => {
    const { pages, error, session } = await listUntilError(`${warden.base}/base-fail/mcp`);
    await session.close();
    assert.deepEqual(pages.map(names), [['search']]);
    assertContractError(error, 'param-removed', 'fetch');
    assert.equal(error.data.changes[0].kind, 'breaking');
  });

  test('baseline, filter: the tool that broke is withheld; a removed tool is logged', T, async () => {
    const { pages, session } = await list(`${warden.base}/base-filter/mcp`);
    await session.close();
    assert.deepEqual(pages.map(names), [['search'], [], ['store']]);
    const line = await warden.proc.waitForStderr(/contract: upstream base-filter: tools\/list FAILED[^\n]*/);
    assert.match(line[0], /2 breaking changes \(mode filter: filtered\)/);
  });
});

// The SDK client's listTools with an explicit cursor on an open session.
function s2list(session, cursor) {
  return withTimeout(session.client.listTools({ cursor }), CALL_TIMEOUT, 'tools/list again');
}

describe('contract from the command line and bad contract sections', () => {
  let peer;
  before(async () => { peer = await startContractPeer(); });
  after(async () => { await peer?.close(); });

  test('--contract fail on the one upstream', T, async () => {
    const wp = await freePort();
    const w = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url('ghost', 'sse'), '--contract', 'fail']);
    const { error, session } = await listUntilError(`${w.base}/mcp`);
    await session.close();
    assertContractError(error, 'required-unknown', 'ghosty');
  });

  test('--baseline and --contract filter on the one upstream', T, async () => {
    const wp = await freePort();
    const w = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url('paged', 'json'),
      '--contract', 'filter', '--baseline', BASELINE]);
    const { pages, session } = await list(`${w.base}/mcp`);
    await session.close();
    assert.deepEqual(pages.map(names), [['search'], [], ['store']]);
  });

  test('default mode is report, and --spec-only is accepted', T, async () => {
    const wp = await freePort();
    const w = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url('broken', 'json'), '--spec-only']);
    const { pages, session } = await list(`${w.base}/mcp`);
    await session.close();
    assert.deepEqual(pages.map(names), [['search', 'nodesc'], ['search', 'fetch']]);
    await w.proc.waitForStderr(/contract: upstream default: tools\/list PASSED/);
  });

  for (const [contract, want] of [
    [{ mode: 'block' }, '$.upstreams[0].contract.mode: must be report, filter, fail or off'],
    [{ modes: 'fail' }, '$.upstreams[0].contract.modes: unknown key'],
    [{ spec_only: 'yes' }, '$.upstreams[0].contract.spec_only: must be true or false'],
    [{ baseline: path.join(tmp, 'missing.json') }, '$.upstreams[0].contract.baseline:'],
  ]) {
    test(`a bad contract section stops start-up: ${JSON.stringify(contract)}`, T, async () => {
      const wp = await freePort();
      const conf = writeConfig({ listen: `127.0.0.1:${wp}`, upstreams: [{ url: peer.url(), contract }] });
      const r = await runWarden(['-c', conf]);
      assert.notEqual(r.code, 0, r.stderr);
      assert.ok(r.stderr.includes(want), `stderr should include ${want}:\n${r.stderr}`);
    });
  }

  test('a baseline that holds no tool list stops start-up', T, async () => {
    const bad = path.join(tmp, 'bad-baseline.json');
    writeFileSync(bad, JSON.stringify({ nope: [] }));
    const wp = await freePort();
    const r = await runWarden(['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url(), '--baseline', bad]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /contract\.baseline: .*holds no tool list/);
  });
});


describe('the latest report reaches the admin endpoint', () => {
  let peer;
  before(async () => { peer = await startContractPeer(); });
  after(async () => { await peer?.close(); });

  test('/contract holds the report, /metrics the score', T, async () => {
    const w = await startAdminWarden({
      upstreams: [{ name: 'billing', url: peer.url('broken', 'sse'), contract: { mode: 'filter' } }],
    });
    const { pages, session } = await list(`${w.base}/mcp`);
    await session.close();
    assert.deepEqual(pages.map(names), [['search'], ['fetch']]);
    const entry = await waitFor(async () => {
      const j = (await adminGet(w.admin, '/contract')).json();
      const e = j.upstreams.find((u) => u.upstream === 'billing');
      return e?.report?.complete ? e : null;
    }, { what: 'a complete report on /contract' });
    const r = entry.report;
    assert.equal(r.passed, false);
    assert.equal(r.mode, 'filter');
    assert.equal(r.action, 'filtered');
    assert.deepEqual(r.filtered, ['nodesc', 'search']);
    assert.equal(r.pages, 2);
    assert.equal(r.score, 0.75);
    assert.ok(r.tools[1].problems.some((p) => p.code === 'description-missing'));
    assert.ok(r.problems.some((p) => p.code === 'duplicate-name' && p.pointer === '/1/tools/0/name'));
    const m = (await adminGet(w.admin, '/metrics')).text;
    assert.equal(metricValue(m, 'mcpwarden_contract_score', { upstream: 'billing' }), 0.75);
    assert.equal(metricValue(m, 'mcpwarden_contract_passed', { upstream: 'billing' }), 0);
  });
});

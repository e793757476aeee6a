// `mcpwarden tail ADMIN_URL` and `mcpwarden status ADMIN_URL` (issue 22,
// item 7): the admin endpoint from a shell, run as child processes against
// a real mcpwarden in front of real upstreams.
//
//   tail     one line a call as SDK calls happen; --tool/--outcome (the
//            endpoint's filters) and --upstream (tail's own); --json lines
//            parse; colour only when asked (or on a terminal); SIGINT exits
//            0; the proxy shutting down ends it with 0, the proxy dying
//            with 2; the admin token from --token or the environment, never
//            printed, a missing or wrong one a clear 401 message (exit 2);
//            https with a CA from SSL_CERT_FILE.
//   status   ready and passing (0, busiest tools counted), a listing that
//            fails its contract (1), an upstream down (1), nothing
//            listening (2), a wrong URL (2), the MCP port instead of the
//            admin port (2), --json.
//
// A tail is known to be connected when /metrics counts its stream
// (mcpwarden_admin_streams): no sleeps.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startEverything, spawnTracked, runWarden, stopAll, WARDEN_BIN } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { startAdminWarden, adminGet, metricValue } from './lib/admin-util.mjs';
import { makeCerts } from './lib/certs.mjs';
import { httpsRequest } from './lib/tls-client.mjs';
import { waitFor, withTimeout } from './lib/util.mjs';
import { startContractPeer } from './peers/contract-peer.mjs';

const T = { timeout: 60000 };
const TOKEN = 'tail-admin-token-5f3a9c';
const LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z {2}/;

let se;
before(async () => { se = await startEverything(await freePort()); }, { timeout: 20000 });
after(async () => { await stopAll(); });

async function streams(admin, headers = {}) {
  const m = await adminGet(admin, '/metrics', { headers });
  return metricValue(m.text, 'mcpwarden_admin_streams');
}

/** Runs `mcpwarden tail`, returning once the endpoint counts its stream. */
const tails = new Set();
async function startTail(admin, args = [], { env = {}, headers = {} } = {}) {
  // one a test: a tail left by a failed test would be counted too
  for (const t of tails) { t.child.kill('SIGKILL'); await t.exited; }
  tails.clear();
  await waitFor(async () => (await streams(admin, headers)) === 0, { what: 'no stream open' });
  const h = spawnTracked('mcpwarden-tail', WARDEN_BIN, ['tail', admin, ...args], { env });
  tails.add(h);
  await waitFor(async () => {
    if (h.exitStatus) throw new Error(`tail exited: ${JSON.stringify(h.exitStatus)}\n${h.stderr}`);
    return (await streams(admin, headers)) === 1;
  }, { timeout: 5000, what: 'the tail connected' });
  return h;
}

/** SIGINT, which must end tail cleanly with 0. */
async function interrupt(h) {
  h.child.kill('SIGINT');
  const st = await withTimeout(h.exited, 5000, 'tail to exit on SIGINT');
  assert.deepEqual(st, { code: 0, signal: null }, h.stderr);
}

const call = (s, name, args) => withTimeout(s.client.callTool({ name, arguments: args }), CALL_TIMEOUT, name);

describe('tail: the live call stream', () => {
  let w;
  let s;
  let twin;

  before(async () => {
    w = await startAdminWarden({
      upstreams: [
        { name: 'every', path: '/mcp', url: se.url },
        { name: 'twin', path: '/twin/mcp', url: se.url },
      ],
    });
    s = await connectClient(w.url, { name: 'tail-it' });
    twin = await connectClient(`http://127.0.0.1:${w.port}/twin/mcp`, { name: 'tail-it-twin' });
  }, T);
  after(async () => { await s?.close(); await twin?.close(); });

  test('one readable line a call, in order, without colour in a pipe', T, async () => {
    const h = await startTail(w.admin);
    await call(s, 'echo', { message: 'tail me' });
    await call(s, 'get-sum', { a: 2, b: 3 });
    const m = await h.waitForStdout(/^.*get-sum.*$/m);
    const lines = h.stdout.trimEnd().split('\n');
    const echo = lines.findIndex((l) => /^\S+ {2}every {9}echo {2,}ok {2,}\s*[\d.]+ (us|ms)( {2}\d+ findings?)?$/.test(l));
    assert.ok(echo >= 0, h.stdout);
    assert.ok(lines.indexOf(m[0]) > echo, 'echo before get-sum');
    for (const l of lines) assert.match(l, LINE);
    assert.ok(!h.stdout.includes('\x1b'), 'no colour on a pipe');
    await interrupt(h);
  });

  test('--tool and --upstream filter; --outcome too', T, async () => {
    const h = await startTail(w.admin, ['--tool', 'echo', '--upstream', 'twin']);
    await call(s, 'echo', { message: 'not the twin' });
    await call(twin, 'get-sum', { a: 1, b: 1 });
    await call(twin, 'echo', { message: 'the twin' });
    await h.waitForStdout(/twin {10}echo/);
    assert.equal(h.stdout.trimEnd().split('\n').length, 1, h.stdout);
    await interrupt(h);

    const o = await startTail(w.admin, ['--outcome', 'tool_error']);
    await call(s, 'echo', { message: 'fine' });
    await call(s, 'no-such-tool', {}).catch(() => {});
    await o.waitForStdout(/no-such-tool +tool_error/);
    assert.ok(!o.stdout.includes(' echo '), o.stdout);
    await interrupt(o);
  });

  test('--json: each record one JSON line, as the endpoint sent it', T, async () => {
    const h = await startTail(w.admin, ['--json', '--tool', 'echo']);
    await call(s, 'echo', { message: 'as json' });
    await call(twin, 'echo', { message: 'as json too' });
    await h.waitForStdout(/as json too/);
    const recs = h.stdout.trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.equal(recs.length, 2);
    assert.deepEqual(recs.map((r) => [r.upstream, r.tool, r.outcome]), [['every', 'echo', 'ok'], ['twin', 'echo', 'ok']]);
    assert.ok(recs[1].seq > recs[0].seq);
    await interrupt(h);
  });

  test('--color always colours the outcome; NO_COLOR and --color never do not', T, async () => {
    const c = await startTail(w.admin, ['--color', 'always'], { env: { NO_COLOR: '1' } });
    await call(s, 'echo', { message: 'in colour' });
    await c.waitForStdout(/echo {2,}\x1b\[32mok\x1b\[0m/);
    await interrupt(c);
    const n = await startTail(w.admin, ['--color', 'never']);
    await call(s, 'echo', { message: 'plain' });
    await n.waitForStdout(/echo {2,}ok/);
    assert.ok(!n.stdout.includes('\x1b'));
    await interrupt(n);
  });

  test('bad usage: exit 2 with a message, before connecting', T, async () => {
    const cases = [
      [['tail'], /ADMIN_URL missing/],
      [['tail', w.admin, '--outcome', 'great'], /--outcome: one of ok, tool_error/],
      [['tail', w.admin, '--color', 'blue'], /--color: auto, always or never/],
      [['tail', 'ftp://127.0.0.1/'], /http:\/\/ or https:\/\//],
      [['tail', `${w.admin}/?x=1`], /no query/],
    ];
    for (const [args, re] of cases) {
      const r = await runWarden(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
    }
    const help = await runWarden(['tail', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /usage: mcpwarden tail ADMIN_URL/);
    assert.match(help.stdout, /no reconnect/i);
    const main = await runWarden(['--help']);
    assert.match(main.stdout, /mcpwarden tail ADMIN_URL/);
    assert.match(main.stdout, /mcpwarden status ADMIN_URL/);
  });
});

describe('tail: when the proxy goes away', () => {
  test('a shutdown ends the stream: exit 0, saying so', T, async () => {
    const w = await startAdminWarden({ upstreams: se.url });
    const h = await startTail(w.admin);
    w.proc.child.kill('SIGTERM');
    const st = await withTimeout(h.exited, 10000, 'tail to exit');
    assert.deepEqual(st, { code: 0, signal: null }, h.stderr);
    assert.match(h.stderr, /ended the stream \(the proxy is shutting down\)/);
  });

  test('the proxy dies: exit 2, the connection was lost', T, async () => {
    const w = await startAdminWarden({ upstreams: se.url });
    const h = await startTail(w.admin);
    w.proc.child.kill('SIGKILL');
    const st = await withTimeout(h.exited, 10000, 'tail to exit');
    assert.equal(st.code, 2, h.stderr);
    assert.match(h.stderr, /mcpwarden tail: http:\/\/127\.0\.0\.1:\d+\/: the connection was lost/);
  });

  test('nothing listening: exit 2, connection refused', T, async () => {
    const port = await freePort();
    const r = await runWarden(['tail', `http://127.0.0.1:${port}`]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /cannot connect to http:\/\/127\.0\.0\.1:\d+\/: connection refused/);
  });
});

describe('the admin token', () => {
  let w;
  let s;
  const auth = { authorization: `Bearer ${TOKEN}` };

  before(async () => {
    w = await startAdminWarden({ upstreams: se.url, admin: { token: TOKEN } });
    s = await connectClient(w.url, { name: 'tail-token-it' });
  }, T);
  after(async () => { await s?.close(); });

  test('from the environment: tail works, the token is never printed', T, async () => {
    const h = await startTail(w.admin, [], { env: { MCPWARDEN_ADMIN_TOKEN: TOKEN }, headers: auth });
    // a call whose record carries the token's text: printed masked
    await call(s, 'echo', { message: `echo ${TOKEN}` });
    await h.waitForStdout(/echo {2,}ok/);
    await interrupt(h);
    assert.ok(!h.stdout.includes(TOKEN) && !h.stderr.includes(TOKEN));
    const j = await startTail(w.admin, ['--json', '--token', TOKEN], { headers: auth });
    await call(s, 'echo', { message: `again ${TOKEN}` });
    const m = await j.waitForStdout(/^.*again.*$/m);
    assert.match(JSON.parse(m[0]).arguments, /again ••••/);
    await interrupt(j);
    assert.ok(!j.stdout.includes(TOKEN) && !j.stderr.includes(TOKEN));
  });

  test('missing or wrong: a 401 message, exit 2, the wrong token not shown', T, async () => {
    const none = await runWarden(['tail', w.admin]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /401: the admin endpoint needs a token: --token TOKEN or MCPWARDEN_ADMIN_TOKEN/);
    const wrong = 'wrong-token-value-7d21';
    for (const cmd of ['tail', 'status']) {
      const r = await runWarden([cmd, w.admin, '--token', wrong]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /401: the admin token was refused/);
      assert.ok(!(r.stdout + r.stderr).includes(wrong));
    }
    const j = await runWarden(['status', w.admin, '--json', '--token', wrong]);
    assert.equal(j.code, 2);
    assert.equal(JSON.parse(j.stdout).exit, 2);
    assert.ok(!j.stdout.includes(wrong));
  });

  test('status with the token: exit 0, the token nowhere', T, async () => {
    const r = await runWarden(['status', w.admin, '--token', TOKEN]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /: ready\n/);
    assert.ok(!(r.stdout + r.stderr).includes(TOKEN));
  });
});

describe('status', () => {
  let peer;

  before(async () => { peer = await startContractPeer(); }, T);
  after(async () => { await peer?.close(); });

  test('ready, every contract passing: exit 0, with the busiest tools', T, async () => {
    const w = await startAdminWarden({ upstreams: [{ name: 'every', url: se.url }] });
    const s = await connectClient(w.url, { name: 'status-it' });
    try {
      await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
      for (let i = 0; i < 3; i++) await call(s, 'echo', { message: `n${i}` });
      await call(s, 'get-sum', { a: 1, b: 2 });
    } finally { await s.close(); }
    const r = await runWarden(['status', w.admin]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^mcpwarden at http:\/\/127\.0\.0\.1:\d+\/: ready\n/);
    assert.match(r.stdout, /every: reachable; contract passed \(mode report, score [\d.]+, 0 problems, 0 breaking changes\)/);
    assert.match(r.stdout, /busiest tools \(calls since start\):\n +3 {2}echo \(every\)\n +1 {2}get-sum \(every\)\n/);
    const j = await runWarden(['status', w.admin, '--json']);
    assert.equal(j.code, 0);
    const o = JSON.parse(j.stdout);
    assert.equal(o.ready, true);
    assert.equal(o.exit, 0);
    assert.equal(o.upstreams[0].contract, 'passed');
    assert.deepEqual(o.busiest[0], { tool: 'echo', upstream: 'every', calls: 3 });
  });

  test('a listing failing its contract: exit 1, the problem named', T, async () => {
    const w = await startAdminWarden({
      upstreams: [
        { name: 'good', path: '/good/mcp', url: peer.url('clean', 'json') },
        { name: 'bad', path: '/bad/mcp', url: peer.url('broken', 'json'), contract: { mode: 'fail' } },
      ],
    });
    for (const u of ['good', 'bad']) {
      const s = await connectClient(`http://127.0.0.1:${w.port}/${u}/mcp`);
      await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list').catch(() => {});
      await s.close();
    }
    await waitFor(async () => (await adminGet(w.admin, '/contract')).json().upstreams.every((u) => u.report),
      { what: 'both reports on /contract' });
    const r = await runWarden(['status', w.admin]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /: ready\n/);
    assert.match(r.stdout, /good: reachable; contract passed/);
    assert.match(r.stdout, /bad: reachable; contract FAILED \(mode fail, score 0\.50, 1 problem, 0 breaking changes\)\n +description-missing \(tool "nodesc"\)/);
    const j = JSON.parse((await runWarden(['status', w.admin, '--json'])).stdout);
    assert.equal(j.exit, 1);
    assert.deepEqual(j.upstreams.map((u) => [u.upstream, u.contract]), [['good', 'passed'], ['bad', 'failed']]);
  });

  test('an upstream down: not ready, exit 1', T, async () => {
    const dead = await freePort();
    const w = await startAdminWarden({ upstreams: [{ name: 'gone', url: `http://127.0.0.1:${dead}/mcp` }] });
    const r = await runWarden(['status', w.admin]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /: NOT READY\n/);
    assert.match(r.stdout, /gone: UNREACHABLE \(connection refused or unreachable\); contract not checked yet/);
  });

  test('unreachable, a wrong URL, the MCP port: exit 2 with a clear message', T, async () => {
    const port = await freePort();
    const r = await runWarden(['status', `http://127.0.0.1:${port}`]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /mcpwarden status: cannot connect to http:\/\/127\.0\.0\.1:\d+\/: connection refused/);
    const j = await runWarden(['status', `http://127.0.0.1:${port}`, '--json']);
    assert.equal(j.code, 2);
    assert.match(JSON.parse(j.stdout).error, /connection refused/);
    const bad = await runWarden(['status', 'not a url']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /ADMIN_URL: /);
    const w = await startAdminWarden({ upstreams: se.url });
    const mcp = await runWarden(['status', `http://127.0.0.1:${w.port}`]);
    assert.equal(mcp.code, 2, mcp.stdout + mcp.stderr);
    assert.match(mcp.stderr, /HTTP \d{3}|404/);
    const help = await runWarden(['status', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /usage: mcpwarden status ADMIN_URL \[--json\] \[--token TOKEN\]/);
  });
});

describe('over https', () => {
  let certs;
  let w;

  before(async () => {
    certs = makeCerts();
    const pair = certs.issue('admin', '/CN=mcpwarden-admin');
    w = await startAdminWarden({ upstreams: se.url, admin: { tls: { cert_file: pair.cert, key_file: pair.key } } });
  }, T);
  after(() => { certs?.cleanup(); });

  test('status and tail with the CA from SSL_CERT_FILE; without it, exit 2', T, async () => {
    const base = `https://127.0.0.1:${w.adminPort}`;
    const env = { SSL_CERT_FILE: certs.ca };
    const st = spawnTracked('mcpwarden-status', WARDEN_BIN, ['status', base], { env });
    assert.equal((await withTimeout(st.exited, 10000, 'status')).code, 0, st.stdout + st.stderr);
    assert.match(st.stdout, /^mcpwarden at https:\/\/127\.0\.0\.1:\d+\/: ready/);

    const h = spawnTracked('mcpwarden-tail', WARDEN_BIN, ['tail', base], { env });
    await waitFor(async () => {
      if (h.exitStatus) throw new Error(`tail exited: ${h.stderr}`);
      const m = await httpsRequest(`${base}/metrics`, { ca: certs.ca });
      return metricValue(m.text, 'mcpwarden_admin_streams') === 1;
    }, { what: 'the tail connected over https' });
    const s = await connectClient(w.url, { name: 'tail-https' });
    try {
      await call(s, 'echo', { message: 'over tls' });
      await h.waitForStdout(/echo {2,}ok/);
    } finally { await s.close(); }
    await interrupt(h);

    const no = await runWarden(['status', base]);
    assert.equal(no.code, 2);
    assert.match(no.stderr, /cannot connect to https:\/\/127\.0\.0\.1:\d+\/: .*certificate/i);
    const plain = await runWarden(['status', `http://127.0.0.1:${w.adminPort}`]);
    assert.equal(plain.code, 2);
    assert.match(plain.stderr, /an https admin endpoint\? then say https:\/\//);
  });
});

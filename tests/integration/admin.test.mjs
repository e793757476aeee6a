// The admin endpoint (issue 7): call records on /calls, /calls/stream and
// /calls/inflight, /metrics (checked by the real promtool), /contract,
// /healthz, /readyz, the token, redaction, the JSON-lines log, the ring's
// bound under a flood and a slow stream reader. Records are produced by a
// real SDK client session through ./mcpwarden in front of server-everything,
// and by the scripted peer for the outcomes a real server rarely gives
// (hung, timed out, reset, cancelled).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync, mkdtempSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, closedPort, canConnect } from './lib/ports.mjs';
import { startEverything, startWarden, runWarden, spawnTracked, waitForPort, stop, stopAll, WARDEN_BIN } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { openRaw, openStream, postJson, rawExchange, request, SseParser } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { waitFor, withTimeout, sleep } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';
import {
  startAdminWarden, startAdminWardenQuiet, adminGet, getCalls, waitForCalls, openCallStream, promtoolCheck, metricValue,
  RFC3339_US,
} from './lib/admin-util.mjs';

const T = { timeout: 30000 };
// Secrets that must never be shown: the upstream URL's user, password and
// query value, a tool argument under a secret-looking key, a configured
// literal value.
const URL_USER = 'wuser77';
const URL_PASS = 'wpass987';
const URL_QUERY = 'qtok555';
const ARG_SECRET = 'hunter2-pw';
const CONF_SECRET = 'zebra-secret-42';
const SECRETS = [URL_USER, URL_PASS, URL_QUERY, ARG_SECRET, CONF_SECRET];
const SANITIZED = (() => {
  try { return readFileSync(WARDEN_BIN).includes('__asan_init'); } catch { return false; }
})();

function assertNoSecrets(text, where) {
  for (const s of SECRETS) assert.ok(!text.includes(s), `${where} shows the secret ${JSON.stringify(s)}`);
}

/** Call and return how long after the call's answer `pred` held on /calls. */
async function visibleWithin(base, pred, ms = 1000) {
  const t0 = Date.now();
  const rec = await waitForCalls(base, (calls) => calls.find(pred), { timeout: ms, what: 'record on /calls within 1 s' });
  return { rec, lag: Date.now() - t0 };
}

let se;
before(async () => { se = await startEverything(await freePort()); }, { timeout: 20000 });
after(async () => { await stopAll(); });

describe('admin: an SDK session through server-everything, call by call', () => {
  let w;
  let s;
  let sid;
  const seenStream = [];
  let stream;

  before(async () => {
    const u = new URL(se.url);
    u.username = URL_USER;
    u.password = URL_PASS;
    u.search = `?apikey=${URL_QUERY}`;
    w = await startAdminWarden({
      upstreams: [{ name: 'everything', url: u.toString() }],
      admin: { log_calls: 'stdout', redact_values: [CONF_SECRET] },
      // one refusal to record; everything else goes through
      extra: { policy: { default: 'allow', unknown_tools: 'rules', rules: [{ name: 'no-toggles', match: { tool: 'toggle-*' }, action: 'deny' }] } },
    });
    stream = await openCallStream(w.admin);
    s = await connectClient(w.url, { name: 'admin-it' });
    sid = s.transport.sessionId;
    await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
  }, T);

  after(async () => {
    stream?.abort();
    await s?.close();
  });

  test('healthz, readyz: alive, upstream reachable', T, async () => {
    const h = await adminGet(w.admin, '/healthz');
    assert.equal(h.status, 200);
    assert.deepEqual(h.json(), { status: 'ok' });
    const r = await adminGet(w.admin, '/readyz');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json().ready, true);
    assert.deepEqual(r.json().upstreams, [{ upstream: 'everything', reachable: true }]);
  });

  test('initialize and notifications/initialized are recorded with the session id', T, async () => {
    // A record is made as its exchange ends, a moment after the reply left:
    // nothing orders the 202's record before this read but time.
    await waitForCalls(w.admin, (cs) => ['initialize', 'notifications/initialized'].every((m) => cs.some((c) => c.method === m)),
      { what: 'the initialize and notifications/initialized records' }).catch(() => {});
    const calls = (await getCalls(w.admin)).calls;
    const init = calls.find((c) => c.method === 'initialize');
    assert.ok(init, JSON.stringify(calls));
    assert.equal(init.session, sid, 'session id of the reply');
    assert.equal(init.outcome, 'ok');
    assert.equal(init.from, 'client');
    assert.equal(init.kind, 'request');
    assert.equal(init.http_status, 200);
    assert.equal(init.upstream, 'everything');
    assert.equal(init.client_transport, 'streamable_http');
    assert.equal(init.upstream_transport, 'streamable_http');
    assert.match(init.time, RFC3339_US);
    assert.match(init.client, /^127\.0\.0\.1:\d+$/);
    assert.match(init.result_preview, /protocolVersion/);
    const note = calls.find((c) => c.method === 'notifications/initialized');
    assert.equal(note.kind, 'notification');
    assert.equal(note.http_status, 202);
    assert.equal(note.outcome, 'ok');
    assert.equal(note.id, null);
    assert.ok(note.seq > init.seq);
  });

  test('tools/call echo: on /calls within a second, every field', T, async () => {
    const r = await s.client.callTool({ name: 'echo', arguments: { message: 'hello admin' } });
    assert.equal(r.content[0].text, 'Echo: hello admin');
    const { rec, lag } = await visibleWithin(w.admin, (c) => c.tool === 'echo' && c.arguments?.includes('hello admin'));
    assert.ok(lag <= 1000, `record visible after ${lag} ms`);
    assert.equal(typeof rec.seq, 'number');
    assert.match(rec.time, RFC3339_US);
    assert.ok(Math.abs(Date.parse(rec.time) - Date.now()) < 10000);
    assert.equal(rec.session, sid);
    assert.equal(rec.method, 'tools/call');
    assert.equal(typeof rec.id, 'number');
    assert.deepEqual(JSON.parse(rec.arguments), { message: 'hello admin' });
    assert.equal(rec.arguments_cut, false);
    assert.equal(rec.result_preview, 'Echo: hello admin');
    assert.equal(rec.http_status, 200);
    assert.equal(rec.is_error, false);
    assert.equal(rec.error_code, null);
    assert.equal(rec.error_message, null);
    assert.equal(rec.outcome, 'ok');
    assert.equal(rec.rule, null);
    assert.ok(rec.latency_us > 0 && rec.latency_us < 5e6, `latency ${rec.latency_us}`);
    assert.ok(rec.bytes_in > 0 && rec.bytes_out > 0);
    assert.equal(rec.protocol, s.transport.protocolVersion);
  });

  test('the three levels of failure stay apart: tool_error, rpc_error, blocked', T, async () => {
    // isError in a result: the tool failed, JSON-RPC and HTTP are fine
    await s.client.callTool({ name: 'no-such-tool', arguments: {} }).catch(() => {});
    const { rec: te } = await visibleWithin(w.admin, (c) => c.tool === 'no-such-tool');
    assert.equal(te.outcome, 'tool_error');
    assert.equal(te.is_error, true);
    assert.equal(te.error_code, null);
    assert.equal(te.http_status, 200);
    // a JSON-RPC error
    await s.client.readResource({ uri: 'demo://resource/does/not/exist' }).catch(() => {});
    const { rec: re } = await visibleWithin(w.admin, (c) => c.method === 'resources/read' && c.arguments?.includes('does/not/exist'));
    assert.equal(re.outcome, 'rpc_error');
    assert.equal(typeof re.error_code, 'number');
    assert.match(re.error_message, /not found/i);
    assert.equal(re.is_error, null);
    assert.equal(re.http_status, 200);
    // refused by the policy hook before the server saw it
    const err = await s.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} }).then(() => null, (e) => e);
    assert.ok(err, 'the policy refuses toggle-subscriber-updates');
    const { rec: bl } = await visibleWithin(w.admin, (c) => c.tool === 'toggle-subscriber-updates');
    assert.equal(bl.outcome, 'blocked');
    assert.equal(bl.rule, 'policy:no-toggles');
    assert.equal(bl.error_code, -32001);
    assert.match(bl.error_message, /no-toggles/);
  });

  test('/calls/stream: each record as it happens, id = seq, within a second', T, async () => {
    const t0 = Date.now();
    await s.client.callTool({ name: 'get-sum', arguments: { a: 19, b: 23 } });
    const tAnswer = Date.now();
    const got = await stream.waitRecords((rs) => rs.find((r) => r.tool === 'get-sum'));
    assert.ok(got._t - tAnswer <= 1000, `stream lag ${got._t - tAnswer} ms`);
    assert.ok(got._t >= t0);
    assert.equal(got._id, String(got.seq));
    assert.equal(got.result_preview, 'The sum of 19 and 23 is 42.');
    assert.equal(stream.status, 200);
    assert.match(stream.headers['content-type'], /^text\/event-stream/);
    assert.equal(stream.headers['x-accel-buffering'], 'no');
    assert.equal(stream.headers['access-control-allow-origin'], undefined);
    // the stream was opened before the session: it saw everything since
    const all = stream.records();
    assert.ok(all.some((r) => r.method === 'initialize'));
    const seqs = all.map((r) => r.seq);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'in order');
    assert.equal(new Set(seqs).size, seqs.length, 'no duplicates');
  });

  test('/calls/stream resumes from the ring: Last-Event-ID and ?since=', T, async () => {
    const { calls } = await getCalls(w.admin, 'limit=4');
    const newest = calls[0].seq;
    const resumed = await openCallStream(w.admin, { lastEventId: newest - 3 });
    const viaQuery = await openCallStream(w.admin, { since: newest - 2 });
    try {
      const r1 = await resumed.waitRecords((rs) => rs.length >= 3 && rs);
      assert.deepEqual(r1.slice(0, 3).map((r) => r.seq), [newest - 2, newest - 1, newest]);
      const r2 = await viaQuery.waitRecords((rs) => rs.length >= 2 && rs);
      assert.deepEqual(r2.slice(0, 2).map((r) => r.seq), [newest - 1, newest]);
      // and live after the catch-up, on several streams at once
      await s.client.callTool({ name: 'echo', arguments: { message: 'to every stream' } });
      for (const st of [resumed, viaQuery, stream]) {
        await st.waitRecords((rs) => rs.some((r) => r.arguments?.includes('to every stream')));
      }
      const m = await adminGet(w.admin, '/metrics');
      assert.equal(metricValue(m.text, 'mcpwarden_admin_streams'), 3);
    } finally {
      resumed.abort();
      viaQuery.abort();
    }
  });

  test('/calls/stream filters', T, async () => {
    const st = await openCallStream(w.admin, { query: 'tool=get-sum&outcome=ok' });
    try {
      await s.client.callTool({ name: 'echo', arguments: { message: 'not for the filtered stream' } });
      await s.client.callTool({ name: 'get-sum', arguments: { a: 1, b: 1 } });
      const rs = await st.waitRecords((x) => x.length >= 1 && x);
      await sleep(200);
      assert.ok(st.records().every((r) => r.tool === 'get-sum' && r.outcome === 'ok'), JSON.stringify(st.records()));
      assert.equal(rs[0].result_preview, 'The sum of 1 and 1 is 2.');
    } finally {
      st.abort();
    }
  });

  test('/calls filters: limit, since, method, tool, session, outcome', T, async () => {
    const all = (await getCalls(w.admin, 'limit=1000')).calls;
    const seqs = all.map((c) => c.seq);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => b - a), 'newest first');
    const one = await getCalls(w.admin, 'limit=1');
    assert.equal(one.calls.length, 1);
    assert.equal(one.calls[0].seq, seqs[0]);
    assert.equal(one.ring.size, 1024);
    assert.equal(one.ring.newest_seq, seqs[0]);
    const since = await getCalls(w.admin, `since=${seqs[3]}`);
    assert.deepEqual(since.calls.map((c) => c.seq), seqs.slice(0, 3));
    const echo = await getCalls(w.admin, 'tool=echo');
    assert.ok(echo.calls.length >= 2 && echo.calls.every((c) => c.tool === 'echo'));
    const meth = await getCalls(w.admin, 'method=resources%2Fread');
    assert.ok(meth.calls.length >= 1 && meth.calls.every((c) => c.method === 'resources/read'));
    const sess = await getCalls(w.admin, `session=${encodeURIComponent(sid)}`);
    assert.ok(sess.calls.length >= 5 && sess.calls.every((c) => c.session === sid));
    const other = await getCalls(w.admin, 'session=nobody');
    assert.equal(other.calls.length, 0);
    const te = await getCalls(w.admin, 'outcome=tool_error&tool=no-such-tool');
    assert.equal(te.calls.length, 1);
    const combo = await getCalls(w.admin, 'method=tools%2Fcall&outcome=ok&limit=2');
    assert.equal(combo.calls.length, 2);
    assert.ok(combo.calls.every((c) => c.method === 'tools/call' && c.outcome === 'ok'));
  });

  test('/calls errors: bad parameters are 400 with a reason', T, async () => {
    for (const [q, re] of [
      ['limit=0', /limit/], ['limit=1025', /limit/], ['limit=abc', /limit/], ['since=-1', /since/],
      ['outcome=great', /outcome/], ['colour=red', /unknown parameter/], ['tool=a&tool=b', /twice/],
    ]) {
      const r = await adminGet(w.admin, `/calls?${q}`);
      assert.equal(r.status, 400, q);
      assert.match(r.json().error, re, q);
    }
    const st = await adminGet(w.admin, '/calls/stream?outcome=nope');
    assert.equal(st.status, 400);
    const bad = await adminGet(w.admin, '/calls/stream', { headers: { 'last-event-id': 'x1' } });
    assert.equal(bad.status, 400);
    assert.equal((await adminGet(w.admin, '/nope')).status, 404);
    const post = await adminGet(w.admin, '/calls', { method: 'POST' });
    assert.equal(post.status, 405);
    assert.match(post.headers.allow, /GET/);
  });

  test('/calls/inflight shows a call while it runs, with its age; progress is counted', T, async () => {
    const progress = [];
    const p = s.client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } },
      undefined, { onprogress: (x) => progress.push(x), timeout: CALL_TIMEOUT });
    const seen = await waitFor(async () => {
      const j = (await adminGet(w.admin, '/calls/inflight')).json();
      return j.inflight.find((c) => c.tool === 'trigger-long-running-operation' && c.age_us > 300000) && j;
    }, { timeout: 3000, what: 'the long call in /calls/inflight' });
    const c = seen.inflight.find((x) => x.tool === 'trigger-long-running-operation');
    assert.equal(c.method, 'tools/call');
    assert.equal(c.session, sid);
    assert.ok(seen.count >= 1);
    assert.deepEqual(JSON.parse(c.arguments), { duration: 2, steps: 4 });
    await p;
    const { rec } = await visibleWithin(w.admin, (x) => x.tool === 'trigger-long-running-operation');
    assert.ok(rec.latency_us >= 1900000, `latency ${rec.latency_us}`);
    assert.equal(rec.notifications, progress.length);
    assert.equal(rec.outcome, 'ok');
    const after = (await adminGet(w.admin, '/calls/inflight')).json();
    assert.ok(!after.inflight.some((x) => x.tool === 'trigger-long-running-operation'));
  });

  test('secrets never show: argument keys, configured values, the upstream URL', T, async () => {
    const r = await s.client.callTool({
      name: 'echo',
      arguments: { message: `carry ${URL_PASS} and ${CONF_SECRET} and ${URL_QUERY} for ${URL_USER}`, password: ARG_SECRET },
    });
    // the echo really carried them: only the record hides them
    assert.match(r.content[0].text, new RegExp(URL_PASS));
    const { rec } = await visibleWithin(w.admin, (c) => c.tool === 'echo' && c.arguments?.includes('carry'));
    assert.deepEqual(JSON.parse(rec.arguments), { message: 'carry •••• and •••• and •••• for ••••', password: '••••' });
    assert.equal(rec.result_preview, 'Echo: carry •••• and •••• and •••• for ••••');
    const raw = await adminGet(w.admin, '/calls?limit=1000');
    assertNoSecrets(raw.text, '/calls');
    assertNoSecrets((await adminGet(w.admin, '/metrics')).text, '/metrics');
    assertNoSecrets((await adminGet(w.admin, '/calls/inflight')).text, '/calls/inflight');
    assertNoSecrets(stream.text(), '/calls/stream');
    assertNoSecrets(w.proc.stdout, 'admin.log_calls');
    assertNoSecrets(w.proc.stderr, 'the log');
  });

  test('admin.log_calls: one JSON line per record, the same records as /calls', T, async () => {
    const { calls } = await getCalls(w.admin, 'limit=1000');
    await waitFor(() => w.proc.stdout.split('\n').filter(Boolean).length >= calls.length,
      { timeout: 2000, what: 'log lines' });
    const lines = w.proc.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const bySeq = new Map(lines.map((l) => [l.seq, l]));
    for (const c of calls) assert.deepEqual(bySeq.get(c.seq), c, `record ${c.seq}`);
  });

  test('/metrics passes promtool and counts what happened', T, async () => {
    const m = await adminGet(w.admin, '/metrics');
    assert.equal(m.status, 200);
    assert.match(m.headers['content-type'], /^text\/plain; version=0\.0\.4/);
    const check = await promtoolCheck(m.text);
    assert.equal(check.code, 0, `promtool: ${check.stdout}${check.stderr}`);
    assert.ok(metricValue(m.text, 'mcpwarden_tool_calls_total', { tool: 'echo', outcome: 'ok' }) >= 3);
    assert.equal(metricValue(m.text, 'mcpwarden_tool_calls_total', { tool: 'no-such-tool', outcome: 'tool_error' }), 1);
    assert.equal(metricValue(m.text, 'mcpwarden_requests_total', { method: 'resources/read', outcome: 'rpc_error' }), 1);
    assert.equal(metricValue(m.text, 'mcpwarden_errors_total', { method: 'resources/read', outcome: 'rpc_error' }), 1);
    assert.equal(metricValue(m.text, 'mcpwarden_requests_total', { method: 'initialize', outcome: 'ok' }), 1);
    assert.equal(metricValue(m.text, 'mcpwarden_policy_decisions_total', { rule: 'policy:no-toggles', verdict: 'answer' }), 1);
    assert.ok(metricValue(m.text, 'mcpwarden_tool_call_duration_seconds_count', { tool: 'echo' }) >= 3);
    assert.equal(metricValue(m.text, 'mcpwarden_sessions'), 1);
    assert.ok(metricValue(m.text, 'mcpwarden_client_connections') >= 1, 'the SDK session is connected');
    assert.notEqual(metricValue(m.text, 'mcpwarden_upstream_idle_connections', { upstream: 'everything' }), undefined);
    assert.ok(metricValue(m.text, 'mcpwarden_received_bytes_total') > 0);
    assert.ok(metricValue(m.text, 'mcpwarden_sent_bytes_total') > 0);
    const { ring } = await getCalls(w.admin, 'limit=1');
    assert.equal(metricValue(m.text, 'mcpwarden_ring_records'), ring.records);
    assert.equal(metricValue(m.text, 'mcpwarden_ring_dropped_total'), 0);
  });

  test('GET / serves the page: self-contained, no CORS, locked down', T, async () => {
    const r = await adminGet(w.admin, '/', { headers: { origin: w.admin } });
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'], /^text\/html; charset=utf-8/);
    assert.match(r.text, /<title>mcpwarden/);
    assert.match(r.headers['content-security-policy'], /default-src 'none'/);
    assert.match(r.headers['content-security-policy'], /connect-src 'self'/);
    // nothing fetched from anywhere else
    assert.ok(!/(src|href)\s*=\s*["']?(https?:)?\/\//i.test(r.text), 'no external reference');
    for (const h of Object.keys(r.headers)) assert.ok(!h.startsWith('access-control-'), h);
    const head = await adminGet(w.admin, '/', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
  });

  test('DNS rebinding and cross-site pages are refused without a token', T, async () => {
    const evil = await adminGet(w.admin, '/calls', { headers: { host: 'evil.example:80' } });
    assert.equal(evil.status, 403);
    const xsite = await adminGet(w.admin, '/calls', { headers: { origin: 'http://evil.example' } });
    assert.equal(xsite.status, 403);
    for (const h of Object.keys(xsite.headers)) assert.ok(!h.startsWith('access-control-'), h);
    const local = await adminGet(w.admin, '/healthz', { headers: { host: `localhost:${w.adminPort}` } });
    assert.equal(local.status, 200);
  });

  test('a DELETE ends the session in the session gauge', T, async () => {
    await s.transport.terminateSession();
    await waitFor(async () => metricValue((await adminGet(w.admin, '/metrics')).text, 'mcpwarden_sessions') === 0,
      { timeout: 2000, what: 'mcpwarden_sessions back to 0' });
  });

  test('/contract lists every upstream (report null until the contract module sends one)', T, async () => {
    const r = await adminGet(w.admin, '/contract');
    assert.equal(r.status, 200);
    const j = r.json();
    assert.equal(j.upstreams.length, 1);
    assert.equal(j.upstreams[0].upstream, 'everything');
    assert.ok('report' in j.upstreams[0]);
    const rep = j.upstreams[0].report;
    if (rep) {
      // the contract module reported the tools/list it saw: /metrics agrees
      assert.match(j.upstreams[0].updated, RFC3339_US);
      assert.equal(typeof rep.score, 'number');
      const m = (await adminGet(w.admin, '/metrics')).text;
      assert.ok(Math.abs(metricValue(m, 'mcpwarden_contract_score', { upstream: 'everything' }) - rep.score) < 1e-5);
      assert.equal(metricValue(m, 'mcpwarden_contract_passed', { upstream: 'everything' }), rep.passed ? 1 : 0);
      assert.equal(metricValue(m, 'mcpwarden_contract_tools', { upstream: 'everything' }), rep.tools.length);
    }
  });

  test('SIGTERM ends the live streams cleanly', T, async () => {
    const st = await openCallStream(w.admin);
    await stop(w.proc);
    const end = await withTimeout(st.ended, 3000, 'stream end');
    assert.equal(end.how, 'end', 'the stream ended with its last chunk');
  });
});

describe('admin: outcomes the server does not choose (scripted peer)', () => {
  let peer;
  let w;

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'scripted' });
    w = await startAdminWarden({
      upstreams: [{ name: 'scripted', url: peer.url, timeouts: { request_ms: 700 } }],
    });
  }, T);

  after(async () => { await peer?.close(); });

  const call = (id, mode, extra = {}) => ({
    body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: `t-${mode}`, arguments: { id } } },
    headers: { 'x-test-mode': mode, ...extra },
  });

  // The HTTP layer's own refusals read the same on both ports: a
  // JSON-RPC error (the handler gives the body; the admin port's handler
  // must not fall back to plain text).
  test('a refusal of the HTTP layer on the admin port is a JSON-RPC error, as on the MCP port', T, async () => {
    for (const port of [w.adminPort, w.port]) {
      const res = await rawExchange(port, `GET /calls HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Big: ${'b'.repeat(40000)}\r\n\r\n`);
      assert.equal(res.status, 431, res.head);
      assert.match(res.headers['content-type'] ?? '', /^application\/json/);
      const j = JSON.parse(res.text);
      assert.equal(j.jsonrpc, '2.0');
      assert.equal(j.id, null);
      assert.equal(j.error.code, -32600);
    }
  });

  test('a hung tool shows in /calls/inflight while it hangs, then as cancelled when the client leaves', T, async () => {
    const c = call(101, 'silent');
    const st = await openStream(w.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...c.headers },
      body: JSON.stringify(c.body),
      timeout: 500,
    }).catch(() => null); // the head never comes
    const seen = await waitFor(async () => {
      const j = (await adminGet(w.admin, '/calls/inflight')).json();
      return j.inflight.find((x) => x.tool === 't-silent' && x.age_us > 200000);
    }, { timeout: 3000, what: 'the hung call in /calls/inflight' });
    assert.equal(seen.id, 101);
    const age1 = seen.age_us;
    await sleep(150);
    const again = (await adminGet(w.admin, '/calls/inflight')).json().inflight.find((x) => x.tool === 't-silent');
    // The scripted request times out upstream after request_ms (700 ms):
    // either still there and older, or already finished as a timeout.
    if (again) assert.ok(again.age_us > age1);
    st?.abort();
    const { rec } = await visibleWithin(w.admin, (x) => x.tool === 't-silent', 3000);
    assert.ok(['timeout', 'cancelled'].includes(rec.outcome), rec.outcome);
  });

  test('timeout: 504 from a slow upstream', T, async () => {
    const c = call(102, 'silent');
    const r = await postJson(w.url, c.body, { headers: c.headers, timeout: 5000 });
    assert.equal(r.status, 504);
    const { rec } = await visibleWithin(w.admin, (x) => x.id === 102);
    assert.equal(rec.outcome, 'timeout');
    assert.equal(rec.http_status, 504);
    assert.match(rec.note, /./);
  });

  test('upstream_error: the upstream resets mid-reply', T, async () => {
    const c = call(103, 'reset');
    const r = await postJson(w.url, c.body, { headers: c.headers }).catch((e) => ({ status: 0, e }));
    assert.ok(r.status === 502 || r.status === 0);
    const { rec } = await visibleWithin(w.admin, (x) => x.id === 103);
    assert.equal(rec.outcome, 'upstream_error');
  });

  test('cancelled: the client leaves before the answer', T, async () => {
    const sock = net.connect(w.port, '127.0.0.1');
    await new Promise((res) => sock.once('connect', res));
    const body = JSON.stringify(call(104, 'silent').body);
    sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nX-Test-Mode: silent\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await waitFor(async () => (await adminGet(w.admin, '/calls/inflight')).json().inflight.some((x) => x.id === 104),
      { timeout: 2000, what: 'in flight' });
    sock.destroy();
    const { rec } = await visibleWithin(w.admin, (x) => x.id === 104);
    assert.equal(rec.outcome, 'cancelled');
  });

  test('rpc_error with a null id (expired session) is the request\'s answer', T, async () => {
    const c = call(105, 'expired');
    const r = await postJson(w.url, c.body, { headers: c.headers });
    assert.equal(r.status, 404);
    const { rec } = await visibleWithin(w.admin, (x) => x.id === 105);
    assert.equal(rec.outcome, 'rpc_error');
    assert.equal(rec.error_code, -32001);
    assert.equal(rec.http_status, 404);
  });

  test('a batch: one record per message, answers joined by id', T, async () => {
    const body = [
      { jsonrpc: '2.0', id: 'b1', method: 'tools/call', params: { name: 'batch-a', arguments: {} } },
      { jsonrpc: '2.0', method: 'notifications/batch-note', params: { x: 1 } },
      { jsonrpc: '2.0', id: 'b2', method: 'ping' },
    ];
    const r = await postJson(w.url, body);
    assert.equal(r.status, 202, 'the scripted peer acknowledges a batch as a whole');
    const recs = await waitForCalls(w.admin, (cs) => {
      const mine = cs.filter((x) => x.id === 'b1' || x.id === 'b2' || x.method === 'notifications/batch-note');
      return mine.length === 3 && mine;
    });
    const note = recs.find((x) => x.kind === 'notification');
    assert.equal(note.outcome, 'ok');
    // requests the upstream acknowledged without answering: the reply
    // ended without their answer
    for (const id of ['b1', 'b2']) {
      const x = recs.find((y) => y.id === id);
      assert.equal(x.outcome, 'upstream_error');
      assert.match(x.note, /without a JSON-RPC answer/);
    }
  });
});

describe('admin: the token', () => {
  const TOKEN = 'tok-abc.123_XYZ~9';
  let w;

  before(async () => {
    w = await startAdminWarden({ upstreams: se.url, admin: { token: TOKEN } });
  }, T);

  test('every endpoint needs Authorization: Bearer <token>: 401 otherwise', T, async () => {
    for (const path of ['/', '/calls', '/calls/inflight', '/calls/stream', '/contract', '/metrics', '/healthz', '/readyz', '/nope']) {
      for (const headers of [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
        { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` }, { authorization: TOKEN }]) {
        const r = await adminGet(w.admin, path, { headers });
        assert.equal(r.status, 401, `${path} ${JSON.stringify(headers)}`);
        assert.match(r.headers['www-authenticate'] ?? '', /^Bearer/);
        assert.ok(!r.text.includes(TOKEN));
        // no data without the token: the page's 401 body is only the form
        if (path !== '/') assert.match(r.headers['content-type'], /^application\/json/);
      }
    }
    const ok = { authorization: `Bearer ${TOKEN}` };
    assert.equal((await adminGet(w.admin, '/calls', { headers: ok })).status, 200);
    assert.equal((await adminGet(w.admin, '/metrics', { headers: { authorization: `bearer ${TOKEN}` } })).status, 200);
    assert.equal((await adminGet(w.admin, '/', { headers: ok })).status, 200);
    const st = await openCallStream(w.admin, { headers: ok });
    assert.equal(st.status, 200);
    st.abort();
  });

  test('with a token the Host check is left to the token', T, async () => {
    const r = await adminGet(w.admin, '/healthz', { headers: { authorization: `Bearer ${TOKEN}`, host: 'admin.example' } });
    assert.equal(r.status, 200);
  });

  test('a non-loopback address is refused without a token, allowed with one', T, async () => {
    const port = await freePort();
    const bad = await runWarden(['--listen', `127.0.0.1:${port}`, '--upstream', se.url, '--admin', `0.0.0.0:${await freePort()}`]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /\$\.admin\.listen: 0\.0\.0\.0 is not a loopback address: set admin\.token/);
    const conf = writeConfig({
      listen: `127.0.0.1:${port}`, upstreams: [{ url: se.url }],
      admin: { listen: `0.0.0.0:${await freePort()}`, token: TOKEN },
    });
    const h = await startWarden(port, ['-c', conf]);
    await stop(h.proc);
  });
});

describe('admin: configuration', () => {
  test('errors name their location; unknown keys are errors', T, async () => {
    const up = `http://127.0.0.1:${await closedPort()}/mcp`;
    const cases = [
      [{ ring_size: 0 }, /\$\.admin\.ring_size: must be a whole number from 1 to 100000/],
      [{ ring_size: 'big' }, /\$\.admin\.ring_size/],
      [{ colour: 'red' }, /\$\.admin\.colour: unknown key/],
      [{ listen: 'nowhere' }, /\$\.admin\.listen: must be/],
      [{ token: '' }, /\$\.admin\.token: must be a non-empty string/],
      [{ token: 'has space' }, /\$\.admin\.token: the token must be/],
      [{ log_calls: 7 }, /\$\.admin\.log_calls/],
      [{ redact_values: ['ab'] }, /\$\.admin\.redact_values\[0\]: must be a string of at least 3/],
      [{ redact_keys: 'password' }, /\$\.admin\.redact_keys: must be an array/],
      [{ max_streams: 0 }, /\$\.admin\.max_streams/],
      [{ token: 'abc', token_file: '/x' }, /give token or token_file, not both/],
      [{ token_file: '/nonexistent/token' }, /\$\.admin\.token_file: \/nonexistent\/token/],
    ];
    for (const [admin, re] of cases) {
      const conf = writeConfig({ listen: `127.0.0.1:${await freePort()}`, upstreams: [{ url: up }], admin: { listen: `127.0.0.1:${await freePort()}`, ...admin } });
      const r = await runWarden(['-c', conf]);
      assert.notEqual(r.code, 0, JSON.stringify(admin));
      assert.match(r.stderr, re, JSON.stringify(admin));
    }
  });

  test('an explicit admin address that cannot be bound stops start-up', T, async () => {
    const busy = net.createServer();
    await new Promise((res) => busy.listen(0, '127.0.0.1', res));
    try {
      const r = await runWarden(['--listen', `127.0.0.1:${await freePort()}`, '--upstream', se.url,
        '--admin', `127.0.0.1:${busy.address().port}`]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /\$\.admin\.listen: listen 127\.0\.0\.1:\d+/);
    } finally {
      busy.close();
    }
  });

  test('--admin off: no admin listener, the proxy runs', T, async () => {
    const port = await freePort();
    const adminPort = await freePort();
    const h = await startWarden(port, ['--listen', `127.0.0.1:${port}`, '--upstream', se.url, '--admin', 'off']);
    assert.equal(await canConnect(adminPort), false);
    assert.ok(!/admin endpoint on/.test(h.proc.stderr));
    const r = await postJson(h.url, { jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.ok(r.status < 500);
    await stop(h.proc);
  });

  test('admin connections do not count as client connections', T, async () => {
    // Started on its log lines, with no probe connection to the MCP port:
    // a probe still in the kernel's accept queue when the gauge is first
    // read would be counted a moment later (seen under load).
    const w = await startAdminWardenQuiet({ upstreams: se.url });
    await waitFor(async () => metricValue((await adminGet(w.admin, '/metrics')).text, 'mcpwarden_client_connections') === 0,
      { timeout: 3000, what: 'the start-up probe connection to close' });
    const c = await openRaw(w.adminPort);
    try {
      for (let i = 0; i < 3; i++) {
        await c.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        const r = await c.readResponse();
        assert.equal(r.status, 200);
        assert.equal(metricValue(r.text, 'mcpwarden_client_connections'), 0, r.text.slice(0, 300));
      }
      const s = await connectClient(w.url, { name: 'counted' });
      await c.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      const r = await c.readResponse();
      assert.ok(metricValue(r.text, 'mcpwarden_client_connections') >= 1);
      await s.close();
    } finally {
      c.close();
      await stop(w.proc);
    }
  });

  test('token_file: the token is read from a file (trailing newline ignored)', T, async () => {
    const tf = writeConfig('file-token-123\n', 'admin-token.txt');
    const w = await startAdminWarden({ upstreams: se.url, admin: { token_file: tf } });
    assert.equal((await adminGet(w.admin, '/healthz')).status, 401);
    assert.equal((await adminGet(w.admin, '/healthz', { headers: { authorization: 'Bearer file-token-123' } })).status, 200);
    await stop(w.proc);
  });
});

describe('admin: a flood keeps exactly ring_size records and counts the drops', () => {
  let peer;
  let w;
  const RING = 25;

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'flood' });
    w = await startAdminWarden({
      upstreams: [{ name: 'flood', url: peer.url }],
      admin: { ring_size: RING },
      extra: { timeouts: { client_idle_ms: 1500 } },
    });
  }, T);

  after(async () => { await peer?.close(); });

  test(`${RING}-slot ring after 120 calls`, T, async () => {
    const N = 120;
    for (let i = 0; i < N; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, k) =>
        postJson(w.url, { jsonrpc: '2.0', id: i + k, method: 'tools/call', params: { name: 'flood', arguments: { i: i + k } } })));
    }
    const j = await waitFor(async () => {
      const x = await getCalls(w.admin, `limit=${RING}`);
      return x.ring.newest_seq === N && x;
    }, { timeout: 3000, what: `${N} records made` });
    assert.equal(j.calls.length, RING);
    assert.equal(j.ring.records, RING);
    assert.equal(j.ring.size, RING);
    assert.equal(j.ring.dropped, N - RING);
    assert.equal(j.ring.oldest_seq, N - RING + 1);
    assert.deepEqual(j.calls.map((c) => c.seq), Array.from({ length: RING }, (_, k) => N - k));
    assert.equal((await adminGet(w.admin, `/calls?limit=${RING + 1}`)).status, 400);
    const m = (await adminGet(w.admin, '/metrics')).text;
    assert.equal(metricValue(m, 'mcpwarden_ring_dropped_total'), N - RING);
    assert.equal(metricValue(m, 'mcpwarden_ring_records'), RING);
    assert.equal(metricValue(m, 'mcpwarden_tool_calls_total', { tool: 'flood', outcome: 'ok' }), N);
    assert.equal((await promtoolCheck(m)).code, 0);
    // resuming from before the ring's start: a gap event, then what is held
    const st = await openCallStream(w.admin, { lastEventId: 3 });
    try {
      const rs = await st.waitRecords((x) => x.length >= RING && x);
      assert.deepEqual(rs.map((r) => r.seq), Array.from({ length: RING }, (_, k) => N - RING + 1 + k));
      const gap = st.sse.events.find((e) => e.event === 'gap');
      assert.deepEqual(JSON.parse(gap.data), { missed_from: 4, missed_to: N - RING });
    } finally {
      st.abort();
    }
  });

  test('slow stream readers: bounded memory, caught up from the ring with gaps announced, a stuck one cut', T, async () => {
    // Raw HTTP/1.0 readers (the stream is then close-delimited, no chunk
    // framing) that do not read: their kernel buffers stay small and fill,
    // then mcpwarden's output cap. `stuck` never reads again and is cut by
    // the write timeout (timeouts.client_idle_ms, 1.5 s here); `slow`
    // resumes once mcpwarden has marked both behind, and must catch up
    // from the ring with every lost range announced.
    const stuck = await rawStreamReader(w.adminPort);
    const slow = await rawStreamReader(w.adminPort);
    const good = await openCallStream(w.admin);
    const before = (await getCalls(w.admin, 'limit=1')).ring.newest_seq;
    const rssBefore = rss(w.proc.pid);
    // batches of 100 notifications with parameters cut at 1000 characters,
    // about 1.3 kB per record, until both raw readers are behind (their
    // socket buffers and mcpwarden's output cap full), then 20 more. How
    // many it takes depends on the loopback's buffer autotuning and on how
    // records are batched to readers (new records wake the readers once
    // however many came, and a reader behind is sent what the ring still
    // holds), so the flood runs until it has happened, bounded.
    const pad = 'p'.repeat(1200);
    let flooding = true;
    let behind = false;
    let batches = 0;
    const flood = (async () => {
      for (let more = 20; batches < 3000 && more > 0; batches++) {
        const body = Array.from({ length: 100 }, (_, k) => ({ jsonrpc: '2.0', method: 'notifications/flood', params: { b: batches, k, pad } }));
        const r = await postJson(w.url, body);
        assert.equal(r.status, 202);
        if (behind) more--;
      }
      flooding = false;
    })();
    await waitFor(async () => metricValue((await adminGet(w.admin, '/metrics')).text, 'mcpwarden_admin_streams_behind') >= 2 || !flooding,
      { timeout: 30000, interval: 20, what: 'both raw readers behind' });
    assert.ok(flooding, 'the readers fell behind while the flood ran');
    behind = true;
    slow.sock.resume();
    await flood;
    const tFlood = Date.now();
    const rssAfter = rss(w.proc.pid);
    // (ASan keeps freed memory in quarantine: RSS says nothing there)
    if (!SANITIZED) assert.ok(rssAfter - rssBefore < 64 * 1024, `RSS grew by ${rssAfter - rssBefore} kB`);
    // A batch's records are made as its exchange ends, which may be just
    // after the client had its 202 (on another worker, too).
    const newest = before + batches * 100;
    await waitFor(async () => (await getCalls(w.admin, 'limit=1')).ring.newest_seq === newest,
      { timeout: 5000, what: `record ${newest} made` });
    const last = (p) => p.events.filter((e) => e.event === 'message').at(-1);
    await waitFor(() => Number(last(good.sse)?.id) === newest, { timeout: 10000, what: 'reading stream to reach the newest record' });
    await waitFor(() => Number(last(slow.sse)?.id) === newest, { timeout: 10000, what: 'slow stream to catch up' });
    assertContiguous(good.sse.events, 'reading');
    assertContiguous(slow.sse.events, 'slow');
    assert.ok(slow.sse.events.some((e) => e.event === 'gap'), 'the slow reader was told what it missed');
    assert.ok(!slow.closed, 'the slow reader was never cut');
    // The stuck reader cannot see its end (its FIN waits behind the unread
    // bytes): the stream count shows it, down to the two that read.
    await waitFor(async () => metricValue((await adminGet(w.admin, '/metrics')).text, 'mcpwarden_admin_streams') === 2,
      { timeout: 5000, what: 'the stuck reader to be cut' });
    assert.ok(Date.now() - tFlood < 5000);
    good.abort();
    slow.sock.destroy();
    stuck.sock.destroy();
    const m = (await adminGet(w.admin, '/metrics')).text;
    assert.equal(metricValue(m, 'mcpwarden_ring_records'), RING, 'still exactly ring_size records');
  });
});

/* A /calls/stream reader over a raw socket, HTTP/1.0, paused at once:
 * {sock, sse (SseParser over the body), closed (time or 0)}. */
async function rawStreamReader(port) {
  const sock = net.connect(port, '127.0.0.1');
  await new Promise((res) => sock.once('connect', res));
  const r = { sock, sse: new SseParser(), closed: 0 };
  let head = '';
  let inBody = false;
  sock.setEncoding('utf8');
  sock.on('data', (d) => {
    if (inBody) return r.sse.feed(d);
    head += d;
    const i = head.indexOf('\r\n\r\n');
    if (i >= 0) {
      inBody = true;
      r.sse.feed(head.slice(i + 4));
    }
  });
  sock.on('close', () => { r.closed = Date.now(); });
  sock.on('error', () => {});
  sock.write('GET /calls/stream HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n');
  sock.pause();
  return r;
}

/* Records arrive in order; any seq missing is announced by a gap event
 * just before, naming exactly the missing range. */
function assertContiguous(events, name) {
  let expect = null;
  for (const e of events) {
    if (e.event === 'gap') {
      const g = JSON.parse(e.data);
      if (expect !== null) assert.equal(g.missed_from, expect, `${name}: gap starts where the records stopped`);
      expect = g.missed_to + 1;
    } else if (e.event === 'message' && e.data) {
      const r = JSON.parse(e.data);
      if (expect !== null) assert.equal(r.seq, expect, `${name}: record ${r.seq} where ${expect} was due`);
      assert.equal(e.id, String(r.seq));
      expect = r.seq + 1;
    }
  }
}

function rss(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

describe('admin: a real Prometheus server scrapes /metrics', { skip: existsSync('/usr/bin/prometheus') ? false : 'Debian package prometheus not installed' }, () => {
  let w;
  let prom;
  let dir;

  before(async () => {
    w = await startAdminWarden({ upstreams: [{ name: 'everything', url: se.url }] });
    dir = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-prom-'));
    const conf = path.join(dir, 'prometheus.yml');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(conf, [
      'global:',
      '  scrape_interval: 1s',
      'scrape_configs:',
      '  - job_name: mcpwarden',
      '    static_configs:',
      `      - targets: ['127.0.0.1:${w.adminPort}']`,
      '',
    ].join('\n'));
    const port = await freePort();
    prom = spawnTracked('prometheus', '/usr/bin/prometheus', [
      `--config.file=${conf}`, `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
    ]);
    await waitForPort(prom, port, 20000);
    prom.base = `http://127.0.0.1:${port}`;
  }, { timeout: 40000 });

  after(async () => {
    await stop(prom);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('the target is up and the call counters can be queried', { timeout: 40000 }, async () => {
    const s = await connectClient(w.url, { name: 'prom-it' });
    await s.client.callTool({ name: 'echo', arguments: { message: 'scraped' } });
    await s.close();
    const q = async (expr) => {
      const r = await request(`${prom.base}/api/v1/query?query=${encodeURIComponent(expr)}`);
      return r.status === 200 ? r.json().data.result : [];
    };
    const up = await waitFor(async () => {
      const r = await request(`${prom.base}/api/v1/targets`);
      const t = r.status === 200 ? r.json().data.activeTargets[0] : null;
      return t && t.health === 'up' && t;
    }, { timeout: 20000, interval: 250, what: 'prometheus to scrape the admin endpoint' });
    assert.equal(up.lastError, '');
    const rs = await waitFor(async () => {
      const x = await q('mcpwarden_tool_calls_total{tool="echo",outcome="ok"}');
      return x.length && Number(x[0].value[1]) >= 1 && x;
    }, { timeout: 10000, interval: 250, what: 'the echo counter in prometheus' });
    assert.equal(rs[0].metric.job, 'mcpwarden');
    const h = await q('histogram_quantile(0.5, sum by (le) (mcpwarden_request_duration_seconds_bucket))');
    assert.ok(h.length === 1 && Number.isFinite(Number(h[0].value[1])), JSON.stringify(h));
  });
});

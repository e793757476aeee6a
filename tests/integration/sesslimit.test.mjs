// Per-session caps of pass-through Streamable HTTP sessions (issue 9,
// point 4: "in-flight requests per session, streams per session").
// limits.max_inflight_per_session caps one session's requests being
// processed at once, limits.max_streams_per_session its GET SSE streams.
// Over a cap the client gets 429 with Retry-After and a JSON-RPC error
// carrying its request's id; one warning is logged; /metrics counts the
// refusal. Each slot goes back exactly once however the exchange ends: the
// reply, the client leaving mid-request, an upstream error, a timeout,
// shutdown. /metrics' mcpwarden_session_slots gauge shows what is held.
//
//   server-everything   a real session: long-running tool calls hold the
//                       in-flight slots, the standalone GET stream the
//                       stream slot (the server itself would answer a
//                       second GET 409; the proxy's 429 comes first).
//   scripted peer       the exits a real server does not produce on
//                       demand: silence past request_ms (504), a reset
//                       mid-reply (502), a held SSE reply the client
//                       leaves, and SIGTERM with slots held.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startEverything, stop, stopAll } from './lib/procs.mjs';
import { openRaw, openStream, postJson, rawRequestBytes, request } from './lib/http.mjs';
import { assertRpcError } from './lib/assert-rpc.mjs';
import { adminGet, metricValue, startAdminWarden } from './lib/admin-util.mjs';
import { sleep, waitFor } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';

const T = { timeout: 30000 };
const ACCEPT = 'application/json, text/event-stream';
const PROTO = '2025-06-18';

async function metrics(w) {
  const r = await adminGet(w.admin, '/metrics');
  assert.equal(r.status, 200);
  return r.text;
}

async function slots(w, kind) {
  return metricValue(await metrics(w), 'mcpwarden_session_slots', { kind });
}

function waitSlots(w, kind, n, timeout = 5000) {
  return waitFor(async () => (await slots(w, kind)) === n,
    { timeout, interval: 25, what: `mcpwarden_session_slots{kind="${kind}"} = ${n}` });
}

const sessionHeaders = (sid, extra = {}) => ({ 'mcp-session-id': sid, 'mcp-protocol-version': PROTO, ...extra });

/** initialize + notifications/initialized over plain HTTP (no SDK: it
 * would open its own GET stream). Returns the session id. */
async function initSession(url) {
  const init = await postJson(url, {
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: PROTO, capabilities: {}, clientInfo: { name: 'sesslimit-it', version: '1' } },
  });
  assert.equal(init.status, 200, init.text);
  const sid = init.headers['mcp-session-id'];
  assert.ok(sid, 'initialize issued no session id');
  const n = await postJson(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: sessionHeaders(sid) });
  assert.equal(n.status, 202);
  return sid;
}

/** A request written on its own connection: `c.sock.destroy()` is a client
 * that leaves, `c.readResponse()` its answer. */
async function startPost(port, sid, msg, extra = []) {
  const body = Buffer.from(JSON.stringify(msg));
  const c = await openRaw(port);
  await c.write(rawRequestBytes('POST /mcp HTTP/1.1', [
    ['Host', `127.0.0.1:${port}`], ['Content-Type', 'application/json'], ['Accept', ACCEPT],
    ['Mcp-Session-Id', sid], ['MCP-Protocol-Version', PROTO], ...extra,
    ['Content-Length', String(body.length)],
  ], body));
  return c;
}

const longCall = (id, seconds) => ({
  jsonrpc: '2.0', id, method: 'tools/call',
  params: { name: 'trigger-long-running-operation', arguments: { duration: seconds, steps: seconds } },
});
const echo = (id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message: `m${id}` } } });

function assertBusy(res, id, limitKey) {
  assert.equal(res.headers['retry-after'], '1', `Retry-After: ${JSON.stringify(res.headers)}`);
  assertRpcError(res, { status: 429, code: -32600, id, messageIncludes: [limitKey] });
}

describe('a session at a cap of one in-flight request, two workers', () => {
  let se;
  let w;

  before(async () => {
    se = await startEverything(await freePort());
    w = await startAdminWarden({
      upstreams: [{ name: 'everything', url: se.url }],
      extra: { workers: 2, limits: { max_inflight_per_session: 1 } },
    });
  }, { timeout: 30000 });

  after(async () => {
    await stopAll();
  });

  test('a client that has its answer is never refused for it: 300 calls back to back, each on a new connection', T, async () => {
    // The slot goes back before the reply's bytes leave. When it went back
    // a loop turn later, the next call (taken by either worker) could
    // still find the session at its cap and get 429.
    const sid = await initSession(w.url);
    const refused = [];
    for (let i = 0; i < 300; i++) {
      const r = await postJson(w.url, echo(i), { headers: sessionHeaders(sid) });
      if (r.status !== 200) refused.push(`call ${i}: ${r.status} ${r.text.slice(0, 80)}`);
    }
    assert.deepEqual(refused, []);
    assert.equal(metricValue(await metrics(w), 'mcpwarden_session_limit_refusals_total', { limit: 'inflight' }), 0);
  });
});

describe('per-session caps in front of server-everything', () => {
  let se;
  let w;
  let sid;

  before(async () => {
    se = await startEverything(await freePort());
    w = await startAdminWarden({
      upstreams: [{ name: 'everything', url: se.url }],
      extra: { limits: { max_inflight_per_session: 2, max_streams_per_session: 1 } },
    });
    sid = await initSession(w.url);
  }, { timeout: 30000 });

  after(async () => {
    await stopAll();
  });

  test('the third concurrent request of a session gets 429 with its id and Retry-After; others pass', T, async () => {
    const a = await startPost(w.port, sid, longCall(11, 3));
    const b = await startPost(w.port, sid, longCall(12, 3));
    await waitSlots(w, 'inflight', 2);

    const over = await postJson(w.url, echo(13), { headers: sessionHeaders(sid) });
    assertBusy(over, 13, 'limits.max_inflight_per_session');
    const over2 = await postJson(w.url, echo('fourteen'), { headers: sessionHeaders(sid) });
    assertBusy(over2, 'fourteen', 'limits.max_inflight_per_session');

    // Notifications pass at the cap (a client must still be able to cancel
    // or answer the server), and so does another session.
    const note = await postJson(w.url, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
      { headers: sessionHeaders(sid) });
    assert.equal(note.status, 202);
    const other = await initSession(w.url);
    const ok = await postJson(w.url, echo(15), { headers: sessionHeaders(other) });
    assert.equal(ok.status, 200, ok.text);
    assert.match(ok.text, /m15/);

    const m = await metrics(w);
    assert.equal(metricValue(m, 'mcpwarden_session_limit_refusals_total', { limit: 'inflight' }), 2);
    assert.equal(metricValue(m, 'mcpwarden_session_slots', { kind: 'inflight' }), 2);
    const warns = w.proc.stderr.split('\n').filter((l) => /more get 429/.test(l));
    assert.equal(warns.length, 1, `one warning per busy spell:\n${warns.join('\n')}`);
    assert.match(warns[0], /WARN|warn/);
    assert.match(warns[0], /2 in-flight requests/);
    assert.ok(!warns[0].includes(sid), 'the whole session id is not logged');

    // Both calls complete; their slots come back; the session works again.
    for (const c of [a, b]) {
      const r = await c.readResponse({ timeout: 10000 });
      assert.equal(r.status, 200);
      assert.match(r.text, /Long running operation completed/);
      c.close();
    }
    await waitSlots(w, 'inflight', 0);
    const again = await postJson(w.url, echo(16), { headers: sessionHeaders(sid) });
    assert.equal(again.status, 200, again.text);
  });

  test('a client that disconnects mid-request gives its slot back at once', T, async () => {
    const t0 = Date.now();
    const a = await startPost(w.port, sid, longCall(21, 5));
    const b = await startPost(w.port, sid, longCall(22, 5));
    await waitSlots(w, 'inflight', 2);
    assertBusy(await postJson(w.url, echo(23), { headers: sessionHeaders(sid) }), 23,
      'limits.max_inflight_per_session');

    a.sock.destroy();
    await waitSlots(w, 'inflight', 1);
    const c = await postJson(w.url, echo(24), { headers: sessionHeaders(sid) });
    assert.equal(c.status, 200, c.text);
    assert.ok(Date.now() - t0 < 4000, 'admitted long before the abandoned call would have ended');
    b.sock.destroy();
    await waitSlots(w, 'inflight', 0);
  });

  test('DELETE is never refused at the cap', T, async () => {
    const s2 = await initSession(w.url);
    const a = await startPost(w.port, s2, longCall(31, 3));
    const b = await startPost(w.port, s2, longCall(32, 3));
    await waitSlots(w, 'inflight', 2);
    assertBusy(await postJson(w.url, echo(33), { headers: sessionHeaders(s2) }), 33,
      'limits.max_inflight_per_session');
    const del = await request(w.url, { method: 'DELETE', headers: sessionHeaders(s2) });
    assert.equal(del.status, 200, del.text);
    for (const c of [a, b]) c.sock.destroy();
    await waitSlots(w, 'inflight', 0);
  });

  test('a second GET stream of a session gets 429; once the first closes a new one opens', T, async () => {
    const h = sessionHeaders(sid, { accept: 'text/event-stream' });
    const first = await openStream(w.url, { headers: h });
    assert.equal(first.status, 200);
    assert.match(first.headers['content-type'], /^text\/event-stream/);
    await waitSlots(w, 'streams', 1);

    const second = await request(w.url, { headers: h });
    assertBusy(second, null, 'limits.max_streams_per_session');
    // Requests of the session are not streams: they still pass.
    const call = await postJson(w.url, echo(41), { headers: sessionHeaders(sid) });
    assert.equal(call.status, 200, call.text);

    first.abort();
    await waitSlots(w, 'streams', 0);
    // The proxy admits the next stream at once; server-everything may
    // still say 409 for a moment (it notices the old stream's end late).
    let third;
    await waitFor(async () => {
      third = await openStream(w.url, { headers: h });
      assert.notEqual(third.status, 429, 'the slot came back');
      if (third.status === 200) return true;
      third.abort();
      return false;
    }, { timeout: 3000, interval: 50, what: 'a new GET stream' });
    await waitSlots(w, 'streams', 1);
    third.abort();
    await waitSlots(w, 'streams', 0);
    const m = await metrics(w);
    assert.equal(metricValue(m, 'mcpwarden_session_limit_refusals_total', { limit: 'streams' }), 1);
    assert.equal(w.proc.stderr.split('\n').filter((l) => /1 SSE streams \(its limit\)/.test(l)).length, 1);
  });

  test('every slot is back; mcpwarden exits 0', T, async () => {
    assert.equal(await slots(w, 'inflight'), 0);
    assert.equal(await slots(w, 'streams'), 0);
    const st = await stop(w.proc);
    assert.equal(st.code, 0, w.proc.stderr.slice(-2000));
  });
});

describe('per-session caps: every way an exchange ends gives its slot back (scripted upstream)', () => {
  let peer;
  let w;
  const SID = 'scripted-session-1';
  const mode = (m) => [['X-Test-Mode', m]];

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'caps' });
    w = await startAdminWarden({
      upstreams: [{ name: 'scripted', url: peer.url, timeouts: { request_ms: 600 } }],
      extra: {
        limits: { max_inflight_per_session: 1, max_streams_per_session: 1 },
        timeouts: { drain_ms: 1000 },
      },
    });
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
  });

  const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });

  async function nextIsAdmitted(id) {
    await waitSlots(w, 'inflight', 0);
    const r = await postJson(w.url, ping(id), { headers: sessionHeaders(SID) });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json().id, id);
  }

  test('the reply: slot back after each answer (sequential requests never hit the cap of 1)', T, async () => {
    for (let i = 0; i < 5; i++) await nextIsAdmitted(100 + i);
  });

  test('a timeout (504): slot back', T, async () => {
    const c = await startPost(w.port, SID, ping(201), mode('silent'));
    await waitSlots(w, 'inflight', 1);
    assertBusy(await postJson(w.url, ping(202), { headers: sessionHeaders(SID) }), 202,
      'limits.max_inflight_per_session');
    const r = await c.readResponse({ timeout: 5000 });
    assert.equal(r.status, 504);
    c.close();
    await nextIsAdmitted(203);
  });

  test('an upstream error (reset mid-reply, 502): slot back', T, async () => {
    const r = await postJson(w.url, ping(301), { headers: sessionHeaders(SID, { 'x-test-mode': 'reset' }) });
    assert.equal(r.status, 502);
    await nextIsAdmitted(302);
  });

  test('the client leaves a held SSE reply: slot back, upstream connection closed', T, async () => {
    const c = await startPost(w.port, SID, ping(401), mode('hold-sse'));
    const rec = await peer.waitRequest((x) => x.body.includes('"id":401'));
    await waitSlots(w, 'inflight', 1);
    c.sock.destroy();
    assert.ok(await peer.closed(rec), 'upstream connection closed');
    await nextIsAdmitted(402);
  });

  test('a GET stream the upstream ends: slot back', T, async () => {
    const h = sessionHeaders(SID, { accept: 'text/event-stream', 'x-test-mode': 'truncate-sse' });
    const st = await openStream(w.url, { headers: h });
    assert.equal(st.status, 200);
    await st.ended;
    await waitSlots(w, 'streams', 0);
  });

  test('SIGTERM with a stream and a request holding slots: both end, exit 0', T, async () => {
    const st = await openStream(w.url, { headers: sessionHeaders(SID, { accept: 'text/event-stream', 'x-test-mode': 'hold-sse' }) });
    const c = await startPost(w.port, 'another-session', ping(501), mode('silent'));
    await waitSlots(w, 'streams', 1);
    await waitSlots(w, 'inflight', 1);
    const exit = stop(w.proc);
    const end = await st.ended;
    assert.equal(end.how, 'end', 'the GET stream is ended cleanly on drain');
    const r = await c.readResponse({ timeout: 5000 });
    assert.equal(r.status, 504, 'the request in flight still gets its answer');
    const status = await exit;
    assert.equal(status.code, 0, w.proc.stderr.slice(-2000));
    await sleep(10);
  });
});

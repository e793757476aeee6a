// Transport translation (issue 5): legacy HTTP+SSE (2024-11-05) and
// Streamable HTTP on either side of mcpwarden, in all four combinations,
// with the official SDK 1.x clients and server-everything in both modes.
//
//   client \ upstream    sse (server-everything sse)   streamable (… streamableHttp)
//   SSEClientTransport   sse→sse (legacy engine)       sse→streamable (translated)
//   StreamableHTTP…      streamable→sse (translated)   streamable→streamable (pass-through)
//
// Each combination runs the same session script and must see what the same
// client sees directly. Then the ways a session ends: a dropped upstream
// stream, a client that vanishes, an idle session expiring, DELETE with
// requests in flight: every request gets exactly one answer, nothing hangs.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startEverything, startWarden, startWardenQuiet, stopAll, stop, runWarden } from './lib/procs.mjs';
import { writeConfig } from './lib/conf.mjs';
import { postJson, request, openStream, openRaw, rawRequestBytes, SseParser } from './lib/http.mjs';
import { withTimeout, waitFor } from './lib/util.mjs';
import { startAdminWarden, adminGet, metricValue } from './lib/admin-util.mjs';
import {
  startEverythingSse, connectSdk, sessionScript, legacyStream, waitUpstreamPosts, INIT,
  SAMPLING_REPLY, ROOTS, CALL_MS,
} from './lib/translate-util.mjs';

const T = { timeout: 60000 };

// The SDK's legacy client handles notifications a microtask after the
// response that follows them in the same chunk, so it reports the last
// progress of a call as "unknown token" even talking to the server
// directly: not a transport error.
const realErrors = (s) => s.errors.filter((e) => !/unknown token|aborted|AbortError/i.test(String(e?.message ?? e)));

// Stops a warden and checks it went cleanly: exit 0 after SIGTERM, and
// no sanitizer report (MCPWARDEN_BIN=build/asan/mcpwarden) of leaks or
// memory errors.
async function stopClean(w) {
  const st = await stop(w.proc);
  assert.doesNotMatch(w.proc.stderr, /AddressSanitizer|LeakSanitizer|runtime error:/,
    `sanitizer report:\n${w.proc.stderr.slice(-6000)}`);
  assert.equal(st?.code, 0, `mcpwarden exit ${JSON.stringify(st)}\n${w.proc.stderr.slice(-3000)}`);
}

function text(result) {
  return result?.content?.[0]?.text ?? '';
}

// The JSON-RPC messages of a buffered translated POST reply. A client that
// accepts text/event-stream (postJson's default) gets an SSE stream, as
// from SDK servers; one that accepts only JSON gets JSON.
function replyMessages(r) {
  if (/^application\/json/.test(r.headers['content-type'] ?? '')) {
    const v = r.json();
    return Array.isArray(v) ? v : [v];
  }
  assert.match(r.headers['content-type'] ?? '', /^text\/event-stream/, `status ${r.status}: ${r.text}`);
  const p = new SseParser();
  p.feed(r.text);
  return p.events.filter((e) => e.event === 'message' && e.data).map((e) => JSON.parse(e.data));
}

describe('transport translation: four combinations, one session script', () => {
  let seSse, seSt, wSse, wSt;
  const direct = {};

  before(async () => {
    [seSse, seSt] = await Promise.all([
      startEverythingSse(await freePort()),
      startEverything(await freePort()),
    ]);
    const [p1, p2] = [await freePort(), await freePort()];
    [wSse, wSt] = await Promise.all([
      startWarden(p1, ['--listen', `127.0.0.1:${p1}`, '--upstream', seSse.url, '--log-level', 'debug']),
      startWarden(p2, ['--listen', `127.0.0.1:${p2}`, '--upstream', seSt.url]),
    ]);
    // Baselines: each client kind straight to the server mode it speaks.
    for (const [kind, url] of [['sse', seSse.url], ['streamable', seSt.url]]) {
      const s = await connectSdk(kind, url, { name: `direct-${kind}` });
      try {
        direct[kind] = await sessionScript(s);
      } finally {
        await s.close();
      }
    }
  }, { timeout: 90000 });

  after(async () => {
    await stopClean(wSse);
    await stopClean(wSt);
    await stopAll();
  });

  const combos = [
    { client: 'sse', upstream: 'sse', warden: () => wSse, path: '/sse' },
    { client: 'streamable', upstream: 'sse', warden: () => wSse, path: '/mcp' },
    { client: 'sse', upstream: 'streamable', warden: () => wSt, path: '/sse' },
    { client: 'streamable', upstream: 'streamable', warden: () => wSt, path: '/mcp' },
  ];

  for (const c of combos) {
    test(`${c.client} client → ${c.upstream} upstream: the session script sees what a direct client sees`, T, async () => {
      const w = c.warden();
      const s = await connectSdk(c.client, `${w.base}${c.path}`, { name: `via-${c.client}-${c.upstream}` });
      let got;
      try {
        got = await sessionScript(s);
      } finally {
        await s.close();
      }
      const want = direct[c.client];
      for (const k of ['server', 'capabilities', 'tools', 'echo', 'sum', 'longRunning', 'sampling',
        'elicitation', 'roots', 'resourceCount', 'resource', 'templates', 'prompts', 'prompt']) {
        assert.deepEqual(got[k], want[k], `${k} differs from the direct run`);
      }
      assert.equal(text(got.echo), 'Echo: über ✓ translate');
      assert.match(text(got.sum), /42/);
      assert.match(text(got.sampling), new RegExp(SAMPLING_REPLY.content.text));
      assert.match(JSON.stringify(got.elicitation), /Ada Lovelace/);
      assert.match(JSON.stringify(got.roots), new RegExp(ROOTS[0].uri.replace(/\//g, '\\/')));
      assert.deepEqual(got.serverRequests, ['elicitation/create', 'roots/list', 'sampling/createMessage']);
      // Progress: the same values as directly, streamed as they happen
      // (not held back until the result). mcpwarden writes each event as it
      // comes, so the last progress may reach the client in its own chunk,
      // where the direct client's SDK drops it for sharing a chunk with the
      // result (see the top of this file): at most that one more.
      const gotP = got.progress.map((p) => [p.progress, p.total]);
      const wantP = want.progress.map((p) => [p.progress, p.total]);
      assert.deepEqual(gotP.slice(0, wantP.length), wantP);
      assert.ok(gotP.length - wantP.length <= 1, `progress ${JSON.stringify(gotP)} against ${JSON.stringify(wantP)}`);
      assert.ok(got.progress.length >= 3, `only ${got.progress.length} progress notifications`);
      assert.ok(got.progress[0].t < got.tLong - 500, `progress was not streamed: ${JSON.stringify(got.progress)} result at ${got.tLong}`);
      assert.deepEqual(realErrors(s).map(String), []);
    });
  }

  test('the upstream transports were detected and logged (auto)', T, async () => {
    await waitFor(() => /upstream default \(http:\/\/127\.0\.0\.1:\d+\/sse\) speaks sse \(detected/.test(wSse.proc.stderr),
      { timeout: 2000, what: 'sse detection log line' });
    await waitFor(() => /speaks streamable_http \(detected/.test(wSt.proc.stderr),
      { timeout: 2000, what: 'streamable detection log line' });
  });

  test('legacy stream: endpoint event first (same-origin relative URI), SSE headers, 202 Accepted', T, async () => {
    for (const w of [wSse, wSt]) {
      const l = await legacyStream(`${w.base}/sse`);
      try {
        assert.equal(l.status, 200);
        assert.match(l.st.headers['content-type'], /^text\/event-stream/);
        assert.equal(l.st.headers['x-accel-buffering'], 'no');
        assert.equal(l.st.sse.events[0].event, 'endpoint');
        assert.match(l.st.sse.events[0].data, /^\/messages\?sessionId=[0-9a-f]{32}$/);
        const r = await l.post(INIT(1));
        assert.equal(r.status, 202);
        assert.equal(r.text, 'Accepted');
        const resp = await l.waitMessage((m) => m.id === 1);
        assert.ok(resp.result?.serverInfo, JSON.stringify(resp));
        // Never an `endpoint` or other event name but `message` after the first.
        assert.ok(l.st.sse.events.slice(1).every((e) => e.event === 'message'));
      } finally {
        l.st.abort();
      }
    }
  });

  test('legacy POST: unknown session 404, no session id 404, bad JSON 400, wrong method 405', T, async () => {
    const unknown = await postJson(`${wSse.base}/messages?sessionId=${'0'.repeat(32)}`, INIT(1));
    assert.equal(unknown.status, 404);
    const none = await postJson(`${wSse.base}/messages`, INIT(1));
    assert.equal(none.status, 404);
    const l = await legacyStream(`${wSse.base}/sse`);
    try {
      const bad = await postJson(l.endpoint, '{"jsonrpc": "2.0", "id": 1, "method": ');
      assert.equal(bad.status, 400);
      assert.equal(bad.json().error.code, -32700);
      const get = await request(l.endpoint);
      assert.equal(get.status, 405);
      // A Streamable client probing the legacy URL gets a fallback status.
      const post = await postJson(`${wSse.base}/sse`, INIT(1));
      assert.equal(post.status, 405);
      assert.match(post.headers.allow, /GET/);
    } finally {
      l.st.abort();
    }
  });

  test('streamable → sse: minted Mcp-Session-Id; no id 400, unknown id 404, second GET 409', T, async () => {
    const init = await postJson(`${wSse.base}/mcp`, INIT(1));
    assert.equal(init.status, 200, init.text);
    const sid = init.headers['mcp-session-id'];
    assert.match(sid ?? '', /^[0-9a-f]{32}$/);
    assert.match(init.headers['content-type'], /^text\/event-stream/);
    assert.deepEqual(replyMessages(init).map((m) => m.id), [1]);
    const hdr = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
    assert.equal((await postJson(`${wSse.base}/mcp`, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: hdr })).status, 202);

    const noId = await postJson(`${wSse.base}/mcp`, { jsonrpc: '2.0', id: 2, method: 'ping' });
    assert.equal(noId.status, 400);
    const unknown = await postJson(`${wSse.base}/mcp`, { jsonrpc: '2.0', id: 2, method: 'ping' },
      { headers: { 'mcp-session-id': 'f'.repeat(32) } });
    assert.equal(unknown.status, 404);

    const ping = await postJson(`${wSse.base}/mcp`, { jsonrpc: '2.0', id: 'p', method: 'ping' }, { headers: hdr });
    assert.equal(ping.status, 200);
    assert.match(ping.headers['content-type'], /^text\/event-stream/);
    assert.deepEqual(replyMessages(ping), [{ jsonrpc: '2.0', id: 'p', result: {} }]);
    // A client that accepts only JSON gets JSON.
    const pj = await postJson(`${wSse.base}/mcp`, { jsonrpc: '2.0', id: 'pj', method: 'ping' },
      { headers: { ...hdr, accept: 'application/json' } });
    assert.equal(pj.status, 200);
    assert.match(pj.headers['content-type'], /^application\/json/);
    assert.deepEqual(pj.json(), { jsonrpc: '2.0', id: 'pj', result: {} });

    const g1 = await openStream(`${wSse.base}/mcp`, { headers: { accept: 'text/event-stream', ...hdr } });
    assert.equal(g1.status, 200);
    assert.equal(g1.headers['x-accel-buffering'], 'no');
    const g2 = await request(`${wSse.base}/mcp`, { headers: { accept: 'text/event-stream', ...hdr } });
    assert.equal(g2.status, 409);
    g1.abort();
    const del = await request(`${wSse.base}/mcp`, { method: 'DELETE', headers: hdr });
    assert.equal(del.status, 200);
    const after = await postJson(`${wSse.base}/mcp`, { jsonrpc: '2.0', id: 3, method: 'ping' }, { headers: hdr });
    assert.equal(after.status, 404, 'a deleted session is 404 (the client starts over)');
    // The upstream's session ended with ours: its SSE connection closed.
    await waitFor(() => /Client Disconnected/.test(seSse.proc.stderr), { timeout: 3000, what: 'upstream session closed' });
  });

  test('streamable → sse: a POST accepting SSE gets its head once the upstream took the request, then its events', T, async () => {
    const init = await postJson(`${wSse.base}/mcp`, INIT(1));
    const hdr = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-06-18' };
    await postJson(`${wSse.base}/mcp`, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: hdr });
    // A 2 s call without a progress token: no message before its result.
    const st = await openStream(`${wSse.base}/mcp`, {
      method: 'POST',
      headers: { ...hdr, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'slow', method: 'tools/call',
        params: { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 2 } } }),
    });
    try {
      assert.equal(st.status, 200);
      assert.match(st.headers['content-type'], /^text\/event-stream/);
      assert.equal(st.headers['mcp-session-id'], hdr['mcp-session-id']);
      const end = await withTimeout(st.ended, 8000, 'the slow call\'s reply');
      assert.equal(end.how, 'end');
      assert.ok(end.t - st.tHead >= 1000, `the head came ${end.t - st.tHead} ms before the result: not at once`);
      const msgs = st.sse.events.filter((e) => e.data).map((e) => JSON.parse(e.data));
      assert.deepEqual(msgs.map((m) => m.id), ['slow']);
      assert.match(text(msgs[0].result), /completed/i);
    } finally {
      st.abort();
    }
    await request(`${wSse.base}/mcp`, { method: 'DELETE', headers: hdr });
  });

  test('DELETE with requests in flight: each gets exactly one answer, an error naming why', T, async () => {
    const since = seSse.proc.stderr.length;
    const init = await postJson(`${wSse.base}/mcp`, INIT(1));
    const sid = init.headers['mcp-session-id'];
    const hdr = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
    await postJson(`${wSse.base}/mcp`, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: hdr });
    const calls = [1, 2, 3].map((i) => postJson(`${wSse.base}/mcp`, {
      jsonrpc: '2.0', id: `long-${i}`, method: 'tools/call',
      params: { name: 'trigger-long-running-operation', arguments: { duration: 5, steps: 5 } },
    }, { headers: { ...hdr, accept: 'application/json' }, timeout: 8000 }));
    // In flight means at the upstream: initialize, initialized, 3 calls.
    await waitUpstreamPosts(seSse, since, 5);
    const del = await request(`${wSse.base}/mcp`, { method: 'DELETE', headers: hdr });
    assert.equal(del.status, 200);
    const answers = await Promise.all(calls);
    answers.forEach((a, i) => {
      const body = a.json();
      assert.equal(body.id, `long-${i + 1}`);
      assert.equal(body.error?.code, -32000, a.text);
      assert.match(body.error.message, /ended the session/);
    });
  });
});

describe('probe: auto falls back to legacy SSE when Streamable HTTP is refused', () => {
  let se, w;

  before(async () => {
    se = await startEverythingSse(await freePort());
    const p = await freePort();
    // "/sse/" does not end in /sse: the probe POSTs there first (Express
    // answers 404 text/html), then GETs the same URL (its /sse route).
    w = await startWarden(p, ['--listen', `127.0.0.1:${p}`, '--upstream', `${se.url}/`]);
  }, T);

  after(async () => { await stopClean(w); await stopAll(); });

  test('a Streamable client gets through; the result is cached and logged', T, async () => {
    const s = await connectSdk('streamable', w.url, { name: 'probe-1' });
    try {
      const r = await withTimeout(s.client.callTool({ name: 'echo', arguments: { message: 'probe' } }), CALL_MS, 'echo');
      assert.equal(text(r), 'Echo: probe');
      assert.match(s.transport.sessionId ?? '', /^[0-9a-f]{32}$/);
    } finally {
      await s.close();
    }
    assert.match(w.proc.stderr, /Streamable HTTP initialize answered 404: trying the legacy HTTP\+SSE transport/);
    assert.match(w.proc.stderr, /speaks sse \(detected; transport "auto"\)/);
    const probes = (w.proc.stderr.match(/trying the legacy/g) ?? []).length;
    const s2 = await connectSdk('sse', `${w.base}/sse`, { name: 'probe-2' });
    try {
      const r = await withTimeout(s2.client.callTool({ name: 'echo', arguments: { message: 'again' } }), CALL_MS, 'echo');
      assert.equal(text(r), 'Echo: again');
    } finally {
      await s2.close();
    }
    assert.equal((w.proc.stderr.match(/trying the legacy/g) ?? []).length, probes, 'probed again although cached');
  });
});

describe('the message hook sees every message once, on every path', () => {
  let seSse, seSt;

  before(async () => {
    [seSse, seSt] = await Promise.all([startEverythingSse(await freePort()), startEverything(await freePort())]);
  }, T);

  after(async () => { await stopAll(); });

  const scrape = async (w) => {
    const m = await adminGet(w.admin, '/metrics');
    assert.equal(m.status, 200, m.text);
    return {
      c: metricValue(m.text, 'mcpwarden_messages_total', { direction: 'client_to_server' }) ?? 0,
      s: metricValue(m.text, 'mcpwarden_messages_total', { direction: 'server_to_client' }) ?? 0,
    };
  };

  for (const up of ['sse', 'streamable']) {
    test(`legacy client and Streamable client, ${up} upstream: one ping = one message each way`, T, async () => {
      const w = await startAdminWarden({ upstreams: up === 'sse' ? seSse.url : seSt.url });
      try {
        // Legacy client.
        const l = await legacyStream(`${w.base}/sse`);
        await l.post(INIT(1));
        await l.waitMessage((m) => m.id === 1);
        await l.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
        // The hook counts a message before passing it on, so a message's
        // count is in once its effect is seen: a first ping answered means
        // everything the session sent or got before it is counted.
        await l.post({ jsonrpc: '2.0', id: 'ping-0', method: 'ping' });
        await l.waitMessage((m) => m.id === 'ping-0');
        let before = await scrape(w);
        await l.post({ jsonrpc: '2.0', id: 'ping-1', method: 'ping' });
        await l.waitMessage((m) => m.id === 'ping-1');
        let after = await scrape(w);
        assert.deepEqual([after.c - before.c, after.s - before.s], [1, 1], 'legacy client');
        l.st.abort();
        // Streamable client (translated when the upstream is legacy).
        const init = await postJson(w.url, INIT(1));
        const hdr = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-06-18' };
        await postJson(w.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: hdr });
        const ping0 = await postJson(w.url, { jsonrpc: '2.0', id: 'ping-0', method: 'ping' }, { headers: hdr });
        assert.deepEqual(replyMessages(ping0).map((m) => m.id), ['ping-0']);
        before = await scrape(w);
        const ping = await postJson(w.url, { jsonrpc: '2.0', id: 'ping-2', method: 'ping' }, { headers: hdr });
        assert.equal(ping.status, 200);
        assert.deepEqual(replyMessages(ping).map((m) => m.id), ['ping-2']);
        after = await scrape(w);
        assert.deepEqual([after.c - before.c, after.s - before.s], [1, 1], 'streamable client');
      } finally {
        await stopClean(w);
      }
    });
  }
});

describe('sessions that end: dropped upstream stream, vanishing client, idle expiry', () => {
  after(async () => { await stopAll(); });

  test('sse upstream drops its stream: the requests in flight get an error, the session is gone (404)', T, async () => {
    const se = await startEverythingSse(await freePort());
    const p = await freePort();
    const w = await startWarden(p, ['--listen', `127.0.0.1:${p}`, '--upstream', se.url]);
    const st = await connectSdk('streamable', w.url, { name: 'drop-streamable' });
    const legacy = await connectSdk('sse', `${w.base}/sse`, { name: 'drop-sse' });
    // A progress notification every 100 ms: the first one from each call
    // says it runs at the upstream (not a pause that hopes so).
    const running = [false, false];
    const long = (s, i) => s.client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 20, steps: 200 } },
      undefined, { timeout: 30000, onprogress: () => { running[i] = true; } }).then((r) => ({ ok: r }), (e) => ({ err: e }));
    const pending = [long(st, 0), long(legacy, 1)];
    await waitFor(() => running.every(Boolean), { timeout: 5000, what: 'a progress notification from each call' });
    const t0 = Date.now();
    await stop(se.proc, { signal: 'SIGKILL' });
    const [a, b] = await withTimeout(Promise.all(pending), 5000, 'answers after the upstream died');
    for (const r of [a, b]) {
      assert.ok(r.err, `expected an error, got ${JSON.stringify(r.ok)}`);
      // Streamable: HTTP 502 with the JSON-RPC error as its body (as when
      // transport_http's upstream fails); legacy: the error on the stream.
      assert.ok(r.err.code === -32000 || r.err.code === 502, String(r.err));
      assert.match(r.err.message, /-32000|upstream/);
      assert.match(r.err.message, /SSE stream/);
    }
    assert.ok(Date.now() - t0 < 3000, 'answers were slow');
    const sid = st.transport.sessionId;
    const again = await postJson(w.url, { jsonrpc: '2.0', id: 9, method: 'ping' }, { headers: { 'mcp-session-id': sid } });
    assert.equal(again.status, 404);
    await st.close();
    await legacy.close();
    assert.match(w.proc.stderr, /ended: the upstream (closed|broke)|SSE stream broke|closed its SSE stream/);
    await stopClean(w);
  });

  test('a legacy client that vanishes ends its session and the upstream\'s', T, async () => {
    const se = await startEverythingSse(await freePort());
    const p = await freePort();
    const w = await startWarden(p, ['--listen', `127.0.0.1:${p}`, '--upstream', se.url]);
    const l = await legacyStream(`${w.base}/sse`);
    await l.post(INIT(1));
    await l.waitMessage((m) => m.id === 1);
    await l.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await l.post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 10, steps: 100 }, _meta: { progressToken: 'vanish' } } });
    // Its first progress: the call runs at the upstream when the client goes.
    await l.waitMessage((m) => m.method === 'notifications/progress' && m.params?.progressToken === 'vanish');
    l.st.abort();
    await waitFor(() => /session [0-9a-f]{8}… ended: the client closed its SSE stream/.test(w.proc.stderr),
      { timeout: 3000, what: 'session end log' });
    await waitFor(() => /Client Disconnected/.test(se.proc.stderr), { timeout: 3000, what: 'upstream SSE connection closed' });
    const r = await postJson(l.endpoint, { jsonrpc: '2.0', id: 3, method: 'ping' });
    assert.equal(r.status, 404);
    await stopClean(w);
    await stop(se.proc);
  });

  test('a Streamable client that vanishes mid-call: the proxy drops the late response and stays healthy', T, async () => {
    const se = await startEverythingSse(await freePort());
    const p = await freePort();
    const w = await startWarden(p, ['--listen', `127.0.0.1:${p}`, '--upstream', se.url, '--log-level', 'debug']);
    const init = await postJson(w.url, INIT(1));
    const hdr = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-06-18' };
    await postJson(w.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: hdr });
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } } });
    const c = await openRaw(p);
    await c.write(rawRequestBytes('POST /mcp HTTP/1.1', [
      ['Host', `127.0.0.1:${p}`], ['Content-Type', 'application/json'],
      ['Accept', 'application/json, text/event-stream'], ['Mcp-Session-Id', hdr['mcp-session-id']],
      ['Content-Length', String(Buffer.byteLength(body))]], body));
    // The reply's head comes once the upstream took the request (see
    // "a POST accepting SSE gets its head once the upstream took the
    // request" above): then the client goes, mid-call.
    await waitFor(() => c.buf.includes('\r\n\r\n'), { timeout: 5000, what: 'the reply head' });
    assert.match(c.buf.toString('latin1'), /^HTTP\/1\.1 200 /);
    c.close();
    await waitFor(() => /a response nobody waits for was dropped/.test(w.proc.stderr), { timeout: 4000, what: 'late response dropped' });
    const ping = await postJson(w.url, { jsonrpc: '2.0', id: 8, method: 'ping' }, { headers: hdr });
    assert.equal(ping.status, 200);
    assert.deepEqual(replyMessages(ping).map((m) => m.id), [8]);
    await stopClean(w);
    await stop(se.proc);
  });

  test('an idle session expires: the upstream session closes, its id answers 404', T, async () => {
    const se = await startEverythingSse(await freePort());
    const p = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${p}`,
      upstreams: [{ name: 'legacy', url: se.url, transport: 'sse' }],
      timeouts: { session_idle_ms: 700 },
    });
    const w = await startWarden(p, ['-c', conf]);
    const init = await postJson(w.url, INIT(1));
    assert.equal(init.status, 200, init.text);
    const hdr = { 'mcp-session-id': init.headers['mcp-session-id'] };
    await postJson(w.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: hdr });
    // A legacy client listening keeps its session however quiet.
    const l = await legacyStream(`${w.base}/sse`);
    await l.post(INIT(1));
    await l.waitMessage((m) => m.id === 1);
    await waitFor(() => /ended: the session was idle too long/.test(w.proc.stderr), { timeout: 4000, what: 'expiry' });
    await waitFor(() => /Client Disconnected/.test(se.proc.stderr), { timeout: 3000, what: 'upstream session closed' });
    const r = await postJson(w.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { headers: hdr });
    assert.equal(r.status, 404);
    await l.post({ jsonrpc: '2.0', id: 'still', method: 'ping' });
    const pong = await l.waitMessage((m) => m.id === 'still');
    assert.deepEqual(pong.result, {});
    l.st.abort();
    await stopClean(w);
    await stop(se.proc);
  });

  test('an upstream that is down: the legacy client\'s GET gets 502, not a stream that dies', T, async () => {
    const dead = await freePort();
    const p = await freePort();
    const w = await startWarden(p, ['--listen', `127.0.0.1:${p}`, '--upstream', `http://127.0.0.1:${dead}/sse`]);
    const r = await request(`${w.base}/sse`, { headers: { accept: 'text/event-stream' } });
    assert.equal(r.status, 502, r.text);
    assert.equal(r.json().error.code, -32000);
    const s = await connectSdk('streamable', w.url).then(() => null, (e) => e);
    assert.ok(s, 'connecting through a dead upstream should fail');
    assert.equal(s.code, 502);
    await stopClean(w);
  });
});

describe('protocol eras: a legacy client in front of a stateless-only (2026-07-28) upstream', () => {
  let peer, w;

  before(async () => {
    const { startStatelessServer } = await import('./peers/stateless-server.mjs');
    peer = await startStatelessServer({ legacy: 'reject' });
    const p = await freePort();
    w = await startWarden(p, ['--listen', `127.0.0.1:${p}`, '--upstream', peer.url]);
  }, T);

  after(async () => {
    await stopClean(w);
    await peer?.close();
    await stopAll();
  });

  test('initialize fails with an error naming the mismatch; the session ends', T, async () => {
    const err = await connectSdk('sse', `${w.base}/sse`, { name: 'legacy-vs-2026' }).then(() => null, (e) => e);
    assert.ok(err, 'a legacy client should not connect to a 2026-only upstream');
    assert.equal(err.code, -32022, String(err));
    assert.match(err.message, /speaks only the stateless MCP era \(2026-07-28/);
    assert.match(err.message, /legacy HTTP\+SSE client/);
    assert.deepEqual(err.data?.supported, ['2026-07-28']);
    await waitFor(() => /session [0-9a-f]{8}… ended/.test(w.proc.stderr), { timeout: 3000, what: 'session end' });
  });
});

describe('policy applies the same on all four paths', () => {
  let seSse, seSt, wSse, wSt;

  before(async () => {
    [seSse, seSt] = await Promise.all([startEverythingSse(await freePort()), startEverything(await freePort())]);
    const policy = {
      default: 'allow',
      rules: [{ name: 'no-sums', match: { tool: 'get-sum' }, action: 'deny', message: 'no sums through the proxy' }],
    };
    const start = async (url) => {
      const p = await freePort();
      const conf = writeConfig({ listen: `127.0.0.1:${p}`, upstreams: [{ name: 'up', url }], policy });
      return startWarden(p, ['-c', conf]);
    };
    [wSse, wSt] = await Promise.all([start(seSse.url), start(seSt.url)]);
  }, T);

  after(async () => {
    await stopClean(wSse);
    await stopClean(wSt);
    await stopAll();
  });

  test('a denied tool is denied alike, an allowed one works, on every path', T, async () => {
    const outcomes = [];
    for (const [kind, w, path] of [['sse', wSse, '/sse'], ['streamable', wSse, '/mcp'],
      ['sse', wSt, '/sse'], ['streamable', wSt, '/mcp']]) {
      const s = await connectSdk(kind, `${w.base}${path}`, { name: `policy-${kind}` });
      try {
        await withTimeout(s.client.listTools(), CALL_MS, 'tools/list');
        const denied = await withTimeout(s.client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } })
          .then((r) => ({ result: r }), (e) => ({ code: e.code, message: e.message })), CALL_MS, 'get-sum');
        const ok = await withTimeout(s.client.callTool({ name: 'echo', arguments: { message: 'allowed' } }), CALL_MS, 'echo');
        assert.equal(text(ok), 'Echo: allowed');
        outcomes.push(denied);
      } finally {
        await s.close();
      }
    }
    assert.match(JSON.stringify(outcomes[0]), /no sums through the proxy/);
    assert.doesNotMatch(JSON.stringify(outcomes[0]), /"text":"The sum/);
    for (const o of outcomes.slice(1)) assert.deepEqual(o, outcomes[0]);
  });
});

describe('configuration: transport and legacy paths', () => {
  after(async () => { await stopAll(); });

  const check = async (conf) => runWarden(['--check-config', '-c', writeConfig(conf)]);

  test('bad transport, clashing legacy paths: errors naming the key', T, async () => {
    let r = await check({ upstreams: [{ url: 'http://127.0.0.1:1/mcp', transport: 'websocket' }] });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /\$\.upstreams\[0\]\.transport: must be auto, streamable_http or sse/);
    r = await check({ upstreams: [
      { name: 'a', path: '/a/mcp', url: 'http://127.0.0.1:1/mcp' },
      { name: 'b', path: '/b/mcp', url: 'http://127.0.0.1:2/mcp', sse_path: '/a/mcp' }] });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /\$\.upstreams\[1\]\.sse_path: "\/a\/mcp" is already in use/);
    r = await check({ upstreams: [
      { name: 'a', path: '/a/mcp', url: 'http://127.0.0.1:1/mcp', messages_path: '/post' },
      { name: 'b', path: '/b/mcp', url: 'http://127.0.0.1:2/mcp', messages_path: '/post' }] });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /messages_path: "\/post" is already in use/);
    // An explicit path wins over another upstream's derived default.
    r = await check({ upstreams: [
      { name: 'a', path: '/a/mcp', url: 'http://127.0.0.1:1/mcp' },
      { name: 'b', path: '/b/mcp', url: 'http://127.0.0.1:2/mcp', sse_path: '/a/sse' }] });
    assert.equal(r.code, 0, r.stderr);
    r = await runWarden(['--check-config', '--upstream', 'http://127.0.0.1:1/mcp', '--upstream-transport', 'tcp']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--upstream-transport: must be auto, streamable_http or sse/);
    // A derived default that clashes with a path in use is simply off.
    r = await check({ upstreams: [
      { name: 'a', path: '/mcp', url: 'http://127.0.0.1:1/mcp' },
      { name: 'b', path: '/sse', url: 'http://127.0.0.1:2/mcp', transport: 'sse' }] });
    assert.equal(r.code, 0, r.stderr);
  });

  test('legacy paths are configurable, "" turns the legacy face off', T, async () => {
    const se = await startEverythingSse(await freePort());
    const p = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${p}`,
      upstreams: [
        { name: 'a', path: '/a/mcp', url: se.url, sse_path: '/legacy/events', messages_path: '/legacy/post' },
        { name: 'b', path: '/b/mcp', url: se.url, sse_path: '', messages_path: '' },
      ],
    });
    // The start-up lines are written after the port is bound: wait for
    // the last one asserted on, not for the port (raced once under load).
    const w = await startWardenQuiet(p, ['-c', conf], { lines: [/upstream b: /] });
    assert.match(w.proc.stderr, /upstream a: \/a\/mcp -> .* legacy SSE clients: \/legacy\/events/);
    const l = await legacyStream(`${w.base}/legacy/events`);
    try {
      assert.match(l.st.sse.events[0].data, /^\/legacy\/post\?sessionId=[0-9a-f]{32}$/);
      await l.post(INIT(5));
      const r = await l.waitMessage((m) => m.id === 5);
      assert.ok(r.result.serverInfo);
    } finally {
      l.st.abort();
    }
    for (const path of ['/b/sse', '/b/messages', '/sse']) {
      const r = await request(`${w.base}${path}`, { headers: { accept: 'text/event-stream' } });
      assert.equal(r.status, 404, path);
    }
    await stopClean(w);
  });
});

// Byte-level Streamable HTTP behaviour of ./mcpwarden in front of our
// scripted peer: SSE streamed event by event with X-Accel-Buffering: no and
// keep-alive comments, bare 202s, JSON replies, header forwarding (end-to-end
// yes, hop-by-hop no, Host rewritten), expired-session 404 and OAuth 401 /
// well-known documents passed through, client keep-alive.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startWarden, stopAll } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { openRaw, openStream, postJson, rawExchange, rawRequestBytes, request } from './lib/http.mjs';
import { withTimeout, waitFor, sleep } from './lib/util.mjs';
import { startScriptedPeer, EXPIRED_BODY } from './peers/scripted.mjs';

const T = { timeout: 20000 };
const ACCEPT = 'application/json, text/event-stream';
const KEEPALIVE_MS = 200;

describe('streaming and headers through mcpwarden (scripted peer)', () => {
  let peer;
  let warden;

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'scripted', events: 5, interval: 300 });
    const wp = await freePort();
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url,
      '--sse-keepalive', String(KEEPALIVE_MS)]);
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
  });

  test('SDK client over JSON replies: initialize, tools/list, tools/call', T, async () => {
    const s = await connectClient(warden.url);
    try {
      assert.equal(s.client.getServerVersion().name, 'scripted');
      assert.equal(s.transport.sessionId, 'peer-session-1', 'Mcp-Session-Id from the upstream reached the client');
      const tools = await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
      assert.deepEqual(tools.tools.map((t) => t.name), ['whoami']);
      const r = await withTimeout(s.client.callTool({ name: 'whoami', arguments: {} }), CALL_TIMEOUT, 'tools/call');
      assert.equal(r.content[0].text, 'peer scripted ran whoami');
      const jsonReplies = s.fetchLog.filter((f) => f.method === 'POST' && f.status === 200);
      assert.ok(jsonReplies.length >= 3);
      for (const f of jsonReplies) assert.match(f.contentType, /^application\/json/);
      // The client's session id and protocol version went upstream.
      const call = peer.last((r2) => r2.body.includes('"tools/call"'));
      assert.equal(call.headers['mcp-session-id'], 'peer-session-1');
      assert.equal(call.headers['mcp-protocol-version'], s.transport.protocolVersion);
    } finally {
      await s.close();
    }
  });

  test('SDK client over one-event SSE replies (X-Test-Mode: sse)', T, async () => {
    const s = await connectClient(warden.url, { headers: { 'x-test-mode': 'sse' } });
    try {
      const r = await withTimeout(s.client.callTool({ name: 'whoami', arguments: {} }), CALL_TIMEOUT, 'tools/call');
      assert.equal(r.content[0].text, 'peer scripted ran whoami');
      const last = s.fetchLog.filter((f) => f.method === 'POST').at(-1);
      assert.match(last.contentType, /^text\/event-stream/);
      assert.equal(last.headers.get('x-accel-buffering'), 'no');
    } finally {
      await s.close();
    }
  });

  test('SSE reply arrives event by event and carries X-Accel-Buffering: no', T, async () => {
    // The peer sends 5 progress events 300 ms apart, then the response, and
    // does NOT send X-Accel-Buffering itself: the proxy must add it.
    const msg = { jsonrpc: '2.0', id: 'slow-1', method: 'tools/call', params: { name: 'slow', _meta: { progressToken: 'tok-1' } } };
    const st = await openStream(warden.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT, 'x-test-mode': 'slow-sse' },
      body: JSON.stringify(msg),
    });
    assert.equal(st.status, 200);
    assert.match(st.headers['content-type'], /^text\/event-stream/);
    assert.equal(st.headers['x-accel-buffering'], 'no');
    const end = await withTimeout(st.ended, 6000, 'slow SSE stream end');
    assert.equal(end.how, 'end');
    const evs = st.sse.events.filter((e) => e.data !== '');
    assert.equal(evs.length, 6, `events: ${st.text()}`);
    const msgs = evs.map((e) => JSON.parse(e.data));
    assert.deepEqual(msgs.slice(0, 5).map((m) => m.params.progress), [1, 2, 3, 4, 5]);
    assert.equal(msgs[0].params.progressToken, 'tok-1');
    assert.equal(msgs[5].id, 'slow-1');
    // SSE ids pass through unchanged (clients resume with them).
    const rec = peer.last((r) => r.body.includes('"slow-1"'));
    assert.deepEqual(evs.map((e) => e.id), [1, 2, 3, 4, 5, 'end'].map((i) => `${rec.seq}-${i}`));
    // Timing: the first event must arrive about when it was sent, not at the end.
    const first = evs[0].t - st.t0;
    const total = end.t - st.t0;
    assert.ok(total >= 1500, `stream too short (${total} ms)`);
    assert.ok(first <= total - 1000, `first event at ${first} ms, end at ${total} ms: buffered`);
    for (let i = 1; i < 5; i++) {
      assert.ok(evs[i].t - evs[i - 1].t >= 150, `events ${i - 1},${i} arrived together: ${evs.map((e) => e.t - st.t0)}`);
    }
  });

  test('quiet SSE stream gets keep-alive comment lines', T, async () => {
    const st = await openStream(warden.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': 'peer-session-1', 'x-test-mode': 'hold-sse' },
    });
    try {
      assert.equal(st.status, 200);
      assert.equal(st.headers['x-accel-buffering'], 'no');
      await waitFor(() => st.sse.events.length >= 1, { timeout: 2000, what: 'first event' });
      await waitFor(() => st.sse.comments.length >= 2, { timeout: KEEPALIVE_MS * 10, what: 'two keep-alive comments' });
      assert.equal(st.sse.events.length, 1, 'keep-alives must be comments, not events');
    } finally {
      st.abort();
    }
  });

  test('notification and client response → 202 with no body (raw bytes)', T, async () => {
    for (const body of [
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      '{"jsonrpc":"2.0","id":"srv-1","result":{}}',
    ]) {
      const res = await rawExchange(warden.port, rawRequestBytes('POST /mcp HTTP/1.1', [
        ['Host', `127.0.0.1:${warden.port}`],
        ['Content-Type', 'application/json'],
        ['Accept', ACCEPT],
        ['Mcp-Session-Id', 'peer-session-1'],
        ['Content-Length', String(Buffer.byteLength(body))],
      ], body));
      assert.equal(res.status, 202, `${body}: ${res.head}`);
      assert.equal(res.body.length, 0, `202 body must be empty: ${JSON.stringify(res.text)}`);
      assert.ok(!res.headers['content-type'] || res.headers['content-length'] === '0',
        `202 must not announce a body: ${res.head}`);
      assert.ok(res.complete);
    }
  });

  test('client keep-alive: several requests on one connection', T, async () => {
    const c = await openRaw(warden.port);
    try {
      for (let i = 0; i < 3; i++) {
        const body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'ping' });
        await c.write(rawRequestBytes('POST /mcp HTTP/1.1', [
          ['Host', `127.0.0.1:${warden.port}`], ['Content-Type', 'application/json'], ['Accept', ACCEPT],
          ['Content-Length', String(Buffer.byteLength(body))],
        ], body));
        const res = await c.readResponse();
        assert.equal(res.status, 200);
        assert.equal(JSON.parse(res.text).id, i);
      }
    } finally {
      c.close();
    }
  });

  test('end-to-end headers forwarded, hop-by-hop dropped, Host rewritten', T, async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'hdr-1', method: 'tools/list' });
    const res = await rawExchange(warden.port, rawRequestBytes('POST /mcp HTTP/1.1', [
      ['Host', 'localhost:4444'],
      ['Content-Type', 'application/json'],
      ['Accept', ACCEPT],
      ['Authorization', 'Bearer tok-e2e-123'],
      ['Mcp-Session-Id', 'peer-session-1'],
      ['MCP-Protocol-Version', '2025-06-18'],
      ['X-Custom-End-To-End', 'kept'],
      ['Connection', 'keep-alive'],
      ['Keep-Alive', 'timeout=30'],
      ['TE', 'trailers'],
      ['Upgrade', 'h2c'],
      ['Proxy-Connection', 'keep-alive'],
      ['Content-Length', String(Buffer.byteLength(body))],
    ], body));
    assert.equal(res.status, 200, res.text);
    const rec = peer.last((r) => r.body.includes('"hdr-1"'));
    assert.ok(rec, 'request reached the peer');
    const h = rec.headers;
    assert.equal(rec.method, 'POST');
    assert.equal(rec.url, '/mcp');
    assert.equal(h.host, `127.0.0.1:${peer.port}`, 'Host rewritten to the upstream');
    assert.equal(h.authorization, 'Bearer tok-e2e-123');
    assert.equal(h['mcp-session-id'], 'peer-session-1');
    assert.equal(h['mcp-protocol-version'], '2025-06-18');
    assert.equal(h['x-custom-end-to-end'], 'kept');
    assert.equal(h['content-type'], 'application/json');
    assert.match(h.accept, /text\/event-stream/);
    for (const k of ['keep-alive', 'te', 'upgrade', 'proxy-connection']) {
      assert.ok(!(k in h), `hop-by-hop ${k} forwarded: ${JSON.stringify(h)}`);
    }
    assert.ok(!h.connection || /^(keep-alive|close)$/i.test(h.connection), `Connection: ${h.connection}`);
    assert.equal(rec.body, body, 'body forwarded byte for byte');
  });

  test('headers named in Connection are hop-by-hop too (RFC 9110 §7.6.1)', T, async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'hdr-2', method: 'ping' });
    const res = await rawExchange(warden.port, rawRequestBytes('POST /mcp HTTP/1.1', [
      ['Host', `127.0.0.1:${warden.port}`],
      ['Content-Type', 'application/json'],
      ['Accept', ACCEPT],
      ['Connection', 'keep-alive, X-Hop-Only'],
      ['X-Hop-Only', 'must-not-pass'],
      ['Content-Length', String(Buffer.byteLength(body))],
    ], body));
    assert.equal(res.status, 200);
    const rec = peer.last((r) => r.body.includes('"hdr-2"'));
    assert.ok(!('x-hop-only' in rec.headers), `X-Hop-Only forwarded: ${JSON.stringify(rec.headers)}`);
  });

  test('GET stream: Last-Event-ID and session headers forwarded', T, async () => {
    const st = await openStream(warden.url, {
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': 'peer-session-1',
        'mcp-protocol-version': '2025-11-25',
        'last-event-id': 'ev-42',
        'x-test-mode': 'hold-sse',
      },
    });
    try {
      assert.equal(st.status, 200);
      const rec = await peer.waitRequest((r) => r.method === 'GET' && r.headers['last-event-id'] === 'ev-42', 3000);
      assert.equal(rec.headers['mcp-session-id'], 'peer-session-1');
      assert.equal(rec.headers['mcp-protocol-version'], '2025-11-25');
      assert.equal(rec.url, '/mcp');
    } finally {
      st.abort();
    }
  });

  test('GET without a stream upstream: 405 passed through', T, async () => {
    const res = await request(warden.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': 'peer-session-1' } });
    assert.equal(res.status, 405);
  });

  test('expired session: upstream 404 and its JSON-RPC body passed through', T, async () => {
    const req = { jsonrpc: '2.0', id: 5, method: 'tools/list' };
    const res = await postJson(warden.url, req, { headers: { 'mcp-session-id': 'gone-session', 'x-test-mode': 'expired' } });
    assert.equal(res.status, 404);
    assert.match(res.headers['content-type'], /^application\/json/);
    assert.deepEqual(res.json(), JSON.parse(EXPIRED_BODY));
    // The SDK client sees the 404 as such (its cue to re-initialize).
    await assert.rejects(connectClient(warden.url, { headers: { 'x-test-mode': 'expired' } }),
      (e) => e.code === 404, 'SDK client should get StreamableHTTPError 404');
  });

  test('OAuth: 401 + WWW-Authenticate passed through; well-known documents reachable', T, async () => {
    const req = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const denied = await postJson(warden.url, req, { headers: { 'x-test-mode': 'auth' } });
    assert.equal(denied.status, 401);
    assert.equal(denied.headers['www-authenticate'],
      `Bearer error="invalid_token", resource_metadata="http://127.0.0.1:${peer.port}/.well-known/oauth-protected-resource/mcp"`);
    const ok = await postJson(warden.url, req, { headers: { 'x-test-mode': 'auth', authorization: 'Bearer good' } });
    assert.equal(ok.status, 200);
    assert.equal(ok.json().id, 1);

    const prm = await request(`${warden.base}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(prm.status, 200, prm.text);
    assert.equal(prm.json().peer, 'scripted');
    const seen = peer.last((r) => r.url.startsWith('/.well-known/oauth-protected-resource'));
    assert.ok(seen, 'protected-resource metadata request reached the upstream');
    const asm = await request(`${warden.base}/.well-known/oauth-authorization-server`);
    assert.equal(asm.status, 200, asm.text);
    assert.equal(asm.json().peer, 'scripted');
  });

  test('many concurrent requests each get their own answer', T, async () => {
    const N = 50;
    const results = await Promise.all(Array.from({ length: N }, (_, i) =>
      postJson(warden.url, { jsonrpc: '2.0', id: `c-${i}`, method: 'ping' }, { timeout: 8000 })));
    results.forEach((r, i) => {
      assert.equal(r.status, 200);
      assert.equal(r.json().id, `c-${i}`);
    });
    await sleep(0);
  });
});

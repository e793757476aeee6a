// Legacy HTTP+SSE clients (2024-11-05) in the call records and metrics
// (issue 17, "records that say the wrong thing"):
//   - a legacy client's call is ONE record with its real outcome (ok,
//     tool_error for an isError result, rpc_error), its method and tool,
//     and its real latency (POST to the answer event on the client's
//     stream); the 202 that accepts the POST is not a failed call. Both
//     translated directions: legacy client -> legacy upstream, and legacy
//     client -> Streamable upstream, with the official SDK client
//     (SSEClientTransport) against the real server-everything.
//   - an upstream's 4xx refusal reaches the legacy client's POST with its
//     real status, body and WWW-Authenticate, and the record names it
//     (scripted upstreams: Streamable `auth` mode, and a legacy upstream
//     whose POST endpoint answers 403 with a text body).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { freePort } from './lib/ports.mjs';
import { startEverything, stopAll } from './lib/procs.mjs';
import { startAdminWarden, getCalls, waitForCalls, adminGet, metricValue } from './lib/admin-util.mjs';
import { startEverythingSse, connectSdk, legacyStream, INIT } from './lib/translate-util.mjs';
import { postJson } from './lib/http.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';
import { waitFor } from './lib/util.mjs';

const T = { timeout: 60000 };

after(async () => { await stopAll(); });

/** The client records of tools/call `tool`, from /calls. */
const callsOf = (calls, tool) => calls.filter((c) => c.from === 'client' && c.tool === tool);

for (const upstreamKind of ['sse', 'streamable_http']) {
  describe(`legacy client -> ${upstreamKind} upstream: one record per call, real outcome and latency`, () => {
    let se, w, s;

    before(async () => {
      se = upstreamKind === 'sse' ? await startEverythingSse(await freePort()) : await startEverything(await freePort());
      w = await startAdminWarden({ upstreams: [{ name: 'default', url: se.url }] });
      s = await connectSdk('sse', `${w.base}/sse`, { name: `records-${upstreamKind}` });
    }, T);

    after(async () => { await s?.close(); });

    test('ok, tool_error (isError) and rpc_error calls: one record each, no 202 upstream_error', T, async () => {
      const echo = await s.client.callTool({ name: 'echo', arguments: { message: 'legacy records' } });
      assert.equal(echo.isError ?? false, false);
      // An unknown tool: server-everything answers isError: true (or, on
      // older SDKs, a JSON-RPC error); both are the server's answer.
      const bad = await s.client.callTool({ name: 'no-such-tool', arguments: {} }).then((r) => ({ r }), (e) => ({ e }));
      const t0 = Date.now();
      await s.client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 2 } },
        undefined, { timeout: 15000 });
      const tLong = Date.now() - t0;

      const calls = await waitForCalls(w.admin, (cs) => callsOf(cs, 'trigger-long-running-operation').length >= 1 && cs,
        { timeout: 5000 });
      // No record is the 202 of a POST, and none is a nameless answer.
      assert.deepEqual(calls.filter((c) => /HTTP 202 without/.test(c.note ?? '')), [], JSON.stringify(calls, null, 1));
      assert.deepEqual(calls.filter((c) => c.from === 'server' && c.kind === 'response'), [],
        'answers are joined to their requests');
      const e = callsOf(calls, 'echo');
      assert.equal(e.length, 1, JSON.stringify(calls, null, 1));
      assert.equal(e[0].method, 'tools/call');
      assert.equal(e[0].outcome, 'ok');
      assert.equal(e[0].client_transport, 'sse');
      assert.equal(e[0].upstream_transport, upstreamKind);
      assert.match(e[0].result_preview ?? '', /legacy records/);
      const b = callsOf(calls, 'no-such-tool');
      assert.equal(b.length, 1);
      assert.equal(b[0].outcome, bad.e ? 'rpc_error' : 'tool_error', JSON.stringify(b[0]));
      if (!bad.e) assert.equal(b[0].is_error, true);
      const l = callsOf(calls, 'trigger-long-running-operation');
      assert.equal(l.length, 1);
      assert.equal(l[0].outcome, 'ok');
      // The real latency: from the POST to the answer, not the 202's.
      assert.ok(l[0].latency_us >= 500000, `latency ${l[0].latency_us} µs`);
      assert.ok(l[0].latency_us <= (tLong + 200) * 1000, `latency ${l[0].latency_us} µs vs ${tLong} ms seen`);
      // initialize too is one ok record with its method.
      const init = calls.filter((c) => c.method === 'initialize');
      assert.equal(init.length, 1);
      assert.equal(init[0].outcome, 'ok');
    });

    test('a JSON-RPC error answer is one rpc_error record with its code and method', T, async () => {
      const l = await legacyStream(`${w.base}/sse`);
      try {
        assert.equal((await l.post(INIT(1))).status, 202);
        await l.waitMessage((m) => m.id === 1);
        assert.equal((await l.post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
        assert.equal((await l.post({ jsonrpc: '2.0', id: 'nope-1', method: 'no/such-method' })).status, 202);
        const err = await l.waitMessage((m) => m.id === 'nope-1');
        assert.equal(err.error.code, -32601);
        const c = await waitForCalls(w.admin, (cs) => {
          const r = cs.filter((x) => x.method === 'no/such-method');
          return r.length ? r : null;
        });
        assert.equal(c.length, 1, JSON.stringify(c));
        assert.equal(c[0].outcome, 'rpc_error');
        assert.equal(c[0].error_code, -32601);
        assert.equal(c[0].http_status, 202);
        assert.equal(c[0].note, null);
        // A call is counted as one HTTP exchange (its POST), not two.
        const exchanges = async () => metricValue((await adminGet(w.admin, '/metrics')).text, 'mcpwarden_exchanges_total');
        const before = await exchanges();
        assert.equal((await l.post({ jsonrpc: '2.0', id: 'ping-x', method: 'ping' })).status, 202);
        await waitForCalls(w.admin, (cs) => cs.some((x) => x.id === 'ping-x'));
        assert.equal(await exchanges(), before + 1);
        // The notification is a record of its own, ok.
        const n = (await getCalls(w.admin, 'limit=1000')).calls.filter((x) => x.method === 'notifications/initialized');
        assert.ok(n.length >= 1 && n.every((x) => x.outcome === 'ok'), JSON.stringify(n));
      } finally {
        l.st.abort();
      }
    });

    test('/metrics counts the calls by their real outcome', T, async () => {
      const m = (await adminGet(w.admin, '/metrics')).text;
      assert.equal(metricValue(m, 'mcpwarden_tool_calls_total', { tool: 'echo', outcome: 'ok' }), 1, m);
      assert.equal(metricValue(m, 'mcpwarden_tool_calls_total', { tool: 'echo', outcome: 'upstream_error' }), undefined, m);
      const errs = m.split('\n').filter((x) => /outcome="upstream_error"/.test(x) && !/ 0$/.test(x));
      assert.deepEqual(errs, [], 'no call counted as an upstream error');
    });
  });
}

/** A legacy HTTP+SSE upstream whose POST endpoint refuses with 403 and a text body. */
async function startRefusingLegacyPeer() {
  const streams = new Set();
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('event: endpoint\ndata: /message?sessionId=abc\n\n');
      streams.add(res);
      req.on('close', () => streams.delete(res));
      return;
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(403, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer error="insufficient_scope", scope="tools"' });
      res.end('Access is only allowed at localhost:4242\n');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    async close() { for (const r of streams) r.destroy(); await new Promise((r) => server.close(r)); },
  };
}

describe('an upstream 4xx reaches a legacy client\'s POST with its status and body', () => {
  let peer, legacyPeer, w;

  before(async () => {
    peer = await startScriptedPeer({ mode: 'auth' });
    legacyPeer = await startRefusingLegacyPeer();
    w = await startAdminWarden({
      upstreams: [
        { name: 'auth', url: peer.url, transport: 'streamable_http', path: '/a/mcp' },
        { name: 'refuse', url: legacyPeer.url, path: '/r/mcp' },
      ],
    });
  }, T);

  after(async () => { await peer?.close(); await legacyPeer?.close(); });

  test('Streamable upstream 401: the POST gets 401, the upstream body and WWW-Authenticate', T, async () => {
    const l = await legacyStream(`${w.base}/a/sse`);
    assert.equal(l.status, 200);
    const r = await l.post(INIT(1));
    assert.equal(r.status, 401, r.text);
    assert.match(r.headers['www-authenticate'] ?? '', /Bearer error="invalid_token", resource_metadata=/);
    assert.match(r.text, /Unauthorized/);
    const calls = await waitForCalls(w.admin, (cs) => {
      const c = cs.filter((x) => x.upstream === 'auth' && x.method === 'initialize');
      return c.length ? c : null;
    });
    assert.equal(calls.length, 1, JSON.stringify(calls));
    assert.equal(calls[0].http_status, 401);
    assert.notEqual(calls[0].outcome, 'ok');
    l.st.abort();
  });

  test('legacy upstream 403 with a text body: the POST gets 403 and that body; the record names HTTP 403', T, async () => {
    const l = await legacyStream(`${w.base}/r/sse`);
    assert.equal(l.status, 200);
    const r = await l.post(INIT(7));
    assert.equal(r.status, 403, r.text);
    assert.match(r.text, /only allowed at localhost:4242/);
    assert.match(r.headers['www-authenticate'] ?? '', /insufficient_scope/);
    const calls = await waitForCalls(w.admin, (cs) => {
      const c = cs.filter((x) => x.upstream === 'refuse' && x.method === 'initialize');
      return c.length ? c : null;
    });
    assert.equal(calls.length, 1, JSON.stringify(calls));
    assert.equal(calls[0].http_status, 403);
    assert.equal(calls[0].outcome, 'upstream_error');
    assert.match(calls[0].note ?? '', /HTTP 403/);
    assert.doesNotMatch(calls[0].note ?? '', /4xx/);
    l.st.abort();
  });

  test('the same 403 for a Streamable client of that legacy upstream: status, body and challenge as they came', T, async () => {
    const r = await postJson(`${w.base}/r/mcp`, INIT(8), { headers: { accept: 'application/json, text/event-stream' } });
    assert.equal(r.status, 403, r.text);
    assert.match(r.text, /only allowed at localhost:4242/);
    assert.match(r.headers['www-authenticate'] ?? '', /insufficient_scope/);
    const calls = await waitForCalls(w.admin, (cs) => {
      const c = cs.filter((x) => x.upstream === 'refuse' && x.id === 8);
      return c.length ? c : null;
    });
    assert.equal(calls[0].http_status, 403);
    assert.equal(calls[0].outcome, 'upstream_error');
    assert.match(calls[0].note ?? '', /refused the message \(HTTP 403\)/);
  });
});

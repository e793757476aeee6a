// Issue 17, item 3: one bad request must not end a good session.
//
// Methods the MCP endpoint does not serve (TRACE, PUT, PATCH, anything but
// POST, GET, DELETE, HEAD and OPTIONS) are answered by mcpwarden with 405 and
// `Allow`, never forwarded; and only a 404 that the spec defines as session
// expiry (to a POST, GET or DELETE carrying Mcp-Session-Id) ends a session.
//
// A real session with @modelcontextprotocol/server-everything, through a
// recording relay (peers/scripted.mjs, mode relay) so the test sees what
// reached the upstream.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startEverything, startWarden, stopAll } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { rawExchange, rawRequestBytes } from './lib/http.mjs';
import { assertRpcError } from './lib/assert-rpc.mjs';
import { withTimeout } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';

const T = { timeout: 30000 };
const ALLOW = 'GET, HEAD, POST, DELETE, OPTIONS';

after(async () => {
  await stopAll();
});

describe('methods the MCP endpoint does not serve', () => {
  let se;
  let relay;
  let w;
  let s;

  before(async () => {
    se = await startEverything(await freePort());
    relay = await startScriptedPeer({ mode: 'relay', relayTo: se.url, name: 'relay' });
    const wp = await freePort();
    w = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', relay.url]);
    s = await connectClient(w.url, { name: 'methods' });
  }, T);

  after(async () => {
    await s?.close();
    await relay?.close();
  });

  const echo = async (msg) => {
    const r = await withTimeout(s.client.callTool({ name: 'echo', arguments: { message: msg } }), CALL_TIMEOUT, 'echo');
    assert.equal(r.content[0].text, `Echo: ${msg}`);
  };

  for (const method of ['TRACE', 'PUT', 'PATCH', 'PROPFIND']) {
    test(`${method} with the session id → 405 + Allow from mcpwarden, not forwarded; the session still works`, T, async () => {
      const sid = s.transport.sessionId;
      assert.ok(sid, 'a session');
      const body = method === 'TRACE' ? '' : '{"jsonrpc":"2.0","id":1,"method":"ping"}';
      const r = await rawExchange(w.port, rawRequestBytes(`${method} /mcp HTTP/1.1`, [
        ['Host', `127.0.0.1:${w.port}`], ['Mcp-Session-Id', sid], ['Content-Type', 'application/json'],
        ['Content-Length', String(Buffer.byteLength(body))],
      ], body), { method });
      assertRpcError(r, { status: 405, code: -32600, id: null });
      assert.equal(r.headers.allow, ALLOW, r.head);
      assert.ok(!relay.received.some((x) => x.method === method), `${method} must not reach the upstream`);
      await echo(`after ${method}`);
    });
  }

  test('OPTIONS and HEAD still go upstream (its answer, whatever it is); the session still works', T, async () => {
    const sid = s.transport.sessionId;
    for (const method of ['OPTIONS', 'HEAD']) {
      const r = await rawExchange(w.port, rawRequestBytes(`${method} /mcp HTTP/1.1`, [
        ['Host', `127.0.0.1:${w.port}`], ['Mcp-Session-Id', sid], ['Accept', 'text/event-stream'],
      ]), { method });
      assert.ok(r.status >= 200, `${method}: ${r.status}`);
      assert.equal(relay.received.filter((x) => x.method === method).length, 1, `${method} reached the upstream`);
      if (r.status === 405) assert.notEqual(r.headers.allow, ALLOW, 'the upstream\'s own 405');
      await echo(`after ${method} (${r.status})`);
    }
  });
});

describe('only a 404 the spec defines as session expiry ends a session', () => {
  let peer;
  let w;
  const ACCEPT = 'application/json, text/event-stream';
  const post = (sid, id, mode) => rawRequestBytes('POST /mcp HTTP/1.1', [
    ['Host', `127.0.0.1:${w.port}`], ['Content-Type', 'application/json'], ['Accept', ACCEPT],
    ...(sid ? [['Mcp-Session-Id', sid]] : []), ...(mode ? [['X-Test-Mode', mode]] : []),
    ['Content-Length', String(Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' })))],
  ], JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }));

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'expiry', sessionId: 'expiry-session' });
    const wp = await freePort();
    w = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url]);
  }, T);

  after(async () => {
    await peer?.close();
  });

  test('a 404 to OPTIONS at the MCP endpoint, or to a request elsewhere, leaves the session alone', T, async () => {
    const sid = 'expiry-session';
    for (const [line, mode] of [['OPTIONS /mcp', 'expired'], ['GET /authorize', 'expired']]) {
      const r = await rawExchange(w.port, rawRequestBytes(`${line} HTTP/1.1`, [
        ['Host', `127.0.0.1:${w.port}`], ['Mcp-Session-Id', sid], ['X-Test-Mode', mode],
      ]));
      assert.equal(r.status, 404, `${line}: the upstream's 404 passes: ${r.head}`);
      const after = await rawExchange(w.port, post(sid, `after ${line}`));
      assert.equal(after.status, 200, `${line} answered 404 must not end the session: ${after.text}`);
      assert.equal(JSON.parse(after.text).id, `after ${line}`);
    }
  });

  test('the control: a 404 to a POST carrying the session id ends it', T, async () => {
    const sid = 'another-session';
    const r = await rawExchange(w.port, post(sid, 'expiring', 'expired'));
    assert.equal(r.status, 404, r.text);
    const after = await rawExchange(w.port, post(sid, 'after-expiry'));
    assertRpcError(after, { status: 404, code: -32001, id: 'after-expiry' });
  });
});

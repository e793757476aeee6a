// Host and Origin checks (issue 9, point 2): on a loopback listener a
// foreign Host (DNS rebinding) or a cross-site Origin gets 403 and never
// reaches the upstream; same-host pages, non-browser clients and configured
// hosts/origins pass.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startWarden, stopAll } from './lib/procs.mjs';
import { postJson, rawExchange, rawRequestBytes } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';

const T = { timeout: 20000 };
const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };

describe('Host and Origin checks', () => {
  let peer;
  let loop;      // loopback listener, defaults
  let listed;    // explicit lists

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'origin' });
    const p1 = await freePort();
    loop = await startWarden(p1, ['--listen', `127.0.0.1:${p1}`, '--upstream', peer.url]);
    const p2 = await freePort();
    listed = await startWarden(p2, ['-c', writeConfig({
      listen: `127.0.0.1:${p2}`,
      upstreams: [{ url: peer.url }],
      allowed_hosts: ['mcp.staging.example'],
      allowed_origins: ['https://console.staging.example'],
    })]);
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
  });

  test('the DNS-rebinding attack (Host and Origin evil) is refused with 403 before the upstream', T, async () => {
    const n = peer.received.length;
    const res = await postJson(loop.url, ping, { headers: { Host: 'evil.example.com', Origin: 'http://evil.example.com' } });
    assert.equal(res.status, 403);
    assert.equal(JSON.parse(res.body).error.message, 'Host not allowed');
    assert.equal(peer.received.length, n);
  });

  test('a cross-site Origin to a loopback Host is refused', T, async () => {
    const res = await postJson(loop.url, ping, { headers: { Origin: 'https://evil.example.com' } });
    assert.equal(res.status, 403);
    assert.equal(JSON.parse(res.body).error.message, 'Origin not allowed');
  });

  test('no Origin, and a same-host Origin, pass; so does localhost', T, async () => {
    assert.equal((await postJson(loop.url, ping)).status, 200);
    assert.equal((await postJson(loop.url, ping, { headers: { Origin: `http://127.0.0.1:${loop.port}` } })).status, 200);
    assert.equal((await postJson(loop.url, ping, { headers: { Host: `localhost:${loop.port}` } })).status, 200);
  });

  // Issue 17: the Host checks of RFC 9112 come before the allow-list.
  const raw = (w, target, headers, id) => {
    const body = JSON.stringify({ ...ping, id });
    return rawExchange(w.port, rawRequestBytes(`POST ${target} HTTP/1.1`, [...headers,
      ['Content-Type', 'application/json'], ['Accept', 'application/json, text/event-stream'],
      ['Content-Length', String(Buffer.byteLength(body))]], body));
  };
  const reached = (id) => peer.received.some((r) => r.body.includes(`"id":"${id}"`));

  test('i17: an HTTP/1.1 request without Host is 400 (RFC 9112 §3.2), not the allow-list\'s 403', T, async () => {
    const res = await raw(loop, '/mcp', [], 'nohost-1');
    assert.equal(res.status, 400, res.head);
    assert.match(JSON.parse(res.text).error.message, /missing Host/);
    assert.ok(!reached('nohost-1'), 'forwarded');
  });

  test('i17: an absolute-form target naming the proxy is served as its path', T, async () => {
    const res = await raw(loop, `http://127.0.0.1:${loop.port}/mcp`, [['Host', `127.0.0.1:${loop.port}`]], 'abs-1');
    assert.equal(res.status, 200, `${res.head}\n${res.text}`);
    assert.equal(JSON.parse(res.text).id, 'abs-1');
    const rec = peer.received.find((r) => r.body.includes('"id":"abs-1"'));
    assert.equal(rec.url, new URL(peer.url).pathname, 'the upstream gets its own origin-form target');
  });

  test('i17: the absolute-form authority is what the Host allow-list judges, not Host', T, async () => {
    // RFC 9112 §3.2.2: the received Host is ignored.
    const evil = await raw(loop, 'http://evil.example.com/mcp', [['Host', `127.0.0.1:${loop.port}`]], 'abs-2');
    assert.equal(evil.status, 403, evil.head);
    assert.equal(JSON.parse(evil.text).error.message, 'Host not allowed');
    assert.ok(!reached('abs-2'), 'forwarded');
    const ok = await raw(loop, `http://localhost:${loop.port}/mcp`, [['Host', 'evil.example.com']], 'abs-3');
    assert.equal(ok.status, 200, ok.head);
    const listedOk = await raw(listed, 'http://mcp.staging.example/mcp', [['Host', '127.0.0.1']], 'abs-4');
    assert.equal(listedOk.status, 200, listedOk.head);
  });

  test('configured hosts and origins replace the loopback default', T, async () => {
    assert.equal((await postJson(listed.url, ping, { headers: { Host: 'mcp.staging.example' } })).status, 200);
    assert.equal((await postJson(listed.url, ping, { headers: { Host: 'mcp.staging.example', Origin: 'https://console.staging.example' } })).status, 200);
    assert.equal((await postJson(listed.url, ping)).status, 403, '127.0.0.1 is not in the list');
    assert.equal((await postJson(listed.url, ping, { headers: { Host: 'mcp.staging.example', Origin: 'https://evil.example' } })).status, 403);
  });
});

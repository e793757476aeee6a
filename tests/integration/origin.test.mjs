// Host and Origin checks (issue 9, point 2): on a loopback listener a
// foreign Host (DNS rebinding) or a cross-site Origin gets 403 and never
// reaches the upstream; same-host pages, non-browser clients and configured
// hosts/origins pass.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startWarden, stopAll } from './lib/procs.mjs';
import { postJson } from './lib/http.mjs';
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

  test('configured hosts and origins replace the loopback default', T, async () => {
    assert.equal((await postJson(listed.url, ping, { headers: { Host: 'mcp.staging.example' } })).status, 200);
    assert.equal((await postJson(listed.url, ping, { headers: { Host: 'mcp.staging.example', Origin: 'https://console.staging.example' } })).status, 200);
    assert.equal((await postJson(listed.url, ping)).status, 403, '127.0.0.1 is not in the list');
    assert.equal((await postJson(listed.url, ping, { headers: { Host: 'mcp.staging.example', Origin: 'https://evil.example' } })).status, 403);
  });
});

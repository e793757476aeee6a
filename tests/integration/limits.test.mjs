// Limits and slow clients (issue 9, point 4): a slowloris client trickling
// its head is cut by the header deadline (408) while another client is
// served at once; one address cannot take more than its share of
// connections (503); a body nested deeper than max_json_depth is refused
// (400) before it reaches the upstream.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startWarden, stopAll } from './lib/procs.mjs';
import { openRaw, postJson } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { sleep } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';

const T = { timeout: 30000 };
const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });

describe('limits and slow clients', () => {
  let peer;
  let warden;

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'limits' });
    const wp = await freePort();
    warden = await startWarden(wp, ['-c', writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [{ url: peer.url }],
      timeouts: { header_ms: 1000, body_ms: 1500 },
      limits: { max_connections_per_client: 6, max_json_depth: 16 },
    })]);
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
  });

  test('slowloris: a head trickled a byte at a time is cut by the header deadline, others are served', T, async () => {
    const slow = await openRaw(warden.port);
    const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${warden.port}\r\nX-Slow: `;
    const started = Date.now();
    let i = 0;
    // One byte every 150 ms: each byte would reset an idle timeout.
    const trickle = (async () => {
      while (!slow.ended && Date.now() - started < 4000) {
        await slow.write(head[i % head.length]).catch(() => {});
        i++;
        await sleep(150);
      }
    })();
    // Meanwhile a healthy client is answered at once.
    const t0 = Date.now();
    const ok = await postJson(warden.url, ping(1));
    assert.equal(ok.status, 200);
    assert.ok(Date.now() - t0 < 1000, 'healthy client delayed');
    const res = await slow.readResponse({ timeout: 4000 });
    const took = Date.now() - started;
    await trickle;
    assert.equal(res.status, 408);
    assert.equal(JSON.parse(res.text).error.code, -32600);
    assert.ok(took >= 900 && took < 3000, `cut after ${took} ms`);
    await slow.closed;
  });

  test('a body that stalls is cut by the body deadline', T, async () => {
    const c = await openRaw(warden.port);
    await c.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${warden.port}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"json`);
    const res = await c.readResponse({ timeout: 4000 });
    assert.equal(res.status, 408);
  });

  test('one address gets at most max_connections_per_client connections (503 past it)', T, async () => {
    const held = [];
    for (let k = 0; k < 6; k++) held.push(await openRaw(warden.port));
    await sleep(100);
    const extra = await openRaw(warden.port);
    const res = await extra.readResponse({ timeout: 3000 });
    assert.equal(res.status, 503);
    assert.match(JSON.parse(res.text).error.message, /too many connections/);
    for (const h of held) h.sock.destroy();
    await sleep(200);
    assert.equal((await postJson(warden.url, ping(2))).status, 200, 'slots come back');
  });

  test('JSON nested deeper than max_json_depth: 400 before the upstream', T, async () => {
    const n = peer.received.length;
    let deep = 'null';
    for (let k = 0; k < 40; k++) deep = `[${deep}]`;
    const body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"a":${deep}}}}`;
    const res = await postJson(warden.url, body);
    assert.equal(res.status, 400);
    assert.match(JSON.parse(res.body).error.message, /nested too deeply/);
    assert.equal(peer.received.length, n);
  });
});

// Several upstreams, each at its own client-side path, from a config file
// (issue 2, point 4): /a/mcp → server-everything, /b/mcp → our scripted
// peer whose own path differs; each request reaches the right upstream at
// that upstream's path; any other path → 404.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startEverything, startWarden, stopAll } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { postJson, request } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';

const T = { timeout: 20000 };

describe('two upstreams at their own paths (config file)', () => {
  let se;
  let peerB;
  let warden;

  before(async () => {
    se = await startEverything(await freePort());
    peerB = await startScriptedPeer({ mode: 'json', name: 'peer-b', path: '/b-upstream/mcp', sessionId: 'b-session' });
    const wp = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [
        { name: 'a', path: '/a/mcp', url: se.url },
        { name: 'b', path: '/b/mcp', url: peerB.url },
      ],
    });
    warden = await startWarden(wp, ['-c', conf]);
  }, T);

  after(async () => {
    await stopAll();
    await peerB?.close();
  });

  test('SDK sessions on /a/mcp and /b/mcp reach their own upstream', T, async () => {
    const a = await connectClient(`${warden.base}/a/mcp`);
    const b = await connectClient(`${warden.base}/b/mcp`);
    try {
      assert.equal(a.client.getServerVersion().name, 'mcp-servers/everything');
      assert.equal(b.client.getServerVersion().name, 'peer-b');
      assert.equal(b.transport.sessionId, 'b-session');
      const [ta, tb] = await Promise.all([
        withTimeout(a.client.listTools(), CALL_TIMEOUT, 'a tools/list'),
        withTimeout(b.client.listTools(), CALL_TIMEOUT, 'b tools/list'),
      ]);
      assert.ok(ta.tools.some((t) => t.name === 'echo'));
      assert.deepEqual(tb.tools.map((t) => t.name), ['whoami']);
      const r = await withTimeout(a.client.callTool({ name: 'echo', arguments: { message: 'to a' } }), CALL_TIMEOUT, 'a echo');
      assert.equal(r.content[0].text, 'Echo: to a');
      // Everything b received went to b's own upstream path.
      assert.ok(peerB.received.length >= 3);
      for (const rec of peerB.received) {
        assert.equal(rec.url, '/b-upstream/mcp');
        assert.equal(rec.headers.host, `127.0.0.1:${peerB.port}`);
      }
      assert.ok(!peerB.received.some((rec) => rec.body.includes('to a')), 'a traffic leaked to b');
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('raw requests are routed by path', T, async () => {
    const before = peerB.received.length;
    const rb = await postJson(`${warden.base}/b/mcp`, { jsonrpc: '2.0', id: 'route-b', method: 'ping' });
    assert.equal(rb.status, 200);
    assert.equal(rb.json().result.peer, 'peer-b');
    assert.equal(peerB.received.length, before + 1);
    // /a/mcp without a session: server-everything's own 400, not peer b's 200.
    const ra = await postJson(`${warden.base}/a/mcp`, { jsonrpc: '2.0', id: 'route-a', method: 'ping' });
    assert.equal(ra.status, 400, ra.text);
    assert.match(ra.json().error.message, /^Bad Request/);
    assert.equal(peerB.received.length, before + 1, 'a request reached b');
  });

  for (const p of ['/mcp', '/c/mcp', '/a', '/b/mcpx', '/']) {
    test(`unknown path ${p} → 404, forwarded nowhere`, T, async () => {
      const before = peerB.received.length;
      const res = await postJson(`${warden.base}${p}`, { jsonrpc: '2.0', id: 1, method: 'ping' });
      assert.equal(res.status, 404, `${p}: ${res.status} ${res.text}`);
      assert.equal(peerB.received.length, before);
      const g = await request(`${warden.base}${p}`, { headers: { accept: 'text/event-stream' } });
      assert.equal(g.status, 404, `GET ${p}`);
    });
  }

  test('the query string does not change routing', T, async () => {
    const res = await postJson(`${warden.base}/b/mcp?x=1`, { jsonrpc: '2.0', id: 'q', method: 'ping' });
    assert.equal(res.status, 200);
    assert.equal(res.json().result.peer, 'peer-b');
  });
});

// The official SDK client's full session, through ./mcpwarden and directly
// to @modelcontextprotocol/server-everything, side by side: every result
// through the proxy must equal the direct one (issue 2, "Done when").

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startEverything, startWarden, stopAll } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { postJson, request, rawExchange, rawRequestBytes } from './lib/http.mjs';
import { withTimeout, waitFor } from './lib/util.mjs';

const T = { timeout: 30000 };

describe('SDK session: through mcpwarden equals direct (server-everything)', () => {
  let se;
  let warden;
  let direct;
  let proxied;

  before(async () => {
    se = await startEverything(await freePort());
    const wp = await freePort();
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', se.url]);
    direct = await connectClient(se.url, { name: 'direct' });
    proxied = await connectClient(warden.url, { name: 'proxied' });
  }, T);

  after(async () => {
    await direct?.close();
    await proxied?.close();
    await stopAll();
  });

  // Both sides at once, so the slow calls cost their time once.
  const both = (fn) => Promise.all([fn(direct), fn(proxied)]);

  test('initialize: same serverInfo, capabilities, instructions and version', T, () => {
    assert.deepEqual(proxied.client.getServerVersion(), direct.client.getServerVersion());
    assert.deepEqual(proxied.client.getServerCapabilities(), direct.client.getServerCapabilities());
    assert.equal(proxied.client.getInstructions(), direct.client.getInstructions());
    assert.equal(proxied.transport.protocolVersion, direct.transport.protocolVersion);
    assert.equal(proxied.client.getServerVersion().name, 'mcp-servers/everything');
  });

  test('Mcp-Session-Id is the upstream\'s, carried unchanged both ways', T, async () => {
    const sid = proxied.transport.sessionId;
    assert.match(sid ?? '', /^[\x21-\x7e]+$/);
    // server-everything logs each session id it issues.
    await waitFor(() => se.proc.stdout.includes(`Session initialized with ID: ${sid}`),
      { timeout: 3000, what: 'upstream to have issued the proxied session id' });
    // The initialized notification and the GET stream were accepted upstream
    // with that id (a wrong id would have been answered 400).
    const init = proxied.fetchLog.filter((f) => f.method === 'POST');
    assert.equal(init[0].status, 200);
    assert.equal(init[1].status, 202, 'notifications/initialized → 202');
  });

  test('tools/list: same list as direct', T, async () => {
    const [d, p] = await both((s) => withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list'));
    assert.ok(d.tools.length >= 5);
    assert.deepEqual(p, d);
  });

  test('tools/call echo and get-sum: same results as direct', T, async () => {
    const calls = [
      { name: 'echo', arguments: { message: 'hello through mcpwarden ✓' } },
      { name: 'get-sum', arguments: { a: 19, b: 23 } },
      { name: 'get-structured-content', arguments: { location: 'New York' } },
      { name: 'no-such-tool', arguments: {} },
    ];
    for (const c of calls) {
      const [d, p] = await both((s) => withTimeout(s.client.callTool(c).catch((e) => ({ thrown: e.message })), CALL_TIMEOUT, c.name));
      assert.deepEqual(p, d, `tools/call ${c.name}`);
    }
    const [, p] = await both((s) => s.client.callTool(calls[0]));
    assert.equal(p.content[0].text, 'Echo: hello through mcpwarden ✓');
  });

  test('long-running tool: progress notifications streamed before the result, same count as direct', T, async () => {
    const run = async (s) => {
      const t0 = Date.now();
      const progress = [];
      const result = await withTimeout(s.client.callTool(
        { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } },
        undefined,
        { onprogress: (p) => progress.push({ ...p, t: Date.now() - t0 }), timeout: CALL_TIMEOUT },
      ), CALL_TIMEOUT + 1000, 'long-running tool');
      return { result, progress, tResult: Date.now() - t0 };
    };
    const [d, p] = await both(run);
    assert.deepEqual(p.result, d.result);
    assert.equal(d.progress.length, 4, 'direct progress count');
    assert.equal(p.progress.length, d.progress.length, 'progress count through the proxy');
    assert.deepEqual(p.progress.map((x) => [x.progress, x.total]), d.progress.map((x) => [x.progress, x.total]));
    // Streamed, not buffered: the steps are 500 ms apart upstream, so the
    // first notification must reach the client long before the result.
    for (const x of p.progress) assert.ok(x.t <= p.tResult, 'progress after result');
    assert.ok(p.progress[0].t <= p.tResult - 1000,
      `first progress at ${p.progress[0].t} ms, result at ${p.tResult} ms: SSE was buffered`);
    assert.ok(p.progress[3].t - p.progress[0].t >= 1000,
      `progress arrived in a burst: ${JSON.stringify(p.progress)}`);
  });

  test('SSE replies through the proxy: text/event-stream, X-Accel-Buffering: no', T, () => {
    const sse = proxied.fetchLog.filter((f) => f.contentType?.startsWith('text/event-stream'));
    assert.ok(sse.length >= 3, `expected SSE replies, got ${JSON.stringify(proxied.fetchLog.map((f) => [f.method, f.status, f.contentType]))}`);
    for (const f of sse) {
      assert.equal(f.headers.get('x-accel-buffering'), 'no', `${f.method} reply`);
    }
  });

  test('resources/list, resources/templates/list, resources/read: same as direct', T, async () => {
    const [d, p] = await both((s) => withTimeout(s.client.listResources(), CALL_TIMEOUT, 'resources/list'));
    assert.ok(d.resources.length > 0);
    assert.deepEqual(p, d);
    const [dt, pt] = await both((s) => withTimeout(s.client.listResourceTemplates(), CALL_TIMEOUT, 'templates/list'));
    assert.deepEqual(pt, dt);
    for (const r of d.resources.slice(0, 3)) {
      const [dr, pr] = await both((s) => withTimeout(s.client.readResource({ uri: r.uri }), CALL_TIMEOUT, `read ${r.uri}`));
      assert.ok(dr.contents.length > 0);
      assert.deepEqual(pr, dr, `resources/read ${r.uri}`);
    }
    const bad = { uri: 'demo://resource/does/not/exist' };
    const [db, pb] = await both((s) => s.client.readResource(bad).then((x) => ({ ok: x }), (e) => ({ code: e.code, message: e.message })));
    assert.deepEqual(pb, db, 'unknown resource: same error as direct');
  });

  test('prompts/list and prompts/get: same as direct', T, async () => {
    const [d, p] = await both((s) => withTimeout(s.client.listPrompts(), CALL_TIMEOUT, 'prompts/list'));
    assert.ok(d.prompts.length > 0);
    assert.deepEqual(p, d);
    const gets = [
      { name: 'simple-prompt' },
      { name: 'args-prompt', arguments: { city: 'Lyon', state: 'Rhône' } },
    ];
    for (const g of gets) {
      const [dg, pg] = await both((s) => withTimeout(s.client.getPrompt(g), CALL_TIMEOUT, `prompts/get ${g.name}`));
      assert.deepEqual(pg, dg, `prompts/get ${g.name}`);
    }
  });

  test('session GET stream carries server-to-client notifications', T, async () => {
    // The SDK opens the standalone GET stream right after initialized.
    for (const s of [direct, proxied]) {
      await waitFor(() => s.fetchLog.find((f) => f.method === 'GET' && f.status === 200),
        { timeout: 5000, what: 'GET stream to open' });
      const get = s.fetchLog.find((f) => f.method === 'GET');
      assert.match(get.contentType, /^text\/event-stream/);
    }
    const getP = proxied.fetchLog.find((f) => f.method === 'GET');
    assert.equal(getP.headers.get('x-accel-buffering'), 'no');

    const { resources } = await direct.client.listResources();
    const uri = resources[0].uri;
    const run = async (s) => {
      const mark = s.notifications.length;
      await withTimeout(s.client.subscribeResource({ uri }), CALL_TIMEOUT, 'resources/subscribe');
      // The subscribe handler sends a log message on the standalone stream.
      const log = await s.waitNotification((n) => n.method === 'notifications/message' &&
        String(n.params?.data).includes(`Subscribe Resource request for URI: ${uri}`), 5000, mark);
      // toggle-subscriber-updates sends resources/updated at once, unrelated
      // to any request: it can only arrive on the GET stream.
      const tCall = Date.now();
      const r = await withTimeout(s.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} }), CALL_TIMEOUT, 'toggle');
      const upd = await s.waitNotification((n) => n.method === 'notifications/resources/updated' && n.params?.uri === uri, 3000, mark);
      return { log, upd, r, lag: upd.t - tCall };
    };
    const [d, p] = await both(run);
    assert.equal(p.log.params.level, d.log.params.level);
    assert.deepEqual(p.upd.params, d.upd.params);
    assert.ok(p.lag < 2500, `resources/updated took ${p.lag} ms through the proxy`);
  });

  test('notification POST → 202 with an empty body, as directly', T, async () => {
    const send = async (url, s) => {
      const bytes = rawRequestBytes('POST /mcp HTTP/1.1', [
        ['Host', new URL(url).host],
        ['Content-Type', 'application/json'],
        ['Accept', 'application/json, text/event-stream'],
        ['Mcp-Session-Id', s.transport.sessionId],
        ['MCP-Protocol-Version', s.transport.protocolVersion],
        ['Content-Length', String(Buffer.byteLength('{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}'))],
      ], '{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}');
      return rawExchange(new URL(url).port, bytes);
    };
    const d = await send(se.url, direct);
    const p = await send(warden.url, proxied);
    assert.equal(d.status, 202);
    assert.equal(p.status, 202);
    assert.equal(p.body.length, 0, `202 body must be empty, got ${JSON.stringify(p.text)}`);
  });

  test('DELETE ends the session; the deleted id then gets 404 (the spec\'s MUST) where the server says 400', T, async () => {
    const ids = { d: direct.transport.sessionId, p: proxied.transport.sessionId };
    const pv = proxied.transport.protocolVersion;
    await withTimeout(direct.transport.terminateSession(), 5000, 'direct DELETE');
    await withTimeout(proxied.transport.terminateSession(), 5000, 'proxied DELETE');
    const dDel = direct.fetchLog.find((f) => f.method === 'DELETE');
    const pDel = proxied.fetchLog.find((f) => f.method === 'DELETE');
    assert.equal(pDel.status, dDel.status);
    assert.equal(proxied.transport.sessionId, undefined);

    const req = { jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} };
    const hdr = (sid) => ({ 'mcp-session-id': sid, 'mcp-protocol-version': pv });
    // server-everything answers a deleted session 400 (its app checks its
    // own session map first); the transport spec says MUST 404 so the
    // client re-initializes. mcpwarden saw the DELETE succeed and answers
    // 404 itself, without bothering the upstream.
    const dPost = await postJson(se.url, req, { headers: hdr(ids.d) });
    const pPost = await postJson(warden.url, req, { headers: hdr(ids.p) });
    assert.equal(dPost.status, 400, `direct answer to a deleted session: ${dPost.status}`);
    assert.equal(pPost.status, 404, `proxy ${pPost.status} ${pPost.text}`);
    assert.equal(pPost.json().error.code, -32001);
    assert.equal(pPost.json().id, 99);

    const pGet = await request(warden.url, { headers: { accept: 'text/event-stream', ...hdr(ids.p) } });
    assert.equal(pGet.status, 404, 'GET with the deleted session id');
    const pD2 = await request(warden.url, { method: 'DELETE', headers: hdr(ids.p) });
    assert.equal(pD2.status, 404, 'second DELETE');

    // A fresh session still works: the client can start over.
    const again = await connectClient(warden.url);
    try {
      assert.ok((await again.client.listTools()).tools.length > 0);
    } finally {
      await again.close();
    }
  });

  test('one log line per request names the JSON-RPC method and the tool', T, async () => {
    const lines = warden.proc.stderr.split('\n');
    assert.ok(lines.some((l) => l.includes('tools/call') && l.includes('echo')),
      `no log line with tools/call and echo in:\n${warden.proc.stderr.slice(-3000)}`);
    assert.ok(lines.some((l) => l.includes('DELETE')), 'no log line for DELETE');
  });
});

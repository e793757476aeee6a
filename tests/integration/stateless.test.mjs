// MCP 2026-07-28 (the stateless era) through mcpwarden (issue 3).
//
// Upstreams: our own 2.x server (peers/stateless-server.mjs: 2026-07-28 plus
// the SDK's stateless legacy leg) at /mcp, server-everything (stateful 1.x
// era, sessions) at /everything/mcp. Clients: the SDK 2.x client pinned to
// 2026-07-28, the SDK 1.x client, and raw HTTP for byte-level cases.
//
// Covered: discover, tools/list, tools/call with x-mcp-header parameters
// (plain and Base64), MRTR, progress, subscriptions/listen (ack, list_changed,
// resource update, keep-alives, close), a client closing a long call, GET/
// DELETE, upstream -32021/-32022 passed through, one session giving the same
// results through mcpwarden as directly, both eras at once.
//
// The "HeaderMismatch end to end" and "mcpwarden's own errors" suites need
// mirror_check()/mirror_proxy_code() (proxy/mcp/mirror.h) wired into
// proxy/mcp/transport_http.c: until then the upstream, not mcpwarden, answers
// the mismatches (the SDK server checks them too), and those cases fail on
// "the upstream never saw it".

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, closedPort } from './lib/ports.mjs';
import { startEverything, startWarden, stopAll } from './lib/procs.mjs';
import { connectClient } from './lib/mcp.mjs';
import { request, openStream, rawExchange, rawRequestBytes } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout, waitFor, sleep } from './lib/util.mjs';
import { connectModern, modernRequest, envelope, b64, V2026, CALL_TIMEOUT } from './lib/stateless-util.mjs';
import { startStatelessServer, SERVER_NAME } from './peers/stateless-server.mjs';

const T = { timeout: 30000 };
const KEEPALIVE_MS = 400;

/** POST one JSON body with exactly `headers`. */
function post(url, body, headers, timeout = CALL_TIMEOUT) {
  return request(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body), timeout });
}

/** The upstream records of requests whose JSON-RPC id is `id`. */
function receivedWithId(peer, id) {
  return peer.received.filter((r) => r.body && typeof r.body === 'object' && r.body.id === id);
}

describe('2026-07-28 through mcpwarden', () => {
  let peer;
  let se;
  let warden;
  let modernUrl;

  before(async () => {
    peer = await startStatelessServer();
    se = await startEverything(await freePort());
    const wp = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${wp}`,
      timeouts: { sse_keepalive_ms: KEEPALIVE_MS },
      upstreams: [
        { name: 'modern', path: '/mcp', url: peer.url },
        { name: 'everything', path: '/everything/mcp', url: se.url },
      ],
    });
    warden = await startWarden(wp, ['-c', conf]);
    modernUrl = warden.url;
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
  });

  test('a pinned 2.x session gives the same results through mcpwarden as directly', T, async () => {
    // One scripted session: discover, list, calls with mirrored parameters
    // (plain and Base64), MRTR, progress, prompts/get, resources/read and
    // an unknown tool; everything the client sees is compared.
    const session = async (url) => {
      const s = await connectModern(url);
      try {
        const out = { era: s.client.getProtocolEra(), version: s.client.getNegotiatedProtocolVersion() };
        out.discover = await s.client.discover();
        out.tools = await s.client.listTools();
        const calls = [
          { name: 'echo', arguments: { message: 'hello ✓' } },
          { name: 'weather', arguments: { region: 'eu-west1', days: 3, metric: false } },
          { name: 'weather', arguments: { region: 'Zürich ☃', days: 7 } },
          { name: 'weather', arguments: { region: '=?base64?looks-like-a-sentinel?=' } },
          { name: 'confirm', arguments: { action: 'deploy' } },
        ];
        out.calls = [];
        for (const c of calls) out.calls.push(await withTimeout(s.client.callTool(c), CALL_TIMEOUT, c.name));
        const progress = [];
        out.progressResult = await s.client.callTool({ name: 'progress', arguments: { steps: 4 } },
          { onprogress: (p) => progress.push(p), timeout: CALL_TIMEOUT });
        out.progress = progress;
        out.prompt = await s.client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
        out.resource = await s.client.readResource({ uri: 'test://status' });
        out.unknownTool = await s.client.callTool({ name: 'no-such-tool', arguments: {} })
          .then((r) => ({ result: r }), (e) => ({ code: e.code, message: e.message }));
        out.elicitations = s.elicitations;
        return out;
      } finally {
        await s.close();
      }
    };
    const direct = await session(peer.url);
    const proxied = await session(modernUrl);
    assert.deepEqual(proxied, direct);

    assert.equal(direct.era, 'modern');
    assert.equal(direct.version, V2026);
    assert.deepEqual(direct.discover.supportedVersions, [V2026]);
    assert.equal(direct.discover._meta['io.modelcontextprotocol/serverInfo'].name, SERVER_NAME);
    assert.ok(direct.tools.tools.some((t) => t.inputSchema.properties?.region?.['x-mcp-header'] === 'Region'));
    assert.equal(direct.calls[0].content[0].text, 'Echo: hello ✓');
    // The upstream saw the client's mirrored headers: plain, numeric, boolean, Base64.
    assert.deepEqual(direct.calls[1].structuredContent.headers,
      { 'mcp-param-region': 'eu-west1', 'mcp-param-days': '3', 'mcp-param-metric': 'false' });
    assert.deepEqual(direct.calls[2].structuredContent.headers,
      { 'mcp-param-region': b64('Zürich ☃'), 'mcp-param-days': '7' });
    assert.deepEqual(direct.calls[3].structuredContent.headers,
      { 'mcp-param-region': b64('=?base64?looks-like-a-sentinel?=') });
    assert.equal(direct.calls[4].content[0].text, 'deploy confirmed (state confirm:deploy)');
    assert.equal(direct.elicitations.length, 1);
    assert.deepEqual(direct.progress.map((p) => [p.progress, p.total]), [[1, 4], [2, 4], [3, 4], [4, 4]]);
    assert.equal(direct.prompt.messages[0].content.text, 'Hello, Ada!');
    assert.equal(direct.resource.contents[0].text, 'status #1');
    assert.ok(direct.unknownTool.code !== undefined || direct.unknownTool.result?.isError, JSON.stringify(direct.unknownTool));
  });

  test('discover and tools/list bodies cross untouched (resultType, ttlMs, cacheScope, _meta)', T, async () => {
    for (const [id, method] of [['raw-discover', 'server/discover'], ['raw-list', 'tools/list']]) {
      const r = modernRequest(id, method);
      const d = await post(peer.url, r.body, r.headers);
      const p = await post(modernUrl, r.body, r.headers);
      assert.equal(p.status, 200, p.text);
      assert.equal(p.status, d.status);
      assert.match(p.headers['content-type'], /^application\/json/);
      assert.deepEqual(p.json(), d.json(), method);
      const res = p.json().result;
      assert.equal(res.resultType, 'complete');
      assert.equal(res.ttlMs, 0);
      assert.equal(res.cacheScope, 'private');
      assert.equal(res._meta['io.modelcontextprotocol/serverInfo'].name, SERVER_NAME);
    }
  });

  test('tools/call: Mcp-Name and Mcp-Param-* reach the upstream exactly as the client sent them', T, async () => {
    const s = await connectModern(modernUrl);
    try {
      await s.client.listTools();
      for (const [args, region] of [
        [{ region: 'us-east1', days: 2, metric: true }, 'us-east1'],
        [{ region: 'Zürich ☃', days: 2, metric: true }, b64('Zürich ☃')],
      ]) {
        const r = await s.client.callTool({ name: 'weather', arguments: args });
        const sent = s.fetchLog.filter((f) => f.reqBody?.method === 'tools/call').at(-1);
        assert.equal(sent.status, 200);
        assert.equal(sent.reqHeaders['mcp-name'], 'weather');
        assert.equal(sent.reqHeaders['mcp-param-region'], region);
        const got = receivedWithId(peer, sent.reqBody.id).at(-1);
        assert.ok(got, 'the upstream got the call');
        for (const h of ['mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-param-region', 'mcp-param-days', 'mcp-param-metric']) {
          assert.equal(got.headers[h], sent.reqHeaders[h], h);
        }
        assert.deepEqual(got.body, sent.reqBody, 'body untouched');
        assert.deepEqual(r.structuredContent.args, args);
      }
    } finally {
      await s.close();
    }
  });

  test('MRTR: input_required passed through, the retry carries inputResponses and requestState byte-exact', T, async () => {
    const s = await connectModern(modernUrl);
    try {
      const r = await s.client.callTool({ name: 'confirm', arguments: { action: 'rollback' } });
      assert.equal(r.content[0].text, 'rollback confirmed (state confirm:rollback)');
      assert.equal(s.elicitations.length, 1);
      assert.equal(s.elicitations[0].message, 'Really rollback?');
      const rounds = s.fetchLog.filter((f) => f.reqBody?.params?.name === 'confirm');
      assert.equal(rounds.length, 2, 'one call, one retry');
      assert.notEqual(rounds[0].reqBody.id, rounds[1].reqBody.id, 'the retry has a new id');
      const retry = receivedWithId(peer, rounds[1].reqBody.id).at(-1);
      assert.ok(retry, 'the upstream got the retry');
      assert.equal(retry.body.params.requestState, 'confirm:rollback');
      assert.deepEqual(retry.body.params.inputResponses, { confirm: { action: 'accept', content: { confirm: true } } });
      // What the client got for round 1, byte for byte: compare it raw.
      const raw = modernRequest('mrtr-raw', 'tools/call', { name: 'confirm', arguments: { action: 'x' } });
      raw.body.params._meta['io.modelcontextprotocol/clientCapabilities'] = { elicitation: {} };
      const d = await post(peer.url, raw.body, raw.headers);
      const p = await post(modernUrl, raw.body, raw.headers);
      assert.equal(p.status, 200);
      assert.deepEqual(p.json(), d.json());
      assert.equal(p.json().result.resultType, 'input_required');
      assert.equal(p.json().result.requestState, 'confirm:x');
    } finally {
      await s.close();
    }
  });

  test('progress: streamed as SSE before the result, X-Accel-Buffering: no', T, async () => {
    const s = await connectModern(modernUrl);
    try {
      const t0 = Date.now();
      const seen = [];
      const r = await s.client.callTool({ name: 'progress', arguments: { steps: 5 } },
        { onprogress: (p) => seen.push({ ...p, t: Date.now() - t0 }), timeout: CALL_TIMEOUT });
      const tResult = Date.now() - t0;
      assert.equal(r.content[0].text, 'done in 5 steps');
      assert.deepEqual(seen.map((p) => p.progress), [1, 2, 3, 4, 5]);
      assert.ok(seen.every((p) => p.t <= tResult));
      const f = s.fetchLog.find((x) => x.reqBody?.params?.name === 'progress');
      assert.match(f.contentType, /^text\/event-stream/);
      assert.equal(f.headers.get('x-accel-buffering'), 'no');
    } finally {
      await s.close();
    }
  });

  test('subscriptions/listen: list_changed and a resource update delivered; closing reaches the upstream', T, async () => {
    const s = await connectModern(modernUrl);
    try {
      const before = peer.handler.bus.listenerCount;
      const sub = await s.client.listen({ toolsListChanged: true, resourceSubscriptions: ['test://status'] });
      assert.deepEqual(sub.honoredFilter, { toolsListChanged: true, resourceSubscriptions: ['test://status'] });
      await waitFor(() => peer.handler.bus.listenerCount > before, { what: 'the upstream listen router' });
      peer.notify.toolsChanged();
      peer.bumpStatus();
      const lc = await s.waitNotification((n) => n.method === 'notifications/tools/list_changed');
      const up = await s.waitNotification((n) => n.method === 'notifications/resources/updated');
      const listen = s.fetchLog.find((f) => f.reqBody?.method === 'subscriptions/listen');
      const subId = listen.reqBody.id;
      assert.equal(lc.params._meta['io.modelcontextprotocol/subscriptionId'], subId);
      assert.equal(up.params._meta['io.modelcontextprotocol/subscriptionId'], subId);
      assert.equal(up.params.uri, 'test://status');
      assert.ok(lc.t <= up.t, 'in order');
      assert.match(listen.contentType, /^text\/event-stream/);
      assert.equal(listen.headers.get('x-accel-buffering'), 'no');

      await sub.close();
      assert.equal(await withTimeout(sub.closed, 3000, 'subscription closed'), 'local');
      const rec = receivedWithId(peer, subId).at(-1);
      await waitFor(() => rec.closedEarly, { what: 'the upstream listen stream to close' });
      await waitFor(() => peer.handler.bus.listenerCount === before, { what: 'the upstream listener to go' });
      const cancel = s.fetchLog.find((f) => f.reqBody?.method === 'notifications/cancelled');
      assert.equal(cancel?.status, 202);
    } finally {
      await s.close();
    }
  });

  test('raw listen stream: acknowledgement first, keep-alive comments while quiet, tagged notifications', T, async () => {
    const r = modernRequest('listen:raw-1', 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const before = peer.handler.bus.listenerCount;
    const st = await openStream(modernUrl, { method: 'POST', headers: r.headers, body: JSON.stringify(r.body) });
    try {
      assert.equal(st.status, 200);
      assert.match(st.headers['content-type'], /^text\/event-stream/);
      assert.equal(st.headers['x-accel-buffering'], 'no');
      await waitFor(() => st.sse.messages().length >= 1, { what: 'the acknowledgement' });
      const ack = st.sse.messages()[0];
      assert.equal(ack.method, 'notifications/subscriptions/acknowledged');
      assert.equal(ack.params._meta['io.modelcontextprotocol/subscriptionId'], 'listen:raw-1');
      // Quiet: mcpwarden's own keep-alive comments (its interval, far below
      // the upstream's 15 s).
      await waitFor(() => st.sse.comments.length >= 2, { timeout: KEEPALIVE_MS * 6, what: 'keep-alive comments' });
      await waitFor(() => peer.handler.bus.listenerCount > before, { what: 'the upstream listen router' });
      peer.notify.toolsChanged();
      await waitFor(() => st.sse.messages().length >= 2, { what: 'list_changed' });
      const n = st.sse.messages()[1];
      assert.equal(n.method, 'notifications/tools/list_changed');
      assert.equal(n.params._meta['io.modelcontextprotocol/subscriptionId'], 'listen:raw-1');
    } finally {
      st.abort();
    }
    const rec = receivedWithId(peer, 'listen:raw-1').at(-1);
    await waitFor(() => rec.closedEarly, { what: 'the upstream listen stream to close' });
  });

  test('a client closing a long call\'s stream: the upstream sees it closed (the cancel)', T, async () => {
    const s = await connectModern(modernUrl);
    try {
      const ac = new AbortController();
      const call = s.client.callTool({ name: 'slow', arguments: { ms: 20000 } }, { signal: ac.signal, timeout: 25000 })
        .then(() => 'completed', (e) => `rejected: ${e.name}`);
      await waitFor(() => peer.events.some((e) => e.kind === 'tool' && e.name === 'slow' && e.t >= s.fetchLog[0].t),
        { what: 'the upstream to start the slow call' });
      const t0 = Date.now();
      ac.abort();
      assert.match(await withTimeout(call, 3000, 'aborted call'), /^rejected/);
      await waitFor(() => peer.events.some((e) => e.kind === 'aborted' && e.t >= t0),
        { timeout: 3000, what: 'the upstream handler to be aborted' });
      const id = s.fetchLog.find((f) => f.reqBody?.params?.name === 'slow').reqBody.id;
      const rec = receivedWithId(peer, id).at(-1);
      await waitFor(() => rec.closedEarly, { what: 'the upstream request to close' });
    } finally {
      await s.close();
    }
  });

  test('GET and DELETE: answered as the upstream answers them', T, async () => {
    for (const method of ['GET', 'DELETE']) {
      const headers = { accept: 'text/event-stream', 'mcp-protocol-version': V2026 };
      const d = await request(peer.url, { method, headers });
      const p = await request(modernUrl, { method, headers });
      assert.equal(d.status, 405);
      assert.equal(p.status, d.status, method);
      assert.equal(p.headers.allow, d.headers.allow, `${method} Allow`);
      assert.equal(p.text, d.text, `${method} body`);
    }
  });

  test('upstream errors of this era pass through: -32022 with data.supported, -32021', T, async () => {
    // An envelope naming a version the server does not serve (headers agree).
    const old = modernRequest('unsupported-1', 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } },
      { 'mcp-protocol-version': '2025-11-25' });
    // A call that needs a capability this request does not declare.
    const nocap = modernRequest('nocap-1', 'tools/call', { name: 'confirm', arguments: { action: 'x' } });
    for (const [r, code] of [[old, -32022], [nocap, -32021]]) {
      const d = await post(peer.url, r.body, r.headers);
      const p = await post(modernUrl, r.body, r.headers);
      assert.equal(d.status, 400, d.text);
      assert.equal(p.status, 400);
      assert.deepEqual(p.json(), d.json());
      assert.equal(p.json().error.code, code);
      assert.equal(p.json().id, r.body.id);
    }
    const p = await post(modernUrl, old.body, old.headers);
    assert.ok(p.json().error.data.supported.includes(V2026));
    const q = await post(modernUrl, nocap.body, nocap.headers);
    assert.ok(q.json().error.data.requiredCapabilities.elicitation);
  });

  test('a 1.x client and a 2.x client use one mcpwarden at the same time', T, async () => {
    // 1.x stateful (sessions) on server-everything; 1.x on our server's
    // stateless legacy leg; 2.x pinned to 2026-07-28 on our server.
    const legacyEverything = await connectClient(`${warden.base}/everything/mcp`, { name: 'legacy-everything' });
    const legacyModern = await connectClient(modernUrl, { name: 'legacy-on-modern' });
    const modern = await connectModern(modernUrl, { name: 'modern-alongside' });
    try {
      assert.ok(legacyEverything.transport.sessionId, 'server-everything gave a session');
      assert.equal(legacyModern.client.getServerVersion().name, SERVER_NAME);
      assert.equal(modern.client.getProtocolEra(), 'modern');
      // List first: the client mirrors Mcp-Param-* from its cached listing
      // (concurrent calls before any listing race its re-list-and-retry).
      await modern.client.listTools();
      const rounds = 8;
      const work = [];
      for (let i = 0; i < rounds; i++) {
        work.push(legacyEverything.client.callTool({ name: 'echo', arguments: { message: `e${i}` } })
          .then((r) => assert.equal(r.content[0].text, `Echo: e${i}`)));
        work.push(legacyModern.client.callTool({ name: 'echo', arguments: { message: `l${i}` } })
          .then((r) => assert.equal(r.content[0].text, `Echo: l${i}`)));
        work.push(modern.client.callTool({ name: 'weather', arguments: { region: `r${i}`, days: i } })
          .then((r) => assert.deepEqual(r.structuredContent.args, { region: `r${i}`, days: i })));
      }
      await withTimeout(Promise.all(work), 15000, 'both eras at once');
      // The 1.x client on our server spoke 2025 (no envelope, no Mcp-Method).
      const legacyCalls = peer.received.filter((r) => r.body?.method === 'tools/call' && /^l\d$/.test(r.body.params?.arguments?.message ?? ''));
      assert.equal(legacyCalls.length, rounds);
      for (const r of legacyCalls) {
        assert.equal(r.body.params._meta?.['io.modelcontextprotocol/protocolVersion'], undefined);
        assert.equal(r.headers['mcp-method'], undefined);
      }
      assert.deepEqual(legacyEverything.errors, []);
      assert.deepEqual(legacyModern.errors, []);
    } finally {
      await legacyEverything.close();
      await legacyModern.close();
      await modern.close();
    }
  });
});

// ---- HeaderMismatch, end to end ------------------------------------------------
//
// Needs mirror_check() wired into transport_http.c (see proxy/mcp/mirror.h).
// Each rejected request must get 400 + -32020 from mcpwarden itself (its
// data.reason tells it apart from the SDK server's own -32020, whose data
// is {mismatch}) and never reach the upstream.

describe('HeaderMismatch end to end (needs mirror_check wired into transport_http.c)', () => {
  let peer;
  let warden;

  before(async () => {
    peer = await startStatelessServer();
    const wp = await freePort();
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url]);
    // mcpwarden learns the x-mcp-header annotations from a tools/list it
    // relays, as it would from any client's.
    const r = modernRequest('hm-list', 'tools/list');
    const l = await post(warden.url, r.body, r.headers);
    assert.equal(l.status, 200, l.text);
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
  });

  const call = (id, name, args, headers) => modernRequest(id, 'tools/call', { name, arguments: args }, headers);
  const read = (id, uri, headers) => modernRequest(id, 'resources/read', { uri }, headers);
  const prompt = (id, name, headers) => modernRequest(id, 'prompts/get', { name, arguments: { name: 'x' } }, headers);
  const W = { region: 'us', days: 3, metric: true };
  const WH = { 'mcp-param-region': 'us', 'mcp-param-days': '3', 'mcp-param-metric': 'true' };

  const rejected = [
    ['missing MCP-Protocol-Version', call('hm-1', 'echo', { message: 'x' }, { 'mcp-protocol-version': undefined }), 'MCP-Protocol-Version', 'missing'],
    ['missing Mcp-Method', call('hm-2', 'echo', { message: 'x' }, { 'mcp-method': undefined }), 'Mcp-Method', 'missing'],
    ['missing Mcp-Name (tools/call)', call('hm-3', 'echo', { message: 'x' }, { 'mcp-name': undefined }), 'Mcp-Name', 'missing'],
    ['missing Mcp-Name (resources/read)', read('hm-4', 'test://status', { 'mcp-name': undefined }), 'Mcp-Name', 'missing'],
    ['missing Mcp-Name (prompts/get)', prompt('hm-5', 'greet', { 'mcp-name': undefined }), 'Mcp-Name', 'missing'],
    ['MCP-Protocol-Version disagrees with _meta', call('hm-6', 'echo', { message: 'x' }, { 'mcp-protocol-version': '2025-11-25' }), 'MCP-Protocol-Version', 'mismatch'],
    ['Mcp-Method disagrees with method', call('hm-7', 'echo', { message: 'x' }, { 'mcp-method': 'tools/list' }), 'Mcp-Method', 'mismatch'],
    ['Mcp-Name names another tool (routing by header)', call('hm-8', 'echo', { message: 'x' }, { 'mcp-name': 'weather' }), 'Mcp-Name', 'mismatch'],
    ['Mcp-Name disagrees with params.uri', read('hm-9', 'test://status', { 'mcp-name': 'test://other' }), 'Mcp-Name', 'mismatch'],
    ['Mcp-Name: undecodable Base64', call('hm-10', 'echo', { message: 'x' }, { 'mcp-name': '=?base64?***?=' }), 'Mcp-Name', 'undecodable'],
    ['Mcp-Name: Base64 of another name', call('hm-11', 'echo', { message: 'x' }, { 'mcp-name': b64('weather') }), 'Mcp-Name', 'mismatch'],
    ['Mcp-Param-Region disagrees', call('hm-12', 'weather', W, { ...WH, 'mcp-param-region': 'eu' }), 'Mcp-Param-Region', 'mismatch'],
    ['Mcp-Param-Region missing', call('hm-13', 'weather', W, { ...WH, 'mcp-param-region': undefined }), 'Mcp-Param-Region', 'missing'],
    ['Mcp-Param-Region: undecodable Base64', call('hm-14', 'weather', W, { ...WH, 'mcp-param-region': '=?base64?%%?=' }), 'Mcp-Param-Region', 'undecodable'],
    ['Mcp-Param-Days: another number', call('hm-15', 'weather', W, { ...WH, 'mcp-param-days': '4' }), 'Mcp-Param-Days', 'mismatch'],
    ['Mcp-Param-Metric: not the boolean', call('hm-16', 'weather', W, { ...WH, 'mcp-param-metric': 'True' }), 'Mcp-Param-Metric', 'mismatch'],
    ['Mcp-Param-Days for an argument the body does not carry', call('hm-17', 'weather', { region: 'us' }, { 'mcp-param-region': 'us', 'mcp-param-days': '3' }), 'Mcp-Param-Days', 'mismatch'],
  ];

  for (const [what, req, header, reason] of rejected) {
    test(`${what}: 400 -32020 from mcpwarden, never forwarded`, T, async () => {
      const seen = peer.received.length;
      const r = await post(warden.url, req.body, req.headers);
      assert.equal(r.status, 400, r.text);
      const body = r.json();
      assert.equal(body.jsonrpc, '2.0');
      assert.equal(body.id, req.body.id);
      assert.equal(body.error.code, -32020);
      assert.equal(typeof body.error.message, 'string');
      assert.ok(!body.error.message.includes('\n'));
      assert.equal(body.error.data?.header, header, `answered by mcpwarden: ${r.text}`);
      assert.equal(body.error.data?.reason, reason);
      await sleep(50);
      assert.equal(receivedWithId(peer, req.body.id).length, 0, 'the upstream saw it');
      assert.equal(peer.received.length, seen);
    });
  }

  test('raw bytes: non-ASCII in Mcp-Name, a repeated Mcp-Name, a control character: 400, never forwarded', T, async () => {
    const cases = [
      ['hm-raw-1', [['Mcp-Name', 'caf\xe9']], 'invalid_characters'],
      ['hm-raw-2', [['Mcp-Name', 'echo'], ['Mcp-Name', 'weather']], 'repeated'],
      ['hm-raw-3', [['Mcp-Name', 'echo'], ['Mcp-Param-Other', 'a\x01b']], null],
    ];
    for (const [id, extra, reason] of cases) {
      const { body } = modernRequest(id, 'tools/call', { name: 'echo', arguments: { message: 'x' } });
      const json = JSON.stringify(body);
      const headers = [['Host', '127.0.0.1'], ['Content-Type', 'application/json'],
        ['Accept', 'application/json, text/event-stream'], ['MCP-Protocol-Version', V2026],
        ['Mcp-Method', 'tools/call'], ...extra, ['Content-Length', String(Buffer.byteLength(json))]];
      const res = await rawExchange(warden.port, rawRequestBytes('POST /mcp HTTP/1.1', headers, json));
      assert.equal(res.status, 400, `${id}: ${res.head}\n${res.text}`);
      if (reason) {
        const e = JSON.parse(res.text);
        assert.equal(e.error.code, -32020, res.text);
        assert.equal(e.error.data?.reason, reason, res.text);
      }
      await sleep(50);
      assert.equal(receivedWithId(peer, id).length, 0, `${id} reached the upstream`);
    }
  });

  test('accepted: Base64 Mcp-Name, numeric Mcp-Param, unknown Mcp-Param-* untouched, notifications', T, async () => {
    const ok = [
      call('hm-ok-1', 'echo', { message: 'x' }, { 'mcp-name': b64('echo') }),
      call('hm-ok-2', 'weather', W, { ...WH, 'mcp-param-days': '03' }),
      call('hm-ok-3', 'weather', W, { ...WH, 'mcp-param-region': b64('us'), 'mcp-param-future': 'anything at all' }),
    ];
    for (const req of ok) {
      const r = await post(warden.url, req.body, req.headers);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json().result.resultType, 'complete');
      const got = receivedWithId(peer, req.body.id);
      assert.equal(got.length, 1);
      for (const [k, v] of Object.entries(req.headers)) {
        if (k.startsWith('mcp-')) assert.equal(got[0].headers[k], v, `${k} forwarded untouched`);
      }
    }
    // The SDK client's listen cancellation: a notification without Mcp-Method.
    const n = {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'listen:none', _meta: envelope() },
    };
    const r = await post(warden.url, n, { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': V2026 });
    assert.equal(r.status, 202, r.text);
    // A stateful-era request is never checked: its headers are the upstream's business.
    const legacy = { jsonrpc: '2.0', id: 'hm-legacy', method: 'tools/call', params: { name: 'echo', arguments: { message: 'old' } } };
    const l = await post(warden.url, legacy, { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-method': 'nonsense' });
    assert.equal(receivedWithId(peer, 'hm-legacy').length, 1, l.text);
  });
});

// ---- mcpwarden's own errors in the era's shape ------------------------------------
//
// 502 for a 2026 request carries an application code outside -32768..-32000
// (-31502, see mirror_proxy_code); the stateful era keeps -32000. The first
// case needs mirror_proxy_code() wired into transport_http.c.

describe('mcpwarden\'s own errors follow the request\'s era (needs mirror_proxy_code wired)', () => {
  let warden;

  before(async () => {
    const wp = await freePort();
    const dead = await closedPort();
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', `http://127.0.0.1:${dead}/mcp`,
      '--connect-timeout', '1000']);
  }, T);

  after(async () => {
    await stopAll();
  });

  test('upstream unreachable, 2026-07-28 request: 502 with -31502 and the request id', T, async () => {
    const r = modernRequest('dead-1', 'server/discover');
    const res = await post(warden.url, r.body, r.headers);
    assert.equal(res.status, 502, res.text);
    const e = res.json();
    assert.equal(e.id, 'dead-1');
    assert.equal(e.error.code, -31502, res.text);
  });

  test('upstream unreachable, stateful request: 502 with -32000', T, async () => {
    const body = { jsonrpc: '2.0', id: 'dead-2', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const res = await post(warden.url, body, { 'content-type': 'application/json', accept: 'application/json, text/event-stream' });
    assert.equal(res.status, 502, res.text);
    assert.equal(res.json().error.code, -32000);
    assert.equal(res.json().id, 'dead-2');
  });
});

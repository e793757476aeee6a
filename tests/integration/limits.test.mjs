// Limits and slow clients (issue 9, point 4). Every limit the issue names
// has a case here or in the file conf/README.md's limits table points to:
//
//   slowloris / header_ms      a head trickled a byte at a time: 408, while
//                              another client is served at once
//   body_ms                    a body that stalls: 408
//   max_connections_per_client 503 past an address's share
//   max_json_depth             400 before the upstream
//   max_header_bytes           431 for a client's head; 502 for an
//                              upstream's (both in bytes and in fields)
//   max_sse_event_bytes        one huge upstream event: the POST's request
//                              gets a JSON-RPC error event and a clean end;
//                              a GET stream is cut; smaller events pass
//   max_batch                  400 past it
//   max_connections            accepting pauses: the next connection waits
//                              in the kernel's queue and is served when one
//                              closes
//   client_idle_ms             an idle keep-alive connection is closed; a
//                              client quiet while its call runs is not
//   upstream_idle_ms           a pooled connection reused for a call that
//                              outlasts it is not cut
//   connect_ms                 an upstream whose accept queue is full (the
//                              connect hangs): 502 once it runs out
//   max_sessions               a third translated session: 503
//   max_session_pending        a third request in flight in a translated
//                              session: a JSON-RPC error with its id
//
// Per-session caps of pass-through sessions: sesslimit.test.mjs. Body size:
// bad-input.test.mjs. Upstream first byte and whole reply (request_ms):
// faults.test.mjs.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { freePort } from './lib/ports.mjs';
import { spawnTracked, startEverything, startWarden, stopAll } from './lib/procs.mjs';
import { openRaw, openStream, postJson, rawRequestBytes } from './lib/http.mjs';
import { assertRpcError } from './lib/assert-rpc.mjs';
import { writeConfig } from './lib/conf.mjs';
import { legacyStream, INIT } from './lib/translate-util.mjs';
import { sleep, waitFor, withTimeout } from './lib/util.mjs';
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

  test('max_json_depth is a bound, not a cut-off below it: 16 levels pass, 17 are refused', T, async () => {
    // The body nests 3 objects (message, params, arguments) around `deep`.
    const body = (k) => {
      let deep = 'null';
      for (let i = 0; i < k; i++) deep = i % 2 ? `{"x":${deep}}` : `[${deep}]`;
      return `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{"a":${deep}}}}`;
    };
    const n = peer.received.length;
    const ok = await postJson(warden.url, body(13));
    assert.equal(ok.status, 200, ok.body);
    assert.equal(peer.received.length, n + 1, 'the 16-level call reached the upstream');
    const refused = await postJson(warden.url, body(14));
    assert.equal(refused.status, 400);
    assert.match(JSON.parse(refused.body).error.message, /nested too deeply/);
    assert.equal(peer.received.length, n + 1);
  });
});

// ---- sizes: headers both ways, SSE events, batches --------------------------

const MAX_HEADER = 8192;
const MAX_EVENT = 4096;

// An upstream that oversteps on request (X-Test-Mode): 'big-headers' and
// 'many-headers' reply heads over max_header_bytes (in bytes, in fields);
// 'sse-event' an SSE reply with a progress event, then the response as one
// event padded to X-Size bytes; on GET, the same padded event then holds.
async function oversizePeer() {
  const received = [];
  const sockets = new Set();
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      const rec = { mode: req.headers['x-test-mode'], method: req.method, body, closedAt: null };
      received.push(rec);
      req.socket.once('close', () => { rec.closedAt = Date.now(); });
      const msg = body ? JSON.parse(body) : null;
      const size = Number(req.headers['x-size'] ?? 100);
      const reply = (extra) => JSON.stringify({ jsonrpc: '2.0', id: msg?.id ?? null, result: { ok: true, ...extra } });
      switch (rec.mode) {
        case 'big-headers':
          res.setHeader('X-Big', 'b'.repeat(MAX_HEADER + 100));
          res.setHeader('Content-Type', 'application/json');
          res.end(reply());
          return;
        case 'many-headers':
          for (let i = 0; i < 120; i++) res.setHeader(`X-H${i}`, 'v');
          res.setHeader('Content-Type', 'application/json');
          res.end(reply());
          return;
        case 'sse-event': {
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } };
          res.write(`event: message\ndata: ${JSON.stringify(progress)}\n\n`);
          const base = reply({ pad: '' });
          const padded = reply({ pad: 'x'.repeat(Math.max(0, size - base.length)) });
          res.write(`event: message\ndata: ${padded}\n\n`);
          if (req.method === 'GET') return; // a stream: held open
          res.end();
          return;
        }
        case 'sse-answered-then-big': {
          // the response first, then a notification over the cap
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          res.write(`event: message\ndata: ${reply()}\n\n`);
          const note = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(size) } };
          res.write(`event: message\ndata: ${JSON.stringify(note)}\n\n`);
          res.end();
          return;
        }
        default:
          res.setHeader('Content-Type', 'application/json');
          res.end(reply());
      }
    });
  });
  srv.on('connection', (s) => { sockets.add(s); s.once('close', () => sockets.delete(s)); });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}/mcp`,
    received,
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); srv.close(() => r()); }),
  };
}

describe('size limits: headers both ways, SSE events, batches', () => {
  let up;
  let w;

  before(async () => {
    up = await oversizePeer();
    const wp = await freePort();
    w = await startWarden(wp, ['-c', writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [{ url: up.url }],
      limits: { max_header_bytes: MAX_HEADER, max_sse_event_bytes: MAX_EVENT, max_batch: 2 },
      admin: { listen: 'off' },
    })]);
  }, T);

  after(async () => {
    await stopAll();
    await up?.close();
  });

  const head = (port, extra) => rawRequestBytes('POST /mcp HTTP/1.1', [
    ['Host', `127.0.0.1:${port}`], ['Content-Type', 'application/json'], ['Accept', 'application/json, text/event-stream'],
    ...extra, ['Content-Length', '2'],
  ], '{}');

  for (const [what, extra] of [
    [`a head over max_header_bytes (${MAX_HEADER})`, [['X-Pad', 'p'.repeat(MAX_HEADER)]]],
    ['101 header fields (the most is 100)', Array.from({ length: 101 }, (_, i) => [`X-F${i}`, 'v'])],
  ]) {
    test(`client: ${what} → 431 with a JSON-RPC error, connection closed`, T, async () => {
      const n = up.received.length;
      const c = await openRaw(w.port);
      try {
        await c.write(head(w.port, extra));
        const res = await c.readResponse({ timeout: 3000 });
        assertRpcError({ ...res, text: res.text }, { status: 431, code: -32600, id: null, messageIncludes: ['headers too large'] });
        assert.ok(await c.waitClosed(3000), 'connection closed');
      } finally {
        c.close();
      }
      assert.equal(up.received.length, n, 'nothing reached the upstream');
    });
  }

  test('a head just under max_header_bytes is served', T, async () => {
    const res = await postJson(w.url, ping(5), { headers: { 'x-pad': 'p'.repeat(MAX_HEADER - 600) } });
    assert.equal(res.status, 200, res.text);
  });

  for (const mode of ['big-headers', 'many-headers']) {
    test(`upstream: a reply head too large (${mode}) → 502 with the request's id`, T, async () => {
      const res = await postJson(w.url, ping(`h-${mode}`), { headers: { 'x-test-mode': mode } });
      assertRpcError(res, { status: 502, code: -32000, id: `h-${mode}`, messageIncludes: ['headers are too large'] });
    });
  }

  test('an SSE event under max_sse_event_bytes passes whole', T, async () => {
    const st = await openStream(w.url, {
      method: 'POST', body: JSON.stringify(ping(6)),
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-test-mode': 'sse-event', 'x-size': String(MAX_EVENT - 200) },
    });
    assert.equal(st.status, 200);
    assert.equal((await st.ended).how, 'end');
    const msgs = st.sse.messages();
    assert.equal(msgs.length, 2);
    assert.equal(msgs[1].id, 6);
    assert.equal(msgs[1].result.pad.length > MAX_EVENT - 400, true);
  });

  test('an SSE event over max_sse_event_bytes: the request gets a JSON-RPC error event, a clean end', T, async () => {
    const st = await openStream(w.url, {
      method: 'POST', body: JSON.stringify(ping('big-ev')),
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-test-mode': 'sse-event', 'x-size': String(MAX_EVENT * 3) },
    });
    assert.equal(st.status, 200);
    const end = await st.ended;
    assert.equal(end.how, 'end', 'ended with the terminating chunk: the client has its answer');
    const msgs = st.sse.messages();
    assert.equal(msgs.length, 2, st.text());
    assert.equal(msgs[0].method, 'notifications/progress', 'events before the big one arrive');
    assert.equal(msgs[1].id, 'big-ev');
    assert.equal(msgs[1].error.code, -32000);
    assert.match(msgs[1].error.message, /max_sse_event_bytes/);
    assert.ok(!st.text().includes('x'.repeat(MAX_EVENT)), 'nothing of the big event is passed on');
    const rec = up.received.at(-1);
    await waitFor(() => rec.closedAt !== null, { timeout: 3000, what: 'upstream connection closed' });
    assert.match(w.proc.stderr, /an SSE event from the upstream is over the size limit/);
    assert.equal((await postJson(w.url, ping(7))).status, 200, 'next request served');
  });

  test('an SSE event over max_sse_event_bytes after the response: no second answer, a clean end', T, async () => {
    const st = await openStream(w.url, {
      method: 'POST', body: JSON.stringify(ping('once')),
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-test-mode': 'sse-answered-then-big', 'x-size': String(MAX_EVENT * 3) },
    });
    assert.equal(st.status, 200);
    assert.equal((await st.ended).how, 'end');
    const msgs = st.sse.messages();
    assert.equal(msgs.length, 1, st.text());
    assert.equal(msgs[0].id, 'once');
    assert.ok(msgs[0].result && !msgs[0].error, 'the upstream\'s answer, the only one');
    assert.equal((await postJson(w.url, ping(8))).status, 200, 'next request served');
  });

  test('a GET stream with an event over max_sse_event_bytes is cut after the events before it', T, async () => {
    const st = await openStream(w.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': 'sess-big', 'x-test-mode': 'sse-event', 'x-size': String(MAX_EVENT * 3) },
    });
    assert.equal(st.status, 200);
    const end = await st.ended;
    assert.equal(end.how, 'aborted');
    assert.deepEqual(st.sse.messages().map((m) => m.method), ['notifications/progress']);
  });

  test(`a batch over max_batch (2) → 400 before the upstream`, T, async () => {
    const n = up.received.length;
    const res = await postJson(w.url, [ping(1), ping(2), ping(3)], { headers: { 'mcp-protocol-version': '2025-03-26' } });
    assertRpcError(res, { status: 400, code: -32600, id: null });
    assert.equal(up.received.length, n);
    const ok = await postJson(w.url, [ping(1), ping(2)], { headers: { 'mcp-protocol-version': '2025-03-26' } });
    assert.equal(ok.status, 200, ok.text);
  });
});

// ---- connections and timeouts ------------------------------------------------

// A listener that never accepts, with a backlog of 0: once one connection
// fills its queue, the kernel drops further SYNs and a connect() hangs, as
// to a host that does not answer. perl (perl-base is Essential in Debian)
// because node always accepts.
async function blackhole() {
  const script = `use Socket; socket(my $s, PF_INET, SOCK_STREAM, 0) or die;
    bind($s, pack_sockaddr_in(0, inet_aton("127.0.0.1"))) or die; listen($s, 0) or die;
    my ($p) = unpack_sockaddr_in(getsockname($s)); $| = 1; print "$p\\n"; sleep 120;`;
  const h = spawnTracked('blackhole', 'perl', ['-e', script]);
  const port = Number((await h.waitForStdout(/^(\d+)$/m))[1]);
  const filler = await openRaw(port);
  return { port, proc: h, close: () => { filler.close(); h.child.kill('SIGKILL'); } };
}

/** A JSON-RPC POST's bytes for a raw connection. */
function rawPost(port, msg, extra = []) {
  const body = Buffer.from(JSON.stringify(msg));
  return rawRequestBytes('POST /mcp HTTP/1.1', [['Host', `127.0.0.1:${port}`],
    ['Content-Type', 'application/json'], ...extra, ['Content-Length', String(body.length)]], body);
}

describe('connections and timeouts: max_connections, client_idle_ms, connect_ms', () => {
  let peer;
  let hole;
  let w;
  const MAXC = 3;

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'conns' });
    hole = await blackhole();
    const wp = await freePort();
    w = await startWarden(wp, ['-c', writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [
        { name: 'ok', url: peer.url },
        { name: 'hole', path: '/hole/mcp', url: `http://127.0.0.1:${hole.port}/mcp`, timeouts: { connect_ms: 600, request_ms: 5000 } },
      ],
      timeouts: { client_idle_ms: 800, upstream_idle_ms: 500 },
      limits: { max_connections: MAXC },
      admin: { listen: 'off' },
    })]);
  }, T);

  after(async () => {
    await stopAll();
    hole?.close();
    await peer?.close();
  });

  test(`max_connections (${MAXC}): the next connection waits until one closes, then is served`, T, async () => {
    // Each held connection is kept busy past client_idle_ms by a request
    // that is never answered (the scripted peer's silent mode).
    const held = [];
    for (let k = 0; k < MAXC; k++) {
      const c = await openRaw(w.port);
      await c.write(rawPost(w.port, ping(70 + k), [['X-Test-Mode', 'silent']]));
      held.push(c);
    }
    await waitFor(() => /3 streamable_http connections open: not accepting more/.test(w.proc.stderr),
      { timeout: 3000, what: 'the listener pausing' });
    const waiting = await openRaw(w.port); // the kernel completes the handshake
    await waiting.write(rawPost(w.port, ping(77)));
    await assert.rejects(waiting.readResponse({ timeout: 700 }), /timed out/, 'not served past the cap');
    const t0 = Date.now();
    held[0].close();
    const res = await waiting.readResponse({ timeout: 3000 });
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.text).id, 77);
    assert.ok(Date.now() - t0 < 1000, 'served as soon as a slot freed');
    for (const c of [...held, waiting]) c.close();
  });

  test('client_idle_ms: an idle keep-alive connection is closed, without a reply', T, async () => {
    await sleep(300); // the previous test's connections are gone
    const c = await openRaw(w.port);
    await c.write(rawPost(w.port, ping(78)));
    const res = await c.readResponse({ timeout: 3000 });
    assert.equal(res.status, 200);
    const t0 = Date.now();
    const closedAt = await c.closed;
    const idle = closedAt - t0;
    assert.ok(idle >= 700 && idle < 2000, `closed after ${idle} ms idle (client_idle_ms 800)`);
    assert.equal(c.buf.length, 0, 'nothing sent on an idle close');
  });

  test('a streamed reply: its head leaves before the first event, each event as it comes (pieces of one turn are written together)', T, async () => {
    // slow-sse: the upstream sends its head at once, then an event every
    // 300 ms. The proxy coalesces what one loop turn produces into one
    // write; that must not hold a head or an event back to the next piece.
    const st = await openStream(w.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'x-test-mode': 'slow-sse' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'sl', method: 'tools/call',
        params: { name: 'x', arguments: {}, _meta: { progressToken: 'p' } } }),
    });
    assert.equal(st.status, 200);
    assert.match(st.headers['content-type'], /^text\/event-stream/);
    assert.ok(st.tHead - st.t0 < 250, `head after ${st.tHead - st.t0} ms: before the first event (300 ms)`);
    const end = await withTimeout(st.ended, 8000, 'the streamed reply');
    assert.equal(end.how, 'end');
    const ts = st.sse.events.filter((e) => e.data).map((e) => e.t);
    assert.equal(ts.length, 6, 'five progress events and the result');
    for (let i = 1; i < ts.length; i++)
      assert.ok(ts[i] - ts[i - 1] >= 150, `event ${i} came ${ts[i] - ts[i - 1]} ms after the one before: each as it came`);
  });

  test('idle timeouts only end idle connections: a call outlasting client_idle_ms and upstream_idle_ms on reused connections is answered', T, async () => {
    await sleep(300);
    const c = await openRaw(w.port);
    // A quick call first: the client connection is kept alive and the
    // upstream connection goes back to the pool, its idle timeout set.
    await c.write(rawPost(w.port, ping(90)));
    assert.equal((await c.readResponse({ timeout: 3000 })).status, 200);
    const before = peer.received.length;
    // Then, on both reused connections, 1.8 s of silence before the answer:
    // over client_idle_ms (800) and upstream_idle_ms (500) more than twice.
    const t0 = Date.now();
    await c.write(rawPost(w.port, ping(91), [['X-Test-Mode', 'late-json'], ['X-Test-Delay-Ms', '1800']]));
    const res = await c.readResponse({ timeout: 6000 });
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.text).id, 91);
    assert.ok(Date.now() - t0 >= 1700, 'the answer came after the upstream\'s silence');
    assert.equal(peer.received.length, before + 1, 'the call reached the upstream once, not retried');
    // And the client connection is still usable.
    await c.write(rawPost(w.port, ping(92)));
    assert.equal(JSON.parse((await c.readResponse({ timeout: 3000 })).text).id, 92);
    c.close();
  });

  test('connect_ms: an upstream that does not accept → 502 naming the timeout, the request\'s id', T, async () => {
    const t0 = Date.now();
    const res = await postJson(`${w.base}/hole/mcp`, ping('cto'), { timeout: 6000 });
    const took = Date.now() - t0;
    assertRpcError(res, { status: 502, code: -32000, id: 'cto', messageIncludes: ['connect timed out'] });
    assert.ok(took >= 550 && took < 2500, `502 after ${took} ms (connect_ms 600)`);
    assert.equal((await postJson(w.url, ping(79))).status, 200, 'other upstreams unaffected');
  });
});

// ---- translated sessions ---------------------------------------------------------

describe('translated sessions: max_sessions and max_session_pending', () => {
  let se;
  let w;

  before(async () => {
    se = await startEverything(await freePort());
    const wp = await freePort();
    w = await startWarden(wp, ['-c', writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [{ url: se.url, transport: 'streamable_http' }],
      limits: { max_sessions: 2, max_session_pending: 2 },
      admin: { listen: 'off' },
    })]);
  }, { timeout: 30000 });

  after(async () => {
    await stopAll();
  });

  test('max_sessions (2): a third legacy session gets 503 with a JSON-RPC error; one ending frees its place', T, async () => {
    const a = await legacyStream(`${w.base}/sse`);
    const b = await legacyStream(`${w.base}/sse`);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    const c = await legacyStream(`${w.base}/sse`);
    assert.equal(c.status, 503);
    await c.st.ended;
    const body = JSON.parse(c.st.text());
    assert.equal(body.jsonrpc, '2.0');
    assert.match(body.error.message, /too many sessions/);
    b.st.abort();
    await waitFor(async () => {
      const d = await legacyStream(`${w.base}/sse`);
      if (d.status === 200) { d.st.abort(); return true; }
      return false;
    }, { timeout: 3000, what: 'a place freed' });
    a.st.abort();
  });

  test('max_session_pending (2): a third request in flight gets a JSON-RPC error with its id', T, async () => {
    await sleep(200);
    const l = await legacyStream(`${w.base}/sse`);
    assert.equal(l.status, 200);
    try {
      assert.equal((await l.post(INIT(1))).status, 202);
      await l.waitMessage((m) => m.id === 1);
      await l.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const long = (id) => ({ jsonrpc: '2.0', id, method: 'tools/call',
        params: { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 2 } } });
      assert.equal((await l.post(long(2))).status, 202);
      assert.equal((await l.post(long(3))).status, 202);
      assert.equal((await l.post(long(4))).status, 202);
      const err = await l.waitMessage((m) => m.id === 4, 3000);
      assert.match(err.error?.message ?? '', /too many requests in flight/);
      for (const id of [2, 3]) {
        const r = await l.waitMessage((m) => m.id === id, 8000);
        assert.ok(r.result, JSON.stringify(r));
      }
    } finally {
      l.st.abort();
    }
  });
});

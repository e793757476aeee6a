// Worker threads (--workers N): every test runs ./mcpwarden with exactly two
// workers, each its own libevent loop bound to the client port with
// SO_REUSEPORT, so the kernel spreads connections by a hash of their
// 4-tuple. What must hold whichever worker a connection lands on:
//
//   1. load spreads, and the admin endpoint (worker 0) sees one proxy:
//      every call recorded once, counters summed over the workers;
//   2. a legacy SSE session lives on the worker that opened its stream;
//      POSTs for it that land on the other worker are handed over and
//      answered on the session's own stream, exactly once;
//   3. the same for Streamable clients in front of a legacy SSE upstream;
//   4. SIGHUP reaches every worker (a reloaded policy applies everywhere,
//      and one that fails to load leaves the old one everywhere);
//   5. SIGTERM drains every worker's calls in flight, then exit 0;
//   6. limits.max_connections is one cap shared by the workers;
//   7. a second mcpwarden cannot silently share a port with a running one.
//
// Counters per worker come from /metrics: mcpwarden_worker_connections_total,
// mcpwarden_worker_requests_total, mcpwarden_worker_handoffs_total, each
// with a worker="i" label. The admin listener lives on worker 0, so its own
// requests may count there; scrapeDelta() below takes them out.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Readable } from 'node:stream';
import { writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { freePort } from './lib/ports.mjs';
import { startEverything, startWarden, runWarden, reloadWarden, stop, stopAll } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { openRaw, postJson, rawRequestBytes, SseParser } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout, waitFor } from './lib/util.mjs';
import { startAdminWardenQuiet, adminGet, getCalls, metricValue } from './lib/admin-util.mjs';
import { startEverythingSse, legacyStream, INIT } from './lib/translate-util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';

const T = { timeout: 90000 };
const WORKERS = 2;
const POLICY_CODE = -32001;
const PROTO = '2025-06-18';

// ---- helpers --------------------------------------------------------------------

/** The per-worker samples of a worker_* counter: [w0, w1], both present. */
function perWorker(text, name) {
  const v = [];
  for (let i = 0; i < WORKERS; i++) {
    const x = metricValue(text, name, { worker: String(i) });
    assert.equal(typeof x, 'number', `${name}{worker="${i}"} missing from /metrics:\n${text}`);
    v.push(x);
  }
  assert.equal(metricValue(text, name, { worker: String(WORKERS) }), undefined,
    `${name} has a worker="${WORKERS}" sample with --workers ${WORKERS}`);
  return v;
}

const scrape = async (admin) => {
  const r = await adminGet(admin, '/metrics');
  assert.equal(r.status, 200, r.text);
  return r.text;
};

/**
 * What the clients did between two scrapes, per worker, without the admin
 * endpoint's own traffic: scrape `a` before, `b` after, then `c` at once
 * (no client traffic between b and c). Whatever one scrape adds to a
 * counter (its own connection and request on worker 0, if counted) is
 * c - b; the clients' part is (b - a) - (c - b), less c - b again for
 * each of `scrapesBetween` other scrapes made after a.
 */
async function scrapeDelta(admin, a, { scrapesBetween = 0 } = {}) {
  const b = await scrape(admin);
  const c = await scrape(admin);
  const out = {};
  for (const n of ['connections', 'requests', 'handoffs']) {
    const name = `mcpwarden_worker_${n}_total`;
    const [va, vb, vc] = [a, b, c].map((t) => perWorker(t, name));
    out[n] = va.map((x, i) => (vb[i] - x) - (1 + scrapesBetween) * (vc[i] - vb[i]));
  }
  out.text = b;
  return out;
}

// close() aborts the SDK's GET stream, which it reports as an error: not
// a transport failure.
const realErrors = (s) => s.errors.map(String).filter((e) => !/AbortError|aborted/i.test(e));

/**
 * scrapeDelta against one baseline `m0`, again and again: each call's
 * correction counts the scrapes the earlier calls made after m0.
 * until(pred) scrapes until pred(delta) holds (a counter reached what the
 * test sent) and returns that delta.
 */
function deltas(admin, m0) {
  let calls = 0;
  const once = () => scrapeDelta(admin, m0, { scrapesBetween: 2 * calls++ });
  return {
    once,
    async until(pred, what, timeout = 10000) {
      let d;
      await waitFor(async () => pred(d = await once()), { timeout, interval: 20, what })
        .catch((e) => { throw new Error(`${e.message}; last: connections ${JSON.stringify(d?.connections)} requests ${JSON.stringify(d?.requests)}`); });
      return d;
    },
  };
}

const sum = (xs) => xs.reduce((s, x) => s + x, 0);

/** Stop a warden with SIGTERM; it must exit 0 (every worker's loop ended). */
async function stopClean(w) {
  const st = await stop(w.proc, { grace: 10000 });
  assert.doesNotMatch(w.proc.stderr, /AddressSanitizer|LeakSanitizer|runtime error:/,
    `sanitizer report:\n${w.proc.stderr.slice(-6000)}`);
  assert.equal(st?.code, 0, `mcpwarden exit ${JSON.stringify(st)}\n${w.proc.stderr.slice(-3000)}`);
}

/** The JSON-RPC messages of a POST reply, JSON or a (buffered) SSE stream. */
function replyMessages(r) {
  const ct = r.headers['content-type'] ?? '';
  if (/^application\/json/.test(ct)) return [r.json()].flat();
  assert.match(ct, /^text\/event-stream/, `status ${r.status}: ${r.text}`);
  const p = new SseParser();
  p.feed(r.text);
  return p.events.filter((e) => e.event === 'message' && e.data).map((e) => JSON.parse(e.data));
}

/**
 * A fetch() for the SDK that opens a NEW TCP connection for every request
 * (node:http, agent: false). Node's global fetch keeps one keep-alive pool
 * per process, so SDK clients would otherwise reuse a few connections and
 * the kernel would rarely get the chance to send a session's requests to
 * the other worker. `log` gets {method, status} per response.
 */
function freshConnFetch(log) {
  return (input, init = {}) => new Promise((resolve, reject) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const headers = {};
    new Headers(init.headers ?? {}).forEach((v, k) => { headers[k] = v; });
    const method = init.method ?? 'GET';
    const req = http.request(url, { method, headers, agent: false, signal: init.signal ?? undefined }, (res) => {
      log.push({ method, status: res.statusCode });
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) h.set(k, Array.isArray(v) ? v.join(', ') : v);
      const noBody = [101, 204, 205, 304].includes(res.statusCode);
      resolve(new Response(noBody ? null : Readable.toWeb(res),
        { status: res.statusCode, statusText: res.statusMessage, headers: h }));
    });
    req.on('error', reject);
    req.end(init.body ?? undefined);
  });
}

/** The official SDK client over Streamable HTTP, one connection per request. */
async function connectFresh(url, name) {
  const log = [];
  const errors = [];
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: freshConnFetch(log),
    reconnectionOptions: {
      initialReconnectionDelay: 100, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 2,
    },
  });
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  client.onerror = (e) => errors.push(e);
  await withTimeout(client.connect(transport), CALL_TIMEOUT, `SDK connect to ${url}`);
  return {
    client, transport, log, errors,
    close: () => withTimeout(client.close(), 3000, 'SDK client close').catch(() => {}),
  };
}

const echo = (client, message) => withTimeout(
  client.callTool({ name: 'echo', arguments: { message } }, undefined, { timeout: CALL_TIMEOUT }),
  CALL_TIMEOUT + 1000, `echo ${message}`);

/** initialize + notifications/initialized on fresh connections: the session's headers. */
async function rawSession(url) {
  const init = await postJson(url, INIT(0));
  assert.equal(init.status, 200, init.text);
  const sid = init.headers['mcp-session-id'];
  assert.ok(sid, `no Mcp-Session-Id: ${JSON.stringify(init.headers)}`);
  const hdr = { 'mcp-session-id': sid, 'mcp-protocol-version': PROTO };
  const note = await postJson(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: hdr });
  assert.equal(note.status, 202, note.text);
  return hdr;
}

let se; // server-everything, streamableHttp
before(async () => { se = await startEverything(await freePort()); }, { timeout: 30000 });
after(async () => { await stopAll(); });

// ---- 1 ------------------------------------------------------------------------

describe('workers: load spreads, the admin view is one', () => {
  test('12 SDK clients x 5 echo calls: both workers serve, every call recorded once', T, async (t) => {
    const w = await startAdminWardenQuiet({ upstreams: se.url, extra: { workers: WORKERS } });
    try {
      const m0 = await scrape(w.admin);
      const N = 12;
      const CALLS = 5;
      // Node's fetch pools connections per process, so besides the SDK
      // clients' own requests each client also sends one ping on a
      // connection of its own (agent: false): at least 12 fresh connections
      // for the kernel to spread, whatever the pool does.
      const clients = await Promise.all(Array.from({ length: N }, (_, i) =>
        connectClient(w.url, { name: `spread-${i}` })));
      let raw = 0;
      try {
        await Promise.all(clients.map(async (s, i) => {
          for (let k = 0; k < CALLS; k++) {
            const msg = `c${i}-k${k}`;
            const r = await echo(s.client, msg);
            assert.equal(r.content?.[0]?.text, `Echo: ${msg}`, JSON.stringify(r));
          }
          const hdr = { 'mcp-session-id': s.transport.sessionId, 'mcp-protocol-version': s.transport.protocolVersion };
          const p = await postJson(w.url, { jsonrpc: '2.0', id: `raw-${i}`, method: 'ping' }, { headers: hdr });
          raw++;
          assert.equal(p.status, 200, p.text);
          assert.deepEqual(replyMessages(p), [{ jsonrpc: '2.0', id: `raw-${i}`, result: {} }]);
        }));
        // The SDK opens its GET stream after initialization, on its own;
        // wait for each to be answered so the request count below is exact.
        await waitFor(() => clients.every((s) => s.fetchLog.some((f) => f.method === 'GET')),
          { timeout: 5000, what: 'every SDK client\'s GET stream' });
      } finally {
        await Promise.all(clients.map((s) => s.close()));
      }
      for (const s of clients) assert.deepEqual(realErrors(s), [], 'SDK transport errors');
      const sdkRequests = sum(clients.map((s) => s.fetchLog.length));
      // A request is counted when it is read, so each answered one is in;
      // wait on the counter rather than a pause, then check it exactly.
      const d = await deltas(w.admin, m0).until((x) => sum(x.requests) >= sdkRequests + raw,
        `${sdkRequests + raw} requests counted`);
      const ctx = `connections ${JSON.stringify(d.connections)} requests ${JSON.stringify(d.requests)}`;
      t.diagnostic(`per worker: ${ctx}`);
      assert.ok(d.connections[0] > 0 && d.connections[1] > 0,
        `client connections on both workers: ${ctx}`);
      assert.ok(sum(d.connections) >= N, `at least the ${N} raw connections: ${ctx}`);
      assert.ok(d.requests[0] > 0 && d.requests[1] > 0, `requests on both workers: ${ctx}`);
      assert.equal(sum(d.requests), sdkRequests + raw,
        `worker requests summed = HTTP requests made (${sdkRequests} by the SDK, ${raw} raw): ${ctx}`);
      assert.deepEqual(perWorker(d.text, 'mcpwarden_worker_handoffs_total'), [0, 0],
        'no translated sessions here: nothing to hand over');
      // Present for each worker; how often a loop gave its core away
      // depends on the machine's load (proxy/net/loop.h).
      assert.ok(perWorker(d.text, 'mcpwarden_worker_yields_total').every((x) => x >= 0));
      assert.equal(metricValue(d.text, 'mcpwarden_tool_calls_total', { tool: 'echo', outcome: 'ok' }), N * CALLS,
        'tool-call counter, summed over the workers');

      const calls = (await getCalls(w.admin, 'limit=1024')).calls.filter((c) => c.method === 'tools/call');
      assert.equal(calls.length, N * CALLS, `tools/call records: ${calls.length}`);
      assert.ok(calls.every((c) => c.tool === 'echo' && c.outcome === 'ok'), JSON.stringify(calls.slice(0, 3)));
      // JSON-RPC ids restart in every SDK session: (session, id) is the key.
      assert.equal(new Set(calls.map((c) => `${c.session} ${JSON.stringify(c.id)}`)).size, N * CALLS,
        'distinct (session, id)');
      assert.equal(new Set(calls.map((c) => c.seq)).size, N * CALLS, 'distinct seq');
      assert.equal(new Set(calls.map((c) => c.session)).size, N, 'one session per client');
      const want = [];
      for (let i = 0; i < N; i++) for (let k = 0; k < CALLS; k++) want.push(`c${i}-k${k}`);
      assert.deepEqual(calls.map((c) => JSON.parse(c.arguments).message).sort(), want.sort(),
        'each call recorded exactly once');
    } finally {
      await stopClean(w);
    }
  });
});

// ---- 2 ------------------------------------------------------------------------

describe('workers: legacy SSE sessions across workers', () => {
  test('4 legacy clients, every POST on a new connection: 202, one answer on the own stream', T, async (t) => {
    const w = await startAdminWardenQuiet({ upstreams: se.url, extra: { workers: WORKERS } });
    const streams = [];
    try {
      const m0 = await scrape(w.admin);
      const N = 4;
      const K = 10;
      for (let i = 0; i < N; i++) {
        const l = await legacyStream(`${w.base}/sse`);
        assert.equal(l.status, 200);
        streams.push(l);
      }
      // legacyStream's post() is postJson: node:http with agent: false, so
      // every POST is a new connection with a new source port.
      await Promise.all(streams.map(async (l, i) => {
        const ini = await l.post(INIT(`s${i}-init`));
        assert.equal(ini.status, 202, ini.text);
        await l.waitMessage((m) => m.id === `s${i}-init`, 10000);
        const note = await l.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
        assert.equal(note.status, 202, note.text);
        for (let k = 0; k < K; k++) {
          const id = `s${i}-${k}`;
          const msg = k % 2
            ? { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message: id } } }
            : { jsonrpc: '2.0', id, method: 'ping' };
          const r = await l.post(msg);
          assert.equal(r.status, 202, `${id}: ${r.status} ${r.text}`);
        }
      }));
      await Promise.all(streams.map((l, i) => waitFor(() => {
        const ids = new Set(l.messages().map((m) => m.id));
        for (let k = 0; k < K; k++) if (!ids.has(`s${i}-${k}`)) return false;
        return true;
      }, { timeout: 15000, what: `all ${K} answers on stream ${i}` })));
      // A duplicate or stray answer would be written by the session's
      // worker when the upstream's reply comes in. Instead of a pause, one
      // more ping per session, also on a new connection (maybe handed
      // over too), answered on the same stream: the worker wrote every
      // earlier answer before this one, so once it is in, whatever else
      // the earlier requests produced is in as well.
      await Promise.all(streams.map(async (l, i) => {
        const r = await l.post({ jsonrpc: '2.0', id: `s${i}-last`, method: 'ping' });
        assert.equal(r.status, 202, `s${i}-last: ${r.status} ${r.text}`);
        await l.waitMessage((m) => m.id === `s${i}-last`, 10000);
      }));
      for (const [i, l] of streams.entries()) {
        const msgs = l.messages().filter((m) => m.id !== `s${i}-last`);
        const want = [`s${i}-init`, ...Array.from({ length: K }, (_, k) => `s${i}-${k}`)];
        assert.deepEqual(msgs.map((m) => m.id).sort(), want.sort(), `stream ${i}: each answer once, only its own`);
        for (const m of msgs) {
          if (m.id === `s${i}-init`) assert.ok(m.result?.serverInfo, JSON.stringify(m));
          else if (Number(m.id.split('-')[1]) % 2) assert.equal(m.result?.content?.[0]?.text, `Echo: ${m.id}`, JSON.stringify(m));
          else assert.deepEqual(m.result, {}, JSON.stringify(m));
        }
      }
      const d = await scrapeDelta(w.admin, m0);
      // N GET streams + N*(K+3) POSTs on as many new connections, two
      // reuseport sockets: each POST lands on its session's worker with
      // probability about 1/2, so no handoff at all would take 52 coin
      // tosses coming up the same way (2^-48 or so).
      const ctx = `connections ${JSON.stringify(d.connections)} requests ${JSON.stringify(d.requests)} handoffs ${JSON.stringify(d.handoffs)}`;
      t.diagnostic(`per worker: ${ctx}`);
      assert.ok(sum(d.handoffs) > 0, `requests were handed to the session's worker: ${ctx}`);
      assert.ok(d.connections[0] > 0 && d.connections[1] > 0, ctx);
      // A connection handed over counts again on the worker taking it.
      assert.equal(sum(d.requests), N * (K + 4), `every request read once: ${ctx}`);
      assert.equal(sum(d.connections) - sum(d.handoffs), N * (K + 4), `one connection per request: ${ctx}`);
    } finally {
      for (const l of streams) l.st.abort();
      await stopClean(w);
    }
  });
});

// ---- 3 ------------------------------------------------------------------------

describe('workers: Streamable clients, legacy SSE upstream', () => {
  let seSse;
  before(async () => { seSse = await startEverythingSse(await freePort()); }, { timeout: 30000 });
  after(async () => { await stop(seSse?.proc); });

  test('4 SDK clients, one connection per request, 5 echo calls each', T, async (t) => {
    const w = await startAdminWardenQuiet({ upstreams: seSse.url, extra: { workers: WORKERS } });
    const clients = [];
    try {
      const m0 = await scrape(w.admin);
      for (let i = 0; i < 4; i++) clients.push(await connectFresh(w.url, `to-sse-${i}`));
      await Promise.all(clients.map(async (s, i) => {
        for (let k = 0; k < 5; k++) {
          const msg = `t${i}-k${k}`;
          const r = await echo(s.client, msg);
          assert.equal(r.content?.[0]?.text, `Echo: ${msg}`, JSON.stringify(r));
        }
      }));
      for (const s of clients) {
        assert.deepEqual(realErrors(s), [], 'SDK transport errors');
        assert.ok(s.log.filter((f) => f.method === 'POST').length >= 7, JSON.stringify(s.log));
      }
      const d = await scrapeDelta(w.admin, m0);
      const ctx = `connections ${JSON.stringify(d.connections)} requests ${JSON.stringify(d.requests)} handoffs ${JSON.stringify(d.handoffs)}`;
      t.diagnostic(`per worker: ${ctx}`);
      // 4 x (initialize, initialized, 5 calls, the GET stream) on as many
      // connections: as in the legacy case a handoff is all but certain.
      assert.ok(sum(d.connections) >= 4 * 7, `requests on many connections: ${ctx}`);
      assert.ok(d.connections[0] > 0 && d.connections[1] > 0, ctx);
      assert.ok(sum(d.handoffs) > 0, `requests were handed to the session's worker: ${ctx}`);
    } finally {
      await Promise.all(clients.map((s) => s.close()));
      await stopClean(w);
    }
  });
});

// ---- 4 ------------------------------------------------------------------------

describe('workers: SIGHUP reaches every worker', () => {
  test('policy deny -> allow -> deny -> bad file, 10 calls on new connections after each reload', T, async () => {
    const port = await freePort();
    const deny = { default: 'allow', unknown_tools: 'rules', rules: [{ name: 'no-echo', match: { tool: 'echo' }, action: 'deny' }] };
    const allow = { default: 'allow', unknown_tools: 'rules', rules: [] };
    const confOf = (policy) => ({ listen: `127.0.0.1:${port}`, workers: WORKERS, upstreams: [{ name: 'default', url: se.url }], policy });
    const file = writeConfig(confOf(deny));
    const w = await startWarden(port, ['-c', file, '--admin', 'off']);
    try {
      const hdr = await rawSession(w.url);
      let seq = 0;
      // 10 echo calls, each on a new connection (postJson: agent: false).
      const tenCalls = () => Promise.all(Array.from({ length: 10 }, async () => {
        const id = `h${seq++}`;
        const r = await postJson(w.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message: id } } },
          { headers: hdr, timeout: 10000 });
        assert.equal(r.status, 200, r.text);
        const msgs = replyMessages(r);
        assert.equal(msgs.length, 1, r.text);
        assert.equal(msgs[0].id, id, r.text);
        return msgs[0];
      }));
      const allDenied = (msgs, when) => {
        for (const m of msgs) {
          assert.equal(m.error?.code, POLICY_CODE, `${when}: ${JSON.stringify(m)}`);
          assert.equal(m.error.data?.rule, 'no-echo', `${when}: ${JSON.stringify(m)}`);
        }
      };
      const allAllowed = (msgs, when) => {
        for (const m of msgs) assert.equal(m.result?.content?.[0]?.text, `Echo: ${m.id}`, `${when}: ${JSON.stringify(m)}`);
      };
      // reloadWarden: SIGHUP, then the reload's own log line (a process
      // that dies on the signal fails here).
      const reload = async (text, wantOk) => {
        writeFileSync(file, text);
        const r = await reloadWarden(w.proc);
        assert.equal(r.ok, wantOk, r.text);
        assert.equal(w.proc.exitStatus, null, 'still running');
      };
      const conf = (policy) => JSON.stringify(confOf(policy), null, 2);

      allDenied(await tenCalls(), 'at start');
      await reload(conf(allow), true);
      allAllowed(await tenCalls(), 'after the reload to allow');
      await reload(conf(deny), true);
      allDenied(await tenCalls(), 'after the reload back to deny');
      // A policy with errors: the deny in force stays, on every worker
      // (dropping it would let every echo through).
      await reload(conf({ ...deny, default: 'block' }), false);
      allDenied(await tenCalls(), 'after a reload that failed');
    } finally {
      await stopClean(w);
    }
  });
});

// ---- 5 ------------------------------------------------------------------------

describe('workers: SIGTERM drains every worker', () => {
  test('slow calls in flight on both workers all complete, then exit 0', T, async (t) => {
    const w = await startAdminWardenQuiet({ upstreams: se.url, extra: { workers: WORKERS, timeouts: { drain_ms: 20000 } } });
    const calls = [];
    try {
      const hdr = await rawSession(w.url);
      const m0 = await scrape(w.admin);
      const slow = (id) => {
        const t0 = Date.now();
        return postJson(w.url, {
          jsonrpc: '2.0', id, method: 'tools/call',
          params: { name: 'trigger-long-running-operation', arguments: { duration: 6, steps: 2 } },
        }, { headers: hdr, timeout: 25000 }).then((r) => ({ r, id, t0, t: Date.now() }));
      };
      // Six calls on new connections; while they are all on one worker
      // (1 time in 32), open more, up to 12, so both have one in flight.
      // Each time, wait until the proxy has read every call sent (its
      // request counter), then look where they went.
      let d;
      const seen = deltas(w.admin, m0);
      for (let n = 0; n < 12; n++) {
        calls.push(slow(`slow-${n}`));
        if (n < 5) continue;
        d = await seen.until((x) => sum(x.requests) >= calls.length, `${calls.length} slow calls read`);
        if (d.requests[0] > 0 && d.requests[1] > 0) break;
      }
      assert.ok(d.requests[0] > 0 && d.requests[1] > 0,
        `calls on both workers before SIGTERM: requests ${JSON.stringify(d.requests)}`);
      t.diagnostic(`${calls.length} slow calls; requests per worker ${JSON.stringify(d.requests)}`);
      const tTerm = Date.now();
      w.proc.child.kill('SIGTERM');
      const done = await withTimeout(Promise.all(calls), 30000, 'the slow calls');
      for (const { r, id, t } of done) {
        assert.equal(r.status, 200, `${id}: ${r.text}`);
        const msgs = replyMessages(r).filter((m) => m.id === id);
        assert.equal(msgs.length, 1, `${id}: ${r.text}`);
        assert.match(msgs[0].result?.content?.[0]?.text ?? '', /completed/i, `${id}: ${r.text}`);
        assert.ok(t > tTerm, `${id} was still in flight at SIGTERM`);
      }
      const st = await withTimeout(w.proc.exited, 15000, 'mcpwarden to exit after draining');
      assert.equal(st.code, 0, `exit ${JSON.stringify(st)}\n${w.proc.stderr.slice(-3000)}`);
    } finally {
      await stop(w.proc);
    }
  });
});

// ---- 6 ------------------------------------------------------------------------

describe('workers: one connection cap for all workers', () => {
  let peer;
  before(async () => { peer = await startScriptedPeer({ mode: 'json', name: 'cap' }); });
  after(async () => { await peer?.close(); });

  test('max_connections 4: a 5th waits (on either worker) until one of the 4 closes', T, async () => {
    // Up by its log lines: a probe connection would take one of the 4.
    const w = await startAdminWardenQuiet({
      upstreams: [{ name: 'default', url: peer.url }],
      extra: { workers: WORKERS, limits: { max_connections: 4 } },
    });
    const { port, admin } = w;
    const held = [];
    const ping = (id) => rawRequestBytes('POST /mcp HTTP/1.1',
      [['Host', `127.0.0.1:${port}`], ['Content-Type', 'application/json'],
        ['Accept', 'application/json, text/event-stream'], ['Content-Length', String(JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }).length)]],
      JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }));
    try {
      // Four idle connections, no request yet (as limits.test.mjs holds
      // connections): the cap is reached, whichever workers took them.
      const start = await scrape(admin);
      for (let k = 0; k < 4; k++) held.push(await openRaw(port));
      const spread = (await deltas(admin, start).until((x) => sum(x.connections) >= 4,
        'the 4 connections taken')).connections;
      // Each round three more connections, each with a request, while the
      // four are open: none may be taken (a worker past the cap leaves a
      // connection in the kernel's queue or parks it uncounted) nor
      // answered. The kernel picks a worker for each by hash, so over the
      // rounds they land on both workers, with the four spread differently
      // each time (a worker that never paused its listener would serve the
      // ones it gets).
      for (let round = 0; round < 4; round++) {
        const before5 = await scrape(admin);
        const extras = [];
        for (let e = 0; e < 3; e++) {
          const c = await openRaw(port);
          await c.write(ping(`r${round}e${e}`));
          extras.push(c);
        }
        // Not a pause but a positive event after which an extra served by
        // mistake would show: a request on each of the 4 open connections,
        // answered. Each worker holding one of them has run its loop since
        // the extras were connected and written (a listener still enabled
        // there would have taken them in that turn, counted below), and
        // the admin endpoint's worker has too.
        for (const [k, c] of held.entries()) {
          await c.write(ping(`r${round}h${k}`));
          const res = await c.readResponse({ timeout: 5000 });
          assert.equal(res.status, 200, `round ${round}: held ${k}: ${res.text}`);
        }
        const d = await deltas(admin, before5).once();
        const answered = extras.filter((c) => c.buf.length > 0 || c.ended);
        const ctx = `(the first 4 went to workers ${JSON.stringify(spread)}; this round the workers took ` +
          `${JSON.stringify(d.connections)} more)`;
        assert.equal(answered.length, 0,
          `round ${round}: ${answered.length} of 3 connections past the cap got an answer while 4 were open ` +
          `${ctx}: ${JSON.stringify(answered[0]?.buf.toString('latin1'))}`);
        assert.equal(sum(d.connections), 0, `round ${round}: a connection past the cap was taken ${ctx}`);
        // One of the four closes: that makes room for one, served at once.
        held.shift().close();
        await waitFor(() => extras.some((c) => c.buf.includes('\r\n\r\n')),
          { timeout: 5000, what: `round ${round}: a waiting connection served after one of the 4 closed` });
        // Two more close: every waiting one is served.
        held.shift().close();
        held.shift().close();
        for (const [e, c] of extras.entries()) {
          const res = await c.readResponse({ timeout: 5000 });
          assert.equal(res.status, 200, `round ${round}: ${res.text}`);
          assert.equal(JSON.parse(res.text).id, `r${round}e${e}`);
        }
        held.push(...extras); // keep-alive: open and idle, 4 again
      }
    } finally {
      for (const h of held) h.close();
      await stopClean(w);
    }
  });
});

// ---- 7 ------------------------------------------------------------------------

describe('workers: a port in use', () => {
  test('a second mcpwarden --workers 2 on a running one\'s port fails clearly', T, async (t) => {
    const port = await freePort();
    const args = ['--listen', `127.0.0.1:${port}`, '--upstream', se.url, '--workers', String(WORKERS), '--admin', 'off'];
    const w = await startWarden(port, args);
    try {
      const r = await runWarden(args, { timeout: 10000 });
      t.diagnostic(`second instance: exit ${r.code}, stderr ${JSON.stringify(r.stderr.trim())}`);
      assert.notEqual(r.code, 0, `second instance exit ${r.code} ${r.signal}\n${r.stderr}`);
      assert.equal(r.signal, null, `killed rather than exited (it kept running?)\n${r.stderr}`);
      assert.match(r.stderr, /Address already in use/, r.stderr);
      assert.match(r.stderr, new RegExp(`127\\.0\\.0\\.1:${port}`), `names the address: ${r.stderr}`);
      // The first one still owns the port and serves.
      const hdr = await rawSession(w.url);
      const p = await postJson(w.url, { jsonrpc: '2.0', id: 'alive', method: 'ping' }, { headers: hdr });
      assert.equal(p.status, 200, p.text);
      assert.equal(w.proc.exitStatus, null);
    } finally {
      await stopClean(w);
    }
  });
});

// Three mcpwarden replicas behind a real HAProxy (Debian haproxy 2.6) with
// the shipped conf/haproxy/mcpwarden.cfg, in front of server-everything
// (issue 23, item 2):
//
//   SDK clients ──▶ haproxy ──▶ r1 ─┐
//   (Streamable        │   ├──▶ r2 ─┼──▶ server-everything
//    and legacy SSE)   │   └──▶ r3 ─┘
//                      └─ health checks: each replica's admin /healthz, /readyz
//
// Streamable sessions (the upstream's Mcp-Session-Id) are spread request by
// request; legacy sessions (ids mcpwarden mints, "<replica_id>-<hex>") stay
// on the replica that opened them. Then one replica is SIGKILLed between
// two rounds of calls: Streamable sessions go on, legacy sessions on the
// dead replica end with a clear error (their stream closes, their next
// POST gets 404 "Session not found" from a live replica), nothing else
// fails, nothing hangs. Waits are on events: HAProxy's stats socket, the
// replicas' logs, admin endpoints and exit, the clients' own callbacks.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { freePort } from './lib/ports.mjs';
import { startEverything, stopAll } from './lib/procs.mjs';
import { postJson } from './lib/http.mjs';
import { withTimeout, deferred } from './lib/util.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connectSdk, startEverythingSse } from './lib/translate-util.mjs';
import { startFleet, startHaproxy, renderHaproxyConfig, HAPROXY_BIN, HAPROXY_CFG } from './lib/fleet.mjs';

const T = { timeout: 90000 };
const CALL_MS = 10000;
const SESSIONS = 3;        // of each transport
const CALLS = 3;           // tools/call per session and round
const MINTED = /^(r\d)-[0-9a-f]{32}$/;

/**
 * An SDK session, `kind` 'sse' (lib/translate-util.mjs connectSdk) or
 * 'streamable', plus the first transport error as a promise (for a legacy
 * client: its stream ending) and its session id.
 *
 * A Streamable client does not resume a dropped GET stream here
 * (maxRetries 0): server-everything's example event store answers a
 * Last-Event-ID with every later event of every session (priming events
 * `data: {}`, other sessions' responses, whose ids can match this
 * client's pending requests), directly as through mcpwarden. Its calls go
 * on over POSTs either way, which is what this test is about.
 */
async function connect(kind, url, name) {
  const streamError = deferred();
  let s;
  if (kind === 'sse') {
    s = await connectSdk(kind, url, { name });
  } else {
    const errors = [];
    const client = new Client({ name, version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url),
      { reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 100, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1 } });
    client.onerror = (e) => errors.push(e);
    await withTimeout(client.connect(transport), CALL_MS, `${name}: connect`);
    s = { kind, client, transport, errors, close: () => withTimeout(client.close(), 3000, `${name}: close`).catch(() => {}) };
  }
  const record = s.client.onerror;
  s.client.onerror = (e) => { record(e); streamError.resolve(e); };
  return Object.assign(s, {
    name,
    streamError: streamError.promise,
    /** The legacy session's id (from its endpoint event), or the Mcp-Session-Id. */
    get sid() {
      return kind === 'sse' ? s.transport._endpoint?.searchParams.get('sessionId') : s.transport.sessionId;
    },
    get endpoint() { return s.transport._endpoint?.href; },
  });
}

/** The calls of session k in round `round`: results in order (a thrown error as {thrown}). */
function script(k, round) {
  const calls = [];
  for (let i = 0; i < CALLS; i++) {
    calls.push(i % 2 === 0
      ? { name: 'echo', arguments: { message: `s${k} round ${round} call ${i} ✓` } }
      : { name: 'get-sum', arguments: { a: k * 100 + round, b: i } });
  }
  return calls;
}

async function run(s, calls) {
  const out = [];
  for (const c of calls) {
    out.push(await withTimeout(s.client.callTool(c, undefined, { timeout: CALL_MS }),
      CALL_MS + 1000, `${s.name}: tools/call ${c.name}`));
  }
  return out;
}

/** The sum of every sample of one metric family in /metrics text. */
function metricSum(text, name) {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{.*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) sum += Number(m[2]);
  }
  return sum;
}

describe('replicas: three mcpwarden behind HAProxy, one killed mid-run', () => {
  let se;
  let seSse;
  let fleet;
  let hx;
  let direct;
  const streamable = [];
  const legacy = [];
  const translated = [];   // Streamable clients of the legacy upstream

  before(async () => {
    [se, seSse] = await Promise.all([startEverything(await freePort()), startEverythingSse(await freePort())]);
    // A second upstream speaking legacy HTTP+SSE, at /legacy/mcp: its
    // Streamable clients get a session id mcpwarden mints (translated).
    fleet = await startFleet({
      n: 3,
      upstreams: [
        { name: 'everything', url: se.url },
        { name: 'legacy', url: seSse.url, path: '/legacy/mcp', transport: 'sse' },
      ],
    });
    hx = await startHaproxy(fleet);
    direct = await connect('streamable', se.url, 'direct');
  }, T);

  after(async () => {
    await Promise.all([...streamable, ...legacy, ...translated, direct].filter(Boolean).map((s) => s.close()));
    await stopAll();
  });

  test('haproxy -c accepts the shipped file, and the rendered one differs only in addresses', T, () => {
    const shipped = spawnSync(HAPROXY_BIN, ['-c', '-f', HAPROXY_CFG], { encoding: 'utf8', timeout: 10000 });
    assert.equal(shipped.status, 0, shipped.stdout + shipped.stderr);
    assert.match(shipped.stdout + shipped.stderr, /Configuration file is valid/);
    const rendered = spawnSync(HAPROXY_BIN, ['-c', '-f', hx.cfg], { encoding: 'utf8', timeout: 10000 });
    assert.equal(rendered.status, 0, rendered.stdout + rendered.stderr);
    const a = renderHaproxyConfig({ bindPort: hx.port, servers: fleet.replicas, statsSocket: hx.statsSocket }).split('\n');
    const b = readFileSync(HAPROXY_CFG, 'utf8').split('\n');
    assert.equal(a.length, b.length);
    const changed = a.filter((l, i) => l !== b[i]);
    assert.equal(changed.length, 2 + fleet.replicas.length, changed.join('\n'));
    assert.ok(changed.every((l) => /^\s*(bind|stats socket|server) /.test(l)), changed.join('\n'));
  });

  test('both transports through HAProxy: same results as direct, spread over every replica', T, async () => {
    const t0 = Date.now();
    for (let k = 0; k < SESSIONS; k++) {
      streamable.push(await connect('streamable', hx.url, `streamable-${k}`));
      legacy.push(await connect('sse', hx.sseUrl, `legacy-${k}`));
    }
    // Legacy ids are minted by the replica that opened the session and
    // name it; Streamable ids are the upstream's, unchanged.
    for (const s of legacy) assert.match(s.sid, MINTED, `${s.name}: ${s.endpoint}`);
    for (const s of streamable) assert.doesNotMatch(s.sid, MINTED);
    for (const s of streamable) assert.ok(se.proc.stdout.includes(s.sid), `${s.name}: the upstream issued ${s.sid}`);

    const all = [...streamable, ...legacy];
    const got = await Promise.all(all.map((s, k) => run(s, script(k, 1))));
    for (let k = 0; k < all.length; k++) {
      assert.deepEqual(got[k], await run(direct, script(k, 1)), `${all[k].name}: round 1 equals direct`);
    }

    // Every replica served requests; each legacy session's records are on
    // its own replica only; a Streamable session's requests went to more
    // than one replica (the same upstream session forwarded by several).
    for (const r of fleet.replicas) {
      assert.ok(metricSum(await fleet.metrics(r), 'mcpwarden_http_requests_total') > 0, `${r.id} served nothing`);
    }
    const holders = async (sid) => {
      const out = [];
      for (const r of fleet.replicas) {
        const res = await fleet.adminGet(r, `/calls?session=${encodeURIComponent(sid)}&limit=1000`);
        assert.equal(res.status, 200, res.text);
        const body = res.json();
        const recs = Array.isArray(body) ? body : body.calls ?? body.records ?? [];
        if (recs.length) out.push(r.id);
      }
      return out;
    };
    for (const s of legacy) assert.deepEqual(await holders(s.sid), [MINTED.exec(s.sid)[1]], `${s.name} stays on its replica`);
    const spread = [];
    for (const s of streamable) spread.push((await holders(s.sid)).length);
    assert.ok(spread.some((n) => n > 1), `some Streamable session reached more than one replica: ${spread}`);
    // An id naming no server: the rule is skipped, a replica answers 404.
    const stray = await postJson(`${hx.base}/messages?sessionId=r9-${'0'.repeat(32)}`,
      { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(stray.status, 404, stray.text);
    assert.equal(stray.json().error?.code, -32001, stray.text);
    console.log(`# round 1: ${all.length} sessions x ${CALLS} calls in ${Date.now() - t0} ms; ` +
      `legacy on ${legacy.map((s) => MINTED.exec(s.sid)[1]).join(',')}; streamable replicas per session ${spread}`);
  });

  test('a Streamable client of a legacy upstream: its minted Mcp-Session-Id keeps it on one replica', T, async () => {
    // mcpwarden translates, so the session lives in one replica; the
    // header rule (not the sessionId one) routes its every request there.
    const s = await connect('streamable', `${hx.base}/legacy/mcp`, 'translated');
    translated.push(s);
    const sid = s.sid;
    assert.match(sid, MINTED);
    const calls = [];
    for (let round = 1; round <= 3; round++) calls.push(...script(9, round));
    const got = await run(s, calls);
    assert.deepEqual(got, await run(direct, calls), 'equals direct');
    const on = [];
    for (const r of fleet.replicas) {
      const recs = (await fleet.adminGet(r, `/calls?session=${encodeURIComponent(sid)}&limit=1000`)).json();
      if ((Array.isArray(recs) ? recs : recs.calls ?? recs.records ?? []).length) on.push(r.id);
    }
    assert.deepEqual(on, [MINTED.exec(sid)[1]], 'its records are on its replica only');
  });

  test('SIGKILL one replica: Streamable goes on, its legacy sessions end with a clear error, nothing else fails', T, async () => {
    const t0 = Date.now();
    // The victim holds a legacy session; another legacy session lives elsewhere.
    const owner = (s) => MINTED.exec(s.sid)[1];
    const counts = {};
    for (const s of legacy) counts[owner(s)] = (counts[owner(s)] ?? 0) + 1;
    // Preferably the translated session's replica too, so both kinds end.
    const tOwner = translated.length ? owner(translated[0]) : null;
    const victimId = counts[tOwner] && counts[tOwner] < legacy.length
      ? tOwner : Object.keys(counts).sort((a, b) => counts[a] - counts[b])[0];
    const doomed = legacy.filter((s) => owner(s) === victimId);
    const spared = legacy.filter((s) => owner(s) !== victimId);
    if (!spared.length) {
      // All legacy sessions on one replica: open one more until one lands elsewhere (bounded).
      for (let i = 0; i < 4 && !spared.length; i++) {
        const s = await connect('sse', hx.sseUrl, `legacy-extra-${i}`);
        legacy.push(s);
        (owner(s) === victimId ? doomed : spared).push(s);
      }
    }
    assert.ok(doomed.length && spared.length, `legacy sessions on the victim ${victimId} and elsewhere`);
    // A translated Streamable session is on the victim or not, by chance:
    // it ends (404) or goes on like the legacy sessions.
    const doomedT = translated.filter((s) => owner(s) === victimId);
    const sparedT = translated.filter((s) => owner(s) !== victimId);
    const victim = fleet.byId(victimId);
    const survivors = fleet.replicas.filter((r) => r !== victim);
    const before = {};
    for (const r of survivors) before[r.id] = metricSum(await fleet.metrics(r), 'mcpwarden_http_requests_total');

    const status = await fleet.kill(victim);
    assert.equal(status.signal, 'SIGKILL');

    // Each doomed legacy client hears its stream end (HAProxy closes the
    // client side when the replica's connection dies).
    for (const s of doomed) {
      const e = await withTimeout(s.streamError, 5000, `${s.name}: its SSE stream to end`);
      assert.match(String(e?.message ?? e), /SSE error/i);
    }
    // Its next call fails at once with the answer of a live replica: 404,
    // JSON-RPC -32001 "Session not found" (HAProxy sends the POST elsewhere:
    // the named server is down or refuses, option redispatch).
    for (const s of doomed) {
      const t = Date.now();
      await assert.rejects(
        withTimeout(s.client.callTool({ name: 'echo', arguments: { message: 'after the kill' } },
          undefined, { timeout: CALL_MS }), CALL_MS, `${s.name}: the call after the kill`),
        /HTTP 404.*Session not found/s);
      assert.ok(Date.now() - t < 5000, `${s.name}: the error came in ${Date.now() - t} ms`);
    }

    for (const s of doomedT) {
      await assert.rejects(
        withTimeout(s.client.callTool({ name: 'echo', arguments: { message: 'after the kill' } },
          undefined, { timeout: CALL_MS }), CALL_MS, `${s.name}: the call after the kill`),
        (e) => e.code === 404 && /Session not found/.test(e.message));
    }

    // Round 2 at once, before HAProxy's checks have marked the victim down:
    // every Streamable session and every spared legacy session succeeds,
    // with the same results as direct.
    const live = [...streamable, ...spared, ...sparedT];
    const round = async (n) => {
      const got = await Promise.all(live.map((s, k) => run(s, script(k, n))));
      for (let k = 0; k < live.length; k++) {
        assert.deepEqual(got[k], await run(direct, script(k, n)), `${live[k].name}: round ${n} equals direct`);
      }
    };
    await round(2);

    // HAProxy marks it down (the stats socket says so); the others stay up.
    await hx.waitStatus(victimId, /^DOWN/, { ms: 10000 });
    for (const r of (await hx.stat()).filter((x) => x.svname !== victimId)) assert.match(r.status, /^UP/, r.svname);
    await round(3);

    // A doomed session's endpoint, POSTed by hand through HAProxy now the
    // victim is down: the same clean 404 with a JSON-RPC error body.
    const res = await postJson(doomed[0].endpoint, { jsonrpc: '2.0', id: 7, method: 'tools/list' });
    assert.equal(res.status, 404, res.text);
    assert.equal(res.json().error?.code, -32001, res.text);

    // The survivors took the load; the spared legacy clients saw no error,
    // and every Streamable call succeeded (round 2 and 3 above).
    for (const r of survivors) {
      assert.ok(metricSum(await fleet.metrics(r), 'mcpwarden_http_requests_total') > before[r.id], `${r.id} took requests`);
    }
    for (const s of spared) assert.deepEqual(s.errors.map(String), [], `${s.name}: no error`);
    // A Streamable session whose GET stream went through the victim hears
    // it drop (and, with no resumption, that it is not reopened); nothing else.
    for (const s of streamable) {
      const other = s.errors.map(String).filter((e) => !/SSE stream disconnected|Maximum reconnection attempts/.test(e));
      assert.deepEqual(other, [], `${s.name}: no error but its GET stream's drop`);
    }
    console.log(`# kill ${victimId}: ${doomed.length} legacy + ${doomedT.length} translated sessions ended, ` +
      `${spared.length} legacy + ${sparedT.length} translated + ${streamable.length} streamable went on; ${Date.now() - t0} ms`);
  });
});

// Live baselines (issue 21, item 3): the real ./mcpwarden with two workers
// in front of the contract peer, whose listing the test changes on demand
// (the peer serves `listings.live.pages` as it is at each request).
//
//   1. a breaking change shows in GET /contract ("diff", breaking first),
//      the fail-mode listing is refused, /readyz (ready_requires_contract)
//      answers 503 naming the upstream;
//   2. POST /contract/live/accept: 401 without the token, 403 with another,
//      405 for GET, 415 without a JSON body type, 403 from another Origin,
//      404 for an unknown upstream; with the token 200, logged with the
//      client's address and never the token;
//   3. after the accept the contract passes on both workers (fresh
//      connections until each worker's request counter moved), the
//      baseline file is the accepted listing (mode kept, no temporary file
//      left, valid for `mcpwarden check --baseline`), /readyz is 200;
//   4. SIGHUP with a changed baseline file takes effect at once; a bad one
//      is refused and the old baseline stays;
//   5. without a token and without a baseline file: 409 before any
//      listing, then an accept held in memory.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, readdirSync, statSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { runWarden, reloadWarden, stopAll, waitForStderrSince } from './lib/procs.mjs';
import { postJson, request } from './lib/http.mjs';
import { startAdminWardenQuiet, adminGet, metricValue } from './lib/admin-util.mjs';
import { startContractPeer, GOOD } from './peers/contract-peer.mjs';

const T = { timeout: 60000 };
const TOKEN = 'live-admin-token-0123456789';
const PROTO = '2025-06-18';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-live-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));

// v1: what the baseline knew. v2: fetch is gone and search needs a new
// parameter (both breaking), store is new (a notice).
const V1 = [GOOD('search'), GOOD('fetch')];
const V2 = [GOOD('search', { lang: { type: 'string', description: 'the language' } }), GOOD('store')];
V2[0].inputSchema.required = ['q', 'lang'];
const doc = (tools) => JSON.stringify({ tools }, null, 2);

after(async () => { await stopAll(); });

/** initialize + tools/list on fresh connections (each POST its own): the tools/list reply. */
async function listOnce(url) {
  const init = await postJson(url, {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: PROTO, capabilities: {}, clientInfo: { name: 'live-test', version: '0' } },
  });
  assert.equal(init.status, 200, init.text);
  const sid = init.headers['mcp-session-id'];
  const h = { 'mcp-session-id': sid, 'mcp-protocol-version': PROTO };
  await postJson(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: h });
  const r = await postJson(url, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, { headers: h });
  assert.equal(r.status, 200, r.text);
  return r.json();
}

const auth = { authorization: `Bearer ${TOKEN}` };
const jsonCt = { 'content-type': 'application/json' };

function accept(admin, upstream, { headers = { ...auth, ...jsonCt }, method = 'POST', body = '{}' } = {}) {
  return request(`${admin}/contract/${upstream}/accept`, { method, headers, body: method === 'POST' ? body : undefined });
}

async function contractOf(admin, name, headers = auth) {
  const r = await adminGet(admin, '/contract', { headers });
  assert.equal(r.status, 200, r.text);
  const u = r.json().upstreams.find((x) => x.upstream === name);
  assert.ok(u, `${name} on /contract`);
  return u;
}

async function readyz(admin, headers = auth) {
  const r = await adminGet(admin, '/readyz', { headers });
  return { status: r.status, body: r.json() };
}

/** Per-worker request counters, [w0, w1]. */
async function perWorker(admin) {
  const r = await adminGet(admin, '/metrics', { headers: auth });
  assert.equal(r.status, 200);
  return [0, 1].map((i) => metricValue(r.text, 'mcpwarden_worker_requests_total', { worker: String(i) }));
}

describe('live baselines: accept, every worker, the file, SIGHUP, readiness', () => {
  let peer;
  let w;
  const BASE = path.join(tmp, 'live-baseline.json');
  const live = { pages: [V1] };

  before(async () => {
    writeFileSync(BASE, doc(V1));
    chmodSync(BASE, 0o640);
    peer = await startContractPeer({ listings: { live } });
    w = await startAdminWardenQuiet({
      upstreams: [{ name: 'live', path: '/live/mcp', url: peer.url('live', 'json'), contract: { mode: 'fail', baseline: BASE } }],
      admin: { token: TOKEN, ready_requires_contract: true },
      extra: { workers: 2 },
      args: ['--log-level', 'info'],
    });
  }, T);

  after(async () => { await peer?.close(); });

  test('the baseline listing passes; /contract shows an empty diff; ready', T, async () => {
    const r = await listOnce(`${w.base}/live/mcp`);
    assert.deepEqual(r.result.tools.map((t) => t.name), ['search', 'fetch']);
    const u = await contractOf(w.admin, 'live');
    assert.equal(u.report.passed, true);
    assert.equal(u.diff.gate, 'passing');
    assert.equal(u.diff.breaking, 0);
    assert.equal(u.diff.baseline, BASE);
    assert.equal(u.diff.has_baseline, true);
    assert.equal(u.diff.baseline_tools, 2);
    assert.equal(u.diff.can_accept, true);
    assert.equal(u.diff.accepted, null);
    const rz = await readyz(w.admin);
    assert.equal(rz.status, 200, JSON.stringify(rz.body));
    assert.equal(rz.body.upstreams[0].contract, 'passing');
  });

  test('a breaking change: refused (fail mode), in /contract breaking first, /readyz 503 naming the upstream', T, async () => {
    live.pages = [V2];
    const r = await listOnce(`${w.base}/live/mcp`);
    assert.equal(r.error?.code, -32003, JSON.stringify(r));
    const u = await contractOf(w.admin, 'live');
    assert.equal(u.report.passed, false);
    assert.equal(u.diff.gate, 'failing');
    assert.equal(u.diff.breaking, 2, JSON.stringify(u.diff.changes));
    assert.ok(u.diff.notices >= 1, JSON.stringify(u.diff.changes));
    const kinds = u.diff.changes.map((c) => c.kind);
    assert.deepEqual(kinds, [...kinds].sort(), `breaking before notice: ${kinds}`);
    const codes = u.diff.changes.filter((c) => c.kind === 'breaking').map((c) => c.code).sort();
    assert.deepEqual(codes, ['param-now-required', 'tool-removed']);
    assert.ok(u.diff.changes.some((c) => c.code === 'tool-added' && c.tool === 'store'));
    // the existing members are still there
    for (const k of ['upstream', 'updated', 'report', 'live']) assert.ok(k in u, k);
    const rz = await readyz(w.admin);
    assert.equal(rz.status, 503, JSON.stringify(rz.body));
    assert.equal(rz.body.ready, false);
    const up = rz.body.upstreams.find((x) => x.upstream === 'live');
    assert.equal(up.reachable, true);
    assert.equal(up.contract, 'failing');
    assert.match(up.contract_error, /2 breaking changes/);
  });

  test('accept: token required even on loopback (401 / 403), POST only, JSON only, same origin only, 404', T, async () => {
    let r = await accept(w.admin, 'live', { headers: jsonCt });
    assert.equal(r.status, 401, r.text);
    assert.match(r.headers['www-authenticate'] ?? '', /^Bearer/);
    r = await accept(w.admin, 'live', { headers: { ...jsonCt, authorization: 'Bearer not-the-token' } });
    assert.equal(r.status, 403, r.text);
    r = await accept(w.admin, 'live', { method: 'GET' });
    assert.equal(r.status, 405, r.text);
    assert.equal(r.headers.allow, 'POST');
    r = await accept(w.admin, 'live', { headers: { ...auth, 'content-type': 'text/plain' } });
    assert.equal(r.status, 415, r.text);
    r = await accept(w.admin, 'live', { headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' });
    assert.equal(r.status, 415, r.text);
    r = await accept(w.admin, 'live', { headers: { ...auth, ...jsonCt, origin: 'http://evil.example' } });
    assert.equal(r.status, 403, r.text);
    r = await accept(w.admin, 'nope');
    assert.equal(r.status, 404, r.text);
    assert.match(r.headers['content-type'], /^application\/json/);
    // none of them changed anything
    assert.equal(JSON.parse(readFileSync(BASE, 'utf8')).tools.length, 2);
    assert.deepEqual(JSON.parse(readFileSync(BASE, 'utf8')).tools.map((t) => t.name), ['search', 'fetch']);
    assert.equal((await contractOf(w.admin, 'live')).diff.gate, 'failing');
  });

  test('accept with the token: logged, the file rewritten atomically, ready at once, passing on every worker', T, async () => {
    const since = w.proc.stderr.length;
    const r = await accept(w.admin, 'live');
    assert.equal(r.status, 200, r.text);
    const b = r.json();
    assert.equal(b.accepted, true);
    assert.equal(b.tools, 2);
    assert.equal(b.baseline, BASE);
    assert.match(b.by, /^127\.0\.0\.1:\d+ \(admin token\)$/);
    const m = await waitForStderrSince(w.proc, since, /admin: contract baseline of upstream live accepted by (\S+) \(admin token\): 2 tools, written to (\S+)/);
    assert.match(m[1], /^127\.0\.0\.1:\d+$/);
    assert.equal(m[2], BASE);
    assert.ok(!w.proc.stderr.includes(TOKEN), 'the token is never logged');

    // The file: the accepted listing, the old file's mode, nothing left beside it.
    assert.deepEqual(JSON.parse(readFileSync(BASE, 'utf8')), { tools: V2 });
    assert.equal(statSync(BASE).mode & 0o777, 0o640);
    assert.deepEqual(readdirSync(tmp).filter((f) => f.includes('.tmp-')), []);
    // valid for `mcpwarden check --baseline`: the v2 listing passes against it, v1 does not
    const v2file = path.join(tmp, 'v2-tools.json');
    const v1file = path.join(tmp, 'v1-tools.json');
    writeFileSync(v2file, doc(V2));
    writeFileSync(v1file, doc(V1));
    const ok = await runWarden(['check', '--tools-file', v2file, '--baseline', BASE]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    const bad = await runWarden(['check', '--tools-file', v1file, '--baseline', BASE]);
    assert.equal(bad.code, 1, bad.stdout + bad.stderr);

    // Judged again at once: no client needs to list first.
    const u = await contractOf(w.admin, 'live');
    assert.equal(u.diff.gate, 'passing');
    assert.equal(u.diff.breaking, 0);
    assert.deepEqual(u.diff.changes, []);
    assert.equal(u.report.passed, true);
    assert.equal(u.report.rejudged, 'accept');
    assert.match(u.diff.accepted.by, /^127\.0\.0\.1:\d+ \(admin token\)$/);
    assert.match(u.diff.accepted.time, /^\d{4}-\d\d-\d\dT/);
    const rz = await readyz(w.admin);
    assert.equal(rz.status, 200, JSON.stringify(rz.body));

    // Both workers answer the listing from the new baseline: fresh
    // connections until each worker's request counter moved.
    const before0 = await perWorker(w.admin);
    let answers = 0;
    for (let i = 0; i < 40; i++) {
      const lr = await listOnce(`${w.base}/live/mcp`);
      assert.equal(lr.error, undefined, JSON.stringify(lr));
      assert.deepEqual(lr.result.tools.map((t) => t.name), ['search', 'store']);
      answers++;
      const now = await perWorker(w.admin);
      // worker 0 also serves the admin endpoint: more than the /metrics
      // scrapes made meanwhile (one per turn) means client traffic
      if (now[1] - before0[1] >= 3 && now[0] - before0[0] - (i + 1) >= 3) break;
    }
    const after0 = await perWorker(w.admin);
    assert.ok(after0[1] - before0[1] >= 3, `worker 1 served listings: ${before0} -> ${after0}`);
    assert.ok(after0[0] - before0[0] - answers >= 3, `worker 0 served listings: ${before0} -> ${after0} (${answers} scrapes)`);
  });

  test('SIGHUP re-reads a changed baseline file at once; a bad one is refused and the old one stays', T, async () => {
    writeFileSync(BASE, doc(V1));
    let rl = await reloadWarden(w.proc);
    assert.ok(rl.ok, rl.text);
    assert.match(rl.text, /SIGHUP: upstream live: tool-list contract mode fail, baseline \S+live-baseline\.json \(2 tools\)/);
    let u = await contractOf(w.admin, 'live');
    assert.equal(u.diff.gate, 'failing', JSON.stringify(u.diff));
    assert.equal(u.report.rejudged, 'reload');
    assert.equal(u.diff.breaking, 2);
    assert.equal((await readyz(w.admin)).status, 503);
    let lr = await listOnce(`${w.base}/live/mcp`);
    assert.equal(lr.error?.code, -32003, JSON.stringify(lr));

    writeFileSync(BASE, '{"tools": [ not json');
    rl = await reloadWarden(w.proc);
    assert.equal(rl.ok, false, rl.text);
    assert.match(rl.text, /SIGHUP: contract errors; still running the old configuration/);
    assert.match(rl.text, /\$\.upstreams\[0\]\.contract\.baseline: \S+live-baseline\.json:1:/);
    lr = await listOnce(`${w.base}/live/mcp`);
    assert.equal(lr.error?.code, -32003, 'the v1 baseline still in force');

    writeFileSync(BASE, doc(V2));
    rl = await reloadWarden(w.proc);
    assert.ok(rl.ok, rl.text);
    u = await contractOf(w.admin, 'live');
    assert.equal(u.diff.gate, 'passing');
    lr = await listOnce(`${w.base}/live/mcp`);
    assert.deepEqual(lr.result?.tools.map((t) => t.name), ['search', 'store'], JSON.stringify(lr));
    assert.equal((await readyz(w.admin)).status, 200);
  });
});

describe('live baselines: accept only the listing reviewed (listing_sha256)', () => {
  let peer;
  let w;
  const BASE = path.join(tmp, 'digest-baseline.json');
  const live = { pages: [V1] };
  const sha = (tools) => createHash('sha256').update(JSON.stringify(tools)).digest('hex');

  before(async () => {
    writeFileSync(BASE, doc(V1));
    peer = await startContractPeer({ listings: { live } });
    w = await startAdminWardenQuiet({
      upstreams: [{ name: 'live', path: '/live/mcp', url: peer.url('live', 'json'), contract: { mode: 'fail', baseline: BASE } }],
      admin: { token: TOKEN },
      args: ['--log-level', 'info'],
    });
  }, T);

  after(async () => { await peer?.close(); });

  test('/contract names the listing by its SHA-256; an accept naming another is 409 and changes nothing', T, async () => {
    live.pages = [V2];
    assert.equal((await listOnce(`${w.base}/live/mcp`)).error?.code, -32003);
    const reviewed = (await contractOf(w.admin, 'live')).diff.listing_sha256;
    // The digest of the tools' compact JSON: the same on every replica.
    assert.equal(reviewed, sha(V2));
    // The listing changes after the review: the reviewed digest is stale.
    const V3 = [...V2, GOOD('archive')];
    live.pages = [V3];
    assert.equal((await listOnce(`${w.base}/live/mcp`)).error?.code, -32003);
    assert.equal((await contractOf(w.admin, 'live')).diff.listing_sha256, sha(V3));
    const since = w.proc.stderr.length;
    let r = await accept(w.admin, 'live', { body: JSON.stringify({ listing_sha256: reviewed }) });
    assert.equal(r.status, 409, r.text);
    assert.match(JSON.parse(r.text).error, /changed since it was reviewed/);
    await waitForStderrSince(w.proc, since, /contract baseline of upstream live NOT accepted .*changed since it was reviewed/);
    assert.deepEqual(JSON.parse(readFileSync(BASE, 'utf8')).tools.map((t) => t.name), ['search', 'fetch']);
    assert.equal((await contractOf(w.admin, 'live')).diff.gate, 'failing');
    // Bodies that are not {} or a digest: 400, nothing changed.
    for (const body of ['[]', '{"listing_sha256": "abc"}', '{"listing_sha256": 7}', 'not json',
      JSON.stringify({ listing_sha256: reviewed.toUpperCase() })]) {
      r = await accept(w.admin, 'live', { body });
      assert.equal(r.status, 400, `${body}: ${r.text}`);
    }
    assert.deepEqual(JSON.parse(readFileSync(BASE, 'utf8')).tools.map((t) => t.name), ['search', 'fetch']);
  });

  test('an accept naming the listing in force takes it', T, async () => {
    const now = (await contractOf(w.admin, 'live')).diff.listing_sha256;
    const r = await accept(w.admin, 'live', { body: JSON.stringify({ listing_sha256: now }) });
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).tools, 3);
    assert.deepEqual(JSON.parse(readFileSync(BASE, 'utf8')).tools.map((t) => t.name), ['search', 'store', 'archive']);
    assert.equal((await contractOf(w.admin, 'live')).diff.gate, 'passing');
  });
});

describe('live baselines without a token or a baseline file', () => {
  let peer;
  let w;
  const live = { pages: [V1] };

  before(async () => {
    peer = await startContractPeer({ listings: { live } });
    w = await startAdminWardenQuiet({
      upstreams: [{ name: 'live', path: '/live/mcp', url: peer.url('live', 'json'), contract: { mode: 'report' } }],
      admin: { ready_requires_contract: true },
      args: ['--log-level', 'info'],
    });
  }, T);

  after(async () => { await peer?.close(); });

  test('409 before a listing (and ready: no verdict yet); loopback rules; accepted in memory', T, async () => {
    let r = await accept(w.admin, 'live', { headers: jsonCt });
    assert.equal(r.status, 409, r.text);
    assert.equal(r.json().upstream, 'live');
    let rz = await readyz(w.admin, {});
    assert.equal(rz.status, 200, JSON.stringify(rz.body));
    assert.equal(rz.body.upstreams[0].contract, 'unknown');

    await listOnce(`${w.base}/live/mcp`);
    let u = await contractOf(w.admin, 'live', {});
    assert.equal(u.diff.has_baseline, false);
    assert.equal(u.diff.can_accept, true);

    r = await accept(w.admin, 'live', { headers: {} });
    assert.equal(r.status, 415, r.text);
    r = await accept(w.admin, 'live', { headers: { ...jsonCt, origin: 'http://evil.example' } });
    assert.equal(r.status, 403, r.text);
    r = await accept(w.admin, 'live', { headers: { ...jsonCt, host: 'evil.example' } });
    assert.equal(r.status, 403, r.text);

    const since = w.proc.stderr.length;
    r = await accept(w.admin, 'live', { headers: jsonCt });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json().baseline, null);
    await waitForStderrSince(w.proc, since, /accepted by 127\.0\.0\.1:\d+ \(loopback, no token configured\): 2 tools, in memory only/);
    u = await contractOf(w.admin, 'live', {});
    assert.equal(u.diff.has_baseline, true);
    assert.equal(u.diff.baseline, null);

    // report mode: a breaking change is forwarded, and still gates readiness
    live.pages = [V2];
    const lr = await listOnce(`${w.base}/live/mcp`);
    assert.deepEqual(lr.result.tools.map((t) => t.name), ['search', 'store']);
    u = await contractOf(w.admin, 'live', {});
    assert.equal(u.diff.breaking, 2);
    rz = await readyz(w.admin, {});
    assert.equal(rz.status, 503, JSON.stringify(rz.body));

    // the accepted baseline survives a SIGHUP (no file names another)
    const rl = await reloadWarden(w.proc);
    assert.ok(rl.ok, rl.text);
    u = await contractOf(w.admin, 'live', {});
    assert.equal(u.diff.has_baseline, true);
    assert.equal(u.diff.breaking, 2);

    // new settings (mode fail) by SIGHUP: the verdict cache starts afresh,
    // the listing to accept is still there, and accepting it clears the gate
    const conf = JSON.parse(readFileSync(w.conf, 'utf8'));
    conf.upstreams[0].contract = { mode: 'fail' };
    writeFileSync(w.conf, JSON.stringify(conf));
    const rl2 = await reloadWarden(w.proc);
    assert.ok(rl2.ok, rl2.text);
    assert.match(rl2.text, /SIGHUP: upstream live: tool-list contract mode fail, baseline \(accepted\) \(2 tools\)/);
    u = await contractOf(w.admin, 'live', {});
    assert.equal(u.diff.can_accept, true);
    assert.equal(u.report.rejudged, 'reload');
    const refused = await listOnce(`${w.base}/live/mcp`);
    assert.equal(refused.error?.code, -32003, JSON.stringify(refused));
    r = await accept(w.admin, 'live', { headers: jsonCt });
    assert.equal(r.status, 200, r.text);
    rz = await readyz(w.admin, {});
    assert.equal(rz.status, 200, JSON.stringify(rz.body));
    const ok = await listOnce(`${w.base}/live/mcp`);
    assert.deepEqual(ok.result?.tools.map((t) => t.name), ['search', 'store'], JSON.stringify(ok));
  });
});

// upstreams.mjs: what the size of the fleet behind one mcpwarden costs, and
// what one replica holds per session and per stream (issue 23, items 5-6;
// the README's "Running many replicas"). Part "upstreams" of `make bench`
// (tests/bench/README.md), run by upstreams.sh.
//
//   UPSTREAM_COUNTS="1 100 1000" SESSIONS=1000 LEGACY=1000 node tests/bench/upstreams.mjs
//
// 1. For each count N: N upstreams (one build/bench/upstream fixture behind
//    all of them, each on its own path), the admin endpoint on. Start-up
//    (spawn until both listeners accept), resident memory (VmRSS) once up,
//    the first /readyz (it waits for the first round of probes) and one
//    after a quiet second, /metrics' size and time, the admin page (GET /) and its
//    data (GET /contract) size and time.
// 2. One upstream: VmRSS before and after SESSIONS Streamable HTTP sessions
//    (initialize + notifications/initialized; the connections kept open,
//    20 sessions a connection), then LEGACY legacy HTTP+SSE streams (GET
//    /sse each, open until its endpoint event arrived): the growth per
//    1,000. Then build/bench/streams (the streams part's program) opens
//    SESSIONS Streamable sessions with their GET stream held open: its
//    growth per stream.
//
// Loopback only; every process started here is ended by PID on exit (also
// on SIGINT/SIGTERM); every wait is bounded. Exit status 1 when a step
// failed (a target that did not start, a session that did not open).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MCPWARDEN = process.env.MCPWARDEN ?? path.join(HERE, 'mcpwarden');
const FIXTURE = path.join(HERE, process.env.BUILD ?? 'build', 'bench/upstream');
const STREAMS_BIN = path.join(HERE, process.env.BUILD ?? 'build', 'bench/streams');
const COUNTS = (process.env.UPSTREAM_COUNTS ?? '1 100 1000').split(/\s+/).filter(Boolean).map(Number);
const SESSIONS = Number(process.env.SESSIONS ?? 1000);
const LEGACY = Number(process.env.LEGACY ?? 1000);
const WORK = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-bench-upstreams.'));
const kids = new Set();

function cleanup() {
  for (const k of kids) try { k.kill('SIGKILL'); } catch { /* gone */ }
  if (!process.env.BENCH_KEEP) rmSync(WORK, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => process.exit(130));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function bounded(what, ms, fn) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what}`);
    await sleep(10);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}
const canConnect = (port) => new Promise((resolve) => {
  const c = net.connect(port, '127.0.0.1');
  c.once('connect', () => { c.destroy(); resolve(true); });
  c.once('error', () => resolve(false));
});

function start(name, cmd, args) {
  const k = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  k.out = '';
  k.stdout.on('data', (d) => { k.out += d; });
  k.stderr.on('data', (d) => { k.out += d; });
  k.once('exit', () => kids.delete(k));
  k.label = name;
  kids.add(k);
  return k;
}
async function stop(k) {
  if (k.exitCode !== null || k.signalCode !== null) return;
  const gone = new Promise((r) => k.once('exit', r));
  k.kill('SIGTERM');
  await Promise.race([gone, sleep(5000)]);
  if (kids.has(k)) k.kill('SIGKILL');
}

const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

function get(port, p, headers = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const rq = http.get({ host: '127.0.0.1', port, path: p, headers, agent: false, timeout: 10000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks), ms: performance.now() - t0 }));
    });
    rq.on('timeout', () => rq.destroy(new Error(`GET ${p} timed out`)));
    rq.on('error', reject);
  });
}

// ---- 1. the fleet ---------------------------------------------------------

async function fleetRow(upPort, n) {
  const port = await freePort();
  const admin = await freePort();
  const ups = [];
  for (let i = 0; i < n; i++) ups.push({ name: `u${i}`, path: `/u${i}/mcp`, url: `http://127.0.0.1:${upPort}/mcp` });
  const conf = path.join(WORK, `fleet-${n}.json`);
  writeFileSync(conf, JSON.stringify({ listen: `127.0.0.1:${port}`, upstreams: ups, admin: { listen: `127.0.0.1:${admin}` } }));
  const t0 = performance.now();
  const mw = start(`mcpwarden (${n} upstreams)`, MCPWARDEN, ['-c', conf]);
  await bounded(`mcpwarden with ${n} upstreams to listen`, 60000, async () => {
    if (mw.exitCode !== null) throw new Error(`mcpwarden exited: ${mw.out}`);
    return (await canConnect(port)) && (await canConnect(admin));
  });
  const startMs = performance.now() - t0;
  const rssUp = rssKiB(mw.pid);
  const first = await get(admin, '/readyz');
  // Quiet: a second and a bit with no /readyz (the old on-demand probes
  // ran again on the next request after a second).
  await sleep(1100);
  const quiet = await get(admin, '/readyz');
  const metrics = await get(admin, '/metrics');
  const page = await get(admin, '/');
  const contract = await get(admin, '/contract');
  const rssAfter = rssKiB(mw.pid);
  await stop(mw);
  return {
    n, startMs, rssUp, rssAfter, first, quiet, metrics, page, contract,
    ready: JSON.parse(first.body.toString()).ready,
  };
}

// ---- 2. per session, per stream -------------------------------------------

function rpc(agent, port, p, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const rq = http.request({
      host: '127.0.0.1', port, path: p, method: 'POST', agent, timeout: 10000,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18', 'content-length': Buffer.byteLength(data), ...headers },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, sid: res.headers['mcp-session-id'] }));
    });
    rq.on('timeout', () => rq.destroy(new Error('POST timed out')));
    rq.on('error', reject);
    rq.end(data);
  });
}

async function openSessions(port, count) {
  const per = 20;
  const agents = [];
  let opened = 0;
  for (let c = 0; c < Math.ceil(count / per); c++) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    for (let i = 0; i < per && opened < count; i++, opened++) {
      const init = await rpc(agent, port, '/mcp', { jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
      if (init.status !== 200 || !init.sid) throw new Error(`initialize: ${init.status}`);
      const n = await rpc(agent, port, '/mcp', { jsonrpc: '2.0', method: 'notifications/initialized' },
        { 'mcp-session-id': init.sid });
      if (n.status !== 202) throw new Error(`notifications/initialized: ${n.status}`);
    }
  }
  return agents;
}

function openLegacy(port) {
  return new Promise((resolve, reject) => {
    const rq = http.get({ host: '127.0.0.1', port, path: '/sse', agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) { reject(new Error(`GET /sse: ${res.statusCode}`)); res.resume(); return; }
      let buf = '';
      const t = setTimeout(() => reject(new Error('no endpoint event')), 10000);
      res.on('data', (d) => {
        buf += d;
        if (/event: endpoint/.test(buf)) { clearTimeout(t); resolve({ rq, res }); }
      });
    });
    rq.on('error', reject);
  });
}

async function perSession(upPort) {
  const port = await freePort();
  const admin = await freePort();
  const conf = path.join(WORK, 'sessions.json');
  const max = Math.max(SESSIONS, LEGACY) * 2 + 100;
  writeFileSync(conf, JSON.stringify({
    listen: `127.0.0.1:${port}`, upstreams: [{ name: 'one', url: `http://127.0.0.1:${upPort}/mcp` }],
    admin: { listen: `127.0.0.1:${admin}` },
    limits: { max_connections: max, max_connections_per_client: max, max_sessions: max },
  }));
  const mw = start('mcpwarden (sessions)', MCPWARDEN, ['-c', conf]);
  await bounded('mcpwarden to listen', 20000, async () => {
    if (mw.exitCode !== null) throw new Error(`mcpwarden exited: ${mw.out}`);
    return (await canConnect(port)) && (await canConnect(admin));
  });
  // Sessions first until the admin ring (1,024 records; two a session) is
  // full, so what grows after is what the sessions hold, not the ring.
  const warm = await openSessions(port, 600);
  const r0 = rssKiB(mw.pid);
  const agents = await openSessions(port, SESSIONS);
  const r1 = rssKiB(mw.pid);
  const legacy = [];
  for (let i = 0; i < LEGACY; i += 50) {
    const batch = [];
    for (let j = i; j < Math.min(i + 50, LEGACY); j++) batch.push(openLegacy(port));
    legacy.push(...await Promise.all(batch));
  }
  const r2 = rssKiB(mw.pid);
  const metrics = (await get(admin, '/metrics')).body.toString();
  const val = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
  for (const l of legacy) l.rq.destroy();
  for (const a of [...agents, ...warm]) a.destroy();
  // Streamable sessions with their GET stream open: the streams program.
  const st = start('streams', STREAMS_BIN, ['--port', String(port), '--upstream-port', String(upPort),
    '--pid', String(mw.pid), '--streams', String(SESSIONS), '--pushes', '20', '--label', 'mcpwarden']);
  await new Promise((r) => st.once('exit', r));
  await stop(mw);
  return { r0, r1, r2, clientConns: val('mcpwarden_client_connections'), streams: st.out.trim(), streamsRc: st.exitCode };
}

// ---- report ----------------------------------------------------------------

const kib = (k) => `${(k / 1024).toFixed(1)} MiB`;
let failed = false;
const upPort = await freePort();
const fx = start('fixture', FIXTURE, ['--port', String(upPort)]);
await bounded('the fixture to listen', 10000, () => canConnect(upPort));

console.log(`== upstreams: one fixture behind N upstreams; mcpwarden ${MCPWARDEN}`);
console.log('| upstreams | start-up | RSS up | RSS after | first /readyz | /readyz after a quiet second | /metrics | admin page (GET /) | GET /contract |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const n of COUNTS) {
  try {
    const r = await fleetRow(upPort, n);
    const q = `${r.quiet.ms.toFixed(1)} ms (${r.quiet.status})`;
    console.log(`| ${n} | ${r.startMs.toFixed(0)} ms | ${kib(r.rssUp)} | ${kib(r.rssAfter)} | ${r.first.ms.toFixed(1)} ms (${r.first.status}) | ${q} | ` +
      `${r.metrics.body.length} B, ${r.metrics.ms.toFixed(1)} ms | ${r.page.body.length} B, ${r.page.ms.toFixed(1)} ms | ` +
      `${r.contract.body.length} B, ${r.contract.ms.toFixed(1)} ms |`);
  } catch (e) {
    failed = true;
    console.log(`| ${n} | failed: ${e.message} |`);
  }
}
console.log();
try {
  const s = await perSession(upPort);
  console.log(`== per session and per stream (one upstream): ${SESSIONS} Streamable HTTP sessions, then ${LEGACY} legacy HTTP+SSE streams`);
  console.log(`   RSS ${kib(s.r0)} -> ${kib(s.r1)} after the sessions (${((s.r1 - s.r0) * 1000 / SESSIONS / 1024).toFixed(2)} MiB per 1,000; ` +
    `${((s.r1 - s.r0) * 1024 / SESSIONS).toFixed(0)} B each) -> ${kib(s.r2)} after the legacy streams ` +
    `(${((s.r2 - s.r1) * 1000 / LEGACY / 1024).toFixed(2)} MiB per 1,000; ${((s.r2 - s.r1) * 1024 / LEGACY).toFixed(0)} B each); ` +
    `client connections open: ${s.clientConns}`);
  console.log(`-- ${SESSIONS} Streamable HTTP sessions with their GET stream open (build/bench/streams):`);
  console.log(s.streams.replace(/^/gm, '   '));
  if (s.streamsRc !== 0) failed = true;
} catch (e) {
  failed = true;
  console.log(`   per session: failed: ${e.message}`);
}
await stop(fx);
process.exit(failed ? 1 : 0);

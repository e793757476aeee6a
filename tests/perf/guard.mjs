#!/usr/bin/env node
// The instruction-count regression guard (issue 10, item 4).
//
// Runs ./mcpwarden under `valgrind --tool=callgrind` with full inspection on
// (tests/perf/guard.json: contract checker in report mode, a five-rule
// policy, the admin endpoint recording every call to its ring and to a call
// log) between a tiny upstream of our own and a client that sends N strictly
// sequential tools/call requests on one keep-alive connection of one session.
// Two runs, N1 and N2 calls, give the instructions per proxied tools/call:
//
//     (Ir(N2) - Ir(N1)) / (N2 - N1)
//
// which cancels start-up, the session set-up and shutdown. Instruction
// counts, not seconds: they hold on a noisy shared machine.
//
//   node tests/perf/guard.mjs              measure, compare with baseline.txt
//   node tests/perf/guard.mjs --baseline   measure, rewrite baseline.txt
//   node tests/perf/guard.mjs --repeat K   measure K times, print the spread
//   node tests/perf/guard.mjs --self-test  check that the guard can fail
//
// Exit status: 0 within the allowance, 1 regression, 2 the measurement
// itself failed (proxy did not start, a request failed, no callgrind
// output...): the guard never passes without a measurement.
//
// Environment: MCPWARDEN_BIN (default ./mcpwarden), PERF_N1/PERF_N2 (200,
// 1200), PERF_BASELINE (a figure to use instead of baseline.txt),
// PERF_BUILD (the build flags, written into baseline.txt by the Makefile),
// PERF_KEEP=1 (keep the work directory with the callgrind files),
// PERF_FAULT (self-test only: "upstream-error" makes tools/call fail).

import http from 'node:http';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../integration/lib/ports.mjs';
import { sleep, withTimeout } from '../integration/lib/util.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '../..');
const BASELINE_FILE = path.join(HERE, 'baseline.txt');
const CONFIG_TEMPLATE = path.join(HERE, 'guard.json');
const ALLOWED_GROWTH = 0.10;
// Generous: under callgrind the proxy runs ~50x slower, and the machine is
// shared. Deadlines only turn a hang into a clear failure.
const START_MS = 60000;
const REQUEST_MS = 30000;
const STOP_MS = 30000;
const SESSION_ID = 'perf-guard-session-0001';
const CALL_ARGS = { query: 'how to configure the upstream pool' };

class MeasureError extends Error {}

const log = (...a) => console.log('perf-guard:', ...a);

function intEnv(name, dflt) {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  if (!/^[0-9]+$/.test(v)) throw new MeasureError(`${name}=${v}: not a whole number`);
  return Number(v);
}

// ---- the upstream ---------------------------------------------------------

const TOOLS = [
  {
    name: 'search_docs',
    description: 'Full-text search over the product documentation.',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string', description: 'words to look for' } },
      required: ['query'],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'run_query',
    description: 'Run one SQL statement against the staging database.',
    inputSchema: {
      type: 'object',
      properties: { sql: { type: 'string', description: 'the statement' } },
      required: ['sql'],
    },
    annotations: { readOnlyHint: false, destructiveHint: false },
  },
  {
    name: 'delete_file',
    description: 'Delete one file from the shared workspace.',
    inputSchema: {
      type: 'object',
      properties: { path: { type: 'string', description: 'the file to delete' } },
      required: ['path'],
    },
    annotations: { destructiveHint: true },
  },
  {
    name: 'admin_reset',
    description: 'Reset the staging environment to its seed data.',
    inputSchema: { type: 'object', properties: {} },
  },
];

function answer(msg, fault) {
  const ok = (result) => ({ status: 200, body: { jsonrpc: '2.0', id: msg.id, result } });
  if (msg.id === undefined) return { status: 202 };
  switch (msg.method) {
    case 'initialize':
      return {
        ...ok({
          protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'perf-upstream', version: '1.0.0' },
        }),
        session: true,
      };
    case 'tools/list':
      return ok({ tools: TOOLS });
    case 'tools/call':
      if (fault === 'upstream-error') return { status: 500, body: { error: 'fault injected' } };
      return ok({ content: [{ type: 'text', text: 'found 3 pages about the upstream pool' }], isError: false });
    default:
      return { status: 200, body: { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no such method' } } };
  }
}

/** Plain node:http MCP server: JSON replies only, fixed bytes but the id. */
async function startUpstream(fault) {
  const up = { connections: 0 };
  up.server = http.createServer((req, res) => {
    // No Date header: identical reply bytes in every run.
    res.sendDate = false;
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let msg;
      try {
        msg = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const a = answer(msg, fault);
      const headers = {};
      if (a.session) headers['Mcp-Session-Id'] = SESSION_ID;
      if (!a.body) {
        res.writeHead(a.status, headers).end();
        return;
      }
      const body = JSON.stringify(a.body);
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = Buffer.byteLength(body);
      res.writeHead(a.status, headers).end(body);
    });
  });
  // Longer than the proxy's upstream_idle_ms: the pooled connection is never
  // cut from this side in the middle of a run.
  up.server.keepAliveTimeout = 120000;
  up.server.on('connection', () => { up.connections++; });
  up.port = await new Promise((resolve, reject) => {
    up.server.once('error', reject);
    up.server.listen(0, '127.0.0.1', () => resolve(up.server.address().port));
  });
  return up;
}

// ---- the proxy under callgrind -------------------------------------------

function wardenBin() {
  const bin = path.resolve(process.env.MCPWARDEN_BIN || path.join(REPO, 'mcpwarden'));
  if (!existsSync(bin)) throw new MeasureError(`${bin} does not exist: run \`make\` first`);
  return bin;
}

/** `--workers 1` once the binary has the flag: the count is for one loop. */
function workerArgs(bin) {
  const help = spawnSync(bin, ['--help'], { encoding: 'utf8', timeout: 10000 });
  return /--workers\b/.test(`${help.stdout}${help.stderr}`) ? ['--workers', '1'] : [];
}

function writeConfig(work, ports, tag) {
  const vars = {
    PROXY_PORT: String(ports.proxy),
    UPSTREAM_PORT: String(ports.upstream),
    ADMIN_PORT: String(ports.admin),
    CALL_LOG: path.join(work, `calls-${tag}.jsonl`),
  };
  const text = readFileSync(CONFIG_TEMPLATE, 'utf8').replace(/@([A-Z_]+)@/g, (m, k) => {
    if (!(k in vars)) throw new MeasureError(`${CONFIG_TEMPLATE}: unknown placeholder ${m}`);
    return vars[k];
  });
  const file = path.join(work, `guard-${tag}.json`);
  writeFileSync(file, text);
  return { file, callLog: vars.CALL_LOG };
}

function startProxy(bin, args, outFile) {
  const p = { stderr: '', status: null };
  p.child = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${outFile}`, bin, ...args],
    { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] });
  p.child.stderr.setEncoding('utf8');
  p.child.stderr.on('data', (d) => { p.stderr += d; });
  p.exited = new Promise((resolve) => {
    p.child.once('error', (err) => { p.status = { error: err.message }; resolve(p.status); });
    p.child.once('exit', (code, signal) => { p.status = { code, signal }; resolve(p.status); });
  });
  return p;
}

/* Wait for the start-up log line rather than probing the port: a probe
 * connection would be accepted and counted, a varying number of times. */
async function waitListening(p) {
  const deadline = Date.now() + START_MS;
  while (!/listening on/.test(p.stderr)) {
    if (p.status) throw new MeasureError(`mcpwarden exited ${JSON.stringify(p.status)} before listening:\n${p.stderr}`);
    if (Date.now() > deadline) throw new MeasureError(`mcpwarden did not start within ${START_MS} ms:\n${p.stderr}`);
    await sleep(20);
  }
}

async function stopProxy(p) {
  if (p.status) return p.status;
  p.child.kill('SIGTERM');
  try {
    return await withTimeout(p.exited, STOP_MS, 'mcpwarden to exit after SIGTERM');
  } catch (e) {
    p.child.kill('SIGKILL');
    await p.exited;
    throw e;
  }
}

// ---- the client -------------------------------------------------------------

function post(agent, port, sockets, headers, msg) {
  const body = JSON.stringify(msg);
  return withTimeout(new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent,
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Content-Length': Buffer.byteLength(body),
        ...headers,
      },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
        text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('socket', (s) => sockets.add(s));
    req.on('error', reject);
    req.end(body);
  }), REQUEST_MS, `${msg.method} id ${msg.id}`);
}

function expectResult(r, id, what) {
  let msg;
  try {
    msg = JSON.parse(r.text);
  } catch { /* reported below */ }
  if (r.status !== 200 || !msg || msg.id !== id || !msg.result) {
    throw new MeasureError(`${what} (id ${id}) failed: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  }
  return msg.result;
}

/** initialize, initialized, tools/list, then `n` tools/call, one at a time. */
async function drive(port, n) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set();
  try {
    const init = await post(agent, port, sockets, {}, {
      jsonrpc: '2.0', id: 'init', method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {},
        clientInfo: { name: 'perf-guard', version: '1.0.0' } },
    });
    expectResult(init, 'init', 'initialize');
    const sid = init.headers['mcp-session-id'];
    if (!sid) throw new MeasureError('initialize: no Mcp-Session-Id in the reply');
    const hdr = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' };
    const note = await post(agent, port, sockets, hdr, { jsonrpc: '2.0', method: 'notifications/initialized' });
    if (note.status !== 202) throw new MeasureError(`notifications/initialized: HTTP ${note.status}`);
    const list = expectResult(await post(agent, port, sockets, hdr,
      { jsonrpc: '2.0', id: 'list', method: 'tools/list' }), 'list', 'tools/list');
    // The policy hides admin_reset: seeing 3 of 4 proves it is on.
    if (list.tools?.length !== TOOLS.length - 1) {
      throw new MeasureError(`tools/list: expected ${TOOLS.length - 1} tools (admin_* hidden), got ${JSON.stringify(list).slice(0, 300)}`);
    }
    for (let id = 1; id <= n; id++) {
      const r = await post(agent, port, sockets, hdr, { jsonrpc: '2.0', id, method: 'tools/call',
        params: { name: 'search_docs', arguments: CALL_ARGS } });
      const res = expectResult(r, id, 'tools/call');
      if (res.content?.[0]?.text !== 'found 3 pages about the upstream pool') {
        throw new MeasureError(`tools/call id ${id}: unexpected result ${r.text.slice(0, 300)}`);
      }
    }
    if (sockets.size !== 1) {
      throw new MeasureError(`the client used ${sockets.size} connections, not one keep-alive connection`);
    }
  } finally {
    // Closed before SIGTERM, so shutdown has nothing in flight to drain.
    agent.destroy();
  }
}

function getText(port, urlPath) {
  return withTimeout(new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    }).on('error', reject);
  }), REQUEST_MS, `GET ${urlPath}`);
}

/* The inspection really ran: the metrics count every call, the policy hid
 * a tool from the listing and the contract checker examined it. */
async function checkInspection(adminPort, n) {
  const m = await getText(adminPort, '/metrics');
  if (m.status !== 200) throw new MeasureError(`admin /metrics: HTTP ${m.status}`);
  const want = [
    [/^mcpwarden_tool_calls_total\{tool="search_docs",outcome="ok"\} (\d+)$/m, n],
    [/^mcpwarden_policy_decisions_total\{rule="policy:hide",verdict="forward"\} (\d+)$/m, 1],
    [/^mcpwarden_contract_tools\{[^}]*\} (\d+)$/m, TOOLS.length],
  ];
  for (const [re, value] of want) {
    const got = m.text.match(re);
    if (!got || Number(got[1]) !== value) {
      throw new MeasureError(`admin /metrics: expected ${re} = ${value}, got ${got ? got[1] : 'no such line'}`);
    }
  }
}

function countCalls(callLog) {
  if (!existsSync(callLog)) return 0;
  return readFileSync(callLog, 'utf8').split('\n')
    .filter((l) => l.includes('"tools/call"')).length;
}

/** The total Ir from a callgrind output file (`summary:`, else `totals:`). */
function parseIr(text) {
  const m = text.match(/^summary:\s+(\d+)/m) || text.match(/^totals:\s+(\d+)/m);
  return m ? Number(m[1]) : null;
}

/* A port picked free can be taken before the proxy binds it (other test
 * runs share the machine): start again on new ports, a bounded few times. */
async function runWithPorts(work, bin, n, fault) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await runOnce(work, bin, n, fault);
    } catch (e) {
      if (!(e instanceof MeasureError && /Address already in use/.test(e.message)) || attempt === 3) throw e;
      log(`a port was taken (attempt ${attempt}), starting again on new ports`);
    }
  }
}

/** One run of `n` calls; returns the Ir of the whole proxy process. */
async function runOnce(work, bin, n, fault) {
  const up = await startUpstream(fault);
  let p;
  try {
    const ports = { upstream: up.port, proxy: await freePort(), admin: await freePort() };
    const cfg = writeConfig(work, ports, String(n));
    const out = path.join(work, `callgrind-${n}.out`);
    p = startProxy(bin, ['-c', cfg.file, ...workerArgs(bin)], out);
    await waitListening(p);
    await drive(ports.proxy, n);
    await checkInspection(ports.admin, n);
    const status = await stopProxy(p);
    if (status.code !== 0) {
      throw new MeasureError(`mcpwarden under callgrind exited ${JSON.stringify(status)}:\n${p.stderr}`);
    }
    const recorded = countCalls(cfg.callLog);
    if (recorded !== n) throw new MeasureError(`the call log holds ${recorded} tools/call records, not ${n}`);
    if (!existsSync(out)) throw new MeasureError(`callgrind wrote no ${out}:\n${p.stderr}`);
    const ir = parseIr(readFileSync(out, 'utf8'));
    if (!ir) throw new MeasureError(`${out}: no summary/totals line`);
    return { ir, upstreamConnections: up.connections };
  } finally {
    if (p && !p.status) {
      p.child.kill('SIGKILL');
      await p.exited;
    }
    up.server.closeAllConnections?.();
    up.server.close();
  }
}

/** Instructions per tools/call from two runs. */
async function measure(fault) {
  const n1 = intEnv('PERF_N1', 200);
  const n2 = intEnv('PERF_N2', 1200);
  if (!(n2 > n1 && n1 >= 1)) throw new MeasureError(`PERF_N1=${n1}, PERF_N2=${n2}: need 1 <= N1 < N2`);
  const bin = wardenBin();
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    throw new MeasureError('valgrind is not installed (tests/deps.sh installs it: make deps)');
  }
  const work = mkdtempSync(path.join(tmpdir(), 'mcpwarden-perf-'));
  try {
    const t0 = Date.now();
    const a = await runWithPorts(work, bin, n1, fault);
    const b = await runWithPorts(work, bin, n2, fault);
    const perCall = (b.ir - a.ir) / (n2 - n1);
    log(`Ir(${n1} calls) = ${a.ir}, Ir(${n2} calls) = ${b.ir}, upstream connections ${a.upstreamConnections}/${b.upstreamConnections}, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    if (!(perCall > 0)) throw new MeasureError(`Ir did not grow with the number of calls (${a.ir} -> ${b.ir})`);
    return { n1, n2, perCall: Math.round(perCall), bin };
  } finally {
    if (process.env.PERF_KEEP) log(`work directory kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

// ---- baseline -----------------------------------------------------------------

/** The figure from baseline.txt's `instructions_per_call N` line. */
function parseBaseline(text) {
  const m = text.match(/^instructions_per_call\s+(\d+)\s*$/m);
  return m && Number(m[1]) > 0 ? Number(m[1]) : null;
}

function readBaseline() {
  const env = process.env.PERF_BASELINE;
  if (env !== undefined && env !== '') {
    if (!/^[0-9]+$/.test(env) || Number(env) <= 0) throw new MeasureError(`PERF_BASELINE=${env}: not a positive whole number`);
    return { figure: Number(env), from: 'PERF_BASELINE' };
  }
  if (!existsSync(BASELINE_FILE)) throw new MeasureError(`${BASELINE_FILE} is missing: run \`make perf-baseline\``);
  const text = readFileSync(BASELINE_FILE, 'utf8');
  const figure = parseBaseline(text);
  if (!figure) throw new MeasureError(`${BASELINE_FILE}: no \`instructions_per_call N\` line`);
  const flags = text.match(/^# flags: (.*)$/m);
  return { figure, from: path.relative(REPO, BASELINE_FILE), flags: flags ? flags[1] : null };
}

/** The verdict: {ok, allowed, change, text}. */
function judge(measured, baseline) {
  const allowed = Math.floor(baseline * (1 + ALLOWED_GROWTH));
  const change = (measured - baseline) / baseline;
  const pct = `${change >= 0 ? '+' : ''}${(change * 100).toFixed(1)}%`;
  const figures = `measured ${measured} instructions per tools/call, baseline ${baseline}, allowed up to ${allowed} (+${ALLOWED_GROWTH * 100}%)`;
  if (measured > allowed) {
    return { ok: false, allowed, change,
      text: `FAIL: ${figures}: ${pct} over the baseline. Find what made the hot path costlier ` +
        '(callgrind_annotate on PERF_KEEP=1 output), or, if the cost is accepted, run `make perf-baseline` and commit tests/perf/baseline.txt.' };
  }
  const note = change < -ALLOWED_GROWTH
    ? ` (${pct}: faster; \`make perf-baseline\` locks the gain in)` : ` (${pct})`;
  return { ok: true, allowed, change, text: `OK: ${figures}${note}` };
}

function toolVersion(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return (r.stdout || '').split('\n')[0].trim() || `${cmd}: unknown`;
}

function writeBaseline(m) {
  const cc = process.env.CC || 'cc';
  const text = [
    '# Instructions (callgrind Ir) per proxied tools/call, full inspection on.',
    '# Checked by `make perf-guard` (part of `make test`): it fails above this',
    `# figure + ${ALLOWED_GROWTH * 100}%. Rewritten by \`make perf-baseline\`; see tests/perf/README.md.`,
    `# measured: ${new Date().toISOString().slice(0, 10)}, (Ir(${m.n2}) - Ir(${m.n1})) / ${m.n2 - m.n1}, config tests/perf/guard.json`,
    `# binary: ${path.relative(REPO, m.bin) || m.bin}, compiler ${toolVersion(cc, ['--version'])}`,
    `# flags: ${process.env.PERF_BUILD || 'unknown (not run from make)'}`,
    `# ${toolVersion('valgrind', ['--version'])}, node ${process.version}`,
    `instructions_per_call ${m.perCall}`,
    '',
  ].join('\n');
  writeFileSync(BASELINE_FILE, text);
  log(`wrote ${path.relative(REPO, BASELINE_FILE)}: instructions_per_call ${m.perCall}`);
}

// ---- self-test ---------------------------------------------------------------

/* Run this script again with `env` and return {code, out}. */
function rerun(env) {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url)],
    { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

function selfTest() {
  const fails = [];
  const check = (cond, what) => { if (!cond) fails.push(what); };

  check(parseIr('events: Ir\nsummary: 123456\n') === 123456, 'parseIr reads summary:');
  check(parseIr('events: Ir\ntotals: 42\n') === 42, 'parseIr reads totals:');
  check(parseIr('events: Ir\n') === null, 'parseIr: no figure is no measurement');
  check(parseBaseline('# c\ninstructions_per_call 9000\n') === 9000, 'parseBaseline reads the figure');
  check(parseBaseline('# only comments\n') === null, 'parseBaseline: no figure is an error');
  check(judge(1100, 1000).ok && !judge(1101, 1000).ok, 'judge: +10% passes, beyond fails');

  // Small N: the point is the verdict, not the figure.
  const small = { PERF_N1: '5', PERF_N2: '15' };
  const low = rerun({ ...small, PERF_BASELINE: '1' });
  check(low.code === 1 && /FAIL: measured \d+ instructions per tools\/call, baseline 1, allowed up to 1 /.test(low.out),
    `an artificially low baseline fails with measured vs baseline vs allowed (exit ${low.code}):\n${low.out}`);

  const broken = rerun({ ...small, PERF_BASELINE: '1', PERF_FAULT: 'upstream-error' });
  check(broken.code === 2 && /measurement failed: tools\/call \(id 1\) failed: HTTP 5\d\d/.test(broken.out),
    `failing requests fail the measurement (exit ${broken.code}):\n${broken.out}`);

  const nobin = rerun({ ...small, MCPWARDEN_BIN: '/nonexistent/mcpwarden' });
  check(nobin.code === 2 && /measurement failed: .*does not exist/.test(nobin.out),
    `a missing binary fails the measurement (exit ${nobin.code}):\n${nobin.out}`);

  const notproxy = rerun({ ...small, MCPWARDEN_BIN: '/bin/false' });
  check(notproxy.code === 2 && /measurement failed: mcpwarden exited/.test(notproxy.out),
    `a proxy that does not start fails the measurement (exit ${notproxy.code}):\n${notproxy.out}`);

  if (fails.length) {
    for (const f of fails) log(`self-test FAILED: ${f}`);
    return 1;
  }
  log('self-test: OK (low baseline fails, failed requests and a dead proxy fail the measurement)');
  return 0;
}

// ---- main --------------------------------------------------------------------

async function main(argv) {
  if (argv[0] === '--self-test') return selfTest();
  try {
    if (argv[0] === '--repeat') {
      const k = Number(argv[1] || 3);
      const figures = [];
      for (let i = 0; i < k; i++) figures.push((await measure()).perCall);
      const lo = Math.min(...figures);
      const hi = Math.max(...figures);
      log(`${k} runs: ${figures.join(', ')} instructions per tools/call; spread ${hi - lo} (${((hi - lo) / lo * 100).toFixed(2)}%)`);
      return 0;
    }
    if (argv[0] === '--baseline') {
      writeBaseline(await measure());
      return 0;
    }
    if (argv.length) throw new MeasureError(`unknown argument ${argv[0]} (see the head of ${path.relative(REPO, fileURLToPath(import.meta.url))})`);
    const base = readBaseline();
    const m = await measure(process.env.PERF_FAULT);
    const v = judge(m.perCall, base.figure);
    log(`${v.text} [baseline from ${base.from}]`);
    // Counts depend on the compiler flags: say so when they differ.
    const flags = process.env.PERF_BUILD;
    if (flags && base.flags && flags !== base.flags) {
      log(`note: this binary was built with "${flags}", the baseline with "${base.flags}"`);
    }
    return v.ok ? 0 : 1;
  } catch (e) {
    // Anything that stopped the measurement fails the guard.
    log(`measurement failed: ${e instanceof MeasureError ? e.message : e.stack}`);
    return 2;
  }
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
  log(`measurement failed: ${e.stack || e}`);
  process.exitCode = 2;
});

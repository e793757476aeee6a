// Child processes for the integration suites: server-everything and the real
// ./mcpwarden binary. Every child is tracked; stopAll() (call it from an
// `after` hook) ends them, and an exit/signal hook SIGKILLs whatever is left
// so that a crashed or timed-out test file leaves no stray process.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { canConnect } from './ports.mjs';
import { sleep, withTimeout } from './util.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '../../..');
export const WARDEN_BIN = process.env.MCPWARDEN_BIN
  ? path.resolve(process.env.MCPWARDEN_BIN)
  : path.join(REPO_ROOT, 'mcpwarden');
export const EVERYTHING_ENTRY = path.join(REPO_ROOT,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const EVERYTHING_PRELOAD = path.join(here, 'everything-preload.mjs');

const live = new Set();

function killLeftovers() {
  for (const p of live) {
    try { p.child.kill('SIGKILL'); } catch { /* already gone */ }
  }
}
process.once('exit', killLeftovers);
for (const [sig, num] of [['SIGINT', 2], ['SIGTERM', 15], ['SIGHUP', 1]]) {
  process.once(sig, () => { killLeftovers(); process.exit(128 + num); });
}

/**
 * Spawn a tracked child. Returns a handle whose `stdout`/`stderr` accumulate
 * the output as text, `exited` resolves with {code, signal}, and
 * waitForStderr(re) waits for a line of output.
 */
export function spawnTracked(name, cmd, args, { env = {}, cwd = REPO_ROOT, stdinPipe = false } = {}) {
  const child = spawn(cmd, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: [stdinPipe ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  const h = {
    name,
    child,
    pid: child.pid,
    stdout: '',
    stderr: '',
    exitStatus: null,
  };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { h.stdout += d; });
  child.stderr.on('data', (d) => { h.stderr += d; });
  h.exited = new Promise((resolve) => {
    child.once('error', (err) => {
      h.exitStatus = { code: null, signal: null, error: err };
      live.delete(h);
      resolve(h.exitStatus);
    });
    child.once('exit', (code, signal) => {
      h.exitStatus = { code, signal };
      live.delete(h);
      resolve(h.exitStatus);
    });
  });
  h.waitForStderr = (re, ms = 5000) => waitForOutput(h, 'stderr', re, ms);
  h.waitForStdout = (re, ms = 5000) => waitForOutput(h, 'stdout', re, ms);
  live.add(h);
  return h;
}

async function waitForOutput(h, stream, re, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const m = h[stream].match(re);
    if (m) return m;
    if (h.exitStatus) throw new Error(`${h.name} exited (${JSON.stringify(h.exitStatus)}) before ${stream} matched ${re}\n${stream}: ${h[stream]}`);
    if (Date.now() >= deadline) throw new Error(`timed out after ${ms} ms waiting for ${h.name} ${stream} to match ${re}\n${stream}: ${h[stream]}`);
    await sleep(20);
  }
}

/** Wait until the child accepts TCP on 127.0.0.1:port, failing early if it exits. */
export async function waitForPort(h, port, ms = 10000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (h.exitStatus) {
      throw new Error(`${h.name} exited ${JSON.stringify(h.exitStatus)} before listening on ${port}\nstderr:\n${h.stderr}\nstdout:\n${h.stdout}`);
    }
    if (await canConnect(port)) return;
    if (Date.now() >= deadline) {
      throw new Error(`${h.name} did not accept on 127.0.0.1:${port} within ${ms} ms\nstderr:\n${h.stderr}`);
    }
    await sleep(30);
  }
}

/** SIGTERM, then SIGKILL after `grace` ms; resolves with the exit status. */
export async function stop(h, { signal = 'SIGTERM', grace = 3000 } = {}) {
  if (!h || h.exitStatus) return h?.exitStatus;
  try { h.child.kill(signal); } catch { /* gone */ }
  try {
    return await withTimeout(h.exited, grace, `${h.name} to exit`);
  } catch {
    try { h.child.kill('SIGKILL'); } catch { /* gone */ }
    return withTimeout(h.exited, 2000, `${h.name} to die`);
  }
}

/** Stop every child still running (use in `after` hooks). */
export async function stopAll() {
  await Promise.all([...live].map((h) => stop(h)));
}

/**
 * Start @modelcontextprotocol/server-everything in streamableHttp mode on
 * `port` (bound to 127.0.0.1, and exiting with us, by everything-preload).
 */
export async function startEverything(port) {
  const h = spawnTracked(`server-everything:${port}`, process.execPath,
    ['--import', EVERYTHING_PRELOAD, EVERYTHING_ENTRY, 'streamableHttp'],
    { env: { PORT: String(port), MCPWARDEN_IT_STDIN_GUARD: '1' }, stdinPipe: true });
  await waitForPort(h, port, 15000);
  return { proc: h, port, url: `http://127.0.0.1:${port}/mcp` };
}

export function requireWarden() {
  if (!existsSync(WARDEN_BIN)) {
    throw new Error(`${WARDEN_BIN} does not exist: run \`make\` first`);
  }
}

/**
 * Start ./mcpwarden with `args` (which must include the --listen port or a
 * config naming it) and wait until `port` accepts TCP.
 */
export async function startWarden(port, args, { env = {} } = {}) {
  requireWarden();
  const h = spawnTracked(`mcpwarden:${port}`, WARDEN_BIN, args, { env });
  await waitForPort(h, port, 10000);
  return { proc: h, port, base: `http://127.0.0.1:${port}`, url: `http://127.0.0.1:${port}/mcp` };
}

/** Run ./mcpwarden to completion (CLI cases): {code, signal, stdout, stderr}. */
export async function runWarden(args, { timeout = 5000 } = {}) {
  requireWarden();
  const h = spawnTracked('mcpwarden-cli', WARDEN_BIN, args);
  let status;
  try {
    status = await withTimeout(h.exited, timeout, `mcpwarden ${args.join(' ')} to exit`);
  } finally {
    await stop(h, { signal: 'SIGKILL' });
  }
  return { ...status, stdout: h.stdout, stderr: h.stderr };
}

/**
 * Wait for a line of `h`'s stderr matching `re` that was written after
 * character offset `since` (take it as h.stderr.length before the action
 * whose line this is), so that an earlier line of the same text does not
 * count. Fails early if the process exits. Resolves with the match.
 */
export function waitForStderrSince(h, since, re, ms = 5000) {
  const view = { name: h.name, get stderr() { return h.stderr.slice(since); }, get exitStatus() { return h.exitStatus; } };
  return waitForOutput(view, 'stderr', re, ms);
}

/**
 * SIGHUP a running mcpwarden and wait for what it says about the reload,
 * written after the signal: "SIGHUP: configuration reloaded", or a line
 * saying it is still running the old configuration (with the reason on
 * the lines after it). Resolves {ok, text, since}: ok true for a reload
 * that applied; text is the stderr written since the signal, which began
 * at offset `since` (for waitForStderrSince). Rejects if the
 * process exits (a binary that dies on SIGHUP fails the test) or says
 * neither within `ms`.
 */
export async function reloadWarden(h, ms = 5000) {
  const since = h.stderr.length;
  h.child.kill('SIGHUP');
  const m = await waitForStderrSince(h, since,
    /SIGHUP: (configuration reloaded|[^\n]*still running the old (?:one|configuration))/, ms);
  return { ok: m[1] === 'configuration reloaded', text: h.stderr.slice(since), since };
}

/**
 * Start ./mcpwarden like startWarden, but know it is up from its own log
 * line ("listening on 127.0.0.1:PORT", written once every worker's
 * listener is bound) instead of connecting to it: no probe connection
 * sits in a worker's accept queue to be counted later, so per-worker
 * counters start from the test's own traffic. `lines`: more regexps the
 * start-up log must show (e.g. the admin endpoint's line).
 */
export async function startWardenQuiet(port, args, { env = {}, lines = [], ms = 10000 } = {}) {
  requireWarden();
  const h = spawnTracked(`mcpwarden:${port}`, WARDEN_BIN, args, { env });
  for (const re of [new RegExp(`listening on 127\\.0\\.0\\.1:${port}\\b`), ...lines]) {
    await h.waitForStderr(re, ms);
  }
  return { proc: h, port, base: `http://127.0.0.1:${port}`, url: `http://127.0.0.1:${port}/mcp` };
}

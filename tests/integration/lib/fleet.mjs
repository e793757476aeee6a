// A fleet of mcpwarden replicas, and HAProxy in front of them with the
// shipped conf/haproxy/mcpwarden.cfg (tests/integration/replicas.test.mjs;
// reusable by any test that needs several replicas, e.g. a Prometheus
// scraping them).
//
//   startFleet({n, upstream})   n replicas r1..rN of one upstream, each with
//                               its own listener, admin endpoint (token) and
//                               replica_id; up once each one's log says so.
//   fleet.metrics(r)            that replica's /metrics text
//   fleet.kill(r)               SIGKILL, resolved once it is gone
//   renderHaproxyConfig(...)    the shipped file with only its addresses
//                               and ports replaced (each one checked)
//   startHaproxy(fleet)         haproxy -db on it; up once its stats socket
//                               says every replica is UP after a passing
//                               /healthz + /readyz check
//   haproxy.stat()              "show stat" rows of the backend
//   haproxy.waitStatus(name, re) until that server's status matches

import net from 'node:net';
import path from 'node:path';
import { readFileSync, writeFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { freePort } from './ports.mjs';
import { REPO_ROOT, spawnTracked, startWardenQuiet, waitForPort, stop } from './procs.mjs';
import { writeConfig } from './conf.mjs';
import { request } from './http.mjs';
import { withTimeout, waitFor } from './util.mjs';

export const HAPROXY_BIN = process.env.HAPROXY_BIN ?? '/usr/sbin/haproxy';
export const HAPROXY_CFG = path.join(REPO_ROOT, 'conf/haproxy/mcpwarden.cfg');
export const BACKEND = 'mcpwarden';

/**
 * Start n replicas of `upstream` (a URL), or of `upstreams` (config
 * upstream objects, for several). Each gets replica_id r<i>, a
 * config written for it (schema-checked like every test config), one
 * worker (the machine is small; several workers are workers.test.mjs's
 * business) and `extra` merged into its top level.
 */
export async function startFleet({ n = 3, upstream, upstreams, token = 'fleet-admin-token-0123', extra = {} }) {
  const replicas = [];
  for (let i = 1; i <= n; i++) {
    const port = await freePort();
    const adminPort = await freePort();
    const id = `r${i}`;
    const conf = writeConfig({
      listen: `127.0.0.1:${port}`,
      replica_id: id,
      workers: 1,
      upstreams: upstreams ?? [{ name: 'everything', url: upstream }],
      ...extra,
      admin: { listen: `127.0.0.1:${adminPort}`, token },
    });
    replicas.push({ id, port, adminPort, conf });
  }
  // Started together: each waits for its own log lines.
  await Promise.all(replicas.map(async (r) => {
    const w = await startWardenQuiet(r.port, ['-c', r.conf],
      { lines: [new RegExp(`admin endpoint on http://127\\.0\\.0\\.1:${r.adminPort}/`)] });
    Object.assign(r, w, { admin: `http://127.0.0.1:${r.adminPort}` });
  }));
  const auth = { authorization: `Bearer ${token}` };
  return {
    replicas,
    token,
    byId: (id) => replicas.find((r) => r.id === id),
    adminGet: (r, p) => request(r.admin + p, { headers: auth }),
    async metrics(r) {
      const res = await request(r.admin + '/metrics', { headers: auth });
      if (res.status !== 200) throw new Error(`${r.id} /metrics: ${res.status} ${res.text}`);
      return res.text;
    },
    /** SIGKILL: no drain, no goodbye, as a crashed or OOM-killed pod. */
    async kill(r) {
      r.proc.child.kill('SIGKILL');
      return withTimeout(r.proc.exited, 5000, `${r.id} to die`);
    },
  };
}

/**
 * The shipped HAProxy file with its per-deployment addresses replaced:
 * the bind address, each server's address, MCP port and admin (check)
 * port, and the stats socket. Everything else is the file as shipped;
 * a shipped line that no longer has the expected shape fails here.
 */
export function renderHaproxyConfig({ bindPort, servers, statsSocket }) {
  let text = readFileSync(HAPROXY_CFG, 'utf8');
  const once = (re, to, what) => {
    const hits = text.match(new RegExp(re.source, re.flags.includes('g') ? re.flags : re.flags + 'g'));
    if (!hits || hits.length !== 1) throw new Error(`${HAPROXY_CFG}: expected one ${what}, found ${hits?.length ?? 0}`);
    text = text.replace(re, to);
  };
  once(/^(\s*bind) :8080$/m, `$1 127.0.0.1:${bindPort}`, 'bind :8080 line');
  once(/^(\s*stats socket) \/run\/haproxy\/mcpwarden\.sock /m, `$1 ${statsSocket} `, 'stats socket line');
  const shipped = [...text.matchAll(/^\s*server (\S+) \S+ check port \d+$/gm)].map((m) => m[1]);
  if (shipped.length !== servers.length) {
    throw new Error(`${HAPROXY_CFG} has ${shipped.length} server lines, the fleet ${servers.length} replicas`);
  }
  for (const s of servers) {
    once(new RegExp(`^(\\s*server ${s.id}) \\S+ check port \\d+$`, 'm'),
      `$1 127.0.0.1:${s.port} check port ${s.adminPort}`, `server ${s.id} line`);
  }
  return text;
}

/** One command on HAProxy's stats socket (a unix path); resolves its answer. */
export function haproxyCommand(socketPath, cmd, ms = 3000) {
  return withTimeout(new Promise((resolve, reject) => {
    const s = net.connect({ path: socketPath });
    let out = '';
    s.setEncoding('utf8');
    s.on('connect', () => s.write(cmd + '\n'));
    s.on('data', (d) => { out += d; });
    s.on('end', () => resolve(out));
    s.on('error', reject);
  }), ms, `haproxy "${cmd}"`);
}

/** "show stat" CSV → rows as objects keyed by the header's names. */
function parseStat(csv) {
  const lines = csv.split('\n').filter((l) => l.length);
  const head = lines.shift().replace(/^# /, '').split(',');
  return lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [head[i], v])));
}

/** Start haproxy on the rendered file, in front of `fleet`. */
export async function startHaproxy(fleet, { env = {} } = {}) {
  if (!existsSync(HAPROXY_BIN)) throw new Error(`${HAPROXY_BIN} is missing: apt-get install haproxy`);
  const port = await freePort();
  // Its own short directory: a unix socket path has at most 107 bytes.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-hx-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const statsSocket = path.join(dir, 'stats.sock');
  const cfg = path.join(dir, 'haproxy.cfg');
  writeFileSync(cfg, renderHaproxyConfig({ bindPort: port, servers: fleet.replicas, statsSocket }));
  const h = spawnTracked('haproxy', HAPROXY_BIN, ['-db', '-f', cfg],
    { env: { MCPWARDEN_ADMIN_TOKEN: fleet.token, ...env } });
  await waitForPort(h, port, 10000);
  const hx = {
    proc: h,
    port,
    cfg,
    statsSocket,
    base: `http://127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}/mcp`,
    sseUrl: `http://127.0.0.1:${port}/sse`,
    async stat() {
      const rows = parseStat(await haproxyCommand(statsSocket, 'show stat'));
      return rows.filter((r) => r.pxname === BACKEND && r.svname !== 'BACKEND');
    },
    /** Until server `name`'s status matches `re` (and its last check `check`, if given). */
    waitStatus(name, re, { check, ms = 10000 } = {}) {
      return waitFor(async () => {
        const row = (await hx.stat()).find((r) => r.svname === name);
        return row && re.test(row.status) && (!check || check.test(row.check_status)) ? row : null;
      }, { timeout: ms, interval: 50, what: `haproxy server ${name} status ${re}` });
    },
    stop: () => stop(h),
  };
  // Up means checked: the health checks reached each replica's /healthz and
  // /readyz with the admin token (L7OK), not just "not yet checked".
  for (const r of fleet.replicas) await hx.waitStatus(r.id, /^UP/, { check: /^L7OK$/ });
  return hx;
}

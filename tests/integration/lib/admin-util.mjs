// Helpers for the admin endpoint suites (admin.test.mjs, page.test.mjs):
//
//   startAdminWarden(opts)   ./mcpwarden with a generated config whose
//                            "admin" section is given; waits for both the
//                            MCP and the admin listener. Returns {proc,
//                            url (MCP), admin (base URL), adminPort, port,
//                            conf}.
//   startAdminWardenQuiet(opts)  the same, up by its log lines: no probe
//                            connection is counted on /metrics.
//   adminGet(base, path)     GET on the admin endpoint: {status, headers,
//                            text, json()} (lib/http.mjs request()).
//   waitForCalls(base, pred) polls GET /calls until pred(calls) holds.
//   openCallStream(base)     GET /calls/stream consumed as it arrives
//                            (lib/http.mjs openStream) plus records(),
//                            waitRecords(pred, ms).
//   promtoolCheck(text)      `promtool check metrics` on a scrape:
//                            {code, stdout, stderr}.
//   metricValue(text, name, labels)  the sample's value, or undefined.

import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { freePort } from './ports.mjs';
import { startWarden, startWardenQuiet, waitForPort } from './procs.mjs';
import { writeConfig } from './conf.mjs';
import { request, openStream } from './http.mjs';
import { waitFor, withTimeout } from './util.mjs';

/**
 * Start mcpwarden with `upstreams` (array of config upstreams, or one URL
 * string) and an `admin` section (its "listen" is filled with a free
 * loopback port unless given). `extra` merges into the config's top level.
 */
export async function startAdminWarden({ upstreams, admin = {}, extra = {}, args = [] }) {
  const port = await freePort();
  const adminPort = await freePort();
  const ups = typeof upstreams === 'string' ? [{ name: 'default', url: upstreams }] : upstreams;
  const conf = writeConfig({
    listen: `127.0.0.1:${port}`,
    upstreams: ups,
    ...extra,
    admin: { listen: `127.0.0.1:${adminPort}`, ...admin },
  });
  const w = await startWarden(port, ['-c', conf, ...args]);
  await waitForPort(w.proc, adminPort, 10000);
  return { ...w, conf, adminPort, admin: `http://127.0.0.1:${adminPort}` };
}

/**
 * startAdminWarden without probe connections (lib/procs.mjs
 * startWardenQuiet): up once the log says both listeners are.
 */
export async function startAdminWardenQuiet({ upstreams, admin = {}, extra = {}, args = [] }) {
  const port = await freePort();
  const adminPort = await freePort();
  const ups = typeof upstreams === 'string' ? [{ name: 'default', url: upstreams }] : upstreams;
  const conf = writeConfig({
    listen: `127.0.0.1:${port}`,
    upstreams: ups,
    ...extra,
    admin: { listen: `127.0.0.1:${adminPort}`, ...admin },
  });
  const w = await startWardenQuiet(port, ['-c', conf, ...args],
    { lines: [new RegExp(`admin endpoint on https?://127\\.0\\.0\\.1:${adminPort}/`)] });
  return { ...w, conf, adminPort, admin: `http://127.0.0.1:${adminPort}` };
}

export function adminGet(base, path, { headers = {}, method = 'GET', timeout = 5000 } = {}) {
  return request(base + path, { method, headers, timeout });
}

/** GET /calls (query string in `query`), parsed. */
export async function getCalls(base, query = '', { headers } = {}) {
  const r = await adminGet(base, '/calls' + (query ? '?' + query : ''), { headers });
  assert.equal(r.status, 200, `/calls?${query}: ${r.status} ${r.text}`);
  assert.match(r.headers['content-type'] ?? '', /^application\/json/);
  return r.json();
}

/** Poll /calls until pred(calls) is truthy; returns that value. */
export function waitForCalls(base, pred, { timeout = 3000, query = 'limit=1000', what = 'records on /calls' } = {}) {
  return waitFor(async () => pred((await getCalls(base, query)).calls), { timeout, interval: 25, what });
}

/** Open GET /calls/stream. `since` (query) and `lastEventId` (header) are optional. */
export async function openCallStream(base, { since, lastEventId, headers = {}, query = '' } = {}) {
  const q = [since !== undefined ? `since=${since}` : '', query].filter(Boolean).join('&');
  const h = { ...headers };
  if (lastEventId !== undefined) h['last-event-id'] = String(lastEventId);
  const st = await openStream(`${base}/calls/stream${q ? '?' + q : ''}`, { headers: h });
  st.records = () => st.sse.events.filter((e) => e.event === 'message' && e.data).map((e) => ({ ...JSON.parse(e.data), _id: e.id, _t: e.t }));
  st.waitRecords = (pred, ms = 3000, what = 'stream records') =>
    waitFor(() => pred(st.records()), { timeout: ms, interval: 10, what });
  return st;
}

/** Run `promtool check metrics` with the scrape on stdin. */
export function promtoolCheck(text) {
  return withTimeout(new Promise((resolve, reject) => {
    const p = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('error', (e) => reject(new Error(`promtool not runnable (Debian package prometheus): ${e.message}`)));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
    p.stdin.end(text);
  }), 10000, 'promtool check metrics');
}

/** Value of one sample: metricValue(text, 'mcpwarden_tool_calls_total', {tool: 'echo', outcome: 'ok'}). */
export function metricValue(text, name, labels = {}) {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = {};
    for (const p of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have[p[1]] = p[2];
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** RFC 3339 UTC with microseconds, as records carry it. */
export const RFC3339_US = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

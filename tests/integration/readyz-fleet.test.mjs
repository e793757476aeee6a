// Readiness that does not grow with the fleet (issue 23, item 5): with 200
// upstreams configured, /readyz answers from the background probes' latest
// results at once.
//
//   small backlog  200 upstreams behind one server listening with Python's
//                  http.server backlog (5): the probes used to run when
//                  /readyz asked, all 200 connects at once; the SYNs past the
//                  backlog were dropped and TCP retried them a second later,
//                  so the first /readyz after a quiet second took ~1.04 s (a
//                  Kubernetes probe's default timeout is 1 s). Now a round
//                  runs in the background (its connects spread over the
//                  interval) and /readyz, asked after a quiet second (the
//                  server counted a whole round of probes meanwhile, with no
//                  /readyz), answers in far under 200 ms.
//   going down     200 upstreams, one on a server of its own that then stops
//                  listening: /readyz turns 503 naming it within the probe
//                  interval (plus a bounded slack), and 200 again once it
//                  listens anew; never more probes in flight than
//                  admin.probe_parallel.
//
// Every wait is on an event (lines from the server, /readyz's answers),
// bounded.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { freePort } from './lib/ports.mjs';
import { spawnTracked, stopAll } from './lib/procs.mjs';
import { startAdminWarden, adminGet } from './lib/admin-util.mjs';
import { waitFor, withTimeout } from './lib/util.mjs';

const T = { timeout: 60000 };
const FLEET = 200;
const FAST_MS = 200; // far under the old ~1040 ms, safe on a loaded 2-core box

/** A server that accepts and closes, with listen backlog 5; prints its
 * port, then every accept's running count. */
async function startSmallBacklogServer() {
  const h = spawnTracked('backlog-5 server', 'python3', ['-u', '-c', `
import socket
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen(5)  # socketserver's request_queue_size, http.server's default
print('port', s.getsockname()[1], flush=True)
n = 0
while True:
    c, _ = s.accept()
    c.close()
    n += 1
    print('accepts', n, flush=True)
`]);
  const m = await h.waitForStdout(/port (\d+)/, 10000);
  const accepts = () => Number([...h.stdout.matchAll(/accepts (\d+)/g)].at(-1)?.[1] ?? 0);
  return { h, port: Number(m[1]), accepts };
}

function fleet(port, n, extra = []) {
  const ups = [];
  for (let i = 0; i < n; i++) ups.push({ name: `u${i}`, path: `/u${i}/mcp`, url: `http://127.0.0.1:${port}/mcp` });
  return [...ups, ...extra];
}

async function timedReadyz(admin) {
  const t0 = performance.now();
  const r = await adminGet(admin, '/readyz');
  return { r, ms: performance.now() - t0, body: r.json() };
}

after(async () => { await stopAll(); });

describe('200 upstreams behind one small-backlog server', () => {
  let srv;
  let w;

  before(async () => {
    srv = await startSmallBacklogServer();
    w = await startAdminWarden({ upstreams: fleet(srv.port, FLEET) });
  }, T);

  test('start-up: the first /readyz answers within Kubernetes\' 1 s, then ready once every upstream is known', T, async () => {
    const first = await timedReadyz(w.admin);
    assert.ok(first.ms < 1000, `first /readyz took ${first.ms.toFixed(1)} ms`);
    // Not ready until known: an upstream not probed yet holds it back.
    if (first.r.status === 503)
      assert.ok(first.body.upstreams.some((u) => u.error === 'not probed' || !u.reachable), first.r.text);
    await waitFor(async () => (await adminGet(w.admin, '/readyz')).status === 200,
      { timeout: 15000, interval: 100, what: '/readyz 200 with 200 upstreams' });
  });

  test('after a quiet second the first /readyz answers at once, from a background round', T, async () => {
    // Quiet: no /readyz while the server counts a whole round of probes
    // (one per upstream), made in the background on the probes' schedule.
    const before = srv.accepts();
    await waitFor(() => srv.accepts() >= before + FLEET,
      { timeout: 10000, interval: 50, what: `${FLEET} background probe connections with no /readyz` });
    const { r, ms, body } = await timedReadyz(w.admin);
    assert.ok(ms < FAST_MS, `/readyz after a quiet second took ${ms.toFixed(1)} ms (bound ${FAST_MS} ms)`);
    assert.equal(body.upstreams.length, FLEET);
    assert.equal(body.probes.interval_ms, 1000);
    assert.ok(body.probes.rounds >= 2, JSON.stringify(body.probes.rounds));
    // Every result is there, younger than the staleness bound.
    for (const u of body.upstreams) {
      const age = body.probes.age_ms[u.upstream];
      assert.ok(Number.isInteger(age) && age <= body.probes.stale_after_ms, `${u.upstream}: age ${age}`);
    }
    assert.equal(r.status, body.upstreams.every((u) => u.reachable) ? 200 : 503);
    assert.ok(body.probes.peak_running >= 1 && body.probes.peak_running <= 16, JSON.stringify(body.probes));
  });
});

describe('an upstream going down among 200', () => {
  const INTERVAL = 250;
  const PARALLEL = 4;
  let steady;
  let flip;
  let flipPort;
  let w;

  const listen = (s, port) => new Promise((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => { s.off('error', reject); resolve(); });
  });
  const server = () => net.createServer((c) => c.destroy());

  before(async () => {
    steady = server();
    await listen(steady, 0);
    flip = server();
    flipPort = await freePort();
    await listen(flip, flipPort);
    w = await startAdminWarden({
      upstreams: fleet(steady.address().port, FLEET - 1,
        [{ name: 'flip', path: '/flip/mcp', url: `http://127.0.0.1:${flipPort}/mcp` }]),
      admin: { probe_interval_ms: INTERVAL, probe_parallel: PARALLEL, probe_timeout_ms: 500 },
    });
    await waitFor(async () => (await adminGet(w.admin, '/readyz')).status === 200,
      { timeout: 15000, interval: 50, what: '/readyz 200' });
  }, T);

  after(async () => {
    steady?.close();
    flip?.close();
  });

  /** Polls /readyz until pred(body, status); every answer must be fast. */
  async function pollUntil(pred, what) {
    const t0 = performance.now();
    let slowest = 0;
    const body = await waitFor(async () => {
      const { r, ms, body: b } = await timedReadyz(w.admin);
      slowest = Math.max(slowest, ms);
      return pred(b, r.status) && b;
    }, { timeout: 10000, interval: 20, what });
    return { body, elapsed: performance.now() - t0, slowest };
  }

  test('the upstream stops listening: 503 naming it within the interval; back to 200 when it listens again', T, async () => {
    // Within the interval, plus one probe's timeout and the slack a loaded
    // machine needs; the old on-demand probes had no interval at all.
    const bound = 2 * INTERVAL + 1000;
    await withTimeout(new Promise((resolve) => flip.close(resolve)), 5000, 'the flip server to close');
    const down = await pollUntil((b, status) => status === 503 &&
      b.upstreams.find((u) => u.upstream === 'flip')?.reachable === false, 'flip down on /readyz');
    assert.ok(down.elapsed < bound, `flip seen down after ${down.elapsed.toFixed(0)} ms (bound ${bound})`);
    const f = down.body.upstreams.find((u) => u.upstream === 'flip');
    assert.equal(f.error, 'connection refused or unreachable');
    assert.equal(down.body.upstreams.filter((u) => !u.reachable).length, 1, 'only flip is down');
    assert.ok(down.slowest < FAST_MS, `slowest /readyz ${down.slowest.toFixed(1)} ms`);

    flip = server();
    await listen(flip, flipPort);
    const up = await pollUntil((b, status) => status === 200, 'flip back on /readyz');
    assert.ok(up.elapsed < bound, `flip seen up after ${up.elapsed.toFixed(0)} ms (bound ${bound})`);
    assert.ok(up.slowest < FAST_MS, `slowest /readyz ${up.slowest.toFixed(1)} ms`);
  });

  test('probes in flight never exceed admin.probe_parallel', T, async () => {
    const { body } = await timedReadyz(w.admin);
    assert.equal(body.probes.parallel, PARALLEL);
    assert.ok(body.probes.peak_running >= 1 && body.probes.peak_running <= PARALLEL, JSON.stringify(body.probes));
    assert.ok(body.probes.running <= PARALLEL);
    assert.equal(body.probes.timeout_ms, 500);
  });
});

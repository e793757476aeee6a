// Running under systemd (issue 22, items 4 and 7): the unit file, the
// sd_notify datagrams mcpwarden sends, and SIGUSR1 reopening the call log.
//
//   1. `systemd-analyze verify` finds nothing to say about
//      conf/mcpwarden.service (ExecStart pointed at the built binary, as
//      verify wants it to exist), while it does complain about a broken
//      copy (so the check can fail); the unit stops later than a drain ends.
//   2. With NOTIFY_SOCKET naming a datagram socket of the test's
//      (peers/notify-socket.py: node has no unix datagram sockets), the real
//      binary sends READY=1 only once both the client port and the admin
//      port accept; RELOADING=1 with MONOTONIC_USEC (CLOCK_MONOTONIC, taken
//      between the signal and its arrival) then READY=1 around SIGHUP, also
//      when the reload is refused; STOPPING=1 on SIGTERM and nothing after;
//      WATCHDOG=1 every WATCHDOG_USEC/2.
//   3. SIGUSR1 after the call log was renamed: the old file keeps the older
//      records, each line whole, the new file at the configured path gets the
//      next one; a path that cannot be opened again keeps the old file.
//
// Everything waits on events: datagrams, log lines, file contents.

import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, renameSync, existsSync, rmSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, canConnect } from './lib/ports.mjs';
import { spawnTracked, stopAll, requireWarden, waitForPort, waitForStderrSince, WARDEN_BIN, REPO_ROOT } from './lib/procs.mjs';
import { writeConfig } from './lib/conf.mjs';
import { postJson } from './lib/http.mjs';
import { waitFor, withTimeout } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const NOTIFY_PEER = path.join(here, 'peers/notify-socket.py');
const UNIT = path.join(REPO_ROOT, 'conf/mcpwarden.service');
const T = { timeout: 30000 };

const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-systemd-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));

const peers = [];
after(async () => {
  await stopAll();
  for (const p of peers) await p.close();
});

/** CLOCK_MONOTONIC in µs (libuv's hrtime reads it on Linux). */
const monoUs = () => Number(process.hrtime.bigint() / 1000n);

/** The datagram socket: {path, msgs: [{t_us, msg}], waitMsg(pred, from)}. */
async function startNotifySocket() {
  const sock = path.join(tmp, `notify-${peers.length}.sock`);
  const h = spawnTracked('notify-socket', 'python3', [NOTIFY_PEER, sock], { stdinPipe: true });
  h.child.stdin.on('error', () => { /* it exited first (stopAll) */ });
  await h.waitForStdout(/"listening"/, 5000);
  const msgs = () => h.stdout.split('\n').filter((l) => l.startsWith('{"t_us"')).map((l) => JSON.parse(l));
  const s = {
    path: sock,
    get msgs() { return msgs(); },
    /** Index of the first message at or after `from` matching pred. */
    waitMsg: (pred, from = 0, ms = 5000) => waitFor(() => {
      const i = msgs().findIndex((m, j) => j >= from && pred(m.msg));
      return i >= 0 ? i + 1 : 0;   /* waitFor wants a truthy value */
    }, { timeout: ms, what: `a notification matching ${pred}` }).then((n) => n - 1),
    /** The messages but the watchdog's, in order. */
    states: () => msgs().map((m) => m.msg).filter((m) => m !== 'WATCHDOG=1'),
    close: async () => {
      if (!h.exitStatus) h.child.stdin.end();
      await withTimeout(h.exited, 3000, 'notify-socket to exit');
    },
  };
  peers.push(s);
  return s;
}

async function startNotified(conf, env) {
  requireWarden();
  const nsock = await startNotifySocket();
  const w = spawnTracked('mcpwarden', WARDEN_BIN, ['-c', conf], { env: { NOTIFY_SOCKET: nsock.path, ...env } });
  return { w, nsock };
}

describe('the unit file', () => {
  test('systemd-analyze verify says nothing about conf/mcpwarden.service', T, () => {
    const unit = readFileSync(UNIT, 'utf8');
    assert.match(unit, /^ExecStart=\/usr\/bin\/mcpwarden -c \/etc\/mcpwarden\/mcpwarden\.json$/m);
    const dir = mkdtempSync(path.join(tmp, 'unit-'));
    const copy = path.join(dir, 'mcpwarden.service');
    // verify wants ExecStart's binary to exist: the one just built.
    writeFileSync(copy, unit.replace(/^ExecStart=\/usr\/bin\/mcpwarden /m, `ExecStart=${WARDEN_BIN} `));
    // --man=no: the man pages are only there once installed.
    const r = spawnSync('systemd-analyze', ['verify', '--man=no', copy], { encoding: 'utf8' });
    assert.equal(r.error, undefined, String(r.error));
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal((r.stdout + r.stderr).trim(), '', 'systemd-analyze verify has something to say');

    // The same check on a broken copy speaks (so a clean run means something).
    writeFileSync(copy, readFileSync(copy, 'utf8').replace(/^Type=notify$/m, 'Type=notifyy')
      .replace('ProtectSystem=strict', 'ProtectSystem=very'));
    const bad = spawnSync('systemd-analyze', ['verify', '--man=no', copy], { encoding: 'utf8' });
    assert.match(bad.stdout + bad.stderr, /notifyy/);
    assert.match(bad.stdout + bad.stderr, /protect system value, ignoring: very/);
  });

  test('the unit is Type=notify, reloads with HUP, is hardened and stops later than a drain ends', () => {
    const unit = readFileSync(UNIT, 'utf8');
    const key = (k) => [...unit.matchAll(new RegExp(`^${k}=(.*)$`, 'gm'))].map((m) => m[1]);
    assert.deepEqual(key('Type'), ['notify']);
    assert.deepEqual(key('ExecReload'), ['/bin/kill -HUP $MAINPID']);
    assert.deepEqual(key('CapabilityBoundingSet'), ['']);
    assert.deepEqual(key('NoNewPrivileges'), ['yes']);
    assert.deepEqual(key('ProtectSystem'), ['strict']);
    assert.deepEqual(key('RestrictAddressFamilies'), ['AF_INET AF_INET6 AF_UNIX']);
    assert.ok(key('DynamicUser')[0] === 'yes' || key('User')[0], 'no user of its own');
    assert.ok(Number(key('WatchdogSec')[0]) > 0, 'no WatchdogSec');
    // The packaged configuration's drain, plus the 1 s its answers get.
    const drainMs = JSON.parse(readFileSync(path.join(REPO_ROOT, 'conf/mcpwarden.json'), 'utf8')).timeouts.drain_ms;
    assert.ok(Number(key('TimeoutStopSec')[0]) * 1000 > drainMs + 1000, `TimeoutStopSec ${key('TimeoutStopSec')} <= drain ${drainMs} ms + 1 s`);
  });
});

describe('sd_notify', () => {
  test('READY=1 once every port accepts, RELOADING/READY around SIGHUP (applied and refused), STOPPING=1 on SIGTERM, WATCHDOG=1 every half period', T, async () => {
    const port = await freePort();
    const adminPort = await freePort();
    const body = {
      listen: `127.0.0.1:${port}`,
      upstreams: [{ name: 'up', path: '/mcp', url: 'http://127.0.0.1:9/mcp' }],
      workers: 2,
      admin: { listen: `127.0.0.1:${adminPort}` },
      log: { level: 'info' },
    };
    const conf = writeConfig(body);
    const { w, nsock } = await startNotified(conf, { WATCHDOG_USEC: '200000' });

    const ready = await nsock.waitMsg((m) => m === 'READY=1');
    // At READY time both ports already accept (connects right away).
    const [client, admin] = await Promise.all([canConnect(port), canConnect(adminPort)]);
    assert.ok(client, 'READY=1 came before the client port accepted');
    assert.ok(admin, 'READY=1 came before the admin port accepted');
    assert.match(w.stderr, new RegExp(`listening on 127\\.0\\.0\\.1:${port}`));

    // The watchdog: at least two after READY, every ~100 ms (half of 200 ms).
    await nsock.waitMsg((m) => m === 'WATCHDOG=1', ready + 2);
    const wd = nsock.msgs.slice(ready).filter((m) => m.msg === 'WATCHDOG=1');
    assert.ok(wd.length >= 2);
    for (let i = 1; i < wd.length; i++) {
      const gap = wd[i].t_us - wd[i - 1].t_us;
      assert.ok(gap >= 80000 && gap < 200000, `watchdog gap ${gap} µs`);
    }

    // An applied reload.
    let from = nsock.msgs.length;
    const before = monoUs();
    const since = w.stderr.length;
    w.child.kill('SIGHUP');
    const rel = await nsock.waitMsg((m) => m.startsWith('RELOADING=1'), from);
    const again = await nsock.waitMsg((m) => m === 'READY=1', rel);
    await waitForStderrSince(w, since, /SIGHUP: configuration reloaded/);
    const m = nsock.msgs[rel].msg.match(/^RELOADING=1\nMONOTONIC_USEC=(\d+)$/);
    assert.ok(m, JSON.stringify(nsock.msgs[rel].msg));
    const ts = Number(m[1]);
    assert.ok(ts >= before && ts <= nsock.msgs[rel].t_us, `MONOTONIC_USEC ${ts} not in [${before}, ${nsock.msgs[rel].t_us}]`);
    assert.ok(again > rel);

    // A refused reload still ends in READY=1: the old configuration runs.
    writeFileSync(conf, '{"listen": ');
    from = nsock.msgs.length;
    const since2 = w.stderr.length;
    w.child.kill('SIGHUP');
    const rel2 = await nsock.waitMsg((m2) => m2.startsWith('RELOADING=1'), from);
    await nsock.waitMsg((m2) => m2 === 'READY=1', rel2);
    await waitForStderrSince(w, since2, /still running the old/);
    assert.ok(await canConnect(port));

    // SIGTERM: STOPPING=1, then the process exits and says nothing more.
    w.child.kill('SIGTERM');
    await nsock.waitMsg((m2) => m2 === 'STOPPING=1');
    const st = await withTimeout(w.exited, 5000, 'mcpwarden to exit');
    assert.equal(st.code, 0, w.stderr);
    const states = nsock.states();
    assert.deepEqual(states.map((s) => s.replace(/MONOTONIC_USEC=\d+/, 'MONOTONIC_USEC=N')), [
      'READY=1',
      'RELOADING=1\nMONOTONIC_USEC=N', 'READY=1',
      'RELOADING=1\nMONOTONIC_USEC=N', 'READY=1',
      'STOPPING=1',
    ]);
    assert.doesNotMatch(w.stderr, /systemd:/, 'a notification failed');
  });

  test('no watchdog when WATCHDOG_PID names another process; READY=1 with one worker and no admin endpoint', T, async () => {
    const port = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${port}`,
      upstreams: [{ name: 'up', path: '/mcp', url: 'http://127.0.0.1:9/mcp' }],
      workers: 1,
      admin: { listen: 'off' },
    });
    const { w, nsock } = await startNotified(conf, { WATCHDOG_USEC: '200000', WATCHDOG_PID: String(process.pid) });
    await nsock.waitMsg((m) => m === 'READY=1');
    assert.ok(await canConnect(port), 'READY=1 came before the port accepted');
    // Two reloads are two loop turns apart, by which a watchdog started
    // at READY would have sent its first tick at once.
    for (let i = 0; i < 2; i++) {
      const from = nsock.msgs.length;
      w.child.kill('SIGHUP');
      await nsock.waitMsg((m) => m === 'READY=1', from);
    }
    assert.deepEqual(nsock.msgs.filter((m) => m.msg === 'WATCHDOG=1'), []);
    w.child.kill('SIGTERM');
    await nsock.waitMsg((m) => m === 'STOPPING=1');
    await withTimeout(w.exited, 5000, 'mcpwarden to exit');
  });
});

describe('SIGUSR1 reopens the call log', () => {
  async function startWithLog(callLog) {
    const peer = await startScriptedPeer({ mode: 'json' });
    peers.push(peer);
    const port = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${port}`,
      upstreams: [{ name: 'up', path: '/mcp', url: peer.url }],
      workers: 2,
      admin: { listen: 'off', log_calls: callLog },
    });
    const w = spawnTracked('mcpwarden', WARDEN_BIN, ['-c', conf]);
    await waitForPort(w, port);
    const call = async (tool) => {
      const r = await postJson(`http://127.0.0.1:${port}/mcp`, { jsonrpc: '2.0', id: tool, method: 'tools/call', params: { name: tool, arguments: {} } });
      assert.equal(r.status, 200, r.text);
    };
    return { w, call };
  }
  const lines = (f) => (existsSync(f) ? readFileSync(f, 'utf8') : '');
  const tools = (text) => text.split('\n').filter(Boolean).map((l) => JSON.parse(l).tool);

  test('after a rename the old file keeps the older records and the path gets the next ones', T, async () => {
    const callLog = path.join(tmp, 'calls.jsonl');
    const { w, call } = await startWithLog(callLog);
    await call('first');
    await call('second');
    await waitFor(() => tools(lines(callLog)).length === 2, { what: 'two records in the call log' });
    renameSync(callLog, `${callLog}.1`);
    const since = w.stderr.length;
    w.child.kill('SIGUSR1');
    await waitForStderrSince(w, since, new RegExp(`SIGUSR1: call log ${callLog.replace(/[.]/g, '\\.')} reopened`));
    assert.ok(existsSync(callLog), 'the path was not opened again');
    await call('third');
    await waitFor(() => tools(lines(callLog)).length === 1, { what: 'the new record in the new file' });
    assert.deepEqual(tools(lines(callLog)), ['third']);
    assert.deepEqual(tools(lines(`${callLog}.1`)), ['first', 'second']);
    assert.ok(lines(`${callLog}.1`).endsWith('\n'), 'the old file ends in part of a line');
    w.child.kill('SIGTERM');
    assert.equal((await withTimeout(w.exited, 5000, 'mcpwarden to exit')).code, 0, w.stderr);
  });

  test('a path that cannot be opened again: logged, and the old file is still written', T, async () => {
    const dir = path.join(tmp, 'logs');
    mkdirSync(dir);
    const callLog = path.join(dir, 'calls.jsonl');
    const { w, call } = await startWithLog(callLog);
    await call('before');
    await waitFor(() => tools(lines(callLog)).length === 1, { what: 'the first record' });
    renameSync(dir, `${dir}.gone`);
    const since = w.stderr.length;
    w.child.kill('SIGUSR1');
    await waitForStderrSince(w, since, /SIGUSR1: cannot reopen the call log \([^)]*No such file or directory\); still writing to the file it had open/);
    await call('after');
    const moved = path.join(`${dir}.gone`, 'calls.jsonl');
    await waitFor(() => tools(lines(moved)).length === 2, { what: 'the next record in the old file' });
    assert.deepEqual(tools(lines(moved)), ['before', 'after']);
    w.child.kill('SIGTERM');
    await withTimeout(w.exited, 5000, 'mcpwarden to exit');
  });

  test('no call log file: SIGUSR1 says so and the process keeps running', T, async () => {
    const port = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${port}`,
      upstreams: [{ name: 'up', path: '/mcp', url: 'http://127.0.0.1:9/mcp' }],
      admin: { listen: 'off' },
    });
    const w = spawnTracked('mcpwarden', WARDEN_BIN, ['-c', conf]);
    await waitForPort(w, port);
    const since = w.stderr.length;
    w.child.kill('SIGUSR1');
    await waitForStderrSince(w, since, /SIGUSR1: no call log file to reopen/);
    assert.ok(await canConnect(port));
    w.child.kill('SIGTERM');
    assert.equal((await withTimeout(w.exited, 5000, 'mcpwarden to exit')).code, 0, w.stderr);
  });
});

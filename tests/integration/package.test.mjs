// Installing mcpwarden (issue 22, items 2 and 3): `make install` /
// `make uninstall`, and the Debian package built, installed, run and purged
// on this machine. Needs root (dpkg -i): CI and this machine run as root.
//
//   1. make install DESTDIR=tmp PREFIX=/usr puts exactly the documented
//      files there (README "Install"), the unit's ExecStart following BINDIR
//      for PREFIX=/usr/local; make uninstall takes every one away again.
//   2. make deb builds build/deb/mcpwarden_<version>_<arch>.deb, which
//      lintian finds nothing to say about (but no-manual-page while man/
//      has no mcpwarden.1: man/ is written by another change).
//   3. dpkg -i: the binary, the man pages, the schemas, the examples, the
//      unit (installed, not enabled), the logrotate snippet, the conffiles
//      (dpkg's list), /etc/mcpwarden root:mcpwarden 0750 and the system
//      user, which did not exist before.
//   4. The installed /usr/bin/mcpwarden, run as the mcpwarden user, checks
//      the packaged /etc/mcpwarden/mcpwarden.json (which `nobody` cannot
//      read) and proxies an SDK tools/call to server-everything with that
//      config changed only in its three ports. This machine has no systemd
//      as PID 1 (no /run/systemd/system), so the binary is started the way
//      the unit would start it, not the unit itself (systemd.test.mjs
//      verifies the unit and the notify protocol).
//   5. dpkg --purge: every file of the package, /etc/mcpwarden and the user
//      and its group are gone. The `after` hook purges too, so a failed
//      assertion leaves no package behind.
//
// Every command runs under coreutils `timeout` (its whole process group).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  mkdtempSync, rmSync, readdirSync, readFileSync, writeFileSync, existsSync, statSync, chmodSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import { startEverything, spawnTracked, waitForPort, stopAll, stop, REPO_ROOT } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { waitFor, withTimeout } from './lib/util.mjs';

const DEB_DIR = path.join(REPO_ROOT, 'build/deb');
const ETC_CONF = '/etc/mcpwarden/mcpwarden.json';
const BUILD_S = 300;   // make deb: a full build of the copy (~40 s on 2 idle cores)

const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-package-'));
chmodSync(tmp, 0o755);   // the mcpwarden user reads the adapted config here
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));

// Run under `make test`, the environment carries the calling make's
// MAKEFLAGS (under `make asan`: BUILD=build/asan OPT=-fsanitize...): the
// package and the install check build the plain tree, so they drop it.
const baseEnv = { ...process.env };
for (const k of ['MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES']) delete baseEnv[k];

/** Run a command to its end within `secs`: {code, out} (stdout + stderr). */
function run(cmd, args, { secs = 60, cwd = REPO_ROOT, env } = {}) {
  const r = spawnSync('timeout', ['-k', '5', String(secs), cmd, ...args],
    { cwd, encoding: 'utf8', env: { ...baseEnv, ...env }, maxBuffer: 64 << 20 });
  return { code: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}
function ok(cmd, args, opts) {
  const r = run(cmd, args, opts);
  assert.equal(r.code, 0, `${cmd} ${args.join(' ')} exited ${r.code}${r.code === 124 ? ' (timed out)' : ''}:\n${r.out.slice(-4000)}`);
  return r.out;
}

/** dpkg, waiting (bounded) while another process on the machine holds its lock. */
async function dpkg(args) {
  let r;
  await waitFor(() => {
    r = run('dpkg', args, { secs: 120 });
    return r.code === 0 || !/lock/i.test(r.out);
  }, { timeout: 120000, interval: 500, what: 'the dpkg lock' });
  assert.equal(r.code, 0, `dpkg ${args.join(' ')} exited ${r.code}:\n${r.out}`);
  return r.out;
}

const installed = () => run('dpkg-query', ['-W', '-f=${Status}', 'mcpwarden']).out.includes('install ok installed');
const known = () => run('dpkg-query', ['-W', 'mcpwarden']).code === 0;   // installed or config-files left
const getent = (db, name) => run('getent', [db, name]);
const manPages = () => (existsSync(path.join(REPO_ROOT, 'man'))
  ? readdirSync(path.join(REPO_ROOT, 'man')).filter((f) => /\.[15]$/.test(f)) : []);
// The replica fleet's files (issue 23), shipped as examples beside the configs.
const FLEET = ['haproxy/mcpwarden.cfg', 'haproxy/README.md', 'prometheus/mcpwarden-rules.yml',
  'prometheus/prometheus.yml'];
const examples = () => [
  ...(existsSync(path.join(REPO_ROOT, 'conf/examples'))
    ? readdirSync(path.join(REPO_ROOT, 'conf/examples')).filter((f) => f.endsWith('.json')) : []),
  'policy-read-only.json',
];

/** Every regular file and link under dir, relative, sorted. */
function filesUnder(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else out.push(path.relative(dir, p));
    }
  };
  if (existsSync(dir)) walk(dir);
  return out.sort();
}

after(async () => {
  await stopAll();
  if (known()) await dpkg(['--purge', 'mcpwarden']);
});

describe('make install / make uninstall', () => {
  test('PREFIX=/usr into DESTDIR: exactly the documented files, then none', { timeout: 120000 }, () => {
    const dest = path.join(tmp, 'destdir');
    ok('make', ['-s', 'install', `DESTDIR=${dest}`, 'PREFIX=/usr'], { secs: 100 });
    const want = [
      'usr/bin/mcpwarden',
      ...manPages().map((m) => `usr/share/man/man${m.slice(-1)}/${m}`),
      'usr/share/mcpwarden/mcpwarden.schema.json',
      'usr/share/mcpwarden/mcpwarden-policy.schema.json',
      ...examples().map((e) => `usr/share/doc/mcpwarden/examples/${e}`),
      'usr/share/doc/mcpwarden/examples/mcpwarden.logrotate',
      ...FLEET.map((f) => `usr/share/doc/mcpwarden/examples/${f}`),
      'usr/lib/systemd/system/mcpwarden.service',
    ].sort();
    assert.deepEqual(filesUnder(dest), want);
    assert.ok(statSync(path.join(dest, 'usr/bin/mcpwarden')).mode & 0o111, 'binary not executable');
    assert.deepEqual(readFileSync(path.join(dest, 'usr/lib/systemd/system/mcpwarden.service'), 'utf8'),
      readFileSync(path.join(REPO_ROOT, 'conf/mcpwarden.service'), 'utf8'));
    ok('make', ['-s', 'uninstall', `DESTDIR=${dest}`, 'PREFIX=/usr'], { secs: 30 });
    assert.deepEqual(filesUnder(dest), []);
  });

  test('PREFIX=/usr/local: the unit starts /usr/local/bin/mcpwarden', { timeout: 120000 }, () => {
    const dest = path.join(tmp, 'destdir-local');
    ok('make', ['-s', 'install', `DESTDIR=${dest}`, 'PREFIX=/usr/local'], { secs: 100 });
    const unit = readFileSync(path.join(dest, 'usr/local/lib/systemd/system/mcpwarden.service'), 'utf8');
    assert.match(unit, /^ExecStart=\/usr\/local\/bin\/mcpwarden -c \/etc\/mcpwarden\/mcpwarden\.json$/m);
    assert.ok(existsSync(path.join(dest, 'usr/local/bin/mcpwarden')));
    ok('make', ['-s', 'uninstall', `DESTDIR=${dest}`, 'PREFIX=/usr/local'], { secs: 30 });
    assert.deepEqual(filesUnder(dest), []);
  });
});

describe('the Debian package: build, install, run, purge', () => {
  let deb;
  let version;

  before(async () => {
    // A clean slate: a package left by an earlier, killed run goes first,
    // so that the user below is the one this install creates.
    if (known()) await dpkg(['--purge', 'mcpwarden']);
  });

  test('make deb builds a lintian-clean package out of a copy in build/deb', { timeout: (BUILD_S + 60) * 1000 }, () => {
    ok('make', ['deb'], { secs: BUILD_S });
    const debs = readdirSync(DEB_DIR).filter((f) => /^mcpwarden_[^_]+_[a-z0-9]+\.deb$/.test(f));
    assert.equal(debs.length, 1, `one mcpwarden .deb in build/deb: ${debs}`);
    deb = path.join(DEB_DIR, debs[0]);
    version = debs[0].split('_')[1];
    // git describe: a tag, or 0.2.0~git<date>.<hash> without one.
    assert.match(version, /^\d+\.\d+\.\d+(\+git\d+\.g[0-9a-f]+|~git\d{8}\.[0-9a-f]{7,})?$/);
    assert.ok(!existsSync(path.join(REPO_ROOT, '..', debs[0])), 'the .deb must not land in the repository\'s parent');
    const lint = run('lintian', ['--no-tag-display-limit', deb], { secs: 120 });
    const tags = lint.out.split('\n').filter((l) => /^[EW]: /.test(l));
    const expected = manPages().includes('mcpwarden.1') ? []
      : ['W: mcpwarden: no-manual-page [usr/bin/mcpwarden]'];
    assert.deepEqual(tags, expected, lint.out);
  });

  test('dpkg -i: files in place, conffiles, the mcpwarden user', { timeout: 180000 }, async () => {
    assert.ok(deb, 'no package built');
    assert.notEqual(getent('passwd', 'mcpwarden').code, 0, 'a mcpwarden user exists before the install');
    await dpkg(['-i', deb]);
    assert.ok(installed(), 'mcpwarden not installed');
    assert.equal(run('dpkg-query', ['-W', '-f=${Version}', 'mcpwarden']).out, version);

    const bin = statSync('/usr/bin/mcpwarden');
    assert.ok(bin.isFile() && (bin.mode & 0o755) === 0o755, '/usr/bin/mcpwarden');
    ok('/usr/bin/mcpwarden', ['--version']);
    for (const m of manPages()) assert.ok(existsSync(`/usr/share/man/man${m.slice(-1)}/${m}.gz`), `man page ${m}`);
    for (const s of ['mcpwarden.schema.json', 'mcpwarden-policy.schema.json']) {
      assert.equal(readFileSync(`/usr/share/mcpwarden/${s}`, 'utf8'), readFileSync(path.join(REPO_ROOT, 'conf', s), 'utf8'));
    }
    for (const e of examples()) assert.ok(existsSync(`/usr/share/doc/mcpwarden/examples/${e}`), `example ${e}`);
    for (const f of FLEET) {
      assert.equal(readFileSync(`/usr/share/doc/mcpwarden/examples/${f}`, 'utf8'),
        readFileSync(path.join(REPO_ROOT, 'conf', f), 'utf8'), `fleet file ${f}`);
    }
    assert.equal(readFileSync('/lib/systemd/system/mcpwarden.service', 'utf8'),
      readFileSync(path.join(REPO_ROOT, 'conf/mcpwarden.service'), 'utf8'));
    // Installed disabled (debian/rules says why).
    assert.ok(!existsSync('/etc/systemd/system/multi-user.target.wants/mcpwarden.service'), 'the unit is enabled');
    assert.equal(readFileSync('/etc/logrotate.d/mcpwarden', 'utf8'), readFileSync(path.join(REPO_ROOT, 'conf/mcpwarden.logrotate'), 'utf8'));
    assert.equal(readFileSync(ETC_CONF, 'utf8'), readFileSync(path.join(REPO_ROOT, 'debian/mcpwarden.json'), 'utf8'));

    const conffiles = run('dpkg-query', ['--control-show', 'mcpwarden', 'conffiles']).out.split('\n')
      .map((l) => l.trim().split(/\s+/)[0]).filter(Boolean).sort();
    assert.deepEqual(conffiles, ['/etc/logrotate.d/mcpwarden', ETC_CONF]);

    const pw = getent('passwd', 'mcpwarden');
    assert.equal(pw.code, 0, 'no mcpwarden user');
    const [, , uid, gid, , home, shell] = pw.out.trim().split(':');
    assert.ok(Number(uid) > 0 && Number(uid) < 1000, `not a system uid: ${uid}`);
    assert.equal(home, '/nonexistent');
    assert.match(shell, /nologin|false/);
    assert.equal(getent('group', 'mcpwarden').out.split(':')[2], gid, 'primary group mcpwarden');
    const dir = statSync('/etc/mcpwarden');
    const file = statSync(ETC_CONF);
    assert.deepEqual([dir.uid, dir.gid, dir.mode & 0o7777], [0, Number(gid), 0o750]);
    assert.deepEqual([file.uid, file.gid, file.mode & 0o7777], [0, Number(gid), 0o640]);
  });

  test('as the mcpwarden user with the packaged config (ports changed): an SDK tools/call', { timeout: 60000 }, async (t) => {
    assert.ok(installed(), 'not installed');
    // The head says why the binary and not the unit.
    t.diagnostic(`systemd as PID 1: ${existsSync('/run/systemd/system') ? 'yes' : 'no'}; started the binary as the unit would`);
    const asUser = (user, args) => ['--reuid', user, '--regid', user, '--init-groups', ...args];
    // The conffile itself, read as the service reads it; `nobody` may not.
    ok('setpriv', asUser('mcpwarden', ['/usr/bin/mcpwarden', '--check-config', '-c', ETC_CONF]), { cwd: '/' });
    const denied = run('setpriv', asUser('nobody', ['/usr/bin/mcpwarden', '--check-config', '-c', ETC_CONF]), { cwd: '/' });
    assert.notEqual(denied.code, 0, `nobody read ${ETC_CONF}:\n${denied.out}`);

    const se = await startEverything(await freePort());
    const [port, adminPort] = [await freePort(), await freePort()];
    const packaged = JSON.parse(readFileSync(ETC_CONF, 'utf8'));
    const conf = structuredClone(packaged);
    conf.listen = conf.listen.replace(/:8080$/, `:${port}`);
    conf.upstreams[0].url = conf.upstreams[0].url.replace(':3001/', `:${se.port}/`);
    conf.admin.listen = conf.admin.listen.replace(/:9090$/, `:${adminPort}`);
    // Only the three ports differ.
    const strip = (c) => JSON.stringify(c).replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:PORT');
    assert.equal(strip(conf), strip(packaged));
    assert.deepEqual([conf.listen, conf.upstreams[0].url, conf.admin.listen],
      [`127.0.0.1:${port}`, `http://127.0.0.1:${se.port}/mcp`, `127.0.0.1:${adminPort}`]);
    const file = path.join(tmp, 'mcpwarden.json');
    writeFileSync(file, JSON.stringify(conf, null, 2));
    chmodSync(file, 0o644);

    const w = spawnTracked('mcpwarden (package)', 'setpriv',
      asUser('mcpwarden', ['/usr/bin/mcpwarden', '-c', file]), { cwd: '/' });
    let s;
    try {
      await waitForPort(w, port, 10000);
      await waitForPort(w, adminPort, 5000);
      const status = readFileSync(`/proc/${w.pid}/status`, 'utf8');
      assert.equal(status.match(/^Uid:\s+(\d+)/m)[1], getent('passwd', 'mcpwarden').out.split(':')[2], 'not running as mcpwarden');
      s = await connectClient(`http://127.0.0.1:${port}/mcp`, { name: 'package-test' });
      const r = await withTimeout(s.client.callTool({ name: 'echo', arguments: { message: 'from the package' } }),
        CALL_TIMEOUT, 'tools/call echo');
      assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: from the package' }]);
    } finally {
      await s?.close();
      await stop(w);
      await stop(se.proc);
    }
  });

  test('dpkg --purge: the files, /etc/mcpwarden, the user and the group are gone', { timeout: 180000 }, async () => {
    assert.ok(installed(), 'not installed');
    const files = run('dpkg-query', ['-L', 'mcpwarden']).out.split('\n')
      .filter((p) => p && existsSync(p) && !statSync(p).isDirectory());
    assert.ok(files.includes('/usr/bin/mcpwarden') && files.includes(ETC_CONF), files.join('\n'));
    await dpkg(['--purge', 'mcpwarden']);
    assert.ok(!known(), 'dpkg still knows mcpwarden');
    assert.deepEqual(files.filter((p) => existsSync(p)), [], 'files left after purge');
    assert.ok(!existsSync('/etc/mcpwarden'), '/etc/mcpwarden left');
    assert.notEqual(getent('passwd', 'mcpwarden').code, 0, 'user left');
    assert.notEqual(getent('group', 'mcpwarden').code, 0, 'group left');
  });
});

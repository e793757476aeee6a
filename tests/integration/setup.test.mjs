// Two commands on a fresh machine (issue 22, point 1): `make run` and
// `make test` check the Debian packages before anything else. As a user
// who cannot install them they stop before compiling, with one line naming
// the apt-get command; sub-makes (asan, tsan, fuzz-run) do not check again;
// the check is cheap when everything is there; `make deps` still works.
//
// A package is made missing with DEPS_EXTRA_PKGS (tests/deps.sh adds it to
// its list), and the commands run in a copy of the tracked tree, as
// `nobody` when the test runs as root (anyone else cannot install either),
// so that a build would show up as a build/ directory or a binary.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, WARDEN_BIN, requireWarden } from './lib/procs.mjs';
import { freePort } from './lib/ports.mjs';

const MISSING = 'mcpwarden-no-such-package';
const root = process.getuid() === 0;
let tree;

function copyTree() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-setup-'));
  const files = spawnSync('git', ['ls-files', '-z'], { cwd: REPO_ROOT, encoding: 'buffer' });
  assert.equal(files.status, 0, String(files.stderr));
  const tar = spawnSync('sh', ['-c', `tar -C "$1" --null -T - -cf - | tar -C "$2" -xf -`, 'sh', REPO_ROOT, dir],
    { input: files.stdout });
  assert.equal(tar.status, 0, String(tar.stderr));
  if (root) spawnSync('chown', ['-R', 'nobody', dir]);
  return dir;
}

// Runs a command in the copy as a user who cannot install packages.
function asUser(cmd, args, env = {}) {
  const full = root ? ['runuser', ['-u', 'nobody', '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), cmd, ...args]]
    : [cmd, args];
  const t0 = process.hrtime.bigint();
  const r = spawnSync(full[0], full[1], {
    cwd: tree, encoding: 'utf8', timeout: 60000,
    env: { PATH: process.env.PATH, HOME: tree, ...(root ? {} : env) },
  });
  return { code: r.status, out: r.stdout, err: r.stderr, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
}

const builtAnything = () => ['build', 'mcpwarden', 'node_modules'].filter((n) => fs.existsSync(path.join(tree, n)));

before(() => { tree = copyTree(); });
after(() => fs.rmSync(tree, { recursive: true, force: true }));

describe('make run / make test check the Debian packages first', () => {
  for (const goal of ['run', 'test']) {
    test(`make ${goal} with a package missing stops before compiling, with the apt-get line`, () => {
      const r = asUser('make', ['-j2', goal], { DEPS_EXTRA_PKGS: MISSING });
      assert.notEqual(r.code, 0, r.out + r.err);
      const lines = (r.out + r.err).trim().split('\n');
      assert.equal(lines.length, 1, r.out + r.err);
      assert.match(lines[0], new RegExp(`Debian packages are missing; as root run: apt-get install -y --no-install-recommends ${MISSING}\\b`));
      assert.deepEqual(builtAnything(), []);
    });
  }

  test('a sub-make (MAKELEVEL 1: asan, tsan, fuzz-run) does not check again', () => {
    const r = asUser('make', ['-n', 'run'], { DEPS_EXTRA_PKGS: MISSING, MAKELEVEL: '1' });
    assert.equal(r.code, 0, r.out + r.err);
    assert.match(r.out, /tests\/demo\/run\.sh/);
    assert.doesNotMatch(r.out + r.err, /apt-get/);
    assert.deepEqual(builtAnything(), []);
  });

  test('other goals (make, make unit) do not check', () => {
    const r = asUser('make', ['-n', 'all'], { DEPS_EXTRA_PKGS: MISSING });
    assert.equal(r.code, 0, r.out + r.err);
    assert.doesNotMatch(r.out + r.err, /apt-get/);
  });

  test('with everything installed the check is silent and costs well under a second', () => {
    const best = Math.min(...[1, 2, 3].map(() => {
      const r = asUser('tests/deps.sh', ['--preflight']);
      assert.equal(r.code, 0, r.out + r.err);
      assert.equal(r.out + r.err, '');
      return r.ms;
    }));
    assert.ok(best < 250, `${best} ms`);
    const n = asUser('make', ['-n', 'run']);
    assert.equal(n.code, 0, n.out + n.err);
    assert.doesNotMatch(n.out + n.err, /deps:/);
  });

  test('make deps still reports and names the command', () => {
    const ok = asUser('make', ['deps']);
    assert.equal(ok.code, 0, ok.out + ok.err);
    assert.match(ok.out, /deps: everything is installed/);
    const r = asUser('make', ['deps'], { DEPS_EXTRA_PKGS: MISSING });
    assert.notEqual(r.code, 0);
    assert.match(r.out, new RegExp(`deps: run: sudo apt-get install -y ${MISSING}\\b`));
    assert.deepEqual(builtAnything(), []);
  });
});

// make run ADMIN=HOST:PORT or ADMIN_PORT=PORT (issue 22, point 7): the make
// variables reach tests/demo/run.sh, which starts the proxy with that admin
// address (the demo upstream is the real server-everything).
describe('make run takes the admin address', () => {
  test('make passes ADMIN and ADMIN_PORT to tests/demo/run.sh', () => {
    for (const [arg, want] of [['ADMIN=127.0.0.1:9191', "ADMIN='127.0.0.1:9191' ADMIN_PORT=''"],
      ['ADMIN_PORT=9191', "ADMIN='' ADMIN_PORT='9191'"]]) {
      const r = spawnSync('make', ['-n', 'run', arg], { cwd: REPO_ROOT, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.ok(r.stdout.includes(`${want} tests/demo/run.sh`), r.stdout);
    }
  });

  for (const how of ['ADMIN_PORT', 'ADMIN']) {
    test(`tests/demo/run.sh with ${how}: the admin endpoint answers there`, { timeout: 60000 }, async () => {
      requireWarden();
      const [listen, up, admin] = [await freePort(), await freePort(), await freePort()];
      const env = { ...process.env, LISTEN: `127.0.0.1:${listen}`, UPSTREAM_PORT: String(up), MCPWARDEN: WARDEN_BIN,
        ...(how === 'ADMIN' ? { ADMIN: `127.0.0.1:${admin}` } : { ADMIN_PORT: String(admin) }) };
      delete env[how === 'ADMIN' ? 'ADMIN_PORT' : 'ADMIN'];
      // Its own process group: the shell, the demo upstream and the proxy end together.
      const child = spawn('tests/demo/run.sh', [], { cwd: REPO_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d) => { out += d; });
      child.stderr.on('data', (d) => { out += d; });
      const exited = new Promise((res) => child.on('exit', res));
      try {
        const re = new RegExp(`admin endpoint on http://127\\.0\\.0\\.1:${admin}/`);
        await new Promise((res, rej) => {
          const t = setInterval(() => {
            if (re.test(out)) { clearInterval(t); res(); } else if (child.exitCode !== null) { clearInterval(t); rej(new Error(out)); }
          }, 20);
        });
        assert.match(out, new RegExp(`admin on 127\\.0\\.0\\.1:${admin}\\b`));
        const r = await fetch(`http://127.0.0.1:${admin}/healthz`);
        assert.equal(r.status, 200);
      } finally {
        // SIGKILL: the demo upstream survives a SIGTERM (server-everything
        // catches it), and nothing here needs a graceful end.
        try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
        await exited;
      }
    });
  }
});

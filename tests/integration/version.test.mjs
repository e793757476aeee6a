// `mcpwarden --version` (issue 22, point 7): the version comes from git at
// build time (never a hard-coded number), the same string names the proxy
// everywhere (its start-up line, `check`'s clientInfo and User-Agent), and
// the library lines are the versions it runs with: libevent, jansson and
// OpenSSL as pkg-config reports the installed ones, llhttp as its header.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { REPO_ROOT, runWarden, startWardenQuiet, stopAll } from './lib/procs.mjs';
import { freePort } from './lib/ports.mjs';

after(stopAll);

const sh = (cmd, args) => execFileSync(cmd, args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim();

async function versionLines(flag) {
  const r = await runWarden([flag]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trimEnd().split('\n');
}

// The commit part of `git describe`: a build from a tree edited since
// carries -dirty, which the test must not depend on.
// Without a tag the Makefile puts the hash after its VERSION_BASE
// (0.2.0-g1a2b3c4), so the version always starts with a number.
function describedCommit() {
  const tagged = spawnSync('git', ['describe', '--tags'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (tagged.status === 0) return tagged.stdout.trim();
  return `0.2.0-g${sh('git', ['describe', '--always'])}`;
}

test('--version and -V print the git version, then one line per library', async () => {
  const lines = await versionLines('--version');
  assert.deepEqual(await versionLines('-V'), lines);
  assert.equal(lines.length, 5, lines.join('\n'));
  const m = /^mcpwarden (\S+)$/.exec(lines[0]);
  assert.ok(m, lines[0]);
  const v = m[1];
  const described = describedCommit();
  assert.ok(v === described || v === `${described}-dirty`, `${v} vs git describe ${described}`);
  assert.notEqual(v, '0.1.0');
  assert.deepEqual(lines.slice(1).map((l) => l.split(' ')[0]), ['libevent', 'jansson', 'openssl', 'llhttp']);
});

test('the library versions are the installed ones', async () => {
  const lines = await versionLines('--version');
  const got = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)]));
  assert.equal(got.libevent, sh('pkg-config', ['--modversion', 'libevent']));
  assert.equal(got.jansson, sh('pkg-config', ['--modversion', 'jansson']));
  assert.equal(got.openssl, sh('pkg-config', ['--modversion', 'openssl']));
  const h = fs.readFileSync('/usr/share/include/llhttp/llhttp.h', 'utf8');
  const part = (n) => new RegExp(`#define LLHTTP_VERSION_${n} (\\d+)`).exec(h)[1];
  assert.equal(got.llhttp, `${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}`);
});

test('check names itself with the same version (clientInfo and User-Agent)', async () => {
  const v = (await versionLines('--version'))[0].split(' ')[1];
  const seen = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seen.push({ ua: req.headers['user-agent'], body });
      res.writeHead(500, { 'Content-Type': 'text/plain' }).end('no');
    });
  });
  await new Promise((res) => srv.listen(0, '127.0.0.1', res));
  try {
    const r = await runWarden(['check', `http://127.0.0.1:${srv.address().port}/mcp`, '--transport',
      'streamable_http', '--timeout', '3'], { timeout: 10000 });
    assert.equal(r.code, 2, r.stdout + r.stderr);
  } finally {
    srv.close();
  }
  assert.ok(seen.length >= 1);
  // The 2026-07-28 era's first request (server/discover) carries clientInfo in
  // _meta, an initialize in its params: every request check sent must agree.
  for (const s of seen) {
    assert.equal(s.ua, `mcpwarden-check/${v}`);
    const m = JSON.parse(s.body);
    const info = m.params.clientInfo ?? m.params._meta?.['io.modelcontextprotocol/clientInfo'];
    assert.deepEqual(info, { name: 'mcpwarden-check', version: v }, s.body);
  }
});

test('the start-up line names the same version', async () => {
  const v = (await versionLines('--version'))[0].split(' ')[1];
  const port = await freePort();
  const esc = v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  await startWardenQuiet(port, ['--listen', `127.0.0.1:${port}`, '--upstream', 'http://127.0.0.1:9/mcp',
    '--admin', 'off'], { lines: [new RegExp(`mcpwarden ${esc} listening on 127\\.0\\.0\\.1:${port}\\b`)] });
});

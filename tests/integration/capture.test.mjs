// The capture file (issue 21, item 1; docs/capture.md): ./mcpwarden in
// front of the real server-everything, the official SDK as client
// (Streamable HTTP, and a legacy HTTP+SSE session through the translation).
//   - each tools/call is one JSON line, keys in the fixed order, mode 0600;
//   - session keys are equal within a session, different across, never
//     the session id; client info, capabilities and era come from the
//     session's initialize;
//   - result vs error (a tool error, a JSON-RPC error, a call policy
//     refused: "by": "proxy");
//   - redacted by default (a secret-looking key, a configured value), as
//     sent with unredacted: true; no Authorization, client token or
//     upstream credential anywhere in the file;
//   - rotation at a small max_bytes (FILE.1, FILE.2, never FILE.3 with
//     keep 2), SIGUSR1 reopen after mv (a new file, 0600);
//   - never served by the admin endpoint; counted on /metrics;
//   - --check-config refuses a symbolic link and an unwritable place.
// Synchronised on the file's content (polled with a bound), never sleeps.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync,
  chmodSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import { startEverything, stopAll, runWarden, reloadWarden } from './lib/procs.mjs';
import { connectClient } from './lib/mcp.mjs';
import { startAdminWarden, adminGet, metricValue } from './lib/admin-util.mjs';
import { connectSdk } from './lib/translate-util.mjs';
import { writeConfig } from './lib/conf.mjs';
import { waitFor, withTimeout } from './lib/util.mjs';
import { connectModern, V2026, CALL_TIMEOUT } from './lib/stateless-util.mjs';
import { startStatelessServer } from './peers/stateless-server.mjs';

const T = { timeout: 60000 };
const KEYS = ['capture', 'seq', 'time', 'upstream', 'session', 'era', 'transport', 'client',
  'capabilities', 'method', 'id', 'params', 'redacted', 'outcome'];
const CLIENT_TOKEN = 'cap-client-token-6612-zz';
const UPSTREAM_SECRET = 'cap-upstream-secret-8840';
const VALUE_SECRET = 'cap-value-secret-3171';
const KEY_SECRET = 'hunter2-cap-pass-554';

const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-capture-'));
after(async () => {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

/** The file's lines, parsed ([] when it does not exist). */
function lines(file) {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  assert.ok(text === '' || text.endsWith('\n'), `${file} ends in a whole line`);
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** Poll until the file holds at least n lines; returns them. */
function waitLines(file, n, what = `${n} lines in ${file}`) {
  return waitFor(() => { const ls = lines(file); return ls.length >= n && ls; }, { timeout: 5000, what });
}

function assertKeyOrder(l) {
  const keys = Object.keys(l);
  assert.deepEqual(keys.slice(0, KEYS.length), KEYS, JSON.stringify(l));
  const tail = keys.slice(KEYS.length);
  const answer = tail[0] === 'result' ? ['result'] : tail[0] === 'error' ? (tail[1] === 'by' ? ['error', 'by'] : ['error']) : [];
  assert.deepEqual(tail, [...answer, 'ms'], JSON.stringify(l));
  assert.equal(l.capture, 1);
  assert.equal(l.method, 'tools/call');
  assert.match(l.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(typeof l.ms, 'number');
}

const mode = (f) => statSync(f).mode & 0o777;

describe('capture: Streamable HTTP sessions, redacted by default', () => {
  let se, w, file, a, b;

  before(async () => {
    se = await startEverything(await freePort());
    file = path.join(dir, 'staging.capture');
    w = await startAdminWarden({
      upstreams: [{
        name: 'staging', url: se.url,
        headers: { 'X-Upstream-Key': UPSTREAM_SECRET },
        capture: { path: file },
      }],
      admin: { redact_values: [VALUE_SECRET] },
      extra: {
        clients: [{ name: 'ci', token: CLIENT_TOKEN }],
        policy: { default: 'allow', unknown_tools: 'rules', rules: [{ name: 'no-env', match: { tool: 'get-env' }, action: 'deny' }] },
      },
    });
    const headers = { Authorization: `Bearer ${CLIENT_TOKEN}` };
    a = await connectClient(w.url, { name: 'cap-client-a', headers, capabilities: { roots: { listChanged: true } } });
    b = await connectClient(w.url, { name: 'cap-client-b', headers });
  }, T);

  after(async () => { await a?.client.close(); await b?.client.close(); });

  test('each call one line: keys in order, sessions, client info, result/error, redaction, no credential', T, async () => {
    await a.client.callTool({ name: 'echo', arguments: { message: `say ${VALUE_SECRET}`, password: KEY_SECRET } });
    await a.client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
    const bad = await a.client.callTool({ name: 'no-such-tool', arguments: {} }).then((r) => ({ r }), (e) => ({ e }));
    const denied = await a.client.callTool({ name: 'get-env', arguments: {} }).then((r) => ({ r }), (e) => ({ e }));
    await b.client.callTool({ name: 'echo', arguments: { message: 'from b' } });

    const ls = await waitLines(file, 5);
    assert.equal(ls.length, 5, JSON.stringify(ls, null, 1));
    assert.equal(mode(file), 0o600);
    ls.forEach(assertKeyOrder);
    const seqs = ls.map((l) => l.seq);
    assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
    assert.equal(new Set(seqs).size, 5);
    const [echo, sum, nosuch, env, echoB] = ls;

    // Sessions: one key per session, not the id; client info from initialize.
    assert.match(echo.session, /^c-[0-9a-f]{16}$/);
    assert.equal(sum.session, echo.session);
    assert.equal(nosuch.session, echo.session);
    assert.notEqual(echoB.session, echo.session);
    assert.ok(!JSON.stringify(ls).includes(a.transport.sessionId), 'the session id is never captured');
    assert.deepEqual(echo.client, { name: 'cap-client-a', version: '1.0.0' });
    assert.deepEqual(echoB.client, { name: 'cap-client-b', version: '1.0.0' });
    assert.deepEqual(echo.capabilities, { roots: { listChanged: true } });
    assert.deepEqual(echoB.capabilities, {});
    assert.match(echo.era, /^\d{4}-\d\d-\d\d$/);
    assert.equal(echo.era, a.transport.protocolVersion ?? echo.era);
    assert.equal(echo.transport, 'streamable_http');
    assert.equal(echo.upstream, 'staging');

    // The whole params and answer; result vs error.
    assert.equal(echo.params.name, 'echo');
    assert.equal(echo.outcome, 'ok');
    assert.match(echo.result.content[0].text, /say/);
    assert.deepEqual(sum.params.arguments, { a: 2, b: 3 });
    assert.match(JSON.stringify(sum.result.content), /5/);
    assert.equal(sum.outcome, 'ok');
    if (bad.e) {
      assert.equal(nosuch.outcome, 'rpc_error');
      assert.equal(typeof nosuch.error.code, 'number');
      assert.equal(nosuch.by, undefined);
    } else {
      assert.equal(nosuch.outcome, 'tool_error');
      assert.equal(nosuch.result.isError, true);
    }
    assert.equal(env.outcome, 'blocked', JSON.stringify(env));
    assert.equal(env.by, 'proxy');
    assert.ok(env.error && typeof env.error.code === 'number', JSON.stringify(env));
    assert.ok(denied.e || denied.r?.isError, 'the client was refused');

    // Redacted by default: a secret-looking key and a configured value.
    assert.equal(echo.redacted, true);
    assert.equal(echo.params.arguments.password, '••••');
    assert.match(echo.params.arguments.message, /^say ••••$/);
    const text = readFileSync(file, 'utf8');
    for (const s of [VALUE_SECRET, KEY_SECRET, CLIENT_TOKEN, UPSTREAM_SECRET, 'Bearer', 'authorization', 'Authorization']) {
      assert.ok(!text.includes(s), `the file shows ${s}`);
    }
  });

  test('counted on /metrics, never served by the admin endpoint', T, async () => {
    const m = await adminGet(w.admin, '/metrics');
    const n = lines(file).length;
    assert.equal(metricValue(m.text, 'mcpwarden_capture_records_total', { upstream: 'staging' }), n);
    assert.equal(metricValue(m.text, 'mcpwarden_capture_dropped_total', { upstream: 'staging' }), 0);
    const base = path.basename(file);
    for (const p of ['/capture', `/${base}`, `/files/${base}`, `/..%2f..${encodeURI(file)}`, encodeURI(file), '/static/../' + base]) {
      const r = await adminGet(w.admin, p);
      assert.notEqual(r.status, 200, `${p}: ${r.status}`);
      assert.ok(!r.text.includes('"capture":1'), `${p} shows capture lines`);
    }
  });
});

describe('capture: unredacted, a legacy SSE session, rotation and SIGUSR1', () => {
  let se, w, file, s;

  before(async () => {
    se = await startEverything(await freePort());
    file = path.join(dir, 'dev.capture');
    w = await startAdminWarden({
      upstreams: [{ name: 'dev', url: se.url, capture: { path: file, max_bytes: 2048, keep: 2, unredacted: true } }],
    });
    s = await connectSdk('sse', `${w.base}/sse`, { name: 'cap-legacy' });
  }, T);

  after(async () => { await s?.close(); });

  test('a legacy client through the translation: its session, client info, unredacted arguments', T, async () => {
    await s.client.callTool({ name: 'echo', arguments: { message: `raw ${VALUE_SECRET}`, password: KEY_SECRET } });
    await s.client.callTool({ name: 'get-sum', arguments: { a: 40, b: 2 } });
    const ls = await waitLines(file, 2);
    ls.forEach(assertKeyOrder);
    const [echo, sum] = ls;
    assert.equal(echo.transport, 'sse');
    assert.match(echo.session, /^c-[0-9a-f]{16}$/);
    assert.equal(sum.session, echo.session);
    assert.deepEqual(echo.client, { name: 'cap-legacy', version: '1.0.0' });
    assert.deepEqual(echo.capabilities, { sampling: {}, elicitation: {}, roots: { listChanged: true } });
    assert.match(echo.era, /^\d{4}-\d\d-\d\d$/);
    assert.equal(echo.redacted, false);
    assert.equal(echo.params.arguments.password, KEY_SECRET);
    assert.equal(echo.params.arguments.message, `raw ${VALUE_SECRET}`);
    assert.equal(sum.outcome, 'ok');
    assert.equal(mode(file), 0o600);
  });

  test('rotation at max_bytes keeps FILE.1 and FILE.2, never FILE.3; every line whole', T, async () => {
    for (let i = 0; i < 14; i++) {
      await s.client.callTool({ name: 'echo', arguments: { message: `rotate ${i} ${'x'.repeat(300)}` } });
    }
    await waitFor(() => existsSync(`${file}.2`) && lines(file).some((l) => /rotate 13 /.test(l.params.arguments?.message)),
      { timeout: 5000, what: 'rotation to FILE.2 and the last call in FILE' });
    assert.ok(!existsSync(`${file}.3`), 'keep 2: no FILE.3');
    const all = [...lines(`${file}.2`), ...lines(`${file}.1`), ...lines(file)];
    for (const f of [file, `${file}.1`, `${file}.2`]) {
      assert.ok(statSync(f).size <= 2048, `${f}: ${statSync(f).size} bytes`);
      assert.equal(mode(f), 0o600, f);
    }
    all.forEach(assertKeyOrder);
    const seqs = all.map((l) => l.seq);
    assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), 'seq increases across the rotated files');
  });

  test('SIGUSR1 after mv: a new file, 0600, takes the next line', T, async () => {
    const moved = `${file}.moved`;
    renameSync(file, moved);
    const before = readFileSync(moved, 'utf8');
    w.proc.child.kill('SIGUSR1');
    await waitFor(() => existsSync(file), { timeout: 5000, what: 'the reopened capture file' });
    assert.equal(mode(file), 0o600);
    await s.client.callTool({ name: 'echo', arguments: { message: 'after reopen' } });
    const ls = await waitLines(file, 1);
    assert.equal(ls[0].params.arguments.message, 'after reopen');
    assert.equal(readFileSync(moved, 'utf8'), before, 'the moved file is left alone');
  });
});

describe('capture: a reload cannot change it', () => {
  test('SIGHUP with other capture settings keeps the running ones (restart needed)', T, async () => {
    const se = await startEverything(await freePort());
    const file = path.join(dir, 'reload.capture');
    const w = await startAdminWarden({ upstreams: [{ name: 'r', url: se.url, capture: { path: file } }] });
    const conf = JSON.parse(readFileSync(w.conf, 'utf8'));
    conf.upstreams[0].capture.unredacted = true;
    writeFileSync(w.conf, JSON.stringify(conf));
    const r = await reloadWarden(w.proc);
    assert.equal(r.ok, false, r.text);
    assert.match(r.text, /capture settings changed, which needs a restart/);
  });
});

describe('capture: the stateless 2026-07-28 era', () => {
  let peer, w, file;

  before(async () => {
    peer = await startStatelessServer();
    file = path.join(dir, 'modern.capture');
    w = await startAdminWarden({ upstreams: [{ name: 'modern', url: peer.url, capture: { path: file } }] });
  }, T);

  after(async () => { await peer?.close(); });

  test('no session: null key; era, client info and capabilities from the request _meta', T, async () => {
    const m = await connectModern(w.url);
    try {
      await withTimeout(m.client.callTool({ name: 'echo', arguments: { message: 'modern call' } }), CALL_TIMEOUT, 'echo');
    } finally {
      await m.close();
    }
    const [l] = await waitLines(file, 1);
    assertKeyOrder(l);
    assert.equal(l.session, null);
    assert.equal(l.era, V2026);
    const meta = l.params._meta;
    assert.equal(meta['io.modelcontextprotocol/protocolVersion'], V2026);
    const info = meta['io.modelcontextprotocol/clientInfo'];
    assert.deepEqual(l.client, { name: info.name, version: info.version });
    assert.deepEqual(l.capabilities, meta['io.modelcontextprotocol/clientCapabilities']);
    assert.equal(l.outcome, 'ok');
    assert.match(JSON.stringify(l.result), /modern call/);
  });
});

describe('capture: --check-config', () => {
  test('refuses a symbolic link and an unwritable directory; accepts a writable path', T, async () => {
    const target = path.join(dir, 'elsewhere');
    writeFileSync(target, '');
    const link = path.join(dir, 'link.capture');
    symlinkSync(target, link);
    const locked = path.join(dir, 'locked');
    rmSync(locked, { recursive: true, force: true });
    writeFileSync(path.join(dir, 'placeholder'), '');
    const conf = (p) => writeConfig({ listen: '127.0.0.1:1', upstreams: [{ name: 'x', url: 'http://127.0.0.1:9/mcp', capture: { path: p } }] });
    const l = await runWarden(['--check-config', '-c', conf(link)]);
    assert.equal(l.code, 2, l.stderr);
    assert.match(l.stderr, /\$\.upstreams\[0\]\.capture\.path: .*symbolic link/);
    const missing = await runWarden(['--check-config', '-c', conf(path.join(dir, 'no-such-dir', 'f'))]);
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /\$\.upstreams\[0\]\.capture\.path/);
    const ok = await runWarden(['--check-config', '-c', conf(path.join(dir, 'fresh.capture'))]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(!existsSync(path.join(dir, 'fresh.capture')), '--check-config creates nothing');
    chmodSync(target, 0o600);
  });
});

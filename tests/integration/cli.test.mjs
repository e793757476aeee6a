// The command line (issue 2, point 6): --help, --version, --check-config
// with good and bad files, the "listening on" line, and SIGTERM draining an
// in-flight stream before exiting.

import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import { REPO_ROOT, runWarden, startWarden, stop, stopAll } from './lib/procs.mjs';
import { openStream } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout, waitFor } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';
import { makeCerts } from './lib/certs.mjs';

const T = { timeout: 15000 };
const out = (r) => `${r.stdout}\n${r.stderr}`;

const good = (extra = {}) => ({
  listen: '127.0.0.1:18080',
  upstreams: [
    { name: 'a', path: '/a/mcp', url: 'http://127.0.0.1:3001/mcp' },
    { name: 'b', path: '/b/mcp', url: 'http://127.0.0.1:3002/mcp' },
  ],
  ...extra,
});

after(async () => { await stopAll(); });

describe('mcpwarden command line', () => {
  test('--help exits 0 and documents the flags', T, async () => {
    const r = await runWarden(['--help']);
    assert.equal(r.code, 0, out(r));
    for (const flag of ['--listen', '--upstream', '--check-config', '--max-body', '--request-timeout']) {
      assert.ok(out(r).includes(flag), `--help does not mention ${flag}:\n${out(r)}`);
    }
  });

  test('--version exits 0 and prints a version', T, async () => {
    const r = await runWarden(['--version']);
    assert.equal(r.code, 0, out(r));
    assert.match(out(r), /\d+\.\d+/);
  });

  test('an unknown option exits non-zero and names it', T, async () => {
    const r = await runWarden(['--no-such-flag']);
    assert.notEqual(r.code, 0);
    assert.ok(out(r).includes('--no-such-flag'), out(r));
  });

  test('--check-config -c on a good file exits 0', T, async () => {
    const f = writeConfig(good({ timeouts: { request_ms: 30000 }, limits: { max_body_bytes: 65536 }, log: { level: 'info' } }));
    const r = await runWarden(['--check-config', '-c', f]);
    assert.equal(r.code, 0, out(r));
  });

  test('--check-config accepts the shipped example conf/mcpwarden.json', T, async () => {
    const f = path.join(REPO_ROOT, 'conf/mcpwarden.json');
    assert.ok(existsSync(f), 'conf/mcpwarden.json is missing');
    const r = await runWarden(['--check-config', '-c', f]);
    assert.equal(r.code, 0, out(r));
  });

  test('--check-config: unknown top-level key → non-zero, key and location printed', T, async () => {
    const f = writeConfig(good({ bogus_top_key: 1 }));
    const r = await runWarden(['--check-config', '-c', f]);
    assert.notEqual(r.code, 0, out(r));
    assert.ok(out(r).includes('bogus_top_key'), out(r));
  });

  test('--check-config: unknown key inside an upstream → its location is printed', T, async () => {
    const conf = good();
    conf.upstreams[1].colour = 'blue';
    const f = writeConfig(conf);
    const r = await runWarden(['--check-config', '-c', f]);
    assert.notEqual(r.code, 0, out(r));
    const line = out(r).split('\n').find((l) => l.includes('colour'));
    assert.ok(line, `no error line names "colour":\n${out(r)}`);
    // Either a JSON path naming the second upstream or a file line number.
    assert.match(line, /upstreams\[1\]|upstreams\.1|:\d+(:\d+)?|line \d+/, line);
  });

  test('--check-config: several errors are all reported', T, async () => {
    const conf = good({ alpha_unknown: true });
    conf.upstreams[0].beta_unknown = 1;
    const r = await runWarden(['--check-config', '-c', writeConfig(conf)]);
    assert.notEqual(r.code, 0);
    assert.ok(out(r).includes('alpha_unknown') && out(r).includes('beta_unknown'), out(r));
  });

  test('--check-config: JSON syntax error → non-zero with line and column', T, async () => {
    const f = writeConfig('{\n  "listen": "127.0.0.1:18080",\n  "upstreams": [\n    { "name": "a" "path": "/a/mcp" }\n  ]\n}\n');
    const r = await runWarden(['--check-config', '-c', f]);
    assert.notEqual(r.code, 0, out(r));
    assert.match(out(r), /:4:\d+|line 4/, out(r));
  });

  test('--check-config: bad values are errors (duplicate path, bad URL)', T, async () => {
    const conf = good();
    conf.upstreams[1].path = '/a/mcp';
    let r = await runWarden(['--check-config', '-c', writeConfig(conf)]);
    assert.notEqual(r.code, 0, 'duplicate path accepted');
    const conf2 = good();
    conf2.upstreams[0].url = 'not a url';
    r = await runWarden(['--check-config', '-c', writeConfig(conf2)]);
    assert.notEqual(r.code, 0, 'bad url accepted');
  });

  test('a missing config file → non-zero, names the file', T, async () => {
    const r = await runWarden(['--check-config', '-c', '/nonexistent/mcpwarden.json']);
    assert.notEqual(r.code, 0);
    assert.ok(out(r).includes('/nonexistent/mcpwarden.json'), out(r));
  });
});

// Issue 17: --check-config runs every loader a start runs. Each case: the
// same file fails to start (exit non-zero before listening) and
// --check-config exits non-zero naming the error and where it is.
describe('--check-config says what a start would say', () => {
  let certs;
  const certsOf = () => (certs ??= makeCerts());
  after(() => certs?.cleanup());

  /** The start fails and --check-config fails, both naming `want`. */
  async function startAndCheckFail(conf, want) {
    const wp = await freePort();
    const f = writeConfig({ ...conf, listen: `127.0.0.1:${wp}` });
    const start = await runWarden(['-c', f], { timeout: 10000 });
    assert.notEqual(start.code, 0, `the start succeeded:\n${out(start)}`);
    assert.equal(start.signal, null, out(start));
    const chk = await runWarden(['--check-config', '-c', f]);
    assert.notEqual(chk.code, 0, `--check-config passed a file that cannot start:\n${out(chk)}`);
    for (const w of [want].flat()) {
      assert.ok(out(chk).includes(w), `--check-config does not name ${w}:\n${out(chk)}`);
      assert.ok(out(start).includes(w), `the start does not name ${w}:\n${out(start)}`);
    }
    return chk;
  }

  test('r17 an unknown admin key', T, async () => {
    await startAndCheckFail(good({ admin: { listen: 'off', bogus_admin_key: 1 } }), '$.admin.bogus_admin_key');
  });

  test('r17 admin.ring_size 0', T, async () => {
    await startAndCheckFail(good({ admin: { listen: 'off', ring_size: 0 } }), '$.admin.ring_size');
  });

  test('r17 a client listener key that does not match its certificate', T, async () => {
    const c = certsOf();
    await startAndCheckFail(good({ tls: { cert_file: c.server.cert, key_file: c.client.key } }),
      ['$.tls', 'does not match']);
  });

  test('r17 an admin certificate file that does not exist', T, async () => {
    const c = certsOf();
    await startAndCheckFail(good({ admin: { listen: '127.0.0.1:0', tls: { cert_file: '/nonexistent/admin.pem', key_file: c.server.key } } }),
      ['$.admin.tls', '/nonexistent/admin.pem']);
  });

  test('r17 an upstream ca_file that does not exist', T, async () => {
    const conf = good();
    conf.upstreams[1].url = 'https://127.0.0.1:3002/mcp';
    conf.upstreams[1].tls = { ca_file: '/nonexistent/ca.pem' };
    await startAndCheckFail(conf, ['$.upstreams[1]', '/nonexistent/ca.pem']);
  });

  test('r17 policy, contract and admin errors are all reported in one run', T, async () => {
    const conf = good({
      policy: { bogus_policy_key: true },
      admin: { listen: 'off', bogus_admin_key: 1 },
    });
    conf.upstreams[0].contract = { mode: 'sometimes' };
    const r = await runWarden(['--check-config', '-c', writeConfig(conf)]);
    assert.notEqual(r.code, 0, out(r));
    for (const w of ['bogus_policy_key', '$.upstreams[0].contract.mode', '$.admin.bogus_admin_key']) {
      assert.ok(out(r).includes(w), `${w} is not reported:\n${out(r)}`);
    }
  });

  test('r17 a good file with TLS everywhere passes, and opens no socket', T, async () => {
    const c = certsOf();
    const wp = await freePort();
    const conf = good({
      listen: `127.0.0.1:${wp}`,
      tls: { cert_file: c.server.cert, key_file: c.server.key },
      admin: { listen: '127.0.0.1:0', tls: 'listener' },
    });
    conf.upstreams[1].url = 'https://127.0.0.1:3002/mcp';
    conf.upstreams[1].tls = { ca_file: c.ca };
    const r = await runWarden(['--check-config', '-c', writeConfig(conf)]);
    assert.equal(r.code, 0, out(r));
    assert.match(r.stdout, /OK/, out(r));
    assert.doesNotMatch(out(r), /listening on/, out(r));
  });

  test('r17 a top-level "$schema" string is accepted', T, async () => {
    const r = await runWarden(['--check-config', '-c', writeConfig(good({ $schema: 'https://example.com/mcpwarden.schema.json' }))]);
    assert.equal(r.code, 0, out(r));
    const bad = await runWarden(['--check-config', '-c', writeConfig(good({ $schema: 7 }))]);
    assert.notEqual(bad.code, 0, out(bad));
    assert.ok(out(bad).includes('$.$schema'), out(bad));
  });
});

describe('mcpwarden process lifecycle', () => {
  test('logs "listening on 127.0.0.1:PORT" when ready', T, async () => {
    const peer = await startScriptedPeer();
    try {
      const wp = await freePort();
      const w = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url]);
      await w.proc.waitForStderr(new RegExp(`listening on 127\\.0\\.0\\.1:${wp}\\b`), 3000);
      await stop(w.proc);
    } finally {
      await peer.close();
    }
  });

  test('SIGTERM lets an in-flight SSE reply finish, then exits 0', T, async () => {
    const peer = await startScriptedPeer({ mode: 'slow-sse', events: 4, interval: 250 });
    try {
      const wp = await freePort();
      const w = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url]);
      const st = await openStream(w.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'drain-1', method: 'tools/call', params: { name: 'slow' } }),
      });
      await waitFor(() => st.sse.events.length >= 1, { timeout: 3000, what: 'first event' });
      w.proc.child.kill('SIGTERM');
      const end = await withTimeout(st.ended, 5000, 'stream end after SIGTERM');
      assert.equal(end.how, 'end');
      const last = st.sse.messages().at(-1);
      assert.equal(last?.id, 'drain-1', `in-flight reply cut short: ${st.text()}`);
      const status = await withTimeout(w.proc.exited, 5000, 'mcpwarden to exit after SIGTERM');
      assert.equal(status.code, 0, JSON.stringify(status));
    } finally {
      await peer.close();
    }
  });
});

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

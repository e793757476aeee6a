// Capture -> replay end to end (issue 21, items 1 and 2): the proxy's own
// capture file, written while official SDK clients (Streamable HTTP, and
// legacy HTTP+SSE through the translation) call the drift server's v1, is
// replayed as it is by `mcpwarden replay`: against v1 nothing regressed
// (exit 0), against the drifting v2 each drifted tool is named with its
// code (exit 1), and the destructive call is never sent. replay.test.mjs
// covers the comparison rules on hand-written captures; this file proves
// the two halves agree on the format.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startAdminWarden, adminGet, metricValue } from './lib/admin-util.mjs';
import { requireWarden, spawnTracked, stop, stopAll, WARDEN_BIN } from './lib/procs.mjs';
import { connectSdk } from './lib/translate-util.mjs';
import { waitFor, withTimeout } from './lib/util.mjs';
import { startDriftServer } from './peers/drift-server.mjs';

const T = { timeout: 90000 };
const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-replay-capture-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));

const CALLS = [
  ['get_status', {}], ['lookup', { key: 'a' }], ['fetch_report', { id: 'x1' }], ['render', {}],
  ['search', { q: 'mcp' }], ['stable', {}], ['delete_item', { id: '7' }],
];

async function replay(args) {
  requireWarden();
  const h = spawnTracked('mcpwarden-replay', WARDEN_BIN, ['replay', ...args]);
  try {
    const st = await withTimeout(h.exited, 30000, `mcpwarden replay ${args.join(' ')}`);
    return { code: st.code, stdout: h.stdout, stderr: h.stderr };
  } finally {
    await stop(h, { signal: 'SIGKILL' });
  }
}
const show = (r) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
const codesOf = (doc, tool) => [...new Set(doc.calls.filter((c) => c.tool === tool).flatMap((c) => c.findings.map((f) => f.code)))].sort();
const lines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

// Drives one SDK session of `kind` through the proxy; every call of CALLS.
async function session(kind, url) {
  const s = await connectSdk(kind, url, { name: `capture-${kind}` });
  try {
    for (const [name, args] of CALLS) {
      await withTimeout(s.client.callTool({ name, arguments: args }).catch(() => null), 15000, `${kind} ${name}`);
    }
  } finally {
    await s.close();
  }
}

for (const redacted of [false, true]) {
  describe(`capture (${redacted ? 'redacted, the default' : 'unredacted'}) then replay`, () => {
    let v1; let v2; let w; let file;
    before(async () => {
      v1 = await startDriftServer({ mode: 'v1' });
      v2 = await startDriftServer({ mode: 'v2' });
      file = path.join(tmp, `cap-${redacted}.jsonl`);
      const capture = redacted ? { path: file } : { path: file, unredacted: true };
      w = await startAdminWarden({ upstreams: [{ name: 'staging', url: v1.url, capture }] });
      await session('streamable', w.url);
      await session('sse', `http://127.0.0.1:${w.port}/sse`);
      // The writer thread appends shortly after each call: wait for its
      // counter, then for the lines it counted.
      await waitFor(async () => {
        const m = await adminGet(w.admin, '/metrics');
        return metricValue(m.text, 'mcpwarden_capture_records_total', { upstream: 'staging' }) >= 2 * CALLS.length;
      }, { timeout: 10000, what: 'capture records counted' });
      await waitFor(() => lines(file).length >= 2 * CALLS.length, { timeout: 10000, what: 'capture lines written' });
    });
    after(async () => { await stopAll(); await v1?.close(); await v2?.close(); });

    test('the capture holds both sessions, as the proxy saw them', T, () => {
      const got = lines(file);
      assert.equal(got.length, 2 * CALLS.length);
      const sessions = [...new Set(got.map((l) => l.session))];
      assert.equal(sessions.length, 2, JSON.stringify(sessions));
      assert.deepEqual(got.map((l) => l.transport).sort(), [...Array(CALLS.length).fill('sse'), ...Array(CALLS.length).fill('streamable_http')]);
      assert.ok(got.every((l) => l.redacted === redacted));
    });

    test('replayed against v1: exit 0, the destructive call skipped and never sent', T, async () => {
      v1.calls.length = 0;
      v1.inits.length = 0;
      const r = await replay([file, '--against', v1.url, '--format', 'json']);
      assert.equal(r.code, 0, show(r));
      const doc = JSON.parse(r.stdout);
      assert.deepEqual(doc.summary, { calls: 14, passed: 12, regressed: 0, skipped: 2 }, show(r));
      assert.ok(doc.calls.filter((c) => c.tool === 'delete_item').every((c) => c.reason === 'skipped (policy)'));
      assert.ok(!v1.calls.some((c) => c.name === 'delete_item'), JSON.stringify(v1.calls));
      // Each session re-created with the client info the capture kept.
      const names = v1.inits.map((i) => i.clientInfo?.name).filter((n) => n?.startsWith('capture-')).sort();
      assert.deepEqual(names, ['capture-sse', 'capture-streamable']);
    });

    test('replayed against the drifting v2: exit 1, each drifted tool named', T, async () => {
      const r = await replay([file, '--against', v2.url, '--format', 'json']);
      assert.equal(r.code, 1, show(r));
      const doc = JSON.parse(r.stdout);
      assert.deepEqual(codesOf(doc, 'search'), ['replay-error-flip']);
      assert.deepEqual(codesOf(doc, 'render'), ['replay-content-types']);
      assert.deepEqual(codesOf(doc, 'fetch_report'), ['replay-structured-missing']);
      assert.ok(codesOf(doc, 'lookup').includes('replay-iserror-flip'), JSON.stringify(codesOf(doc, 'lookup')));
      assert.ok(codesOf(doc, 'get_status').includes('replay-output-schema'), JSON.stringify(codesOf(doc, 'get_status')));
      assert.deepEqual(codesOf(doc, 'stable'), []);
    });
  });
}

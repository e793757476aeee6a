// `mcpwarden replay` (issue 21, item 2) against real servers: our SDK
// drift server (peers/drift-server.mjs) in its v1 and drifting v2 modes,
// @modelcontextprotocol/server-everything replaying its own answers, and
// the 2026-07-28 SDK server for the per-request form. The capture files
// are written by hand in the format WAVE4 fixes (docs/replay.md), from the
// answers the servers really gave; the end-to-end capture -> replay case
// joins when the recorder lands.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import {
  EVERYTHING_ENTRY, REPO_ROOT, requireWarden, spawnTracked, startEverything, stop, stopAll, waitForPort, WARDEN_BIN,
} from './lib/procs.mjs';
import { withTimeout } from './lib/util.mjs';
import { connectClient } from './lib/mcp.mjs';
import { startDriftServer, answer } from './peers/drift-server.mjs';
import { startStatelessServer } from './peers/stateless-server.mjs';

const T = { timeout: 60000 };
const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-replay-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));
let nfile = 0;
function file(text, ext = 'jsonl') {
  const p = path.join(tmp, `f${nfile++}.${ext}`);
  writeFileSync(p, text);
  return p;
}
const jsonl = (lines) => file(lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
const ALLOW_ALL = () => file(JSON.stringify({ default: 'allow', unknown_tools: 'rules', rules: [] }), 'json');

/** One capture line as the recorder writes it (keys in WAVE4's order). */
function line(seq, name, args, answered, extra = {}) {
  const l = {
    capture: 1, seq, time: '2026-12-02T02:30:00.123Z', upstream: 'staging',
    session: 'c-0123456789abcdef', era: '2025-11-25', transport: 'streamable_http',
    client: { name: 'claude-code', version: '2.0.1' }, capabilities: { roots: { listChanged: true } },
    method: 'tools/call', id: seq, params: { name, arguments: args }, redacted: false, outcome: 'ok',
    ...answered, ms: 5, ...extra,
  };
  return l;
}

/** The answer the drift server's v1 gives, as a capture line records it. */
function v1(seq, name, args = {}, extra = {}) {
  let answered;
  try { answered = { result: answer('v1', name, args) }; } catch (e) { answered = { error: { code: e.code, message: e.message } }; }
  return line(seq, name, args, answered, extra);
}

const DRIFT_CALLS = [
  ['get_status', {}], ['lookup', { key: 'a' }], ['fetch_report', { id: 'x1' }], ['render', {}],
  ['search', { q: 'mcp' }], ['stable', {}], ['delete_item', { id: '7' }],
];
const driftCapture = () => jsonl(DRIFT_CALLS.map(([n, a], i) => v1(i + 1, n, a)));

async function replay(args, { timeout = 30000 } = {}) {
  requireWarden();
  const h = spawnTracked('mcpwarden-replay', WARDEN_BIN, ['replay', ...args]);
  let status;
  try {
    status = await withTimeout(h.exited, timeout, `mcpwarden replay ${args.join(' ')}`);
  } finally {
    await stop(h, { signal: 'SIGKILL' });
  }
  return {
    code: status.code, stdout: h.stdout, stderr: h.stderr,
    json() {
      try { return JSON.parse(h.stdout); } catch { throw new Error(`stdout is not JSON:\n${h.stdout}\nstderr:\n${h.stderr}`); }
    },
  };
}
const show = (r) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
const codesOf = (doc, tool) => doc.calls.filter((c) => c.tool === tool).flatMap((c) => c.findings.map((f) => f.code));
const verdictOf = (doc, tool) => doc.tools.find((t) => t.tool === tool)?.verdict;

after(async () => { await stopAll(); });

describe('replay against the drift server', () => {
  let a; let b;
  before(async () => {
    a = await startDriftServer({ mode: 'v1' });
    b = await startDriftServer({ mode: 'v2' });
  });
  after(async () => { await a?.close(); await b?.close(); });

  test('v1 replaying its own capture: exit 0; the destructive tool is not sent', T, async () => {
    a.calls.length = 0;
    const r = await replay([driftCapture(), '--against', a.url, '--format', 'json']);
    assert.equal(r.code, 0, show(r));
    const doc = r.json();
    assert.deepEqual(doc.summary, { calls: 7, passed: 6, regressed: 0, skipped: 1 });
    const del = doc.calls.find((c) => c.tool === 'delete_item');
    assert.equal(del.verdict, 'skipped');
    assert.equal(del.reason, 'skipped (policy)');
    assert.equal(del.policy.rule, 'not-read-only');
    // Only what the policy allowed reached the server, in capture order.
    assert.deepEqual(a.calls.map((c) => c.name), ['get_status', 'lookup', 'fetch_report', 'render', 'search', 'stable']);
    // stable's fresh UUID, timestamp and numeric id were normalised.
    assert.equal(doc.calls.find((c) => c.tool === 'stable').verdict, 'pass');
    assert.deepEqual(doc.calls.map((c) => c.line), [1, 2, 3, 4, 5, 6, 7]);
  });

  test('the session is re-created with the captured client info, capabilities and era', T, async () => {
    a.inits.length = 0;
    const r = await replay([driftCapture(), '--against', a.url]);
    assert.equal(r.code, 0, show(r));
    const replayed = a.inits.filter((i) => i.clientInfo?.name === 'claude-code');
    assert.equal(replayed.length, 1, JSON.stringify(a.inits));
    assert.deepEqual(replayed[0], {
      clientInfo: { name: 'claude-code', version: '2.0.1' },
      capabilities: { roots: { listChanged: true } },
      protocolVersion: '2025-11-25',
    });
    assert.match(r.stdout, /^7 calls: 6 passed, 0 regressed, 1 skipped$/m);
  });

  test('v2: exit 1 with the right code per tool', T, async () => {
    const r = await replay([driftCapture(), '--against', b.url, '--json']);
    assert.equal(r.code, 1, show(r));
    const doc = r.json();
    assert.deepEqual(codesOf(doc, 'get_status').sort(), ['replay-output-schema', 'replay-structured-type']);
    assert.ok(codesOf(doc, 'lookup').includes('replay-iserror-flip'));
    assert.deepEqual(codesOf(doc, 'fetch_report'), ['replay-structured-missing']);
    assert.deepEqual(codesOf(doc, 'render'), ['replay-content-types']);
    assert.deepEqual(codesOf(doc, 'search'), ['replay-error-flip']);
    assert.deepEqual(codesOf(doc, 'stable'), []);
    for (const t of ['get_status', 'lookup', 'fetch_report', 'render', 'search']) assert.equal(verdictOf(doc, t), 'regressed', t);
    assert.equal(verdictOf(doc, 'stable'), 'pass');
    assert.equal(verdictOf(doc, 'delete_item'), 'skipped');
    // Per tool, in name order.
    assert.deepEqual(doc.tools.map((t) => t.tool), [...doc.tools.map((t) => t.tool)].sort());
  });

  test('text output: the same verdicts, deterministic', T, async () => {
    const cap = driftCapture();
    const r1 = await replay([cap, '--against', b.url]);
    const r2 = await replay([cap, '--against', b.url]);
    assert.equal(r1.code, 1, show(r1));
    const strip = (s) => s.replace(/ \d+\.\d ms( \(x\d+\.\d\d\))?/g, '');
    assert.equal(strip(r1.stdout), strip(r2.stdout));
    assert.match(r1.stdout, /line 5 \(seq 5\) search: REGRESSED/);
    assert.match(r1.stdout, /error replay-error-flip: .*search index unavailable/);
    assert.match(r1.stdout, /^ {2}delete_item: skipped \(1 calls\)$/m);
  });

  test('--policy allowing everything sends the destructive call', T, async () => {
    a.calls.length = 0;
    const r = await replay([driftCapture(), '--against', a.url, '--policy', ALLOW_ALL(), '--json']);
    assert.equal(r.code, 0, show(r));
    assert.ok(a.calls.some((c) => c.name === 'delete_item' && c.arguments.id === '7'));
    assert.equal(r.json().summary.skipped, 0);
  });

  test('--baseline-url: A/B between v1 and v2', T, async () => {
    a.calls.length = 0;
    const ab = await replay([driftCapture(), '--against', b.url, '--baseline-url', a.url, '--json']);
    assert.equal(ab.code, 1, show(ab));
    const doc = ab.json();
    assert.ok(doc.baseline.endsWith('/mcp'));
    assert.deepEqual(codesOf(doc, 'search'), ['replay-error-flip']);
    assert.deepEqual(codesOf(doc, 'render'), ['replay-content-types']);
    assert.ok(doc.calls.find((c) => c.tool === 'search').baseline_ms > 0);
    // The baseline got the same calls (the read-only ones).
    assert.equal(a.calls.length, 6);
    // A/B with the same build on both sides: nothing regressed, even with
    // a capture whose answers are stale (A/B ignores them).
    const stale = jsonl([line(1, 'lookup', { key: 'a' }, { result: { content: [{ type: 'text', text: 'stale' }] } })]);
    const same = await replay([stale, '--against', a.url, '--baseline-url', a.url]);
    assert.equal(same.code, 0, show(same));
    const alone = await replay([stale, '--against', a.url, '--json']);
    assert.equal(alone.code, 1, show(alone));
    assert.deepEqual(codesOf(alone.json(), 'lookup'), ['replay-text-changed']);
  });

  test('--rules: a regex replacement and an ignored pointer', T, async () => {
    const edited = jsonl([line(1, 'lookup', { key: 'a' }, { result: { content: [{ type: 'text', text: 'a = 41' }] } })]);
    const before = await replay([edited, '--against', a.url]);
    assert.equal(before.code, 1, show(before));
    const rules = file(JSON.stringify({ replace: [{ pattern: '= \\d+', with: '= N' }] }), 'json');
    const after1 = await replay([edited, '--against', a.url, '--rules', rules]);
    assert.equal(after1.code, 0, show(after1));
    // Ignoring /structuredContent/count hides the type change, not the
    // outputSchema violation (the schema judges the answer as sent).
    const ign = file(JSON.stringify({ ignore: ['/structuredContent/count'] }), 'json');
    const st = await replay([jsonl([v1(1, 'get_status')]), '--against', b.url, '--rules', ign, '--json']);
    assert.equal(st.code, 1, show(st));
    assert.deepEqual(codesOf(st.json(), 'get_status'), ['replay-output-schema']);
    const bad = await replay([edited, '--against', a.url, '--rules', file('{"replace":[{"pattern":"(?=x)","with":""}]}', 'json')]);
    assert.equal(bad.code, 2, show(bad));
    assert.match(bad.stderr, /--rules .*lookahead/);
  });

  test('redacted lines compare shapes only; answers the proxy gave are not replayed', T, async () => {
    const masked = line(1, 'lookup', { key: 'a' }, { result: { content: [{ type: 'text', text: 'a = ••••' }] } }, { redacted: true });
    const byProxy = line(2, 'lookup', { key: 'a' }, { error: { code: -32001, message: 'denied by policy' } }, { by: 'proxy' });
    a.calls.length = 0;
    const r = await replay([jsonl([masked, byProxy]), '--against', a.url, '--json']);
    assert.equal(r.code, 0, show(r));
    const doc = r.json();
    assert.deepEqual(doc.calls.map((x) => [x.verdict, x.redacted ?? false]), [['pass', true], ['skipped', false]]);
    assert.equal(doc.calls[1].reason, 'skipped (the proxy answered, not the server)');
    assert.equal(a.calls.length, 1);
    // Unredacted, the same text is a change.
    const plain = await replay([jsonl([{ ...masked, redacted: false }]), '--against', a.url, '--json']);
    assert.equal(plain.code, 1, show(plain));
  });

  test('a session the server forgets mid-replay is initialized again and the call re-sent', T, async () => {
    const e = await startDriftServer({ mode: 'v1', expireAfter: 1 });
    try {
      const cap = jsonl([v1(1, 'lookup', { key: 'a' }), v1(2, 'lookup', { key: 'b' }), v1(3, 'render')]);
      const r = await replay([cap, '--against', e.url, '--json']);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(e.calls.map((c) => c.name), ['lookup', 'lookup', 'render']);
      assert.equal(e.inits.filter((i) => i.clientInfo?.name === 'claude-code').length, 3);
      assert.ok(r.json().notes.some((n) => /session expired/.test(n)), r.stdout);
    } finally {
      await e.close();
    }
  });

  test('--timeout: a call with no answer in time is replay-no-response; the session goes on', T, async () => {
    const waited = line(1, 'wait', { ms: 3000 }, { result: { content: [{ type: 'text', text: 'waited' }] } });
    const cap = jsonl([waited, v1(2, 'lookup', { key: 'a' })]);
    const r = await replay([cap, '--against', a.url, '--timeout', '0.5', '--json']);
    assert.equal(r.code, 1, show(r));
    const doc = r.json();
    assert.deepEqual(doc.calls.map((c) => [c.tool, c.verdict]), [['wait', 'regressed'], ['lookup', 'pass']]);
    assert.deepEqual(codesOf(doc, 'wait'), ['replay-no-response']);
    assert.match(doc.calls[0].findings[0].message, /no answer within 0\.5 s/);
  });

  test('--max-slowdown: replay-slower when the ratio is over it', T, async () => {
    const fast = jsonl([v1(1, 'lookup', { key: 'a' }, { ms: 0.0001 })]);
    const r = await replay([fast, '--against', a.url, '--max-slowdown', '2', '--json']);
    assert.equal(r.code, 1, show(r));
    assert.deepEqual(codesOf(r.json(), 'lookup'), ['replay-slower']);
    const noLimit = await replay([fast, '--against', a.url, '--json']);
    assert.equal(noLimit.code, 0, show(noLimit));
    assert.ok(noLimit.json().calls[0].ratio > 2);
  });

  test('a dataset: each matcher passes and fails', T, async () => {
    const c = (seq, name, args, expect) => ({ ...line(seq, name, args, {}), expect });
    const ds = jsonl([
      c(1, 'lookup', { key: 'a' }, { equals: { content: [{ type: 'text', text: 'a = 42' }] } }),
      c(2, 'lookup', { key: 'a' }, { equals: { content: [{ type: 'text', text: 'a = 43' }] } }),
      c(3, 'lookup', { key: 'b' }, { pattern: '^b = \\d+$' }),
      c(4, 'lookup', { key: 'b' }, { pattern: '^nothing' }),
      c(5, 'get_status', {}, { structured_schema: { type: 'object', properties: { count: { type: 'integer' } } } }),
      c(6, 'get_status', {}, { structured_schema: { type: 'object', required: ['uptime'] } }),
      c(7, 'fetch_report', { id: 'q' }, { schema: { type: 'object', required: ['content', 'isError'] } }),
      c(8, 'render', {}, { schema: { type: 'object', required: ['structuredContent'] } }),
      c(9, 'lookup', { key: 'a' }, { max_bytes: 1000, min_bytes: 10 }),
      c(10, 'lookup', { key: 'a' }, { max_bytes: 10 }),
      c(11, 'fetch_report', { id: 'q' }, { isError: true }),
      c(12, 'lookup', { key: 'a' }, { isError: true }),
      c(13, 'stable', {}, { equals: { content: [{ type: 'text', text: 'request 123e4567-e89b-12d3-a456-426614174000 at 2020-01-01T00:00:00.000Z trace 1700000000000' }] } }),
    ]);
    const r = await replay([ds, '--against', a.url, '--json']);
    assert.equal(r.code, 1, show(r));
    const doc = r.json();
    const v = doc.calls.map((x) => [x.line, x.verdict, x.findings.map((f) => f.code).join(',')]);
    assert.deepEqual(v, [
      [1, 'pass', ''], [2, 'regressed', 'replay-expect-equals'],
      [3, 'pass', ''], [4, 'regressed', 'replay-expect-pattern'],
      [5, 'pass', ''], [6, 'regressed', 'replay-expect-structured-schema'],
      [7, 'pass', ''], [8, 'regressed', 'replay-expect-schema'],
      [9, 'pass', ''], [10, 'regressed', 'replay-expect-size'],
      [11, 'pass', ''], [12, 'regressed', 'replay-expect-iserror'],
      [13, 'pass', ''],
    ]);
    assert.ok(doc.calls.every((x) => x.case === true));
    // The same cases against v2: search-like errors fail a case too.
    const err = await replay([jsonl([c(1, 'search', { q: 'x' }, { pattern: 'hits' })]), '--against', b.url, '--json']);
    assert.equal(err.code, 1, show(err));
    assert.deepEqual(codesOf(err.json(), 'search'), ['replay-expect-result']);
  });

  test('a bad line: exit 2 naming the file and the line', T, async () => {
    const good = JSON.stringify(v1(1, 'lookup', { key: 'a' }));
    for (const [bad, why] of [
      ['{"capture": 1, "seq": 3', /not JSON/],
      [JSON.stringify({ ...v1(3, 'lookup'), capture: 2 }), /"capture" must be 1/],
      [JSON.stringify({ ...v1(3, 'lookup'), params: { arguments: {} } }), /"params" must be an object with a string "name"/],
      [JSON.stringify({ ...v1(3, 'lookup'), expect: { patern: 'x' } }), /unknown or malformed member "patern"/],
      [JSON.stringify({ ...v1(3, 'lookup'), expect: { pattern: '(?<=a)b' } }), /lookbehind/],
    ]) {
      const f = jsonl([good, '', bad]);
      const r = await replay([f, '--against', a.url]);
      assert.equal(r.code, 2, show(r));
      assert.ok(r.stderr.includes(`${f}:3: `), r.stderr);
      assert.match(r.stderr, why);
      assert.equal(r.stdout, '');
    }
  });

  test('could not run: exit 2 (unreachable, no file, bad options)', T, async () => {
    const port = await freePort();
    const r = await replay([driftCapture(), '--against', `http://127.0.0.1:${port}/mcp`]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /mcpwarden replay: /);
    const nf = await replay([path.join(tmp, 'nope.jsonl'), '--against', a.url]);
    assert.equal(nf.code, 2, show(nf));
    assert.match(nf.stderr, /No such file/);
    const no = await replay([driftCapture()]);
    assert.equal(no.code, 2, show(no));
    assert.match(no.stderr, /--against URL/);
    const fmt = await replay([driftCapture(), '--against', a.url, '--format', 'json', '--format', 'text']);
    assert.equal(fmt.code, 2, show(fmt));
  });

  test('--header values are sent and never printed; --format FMT=FILE', T, async () => {
    const out = path.join(tmp, 'out.json');
    const r = await replay([jsonl([v1(1, 'lookup', { key: 'a' })]), '--against', a.url,
      '--header', 'Authorization: Bearer s3cr3t-token-value', '--format', `json=${out}`, '--format', 'text']);
    assert.equal(r.code, 0, show(r));
    const doc = JSON.parse(readFileSync(out, 'utf8'));
    assert.equal(doc.summary.passed, 1);
    assert.doesNotMatch(r.stdout + r.stderr + readFileSync(out, 'utf8'), /s3cr3t/);
  });
});

/** Runs a consumer of a format: {code, out}. */
function consumer(cmd, args) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd: REPO_ROOT, timeout: 170000, maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
      if (err && err.code === undefined) reject(err);
      else resolve({ code: err ? err.code : 0, out: stdout + stderr });
    });
  });
}

describe('replay in every CI format', () => {
  let b;
  before(async () => { b = await startDriftServer({ mode: 'v2' }); });
  after(async () => { await b?.close(); });

  test('junit, sarif, github, markdown: read back by their consumers', { timeout: 180000 }, async () => {
    const cap = driftCapture();
    const out = (n) => path.join(tmp, n);
    const r = await replay([cap, '--against', b.url, '--format', 'github', '--format', `junit=${out('r.xml')}`,
      '--format', `sarif=${out('r.sarif')}`, '--format', `markdown=${out('r.md')}`, '--format', `json=${out('r.json')}`]);
    assert.equal(r.code, 1, show(r));
    // GitHub: one ::error per finding, at the capture line it came from.
    const gh = r.stdout.split('\n').filter((l) => l.startsWith('::error '));
    assert.ok(gh.some((l) => l.includes(`file=${cap},line=2`) && l.includes('title=replay-iserror-flip')), r.stdout);
    assert.ok(gh.some((l) => l.includes('line=5') && l.includes('title=replay-error-flip')), r.stdout);
    // JUnit through junitparser: one case per tool, failures, the skip.
    const py = [
      'import json, sys', 'from junitparser import JUnitXml',
      'x = JUnitXml.fromfile(sys.argv[1])',
      'print(json.dumps({c.name: [type(v).__name__ for v in c.result] for s in x for c in s}))',
    ].join('\n');
    const ju = await consumer('/usr/bin/python3', ['-c', py, out('r.xml')]);
    assert.equal(ju.code, 0, ju.out);
    const cases = JSON.parse(ju.out);
    assert.deepEqual(Object.keys(cases).sort(), ['delete_item', 'fetch_report', 'get_status', 'lookup', 'render', 'search', 'stable']);
    assert.deepEqual(cases.stable, []);
    assert.deepEqual(cases.delete_item, ['Skipped']);
    for (const t of ['fetch_report', 'get_status', 'lookup', 'render', 'search']) assert.deepEqual(cases[t], ['Failure'], t);
    // SARIF 2.1.0 through Microsoft's SARIF Multitool.
    const v = await consumer('npx', ['sarif-multitool', 'validate', out('r.sarif')]);
    assert.match(v.out, /Analysis completed successfully/, v.out);
    assert.deepEqual(v.out.split('\n').filter((l) => /: (error|warning) [A-Z]+\d+:/.test(l)), [], v.out);
    const sarif = JSON.parse(readFileSync(out('r.sarif'), 'utf8'));
    const ids = sarif.runs[0].tool.driver.rules.map((x) => x.id);
    for (const c of ['replay-iserror-flip', 'replay-structured-missing', 'replay-content-types', 'replay-error-flip']) assert.ok(ids.includes(c), c);
    // Markdown for the step summary; json as before.
    assert.match(readFileSync(out('r.md'), 'utf8'), /lookup/);
    assert.equal(JSON.parse(readFileSync(out('r.json'), 'utf8')).summary.regressed, 5);
  });

  test('could not run: the CI formats say so', T, async () => {
    const f = jsonl(['{"capture": 2}']);
    const x = path.join(tmp, 'err.xml');
    const r = await replay([f, '--against', b.url, '--format', `junit=${x}`]);
    assert.equal(r.code, 2, show(r));
    const xml = readFileSync(x, 'utf8');
    assert.match(xml, /<error/);
    assert.ok(xml.includes(`${f}:1: `), xml);
  });
});

describe('replay against server-everything', () => {
  let se; let legacyUrl;
  before(async () => {
    se = await startEverything(await freePort());
    const port = await freePort();
    const h = spawnTracked(`server-everything-sse:${port}`, process.execPath,
      ['--import', path.join(REPO_ROOT, 'tests/integration/lib/everything-preload.mjs'), EVERYTHING_ENTRY, 'sse'],
      { env: { PORT: String(port), MCPWARDEN_IT_STDIN_GUARD: '1' }, stdinPipe: true });
    await waitForPort(h, port, 15000);
    legacyUrl = `http://127.0.0.1:${port}/sse`;
  }, T);

  test('replaying its own answers: exit 0 after normalisation', T, async () => {
    // The "capture": what server-everything answered an SDK client.
    const c = await connectClient(se.url, { name: 'it-recorder' });
    const cases = [
      ['echo', { message: 'hello replay' }],
      ['get-sum', { a: 2, b: 3 }],
      ['get-structured-content', { location: 'Chicago' }],
      ['get-tiny-image', {}],
      ['get-annotated-message', { messageType: 'success', includeImage: true }],
      ['gzip-file-as-resource', {}],
    ];
    const lines = [];
    try {
      for (const [i, [name, args]] of cases.entries()) {
        const t0 = performance.now();
        const result = await c.client.callTool({ name, arguments: args });
        lines.push(line(i + 1, name, args, { result }, { client: { name: 'it-recorder', version: '1.0.0' }, capabilities: {}, ms: performance.now() - t0 }));
      }
    } finally {
      await c.close();
    }
    const r = await replay([jsonl(lines), '--against', se.url, '--json']);
    assert.equal(r.code, 0, show(r));
    const doc = r.json();
    assert.deepEqual(doc.calls.map((x) => [x.tool, x.verdict]), [
      ['echo', 'pass'], ['get-sum', 'pass'], ['get-structured-content', 'pass'], ['get-tiny-image', 'pass'],
      ['get-annotated-message', 'pass'], ['gzip-file-as-resource', 'skipped'],
    ]);
    // A drifted capture of the same server is caught.
    const drifted = structuredClone(lines[2]);
    drifted.result.structuredContent.temperature = 'warm';
    const d = await replay([jsonl([drifted]), '--against', se.url, '--json']);
    assert.equal(d.code, 1, show(d));
    assert.deepEqual(codesOf(d.json(), 'get-structured-content'), ['replay-structured-type']);
    // The same capture against the legacy HTTP+SSE build of the server.
    const old = await replay([jsonl(lines), '--against', legacyUrl, '--json']);
    assert.equal(old.code, 0, show(old));
    assert.equal(old.json().summary.passed, 5);
  });
});

describe('replay in the 2026-07-28 era', () => {
  let srv;
  before(async () => { srv = await startStatelessServer({ legacy: 'reject' }); });
  after(async () => { await srv?.close(); });

  test('a null session is one stateless request in the per-request form', T, async () => {
    const l = (seq, message) => ({
      ...line(seq, 'echo', { message }, { result: { content: [{ type: 'text', text: `Echo: ${message}` }] } }),
      session: null, era: '2026-07-28', client: { name: 'modern-client', version: '3.1.0' }, capabilities: {},
    });
    srv.received.length = 0;
    const r = await replay([jsonl([l(1, 'one'), l(2, 'two')]), '--against', srv.url, '--policy', ALLOW_ALL(), '--json']);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(r.json().calls.map((x) => [x.session, x.verdict]), [[null, 'pass'], [null, 'pass']]);
    const calls = srv.received.filter((x) => x.body?.method === 'tools/call');
    assert.equal(calls.length, 2);
    for (const x of calls) {
      assert.equal(x.headers['mcp-method'], 'tools/call');
      assert.equal(x.headers['mcp-name'], 'echo');
      assert.equal(x.headers['mcp-protocol-version'], '2026-07-28');
      assert.deepEqual(x.body.params._meta['io.modelcontextprotocol/clientInfo'], { name: 'modern-client', version: '3.1.0' });
    }
    // No initialize in this era.
    assert.equal(srv.received.filter((x) => x.body?.method === 'initialize').length, 0);
  });

  test('x-mcp-header arguments go out as Mcp-Param-* headers (from the new listing)', T, async () => {
    const c = {
      ...line(1, 'weather', { region: 'eu west ü', days: 3, metric: false, zip: '10115' }, {}),
      session: null, era: '2026-07-28', expect: { pattern: '^forecast for eu west ü: 3 day\\(s\\), imperial$' },
    };
    srv.received.length = 0;
    const r = await replay([jsonl([c]), '--against', srv.url, '--policy', ALLOW_ALL(), '--json']);
    assert.equal(r.code, 0, show(r));
    const call = srv.received.find((x) => x.body?.method === 'tools/call');
    assert.equal(call.headers['mcp-param-region'], `=?base64?${Buffer.from('eu west ü').toString('base64')}?=`);
    assert.equal(call.headers['mcp-param-days'], '3');
    assert.equal(call.headers['mcp-param-metric'], 'false');
    assert.equal(call.headers['mcp-param-zip'], undefined);
  });
});

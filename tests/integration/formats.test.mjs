// Every CI's format of `mcpwarden check` and `mcpwarden diff` (issue 21,
// item 4), judged by the real consumers: SARIF 2.1.0 by Microsoft's SARIF
// Multitool (`npx sarif-multitool validate`), JUnit XML by Debian's
// python3-junitparser, GitHub workflow-command lines parsed back and their
// file/line compared with the saved file's text, Markdown for
// $GITHUB_STEP_SUMMARY (a table row per tool, escaping). Cases: a passing
// listing, a listing with problems, a breaking diff against a baseline,
// and a live check of the contract peer against a baseline.
//
// The line numbers are checked against this file's own serialiser
// (pretty()), which records the line of every JSON Pointer as it writes
// the text: an implementation apart from proxy/cli/jsonloc.c.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, requireWarden, spawnTracked, stop, stopAll, WARDEN_BIN } from './lib/procs.mjs';
import { withTimeout } from './lib/util.mjs';
import { startContractPeer, GOOD, NODESC, GHOSTREQ } from './peers/contract-peer.mjs';

const T = { timeout: 60000 };
const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-formats-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));
const at = (name) => path.join(tmp, name);

/** Runs ./mcpwarden with args (cwd tmp, so files are named relatively). */
async function warden(args, env = {}) {
  requireWarden();
  const h = spawnTracked('mcpwarden-formats', WARDEN_BIN, args, { cwd: tmp, env });
  let status;
  try {
    status = await withTimeout(h.exited, 20000, `mcpwarden ${args.join(' ')}`);
  } finally {
    await stop(h, { signal: 'SIGKILL' });
  }
  return { code: status.code, stdout: h.stdout, stderr: h.stderr };
}
const show = (r) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
const ALL = (stem) => ['--format', `sarif=${stem}.sarif`, '--format', `junit=${stem}.xml`,
  '--format', `github=${stem}.gh`, '--format', `markdown=${stem}.md`, '--format', `json=${stem}.json`];

// ---- the saved files and where each pointer is in them -------------------

/** JSON.stringify(v, null, 2)'s text, plus the line of every pointer
 * (a member: the line of its name; an element: of its first character). */
function pretty(v) {
  const lines = new Map();
  let line = 1;
  let out = '';
  const esc = (t) => String(t).replace(/~/g, '~0').replace(/\//g, '~1');
  const put = (s) => { out += s; line += (s.match(/\n/g) || []).length; };
  const walk = (x, ptr, ind) => {
    lines.set(ptr, line);
    if (Array.isArray(x) || (x && typeof x === 'object')) {
      const arr = Array.isArray(x);
      const keys = arr ? x.map((_, i) => i) : Object.keys(x);
      if (keys.length === 0) { put(arr ? '[]' : '{}'); return; }
      put(arr ? '[' : '{');
      keys.forEach((k, i) => {
        put(`\n${'  '.repeat(ind + 1)}`);
        if (!arr) { lines.set(`${ptr}/${esc(k)}`, line); put(`${JSON.stringify(k)}: `); }
        const sub = `${ptr}/${esc(k)}`;
        const keep = lines.get(sub);
        walk(x[k], sub, ind + 1);
        if (!arr) lines.set(sub, keep);
        if (i < keys.length - 1) put(',');
      });
      put(`\n${'  '.repeat(ind)}${arr ? ']' : '}'}`);
    } else {
      put(JSON.stringify(x));
    }
  };
  walk(v, '', 0);
  assert.equal(out, JSON.stringify(v, null, 2));
  /** The line of ptr, or of its deepest existing prefix (where an absent
   * member belongs). */
  const lineOf = (ptr) => {
    for (let p = ptr; ; p = p.slice(0, p.lastIndexOf('/'))) {
      if (lines.has(p)) return lines.get(p);
      if (p === '') return 1;
    }
  };
  return { text: `${out}\n`, lineOf };
}

/** Writes obj pretty-printed as tmp/name; returns its lineOf. */
function save(name, obj) {
  const p = pretty(obj);
  writeFileSync(at(name), p.text);
  return p.lineOf;
}

// ---- the consumers -------------------------------------------------------

/** JUnit files read by junitparser: [{suite, name, results: [tag]}] each. */
async function junit(files) {
  const py = [
    'import json, sys',
    'from junitparser import JUnitXml',
    'out = {}',
    'for f in sys.argv[1:]:',
    '    xml = JUnitXml.fromfile(f)',
    '    out[f] = [{"suite": s.name, "name": c.name, "classname": c.classname,',
    '               "results": [type(r).__name__ for r in c.result],',
    '               "messages": [r.message for r in c.result]} for s in xml for c in s]',
    'print(json.dumps(out))',
  ].join('\n');
  const { stdout } = await run('/usr/bin/python3', ['-c', py, ...files.map(at)]);
  const all = JSON.parse(stdout);
  return Object.fromEntries(files.map((f) => [f, all[at(f)]]));
}

function run(cmd, args) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd: REPO_ROOT, timeout: 120000, maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
      if (err && err.code === undefined) reject(err);
      else resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

/** GitHub workflow commands parsed back (GitHub's own decoding). */
function github(text) {
  const dec = (s) => s.replace(/%3A/g, ':').replace(/%2C/g, ',').replace(/%0D/g, '\r').replace(/%0A/g, '\n').replace(/%25/g, '%');
  return text.split('\n').filter(Boolean).map((l) => {
    const m = /^::(error|warning|notice) ([^:]*)::(.*)$/.exec(l);
    assert.ok(m, `not a workflow command: ${l}`);
    const props = Object.fromEntries(m[2].split(',').map((kv) => {
      const i = kv.indexOf('=');
      return [kv.slice(0, i), dec(kv.slice(i + 1))];
    }));
    return { level: m[1], ...props, message: dec(m[3]) };
  });
}

/** The Markdown table's rows as arrays of cells (split at unescaped |). */
function mdRows(md) {
  return md.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| Suite'))
    .map((l) => l.slice(2, -2).split(/(?<!\\)\|/).map((c) => c.trim()));
}

const sarifFiles = []; // validated together at the end (one Multitool run)
const readJson = (f) => JSON.parse(readFileSync(at(f), 'utf8'));
const read = (f) => readFileSync(at(f), 'utf8');

after(async () => { await stopAll(); });

describe('CI formats', () => {
  let peer;
  before(async () => { peer = await startContractPeer(); });
  after(async () => { if (peer) await peer.close(); });

  test('a passing listing: every format says so', T, async () => {
    save('pass-tools.json', { tools: [GOOD('search'), GOOD('fetch')] });
    const r = await warden(['check', '--tools-file', 'pass-tools.json', ...ALL('pass')]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stdout, '', 'every format went to a file');
    sarifFiles.push('pass.sarif');
    const s = readJson('pass.sarif');
    assert.deepEqual(s.runs[0].results, []);
    assert.equal(s.runs[0].invocations[0].executionSuccessful, true);
    const j = (await junit(['pass.xml']))['pass.xml'];
    assert.deepEqual(j.map((c) => [c.suite, c.name, c.results]),
      [['pass-tools.json', 'search', []], ['pass-tools.json', 'fetch', []]]);
    assert.equal(read('pass.gh'), '');
    const md = read('pass.md');
    assert.match(md, /^### mcpwarden check: passed$/m);
    assert.deepEqual(mdRows(md).map((row) => row.slice(1, 3)), [['search', '✅ pass'], ['fetch', '✅ pass']]);
    assert.equal(readJson('pass.json').passed, true);
  });

  test('a listing with problems: located at the right lines of the file', T, async () => {
    const bad = { ...GOOD('a|b*c'), description: 'Pipes & <stars> in a name: 100%' };
    const lineOf = save('bad-tools.json', { tools: [GOOD('search'), NODESC('nodesc'), GHOSTREQ('ghost'), bad] });
    const r = await warden(['check', '--tools-file', 'bad-tools.json', ...ALL('bad')]);
    assert.equal(r.code, 1, show(r));
    const js = readJson('bad.json');
    const tag = (level) => (f) => ({ ...f, level });
    const findings = [...js.tools.flatMap((t) => [...t.problems.map(tag('error')), ...t.warnings.map(tag('warning'))]),
      ...js.problems.map(tag('error')), ...js.warnings.map(tag('warning'))];
    assert.ok(findings.length >= 3);
    // GitHub: one line per finding, each at its pointer's line of the file.
    const gh = github(read('bad.gh'));
    assert.equal(gh.length, findings.length, read('bad.gh'));
    for (const a of gh) {
      const f = findings.find((x) => x.code === a.title && a.message.endsWith(x.message));
      assert.ok(f, `no JSON finding for ${JSON.stringify(a)}`);
      assert.equal(a.file, 'bad-tools.json');
      assert.equal(Number(a.line), lineOf(f.pointer), `${a.title} at ${f.pointer}`);
      assert.equal(a.level, f.level);
    }
    const lines = read('bad-tools.json').split('\n');
    const ghost = gh.find((a) => a.title === 'required-unknown');
    assert.match(lines[Number(ghost.line) - 1], /"ghost"/);
    assert.equal(lines[Number(ghost.line) - 1].indexOf('"ghost"') + 1, Number(ghost.col));
    // SARIF: rule ids are the codes; results carry the same lines.
    sarifFiles.push('bad.sarif');
    const run0 = readJson('bad.sarif').runs[0];
    const rules = run0.tool.driver.rules.map((x) => x.id);
    assert.deepEqual(run0.results.map((x) => rules[x.ruleIndex]), run0.results.map((x) => x.ruleId));
    assert.deepEqual(new Set(run0.results.map((x) => x.ruleId)), new Set(findings.map((f) => f.code)));
    for (const x of run0.results) {
      const loc = x.locations[0];
      assert.equal(loc.physicalLocation.artifactLocation.uri, 'bad-tools.json');
      assert.equal(loc.physicalLocation.region.startLine, lineOf(x.properties.pointer));
      assert.ok(x.partialFingerprints['mcpwarden/v1']);
    }
    // JUnit: one case per tool, failures where the contract failed.
    const j = (await junit(['bad.xml']))['bad.xml'];
    assert.deepEqual(j.map((c) => c.name), ['search', 'nodesc', 'ghost', 'a|b*c']);
    assert.deepEqual(j.map((c) => c.results), [[], ['Failure'], ['Failure'], []]);
    assert.match(j[1].messages[0], /description/);
    // Markdown: a row per tool, the pipe escaped so the row keeps 4 cells.
    const md = read('bad.md');
    assert.match(md, /^### mcpwarden check: FAILED$/m);
    const rows = mdRows(md);
    assert.deepEqual(rows.map((row) => row.length), [4, 4, 4, 4]);
    assert.deepEqual(rows.map((row) => row[1]), ['search', 'nodesc', 'ghost', 'a\\|b\\*c']);
    assert.deepEqual(rows.map((row) => row[2]), ['✅ pass', '❌ fail', '❌ fail', '✅ pass']);
    assert.ok(md.indexOf('#### Problems') < md.indexOf('#### Warnings'));
    // The same run's text is the historic text; --json is --format json.
    const text = await warden(['check', '--tools-file', 'bad-tools.json']);
    const both = await warden(['check', '--tools-file', 'bad-tools.json', '--format', 'text', '--format', 'json=alias.json']);
    assert.equal(both.stdout, text.stdout);
    const alias = await warden(['check', '--tools-file', 'bad-tools.json', '--json']);
    assert.equal(alias.stdout, read('alias.json'));
    assert.equal(alias.stdout, read('bad.json'));
  });

  test('a breaking diff against a baseline: removals point into the baseline', T, async () => {
    const base = { tools: [GOOD('search', { limit: { type: 'integer', description: 'at most' } }), GOOD('store')] };
    const next = { tools: [GOOD('search'), GOOD('added')] };
    const baseLine = save('base.json', base);
    const newLine = save('new.json', next);
    next.tools[0].inputSchema.properties.q.type = 'integer';
    const newLine2 = save('new2.json', next);
    const r = await warden(['diff', 'base.json', 'new2.json', ...ALL('diff')]);
    assert.equal(r.code, 1, show(r));
    const changes = readJson('diff.json').changes;
    const gh = github(read('diff.gh'));
    assert.deepEqual(gh.map((a) => a.title), changes.map((c) => c.code));
    const where = Object.fromEntries(gh.map((a) => [a.title, a]));
    assert.equal(where['tool-removed'].file, 'base.json');
    assert.equal(Number(where['tool-removed'].line), baseLine('/tools/1'));
    assert.equal(where['param-removed'].file, 'base.json');
    assert.equal(Number(where['param-removed'].line), baseLine('/tools/0/inputSchema/properties/limit'));
    assert.equal(where['param-type-changed'].file, 'new2.json');
    assert.equal(Number(where['param-type-changed'].line), newLine2('/tools/0/inputSchema/properties/q/type'));
    assert.equal(where['tool-added'].level, 'notice');
    const j = (await junit(['diff.xml']))['diff.xml'];
    assert.deepEqual(j.map((c) => [c.name, c.results]),
      [['search', ['Failure']], ['added', []], ['store', ['Failure']]]);
    sarifFiles.push('diff.sarif');
    const md = read('diff.md');
    assert.ok(md.indexOf('#### Breaking changes') < md.indexOf('#### Notices'), md);
    // check --tools-file with --baseline: the same places.
    const c = await warden(['check', '--tools-file', 'new.json', '--baseline', 'base.json', ...ALL('cb')]);
    assert.equal(c.code, 1, show(c));
    const cg = github(read('cb.gh'));
    const removed = cg.find((a) => a.title === 'tool-removed');
    assert.equal(removed.file, 'base.json');
    assert.equal(Number(removed.line), baseLine('/tools/1'));
    const added = cg.find((a) => a.title === 'tool-added');
    assert.equal(added.file, 'new.json');
    assert.equal(Number(added.line), newLine('/tools/1'));
    sarifFiles.push('cb.sarif');
  });

  test('a live check against a baseline: diff findings point at the baseline', T, async () => {
    // Saved from "paged" (search, fetch, store); "clean" lacks store.
    const s = await warden(['check', peer.url('paged'), '--save-baseline', 'live-base.json']);
    assert.equal(s.code, 0, show(s));
    const saved = read('live-base.json');
    const r = await warden(['check', peer.url('clean'), '--baseline', 'live-base.json', ...ALL('live')]);
    assert.equal(r.code, 1, show(r));
    const gh = github(read('live.gh'));
    assert.deepEqual(gh.map((a) => a.title), ['tool-removed']);
    assert.equal(gh[0].file, 'live-base.json');
    const lines = saved.split('\n');
    assert.match(lines[Number(gh[0].line) - 1], /^\s*\{/);
    assert.match(lines[Number(gh[0].line)], /"name": "store"/);
    const j = (await junit(['live.xml']))['live.xml'];
    assert.deepEqual(j.map((c) => [c.suite, c.name, c.results]),
      [[peer.url('clean'), 'search', []], [peer.url('clean'), 'fetch', []], [peer.url('clean'), 'store', ['Failure']]]);
    sarifFiles.push('live.sarif');
    // A live listing with problems and no baseline: no file to point at.
    const b = await warden(['check', peer.url('broken'), ...ALL('broken')]);
    assert.equal(b.code, 1, show(b));
    const bg = github(read('broken.gh'));
    assert.ok(bg.length >= 2);
    for (const a of bg) assert.equal(a.file, undefined, JSON.stringify(a));
    const res = readJson('broken.sarif').runs[0].results;
    const nodesc = res.find((x) => x.ruleId === 'description-missing');
    assert.equal(nodesc.locations[0].physicalLocation, undefined);
    assert.equal(nodesc.locations[0].logicalLocations[0].name, 'nodesc');
    sarifFiles.push('broken.sarif');
    const md = read('broken.md');
    assert.ok(mdRows(md).some((row) => row[1] === 'nodesc' && row[2] === '❌ fail'), md);
  });

  test('could not run: exit 2, the reason in every format', T, async () => {
    const r = await warden(['check', 'http://127.0.0.1:1/mcp', ...ALL('down')]);
    assert.equal(r.code, 2, show(r));
    const s = readJson('down.sarif');
    assert.equal(s.runs[0].invocations[0].executionSuccessful, false);
    sarifFiles.push('down.sarif');
    const j = (await junit(['down.xml']))['down.xml'];
    assert.deepEqual(j.map((c) => c.results), [['Error']]);
    assert.match(read('down.gh'), /^::error title=mcpwarden check::/);
  });

  test('a header value the server echoes never reaches a CI file', T, async () => {
    const key = 'k-formats-0987654321-secret';
    const echo = await startContractPeer({ echoHeaderError: 'x-api-key' });
    try {
      const r = await warden(['check', echo.url(), '--header', 'X-Api-Key: ${MW_FMT_KEY}', ...ALL('secret'),
        '--format', 'text'], { MW_FMT_KEY: key });
      assert.equal(r.code, 2, show(r));
      for (const f of ['secret.sarif', 'secret.xml', 'secret.gh', 'secret.md', 'secret.json']) {
        const t = read(f);
        assert.ok(!t.includes(key), `${f} holds the key:\n${t}`);
        assert.match(t, /rejected x-api-key ••••/, f);
      }
      assert.ok(!r.stdout.includes(key) && !r.stderr.includes(key));
      sarifFiles.push('secret.sarif');
    } finally {
      await echo.close();
    }
  });

  test('--format misuse: exit 2', T, async () => {
    save('u.json', { tools: [GOOD('search')] });
    for (const args of [['--format', 'xml'], ['--format', 'json', '--json'], ['--format', 'github', '--format', 'markdown'],
      ['--format', 'sarif=x', '--format', 'junit=x'], ['--format']]) {
      const r = await warden(['check', '--tools-file', 'u.json', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${show(r)}`);
      const d = await warden(['diff', 'u.json', 'u.json', ...args]);
      assert.equal(d.code, 2, `diff ${args.join(' ')}: ${show(d)}`);
    }
  });

  test('SARIF Multitool: every SARIF file valid, and a broken one is caught', { timeout: 180000 }, async () => {
    assert.ok(sarifFiles.length >= 6, sarifFiles.join(' '));
    // The control: the same document with an out-of-range ruleIndex and line.
    const broken = readJson('bad.sarif');
    broken.runs[0].results[0].ruleIndex = 99;
    broken.runs[0].results[0].locations[0].physicalLocation.region.startLine = 0;
    writeFileSync(at('control.sarif'), JSON.stringify(broken));
    const files = [...sarifFiles, 'control.sarif'].map(at);
    const v = await run('npx', ['sarif-multitool', 'validate', ...files]);
    const out = v.stdout + v.stderr;
    assert.match(out, /Analysis completed successfully/, out);
    const errors = out.split('\n').filter((l) => /: error [A-Z]+\d+:/.test(l));
    assert.ok(errors.some((l) => l.startsWith(at('control.sarif'))), `the control was not caught:\n${out}`);
    const ours = errors.filter((l) => !l.startsWith(at('control.sarif')));
    assert.deepEqual(ours, [], out);
    const warnings = out.split('\n').filter((l) => /: warning [A-Z]+\d+:/.test(l) && !l.startsWith(at('control.sarif')));
    assert.deepEqual(warnings, [], out);
  });
});

// The "targets (issue 20)" block of `make bench` (tests/bench/targets.sh)
// computes its verdicts right: fed fixture figures (the TSV the parts write
// through lib.sh bench_figure), no benchmark run, it prints each target's
// ratio with met / missed by X / not measured. Fast: one bash + awk per case.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './lib/procs.mjs';

const SCRIPT = path.join(REPO_ROOT, 'tests/bench/targets.sh');

// Rows of [part, scenario, target, metric, value] into a TSV; the block's output.
function block(rows) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-targets-'));
  const file = path.join(dir, 'figures.tsv');
  fs.writeFileSync(file, rows.map((r) => r.join('\t') + '\n').join(''));
  const r = spawnSync('bash', [SCRIPT, file], { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

// The one line of the block whose label starts with PREFIX.
function line(out, prefix) {
  const hits = out.split('\n').filter((l) => l.trim().startsWith(prefix));
  assert.equal(hits.length, 1, `one line for "${prefix}" in:\n${out}`);
  return hits[0].replace(/\s+/g, ' ').trim();
}

const row = (s, t, cpu, rps, p99, hwm) => [
  ['table', s, t, 'cpu_us', cpu], ['table', s, t, 'rps', rps],
  ['table', s, t, 'p99_us', p99], ['table', s, t, 'hwm_kib', hwm],
];

// A whole run: nginx 10 us per call, 40,000 req/s, p99 3,000 us.
const FULL = [
  ['table', '-', '-', 'conns', '50'],
  ...row('json', 'nginx', '10.0', '40000', '3000', '24000'),
  ...row('json', 'floor', '5.0', '80000', '1000', '6000'),
  ...row('json', 'mw-noval', '14.7', '44000', '2400', '18000'), // CPU 1.47x: missed by 0.47x
  ...row('json', 'mw-full', '10.9', '40000', '3000', '18000'), // CPU 1.09x: within 1.10x
  ...row('sse', 'nginx', '20.0', '30000', '4000', '24000'),
  ...row('sse', 'floor', '6.0', '60000', '1000', '6000'),
  ...row('sse', 'mw-noval', '20.0', '29100', '4000', '18000'), // CPU 1.00x met, req/s 0.97x
  ...row('sse', 'mw-full', '23.0', '30000', '4000', '18000'), // CPU 1.15x: missed by 0.05x
  ['table', 'sse', 'mw-noval', 'errors', 'round 1: non-2xx:3; '],
  ...row('list', 'nginx', '450', '2300', '39000', '24000'),
  ...row('list', 'floor', '200', '5000', '20000', '6000'),
  ...row('list', 'mw-full', '210', '2500', '30000', '50000'), // RSS 2.08x: missed
  ...row('listvary', 'nginx', '450', '2300', '39000', '24000'),
  ...row('listvary', 'mw-full', '900', '1000', '90000', '48000'), // CPU 2.00x, RSS 2.00x: met
  ['streams', 'idle', 'mcpwarden', 'streams', '9980'],
  ['streams', 'idle', 'mcpwarden', 'kib_per_stream', '16.78'],
  ['streams', 'idle', 'mcpwarden', 'hop_p99_ms', '1.190'],
  ['streams', 'idle', 'nginx', 'streams', '9980'],
  ['streams', 'idle', 'nginx', 'kib_per_stream', '13.80'],
  ['streams', 'idle', 'nginx', 'hop_p99_ms', '0.310'],
];

describe('bench targets block (tests/bench/targets.sh)', () => {
  test('met and missed, with the distance, from one run\'s figures', () => {
    const out = block(FULL);
    assert.match(out, /^== targets \(issue 20\)/m);
    assert.equal(line(out, 'tools/call JSON, full inspection (mw-noval): CPU/req'),
      'tools/call JSON, full inspection (mw-noval): CPU/req 1.47x <= 1.00x missed by 0.47x');
    assert.equal(line(out, 'tools/call JSON, full inspection (mw-noval): req/s'),
      'tools/call JSON, full inspection (mw-noval): req/s 1.10x >= 1.00x met');
    assert.equal(line(out, 'tools/call JSON, full inspection (mw-noval): p99'),
      'tools/call JSON, full inspection (mw-noval): p99 0.80x <= 1.00x met');
    assert.equal(line(out, 'tools/call SSE, full inspection (mw-noval): CPU/req'),
      'tools/call SSE, full inspection (mw-noval): CPU/req 1.00x <= 1.00x met (errors in the table rows)');
    assert.equal(line(out, 'tools/call SSE, full inspection (mw-noval): req/s'),
      'tools/call SSE, full inspection (mw-noval): req/s 0.97x >= 1.00x missed by 0.03x (errors in the table rows)');
    assert.equal(line(out, 'tools/call JSON, validation on (mw-full): CPU/req'),
      'tools/call JSON, validation on (mw-full): CPU/req 1.09x <= 1.10x met');
    assert.equal(line(out, 'tools/call SSE, validation on (mw-full): CPU/req'),
      'tools/call SSE, validation on (mw-full): CPU/req 1.15x <= 1.10x missed by 0.05x');
    assert.equal(line(out, 'tools/list 1,000 tools, unchanged (mw-full): CPU/list'),
      'tools/list 1,000 tools, unchanged (mw-full): CPU/list 0.47x <= 1.00x met');
    assert.equal(line(out, 'tools/list 1,000 tools, changing (mw-full): CPU/list'),
      'tools/list 1,000 tools, changing (mw-full): CPU/list 2.00x <= 2.00x met');
    assert.equal(line(out, 'tools/list unchanged, 50 listing clients (mw-full): peak RSS'),
      'tools/list unchanged, 50 listing clients (mw-full): peak RSS 2.08x <= 2.00x missed by 0.08x');
    assert.equal(line(out, 'tools/list changing, 50 listing clients (mw-full): peak RSS'),
      'tools/list changing, 50 listing clients (mw-full): peak RSS 2.00x <= 2.00x met');
    assert.equal(line(out, '9,980 idle SSE streams (mw-full): KiB per stream'),
      '9,980 idle SSE streams (mw-full): KiB per stream 16.78 / 13.80 KiB <= nginx missed by 2.98 KiB (1.22x)');
    assert.equal(line(out, 'a pushed message'),
      'a pushed message, upstream write -> client (mw-full): hop p99 1.190 ms <= 0.16 ms missed by 1.030 ms');
    // listvary ran without a floor row: the floor target is missed there.
    assert.equal(line(out, 'a floor row'),
      'a floor row in the table (build/bench/relay) 3 of 4 scenarios present missed: no floor row in listvary');
    assert.equal(line(out, '8 met'), '8 met, 7 missed, 0 not measured');
  });

  test('every target met', () => {
    const good = FULL.filter((r) => !(r[3] === 'errors')).map((r) => [...r]);
    const set = (s, t, m, v) => { good.find((r) => r[1] === s && r[2] === t && r[3] === m)[4] = v; };
    set('json', 'mw-noval', 'cpu_us', '9.0');
    set('sse', 'mw-noval', 'rps', '31000');
    set('sse', 'mw-full', 'cpu_us', '21.0');
    set('list', 'mw-full', 'hwm_kib', '40000');
    set('idle', 'mcpwarden', 'kib_per_stream', '13.80'); // equal to nginx's: met
    set('idle', 'mcpwarden', 'hop_p99_ms', '0.160');
    good.push(...row('listvary', 'floor', '200', '5000', '20000', '6000'));
    const out = block(good);
    assert.equal(line(out, '15 met'), '15 met, 0 missed, 0 not measured');
    assert.doesNotMatch(out, /missed by|missed:|\s{2}not measured$/m);
  });

  test('a part that did not run prints not measured', () => {
    const tableOnly = FULL.filter((r) => r[0] === 'table' && r[1] !== 'sse');
    const out = block(tableOnly);
    assert.equal(line(out, 'tools/call SSE, full inspection (mw-noval): CPU/req'),
      'tools/call SSE, full inspection (mw-noval): CPU/req - <= 1.00x not measured');
    assert.equal(line(out, '10,000 idle SSE streams (mw-full): KiB per stream'),
      '10,000 idle SSE streams (mw-full): KiB per stream - <= nginx not measured');
    assert.equal(line(out, 'a pushed message'),
      'a pushed message, upstream write -> client (mw-full): hop p99 - <= 0.16 ms not measured');
    // nginx measured through the streams part but not mcpwarden: still not measured.
    const nginxOnly = block([['streams', 'idle', 'nginx', 'kib_per_stream', '13.80']]);
    assert.match(line(nginxOnly, '10,000 idle SSE streams'), /not measured$/);
    const empty = block([]);
    assert.equal(line(empty, 'a floor row'), 'a floor row in the table (build/bench/relay) - present not measured');
    assert.equal(line(empty, '0 met'), '0 met, 0 missed, 15 not measured');
  });
});

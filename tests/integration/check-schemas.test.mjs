// The contract checker's schema rules (issue 19, item 6) through the real
// binary: `mcpwarden check` (a saved listing and a live server),
// `mcpwarden diff`, and the proxy's live check in filter mode. Every
// subschema of inputSchema and outputSchema is compiled in its dialect
// (draft-07 up to 2025-06-18, 2020-12 from 2025-11-25, or its $schema):
// schema-invalid / schema-unsupported carry the JSON Pointer of the first
// bad keyword; an outputSchema's required name missing from its
// properties is output-required-unknown.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import { requireWarden, spawnTracked, startWarden, stop, stopAll, WARDEN_BIN } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout } from './lib/util.mjs';
import { startContractPeer, GOOD } from './peers/contract-peer.mjs';

const T = { timeout: 30000 };
const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-check-schemas-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));
let nfile = 0;
function file(obj) {
  const p = path.join(tmp, `f${nfile++}.json`);
  writeFileSync(p, JSON.stringify(obj));
  return p;
}

/** Runs ./mcpwarden with args: {code, stdout, stderr, json()}. */
async function warden(args, { timeout = 15000 } = {}) {
  requireWarden();
  const h = spawnTracked('mcpwarden-check-schemas', WARDEN_BIN, args);
  let status;
  try {
    status = await withTimeout(h.exited, timeout, `mcpwarden ${args.join(' ')}`);
  } finally {
    await stop(h, { signal: 'SIGKILL' });
  }
  return {
    code: status.code,
    stdout: h.stdout,
    stderr: h.stderr,
    json() {
      try { return JSON.parse(h.stdout); } catch { throw new Error(`stdout is not JSON:\n${h.stdout}\nstderr:\n${h.stderr}`); }
    },
  };
}
const check = (args) => warden(['check', ...args]);
const diff = (args) => warden(['diff', ...args]);
const show = (r) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
const codes = (t) => t.problems.map((p) => [p.code, p.pointer]);

const desc = 'A perfectly fine tool used by the schema tests';
const tool = (name, inputSchema, outputSchema) => ({
  name, description: desc, inputSchema, ...(outputSchema ? { outputSchema } : {}),
});
// A misspelt type two levels down.
const DEEP = tool('deep', {
  type: 'object',
  properties: { filter: { type: 'object', description: 'd', properties: { field: { type: 'strng' } } } },
});
// A $ref to nowhere and a non-array enum further down.
const REF = tool('ref', {
  type: 'object',
  $defs: { A: { type: 'string' } },
  properties: { list: { type: 'array', description: 'd', items: { $ref: '#/$defs/B' } } },
});
const ENUM = tool('enum', {
  type: 'object',
  properties: { rows: { type: 'array', description: 'd', items: { properties: { level: { enum: 'low' } } } } },
});
// The seed's rule for outputSchema.
const OUTREQ = tool('outreq', { type: 'object' },
  { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum', 'total'] });
// An array "items": draft-07's tuple, no longer valid in 2020-12.
const TUPLE = tool('tuple', {
  type: 'object',
  properties: { pair: { type: 'array', description: 'd', items: [{ type: 'string' }, { type: 'number' }] } },
});
const UNSUPPORTED = tool('dialect', { $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'object' });

after(async () => { await stopAll(); });

describe('check: schema validity with pointers', () => {
  test('--tools-file: each finding with the pointer of its keyword, exit 1', T, async () => {
    const r = await check(['--tools-file', file({ tools: [GOOD('search'), DEEP, REF, ENUM, OUTREQ] }),
      '--protocol', '2025-11-25', '--json']);
    assert.equal(r.code, 1, show(r));
    const j = r.json();
    const by = Object.fromEntries(j.tools.map((t) => [t.name, t]));
    assert.deepEqual(codes(by.search), []);
    assert.deepEqual(codes(by.deep), [['schema-invalid', '/tools/1/inputSchema/properties/filter/properties/field/type']]);
    assert.match(by.deep.problems[0].message, /strng/);
    assert.equal(by.deep.problems[0].rule, 'spec');
    assert.deepEqual(codes(by.ref), [['schema-invalid', '/tools/2/inputSchema/properties/list/items/$ref']]);
    assert.deepEqual(codes(by.enum), [['schema-invalid', '/tools/3/inputSchema/properties/rows/items/properties/level/enum']]);
    assert.deepEqual(codes(by.outreq), [['output-required-unknown', '/tools/4/outputSchema/required/1']]);
    assert.equal(by.outreq.problems[0].rule, 'usability');
    assert.equal(j.score, 0.2);
    assert.equal(j.passed, false);
  });

  test('the text report names the code and pointer', T, async () => {
    const r = await check(['--tools-file', file({ tools: [DEEP] })]);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stdout, /problem schema-invalid \[spec\] at \/tools\/0\/inputSchema\/properties\/filter\/properties\/field\/type: /);
    assert.match(r.stdout, /^FAILED: 1 problem, 0 breaking changes$/m);
  });

  test('the dialect follows --protocol: a tuple is draft-07, not 2020-12', T, async () => {
    const f = file({ tools: [TUPLE] });
    const old = await check(['--tools-file', f, '--protocol', '2025-06-18', '--json']);
    assert.equal(old.code, 0, show(old));
    const cur = await check(['--tools-file', f, '--protocol', '2025-11-25', '--json']);
    assert.equal(cur.code, 1, show(cur));
    assert.deepEqual(codes(cur.json().tools[0]), [['schema-invalid', '/tools/0/inputSchema/properties/pair/items']]);
    assert.match(cur.json().tools[0].problems[0].message, /2020-12/);
    // No protocol: valid in either dialect is valid.
    const none = await check(['--tools-file', f, '--json']);
    assert.equal(none.code, 0, show(none));
  });

  test('an unsupported $schema: schema-unsupported (usability), --spec-only passes', T, async () => {
    const f = file({ tools: [UNSUPPORTED] });
    const r = await check(['--tools-file', f, '--protocol', '2025-11-25', '--json']);
    assert.equal(r.code, 1, show(r));
    const p = r.json().tools[0].problems;
    assert.deepEqual(p.map((x) => [x.code, x.pointer, x.rule]), [['schema-unsupported', '/tools/0/inputSchema/$schema', 'usability']]);
    const lax = await check(['--tools-file', f, '--protocol', '2025-11-25', '--spec-only', '--json']);
    assert.equal(lax.code, 0, show(lax));
    assert.equal(lax.json().tools[0].warnings[0].code, 'schema-unsupported');
  });

  test('a remote $ref is no finding, and the rest of the schema is still checked', T, async () => {
    const remote = tool('remote', {
      type: 'object',
      properties: {
        a: { $ref: 'https://example.com/a.json', description: 'd' },
        b: { type: 'integer', description: 'd', maximum: 'ten' },
      },
    });
    const r = await check(['--tools-file', file({ tools: [remote] }), '--protocol', '2025-11-25', '--json']);
    assert.equal(r.code, 1, show(r));
    assert.deepEqual(codes(r.json().tools[0]), [['schema-invalid', '/tools/0/inputSchema/properties/b/maximum']]);
  });
});

describe('check against a live server: the same findings', () => {
  let peer;
  before(async () => {
    peer = await startContractPeer({ listings: { schemas: { pages: [[GOOD('search'), DEEP, OUTREQ]] } } });
  });
  after(async () => { await peer?.close(); });

  for (const format of ['json', 'sse']) {
    test(`Streamable HTTP (${format} replies): schema-invalid and output-required-unknown, exit 1`, T, async () => {
      const r = await check([peer.url('schemas', format), '--json']);
      assert.equal(r.code, 1, show(r));
      const j = r.json();
      assert.equal(j.source.protocol, '2025-11-25');
      assert.deepEqual(j.tools.map(codes), [[],
        [['schema-invalid', '/tools/1/inputSchema/properties/filter/properties/field/type']],
        [['output-required-unknown', '/tools/2/outputSchema/required/1']]]);
    });
  }
});

describe('diff: a schema that broke is a breaking change', () => {
  const oldFile = file({ tools: [GOOD('deep'), tool('outreq', { type: 'object' }, { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] })] });

  test('newly invalid schemas: exit 1, one change each with the pointer', T, async () => {
    const newFile = file({ tools: [DEEP, OUTREQ] });
    const r = await diff([oldFile, newFile, '--json']);
    assert.equal(r.code, 1, show(r));
    const j = r.json();
    const schema = j.changes.filter((c) => c.code === 'schema-invalid' || c.code === 'output-required-unknown');
    assert.deepEqual(schema.map((c) => [c.code, c.kind, c.tool, c.pointer]), [
      ['schema-invalid', 'breaking', 'deep', '/tools/0/inputSchema/properties/filter/properties/field/type'],
      ['output-required-unknown', 'breaking', 'outreq', '/tools/1/outputSchema/required/1'],
    ]);
    assert.equal(j.breaking, j.changes.filter((c) => c.kind === 'breaking').length);
    const t = await diff([oldFile, newFile]);
    assert.equal(t.code, 1);
    assert.match(t.stdout, /breaking schema-invalid tool "deep" at \/tools\/0\/inputSchema\/properties\/filter\/properties\/field\/type: /);
    assert.match(t.stdout, /^FAILED: breaking changes$/m);
  });

  test('a schema already broken in OLD is no change', T, async () => {
    const f = file({ tools: [DEEP] });
    const r = await diff([f, file({ tools: [DEEP] }), '--json']);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(r.json(), { changes: [], breaking: 0 });
  });

  test('a schema fixed in NEW is no breaking change', T, async () => {
    const r = await diff([file({ tools: [ENUM] }), file({ tools: [tool('enum', { type: 'object' })] }), '--json']);
    assert.equal(r.json().changes.filter((c) => c.code.startsWith('schema-')).length, 0, show(r));
  });
});

describe('the proxy: the live check sees the same', () => {
  let peer;
  let w;
  before(async () => {
    peer = await startContractPeer({ listings: { schemas: { pages: [[GOOD('search'), DEEP, REF]] } } });
    const wp = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [{ name: 'schemas', path: '/schemas/mcp', url: peer.url('schemas', 'sse'), contract: { mode: 'filter' } }],
    });
    w = await startWarden(wp, ['-c', conf, '--log-level', 'info']);
  }, T);
  after(async () => { await peer?.close(); });

  test('filter: the tools with an invalid schema never reach the SDK client; the log names them', T, async () => {
    const s = await connectClient(`${w.base}/schemas/mcp`);
    let page;
    try {
      page = await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
    } finally { await s.close(); }
    assert.deepEqual(page.tools.map((t) => t.name), ['search']);
    const line = await w.proc.waitForStderr(/contract: upstream schemas: tools\/list FAILED[^\n]*/);
    assert.match(line[0], /schema-invalid "deep"/);
    assert.match(line[0], /schema-invalid "ref"/);
  });
});

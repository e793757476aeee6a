// checks/jschema against ajv 8.20.0 (issue 19, item 2): the same schema and
// instance to both, and any disagreement on valid / invalid fails.
//
// Pairs: a few thousand generated from a fixed seed (deterministic: the
// same pairs on every run) in both dialects (ajv for draft-07, ajv/dist/2020
// for 2020-12; strict: false, formats not validated, as jschema without
// JSCHEMA_FORMAT_ASSERT), plus every inputSchema and outputSchema that
// @modelcontextprotocol/server-everything lists, each with instances
// sampled from the schema and mutated. The C side is
// build/tests/checks/jschema_cli (tests/unit/checks/jschema_cli.c): JSON
// lines in, one verdict per line out.
//
// The generator keeps to what both sides define the same way: ASCII
// patterns, multipleOf by integers or 0.5/0.25 (exact in binary: ajv's
// float division differs from the spec's "integer quotient" for decimals),
// a draft-07 $ref alone in its object (draft-07 ignores its siblings;
// the suite covers that), and never "contains" beside a draft-07 items
// array or prefixItems in the same object: ajv 8.20.0 then accepts an
// empty array ({"contains":true,"prefixItems":[{}]} on [] is valid for ajv;
// the spec and the suite's contains.json say no item matches, so invalid).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import { REPO_ROOT, startEverything, stopAll } from './lib/procs.mjs';
import { connectClient } from './lib/mcp.mjs';

const require = createRequire(import.meta.url);
const Ajv7 = require('ajv').default;
const Ajv2020 = require('ajv/dist/2020').default;

function cliPath() {
  if (process.env.JSCHEMA_CLI) return path.resolve(process.env.JSCHEMA_CLI);
  if (process.env.MCPWARDEN_BIN) {
    const p = path.join(path.dirname(path.resolve(process.env.MCPWARDEN_BIN)), 'tests/checks/jschema_cli');
    if (existsSync(p)) return p;
  }
  return path.join(REPO_ROOT, 'build/tests/checks/jschema_cli');
}

// ---- deterministic generator ---------------------------------------------------

function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  constructor(seed, dialect) {
    this.r = mulberry32(seed);
    this.d = dialect;
  }
  int(lo, hi) { return lo + Math.floor(this.r() * (hi - lo + 1)); }
  pick(a) { return a[Math.floor(this.r() * a.length)]; }
  chance(p) { return this.r() < p; }
  some(a, max) {
    const out = [];
    for (const x of a) if (out.length < max && this.chance(0.4)) out.push(x);
    return out;
  }

  static KEYS = ['a', 'b', 'c', 'xa', 'xb', 'd-e'];
  static STRINGS = ['', 'a', 'ab', 'abc', 'xa', 'ba', 'aaa', 'é', '😀😀', 'A1', ' '];
  static PATTERNS = ['^a', 'b$', '^[a-c]+$', 'x', '^$', '^.{2}$', '[0-9]', 'a|b'];
  static TYPES = ['null', 'boolean', 'object', 'array', 'number', 'string', 'integer'];

  value(depth = 0) {
    const k = this.int(0, depth > 2 ? 4 : 6);
    switch (k) {
      case 0: return null;
      case 1: return this.chance(0.5);
      case 2: return this.pick([-3, 0, 1, 2, 3, 4, 5, 6, 10, 12, 100]);
      case 3: return this.pick([1.5, -0.5, 2.25, 0.5, 3.75]);
      case 4: return this.pick(Gen.STRINGS);
      case 5: {
        const a = [];
        for (let i = this.int(0, 4); i > 0; i--) a.push(this.value(depth + 1));
        return a;
      }
      default: {
        const o = {};
        for (let i = this.int(0, 4); i > 0; i--) o[this.pick(Gen.KEYS)] = this.value(depth + 1);
        return o;
      }
    }
  }

  schema(depth, defs) {
    if (this.chance(0.06)) return this.chance(0.7);
    if (defs.length && this.chance(0.1)) {
      return { $ref: `${this.d === 'draft7' ? '#/definitions/' : '#/$defs/'}${this.pick(defs)}` };
    }
    const s = {};
    const n = this.int(1, depth > 2 ? 2 : 3);
    for (let i = 0; i < n; i++) this.feature(s, depth, defs);
    return s;
  }

  feature(s, depth, defs) {
    const d7 = this.d === 'draft7';
    const sub = () => this.schema(depth + 1, defs);
    const list = () => { const a = []; for (let i = this.int(1, 3); i > 0; i--) a.push(sub()); return a; };
    const leaf = depth > 3;
    switch (this.int(0, leaf ? 5 : 17)) {
      case 0: {
        const ts = this.some(Gen.TYPES, 3);
        s.type = this.chance(0.7) || !ts.length ? this.pick(Gen.TYPES) : ts;
        break;
      }
      case 1: {
        // Unique values: ajv checks the schema against its meta-schema.
        const seen = new Set();
        s.enum = [this.value(2), this.value(2), this.value(2)].slice(0, this.int(1, 3))
          .filter((v) => !seen.has(JSON.stringify(v)) && seen.add(JSON.stringify(v)));
        break;
      }
      case 2: s.const = this.value(2); break;
      case 3:
        s[this.pick(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'])] = this.pick([0, 1, 2.5, 3, 5]);
        if (this.chance(0.4)) s.multipleOf = this.pick([1, 2, 3, 0.5, 0.25]);
        break;
      case 4:
        if (this.chance(0.5)) s.minLength = this.int(0, 3); else s.maxLength = this.int(0, 3);
        if (this.chance(0.5)) s.pattern = this.pick(Gen.PATTERNS);
        break;
      case 5:
        if (this.chance(0.5)) s.minItems = this.int(0, 3); else s.maxItems = this.int(0, 3);
        if (this.chance(0.4)) s.uniqueItems = this.chance(0.8);
        break;
      case 6: {
        s.properties = {};
        for (const k of this.some(Gen.KEYS, 3)) s.properties[k] = sub();
        if (this.chance(0.5)) s.required = this.some(Gen.KEYS, 2);
        break;
      }
      case 7:
        s.additionalProperties = this.chance(0.5) ? this.chance(0.5) : sub();
        if (this.chance(0.5)) s.patternProperties = { [this.pick(['^x', 'b', '-'])]: sub() };
        break;
      case 8:
        s.propertyNames = this.chance(0.5) ? { maxLength: this.int(0, 2) } : { pattern: this.pick(Gen.PATTERNS) };
        if (this.chance(0.5)) s[this.pick(['minProperties', 'maxProperties'])] = this.int(0, 3);
        break;
      case 9:
        if (d7) s.dependencies = { [this.pick(Gen.KEYS)]: this.chance(0.5) ? this.some(Gen.KEYS, 2) : sub() };
        else if (this.chance(0.5)) s.dependentRequired = { [this.pick(Gen.KEYS)]: this.some(Gen.KEYS, 2) };
        else s.dependentSchemas = { [this.pick(Gen.KEYS)]: sub() };
        break;
      case 10:
        if (s.contains) break; // the ajv bug above
        if (d7) {
          if (this.chance(0.5)) s.items = sub();
          else { s.items = list(); if (this.chance(0.6)) s.additionalItems = this.chance(0.5) ? this.chance(0.5) : sub(); }
        } else {
          if (this.chance(0.6)) s.prefixItems = list();
          if (this.chance(0.6)) s.items = this.chance(0.3) ? this.chance(0.5) : sub();
        }
        break;
      case 11:
        if (s.prefixItems || Array.isArray(s.items)) break; // the ajv bug above
        s.contains = sub();
        if (!d7 && this.chance(0.5)) s[this.pick(['minContains', 'maxContains'])] = this.int(0, 2);
        break;
      case 12: s.allOf = list(); break;
      case 13: s.anyOf = list(); break;
      case 14: s.oneOf = list(); break;
      case 15: s.not = sub(); break;
      case 16:
        s.if = sub();
        if (this.chance(0.7)) s.then = sub();
        if (this.chance(0.7)) s.else = sub();
        break;
      default:
        if (d7) { s.not = sub(); break; }
        if (this.chance(0.5)) s.unevaluatedProperties = this.chance(0.6) ? false : sub();
        else s.unevaluatedItems = this.chance(0.6) ? false : sub();
        if (this.chance(0.6)) s.allOf = list();
        break;
    }
  }

  document() {
    const defs = [];
    const doc = {};
    const defsKw = this.d === 'draft7' ? 'definitions' : '$defs';
    if (this.chance(0.3)) {
      doc[defsKw] = {};
      for (const name of this.some(['p', 'q'], 2)) {
        defs.push(name);
        doc[defsKw][name] = this.schema(2, defs.slice(0, -1));
      }
    }
    const body = this.schema(0, defs);
    if (typeof body === 'boolean') return defs.length ? { ...doc, allOf: [body] } : body;
    if (this.d === 'draft7' && body.$ref) return { ...doc, allOf: [body] };
    return { ...doc, ...body };
  }
}

// An instance shaped by schema (often valid), mutated at times.
function sample(g, s, depth = 0) {
  if (typeof s !== 'object' || s === null || depth > 6) return g.value(3);
  if (s.const !== undefined && g.chance(0.7)) return s.const;
  if (Array.isArray(s.enum) && s.enum.length && g.chance(0.8)) return g.pick(s.enum);
  const t = Array.isArray(s.type) ? g.pick(s.type.length ? s.type : ['null']) : s.type;
  const props = s.properties || {};
  if (t === 'object' || (!t && (s.properties || s.required))) {
    const o = {};
    for (const k of s.required || []) o[k] = sample(g, props[k], depth + 1);
    for (const k of Object.keys(props)) if (g.chance(0.5)) o[k] = sample(g, props[k], depth + 1);
    if (g.chance(0.2)) o[g.pick(Gen.KEYS)] = g.value(3);
    return o;
  }
  if (t === 'array' || (!t && (s.items || s.prefixItems))) {
    const a = [];
    for (let i = g.int(0, 3); i > 0; i--) a.push(sample(g, typeof s.items === 'object' ? s.items : undefined, depth + 1));
    return a;
  }
  if (t === 'string') return g.chance(0.8) ? g.pick(Gen.STRINGS) : g.value(3);
  if (t === 'integer' || t === 'number') return g.chance(0.8) ? g.int(-2, 20) : g.value(3);
  if (t === 'boolean') return g.chance(0.5);
  if (t === 'null') return null;
  return g.value(2);
}

function ajvVerdict(dialect, schema, instance, cache) {
  const key = dialect + JSON.stringify(schema);
  let v = cache.get(key);
  if (v === undefined) {
    const ajv = dialect === 'draft7'
      ? new Ajv7({ strict: false, validateFormats: false, allErrors: false })
      : new Ajv2020({ strict: false, validateFormats: false, allErrors: false });
    try { v = ajv.compile(schema); } catch (e) { v = { error: String(e.message || e) }; }
    cache.set(key, v);
  }
  if (typeof v !== 'function') return `error ${v.error}`;
  try {
    return v(instance) ? 'true' : 'false';
  } catch (e) {
    return `crash ${e.message}`;
  }
}

function runCli(pairs) {
  const input = pairs.map((p) => JSON.stringify(p)).join('\n') + '\n';
  const r = spawnSync(cliPath(), [], { input, maxBuffer: 64 << 20, encoding: 'utf8' });
  assert.equal(r.status, 0, `jschema_cli failed: ${r.stderr}`);
  const out = r.stdout.split('\n');
  out.pop();
  assert.equal(out.length, pairs.length);
  return out;
}

// The disagreement made small: drop keywords and array entries, replace
// subschemas by true, as long as the two still disagree (and ajv compiles).
function shrink(p) {
  const disagree = (schema) => {
    const theirs = ajvVerdict(p.dialect, schema, p.instance, new Map());
    if (!theirs.match(/^(true|false)$/)) return false;
    return runCli([{ ...p, schema }])[0] !== theirs;
  };
  let best = p.schema;
  const tries = (v) => {
    const out = [];
    if (Array.isArray(v)) {
      v.forEach((_, i) => out.push(v.filter((_, k) => k !== i)));
      v.forEach((x, i) => tries(x).forEach((t) => out.push(v.map((y, k) => (k === i ? t : y)))));
    } else if (v && typeof v === 'object') {
      for (const k of Object.keys(v)) {
        const { [k]: _, ...rest } = v;
        out.push(rest);
        if (v[k] && typeof v[k] === 'object' && !['enum', 'const'].includes(k)) out.push({ ...v, [k]: true });
      }
      for (const k of Object.keys(v)) {
        if (['enum', 'const', 'required'].includes(k)) continue;
        tries(v[k]).forEach((t) => out.push({ ...v, [k]: t }));
      }
    }
    return out;
  };
  for (let round = 0; round < 200; round++) {
    const next = tries(best).find((t) => disagree(t));
    if (next === undefined) break;
    best = next;
  }
  return best;
}

function compare(pairs, label) {
  const cache = new Map();
  const ours = runCli(pairs);
  const diffs = [];
  const crashes = [];
  let valid = 0;
  pairs.forEach((p, i) => {
    const theirs = ajvVerdict(p.dialect, p.schema, p.instance, cache);
    const mine = ours[i];
    if (theirs === 'true') valid++;
    if (theirs.startsWith('crash')) { crashes.push({ ...p, ajv: theirs }); return; }
    const agree = mine === theirs || (mine.startsWith('error') && theirs.startsWith('error'));
    if (!agree) diffs.push({ ...p, jschema: mine, ajv: theirs });
  });
  for (const d of diffs.slice(0, 3)) {
    console.log(`${label} disagreement: ${JSON.stringify(d)}`);
    const small = shrink(d);
    console.log(`${label} shrunk: ${JSON.stringify({ ...d, schema: small, jschema: runCli([{ ...d, schema: small }])[0] })}`);
  }
  for (const d of crashes.slice(0, 3)) console.log(`${label} ajv threw: ${JSON.stringify(d)}`);
  console.log(`${label}: ${pairs.length} pairs, ${valid} valid per ajv, ${diffs.length} disagreements, `
    + `${crashes.length} pairs where ajv threw (left out)`);
  return diffs;
}

describe('jschema vs ajv (differential)', () => {
  before(() => {
    assert.ok(existsSync(cliPath()), `${cliPath()} missing: make build/tests/checks/jschema_cli`);
  });
  after(stopAll);

  for (const dialect of ['draft7', '2020-12']) {
    test(`generated pairs, ${dialect}`, () => {
      const g = new Gen(dialect === 'draft7' ? 19007 : 192020, dialect);
      const pairs = [];
      for (let i = 0; i < 700; i++) {
        const schema = g.document();
        for (let k = 0; k < 3; k++) pairs.push({ schema, instance: sample(g, schema), dialect });
        pairs.push({ schema, instance: g.value(), dialect });
      }
      const diffs = compare(pairs, `generated ${dialect}`);
      assert.equal(diffs.length, 0, `${diffs.length} disagreements, first: ${JSON.stringify(diffs[0])}`);
    });
  }

  test('every tool schema server-everything lists', async () => {
    const se = await startEverything(await freePort());
    const c = await connectClient(se.url);
    const { tools } = await c.client.listTools();
    await c.close();
    assert.ok(tools.length > 5, 'server-everything lists tools');
    const g = new Gen(1919, '2020-12');
    const pairs = [];
    let schemas = 0;
    for (const t of tools) {
      for (const schema of [t.inputSchema, t.outputSchema]) {
        if (!schema) continue;
        schemas++;
        const declared = String(schema.$schema || '');
        const dialects = declared.includes('draft-07') ? ['draft7']
          : declared.includes('2020-12') ? ['2020-12'] : ['draft7', '2020-12'];
        for (const dialect of dialects) {
          for (let k = 0; k < 20; k++) pairs.push({ schema, instance: sample(g, schema), dialect });
          pairs.push({ schema, instance: {}, dialect });
          pairs.push({ schema, instance: g.value(), dialect });
        }
      }
    }
    const diffs = compare(pairs, `server-everything (${tools.length} tools, ${schemas} schemas)`);
    assert.equal(diffs.length, 0, `${diffs.length} disagreements, first: ${JSON.stringify(diffs[0])}`);
  });
});

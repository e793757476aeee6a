#!/usr/bin/env node
// make layers: every `#include "…"` of the C tree must go down the table
// below (or stay inside its own layer), and no module may reach itself
// through includes (a circle). README.md's "Layout" section is the same
// table in words.
//
//   node tests/layers/layers.mjs              check the tree (exit 1 on a finding)
//   node tests/layers/layers.mjs --self-test  plant violations in a made-up
//                                             tree and check each is found
//
// A file's layer is its folder. A module is a .c and its .h (same path
// without the extension): an include from either is the module's.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// Folder prefix -> layer, most specific first.
const FOLDERS = [
  ['proxy/base/', 'base'],
  ['proxy/net/', 'net'],
  ['proxy/hooks/', 'hooks'],
  ['proxy/mcp/', 'mcp'],
  ['proxy/cli/', 'cli'],
  ['checks/', 'checks'],
  ['policy/', 'policy'],
  ['admin/', 'admin'],
  ['proxy/', 'wiring'],
];

// Who may include whom. 'wiring' (proxy/main.c, proxy/config.c) may
// include everything; nothing includes it but itself, except the two
// headers named in ROOT_TYPES.
export const ALLOWED = {
  base: ['base'],
  checks: ['base', 'checks'],
  policy: ['base', 'policy'],
  net: ['base', 'net'],
  hooks: ['base', 'checks', 'policy', 'hooks'],
  mcp: ['base', 'net', 'hooks', 'mcp'],
  cli: ['base', 'net', 'checks', 'policy', 'mcp', 'cli'], // policy: replay judges calls by the proxy's engine
  admin: ['base', 'net', 'hooks', 'policy', 'admin'],
  wiring: ['base', 'checks', 'policy', 'net', 'hooks', 'mcp', 'cli', 'admin', 'wiring'],
};

// Type-only headers of the wiring layer (struct declarations, no code,
// no include of ours above base/): what every worker's runtime root and
// the parsed configuration look like. Layers that run inside a worker may
// read them; the pure layers (base, checks, policy) may not.
export const ROOT_TYPES = ['proxy/ctx.h', 'proxy/config.h'];
const ROOT_TYPE_READERS = ['net', 'hooks', 'mcp', 'cli', 'admin', 'wiring'];

export function layerOf(path) {
  for (const [prefix, layer] of FOLDERS) if (path.startsWith(prefix)) return layer;
  return null;
}

const moduleOf = (path) => path.replace(/\.[ch]$/, '');

// files: { 'proxy/net/conn.c': ['proxy/net/conn.h', ...], ... }
// exceptions: Set of "from -> to" strings still tolerated (each one a
// known debt with its reason in the exceptions file).
export function check(files, exceptions = new Set()) {
  const findings = [];
  const used = new Set();
  for (const [from, incs] of Object.entries(files)) {
    const lf = layerOf(from);
    if (!lf) continue;
    for (const to of incs) {
      const lt = layerOf(to);
      if (!lt) { findings.push(`${from}: includes "${to}", which is in no layer`); continue; }
      if (!(to in files)) { findings.push(`${from}: includes "${to}", which does not exist`); continue; }
      let ok = ALLOWED[lf].includes(lt);
      if (!ok && ROOT_TYPES.includes(to)) ok = ROOT_TYPE_READERS.includes(lf);
      if (ok) continue;
      const key = `${from} -> ${to}`;
      if (exceptions.has(key)) { used.add(key); continue; }
      findings.push(`${from} (${lf}) includes ${to} (${lt}): ${lf} may include ${ALLOWED[lf].join(', ')}`);
    }
  }
  for (const key of exceptions)
    if (!used.has(key)) findings.push(`exception no longer needed (remove it): ${key}`);
  for (const circle of circles(files))
    findings.push(`include circle: ${circle.join(' -> ')}`);
  return findings;
}

// Circles between modules (a.c includes b.h, b.c includes a.h, ...),
// found with Tarjan's strongly connected components.
export function circles(files) {
  const edges = new Map();
  for (const [from, incs] of Object.entries(files)) {
    const m = moduleOf(from);
    if (!edges.has(m)) edges.set(m, new Set());
    for (const to of incs) if (moduleOf(to) !== m) edges.get(m).add(moduleOf(to));
  }
  let index = 0;
  const idx = new Map(), low = new Map(), on = new Set(), stack = [], out = [];
  const visit = (v) => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); on.add(v);
    for (const w of edges.get(v) || []) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do { w = stack.pop(); on.delete(w); scc.push(w); } while (w !== v);
      if (scc.length > 1) out.push(scc.reverse().concat(scc[0]));
    }
  };
  for (const v of [...edges.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}

function walk(dir, top, acc) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, top, acc);
    else if (/\.[ch]$/.test(name)) acc.push(relative(top, p));
  }
  return acc;
}

export function readTree(top) {
  const files = {};
  for (const root of ['proxy', 'checks', 'policy', 'admin'])
    for (const f of walk(join(top, root), top, [])) {
      const src = readFileSync(join(top, f), 'utf8');
      files[f] = [...src.matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)].map((m) => m[1]);
    }
  return files;
}

export function readExceptions(path) {
  const set = new Set();
  let text = '';
  try { text = readFileSync(path, 'utf8'); } catch { return set; }
  for (const line of text.split('\n')) {
    const l = line.replace(/#.*/, '').trim();
    if (l) set.add(l.replace(/\s+->\s+/, ' -> '));
  }
  return set;
}

function selfTest() {
  const good = {
    'proxy/base/log.c': ['proxy/base/log.h'], 'proxy/base/log.h': [],
    'proxy/net/conn.c': ['proxy/net/conn.h', 'proxy/base/log.h', 'proxy/ctx.h'], 'proxy/net/conn.h': [],
    'proxy/ctx.h': [], 'proxy/main.c': ['proxy/net/conn.h'],
  };
  const expect = (name, files, exc, want) => {
    const got = check(files, exc);
    const hit = want.every((w) => got.some((g) => g.includes(w)));
    if (!hit || (want.length === 0 && got.length)) {
      console.error(`self-test "${name}" failed: wanted ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
      process.exit(1);
    }
  };
  expect('a clean tree passes', good, new Set(), []);
  expect('base including net is refused', { ...good, 'proxy/base/log.c': ['proxy/base/log.h', 'proxy/net/conn.h'] },
    new Set(), ['proxy/base/log.c (base) includes proxy/net/conn.h (net)']);
  expect('base reading the root types is refused', { ...good, 'proxy/base/log.c': ['proxy/ctx.h'] },
    new Set(), ['proxy/base/log.c (base) includes proxy/ctx.h']);
  expect('a circle is found', { ...good, 'proxy/net/a.c': ['proxy/net/b.h'], 'proxy/net/a.h': [],
    'proxy/net/b.c': ['proxy/net/a.h'], 'proxy/net/b.h': [] }, new Set(), ['include circle: proxy/net/a -> proxy/net/b -> proxy/net/a']);
  expect('a missing header is found', { ...good, 'proxy/net/conn.c': ['proxy/net/gone.h'] }, new Set(), ['does not exist']);
  const bad = { ...good, 'proxy/net/conn.c': ['proxy/net/conn.h', 'proxy/hooks/x.h'], 'proxy/hooks/x.h': [] };
  expect('a listed exception is tolerated', bad, new Set(['proxy/net/conn.c -> proxy/hooks/x.h']), []);
  expect('a stale exception is reported', good, new Set(['proxy/net/conn.c -> proxy/hooks/x.h']), ['no longer needed']);
  console.log('layers self-test: 7 cases, each finding found');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--self-test')) { selfTest(); process.exit(0); }
  const here = fileURLToPath(new URL('.', import.meta.url));
  const top = join(here, '..', '..');
  const files = readTree(top);
  const findings = check(files, readExceptions(join(here, 'exceptions.txt')));
  if (findings.length) {
    for (const f of findings) console.error('layers: ' + f);
    console.error(`layers: ${findings.length} finding(s); the table is in tests/layers/layers.mjs and README.md "Layout"`);
    process.exit(1);
  }
  console.log(`layers: ${Object.keys(files).length} files, every include goes down the table, no circle`);
}

// The man pages (man/, mdoc) cannot drift from the code (issue 22, point 5):
//  - every long flag `mcpwarden --help` and each subcommand's --help print
//    is documented in mcpwarden(1) as `Fl \-flag`, and each subcommand of
//    the usage text as `Cm name`;
//  - every property name anywhere in conf/mcpwarden.schema.json is a key
//    (`Ic key`) of mcpwarden.json(5), and every one of
//    conf/mcpwarden-policy.schema.json of mcpwarden-policy(5);
//  - each page is clean under `mandoc -T lint -W warning`.
// Each check first shows on a page with one entry taken out that it fails.
// A subcommand whose code has not landed yet (its --help does not answer
// with its own usage) is only checked through the page's synopsis.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, WARDEN_BIN, requireWarden } from './lib/procs.mjs';

const MAN = path.join(REPO_ROOT, 'man');
const page = (n) => fs.readFileSync(path.join(MAN, n), 'utf8');
const schema = (n) => JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'conf', n), 'utf8'));

// mdoc source with the escapes that matter here undone: `\-` is a hyphen,
// `\&` a zero-width guard.
const plain = (src) => src.replace(/\\-/g, '-').replace(/\\&/g, '');
const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
// `Macro word` as a whole word of an mdoc line (word = flag or key characters).
const has = (src, macro, word) =>
  new RegExp(`(^\\.?|\\s)${macro} ${escapeRe(word)}(?![A-Za-z0-9_-])`, 'm').test(plain(src));

function help(args) {
  requireWarden();
  const r = spawnSync(WARDEN_BIN, args, { encoding: 'utf8', timeout: 5000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}
const longFlags = (text) => [...new Set(text.match(/--[a-z][a-z0-9-]*/g) || [])];

// Every key of every `properties` object, at any depth (items, oneOf, not...).
function schemaKeys(s, out = new Set()) {
  if (Array.isArray(s)) s.forEach((x) => schemaKeys(x, out));
  else if (s && typeof s === 'object') {
    if (s.properties && typeof s.properties === 'object' && !Array.isArray(s.properties)) {
      for (const k of Object.keys(s.properties)) out.add(k);
    }
    for (const v of Object.values(s)) schemaKeys(v, out);
  }
  return out;
}
const missingKeys = (keys, src) => [...keys].filter((k) => !has(src, 'Ic', k));
const missingFlags = (flags, src) => flags.filter((f) => !has(src, 'Fl', `-${f.slice(2)}`));

// Takes `.It Ic key` / `Ic key` for one key out of a page: what a forgotten
// key looks like.
const without = (src, macro, word) =>
  plain(src).split('\n').filter((l) => !new RegExp(`(^\\.?|\\s)${macro} ${escapeRe(word)}(?![A-Za-z0-9_-])`).test(l)).join('\n');

// The subcommands and their usage, from the proxy's own --help.
function subcommands() {
  const top = help(['--help']);
  assert.equal(top.code, 0, top.out);
  return [...new Set([...top.out.matchAll(/^\s*(?:usage: )?mcpwarden ([a-z]+)\b/gm)].map((m) => m[1]))];
}

describe('man pages match the code', () => {
  test('mandoc -T lint -W warning: every page clean', () => {
    const pages = fs.readdirSync(MAN).filter((n) => /\.[1-8]$/.test(n));
    assert.deepEqual(pages.sort(), ['mcpwarden-policy.5', 'mcpwarden.1', 'mcpwarden.json.5']);
    for (const n of pages) {
      const r = spawnSync('mandoc', ['-T', 'lint', '-W', 'warning', path.join(MAN, n)], { encoding: 'utf8' });
      assert.equal(r.status, 0, `${n}: ${r.stdout}${r.stderr}`);
    }
  });

  test('every long flag of mcpwarden --help is in mcpwarden(1)', () => {
    const src = page('mcpwarden.1');
    const top = help(['--help']);
    assert.equal(top.code, 0, top.out);
    const flags = longFlags(top.out);
    assert.ok(flags.length >= 20, flags.join(' '));
    assert.deepEqual(missingFlags(flags, src), []);
    // The check can fail: a page without --max-body.
    assert.deepEqual(missingFlags(flags, without(src, 'Fl', '-max-body')), ['--max-body']);
  });

  test('every subcommand and each one\'s long flags are in mcpwarden(1)', () => {
    const src = page('mcpwarden.1');
    const subs = subcommands();
    for (const s of ['check', 'diff']) assert.ok(subs.includes(s), subs.join(' '));
    // The commands of this wave are in the synopsis even before their code lands.
    for (const s of new Set([...subs, 'check', 'diff', 'replay', 'tail', 'status'])) {
      assert.ok(has(src, 'Cm', s), `subcommand ${s} missing`);
      const h = help([s, '--help']);
      if (h.code !== 0 || !new RegExp(`usage: mcpwarden ${s}\\b`).test(h.out)) {
        assert.ok(!subs.includes(s), `mcpwarden ${s} --help: ${h.out}`);
        continue;
      }
      assert.deepEqual(missingFlags(longFlags(h.out).filter((f) => f !== '--help'), src), [], `mcpwarden ${s}`);
    }
    const check = help(['check', '--help']);
    assert.equal(check.code, 0, check.out);
    assert.ok(longFlags(check.out).includes('--save-baseline'));
    assert.deepEqual(missingFlags(longFlags(check.out), without(src, 'Fl', '-save-baseline')), ['--save-baseline']);
  });

  test('every key of conf/mcpwarden.schema.json is in mcpwarden.json(5)', () => {
    const src = page('mcpwarden.json.5');
    const keys = schemaKeys(schema('mcpwarden.schema.json'));
    assert.ok(keys.size >= 60 && keys.has('max_streams_per_session') && keys.has('insecure_skip_verify'));
    assert.deepEqual(missingKeys(keys, src), []);
    // This wave's keys (WAVE4.md) are documented before their loaders land.
    const wave = ['capture', 'max_bytes', 'keep', 'unredacted', 'profiles', 'ready_requires_contract'];
    assert.deepEqual(missingKeys(wave, src), []);
    assert.deepEqual(missingKeys(keys, without(src, 'Ic', 'upstream_idle_ms')), ['upstream_idle_ms']);
  });

  test('every key of conf/mcpwarden-policy.schema.json is in mcpwarden-policy(5)', () => {
    const src = page('mcpwarden-policy.5');
    const keys = schemaKeys(schema('mcpwarden-policy.schema.json'));
    assert.ok(keys.has('extra_change_words') && keys.has('openWorldHint') && keys.has('exists'));
    assert.deepEqual(missingKeys(keys, src), []);
    assert.deepEqual(missingKeys(keys, without(src, 'Ic', 'idempotentHint')), ['idempotentHint']);
  });
});

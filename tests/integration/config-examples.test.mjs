// conf/examples/ (issue 22, point 7): the example configurations for the
// common setups. config-schema.test.mjs reads conf/ only, so here:
//  - every config in conf/examples validates against conf/mcpwarden.schema.json
//    (ajv, strict), and a tool listing (a baseline) passes `check --tools-file`;
//  - every config passes `mcpwarden --check-config` once the files it names
//    exist: its /etc/mcpwarden/ and /var/log/mcpwarden/ paths are moved into a
//    temporary directory that holds fresh certificates, a token file and the
//    baseline, its *.example.com hosts become localhost, and the variables it
//    names are set;
//  - conf/examples/README.md lists exactly the files there.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { REPO_ROOT, WARDEN_BIN, requireWarden } from './lib/procs.mjs';
import { makeCerts } from './lib/certs.mjs';

const CONF = path.join(REPO_ROOT, 'conf');
const EX = path.join(CONF, 'examples');
const readJson = (f) => JSON.parse(fs.readFileSync(f, 'utf8'));
const examples = fs.readdirSync(EX).filter((n) => n.endsWith('.json')).sort();
const isListing = (obj) => Array.isArray(obj.tools);

let validate;
let certs;
let tmp;

before(() => {
  requireWarden();
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  ajv.addSchema(readJson(path.join(CONF, 'mcpwarden-policy.schema.json')), 'mcpwarden-policy.schema.json');
  validate = ajv.compile(readJson(path.join(CONF, 'mcpwarden.schema.json')));
  certs = makeCerts();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-examples-'));
});
after(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.rmSync(certs.dir, { recursive: true, force: true });
});

const PREFIXES = ['/etc/mcpwarden/', '/var/log/mcpwarden/'];

// The file a path of an example stands for, made real under dir.
function materialize(dir, p) {
  const rel = PREFIXES.reduce((s, pre) => (s.startsWith(pre) ? s.slice(pre.length) : s), p);
  const dst = path.join(dir, rel);
  fs.mkdirSync(path.dirname(dst), { recursive: true });
  const base = path.basename(rel);
  if (/ca\.pem$/.test(base)) fs.copyFileSync(certs.ca, dst);
  else if (/^client\.(pem|key)$/.test(base)) fs.copyFileSync(base.endsWith('.pem') ? certs.client.cert : certs.client.key, dst);
  else if (/\.pem$/.test(base)) fs.copyFileSync(certs.server.cert, dst);
  else if (/\.key$/.test(base)) fs.copyFileSync(certs.server.key, dst);
  else if (/\.token$/.test(base)) fs.writeFileSync(dst, 'example-admin-token-0123456789abcdef\n', { mode: 0o600 });
  else if (/\.json$/.test(base) && fs.existsSync(path.join(EX, base))) fs.copyFileSync(path.join(EX, base), dst);
  // anything else (the call log) is created by the proxy: its folder is enough
  return dst;
}

// The example as --check-config on this machine can load it, and the
// environment it needs.
let nlocal = 0;
function localize(name) {
  const dir = path.join(tmp, `${nlocal++}-${name.replace(/\.json$/, '')}`);
  fs.mkdirSync(dir);
  const env = {};
  const walk = (v) => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => {
        if (k === 'token_env') env[x] = 'example-client-token-0123456789';
        return [k, walk(x)];
      }));
    }
    if (typeof v !== 'string') return v;
    for (const m of v.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) env[m[1]] = 'example-secret-value';
    if (PREFIXES.some((pre) => v.startsWith(pre))) return materialize(dir, v);
    return v.replace(/\/\/[a-z0-9.-]+\.example\.com(?=[:/])/g, '//localhost');
  };
  const obj = walk(readJson(path.join(EX, name)));
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(obj, null, 2));
  return { file, env };
}

function checkConfig(file, env) {
  const r = spawnSync(WARDEN_BIN, ['--check-config', '-c', file], {
    encoding: 'utf8', timeout: 10000, env: { PATH: process.env.PATH, ...env },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('conf/examples', () => {
  test('the examples of issue 22 are there', () => {
    for (const n of ['tls-both-sides.json', 'client-tokens.json', 'admin-token-remote.json',
      'https-upstream-ca.json', 'contract-fail-baseline.json', 'baseline-tools.json']) {
      assert.ok(examples.includes(n), n);
    }
  });

  test('every config validates against the schema; every listing passes check --tools-file', () => {
    for (const n of examples) {
      const obj = readJson(path.join(EX, n));
      if (isListing(obj)) {
        const r = spawnSync(WARDEN_BIN, ['check', '--tools-file', path.join(EX, n)], { encoding: 'utf8' });
        assert.equal(r.status, 0, `${n}: ${r.stdout}${r.stderr}`);
        continue;
      }
      assert.ok(validate(obj), `${n}: ${JSON.stringify(validate.errors, null, 1)}`);
    }
  });

  test('every config passes --check-config with the files it names in place', () => {
    for (const n of examples.filter((x) => !isListing(readJson(path.join(EX, x))))) {
      const { file, env } = localize(n);
      const r = checkConfig(file, env);
      assert.equal(r.code, 0, `${n}: ${r.out}`);
      assert.match(r.out, /: OK \(\d+ upstreams?\)/);
    }
  });

  test('the check can fail: an unknown key, a missing file, an unset variable', () => {
    const { file, env } = localize('tls-both-sides.json');
    const obj = readJson(file);
    assert.equal(validate({ ...obj, listn: ':1' }), false);
    fs.writeFileSync(`${file}.bad.json`, JSON.stringify({ ...obj, listn: ':1' }));
    assert.equal(checkConfig(`${file}.bad.json`, env).code, 2);
    fs.rmSync(obj.upstreams[0].tls.ca_file);
    assert.equal(checkConfig(file, env).code, 2);
    const t = localize('client-tokens.json');
    assert.equal(checkConfig(t.file, {}).code, 2);
  });

  test('conf/examples/README.md lists exactly the files there', () => {
    const readme = fs.readFileSync(path.join(EX, 'README.md'), 'utf8');
    const listed = [...new Set([...readme.matchAll(/^\| `([^`]+\.json)` \|/gm)].map((m) => m[1]))].sort();
    assert.deepEqual(listed, examples);
  });
});

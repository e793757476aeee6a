// The JSON Schemas of the config file and the policy (issue 22, point 6)
// against the loaders, so that the two cannot drift apart:
//  - both schemas compile with ajv in strict mode (which also checks them
//    against the draft 2020-12 meta-schema);
//  - every JSON file in conf/ validates: a *.schema.json is a schema (it
//    compiled above), a file whose name starts with "policy" is a policy,
//    every other one a config;
//  - every config and policy a representative set of integration files
//    writes (tests/integration/lib/conf.mjs keeps them under
//    MCPWARDEN_IT_KEEP_CONF): when the loader accepts one, the schema must
//    too; when the schema refuses one, the loader must too;
//  - broken files (unknown key, wrong type, bad enum value, out-of-range
//    number, nested sections) are refused by both, at the same location;
//    valid edge files are accepted by both.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { REPO_ROOT, WARDEN_BIN, requireWarden } from './lib/procs.mjs';
import { makeCerts } from './lib/certs.mjs';

const CONF = path.join(REPO_ROOT, 'conf');
const readJson = (f) => JSON.parse(fs.readFileSync(f, 'utf8'));

// Files the integration run writes through writeConfig, kept for this test.
const SAMPLED = ['cli', 'client-tokens', 'policy', 'origin', 'contract', 'multi-upstream', 'tls',
  'inspect-bound', 'drain'];

const CONFIG_KEYS = new Set(Object.keys(readJson(path.join(CONF, 'mcpwarden.schema.json')).properties));
const POLICY_KEYS = new Set(Object.keys(readJson(path.join(CONF, 'mcpwarden-policy.schema.json')).properties));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-schema-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
let nfile = 0;
function write(obj) {
  const f = path.join(tmp, `f${nfile++}.json`);
  fs.writeFileSync(f, typeof obj === 'string' ? obj : JSON.stringify(obj, null, 2));
  return f;
}

// strict: unknown keywords, ignored "required" names, types a keyword does
// not apply to... are compile errors, not silently ignored.
function compile() {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  ajv.addSchema(readJson(path.join(CONF, 'mcpwarden-policy.schema.json')), 'mcpwarden-policy.schema.json');
  return {
    config: ajv.compile(readJson(path.join(CONF, 'mcpwarden.schema.json'))),
    policy: ajv.getSchema('mcpwarden-policy.schema.json'),
  };
}

// ajv's errors as the loaders spell locations: "$.upstreams[0].url".
function locations(errors) {
  return (errors || []).map((e) => {
    let p = '$';
    for (const seg of e.instancePath.split('/').slice(1)) {
      const s = seg.replace(/~1/g, '/').replace(/~0/g, '~');
      p += /^\d+$/.test(s) ? `[${s}]` : `.${s}`;
    }
    if (e.keyword === 'additionalProperties') p += `.${e.params.additionalProperty}`;
    if (e.keyword === 'required') p += `.${e.params.missingProperty}`;
    return p;
  });
}

function check(args, env = {}) {
  const r = spawnSync(WARDEN_BIN, ['--check-config', ...args], {
    cwd: REPO_ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 10000,
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}
const checkConfig = (f, env) => check(['-c', f], env);
const checkPolicy = (f, env) => check(['--upstream', 'http://127.0.0.1:1/mcp', '--policy', f], env);

// Files: decided by content. An object with a config key is a config, one
// with only policy keys a policy; anything else (baselines, tool lists,
// token files, text that is not JSON) is no business of these schemas.
function kindOf(text) {
  let j;
  try { j = JSON.parse(text); } catch { return null; }
  if (!j || typeof j !== 'object' || Array.isArray(j)) return null;
  const keys = Object.keys(j).filter((k) => k !== '$schema');
  if (keys.some((k) => CONFIG_KEYS.has(k) && !POLICY_KEYS.has(k))) return 'config';
  if (keys.length && keys.every((k) => POLICY_KEYS.has(k))) return 'policy';
  return null;
}

// What only the loader can know: files, the environment, DNS, uniqueness,
// URL syntax, regular expressions' cost, the admin endpoint's exposure.
// A schema-valid file refused for anything else is drift.
const LOADER_ONLY = [
  /No such file|cannot open|could not|failed to load|does not load|not found/i,
  /environment variable \S+ is not set/,
  /is already (used|in use)|is also the name of/,
  /does not resolve|is not a loopback address/,
  /\.url: /, /set for an http:\/\/ upstream/, /set by the proxy/,
  /regular expression|back-references|repetition|anchors|nodes/,
  /must include tools\/call/, /holds no tool list/, /\.baseline: /, /\.log_calls: /,
  /\.tls: /, /\$\.tls\b/, /token_file: /, /"listener" needs TLS/,
];

function loaderOnly(out) {
  const lines = out.split('\n').filter((l) => l.startsWith('$') || l.startsWith('--') || l.includes(': $.'));
  return lines.length > 0 && lines.every((l) => LOADER_ONLY.some((re) => re.test(l)));
}

function childEnv() {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

// Whether the loader and ajv name the same place: one location holds the
// other ("$.clients[1]" and "$.clients[1].token"), the whole file aside.
function samePlace(locs, out, kind) {
  if (locs.includes('$.upstreams') && /^no upstream/m.test(out)) return true;
  const mine = locs.map((l) => (kind === 'policy' ? `$.policy${l.slice(1)}` : l));
  const theirs = out.split('\n').map((x) => x.match(/^(\$[^ :]+)/)?.[1]).filter(Boolean);
  const within = (a, b) => a === b || b.startsWith(`${a}.`) || b.startsWith(`${a}[`);
  return mine.some((l) => theirs.some((t) => within(l, t) || within(t, l)));
}

let V;
before(() => { requireWarden(); V = compile(); });

describe('config and policy schemas', () => {
  test('both schemas compile in strict mode against the 2020-12 meta-schema', () => {
    const ajv = new Ajv2020({ strict: true });
    for (const f of fs.readdirSync(CONF).filter((n) => n.endsWith('.schema.json'))) {
      const s = readJson(path.join(CONF, f));
      assert.equal(s.$schema, 'https://json-schema.org/draft/2020-12/schema', f);
      assert.ok(ajv.validateSchema(s), `${f}: ${JSON.stringify(ajv.errors)}`);
    }
    assert.equal(typeof V.config, 'function');
    assert.equal(typeof V.policy, 'function');
  });

  test('every JSON file in conf/ validates (configs, policies) and the loader agrees', () => {
    const files = fs.readdirSync(CONF).filter((n) => n.endsWith('.json') && !n.endsWith('.schema.json'));
    assert.ok(files.length >= 2, files.join(' '));
    for (const n of files) {
      const f = path.join(CONF, n);
      const policy = n.startsWith('policy');
      const v = policy ? V.policy : V.config;
      assert.ok(v(readJson(f)), `${n}: ${JSON.stringify(v.errors, null, 1)}`);
      const r = policy ? checkPolicy(f) : checkConfig(f);
      assert.equal(r.code, 0, `${n}: ${r.out}`);
    }
  });

  test('the configs and policies integration tests write: schema and loader agree', { timeout: 300000 }, async (t) => {
    const keep = path.join(tmp, 'keep');
    fs.mkdirSync(keep);
    const files = SAMPLED.map((n) => path.join(REPO_ROOT, 'tests/integration', `${n}.test.mjs`));
    const run = spawn(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=dot', ...files], {
      // Without NODE_TEST_CONTEXT: it would make the inner runner report to this one.
      cwd: REPO_ROOT, env: { ...childEnv(), MCPWARDEN_IT_KEEP_CONF: keep, MCPWARDEN_BIN: WARDEN_BIN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    run.stdout.on('data', (d) => { out += d; });
    run.stderr.on('data', (d) => { out += d; });
    const code = await new Promise((res) => run.on('exit', res));
    assert.equal(code, 0, `the sampled integration files failed:\n${out.slice(-4000)}`);

    const seen = { config: 0, policy: 0, skipped: 0, loaderOnly: 0, bothRefuse: 0 };
    for (const d of fs.readdirSync(keep)) {
      for (const n of fs.readdirSync(path.join(keep, d))) {
        const f = path.join(keep, d, n);
        const text = fs.readFileSync(f, 'utf8');
        const kind = kindOf(text);
        if (!kind) { seen.skipped++; continue; }
        seen[kind]++;
        const v = V[kind];
        const ok = v(JSON.parse(text));
        const r = kind === 'config' ? checkConfig(f) : checkPolicy(f);
        const where = `${d}/${n} (${kind}):\n${text}\nloader: ${r.out}\nschema: ${JSON.stringify(v.errors)}`;
        if (r.code === 0) {
          assert.ok(ok, `the loader accepts it, the schema does not: ${where}`);
        } else {
          assert.equal(r.code, 2, where);
          if (!ok) {
            // Refused by both, and for the same reason: the loader names a
            // place the schema names (not only a file that has gone since).
            assert.ok(samePlace(locations(v.errors), r.out, kind), `refused by both, at different places: ${where}`);
            seen.bothRefuse++;
          }
          if (ok) {
            assert.ok(loaderOnly(r.out), `the schema accepts it, the loader refuses it for a reason a schema can express: ${where}`);
            seen.loaderOnly++;
            if (process.env.MW_SCHEMA_DEBUG) console.log(`# loader only: ${r.out.split("\n").slice(1).join(" | ")}`);
          }
        }
      }
    }
    // Enough to mean something; the figures show in the test's output.
    assert.ok(seen.config >= 40, JSON.stringify(seen));
    assert.ok(seen.policy >= 3, JSON.stringify(seen));
    t.diagnostic(`written by ${SAMPLED.length} integration files: ${JSON.stringify(seen)}`);
  });
});

const U = (extra = {}) => ({ url: 'http://127.0.0.1:3001/mcp', ...extra });
const C = (extra = {}) => ({ upstreams: [U()], ...extra });

// [what, config, location both must name (ajv's path starts with it, a
// loader line starts with it), loader pattern when its wording differs]
const BROKEN_CONFIGS = [
  ['unknown top-level key', C({ listn: ':1' }), '$.listn'],
  ['"$schema" not a string', C({ $schema: 5 }), '$.$schema'],
  ['another "$" key', C({ $id: 'x' }), '$.$id'],
  ['workers a string', C({ workers: '2' }), '$.workers'],
  ['workers over 64', C({ workers: 65 }), '$.workers'],
  ['yield_after_us over the bound', C({ yield_after_us: 1000001 }), '$.yield_after_us'],
  ['listen without a port', C({ listen: '127.0.0.1' }), '$.listen'],
  ['listen port over 65535', C({ listen: '127.0.0.1:65536' }), '$.listen'],
  ['allowed_hosts entry with a space', C({ allowed_hosts: ['a b'] }), '$.allowed_hosts[0]'],
  ['allowed_origins not an array', C({ allowed_origins: 'x' }), '$.allowed_origins'],
  ['no upstreams', { listen: '127.0.0.1:1' }, '$.upstreams', /no upstream/],
  ['upstreams empty', { upstreams: [] }, '$.upstreams'],
  ['upstream not an object', { upstreams: ['http://x/mcp'] }, '$.upstreams[0]'],
  ['upstream without url', { upstreams: [{ name: 'a' }] }, '$.upstreams[0].url'],
  ['upstream unknown key', { upstreams: [U({ urll: 'x' })] }, '$.upstreams[0].urll'],
  ['upstream url not http', { upstreams: [{ url: 'ftp://h/mcp' }] }, '$.upstreams[0].url'],
  ['upstream url with a space', { upstreams: [{ url: 'http://h:1/a b' }] }, '$.upstreams[0].url'],
  ['upstream path without /', { upstreams: [U({ path: 'mcp' })] }, '$.upstreams[0].path'],
  ['upstream path with ?', { upstreams: [U({ path: '/mcp?x' })] }, '$.upstreams[0].path'],
  ['upstream sse_path with #', { upstreams: [U({ sse_path: '/s#' })] }, '$.upstreams[0].sse_path'],
  ['upstream transport', { upstreams: [U({ transport: 'websocket' })] }, '$.upstreams[0].transport'],
  ['upstream name a number', { upstreams: [U({ name: 1 })] }, '$.upstreams[0].name'],
  ['header value not a string', { upstreams: [U({ headers: { 'X-A': 1 } })] }, '$.upstreams[0].headers.X-A'],
  ['header name not a token', { upstreams: [U({ headers: { 'X A': 'v' } })] }, '$.upstreams[0].headers', /\$\.upstreams\[0\]\.headers\.X A: not a valid header name/],
  ['upstream timeouts unknown key', { upstreams: [U({ timeouts: { idle_ms: 1 } })] }, '$.upstreams[0].timeouts.idle_ms'],
  ['upstream timeouts out of range', { upstreams: [U({ timeouts: { connect_ms: 86400001 } })] }, '$.upstreams[0].timeouts.connect_ms'],
  ['upstream tls unknown key', { upstreams: [{ url: 'https://h:1/mcp', tls: { ca: 'x' } }] }, '$.upstreams[0].tls.ca'],
  ['upstream tls cert without key', { upstreams: [{ url: 'https://h:1/mcp', tls: { cert_file: 'x' } }] }, '$.upstreams[0].tls'],
  ['upstream tls insecure_skip_verify a string', { upstreams: [{ url: 'https://h:1/mcp', tls: { insecure_skip_verify: 'yes' } }] }, '$.upstreams[0].tls.insecure_skip_verify'],
  ['validation unknown key', { upstreams: [U({ validation: { format: true } })] }, '$.upstreams[0].validation.format'],
  ['validation.results bad value', { upstreams: [U({ validation: { results: 'strict' } })] }, '$.upstreams[0].validation.results'],
  ['validation.arguments a boolean', { upstreams: [U({ validation: { arguments: true } })] }, '$.upstreams[0].validation.arguments'],
  ['validation.formats a string', { upstreams: [U({ validation: { formats: 'on' } })] }, '$.upstreams[0].validation.formats'],
  ['contract unknown key', { upstreams: [U({ contract: { spec: true } })] }, '$.upstreams[0].contract.spec'],
  ['contract.mode bad value', { upstreams: [U({ contract: { mode: 'block' } })] }, '$.upstreams[0].contract.mode'],
  ['contract.spec_only a string', { upstreams: [U({ contract: { spec_only: 'yes' } })] }, '$.upstreams[0].contract.spec_only'],
  ['contract.baseline empty', { upstreams: [U({ contract: { baseline: '' } })] }, '$.upstreams[0].contract.baseline'],
  ['clients not an array', C({ clients: {} }), '$.clients'],
  ['client short token', C({ clients: [{ name: 'a', token: 'short' }] }), '$.clients[0]'],
  ['client token and token_env', C({ clients: [{ name: 'a', token: 'x'.repeat(16), token_env: 'HOME' }] }), '$.clients[0]'],
  ['client without name', C({ clients: [{ token: 'x'.repeat(16) }] }), '$.clients[0]'],
  ['client unknown key', C({ clients: [{ name: 'a', token: 'x'.repeat(16), role: 'x' }] }), '$.clients[0].role'],
  ['tls without key_file', C({ tls: { cert_file: 'x' } }), '$.tls'],
  ['tls unknown key', C({ tls: { cert_file: 'x', key_file: 'y', ca_file: 'z' } }), '$.tls.ca_file'],
  ['timeouts unknown key', C({ timeouts: { idle_ms: 1 } }), '$.timeouts.idle_ms'],
  ['timeouts negative', C({ timeouts: { drain_ms: -1 } }), '$.timeouts.drain_ms'],
  ['timeouts over a day', C({ timeouts: { session_idle_ms: 86400001 } }), '$.timeouts.session_idle_ms'],
  ['timeouts a string', C({ timeouts: { header_ms: '10' } }), '$.timeouts.header_ms'],
  ['limits unknown key', C({ limits: { max_bodybytes: 1 } }), '$.limits.max_bodybytes'],
  ['limits max_json_depth over 2000', C({ limits: { max_json_depth: 2001 } }), '$.limits.max_json_depth'],
  ['limits max_header_bytes over 1 MiB', C({ limits: { max_header_bytes: 1048577 } }), '$.limits.max_header_bytes'],
  ['limits max_body_bytes over 1 GiB', C({ limits: { max_body_bytes: 1073741825 } }), '$.limits.max_body_bytes'],
  ['limits a boolean', C({ limits: { max_batch: true } }), '$.limits.max_batch'],
  ['log unknown key', C({ log: { levl: 'info' } }), '$.log.levl'],
  ['log.level bad value', C({ log: { level: 'verbose' } }), '$.log.level'],
  ['log.format bad value', C({ log: { format: 'yaml' } }), '$.log.format'],
  ['admin unknown key', C({ admin: { ringsize: 5 } }), '$.admin.ringsize'],
  ['admin.ring_size 0', C({ admin: { ring_size: 0 } }), '$.admin.ring_size'],
  ['admin.ring_size over the bound', C({ admin: { ring_size: 100001 } }), '$.admin.ring_size'],
  ['admin.max_streams over 1024', C({ admin: { max_streams: 1025 } }), '$.admin.max_streams'],
  ['admin.max_labels 0', C({ admin: { max_labels: 0 } }), '$.admin.max_labels'],
  ['admin.listen bare IPv6', C({ admin: { listen: '::1:9090' } }), '$.admin.listen'],
  ['admin.listen a number', C({ admin: { listen: 9090 } }), '$.admin.listen'],
  ['admin.token with a space', C({ admin: { token: 'a b' } }), '$.admin.token'],
  ['admin token and token_file', C({ admin: { token: 'abc', token_file: '/etc/hostname' } }), '$.admin', /\$\.admin\.token_file: give token or token_file/],
  ['admin.redact_values too short', C({ admin: { redact_values: ['ab'] } }), '$.admin.redact_values[0]'],
  ['admin.redact_keys not an array', C({ admin: { redact_keys: 'password' } }), '$.admin.redact_keys'],
  ['admin.tls a bad string', C({ admin: { tls: 'client' } }), '$.admin.tls'],
  ['admin.tls unknown key', C({ admin: { tls: { cert_file: 'a', key_file: 'b', ca_file: 'c' } } }), '$.admin.tls'],
  ['admin.log_calls empty', C({ admin: { log_calls: '' } }), '$.admin.log_calls'],
  ['policy not an object', C({ policy: [] }), '$.policy'],
  ['policy nested: bad action', C({ policy: { rules: [{ name: 'r', action: 'block' }] } }), '$.policy.rules[0].action'],
];

const BROKEN_POLICIES = [
  ['unknown key', { defualt: 'deny' }, '$.defualt'],
  ['"$schema" not a string', { $schema: 5 }, '$.$schema'],
  ['"$schema" inside a rule', { rules: [{ name: 'r', action: 'deny', $schema: 'x' }] }, '$.rules[0].$schema'],
  ['default bad value', { default: 'block' }, '$.default'],
  ['dry_run a string', { dry_run: 'yes' }, '$.dry_run'],
  ['unknown_tools bad value', { unknown_tools: 'allow' }, '$.unknown_tools'],
  ['description a number', { description: 5 }, '$.description'],
  ['change_words a string', { change_words: 'delete' }, '$.change_words'],
  ['extra_change_words empty word', { extra_change_words: [''] }, '$.extra_change_words[0]'],
  ['rules an object', { rules: {} }, '$.rules'],
  ['rule not an object', { rules: [7] }, '$.rules[0]'],
  ['rule without name', { rules: [{ action: 'deny' }] }, '$.rules[0]'],
  ['rule without action', { rules: [{ name: 'r' }] }, '$.rules[0]'],
  ['rule name with a space', { rules: [{ name: 'a b', action: 'deny' }] }, '$.rules[0].name'],
  ['rule name 65 characters', { rules: [{ name: 'x'.repeat(65), action: 'deny' }] }, '$.rules[0].name'],
  ['rule name reserved', { rules: [{ name: 'unknown-tool', action: 'deny' }] }, '$.rules[0].name'],
  ['rule unknown key', { rules: [{ name: 'r', action: 'deny', colour: 1 }] }, '$.rules[0].colour'],
  ['rule message two lines', { rules: [{ name: 'r', action: 'deny', message: 'a\nb' }] }, '$.rules[0].message'],
  ['rule message over 512', { rules: [{ name: 'r', action: 'deny', message: 'm'.repeat(513) }] }, '$.rules[0].message'],
  ['rule dry_run a number', { rules: [{ name: 'r', action: 'deny', dry_run: 1 }] }, '$.rules[0].dry_run'],
  ['match an array', { rules: [{ name: 'r', action: 'deny', match: [] }] }, '$.rules[0].match'],
  ['match unknown key', { rules: [{ name: 'r', action: 'deny', match: { toool: 'a' } }] }, '$.rules[0].match.toool'],
  ['match.tool a number', { rules: [{ name: 'r', action: 'deny', match: { tool: 7 } }] }, '$.rules[0].match.tool'],
  ['match.tool empty array', { rules: [{ name: 'r', action: 'deny', match: { tool: [] } }] }, '$.rules[0].match.tool'],
  ['match.client an empty glob', { rules: [{ name: 'r', action: 'deny', match: { client: ['a', ''] } }] }, '$.rules[0].match.client'],
  ['annotations empty', { rules: [{ name: 'r', action: 'deny', match: { annotations: {} } }] }, '$.rules[0].match.annotations'],
  ['annotations unknown hint', { rules: [{ name: 'r', action: 'deny', match: { annotations: { readOnly: true } } }] }, '$.rules[0].match.annotations.readOnly'],
  ['annotations hint a number', { rules: [{ name: 'r', action: 'deny', match: { annotations: { readOnlyHint: 1 } } }] }, '$.rules[0].match.annotations.readOnlyHint'],
  ['name_words a string', { rules: [{ name: 'r', action: 'deny', match: { name_words: 'yes' } }] }, '$.rules[0].match.name_words'],
  ['args empty', { rules: [{ name: 'r', action: 'deny', match: { args: [] } }] }, '$.rules[0].match.args'],
  ['arg without pointer', { rules: [{ name: 'r', action: 'deny', match: { args: [{ equals: 1 }] } }] }, '$.rules[0].match.args[0]'],
  ['arg pointer not a pointer', { rules: [{ name: 'r', action: 'deny', match: { args: [{ pointer: 'sql', equals: 1 }] } }] }, '$.rules[0].match.args[0].pointer'],
  ['arg pointer bad escape', { rules: [{ name: 'r', action: 'deny', match: { args: [{ pointer: '/a~2', equals: 1 }] } }] }, '$.rules[0].match.args[0].pointer'],
  ['arg with two tests', { rules: [{ name: 'r', action: 'deny', match: { args: [{ pointer: '/a', equals: 1, exists: true }] } }] }, '$.rules[0].match.args[0]'],
  ['arg with no test', { rules: [{ name: 'r', action: 'deny', match: { args: [{ pointer: '/a' }] } }] }, '$.rules[0].match.args[0]'],
  ['arg matches a number', { rules: [{ name: 'r', action: 'deny', match: { args: [{ pointer: '/a', matches: 5 }] } }] }, '$.rules[0].match.args[0].matches'],
  ['arg exists a string', { rules: [{ name: 'r', action: 'deny', match: { args: [{ pointer: '/a', exists: 'y' }] } }] }, '$.rules[0].match.args[0].exists'],
  ['arg unknown key', { rules: [{ name: 'r', action: 'deny', match: { args: [{ pointer: '/a', exists: true, regex: 'a' }] } }] }, '$.rules[0].match.args[0].regex'],
];

function certsConfigs(certs) {
  const up = (extra) => ({ url: 'https://127.0.0.1:3443/mcp', tls: { ca_file: certs.ca, ...extra } });
  return [
    ['TLS on both sides, admin on the listener certificate', {
      $schema: './mcpwarden.schema.json',
      tls: { cert_file: certs.server.cert, key_file: certs.server.key },
      admin: { tls: 'listener' },
      upstreams: [up({ cert_file: certs.client.cert, key_file: certs.client.key })],
    }],
    ['admin with its own certificate, insecure upstream', {
      admin: { tls: { cert_file: certs.server.cert, key_file: certs.server.key } },
      upstreams: [{ url: 'https://127.0.0.1:3443/mcp', tls: { insecure_skip_verify: true } }],
    }],
  ];
}

const BASELINE = write({ tools: [{ name: 'get_x', inputSchema: { type: 'object' } }] });

const MAX_LIMITS = {
  max_body_bytes: 1073741824, max_inspect_bytes: 1073741824, max_header_bytes: 1048576,
  max_sse_event_bytes: 1073741824, max_connections: 1000000, max_connections_per_client: 1000000,
  max_json_depth: 2000, max_batch: 100000, max_output_bytes: 1073741824, max_sessions: 1000000,
  max_session_pending: 100000, max_session_queue: 100000, max_inflight_per_session: 100000,
  max_streams_per_session: 100000,
};
const TIMEOUT_KEYS = ['connect_ms', 'request_ms', 'header_ms', 'body_ms', 'client_idle_ms',
  'upstream_idle_ms', 'sse_keepalive_ms', 'session_idle_ms', 'drain_ms'];
const each = (keys, v) => Object.fromEntries(keys.map((k) => [k, v]));
const QUICK_EXAMPLE = (() => {
  const md = fs.readFileSync(path.join(CONF, 'README-policy.md'), 'utf8');
  return JSON.parse(md.match(/## Quick example\s+```json\n([\s\S]*?)```/)[1]);
})();

const VALID_CONFIGS = [
  ['the smallest', C()],
  ['every number at its upper bound', C({
    $schema: '/usr/share/mcpwarden/mcpwarden.schema.json', workers: 64, yield_after_us: 1000000,
    timeouts: each(TIMEOUT_KEYS, 86400000), limits: MAX_LIMITS,
    admin: { listen: 'off', ring_size: 100000, max_streams: 1024, max_labels: 10000 },
    upstreams: [U({ timeouts: { connect_ms: 86400000, request_ms: 86400000 } })],
  })],
  ['every number at 0 where 0 is allowed', C({
    workers: 0, yield_after_us: 0, timeouts: each(TIMEOUT_KEYS, 0),
    limits: each(Object.keys(MAX_LIMITS), 0), admin: { listen: 'off', ring_size: 1, max_streams: 1, max_labels: 1 },
    upstreams: [U({ timeouts: { connect_ms: 0, request_ms: 0 } })],
  })],
  ['listeners: IPv6, any address, port 0', C({ listen: '[::1]:0', admin: { listen: ':0', token: 'tok-en.A~+/=' } })],
  ['a bare IPv6 client listener (the last colon starts the port)', C({ listen: '::1:8080' })],
  ['every upstream key', {
    upstreams: [
      U({ name: 'a', path: '/a/mcp', transport: 'sse', sse_path: '', messages_path: '/a/msg',
        headers: { Authorization: 'Bearer ${HOME}', 'X-Tab': 'a\tb', "X-!#$%&'*+.^_`|~": 'v' },
        contract: { mode: 'off', spec_only: true },
        validation: { arguments: 'fail', results: 'off', formats: true } }),
      { url: 'http://user:p%40ss@[::1]:3002/x/mcp?k=v', name: 'b', path: '/', transport: 'streamable_http',
        contract: { mode: 'fail', baseline: BASELINE } },
    ],
  }],
  ['clients, hosts, origins, log', C({
    clients: [{ name: 'ci', token: 'x'.repeat(16) }, { name: 'agent', token_env: 'MW_SCHEMA_TOKEN' }],
    allowed_hosts: ['localhost', 'mcp.example'], allowed_origins: ['https://app.example'],
    log: { level: 'debug', format: 'json' },
  })],
  ['admin: token off loopback, call log, redaction', C({
    admin: { listen: '0.0.0.0:0', token: 'a'.repeat(4096), log_calls: 'stdout',
      redact_keys: ['password', 'x'], redact_values: ['abc'] },
  })],
  ['a policy member: the quick example of README-policy.md', C({ policy: QUICK_EXAMPLE })],
];

const VALID_POLICIES = [
  ['empty', {}],
  ['"$schema" only', { $schema: './mcpwarden-policy.schema.json' }],
  ['the quick example', QUICK_EXAMPLE],
  ['every matcher and edge', {
    description: 'd', default: 'hide', dry_run: true, unknown_tools: 'rules', change_words: [],
    extra_change_words: ['order', 'delet*'],
    rules: [
      { name: 'x'.repeat(64), action: 'allow', match: {} },
      { name: 'A-z_0.9:x', action: 'log', dry_run: false, description: '', message: 'm'.repeat(512),
        match: { tool: '*', client: ['a', 'b?'], upstream: 'up', method: ['tools/call', 'resources/*'],
          annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
          name_words: ['wipe'],
          args: [{ pointer: '', exists: false }, { pointer: '/a~1b/0/~0', equals: { x: [1, null] } },
            { pointer: '/sql', matches: '(?i)^\\s*drop' }] } },
      { name: 'm', action: 'deny', match: { method: 'sampling/createMessage' } },
      { name: 'n', action: 'deny', match: { method: ['tools/*'], name_words: false } },
    ],
  }],
];

describe('broken files: refused by the schema and the loader, at the same place', () => {
  for (const [what, conf, where, loaderRe] of BROKEN_CONFIGS) {
    test(`config: ${what}`, () => {
      assert.equal(V.config(conf), false, `the schema accepts ${JSON.stringify(conf)}`);
      const locs = locations(V.config.errors);
      assert.ok(locs.some((l) => l.startsWith(where)), `schema errors at ${locs.join(', ')}, not ${where}`);
      const r = checkConfig(write(conf));
      assert.equal(r.code, 2, r.out);
      const re = loaderRe || new RegExp(`^${where.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[.:\\[ ]`, 'm');
      assert.match(r.out, re);
    });
  }
  for (const [what, pol, where] of BROKEN_POLICIES) {
    test(`policy: ${what}`, () => {
      assert.equal(V.policy(pol), false, `the schema accepts ${JSON.stringify(pol)}`);
      const locs = locations(V.policy.errors);
      assert.ok(locs.some((l) => l.startsWith(where)), `schema errors at ${locs.join(', ')}, not ${where}`);
      const inConf = `$.policy${where.slice(1)}`;
      const re = new RegExp(`^${inConf.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[.:\\[ ]`, 'm');
      for (const r of [checkPolicy(write(pol)), checkConfig(write(C({ policy: pol })))]) {
        assert.equal(r.code, 2, r.out);
        assert.match(r.out, re);
      }
    });
  }
});

describe('valid edge files: accepted by the schema and the loader', () => {
  const env = { MW_SCHEMA_TOKEN: 't'.repeat(20) };
  let certs;
  before(() => { certs = makeCerts(); });
  after(() => certs?.cleanup());
  const one = (what, conf) => {
    assert.ok(V.config(conf), `${what}: ${JSON.stringify(V.config.errors, null, 1)}`);
    const r = checkConfig(write(conf), env);
    assert.equal(r.code, 0, `${what}: ${r.out}`);
  };
  for (const [what, conf] of VALID_CONFIGS) test(`config: ${what}`, () => one(what, conf));
  test('config: TLS files on both sides', () => {
    for (const [what, conf] of certsConfigs(certs)) one(what, conf);
  });
  for (const [what, pol] of VALID_POLICIES) {
    test(`policy: ${what}`, () => {
      assert.ok(V.policy(pol), JSON.stringify(V.policy.errors, null, 1));
      for (const r of [checkPolicy(write(pol)), checkConfig(write(C({ policy: pol })))]) assert.equal(r.code, 0, r.out);
    });
  }
});

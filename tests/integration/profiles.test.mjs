// Client profiles (issue 21, item 5): `mcpwarden check --profile NAME[,NAME]`
// and the proxy's per-upstream contract.profiles add the rules of named
// clients to the contract. Three things are tried on the real binary:
//  - check --tools-file --profile on saved listings: exit codes, the codes
//    and rule "client" in --json, unknown names (exit 2 with the list);
//  - the proxy with contract.profiles in fail and filter mode against the
//    contract peer (and in report mode: the log line), its config refused
//    by the loader and the schema alike when a name is unknown;
//  - the sdk profile against the real TypeScript SDK client: every listing
//    the profile flags makes the SDK client's listTools() throw, every
//    listing it passes (without a core spec problem) does not, and through
//    mcpwarden in filter mode the flagged tool is withheld so the same SDK
//    client lists the rest.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, rmSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { freePort } from './lib/ports.mjs';
import { runWarden, startWarden, stopAll, REPO_ROOT } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout } from './lib/util.mjs';
import { startContractPeer, GOOD } from './peers/contract-peer.mjs';
import { startProfilePeer } from './peers/profile-peer.mjs';

const T = { timeout: 20000 };
const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-profiles-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));
let nfile = 0;
const file = (doc) => {
  const f = path.join(tmp, `l${nfile++}.json`);
  writeFileSync(f, JSON.stringify(doc));
  return f;
};
const show = (r) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
const check = async (args) => {
  const r = await runWarden(['check', ...args], { timeout: 10000 });
  return { ...r, json: () => JSON.parse(r.stdout) };
};
/** Every finding of a check --json report: [code, pointer, rule]. */
const findings = (j) => [...j.tools.flatMap((t) => [...t.problems, ...t.warnings]), ...j.problems, ...j.warnings];
const codes = (j) => findings(j).map((f) => f.code);

const D = 'A perfectly fine tool used by the profile tests';
/** Root anyOf with type object: valid, clean for the core, refused by Claude's API. */
const COMPOSED = (name) => ({
  name, description: D,
  inputSchema: {
    type: 'object',
    properties: { id: { type: 'string', description: 'by id' }, slug: { type: 'string', description: 'by slug' } },
    anyOf: [{ required: ['id'] }, { required: ['slug'] }],
  },
});
/** A boolean property schema: valid JSON Schema, refused by the SDK's list validation. */
const BOOLPROP = (name) => ({
  name, description: D,
  inputSchema: { type: 'object', properties: { refresh: true } },
});
/** What OpenAI strict mode takes. */
const STRICT = (name) => ({
  name, description: D,
  inputSchema: {
    type: 'object', additionalProperties: false, required: ['q'],
    properties: { q: { type: 'string', description: 'the query' } },
  },
});

after(async () => { await stopAll(); });

describe('check --profile on saved listings', () => {
  const listing = { tools: [GOOD('search'), COMPOSED('pick'), BOOLPROP('refreshy')] };

  test('without --profile the listing passes; each profile adds its own codes', T, async () => {
    const base = await check(['--tools-file', file(listing), '--json']);
    assert.equal(base.code, 0, show(base));
    assert.ok(!codes(base.json()).some((c) => c.startsWith('profile-')));

    const cc = await check(['--tools-file', file(listing), '--profile', 'claude-code', '--json']);
    assert.equal(cc.code, 1, show(cc));
    const ccj = cc.json();
    assert.deepEqual(ccj.tools[1].problems.map((p) => [p.code, p.pointer, p.rule]),
      [['profile-claude-code-root-composition', '/tools/1/inputSchema/anyOf', 'client']]);
    assert.deepEqual(ccj.tools[0].problems, []);
    assert.equal(ccj.passed, false);

    const sdk = await check(['--tools-file', file(listing), '--profile', 'sdk', '--json']);
    assert.equal(sdk.code, 1, show(sdk));
    assert.deepEqual(sdk.json().tools[2].problems.map((p) => [p.code, p.pointer]),
      [['profile-sdk-property-not-object', '/tools/2/inputSchema/properties/refresh']]);

    const both = await check(['--tools-file', file(listing), '--profile', 'claude-code,sdk', '--json']);
    assert.equal(both.code, 1, show(both));
    const got = codes(both.json());
    assert.ok(got.includes('profile-claude-code-root-composition') && got.includes('profile-sdk-property-not-object'), got.join());
    // Repeating the flag adds up too.
    const twice = await check(['--tools-file', file(listing), '--profile', 'sdk', '--profile', 'claude-code', '--json']);
    assert.deepEqual(codes(twice.json()).sort(), got.sort());
  });

  test('openai-strict and gemini: strict-shaped tools pass strict mode; Gemini refuses additionalProperties', T, async () => {
    const strict = { tools: [STRICT('lookup')] };
    const o = await check(['--tools-file', file(strict), '--profile', 'openai-strict', '--json']);
    assert.equal(o.code, 0, show(o));
    const loose = await check(['--tools-file', file({ tools: [GOOD('search')] }), '--profile', 'openai-strict', '--json']);
    assert.equal(loose.code, 1, show(loose));
    assert.deepEqual(codes(loose.json()).filter((c) => c.startsWith('profile-')).sort(),
      ['profile-openai-strict-additional-properties']);
    const dotted = await check(['--tools-file', file({ tools: [{ ...STRICT('a.b') }] }), '--profile', 'openai-strict', '--json']);
    assert.ok(codes(dotted.json()).includes('profile-openai-strict-name-format'));

    const g = await check(['--tools-file', file(strict), '--profile', 'gemini', '--json']);
    assert.equal(g.code, 1, show(g));
    assert.deepEqual(findings(g.json()).filter((f) => f.code.startsWith('profile-')).map((f) => [f.code, f.pointer]),
      [['profile-gemini-unsupported-keyword', '/tools/0/inputSchema/additionalProperties']]);
    const gOk = await check(['--tools-file', file({ tools: [GOOD('search')] }), '--profile', 'gemini']);
    assert.equal(gOk.code, 0, show(gOk));
  });

  test('a warning-level rule counts as a warning and does not fail', T, async () => {
    const long = { tools: [{ ...GOOD('x'), name: 'a_fairly_long_tool_name_for_claude_code_xx' }] };
    const r = await check(['--tools-file', file(long), '--profile', 'claude-code', '--json']);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(r.json().tools[0].warnings.map((w) => [w.code, w.rule]), [['profile-claude-code-name-long', 'client']]);
    const text = await check(['--tools-file', file(long), '--profile', 'claude-code']);
    assert.equal(text.code, 0, show(text));
    assert.match(text.stdout, /warning profile-claude-code-name-long \[client\] at \/tools\/0\/name/);
  });

  test('--spec-only keeps a profile problem; --lenient reports it and exits 0', T, async () => {
    const l = file({ tools: [COMPOSED('pick')] });
    const s = await check(['--tools-file', l, '--profile', 'claude-code', '--spec-only']);
    assert.equal(s.code, 1, show(s));
    const le = await check(['--tools-file', l, '--profile', 'claude-code', '--lenient']);
    assert.equal(le.code, 0, show(le));
    assert.match(le.stdout, /profile-claude-code-root-composition/);
  });

  test('an unknown profile name: exit 2 with the known names', T, async () => {
    for (const v of ['claude', 'sdk,gemni', '']) {
      const r = await check(['--tools-file', file(listing), '--profile', v]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, /claude-code, openai-strict, gemini, sdk/);
    }
    const none = await check(['--tools-file', file(listing), '--profile']);
    assert.equal(none.code, 2, show(none));
    const help = await check(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--profile NAME\[,NAME\]/);
  });
});

describe('the proxy with contract.profiles', () => {
  let peer;
  let warden;
  let conf;

  before(async () => {
    peer = await startContractPeer({
      listings: {
        composed: { pages: [[GOOD('search'), COMPOSED('pick')]] },
        boolprop: { pages: [[GOOD('search'), BOOLPROP('refreshy')]] },
      },
    });
    const wp = await freePort();
    const up = (name, listing, format, contract) => ({ name, path: `/${name}/mcp`, url: peer.url(listing, format), contract });
    conf = writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [
        up('cc-fail', 'composed', 'json', { mode: 'fail', profiles: ['claude-code'] }),
        up('cc-fail-sse', 'composed', 'sse', { mode: 'fail', profiles: ['claude-code', 'gemini'] }),
        up('plain-fail', 'composed', 'json', { mode: 'fail' }),
        up('cc-filter', 'composed', 'json', { mode: 'filter', profiles: ['claude-code'] }),
        up('cc-report', 'composed', 'json', { profiles: ['claude-code'] }),
        up('sdk-filter', 'boolprop', 'json', { mode: 'filter', profiles: ['sdk'] }),
        up('sdk-fail', 'boolprop', 'sse', { mode: 'fail', profiles: ['sdk'], spec_only: true }),
      ],
    });
    warden = await startWarden(wp, ['-c', conf, '--log-level', 'info']);
  }, T);

  after(async () => { await peer?.close(); });

  async function listOnce(url) {
    const s = await connectClient(url);
    try {
      return await withTimeout(s.client.listTools(), CALL_TIMEOUT, `tools/list ${url}`)
        .then((r) => ({ result: r, error: null }), (e) => ({ result: null, error: e }));
    } finally { await s.close(); }
  }

  for (const name of ['cc-fail', 'cc-fail-sse']) {
    test(`fail (${name}): a root anyOf is refused with -32003 naming the profile code`, T, async () => {
      const { error } = await listOnce(`${warden.base}/${name}/mcp`);
      assert.ok(error, 'expected tools/list to fail');
      assert.equal(error.code, -32003, error.message);
      assert.match(error.message, /profile-claude-code-root-composition \(tool "pick"\)/);
      const p = error.data.problems.find((x) => x.code === 'profile-claude-code-root-composition');
      assert.deepEqual([p.pointer, p.rule, p.tool], ['/tools/1/inputSchema/anyOf', 'client', 'pick']);
    });
  }

  test('fail without profiles: the same listing crosses untouched', T, async () => {
    const { result, error } = await listOnce(`${warden.base}/plain-fail/mcp`);
    assert.equal(error, null);
    assert.deepEqual(result.tools.map((t) => t.name), ['search', 'pick']);
  });

  test('filter: the tool the profile refuses is withheld', T, async () => {
    const { result, error } = await listOnce(`${warden.base}/cc-filter/mcp`);
    assert.equal(error, null);
    assert.deepEqual(result.tools.map((t) => t.name), ['search']);
  });

  test('report: forwarded, the log line names the profile code', T, async () => {
    const { result } = await listOnce(`${warden.base}/cc-report/mcp`);
    assert.deepEqual(result.tools.map((t) => t.name), ['search', 'pick']);
    await warden.proc.waitForStderr(/contract: upstream cc-report: tools\/list FAILED[^\n]*profile-claude-code-root-composition "pick"/);
  });

  test('sdk: direct, the SDK client throws; through filter mode it lists the rest', T, async () => {
    const direct = await listOnce(peer.url('boolprop', 'json'));
    assert.ok(direct.error, 'the SDK client refuses the listing itself');
    const { result, error } = await listOnce(`${warden.base}/sdk-filter/mcp`);
    assert.equal(error, null, error?.message);
    assert.deepEqual(result.tools.map((t) => t.name), ['search']);
    // fail + spec_only: the profile problem still fails (asked for by name).
    const f = await listOnce(`${warden.base}/sdk-fail/mcp`);
    assert.equal(f.error?.code, -32003, f.error?.message);
    assert.match(f.error.message, /profile-sdk-property-not-object/);
  });

  test('the config validates against the schema; an unknown name is refused by loader and schema', T, async () => {
    const readConf = (f) => JSON.parse(readFileSync(path.join(REPO_ROOT, 'conf', f), 'utf8'));
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    ajv.addSchema(readConf('mcpwarden-policy.schema.json'), 'mcpwarden-policy.schema.json');
    const validate = ajv.compile(readConf('mcpwarden.schema.json'));
    assert.ok(validate(JSON.parse(readFileSync(conf, 'utf8'))), JSON.stringify(validate.errors));
    const ok = await runWarden(['--check-config', '-c', conf]);
    assert.equal(ok.code, 0, show(ok));
    for (const [profiles, where] of [[['claude'], 'profiles[0]'], [['sdk', 'claude-code,sdk'], 'profiles[1]'], ['sdk', 'profiles']]) {
      const bad = { listen: '127.0.0.1:1', upstreams: [{ url: 'http://127.0.0.1:9/mcp', contract: { profiles } }] };
      assert.equal(validate(bad), false, `schema takes ${JSON.stringify(profiles)}`);
      const r = await runWarden(['--check-config', '-c', writeConfig(bad)]);
      assert.notEqual(r.code, 0, show(r));
      assert.match(r.stderr, new RegExp(`\\$\\.upstreams\\[0\\]\\.contract\\.${where.replace(/[[\]]/g, '\\$&')}: must be`));
      assert.match(r.stderr, /claude-code, openai-strict, gemini, sdk/);
    }
  });
});

describe('the sdk profile against the real SDK client', () => {
  const tool = (extra = {}, schema = { type: 'object', properties: { q: { type: 'string', description: 'q' } } }) =>
    ({ name: 't', description: D, inputSchema: schema, ...extra });
  // Each a whole tools/list result, served byte for byte.
  const CASES = {
    // flagged by the sdk profile
    boolProp: { tools: [BOOLPROP('t')] },
    boolOutProp: { tools: [tool({ outputSchema: { type: 'object', properties: { ok: false } } })] },
    outNoType: { tools: [tool({ outputSchema: { $id: 'r.v1', description: 'result' } })] },
    outArray: { tools: [tool({ outputSchema: { type: 'array', items: { type: 'string' } } })] },
    outNull: { tools: [tool({ outputSchema: null })] },
    titleNum: { tools: [tool({ title: 5 })] },
    descNull: { tools: [tool({ description: null })] },
    iconsObj: { tools: [tool({ icons: { src: 'a.png' } })] },
    iconTheme: { tools: [tool({ icons: [{ src: 'a.png', theme: 'blue' }] })] },
    iconNoSrc: { tools: [tool({ icons: [{ mimeType: 'image/png' }] })] },
    iconSizes: { tools: [tool({ icons: [{ src: 'a.png', sizes: '48x48' }] })] },
    annHint: { tools: [tool({ annotations: { readOnlyHint: 'yes' } })] },
    annNull: { tools: [tool({ annotations: null })] },
    annTitle: { tools: [tool({ annotations: { title: 7 } })] },
    execBad: { tools: [tool({ execution: { taskSupport: 'sometimes' } })] },
    execArr: { tools: [tool({ execution: [] })] },
    metaArr: { tools: [tool({ _meta: [1] })] },
    metaStr: { tools: [tool({ _meta: 'x' })] },
    cursorNull: { tools: [tool()], nextCursor: null },
    cursorNum: { tools: [tool()], nextCursor: 2 },
    pageMeta: { tools: [tool()], _meta: 'x' },
    // passed by the sdk profile
    clean: { tools: [tool()] },
    nestedBool: { tools: [tool({}, { type: 'object', properties: { o: { type: 'object', properties: { y: true }, additionalProperties: false } } })] },
    unknownMembers: { tools: [tool({ unknown: [1], x: null })], extra: 1 },
    allFields: {
      tools: [tool({
        title: 'T', icons: [{ src: 'a.png', mimeType: 'image/png', sizes: ['48x48'], theme: 'dark' }],
        annotations: { title: 'a', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
        execution: { taskSupport: 'optional' }, _meta: { k: [1] },
        outputSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
      })],
      _meta: { progressToken: 1 },
    },
    rootComposed: { tools: [COMPOSED('pick')] },
    refs: { tools: [tool({}, { type: 'object', $defs: { s: { type: 'string' } }, properties: { a: { $ref: '#/$defs/s', description: 'a' } }, additionalProperties: true })] },
    noDescription: { tools: [{ name: 'bare', inputSchema: { type: 'object' } }] },
    emptyProps: { tools: [tool({}, { type: 'object', properties: {} })] },
  };
  let peer;

  before(async () => { peer = await startProfilePeer(CASES); });
  after(async () => { await peer?.close(); });

  async function sdkList(url) {
    const client = new Client({ name: 'profiles-it', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await withTimeout(client.connect(transport), CALL_TIMEOUT, `connect ${url}`);
    try {
      await withTimeout(client.listTools(), CALL_TIMEOUT, `listTools ${url}`);
      return null;
    } catch (e) {
      return e;
    } finally {
      await withTimeout(client.close(), 3000, 'close').catch(() => {});
    }
  }

  test('flagged by the sdk profile <=> listTools() throws (core spec problems aside)', { timeout: 60000 }, async () => {
    let nflag = 0;
    let npass = 0;
    for (const [name, result] of Object.entries(CASES)) {
      const r = await check(['--tools-file', file(result), '--profile', 'sdk', '--json']);
      assert.ok(r.code === 0 || r.code === 1, `${name}: ${show(r)}`);
      const all = findings(r.json());
      const flagged = all.some((f) => f.code.startsWith('profile-sdk-'));
      const spec = all.some((f) => f.rule === 'spec');
      const thrown = await sdkList(peer.url(name));
      if (flagged) {
        nflag++;
        assert.ok(thrown, `${name}: the sdk profile flags it (${all.map((f) => f.code)}) but the SDK client took it`);
      } else if (!spec) {
        npass++;
        assert.equal(thrown, null, `${name}: the sdk profile passes it but the SDK client threw: ${thrown?.message}`);
      }
    }
    // Every case was judged one way or the other.
    assert.equal(nflag, 21);
    assert.equal(npass, 8);
    assert.ok(peer.calls('tools/list').length >= Object.keys(CASES).length);
  });
});

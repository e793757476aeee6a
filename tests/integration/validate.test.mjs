// The live contract (issue 19, items 3-5; proxy/hooks/hook_validate.h):
// every tools/call checked against the inputSchema its upstream last
// listed, every result of a tool with an outputSchema against that schema.
//
// Real peers: the official SDK clients 1.x (@modelcontextprotocol/sdk) and
// 2.x (@modelcontextprotocol/client), each over Streamable HTTP and over
// legacy HTTP+SSE, in two eras: a 2025-11-25 session (what both SDKs ask
// for) and a 2025-06-18 one (the client's initialize asks for 2025-06-18,
// rewritten in its fetch, which the servers accept: the SDK then speaks
// 2025-06-18, MCP-Protocol-Version header included). Upstreams: the real
// server-everything, and tests/integration/peers/validate-peer.mjs (SDK
// server with outputSchema tools: one conforming, one drifting).
//
// One mcpwarden, one upstream per mode (the section is per upstream):
//   /ev   server-everything, validation absent (report, report)
//   /evf  server-everything, arguments: fail
//   /p    validate-peer, absent (report)
//   /pf   validate-peer, arguments: fail, results: fail
//   /po   validate-peer, arguments: off, results: off
//
// The SDK clients check structuredContent against the outputSchema
// themselves (1.x and 2.x, once they listed the tools): a drifting result
// or one without structuredContent makes them throw before the test could
// see what mcpwarden forwarded. Those results are asserted with a raw HTTP
// client (lib/http.mjs) and a raw legacy SSE client (translate-util.mjs).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport as Sse1 } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport as Http1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as Client2, StreamableHTTPClientTransport as Http2, SSEClientTransport as Sse2 } from '@modelcontextprotocol/client';
import { freePort } from './lib/ports.mjs';
import { startEverything, stopAll, waitForStderrSince } from './lib/procs.mjs';
import { startAdminWarden, getCalls, waitForCalls } from './lib/admin-util.mjs';
import { postJson } from './lib/http.mjs';
import { legacyStream } from './lib/translate-util.mjs';
import { withTimeout, waitFor } from './lib/util.mjs';
import { startValidatePeer } from './peers/validate-peer.mjs';

const T = { timeout: 60000 };
const CALL_MS = 15000;
const ERAS = ['2025-06-18', '2025-11-25'];
const CLIENTS = [
  { sdk: 1, transport: 'streamable' }, { sdk: 1, transport: 'sse' },
  { sdk: 2, transport: 'streamable' }, { sdk: 2, transport: 'sse' },
];

let ev, peer, w, logFile;
let tagN = 0;
const tag = (what) => `${what}-${process.pid}-${++tagN}`;

before(async () => {
  ev = await startEverything(await freePort());
  peer = await startValidatePeer();
  logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-validate-')), 'calls.jsonl');
  w = await startAdminWarden({
    upstreams: [
      { name: 'ev', url: ev.url, path: '/ev/mcp', transport: 'streamable_http' },
      { name: 'evf', url: ev.url, path: '/evf/mcp', transport: 'streamable_http', validation: { arguments: 'fail' } },
      { name: 'p', url: peer.url, path: '/p/mcp', transport: 'streamable_http' },
      { name: 'pf', url: peer.url, path: '/pf/mcp', transport: 'streamable_http',
        validation: { arguments: 'fail', results: 'fail' } },
      { name: 'po', url: peer.url, path: '/po/mcp', transport: 'streamable_http',
        validation: { arguments: 'off', results: 'off', formats: true } },
    ],
    admin: { log_calls: logFile },
  });
}, T);

after(async () => { await peer?.close(); await stopAll(); });

/** A fetch that makes the client's initialize ask for `era`. */
function eraFetch(era) {
  return async (input, init = {}) => {
    if (era !== '2025-11-25' && typeof init.body === 'string' && init.body.includes('"initialize"')) {
      const m = JSON.parse(init.body);
      if (m.method === 'initialize') {
        m.params.protocolVersion = era;
        init = { ...init, body: JSON.stringify(m) };
      }
    }
    return fetch(input, init);
  };
}

/** An SDK client of kind {sdk, transport} on upstream prefix `up` in `era`. */
async function connect({ sdk, transport }, up, era) {
  const url = new URL(`${w.base}/${up}/${transport === 'sse' ? 'sse' : 'mcp'}`);
  const fetchFn = eraFetch(era);
  let client, t;
  if (sdk === 1) {
    client = new Client1({ name: `validate-sdk1-${transport}`, version: '1.0.0' }, { capabilities: {} });
    t = transport === 'sse' ? new Sse1(url, { fetch: fetchFn }) : new Http1(url, { fetch: fetchFn });
  } else {
    client = new Client2({ name: `validate-sdk2-${transport}`, version: '2.0.0' },
      { capabilities: {}, versionNegotiation: { mode: 'legacy' } });
    t = transport === 'sse' ? new Sse2(url, { fetch: fetchFn }) : new Http2(url, { fetch: fetchFn });
  }
  await withTimeout(client.connect(t), CALL_MS, `sdk ${sdk} ${transport} connect to ${url}`);
  return {
    client,
    call: (name, args) => withTimeout(
      client.callTool({ name, arguments: args }, undefined, { timeout: CALL_MS }), CALL_MS + 1000, `call ${name}`),
    list: () => withTimeout(client.listTools(), CALL_MS, 'tools/list'),
    close: () => withTimeout(client.close(), 3000, 'close').catch(() => {}),
  };
}

/** The one client record of a tools/call whose arguments hold `marker`. */
async function recordOf(marker) {
  const r = await waitForCalls(w.admin, (cs) => {
    const c = cs.filter((x) => x.method === 'tools/call' && x.from === 'client' &&
      (x.arguments ?? '').includes(marker) && x.outcome);
    return c.length ? c : null;
  }, { timeout: 5000, what: `the record of ${marker}` });
  assert.equal(r.length, 1, JSON.stringify(r, null, 1));
  return r[0];
}

/** JSON-RPC messages of a reply, JSON or SSE. */
function messagesOf(res) {
  if (/^application\/json/.test(res.headers['content-type'] ?? '')) return [res.json()].flat();
  return res.text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
}

/** A raw Streamable HTTP session on upstream prefix `up` in `era`. */
async function rawSession(up, era) {
  const url = `${w.base}/${up}/mcp`;
  const init = await postJson(url, { jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: era, capabilities: {}, clientInfo: { name: 'raw-validate', version: '1' } } });
  assert.equal(init.status, 200, init.text);
  const sid = init.headers['mcp-session-id'];
  const headers = { 'mcp-session-id': sid, 'mcp-protocol-version': era };
  await postJson(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers });
  let id = 1;
  const rpc = async (method, params) => {
    const myId = id++;
    const res = await postJson(url, { jsonrpc: '2.0', id: myId, method, params }, { headers, timeout: CALL_MS });
    assert.equal(res.status, 200, res.text);
    const m = messagesOf(res).find((x) => x.id === myId);
    assert.ok(m, res.text);
    return m;
  };
  await rpc('tools/list', {});
  return { rpc, call: (name, args) => rpc('tools/call', { name, arguments: args }) };
}

const codes = (rec) => (rec.findings ?? []).map((f) => f.code);

for (const era of ERAS) {
  for (const kind of CLIENTS) {
    describe(`SDK ${kind.sdk}.x over ${kind.transport}, ${era}`, () => {
      test('server-everything, report: a valid call has no findings; an invalid one is forwarded and recorded', T, async () => {
        const s = await connect(kind, 'ev', era);
        try {
          await s.list();
          const ok = tag('ok');
          const r = await s.call('echo', { message: ok });
          assert.equal(r.content[0].text, `Echo: ${ok}`);
          const rec = await recordOf(ok);
          assert.equal(rec.findings, undefined, JSON.stringify(rec));
          assert.equal(rec.outcome, 'ok');
          assert.equal(rec.protocol, era, 'the session speaks the era');

          const bad = tag('bad');
          // server-everything answers it its own way (an error, or isError)
          await s.call('echo', { message: 42, note: bad }).catch((e) => e);
          const brec = await recordOf(bad);
          assert.notEqual(brec.outcome, 'blocked', 'report forwards');
          assert.equal(brec.rule, null);
          assert.deepEqual(codes(brec), ['arguments-invalid'], JSON.stringify(brec));
          const f = brec.findings[0];
          assert.equal(f.kind, 'arguments');
          assert.equal(f.instance, '/message');
          assert.equal(f.keyword, 'type');
          assert.match(f.schema, /\/properties\/message\/type$/);
          assert.match(f.message, /string/);
        } finally { await s.close(); }
      });

      test('server-everything, arguments: fail: not forwarded, answered as the era says', T, async () => {
        const s = await connect(kind, 'evf', era);
        try {
          await s.list();
          const bad = tag('refused');
          const got = await s.call('echo', { message: 42, note: bad }).then((r) => ({ r }), (e) => ({ e }));
          if (era === '2025-11-25') {
            // a tool result the model can read: isError, each violation
            assert.ok(got.r, `expected a result, got ${got.e}`);
            assert.equal(got.r.isError, true);
            assert.match(got.r.content[0].text, /Invalid arguments for tool echo/);
            assert.ok(got.r.content.some((c) => /\/message: .*string/.test(c.text)), JSON.stringify(got.r));
          } else {
            assert.ok(got.e, `expected a JSON-RPC error, got ${JSON.stringify(got.r)}`);
            assert.equal(got.e.code, -32602);
            assert.match(got.e.message, /Invalid arguments for tool echo/);
          }
          const rec = await recordOf(bad);
          assert.equal(rec.outcome, 'blocked');
          assert.equal(rec.rule, 'validate:arguments');
          assert.deepEqual(codes(rec), ['arguments-invalid']);
          // a valid call passes
          const ok = tag('fine');
          const r = await s.call('echo', { message: ok });
          assert.equal(r.content[0].text, `Echo: ${ok}`);
        } finally { await s.close(); }
      });

      test('SDK peer with outputSchema tools: report, fail and off', T, async () => {
        for (const up of ['p', 'pf', 'po']) {
          const s = await connect(kind, up, era);
          try {
            const listed = await s.list();
            assert.ok(listed.tools.some((t) => t.name === 'add' && t.outputSchema));
            // a conforming result: the SDK checked it too
            const a = 1000 + (++tagN);
            const r = await s.call('add', { a, b: 1 });
            assert.deepEqual(r.structuredContent, { sum: a + 1 });
            // an isError result is not held to the outputSchema, even in fail mode
            const rf = await s.call('refuse', {});
            assert.equal(rf.isError, true);
            assert.equal(rf.content[0].text, 'no weather today');

            const before = peer.calls.length;
            const bad = tag(`extra-${up}`);
            const got = await s.call('add', { a: 1, b: 2, extra: bad }).then((x) => ({ r: x }), (e) => ({ e }));
            const rec = await recordOf(bad);
            if (up === 'pf') {
              assert.equal(peer.calls.length, before, 'not forwarded');
              assert.equal(rec.outcome, 'blocked');
              if (era === '2025-11-25') assert.equal(got.r?.isError, true, JSON.stringify(got));
              else assert.equal(got.e?.code, -32602, String(got.e));
              assert.deepEqual(codes(rec), ['arguments-invalid']);
              assert.equal(rec.findings[0].keyword, 'additionalProperties');
            } else {
              assert.equal(peer.calls.length, before + 1, 'forwarded');
              assert.deepEqual(got.r?.structuredContent, { sum: 3 });
              assert.equal(rec.outcome, 'ok');
              if (up === 'p') assert.deepEqual(codes(rec), ['arguments-invalid']);
              else assert.equal(rec.findings, undefined, 'off: nothing');
            }
          } finally { await s.close(); }
        }
      });
    });
  }

  describe(`results that leave the outputSchema (raw client: the SDKs would throw first), ${era}`, () => {
    test('report: forwarded unchanged, the record names each violation', T, async () => {
      const s = await rawSession('p', era);
      const city = tag('city');
      const m = await s.call('drift', { city });
      assert.deepEqual(m.result.structuredContent, { temp: 'warm', unit: 'K' });
      const rec = await recordOf(city);
      assert.equal(rec.outcome, 'ok');
      const byInst = Object.fromEntries(rec.findings.map((f) => [f.instance, f]));
      assert.equal(byInst['/temp'].code, 'result-invalid');
      assert.equal(byInst['/temp'].kind, 'result');
      assert.equal(byInst['/temp'].keyword, 'type');
      assert.equal(byInst['/temp'].schema, '/properties/temp/type');
      assert.equal(byInst['/unit'].keyword, 'enum');
      // text only where structuredContent is due
      const note = tag('bare');
      const b = await s.call('bare', { note });
      assert.equal(b.result.content[0].text, '21 C');
      const brec = await recordOf(note);
      assert.deepEqual(codes(brec), ['structured-content-missing']);
    });

    test('results: fail: the client gets -32004 naming the violations, never a rewritten result', T, async () => {
      const s = await rawSession('pf', era);
      const city = tag('city');
      const m = await s.call('drift', { city });
      assert.equal(m.result, undefined);
      assert.equal(m.error.code, -32004);
      assert.match(m.error.message, /outputSchema of tool drift/);
      assert.match(m.error.message, /\/temp/);
      assert.equal(m.error.data.violations.length, 2);
      const rec = await recordOf(city);
      assert.equal(rec.outcome, 'blocked');
      assert.equal(rec.rule, 'validate:result');
      assert.equal(rec.error_code, -32004);
      assert.deepEqual(codes(rec).sort(), ['result-invalid', 'result-invalid']);
      const b = await s.call('bare', {});
      assert.equal(b.error.code, -32004);
      // a conforming result passes
      const ok = await s.call('add', { a: 2, b: 2 });
      assert.deepEqual(ok.result.structuredContent, { sum: 4 });
    });

    test('off: nothing checked, nothing recorded', T, async () => {
      const s = await rawSession('po', era);
      const city = tag('city');
      const m = await s.call('drift', { city });
      assert.deepEqual(m.result.structuredContent, { temp: 'warm', unit: 'K' });
      const rec = await recordOf(city);
      assert.equal(rec.findings, undefined);
    });
  });
}

describe('a legacy SSE client: results on its stream are checked as they come', () => {
  test('report and fail on the legacy face: drift recorded, -32004 in fail mode', T, async () => {
    for (const up of ['p', 'pf']) {
      const l = await legacyStream(`${w.base}/${up}/sse`);
      try {
        assert.equal(l.status, 200);
        await l.post({ jsonrpc: '2.0', id: 1, method: 'initialize',
          params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw-legacy', version: '1' } } });
        await l.waitMessage((m) => m.id === 1);
        await l.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
        await l.post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
        await l.waitMessage((m) => m.id === 2);
        const city = tag(`legacy-${up}`);
        await l.post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'drift', arguments: { city } } });
        const m = await l.waitMessage((x) => x.id === 3, CALL_MS);
        const rec = await recordOf(city);
        assert.ok(codes(rec).includes('result-invalid'), JSON.stringify(rec));
        if (up === 'pf') {
          assert.equal(m.error?.code, -32004, JSON.stringify(m));
          assert.equal(rec.outcome, 'blocked');
        } else {
          assert.equal(m.result.structuredContent.temp, 'warm');
        }
      } finally { l.st.abort(); }
    }
  });
});

describe('where the findings show', () => {
  test('the call log holds the records with their findings', T, async () => {
    const lines = await waitFor(() => {
      const text = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '';
      const recs = text.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((r) => r.findings);
      return recs.length >= 10 ? recs : null;
    }, { timeout: 5000, what: 'records with findings in the call log' });
    const f = lines.flatMap((r) => r.findings);
    for (const code of ['arguments-invalid', 'result-invalid', 'structured-content-missing']) {
      assert.ok(f.some((x) => x.code === code), `${code} in the call log`);
    }
    for (const x of f) {
      assert.deepEqual(Object.keys(x).sort(), ['code', 'instance', 'keyword', 'kind', 'message', 'schema']);
    }
    // off upstream: never a finding
    assert.deepEqual(lines.filter((r) => r.upstream === 'po'), []);
  });

  test('one log line per code and tool at most every 10 s, however many findings', T, async () => {
    const s = await rawSession('p', '2025-11-25');
    const since = w.proc.stderr.length;
    for (let i = 0; i < 5; i++) await s.call('add', { a: 1, b: 2, flood: i });
    const flood = await recordOf('"flood":4');
    assert.deepEqual(codes(flood), ['arguments-invalid']);
    // the first lines of this suite were logged already: within 10 s, the
    // five calls above add none for upstream p, tool add
    const lines = w.proc.stderr.slice(since).split('\n').filter((l) => /validate: upstream p tool add:/.test(l));
    assert.ok(lines.length <= 1, lines.join('\n'));
  });

  test('a call before any listing is recorded as such, never refused', T, async () => {
    // A fresh process: no upstream listed anything yet.
    const w2 = await startAdminWarden({
      upstreams: [{ name: 'pf2', url: peer.url, path: '/mcp', transport: 'streamable_http',
        validation: { arguments: 'fail' } }],
    });
    const url = `${w2.base}/mcp`;
    const init = await postJson(url, { jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const headers = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
    const since = w2.proc.stderr.length;
    const res = await postJson(url, { jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { name: 'add', arguments: { a: 'x' } } }, { headers });
    const m = messagesOf(res).find((x) => x.id === 1);
    assert.equal(m.result.structuredContent.sum, null, 'forwarded: the peer answered');
    await waitForStderrSince(w2.proc, since, /validate: upstream pf2 tool add: no-listing/);
    const calls = (await getCalls(w2.admin)).calls.filter((c) => c.tool === 'add');
    assert.deepEqual(codes(calls[0]), ['no-listing']);
  });
});

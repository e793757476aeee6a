// What the recorder and the admin endpoint show (issue 17, "secrets in the
// admin endpoint" and "records that say the wrong thing"):
//   - every credential mcpwarden sends upstream (the URL's user and
//     password, the Basic value made of them, configured header values
//     after ${ENV} expansion, a bearer token, their base64) is masked in
//     /calls, /calls/stream and the call log, while the client still gets
//     the upstream's answer byte for byte;
//   - a log rule's and a dry run's decision name their rule in the record;
//     a contract refusal is a blocked record naming contract:<mode>;
//   - a Streamable server's 405 to the GET stream makes no record;
//   - the policy counters of conf/README-policy.md are on /metrics.
// The upstream is a small scripted server of this file: its one trick is a
// tool whose result is the request headers it received, as text lines, so
// that no secret-looking JSON key hides them by accident.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stopAll } from './lib/procs.mjs';
import { connectClient } from './lib/mcp.mjs';
import { request } from './lib/http.mjs';
import {
  startAdminWarden, getCalls, waitForCalls, openCallStream, promtoolCheck, metricValue, adminGet,
} from './lib/admin-util.mjs';
import { waitFor } from './lib/util.mjs';

const T = { timeout: 30000 };

const USER = 'rx-user-41';
const PASS = 'rx-pass-9137';
const BASIC_B64 = Buffer.from(`${USER}:${PASS}`).toString('base64');
const API_KEY = 'rx-api-key-5522-zq';
const TOKEN = 'rx-bearer-token-7781';
const SECRETS = {
  user: USER,
  password: PASS,
  'user:password': `${USER}:${PASS}`,
  'Basic value': BASIC_B64,
  'X-Api-Key': API_KEY,
  'X-Api-Key base64': Buffer.from(API_KEY).toString('base64'),
  'bearer token': TOKEN,
  'bearer token base64': Buffer.from(TOKEN).toString('base64'),
};

function assertNoSecrets(text, where) {
  for (const [what, s] of Object.entries(SECRETS)) {
    assert.ok(!text.includes(s), `${where} shows the ${what} (${s})`);
  }
}

const GET_405_BODY = JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null });

/**
 * A Streamable HTTP MCP server in JSON mode. Tools: `headers` (read-only:
 * answers the request's headers as "name: value" lines), `plain`
 * (read-only) and `danger` (unannotated, so destructive). GET gets 405
 * with a JSON-RPC error body, as the SDK's servers without a GET stream
 * answer. nodesc: the tools come without descriptions (a contract
 * problem). keyTool: one more tool, undescribed, named after the X-Api-Key
 * the listing request carried.
 */
async function startEchoPeer({ nodesc = false, keyTool = false } = {}) {
  const got = [];
  const tools = [
    { name: 'headers', description: 'the request headers', annotations: { readOnlyHint: true }, inputSchema: { type: 'object' } },
    { name: 'plain', description: 'says hi', annotations: { readOnlyHint: true }, inputSchema: { type: 'object' } },
    { name: 'danger', description: 'does harm', inputSchema: { type: 'object' } },
  ].map((t) => (nodesc ? { name: t.name, annotations: t.annotations, inputSchema: t.inputSchema } : t));
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      got.push({ method: req.method, headers: req.headers });
      if (req.method === 'GET') {
        res.writeHead(405, { allow: 'POST, DELETE', 'content-type': 'application/json', 'content-length': Buffer.byteLength(GET_405_BODY) });
        res.end(GET_405_BODY);
        return;
      }
      let msg = null;
      try { msg = JSON.parse(body); } catch { /* not JSON */ }
      if (!msg || typeof msg !== 'object' || !('id' in msg) || !msg.method) {
        res.writeHead(202);
        res.end();
        return;
      }
      let result;
      if (msg.method === 'initialize') {
        result = { protocolVersion: msg.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'echo-peer', version: '0' } };
      } else if (msg.method === 'tools/list') {
        // keyTool: one more tool, named after the X-Api-Key received
        result = { tools: keyTool ? [...tools, { name: `key-${req.headers['x-api-key']}`, inputSchema: { type: 'object' } }] : tools };
      } else if (msg.method === 'tools/call' && msg.params?.name === 'headers') {
        const lines = Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`).join('\n');
        result = { content: [{ type: 'text', text: lines }] };
      } else {
        result = { content: [{ type: 'text', text: `ran ${msg.params?.name ?? msg.method}` }] };
      }
      const reply = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result });
      const h = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) };
      if (msg.method === 'initialize') h['mcp-session-id'] = `echo-${Math.random().toString(36).slice(2)}`;
      res.writeHead(200, h);
      res.end(reply);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  return { url: `http://127.0.0.1:${port}/mcp`, got, close: () => new Promise((r) => server.close(r)) };
}

let peer;
let badPeer;
let w;
let callLog;
before(async () => {
  peer = await startEchoPeer();
  badPeer = await startEchoPeer({ nodesc: true });
  process.env.RX_API_KEY = API_KEY;
  process.env.RX_TOKEN = TOKEN;
  const withUser = new URL(peer.url);
  withUser.username = USER;
  withUser.password = PASS;
  callLog = path.join(os.tmpdir(), `mcpwarden-records-${process.pid}.jsonl`);
  w = await startAdminWarden({
    upstreams: [
      { name: 'basic', path: '/mcp', url: withUser.toString(), headers: { 'X-Api-Key': '${RX_API_KEY}' } },
      { name: 'bearer', path: '/b/mcp', url: peer.url, headers: { Authorization: 'Bearer ${RX_TOKEN}' } },
      { name: 'strict', path: '/c/mcp', url: badPeer.url, contract: { mode: 'fail' } },
    ],
    admin: { log_calls: callLog },
    extra: {
      policy: {
        default: 'allow',
        unknown_tools: 'rules',
        rules: [
          { name: 'watch-plain', match: { tool: 'plain' }, action: 'log' },
          { name: 'no-danger', match: { tool: 'danger' }, action: 'deny', dry_run: true },
          { name: 'headers-on-bearer', match: { tool: 'headers', upstream: 'bearer' }, action: 'allow' },
        ],
      },
    },
  });
}, { timeout: 20000 });
after(async () => {
  await stopAll();
  await peer?.close();
  await badPeer?.close();
});

describe('records: credentials sent upstream never show', () => {
  test('an upstream echoing the Authorization and X-Api-Key it got: the client sees them, /calls, /calls/stream and the call log do not', T, async () => {
    const st = await openCallStream(w.admin);
    const a = await connectClient(w.url);
    const b = await connectClient(`${w.base}/b/mcp`);
    try {
      const ra = await a.client.callTool({ name: 'headers', arguments: {} });
      const rb = await b.client.callTool({ name: 'headers', arguments: {} });
      // mcpwarden did send them, and the client got the echo unchanged
      const ta = ra.content[0].text;
      const tb = rb.content[0].text;
      assert.match(ta, new RegExp(`^authorization: Basic ${BASIC_B64.replace(/[+/=]/g, '\\$&')}$`, 'm'));
      assert.match(ta, new RegExp(`^x-api-key: ${API_KEY}$`, 'm'));
      assert.match(tb, new RegExp(`^authorization: Bearer ${TOKEN}$`, 'm'));

      const recs = await waitForCalls(w.admin, (calls) => {
        const hs = calls.filter((c) => c.tool === 'headers' && c.outcome === 'ok');
        return hs.length >= 2 ? hs : null;
      });
      const calls = await adminGet(w.admin, '/calls?limit=1000');
      assertNoSecrets(calls.text, '/calls');
      for (const r of recs) {
        assert.ok(r.result_preview.includes('authorization: '), `the preview shows the echo: ${r.result_preview}`);
        assert.ok(r.result_preview.includes('\u2022\u2022\u2022\u2022'), 'and masks what it carried');
      }
      const streamed = await st.waitRecords((rs) => rs.filter((r) => r.tool === 'headers').length >= 2 && rs);
      assertNoSecrets(JSON.stringify(streamed), '/calls/stream');
      assertNoSecrets(st.text(), '/calls/stream (raw)');
      const log = await waitFor(() => {
        const t = readFileSync(callLog, 'utf8');
        return (t.match(/"tool":"headers"/g) ?? []).length >= 2 && t;
      }, { what: 'both echo records in the call log' });
      assertNoSecrets(log, 'the call log');
    } finally {
      st.abort();
      await a.close();
      await b.close();
    }
  });

  test('a header value a reload brings in is masked from the first call that sends it', T, async () => {
    const FIRST = 'rx-reload-key-first-1';
    const SECOND = 'rx-reload-key-second-2';
    const r = await startAdminWarden({
      upstreams: [{ name: 'r', url: peer.url, headers: { 'X-Api-Key': FIRST } }],
      extra: { log: { level: 'info', format: 'text' } },
    });
    const conf = JSON.parse(readFileSync(r.conf, 'utf8'));
    conf.upstreams[0].headers['X-Api-Key'] = SECOND;
    writeFileSync(r.conf, JSON.stringify(conf));
    r.proc.child.kill('SIGHUP');
    await r.proc.waitForStderr(/SIGHUP: configuration reloaded/);
    const s = await connectClient(r.url);
    try {
      const got = await s.client.callTool({ name: 'headers', arguments: { after: 'reload' } });
      assert.match(got.content[0].text, new RegExp(`^x-api-key: ${SECOND}$`, 'm'), 'the reload applied');
      await waitForCalls(r.admin, (calls) => calls.some((c) => c.arguments?.includes('reload')));
      const calls = await adminGet(r.admin, '/calls?limit=1000');
      assert.ok(!calls.text.includes(SECOND), `/calls shows the reloaded header value: ${calls.text}`);
      assert.ok(!calls.text.includes(FIRST));
    } finally {
      await s.close();
    }
  });

  test('/contract masks a credential the upstream put in a tool name', T, async () => {
    const kp = await startEchoPeer({ keyTool: true });
    const r = await startAdminWarden({
      upstreams: [{ name: 'k', url: kp.url, headers: { 'X-Api-Key': '${RX_API_KEY}' }, contract: { mode: 'report' } }],
    });
    const s = await connectClient(r.url);
    try {
      const listed = await s.client.listTools();
      assert.ok(listed.tools.some((t) => t.name === `key-${API_KEY}`), 'the client sees the tool as listed');
      const c = await waitFor(async () => {
        const x = await adminGet(r.admin, '/contract');
        return x.json().upstreams[0].report && x;
      }, { what: 'a contract report' });
      assert.match(c.text, /key-\u2022|key-•/, `the finding names the tool, masked: ${c.text}`);
      assertNoSecrets(c.text, '/contract');
    } finally {
      await s.close();
      await kp.close();
    }
  });
});

describe('records: what decided a call', () => {
  test('a log rule and a dry run name their rule; a contract refusal is blocked by contract:fail', T, async () => {
    const s = await connectClient(w.url);
    const c = await connectClient(`${w.base}/c/mcp`);
    try {
      await s.client.listTools();
      const plain = await s.client.callTool({ name: 'plain', arguments: {} });
      assert.equal(plain.content[0].text, 'ran plain');
      const danger = await s.client.callTool({ name: 'danger', arguments: {} });
      assert.equal(danger.content[0].text, 'ran danger', 'a dry run forwards');
      await assert.rejects(c.client.listTools(), /failed the contract/);

      const [logged, dry, refused] = await waitForCalls(w.admin, (calls) => {
        const l = calls.find((x) => x.tool === 'plain');
        const d = calls.find((x) => x.tool === 'danger');
        const r = calls.find((x) => x.upstream === 'strict' && x.method === 'tools/list');
        return l && d && r ? [l, d, r] : null;
      });
      assert.equal(logged.outcome, 'ok');
      assert.equal(logged.rule, 'watch-plain');
      assert.equal(dry.outcome, 'ok');
      assert.equal(dry.rule, 'dry-run:no-danger');
      assert.equal(refused.outcome, 'blocked', JSON.stringify(refused));
      assert.equal(refused.rule, 'contract:fail');
      assert.equal(refused.error_code, -32003);
      assert.equal(refused.modified, true);
    } finally {
      await s.close();
      await c.close();
    }
  });

  test('a 405 to the GET stream makes no record', T, async () => {
    const before405 = peer.got.filter((g) => g.method === 'GET').length;
    const s = await connectClient(w.url);
    try {
      // The SDK opens the GET stream after initialize; the server says 405.
      await waitFor(() => peer.got.filter((g) => g.method === 'GET').length > before405, { what: 'the SDK GET stream' });
      const r = await request(w.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'echo-x' } });
      assert.equal(r.status, 405);
      assert.equal(r.text, GET_405_BODY, 'the client gets the server\'s 405 as it was');
      // A later call's record is there: anything the GETs made would be too.
      await s.client.callTool({ name: 'plain', arguments: { after: 'the GETs' } });
      const calls = await waitForCalls(w.admin, (cs) => cs.some((x) => x.arguments?.includes('the GETs')) && cs);
      const stray = calls.filter((x) => x.method === null);
      assert.deepEqual(stray, [], 'records without a method');
    } finally {
      await s.close();
    }
  });
});

describe('records: the policy counters on /metrics', () => {
  test('allow, deny (dry run), log decisions and per-rule counts, promtool-clean', T, async () => {
    const s = await connectClient(w.url);
    try {
      await s.client.listTools();
      await s.client.callTool({ name: 'headers', arguments: {} }); // the default: allow
      await s.client.callTool({ name: 'plain', arguments: {} });   // log
      await s.client.callTool({ name: 'danger', arguments: {} });  // dry-run deny
      const m = await waitFor(async () => {
        const r = await adminGet(w.admin, '/metrics');
        return metricValue(r.text, 'mcpwarden_policy_dry_run_total') >= 1 && r.text;
      }, { what: 'the policy counters' });
      const check = await promtoolCheck(m);
      assert.equal(check.code, 0, `promtool: ${check.stdout}${check.stderr}`);
      assert.match(m, /^# TYPE mcpwarden_policy_allowed_total counter$/m);
      for (const n of ['allowed', 'logged', 'dry_run', 'denied', 'unknown_tool', 'tools_hidden', 'listings',
        'tools_over_cap', 'reloads', 'reload_failures']) {
        assert.notEqual(metricValue(m, `mcpwarden_policy_${n}_total`), undefined, `mcpwarden_policy_${n}_total`);
      }
      assert.ok(metricValue(m, 'mcpwarden_policy_allowed_total') >= 1);
      assert.ok(metricValue(m, 'mcpwarden_policy_logged_total') >= 2, 'the log rule and the dry run');
      assert.equal(metricValue(m, 'mcpwarden_policy_denied_total'), 0, 'a dry run denies nothing');
      assert.ok(metricValue(m, 'mcpwarden_policy_listings_total') >= 1);
      assert.ok(metricValue(m, 'mcpwarden_policy_rule_matched_total', { rule: 'watch-plain', action: 'log' }) >= 1);
      assert.ok(metricValue(m, 'mcpwarden_policy_rule_dry_run_total', { rule: 'no-danger' }) >= 1);
      assert.ok(metricValue(m, 'mcpwarden_policy_rule_allowed_total', { rule: 'default' }) >= 1);
      assert.equal(metricValue(m, 'mcpwarden_policy_active'), 1);
    } finally {
      await s.close();
    }
  });
});

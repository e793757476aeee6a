// Issue 20, item 2: unchanged listings with hide rules.
//
// A policy that hides tools judges each listing's bytes; when the same
// bytes come again under the same policy (and, for a rule naming clients,
// for the same client), it hides the same tools. So an unchanged listing
// takes the fast path (list-fastpath.test.mjs) even then: the reply sent
// is, byte for byte, the one the parsed path sent for those bytes, with
// the request's own id, and the policy's counters move as they did
// (proxy/hooks/hook_policy.c, kept listings); the call recorder records
// the listing sent, as it does a parsed one. /metrics counts those
// replies (mcpwarden_fast_listings_total).
//
// Scripted upstream: peers/reply-peer.mjs (X-Tools tools with X-Pad bytes
// of description, the same bytes every time, the request's id echoed).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { stop, stopAll, reloadWarden } from './lib/procs.mjs';
import { postJson, request } from './lib/http.mjs';
import { startAdminWarden, waitForCalls } from './lib/admin-util.mjs';
import { startReplyPeer } from './peers/reply-peer.mjs';

const T = { timeout: 20000 };
const BIG = { 'x-tools': '60', 'x-pad': '400' }; // ~28 KB, over the 8 KiB floor
const UNPARSED = /tools\/list unchanged \(\d+ bytes\): forwarded unparsed, as the hooks changed it before/g;
const CI = 'ci-token-0123456789abcdef';
const AGENT = 'agent-token-0123456789abcdef';

let peer;
before(async () => { peer = await startReplyPeer({ name: 'lister' }); });
after(async () => { await stopAll(); await peer?.close(); });

async function warden(policy, extra = {}) {
  return startAdminWarden({
    upstreams: [{ name: 'lister', path: '/mcp', url: peer.url, contract: { mode: 'report' } }],
    extra: { workers: 1, log: { level: 'debug' }, policy, ...extra },
  });
}

const list = (w, id, headers = {}) =>
  postJson(w.url, { jsonrpc: '2.0', id, method: 'tools/list' }, { headers: { ...BIG, ...headers } });
const names = (r) => JSON.parse(r.text).result.tools.map((t) => t.name);
const unparsed = (w) => (w.proc.stderr.match(UNPARSED) ?? []).length;

async function metric(w, name) {
  const r = await request(`${w.admin}/metrics`);
  const line = r.text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.split(' ')[1]);
}

describe('an unchanged tools/list under a hide rule', () => {
  test('the second and third are sent unparsed as the first was, the tool still hidden', T, async () => {
    const w = await warden({ rules: [{ name: 'hide-one', match: { tool: 'tool_1' }, action: 'hide' }] });
    try {
      const a = await list(w, 'first');
      assert.equal(a.status, 200, a.text);
      assert.equal(names(a).length, 59);
      assert.ok(!names(a).includes('tool_1'));
      assert.equal(await metric(w, 'mcpwarden_fast_listings_total'), 0);
      for (const id of ['second', 3]) {
        const b = await list(w, id);
        assert.equal(b.status, 200, b.text);
        assert.equal(b.text, a.text.replace('"id":"first"', `"id":${JSON.stringify(id)}`));
        assert.equal(b.headers['content-length'], String(Buffer.byteLength(b.text)));
      }
      await w.proc.waitForStderr(/forwarded unparsed[^]*forwarded unparsed/);
      assert.equal(unparsed(w), 2, w.proc.stderr);
      assert.equal(await metric(w, 'mcpwarden_fast_listings_total'), 2);
      // Counted as the parsed path counts: three listings, three hidden.
      assert.equal(await metric(w, 'mcpwarden_policy_listings_total'), 3);
      assert.equal(await metric(w, 'mcpwarden_policy_tools_hidden_total'), 3);
    } finally {
      await stop(w.proc);
    }
  });

  test('a hide rule that names a client: each client gets its own listing', T, async () => {
    const w = await warden(
      { rules: [{ name: 'hide-for-ci', match: { tool: 'tool_1', client: 'ci' }, action: 'hide' }] },
      { clients: [{ name: 'ci', token: CI }, { name: 'agent', token: AGENT }] });
    try {
      const as = (tok) => ({ Authorization: `Bearer ${tok}` });
      for (let round = 0; round < 2; round++) {
        const c = await list(w, `ci${round}`, as(CI));
        assert.equal(c.status, 200, c.text);
        assert.ok(!names(c).includes('tool_1'), `round ${round}: hidden from ci`);
        assert.equal(names(c).length, 59);
        const g = await list(w, `agent${round}`, as(AGENT));
        assert.equal(g.status, 200, g.text);
        assert.ok(names(g).includes('tool_1'), `round ${round}: listed to agent`);
        assert.equal(names(g).length, 60);
      }
      // The second round went unparsed for both (agent's hides nothing).
      assert.equal(await metric(w, 'mcpwarden_fast_listings_total'), 2);
      assert.equal(await metric(w, 'mcpwarden_policy_tools_hidden_total'), 2);
    } finally {
      await stop(w.proc);
    }
  });

  test('a reload that changes the policy: the next listing is parsed and hides what the new one says', T, async () => {
    const w = await warden({ rules: [{ name: 'hide-one', match: { tool: 'tool_1' }, action: 'hide' }] });
    try {
      await list(w, 1);
      await list(w, 2);
      assert.equal(await metric(w, 'mcpwarden_fast_listings_total'), 1);
      const fs = await import('node:fs');
      const conf = JSON.parse(fs.readFileSync(w.conf, 'utf8'));
      conf.policy.rules[0].match.tool = 'tool_2';
      fs.writeFileSync(w.conf, JSON.stringify(conf));
      assert.ok((await reloadWarden(w.proc)).ok);
      const r = await list(w, 3);
      assert.ok(names(r).includes('tool_1'));
      assert.ok(!names(r).includes('tool_2'));
      assert.equal(await metric(w, 'mcpwarden_fast_listings_total'), 1);
      const s = await list(w, 4);
      assert.equal(s.text, r.text.replace('"id":3', '"id":4'));
      assert.equal(await metric(w, 'mcpwarden_fast_listings_total'), 2);
    } finally {
      await stop(w.proc);
    }
  });
});

describe('an unchanged tools/list under a hide rule, recorded', () => {
  test('the call recorder records the listing sent, the hidden tool left out', T, async () => {
    const w = await warden({ rules: [{ name: 'hide-first', match: { tool: 'tool_0' }, action: 'hide' }] });
    try {
      for (const id of ['r1', 'r2']) {
        const r = await list(w, id);
        assert.equal(r.status, 200, r.text);
        assert.ok(!names(r).includes('tool_0'));
      }
      await w.proc.waitForStderr(UNPARSED);
      const recs = await waitForCalls(w.admin, (rs) => {
        const l = rs.filter((x) => x.method === 'tools/list' && x.finished !== false);
        return l.length >= 2 && l;
      });
      assert.equal(recs.length, 2);
      for (const rec of recs) {
        assert.ok(rec.result_preview.includes('tool_1'), JSON.stringify(rec));
        assert.ok(!/tool_0\b/.test(rec.result_preview), JSON.stringify(rec));
      }
    } finally {
      await stop(w.proc);
    }
  });
});

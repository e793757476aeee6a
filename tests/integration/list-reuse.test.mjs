// Issue 20: a tools/list that changed in one tool costs that tool.
//
// A listing of 8 KiB or more that is not the one the hooks kept (so not
// forwarded unparsed: list-fastpath.test.mjs) is built from the tools of
// the upstream's last listing on the same worker: the tools whose bytes
// did not change are those very values, the others are parsed
// (proxy/base/jreuse.h). What must hold: the hooks read the new listing,
// never the last one (a policy that hides a tool and another that denies
// destructive tools act on the tool as it is now listed); a reply the
// policy changed is re-serialised from the new listing; a listing that is
// not JSON is refused as before (502), and the one kept stays for the
// next. /metrics counts the tools reused and parsed
// (mcpwarden_listing_tools_total), which says the path was taken.
//
// Scripted upstream: peers/reply-peer.mjs, whose tools/list answers X-Tools
// tools with X-Pad bytes of description each, X-Tool-Json edits one tool
// and X-Break-Tool puts a raw control byte in one.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { stop, stopAll } from './lib/procs.mjs';
import { postJson } from './lib/http.mjs';
import { startAdminWarden, adminGet, metricValue } from './lib/admin-util.mjs';
import { startReplyPeer } from './peers/reply-peer.mjs';

const T = { timeout: 20000 };
const NTOOLS = 60;
const PAD = 400; // ~28 KB: over the 8 KiB below which a listing is parsed whole

let peer;

before(async () => {
  peer = await startReplyPeer({ name: 'lister' });
});

after(async () => {
  await stopAll();
  await peer?.close();
});

// The tools the peer lists with tool k edited (reply-peer.mjs result()).
function expected(k, json) {
  const tools = [];
  for (let i = 0; i < NTOOLS; i++) {
    tools.push({ name: `tool_${i}`, description: `tool ${i} ${'d'.repeat(PAD)}`, inputSchema: { type: 'object' } });
  }
  if (k !== undefined) Object.assign(tools[k], json);
  return tools;
}

const list = (url, id, headers = {}) => postJson(url, { jsonrpc: '2.0', id, method: 'tools/list' },
  { headers: { 'x-tools': String(NTOOLS), 'x-pad': String(PAD), ...headers } });
const edit = (k, json) => ({ 'x-tool-json': `${k}:${JSON.stringify(json)}` });
const call = (url, id, name) => postJson(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

async function counts(w) {
  const text = (await adminGet(w.admin, '/metrics')).text;
  return {
    reused: metricValue(text, 'mcpwarden_listing_tools_total', { how: 'reused' }),
    parsed: metricValue(text, 'mcpwarden_listing_tools_total', { how: 'parsed' }),
  };
}

describe('a tools/list that changed in one tool', () => {
  test('the hooks act on the tool as now listed, the rest taken from the last listing', T, async () => {
    const w = await startAdminWarden({
      upstreams: [{ name: 'lister', path: '/mcp', url: peer.url, contract: { mode: 'report' } }],
      extra: {
        workers: 1,
        policy: { default: 'allow', rules: [
          // First: tools without annotations are destructive by the
          // spec's defaults, so the deny rule would take tool_2 too.
          { name: 'hide-two', match: { tool: 'tool_2' }, action: 'hide' },
          { name: 'no-destructive', match: { annotations: { destructiveHint: true } }, action: 'deny' },
        ] },
      },
    });
    try {
      const hidden = (tools) => tools.filter((t) => t.name !== 'tool_2');
      // Tool 5 says it only reads, but in one listing.
      const safe = (description) => ({ description, annotations: { readOnlyHint: true } });
      // The first: all parsed.
      let r = await list(w.url, 1, edit(5, safe('v1')));
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(JSON.parse(r.text).result.tools, hidden(expected(5, safe('v1'))));
      assert.deepEqual(await counts(w), { reused: 0, parsed: NTOOLS });

      // Tool 5 changed: it alone is parsed; the reply the policy changed
      // is the new listing, without tool_2.
      r = await list(w.url, 2, edit(5, safe('v2')));
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(JSON.parse(r.text).result.tools, hidden(expected(5, safe('v2'))));
      assert.deepEqual(await counts(w), { reused: NTOOLS - 1, parsed: NTOOLS + 1 });
      r = await call(w.url, 3, 'tool_5');
      assert.equal(JSON.parse(r.text).result?.method, 'tools/call', r.text);

      // Tool 5 now says it is destructive: the policy reads that.
      const destructive = { annotations: { destructiveHint: true } };
      r = await list(w.url, 4, edit(5, destructive));
      assert.deepEqual(JSON.parse(r.text).result.tools, hidden(expected(5, destructive)));
      assert.deepEqual(await counts(w), { reused: 2 * (NTOOLS - 1), parsed: NTOOLS + 2 });
      r = await call(w.url, 5, 'tool_5');
      assert.ok(JSON.parse(r.text).error, `tool_5 is destructive now: ${r.text}`);
      assert.match(r.text, /no-destructive/);

      // Not JSON in one tool: refused, as a whole parse refuses it.
      r = await list(w.url, 7, { ...edit(5, destructive), 'x-break-tool': '7' });
      assert.equal(r.status, 502, r.text);
      // The listing kept is still the last good one: tool 5 as it was
      // there, every other the same bytes.
      r = await list(w.url, 8, edit(5, destructive));
      assert.deepEqual(JSON.parse(r.text).result.tools, hidden(expected(5, destructive)));
      const c = await counts(w);
      // Listing 8 is the bytes the hooks kept (listing 4's, another id):
      // forwarded unparsed, nothing reused or parsed.
      assert.deepEqual(c, { reused: 2 * (NTOOLS - 1), parsed: NTOOLS + 2 });
      r = await list(w.url, 9, edit(5, safe('v9')));
      assert.deepEqual(JSON.parse(r.text).result.tools, hidden(expected(5, safe('v9'))));
      const d = await counts(w);
      assert.equal(d.reused - c.reused, NTOOLS - 1, JSON.stringify({ c, d }));
      assert.equal(d.parsed - c.parsed, 1, JSON.stringify({ c, d }));
      r = await call(w.url, 10, 'tool_5');
      assert.equal(JSON.parse(r.text).result?.method, 'tools/call', `tool_5 is not destructive again: ${r.text}`);
    } finally {
      await stop(w.proc);
    }
  });

  test('in an SSE reply too', T, async () => {
    const w = await startAdminWarden({
      upstreams: [{ name: 'lister', path: '/mcp', url: peer.url }],
      extra: { workers: 1, policy: { default: 'allow', rules: [{ name: 'hide-two', match: { tool: 'tool_2' }, action: 'hide' }] } },
    });
    try {
      const sse = { 'x-test-mode': 'sse', accept: 'application/json, text/event-stream' };
      const tools = (r) => JSON.parse(/^data: (.*)$/m.exec(r.text)[1]).result.tools;
      const want = (d) => expected(5, { description: d }).filter((t) => t.name !== 'tool_2');
      let r = await list(w.url, 1, { ...sse, ...edit(5, { description: 's1' }) });
      assert.match(r.headers['content-type'], /text\/event-stream/);
      assert.deepEqual(tools(r), want('s1'));
      r = await list(w.url, 2, { ...sse, ...edit(5, { description: 's2' }) });
      assert.deepEqual(tools(r), want('s2'));
      assert.deepEqual(await counts(w), { reused: NTOOLS - 1, parsed: NTOOLS + 1 });
      // Not JSON: an SSE event the proxy does not understand passes as it
      // came (as when parsed whole), and nothing is taken from it.
      r = await list(w.url, 3, { ...sse, ...edit(5, { description: 's3' }), 'x-break-tool': '7' });
      assert.match(r.text, /"tool\u00017"/);
      assert.deepEqual(await counts(w), { reused: NTOOLS - 1, parsed: NTOOLS + 1 });
    } finally {
      await stop(w.proc);
    }
  });

  test('a small listing is parsed whole', T, async () => {
    const w = await startAdminWarden({
      upstreams: [{ name: 'lister', path: '/mcp', url: peer.url }],
      extra: { workers: 1 },
    });
    try {
      for (const id of [1, 2]) {
        const r = await postJson(w.url, { jsonrpc: '2.0', id, method: 'tools/list' },
          { headers: { 'x-tools': '3', ...edit(1, { description: `v${id}` }) } });
        assert.equal(JSON.parse(r.text).result.tools[1].description, `v${id}`);
      }
      assert.deepEqual(await counts(w), { reused: 0, parsed: 0 });
    } finally {
      await stop(w.proc);
    }
  });
});

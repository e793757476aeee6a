// Issue 17, item 4: inspection fails closed on size.
//
// What mcpwarden buffers to inspect one JSON reply has its own bound,
// limits.max_inspect_bytes, apart from the client body limit max_body_bytes.
// Past it a tools/list reply is refused (502, -32000 for its id, naming the
// limit) when a hook would act on it: the contract in filter or fail mode, a
// policy with a hide rule. In report mode with no hide rule it passes
// unread, with a warning, as do other replies past the bound.
//
// Scripted upstream: peers/reply-peer.mjs, whose tools/list answers
// X-Tools tools with X-Pad bytes of description each; a small bound in the
// config, not a 23 MB listing.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startWarden, stop, stopAll } from './lib/procs.mjs';
import { postJson } from './lib/http.mjs';
import { assertRpcError } from './lib/assert-rpc.mjs';
import { writeConfig } from './lib/conf.mjs';
import { startReplyPeer } from './peers/reply-peer.mjs';

const T = { timeout: 20000 };
const BOUND = 20000;
// 60 tools of ~470 bytes: ~28 KB, over BOUND; 3 tools: well under it.
const BIG = { 'x-tools': '60', 'x-pad': '400' };
const SMALL = { 'x-tools': '3', 'x-pad': '10' };
const HIDE = { rules: [{ name: 'hide-one', match: { tool: 'tool_1' }, action: 'hide' }] };

let peer;

before(async () => {
  peer = await startReplyPeer({ name: 'lister' });
});

after(async () => {
  await stopAll();
  await peer?.close();
});

/** mcpwarden in front of the peer with these upstream and top-level settings. */
async function warden({ contract, policy, limits = { max_inspect_bytes: BOUND } } = {}) {
  const wp = await freePort();
  return startWarden(wp, ['-c', writeConfig({
    listen: `127.0.0.1:${wp}`,
    workers: 1,
    upstreams: [{ name: 'lister', path: '/mcp', url: peer.url, ...(contract ? { contract: { mode: contract } } : {}) }],
    ...(policy ? { policy } : {}),
    limits,
    log: { level: 'info' },
  })]);
}

const list = (w, id, size) => postJson(w.url, { jsonrpc: '2.0', id, method: 'tools/list' }, { headers: size });
const names = (r) => JSON.parse(r.text).result.tools.map((t) => t.name);

describe('a tools/list reply over limits.max_inspect_bytes', () => {
  for (const mode of ['fail', 'filter']) {
    test(`contract ${mode} mode: refused with 502 / -32000 for its id, naming the limit`, T, async () => {
      const w = await warden({ contract: mode });
      try {
        const r = await list(w, `big-${mode}`, BIG);
        assertRpcError(r, { status: 502, code: -32000, id: `big-${mode}`, messageIncludes: ['limits.max_inspect_bytes'], bodyExcludes: ['tool_59'] });
        await w.proc.waitForStderr(/tools\/list reply over limits\.max_inspect_bytes \(20000 bytes\): refused/);
        const small = await list(w, `small-${mode}`, SMALL);
        assert.equal(small.status, 200, small.text);
      } finally {
        await stop(w.proc);
      }
    });
  }

  test('a policy hide rule (report mode): refused; under the bound the tool is hidden', T, async () => {
    const w = await warden({ policy: HIDE });
    try {
      const r = await list(w, 'big-hide', BIG);
      assertRpcError(r, { status: 502, code: -32000, id: 'big-hide', messageIncludes: ['limits.max_inspect_bytes'] });
      const small = await list(w, 'small-hide', SMALL);
      assert.equal(small.status, 200, small.text);
      assert.deepEqual(names(small), ['tool_0', 'tool_2']);
    } finally {
      await stop(w.proc);
    }
  });

  test('report mode, no hide rule: passes unread, with a warning', T, async () => {
    const w = await warden({ contract: 'report' });
    try {
      const r = await list(w, 'big-report', BIG);
      assert.equal(r.status, 200, r.text);
      assert.equal(names(r).length, 60);
      await w.proc.waitForStderr(/reply from lister over 20000 bytes: passed through without inspection/);
    } finally {
      await stop(w.proc);
    }
  });

  test('a dry-run policy\'s hide rule changes no traffic: passes unread, with a warning', T, async () => {
    const w = await warden({ policy: { ...HIDE, dry_run: true } });
    try {
      const r = await list(w, 'big-dry', BIG);
      assert.equal(r.status, 200, r.text);
      assert.equal(names(r).length, 60);
      await w.proc.waitForStderr(/passed through without inspection/);
    } finally {
      await stop(w.proc);
    }
  });

  test('another reply over the bound (a tools/call result) passes unread even in fail mode', T, async () => {
    const w = await warden({ contract: 'fail' });
    try {
      const big = 'x'.repeat(BOUND + 1000);
      const r = await postJson(w.url, { jsonrpc: '2.0', id: 'big-call', method: 'tools/call', params: { name: 'whoami', arguments: { big } } });
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.equal(JSON.parse(r.text).result.params.arguments.big, big);
      await w.proc.waitForStderr(/passed through without inspection/);
    } finally {
      await stop(w.proc);
    }
  });
});

describe('max_body_bytes no longer bounds inspection', () => {
  test('a listing over max_body_bytes (but under the default max_inspect_bytes) is inspected: the hidden tool is not listed', T, async () => {
    const w = await warden({ policy: HIDE, limits: { max_body_bytes: 10000 } });
    try {
      const r = await list(w, 'over-body', BIG);
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.ok(r.text.length > 10000, 'the listing is over max_body_bytes');
      const got = names(r);
      assert.equal(got.length, 59);
      assert.ok(!got.includes('tool_1'), 'the hidden tool must not be listed');
      assert.doesNotMatch(w.proc.stderr, /without inspection/);
    } finally {
      await stop(w.proc);
    }
  });
});

// Issue 20, item 2: big lists at byte speed.
//
// A tools/list reply whose result is byte for byte the listing every hook
// kept (the contract's verdict that let it through unchanged, the tools
// tracker's last complete listing, a policy that can hide nothing) is
// forwarded as the upstream sent it, without a parse, the hooks replaying
// what they did (proxy/hooks/inspect.h, inspect_listing_fast). The log at
// debug level names each such reply ("forwarded unparsed"). A listing that
// differs in one byte or a policy that hides tools take the parsed path, as
// before; the call recorder records the unparsed one as it did the first.
//
// Scripted upstream: peers/reply-peer.mjs, whose tools/list answers X-Tools
// tools with X-Pad bytes of description each (the same bytes every time,
// the request's id echoed).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startWarden, stop, stopAll } from './lib/procs.mjs';
import { postJson } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { startAdminWarden, waitForCalls } from './lib/admin-util.mjs';
import { startReplyPeer } from './peers/reply-peer.mjs';

const T = { timeout: 20000 };
// 60 tools of ~470 bytes: ~28 KB, over the fast path's 8 KiB floor.
const BIG = { 'x-tools': '60', 'x-pad': '400' };
const BIG_ONE_MORE = { 'x-tools': '60', 'x-pad': '401' };
const UNPARSED = /tools\/list unchanged \(\d+ bytes\): forwarded unparsed/g;

let peer;

before(async () => {
  peer = await startReplyPeer({ name: 'lister' });
});

after(async () => {
  await stopAll();
  await peer?.close();
});

async function warden({ contract = 'report', policy } = {}) {
  const wp = await freePort();
  return startWarden(wp, ['-c', writeConfig({
    listen: `127.0.0.1:${wp}`,
    workers: 1,
    upstreams: [{ name: 'lister', path: '/mcp', url: peer.url, contract: { mode: contract } }],
    ...(policy ? { policy } : {}),
    log: { level: 'debug' },
  })]);
}

const list = (url, id, size) => postJson(url, { jsonrpc: '2.0', id, method: 'tools/list' }, { headers: size });
const unparsed = (w) => (w.proc.stderr.match(UNPARSED) ?? []).length;
const names = (r) => JSON.parse(r.text).result.tools.map((t) => t.name);

describe('an unchanged tools/list', () => {
  for (const mode of ['report', 'filter', 'fail']) {
    test(`contract ${mode}: the second is forwarded unparsed, byte for byte, with its own id`, T, async () => {
      const w = await warden({ contract: mode });
      try {
        const a = await list(w.url, 'first', BIG);
        assert.equal(a.status, 200, a.text);
        const b = await list(w.url, 'second', BIG);
        assert.equal(b.status, 200, b.text);
        await w.proc.waitForStderr(UNPARSED);
        assert.equal(unparsed(w), 1, w.proc.stderr);
        assert.equal(b.text, a.text.replace('"id":"first"', '"id":"second"'));
        assert.equal(JSON.parse(b.text).id, 'second');
        assert.equal(b.headers['content-length'], String(Buffer.byteLength(b.text)));
        // A third: the kept verdicts hold.
        const c = await list(w.url, 3, BIG);
        assert.equal(JSON.parse(c.text).id, 3);
        assert.equal(names(c).length, 60);
        await w.proc.waitForStderr(/forwarded unparsed[^]*forwarded unparsed/);
      } finally {
        await stop(w.proc);
      }
    });
  }

  test('one byte different: parsed and checked again, then the new bytes are the kept ones', T, async () => {
    const w = await warden();
    try {
      await list(w.url, 1, BIG);
      const before = w.proc.stderr.match(/contract: upstream lister/g)?.length ?? 0;
      const r = await list(w.url, 2, BIG_ONE_MORE);
      assert.equal(r.status, 200, r.text);
      assert.match(JSON.parse(r.text).result.tools[0].description, /d{401}$/);
      // The check of the changed listing logs its line; nothing was unparsed.
      await w.proc.waitForStderr(new RegExp(`(contract: upstream lister[^]*){${before + 1}}`));
      assert.equal(unparsed(w), 0, w.proc.stderr);
      const s = await list(w.url, 3, BIG_ONE_MORE);
      assert.equal(JSON.parse(s.text).id, 3);
      await w.proc.waitForStderr(UNPARSED);
      assert.equal(unparsed(w), 1);
    } finally {
      await stop(w.proc);
    }
  });

  test('a policy that hides a tool still hides it: the first is parsed, the same bytes again are not', T, async () => {
    const w = await warden({ policy: { rules: [{ name: 'hide-one', match: { tool: 'tool_1' }, action: 'hide' }] } });
    try {
      for (const id of [1, 2, 3]) {
        const r = await list(w.url, id, BIG);
        assert.equal(r.status, 200, r.text);
        assert.equal(JSON.parse(r.text).id, id);
        assert.equal(names(r).length, 59);
        assert.ok(!names(r).includes('tool_1'));
      }
      await w.proc.waitForStderr(/(tools hidden from tools\/list[^]*){3}/);
      // Issue 20: the policy's kept verdict is replayed (list-fastpath-hide.test.mjs).
      assert.equal(unparsed(w), 2, w.proc.stderr);
    } finally {
      await stop(w.proc);
    }
  });
});

describe('an unchanged tools/list with the call recorder', () => {
  test('the second is forwarded unparsed and recorded as the first was', T, async () => {
    const w = await startAdminWarden({
      upstreams: [{ name: 'lister', path: '/mcp', url: peer.url, contract: { mode: 'report' } }],
      extra: { workers: 1, log: { level: 'debug' } },
    });
    for (const id of ['r1', 'r2']) {
      const r = await list(w.url, id, BIG);
      assert.equal(r.status, 200, r.text);
    }
    await w.proc.waitForStderr(UNPARSED);
    const recs = await waitForCalls(w.admin, (rs) => {
      const l = rs.filter((x) => x.method === 'tools/list' && x.finished !== false);
      return l.length >= 2 && l;
    });
    await stop(w.proc);
    assert.equal(recs.length, 2);
    // What differs between two calls whatever the path.
    const VOLATILE = ['id', 'seq', 'time', 'latency_us', 'conn', 'client', 'request_id', 'jsonrpc_id'];
    const strip = (x) => Object.fromEntries(Object.entries(x).filter(([k]) => !VOLATILE.includes(k)));
    assert.deepEqual(strip(recs[0]), strip(recs[1]));
    assert.ok(recs[0].result_preview.includes('tool_0'), JSON.stringify(recs[0]));
    assert.equal(unparsed(w), 1, w.proc.stderr);
  });
});

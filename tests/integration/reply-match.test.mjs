// Issue 17, item 1 and 2: every answer to the right client, exactly once.
//
// A reply is matched to its request by id on every path, and an upstream
// connection that carried anything unexpected is closed, never reused:
//
//   stale second reply   an upstream answering one request twice (two
//                        responses, or bytes after a complete one) must not
//                        reach the next client of that pooled connection.
//   wrong id             a JSON or SSE reply, or one answer of a batch,
//                        carrying another request's id is not delivered: the
//                        client gets 502 / -32000 (-31502 in the 2026 era)
//                        for its own id, or an error event and a clean end
//                        when the SSE head is out; the connection is closed.
//   cut SSE reply        an SSE reply that ends before the answer, with no
//                        event id to resume from, ends with one error event
//                        for the pending request and a clean end.
//
// Scripted upstream: peers/reply-peer.mjs (raw TCP). Assertions on the bytes
// each client sees and on the peer's connections.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startWarden, stopAll } from './lib/procs.mjs';
import { openRaw, rawRequestBytes, SseParser } from './lib/http.mjs';
import { assertRpcError } from './lib/assert-rpc.mjs';
import { writeConfig } from './lib/conf.mjs';
import { waitFor } from './lib/util.mjs';
import { modernRequest } from './lib/stateless-util.mjs';
import { startReplyPeer, OTHER_ID } from './peers/reply-peer.mjs';

const T = { timeout: 20000 };
const ACCEPT = 'application/json, text/event-stream';

const call = (id, secret) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: { secret } } });

let peer;
let w;
const peers = [];

/* A new peer and mcpwarden for each test: the pool starts empty, so the
 * peer's connection count says which requests shared a connection. */
async function fresh() {
  peer = await startReplyPeer();
  peers.push(peer);
  const wp = await freePort();
  w = await startWarden(wp, ['-c', writeConfig({
    listen: `127.0.0.1:${wp}`,
    workers: 1, // one pool: the connection count tells who shared one
    upstreams: [{ name: 'replies', path: '/mcp', url: peer.url }],
    log: { level: 'info' },
  })]);
}

after(async () => {
  await stopAll();
  for (const p of peers) await p.close();
});

/** One client: its own connection, one request, the response as it came. */
async function client(body, { mode, headers = {} } = {}) {
  const c = await openRaw(w.port);
  try {
    const h = [['Host', `127.0.0.1:${w.port}`], ['Content-Type', 'application/json'], ['Accept', ACCEPT]];
    if (mode) h.push(['X-Test-Mode', mode]);
    for (const [k, v] of Object.entries(headers)) h.push([k, v]);
    const bytes = JSON.stringify(body);
    h.push(['Content-Length', String(Buffer.byteLength(bytes))]);
    await c.write(rawRequestBytes('POST /mcp HTTP/1.1', h, bytes));
    const res = await c.readResponse({ timeout: 5000, method: 'POST' });
    // Nothing else may follow on this connection: no second answer.
    res.after = c.buf.toString('latin1');
    return res;
  } finally {
    c.close();
  }
}

function sse(res) {
  const p = new SseParser();
  p.feed(res.text);
  return p.messages();
}

/** The request the peer got for id: which upstream connection carried it. */
const connOf = async (id) => (await peer.request(id)).conn;

/** After a mismatch on the only upstream connection so far: it is closed,
 * and the next request opens a new one, and works. */
async function nextIsFresh(badConn, tag) {
  assert.equal(peer.conns.length, badConn + 1, 'the mismatch came on the newest connection');
  assert.ok(await peer.closed(badConn), `upstream connection ${badConn} must be closed`);
  const r = await client(call(`next-${tag}`, `next-${tag}-secret`));
  assert.equal(r.status, 200, r.text);
  assert.equal(JSON.parse(r.text).id, `next-${tag}`);
  assert.equal(await connOf(`next-${tag}`), badConn + 1, 'the next request opened a new upstream connection');
  assert.equal(peer.conns.length, badConn + 2);
}

describe('a stale second reply never reaches the next client', () => {
  for (const mode of ['dup', 'dup-later', 'extra']) {
    test(`${mode}: the second client gets its own answer, on a new connection`, T, async () => {
      await fresh();
      const a = await client(call(`a-${mode}`, 'A-SECRET'), { mode });
      assert.equal(a.status, 200, a.text);
      assert.equal(JSON.parse(a.text).id, `a-${mode}`);
      assert.equal(JSON.parse(a.text).result.params.arguments.secret, 'A-SECRET');
      assert.equal(a.after, '', 'one answer on the first client connection');
      const ra = await peer.request(`a-${mode}`);
      if (mode === 'dup-later') await waitFor(() => ra.dupWrittenAt, { what: 'second copy written' });
      // The upstream connection that said too much is closed.
      assert.ok(await peer.closed(ra.conn), `connection ${ra.conn} that carried a stale reply must be closed`);
      const b = await client(call(`b-${mode}`, 'B-SECRET'));
      assert.equal(b.status, 200, b.text);
      assert.ok(!b.text.includes('A-SECRET'), `the second client got the first's answer: ${b.text}`);
      assert.equal(JSON.parse(b.text).id, `b-${mode}`);
      assert.equal(JSON.parse(b.text).result.params.arguments.secret, 'B-SECRET');
      assert.equal(await connOf(`b-${mode}`), ra.conn + 1, 'never reused: a new connection');
      assert.equal(peer.conns.length, 2);
    });
  }

  test('a second copy racing the next client, 60 times: each client gets its own answer or a 502 for its own id, never another\'s', T, async () => {
    await fresh();
    let own = 0;
    // Any client may meet the previous round's late copy (the first of a
    // round too): it must only ever see its own answer or its own 502.
    const ownOr502 = (r, id, secret) => {
      const others = r.text.match(/[AB]-SECRET-\d+/g) ?? [];
      assert.ok(others.every((x) => x === secret), `${id} got another client's answer: ${r.text}`);
      if (r.status === 200) {
        assert.equal(JSON.parse(r.text).id, id);
        assert.equal(JSON.parse(r.text).result.params.arguments.secret, secret);
        own++;
      } else {
        // The copy came after the request went out on the reused
        // connection: only the id tells it apart.
        assertRpcError(r, { status: 502, code: -32000, id });
      }
    };
    for (let i = 0; i < 60; i++) {
      const a = await client(call(`ra-${i}`, `A-SECRET-${i}`), { mode: 'dup-later', headers: { 'X-Delay-Ms': String(i % 3) } });
      ownOr502(a, `ra-${i}`, `A-SECRET-${i}`);
      const b = await client(call(`rb-${i}`, `B-SECRET-${i}`));
      ownOr502(b, `rb-${i}`, `B-SECRET-${i}`);
    }
    assert.ok(own >= 60, `most clients got their own answer (${own} of 120)`);
  });

  test('dup-next (the stale reply comes after the next request): 502 for the second client\'s own id, never the first\'s answer', T, async () => {
    await fresh();
    const a = await client(call('a-next', 'A-SECRET'), { mode: 'dup-next' });
    assert.equal(a.status, 200, a.text);
    const b = await client(call('b-next', 'B-SECRET'));
    assert.ok(!b.text.includes('A-SECRET'), `the second client got the first's answer: ${b.text}`);
    const connA = await connOf('a-next');
    // Sent on the pooled connection (the stale bytes were not there yet):
    // only the id tells the stale reply apart.
    assert.equal(await connOf('b-next'), connA, 'the second request reused the quiet connection');
    assertRpcError(b, { status: 502, code: -32000, id: 'b-next', bodyExcludes: ['a-next'] });
    assert.equal(b.after, '');
    await nextIsFresh(connA, 'dup-next');
  });
});

describe('a reply with another request\'s id is not delivered', () => {
  test('JSON reply with a wrong id → 502 / -32000 for the request\'s own id; connection closed', T, async () => {
    await fresh();
    const r = await client(call('own-json', 'S'), { mode: 'wrong-id' });
    assertRpcError(r, { status: 502, code: -32000, id: 'own-json', bodyExcludes: [OTHER_ID, '"result"'] });
    assert.equal(r.after, '');
    await nextIsFresh(await connOf('own-json'), 'json');
  });

  test('2026-07-28 era: the same mismatch is -31502', T, async () => {
    await fresh();
    const m = modernRequest('own-2026', 'tools/call', { name: 'whoami', arguments: {} });
    const headers = { ...m.headers };
    delete headers['content-type'];
    delete headers.accept;
    const r = await client(m.body, { mode: 'wrong-id', headers });
    assertRpcError(r, { status: 502, code: -31502, id: 'own-2026', bodyExcludes: [OTHER_ID] });
    await nextIsFresh(await connOf('own-2026'), '2026');
  });

  test('SSE reply with a wrong id → the notification, an error event for the own id, a clean end', T, async () => {
    await fresh();
    const r = await client(call('own-sse', 'S'), { mode: 'sse-wrong-id' });
    assert.equal(r.status, 200, r.head);
    assert.ok(r.complete, `the stream must end cleanly (terminating chunk): ${JSON.stringify(r.text)}`);
    assert.ok(!r.text.includes(OTHER_ID), `the mismatched answer was delivered: ${r.text}`);
    const msgs = sse(r);
    assert.equal(msgs.length, 2, r.text);
    assert.equal(msgs[0].method, 'notifications/progress');
    assert.equal(msgs[1].id, 'own-sse');
    assert.equal(msgs[1].error?.code, -32000, r.text);
    await nextIsFresh(await connOf('own-sse'), 'sse');
  });

  test('batch with one wrong id → 502 with an error for each request of the batch; connection closed', T, async () => {
    await fresh();
    const batch = [call('b1', 'x'), call('b2', 'y'), call('b3', 'z')];
    const r = await client(batch, { mode: 'batch-wrong-id' });
    assert.equal(r.status, 502, r.text);
    assert.ok(!r.text.includes(OTHER_ID), `the mismatched answer was delivered: ${r.text}`);
    assert.ok(!r.text.includes('"result"'), `no answer of a broken reply is delivered: ${r.text}`);
    const body = JSON.parse(r.text);
    assert.ok(Array.isArray(body), r.text);
    assert.deepEqual(body.map((e) => e.id).sort(), ['b1', 'b2', 'b3']);
    for (const e of body) assert.equal(e.error.code, -32000, r.text);
    await nextIsFresh(await connOf('b1'), 'batch');
  });

  test('a batch answered correctly still passes', T, async () => {
    await fresh();
    const r = await client([call('g1', 'x'), call('g2', 'y')]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(JSON.parse(r.text).map((e) => e.id), ['g1', 'g2']);
  });
});

describe('an SSE reply cut before its answer', () => {
  for (const mode of ['sse-cut', 'sse-reset', 'sse-end']) {
    test(`${mode} (no event ids): the notification, one error event for the request, a clean end`, T, async () => {
      await fresh();
      const id = `cut-${mode}`;
      const r = await client(call(id, 'S'), { mode });
      assert.equal(r.status, 200, r.head);
      assert.ok(r.complete, `the stream must end cleanly (terminating chunk): ${JSON.stringify(r.text)}`);
      const msgs = sse(r);
      assert.equal(msgs.length, 2, r.text);
      assert.equal(msgs[0].method, 'notifications/progress');
      assert.equal(msgs[1].id, id);
      assert.equal(msgs[1].error?.code, -32000, r.text);
      assert.equal(r.after, '');
    });
  }

  test('a batch whose SSE reply is cut after its first answer: one error event for each other request', T, async () => {
    await fresh();
    const r = await client([call('c1', 'x'), call('c2', 'y'), { jsonrpc: '2.0', method: 'notifications/x' }, call('c3', 'z')],
      { mode: 'sse-batch-cut' });
    assert.equal(r.status, 200, r.head);
    assert.ok(r.complete, `the stream must end cleanly: ${JSON.stringify(r.text)}`);
    const msgs = sse(r);
    assert.deepEqual(msgs.map((m) => [m.id, m.result ? 'result' : m.error?.code]),
      [['c1', 'result'], ['c2', -32000], ['c3', -32000]], r.text);
  });

  test('sse-cut-ids (resumable): cut as it came, no error event', T, async () => {
    await fresh();
    const r = await client(call('cut-ids', 'S'), { mode: 'sse-cut-ids' });
    assert.equal(r.status, 200, r.head);
    assert.equal(r.complete, false, 'a resumable stream is cut so the client resumes it');
    const msgs = sse(r);
    assert.deepEqual(msgs.map((m) => m.method), ['notifications/progress']);
  });
});

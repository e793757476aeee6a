// Bad input from clients and from upstreams (issue 2, point 7). Each case
// runs while a second, healthy SDK session keeps calling a tool through the
// same mcpwarden process, and must not disturb it. Every answer is checked
// on the wire: status, JSON-RPC error code, id, and that the upstream URL is
// named without user, password or query.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, closedPort } from './lib/ports.mjs';
import { startEverything, startWarden, stopAll } from './lib/procs.mjs';
import { startHealthyLoop } from './lib/mcp.mjs';
import { openRaw, openStream, postJson, rawExchange, rawRequestBytes, request } from './lib/http.mjs';
import { assertRpcError } from './lib/assert-rpc.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout, waitFor, sleep } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';
import { startRawPeer } from './peers/raw.mjs';

const T = { timeout: 20000 };
const ACCEPT = 'application/json, text/event-stream';
const SECRET_USER = 'wardenuser';
const SECRET_PW = 's3cr3tpw';
const SECRET_TOKEN = 'zq9tokval';
const MAX_BODY = 1024;

let se; // one server-everything for the whole file

before(async () => {
  se = await startEverything(await freePort());
}, { timeout: 20000 });

after(async () => {
  await stopAll();
});

function rpc(id, method = 'tools/call', params = { name: 'echo', arguments: { message: 'x' } }) {
  return { jsonrpc: '2.0', id, method, params };
}

function postBytes(port, body, extra = []) {
  const b = Buffer.from(body);
  return rawRequestBytes('POST /mcp HTTP/1.1', [
    ['Host', `127.0.0.1:${port}`],
    ['Content-Type', 'application/json'],
    ['Accept', ACCEPT],
    ...extra,
    ['Content-Length', String(b.length)],
  ], b);
}

describe('bad input, one upstream (flags), healthy neighbour on the same upstream', () => {
  let relay;
  let warden;
  let healthy;
  let safeUrl;

  before(async () => {
    // The relay forwards healthy traffic to server-everything and misbehaves
    // on request (X-Test-Mode), so both share mcpwarden's upstream pool.
    relay = await startScriptedPeer({ mode: 'relay', relayTo: se.url, name: 'relay' });
    safeUrl = `http://127.0.0.1:${relay.port}/mcp`;
    const wp = await freePort();
    warden = await startWarden(wp, [
      '--listen', `127.0.0.1:${wp}`,
      '--upstream', `http://${SECRET_USER}:${SECRET_PW}@127.0.0.1:${relay.port}/mcp?token=${SECRET_TOKEN}`,
      '--request-timeout', '500',
      '--max-body', String(MAX_BODY),
    ]);
    healthy = await startHealthyLoop(warden.url);
    await healthy.minCallsAfter(3);
  }, T);

  after(async () => {
    await healthy?.stop().catch(() => {});
    await relay?.close();
  });

  const notForwarded = (marker) => assert.ok(!relay.received.some((r) => r.body.includes(marker)),
    `request with ${marker} must be answered by the proxy, not forwarded`);

  const malformed = {
    'garbage request line': 'THIS IS NOT HTTP\r\n\r\n',
    'header line without colon': 'GET /mcp HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n',
    'non-numeric Content-Length': 'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n{}',
    'Content-Length with Transfer-Encoding': 'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'space in method': 'GE T /mcp HTTP/1.1\r\nHost: x\r\n\r\n',
  };
  for (const [name, bytes] of Object.entries(malformed)) {
    test(`malformed HTTP (${name}) → 400, connection closed`, T, async () => {
      const c = await openRaw(warden.port);
      try {
        await c.write(bytes);
        const res = await c.readResponse({ timeout: 3000 });
        assert.equal(res.status, 400, res.head);
        assert.ok(await c.waitClosed(3000), 'proxy must close a connection it cannot parse');
      } finally {
        c.close();
      }
      await healthy.minCallsAfter(3);
    });
  }

  // Issue 17: framing tricks answered by the HTTP layer, never forwarded.
  // Each carries its own X-Marker; the relay must not see it.
  const framing = [
    { name: 'a header line with an empty name', status: 400,
      raw: (p, m) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nX-Marker: ${m}\r\n: v\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}` },
    { name: 'two Host headers', status: 400,
      raw: (p, m) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nHost: 127.0.0.1:${p}\r\nX-Marker: ${m}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}` },
    { name: 'no Host in an HTTP/1.1 request', status: 400,
      raw: (p, m) => `POST /mcp HTTP/1.1\r\nX-Marker: ${m}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}` },
    { name: 'an HTTP/2.0 request line', status: 505,
      raw: (p, m) => `POST /mcp HTTP/2.0\r\nHost: 127.0.0.1:${p}\r\nX-Marker: ${m}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}` },
    { name: 'chunk data without its CRLF', status: 400,
      raw: (p, m) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nX-Marker: ${m}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XY0\r\n\r\n` },
    { name: '100 KiB of chunk extensions', status: 400,
      raw: (p, m) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nX-Marker: ${m}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2;${'e'.repeat(100 * 1024)}\r\n{}\r\n0\r\n\r\n` },
    { name: 'two different Mcp-Session-Id', status: 400,
      raw: (p, m) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nX-Marker: ${m}\r\nMcp-Session-Id: a\r\nMcp-Session-Id: b\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}` },
    { name: 'the same Mcp-Session-Id twice', status: 400,
      raw: (p, m) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nX-Marker: ${m}\r\nMcp-Session-Id: a\r\nmcp-session-id: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}` },
    ...[['MCP-Protocol-Version', '2025-06-18', '2026-07-28'], ['Authorization', 'Bearer a', 'Bearer b'],
      ['Origin', `http://127.0.0.1`, 'http://evil.example'], ['Content-Type', 'application/json', 'text/plain']]
      .map(([h, v1, v2]) => ({
        name: `two ${h} headers`, status: 400,
        raw: (p, m) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nX-Marker: ${m}\r\n${h}: ${v1}\r\n${h}: ${v2}\r\n${h === 'Content-Type' ? '' : 'Content-Type: application/json\r\n'}Content-Length: 2\r\n\r\n{}`,
      })),
    { name: 'CONNECT', status: 405, allow: true,
      raw: (p, m) => `CONNECT 127.0.0.1:${p} HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nX-Marker: ${m}\r\n\r\n` },
  ];
  for (const [i, f] of framing.entries()) {
    test(`i17 framing: ${f.name} → ${f.status}, never forwarded, connection closed`, T, async () => {
      const marker = `i17-framing-${i}`;
      const c = await openRaw(warden.port);
      try {
        await c.write(f.raw(warden.port, marker));
        const res = await c.readResponse({ timeout: 3000 });
        assert.equal(res.status, f.status, `${res.head}\n${res.text}`);
        assert.equal(JSON.parse(res.text).error.code, -32600, res.text);
        if (f.allow) assert.ok('allow' in res.headers, `405 without Allow:\n${res.head}`);
        assert.ok(await c.waitClosed(3000), 'the connection must close after a refused head');
      } finally {
        c.close();
      }
      assert.ok(!relay.received.some((r) => r.headers['x-marker'] === marker), `${f.name} reached the upstream`);
      await healthy.minCallsAfter(1);
    });
  }

  test('i17 half-close: a client that shuts its side after a whole request still gets its answer, then the close', T, async () => {
    const c = await openRaw(warden.port);
    try {
      await c.write(postBytes(warden.port, JSON.stringify(rpc('half-1', 'ping', {})),
        [['X-Test-Mode', 'late-json'], ['X-Test-Delay-Ms', '300']])); // under --request-timeout 500
      const rec = await relay.waitRequest((r) => r.body.includes('"half-1"'));
      c.sock.end(); // FIN: nothing more to send, still reading
      let res = await c.readResponse({ timeout: 5000 });
      // The proxy saw the FIN before the answer: its 100 says so (a client
      // that had closed would answer it with a reset).
      assert.equal(res.status, 100, res.head);
      res = await c.readResponse({ timeout: 5000 });
      assert.equal(res.status, 200, res.head);
      assert.equal(JSON.parse(res.text).id, 'half-1', res.text);
      assert.equal(res.headers.connection, 'close', res.head);
      assert.ok(await c.waitClosed(3000), 'closed after the answer');
      assert.ok(rec.responseDone, 'the upstream answered');
    } finally {
      c.close();
    }
  });

  test('i17 half-close: a client that closes after a whole request still cancels the upstream at once', T, async () => {
    const c = await openRaw(warden.port);
    await c.write(postBytes(warden.port, JSON.stringify(rpc('closer-1', 'ping', {})), [['X-Test-Mode', 'silent']]));
    const rec = await relay.waitRequest((r) => r.body.includes('"closer-1"'));
    const t0 = Date.now();
    c.close(); // close(2): FIN, and a reset for whatever comes after
    assert.ok(await relay.closed(rec, 1500), 'the upstream request must be closed when its client is gone');
    // At once, not at --request-timeout (500 ms after the request).
    assert.ok(rec.socketClosedAt - t0 < 250, `closed ${rec.socketClosedAt - t0} ms after the client left`);
  });

  test(`body over --max-body ${MAX_BODY} (Content-Length) → 413`, T, async () => {
    const big = JSON.stringify(rpc('big-1', 'tools/call', { name: 'echo', arguments: { message: 'B'.repeat(2000) } }));
    const res = await rawExchange(warden.port, postBytes(warden.port, big));
    assert.equal(res.status, 413, res.head);
    notForwarded('big-1');
    await healthy.minCallsAfter(3);
  });

  test('huge Content-Length is refused at once, without waiting for the body', T, async () => {
    const c = await openRaw(warden.port);
    try {
      const t0 = Date.now();
      await c.write(rawRequestBytes('POST /mcp HTTP/1.1', [
        ['Host', `127.0.0.1:${warden.port}`], ['Content-Type', 'application/json'], ['Accept', ACCEPT],
        ['Content-Length', '100000000'],
      ]));
      const res = await c.readResponse({ timeout: 3000 });
      assert.equal(res.status, 413, res.head);
      assert.ok(Date.now() - t0 < 2000);
    } finally {
      c.close();
    }
    await healthy.minCallsAfter(3);
  });

  test('chunked body over the limit → 413', T, async () => {
    const chunk = 'C'.repeat(500);
    let body = `{"jsonrpc":"2.0","id":"chunky","method":"ping","params":{"pad":"`;
    let bytes = `${body.length.toString(16)}\r\n${body}\r\n`;
    for (let i = 0; i < 6; i++) bytes += `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
    body = '"}}';
    bytes += `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const res = await rawExchange(warden.port, Buffer.concat([rawRequestBytes('POST /mcp HTTP/1.1', [
      ['Host', `127.0.0.1:${warden.port}`], ['Content-Type', 'application/json'], ['Accept', ACCEPT],
      ['Transfer-Encoding', 'chunked'],
    ]), Buffer.from(bytes)]));
    assert.equal(res.status, 413, res.head);
    notForwarded('chunky');
    await healthy.minCallsAfter(3);
  });

  test('body just under the limit is forwarded', T, async () => {
    const base = JSON.stringify(rpc('fits-1', 'ping', { pad: '' }));
    const body = JSON.stringify(rpc('fits-1', 'ping', { pad: 'p'.repeat(MAX_BODY - base.length - 10) }));
    assert.ok(body.length < MAX_BODY);
    const res = await rawExchange(warden.port, postBytes(warden.port, body, [['X-Test-Mode', 'json']]));
    assert.equal(res.status, 200, res.text);
    assert.equal(JSON.parse(res.text).id, 'fits-1');
  });

  test('POST body not JSON → 400, JSON-RPC -32700, id null', T, async () => {
    for (const body of ['{"jsonrpc":"2.0","id":7,"method":', 'hello world', '\u00ff\u00fe garbage']) {
      const res = await postJson(warden.url, body);
      assertRpcError(res, { status: 400, code: -32700, id: null });
    }
    notForwarded('hello world');
    await healthy.minCallsAfter(3);
  });

  const notJsonRpc = {
    '{"foo":1}': null,
    '{"jsonrpc":"1.0","id":"v1","method":"ping"}': 'v1',
    '{"id":"nover","method":"ping"}': 'nover',
    '{"jsonrpc":"2.0","id":"nomethod"}': 'nomethod',
    '"just a string"': null,
    '42': null,
  };
  for (const [body, id] of Object.entries(notJsonRpc)) {
    test(`JSON but not JSON-RPC 2.0: ${body} → 400, -32600`, T, async () => {
      const res = await postJson(warden.url, body);
      const b = assertRpcError(res, { status: 400, code: -32600 });
      assert.ok(b.id === null || b.id === id, `id should be null or ${id}: ${res.text}`);
      assert.ok(!relay.received.some((r) => r.body === body), 'must not be forwarded');
      await healthy.minCallsAfter(3);
    });
  }

  const upstreamFailures = [
    // mustClose: the upstream connection cannot be reused, so the proxy must
    // close it (after a timeout a late answer would otherwise be read as the
    // reply to the next request). bad-json ends a well-formed HTTP exchange,
    // so keeping that connection in the pool is allowed.
    { mode: 'silent', status: 504, what: 'never answers (--request-timeout 500)', mustClose: true },
    { mode: 'reset', status: 502, what: 'resets the connection mid-response', mustClose: true },
    { mode: 'not-http', status: 502, what: 'answers bytes that are not HTTP', mustClose: true },
    { mode: 'bad-json', status: 502, what: 'declares JSON, sends something else', mustClose: false },
  ];
  for (const f of upstreamFailures) {
    test(`upstream ${f.what} → ${f.status}, -32000 naming the upstream without credentials`, T, async () => {
      const id = `fail-${f.mode}`;
      const t0 = Date.now();
      const res = await postJson(warden.url, rpc(id), { headers: { 'x-test-mode': f.mode }, timeout: 5000 });
      const took = Date.now() - t0;
      assertRpcError(res, {
        status: f.status, code: -32000, id,
        messageIncludes: [safeUrl],
        bodyExcludes: [SECRET_USER, SECRET_PW, SECRET_TOKEN],
      });
      if (f.mode === 'silent') {
        assert.ok(took >= 400 && took < 3000, `504 after ${took} ms with --request-timeout 500`);
      }
      // The upstream request was really made, and a dead connection is not kept.
      const rec = relay.last((r) => r.body.includes(id));
      assert.ok(rec, 'request reached the upstream');
      if (f.mustClose) {
        assert.ok(await relay.closed(rec, 3000), 'upstream connection must be closed after the failure');
      }
      await healthy.minCallsAfter(3);
    });
  }

  test('upstream cuts an SSE reply mid-stream: client gets what was sent, then an unclean end', T, async () => {
    const st = await openStream(warden.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT, 'x-test-mode': 'truncate-sse' },
      body: JSON.stringify(rpc('trunc-1')),
    });
    assert.equal(st.status, 200);
    const end = await withTimeout(st.ended, 5000, 'truncated stream to end');
    assert.equal(st.sse.messages()[0]?.params?.data, 'before the cut', st.text());
    assert.notEqual(end.how, 'end', 'a cut upstream stream must not look complete to the client');
    await healthy.minCallsAfter(3);
  });

  for (const method of ['POST', 'GET']) {
    test(`client disconnects mid-SSE (${method}) → upstream connection closed`, T, async () => {
      const marker = `gone-${method}`;
      const st = await openStream(warden.url, {
        method,
        headers: {
          accept: method === 'GET' ? 'text/event-stream' : ACCEPT,
          'content-type': 'application/json',
          'x-test-mode': 'hold-sse',
          'x-marker': marker,
        },
        body: method === 'POST' ? JSON.stringify(rpc(marker)) : undefined,
      });
      assert.equal(st.status, 200);
      await waitFor(() => st.sse.events.length >= 1, { timeout: 3000, what: 'first SSE event' });
      const rec = relay.last((r) => r.headers['x-marker'] === marker);
      assert.ok(rec && rec.socketClosedAt === null, 'upstream stream open');
      st.abort();
      assert.ok(await relay.closed(rec, 3000), 'proxy must close the upstream request when its client is gone');
      await healthy.minCallsAfter(3);
    });
  }

  test('healthy neighbour: every call succeeded throughout', T, async () => {
    await healthy.minCallsAfter(5);
    const r = await healthy.stop();
    healthy = null;
    assert.deepEqual(r.failures, []);
    assert.ok(r.calls >= 20, `only ${r.calls} healthy calls`);
  });

  test('credentials of the upstream URL never appear in the log', T, async () => {
    await sleep(100);
    const log = warden.proc.stderr;
    for (const s of [SECRET_USER, SECRET_PW, SECRET_TOKEN]) {
      assert.ok(!log.includes(s), `${s} appears in mcpwarden's stderr`);
    }
    assert.equal(warden.proc.exitStatus, null, 'mcpwarden still running');
  });
});

describe('upstream unreachable (flags): 502 names the URL without user, password or query', () => {
  let warden;
  let port;

  before(async () => {
    port = await closedPort();
    const wp = await freePort();
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`,
      '--upstream', `http://user:secret@127.0.0.1:${port}/mcp?token=abc`]);
  }, T);

  test('POST, GET and DELETE → 502 -32000; no secret in body or log; proxy stays up', T, async () => {
    const res = await postJson(warden.url, rpc(1, 'initialize', {
      protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' },
    }), { timeout: 8000 });
    assertRpcError(res, {
      status: 502, code: -32000, id: 1,
      messageIncludes: [`http://127.0.0.1:${port}/mcp`],
      bodyExcludes: ['secret', 'token=abc', 'abc', 'user:'],
    });
    for (const method of ['GET', 'DELETE']) {
      const r = await request(warden.url, { method, headers: { accept: 'text/event-stream', 'mcp-session-id': 's' }, timeout: 8000 });
      assert.equal(r.status, 502, `${method}: ${r.text}`);
      assert.ok(!r.text.includes('secret') && !r.text.includes('abc'), r.text);
    }
    // The DELETE's access line (its note names the upstream) is written as
    // its exchange ends, a moment after the 502 left.
    await warden.proc.waitForStderr(/ DELETE \/mcp -> 502 /);
    for (const s of ['secret', 'token=abc', 'abc']) {
      assert.ok(!warden.proc.stderr.includes(s), `"${s}" in stderr:\n${warden.proc.stderr}`);
    }
    assert.equal(warden.proc.exitStatus, null, 'mcpwarden still running');
  });
});

describe('upstream failures below HTTP (config, several upstreams), healthy neighbour on another', () => {
  let warden;
  let healthy;
  const peers = {};
  let deadPort;

  before(async () => {
    deadPort = await closedPort();
    peers.close = await startRawPeer({ mode: 'close' });
    peers.rst = await startRawPeer({ mode: 'reset' });
    peers.garbage = await startRawPeer({ mode: 'garbage' });
    const wp = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [
        { name: 'healthy', path: '/mcp', url: se.url },
        { name: 'dead', path: '/dead/mcp', url: `http://user:secret@127.0.0.1:${deadPort}/mcp?token=abc` },
        { name: 'close', path: '/close/mcp', url: peers.close.url },
        { name: 'rst', path: '/rst/mcp', url: peers.rst.url },
        { name: 'garbage', path: '/garbage/mcp', url: peers.garbage.url },
      ],
    });
    warden = await startWarden(wp, ['-c', conf]);
    healthy = await startHealthyLoop(warden.url);
    await healthy.minCallsAfter(3);
  }, T);

  after(async () => {
    await healthy?.stop().catch(() => {});
    for (const p of Object.values(peers)) await p.close();
  });

  const cases = [
    { path: '/dead/mcp', what: 'refused (nothing listening)', url: () => `http://127.0.0.1:${deadPort}/mcp` },
    { path: '/close/mcp', what: 'closes without answering', url: () => peers.close.url },
    { path: '/rst/mcp', what: 'resets before answering', url: () => peers.rst.url },
    { path: '/garbage/mcp', what: 'speaks something else than HTTP', url: () => peers.garbage.url },
  ];
  for (const c of cases) {
    test(`upstream ${c.what} → 502 -32000 naming ${c.path}'s upstream`, T, async () => {
      const res = await postJson(`${warden.base}${c.path}`, rpc(`u-${c.path}`), { timeout: 8000 });
      assertRpcError(res, {
        status: 502, code: -32000, id: `u-${c.path}`,
        messageIncludes: [c.url()],
        bodyExcludes: ['secret', 'token=abc'],
      });
      await healthy.minCallsAfter(3);
    });
  }

  test('healthy neighbour: every call succeeded throughout; no secret in the log', T, async () => {
    const r = await healthy.stop();
    healthy = null;
    assert.deepEqual(r.failures, []);
    assert.ok(r.calls >= 10, `only ${r.calls} healthy calls`);
    assert.ok(!warden.proc.stderr.includes('secret'), warden.proc.stderr);
    assert.ok(!warden.proc.stderr.includes('token=abc'), warden.proc.stderr);
  });
});

// Issue 17, logs: every request-level line has one shape, refusals made
// before any adapter saw the request included, with a status and a reason;
// numbers carry no float noise.
describe('i17 access lines: one shape, a reason for every refusal, no float noise', () => {
  let peer;
  const wardens = {};

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'logs' });
    for (const format of ['json', 'text']) {
      const wp = await freePort();
      wardens[format] = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url,
        '--log-format', format, '--max-body', String(MAX_BODY)]);
    }
  }, T);

  after(async () => {
    await peer?.close();
  });

  // Each: bytes, the status, what the reason says.
  const refusals = (port) => [
    [`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n: v\r\nContent-Length: 2\r\n\r\n{}`, 400, /empty header field name/],
    [`POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}`, 400, /missing Host/],
    [`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nMcp-Session-Id: a\r\nMcp-Session-Id: b\r\nContent-Length: 2\r\n\r\n{}`, 400, /repeated Mcp-Session-Id/],
    [`GET /mcp HTTP/2.0\r\nHost: 127.0.0.1:${port}\r\n\r\n`, 505, /HTTP\/1\.0 and HTTP\/1\.1/],
    [`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`, 405, /not a forward proxy/],
    [`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Big: ${'b'.repeat(40000)}\r\n\r\n`, 431, /./],
    [`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 999999\r\n\r\n`, 413, /max_body_bytes/],
    [`THIS IS NOT HTTP\r\n\r\n`, 400, /./],
  ];

  test('JSON: refusals and answered requests are lines of the same keys, each with status and reason', T, async () => {
    const w = wardens.json;
    for (const [bytes, status] of refusals(w.port)) {
      const res = await rawExchange(w.port, bytes);
      assert.equal(res.status, status, res.head);
    }
    const ok = await postJson(w.url, { jsonrpc: '2.0', id: 'log-ok', method: 'ping' });
    assert.equal(ok.status, 200);
    await w.proc.waitForStderr(/"rpc_method":"ping"/);
    const lines = w.proc.stderr.split('\n').filter((l) => l.includes('"msg":"request"'));
    const objs = lines.map((l) => JSON.parse(l));
    const keys = JSON.stringify(Object.keys(objs.find((o) => o.rpc_method === 'ping')));
    for (const [, status, why] of refusals(w.port)) {
      const o = objs.find((x) => x.status === status && why.test(x.note ?? ''));
      assert.ok(o, `no access line with status ${status} and a reason matching ${why}:\n${lines.join('\n')}`);
      assert.equal(JSON.stringify(Object.keys(o)), keys, `a refusal's line has other keys: ${JSON.stringify(o)}`);
      assert.equal(typeof o.latency_ms, 'number');
      assert.equal(o.client.startsWith('127.0.0.1:'), true);
    }
    // Never a raw header value or body byte in the log.
    assert.ok(!w.proc.stderr.includes('bbbbbbbb'), 'a header value was logged');
    // Fixed precision: whole microseconds at most, never 17 digits of noise.
    for (const l of lines) {
      const m = /"latency_ms":([0-9.e+-]+)/.exec(l);
      assert.ok(m && /^\d+(\.\d{1,3})?$/.test(m[1]), `latency with noise: ${l}`);
    }
  });

  test('text: a refusal is an access line like any other, with its reason', T, async () => {
    const w = wardens.text;
    const res = await rawExchange(w.port, refusals(w.port)[0][0]);
    assert.equal(res.status, 400);
    await w.proc.waitForStderr(/ -> 400 .*note=/);
    assert.match(w.proc.stderr, /info  #\d+ 127\.0\.0\.1:\d+ POST \/mcp -> 400 \d+\.\dms in=\d+ out=\d+ note=empty header field name/);
  });

  // The adapter's own 400s (a body that is not JSON, JSON that is not
  // JSON-RPC) say why in the access line too, not only in the reply.
  test('JSON: a 400 for a body that is not JSON or not JSON-RPC names its reason', T, async () => {
    const w = wardens.json;
    const cases = [['this is not json', /not valid JSON/], ['{"hello":"world"}', /JSON-RPC/]];
    for (const [body, why] of cases) {
      const bytes = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${w.port}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      const res = await rawExchange(w.port, bytes);
      assert.equal(res.status, 400, res.head);
      // The access line is written when the exchange ends: wait for it.
      await w.proc.waitForStderr(new RegExp(`"status":400,.*"note":"[^"]*${why.source}`));
      const lines = w.proc.stderr.split('\n').filter((l) => l.includes('"msg":"request"')).map((l) => JSON.parse(l))
        .filter((o) => o.status === 400 && o.http_method === 'POST' && o.path === '/mcp' && o.rpc_method === null);
      assert.ok(lines.some((o) => why.test(o.note ?? '')), `no 400 line whose note matches ${why}: ${JSON.stringify(lines)}`);
    }
  });
});

// A scripted MCP upstream of our own (plain node:http, no SDK) for the cases
// a real server never produces. It records every request it receives and
// behaves according to a mode: the `X-Test-Mode` request header when present
// (an end-to-end header, so the proxy forwards it), else the peer's default.
//
// Modes
//   json         a tiny MCP server answering with application/json: initialize
//                (issues Mcp-Session-Id), any other request echoes its method
//                and params; notifications and responses get a bare 202.
//   sse          same answers, as a one-event text/event-stream.
//   slow-sse     text/event-stream WITHOUT X-Accel-Buffering; `events` progress
//                notifications `interval` ms apart, then the response.
//   hold-sse     text/event-stream, one event, then nothing until the client
//                goes away (client-disconnect and keep-alive-comment cases).
//   truncate-sse text/event-stream, one event, then a TCP reset.
//   silent       reads the request and never answers.
//   late-json    the json answer, after X-Test-Delay-Ms (default 1000) of
//                silence on the connection.
//   reset        starts a JSON reply (headers + part of the body), then resets.
//   not-http     answers bytes that are not HTTP at all, then closes.
//   bad-json     Content-Type: application/json with a body that is not JSON.
//   expired      404 with a JSON-RPC error body, as for an expired session.
//   auth         401 + WWW-Authenticate unless `Authorization: Bearer good`;
//                GET /.well-known/oauth-* documents are always served.
//   relay        forwards the request to `relayTo` (a real MCP server) and
//                streams its answer back: a healthy session can share the
//                peer (and so the proxy's upstream pool) with the bad modes.
//
// Each record: {t, mode, method, url, headers (lowercased), rawHeaders,
// body, socketClosedAt, responseDone}. `closed(rec)` waits for the upstream
// side of that request's connection to close.
//
// Run alone for manual checks:  node tests/integration/peers/scripted.mjs slow-sse

import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { withTimeout } from '../lib/util.mjs';

export const EXPIRED_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: null,
  error: { code: -32001, message: 'Session not found' },
});

export const NOT_JSON_BODY = '<html><body>this is not JSON</body></html>\n';
export const NOT_HTTP_BYTES = 'SSH-2.0-OpenSSH_9.2 this is not HTTP at all\r\n\r\n\r\n';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer',
  'transfer-encoding', 'upgrade', 'host', 'content-length']);

function rpcAnswer(msg, peerName) {
  if (msg.method === 'initialize') {
    return {
      jsonrpc: '2.0',
      id: msg.id,
      result: {
        protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: peerName, version: '0.0.0' },
      },
    };
  }
  if (msg.method === 'tools/list') {
    return {
      jsonrpc: '2.0',
      id: msg.id,
      result: { tools: [{ name: 'whoami', inputSchema: { type: 'object' } }] },
    };
  }
  if (msg.method === 'tools/call') {
    return {
      jsonrpc: '2.0',
      id: msg.id,
      result: { content: [{ type: 'text', text: `peer ${peerName} ran ${msg.params?.name}` }] },
    };
  }
  return { jsonrpc: '2.0', id: msg.id, result: { peer: peerName, method: msg.method, params: msg.params ?? null } };
}

function isRequest(msg) {
  return msg && typeof msg === 'object' && !Array.isArray(msg) && 'method' in msg && 'id' in msg;
}

/**
 * Start a peer on 127.0.0.1 (ephemeral port). Options: mode (default
 * 'json'), name, relayTo (URL, for 'relay'), events / interval (slow-sse),
 * sessionId (issued on initialize). Returns {port, url(path), received,
 * last(pred), closed(rec, ms), close()}.
 */
export async function startScriptedPeer({
  mode = 'json', name = 'peer', relayTo = null, events = 5, interval = 300,
  sessionId = 'peer-session-1', path = '/mcp',
} = {}) {
  const received = [];
  const sockets = new Set();
  const socketRecs = new WeakMap(); // socket -> records it carried
  let seq = 0;

  const server = http.createServer((req, res) => {
    const parts = [];
    const rec = {
      seq: seq++,
      t: Date.now(),
      mode: req.headers['x-test-mode'] ?? mode,
      method: req.method,
      url: req.url,
      headers: { ...req.headers },
      rawHeaders: [...req.rawHeaders],
      body: '',
      socketClosedAt: null,
      responseDone: false,
    };
    received.push(rec);
    socketRecs.get(req.socket)?.push(rec);
    res.once('finish', () => { rec.responseDone = true; });
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      rec.body = Buffer.concat(parts).toString('utf8');
      handle(rec, req, res).catch((e) => {
        rec.handlerError = e.message;
        if (!res.headersSent) { res.writeHead(500); res.end(); } else res.destroy();
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    socketRecs.set(s, []);
    s.once('close', () => {
      sockets.delete(s);
      const t = Date.now();
      for (const r of socketRecs.get(s)) r.socketClosedAt = t;
    });
  });
  // Node's default 5 s keep-alive timeout is fine; no request timeout so
  // 'silent' and 'hold-sse' really hold.
  server.requestTimeout = 0;
  server.headersTimeout = 0;

  async function handle(rec, req, res) {
    let msg = null;
    try { msg = rec.body ? JSON.parse(rec.body) : null; } catch { /* leave null */ }
    const id = msg && typeof msg === 'object' ? msg.id : undefined;

    // OAuth discovery documents, whatever the mode.
    if (req.method === 'GET' && req.url.startsWith('/.well-known/oauth-protected-resource')) {
      return json(res, 200, { resource: `http://127.0.0.1:${port}${path}`, authorization_servers: [`http://127.0.0.1:${port}`], peer: name, seen: req.url });
    }
    if (req.method === 'GET' && req.url.startsWith('/.well-known/oauth-authorization-server')) {
      return json(res, 200, { issuer: `http://127.0.0.1:${port}`, authorization_endpoint: `http://127.0.0.1:${port}/authorize`, token_endpoint: `http://127.0.0.1:${port}/token`, response_types_supported: ['code'], peer: name });
    }

    switch (rec.mode) {
      case 'relay':
        return relay(rec, req, res);
      case 'silent':
        return; // never answer; the socket stays open
      case 'late-json': {
        const ms = Number(req.headers['x-test-delay-ms'] ?? 1000);
        await new Promise((r) => setTimeout(r, ms));
        return answer(rec, msg, res, 'json');
      }
      case 'not-http':
        req.socket.end(NOT_HTTP_BYTES);
        return;
      case 'bad-json':
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(NOT_JSON_BODY) });
        res.end(NOT_JSON_BODY);
        return;
      case 'reset': {
        const full = JSON.stringify(rpcAnswer(msg ?? { id: null, method: 'x' }, name));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(full) });
        res.write(full.slice(0, 10));
        setTimeout(() => req.socket.resetAndDestroy(), 30);
        return;
      }
      case 'expired':
        res.writeHead(404, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(EXPIRED_BODY) });
        res.end(EXPIRED_BODY);
        return;
      case 'auth':
        if (req.headers.authorization !== 'Bearer good') {
          const body = JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code: -32001, message: 'Unauthorized' } });
          res.writeHead(401, {
            'content-type': 'application/json',
            'www-authenticate': `Bearer error="invalid_token", resource_metadata="http://127.0.0.1:${port}/.well-known/oauth-protected-resource${path}"`,
            'content-length': Buffer.byteLength(body),
          });
          res.end(body);
          return;
        }
        return answer(rec, msg, res, 'json');
      case 'slow-sse':
        return slowSse(rec, msg, req, res);
      case 'hold-sse':
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write(`id: hold-1\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'holding' } })}\n\n`);
        return; // until the other side goes away
      case 'truncate-sse':
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write(`id: t-1\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'before the cut' } })}\n\n`);
        setTimeout(() => req.socket.resetAndDestroy(), 100);
        return;
      case 'sse':
      case 'json':
      default:
        if (req.method === 'GET') {
          res.writeHead(405, { allow: 'POST, DELETE' });
          res.end();
          return;
        }
        if (req.method === 'DELETE') {
          res.writeHead(200, { 'content-length': 0 });
          res.end();
          return;
        }
        return answer(rec, msg, res, rec.mode === 'sse' ? 'sse' : 'json');
    }
  }

  function answer(rec, msg, res, kind) {
    if (!isRequest(msg)) {
      res.writeHead(202); // notification or response: bare 202
      res.end();
      return;
    }
    const reply = JSON.stringify(rpcAnswer(msg, name));
    const headers = {};
    if (msg.method === 'initialize') headers['mcp-session-id'] = sessionId;
    if (kind === 'sse') {
      res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(`event: message\nid: ${rec.seq}-1\ndata: ${reply}\n\n`);
    } else {
      res.writeHead(200, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) });
      res.end(reply);
    }
  }

  function slowSse(rec, msg, req, res) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const token = msg?.params?._meta?.progressToken ?? 'slow';
    let i = 0;
    const timer = setInterval(() => {
      i++;
      if (i <= events) {
        const n = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: i, total: events } };
        res.write(`id: ${rec.seq}-${i}\ndata: ${JSON.stringify(n)}\n\n`);
        return;
      }
      clearInterval(timer);
      const reply = isRequest(msg) ? rpcAnswer(msg, name) : { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'end' } };
      res.end(`id: ${rec.seq}-end\ndata: ${JSON.stringify(reply)}\n\n`);
    }, interval);
    res.once('close', () => clearInterval(timer));
  }

  function relay(rec, req, res) {
    if (!relayTo) throw new Error('relay mode without relayTo');
    const target = new URL(relayTo);
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && k !== 'x-test-mode') headers[k] = v;
    return new Promise((resolve) => {
      const up = http.request({
        host: target.hostname, port: target.port, path: target.pathname, method: req.method, headers, agent: false,
      }, (ur) => {
        const h = {};
        for (const [k, v] of Object.entries(ur.headers)) if (!HOP_BY_HOP.has(k)) h[k] = v;
        res.writeHead(ur.statusCode, h);
        res.flushHeaders();
        ur.on('data', (d) => res.write(d));
        ur.on('end', () => { res.end(); resolve(); });
        ur.on('error', () => { res.destroy(); resolve(); });
      });
      up.on('error', () => { if (!res.headersSent) { res.writeHead(502); res.end(); } else res.destroy(); resolve(); });
      // The proxy hung up: drop our request to the real server too.
      res.once('close', () => { if (!res.writableFinished) up.destroy(); });
      up.end(rec.body);
    });
  }

  function json(res, status, obj) {
    const body = JSON.stringify(obj);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = server.address().port;

  return {
    port,
    name,
    url: `http://127.0.0.1:${port}${path}`,
    received,
    /** Most recent request matching pred. */
    last(pred = () => true) {
      for (let i = received.length - 1; i >= 0; i--) if (pred(received[i])) return received[i];
      return undefined;
    },
    /** Wait until a request matching pred arrives. */
    async waitRequest(pred, ms = 5000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const r = received.find(pred);
        if (r) return r;
        if (Date.now() > deadline) throw new Error(`peer ${name}: no matching request within ${ms} ms; got ${JSON.stringify(received.map((x) => [x.method, x.url, x.mode]))}`);
        await new Promise((res2) => setTimeout(res2, 10));
      }
    },
    /** Wait until the upstream connection that carried `rec` is closed. */
    async closed(rec, ms = 3000) {
      const deadline = Date.now() + ms;
      while (rec.socketClosedAt === null) {
        if (Date.now() > deadline) return false;
        await new Promise((res2) => setTimeout(res2, 10));
      }
      return true;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await withTimeout(new Promise((resolve) => server.close(() => resolve())), 3000, `peer ${name} close`).catch(() => {});
    },
  };
}

// node tests/integration/peers/scripted.mjs [mode] [relayTo]
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const peer = await startScriptedPeer({ mode: process.argv[2] ?? 'json', relayTo: process.argv[3] ?? null });
  console.error(`scripted peer (${process.argv[2] ?? 'json'}) listening on 127.0.0.1:${peer.port}`);
}

// A small MCP upstream of our own (plain node:http, no SDK) for the fault
// suite (faults.test.mjs). Unlike peers/scripted.mjs it can run as a child
// process on a fixed port, so a test can SIGKILL it mid-call and start it
// again on the same port (a real upstream restart), and it keeps its
// sessions in memory like a real server: after a restart the old session
// ids are unknown and get 404.
//
// Behaviour per request: the `X-Test-Mode` request header (an end-to-end
// header, so the proxy forwards it), else `json`.
//
//   json        initialize issues a new Mcp-Session-Id; a request carrying
//               an unknown Mcp-Session-Id gets 404 + JSON-RPC -32001; any
//               other request is answered with application/json: tools/call
//               → text content naming the peer and its pid, anything else →
//               {peer, pid, method}. Notifications and responses: bare 202.
//   delay       as json, after `X-Delay-Ms` ms (a slow upstream).
//   slow-body   the JSON reply's head and first bytes at once, the rest
//               after `X-Delay-Ms` ms.
//   drop        reads the request, waits `X-Delay-Ms` ms, then closes the
//               connection without a byte of reply (an upstream dying
//               mid-call while the rest of it stays up).
//   hold-sse    text/event-stream: one event at once, then nothing until
//               the other side goes away (a call in flight).
//   sse-fin     text/event-stream: `X-Events` (default 3) progress events
//               (each padded with `X-Pad` bytes) written in one go, then at
//               once FIN with no terminating chunk (the reply cut mid-stream,
//               cleanly at TCP level).
//
// In process: startFaultPeer({port, name}) → {port, url, received,
// waitRequest(pred, ms), closed(rec, ms), close()}; each record is {seq, t,
// mode, method, url, headers, body, msg, socketClosedAt, responseDone}.
// As a child process:
//   node tests/integration/peers/fault-peer.mjs --port P [--name N] [--stdin-guard]
// prints `fault-peer listening P` once it accepts connections.

import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { withTimeout } from '../lib/util.mjs';

function rpcResult(msg, name) {
  if (msg.method === 'initialize') {
    return {
      protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
      capabilities: { tools: {} },
      serverInfo: { name, version: '0.0.0' },
    };
  }
  if (msg.method === 'tools/list') return { tools: [{ name: 'whoami', inputSchema: { type: 'object' } }] };
  if (msg.method === 'tools/call') {
    return { content: [{ type: 'text', text: `${name}/${process.pid} ran ${msg.params?.name}` }] };
  }
  return { peer: name, pid: process.pid, method: msg.method };
}

const isRequest = (m) => m && typeof m === 'object' && !Array.isArray(m) && 'method' in m && 'id' in m;

export async function startFaultPeer({ port = 0, name = 'fault-peer' } = {}) {
  const received = [];
  const sockets = new Set();
  const sessions = new Set();
  const timers = new Set();
  let seq = 0;
  let nextSession = 1;

  const later = (ms, fn) => {
    const t = setTimeout(() => { timers.delete(t); fn(); }, ms);
    timers.add(t);
    return t;
  };

  const server = http.createServer((req, res) => {
    const rec = {
      seq: seq++,
      t: Date.now(),
      mode: req.headers['x-test-mode'] ?? 'json',
      method: req.method,
      url: req.url,
      headers: { ...req.headers },
      body: '',
      msg: null,
      socketClosedAt: null,
      responseDone: false,
    };
    received.push(rec);
    req.socket.recs.push(rec);
    res.once('finish', () => { rec.responseDone = true; });
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      rec.body = Buffer.concat(parts).toString('utf8');
      try { rec.msg = rec.body ? JSON.parse(rec.body) : null; } catch { rec.msg = null; }
      handle(rec, req, res);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.recs = [];
    s.on('error', () => {});
    s.once('close', () => {
      sockets.delete(s);
      const t = Date.now();
      for (const r of s.recs) r.socketClosedAt = t;
    });
  });
  server.requestTimeout = 0;
  server.headersTimeout = 0;

  function json(res, status, obj, headers = {}) {
    const body = JSON.stringify(obj);
    res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }

  // The JSON-RPC answer for one message, or null for a bare 202; with the
  // status and headers to send it with.
  function answer(rec, req) {
    const msg = rec.msg;
    const sid = req.headers['mcp-session-id'];
    if (req.method !== 'POST') return { status: 405, body: null, headers: { allow: 'POST' } };
    if (!msg || typeof msg !== 'object') {
      return { status: 400, body: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } } };
    }
    if (sid && !sessions.has(sid)) {
      return { status: 404, body: { jsonrpc: '2.0', id: msg.id ?? null, error: { code: -32001, message: 'Session not found' } } };
    }
    if (!isRequest(msg)) return { status: 202, body: null };
    const headers = {};
    if (msg.method === 'initialize') {
      const id = `${name}-${process.pid}-${nextSession++}`;
      sessions.add(id);
      headers['mcp-session-id'] = id;
    }
    return { status: 200, body: { jsonrpc: '2.0', id: msg.id, result: rpcResult(msg, name) }, headers };
  }

  function send(res, a) {
    if (a.body) return json(res, a.status, a.body, a.headers);
    res.writeHead(a.status, a.headers ?? {});
    res.end();
  }

  function handle(rec, req, res) {
    const delay = Number(req.headers['x-delay-ms'] ?? 0);
    switch (rec.mode) {
      case 'delay':
        later(delay, () => { if (!res.destroyed) send(res, answer(rec, req)); });
        return;
      case 'slow-body': {
        const a = answer(rec, req);
        const body = JSON.stringify(a.body ?? {});
        res.writeHead(a.status, { ...a.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.write(body.slice(0, 8));
        later(delay, () => { if (!res.destroyed) res.end(body.slice(8)); });
        return;
      }
      case 'drop':
        later(delay, () => req.socket.destroy());
        return;
      case 'hold-sse':
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write(`id: hold-${rec.seq}\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'holding' } })}\n\n`);
        return;
      case 'sse-fin': {
        const n = Number(req.headers['x-events'] ?? 3);
        const pad = 'p'.repeat(Number(req.headers['x-pad'] ?? 0));
        const token = rec.msg?.params?._meta?.progressToken ?? 'fin';
        let out = '';
        for (let i = 1; i <= n; i++) {
          const ev = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: i, total: n + 1, message: pad } };
          out += `id: fin-${rec.seq}-${i}\ndata: ${JSON.stringify(ev)}\n\n`;
        }
        // One write of head + events, then FIN: the last events and the
        // end arrive together at the proxy.
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write(out);
        req.socket.end();
        return;
      }
      case 'json':
      default:
        send(res, answer(rec, req));
    }
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = server.address().port;

  return {
    port: bound,
    name,
    url: `http://127.0.0.1:${bound}/mcp`,
    received,
    sessions,
    async waitRequest(pred, ms = 5000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const r = received.find(pred);
        if (r) return r;
        if (Date.now() > deadline) throw new Error(`${name}: no matching request within ${ms} ms`);
        await new Promise((r2) => setTimeout(r2, 10));
      }
    },
    /** Wait until the connection that carried `rec` is closed; false on timeout. */
    async closed(rec, ms = 3000) {
      const deadline = Date.now() + ms;
      while (rec.socketClosedAt === null) {
        if (Date.now() > deadline) return false;
        await new Promise((r2) => setTimeout(r2, 10));
      }
      return true;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await withTimeout(new Promise((r) => server.close(() => r())), 3000, `${name} close`).catch(() => {});
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };
  const peer = await startFaultPeer({ port: Number(opt('--port', 0)), name: opt('--name', 'fault-peer') });
  if (args.includes('--stdin-guard')) {
    // The test process holds our stdin: if it dies, so do we.
    process.stdin.on('end', () => process.exit(0));
    process.stdin.on('close', () => process.exit(0));
    process.stdin.resume();
  }
  process.stdout.write(`fault-peer listening ${peer.port}\n`);
}

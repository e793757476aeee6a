// Hosts SDK servers of ours behind one HTTP listener, one
// StreamableHTTPServerTransport per stateful session: the part every
// SDK-based peer (peers/drift-server.mjs, peers/validate-peer.mjs) shares.
//
//   startSdkHost({port, onInitialize(body, transport)}) -> {url, close()}
//
// onInitialize is awaited for each initialize request without a session:
// it connects a fresh Server to the transport (and may note the request).
// A request naming no known session gets 404 (with an id) or 400 (without),
// as the SDK's own examples answer.

import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

export async function startSdkHost({ port = 0, onInitialize }) {
  const transports = new Map();
  const sockets = new Set();
  const httpServer = http.createServer(async (req, res) => {
    const parts = [];
    for await (const d of req) parts.push(d);
    const raw = Buffer.concat(parts).toString('utf8');
    let body;
    try { body = raw ? JSON.parse(raw) : undefined; } catch { body = undefined; }
    const sid = req.headers['mcp-session-id'];
    let t = sid ? transports.get(sid) : undefined;
    if (!t && req.method === 'POST' && body && isInitializeRequest(body)) {
      t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => { transports.set(id, t); },
      });
      t.onclose = () => { if (t.sessionId) transports.delete(t.sessionId); };
      await onInitialize(body, t, transports);
    }
    if (!t) {
      res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no such session' } }));
      return;
    }
    await t.handleRequest(req, res, body);
  });
  httpServer.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise((r) => httpServer.listen(port, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${httpServer.address().port}/mcp`,
    async close() {
      for (const t of transports.values()) await t.close().catch(() => {});
      for (const s of sockets) s.destroy();
      await new Promise((r) => httpServer.close(r));
    },
  };
}

// A scripted MCP server for the client-profile suite (issue 21, item 5):
// it answers tools/list with a tools/list result object given as is, byte
// for byte what the test wrote (nextCursor: null, boolean subschemas,
// odd members and all), so the real SDK client's own list validation can
// be tried on exactly the listing `mcpwarden check --profile` judged.
//
// Paths: /<name>/mcp answers with results[name]. Streamable HTTP, JSON
// replies, one session per initialize (Mcp-Session-Id), GET 405.
//
// startProfilePeer(results) -> {url(name), calls(method), close()}

import http from 'node:http';
import { withTimeout } from '../lib/util.mjs';

export async function startProfilePeer(results) {
  const received = [];
  const sockets = new Set();
  let nsess = 0;

  const send = (res, code, obj, headers = {}) => {
    const b = JSON.stringify(obj);
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(b), ...headers });
    res.end(b);
  };

  const server = http.createServer((req, res) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      let msg = null;
      try { msg = JSON.parse(Buffer.concat(parts).toString('utf8') || 'null'); } catch { /* not JSON */ }
      received.push({ method: req.method, url: req.url, body: msg });
      const m = /^\/([A-Za-z0-9_-]+)\/mcp$/.exec(new URL(req.url, 'http://x').pathname);
      if (!m || !(m[1] in results)) { res.writeHead(404); return res.end(); }
      if (req.method === 'GET') { res.writeHead(405, { allow: 'POST, DELETE' }); return res.end(); }
      if (req.method === 'DELETE') { res.writeHead(200, { 'content-length': 0 }); return res.end(); }
      if (!msg || typeof msg !== 'object') return send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      if (!('id' in msg)) { res.writeHead(202); return res.end(); }
      if (msg.method === 'initialize') {
        return send(res, 200, {
          jsonrpc: '2.0', id: msg.id,
          result: { protocolVersion: msg.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'profile-peer', version: '0' } },
        }, { 'mcp-session-id': `p-${++nsess}` });
      }
      if (msg.method === 'tools/list') return send(res, 200, { jsonrpc: '2.0', id: msg.id, result: results[m[1]] });
      return send(res, 200, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    });
  });
  server.on('connection', (s) => { sockets.add(s); s.once('close', () => sockets.delete(s)); });
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', resolve); });
  const port = server.address().port;
  return {
    url: (name) => `http://127.0.0.1:${port}/${name}/mcp`,
    calls: (method) => received.filter((r) => r.body?.method === method),
    async close() {
      for (const s of sockets) s.destroy();
      await withTimeout(new Promise((r) => server.close(() => r())), 3000, 'profile-peer close').catch(() => {});
    },
  };
}

// A scripted MCP server for the telemetry suite (issue 23): Streamable
// HTTP with JSON replies, one session per initialize, and a record of
// every request's headers and body, so the test can read the traceparent
// (header and params._meta) mcpwarden passed on.
//
// Tools: "echo" (returns its text), "fail" (a tool error, isError),
// "boom" (a JSON-RPC error -32001), "secret" (the test's policy denies it;
// answered like echo if it ever came).
//
// startTracePeer() -> {url, received, close()}

import http from 'node:http';
import { withTimeout } from '../lib/util.mjs';

const TOOLS = [
  { name: 'echo', description: 'Echo the text', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'fail', description: 'Always a tool error', inputSchema: { type: 'object' } },
  { name: 'boom', description: 'Always a JSON-RPC error', inputSchema: { type: 'object' } },
  { name: 'secret', description: 'Denied by the test policy', inputSchema: { type: 'object' } },
];

export async function startTracePeer() {
  const received = [];
  const sockets = new Set();
  let nsess = 0;
  const send = (res, obj, headers = {}) => {
    const b = JSON.stringify(obj);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(b), ...headers });
    res.end(b);
  };
  const server = http.createServer((req, res) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      let msg = null;
      try { msg = JSON.parse(Buffer.concat(parts).toString('utf8') || 'null'); } catch { /* not JSON */ }
      received.push({ method: req.method, headers: req.headers, body: msg });
      if (req.method === 'GET') { res.writeHead(405, { allow: 'POST, DELETE' }); return res.end(); }
      if (req.method === 'DELETE') { res.writeHead(200, { 'content-length': 0 }); return res.end(); }
      if (!msg || !('id' in msg)) { res.writeHead(202); return res.end(); }
      const r = (result) => send(res, { jsonrpc: '2.0', id: msg.id, result });
      switch (msg.method) {
        case 'initialize':
          return send(res, {
            jsonrpc: '2.0', id: msg.id,
            result: { protocolVersion: msg.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'trace-peer', version: '0' } },
          }, { 'mcp-session-id': `trace-session-${++nsess}-0123456789abcdef` });
        case 'tools/list': return r({ tools: TOOLS });
        case 'ping': return r({});
        case 'tools/call': {
          const name = msg.params?.name;
          if (name === 'echo') return r({ content: [{ type: 'text', text: String(msg.params?.arguments?.text ?? '') }] });
          if (name === 'fail') return r({ content: [{ type: 'text', text: 'it failed' }], isError: true });
          return send(res, { jsonrpc: '2.0', id: msg.id, error: { code: -32001, message: 'boom' } });
        }
        default:
          return send(res, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
      }
    });
  });
  server.on('connection', (s) => { sockets.add(s); s.once('close', () => sockets.delete(s)); });
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', resolve); });
  const port = server.address().port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    received,
    calls: (tool) => received.filter((r) => r.body?.method === 'tools/call' && (!tool || r.body.params?.name === tool)),
    async close() {
      for (const s of sockets) s.destroy();
      await withTimeout(new Promise((r) => server.close(() => r())), 3000, 'trace-peer close').catch(() => {});
    },
  };
}

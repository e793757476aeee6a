// A legacy HTTP+SSE MCP server (2024-11-05 transport) on the official SDK
// 1.x (SSEServerTransport, low-level Server) for the telemetry suite: it
// records the headers and body of every message POST, so a test can read
// the traceparent mcpwarden passed to a legacy upstream.
//
// Tools: "echo" (returns its text).
//
//   startTraceSsePeer() -> {url (the /sse endpoint), posts: [{headers, body}], close()}

import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const TOOLS = [
  { name: 'echo', description: 'Echo the text', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
];

function newServer() {
  const server = new Server({ name: 'trace-sse-peer', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => ({
    content: [{ type: 'text', text: String(req.params.arguments?.text ?? '') }],
  }));
  return server;
}

export async function startTraceSsePeer() {
  const posts = [];
  const transports = new Map();
  const sockets = new Set();
  const httpServer = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const t = new SSEServerTransport('/messages', res);
      transports.set(t.sessionId, t);
      res.on('close', () => transports.delete(t.sessionId));
      await newServer().connect(t);
      return;
    }
    if (req.method === 'POST' && url.pathname === '/messages') {
      const parts = [];
      for await (const d of req) parts.push(d);
      let body;
      try { body = JSON.parse(Buffer.concat(parts).toString('utf8')); } catch { body = undefined; }
      posts.push({ headers: req.headers, body });
      const t = transports.get(url.searchParams.get('sessionId'));
      if (!t) { res.writeHead(404); res.end('no such session'); return; }
      await t.handlePostMessage(req, res, body);
      return;
    }
    res.writeHead(404);
    res.end();
  });
  httpServer.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise((r) => httpServer.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${httpServer.address().port}/sse`,
    posts,
    async close() {
      for (const t of transports.values()) await t.close().catch(() => {});
      for (const s of sockets) s.destroy();
      await new Promise((r) => httpServer.close(r));
    },
  };
}

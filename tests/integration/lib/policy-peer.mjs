// A counting MCP upstream for the policy suite, built on the official SDK:
// McpServer + StreamableHTTPServerTransport (one per session) on node:http.
//
// Its tools carry mixed annotations (read-only, destructive, writing but not
// destructive, unannotated, a read-only claim under a destructive name).
// Every JSON-RPC message the peer receives is recorded before the SDK sees
// it, so a test can prove that a refused call never reached the upstream:
// `calls(name)` counts tools/call requests for a tool, whatever the SDK then
// did with them.
//
// Options
//   json      reply with application/json instead of SSE (enableJsonResponse)
//   pageSize  > 0: tools/list is paginated, pageSize tools a page, with an
//             opaque nextCursor
//
// peer.addTool(name, annotations) registers one more tool on every live
// session; the SDK then sends notifications/tools/list_changed.

import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/** The fixture's tools: name → annotations (undefined: none) and arguments. */
export const TOOLS = [
  { name: 'get_weather', annotations: { readOnlyHint: true, openWorldHint: true } },
  { name: 'search_docs', annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } },
  { name: 'run_query', annotations: { readOnlyHint: true }, args: { sql: z.string() } },
  { name: 'delete_file', annotations: { destructiveHint: true }, args: { path: z.string().optional() } },
  { name: 'drop_table', annotations: { readOnlyHint: false, destructiveHint: true } },
  { name: 'append_log', annotations: { readOnlyHint: false, destructiveHint: false } },
  { name: 'mystery', annotations: undefined },
  { name: 'deleteUser', annotations: { readOnlyHint: true } },
  { name: 'admin.stats', annotations: { readOnlyHint: true } },
  { name: 'admin.rotate_keys', annotations: { readOnlyHint: false, destructiveHint: false } },
];

/** The tools the read-only preset lets through: annotated read-only and no
 * change word in the name (run_query claims read-only, but "run" is one). */
export const READ_ONLY = ['get_weather', 'search_docs', 'admin.stats'];

function registerTool(server, tool) {
  const config = { description: `fixture tool ${tool.name}` };
  if (tool.annotations) config.annotations = tool.annotations;
  if (tool.args) config.inputSchema = tool.args;
  return server.registerTool(tool.name, config, async (args) => ({
    content: [{ type: 'text', text: `${tool.name} ran with ${JSON.stringify(args ?? {})}` }],
  }));
}

function makeServer(peer) {
  const server = new McpServer({ name: 'policy-peer', version: '1.0.0' });
  for (const t of [...TOOLS, ...peer.extraTools]) registerTool(server, t);
  if (peer.pageSize > 0) {
    // Page the SDK's own listing: wrap the handler McpServer installed.
    const full = server.server._requestHandlers.get('tools/list');
    server.server.setRequestHandler(ListToolsRequestSchema, async (req, extra) => {
      const all = await full({ jsonrpc: '2.0', id: 0, method: 'tools/list', params: {} }, extra);
      const start = req.params?.cursor ? Number(Buffer.from(req.params.cursor, 'base64url').toString()) : 0;
      const page = all.tools.slice(start, start + peer.pageSize);
      const next = start + peer.pageSize;
      const res = { tools: page };
      if (next < all.tools.length) res.nextCursor = Buffer.from(String(next)).toString('base64url');
      peer.pagesServed++;
      return res;
    });
  }
  return server;
}

export async function startPolicyPeer({ json = false, pageSize = 0 } = {}) {
  const peer = {
    json,
    pageSize,
    received: [],      // every JSON-RPC message, in order
    pagesServed: 0,
    extraTools: [],
    sessions: new Map(), // session id → {transport, server}
  };

  const httpServer = http.createServer(async (req, res) => {
    try {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const text = Buffer.concat(chunks).toString('utf8');
      let body;
      if (text) {
        try { body = JSON.parse(text); } catch { body = undefined; }
        for (const m of Array.isArray(body) ? body : body ? [body] : []) peer.received.push(m);
      }
      const sid = req.headers['mcp-session-id'];
      let s = sid ? peer.sessions.get(sid) : undefined;
      if (!s) {
        const isInit = body && !Array.isArray(body) && body.method === 'initialize';
        if (sid || !isInit || req.method !== 'POST') {
          res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no session' } }));
          return;
        }
        const server = makeServer(peer);
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: json,
          onsessioninitialized: (id) => { peer.sessions.set(id, s); },
        });
        transport.onclose = () => { if (transport.sessionId) peer.sessions.delete(transport.sessionId); };
        s = { transport, server };
        await server.connect(transport);
      }
      await s.transport.handleRequest(req, res, body);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e?.stack ?? e));
    }
  });
  await new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address();

  return Object.assign(peer, {
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    /** tools/call requests received for `name`. */
    calls(name) {
      return peer.received.filter((m) => m.method === 'tools/call' && m.params?.name === name).length;
    },
    /** Methods received, in order. */
    methods() { return peer.received.map((m) => m.method).filter(Boolean); },
    /** Register a tool on every live session (each sends list_changed). */
    addTool(name, annotations) {
      const tool = { name, annotations };
      peer.extraTools.push(tool);
      for (const { server } of peer.sessions.values()) registerTool(server, tool);
    },
    async close() {
      for (const { transport } of peer.sessions.values()) await transport.close().catch(() => {});
      await new Promise((resolve) => httpServer.close(resolve));
      httpServer.closeAllConnections?.();
    },
  });
}

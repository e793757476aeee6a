// A server of ours for `mcpwarden replay` (replay.test.mjs): the official
// TypeScript SDK's low-level Server over StreamableHTTPServerTransport
// (stateful sessions), in two modes. "v1" is the build a capture was taken
// from; "v2" drifts the ways issue 21 lists, one tool per way:
//
//   tool          v1                                   v2 (drift)                  replay code
//   get_status    structured {state, count: 3}         count: "3" (a string)       replay-structured-type,
//                                                                                  replay-output-schema
//   lookup        isError false                        isError true                replay-iserror-flip
//   fetch_report  an error result with structured      the same error, no          replay-structured-missing
//                 {error}                              structuredContent
//   render        content [text]                       content [image]             replay-content-types
//   search        a result                             a JSON-RPC error            replay-error-flip
//   stable        text with a fresh UUID, time, id     the same (fresh again)      none: normalised
//   delete_item   destructive (readOnlyHint false)     the same                    never sent by default
//   wait          answers after arguments.ms           the same                    (timeouts)
//
// The low-level Server, not McpServer: McpServer would check
// structuredContent against the outputSchema and refuse to send the drift.
// Every call is recorded (calls), so a test can prove what was sent, and
// each initialize's clientInfo and capabilities too (inits).
//
// expireAfter: N forgets a session after its Nth call (its next request
// gets 404), as a server restarted between calls would.
//
//   startDriftServer({mode, expireAfter}) -> {url, calls, inits, close()}
//   Run alone: node tests/integration/peers/drift-server.mjs v1|v2 [port]

import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startSdkHost } from '../lib/sdk-host.mjs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError,
} from '@modelcontextprotocol/sdk/types.js';

const RO = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const ANY = { type: 'object', properties: {} };

export const TOOLS = [
  {
    name: 'get_status',
    description: 'Service status',
    inputSchema: ANY,
    outputSchema: {
      type: 'object',
      properties: { state: { type: 'string' }, count: { type: 'integer' } },
      required: ['state', 'count'],
    },
    annotations: RO,
  },
  { name: 'lookup', description: 'Looks a key up', inputSchema: { type: 'object', properties: { key: { type: 'string' } } }, annotations: RO },
  { name: 'fetch_report', description: 'A report by id', inputSchema: { type: 'object', properties: { id: { type: 'string' } } }, annotations: RO },
  { name: 'render', description: 'Renders a chart', inputSchema: ANY, annotations: RO },
  { name: 'search', description: 'Searches documents', inputSchema: { type: 'object', properties: { q: { type: 'string' } } }, annotations: RO },
  { name: 'stable', description: 'Answers with fresh ids and the time', inputSchema: ANY, annotations: RO },
  { name: 'wait', description: 'Answers after ms milliseconds', inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } }, annotations: RO },
  {
    name: 'delete_item',
    description: 'Deletes an item',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
    annotations: { readOnlyHint: false, destructiveHint: true },
  },
];

const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

function text(t) {
  return { type: 'text', text: t };
}

/** The answer of `name` in `mode`: a result, or a thrown McpError. */
export function answer(mode, name, args = {}) {
  const v2 = mode === 'v2';
  switch (name) {
    case 'get_status':
      return { content: [text('up, 3 workers')], structuredContent: { state: 'up', count: v2 ? '3' : 3 } };
    case 'lookup':
      return v2
        ? { content: [text(`no value for ${args.key}`)], isError: true }
        : { content: [text(`${args.key} = 42`)] };
    case 'fetch_report': {
      const r = { content: [text(`report ${args.id} not found`)], isError: true };
      if (!v2) r.structuredContent = { error: 'not found', id: String(args.id) };
      return r;
    }
    case 'render':
      return { content: [v2 ? { type: 'image', data: PIXEL, mimeType: 'image/png' } : text('[chart]')] };
    case 'search':
      if (v2) throw new McpError(ErrorCode.InternalError, 'search index unavailable');
      return { content: [text(`3 hits for ${args.q}`)] };
    case 'stable':
      return {
        content: [text(`request ${randomUUID()} at ${new Date().toISOString()} trace ${Date.now()}`)],
      };
    case 'delete_item':
      return { content: [text(`deleted ${args.id}`)] };
    default:
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name}`);
  }
}

function newServer(mode, calls, onCall) {
  const server = new Server({ name: 'drift-server', version: mode === 'v2' ? '2.0.0' : '1.0.0' },
    { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    calls.push({ name: req.params.name, arguments: req.params.arguments });
    onCall();
    if (req.params.name === 'wait') {
      await new Promise((r) => { const t = setTimeout(r, Number(req.params.arguments?.ms) || 0); t.unref(); });
      return { content: [text('waited')] };
    }
    return answer(mode, req.params.name, req.params.arguments);
  });
  return server;
}

export async function startDriftServer({ mode = 'v1', port = 0, expireAfter = 0 } = {}) {
  const calls = [];
  const inits = [];
  const host = await startSdkHost({
    port,
    async onInitialize(body, t, transports) {
      inits.push({ clientInfo: body.params.clientInfo, capabilities: body.params.capabilities,
        protocolVersion: body.params.protocolVersion });
      let n = 0;
      await newServer(mode, calls, () => {
        if (expireAfter && ++n >= expireAfter) transports.delete(t.sessionId);
      }).connect(t);
    },
  });
  return { url: host.url, calls, inits, close: host.close };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const srv = await startDriftServer({ mode: process.argv[2] ?? 'v1', port: Number(process.argv[3] ?? 0) });
  console.log(`drift-server (${process.argv[2] ?? 'v1'}) on ${srv.url}`);
}

// An SDK-based MCP server (official TypeScript SDK 1.x, low-level Server
// over StreamableHTTPServerTransport, stateful sessions, SSE replies) with
// outputSchema tools, for the live-contract suite (validate.test.mjs):
//
//   add      {a: number, b: number} -> structuredContent {sum}: conforms
//   drift    {city: string} -> structuredContent {temp: "warm"} where the
//            outputSchema says temp is a number: the deploy that drifted
//   bare     declares an outputSchema, answers without structuredContent
//   refuse   declares an outputSchema, answers isError: true without one
//
// The low-level Server, not McpServer: McpServer checks structuredContent
// against the outputSchema itself and would refuse to send the drift.
//
//   startValidatePeer() -> {url, calls: [{name, arguments}], close()}
//   Run alone: node tests/integration/peers/validate-peer.mjs [port]

import { fileURLToPath } from 'node:url';
import { startSdkHost } from '../lib/sdk-host.mjs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const TEMP_SCHEMA = {
  type: 'object',
  properties: { temp: { type: 'number' }, unit: { enum: ['C', 'F'] } },
  required: ['temp'],
};

export const TOOLS = [
  {
    name: 'add',
    description: 'Adds two numbers',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
      additionalProperties: false,
    },
    outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
  },
  {
    name: 'drift',
    description: 'The weather, in a shape the outputSchema no longer describes',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    outputSchema: TEMP_SCHEMA,
  },
  {
    name: 'bare',
    description: 'Declares an outputSchema, answers text only',
    inputSchema: { type: 'object', properties: {} },
    outputSchema: TEMP_SCHEMA,
  },
  {
    name: 'refuse',
    description: 'Always fails (isError), so no structuredContent',
    inputSchema: { type: 'object', properties: {} },
    outputSchema: TEMP_SCHEMA,
  },
];

function answer(name, args) {
  switch (name) {
    case 'add': {
      const sum = Number(args?.a) + Number(args?.b);
      return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } };
    }
    case 'drift':
      return { content: [{ type: 'text', text: 'warm' }], structuredContent: { temp: 'warm', unit: 'K' } };
    case 'bare':
      return { content: [{ type: 'text', text: '21 C' }] };
    case 'refuse':
      return { content: [{ type: 'text', text: 'no weather today' }], isError: true };
    default:
      return { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true };
  }
}

function newServer(calls) {
  const server = new Server({ name: 'validate-peer', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    calls.push({ name: req.params.name, arguments: req.params.arguments });
    return answer(req.params.name, req.params.arguments);
  });
  return server;
}

export async function startValidatePeer({ port = 0 } = {}) {
  const calls = [];
  const host = await startSdkHost({
    port,
    async onInitialize(body, t) { await newServer(calls).connect(t); },
  });
  return { url: host.url, calls, close: host.close };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const peer = await startValidatePeer({ port: Number(process.argv[2] ?? 0) });
  console.log(`validate-peer on ${peer.url}`);
}

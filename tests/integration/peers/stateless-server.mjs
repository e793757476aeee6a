// A 2026-07-28 MCP server of our own on the official SDK 2.x
// (@modelcontextprotocol/server + @modelcontextprotocol/node), run in the test
// process so the tests can see what reached it.
//
// It serves both eras on one endpoint, as the SDK's createMcpHandler does by
// default: requests with the per-request `_meta` envelope are served
// statelessly as 2026-07-28; envelope-less 2025 traffic (a 1.x client's
// initialize, tools/call…) is served by the SDK's stateless legacy leg
// (`legacy: 'stateless'`). `legacy: 'reject'` makes it 2026-only.
//
// Surface
//   tools     echo {message}                 -> "Echo: <message>"
//             weather {region, days?, metric?, zip?}  region/days/metric carry
//                                               x-mcp-header Region/Days/Metric;
//                                               answers with the arguments and
//                                               the Mcp-Param-* headers it got
//             confirm {action}                MRTR: asks for an elicitation
//                                               (form: {confirm: boolean}) with
//                                               a requestState, completes on
//                                               the retry
//             progress {steps}                 `steps` progress notifications
//                                               20 ms apart, then the result
//             slow {ms}                        waits ms (default 30 s) unless
//                                               the request is aborted first
//   resource  test://status (text)
//   prompt    greet {name}
//
// Recording: every HTTP request that reaches the MCP handler is recorded in
// `received` as {t, method, url, headers (lowercased), body (parsed JSON or
// raw text), closedEarly (the client went away before the reply ended)};
// handler-side events go to `events` ({t, kind, ...}): 'tool' on every tool
// call, 'aborted' when a handler's signal fires.
//
// Control (test process only): notify.toolsChanged(), notify.resourceUpdated(uri).
//
// Run alone for manual checks:  node tests/integration/peers/stateless-server.mjs [port]

import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { McpServer, createMcpHandler, fromJsonSchema, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';

export const SERVER_NAME = 'stateless-peer';

const WEATHER_SCHEMA = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region', description: 'cloud region' },
    days: { type: 'integer', 'x-mcp-header': 'Days', description: 'forecast days' },
    metric: { type: 'boolean', 'x-mcp-header': 'Metric', description: 'metric units' },
    zip: { type: 'string', description: 'not mirrored' },
  },
  required: ['region'],
  additionalProperties: false,
};

const CONFIRM_SCHEMA = {
  type: 'object',
  properties: { confirm: { type: 'boolean', description: 'go ahead?' } },
  required: ['confirm'],
};

function mcpParamHeaders(req) {
  const out = {};
  const h = req?.headers;
  if (!h) return out;
  const entries = typeof h.entries === 'function' ? [...h.entries()] : Object.entries(h);
  for (const [k, v] of entries) {
    if (k.toLowerCase().startsWith('mcp-param-')) out[k.toLowerCase()] = v;
  }
  return out;
}

function buildServer(state, lastRequestHeaders) {
  const server = new McpServer(
    { name: SERVER_NAME, version: '2.0.0' },
    { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true }, prompts: {} } },
  );
  const record = (kind, extra) => state.events.push({ t: Date.now(), kind, ...extra });

  server.registerTool('echo', {
    description: 'Echoes the message back',
    inputSchema: fromJsonSchema({ type: 'object', properties: { message: { type: 'string' } }, required: ['message'] }),
  }, async ({ message }) => {
    record('tool', { name: 'echo' });
    return { content: [{ type: 'text', text: `Echo: ${message}` }] };
  });

  server.registerTool('weather', {
    description: 'A forecast; region, days and metric are mirrored into Mcp-Param-* headers',
    inputSchema: fromJsonSchema(WEATHER_SCHEMA),
  }, async (args) => {
    const headers = mcpParamHeaders(lastRequestHeaders());
    record('tool', { name: 'weather', args, headers });
    const text = `forecast for ${args.region}: ${args.days ?? 1} day(s), ${args.metric === false ? 'imperial' : 'metric'}`;
    return { content: [{ type: 'text', text }], structuredContent: { args, headers } };
  });

  server.registerTool('confirm', {
    description: 'Asks the user to confirm before acting (MRTR)',
    inputSchema: fromJsonSchema({ type: 'object', properties: { action: { type: 'string' } }, required: ['action'] }),
  }, async ({ action }, ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
    const st = ctx.mcpReq.requestState();
    record('tool', { name: 'confirm', round: answer ? 2 : 1, requestState: st ?? null });
    if (!answer) {
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({ message: `Really ${action}?`, requestedSchema: CONFIRM_SCHEMA }),
        },
        requestState: `confirm:${action}`,
      });
    }
    const verdict = answer.confirm === true ? 'confirmed' : 'declined';
    return { content: [{ type: 'text', text: `${action} ${verdict} (state ${st})` }] };
  });

  server.registerTool('progress', {
    description: 'Reports progress, then completes',
    inputSchema: fromJsonSchema({ type: 'object', properties: { steps: { type: 'integer' } } }),
  }, async ({ steps = 3 }, ctx) => {
    record('tool', { name: 'progress' });
    const token = ctx.mcpReq._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      if (token !== undefined) {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
        });
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    return { content: [{ type: 'text', text: `done in ${steps} steps` }] };
  });

  server.registerTool('slow', {
    description: 'Waits, unless cancelled',
    inputSchema: fromJsonSchema({ type: 'object', properties: { ms: { type: 'integer' } } }),
  }, async ({ ms = 30000 }, ctx) => {
    record('tool', { name: 'slow' });
    const signal = ctx.mcpReq.signal;
    const outcome = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve('finished'), ms);
      signal.addEventListener('abort', () => { clearTimeout(timer); resolve('aborted'); }, { once: true });
    });
    if (outcome === 'aborted') record('aborted', { name: 'slow' });
    return { content: [{ type: 'text', text: `slow ${outcome}` }] };
  });

  server.registerResource('status', 'test://status', { mimeType: 'text/plain', description: 'server status' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `status #${state.statusVersion}` }] }));

  server.registerPrompt('greet', {
    description: 'A greeting',
    argsSchema: fromJsonSchema({ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }),
  }, ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }] }));

  return server;
}

/**
 * Start the server on 127.0.0.1:port (0: any). Returns {url, port, received,
 * events, notify, handler, bumpStatus(), close()}.
 */
export async function startStatelessServer({ port = 0, legacy = 'stateless', keepAliveMs = 15000 } = {}) {
  const state = { events: [], statusVersion: 1 };
  const received = [];
  // The headers of the request being dispatched (the SDK runs the factory
  // and the handler per request; Node's loop makes this safe enough for
  // recording: the tool handler reads it before its first await).
  let current = null;
  const handler = createMcpHandler(() => buildServer(state, () => current), {
    legacy,
    keepAliveMs,
    onerror: () => {},
  });
  const nodeHandler = toNodeHandler(handler);

  const srv = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body = text;
      try { body = text ? JSON.parse(text) : undefined; } catch { /* keep the text */ }
      const headers = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = v;
      const rec = { t: Date.now(), method: req.method, url: req.url, headers, body, closedEarly: false };
      received.push(rec);
      res.on('close', () => { if (!res.writableFinished) rec.closedEarly = true; });
      current = { headers };
      Promise.resolve(nodeHandler(req, res, body)).catch(() => {
        if (!res.headersSent) { res.statusCode = 500; res.end(); }
      });
    });
  });
  await new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', resolve);
  });
  const actual = srv.address().port;
  return {
    url: `http://127.0.0.1:${actual}/mcp`,
    port: actual,
    received,
    events: state.events,
    handler,
    notify: handler.notify,
    bumpStatus() { state.statusVersion++; handler.notify.resourceUpdated('test://status'); },
    async close() {
      await handler.close().catch(() => {});
      srv.closeAllConnections?.();
      await new Promise((resolve) => srv.close(() => resolve()));
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const s = await startStatelessServer({ port: Number(process.argv[2] ?? 0) });
  console.log(`stateless-peer listening on ${s.url}`);
}

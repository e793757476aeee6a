// Helpers for the transport translation suite (translate.test.mjs):
//   startEverythingSse(port)   server-everything in legacy `sse` mode
//   connectSdk(kind, url)      the official SDK 1.x client over
//                              SSEClientTransport ('sse') or
//                              StreamableHTTPClientTransport ('streamable'),
//                              with sampling, elicitation and roots handlers
//   sessionScript(s)           the one session script every combination runs;
//                              its result is comparable across transports
//   legacyStream(url)          a raw legacy SSE client: GET, endpoint, POST

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnTracked, waitForPort, EVERYTHING_ENTRY } from './procs.mjs';
import { openStream, postJson } from './http.mjs';
import { withTimeout, waitFor } from './util.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const PRELOAD = path.join(here, 'everything-preload.mjs');

export const CALL_MS = 15000;

/** server-everything's legacy HTTP+SSE mode: GET /sse, POST /message. */
export async function startEverythingSse(port) {
  const h = spawnTracked(`server-everything-sse:${port}`, process.execPath,
    ['--import', PRELOAD, EVERYTHING_ENTRY, 'sse'],
    { env: { PORT: String(port), MCPWARDEN_IT_STDIN_GUARD: '1' }, stdinPipe: true });
  await waitForPort(h, port, 15000);
  return { proc: h, port, url: `http://127.0.0.1:${port}/sse` };
}

export const SAMPLING_REPLY = {
  model: 'mcpwarden-test-model',
  role: 'assistant',
  content: { type: 'text', text: 'sampled through mcpwarden' },
};

export const ELICIT_REPLY = {
  action: 'accept',
  content: { name: 'Ada Lovelace', check: true, email: 'ada@example.com', integer: 7 },
};

export const ROOTS = [{ uri: 'file:///tmp/mcpwarden-root', name: 'test root' }];

/**
 * Connect the SDK client. kind: 'sse' | 'streamable'. Returns {client,
 * transport, notifications, errors, serverRequests, waitNotification,
 * close()}. The client answers sampling, elicitation and roots requests.
 */
export async function connectSdk(kind, url, { name = `it-${kind}` } = {}) {
  const notifications = [];
  const errors = [];
  const serverRequests = [];
  const transport = kind === 'sse'
    ? new SSEClientTransport(new URL(url))
    : new StreamableHTTPClientTransport(new URL(url), {
      reconnectionOptions: {
        initialReconnectionDelay: 100, maxReconnectionDelay: 300,
        reconnectionDelayGrowFactor: 1.5, maxRetries: 1,
      },
    });
  const client = new Client({ name, version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } });
  client.onerror = (e) => errors.push(e);
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    serverRequests.push(req.method);
    return SAMPLING_REPLY;
  });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    serverRequests.push(req.method);
    return ELICIT_REPLY;
  });
  client.setRequestHandler(ListRootsRequestSchema, async (req) => {
    serverRequests.push(req.method);
    return { roots: ROOTS };
  });
  client.fallbackNotificationHandler = async (n) => { notifications.push({ ...n, t: Date.now() }); };
  await withTimeout(client.connect(transport), CALL_MS, `SDK ${kind} connect to ${url}`);
  return {
    kind,
    client,
    transport,
    notifications,
    errors,
    serverRequests,
    async close() {
      await withTimeout(client.close(), 3000, 'SDK client close').catch(() => {});
    },
  };
}

const call = (s, what, p) => withTimeout(p, CALL_MS, `${s.kind}: ${what}`);

/**
 * The session script: initialize (done by connectSdk), tools/list,
 * tools/call (plain, with progress, with a sampling and an elicitation
 * round trip, and the roots the server asked for), resources, prompts.
 * Returns what the client saw, in a form equal for equal servers.
 */
export async function sessionScript(s) {
  const out = {};
  out.server = s.client.getServerVersion();
  out.capabilities = s.client.getServerCapabilities();
  out.tools = (await call(s, 'tools/list', s.client.listTools())).tools.map((t) => t.name).sort();
  out.echo = await call(s, 'echo', s.client.callTool({ name: 'echo', arguments: { message: 'über ✓ translate' } }));
  out.sum = await call(s, 'get-sum', s.client.callTool({ name: 'get-sum', arguments: { a: 19, b: 23 } }));

  const progress = [];
  const t0 = Date.now();
  out.longRunning = await call(s, 'long-running', s.client.callTool(
    { name: 'trigger-long-running-operation', arguments: { duration: 1.2, steps: 4 } },
    undefined,
    { onprogress: (p) => progress.push({ ...p, t: Date.now() - t0 }), timeout: CALL_MS },
  ));
  out.tLong = Date.now() - t0;
  out.progress = progress;

  out.sampling = await call(s, 'sampling', s.client.callTool(
    { name: 'trigger-sampling-request', arguments: { prompt: 'say hi', maxTokens: 10 } },
    undefined, { timeout: CALL_MS }));
  out.elicitation = await call(s, 'elicitation', s.client.callTool(
    { name: 'trigger-elicitation-request', arguments: {} }, undefined, { timeout: CALL_MS }));
  out.roots = await call(s, 'roots', s.client.callTool(
    { name: 'get-roots-list', arguments: {} }, undefined, { timeout: CALL_MS }));

  const resources = (await call(s, 'resources/list', s.client.listResources())).resources;
  out.resourceCount = resources.length;
  out.resource = await call(s, 'resources/read', s.client.readResource({ uri: resources[0].uri }));
  out.templates = (await call(s, 'templates', s.client.listResourceTemplates())).resourceTemplates
    .map((t) => t.uriTemplate).sort();
  out.prompts = (await call(s, 'prompts/list', s.client.listPrompts())).prompts.map((p) => p.name).sort();
  out.prompt = await call(s, 'prompts/get', s.client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lyon' } }));
  out.serverRequests = [...new Set(s.serverRequests)].sort();
  return out;
}

/**
 * A raw legacy client: GET the SSE URL, read the endpoint event; post(msg)
 * POSTs to it; waitMessage(pred) waits for a `message` event matching it.
 */
export async function legacyStream(url, { headers = {} } = {}) {
  const st = await openStream(url, { headers: { accept: 'text/event-stream', ...headers } });
  if (st.status !== 200) return { status: st.status, st };
  const ep = await waitFor(() => st.sse.events.find((e) => e.event === 'endpoint'),
    { timeout: 5000, what: 'endpoint event' });
  const endpoint = new URL(ep.data, url).href;
  return {
    status: 200,
    st,
    endpoint,
    post: (msg) => postJson(endpoint, msg),
    messages: () => st.sse.events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data)),
    waitMessage(pred, ms = 5000) {
      return waitFor(() => this.messages().find(pred), { timeout: ms, what: 'a message on the legacy stream' });
    },
  };
}

export const INIT = (id = 0) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/**
 * Wait until server-everything in sse mode (startEverythingSse's `se`)
 * has received `n` POSTs since offset `since` of its stderr: it logs
 * "Client Message from <session>" for each one it takes, before handling
 * it. So a test knows its requests reached the upstream, with no pause.
 */
export function waitUpstreamPosts(se, since, n, ms = 5000) {
  const count = () => (se.proc.stderr.slice(since).match(/Client Message from/g) ?? []).length;
  return waitFor(() => count() >= n, { timeout: ms, interval: 10, what: `${n} POSTs at the sse upstream (saw ${count()})` });
}

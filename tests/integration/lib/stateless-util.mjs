// Helpers for the 2026-07-28 (stateless) suites.
//
//   connectModern(url)   an SDK 2.x client pinned to 2026-07-28 over
//                        Streamable HTTP, whose fetch is recorded (request
//                        headers and body, status, content type, response
//                        headers), with an elicitation handler that accepts
//                        and collected change notifications.
//   envelope(extra)      the per-request `_meta` a 2026 request carries.
//   modernRequest(...)   a raw 2026 request body + the headers a correct
//                        client sends with it, for byte-level cases.
//   b64(s)               the `=?base64?…?=` sentinel form of a value.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { withTimeout } from './util.mjs';

export const V2026 = '2026-07-28';
export const CALL_TIMEOUT = 10000;

/** The `=?base64?…?=` form of a header value (UTF-8). */
export function b64(s) {
  return `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;
}

/** The per-request `_meta` of a 2026-07-28 request. */
export function envelope(extra = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': V2026,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'raw-it', version: '1.0.0' },
    ...extra,
  };
}

/**
 * A raw 2026 request: {body, headers} with every header a correct client
 * sends (MCP-Protocol-Version, Mcp-Method, Mcp-Name where defined).
 * `params` are merged with the envelope; `headers` override or add (a
 * value of undefined removes one).
 */
export function modernRequest(id, method, params = {}, headers = {}) {
  const body = { jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope(params._meta) } };
  const h = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': V2026,
    'mcp-method': method,
  };
  if (method === 'tools/call' || method === 'prompts/get') h['mcp-name'] = params.name;
  if (method === 'resources/read') h['mcp-name'] = params.uri;
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) delete h[k.toLowerCase()];
    else h[k.toLowerCase()] = v;
  }
  return { body, headers: h };
}

/**
 * Connect a pinned 2.x client to `url`. Returns {client, fetchLog,
 * notifications, elicitations, waitNotification(pred, ms), close()}.
 * fetchLog: {method, url, reqHeaders {lowercase}, reqBody (parsed),
 * status, contentType, headers (Headers), t}.
 */
export async function connectModern(url, { name = 'stateless-it', elicit } = {}) {
  const fetchLog = [];
  const notifications = [];
  const elicitations = [];
  const waiters = new Set();

  const recordingFetch = async (input, init = {}) => {
    const reqHeaders = {};
    new Headers(init.headers).forEach((v, k) => { reqHeaders[k] = v; });
    let reqBody;
    try { reqBody = typeof init.body === 'string' ? JSON.parse(init.body) : undefined; } catch { reqBody = init.body; }
    const entry = { method: init.method ?? 'GET', url: String(input), reqHeaders, reqBody, t: Date.now() };
    fetchLog.push(entry);
    const res = await fetch(input, init);
    entry.status = res.status;
    entry.contentType = res.headers.get('content-type');
    entry.headers = res.headers;
    return res;
  };

  const client = new Client({ name, version: '2.0.0' }, {
    capabilities: { elicitation: {} },
    versionNegotiation: { mode: { pin: V2026 } },
  });
  client.setRequestHandler('elicitation/create', async (req) => {
    elicitations.push(req.params);
    return elicit ? elicit(req.params) : { action: 'accept', content: { confirm: true } };
  });
  const onNote = (n) => {
    const rec = { ...n, t: Date.now() };
    notifications.push(rec);
    for (const w of waiters) {
      if (w.pred(rec)) { waiters.delete(w); w.resolve(rec); }
    }
  };
  for (const m of ['notifications/tools/list_changed', 'notifications/resources/updated',
    'notifications/resources/list_changed', 'notifications/prompts/list_changed']) {
    client.setNotificationHandler(m, onNote);
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
  await withTimeout(client.connect(transport), CALL_TIMEOUT, `pinned 2.x connect to ${url}`);
  return {
    client,
    transport,
    fetchLog,
    notifications,
    elicitations,
    waitNotification(pred, ms = 5000) {
      const seen = notifications.find(pred);
      if (seen) return Promise.resolve(seen);
      let w;
      const p = new Promise((resolve) => { w = { pred, resolve }; waiters.add(w); });
      return withTimeout(p, ms, 'change notification').finally(() => waiters.delete(w));
    },
    async close() {
      await withTimeout(client.close(), 3000, '2.x client close').catch(() => {});
    },
  };
}


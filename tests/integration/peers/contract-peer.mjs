// A scripted MCP server for the tool-list contract suites (issue 4): it
// serves tool listings chosen by path, paginated, as JSON or as SSE, and
// misbehaves on request for `mcpwarden check` (redirects, 401, expiring
// sessions, oversized replies, the 2026-07-28 era).
//
// Paths:  /<listing>/<json|sse>/mcp   (and plain /mcp = clean, json)
// Each listing is an array of pages; page i answers the cursor
// `<listing>-p<i>` and names `<listing>-p<i+1>` as nextCursor unless it is
// the last. A listing with `loop: true` names its first cursor again from
// its last page (a cursor that does not advance).
//
// Options of startContractPeer():
//   listings      extra or replacement listings {name: {pages, loop?}}
//   authToken     every request needs `Authorization: Bearer <token>`,
//                 else 401 + WWW-Authenticate
//   expireFirstList  the first tools/list carrying a session gets 404
//                 (session expired); the session is dropped
//   modern        answers server/discover (2026-07-28) and adds resultType,
//                 ttlMs, cacheScope to tools/list unless the listing has
//                 `bare: true`; no session on modern requests
//   redirectTo    every request is answered 307 with this Location
//   redirects     {path: location}: requests to that path get 307 there
//   redirectLoop  every request to /hopN is answered 307 /hop<N+1>
//   echoHeaderError  initialize fails (HTTP 500) with a message quoting
//                 that request header's value (to prove masking)
//   status        every request gets this HTTP status (e.g. 404, 405)
//
// Records every request: {method, url, headers, body (parsed or null)}.
//
// Run alone:  node tests/integration/peers/contract-peer.mjs

import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { withTimeout } from '../lib/util.mjs';

const desc = 'A perfectly fine tool used by the contract tests';

export const GOOD = (name, extra = {}) => ({
  name,
  description: desc,
  inputSchema: {
    type: 'object',
    properties: { q: { type: 'string', description: 'the query' }, ...extra },
    required: ['q'],
  },
});
/** No description: description-missing (a usability rule). */
export const NODESC = (name) => ({ name, inputSchema: { type: 'object' } });
/** required names a parameter properties lacks: required-unknown. */
export const GHOSTREQ = (name) => ({
  name,
  description: desc,
  inputSchema: { type: 'object', properties: {}, required: ['ghost'] },
});

export const LISTINGS = {
  clean: { pages: [[GOOD('search'), GOOD('fetch')]] },
  // page 1: one broken tool; page 2 repeats a name of page 1
  broken: { pages: [[GOOD('search'), NODESC('nodesc')], [GOOD('search'), GOOD('fetch')]] },
  // clean pages that only fail together (duplicate across pages)
  dup: { pages: [[GOOD('search')], [GOOD('fetch')], [GOOD('search')]] },
  paged: { pages: [[GOOD('search')], [GOOD('fetch')], [GOOD('store')]] },
  loop: { pages: [[GOOD('search')], [GOOD('fetch')]], loop: true },
  ghost: { pages: [[GOOD('search'), GHOSTREQ('ghosty')]] },
  empty: { pages: [[]] },
};

export async function startContractPeer({
  listings = {}, authToken = null, expireFirstList = false, modern = false,
  redirectTo = null, redirects = {}, redirectLoop = false, echoHeaderError = null, status = null,
  bigList = false, name = 'contract-peer',
} = {}) {
  const all = { ...LISTINGS, ...listings };
  const received = [];
  const sockets = new Set();
  const sessions = new Set();
  let nsess = 0;
  let expired = false;

  const server = http.createServer((req, res) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      let body = null;
      try { body = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
      const rec = { t: Date.now(), method: req.method, url: req.url, headers: { ...req.headers }, body };
      received.push(rec);
      try {
        handle(rec, req, res);
      } catch (e) {
        rec.error = e.message;
        if (!res.headersSent) { res.writeHead(500); res.end(String(e.message)); }
      }
    });
  });
  server.on('connection', (s) => { sockets.add(s); s.once('close', () => sockets.delete(s)); });
  server.keepAliveTimeout = 5000;

  function send(res, code, obj, headers = {}) {
    const b = JSON.stringify(obj);
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(b), ...headers });
    res.end(b);
  }

  function reply(res, format, msg, headers = {}) {
    if (format === 'sse') {
      // A notification first, as real servers do, then the response.
      const note = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'listing' } };
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
      res.end(`event: message\ndata: ${JSON.stringify(note)}\n\nevent: message\ndata: ${JSON.stringify(msg)}\n\n`);
      return;
    }
    send(res, 200, msg, headers);
  }

  function handle(rec, req, res) {
    const url = new URL(req.url, 'http://x');
    if (status) return send(res, status, { jsonrpc: '2.0', id: null, error: { code: -32000, message: `scripted ${status}` } });
    if (redirectLoop) {
      const n = Number(/^\/hop(\d+)/.exec(url.pathname)?.[1] ?? 0);
      res.writeHead(307, { location: `/hop${n + 1}/mcp`, 'content-length': 0 });
      return res.end();
    }
    if (redirectTo || redirects[url.pathname]) {
      res.writeHead(307, { location: redirectTo ?? redirects[url.pathname], 'content-length': 0 });
      return res.end();
    }
    if (authToken && req.headers.authorization !== `Bearer ${authToken}`) {
      return send(res, 401, { jsonrpc: '2.0', id: rec.body?.id ?? null, error: { code: -32001, message: 'Unauthorized' } },
        { 'www-authenticate': 'Bearer error="invalid_token"' });
    }
    const m = /^\/([a-z0-9]+)\/(json|sse)\/mcp$/.exec(url.pathname);
    const listingName = m ? m[1] : 'clean';
    const format = m ? m[2] : 'json';
    if (!m && url.pathname !== '/mcp' && !url.pathname.endsWith('/mcp')) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return res.end('not here');
    }
    if (req.method === 'GET') { res.writeHead(405, { allow: 'POST, DELETE' }); return res.end(); }
    const sid = req.headers['mcp-session-id'];
    if (req.method === 'DELETE') {
      sessions.delete(sid);
      res.writeHead(200, { 'content-length': 0 });
      return res.end();
    }
    const msg = rec.body;
    if (!msg || typeof msg !== 'object' || Array.isArray(msg)) {
      return send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    }
    const isModern = modern && msg.params?._meta?.['io.modelcontextprotocol/protocolVersion'];
    if (msg.method === 'server/discover') {
      if (!modern) return send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } });
      return reply(res, format, {
        jsonrpc: '2.0', id: msg.id,
        result: {
          resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} },
          ttlMs: 0, cacheScope: 'private', _meta: { 'io.modelcontextprotocol/serverInfo': { name, version: '0' } },
        },
      });
    }
    if (msg.method === 'initialize') {
      if (echoHeaderError) {
        return send(res, 500, { jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: `rejected ${echoHeaderError} ${req.headers[echoHeaderError]}` } });
      }
      const s = `sess-${++nsess}`;
      sessions.add(s);
      return reply(res, format, {
        jsonrpc: '2.0', id: msg.id,
        result: { protocolVersion: msg.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name, version: '0' } },
      }, { 'mcp-session-id': s });
    }
    if (!isModern) {
      if (!sid) return send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } });
      if (!sessions.has(sid)) return send(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
    }
    if (!('id' in msg)) { res.writeHead(202); return res.end(); }
    if (msg.method === 'tools/list') {
      if (expireFirstList && !expired && sid) {
        expired = true;
        sessions.delete(sid);
        return send(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
      }
      const l = all[listingName];
      if (!l) return reply(res, format, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no such listing' } });
      const cursor = msg.params?.cursor;
      let i = 0;
      if (cursor !== undefined) {
        const cm = new RegExp(`^${listingName}-p(\\d+)$`).exec(cursor);
        if (!cm || Number(cm[1]) >= l.pages.length) {
          return reply(res, format, { jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'Invalid cursor' } });
        }
        i = Number(cm[1]);
      }
      const result = { tools: l.pages[i] };
      if (bigList) result.tools = [{ ...GOOD('huge'), description: 'x'.repeat(9 * 1024 * 1024) }];
      if (i + 1 < l.pages.length) result.nextCursor = `${listingName}-p${i + 1}`;
      else if (l.loop) result.nextCursor = `${listingName}-p1`;
      if (isModern && !l.bare) Object.assign(result, { resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
      return reply(res, format, { jsonrpc: '2.0', id: msg.id, result });
    }
    return reply(res, format, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = server.address().port;
  return {
    port,
    base: `http://127.0.0.1:${port}`,
    url: (listing = null, format = 'json') => (listing ? `http://127.0.0.1:${port}/${listing}/${format}/mcp` : `http://127.0.0.1:${port}/mcp`),
    received,
    /** Requests whose JSON-RPC method is `method`. */
    calls(method) { return received.filter((r) => r.body?.method === method); },
    sessions,
    async close() {
      for (const s of sockets) s.destroy();
      await withTimeout(new Promise((r) => server.close(() => r())), 3000, `${name} close`).catch(() => {});
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const p = await startContractPeer();
  console.error(`contract peer on ${p.base} (paths /<listing>/<json|sse>/mcp: ${Object.keys(LISTINGS).join(', ')})`);
}

// An upstream that answers the wrong thing, written on raw TCP (node:net)
// because node:http will neither send two responses to one request nor put
// bytes after a complete one. It parses the proxy's requests (a head and a
// Content-Length body; mcpwarden sends nothing else) and answers by the
// `X-Test-Mode` request header (end-to-end, so the proxy forwards it), else
// `json`. Every answer echoes the request's params, so a test can tell whose
// answer a client got.
//
// Modes
//   json            200 application/json, the answer to the request.
//   sse             200 text/event-stream: the answer as one event, then a
//                   clean end (X-Break-Tool applies to the event's data).
//   dup             the answer twice, back to back in one write (one request,
//                   two HTTP responses).
//   dup-later       the answer, then the same response again after
//                   `X-Delay-Ms` ms (default 30) on the same connection.
//   dup-next        the answer, then the same response again written just
//                   before the answer to the next request on this connection
//                   (a server whose replies slipped one place).
//   extra           the answer, then bytes that are no response at all, in
//                   the same write.
//   wrong-id        200 application/json answering another request's id.
//   sse-wrong-id    text/event-stream: a progress notification, then the
//                   response with another request's id, then a clean end.
//   sse-cut         text/event-stream without event ids: a progress
//                   notification, then FIN without the terminating chunk.
//   sse-reset       the same, then a TCP reset.
//   sse-cut-ids     as sse-cut, but its event has an id (resumable).
//   sse-end         as sse-cut, but the stream ends cleanly (terminating
//                   chunk) without the answer.
//   sse-batch-cut   a batch body: an SSE reply answering its first request,
//                   then FIN.
//   batch-wrong-id  a batch body: one response per request, the last one
//                   with another request's id.
//   listing         tools/list answered with `X-Tools` tools (default 3), each
//                   padded with `X-Pad` bytes of description. `X-Tool-Json:
//                   K:{...}` merges that object into tool K; `X-Break-Tool:
//                   K` puts a raw control byte in tool K's name, for its '_' (not JSON).
//
// The peer records connections: {n, t, requests, closedAt}; each request:
// {conn (its connection's n), method, url, headers, body, msg, mode,
// dupWrittenAt (dup-later: when the second copy went out)}.
//
// Run alone:  node tests/integration/peers/reply-peer.mjs

import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { waitFor, withTimeout } from '../lib/util.mjs';

export const OTHER_ID = 'someone-elses-request';

const isRequest = (m) => m && typeof m === 'object' && !Array.isArray(m) && 'method' in m && 'id' in m;

function result(msg, name, pad, ntools, edit) {
  if (msg.method === 'tools/list') {
    const tools = [];
    for (let i = 0; i < ntools; i++) {
      tools.push({ name: `tool_${i}`, description: `tool ${i} ${'d'.repeat(pad)}`, inputSchema: { type: 'object' } });
    }
    if (edit) Object.assign(tools[edit.k], edit.json);
    return { tools };
  }
  return { peer: name, method: msg.method, params: msg.params ?? null };
}

function jsonResponse(obj, extraHeaders = '') {
  const body = Buffer.from(JSON.stringify(obj));
  return Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${extraHeaders}` +
    `Content-Length: ${body.length}\r\n\r\n`), body]);
}

const chunk = (s) => {
  const b = Buffer.from(s);
  return Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
};
const SSE_HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n' +
  'Transfer-Encoding: chunked\r\n\r\n';
const sseEvent = (obj, id) => `${id ? `id: ${id}\n` : ''}event: message\ndata: ${JSON.stringify(obj)}\n\n`;
const progress = (msg) => ({
  jsonrpc: '2.0', method: 'notifications/progress',
  params: { progressToken: msg?.params?._meta?.progressToken ?? 'p', progress: 1, total: 2 },
});

export async function startReplyPeer({ name = 'reply-peer' } = {}) {
  const conns = [];
  const requests = [];
  const sockets = new Set();
  const timers = new Set();

  const server = net.createServer((sock) => {
    const conn = { n: conns.length, t: Date.now(), requests: [], closedAt: null, held: null };
    conns.push(conn);
    sockets.add(sock);
    sock.on('error', () => {});
    sock.once('close', () => { conn.closedAt = Date.now(); sockets.delete(sock); });
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const lines = head.split('\r\n');
        const [method, url] = lines[0].split(' ');
        const headers = {};
        for (const l of lines.slice(1)) {
          const c = l.indexOf(':');
          headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
        }
        const len = Number(headers['content-length'] ?? 0);
        if (buf.length < end + 4 + len) return;
        const body = buf.subarray(end + 4, end + 4 + len).toString('utf8');
        buf = buf.subarray(end + 4 + len);
        let msg = null;
        try { msg = body ? JSON.parse(body) : null; } catch { /* not JSON */ }
        const rec = { conn: conn.n, t: Date.now(), method, url, headers, body, msg, mode: headers['x-test-mode'] ?? 'json' };
        conn.requests.push(rec);
        requests.push(rec);
        handle(conn, sock, rec);
      }
    });
  });

  function later(ms, fn) {
    const t = setTimeout(() => { timers.delete(t); fn(); }, ms);
    timers.add(t);
  }

  function handle(conn, sock, rec) {
    const { msg, mode, headers } = rec;
    const pad = Number(headers['x-pad'] ?? 0);
    const ntools = Number(headers['x-tools'] ?? 3);
    const te = headers['x-tool-json'];
    const edit = te ? { k: Number(te.slice(0, te.indexOf(':'))), json: JSON.parse(te.slice(te.indexOf(':') + 1)) } : null;
    const answer = (m, id = m.id) => ({ jsonrpc: '2.0', id, result: result(m, name, pad, ntools, edit) });
    if (conn.held) {
      // dup-next: the previous request's answer, again, first.
      sock.write(conn.held);
      conn.held = null;
    }
    if (Array.isArray(msg)) {
      const reqs = msg.filter(isRequest);
      if (mode === 'sse-batch-cut') {
        sock.write(Buffer.concat([Buffer.from(SSE_HEAD), chunk(sseEvent(answer(reqs[0])))]));
        later(50, () => sock.end());
        return;
      }
      const out = reqs.map((m, i) => answer(m, mode === 'batch-wrong-id' && i === reqs.length - 1 ? OTHER_ID : m.id));
      sock.write(jsonResponse(out));
      return;
    }
    if (!isRequest(msg)) {
      sock.write('HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const brk = headers['x-break-tool'];
    // The '_' of the name becomes a raw U+0001: as many bytes, not JSON.
    const one = brk === undefined ? jsonResponse(answer(msg))
      : Buffer.from(jsonResponse(answer(msg)).toString().replace(`"tool_${brk}"`, `"tool\u0001${brk}"`));
    switch (mode) {
      case 'sse': {
        let data = JSON.stringify(answer(msg));
        if (brk !== undefined) data = data.replace(`"tool_${brk}"`, `"tool\u0001${brk}"`);
        sock.write(Buffer.concat([Buffer.from(SSE_HEAD), chunk(`event: message\ndata: ${data}\n\n`),
          Buffer.from('0\r\n\r\n')]));
        return;
      }
      case 'dup':
        sock.write(Buffer.concat([one, one]));
        return;
      case 'dup-later':
        sock.write(one);
        later(Number(headers['x-delay-ms'] ?? 30), () => {
          if (!sock.destroyed) sock.write(one, () => { rec.dupWrittenAt = Date.now(); });
        });
        return;
      case 'dup-next':
        sock.write(one);
        conn.held = one;
        return;
      case 'extra':
        sock.write(Buffer.concat([one, Buffer.from('these bytes answer nothing\r\n')]));
        return;
      case 'wrong-id':
        sock.write(jsonResponse(answer(msg, OTHER_ID)));
        return;
      case 'sse-wrong-id':
        sock.write(Buffer.concat([Buffer.from(SSE_HEAD), chunk(sseEvent(progress(msg))),
          chunk(sseEvent(answer(msg, OTHER_ID))), Buffer.from('0\r\n\r\n')]));
        return;
      case 'sse-cut':
      case 'sse-reset':
      case 'sse-cut-ids':
      case 'sse-end':
        sock.write(Buffer.concat([Buffer.from(SSE_HEAD),
          chunk(sseEvent(progress(msg), mode === 'sse-cut-ids' ? 'ev-1' : null))]));
        // After the event has gone out on its own: the cut comes apart.
        later(50, () => {
          if (mode === 'sse-reset') sock.resetAndDestroy();
          else if (mode === 'sse-end') sock.write('0\r\n\r\n');
          else sock.end();
        });
        return;
      default:
        sock.write(one);
    }
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    conns,
    requests,
    /** Wait for the request (by JSON-RPC id of its body or first message). */
    async request(id, ms = 5000) {
      const has = (r) => (Array.isArray(r.msg) ? r.msg[0]?.id : r.msg?.id) === id;
      return waitFor(() => requests.find(has), { timeout: ms, interval: 10, what: `request ${id} at ${name}` });
    },
    /** Wait until connection n is closed; false on timeout. */
    async closed(n, ms = 3000) {
      try {
        await waitFor(() => conns[n]?.closedAt, { timeout: ms, interval: 10, what: `connection ${n} closed` });
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await withTimeout(new Promise((r) => server.close(() => r())), 3000, `${name} close`).catch(() => {});
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const p = await startReplyPeer();
  console.error(`reply peer listening on 127.0.0.1:${p.port}`);
}

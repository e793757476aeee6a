// HTTP helpers for byte-level assertions.
//
//   openRaw(port)            a TCP connection we write exact bytes to; its
//                            readResponse() parses one HTTP/1.1 response
//                            (Content-Length, chunked, or until close) so a
//                            test can see the status line, header bytes and
//                            body exactly as the proxy sent them.
//   rawExchange(port, bytes) openRaw + write + readResponse + close.
//   request(url, opts)       node:http, whole body buffered, no agent pooling.
//   openStream(url, opts)    node:http, body consumed as it arrives: every
//                            chunk and every parsed SSE event is timestamped.
//   SseParser                incremental text/event-stream parser.

import net from 'node:net';
import http from 'node:http';
import { withTimeout } from './util.mjs';

const CRLF2 = Buffer.from('\r\n\r\n');

/** A raw client connection; see readResponse(). */
export class RawConn {
  constructor(sock) {
    this.sock = sock;
    this.buf = Buffer.alloc(0);
    this.ended = false; // peer sent FIN or the socket closed
    this.error = null;
    this._wake = null;
    sock.on('data', (d) => { this.buf = Buffer.concat([this.buf, d]); this._poke(); });
    sock.on('end', () => { this.ended = true; this._poke(); });
    sock.on('close', () => { this.ended = true; this._poke(); });
    sock.on('error', (e) => { this.error = e; this.ended = true; this._poke(); });
    this.closed = new Promise((resolve) => sock.once('close', () => resolve(Date.now())));
  }

  _poke() {
    const w = this._wake;
    this._wake = null;
    if (w) w();
  }

  _more(deadline, what) {
    if (this.ended) return Promise.resolve(false);
    const ms = deadline - Date.now();
    if (ms <= 0) return Promise.reject(new Error(`timed out reading ${what}`));
    return withTimeout(new Promise((resolve) => { this._wake = () => resolve(true); }), ms, what);
  }

  write(bytes) {
    return new Promise((resolve, reject) => {
      this.sock.write(bytes, (err) => (err ? reject(err) : resolve()));
    });
  }

  /**
   * Read exactly one response. `method` matters for HEAD. Returns
   * {httpVersion, status, reason, head (raw text), rawHeaders [[k, v]],
   *  headers {lowercase: value joined by ", "}, body Buffer, text,
   *  complete (false when the connection ended before the body did),
   *  chunked}. Rejects when nothing parseable arrives before `timeout`.
   */
  async readResponse({ timeout = 5000, method = 'GET' } = {}) {
    const deadline = Date.now() + timeout;
    let idx;
    while ((idx = this.buf.indexOf(CRLF2)) < 0) {
      if (!(await this._more(deadline, 'response head'))) {
        const got = this.buf.toString('latin1');
        throw new Error(`connection ended before a full response head; got ${JSON.stringify(got)}`);
      }
    }
    const head = this.buf.subarray(0, idx).toString('latin1');
    this.buf = this.buf.subarray(idx + 4);
    const lines = head.split('\r\n');
    const m = /^HTTP\/(\d\.\d) (\d{3})(?: (.*))?$/.exec(lines[0]);
    if (!m) throw new Error(`bad status line: ${JSON.stringify(lines[0])}`);
    const res = {
      httpVersion: m[1],
      status: Number(m[2]),
      reason: m[3] ?? '',
      head,
      rawHeaders: [],
      headers: {},
      body: Buffer.alloc(0),
      complete: true,
      chunked: false,
    };
    for (const line of lines.slice(1)) {
      const c = line.indexOf(':');
      if (c <= 0) throw new Error(`bad header line: ${JSON.stringify(line)}`);
      const k = line.slice(0, c);
      const v = line.slice(c + 1).trim();
      res.rawHeaders.push([k, v]);
      const lk = k.toLowerCase();
      res.headers[lk] = lk in res.headers ? `${res.headers[lk]}, ${v}` : v;
    }
    const noBody = method === 'HEAD' || res.status < 200 || res.status === 204 || res.status === 304;
    const te = (res.headers['transfer-encoding'] ?? '').toLowerCase();
    const parts = [];
    if (noBody) {
      // nothing
    } else if (te.split(',').map((s) => s.trim()).includes('chunked')) {
      res.chunked = true;
      for (;;) {
        let eol;
        while ((eol = this.buf.indexOf('\r\n')) < 0) {
          if (!(await this._more(deadline, 'chunk size'))) { res.complete = false; break; }
        }
        if (!res.complete) break;
        const size = parseInt(this.buf.subarray(0, eol).toString('latin1').split(';')[0], 16);
        if (Number.isNaN(size)) throw new Error(`bad chunk size line: ${JSON.stringify(this.buf.subarray(0, eol).toString('latin1'))}`);
        if (size === 0) {
          // Last chunk: skip trailer lines up to the empty line.
          this.buf = this.buf.subarray(eol + 2);
          for (;;) {
            let e;
            while ((e = this.buf.indexOf('\r\n')) < 0) {
              if (!(await this._more(deadline, 'trailers'))) { res.complete = false; break; }
            }
            if (!res.complete) break;
            const empty = e === 0;
            this.buf = this.buf.subarray(e + 2);
            if (empty) break;
          }
          break;
        }
        while (this.buf.length < eol + 2 + size + 2) {
          if (!(await this._more(deadline, 'chunk data'))) { res.complete = false; break; }
        }
        if (!res.complete) { parts.push(this.buf.subarray(eol + 2)); this.buf = Buffer.alloc(0); break; }
        parts.push(this.buf.subarray(eol + 2, eol + 2 + size));
        this.buf = this.buf.subarray(eol + 2 + size + 2);
      }
    } else if ('content-length' in res.headers) {
      const len = Number(res.headers['content-length']);
      while (this.buf.length < len) {
        if (!(await this._more(deadline, 'body'))) { res.complete = false; break; }
      }
      parts.push(this.buf.subarray(0, len));
      this.buf = this.buf.subarray(Math.min(len, this.buf.length));
    } else {
      while (await this._more(deadline, 'body until close')) { /* read to EOF */ }
      parts.push(this.buf);
      this.buf = Buffer.alloc(0);
    }
    res.body = Buffer.concat(parts);
    res.text = res.body.toString('utf8');
    return res;
  }

  /** Resolves true when the server closes the connection within `ms`. */
  async waitClosed(ms = 3000) {
    try {
      await withTimeout(this.closed, ms, 'connection close');
      return true;
    } catch {
      return false;
    }
  }

  close() { this.sock.destroy(); }
}

export function openRaw(port, host = '127.0.0.1', timeout = 3000) {
  return withTimeout(new Promise((resolve, reject) => {
    const sock = net.connect({ port, host });
    sock.once('connect', () => { sock.removeListener('error', reject); resolve(new RawConn(sock)); });
    sock.once('error', reject);
  }), timeout, `connect to ${host}:${port}`);
}

/** Send `bytes` on a fresh connection and read one response. */
export async function rawExchange(port, bytes, { timeout = 5000, method } = {}) {
  const c = await openRaw(port);
  try {
    await c.write(bytes);
    const m = method ?? (/^([A-Z]+) /.exec(String(bytes))?.[1] ?? 'GET');
    return await c.readResponse({ timeout, method: m });
  } finally {
    c.close();
  }
}

/** Build request bytes with CRLF line ends: head lines + optional body. */
export function rawRequestBytes(startLine, headers, body = '') {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const lines = [startLine];
  for (const [k, v] of headers) lines.push(`${k}: ${v}`);
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), b]);
}

/**
 * node:http request, body buffered. Returns {status, headers, rawHeaders,
 * body, text, json()}. Never pools connections.
 */
export function request(url, { method = 'GET', headers = {}, body, timeout = 5000 } = {}) {
  return withTimeout(new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => {
        const b = Buffer.concat(parts);
        resolve({
          status: res.statusCode,
          headers: res.headers,
          rawHeaders: res.rawHeaders,
          body: b,
          text: b.toString('utf8'),
          json() { return JSON.parse(b.toString('utf8')); },
        });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  }), timeout, `${method} ${url}`);
}

/** JSON-RPC POST the way an MCP client sends it. */
export function postJson(url, message, { headers = {}, timeout = 5000 } = {}) {
  const body = typeof message === 'string' ? message : JSON.stringify(message);
  return request(url, {
    method: 'POST',
    timeout,
    body,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
  });
}

/** Incremental text/event-stream parser (WHATWG rules, LF/CR/CRLF). */
export class SseParser {
  constructor() {
    this.pending = '';
    this.cur = { data: [], event: undefined, id: undefined, retry: undefined, fields: 0 };
    this.events = [];   // {event, id, data, retry, t}
    this.comments = []; // {text, t}
  }

  feed(text, t = Date.now()) {
    this.pending += text;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.pending);
      if (!m) break;
      // A lone CR at the very end may be the first half of a CRLF.
      if (m[0] === '\r' && m.index === this.pending.length - 1) break;
      const line = this.pending.slice(0, m.index);
      this.pending = this.pending.slice(m.index + m[0].length);
      this._line(line, t);
    }
  }

  _line(line, t) {
    if (line === '') {
      if (this.cur.fields > 0) {
        this.events.push({
          event: this.cur.event ?? 'message',
          id: this.cur.id,
          retry: this.cur.retry,
          data: this.cur.data.join('\n'),
          hasData: this.cur.data.length > 0,
          t,
        });
      }
      this.cur = { data: [], event: undefined, id: undefined, retry: undefined, fields: 0 };
      return;
    }
    if (line.startsWith(':')) { this.comments.push({ text: line.slice(1), t }); return; }
    const c = line.indexOf(':');
    const field = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? '' : line.slice(c + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.cur.fields++;
    if (field === 'data') this.cur.data.push(value);
    else if (field === 'event') this.cur.event = value;
    else if (field === 'id') this.cur.id = value;
    else if (field === 'retry') this.cur.retry = Number(value);
  }

  /** Dispatched JSON-RPC messages (events with non-empty data). */
  messages() {
    return this.events.filter((e) => e.data !== '').map((e) => JSON.parse(e.data));
  }
}

/**
 * Start a request and consume the response body as it arrives. Resolves
 * once the response head is in: {status, headers, rawHeaders, t0, tHead,
 * chunks [{t, bytes}], sse (SseParser), text(), ended (promise resolving
 * {how: 'end'|'aborted'|'error', t}), abort()}.
 */
export function openStream(url, { method = 'GET', headers = {}, body, timeout = 5000 } = {}) {
  const t0 = Date.now();
  return withTimeout(new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const st = {
        status: res.statusCode,
        headers: res.headers,
        rawHeaders: res.rawHeaders,
        t0,
        tHead: Date.now(),
        chunks: [],
        sse: new SseParser(),
        req,
        res,
        text() { return Buffer.concat(st.chunks.map((c) => c.bytes)).toString('utf8'); },
        abort() { req.destroy(); },
      };
      let settled = false;
      st.ended = new Promise((done) => {
        const fin = (how) => { if (!settled) { settled = true; done({ how, t: Date.now() }); } };
        res.on('data', (d) => {
          const t = Date.now();
          st.chunks.push({ t, bytes: d });
          st.sse.feed(d.toString('utf8'), t);
        });
        res.on('end', () => fin(res.complete ? 'end' : 'aborted'));
        res.on('aborted', () => fin('aborted'));
        res.on('error', () => fin('error'));
        res.on('close', () => fin(res.complete ? 'end' : 'aborted'));
      });
      resolve(st);
    });
    req.on('error', reject);
    req.end(body);
  }), timeout, `response head for ${method} ${url}`);
}

// OpenTelemetry traces over OTLP/HTTP (issue 23, items 1 and 4;
// docs/telemetry.md): ./mcpwarden between the official SDK client and a
// scripted upstream that records what it received (peers/trace-peer.mjs),
// exporting to a test OTLP receiver (a node http server).
//   - every payload is OTLP/JSON that the official definitions carry
//     whole: each span is rebuilt as an SDK ReadableSpan and serialized
//     again with @opentelemetry/otlp-transformer's JSON serializer (the
//     result must equal what mcpwarden sent, field by field) and its
//     protobuf serializer (it must encode);
//   - every attribute name is one @opentelemetry/semantic-conventions
//     defines, or mcpwarden's own (mcpwarden.*);
//   - a trace started by an SDK client (sdk-trace + core's
//     W3CTraceContextPropagator injecting traceparent into the MCP SDK
//     client's requests through a custom fetch) carries through: the
//     upstream sees the client's trace id with mcpwarden's CLIENT span as
//     parent, the SERVER span's parent is the client's span; over
//     Streamable HTTP, through the legacy HTTP+SSE translation, and with
//     params._meta.traceparent;
//   - policy decisions and JSON-RPC / tool errors on the span;
//   - the call records carry trace_id and span_id (the SERVER span's),
//     also for an unsampled trace;
//   - 503 then 200: the same batch again; a receiver that never answers
//     never slows a call, and a full queue counts drops; SIGTERM flushes
//     what is queued;
//   - OTEL_SDK_DISABLED=true: nothing sent; OTEL_EXPORTER_OTLP_PROTOCOL=grpc:
//     a start-up error; OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces),
//     OTEL_EXPORTER_OTLP_HEADERS and OTEL_SERVICE_NAME honoured.
// Synchronised on received payloads and counters, never sleeps.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { context, trace, defaultTextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { TracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import * as semconv from '@opentelemetry/semantic-conventions/incubating';
import { freePort } from './lib/ports.mjs';
import { startWarden, stopAll, stop, spawnTracked, waitForPort, WARDEN_BIN } from './lib/procs.mjs';
import { writeConfig } from './lib/conf.mjs';
import { adminGet, metricValue } from './lib/admin-util.mjs';
import { waitFor, withTimeout } from './lib/util.mjs';
import { startTracePeer } from './peers/trace-peer.mjs';
import { startTraceSsePeer } from './peers/trace-sse-peer.mjs';
import { startStatelessServer } from './peers/stateless-server.mjs';
import { modernRequest, V2026 } from './lib/stateless-util.mjs';

const T = { timeout: 60000 };
const CALL_MS = 10000;
const OTLP_KEY = 'otlp-secret-key-5521';

// ---- the receiver --------------------------------------------------------

/** An OTLP/HTTP receiver: answers with statuses.shift() (default 200), or
 * never when hang. Keeps every decoded payload. */
async function startReceiver({ statuses = [], hang = false } = {}) {
  const posts = [];
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      posts.push({ url: req.url, headers: req.headers, text, body: JSON.parse(text) });
      if (hang) return;
      const status = statuses.length ? statuses.shift() : 200;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.on('connection', (s) => { sockets.add(s); s.once('close', () => sockets.delete(s)); });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  const spans = () => posts.flatMap((p) => p.body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));
  return {
    port,
    endpoint: `http://127.0.0.1:${port}/v1/traces`,
    posts,
    spans,
    waitSpans: (pred, what) => waitFor(() => { const s = spans().filter(pred); return s.length && s; },
      { timeout: 10000, what }),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(() => r()));
    },
  };
}

// ---- decoding with the official definitions -------------------------------

const SPAN_KEYS = new Set(['traceId', 'spanId', 'parentSpanId', 'traceState', 'flags', 'name', 'kind',
  'startTimeUnixNano', 'endTimeUnixNano', 'attributes', 'events', 'status']);

// mcpwarden's values strictly (int64 as a decimal string, as the OTLP/JSON
// mapping says); the official encoder's (lax) may write a number.
function attrValue(v, lax = false) {
  const keys = Object.keys(v);
  assert.equal(keys.length, 1, `one value type: ${JSON.stringify(v)}`);
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) { if (!lax) assert.match(v.intValue, /^-?\d+$/); return Number(v.intValue); }
  if ('boolValue' in v) return v.boolValue;
  throw new Error(`unexpected value ${JSON.stringify(v)}`);
}
const attrsObj = (kvs, lax) => Object.fromEntries(kvs.map((kv) => [kv.key, attrValue(kv.value, lax)]));
const hr = (ns) => { const b = BigInt(ns); return [Number(b / 1000000000n), Number(b % 1000000000n)]; };

/** The span as the SDK's ReadableSpan, from mcpwarden's JSON. */
function toReadable(s, resource, scope) {
  for (const k of Object.keys(s)) assert.ok(SPAN_KEYS.has(k), `known Span field ${k}`);
  assert.match(s.traceId, /^[0-9a-f]{32}$/);
  assert.match(s.spanId, /^[0-9a-f]{16}$/);
  if (s.parentSpanId !== undefined) assert.match(s.parentSpanId, /^[0-9a-f]{16}$/);
  assert.ok([2, 3].includes(s.kind), 'SERVER or CLIENT');
  assert.ok(BigInt(s.endTimeUnixNano) >= BigInt(s.startTimeUnixNano), 'end after start');
  return {
    name: s.name,
    kind: s.kind - 1,
    spanContext: () => ({ traceId: s.traceId, spanId: s.spanId, traceFlags: s.flags & 0xff,
      traceState: s.traceState ? { serialize: () => s.traceState } : undefined }),
    parentSpanContext: s.parentSpanId ? { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: 1,
      isRemote: (s.flags & 0x200) !== 0 } : undefined,
    startTime: hr(s.startTimeUnixNano),
    endTime: hr(s.endTimeUnixNano),
    attributes: attrsObj(s.attributes),
    events: s.events.map((e) => ({ name: e.name, time: hr(e.timeUnixNano), attributes: attrsObj(e.attributes) })),
    status: s.status ? { code: s.status.code, message: s.status.message } : { code: 0 },
    links: [],
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
    duration: [0, 0],
    ended: true,
    resource: { attributes: attrsObj(resource.attributes), schemaUrl: undefined },
    instrumentationScope: { name: scope.name, version: scope.version },
  };
}

/** Every span of a payload goes through the official serializers and
 * comes out as mcpwarden wrote it. */
function checkPayload(body) {
  for (const k of Object.keys(body)) assert.equal(k, 'resourceSpans');
  for (const rs of body.resourceSpans) {
    for (const ss of rs.scopeSpans) {
      const readables = ss.spans.map((s) => toReadable(s, rs.resource, ss.scope));
      const pb = ProtobufTraceSerializer.serializeRequest(readables);
      assert.ok(pb instanceof Uint8Array && pb.length > 0, 'protobuf encoding');
      const back = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(readables)));
      const theirs = back.resourceSpans[0].scopeSpans[0];
      assert.equal(theirs.scope.name, ss.scope.name);
      assert.deepEqual(attrsObj(back.resourceSpans[0].resource.attributes, true), attrsObj(rs.resource.attributes));
      theirs.spans.forEach((t, i) => {
        const m = ss.spans[i];
        for (const f of ['traceId', 'spanId', 'parentSpanId', 'name', 'kind', 'flags'])
          assert.equal(t[f], m[f], `${f} of ${m.name}`);
        assert.equal(String(t.startTimeUnixNano), m.startTimeUnixNano);
        assert.equal(String(t.endTimeUnixNano), m.endTimeUnixNano);
        assert.deepEqual(attrsObj(t.attributes, true), attrsObj(m.attributes), `attributes of ${m.name}`);
        assert.equal(t.events.length, m.events.length);
        t.events.forEach((e, j) => {
          assert.equal(e.name, m.events[j].name);
          assert.deepEqual(attrsObj(e.attributes, true), attrsObj(m.events[j].attributes));
        });
        assert.equal(t.status.code, m.status?.code ?? 0);
      });
    }
  }
}

const DEFINED = new Set(Object.entries(semconv)
  .filter(([k, v]) => k.startsWith('ATTR_') && typeof v === 'string').map(([, v]) => v));

function checkNames(body) {
  const names = [];
  for (const rs of body.resourceSpans) {
    names.push(...rs.resource.attributes.map((a) => a.key));
    for (const ss of rs.scopeSpans)
      for (const s of ss.spans)
        names.push(...s.attributes.map((a) => a.key), ...s.events.flatMap((e) => e.attributes.map((a) => a.key)));
  }
  for (const n of names)
    assert.ok(DEFINED.has(n) || n.startsWith('mcpwarden.'), `attribute ${n} is defined by the semantic conventions`);
}

const attr = (s, k) => { const kv = s.attributes.find((a) => a.key === k); return kv && attrValue(kv.value); };

// ---- the client -----------------------------------------------------------

const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] });
const tracer = provider.getTracer('otel-it');
const propagator = new W3CTraceContextPropagator();

/** An SDK client whose every request carries the traceparent of the
 * active span (holder.span), injected by the official propagator. */
async function tracedClient(kind, url, holder) {
  const tracedFetch = (input, init = {}) => {
    const carrier = {};
    if (holder.span) propagator.inject(trace.setSpan(context.active(), holder.span), carrier, defaultTextMapSetter);
    const headers = new Headers(init.headers);
    for (const [k, v] of Object.entries(carrier)) headers.set(k, v);
    return fetch(input, { ...init, headers });
  };
  const transport = kind === 'sse'
    ? new SSEClientTransport(new URL(url), { fetch: tracedFetch, eventSourceInit: { fetch: tracedFetch } })
    : new StreamableHTTPClientTransport(new URL(url), { fetch: tracedFetch });
  const client = new Client({ name: `otel-${kind}`, version: '1.0.0' }, { capabilities: {} });
  await withTimeout(client.connect(transport), CALL_MS, `${kind} connect`);
  await withTimeout(client.listTools(), CALL_MS, 'tools/list');
  return client;
}

// ---- mcpwarden ------------------------------------------------------------

async function startTraced({ upstream, otlp = {}, env = {}, extra = {}, upstreamExtra = {} }) {
  const port = await freePort();
  const adminPort = await freePort();
  const conf = writeConfig({
    listen: `127.0.0.1:${port}`,
    upstreams: [{ name: 'peer', path: '/mcp', url: upstream, ...upstreamExtra }],
    admin: { listen: `127.0.0.1:${adminPort}` },
    ...(otlp ? { telemetry: { otlp: { batch_delay_ms: 50, ...otlp } } } : {}),
    ...extra,
  });
  const w = await startWarden(port, ['-c', conf], { env });
  await waitForPort(w.proc, adminPort, 10000);
  return { ...w, admin: `http://127.0.0.1:${adminPort}` };
}

async function metrics(w) {
  return (await adminGet(w.admin, '/metrics')).text;
}

async function records(w) {
  return (await adminGet(w.admin, '/calls?limit=1000')).json().calls;
}

after(async () => { await stopAll(); });

describe('otel: spans over OTLP/HTTP, decoded with the official definitions', () => {
  let peer, rx, w, client;
  const holder = {};

  before(async () => {
    peer = await startTracePeer();
    rx = await startReceiver();
    w = await startTraced({ upstream: peer.url, otlp: { endpoint: rx.endpoint, headers: { 'x-otlp-key': OTLP_KEY } },
      extra: { policy: { default: 'allow', rules: [{ name: 'no-secret', match: { tool: 'secret' }, action: 'deny' }] } } });
    client = await tracedClient('http', w.url, holder);
  }, T);

  after(async () => { await client?.close(); await peer?.close(); await rx?.close(); });

  test('an SDK client\'s trace carries through to the upstream (Streamable HTTP)', T, async () => {
    holder.span = tracer.startSpan('client call echo');
    const sc = holder.span.spanContext();
    const r = await withTimeout(client.callTool({ name: 'echo', arguments: { text: 'hi' } }), CALL_MS, 'echo');
    holder.span.end();
    holder.span = undefined;
    assert.equal(r.content[0].text, 'hi');
    // The upstream saw the client's trace, parented by our CLIENT span.
    const up = peer.calls('echo').at(-1);
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(up.headers.traceparent);
    assert.ok(m, `traceparent upstream: ${up.headers.traceparent}`);
    assert.equal(m[1], sc.traceId);
    assert.notEqual(m[2], sc.spanId, 'the parent upstream is mcpwarden\'s span, not the client\'s');
    const spans = await rx.waitSpans((s) => s.traceId === sc.traceId && s.name === 'tools/call echo' && s.kind === 2, 'SERVER span');
    const server = spans[0];
    const cli = await rx.waitSpans((s) => s.traceId === sc.traceId && s.kind === 3, 'CLIENT span');
    assert.equal(server.parentSpanId, sc.spanId, 'SERVER span\'s parent: the client\'s span');
    assert.equal(cli[0].parentSpanId, server.spanId, 'CLIENT span\'s parent: the SERVER span');
    assert.equal(cli[0].spanId, m[2], 'the upstream\'s parent is the CLIENT span');
    assert.equal(server.flags & 0x300, 0x300, 'remote parent flagged');
    assert.equal(attr(server, 'mcp.method.name'), 'tools/call');
    assert.equal(attr(server, 'gen_ai.tool.name'), 'echo');
    assert.equal(attr(server, 'gen_ai.operation.name'), 'execute_tool');
    assert.equal(attr(server, 'http.request.method'), 'POST');
    assert.equal(attr(server, 'http.response.status_code'), 200);
    assert.equal(attr(server, 'jsonrpc.request.id'), String(up.body.id));
    assert.equal(attr(server, 'server.port'), w.port);
    assert.equal(typeof attr(server, 'user_agent.original'), 'string');
    assert.equal(attr(cli[0], 'server.address'), '127.0.0.1');
    assert.equal(attr(cli[0], 'server.port'), Number(new URL(peer.url).port));
    // mcp.session.id: a hash, never the id itself.
    const sid = up.headers['mcp-session-id'];
    assert.match(attr(server, 'mcp.session.id'), /^[0-9a-f]{32}$/);
    for (const p of rx.posts) assert.ok(!p.text.includes(sid), 'the session id is never exported');
    // The exporter's headers reached the receiver.
    assert.equal(rx.posts[0].headers['x-otlp-key'], OTLP_KEY);
    assert.equal(rx.posts[0].url, '/v1/traces');
    assert.match(rx.posts[0].headers['content-type'], /^application\/json/);
  });

  test('every payload decodes with @opentelemetry/otlp-transformer; names from semantic-conventions', T, async () => {
    await rx.waitSpans(() => true, 'some spans');
    for (const p of rx.posts) {
      checkPayload(p.body);
      checkNames(p.body);
    }
    const res = attrsObj(rx.posts[0].body.resourceSpans[0].resource.attributes);
    assert.equal(res['service.name'], 'mcpwarden');
  });

  test('the record carries the SERVER span\'s ids', T, async () => {
    const spans = await rx.waitSpans((s) => s.name === 'tools/call echo' && s.kind === 2, 'echo span');
    const recs = await waitFor(async () => {
      const rs = (await records(w)).filter((r) => r.tool === 'echo' && r.from === 'client');
      return rs.length && rs;
    }, { what: 'echo record' });
    const rec = recs[0];
    assert.match(rec.trace_id, /^[0-9a-f]{32}$/);
    assert.match(rec.span_id, /^[0-9a-f]{16}$/);
    assert.ok(spans.some((s) => s.traceId === rec.trace_id && s.spanId === rec.span_id),
      'a span with the record\'s ids was exported');
  });

  test('_meta.traceparent: the upstream gets ours in _meta and the header', T, async () => {
    const tid = 'abcdef0123456789abcdef0123456789';
    const r = await withTimeout(client.callTool({ name: 'echo', arguments: { text: 'm' },
      _meta: { traceparent: `00-${tid}-1122334455667788-01` } }), CALL_MS, 'echo _meta');
    assert.equal(r.content[0].text, 'm');
    const up = peer.calls('echo').at(-1);
    const meta = up.body.params._meta.traceparent;
    assert.match(meta, new RegExp(`^00-${tid}-[0-9a-f]{16}-01$`));
    assert.equal(up.headers.traceparent, meta);
    const [cli] = await rx.waitSpans((s) => s.traceId === tid && s.kind === 3, 'CLIENT span of the _meta call');
    const [srv] = await rx.waitSpans((s) => s.traceId === tid && s.kind === 2, 'SERVER span of the _meta call');
    assert.equal(srv.parentSpanId, '1122334455667788');
    assert.equal(meta.slice(36, 52), cli.spanId);
  });

  test('errors: a JSON-RPC error and a tool error set error.type and the status', T, async () => {
    await assert.rejects(client.callTool({ name: 'boom', arguments: {} }));
    const fail = await client.callTool({ name: 'fail', arguments: {} });
    assert.equal(fail.isError, true);
    const [boom] = await rx.waitSpans((s) => s.name === 'tools/call boom' && s.kind === 2, 'boom span');
    assert.equal(attr(boom, 'error.type'), '-32001');
    assert.equal(attr(boom, 'rpc.response.status_code'), '-32001');
    assert.equal(boom.status.code, 2);
    const [f] = await rx.waitSpans((s) => s.name === 'tools/call fail' && s.kind === 2, 'fail span');
    assert.equal(attr(f, 'error.type'), 'tool_error');
    assert.equal(f.status.code, 2);
  });

  test('a policy decision is a span event; the call is not forwarded (no CLIENT span)', T, async () => {
    await assert.rejects(client.callTool({ name: 'secret', arguments: {} }));
    assert.equal(peer.calls('secret').length, 0, 'not forwarded');
    const [s] = await rx.waitSpans((x) => x.kind === 2 && x.events.some((e) => e.name === 'mcpwarden.policy.decision'), 'policy event');
    const ev = s.events.find((e) => e.name === 'mcpwarden.policy.decision');
    assert.equal(s.name, 'tools/call secret');
    assert.match(attrsObj(ev.attributes)['mcpwarden.rule'], /no-secret/);
    assert.equal(s.status.code, 2);
    assert.ok(!rx.spans().some((x) => x.kind === 3 && x.parentSpanId === s.spanId), 'no CLIENT span');
  });

  test('/metrics counts the exported spans; the exporter key never in a log', T, async () => {
    const text = await metrics(w);
    assert.ok(metricValue(text, 'mcpwarden_otel_spans_exported_total') >= rx.spans().length - 1);
    assert.equal(metricValue(text, 'mcpwarden_otel_spans_dropped_total', { reason: 'queue_full' }), 0);
    assert.ok(!w.proc.stderr.includes(OTLP_KEY));
  });
});

describe('otel: through the legacy HTTP+SSE translation', () => {
  let peer, rx, w, client;
  const holder = {};
  before(async () => {
    peer = await startTracePeer();
    rx = await startReceiver();
    w = await startTraced({ upstream: peer.url, otlp: { endpoint: rx.endpoint } });
    client = await tracedClient('sse', `${w.base}/sse`, holder);
  }, T);
  after(async () => { await client?.close(); await peer?.close(); await rx?.close(); });

  test('a legacy client\'s traceparent reaches the Streamable upstream, parented by our CLIENT span', T, async () => {
    holder.span = tracer.startSpan('legacy call');
    const sc = holder.span.spanContext();
    const r = await withTimeout(client.callTool({ name: 'echo', arguments: { text: 'legacy' } }), CALL_MS, 'echo');
    holder.span.end();
    holder.span = undefined;
    assert.equal(r.content[0].text, 'legacy');
    const up = peer.calls('echo').at(-1);
    assert.match(up.headers.traceparent ?? '', new RegExp(`^00-${sc.traceId}-[0-9a-f]{16}-01$`));
    const [srv] = await rx.waitSpans((s) => s.traceId === sc.traceId && s.kind === 2, 'SERVER span');
    const [cli] = await rx.waitSpans((s) => s.traceId === sc.traceId && s.kind === 3, 'CLIENT span');
    assert.equal(srv.parentSpanId, sc.spanId);
    assert.equal(cli.parentSpanId, srv.spanId);
    assert.equal(up.headers.traceparent.slice(36, 52), cli.spanId);
    assert.equal(attr(srv, 'mcpwarden.client.transport'), 'sse');
    for (const p of rx.posts) { checkPayload(p.body); checkNames(p.body); }
    const rec = await waitFor(async () => (await records(w)).find((x) => x.tool === 'echo' && x.from === 'client'),
      { what: 'legacy record' });
    assert.equal(rec.trace_id, sc.traceId);
    assert.equal(rec.span_id, srv.spanId);
  });
});

describe('otel: to a legacy HTTP+SSE upstream', () => {
  let peer, rx, w, client;
  const holder = {};
  before(async () => {
    peer = await startTraceSsePeer();
    rx = await startReceiver();
    w = await startTraced({ upstream: peer.url, otlp: { endpoint: rx.endpoint }, upstreamExtra: { transport: 'sse' } });
    client = await tracedClient('http', w.url, holder);
  }, T);
  after(async () => { await client?.close(); await peer?.close(); await rx?.close(); });

  test('a Streamable client\'s trace reaches the message POST, parented by our CLIENT span', T, async () => {
    holder.span = tracer.startSpan('call to a legacy upstream');
    const sc = holder.span.spanContext();
    const r = await withTimeout(client.callTool({ name: 'echo', arguments: { text: 'to-legacy' } }), CALL_MS, 'echo');
    holder.span.end();
    holder.span = undefined;
    assert.equal(r.content[0].text, 'to-legacy');
    const post = peer.posts.filter((p) => p.body?.method === 'tools/call').at(-1);
    const m = new RegExp(`^00-${sc.traceId}-([0-9a-f]{16})-01$`).exec(post.headers.traceparent ?? '');
    assert.ok(m, `traceparent on the message POST: ${post.headers.traceparent}`);
    const [srv] = await rx.waitSpans((s) => s.traceId === sc.traceId && s.kind === 2, 'SERVER span');
    const [cli] = await rx.waitSpans((s) => s.traceId === sc.traceId && s.kind === 3, 'CLIENT span');
    assert.equal(srv.parentSpanId, sc.spanId, 'SERVER span\'s parent: the client\'s span');
    assert.equal(cli.parentSpanId, srv.spanId, 'CLIENT span\'s parent: the SERVER span');
    assert.equal(m[1], cli.spanId, 'the legacy upstream\'s parent is the CLIENT span');
    assert.equal(attr(srv, 'gen_ai.tool.name'), 'echo');
    assert.equal(attr(srv, 'mcpwarden.client.transport'), 'streamable_http');
    for (const p of rx.posts) { checkPayload(p.body); checkNames(p.body); }
    const rec = await waitFor(async () => (await records(w)).find((x) => x.tool === 'echo' && x.from === 'client'),
      { what: 'record of the call' });
    assert.equal(rec.upstream_transport, 'sse');
    assert.equal(rec.trace_id, sc.traceId);
  });
});

describe('otel: the 2026-07-28 era (stateless)', () => {
  let peer, rx, w;
  before(async () => {
    peer = await startStatelessServer();
    rx = await startReceiver();
    w = await startTraced({ upstream: peer.url, otlp: { endpoint: rx.endpoint } });
  }, T);
  after(async () => { await peer?.close(); await rx?.close(); });

  test('a 2026 request\'s traceparent carries through; the SERVER span names the era and version', T, async () => {
    const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    const parent = '1122334455667788';
    const { body, headers } = modernRequest(7, 'tools/call', { name: 'echo', arguments: { message: 'stateless' } },
      { traceparent: `00-${traceId}-${parent}-01` });
    const res = await fetch(w.url, { method: 'POST', headers, body: JSON.stringify(body) });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /Echo: stateless/);
    const up = peer.received.filter((x) => x.body?.method === 'tools/call').at(-1);
    const m = new RegExp(`^00-${traceId}-([0-9a-f]{16})-01$`).exec(up.headers.traceparent ?? '');
    assert.ok(m, `traceparent upstream: ${up.headers.traceparent}`);
    const [srv] = await rx.waitSpans((s) => s.traceId === traceId && s.kind === 2, 'SERVER span');
    const [cli] = await rx.waitSpans((s) => s.traceId === traceId && s.kind === 3, 'CLIENT span');
    assert.equal(srv.parentSpanId, parent);
    assert.equal(cli.parentSpanId, srv.spanId);
    assert.equal(m[1], cli.spanId, 'the upstream\'s parent is the CLIENT span');
    assert.equal(attr(srv, 'mcpwarden.era'), '2026');
    assert.equal(attr(srv, 'mcp.protocol.version'), V2026);
    assert.equal(attr(srv, 'mcp.session.id'), undefined, 'a stateless call has no session');
    for (const p of rx.posts) { checkPayload(p.body); checkNames(p.body); }
  });
});

describe('otel: the exporter never slows a call', () => {
  test('503 then 200: the same batch is sent again', T, async () => {
    const peer = await startTracePeer();
    const rx = await startReceiver({ statuses: [503] });
    const w = await startTraced({ upstream: peer.url, otlp: { endpoint: rx.endpoint } });
    try {
      const client = await tracedClient('http', w.url, {});
      await client.callTool({ name: 'echo', arguments: { text: 'x' } });
      // The first POST (whichever worker's) was answered 503: the same
      // batch comes again (another worker's batches may come between).
      await waitFor(() => rx.posts.slice(1).some((p) => p.text === rx.posts[0].text),
        { timeout: 10000, what: 'the refused batch sent again' });
      await waitFor(async () => metricValue(await metrics(w), 'mcpwarden_otel_spans_exported_total') > 0,
        { what: 'exported after the retry' });
      await client.close();
    } finally {
      await stop(w.proc);
      await peer.close();
      await rx.close();
    }
  });

  test('a receiver that never answers: calls go on, a full queue counts drops', T, async () => {
    const peer = await startTracePeer();
    const rx = await startReceiver({ hang: true });
    const w = await startTraced({ upstream: peer.url,
      otlp: { endpoint: rx.endpoint, timeout_ms: 20000, queue_spans: 4, batch_spans: 2 } });
    try {
      const client = await tracedClient('http', w.url, {});
      await waitFor(() => rx.posts.length >= 1, { what: 'the first POST, never answered' });
      const t0 = Date.now();
      for (let i = 0; i < 20; i++)
        assert.equal((await withTimeout(client.callTool({ name: 'echo', arguments: { text: `${i}` } }), 2000, 'echo')).content[0].text, `${i}`);
      const per = (Date.now() - t0) / 20;
      assert.ok(per < 200, `a call took ${per} ms on average`);
      await waitFor(async () => metricValue(await metrics(w), 'mcpwarden_otel_spans_dropped_total', { reason: 'queue_full' }) > 0,
        { what: 'queue_full drops counted' });
      await client.close();
    } finally {
      await stop(w.proc, { signal: 'SIGKILL' });
      await peer.close();
      await rx.close();
    }
  });
});

describe('otel: shutdown flushes what is queued', () => {
  test('SIGTERM with a long batch delay: the queued spans are sent before exit', T, async () => {
    const peer = await startTracePeer();
    const rx = await startReceiver();
    const w = await startTraced({ upstream: peer.url, otlp: { endpoint: rx.endpoint, batch_delay_ms: 600000 } });
    try {
      const client = await tracedClient('http', w.url, {});
      await client.callTool({ name: 'echo', arguments: { text: 'drained' } });
      await client.close();
      assert.equal(rx.posts.length, 0, 'nothing sent before the batch delay');
      await stop(w.proc);
      assert.ok(rx.spans().some((x) => x.name === 'tools/call echo'), 'the echo span was flushed at exit');
      for (const p of rx.posts) checkPayload(p.body);
    } finally {
      await peer.close();
      await rx.close();
    }
  });
});

describe('otel: the standard environment variables', () => {
  test('OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces), _HEADERS (percent-decoded), OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES', T, async () => {
    const peer = await startTracePeer();
    const rx = await startReceiver();
    const w = await startTraced({ upstream: peer.url, otlp: null, env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${rx.port}`,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=a%20b%3Dc',
      OTEL_SERVICE_NAME: 'warden-env',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    } });
    try {
      const client = await tracedClient('http', w.url, {});
      await withTimeout(rx.waitSpans(() => true, 'spans via the env endpoint'), 15000, 'spans');
      assert.equal(rx.posts[0].url, '/v1/traces');
      assert.equal(rx.posts[0].headers['x-api-key'], 'a b=c');
      const res = attrsObj(rx.posts[0].body.resourceSpans[0].resource.attributes);
      assert.equal(res['service.name'], 'warden-env');
      assert.equal(res['deployment.environment.name'], 'staging');
      await client.close();
    } finally {
      await stop(w.proc);
      await peer.close();
      await rx.close();
    }
  });

  test('OTEL_SDK_DISABLED=true: nothing sent, no counters; records without ids', T, async () => {
    const peer = await startTracePeer();
    const rx = await startReceiver();
    const w = await startTraced({ upstream: peer.url, otlp: { endpoint: rx.endpoint }, env: { OTEL_SDK_DISABLED: 'true' } });
    try {
      const client = await tracedClient('http', w.url, {});
      await client.callTool({ name: 'echo', arguments: { text: 'off' } });
      const rec = await waitFor(async () => (await records(w)).find((r) => r.tool === 'echo' && r.from === 'client'),
        { what: 'the record' });
      assert.ok(!('trace_id' in rec) && !('span_id' in rec), 'no ids when telemetry is off');
      assert.equal(metricValue(await metrics(w), 'mcpwarden_otel_spans_exported_total'), undefined);
      await client.close();
      await stop(w.proc); // a drain would flush anything queued
      assert.equal(rx.posts.length, 0);
    } finally {
      await peer.close();
      await rx.close();
    }
  });

  test('OTEL_EXPORTER_OTLP_PROTOCOL=grpc: a start-up error saying so', T, async () => {
    const conf = writeConfig({ listen: '127.0.0.1:0', upstreams: [{ name: 'p', url: 'http://127.0.0.1:9/mcp' }],
      telemetry: { otlp: {} } });
    const h = spawnTracked('mcpwarden-grpc', WARDEN_BIN, ['-c', conf], { env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } });
    const st = await withTimeout(h.exited, 5000, 'mcpwarden to refuse to start');
    assert.notEqual(st.code, 0);
    assert.match(h.stderr, /OTEL_EXPORTER_OTLP_PROTOCOL=grpc: mcpwarden exports OTLP over http\/json only/);
  });

  test('always_off sampling: no span sent, the record still has ids, the upstream an unsampled traceparent', T, async () => {
    const peer = await startTracePeer();
    const rx = await startReceiver();
    const w = await startTraced({ upstream: peer.url, otlp: { endpoint: rx.endpoint, sampler: 'always_off' } });
    try {
      const client = await tracedClient('http', w.url, {});
      await client.callTool({ name: 'echo', arguments: { text: 'unsampled' } });
      const rec = await waitFor(async () => (await records(w)).find((r) => r.tool === 'echo' && r.from === 'client'),
        { what: 'the record' });
      assert.match(rec.trace_id, /^[0-9a-f]{32}$/);
      assert.match(rec.span_id, /^[0-9a-f]{16}$/);
      assert.match(peer.calls('echo').at(-1).headers.traceparent, new RegExp(`^00-${rec.trace_id}-[0-9a-f]{16}-00$`));
      await client.close();
      await stop(w.proc);
      assert.equal(rx.posts.length, 0);
    } finally {
      await peer.close();
      await rx.close();
    }
  });
});

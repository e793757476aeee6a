/* hook_trace: OpenTelemetry spans from the message hook (issue 23).
 *
 * Per client HTTP exchange that carries a JSON-RPC request or
 * notification, one SERVER span (mcpwarden receiving the call) and, when
 * the request was forwarded, one CLIENT span as its child (mcpwarden
 * calling the upstream). Names and attributes follow the OpenTelemetry
 * semantic conventions for MCP and HTTP (docs/telemetry.md lists them):
 * the span name is "{mcp.method.name} {target}" (target: the tool or
 * prompt name) or the method alone.
 *
 * Context: the client's traceparent header, else params._meta.traceparent
 * (the MCP convention), makes the SERVER span's parent; else a new trace
 * with ids from OpenSSL's CSPRNG (RAND_bytes, buffered per thread). The
 * upstream gets a traceparent naming the CLIENT span as parent: as a
 * header (inspect_where.up_traceparent, which the transports write in
 * place of the client's), and in params._meta when the client used _meta.
 * tracestate passes unchanged.
 *
 * Sampling: parent-based (the parent's sampled flag decides) or not,
 * with a ratio on the trace id for new roots (the OTel TraceIdRatioBased
 * rule: the id's last 8 bytes below ratio * 2^64). Ids exist either way:
 * records carry them (inspect_where.trace_id/span_id).
 *
 * mcp.session.id is exported as the SHA-256 of the session id, first 16
 * bytes in hex, never the id: a session id is a bearer value (the spec
 * asks for it to be unguessable because holding it is enough to use the
 * session), and a trace backend is read by more people than the proxy.
 * The hash still joins the spans of one session, across replicas.
 *
 * Findings the deciding hooks attached (m->notes), and every verdict that
 * was not "forward", become span events; a JSON-RPC error, a tool result
 * with isError, or an exchange that failed sets error.type and the
 * span's status.
 *
 * A span is handed, as OTLP/JSON text (proxy/base/otlp_json.h), to emit (the wiring gives
 * the calling worker's exporter, proxy/net/otlp.h): this module does no
 * I/O. Registered first (so records see the ids) as a deciding hook that
 * never decides, plus an observer that sees the verdicts.
 */
#ifndef MCPWARDEN_HOOK_TRACE_H
#define MCPWARDEN_HOOK_TRACE_H

#include <stddef.h>

struct inspect;
struct px_config;

/* span[0..len): one Span's OTLP/JSON text, borrowed for the call (copy
 * it). Runs on the worker thread of the exchange. */
typedef void (*hook_trace_emit_fn)(void *arg, const char *span, size_t len);

struct hook_trace;

/* cfg borrowed (its telemetry section and upstream addresses; the
 * configuration outlives the hook). NULL when out of memory or the chain
 * is full. */
struct hook_trace *hook_trace_new(struct inspect *in, const struct px_config *cfg,
                                  hook_trace_emit_fn emit, void *arg);
void hook_trace_free(struct hook_trace *ht);

/* Frees the calling thread's span text buffer (kept across calls so a span
 * costs no allocation). Each worker thread calls it as its last step;
 * hook_trace_free does it for its own thread. */
void hook_trace_thread_exit(void);

#endif

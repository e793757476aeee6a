/* otlp_json: OpenTelemetry spans in the OTLP/JSON encoding (the protobuf
 * message ExportTraceServiceRequest mapped to JSON as the OTLP
 * specification says: trace and span ids as lowercase hex, not base64;
 * 64-bit integers (times, intValue) as decimal strings; enums as their
 * numbers; field names in lowerCamelCase).
 *
 *   otlp_json_span(&head)                 a Span object, owned
 *   otlp_json_attr_str/_int/_bool(o, k, v) appends a KeyValue to the
 *                                         "attributes" of o (a span or an
 *                                         event), or to o itself when it
 *                                         is an array (a resource's)
 *   otlp_json_event(span, name, t_ns)     appends an Event, returns it
 *                                         (borrowed: the span owns it)
 *   otlp_json_status(span, code, msg)     sets the Status
 *   otlp_json_request(resource, scope, spans)  the whole request body
 *
 * Built with jansson (owned / borrowed as each function says). A leaf:
 * no I/O; the exporter (proxy/net/otlp.c) sends what this makes, the
 * trace hook (proxy/hooks/hook_trace.c) decides what a span says.
 */
#ifndef MCPWARDEN_OTLP_JSON_H
#define MCPWARDEN_OTLP_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* Span.SpanKind and Status.StatusCode, as the proto numbers them. */
enum otlp_kind { OTLP_KIND_INTERNAL = 1, OTLP_KIND_SERVER = 2, OTLP_KIND_CLIENT = 3 };
enum otlp_status { OTLP_STATUS_UNSET = 0, OTLP_STATUS_OK = 1, OTLP_STATUS_ERROR = 2 };

struct otlp_span_head {
	const uint8_t *trace_id;   /* 16 bytes */
	const uint8_t *span_id;    /* 8 bytes */
	const uint8_t *parent_id;  /* 8 bytes, or NULL: a root span */
	const char *tracestate;    /* W3C tracestate to keep, or NULL */
	const char *name;
	enum otlp_kind kind;
	uint64_t start_ns, end_ns; /* Unix time, nanoseconds */
	uint8_t flags;             /* W3C trace flags (Span.flags' low byte) */
};

/* NULL when out of memory. */
json_t *otlp_json_span(const struct otlp_span_head *h);
/* Each returns 0, or -1 (out of memory; o is unchanged). v NULL: nothing
 * is added (0). k and v are copied. */
int otlp_json_attr_str(json_t *o, const char *k, const char *v);
int otlp_json_attr_int(json_t *o, const char *k, long long v);
int otlp_json_attr_bool(json_t *o, const char *k, int v);
/* Borrowed (the span holds it), or NULL. */
json_t *otlp_json_event(json_t *span, const char *name, uint64_t t_ns);
int otlp_json_status(json_t *span, enum otlp_status code, const char *message);

/* {"resourceSpans":[{"resource":{"attributes":resource},"scopeSpans":
 * [{"scope":{"name":scope_name,"version":scope_version},"spans":spans}]}]}.
 * resource: an array of KeyValue (borrowed: a new reference is taken);
 * spans: an array of Span (stolen). NULL when out of memory (spans freed). */
json_t *otlp_json_request(json_t *resource, const char *scope_name, const char *scope_version,
                          json_t *spans);

#endif

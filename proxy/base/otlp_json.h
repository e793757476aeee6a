/* otlp_json: OpenTelemetry spans as OTLP/JSON text (the protobuf message
 * ExportTraceServiceRequest mapped to JSON as the OTLP specification
 * says: trace and span ids as lowercase hex, not base64; 64-bit integers
 * (times, intValue) as decimal strings; enums as their numbers; field
 * names in lowerCamelCase).
 *
 * Written straight into an sbuf, member by member, not built as a
 * jansson tree: a tree and its json_dumps cost ~10 times the call they
 * describe (perf-guard, 587k instructions per call against 56k), text
 * costs a few thousand. The writer keeps no state: a KeyValue or an
 * event gets its comma from the byte before it.
 *
 *   otlp_json_span_begin(b, &head)   {"traceId":…,"attributes":[
 *   otlp_json_attr_str/_int/_bool    a KeyValue (into the open attributes)
 *   otlp_json_events(b)              ],"events":[
 *   otlp_json_event_begin/_end       an Event, its attributes in between
 *   otlp_json_span_end(b, code, msg) ] and the Status, }
 *   otlp_json_request_begin/_end     the envelope around spans joined by
 *                                    commas; the resource's attributes
 *                                    are KeyValue text (otlp_json_attr_*
 *                                    into an empty sbuf)
 *
 * A leaf: no I/O; the exporter (proxy/net/otlp.c) sends what this writes,
 * the trace hook (proxy/hooks/hook_trace.c) decides what a span says.
 * Strings must be valid UTF-8 (escaped as json_dumps would).
 */
#ifndef MCPWARDEN_OTLP_JSON_H
#define MCPWARDEN_OTLP_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/base/sbuf.h"

/* Span.SpanKind and Status.StatusCode, as the proto numbers them. */
enum otlp_kind { OTLP_KIND_INTERNAL = 1, OTLP_KIND_SERVER = 2, OTLP_KIND_CLIENT = 3 };
enum otlp_status { OTLP_STATUS_UNSET = 0, OTLP_STATUS_OK = 1, OTLP_STATUS_ERROR = 2 };

struct otlp_span_head {
	const uint8_t *trace_id;   /* 16 bytes */
	const uint8_t *span_id;    /* 8 bytes */
	const uint8_t *parent_id;  /* 8 bytes, or NULL: a root span */
	int parent_remote;         /* the parent came from another process */
	const char *tracestate;    /* W3C tracestate to keep, or NULL */
	const char *name;
	enum otlp_kind kind;
	uint64_t start_ns, end_ns; /* Unix time, nanoseconds */
	uint8_t flags;             /* W3C trace flags (Span.flags' low byte) */
};

void otlp_json_span_begin(struct sbuf *b, const struct otlp_span_head *h);
/* v NULL: nothing is written. */
void otlp_json_attr_str(struct sbuf *b, const char *k, const char *v);
/* v[0..n): a string value that is not NUL-terminated where it ends. */
void otlp_json_attr_strn(struct sbuf *b, const char *k, const char *v, size_t n);
void otlp_json_attr_int(struct sbuf *b, const char *k, long long v);
void otlp_json_attr_bool(struct sbuf *b, const char *k, int v);
void otlp_json_events(struct sbuf *b);
void otlp_json_event_begin(struct sbuf *b, const char *name, uint64_t t_ns);
void otlp_json_event_end(struct sbuf *b);
/* code UNSET: no Status member. */
void otlp_json_span_end(struct sbuf *b, enum otlp_status code, const char *message);

/* resource: KeyValue text (comma-separated, no brackets). */
void otlp_json_request_begin(struct sbuf *b, const char *resource, const char *scope_name,
                             const char *scope_version);
void otlp_json_request_end(struct sbuf *b);

#endif

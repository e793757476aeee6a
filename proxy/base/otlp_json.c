/* otlp_json: see otlp_json.h. */
#include "proxy/base/otlp_json.h"

#include <string.h>

#include "proxy/base/traceparent.h"

#define LIT(b, s) sbuf_putn((b), (s), sizeof(s) - 1)

static void str(struct sbuf *b, const char *s)
{
	sbuf_json_str(b, s, strlen(s));
}

static void hex(struct sbuf *b, const uint8_t *p, size_t n)
{
	char h[2 * TRACE_ID_BYTES + 3];
	h[0] = '"';
	traceparent_hex(p, n, h + 1);
	h[2 * n + 1] = '"';
	sbuf_putn(b, h, 2 * n + 2);
}

/* "digits": by hand, snprintf costs ~400 instructions a call here. */
static void u64_string(struct sbuf *b, uint64_t v)
{
	char t[24], *w = t + sizeof(t);
	*--w = '"';
	do {
		*--w = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	*--w = '"';
	sbuf_putn(b, w, (size_t)(t + sizeof(t) - w));
}

/* A comma unless this is the first element of the open array. */
static void sep(struct sbuf *b)
{
	if (b->len && b->p[b->len - 1] != '[')
		LIT(b, ",");
}

void otlp_json_span_begin(struct sbuf *b, const struct otlp_span_head *h)
{
	LIT(b, "{\"traceId\":");
	hex(b, h->trace_id, TRACE_ID_BYTES);
	LIT(b, ",\"spanId\":");
	hex(b, h->span_id, SPAN_ID_BYTES);
	if (h->parent_id) {
		LIT(b, ",\"parentSpanId\":");
		hex(b, h->parent_id, SPAN_ID_BYTES);
	}
	if (h->tracestate && *h->tracestate) {
		LIT(b, ",\"traceState\":");
		str(b, h->tracestate);
	}
	/* Span.flags: the W3C flags in bits 0-7; bit 8 says whether the
	 * parent's remoteness is known, bit 9 that it is remote, as the
	 * proto documents (and the official SDK writes). */
	LIT(b, ",\"flags\":");
	sbuf_i64(b, h->flags | 0x100 | (h->parent_id && h->parent_remote ? 0x200 : 0));
	LIT(b, ",\"name\":");
	str(b, h->name ? h->name : "");
	LIT(b, ",\"kind\":");
	sbuf_i64(b, h->kind);
	LIT(b, ",\"startTimeUnixNano\":");
	u64_string(b, h->start_ns);
	LIT(b, ",\"endTimeUnixNano\":");
	u64_string(b, h->end_ns);
	LIT(b, ",\"attributes\":[");
}

static void key(struct sbuf *b, const char *k)
{
	sep(b);
	LIT(b, "{\"key\":");
	str(b, k);
	LIT(b, ",\"value\":{");
}

void otlp_json_attr_str(struct sbuf *b, const char *k, const char *v)
{
	if (v)
		otlp_json_attr_strn(b, k, v, strlen(v));
}

void otlp_json_attr_strn(struct sbuf *b, const char *k, const char *v, size_t n)
{
	key(b, k);
	LIT(b, "\"stringValue\":");
	sbuf_json_str(b, v, n);
	LIT(b, "}}");
}

void otlp_json_attr_int(struct sbuf *b, const char *k, long long v)
{
	key(b, k);
	LIT(b, "\"intValue\":\"");
	sbuf_i64(b, v);
	LIT(b, "\"}}");
}

void otlp_json_attr_bool(struct sbuf *b, const char *k, int v)
{
	key(b, k);
	if (v)
		LIT(b, "\"boolValue\":true}}");
	else
		LIT(b, "\"boolValue\":false}}");
}

void otlp_json_events(struct sbuf *b)
{
	LIT(b, "],\"events\":[");
}

void otlp_json_event_begin(struct sbuf *b, const char *name, uint64_t t_ns)
{
	sep(b);
	LIT(b, "{\"timeUnixNano\":");
	u64_string(b, t_ns);
	LIT(b, ",\"name\":");
	str(b, name);
	LIT(b, ",\"attributes\":[");
}

void otlp_json_event_end(struct sbuf *b)
{
	LIT(b, "]}");
}

void otlp_json_span_end(struct sbuf *b, enum otlp_status code, const char *message)
{
	LIT(b, "]");
	if (code != OTLP_STATUS_UNSET) {
		LIT(b, ",\"status\":{\"code\":");
		sbuf_i64(b, code);
		if (message) {
			LIT(b, ",\"message\":");
			str(b, message);
		}
		LIT(b, "}");
	}
	LIT(b, "}");
}

void otlp_json_request_begin(struct sbuf *b, const char *resource, const char *scope_name,
                             const char *scope_version)
{
	LIT(b, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
	sbuf_puts(b, resource);
	LIT(b, "]},\"scopeSpans\":[{\"scope\":{\"name\":");
	str(b, scope_name);
	LIT(b, ",\"version\":");
	str(b, scope_version);
	LIT(b, "},\"spans\":[");
}

void otlp_json_request_end(struct sbuf *b)
{
	LIT(b, "]}]}]}");
}

/* otlp_json: see otlp_json.h. */
#include "proxy/base/otlp_json.h"

#include <inttypes.h>
#include <stdio.h>

#include "proxy/base/traceparent.h"

static json_t *u64_string(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRIu64, v);
	return json_string(b);
}

static json_t *hex(const uint8_t *p, size_t n)
{
	char b[2 * TRACE_ID_BYTES + 1];
	traceparent_hex(p, n, b);
	return json_string(b);
}

json_t *otlp_json_span(const struct otlp_span_head *h)
{
	json_t *s = json_object();
	if (!s)
		return NULL;
	int bad = json_object_set_new(s, "traceId", hex(h->trace_id, TRACE_ID_BYTES)) |
	          json_object_set_new(s, "spanId", hex(h->span_id, SPAN_ID_BYTES));
	if (h->parent_id)
		bad |= json_object_set_new(s, "parentSpanId", hex(h->parent_id, SPAN_ID_BYTES));
	if (h->tracestate && *h->tracestate)
		bad |= json_object_set_new(s, "traceState", json_string(h->tracestate));
	/* Span.flags: the W3C flags in bits 0-7; bits 8-9 say whether the
	 * parent is remote (0x100: known, 0x200: remote), as the proto
	 * documents, so a backend can tell a propagated parent. */
	uint32_t flags = h->flags | 0x100u | (h->parent_id && h->kind == OTLP_KIND_SERVER ? 0x200u : 0);
	bad |= json_object_set_new(s, "flags", json_integer(flags)) |
	       json_object_set_new(s, "name", json_string(h->name ? h->name : "")) |
	       json_object_set_new(s, "kind", json_integer(h->kind)) |
	       json_object_set_new(s, "startTimeUnixNano", u64_string(h->start_ns)) |
	       json_object_set_new(s, "endTimeUnixNano", u64_string(h->end_ns)) |
	       json_object_set_new(s, "attributes", json_array()) |
	       json_object_set_new(s, "events", json_array());
	if (bad) {
		json_decref(s);
		return NULL;
	}
	return s;
}

/* Appends {"key":k,"value":{type:val}} (val stolen) to o's attributes. */
static int attr_add(json_t *o, const char *k, const char *type, json_t *val)
{
	/* o is a KeyValue array itself (a resource's), or has "attributes" */
	json_t *attrs = json_is_array(o) ? o : json_object_get(o, "attributes");
	json_t *v = json_object(), *kv = json_object();
	if (!attrs) {
		attrs = json_array();
		if (attrs && json_object_set_new(o, "attributes", attrs) < 0)
			attrs = NULL;
	}
	if (!attrs || !v || !kv || !val || json_object_set_new(v, type, val) < 0) {
		json_decref(v);
		json_decref(kv);
		if (!v)
			json_decref(val);
		return -1;
	}
	if (json_object_set_new(kv, "key", json_string(k)) < 0 ||
	    json_object_set_new(kv, "value", v) < 0 || json_array_append_new(attrs, kv) < 0) {
		json_decref(kv);
		return -1;
	}
	return 0;
}

int otlp_json_attr_str(json_t *o, const char *k, const char *v)
{
	return v ? attr_add(o, k, "stringValue", json_string(v)) : 0;
}

int otlp_json_attr_int(json_t *o, const char *k, long long v)
{
	char b[24];
	snprintf(b, sizeof(b), "%lld", v);
	return attr_add(o, k, "intValue", json_string(b));
}

int otlp_json_attr_bool(json_t *o, const char *k, int v)
{
	return attr_add(o, k, "boolValue", json_boolean(v));
}

json_t *otlp_json_event(json_t *span, const char *name, uint64_t t_ns)
{
	json_t *events = json_object_get(span, "events");
	json_t *e = json_object();
	if (!events || !e || json_object_set_new(e, "timeUnixNano", u64_string(t_ns)) < 0 ||
	    json_object_set_new(e, "name", json_string(name)) < 0 ||
	    json_object_set_new(e, "attributes", json_array()) < 0 ||
	    json_array_append_new(events, e) < 0) {
		json_decref(e);
		return NULL;
	}
	return e;
}

int otlp_json_status(json_t *span, enum otlp_status code, const char *message)
{
	json_t *st = json_pack("{s:i}", "code", (int)code);
	if (!st || (message && json_object_set_new(st, "message", json_string(message)) < 0)) {
		json_decref(st);
		return -1;
	}
	return json_object_set_new(span, "status", st);
}

json_t *otlp_json_request(json_t *resource, const char *scope_name, const char *scope_version,
                          json_t *spans)
{
	json_t *r = json_pack("{s:[{s:{s:O},s:[{s:{s:s,s:s},s:o}]}]}", "resourceSpans", "resource",
	                      "attributes", resource, "scopeSpans", "scope", "name", scope_name,
	                      "version", scope_version, "spans", spans);
	return r; /* json_pack's "o" steals spans even on failure */
}

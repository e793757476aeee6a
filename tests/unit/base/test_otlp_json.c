/* Unit tests for proxy/base/otlp_json.c: a span and a request in the
 * OTLP/JSON mapping (hex ids, decimal-string 64-bit numbers, numeric
 * enums, parent and flags), attributes of each type with their commas,
 * events and status; every text parses as JSON. The integration test
 * (tests/integration/otel.test.mjs) checks the same text against the
 * official OTLP definitions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/base/otlp_json.h"

static const uint8_t tid[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                                0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
static const uint8_t sid[8] = {0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
static const uint8_t pid[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static void span(struct sbuf *b, const uint8_t *parent, int with_attrs)
{
	struct otlp_span_head h = {tid, sid, parent, 1, "a=b", "tools/call \"echo\"", OTLP_KIND_SERVER,
	                           1700000000000000000ull, 1700000000000001000ull, 1};
	otlp_json_span_begin(b, &h);
	if (with_attrs) {
		otlp_json_attr_str(b, "mcp.method.name", "tools/call");
		otlp_json_attr_str(b, "skipped", NULL);
		otlp_json_attr_int(b, "server.port", 8080);
		otlp_json_attr_bool(b, "b", 1);
	}
	otlp_json_events(b);
	if (with_attrs) {
		otlp_json_event_begin(b, "mcpwarden.policy.decision", 5);
		otlp_json_attr_str(b, "mcpwarden.rule", "r1");
		otlp_json_event_end(b);
		otlp_json_event_begin(b, "second", 6);
		otlp_json_event_end(b);
	}
	otlp_json_span_end(b, with_attrs ? OTLP_STATUS_ERROR : OTLP_STATUS_UNSET, "boom");
}

static json_t *parse(const struct sbuf *b)
{
	json_error_t e;
	json_t *j = json_loadb(b->p, b->len, 0, &e);
	if (!j)
		fail_msg("not JSON: %s at %d in %s", e.text, e.position, b->p);
	return j;
}

static void test_span_mapping(void **state)
{
	(void)state;
	struct sbuf b = {0};
	span(&b, pid, 0);
	json_t *s = parse(&b);
	assert_string_equal(json_string_value(json_object_get(s, "traceId")),
	                    "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(json_string_value(json_object_get(s, "spanId")), "00f067aa0ba902b7");
	assert_string_equal(json_string_value(json_object_get(s, "parentSpanId")), "0102030405060708");
	assert_string_equal(json_string_value(json_object_get(s, "startTimeUnixNano")),
	                    "1700000000000000000");
	assert_string_equal(json_string_value(json_object_get(s, "name")), "tools/call \"echo\"");
	assert_int_equal(json_integer_value(json_object_get(s, "kind")), 2);
	assert_int_equal(json_integer_value(json_object_get(s, "flags")), 0x301);
	assert_string_equal(json_string_value(json_object_get(s, "traceState")), "a=b");
	assert_null(json_object_get(s, "status"));
	assert_int_equal(json_array_size(json_object_get(s, "attributes")), 0);
	json_decref(s);
	free(b.p);
	b = (struct sbuf){0};
	span(&b, NULL, 0);
	s = parse(&b);
	assert_null(json_object_get(s, "parentSpanId"));
	assert_int_equal(json_integer_value(json_object_get(s, "flags")), 0x101);
	json_decref(s);
	free(b.p);
}

static void test_attributes_events_status(void **state)
{
	(void)state;
	struct sbuf b = {0};
	span(&b, NULL, 1);
	json_decref(parse(&b));
	const char *t = b.p;
	assert_non_null(strstr(t, "[{\"key\":\"mcp.method.name\",\"value\":{\"stringValue\":\"tools/call\"}},"));
	assert_non_null(strstr(t, "{\"key\":\"server.port\",\"value\":{\"intValue\":\"8080\"}}"));
	assert_non_null(strstr(t, "{\"key\":\"b\",\"value\":{\"boolValue\":true}}]"));
	assert_null(strstr(t, "skipped"));
	assert_non_null(strstr(t, "\"timeUnixNano\":\"5\""));
	assert_non_null(strstr(t, "]},{\"timeUnixNano\":\"6\",\"name\":\"second\",\"attributes\":[]}]"));
	assert_non_null(strstr(t, "\"status\":{\"code\":2,\"message\":\"boom\"}}"));
	free(b.p);
}

static void test_request(void **state)
{
	(void)state;
	struct sbuf res = {0}, b = {0};
	otlp_json_attr_str(&res, "service.name", "mcpwarden");
	otlp_json_attr_str(&res, "x", "y");
	otlp_json_request_begin(&b, res.p, "mcpwarden", "1.0");
	span(&b, NULL, 1);
	sbuf_putn(&b, ",", 1);
	span(&b, pid, 0);
	otlp_json_request_end(&b);
	json_t *r = parse(&b);
	json_t *rs = json_array_get(json_object_get(r, "resourceSpans"), 0);
	assert_int_equal(json_array_size(json_object_get(json_object_get(rs, "resource"), "attributes")), 2);
	json_t *ss = json_array_get(json_object_get(rs, "scopeSpans"), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(ss, "scope"), "name")),
	                    "mcpwarden");
	assert_int_equal(json_array_size(json_object_get(ss, "spans")), 2);
	json_decref(r);
	free(b.p);
	free(res.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_span_mapping),
		cmocka_unit_test(test_attributes_events_status),
		cmocka_unit_test(test_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for proxy/base/otlp_json.c: a span and a request in the
 * OTLP/JSON mapping (hex ids, decimal-string 64-bit numbers, numeric
 * enums, parent and flags), attributes of each type, events and status.
 * The integration test (tests/integration/otel.test.mjs) decodes the same
 * text with the official OTLP definitions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/base/otlp_json.h"

static const uint8_t tid[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                                0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
static const uint8_t sid[8] = {0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
static const uint8_t pid[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static json_t *span(const uint8_t *parent)
{
	struct otlp_span_head h = {tid, sid, parent, "a=b", "tools/call echo", OTLP_KIND_SERVER,
	                           1700000000000000000ull, 1700000000000001000ull, 1};
	return otlp_json_span(&h);
}

static void test_span_mapping(void **state)
{
	(void)state;
	json_t *s = span(pid);
	assert_non_null(s);
	assert_string_equal(json_string_value(json_object_get(s, "traceId")),
	                    "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(json_string_value(json_object_get(s, "spanId")), "00f067aa0ba902b7");
	assert_string_equal(json_string_value(json_object_get(s, "parentSpanId")), "0102030405060708");
	assert_string_equal(json_string_value(json_object_get(s, "startTimeUnixNano")),
	                    "1700000000000000000");
	assert_int_equal(json_integer_value(json_object_get(s, "kind")), 2);
	assert_int_equal(json_integer_value(json_object_get(s, "flags")), 0x301);
	assert_string_equal(json_string_value(json_object_get(s, "traceState")), "a=b");
	json_decref(s);
	s = span(NULL);
	assert_null(json_object_get(s, "parentSpanId"));
	assert_int_equal(json_integer_value(json_object_get(s, "flags")), 0x101);
	json_decref(s);
}

static void test_attributes_events_status(void **state)
{
	(void)state;
	json_t *s = span(NULL);
	assert_int_equal(otlp_json_attr_str(s, "mcp.method.name", "tools/call"), 0);
	assert_int_equal(otlp_json_attr_str(s, "skipped", NULL), 0);
	assert_int_equal(otlp_json_attr_int(s, "server.port", 8080), 0);
	assert_int_equal(otlp_json_attr_bool(s, "b", 1), 0);
	json_t *e = otlp_json_event(s, "mcpwarden.policy.decision", 5);
	assert_non_null(e);
	assert_int_equal(otlp_json_attr_str(e, "mcpwarden.rule", "r1"), 0);
	assert_int_equal(otlp_json_status(s, OTLP_STATUS_ERROR, "boom"), 0);
	char *t = json_dumps(s, JSON_COMPACT);
	assert_non_null(strstr(t, "{\"key\":\"mcp.method.name\",\"value\":{\"stringValue\":\"tools/call\"}}"));
	assert_non_null(strstr(t, "{\"key\":\"server.port\",\"value\":{\"intValue\":\"8080\"}}"));
	assert_non_null(strstr(t, "{\"key\":\"b\",\"value\":{\"boolValue\":true}}"));
	assert_null(strstr(t, "skipped"));
	assert_non_null(strstr(t, "\"timeUnixNano\":\"5\""));
	assert_non_null(strstr(t, "\"status\":{\"code\":2,\"message\":\"boom\"}"));
	free(t);
	json_decref(s);
}

static void test_request(void **state)
{
	(void)state;
	json_t *res = json_array();
	json_t *spans = json_pack("[o]", span(NULL));
	json_t *r = otlp_json_request(res, "mcpwarden", "1.0", spans);
	assert_non_null(r);
	json_t *ss = json_object_get(json_array_get(json_object_get(r, "resourceSpans"), 0), "scopeSpans");
	json_t *scope = json_object_get(json_array_get(ss, 0), "scope");
	assert_string_equal(json_string_value(json_object_get(scope, "name")), "mcpwarden");
	assert_int_equal(json_array_size(json_object_get(json_array_get(ss, 0), "spans")), 1);
	json_decref(r);
	json_decref(res);
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

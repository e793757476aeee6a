/* Unit tests for proxy/cli/replay_compare.c: normalisation (built-ins,
 * --rules replacements and ignore pointers), one test per comparison code,
 * and the dataset matchers. Pure functions on jansson values: no I/O.
 */
#include "proxy/cli/replay_compare.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tests/unit/helpers.h"

/* ---- helpers ------------------------------------------------------------ */

static struct replay_rules *rules(const char *doc)
{
	struct replay_rules *r = replay_rules_new();
	char err[256];
	assert_non_null(r);
	if (doc) {
		json_t *d = th_json(doc);
		int rc = replay_rules_add(r, d, err, sizeof(err));
		json_decref(d);
		if (rc < 0)
			fail_msg("rules: %s", err);
	}
	return r;
}

static char *norm(const struct replay_rules *r, const char *s)
{
	char *out = replay_normalize_text(r, s, strlen(s));
	assert_non_null(out);
	return out;
}

/* The codes of compare(old, new), comma-separated (a static buffer). */
static const char *codes(const struct replay_rules *r, const char *old, const char *new_,
                         const struct replay_call_ctx *cx)
{
	static char buf[512];
	json_t *o = th_json(old), *n = new_ ? th_json(new_) : NULL;
	json_t *f = json_array();
	int errs = replay_compare(r, o, n, "refused", cx, f);
	size_t w = 0;
	buf[0] = '\0';
	int counted = 0;
	for (size_t i = 0; i < json_array_size(f); i++) {
		const json_t *x = json_array_get(f, i);
		w += (size_t)snprintf(buf + w, sizeof(buf) - w, "%s%s", i ? "," : "",
		                      json_string_value(json_object_get(x, "code")));
		counted += strcmp(json_string_value(json_object_get(x, "severity")), "error") == 0;
	}
	assert_int_equal(errs, counted);
	json_decref(o);
	json_decref(n);
	json_decref(f);
	return buf;
}

static const char *expect_codes(const struct replay_rules *r, const char *expect, const char *resp)
{
	static char buf[512];
	char err[256];
	json_t *e = th_json(expect), *n = th_json(resp), *f = json_array();
	struct replay_expect *x = replay_expect_new(r, e, "2025-11-25", err, sizeof(err));
	if (!x)
		fail_msg("expect: %s", err);
	replay_expect_check(r, x, n, NULL, f);
	size_t w = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < json_array_size(f); i++)
		w += (size_t)snprintf(buf + w, sizeof(buf) - w, "%s%s", i ? "," : "",
		                      json_string_value(json_object_get(json_array_get(f, i), "code")));
	replay_expect_free(x);
	json_decref(e);
	json_decref(n);
	json_decref(f);
	return buf;
}

/* ---- normalisation -------------------------------------------------------- */

static void test_builtin_normalisers(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	char *s = norm(r, "id 123e4567-E89B-12d3-a456-426614174000 at 2026-12-02T02:30:00.123Z, "
	                  "t=2026-12-02 02:30:00+01:00 sha deadbeefdeadbeef0123 n 1700000000000");
	assert_string_equal(s, "id <uuid> at <timestamp>, t=<timestamp> sha <hex> n <number>");
	free(s);
	/* Short numbers, words and partial shapes stay. */
	s = norm(r, "3 workers, port 8080, deadbeef, 2026-12-02, v2.0.1-rc1, x123e4567-e89b-12d3");
	assert_string_equal(s, "3 workers, port 8080, deadbeef, 2026-12-02, v2.0.1-rc1, "
	                       "x123e4567-e89b-12d3");
	free(s);
	replay_rules_free(r);
	r = rules("{'builtin': false}");
	s = norm(r, "n 1700000000000");
	assert_string_equal(s, "n 1700000000000");
	free(s);
	replay_rules_free(r);
}

static void test_regex_replacements(void **state)
{
	(void)state;
	struct replay_rules *r = rules("{'replace': [{'pattern': 'req-\\\\d+', 'with': 'req-N'},"
	                               "{'pattern': 'a+', 'with': 'A'}]}");
	char *s = norm(r, "req-12 and req-345, baaad");
	assert_string_equal(s, "req-N And req-N, bAd");
	free(s);
	replay_rules_free(r);
}

static void test_rules_refused(void **state)
{
	(void)state;
	struct replay_rules *r = replay_rules_new();
	char err[256];
	static const char *const bad[] = {
		"{'replace': [{'pattern': '(?=x)', 'with': ''}]}",
		"{'replace': [{'pattern': 'x'}]}",
		"{'ignore': ['no-slash']}",
		"{'ignorre': []}",
	};
	static const char *const why[] = {"lookahead", "wants", "JSON Pointer", "unknown"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *d = th_json(bad[i]);
		assert_int_equal(replay_rules_add(r, d, err, sizeof(err)), -1);
		assert_non_null(strstr(err, why[i]));
		json_decref(d);
	}
	replay_rules_free(r);
}

static void test_ignore_pointers(void **state)
{
	(void)state;
	struct replay_rules *r = rules("{'ignore': ['/structuredContent/at', '/content/1', "
	                               "'/structuredContent/a~1b']}");
	json_t *v = th_json("{'structuredContent': {'at': 1, 'keep': 2, 'a/b': 3},"
	                    "'content': [{'type': 'text', 'text': 'x'}, {'type': 'text', 'text': 'y'}]}");
	json_t *n = replay_normalize(r, v);
	json_t *want = th_json("{'structuredContent': {'keep': 2},"
	                       "'content': [{'type': 'text', 'text': 'x'}]}");
	assert_true(json_equal(n, want));
	json_decref(v);
	json_decref(n);
	json_decref(want);
	replay_rules_free(r);
}

/* ---- comparison ------------------------------------------------------------ */

#define OK_TEXT "{'result': {'content': [{'type': 'text', 'text': 'a = 42'}]}}"

static void test_same_answer_passes(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	assert_string_equal(codes(r, OK_TEXT, OK_TEXT, NULL), "");
	assert_string_equal(
	        codes(r, "{'result': {'content': [{'type': 'text', 'text': 'at 2026-01-01T00:00:00Z'}]}}",
	              "{'result': {'content': [{'type': 'text', 'text': 'at 2026-12-02T02:30:00.5Z'}]}}",
	              NULL),
	        "");
	replay_rules_free(r);
}

static void test_error_codes(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	assert_string_equal(codes(r, OK_TEXT, "{'error': {'code': -32603, 'message': 'down'}}", NULL),
	                    "replay-error-flip");
	assert_string_equal(codes(r, "{'error': {'code': -32602, 'message': 'x'}}", OK_TEXT, NULL),
	                    "replay-error-flip");
	assert_string_equal(codes(r, "{'error': {'code': -32602, 'message': 'x'}}",
	                          "{'error': {'code': -32603, 'message': 'x'}}", NULL),
	                    "replay-error-code");
	assert_string_equal(codes(r, OK_TEXT, NULL, NULL), "replay-no-response");
	replay_rules_free(r);
}

static void test_iserror_flip(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	assert_string_equal(
	        codes(r, OK_TEXT, "{'result': {'isError': true, 'content': [{'type': 'text', 'text': "
	                          "'a = 42'}]}}", NULL),
	        "replay-iserror-flip");
	replay_rules_free(r);
}

static void test_structured(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	const char *o = "{'result': {'content': [], 'structuredContent': {'n': 1, 'o': {'k': 'v'},"
	                "'l': [{'x': 1}]}}}";
	assert_string_equal(codes(r, o, "{'result': {'content': []}}", NULL),
	                    "replay-structured-missing");
	assert_string_equal(codes(r, "{'result': {'content': []}}", o, NULL), "replay-structured-added");
	assert_string_equal(codes(r, o, "{'result': {'content': [], 'structuredContent': {'n': 1.5,"
	                                "'o': {}, 'l': [{'x': 's'}]}}}", NULL),
	                    "replay-structured-keys,replay-structured-type");
	assert_string_equal(codes(r, o, "{'result': {'content': [], 'structuredContent': {'n': 2,"
	                                "'o': {'k': 'v'}, 'l': [{'x': 1}]}}}", NULL),
	                    "replay-structured-changed");
	/* The warning alone is no regression. */
	json_t *f = json_array();
	json_t *a = th_json("{'result': {'content': []}}"), *b = th_json(o);
	assert_int_equal(replay_compare(r, a, b, NULL, NULL, f), 0);
	json_decref(a);
	json_decref(b);
	json_decref(f);
	replay_rules_free(r);
}

static void test_output_schema(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	json_t *schema = th_json("{'type': 'object', 'properties': {'n': {'type': 'integer'}}, "
	                         "'required': ['n']}");
	struct jschema_error why;
	struct replay_call_ctx cx = {.old_ms = -1, .new_ms = -1};
	cx.output_schema = jschema_compile(schema, JSCHEMA_2020_12, 0, &why);
	assert_non_null(cx.output_schema);
	const char *o = "{'result': {'content': [], 'structuredContent': {'n': 1}}}";
	assert_string_equal(codes(r, o, o, &cx), "");
	assert_string_equal(codes(r, "{'result': {'content': [], 'structuredContent': {'m': 1}}}",
	                          "{'result': {'content': [], 'structuredContent': {'m': 1}}}", &cx),
	                    "replay-output-schema");
	assert_string_equal(codes(r, "{'result': {'content': []}}", "{'result': {'content': []}}", &cx),
	                    "replay-output-schema");
	/* An error result is not bound by the outputSchema. */
	assert_string_equal(codes(r, "{'result': {'isError': true, 'content': []}}",
	                          "{'result': {'isError': true, 'content': []}}", &cx),
	                    "");
	jschema_free((struct jschema *)(uintptr_t)cx.output_schema);
	json_decref(schema);
	replay_rules_free(r);
}

static void test_content(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	assert_string_equal(
	        codes(r, OK_TEXT, "{'result': {'content': [{'type': 'image', 'data': 'x'}]}}", NULL),
	        "replay-content-types");
	assert_string_equal(codes(r, OK_TEXT, "{'result': {'content': []}}", NULL),
	                    "replay-content-types");
	assert_string_equal(
	        codes(r, OK_TEXT, "{'result': {'content': [{'type': 'text', 'text': 'a = 43'}]}}", NULL),
	        "replay-text-changed");
	assert_string_equal(codes(r, "{'result': {'content': [{'type': 'image', 'data': 'x'}]}}",
	                          "{'result': {'content': [{'type': 'image', 'data': 'y'}]}}", NULL),
	                    "replay-text-changed");
	replay_rules_free(r);
}

static void test_redacted_reference(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	struct replay_call_ctx cx = {.old_ms = -1, .new_ms = -1, .redacted = 1};
	const char *masked = "{'result': {'content': [{'type': 'text', 'text': 'token \u2022\u2022\u2022\u2022'}],"
	                     "'structuredContent': {'token': '\u2022\u2022\u2022\u2022'}}}";
	const char *live = "{'result': {'content': [{'type': 'text', 'text': 'token abc'}],"
	                   "'structuredContent': {'token': 'abc'}}}";
	assert_string_equal(codes(r, masked, live, &cx), "");
	/* Shapes still count. */
	assert_string_equal(codes(r, masked, "{'result': {'content': [], 'structuredContent': {}}}", &cx),
	                    "replay-structured-keys,replay-content-types");
	cx.redacted = 0;
	assert_string_equal(codes(r, masked, live, &cx), "replay-structured-changed,replay-text-changed");
	replay_rules_free(r);
}

static void test_slower(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	struct replay_call_ctx cx = {.old_ms = 10, .new_ms = 31, .max_slowdown = 3};
	assert_string_equal(codes(r, OK_TEXT, OK_TEXT, &cx), "replay-slower");
	cx.new_ms = 29;
	assert_string_equal(codes(r, OK_TEXT, OK_TEXT, &cx), "");
	cx.new_ms = 1000;
	cx.max_slowdown = 0; /* off */
	assert_string_equal(codes(r, OK_TEXT, OK_TEXT, &cx), "");
	replay_rules_free(r);
}

/* ---- dataset expectations ---------------------------------------------------- */

static void test_expect_matchers(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	const char *resp = "{'result': {'content': [{'type': 'text', 'text': 'id 1700000000000'}],"
	                   "'structuredContent': {'n': 1}}}";
	assert_string_equal(expect_codes(r, "{'equals': {'content': [{'type': 'text', 'text': 'id "
	                                    "1234567890123'}], 'structuredContent': {'n': 1}}}", resp),
	                    "");
	assert_string_equal(expect_codes(r, "{'equals': {'content': []}}", resp),
	                    "replay-expect-equals");
	assert_string_equal(expect_codes(r, "{'pattern': '^id \\\\d+$'}", resp), "");
	assert_string_equal(expect_codes(r, "{'pattern': 'nope'}", resp), "replay-expect-pattern");
	assert_string_equal(expect_codes(r, "{'schema': {'required': ['content']}}", resp), "");
	assert_string_equal(expect_codes(r, "{'schema': {'required': ['isError']}}", resp),
	                    "replay-expect-schema");
	assert_string_equal(expect_codes(r, "{'structured_schema': {'properties': {'n': {'type': "
	                                    "'integer'}}}}", resp), "");
	assert_string_equal(expect_codes(r, "{'structured_schema': {'required': ['m']}}", resp),
	                    "replay-expect-structured-schema");
	assert_string_equal(expect_codes(r, "{'max_bytes': 1000, 'min_bytes': 5}", resp), "");
	assert_string_equal(expect_codes(r, "{'max_bytes': 5}", resp), "replay-expect-size");
	assert_string_equal(expect_codes(r, "{'min_bytes': 5000}", resp), "replay-expect-size");
	assert_string_equal(expect_codes(r, "{'isError': false}", resp), "");
	assert_string_equal(expect_codes(r, "{'isError': true}", resp), "replay-expect-iserror");
	assert_string_equal(expect_codes(r, "{'pattern': 'x'}",
	                                 "{'error': {'code': -1, 'message': 'no'}}"),
	                    "replay-expect-result");
	replay_rules_free(r);
}

static void test_expect_refused(void **state)
{
	(void)state;
	struct replay_rules *r = rules(NULL);
	char err[256];
	static const char *const bad[] = {"{'patern': 'x'}", "{'pattern': '(?<=a)'}",
	                                  "{'schema': 3}", "{'max_bytes': -1}", "{'isError': 1}",
	                                  "{'schema': {'$ref': 'http://x/y'}}", "[]"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *e = th_json(bad[i]);
		struct replay_expect *x = replay_expect_new(r, e, "2025-11-25", err, sizeof(err));
		assert_null(x);
		assert_true(err[0] != '\0');
		json_decref(e);
	}
	replay_rules_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_normalisers),
		cmocka_unit_test(test_regex_replacements),
		cmocka_unit_test(test_rules_refused),
		cmocka_unit_test(test_ignore_pointers),
		cmocka_unit_test(test_same_answer_passes),
		cmocka_unit_test(test_error_codes),
		cmocka_unit_test(test_iserror_flip),
		cmocka_unit_test(test_structured),
		cmocka_unit_test(test_output_schema),
		cmocka_unit_test(test_content),
		cmocka_unit_test(test_redacted_reference),
		cmocka_unit_test(test_slower),
		cmocka_unit_test(test_expect_matchers),
		cmocka_unit_test(test_expect_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

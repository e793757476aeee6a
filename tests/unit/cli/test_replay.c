/* Unit tests for proxy/cli/replay.c's pure steps: what a line must hold,
 * how lines group into sessions, the Mcp-Param-* headers of a call, the
 * --format rules and the per-tool summary. The network half runs in
 * tests/integration/replay.test.mjs against real servers.
 */
#include "proxy/cli/replay.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tests/unit/helpers.h"

#define LINE_OK "{'capture': 1, 'seq': 1, 'session': 's', 'era': '2025-11-25', 'client': null," \
                "'capabilities': {}, 'method': 'tools/call', 'params': {'name': 't'}}"

/* got equals the JSON of want; got is consumed. */
static void assert_json_is(json_t *got, const char *want)
{
	json_t *w = th_json(want);
	assert_true(json_equal(got, w));
	json_decref(w);
	json_decref(got);
}

static void test_line_problem(void **state)
{
	(void)state;
	json_t *ok = th_json(LINE_OK);
	assert_null(line_problem(ok));
	static const char *const edits[][2] = {
		{"capture", "2"},          {"method", "1"},  {"params", "{}"},
		{"session", "3"},          {"era", "[]"},    {"client", "'x'"},
		{"capabilities", "true"},  {"result", "[]"}, {"error", "'boom'"},
	};
	static const char *const why[] = {"capture", "method", "params", "session", "era",
	                                  "client", "client", "result", "error"};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		json_t *d = json_deep_copy(ok);
		json_object_set_new(d, edits[i][0], th_json(edits[i][1]));
		const char *p = line_problem(d);
		assert_non_null(p);
		assert_non_null(strstr(p, why[i]));
		json_decref(d);
	}
	json_t *arr = th_json("[1]");
	assert_non_null(line_problem(arr));
	json_decref(arr);
	json_decref(ok);
}

static void test_group_sessions(void **state)
{
	(void)state;
	/* a b a null b null: sessions a, b, null, null in first-line order. */
	static const char *const keys[] = {"'a'", "'b'", "'a'", "null", "'b'", "null"};
	struct rp r = {0};
	r.calls = calloc(6, sizeof(*r.calls));
	for (size_t i = 0; i < 6; i++) {
		json_t *d = th_json(LINE_OK);
		json_object_set_new(d, "session", th_json(keys[i]));
		r.calls[i].doc = d;
		r.calls[i].session = json_string_value(json_object_get(d, "session"));
		r.ncalls++;
	}
	assert_int_equal(group(&r), 0);
	assert_int_equal(r.nsess, 4);
	assert_int_equal(r.sess[0].n, 2);
	assert_int_equal(r.sess[0].calls[1], 2);
	assert_int_equal(r.sess[1].n, 2);
	assert_int_equal(r.sess[1].calls[1], 4);
	assert_int_equal(r.sess[2].n, 1);
	assert_int_equal(r.sess[2].calls[0], 3);
	assert_int_equal(r.sess[3].calls[0], 5);
	rp_free(&r);
}

static void test_param_headers(void **state)
{
	(void)state;
	json_t *schema = th_json("{'type': 'object', 'properties': {"
	                         "'region': {'type': 'string', 'x-mcp-header': 'Region'},"
	                         "'days': {'type': 'integer', 'x-mcp-header': 'Days'},"
	                         "'ratio': {'type': 'number', 'x-mcp-header': 'Ratio'},"
	                         "'plain': {'type': 'string'},"
	                         "'loc': {'type': 'object', 'properties': {"
	                         "  'zone': {'type': 'string', 'x-mcp-header': 'Zone'}}},"
	                         "'list': {'type': 'array', 'items': {'type': 'object', 'properties': {"
	                         "  'x': {'type': 'string', 'x-mcp-header': 'X'}}}}}}");
	json_t *args = th_json("{'region': 'eu', 'days': 3, 'ratio': 1.5, 'plain': 'p',"
	                       "'loc': {'zone': 'b'}, 'list': [{'x': 'no'}]}");
	json_t *h = json_object();
	param_headers(schema, args, h, 0);
	assert_json_is(h, "{'Mcp-Param-Region': 'eu', 'Mcp-Param-Days': '3', 'Mcp-Param-Zone': 'b'}");
	json_decref(schema);
	json_decref(args);
}

static void test_formats(void **state)
{
	(void)state;
	struct rp r = {0};
	assert_int_equal(add_format(&r, "json=out.json"), 0);
	assert_int_equal(add_format(&r, "sarif=out.sarif"), 0);
	assert_int_equal(add_format(&r, "text"), 0);
	assert_int_equal(add_format(&r, "json"), -1);  /* a second one on stdout */
	assert_int_equal(add_format(&r, "yaml"), -1);
	assert_int_equal(r.outs.n, 3);
	assert_true(report_outs_rich(&r.outs));
}

static void test_tool_summary(void **state)
{
	(void)state;
	json_t *calls = th_json("["
	        "{'tool': 'b', 'verdict': 'pass', 'findings': []},"
	        "{'tool': 'a', 'verdict': 'skipped', 'findings': []},"
	        "{'tool': 'b', 'verdict': 'regressed', 'findings': [{'code': 'x'}, {'code': 'x'}]},"
	        "{'tool': 'c', 'verdict': 'skipped', 'findings': []},"
	        "{'tool': 'c', 'verdict': 'pass', 'findings': []}]");
	assert_json_is(tool_summary(calls), "["
	        "{'tool': 'a', 'verdict': 'skipped', 'calls': 1, 'passed': 0, 'regressed': 0, 'skipped': 1, 'codes': []},"
	        "{'tool': 'b', 'verdict': 'regressed', 'calls': 2, 'passed': 1, 'regressed': 1, 'skipped': 0, 'codes': ['x']},"
	        "{'tool': 'c', 'verdict': 'pass', 'calls': 2, 'passed': 1, 'regressed': 0, 'skipped': 1, 'codes': []}]");
	json_decref(calls);
}

static void test_preset_is_the_shipped_file(void **state)
{
	(void)state;
	struct rp r = {0};
	assert_int_equal(load_policy(&r), 0);
	json_t *shipped = json_load_file("conf/policy-read-only.json", 0, NULL);
	json_t *embedded = json_loadb(replay_preset_start,
	                              (size_t)(replay_preset_end - replay_preset_start), 0, NULL);
	assert_non_null(shipped);
	assert_true(json_equal(shipped, embedded));
	json_decref(shipped);
	json_decref(embedded);
	rp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_problem),
		cmocka_unit_test(test_group_sessions),
		cmocka_unit_test(test_param_headers),
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_tool_summary),
		cmocka_unit_test(test_preset_is_the_shipped_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for admin/contract_view.c: one upstream's entry of GET
 * /contract, the report beside the live contract's per-tool summary (a
 * fake one, shaped as proxy/hooks/hook_validate.h documents it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admin/contract_view.h"

static const char *const FAKE_SUMMARY =
	"{\"get-sum\":{\"calls\":3,\"arguments_invalid\":2,\"results\":1,\"results_invalid\":0,"
	"\"last\":{\"code\":\"arguments-invalid\",\"kind\":\"arguments\",\"instance\":\"/a\","
	"\"schema\":\"/properties/a/type\",\"keyword\":\"type\",\"message\":\"string where number "
	"is expected\",\"time\":\"2026-12-01T23:00:00.000000Z\"}},"
	"\"echo\":{\"calls\":1,\"arguments_invalid\":0,\"results\":1,\"results_invalid\":0,"
	"\"last\":null}}";

static void test_report_and_live_side_by_side(void **state)
{
	(void)state;
	json_t *report = json_loads("{\"score\":1,\"passed\":true,\"tools\":[]}", 0, NULL);
	json_t *live = json_loads(FAKE_SUMMARY, 0, NULL);
	json_t *want_live = json_deep_copy(live);
	json_t *e = contract_view_upstream("staging", "2026-12-01T23:00:00.000000Z", report, live);
	assert_non_null(e);
	assert_int_equal(json_object_size(e), 4);
	assert_string_equal(json_string_value(json_object_get(e, "upstream")), "staging");
	assert_string_equal(json_string_value(json_object_get(e, "updated")),
	                    "2026-12-01T23:00:00.000000Z");
	assert_true(json_is_true(json_object_get(json_object_get(e, "report"), "passed")));
	/* the summary as the hook made it, member for member */
	assert_true(json_equal(json_object_get(e, "live"), want_live));
	const json_t *sum = json_object_get(json_object_get(e, "live"), "get-sum");
	assert_int_equal(json_integer_value(json_object_get(sum, "arguments_invalid")), 2);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(sum, "last"), "instance")), "/a");
	json_decref(want_live);
	json_decref(e);
}

/* No report yet and no live contract: both null, the older members kept. */
static void test_nothing_yet(void **state)
{
	(void)state;
	json_t *e = contract_view_upstream("prod", NULL, NULL, NULL);
	assert_non_null(e);
	assert_true(json_is_null(json_object_get(e, "updated")));
	assert_true(json_is_null(json_object_get(e, "report")));
	assert_true(json_is_null(json_object_get(e, "live")));
	json_decref(e);
	/* a summary before any call is {} */
	e = contract_view_upstream("prod", NULL, NULL, json_object());
	assert_true(json_is_object(json_object_get(e, "live")));
	assert_int_equal(json_object_size(json_object_get(e, "live")), 0);
	json_decref(e);
}

/* Anything but an object where the summary goes shows as null (and is
 * released: the sanitizer build sees no leak). */
static void test_not_an_object(void **state)
{
	(void)state;
	json_t *e = contract_view_upstream("u", NULL, NULL, json_array());
	assert_true(json_is_null(json_object_get(e, "live")));
	json_decref(e);
}

/* Live baselines (issue 21): the diff, breaking changes first, each group
 * in its order, with what an accept would do. */
static void test_diff_breaking_first(void **state)
{
	(void)state;
	json_t *report = json_loads(
		"{\"complete\":true,\"baseline\":\"b.json\",\"changes\":["
		"{\"code\":\"tool-added\",\"kind\":\"notice\",\"tool\":\"n1\"},"
		"{\"code\":\"tool-removed\",\"kind\":\"breaking\",\"tool\":\"b1\"},"
		"{\"code\":\"description-changed\",\"kind\":\"notice\",\"tool\":\"n2\"},"
		"{\"code\":\"param-removed\",\"kind\":\"breaking\",\"tool\":\"b2\"}]}",
		0, NULL);
	struct contract_view_baseline b = {.has_baseline = 1, .baseline_tools = 7, .can_accept = 1,
	                                   .gate = "failing", .accepted_time = "2026-12-02T02:00:00Z",
	                                   .accepted_by = "127.0.0.1:5 (admin token)"};
	json_t *d = contract_view_diff(report, &b);
	assert_non_null(d);
	const json_t *c = json_object_get(d, "changes");
	assert_int_equal(json_array_size(c), 4);
	const char *want[] = {"b1", "b2", "n1", "n2"};
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(c, i), "tool")),
		                    want[i]);
	assert_int_equal(json_integer_value(json_object_get(d, "breaking")), 2);
	assert_int_equal(json_integer_value(json_object_get(d, "notices")), 2);
	assert_string_equal(json_string_value(json_object_get(d, "baseline")), "b.json");
	assert_string_equal(json_string_value(json_object_get(d, "gate")), "failing");
	assert_true(json_is_true(json_object_get(d, "complete")));
	assert_true(json_is_true(json_object_get(d, "can_accept")));
	assert_int_equal(json_integer_value(json_object_get(d, "baseline_tools")), 7);
	assert_string_equal(json_string_value(json_object_get(json_object_get(d, "accepted"), "by")),
	                    "127.0.0.1:5 (admin token)");
	/* the entry gets it as "diff", beside the older members */
	json_t *e = contract_view_upstream("u", NULL, report, NULL);
	assert_int_equal(contract_view_add_diff(e, d), 0);
	assert_int_equal(json_object_size(e), 5);
	assert_true(json_is_object(json_object_get(e, "diff")));
	json_decref(e);
}

/* No report yet: an empty diff, never accepted; NULLs release what they get. */
static void test_diff_nothing_yet(void **state)
{
	(void)state;
	struct contract_view_baseline b = {.gate = "unknown"};
	json_t *d = contract_view_diff(NULL, &b);
	assert_non_null(d);
	assert_int_equal(json_array_size(json_object_get(d, "changes")), 0);
	assert_true(json_is_null(json_object_get(d, "baseline")));
	assert_true(json_is_null(json_object_get(d, "accepted")));
	assert_true(json_is_false(json_object_get(d, "complete")));
	assert_true(json_is_false(json_object_get(d, "has_baseline")));
	assert_int_equal(contract_view_add_diff(NULL, d), -1);
	assert_int_equal(contract_view_add_diff(json_object(), NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_and_live_side_by_side),
		cmocka_unit_test(test_nothing_yet),
		cmocka_unit_test(test_not_an_object),
		cmocka_unit_test(test_diff_breaking_first),
		cmocka_unit_test(test_diff_nothing_yet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_and_live_side_by_side),
		cmocka_unit_test(test_nothing_yet),
		cmocka_unit_test(test_not_an_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

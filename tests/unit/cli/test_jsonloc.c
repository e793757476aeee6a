/* Unit tests for proxy/cli/jsonloc.c: one test per behaviour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/cli/jsonloc.h"

static const char pretty[] =
	"{\n"
	"  \"tools\": [\n"
	"    {\"name\": \"a\"},\n"
	"    {\n"
	"      \"name\": \"b\",\n"
	"      \"inputSchema\": {\"type\": \"object\"}\n"
	"    }\n"
	"  ]\n"
	"}\n";

static int find(const char *text, const char *ptr, struct jsonloc *l)
{
	return jsonloc_find(text, strlen(text), ptr, l);
}

static void test_member_points_at_its_name(void **state)
{
	(void)state;
	struct jsonloc l;
	assert_int_equal(find(pretty, "/tools/1/name", &l), 1);
	assert_int_equal(l.line, 5);
	assert_int_equal(l.column, 7);
	assert_int_equal(pretty[l.at], '"');
	assert_int_equal(strncmp(pretty + l.value, "\"b\"", 3), 0);
	assert_int_equal(l.matched, 3);
}

static void test_array_element_and_root(void **state)
{
	(void)state;
	struct jsonloc l;
	assert_int_equal(find(pretty, "/tools/0", &l), 1);
	assert_int_equal(l.line, 3);
	assert_int_equal(l.column, 5);
	assert_int_equal(find(pretty, "", &l), 1);
	assert_int_equal(l.line, 1);
	assert_int_equal(l.at, 0);
}

/* Something absent: the deepest place that exists (where it belongs). */
static void test_absent_gives_the_parent(void **state)
{
	(void)state;
	struct jsonloc l;
	assert_int_equal(find(pretty, "/tools/1/description", &l), 0);
	assert_int_equal(l.matched, 2);
	assert_int_equal(l.line, 4);
	assert_int_equal(find(pretty, "/tools/7/name", &l), 0);
	assert_int_equal(l.matched, 1);
	assert_int_equal(l.line, 2);
}

static void test_escapes_in_names_and_pointer(void **state)
{
	(void)state;
	const char *t = "{\"a/b\":1,\"m~n\":2,\"\\u00e9\":3,\"\\ud83d\\ude00\":4,\"q\\\"\":5}";
	struct jsonloc l;
	assert_int_equal(find(t, "/a~1b", &l), 1);
	assert_int_equal(t[l.value], '1');
	assert_int_equal(find(t, "/m~0n", &l), 1);
	assert_int_equal(t[l.value], '2');
	assert_int_equal(find(t, "/\xc3\xa9", &l), 1);
	assert_int_equal(t[l.value], '3');
	assert_int_equal(find(t, "/\xf0\x9f\x98\x80", &l), 1);
	assert_int_equal(t[l.value], '4');
	assert_int_equal(find(t, "/q\"", &l), 1);
	assert_int_equal(t[l.value], '5');
	assert_int_equal(find(t, "/m~2n", &l), 0);
}

static void test_duplicate_names_last_wins(void **state)
{
	(void)state;
	const char *t = "{\"k\":1,\"k\":2}";
	struct jsonloc l;
	assert_int_equal(find(t, "/k", &l), 1);
	assert_int_equal(t[l.value], '2');
}

static void test_columns_count_code_points(void **state)
{
	(void)state;
	const char *t = "{\"\xc3\xa9\xc3\xa9\": {\"x\": 1}}";
	struct jsonloc l;
	assert_int_equal(find(t, "/\xc3\xa9\xc3\xa9/x", &l), 1);
	assert_int_equal(l.line, 1);
	assert_int_equal(l.column, 9); /* {"éé": { is 8 code points, 10 bytes */
}

static void test_indexes_and_strings_with_brackets(void **state)
{
	(void)state;
	const char *t = "[\"]\", {\"a\": \"}\"}, [1,[2]], 4]";
	struct jsonloc l;
	assert_int_equal(find(t, "/3", &l), 1);
	assert_int_equal(t[l.value], '4');
	assert_int_equal(find(t, "/01", &l), 0);
	assert_int_equal(find(t, "/-", &l), 0);
	assert_int_equal(find(t, "/2/1/0", &l), 1);
	assert_int_equal(t[l.value], '2');
}

static void test_bad_input_is_bounded(void **state)
{
	(void)state;
	struct jsonloc l;
	assert_int_equal(find("{\"tools\": [", "/tools/0", &l), 0);
	assert_int_equal(find("{\"tools", "/tools", &l), 0);
	assert_int_equal(find("", "", &l), -1);
	assert_int_equal(find("{}", "tools", &l), -1);
	/* The length bounds the scan, not the NUL. */
	assert_int_equal(jsonloc_find("{\"a\":1}", 3, "/a", &l), 0);
	/* jansson's quirk: one NUL after a number is skipped (fuzz corpus
	 * nul_after_number). */
	assert_int_equal(jsonloc_find("{\"a\":1\0,\"b\":2}", 14, "/b", &l), 1);
	assert_int_equal(l.value, 12);
}

static void test_elements(void **state)
{
	(void)state;
	size_t offs[4];
	assert_int_equal(jsonloc_elements(pretty, strlen(pretty), "/tools", offs, 4), 2);
	assert_int_equal(pretty[offs[0]], '{');
	assert_int_equal(strncmp(pretty + offs[0], "{\"name\": \"a\"}", 13), 0);
	assert_int_equal(pretty[offs[1]], '{');
	assert_int_equal(jsonloc_elements(pretty, strlen(pretty), "/tools", offs, 1), 1);
	assert_int_equal(jsonloc_elements(pretty, strlen(pretty), "/tools/0", offs, 4), -1);
	assert_int_equal(jsonloc_elements("[]", 2, "", offs, 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_member_points_at_its_name),
		cmocka_unit_test(test_array_element_and_root),
		cmocka_unit_test(test_absent_gives_the_parent),
		cmocka_unit_test(test_escapes_in_names_and_pointer),
		cmocka_unit_test(test_duplicate_names_last_wins),
		cmocka_unit_test(test_columns_count_code_points),
		cmocka_unit_test(test_indexes_and_strings_with_brackets),
		cmocka_unit_test(test_bad_input_is_bounded),
		cmocka_unit_test(test_elements),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

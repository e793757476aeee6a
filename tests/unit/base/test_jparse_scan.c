/* Unit tests for jparse_scan (proxy/base/jparse.h): the members a message's
 * index notes, and the texts it refuses. tests/fuzz/fuzz_jparse.c checks
 * the same against jansson on any input; these are the cases the proxy
 * relies on, spelt out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/base/jparse.h"
#include "tests/unit/helpers.h"

static struct jparse_index ix;

static int scan(const char *text)
{
	return jparse_scan(text, strlen(text), 1, &ix);
}

/* The noted bytes of slot s, as a string (static buffer). */
static const char *at(int s)
{
	static char buf[256];
	if (!ix.at[s].at)
		return "(none)";
	snprintf(buf, sizeof(buf), "%.*s", (int)ix.at[s].len, ix.at[s].at);
	return buf;
}

static void test_call(void **state)
{
	(void)state;
	assert_int_equal(scan("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
	                      "{\"name\":\"echo\",\"arguments\":{\"message\":\"hi\",\"name\":\"no\"},"
	                      "\"_meta\":{\"traceparent\":\"00-x\"}}}"),
	                 0);
	assert_true(ix.object);
	assert_int_equal(ix.nest, 3);
	assert_string_equal(at(JPI_ID), "7");
	assert_string_equal(at(JPI_JSONRPC), "\"2.0\"");
	assert_string_equal(ix.method, "tools/call");
	assert_string_equal(ix.name, "echo"); /* not arguments.name */
	assert_string_equal(at(JPI_ARGUMENTS), "{\"message\":\"hi\",\"name\":\"no\"}");
	assert_string_equal(at(JPI_META), "{\"traceparent\":\"00-x\"}");
	assert_string_equal(at(JPI_CURSOR), "(none)");
	assert_string_equal(at(JPI_RESULT), "(none)");
}

static void test_result_and_error(void **state)
{
	(void)state;
	assert_int_equal(scan(" {\"jsonrpc\":\"2.0\", \"id\":\"a\" , \"result\": {\"content\":[],"
	                      "\"isError\":true} } "),
	                 0);
	assert_string_equal(at(JPI_ID), "\"a\"");
	assert_string_equal(at(JPI_RESULT), "{\"content\":[],\"isError\":true}");
	assert_string_equal(at(JPI_IS_ERROR), "true");
	assert_null(ix.method);
	assert_int_equal(scan("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	                      "\"message\":\"m\"}}"),
	                 0);
	assert_string_equal(at(JPI_CODE), "-32600");
	assert_string_equal(at(JPI_ID), "null");
}

/* The last of two members is the one jansson keeps; what the first held
 * inside is forgotten. Escaped names and values are decoded. */
static void test_duplicates_and_escapes(void **state)
{
	(void)state;
	assert_int_equal(scan("{\"params\":{\"name\":\"a\",\"cursor\":\"c\"},\"par\\u0061ms\":"
	                      "{\"name\":\"t\\u00e9\"},\"method\":1,\"method\":\"x\\/y\"}"),
	                 0);
	assert_string_equal(ix.name, "t\xc3\xa9");
	assert_string_equal(at(JPI_CURSOR), "(none)");
	assert_string_equal(ix.method, "x/y");
	assert_int_equal(scan("{\"method\":\"x\",\"method\":2}"), 0);
	assert_null(ix.method);
	assert_string_equal(at(JPI_METHOD), "2");
}

static void test_not_objects_and_refusals(void **state)
{
	(void)state;
	assert_int_equal(scan("[{\"id\":1}]"), 0);
	assert_false(ix.object);
	assert_string_equal(at(JPI_ID), "(none)"); /* a batch has no top-level members */
	assert_int_equal(jparse_scan("3", 1, 0, &ix), -1); /* flags 0: containers only */
	assert_int_equal(scan("3"), 0);
	const char *bad[] = {"{\"a\":1,}", "{\"a\":\"\\u0000\"}", "{\"a\":99999999999999999999}",
	                     "{\"a\":1e999}", "{\"a\":\"\xff\"}", "{\"a\":\"\\ud800\"}", "{} x",
	                     "", "{\"a\" 1}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (scan(bad[i]) == 0)
			print_error("accepted: %s\n", bad[i]);
		assert_int_equal(scan(bad[i]), -1);
		assert_string_equal(at(JPI_ID), "(none)");
	}
}

static void test_long_name(void **state)
{
	(void)state;
	char text[600];
	char name[JPARSE_NAME_MAX + 1];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(text, sizeof(text), "{\"method\":\"tools/call\",\"params\":{\"name\":\"%s\"}}", name);
	assert_int_equal(scan(text), 0);
	assert_null(ix.name);
	assert_true(ix.long_string);
	assert_string_equal(ix.method, "tools/call");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call),
		cmocka_unit_test(test_result_and_error),
		cmocka_unit_test(test_duplicates_and_escapes),
		cmocka_unit_test(test_not_objects_and_refusals),
		cmocka_unit_test(test_long_name),
	};
	return cmocka_run_group_tests_name("jparse_scan", tests, NULL, NULL);
}

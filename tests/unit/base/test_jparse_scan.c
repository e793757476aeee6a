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

/* jparse_pick's spans, as a string (static buffers, one per member). */
static const char *span(const struct jparse_ref *r)
{
	static char buf[4][128];
	static int turn;
	char *b = buf[turn++ & 3];
	if (!r->at)
		return "(none)";
	snprintf(b, sizeof(buf[0]), "%.*s", (int)r->len, r->at);
	return b;
}

static int pick(const char *text, struct jparse_ref *out)
{
	static const char *const names[] = {"type", "text"};
	return jparse_pick(text, strlen(text), names, 2, out);
}

static void test_pick(void **state)
{
	(void)state;
	struct jparse_ref m[2];
	assert_int_equal(pick(" {\"text\" : \"a\\\"b\" , \"x\":[1,{\"type\":2}],\"type\":\"text\"} ", m), 0);
	assert_string_equal(span(&m[0]), "\"text\"");
	assert_string_equal(span(&m[1]), "\"a\\\"b\"");
	/* absent members, and a nested "type" is not the object's */
	assert_int_equal(pick("{\"x\":{\"type\":1}}", m), 0);
	assert_string_equal(span(&m[0]), "(none)");
	assert_string_equal(span(&m[1]), "(none)");
	assert_int_equal(pick("{}", m), 0);
	assert_null(m[0].at);
	static const char *const bad[] = {
	        "{\"type\":1,\"type\":2}",       /* twice: the parser keeps the last */
	        "{\"t\\u0079pe\":1}",             /* an escaped name */
	        "{\"other\\n\":1}",               /* any escaped name */
	        "[{\"type\":1}]", "\"type\"", "", /* no object */
	        "{\"type\":1} x",                 /* junk after it */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (pick(bad[i], m) == 0)
			print_error("picked: %s\n", bad[i]);
		assert_int_equal(pick(bad[i], m), -1);
	}
	static const char *const nine[9] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
	struct jparse_ref many[9];
	assert_int_equal(jparse_pick("{}", 2, nine, 9, many), -1);
	assert_int_equal(jparse_pick("{}", 2, nine, 8, many), 0);
	assert_int_equal(jparse_pick(NULL, 0, nine, 1, many), -1);
}

static void test_pick_each(void **state)
{
	(void)state;
	static const char *const names[] = {"type", "text"};
	struct jparse_ref m[3 * 2];
	const char *a = " [ {\"type\":\"text\",\"text\":\"one\"}, {\"text\":2} ,{\"type\":null}] ";
	assert_int_equal(jparse_pick_each(a, strlen(a), names, 2, m, 3), 3);
	assert_string_equal(span(&m[0]), "\"text\"");
	assert_string_equal(span(&m[1]), "\"one\"");
	assert_string_equal(span(&m[2]), "(none)");
	assert_string_equal(span(&m[3]), "2");
	assert_string_equal(span(&m[4]), "null");
	assert_string_equal(span(&m[5]), "(none)");
	/* more than max elements */
	assert_int_equal(jparse_pick_each(a, strlen(a), names, 2, m, 2), -1);
	assert_int_equal(jparse_pick_each("[]", 2, names, 2, m, 3), 0);
	static const char *const bad[] = {
	        "[1]", "[{},2]", "{}", "[{\"type\":1,\"type\":1}]", "[{}] ,", "[{}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(jparse_pick_each(bad[i], strlen(bad[i]), names, 2, m, 3), -1);
}

/* result.content is noted where result.isError is, and only there. */
static void test_result_content(void **state)
{
	(void)state;
	assert_int_equal(scan("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
	                      "\"text\":\"hi\"}],\"isError\":true}}"),
	                 0);
	assert_string_equal(at(JPI_CONTENT), "[{\"type\":\"text\",\"text\":\"hi\"}]");
	assert_string_equal(at(JPI_IS_ERROR), "true");
	assert_true(jparse_ref_is_true(&ix.at[JPI_IS_ERROR]));
	/* a NUL after a literal is skipped (jansson's quirk): still true */
	static const char nul[] = "{\"id\":1,\"result\":{\"isError\":true\0}}";
	assert_int_equal(jparse_scan(nul, sizeof(nul) - 1, 1, &ix), 0);
	assert_true(jparse_ref_is_true(&ix.at[JPI_IS_ERROR]));
	assert_int_equal(scan("{\"id\":1,\"result\":{\"isError\":false}}"), 0);
	assert_false(jparse_ref_is_true(&ix.at[JPI_IS_ERROR]));
	assert_int_equal(scan("{\"id\":1,\"result\":{\"x\":{\"content\":1}}}"), 0);
	assert_string_equal(at(JPI_CONTENT), "(none)");
	assert_int_equal(scan("{\"method\":\"m\",\"params\":{\"content\":1}}"), 0);
	assert_string_equal(at(JPI_CONTENT), "(none)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call),
		cmocka_unit_test(test_result_and_error),
		cmocka_unit_test(test_duplicates_and_escapes),
		cmocka_unit_test(test_not_objects_and_refusals),
		cmocka_unit_test(test_long_name),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_pick_each),
		cmocka_unit_test(test_result_content),
	};
	return cmocka_run_group_tests_name("jparse_scan", tests, NULL, NULL);
}

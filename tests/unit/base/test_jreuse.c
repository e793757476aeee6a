/* Unit tests for jreuse (proxy/base/jreuse.h): a changed listing's tree
 * holds the last listing's unchanged tools as the very same values, is
 * equal to jparse's, and any text jparse refuses is refused.
 * tests/fuzz/fuzz_jreuse.c checks the equality on any input.
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
#include "proxy/base/jreuse.h"
#include "tests/unit/helpers.h"

#define NTOOLS 200

/* A listing of NTOOLS tools; tool `odd` (if < NTOOLS) says `word`. The
 * text is over JREUSE_MIN_BYTES. Static buffer. */
static const char *listing(size_t odd, const char *word)
{
	static char buf[64 * 1024];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[");
	for (size_t i = 0; i < NTOOLS; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
		                      "%s{\"name\":\"tool_%zu\",\"description\":\"%s\",\"inputSchema\":"
		                      "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}",
		                      i ? "," : "", i, i == odd ? word : "the same every time");
	snprintf(buf + n, sizeof(buf) - n, "], \"nextCursor\": null}}");
	return buf;
}

static json_t *tool_at(json_t *tree, size_t i)
{
	return json_array_get(json_object_get(json_object_get(tree, "result"), "tools"), i);
}

/* Parses text both ways and checks they agree; returns jreuse's tree. */
static json_t *both(struct jreuse *r, const char *text)
{
	struct jparse_span ws = {.name = "result"}, gs = {.name = "result"};
	json_t *want = jparse_span(text, strlen(text), 0, &ws);
	json_t *got = jreuse_parse(r, text, strlen(text), 0, &gs);
	assert_int_equal(!want, !got);
	if (want) {
		assert_true(json_equal(want, got));
		assert_ptr_equal(ws.at, gs.at);
		assert_int_equal(ws.len, gs.len);
	}
	json_decref(want);
	return got;
}

static void test_unchanged_tools_are_shared(void **state)
{
	(void)state;
	struct jreuse *r = jreuse_new();
	struct jreuse_stats st;
	assert_non_null(r);
	json_t *a = both(r, listing(7, "first"));
	json_t *b = both(r, listing(7, "second"));
	assert_non_null(a);
	assert_non_null(b);
	/* tool 7 changed: a value of its own; its neighbours: the same ones */
	assert_ptr_not_equal(tool_at(a, 7), tool_at(b, 7));
	assert_ptr_equal(tool_at(a, 6), tool_at(b, 6));
	assert_ptr_equal(tool_at(a, 8), tool_at(b, 8));
	assert_ptr_equal(tool_at(a, 0), tool_at(b, 0));
	assert_ptr_equal(tool_at(a, NTOOLS - 1), tool_at(b, NTOOLS - 1));
	assert_string_equal(json_string_value(json_object_get(tool_at(b, 7), "description")), "second");
	jreuse_stats(r, &st);
	assert_int_equal(st.listings, 2);
	assert_int_equal(st.whole, 0);
	assert_int_equal(st.parsed, NTOOLS + 1);
	assert_int_equal(st.reused, NTOOLS - 1);
	json_decref(a);
	json_decref(b);
	jreuse_free(r);
}

/* A changed tool that is not JSON makes the text not JSON; the listing
 * kept stays, and the next good listing reuses it. */
static void test_bad_tool_refused(void **state)
{
	(void)state;
	struct jreuse *r = jreuse_new();
	struct jreuse_stats st;
	json_t *a = both(r, listing(3, "first"));
	assert_null(both(r, listing(3, "bad \x01 control")));
	assert_null(both(r, listing(3, "bad \\q escape")));
	json_t *c = both(r, listing(4, "third"));
	assert_non_null(c);
	assert_ptr_equal(tool_at(a, 5), tool_at(c, 5)); /* from the first, kept */
	jreuse_stats(r, &st);
	assert_int_equal(st.listings, 2);
	json_decref(a);
	json_decref(c);
	jreuse_free(r);
}

/* Texts outside the shape are parsed whole, with the same answers. */
static void test_other_texts_whole(void **state)
{
	(void)state;
	struct jreuse *r = jreuse_new();
	struct jreuse_stats st;
	char big[20000];
	/* small */
	json_decref(both(r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}"));
	/* no tools array, duplicate result, escaped member name */
	snprintf(big, sizeof(big), "{\"id\":1,\"result\":{\"content\":[{\"text\":\"%09000d\"}]}}", 0);
	json_decref(both(r, big));
	snprintf(big, sizeof(big), "{\"id\":1,\"result\":{\"tools\":[{\"d\":\"%09000d\"}]},\"result\":{}}", 0);
	json_decref(both(r, big));
	snprintf(big, sizeof(big), "{\"id\":1,\"res\\u0075lt\":{\"tools\":[{\"d\":\"%09000d\"}]}}", 0);
	json_decref(both(r, big));
	/* a later "result" (the one jparse keeps) spelling the nulls the
	 * skeleton would hold, and a result that is not the last member */
	snprintf(big, sizeof(big), "{\"result\":{\"tools\":[{\"d\":\"%09000d\"},2]},"
	         "\"result\":{\"tools\":[null,null]}}", 0);
	json_decref(both(r, big));
	snprintf(big, sizeof(big), "{\"result\":{\"tools\":[{\"d\":\"%09000d\"}]},\"id\":1}", 0);
	json_decref(both(r, big));
	/* after the last element, garbage outside the tools */
	snprintf(big, sizeof(big), "{\"id\":1,\"result\":{\"tools\":[{\"d\":\"%09000d\"}],}}", 0);
	assert_null(both(r, big));
	jreuse_stats(r, &st);
	assert_int_equal(st.listings, 0);
	assert_int_equal(st.whole, 7);
	jreuse_free(r);
}

/* Tools may nest as deeply as jparse allows where they stand, no more. */
static void test_depth(void **state)
{
	(void)state;
	static char text[3 * JSON_PARSER_MAX_DEPTH + 20000];
	struct jreuse *r = jreuse_new();
	jreuse_set_min(r, 0);
	for (int deep = JSON_PARSER_MAX_DEPTH - 5; deep <= JSON_PARSER_MAX_DEPTH; deep++) {
		size_t n = (size_t)snprintf(text, sizeof(text), "{\"result\":{\"tools\":[1,");
		for (int i = 0; i < deep; i++)
			text[n++] = '[';
		for (int i = 0; i < deep; i++)
			text[n++] = ']';
		snprintf(text + n, sizeof(text) - n, "]}}");
		json_decref(both(r, text));
	}
	jreuse_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unchanged_tools_are_shared),
		cmocka_unit_test(test_bad_tool_refused),
		cmocka_unit_test(test_other_texts_whole),
		cmocka_unit_test(test_depth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

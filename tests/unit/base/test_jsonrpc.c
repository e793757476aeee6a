/* Unit tests for proxy/base/jsonrpc.c. Messages are written as JSON text and
 * parsed with jansson, so each case reads like what goes over the wire.
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
#include "proxy/base/jsonrpc.h"
#include "tests/unit/helpers.h"

/* Any value, NUL escapes allowed: the bodies a client may send. */
static json_t *j(const char *text)
{
	return th_json_text(text, JSON_DECODE_ANY | JSON_ALLOW_NUL);
}

static enum jrpc_kind classify(const char *text)
{
	json_t *v = j(text);
	enum jrpc_kind k = jrpc_classify(v);
	json_decref(v);
	return k;
}

static void expect_kind(const char *text, enum jrpc_kind want)
{
	enum jrpc_kind got = classify(text);
	if (got != want)
		print_error("%s: got %s, want %s\n", text, jrpc_kind_str(got), jrpc_kind_str(want));
	assert_int_equal(got, want);
	/* The same answer from the scanned text, wherever it is JSON without
	 * JSON_ALLOW_NUL (the proxy's parsers refuse \u0000). */
	struct jparse_index ix;
	if (jparse_scan(text, strlen(text), 1, &ix) == 0) {
		got = jrpc_classify_index(&ix);
		if (got != want)
			print_error("%s scanned: got %s, want %s\n", text, jrpc_kind_str(got),
			            jrpc_kind_str(want));
		assert_int_equal(got, want);
	}
}

/* ---- jrpc_classify ----------------------------------------------------------- */

static void test_classify_valid(void **state)
{
	(void)state;
	expect_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
	            JRPC_REQUEST);
	expect_kind("{\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"method\":\"tools/list\"}", JRPC_REQUEST);
	expect_kind("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"x\",\"params\":[1,2]}", JRPC_REQUEST);
	expect_kind("{\"jsonrpc\":\"2.0\",\"id\":-5,\"method\":\"x\"}", JRPC_REQUEST);
	expect_kind("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
	            JRPC_NOTIFICATION);
	expect_kind("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
	            "\"params\":{\"progressToken\":1,\"progress\":0.5}}",
	            JRPC_NOTIFICATION);
	expect_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", JRPC_RESULT);
	expect_kind("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":null}", JRPC_RESULT);
	expect_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"no\"}}",
	            JRPC_ERROR);
	/* An error may answer a request whose id could not be read. */
	expect_kind("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}",
	            JRPC_ERROR);
}

static void test_classify_invalid(void **state)
{
	(void)state;
	static const char *const bad[] = {
		/* not an object */
		"[]", "[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]", "\"2.0\"", "1", "null", "true",
		/* version */
		"{\"method\":\"x\",\"id\":1}",
		"{\"jsonrpc\":\"1.0\",\"method\":\"x\",\"id\":1}",
		"{\"jsonrpc\":2.0,\"method\":\"x\",\"id\":1}",
		"{\"jsonrpc\":\"2.0 \",\"method\":\"x\",\"id\":1}",
		/* method */
		"{\"jsonrpc\":\"2.0\",\"method\":\"\",\"id\":1}",
		"{\"jsonrpc\":\"2.0\",\"method\":5,\"id\":1}",
		"{\"jsonrpc\":\"2.0\",\"method\":null}",
		/* id on a request: string or integer, never null */
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":null}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":1.5}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":true}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":{}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":[1]}",
		/* params: object or array */
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":1,\"params\":\"a\"}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":1,\"params\":1}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":null}",
		/* responses */
		"{\"jsonrpc\":\"2.0\",\"id\":1}",
		"{\"jsonrpc\":\"2.0\",\"result\":{}}",
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"boom\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"no code\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"-1\",\"message\":\"m\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1.5,\"message\":\"m\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":true,\"error\":{\"code\":1,\"message\":\"m\"}}",
		"{}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_kind(bad[i], JRPC_INVALID);
	assert_int_equal(jrpc_classify(NULL), JRPC_INVALID);
}

static void test_kind_str(void **state)
{
	(void)state;
	assert_string_equal(jrpc_kind_str(JRPC_INVALID), "invalid");
	assert_string_equal(jrpc_kind_str(JRPC_REQUEST), "request");
	assert_string_equal(jrpc_kind_str(JRPC_NOTIFICATION), "notification");
	assert_string_equal(jrpc_kind_str(JRPC_RESULT), "result");
	assert_string_equal(jrpc_kind_str(JRPC_ERROR), "error");
	assert_string_equal(jrpc_kind_str((enum jrpc_kind)42), "invalid");
}

/* ---- jrpc_validate_body -------------------------------------------------------- */

static int validate(const char *text, size_t max_batch, const char **why)
{
	json_t *v = j(text);
	*why = NULL;
	int rc = jrpc_validate_body(v, max_batch, why, NULL);
	json_decref(v);
	return rc;
}

/* The kind handed back spares the caller a second walk: a one-message
 * body's own kind, INVALID for a batch or a refused body. */
static void test_validate_kind(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int rc;
		enum jrpc_kind kind;
	} cases[] = {
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0, JRPC_REQUEST},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 0, JRPC_NOTIFICATION},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 0, JRPC_RESULT},
		{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", 0, JRPC_INVALID},
		{"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -1, JRPC_INVALID},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *v = j(cases[i].text);
		const char *why = NULL;
		enum jrpc_kind kind = JRPC_REQUEST;
		assert_int_equal(jrpc_validate_body(v, 10, &why, &kind), cases[i].rc);
		assert_int_equal(kind, cases[i].kind);
		json_decref(v);
	}
}

static void test_validate_object(void **state)
{
	(void)state;
	const char *why;

	assert_int_equal(validate("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}", 0, &why),
	                 0);
	assert_null(why);
	assert_int_equal(validate("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", 100, &why), 0);
	assert_int_equal(validate("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 100, &why), 0);
	assert_int_equal(validate("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}", 100, &why), -1);
	assert_string_equal(why, "not a JSON-RPC 2.0 message");
	assert_int_equal(validate("\"hello\"", 100, &why), -1);
	assert_string_equal(why, "the body must be one JSON-RPC 2.0 message");
	assert_int_equal(validate("42", 100, &why), -1);
	assert_int_equal(validate("null", 100, &why), -1);
}

static void test_validate_batch(void **state)
{
	(void)state;
	static const char two[] = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"},"
	                          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}]";
	const char *why;

	assert_int_equal(validate(two, 100, &why), 0);
	assert_int_equal(validate(two, 2, &why), 0);
	/* Too large. */
	assert_int_equal(validate(two, 1, &why), -1);
	assert_string_equal(why, "batch too large");
	/* Batches off. */
	assert_int_equal(validate(two, 0, &why), -1);
	assert_string_equal(why, "the body must be one JSON-RPC 2.0 message");
	/* Empty. */
	assert_int_equal(validate("[]", 100, &why), -1);
	assert_string_equal(why, "empty batch");
	/* A bad member. */
	assert_int_equal(validate("[{\"jsonrpc\":\"2.0\",\"method\":\"n\"},{\"jsonrpc\":\"2.0\"}]", 100,
	                          &why),
	                 -1);
	assert_string_equal(why, "a batch member is not a JSON-RPC 2.0 message");
	assert_int_equal(validate("[{\"jsonrpc\":\"2.0\",\"method\":\"n\"},1]", 100, &why), -1);
	assert_int_equal(validate("[[{\"jsonrpc\":\"2.0\",\"method\":\"n\"}]]", 100, &why), -1);
	/* initialize must travel alone... */
	assert_int_equal(validate("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"},"
	                          "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}]",
	                          100, &why),
	                 -1);
	assert_string_equal(why, "initialize must not be part of a batch");
	assert_int_equal(validate("[{\"jsonrpc\":\"2.0\",\"method\":\"n\"},"
	                          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}]",
	                          100, &why),
	                 -1);
	assert_string_equal(why, "initialize must not be part of a batch");
	/* ...but a batch of one is only itself. */
	assert_int_equal(validate("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}]", 100,
	                          &why),
	                 0);
}

static void test_body_helpers(void **state)
{
	(void)state;
	json_t *one = j("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}");
	json_t *batch = j("[{\"jsonrpc\":\"2.0\",\"method\":\"n\"},"
	                  "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}]");
	json_t *replies = j("[{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}]");

	assert_int_equal(jrpc_body_count(one), 1);
	assert_ptr_equal(jrpc_body_at(one, 0), one);
	assert_null(jrpc_body_at(one, 1));
	assert_int_equal(jrpc_body_has_request(one), 0);
	assert_int_equal(jrpc_body_count(batch), 2);
	assert_ptr_equal(jrpc_body_at(batch, 1), json_array_get(batch, 1));
	assert_null(jrpc_body_at(batch, 2));
	assert_int_equal(jrpc_body_has_request(batch), 1);
	assert_int_equal(jrpc_body_has_request(replies), 0);
	assert_string_equal(jrpc_method(jrpc_body_at(batch, 1)), "ping");
	assert_int_equal(json_integer_value(jrpc_id(jrpc_body_at(batch, 1))), 7);
	assert_null(jrpc_id(one));
	assert_null(jrpc_method(json_array_get(replies, 0)));
	json_decref(one);
	json_decref(batch);
	json_decref(replies);
}

/* ---- ids, errors, tool names ---------------------------------------------------- */

static int id_eq(const char *a, const char *b)
{
	json_t *x = j(a), *y = j(b);
	int rc = jrpc_id_equal(x, y);
	json_decref(x);
	json_decref(y);
	return rc;
}

static void test_id_equal(void **state)
{
	(void)state;
	assert_true(id_eq("1", "1"));
	assert_true(id_eq("-9007199254740993", "-9007199254740993"));
	assert_true(id_eq("\"abc\"", "\"abc\""));
	assert_true(id_eq("\"\"", "\"\""));
	/* Strings with NUL compare on their whole length. */
	assert_true(id_eq("\"a\\u0000b\"", "\"a\\u0000b\""));
	assert_false(id_eq("\"a\\u0000b\"", "\"a\\u0000c\""));
	assert_false(id_eq("\"a\"", "\"a\\u0000\""));
	assert_false(id_eq("1", "2"));
	assert_false(id_eq("1", "\"1\""));
	assert_false(id_eq("\"abc\"", "\"abd\""));
	assert_false(id_eq("\"ab\"", "\"abc\""));
	assert_false(id_eq("1", "1.0"));
	assert_false(id_eq("1.0", "1.0"));
	assert_false(id_eq("null", "null"));
	assert_false(id_eq("true", "true"));

	json_t *one = j("1");
	assert_false(jrpc_id_equal(one, NULL));
	assert_false(jrpc_id_equal(NULL, one));
	assert_false(jrpc_id_equal(NULL, NULL));
	json_decref(one);
}

static void test_error_new(void **state)
{
	(void)state;
	json_t *id = j("\"req-1\"");
	json_t *e = jrpc_error_new(id, JRPC_METHOD_NOT_FOUND, "Method not found", NULL);
	char *s;

	assert_non_null(e);
	assert_int_equal(jrpc_classify(e), JRPC_ERROR);
	s = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"error\":{\"code\":-32601,\"message\":\"Method not found\"},"
	                       "\"id\":\"req-1\",\"jsonrpc\":\"2.0\"}");
	free(s);
	/* The id was copied: the caller's is untouched and still its own. */
	assert_int_equal(id->refcount, 1);
	assert_true(jrpc_id_equal(jrpc_id(e), id));
	assert_ptr_not_equal(jrpc_id(e), id);
	json_decref(e);
	json_decref(id);

	/* Integer id. */
	id = j("42");
	e = jrpc_error_new(id, JRPC_INTERNAL_ERROR, "x", NULL);
	assert_int_equal(json_integer_value(jrpc_id(e)), 42);
	json_decref(e);
	json_decref(id);

	/* No id, or one that is not an id: null. */
	e = jrpc_error_new(NULL, JRPC_PARSE_ERROR, "Parse error", NULL);
	assert_true(json_is_null(jrpc_id(e)));
	assert_int_equal(jrpc_classify(e), JRPC_ERROR);
	json_decref(e);
	id = j("{\"a\":1}");
	e = jrpc_error_new(id, JRPC_INVALID_REQUEST, "bad", NULL);
	assert_true(json_is_null(jrpc_id(e)));
	json_decref(e);
	json_decref(id);
}

static void test_error_new_steals_data(void **state)
{
	(void)state;
	json_t *data = j("{\"rule\":\"deny-shell\"}");
	json_t *e;

	json_incref(data); /* keep one reference to look at it */
	e = jrpc_error_new(NULL, JRPC_UPSTREAM_ERROR, "blocked", data);
	assert_non_null(e);
	assert_int_equal(data->refcount, 2); /* ours + the error's */
	assert_ptr_equal(json_object_get(json_object_get(e, "error"), "data"), data);
	json_decref(e);
	assert_int_equal(data->refcount, 1);
	json_decref(data);

	/* Stolen even when no error can be built (NULL message). */
	data = j("[1,2,3]");
	json_incref(data);
	e = jrpc_error_new(NULL, JRPC_INTERNAL_ERROR, NULL, data);
	assert_null(e);
	assert_int_equal(data->refcount, 1);
	json_decref(data);
}

static void test_tool_name(void **state)
{
	(void)state;
	static const struct {
		const char *msg;
		const char *want;
	} cases[] = {
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}}",
		 "get_weather"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\"}}", ""},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":5}}", NULL},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}", NULL},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[\"x\"]}", NULL},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", NULL},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"name\":\"x\"}}",
		 NULL},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{\"name\":\"x\"}}",
		 NULL},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"name\":\"x\"}}", NULL},
		{"[1]", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *m = j(cases[i].msg);
		const char *got = jrpc_tool_name(m);
		if (cases[i].want)
			assert_string_equal(got, cases[i].want);
		else
			assert_null(got);
		json_decref(m);
	}
	assert_null(jrpc_tool_name(NULL));
	assert_null(jrpc_method(NULL));
	assert_null(jrpc_id(NULL));
}

/* Members are found by name and length, in an object of a few members
 * (walked) as in a large one (hashed); strings compare as strcmp does. */
static void test_member_lookup(void **state)
{
	(void)state;
	/* Twelve members: past the walk, the lookup hashes. */
	json_t *m = j("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,"
	              "\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
	              "\"params\":{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,"
	              "\"h\":8,\"i\":9,\"name\":\"late\"}}");
	assert_int_equal(jrpc_classify(m), JRPC_REQUEST);
	assert_string_equal(jrpc_method(m), "tools/call");
	assert_int_equal(json_integer_value(jrpc_id(m)), 7);
	assert_string_equal(jrpc_tool_name(m), "late");
	json_decref(m);

	/* A name holding a NUL is another name. */
	m = j("{\"jsonrpc\":\"2.0\",\"ids\":2,\"metho\":\"y\"}");
	json_object_setn_new_nocheck(m, "id\0", 3, json_integer(1));
	json_object_setn_new_nocheck(m, "method\0x", 8, json_string("x"));
	assert_null(jrpc_method(m));
	assert_null(jrpc_id(m));
	json_decref(m);

	/* Values compare up to their first NUL, as strcmp reads them. */
	expect_kind("{\"jsonrpc\":\"2.0\\u0000x\",\"id\":1,\"method\":\"x\"}", JRPC_REQUEST);
	expect_kind("{\"jsonrpc\":\"2.0x\",\"id\":1,\"method\":\"x\"}", JRPC_INVALID);
	expect_kind("{\"jsonrpc\":\"2.\",\"id\":1,\"method\":\"x\"}", JRPC_INVALID);
	expect_kind("{\"jsonrpc\":\"\",\"id\":1,\"method\":\"x\"}", JRPC_INVALID);
	m = j("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\\u0000x\","
	      "\"params\":{\"name\":\"t\"}}");
	assert_string_equal(jrpc_tool_name(m), "t");
	json_decref(m);
	m = j("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/cal\",\"params\":{\"name\":\"t\"}}");
	assert_null(jrpc_tool_name(m));
	json_decref(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_valid),
		cmocka_unit_test(test_classify_invalid),
		cmocka_unit_test(test_kind_str),
		cmocka_unit_test(test_validate_object),
		cmocka_unit_test(test_validate_kind),
		cmocka_unit_test(test_validate_batch),
		cmocka_unit_test(test_body_helpers),
		cmocka_unit_test(test_id_equal),
		cmocka_unit_test(test_error_new),
		cmocka_unit_test(test_error_new_steals_data),
		cmocka_unit_test(test_tool_name),
		cmocka_unit_test(test_member_lookup),
	};
	return cmocka_run_group_tests_name("jsonrpc", tests, NULL, NULL);
}

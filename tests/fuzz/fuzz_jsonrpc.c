/* Fuzz target for proxy/base/jsonrpc.c.
 *
 * The input is a POST body or an SSE data field as the proxy would receive
 * it: whatever JSON text. It is parsed with jansson (any value, NULs in
 * strings allowed, so the functions see every shape of json_t), then the
 * body as a whole and every message in it go through jrpc_classify,
 * jrpc_validate_body, jrpc_tool_name and jrpc_error_new.
 *
 * Properties checked, abort() on any violation:
 *  1. Classification is consistent: a valid request has a string or
 *     integer id and a non-empty method; a notification has no id; a
 *     result or error has no method; jrpc_kind_str() always names it.
 *  2. jrpc_validate_body agrees with jrpc_classify on an object, rejects
 *     scalars, never accepts an empty batch or one over max_batch, is
 *     monotonic in max_batch, and sets *why exactly when it fails.
 *  3. jrpc_body_count/jrpc_body_at/jrpc_body_has_request agree.
 *  4. jrpc_tool_name is only ever set on a tools/call.
 *  5. jrpc_id_equal is reflexive on valid ids and holds across a copy.
 *  6. Every message can be answered: jrpc_error_new() with its id and any
 *     data (stolen) is a valid error response, with the same id when the
 *     id was valid and null otherwise, and stays one when serialised and
 *     parsed back. A NULL message still releases data (ASan leak check).
 *  7. Classification survives a serialise/parse round trip.
 *  8. jrpc_classify (one walk over the members) agrees with the same
 *     rules written as hashed lookups, member by member.
 *  9. jrpc_classify_index, from jparse_scan's index of the text, agrees
 *     with jrpc_classify of the text's tree.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=jsonrpc) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy/base/jparse.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/limits.h"
#include "tests/fuzz/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int id_valid(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

static json_t *reparse(const json_t *v)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	if (!s)
		return NULL; /* out of memory only */
	json_error_t err;
	json_t *back = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	CHECK(back != NULL);
	free(s);
	return back;
}

static void check_message(json_t *m, int code)
{
	enum jrpc_kind k = jrpc_classify(m);
	const char *method = jrpc_method(m);
	json_t *id = jrpc_id(m);

	CHECK(k >= JRPC_INVALID && k <= JRPC_ERROR);
	CHECK(jrpc_kind_str(k) != NULL);
	switch (k) {
	case JRPC_REQUEST:
		CHECK(method && *method);
		CHECK(id_valid(id));
		break;
	case JRPC_NOTIFICATION:
		CHECK(method && *method);
		CHECK(id == NULL);
		break;
	case JRPC_RESULT:
		CHECK(json_object_get(m, "method") == NULL);
		CHECK(id_valid(id));
		CHECK(json_object_get(m, "result") && !json_object_get(m, "error"));
		break;
	case JRPC_ERROR:
		CHECK(json_object_get(m, "method") == NULL);
		CHECK(id == NULL || id_valid(id) || json_is_null(id));
		CHECK(json_is_integer(json_object_get(json_object_get(m, "error"), "code")));
		break;
	default:
		break;
	}

	/* Tool names only on tools/call. */
	const char *tool = jrpc_tool_name(m);
	if (tool)
		CHECK(method && strcmp(method, "tools/call") == 0);

	/* Ids compare equal to themselves and to their copies. */
	if (id_valid(id)) {
		json_t *copy = json_deep_copy(id);
		CHECK(jrpc_id_equal(id, id));
		if (copy) {
			CHECK(jrpc_id_equal(id, copy));
			CHECK(jrpc_id_equal(copy, id));
			json_decref(copy);
		}
	} else {
		CHECK(!jrpc_id_equal(id, id));
	}

	/* Whatever came in can be answered with an error. */
	json_t *data = json_deep_copy(m);
	json_t *e = jrpc_error_new(id, code, "fuzz", data);
	if (e) {
		CHECK(jrpc_classify(e) == JRPC_ERROR);
		json_t *eid = jrpc_id(e);
		if (id_valid(id))
			CHECK(jrpc_id_equal(eid, id));
		else
			CHECK(json_is_null(eid));
		CHECK(json_integer_value(json_object_get(json_object_get(e, "error"), "code")) == code);
		json_t *back = reparse(e);
		if (back) {
			CHECK(jrpc_classify(back) == JRPC_ERROR);
			json_decref(back);
		}
		json_decref(e);
	}
	/* No message: nothing is built, data is still released. */
	CHECK(jrpc_error_new(id, code, NULL, json_deep_copy(m)) == NULL);

	/* Classification does not depend on the serialisation. */
	json_t *back = reparse(m);
	if (back) {
		CHECK(jrpc_classify(back) == k);
		json_decref(back);
	}
}

static void check_body(json_t *body)
{
	static const size_t maxes[] = {0, 1, 2, LIMIT_MAX_BATCH};
	int prev_ok = 0;

	for (size_t i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++) {
		const char *why = NULL;
		enum jrpc_kind kind;
		int rc = jrpc_validate_body(body, maxes[i], &why, &kind);
		CHECK(rc == 0 || rc == -1);
		CHECK((rc == -1) == (why != NULL));
		/* The kind given is the message's own, or INVALID. */
		CHECK(kind == (rc == 0 && json_is_object(body) ? jrpc_classify(body) : JRPC_INVALID));
		if (json_is_object(body))
			CHECK((rc == 0) == (jrpc_classify(body) != JRPC_INVALID));
		else if (!json_is_array(body))
			CHECK(rc == -1);
		else if (rc == 0)
			CHECK(json_array_size(body) >= 1 && json_array_size(body) <= maxes[i]);
		/* Allowing more never rejects what fewer allowed. */
		if (prev_ok)
			CHECK(rc == 0);
		prev_ok = rc == 0;
	}

	size_t n = jrpc_body_count(body);
	int has_request = 0;
	CHECK(json_is_array(body) ? n == json_array_size(body) : n == 1);
	for (size_t i = 0; i < n; i++) {
		json_t *m = jrpc_body_at(body, i);
		CHECK(m != NULL);
		has_request |= jrpc_classify(m) == JRPC_REQUEST;
	}
	CHECK(jrpc_body_at(body, n) == NULL);
	CHECK(jrpc_body_has_request(body) == has_request);
}

/* The classification rules as plain lookups, the reference for 8. */
static enum jrpc_kind classify_by_lookup(const json_t *msg)
{
	if (!json_is_object(msg))
		return JRPC_INVALID;
	const char *v = json_string_value(json_object_get(msg, "jsonrpc"));
	if (!v || strcmp(v, "2.0") != 0)
		return JRPC_INVALID;
	json_t *method = json_object_get(msg, "method"), *id = json_object_get(msg, "id");
	json_t *params = json_object_get(msg, "params");
	json_t *result = json_object_get(msg, "result"), *error = json_object_get(msg, "error");
	if (method) {
		if (!json_is_string(method) || json_string_length(method) == 0 ||
		    (params && !json_is_object(params) && !json_is_array(params)))
			return JRPC_INVALID;
		return !id ? JRPC_NOTIFICATION : id_valid(id) ? JRPC_REQUEST : JRPC_INVALID;
	}
	if (result && !error)
		return id_valid(id) ? JRPC_RESULT : JRPC_INVALID;
	if (error && !result) {
		if ((id && !id_valid(id) && !json_is_null(id)) || !json_is_object(error) ||
		    !json_is_integer(json_object_get(error, "code")))
			return JRPC_INVALID;
		return JRPC_ERROR;
	}
	return JRPC_INVALID;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t err;
	json_t *body = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);

	struct jparse_index ix;
	if (jparse_scan((const char *)data, size, 1, &ix) == 0) {
		json_t *tree = jparse((const char *)data, size, 1);
		CHECK(tree != NULL);
		CHECK(jrpc_classify_index(&ix) == jrpc_classify(tree));
		json_decref(tree);
	}
	/* jsonrpc.c never sees text that is not JSON, but NULL must not crash. */
	CHECK(jrpc_classify(NULL) == JRPC_INVALID);
	if (!body)
		return 0;
	/* A code from the input, so odd values (0, INT_MIN...) get tried. */
	int code = size >= 4 ? (int)((uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 |
	                             (uint32_t)data[2] << 8 | data[3])
	                     : JRPC_INVALID_REQUEST;
	check_body(body);
	check_message(body, code);
	CHECK(jrpc_classify(body) == classify_by_lookup(body));
	if (json_is_array(body)) {
		for (size_t i = 0; i < json_array_size(body) && i < 256; i++) {
			check_message(json_array_get(body, i), code);
			CHECK(jrpc_classify(json_array_get(body, i)) ==
			      classify_by_lookup(json_array_get(body, i)));
		}
	}
	json_decref(body);
	return 0;
}

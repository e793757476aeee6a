/* jsonrpc: see jsonrpc.h. */
#include "proxy/base/jsonrpc.h"
#include "proxy/base/jparse.h"
#include "proxy/base/sbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

static int id_valid(const json_t *id)
{
	/* MCP: string or integer; never null on a request. */
	return json_is_string(id) || json_is_integer(id);
}

/* Whether the NUL-terminated s equals lit[0..n) (lit holds no NUL):
 * strcmp(s, lit) == 0 without the call. s is read only as far as it
 * matches, so never past its terminator. */
static int str_is(const char *s, const char *lit, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != lit[i])
			return 0;
	return s[n] == '\0';
}

/* The envelope members classify looks at, found in one walk over the
 * object's members: one pass costs less than five hashed lookups, and
 * classify runs several times on every message. */
struct envelope {
	json_t *jsonrpc, *method, *id, *params, *result, *error;
};

static void envelope_of(const json_t *msg, struct envelope *e)
{
	json_t *o = (json_t *)(uintptr_t)msg; /* read only: the iterator wants non-const */
	memset(e, 0, sizeof(*e));
	for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
		const char *k = json_object_iter_key(it);
		size_t n = json_object_iter_key_len(it);
		json_t **slot = NULL;
		/* Lengths too: a key built with json_object_setn may hold a NUL. */
		if (n == 7 && memcmp(k, "jsonrpc", 7) == 0)
			slot = &e->jsonrpc;
		else if (n == 6 && memcmp(k, "method", 6) == 0)
			slot = &e->method;
		else if (n == 2 && memcmp(k, "id", 2) == 0)
			slot = &e->id;
		else if (n == 6 && memcmp(k, "params", 6) == 0)
			slot = &e->params;
		else if (n == 6 && memcmp(k, "result", 6) == 0)
			slot = &e->result;
		else if (n == 5 && memcmp(k, "error", 5) == 0)
			slot = &e->error;
		if (slot)
			*slot = json_object_iter_value(it);
	}
}

enum jrpc_kind jrpc_classify(const json_t *msg)
{
	struct envelope e;

	if (!json_is_object(msg))
		return JRPC_INVALID;
	envelope_of(msg, &e);
	const char *v = json_string_value(e.jsonrpc);
	if (!v || !str_is(v, "2.0", 3))
		return JRPC_INVALID;
	if (e.method) {
		if (!json_is_string(e.method) || json_string_length(e.method) == 0)
			return JRPC_INVALID;
		if (e.params && !json_is_object(e.params) && !json_is_array(e.params))
			return JRPC_INVALID;
		if (!e.id)
			return JRPC_NOTIFICATION;
		return id_valid(e.id) ? JRPC_REQUEST : JRPC_INVALID;
	}
	if (e.result && !e.error)
		return id_valid(e.id) ? JRPC_RESULT : JRPC_INVALID;
	if (e.error && !e.result) {
		/* Error responses may carry a null id (unreadable request id). */
		if (e.id && !id_valid(e.id) && !json_is_null(e.id))
			return JRPC_INVALID;
		if (!json_is_object(e.error) || !json_is_integer(JPARSE_MEMBER(e.error, "code")))
			return JRPC_INVALID;
		return JRPC_ERROR;
	}
	return JRPC_INVALID;
}

/* ---- the same from a scanned text (jparse_scan) ------------------------------ */

static int ref_is(const struct jparse_ref *r, char first)
{
	return r->at && r->len && r->at[0] == first;
}

/* A JSON integer's text: no fraction, no exponent (the grammar checked
 * the rest). A trailing NUL (jparse.h's quirk) is no digit either. */
static int ref_is_integer(const struct jparse_ref *r)
{
	if (!r->at || !r->len || (r->at[0] != '-' && (r->at[0] < '0' || r->at[0] > '9')))
		return 0;
	for (size_t i = 0; i < r->len; i++)
		if (r->at[i] == '.' || r->at[i] == 'e' || r->at[i] == 'E')
			return 0;
	return 1;
}

static int ref_id_valid(const struct jparse_ref *r)
{
	return ref_is(r, '"') || ref_is_integer(r);
}

/* "jsonrpc": "2.0", also when spelt with escapes. */
static int ref_is_v2(const struct jparse_ref *r)
{
	if (!ref_is(r, '"'))
		return 0;
	if (r->len == 5 && memcmp(r->at, "\"2.0\"", 5) == 0)
		return 1;
	if (!memchr(r->at, '\\', r->len))
		return 0;
	json_t *v = jparse_ref_value(r);
	int ok = json_is_string(v) && strcmp(json_string_value(v), "2.0") == 0 &&
	         json_string_length(v) == 3;
	json_decref(v);
	return ok;
}

enum jrpc_kind jrpc_classify_index(const struct jparse_index *ix)
{
	const struct jparse_ref *id = &ix->at[JPI_ID], *method = &ix->at[JPI_METHOD];
	const struct jparse_ref *params = &ix->at[JPI_PARAMS];
	int result = ix->at[JPI_RESULT].at != NULL, error = ix->at[JPI_ERROR].at != NULL;

	if (!ix->object || !ref_is_v2(&ix->at[JPI_JSONRPC]))
		return JRPC_INVALID;
	if (method->at) {
		/* A string's span holds its quotes; no escape decodes to nothing. */
		if (!ref_is(method, '"') || method->len <= 2)
			return JRPC_INVALID;
		if (params->at && !ref_is(params, '{') && !ref_is(params, '['))
			return JRPC_INVALID;
		if (!id->at)
			return JRPC_NOTIFICATION;
		return ref_id_valid(id) ? JRPC_REQUEST : JRPC_INVALID;
	}
	if (result && !error)
		return ref_id_valid(id) ? JRPC_RESULT : JRPC_INVALID;
	if (error && !result) {
		if (id->at && !ref_id_valid(id) && !ref_is(id, 'n'))
			return JRPC_INVALID;
		if (!ref_is(&ix->at[JPI_ERROR], '{') || !ref_is_integer(&ix->at[JPI_CODE]))
			return JRPC_INVALID;
		return JRPC_ERROR;
	}
	return JRPC_INVALID;
}

const char *jrpc_kind_str(enum jrpc_kind k)
{
	switch (k) {
	case JRPC_REQUEST: return "request";
	case JRPC_NOTIFICATION: return "notification";
	case JRPC_RESULT: return "result";
	case JRPC_ERROR: return "error";
	default: return "invalid";
	}
}

int jrpc_validate_body(const json_t *body, size_t max_batch, const char **why,
                       enum jrpc_kind *kind)
{
	enum jrpc_kind k = JRPC_INVALID;
	if (kind)
		*kind = JRPC_INVALID;
	if (json_is_object(body)) {
		if ((k = jrpc_classify(body)) == JRPC_INVALID) {
			*why = "not a JSON-RPC 2.0 message";
			return -1;
		}
		if (kind)
			*kind = k;
		return 0;
	}
	if (!json_is_array(body) || max_batch == 0) {
		*why = "the body must be one JSON-RPC 2.0 message";
		return -1;
	}
	size_t n = json_array_size(body);
	if (n == 0) {
		*why = "empty batch";
		return -1;
	}
	if (n > max_batch) {
		*why = "batch too large";
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *m = json_array_get(body, i);
		if (jrpc_classify(m) == JRPC_INVALID) {
			*why = "a batch member is not a JSON-RPC 2.0 message";
			return -1;
		}
		if (jrpc_method(m) && strcmp(jrpc_method(m), "initialize") == 0 && n > 1) {
			*why = "initialize must not be part of a batch";
			return -1;
		}
	}
	return 0;
}

size_t jrpc_body_count(const json_t *body)
{
	return json_is_array(body) ? json_array_size(body) : 1;
}

json_t *jrpc_body_at(const json_t *body, size_t i)
{
	if (json_is_array(body))
		return json_array_get(body, i);
	return i == 0 ? (json_t *)(uintptr_t)body : NULL;
}

int jrpc_body_has_request(const json_t *body)
{
	size_t n = jrpc_body_count(body);
	for (size_t i = 0; i < n; i++)
		if (jrpc_classify(jrpc_body_at(body, i)) == JRPC_REQUEST)
			return 1;
	return 0;
}

const char *jrpc_method(const json_t *msg)
{
	return json_string_value(JPARSE_MEMBER(msg, "method"));
}

json_t *jrpc_id(const json_t *msg)
{
	return JPARSE_MEMBER(msg, "id");
}

void jrpc_names(const json_t *msg, const char **method, const char **tool, json_t **params)
{
	struct envelope e;

	*method = *tool = NULL;
	*params = NULL;
	if (!json_is_object(msg))
		return;
	envelope_of(msg, &e);
	*method = json_string_value(e.method);
	*params = e.params;
	if (*method && str_is(*method, "tools/call", 10))
		*tool = json_string_value(JPARSE_MEMBER(e.params, "name"));
}

const char *jrpc_tool_name(const json_t *msg)
{
	const char *m = jrpc_method(msg);
	if (!m || !str_is(m, "tools/call", 10))
		return NULL;
	return json_string_value(JPARSE_MEMBER(JPARSE_MEMBER(msg, "params"), "name"));
}

int jrpc_id_equal(const json_t *a, const json_t *b)
{
	if (!a || !b)
		return 0;
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_string(a) && json_is_string(b))
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
	return 0;
}

int jrpc_id_spelt(const json_t *id, const struct jparse_ref *r)
{
	if (!id || !r->at)
		return 0;
	if (json_is_integer(id)) {
		char t[SBUF_I64_MAX];
		size_t n = sbuf_i64_text(t, (long long)json_integer_value(id));
		return r->len == n && memcmp(r->at, t, n) == 0;
	}
	size_t n = json_string_length(id);
	return json_is_string(id) && r->len == n + 2 && r->at[0] == '"' &&
	       memcmp(r->at + 1, json_string_value(id), n) == 0 && !memchr(r->at + 1, '\\', n);
}

json_t *jrpc_error_new(const json_t *id, int code, const char *message, json_t *data)
{
	json_t *err = json_pack("{s:i,s:s}", "code", code, "message", message);
	if (err && data)
		json_object_set_new(err, "data", data);
	else if (data)
		json_decref(data);
	if (!err)
		return NULL;
	json_t *idv = id && (json_is_string(id) || json_is_integer(id)) ? json_copy((json_t *)(uintptr_t)id)
	                                                                 : json_null();
	return json_pack("{s:s,s:o,s:o}", "jsonrpc", "2.0", "id", idv, "error", err);
}

int jrpc_error_text(int code, const char *message, struct evbuffer *out)
{
	json_t *err = jrpc_error_new(NULL, code, message, NULL);
	char *s = err ? json_dumps(err, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	int rc = s && evbuffer_add(out, s, strlen(s)) == 0 && evbuffer_add(out, "\n", 1) == 0 ? 0 : -1;

	free(s);
	json_decref(err);
	return rc;
}

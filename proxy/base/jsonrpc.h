/* jsonrpc: JSON-RPC 2.0 envelopes over jansson values.
 *
 * Classifies messages, validates a POST body (one message, or a 2025-03-26
 * batch), builds error responses, and reads the few fields the proxy keys on.
 * Pure functions: no I/O, no global state.
 */
#ifndef MCPWARDEN_JSONRPC_H
#define MCPWARDEN_JSONRPC_H

#include <stddef.h>
#include <jansson.h>

#define JRPC_PARSE_ERROR      (-32700)
#define JRPC_INVALID_REQUEST  (-32600)
#define JRPC_METHOD_NOT_FOUND (-32601)
#define JRPC_INVALID_PARAMS   (-32602)
#define JRPC_INTERNAL_ERROR   (-32603)
/* Implementation-defined, used by mcpwarden: the upstream failed us. */
#define JRPC_UPSTREAM_ERROR   (-32000)
/* The session id is unknown or ended (what SDK servers answer with 404). */
#define JRPC_SESSION_NOT_FOUND (-32001)

enum jrpc_kind {
	JRPC_INVALID = 0,
	JRPC_REQUEST,       /* method + id */
	JRPC_NOTIFICATION,  /* method, no id */
	JRPC_RESULT,        /* id + result */
	JRPC_ERROR,         /* id (possibly null) + error */
};

/* Classifies one message (not an array). msg is borrowed. */
enum jrpc_kind jrpc_classify(const json_t *msg);
const char *jrpc_kind_str(enum jrpc_kind k);

/* jrpc_classify of the text jparse_scan indexed into *ix (the same answer
 * as for its tree: tests/fuzz/fuzz_jsonrpc.c), without building one. */
struct jparse_index;
enum jrpc_kind jrpc_classify_index(const struct jparse_index *ix);

/* Checks a client POST body: a valid message, or (when max_batch > 0) a
 * non-empty array of at most max_batch valid messages. Returns 0, or -1 with
 * *why set to a static reason. *kind (kind may be NULL) is set to the
 * message's kind when the body is one message, else JRPC_INVALID: a caller
 * asking again need not walk the message again. */
int jrpc_validate_body(const json_t *body, size_t max_batch, const char **why,
                       enum jrpc_kind *kind);

/* Number of messages in a body (1 for an object, the size for an array)
 * and the i-th of them (borrowed). */
size_t jrpc_body_count(const json_t *body);
json_t *jrpc_body_at(const json_t *body, size_t i);

/* Whether the body holds at least one request (so a reply with a body is
 * due; otherwise the upstream answers 202). */
int jrpc_body_has_request(const json_t *body);

/* Borrowed fields, or NULL. */
const char *jrpc_method(const json_t *msg);
json_t *jrpc_id(const json_t *msg);
/* params.name of a tools/call request, or NULL. */
const char *jrpc_tool_name(const json_t *msg);
/* Both of the above and params, in one pass over the envelope (borrowed,
 * or NULL). */
void jrpc_names(const json_t *msg, const char **method, const char **tool, json_t **params);

/* Two ids are the same id (string or integer). */
int jrpc_id_equal(const json_t *a, const json_t *b);

/* 1 when r (a span jparse_scan noted) spells id as plainly as can be: an
 * integer's digits, a string's bytes without an escape. 0 otherwise,
 * which does not mean another id (-0, "\u0061"): compare the trees. */
struct jparse_ref;
int jrpc_id_spelt(const json_t *id, const struct jparse_ref *r);

/* A new error response (owned). id is borrowed and copied (NULL -> null);
 * data is stolen (may be NULL). */
json_t *jrpc_error_new(const json_t *id, int code, const char *message, json_t *data);
/* The text of an error answer with a null id (what a handler gives the
 * HTTP layer for a refusal made before any message was read), compact,
 * newline-terminated, appended to out. Returns 0, or -1 (out of memory). */
struct evbuffer;
int jrpc_error_text(int code, const char *message, struct evbuffer *out);

#endif

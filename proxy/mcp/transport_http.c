/* transport_http: the Streamable HTTP adapter (MCP 2025-03-26 .. 2025-11-25).
 *
 * Why this file is long (over 800 lines): routing, replies, the hook, SSE and JSON replies and the
 * upstream callbacks all step the one struct exchange; the SSE and JSON
 * reply paths are the seams, once struct exchange moves to a types header
 * both can include.
 *
 * One exchange = one client HTTP request and its reply:
 *
 *   client POST ─▶ parse JSON once ─▶ inspect (client→server) ─▶ upstream
 *   upstream reply ─┬─ application/json: collected (up to max_inspect_bytes),
 *                   │   parsed once, inspected (server→client), sent with
 *                   │   Content-Length (past the bound: json_too_big;
 *                   │   a tools/list whose result every hook kept:
 *                   │   sent as it came, unparsed, fast_listing)
 *                   ├─ text/event-stream: each SSE block parsed as it
 *                   │   arrives, inspected, re-framed and flushed at once
 *                   └─ anything else (202, errors, well-known documents):
 *                       streamed through untouched
 *
 * GET (standalone streams), DELETE, OPTIONS and HEAD go through with the
 * same reply handling; only POST bodies are parsed on the way in. Other
 * methods at the MCP endpoint get 405 from the proxy (method_not_served). Sessions
 * belong to the upstream: Mcp-Session-Id and friends are end-to-end headers
 * and cross as they are.
 *
 * Every response in a reply to a POST is matched to a request of its body by
 * id (match_reply): one that answers another request, or one a second time,
 * is never delivered; the client gets 502 for its own request and the
 * upstream connection is closed. Every request still unanswered when an SSE
 * reply ends without a way to resume it gets one error event before a clean
 * end (sse_answer_pending).
 *
 * Not here: the legacy HTTP+SSE transport and the 2026-07-28 header checks
 * (their own issues), TLS to upstreams.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/config.h"
#include "proxy/net/conn.h"
#include "proxy/ctx.h"
#include "proxy/net/http_parse.h"
#include "proxy/net/http_resp.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/jparse.h"
#include "proxy/mcp/listings.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "proxy/mcp/mirror.h"
#include "proxy/net/origin.h"
#include "proxy/mcp/sessid.h"
#include "proxy/mcp/sesslimit.h"
#include "proxy/base/sse.h"
#include "proxy/hooks/tools.h"
#include "proxy/net/transport.h"
#include "proxy/mcp/transport_sse.h"
#include "proxy/net/upstream.h"
#include "proxy/base/clock.h"
#include "proxy/base/media.h"

#define EXCHANGE_MAGIC 0x65786368u /* "exch" */

enum resp_mode {
	RESP_PENDING,  /* no upstream head yet */
	RESP_RAW,      /* streamed through untouched */
	RESP_JSON,     /* collected, inspected, sent whole */
	RESP_SSE,      /* re-framed event by event */
	RESP_LOCAL,    /* answered by the proxy itself */
};

struct exchange {
	unsigned magic;
	struct conn *c;                     /* borrowed: conn owns the exchange */
	struct px_ctx *ctx;                 /* borrowed */
	const struct px_upstream_conf *uc;  /* borrowed */
	struct upstream *up;                /* borrowed */
	size_t up_index;                    /* into ctx->ups and cfg->ups */
	struct upstream_req *ur;            /* owned */
	struct transport_sse_ex *xlate;     /* owned: a translated session's part, or NULL */
	const struct http_msg *req;         /* borrowed: conn's parser, stable until free */
	json_t *body;                       /* owned: parsed POST body, or NULL */
	/* Which requests of the body have their answer (match_reply): for a
	 * one-message body, answered; for a batch, answered_at[i] for its
	 * i-th message (owned, made when first needed). A request a hook
	 * answered counts as answered. */
	int answered;
	unsigned char *answered_at;
	int resumable;                      /* the SSE reply's last event id is set */
	json_t *answers;                    /* owned: hook answers to merge, or NULL */
	/* The upstream's response head, its headers forwarded (filtered)
	 * into the client's head as it is written: no evbuffer to stage them.
	 * Borrowed: ex->ur's connection's parser, which keeps the head until
	 * ex->ur is freed (in http_free, after every reply is written). NULL:
	 * no upstream headers to forward. */
	const struct http_msg *resp;
	struct evbuffer *json_buf;          /* owned: JSON reply being collected */
	/* One reference, or NULL: the "result" bytes of the last reply parsed,
	 * as the upstream's kept listing holds them (parse_reply). */
	struct rcbytes *reply_bytes;
	struct sse_reader *sse;             /* owned */
	struct evbuffer *scratch;           /* owned: one re-framed SSE block */
	struct event *keepalive;            /* owned */
	struct inspect_where where;
	enum resp_mode mode;
	int up_status;
	int64_t up_length;
	int is_stream;                      /* a GET stream: ends on shutdown */
	int is_mcp;                         /* at an upstream's MCP path */
	uint64_t last_write_us;
	const char *error;                  /* static: why the exchange failed */
	enum inspect_end end;
	int keep_client_auth;               /* forward the client's Authorization */
	char reply_session[160];            /* Mcp-Session-Id of the reply */
	struct sesslimit_entry *slot;       /* held: the session's slot, or NULL */
	enum sesslimit_kind slot_kind;
	char path[256];                     /* request path without query, for logs */
	/* Whether the body holds a request, asked twice per call: 0 not yet
	 * known, 1 no, 2 yes. Hooks change messages, never their kind. */
	unsigned char has_request;
	/* jrpc_classify() of a one-message body, known from the parse on
	 * (for the same reason): each call asks it several times. */
	enum jrpc_kind body_kind;
};

/* ---- small helpers ------------------------------------------------------- */

static int header_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* The id to put on an error reply: the request's own when the body is one
 * request, so the client can match it; null otherwise. */
static const json_t *reply_id(const struct exchange *ex)
{
	if (ex->body && json_is_object(ex->body) && ex->body_kind == JRPC_REQUEST)
		return jrpc_id(ex->body);
	return NULL;
}

/* The kind of one message of the body. */
static enum jrpc_kind kind_in_body(const struct exchange *ex, const json_t *m)
{
	return m == ex->body ? ex->body_kind : jrpc_classify(m);
}

static const char *first_method(const struct exchange *ex)
{
	return ex->body ? jrpc_method(jrpc_body_at(ex->body, 0)) : NULL;
}

static int body_has_request(struct exchange *ex)
{
	if (!ex->has_request)
		ex->has_request = ex->body && (json_is_object(ex->body) ? ex->body_kind == JRPC_REQUEST
		                                                        : jrpc_body_has_request(ex->body))
		                          ? 2 : 1;
	return ex->has_request == 2;
}

static int notifications_only(struct exchange *ex)
{
	return ex->body && !body_has_request(ex);
}

/* The request in this exchange that a response answers, or NULL. */
static const json_t *request_for(const struct exchange *ex, const json_t *resp)
{
	json_t *id = jrpc_id(resp);
	if (!ex->body || !id)
		return NULL;
	size_t n = jrpc_body_count(ex->body);
	for (size_t i = 0; i < n; i++) {
		json_t *m = jrpc_body_at(ex->body, i);
		if (kind_in_body(ex, m) == JRPC_REQUEST && jrpc_id_equal(jrpc_id(m), id))
			return m;
	}
	return NULL;
}

/* ---- matching replies to requests ------------------------------------------ */

/* Whether the i-th message m of the body is a request still waiting for its
 * answer. */
static int request_pending(const struct exchange *ex, size_t i, const json_t *m)
{
	if (kind_in_body(ex, m) != JRPC_REQUEST)
		return 0;
	return m == ex->body ? !ex->answered : !(ex->answered_at && ex->answered_at[i]);
}

/* Whether a request of the body is still waiting for its answer. */
static int any_pending(const struct exchange *ex)
{
	if (!ex->body)
		return 0;
	if (json_is_object(ex->body))
		return ex->body_kind == JRPC_REQUEST && !ex->answered;
	size_t n = json_array_size(ex->body);
	for (size_t i = 0; i < n; i++)
		if (request_pending(ex, i, json_array_get(ex->body, i)))
			return 1;
	return 0;
}

/* Marks the i-th message of a batch body answered. -1 when out of memory. */
static int mark_answered_at(struct exchange *ex, size_t i)
{
	if (!ex->answered_at && !(ex->answered_at = calloc(jrpc_body_count(ex->body), 1)))
		return -1;
	ex->answered_at[i] = 1;
	return 0;
}

/* Issue 17: a reply is matched to its request by id, on every path. msg (of
 * the given kind) came from the upstream in reply to this exchange's POST
 * body. Sets *request to the request of the body it answers (borrowed), or
 * NULL. Returns 0 when msg may be delivered: it is no response (a server
 * request or notification passes as it is), an error with a null or no id
 * (JSON-RPC's "the request's id could not be read": it answers nothing in
 * particular), or the first answer to a request of the body, now marked
 * answered. Returns -1 for a mismatch: an id no request of the body has, or
 * a second answer to one; the upstream is then out of step with its
 * requests (a stale reply, or another client's). Without a POST body (a
 * GET stream, which may resume another stream's answers) nothing is
 * matched. The one-request case costs a member lookup and a comparison. */
static int match_reply(struct exchange *ex, const json_t *msg, enum jrpc_kind kind,
                       const json_t **request)
{
	*request = NULL;
	if (!ex->body)
		return 0;
	if (kind != JRPC_RESULT && kind != JRPC_ERROR) {
		*request = request_for(ex, msg);
		return 0;
	}
	json_t *id = jrpc_id(msg);
	if (!id || json_is_null(id))
		return 0;
	if (json_is_object(ex->body)) {
		if (ex->body_kind != JRPC_REQUEST || ex->answered ||
		    !jrpc_id_equal(jrpc_id(ex->body), id))
			return -1;
		ex->answered = 1;
		*request = ex->body;
		return 0;
	}
	/* A batch: the first request with that id still waiting (a client may
	 * reuse an id within a batch; each gets one answer). */
	size_t n = jrpc_body_count(ex->body);
	for (size_t i = 0; i < n; i++) {
		json_t *m = jrpc_body_at(ex->body, i);
		if (request_pending(ex, i, m) && jrpc_id_equal(jrpc_id(m), id)) {
			if (mark_answered_at(ex, i) < 0)
				return -1; /* cannot keep count: not delivered */
			*request = m;
			return 0;
		}
	}
	return -1;
}

/* match_reply over every message of a JSON reply that is an array.
 * Returns 0, or -1 at the first mismatch; then none of the reply is
 * delivered, so the marks it made are taken back (the requests are still
 * to be answered, by the error). */
static int match_reply_array(struct exchange *ex, const json_t *reply)
{
	size_t n = json_is_array(ex->body) ? json_array_size(ex->body) : 0;
	unsigned char *before = NULL;
	const json_t *request;
	int rc = 0;

	if (n && ex->answered_at && !(before = malloc(n)))
		return -1;
	if (before)
		memcpy(before, ex->answered_at, n);
	int was = ex->answered;
	for (size_t i = 0; rc == 0 && i < json_array_size(reply); i++) {
		json_t *m = json_array_get(reply, i);
		rc = match_reply(ex, m, jrpc_classify(m), &request);
	}
	if (rc < 0) {
		ex->answered = was;
		if (ex->answered_at && before)
			memcpy(ex->answered_at, before, n);
		else if (ex->answered_at)
			memset(ex->answered_at, 0, n);
	}
	free(before);
	return rc;
}

/* ---- routing -------------------------------------------------------------- */

struct route {
	size_t up;          /* index into ctx->ups */
	char target[2048];  /* upstream request-target */
};

/* Runs on every request: no printf. */
static int append_query(char *dst, size_t cap, const char *query)
{
	size_t n = strlen(dst), qlen;
	if (!query || !*query)
		return 0;
	qlen = strlen(query);
	if (n + 1 + qlen >= cap)
		return -1;
	dst[n] = strchr(dst, '?') ? '&' : '?';
	memcpy(dst + n + 1, query, qlen + 1);
	return 0;
}

static size_t target_path_len(const char *target)
{
	return strcspn(target, "?");
}

/* Maps a client path to an upstream and its target. Returns 0, or -1 when
 * nothing is served at that path. */
static int route_find(const struct px_config *cfg, const char *path, const char *query,
                      struct route *rt)
{
	for (size_t i = 0; i < cfg->nups; i++) {
		if (strcmp(cfg->ups[i].path, path) == 0) {
			rt->up = i;
			size_t tlen = strlen(cfg->ups[i].target);
			if (tlen >= sizeof(rt->target))
				return -1;
			memcpy(rt->target, cfg->ups[i].target, tlen + 1);
			return append_query(rt->target, sizeof(rt->target), query);
		}
	}
	/* OAuth discovery: "/.well-known/<doc><mcp path>" names the upstream
	 * at <mcp path>; a bare "/.well-known/<doc>" goes to the first one.
	 * The 2025-03-26 fallback endpoints live at the server's root. */
	if (strncmp(path, "/.well-known/", 13) == 0) {
		const char *rest = strchr(path + 13, '/');
		if (rest) {
			for (size_t i = 0; i < cfg->nups; i++) {
				if (strcmp(cfg->ups[i].path, rest) == 0) {
					rt->up = i;
					snprintf(rt->target, sizeof(rt->target), "%.*s%.*s",
					         (int)(rest - path), path,
					         (int)target_path_len(cfg->ups[i].target), cfg->ups[i].target);
					return append_query(rt->target, sizeof(rt->target), query);
				}
			}
		}
	} else if (strcmp(path, "/authorize") != 0 && strcmp(path, "/token") != 0 &&
	           strcmp(path, "/register") != 0) {
		return -1;
	}
	rt->up = 0;
	if ((size_t)snprintf(rt->target, sizeof(rt->target), "%s", path) >= sizeof(rt->target))
		return -1;
	return append_query(rt->target, sizeof(rt->target), query);
}

/* ---- the request upstream ------------------------------------------------- */

static int forwardable_request_header(enum http_hdr_id id, const char *name, size_t len,
                                      const char *connection)
{
	if (http_hop_by_hop_id(id, name, len, connection))
		return 0;
	/* Host is the upstream's; length is recomputed; Expect is answered by
	 * us; compression would hide the JSON the hook must read. */
	return id != HH_HOST && id != HH_CONTENT_LENGTH && id != HH_EXPECT &&
	       id != HH_ACCEPT_ENCODING;
}

static int configured_header(const struct px_upstream_conf *uc, const char *name, size_t len)
{
	for (size_t i = 0; i < uc->nheaders; i++)
		if (header_is(name, len, uc->headers[i].name))
			return 1;
	return 0;
}

/* The upstream request's head, for a body of blen bytes, into hb. */
static void build_head(struct exchange *ex, const char *target, size_t blen,
                       struct http_headbuf *hb)
{
	const struct http_msg *m = ex->req;
	const char *connection = http_msg_connection_options(m);
	const char *method = http_msg_method(m);
	int has_auth = 0;

	http_headbuf_add(hb, method, strlen(method));
	http_headbuf_add(hb, " ", 1);
	http_headbuf_add(hb, target, strlen(target));
	http_headbuf_add(hb, " HTTP/1.1\r\n", 11);
	http_headbuf_header(hb, "Host", 4, ex->uc->host_header, strlen(ex->uc->host_header));
	for (size_t i = 0;; i++) {
		const char *n, *v;
		size_t nl, vl;
		if (http_msg_header_at(m, i, &n, &nl, &v, &vl) < 0)
			break;
		enum http_hdr_id id = http_msg_header_id(m, i);
		if (!forwardable_request_header(id, n, nl, connection) ||
		    (ex->uc->nheaders && configured_header(ex->uc, n, nl)))
			continue;
		/* telemetry: the upstream's parent is our CLIENT span */
		if (ex->where.up_traceparent[0] && header_is(n, nl, "traceparent"))
			continue;
		if (id == HH_AUTHORIZATION) {
			/* A token the proxy checked is the proxy's, not the
			 * upstream's: passing it on is the token passthrough the
			 * spec forbids. */
			if (!ex->keep_client_auth)
				continue;
			has_auth = 1;
		}
		http_headbuf_header(hb, n, nl, v, vl);
	}
	for (size_t i = 0; i < ex->uc->nheaders; i++) {
		const struct px_header *h = &ex->uc->headers[i];
		if (header_is(h->name, strlen(h->name), "authorization"))
			has_auth = 1;
		http_headbuf_header(hb, h->name, strlen(h->name), h->value, strlen(h->value));
	}
	if (ex->uc->basic_auth && !has_auth)
		http_headbuf_header(hb, "Authorization", 13, ex->uc->basic_auth,
		                    strlen(ex->uc->basic_auth));
	if (ex->where.up_traceparent[0]) /* telemetry */
		http_headbuf_header(hb, "traceparent", 11, ex->where.up_traceparent,
		                    strlen(ex->where.up_traceparent));
	enum http_method_id mid = http_msg_method_id(m);
	if (blen || mid == HM_POST || mid == HM_PUT || mid == HM_PATCH) {
		char line[HTTP_RESP_CL_LINE_MAX];
		http_headbuf_add(hb, line, http_resp_content_length_line(line, blen));
	}
	http_headbuf_add(hb, "\r\n", 2);
}

/* ---- replies -------------------------------------------------------------- */

static void reply_error(struct exchange *ex, int status, int code, const char *message,
                        json_t *data)
{
	ex->mode = RESP_LOCAL;
	if (status < 500 && ex->end == INSPECT_END_OK)
		ex->end = INSPECT_END_REJECTED;
	/* Errors of our own take the codes of the request's era. */
	json_t *err = mirror_proxy_error(mirror_era_of(ex->req, ex->body, NULL), reply_id(ex),
	                                 status, code, message, data);
	if (!err) {
		conn_abort(ex->c, "out of memory");
		return;
	}
	conn_reply_error(ex->c, status, err, message);
	json_decref(err);
}

/* 2026-07-28: headers mirroring the body must agree with it, checked
 * before anything trusts them. Returns 0, or -1 after answering 400. */
static int check_mirrored_headers(struct exchange *ex, enum mirror_era era)
{
	struct mirror_result r;
	/* Earlier eras mirror nothing: no tool definition to look up. */
	if (era != MIRROR_ERA_2026)
		return 0;
	const char *tool = json_is_object(ex->body) ? jrpc_tool_name(ex->body) : NULL;
	json_t *def = tool ? tools_get(ex->ctx->proc->tools, ex->uc->name, tool) : NULL;
	int rc = mirror_check(ex->req, ex->body, def, &r);
	json_decref(def);
	if (rc == 0)
		return 0;
	json_t *resp = mirror_error_response(ex->body, &r);
	ex->mode = RESP_LOCAL;
	ex->end = INSPECT_END_REJECTED;
	ex->error = "mirrored headers disagree with the body";
	if (resp)
		conn_reply_error(ex->c, r.status, resp, r.message);
	else
		conn_abort(ex->c, "out of memory");
	json_decref(resp);
	mirror_result_fini(&r);
	return -1;
}

/* An upstream failure's error response for request id (borrowed; NULL:
 * null), in the request's era (owned; NULL when out of memory). */
static json_t *upstream_error_for(const struct exchange *ex, const json_t *id, int status,
                                  const char *detail)
{
	char msg[512];
	/* Only the redacted URL: no user, password or query ever leaves. */
	snprintf(msg, sizeof(msg), "upstream %s: %s", ex->uc->url_safe, detail);
	json_t *data = json_pack("{s:s,s:s,s:s}", "upstream", ex->uc->name, "url",
	                         ex->uc->url_safe, "reason", detail);
	return mirror_proxy_error(mirror_era_of(ex->req, ex->body, NULL), id, status,
	                          JRPC_UPSTREAM_ERROR, msg, data);
}

/* A batch's answer to an upstream failure: an error for each request the
 * hooks did not answer, then the hooks' answers; every request of the batch
 * answered once. Owned, or NULL when out of memory. */
static json_t *upstream_errors_for_batch(const struct exchange *ex, int status, const char *detail)
{
	json_t *arr = json_array();
	size_t n = jrpc_body_count(ex->body);
	for (size_t i = 0; arr && i < n; i++) {
		json_t *m = jrpc_body_at(ex->body, i);
		if (request_pending(ex, i, m) &&
		    json_array_append_new(arr, upstream_error_for(ex, jrpc_id(m), status, detail)) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	if (arr && ex->answers)
		json_array_extend(arr, ex->answers);
	return arr;
}

static void upstream_failed(struct exchange *ex, int status, const char *detail)
{
	ex->error = detail;
	ex->end = status == 504 ? INSPECT_END_TIMEOUT : INSPECT_END_UPSTREAM_ERROR;
	if (status == 504)
		PX_STAT_INC(ex->ctx, timeouts);
	else
		PX_STAT_INC(ex->ctx, upstream_errors);
	if (conn_replied(ex->c)) {
		/* Too late for a status: cut the stream so the client knows. */
		conn_abort(ex->c, detail);
		return;
	}
	ex->mode = RESP_LOCAL;
	json_t *err = json_is_array(ex->body) && body_has_request(ex)
	                      ? upstream_errors_for_batch(ex, status, detail)
	                      : upstream_error_for(ex, reply_id(ex), status, detail);
	if (!err) {
		conn_abort(ex->c, "out of memory");
		return;
	}
	conn_reply_json(ex->c, status, err);
	json_decref(err);
}

static int forwardable_response_header(enum http_hdr_id id, const char *name, size_t len,
                                       const char *connection)
{
	return !http_hop_by_hop_id(id, name, len, connection) && id != HH_CONTENT_LENGTH &&
	       id != HH_X_ACCEL_BUFFERING;
}

/* conn_head_fn: the upstream's forwardable header lines (ex->resp), and
 * for a re-framed SSE stream the line that lets events through
 * nginx-style buffering intermediaries. */
static void put_response_headers(struct http_headbuf *hb, void *arg)
{
	const struct exchange *ex = arg;
	const struct http_msg *m = ex->resp;

	if (!m)
		return;
	const char *connection = http_msg_connection_options(m);
	for (size_t i = 0;; i++) {
		const char *n, *v;
		size_t nl, vl;
		if (http_msg_header_at(m, i, &n, &nl, &v, &vl) < 0)
			break;
		if (forwardable_response_header(http_msg_header_id(m, i), n, nl, connection))
			http_headbuf_header(hb, n, nl, v, vl);
	}
	if (ex->mode == RESP_SSE)
		http_headbuf_add(hb, "X-Accel-Buffering: no\r\n", 23);
}

/* The client's head, with the upstream's headers. */
static int reply_head(struct exchange *ex, int status, int64_t content_length)
{
	return conn_reply_head_fn(ex->c, status, put_response_headers, ex, content_length);
}

static void check_backpressure(struct exchange *ex)
{
	if (ex->ur && conn_output_full(ex->c))
		upstream_req_pause(ex->ur);
}

/* ---- the message hook ----------------------------------------------------- */

/* Runs the hook on one message of the given kind; request: the request it
 * answers (borrowed: msg itself for a client request, match_reply's for a
 * server message). Returns the verdict; *answer receives an owned reply
 * when a hook answered. */
static enum inspect_verdict hook_raw(struct exchange *ex, enum inspect_dir dir, json_t *msg,
                                     enum jrpc_kind kind, const json_t *request,
                                     const struct jparse_span *result, int *modified,
                                     json_t **answer)
{
	struct inspect_msg im = {
		.dir = dir,
		.kind = kind,
		.msg = msg,
		.request = request,
		.where = &ex->where,
		.result_raw = result ? result->at : NULL,
		.result_raw_len = result && result->at ? result->len : 0,
		/* The same bytes, kept (parse_reply): hooks hold them instead of
		 * copying them. */
		.result_bytes = result && result->at && ex->reply_bytes &&
		                ex->reply_bytes->len == result->len ? ex->reply_bytes : NULL,
	};
	enum inspect_verdict v = inspect_message(ex->ctx->insp, &im);
	/* The hooks that keep the bytes took their references: an exchange
	 * waiting for a slow client does not hold 448 KB more. */
	if (im.result_bytes) {
		rcbytes_unref(ex->reply_bytes);
		ex->reply_bytes = NULL;
	}
	if (im.modified)
		*modified = 1;
	if (answer)
		*answer = im.answer;
	else
		json_decref(im.answer);
	if (v != INSPECT_FORWARD)
		log_msg(LOG_DEBUG, "#%llu %s %s by %s", ex->where.conn_id,
		        v == INSPECT_DROP ? "dropped" : "answered", jrpc_kind_str(im.kind),
		        im.decided_by ? im.decided_by : "?");
	return v;
}

static void add_answer(struct exchange *ex, json_t *answer)
{
	if (!answer)
		return;
	if (!ex->answers)
		ex->answers = json_array();
	json_array_append_new(ex->answers, answer);
}

/* Client -> server. Returns 0 when something is left to forward (in raw:
 * the original bytes, or the body re-serialised in their place), 1 when
 * the hooks consumed the whole body, -1 when out of memory. */
static int inspect_request_body(struct exchange *ex, struct evbuffer *raw)
{
	size_t n = jrpc_body_count(ex->body);
	int modified = 0;
	size_t kept = 0;
	json_t *keep = json_is_array(ex->body) ? json_array() : NULL;

	for (size_t i = 0; i < n; i++) {
		json_t *m = jrpc_body_at(ex->body, i), *answer = NULL;
		enum jrpc_kind kind = kind_in_body(ex, m);
		enum inspect_verdict v =
		        hook_raw(ex, INSPECT_FROM_CLIENT, m, kind, m, NULL, &modified, &answer);
		if (v == INSPECT_FORWARD) {
			kept++;
			if (keep)
				json_array_append(keep, m);
			json_decref(answer);
		} else {
			/* A request a hook answered is not the upstream's to answer:
			 * an answer from it would be a mismatch (match_reply). */
			if (keep && kind == JRPC_REQUEST && mark_answered_at(ex, i) < 0) {
				json_decref(answer);
				json_decref(keep);
				return -1;
			}
			add_answer(ex, answer);
		}
	}
	if (kept == 0) {
		json_decref(keep);
		return 1;
	}
	if (kept < n || modified) {
		/* Re-serialise only when a hook changed something; otherwise the
		 * client's own bytes go upstream untouched. */
		char *s = json_dumps(keep ? keep : ex->body, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(keep);
		if (!s)
			return -1;
		evbuffer_drain(raw, evbuffer_get_length(raw));
		evbuffer_add(raw, s, strlen(s));
		free(s);
	} else {
		json_decref(keep);
	}
	return 0;
}

/* Replies with the hooks' answers alone (every message was consumed). */
static void reply_answers(struct exchange *ex)
{
	ex->mode = RESP_LOCAL;
	if (!ex->answers || json_array_size(ex->answers) == 0) {
		/* Only notifications or responses were consumed: as the server
		 * would, acknowledge them. */
		conn_reply_head(ex->c, 202, NULL, 0);
		conn_reply_end(ex->c);
		return;
	}
	const json_t *body = json_is_array(ex->body) ? ex->answers : json_array_get(ex->answers, 0);
	conn_reply_json(ex->c, 200, body);
}

/* The body is one tools/list request without a cursor: a listing's first
 * page (a cursor's pages would take each other's place in what is kept). */
static int lists_first_page(const struct exchange *ex)
{
	const char *method = ex->body && json_is_object(ex->body) && ex->body_kind == JRPC_REQUEST
	                     ? jrpc_method(ex->body)
	                     : NULL;
	return method && strcmp(method, "tools/list") == 0 &&
	       !JPARSE_MEMBER(JPARSE_MEMBER(ex->body, "params"), "cursor");
}

/* The reply's tree. A first page of tools is built from the tools of the
 * last one read from the upstream, by any worker (listings.h): a listing
 * that changed in one tool then costs that tool, not the list. */
static json_t *parse_reply(struct exchange *ex, const char *bytes, size_t len, int any,
                           struct jparse_span *result)
{
	struct px_ctx *ctx = ex->ctx;
	rcbytes_unref(ex->reply_bytes);
	ex->reply_bytes = NULL;
	if (len < JREUSE_MIN_BYTES || !ctx->proc->listings || !lists_first_page(ex))
		return jparse_span(bytes, len, any, result);
	struct jreuse_stats did;
	json_t *reply = listings_parse(ctx->proc->listings, ex->up_index, bytes, len, any, result,
	                               &did, &ex->reply_bytes);
	PX_STAT_ADD(ctx, listing_tools_reused, did.reused);
	PX_STAT_ADD(ctx, listing_tools_parsed, did.parsed);
	return reply;
}

/* ---- SSE replies ---------------------------------------------------------- */

static void write_event(struct exchange *ex, const struct sse_event *ev)
{
	sse_write_event(ex->scratch, ev);
	conn_reply_body_buffer(ex->c, ex->scratch);
	ex->last_write_us = clock_mono_us();
}

static void write_json_event(struct exchange *ex, const json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s)
		return;
	struct sse_event ev = {.event = "message", .event_len = 7, .data = s,
	                       .data_len = strlen(s), .retry = -1};
	write_event(ex, &ev);
	free(s);
}

static void reply_mismatch(struct exchange *ex);
static int inspect_without_tree(struct exchange *ex, const char *bytes, size_t len,
                                enum inspect_verdict *v);

static int on_sse_event(void *arg, const struct sse_event *ev, const char *comment,
                        size_t comment_len)
{
	struct exchange *ex = arg;
	(void)comment_len;

	if (ev && ev->id)
		/* The client's last event id, from which a cut stream resumes
		 * (an empty id resets it: nothing to resume from then). */
		ex->resumable = ev->id_len > 0;
	if (!ev) {
		/* The upstream's own keep-alive comments cross too: the client may
		 * be relying on them through other intermediaries. */
		char text[256];
		snprintf(text, sizeof(text), "%.*s", (int)(comment_len < 200 ? comment_len : 200),
		         comment);
		sse_write_comment(ex->scratch, text);
		conn_reply_body_buffer(ex->c, ex->scratch);
		ex->last_write_us = clock_mono_us();
		return 0;
	}
	if (!ev->data || ev->data_len == 0 || (ev->data[0] != '{' && ev->data[0] != '[')) {
		/* Priming events (id + empty data), retry hints: as they are. */
		write_event(ex, ev);
		return 0;
	}
	enum inspect_verdict nv;
	if (inspect_without_tree(ex, ev->data, ev->data_len, &nv)) { /* issue 20: no tree */
		if (nv == INSPECT_FORWARD)
			write_event(ex, ev);
		check_backpressure(ex);
		return 0;
	}
	struct jparse_span result = {.name = "result"};
	json_t *msg = parse_reply(ex, ev->data, ev->data_len, 0, &result);
	if (!msg || !json_is_object(msg)) {
		/* Not a message we understand: not ours to judge, pass it on. */
		json_decref(msg);
		write_event(ex, ev);
		return 0;
	}
	int modified = 0;
	/* Only responses are matched; notifications and requests pass. */
	enum jrpc_kind kind = jrpc_classify(msg);
	const json_t *request;
	if (match_reply(ex, msg, kind, &request) < 0) {
		/* Not delivered, nor inspected: it is no answer of this stream's.
		 * Non-zero stops the reader; the connection is closed. */
		json_decref(msg);
		reply_mismatch(ex);
		return 1;
	}
	enum inspect_verdict v =
	        hook_raw(ex, INSPECT_FROM_SERVER, msg, kind, request, &result, &modified, NULL);
	if (v == INSPECT_FORWARD && !modified) {
		write_event(ex, ev);
	} else if (v == INSPECT_FORWARD) {
		char *s = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (s) {
			struct sse_event copy = *ev;
			copy.data = s;
			copy.data_len = strlen(s);
			write_event(ex, &copy);
			free(s);
		}
	}
	json_decref(msg);
	check_backpressure(ex);
	return 0;
}

static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *ex = arg;
	(void)fd;
	(void)what;
	uint64_t interval = (uint64_t)ex->ctx->cfg->timeouts.sse_keepalive_ms * 1000u;
	/* Only quiet streams need it; a slow client gets nothing extra queued. */
	if (clock_mono_us() - ex->last_write_us + 1000 < interval || conn_output_full(ex->c))
		return;
	sse_write_comment(ex->scratch, "keep-alive");
	conn_reply_body_buffer(ex->c, ex->scratch);
	ex->last_write_us = clock_mono_us();
}

static int start_sse(struct exchange *ex)
{
	const struct px_config *cfg = ex->ctx->cfg;

	ex->mode = RESP_SSE;
	upstream_req_stream(ex->ur);
	ex->sse = sse_reader_new(cfg->limits.max_sse_event_bytes);
	ex->scratch = evbuffer_new();
	if (!ex->sse || !ex->scratch)
		return -1;
	/* put_response_headers adds X-Accel-Buffering: no. */
	if (reply_head(ex, ex->up_status, -1) < 0)
		return -1;
	ex->last_write_us = clock_mono_us();
	if (ex->answers) {
		/* Answers the hooks made for part of a batch go first. */
		for (size_t i = 0; i < json_array_size(ex->answers); i++)
			write_json_event(ex, json_array_get(ex->answers, i));
	}
	unsigned ms = cfg->timeouts.sse_keepalive_ms;
	if (ms) {
		ex->keepalive = event_new(ex->ctx->base, -1, EV_PERSIST, keepalive_cb, ex);
		struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
		if (!ex->keepalive || event_add(ex->keepalive, &tv) < 0)
			return -1;
	}
	return 0;
}

/* ---- JSON replies --------------------------------------------------------- */

/* Whether the body asks for a tool listing. */
static int body_lists_tools(const struct exchange *ex)
{
	size_t n = ex->body ? jrpc_body_count(ex->body) : 0;
	for (size_t i = 0; i < n; i++) {
		json_t *m = jrpc_body_at(ex->body, i);
		const char *method = kind_in_body(ex, m) == JRPC_REQUEST ? jrpc_method(m) : NULL;
		if (method && strcmp(method, "tools/list") == 0)
			return 1;
	}
	return 0;
}

/* A JSON reply over limits.max_inspect_bytes: it cannot be inspected. A
 * tool listing a hook acts on (inspect_listing_may_skip) is refused: passed
 * unread, it would bypass a contract in filter or fail mode, or list the
 * tools a policy hides. Anything else goes through untouched (and says so).
 * Returns 0, or -1 to stop reading (the connection is closed). */
static int json_too_big(struct exchange *ex)
{
	size_t bound = ex->ctx->cfg->limits.max_inspect_bytes;
	const char *who = NULL;

	if (body_lists_tools(ex) && !inspect_listing_may_skip(ex->ctx->insp, &ex->where, &who)) {
		log_msg(LOG_WARN, "#%llu upstream %s: tools/list reply over limits.max_inspect_bytes "
		                  "(%zu bytes): refused, the %s hook may not be bypassed",
		        ex->where.conn_id, ex->uc->name, bound, who ? who : "?");
		upstream_failed(ex, 502, "the tools/list reply is over limits.max_inspect_bytes: it "
		                         "cannot be inspected, and the contract or policy may not be "
		                         "bypassed");
		return -1;
	}
	log_msg(LOG_WARN, "#%llu reply from %s over %zu bytes: passed through without inspection",
	        ex->where.conn_id, ex->uc->name, bound);
	ex->mode = RESP_RAW;
	if (reply_head(ex, ex->up_status, ex->up_length) < 0)
		return -1;
	return conn_reply_body_buffer(ex->c, ex->json_buf);
}

/* reply: an object of the given kind answering request (match_reply), or
 * an array (matched already: match_reply_array). */
static json_t *inspect_reply_messages(struct exchange *ex, json_t *reply, enum jrpc_kind kind,
                                      const json_t *request, const struct jparse_span *result,
                                      int *modified)
{
	if (json_is_object(reply)) {
		if (hook_raw(ex, INSPECT_FROM_SERVER, reply, kind, request, result, modified, NULL) !=
		    INSPECT_FORWARD) {
			*modified = 1;
			json_decref(reply);
			return json_array();
		}
		return reply;
	}
	json_t *keep = json_array();
	for (size_t i = 0; i < json_array_size(reply); i++) {
		json_t *m = json_array_get(reply, i);
		if (hook_raw(ex, INSPECT_FROM_SERVER, m, jrpc_classify(m), request_for(ex, m), NULL,
		             modified, NULL) == INSPECT_FORWARD)
			json_array_append(keep, m);
		else
			*modified = 1;
	}
	json_decref(reply);
	return keep;
}

/* ---- replies read without a tree (issue 20) ------------------------------- */

/* The one answer to the body's one request, a JSON reply or an SSE
 * event's data: when no hook needs its tree (inspect_needs_tree), the
 * hooks read it from the scan's index and its bytes pass untouched; the
 * tree and its free cost more than all the hooks' reading of a tools/call
 * result (see the commit). Returns 1 when the hooks ran so (*v: their
 * verdict), 0 when the message takes the tree path (anything out of the
 * ordinary: a batch, a mismatch, an id spelt oddly, a hook that needs the
 * tree), nothing changed. */
static int inspect_without_tree(struct exchange *ex, const char *bytes, size_t len,
                                enum inspect_verdict *v)
{
	struct jparse_index ix;
	if (!ex->body || !json_is_object(ex->body) || ex->body_kind != JRPC_REQUEST ||
	    ex->answered || ex->answers || !inspect_trees_optional(ex->ctx->insp))
		return 0;
	struct inspect_msg im = {
		.dir = INSPECT_FROM_SERVER,
		.kind = JRPC_RESULT,
		.request = ex->body,
		.where = &ex->where,
		.request_method = jrpc_method(ex->body),
	};
	/* The hooks are asked before the scan (inspect.h), so a reply one of
	 * them needs the tree of (a changed listing) is not scanned and then
	 * parsed again. */
	if (inspect_needs_tree(ex->ctx->insp, &im, NULL) || jparse_scan(bytes, len, 1, &ix) < 0 ||
	    ix.long_string)
		return 0;
	im.kind = jrpc_classify_index(&ix);
	im.ix = &ix;
	im.result_raw = ix.at[JPI_RESULT].at;
	im.result_raw_len = ix.at[JPI_RESULT].len;
	/* match_reply's one-request case, on the id's bytes */
	if ((im.kind != JRPC_RESULT && im.kind != JRPC_ERROR) ||
	    !jrpc_id_spelt(jrpc_id(ex->body), &ix.at[JPI_ID]))
		return 0;
	ex->answered = 1;
	*v = inspect_message(ex->ctx->insp, &im);
	json_decref(im.answer); /* a server message is not answered */
	if (*v != INSPECT_FORWARD)
		log_msg(LOG_DEBUG, "#%llu dropped %s by %s", ex->where.conn_id, jrpc_kind_str(im.kind),
		        im.decided_by ? im.decided_by : "?");
	return 1;
}

/* A JSON reply, through inspect_without_tree; 1 when it was sent. */
static int reply_without_tree(struct exchange *ex, const char *bytes, size_t len)
{
	enum inspect_verdict v;
	if (!inspect_without_tree(ex, bytes, len, &v))
		return 0;
	if (v != INSPECT_FORWARD) {
		/* What the tree path sends for a dropped reply: an empty batch. */
		reply_head(ex, ex->up_status, 2);
		conn_reply_body(ex->c, "[]", 2);
	} else {
		reply_head(ex, ex->up_status, (int64_t)len);
		conn_reply_body_buffer(ex->c, ex->json_buf);
	}
	conn_reply_end(ex->c);
	return 1;
}

/* ---- unchanged listings (issue 20) ------------------------------------------ */

/* Below this a listing's parse costs little: it keeps the one path. */
#define FAST_LISTING_MIN_BYTES 8192
/* The most bytes a listing reply may hold outside its "result" (the
 * envelope: jsonrpc, id) for the fast path. */
#define FAST_ENVELOPE_MAX 512

/* The reply's envelope, parsed: its text with the result's value replaced
 * by {} (owned), or NULL when it is not a result of one request of this
 * exchange's with a small envelope. Parsed, it says the whole text is
 * JSON once the result's bytes are (a hook found them among its own). */
static json_t *listing_envelope(const char *bytes, size_t len, const struct jparse_span *r)
{
	char stub[FAST_ENVELOPE_MAX + 2];
	size_t pre = (size_t)(r->at - bytes), post = len - pre - r->len;
	if (pre + post > FAST_ENVELOPE_MAX)
		return NULL;
	memcpy(stub, bytes, pre);
	memcpy(stub + pre, "{}", 2);
	memcpy(stub + pre + 2, r->at + r->len, post);
	json_t *env = jparse(stub, pre + 2 + post, 0);
	const json_t *res = json_object_get(env, "result");
	if (!json_is_object(res) || json_object_size(res) || jrpc_classify(env) != JRPC_RESULT) {
		json_decref(env);
		return NULL;
	}
	return env;
}

static void unref_sent(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	rcbytes_unref(arg);
}

/* The reply to send when a hook changed the listing (the policy hid
 * tools): env as the parsed path re-serialises it, its "result" ({}, the
 * last member: jparse_last_member) being sent's bytes, taken by reference. NULL
 * when out of memory. */
static struct evbuffer *listing_changed_reply(const json_t *env, struct rcbytes *sent)
{
	char *head = json_dumps(env, JSON_COMPACT | JSON_PRESERVE_ORDER);
	size_t n = head ? strlen(head) : 0;
	struct evbuffer *b = n > 3 && memcmp(head + n - 3, "{}}", 3) == 0 ? evbuffer_new() : NULL;
	if (b && evbuffer_add(b, head, n - 3) == 0) {
		/* The buffer's reference goes with the bytes it was sent. */
		rcbytes_ref(sent);
		if (evbuffer_add_reference(b, sent->text, sent->len, unref_sent, sent) < 0) {
			rcbytes_unref(sent);
			evbuffer_free(b);
			b = NULL;
		}
	} else if (b) {
		evbuffer_free(b);
		b = NULL;
	}
	if (b && evbuffer_add(b, "}", 1) < 0) {
		evbuffer_free(b);
		b = NULL;
	}
	free(head);
	return b;
}

/* A JSON reply to one tools/list request (no cursor) whose result is the
 * listing every hook kept: forwarded as the upstream sent it, each hook
 * doing again what it did (inspect_listing_fast); when a hook's handling
 * changed it (hidden tools), with the result that hook kept. Returns 1
 * when the reply was sent, 0 for the parsed path (nothing was done). */
static int fast_listing(struct exchange *ex, const char *bytes, size_t len)
{
	struct jparse_ref res;
	if (len < FAST_LISTING_MIN_BYTES || ex->answers || ex->answered || !lists_first_page(ex) ||
	    jparse_last_member(bytes, len, "result", &res) < 0)
		return 0;
	/* A skim: a result that is not the last member spans more than one
	 * value, and no hook finds those bytes among what it kept. */
	struct jparse_span result = {.name = "result", .at = res.at, .len = res.len};
	json_t *env = listing_envelope(bytes, len, &result);
	const json_t *id = env ? jrpc_id(env) : NULL;
	const json_t *request = NULL;
	struct rcbytes *sent = NULL;
	const struct inspect_listing l = {&ex->where, ex->body, result.at, result.len, &sent, 0};
	/* The id first: a reply to another request is the parsed path's
	 * (reply_mismatch), before any hook sees it. */
	int ok = id && !json_is_null(id) && jrpc_id_equal(jrpc_id(ex->body), id) &&
	         inspect_listing_fast(ex->ctx->insp, &l, NULL);
	if (ok)
		ok = match_reply(ex, env, JRPC_RESULT, &request) == 0;
	struct evbuffer *changed = ok && sent ? listing_changed_reply(env, sent) : NULL;
	json_decref(env);
	rcbytes_unref(sent);
	if (!ok || (sent && !changed))
		return 0;
	log_msg(LOG_DEBUG, "#%llu tools/list unchanged (%zu bytes): forwarded unparsed%s",
	        ex->where.conn_id, len, changed ? ", as the hooks changed it before" : "");
	if (changed) {
		reply_head(ex, ex->up_status, (int64_t)evbuffer_get_length(changed));
		conn_reply_body_buffer(ex->c, changed);
		evbuffer_free(changed);
	} else {
		reply_head(ex, ex->up_status, (int64_t)len);
		conn_reply_body_buffer(ex->c, ex->json_buf);
	}
	conn_reply_end(ex->c);
	return 1;
}

/* Room for the whole body in one piece when its length is known, so that
 * finish_json's pull-up finds it contiguous instead of copying it: for a
 * 448,808-byte listing that copy was 365k instructions per listing (and
 * a second copy of the body held while it ran: peak RSS under 50 listing
 * clients 86.4 MiB, 43.8 MiB without). Pages the upstream never fills are
 * not touched; past max_inspect_bytes the reply is not kept anyway. */
static void json_buf_size(struct exchange *ex)
{
	if (ex->json_buf && ex->up_length > 0 &&
	    (uint64_t)ex->up_length <= ex->ctx->cfg->limits.max_inspect_bytes)
		evbuffer_expand(ex->json_buf, (size_t)ex->up_length);
}

static void finish_json(struct exchange *ex)
{
	size_t len = evbuffer_get_length(ex->json_buf);
	const char *bytes = (const char *)evbuffer_pullup(ex->json_buf, -1);
	if (bytes && fast_listing(ex, bytes, len))
		return;
	/* Issue 20, item 1: a reply no hook needs the tree of. */
	if (bytes && reply_without_tree(ex, bytes, len))
		return;
	struct jparse_span result = {.name = "result"};
	json_t *reply = len ? parse_reply(ex, bytes, len, 1, &result) : NULL;

	if (!reply) {
		upstream_failed(ex, 502, "the upstream declared JSON but sent something else");
		return;
	}
	if (!json_is_object(reply) && !json_is_array(reply)) {
		/* JSON, but no JSON-RPC message to inspect: as it came. */
		json_decref(reply);
		reply = NULL;
		reply_head(ex, ex->up_status, (int64_t)len);
		conn_reply_body_buffer(ex->c, ex->json_buf);
		conn_reply_end(ex->c);
		return;
	}
	int modified = 0;
	enum jrpc_kind kind = JRPC_INVALID;
	const json_t *request = NULL;
	int mismatch;
	if (json_is_object(reply)) {
		kind = jrpc_classify(reply);
		mismatch = match_reply(ex, reply, kind, &request) < 0;
	} else {
		mismatch = ex->body && match_reply_array(ex, reply) < 0;
	}
	if (mismatch) {
		/* Before any hook sees it: no part of it is delivered. */
		json_decref(reply);
		reply_mismatch(ex);
		return;
	}
	reply = inspect_reply_messages(ex, reply, kind, request, &result, &modified);
	if (ex->answers) {
		if (!json_is_array(reply)) {
			json_t *arr = json_array();
			json_array_append_new(arr, reply);
			reply = arr;
		}
		json_array_extend(reply, ex->answers);
		modified = 1;
	}
	if (!modified) {
		reply_head(ex, ex->up_status, (int64_t)len);
		conn_reply_body_buffer(ex->c, ex->json_buf);
	} else {
		char *s = json_dumps(reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
		size_t n = s ? strlen(s) : 0;
		reply_head(ex, ex->up_status, (int64_t)n);
		conn_reply_body(ex->c, s, n);
		free(s);
	}
	json_decref(reply);
	conn_reply_end(ex->c);
}

/* ---- upstream callbacks --------------------------------------------------- */

/* The request's session ended: the upstream said so, or the client deleted
 * it. Later requests with that id get 404 from the proxy. Only the 404 the
 * spec defines as expiry counts: one answering a POST, GET or DELETE at the
 * MCP endpoint that carried the session id (docs/transports.md); a 404 to
 * anything else (an OPTIONS the server's framework does not route, an OAuth
 * path) says nothing about the session. */
static void note_session_end(struct exchange *ex, int status)
{
	const char *sid = ex->where.session_id;
	enum http_method_id m = http_msg_method_id(ex->req);
	if (!sid || !ex->is_mcp)
		return;
	if ((status == 404 && (m == HM_POST || m == HM_GET || m == HM_DELETE)) ||
	    (m == HM_DELETE && status >= 200 && status < 300))
		sessid_ended(ex->ctx->proc->sessions, ex->up_index, sid);
}

static int up_on_head(void *arg, const struct http_msg *resp)
{
	struct exchange *ex = arg;
	const char *ct = http_msg_get(resp, HH_CONTENT_TYPE);
	int status = http_msg_status(resp);

	if (transport_sse_probe(ex->ctx, ex->up_index, ex->req, ex->body, status, ct)) {
		/* An "auto" upstream refused Streamable HTTP: the legacy transport
		 * takes this initialize over (the hooks have seen it). */
		ex->mode = RESP_LOCAL;
		ex->xlate = transport_sse_adopt(ex->c, ex->req, ex->up_index, ex->body,
		                                (struct transport_sse_link){&ex->where, &ex->end,
		                                                            &ex->error});
		return -1;
	}
	ex->up_status = status;
	ex->up_length = http_msg_content_length(resp);
	const char *sid = http_msg_get(resp, HH_MCP_SESSION_ID);
	if (sid && strlen(sid) < sizeof(ex->reply_session)) {
		memcpy(ex->reply_session, sid, strlen(sid) + 1);
		ex->where.reply_session_id = ex->reply_session;
		sessid_issued(ex->ctx->proc->sessions, ex->up_index, sid);
	}
	note_session_end(ex, status);
	if (notifications_only(ex) && status >= 200 && status < 300) {
		/* Only notifications or responses were posted: the spec's answer
		 * is a bare 202, whatever the upstream chose (some say 200 {}). */
		ex->mode = RESP_LOCAL;
		return 0;
	}
	ex->resp = resp;
	int head = http_msg_method_id(ex->req) == HM_HEAD;
	int bodyless = head || status == 204 || status == 304 || ex->up_length == 0;

	if (!bodyless && media_is(ct, "text/event-stream"))
		return start_sse(ex);
	if (!bodyless && media_is_json(ct)) {
		ex->mode = RESP_JSON;
		ex->json_buf = conn_buffer_get(ex->c);
		json_buf_size(ex); /* issue 20: the body in one piece */
		return ex->json_buf ? 0 : -1;
	}
	if (ex->answers && status == 202) {
		/* The upstream took the notifications; the hooks' answers still
		 * need to reach the client. */
		ex->mode = RESP_LOCAL;
		return 0;
	}
	ex->mode = RESP_RAW;
	return reply_head(ex, status, ex->up_length);
}

/* The SSE reply to a POST ends, or must end, before every request of the
 * body was answered, and the head is out. Each request still pending gets
 * one JSON-RPC error event (its own id, the era's code), then the stream
 * ends cleanly: no client waits for an answer that cannot come. Requests
 * answered already (or by a hook) get nothing more. */
static void sse_answer_pending(struct exchange *ex, const char *detail)
{
	size_t n = jrpc_body_count(ex->body);
	for (size_t i = 0; i < n; i++) {
		json_t *m = jrpc_body_at(ex->body, i);
		if (!request_pending(ex, i, m))
			continue;
		json_t *err = upstream_error_for(ex, jrpc_id(m), 502, detail);
		if (!err) {
			conn_abort(ex->c, "out of memory");
			return;
		}
		write_json_event(ex, err);
		json_decref(err);
		/* Answered now: nothing may answer it again. */
		if (m == ex->body)
			ex->answered = 1;
		else if (mark_answered_at(ex, i) < 0)
			break; /* out of memory: the stream still ends */
	}
	conn_reply_end(ex->c);
}

/* The SSE reply ended (cut, reset, or closed) with requests of the POST
 * unanswered. With an event id to resume from, the stream is cut as it
 * came: the client resumes it (GET with Last-Event-ID) and may still get
 * its answers. Without one, nothing can bring them: each gets its error
 * and the stream ends cleanly. Returns 1 after answering, 0 when the
 * caller ends the stream as before: nothing is pending, or it can be
 * resumed (or it is no POST's). */
static int sse_end_unanswered(struct exchange *ex, const char *detail)
{
	if (ex->resumable || !any_pending(ex))
		return 0;
	ex->error = detail;
	ex->end = INSPECT_END_UPSTREAM_ERROR;
	PX_STAT_INC(ex->ctx, upstream_errors);
	log_msg(LOG_WARN, "#%llu upstream %s: %s (no event id to resume from): pending requests "
	                  "answered with an error", ex->where.conn_id, ex->uc->name, detail);
	sse_answer_pending(ex, detail);
	return 1;
}

/* An upstream event over limits.max_sse_event_bytes: it cannot be passed
 * on, and the stream's head is out. The POST's requests get a JSON-RPC
 * error in its place and the stream ends cleanly, so the client is not left
 * waiting; a GET stream is cut. */
static void sse_too_big(struct exchange *ex)
{
	ex->end = INSPECT_END_UPSTREAM_ERROR;
	PX_STAT_INC(ex->ctx, upstream_errors);
	if (!ex->body) {
		conn_abort(ex->c, ex->error);
		return;
	}
	sse_answer_pending(ex, "the upstream sent an SSE event over limits.max_sse_event_bytes");
}

/* A reply that answers another request (match_reply): not delivered, and
 * the connection it came on is out of step with its requests, so it is
 * closed, never reused (it could hand this answer, or the next, to another
 * client). The client gets 502 for its own request (an error event and a
 * clean end when the SSE head is out). */
static void reply_mismatch(struct exchange *ex)
{
	static const char why[] = "the upstream's reply answers another request (its id matches "
	                          "no request sent)";
	if (ex->ur)
		upstream_req_distrust(ex->ur);
	log_msg(LOG_WARN, "#%llu upstream %s: %s: not delivered, connection closed",
	        ex->where.conn_id, ex->uc->name, why);
	if (ex->mode == RESP_SSE && conn_replied(ex->c)) {
		ex->error = why;
		ex->end = INSPECT_END_UPSTREAM_ERROR;
		PX_STAT_INC(ex->ctx, upstream_errors);
		sse_answer_pending(ex, why);
		return;
	}
	upstream_failed(ex, 502, why);
}

static int up_on_body(void *arg, const char *data, size_t len)
{
	struct exchange *ex = arg;

	switch (ex->mode) {
	case RESP_RAW:
		if (conn_reply_body(ex->c, data, len) < 0)
			return -1;
		check_backpressure(ex);
		return 0;
	case RESP_JSON:
		if (evbuffer_add(ex->json_buf, data, len) < 0)
			return -1;
		if (evbuffer_get_length(ex->json_buf) > ex->ctx->cfg->limits.max_inspect_bytes)
			return json_too_big(ex);
		return 0;
	case RESP_SSE: {
		int rc = sse_reader_feed(ex->sse, data, len, on_sse_event, ex);
		if (rc == SSE_ERR_TOO_BIG) {
			ex->error = "an SSE event from the upstream is over the size limit";
			log_msg(LOG_WARN, "#%llu %s", ex->where.conn_id, ex->error);
			sse_too_big(ex);
			return -1;
		}
		return rc ? -1 : 0;
	}
	default:
		return 0;
	}
}

static void up_on_done(void *arg)
{
	struct exchange *ex = arg;

	switch (ex->mode) {
	case RESP_JSON:
		finish_json(ex);
		break;
	case RESP_LOCAL:
		reply_answers(ex);
		break;
	case RESP_SSE:
		if (!sse_end_unanswered(ex, "the upstream ended the SSE reply without answering"))
			conn_reply_end(ex->c);
		break;
	default:
		if (!conn_replied(ex->c))
			reply_head(ex, ex->up_status, 0);
		conn_reply_end(ex->c);
		break;
	}
}

static void up_on_error(void *arg, enum upstream_err err, const char *detail)
{
	struct exchange *ex = arg;
	/* An SSE reply cut before its answers (issue 17). */
	if (ex->mode == RESP_SSE && conn_replied(ex->c) && sse_end_unanswered(ex, detail))
		return;
	upstream_failed(ex, err == UPSTREAM_ERR_TIMEOUT ? 504 : 502, detail);
}

static const struct upstream_req_cbs up_cbs = {up_on_head, up_on_body, up_on_done, up_on_error};

/* ---- the adapter ------------------------------------------------------------ */

static struct exchange *exchange_new(struct conn *c, const struct http_msg *req)
{
	struct exchange *ex = calloc(1, sizeof(*ex));
	if (!ex)
		return NULL;
	ex->magic = EXCHANGE_MAGIC;
	ex->c = c;
	ex->ctx = conn_ctx(c);
	ex->req = req;
	ex->where.conn_id = conn_id(c);
	ex->where.client = conn_peer(c);
	ex->where.session_id = http_msg_get(req, HH_MCP_SESSION_ID);
	ex->where.protocol = http_msg_get(req, HH_MCP_PROTOCOL_VERSION);
	ex->where.http_method = http_msg_method(req);
	ex->where.client_transport = "streamable_http";
	ex->where.upstream_transport = "streamable_http";
	ex->where.start_us = conn_request_start_us(c);
	if (ex->ctx->proc->trace) { /* telemetry: the client's W3C context */
		ex->where.traceparent = http_msg_header(req, "traceparent");
		ex->where.tracestate = http_msg_header(req, "tracestate");
		ex->where.user_agent = http_msg_header(req, "user-agent");
	}
	const char *url = http_msg_url(req);
	http_url_path(ex->path, sizeof(ex->path), url);
	return ex;
}

/* A whole JSON reply with extra header lines ("Name: value\r\n"...); body
 * is borrowed. Out of memory: the connection is aborted instead. */
static void reply_json_with(struct exchange *ex, int status, const char *headers,
                            const json_t *body)
{
	char *s = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	struct evbuffer *h = evbuffer_new();

	if (s && h && evbuffer_add_printf(h, "%sContent-Type: application/json\r\n", headers) > 0) {
		conn_reply_head(ex->c, status, h, (int64_t)strlen(s));
		conn_reply_body(ex->c, s, strlen(s));
		conn_reply_end(ex->c);
	} else {
		conn_abort(ex->c, "out of memory");
	}
	free(s);
	if (h)
		evbuffer_free(h);
}

/* With client tokens configured, who is calling. Returns 0, or -1 after
 * answering 401. */
static int authenticate(struct exchange *ex)
{
	const struct px_config *cfg = ex->ctx->cfg;
	const char *auth = http_msg_get(ex->req, HH_AUTHORIZATION);
	const struct px_client *who = NULL;

	if (cfg->ntokens == 0) {
		ex->keep_client_auth = 1;
		return 0;
	}
	if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
		who = config_client_by_token(cfg, auth + 7);
	if (who) {
		ex->where.client_name = who->name;
		return 0;
	}
	json_t *err = jrpc_error_new(NULL, JRPC_INVALID_REQUEST,
	                             auth ? "invalid client token" : "a client token is required", NULL);
	ex->mode = RESP_LOCAL;
	ex->end = INSPECT_END_REJECTED;
	reply_json_with(ex, 401, "WWW-Authenticate: Bearer realm=\"mcpwarden\"\r\n", err);
	json_decref(err);
	return -1;
}

/* Parses and checks a POST body. Returns 0, or -1 after replying. */
static int parse_post(struct exchange *ex, struct evbuffer *body)
{
	size_t len = evbuffer_get_length(body);
	const char *bytes = (const char *)evbuffer_pullup(body, -1);
	const char *why;

	/* Any JSON value parses here, so that `42` is told apart from `{`:
	 * the first is not JSON-RPC (-32600), the second not JSON (-32700). */
	size_t nest = 0;
	ex->body = len ? jparse_nest(bytes, len, 1, &nest) : NULL;
	if (!ex->body) {
		reply_error(ex, 400, JRPC_PARSE_ERROR, "Parse error: the body is not valid JSON", NULL);
		return -1;
	}
	size_t depth = ex->ctx->cfg->limits.max_json_depth;
	if (depth && nest > depth) {
		reply_error(ex, 400, JRPC_INVALID_REQUEST, "JSON nested too deeply", NULL);
		return -1;
	}
	if (jrpc_validate_body(ex->body, ex->ctx->cfg->limits.max_batch, &why, &ex->body_kind) < 0) {
		reply_error(ex, 400, JRPC_INVALID_REQUEST, why, NULL);
		return -1;
	}
	return 0;
}

/* DNS rebinding and cross-site requests: Returns 0, or -1 after 403. */
static int check_origin(struct exchange *ex)
{
	const struct px_config *cfg = ex->ctx->cfg;
	struct origin_policy p = {
		.hosts = (const char *const *)cfg->hosts,
		.nhosts = cfg->nhosts,
		.origins = (const char *const *)cfg->origins,
		.norigins = cfg->norigins,
		.loopback_only = cfg->listen_loopback,
	};
	const char *host = http_msg_get(ex->req, HH_HOST);
	if (!origin_host_allowed(&p, host)) {
		reply_error(ex, 403, JRPC_INVALID_REQUEST, "Host not allowed", NULL);
		return -1;
	}
	if (!origin_origin_allowed(&p, http_msg_get(ex->req, HH_ORIGIN), host)) {
		reply_error(ex, 403, JRPC_INVALID_REQUEST, "Origin not allowed", NULL);
		return -1;
	}
	return 0;
}

/* Translated sessions (legacy HTTP+SSE on either side) are answered by
 * transport_sse.c; this exchange authenticates, parses the body, logs. */
static struct exchange *delegate(struct exchange *ex, size_t up, struct evbuffer *body)
{
	ex->uc = &ex->ctx->cfg->ups[up];
	ex->up = ex->ctx->ups[up];
	ex->up_index = up;
	ex->where.upstream = ex->uc->name;
	ex->mode = RESP_LOCAL;
	if (authenticate(ex) < 0 ||
	    (http_msg_method_id(ex->req) == HM_POST && parse_post(ex, body) < 0)) {
		evbuffer_free(body);
		return ex;
	}
	ex->xlate = transport_sse_start(ex->c, ex->req, up, ex->body, body,
	                                (struct transport_sse_link){&ex->where, &ex->end, &ex->error});
	return ex;
}

/* Routes the request and checks who may send it. Returns 0, or -1 after
 * replying. Sets ex->uc, ex->up, ex->up_index and rt->target. */
static int admit(struct exchange *ex, struct route *rt)
{
	struct px_ctx *ctx = ex->ctx;
	const char *url = http_msg_url(ex->req);
	const char *q = strchr(url, '?');

	if (route_find(ctx->cfg, ex->path, q ? q + 1 : NULL, rt) < 0) {
		reply_error(ex, 404, JRPC_INVALID_REQUEST, "no MCP endpoint at this path", NULL);
		return -1;
	}
	ex->uc = &ctx->cfg->ups[rt->up];
	ex->up = ctx->ups[rt->up];
	ex->up_index = rt->up;
	ex->where.upstream = ex->uc->name;
	ex->is_mcp = strcmp(ex->path, ex->uc->path) == 0;
	/* OAuth metadata stays public; the MCP endpoint needs a token when
	 * tokens are configured. */
	if (!ex->is_mcp) {
		ex->keep_client_auth = 1;
		return 0;
	}
	return authenticate(ex);
}

/* The methods the MCP endpoint serves: the spec's POST, GET and DELETE,
 * OPTIONS for a browser client's CORS preflight and HEAD (a GET without
 * the body), both answered by the upstream as before. */
#define MCP_ALLOW "GET, HEAD, POST, DELETE, OPTIONS"

/* A method the MCP endpoint does not serve (TRACE, PUT, PATCH, ...): 405
 * with Allow from the proxy, as nginx and HAProxy answer for what a location
 * does not serve, and never forwarded: the upstream's framework would answer
 * something like 404, which reads as "session expired" (note_session_end).
 * Returns 1 after answering. */
static int method_not_served(struct exchange *ex)
{
	enum http_method_id m = http_msg_method_id(ex->req);
	if (!ex->is_mcp || m == HM_POST || m == HM_GET || m == HM_DELETE || m == HM_HEAD ||
	    (m == HM_OTHER && strcmp(http_msg_method(ex->req), "OPTIONS") == 0))
		return 0;
	static const char why[] = "method not allowed at the MCP endpoint (allowed: " MCP_ALLOW ")";
	json_t *err = mirror_proxy_error(mirror_era_of(ex->req, NULL, NULL), NULL, 405,
	                                 JRPC_INVALID_REQUEST, why, NULL);
	ex->mode = RESP_LOCAL;
	ex->end = INSPECT_END_REJECTED;
	ex->error = why;
	reply_json_with(ex, 405, "Allow: " MCP_ALLOW "\r\n", err);
	json_decref(err);
	return 1;
}

/* A request in a session the proxy saw end. Returns 1 after answering 404. */
static int session_ended(struct exchange *ex)
{
	if (!ex->is_mcp || !ex->where.session_id ||
	    sessid_lookup(ex->ctx->proc->sessions, ex->up_index, ex->where.session_id) != SESSID_ENDED)
		return 0;
	/* MUST be 404, so the client starts a new session; servers that say
	 * 400 here would leave it stuck. */
	reply_error(ex, 404, JRPC_SESSION_NOT_FOUND, "Session not found", NULL);
	return 1;
}

/* Over a cap of our own: the status (429, or 503) with Retry-After
 * (RFC 6585 §4, RFC 9110 §10.2.3), so the client backs off instead of
 * retrying at once. message is static. */
static void reply_busy(struct exchange *ex, int status, const char *message)
{
	json_t *err = mirror_proxy_error(mirror_era_of(ex->req, ex->body, NULL), reply_id(ex), status,
	                                 JRPC_INVALID_REQUEST, message, NULL);
	ex->mode = RESP_LOCAL;
	ex->end = INSPECT_END_REJECTED;
	ex->error = message;
	reply_json_with(ex, status, "Retry-After: 1\r\n", err);
	json_decref(err);
}

/* A request over its session's cap (rc from sesslimit_acquire). */
static void refuse_busy(struct exchange *ex, enum sesslimit_rc rc, size_t cap)
{
	int streams = ex->slot_kind == SESSLIMIT_STREAM;

	if (rc == SESSLIMIT_FULL) {
		log_msg(LOG_WARN, "#%llu upstream %s: too many sessions busy at once: 503",
		        ex->where.conn_id, ex->uc->name);
		reply_busy(ex, 503, "too many sessions busy at once");
		return;
	}
	/* Once per busy spell: a runaway client must not flood the log (each
	 * refusal still has its access log line and its counter). */
	if (rc == SESSLIMIT_OVER_FIRST)
		log_msg(LOG_WARN, "#%llu upstream %s: session %.8s… has %zu %s (its limit): more get 429 "
		        "while it stays this busy", ex->where.conn_id, ex->uc->name,
		        ex->where.session_id, cap, sesslimit_kind_str(ex->slot_kind));
	reply_busy(ex, 429, streams ? "too many SSE streams open in this session "
	                              "(limits.max_streams_per_session)"
	                            : "too many requests in flight in this session "
	                              "(limits.max_inflight_per_session)");
}

/* Per-session caps of pass-through sessions (sesslimit.h): a GET stream
 * takes a stream slot, a POST carrying requests an in-flight slot, held
 * until http_free. DELETE, notifications and responses always pass: they
 * are how a client cancels, answers the server or ends a busy session.
 * Returns 1 after answering 429 (503 when the table is full). */
static int session_over_cap(struct exchange *ex)
{
	const struct px_config *cfg = ex->ctx->cfg;
	size_t cap;

	if (!ex->is_mcp || !ex->where.session_id)
		return 0;
	if (ex->is_stream) {
		ex->slot_kind = SESSLIMIT_STREAM;
		cap = cfg->limits.max_streams_per_session;
	} else if (http_msg_method_id(ex->req) == HM_POST && body_has_request(ex)) {
		ex->slot_kind = SESSLIMIT_INFLIGHT;
		cap = cfg->limits.max_inflight_per_session;
	} else {
		return 0;
	}
	if (cap == 0)
		return 0;
	enum sesslimit_rc rc = sesslimit_acquire(ex->ctx->proc->sesslimit, ex->up_index,
	                                         ex->where.session_id, ex->slot_kind, cap, &ex->slot);
	if (rc == SESSLIMIT_OK)
		return 0;
	refuse_busy(ex, rc, cap);
	return 1;
}

/* Starts the upstream request: head and body (send, stolen). A head that
 * fits the upstream request's own room goes there, and the body alone is
 * handed over; a larger one is gathered in an evbuffer with the body
 * behind it. Returns 0, or -1 when out of memory. */
static int start_upstream(struct exchange *ex, const char *target, struct evbuffer *send)
{
	int head_only = http_msg_method_id(ex->req) == HM_HEAD;
	struct evbuffer *spill = conn_buffer_get(ex->c);
	struct http_headbuf hb;

	if (!spill) {
		conn_buffer_put(ex->c, send);
		return -1;
	}
	http_headbuf_init(&hb, spill);
	build_head(ex, target, evbuffer_get_length(send), &hb);
	if (!hb.err && evbuffer_get_length(spill) == 0 && hb.len <= UPSTREAM_HEAD_MAX) {
		conn_buffer_put(ex->c, spill);
		ex->ur = upstream_req_new_split(ex->up, hb.buf, hb.len, send, head_only, &up_cbs, ex);
		return 0;
	}
	if (http_headbuf_flush(&hb) < 0 || evbuffer_add_buffer(spill, send) < 0) {
		conn_buffer_put(ex->c, spill);
		conn_buffer_put(ex->c, send);
		return -1;
	}
	conn_buffer_put(ex->c, send);
	ex->ur = upstream_req_new(ex->up, spill, head_only, &up_cbs, ex);
	return 0;
}

/* Hooks, then upstream. body is stolen. */
static void forward(struct exchange *ex, const struct route *rt, struct evbuffer *body)
{
	if (ex->body) {
		/* The hooks' verdicts; a rewritten body replaces body's bytes. */
		int rc = inspect_request_body(ex, body);
		if (rc != 0) {
			conn_buffer_put(ex->c, body);
			if (rc > 0)
				reply_answers(ex);
			else
				reply_error(ex, 500, JRPC_INTERNAL_ERROR, "out of memory", NULL);
			return;
		}
	}
	if (start_upstream(ex, rt->target, body) < 0) {
		reply_error(ex, 500, JRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	if (!ex->ur)
		upstream_failed(ex, 502, "cannot start the upstream request");
}

static struct exchange *http_start(struct conn *c, const struct http_msg *req,
                                   struct evbuffer *body)
{
	struct px_ctx *ctx = conn_ctx(c);
	struct exchange *ex = exchange_new(c, req);
	struct route rt;

	if (!ex) {
		evbuffer_free(body);
		conn_abort(c, "out of memory");
		return NULL;
	}
	if (check_origin(ex) < 0)
		goto done;
	if (transport_sse_claims(ctx, req, ex->path, &rt.up))
		return delegate(ex, rt.up, body);
	if (admit(ex, &rt) < 0 || method_not_served(ex))
		goto done;
	enum http_method_id method = http_msg_method_id(req);
	ex->is_stream = ex->is_mcp && method == HM_GET;
	if (ex->is_mcp && method == HM_POST && parse_post(ex, body) < 0)
		goto done;
	/* The hooks learn the era from the body, not from headers alone. */
	const char *version = NULL;
	enum mirror_era era = mirror_era_of(req, ex->body, &version);
	ex->where.era = mirror_era_str(era);
	if (version)
		ex->where.protocol = version;
	if (ex->body && check_mirrored_headers(ex, era) < 0)
		goto done;
	if (session_ended(ex))
		goto done;
	if (session_over_cap(ex))
		goto done;
	forward(ex, &rt, body);
	return ex;
done:
	conn_buffer_put(c, body);
	return ex;
}

static void http_drained(struct exchange *ex)
{
	assert(ex->magic == EXCHANGE_MAGIC);
	if (ex->xlate)
		transport_sse_drained(ex->xlate);
	else if (ex->ur)
		upstream_req_resume(ex->ur);
}

static void http_shutdown(struct exchange *ex)
{
	/* A standalone GET stream never ends by itself: end it cleanly so the
	 * client reconnects (to the next instance). POSTs run to completion. */
	if (ex->xlate)
		transport_sse_shutdown(ex->xlate);
	else if (ex->is_stream && ex->mode == RESP_SSE)
		conn_reply_end(ex->c);
}

static void log_exchange(struct exchange *ex, const char *client_error)
{
	struct px_ctx *ctx = ex->ctx;
	uint64_t start = conn_request_start_us(ex->c);
	uint64_t lat = clock_mono_us() - start;
	const char *note = ex->error ? ex->error : client_error;
	/* The access line's method and tool cost lookups: only when logged. */
	int logged = log_enabled(LOG_INFO);
	json_t *first = logged && ex->body ? jrpc_body_at(ex->body, 0) : NULL;

	struct log_access a = {
		.conn_id = ex->where.conn_id,
		.client = ex->where.client,
		.client_name = ex->where.client_name,
		.http_method = ex->where.http_method,
		.path = ex->path,
		.upstream = ex->uc ? ex->uc->name : NULL,
		.rpc_method = logged ? first_method(ex) : NULL,
		.tool = first ? jrpc_tool_name(first) : NULL,
		.status = conn_reply_status(ex->c),
		.latency_us = lat,
		.bytes_in = conn_bytes_in(ex->c),
		.bytes_out = conn_bytes_out(ex->c),
		/* An answer of the proxy's own (a 400 for a body that is not
		 * JSON, say) gives its reason to the access line. */
		.note = note ? note : conn_reply_note(ex->c),
	};
	log_access(&a);
	if (client_error && ex->end == INSPECT_END_OK)
		ex->end = INSPECT_END_CANCELLED;
	struct inspect_exchange x = {
		.end = ex->end,
		.where = &ex->where,
		.request_body = ex->body,
		.status = a.status,
		.latency_us = lat,
		.bytes_in = a.bytes_in,
		.bytes_out = a.bytes_out,
		.error = note,
	};
	inspect_exchange_done(ctx->insp, &x);
}

static void http_replied(struct exchange *ex)
{
	if (ex->slot) {
		sesslimit_release(ex->ctx->proc->sesslimit, ex->slot, ex->slot_kind);
		ex->slot = NULL;
	}
}

static void http_free(struct exchange *ex, const char *client_error)
{
	if (!ex)
		return;
	assert(ex->magic == EXCHANGE_MAGIC);
	log_exchange(ex, client_error);
	/* Every way an exchange ends comes here once: the slot goes back,
	 * unless the reply already gave it (http_replied). */
	http_replied(ex);
	transport_sse_free(ex->xlate, client_error);
	/* Freeing an unfinished upstream request closes its connection: that
	 * is how a client that left cancels its request upstream. */
	conn_buffer_put(ex->c, upstream_req_release(ex->ur));
	if (ex->keepalive)
		event_free(ex->keepalive);
	sse_reader_free(ex->sse);
	if (ex->scratch)
		evbuffer_free(ex->scratch);
	conn_buffer_put(ex->c, ex->json_buf);
	rcbytes_unref(ex->reply_bytes);
	json_decref(ex->body);
	free(ex->answered_at);
	json_decref(ex->answers);
	ex->magic = 0;
	free(ex);
}

/* transport_ops.deadline (transport.h): the drain deadline passed with
 * this reply unfinished. The upstream request is given up first (its
 * connection closes, as when a client leaves), so that nothing of it can
 * follow our answer; then the request is answered as any the upstream
 * cannot answer: a whole 503 with the era's JSON-RPC error when nothing
 * was written yet; an SSE reply begun ends with that error as its last
 * event (when its request was not answered in it) and a clean end of the
 * stream, which leaves the client its answer (docs/transports.md). A reply
 * passed through raw cannot be ended honestly (its length or its JSON
 * would lie): conn cuts it. Nginx's worker_shutdown_timeout and HAProxy's
 * hard-stop-after only close; a 503 tells the client what happened. */
static void http_deadline(struct exchange *ex)
{
	static const char why[] = "mcpwarden is shutting down (timeouts.drain_ms passed)";

	assert(ex->magic == EXCHANGE_MAGIC);
	conn_buffer_put(ex->c, upstream_req_release(ex->ur));
	ex->ur = NULL;
	ex->resp = NULL; /* it lived in the upstream request's parser */
	ex->error = why;
	ex->end = INSPECT_END_CANCELLED;
	if (!conn_replied(ex->c)) {
		reply_error(ex, 503, JRPC_UPSTREAM_ERROR, why, NULL);
		return;
	}
	if (ex->mode != RESP_SSE && !ex->xlate)
		return;
	/* A translated POST still open still owes its request's answer. */
	const json_t *id = ex->answered && !ex->xlate ? NULL : reply_id(ex);
	json_t *err = id ? mirror_proxy_error(mirror_era_of(ex->req, ex->body, NULL), id, 503,
	                                      JRPC_UPSTREAM_ERROR, why, NULL)
	                 : NULL;
	if (err && (ex->scratch || (ex->scratch = evbuffer_new())))
		write_json_event(ex, err);
	json_decref(err);
	conn_reply_end(ex->c);
}

const struct transport_ops transport_http_ops = {
	.name = "streamable_http",
	.route = transport_sse_route,
	.start = http_start,
	.drained = http_drained,
	.shutdown = http_shutdown,
	.deadline = http_deadline,
	.replied = http_replied,
	.free = http_free,
	.error_body = http_resp_jrpc_error_body,
};

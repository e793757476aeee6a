/* transport_sse: see transport_sse.h.
 * Why this file is long (over 800 lines): both client faces of a translated session share the
 * exchange, its state machine and its delivery; the legacy POST's call (SX_CALL) moves out first.
 *
 *   conn ──▶ transport_http exchange ──xlate──▶ transport_sse_ex ──s──▶ session
 *            (auth, body, access log)           (this file)            (session.c)
 *
 * One transport_sse_ex per HTTP request, of one kind:
 *
 *   SX_LOCAL       answered at once (202, errors, DELETE)
 *   SX_SSE_STREAM  a legacy GET: the session's stream; everything the server
 *                  sends, responses included, becomes `event: message`
 *   SX_POST        a Streamable POST waiting for `waiting` responses. When
 *                  the client accepts text/event-stream: an SSE reply, its
 *                  head written as soon as the upstream took a request (as
 *                  a pass-through reply starts with the upstream's head)
 *                  and each message flushed as it comes. When it accepts
 *                  only JSON: one JSON reply once all responses came.
 *                  Either way, a proxy-made error before anything was
 *                  written keeps its HTTP status, as JSON
 *   SX_STREAM      a Streamable GET: the session's stream
 *   SX_CALL        a legacy client's call: the messages of one POST, from
 *                  the POST to the last answer on the client's stream
 *
 * A legacy client's call outlives the POST that carries it: the POST is
 * answered 202 once the upstream took the request, the answer comes later
 * on the client's stream. So the call is not the POST's HTTP exchange but
 * an SX_CALL of its own, with its own `where` (copied from the POST's):
 * its messages, the request and its answer, are inspected there, and it
 * ends (inspect_exchange_done, `deferred`) once the POST ended and every
 * answer was written to the stream, so that a call makes one record with
 * its real outcome and latency, and the POST's 202 none:
 *
 *   POST /messages ──▶ SX_LOCAL (the POST) ──call──▶ SX_CALL ◀──target── session
 *                      202 once accepted,   ◀─post──  where, waiting      pending
 *                      or the upstream's 4xx          answers ──▶ the legacy stream
 *
 * The POST's reply waits for the upstream to take or refuse the request:
 * a refusal (upstream 4xx: an auth challenge, a 403 saying why) reaches
 * the client as it came, on the POST, where an HTTP status can still be
 * given, as a Streamable client would get it.
 *
 * Every message a client sends is inspected here before it goes to the
 * session; every message delivered to an exchange is inspected in
 * deliver(), with that exchange's `where`, just before it is written.
 */
#include "proxy/mcp/transport_sse.h"
#include "proxy/mcp/tracehand.h" /* telemetry */

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
#include "proxy/net/affinity.h"
#include "proxy/ctx.h"
#include "proxy/net/http_parse.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/flagnames.h"
#include "proxy/base/log.h"
#include "proxy/mcp/session.h"
#include "proxy/base/sse.h"
#include "proxy/mcp/upstream_sse.h"
#include "proxy/base/clock.h"

#define SX_MAGIC 0x73787863u /* "sxxc" */

/* JSON-RPC code for an unknown session, as the SDK's own transport uses. */
#define SX_SESSION_NOT_FOUND (-32001)

enum sx_kind {
	SX_LOCAL,       /* answered at once */
	SX_SSE_STREAM,  /* legacy GET: the session's stream */
	SX_POST,        /* Streamable POST waiting for responses */
	SX_STREAM,      /* Streamable GET: the session's stream */
	SX_CALL,        /* a legacy client's call (see the file head); no conn */
};

/* Where an exchange is, whatever its kind. Every change goes through
 * sx_to, which asserts it is one of sx_moves and logs it (debug). An HTTP
 * exchange (SX_LOCAL, SX_SSE_STREAM, SX_POST, SX_STREAM) lives in the
 * first four, a legacy call (SX_CALL, no conn) in the last three:
 *
 *   NEW ------------------------> STREAMING ---> ENDED
 *    |                                ^            ^ ^
 *    +--> HEAD_PENDING ---------------+------------+ |
 *    +-----------------------------------------------+
 *
 *   CALL_POSTING ---> CALL_REPLIED ---> CALL_DETACHED
 *        +----------------------------------^
 */
enum sx_state {
	/* Nothing written yet: a LOCAL being answered, a POST collecting its
	 * responses for one JSON reply (an HTTP status can still be given). */
	SXS_NEW,
	/* SX_SSE_STREAM: the session waits for the upstream's endpoint;
	 * nothing written, so a dead upstream is still a 502. */
	SXS_HEAD_PENDING,
	/* The reply is an SSE stream (a legacy stream, a Streamable GET, a
	 * POST that went to SSE): its head is written (or, for a legacy
	 * stream, failed to be and the conn is being aborted), every message
	 * an event, keep-alives running. */
	SXS_STREAMING,
	/* Our reply ended, or went to conn whole: nothing more is written,
	 * deliveries fail. Final. */
	SXS_ENDED,
	/* SX_CALL: its POST waits for its reply (202 once the upstream took
	 * the request, or the upstream's refusal as it came). */
	SXS_CALL_POSTING,
	/* SX_CALL: the POST has its reply; answers go to the client's stream. */
	SXS_CALL_REPLIED,
	/* SX_CALL: the POST's exchange ended (post is NULL); the call is
	 * told to the hooks and freed at its last answer. */
	SXS_CALL_DETACHED,
};
#define SXS_NSTATES (SXS_CALL_DETACHED + 1)

#define M(st) (1u << (st))
static const unsigned sx_moves[SXS_NSTATES] = {
	[SXS_NEW] = M(SXS_HEAD_PENDING) | M(SXS_STREAMING) | M(SXS_ENDED),
	[SXS_HEAD_PENDING] = M(SXS_STREAMING) | M(SXS_ENDED),
	[SXS_STREAMING] = M(SXS_ENDED),
	[SXS_ENDED] = 0,
	[SXS_CALL_POSTING] = M(SXS_CALL_REPLIED) | M(SXS_CALL_DETACHED),
	[SXS_CALL_REPLIED] = M(SXS_CALL_DETACHED),
	[SXS_CALL_DETACHED] = 0,
};
#undef M

static const char *const sx_state_names[SXS_NSTATES] = {
	"new", "head-pending", "streaming", "ended", "call-posting", "call-replied", "call-detached",
};

/* One bit each of an exchange's flags word (transport_sse_flags_str): facts
 * besides its kind and state, each holding for the kind named. */
enum sx_flag {
	SXF_ACCEPTS_SSE = 1u << 0,  /* SX_POST: the client takes text/event-stream */
	SXF_BATCH = 1u << 1,        /* SX_POST: the body was an array */
	SXF_PAUSED = 1u << 2,       /* we paused the session's upstream */
};
#define SX_NFLAGS 3 /* the last flag is 1u << (SX_NFLAGS - 1) */

struct transport_sse_ex {
	unsigned magic;
	enum sx_kind kind;
	struct conn *c;                 /* borrowed: conn owns the HTTP exchange owning us */
	struct px_ctx *ctx;             /* borrowed */
	const struct http_msg *req;     /* borrowed: stable until free */
	size_t up;
	struct session *s;              /* referenced, or NULL */
	struct transport_sse_link link;
	enum sx_state state;            /* changed by sx_to only */
	unsigned flags;                 /* enum sx_flag */
	int waiting;                    /* SX_POST: responses still due */
	int reply_status;               /* SX_POST: status for an error-only JSON reply */
	json_t *replies;                /* owned: SX_POST responses collected */
	char *raw1;                     /* owned: the upstream bytes of a lone response */
	size_t raw1_len;
	struct event *keepalive;        /* owned */
	uint64_t last_write_us;
	struct evbuffer *scratch;       /* owned */
	char sid[SESSION_ID_MAX + 1];  /* replicas: room for a replica_id prefix */
	/* A legacy POST and its call point at each other while both live. */
	struct transport_sse_ex *call;  /* the POST's call (owned by itself), or NULL */
	struct transport_sse_ex *post;  /* SX_CALL: the POST while it lasts, or NULL */
	int post_status;                /* SX_CALL: the status it got */
	uint64_t post_bytes_in, post_bytes_out;
	struct inspect_where own_where; /* SX_CALL: link.where points here */
	enum inspect_end own_end;
	const char *own_error;
	char *own_strs;                 /* owned: own_where's strings */
	char note[320];                 /* SX_POST, SX_CALL: a proxy-made error's text */
};

static int sx_has(const struct transport_sse_ex *x, unsigned flag)
{
	return (x->flags & flag) != 0;
}

static void sx_put(struct transport_sse_ex *x, unsigned flag, int on)
{
	x->flags = on ? x->flags | flag : x->flags & ~flag;
}

const char *transport_sse_flags_str(const struct transport_sse_ex *x, char *buf, size_t len)
{
	static const char *const names[] = {"accepts-sse", "batch", "paused"};
	_Static_assert(sizeof(names) / sizeof(names[0]) == SX_NFLAGS, "a name per sx_flag");
	_Static_assert(SXF_PAUSED == 1u << (SX_NFLAGS - 1), "SX_NFLAGS is the count");
	return flagnames_str(x->flags, names, SX_NFLAGS, buf, len);
}

const char *transport_sse_state_str(const struct transport_sse_ex *x)
{
	return sx_state_names[x->state];
}

/* Every change of state: the table above says which are possible, and the
 * debug log tells an exchange's life. */
static void sx_to(struct transport_sse_ex *x, enum sx_state to)
{
	assert(sx_moves[x->state] & (1u << to));
	log_msg(LOG_DEBUG, "#%llu session %.8s…: exchange %s -> %s", x->link.where->conn_id,
	        x->sid[0] ? x->sid : "-", sx_state_names[x->state], sx_state_names[to]);
	x->state = to;
}

/* Our reply is over; saying so again changes nothing. */
static void sx_end(struct transport_sse_ex *x)
{
	if (x->state != SXS_ENDED)
		sx_to(x, SXS_ENDED);
}

static int sx_ended(const struct transport_sse_ex *x)
{
	return x->state == SXS_ENDED;
}

static int legacy_head(struct transport_sse_ex *x);
static int call_deliver(struct transport_sse_ex *x, json_t *msg, const char *raw, size_t len,
                        const struct session_out *m, int is_response);
static void call_accepted(struct transport_sse_ex *x);
static void call_maybe_done(struct transport_sse_ex *x);

static struct transport_sse_ex *check(void *p)
{
	struct transport_sse_ex *x = p;
	assert(x && x->magic == SX_MAGIC);
	return x;
}

static const struct px_upstream_conf *up_conf(const struct transport_sse_ex *x)
{
	return &x->ctx->cfg->ups[x->up];
}

static void set_outcome(struct transport_sse_ex *x, enum inspect_end end, const char *error)
{
	if (*x->link.end == INSPECT_END_OK) {
		*x->link.end = end;
		*x->link.error = error;
	}
}

/* The client's Authorization goes upstream only when the proxy checks no
 * tokens of its own (the same rule as transport_http). */
static const char *passed_authorization(const struct transport_sse_ex *x)
{
	return x->ctx->cfg->ntokens == 0 ? http_msg_get(x->req, HH_AUTHORIZATION) : NULL;
}

static void bind_session(struct transport_sse_ex *x, struct session *s)
{
	x->s = s;
	session_ref(s);
	memcpy(x->sid, session_id(s), sizeof(x->sid));
	x->link.where->upstream_transport = session_transport_str(s);
	x->link.where->client_transport = session_face(s) == SESSION_FACE_SSE ? "sse"
	                                                                       : "streamable_http";
}

/* ---- plain replies ------------------------------------------------------------- */

static struct evbuffer *session_headers(const struct transport_sse_ex *x)
{
	struct evbuffer *h = evbuffer_new();
	if (h && x->s && session_face(x->s) == SESSION_FACE_STREAMABLE)
		evbuffer_add_printf(h, "Mcp-Session-Id: %s\r\n", x->sid);
	return h;
}

static void reply_error(struct transport_sse_ex *x, int status, const json_t *id, int code,
                        const char *message)
{
	x->kind = SX_LOCAL;
	sx_end(x);
	if (status < 500)
		set_outcome(x, INSPECT_END_REJECTED, NULL);
	json_t *err = jrpc_error_new(id, code, message, NULL);
	if (!err) {
		conn_abort(x->c, "out of memory");
		return;
	}
	conn_reply_error(x->c, status, err, message);
	json_decref(err);
}

static void reply_bytes(struct transport_sse_ex *x, int status, const char *ctype,
                        const char *body, size_t len)
{
	struct evbuffer *h = session_headers(x);
	if (!h) {
		conn_abort(x->c, "out of memory");
		return;
	}
	if (ctype)
		evbuffer_add_printf(h, "Content-Type: %s\r\n", ctype);
	conn_reply_head(x->c, status, h, (int64_t)len);
	conn_reply_body(x->c, body, len);
	conn_reply_end(x->c);
	sx_end(x);
	evbuffer_free(h);
}

static void reply_json(struct transport_sse_ex *x, int status, const json_t *body)
{
	char *s = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s) {
		conn_abort(x->c, "out of memory");
		return;
	}
	reply_bytes(x, status, "application/json", s, strlen(s));
	free(s);
}

/* The upstream refused the request with an HTTP answer: x (a POST) gets
 * it as it came (status, Content-Type, WWW-Authenticate, body), so the
 * client learns what a direct connection would have told it: a 401's
 * challenge, a 403's reason. */
static void reply_refusal(struct transport_sse_ex *x, const struct upstream_sse_refusal *r)
{
	struct evbuffer *h = session_headers(x);

	sx_end(x);
	if (!h) {
		conn_abort(x->c, "out of memory");
		return;
	}
	if (r->content_type)
		evbuffer_add_printf(h, "Content-Type: %s\r\n", r->content_type);
	if (r->www_authenticate)
		evbuffer_add_printf(h, "WWW-Authenticate: %s\r\n", r->www_authenticate);
	conn_reply_head(x->c, r->status, h, (int64_t)r->body_len);
	if (r->body_len)
		conn_reply_body(x->c, r->body, r->body_len);
	conn_reply_end(x->c);
	evbuffer_free(h);
}

/* Whether a refusal can be the whole reply of x: an HTTP status can still
 * be given (nothing written), and it answers all x waits for. */
static int refusal_fits(const struct transport_sse_ex *x, const struct upstream_sse_refusal *r)
{
	if (!r || r->status < 400 || r->status >= 500)
		return 0;
	if (x->kind == SX_CALL)
		return x->state == SXS_CALL_POSTING && x->post && !sx_ended(x->post);
	return x->kind == SX_POST && x->state == SXS_NEW && !sx_has(x, SXF_BATCH) &&
	       x->waiting == 1 &&
	       !(x->replies && json_array_size(x->replies));
}

/* ---- streams ---------------------------------------------------------------- */

static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct transport_sse_ex *x = check(arg);
	(void)fd;
	(void)what;
	uint64_t interval = (uint64_t)x->ctx->cfg->timeouts.sse_keepalive_ms * 1000u;
	if (sx_ended(x) || clock_mono_us() - x->last_write_us + 1000 < interval ||
	    conn_output_full(x->c))
		return;
	sse_write_comment(x->scratch, "keep-alive");
	conn_reply_body_buffer(x->c, x->scratch);
	x->last_write_us = clock_mono_us();
}

/* Writes the head of an SSE reply and starts its keep-alive. */
static int start_sse(struct transport_sse_ex *x)
{
	unsigned ms = x->ctx->cfg->timeouts.sse_keepalive_ms;
	struct evbuffer *h = session_headers(x);

	x->scratch = evbuffer_new();
	if (!h || !x->scratch) {
		if (h)
			evbuffer_free(h);
		return -1;
	}
	/* Not to be buffered or transformed by anything in between. */
	evbuffer_add_printf(h, "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
	                       "X-Accel-Buffering: no\r\n");
	int rc = conn_reply_head(x->c, 200, h, -1);
	evbuffer_free(h);
	if (rc < 0)
		return -1;
	x->last_write_us = clock_mono_us();
	if (ms) {
		struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
		x->keepalive = event_new(x->ctx->base, -1, EV_PERSIST, keepalive_cb, x);
		if (!x->keepalive || event_add(x->keepalive, &tv) < 0)
			return -1;
	}
	return 0;
}

static void flow_check(struct transport_sse_ex *x)
{
	if (x->s && !sx_has(x, SXF_PAUSED) && conn_output_full(x->c)) {
		x->flags |= SXF_PAUSED;
		session_pause(x->s);
	}
}

/* One message as `event: message`: the upstream's bytes when they are
 * intact, else the message serialised. */
static int write_event(struct transport_sse_ex *x, const json_t *msg, const char *raw, size_t len)
{
	char *s = NULL;
	struct sse_event ev = {.event = "message", .event_len = 7, .retry = -1};

	ev.data = raw;
	ev.data_len = len;
	if (!raw || sse_write_event(x->scratch, &ev) < 0) {
		s = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (!s)
			return -1;
		ev.data = s;
		ev.data_len = strlen(s);
		if (sse_write_event(x->scratch, &ev) < 0) {
			free(s);
			return -1;
		}
		free(s);
	}
	x->last_write_us = clock_mono_us();
	int rc = conn_reply_body_buffer(x->c, x->scratch);
	if (rc < 0) /* the client is going: nothing may pile up meanwhile */
		evbuffer_drain(x->scratch, evbuffer_get_length(x->scratch));
	flow_check(x);
	return rc;
}

/* ---- Streamable POST replies ------------------------------------------------- */

static void finish_post(struct transport_sse_ex *x)
{
	if (sx_ended(x))
		return;
	if (x->state == SXS_STREAMING) {
		conn_reply_end(x->c);
		sx_end(x);
		return;
	}
	size_t n = x->replies ? json_array_size(x->replies) : 0;
	if (n == 0) {
		/* Nothing to say: every request was withdrawn by the client. */
		reply_bytes(x, 202, NULL, NULL, 0);
		return;
	}
	int status = x->reply_status ? x->reply_status : 200;
	if (n == 1 && !sx_has(x, SXF_BATCH) && x->raw1)
		reply_bytes(x, status, "application/json", x->raw1, x->raw1_len);
	else
		reply_json(x, status, sx_has(x, SXF_BATCH) ? x->replies : json_array_get(x->replies, 0));
}

static int add_reply(struct transport_sse_ex *x, json_t *msg, const char *raw, size_t len,
                     int status)
{
	if (!x->replies && !(x->replies = json_array()))
		return -1;
	if (json_array_size(x->replies) == 0 && raw && !x->raw1 && (x->raw1 = malloc(len ? len : 1))) {
		memcpy(x->raw1, raw, len);
		x->raw1_len = len;
	} else if (x->raw1) {
		free(x->raw1);
		x->raw1 = NULL;
	}
	if (status && !x->reply_status)
		x->reply_status = status;
	return json_array_append(x->replies, msg);
}

/* Switches a waiting POST to an SSE reply: what was collected goes first. */
static int post_to_sse(struct transport_sse_ex *x)
{
	if (start_sse(x) < 0)
		return -1;
	sx_to(x, SXS_STREAMING);
	for (size_t i = 0; x->replies && i < json_array_size(x->replies); i++)
		write_event(x, json_array_get(x->replies, i), NULL, 0);
	json_decref(x->replies);
	x->replies = NULL;
	return 0;
}

static int post_deliver(struct transport_sse_ex *x, json_t *msg, const char *raw, size_t len,
                        int status, int is_response, int local)
{
	/* A server message needs the stream. So does any message from the
	 * upstream when the client takes SSE: a legacy upstream's response
	 * may overtake the 202 that would have started it (ops_accepted). */
	int to_sse = !is_response || (sx_has(x, SXF_ACCEPTS_SSE) && !local);
	if (x->state != SXS_STREAMING && to_sse && post_to_sse(x) < 0)
		return -1;
	if (is_response)
		x->waiting--;
	int rc = x->state == SXS_STREAMING ? write_event(x, msg, raw, len)
	                                   : add_reply(x, msg, raw, len, status);
	if (is_response && x->waiting <= 0)
		finish_post(x);
	return rc;
}

/* ---- the session's client ops ------------------------------------------------- */

static enum inspect_verdict inspect_one(struct transport_sse_ex *x, enum inspect_dir dir,
                                        json_t *msg, const json_t *request, int *modified,
                                        json_t **answer)
{
	struct inspect_msg im = {
		.dir = dir,
		.kind = jrpc_classify(msg),
		.msg = msg,
		.request = dir == INSPECT_FROM_CLIENT ? msg : request,
		.where = x->link.where,
	};
	if (x->s)
		x->link.where->upstream_transport = session_transport_str(x->s);
	enum inspect_verdict v = inspect_message(x->ctx->insp, &im);
	*modified = im.modified;
	if (answer)
		*answer = im.answer;
	else
		json_decref(im.answer);
	if (v != INSPECT_FORWARD)
		log_msg(LOG_DEBUG, "#%llu %s %s by %s", x->link.where->conn_id,
		        v == INSPECT_DROP ? "dropped" : "answered", jrpc_kind_str(im.kind),
		        im.decided_by ? im.decided_by : "?");
	return v;
}

static int ops_deliver(void *target, const struct session_out *m)
{
	struct transport_sse_ex *x = check(target);
	json_t *msg = m->msg, *own = NULL;
	const char *raw = m->raw;
	size_t len = m->raw_len;
	enum jrpc_kind k = jrpc_classify(msg);
	int is_response = k == JRPC_RESULT || k == JRPC_ERROR;

	if (sx_ended(x) || (x->state == SXS_HEAD_PENDING && legacy_head(x) < 0))
		return -1;
	if (!m->local) {
		int modified = 0;
		if (inspect_one(x, INSPECT_FROM_SERVER, msg, m->request, &modified, NULL) !=
		    INSPECT_FORWARD) {
			if (!is_response)
				return 0;
			/* A response still owes its request an answer. */
			own = jrpc_error_new(jrpc_id(msg), JRPC_INTERNAL_ERROR,
			                     "mcpwarden: the response was withheld by a hook", NULL);
			if (!own)
				return -1;
			msg = own;
			raw = NULL;
		} else if (modified) {
			raw = NULL;
		}
	}
	if (m->local && is_response && (x->kind == SX_POST || x->kind == SX_CALL)) {
		/* mcpwarden's own answer: the request itself went unanswered, and
		 * the record's note says why. */
		const char *text = json_string_value(json_object_get(json_object_get(msg, "error"),
		                                                     "message"));
		snprintf(x->note, sizeof(x->note), "%s", text ? text : "mcpwarden could not answer");
		set_outcome(x, m->status == 504 ? INSPECT_END_TIMEOUT : INSPECT_END_UPSTREAM_ERROR,
		            x->note);
	}
	int rc;
	if (x->kind == SX_POST && refusal_fits(x, m->refusal)) {
		x->waiting--;
		reply_refusal(x, m->refusal);
		rc = 0;
	} else if (x->kind == SX_POST)
		rc = post_deliver(x, msg, raw, len, m->status, is_response, m->local);
	else if (x->kind == SX_CALL)
		rc = call_deliver(x, msg, raw, len, m, is_response);
	else
		rc = write_event(x, msg, raw, len);
	json_decref(own);
	return rc;
}

static int ops_can_stream(void *target)
{
	struct transport_sse_ex *x = check(target);
	return x->kind == SX_POST && sx_has(x, SXF_ACCEPTS_SSE) && !sx_ended(x);
}

static void ops_withdrawn(void *target)
{
	struct transport_sse_ex *x = check(target);
	if (x->kind == SX_CALL) {
		/* Cancelled by the client: no answer is due (nor a record's). */
		x->waiting--;
		set_outcome(x, INSPECT_END_CANCELLED, "the client cancelled the request");
		call_accepted(x);
		call_maybe_done(x);
		return;
	}
	if (x->kind != SX_POST || sx_ended(x))
		return;
	if (--x->waiting <= 0)
		finish_post(x);
}

static void ops_end_stream(void *target, const char *why)
{
	struct transport_sse_ex *x = check(target);
	if (sx_ended(x))
		return;
	if (x->state == SXS_HEAD_PENDING) {
		char msg[512];
		snprintf(msg, sizeof(msg), "upstream %s: %s", up_conf(x)->url_safe, why);
		set_outcome(x, INSPECT_END_UPSTREAM_ERROR, why);
		reply_error(x, 502, NULL, JRPC_UPSTREAM_ERROR, msg); /* ends x */
		return;
	}
	sx_end(x);
	/* Why the stream ended is the access log's note; not every end is
	 * a failure (DELETE, idle expiry). */
	if (!*x->link.error)
		*x->link.error = why;
	conn_reply_end(x->c);
}

static void ops_opened(void *target)
{
	struct transport_sse_ex *x = check(target);
	if (x->state == SXS_HEAD_PENDING && legacy_head(x) < 0)
		conn_abort(x->c, "out of memory");
}

/* The upstream took a request of this POST: a client that accepts SSE gets
 * its reply head now, as SDK servers send it at once, so that it learns the
 * request is under way and keep-alives flow during a long call. */
static void ops_accepted(void *target)
{
	struct transport_sse_ex *x = check(target);
	if (x->kind == SX_CALL) {
		call_accepted(x);
		return;
	}
	if (x->kind != SX_POST || !sx_has(x, SXF_ACCEPTS_SSE) || x->state != SXS_NEW)
		return;
	if (post_to_sse(x) < 0)
		conn_abort(x->c, "out of memory");
}

static const struct session_client_ops client_ops = {
	ops_deliver, ops_can_stream, ops_withdrawn, ops_end_stream, ops_opened, ops_accepted,
};

struct session_table *transport_sse_sessions_new(struct px_ctx *ctx)
{
	const struct px_config *cfg = ctx->cfg;
	struct session_limits lim = {
		.max_sessions = cfg->limits.max_sessions,
		.max_pending = cfg->limits.max_session_pending,
		.max_queue = cfg->limits.max_session_queue,
		.max_queue_bytes = cfg->limits.max_output_bytes,
		.idle_us = (uint64_t)cfg->timeouts.session_idle_ms * 1000u,
		.request_us = (uint64_t)cfg->timeouts.request_ms * 1000u,
	};
	/* replicas: fixed at start (a change needs a restart). */
	memcpy(lim.id_prefix, cfg->replica_id, sizeof(lim.id_prefix));
	return session_table_new(ctx, &lim, &client_ops);
}

/* ---- client messages ------------------------------------------------------------ */

/* Inspects and sends each message of a body. Answers from hooks, and
 * errors for requests that could not be sent, go to `answers` (legacy: the
 * stream; Streamable: this POST's reply). target is where responses go. */
static void client_messages(struct transport_sse_ex *x, json_t *body, struct evbuffer *raw,
                            void *target)
{
	size_t n = jrpc_body_count(body);
	/* A legacy call's answers go to the client's stream. */
	struct transport_sse_ex *stream = x->kind == SX_CALL ? session_stream(x->s) : NULL;

	for (size_t i = 0; i < n && session_state(x->s) != SESSION_ENDED; i++) {
		json_t *m = jrpc_body_at(body, i), *answer = NULL;
		int modified = 0;
		enum inspect_verdict v = inspect_one(x, INSPECT_FROM_CLIENT, m, NULL, &modified,
		                                     &answer);
		int is_request = jrpc_classify(m) == JRPC_REQUEST;
		if (v != INSPECT_FORWARD) {
			if (answer) {
				if (x->kind == SX_CALL) {
					if (stream)
						write_event(stream, answer, NULL, 0);
				} else {
					add_reply(x, answer, NULL, 0, 0);
				}
			}
			json_decref(answer);
			continue;
		}
		/* The client's own bytes go upstream when the body is this one
		 * message and no hook changed it. */
		const char *bytes = NULL;
		size_t len = 0;
		if (n == 1 && !json_is_array(body) && !modified && raw) {
			len = evbuffer_get_length(raw);
			bytes = (const char *)evbuffer_pullup(raw, -1);
		}
		const char *why = NULL;
		if (is_request)
			x->waiting++;
		/* telemetry: the POST this sends upstream names our CLIENT span */
		tracehand_set(x->link.where->up_traceparent);
		int sent = session_client_message(x->s, m, bytes, len, target, &why);
		tracehand_set(NULL);
		if (sent == 0)
			continue;
		log_msg(LOG_WARN, "#%llu session %.8s…: %s not sent upstream: %s",
		        x->link.where->conn_id, x->sid, jrpc_kind_str(jrpc_classify(m)), why);
		if (!is_request)
			continue;
		x->waiting--;
		json_t *err = jrpc_error_new(jrpc_id(m), JRPC_UPSTREAM_ERROR, why, NULL);
		if (err) {
			if (x->kind != SX_CALL) {
				add_reply(x, err, NULL, 0, 0);
			} else {
				set_outcome(x, INSPECT_END_UPSTREAM_ERROR, why);
				if (stream)
					write_event(stream, err, NULL, 0);
			}
		}
		json_decref(err);
	}
}

/* ---- legacy calls ------------------------------------------------------------ */

/* A copy of what `where` names that outlives the POST (its strings are
 * the POST's request's and the running configuration's). */
static int where_copy(struct transport_sse_ex *call, const struct inspect_where *w)
{
	/* telemetry: the W3C headers too (the call's span is the POST's) */
	const char *src[] = {w->client, w->client_name, w->upstream, w->protocol, w->traceparent,
	                     w->tracestate, w->user_agent};
	const char **dst[] = {&call->own_where.client, &call->own_where.client_name,
	                      &call->own_where.upstream, &call->own_where.protocol,
	                      &call->own_where.traceparent, &call->own_where.tracestate,
	                      &call->own_where.user_agent};
	size_t n = sizeof(src) / sizeof(src[0]), total = 0;

	for (size_t i = 0; i < n; i++)
		total += src[i] ? strlen(src[i]) + 1 : 0;
	call->own_strs = malloc(total ? total : 1);
	if (!call->own_strs)
		return -1;
	char *p = call->own_strs;
	call->own_where = (struct inspect_where){
		.conn_id = w->conn_id,
		.session_id = call->sid,
		.era = w->era,                         /* static */
		.http_method = "POST",
		.client_transport = w->client_transport, /* static */
		.upstream_transport = w->upstream_transport,
		.start_us = w->start_us,
	};
	for (size_t i = 0; i < n; i++) {
		if (!src[i])
			continue;
		size_t l = strlen(src[i]) + 1;
		memcpy(p, src[i], l);
		*dst[i] = p;
		p += l;
	}
	return 0;
}

/* The call of a legacy POST (x), with the session x is bound to. */
static struct transport_sse_ex *call_new(struct transport_sse_ex *x)
{
	struct transport_sse_ex *call = calloc(1, sizeof(*call));
	if (!call)
		return NULL;
	call->magic = SX_MAGIC;
	call->kind = SX_CALL;
	call->state = SXS_CALL_POSTING;
	call->ctx = x->ctx;
	call->req = NULL;
	call->up = x->up;
	memcpy(call->sid, x->sid, sizeof(call->sid));
	if (where_copy(call, x->link.where) < 0) {
		free(call);
		return NULL;
	}
	call->own_end = INSPECT_END_OK;
	call->link = (struct transport_sse_link){&call->own_where, &call->own_end, &call->own_error};
	call->s = x->s;
	session_ref(call->s);
	call->post = x;
	x->call = call;
	return call;
}

/* The POST is answered 202, as the legacy SDK servers do: the upstream
 * took the request (or there is nothing to wait for). Once. */
static void call_accepted(struct transport_sse_ex *x)
{
	struct transport_sse_ex *post = x->post;
	if (x->state != SXS_CALL_POSTING)
		return;
	sx_to(x, SXS_CALL_REPLIED);
	if (!sx_ended(post))
		reply_bytes(post, 202, "text/plain; charset=utf-8", "Accepted", 8);
}

/* An answer for the call: to the client's stream, or, for a refusal the
 * POST can still carry, on the POST. A proxy-made error (local) is the
 * record's note: the request itself went unanswered. */
static int call_deliver(struct transport_sse_ex *x, json_t *msg, const char *raw, size_t len,
                        const struct session_out *m, int is_response)
{
	int rc = 0;

	if (refusal_fits(x, m->refusal)) {
		sx_to(x, SXS_CALL_REPLIED);
		reply_refusal(x->post, m->refusal);
	} else {
		call_accepted(x);
		struct transport_sse_ex *stream = session_stream(x->s);
		rc = stream ? write_event(stream, msg, raw, len) : -1;
	}
	if (is_response) {
		x->waiting--;
		call_maybe_done(x);
	}
	return rc;
}

/* Frees the call. */
static void call_free(struct transport_sse_ex *x)
{
	if (x->post)
		x->post->call = NULL;
	session_detach(x->s, x);
	session_unref(x->s);
	free(x->own_strs);
	x->magic = 0;
	free(x);
}

/* The call ends once its POST ended and nothing is due any more: its
 * exchange is told to the hooks (one record per request, its outcome the
 * answer's, its HTTP status the POST's). `deferred`: the POST's own HTTP
 * exchange was counted when it ended. */
static void call_maybe_done(struct transport_sse_ex *x)
{
	if (x->waiting > 0 || x->state != SXS_CALL_DETACHED)
		return;
	uint64_t now = clock_mono_us();
	struct inspect_exchange done = {
		.end = x->own_end,
		.where = &x->own_where,
		.status = x->post_status,
		.latency_us = now > x->own_where.start_us ? now - x->own_where.start_us : 0,
		.bytes_in = x->post_bytes_in,
		.bytes_out = x->post_bytes_out,
		.error = x->own_error,
		.deferred = 1,
	};
	inspect_exchange_done(x->ctx->insp, &done);
	call_free(x);
}

/* The POST's exchange ends (x is the POST): its call learns how. */
static void call_post_done(struct transport_sse_ex *x, const char *client_error)
{
	struct transport_sse_ex *call = x->call;
	x->call = NULL;
	call->post = NULL;
	int replied = call->state == SXS_CALL_REPLIED;
	sx_to(call, SXS_CALL_DETACHED);
	call->post_status = conn_reply_status(x->c);
	call->post_bytes_in = conn_bytes_in(x->c);
	call->post_bytes_out = conn_bytes_out(x->c);
	if (client_error && !replied)
		set_outcome(call, INSPECT_END_CANCELLED, "the client left before its POST was answered");
	call_maybe_done(call);
}

/* ---- legacy HTTP+SSE clients ---------------------------------------------------- */

/* The legacy stream's head and its first event, which says where to POST:
 * same origin, relative. */
static int legacy_head(struct transport_sse_ex *x)
{
	char ep[1200];

	/* Streaming from here on, even when the head fails (the caller aborts
	 * the conn): the head is never tried twice. */
	sx_to(x, SXS_STREAMING);
	if (start_sse(x) < 0)
		return -1;
	snprintf(ep, sizeof(ep), "%s?sessionId=%s", up_conf(x)->messages_path, x->sid);
	struct sse_event ev = {.event = "endpoint", .event_len = 8, .data = ep,
	                       .data_len = strlen(ep), .retry = -1};
	sse_write_event(x->scratch, &ev);
	return conn_reply_body_buffer(x->c, x->scratch);
}

static void legacy_get(struct transport_sse_ex *x)
{
	struct session_table *t = x->ctx->translated;
	const char *why = NULL;

	struct session *s = session_new(t, x->up, SESSION_FACE_SSE, x->link.where->client_name, &why);
	if (!s) {
		reply_error(x, 503, NULL, JRPC_UPSTREAM_ERROR, why);
		return;
	}
	bind_session(x, s);
	x->link.where->session_id = x->sid;
	x->kind = SX_SSE_STREAM;
	if (session_connect(s, passed_authorization(x), 0) < 0) {
		session_end(s, "out of memory");
		conn_abort(x->c, "out of memory");
		return;
	}
	if (session_state(s) == SESSION_CONNECTING) {
		/* A legacy upstream: the client's stream starts once the
		 * upstream's did, so a dead upstream is a 502 here, not a stream
		 * that opens and dies. */
		sx_to(x, SXS_HEAD_PENDING);
	} else if (legacy_head(x) < 0) {
		session_end(s, "out of memory");
		conn_abort(x->c, "out of memory");
		return;
	}
	session_attach_stream(s, x);
}

/* The value of `name` in the query of url (copied), or -1. */
static int query_param(const char *url, const char *name, char *out, size_t outlen)
{
	const char *q = strchr(url, '?');
	size_t nl = strlen(name);
	while (q) {
		q++;
		if (strncmp(q, name, nl) == 0 && q[nl] == '=') {
			const char *v = q + nl + 1;
			size_t vl = strcspn(v, "&#");
			if (vl == 0 || vl >= outlen)
				return -1;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return 0;
		}
		q = strchr(q, '&');
	}
	return -1;
}

static int same_client(const struct transport_sse_ex *x, const struct session *s)
{
	const char *a = session_client_name(s), *b = x->link.where->client_name;
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void legacy_post(struct transport_sse_ex *x, json_t *body, struct evbuffer *raw)
{
	char sid[SESSION_ID_MAX + 8];  /* replicas */
	struct session *s = NULL;

	if (query_param(http_msg_url(x->req), "sessionId", sid, sizeof(sid)) == 0)
		s = session_find(x->ctx->translated, sid);
	if (!s || session_face(s) != SESSION_FACE_SSE || session_upstream(s) != x->up ||
	    !same_client(x, s) || !session_stream(s)) {
		reply_error(x, 404, NULL, SX_SESSION_NOT_FOUND, "Session not found");
		return;
	}
	bind_session(x, s);
	x->link.where->session_id = x->sid;
	struct transport_sse_ex *call = call_new(x);
	if (!call) {
		conn_abort(x->c, "out of memory");
		return;
	}
	client_messages(call, body, raw, call);
	/* Nothing to wait for (notifications, responses, hooks' answers):
	 * accepted now. Else the upstream's take on the request decides. */
	if (call->waiting <= 0)
		call_accepted(call);
}

/* ---- Streamable HTTP clients -------------------------------------------------- */

static struct session *streamable_session(struct transport_sse_ex *x)
{
	const char *sid = http_msg_get(x->req, HH_MCP_SESSION_ID);
	struct session *s = sid ? session_find(x->ctx->translated, sid) : NULL;

	if (!sid) {
		reply_error(x, 400, NULL, JRPC_UPSTREAM_ERROR,
		            "Bad Request: No valid session ID provided");
		return NULL;
	}
	if (!s || session_face(s) != SESSION_FACE_STREAMABLE || session_upstream(s) != x->up ||
	    !same_client(x, s)) {
		/* Unknown, expired or ended: the client's cue to start again. */
		reply_error(x, 404, NULL, SX_SESSION_NOT_FOUND, "Session not found");
		return NULL;
	}
	return s;
}

static int accepts_sse(const struct http_msg *req)
{
	const char *a = http_msg_get(req, HH_ACCEPT);
	return a && strcasestr(a, "text/event-stream") != NULL;
}

/* A POST that waits: its reply comes from deliveries, or now. */
static void post_wait_or_reply(struct transport_sse_ex *x)
{
	if (x->waiting > 0)
		return;
	finish_post(x);
	x->kind = SX_LOCAL;
}

static struct session *open_streamable(struct transport_sse_ex *x, int streamable_failed)
{
	const char *why = NULL;
	struct session *s = session_new(x->ctx->translated, x->up, SESSION_FACE_STREAMABLE,
	                                x->link.where->client_name, &why);
	if (!s) {
		reply_error(x, 503, NULL, JRPC_UPSTREAM_ERROR, why);
		return NULL;
	}
	bind_session(x, s);
	x->link.where->reply_session_id = x->sid;
	if (session_connect(s, passed_authorization(x), streamable_failed) < 0) {
		session_end(s, "out of memory");
		reply_error(x, 500, NULL, JRPC_INTERNAL_ERROR, "out of memory");
		return NULL;
	}
	return s;
}

static void streamable_post(struct transport_sse_ex *x, json_t *body, struct evbuffer *raw)
{
	sx_put(x, SXF_ACCEPTS_SSE, accepts_sse(x->req));
	sx_put(x, SXF_BATCH, json_is_array(body));
	if (!http_msg_get(x->req, HH_MCP_SESSION_ID)) {
		json_t *m = json_is_object(body) ? body : NULL;
		if (!m || jrpc_classify(m) != JRPC_REQUEST || strcmp(jrpc_method(m), "initialize") != 0) {
			reply_error(x, 400, m ? jrpc_id(m) : NULL, JRPC_UPSTREAM_ERROR,
			            "Bad Request: No valid session ID provided");
			return;
		}
		if (!open_streamable(x, 0))
			return;
	} else {
		struct session *s = streamable_session(x);
		if (!s)
			return;
		bind_session(x, s);
	}
	x->kind = SX_POST; /* from here on, deliveries and withdrawals count */
	client_messages(x, body, raw, x);
	post_wait_or_reply(x);
}

static void streamable_get(struct transport_sse_ex *x)
{
	struct session *s = streamable_session(x);
	if (!s)
		return;
	bind_session(x, s);
	if (session_stream(s)) {
		/* One standalone stream per session, as the SDK servers do. */
		reply_error(x, 409, NULL, JRPC_UPSTREAM_ERROR,
		            "Conflict: only one SSE stream is allowed per session");
		return;
	}
	if (start_sse(x) < 0) {
		conn_abort(x->c, "out of memory");
		return;
	}
	sx_to(x, SXS_STREAMING);
	x->kind = SX_STREAM;
	session_attach_stream(s, x);
}

static void streamable_delete(struct transport_sse_ex *x)
{
	struct session *s = streamable_session(x);
	if (!s)
		return;
	bind_session(x, s);
	session_end(s, "the client ended the session (DELETE)");
	reply_bytes(x, 200, NULL, NULL, 0);
}

static void method_not_allowed(struct transport_sse_ex *x, const char *allow)
{
	struct evbuffer *h = evbuffer_new();
	json_t *err = jrpc_error_new(NULL, JRPC_INVALID_REQUEST, "Method not allowed", NULL);
	char *s = err ? json_dumps(err, JSON_COMPACT) : NULL;
	x->kind = SX_LOCAL;
	set_outcome(x, INSPECT_END_REJECTED, NULL);
	if (h && s) {
		evbuffer_add_printf(h, "Allow: %s\r\nContent-Type: application/json\r\n", allow);
		conn_reply_head(x->c, 405, h, (int64_t)strlen(s));
		conn_reply_body(x->c, s, strlen(s));
		conn_reply_end(x->c);
	} else {
		conn_abort(x->c, "out of memory");
	}
	free(s);
	json_decref(err);
	if (h)
		evbuffer_free(h);
}

/* ---- entry points ------------------------------------------------------------------ */

static struct transport_sse_ex *ex_new(struct conn *c, const struct http_msg *req, size_t up,
                                       struct transport_sse_link link)
{
	struct transport_sse_ex *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->magic = SX_MAGIC;
	x->c = c;
	x->ctx = conn_ctx(c);
	x->req = req;
	x->up = up;
	x->link = link;
	x->kind = SX_LOCAL;
	return x;
}

static int path_is(const char *path, const char *want)
{
	return want && strcmp(path, want) == 0;
}

int transport_sse_claims(struct px_ctx *ctx, const struct http_msg *req, const char *path,
                         size_t *up)
{
	const struct px_config *cfg = ctx->cfg;
	struct session_table *t = ctx->translated;

	if (!t)
		return 0;
	for (size_t i = 0; i < cfg->nups; i++) {
		if (path_is(path, cfg->ups[i].sse_path) || path_is(path, cfg->ups[i].messages_path)) {
			*up = i;
			return 1;
		}
	}
	for (size_t i = 0; i < cfg->nups; i++) {
		if (strcmp(path, cfg->ups[i].path) != 0)
			continue;
		*up = i;
		const char *sid = http_msg_get(req, HH_MCP_SESSION_ID);
		if (sid && session_find(t, sid))
			return 1;
		enum px_transport tr = session_table_transport(t, i);
		return tr == PX_TRANSPORT_SSE ||
		       (tr == PX_TRANSPORT_AUTO &&
		        upstream_sse_auto_first(&cfg->ups[i]) == PX_TRANSPORT_SSE);
	}
	return 0;
}

struct px_ctx *transport_sse_route(struct px_ctx *ctx, const struct http_msg *req)
{
	const struct px_config *cfg = ctx->cfg;
	const char *url = http_msg_url(req);
	char path[1024], sid[128];
	const char *id = NULL;

	if (ctx->proc->nworkers < 2 || !ctx->proc->affinity || !ctx->translated)
		return NULL;
	http_url_path(path, sizeof(path), url);
	for (size_t i = 0; i < cfg->nups && !id; i++) {
		if (path_is(path, cfg->ups[i].messages_path))
			id = query_param(url, "sessionId", sid, sizeof(sid)) == 0 ? sid : NULL;
		else if (strcmp(path, cfg->ups[i].path) == 0)
			id = http_msg_get(req, HH_MCP_SESSION_ID);
	}
	int w = affinity_get(ctx->proc->affinity, id);
	return w >= 0 && (size_t)w < ctx->proc->nworkers ? ctx->proc->workers[w] : NULL;
}

struct transport_sse_ex *transport_sse_start(struct conn *c, const struct http_msg *req,
                                             size_t up, json_t *body, struct evbuffer *raw,
                                             struct transport_sse_link link)
{
	struct transport_sse_ex *x = ex_new(c, req, up, link);
	const char *url = http_msg_url(req), *method = http_msg_method(req);
	char path[1024];

	if (!x) {
		if (raw)
			evbuffer_free(raw);
		conn_abort(c, "out of memory");
		return NULL;
	}
	const struct px_upstream_conf *uc = up_conf(x);
	http_url_path(path, sizeof(path), url);
	int post = strcmp(method, "POST") == 0;
	if (path_is(path, uc->sse_path)) {
		if (strcmp(method, "GET") == 0)
			legacy_get(x);
		else
			method_not_allowed(x, "GET");
	} else if (path_is(path, uc->messages_path)) {
		if (post && body)
			legacy_post(x, body, raw);
		else
			method_not_allowed(x, "POST");
	} else if (post && body) {
		streamable_post(x, body, raw);
	} else if (strcmp(method, "GET") == 0) {
		streamable_get(x);
	} else if (strcmp(method, "DELETE") == 0) {
		streamable_delete(x);
	} else {
		method_not_allowed(x, "GET, POST, DELETE");
	}
	if (raw)
		evbuffer_free(raw);
	return x;
}

int transport_sse_probe(struct px_ctx *ctx, size_t up, const struct http_msg *req,
                        const json_t *body, int status, const char *content_type)
{
	const struct px_upstream_conf *uc = &ctx->cfg->ups[up];

	/* Cheapest first: every call in a session carries its id. */
	if (!ctx->translated || uc->transport != PX_TRANSPORT_AUTO || !json_is_object(body) ||
	    http_msg_get(req, HH_MCP_SESSION_ID) ||
	    jrpc_classify(body) != JRPC_REQUEST || strcmp(jrpc_method(body), "initialize") != 0)
		return 0;
	if (status >= 200 && status < 300) {
		session_table_set_detected(ctx->translated, up, PX_TRANSPORT_STREAMABLE);
		return 0;
	}
	if (!upstream_sse_probe_refused(status, content_type))
		return 0;
	log_msg(LOG_INFO, "upstream %s (%s): Streamable HTTP initialize answered %d: trying the legacy "
	        "HTTP+SSE transport", uc->name, uc->url_safe, status);
	return 1;
}

struct transport_sse_ex *transport_sse_adopt(struct conn *c, const struct http_msg *req,
                                             size_t up, json_t *body,
                                             struct transport_sse_link link)
{
	struct transport_sse_ex *x = ex_new(c, req, up, link);
	const char *why = NULL;

	if (!x) {
		conn_abort(c, "out of memory");
		return NULL;
	}
	sx_put(x, SXF_ACCEPTS_SSE, accepts_sse(req));
	struct session *s = open_streamable(x, 1);
	if (!s)
		return x;
	/* The hooks saw it in transport_http already: straight to the session. */
	x->kind = SX_POST;
	x->waiting = 1;
	if (session_client_message(s, body, NULL, 0, x, &why) < 0) {
		x->waiting = 0;
		reply_error(x, 502, jrpc_id(body), JRPC_UPSTREAM_ERROR, why);
		session_end(s, why);
	}
	return x;
}

void transport_sse_drained(struct transport_sse_ex *x)
{
	check(x);
	if (sx_has(x, SXF_PAUSED) && !conn_output_full(x->c)) {
		x->flags &= ~SXF_PAUSED;
		session_resume(x->s);
	}
}

void transport_sse_shutdown(struct transport_sse_ex *x)
{
	check(x);
	/* Streams end now so clients reconnect elsewhere; POSTs finish. */
	if (x->state == SXS_HEAD_PENDING) {
		sx_end(x);
		reply_error(x, 503, NULL, JRPC_UPSTREAM_ERROR, "mcpwarden is shutting down");
	} else if ((x->kind == SX_SSE_STREAM || x->kind == SX_STREAM) && !sx_ended(x)) {
		sx_end(x);
		conn_reply_end(x->c);
	}
}

void transport_sse_free(struct transport_sse_ex *x, const char *client_error)
{
	if (!x)
		return;
	check(x);
	if (client_error && x->kind == SX_POST && x->waiting > 0)
		log_msg(LOG_DEBUG, "#%llu session %.8s…: client left with %d response%s due",
		        x->link.where->conn_id, x->sid, x->waiting, x->waiting == 1 ? "" : "s");
	if (x->call)
		call_post_done(x, client_error);
	if (x->keepalive)
		event_free(x->keepalive);
	if (x->s) {
		if (sx_has(x, SXF_PAUSED))
			session_resume(x->s);
		session_detach(x->s, x);
		session_unref(x->s);
	}
	if (x->scratch)
		evbuffer_free(x->scratch);
	json_decref(x->replies);
	free(x->raw1);
	x->magic = 0;
	free(x);
}

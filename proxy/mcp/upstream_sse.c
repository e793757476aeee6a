/* upstream_sse: see upstream_sse.h.
 * Why this file is long (over 800 lines): both upstream transports, the auto probe between them
 * and the face's state machine share the op list and the kick; the probe's fallback moves out first.
 *
 *   upstream_sse
 *     qhead ──▶ outmsg ─▶ outmsg ─▶ NULL     messages not sent yet, in order
 *     ops   ──▶ op ─▶ op ─▶ NULL             every upstream_req in flight
 *     stream ─▶ one of ops (legacy GET / Streamable standalone GET)
 *
 * Each op owns one upstream_req. upstream.c forbids freeing a request from
 * inside its own callbacks, so an op that finished (or whose callback
 * refused more) is only marked, and freed from the `kick` event, which is
 * also where queued messages are sent and where closing happens. Nothing
 * here calls back into the session from within upstream_sse_send() or
 * upstream_sse_close().
 */
#include "proxy/mcp/upstream_sse.h"
#include "proxy/mcp/tracehand.h" /* telemetry */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/net/http_parse.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "proxy/base/flagnames.h"
#include "proxy/base/sse.h"
#include "proxy/net/upstream.h"
#include "proxy/base/media.h"

#define UPSSE_MAGIC 0x75707373u /* "upss" */

/* An upstream error body is read only to find a JSON-RPC error in it. */
#define ERROR_BODY_MAX (64u * 1024)
/* A dropped standalone GET stream is re-opened this often in a row. */
#define GET_RETRIES 3
#define GET_RETRY_MS 500
/* A cut POST stream is resumed (GET + Last-Event-ID) this often. */
#define RESUME_MAX 2

struct outmsg {
	json_t *msg;            /* owned reference */
	char *raw;              /* owned: the bytes to send */
	size_t len;
	char traceparent[TRACEHAND_MAX]; /* telemetry: tracehand_get()'s, or "" */
	struct outmsg *next;
};

enum op_kind {
	OP_POST,    /* one message: to the legacy endpoint, or the Streamable URL */
	OP_STREAM,  /* the legacy GET, or the Streamable standalone GET */
	OP_RESUME,  /* GET + Last-Event-ID: the rest of a cut Streamable POST reply */
	OP_DELETE,  /* ends the Streamable session */
};

enum op_body {
	BODY_IGNORE,  /* drained (202, legacy POST answers, DELETE) */
	BODY_JSON,    /* collected, then parsed into messages */
	BODY_SSE,     /* parsed event by event */
	BODY_ERROR,   /* a refusal: collected (bounded) for its JSON-RPC error */
};

/* What an op is and what went by on it, one bit each of op->flags. */
enum op_flag {
	OPF_IS_REQUEST = 1u << 0,   /* sent is a request: a response is owed */
	OPF_HAD_SESSION = 1u << 1,  /* sent with our Mcp-Session-Id */
	OPF_ANSWERED = 1u << 2,     /* the response to `sent` went by */
	OPF_FINISHED = 1u << 3,     /* no more callbacks will come */
};

struct op {
	struct upstream_sse *f;     /* borrowed */
	enum op_kind kind;
	struct upstream_req *req;   /* owned */
	struct outmsg *out;         /* owned: the message sent (POST), or NULL */
	json_t *sent;               /* borrowed from out, or owned (OP_RESUME) */
	unsigned flags;             /* enum op_flag */
	int status;
	char *content_type, *www_authenticate; /* owned: of a refusal, or NULL */
	enum op_body body;
	struct evbuffer *buf;       /* owned */
	struct sse_reader *sse;     /* owned */
	char last_id[256];          /* the last SSE event id seen on it */
	int resumes;
	struct op *next;
};

/* The face's life. Every change goes through face_to, which asserts it is
 * one of face_moves and logs it (debug); the last three are the closing:
 *
 *   STARTING --on_ready--> READY --on_closed--> ENDED
 *       |  \______________________on_closed______^ |
 *       +-------------------+----------------------+
 *                           | upstream_sse_close (from any of the three)
 *                           v
 *   CLOSING --kick--> DRAINING --the last op is gone--> FINISHED
 */
enum face_state {
	/* Nothing told yet: legacy waits for its `endpoint` event, Streamable
	 * for its first POST to be taken; tr is the transport tried now, and
	 * UF_FALLBACK may still switch it, once. Messages queue meanwhile. */
	UPSSE_STARTING,
	/* on_ready was called, once: the transport is fixed (no UF_FALLBACK). */
	UPSSE_READY,
	/* on_closed was called, once (the upstream session is over); the
	 * owner is to close the face. What is in flight runs on until then. */
	UPSSE_ENDED,
	/* upstream_sse_close ran: the queue is dropped, nothing new is sent,
	 * no callback reaches the owner but on_finished; the kick tears down. */
	UPSSE_CLOSING,
	/* The kick freed every op and sent the DELETE if there is a session id:
	 * on_finished comes once that DELETE is over (at once without it). */
	UPSSE_DRAINING,
	/* on_finished was called: the owner may free the face. Final. */
	UPSSE_FINISHED,
};
#define UPSSE_NSTATES (UPSSE_FINISHED + 1)

#define M(st) (1u << (st))
static const unsigned face_moves[UPSSE_NSTATES] = {
	[UPSSE_STARTING] = M(UPSSE_READY) | M(UPSSE_ENDED) | M(UPSSE_CLOSING),
	[UPSSE_READY] = M(UPSSE_ENDED) | M(UPSSE_CLOSING),
	[UPSSE_ENDED] = M(UPSSE_CLOSING),
	[UPSSE_CLOSING] = M(UPSSE_DRAINING),
	[UPSSE_DRAINING] = M(UPSSE_FINISHED),
	[UPSSE_FINISHED] = 0,
};
#undef M

static const char *const face_state_names[UPSSE_NSTATES] = {
	"starting", "ready", "ended", "closing", "draining", "finished",
};

/* One bit each of struct upstream_sse's flags word (upstream_sse_flags_str):
 * facts besides the state, each coming and going on its own. */
enum face_flag {
	UF_FALLBACK = 1u << 0,        /* auto: may still switch transport, once (STARTING only) */
	UF_POSTING = 1u << 1,         /* a POST that must finish first is out */
	UF_GET_STARTED = 1u << 2,     /* Streamable standalone GET tried */
	UF_PAUSED = 1u << 3,          /* backpressure: responses are not read */
};
#define UF_NFLAGS 4 /* the last flag is 1u << (UF_NFLAGS - 1) */

struct upstream_sse {
	unsigned magic;
	struct px_ctx *ctx;                     /* borrowed */
	struct upstream *u;                     /* borrowed */
	const struct upstream_sse_cbs *cbs;
	void *arg;
	enum px_transport tr;                   /* SSE or STREAMABLE: what is tried now */
	enum face_state state;                  /* changed by face_to only */
	unsigned flags;                         /* enum face_flag */
	struct op *ops;                         /* owned list */
	struct op *stream;                      /* borrowed from ops */
	struct outmsg *qhead, *qtail;           /* owned */
	size_t nq, max_q;
	char endpoint[2048];                    /* legacy: where to POST; "" until known */
	char session_id[256];                   /* Streamable: the upstream's Mcp-Session-Id */
	char protocol[64];                      /* Streamable: MCP-Protocol-Version to send */
	char *authorization;                    /* owned, or NULL */
	char detail[96];                        /* a refusal's reason, naming its status */
	unsigned get_failures;
	char get_last_id[256];
	struct event *kick;                     /* owned */
	struct event *retry;                    /* owned */
};

static const char *const face_flag_names[] = {
	"fallback", "posting", "get-started", "paused",
};

const char *upstream_sse_state_str(const struct upstream_sse *f)
{
	return face_state_names[f->state];
}

const char *upstream_sse_flags_str(const struct upstream_sse *f, char *buf, size_t len)
{
	_Static_assert(sizeof(face_flag_names) / sizeof(face_flag_names[0]) == UF_NFLAGS,
	               "a name per face_flag");
	_Static_assert(UF_PAUSED == 1u << (UF_NFLAGS - 1), "UF_NFLAGS is the count");
	return flagnames_str(f->flags, face_flag_names, UF_NFLAGS, buf, len);
}

static int face_has(const struct upstream_sse *f, unsigned flag)
{
	return (f->flags & flag) != 0;
}

static int op_has(const struct op *op, unsigned flag)
{
	return (op->flags & flag) != 0;
}

static const struct px_upstream_conf *uconf(const struct upstream_sse *f);

/* Every change of state: the table above says which are possible, and the
 * debug log tells a face's life. */
static void face_to(struct upstream_sse *f, enum face_state to)
{
	assert(face_moves[f->state] & (1u << to));
	log_msg(LOG_DEBUG, "upstream %s: face %s -> %s", uconf(f)->name, face_state_names[f->state],
	        face_state_names[to]);
	f->state = to;
}

/* upstream_sse_close ran: nothing new goes out, no callback but on_finished. */
static int closing(const struct upstream_sse *f)
{
	return f->state >= UPSSE_CLOSING;
}

/* auto, and the answer that says which transport this is not in yet
 * (UF_FALLBACK goes at on_ready, or when the transport switched). */
static int probing(const struct upstream_sse *f)
{
	return face_has(f, UF_FALLBACK);
}

/* ---- helpers ------------------------------------------------------------------ */

/* The upstream's configuration: always the running one (SIGHUP swaps it,
 * keeping the upstream's identity), so never cached here. */
static const struct px_upstream_conf *uconf(const struct upstream_sse *f)
{
	return upstream_conf(f->u);
}

static int visible_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return 0;
	return n > 0;
}

static int is_method(const json_t *msg, const char *m)
{
	const char *x = jrpc_method(msg);
	return x && strcmp(x, m) == 0;
}

static size_t target_path_len(const char *target)
{
	return strcspn(target, "?#");
}

int upstream_sse_url_is_sse(const struct px_upstream_conf *uc)
{
	size_t n = target_path_len(uc->target);
	return n >= 4 && strncmp(uc->target + n - 4, "/sse", 4) == 0;
}

static void kick(struct upstream_sse *f)
{
	event_active(f->kick, 0, 0);
}

/* on_closed, once, and never once closing. */
static void report_closed(struct upstream_sse *f, const char *detail)
{
	if (f->state != UPSSE_STARTING && f->state != UPSSE_READY)
		return;
	face_to(f, UPSSE_ENDED);
	f->cbs->on_closed(f->arg, detail);
}

/* on_ready, once: a second endpoint event or a later 2xx says nothing new
 * (and after on_closed or close the owner hears nothing more of it). */
static void set_ready(struct upstream_sse *f)
{
	if (f->state != UPSSE_STARTING)
		return;
	face_to(f, UPSSE_READY);
	f->flags &= ~UF_FALLBACK;
	f->cbs->on_ready(f->arg, f->tr);
}

/* ---- the endpoint event ----------------------------------------------------- */

/* Whether "host[:port]" (authority, n bytes) names the upstream. */
static int same_authority(const struct px_upstream_conf *uc, const char *a, size_t n, int https)
{
	const char *host = a, *port = NULL;
	size_t hl;

	if (memchr(a, '@', n))
		return 0; /* userinfo: not how a server names itself */
	if (n && a[0] == '[') {
		const char *rb = memchr(a, ']', n);
		if (!rb)
			return 0;
		host = a + 1;
		hl = (size_t)(rb - a - 1);
		if ((size_t)(rb - a) + 1 < n) {
			if (rb[1] != ':')
				return 0;
			port = rb + 2;
		}
	} else {
		const char *colon = memchr(a, ':', n);
		hl = colon ? (size_t)(colon - a) : n;
		if (colon)
			port = colon + 1;
	}
	char pbuf[8];
	size_t pl = port ? (size_t)(a + n - port) : 0;
	if (port && (pl == 0 || pl >= sizeof(pbuf)))
		return 0;
	if (port) {
		memcpy(pbuf, port, pl);
		pbuf[pl] = '\0';
	} else {
		snprintf(pbuf, sizeof(pbuf), "%d", https ? 443 : 80);
	}
	return !https == !uc->tls && strlen(uc->host) == hl && strncasecmp(uc->host, host, hl) == 0 &&
	       strcmp(uc->port, pbuf) == 0;
}

int upstream_sse_resolve_endpoint(const struct px_upstream_conf *uc, const char *data,
                                  size_t len, char *out, size_t outlen, const char **why)
{
	const char *p = data, *end = data + len;

	if (len == 0) {
		*why = "the upstream's endpoint event is empty";
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)data[i] <= 0x20 || (unsigned char)data[i] >= 0x7f) {
			*why = "the upstream's endpoint holds spaces or control characters";
			return -1;
		}
	}
	int https = len >= 8 && strncasecmp(p, "https://", 8) == 0;
	if (https || (len >= 7 && strncasecmp(p, "http://", 7) == 0) || (len >= 2 && p[0] == '/' &&
	                                                                p[1] == '/')) {
		p += https ? 8 : p[0] == '/' ? 2 : 7;
		if (data[0] == '/')
			https = uc->tls; /* scheme-relative: the upstream's own */
		const char *auth_end = p;
		while (auth_end < end && *auth_end != '/' && *auth_end != '?' && *auth_end != '#')
			auth_end++;
		if (!same_authority(uc, p, (size_t)(auth_end - p), https)) {
			*why = "the upstream's endpoint is on another origin";
			return -1;
		}
		p = auth_end;
	}
	const char *frag = memchr(p, '#', (size_t)(end - p));
	if (frag)
		end = frag;
	size_t rl = (size_t)(end - p);
	size_t base = target_path_len(uc->target);
	int w;
	if (rl == 0)
		w = snprintf(out, outlen, "%.*s", (int)base, uc->target);
	else if (p[0] == '/')
		w = snprintf(out, outlen, "%.*s", (int)rl, p);
	else if (p[0] == '?')
		w = snprintf(out, outlen, "%.*s%.*s", (int)base, uc->target, (int)rl, p);
	else {
		/* Relative path: against the directory of the URL's path. */
		size_t dir = base;
		while (dir > 0 && uc->target[dir - 1] != '/')
			dir--;
		w = snprintf(out, outlen, "%.*s%.*s", (int)dir, uc->target, (int)rl, p);
	}
	if (w < 0 || (size_t)w >= outlen) {
		*why = "the upstream's endpoint is too long";
		return -1;
	}
	if (out[0] != '/') {
		*why = "the upstream's endpoint is not a path";
		return -1;
	}
	return 0;
}

/* ---- requests --------------------------------------------------------------- */

static int own_header(const char *name)
{
	static const char *const own[] = {
		"host", "accept", "content-type", "content-length", "mcp-session-id",
		"mcp-protocol-version", "last-event-id", "connection", "transfer-encoding",
	};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (strcasecmp(name, own[i]) == 0)
			return 1;
	return 0;
}

/* A whole request for the upstream. body may be NULL. */
static struct evbuffer *build_request_tp(struct upstream_sse *f, const char *method,
                                         const char *target, const char *accept,
                                         const char *last_event_id, const char *body, size_t len,
                                         const char *trace_out)
{
	const struct px_upstream_conf *uc = uconf(f);
	struct evbuffer *out = evbuffer_new();
	int has_auth = 0;

	if (!out)
		return NULL;
	evbuffer_add_printf(out, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, uc->host_header);
	if (accept)
		evbuffer_add_printf(out, "Accept: %s\r\n", accept);
	if (f->tr == PX_TRANSPORT_STREAMABLE && f->session_id[0])
		evbuffer_add_printf(out, "Mcp-Session-Id: %s\r\n", f->session_id);
	if (f->tr == PX_TRANSPORT_STREAMABLE && f->protocol[0])
		evbuffer_add_printf(out, "MCP-Protocol-Version: %s\r\n", f->protocol);
	if (last_event_id)
		evbuffer_add_printf(out, "Last-Event-ID: %s\r\n", last_event_id);
	for (size_t i = 0; i < uc->nheaders; i++) {
		if (own_header(uc->headers[i].name))
			continue;
		if (strcasecmp(uc->headers[i].name, "authorization") == 0)
			has_auth = 1;
		evbuffer_add_printf(out, "%s: %s\r\n", uc->headers[i].name, uc->headers[i].value);
	}
	if (!has_auth && f->authorization)
		evbuffer_add_printf(out, "Authorization: %s\r\n", f->authorization);
	else if (!has_auth && uc->basic_auth)
		evbuffer_add_printf(out, "Authorization: %s\r\n", uc->basic_auth);
	if (body && trace_out && trace_out[0]) /* telemetry */
		evbuffer_add_printf(out, "traceparent: %s\r\n", trace_out);
	if (body)
		evbuffer_add_printf(out, "Content-Type: application/json\r\nContent-Length: %zu\r\n", len);
	evbuffer_add(out, "\r\n", 2);
	if (body)
		evbuffer_add(out, body, len);
	return out;
}

static struct evbuffer *build_request(struct upstream_sse *f, const char *method,
                                      const char *target, const char *accept,
                                      const char *last_event_id, const char *body, size_t len)
{
	return build_request_tp(f, method, target, accept, last_event_id, body, len, NULL);
}

static const struct upstream_req_cbs op_cbs;

static struct op *op_start(struct upstream_sse *f, enum op_kind kind, struct evbuffer *request)
{
	struct op *op = calloc(1, sizeof(*op));
	if (!op || !request) {
		free(op);
		if (request)
			evbuffer_free(request);
		return NULL;
	}
	op->f = f;
	op->kind = kind;
	if (f->tr == PX_TRANSPORT_STREAMABLE && f->session_id[0])
		op->flags |= OPF_HAD_SESSION;
	op->req = upstream_req_new(f->u, request, 0, &op_cbs, op);
	if (!op->req) {
		free(op);
		return NULL;
	}
	if (face_has(f, UF_PAUSED))
		upstream_req_pause(op->req);
	op->next = f->ops;
	f->ops = op;
	return op;
}

static void outmsg_free(struct outmsg *q)
{
	if (!q)
		return;
	json_decref(q->msg);
	free(q->raw);
	free(q);
}

static void op_free(struct op *op)
{
	upstream_req_free(op->req);
	if (op->out)
		outmsg_free(op->out);
	else
		json_decref(op->sent);
	if (op->buf)
		evbuffer_free(op->buf);
	sse_reader_free(op->sse);
	free(op->content_type);
	free(op->www_authenticate);
	free(op);
}

/* The op gets no more callbacks: free it from the loop. */
static void op_finish(struct op *op)
{
	op->flags |= OPF_FINISHED;
	if (op->f->stream == op)
		op->f->stream = NULL;
	kick(op->f);
}

static void start_stream(struct upstream_sse *f, const char *last_event_id)
{
	const char *target = uconf(f)->target;
	struct evbuffer *rq = build_request(f, "GET", target, "text/event-stream", last_event_id,
	                                    NULL, 0);
	struct op *op = op_start(f, OP_STREAM, rq);
	if (!op) {
		if (f->tr == PX_TRANSPORT_SSE)
			report_closed(f, "cannot start the upstream SSE stream");
		return;
	}
	f->stream = op;
}

static void start_post(struct upstream_sse *f, struct outmsg *q)
{
	const char *target = f->tr == PX_TRANSPORT_SSE ? f->endpoint : uconf(f)->target;
	struct evbuffer *rq = build_request_tp(f, "POST", target, "application/json, text/event-stream",
	                                       NULL, q->raw, q->len, q->traceparent);
	struct op *op = op_start(f, OP_POST, rq);
	if (!op) {
		f->cbs->on_failed(f->arg, q->msg, 502, "cannot start the upstream request", NULL, NULL);
		outmsg_free(q);
		return;
	}
	op->out = q;
	op->sent = q->msg;
	if (jrpc_classify(q->msg) == JRPC_REQUEST)
		op->flags |= OPF_IS_REQUEST;
	/* One at a time to a legacy endpoint (the order is the stream's), and
	 * the probe alone until its answer says which transport this is. */
	if (f->tr == PX_TRANSPORT_SSE || probing(f))
		f->flags |= UF_POSTING;
}

/* The rest of a Streamable POST reply that was cut after an event id: the
 * spec's resumption is a GET carrying Last-Event-ID. */
static int start_resume(struct upstream_sse *f, struct op *cut)
{
	if (cut->resumes >= RESUME_MAX || !cut->last_id[0] || closing(f))
		return -1;
	struct evbuffer *rq = build_request(f, "GET", uconf(f)->target, "text/event-stream",
	                                    cut->last_id, NULL, 0);
	struct op *op = op_start(f, OP_RESUME, rq);
	if (!op)
		return -1;
	op->sent = json_incref(cut->sent);
	op->flags |= OPF_IS_REQUEST;
	op->resumes = cut->resumes + 1;
	memcpy(op->last_id, cut->last_id, sizeof(op->last_id));
	log_msg(LOG_DEBUG, "upstream %s: reply cut before its response: resuming it", uconf(f)->name);
	return 0;
}

static void pop_and_post(struct upstream_sse *f)
{
	struct outmsg *q = f->qhead;
	f->qhead = q->next;
	if (!f->qhead)
		f->qtail = NULL;
	f->nq--;
	q->next = NULL;
	start_post(f, q);
}

/* Sends what may be sent now. Runs from kick only. */
static void pump(struct upstream_sse *f)
{
	while (f->qhead && !closing(f) && !face_has(f, UF_POSTING)) {
		if (f->tr == PX_TRANSPORT_SSE && !f->endpoint[0])
			return;
		pop_and_post(f);
	}
}

/* ---- switching transport (the auto probe) ------------------------------------- */

static void switch_to_sse(struct upstream_sse *f, struct op *refused)
{
	log_msg(LOG_INFO, "upstream %s (%s): Streamable HTTP refused (HTTP %d): trying the legacy "
	        "HTTP+SSE transport", uconf(f)->name, uconf(f)->url_safe, refused->status);
	f->tr = PX_TRANSPORT_SSE;
	f->flags &= ~UF_FALLBACK;
	f->flags &= ~UF_POSTING;
	/* The refused message goes first again, on the other transport. */
	struct outmsg *q = refused->out;
	refused->out = NULL;
	refused->sent = NULL;
	q->next = f->qhead;
	f->qhead = q;
	if (!f->qtail)
		f->qtail = q;
	f->nq++;
	start_stream(f, NULL);
}

static void switch_to_streamable(struct upstream_sse *f, int status)
{
	log_msg(LOG_INFO, "upstream %s (%s): legacy SSE stream refused (HTTP %d): trying Streamable "
	        "HTTP", uconf(f)->name, uconf(f)->url_safe, status);
	f->tr = PX_TRANSPORT_STREAMABLE;
	f->flags &= ~UF_FALLBACK;
	kick(f);
}

enum px_transport upstream_sse_auto_first(const struct px_upstream_conf *uc)
{
	return upstream_sse_url_is_sse(uc) ? PX_TRANSPORT_SSE : PX_TRANSPORT_STREAMABLE;
}

int upstream_sse_stream_refused(int status, const char *ct)
{
	int sse = status == 200 && media_is(ct, "text/event-stream");
	return !sse && (upstream_sse_probe_refused(status, ct) || (status >= 200 && status < 300));
}

int upstream_sse_probe_refused(int status, const char *ct)
{
	/* docs/transports.md: 400, 404 or 405; a JSON body is a modern
	 * server's own JSON-RPC error (an expired session, say), not a sign
	 * that it speaks another transport. */
	return (status == 400 || status == 404 || status == 405) && !media_is(ct, "application/json");
}

/* ---- messages from the upstream ----------------------------------------------- */

static void emit(struct op *op, json_t *msg, const char *raw, size_t raw_len)
{
	struct upstream_sse *f = op->f;
	enum jrpc_kind k = jrpc_classify(msg);

	if (k == JRPC_INVALID) {
		log_msg(LOG_WARN, "upstream %s sent something that is not JSON-RPC: dropped",
		        uconf(f)->name);
		return;
	}
	if (op->sent && op_has(op, OPF_IS_REQUEST) && (k == JRPC_RESULT || k == JRPC_ERROR) &&
	    jrpc_id_equal(jrpc_id(msg), jrpc_id(op->sent))) {
		op->flags |= OPF_ANSWERED;
		if (k == JRPC_RESULT && f->tr == PX_TRANSPORT_STREAMABLE &&
		    is_method(op->sent, "initialize")) {
			json_t *pv = json_object_get(json_object_get(msg, "result"), "protocolVersion");
			const char *v = json_string_value(pv);
			if (v && strlen(v) < sizeof(f->protocol) && visible_ascii(v, strlen(v)))
				memcpy(f->protocol, v, strlen(v) + 1);
		}
	}
	f->cbs->on_message(f->arg, msg, raw, raw_len);
}

/* A body holding one message or an array of them. */
static void emit_json(struct op *op, const char *bytes, size_t len)
{
	json_error_t jerr;
	json_t *v = json_loadb(bytes, len, JSON_DECODE_ANY, &jerr);

	if (json_is_object(v)) {
		emit(op, v, bytes, len);
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v) && !closing(op->f); i++)
			emit(op, json_array_get(v, i), NULL, 0);
	} else {
		log_msg(LOG_WARN, "upstream %s: a reply that is not JSON-RPC was dropped",
		        uconf(op->f)->name);
	}
	json_decref(v);
}

static int on_sse_event(void *arg, const struct sse_event *ev, const char *comment,
                        size_t comment_len)
{
	struct op *op = arg;
	struct upstream_sse *f = op->f;
	(void)comment;
	(void)comment_len;

	if (!ev)
		return 0; /* keep-alive comments stay between us and the upstream */
	if (ev->id && ev->id_len < sizeof(op->last_id) && !memchr(ev->id, '\0', ev->id_len) &&
	    visible_ascii(ev->id, ev->id_len)) {
		memcpy(op->last_id, ev->id, ev->id_len);
		op->last_id[ev->id_len] = '\0';
		if (op->kind == OP_STREAM && f->tr == PX_TRANSPORT_STREAMABLE)
			memcpy(f->get_last_id, op->last_id, sizeof(f->get_last_id));
	}
	if (ev->event && ev->event_len == 8 && memcmp(ev->event, "endpoint", 8) == 0 &&
	    op->kind == OP_STREAM && f->tr == PX_TRANSPORT_SSE) {
		const char *why;
		char ep[sizeof(f->endpoint)];
		if (upstream_sse_resolve_endpoint(uconf(f), ev->data ? ev->data : "", ev->data_len, ep,
		                                  sizeof(ep), &why) < 0) {
			log_msg(LOG_WARN, "upstream %s (%s): %s", uconf(f)->name, uconf(f)->url_safe, why);
			report_closed(f, why);
			return 1;
		}
		if (!f->endpoint[0]) {
			/* Now a stream for good: no more request timeout. */
			upstream_req_stream(op->req);
		}
		memcpy(f->endpoint, ep, sizeof(ep));
		set_ready(f);
		kick(f);
		return closing(f) ? 1 : 0;
	}
	if (ev->event && !(ev->event_len == 7 && memcmp(ev->event, "message", 7) == 0)) {
		log_msg(LOG_DEBUG, "upstream %s: SSE event \"%.*s\" ignored", uconf(f)->name,
		        (int)(ev->event_len < 40 ? ev->event_len : 40), ev->event);
		return 0;
	}
	if (!ev->data || ev->data_len == 0)
		return 0; /* priming events, retry hints: ours to keep */
	emit_json(op, ev->data, ev->data_len);
	return closing(f) ? 1 : 0;
}

/* ---- upstream_req callbacks ---------------------------------------------------- */

static int start_body(struct op *op, enum op_body body)
{
	op->body = body;
	if (body == BODY_JSON || body == BODY_ERROR)
		op->buf = evbuffer_new();
	else if (body == BODY_SSE)
		op->sse = sse_reader_new(op->f->ctx->cfg->limits.max_sse_event_bytes);
	if ((body == BODY_JSON || body == BODY_ERROR) ? !op->buf : body == BODY_SSE && !op->sse) {
		op_finish(op);
		return -1;
	}
	return 0;
}

static int refuse(struct op *op)
{
	op_finish(op);
	return -1;
}

/* What a client must see of a refusal lives in its head: kept for the
 * end of its body (out of memory: the refusal is told without it). */
static void keep_refusal_head(struct op *op, const char *ct, const struct http_msg *resp)
{
	const char *wa = http_msg_header(resp, "WWW-Authenticate");
	if (ct)
		op->content_type = strdup(ct);
	if (wa)
		op->www_authenticate = strdup(wa);
}

static int post_head(struct op *op, int status, const char *ct, const struct http_msg *resp)
{
	struct upstream_sse *f = op->f;
	int ok = status >= 200 && status < 300;

	if (!ok)
		keep_refusal_head(op, ct, resp);
	if (f->tr == PX_TRANSPORT_SSE) {
		f->flags &= ~UF_POSTING;
		kick(f);
		if (ok && op_has(op, OPF_IS_REQUEST)) {
			f->cbs->on_accepted(f->arg, op->sent);
			if (closing(f))
				return refuse(op);
		}
		return start_body(op, ok ? BODY_IGNORE : BODY_ERROR);
	}
	if (probing(f) && upstream_sse_probe_refused(status, ct) && op->out &&
	    is_method(op->sent, "initialize")) {
		switch_to_sse(f, op);
		return refuse(op);
	}
	const char *sid = http_msg_get(resp, HH_MCP_SESSION_ID);
	if (ok && sid && !f->session_id[0] && strlen(sid) < sizeof(f->session_id) &&
	    visible_ascii(sid, strlen(sid)))
		memcpy(f->session_id, sid, strlen(sid) + 1);
	if (status == 404 && op_has(op, OPF_HAD_SESSION)) {
		/* Our session id is unknown there now: the session is over, and
		 * the client must start again (docs/transports.md "Sessions"). */
		report_closed(f, "the upstream ended the session (404 for its session id)");
		return refuse(op);
	}
	if (face_has(f, UF_POSTING)) {
		f->flags &= ~UF_POSTING;
		kick(f);
	}
	if (!ok)
		return start_body(op, BODY_ERROR);
	set_ready(f);
	if (!closing(f) && op_has(op, OPF_IS_REQUEST))
		f->cbs->on_accepted(f->arg, op->sent);
	if (closing(f))
		return refuse(op);
	if (status == 202 || status == 204)
		return start_body(op, BODY_IGNORE);
	if (media_is(ct, "text/event-stream")) {
		upstream_req_stream(op->req);
		return start_body(op, BODY_SSE);
	}
	if (media_is_json(ct))
		return start_body(op, BODY_JSON);
	return start_body(op, BODY_IGNORE);
}

static int stream_head(struct op *op, int status, const char *ct)
{
	struct upstream_sse *f = op->f;
	int sse = status == 200 && media_is(ct, "text/event-stream");

	if (op->kind == OP_RESUME) {
		if (!sse)
			return start_body(op, BODY_IGNORE); /* failure reported when done */
		upstream_req_stream(op->req);
		return start_body(op, BODY_SSE);
	}
	if (f->tr == PX_TRANSPORT_SSE) {
		if (sse)
			return start_body(op, BODY_SSE); /* the request timeout runs until `endpoint` */
		if (probing(f) && upstream_sse_stream_refused(status, ct)) {
			switch_to_streamable(f, status);
			return refuse(op);
		}
		log_msg(LOG_WARN, "upstream %s (%s): legacy SSE GET answered HTTP %d%s", uconf(f)->name,
		        uconf(f)->url_safe, status, sse ? "" : " without an event stream");
		report_closed(f, status >= 500 ? "the upstream failed its SSE stream (HTTP 5xx)"
		                               : "the upstream refused the legacy SSE stream");
		return refuse(op);
	}
	/* The Streamable standalone stream: optional (405 = none offered). */
	if (!sse) {
		log_msg(LOG_DEBUG, "upstream %s: standalone GET stream answered %d", uconf(f)->name, status);
		f->get_failures = GET_RETRIES;
		return refuse(op);
	}
	f->get_failures = 0;
	upstream_req_stream(op->req);
	return start_body(op, BODY_SSE);
}

static int op_on_head(void *arg, const struct http_msg *resp)
{
	struct op *op = arg;
	const char *ct = http_msg_get(resp, HH_CONTENT_TYPE);

	op->status = http_msg_status(resp);
	if (closing(op->f) && op->kind != OP_DELETE)
		return refuse(op);
	switch (op->kind) {
	case OP_POST:
		return post_head(op, op->status, ct, resp);
	case OP_STREAM:
	case OP_RESUME:
		return stream_head(op, op->status, ct);
	case OP_DELETE:
		return start_body(op, BODY_IGNORE);
	}
	return refuse(op);
}

static int op_on_body(void *arg, const char *data, size_t len)
{
	struct op *op = arg;
	struct upstream_sse *f = op->f;

	if (closing(f) && op->kind != OP_DELETE)
		return refuse(op);
	switch (op->body) {
	case BODY_IGNORE:
		return 0;
	case BODY_ERROR:
		if (evbuffer_get_length(op->buf) < ERROR_BODY_MAX)
			evbuffer_add(op->buf, data, len);
		return 0;
	case BODY_JSON:
		if (evbuffer_add(op->buf, data, len) < 0 ||
		    evbuffer_get_length(op->buf) > f->ctx->cfg->limits.max_body_bytes) {
			f->cbs->on_failed(f->arg, op->sent, 502, "the upstream's reply is too large",
			                  NULL, NULL);
			op->flags |= OPF_ANSWERED;
			return refuse(op);
		}
		return 0;
	case BODY_SSE: {
		int rc = sse_reader_feed(op->sse, data, len, on_sse_event, op);
		if (rc == SSE_ERR_TOO_BIG) {
			log_msg(LOG_WARN, "upstream %s: an SSE event is over the size limit", uconf(f)->name);
			if (op->kind == OP_STREAM && f->tr == PX_TRANSPORT_SSE)
				report_closed(f, "an SSE event from the upstream is over the size limit");
			else if (op->sent && op_has(op, OPF_IS_REQUEST) && !op_has(op, OPF_ANSWERED)) {
				op->flags |= OPF_ANSWERED;
				f->cbs->on_failed(f->arg, op->sent, 502,
				                  "an SSE event from the upstream is over the size limit", NULL,
				                  NULL);
			}
		}
		return rc ? refuse(op) : 0;
	}
	}
	return 0;
}

/* The upstream's JSON-RPC error in a refusal, if it holds one (owned). */
static json_t *error_reply(struct op *op)
{
	json_error_t jerr;
	size_t len = op->buf ? evbuffer_get_length(op->buf) : 0;
	if (!len)
		return NULL;
	json_t *v = json_loadb((const char *)evbuffer_pullup(op->buf, -1), len, 0, &jerr);
	if (v && jrpc_classify(v) != JRPC_ERROR) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

static void schedule_get_retry(struct upstream_sse *f)
{
	if (closing(f) || f->get_failures >= GET_RETRIES)
		return;
	f->get_failures++;
	struct timeval tv = {0, GET_RETRY_MS * 1000};
	evtimer_add(f->retry, &tv);
}

/* The reply ended (done or failed) without the response to a request. */
static void unanswered(struct op *op, int status, const char *detail)
{
	struct upstream_sse *f = op->f;
	if (!op->sent || !op_has(op, OPF_IS_REQUEST) || op_has(op, OPF_ANSWERED) ||
	    closing(f))
		return;
	if (f->tr != PX_TRANSPORT_STREAMABLE)
		return; /* legacy: the response comes on the stream */
	if ((op->body == BODY_SSE || op->kind == OP_RESUME) && start_resume(f, op) == 0)
		return;
	op->flags |= OPF_ANSWERED;
	f->cbs->on_failed(f->arg, op->sent, status, detail, NULL, NULL);
}

static void op_on_done(void *arg)
{
	struct op *op = arg;
	struct upstream_sse *f = op->f;

	op_finish(op);
	if (closing(f))
		return;
	switch (op->kind) {
	case OP_POST:
		if (op->body == BODY_ERROR) {
			json_t *reply = error_reply(op);
			size_t len = evbuffer_get_length(op->buf);
			struct upstream_sse_refusal r = {
				.status = op->status,
				.content_type = op->content_type,
				.www_authenticate = op->www_authenticate,
				.body = len ? (const char *)evbuffer_pullup(op->buf, -1) : NULL,
				.body_len = len,
			};
			op->flags |= OPF_ANSWERED;
			/* The real status, as a Streamable client would see it. */
			snprintf(f->detail, sizeof(f->detail), "the upstream %s the message (HTTP %d)",
			         op->status >= 500 ? "failed" : "refused", op->status);
			f->cbs->on_failed(f->arg, op->sent, op->status, f->detail, reply, &r);
			json_decref(reply);
			return;
		}
		if (op->body == BODY_JSON) {
			size_t len = evbuffer_get_length(op->buf);
			emit_json(op, (const char *)evbuffer_pullup(op->buf, -1), len);
		}
		if (closing(f))
			return;
		if (f->tr == PX_TRANSPORT_STREAMABLE && !face_has(f, UF_GET_STARTED) &&
		    is_method(op->sent, "notifications/initialized")) {
			/* The spec's moment for the standalone stream. */
			f->flags |= UF_GET_STARTED;
			start_stream(f, NULL);
		}
		if (op->status != 202)
			unanswered(op, 502, "the upstream ended its reply without the response");
		return;
	case OP_RESUME:
		unanswered(op, 502, "the upstream cut its reply and did not resume it");
		return;
	case OP_STREAM:
		if (f->tr == PX_TRANSPORT_SSE)
			report_closed(f, f->endpoint[0] ? "the upstream closed its SSE stream"
			                                : "the upstream closed its SSE stream before "
			                                  "naming its endpoint");
		else if (op->body == BODY_SSE)
			schedule_get_retry(f);
		return;
	case OP_DELETE:
		return;
	}
}

static void op_on_error(void *arg, enum upstream_err err, const char *detail)
{
	struct op *op = arg;
	struct upstream_sse *f = op->f;
	int status = err == UPSTREAM_ERR_TIMEOUT ? 504 : 502;

	op_finish(op);
	if (closing(f))
		return;
	switch (op->kind) {
	case OP_POST:
		if (face_has(f, UF_POSTING)) {
			f->flags &= ~UF_POSTING;
			kick(f);
		}
		if (op->body == BODY_SSE || op_has(op, OPF_ANSWERED)) {
			unanswered(op, status, detail);
			return;
		}
		op->flags |= OPF_ANSWERED;
		f->cbs->on_failed(f->arg, op->sent, status, detail, NULL, NULL);
		return;
	case OP_RESUME:
		unanswered(op, status, detail);
		return;
	case OP_STREAM:
		if (f->tr == PX_TRANSPORT_SSE) {
			log_msg(LOG_WARN, "upstream %s (%s): legacy SSE stream: %s", uconf(f)->name,
			        uconf(f)->url_safe, detail);
			report_closed(f, f->endpoint[0] ? "the upstream's SSE stream broke"
			                                : "no endpoint from the upstream's SSE stream");
		} else if (op->body == BODY_SSE) {
			schedule_get_retry(f);
		}
		return;
	case OP_DELETE:
		return;
	}
}

static const struct upstream_req_cbs op_cbs = {op_on_head, op_on_body, op_on_done, op_on_error};

/* ---- deferred work ------------------------------------------------------------- */

static void free_ops(struct upstream_sse *f, int all)
{
	struct op **pp = &f->ops;
	while (*pp) {
		struct op *op = *pp;
		if (all || op_has(op, OPF_FINISHED)) {
			*pp = op->next;
			if (f->stream == op)
				f->stream = NULL;
			op_free(op);
		} else {
			pp = &op->next;
		}
	}
}

static void kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_sse *f = arg;
	(void)fd;
	(void)what;
	assert(f->magic == UPSSE_MAGIC);
	if (closing(f)) {
		if (f->state == UPSSE_CLOSING) {
			face_to(f, UPSSE_DRAINING);
			/* Freeing unfinished requests closes their connections: that
			 * is how a legacy upstream learns the session is over. */
			free_ops(f, 1);
			if (f->tr == PX_TRANSPORT_STREAMABLE && f->session_id[0]) {
				struct evbuffer *rq = build_request(f, "DELETE", uconf(f)->target, NULL, NULL,
				                                    NULL, 0);
				op_start(f, OP_DELETE, rq);
			}
		}
		free_ops(f, 0);
		if (!f->ops && f->state == UPSSE_DRAINING) {
			face_to(f, UPSSE_FINISHED);
			f->cbs->on_finished(f->arg);
		}
		return;
	}
	free_ops(f, 0);
	pump(f);
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_sse *f = arg;
	(void)fd;
	(void)what;
	if (closing(f) || f->stream)
		return;
	log_msg(LOG_DEBUG, "upstream %s: re-opening the standalone GET stream", uconf(f)->name);
	start_stream(f, f->get_last_id[0] ? f->get_last_id : NULL);
}

/* ---- public ---------------------------------------------------------------------- */

struct upstream_sse *upstream_sse_new(struct px_ctx *ctx, size_t up, enum px_transport first,
                                      int fallback, const char *authorization,
                                      const struct upstream_sse_cbs *cbs, void *arg)
{
	struct upstream_sse *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->magic = UPSSE_MAGIC;
	f->ctx = ctx;
	f->u = ctx->ups[up];
	f->cbs = cbs;
	f->arg = arg;
	f->tr = first == PX_TRANSPORT_SSE ? PX_TRANSPORT_SSE : PX_TRANSPORT_STREAMABLE;
	if (fallback)
		f->flags |= UF_FALLBACK;
	f->max_q = ctx->cfg->limits.max_session_queue;
	f->kick = event_new(ctx->base, -1, 0, kick_cb, f);
	f->retry = evtimer_new(ctx->base, retry_cb, f);
	if (authorization)
		f->authorization = strdup(authorization);
	if (!f->kick || !f->retry || (authorization && !f->authorization)) {
		upstream_sse_free(f);
		return NULL;
	}
	if (f->tr == PX_TRANSPORT_SSE)
		start_stream(f, NULL);
	return f;
}

void upstream_sse_free(struct upstream_sse *f)
{
	if (!f)
		return;
	assert(f->magic == UPSSE_MAGIC);
	free_ops(f, 1);
	while (f->qhead) {
		struct outmsg *q = f->qhead;
		f->qhead = q->next;
		outmsg_free(q);
	}
	if (f->kick)
		event_free(f->kick);
	if (f->retry)
		event_free(f->retry);
	free(f->authorization);
	f->magic = 0;
	free(f);
}

int upstream_sse_send(struct upstream_sse *f, json_t *msg, const char *raw, size_t raw_len)
{
	if (closing(f) || f->nq >= f->max_q)
		return -1;
	struct outmsg *q = calloc(1, sizeof(*q));
	if (!q)
		return -1;
	if (raw) {
		q->raw = malloc(raw_len ? raw_len : 1);
		if (q->raw)
			memcpy(q->raw, raw, raw_len);
		q->len = raw_len;
	} else {
		q->raw = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
		q->len = q->raw ? strlen(q->raw) : 0;
	}
	if (!q->raw) {
		free(q);
		return -1;
	}
	q->msg = json_incref(msg);
	snprintf(q->traceparent, sizeof(q->traceparent), "%s", tracehand_get()); /* telemetry */
	if (f->qtail)
		f->qtail->next = q;
	else
		f->qhead = q;
	f->qtail = q;
	f->nq++;
	kick(f);
	return 0;
}

void upstream_sse_close(struct upstream_sse *f)
{
	if (closing(f))
		return;
	face_to(f, UPSSE_CLOSING);
	while (f->qhead) {
		struct outmsg *q = f->qhead;
		f->qhead = q->next;
		outmsg_free(q);
	}
	f->qtail = NULL;
	f->nq = 0;
	evtimer_del(f->retry);
	kick(f);
}

void upstream_sse_pause(struct upstream_sse *f)
{
	if (face_has(f, UF_PAUSED))
		return;
	f->flags |= UF_PAUSED;
	for (struct op *op = f->ops; op; op = op->next)
		if (!op_has(op, OPF_FINISHED))
			upstream_req_pause(op->req);
}

void upstream_sse_resume(struct upstream_sse *f)
{
	if (!face_has(f, UF_PAUSED))
		return;
	f->flags &= ~UF_PAUSED;
	for (struct op *op = f->ops; op; op = op->next)
		if (!op_has(op, OPF_FINISHED))
			upstream_req_resume(op->req);
}

enum px_transport upstream_sse_transport(const struct upstream_sse *f)
{
	if (probing(f))
		return PX_TRANSPORT_AUTO;
	return f->tr;
}

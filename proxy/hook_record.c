/* hook_record: see hook_record.h.
 *
 * Per HTTP exchange the recorder keeps a `struct rx` in the exchange's
 * hook_data slot, holding the client messages of the exchange as records
 * under construction:
 *
 *   where->hook_data[slot] -> rx --> pending(request id 1) -> pending(notif)
 *                             |        rec: numbers + strings in an arena
 *                             +-- linked in hr->rxs (for /calls/inflight)
 *
 * A server answer fills its request's record in place; on_exchange, which
 * runs exactly once per exchange, settles what is still open from the
 * exchange's end, writes every record as JSON text, hands it to the sink
 * and returns the rx to the recorder's pool.
 *
 * Cost. This runs on every call, so a record is a C struct, not a jansson
 * object: its strings (already redacted and cut) go into one arena per
 * record, and the JSON text is written once, straight into a buffer the
 * recorder reuses. The rx and pending structs, arenas included, are pooled:
 * a call in steady state allocates nothing here but what redaction needs.
 */
#include "proxy/hook_record.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/metrics.h"
#include "admin/redact.h"
#include "checks/sbuf.h"
#include "proxy/inspect.h"
#include "proxy/jsonrpc.h"

#define RX_MAGIC 0x72656378u /* "recx" */
/* Server requests remembered so that the client's response to one is
 * recorded under the request's method (sampling/createMessage…). */
#define SRV_REQ_MAX 64
#define ERROR_MESSAGE_CHARS 500
/* Names, ids and header values are the client's: a record keeps at most
 * this many characters of each (the ring's bound per record holds). */
#define FIELD_CHARS 256
/* Pooled structs kept for reuse, and the largest arena a pooled record
 * keeps (a bigger one is freed: one huge call must not pin memory). */
#define POOL_MAX 64
#define ARENA_KEEP (16u * 1024)
/* Room left in front of a record's text for {"seq":N, */
#define SEQ_ROOM 32

enum rec_kind { RK_REQUEST, RK_NOTIFICATION, RK_RESPONSE };

/* A record's string members, in the order they are written. */
enum rec_str {
	F_SESSION, F_CLIENT, F_CLIENT_NAME, F_UPSTREAM, F_PROTOCOL, F_CLIENT_TRANSPORT,
	F_UPSTREAM_TRANSPORT, F_METHOD, F_TOOL, F_ID, F_ARGUMENTS, F_PREVIEW, F_ERROR_MESSAGE,
	F_RULE, F_NOTE, NSTR
};

struct rec {
	/* 1 + offset of the member's NUL-terminated text in arena; 0: null.
	 * Offsets, not pointers: the arena may move as it grows. */
	size_t str[NSTR];
	struct sbuf arena;       /* owned; kept (emptied) across reuses */
	uint64_t wall_us;        /* Unix time for "time" */
	const char *from;        /* static: "client", "server" */
	enum rec_kind kind;
	const char *outcome;     /* static, or NULL: not decided yet */
	long long id_int;        /* the id when id_kind is ID_INT */
	enum { ID_NULL, ID_INT, ID_STR } id_kind;
	size_t id_raw, id_raw_len; /* a string id, whole, for matching: arena offset */
	long long error_code;
	int has_error_code;
	int is_error;            /* -1: null */
	int http_status;         /* 0: null */
	int arguments_cut, result_cut, modified;
	unsigned notifications;
	int finished;            /* latency and bytes are known */
	uint64_t latency_us, bytes_in, bytes_out;
};

struct pending {
	struct pending *next;
	struct rec rec;
	int settled;            /* an answer or a verdict decided the outcome */
	uint64_t done_us;       /* monotonic, when settled */
};

struct rx {
	unsigned magic;
	struct hook_record *hr;       /* borrowed */
	struct inspect_where *where;  /* borrowed: exchange lifetime */
	struct pending *head;         /* owned list, arrival order */
	struct pending **tail;
	unsigned notifications;       /* server notifications on this reply */
	int has_requests;             /* a client request came in this exchange */
	uint64_t wall_us;             /* Unix time of where->start_us */
	struct rx *prev, *next;       /* hr->rxs, oldest first; next: pool link */
};

struct srv_req {
	char session[128];
	char id[64];
	char method[64];
};

struct hook_record_text {
	struct sbuf b;               /* SEQ_ROOM bytes of room, then the members */
};

struct hook_record {
	const struct redact *rd;     /* borrowed */
	struct metrics *m;           /* borrowed, may be NULL */
	hook_record_sink_fn sink;
	void *arg;
	int slot;                    /* our index in where->hook_data */
	struct rx *rxs, *rxs_tail;   /* exchanges with records under way */
	struct srv_req srv[SRV_REQ_MAX];
	size_t srv_next;
	struct rx *free_rx;          /* owned pool */
	struct pending *free_pending;/* owned pool */
	size_t nfree_rx, nfree_pending;
	struct hook_record_text out; /* owned: the text being handed to the sink */
	time_t day_sec;              /* the second day_text spells, or -1 */
	char day_text[24];           /* "YYYY-MM-DDTHH:MM:SS" */
};

/* ---- small helpers ------------------------------------------------------- */

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t real_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void hook_record_time(uint64_t unix_us, char *buf, size_t len)
{
	time_t secs = (time_t)(unix_us / 1000000u);
	struct tm tm;
	char day[32];
	gmtime_r(&secs, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06uZ", day, (unsigned)(unix_us % 1000000u));
}

/* hook_record_time into b, the date part reused while the second lasts:
 * calls come thousands a second, gmtime and strftime once a second. */
static void put_time(struct hook_record *hr, struct sbuf *b, uint64_t unix_us)
{
	time_t secs = (time_t)(unix_us / 1000000u);
	unsigned us = (unsigned)(unix_us % 1000000u);
	char frac[9] = {'.', 0, 0, 0, 0, 0, 0, 'Z', '"'};

	if (secs != hr->day_sec) {
		struct tm tm;
		gmtime_r(&secs, &tm);
		if (strftime(hr->day_text, sizeof(hr->day_text), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
			hr->day_text[0] = '\0';
		hr->day_sec = secs;
	}
	for (int i = 6; i >= 1; i--, us /= 10)
		frac[i] = (char)('0' + us % 10);
	sbuf_putn(b, "\"", 1);
	sbuf_puts(b, hr->day_text);
	sbuf_putn(b, frac, sizeof(frac));
}

static const char *session_of(const struct inspect_where *w)
{
	return w->session_id ? w->session_id : w->reply_session_id;
}

static const char *verdict_str(enum inspect_verdict v)
{
	return v == INSPECT_DROP ? "drop" : v == INSPECT_ANSWER ? "answer" : "forward";
}

static const char *end_outcome(enum inspect_end end)
{
	switch (end) {
	case INSPECT_END_TIMEOUT:
		return "timeout";
	case INSPECT_END_CANCELLED:
		return "cancelled";
	case INSPECT_END_REJECTED:
		return "blocked";
	case INSPECT_END_UPSTREAM_ERROR:
	case INSPECT_END_OK:
	default:
		return "upstream_error";
	}
}

/* ---- record members -------------------------------------------------------- */

static const char *rec_get(const struct rec *r, enum rec_str f)
{
	return r->str[f] ? r->arena.p + r->str[f] - 1 : NULL;
}

/* Stores s as member f; NULL, and text that is not UTF-8 (header values
 * can be anything, and JSON text must be UTF-8), are null. */
static void rec_set(struct rec *r, enum rec_str f, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (!s || !sbuf_utf8_valid(s, n)) {
		r->str[f] = 0;
		return;
	}
	size_t off = r->arena.len;
	sbuf_putn(&r->arena, s, n + 1); /* with its NUL */
	r->str[f] = r->arena.oom ? 0 : off + 1;
}

/* s cut to FIELD_CHARS characters (visibly), or null. */
static void rec_set_bounded(struct rec *r, enum rec_str f, const char *s)
{
	if (!s || strnlen(s, FIELD_CHARS + 1) <= FIELD_CHARS) {
		rec_set(r, f, s);
		return;
	}
	char *cut = redact_cut(s, FIELD_CHARS, NULL);
	rec_set(r, f, cut);
	free(cut);
}

/* An owned string from redact_*() (NULL: out of memory, null). */
static void rec_take(struct rec *r, enum rec_str f, char *s)
{
	rec_set(r, f, s);
	free(s);
}

static void rec_set_id(struct rec *r, const json_t *id)
{
	if (json_is_integer(id)) {
		r->id_kind = ID_INT;
		r->id_int = (long long)json_integer_value(id);
	} else if (json_is_string(id)) {
		r->id_kind = ID_STR;
		rec_set_bounded(r, F_ID, json_string_value(id));
		/* Matching compares the whole id, NULs and all. */
		r->id_raw = r->arena.len;
		r->id_raw_len = json_string_length(id);
		sbuf_putn(&r->arena, json_string_value(id), r->id_raw_len);
	} else {
		r->id_kind = ID_NULL;
	}
}

/* Whether id (string or integer) is this record's request id. */
static int rec_id_is(const struct rec *r, const json_t *id)
{
	if (r->id_kind == ID_INT)
		return json_is_integer(id) && (long long)json_integer_value(id) == r->id_int;
	if (r->id_kind == ID_STR && !r->arena.oom)
		return json_is_string(id) && json_string_length(id) == r->id_raw_len &&
		       memcmp(json_string_value(id), r->arena.p + r->id_raw, r->id_raw_len) == 0;
	return 0;
}

/* ---- the pools ---------------------------------------------------------------- */

static struct pending *pending_get(struct hook_record *hr)
{
	struct pending *p = hr->free_pending;
	if (p) {
		hr->free_pending = p->next;
		hr->nfree_pending--;
	} else if (!(p = calloc(1, sizeof(*p)))) {
		return NULL;
	}
	struct sbuf arena = p->rec.arena;
	memset(p, 0, sizeof(*p));
	p->rec.arena = arena;
	p->rec.arena.len = 0;
	p->rec.arena.oom = 0;
	return p;
}

static void pending_put(struct hook_record *hr, struct pending *p)
{
	if (hr->nfree_pending >= POOL_MAX || p->rec.arena.cap > ARENA_KEEP) {
		free(p->rec.arena.p);
		free(p);
		return;
	}
	p->next = hr->free_pending;
	hr->free_pending = p;
	hr->nfree_pending++;
}

static void pools_free(struct hook_record *hr)
{
	while (hr->free_pending) {
		struct pending *p = hr->free_pending;
		hr->free_pending = p->next;
		free(p->rec.arena.p);
		free(p);
	}
	while (hr->free_rx) {
		struct rx *rx = hr->free_rx;
		hr->free_rx = rx->next;
		free(rx);
	}
}

/* ---- records ------------------------------------------------------------- */

/* What a record keeps of a request's parameters. */
static const json_t *recorded_args(const json_t *msg, const char *method)
{
	const json_t *params = json_object_get(msg, "params");
	if (method && (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0))
		return json_object_get(params, "arguments");
	return params;
}

static void record_init(const struct hook_record *hr, struct rec *r,
                        const struct inspect_where *w, uint64_t wall_us, const char *from,
                        enum rec_kind kind, const json_t *msg, const char *method)
{
	r->wall_us = wall_us;
	r->from = from;
	r->kind = kind;
	r->is_error = -1;
	rec_set_bounded(r, F_SESSION, session_of(w));
	rec_set(r, F_CLIENT, w->client);
	rec_set_bounded(r, F_CLIENT_NAME, w->client_name);
	rec_set(r, F_UPSTREAM, w->upstream);
	rec_set_bounded(r, F_PROTOCOL, w->protocol);
	rec_set(r, F_CLIENT_TRANSPORT, w->client_transport);
	rec_set(r, F_UPSTREAM_TRANSPORT, w->upstream_transport);
	rec_set_bounded(r, F_METHOD, method);
	rec_set_bounded(r, F_TOOL, kind == RK_REQUEST ? jrpc_tool_name(msg) : NULL);
	rec_set_id(r, jrpc_id(msg));
	const json_t *args = kind == RK_RESPONSE ? NULL : recorded_args(msg, method);
	if (args)
		rec_take(r, F_ARGUMENTS,
		         redact_json_text(hr->rd, args, REDACT_ARGS_CHARS, &r->arguments_cut));
}

/* Fills the answer members from a response message (a server's answer,
 * a hook's answer, or a client's response to a server request). Returns
 * the outcome it implies. */
static const char *fill_answer(const struct hook_record *hr, struct rec *r, const json_t *answer)
{
	if (jrpc_classify(answer) == JRPC_ERROR) {
		const json_t *err = json_object_get(answer, "error");
		const json_t *code = json_object_get(err, "code");
		const char *msg = json_string_value(json_object_get(err, "message"));
		r->has_error_code = json_is_integer(code);
		r->error_code = r->has_error_code ? (long long)json_integer_value(code) : 0;
		if (msg) {
			char *masked = redact_text(hr->rd, msg);
			rec_take(r, F_ERROR_MESSAGE,
			         masked ? redact_cut(masked, ERROR_MESSAGE_CHARS, NULL) : NULL);
			free(masked);
		}
		return "rpc_error";
	}
	const json_t *result = json_object_get(answer, "result");
	if (!result)
		return "ok";
	r->result_cut = 0;
	rec_take(r, F_PREVIEW,
	         redact_result_preview(hr->rd, result, REDACT_PREVIEW_CHARS, &r->result_cut));
	const char *method = rec_get(r, F_METHOD);
	if (method && strcmp(method, "tools/call") == 0) {
		r->is_error = json_is_true(json_object_get(result, "isError"));
		return r->is_error ? "tool_error" : "ok";
	}
	return "ok";
}

static void set_blocked(struct rec *r, const struct inspect_msg *m)
{
	const char *rule = m->reason ? m->reason : m->decided_by;
	r->outcome = "blocked";
	rec_set(r, F_RULE, rule ? rule : "unknown");
}

/* ---- the record as JSON text ------------------------------------------------ */

#define LIT(b, s) sbuf_putn((b), (s), sizeof(s) - 1)

static void put_str(struct sbuf *b, const char *s)
{
	if (s)
		sbuf_json_str(b, s, strlen(s));
	else
		LIT(b, "null");
}

static void put_bool(struct sbuf *b, int v)
{
	if (v)
		LIT(b, "true");
	else
		LIT(b, "false");
}

static void put_u64_or_null(struct sbuf *b, int known, uint64_t v)
{
	if (known)
		sbuf_i64(b, (long long)v);
	else
		LIT(b, "null");
}

/* The members after "seq", in the order hook_record.h lists them. */
static void rec_write(struct hook_record *hr, const struct rec *r, struct sbuf *b)
{
	static const char *const kinds[] = {"request", "notification", "response"};

	/* The string members from "session" to "tool", in order; from and
	 * kind are the record's own static strings. */
	static const struct {
		const char *name;
		int field;   /* enum rec_str, or -1: from, -2: kind */
	} head[] = {
		{",\"session\":", F_SESSION}, {",\"client\":", F_CLIENT},
		{",\"client_name\":", F_CLIENT_NAME}, {",\"upstream\":", F_UPSTREAM},
		{",\"protocol\":", F_PROTOCOL}, {",\"client_transport\":", F_CLIENT_TRANSPORT},
		{",\"upstream_transport\":", F_UPSTREAM_TRANSPORT}, {",\"from\":", -1},
		{",\"kind\":", -2}, {",\"method\":", F_METHOD}, {",\"tool\":", F_TOOL},
	};

	LIT(b, "\"time\":");
	put_time(hr, b, r->wall_us);
	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++) {
		int f = head[i].field;
		sbuf_puts(b, head[i].name);
		put_str(b, f == -1 ? r->from : f == -2 ? kinds[r->kind] : rec_get(r, (enum rec_str)f));
	}
	LIT(b, ",\"id\":");
	if (r->id_kind == ID_INT)
		sbuf_i64(b, r->id_int);
	else
		put_str(b, r->id_kind == ID_STR ? rec_get(r, F_ID) : NULL);
	LIT(b, ",\"arguments\":");
	put_str(b, rec_get(r, F_ARGUMENTS));
	LIT(b, ",\"arguments_cut\":");
	put_bool(b, r->arguments_cut);
	LIT(b, ",\"result_preview\":");
	put_str(b, rec_get(r, F_PREVIEW));
	LIT(b, ",\"result_cut\":");
	put_bool(b, r->result_cut);
	LIT(b, ",\"http_status\":");
	put_u64_or_null(b, r->http_status != 0, (uint64_t)r->http_status);
	LIT(b, ",\"is_error\":");
	if (r->is_error < 0)
		LIT(b, "null");
	else
		put_bool(b, r->is_error);
	LIT(b, ",\"error_code\":");
	if (r->has_error_code)
		sbuf_i64(b, r->error_code);
	else
		LIT(b, "null");
	LIT(b, ",\"error_message\":");
	put_str(b, rec_get(r, F_ERROR_MESSAGE));
	LIT(b, ",\"outcome\":");
	put_str(b, r->outcome);
	LIT(b, ",\"rule\":");
	put_str(b, rec_get(r, F_RULE));
	LIT(b, ",\"modified\":");
	put_bool(b, r->modified);
	LIT(b, ",\"notifications\":");
	sbuf_i64(b, r->notifications);
	LIT(b, ",\"note\":");
	put_str(b, rec_get(r, F_NOTE));
	LIT(b, ",\"latency_us\":");
	put_u64_or_null(b, r->finished, r->latency_us);
	LIT(b, ",\"bytes_in\":");
	put_u64_or_null(b, r->finished, r->bytes_in);
	LIT(b, ",\"bytes_out\":");
	put_u64_or_null(b, r->finished, r->bytes_out);
	LIT(b, "}");
}

char *hook_record_text_seal(struct hook_record_text *t, uint64_t seq, size_t *len)
{
	char head[SEQ_ROOM];
	size_t n = 0;
	memcpy(head, "{\"seq\":", 7);
	n = 7 + sbuf_i64_text(head + 7, (long long)seq);
	head[n++] = ',';
	char *start = t->b.p + SEQ_ROOM - n;
	memcpy(start, head, n);
	*len = t->b.len - (SEQ_ROOM - n);
	return start;
}

/* Hands a finished record to metrics and the sink. */
static void emit(struct hook_record *hr, const struct rec *r)
{
	struct ring_keys keys = {
		.method = rec_get(r, F_METHOD),
		.tool = rec_get(r, F_TOOL),
		.session = rec_get(r, F_SESSION),
		.outcome = r->outcome,
	};
	if (hr->m) {
		if (strcmp(r->from, "client") == 0) {
			int timed = r->kind == RK_REQUEST && r->finished;
			/* A client's response to a server request of unknown method
			 * still gets a readable label. */
			metrics_call(hr->m, keys.method ? keys.method : "(response)", keys.tool,
			             keys.outcome, timed ? (int64_t)r->latency_us : -1);
		} else {
			metrics_server_message(hr->m, keys.method ? keys.method : "(response)");
		}
	}
	if (!hr->sink || r->arena.oom)
		return;
	struct sbuf *b = &hr->out.b;
	b->len = 0;
	b->oom = 0;
	sbuf_putn(b, "                                ", SEQ_ROOM);
	rec_write(hr, r, b);
	if (b->oom) {
		/* Out of memory: the record is lost, as a failed json_dumps lost it. */
		free(b->p);
		*b = (struct sbuf){0};
		return;
	}
	hr->sink(hr->arg, &hr->out, &keys);
	if (b->cap > ARENA_KEEP * 4) {
		free(b->p);
		*b = (struct sbuf){0};
	}
}

/* ---- server requests ----------------------------------------------------- */

static void id_text(const json_t *id, char *buf, size_t len)
{
	char *s = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	snprintf(buf, len, "%s", s ? s : "");
	free(s);
}

static void srv_remember(struct hook_record *hr, const char *session, const json_t *id,
                         const char *method)
{
	struct srv_req *s = &hr->srv[hr->srv_next++ % SRV_REQ_MAX];
	snprintf(s->session, sizeof(s->session), "%s", session ? session : "");
	id_text(id, s->id, sizeof(s->id));
	snprintf(s->method, sizeof(s->method), "%s", method ? method : "");
}

static const char *srv_lookup(const struct hook_record *hr, const char *session, const json_t *id)
{
	char want[64];
	id_text(id, want, sizeof(want));
	for (size_t i = 0; i < SRV_REQ_MAX; i++) {
		const struct srv_req *s = &hr->srv[i];
		if (s->method[0] && strcmp(s->id, want) == 0 &&
		    strcmp(s->session, session ? session : "") == 0)
			return s->method;
	}
	return NULL;
}

/* ---- per exchange --------------------------------------------------------- */

static struct rx *rx_get(struct hook_record *hr, struct inspect_where *w)
{
	struct rx *rx = w->hook_data[hr->slot];
	if (rx) {
		assert(rx->magic == RX_MAGIC);
		return rx;
	}
	if ((rx = hr->free_rx)) {
		hr->free_rx = rx->next;
		hr->nfree_rx--;
		memset(rx, 0, sizeof(*rx));
	} else if (!(rx = calloc(1, sizeof(*rx)))) {
		return NULL;
	}
	rx->magic = RX_MAGIC;
	rx->hr = hr;
	rx->where = w;
	rx->tail = &rx->head;
	uint64_t now = mono_us(), age = w->start_us && now > w->start_us ? now - w->start_us : 0;
	rx->wall_us = real_us() - age;
	rx->prev = hr->rxs_tail;
	if (hr->rxs_tail)
		hr->rxs_tail->next = rx;
	else
		hr->rxs = rx;
	hr->rxs_tail = rx;
	w->hook_data[hr->slot] = rx;
	return rx;
}

static void rx_free(struct rx *rx)
{
	struct hook_record *hr = rx->hr;
	if (rx->prev)
		rx->prev->next = rx->next;
	else
		hr->rxs = rx->next;
	if (rx->next)
		rx->next->prev = rx->prev;
	else
		hr->rxs_tail = rx->prev;
	for (struct pending *p = rx->head, *next; p; p = next) {
		next = p->next;
		pending_put(hr, p);
	}
	rx->where->hook_data[hr->slot] = NULL;
	rx->magic = 0;
	if (hr->nfree_rx >= POOL_MAX) {
		free(rx);
		return;
	}
	rx->next = hr->free_rx;
	hr->free_rx = rx;
	hr->nfree_rx++;
}

static void pending_link(struct rx *rx, struct pending *p)
{
	*rx->tail = p;
	rx->tail = &p->next;
}

static void settle(struct pending *p)
{
	p->settled = 1;
	p->done_us = mono_us();
}

static void client_message(struct hook_record *hr, struct rx *rx, struct inspect_msg *m)
{
	enum rec_kind kind;
	const char *method = jrpc_method(m->msg);

	switch (m->kind) {
	case JRPC_REQUEST:
		kind = RK_REQUEST;
		rx->has_requests = 1;
		break;
	case JRPC_NOTIFICATION:
		kind = RK_NOTIFICATION;
		break;
	case JRPC_RESULT:
	case JRPC_ERROR:
		kind = RK_RESPONSE;
		method = srv_lookup(hr, rx->where->session_id, jrpc_id(m->msg));
		break;
	default:
		return;
	}
	struct pending *p = pending_get(hr);
	if (!p)
		return;
	struct rec *r = &p->rec;
	record_init(hr, r, rx->where, rx->wall_us, "client", kind, m->msg, method);
	pending_link(rx, p);
	if (m->modified)
		r->modified = 1;
	if (m->verdict != INSPECT_FORWARD) {
		/* The hook's answer is what the client got: show it, but the
		 * outcome stays "blocked". */
		if (m->answer)
			fill_answer(hr, r, m->answer);
		set_blocked(r, m);
		settle(p);
	} else if (kind == RK_RESPONSE) {
		/* The client's answer to a server request: its own outcome. */
		const char *o = fill_answer(hr, r, m->msg);
		if (strcmp(o, "ok") != 0) {
			r->outcome = o;
			settle(p);
		}
	}
}

/* A record of its own for something the server sent unprompted. */
static void server_record(struct hook_record *hr, struct rx *rx, struct inspect_msg *m,
                          enum rec_kind kind)
{
	const char *method = jrpc_method(m->msg);
	struct pending *p = pending_get(hr);
	if (!p)
		return;
	struct rec *r = &p->rec;
	record_init(hr, r, rx->where, real_us(), "server", kind, m->msg, method);
	r->outcome = kind == RK_RESPONSE ? fill_answer(hr, r, m->msg) : "ok";
	if (m->modified)
		r->modified = 1;
	if (m->verdict != INSPECT_FORWARD)
		set_blocked(r, m);
	if (kind == RK_REQUEST)
		srv_remember(hr, rx->where->session_id, jrpc_id(m->msg), method);
	emit(hr, r);
	pending_put(hr, p);
}

static void answer_request(struct hook_record *hr, struct pending *p, struct inspect_msg *m)
{
	struct rec *r = &p->rec;
	r->outcome = fill_answer(hr, r, m->msg);
	if (m->modified)
		r->modified = 1;
	if (m->verdict != INSPECT_FORWARD)
		set_blocked(r, m);
	settle(p);
}

static void server_message(struct hook_record *hr, struct rx *rx, struct inspect_msg *m)
{
	switch (m->kind) {
	case JRPC_RESULT:
	case JRPC_ERROR: {
		const json_t *id = jrpc_id(m->msg);
		int matched = 0;
		for (struct pending *p = rx->head; p; p = p->next) {
			if (p->rec.kind != RK_REQUEST || p->settled)
				continue;
			/* An error with a null id answers a request the server could
			 * not read: all of this exchange's open requests failed. */
			if (id && !json_is_null(id) ? rec_id_is(&p->rec, id) : m->kind == JRPC_ERROR) {
				answer_request(hr, p, m);
				matched = 1;
				if (id && !json_is_null(id))
					break;
			}
		}
		const char *method = m->request ? jrpc_method(m->request) : NULL;
		if (hr->m && m->kind == JRPC_RESULT && method && strcmp(method, "initialize") == 0 &&
		    rx->where->reply_session_id)
			metrics_session_opened(hr->m);
		if (!matched)
			server_record(hr, rx, m, RK_RESPONSE);
		break;
	}
	case JRPC_NOTIFICATION:
		if (rx->has_requests) {
			rx->notifications++;
			if (hr->m)
				metrics_server_message(hr->m, jrpc_method(m->msg));
		} else {
			server_record(hr, rx, m, RK_NOTIFICATION);
		}
		break;
	case JRPC_REQUEST:
		server_record(hr, rx, m, RK_REQUEST);
		break;
	default:
		break;
	}
}

static enum inspect_verdict on_message(void *arg, struct inspect_msg *m)
{
	struct hook_record *hr = arg;

	if (hr->m && (m->verdict != INSPECT_FORWARD || m->reason))
		metrics_policy(hr->m, m->reason ? m->reason : m->decided_by, verdict_str(m->verdict));
	struct rx *rx = rx_get(hr, m->where);
	if (!rx)
		return INSPECT_FORWARD;
	if (m->dir == INSPECT_FROM_CLIENT)
		client_message(hr, rx, m);
	else
		server_message(hr, rx, m);
	return INSPECT_FORWARD;
}

static void finish(struct rx *rx, struct pending *p, const struct inspect_exchange *x)
{
	struct rec *r = &p->rec;
	const struct inspect_where *w = rx->where;

	rec_set_bounded(r, F_SESSION, session_of(w));
	r->http_status = x->status;
	r->finished = 1;
	r->bytes_in = x->bytes_in;
	r->bytes_out = x->bytes_out;
	if (r->kind == RK_REQUEST)
		r->notifications = rx->notifications;
	if (p->settled) {
		r->latency_us = p->done_us > w->start_us ? p->done_us - w->start_us : 0;
		if (!r->outcome)
			r->outcome = "ok";
		return;
	}
	r->latency_us = x->latency_us;
	const char *note = x->error;
	char buf[96];
	if (r->kind != RK_REQUEST && x->end == INSPECT_END_OK && x->status < 400) {
		r->outcome = "ok";
	} else {
		r->outcome = end_outcome(x->end);
		if (!note && x->end == INSPECT_END_OK) {
			snprintf(buf, sizeof(buf), "HTTP %d without a JSON-RPC answer%s", x->status,
			         r->kind == RK_REQUEST ? " to this request" : "");
			note = buf;
		}
	}
	if (x->end == INSPECT_END_REJECTED)
		rec_set(r, F_RULE, "mcpwarden");
	if (note)
		rec_set(r, F_NOTE, note);
}

static void on_exchange(void *arg, const struct inspect_exchange *x)
{
	struct hook_record *hr = arg;
	struct inspect_where *w = x->where;

	if (hr->m) {
		metrics_exchange(hr->m, x->bytes_in, x->bytes_out);
		if (w->http_method && strcmp(w->http_method, "DELETE") == 0 && w->session_id &&
		    x->status >= 200 && x->status < 300)
			metrics_session_closed(hr->m);
	}
	struct rx *rx = w->hook_data[hr->slot];
	if (!rx)
		return;
	assert(rx->magic == RX_MAGIC);
	for (struct pending *p = rx->head; p; p = p->next) {
		finish(rx, p, x);
		emit(hr, &p->rec);
	}
	rx_free(rx);
}

/* ---- public ---------------------------------------------------------------- */

struct hook_record *hook_record_new(struct inspect *in, const struct redact *rd,
                                    struct metrics *m, hook_record_sink_fn sink, void *arg)
{
	struct hook_record *hr = calloc(1, sizeof(*hr));
	if (!hr)
		return NULL;
	hr->rd = rd;
	hr->m = m;
	hr->sink = sink;
	hr->arg = arg;
	hr->day_sec = (time_t)-1;
	hr->slot = inspect_add_observer(in, "record", on_message, on_exchange, hr);
	if (hr->slot < 0) {
		free(hr);
		return NULL;
	}
	return hr;
}

void hook_record_free(struct hook_record *hr)
{
	if (!hr)
		return;
	/* Exchanges still open (teardown without their on_exchange): their
	 * records are dropped with them. */
	while (hr->rxs)
		rx_free(hr->rxs);
	pools_free(hr);
	free(hr->out.b.p);
	free(hr);
}

size_t hook_record_inflight_count(const struct hook_record *hr)
{
	size_t n = 0;
	for (const struct rx *rx = hr->rxs; rx; rx = rx->next)
		for (const struct pending *p = rx->head; p; p = p->next)
			n += p->rec.kind == RK_REQUEST && !p->settled;
	return n;
}

static json_t *str_json(const struct rec *r, enum rec_str f)
{
	const char *s = rec_get(r, f);
	json_t *j = s ? json_string(s) : NULL;
	return j ? j : json_null();
}

/* The identifying members of an open request, as hook_record.h lists. */
static json_t *inflight_item(const struct rx *rx, const struct rec *r, uint64_t now)
{
	char when[40];
	json_t *o = json_object();
	if (!o)
		return NULL;
	hook_record_time(r->wall_us, when, sizeof(when));
	json_object_set_new(o, "time", json_string(when));
	json_object_set_new(o, "session", str_json(r, F_SESSION));
	json_object_set_new(o, "client", str_json(r, F_CLIENT));
	json_object_set_new(o, "client_name", str_json(r, F_CLIENT_NAME));
	json_object_set_new(o, "upstream", str_json(r, F_UPSTREAM));
	json_object_set_new(o, "method", str_json(r, F_METHOD));
	json_object_set_new(o, "tool", str_json(r, F_TOOL));
	json_object_set_new(o, "id", r->id_kind == ID_INT   ? json_integer((json_int_t)r->id_int)
	                             : r->id_kind == ID_STR ? str_json(r, F_ID)
	                                                    : json_null());
	json_object_set_new(o, "arguments", str_json(r, F_ARGUMENTS));
	json_object_set_new(o, "arguments_cut", json_boolean(r->arguments_cut));
	uint64_t start = rx->where->start_us;
	json_object_set_new(o, "age_us", json_integer((json_int_t)(now > start ? now - start : 0)));
	json_object_set_new(o, "notifications", json_integer(rx->notifications));
	return o;
}

json_t *hook_record_inflight(const struct hook_record *hr, size_t limit)
{
	json_t *out = json_array();
	uint64_t now = mono_us();

	if (!out)
		return NULL;
	for (const struct rx *rx = hr->rxs; rx; rx = rx->next) {
		for (const struct pending *p = rx->head; p; p = p->next) {
			if (p->rec.kind != RK_REQUEST || p->settled)
				continue;
			if (json_array_size(out) >= limit)
				return out;
			json_t *o = inflight_item(rx, &p->rec, now);
			if (!o) {
				json_decref(out);
				return NULL;
			}
			json_array_append_new(out, o);
		}
	}
	return out;
}

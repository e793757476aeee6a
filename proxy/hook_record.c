/* hook_record: see hook_record.h.
 *
 * Per HTTP exchange the recorder keeps a `struct rx` in the exchange's
 * hook_data slot, holding the client messages of the exchange as records
 * under construction:
 *
 *   where->hook_data[slot] -> rx --> pending(request id 1) -> pending(notif)
 *                             |        rec: {…, "outcome": null, …}
 *                             +-- linked in hr->rxs (for /calls/inflight)
 *
 * A server answer fills its request's record in place; on_exchange, which
 * runs exactly once per exchange, settles what is still open from the
 * exchange's end, hands every record to the sink and frees the rx.
 */
#include "proxy/hook_record.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/metrics.h"
#include "admin/redact.h"
#include "proxy/inspect.h"
#include "proxy/jsonrpc.h"

#define RX_MAGIC 0x72656378u /* "recx" */
/* Server requests remembered so that the client's response to one is
 * recorded under the request's method (sampling/createMessage…). */
#define SRV_REQ_MAX 64
#define ERROR_MESSAGE_CHARS 500

enum rec_kind { RK_REQUEST, RK_NOTIFICATION, RK_RESPONSE };

struct pending {
	struct pending *next;
	json_t *rec;            /* owned: the record being built */
	json_t *id;             /* owned: a request's id, else NULL */
	enum rec_kind kind;
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
	struct rx *prev, *next;       /* hr->rxs, oldest first */
};

struct srv_req {
	char session[128];
	char id[64];
	char method[64];
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

/* A JSON string, or null when s is NULL or not valid UTF-8 (header-derived
 * values can be anything). */
static json_t *str_or_null(const char *s)
{
	json_t *j = s ? json_string(s) : NULL;
	return j ? j : json_null();
}

/* Names, ids and header values are the client's: a record keeps at most
 * this many characters of each (the ring's bound per record holds). */
#define FIELD_CHARS 256

/* s cut to FIELD_CHARS characters (visibly), or null. */
static json_t *bounded(const char *s)
{
	if (!s)
		return json_null();
	if (strnlen(s, FIELD_CHARS + 1) <= FIELD_CHARS)
		return str_or_null(s);
	char *cut = redact_cut(s, FIELD_CHARS, NULL);
	json_t *j = str_or_null(cut);
	free(cut);
	return j;
}

static void put(json_t *o, const char *key, json_t *v)
{
	json_object_set_new(o, key, v ? v : json_null());
}

static const char *get_str(const json_t *rec, const char *key)
{
	return json_string_value(json_object_get(rec, key));
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

/* ---- records ------------------------------------------------------------- */

/* What a record keeps of a request's parameters. */
static const json_t *recorded_args(const json_t *msg, const char *method)
{
	const json_t *params = json_object_get(msg, "params");
	if (method && (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0))
		return json_object_get(params, "arguments");
	return params;
}

static json_t *record_new(const struct hook_record *hr, const struct inspect_where *w,
                          uint64_t wall_us, const char *from, enum rec_kind kind,
                          const json_t *msg, const char *method)
{
	static const char *const kinds[] = {"request", "notification", "response"};
	char when[40];
	json_t *r = json_object();
	if (!r)
		return NULL;

	hook_record_time(wall_us, when, sizeof(when));
	put(r, "seq", json_integer(0));
	put(r, "time", json_string(when));
	put(r, "session", bounded(session_of(w)));
	put(r, "client", str_or_null(w->client));
	put(r, "client_name", bounded(w->client_name));
	put(r, "upstream", str_or_null(w->upstream));
	put(r, "protocol", bounded(w->protocol));
	put(r, "client_transport", str_or_null(w->client_transport));
	put(r, "upstream_transport", str_or_null(w->upstream_transport));
	put(r, "from", json_string(from));
	put(r, "kind", json_string(kinds[kind]));
	put(r, "method", bounded(method));
	put(r, "tool", bounded(kind == RK_REQUEST ? jrpc_tool_name(msg) : NULL));
	const json_t *id = jrpc_id(msg);
	put(r, "id", json_is_string(id) ? bounded(json_string_value(id))
	             : id ? json_deep_copy(id) : NULL);
	const json_t *args = kind == RK_RESPONSE ? NULL : recorded_args(msg, method);
	int cut = 0;
	char *text = args ? redact_json_text(hr->rd, args, REDACT_ARGS_CHARS, &cut) : NULL;
	put(r, "arguments", text ? json_string(text) : NULL);
	free(text);
	put(r, "arguments_cut", json_boolean(cut));
	put(r, "result_preview", NULL);
	put(r, "result_cut", json_false());
	put(r, "http_status", NULL);
	put(r, "is_error", NULL);
	put(r, "error_code", NULL);
	put(r, "error_message", NULL);
	put(r, "outcome", NULL);
	put(r, "rule", NULL);
	put(r, "modified", json_false());
	put(r, "notifications", json_integer(0));
	put(r, "note", NULL);
	put(r, "latency_us", NULL);
	put(r, "bytes_in", NULL);
	put(r, "bytes_out", NULL);
	return r;
}

/* Fills the answer members from a response message (a server's answer,
 * a hook's answer, or a client's response to a server request). Returns
 * the outcome it implies. */
static const char *fill_answer(const struct hook_record *hr, json_t *rec, const json_t *answer)
{
	if (jrpc_classify(answer) == JRPC_ERROR) {
		const json_t *err = json_object_get(answer, "error");
		const json_t *code = json_object_get(err, "code");
		const char *msg = json_string_value(json_object_get(err, "message"));
		put(rec, "error_code", json_is_integer(code) ? json_integer(json_integer_value(code))
		                                             : NULL);
		if (msg) {
			char *masked = redact_text(hr->rd, msg);
			char *cut = masked ? redact_cut(masked, ERROR_MESSAGE_CHARS, NULL) : NULL;
			put(rec, "error_message", cut ? json_string(cut) : NULL);
			free(masked);
			free(cut);
		}
		return "rpc_error";
	}
	const json_t *result = json_object_get(answer, "result");
	if (!result)
		return "ok";
	int cut = 0;
	char *preview = redact_result_preview(hr->rd, result, REDACT_PREVIEW_CHARS, &cut);
	put(rec, "result_preview", preview ? json_string(preview) : NULL);
	put(rec, "result_cut", json_boolean(cut));
	free(preview);
	const char *method = get_str(rec, "method");
	if (method && strcmp(method, "tools/call") == 0) {
		int is_error = json_is_true(json_object_get(result, "isError"));
		put(rec, "is_error", json_boolean(is_error));
		return is_error ? "tool_error" : "ok";
	}
	return "ok";
}

static void set_blocked(json_t *rec, const struct inspect_msg *m)
{
	const char *rule = m->reason ? m->reason : m->decided_by;
	put(rec, "outcome", json_string("blocked"));
	put(rec, "rule", str_or_null(rule ? rule : "unknown"));
}

/* Hands a finished record to metrics and the sink, then frees it. */
static void emit(struct hook_record *hr, json_t *rec)
{
	struct ring_keys keys = {
		.method = get_str(rec, "method"),
		.tool = get_str(rec, "tool"),
		.session = get_str(rec, "session"),
		.outcome = get_str(rec, "outcome"),
	};
	if (hr->m) {
		if (strcmp(get_str(rec, "from"), "client") == 0) {
			const json_t *lat = json_object_get(rec, "latency_us");
			int timed = strcmp(get_str(rec, "kind"), "request") == 0 && json_is_integer(lat);
			/* A client's response to a server request of unknown method
			 * still gets a readable label. */
			metrics_call(hr->m, keys.method ? keys.method : "(response)", keys.tool,
			             keys.outcome, timed ? (int64_t)json_integer_value(lat) : -1);
		} else {
			metrics_server_message(hr->m, keys.method ? keys.method : "(response)");
		}
	}
	if (hr->sink)
		hr->sink(hr->arg, rec, &keys);
	json_decref(rec);
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
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return NULL;
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
		json_decref(p->rec);
		json_decref(p->id);
		free(p);
	}
	rx->where->hook_data[hr->slot] = NULL;
	rx->magic = 0;
	free(rx);
}

static struct pending *pending_add(struct rx *rx, enum rec_kind kind, json_t *rec)
{
	struct pending *p = calloc(1, sizeof(*p));
	if (!p) {
		json_decref(rec);
		return NULL;
	}
	p->kind = kind;
	p->rec = rec;
	*rx->tail = p;
	rx->tail = &p->next;
	return p;
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
	json_t *rec = record_new(hr, rx->where, rx->wall_us, "client", kind, m->msg, method);
	struct pending *p = rec ? pending_add(rx, kind, rec) : NULL;
	if (!p)
		return;
	if (kind == RK_REQUEST)
		p->id = json_deep_copy(jrpc_id(m->msg));
	if (m->modified)
		put(rec, "modified", json_true());
	if (m->verdict != INSPECT_FORWARD) {
		/* The hook's answer is what the client got: show it, but the
		 * outcome stays "blocked". */
		if (m->answer)
			fill_answer(hr, rec, m->answer);
		set_blocked(rec, m);
		settle(p);
	} else if (kind == RK_RESPONSE) {
		/* The client's answer to a server request: its own outcome. */
		const char *o = fill_answer(hr, rec, m->msg);
		if (strcmp(o, "ok") != 0) {
			put(rec, "outcome", json_string(o));
			settle(p);
		}
	}
}

/* A record of its own for something the server sent unprompted. */
static void server_record(struct hook_record *hr, struct rx *rx, struct inspect_msg *m,
                          enum rec_kind kind)
{
	const char *method = jrpc_method(m->msg);
	json_t *rec = record_new(hr, rx->where, real_us(), "server", kind, m->msg, method);
	if (!rec)
		return;
	const char *outcome = kind == RK_RESPONSE ? fill_answer(hr, rec, m->msg) : "ok";
	put(rec, "outcome", json_string(outcome));
	if (m->modified)
		put(rec, "modified", json_true());
	if (m->verdict != INSPECT_FORWARD)
		set_blocked(rec, m);
	if (kind == RK_REQUEST)
		srv_remember(hr, rx->where->session_id, jrpc_id(m->msg), method);
	emit(hr, rec);
}

static void answer_request(struct hook_record *hr, struct pending *p, struct inspect_msg *m)
{
	const char *outcome = fill_answer(hr, p->rec, m->msg);
	put(p->rec, "outcome", json_string(outcome));
	if (m->modified)
		put(p->rec, "modified", json_true());
	if (m->verdict != INSPECT_FORWARD)
		set_blocked(p->rec, m);
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
			if (p->kind != RK_REQUEST || p->settled)
				continue;
			/* An error with a null id answers a request the server could
			 * not read: all of this exchange's open requests failed. */
			if (id && !json_is_null(id) ? jrpc_id_equal(p->id, id)
			                            : m->kind == JRPC_ERROR) {
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
	json_t *rec = p->rec;
	const struct inspect_where *w = rx->where;

	put(rec, "session", bounded(session_of(w)));
	put(rec, "http_status", x->status ? json_integer(x->status) : NULL);
	put(rec, "bytes_in", json_integer((json_int_t)x->bytes_in));
	put(rec, "bytes_out", json_integer((json_int_t)x->bytes_out));
	if (p->kind == RK_REQUEST)
		put(rec, "notifications", json_integer(rx->notifications));
	if (p->settled) {
		uint64_t lat = p->done_us > w->start_us ? p->done_us - w->start_us : 0;
		put(rec, "latency_us", json_integer((json_int_t)lat));
		if (json_is_null(json_object_get(rec, "outcome")))
			put(rec, "outcome", json_string("ok"));
		return;
	}
	put(rec, "latency_us", json_integer((json_int_t)x->latency_us));
	const char *outcome;
	const char *note = x->error;
	char buf[96];
	if (p->kind != RK_REQUEST && x->end == INSPECT_END_OK && x->status < 400) {
		outcome = "ok";
	} else {
		outcome = end_outcome(x->end);
		if (!note && x->end == INSPECT_END_OK) {
			snprintf(buf, sizeof(buf), "HTTP %d without a JSON-RPC answer%s", x->status,
			         p->kind == RK_REQUEST ? " to this request" : "");
			note = buf;
		}
	}
	put(rec, "outcome", json_string(outcome));
	if (x->end == INSPECT_END_REJECTED)
		put(rec, "rule", json_string("mcpwarden"));
	if (note)
		put(rec, "note", json_string(note));
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
		json_t *rec = p->rec;
		p->rec = NULL;
		emit(hr, rec);
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
	free(hr);
}

size_t hook_record_inflight_count(const struct hook_record *hr)
{
	size_t n = 0;
	for (const struct rx *rx = hr->rxs; rx; rx = rx->next)
		for (const struct pending *p = rx->head; p; p = p->next)
			n += p->kind == RK_REQUEST && !p->settled;
	return n;
}

json_t *hook_record_inflight(const struct hook_record *hr, size_t limit)
{
	static const char *const keep[] = {
		"time", "session", "client", "client_name", "upstream", "method", "tool", "id",
		"arguments", "arguments_cut",
	};
	json_t *out = json_array();
	uint64_t now = mono_us();

	if (!out)
		return NULL;
	for (const struct rx *rx = hr->rxs; rx; rx = rx->next) {
		for (const struct pending *p = rx->head; p; p = p->next) {
			if (p->kind != RK_REQUEST || p->settled)
				continue;
			if (json_array_size(out) >= limit)
				return out;
			json_t *o = json_object();
			if (!o) {
				json_decref(out);
				return NULL;
			}
			for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
				put(o, keep[i], json_incref(json_object_get(p->rec, keep[i])));
			uint64_t start = rx->where->start_us;
			put(o, "age_us", json_integer((json_int_t)(now > start ? now - start : 0)));
			put(o, "notifications", json_integer(rx->notifications));
			json_array_append_new(out, o);
		}
	}
	return out;
}

/* calls: the call records as the admin endpoint serves them: /calls (a
 * filtered read of the ring), /calls/inflight (the recorder's list),
 * /calls/stream (an SSE stream of records as they are made, resumable from
 * the ring), and the recorder's sink, which puts each finished record in
 * the ring and the call log, wakes the stream readers, and counts into the
 * metrics. See admin.h for the endpoints, admin_int.h for the streams'
 * life cycle.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "admin/admin_int.h"
#include "admin/calllog.h"
#include "admin/metrics.h"
#include "admin/ring.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/base/clock.h"
#include "proxy/base/log.h"
#include "proxy/hooks/hook_record.h"
#include "proxy/net/conn.h"
#include "proxy/net/http_parse.h"
#include "proxy/net/inbox.h"

/* ---- query strings ---------------------------------------------------------- */

struct query {
	const char *name[8];
	char value[8][RING_KEY_MAX];
	size_t n;
};

/* Splits "a=1&b=x%20y" into decoded pairs. Returns 0, or -1 with a reply
 * sent: an unknown or repeated parameter, or too many. */
static int parse_query(struct admin_x *ax, const char *q, const char *const allowed[],
                       struct query *out)
{
	out->n = 0;
	while (q && *q) {
		size_t n = strcspn(q, "&");
		const char *eq = memchr(q, '=', n);
		size_t klen = eq ? (size_t)(eq - q) : n;
		char key[64];
		admin_pct_decode(q, klen, key, sizeof(key));
		size_t i = 0;
		while (allowed[i] && strcmp(allowed[i], key) != 0)
			i++;
		if (klen == 0) {
			/* "a=1&&b=2": an empty piece is harmless */
		} else if (!allowed[i]) {
			admin_reply_error(ax, 400, "unknown parameter \"%.60s\"", key);
			return -1;
		} else {
			for (size_t j = 0; j < out->n; j++) {
				if (out->name[j] == allowed[i]) {
					admin_reply_error(ax, 400, "parameter \"%s\" given twice", key);
					return -1;
				}
			}
			if (out->n >= sizeof(out->name) / sizeof(out->name[0])) {
				admin_reply_error(ax, 400, "too many parameters");
				return -1;
			}
			out->name[out->n] = allowed[i];
			if (eq)
				admin_pct_decode(eq + 1, n - klen - 1, out->value[out->n], RING_KEY_MAX);
			else
				out->value[out->n][0] = '\0';
			out->n++;
		}
		q += n + (q[n] == '&');
	}
	return 0;
}

static const char *query_get(const struct query *q, const char *name)
{
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->name[i], name) == 0)
			return q->value[i];
	return NULL;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static const char *const outcome_names[] = {
	"ok", "tool_error", "rpc_error", "blocked", "upstream_error", "timeout", "cancelled", NULL,
};

/* Fills f from the common filter parameters. Returns 0, or -1 after
 * replying 400. Strings in f point into q. */
static int query_filter(struct admin_x *ax, const struct query *q, struct ring_filter *f)
{
	const char *since = query_get(q, "since");
	const char *outcome = query_get(q, "outcome");

	if (since && parse_u64(since, UINT64_MAX - 1, &f->since) < 0) {
		admin_reply_error(ax, 400, "since: must be a record sequence number");
		return -1;
	}
	if (outcome && !*outcome)
		outcome = NULL;
	if (outcome) {
		size_t i = 0;
		while (outcome_names[i] && strcmp(outcome_names[i], outcome) != 0)
			i++;
		if (!outcome_names[i]) {
			admin_reply_error(ax, 400, "outcome: must be one of ok, tool_error, rpc_error, blocked, "
			                     "upstream_error, timeout, cancelled");
			return -1;
		}
	}
	/* An empty value ("tool=", as a form sends it) filters nothing. */
	const char *const names[] = {"method", "tool", "session"};
	const char **dst[] = {&f->method, &f->tool, &f->session};
	for (size_t i = 0; i < 3; i++) {
		const char *v = query_get(q, names[i]);
		*dst[i] = v && *v ? v : NULL;
	}
	f->outcome = outcome;
	return 0;
}

/* ?finding=<code> (/calls only: a stream's records are matched on their
 * keys, and a finding is not one). Codes are lower-case words joined by
 * '-' (proxy/hooks/hook_validate.h); anything else cannot match, so it
 * is refused rather than answered with an empty list. Returns 0, or -1
 * after replying 400. */
static int query_finding(struct admin_x *ax, const struct query *q, struct ring_filter *f)
{
	const char *code = query_get(q, "finding");
	if (!code || !*code)
		return 0;
	for (const char *p = code; *p; p++) {
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-')) {
			admin_reply_error(ax, 400, "finding: a finding code such as arguments-invalid "
			                           "(lower-case letters, digits and '-')");
			return -1;
		}
	}
	f->finding = code;
	return 0;
}

/* ---- /calls, /calls/inflight ------------------------------------------------ */

void calls_list(struct admin_x *ax, const char *qs)
{
	static const char *const allowed[] = {"limit", "since", "method", "tool", "session",
	                                      "outcome", "finding", NULL};
	struct admin *adm = ax->adm;
	struct query q;
	struct ring_filter f = {0};
	uint64_t limit = ADMIN_CALLS_DEFAULT;

	if (parse_query(ax, qs, allowed, &q) < 0 || query_filter(ax, &q, &f) < 0 ||
	    query_finding(ax, &q, &f) < 0)
		return;
	const char *l = query_get(&q, "limit");
	if (l && (parse_u64(l, RING_MAX_SIZE, &limit) < 0 || limit == 0 ||
	          limit > ring_size(adm->ring))) {
		admin_reply_error(ax, 400, "limit: must be a whole number from 1 to %zu",
		            ring_size(adm->ring));
		return;
	}
	f.limit = (size_t)limit;
	struct ring_item *items;
	admin_lock(adm);
	size_t n = ring_read(adm->ring, &f, &items);
	size_t records = ring_count(adm->ring);
	unsigned long long oldest = ring_oldest_seq(adm->ring), newest = ring_newest_seq(adm->ring);
	unsigned long long dropped = ring_dropped(adm->ring);
	admin_unlock(adm);
	if (n == (size_t)-1) {
		admin_reply_error(ax, 500, "out of memory");
		return;
	}
	struct evbuffer *body = evbuffer_new();
	if (!body) {
		ring_items_free(items, n);
		conn_abort(ax->c, "out of memory");
		return;
	}
	evbuffer_add(body, "{\"calls\":[", 10);
	for (size_t i = 0; i < n; i++) {
		if (i)
			evbuffer_add(body, ",", 1);
		evbuffer_add(body, items[i].json, items[i].len);
	}
	ring_items_free(items, n);
	evbuffer_add_printf(body,
	                    "],\"count\":%zu,\"ring\":{\"size\":%zu,\"records\":%zu,"
	                    "\"oldest_seq\":%llu,\"newest_seq\":%llu,\"dropped\":%llu}}\n",
	                    n, ring_size(adm->ring), records, oldest, newest, dropped);
	struct evbuffer *h = admin_common_headers("application/json");
	if (!h) {
		evbuffer_free(body);
		conn_abort(ax->c, "out of memory");
		return;
	}
	conn_reply_head(ax->c, 200, h, (int64_t)evbuffer_get_length(body));
	evbuffer_free(h);
	conn_reply_body_buffer(ax->c, body);
	evbuffer_free(body);
	conn_reply_end(ax->c);
}

void calls_inflight(struct admin_x *ax, const char *qs)
{
	static const char *const allowed[] = {"limit", NULL};
	struct query q;
	uint64_t limit = ADMIN_CALLS_DEFAULT;

	if (parse_query(ax, qs, allowed, &q) < 0)
		return;
	const char *l = query_get(&q, "limit");
	if (l && (parse_u64(l, ADMIN_INFLIGHT_MAX, &limit) < 0 || limit == 0)) {
		admin_reply_error(ax, 400, "limit: must be a whole number from 1 to %d", ADMIN_INFLIGHT_MAX);
		return;
	}
	size_t count = 0;
	json_t *list = hook_record_inflight(ax->adm->rec, (size_t)limit, &count);
	json_t *body = json_object();
	if (body && list) {
		json_object_set_new(body, "count", json_integer((json_int_t)count));
		json_object_set_new(body, "inflight", list);
		list = NULL;
	}
	json_decref(list);
	admin_reply_json(ax, 200, body, NULL);
}

/* ---- /calls/stream -------------------------------------------------------- */

/* Records read from the ring per pass when a stream catches up. */
#define STREAM_PUMP_BATCH 64

static void stream_write(struct admin_x *ax, const char *data, size_t len)
{
	conn_reply_body(ax->c, data, len);
	ax->last_write_us = clock_mono_us();
}

/* One record as an SSE event. */
static void stream_event(struct admin_x *ax, uint64_t seq, const char *json, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	if (!b)
		return;
	evbuffer_add_printf(b, "id: %llu\ndata: ", (unsigned long long)seq);
	evbuffer_add(b, json, len);
	evbuffer_add(b, "\n\n", 2);
	conn_reply_body_buffer(ax->c, b);
	evbuffer_free(b);
	ax->last_write_us = clock_mono_us();
	ax->next_seq = seq + 1;
}

/* Writes what the stream has not had yet, from the ring, oldest first,
 * until it is current or its output is over the cap; ->drained calls it
 * again once the reader took some. Records that left the ring meanwhile
 * are announced by a "gap" event, never skipped silently. */
void calls_stream_pump(struct admin_x *ax)
{
	struct admin *adm = ax->adm;

	while (ax->behind && !ax->dead && !conn_output_full(ax->c)) {
		struct ring_filter f = ax->filter;
		f.oldest_first = 1;
		f.limit = STREAM_PUMP_BATCH;
		struct ring_item *items;
		/* What left the ring and what is read from it, in one look:
		 * workers append between two (they hold the lock only to
		 * publish), and a record overwritten in between would be
		 * missed without its gap. */
		admin_lock(adm);
		uint64_t oldest = ring_oldest_seq(adm->ring), from = ax->next_seq;
		if (oldest && from < oldest)
			from = oldest;
		f.since = from - 1;
		size_t n = ring_read(adm->ring, &f, &items);
		uint64_t newest = ring_newest_seq(adm->ring);
		admin_unlock(adm);
		if (n == (size_t)-1)
			return; /* out of memory: try again on the next drain or record */
		if (from > ax->next_seq) {
			char gap[128];
			int k = snprintf(gap, sizeof(gap),
			                 "event: gap\ndata: {\"missed_from\":%llu,\"missed_to\":%llu}\n\n",
			                 (unsigned long long)ax->next_seq, (unsigned long long)from - 1);
			stream_write(ax, gap, (size_t)k);
			ax->next_seq = from;
		}
		size_t i = 0;
		for (; i < n && !conn_output_full(ax->c); i++)
			stream_event(ax, items[i].seq, items[i].json, items[i].len);
		ring_items_free(items, n);
		if (i == n && n < STREAM_PUMP_BATCH) {
			/* Nothing more matches: current from the next record on. */
			ax->next_seq = newest + 1;
			ax->behind = 0;
		}
	}
}

void calls_stream(struct admin_x *ax, const struct http_msg *req, const char *qs)
{
	static const char *const allowed[] = {"since", "method", "tool", "session", "outcome", NULL};
	struct admin *adm = ax->adm;
	struct query q;
	struct ring_filter f = {0};

	if (parse_query(ax, qs, allowed, &q) < 0 || query_filter(ax, &q, &f) < 0)
		return;
	const char *last = http_msg_header(req, "last-event-id");
	if (last && *last && parse_u64(last, UINT64_MAX - 1, &f.since) < 0) {
		admin_reply_error(ax, 400, "Last-Event-ID: must be a record sequence number");
		return;
	}
	if (!query_get(&q, "since") && !(last && *last)) {
		admin_lock(adm);
		f.since = ring_newest_seq(adm->ring); /* only what happens from now on */
		admin_unlock(adm);
	}
	if (adm->ctx->draining) {
		admin_reply_error(ax, 503, "mcpwarden is shutting down");
		return;
	}
	if (adm->nstreams >= adm->max_streams) {
		struct evbuffer *extra = evbuffer_new();
		if (extra)
			evbuffer_add_printf(extra, "Retry-After: 5\r\n");
		json_t *body = json_pack("{s:s}", "error", "too many /calls/stream readers");
		admin_reply_json(ax, 503, body, extra);
		return;
	}
	/* The filter strings live in the exchange. */
	const char **dst[4] = {&f.method, &f.tool, &f.session, &f.outcome};
	for (size_t i = 0; i < 4; i++) {
		if (*dst[i]) {
			snprintf(ax->fval[i], sizeof(ax->fval[i]), "%s", *dst[i]);
			*dst[i] = ax->fval[i];
		}
	}
	ax->filter = f;
	ax->filter.since = 0;

	struct evbuffer *h = admin_common_headers("text/event-stream");
	if (!h) {
		conn_abort(ax->c, "out of memory");
		return;
	}
	evbuffer_add_printf(h, "X-Accel-Buffering: no\r\n");
	conn_reply_head(ax->c, 200, h, -1);
	evbuffer_free(h);
	static const char hello[] = "retry: 2000\n: mcpwarden calls\n\n";
	stream_write(ax, hello, sizeof(hello) - 1);
	ax->kind = AX_STREAM;
	admin_list_push(&adm->streams, ax);
	adm->nstreams++;
	__atomic_store_n(&adm->streams_open, (int)adm->nstreams, __ATOMIC_RELAXED);
	/* Catch up from the ring (oldest first), then live. */
	ax->next_seq = f.since + 1;
	ax->behind = 1;
	calls_stream_pump(ax);
}

void calls_keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct admin *adm = arg;
	uint64_t now = clock_mono_us();
	unsigned ms = adm->ctx->cfg->timeouts.sse_keepalive_ms;
	uint64_t every = (uint64_t)(ms ? ms : ADMIN_KEEPALIVE_MS) * 1000u;
	(void)fd;
	(void)what;
	for (struct admin_x *ax = adm->streams; ax; ax = ax->next) {
		if (ax->dead || now - ax->last_write_us + 1000 < every || conn_output_full(ax->c))
			continue;
		stream_write(ax, ": keep-alive\n\n", 14);
	}
}

/* ---- the recorder's sink ---------------------------------------------------- */

/* On worker 0's loop: new records for the /calls/stream readers. */
static void notify_run(void *arg)
{
	struct admin *adm = arg;
	/* Cleared first: a record made while we pump wakes us again. */
	__atomic_store_n(&adm->notify_pending, 0, __ATOMIC_RELEASE);
	for (struct admin_x *ax = adm->streams; ax; ax = ax->next) {
		if (ax->dead)
			continue;
		ax->behind = 1;
		calls_stream_pump(ax);
	}
}

void calls_notify_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	notify_run(arg);
}

static void on_record(void *arg, struct hook_record_text *t, const struct record_keys *keys)
{
	struct admin *adm = arg;
	(void)keys; /* they travel in the block */
	/* The recorder's buffer moves into the ring, no copy: what the slot
	 * held goes back to the recorder, which frees or reuses it once the
	 * lock is released. It holds the record's JSON text when there is a
	 * call log (admin.c: the log reads every record as it comes, so the
	 * text is written once, per call), else the record as stored, written
	 * as text when /calls or a stream reads it (issue 20). */
	struct record_block *b = hook_record_text_block(t, ring_next_seq(adm->ring));
	char *s = b->block + (b->json - b->block); /* the ring's once swapped: under the lock */
	size_t len = b->len;

	if (ring_swap(adm->ring, b) == 0) {
		log_msg(LOG_WARN, "admin: a call record of %zu bytes was not kept", len);
		return;
	}
	if (adm->log)
		calllog_write(adm->log, s, len, clock_mono_us());
	/* Runs on whichever worker saw the call, holding adm->lock: the
	 * readers are told to look at the ring from their own loop. */
	if (__atomic_load_n(&adm->streams_open, __ATOMIC_RELAXED) &&
	    !__atomic_exchange_n(&adm->notify_pending, 1, __ATOMIC_ACQ_REL)) {
		if (pthread_equal(pthread_self(), adm->thread))
			event_active(adm->notify, 0, 0);
		else if (inbox_post(adm->ctx->inbox, notify_run, NULL, adm) < 0)
			__atomic_store_n(&adm->notify_pending, 0, __ATOMIC_RELEASE);
	}
}

/* The sink's counts go to the metrics (adm->m), under adm->lock. The
 * recorder cuts labels no shorter than the metrics do. */
_Static_assert(METRICS_LABEL_MAX <= RECORD_LABEL_MAX, "labels cut twice");

static void count_call(void *arg, const char *method, const char *tool, const char *outcome,
                       int64_t latency_us)
{
	metrics_call(((struct admin *)arg)->m, method, tool, outcome, latency_us);
}

static void count_server_message(void *arg, const char *method)
{
	metrics_server_message(((struct admin *)arg)->m, method);
}

static void count_exchange(void *arg, uint64_t bytes_in, uint64_t bytes_out)
{
	metrics_exchange(((struct admin *)arg)->m, bytes_in, bytes_out);
}

static void count_policy(void *arg, const char *rule, const char *verdict)
{
	metrics_policy(((struct admin *)arg)->m, rule, verdict);
}

static void count_session_opened(void *arg)
{
	metrics_session_opened(((struct admin *)arg)->m);
}

static void count_session_closed(void *arg)
{
	metrics_session_closed(((struct admin *)arg)->m);
}

const struct record_sink calls_sink = {
	.record = on_record,
	.call = count_call,
	.server_message = count_server_message,
	.exchange = count_exchange,
	.policy = count_policy,
	.session_opened = count_session_opened,
	.session_closed = count_session_closed,
};

/* otlp: see otlp.h.
 *
 *   enqueue --> queue: span texts joined by commas, ends[i] the end of
 *               span i (<= queue_spans) --timer/full--> batch
 *   batch: body text kept until answered --POST--> 2xx: exported
 *                                          429/50x/error: retry timer
 *                                          other: dropped (export_failed)
 */
#include "proxy/net/otlp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/base/log.h"
#include "proxy/base/otlp_json.h"
#include "proxy/base/sbuf.h"
#include "proxy/base/version.h"
#include "proxy/config.h"
#include "proxy/net/http_parse.h"
#include "proxy/net/upstream.h"

#define OTLP_MAX_ATTEMPTS 5
#define OTLP_BACKOFF_FIRST_MS 500
#define OTLP_BACKOFF_MAX_MS 30000

struct otlp {
	struct event_base *base;        /* borrowed */
	const struct px_telemetry *t;   /* borrowed */
	struct upstream *up;            /* owned */
	struct sbuf queue;              /* owned: span texts, comma-separated */
	size_t *ends;                   /* owned: queue_spans offsets into queue */
	size_t nq;                      /* spans in queue */
	struct sbuf resource;           /* owned: KeyValue text, service.name first */
	struct event *timer;            /* owned: batch delay, or retry backoff */
	struct upstream_req *req;       /* owned: the POST in flight, or NULL */
	struct sbuf body;               /* owned: the batch being sent (body_spans > 0) */
	size_t body_spans;
	unsigned attempt;
	int status;                     /* of the reply being read */
	unsigned retry_after_ms;
	int flushing;                   /* send batch after batch until empty */
	uint64_t exported, dropped[OTLP_DROP_N]; /* atomics */
};

static _Thread_local struct otlp *current;

void otlp_bind(struct otlp *o)
{
	current = o;
}

struct otlp *otlp_current(void)
{
	return current;
}

static void count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

const char *otlp_drop_name(enum otlp_drop d)
{
	static const char *const names[] = {"queue_full", "export_failed", "shutdown"};
	return d < OTLP_DROP_N ? names[d] : "?";
}

void otlp_stats(const struct otlp *o, uint64_t *exported, uint64_t dropped[OTLP_DROP_N])
{
	*exported = o ? __atomic_load_n(&o->exported, __ATOMIC_RELAXED) : 0;
	for (int i = 0; i < OTLP_DROP_N; i++)
		dropped[i] = o ? __atomic_load_n(&o->dropped[i], __ATOMIC_RELAXED) : 0;
}

size_t otlp_pending(const struct otlp *o)
{
	return o ? o->nq + o->body_spans : 0;
}

static void send_batch(struct otlp *o);

static void arm(struct otlp *o, unsigned ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	evtimer_add(o->timer, &tv);
}

static void batch_done(struct otlp *o, int ok)
{
	count(ok ? &o->exported : &o->dropped[OTLP_DROP_EXPORT_FAILED], o->body_spans);
	o->body.len = 0;
	o->body_spans = 0;
	o->attempt = 0;
	if (o->nq >= o->t->batch_spans || (o->flushing && o->nq))
		send_batch(o);
	else if (o->nq)
		arm(o, o->t->batch_delay_ms);
}

/* The batch failed in a way worth another try, or it is given up. */
static void retry_or_drop(struct otlp *o, const char *why)
{
	upstream_req_free(o->req);
	o->req = NULL;
	if (++o->attempt >= OTLP_MAX_ATTEMPTS) {
		log_msg(LOG_WARN, "otlp: %zu spans dropped after %u attempts to %s: %s", o->body_spans,
		        o->attempt, o->t->otlp.url_safe, why);
		batch_done(o, 0);
		return;
	}
	unsigned ms = OTLP_BACKOFF_FIRST_MS << (o->attempt - 1);
	if (o->retry_after_ms > ms)
		ms = o->retry_after_ms;
	if (ms > OTLP_BACKOFF_MAX_MS)
		ms = OTLP_BACKOFF_MAX_MS;
	log_msg(LOG_DEBUG, "otlp: %s: %s, retry in %u ms", o->t->otlp.url_safe, why, ms);
	arm(o, ms);
}

static int on_head(void *arg, const struct http_msg *resp)
{
	struct otlp *o = arg;
	o->status = http_msg_status(resp);
	const char *ra = http_msg_header(resp, "retry-after");
	o->retry_after_ms = ra ? (unsigned)strtoul(ra, NULL, 10) * 1000u : 0;
	return 0;
}

static int on_body(void *arg, const char *data, size_t len)
{
	(void)arg;
	(void)data;
	(void)len; /* an ExportTraceServiceResponse: partial_success is not acted on */
	return 0;
}

static void on_done(void *arg)
{
	struct otlp *o = arg;
	int s = o->status;
	if (s >= 200 && s < 300) {
		upstream_req_free(o->req);
		o->req = NULL;
		batch_done(o, 1);
	} else if (s == 429 || s == 502 || s == 503 || s == 504) {
		char why[32];
		snprintf(why, sizeof(why), "HTTP %d", s);
		retry_or_drop(o, why);
	} else {
		log_msg(LOG_WARN, "otlp: %s answered %d: %zu spans dropped", o->t->otlp.url_safe, s,
		        o->body_spans);
		upstream_req_free(o->req);
		o->req = NULL;
		batch_done(o, 0);
	}
}

static void on_error(void *arg, enum upstream_err err, const char *detail)
{
	(void)err;
	struct otlp *o = arg;
	o->retry_after_ms = 0;
	retry_or_drop(o, detail);
}

static const struct upstream_req_cbs cbs = {on_head, on_body, on_done, on_error};

/* POSTs o->body (a new batch is cut from the queue first when none). */
static void post(struct otlp *o)
{
	const struct px_upstream_conf *u = &o->t->otlp;
	struct evbuffer *b = evbuffer_new();
	if (!b)
		return;
	evbuffer_add_printf(b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
	                       "Content-Length: %zu\r\nUser-Agent: mcpwarden/%s\r\n",
	                    u->target, u->host_header, o->body.len, version_get());
	for (size_t i = 0; i < u->nheaders; i++)
		evbuffer_add_printf(b, "%s: %s\r\n", u->headers[i].name, u->headers[i].value);
	if (u->basic_auth)
		evbuffer_add_printf(b, "Authorization: %s\r\n", u->basic_auth);
	evbuffer_add(b, "\r\n", 2);
	evbuffer_add(b, o->body.p, o->body.len);
	o->status = 0;
	o->req = upstream_req_new(o->up, b, 0, &cbs, o);
	if (!o->req)
		retry_or_drop(o, "out of memory");
}

/* Cuts the first batch_spans spans off the queue into a request body. */
static void send_batch(struct otlp *o)
{
	if (o->req || o->body_spans || !o->nq)
		return;
	evtimer_del(o->timer);
	size_t take = o->nq < o->t->batch_spans ? o->nq : o->t->batch_spans;
	size_t cut = o->ends[take - 1];
	o->body.len = 0;
	o->body.oom = 0;
	otlp_json_request_begin(&o->body, o->resource.p, "mcpwarden", version_get());
	sbuf_putn(&o->body, o->queue.p, cut);
	otlp_json_request_end(&o->body);
	/* The rest moves to the front, past the comma after the cut. */
	size_t rest = take < o->nq ? cut + 1 : cut;
	memmove(o->queue.p, o->queue.p + rest, o->queue.len - rest);
	o->queue.len -= rest;
	for (size_t i = take; i < o->nq; i++)
		o->ends[i - take] = o->ends[i] - rest;
	o->nq -= take;
	if (o->body.oom) {
		count(&o->dropped[OTLP_DROP_EXPORT_FAILED], take);
		o->body.len = 0;
		return;
	}
	o->body_spans = take;
	o->attempt = 0;
	post(o);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct otlp *o = arg;
	if (o->body_spans && !o->req)
		post(o); /* a retry */
	else
		send_batch(o);
}

void otlp_enqueue(struct otlp *o, const char *span, size_t len)
{
	if (!o)
		return;
	if (o->nq >= o->t->queue_spans) {
		count(&o->dropped[OTLP_DROP_QUEUE_FULL], 1);
		return;
	}
	size_t before = o->queue.len;
	if (o->nq)
		sbuf_putn(&o->queue, ",", 1);
	sbuf_putn(&o->queue, span, len);
	if (o->queue.oom) {
		o->queue.len = before;
		o->queue.oom = 0;
		count(&o->dropped[OTLP_DROP_QUEUE_FULL], 1);
		return;
	}
	o->ends[o->nq++] = o->queue.len;
	if (o->req || o->body_spans)
		return; /* batch_done sends the next */
	if (o->nq >= o->t->batch_spans)
		send_batch(o);
	else if (o->nq == 1)
		arm(o, o->t->batch_delay_ms);
}

void otlp_flush(struct otlp *o)
{
	if (!o)
		return;
	o->flushing = 1;
	send_batch(o);
}

struct otlp *otlp_new(struct event_base *base, const struct px_telemetry *t, char *err,
                      size_t errlen)
{
	struct otlp *o = calloc(1, sizeof(*o));
	if (!o) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	o->base = base;
	o->t = t;
	o->ends = calloc(t->queue_spans ? t->queue_spans : 1, sizeof(*o->ends));
	o->timer = evtimer_new(base, on_timer, o);
	struct upstream_opts uo = {base, 16384, 30000, NULL};
	o->up = upstream_new(&uo, &t->otlp, err, errlen);
	otlp_json_attr_str(&o->resource, "service.name", t->service_name);
	/* The resource's own attributes (OTEL_RESOURCE_ATTRIBUTES); a
	 * service.name there is shadowed by the one above, as the SDKs do. */
	size_t i;
	json_t *kv;
	json_array_foreach(t->resource, i, kv) {
		const char *k = json_string_value(json_object_get(kv, "key"));
		const char *v = json_string_value(json_object_get(json_object_get(kv, "value"), "stringValue"));
		if (k && v && strcmp(k, "service.name") != 0)
			otlp_json_attr_str(&o->resource, k, v);
	}
	otlp_json_attr_str(&o->resource, "telemetry.sdk.name", "mcpwarden");
	otlp_json_attr_str(&o->resource, "telemetry.sdk.version", version_get());
	if (!o->ends || !o->timer || !o->up || o->resource.oom) {
		if (!err[0])
			snprintf(err, errlen, "out of memory");
		otlp_free(o);
		return NULL;
	}
	return o;
}

void otlp_free(struct otlp *o)
{
	if (!o)
		return;
	count(&o->dropped[OTLP_DROP_SHUTDOWN], otlp_pending(o));
	upstream_req_free(o->req);
	if (o->timer)
		event_free(o->timer);
	upstream_free(o->up);
	free(o->body.p);
	free(o->queue.p);
	free(o->ends);
	free(o->resource.p);
	if (current == o)
		current = NULL;
	free(o);
}

/* otlp: see otlp.h.
 *
 *   enqueue --> queue (json array, <= queue_spans) --timer/full--> batch
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
	json_t *queue;                  /* owned array of spans */
	json_t *resource;               /* owned: KeyValue array, service.name first */
	struct event *timer;            /* owned: batch delay, or retry backoff */
	struct upstream_req *req;       /* owned: the POST in flight, or NULL */
	char *body;                     /* owned: the batch being sent, or NULL */
	size_t body_len, body_spans;
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
	return o ? json_array_size(o->queue) + o->body_spans : 0;
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
	free(o->body);
	o->body = NULL;
	o->body_spans = 0;
	o->attempt = 0;
	if (json_array_size(o->queue) >= o->t->batch_spans || (o->flushing && json_array_size(o->queue)))
		send_batch(o);
	else if (json_array_size(o->queue))
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
	                    u->target, u->host_header, o->body_len, version_get());
	for (size_t i = 0; i < u->nheaders; i++)
		evbuffer_add_printf(b, "%s: %s\r\n", u->headers[i].name, u->headers[i].value);
	if (u->basic_auth)
		evbuffer_add_printf(b, "Authorization: %s\r\n", u->basic_auth);
	evbuffer_add(b, "\r\n", 2);
	evbuffer_add(b, o->body, o->body_len);
	o->status = 0;
	o->req = upstream_req_new(o->up, b, 0, &cbs, o);
	if (!o->req)
		retry_or_drop(o, "out of memory");
}

static void send_batch(struct otlp *o)
{
	if (o->req || o->body || !json_array_size(o->queue))
		return;
	evtimer_del(o->timer);
	size_t n = json_array_size(o->queue), take = n < o->t->batch_spans ? n : o->t->batch_spans;
	json_t *spans = json_array();
	for (size_t i = 0; spans && i < take; i++)
		json_array_append(spans, json_array_get(o->queue, i));
	json_t *rest = json_array();
	for (size_t i = take; rest && i < n; i++)
		json_array_append(rest, json_array_get(o->queue, i));
	json_decref(o->queue);
	o->queue = rest ? rest : json_array();
	json_t *req = spans ? otlp_json_request(o->resource, "mcpwarden", version_get(), spans) : NULL;
	o->body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	o->body_spans = take;
	if (!o->body) {
		count(&o->dropped[OTLP_DROP_EXPORT_FAILED], take);
		o->body_spans = 0;
		return;
	}
	o->body_len = strlen(o->body);
	o->attempt = 0;
	post(o);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct otlp *o = arg;
	if (o->body && !o->req)
		post(o); /* a retry */
	else
		send_batch(o);
}

void otlp_enqueue(struct otlp *o, json_t *span)
{
	if (!o || !span) {
		json_decref(span);
		return;
	}
	if (json_array_size(o->queue) >= o->t->queue_spans) {
		count(&o->dropped[OTLP_DROP_QUEUE_FULL], 1);
		json_decref(span);
		return;
	}
	if (json_array_append_new(o->queue, span) < 0) {
		count(&o->dropped[OTLP_DROP_QUEUE_FULL], 1);
		return;
	}
	size_t n = json_array_size(o->queue);
	if (o->req || o->body)
		return; /* batch_done sends the next */
	if (n >= o->t->batch_spans)
		send_batch(o);
	else if (n == 1)
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
	o->queue = json_array();
	o->resource = json_array();
	o->timer = evtimer_new(base, on_timer, o);
	struct upstream_opts uo = {base, 16384, 30000, NULL};
	o->up = upstream_new(&uo, &t->otlp, err, errlen);
	if (!o->queue || !o->resource || !o->timer || !o->up ||
	    otlp_json_attr_str(o->resource, "service.name", t->service_name) < 0) {
		if (!err[0])
			snprintf(err, errlen, "out of memory");
		otlp_free(o);
		return NULL;
	}
	/* The resource's own attributes (OTEL_RESOURCE_ATTRIBUTES); a
	 * service.name there is shadowed by the one above, as the SDKs do. */
	size_t i;
	json_t *kv;
	json_array_foreach(t->resource, i, kv) {
		const char *k = json_string_value(json_object_get(kv, "key"));
		if (k && strcmp(k, "service.name") != 0)
			json_array_append(o->resource, kv);
	}
	otlp_json_attr_str(o->resource, "telemetry.sdk.name", "mcpwarden");
	otlp_json_attr_str(o->resource, "telemetry.sdk.version", version_get());
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
	free(o->body);
	json_decref(o->queue);
	json_decref(o->resource);
	if (current == o)
		current = NULL;
	free(o);
}

/* otlp: the OTLP/HTTP trace exporter of one worker (issue 23).
 *
 * Spans (OTLP/JSON objects, proxy/base/otlp_json.h) are put on a bounded
 * queue and sent from the worker's own loop, in batches, with the
 * project's upstream HTTP client (upstream.h: keep-alive, https). Nothing
 * on the data path waits for it: enqueueing is a copy of the span's text
 * into the queue's buffer; a full queue drops the span and counts it.
 *
 *   batch    at most batch_spans per POST; a partial batch leaves after
 *            batch_delay_ms; one POST in flight per worker
 *   retry    429, 502, 503, 504 and connection errors/timeouts: the same
 *            batch again after 0.5 s, 1 s, 2 s ... (at most 30 s; a
 *            Retry-After of seconds is honoured up to that), 5 attempts
 *   drops    counted by reason: queue_full, export_failed (another
 *            status, or retries used up), shutdown (left at exit)
 *
 * Header values (credentials) are written only to the endpoint's socket;
 * logs name the endpoint by its loggable URL (url_safe) only.
 * Not here: what a span says (proxy/hooks/hook_trace.c).
 */
#ifndef MCPWARDEN_OTLP_H
#define MCPWARDEN_OTLP_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct px_telemetry;

enum otlp_drop { OTLP_DROP_QUEUE_FULL = 0, OTLP_DROP_EXPORT_FAILED, OTLP_DROP_SHUTDOWN, OTLP_DROP_N };

struct otlp;

/* t is borrowed (the configuration outlives the exporter). NULL with
 * the reason in err. */
struct otlp *otlp_new(struct event_base *base, const struct px_telemetry *t, char *err,
                      size_t errlen);
/* Counts what is still queued as dropped (shutdown). Accepts NULL. */
void otlp_free(struct otlp *o);
/* Queues a copy of span[0..len) (one Span's JSON text). Worker thread
 * only. o NULL: nothing. */
void otlp_enqueue(struct otlp *o, const char *span, size_t len);
/* Sends what is queued now (drain), batch after batch. */
void otlp_flush(struct otlp *o);
/* Spans queued or in flight: 0 when a drain is done. */
size_t otlp_pending(const struct otlp *o);
/* Counters: any thread (relaxed atomics). */
void otlp_stats(const struct otlp *o, uint64_t *exported, uint64_t dropped[OTLP_DROP_N]);
const char *otlp_drop_name(enum otlp_drop d);

/* The exporter of the calling thread's worker (otlp_bind), or NULL. */
void otlp_bind(struct otlp *o);
struct otlp *otlp_current(void);

#endif

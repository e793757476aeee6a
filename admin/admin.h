/* admin: the admin endpoint, a transport adapter on its own listener.
 *
 * It owns the call recorder (proxy/hooks/hook_record.c) and is its sink
 * (proxy/hooks/sink.h): the ring of records (admin/ring.c), the metrics
 * (admin/metrics.c), the live streams (admin/calls.c) and the optional
 * JSON-lines log (admin/calllog.c). Everything else it shows it pulls when
 * asked: the contract hook's reports, the live contract's summaries, and
 * every module's counters through the metrics sources the wiring
 * registers (admin_add_metrics_source).
 * Endpoints (GET or HEAD):
 *
 *   /                 the live page (admin/page.html, built into the binary)
 *   /calls            records, newest first: ?limit=&since=&method=&tool=
 *                     &session=&outcome=&finding= (a finding code of the
 *                     live contract, proxy/hooks/hook_validate.h)
 *   /calls/inflight   client requests still waiting for an answer, with age
 *   /calls/stream     text/event-stream of records as they are made; each
 *                     event's id is the record's seq; Last-Event-ID (or
 *                     ?since=) resumes from the ring; same filters as /calls
 *   /contract         latest contract report per upstream, and "live": the
 *                     live contract's per-tool summary (hook_validate.h),
 *                     and "diff": the diff against the baseline, breaking
 *                     first (contract_view.h; live baselines, issue 21)
 *   /metrics          Prometheus text format
 *   /healthz          alive: 200 while the event loop runs
 *   /readyz           200 when every upstream accepts a TCP connection
 *                     (probed in the background every probe_interval_ms
 *                     from the first /readyz on, answered from the latest
 *                     results: probes.c, issue 23), 503
 *                     otherwise or while draining; with
 *                     ready_requires_contract also while an upstream's
 *                     latest complete listing fails its contract
 *
 * And one POST (live baselines, issue 21): /contract/<upstream>/accept
 * makes the upstream's latest complete listing its baseline
 * (hook_contract_accept). Its own access rules: with a token, 401 without
 * Authorization and 403 with another token; a foreign Origin 403; the
 * body must be declared application/json (415): no "simple" cross-site
 * request can reach it. 404 unknown upstream, 409 nothing to accept.
 *
 * Access: with admin.token set every request needs "Authorization: Bearer
 * <token>" (compared in constant time; 401 otherwise). Without a token the
 * endpoint only binds loopback addresses and only answers requests whose
 * Host is a loopback name, so a web page cannot reach it through DNS
 * rebinding. No CORS headers are ever sent.
 *
 * Configuration ($.admin, see conf/README.md): listen ("HOST:PORT" or
 * "off"; default 127.0.0.1:9090, --admin), token, token_file, ring_size,
 * log_calls ("stdout" or a file path), redact_keys, redact_values,
 * max_streams, max_labels, tls ({"cert_file", "key_file"}: HTTPS with a
 * certificate of its own; "listener": HTTPS with the client listener's,
 * following its reloads), ready_requires_contract (bool).
 */
#ifndef MCPWARDEN_ADMIN_H
#define MCPWARDEN_ADMIN_H

#include <stddef.h>
#include <jansson.h>

#include "admin/metrics.h"

struct px_ctx;
struct admin;
struct ssl_ctx_st;

/* Parses ctx->cfg->admin, builds the recorder and, unless "off", the
 * listener; sets ctx->proc->admin (NULL when the endpoint is off and no call log
 * is wanted). Call once the upstreams exist. Returns 0, or -1 with every
 * configuration error, one per line, in err ("$.admin.ring_size: …").
 * When listen was left at its default and that address cannot be bound,
 * it warns and runs without the endpoint instead of failing. */
int admin_setup(struct px_ctx *ctx, char *err, size_t errlen);

/* What admin_setup would refuse, without building or binding anything,
 * for --check-config: the section's keys and values, the token file, the
 * redaction patterns, the certificate pair of "tls" (loaded, then freed)
 * or "listener" without TLS on the client listener, and whether the
 * log_calls file could be opened for appending (it is not created). cfg
 * borrowed. Returns 0, or -1 with every error, one per line, in err. */
struct px_config;
int admin_check(const struct px_config *cfg, char *err, size_t errlen);

/* Frees everything admin_setup built. Call after every connection was
 * destroyed (admin connections use it, and the recorder sees the last
 * exchanges end) and before the event base is freed. Accepts NULL. */
void admin_free(struct admin *adm);

/* SIGHUP, in two steps so that a reload applies whole or not at all.
 * admin_tls_load reads the admin certificate files again: returns 0 with
 * a new context in *out (NULL when the endpoint has no certificate of its
 * own), or -1 with a reason in err. admin_tls_swap hands new connections
 * that context (stolen; NULL: nothing to do) and logs what it presents;
 * connections already open keep theirs. adm may be NULL. */
int admin_tls_load(const struct admin *adm, struct ssl_ctx_st **out, char *err, size_t errlen);
/* admin_tls_swap also adds the credentials of the configuration worker 0
 * now runs (ctx->cfg) to those masked in records (admin_add_credentials). */
void admin_tls_swap(struct admin *adm, struct ssl_ctx_st *tls);

/* Adds every credential cfg makes mcpwarden send upstream (the Basic
 * value, header values, URL queries, client tokens; see admin/secrets.h) to
 * the values masked in records, /calls/stream, /contract and the call log.
 * Values only join (a replaced token was sent, and may still come back).
 * Safe while workers record; worker 0's thread. A reload calls it from
 * admin_tls_swap, once worker 0 runs the new configuration; called before
 * the new configuration reaches any worker, it leaves no moment at all in
 * which a new credential could be recorded unmasked. adm may be NULL. */
struct px_config;
void admin_add_credentials(struct admin *adm, const struct px_config *cfg);

/* Adds a source of /metrics (admin/metrics.h metrics_add_source): the
 * wiring registers one per module whose counters are shown, so that the
 * endpoint reads no module's state itself (proxy/stats.c). Call on the
 * thread that set admin up, before the first scrape. adm may be NULL
 * (nothing to feed): 0. Returns 0, or -1 when the table is full. */
int admin_add_metrics_source(struct admin *adm, const char *name, metrics_source_fn fn,
                             void *arg);

/* SIGUSR1: reopens the call log file ($.admin.log_calls) under the
 * recorder's lock, so no record is lost or split across the two files;
 * logs what it did. Worker 0's thread. adm may be NULL (nothing to do). */
void admin_reopen_log(struct admin *adm);

/* capture: the redactor of records (its rules and the credentials it
 * masks, kept current by reloads), for the capture file to mask with the
 * same rules. Borrowed: adm's lifetime. NULL when adm is NULL. */
struct redact;
struct redact *admin_redactor(struct admin *adm);

/* "127.0.0.1:9090": the address the endpoint is bound to, or NULL. */
const char *admin_address(const struct admin *adm);

#endif

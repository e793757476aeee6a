/* main: argv -> config -> px_ctx -> listener -> event loop -> teardown.
 *
 * Why this file is long (over 800 lines): it is the wiring, the one place
 * that knows every module's set-up and teardown order, the signals and the
 * reload; each step is a short function. The modules it wires own their
 * logic; what remains here is order, and order reads best in one file.
 *
 * SIGTERM/SIGINT start a drain: stop accepting, close idle connections,
 * end standalone streams, let requests in flight finish (up to
 * timeouts.drain_ms), answer those still unfinished then, and exit. A
 * second signal exits at once: worker 0, which alone reads signals, keeps
 * its loop until every worker's has ended.
 *
 * SIGHUP reloads the configuration; SIGUSR1 reopens the call log and the
 * capture files (after logrotate moved them). Under systemd (Type=notify) the service manager
 * hears READY=1 once every listener is bound, RELOADING=1 and READY=1
 * around a reload, STOPPING=1 when draining starts, and WATCHDOG=1 from
 * worker 0's loop (proxy/net/notify.h).
 *
 * --check-config runs the loaders a start runs first (loaders[]), and
 * nothing else.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "proxy/config.h"
#include "proxy/net/conn.h"
#include "proxy/base/errs.h"
#include "proxy/cli/check.h"
#include "proxy/cli/diff.h"
#include "proxy/cli/status.h" /* tail / status (issue 22) */
#include "proxy/cli/tail.h"
#include "proxy/cli/replay.h" /* replay (issue 21) */
#include "proxy/ctx.h"
#include "admin/admin.h"
#include "proxy/net/affinity.h"
#include "proxy/net/inbox.h"
#include "proxy/hooks/hook_capture.h"
#include "proxy/hooks/hook_trace.h" /* telemetry */
#include "proxy/net/otlp.h"        /* telemetry */
#include "proxy/base/clock.h"      /* telemetry */
#include "proxy/hooks/hook_contract.h"
#include "proxy/hooks/redact.h"
#include "admin/secrets.h"
#include "proxy/hooks/hook_policy.h"
#include "proxy/hooks/hook_validate.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/jarena.h"
#include "proxy/net/listener.h"
#include "proxy/base/limits.h"
#include "proxy/base/log.h"
#include "proxy/net/loop.h"
#include "proxy/net/notify.h"
#include "proxy/net/peers.h"
#include "proxy/mcp/listings.h"
#include "proxy/mcp/sessid.h"
#include "proxy/mcp/sesslimit.h"
#include "proxy/net/tls.h"
#include "proxy/hooks/tools.h"
#include "proxy/mcp/session.h"
#include "proxy/net/transport.h"
#include "proxy/mcp/transport_sse.h"
#include "proxy/net/upstream.h"
#include "proxy/stats.h"

/* issue 22: the version comes from the build (proxy/base/version.h). */
#include "proxy/base/version.h"


/* ---- drain (SIGTERM) ---------------------------------------------------------- */

/* After the drain deadline's answers are queued, how long their bytes may
 * take to leave before what is left is closed: a client that stopped
 * reading must not hold the exit (nginx's worker_shutdown_timeout, HAProxy's
 * hard-stop-after close at once; the answers are a few hundred bytes). */
#define DRAIN_FLUSH_MS 1000

static void drain_timer_arm(struct px_ctx *ctx, unsigned ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	if (ctx->drain_timer)
		evtimer_add(ctx->drain_timer, &tv);
}

/* ctx->draining 1: timeouts.drain_ms passed. Every request still in
 * flight is answered now (conn_drain_deadline), each logged as it ends, on
 * this loop, so before "stopped". ctx->draining 2: the answers had their
 * DRAIN_FLUSH_MS to leave; what is still open closes. The loop ends when
 * the last connection does (listener_drain_check). */
static void drain_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct px_ctx *ctx = arg;
	(void)fd;
	(void)what;
	if (ctx->draining == 1) {
		ctx->draining = 2;
		if (ctx->nconns)
			log_msg(LOG_WARN, "drain timed out with %zu connections open: answering what "
			                  "they wait for, then closing them", ctx->nconns);
		for (struct conn *c = ctx->conns, *next; c; c = next) {
			next = conn_next(c);
			conn_drain_deadline(c);
		}
		drain_timer_arm(ctx, DRAIN_FLUSH_MS);
	} else {
		if (ctx->nconns)
			log_msg(LOG_WARN, "%zu connections still writing at exit: closing them",
			        ctx->nconns);
		while (ctx->conns)
			conn_destroy(ctx->conns);
	}
	listener_drain_check(ctx);
}

/* On each worker's own loop: stop accepting, end what can end, exit the
 * loop once the last connection is gone (worker 0: and every other
 * worker's loop has ended) or the drain times out. */
static void drain_worker(void *arg)
{
	struct px_ctx *ctx = arg;
	if (ctx->draining)
		return;
	ctx->draining = 1;
	listener_free(ctx->lst);
	ctx->lst = NULL;
	for (struct conn *c = ctx->conns, *next; c; c = next) {
		next = conn_next(c);
		conn_shutdown(c);
	}
	/* Armed even with no connection left: one may still be handed over
	 * from another worker, and worker 0 waits for the others anyway. */
	ctx->drain_timer = evtimer_new(ctx->base, drain_timeout_cb, ctx);
	drain_timer_arm(ctx, ctx->cfg->timeouts.drain_ms);
	listener_drain_check(ctx);
}

/* On worker 0: another worker's loop has ended. */
static void worker_done(void *arg)
{
	struct px_ctx *ctx = arg;
	ctx->proc->workers_running--;
	listener_drain_check(ctx);
}

static void stop_worker(void *arg)
{
	struct px_ctx *ctx = arg;
	event_base_loopbreak(ctx->base);
}

/* Runs fn on every worker but the caller's (worker 0) loop. */
static void post_others(struct px_ctx *ctx, inbox_fn fn)
{
	for (size_t i = 1; i < ctx->proc->nworkers; i++)
		if (inbox_post(ctx->proc->workers[i]->inbox, fn, NULL, ctx->proc->workers[i]) < 0)
			log_msg(LOG_ERROR, "worker %zu: out of memory telling it to stop", i);
}

/* What the signal callbacks (worker 0's loop) act on. */
struct signals {
	struct px_ctx *ctx;     /* borrowed: worker 0 */
	struct notify *nt;      /* owned; NULL: not run by systemd */
};

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct signals *s = arg;
	struct px_ctx *ctx = s->ctx;
	(void)what;
	if (ctx->draining) {
		log_msg(LOG_WARN, "second signal: exiting now");
		post_others(ctx, stop_worker);
		event_base_loopbreak(ctx->base);
		return;
	}
	/* Every worker's client connections, and this one's admin ones. */
	size_t open = __atomic_load_n(&ctx->proc->client_conns, __ATOMIC_RELAXED) + ctx->nconns_low;
	log_msg(LOG_INFO, "%s: draining %zu connections", sig == SIGINT ? "SIGINT" : "SIGTERM", open);
	notify_stopping(s->nt);
	post_others(ctx, drain_worker);
	drain_worker(ctx);
}

/* ---- reload (SIGHUP) ----------------------------------------------------------- */

/* A new configuration for one worker, applied on its own loop. */
struct apply {
	struct px_ctx *ctx;
	const struct px_config *cfg;
	SSL_CTX *tls;   /* one reference, or NULL: the certificate is unchanged */
};

/* What an upstream takes of its worker and the configuration (ctx NULL:
 * the preflight's, which runs no loop and never drains). */
static struct upstream_opts upstream_opts_of(struct px_ctx *ctx, const struct px_config *cfg)
{
	return (struct upstream_opts){
		.base = ctx ? ctx->base : NULL,
		.max_header_bytes = cfg->limits.max_header_bytes,
		.idle_ms = cfg->timeouts.upstream_idle_ms,
		.draining = ctx ? &ctx->draining : NULL,
	};
}

static void apply_run(void *arg)
{
	struct apply *a = arg;
	struct px_ctx *ctx = a->ctx;
	struct upstream_opts uo = upstream_opts_of(ctx, a->cfg);
	ctx->cfg = a->cfg;
	for (size_t i = 0; i < ctx->nups; i++)
		upstream_set_conf(ctx->ups[i], &a->cfg->ups[i], &uo);
	if (a->tls) {
		/* Connections already open keep the context they hold a
		 * reference to; new ones get the new certificate. */
		tls_ctx_free(ctx->tls_server);
		ctx->tls_server = a->tls;
	}
	free(a);
}

static void apply_drop(void *arg)
{
	struct apply *a = arg;
	tls_ctx_free(a->tls);
	free(a);
}

static int apply_to(struct px_ctx *w, const struct px_config *cfg, SSL_CTX *tls)
{
	struct apply *a = malloc(sizeof(*a));
	if (!a)
		return -1;
	*a = (struct apply){w, cfg, tls};
	if (tls)
		SSL_CTX_up_ref(tls);
	if (w->worker_id == 0) {
		apply_run(a);
		return 0;
	}
	if (inbox_post(w->inbox, apply_run, apply_drop, a) < 0) {
		apply_drop(a);
		return -1;
	}
	return 0;
}

/* Everything a new config needs built is built before anything is
 * swapped, so a reload either applies whole or not at all. Worker 0 (this
 * thread) applies it at once, the others on their next loop turn. */
static void reload(struct px_ctx *ctx)
{
	char err[8192];
	enum config_action action;
	SSL_CTX *tls = NULL, *admin_tls = NULL;
	char what[512];
	struct hook_contract_staged *contract = NULL; /* live baselines (issue 21) */

	struct px_config *next = config_from_argv(ctx->proc->argc, ctx->proc->argv, &action, err, sizeof(err));
	if (!next) {
		log_msg(LOG_ERROR, "SIGHUP: the new configuration has errors; still running the old one:\n%s",
		        err);
		return;
	}
	const char *why = config_restart_needed(ctx->cfg, next);
	if (why) {
		log_msg(LOG_ERROR, "SIGHUP: %s changed, which needs a restart; still running the old "
		                   "configuration", why);
		goto fail;
	}
	if (hook_policy_check(next, err, sizeof(err)) < 0) {
		log_msg(LOG_ERROR, "SIGHUP: policy errors; still running the old configuration:\n%s", err);
		goto fail;
	}
	/* Live baselines (issue 21): contract sections and baseline files,
	 * read now, put in force with the rest below. */
	if (!(contract = hook_contract_stage(next, err, sizeof(err)))) {
		log_msg(LOG_ERROR, "SIGHUP: contract errors; still running the old configuration:\n%s",
		        err);
		goto fail;
	}
	if (next->tls_cert_file &&
	    !(tls = tls_server_ctx_new(next->tls_cert_file, next->tls_key_file, err, sizeof(err)))) {
		log_msg(LOG_ERROR, "SIGHUP: %s; still running the old configuration", err);
		goto fail;
	}
	if (admin_tls_load(ctx->proc->admin, &admin_tls, err, sizeof(err)) < 0) {
		log_msg(LOG_ERROR, "SIGHUP: admin.tls: %s; still running the old configuration", err);
		goto fail;
	}
	struct px_config **r = realloc(ctx->proc->retired, (ctx->proc->nretired + 1) * sizeof(*r));
	if (!r || hook_policy_reload(ctx, next, err, sizeof(err)) < 0) {
		if (r)
			ctx->proc->retired = r;
		log_msg(LOG_ERROR, "SIGHUP: %s; still running the old configuration",
		        r ? err : "out of memory");
		goto fail;
	}
	ctx->proc->retired = r;
	ctx->proc->retired[ctx->proc->nretired++] = (struct px_config *)(uintptr_t)ctx->cfg;
	/* Live baselines (issue 21): cannot fail; frees what it staged. */
	hook_contract_commit(ctx->proc->contract, contract);
	contract = NULL;
	if (tls) {
		tls_describe(tls, what, sizeof(what));
		log_msg(LOG_INFO, "SIGHUP: new client connections get TLS certificate %s", what);
	}
	/* The new credentials are masked before any worker can send them
	 * (workers switch on their own next loop turn). */
	admin_add_credentials(ctx->proc->admin, next);
	for (size_t i = 0; i < ctx->proc->nworkers; i++)
		if (apply_to(ctx->proc->workers[i], next, tls) < 0)
			log_msg(LOG_ERROR, "SIGHUP: worker %zu: out of memory; it keeps the old "
			                   "configuration", i);
	tls_ctx_free(tls);
	/* The admin endpoint lives on this thread (worker 0). */
	admin_tls_swap(ctx->proc->admin, admin_tls);
	log_setup(next->log_level, next->log_json);
	log_msg(LOG_INFO, "SIGHUP: configuration reloaded");
	return;
fail:
	hook_contract_staged_free(contract); /* live baselines (issue 21) */
	tls_ctx_free(tls);
	tls_ctx_free(admin_tls);
	config_free(next);
}

/* READY=1 after a refused reload too: the old configuration still runs,
 * and the manager must not wait for a reload that will never come. */
static void sighup_cb(evutil_socket_t sig, short what, void *arg)
{
	struct signals *s = arg;
	(void)sig;
	(void)what;
	notify_reloading(s->nt);
	reload(s->ctx);
	notify_ready(s->nt);
}

/* logrotate's postrotate: the call log and the capture files are the only
 * files mcpwarden writes (its own log goes to stderr, which the manager or
 * the shell holds). */
static void sigusr1_cb(evutil_socket_t sig, short what, void *arg)
{
	struct signals *s = arg;
	(void)sig;
	(void)what;
	admin_reopen_log(s->ctx->proc->admin);
	hook_capture_reopen(s->ctx->proc->capture); /* capture */
}

/* ---- what a start loads (and --check-config runs) ------------------------------ */

/* Every loader a start runs on the configuration before it binds a socket
 * or builds a worker: files read, certificates and keys paired, names
 * resolved. ctx_setup runs this list first, so a start cannot fail on
 * anything of it that --check-config, which runs the same list, passed.
 * None opens a socket or contacts an upstream (nginx -t and haproxy -c
 * likewise check files and names, never peers). Each returns 0, or -1
 * with its errors (one per line, each with its location) in err. */

static int load_listen(const struct px_config *cfg, char *err, size_t errlen)
{
	char why[512];
	if (listener_resolvable(cfg->listen_host, cfg->listen_port, why, sizeof(why)) == 0)
		return 0;
	snprintf(err, errlen, "$.listen: %s", why);
	return -1;
}

static int load_listen_tls(const struct px_config *cfg, char *err, size_t errlen)
{
	char why[1024];
	if (!cfg->tls_cert_file)
		return 0;
	SSL_CTX *t = tls_server_ctx_new(cfg->tls_cert_file, cfg->tls_key_file, why, sizeof(why));
	if (!t) {
		snprintf(err, errlen, "$.tls: %s", why);
		return -1;
	}
	tls_ctx_free(t);
	return 0;
}

/* What each worker builds of an upstream (its address, its TLS context
 * with the CA, certificate and key files): upstream_new connects nothing,
 * and needs no loop for that. */
static int load_upstreams(const struct px_config *cfg, char *err, size_t errlen)
{
	struct errs e = {err, errlen, 0, 0};
	char why[1024];
	struct upstream_opts uo = upstream_opts_of(NULL, cfg);
	for (size_t i = 0; i < cfg->nups; i++) {
		struct upstream *u = upstream_new(&uo, &cfg->ups[i], why, sizeof(why));
		if (!u)
			errs_add(&e, "$.upstreams[%zu] (%s): %s", i, cfg->ups[i].name, why);
		upstream_free(u);
	}
	return e.count ? -1 : 0;
}

typedef int loader_fn(const struct px_config *cfg, char *err, size_t errlen);

static loader_fn *const loaders[] = {
	load_listen,
	load_listen_tls,
	hook_contract_validate,  /* contracts and their baselines */
	hook_policy_check,       /* the policy and its baselines */
	admin_check,
	load_upstreams,
	hook_capture_check,      /* capture: each file can be appended to */
};

/* Runs every loader, whatever the earlier ones said (all errors at once),
 * their errors one after the other in err. Returns how many failed. */
static int preflight(const struct px_config *cfg, char *err, size_t errlen)
{
	size_t used = 0;
	int failed = 0;
	char spare[2];

	err[0] = '\0';
	for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++) {
		/* A full buffer still counts the failure. */
		char *dst = used + 2 < errlen ? err + used : spare;
		size_t room = dst == spare ? sizeof(spare) : errlen - used;
		dst[0] = '\0';
		if (loaders[i](cfg, dst, room) == 0) {
			dst[0] = '\0';
			continue;
		}
		failed++;
		if (dst == spare)
			continue;
		used += strlen(dst);
		if (used && err[used - 1] != '\n' && used + 1 < errlen) {
			err[used++] = '\n';
			err[used] = '\0';
		}
	}
	return failed;
}

/* ---- set-up and teardown ------------------------------------------------------ */

static struct event_base *base_new(void)
{
	struct event_base *base = event_base_new();
	if (base && event_base_priority_init(base, PX_PRIO_COUNT) < 0) {
		event_base_free(base);
		return NULL;
	}
	return base;
}

/* ---- telemetry (issue 23): the exporter's drain ---------------------------- */

static void otlp_drain_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* After the loop ended: what is queued is sent, on the worker's own loop
 * (its exporter's connection lives there). The workers are torn down one
 * after another on the main thread: one deadline, drain_ms from the first,
 * bounds them all. */
static void otlp_drain(struct px_ctx *ctx)
{
	static uint64_t deadline; /* main thread only */
	if (!ctx->otlp || !ctx->base)
		return;
	if (!deadline)
		deadline = clock_mono_us() + (uint64_t)ctx->cfg->timeouts.drain_ms * 1000;
	struct event *tick = evtimer_new(ctx->base, otlp_drain_tick, NULL);
	otlp_flush(ctx->otlp);
	while (tick && otlp_pending(ctx->otlp) && clock_mono_us() < deadline) {
		struct timeval tv = {0, 50000};
		evtimer_add(tick, &tv);
		event_base_loop(ctx->base, EVLOOP_ONCE);
	}
	if (tick)
		event_free(tick);
	otlp_free(ctx->otlp);
	ctx->otlp = NULL;
}

static void trace_emit(void *arg, const char *span, size_t len)
{
	(void)arg;
	otlp_enqueue(otlp_current(), span, len);
}

/* /metrics: spans exported and dropped, summed over the workers. */
static void source_otlp(void *arg, struct metrics_snapshot *s)
{
	struct px_ctx *ctx = arg;
	struct metrics_otlp *mo = metrics_snapshot_alloc(s, 1, sizeof(*mo));
	if (!mo)
		return;
	for (size_t i = 0; i < ctx->proc->nworkers; i++) {
		uint64_t e, d[OTLP_DROP_N];
		otlp_stats(ctx->proc->workers[i] ? ctx->proc->workers[i]->otlp : NULL, &e, d);
		mo->exported += e;
		for (int k = 0; k < OTLP_DROP_N; k++)
			mo->dropped[k] += d[k];
	}
	for (int k = 0; k < OTLP_DROP_N; k++)
		mo->reason[k] = otlp_drop_name((enum otlp_drop)k);
	s->otlp = mo;
}

/* Registered first: the ids exist before any other hook (the recorder)
 * sees the call, and a call policy refuses still has its span. */
static int trace_setup(struct px_ctx *ctx, char *err, size_t errlen)
{
	if (!ctx->cfg->telemetry.enabled)
		return 0;
	ctx->proc->trace = hook_trace_new(ctx->insp, ctx->cfg, trace_emit, NULL);
	if (!ctx->proc->trace) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	log_msg(LOG_INFO, "telemetry: OTLP/HTTP traces to %s (service %s, sampler ratio %g)",
	        ctx->cfg->telemetry.otlp.url_safe, ctx->cfg->telemetry.service_name,
	        ctx->cfg->telemetry.ratio);
	return 0;
}

static int trace_metrics(struct px_ctx *ctx)
{
	if (!ctx->proc->trace || !ctx->proc->admin)
		return 0;
	return admin_add_metrics_source(ctx->proc->admin, "otlp", source_otlp, ctx);
}

static int otlp_setup(struct px_ctx *ctx)
{
	char err[512] = "";
	if (!ctx->proc->trace)
		return 0;
	ctx->otlp = otlp_new(ctx->base, &ctx->cfg->telemetry, err, sizeof(err));
	if (!ctx->otlp) {
		log_msg(LOG_ERROR, "telemetry: %s", err);
		return -1;
	}
	if (ctx->worker_id == 0)
		otlp_bind(ctx->otlp); /* the others bind on their own thread */
	return 0;
}

/* ---- end telemetry ------------------------------------------------------------ */

/* What every worker has of its own. */
static void worker_teardown(struct px_ctx *ctx)
{
	otlp_drain(ctx); /* telemetry */
	while (ctx->conns)
		conn_destroy(ctx->conns);
	listener_free(ctx->lst);
	ctx->lst = NULL;
	/* Translated sessions hold upstream requests: before the upstreams. */
	session_table_free(ctx->translated);
	ctx->translated = NULL;
	for (size_t i = 0; i < ctx->nups; i++)
		upstream_free(ctx->ups[i]);
	free(ctx->ups);
	ctx->ups = NULL;
	ctx->nups = 0;
	inbox_free(ctx->inbox);
	ctx->inbox = NULL;
	tls_ctx_free(ctx->tls_server);
	ctx->tls_server = NULL;
	if (ctx->drain_timer)
		event_free(ctx->drain_timer);
	ctx->drain_timer = NULL;
}

static void ctx_teardown(struct px_ctx *ctx)
{
	size_t n = ctx->proc->nworkers;
	/* From here on no worker tells another anything (a closing
	 * connection would wake the others' listeners). */
	ctx->proc->nworkers = 1;
	/* The other workers first: their connections' exchanges end in the
	 * shared hooks (the recorder) that worker 0 owns. */
	for (size_t i = 1; i < n; i++) {
		struct px_ctx *w = ctx->proc->workers[i];
		if (!w)
			continue;
		worker_teardown(w);
		inspect_free(w->insp);
		if (w->base)
			event_base_free(w->base);
		free(w);
	}
	worker_teardown(ctx);
	hook_contract_free(ctx->proc->contract);
	hook_policy_free(ctx->proc->policy);
	hook_validate_free(ctx->proc->validate);
	hook_capture_free(ctx->proc->capture); /* capture: writes what is queued */
	hook_trace_free(ctx->proc->trace); /* telemetry */
	admin_free(ctx->proc->admin);
	inspect_free(ctx->insp);
	tools_free(ctx->proc->tools);
	listings_free(ctx->proc->listings);
	sessid_free(ctx->proc->sessions);
	sesslimit_free(ctx->proc->sesslimit);
	peers_free(ctx->proc->peers);
	affinity_free(ctx->proc->affinity);
	if (ctx->base)
		event_base_free(ctx->base);
	config_free((struct px_config *)(uintptr_t)ctx->cfg);
	for (size_t i = 0; i < ctx->proc->nretired; i++)
		config_free(ctx->proc->retired[i]);
	free(ctx->proc->retired);
	free(ctx->proc->workers);
}

/* ---- capture (proxy/hooks/hook_capture.h) ----------------------------------- */

/* /metrics: lines written and dropped per capturing upstream. */
static void source_capture(void *arg, struct metrics_snapshot *s)
{
	struct px_ctx *ctx = arg;
	struct hook_capture *hc = ctx->proc->capture;
	size_t n = ctx->cfg->nups, k = 0;
	struct metrics_capture *mc = hc ? metrics_snapshot_alloc(s, n, sizeof(*mc)) : NULL;
	int on;
	const char *name;
	for (size_t i = 0; mc && (name = hook_capture_stats(hc, i, &on, &mc[k].records,
	                                                       &mc[k].dropped)); i++) {
		mc[k].upstream = name;
		k += on != 0;
	}
	s->capture = mc;
	s->ncapture = k;
}

/* After the recorder (admin_setup): the capture observes last and masks
 * with the recorder's redactor; without an admin section, with one of its
 * own (default keys, the configured credentials). */
static int capture_setup(struct px_ctx *ctx, char *err, size_t errlen)
{
	if (!hook_capture_wanted(ctx->cfg))
		return 0;
	struct redact *rd = admin_redactor(ctx->proc->admin);
	int own = rd == NULL;
	if (own && (rd = redact_new()) != NULL)
		secrets_add_config(rd, ctx->cfg);
	ctx->proc->capture = hook_capture_new(ctx->insp, ctx->cfg, rd, own, err, errlen);
	if (!ctx->proc->capture)
		return -1;
	if (admin_add_metrics_source(ctx->proc->admin, "capture", source_capture, ctx) < 0) {
		snprintf(err, errlen, "too many metrics sources");
		return -1;
	}
	return 0;
}

/* A worker's own parts: loop, inbox, upstream pools, translated sessions,
 * listener. Returns 0, or -1 (logged). */
static int worker_setup(struct px_ctx *ctx, const char *port, int reuseport)
{
	char err[8192];
	const struct px_config *cfg = ctx->cfg;

	ctx->inbox = inbox_new(ctx->base);
	ctx->ups = calloc(cfg->nups, sizeof(*ctx->ups));
	if (!ctx->inbox || !ctx->ups) {
		log_msg(LOG_ERROR, "out of memory");
		return -1;
	}
	struct upstream_opts uo = upstream_opts_of(ctx, cfg);
	for (size_t i = 0; i < cfg->nups; i++) {
		ctx->ups[i] = upstream_new(&uo, &cfg->ups[i], err, sizeof(err));
		if (!ctx->ups[i]) {
			log_msg(LOG_ERROR, "%s", err);
			return -1;
		}
		ctx->nups++;
	}
	if (otlp_setup(ctx) < 0) /* telemetry */
		return -1;
	ctx->translated = transport_sse_sessions_new(ctx);
	if (!ctx->translated) {
		log_msg(LOG_ERROR, "out of memory");
		return -1;
	}
	ctx->lst = listener_new(ctx, cfg->listen_host, port, &transport_http_ops, reuseport, err,
	                        sizeof(err));
	if (!ctx->lst) {
		log_msg(LOG_ERROR, "%s", err);
		return -1;
	}
	if (ctx->tls_server)
		listener_set_tls(ctx->lst, &ctx->tls_server);
	return 0;
}

/* Worker i > 0: a ctx sharing worker 0's modules (its hook chain cloned,
 * so the counters are its own). */
static struct px_ctx *worker_new(struct px_ctx *ctx0, unsigned id, const char *port)
{
	struct px_ctx *w = calloc(1, sizeof(*w));
	if (!w) {
		log_msg(LOG_ERROR, "out of memory");
		return NULL;
	}
	w->worker_id = id;
	w->proc = ctx0->proc;
	w->cfg = ctx0->cfg;
	ctx0->proc->workers[id] = w;
	w->base = base_new();
	w->insp = inspect_clone(ctx0->insp);
	if (ctx0->tls_server && SSL_CTX_up_ref(ctx0->tls_server))
		w->tls_server = ctx0->tls_server;
	if (!w->base || !w->insp || (ctx0->tls_server && !w->tls_server)) {
		log_msg(LOG_ERROR, "out of memory");
		return NULL;
	}
	return worker_setup(w, port, 1) < 0 ? NULL : w;
}

static unsigned worker_count(const struct px_config *cfg)
{
	if (cfg->workers)
		return cfg->workers;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > PX_MAX_WORKERS ? PX_MAX_WORKERS : (unsigned)n;
}

static int ctx_setup(struct px_ctx *ctx, struct px_config *cfg)
{
	char err[8192];
	char port[16];
	unsigned n = worker_count(cfg);

	ctx->cfg = cfg;
	ctx->base = base_new();
	ctx->insp = inspect_new();
	ctx->proc->sessions = sessid_new(LIMIT_SESSION_IDS);
	ctx->proc->peers = peers_new();
	ctx->proc->affinity = affinity_new();
	ctx->proc->sesslimit = sesslimit_new(LIMIT_SESSLIMIT_ENTRIES);
	ctx->proc->workers = calloc(n, sizeof(*ctx->proc->workers));
	if (!ctx->base || !ctx->insp || !ctx->proc->sessions || !ctx->proc->peers ||
	    !ctx->proc->affinity || !ctx->proc->sesslimit || !ctx->proc->workers) {
		log_msg(LOG_ERROR, "out of memory");
		return -1;
	}
	ctx->proc->workers[0] = ctx;
	ctx->proc->nworkers = 1;
	if (preflight(cfg, err, sizeof(err)) > 0) {
		log_block(LOG_ERROR, "configuration errors:", err);
		return -1;
	}
	if (cfg->tls_cert_file) {
		ctx->tls_server = tls_server_ctx_new(cfg->tls_cert_file, cfg->tls_key_file, err,
		                                     sizeof(err));
		if (!ctx->tls_server) {
			log_msg(LOG_ERROR, "%s", err);
			return -1;
		}
		tls_describe(ctx->tls_server, err, sizeof(err));
		log_msg(LOG_INFO, "client listener: TLS certificate %s", err);
	}
	/* Hook order: the contract checker first, judging the list the
	 * upstream really sent; the tools/list tracker next, keeping what the
	 * contract let through (a tool it withheld or failed stays unknown
	 * to policy and to the 2026 header checks, as it is to clients);
	 * policy then, deciding every call (the checker passes client
	 * messages through) and hiding tools from the listing it is given;
	 * the live contract next, judging what policy let through; observers
	 * (recorder) see everything last. */
	if (trace_setup(ctx, err, sizeof(err)) < 0) { /* telemetry */
		log_msg(LOG_ERROR, "telemetry: %s", err);
		return -1;
	}
	if (hook_contract_setup(ctx, err, sizeof(err)) < 0) {
		log_block(LOG_ERROR, "contract configuration:", err);
		return -1;
	}
	ctx->proc->tools = tools_setup(ctx, 0);
	ctx->proc->listings = listings_new();
	if (!ctx->proc->tools || !ctx->proc->listings)
		return -1;
	if (hook_policy_setup(ctx, err, sizeof(err)) < 0) {
		log_block(LOG_ERROR, "policy configuration:", err);
		return -1;
	}
	/* The live contract after policy (a denied call is not validated),
	 * before the observers, which record its findings. */
	if (hook_validate_setup(ctx, err, sizeof(err)) < 0) {
		log_msg(LOG_ERROR, "validation: %s", err);
		return -1;
	}
	if (admin_setup(ctx, err, sizeof(err)) < 0) {
		log_msg(LOG_ERROR, "admin: %s", err);
		return -1;
	}
	if (capture_setup(ctx, err, sizeof(err)) < 0) { /* capture */
		log_block(LOG_ERROR, "capture:", err);
		return -1;
	}
	if (trace_metrics(ctx) < 0) { /* telemetry */
		log_msg(LOG_ERROR, "admin: too many metrics sources");
		return -1;
	}
	if (stats_register(ctx) < 0) {
		log_msg(LOG_ERROR, "admin: too many metrics sources");
		return -1;
	}
	/* Several workers bind the port each with SO_REUSEPORT; first make
	 * sure nobody else listens there, and learn the port when it is 0. */
	snprintf(port, sizeof(port), "%s", cfg->listen_port);
	if (n > 1 && listener_reserve(cfg->listen_host, cfg->listen_port, port, sizeof(port), err,
	                              sizeof(err)) < 0) {
		log_msg(LOG_ERROR, "%s", err);
		return -1;
	}
	ctx->proc->nworkers = n;
	if (worker_setup(ctx, port, n > 1) < 0)
		return -1;
	for (unsigned i = 1; i < n; i++) {
		if (!worker_new(ctx, i, port)) {
			/* What was built is torn down with the rest. */
			ctx->proc->nworkers = i + (ctx->proc->workers[i] != NULL);
			return -1;
		}
	}
	return 0;
}

/* ---- worker threads ----------------------------------------------------------- */

static void *worker_main(void *arg)
{
	struct px_ctx *ctx = arg;
	otlp_bind(ctx->otlp); /* telemetry */
	loop_run(ctx->base, ctx->cfg->yield_after_us, &ctx->stats.yields);
	/* Worker 0 keeps its loop (and so the signals) running until every
	 * worker has said this. */
	struct px_ctx *ctx0 = ctx->proc->workers[0];
	if (inbox_post(ctx0->inbox, worker_done, NULL, ctx0) < 0)
		log_msg(LOG_ERROR, "worker %u: out of memory telling worker 0 it stopped",
		        ctx->worker_id);
	/* telemetry: this thread's span buffer (LeakSanitizer saw it lost
	 * with the thread) */
	hook_trace_thread_exit();
	return NULL;
}

/* Workers 1.. on threads of their own; signals stay with the main
 * thread (worker 0), which tells the others. Returns how many started. */
static size_t workers_start(struct px_ctx *ctx, pthread_t *threads)
{
	sigset_t all, old;
	size_t started = 1;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (; started < ctx->proc->nworkers; started++) {
		int rc = pthread_create(&threads[started], NULL, worker_main, ctx->proc->workers[started]);
		if (rc != 0) {
			log_msg(LOG_ERROR, "cannot start worker %zu: %s", started, strerror(rc));
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return started;
}

/* Lets the kernel give every worker's connections their descriptors:
 * thousands of open streams need two each. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	enum config_action action;
	char err[8192];
	struct px_proc proc = {0};
	struct px_ctx ctx = {.proc = &proc};

	/* Before any jansson value exists: free must know where each came
	 * from. Without it jansson just keeps malloc. */
	jarena_install();
	if (argc > 1 && strcmp(argv[1], "check") == 0)
		return check_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "diff") == 0)
		return diff_main(argc - 1, argv + 1);
	/* tail / status: the admin endpoint from a shell (issue 22, item 7) */
	if (argc > 1 && strcmp(argv[1], "tail") == 0)
		return tail_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "status") == 0)
		return status_main(argc - 1, argv + 1);
	/* replay (issue 21): a capture or dataset against a new build. */
	if (argc > 1 && strcmp(argv[1], "replay") == 0)
		return replay_main(argc - 1, argv + 1);

	struct px_config *cfg = config_from_argv(argc, argv, &action, err, sizeof(err));
	if (action == CONFIG_HELP) {
		fputs(config_usage(), stdout);
		config_free(cfg);
		return 0;
	}
	if (action == CONFIG_VERSION) {
		version_print(stdout);
		config_free(cfg);
		return 0;
	}
	if (!cfg) {
		fprintf(stderr, "mcpwarden: configuration errors:\n%s", err);
		return 2;
	}
	if (action == CONFIG_CHECK_ONLY) {
		/* What a start loads, all of it, and nothing it binds. */
		if (preflight(cfg, err, sizeof(err)) > 0) {
			fprintf(stderr, "mcpwarden: configuration errors:\n%s", err);
			config_free(cfg);
			return 2;
		}
		printf("%s: OK (%zu upstream%s)\n", cfg->config_file ? cfg->config_file : "command line",
		       cfg->nups, cfg->nups == 1 ? "" : "s");
		config_free(cfg);
		return 0;
	}
	log_setup(cfg->log_level, cfg->log_json);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();
	proc.argc = argc;
	proc.argv = argv;
	if (ctx_setup(&ctx, cfg) < 0) {
		if (!ctx.cfg)
			config_free(cfg);
		ctx_teardown(&ctx);
		return 1;
	}
	struct signals sigs = {&ctx, notify_new()};
	struct event *sigterm = evsignal_new(ctx.base, SIGTERM, signal_cb, &sigs);
	struct event *sigint = evsignal_new(ctx.base, SIGINT, signal_cb, &sigs);
	struct event *sighup = evsignal_new(ctx.base, SIGHUP, sighup_cb, &sigs);
	struct event *sigusr1 = evsignal_new(ctx.base, SIGUSR1, sigusr1_cb, &sigs);
	evsignal_add(sigterm, NULL);
	evsignal_add(sigint, NULL);
	evsignal_add(sighup, NULL);
	evsignal_add(sigusr1, NULL);
	log_msg(LOG_INFO, "mcpwarden %s listening on %s", version_get(),
	        listener_address(ctx.lst));
	for (size_t i = 0; i < cfg->nups; i++)
		log_msg(LOG_INFO, "upstream %s: %s -> %s (transport %s; legacy SSE clients: %s)",
		        cfg->ups[i].name, cfg->ups[i].path, cfg->ups[i].url_safe,
		        config_transport_str(cfg->ups[i].transport),
		        cfg->ups[i].sse_path ? cfg->ups[i].sse_path : "off");
	if (proc.nworkers > 1)
		log_msg(LOG_INFO, "%zu workers (one event loop per thread)", proc.nworkers);
	pthread_t threads[PX_MAX_WORKERS];
	size_t started = workers_start(&ctx, threads);
	/* Read by worker 0's loop only, which has not run yet. */
	proc.workers_running = started - 1;
	if (started == proc.nworkers) {
		/* Every worker's listener and the admin endpoint were bound by
		 * ctx_setup: the kernel queues connections from here on, so
		 * clients may come as soon as the manager hears it. */
		notify_ready(sigs.nt);
		notify_watchdog_start(sigs.nt, ctx.base);
		loop_run(ctx.base, ctx.cfg->yield_after_us, &ctx.stats.yields);
	}
	/* However worker 0's loop ended, the others stop too. */
	post_others(&ctx, ctx.draining ? drain_worker : stop_worker);
	for (size_t i = 1; i < started; i++)
		pthread_join(threads[i], NULL);
	int rc = started == proc.nworkers ? 0 : 1;
	log_msg(LOG_INFO, "stopped");
	event_free(sigterm);
	event_free(sigint);
	event_free(sighup);
	event_free(sigusr1);
	notify_free(sigs.nt);
	ctx_teardown(&ctx);
	return rc;
}

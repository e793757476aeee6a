/* main: argv -> config -> px_ctx -> listener -> event loop -> teardown.
 *
 * SIGTERM/SIGINT start a drain: stop accepting, close idle connections,
 * end standalone streams, let requests in flight finish (up to
 * timeouts.drain_ms), then exit. A second signal exits at once.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/check_cmd.h"
#include "proxy/ctx.h"
#include "admin/admin.h"
#include "proxy/hook_contract.h"
#include "proxy/hook_policy.h"
#include "proxy/inspect.h"
#include "proxy/listener.h"
#include "proxy/limits.h"
#include "proxy/log.h"
#include "proxy/peers.h"
#include "proxy/sessid.h"
#include "proxy/sesslimit.h"
#include "proxy/tls.h"
#include "proxy/toolcache.h"
#include "proxy/session.h"
#include "proxy/transport.h"
#include "proxy/transport_sse.h"
#include "proxy/upstream.h"

#define MCPWARDEN_VERSION "0.1.0"


static void drain_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct px_ctx *ctx = arg;
	(void)fd;
	(void)what;
	log_msg(LOG_WARN, "drain timed out with %zu connections open: closing them", ctx->nconns);
	event_base_loopexit(ctx->base, NULL);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct px_ctx *ctx = arg;
	(void)what;
	if (ctx->draining) {
		log_msg(LOG_WARN, "second signal: exiting now");
		event_base_loopbreak(ctx->base);
		return;
	}
	log_msg(LOG_INFO, "%s: draining %zu connections", sig == SIGINT ? "SIGINT" : "SIGTERM",
	        ctx->nconns);
	ctx->draining = 1;
	listener_free(ctx->lst);
	ctx->lst = NULL;
	for (struct conn *c = ctx->conns, *next; c; c = next) {
		next = conn_next(c);
		conn_shutdown(c);
	}
	if (ctx->nconns == 0) {
		event_base_loopexit(ctx->base, NULL);
		return;
	}
	unsigned ms = ctx->cfg->timeouts.drain_ms;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	ctx->drain_timer = evtimer_new(ctx->base, drain_timeout_cb, ctx);
	if (ctx->drain_timer)
		evtimer_add(ctx->drain_timer, &tv);
}

/* Everything a new config needs built is built before anything is
 * swapped, so a reload either applies whole or not at all. */
static void reload(struct px_ctx *ctx)
{
	char err[8192];
	enum config_action action;
	SSL_CTX *tls = NULL, *admin_tls = NULL;
	char what[512];

	struct px_config *next = config_from_argv(ctx->argc, ctx->argv, &action, err, sizeof(err));
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
	if (next->tls_cert_file &&
	    !(tls = tls_server_ctx_new(next->tls_cert_file, next->tls_key_file, err, sizeof(err)))) {
		log_msg(LOG_ERROR, "SIGHUP: %s; still running the old configuration", err);
		goto fail;
	}
	if (admin_tls_load(ctx->admin, &admin_tls, err, sizeof(err)) < 0) {
		log_msg(LOG_ERROR, "SIGHUP: admin.tls: %s; still running the old configuration", err);
		goto fail;
	}
	struct px_config **r = realloc(ctx->retired, (ctx->nretired + 1) * sizeof(*r));
	if (!r || hook_policy_reload(ctx, next, err, sizeof(err)) < 0) {
		if (r)
			ctx->retired = r;
		log_msg(LOG_ERROR, "SIGHUP: %s; still running the old configuration",
		        r ? err : "out of memory");
		goto fail;
	}
	ctx->retired = r;
	ctx->retired[ctx->nretired++] = (struct px_config *)(uintptr_t)ctx->cfg;
	ctx->cfg = next;
	for (size_t i = 0; i < ctx->nups; i++)
		upstream_set_conf(ctx->ups[i], &next->ups[i]);
	if (tls) {
		/* Connections already open keep the context they hold a
		 * reference to; new ones get the new certificate. */
		tls_ctx_free(ctx->tls_server);
		ctx->tls_server = tls;
		tls_describe(tls, what, sizeof(what));
		log_msg(LOG_INFO, "SIGHUP: new client connections get TLS certificate %s", what);
	}
	admin_tls_swap(ctx->admin, admin_tls);
	log_setup(next->log_level, next->log_json);
	log_msg(LOG_INFO, "SIGHUP: configuration reloaded");
	return;
fail:
	tls_ctx_free(tls);
	tls_ctx_free(admin_tls);
	config_free(next);
}

static void sighup_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	reload(arg);
}

static void ctx_teardown(struct px_ctx *ctx)
{
	while (ctx->conns)
		conn_destroy(ctx->conns);
	listener_free(ctx->lst);
	/* Translated sessions hold upstream requests: before the upstreams. */
	session_table_free(ctx->translated);
	for (size_t i = 0; i < ctx->nups; i++)
		upstream_free(ctx->ups[i]);
	free(ctx->ups);
	hook_contract_free(ctx->contract);
	hook_policy_free(ctx->policy);
	admin_free(ctx->admin);
	inspect_free(ctx->insp);
	toolcache_free(ctx->toolcache);
	sessid_free(ctx->sessions);
	sesslimit_free(ctx->sesslimit);
	peers_free(ctx->peers);
	tls_ctx_free(ctx->tls_server);
	if (ctx->drain_timer)
		event_free(ctx->drain_timer);
	if (ctx->base)
		event_base_free(ctx->base);
	config_free((struct px_config *)(uintptr_t)ctx->cfg);
	for (size_t i = 0; i < ctx->nretired; i++)
		config_free(ctx->retired[i]);
	free(ctx->retired);
}

static int ctx_setup(struct px_ctx *ctx, struct px_config *cfg)
{
	char err[8192];

	ctx->cfg = cfg;
	ctx->base = event_base_new();
	if (ctx->base && event_base_priority_init(ctx->base, PX_PRIO_COUNT) < 0) {
		log_msg(LOG_ERROR, "cannot set up event priorities");
		return -1;
	}
	ctx->insp = inspect_new();
	ctx->sessions = sessid_new(LIMIT_SESSION_IDS);
	ctx->peers = peers_new();
	ctx->sesslimit = sesslimit_new(LIMIT_SESSLIMIT_ENTRIES);
	ctx->ups = calloc(cfg->nups, sizeof(*ctx->ups));
	if (!ctx->base || !ctx->insp || !ctx->ups || !ctx->sessions || !ctx->peers ||
	    !ctx->sesslimit) {
		log_msg(LOG_ERROR, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < cfg->nups; i++) {
		ctx->ups[i] = upstream_new(ctx, &cfg->ups[i], err, sizeof(err));
		if (!ctx->ups[i]) {
			log_msg(LOG_ERROR, "%s", err);
			return -1;
		}
		ctx->nups++;
	}
	ctx->translated = transport_sse_sessions_new(ctx);
	if (!ctx->translated) {
		log_msg(LOG_ERROR, "out of memory");
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
	ctx->toolcache = toolcache_setup(ctx, 0);
	if (!ctx->toolcache)
		return -1;
	/* Hook order: the contract checker first, so it judges the list the
	 * upstream really sent (before policy hides tools from it); policy
	 * next, deciding every call (the checker passes client messages
	 * through); observers (toolcache, recorder) see everything last. */
	if (hook_contract_setup(ctx, err, sizeof(err)) < 0) {
		log_msg(LOG_ERROR, "contract configuration:\n%s", err);
		return -1;
	}
	if (hook_policy_setup(ctx, err, sizeof(err)) < 0) {
		log_msg(LOG_ERROR, "policy configuration:\n%s", err);
		return -1;
	}
	if (admin_setup(ctx, err, sizeof(err)) < 0) {
		log_msg(LOG_ERROR, "admin: %s", err);
		return -1;
	}
	ctx->lst = listener_new(ctx, cfg->listen_host, cfg->listen_port, &transport_http_ops, err,
	                        sizeof(err));
	if (!ctx->lst) {
		log_msg(LOG_ERROR, "%s", err);
		return -1;
	}
	if (ctx->tls_server)
		listener_set_tls(ctx->lst, &ctx->tls_server);
	return 0;
}

int main(int argc, char **argv)
{
	enum config_action action;
	char err[8192];
	struct px_ctx ctx = {0};

	if (argc > 1 && strcmp(argv[1], "check") == 0)
		return check_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "diff") == 0)
		return diff_main(argc - 1, argv + 1);

	struct px_config *cfg = config_from_argv(argc, argv, &action, err, sizeof(err));
	if (action == CONFIG_HELP) {
		fputs(config_usage(), stdout);
		config_free(cfg);
		return 0;
	}
	if (action == CONFIG_VERSION) {
		printf("mcpwarden %s\n", MCPWARDEN_VERSION);
		config_free(cfg);
		return 0;
	}
	if (!cfg) {
		fprintf(stderr, "mcpwarden: configuration errors:\n%s", err);
		return 2;
	}
	if (action == CONFIG_CHECK_ONLY) {
		/* The modules' own sections, as start-up would check them. */
		if (hook_policy_check(cfg, err, sizeof(err)) < 0 ||
		    hook_contract_validate(cfg, err, sizeof(err)) < 0) {
			fprintf(stderr, "mcpwarden: configuration errors:\n%s%s", err,
			        err[0] && err[strlen(err) - 1] == '\n' ? "" : "\n");
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
	ctx.argc = argc;
	ctx.argv = argv;
	if (ctx_setup(&ctx, cfg) < 0) {
		if (!ctx.cfg)
			config_free(cfg);
		ctx_teardown(&ctx);
		return 1;
	}
	struct event *sigterm = evsignal_new(ctx.base, SIGTERM, signal_cb, &ctx);
	struct event *sigint = evsignal_new(ctx.base, SIGINT, signal_cb, &ctx);
	struct event *sighup = evsignal_new(ctx.base, SIGHUP, sighup_cb, &ctx);
	evsignal_add(sigterm, NULL);
	evsignal_add(sigint, NULL);
	evsignal_add(sighup, NULL);
	log_msg(LOG_INFO, "mcpwarden %s listening on %s", MCPWARDEN_VERSION,
	        listener_address(ctx.lst));
	for (size_t i = 0; i < cfg->nups; i++)
		log_msg(LOG_INFO, "upstream %s: %s -> %s (transport %s; legacy SSE clients: %s)",
		        cfg->ups[i].name, cfg->ups[i].path, cfg->ups[i].url_safe,
		        config_transport_str(cfg->ups[i].transport),
		        cfg->ups[i].sse_path ? cfg->ups[i].sse_path : "off");
	event_base_dispatch(ctx.base);
	log_msg(LOG_INFO, "stopped");
	event_free(sigterm);
	event_free(sigint);
	event_free(sighup);
	ctx_teardown(&ctx);
	return 0;
}

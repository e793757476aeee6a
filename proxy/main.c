/* main: argv -> config -> px_ctx -> listener -> event loop -> teardown.
 *
 * SIGTERM/SIGINT start a drain: stop accepting, close idle connections,
 * end standalone streams, let requests in flight finish (up to
 * timeouts.drain_ms), then exit. A second signal exits at once.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/ctx.h"
#include "proxy/inspect.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/transport.h"
#include "proxy/upstream.h"

#define MCPWARDEN_VERSION "0.1.0"

void px_conn_closed(struct px_ctx *ctx)
{
	if (ctx->lst)
		listener_update(ctx->lst);
	if (ctx->draining && ctx->nconns == 0)
		event_base_loopexit(ctx->base, NULL);
}

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

static void ctx_teardown(struct px_ctx *ctx)
{
	while (ctx->conns)
		conn_destroy(ctx->conns);
	listener_free(ctx->lst);
	for (size_t i = 0; i < ctx->nups; i++)
		upstream_free(ctx->ups[i]);
	free(ctx->ups);
	inspect_free(ctx->insp);
	if (ctx->drain_timer)
		event_free(ctx->drain_timer);
	if (ctx->base)
		event_base_free(ctx->base);
	config_free((struct px_config *)(uintptr_t)ctx->cfg);
}

static int ctx_setup(struct px_ctx *ctx, struct px_config *cfg)
{
	char err[512];

	ctx->cfg = cfg;
	ctx->base = event_base_new();
	ctx->insp = inspect_new();
	ctx->ups = calloc(cfg->nups, sizeof(*ctx->ups));
	if (!ctx->base || !ctx->insp || !ctx->ups) {
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
	ctx->lst = listener_new(ctx, cfg->listen_host, cfg->listen_port, &transport_http_ops, err,
	                        sizeof(err));
	if (!ctx->lst) {
		log_msg(LOG_ERROR, "%s", err);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum config_action action;
	char err[8192];
	struct px_ctx ctx = {0};

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
		printf("%s: OK (%zu upstream%s)\n", cfg->config_file ? cfg->config_file : "command line",
		       cfg->nups, cfg->nups == 1 ? "" : "s");
		config_free(cfg);
		return 0;
	}
	log_setup(cfg->log_level, cfg->log_json);
	signal(SIGPIPE, SIG_IGN);
	if (ctx_setup(&ctx, cfg) < 0) {
		if (!ctx.cfg)
			config_free(cfg);
		ctx_teardown(&ctx);
		return 1;
	}
	struct event *sigterm = evsignal_new(ctx.base, SIGTERM, signal_cb, &ctx);
	struct event *sigint = evsignal_new(ctx.base, SIGINT, signal_cb, &ctx);
	evsignal_add(sigterm, NULL);
	evsignal_add(sigint, NULL);
	log_msg(LOG_INFO, "mcpwarden %s listening on %s", MCPWARDEN_VERSION,
	        listener_address(ctx.lst));
	for (size_t i = 0; i < cfg->nups; i++)
		log_msg(LOG_INFO, "upstream %s: %s -> %s", cfg->ups[i].name, cfg->ups[i].path,
		        cfg->ups[i].url_safe);
	event_base_dispatch(ctx.base);
	log_msg(LOG_INFO, "stopped");
	event_free(sigterm);
	event_free(sigint);
	ctx_teardown(&ctx);
	return 0;
}

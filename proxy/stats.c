/* stats: see stats.h. Every source runs on worker 0's thread (the admin
 * endpoint's), outside the admin lock; what it reads of other workers are
 * their relaxed atomic counters (px_stat_get) and gauges read as they
 * change. */
#include "proxy/stats.h"

#include <stdint.h>
#include <stdlib.h>

#include "admin/admin.h"
#include "admin/metrics.h"
#include "policy/policy.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/hook_policy.h"
#include "proxy/hooks/hook_validate.h"
#include "proxy/hooks/inspect.h"
#include "proxy/mcp/sesslimit.h"
#include "proxy/net/upstream.h"

/* Every worker's counters, summed (one view of the process), and each
 * worker's own (how the load spreads over them). */
static void source_workers(void *arg, struct metrics_snapshot *s)
{
	const struct px_ctx *ctx = arg;
	struct metrics_worker *workers = metrics_snapshot_alloc(s, ctx->proc->nworkers, sizeof(*workers));
	if (!workers)
		return;
	/* Open connections on the MCP listener, every worker's: each
	 * connection knows its listener, so admin connections are not among
	 * them. */
	s->client_connections = __atomic_load_n(&ctx->proc->client_conns, __ATOMIC_RELAXED);
	for (size_t w = 0; w < ctx->proc->nworkers; w++) {
		const struct px_ctx *wc = ctx->proc->workers[w];
		struct inspect_stats is;
		inspect_get_stats(wc->insp, &is);
		s->connections_total += px_stat_get(&wc->stats.connections);
		s->http_requests_total += px_stat_get(&wc->stats.requests);
		for (size_t i = 0; i < 6; i++)
			s->http_responses[i] += px_stat_get(&wc->stats.responses_by_class[i]);
		s->upstream_errors += px_stat_get(&wc->stats.upstream_errors);
		s->upstream_timeouts += px_stat_get(&wc->stats.timeouts);
		s->requests_too_large += px_stat_get(&wc->stats.too_large);
		s->bad_requests += px_stat_get(&wc->stats.bad_requests);
		s->aborted += px_stat_get(&wc->stats.aborted);
		s->messages_from_client += is.messages[INSPECT_FROM_CLIENT];
		s->messages_from_server += is.messages[INSPECT_FROM_SERVER];
		s->hook_dropped += is.dropped;
		s->hook_answered += is.answered;
		s->hook_modified += is.modified;
		s->fast_listings += is.fast_listings; /* issue 20: unchanged listings */
		s->listing_tools_reused += px_stat_get(&wc->stats.listing_tools_reused);
		s->listing_tools_parsed += px_stat_get(&wc->stats.listing_tools_parsed);
		workers[w].connections_total = px_stat_get(&wc->stats.connections);
		workers[w].requests_total = px_stat_get(&wc->stats.requests);
		workers[w].handoffs_total = px_stat_get(&wc->stats.handoffs);
		workers[w].yields_total = px_stat_get(&wc->stats.yields);
	}
	s->workers = workers;
	s->nworkers = ctx->proc->nworkers;
}

/* The configured upstreams with their idle pooled connections, over
 * every worker's pool; reachability is the admin endpoint's (its probes). */
static void source_upstreams(void *arg, struct metrics_snapshot *s)
{
	const struct px_ctx *ctx = arg;
	struct metrics_upstream *ups = metrics_snapshot_alloc(s, ctx->nups, sizeof(*ups));
	if (!ups)
		return;
	for (size_t i = 0; i < ctx->nups; i++) {
		ups[i].name = ctx->cfg->ups[i].name;
		ups[i].reachable = -1;
		/* Another worker's pool count, read as it changes: a gauge. */
		for (size_t w = 0; w < ctx->proc->nworkers; w++)
			ups[i].idle_connections += upstream_idle_count(ctx->proc->workers[w]->ups[i]);
	}
	s->ups = ups;
	s->nups = ctx->nups;
}

/* Pass-through sessions' caps (proxy/mcp/sesslimit.h). */
static void source_sesslimit(void *arg, struct metrics_snapshot *s)
{
	const struct px_ctx *ctx = arg;
	if (!ctx->proc->sesslimit)
		return;
	struct sesslimit_stats sl;
	sesslimit_get_stats(ctx->proc->sesslimit, &sl);
	for (size_t k = 0; k < 2; k++) {
		s->session_refused[k] = sl.refused[k];
		s->session_slots[k] = sl.held[k];
	}
}

/* The policy module's counters, and per rule of the policy in force: the
 * rule names are the policy's, valid until the next reload, which runs
 * on this thread too. */
static void source_policy(void *arg, struct metrics_snapshot *s)
{
	const struct px_ctx *ctx = arg;
	struct metrics_policy *mp = metrics_snapshot_alloc(s, 1, sizeof(*mp));
	if (!mp)
		return;
	struct hook_policy_stats st;
	size_t n;
	hook_policy_get_stats(ctx->proc->policy, &st);
	const struct policy *p = hook_policy_current(ctx->proc->policy);
	*mp = (struct metrics_policy){
		.active = p != NULL,
		.dry_run_mode = p ? policy_dry_run(p) : 0,
		.allowed = st.allowed,
		.denied = st.denied,
		.logged = st.logged,
		.dry_run = st.dry_run,
		.unknown_tool = st.unknown_tool,
		.tools_hidden = st.tools_hidden,
		.listings = st.listings,
		.tools_over_cap = st.tools_over_cap,
		.reloads = st.reloads,
		.reload_failures = st.reload_failures,
	};
	struct policy_rule_stats *rs = hook_policy_rule_stats(ctx->proc->policy, &n);
	struct metrics_policy_rule *out = n ? metrics_snapshot_alloc(s, n, sizeof(*out)) : NULL;
	for (size_t i = 0; out && i < n; i++)
		out[i] = (struct metrics_policy_rule){
			.rule = rs[i].rule,
			.action = policy_action_str(rs[i].action),
			.matched = rs[i].matched,
			.allowed = rs[i].allowed,
			.denied = rs[i].denied,
			.logged = rs[i].logged,
			.dry_run = rs[i].dry_run,
			.hidden = rs[i].hidden,
			.dry_run_hidden = rs[i].dry_run_hidden,
		};
	free(rs);
	mp->rules = out;
	mp->nrules = out ? n : 0;
	s->policy = mp;
}

static void validate_count_one(void *arg, const char *upstream, const char *tool,
                               const char *code, uint64_t n)
{
	size_t *count = arg;
	(void)upstream, (void)tool, (void)code, (void)n;
	(*count)++;
}

static void validate_add_one(void *arg, const char *upstream, const char *tool,
                             const char *code, uint64_t n)
{
	metrics_validate_add(arg, upstream, tool, code, n);
}

/* The live contract's totals and its counts per upstream x tool x code,
 * copied (the hook lends its strings for one call only). Two passes: one
 * to size the copy, one to fill it, with room for counts that appear in
 * between (any past it are shown from the next scrape); at most
 * METRICS_VALIDATE_MAX. The labels are folded later, by the metrics. */
static void source_validate(void *arg, struct metrics_snapshot *s)
{
	const struct px_ctx *ctx = arg;
	struct hook_validate *hv = ctx->proc->validate;
	if (!hv)
		return;
	struct metrics_validate *v = metrics_snapshot_alloc(s, 1, sizeof(*v));
	if (!v)
		return;
	struct hook_validate_stats st;
	hook_validate_get_stats(hv, &st);
	v->calls_checked = st.calls_checked;
	v->results_checked = st.results_checked;
	v->compiled = st.compiled;
	v->compile_failed = st.compile_failed;
	v->findings = st.findings;
	v->logs_suppressed = st.logs_suppressed;
	size_t n = 0;
	hook_validate_foreach_count(hv, validate_count_one, &n);
	size_t cap = n + n / 4 + 16;
	if (cap > METRICS_VALIDATE_MAX)
		cap = METRICS_VALIDATE_MAX;
	v->counts = metrics_snapshot_alloc(s, cap, sizeof(*v->counts));
	if (!v->counts)
		return;
	v->cap = cap;
	hook_validate_foreach_count(hv, validate_add_one, v);
	s->validate = v;
}

int stats_register(struct px_ctx *ctx)
{
	static const struct {
		const char *name;
		metrics_source_fn fn;
	} sources[] = {
		{"workers", source_workers},
		{"upstreams", source_upstreams},
		{"sesslimit", source_sesslimit},
		{"policy", source_policy},
		{"validate", source_validate},
	};
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (admin_add_metrics_source(ctx->proc->admin, sources[i].name, sources[i].fn, ctx) < 0)
			return -1;
	return 0;
}

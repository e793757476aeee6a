/* metrics: the counters and histograms behind GET /metrics, and their
 * Prometheus text exposition (format 0.0.4).
 *
 * The recorder (proxy/hooks/hook_record.c) counts calls, policy decisions,
 * sessions and bytes here as they happen; the admin endpoint adds a
 * snapshot of the proxy's own gauges and counters (connections, pools, the
 * ring) when it renders. Every family is named mcpwarden_*, has HELP and
 * TYPE lines, and label values are escaped (\\, \", \n) and cut to
 * METRICS_LABEL_MAX bytes.
 *
 * Cardinality is bounded: each label dimension fed by traffic (JSON-RPC
 * method, tool name, policy rule) keeps at most max_labels distinct values;
 * later ones are counted under "other". A client can therefore fill the
 * table with made-up tool names; the cost is a coarser breakdown, never
 * memory. Upstream labels come from the configuration.
 *
 * What other modules count reaches /metrics through sources: each one
 * registered (metrics_add_source, the way HAProxy's modules register their
 * stats) fills its part of struct metrics_snapshot from its module's own
 * getters when a scrape asks; the metrics module never reads another
 * module's state, and neither does the admin endpoint.
 *
 * Pure: no I/O, no clock, nothing global. Not here: the sources (the
 * wiring's are in proxy/stats.c; admin.c fills its own members).
 */
#ifndef MCPWARDEN_METRICS_H
#define MCPWARDEN_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define METRICS_DEFAULT_MAX_LABELS 200
#define METRICS_MAX_LABELS         10000
#define METRICS_LABEL_MAX          128   /* bytes of one label value */
#define METRICS_MAX_UPSTREAMS      256   /* contract entries kept */
#define METRICS_SNAPSHOT_ALLOCS    12    /* arrays sources may hang on a snapshot */

struct metrics;

/* max_labels: distinct values kept per traffic-fed label (1..
 * METRICS_MAX_LABELS). NULL on a bad value or when memory runs out. */
struct metrics *metrics_new(size_t max_labels);
void metrics_free(struct metrics *m);  /* accepts NULL */

/* One recorded client call (a request with its answer, or a
 * notification). method and tool may be NULL (no method: a response the
 * client sent; no tool: not a tools/call). outcome is one of ok,
 * tool_error, rpc_error, blocked, upstream_error, timeout, cancelled
 * (anything else counts as "other"). latency_us < 0: not timed (a
 * notification): the histograms are left alone. */
void metrics_call(struct metrics *m, const char *method, const char *tool, const char *outcome,
                  int64_t latency_us);
/* A message the server sent on its own (notification or request). */
void metrics_server_message(struct metrics *m, const char *method);
/* One HTTP exchange on the MCP listener ended. */
void metrics_exchange(struct metrics *m, uint64_t bytes_in, uint64_t bytes_out);
/* A deciding hook's verdict on a message: verdict is "forward", "drop" or
 * "answer"; rule the reason it gave (NULL: "unknown"). */
void metrics_policy(struct metrics *m, const char *rule, const char *verdict);
/* An initialize reply carried a new session id / a DELETE ended one. */
void metrics_session_opened(struct metrics *m);
void metrics_session_closed(struct metrics *m);

/* Stores the latest contract report of an upstream (report borrowed, read
 * now, not kept): {"tools":[{"problems":[…],"warnings":[…]}…],
 * "problems":[…], "warnings":[…], "score":n, "passed":b, "changes":[…]}.
 * Missing members count as zero. Returns 0, or -1 past
 * METRICS_MAX_UPSTREAMS or when memory runs out. */
int metrics_set_contract(struct metrics *m, const char *upstream, const json_t *report);

/* What the caller knows and the metrics module does not. */
struct metrics_upstream {
	const char *name;
	size_t idle_connections;
	int reachable;            /* 1 up, 0 down, -1 not probed yet */
};

/* One worker (event loop thread): how the load spreads over them. */
struct metrics_worker {
	uint64_t connections_total, requests_total, handoffs_total, yields_total;
};

/* The policy's counters (proxy/hooks/hook_policy.h, conf/README-policy.md
 * "Metrics"): totals over the process lifetime, and per rule of the
 * policy in force (they start at 0 when a reload brings a new policy). */
struct metrics_policy_rule {
	const char *rule, *action;       /* borrowed */
	uint64_t matched, allowed, denied, logged, dry_run, hidden, dry_run_hidden;
};

struct metrics_policy {
	int active, dry_run_mode;        /* a policy is in force; it is a dry run */
	uint64_t allowed, denied, logged, dry_run, unknown_tool, tools_hidden, listings,
		tools_over_cap, reloads, reload_failures;
	const struct metrics_policy_rule *rules;
	size_t nrules;
};

/* The live contract's counters (proxy/hooks/hook_validate.h): its process
 * totals and one count per upstream x tool x code. Label values are copied
 * (cut to METRICS_LABEL_MAX bytes, as on output), so they outlive the
 * hook's iteration. */
#define METRICS_CODE_MAX         32      /* bytes of a finding code */
#define METRICS_VALIDATE_MAX     20000   /* counts one scrape copies */

struct metrics_validate_count {
	char upstream[METRICS_LABEL_MAX + 1], tool[METRICS_LABEL_MAX + 1];
	char code[METRICS_CODE_MAX + 1];
	uint64_t n;
};

struct metrics_validate {
	uint64_t calls_checked, results_checked, compiled, compile_failed, findings,
		logs_suppressed;
	struct metrics_validate_count *counts;  /* cap entries (metrics_snapshot_alloc) */
	size_t ncounts, cap;
	uint64_t left_out;               /* counts past cap: shown from the next scrape */
};

/* Appends one count to v, its strings copied and cut (NULL counts as "");
 * past v->cap it only counts v->left_out. */
void metrics_validate_add(struct metrics_validate *v, const char *upstream, const char *tool,
                          const char *code, uint64_t n);

/* telemetry (issue 23): spans the OTLP exporters sent and dropped, by
 * reason (proxy/net/otlp.h's names, borrowed static strings). */
struct metrics_otlp {
	uint64_t exported, dropped[3];
	const char *reason[3];
};

/* capture: one capturing upstream's lines written and dropped. */
struct metrics_capture {
	const char *upstream;            /* borrowed: the capture's */
	uint64_t records, dropped;
};

struct metrics_snapshot {
	uint64_t client_connections;     /* open now */
	uint64_t connections_total;      /* accepted since start */
	uint64_t http_requests_total;
	uint64_t http_responses[6];      /* by class: [2] = 2xx… ([0] unused) */
	uint64_t upstream_errors, upstream_timeouts, requests_too_large, bad_requests, aborted;
	uint64_t messages_from_client, messages_from_server;
	uint64_t hook_dropped, hook_answered, hook_modified;
	uint64_t fast_listings; /* tools/list replies forwarded unparsed (inspect.h) */
	/* Tools of changed listings the last listing's values served, and
	 * those parsed (proxy/base/jreuse.h). */
	uint64_t listing_tools_reused, listing_tools_parsed;
	uint64_t ring_capacity, ring_records, ring_dropped;
	uint64_t inflight_calls, admin_streams, admin_streams_behind;
	/* pass-through sessions' caps (proxy/mcp/sesslimit.h): [0] requests in
	 * flight, [1] GET streams */
	uint64_t session_refused[2], session_slots[2];
	double start_time_seconds;       /* Unix time the process started */
	struct metrics_upstream *ups;    /* a source's; admin adds reachable */
	size_t nups;
	const struct metrics_worker *workers;
	size_t nworkers;
	/* capture (proxy/hooks/hook_capture.h): per capturing upstream */
	const struct metrics_capture *capture;
	size_t ncapture;
	const struct metrics_otlp *otlp; /* telemetry: NULL when off */
	const struct metrics_policy *policy;  /* NULL: no policy module */
	struct metrics_validate *validate;    /* NULL: no live contract */
	/* What sources allocated for the pointers above (owned by s). */
	void *owned[METRICS_SNAPSHOT_ALLOCS];
	size_t nowned;
	int oom;                         /* a source ran out of memory */
};

/* ---- sources ---------------------------------------------------------- */

#define METRICS_MAX_SOURCES 16

/* Fills (adds to: a counter may be summed over several sources) what it
 * knows of s. Called on every scrape, on the admin endpoint's thread,
 * outside the admin lock, in the order the sources were added. Arrays it
 * points s at come from metrics_snapshot_alloc (they live as long as s). */
typedef void (*metrics_source_fn)(void *arg, struct metrics_snapshot *s);

/* Adds a source (name: static, for diagnostics; arg borrowed, must
 * outlive m). Returns 0, or -1 past METRICS_MAX_SOURCES. */
int metrics_add_source(struct metrics *m, const char *name, metrics_source_fn fn, void *arg);

/* Runs every source on s (zeroed by the caller first). */
void metrics_collect(const struct metrics *m, struct metrics_snapshot *s);

/* n zeroed elements of size bytes, freed with s (metrics_snapshot_release);
 * NULL when memory runs out or past METRICS_SNAPSHOT_ALLOCS (s->oom is set:
 * the scrape fails rather than show a partial view). */
void *metrics_snapshot_alloc(struct metrics_snapshot *s, size_t n, size_t size);
void metrics_snapshot_release(struct metrics_snapshot *s);

/* Folds s->validate onto the labels /metrics shows and keeps: a tool name
 * is interned in m's own table for validation tools (at most max_labels
 * distinct, later ones summed under "other", as every traffic-fed label:
 * a client calling made-up tools costs breakdown, never memory), a code
 * outside hook_validate.h's list becomes "other"; then the counts are
 * sorted by upstream, tool, code and merged, so that each series shows
 * once. A tool keeps its label for m's lifetime, so every rendered series
 * only grows between scrapes. Call with the lock metrics_render runs
 * under, before it; s may be NULL or have no validate. */
void metrics_fold_validate(struct metrics *m, struct metrics_snapshot *s);

/* Renders every family as Prometheus text into a new NUL-terminated
 * string (owned, free()); *len is its length. snap may be NULL. NULL when
 * memory runs out. */
char *metrics_render(const struct metrics *m, const struct metrics_snapshot *snap, size_t *len);

/* Sessions open as counted (opened - closed, never below 0). */
uint64_t metrics_sessions_open(const struct metrics *m);

#endif

/* metrics: see metrics.h.
 * Why this file is long: it is the one writer of the exposition, every
 * family's HELP text beside its samples, and the label tables they share.
 *
 * Each traffic-fed label dimension is a small intern table (open
 * addressing over a power-of-two array) mapping a label value to an index
 * 0..max_labels; index max_labels is "other". Counters are flat arrays
 * indexed [label][outcome], allocated once at creation, so counting never
 * allocates after a label value was first seen.
 */
#include "admin/metrics.h"
#include "proxy/base/hash.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const outcomes[] = {
	"ok", "tool_error", "rpc_error", "blocked", "upstream_error", "timeout", "cancelled", "other",
};
#define NOUT (sizeof(outcomes) / sizeof(outcomes[0]))

static const char *const verdicts[] = {"forward", "drop", "answer"};
#define NVERDICT (sizeof(verdicts) / sizeof(verdicts[0]))

/* Latency buckets, microseconds (rendered as seconds). */
static const uint64_t buckets_us[] = {
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 30000000, 60000000, 120000000,
};
#define NBUCKET (sizeof(buckets_us) / sizeof(buckets_us[0]))

#define OTHER_LABEL "other"

struct hist {
	uint64_t bucket[NBUCKET]; /* not cumulative: bucket[i] counts (b[i-1], b[i]] */
	uint64_t count;
	uint64_t sum_us;
};

struct labels {
	char **name;         /* owned: max+1 entries, name[max] = "other" */
	size_t n, max;
	int *slot;           /* owned: hash table of indexes, -1 empty */
	size_t nslot;        /* power of two >= 2 * (max + 1) */
	size_t last;         /* the last interned index looked up (valid when < n) */
};

struct contract_entry {
	char *upstream;      /* owned */
	double score;
	uint64_t tools, problems, warnings, changes;
	int passed, truncated;
};

struct metrics {
	size_t max;
	struct labels methods, tools, rules, server_methods;
	struct labels vtools;     /* tools of the live contract's counts */
	uint64_t *calls;          /* [method][outcome] */
	uint64_t *tool_calls;     /* [tool][outcome] */
	struct hist *method_lat;  /* [method] */
	struct hist *tool_lat;    /* [tool] */
	uint64_t *policy;         /* [rule][verdict] */
	uint64_t *server_msgs;    /* [server method] */
	uint64_t exchanges, bytes_in, bytes_out;
	uint64_t sessions_opened, sessions_closed;
	struct contract_entry contract[METRICS_MAX_UPSTREAMS];
	size_t ncontract;
	struct source {
		const char *name;        /* static */
		metrics_source_fn fn;
		void *arg;               /* borrowed */
	} sources[METRICS_MAX_SOURCES];
	size_t nsources;
};

/* ---- intern tables -------------------------------------------------------- */

static int labels_init(struct labels *l, size_t max)
{
	l->max = max;
	l->last = (size_t)-1;
	l->nslot = 16;
	while (l->nslot < 2 * (max + 1))
		l->nslot *= 2;
	l->name = calloc(max + 1, sizeof(*l->name));
	l->slot = malloc(l->nslot * sizeof(*l->slot));
	if (!l->name || !l->slot)
		return -1;
	for (size_t i = 0; i < l->nslot; i++)
		l->slot[i] = -1;
	l->name[max] = strdup(OTHER_LABEL);
	return l->name[max] ? 0 : -1;
}

static void labels_fini(struct labels *l)
{
	if (l->name)
		for (size_t i = 0; i <= l->max; i++)
			free(l->name[i]);
	free(l->name);
	free(l->slot);
}

/* v cut to METRICS_LABEL_MAX bytes without splitting a UTF-8 sequence. */
static void label_cut(const char *v, char *out)
{
	size_t n = strnlen(v, METRICS_LABEL_MAX + 1);
	if (n > METRICS_LABEL_MAX) {
		/* v[n] is the first byte left out: back up to a sequence start */
		n = METRICS_LABEL_MAX;
		while (n > 0 && ((unsigned char)v[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(out, v, n);
	out[n] = '\0';
}

/* The index of value v (NULL counts as ""), interning it when there is
 * room; "other" both for the overflow and for a real "other" so that the
 * exposition never holds the same series twice. Runs under the admin lock
 * for every call: a value within METRICS_LABEL_MAX (the usual case) is
 * looked up in place, not copied first. */
static size_t labels_index(struct labels *l, const char *v)
{
	char cut[METRICS_LABEL_MAX + 1];
	const char *key = v ? v : "";
	/* Calls come in runs of one method and tool: the previous value is
	 * compared first. Equal to an interned name, key is that name
	 * exactly (never cut, never "other", which is not interned). */
	if (l->last < l->n && strcmp(l->name[l->last], key) == 0)
		return l->last;
	size_t n = strnlen(key, METRICS_LABEL_MAX + 1);
	if (n > METRICS_LABEL_MAX) {
		label_cut(key, cut);
		key = cut;
		n = strlen(cut);
	}
	if (n == sizeof(OTHER_LABEL) - 1 && memcmp(key, OTHER_LABEL, n) == 0)
		return l->max;
	uint32_t h = hash_fnv1a32(HASH_FNV1A32_INIT, key, n);
	size_t mask = l->nslot - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		int s = l->slot[i];
		if (s < 0) {
			if (l->n >= l->max)
				return l->max;
			char *copy = strndup(key, n);
			if (!copy)
				return l->max;
			l->name[l->n] = copy;
			l->slot[i] = (int)l->n;
			l->last = l->n;
			return l->n++;
		}
		if (strncmp(l->name[s], key, n) == 0 && l->name[s][n] == '\0') {
			l->last = (size_t)s;
			return (size_t)s;
		}
	}
}

static size_t outcome_index(const char *o)
{
	for (size_t i = 0; o && i < NOUT - 1; i++)
		if (strcmp(o, outcomes[i]) == 0)
			return i;
	return NOUT - 1;
}

/* ---- counting ------------------------------------------------------------- */

struct metrics *metrics_new(size_t max_labels)
{
	if (max_labels == 0 || max_labels > METRICS_MAX_LABELS)
		return NULL;
	struct metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	size_t n = max_labels + 1;
	m->max = max_labels;
	if (labels_init(&m->methods, max_labels) < 0 || labels_init(&m->tools, max_labels) < 0 ||
	    labels_init(&m->rules, max_labels) < 0 ||
	    labels_init(&m->server_methods, max_labels) < 0 ||
	    labels_init(&m->vtools, max_labels) < 0)
		goto fail;
	m->calls = calloc(n * NOUT, sizeof(*m->calls));
	m->tool_calls = calloc(n * NOUT, sizeof(*m->tool_calls));
	m->method_lat = calloc(n, sizeof(*m->method_lat));
	m->tool_lat = calloc(n, sizeof(*m->tool_lat));
	m->policy = calloc(n * NVERDICT, sizeof(*m->policy));
	m->server_msgs = calloc(n, sizeof(*m->server_msgs));
	if (!m->calls || !m->tool_calls || !m->method_lat || !m->tool_lat || !m->policy ||
	    !m->server_msgs)
		goto fail;
	return m;
fail:
	metrics_free(m);
	return NULL;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	labels_fini(&m->methods);
	labels_fini(&m->tools);
	labels_fini(&m->rules);
	labels_fini(&m->server_methods);
	labels_fini(&m->vtools);
	free(m->calls);
	free(m->tool_calls);
	free(m->method_lat);
	free(m->tool_lat);
	free(m->policy);
	free(m->server_msgs);
	for (size_t i = 0; i < m->ncontract; i++)
		free(m->contract[i].upstream);
	free(m);
}

int metrics_add_source(struct metrics *m, const char *name, metrics_source_fn fn, void *arg)
{
	if (m->nsources >= METRICS_MAX_SOURCES)
		return -1;
	m->sources[m->nsources++] = (struct source){.name = name, .fn = fn, .arg = arg};
	return 0;
}

void metrics_collect(const struct metrics *m, struct metrics_snapshot *s)
{
	for (size_t i = 0; i < m->nsources; i++)
		m->sources[i].fn(m->sources[i].arg, s);
}

void *metrics_snapshot_alloc(struct metrics_snapshot *s, size_t n, size_t size)
{
	void *p = s->nowned < METRICS_SNAPSHOT_ALLOCS ? calloc(n ? n : 1, size) : NULL;
	if (!p) {
		s->oom = 1;
		return NULL;
	}
	s->owned[s->nowned++] = p;
	return p;
}

void metrics_snapshot_release(struct metrics_snapshot *s)
{
	for (size_t i = 0; i < s->nowned; i++)
		free(s->owned[i]);
	s->nowned = 0;
}

static void hist_add(struct hist *h, uint64_t us)
{
	size_t i = 0;
	while (i < NBUCKET && us > buckets_us[i])
		i++;
	if (i < NBUCKET)
		h->bucket[i]++;
	h->count++;
	h->sum_us += us;
}

void metrics_call(struct metrics *m, const char *method, const char *tool, const char *outcome,
                  int64_t latency_us)
{
	size_t mi = labels_index(&m->methods, method), o = outcome_index(outcome);
	m->calls[mi * NOUT + o]++;
	if (latency_us >= 0)
		hist_add(&m->method_lat[mi], (uint64_t)latency_us);
	if (tool) {
		size_t ti = labels_index(&m->tools, tool);
		m->tool_calls[ti * NOUT + o]++;
		if (latency_us >= 0)
			hist_add(&m->tool_lat[ti], (uint64_t)latency_us);
	}
}

void metrics_server_message(struct metrics *m, const char *method)
{
	m->server_msgs[labels_index(&m->server_methods, method)]++;
}

void metrics_exchange(struct metrics *m, uint64_t bytes_in, uint64_t bytes_out)
{
	m->exchanges++;
	m->bytes_in += bytes_in;
	m->bytes_out += bytes_out;
}

void metrics_policy(struct metrics *m, const char *rule, const char *verdict)
{
	size_t v = 0;
	while (v < NVERDICT - 1 && (!verdict || strcmp(verdict, verdicts[v]) != 0))
		v++;
	m->policy[labels_index(&m->rules, rule ? rule : "unknown") * NVERDICT + v]++;
}

void metrics_session_opened(struct metrics *m)
{
	m->sessions_opened++;
}

void metrics_session_closed(struct metrics *m)
{
	m->sessions_closed++;
}

uint64_t metrics_sessions_open(const struct metrics *m)
{
	return m->sessions_opened > m->sessions_closed ? m->sessions_opened - m->sessions_closed : 0;
}

static uint64_t array_len(const json_t *a)
{
	return json_is_array(a) ? json_array_size(a) : 0;
}

int metrics_set_contract(struct metrics *m, const char *upstream, const json_t *report)
{
	struct contract_entry *e = NULL;
	for (size_t i = 0; i < m->ncontract; i++)
		if (strcmp(m->contract[i].upstream, upstream) == 0)
			e = &m->contract[i];
	if (!e) {
		if (m->ncontract >= METRICS_MAX_UPSTREAMS)
			return -1;
		char *name = strdup(upstream);
		if (!name)
			return -1;
		e = &m->contract[m->ncontract++];
		e->upstream = name;
	}
	const json_t *tools = json_object_get(report, "tools");
	e->tools = array_len(tools);
	e->problems = array_len(json_object_get(report, "problems"));
	e->warnings = array_len(json_object_get(report, "warnings"));
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		e->problems += array_len(json_object_get(t, "problems"));
		e->warnings += array_len(json_object_get(t, "warnings"));
	}
	e->changes = array_len(json_object_get(report, "changes"));
	const json_t *score = json_object_get(report, "score");
	e->score = json_is_number(score) ? json_number_value(score) : 0.0;
	e->passed = json_is_true(json_object_get(report, "passed"));
	e->truncated = json_is_true(json_object_get(report, "truncated"));
	return 0;
}

/* ---- the live contract's counts -------------------------------------------- */

/* hook_validate.h's codes (stable API); anything else shows as "other". */
static const char *const validate_codes[] = {
	"arguments-invalid", "result-invalid", "structured-content-missing", "tool-unknown",
	"no-listing", "schema-unusable", "validation-limit",
};
#define NVCODE (sizeof(validate_codes) / sizeof(validate_codes[0]))

void metrics_validate_add(struct metrics_validate *v, const char *upstream, const char *tool,
                          const char *code, uint64_t n)
{
	if (v->ncounts >= v->cap || !v->counts) {
		v->left_out++;
		return;
	}
	struct metrics_validate_count *c = &v->counts[v->ncounts++];
	label_cut(upstream ? upstream : "", c->upstream);
	label_cut(tool ? tool : "", c->tool);
	/* A code is one of a short list: longer is not one of them. */
	if (!code || strnlen(code, METRICS_CODE_MAX + 1) > METRICS_CODE_MAX)
		code = OTHER_LABEL;
	memcpy(c->code, code, strlen(code) + 1);
	c->n = n;
}

static int vcount_cmp(const void *a, const void *b)
{
	const struct metrics_validate_count *x = a, *y = b;
	int d = strcmp(x->upstream, y->upstream);
	if (!d)
		d = strcmp(x->tool, y->tool);
	return d ? d : strcmp(x->code, y->code);
}

void metrics_fold_validate(struct metrics *m, struct metrics_snapshot *s)
{
	struct metrics_validate *v = s ? s->validate : NULL;
	if (!v || !v->ncounts)
		return;
	for (size_t i = 0; i < v->ncounts; i++) {
		struct metrics_validate_count *c = &v->counts[i];
		size_t ti = labels_index(&m->vtools, c->tool);
		/* the interned name is c->tool itself, or "other" */
		memcpy(c->tool, m->vtools.name[ti], strlen(m->vtools.name[ti]) + 1);
		size_t k = 0;
		while (k < NVCODE && strcmp(c->code, validate_codes[k]) != 0)
			k++;
		if (k == NVCODE)
			memcpy(c->code, OTHER_LABEL, sizeof(OTHER_LABEL));
	}
	qsort(v->counts, v->ncounts, sizeof(*v->counts), vcount_cmp);
	size_t out = 0;
	for (size_t i = 0; i < v->ncounts; i++) {
		if (out && vcount_cmp(&v->counts[out - 1], &v->counts[i]) == 0)
			v->counts[out - 1].n += v->counts[i].n;
		else
			v->counts[out++] = v->counts[i];
	}
	v->ncounts = out;
}

/* ---- exposition ----------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, cap;
	int oom;
};

static void out_add(struct out *o, const char *s, size_t n)
{
	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 8192;
		while (cap < o->len + n + 1)
			cap *= 2;
		char *b = realloc(o->buf, cap);
		if (!b) {
			o->oom = 1;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void out_str(struct out *o, const char *s)
{
	out_add(o, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void out_fmt(struct out *o, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		o->oom = 1;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		out_add(o, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		o->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	out_add(o, big, (size_t)n);
	free(big);
}

/* A label value, escaped as the text format requires. */
static void out_label_value(struct out *o, const char *v)
{
	char cut[METRICS_LABEL_MAX + 1];
	label_cut(v, cut);
	for (const char *p = cut; *p; p++) {
		if (*p == '\\')
			out_add(o, "\\\\", 2);
		else if (*p == '"')
			out_add(o, "\\\"", 2);
		else if (*p == '\n')
			out_add(o, "\\n", 2);
		else
			out_add(o, p, 1);
	}
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	/* HELP text: only '\' and newline need escaping; ours have neither. */
	out_fmt(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{k1="v1",k2="v2"} (NULL keys end the list) */
static void series(struct out *o, const char *name, const char *suffix, const char *k1,
                   const char *v1, const char *k2, const char *v2)
{
	out_str(o, name);
	out_str(o, suffix);
	if (!k1)
		return;
	out_fmt(o, "{%s=\"", k1);
	out_label_value(o, v1);
	out_str(o, "\"");
	if (k2) {
		out_fmt(o, ",%s=\"", k2);
		out_label_value(o, v2);
		out_str(o, "\"");
	}
	out_str(o, "}");
}

static void sample_u64(struct out *o, const char *name, const char *k1, const char *v1,
                       const char *k2, const char *v2, uint64_t value)
{
	series(o, name, "", k1, v1, k2, v2);
	out_fmt(o, " %llu\n", (unsigned long long)value);
}

/* One counter family with a sample per worker; field: which counter of
 * struct metrics_worker. */
static void worker_family(struct out *o, const struct metrics_snapshot *s, const char *name,
                          const char *help, size_t field)
{
	family(o, name, "counter", help);
	for (size_t i = 0; i < s->nworkers; i++) {
		char w[24];
		uint64_t v;
		snprintf(w, sizeof(w), "%zu", i);
		memcpy(&v, (const char *)&s->workers[i] + field, sizeof(v));
		sample_u64(o, name, "worker", w, NULL, NULL, v);
	}
}

static void scalar(struct out *o, const char *name, const char *type, const char *help,
                   uint64_t value)
{
	family(o, name, type, help);
	sample_u64(o, name, NULL, NULL, NULL, NULL, value);
}

static void by_label_outcome(struct out *o, const char *name, const char *help,
                             const struct labels *l, const char *key, const uint64_t *v,
                             int errors_only)
{
	family(o, name, "counter", help);
	for (size_t i = 0; i <= l->max; i++) {
		if (i >= l->n && i != l->max)
			continue;
		for (size_t k = 0; k < NOUT; k++) {
			if (!v[i * NOUT + k] || (errors_only && k == 0))
				continue;
			sample_u64(o, name, key, l->name[i], "outcome", outcomes[k], v[i * NOUT + k]);
		}
	}
}

static void histograms(struct out *o, const char *name, const char *help,
                       const struct labels *l, const char *key, const struct hist *h)
{
	family(o, name, "histogram", help);
	for (size_t i = 0; i <= l->max; i++) {
		if ((i >= l->n && i != l->max) || h[i].count == 0)
			continue;
		uint64_t cum = 0;
		for (size_t b = 0; b < NBUCKET; b++) {
			char le[32];
			cum += h[i].bucket[b];
			snprintf(le, sizeof(le), "%g", (double)buckets_us[b] / 1e6);
			series(o, name, "_bucket", key, l->name[i], "le", le);
			out_fmt(o, " %llu\n", (unsigned long long)cum);
		}
		series(o, name, "_bucket", key, l->name[i], "le", "+Inf");
		out_fmt(o, " %llu\n", (unsigned long long)h[i].count);
		series(o, name, "_sum", key, l->name[i], NULL, NULL);
		out_fmt(o, " %.6f\n", (double)h[i].sum_us / 1e6);
		series(o, name, "_count", key, l->name[i], NULL, NULL);
		out_fmt(o, " %llu\n", (unsigned long long)h[i].count);
	}
}

static void render_snapshot(struct out *o, const struct metrics *m,
                            const struct metrics_snapshot *s)
{
	static const char *const classes[] = {"", "1xx", "2xx", "3xx", "4xx", "5xx"};

	scalar(o, "mcpwarden_client_connections", "gauge",
	       "Client connections open now on the MCP listener (admin connections excluded).",
	       s->client_connections);
	scalar(o, "mcpwarden_connections_accepted_total", "counter",
	       "Connections accepted since start, both listeners.", s->connections_total);
	scalar(o, "mcpwarden_http_requests_total", "counter",
	       "HTTP requests read from clients, both listeners.", s->http_requests_total);
	family(o, "mcpwarden_http_responses_total", "counter",
	       "HTTP responses sent to clients by status class, both listeners.");
	for (size_t c = 1; c < 6; c++)
		sample_u64(o, "mcpwarden_http_responses_total", "code", classes[c], NULL, NULL,
		           s->http_responses[c]);
	scalar(o, "mcpwarden_upstream_errors_total", "counter",
	       "Exchanges failed by an upstream (502 or a cut stream).", s->upstream_errors);
	scalar(o, "mcpwarden_upstream_timeouts_total", "counter",
	       "Exchanges failed by a slow upstream (504).", s->upstream_timeouts);
	scalar(o, "mcpwarden_requests_too_large_total", "counter",
	       "Client requests refused as too large (413).", s->requests_too_large);
	scalar(o, "mcpwarden_bad_requests_total", "counter",
	       "Client requests refused as malformed (4xx of mcpwarden's own).", s->bad_requests);
	scalar(o, "mcpwarden_connections_aborted_total", "counter",
	       "Client connections cut mid-exchange.", s->aborted);
	family(o, "mcpwarden_messages_total", "counter",
	       "JSON-RPC messages seen by the message hook, by direction.");
	sample_u64(o, "mcpwarden_messages_total", "direction", "client_to_server", NULL, NULL,
	           s->messages_from_client);
	sample_u64(o, "mcpwarden_messages_total", "direction", "server_to_client", NULL, NULL,
	           s->messages_from_server);
	family(o, "mcpwarden_hook_verdicts_total", "counter",
	       "Messages the deciding hooks dropped, answered or modified.");
	sample_u64(o, "mcpwarden_hook_verdicts_total", "verdict", "drop", NULL, NULL,
	           s->hook_dropped);
	sample_u64(o, "mcpwarden_hook_verdicts_total", "verdict", "answer", NULL, NULL,
	           s->hook_answered);
	sample_u64(o, "mcpwarden_hook_verdicts_total", "verdict", "modify", NULL, NULL,
	           s->hook_modified);
	scalar(o, "mcpwarden_fast_listings_total", "counter",
	       "Unchanged tools/list replies forwarded unparsed, the hooks' kept verdicts replayed.",
	       s->fast_listings);
	family(o, "mcpwarden_listing_tools_total", "counter",
	       "Tools of tools/list replies built from the tree of the upstream's last listing: "
	       "taken from it (the same bytes) or parsed.");
	sample_u64(o, "mcpwarden_listing_tools_total", "how", "reused", NULL, NULL,
	           s->listing_tools_reused);
	sample_u64(o, "mcpwarden_listing_tools_total", "how", "parsed", NULL, NULL,
	           s->listing_tools_parsed);
	worker_family(o, s, "mcpwarden_worker_connections_total",
	              "Client connections each worker (event loop thread) accepted or took over.",
	              offsetof(struct metrics_worker, connections_total));
	worker_family(o, s, "mcpwarden_worker_requests_total",
	              "HTTP requests each worker handled (a handed-over one counts on the worker "
	              "that took it).",
	              offsetof(struct metrics_worker, requests_total));
	worker_family(o, s, "mcpwarden_worker_handoffs_total",
	              "Requests a worker passed, with their connection, to the worker holding the "
	              "translated session they name.",
	              offsetof(struct metrics_worker, handoffs_total));
	worker_family(o, s, "mcpwarden_worker_yields_total",
	              "Times a worker, on the CPU for yield_after_us without a pause, let other "
	              "runnable threads have its core.",
	              offsetof(struct metrics_worker, yields_total));
	family(o, "mcpwarden_upstream_idle_connections", "gauge",
	       "Idle keep-alive connections pooled per upstream.");
	for (size_t i = 0; i < s->nups; i++)
		sample_u64(o, "mcpwarden_upstream_idle_connections", "upstream", s->ups[i].name, NULL,
		           NULL, s->ups[i].idle_connections);
	family(o, "mcpwarden_upstream_up", "gauge",
	       "Whether the last /readyz probe reached the upstream (absent until probed).");
	for (size_t i = 0; i < s->nups; i++)
		if (s->ups[i].reachable >= 0)
			sample_u64(o, "mcpwarden_upstream_up", "upstream", s->ups[i].name, NULL, NULL,
			           (uint64_t)s->ups[i].reachable);
	scalar(o, "mcpwarden_ring_capacity", "gauge", "Slots in the call record ring.",
	       s->ring_capacity);
	scalar(o, "mcpwarden_ring_records", "gauge", "Call records held in the ring.",
	       s->ring_records);
	scalar(o, "mcpwarden_ring_dropped_total", "counter",
	       "Call records overwritten in the ring (oldest first) to make room.",
	       s->ring_dropped);
	scalar(o, "mcpwarden_inflight_calls", "gauge", "Client requests waiting for an answer.",
	       s->inflight_calls);
	family(o, "mcpwarden_session_limit_refusals_total", "counter",
	       "Requests refused with 429: their pass-through session was at "
	       "limits.max_inflight_per_session or limits.max_streams_per_session.");
	sample_u64(o, "mcpwarden_session_limit_refusals_total", "limit", "inflight", NULL, NULL,
	           s->session_refused[0]);
	sample_u64(o, "mcpwarden_session_limit_refusals_total", "limit", "streams", NULL, NULL,
	           s->session_refused[1]);
	family(o, "mcpwarden_session_slots", "gauge",
	       "Slots pass-through sessions hold now: requests in flight and GET streams.");
	sample_u64(o, "mcpwarden_session_slots", "kind", "inflight", NULL, NULL, s->session_slots[0]);
	sample_u64(o, "mcpwarden_session_slots", "kind", "streams", NULL, NULL, s->session_slots[1]);
	scalar(o, "mcpwarden_admin_streams", "gauge", "Open /calls/stream subscribers.",
	       s->admin_streams);
	scalar(o, "mcpwarden_admin_streams_behind", "gauge",
	       "/calls/stream subscribers too slow for live records, catching up from the ring.",
	       s->admin_streams_behind);
	if (s->start_time_seconds > 0) {
		family(o, "mcpwarden_start_time_seconds", "gauge",
		       "Unix time the process started.");
		out_fmt(o, "mcpwarden_start_time_seconds %.3f\n", s->start_time_seconds);
	}
	(void)m;
}

static void render_contract(struct out *o, const struct metrics *m)
{
	static const struct {
		const char *name, *help;
	} fam[] = {
		{"mcpwarden_contract_score", "Share of the upstream's tools without a contract problem (0..1)."},
		{"mcpwarden_contract_passed", "1 when the latest tools/list passed the contract."},
		{"mcpwarden_contract_problems", "Contract problems in the latest tools/list."},
		{"mcpwarden_contract_warnings", "Contract warnings in the latest tools/list."},
		{"mcpwarden_contract_tools", "Tools examined in the latest tools/list."},
		{"mcpwarden_contract_changes", "Changes against the baseline in the latest tools/list."},
	};
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		family(o, fam[f].name, "gauge", fam[f].help);
		for (size_t i = 0; i < m->ncontract; i++) {
			const struct contract_entry *e = &m->contract[i];
			series(o, fam[f].name, "", "upstream", e->upstream, NULL, NULL);
			switch (f) {
			case 0:
				out_fmt(o, " %.6g\n", isfinite(e->score) ? e->score : 0.0);
				break;
			case 1:
				out_fmt(o, " %d\n", e->passed);
				break;
			case 2:
				out_fmt(o, " %llu\n", (unsigned long long)e->problems);
				break;
			case 3:
				out_fmt(o, " %llu\n", (unsigned long long)e->warnings);
				break;
			case 4:
				out_fmt(o, " %llu\n", (unsigned long long)e->tools);
				break;
			default:
				out_fmt(o, " %llu\n", (unsigned long long)e->changes);
				break;
			}
		}
	}
}

/* The policy's own counters (struct metrics_policy): one family each, as
 * conf/README-policy.md's Metrics section names them. */
static void render_policy(struct out *o, const struct metrics_policy *p)
{
	static const struct metrics_policy none = {0};
	static const struct {
		const char *name, *help;
		size_t at;
	} totals[] = {
#define TOTAL(f, h) {"mcpwarden_policy_" #f "_total", h, offsetof(struct metrics_policy, f)}
		TOTAL(allowed, "Requests the policy forwarded by an allow rule or its default."),
		TOTAL(denied, "Requests the policy refused: deny and hide rules, unknown tools."),
		TOTAL(logged, "Requests the policy forwarded flagged: log rules and dry runs."),
		TOTAL(dry_run, "Of the logged requests, those a dry run forwarded instead of refusing."),
		TOTAL(unknown_tool, "Calls of tools the upstream never listed (refused, or a dry run)."),
		TOTAL(tools_hidden, "Tool entries hide rules removed from tools/list results."),
		TOTAL(listings, "tools/list results the policy read."),
		TOTAL(tools_over_cap, "Listed tools not remembered: over the per-upstream caps."),
		TOTAL(reloads, "Reloads that brought a policy in."),
		TOTAL(reload_failures, "Reloads whose policy did not load (the old one stayed)."),
#undef TOTAL
	};
	static const struct {
		const char *name, *help;
		size_t at;
	} per_rule[] = {
#define RULE(f, h) {"mcpwarden_policy_rule_" #f "_total", h, offsetof(struct metrics_policy_rule, f)}
		RULE(matched, "Requests each rule of the policy in force decided, by rule and action."),
		RULE(allowed, "Requests each rule forwarded as allowed."),
		RULE(denied, "Requests each rule refused."),
		RULE(logged, "Requests each rule forwarded flagged."),
		RULE(dry_run, "Requests each rule would have refused, forwarded by a dry run."),
		RULE(hidden, "Tools each rule removed from tools/list results."),
		RULE(dry_run_hidden, "Tools each rule would have hidden, left in by a dry run."),
#undef RULE
	};
	uint64_t v;

	if (!p)
		p = &none;
	scalar(o, "mcpwarden_policy_active", "gauge", "1 when a policy is in force.",
	       (uint64_t)(p->active != 0));
	scalar(o, "mcpwarden_policy_dry_run_mode", "gauge",
	       "1 when the policy in force is a dry run (deny and hide only logged).",
	       (uint64_t)(p->dry_run_mode != 0));
	for (size_t f = 0; f < sizeof(totals) / sizeof(totals[0]); f++) {
		memcpy(&v, (const char *)p + totals[f].at, sizeof(v));
		scalar(o, totals[f].name, "counter", totals[f].help, v);
	}
	for (size_t f = 0; f < sizeof(per_rule) / sizeof(per_rule[0]); f++) {
		family(o, per_rule[f].name, "counter", per_rule[f].help);
		for (size_t i = 0; i < p->nrules; i++) {
			const struct metrics_policy_rule *r = &p->rules[i];
			memcpy(&v, (const char *)r + per_rule[f].at, sizeof(v));
			/* matched carries the rule's action; the others need not */
			sample_u64(o, per_rule[f].name, "rule", r->rule, f == 0 ? "action" : NULL,
			           f == 0 ? r->action : NULL, v);
		}
	}
}

/* The live contract (struct metrics_validate, folded first): zeros and no
 * series when there is none, like the policy's. */
static void render_validate(struct out *o, const struct metrics_validate *v)
{
	static const struct metrics_validate none = {0};
	static const char *const fam = "mcpwarden_validation_findings_total";

	if (!v)
		v = &none;
	family(o, fam, "counter",
	       "Live contract findings (calls and results checked against the listed schemas), "
	       "by upstream, tool and code.");
	for (size_t i = 0; i < v->ncounts; i++) {
		const struct metrics_validate_count *c = &v->counts[i];
		const char *const v3[][2] = {
			{"upstream", c->upstream}, {"tool", c->tool}, {"code", c->code}};
		out_str(o, fam);
		for (size_t k = 0; k < 3; k++) {
			out_fmt(o, "%s%s=\"", k ? "," : "{", v3[k][0]);
			out_label_value(o, v3[k][1]);
			out_str(o, "\"");
		}
		out_fmt(o, "} %llu\n", (unsigned long long)c->n);
	}
	scalar(o, "mcpwarden_validation_calls_checked_total", "counter",
	       "tools/call requests whose arguments the live contract checked.", v->calls_checked);
	scalar(o, "mcpwarden_validation_results_checked_total", "counter",
	       "tools/call results the live contract checked against an outputSchema.",
	       v->results_checked);
	scalar(o, "mcpwarden_validation_schemas_compiled_total", "counter",
	       "Tool schemas the live contract compiled (once per listing that changed them).",
	       v->compiled);
	scalar(o, "mcpwarden_validation_schema_compile_failures_total", "counter",
	       "Of the compiled schemas, those unusable (nothing validated against them).",
	       v->compile_failed);
	scalar(o, "mcpwarden_validation_log_lines_suppressed_total", "counter",
	       "Finding log lines held back by the per-code, per-tool rate limit.",
	       v->logs_suppressed);
	scalar(o, "mcpwarden_validation_counts_left_out", "gauge",
	       "Counts this scrape could not copy (over its bound): shown from the next one.",
	       v->left_out);
}

/* ---- capture (proxy/hooks/hook_capture.h) ---- */
static void render_capture(struct out *o, const struct metrics_snapshot *s)
{
	if (!s->capture)
		return;
	family(o, "mcpwarden_capture_records_total", "counter",
	       "Lines written to the upstream's capture file.");
	for (size_t i = 0; i < s->ncapture; i++)
		sample_u64(o, "mcpwarden_capture_records_total", "upstream", s->capture[i].upstream,
		           NULL, NULL, s->capture[i].records);
	family(o, "mcpwarden_capture_dropped_total", "counter",
	       "Capture lines dropped: the writer was behind (queue full) or the file could not "
	       "be written.");
	for (size_t i = 0; i < s->ncapture; i++)
		sample_u64(o, "mcpwarden_capture_dropped_total", "upstream", s->capture[i].upstream,
		           NULL, NULL, s->capture[i].dropped);
}
/* ---- end capture ---- */

/* ---- telemetry (proxy/net/otlp.h) ---- */
static void render_otlp(struct out *o, const struct metrics_snapshot *s)
{
	if (!s->otlp)
		return;
	family(o, "mcpwarden_otel_spans_exported_total", "counter",
	       "Spans the OTLP exporter delivered (2xx).");
	sample_u64(o, "mcpwarden_otel_spans_exported_total", NULL, NULL, NULL, NULL,
	           s->otlp->exported);
	family(o, "mcpwarden_otel_spans_dropped_total", "counter",
	       "Spans the OTLP exporter dropped, by reason (queue_full, export_failed, shutdown).");
	for (int i = 0; i < 3; i++)
		sample_u64(o, "mcpwarden_otel_spans_dropped_total", "reason", s->otlp->reason[i], NULL,
		           NULL, s->otlp->dropped[i]);
}
/* ---- end telemetry ---- */

char *metrics_render(const struct metrics *m, const struct metrics_snapshot *snap, size_t *len)
{
	struct out o = {0};
	static const struct metrics_snapshot none = {0};

	render_snapshot(&o, m, snap ? snap : &none);
	render_capture(&o, snap ? snap : &none); /* capture */
	render_otlp(&o, snap ? snap : &none);    /* telemetry */
	by_label_outcome(&o, "mcpwarden_requests_total",
	                 "Client JSON-RPC requests and notifications recorded, by method and outcome.",
	                 &m->methods, "method", m->calls, 0);
	by_label_outcome(&o, "mcpwarden_errors_total",
	                 "Client JSON-RPC calls whose outcome was not ok, by method and outcome.",
	                 &m->methods, "method", m->calls, 1);
	by_label_outcome(&o, "mcpwarden_tool_calls_total", "tools/call requests by tool and outcome.",
	                 &m->tools, "tool", m->tool_calls, 0);
	histograms(&o, "mcpwarden_request_duration_seconds",
	           "Time from a client request's arrival to its answer, by method.", &m->methods,
	           "method", m->method_lat);
	histograms(&o, "mcpwarden_tool_call_duration_seconds",
	           "Time from a tools/call request's arrival to its answer, by tool.", &m->tools,
	           "tool", m->tool_lat);
	family(&o, "mcpwarden_server_messages_total", "counter",
	       "Requests and notifications the servers sent on their own, by method.");
	for (size_t i = 0; i <= m->max; i++)
		if ((i < m->server_methods.n || i == m->max) && m->server_msgs[i])
			sample_u64(&o, "mcpwarden_server_messages_total", "method",
			           m->server_methods.name[i], NULL, NULL, m->server_msgs[i]);
	family(&o, "mcpwarden_policy_decisions_total", "counter",
	       "Verdicts the deciding hooks gave with a rule or reason, by rule and verdict.");
	for (size_t i = 0; i <= m->max; i++) {
		if (i >= m->rules.n && i != m->max)
			continue;
		for (size_t v = 0; v < NVERDICT; v++)
			if (m->policy[i * NVERDICT + v])
				sample_u64(&o, "mcpwarden_policy_decisions_total", "rule", m->rules.name[i],
				           "verdict", verdicts[v], m->policy[i * NVERDICT + v]);
	}
	render_policy(&o, snap ? snap->policy : NULL);
	scalar(&o, "mcpwarden_exchanges_total", "counter",
	       "HTTP exchanges on the MCP listener that carried or awaited JSON-RPC.", m->exchanges);
	scalar(&o, "mcpwarden_received_bytes_total", "counter",
	       "Bytes received from clients on the MCP listener.", m->bytes_in);
	scalar(&o, "mcpwarden_sent_bytes_total", "counter",
	       "Bytes sent to clients on the MCP listener.", m->bytes_out);
	scalar(&o, "mcpwarden_sessions_opened_total", "counter",
	       "Session ids issued in initialize replies.", m->sessions_opened);
	scalar(&o, "mcpwarden_sessions_closed_total", "counter",
	       "Sessions ended by a successful DELETE.", m->sessions_closed);
	scalar(&o, "mcpwarden_sessions", "gauge",
	       "Sessions open: opened minus closed (sessions that expire upstream are not seen).",
	       metrics_sessions_open(m));
	render_contract(&o, m);
	render_validate(&o, snap ? snap->validate : NULL);
	if (o.oom) {
		free(o.buf);
		return NULL;
	}
	if (len)
		*len = o.len;
	return o.buf;
}

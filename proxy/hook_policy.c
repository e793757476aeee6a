/* hook_policy: see hook_policy.h. The glue between the message hook and
 * the pure policy in policy/: it keeps what the proxy has learnt of each
 * upstream's tools, turns a message into a policy_input, and acts on the
 * decision.
 *
 *   hook_policy
 *     ├─ cur ─────────▶ pgen {policy, memo, gen, refs}  ◀── where->hook_data[slot]
 *     │                                          (one ref per exchange that
 *     │                                           sent a client message)
 *     └─ ups[i] {name, live, base}
 *           live: tool table from tools/list results (name -> hints, cands)
 *           base: tool table from the contract's baseline file
 *
 * Tool tables are open-addressing hash sets keyed by name, holding only
 * the four hints (not the tool JSON), capped at HOOK_POLICY_MAX_TOOLS.
 *
 * A tools/call is judged in two parts (policy.h, "memo"): which rules a
 * tool's name, hints and upstream let through is worked out once and
 * kept, and only those rules' argument matchers run per call. It is kept
 * in the tool's entry, stamped with the policy generation (cands,
 * cands_gen), or, for tools nobody listed, policies with per-client rules
 * and exchanges that outlived a reload, in the generation's memo.
 *
 * Left out: per-session tool views (a server may list different tools to
 * different sessions; the union of what an upstream listed is kept), and
 * answering a refused server->client request upstream (the hook can only
 * drop it; the server sees its request time out).
 */
#include "proxy/hook_policy.h"

#include <stdio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checks/drift.h"
#include "policy/policy.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/inspect.h"
#include "proxy/jsonrpc.h"
#include "proxy/log.h"

/* ---- tool tables ------------------------------------------------------------ */

struct tool_entry {
	char *name;        /* owned; NULL: free slot */
	uint32_t hash;
	struct policy_hints hints;
	/* What the tool's name and hints decide under policy generation
	 * cands_gen (0: nothing kept): see judge(). */
	uint64_t cands_gen;
	struct policy_cands cands;
};

struct tool_table {
	struct tool_entry *slots;  /* owned: cap slots, cap a power of two */
	size_t cap, n;
	int stale;                 /* list_changed seen: next listing replaces */
	int warned;                /* the cap was hit and logged */
};

static int hints_equal(const struct policy_hints *a, const struct policy_hints *b)
{
	return a->read_only == b->read_only && a->destructive == b->destructive &&
	       a->idempotent == b->idempotent && a->open_world == b->open_world;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;  /* FNV-1a */
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

static struct tool_entry *table_find(const struct tool_table *t, const char *name)
{
	if (!t->n || !name)
		return NULL;
	uint32_t h = name_hash(name);
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		struct tool_entry *e = &t->slots[i];
		if (!e->name)
			return NULL;
		if (e->hash == h && strcmp(e->name, name) == 0)
			return e;
	}
}

static void table_clear(struct tool_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].name);
	free(t->slots);
	*t = (struct tool_table){0};
}

static int table_grow(struct tool_table *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	struct tool_entry *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		struct tool_entry *e = &t->slots[i];
		if (!e->name)
			continue;
		size_t j = e->hash & (ncap - 1);
		while (ns[j].name)
			j = (j + 1) & (ncap - 1);
		ns[j] = *e;
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

/* Adds or updates a tool. Returns 0, or -1 (cap reached, name too long,
 * out of memory): the tool stays unknown. */
static int table_put(struct tool_table *t, const char *name, const struct policy_hints *h)
{
	if (strlen(name) > HOOK_POLICY_MAX_TOOL_NAME)
		return -1;
	uint32_t hash = name_hash(name);
	if (t->n) {
		for (size_t i = hash & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
			struct tool_entry *e = &t->slots[i];
			if (!e->name)
				break;
			if (e->hash == hash && strcmp(e->name, name) == 0) {
				/* The same listing again keeps what its hints decide. */
				if (!hints_equal(&e->hints, h)) {
					e->hints = *h;
					e->cands_gen = 0;
				}
				return 0;
			}
		}
	}
	if (t->n >= HOOK_POLICY_MAX_TOOLS)
		return -1;
	/* Load factor under 3/4 keeps probe runs short. */
	if ((t->n + 1) * 4 > t->cap * 3 && table_grow(t) < 0)
		return -1;
	size_t i = hash & (t->cap - 1);
	while (t->slots[i].name)
		i = (i + 1) & (t->cap - 1);
	char *copy = strdup(name);
	if (!copy)
		return -1;
	t->slots[i] = (struct tool_entry){.name = copy, .hash = hash, .hints = *h};
	t->n++;
	return 0;
}

/* Fills t from a tools array. Returns how many tools did not fit. */
static size_t table_add_tools(struct tool_table *t, const json_t *tools)
{
	size_t lost = 0;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const json_t *tool = json_array_get(tools, i);
		const char *name = json_string_value(json_object_get(tool, "name"));
		if (!name)
			continue;
		struct policy_hints h;
		policy_hints_from_json(json_object_get(tool, "annotations"), &h);
		if (table_put(t, name, &h) < 0)
			lost++;
	}
	return lost;
}

/* ---- the module --------------------------------------------------------------- */

/* A compiled policy shared by the module and the exchanges started under
 * it: freed when the last of them lets go. */
struct pgen {
	struct policy *p;          /* owned */
	/* What tool names decide under p (see judge()): per listed tool in
	 * the tool tables, stamped with gen, when no rule names clients;
	 * else, and for tools nobody listed, in memo. */
	struct policy_memo *memo;  /* owned */
	uint64_t gen;              /* unique per pgen, from 1 */
	int client_keyed;          /* policy_client_keyed(p) */
	unsigned refs;           /* atomic: an exchange gives its ref back unlocked */
};

struct up_state {
	char *name;              /* owned */
	struct tool_table live;  /* from tools/list results */
	struct tool_table base;  /* from the baseline file */
};

struct hook_policy {
	/* Held by the hook for what it reads or changes of the shared state
	 * (the current pgen, tables, memo, counters), by reload and by the
	 * readers below. Not taken for the messages the policy has nothing to
	 * do with (most replies) nor to give back an exchange's pgen ref: with
	 * two busy workers, taking it three times a call made one call in
	 * eight wait for the other worker. */
	pthread_mutex_t lock;
	struct px_ctx *ctx;      /* borrowed */
	int slot;                /* our index in where->hook_data */
	struct pgen *cur;        /* one ref; NULL: no policy configured */
	struct up_state *ups;    /* owned array */
	size_t nups;
	uint64_t last_gen;       /* of the latest pgen committed */
	struct hook_policy_stats stats;
};

static void pgen_unref(struct pgen *g)
{
	/* The last ref is never hp->cur's while it is current, so no one can
	 * take a new ref once the count reaches zero. */
	if (g && __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		policy_memo_free(g->memo);
		policy_free(g->p);
		free(g);
	}
}

static struct up_state *up_find(struct hook_policy *hp, const char *name)
{
	for (size_t i = 0; i < hp->nups; i++)
		if (strcmp(hp->ups[i].name, name) == 0)
			return &hp->ups[i];
	return NULL;
}

/* The state of an upstream, created on first sight (names come from the
 * configuration, so this stays small; capped all the same). */
static struct up_state *up_get(struct hook_policy *hp, const char *name)
{
	if (!name)
		return NULL;
	struct up_state *u = up_find(hp, name);
	if (u || hp->nups >= HOOK_POLICY_MAX_UPSTREAMS)
		return u;
	struct up_state *nu = realloc(hp->ups, (hp->nups + 1) * sizeof(*nu));
	if (!nu)
		return NULL;
	hp->ups = nu;
	u = &hp->ups[hp->nups];
	*u = (struct up_state){0};
	if (!(u->name = strdup(name)))
		return NULL;
	hp->nups++;
	return u;
}

/* ---- judging a message ---------------------------------------------------------- */

/* A member of a JSON object (borrowed), or NULL; NULL or a non-object
 * obj has none. With the length given, jansson skips a strlen: a lookup
 * costs about what one walk over a four-member envelope does, so the
 * hook looks up only what it uses, once. */
#define MEMBER(obj, lit) json_object_getn((obj), (lit), sizeof(lit) - 1)

/* Copies s into dst for a log line or an error message: control
 * characters become '?', long values are cut with "...". */
static const char *printable(char *dst, size_t cap, const char *s)
{
	size_t n = 0;
	if (!s)
		s = "";
	for (; *s && n + 1 < cap; s++)
		dst[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	if (*s && cap > 4) {
		memcpy(dst + cap - 4, "...", 3);
		n = cap - 1;
	}
	dst[n] = '\0';
	return dst;
}

/* What the tool was judged by, for the refusal's data: the effective
 * hints and the change word in its name, if any. */
static void add_tool_facts(json_t *data, const struct policy *p, const struct policy_input *in)
{
	struct policy_hints e;
	char word[64];
	if (!in->tool_known)
		return;
	policy_hints_effective(in->hints, in->baseline, &e);
	json_object_set_new(data, "hints",
	                    json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", e.read_only,
	                              "destructiveHint", e.destructive, "idempotentHint",
	                              e.idempotent, "openWorldHint", e.open_world));
	if (policy_change_word(p, in->tool, word, sizeof(word)))
		json_object_set_new(data, "change_word", json_string(word));
}

static json_t *refusal(const json_t *id, const char *method, const char *tool,
                       const struct policy_decision *d, enum policy_action what)
{
	char msg[512], t[132];
	const char *verb = what == POLICY_HIDE ? "is hidden" : "was refused";
	if (tool)
		snprintf(msg, sizeof(msg), "mcpwarden policy: tool \"%s\" %s by rule \"%s\": %s",
		         printable(t, sizeof(t), tool), verb, d->rule, d->reason);
	else
		snprintf(msg, sizeof(msg), "mcpwarden policy: %s %s by rule \"%s\": %s",
		         printable(t, sizeof(t), method), verb, d->rule, d->reason);
	json_t *data = json_pack("{s:s, s:s, s:s*, s:s, s:s}", "rule", d->rule, "action",
	                         policy_action_str(what), "tool", tool, "reason", d->reason, "method",
	                         method);
	return jrpc_error_new(id, HOOK_POLICY_ERROR_CODE, msg, data);
}

static void log_decision(const struct inspect_msg *m, const char *method, const char *tool,
                         const struct policy_decision *d)
{
	const struct inspect_where *w = m->where;
	char t[132], c[68], meth[68];
	const char *what = d->dry_run_would != POLICY_NONE ? "dry run, forwarded: would "
	                                                   : "";
	enum policy_action a = d->dry_run_would != POLICY_NONE ? d->dry_run_would : d->action;

	/* Method, tool and client names come from the wire or the config:
	 * printable() keeps them on one line. */
	log_msg(LOG_INFO, "#%llu policy: %s%s %s%s%s%s (rule %s, client %s, upstream %s): %s",
	        w->conn_id, what, policy_action_str(a), printable(meth, sizeof(meth), method),
	        tool ? " \"" : "",
	        tool ? printable(t, sizeof(t), tool) : "", tool ? "\"" : "", d->rule,
	        w->client_name ? printable(c, sizeof(c), w->client_name) : "-",
	        w->upstream ? w->upstream : "-", d->reason);
}

static void count(struct hook_policy *hp, const struct policy_decision *d)
{
	switch (d->action) {
	case POLICY_ALLOW:
		hp->stats.allowed++;
		break;
	case POLICY_DENY:
	case POLICY_HIDE:
		hp->stats.denied++;
		break;
	case POLICY_LOG:
		hp->stats.logged++;
		if (d->dry_run_would != POLICY_NONE)
			hp->stats.dry_run++;
		break;
	case POLICY_NONE:
		break;
	}
	/* The first byte spares the call for every other rule. */
	if (d->rule && d->rule[0] == POLICY_RULE_UNKNOWN[0] && strcmp(d->rule, POLICY_RULE_UNKNOWN) == 0)
		hp->stats.unknown_tool++;
}

static enum inspect_verdict judge(struct hook_policy *hp, struct pgen *g, struct inspect_msg *m,
                                  const char *method)
{
	const json_t *params = m->params;
	struct policy_input in = {
		.method = method,
		.client = m->where->client_name,
		.upstream = m->where->upstream,
		.args = params,
	};
	int is_call = m->dir == INSPECT_FROM_CLIENT && strcmp(method, "tools/call") == 0;

	struct tool_entry *entry = NULL;
	if (is_call) {
		struct tool_entry *live = NULL, *base = NULL;
		in.tool = m->tool;
		/* "arguments" is looked up by the policy when a rule needs it. */
		in.args = NULL;
		in.call_params = params;
		struct up_state *up = up_get(hp, m->where->upstream);
		if (up) {
			live = table_find(&up->live, in.tool);
			base = table_find(&up->base, in.tool);
		}
		in.tool_known = live || base;
		in.hints = live ? &live->hints : base ? &base->hints : NULL;
		in.baseline = base ? &base->hints : NULL;
		entry = live ? live : base;
	} else if (strcmp(method, "tools/call") == 0) {
		return INSPECT_FORWARD;  /* not a thing a server sends */
	}

	/* What the tool's name and hints decide is kept in its entry, valid
	 * while the entry is (a new listing clears it, table_put) and for one
	 * policy generation: entries are only stamped by and read for the
	 * policy in force, whose baselines are the tables' (an exchange that
	 * outlived a reload goes through its own policy's memo instead). The
	 * upstream is the table's, the client must not count. */
	struct policy_decision d;
	if (entry && g == hp->cur && !g->client_keyed) {
		if (entry->cands_gen != g->gen) {
			policy_cands_of(g->p, &in, &entry->cands);
			entry->cands_gen = g->gen;
		}
		policy_cands_call(g->p, &entry->cands, &in, &d);
	} else if (is_call) {
		policy_memo_call(g->memo, &in, &d);
	} else {
		policy_eval(g->p, &in, &d);
	}
	if (!d.rule)
		return INSPECT_FORWARD;  /* no rule names this method */
	policy_count(g->p, &d, 0);
	count(hp, &d);

	switch (d.action) {
	case POLICY_ALLOW:
	case POLICY_NONE:
		return INSPECT_FORWARD;
	case POLICY_LOG:
		m->reason = d.tag;
		log_decision(m, method, in.tool, &d);
		return INSPECT_FORWARD;
	case POLICY_DENY:
	case POLICY_HIDE:
		break;
	}
	m->reason = d.tag;
	log_decision(m, method, in.tool, &d);
	if (m->dir == INSPECT_FROM_CLIENT && m->kind == JRPC_REQUEST) {
		m->answer = refusal(jrpc_id(m->msg), method, in.tool, &d, d.action);
		if (m->answer) {
			json_t *data = json_object_get(json_object_get(m->answer, "error"), "data");
			if (is_call && data)
				add_tool_facts(data, g->p, &in);
			return INSPECT_ANSWER;
		}
	}
	/* Notifications, and requests from the server (which the hook cannot
	 * answer upstream), are dropped. */
	return INSPECT_DROP;
}

/* ---- tools/list results ------------------------------------------------------------ */

/* The tools array of a tools/list result, or NULL. Known by the request
 * it answers when that came in the same exchange; otherwise (replies on
 * another stream) by its shape: a non-empty array of tool objects, each
 * with a string name and an inputSchema object. */
static json_t *listed_tools(const struct inspect_msg *m)
{
	/* The request first: one lookup rules out the results of every
	 * other method (the two tests commute). */
	if (m->request) {
		const char *rm = m->request_method;
		if (!rm || strcmp(rm, "tools/list") != 0)
			return NULL;
	}
	json_t *tools = MEMBER(MEMBER(m->msg, "result"), "tools");
	if (!json_is_array(tools))
		return NULL;
	if (m->request)
		return tools;
	if (json_array_size(tools) == 0)
		return NULL;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		if (!json_is_string(json_object_get(t, "name")) ||
		    !json_is_object(json_object_get(t, "inputSchema")))
			return NULL;
	}
	return tools;
}

static void remember(struct hook_policy *hp, struct up_state *up, const json_t *tools)
{
	if (up->live.stale) {
		/* A new listing after list_changed: the set may have shrunk. */
		table_clear(&up->live);
	}
	size_t lost = table_add_tools(&up->live, tools);
	if (lost) {
		hp->stats.tools_over_cap += lost;
		if (!up->live.warned) {
			up->live.warned = 1;
			log_msg(LOG_WARN, "policy: upstream %s lists more than %d tools (or names over %d "
			        "bytes): %zu not remembered, calls to them count as unknown tools",
			        up->name, HOOK_POLICY_MAX_TOOLS, HOOK_POLICY_MAX_TOOL_NAME, lost);
		}
	}
}

/* Whether a listed tool is hidden is what its tools/call without
 * arguments would be decided: a listing of 1,000 tools ran policy_eval
 * 1,000 times (4.6M instructions), when what a tool's name and hints
 * decide is kept in its table entry (as for its calls, judge()) or in the
 * generation's memo. remember() has just put this listing's hints in
 * live, so both agree with policy_eval on in. */
static void hide_decide(struct hook_policy *hp, struct pgen *g, struct tool_entry *live,
                        const struct policy_input *in, struct policy_decision *d)
{
	/* Entries are stamped only for the policy in force (see judge()). */
	if (live && g == hp->cur && !g->client_keyed && hints_equal(&live->hints, in->hints)) {
		if (live->cands_gen != g->gen) {
			policy_cands_of(g->p, in, &live->cands);
			live->cands_gen = g->gen;
		}
		policy_cands_call(g->p, &live->cands, in, d);
	} else if (g->memo) {
		policy_memo_call(g->memo, in, d);
	} else {
		policy_eval(g->p, in, d);
	}
}

static void hide_tools(struct hook_policy *hp, struct pgen *g, struct up_state *up,
                       struct inspect_msg *m, json_t *tools)
{
	size_t hidden = 0, would = 0;
	char names[256] = "";

	for (size_t i = json_array_size(tools); i-- > 0;) {
		const json_t *tool = json_array_get(tools, i);
		const char *name = json_string_value(json_object_get(tool, "name"));
		if (!name)
			continue;
		const struct tool_entry *base = up ? table_find(&up->base, name) : NULL;
		struct tool_entry *live = up ? table_find(&up->live, name) : NULL;
		struct policy_hints h;
		policy_hints_from_json(json_object_get(tool, "annotations"), &h);
		struct policy_input in = {
			.method = "tools/call",
			.tool = name,
			.client = m->where->client_name,
			.upstream = m->where->upstream,
			.tool_known = 1,
			.hints = &h,
			.baseline = base ? &base->hints : NULL,
		};
		struct policy_decision d;
		hide_decide(hp, g, live, &in, &d);
		if (d.action == POLICY_HIDE) {
			policy_count(g->p, &d, 1);
			json_array_remove(tools, i);
			hidden++;
		} else if (d.dry_run_would == POLICY_HIDE) {
			policy_count(g->p, &d, 1);
			if (would++ < 8) {
				char t[64];
				size_t n = strlen(names);
				snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "",
				         printable(t, sizeof(t), name));
			}
		}
	}
	if (hidden) {
		hp->stats.tools_hidden += hidden;
		m->modified = 1;
		m->reason = "policy:hide";
		log_msg(LOG_DEBUG, "#%llu policy: %zu tools hidden from tools/list (upstream %s)",
		        m->where->conn_id, hidden, m->where->upstream ? m->where->upstream : "-");
	}
	if (would)
		log_msg(LOG_INFO, "#%llu policy: dry run, forwarded: would hide %zu tools from "
		        "tools/list (upstream %s): %s%s", m->where->conn_id, would,
		        m->where->upstream ? m->where->upstream : "-", names, would > 8 ? ", ..." : "");
}

/* ---- the hook ---------------------------------------------------------------------- */

/* The policy this message is judged by: the one its exchange started
 * under. An exchange takes its reference with its first client message;
 * server messages on exchanges without one (standalone GET streams, which
 * may live for hours) follow reloads. */
static struct pgen *policy_for(struct hook_policy *hp, struct inspect_msg *m)
{
	struct pgen *g = m->where->hook_data[hp->slot];
	if (g || !hp->cur)
		return g ? g : hp->cur;
	if (m->dir == INSPECT_FROM_CLIENT) {
		__atomic_add_fetch(&hp->cur->refs, 1, __ATOMIC_RELAXED);
		m->where->hook_data[hp->slot] = hp->cur;
	}
	return hp->cur;
}

static enum inspect_verdict on_message_locked(struct hook_policy *hp, struct inspect_msg *m,
                                              json_t *tools)
{
	struct pgen *g = policy_for(hp, m);
	struct up_state *up;

	/* The upstream's state is looked up only by the paths that use it:
	 * most messages need none. */
	if (tools) {
		hp->stats.listings++;
		up = up_get(hp, m->where->upstream);
		if (up)
			remember(hp, up, tools);
		if (g && policy_may_hide(g->p))
			hide_tools(hp, g, up, m, tools);
		return INSPECT_FORWARD;
	}
	if (m->kind != JRPC_REQUEST && m->kind != JRPC_NOTIFICATION)
		return INSPECT_FORWARD;
	if (!g && m->dir == INSPECT_FROM_CLIENT)
		return INSPECT_FORWARD;  /* no policy: nothing to judge, nothing to learn */
	const char *method = m->method; /* read once for every hook */
	if (!method)
		return INSPECT_FORWARD;
	if (m->dir == INSPECT_FROM_SERVER &&
	    strcmp(method, "notifications/tools/list_changed") == 0 &&
	    (up = up_get(hp, m->where->upstream)))
		up->live.stale = 1;
	if (!g)
		return INSPECT_FORWARD;
	return judge(hp, g, m, method);
}

static enum inspect_verdict on_message(void *arg, struct inspect_msg *m)
{
	struct hook_policy *hp = arg;
	json_t *tools = NULL;

	/* What needs no shared state is sorted out before the lock: a result
	 * is ours only when it lists tools (listed_tools reads the message
	 * alone), an error never. */
	if (m->dir == INSPECT_FROM_SERVER && m->kind == JRPC_RESULT) {
		if (!(tools = listed_tools(m)))
			return INSPECT_FORWARD;
	} else if (m->kind != JRPC_REQUEST && m->kind != JRPC_NOTIFICATION) {
		return INSPECT_FORWARD;
	}
	pthread_mutex_lock(&hp->lock);
	enum inspect_verdict v = on_message_locked(hp, m, tools);
	pthread_mutex_unlock(&hp->lock);
	return v;
}

static void on_exchange(void *arg, const struct inspect_exchange *x)
{
	struct hook_policy *hp = arg;
	struct pgen *g = x->where->hook_data[hp->slot];
	x->where->hook_data[hp->slot] = NULL;
	pgen_unref(g); /* atomic: no lock */
}

/* ---- setup, reload, teardown ------------------------------------------------------------- */

/* The compiled policy and baselines of a configuration, before they are
 * swapped in. */
struct staged {
	struct pgen *g;
	struct tool_table *base;  /* owned array: one per cfg->ups[i] */
	size_t nbase;
};

static void staged_fini(struct staged *s)
{
	pgen_unref(s->g);
	for (size_t i = 0; i < s->nbase; i++)
		table_clear(&s->base[i]);
	free(s->base);
	*s = (struct staged){0};
}

static int load_baseline(const struct px_upstream_conf *u, struct tool_table *t, char *err,
                         size_t errlen)
{
	const char *file = json_string_value(json_object_get(u->contract, "baseline"));
	if (!file)
		return 0;
	json_error_t jerr;
	json_t *doc = json_load_file(file, 0, &jerr);
	if (!doc) {
		snprintf(err, errlen, "policy: upstream %s: baseline %s:%d:%d: %s", u->name, file,
		         jerr.line, jerr.column, jerr.text);
		return -1;
	}
	const json_t *tools = drift_tools_of(doc);
	if (!tools) {
		snprintf(err, errlen, "policy: upstream %s: baseline %s holds no tool list", u->name,
		         file);
		json_decref(doc);
		return -1;
	}
	size_t lost = table_add_tools(t, tools);
	json_decref(doc);
	if (lost)
		log_msg(LOG_WARN, "policy: upstream %s: baseline %s: %zu tools over the cap of %d, "
		        "not used", u->name, file, lost, HOOK_POLICY_MAX_TOOLS);
	return 0;
}

static int stage(const struct px_config *cfg, struct staged *s, char *err, size_t errlen)
{
	*s = (struct staged){0};
	if (!cfg->policy)
		return 0;
	struct policy *p = policy_load(cfg->policy, "$.policy", err, errlen);
	if (!p)
		return -1;
	s->g = calloc(1, sizeof(*s->g));
	s->base = calloc(cfg->nups ? cfg->nups : 1, sizeof(*s->base));
	struct policy_memo *memo = policy_memo_new(p);
	if (!s->g || !s->base || !memo) {
		policy_memo_free(memo);
		policy_free(p);
		free(s->g);
		s->g = NULL;
		staged_fini(s);
		snprintf(err, errlen, "policy: out of memory");
		return -1;
	}
	s->g->p = p;
	s->g->memo = memo;
	s->g->client_keyed = policy_client_keyed(p);
	s->g->refs = 1;
	s->nbase = cfg->nups;
	for (size_t i = 0; i < cfg->nups; i++) {
		if (load_baseline(&cfg->ups[i], &s->base[i], err, errlen) < 0) {
			staged_fini(s);
			return -1;
		}
	}
	return 0;
}

/* Swaps a staged configuration in (cannot fail but for upstream states
 * out of memory, which only loses a baseline: logged). */
static void commit(struct hook_policy *hp, const struct px_config *cfg, struct staged *s,
                   int reload)
{
	pgen_unref(hp->cur);
	hp->cur = s->g;
	s->g = NULL;
	for (size_t i = 0; i < hp->nups; i++)
		table_clear(&hp->ups[i].base);
	for (size_t i = 0; i < s->nbase; i++) {
		struct up_state *u = up_get(hp, cfg->ups[i].name);
		if (!u) {
			log_msg(LOG_WARN, "policy: upstream %s: baseline not used (out of memory)",
			        cfg->ups[i].name);
			continue;
		}
		u->base = s->base[i];
		s->base[i] = (struct tool_table){0};
	}
	staged_fini(s);
	if (!hp->cur) {
		/* Only news when a reload took the policy away. */
		log_msg(reload ? LOG_INFO : LOG_DEBUG, "policy: none configured");
		return;
	}
	hp->cur->gen = ++hp->last_gen;
	const struct policy *p = hp->cur->p;
	log_msg(LOG_INFO, "policy: %zu rules, default %s, unknown tools %s%s", policy_nrules(p),
	        policy_action_str(policy_default(p)),
	        policy_unknown_tools(p) == POLICY_UNKNOWN_DENY ? "denied" : "judged by the rules",
	        policy_dry_run(p) ? ", DRY RUN (deny and hide only logged)" : "");
}

int hook_policy_setup(struct px_ctx *ctx, char *err, size_t errlen)
{
	struct staged s;

	if (stage(ctx->cfg, &s, err, errlen) < 0)
		return -1;
	struct hook_policy *hp = calloc(1, sizeof(*hp));
	if (!hp) {
		staged_fini(&s);
		snprintf(err, errlen, "policy: out of memory");
		return -1;
	}
	hp->ctx = ctx;
	hp->slot = inspect_add(ctx->insp, "policy", on_message, on_exchange, hp);
	if (hp->slot < 0 || pthread_mutex_init(&hp->lock, NULL) != 0) {
		staged_fini(&s);
		free(hp);
		snprintf(err, errlen, "policy: no free slot in the message hook");
		return -1;
	}
	/* No inspect_set_lock: on_message locks for what needs it. */
	for (size_t i = 0; i < ctx->cfg->nups; i++)
		up_get(hp, ctx->cfg->ups[i].name);
	commit(hp, ctx->cfg, &s, 0);
	ctx->policy = hp;
	return 0;
}

int hook_policy_reload(struct px_ctx *ctx, const struct px_config *newcfg, char *err,
                       size_t errlen)
{
	struct hook_policy *hp = ctx->policy;
	struct staged s;

	if (!hp) {
		/* Setup never ran (or failed): nothing is registered yet. */
		const struct px_config *old = ctx->cfg;
		ctx->cfg = newcfg;
		int rc = hook_policy_setup(ctx, err, errlen);
		ctx->cfg = old;
		return rc;
	}
	int rc = stage(newcfg, &s, err, errlen);
	pthread_mutex_lock(&hp->lock);
	if (rc < 0) {
		hp->stats.reload_failures++;
	} else {
		hp->stats.reloads++;
		commit(hp, newcfg, &s, 1);
	}
	pthread_mutex_unlock(&hp->lock);
	return rc;
}

int hook_policy_check(const struct px_config *cfg, char *err, size_t errlen)
{
	struct staged s;
	if (stage(cfg, &s, err, errlen) < 0)
		return -1;
	staged_fini(&s);
	return 0;
}

void hook_policy_free(struct hook_policy *hp)
{
	if (!hp)
		return;
	pgen_unref(hp->cur);
	for (size_t i = 0; i < hp->nups; i++) {
		free(hp->ups[i].name);
		table_clear(&hp->ups[i].live);
		table_clear(&hp->ups[i].base);
	}
	free(hp->ups);
	pthread_mutex_destroy(&hp->lock);
	free(hp);
}

/* ---- for metrics and the admin page ------------------------------------------------------- */

void hook_policy_get_stats(const struct hook_policy *hp, struct hook_policy_stats *out)
{
	if (!hp) {
		*out = (struct hook_policy_stats){0};
		return;
	}
	*out = hp->stats;
}

int hook_policy_active(const struct hook_policy *hp)
{
	return hp && hp->cur;
}

const struct policy *hook_policy_current(const struct hook_policy *hp)
{
	return hp && hp->cur ? hp->cur->p : NULL;
}

static json_t *stats_json(const struct hook_policy *hp);

json_t *hook_policy_stats_json(const struct hook_policy *hp)
{
	if (!hp)
		return stats_json(hp);
	struct hook_policy *w = (struct hook_policy *)(uintptr_t)hp;
	pthread_mutex_lock(&w->lock);
	json_t *o = stats_json(hp);
	pthread_mutex_unlock(&w->lock);
	return o;
}

static json_t *stats_json(const struct hook_policy *hp)
{
	struct hook_policy_stats s;
	hook_policy_get_stats(hp, &s);
	const struct policy *p = hook_policy_current(hp);
	json_t *rules = json_array();
	json_t *o = json_pack(
		"{s:b, s:b, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:o}", "active",
		p != NULL, "dry_run", p ? policy_dry_run(p) : 0, "totals", "allowed",
		(json_int_t)s.allowed, "denied", (json_int_t)s.denied, "logged", (json_int_t)s.logged,
		"dry_run", (json_int_t)s.dry_run, "unknown_tool", (json_int_t)s.unknown_tool,
		"tools_hidden", (json_int_t)s.tools_hidden, "listings", (json_int_t)s.listings,
		"tools_over_cap", (json_int_t)s.tools_over_cap, "reloads", (json_int_t)s.reloads,
		"reload_failures", (json_int_t)s.reload_failures, "rules", rules);
	if (!o || !p)
		return o;
	for (size_t i = 0; i < policy_nstats(p); i++) {
		struct policy_rule_stats r;
		policy_stats(p, i, &r);
		json_array_append_new(
			rules, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "rule", r.rule,
			                 "action", policy_action_str(r.action), "matched",
			                 (json_int_t)r.matched, "allowed", (json_int_t)r.allowed, "denied",
			                 (json_int_t)r.denied, "logged", (json_int_t)r.logged, "dry_run",
			                 (json_int_t)r.dry_run, "hidden", (json_int_t)r.hidden,
			                 "dry_run_hidden", (json_int_t)r.dry_run_hidden));
	}
	return o;
}

/* hook_policy: see hook_policy.h. The glue between the message hook and
 * the pure policy in policy/: it keeps what the proxy has learnt of each
 * upstream's tools (the pages and list_changed notifications the tools/list
 * tracker tells it of: tracker_page, tracker_list_changed), turns a
 * message into a policy_input, and acts on the decision.
 *
 * Why this file is long (over 800 lines): tool tables, views, readers and judging share the
 * lock-free view protocol drawn below (struct view, reader, pgen and their
 * refcount rules under hp->lock); a split would spread those rules over two
 * files, the one thing this file must keep in one place.
 *
 * Threads. Every worker's exchanges come here (inspect_clone shares the
 * hook), thousands of calls a second each. Judging a call must not wait
 * for another worker: on two cores a worker holding a lock is often
 * preempted, and whoever needs the lock next sleeps until it runs again
 * (a scheduler tick). So what a call reads is published as an immutable
 * view, and each thread keeps the view it last took:
 *
 *   hook_policy (hp->lock: writers, and a reader taking a new view)
 *     ├─ view ──────────▶ view {refs, g, ups[i] {name, live, base}}
 *     │  version (atomic)      │           │       │
 *     │                        │           ▼       ▼  tool_table {refs, entries}
 *     │                        ▼              (immutable once published,
 *     │          pgen {policy, gen, refs}      shared by the views that
 *     │              ▲                         did not change them)
 *     │              └── where->hook_data[slot] (one ref per exchange that
 *     │                                          sent a client message)
 *     ├─ ups[i] {name, stale, warned}   (writers only)
 *     └─ readers ──▶ reader {view (one ref), version, memo} per thread
 *
 * A reader never waits: on each message it compares hp->version (one
 * atomic load) with the version of the view it holds; equal, it judges
 * with that view, touching no shared state but the relaxed atomic
 * counters and, once per exchange, its pgen's refcount (an atomic add on
 * a pgen its view keeps alive). Only when a listing or a reload published
 * a new view does it take hp->lock, to take a ref on the new view and let
 * the old one go. Listings (which change a table: copy on write), reloads
 * and the admin readers take hp->lock as before: they are rare.
 *
 * Freeing. View and table refcounts only change under hp->lock. A view
 * is held by hp->view while it is current and by each reader that took
 * it; a reader lets its view go only from its own thread, under the lock,
 * when it takes a newer one (or hook_policy_free, when no worker runs).
 * So a view, and the tables and pgen it holds, are freed under the lock
 * by whoever drops the last ref, and no reader can be using it then: a
 * reader uses only the view it holds a ref on. The pgen keeps its atomic
 * refcount (exchanges give theirs back with no lock); a new ref is only
 * ever taken on the pgen of a view the taker holds, so never on a count
 * that reached zero.
 *
 * A tools/call is judged in two parts (policy.h, "memo"): which rules a
 * tool's name, hints and upstream let through is worked out once and
 * kept, and only those rules' argument matchers run per call. For listed
 * tools it is worked out when the table is published, in each entry,
 * stamped with the view's policy generation (cands, cands_gen); for tools
 * nobody listed and policies with per-client rules, in the reader's own
 * memo (policy_memo is not thread-safe: one per thread, for the pgen of
 * its view); an exchange that outlived a reload is judged by policy_eval,
 * which decides the same.
 *
 * Left out: per-session tool views (a server may list different tools to
 * different sessions; the union of what an upstream listed is kept), and
 * answering a refused server->client request upstream (the hook can only
 * drop it; the server sees its request time out).
 */
#include "proxy/hooks/hook_policy.h"

#include <stdio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checks/drift.h"
#include "policy/policy.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/inspect.h"
#include "proxy/hooks/tools.h"
#include "proxy/base/jparse.h"
#include "proxy/base/jsame.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "proxy/base/hash.h"

/* ---- tool tables ------------------------------------------------------------ */

struct tool_entry {
	char *name;        /* owned; NULL: free slot */
	uint32_t hash;
	struct policy_hints hints;
	/* The "annotations" value hints were read from (one reference), or
	 * NULL. Values are never changed and a listing's unchanged tools are
	 * the very values of the last one (proxy/base/jreuse.h): the same
	 * value again has these hints, found without reading it (hints_of). */
	json_t *ann;
	/* What the tool's name and hints decide under policy generation
	 * cands_gen (0: nothing kept): see table_stamp(). */
	uint64_t cands_gen;
	struct policy_cands cands;
};

/* Open-addressing hash set keyed by name, holding only the four hints
 * (not the tool JSON), capped at HOOK_POLICY_MAX_TOOLS. Built privately,
 * then published in a view and never changed again: a change makes a
 * copy. refs counts the views holding it, changed under hp->lock only. */
struct tool_table {
	unsigned refs;
	struct tool_entry *slots;  /* owned: cap slots, cap a power of two */
	size_t cap, n;
};

static int hints_equal(const struct policy_hints *a, const struct policy_hints *b)
{
	return a->read_only == b->read_only && a->destructive == b->destructive &&
	       a->idempotent == b->idempotent && a->open_world == b->open_world;
}

static uint32_t name_hash(const char *s)
{
	return hash_fnv1a32_str(HASH_FNV1A32_INIT, s);
}

/* t may be NULL (no table: nothing listed). */
static struct tool_entry *table_find(const struct tool_table *t, const char *name)
{
	if (!t || !t->n || !name)
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

static struct tool_table *table_new(void)
{
	struct tool_table *t = calloc(1, sizeof(*t));
	if (t)
		t->refs = 1;
	return t;
}

/* Under hp->lock once published (NULL accepted). */
static void table_unref(struct tool_table *t)
{
	if (!t || --t->refs > 0)
		return;
	for (size_t i = 0; i < t->cap; i++) {
		free(t->slots[i].name);
		json_decref(t->slots[i].ann);
	}
	free(t->slots);
	free(t);
}

/* A private copy of src (NULL: an empty table), entries, stamps and all,
 * or NULL (out of memory). */
static struct tool_table *table_copy(const struct tool_table *src)
{
	struct tool_table *t = table_new();
	if (!t || !src || !src->cap)
		return t;
	if (!(t->slots = calloc(src->cap, sizeof(*t->slots)))) {
		free(t);
		return NULL;
	}
	t->cap = src->cap;
	for (size_t i = 0; i < src->cap; i++) {
		if (!src->slots[i].name)
			continue;
		t->slots[i] = src->slots[i];
		t->slots[i].ann = NULL;
		if (!(t->slots[i].name = strdup(src->slots[i].name))) {
			table_unref(t);
			return NULL;
		}
		t->slots[i].ann = json_incref(src->slots[i].ann);
		t->n++;
	}
	return t;
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

/* e->ann := ann (a reference of its own). */
static void entry_set_ann(struct tool_entry *e, const json_t *ann)
{
	json_t *a = json_incref((json_t *)(uintptr_t)ann); /* held, never changed */
	json_decref(e->ann);
	e->ann = a;
}

/* Adds or updates a tool in a private table, its hints read from ann
 * (borrowed). Returns 0, or -1 (cap reached, name too long, out of
 * memory): the tool stays unknown. */
static int table_put(struct tool_table *t, const char *name, const struct policy_hints *h,
                     const json_t *ann)
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
				entry_set_ann(e, ann);
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
	entry_set_ann(&t->slots[i], ann);
	t->n++;
	return 0;
}

/* The name of tools[i] and its "annotations" (*ann, borrowed, or NULL);
 * NULL when it has no name. */
static const char *listed_tool(const json_t *tools, size_t i, const json_t **ann)
{
	const json_t *tool = json_array_get(tools, i);
	/* A walk of a tool's few members costs less than hashing the key. */
	const char *name = json_string_value(JPARSE_MEMBER(tool, "name"));
	*ann = name ? JPARSE_MEMBER(tool, "annotations") : NULL;
	return name;
}

/* The hints ann says: e's (an entry for the same tool, or NULL) when it
 * read them from this very value, which e holds (so it is no other value
 * at the same address), else read. 999 of a 1,000-tool listing that
 * changed in one tool are found so. */
static void hints_of(const struct tool_entry *e, const json_t *ann, struct policy_hints *h)
{
	if (e && ann && e->ann == ann)
		*h = e->hints;
	else
		policy_hints_from_json(ann, h);
}

/* Fills a private table from a tools array. Returns how many tools did
 * not fit. */
static size_t table_add_tools(struct tool_table *t, const json_t *tools)
{
	size_t lost = 0;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		struct policy_hints h;
		const json_t *ann;
		const char *name = listed_tool(tools, i, &ann);
		if (!name)
			continue;
		policy_hints_from_json(ann, &h);
		if (table_put(t, name, &h, ann) < 0)
			lost++;
	}
	return lost;
}

/* ---- the module --------------------------------------------------------------- */

/* A compiled policy shared by the views and the exchanges started under
 * it: freed when the last of them lets go. */
struct pgen {
	struct policy *p;          /* owned */
	uint64_t gen;              /* unique per pgen, from 1 */
	int client_keyed;          /* policy_client_keyed(p): entries keep no cands */
	/* Every exchange changes refs, every call reads the above: apart. */
	char pad[64];
	unsigned refs;             /* atomic: an exchange gives its ref back unlocked */
};

/* What a message is judged with: the policy in force and every
 * upstream's tables. Immutable once published; refs under hp->lock. */
struct view_up {
	const char *name;          /* borrowed: hp->ups[i].name, freed with hp */
	struct tool_table *live;   /* one ref, or NULL: from tools/list results */
	struct tool_table *base;   /* one ref, or NULL: from the baseline file */
};

struct view {
	unsigned refs;
	struct pgen *g;            /* one ref; NULL: no policy configured */
	size_t nups;
	struct view_up ups[];      /* index i is hp->ups[i] */
};

/* A listing the hide rules judged (issue 20, "Big lists at byte speed"):
 * hiding is a function of the listing's bytes, the policy, the upstream's
 * baseline and, for a client-keyed policy, the client; when all are the
 * same again, so is what was hidden, and the listing need not be parsed.
 * Under hp->lock. */
struct kept_listing {
	/* The upstream's "result" bytes, named by the tools tracker, which
	 * keeps them (tools_listing_serial): no copy of 448 KB here. */
	uint64_t listing;
	uint64_t gen;              /* of the pgen that judged it */
	struct tool_table *base;   /* one ref, or NULL: the baseline judged with */
	char *client;              /* owned, or NULL (none, or not client-keyed) */
	struct rcbytes *sent;/* one ref: the result sent; NULL: nothing hidden */
	struct policy_decision *hidden; /* owned: one per hidden tool, to count again */
	size_t nhidden;
};

/* Kept listings per upstream: for a client-keyed policy, the clients
 * told apart before the oldest is replaced. */
#define KEPT_LISTINGS 4

/* What the hide rules decided for each tool of the last listing of an
 * upstream they judged, for the next listing to take where its tools are
 * the same values (hide_tools): a decision is a function of the tool's
 * name and hints, the policy, the client (a client-keyed policy) and the
 * upstream's baseline, and a value kept is never changed. */
struct hide_memo {
	struct jsame *tools;       /* owned, or NULL: the listing judged */
	struct policy_decision *d; /* owned: one per position of tools */
	size_t cap;
	uint64_t gen;              /* of the pgen that decided them; 0: none */
	char *client;              /* owned, or NULL (none, or not client-keyed) */
	struct tool_table *base;   /* one ref, or NULL: the baseline judged with */
};

/* What the writers keep of an upstream besides its tables. */
struct up_state {
	char *name;              /* owned */
	int stale;               /* list_changed seen: next listing replaces */
	int warned;              /* the cap was hit and logged */
	struct kept_listing *kept[KEPT_LISTINGS]; /* owned, or NULL */
	unsigned kept_next;      /* the slot a new client's listing takes */
	/* The last listing remembered, for the next one to be read where it
	 * differs (remember): its tools by position (owned, or NULL), the
	 * live table it left (one ref, or NULL), and whether its tools all
	 * had names of their own and fitted. */
	struct jsame *last;
	struct tool_table *last_live;
	int last_whole;
	struct hide_memo hide;
};

/* One per thread that judged a message (see the file header). */
struct reader {
	struct reader *next;       /* in hp->readers (under hp->lock) */
	struct view *view;         /* one ref, taken and dropped under hp->lock */
	uint64_t version;          /* hp->version when view was taken */
	/* For view->g, made on first use; freed before the view goes. */
	struct policy_memo *memo;  /* owned */
	/* This thread's copies of view->g's patterns (policy.h, policy_rx:
	 * glibc's regexec locks a compiled pattern while it matches, so
	 * threads sharing one wait on each other); same lifetime as memo. */
	struct policy_rx *rx;      /* owned */
	/* A stand-in used under hp->lock when no reader could be allocated:
	 * view borrowed, no memo. */
	int fallback;
};

struct hook_policy {
	/* Read by every worker on every message, changed only when a view
	 * is published: kept off the cache lines that change on every
	 * message (stats) or with every writer (the lock). */
	struct px_ctx *ctx;      /* borrowed */
	int slot;                /* our index in where->hook_data */
	uint64_t id;             /* names hp in the thread-local cache */
	/* Bumped (release) after view changes, read by readers with no lock. */
	uint64_t version;
	char pad0[64];

	/* Held by writers (listings, list_changed, reload), by a reader
	 * taking a newer view, and by the admin readers below. Never for
	 * judging a message with the view a reader holds. */
	pthread_mutex_t lock;
	struct view *view;       /* one ref: the current view */
	struct pgen *cur;        /* view->g (borrowed), for the admin readers */
	struct up_state *ups;    /* owned array */
	size_t nups;
	uint64_t last_gen;       /* of the latest pgen committed */
	struct reader *readers;  /* owned list */
	char pad1[64];

	/* Relaxed atomic counters: bumped by any thread, lock or not. */
	struct hook_policy_stats stats;
};

static void pgen_unref(struct pgen *g)
{
	/* The last ref is never a view's while the view lives, so no one
	 * can take a new ref once the count reaches zero. */
	if (g && __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		policy_free(g->p);
		free(g);
	}
}

static void stat_add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* Under hp->lock (or with no other thread left). NULL accepted. */
static void view_unref(struct view *v)
{
	if (!v || --v->refs > 0)
		return;
	for (size_t i = 0; i < v->nups; i++) {
		table_unref(v->ups[i].live);
		table_unref(v->ups[i].base);
	}
	pgen_unref(v->g);
	free(v);
}

/* A new private view for hp->nups upstreams, sharing old's pgen and
 * tables (old may be NULL). Under hp->lock. Returns NULL when out of
 * memory. */
static struct view *view_derive(struct hook_policy *hp, const struct view *old)
{
	struct view *v = calloc(1, sizeof(*v) + hp->nups * sizeof(v->ups[0]));
	if (!v)
		return NULL;
	v->refs = 1;
	v->nups = hp->nups;
	if (old && (v->g = old->g))
		__atomic_add_fetch(&v->g->refs, 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < v->nups; i++) {
		v->ups[i].name = hp->ups[i].name;
		if (old && i < old->nups) {
			if ((v->ups[i].live = old->ups[i].live))
				v->ups[i].live->refs++;
			if ((v->ups[i].base = old->ups[i].base))
				v->ups[i].base->refs++;
		}
	}
	return v;
}

/* Makes v (its ref moves to hp) the current view. Under hp->lock. */
static void view_publish(struct hook_policy *hp, struct view *v)
{
	struct view *old = hp->view;
	hp->view = v;
	hp->cur = v->g;
	/* Release: a reader that sees the new version and then takes the
	 * lock finds v (the lock orders that anyway; this keeps the version
	 * honest for a reader that only compares). */
	__atomic_store_n(&hp->version, hp->version + 1, __ATOMIC_RELEASE);
	view_unref(old);
}

static const struct view_up *view_up_find(const struct view *v, const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < v->nups; i++)
		if (strcmp(v->ups[i].name, name) == 0)
			return &v->ups[i];
	return NULL;
}

/* What a published table's entries decide under g, worked out before it
 * is published, as judge() and hide_decide() will ask: the upstream is
 * the table's, the client must not count (so nothing is kept for a
 * client-keyed policy), a live entry is judged with the baseline's hints
 * for the same tool (in base), a baseline entry (is_base) with its own. Every
 * entry of a table in a view whose pgen is g ends stamped with g->gen, or
 * 0: a stamp equal to an exchange's pgen's gen means that pgen is the
 * view's, whose baselines are these. */
static void table_stamp(struct tool_table *t, const struct pgen *g, const struct tool_table *base,
                        int is_base, const char *upstream)
{
	for (size_t i = 0; t && i < t->cap; i++) {
		struct tool_entry *e = &t->slots[i];
		if (!e->name)
			continue;
		if (!g || g->client_keyed) {
			e->cands_gen = 0;
			continue;
		}
		if (e->cands_gen == g->gen)
			continue;
		const struct tool_entry *b = is_base ? e : table_find(base, e->name);
		struct policy_input in = {
			.method = "tools/call",
			.tool = e->name,
			.upstream = upstream,
			.tool_known = 1,
			.hints = &e->hints,
			.baseline = b ? &b->hints : NULL,
		};
		policy_cands_of(g->p, &in, &e->cands);
		e->cands_gen = g->gen;
	}
}

/* The state of an upstream, created on first sight (names come from the
 * configuration, so this stays small; capped all the same). Returns its
 * index, or -1. Under hp->lock. */
static long up_get(struct hook_policy *hp, const char *name)
{
	if (!name)
		return -1;
	for (size_t i = 0; i < hp->nups; i++)
		if (strcmp(hp->ups[i].name, name) == 0)
			return (long)i;
	if (hp->nups >= HOOK_POLICY_MAX_UPSTREAMS)
		return -1;
	struct up_state *nu = realloc(hp->ups, (hp->nups + 1) * sizeof(*nu));
	if (!nu)
		return -1;
	hp->ups = nu;
	struct up_state *u = &hp->ups[hp->nups];
	*u = (struct up_state){0};
	if (!(u->name = strdup(name)))
		return -1;
	return (long)hp->nups++;
}

/* ---- readers --------------------------------------------------------------------- */

/* This thread's reader for hp. The thread-local cache names the module by
 * address and id, so a module freed and another allocated at the same
 * address never finds the old one's reader. */
static uint64_t hp_ids;
static _Thread_local struct {
	const struct hook_policy *hp;
	uint64_t id;
	struct reader *r;
} tl;

static struct reader *reader_of(struct hook_policy *hp)
{
	if (tl.hp == hp && tl.id == hp->id)
		return tl.r;
	struct reader *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_lock(&hp->lock);
	r->next = hp->readers;
	hp->readers = r;
	pthread_mutex_unlock(&hp->lock);
	tl.hp = hp;
	tl.id = hp->id;
	tl.r = r;
	return r;
}

/* Moves r to the current view. Under hp->lock. */
static void reader_refresh_locked(struct hook_policy *hp, struct reader *r)
{
	if (r->fallback) {
		r->view = hp->view;  /* borrowed while the lock is held */
		return;
	}
	if (r->view != hp->view) {
		struct view *old = r->view;
		/* The memo borrows old's policy: it goes first, unless the new
		 * view has the same pgen (a listing changed a table). */
		if (!old || old->g != hp->view->g) {
			policy_memo_free(r->memo);
			r->memo = NULL;
			policy_rx_free(r->rx);
			r->rx = NULL;
		}
		hp->view->refs++;
		r->view = hp->view;
		view_unref(old);
	}
	r->version = __atomic_load_n(&hp->version, __ATOMIC_RELAXED);
}

/* Makes sure r holds the current view: in the steady state one atomic
 * load and a compare, no lock. */
static void reader_sync(struct hook_policy *hp, struct reader *r)
{
	if (r->view && r->version == __atomic_load_n(&hp->version, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&hp->lock);
	reader_refresh_locked(hp, r);
	pthread_mutex_unlock(&hp->lock);
}

/* r's memo for g, or NULL (g is not its view's: an exchange that outlived
 * a reload, judged by policy_eval; or out of memory). */
static struct policy_memo *reader_memo(struct reader *r, const struct pgen *g)
{
	if (r->fallback || g != r->view->g)
		return NULL;
	if (!r->memo)
		r->memo = policy_memo_new(g->p);
	return r->memo;
}

/* r's pattern copies for g, or NULL (g is not its view's, or
 * out of memory: the policy's own are used). */
static struct policy_rx *reader_rx(struct reader *r, const struct pgen *g)
{
	if (r->fallback || g != r->view->g || !g->p)
		return NULL;
	if (!r->rx)
		r->rx = policy_rx_new(g->p);
	return r->rx;
}

static void reader_free(struct reader *r)
{
	policy_memo_free(r->memo);
	policy_rx_free(r->rx);
	if (!r->fallback)
		view_unref(r->view);
	free(r);
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
		stat_add(&hp->stats.allowed, 1);
		break;
	case POLICY_DENY:
	case POLICY_HIDE:
		stat_add(&hp->stats.denied, 1);
		break;
	case POLICY_LOG:
		stat_add(&hp->stats.logged, 1);
		if (d->dry_run_would != POLICY_NONE)
			stat_add(&hp->stats.dry_run, 1);
		break;
	case POLICY_NONE:
		break;
	}
	/* The first byte spares the call for every other rule. */
	if (d->rule && d->rule[0] == POLICY_RULE_UNKNOWN[0] && strcmp(d->rule, POLICY_RULE_UNKNOWN) == 0)
		stat_add(&hp->stats.unknown_tool, 1);
}

/* Judges with r's view and no lock (see the file header). */
static enum inspect_verdict judge(struct hook_policy *hp, struct reader *r, struct pgen *g,
                                  struct inspect_msg *m, const char *method)
{
	const json_t *params = m->params;
	struct policy_input in = {
		.method = method,
		.client = m->where->client_name,
		.upstream = m->where->upstream,
		.args = params,
		.rx = reader_rx(r, g),
	};
	int is_call = m->dir == INSPECT_FROM_CLIENT && strcmp(method, "tools/call") == 0;

	struct tool_entry *entry = NULL;
	if (is_call) {
		struct tool_entry *live = NULL, *base = NULL;
		in.tool = m->tool;
		/* "arguments" is looked up by the policy when a rule needs it. */
		in.args = NULL;
		in.call_params = params;
		const struct view_up *up = view_up_find(r->view, m->where->upstream);
		if (up) {
			live = table_find(up->live, in.tool);
			base = table_find(up->base, in.tool);
		}
		in.tool_known = live || base;
		in.hints = live ? &live->hints : base ? &base->hints : NULL;
		in.baseline = base ? &base->hints : NULL;
		entry = live ? live : base;
	} else if (strcmp(method, "tools/call") == 0) {
		return INSPECT_FORWARD;  /* not a thing a server sends */
	}

	/* What the tool's name and hints decide is kept in its entry when
	 * the entry is stamped with g's generation, which holds only when g
	 * is the view's policy, whose baselines are the view's (an exchange
	 * that outlived a reload is judged without: table_stamp()). */
	struct policy_decision d;
	struct policy_memo *memo;
	if (entry && entry->cands_gen == g->gen)
		policy_cands_call(g->p, &entry->cands, &in, &d);
	else if (is_call && (memo = reader_memo(r, g)))
		policy_memo_call(memo, &in, &d);
	else
		policy_eval(g->p, &in, &d);
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

/* Whether a full pass saw two tools of one name: a set of their name
 * hashes (a hash seen twice counts as a name seen twice). */
struct name_set {
	uint32_t *slot;  /* owned: cap slots, 0 free (a hash is stored + 1) */
	size_t cap;
	int twice;       /* or out of memory: not known to be unique */
};

static void names_init(struct name_set *ns, size_t n)
{
	size_t cap = 16;
	while (cap < n * 2)
		cap *= 2;
	ns->slot = calloc(cap, sizeof(*ns->slot));
	ns->cap = cap;
	ns->twice = !ns->slot;
}

static void names_add(struct name_set *ns, const char *name)
{
	if (ns->twice)
		return;
	uint32_t h = name_hash(name) | 1u; /* never 0 */
	size_t i = h & (ns->cap - 1);
	for (; ns->slot[i]; i = (i + 1) & (ns->cap - 1)) {
		if (ns->slot[i] == h) {
			ns->twice = 1;
			return;
		}
	}
	ns->slot[i] = h;
}

/* A private table holding cur (published, NULL: none) with the tools of
 * a listing at pos[0..npos) added (pos NULL: all of them), or NULL when
 * they change nothing (the usual case: every session lists the same
 * tools). stale: the listing replaces cur. *lost counts the tools that
 * did not fit; ns (NULL: not asked) takes the names read. */
static struct tool_table *listing_apply(const struct tool_table *cur, int stale,
                                        const json_t *tools, const size_t *pos, size_t npos,
                                        size_t *lost, struct name_set *ns)
{
	struct tool_table *t = NULL;
	if (stale && !(t = table_new())) {
		*lost += json_array_size(tools);
		return NULL;
	}
	size_t n = pos ? npos : json_array_size(tools);
	for (size_t k = 0; k < n; k++) {
		struct policy_hints h;
		const json_t *ann;
		const char *name = listed_tool(tools, pos ? pos[k] : k, &ann);
		if (!name)
			continue;
		if (ns)
			names_add(ns, name);
		const struct tool_table *look = t ? t : cur;
		const struct tool_entry *e = table_find(look, name);
		hints_of(e, ann, &h);
		/* The same hints from another value: the entry keeps the value
		 * it read them from (no copy of the table for that). */
		if (e && hints_equal(&e->hints, &h))
			continue;
		/* What table_put would refuse needs no copy. */
		if (strlen(name) > HOOK_POLICY_MAX_TOOL_NAME ||
		    (!e && look && look->n >= HOOK_POLICY_MAX_TOOLS)) {
			(*lost)++;
			continue;
		}
		if (!t && !(t = table_copy(cur))) {
			(*lost)++;
			continue;
		}
		if (table_put(t, name, &h, ann) < 0)
			(*lost)++;
	}
	return t;
}

/* The positions of tools that differ from the last listing remembered,
 * into pos, when only they need reading: the rest are the very values
 * read then, into the table still live, and every tool had a name of its
 * own (so no two positions decide one entry) and a place in the table.
 * A tool renamed at its position changes which names the listing holds:
 * read whole. Returns their count, or -1: read the whole listing. */
static long few_changed(const struct up_state *up, const struct tool_table *live,
                        const json_t *tools, size_t *pos)
{
	if (up->stale || !up->last_whole || !up->last || live != up->last_live)
		return -1;
	long k = jsame_few(up->last, tools, pos);
	for (long i = 0; i < k; i++) {
		const json_t *ann;
		const char *now = listed_tool(tools, pos[i], &ann);
		const char *was = json_string_value(JPARSE_MEMBER(jsame_at(up->last, pos[i]), "name"));
		if (!now || !was || strcmp(now, was) != 0)
			return -1;
	}
	return k;
}

/* What the next listing of up is compared with (few_changed). */
static void remember_last(struct up_state *up, const json_t *tools, const size_t *pos, long k,
                          const struct tool_table *live, int whole)
{
	if (!up->last && !(up->last = jsame_new()))
		return;
	if (jsame_keep(up->last, tools, pos, k) < 0)
		whole = 0;
	struct tool_table *l = (struct tool_table *)(uintptr_t)live; /* refs: under hp->lock */
	if (l)
		l->refs++;
	table_unref(up->last_live);
	up->last_live = l;
	up->last_whole = whole;
}

/* Remembers a listing of upstream i: a new view when it changes the
 * table. A listing that differs from the last one in a few tools is read
 * only there: reading a name and the annotations of each of 1,000 tools
 * (a cache miss each) was 12% of mcpwarden's CPU on a changing listing
 * (perf). Under hp->lock. */
static void remember(struct hook_policy *hp, size_t i, const json_t *tools)
{
	struct up_state *up = &hp->ups[i];
	const struct view *v = hp->view;
	const struct view_up *vu = i < v->nups ? &v->ups[i] : NULL;
	const struct tool_table *cur = vu ? vu->live : NULL;
	size_t lost = 0, pos[JSAME_FEW];
	long k = few_changed(up, cur, tools, pos);
	struct name_set ns = {0};
	struct tool_table *t;
	int whole = up->last_whole;
	if (k >= 0) {
		t = listing_apply(cur, 0, tools, pos, (size_t)k, &lost, NULL);
	} else {
		names_init(&ns, json_array_size(tools));
		t = listing_apply(cur, up->stale, tools, NULL, 0, &lost, &ns);
		whole = !ns.twice;
		free(ns.slot);
	}
	if (up->stale) {
		/* A new listing after list_changed: the set may have shrunk. */
		up->stale = 0;
		up->warned = 0;
	}
	const struct tool_table *left = cur;
	if (t) {
		struct view *nv = view_derive(hp, v);
		if (!nv) {
			lost += t->n;
			table_unref(t);
		} else {
			table_stamp(t, nv->g, nv->ups[i].base, 0, up->name);
			table_unref(nv->ups[i].live);
			nv->ups[i].live = t;
			left = t;
			view_publish(hp, nv);
		}
	}
	remember_last(up, tools, k >= 0 ? pos : NULL, k, left, whole && !lost);
	if (lost) {
		stat_add(&hp->stats.tools_over_cap, lost);
		if (!up->warned) {
			up->warned = 1;
			log_msg(LOG_WARN, "policy: upstream %s lists more than %d tools (or names over %d "
			        "bytes): %zu not remembered, calls to them count as unknown tools",
			        up->name, HOOK_POLICY_MAX_TOOLS, HOOK_POLICY_MAX_TOOL_NAME, lost);
		}
	}
}

/* Whether a listed tool is hidden is what its tools/call without
 * arguments would be decided: a listing of 1,000 tools ran policy_eval
 * 1,000 times, each a walk of the rules, when what a tool's name and hints
 * decide is kept in its table entry (as for its calls, judge()) or in the
 * reader's memo. remember() has just put this listing's hints in live,
 * so both agree with policy_eval on in. */
static void hide_decide(struct reader *r, struct pgen *g, const struct tool_entry *live,
                        const struct policy_input *in, struct policy_decision *d)
{
	struct policy_memo *memo;
	if (live && live->cands_gen == g->gen && hints_equal(&live->hints, in->hints))
		policy_cands_call(g->p, &live->cands, in, d);
	else if ((memo = reader_memo(r, g)))
		policy_memo_call(memo, in, d);
	else
		policy_eval(g->p, in, d);
}

/* The decisions of the tools hidden from one listing (kept_listing). */
struct hidden_list {
	struct policy_decision *d; /* owned */
	size_t n, cap;
	int lost;                  /* out of memory: not all of them are here */
};

static void hidden_add(struct hidden_list *hl, const struct policy_decision *d)
{
	if (hl->n == hl->cap) {
		size_t cap = hl->cap ? hl->cap * 2 : 8;
		struct policy_decision *nd = realloc(hl->d, cap * sizeof(*nd));
		if (!nd) {
			hl->lost = 1;
			return;
		}
		hl->d = nd;
		hl->cap = cap;
	}
	hl->d[hl->n++] = *d;
}

static int same_client(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Under hp->lock (or with no other thread left). */
static void hide_memo_clear(struct hide_memo *hm)
{
	jsame_free(hm->tools);
	free(hm->d);
	free(hm->client);
	table_unref(hm->base);
	*hm = (struct hide_memo){0};
}

/* The positions of tools whose decision hm does not hold, into pos (their
 * count), or -1: decide them all. */
static long hide_memo_diff(const struct hide_memo *hm, const struct pgen *g, const char *client,
                           const struct tool_table *base, const json_t *tools, size_t *pos)
{
	if (!hm->tools || hm->gen != g->gen || hm->base != base || !same_client(hm->client, client))
		return -1;
	return jsame_few(hm->tools, tools, pos);
}

/* hm keeps tools (the positions pos[0..k) changed; k < 0: all of them),
 * whose decisions are in hm->d, with what they were decided with. Out of
 * memory, hm holds nothing. */
static void hide_memo_keep(struct hide_memo *hm, const struct pgen *g, const char *client,
                           const struct tool_table *base, const json_t *tools,
                           const size_t *pos, long k)
{
	if (!hm->tools && !(hm->tools = jsame_new()))
		return;
	int same_key = hm->gen == g->gen && hm->base == base && same_client(hm->client, client);
	if (!same_key) {
		free(hm->client);
		hm->client = NULL;
		table_unref(hm->base);
		hm->base = NULL;
		hm->gen = 0;
		if (client && !(hm->client = strdup(client))) {
			jsame_clear(hm->tools);
			return;
		}
		struct tool_table *b = (struct tool_table *)(uintptr_t)base; /* refs: under hp->lock */
		if ((hm->base = b))
			b->refs++;
		hm->gen = g->gen;
	}
	if (jsame_keep(hm->tools, tools, pos, same_key ? k : -1) < 0)
		hm->gen = 0;
}

/* The decision for tools[i] (named name, annotations ann) when it is
 * listed: what its tools/call without arguments would be decided. */
static void hide_one(struct reader *r, struct pgen *g, const struct view_up *up,
                     const struct inspect_msg *m, const char *name, const json_t *ann,
                     struct policy_decision *d)
{
	const struct tool_entry *base = up ? table_find(up->base, name) : NULL;
	const struct tool_entry *live = up ? table_find(up->live, name) : NULL;
	struct policy_hints h;
	hints_of(live, ann, &h);
	struct policy_input in = {
		.method = "tools/call",
		.tool = name,
		.client = m->where->client_name,
		.upstream = m->where->upstream,
		.tool_known = 1,
		.hints = &h,
		.baseline = base ? &base->hints : NULL,
	};
	hide_decide(r, g, live, &in, d);
}

/* Decides every tool of a listing into hm->d: the tools that are the
 * values hm judged last keep their decision (a changing 1,000-tool
 * listing read each tool's name and annotations, a cache miss each: 8%
 * of mcpwarden's CPU, perf), the others are decided. Returns 0, or -1
 * (out of memory: nothing decided). Under hp->lock. */
static int hide_decide_all(struct hide_memo *hm, struct reader *r, struct pgen *g,
                           const struct view_up *up, const struct inspect_msg *m,
                           const json_t *tools)
{
	const char *client = g->client_keyed ? m->where->client_name : NULL;
	const struct tool_table *base = up ? up->base : NULL;
	size_t n = json_array_size(tools), pos[JSAME_FEW];
	long k = hide_memo_diff(hm, g, client, base, tools, pos);
	if (k < 0 && n > hm->cap) {
		struct policy_decision *nd = realloc(hm->d, n * sizeof(*nd));
		if (!nd) {
			hide_memo_clear(hm);
			return -1;
		}
		hm->d = nd;
		hm->cap = n;
	}
	for (size_t j = 0; j < (k < 0 ? n : (size_t)k); j++) {
		size_t i = k < 0 ? j : pos[j];
		const json_t *tool = json_array_get(tools, i);
		const char *name = json_string_value(JPARSE_MEMBER(tool, "name"));
		if (!name)
			hm->d[i] = (struct policy_decision){.action = POLICY_NONE};
		else
			hide_one(r, g, up, m, name, JPARSE_MEMBER(tool, "annotations"), &hm->d[i]);
	}
	hide_memo_keep(hm, g, client, base, tools, pos, k);
	return 0;
}

static void hide_tools(struct hook_policy *hp, struct reader *r, struct pgen *g,
                       const struct view_up *up, struct inspect_msg *m, json_t *tools,
                       struct hidden_list *hl, struct hide_memo *hm)
{
	size_t hidden = 0, would = 0;
	char names[256] = "";
	struct hide_memo scratch = {0};

	if (!hm || hide_decide_all(hm, r, g, up, m, tools) < 0) {
		hm = &scratch; /* nothing kept */
		if (hide_decide_all(hm, r, g, up, m, tools) < 0) {
			hl->lost = 1;
			return;
		}
	}
	/* From the end: a removal leaves the positions before it in place. */
	for (size_t i = json_array_size(tools); i-- > 0;) {
		const struct policy_decision *d = &hm->d[i];
		if (d->action == POLICY_HIDE) {
			policy_count(g->p, d, 1);
			json_array_remove(tools, i);
			hidden_add(hl, d);
			hidden++;
		} else if (d->dry_run_would == POLICY_HIDE) {
			policy_count(g->p, d, 1);
			if (would++ < 8) {
				const char *name = json_string_value(
				    JPARSE_MEMBER(json_array_get(tools, i), "name"));
				char t[64];
				size_t n = strlen(names);
				snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "",
				         printable(t, sizeof(t), name));
			}
		}
	}
	hide_memo_clear(&scratch);
	if (hidden) {
		stat_add(&hp->stats.tools_hidden, hidden);
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
 * under. An exchange takes its reference with its first client message
 * (on the pgen of r's view, which the view keeps alive); server messages
 * on exchanges without one (standalone GET streams, which may live for
 * hours) follow reloads. */
static struct pgen *policy_for(struct hook_policy *hp, struct reader *r, struct inspect_msg *m)
{
	struct pgen *g = m->where->hook_data[hp->slot];
	if (g)
		return g;
	g = r->view->g;
	if (g && m->dir == INSPECT_FROM_CLIENT) {
		__atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
		m->where->hook_data[hp->slot] = g;
	}
	return g;
}

/* tools_events.page: the tracker (proxy/hooks/tools.h) took in a page of
 * the upstream's, before any hook changed it. */
static void tracker_page(void *arg, const char *upstream, const json_t *tools)
{
	struct hook_policy *hp = arg;
	pthread_mutex_lock(&hp->lock);
	long i = up_get(hp, upstream);
	if (i >= 0)
		remember(hp, (size_t)i, tools);
	pthread_mutex_unlock(&hp->lock);
}

/* tools_events.list_changed: the next listing replaces the tools kept. */
static void tracker_list_changed(void *arg, const char *upstream)
{
	struct hook_policy *hp = arg;
	pthread_mutex_lock(&hp->lock);
	long i = up_get(hp, upstream);
	if (i >= 0)
		hp->ups[i].stale = 1;
	pthread_mutex_unlock(&hp->lock);
}

static const struct tools_events tracker_events = {tracker_page, tracker_list_changed};

/* ---- kept listings (issue 20) ------------------------------------------------------ */

static void kept_free(struct kept_listing *k)
{
	if (!k)
		return;
	table_unref(k->base);
	free(k->client);
	rcbytes_unref(k->sent);
	free(k->hidden);
	free(k);
}

/* The upstream's index, or -1 (not created: a reader's question). */
static long up_find(const struct hook_policy *hp, const char *name)
{
	for (size_t i = 0; name && i < hp->nups; i++)
		if (strcmp(hp->ups[i].name, name) == 0)
			return (long)i;
	return -1;
}

/* The baseline table listings of upstream i are judged with now. */
static const struct tool_table *current_base(const struct hook_policy *hp, long i)
{
	return i >= 0 && (size_t)i < hp->view->nups ? hp->view->ups[i].base : NULL;
}

/* The listing kept for the bytes the tracker names `listing`, judged by g
 * for this client with today's baseline, or NULL. Under hp->lock. */
static struct kept_listing *kept_find(const struct hook_policy *hp, const struct pgen *g,
                                      const struct inspect_where *w, uint64_t listing)
{
	long i = up_find(hp, w->upstream);
	if (i < 0 || !listing)
		return NULL;
	const char *client = g->client_keyed ? w->client_name : NULL;
	for (size_t s = 0; s < KEPT_LISTINGS; s++) {
		struct kept_listing *k = hp->ups[i].kept[s];
		if (k && k->gen == g->gen && same_client(k->client, client) &&
		    k->base == current_base(hp, i) && k->listing == listing)
			return k;
	}
	return NULL;
}

/* Keeps what judging m's listing (its result as received: the bytes the
 * tracker names `listing`) hid, in the slot of the same client, else the
 * oldest. m is the listing as this hook left it. Under hp->lock; out of
 * memory, nothing is kept. */
static void kept_put(struct hook_policy *hp, long i, const struct pgen *g,
                     const struct inspect_msg *m, uint64_t listing, struct hidden_list *hl)
{
	const char *client = g->client_keyed ? m->where->client_name : NULL;
	struct up_state *up = &hp->ups[i];
	size_t slot = up->kept_next % KEPT_LISTINGS;
	for (size_t s = 0; s < KEPT_LISTINGS; s++)
		if (up->kept[s] && same_client(up->kept[s]->client, client))
			slot = s;
	if (slot == up->kept_next % KEPT_LISTINGS)
		up->kept_next++;
	kept_free(up->kept[slot]);
	up->kept[slot] = NULL;
	struct kept_listing *k = calloc(1, sizeof(*k));
	if (!k || hl->lost || (client && !(k->client = strdup(client)))) {
		kept_free(k);
		return;
	}
	k->listing = listing;
	k->gen = g->gen;
	struct tool_table *base = (struct tool_table *)(uintptr_t)current_base(hp, i);
	if ((k->base = base))
		base->refs++;
	if (hl->n) {
		/* What the transport will send: the result as hiding left it,
		 * spelt as its re-serialisation of the whole reply spells it. */
		char *text = json_dumps(json_object_get(m->msg, "result"),
		                        JSON_COMPACT | JSON_PRESERVE_ORDER);
		k->sent = text ? rcbytes_new(text, strlen(text)) : NULL;
		free(text);
		if (!k->sent) {
			kept_free(k);
			return;
		}
	}
	k->hidden = hl->d;
	k->nhidden = hl->n;
	hl->d = NULL;
	up->kept[slot] = k;
}

/* A tools/list result, as the hooks before this one left it (its page was
 * remembered by tracker_page already). Under hp->lock. */
static enum inspect_verdict on_listing(struct hook_policy *hp, struct reader *r,
                                       struct inspect_msg *m, json_t *tools)
{
	stat_add(&hp->stats.listings, 1);
	long i = up_get(hp, m->where->upstream);
	reader_refresh_locked(hp, r);  /* hide with what was remembered */
	struct pgen *g = policy_for(hp, r, m);
	if (!g || !policy_may_hide(g->p))
		return INSPECT_FORWARD;
	/* The tracker's number for the bytes as received, read while no hook
	 * changed them (inspect.h). */
	uint64_t serial = m->result_serial;
	struct hidden_list hl = {0};
	hide_tools(hp, r, g, i >= 0 && (size_t)i < r->view->nups ? &r->view->ups[i] : NULL, m,
	           tools, &hl, i >= 0 ? &hp->ups[i].hide : NULL);
	/* A dry run's listing is parsed every time (its log line says what
	 * it would hide): nothing to keep. */
	uint64_t listing = i >= 0 && !policy_dry_run(g->p) ? serial : 0;
	if (listing)
		kept_put(hp, i, g, m, listing, &hl);
	free(hl.d);
	return INSPECT_FORWARD;
}

/* A request or notification, judged with r's view. (A list_changed was
 * heard from the tracker already: tracker_list_changed.) */
static enum inspect_verdict on_request(struct hook_policy *hp, struct reader *r,
                                       struct inspect_msg *m)
{
	struct pgen *g = policy_for(hp, r, m);
	if (!g)
		return INSPECT_FORWARD;  /* no policy: nothing to judge */
	const char *method = m->method; /* read once for every hook */
	if (!method)
		return INSPECT_FORWARD;
	return judge(hp, r, g, m, method);
}

static enum inspect_verdict on_message(void *arg, struct inspect_msg *m)
{
	struct hook_policy *hp = arg;
	json_t *tools = NULL;

	/* What needs no shared state is sorted out first: a result is ours
	 * only when it lists tools (tools_page_of reads the message alone), an
	 * error never. */
	if (m->dir == INSPECT_FROM_SERVER && m->kind == JRPC_RESULT) {
		if (!(tools = tools_page_of(m)))
			return INSPECT_FORWARD;
	} else if (m->kind != JRPC_REQUEST && m->kind != JRPC_NOTIFICATION) {
		return INSPECT_FORWARD;
	}
	struct reader *r = reader_of(hp);
	if (r && !tools) {
		reader_sync(hp, r);
		return on_request(hp, r, m);
	}
	/* A listing, or no reader (out of memory): under the lock. */
	struct reader stand_in = {.fallback = 1};
	enum inspect_verdict v;
	pthread_mutex_lock(&hp->lock);
	if (!r)
		r = &stand_in;
	reader_refresh_locked(hp, r);
	v = tools ? on_listing(hp, r, m, tools) : on_request(hp, r, m);
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
	struct tool_table **base;  /* owned array: one per cfg->ups[i], NULL: none */
	size_t nbase;
};

static void staged_fini(struct staged *s)
{
	pgen_unref(s->g);
	for (size_t i = 0; i < s->nbase; i++)
		table_unref(s->base[i]);
	free(s->base);
	*s = (struct staged){0};
}

static int load_baseline(const struct px_upstream_conf *u, struct tool_table **out, char *err,
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
	struct tool_table *t = table_new();
	if (!t) {
		snprintf(err, errlen, "policy: out of memory");
		json_decref(doc);
		return -1;
	}
	size_t lost = table_add_tools(t, tools);
	json_decref(doc);
	if (lost)
		log_msg(LOG_WARN, "policy: upstream %s: baseline %s: %zu tools over the cap of %d, "
		        "not used", u->name, file, lost, HOOK_POLICY_MAX_TOOLS);
	*out = t;
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
	if (!s->g || !s->base) {
		policy_free(p);
		free(s->g);
		s->g = NULL;
		staged_fini(s);
		snprintf(err, errlen, "policy: out of memory");
		return -1;
	}
	s->g->p = p;
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

/* The view of a staged configuration: its pgen and baselines, and a copy
 * of every live table, all stamped for the new pgen. Under hp->lock.
 * Returns NULL when out of memory (s is then left for staged_fini). */
static struct view *view_of_staged(struct hook_policy *hp, const struct px_config *cfg,
                                   struct staged *s)
{
	for (size_t i = 0; i < s->nbase; i++)
		if (up_get(hp, cfg->ups[i].name) < 0)
			log_msg(LOG_WARN, "policy: upstream %s: baseline not used (out of memory)",
			        cfg->ups[i].name);
	struct view *v = view_derive(hp, NULL);
	if (!v)
		return NULL;
	if (s->g)
		s->g->gen = ++hp->last_gen;
	v->g = s->g;
	s->g = NULL;
	for (size_t i = 0; i < s->nbase; i++) {
		long j = up_get(hp, cfg->ups[i].name);  /* found: made above */
		if (j >= 0 && (size_t)j < v->nups && !v->ups[j].base) {
			v->ups[j].base = s->base[i];
			s->base[i] = NULL;
			table_stamp(v->ups[j].base, v->g, NULL, 1, v->ups[j].name);
		}
	}
	/* The tool lists survive reloads; what their entries decide is the
	 * new policy's, with the new baselines. */
	const struct view *old = hp->view;
	for (size_t i = 0; old && i < old->nups && i < v->nups; i++) {
		if (!old->ups[i].live)
			continue;
		if (!(v->ups[i].live = table_copy(old->ups[i].live))) {
			view_unref(v);
			return NULL;
		}
		table_stamp(v->ups[i].live, v->g, v->ups[i].base, 0, v->ups[i].name);
	}
	return v;
}

/* Swaps a staged configuration in. Under hp->lock. Returns 0, or -1 when
 * out of memory (the running configuration stays). */
static int commit(struct hook_policy *hp, const struct px_config *cfg, struct staged *s,
                  int reload)
{
	struct view *v = view_of_staged(hp, cfg, s);
	staged_fini(s);
	if (!v)
		return -1;
	view_publish(hp, v);
	if (!hp->cur) {
		/* Only news when a reload took the policy away. */
		log_msg(reload ? LOG_INFO : LOG_DEBUG, "policy: none configured");
		return 0;
	}
	const struct policy *p = hp->cur->p;
	log_msg(LOG_INFO, "policy: %zu rules, default %s, unknown tools %s%s", policy_nrules(p),
	        policy_action_str(policy_default(p)),
	        policy_unknown_tools(p) == POLICY_UNKNOWN_DENY ? "denied" : "judged by the rules",
	        policy_dry_run(p) ? ", DRY RUN (deny and hide only logged)" : "");
	return 0;
}

static int policy_uninspected_ok(void *arg, const struct inspect_where *where);
static int policy_needs_tree(void *arg, const struct inspect_msg *m);
static int policy_listing_may(void *arg, const struct inspect_listing *l);
static void policy_listing_passed(void *arg, const struct inspect_listing *l);

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
	hp->id = __atomic_add_fetch(&hp_ids, 1, __ATOMIC_RELAXED);
	if (pthread_mutex_init(&hp->lock, NULL) != 0) {
		staged_fini(&s);
		free(hp);
		snprintf(err, errlen, "policy: out of memory");
		return -1;
	}
	for (size_t i = 0; i < ctx->cfg->nups; i++)
		up_get(hp, ctx->cfg->ups[i].name);
	if (commit(hp, ctx->cfg, &s, 0) < 0) {
		hook_policy_free(hp);
		snprintf(err, errlen, "policy: out of memory");
		return -1;
	}
	/* No inspect_set_lock: on_message locks for what needs it. */
	hp->slot = inspect_add(ctx->insp, "policy", on_message, on_exchange, hp);
	if (hp->slot < 0) {
		hook_policy_free(hp);
		snprintf(err, errlen, "policy: no free slot in the message hook");
		return -1;
	}
	inspect_set_uninspected(ctx->insp, hp->slot, policy_uninspected_ok);
	inspect_set_listing_fast(ctx->insp, hp->slot, policy_listing_may, policy_listing_passed);
	inspect_set_needs_tree(ctx->insp, hp->slot, policy_needs_tree);
	/* The tools it judges by come from the tracker, which main sets up
	 * first. */
	if (tools_subscribe(ctx->proc->tools, &tracker_events, hp) < 0) {
		hook_policy_free(hp);
		snprintf(err, errlen, "policy: no tools/list tracker to learn the tools from");
		return -1;
	}
	ctx->proc->policy = hp;
	return 0;
}

int hook_policy_reload(struct px_ctx *ctx, const struct px_config *newcfg, char *err,
                       size_t errlen)
{
	struct hook_policy *hp = ctx->proc->policy;
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
	if (rc == 0 && commit(hp, newcfg, &s, 1) < 0) {
		snprintf(err, errlen, "policy: out of memory");
		rc = -1;
	}
	stat_add(rc < 0 ? &hp->stats.reload_failures : &hp->stats.reloads, 1);
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
	/* Before the tracker (ctx teardown frees it after this). */
	if (hp->ctx)
		tools_unsubscribe(hp->ctx->proc->tools, hp);
	/* No worker runs any more: the readers' views go with them. */
	while (hp->readers) {
		struct reader *r = hp->readers;
		hp->readers = r->next;
		reader_free(r);
	}
	view_unref(hp->view);
	for (size_t i = 0; i < hp->nups; i++) {
		free(hp->ups[i].name);
		for (size_t s = 0; s < KEPT_LISTINGS; s++)
			kept_free(hp->ups[i].kept[s]);
		jsame_free(hp->ups[i].last);
		table_unref(hp->ups[i].last_live);
		hide_memo_clear(&hp->ups[i].hide);
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
	const struct hook_policy_stats *s = &hp->stats;
#define LOAD(f) .f = __atomic_load_n(&s->f, __ATOMIC_RELAXED)
	*out = (struct hook_policy_stats){
		LOAD(allowed), LOAD(denied), LOAD(logged), LOAD(dry_run), LOAD(unknown_tool),
		LOAD(tools_hidden), LOAD(listings), LOAD(tools_over_cap), LOAD(reloads),
		LOAD(reload_failures),
	};
#undef LOAD
}

int hook_policy_active(const struct hook_policy *hp)
{
	return hp && hp->cur;
}

const struct policy *hook_policy_current(const struct hook_policy *hp)
{
	return hp && hp->cur ? hp->cur->p : NULL;
}

struct policy_rule_stats *hook_policy_rule_stats(const struct hook_policy *hp, size_t *n)
{
	*n = 0;
	if (!hp)
		return NULL;
	struct hook_policy *w = (struct hook_policy *)(uintptr_t)hp;
	struct policy_rule_stats *out = NULL;
	pthread_mutex_lock(&w->lock);
	const struct policy *p = hook_policy_current(hp);
	size_t k = p ? policy_nstats(p) : 0;
	if (k && (out = calloc(k, sizeof(*out)))) {
		for (size_t i = 0; i < k; i++)
			policy_stats(p, i, &out[i]);
		*n = k;
	}
	pthread_mutex_unlock(&w->lock);
	return out;
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

/* inspect_uninspected_fn (issue 17): a tools/list reply too big to inspect
 * may not pass unread while the policy in force can hide tools: the hidden
 * ones would be listed. A dry run hides nothing (it only logs what it
 * would), so it changes no traffic here either. The policy in force is
 * read under hp->lock (a reload swaps it). */
/* Its tree: a client's request is judged on its arguments (a rule's args
 * matchers read them by pointer) and may be answered; of the server's
 * messages only tool listings are read (hidden tools). */
static int policy_needs_tree(void *arg, const struct inspect_msg *m)
{
	return m->dir == INSPECT_FROM_CLIENT || inspect_tree_for_listings(arg, m);
}

static int policy_uninspected_ok(void *arg, const struct inspect_where *where)
{
	struct hook_policy *hp = arg;
	(void)where; /* any hide rule counts, whichever upstream it names */
	pthread_mutex_lock(&hp->lock);
	const struct policy *p = hp->cur ? hp->cur->p : NULL;
	int ok = !p || !policy_may_hide(p) || policy_dry_run(p);
	pthread_mutex_unlock(&hp->lock);
	return ok;
}

/* The policy l's exchange is judged by (policy_for: the one it started
 * under, else the one in force). Under hp->lock. */
static const struct pgen *listing_policy(const struct hook_policy *hp,
                                         const struct inspect_listing *l)
{
	const struct pgen *g = l->where ? l->where->hook_data[hp->slot] : NULL;
	return g ? g : hp->cur;
}

/* inspect_listing_may_fn (issue 20): an unchanged listing may pass
 * unparsed when the policy it is judged by can hide no tool, or when the
 * same bytes were judged by that policy, with today's baseline and (for a
 * client-keyed policy) for the same client: then what it hid is what it
 * hides (*l->sent: the result sent then). A dry run logs what it would
 * hide, so its listings are parsed. */
static int policy_listing_may(void *arg, const struct inspect_listing *l)
{
	struct hook_policy *hp = arg;
	pthread_mutex_lock(&hp->lock);
	const struct pgen *g = listing_policy(hp, l);
	int ok = !g || !g->p || !policy_may_hide(g->p);
	if (!ok && !policy_dry_run(g->p) && l->where) {
		/* The tracker's may compared these bytes in this call already. */
		uint64_t listing = tools_listing_serial(hp->ctx->proc->tools, l->where->upstream,
		                                        l->raw, l->len, l->call);
		const struct kept_listing *k = kept_find(hp, g, l->where, listing);
		ok = k && (!k->sent || l->sent);
		if (ok && k->sent)
			*l->sent = rcbytes_ref(k->sent);
	}
	pthread_mutex_unlock(&hp->lock);
	return ok;
}

/* The kept listing whose result is sent (held by the caller, so never a
 * freed one's address), or NULL. Under hp->lock. */
static const struct kept_listing *kept_of_sent(const struct hook_policy *hp,
                                               const struct rcbytes *sent)
{
	for (size_t i = 0; sent && i < hp->nups; i++)
		for (size_t s = 0; s < KEPT_LISTINGS; s++)
			if (hp->ups[i].kept[s] && hp->ups[i].kept[s]->sent == sent)
				return hp->ups[i].kept[s];
	return NULL;
}

/* inspect_listing_passed_fn: the listing is counted as on_listing does,
 * with what it hid: the kept listing is the one whose result
 * policy_listing_may handed over (found by address, not by comparing the
 * bytes again). Another worker may have replaced it since: then only the
 * listing is counted (the reply sent is the one may took). */
static void policy_listing_passed(void *arg, const struct inspect_listing *l)
{
	struct hook_policy *hp = arg;
	stat_add(&hp->stats.listings, 1);
	if (!l->sent || !*l->sent)
		return; /* nothing hidden */
	pthread_mutex_lock(&hp->lock);
	const struct pgen *g = listing_policy(hp, l);
	const struct kept_listing *k = kept_of_sent(hp, *l->sent);
	if (k && g && k->gen == g->gen && k->nhidden) {
		for (size_t j = 0; j < k->nhidden; j++)
			policy_count(g->p, &k->hidden[j], 1);
		stat_add(&hp->stats.tools_hidden, k->nhidden);
		log_msg(LOG_DEBUG, "#%llu policy: %zu tools hidden from tools/list (upstream %s), "
		        "as from the same listing before", l->where->conn_id, k->nhidden,
		        l->where->upstream ? l->where->upstream : "-");
	}
	pthread_mutex_unlock(&hp->lock);
}

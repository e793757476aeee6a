/* tools: see tools.h.
 *
 * Why this file is long (over 800 lines): the entries, the raw pages of
 * listings in progress (tools_raw) and the fast-listing replay all read
 * the same entry under the same lock; each is a short function, and the
 * lock's reach is clearest in one file.
 *
 * One entry per upstream name, in a small array searched linearly (there
 * are as many entries as configured upstreams):
 *
 *   entry ─┬─ tools    {name: tool, …}  last complete listing (owned;
 *          │                            never changed once installed)
 *          ├─ pending  {name: tool, …}  listing being paged in, or NULL
 *          └─ cursors  {cursor: next}   the pending listing's cursor
 *                                       chain ("" for its first page)
 *
 * Lookups try pending, then tools. A listing's last page swaps pending
 * into tools (install()).
 */
#include "proxy/hooks/tools.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/ctx.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/jparse.h"
#include "proxy/base/jsame.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "proxy/base/rcbytes.h"

struct tools_entry {
	char *upstream;          /* owned copy of the name */
	json_t *tools;           /* owned: name -> tool (references) */
	json_t *pending;         /* owned, or NULL */
	json_t *cursors;         /* owned while pending pages in from its start, or NULL */
	int stale;
	int looping;             /* cursors lead in a circle */
	int warned;              /* the cap was logged for this listing */
	uint64_t listings, changes, pages, dropped, loops;
	/* The bytes of the last one-page listing's result, as the upstream
	 * sent them: the same bytes again change nothing (one reference, or
	 * NULL; shared with the upstream's kept listing when it has them). */
	struct rcbytes *raw;
	uint64_t raw_serial;     /* names raw (tools_listing_serial), 0 with none */
	/* The last one-page listing's tools, position by position (owned),
	 * and how many of them had a name: when tools holds that many (no
	 * two names alike, none over the cap), a listing that changes a few
	 * tools and no name is put in place in tools (few_changed). */
	struct jsame *last;
	size_t named;
};

/* Shared by every worker: the hook and each entry point take the lock. */
struct tools {
	pthread_mutex_t lock;
	size_t max_tools;
	struct tools_entry entries[TOOLS_MAX_UPSTREAMS];
	size_t n;
	struct {
		const struct tools_events *ev;
		void *arg;
	} subs[TOOLS_MAX_SUBSCRIBERS];
	size_t nsubs;
};

struct tools *tools_new(size_t max_tools)
{
	struct tools *tr = calloc(1, sizeof(*tr));
	if (!tr)
		return NULL;
	if (pthread_mutex_init(&tr->lock, NULL) != 0) {
		free(tr);
		return NULL;
	}
	tr->max_tools = max_tools ? max_tools : TOOLS_MAX_TOOLS;
	return tr;
}

void tools_free(struct tools *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->n; i++) {
		free(tr->entries[i].upstream);
		json_decref(tr->entries[i].tools);
		json_decref(tr->entries[i].pending);
		json_decref(tr->entries[i].cursors);
		rcbytes_unref(tr->entries[i].raw);
		jsame_free(tr->entries[i].last);
	}
	pthread_mutex_destroy(&tr->lock);
	free(tr);
}

static struct tools_entry *entry_find(const struct tools *tr, const char *upstream)
{
	for (size_t i = 0; i < tr->n; i++)
		if (strcmp(tr->entries[i].upstream, upstream) == 0)
			return (struct tools_entry *)(uintptr_t)&tr->entries[i];
	return NULL;
}

static struct tools_entry *entry_get(struct tools *tr, const char *upstream)
{
	struct tools_entry *e = entry_find(tr, upstream);
	if (e || tr->n >= TOOLS_MAX_UPSTREAMS)
		return e;
	e = &tr->entries[tr->n];
	memset(e, 0, sizeof(*e));
	e->upstream = strdup(upstream);
	e->tools = json_object();
	e->last = jsame_new();
	if (!e->upstream || !e->tools || !e->last) {
		free(e->upstream);
		json_decref(e->tools);
		jsame_free(e->last);
		return NULL;
	}
	tr->n++;
	return e;
}

static const char *str_member(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* The name a listed tool is kept under, or NULL: none (not taken in). */
static const char *tool_name(const json_t *tool)
{
	/* A walk of a tool's few members costs less than hashing the key. */
	const char *name = json_string_value(JPARSE_MEMBER(tool, "name"));
	return json_is_object(tool) && name && *name ? name : NULL;
}

/* Adds one page's tools into `into`, within the cap; returns how many
 * were dropped over it, and *named how many have a name (NULL: not
 * asked). Touches nothing shared. */
static uint64_t fill(size_t max_tools, json_t *into, const json_t *tools, size_t *named)
{
	size_t i, n = 0;
	json_t *tool;
	uint64_t dropped = 0;

	json_array_foreach((json_t *)(uintptr_t)tools, i, tool) {
		const char *name = tool_name(tool);
		if (!name)
			continue;
		n++;
		if (json_object_size(into) >= max_tools && !json_object_get(into, name)) {
			dropped++;
			continue;
		}
		json_object_set(into, name, tool); /* takes a reference */
	}
	if (named)
		*named = n;
	return dropped;
}

static void note_dropped(struct tools_entry *e, uint64_t dropped, size_t max_tools)
{
	e->dropped += dropped;
	if (dropped && !e->warned) {
		e->warned = 1;
		log_msg(LOG_WARN, "upstream %s lists more than %zu tools: the rest are not known to "
		        "the Mcp-Param-* checks", e->upstream, max_tools);
	}
}

/* Puts table (owned) in place of e->tools. changed: table holds other
 * tools than the listing it replaces. */
static void install(struct tools_entry *e, json_t *table, int changed)
{
	json_decref(e->tools);
	e->tools = table;
	e->stale = 0;
	e->listings++;
	if (changed)
		e->changes++;
}

/* Follows the pending listing's cursors from its first page with the edge
 * cursor -> next just seen; a chain longer than its edges comes back to
 * a cursor it followed: a loop. */
static void follow_cursor(struct tools_entry *e, const char *cursor, const char *next)
{
	if (!e->cursors || !next || !*next || e->looping)
		return;
	if (json_object_size(e->cursors) >= TOOLS_MAX_CURSORS && !json_object_get(e->cursors, cursor))
		return;
	if (json_object_set_new(e->cursors, cursor, json_string(next)) < 0)
		return;
	size_t edges = json_object_size(e->cursors), steps = 0;
	const char *c = "";
	while (steps <= edges && (c = str_member(e->cursors, c)) != NULL)
		steps++;
	if (steps <= edges)
		return;
	e->looping = 1;
	e->loops++;
	/* Not the cursor itself: an opaque token of the upstream's. */
	log_msg(LOG_WARN, "upstream %s: tools/list pages in a circle (a nextCursor leads back to "
	        "a page of the same listing): the listing cannot end", e->upstream);
}

static void take_page(struct tools *tr, const char *upstream, const json_t *request,
                      const json_t *result)
{
	const json_t *tools = json_object_get(result, "tools");
	const char *rt = str_member(result, "resultType");
	if (!json_is_array(tools) || (rt && strcmp(rt, "complete") != 0))
		return;
	struct tools_entry *e = entry_get(tr, upstream);
	if (!e)
		return;
	const json_t *params = json_object_get(request, "params");
	const json_t *cursor = json_object_get(params, "cursor");
	const char *next = str_member(result, "nextCursor");

	if (!cursor || json_is_null(cursor)) {
		/* A first page: a new listing (a listing in progress by another
		 * client is superseded; its later pages join this one). */
		json_decref(e->pending);
		json_decref(e->cursors);
		e->pending = json_object();
		e->cursors = json_object();
		e->warned = 0;
		e->looping = 0;
		if (!e->pending)
			return;
	}
	e->pages++;
	jsame_clear(e->last); /* a paged listing: no tools to compare with */
	rcbytes_unref(e->raw); /* nor bytes */
	e->raw = NULL;
	e->raw_serial = 0;
	if (e->pending) {
		note_dropped(e, fill(tr->max_tools, e->pending, tools, NULL), tr->max_tools);
		follow_cursor(e, json_is_string(cursor) ? json_string_value(cursor) : "", next);
		if (next && *next)
			return;
		int changed = e->listings == 0 || !json_equal(e->tools, e->pending);
		install(e, e->pending, changed);
		e->pending = NULL;
		e->looping = 0;
		json_decref(e->cursors);
		e->cursors = NULL;
		return;
	}
	/* A page of a listing not seen from its start: merged into a copy, as
	 * the listing in place may be in a reader's hands. */
	json_t *table = json_copy(e->tools);
	if (!table)
		return;
	note_dropped(e, fill(tr->max_tools, table, tools, NULL), tr->max_tools);
	if (json_equal(table, e->tools)) {
		json_decref(table);
		return;
	}
	json_decref(e->tools);
	e->tools = table;
	e->changes++;
}

static void observe(struct tools *tr, const char *upstream, struct inspect_msg *m)
{
	if (m->kind == JRPC_NOTIFICATION) {
		const char *method = m->method;
		if (method && strcmp(method, "notifications/tools/list_changed") == 0) {
			struct tools_entry *e = entry_find(tr, upstream);
			if (e)
				e->stale = 1;
		}
		return;
	}
	const json_t *result = json_object_get(m->msg, "result");
	if (json_is_object(result))
		take_page(tr, upstream, m->request, result);
}

/* Every listing's bytes kept, in any tracker, get their own serial. */
static uint64_t raw_serials;

/* What this thread's last listing_may found equal (tools_listing_serial). */
static _Thread_local struct {
	uint64_t call, serial;
} may_seen;

/* Same bytes as the listing held: nothing changes but the counters. */
static int unchanged(struct tools *tr, const char *upstream, struct inspect_msg *m)
{
	struct tools_entry *e = entry_find(tr, upstream);
	if (!e || !m->result_raw || !e->raw || e->raw->len != m->result_raw_len ||
	    memcmp(e->raw->text, m->result_raw, e->raw->len) != 0)
		return 0;
	e->pages++;
	e->listings++;
	e->stale = 0;
	m->result_serial = e->raw_serial;
	return 1;
}

/* When a one-page listing differs from e's last one in a few tools
 * (jsame_few) and no
 * name, in a table nobody else holds (a reader of tools_listing reads it
 * outside the lock) with no two tools of one name: those tools are put in
 * place in e->tools, under tr->lock. Building the table again cost a hash
 * insert per tool, and reading each tool's name a cache miss per tool
 * (12% of mcpwarden's CPU on a changing 1,000-tool listing, perf).
 * Returns 1 when done (*changed: a tool is not equal to the one it
 * replaced), 0 when the table must be built; nothing changed then. */
static int few_changed(struct tools_entry *e, const json_t *tools, int *changed)
{
	size_t pos[JSAME_FEW];
	if (e->pending || !e->listings || json_object_size(e->tools) != e->named ||
	    __atomic_load_n(&e->tools->refcount, __ATOMIC_ACQUIRE) != 1)
		return 0;
	long k = jsame_few(e->last, tools, pos);
	if (k < 0)
		return 0;
	for (long i = 0; i < k; i++) {
		const json_t *now = json_array_get(tools, pos[i]), *was = jsame_at(e->last, pos[i]);
		const char *name = tool_name(now), *old = tool_name(was);
		if (!name || !old || strcmp(name, old) != 0 || json_object_get(e->tools, name) != was)
			return 0;
	}
	*changed = 0;
	for (long i = 0; i < k; i++) {
		json_t *now = json_array_get(tools, pos[i]);
		const json_t *was = jsame_at(e->last, pos[i]);
		*changed |= !json_equal(was, now);
		/* Replaces the value of a member that exists: no allocation. */
		json_object_set(e->tools, tool_name(now), now);
	}
	if (jsame_keep(e->last, tools, pos, k) < 0)
		e->named = (size_t)-1; /* nothing to compare with: built next time */
	return 1;
}

/* m's result bytes to keep: the upstream's kept listing's (a reference),
 * else a copy, NULL when m has none (or memory ran out). */
static struct rcbytes *bytes_of(const struct inspect_msg *m)
{
	if (m->result_bytes)
		return rcbytes_ref(m->result_bytes);
	return m->result_raw ? rcbytes_new(m->result_raw, m->result_raw_len) : NULL;
}

/* e holds bytes now (owned; NULL: none), under a new serial, which m gets;
 * returns the bytes e held (the caller's). Under tr->lock. */
static struct rcbytes *bytes_swap(struct tools_entry *e, struct rcbytes *bytes,
                                  struct inspect_msg *m)
{
	struct rcbytes *old = e->raw;
	e->raw = bytes;
	e->raw_serial = bytes ? __atomic_add_fetch(&raw_serials, 1, __ATOMIC_RELAXED) : 0;
	m->result_serial = e->raw_serial;
	return old;
}

/* A whole listing in one page (no cursor, no nextCursor: the common
 * case, lists of a thousand tools included) is read outside the lock: the
 * new table is built (and compared with the one in place) first, swapped
 * in under the lock, and the old one released after it, so that other
 * workers wait for a pointer swap, not for a thousand tools; a listing
 * that changed a few tools has them put in place instead (few_changed).
 * Returns 0 when done, -1 for the general path (pages, errors, other
 * results). */
static int one_page(struct tools *tr, const char *upstream, struct inspect_msg *m)
{
	const json_t *result = json_object_get(m->msg, "result");
	const json_t *tools = json_object_get(result, "tools");
	const json_t *params = json_object_get(m->request, "params");
	const json_t *cursor = json_object_get(params, "cursor");
	const char *rt = str_member(result, "resultType");
	const char *next = str_member(result, "nextCursor");
	if (!json_is_array(tools) || (rt && strcmp(rt, "complete") != 0) ||
	    (cursor && !json_is_null(cursor)) || (next && *next))
		return -1;
	pthread_mutex_lock(&tr->lock);
	int same = unchanged(tr, upstream, m);
	pthread_mutex_unlock(&tr->lock);
	if (same)
		return 0;
	struct rcbytes *bytes = bytes_of(m), *old_raw = NULL;
	json_t *before = NULL;
	int changed = 0;
	pthread_mutex_lock(&tr->lock);
	struct tools_entry *e = entry_find(tr, upstream);
	if (e && few_changed(e, tools, &changed)) {
		e->warned = 0;
		e->stale = 0;
		e->listings++;
		e->pages++;
		e->changes += changed != 0;
		old_raw = bytes_swap(e, bytes, m);
		pthread_mutex_unlock(&tr->lock);
		rcbytes_unref(old_raw);
		return 0;
	}
	/* To compare the new table with, outside the lock. */
	before = e ? json_incref(e->tools) : NULL;
	pthread_mutex_unlock(&tr->lock);

	json_t *table = json_object();
	if (!table) {
		json_decref(before);
		rcbytes_unref(bytes);
		return -1;
	}
	size_t named = 0;
	uint64_t dropped = fill(tr->max_tools, table, tools, &named);
	int equal = before && json_equal(before, table);

	pthread_mutex_lock(&tr->lock);
	e = entry_get(tr, upstream);
	json_t *old = NULL, *old_pending = NULL, *old_cursors = NULL;
	old_raw = bytes;
	if (e) {
		e->warned = 0;
		note_dropped(e, dropped, tr->max_tools);
		old = json_incref(e->tools); /* install() lets go of its own reference */
		old_pending = e->pending; /* a paged listing this one supersedes */
		old_cursors = e->cursors;
		/* Another worker may have installed a listing since `before`. */
		install(e, table, e->listings == 0 || !(equal && old == before));
		e->pending = NULL;
		e->cursors = NULL;
		e->looping = 0;
		old_raw = bytes_swap(e, bytes, m);
		e->pages++;
		e->named = jsame_keep(e->last, tools, NULL, -1) == 0 ? named : (size_t)-1;
		table = NULL;
	}
	pthread_mutex_unlock(&tr->lock);
	/* The last references, released outside the lock. */
	json_decref(table);
	json_decref(old);
	json_decref(before);
	json_decref(old_pending);
	json_decref(old_cursors);
	rcbytes_unref(old_raw);
	return 0;
}

json_t *tools_page_of(const struct inspect_msg *m)
{
	if (m->kind != JRPC_RESULT)
		return NULL;
	/* The request first: one lookup rules out the results of every
	 * other method. */
	if (m->request) {
		const char *rm = m->request_method; /* inspect_message read it for every hook */
		if (!rm || strcmp(rm, "tools/list") != 0)
			return NULL;
	}
	json_t *tools = json_object_get(json_object_get(m->msg, "result"), "tools");
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

static enum inspect_verdict on_message(void *arg, struct inspect_msg *m)
{
	struct tools *tr = arg;
	const char *upstream = m->where ? m->where->upstream : NULL;
	const json_t *tools = NULL;

	if (m->dir != INSPECT_FROM_SERVER || !upstream)
		return INSPECT_FORWARD;
	/* Only what concerns tools takes the lock. */
	if (m->kind == JRPC_NOTIFICATION) {
		const char *method = m->method; /* inspect_message read it for every hook */
		if (!method || strcmp(method, "notifications/tools/list_changed") != 0)
			return INSPECT_FORWARD;
	} else if (!(tools = tools_page_of(m))) {
		return INSPECT_FORWARD;
	}
	/* A page without its request: its place in a listing is unknown, so
	 * it is not taken in; subscribers still hear of it. */
	if (!tools || (m->request && one_page(tr, upstream, m) < 0)) {
		pthread_mutex_lock(&tr->lock);
		observe(tr, upstream, m);
		pthread_mutex_unlock(&tr->lock);
	}
	for (size_t i = 0; i < tr->nsubs; i++) {
		const struct tools_events *ev = tr->subs[i].ev;
		if (tools && ev->page)
			ev->page(tr->subs[i].arg, upstream, tools);
		else if (!tools && ev->list_changed)
			ev->list_changed(tr->subs[i].arg, upstream);
	}
	return INSPECT_FORWARD;
}

int tools_subscribe(struct tools *tr, const struct tools_events *ev, void *arg)
{
	if (!tr || tr->nsubs >= TOOLS_MAX_SUBSCRIBERS)
		return -1;
	tr->subs[tr->nsubs].ev = ev;
	tr->subs[tr->nsubs].arg = arg;
	tr->nsubs++;
	return 0;
}

void tools_unsubscribe(struct tools *tr, void *arg)
{
	for (size_t i = 0; tr && i < tr->nsubs; i++) {
		if (tr->subs[i].arg == arg) {
			memmove(&tr->subs[i], &tr->subs[i + 1], (tr->nsubs - i - 1) * sizeof(tr->subs[0]));
			tr->nsubs--;
			i--;
		}
	}
}

/* The entry whose last one-page listing is l's bytes, or NULL. A
 * list_changed heard since (stale) is left to the parsed path, which
 * tells the subscribers. Under tr->lock. */
static struct tools_entry *same_listing(struct tools *tr, const struct inspect_listing *l)
{
	struct tools_entry *e = l->where ? entry_find(tr, l->where->upstream) : NULL;
	if (!e || e->stale || !e->raw || e->raw->len != l->len ||
	    memcmp(e->raw->text, l->raw, l->len) != 0)
		return NULL;
	return e;
}

/* inspect_listing_may_fn: the same bytes as the listing held. */
static int listing_may(void *arg, const struct inspect_listing *l)
{
	struct tools *tr = arg;
	pthread_mutex_lock(&tr->lock);
	const struct tools_entry *e = same_listing(tr, l);
	may_seen.call = e ? l->call : 0;
	may_seen.serial = e ? e->raw_serial : 0;
	pthread_mutex_unlock(&tr->lock);
	return e != NULL;
}

/* inspect_listing_passed_fn: what unchanged() counts. The subscribers
 * are not told: the page they would get is the one they have (policy's
 * table and validate's snapshot are rebuilt only when the tracker's
 * changes counter moves, and it does not for the same bytes). */
static void listing_passed(void *arg, const struct inspect_listing *l)
{
	struct tools *tr = arg;
	pthread_mutex_lock(&tr->lock);
	struct tools_entry *e = l->where ? entry_find(tr, l->where->upstream) : NULL;
	if (e) {
		e->pages++;
		e->listings++;
		e->stale = 0;
	}
	pthread_mutex_unlock(&tr->lock);
}

uint64_t tools_listing_serial(struct tools *tr, const char *upstream, const char *raw, size_t len,
                              uint64_t call)
{
	if (!tr || !upstream || !raw)
		return 0;
	pthread_mutex_lock(&tr->lock);
	const struct tools_entry *e = entry_find(tr, upstream);
	uint64_t serial = 0;
	if (e && e->raw && e->raw->len == len) {
		/* The serial is unique to e's bytes: seen in this call, they are
		 * the ones compared. */
		if (call && may_seen.call == call && may_seen.serial == e->raw_serial)
			serial = e->raw_serial;
		else if (memcmp(e->raw->text, raw, len) == 0)
			serial = e->raw_serial;
	}
	pthread_mutex_unlock(&tr->lock);
	return serial;
}

int tools_attach(struct tools *tr, struct inspect *in)
{
	/* A deciding hook that never decides. main.c attaches it after the
	 * contract checker (it keeps the listing clients are let see) and
	 * before policy (whose hiding is per client, not the upstream's). */
	int slot = inspect_add(in, "tools", on_message, NULL, tr);
	if (slot < 0)
		return -1;
	inspect_set_listing_fast(in, slot, listing_may, listing_passed);
	/* It keeps tool listings only: any other message may pass without a tree. */
	inspect_set_needs_tree(in, slot, inspect_tree_for_listings);
	return 0;
}

struct tools *tools_setup(struct px_ctx *ctx, size_t max_tools)
{
	struct tools *tr = tools_new(max_tools);
	if (!tr) {
		log_msg(LOG_ERROR, "out of memory");
		return NULL;
	}
	if (tools_attach(tr, ctx->insp) < 0) {
		log_msg(LOG_ERROR, "tools: no free slot on the message hook");
		tools_free(tr);
		return NULL;
	}
	return tr;
}

json_t *tools_get(struct tools *tr, const char *upstream, const char *tool)
{
	if (!tr || !upstream || !tool)
		return NULL;
	pthread_mutex_lock(&tr->lock);
	json_t *t = NULL;
	const struct tools_entry *e = entry_find(tr, upstream);
	if (e) {
		t = e->pending ? json_object_get(e->pending, tool) : NULL;
		t = json_incref(t ? t : json_object_get(e->tools, tool));
	}
	pthread_mutex_unlock(&tr->lock);
	return t;
}

json_t *tools_listing(struct tools *tr, const char *upstream, uint64_t *changes)
{
	if (changes)
		*changes = 0;
	if (!tr || !upstream)
		return NULL;
	pthread_mutex_lock(&tr->lock);
	json_t *t = NULL;
	const struct tools_entry *e = entry_find(tr, upstream);
	if (e && e->listings) {
		t = json_incref(e->tools);
		if (changes)
			*changes = e->changes;
	}
	pthread_mutex_unlock(&tr->lock);
	return t;
}

static int stats(const struct tools *tr, const char *upstream, struct tools_stats *out)
{
	const struct tools_entry *e = entry_find(tr, upstream);
	if (!e)
		return -1;
	out->tools = json_object_size(e->tools);
	if (e->pending) {
		const char *key;
		json_t *v;
		json_object_foreach(e->pending, key, v) {
			if (!json_object_get(e->tools, key))
				out->tools++;
		}
	}
	out->listing = e->pending != NULL;
	out->stale = e->stale;
	out->looping = e->looping;
	out->listings = e->listings;
	out->changes = e->changes;
	out->pages = e->pages;
	out->dropped = e->dropped;
	out->loops = e->loops;
	return 0;
}

int tools_stats(struct tools *tr, const char *upstream, struct tools_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!tr || !upstream)
		return -1;
	pthread_mutex_lock(&tr->lock);
	int rc = stats(tr, upstream, out);
	pthread_mutex_unlock(&tr->lock);
	return rc;
}

/* ---- listings as the upstream sent them (tools.h) --------------------------
 *
 *   tools_raw ── head ⇄ … ⇄ tail   listings in progress, most recently
 *                                  used first: (upstream, session), its
 *                                  pages, the nextCursor that continues it
 */

struct tools_raw_listing {
	struct tools_raw_listing *prev, *next;  /* LRU links, owned by tools_raw */
	size_t up;
	const char *name;    /* borrowed: the upstream's, for log lines */
	char *session;       /* owned: "" when the exchange had no session */
	char *era;           /* owned, or NULL: era of the first page */
	json_t *pages;       /* owned: array of page results */
	size_t bytes;        /* the pages' size, as the caller counted it */
	char *next_cursor;   /* owned: the last page's nextCursor, or NULL */
	int orphan;          /* began with a cursor no listing knew */
	void *user;          /* owned through tools_raw.user_free */
};

struct tools_raw {
	struct tools_raw_listing *head, *tail;
	size_t n, bytes;     /* listings, and the sum of their bytes */
	size_t max_listings, max_bytes;
	void (*user_free)(void *);
	uint64_t evicted;
};

struct tools_raw *tools_raw_new(size_t max_listings, size_t max_bytes, void (*user_free)(void *))
{
	struct tools_raw *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->max_listings = max_listings;
	r->max_bytes = max_bytes;
	r->user_free = user_free;
	return r;
}

static void raw_unlink(struct tools_raw *r, struct tools_raw_listing *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else
		r->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		r->tail = l->prev;
	l->prev = l->next = NULL;
}

static void raw_push_front(struct tools_raw *r, struct tools_raw_listing *l)
{
	l->prev = NULL;
	l->next = r->head;
	if (r->head)
		r->head->prev = l;
	r->head = l;
	if (!r->tail)
		r->tail = l;
}

static void raw_listing_free(const struct tools_raw *r, struct tools_raw_listing *l)
{
	if (l->user && r->user_free)
		r->user_free(l->user);
	free(l->session);
	free(l->era);
	free(l->next_cursor);
	json_decref(l->pages);
	free(l);
}

void tools_raw_remove(struct tools_raw *r, struct tools_raw_listing *l)
{
	raw_unlink(r, l);
	r->n--;
	r->bytes -= l->bytes;
	raw_listing_free(r, l);
}

void tools_raw_free(struct tools_raw *r)
{
	if (!r)
		return;
	while (r->head)
		tools_raw_remove(r, r->head);
	free(r);
}

/* Evicts least recently used listings (never keep) until `more` listings
 * of `bytes` more fit. */
static void raw_make_room(struct tools_raw *r, const struct tools_raw_listing *keep, size_t more,
                          size_t bytes)
{
	while (r->n + more > r->max_listings || r->bytes + bytes > r->max_bytes) {
		struct tools_raw_listing *victim = r->tail;
		if (victim == keep)
			victim = victim->prev;
		if (!victim)
			return;
		log_msg(LOG_DEBUG, "contract: listing of upstream %s evicted (%zu in progress, %zu bytes)",
		        victim->name, r->n, r->bytes);
		r->evicted++;
		tools_raw_remove(r, victim);
	}
}

void tools_raw_make_room(struct tools_raw *r, size_t more, size_t bytes)
{
	raw_make_room(r, NULL, more, bytes);
}

struct tools_raw_listing *tools_raw_find(struct tools_raw *r, size_t up, const char *session,
                                         const char *cursor)
{
	if (!cursor)
		return NULL;
	for (struct tools_raw_listing *l = r->head; l; l = l->next) {
		if (l->up == up && l->next_cursor && strcmp(l->next_cursor, cursor) == 0 &&
		    strcmp(l->session, session) == 0) {
			raw_unlink(r, l);
			raw_push_front(r, l);
			return l;
		}
	}
	return NULL;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

struct tools_raw_listing *tools_raw_begin(struct tools_raw *r, size_t up, const char *name,
                                          const char *session, const char *era, int orphan,
                                          void *user)
{
	struct tools_raw_listing *l = calloc(1, sizeof(*l));
	if (!l) {
		if (user && r->user_free)
			r->user_free(user);
		return NULL;
	}
	l->up = up;
	l->name = name;
	l->orphan = orphan;
	l->user = user;
	l->session = dup_or_null(session ? session : "");
	l->era = dup_or_null(era);
	l->pages = json_array();
	if (!l->session || (era && !l->era) || !l->pages) {
		raw_listing_free(r, l);
		return NULL;
	}
	raw_push_front(r, l);
	r->n++;
	return l;
}

int tools_raw_add(struct tools_raw *r, struct tools_raw_listing *l, json_t *page, size_t bytes,
                  int last)
{
	json_t *kept = last ? json_incref(page) : jparse_copy(page);
	if (!kept || json_array_append_new(l->pages, kept) < 0) {
		tools_raw_remove(r, l);
		return -1;
	}
	l->bytes += bytes;
	r->bytes += bytes;
	raw_make_room(r, l, 0, 0);
	return 0;
}

void tools_raw_set_next(struct tools_raw_listing *l, const char *next_cursor)
{
	free(l->next_cursor);
	l->next_cursor = dup_or_null(next_cursor);
}

const json_t *tools_raw_pages(const struct tools_raw_listing *l)
{
	return l->pages;
}

size_t tools_raw_bytes(const struct tools_raw_listing *l)
{
	return l->bytes;
}

size_t tools_raw_upstream(const struct tools_raw_listing *l)
{
	return l->up;
}

const char *tools_raw_era(const struct tools_raw_listing *l)
{
	return l->era;
}

int tools_raw_orphan(const struct tools_raw_listing *l)
{
	return l->orphan;
}

void *tools_raw_user(const struct tools_raw_listing *l)
{
	return l->user;
}

uint64_t tools_raw_evicted(const struct tools_raw *r)
{
	return r ? r->evicted : 0;
}

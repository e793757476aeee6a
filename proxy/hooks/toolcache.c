/* toolcache: see toolcache.h.
 *
 * One entry per upstream name, in a small array searched linearly (there
 * are as many entries as configured upstreams):
 *
 *   entry ─┬─ tools    {name: tool, …}  last complete listing (owned)
 *          └─ pending  {name: tool, …}  listing being paged in, or NULL
 *
 * Lookups try pending, then tools. A listing's last page swaps pending
 * into tools.
 */
#include "proxy/hooks/toolcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/ctx.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"

struct tc_entry {
	char *upstream;          /* owned copy of the name */
	json_t *tools;           /* owned: name -> tool (references) */
	json_t *pending;         /* owned, or NULL */
	int stale;
	int warned;              /* the cap was logged for this listing */
	uint64_t listings, pages, dropped;
	/* The bytes of the last one-page listing's result, as the upstream
	 * sent them: the same bytes again change nothing (owned, or NULL). */
	char *raw;
	size_t raw_len;
};

/* Shared by every worker: the observer and each entry point take the lock. */
struct toolcache {
	pthread_mutex_t lock;
	size_t max_tools;
	struct tc_entry entries[TOOLCACHE_MAX_UPSTREAMS];
	size_t n;
};

struct toolcache *toolcache_new(size_t max_tools)
{
	struct toolcache *tc = calloc(1, sizeof(*tc));
	if (!tc)
		return NULL;
	if (pthread_mutex_init(&tc->lock, NULL) != 0) {
		free(tc);
		return NULL;
	}
	tc->max_tools = max_tools ? max_tools : TOOLCACHE_MAX_TOOLS;
	return tc;
}

void toolcache_free(struct toolcache *tc)
{
	if (!tc)
		return;
	for (size_t i = 0; i < tc->n; i++) {
		free(tc->entries[i].upstream);
		json_decref(tc->entries[i].tools);
		json_decref(tc->entries[i].pending);
		free(tc->entries[i].raw);
	}
	pthread_mutex_destroy(&tc->lock);
	free(tc);
}

static struct tc_entry *entry_find(const struct toolcache *tc, const char *upstream)
{
	for (size_t i = 0; i < tc->n; i++)
		if (strcmp(tc->entries[i].upstream, upstream) == 0)
			return (struct tc_entry *)(uintptr_t)&tc->entries[i];
	return NULL;
}

static struct tc_entry *entry_get(struct toolcache *tc, const char *upstream)
{
	struct tc_entry *e = entry_find(tc, upstream);
	if (e || tc->n >= TOOLCACHE_MAX_UPSTREAMS)
		return e;
	e = &tc->entries[tc->n];
	memset(e, 0, sizeof(*e));
	e->upstream = strdup(upstream);
	e->tools = json_object();
	if (!e->upstream || !e->tools) {
		free(e->upstream);
		json_decref(e->tools);
		return NULL;
	}
	tc->n++;
	return e;
}

static const char *str_member(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Adds one page's tools into `into`, within the cap; returns how many
 * were dropped over it. Touches nothing shared. */
static uint64_t fill(size_t max_tools, json_t *into, const json_t *tools)
{
	size_t i;
	json_t *tool;
	uint64_t dropped = 0;

	json_array_foreach((json_t *)(uintptr_t)tools, i, tool) {
		const char *name = str_member(tool, "name");
		if (!json_is_object(tool) || !name || !*name)
			continue;
		if (json_object_size(into) >= max_tools && !json_object_get(into, name)) {
			dropped++;
			continue;
		}
		json_object_set(into, name, tool); /* takes a reference */
	}
	return dropped;
}

static void note_dropped(struct tc_entry *e, uint64_t dropped, size_t max_tools)
{
	e->dropped += dropped;
	if (dropped && !e->warned) {
		e->warned = 1;
		log_msg(LOG_WARN, "upstream %s lists more than %zu tools: the rest are not known to "
		        "the Mcp-Param-* checks", e->upstream, max_tools);
	}
}

static void add_page(struct toolcache *tc, struct tc_entry *e, json_t *into, const json_t *tools)
{
	note_dropped(e, fill(tc->max_tools, into, tools), tc->max_tools);
}

static void take_page(struct toolcache *tc, const char *upstream, const json_t *request,
                      const json_t *result)
{
	const json_t *tools = json_object_get(result, "tools");
	const char *rt = str_member(result, "resultType");
	if (!json_is_array(tools) || (rt && strcmp(rt, "complete") != 0))
		return;
	struct tc_entry *e = entry_get(tc, upstream);
	if (!e)
		return;
	const json_t *params = json_object_get(request, "params");
	const json_t *cursor = json_object_get(params, "cursor");
	const char *next = str_member(result, "nextCursor");

	if (!cursor || json_is_null(cursor)) {
		/* A first page: a new listing (a listing in progress by another
		 * client is superseded; its later pages join this one). */
		json_decref(e->pending);
		e->pending = json_object();
		e->warned = 0;
		if (!e->pending)
			return;
	}
	add_page(tc, e, e->pending ? e->pending : e->tools, tools);
	e->pages++;
	free(e->raw); /* a paged listing: no bytes to compare with */
	e->raw = NULL;
	e->raw_len = 0;
	if (next && *next)
		return;
	if (e->pending) {
		json_decref(e->tools);
		e->tools = e->pending;
		e->pending = NULL;
		e->stale = 0;
		e->listings++;
	}
}

static void observe(struct toolcache *tc, const char *upstream, struct inspect_msg *m)
{
	if (m->kind == JRPC_NOTIFICATION) {
		const char *method = m->method;
		if (method && strcmp(method, "notifications/tools/list_changed") == 0) {
			struct tc_entry *e = entry_find(tc, upstream);
			if (e)
				e->stale = 1;
		}
		return;
	}
	const json_t *result = json_object_get(m->msg, "result");
	if (json_is_object(result))
		take_page(tc, upstream, m->request, result);
}

/* Same bytes as the listing held: nothing changes but the counters. */
static int unchanged(struct toolcache *tc, const char *upstream, const struct inspect_msg *m)
{
	struct tc_entry *e = entry_find(tc, upstream);
	if (!e || !e->raw || e->raw_len != m->result_raw_len ||
	    memcmp(e->raw, m->result_raw, e->raw_len) != 0)
		return 0;
	e->pages++;
	e->listings++;
	e->stale = 0;
	return 1;
}

/* A whole listing in one page (no cursor, no nextCursor: the common
 * case, lists of a thousand tools included) is read outside the lock: the
 * new table is built first, swapped in under the lock, and the old one
 * released after it, so that other workers wait for a pointer swap, not
 * for a thousand tools. Returns 0 when done, -1 for the general path
 * (pages, errors, other results). */
static int one_page(struct toolcache *tc, const char *upstream, const struct inspect_msg *m)
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
	if (m->result_raw) {
		pthread_mutex_lock(&tc->lock);
		int same = unchanged(tc, upstream, m);
		pthread_mutex_unlock(&tc->lock);
		if (same)
			return 0;
	}
	json_t *table = json_object();
	char *raw = m->result_raw ? malloc(m->result_raw_len ? m->result_raw_len : 1) : NULL;
	if (!table)
		return -1;
	if (raw)
		memcpy(raw, m->result_raw, m->result_raw_len);
	uint64_t dropped = fill(tc->max_tools, table, tools);

	pthread_mutex_lock(&tc->lock);
	struct tc_entry *e = entry_get(tc, upstream);
	json_t *old = NULL, *old_pending = NULL;
	char *old_raw = raw;
	if (e) {
		e->warned = 0;
		note_dropped(e, dropped, tc->max_tools);
		old = e->tools;
		old_pending = e->pending; /* a paged listing this one supersedes */
		old_raw = e->raw;
		e->tools = table;
		e->pending = NULL;
		e->raw = raw;
		e->raw_len = raw ? m->result_raw_len : 0;
		e->stale = 0;
		e->pages++;
		e->listings++;
		table = NULL;
	}
	pthread_mutex_unlock(&tc->lock);
	json_decref(table);
	json_decref(old);
	json_decref(old_pending);
	free(old_raw);
	return 0;
}

static enum inspect_verdict on_message(void *arg, struct inspect_msg *m)
{
	struct toolcache *tc = arg;
	const char *upstream = m->where ? m->where->upstream : NULL;

	if (m->dir != INSPECT_FROM_SERVER || !upstream)
		return INSPECT_FORWARD;
	/* Only what concerns tools takes the lock. */
	if (m->kind == JRPC_NOTIFICATION) {
		const char *method = m->method; /* inspect_message read it for every hook */
		if (!method || strcmp(method, "notifications/tools/list_changed") != 0)
			return INSPECT_FORWARD;
	} else {
		const char *method = m->kind == JRPC_RESULT ? m->request_method : NULL;
		if (!method || strcmp(method, "tools/list") != 0)
			return INSPECT_FORWARD;
	}
	if (m->kind == JRPC_RESULT && one_page(tc, upstream, m) == 0)
		return INSPECT_FORWARD;
	pthread_mutex_lock(&tc->lock);
	observe(tc, upstream, m);
	pthread_mutex_unlock(&tc->lock);
	return INSPECT_FORWARD;
}

int toolcache_attach(struct toolcache *tc, struct inspect *in)
{
	return inspect_add_observer(in, "toolcache", on_message, NULL, tc) < 0 ? -1 : 0;
}

struct toolcache *toolcache_setup(struct px_ctx *ctx, size_t max_tools)
{
	struct toolcache *tc = toolcache_new(max_tools);
	if (!tc) {
		log_msg(LOG_ERROR, "out of memory");
		return NULL;
	}
	if (toolcache_attach(tc, ctx->insp) < 0) {
		log_msg(LOG_ERROR, "toolcache: no free slot on the message hook");
		toolcache_free(tc);
		return NULL;
	}
	return tc;
}

json_t *toolcache_get(struct toolcache *tc, const char *upstream, const char *tool)
{
	if (!tc || !upstream || !tool)
		return NULL;
	pthread_mutex_lock(&tc->lock);
	json_t *t = NULL;
	const struct tc_entry *e = entry_find(tc, upstream);
	if (e) {
		t = e->pending ? json_object_get(e->pending, tool) : NULL;
		t = json_incref(t ? t : json_object_get(e->tools, tool));
	}
	pthread_mutex_unlock(&tc->lock);
	return t;
}

static int stats(const struct toolcache *tc, const char *upstream, struct toolcache_stats *out)
{
	const struct tc_entry *e = entry_find(tc, upstream);
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
	out->listings = e->listings;
	out->pages = e->pages;
	out->dropped = e->dropped;
	return 0;
}

int toolcache_stats(struct toolcache *tc, const char *upstream, struct toolcache_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!tc || !upstream)
		return -1;
	pthread_mutex_lock(&tc->lock);
	int rc = stats(tc, upstream, out);
	pthread_mutex_unlock(&tc->lock);
	return rc;
}

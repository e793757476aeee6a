/* toolcache: per upstream, the tools as that upstream last listed them.
 *
 * The 2026-07-28 Mcp-Param-* headers mirror tool arguments named by the
 * `x-mcp-header` annotations of the tool's inputSchema, so checking them
 * (mirror.h) needs the tool's definition. This cache learns definitions
 * from the traffic itself: an observer on the message hook sees every
 * server -> client result, and keeps the `tools` of those answering a
 * tools/list request, by name, per upstream.
 *
 *   - a listing starts with a page requested without params.cursor and
 *     ends with a page without result.nextCursor; while it is being paged
 *     in, the pages seen so far are looked up first, then the previous
 *     complete listing (a client may call a tool from page 1 at once);
 *     when it ends it replaces the previous one (removed tools go);
 *   - a page requested with a cursor when no listing is in progress is
 *     merged into the current one;
 *   - notifications/tools/list_changed marks the upstream's list stale but
 *     keeps it: until the next listing it is still the best knowledge;
 *   - results with a resultType other than "complete", error responses
 *     and malformed pages are ignored;
 *   - bounded: at most max_tools tools per upstream (the rest of a listing
 *     is dropped, counted and logged once) and TOOLCACHE_MAX_UPSTREAMS
 *     upstreams (names come from the configuration).
 *
 * Tool values are kept by reference (json_incref), not copied.
 *
 * Left out: per-client or per-authorization views (a server MAY list
 * different tools to different callers; the last listing wins for all),
 * ttlMs/cacheScope (this is not a response cache, only what the upstream
 * declared), and anything but tools.
 */
#ifndef MCPWARDEN_TOOLCACHE_H
#define MCPWARDEN_TOOLCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct px_ctx;
struct inspect;
struct toolcache;

/* Defaults (candidates for proxy/base/limits.h and a config key). */
#define TOOLCACHE_MAX_TOOLS      10000
#define TOOLCACHE_MAX_UPSTREAMS  256

/* A new, empty cache (owned; free with toolcache_free). max_tools caps the
 * tools kept per upstream (0: TOOLCACHE_MAX_TOOLS). Returns NULL when out
 * of memory. */
struct toolcache *toolcache_new(size_t max_tools);
/* Accepts NULL. Remove it from the hook first (or free the hook chain
 * first): the observer holds tc. */
void toolcache_free(struct toolcache *tc);

/* Registers tc's observer on in (borrowed; must outlive nothing of tc's:
 * tc is only called while in runs hooks). Returns 0 or -1 (no hook slot). */
int toolcache_attach(struct toolcache *tc, struct inspect *in);

/* toolcache_new + toolcache_attach on ctx->insp: what main() calls.
 * Returns the cache (owned by the caller: store it in ctx->toolcache and
 * free it in teardown), or NULL (logged). */
struct toolcache *toolcache_setup(struct px_ctx *ctx, size_t max_tools);

/* The tool named `tool` as `upstream` last listed it (a new reference:
 * json_decref it; another worker may replace the listing meanwhile), or
 * NULL when not known. tc may be NULL (then NULL). */
json_t *toolcache_get(struct toolcache *tc, const char *upstream, const char *tool);

struct toolcache_stats {
	size_t tools;         /* tools toolcache_get can find */
	int listing;          /* a paged listing is in progress */
	int stale;            /* list_changed seen since the last full listing */
	uint64_t listings;    /* full listings completed */
	uint64_t pages;       /* tools/list result pages taken in */
	uint64_t dropped;     /* tools dropped over the cap */
};

/* Fills out for one upstream; returns 0, or -1 when nothing is known of it. */
int toolcache_stats(struct toolcache *tc, const char *upstream, struct toolcache_stats *out);

#endif

/* tools: the tools/list tracker, one listing per upstream, that the
 * modules needing an upstream's tools read instead of following listings
 * themselves.
 *
 * A deciding hook registered after the contract checker and before the
 * policy hook (proxy/main.c): it sees every server -> client tools/list
 * result as clients may see it (a listing the contract withheld or failed
 * never reaches it; policy's hiding, which is per client, comes after),
 * never changes it (always INSPECT_FORWARD), and keeps its tools by name,
 * per upstream:
 *
 *   - a listing starts with a page requested without params.cursor and
 *     ends with a page without result.nextCursor; while it is being paged
 *     in, the pages seen so far are looked up first, then the previous
 *     complete listing (a client may call a tool from page 1 at once);
 *     when it ends it replaces the previous one (removed tools go);
 *   - a page requested with a cursor when no listing is in progress is
 *     merged into the current one;
 *   - cursor loops: the cursors of a listing are followed from its first
 *     page; a nextCursor leading back to a cursor already followed is a
 *     loop (counted, logged once per listing); such a listing cannot end,
 *     and its pages stay what lookups find first until one does;
 *   - a changed listing: the first listing, and each one after that ends
 *     with other tools than the one it replaces (compared whole, not by a
 *     hash that could collide), bumps the upstream's `changes`, so a
 *     reader knows when to re-read;
 *   - notifications/tools/list_changed marks the upstream's list stale but
 *     keeps it: until the next listing it is still the best knowledge;
 *   - results with a resultType other than "complete", error responses
 *     and malformed pages are ignored;
 *   - bounded: at most max_tools tools per upstream (the rest of a listing
 *     is dropped, counted and logged once) and TOOLS_MAX_UPSTREAMS
 *     upstreams (names come from the configuration).
 *
 * A result that reaches the hook without its request (a reply on another
 * stream) is not taken in: its place in a listing is unknown. When its
 * shape says it is a listing page (tools_page_of), subscribers still hear
 * of it.
 *
 * The same module keeps, for the contract checker that runs before this
 * hook, each listing in progress as the upstream sent it (tools_raw,
 * below): one place for paging, two views.
 *
 * Readers: the 2026-07-28 Mcp-Param-* header checks (proxy/mcp/mirror.h,
 * through tools_get); the policy hook (hook_policy.h), which subscribes
 * to every page and list_changed (tools_subscribe) and keeps the hints
 * it judges by in its own lock-free tables. Tool values are kept by reference (json_incref), not
 * copied; a complete listing is never changed once in place (a merged page
 * makes a new table), so tools_listing can hand it out.
 *
 * Left out: per-client or per-authorization views (a server MAY list
 * different tools to different callers; the last listing wins for all),
 * ttlMs/cacheScope (this is not a response cache, only what the upstream
 * declared), and anything but tools.
 */
#ifndef MCPWARDEN_TOOLS_H
#define MCPWARDEN_TOOLS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct px_ctx;
struct inspect;
struct inspect_msg;
struct tools;

/* Defaults (candidates for proxy/base/limits.h and a config key). */
#define TOOLS_MAX_TOOLS      10000
#define TOOLS_MAX_UPSTREAMS  256
/* Cursors of one listing followed for the loop check. */
#define TOOLS_MAX_CURSORS    1024

/* A new, empty tracker (owned; free with tools_free). max_tools caps the
 * tools kept per upstream (0: TOOLS_MAX_TOOLS). Returns NULL when out of
 * memory. */
struct tools *tools_new(size_t max_tools);
/* Accepts NULL. Free the hook chain first: the hook holds tr. */
void tools_free(struct tools *tr);

/* Registers tr's hook on in (borrowed; tr is only called while in runs
 * hooks). Register it before the hooks that read it (policy). Returns
 * 0 or -1 (no hook slot). */
int tools_attach(struct tools *tr, struct inspect *in);

/* tools_new + tools_attach on ctx->insp: what main() calls, after the
 * contract hook and before the policy hook. Returns the tracker (owned by the caller:
 * store it in ctx->proc->tools and free it in teardown), or NULL (logged). */
struct tools *tools_setup(struct px_ctx *ctx, size_t max_tools);

/* The tool named `tool` as `upstream` last listed it (a new reference:
 * json_decref it; another worker may replace the listing meanwhile), or
 * NULL when not known. tr may be NULL (then NULL). */
json_t *tools_get(struct tools *tr, const char *upstream, const char *tool);

/* The upstream's last complete listing, {name: tool, ...} (a new
 * reference to an object nobody changes any more: read it, do not modify
 * it), or NULL when none ended yet. *changes, if not NULL, receives the
 * upstream's `changes` count that goes with it. */
json_t *tools_listing(struct tools *tr, const char *upstream, uint64_t *changes);

/* The tools array of m when m is a tools/list result page (borrowed from
 * m->msg), else NULL. Known by the request it answers when that came in
 * the same exchange; otherwise by its shape: a non-empty array of tool
 * objects, each with a string name and an inputSchema object. For the
 * hooks that act on the listing they are given, too. */
json_t *tools_page_of(const struct inspect_msg *m);

/* Names the bytes of the last one-page listing of upstream the tracker
 * holds (issue 20): a serial no other listing it kept has had, when they
 * are raw[0..len), else 0. A hook keys what it keeps of a listing on it
 * instead of a copy of the bytes. call: an inspect_listing's call (the
 * tracker's own may compared those very bytes in that call, so they are
 * not compared again), or 0 (compared now). Takes the tracker's lock: a
 * caller may hold its own (the tracker never calls out under its lock). */
uint64_t tools_listing_serial(struct tools *tr, const char *upstream, const char *raw, size_t len,
                              uint64_t call);

/* What a subscriber is told, on the thread of the message, after the
 * tracker took it in and with no lock of the tracker's held: every
 * listing page the tracker sees (tools: its array as the upstream sent
 * it, borrowed for the call; whatever its resultType), and every
 * notifications/tools/list_changed. Either may be NULL. */
struct tools_events {
	void (*page)(void *arg, const char *upstream, const json_t *tools);
	void (*list_changed)(void *arg, const char *upstream);
};

#define TOOLS_MAX_SUBSCRIBERS 4

/* Subscribes (ev borrowed: a static). Set up before workers run: the
 * list is read with no lock. Returns 0, or -1 (tr NULL, or full). */
int tools_subscribe(struct tools *tr, const struct tools_events *ev, void *arg);
/* Removes arg's subscription (no worker may run). tr may be NULL. */
void tools_unsubscribe(struct tools *tr, void *arg);

struct tools_stats {
	size_t tools;         /* tools tools_get can find */
	int listing;          /* a paged listing is in progress */
	int stale;            /* list_changed seen since the last full listing */
	int looping;          /* the listing in progress pages in a circle */
	uint64_t listings;    /* full listings completed */
	uint64_t changes;     /* ... of which with other tools than the one before */
	uint64_t pages;       /* tools/list result pages taken in */
	uint64_t dropped;     /* tools dropped over the cap */
	uint64_t loops;       /* cursor loops seen */
};

/* Fills out for one upstream; returns 0, or -1 when nothing is known of it. */
int tools_stats(struct tools *tr, const char *upstream, struct tools_stats *out);

/* ---- Listings as the upstream sent them ------------------------------------
 *
 * For a hook that judges a listing before clients see it (the contract
 * checker, registered before the tracker's hook, which may withhold or
 * fail pages): each listing in progress with its pages as they came, per
 * (upstream, session), so that its pages can be judged together. Kept
 * apart from the tracker's view above on purpose, which keeps one listing
 * per upstream, merged by name, as clients may see it:
 *   - a listing is one client's paging (two sessions paging at once are
 *     two listings; for the tracker the second first page supersedes);
 *   - a page continues a listing only when asked with the very cursor its
 *     last page named as nextCursor (what a checker needs to call the
 *     pages one listing); a page asked with a cursor no listing knows (its
 *     listing was evicted, or the proxy restarted) starts an "orphan"
 *     listing that never counts as complete;
 *   - pages are kept whole (deep copies: later hooks may rewrite the
 *     message in place), whatever their resultType or shape: judging a
 *     malformed page is the reader's business.
 * Bounded: at most max_listings listings and max_bytes bytes of pages (as
 * counted by the caller), the least recently used listing evicted first.
 * Not thread-safe: the reader uses it under its own lock. */
struct tools_raw;
struct tools_raw_listing;

/* A new, empty set (owned; tools_raw_free). user_free (may be NULL) frees
 * a listing's user data when the listing goes. NULL when out of memory. */
struct tools_raw *tools_raw_new(size_t max_listings, size_t max_bytes,
                                void (*user_free)(void *));
void tools_raw_free(struct tools_raw *r); /* accepts NULL */

/* The listing of (up, session) that a page asked with cursor continues,
 * made the most recently used, or NULL (cursor NULL: a first page never
 * continues one). up is the caller's index of the upstream. */
struct tools_raw_listing *tools_raw_find(struct tools_raw *r, size_t up, const char *session,
                                         const char *cursor);

/* A new listing of (up, session) (strings copied), in the era of its
 * first page (NULL: none); orphan: it begins with a cursor no listing
 * knew. user (owned, may be NULL) is the reader's, freed with the
 * listing. name (borrowed, the upstream's) is for log lines. NULL when out
 * of memory (user is then freed). */
struct tools_raw_listing *tools_raw_begin(struct tools_raw *r, size_t up, const char *name,
                                          const char *session, const char *era, int orphan,
                                          void *user);

/* Appends page (a result object; copied unless last: a last page is read
 * and the listing dropped before the caller returns, so a reference
 * does) of `bytes` bytes to l, then evicts other listings until within
 * the bounds. Returns 0, or -1 when out of memory (l is removed). */
int tools_raw_add(struct tools_raw *r, struct tools_raw_listing *l, json_t *page, size_t bytes,
                  int last);

/* Evicts least recently used listings until `more` listings of `bytes`
 * more would fit (a page judged without a listing stands for one that
 * would have been added and dropped). */
void tools_raw_make_room(struct tools_raw *r, size_t more, size_t bytes);

/* Drops l. */
void tools_raw_remove(struct tools_raw *r, struct tools_raw_listing *l);

/* Sets the cursor that continues l (copied; NULL: none). */
void tools_raw_set_next(struct tools_raw_listing *l, const char *next_cursor);

/* A listing's parts (borrowed from l). */
const json_t *tools_raw_pages(const struct tools_raw_listing *l); /* array of results */
size_t tools_raw_bytes(const struct tools_raw_listing *l);
size_t tools_raw_upstream(const struct tools_raw_listing *l);
const char *tools_raw_era(const struct tools_raw_listing *l);
int tools_raw_orphan(const struct tools_raw_listing *l);
void *tools_raw_user(const struct tools_raw_listing *l);

/* Listings evicted so far. */
uint64_t tools_raw_evicted(const struct tools_raw *r);

#endif

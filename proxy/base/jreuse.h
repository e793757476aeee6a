/* jreuse: the tree of a tool listing that changed, built from the tools
 * that did not.
 *
 * A tools/list reply that differs from the last one is most often the same
 * list with one tool changed (a description, a schema). Parsing all of it
 * built some 55,000 values for a 1,000-tool list (448,808 bytes), and
 * freeing them cost a third as much again: 17.6M of the 18.7M
 * instructions such a listing cost (tests/bench/profile.sh listvary). A
 * jreuse keeps the tools of the last listing it built, as values, with
 * the bytes each came from; the next listing's tools whose bytes are the
 * same are those very values (one more reference each), and only the
 * others are parsed.
 *
 * The tree returned is equal to jparse_span's for the same text, and the
 * same text is refused. The tools in it are shared with the jreuse and with
 * later listings' trees: nobody may change a tool in place (hooks remove
 * tools from the array, or replace the result: they never edit a tool).
 * Their reference counts are jansson's atomic ones, so a tool may be held
 * by other threads (the tools tracker) while this one builds.
 *
 * Not thread-safe: one per upstream, shared by the workers behind a lock
 * (proxy/mcp/listings.h).
 */
#ifndef MCPWARDEN_JREUSE_H
#define MCPWARDEN_JREUSE_H

#include <stddef.h>
#include <jansson.h>

#include "proxy/base/jparse.h"
#include "proxy/base/rcbytes.h"

struct jreuse;

/* An empty one (owned), or NULL when out of memory. */
struct jreuse *jreuse_new(void);
/* Lets go of the tools kept. NULL accepted. */
void jreuse_free(struct jreuse *r);

/* Below this a text is parsed whole: reuse costs more than it saves. */
#define JREUSE_MIN_BYTES 8192

/* jparse_span(buf, len, any, span) (span may be NULL) for a JSON-RPC reply
 * whose "result" holds a "tools" array: a new value, or NULL when the text
 * is not JSON. Tools whose bytes the last call's listing had are its
 * values; the listing is then kept for the next call. Any other text (no
 * such array, a member spelt with an escape, a small text) is parsed
 * whole, and what is kept stays as it was. */
json_t *jreuse_parse(struct jreuse *r, const char *buf, size_t len, int any,
                     struct jparse_span *span);

/* The bytes of the "result" member of the text the last jreuse_parse call
 * read, as kept for the next call (a new reference: rcbytes_unref it), or
 * NULL when that call kept nothing (a text parsed whole, or out of
 * memory). Holders share the one copy instead of making their own. */
struct rcbytes *jreuse_kept(const struct jreuse *r);

/* The smallest text reused from now on (JREUSE_MIN_BYTES at first): for
 * tests and the fuzz target, whose texts are small. */
void jreuse_set_min(struct jreuse *r, size_t min_bytes);

/* What the last calls did, for tests and the bench. */
struct jreuse_stats {
	unsigned long long listings; /* built with the tools kept (or none yet) */
	unsigned long long whole;    /* parsed whole instead */
	unsigned long long reused;   /* tools taken from the last listing */
	unsigned long long parsed;   /* tools parsed */
};
void jreuse_stats(const struct jreuse *r, struct jreuse_stats *out);

#endif

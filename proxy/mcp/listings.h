/* listings: the tools of each upstream's last large tool listing, kept once
 * for every worker.
 *
 * A changed listing is built from the tools of the last one (jreuse.h):
 * its unchanged tools are the very values of the last listing. When each
 * worker kept its own last listing, two workers' listings of the same
 * tools were different values, and the hooks that read a listing only
 * where its values changed (the tools tracker, the policy: jsame.h) saw
 * a whole new listing every time the other worker had read the last one,
 * half the time under load. One jreuse per upstream, shared, makes every
 * listing of an upstream differ from the one before it in its changed
 * tools alone, whichever worker read it; it also keeps one tree of the
 * tools instead of one per worker.
 *
 * Each upstream's jreuse has its own lock, held while a listing is built
 * (its changed tools parsed); the tree returned is the caller's, its tools
 * shared with the jreuse and later listings (jansson's atomic counts).
 */
#ifndef MCPWARDEN_LISTINGS_H
#define MCPWARDEN_LISTINGS_H

#include <stddef.h>
#include <jansson.h>

#include "proxy/base/jparse.h"
#include "proxy/base/jreuse.h"

struct listings;

/* Upstreams past this index are parsed whole. */
#define LISTINGS_MAX_UPSTREAMS 64

/* An empty set (owned), or NULL when out of memory. */
struct listings *listings_new(void);
/* When no worker runs any more. NULL accepted. */
void listings_free(struct listings *l);

/* jreuse_parse with upstream up's jreuse (made on first use): the reply's
 * tree, or NULL when the text is not JSON. *did gets what this call did
 * (tools reused and parsed), for the counters; *kept a reference to the
 * result's bytes as the jreuse now keeps them (jreuse_kept), or NULL, for
 * the hooks to share instead of copying. Thread-safe. */
json_t *listings_parse(struct listings *l, size_t up, const char *buf, size_t len, int any,
                       struct jparse_span *span, struct jreuse_stats *did, struct rcbytes **kept);

#endif

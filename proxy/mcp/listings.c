/* listings: see listings.h.
 *
 *   listings ── ups[i] {lock, jreuse (owned, made on first use)}
 */
#include "proxy/mcp/listings.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct listing_up {
	pthread_mutex_t lock;
	struct jreuse *r;     /* owned, or NULL until the first listing */
	int failed;           /* jreuse_new ran out of memory: parse whole */
};

struct listings {
	struct listing_up ups[LISTINGS_MAX_UPSTREAMS];
};

struct listings *listings_new(void)
{
	struct listings *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	for (size_t i = 0; i < LISTINGS_MAX_UPSTREAMS; i++) {
		if (pthread_mutex_init(&l->ups[i].lock, NULL) != 0) {
			while (i-- > 0)
				pthread_mutex_destroy(&l->ups[i].lock);
			free(l);
			return NULL;
		}
	}
	return l;
}

void listings_free(struct listings *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < LISTINGS_MAX_UPSTREAMS; i++) {
		jreuse_free(l->ups[i].r);
		pthread_mutex_destroy(&l->ups[i].lock);
	}
	free(l);
}

json_t *listings_parse(struct listings *l, size_t up, const char *buf, size_t len, int any,
                       struct jparse_span *span, struct jreuse_stats *did, struct rcbytes **kept)
{
	memset(did, 0, sizeof(*did));
	*kept = NULL;
	if (!l || up >= LISTINGS_MAX_UPSTREAMS)
		return jparse_span(buf, len, any, span);
	struct listing_up *u = &l->ups[up];
	pthread_mutex_lock(&u->lock);
	if (!u->r && !u->failed && !(u->r = jreuse_new()))
		u->failed = 1;
	if (!u->r) {
		pthread_mutex_unlock(&u->lock);
		return jparse_span(buf, len, any, span);
	}
	struct jreuse_stats a, b;
	jreuse_stats(u->r, &a);
	json_t *tree = jreuse_parse(u->r, buf, len, any, span);
	jreuse_stats(u->r, &b);
	*kept = tree ? jreuse_kept(u->r) : NULL;
	pthread_mutex_unlock(&u->lock);
	did->listings = b.listings - a.listings;
	did->whole = b.whole - a.whole;
	did->reused = b.reused - a.reused;
	did->parsed = b.parsed - a.parsed;
	return tree;
}

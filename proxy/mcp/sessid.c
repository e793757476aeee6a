/* sessid: see sessid.h.
 *
 *   buckets[hash] -> entry -> entry ...      (lookup)
 *   oldest <-> ... <-> newest                (eviction order)
 *
 * Every request of a session looks its id up; ids are issued and ended
 * (initialize, DELETE) far more rarely. So a lookup takes only its
 * bucket stripe's lock, each on a cache line of its own, and only to read:
 * two workers looking up on one stripe never wait for each other (with a
 * mutex, one preempted while holding it stalled the other for up to a
 * scheduler tick). Issuing and ending take the table's lock (the eviction
 * list and the counts), then, to write, the stripe's of each bucket they
 * change, in that order.
 */
#include "proxy/mcp/sessid.h"
#include "proxy/base/hash.h"

#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SESSID_BUCKETS 4096u
#define SESSID_STRIPES 32u    /* divides SESSID_BUCKETS */
#define SESSID_MAX_LEN 256u   /* ids are visible ASCII; longer ones are not kept */
#define SESSID_LINE 64u

struct sessid_entry {
	struct sessid_entry *chain;          /* bucket chain */
	struct sessid_entry *older, *newer;  /* eviction list */
	size_t upstream;
	enum sessid_state state;
	char id[];
};

struct stripe {
	pthread_rwlock_t lock;  /* bucket chains b with b % STRIPES == this one */
} __attribute__((aligned(SESSID_LINE)));

/* Shared by every worker. */
struct sessid {
	struct stripe stripe[SESSID_STRIPES];
	pthread_mutex_t lock;   /* the eviction list, n and the counts */
	struct sessid_entry *buckets[SESSID_BUCKETS];
	struct sessid_entry *oldest, *newest;
	size_t n, max, nlive, nended;
} __attribute__((aligned(SESSID_LINE)));

static pthread_rwlock_t *stripe_lock(struct sessid *s, uint32_t bucket)
{
	return &s->stripe[bucket % SESSID_STRIPES].lock;
}

static uint32_t hash(size_t upstream, const char *id)
{
	return hash_fnv1a32_str(HASH_FNV1A32_INIT ^ (uint32_t)upstream, id) % SESSID_BUCKETS;
}

struct sessid *sessid_new(size_t max_entries)
{
	size_t size = (sizeof(struct sessid) + SESSID_LINE - 1) & ~(size_t)(SESSID_LINE - 1);
	struct sessid *s = aligned_alloc(SESSID_LINE, size);
	if (!s)
		return NULL;
	memset(s, 0, size);
	size_t i = 0;
	while (i < SESSID_STRIPES && pthread_rwlock_init(&s->stripe[i].lock, NULL) == 0)
		i++;
	if (i < SESSID_STRIPES || pthread_mutex_init(&s->lock, NULL) != 0) {
		while (i--)
			pthread_rwlock_destroy(&s->stripe[i].lock);
		free(s);
		return NULL;
	}
	s->max = max_entries ? max_entries : 1;
	return s;
}

void sessid_free(struct sessid *s)
{
	if (!s)
		return;
	for (struct sessid_entry *e = s->oldest, *next; e; e = next) {
		next = e->newer;
		free(e);
	}
	pthread_mutex_destroy(&s->lock);
	for (size_t i = 0; i < SESSID_STRIPES; i++)
		pthread_rwlock_destroy(&s->stripe[i].lock);
	free(s);
}

/* In bucket h = hash(upstream, id). */
static struct sessid_entry *find(const struct sessid *s, uint32_t h, size_t upstream,
                                 const char *id)
{
	for (struct sessid_entry *e = s->buckets[h]; e; e = e->chain)
		if (e->upstream == upstream && strcmp(e->id, id) == 0)
			return e;
	return NULL;
}

static void count(struct sessid *s, enum sessid_state st, int delta)
{
	if (st == SESSID_LIVE)
		s->nlive += (size_t)delta;
	else if (st == SESSID_ENDED)
		s->nended += (size_t)delta;
}

/* With s->lock held. */
static void evict_oldest(struct sessid *s)
{
	struct sessid_entry *e = s->oldest;
	uint32_t h = hash(e->upstream, e->id);
	pthread_rwlock_wrlock(stripe_lock(s, h));
	struct sessid_entry **pp = &s->buckets[h];
	while (*pp != e)
		pp = &(*pp)->chain;
	*pp = e->chain;
	pthread_rwlock_unlock(stripe_lock(s, h));
	s->oldest = e->newer;
	if (s->oldest)
		s->oldest->older = NULL;
	else
		s->newest = NULL;
	count(s, e->state, -1);
	s->n--;
	free(e);
}

/* With s->lock held: chains change only under it (and, for lookups,
 * under their stripe's lock too), so this walk needs no stripe lock. */
static void set(struct sessid *s, size_t upstream, const char *id, enum sessid_state st)
{
	size_t len = strlen(id);
	if (len == 0 || len > SESSID_MAX_LEN)
		return;
	uint32_t h = hash(upstream, id);
	struct sessid_entry *e = find(s, h, upstream, id);
	if (e) {
		count(s, e->state, -1);
		pthread_rwlock_wrlock(stripe_lock(s, h));
		e->state = st;
		pthread_rwlock_unlock(stripe_lock(s, h));
		count(s, st, 1);
		return;
	}
	if (s->n >= s->max)
		evict_oldest(s);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return;
	memcpy(e->id, id, len + 1);
	e->upstream = upstream;
	e->state = st;
	pthread_rwlock_wrlock(stripe_lock(s, h));
	e->chain = s->buckets[h];
	s->buckets[h] = e;
	pthread_rwlock_unlock(stripe_lock(s, h));
	e->older = s->newest;
	e->newer = NULL;
	if (s->newest)
		s->newest->newer = e;
	else
		s->oldest = e;
	s->newest = e;
	s->n++;
	count(s, st, 1);
}

void sessid_issued(struct sessid *s, size_t upstream, const char *id)
{
	pthread_mutex_lock(&s->lock);
	set(s, upstream, id, SESSID_LIVE);
	pthread_mutex_unlock(&s->lock);
}

void sessid_ended(struct sessid *s, size_t upstream, const char *id)
{
	pthread_mutex_lock(&s->lock);
	set(s, upstream, id, SESSID_ENDED);
	pthread_mutex_unlock(&s->lock);
}

enum sessid_state sessid_lookup(struct sessid *s, size_t upstream, const char *id)
{
	if (!id)
		return SESSID_UNKNOWN;
	uint32_t h = hash(upstream, id);
	pthread_rwlock_t *lock = stripe_lock(s, h);
	pthread_rwlock_rdlock(lock);
	const struct sessid_entry *e = find(s, h, upstream, id);
	enum sessid_state st = e ? e->state : SESSID_UNKNOWN;
	pthread_rwlock_unlock(lock);
	return st;
}

size_t sessid_count(struct sessid *s, enum sessid_state state)
{
	pthread_mutex_lock(&s->lock);
	size_t n = state == SESSID_LIVE ? s->nlive : state == SESSID_ENDED ? s->nended : 0;
	pthread_mutex_unlock(&s->lock);
	return n;
}

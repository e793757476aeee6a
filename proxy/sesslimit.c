/* sesslimit: see sesslimit.h.
 *
 *   buckets[hash(up, sid)] -> entry -> entry -> ...
 *                             {up, held[kind], warned[kind], sid}
 *
 * An entry is made by the first acquire of a session and freed by the
 * release that brings every count back to zero, so an idle session costs
 * nothing and the table never needs sweeping. The buckets never move, so a
 * mutex guards a stripe of them: two workers take the same one only when
 * their sessions hash to the same stripe (one mutex for all made every
 * eighth call of two busy workers wait for the other). The critical
 * sections are a hash, a short chain walk and a counter. Each stripe sits
 * on cache lines of its own with the count of slots its sessions hold, so
 * a call's acquire and release touch no line the other worker writes but
 * the entry count's (the cap on sessions needs one count); the refusal
 * counters, written rarely, are atomics of the table.
 */
#include "proxy/sesslimit.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SESSLIMIT_MIN_BUCKETS 64u
#define SESSLIMIT_STRIPES 32u /* at most SESSLIMIT_MIN_BUCKETS; a power of two */
#define SESSLIMIT_MAX_BUCKETS 65536u

struct sesslimit_entry {
	struct sesslimit_entry *chain;     /* bucket chain */
	size_t up;
	size_t held[SESSLIMIT_NKINDS];
	unsigned char warned[SESSLIMIT_NKINDS];
	char sid[];
};

#define SESSLIMIT_LINE 64u

/* Bucket b's lock is stripe[b % STRIPES].lock. held: slots held by the
 * stripe's sessions, written under the lock, read (atomically) without. */
struct stripe {
	pthread_mutex_t lock;
	uint64_t held[SESSLIMIT_NKINDS];
} __attribute__((aligned(SESSLIMIT_LINE)));

struct sesslimit {
	struct stripe stripe[SESSLIMIT_STRIPES];
	struct sesslimit_entry **buckets;  /* owned array of owned chains */
	size_t nbuckets;                   /* a power of two */
	size_t nentries, max_entries;      /* nentries: atomic */
	struct sesslimit_stats stats;      /* atomics: refused and full only */
} __attribute__((aligned(SESSLIMIT_LINE)));

#define ADD(x, n) __atomic_add_fetch(&(x), (n), __ATOMIC_RELAXED)
#define SUB(x, n) __atomic_sub_fetch(&(x), (n), __ATOMIC_RELAXED)
#define GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* FNV-1a over the upstream index, then the id. */
static size_t bucket_of(const struct sesslimit *t, size_t up, const char *sid)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < sizeof(up); i++)
		h = (h ^ (uint32_t)((up >> (8 * i)) & 0xffu)) * 16777619u;
	for (const unsigned char *p = (const unsigned char *)sid; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h & (t->nbuckets - 1);
}

struct sesslimit *sesslimit_new(size_t max_entries)
{
	/* Aligned, so that no stripe shares a cache line with another. */
	size_t size = (sizeof(struct sesslimit) + SESSLIMIT_LINE - 1) & ~(size_t)(SESSLIMIT_LINE - 1);
	struct sesslimit *t = aligned_alloc(SESSLIMIT_LINE, size);
	if (!t)
		return NULL;
	memset(t, 0, size);
	t->max_entries = max_entries ? max_entries : 1;
	/* About two entries a chain when full; memory stays small when the
	 * cap is huge, chains just grow. */
	t->nbuckets = SESSLIMIT_MIN_BUCKETS;
	while (t->nbuckets < SESSLIMIT_MAX_BUCKETS && t->nbuckets * 2 < t->max_entries)
		t->nbuckets *= 2;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	size_t i = 0;
	while (t->buckets && i < SESSLIMIT_STRIPES && pthread_mutex_init(&t->stripe[i].lock, NULL) == 0)
		i++;
	if (i < SESSLIMIT_STRIPES) {
		while (i--)
			pthread_mutex_destroy(&t->stripe[i].lock);
		free(t->buckets);
		free(t);
		return NULL;
	}
	return t;
}

void sesslimit_free(struct sesslimit *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nbuckets; i++) {
		for (struct sesslimit_entry *e = t->buckets[i], *next; e; e = next) {
			next = e->chain;
			free(e);
		}
	}
	free(t->buckets);
	for (size_t i = 0; i < SESSLIMIT_STRIPES; i++)
		pthread_mutex_destroy(&t->stripe[i].lock);
	free(t);
}

static struct stripe *stripe_of(struct sesslimit *t, size_t bucket)
{
	return &t->stripe[bucket & (SESSLIMIT_STRIPES - 1)];
}

/* A stripe's count, changed under its lock; readers load it atomically. */
static void held_add(struct stripe *st, enum sesslimit_kind kind, int64_t d)
{
	__atomic_store_n(&st->held[kind], st->held[kind] + (uint64_t)d, __ATOMIC_RELAXED);
}

/* The entry of (up, sid) in bucket b and the link pointing at it, or NULL.
 * With b's stripe locked. */
static struct sesslimit_entry *find(struct sesslimit *t, size_t b, size_t up, const char *sid,
                                    struct sesslimit_entry ***linkp)
{
	struct sesslimit_entry **pp = &t->buckets[b];
	for (; *pp; pp = &(*pp)->chain) {
		if ((*pp)->up == up && strcmp((*pp)->sid, sid) == 0) {
			if (linkp)
				*linkp = pp;
			return *pp;
		}
	}
	if (linkp)
		*linkp = pp;
	return NULL;
}

/* A new entry at *link (the end of its chain), or NULL. Stripe locked;
 * the count is shared by every stripe: taken first, given back on failure. */
static struct sesslimit_entry *entry_add(struct sesslimit *t, size_t up, const char *sid,
                                         struct sesslimit_entry **link)
{
	size_t len = strlen(sid);
	if (ADD(t->nentries, 1) > t->max_entries) {
		SUB(t->nentries, 1);
		return NULL;
	}
	struct sesslimit_entry *e = calloc(1, sizeof(*e) + len + 1);
	if (!e) {
		SUB(t->nentries, 1);
		return NULL;
	}
	e->up = up;
	memcpy(e->sid, sid, len + 1);
	*link = e;
	return e;
}

enum sesslimit_rc sesslimit_acquire(struct sesslimit *t, size_t up, const char *sid,
                                    enum sesslimit_kind kind, size_t cap,
                                    struct sesslimit_entry **slot)
{
	enum sesslimit_rc rc = SESSLIMIT_OK;
	struct sesslimit_entry **link;

	assert(kind < SESSLIMIT_NKINDS && sid);
	size_t b = bucket_of(t, up, sid);
	struct stripe *st = stripe_of(t, b);
	pthread_mutex_lock(&st->lock);
	struct sesslimit_entry *e = find(t, b, up, sid, &link);
	if (e && cap && e->held[kind] >= cap) {
		rc = e->warned[kind] ? SESSLIMIT_OVER : SESSLIMIT_OVER_FIRST;
		e->warned[kind] = 1;
		ADD(t->stats.refused[kind], 1);
	} else if (!e && !(e = entry_add(t, up, sid, link))) {
		rc = SESSLIMIT_FULL;
		ADD(t->stats.full, 1);
	} else {
		e->held[kind]++;
		held_add(st, kind, 1);
		*slot = e;
	}
	pthread_mutex_unlock(&st->lock);
	return rc;
}

void sesslimit_release(struct sesslimit *t, struct sesslimit_entry *slot,
                       enum sesslimit_kind kind)
{
	struct sesslimit_entry **link;

	assert(kind < SESSLIMIT_NKINDS);
	size_t b = bucket_of(t, slot->up, slot->sid);
	struct stripe *st = stripe_of(t, b);
	pthread_mutex_lock(&st->lock);
	/* Releasing what was not acquired is a bug in the caller. */
	assert(slot->held[kind] > 0 && st->held[kind] > 0);
	slot->held[kind]--;
	held_add(st, kind, -1);
	int idle = 1;
	for (size_t k = 0; k < SESSLIMIT_NKINDS; k++)
		idle &= slot->held[k] == 0;
	if (idle) {
		struct sesslimit_entry *e = find(t, b, slot->up, slot->sid, &link);
		assert(e == slot);
		*link = e->chain;
		SUB(t->nentries, 1);
		free(e);
	}
	pthread_mutex_unlock(&st->lock);
}

size_t sesslimit_held(struct sesslimit *t, size_t up, const char *sid, enum sesslimit_kind kind)
{
	assert(kind < SESSLIMIT_NKINDS);
	size_t b = bucket_of(t, up, sid);
	struct stripe *st = stripe_of(t, b);
	pthread_mutex_lock(&st->lock);
	const struct sesslimit_entry *e = find(t, b, up, sid, NULL);
	size_t n = e ? e->held[kind] : 0;
	pthread_mutex_unlock(&st->lock);
	return n;
}

void sesslimit_get_stats(struct sesslimit *t, struct sesslimit_stats *out)
{
	/* Each figure on its own (a snapshot across stripes would need them
	 * all locked): a gauge, as the metrics endpoint reads it. */
	out->entries = GET(t->nentries);
	out->full = GET(t->stats.full);
	for (size_t k = 0; k < SESSLIMIT_NKINDS; k++) {
		out->held[k] = 0;
		for (size_t i = 0; i < SESSLIMIT_STRIPES; i++)
			out->held[k] += __atomic_load_n(&t->stripe[i].held[k], __ATOMIC_RELAXED);
		out->refused[k] = GET(t->stats.refused[k]);
	}
}

const char *sesslimit_kind_str(enum sesslimit_kind kind)
{
	return kind == SESSLIMIT_STREAM ? "SSE streams" : "in-flight requests";
}

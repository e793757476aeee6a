/* sesslimit: see sesslimit.h.
 *
 *   buckets[hash(up, sid)] -> entry -> entry -> ...
 *                             {up, held (both kinds in one word), warned, sid}
 *
 * Every call of every worker comes here twice (acquire, release), and a
 * session's requests reach any worker. So the common path shares as little
 * as it can and never waits for a worker that is off the CPU: on two busy
 * cores a worker is preempted thousands of times a second, and one
 * preempted inside a mutex the other needs stalls that one too, for up to
 * a scheduler tick (with a mutex per stripe, that was a visible part of
 * the proxy's p95 under wrk).
 *
 *  - An entry outlives its busy spell: it is parked (held = 0) and found
 *    again by the session's next request under the stripe's read lock.
 *    The slot is taken with a compare-and-swap on the entry's word, which
 *    checks the cap and counts in one step. Readers never wait for each
 *    other, and nothing is allocated, freed or counted table-wide.
 *  - Entries are made and freed under the stripe's write lock: a session's
 *    first request makes its entry, after freeing the parked entries of
 *    its bucket; a full table frees every stripe's parked entries before
 *    it refuses a new session; an entry with a long id, or one going idle
 *    while many are kept, is freed at once, as before: what is parked
 *    stays under SESSLIMIT_PARK_MAX entries of short ids.
 *
 * The buckets never move. Each stripe sits on cache lines of its own with
 * its counts (slots held, busy entries, entries), which the statistics
 * read atomically; the table's entry count moves only when an entry is
 * made or freed.
 */
#include "proxy/mcp/sesslimit.h"
#include "proxy/base/hash.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SESSLIMIT_MIN_BUCKETS 64u
#define SESSLIMIT_STRIPES 32u /* at most SESSLIMIT_MIN_BUCKETS; a power of two */
#define SESSLIMIT_MAX_BUCKETS 65536u
/* Entries kept between busy spells: ids up to this long (session ids are
 * UUIDs and the like), while the table holds at most this many entries.
 * The rest are freed when they go idle. */
#define SESSLIMIT_PARK_ID_MAX 256u
#define SESSLIMIT_PARK_MAX 4096u

/* Kind k's count is bits 32k..32k+31 of the held word. */
#define HELD_SHIFT(k) (32u * (unsigned)(k))
#define HELD_OF(w, k) (((w) >> HELD_SHIFT(k)) & 0xffffffffu)

struct sesslimit_entry {
	struct sesslimit_entry *chain;     /* bucket chain: changed under the write lock */
	size_t up;
	uint64_t held;                     /* atomic: both kinds' counts */
	unsigned char warned[SESSLIMIT_NKINDS];  /* atomic */
	size_t len;                        /* of sid */
	char sid[];
};

#define SESSLIMIT_LINE 64u

/* Bucket b's lock is stripe[b % STRIPES].lock. The counts are atomic:
 * held and busy move under the read lock, entries under the write lock. */
struct stripe {
	pthread_rwlock_t lock;
	uint64_t held[SESSLIMIT_NKINDS];  /* slots its sessions hold */
	int64_t busy;                      /* its entries holding a slot (may dip
	                                      below 0 for a moment: two workers'
	                                      counts land in either order) */
	size_t entries;                    /* its entries, parked or busy */
} __attribute__((aligned(SESSLIMIT_LINE)));

struct sesslimit {
	struct stripe stripe[SESSLIMIT_STRIPES];
	struct sesslimit_entry **buckets;  /* owned array of owned chains */
	size_t nbuckets;                   /* a power of two */
	size_t nentries, max_entries;      /* nentries: atomic, parked ones too */
	struct sesslimit_stats stats;      /* atomics: refused and full only */
} __attribute__((aligned(SESSLIMIT_LINE)));

#define ADD(x, n) __atomic_add_fetch(&(x), (n), __ATOMIC_RELAXED)
#define SUB(x, n) __atomic_sub_fetch(&(x), (n), __ATOMIC_RELAXED)
#define GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define PUT(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* FNV-1a over the upstream index, then the id. */
static size_t bucket_of(const struct sesslimit *t, size_t up, const char *sid, size_t len)
{
	uint32_t h = HASH_FNV1A32_INIT;
	for (size_t i = 0; i < sizeof(up); i++)
		h = hash_fnv1a32_byte(h, (unsigned char)(up >> (8 * i)));
	return hash_fnv1a32(h, sid, len) & (t->nbuckets - 1);
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
	while (t->buckets && i < SESSLIMIT_STRIPES &&
	       pthread_rwlock_init(&t->stripe[i].lock, NULL) == 0)
		i++;
	if (i < SESSLIMIT_STRIPES) {
		while (i--)
			pthread_rwlock_destroy(&t->stripe[i].lock);
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
		pthread_rwlock_destroy(&t->stripe[i].lock);
	free(t);
}

static struct stripe *stripe_of(struct sesslimit *t, size_t bucket)
{
	return &t->stripe[bucket & (SESSLIMIT_STRIPES - 1)];
}

/* The entry of (up, sid) in bucket b, or NULL; *linkp (may be NULL): the
 * link pointing at it, or the chain's end. With b's stripe locked. */
static struct sesslimit_entry *find(struct sesslimit *t, size_t b, size_t up, const char *sid,
                                    size_t len, struct sesslimit_entry ***linkp)
{
	struct sesslimit_entry **pp = &t->buckets[b];
	for (; *pp; pp = &(*pp)->chain) {
		const struct sesslimit_entry *e = *pp;
		if (e->up == up && e->len == len && memcmp(e->sid, sid, len) == 0)
			break;
	}
	if (linkp)
		*linkp = pp;
	return *pp;
}

/* Frees the parked entries of bucket b. b's stripe write-locked: no
 * reader can be taking a slot of one. */
static void sweep_bucket(struct sesslimit *t, struct stripe *st, size_t b)
{
	for (struct sesslimit_entry **pp = &t->buckets[b]; *pp;) {
		struct sesslimit_entry *e = *pp;
		if (GET(e->held) != 0) {
			pp = &e->chain;
			continue;
		}
		*pp = e->chain;
		PUT(st->entries, st->entries - 1);
		SUB(t->nentries, 1);
		free(e);
	}
}

/* A stripe with more entries than busy ones has parked entries. */
static int has_parked(struct stripe *st)
{
	int64_t busy = GET(st->busy);
	return (int64_t)GET(st->entries) > (busy > 0 ? busy : 0);
}

/* The table is full: frees parked entries, a stripe at a time (never two
 * locks at once), until there is room. */
static void sweep_full(struct sesslimit *t)
{
	for (size_t i = 0; i < SESSLIMIT_STRIPES && GET(t->nentries) >= t->max_entries; i++) {
		struct stripe *st = &t->stripe[i];
		if (!has_parked(st))
			continue;
		pthread_rwlock_wrlock(&st->lock);
		for (size_t b = i; b < t->nbuckets; b += SESSLIMIT_STRIPES)
			sweep_bucket(t, st, b);
		pthread_rwlock_unlock(&st->lock);
	}
}

/* Takes one slot of kind on e unless it holds cap (0: no cap). With e's
 * stripe locked, for reading at least. */
static enum sesslimit_rc take(struct sesslimit *t, struct stripe *st, struct sesslimit_entry *e,
                              enum sesslimit_kind kind, size_t cap, struct sesslimit_entry **slot)
{
	uint64_t old = GET(e->held);
	do {
		if (cap && HELD_OF(old, kind) >= cap) {
			int warned = __atomic_exchange_n(&e->warned[kind], 1, __ATOMIC_RELAXED);
			ADD(t->stats.refused[kind], 1);
			return warned ? SESSLIMIT_OVER : SESSLIMIT_OVER_FIRST;
		}
	} while (!__atomic_compare_exchange_n(&e->held, &old, old + ((uint64_t)1 << HELD_SHIFT(kind)),
	                                      1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	ADD(st->held[kind], 1);
	if (old == 0)
		ADD(st->busy, 1);
	*slot = e;
	return SESSLIMIT_OK;
}

/* A new entry at *link (the end of its chain), or NULL. Stripe
 * write-locked; the table's count is taken first, given back on failure. */
static struct sesslimit_entry *entry_add(struct sesslimit *t, struct stripe *st, size_t up,
                                         const char *sid, size_t len,
                                         struct sesslimit_entry **link)
{
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
	e->len = len;
	memcpy(e->sid, sid, len + 1);
	*link = e;
	PUT(st->entries, st->entries + 1);
	return e;
}

/* A session without an entry: made under the write lock. */
static enum sesslimit_rc acquire_new(struct sesslimit *t, size_t b, size_t up, const char *sid,
                                     size_t len, enum sesslimit_kind kind, size_t cap,
                                     struct sesslimit_entry **slot)
{
	struct stripe *st = stripe_of(t, b);
	struct sesslimit_entry **link;
	enum sesslimit_rc rc;

	if (GET(t->nentries) >= t->max_entries)
		sweep_full(t);
	pthread_rwlock_wrlock(&st->lock);
	/* Another worker may have made it meanwhile. */
	struct sesslimit_entry *e = find(t, b, up, sid, len, NULL);
	if (!e) {
		sweep_bucket(t, st, b);
		find(t, b, up, sid, len, &link);
		e = entry_add(t, st, up, sid, len, link);
	}
	if (e) {
		rc = take(t, st, e, kind, cap, slot);
	} else {
		rc = SESSLIMIT_FULL;
		ADD(t->stats.full, 1);
	}
	pthread_rwlock_unlock(&st->lock);
	return rc;
}

enum sesslimit_rc sesslimit_acquire(struct sesslimit *t, size_t up, const char *sid,
                                    enum sesslimit_kind kind, size_t cap,
                                    struct sesslimit_entry **slot)
{
	assert(kind < SESSLIMIT_NKINDS && sid);
	size_t len = strlen(sid);
	size_t b = bucket_of(t, up, sid, len);
	struct stripe *st = stripe_of(t, b);
	pthread_rwlock_rdlock(&st->lock);
	struct sesslimit_entry *e = find(t, b, up, sid, len, NULL);
	enum sesslimit_rc rc = e ? take(t, st, e, kind, cap, slot) : SESSLIMIT_OK;
	pthread_rwlock_unlock(&st->lock);
	return e ? rc : acquire_new(t, b, up, sid, len, kind, cap, slot);
}

void sesslimit_release(struct sesslimit *t, struct sesslimit_entry *slot,
                       enum sesslimit_kind kind)
{
	assert(kind < SESSLIMIT_NKINDS);
	/* slot is valid until its count drops: read what is needed first. */
	size_t b = bucket_of(t, slot->up, slot->sid, slot->len);
	struct stripe *st = stripe_of(t, b);
	int sweep = 0;
	pthread_rwlock_rdlock(&st->lock);
	uint64_t one = (uint64_t)1 << HELD_SHIFT(kind);
	uint64_t old = __atomic_fetch_sub(&slot->held, one, __ATOMIC_RELAXED);
	/* Releasing what was not acquired is a bug in the caller. */
	assert(HELD_OF(old, kind) > 0);
	SUB(st->held[kind], 1);
	if (old == one) {
		/* Idle: the next busy spell is news again (a warning). */
		SUB(st->busy, 1);
		for (size_t k = 0; k < SESSLIMIT_NKINDS; k++)
			PUT(slot->warned[k], 0);
		sweep = slot->len > SESSLIMIT_PARK_ID_MAX || GET(t->nentries) > SESSLIMIT_PARK_MAX;
	}
	pthread_rwlock_unlock(&st->lock);
	if (sweep) {
		pthread_rwlock_wrlock(&st->lock);
		sweep_bucket(t, st, b);
		pthread_rwlock_unlock(&st->lock);
	}
}

size_t sesslimit_held(struct sesslimit *t, size_t up, const char *sid, enum sesslimit_kind kind)
{
	assert(kind < SESSLIMIT_NKINDS);
	size_t len = strlen(sid);
	size_t b = bucket_of(t, up, sid, len);
	struct stripe *st = stripe_of(t, b);
	pthread_rwlock_rdlock(&st->lock);
	const struct sesslimit_entry *e = find(t, b, up, sid, len, NULL);
	size_t n = e ? (size_t)HELD_OF(GET(e->held), kind) : 0;
	pthread_rwlock_unlock(&st->lock);
	return n;
}

void sesslimit_get_stats(struct sesslimit *t, struct sesslimit_stats *out)
{
	/* Each figure on its own (a snapshot across stripes would need them
	 * all locked): a gauge, as the metrics endpoint reads it. */
	int64_t busy = 0;
	out->full = GET(t->stats.full);
	out->parked = 0;
	for (size_t i = 0; i < SESSLIMIT_STRIPES; i++) {
		int64_t b = GET(t->stripe[i].busy);
		size_t n = GET(t->stripe[i].entries), nb = b > 0 ? (size_t)b : 0;
		busy += b;
		out->parked += n > nb ? n - nb : 0;
	}
	out->entries = busy > 0 ? (uint64_t)busy : 0;
	for (size_t k = 0; k < SESSLIMIT_NKINDS; k++) {
		out->held[k] = 0;
		for (size_t i = 0; i < SESSLIMIT_STRIPES; i++)
			out->held[k] += GET(t->stripe[i].held[k]);
		out->refused[k] = GET(t->stats.refused[k]);
	}
}

const char *sesslimit_kind_str(enum sesslimit_kind kind)
{
	return kind == SESSLIMIT_STREAM ? "SSE streams" : "in-flight requests";
}

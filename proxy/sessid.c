/* sessid: see sessid.h.
 *
 *   buckets[hash] -> entry -> entry ...      (lookup)
 *   oldest <-> ... <-> newest                (eviction order)
 */
#include "proxy/sessid.h"

#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SESSID_BUCKETS 4096u
#define SESSID_MAX_LEN 256u   /* ids are visible ASCII; longer ones are not kept */

struct sessid_entry {
	struct sessid_entry *chain;          /* bucket chain */
	struct sessid_entry *older, *newer;  /* eviction list */
	size_t upstream;
	enum sessid_state state;
	char id[];
};

/* Shared by every worker: each entry point takes the lock. */
struct sessid {
	pthread_mutex_t lock;
	struct sessid_entry *buckets[SESSID_BUCKETS];
	struct sessid_entry *oldest, *newest;
	size_t n, max, nlive, nended;
};

static uint32_t hash(size_t upstream, const char *id)
{
	uint32_t h = 2166136261u ^ (uint32_t)upstream; /* FNV-1a */
	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return h % SESSID_BUCKETS;
}

struct sessid *sessid_new(size_t max_entries)
{
	struct sessid *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
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
	free(s);
}

static struct sessid_entry *find(const struct sessid *s, size_t upstream, const char *id)
{
	for (struct sessid_entry *e = s->buckets[hash(upstream, id)]; e; e = e->chain)
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

static void evict_oldest(struct sessid *s)
{
	struct sessid_entry *e = s->oldest;
	struct sessid_entry **pp = &s->buckets[hash(e->upstream, e->id)];
	while (*pp != e)
		pp = &(*pp)->chain;
	*pp = e->chain;
	s->oldest = e->newer;
	if (s->oldest)
		s->oldest->older = NULL;
	else
		s->newest = NULL;
	count(s, e->state, -1);
	s->n--;
	free(e);
}

static void set(struct sessid *s, size_t upstream, const char *id, enum sessid_state st)
{
	size_t len = strlen(id);
	if (len == 0 || len > SESSID_MAX_LEN)
		return;
	struct sessid_entry *e = find(s, upstream, id);
	if (e) {
		count(s, e->state, -1);
		e->state = st;
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
	uint32_t h = hash(upstream, id);
	e->chain = s->buckets[h];
	s->buckets[h] = e;
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
	pthread_mutex_lock(&s->lock);
	const struct sessid_entry *e = find(s, upstream, id);
	enum sessid_state st = e ? e->state : SESSID_UNKNOWN;
	pthread_mutex_unlock(&s->lock);
	return st;
}

size_t sessid_count(struct sessid *s, enum sessid_state state)
{
	pthread_mutex_lock(&s->lock);
	size_t n = state == SESSID_LIVE ? s->nlive : state == SESSID_ENDED ? s->nended : 0;
	pthread_mutex_unlock(&s->lock);
	return n;
}

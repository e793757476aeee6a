/* peers: see peers.h. A chained hash table of address -> count; entries go
 * away when their count drops to zero, so memory follows open connections. */
#include "proxy/net/peers.h"
#include "proxy/base/hash.h"

#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PEERS_BUCKETS 1024u

struct peer {
	struct peer *next;
	size_t count;
	char ip[];
};

/* Shared by every worker: each entry point takes the lock. */
struct peers {
	pthread_mutex_t lock;
	struct peer *b[PEERS_BUCKETS];
};

static uint32_t hash(const char *s)
{
	return hash_fnv1a32_str(HASH_FNV1A32_INIT, s) % PEERS_BUCKETS;
}

struct peers *peers_new(void)
{
	struct peers *p = calloc(1, sizeof(struct peers));
	if (p && pthread_mutex_init(&p->lock, NULL) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

void peers_free(struct peers *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < PEERS_BUCKETS; i++)
		for (struct peer *e = p->b[i], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static size_t add(struct peers *p, const char *ip)
{
	uint32_t h = hash(ip);
	for (struct peer *e = p->b[h]; e; e = e->next)
		if (strcmp(e->ip, ip) == 0)
			return ++e->count;
	size_t n = strlen(ip);
	struct peer *e = malloc(sizeof(*e) + n + 1);
	if (!e)
		return 0;
	memcpy(e->ip, ip, n + 1);
	e->count = 1;
	e->next = p->b[h];
	p->b[h] = e;
	return 1;
}

size_t peers_add(struct peers *p, const char *ip)
{
	pthread_mutex_lock(&p->lock);
	size_t n = add(p, ip);
	pthread_mutex_unlock(&p->lock);
	return n;
}

static void drop(struct peers *p, const char *ip)
{
	for (struct peer **pp = &p->b[hash(ip)]; *pp; pp = &(*pp)->next) {
		struct peer *e = *pp;
		if (strcmp(e->ip, ip) == 0) {
			if (--e->count == 0) {
				*pp = e->next;
				free(e);
			}
			return;
		}
	}
}

void peers_remove(struct peers *p, const char *ip)
{
	pthread_mutex_lock(&p->lock);
	drop(p, ip);
	pthread_mutex_unlock(&p->lock);
}

/* peers: see peers.h. A chained hash table of address -> count; entries go
 * away when their count drops to zero, so memory follows open connections. */
#include "proxy/peers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PEERS_BUCKETS 1024u

struct peer {
	struct peer *next;
	size_t count;
	char ip[];
};

struct peers {
	struct peer *b[PEERS_BUCKETS];
};

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % PEERS_BUCKETS;
}

struct peers *peers_new(void)
{
	return calloc(1, sizeof(struct peers));
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
	free(p);
}

size_t peers_add(struct peers *p, const char *ip)
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

void peers_remove(struct peers *p, const char *ip)
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

/* peers: open connections per client address, for the per-client cap
 * (limits.max_connections_per_client): one address must not be able to
 * take every connection slot. */
#ifndef MCPWARDEN_PEERS_H
#define MCPWARDEN_PEERS_H

#include <stddef.h>

struct peers;

struct peers *peers_new(void);
void peers_free(struct peers *p);
/* One more connection from ip; returns how many are now open (0 when out
 * of memory: the caller then lets the connection in, uncounted). */
size_t peers_add(struct peers *p, const char *ip);
/* One fewer (after a successful peers_add). */
void peers_remove(struct peers *p, const char *ip);

#endif

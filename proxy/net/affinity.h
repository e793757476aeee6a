/* affinity: which worker holds each translated session.
 *
 * A translated session (proxy/mcp/session.c) lives on the worker whose loop
 * created it: its upstream connection, timers and client streams are that
 * loop's. A later request naming the session may reach any worker (the
 * kernel spreads connections over the workers' sockets), so it is handed
 * to the owner (conn.c's handoff). This table, shared by every worker and
 * guarded by a mutex, says who the owner is.
 */
#ifndef MCPWARDEN_AFFINITY_H
#define MCPWARDEN_AFFINITY_H

struct affinity;

struct affinity *affinity_new(void);
void affinity_free(struct affinity *a);  /* accepts NULL */

/* Records that worker `worker` holds session `id` (0, or -1: out of
 * memory, and the session can then only be reached on its own worker). */
int affinity_set(struct affinity *a, const char *id, unsigned worker);
void affinity_forget(struct affinity *a, const char *id);
/* The worker holding `id`, or -1. Costs no lock while no session is
 * held at all (the common case of pass-through traffic). */
int affinity_get(struct affinity *a, const char *id);

#endif

/* loop: a worker's event loop, which gives its core away after running
 * for a slice without a pause.
 *
 * On a machine where the proxy shares its cores with other busy threads
 * (the MCP server it fronts, the clients, the other workers), a worker
 * that always finds more events ready never sleeps, and the kernel lets it
 * run until the next scheduler tick (4 ms at 250 Hz) while the threads its
 * own requests wait for (the upstream's, the client's) sit runnable behind
 * it: that tick is what a request's p99 then shows. So after each batch of
 * events, a worker that spent at least 90% of the last `slice_us` on the
 * CPU calls sched_yield(): runnable threads on its core go first, and when
 * there are none it goes straight on (one syscall per slice).
 *
 * Not here: which events run (libevent's), priorities, CPU affinity.
 */
#ifndef MCPWARDEN_LOOP_H
#define MCPWARDEN_LOOP_H

#include <stdint.h>

struct event_base;

/* Runs base until it has no events or its loop is broken or exited, as
 * event_base_dispatch. slice_us 0: exactly event_base_dispatch. *yields
 * (may be NULL) counts the times the core was given away: written by this
 * thread only, with relaxed atomic stores, so others may read it. Returns as
 * event_base_dispatch: 0, 1 (no events), -1 (error). */
int loop_run(struct event_base *base, unsigned slice_us, uint64_t *yields);

#endif

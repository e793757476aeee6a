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
 * The clocks and the yield are reached through struct loop_clock so that a
 * test can drive them (tests/unit/net/test_loop.c): whether a real thread got
 * 90% of a slice depends on everything else the machine runs, so a test on
 * the real clocks can only bound the count from above.
 *
 * Not here: which events run (libevent's), priorities, CPU affinity.
 */
#ifndef MCPWARDEN_LOOP_H
#define MCPWARDEN_LOOP_H

#include <stdint.h>

struct event_base;

/* A clock reading in nanoseconds; arg is loop_clock's. */
typedef uint64_t loop_clock_fn(void *arg);
/* Gives the core away; arg is loop_clock's. */
typedef void loop_yield_fn(void *arg);

/* What loop_run_clock reads and calls. */
struct loop_clock {
	loop_clock_fn *wall_ns; /* monotonic time (CLOCK_MONOTONIC) */
	loop_clock_fn *cpu_ns;  /* this thread's CPU time (CLOCK_THREAD_CPUTIME_ID) */
	loop_yield_fn *yield;   /* sched_yield() */
	void *arg;              /* borrowed: passed to the three */
};

/* Runs base until it has no events or its loop is broken or exited, as
 * event_base_dispatch. slice_us 0: exactly event_base_dispatch. *yields
 * (may be NULL) counts the times the core was given away: written by this
 * thread only, with relaxed atomic stores, so others may read it. Returns as
 * event_base_dispatch: 0, 1 (no events), -1 (error). */
int loop_run(struct event_base *base, unsigned slice_us, uint64_t *yields);

/* loop_run on the clocks and yield of clk (borrowed for the call). */
int loop_run_clock(struct event_base *base, unsigned slice_us, uint64_t *yields,
                   const struct loop_clock *clk);

#endif

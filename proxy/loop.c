/* loop: see loop.h. */
#include "proxy/loop.h"

#include <sched.h>
#include <time.h>

#include <event2/event.h>

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int loop_run(struct event_base *base, unsigned slice_us, uint64_t *yields)
{
	if (!slice_us)
		return event_base_dispatch(base);
	uint64_t slice = (uint64_t)slice_us * 1000u;
	/* The wall clock is read after every batch (vDSO); the thread's CPU
	 * clock (a syscall) once a slice. */
	uint64_t wall0 = clock_ns(CLOCK_MONOTONIC), cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (;;) {
		/* One batch: wait for events (unless some are ready), run them. */
		int rc = event_base_loop(base, EVLOOP_ONCE);
		if (rc != 0 || event_base_got_break(base) || event_base_got_exit(base))
			return rc;
		uint64_t wall = clock_ns(CLOCK_MONOTONIC);
		if (wall - wall0 < slice)
			continue;
		uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		/* On the CPU nine tenths of the slice: it did not sleep (nor was
		 * it kept waiting by the kernel) to speak of. */
		if ((cpu - cpu0) * 10 >= (wall - wall0) * 9) {
			sched_yield();
			if (yields) /* read by the admin endpoint's thread */
				__atomic_store_n(yields, *yields + 1, __ATOMIC_RELAXED);
		}
		wall0 = clock_ns(CLOCK_MONOTONIC);
		cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	}
}

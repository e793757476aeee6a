/* loop: see loop.h. */
#include "proxy/net/loop.h"
#include "proxy/base/clock.h"

#include <sched.h>
#include <time.h>

#include <event2/event.h>

static uint64_t real_wall_ns(void *arg)
{
	(void)arg;
	return clock_mono_ns();
}

static uint64_t real_cpu_ns(void *arg)
{
	(void)arg;
	return clock_cpu_ns();
}

static void real_yield(void *arg)
{
	(void)arg;
	sched_yield();
}

static const struct loop_clock real_clock = {
	.wall_ns = real_wall_ns, .cpu_ns = real_cpu_ns, .yield = real_yield, .arg = NULL,
};

int loop_run(struct event_base *base, unsigned slice_us, uint64_t *yields)
{
	return loop_run_clock(base, slice_us, yields, &real_clock);
}

int loop_run_clock(struct event_base *base, unsigned slice_us, uint64_t *yields,
                   const struct loop_clock *clk)
{
	if (!slice_us)
		return event_base_dispatch(base);
	uint64_t slice = (uint64_t)slice_us * 1000u;
	/* The wall clock is read after every batch (vDSO); the thread's CPU
	 * clock (a syscall) once a slice, twice when it yields. */
	uint64_t wall0 = clk->wall_ns(clk->arg), cpu0 = clk->cpu_ns(clk->arg);
	for (;;) {
		/* One batch: wait for events (unless some are ready), run them. */
		int rc = event_base_loop(base, EVLOOP_ONCE);
		if (rc != 0 || event_base_got_break(base) || event_base_got_exit(base))
			return rc;
		uint64_t wall = clk->wall_ns(clk->arg);
		if (wall - wall0 < slice)
			continue;
		uint64_t cpu = clk->cpu_ns(clk->arg);
		/* On the CPU nine tenths of the slice: it did not sleep (nor was
		 * it kept waiting by the kernel) to speak of. */
		if ((cpu - cpu0) * 10 >= (wall - wall0) * 9) {
			clk->yield(clk->arg);
			if (yields) /* read by the admin endpoint's thread */
				__atomic_store_n(yields, *yields + 1, __ATOMIC_RELAXED);
			/* The next slice starts after the yield: the time other
			 * threads ran meanwhile is not a pause of this one. */
			wall = clk->wall_ns(clk->arg);
			cpu = clk->cpu_ns(clk->arg);
		}
		/* Without a yield the readings above start the next slice: a
		 * worker woken after a pause (every wake-up of a quiet one ends
		 * a slice) reads its CPU clock, a syscall, once. */
		wall0 = wall;
		cpu0 = cpu;
	}
}

/* clock: the one place mcpwarden reads a clock.
 *
 *   clock_mono_us()         CLOCK_MONOTONIC in µs: durations (a call's
 *                           latency, an idle session's age). Never steps.
 *   clock_mono_ns()         the same in ns (the loop's time slice).
 *   clock_cpu_ns()          this thread's CPU time in ns (a syscall on
 *                           most kernels: read it seldom).
 *   clock_mono_coarse()     CLOCK_MONOTONIC_COARSE as a timespec: timeouts.
 *   clock_mono_coarse_us()  the same in µs. Coarse is a few instructions
 *                           in the vDSO; a timeout needs no better than
 *                           the kernel's tick.
 *   clock_real_us()         CLOCK_REALTIME in µs: timestamps people read
 *                           (a record's "ts"). Can step; never subtract two.
 *
 * Static inline because the monotonic clock is read on every call's hot
 * path (perf-guard counts those instructions): a function call per read
 * would show. Pure: no state, no I/O beyond the vDSO.
 * Not here: the event loop's cached time (libevent's), which follows the
 * wall clock.
 */
#ifndef MCPWARDEN_CLOCK_H
#define MCPWARDEN_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ts_us(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000u + (uint64_t)ts->tv_nsec / 1000u;
}

static inline uint64_t clock_ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

static inline uint64_t clock_mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return clock_ts_us(&ts);
}

static inline uint64_t clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return clock_ts_ns(&ts);
}

static inline uint64_t clock_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return clock_ts_ns(&ts);
}

static inline void clock_mono_coarse(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC_COARSE, ts);
}

static inline uint64_t clock_mono_coarse_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return clock_ts_us(&ts);
}

static inline uint64_t clock_real_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return clock_ts_us(&ts);
}

#endif

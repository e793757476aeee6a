/* Unit tests for proxy/base/clock.h: each helper reads the clock it
 * names, in the unit it names (compared with a direct clock_gettime read
 * taken around it), and the monotonic ones never go back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "proxy/base/clock.h"

static uint64_t raw_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_conversions(void **state)
{
	(void)state;
	struct timespec ts = {.tv_sec = 3, .tv_nsec = 999999999};
	assert_int_equal(clock_ts_us(&ts), 3999999u);
	assert_int_equal(clock_ts_ns(&ts), 3999999999u);
	ts.tv_sec = 4000000000; /* past 2^32 seconds: no 32-bit overflow */
	ts.tv_nsec = 1000;
	assert_true(clock_ts_us(&ts) == 4000000000ull * 1000000u + 1);
}

static void test_mono_is_monotonic_in_us(void **state)
{
	(void)state;
	uint64_t before = raw_ns(CLOCK_MONOTONIC) / 1000u;
	uint64_t a = clock_mono_us();
	uint64_t b = clock_mono_us();
	uint64_t after = raw_ns(CLOCK_MONOTONIC) / 1000u;
	assert_true(before <= a && a <= b && b <= after);
	uint64_t n0 = raw_ns(CLOCK_MONOTONIC), n = clock_mono_ns(), n1 = raw_ns(CLOCK_MONOTONIC);
	assert_true(n0 <= n && n <= n1);
}

static void test_coarse_is_the_coarse_clock(void **state)
{
	(void)state;
	uint64_t before = raw_ns(CLOCK_MONOTONIC_COARSE) / 1000u;
	uint64_t a = clock_mono_coarse_us();
	struct timespec ts;
	clock_mono_coarse(&ts);
	uint64_t after = raw_ns(CLOCK_MONOTONIC_COARSE) / 1000u;
	assert_true(before <= a && a <= clock_ts_us(&ts) && clock_ts_us(&ts) <= after);
}

static void test_real_is_the_wall_clock(void **state)
{
	(void)state;
	uint64_t before = raw_ns(CLOCK_REALTIME) / 1000u;
	uint64_t a = clock_real_us();
	uint64_t after = raw_ns(CLOCK_REALTIME) / 1000u;
	assert_true(before <= a && a <= after);
	assert_true(a > 1600000000ull * 1000000u); /* after 2020: seconds, not ms */
}

static void test_cpu_counts_this_thread(void **state)
{
	(void)state;
	uint64_t c0 = clock_cpu_ns();
	volatile uint64_t x = 0;
	while (clock_cpu_ns() - c0 < 2000000u) /* 2 ms of work */
		x++;
	assert_true(x > 0);
	assert_true(clock_cpu_ns() <= raw_ns(CLOCK_THREAD_CPUTIME_ID));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conversions),
		cmocka_unit_test(test_mono_is_monotonic_in_us),
		cmocka_unit_test(test_coarse_is_the_coarse_clock),
		cmocka_unit_test(test_real_is_the_wall_clock),
		cmocka_unit_test(test_cpu_counts_this_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

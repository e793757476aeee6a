/* Unit tests for proxy/net/loop.c: the loop ends as event_base_dispatch does,
 * and gives its core away only after running a whole slice without a
 * pause.
 *
 * Whether a real thread ran 90% of a slice depends on what else the
 * machine runs (another thread waking on the same core every few hundred
 * µs is enough to keep every slice under 90%), so the yield decisions are
 * tested on a clock the test drives (loop_run_clock): each batch of events
 * moves the wall and CPU clocks by the amounts the case gives, and the
 * counts are exact. On the real clocks only what no scheduling can change
 * is asserted: a yield needs 90% of a slice of CPU time, so the yields are
 * at most the CPU time used over 0.9 slice, and a loop that sleeps between
 * batches never yields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "proxy/net/loop.h"
#include "tests/unit/helpers.h"
#include "proxy/base/clock.h"

/* ---- a driven clock ---------------------------------------------------- */

/* `count` batches, each moving the wall clock by wall_us and the thread's
 * CPU clock by cpu_us (cpu_us < wall_us: the thread slept or waited). */
struct phase {
	unsigned count, wall_us, cpu_us;
};

#define MAX_PHASES 8
#define MAX_YIELDS 256

struct fake {
	uint64_t wall, cpu; /* ns */
	unsigned reads;     /* clock reads, both clocks */
	unsigned cpu_reads; /* of the CPU clock (a syscall each on the real one) */
	uint64_t yield_wall_us; /* how long a yield keeps the thread off the CPU */
	struct phase phases[MAX_PHASES];
	unsigned nphases, phase, in_phase;
	unsigned batches;               /* batches run */
	unsigned yields_at[MAX_YIELDS]; /* batches run when each yield came */
	unsigned nyields;
};

static uint64_t fake_wall(void *arg)
{
	struct fake *f = arg;
	f->reads++;
	return f->wall;
}

static uint64_t fake_cpu(void *arg)
{
	struct fake *f = arg;
	f->reads++;
	f->cpu_reads++;
	return f->cpu;
}

static void fake_yield(void *arg)
{
	struct fake *f = arg;
	assert_true(f->nyields < MAX_YIELDS);
	f->yields_at[f->nyields++] = f->batches;
	f->wall += f->yield_wall_us * 1000u;
}

/* A socket that stays readable (its byte is never read): a loop that
 * always has work, one batch per epoll_wait as with clients that keep
 * sending. (An event activating itself would not do: libevent runs it
 * again within the same batch.) Each batch moves the fake clock by its
 * phase's step (or, on the real clock, spins spin_us of CPU time); after
 * the last batch the callback breaks or exits the loop. */
struct busy {
	struct event *ev;
	struct event_base *base;
	struct fake *fake; /* NULL: real clock */
	unsigned spin_us, left;
	int exit_instead;
};

static void busy_cb(evutil_socket_t fd, short what, void *arg)
{
	struct busy *b = arg;
	(void)fd;
	(void)what;
	struct fake *f = b->fake;
	if (f) {
		while (f->in_phase == f->phases[f->phase].count) {
			f->phase++;
			f->in_phase = 0;
			assert_true(f->phase < f->nphases);
		}
		f->wall += (uint64_t)f->phases[f->phase].wall_us * 1000u;
		f->cpu += (uint64_t)f->phases[f->phase].cpu_us * 1000u;
		f->in_phase++;
		f->batches++;
	} else {
		uint64_t end = clock_cpu_ns() + (uint64_t)b->spin_us * 1000u;
		while (clock_cpu_ns() < end)
			;
	}
	if (--b->left == 0) {
		event_del(b->ev);
		if (b->exit_instead)
			event_base_loopexit(b->base, NULL);
		else
			event_base_loopbreak(b->base);
	}
}

/* Runs `rounds` batches through loop_run_clock on `f` (NULL: loop_run on
 * the real clocks, spin_us a batch); returns the yield counter. */
static uint64_t run_busy(struct fake *f, unsigned slice_us, unsigned spin_us, unsigned rounds,
                         int exit_instead, int *rc)
{
	struct event_base *base = event_base_new();
	assert_non_null(base);
	struct busy b = {.base = base, .fake = f, .spin_us = spin_us, .left = rounds,
	                 .exit_instead = exit_instead};
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(write(sv[1], "x", 1), 1);
	b.ev = event_new(base, sv[0], EV_READ | EV_PERSIST, busy_cb, &b);
	assert_non_null(b.ev);
	assert_int_equal(event_add(b.ev, NULL), 0);
	uint64_t yields = 0;
	if (f) {
		struct loop_clock clk = {.wall_ns = fake_wall, .cpu_ns = fake_cpu,
		                         .yield = fake_yield, .arg = f};
		*rc = loop_run_clock(base, slice_us, &yields, &clk);
	} else {
		*rc = loop_run(base, slice_us, &yields);
	}
	assert_int_equal(b.left, 0);
	event_free(b.ev);
	event_base_free(base);
	close(sv[0]);
	close(sv[1]);
	return yields;
}

/* The fake clock's phases, from a list ending in {0}. */
static unsigned set_phases(struct fake *f, const struct phase *p)
{
	unsigned total = 0;
	f->nphases = 0;
	for (; p->count; p++) {
		assert_true(f->nphases < MAX_PHASES);
		f->phases[f->nphases++] = *p;
		total += p->count;
	}
	return total;
}

/* The batch that ends the loop returns before the clock is read after it
 * (a break) or not (an exit), so each case runs one batch past its last
 * whole slice: the counts are then the same either way. */
static uint64_t run_phases(struct fake *f, unsigned slice_us, const struct phase *p, int exit_instead)
{
	int rc = -2;
	unsigned n = set_phases(f, p);
	uint64_t y = run_busy(f, slice_us, 0, n, exit_instead, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(f->batches, n);
	/* The counter says what the loop did. */
	assert_int_equal(y, f->nyields);
	return y;
}

/* ---- yield decisions, on the driven clock -------------------------------- */

/* Busy without a pause, 200 µs batches, 1 ms slice: one yield every 5
 * batches, never one a batch; the loop ends on a break and on an exit
 * alike. */
static void test_busy_loop_yields_once_a_slice(void **state)
{
	(void)state;
	for (int exit_instead = 0; exit_instead <= 1; exit_instead++) {
		struct fake f = {0};
		const struct phase p[] = {{201, 200, 200}, {0}};
		assert_int_equal(run_phases(&f, 1000, p, exit_instead), 40);
		for (unsigned i = 0; i < f.nyields; i++)
			assert_int_equal(f.yields_at[i], 5 * (i + 1));
	}
}

/* The line is at 90% of the slice: a thread kept off the CPU 15% of each
 * batch never yields, one on it exactly 90% yields each slice. */
static void test_ninety_percent_is_the_line(void **state)
{
	(void)state;
	struct fake f = {0};
	const struct phase kept_waiting[] = {{201, 200, 170}, {0}};
	assert_int_equal(run_phases(&f, 1000, kept_waiting, 0), 0);

	struct fake g = {0};
	const struct phase on_cpu[] = {{201, 200, 180}, {0}};
	assert_int_equal(run_phases(&g, 1000, on_cpu, 0), 40);
}

/* A pause anywhere in a slice means no yield for it, and the next slice
 * starts after it: 4 busy batches then a 5 ms wait (5.8 ms, 0.81 ms on
 * the CPU), 3 busy then 300 µs waiting then 1 busy (1.1 ms, 0.81 ms), then
 * 5 busy: one yield, at the end of those 5. */
static void test_pause_means_no_yield_for_that_slice(void **state)
{
	(void)state;
	struct fake f = {0};
	const struct phase p[] = {
		{4, 200, 200}, {1, 5000, 10},           /* slice 1: ends in a long wait */
		{3, 200, 200}, {1, 300, 10}, {1, 200, 200}, /* slice 2: a short wait in it */
		{6, 200, 200},                            /* slice 3: busy */
		{0},
	};
	assert_int_equal(run_phases(&f, 1000, p, 0), 1);
	assert_int_equal(f.yields_at[0], 15);
}

/* While the thread has given its core away, others run: the slice after
 * a yield starts when it is back, so 3 ms spent yielded is not a pause
 * and it still yields every 5 batches. */
static void test_time_yielded_is_not_a_pause(void **state)
{
	(void)state;
	struct fake f = {.yield_wall_us = 3000};
	const struct phase p[] = {{101, 200, 200}, {0}};
	assert_int_equal(run_phases(&f, 1000, p, 0), 20);
	for (unsigned i = 0; i < f.nyields; i++)
		assert_int_equal(f.yields_at[i], 5 * (i + 1));
}

/* A loop that waits for its events (10 ms each, 10 µs of work) never
 * yields. */
static void test_waiting_loop_does_not_yield_driven(void **state)
{
	(void)state;
	struct fake f = {0};
	const struct phase p[] = {{50, 10000, 10}, {0}};
	assert_int_equal(run_phases(&f, 1000, p, 0), 0);
	/* Each wake-up ends a slice: the CPU clock is read once for it (and
	 * once before the first), not again to start the next slice. */
	assert_int_equal(f.cpu_reads, 1 + 49);
}

/* A yield costs two readings of the CPU clock (the decision, the start
 * of the next slice): 40 yields in 201 batches of 200 µs, 1 + 80. */
static void test_cpu_clock_reads_per_slice(void **state)
{
	(void)state;
	struct fake f = {0};
	const struct phase p[] = {{201, 200, 200}, {0}};
	assert_int_equal(run_phases(&f, 1000, p, 0), 40);
	assert_int_equal(f.cpu_reads, 1 + 2 * 40);
}

/* Slice 0: event_base_dispatch: the clocks are not even read. */
static void test_slice_zero_is_dispatch(void **state)
{
	(void)state;
	struct fake f = {0};
	int rc = -2;
	unsigned n = set_phases(&f, (const struct phase[]){{50, 200, 200}, {0}});
	assert_int_equal(run_busy(&f, 0, 0, n, 0, &rc), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(f.reads, 0);
	assert_int_equal(f.nyields, 0);
}

/* ---- the real clocks: what scheduling cannot change ------------------------ */

/* Busy for 40 ms of CPU in 200 µs batches on a 1 ms slice: each yield
 * took a slice with at least 0.9 ms on the CPU, so at most 44 of them
 * (fewer when the thread is kept off the CPU: then it had a pause). With
 * no counter the loop runs as well. */
static void test_real_clock_yields_need_cpu_time(void **state)
{
	(void)state;
	const unsigned slice_us = 1000;
	int rc = -2;
	uint64_t cpu0 = clock_cpu_ns();
	uint64_t y = run_busy(NULL, slice_us, 200, 200, 0, &rc);
	uint64_t cpu = clock_cpu_ns() - cpu0;
	assert_int_equal(rc, 0);
	if (y * 9 * slice_us * 1000u > cpu * 10)
		fail_msg("%llu yields in %llu µs of CPU", (unsigned long long)y,
		         (unsigned long long)(cpu / 1000));
	assert_int_equal(run_busy(NULL, 0, 200, 50, 0, &rc), 0);
	assert_int_equal(rc, 0);
}

/* A loop that sleeps between its events (a timer every 10 ms) can never
 * have run 90% of a slice: no yield, and it returns 1 when no event is
 * left, as event_base_dispatch. */
struct sleepy {
	struct event *ev;
	unsigned left;
};

static void sleepy_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sleepy *s = arg;
	(void)fd;
	(void)what;
	if (--s->left) {
		struct timeval tv = {0, 10000};
		evtimer_add(s->ev, &tv);
	}
}

static void test_real_clock_waiting_loop_does_not_yield(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct sleepy s = {.left = 10};
	s.ev = evtimer_new(base, sleepy_cb, &s);
	struct timeval tv = {0, 10000};
	evtimer_add(s.ev, &tv);
	uint64_t yields = 0;
	assert_int_equal(loop_run(base, 1000, &yields), 1);
	assert_int_equal(s.left, 0);
	assert_int_equal(yields, 0);
	/* No events at all: returns 1 at once, with or without a counter. */
	assert_int_equal(loop_run(base, 1000, NULL), 1);
	event_free(s.ev);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_loop_yields_once_a_slice),
		cmocka_unit_test(test_ninety_percent_is_the_line),
		cmocka_unit_test(test_pause_means_no_yield_for_that_slice),
		cmocka_unit_test(test_time_yielded_is_not_a_pause),
		cmocka_unit_test(test_waiting_loop_does_not_yield_driven),
		cmocka_unit_test(test_cpu_clock_reads_per_slice),
		cmocka_unit_test(test_slice_zero_is_dispatch),
		cmocka_unit_test(test_real_clock_yields_need_cpu_time),
		cmocka_unit_test(test_real_clock_waiting_loop_does_not_yield),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for proxy/loop.c: the loop ends as event_base_dispatch does,
 * and gives its core away only after running a whole slice without a
 * pause. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "proxy/loop.h"

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A socket that stays readable (its byte is never read): a loop that
 * always has work, a batch per epoll_wait as with clients that keep
 * sending. The callback keeps the CPU busy for `spin_us`, `left` times,
 * then breaks or exits the loop. (An event activating itself would not
 * do: libevent runs it again within the same batch.) */
struct busy {
	struct event *ev;
	struct event_base *base;
	unsigned spin_us, left;
	int exit_instead;
};

static void busy_cb(evutil_socket_t fd, short what, void *arg)
{
	struct busy *b = arg;
	(void)fd;
	(void)what;
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + (uint64_t)b->spin_us * 1000u;
	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		;
	if (--b->left == 0) {
		event_del(b->ev);
		if (b->exit_instead)
			event_base_loopexit(b->base, NULL);
		else
			event_base_loopbreak(b->base);
		return;
	}
}

static uint64_t run_busy(unsigned slice_us, unsigned spin_us, unsigned rounds, int exit_instead,
                         int *rc)
{
	struct event_base *base = event_base_new();
	assert_non_null(base);
	struct busy b = {.base = base, .spin_us = spin_us, .left = rounds,
	                 .exit_instead = exit_instead};
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(write(sv[1], "x", 1), 1);
	b.ev = event_new(base, sv[0], EV_READ | EV_PERSIST, busy_cb, &b);
	assert_non_null(b.ev);
	assert_int_equal(event_add(b.ev, NULL), 0);
	uint64_t yields = 0;
	*rc = loop_run(base, slice_us, &yields);
	assert_int_equal(b.left, 0);
	event_free(b.ev);
	event_base_free(base);
	close(sv[0]);
	close(sv[1]);
	return yields;
}

/* Busy for 40 ms in 200 µs batches: with a 1 ms slice, up to one yield a
 * slice (fewer when the machine is busy and the thread is kept off the
 * CPU: then it had a pause), never one a batch; the loop ends on a break
 * and on an exit alike. */
static void test_busy_loop_yields(void **state)
{
	(void)state;
	int rc;
	uint64_t y = run_busy(1000, 200, 200, 0, &rc);
	assert_int_equal(rc, 0);
	if (!(y >= 4 && y <= 100))
		fail_msg("%llu yields", (unsigned long long)y);
	y = run_busy(1000, 200, 50, 1, &rc);
	assert_int_equal(rc, 0);
	assert_true(y >= 1);
}

/* Slice 0: event_base_dispatch, no yield counted. */
static void test_slice_zero_is_dispatch(void **state)
{
	(void)state;
	int rc;
	assert_int_equal(run_busy(0, 200, 50, 0, &rc), 0);
	assert_int_equal(rc, 0);
}

/* A loop that mostly waits (a timer every 10 ms, little work) never yields. */
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

static void test_waiting_loop_does_not_yield(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct sleepy s = {.left = 10};
	s.ev = evtimer_new(base, sleepy_cb, &s);
	struct timeval tv = {0, 10000};
	evtimer_add(s.ev, &tv);
	uint64_t yields = 0;
	/* No events left once the timer stops: returns 1, as dispatch. */
	assert_int_equal(loop_run(base, 1000, &yields), 1);
	assert_int_equal(s.left, 0);
	assert_int_equal(yields, 0);
	event_free(s.ev);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_loop_yields),
		cmocka_unit_test(test_slice_zero_is_dispatch),
		cmocka_unit_test(test_waiting_loop_does_not_yield),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

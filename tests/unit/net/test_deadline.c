/* Unit tests for proxy/net/deadline.c: a set deadline fires once, from the
 * loop, no earlier than its time; clear stops it; set again moves it (both
 * ways); expired says so before and after the callback; the callback may
 * set its deadline again or free it; push moves an armed one on (an idle
 * timeout) and leaves one that is not armed alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include <event2/event.h>

#include "proxy/base/clock.h"
#include "proxy/net/deadline.h"

struct owner {
	struct event_base *base;
	struct deadline *d;
	int fired;
	int again_ms;     /* set again from the callback, once */
	int free_in_cb;
	int expired_in_cb;
};

static void owner_cb(void *arg)
{
	struct owner *o = arg;
	o->fired++;
	o->expired_in_cb = deadline_expired(o->d);
	if (o->free_in_cb) {
		deadline_free(o->d);
		o->d = NULL;
		return;
	}
	if (o->again_ms) {
		deadline_set(o->d, (unsigned)o->again_ms);
		o->again_ms = 0;
	}
}

/* Runs the loop until nothing is added; the milliseconds it took. */
static double dispatch_ms(struct owner *o)
{
	uint64_t t0 = clock_mono_us();
	event_base_dispatch(o->base);
	return (double)(clock_mono_us() - t0) / 1000.0;
}

static void owner_init(struct owner *o)
{
	*o = (struct owner){0};
	o->base = event_base_new();
	assert_non_null(o->base);
	o->d = deadline_new(o->base, owner_cb, o);
	assert_non_null(o->d);
}

static void owner_fini(struct owner *o)
{
	deadline_free(o->d);
	event_base_free(o->base);
}

static void test_fires_once_after_its_time(void **state)
{
	(void)state;
	struct owner o;
	owner_init(&o);
	assert_false(deadline_armed(o.d));
	assert_false(deadline_expired(o.d));
	double t0 = ((double)clock_mono_us() / 1000.0);
	assert_int_equal(deadline_set(o.d, 50), 0);
	assert_true(deadline_armed(o.d));
	assert_false(deadline_expired(o.d));
	event_base_dispatch(o.base); /* returns once nothing is added */
	double took = ((double)clock_mono_us() / 1000.0) - t0;
	assert_int_equal(o.fired, 1);
	assert_true(o.expired_in_cb);
	assert_true(deadline_expired(o.d));
	assert_true(deadline_armed(o.d));
	/* The coarse clock ticks in a few ms: no earlier than that. */
	assert_true(took >= 40.0);
	assert_true(took < 3000.0);
	owner_fini(&o);
}

static void test_clear_stops_it(void **state)
{
	(void)state;
	struct owner o;
	owner_init(&o);
	deadline_set(o.d, 20);
	deadline_clear(o.d);
	assert_false(deadline_armed(o.d));
	assert_false(deadline_expired(o.d));
	/* Nothing added: the loop has nothing to wait for. */
	assert_int_equal(event_base_dispatch(o.base), 1);
	assert_int_equal(o.fired, 0);
	deadline_clear(o.d); /* twice is fine */
	assert_int_equal(deadline_set(o.d, 0), 0); /* 0: off */
	assert_false(deadline_armed(o.d));
	owner_fini(&o);
}

/* A second set replaces the first, later or earlier. */
static void test_set_again_moves_it(void **state)
{
	(void)state;
	struct owner o;
	owner_init(&o);
	deadline_set(o.d, 20);
	deadline_set(o.d, 200);
	assert_true(dispatch_ms(&o) >= 190.0);
	assert_int_equal(o.fired, 1);

	o.fired = 0;
	deadline_set(o.d, 2000);
	deadline_set(o.d, 20);
	assert_true(dispatch_ms(&o) < 1500.0);
	assert_int_equal(o.fired, 1);
	owner_fini(&o);
}

/* Past its time but before the loop ran the callback: expired already. */
static void test_expired_before_the_callback(void **state)
{
	(void)state;
	struct owner o;
	owner_init(&o);
	deadline_set(o.d, 1);
	struct timespec nap = {0, 30 * 1000 * 1000};
	nanosleep(&nap, NULL);
	assert_true(deadline_expired(o.d));
	assert_int_equal(o.fired, 0);
	event_base_dispatch(o.base);
	assert_int_equal(o.fired, 1);
	owner_fini(&o);
}

static void test_callback_sets_again_or_frees(void **state)
{
	(void)state;
	struct owner o;
	owner_init(&o);
	o.again_ms = 10;
	deadline_set(o.d, 10);
	event_base_dispatch(o.base);
	assert_int_equal(o.fired, 2);

	o.fired = 0;
	o.free_in_cb = 1;
	deadline_set(o.d, 10);
	event_base_dispatch(o.base);
	assert_int_equal(o.fired, 1);
	assert_null(o.d);
	owner_fini(&o);
}

/* Pushed on past the timer's time: no callback then, one at the new time. */
static void test_push_moves_it_on(void **state)
{
	(void)state;
	struct owner o;
	owner_init(&o);
	assert_int_equal(deadline_push(o.d, 50), 0); /* OFF: stays so */
	assert_false(deadline_armed(o.d));
	double t0 = ((double)clock_mono_us() / 1000.0);
	deadline_set(o.d, 60);
	struct timespec nap = {0, 40 * 1000 * 1000};
	nanosleep(&nap, NULL);
	assert_int_equal(deadline_push(o.d, 60), 0);
	event_base_dispatch(o.base);
	double took = ((double)clock_mono_us() / 1000.0) - t0;
	assert_int_equal(o.fired, 1);
	assert_true(took >= 90.0);
	assert_true(took < 3000.0);
	/* FIRED: a push does not arm it again. */
	deadline_push(o.d, 10);
	assert_int_equal(event_base_dispatch(o.base), 1);
	assert_int_equal(o.fired, 1);
	/* Earlier than the timer's: it moves, as set. */
	deadline_set(o.d, 2000);
	deadline_push(o.d, 20);
	assert_true(dispatch_ms(&o) < 1500.0);
	assert_int_equal(o.fired, 2);
	owner_fini(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fires_once_after_its_time),
		cmocka_unit_test(test_clear_stops_it),
		cmocka_unit_test(test_set_again_moves_it),
		cmocka_unit_test(test_expired_before_the_callback),
		cmocka_unit_test(test_callback_sets_again_or_frees),
		cmocka_unit_test(test_push_moves_it_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

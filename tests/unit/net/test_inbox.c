/* Unit tests for proxy/net/inbox.c and proxy/net/affinity.c, the two pieces the
 * workers share: work posted from other threads runs on the target loop,
 * in order, exactly once (or is dropped once when never run), and the
 * session-to-worker table answers from any thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <pthread.h>

#include <event2/event.h>

#include "proxy/net/affinity.h"
#include "proxy/ctx.h"
#include "proxy/net/inbox.h"
#include "tests/unit/helpers.h"

#define POSTERS 4
#define PER_POSTER 5000

struct tally {
	struct event_base *base;
	pthread_t loop_thread;
	int wrong_thread;
	size_t ran, dropped;
	/* Last value seen from each poster: must grow by one each time. */
	long last[POSTERS];
	int out_of_order;
};

struct item {
	struct tally *t;
	int poster;
	long seq;
};

static void run(void *arg)
{
	struct item *it = arg;
	struct tally *t = it->t;
	if (!pthread_equal(pthread_self(), t->loop_thread))
		t->wrong_thread = 1;
	if (it->seq != t->last[it->poster] + 1)
		t->out_of_order = 1;
	t->last[it->poster] = it->seq;
	t->ran++;
	if (t->ran == POSTERS * PER_POSTER)
		event_base_loopexit(t->base, NULL);
	free(it);
}

static void drop(void *arg)
{
	struct item *it = arg;
	it->t->dropped++;
	free(it);
}

struct poster {
	struct inbox *ib;
	struct tally *t;
	int id;
};

static void *post_many(void *arg)
{
	struct poster *p = arg;
	for (long i = 1; i <= PER_POSTER; i++) {
		struct item *it = malloc(sizeof(*it));
		if (!it)
			abort();
		*it = (struct item){p->t, p->id, i};
		if (inbox_post(p->ib, run, drop, it) < 0)
			abort();
	}
	return NULL;
}

static void test_posts_from_threads_run_in_order_on_the_loop(void **state)
{
	(void)state;
	struct tally t = {0};
	t.base = event_base_new();
	assert_non_null(t.base);
	assert_int_equal(event_base_priority_init(t.base, PX_PRIO_COUNT), 0);
	t.loop_thread = pthread_self();
	struct inbox *ib = inbox_new(t.base);
	assert_non_null(ib);

	pthread_t th[POSTERS];
	struct poster p[POSTERS];
	for (int i = 0; i < POSTERS; i++) {
		p[i] = (struct poster){ib, &t, i};
		assert_int_equal(pthread_create(&th[i], NULL, post_many, &p[i]), 0);
	}
	/* A stuck loop would hang the test: a generous bound instead. */
	th_run_for(t.base, 10 * 1000);
	for (int i = 0; i < POSTERS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(t.ran, POSTERS * PER_POSTER);
	assert_false(t.wrong_thread);
	assert_false(t.out_of_order);
	for (int i = 0; i < POSTERS; i++)
		assert_int_equal(t.last[i], PER_POSTER);
	inbox_free(ib);
	assert_int_equal(t.dropped, 0);
	event_base_free(t.base);
}

static void test_work_never_run_is_dropped_once(void **state)
{
	(void)state;
	struct tally t = {0};
	t.base = event_base_new();
	assert_non_null(t.base);
	assert_int_equal(event_base_priority_init(t.base, PX_PRIO_COUNT), 0);
	struct inbox *ib = inbox_new(t.base);
	assert_non_null(ib);
	for (long i = 1; i <= 3; i++) {
		struct item *it = malloc(sizeof(*it));
		assert_non_null(it);
		*it = (struct item){&t, 0, i};
		assert_int_equal(inbox_post(ib, run, drop, it), 0);
	}
	/* The loop never runs: freeing the inbox drops each item once. */
	inbox_free(ib);
	assert_int_equal(t.ran, 0);
	assert_int_equal(t.dropped, 3);
	event_base_free(t.base);
}

static void test_affinity(void **state)
{
	(void)state;
	struct affinity *a = affinity_new();
	assert_non_null(a);
	assert_int_equal(affinity_get(a, "nobody"), -1);
	assert_int_equal(affinity_get(a, NULL), -1);
	assert_int_equal(affinity_set(a, "s1", 1), 0);
	assert_int_equal(affinity_set(a, "s2", 0), 0);
	assert_int_equal(affinity_get(a, "s1"), 1);
	assert_int_equal(affinity_get(a, "s2"), 0);
	assert_int_equal(affinity_get(a, "s3"), -1);
	affinity_forget(a, "s1");
	assert_int_equal(affinity_get(a, "s1"), -1);
	affinity_forget(a, "s2");
	affinity_forget(a, "never-there");
	assert_int_equal(affinity_get(a, "s2"), -1);
	affinity_free(a);
	affinity_free(NULL);
}

struct hammer {
	struct affinity *a;
	int id;
	int bad;
};

static void *hammer(void *arg)
{
	struct hammer *h = arg;
	char id[32];
	for (int i = 0; i < 2000; i++) {
		snprintf(id, sizeof(id), "w%d-%d", h->id, i);
		if (affinity_set(h->a, id, (unsigned)h->id) < 0 || affinity_get(h->a, id) != h->id)
			h->bad = 1;
		if (i % 2)
			affinity_forget(h->a, id);
	}
	return NULL;
}

static void test_affinity_from_threads(void **state)
{
	(void)state;
	struct affinity *a = affinity_new();
	pthread_t th[4];
	struct hammer h[4];
	for (int i = 0; i < 4; i++) {
		h[i] = (struct hammer){a, i, 0};
		assert_int_equal(pthread_create(&th[i], NULL, hammer, &h[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_false(h[i].bad);
	}
	/* The even ones stayed, each with its own worker. */
	assert_int_equal(affinity_get(a, "w3-1998"), 3);
	assert_int_equal(affinity_get(a, "w2-1999"), -1);
	affinity_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_posts_from_threads_run_in_order_on_the_loop),
		cmocka_unit_test(test_work_never_run_is_dropped_once),
		cmocka_unit_test(test_affinity),
		cmocka_unit_test(test_affinity_from_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

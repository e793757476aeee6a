/* Unit tests for proxy/mcp/sesslimit.c: caps per kind, entries made and freed
 * with their slots, keys (upstream, session id), the table bound, the
 * once-per-entry warning, counters, and concurrent use from threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <cmocka.h>

#include "proxy/mcp/sesslimit.h"

static struct sesslimit_stats stats_of(struct sesslimit *t)
{
	struct sesslimit_stats s;
	sesslimit_get_stats(t, &s);
	return s;
}

static void test_cap_per_kind(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(16);
	struct sesslimit_entry *slot[4] = {0}, *extra = NULL;
	assert_non_null(t);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sesslimit_acquire(t, 0, "s1", SESSLIMIT_INFLIGHT, 3, &slot[i]),
		                 SESSLIMIT_OK);
	assert_int_equal(sesslimit_held(t, 0, "s1", SESSLIMIT_INFLIGHT), 3);
	/* The fourth is refused, and only the first refusal asks for a warning. */
	assert_int_equal(sesslimit_acquire(t, 0, "s1", SESSLIMIT_INFLIGHT, 3, &extra),
	                 SESSLIMIT_OVER_FIRST);
	assert_int_equal(sesslimit_acquire(t, 0, "s1", SESSLIMIT_INFLIGHT, 3, &extra),
	                 SESSLIMIT_OVER);
	assert_null(extra);
	assert_int_equal(sesslimit_held(t, 0, "s1", SESSLIMIT_INFLIGHT), 3);
	/* Streams have their own count in the same session. */
	assert_int_equal(sesslimit_acquire(t, 0, "s1", SESSLIMIT_STREAM, 1, &slot[3]), SESSLIMIT_OK);
	assert_int_equal(sesslimit_acquire(t, 0, "s1", SESSLIMIT_STREAM, 1, &extra),
	                 SESSLIMIT_OVER_FIRST);
	struct sesslimit_stats s = stats_of(t);
	assert_int_equal(s.refused[SESSLIMIT_INFLIGHT], 2);
	assert_int_equal(s.refused[SESSLIMIT_STREAM], 1);
	assert_int_equal(s.held[SESSLIMIT_INFLIGHT], 3);
	assert_int_equal(s.held[SESSLIMIT_STREAM], 1);
	assert_int_equal(s.entries, 1);
	for (int i = 0; i < 3; i++)
		sesslimit_release(t, slot[i], SESSLIMIT_INFLIGHT);
	sesslimit_release(t, slot[3], SESSLIMIT_STREAM);
	sesslimit_free(t);
}

static void test_release_gives_the_slot_back(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(16);
	struct sesslimit_entry *a = NULL, *b = NULL, *c = NULL;
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 2, &a), SESSLIMIT_OK);
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 2, &b), SESSLIMIT_OK);
	assert_ptr_equal(a, b); /* one entry per session */
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 2, &c),
	                 SESSLIMIT_OVER_FIRST);
	sesslimit_release(t, a, SESSLIMIT_INFLIGHT);
	assert_int_equal(sesslimit_held(t, 0, "s", SESSLIMIT_INFLIGHT), 1);
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 2, &c), SESSLIMIT_OK);
	sesslimit_release(t, b, SESSLIMIT_INFLIGHT);
	sesslimit_release(t, c, SESSLIMIT_INFLIGHT);
	assert_int_equal(sesslimit_held(t, 0, "s", SESSLIMIT_INFLIGHT), 0);
	struct sesslimit_stats s = stats_of(t);
	assert_int_equal(s.entries, 0);
	assert_int_equal(s.held[SESSLIMIT_INFLIGHT], 0);
	sesslimit_free(t);
}

static void test_entry_lives_while_any_kind_is_held(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(16);
	struct sesslimit_entry *req = NULL, *stream = NULL;
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_STREAM, 4, &stream), SESSLIMIT_OK);
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 4, &req), SESSLIMIT_OK);
	sesslimit_release(t, req, SESSLIMIT_INFLIGHT);
	assert_int_equal(stats_of(t).entries, 1);
	assert_int_equal(sesslimit_held(t, 0, "s", SESSLIMIT_STREAM), 1);
	sesslimit_release(t, stream, SESSLIMIT_STREAM);
	assert_int_equal(stats_of(t).entries, 0);
	sesslimit_free(t);
}

static void test_keys_are_upstream_and_session(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(16);
	struct sesslimit_entry *a = NULL, *b = NULL, *c = NULL, *x = NULL;
	assert_int_equal(sesslimit_acquire(t, 0, "same", SESSLIMIT_INFLIGHT, 1, &a), SESSLIMIT_OK);
	/* The same id from another upstream is another session. */
	assert_int_equal(sesslimit_acquire(t, 1, "same", SESSLIMIT_INFLIGHT, 1, &b), SESSLIMIT_OK);
	assert_int_equal(sesslimit_acquire(t, 0, "other", SESSLIMIT_INFLIGHT, 1, &c), SESSLIMIT_OK);
	/* A prefix is not the same id. */
	assert_int_equal(sesslimit_acquire(t, 0, "sam", SESSLIMIT_INFLIGHT, 1, &x), SESSLIMIT_OK);
	assert_int_equal(stats_of(t).entries, 4);
	assert_int_equal(sesslimit_acquire(t, 1, "same", SESSLIMIT_INFLIGHT, 1, &x),
	                 SESSLIMIT_OVER_FIRST);
	sesslimit_release(t, b, SESSLIMIT_INFLIGHT);
	assert_int_equal(sesslimit_held(t, 0, "same", SESSLIMIT_INFLIGHT), 1);
	assert_int_equal(sesslimit_held(t, 1, "same", SESSLIMIT_INFLIGHT), 0);
	sesslimit_release(t, a, SESSLIMIT_INFLIGHT);
	sesslimit_release(t, c, SESSLIMIT_INFLIGHT);
	assert_int_equal(sesslimit_acquire(t, 0, "sam", SESSLIMIT_INFLIGHT, 1, &b),
	                 SESSLIMIT_OVER_FIRST);
	sesslimit_release(t, x, SESSLIMIT_INFLIGHT);
	assert_int_equal(stats_of(t).entries, 0);
	sesslimit_free(t);
}

static void test_cap_zero_counts_without_limit(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(4);
	struct sesslimit_entry *slots[100];
	for (int i = 0; i < 100; i++)
		assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_STREAM, 0, &slots[i]),
		                 SESSLIMIT_OK);
	assert_int_equal(sesslimit_held(t, 0, "s", SESSLIMIT_STREAM), 100);
	for (int i = 0; i < 100; i++)
		sesslimit_release(t, slots[i], SESSLIMIT_STREAM);
	assert_int_equal(stats_of(t).entries, 0);
	sesslimit_free(t);
}

static void test_table_is_bounded(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(3);
	struct sesslimit_entry *slots[4] = {0}, *more = NULL;
	char sid[16];
	for (int i = 0; i < 3; i++) {
		snprintf(sid, sizeof(sid), "s%d", i);
		assert_int_equal(sesslimit_acquire(t, 0, sid, SESSLIMIT_INFLIGHT, 8, &slots[i]),
		                 SESSLIMIT_OK);
	}
	assert_int_equal(sesslimit_acquire(t, 0, "s3", SESSLIMIT_INFLIGHT, 8, &slots[3]),
	                 SESSLIMIT_FULL);
	/* A session already in the table still gets slots. */
	assert_int_equal(sesslimit_acquire(t, 0, "s1", SESSLIMIT_INFLIGHT, 8, &more), SESSLIMIT_OK);
	assert_int_equal(stats_of(t).full, 1);
	sesslimit_release(t, slots[0], SESSLIMIT_INFLIGHT);
	assert_int_equal(sesslimit_acquire(t, 0, "s3", SESSLIMIT_INFLIGHT, 8, &slots[3]),
	                 SESSLIMIT_OK);
	for (int i = 1; i < 4; i++)
		sesslimit_release(t, slots[i], SESSLIMIT_INFLIGHT);
	sesslimit_release(t, more, SESSLIMIT_INFLIGHT);
	assert_int_equal(stats_of(t).entries, 0);
	sesslimit_free(t);
}

static void test_zero_entries_means_one(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(0);
	struct sesslimit_entry *a = NULL, *b = NULL;
	assert_int_equal(sesslimit_acquire(t, 0, "a", SESSLIMIT_INFLIGHT, 1, &a), SESSLIMIT_OK);
	assert_int_equal(sesslimit_acquire(t, 0, "b", SESSLIMIT_INFLIGHT, 1, &b), SESSLIMIT_FULL);
	sesslimit_release(t, a, SESSLIMIT_INFLIGHT);
	sesslimit_free(t);
}

static void test_warning_again_for_a_new_entry(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(4);
	struct sesslimit_entry *a = NULL, *x = NULL;
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 1, &a), SESSLIMIT_OK);
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 1, &x),
	                 SESSLIMIT_OVER_FIRST);
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 1, &x), SESSLIMIT_OVER);
	sesslimit_release(t, a, SESSLIMIT_INFLIGHT);
	/* Idle in between: the next busy spell is news again. */
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 1, &a), SESSLIMIT_OK);
	assert_int_equal(sesslimit_acquire(t, 0, "s", SESSLIMIT_INFLIGHT, 1, &x),
	                 SESSLIMIT_OVER_FIRST);
	sesslimit_release(t, a, SESSLIMIT_INFLIGHT);
	assert_int_equal(stats_of(t).refused[SESSLIMIT_INFLIGHT], 3);
	sesslimit_free(t);
}

static void test_long_ids_and_many_sessions(void **state)
{
	(void)state;
	enum { N = 5000 };
	struct sesslimit *t = sesslimit_new(N);
	struct sesslimit_entry **slots = calloc(N, sizeof(*slots));
	char *longid = malloc(20000);
	char sid[32];
	memset(longid, 'k', 19999);
	longid[19999] = '\0';
	struct sesslimit_entry *l = NULL;
	assert_int_equal(sesslimit_acquire(t, 2, longid, SESSLIMIT_STREAM, 1, &l), SESSLIMIT_OK);
	assert_int_equal(sesslimit_held(t, 2, longid, SESSLIMIT_STREAM), 1);
	sesslimit_release(t, l, SESSLIMIT_STREAM);
	/* Far more sessions than buckets: chains stay correct. */
	for (int i = 0; i < N; i++) {
		snprintf(sid, sizeof(sid), "session-%d", i);
		assert_int_equal(sesslimit_acquire(t, (size_t)i % 3, sid, SESSLIMIT_INFLIGHT, 1, &slots[i]),
		                 SESSLIMIT_OK);
	}
	assert_int_equal(stats_of(t).entries, N);
	/* Release every other one, from the middle out. */
	for (int i = 0; i < N; i += 2) {
		int k = (i + N / 2) % N;
		k -= k % 2;
		if (slots[k]) {
			sesslimit_release(t, slots[k], SESSLIMIT_INFLIGHT);
			slots[k] = NULL;
		}
	}
	for (int i = 0; i < N; i++) {
		snprintf(sid, sizeof(sid), "session-%d", i);
		assert_int_equal(sesslimit_held(t, (size_t)i % 3, sid, SESSLIMIT_INFLIGHT),
		                 slots[i] ? 1 : 0);
	}
	for (int i = 0; i < N; i++)
		if (slots[i])
			sesslimit_release(t, slots[i], SESSLIMIT_INFLIGHT);
	assert_int_equal(stats_of(t).entries, 0);
	free(slots);
	free(longid);
	sesslimit_free(t);
}

static void test_free_with_slots_held(void **state)
{
	(void)state;
	/* Exit with slots still out: everything is freed (valgrind checks). */
	struct sesslimit *t = sesslimit_new(8);
	struct sesslimit_entry *a = NULL;
	assert_int_equal(sesslimit_acquire(t, 0, "a", SESSLIMIT_INFLIGHT, 1, &a), SESSLIMIT_OK);
	assert_int_equal(sesslimit_acquire(t, 0, "b", SESSLIMIT_STREAM, 1, &a), SESSLIMIT_OK);
	sesslimit_free(t);
	sesslimit_free(NULL);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(sesslimit_kind_str(SESSLIMIT_INFLIGHT), "in-flight requests");
	assert_string_equal(sesslimit_kind_str(SESSLIMIT_STREAM), "SSE streams");
}

/* A session's entry is kept between its busy spells (its next request
 * finds it without a write lock), within bounds: short ids only, a few
 * thousand at most, and never at the cost of a new session. */
static void test_parked_entries(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(3);
	struct sesslimit_entry *s[6] = {0};
	char sid[16];
	for (int i = 0; i < 3; i++) {
		snprintf(sid, sizeof(sid), "p%d", i);
		assert_int_equal(sesslimit_acquire(t, 0, sid, SESSLIMIT_INFLIGHT, 1, &s[i]), SESSLIMIT_OK);
		sesslimit_release(t, s[i], SESSLIMIT_INFLIGHT);
	}
	assert_int_equal(stats_of(t).entries, 0);
	assert_int_equal(stats_of(t).parked, 3);
	/* Back from parking: busy again, the cap as before. */
	assert_int_equal(sesslimit_acquire(t, 0, "p1", SESSLIMIT_INFLIGHT, 1, &s[1]), SESSLIMIT_OK);
	assert_int_equal(sesslimit_acquire(t, 0, "p1", SESSLIMIT_INFLIGHT, 1, &s[5]),
	                 SESSLIMIT_OVER_FIRST);
	assert_int_equal(stats_of(t).entries, 1);
	assert_int_equal(stats_of(t).parked, 2);
	/* A full table frees parked entries for new sessions. */
	for (int i = 3; i < 5; i++) {
		snprintf(sid, sizeof(sid), "n%d", i);
		assert_int_equal(sesslimit_acquire(t, 0, sid, SESSLIMIT_INFLIGHT, 1, &s[i]), SESSLIMIT_OK);
	}
	assert_int_equal(stats_of(t).entries, 3);
	assert_int_equal(stats_of(t).parked, 0);
	assert_int_equal(sesslimit_acquire(t, 0, "n5", SESSLIMIT_INFLIGHT, 1, &s[5]), SESSLIMIT_FULL);
	sesslimit_release(t, s[1], SESSLIMIT_INFLIGHT);
	sesslimit_release(t, s[3], SESSLIMIT_INFLIGHT);
	sesslimit_release(t, s[4], SESSLIMIT_INFLIGHT);
	sesslimit_free(t);

	/* A long id is not kept. */
	t = sesslimit_new(8);
	char longid[300];
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	assert_int_equal(sesslimit_acquire(t, 0, longid, SESSLIMIT_STREAM, 1, &s[0]), SESSLIMIT_OK);
	sesslimit_release(t, s[0], SESSLIMIT_STREAM);
	assert_int_equal(stats_of(t).parked, 0);
	sesslimit_free(t);

	/* Ten thousand sessions one after another: a few thousand kept. */
	t = sesslimit_new(65536);
	for (int i = 0; i < 10000; i++) {
		snprintf(sid, sizeof(sid), "m%d", i);
		assert_int_equal(sesslimit_acquire(t, 0, sid, SESSLIMIT_INFLIGHT, 1, &s[0]), SESSLIMIT_OK);
		sesslimit_release(t, s[0], SESSLIMIT_INFLIGHT);
	}
	assert_int_equal(stats_of(t).entries, 0);
	assert_true(stats_of(t).parked <= 4097);
	sesslimit_free(t);
}

/* ---- threads ----------------------------------------------------------------- */

#define THREADS 4
#define ROUNDS  20000
#define CAP     3

struct worker {
	struct sesslimit *t;
	int id;
	unsigned long ok, over, seen_over_cap;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	const char *sids[] = {"shared-a", "shared-b"};
	unsigned seed = (unsigned)w->id * 7919u + 1;
	for (int i = 0; i < ROUNDS; i++) {
		seed = seed * 1103515245u + 12345u;
		const char *sid = sids[(seed >> 16) & 1];
		struct sesslimit_entry *slot = NULL;
		enum sesslimit_rc rc = sesslimit_acquire(w->t, 0, sid, SESSLIMIT_INFLIGHT, CAP, &slot);
		if (rc != SESSLIMIT_OK) {
			w->over++;
			continue;
		}
		w->ok++;
		/* Never more than CAP holders at once, whoever looks. */
		if (sesslimit_held(w->t, 0, sid, SESSLIMIT_INFLIGHT) > CAP)
			w->seen_over_cap++;
		sesslimit_release(w->t, slot, SESSLIMIT_INFLIGHT);
	}
	return NULL;
}

static void test_threads_share_one_table(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(16);
	pthread_t th[THREADS];
	struct worker w[THREADS];
	unsigned long ok = 0, over = 0;
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.t = t, .id = i};
		assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(w[i].seen_over_cap, 0);
		ok += w[i].ok;
		over += w[i].over;
	}
	assert_int_equal(ok + over, (unsigned long)THREADS * ROUNDS);
	struct sesslimit_stats s = stats_of(t);
	assert_int_equal(s.refused[SESSLIMIT_INFLIGHT], over);
	assert_int_equal(s.held[SESSLIMIT_INFLIGHT], 0);
	assert_int_equal(s.entries, 0);
	sesslimit_free(t);
}

/* Workers making and dropping sessions in a table too small for all of
 * them: entries are made, parked, swept and refused concurrently (TSan
 * runs this), and every slot taken is given back. */
struct churner {
	struct sesslimit *t;
	int id;
	unsigned long ok, full;
};

static void *churn(void *arg)
{
	struct churner *c = arg;
	char sid[32];
	struct sesslimit_entry *held[4] = {0};
	for (int i = 0; i < ROUNDS; i++) {
		/* Sessions of this worker and of the others, four held at a time. */
		snprintf(sid, sizeof(sid), "c%d", (i * 7 + c->id) % 24);
		struct sesslimit_entry **h = &held[i % 4];
		if (*h) {
			sesslimit_release(c->t, *h, SESSLIMIT_INFLIGHT);
			*h = NULL;
		}
		enum sesslimit_rc rc = sesslimit_acquire(c->t, 0, sid, SESSLIMIT_INFLIGHT, 0, h);
		if (rc == SESSLIMIT_OK)
			c->ok++;
		else if (rc == SESSLIMIT_FULL)
			c->full++;
		else
			return (void *)1;
	}
	for (int k = 0; k < 4; k++)
		if (held[k])
			sesslimit_release(c->t, held[k], SESSLIMIT_INFLIGHT);
	return NULL;
}

static void test_threads_churn_sessions(void **state)
{
	(void)state;
	struct sesslimit *t = sesslimit_new(12);
	pthread_t th[THREADS];
	struct churner c[THREADS];
	unsigned long ok = 0, full = 0;
	for (int i = 0; i < THREADS; i++) {
		c[i] = (struct churner){.t = t, .id = i};
		assert_int_equal(pthread_create(&th[i], NULL, churn, &c[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		void *bad;
		assert_int_equal(pthread_join(th[i], &bad), 0);
		assert_null(bad);
		ok += c[i].ok;
		full += c[i].full;
	}
	assert_int_equal(ok + full, (unsigned long)THREADS * ROUNDS);
	assert_true(ok > 0);
	struct sesslimit_stats s = stats_of(t);
	assert_int_equal(s.full, full);
	assert_int_equal(s.held[SESSLIMIT_INFLIGHT], 0);
	assert_int_equal(s.entries, 0);
	assert_true(s.parked <= 12);
	sesslimit_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_per_kind),
		cmocka_unit_test(test_release_gives_the_slot_back),
		cmocka_unit_test(test_entry_lives_while_any_kind_is_held),
		cmocka_unit_test(test_keys_are_upstream_and_session),
		cmocka_unit_test(test_cap_zero_counts_without_limit),
		cmocka_unit_test(test_table_is_bounded),
		cmocka_unit_test(test_zero_entries_means_one),
		cmocka_unit_test(test_parked_entries),
		cmocka_unit_test(test_warning_again_for_a_new_entry),
		cmocka_unit_test(test_long_ids_and_many_sessions),
		cmocka_unit_test(test_free_with_slots_held),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_threads_share_one_table),
		cmocka_unit_test(test_threads_churn_sessions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

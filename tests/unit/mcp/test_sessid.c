/* Unit tests for proxy/mcp/sessid.c: the table of session ids the proxy saw
 * issued and ended. Lookups take only their stripe's lock, issuing and
 * ending the table's too: the threaded test has readers look up while a
 * writer issues, ends and evicts (make tsan runs it under ThreadSanitizer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "proxy/mcp/sessid.h"

static void test_issued_ended_unknown(void **state)
{
	(void)state;
	struct sessid *s = sessid_new(100);
	assert_non_null(s);
	assert_int_equal(sessid_lookup(s, 0, "a"), SESSID_UNKNOWN);
	assert_int_equal(sessid_lookup(s, 0, NULL), SESSID_UNKNOWN);
	sessid_issued(s, 0, "a");
	assert_int_equal(sessid_lookup(s, 0, "a"), SESSID_LIVE);
	/* Per upstream: the same id elsewhere is another session. */
	assert_int_equal(sessid_lookup(s, 1, "a"), SESSID_UNKNOWN);
	sessid_ended(s, 0, "a");
	assert_int_equal(sessid_lookup(s, 0, "a"), SESSID_ENDED);
	sessid_ended(s, 1, "b"); /* ended without being seen issued */
	assert_int_equal(sessid_lookup(s, 1, "b"), SESSID_ENDED);
	assert_int_equal(sessid_count(s, SESSID_LIVE), 0);
	assert_int_equal(sessid_count(s, SESSID_ENDED), 2);
	sessid_issued(s, 0, "c");
	assert_int_equal(sessid_count(s, SESSID_LIVE), 1);
	/* Ids that are empty or too long are not kept. */
	char big[400];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	sessid_issued(s, 0, big);
	sessid_issued(s, 0, "");
	assert_int_equal(sessid_lookup(s, 0, big), SESSID_UNKNOWN);
	assert_int_equal(sessid_count(s, SESSID_LIVE), 1);
	sessid_free(s);
}

/* Full: the oldest goes, counts follow. */
static void test_eviction(void **state)
{
	(void)state;
	struct sessid *s = sessid_new(3);
	sessid_issued(s, 0, "s1");
	sessid_ended(s, 0, "s2");
	sessid_issued(s, 0, "s3");
	sessid_issued(s, 0, "s4");
	assert_int_equal(sessid_lookup(s, 0, "s1"), SESSID_UNKNOWN);
	assert_int_equal(sessid_lookup(s, 0, "s2"), SESSID_ENDED);
	assert_int_equal(sessid_lookup(s, 0, "s4"), SESSID_LIVE);
	assert_int_equal(sessid_count(s, SESSID_LIVE), 2);
	assert_int_equal(sessid_count(s, SESSID_ENDED), 1);
	sessid_issued(s, 0, "s5");
	assert_int_equal(sessid_lookup(s, 0, "s2"), SESSID_UNKNOWN);
	assert_int_equal(sessid_count(s, SESSID_ENDED), 0);
	assert_int_equal(sessid_count(s, SESSID_LIVE), 3);
	sessid_free(s);
}

#define READERS 2
#define ROUNDS 20000

struct shared {
	struct sessid *s;
	int stop;
	int wrong;       /* a reader saw a state no writer ever set */
};

/* Ids "k<n>": the writer issues each, then ends every other one. A
 * reader may see any of unknown/live/ended for a live-then-ended id, but
 * never ended for an id that is only ever issued (odd n). */
static void *reader(void *arg)
{
	struct shared *sh = arg;
	char id[32];
	unsigned n = 0;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		snprintf(id, sizeof(id), "k%u", n % 512);
		enum sessid_state st = sessid_lookup(sh->s, 0, id);
		if ((n % 512) % 2 == 1 && st == SESSID_ENDED)
			__atomic_store_n(&sh->wrong, 1, __ATOMIC_RELAXED);
		n += 7;
	}
	return NULL;
}

static void test_lookups_while_issued_ended_evicted(void **state)
{
	(void)state;
	struct shared sh = {.s = sessid_new(200)};
	pthread_t t[READERS];
	char id[32];
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, &sh), 0);
	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned k = r % 512;
		snprintf(id, sizeof(id), "k%u", k);
		sessid_issued(sh.s, 0, id); /* 512 ids over 200 slots: evictions */
		if (k % 2 == 0)
			sessid_ended(sh.s, 0, id);
	}
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	assert_false(sh.wrong);
	assert_true(sessid_count(sh.s, SESSID_LIVE) + sessid_count(sh.s, SESSID_ENDED) <= 200);
	sessid_free(sh.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_issued_ended_unknown),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_lookups_while_issued_ended_evicted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

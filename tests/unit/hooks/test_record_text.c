/* Unit tests for proxy/hooks/record_text.c, the recorder's text writer:
 * the per-clock date cache, the bound on a record's text (FIXED_ROOM,
 * from the member table), short numbers written in place, and the
 * per-exchange members' cache. The .c is included to reach its static
 * helpers (h2o's t/00unit style). */
#include "proxy/hooks/record_text.c"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/hooks/hook_record.h"

/* ---- time --------------------------------------------------------------- */

static void expect_time(struct record_text_clock *l, uint64_t us)
{
	char want[40], got[TIME_TEXT_MAX + 1];
	hook_record_time(us, want, sizeof(want));
	char *end = put_time(l, got, us);
	assert_true((size_t)(end - got) <= TIME_TEXT_MAX);
	*end = '\0';
	char quoted[48];
	snprintf(quoted, sizeof(quoted), "\"%s\"", want);
	assert_string_equal(got, quoted);
}

static void test_time_cache_across_seconds(void **state)
{
	(void)state;
	struct record_text_clock l = RECORD_TEXT_CLOCK_INIT;
	/* the last microsecond of a second, the first of the next; a minute,
	 * a day, a year and a leap day rolling over; then back in time (the
	 * wall clock may be set back) */
	static const uint64_t t[] = {
		1748779199999999ull, 1748779200000000ull, 1748779200000001ull,
		1748779259999999ull, 1748779260000000ull, 1748822399999999ull,
		1748822400000000ull, 1767225599999999ull, 1767225600000000ull,
		1709164799999999ull, 1709164800000000ull, 1748779200123456ull,
		0ull, 999999ull, 1000000ull,
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		expect_time(&l, t[i]);
	/* a walk in small random steps, crossing many seconds */
	uint64_t us = 1748779200000000ull, x = 12345;
	for (int i = 0; i < 20000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		us += (x >> 33) % 700000;
		expect_time(&l, us);
	}
}

/* ---- the text's room ----------------------------------------------------- */

/* The widest record the writer can meet for its strings' sizes: every
 * string member null, every number at its longest. record_text_format's
 * bound on the rest (FIXED_ROOM) must hold it (its assert), and the text
 * must be JSON. */
static void test_fixed_room_holds_the_widest_record(void **state)
{
	(void)state;
	struct record_text_clock c = RECORD_TEXT_CLOCK_INIT;
	struct hook_record_text t = {0};
	struct record_text_rec r;
	memset(&r, 0, sizeof(r));
	/* year 9999, the widest date strftime gives four digits */
	r.wall_us = 253402300799999999ull;
	r.from = "client";
	r.kind = RT_KIND_NOTIFICATION;
	r.outcome = "upstream_error";
	r.id_kind = RT_ID_INT;
	r.id_int = LLONG_MIN;
	r.has_error_code = 1;
	r.error_code = LLONG_MIN;
	r.http_status = INT_MIN;
	r.is_error = 0;
	r.notifications = UINT_MAX;
	r.finished = 1;
	r.latency_us = r.bytes_in = r.bytes_out = 1ull << 63;
	assert_int_equal(record_text_format(&t, &c, &r), 0);
	size_t len;
	char *s = record_text_seal(&t, 1, &len);
	json_error_t e;
	json_t *j = json_loadb(s, len, 0, &e);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "id")), LLONG_MIN);
	assert_true(json_is_null(json_object_get(j, "session")));
	json_decref(j);
	/* the text is in a block sized to its need, not doubled past it
	 * (the words: "client", "notification", "upstream_error") */
	assert_true(t.b.cap < SEQ_ROOM + FIXED_ROOM + 32 + TEXT_ROUND);
	free(t.b.p);
}

/* w_i64's short numbers, written in place, spell what sbuf_i64_text does
 * for every other one. */
static void test_numbers_as_sbuf_writes_them(void **state)
{
	(void)state;
	static const long long edges[] = {LLONG_MIN, LLONG_MIN + 1, -1000000, LLONG_MAX,
	                                  1000000, 4294967296LL};
	char got[SBUF_I64_MAX + 1], want[SBUF_I64_MAX + 1];
	for (long long v = -1100; v <= 1100 + (long long)(sizeof(edges) / sizeof(edges[0])); v++) {
		long long x = v <= 1100 ? v : edges[v - 1101];
		size_t n = (size_t)(w_i64(got, x) - got);
		size_t k = sbuf_i64_text(want, x);
		assert_int_equal(n, k);
		assert_memory_equal(got, want, k);
	}
}

/* ---- the per-exchange members ---------------------------------------------- */

static void rec_reset(struct record_text_rec *r)
{
	free(r->arena.p);
	free(r->ans.p);
	memset(r, 0, sizeof(*r));
	r->wall_us = 1748779200123456ull;
	r->from = "client";
	r->kind = RT_KIND_REQUEST;
	r->is_error = -1;
	record_text_set(r, RT_METHOD, "ping", 4);
}

/* r's sealed text, as a new string. */
static char *text_of(const struct record_text_rec *r)
{
	struct record_text_clock c = RECORD_TEXT_CLOCK_INIT;
	struct hook_record_text t = {0};
	assert_int_equal(record_text_format(&t, &c, r), 0);
	size_t len;
	char *s = strdup(record_text_seal(&t, 7, &len));
	free(t.b.p);
	return s;
}

/* The per-exchange members through the cache give the text they give
 * stored one by one, when the cache is made, when it is reused, and when
 * a value changes; the members the mask names are cut, the others not. */
static void test_consts_cache_is_the_members(void **state)
{
	(void)state;
	char long_name[400];
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	const char *v1[RT_NCONST] = {"127.0.0.1:5000", long_name, "up", NULL, "streamable_http",
	                             "sse"};
	const char *v2[RT_NCONST] = {"127.0.0.1:5001", "caf\xc3\xa9 \"q\"", "up", "2025-06-18",
	                             "streamable_http", "sse"};
	const char *const *vs[] = {v1, v1, v2, v1};
	unsigned cut = 1u << RT_CLIENT_NAME | 1u << RT_PROTOCOL;
	struct record_text_consts *c = record_text_consts_new();
	assert_non_null(c);
	struct record_text_rec a = {0}, b = {0};
	for (size_t k = 0; k < sizeof(vs) / sizeof(vs[0]); k++) {
		const char *const *v = vs[k];
		rec_reset(&a);
		rec_reset(&b);
		for (int i = 0; i < RT_NCONST; i++) {
			enum record_text_str f = (enum record_text_str)(RT_CONST_FIRST + i);
			if (cut >> f & 1u)
				record_text_set_cut(&a, f, v[i], 256);
			else
				record_text_set(&a, f, v[i], v[i] ? strlen(v[i]) : 0);
		}
		record_text_consts_put(c, &b, v, cut, 256);
		assert_int_equal(b.arena.oom, 0);
		assert_true(b.consts != 0);
		char *ta = text_of(&a), *tb = text_of(&b);
		assert_string_equal(ta, tb);
		json_error_t e;
		json_t *j = json_loads(tb, 0, &e);
		assert_non_null(j);
		assert_string_equal(json_string_value(json_object_get(j, "client")), v[0]);
		const char *name = json_string_value(json_object_get(j, "client_name"));
		assert_non_null(name);
		if (v == v1)
			assert_true(strlen(name) < strlen(long_name));
		else
			assert_string_equal(name, v2[1]);
		json_decref(j);
		free(ta);
		free(tb);
	}
	free(a.arena.p);
	free(b.arena.p);
	record_text_consts_free(c);
	record_text_consts_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_cache_across_seconds),
		cmocka_unit_test(test_fixed_room_holds_the_widest_record),
		cmocka_unit_test(test_numbers_as_sbuf_writes_them),
		cmocka_unit_test(test_consts_cache_is_the_members),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for proxy/base/jsame.c, through its public API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/base/jsame.h"

/* An array of n new strings "0", "1", ... */
static json_t *fresh(size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		char t[16];
		snprintf(t, sizeof(t), "%zu", i);
		json_array_append_new(a, json_string(t));
	}
	return a;
}

/* A new array holding a's values, position i replaced by a new value. */
static json_t *with_new_at(const json_t *a, size_t i)
{
	json_t *b = json_array();
	for (size_t k = 0; k < json_array_size(a); k++)
		json_array_append_new(b, k == i ? json_string("new") : json_incref(json_array_get(a, k)));
	return b;
}

static void test_nothing_kept(void **state)
{
	(void)state;
	struct jsame *s = jsame_new();
	size_t pos[4];
	json_t *a = fresh(3);
	assert_int_equal(jsame_diff(s, a, pos, 4), -1);
	assert_int_equal(jsame_diff(NULL, a, pos, 4), -1);
	assert_int_equal(jsame_size(s), 0);
	assert_null(jsame_at(s, 0));
	/* An empty array kept compares with an empty array. */
	json_t *e = json_array();
	assert_int_equal(jsame_keep(s, e, NULL, -1), 0);
	assert_int_equal(jsame_diff(s, e, pos, 4), 0);
	assert_int_equal(jsame_diff(s, a, pos, 4), -1);
	json_decref(e);
	json_decref(a);
	jsame_free(s);
}

static void test_positions_that_differ(void **state)
{
	(void)state;
	struct jsame *s = jsame_new();
	size_t pos[8];
	json_t *a = fresh(8);
	assert_int_equal(jsame_keep(s, a, NULL, -1), 0);
	assert_int_equal(jsame_size(s), 8);
	assert_int_equal(jsame_diff(s, a, pos, 4), 0);
	/* Equal values are not the same values. */
	json_t *eq = fresh(8);
	assert_int_equal(jsame_diff(s, eq, pos, 8), 8);
	assert_int_equal(jsame_diff(s, eq, pos, 4), -1);
	json_t *b = with_new_at(a, 5);
	assert_int_equal(jsame_diff(s, b, pos, 4), 1);
	assert_int_equal(pos[0], 5);
	assert_int_equal(jsame_diff(s, b, pos, 0), -1);
	/* Kept where it differed: b is what is kept now. */
	assert_int_equal(jsame_keep(s, b, pos, 1), 0);
	assert_ptr_equal(jsame_at(s, 5), json_array_get(b, 5));
	assert_int_equal(jsame_diff(s, b, pos, 4), 0);
	assert_int_equal(jsame_diff(s, a, pos, 4), 1);
	/* Another length: nothing to compare. */
	json_t *c = fresh(7);
	assert_int_equal(jsame_diff(s, c, pos, 4), -1);
	assert_int_equal(jsame_diff(s, json_object_get(b, "x"), pos, 4), -1);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(eq);
	jsame_free(s);
}

/* What is kept is held: the values outlive the arrays they came in. */
static void test_references_held(void **state)
{
	(void)state;
	struct jsame *s = jsame_new();
	json_t *a = fresh(2);
	json_t *v0 = json_array_get(a, 0);
	assert_int_equal(jsame_keep(s, a, NULL, -1), 0);
	json_decref(a);
	assert_string_equal(json_string_value(jsame_at(s, 0)), "0");
	assert_ptr_equal(jsame_at(s, 0), v0);
	/* Keeping another array lets the old values go, the shared ones not. */
	json_t *b = json_array();
	json_array_append(b, (json_t *)(uintptr_t)jsame_at(s, 1));
	assert_int_equal(jsame_keep(s, b, NULL, -1), 0);
	assert_int_equal(jsame_size(s), 1);
	assert_string_equal(json_string_value(jsame_at(s, 0)), "1");
	json_decref(b);
	assert_string_equal(json_string_value(jsame_at(s, 0)), "1");
	jsame_clear(s);
	size_t pos[1];
	assert_int_equal(jsame_diff(s, b, pos, 1), -1);
	/* Not an array: nothing kept. */
	assert_int_equal(jsame_keep(s, NULL, NULL, -1), -1);
	assert_int_equal(jsame_size(s), 0);
	jsame_free(s);
	jsame_free(NULL);
}

/* The bound every reader uses: an eighth of the array, JSAME_FEW at most. */
static void test_few(void **state)
{
	(void)state;
	struct jsame *s = jsame_new();
	size_t pos[JSAME_FEW];
	json_t *a = fresh(16);
	assert_int_equal(jsame_keep(s, a, NULL, -1), 0);
	json_t *b = with_new_at(a, 3), *c = with_new_at(b, 9), *d = with_new_at(c, 12);
	assert_int_equal(jsame_few(s, b, pos), 1);
	assert_int_equal(jsame_few(s, c, pos), 2);
	assert_int_equal(pos[1], 9);
	assert_int_equal(jsame_few(s, d, pos), -1); /* 3 of 16: over an eighth */
	json_t *big = fresh(8 * (JSAME_FEW + 8));
	assert_int_equal(jsame_keep(s, big, NULL, -1), 0);
	json_t *e = json_array();
	for (size_t k = 0; k < json_array_size(big); k++)
		json_array_append_new(e, k <= JSAME_FEW ? json_string("x")
		                                         : json_incref(json_array_get(big, k)));
	assert_int_equal(jsame_few(s, e, pos), -1); /* JSAME_FEW + 1 differ */
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(d);
	json_decref(e);
	json_decref(big);
	jsame_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_kept),
		cmocka_unit_test(test_positions_that_differ),
		cmocka_unit_test(test_references_held),
		cmocka_unit_test(test_few),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

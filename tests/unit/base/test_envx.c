/* Unit tests for proxy/base/envx.c: the one ${NAME} rule (envx.h). Names
 * follow [A-Za-z_][A-Za-z0-9_]*, 1 to 127 characters; anything else
 * between "${" and "}" is an error and is never looked up; "$" alone and
 * an unclosed "${" are literal; an unset variable stops the expansion
 * unless the lookup stands in a value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/base/envx.h"

/* A lookup over a fixed table that records every name asked for. */
struct fake {
	char asked[512];
	int stand_in; /* unset names get "" instead of NULL */
};

static const char *fake_get(void *arg, const char *name)
{
	struct fake *f = arg;
	strcat(f->asked, name);
	strcat(f->asked, ",");
	if (strcmp(name, "A") == 0)
		return "alpha";
	if (strcmp(name, "_b9") == 0)
		return "B";
	if (strcmp(name, "EMPTY") == 0)
		return "";
	return f->stand_in ? "" : NULL;
}

static char *expand(struct fake *f, const char *v, struct envx_fail *fail)
{
	memset(f->asked, 0, sizeof(f->asked));
	return envx_expand(v, fake_get, f, fail);
}

static void test_expands_every_reference(void **state)
{
	(void)state;
	struct fake f = {0};
	struct envx_fail fail;
	char *v = expand(&f, "Bearer ${A}-${_b9}${A}${EMPTY}.", &fail);
	assert_string_equal(v, "Bearer alpha-Balpha.");
	assert_int_equal(fail.why, ENVX_OK);
	assert_string_equal(f.asked, "A,_b9,A,EMPTY,");
	free(v);
	/* Growing past the first guess of the size, many times. */
	char big[400] = "";
	for (int i = 0; i < 60; i++)
		strcat(big, "${A}");
	v = expand(&f, big, &fail);
	assert_int_equal(strlen(v), 60 * 5);
	free(v);
}

static void test_literal_dollars(void **state)
{
	(void)state;
	struct fake f = {0};
	struct envx_fail fail;
	static const char *const same[] = {"", "plain", "$", "$A", "a $ {b}", "${A", "cost: $5", "${ x"};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		char *v = expand(&f, same[i], &fail);
		assert_string_equal(v, same[i]);
		assert_string_equal(f.asked, "");
		free(v);
	}
}

static void test_odd_names_are_errors(void **state)
{
	(void)state;
	struct fake f = {.stand_in = 1};
	struct envx_fail fail;
	static const char *const odd[] = {
		"${}", "${1A}", "${A-B}", "${A B}", "${A:-x}", "${ A}", "${A.B}", "x${A}${é}",
	};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		assert_null(expand(&f, odd[i], &fail));
		assert_int_equal(fail.why, ENVX_BAD_NAME);
		assert_string_equal(fail.name, "");
		/* An odd name is never looked up (only the good one before it). */
		assert_string_equal(f.asked, strstr(odd[i], "${A}") ? "A," : "");
	}
}

static void test_name_length_bound(void **state)
{
	(void)state;
	struct fake f = {.stand_in = 1};
	struct envx_fail fail;
	char v[ENVX_NAME_MAX + 8];
	/* 127 characters: a name. */
	memset(v, 'N', sizeof(v));
	memcpy(v, "${", 2);
	v[2 + ENVX_NAME_MAX] = '}';
	v[3 + ENVX_NAME_MAX] = '\0';
	char *out = expand(&f, v, &fail);
	assert_string_equal(out, "");
	assert_int_equal(strlen(f.asked), ENVX_NAME_MAX + 1);
	free(out);
	/* 128: refused, not cut to 127 (that would be another variable). */
	v[2 + ENVX_NAME_MAX] = 'N';
	v[3 + ENVX_NAME_MAX] = '}';
	v[4 + ENVX_NAME_MAX] = '\0';
	assert_null(expand(&f, v, &fail));
	assert_int_equal(fail.why, ENVX_BAD_NAME);
	assert_string_equal(f.asked, "");
}

static void test_unset_names_the_variable(void **state)
{
	(void)state;
	struct fake f = {0};
	struct envx_fail fail;
	assert_null(expand(&f, "${A} ${NOPE} ${LATER}", &fail));
	assert_int_equal(fail.why, ENVX_UNSET);
	assert_string_equal(fail.name, "NOPE");
	assert_string_equal(f.asked, "A,NOPE,"); /* stops at the first */
	/* A lookup that stands in "" sees every unset name (config reports all). */
	f.stand_in = 1;
	char *v = expand(&f, "${A} ${NOPE} ${LATER}", &fail);
	assert_string_equal(v, "alpha  ");
	assert_string_equal(f.asked, "A,NOPE,LATER,");
	free(v);
}

static void test_default_lookup_is_getenv(void **state)
{
	(void)state;
	struct envx_fail fail;
	setenv("ENVX_TEST_VAR", "from-env", 1);
	unsetenv("ENVX_TEST_UNSET");
	char *v = envx_expand("<${ENVX_TEST_VAR}>", NULL, NULL, &fail);
	assert_string_equal(v, "<from-env>");
	free(v);
	assert_null(envx_expand("${ENVX_TEST_UNSET}", NULL, NULL, &fail));
	assert_int_equal(fail.why, ENVX_UNSET);
	assert_string_equal(fail.name, "ENVX_TEST_UNSET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expands_every_reference),
		cmocka_unit_test(test_literal_dollars),
		cmocka_unit_test(test_odd_names_are_errors),
		cmocka_unit_test(test_name_length_bound),
		cmocka_unit_test(test_unset_names_the_variable),
		cmocka_unit_test(test_default_lookup_is_getenv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

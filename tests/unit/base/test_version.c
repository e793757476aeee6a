/* Unit tests for proxy/base/version.c: the --version text is the program's
 * version line, then one line per library, in a fixed order, each with a
 * version; the string is the one the build passed (never the old
 * hard-coded 0.1.0). The integration test (version.test.mjs) compares the
 * values with git and pkg-config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/base/version.h"

static void test_version_string(void **state)
{
	(void)state;
	const char *v = version_get();
	assert_non_null(v);
	assert_true(strlen(v) > 0);
	assert_null(strchr(v, ' '));
	assert_string_not_equal(v, "0.1.0");
	assert_ptr_equal(version_get(), v); /* static storage, the same each call */
}

static void test_version_print_lines(void **state)
{
	(void)state;
	static const char *const names[] = {"mcpwarden", "libevent", "jansson", "openssl", "llhttp"};
	char buf[1024] = {0};
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
	assert_non_null(f);
	version_print(f);
	fclose(f);
	char *line = buf;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		size_t n = strlen(names[i]);
		assert_memory_equal(line, names[i], n);
		assert_int_equal(line[n], ' ');
		assert_true(strlen(line + n + 1) > 0);
		line = nl + 1;
	}
	assert_string_equal(line, "");
	/* the first line carries version_get() itself */
	assert_string_equal(buf + strlen("mcpwarden "), version_get());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_string),
		cmocka_unit_test(test_version_print_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

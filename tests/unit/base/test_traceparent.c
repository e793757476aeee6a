/* Unit tests for proxy/base/traceparent.c: the W3C Trace Context Level 1
 * examples parse and write back byte for byte; what the spec calls
 * invalid (version ff, uppercase, zero ids, wrong length for 00, bad
 * separators) is refused; a later version's extra field is ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/base/traceparent.h"

#define EXAMPLE "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int parse(const char *s, struct trace_ctx *tc)
{
	return traceparent_parse(s, strlen(s), tc);
}

static void test_example_round_trips(void **state)
{
	(void)state;
	struct trace_ctx tc;
	char out[TRACEPARENT_LEN + 1];
	assert_int_equal(parse(EXAMPLE, &tc), 0);
	assert_int_equal(tc.trace_id[0], 0x4b);
	assert_int_equal(tc.span_id[7], 0xb7);
	assert_int_equal(tc.flags, 1);
	assert_int_equal(traceparent_format(&tc, out), TRACEPARENT_LEN);
	assert_string_equal(out, EXAMPLE);
}

static void test_blanks_trimmed(void **state)
{
	(void)state;
	struct trace_ctx tc;
	assert_int_equal(parse("  " EXAMPLE "\t", &tc), 0);
}

static void test_invalid_refused(void **state)
{
	(void)state;
	struct trace_ctx tc;
	static const char *const bad[] = {
		"",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse(bad[i], &tc), -1);
}

static void test_later_version_extra_ignored(void **state)
{
	(void)state;
	struct trace_ctx tc;
	char out[TRACEPARENT_LEN + 1];
	assert_int_equal(parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what", &tc), 0);
	traceparent_format(&tc, out);
	/* written as version 00 with only the sampled flag */
	assert_string_equal(out, EXAMPLE);
}

static void test_hex(void **state)
{
	(void)state;
	const uint8_t b[] = {0x00, 0xab, 0xff};
	char out[7];
	traceparent_hex(b, 3, out);
	assert_string_equal(out, "00abff");
	assert_int_equal(traceparent_zero((const uint8_t *)"\0\0", 2), 1);
	assert_int_equal(traceparent_zero(b, 3), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_round_trips),
		cmocka_unit_test(test_blanks_trimmed),
		cmocka_unit_test(test_invalid_refused),
		cmocka_unit_test(test_later_version_extra_ignored),
		cmocka_unit_test(test_hex),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

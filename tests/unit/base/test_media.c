/* Unit tests for proxy/base/media.c: the Content-Type rule of RFC 9110
 * §8.3 (type/subtype case-insensitive, then optional whitespace and
 * parameters after ';') and JSON by name or +json suffix (RFC 6839). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proxy/base/media.h"

static void test_media_is_matches(void **state)
{
	(void)state;
	static const char *const yes[] = {
		"text/event-stream",
		"Text/Event-Stream",
		"TEXT/EVENT-STREAM",
		"text/event-stream;charset=utf-8",
		"text/event-stream; charset=utf-8",
		"text/event-stream ;charset=utf-8",
		"text/event-stream\t; charset=utf-8",
		"text/event-stream ",
		"text/event-stream;",
		" text/event-stream",
	};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(media_is(yes[i], "text/event-stream"));
}

static void test_media_is_refuses(void **state)
{
	(void)state;
	static const char *const no[] = {
		"",
		"text/event-streams",   /* a longer subtype */
		"text/event-stream x",  /* something other than parameters */
		"text/event-stream,application/json",
		"text/event",
		"text/plain",
		"application/json",
	};
	assert_false(media_is(NULL, "text/event-stream"));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(media_is(no[i], "text/event-stream"));
}

static void test_json_by_name_or_suffix(void **state)
{
	(void)state;
	static const char *const yes[] = {
		"application/json",
		"Application/JSON; charset=utf-8",
		"application/json ;q=1",
		"application/vnd.api+json",
		"application/problem+json; charset=utf-8",
		"text/x+JSON",
	};
	static const char *const no[] = {
		"",
		"application/jsonx",
		"application/json-seq",
		"application/json x",
		"text/plain; profile=a+json",  /* the suffix is the subtype's, not a parameter's */
		"application/+json",            /* a suffix needs a subtype before it */
		"+json",
		"/x+json",
		"text/event-stream",
	};
	assert_false(media_is_json(NULL));
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(media_is_json(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(media_is_json(no[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_media_is_matches),
		cmocka_unit_test(test_media_is_refuses),
		cmocka_unit_test(test_json_by_name_or_suffix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

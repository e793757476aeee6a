/* The shared unit-test helpers (helpers.h). */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* strdup, clock_gettime under -std=c11 */
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "tests/unit/helpers.h"

char *th_quotes(const char *text)
{
	char *s = strdup(text);
	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return s;
}

json_t *th_json_text(const char *text, size_t flags)
{
	json_error_t err;
	json_t *v = json_loads(text, flags, &err);
	if (v == NULL)
		fail_msg("bad test JSON at %d: %s\n%s", err.position, err.text, text);
	return v;
}

json_t *th_json_flags(const char *text, size_t flags)
{
	char *s = th_quotes(text);
	json_t *v = th_json_text(s, flags);
	free(s);
	return v;
}

json_t *th_json(const char *text)
{
	return th_json_flags(text, JSON_DECODE_ANY);
}

void th_temp_write(char *path, const char *text)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t n = strlen(text);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	assert_int_equal(close(fd), 0);
}

void th_run_for(struct event_base *base, unsigned ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

uint64_t th_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

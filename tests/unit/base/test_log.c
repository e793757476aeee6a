/* Unit tests for proxy/base/log.c: a text log line is one line whatever the
 * client sent. Tool names, JSON-RPC methods and paths come from clients; a
 * newline in one forged a second log line, and an escape sequence reached
 * the operator's terminal raw. Both are now written as \xNN (C1 controls
 * as \u00NN), and the line still ends in its one newline. log_block keeps
 * the newlines of the program's own multi-line reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proxy/base/log.h"

/* Runs fn with stderr sent to a temporary file; returns what it wrote
 * (NUL-terminated, in buf). */
static void capture_stderr(void (*fn)(void), char *buf, size_t len)
{
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	fflush(stderr);
	int saved = dup(fileno(stderr));
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), fileno(stderr)) >= 0);
	fn();
	fflush(stderr);
	assert_true(dup2(saved, fileno(stderr)) >= 0);
	close(saved);
	rewind(tmp);
	size_t n = fread(buf, 1, len - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
}

static size_t count_char(const char *s, char c)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == c;
	return n;
}

static int has_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
			return 1;
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			return 1;
	}
	return 0;
}

static void emit_access(void)
{
	struct log_access a = {
		.conn_id = 7,
		.client = "127.0.0.1:5000",
		.http_method = "POST",
		.path = "/mcp\r\nX",
		.rpc_method = "tools/call\x7f",
		.tool = "echo\n2026-12-02T00:00:00.000Z error forged\x1b[31m\xc2\x9b" "2J",
		.status = 200,
	};
	log_access(&a);
}

static void test_access_line_stays_one_line(void **state)
{
	(void)state;
	char out[4096];
	log_setup(LOG_INFO, 0);
	capture_stderr(emit_access, out, sizeof(out));
	assert_int_equal(count_char(out, '\n'), 1);
	assert_int_equal(out[strlen(out) - 1], '\n');
	assert_false(has_control(out));
	/* What was there stays readable. */
	assert_non_null(strstr(out, "tool=echo\\x0a2026-12-02T00:00:00.000Z error forged\\x1b[31m\\u009b2J"));
	assert_non_null(strstr(out, "/mcp\\x0d\\x0aX"));
	assert_non_null(strstr(out, "tools/call\\x7f"));
}

static void emit_access_all(void)
{
	struct log_access a = {
		.conn_id = 18446744073709551615ull,
		.client = "10.0.0.9:41000",
		.client_name = "ci",
		.http_method = "POST",
		.path = "/mcp",
		.upstream = "staging",
		.rpc_method = "tools/call",
		.tool = "search",
		.status = 502,
		.latency_us = 1250,
		.bytes_in = 123,
		.bytes_out = 0,
		.note = "upstream refused",
	};
	log_access(&a);
	struct log_access b = {.conn_id = 0, .status = 400, .latency_us = 49};
	log_access(&b);
	struct log_access c = {.conn_id = 3, .http_method = "GET", .path = "/", .status = 200,
	                       .latency_us = 98765432};
	log_access(&c);
}

/* Every field in its place; "-" for an unknown client, method or path;
 * the latency to a tenth of a millisecond, rounded half up; the time in
 * RFC 3339 UTC with milliseconds. */
static void test_access_line_fields(void **state)
{
	(void)state;
	char out[4096];
	log_setup(LOG_INFO, 0);
	capture_stderr(emit_access_all, out, sizeof(out));
	assert_int_equal(count_char(out, '\n'), 3);
	char *l2 = strchr(out, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
	const char *lines[] = {out, l2, l3};
	const char *want[] = {
		" info  #18446744073709551615 10.0.0.9:41000 as=ci POST /mcp tools/call tool=search "
		"-> 502 1.3ms in=123 out=0 up=staging note=upstream refused\n",
		" info  #0 - - - -> 400 0.0ms in=0 out=0\n",
		" info  #3 - GET / -> 200 98765.4ms in=0 out=0\n",
	};
	for (int i = 0; i < 3; i++) {
		const char *t = lines[i];
		/* 2026-12-02T15:04:05.678Z */
		assert_int_equal(t[4], '-');
		assert_int_equal(t[10], 'T');
		assert_int_equal(t[19], '.');
		assert_int_equal(t[23], 'Z');
		assert_int_equal(strncmp(t + 24, want[i], strlen(want[i])), 0);
	}
}

static void emit_access_json(void)
{
	struct log_access a = {.conn_id = 4, .status = 200, .latency_us = 1234};
	log_access(&a);
}

static void test_access_json_latency(void **state)
{
	(void)state;
	char out[4096];
	log_setup(LOG_INFO, 1);
	capture_stderr(emit_access_json, out, sizeof(out));
	log_setup(LOG_INFO, 0);
	assert_non_null(strstr(out, "\"latency_ms\":1.234,"));
	assert_non_null(strstr(out, "\"path\":null"));
}

static void emit_msg(void)
{
	log_msg(LOG_WARN, "tool %s: %s", "bad\ntool", "\x1b]0;title\x07");
}

static void test_message_line_stays_one_line(void **state)
{
	(void)state;
	char out[4096];
	log_setup(LOG_INFO, 0);
	capture_stderr(emit_msg, out, sizeof(out));
	assert_int_equal(count_char(out, '\n'), 1);
	assert_false(has_control(out));
	assert_non_null(strstr(out, "tool bad\\x0atool: \\x1b]0;title\\x07"));
}

static void emit_plain(void)
{
	log_msg(LOG_INFO, "listening on %s (caf\xc3\xa9)", "127.0.0.1:8080");
}

static void test_plain_text_unchanged(void **state)
{
	(void)state;
	char out[4096];
	log_setup(LOG_INFO, 0);
	capture_stderr(emit_plain, out, sizeof(out));
	/* UTF-8 outside the C1 range is text, not a control: kept as is. */
	assert_non_null(strstr(out, " info  listening on 127.0.0.1:8080 (caf\xc3\xa9)\n"));
}

static void emit_json(void)
{
	log_msg(LOG_INFO, "tool %s", "a\nb");
}

static void test_json_line_escapes_by_itself(void **state)
{
	(void)state;
	char out[4096];
	log_setup(LOG_INFO, 1);
	capture_stderr(emit_json, out, sizeof(out));
	log_setup(LOG_INFO, 0);
	assert_int_equal(count_char(out, '\n'), 1);
	assert_non_null(strstr(out, "\"msg\":\"tool a\\nb\""));
}

static void emit_block(void)
{
	log_block(LOG_ERROR, "configuration errors:", "$.a: unknown key\n$.b\x1b[2J: must be a string\n");
}

static void test_block_keeps_its_own_lines(void **state)
{
	(void)state;
	char out[4096];
	log_setup(LOG_INFO, 0);
	capture_stderr(emit_block, out, sizeof(out));
	assert_non_null(strstr(out, " error configuration errors:\n$.a: unknown key\n$.b\\x1b[2J: must be a string\n"));
	assert_false(has_control(out));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_access_line_stays_one_line),
		cmocka_unit_test(test_access_line_fields),
		cmocka_unit_test(test_access_json_latency),
		cmocka_unit_test(test_message_line_stays_one_line),
		cmocka_unit_test(test_plain_text_unchanged),
		cmocka_unit_test(test_json_line_escapes_by_itself),
		cmocka_unit_test(test_block_keeps_its_own_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

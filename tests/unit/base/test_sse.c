/* Unit tests for proxy/base/sse.c, through the public API only.
 * Why this file is long: one test per behaviour of the module, each reading
 * on its own (a failure names one behaviour), with the regression cases.
 *
 * Each report from the reader is rendered into one line of a text log so a
 * test states the whole expected outcome as a string:
 *   block:   {id=.. event=.. data=.. retry=..}   (absent fields omitted)
 *   comment: (text)
 * Bytes outside printable ASCII are written as \n, \r, \0 or \xNN.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "proxy/base/sse.h"

#define LOG_MAX 4096

struct rec {
	char   log[LOG_MAX];
	size_t len;
	int    calls;
	int    stop_at;   /* return stop_rc on this call (1-based); 0 = never */
	int    stop_rc;
};

static void
rec_puts(struct rec *t, const char *s, size_t n)
{
	assert_true(n < LOG_MAX - t->len);
	memcpy(t->log + t->len, s, n);
	t->len += n;
	t->log[t->len] = '\0';
}

static void
rec_escaped(struct rec *t, const char *s, size_t n)
{
	char tmp[8];
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n')
			rec_puts(t, "\\n", 2);
		else if (c == '\r')
			rec_puts(t, "\\r", 2);
		else if (c == '\0')
			rec_puts(t, "\\0", 2);
		else if (c < 0x20 || c >= 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\x%02X", c);
			rec_puts(t, tmp, 4);
		} else
			rec_puts(t, s + i, 1);
	}
}

static void
rec_field(struct rec *t, const char *name, const char *v, size_t n)
{
	if (v == NULL)
		return;
	if (t->log[t->len - 1] != '{')
		rec_puts(t, " ", 1);
	rec_puts(t, name, strlen(name));
	rec_puts(t, "=", 1);
	rec_escaped(t, v, n);
}

static int
rec_cb(void *arg, const struct sse_event *ev, const char *comment,
       size_t comment_len)
{
	struct rec *t = arg;

	if (ev != NULL) {
		char num[32];

		assert_null(comment);
		rec_puts(t, "{", 1);
		rec_field(t, "id", ev->id, ev->id_len);
		rec_field(t, "event", ev->event, ev->event_len);
		rec_field(t, "data", ev->data, ev->data_len);
		if (ev->retry >= 0) {
			snprintf(num, sizeof(num), "%ld", ev->retry);
			rec_field(t, "retry", num, strlen(num));
		}
		rec_puts(t, "}", 1);
	} else {
		assert_non_null(comment);
		rec_puts(t, "(", 1);
		rec_escaped(t, comment, comment_len);
		rec_puts(t, ")", 1);
	}
	t->calls++;
	if (t->stop_at == t->calls)
		return t->stop_rc;
	return 0;
}

/* Feeds s (n bytes, so NUL can be inside) whole into a fresh reader and
 * checks the log; also checks that one-byte feeding gives the same. */
static void
expect_n(const char *s, size_t n, const char *want)
{
	struct sse_reader *r;
	struct rec t;
	size_t i;

	memset(&t, 0, sizeof(t));
	r = sse_reader_new(1 << 16);
	assert_non_null(r);
	assert_int_equal(sse_reader_feed(r, s, n, rec_cb, &t), 0);
	assert_string_equal(t.log, want);
	sse_reader_free(r);

	memset(&t, 0, sizeof(t));
	r = sse_reader_new(1 << 16);
	assert_non_null(r);
	for (i = 0; i < n; i++)
		assert_int_equal(sse_reader_feed(r, s + i, 1, rec_cb, &t), 0);
	assert_string_equal(t.log, want);
	sse_reader_free(r);
}

static void
expect(const char *s, const char *want)
{
	expect_n(s, strlen(s), want);
}

/* Feeds a C string. */
static int
feed(struct sse_reader *r, const char *s, struct rec *t)
{
	return sse_reader_feed(r, s, strlen(s), rec_cb, t);
}

static char *
write_event(const struct sse_event *ev, int *rc)
{
	struct evbuffer *out = evbuffer_new();
	size_t n;
	char *s;

	assert_non_null(out);
	*rc = sse_write_event(out, ev);
	n = evbuffer_get_length(out);
	s = malloc(n + 1);
	assert_non_null(s);
	assert_int_equal(evbuffer_remove(out, s, n), (int)n);
	s[n] = '\0';
	evbuffer_free(out);
	return s;
}

static struct sse_event
event0(void)
{
	struct sse_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.retry = -1;
	return ev;
}

/* ---- line endings --------------------------------------------------------- */

static void
test_lf_endings(void **state)
{
	(void)state;
	expect("data: a\n\ndata: b\n\n", "{data=a}{data=b}");
}

static void
test_crlf_endings(void **state)
{
	(void)state;
	expect("data: a\r\nid: 1\r\n\r\n", "{id=1 data=a}");
}

static void
test_cr_endings(void **state)
{
	(void)state;
	expect("data: a\rid: 1\r\r", "{id=1 data=a}");
}

static void
test_mixed_endings(void **state)
{
	(void)state;
	expect("data: a\rdata: b\ndata: c\r\n\n", "{data=a\\nb\\nc}");
}

/* The LF completing a CRLF arrives in the next fragment: it must not be
 * read as a blank line. */
static void
test_crlf_split_across_feeds(void **state)
{
	struct sse_reader *r = sse_reader_new(1024);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, "data: a\r", &t), 0);
	assert_int_equal(feed(r, "", &t), 0);
	assert_int_equal(sse_reader_feed(r, NULL, 0, rec_cb, &t), 0);
	assert_int_equal(feed(r, "\ndata: b\r", &t), 0);
	assert_string_equal(t.log, "");
	assert_int_equal(feed(r, "\n\r\n", &t), 0);
	assert_string_equal(t.log, "{data=a\\nb}");
	sse_reader_free(r);
}

static void
test_cr_cr_is_blank_line(void **state)
{
	(void)state;
	expect("data: a\r\r\n", "{data=a}");
}

static void
test_lf_cr_is_blank_line(void **state)
{
	(void)state;
	expect("data: a\n\rdata: b\n\n", "{data=a}{data=b}");
}

/* ---- BOM ------------------------------------------------------------------ */

static void
test_bom_stripped(void **state)
{
	(void)state;
	expect("\xEF\xBB\xBF" "data: a\n\n", "{data=a}");
}

static void
test_bom_stripped_before_comment(void **state)
{
	(void)state;
	expect("\xEF\xBB\xBF: hi\n", "(hi)");
}

/* Only at the very start: a second BOM is part of the first field name,
 * which is then unknown and ignored. */
static void
test_bom_only_once(void **state)
{
	(void)state;
	expect("\xEF\xBB\xBF\xEF\xBB\xBF" "data: a\n\ndata: b\n\n", "{data=b}");
}

static void
test_bom_later_is_content(void **state)
{
	(void)state;
	expect("data: \xEF\xBB\xBFx\n\n", "{data=\\xEF\\xBB\\xBFx}");
}

/* Bytes that began like a BOM but were not one belong to the first line. */
static void
test_partial_bom_is_content(void **state)
{
	struct sse_reader *r = sse_reader_new(1024);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, "\xEF", &t), 0);
	assert_int_equal(feed(r, "\xBB", &t), 0);
	/* Undecided: not yet part of any block. */
	assert_int_equal(sse_reader_pending(r), 0);
	assert_int_equal(feed(r, "x", &t), 0);
	assert_int_equal(sse_reader_pending(r), 3);
	assert_int_equal(feed(r, ":y\n\n: \xEF\n", &t), 0);
	/* "\xEF\xBBx:y" is an unknown field, so only the comment shows. */
	assert_string_equal(t.log, "(\\xEF)");
	assert_int_equal(sse_reader_pending(r), 0);
	sse_reader_free(r);
}

/* ---- fields ---------------------------------------------------------------- */

static void
test_multiline_data_joined(void **state)
{
	(void)state;
	expect("data: a\ndata:\ndata: c\n\n", "{data=a\\n\\nc}");
}

/* The MCP 2025-11-25 priming event: an id and an empty data field. */
static void
test_priming_event_empty_data(void **state)
{
	(void)state;
	expect("id: 42\ndata:\n\n", "{id=42 data=}");
}

static void
test_no_data_field_gives_null(void **state)
{
	(void)state;
	expect("event: ping\n\n", "{event=ping}");
}

static void
test_retry_only_block(void **state)
{
	(void)state;
	expect("retry: 3000\n\n", "{retry=3000}");
}

static void
test_retry_not_digits_ignored(void **state)
{
	(void)state;
	expect("retry: 12a\n\nretry:\n\nretry: -1\n\nretry: 5\nretry: x\ndata: d\n\n",
	       "{data=d retry=5}");
}

static void
test_retry_overflow_ignored(void **state)
{
	(void)state;
	expect("retry: 99999999999999999999999\ndata: d\n\n", "{data=d}");
}

static void
test_id_with_nul_ignored(void **state)
{
	static const char s[] = "id: 1\nid: a\0b\n\nid: c\0\n\n";

	(void)state;
	expect_n(s, sizeof(s) - 1, "{id=1}");
}

static void
test_empty_id_reported(void **state)
{
	(void)state;
	expect("id\n\nid:\n\n", "{id=}{id=}");
}

static void
test_field_without_colon(void **state)
{
	(void)state;
	expect("data\ndata\nevent\n\n", "{event= data=\\n}");
}

static void
test_one_space_stripped(void **state)
{
	(void)state;
	expect("data:x\n\ndata:  x\n\ndata: \n\n", "{data=x}{data= x}{data=}");
}

static void
test_value_keeps_colons_and_tabs(void **state)
{
	(void)state;
	expect("data: a: b\n\ndata:\tx\n\n", "{data=a: b}{data=\\x09x}");
}

static void
test_unknown_fields_ignored(void **state)
{
	(void)state;
	expect("foo: bar\n\nfoo: bar\ndata: d\n\n", "{data=d}");
}

static void
test_field_names_case_sensitive(void **state)
{
	(void)state;
	expect("Data: x\nID: 1\nEvent: e\n\n", "");
}

static void
test_last_value_wins(void **state)
{
	(void)state;
	expect("event: a\nevent: b\nid: 1\nid: 2\nretry: 1\nretry: 2\n\n",
	       "{id=2 event=b retry=2}");
}

static void
test_block_reset_after_dispatch(void **state)
{
	(void)state;
	expect("id: 1\nevent: e\nretry: 9\ndata: a\n\ndata: b\n\n",
	       "{id=1 event=e data=a retry=9}{data=b}");
}

static void
test_nul_in_data_preserved(void **state)
{
	static const char s[] = "data: a\0b\nevent: \0\n\n";

	(void)state;
	expect_n(s, sizeof(s) - 1, "{event=\\0 data=a\\0b}");
}

/* ---- comments and blank lines ------------------------------------------- */

static void
test_comment_reported_immediately(void **state)
{
	struct sse_reader *r = sse_reader_new(1024);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, "data: a\n: keep-alive\n", &t), 0);
	/* Reported before the block ends, and does not end it. */
	assert_string_equal(t.log, "(keep-alive)");
	assert_int_equal(feed(r, "data: b\n\n", &t), 0);
	assert_string_equal(t.log, "(keep-alive){data=a\\nb}");
	sse_reader_free(r);
}

static void
test_comment_space_handling(void **state)
{
	(void)state;
	expect(":\n:x\n:  y\n: \n", "()(x)( y)()");
}

static void
test_blank_lines_without_fields(void **state)
{
	(void)state;
	expect("\n\n\r\n\r: c\n\n", "(c)");
}

static void
test_incomplete_block_not_reported(void **state)
{
	struct sse_reader *r = sse_reader_new(1024);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, "data: a\n\ndata: b\n", &t), 0);
	assert_string_equal(t.log, "{data=a}");
	assert_int_equal(sse_reader_pending(r), 1);
	sse_reader_free(r);
}

/* ---- pending --------------------------------------------------------------- */

static void
test_pending_counts_line_and_fields(void **state)
{
	struct sse_reader *r = sse_reader_new(1024);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(sse_reader_pending(r), 0);
	assert_int_equal(feed(r, "id: 12\nevent: e\ndata: abc\nda", &t), 0);
	/* "12" + "e" + "abc" + the unfinished "da". */
	assert_int_equal(sse_reader_pending(r), 2 + 1 + 3 + 2);
	assert_int_equal(feed(r, "ta: d\n\n", &t), 0);
	assert_int_equal(sse_reader_pending(r), 0);
	assert_string_equal(t.log, "{id=12 event=e data=abc\\nd}");
	sse_reader_free(r);
}

/* ---- bound ------------------------------------------------------------------ */

static void
test_line_at_bound_accepted(void **state)
{
	struct sse_reader *r = sse_reader_new(10);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	/* "data: 1234" is exactly 10 bytes; then "data:5", split across
	 * feeds, is 6 bytes next to the 4 kept: exactly 10 again. */
	assert_int_equal(feed(r, "data: 1234\n", &t), 0);
	assert_int_equal(feed(r, "data:", &t), 0);
	assert_int_equal(feed(r, "5", &t), 0);
	assert_int_equal(feed(r, "\n\n", &t), 0);
	assert_string_equal(t.log, "{data=1234\\n5}");
	sse_reader_free(r);
}

static void
test_long_line_in_one_fragment_too_big(void **state)
{
	struct sse_reader *r = sse_reader_new(10);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, "data: 12345\n\n", &t),
	                 SSE_ERR_TOO_BIG);
	assert_string_equal(t.log, "");
	sse_reader_free(r);
}

static void
test_long_partial_line_too_big(void **state)
{
	struct sse_reader *r = sse_reader_new(10);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, ": 34567", &t), 0);
	assert_int_equal(feed(r, "890", &t), 0);
	assert_int_equal(feed(r, "1", &t), SSE_ERR_TOO_BIG);
	sse_reader_free(r);
}

/* The line's head fits, but its end, arriving with the line ending, does
 * not. */
static void
test_split_line_completed_too_big(void **state)
{
	struct sse_reader *r = sse_reader_new(10);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, ": 345", &t), 0);
	assert_int_equal(feed(r, "678901\n", &t), SSE_ERR_TOO_BIG);
	assert_string_equal(t.log, "");
	sse_reader_free(r);
}

/* Bytes held as a possible BOM count once they turn out to be content. */
static void
test_partial_bom_counts_against_bound(void **state)
{
	struct sse_reader *r = sse_reader_new(1);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, "\xEF\xBB", &t), 0);
	assert_int_equal(feed(r, "\n", &t), SSE_ERR_TOO_BIG);
	sse_reader_free(r);

	/* A real BOM costs nothing, even under a bound smaller than it. */
	r = sse_reader_new(1);
	assert_int_equal(feed(r, "\xEF\xBB\xBF\n\r\n", &t), 0);
	sse_reader_free(r);
}

/* Lines that each fit, whose values add up past the bound. */
static void
test_accumulated_fields_too_big(void **state)
{
	struct sse_reader *r = sse_reader_new(16);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, "data: 12345\n", &t), 0);
	assert_int_equal(feed(r, "id: 1234\n", &t), 0);
	assert_int_equal(feed(r, "data: 12\n", &t),
	                 SSE_ERR_TOO_BIG);
	assert_string_equal(t.log, "");
	sse_reader_free(r);
}

/* Blocks are bounded one at a time: many small blocks never add up. */
static void
test_bound_is_per_block(void **state)
{
	struct sse_reader *r = sse_reader_new(16);
	struct rec t;
	int i;

	(void)state;
	memset(&t, 0, sizeof(t));
	for (i = 0; i < 100; i++)
		assert_int_equal(feed(r, "data: 123456789\n\n", &t), 0);
	assert_int_equal(t.calls, 100);
	sse_reader_free(r);
}

static void
test_too_big_is_sticky(void **state)
{
	struct sse_reader *r = sse_reader_new(4);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(feed(r, "data: x\n", &t),
	                 SSE_ERR_TOO_BIG);
	assert_int_equal(feed(r, "\n", &t), SSE_ERR_TOO_BIG);
	assert_int_equal(feed(r, "id\n\n", &t),
	                 SSE_ERR_TOO_BIG);
	assert_int_equal(sse_reader_feed(r, NULL, 0, rec_cb, &t), SSE_ERR_TOO_BIG);
	assert_string_equal(t.log, "");
	sse_reader_free(r);
}

/* ---- callbacks ---------------------------------------------------------------- */

static void
test_callback_stop_returns_value(void **state)
{
	static const char s[] = "data: a\n\n: c\ndata: b\n\n";
	struct sse_reader *r = sse_reader_new(1024);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.stop_at = 1;
	t.stop_rc = 7;
	assert_int_equal(sse_reader_feed(r, s, sizeof(s) - 1, rec_cb, &t), 7);
	assert_string_equal(t.log, "{data=a}");
	sse_reader_free(r);
}

static void
test_comment_callback_stop(void **state)
{
	static const char s[] = ": one\n: two\n";
	struct sse_reader *r = sse_reader_new(1024);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.stop_at = 1;
	t.stop_rc = -1;
	assert_int_equal(sse_reader_feed(r, s, sizeof(s) - 1, rec_cb, &t), -1);
	assert_string_equal(t.log, "(one)");
	sse_reader_free(r);
}

/* A stop leaves the reader consistent: the line that triggered it is
 * consumed, and a caller that goes on feeding does not see it twice. */
static void
test_feed_continues_after_stop(void **state)
{
	struct sse_reader *r = sse_reader_new(1024);
	struct rec t;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.stop_at = 1;
	t.stop_rc = 3;
	assert_int_equal(feed(r, ": x", &t), 0);
	assert_int_equal(feed(r, "\n", &t), 3);
	assert_int_equal(sse_reader_pending(r), 0);
	assert_int_equal(feed(r, "data: y\n\n", &t), 0);
	assert_string_equal(t.log, "(x){data=y}");
	sse_reader_free(r);
}

/* ---- scale ----------------------------------------------------------------- */

static int
count_cb(void *arg, const struct sse_event *ev, const char *comment,
         size_t comment_len)
{
	size_t *n = arg;

	(void)comment;
	(void)comment_len;
	if (ev != NULL && ev->data != NULL)
		*n = ev->data_len;
	return 0;
}

/* 4 MiB fed one byte at a time: finishes only if each byte is scanned once
 * and the buffer grows geometrically. */
static void
test_huge_line_byte_at_a_time(void **state)
{
	const size_t n = (size_t)4 << 20;
	struct sse_reader *r = sse_reader_new(n + 16);
	size_t got = 0, i;
	char c = 'x';

	(void)state;
	assert_int_equal(sse_reader_feed(r, "data: ", 6, count_cb, &got), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(sse_reader_feed(r, &c, 1, count_cb, &got), 0);
	assert_int_equal(sse_reader_pending(r), n + 6);
	assert_int_equal(sse_reader_feed(r, "\n\n", 2, count_cb, &got), 0);
	assert_int_equal(got, n);
	assert_int_equal(sse_reader_pending(r), 0);
	/* The large buffers were released; the next block still works. */
	assert_int_equal(sse_reader_feed(r, "data: yz\n\n", 10, count_cb, &got),
	                 0);
	assert_int_equal(got, 2);
	sse_reader_free(r);
}

static void
test_many_data_lines(void **state)
{
	struct sse_reader *r = sse_reader_new((size_t)1 << 20);
	size_t got = 0;
	int i;

	(void)state;
	for (i = 0; i < 100000; i++)
		assert_int_equal(sse_reader_feed(r, "data: x\n", 8, count_cb, &got),
		                 0);
	assert_int_equal(sse_reader_feed(r, "\n", 1, count_cb, &got), 0);
	assert_int_equal(got, 100000 * 2 - 1);
	sse_reader_free(r);
}

static void
test_free_null(void **state)
{
	(void)state;
	sse_reader_free(NULL);
}

/* ---- writer ------------------------------------------------------------------ */

static void
test_write_full_event(void **state)
{
	struct sse_event ev = event0();
	char *s;
	int rc;

	(void)state;
	ev.id = "7";
	ev.id_len = 1;
	ev.event = "message";
	ev.event_len = 7;
	ev.data = "{\"a\":1}";
	ev.data_len = 7;
	ev.retry = 1500;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s,
	    "id: 7\nevent: message\nretry: 1500\ndata: {\"a\":1}\n\n");
	free(s);
}

static void
test_write_multiline_data(void **state)
{
	struct sse_event ev = event0();
	char *s;
	int rc;

	(void)state;
	ev.data = "a\n\nb\n";
	ev.data_len = 5;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "data: a\ndata:\ndata: b\ndata:\n\n");
	free(s);
}

static void
test_write_priming_event(void **state)
{
	struct sse_event ev = event0();
	char *s;
	int rc;

	(void)state;
	ev.id = "abc";
	ev.id_len = 3;
	ev.data = "";
	ev.data_len = 0;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "id: abc\ndata:\n\n");
	free(s);
}

static void
test_write_without_data(void **state)
{
	struct sse_event ev = event0();
	char *s;
	int rc;

	(void)state;
	ev.retry = 0;
	ev.event = "";
	s = write_event(&ev, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "event:\nretry: 0\n\n");
	free(s);
}

static void
test_write_uses_lengths(void **state)
{
	struct sse_event ev = event0();
	char *s;
	int rc;

	(void)state;
	ev.id = "12345";
	ev.id_len = 2;
	ev.data = "abcdef";
	ev.data_len = 3;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "id: 12\ndata: abc\n\n");
	free(s);
}

static void
test_write_rejects_eol_in_id(void **state)
{
	struct sse_event ev = event0();
	char *s;
	int rc;

	(void)state;
	ev.id = "1\n\ndata: evil";
	ev.id_len = strlen(ev.id);
	ev.data = "x";
	ev.data_len = 1;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(s, "");
	free(s);
	ev.id = "1\r";
	ev.id_len = 2;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(s, "");
	free(s);
}

static void
test_write_rejects_nul_in_id(void **state)
{
	struct sse_event ev = event0();
	char *s;
	int rc;

	(void)state;
	ev.id = "a\0b";
	ev.id_len = 3;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(s, "");
	free(s);
}

static void
test_write_rejects_eol_in_event(void **state)
{
	struct sse_event ev = event0();
	char *s;
	int rc;

	(void)state;
	ev.event = "a\rb";
	ev.event_len = 3;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(s, "");
	free(s);
	ev.event = "a\nb";
	s = write_event(&ev, &rc);
	assert_int_equal(rc, -1);
	free(s);
}

static void
test_write_rejects_cr_in_data(void **state)
{
	struct sse_event ev = event0();
	char *s;
	int rc;

	(void)state;
	ev.data = "a\r\nb";
	ev.data_len = 4;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(s, "");
	free(s);
}

static void
test_write_rejects_null_args(void **state)
{
	struct evbuffer *out = evbuffer_new();
	struct sse_event ev = event0();

	(void)state;
	assert_int_equal(sse_write_event(NULL, &ev), -1);
	assert_int_equal(sse_write_event(out, NULL), -1);
	assert_int_equal(sse_write_comment(NULL, "x"), -1);
	assert_int_equal(evbuffer_get_length(out), 0);
	evbuffer_free(out);
}

/* What the writer emits reads back as the same block. */
static void
test_write_read_roundtrip(void **state)
{
	static const char in[] =
	    "id: 9\nevent:  spaced\nretry: 007\ndata: a\ndata:\ndata:  b\ndata\n\n";
	struct sse_event ev = event0();
	struct rec t1, t2;
	struct sse_reader *r;
	char *s;
	int rc;

	(void)state;
	memset(&t1, 0, sizeof(t1));
	memset(&t2, 0, sizeof(t2));
	r = sse_reader_new(1024);
	assert_int_equal(sse_reader_feed(r, in, sizeof(in) - 1, rec_cb, &t1), 0);
	sse_reader_free(r);
	assert_string_equal(t1.log,
	    "{id=9 event= spaced data=a\\n\\n b\\n retry=7}");

	ev.id = "9";
	ev.id_len = 1;
	ev.event = " spaced";
	ev.event_len = 7;
	ev.data = "a\n\n b\n";
	ev.data_len = 6;
	ev.retry = 7;
	s = write_event(&ev, &rc);
	assert_int_equal(rc, 0);
	r = sse_reader_new(1024);
	assert_int_equal(sse_reader_feed(r, s, strlen(s), rec_cb, &t2), 0);
	sse_reader_free(r);
	assert_string_equal(t2.log, t1.log);
	free(s);
}

static void
test_write_comment(void **state)
{
	struct evbuffer *out = evbuffer_new();
	char buf[64];
	size_t n;

	(void)state;
	assert_int_equal(sse_write_comment(out, "keep-alive"), 0);
	assert_int_equal(sse_write_comment(out, ""), 0);
	assert_int_equal(sse_write_comment(out, NULL), 0);
	n = evbuffer_get_length(out);
	assert_true(n < sizeof(buf));
	evbuffer_remove(out, buf, n);
	buf[n] = '\0';
	assert_string_equal(buf, ": keep-alive\n\n:\n\n:\n\n");
	evbuffer_free(out);
}

static void
test_write_comment_rejects_eol(void **state)
{
	struct evbuffer *out = evbuffer_new();

	(void)state;
	assert_int_equal(sse_write_comment(out, "a\nb"), -1);
	assert_int_equal(sse_write_comment(out, "a\r"), -1);
	assert_int_equal(evbuffer_get_length(out), 0);
	evbuffer_free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lf_endings),
		cmocka_unit_test(test_crlf_endings),
		cmocka_unit_test(test_cr_endings),
		cmocka_unit_test(test_mixed_endings),
		cmocka_unit_test(test_crlf_split_across_feeds),
		cmocka_unit_test(test_cr_cr_is_blank_line),
		cmocka_unit_test(test_lf_cr_is_blank_line),
		cmocka_unit_test(test_bom_stripped),
		cmocka_unit_test(test_bom_stripped_before_comment),
		cmocka_unit_test(test_bom_only_once),
		cmocka_unit_test(test_bom_later_is_content),
		cmocka_unit_test(test_partial_bom_is_content),
		cmocka_unit_test(test_multiline_data_joined),
		cmocka_unit_test(test_priming_event_empty_data),
		cmocka_unit_test(test_no_data_field_gives_null),
		cmocka_unit_test(test_retry_only_block),
		cmocka_unit_test(test_retry_not_digits_ignored),
		cmocka_unit_test(test_retry_overflow_ignored),
		cmocka_unit_test(test_id_with_nul_ignored),
		cmocka_unit_test(test_empty_id_reported),
		cmocka_unit_test(test_field_without_colon),
		cmocka_unit_test(test_one_space_stripped),
		cmocka_unit_test(test_value_keeps_colons_and_tabs),
		cmocka_unit_test(test_unknown_fields_ignored),
		cmocka_unit_test(test_field_names_case_sensitive),
		cmocka_unit_test(test_last_value_wins),
		cmocka_unit_test(test_block_reset_after_dispatch),
		cmocka_unit_test(test_nul_in_data_preserved),
		cmocka_unit_test(test_comment_reported_immediately),
		cmocka_unit_test(test_comment_space_handling),
		cmocka_unit_test(test_blank_lines_without_fields),
		cmocka_unit_test(test_incomplete_block_not_reported),
		cmocka_unit_test(test_pending_counts_line_and_fields),
		cmocka_unit_test(test_line_at_bound_accepted),
		cmocka_unit_test(test_long_line_in_one_fragment_too_big),
		cmocka_unit_test(test_long_partial_line_too_big),
		cmocka_unit_test(test_split_line_completed_too_big),
		cmocka_unit_test(test_partial_bom_counts_against_bound),
		cmocka_unit_test(test_accumulated_fields_too_big),
		cmocka_unit_test(test_bound_is_per_block),
		cmocka_unit_test(test_too_big_is_sticky),
		cmocka_unit_test(test_callback_stop_returns_value),
		cmocka_unit_test(test_comment_callback_stop),
		cmocka_unit_test(test_feed_continues_after_stop),
		cmocka_unit_test(test_huge_line_byte_at_a_time),
		cmocka_unit_test(test_many_data_lines),
		cmocka_unit_test(test_free_null),
		cmocka_unit_test(test_write_full_event),
		cmocka_unit_test(test_write_multiline_data),
		cmocka_unit_test(test_write_priming_event),
		cmocka_unit_test(test_write_without_data),
		cmocka_unit_test(test_write_uses_lengths),
		cmocka_unit_test(test_write_rejects_eol_in_id),
		cmocka_unit_test(test_write_rejects_nul_in_id),
		cmocka_unit_test(test_write_rejects_eol_in_event),
		cmocka_unit_test(test_write_rejects_cr_in_data),
		cmocka_unit_test(test_write_rejects_null_args),
		cmocka_unit_test(test_write_read_roundtrip),
		cmocka_unit_test(test_write_comment),
		cmocka_unit_test(test_write_comment_rejects_eol),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

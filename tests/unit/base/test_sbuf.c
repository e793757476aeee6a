/* Unit tests for proxy/base/sbuf.c's JSON and UTF-8 helpers. The fast paths
 * work eight bytes at a time, so every helper is compared with a plain
 * byte-by-byte reference (written here from the JSON and UTF-8 rules, not
 * from sbuf.c) on random inputs of every length and alignment, rich in the
 * bytes that matter: controls, '"', '\\', continuation bytes, 0x7F. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/base/sbuf.h"
#include "tests/unit/helpers.h"

/* ---- references ------------------------------------------------------------ */

static size_t ref_escape(char *w, const unsigned char *s, size_t n)
{
	char *start = w;
	*w++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		switch (c) {
		case '"': w += sprintf(w, "\\\""); break;
		case '\\': w += sprintf(w, "\\\\"); break;
		case '\b': w += sprintf(w, "\\b"); break;
		case '\f': w += sprintf(w, "\\f"); break;
		case '\n': w += sprintf(w, "\\n"); break;
		case '\r': w += sprintf(w, "\\r"); break;
		case '\t': w += sprintf(w, "\\t"); break;
		default:
			if (c < 0x20)
				w += sprintf(w, "\\u%04X", c);
			else
				*w++ = (char)c;
		}
	}
	*w++ = '"';
	*w = '\0';
	return (size_t)(w - start);
}

static size_t ref_chars(const unsigned char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += (s[i] & 0xC0) != 0x80;
	return k;
}

/* Code points of the escaped text (continuation bytes counted at their
 * lead): what the "cut: N of M chars" marker counts. */
static size_t ref_json_chars(const unsigned char *s, size_t n)
{
	char *w = malloc(6 * n + 3);
	size_t len = ref_escape(w, s, n);
	size_t k = ref_chars((const unsigned char *)w, len);
	free(w);
	return k;
}

static int ref_utf8_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], need, cp;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xE0) == 0xC0)
			need = 2, cp = c & 0x1F;
		else if ((c & 0xF0) == 0xE0)
			need = 3, cp = c & 0x0F;
		else if ((c & 0xF8) == 0xF0)
			need = 4, cp = c & 0x07;
		else
			return 0;
		if (i + need > n)
			return 0;
		for (unsigned k = 1; k < need; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		unsigned min = need == 2 ? 0x80 : need == 3 ? 0x800 : 0x10000;
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
		i += need;
	}
	return 1;
}

/* ---- random text ---------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull;

static unsigned rnd(void)
{
	return (unsigned)(th_xorshift(&rng) >> 11);
}

/* Mostly plain ASCII (the fast path), with the special bytes sprinkled at
 * a rate of one in `rare`. */
static void random_bytes(unsigned char *s, size_t n, unsigned rare, int utf8)
{
	static const unsigned char special[] = {'"', '\\', 0, 1, '\n', '\t', 0x1F, 0x7F, 0x20};
	static const char *const seqs[] = {"\xc3\xa9", "\xe2\x80\xa2", "\xf0\x9f\x98\x80",
	                                   "\xed\x9f\xbf"};
	for (size_t i = 0; i < n; i++) {
		unsigned r = rnd();
		if (r % rare)
			s[i] = (unsigned char)(0x21 + r / rare % 94);
		else if (!utf8)
			s[i] = r / rare % 3 ? special[r / rare % sizeof(special)] : (unsigned char)(r >> 3);
		else if (r / rare % 2) {
			s[i] = special[r / rare % sizeof(special)];
		} else {
			const char *q = seqs[r / rare / 2 % 4];
			size_t k = strlen(q);
			if (i + k > n) {
				s[i] = 'x';
				continue;
			}
			memcpy(s + i, q, k);
			i += k - 1;
		}
	}
}

/* ---- tests ------------------------------------------------------------------ */

static void test_escape_matches_reference(void **state)
{
	(void)state;
	unsigned char buf[300 + 8];
	char want[6 * 300 + 3];
	for (int round = 0; round < 20000; round++) {
		size_t n = rnd() % 300, off = rnd() % 8;
		unsigned rare = 1 + rnd() % 64;
		random_bytes(buf + off, n, rare, 0);
		size_t wlen = ref_escape(want, buf + off, n);

		struct sbuf b = {0};
		sbuf_putn(&b, "x", 1); /* not at the start of the buffer */
		sbuf_json_str(&b, (const char *)buf + off, n);
		assert_false(b.oom);
		assert_int_equal(b.len, wlen + 1);
		assert_memory_equal(b.p + 1, want, wlen);
		free(b.p);

		char w[6 * 300 + 2];
		size_t k = sbuf_json_escape_to(w, (const char *)buf + off, n);
		assert_int_equal(k, wlen - 2);
		assert_memory_equal(w, want + 1, k);
		assert_int_equal(sbuf_json_escaped_len((const char *)buf + off, n), wlen - 2);
	}
}

/* Each byte value alone, at every position of an 8-byte block: the block
 * tests must flag exactly the bytes that need escaping. */
static void test_escape_every_byte_every_position(void **state)
{
	(void)state;
	for (unsigned c = 0; c < 256; c++) {
		for (size_t pos = 0; pos < 16; pos++) {
			unsigned char s[16];
			memset(s, 'a', sizeof(s));
			s[pos] = (unsigned char)c;
			char want[6 * 16 + 3];
			size_t wlen = ref_escape(want, s, sizeof(s));
			struct sbuf b = {0};
			sbuf_json_str(&b, (const char *)s, sizeof(s));
			assert_int_equal(b.len, wlen);
			assert_memory_equal(b.p, want, wlen);
			free(b.p);
		}
	}
}

static void test_escape_is_what_jansson_writes(void **state)
{
	(void)state;
	unsigned char buf[200];
	for (int round = 0; round < 2000; round++) {
		size_t n = rnd() % sizeof(buf);
		random_bytes(buf, n, 1 + rnd() % 16, 1);
		if (!sbuf_utf8_valid((const char *)buf, n))
			continue;
		json_t *j = json_stringn((const char *)buf, n);
		assert_non_null(j);
		char *want = json_dumps(j, JSON_ENCODE_ANY);
		struct sbuf b = {0};
		sbuf_json_str(&b, (const char *)buf, n);
		assert_string_equal(b.p, want);
		free(b.p);
		free(want);
		json_decref(j);
	}
}

static void test_chars_match_reference(void **state)
{
	(void)state;
	unsigned char buf[300 + 8];
	for (int round = 0; round < 20000; round++) {
		size_t n = rnd() % 300, off = rnd() % 8;
		random_bytes(buf + off, n, 1 + rnd() % 32, round % 2);
		assert_int_equal(sbuf_utf8_chars((const char *)buf + off, n), ref_chars(buf + off, n));
		assert_int_equal(sbuf_json_str_chars((const char *)buf + off, n),
		                 ref_json_chars(buf + off, n));
	}
}

static void test_utf8_valid_matches_reference(void **state)
{
	(void)state;
	unsigned char buf[300 + 8];
	int valid = 0, invalid = 0;
	for (int round = 0; round < 20000; round++) {
		size_t n = rnd() % 300, off = rnd() % 8;
		random_bytes(buf + off, n, 1 + rnd() % 64, round % 2);
		int want = ref_utf8_valid(buf + off, n);
		assert_int_equal(sbuf_utf8_valid((const char *)buf + off, n), want);
		valid += want;
		invalid += !want;
	}
	/* both answers were exercised */
	assert_true(valid > 1000 && invalid > 1000);
	/* a bad byte after a long ASCII run, at every position */
	for (size_t pos = 0; pos < 40; pos++) {
		char s[40];
		memset(s, 'a', sizeof(s));
		s[pos] = (char)0xC0;
		assert_false(sbuf_utf8_valid(s, sizeof(s)));
		s[pos] = (char)0x80;
		assert_false(sbuf_utf8_valid(s, sizeof(s)));
	}
}

/* sbuf_json_plain: ASCII that needs no escape, for each byte value at
 * every position and length (short texts take other paths than blocks). */
static void test_json_plain_every_byte(void **state)
{
	(void)state;
	int plain = 0;
	for (unsigned c = 0; c < 256; c++) {
		for (size_t n = 1; n <= 20; n++) {
			for (size_t pos = 0; pos < n; pos++) {
				char s[20];
				memset(s, 'a', sizeof(s));
				s[pos] = (char)c;
				int want = c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
				assert_int_equal(sbuf_json_plain(s, n), want);
				plain += want;
			}
		}
	}
	assert_true(plain > 0);
	assert_true(sbuf_json_plain("", 0));
	assert_true(sbuf_json_plain("127.0.0.1:5555", 14));
	assert_false(sbuf_json_plain("caf\xc3\xa9", 5));
}

static void test_i64_text_matches_printf(void **state)
{
	(void)state;
	static const long long edges[] = {0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, -1, -9, -10,
	                                  -99, -100, 9223372036854775807LL,
	                                  -9223372036854775807LL - 1};
	char got[SBUF_I64_MAX + 1], want[32];
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		size_t n = sbuf_i64_text(got, edges[i]);
		got[n] = '\0';
		snprintf(want, sizeof(want), "%lld", edges[i]);
		assert_string_equal(got, want);
	}
	for (int round = 0; round < 100000; round++) {
		/* every magnitude, both signs */
		long long v = (long long)(((uint64_t)rnd() << 32 | rnd()) >> (rnd() % 64));
		if (round % 2)
			v = -v;
		size_t n = sbuf_i64_text(got, v);
		got[n] = '\0';
		snprintf(want, sizeof(want), "%lld", v);
		assert_string_equal(got, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_matches_reference),
		cmocka_unit_test(test_escape_every_byte_every_position),
		cmocka_unit_test(test_escape_is_what_jansson_writes),
		cmocka_unit_test(test_chars_match_reference),
		cmocka_unit_test(test_utf8_valid_matches_reference),
		cmocka_unit_test(test_json_plain_every_byte),
		cmocka_unit_test(test_i64_text_matches_printf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for checks/jsre.c, through the public API only.
 * Why this file is long: one test per feature of the 'u' grammar, each
 * with its near misses, then the error messages, the limits and the
 * official JSON-Schema-Test-Suite's pattern cases.
 *
 * Expected answers are ECMA-262's (checked against node 20's RegExp with
 * the 'u' flag while writing them). The suite tests read the installed
 * Debian packages (tests/deps.sh) and are skipped when those are missing.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dirent.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "checks/jsre.h"
#include "proxy/base/limits.h"
#include "tests/unit/helpers.h"

/* Compiles pat (must succeed), searches s, frees. */
static int search_n(const char *pat, size_t plen, const char *s, size_t slen)
{
	char err[200];
	struct jsre *re = jsre_compile(pat, plen, err, sizeof err);
	if (!re)
		fail_msg("pattern %s refused: %s", pat, err);
	int r = jsre_search(re, s, slen);
	jsre_free(re);
	return r;
}

static int search(const char *pat, const char *s)
{
	return search_n(pat, strlen(pat), s, strlen(s));
}

#define MATCH(p, s)   assert_int_equal(search(p, s), 1)
#define NOMATCH(p, s) assert_int_equal(search(p, s), 0)

/* pat is refused with a reason containing why, ending "at byte <at>". */
static void refused(const char *pat, const char *why, size_t at)
{
	char err[200], want[40];
	struct jsre *re = jsre_compile(pat, strlen(pat), err, sizeof err);
	if (re) {
		jsre_free(re);
		fail_msg("pattern %s compiled, expected \"%s\"", pat, why);
	}
	if (!strstr(err, why))
		fail_msg("pattern %s: \"%s\", expected \"%s\"", pat, err, why);
	snprintf(want, sizeof want, " at byte %zu", at);
	size_t n = strlen(err), w = strlen(want);
	if (n < w || strcmp(err + n - w, want) != 0)
		fail_msg("pattern %s: \"%s\", expected it to end with \"%s\"", pat, err, want);
	assert_null(strchr(err, '\n'));
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- features ------------------------------------------------------------------ */

static void test_literals_not_anchored(void **state)
{
	(void)state;
	MATCH("a+", "xxaayy");
	NOMATCH("a+", "xyz");
	MATCH("abc", "zzabczz");
	NOMATCH("abc", "abxabdab");
	MATCH("", "");
	MATCH("", "anything");
	MATCH("é", "caf\xc3\xa9");
	NOMATCH("X_", "a_x_3");
	MATCH("X_", "a_X_3");
	/* NUL is an ordinary character on both sides */
	assert_int_equal(search_n("a\0b", 3, "xa\0b", 4), 1);
	assert_int_equal(search_n("a\0b", 3, "xa\0c", 4), 0);
}

static void test_escapes(void **state)
{
	(void)state;
	MATCH("^\\t$", "\t");
	NOMATCH("^\\t$", "\\t");
	MATCH("^\\n\\r\\f\\v$", "\n\r\f\v");
	assert_int_equal(search_n("^\\0$", 4, "\0", 1), 1);
	MATCH("^\\x41\\x7a$", "Az");
	MATCH("^\\u00e9$", "\xc3\xa9");
	MATCH("^\\u{1F600}$", "\xf0\x9f\x98\x80");
	MATCH("^\\u{0000041}$", "A");
	/* a surrogate pair of \u escapes is one code point */
	MATCH("^\\uD83D\\uDE00$", "\xf0\x9f\x98\x80");
	MATCH("^\\uD83D\\uDE00{2}$", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80");
	MATCH("^\\cC$", "\x03");
	MATCH("^\\cc$", "\x03");
	NOMATCH("^\\cC$", "\\cC");
	MATCH("^\\/\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\$", "/.*+?()[]{}|^$\\");
	NOMATCH("\\.", "a");
}

static void test_dot(void **state)
{
	(void)state;
	MATCH("^.$", "a");
	MATCH("^.$", "\xf0\x9f\x98\x80"); /* a 4-byte code point is one character */
	MATCH("^.$", "\xe2\x80\x93");
	NOMATCH("^.$", "\n");
	NOMATCH("^.$", "\r");
	NOMATCH("^.$", "\xe2\x80\xa8"); /* U+2028 */
	NOMATCH("^.$", "\xe2\x80\xa9"); /* U+2029 */
	MATCH("^.$", "\xc2\x85"); /* U+0085 is not a line terminator in ECMA */
	NOMATCH("^.$", "");
	NOMATCH("^.$", "ab");
	MATCH("f.o", "xfooy");
	NOMATCH("a.b", "a\nb");
}

static void test_classes(void **state)
{
	(void)state;
	MATCH("^[abc]+$", "abcba");
	NOMATCH("^[abc]+$", "abd");
	MATCH("^[a-z0-9_]+$", "ab_09");
	NOMATCH("[a-z]cole", "l'\xc3\xa9" "cole");
	MATCH("[a-z]cole", "l'ecole");
	MATCH("^[^a-c]$", "d");
	NOMATCH("^[^a-c]$", "b");
	MATCH("^[^a-c]$", "\n"); /* a negated class takes line terminators */
	NOMATCH("[]", "a");
	NOMATCH("[]", "");
	MATCH("^[^]$", "\n");
	MATCH("^[-a]+$", "-a-");
	MATCH("^[a-]+$", "-a-");
	MATCH("^[\\d-]+$", "1-2");
	MATCH("^[\\w.]+$", "a.b_1");
	NOMATCH("^[\\w.]+$", "a b");
	MATCH("^[\\s]$", "\xe3\x80\x80"); /* U+3000 */
	MATCH("^[^\\d\\s]$", "a");
	NOMATCH("^[^\\d\\s]$", "5");
	MATCH("^[\\D]$", "a");
	MATCH("^[\\b]$", "\b"); /* backspace inside a class */
	MATCH("^[\\-]$", "-");
	MATCH("^[a\\]]+$", "]a");
	MATCH("^[[]$", "[");
	MATCH("^[--0]$", "/"); /* the range '-'..'0' */
	MATCH("^[\\x41-\\x43]+$", "ABC");
	MATCH("^[\\u{1F600}-\\u{1F64F}]$", "\xf0\x9f\x99\x82");
	MATCH("^[a-cx-z]+$", "axcz");
	NOMATCH("^[a-cx-z]+$", "m");
}

static void test_class_escapes(void **state)
{
	(void)state;
	MATCH("^\\d$", "0");
	NOMATCH("^\\d$", "\xdf\x80"); /* NKO DIGIT ZERO: \d is ASCII only */
	MATCH("^\\D$", "\xdf\x80");
	NOMATCH("^\\D$", "0");
	MATCH("^\\w$", "_");
	NOMATCH("^\\w$", "\xc3\xa9");
	MATCH("^\\W$", "\xc3\xa9");
	NOMATCH("^\\W$", "a");
	static const char *const spaces[] = {" ", "\t", "\v", "\f", "\n", "\r",
	                                      "\xc2\xa0", "\xef\xbb\xbf", "\xe2\x80\xa9",
	                                      "\xe2\x80\x83", "\xe1\x9a\x80", "\xe2\x80\xaf"};
	for (size_t i = 0; i < sizeof spaces / sizeof *spaces; i++) {
		MATCH("^\\s$", spaces[i]);
		NOMATCH("^\\S$", spaces[i]);
	}
	NOMATCH("^\\s$", "\x01");
	NOMATCH("^\\s$", "\xe2\x80\x93"); /* EN DASH */
	NOMATCH("^\\s$", "\xe2\x80\x8b"); /* ZERO WIDTH SPACE is not Zs */
	MATCH("^\\S$", "\x01");
	MATCH("\\wcole", "l'ecole");
	NOMATCH("\\wcole", "l'\xc3\xa9" "cole");
}

static void test_anchors(void **state)
{
	(void)state;
	MATCH("^abc$", "abc");
	NOMATCH("^abc$", "abc\n"); /* $ is the end of input only */
	NOMATCH("^b", "a\nb");     /* no multiline */
	NOMATCH("a$", "a\n");
	MATCH("^", "");
	MATCH("$", "x");
	MATCH("^$", "");
	NOMATCH("^$", "x");
	MATCH("^a|b$", "xb");
	MATCH("^a|b$", "ax");
	NOMATCH("^a|b$", "xa");
	NOMATCH("a^b", "ab");
	MATCH("(?:^|,)x", "a,x");
	MATCH("(?:^|,)x", "x");
	NOMATCH("(?:^|,)x", "ax");
}

static void test_word_boundaries(void **state)
{
	(void)state;
	MATCH("\\bfoo\\b", "a foo b");
	MATCH("\\bfoo\\b", "foo");
	NOMATCH("\\bfoo\\b", "afoo");
	NOMATCH("\\bfoo\\b", "foo_");
	MATCH("\\Boo\\B", "foox");
	NOMATCH("\\Boo", "oo");
	MATCH("\\b", "a");
	NOMATCH("\\b", "");
	NOMATCH("\\b", "  ");
	MATCH("\\B", "");
	MATCH("\\b\xc3\xa9", "a\xc3\xa9"); /* é is not a word character */
	NOMATCH("a\\b\xc3\xa9", "xa");
}

static void test_groups_alternation(void **state)
{
	(void)state;
	MATCH("^(ab)+$", "ababab");
	NOMATCH("^(ab)+$", "ababa");
	MATCH("^(?:ab|cd)*$", "abcdab");
	NOMATCH("^(?:ab|cd)*$", "abc");
	MATCH("^(?<year>\\d{4})-(?<month>\\d\\d)$", "2024-01");
	NOMATCH("^(?<year>\\d{4})-(?<month>\\d\\d)$", "202-01");
	MATCH("^(?<$_n\xc3\xa9" "1>x)$", "x");
	MATCH("^(a|b|c|)$", "");
	MATCH("^(a|b|c|)$", "c");
	NOMATCH("^(a|b|c|)$", "d");
	MATCH("^(|x)y$", "y");
	MATCH("^((a)|(b(c|d)))+$", "abdbca");
	MATCH("^(?:)$", "");
	MATCH("^()*$", "");
	MATCH("cat|dog", "hotdog");
	NOMATCH("^(?:cat|dog)$", "hotdog");
}

static void test_quantifiers(void **state)
{
	(void)state;
	MATCH("^a*$", "");
	MATCH("^a*$", "aaa");
	NOMATCH("^a*$", "abc");
	MATCH("^a+$", "a");
	NOMATCH("^a+$", "");
	MATCH("^ab?c$", "ac");
	MATCH("^ab?c$", "abc");
	NOMATCH("^ab?c$", "abbc");
	MATCH("^a{3}$", "aaa");
	NOMATCH("^a{3}$", "aa");
	NOMATCH("^a{3}$", "aaaa");
	MATCH("^a{2,}$", "aaaaa");
	NOMATCH("^a{2,}$", "a");
	MATCH("^a{2,3}$", "aa");
	MATCH("^a{2,3}$", "aaa");
	NOMATCH("^a{2,3}$", "aaaa");
	MATCH("^a{0}$", "");
	NOMATCH("^a{0}$", "a");
	MATCH("^a{0,0}b$", "b");
	MATCH("[0-9]{2,}", "a31b");
	NOMATCH("[0-9]{2,}", "answer 1");
	/* lazy forms: the same yes/no answer */
	MATCH("^a*?$", "aaa");
	MATCH("^a+?b$", "aab");
	MATCH("^a??b$", "b");
	MATCH("^a{2}?$", "aa");
	MATCH("^a{2,}?$", "aaa");
	MATCH("^a{1,2}?b$", "aab");
	NOMATCH("^a{1,2}?b$", "aaab");
	MATCH("^(?:a|ab)(?:c|bcd)(?:d*)$", "abcd");
	MATCH("^(a?){3}$", "");   /* required iterations may match empty */
	MATCH("^(a*)*b$", "aab");
	MATCH("^(a|)+$", "aa");
}

static void test_unicode(void **state)
{
	(void)state;
	MATCH("^.{2}$", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80"); /* "😀😀" */
	NOMATCH("^.{2}$", "\xf0\x9f\x98\x80");
	NOMATCH("^.{8}$", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80");
	MATCH("^[\xce\xb1-\xcf\x89]+$", "\xce\xb2\xce\xb3"); /* [α-ω] */
	NOMATCH("^[\xce\xb1-\xcf\x89]+$", "b");
	MATCH("^[\xc3\xa0-\xc3\xbf\xf0\x9f\x98\x80-\xf0\x9f\x98\x82]+$",
	      "\xc3\xa9\xf0\x9f\x98\x81"); /* [à-ÿ😀-😂] on "é😁" */
	NOMATCH("^[^\xf0\x9f\x98\x80]$", "\xf0\x9f\x98\x80");
	MATCH("^[^\xf0\x9f\x98\x80]$", "\xf0\x9f\x98\x81");
	MATCH("^\xf0\x9f\x90\xb2*$", "");           /* ^🐲*$ */
	MATCH("^\xf0\x9f\x90\xb2*$", "\xf0\x9f\x90\xb2\xf0\x9f\x90\xb2");
	NOMATCH("^\xf0\x9f\x90\xb2*$", "\xf0\x9f\x90\x89");
	NOMATCH("^\xf0\x9f\x90\xb2*$", "DD");
	MATCH("^\xc3\xa1", "\xc3\xa1rbol");
	NOMATCH("^\xc3\xa1", "a\xcc\x81rbol"); /* no normalisation */
}

static void test_properties(void **state)
{
	(void)state;
	MATCH("\\p{Letter}cole", "l'\xc3\xa9" "cole");
	MATCH("\\p{L}cole", "l'ecole");
	NOMATCH("\\p{L}cole", "L'\xc3\x89" "COLE");
	MATCH("^\\p{Lu}\\p{Ll}$", "\xc3\x89t");
	NOMATCH("^\\p{Lu}$", "a");
	MATCH("^\\p{Uppercase_Letter}$", "\xce\xa9");
	MATCH("^\\p{Lowercase_Letter}$", "\xcf\x89");
	MATCH("^\\p{digit}+$", "42");
	MATCH("^\\p{Nd}+$", "\xe0\xa7\xaa\xe0\xa7\xa8"); /* BENGALI FOUR, TWO */
	NOMATCH("^\\p{Nd}+$", "-%#");
	MATCH("^\\p{N}$", "\xc2\xbd");            /* ½ is N (No) */
	NOMATCH("^\\p{Nd}$", "\xc2\xbd");
	MATCH("^\\p{Number}$", "\xe2\x85\xa0");   /* U+2160 ROMAN NUMERAL ONE is Nl */
	MATCH("^\\p{Decimal_Number}$", "\xdf\x80");
	MATCH("^\\p{gc=Lu}$", "A");
	MATCH("^\\p{General_Category=Letter}$", "\xe4\xb8\xad"); /* 中 is Lo */
	MATCH("^\\P{L}$", "1");
	NOMATCH("^\\P{L}$", "a");
	MATCH("^[\\p{Lu}\\d]+$", "A1B2");
	NOMATCH("^[\\p{Lu}\\d]+$", "A1b");
	MATCH("^[^\\P{Ll}]$", "a"); /* double negation */
	NOMATCH("^[^\\P{Ll}]$", "A");
	MATCH("^\\p{Any}$", "\n");
	MATCH("^\\p{ASCII}+$", "abc\x7f");
	NOMATCH("^\\p{ASCII}$", "\xc3\xa9");
	refused("\\p{Script=Greek}", "unsupported Unicode property \\p{Script=Greek}", 0);
	refused("x\\p{Lt}", "unsupported Unicode property", 1);
	refused("\\p{letter}", "unsupported Unicode property", 0); /* names are case sensitive */
	refused("\\p{gc=Any}", "unsupported Unicode property", 0);
	refused("\\pL", "invalid property name", 0);
	refused("\\p{}", "invalid property name", 0);
	refused("\\p{L", "invalid property name", 0);
	refused("[\\p{L}-z]", "invalid character class range", 1);
}

static void test_invalid_utf8_subject(void **state)
{
	(void)state;
	MATCH("^.$", "\xff");                      /* one bad byte: one U+FFFD */
	MATCH("^\\uFFFD$", "\xff");
	MATCH("^.{2}$", "\xe2\x82");               /* truncated: one per byte */
	MATCH("^.{2}$", "\xc0\xaf");               /* overlong */
	MATCH("^.{3}$", "\xed\xa0\x80");           /* an encoded surrogate */
	MATCH("^.{4}$", "\xf4\x90\x80\x80");       /* past U+10FFFF */
	MATCH("^a.b$", "a\x80" "b");               /* a stray continuation byte */
	MATCH("^a.{3}$", "a\xf0\x9f\x98");         /* truncated at the end */
	NOMATCH("^\\w$", "\xff");
	MATCH("^\xf0\x9f\x98\x80$", "\xf0\x9f\x98\x80");
	assert_int_equal(search_n("x", 1, NULL, 0), 0);
	assert_int_equal(search_n("", 0, NULL, 0), 1);
}

/* ---- errors --------------------------------------------------------------------- */

static void test_errors(void **state)
{
	(void)state;
	refused("\\a", "invalid escape \\a", 0);
	refused("ab\\-", "invalid escape \\-", 2);
	refused("\\e", "invalid escape", 0);
	refused("(?=a)", "lookahead is not supported", 0);
	refused("x(?!a)", "lookahead is not supported", 1);
	refused("(?<=a)b", "lookbehind is not supported", 0);
	refused("(?<!a)b", "lookbehind is not supported", 0);
	refused("(a)\\1", "backreferences are not supported", 3);
	refused("(?<n>a)\\k<n>", "backreferences are not supported", 7);
	refused("[\\k]", "invalid escape \\k", 1);
	refused("(?i:a)", "modifiers are not supported", 0);
	refused("[abc", "unterminated character class", 0);
	refused("a(b", "unterminated group", 1);
	refused("a)b", "unmatched ')'", 1);
	refused("*a", "nothing to repeat", 0);
	refused("a**", "nothing to repeat", 2);
	refused("a{2}{3}", "nothing to repeat", 4);
	refused("a{1000}{1000}", "nothing to repeat", 7);
	refused("^*", "nothing to repeat", 1);
	refused("\\b+", "nothing to repeat", 2);
	refused("a|?", "nothing to repeat", 2);
	refused("a{", "incomplete quantifier", 1);
	refused("a{,5}", "incomplete quantifier", 1);
	refused("a{2,x}", "incomplete quantifier", 1);
	refused("{", "nothing to repeat", 0);
	refused("a}", "lone '}'", 1);
	refused("a]", "lone ']'", 1);
	refused("a{3,1}", "numbers out of order in {} quantifier", 1);
	refused("[z-a]", "range out of order in character class", 1);
	refused("[\\d-z]", "invalid character class range", 1);
	refused("[a-\\w]", "invalid character class range", 1);
	refused("\\c1", "invalid \\c escape", 0);
	refused("\\x4", "invalid \\x escape", 0);
	refused("\\u12", "invalid Unicode escape", 0);
	refused("\\u{110000}", "invalid Unicode escape", 0);
	refused("\\u{}", "invalid Unicode escape", 0);
	refused("\\u{12", "invalid Unicode escape", 0);
	refused("\\01", "invalid decimal escape", 0);
	refused("ab\\", "\\ at end of pattern", 2);
	refused("[a\\", "\\ at end of pattern", 2);
	refused("a\xff", "invalid UTF-8 in the pattern", 1);
	refused("[\xc3]", "invalid UTF-8 in the pattern", 1);
	refused("(?<n>a)(?<n>b)", "duplicate group name", 7);
	refused("(?<n>a)|(?<n>b)", "duplicate group name", 8);
	refused("(?<1a>x)", "invalid group name", 0);
	refused("(?<>x)", "invalid group name", 0);
	refused("(?<a", "invalid group name", 0);
	refused("(?", "modifiers are not supported", 0);
	refused("^(abc]", "lone ']'", 5);

	/* a short or absent buffer is never overrun; the reason is one line */
	char small[8];
	memset(small, 'x', sizeof small);
	assert_null(jsre_compile("(?=a)", 5, small, sizeof small));
	assert_int_equal(small[7], '\0');
	assert_null(jsre_compile("(?=a)", 5, NULL, 0));
	jsre_free(NULL);
}

/* ---- limits ------------------------------------------------------------------------- */

static void test_limit_nested_star(void **state)
{
	(void)state;
	size_t n = 10000;
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, 'a', n);
	s[n] = '\0';
	double t0 = now_s();
	assert_int_equal(search("(a*)*b", s), 0);
	assert_int_equal(search("^(a|a)*$", s), 1);
	assert_int_equal(search("(a|aa)+c", s), 0);
	assert_int_equal(search("^(?:a?){20}a{20}$", "aaaaaaaaaaaaaaaaaaaa"), 1);
	assert_int_equal(search("(x+x+)+y", s), 0);
	double t = now_s() - t0;
	print_message("  exponential-backtracking patterns on 10k 'a': %.1f ms\n", t * 1e3);
	assert_true(t < 5.0); /* about 1 ms at -O3; generous for valgrind */
	free(s);
}

static void test_limit_program(void **state)
{
	(void)state;
	refused("(?:a{1000}){1000}", "repetition over 20000 instructions once expanded", 11);
	refused("a{20000}", "repetition over", 1);
	refused("(?:(?:a{100}){100}){100}", "repetition over", 19);
	refused("a{0,99999999999999}", "repetition over", 1);
	refused("a{4294967297}", "repetition over", 1); /* 2^32 + 1 saturates, never wraps */
	MATCH("^(?:){4294967297,99999999999999}$", "");
	refused("(?:){3,2}", "numbers out of order", 4);
	/* ^a{19998} is 19999 instructions plus MATCH: the cap exactly */
	char err[200];
	struct jsre *re = jsre_compile("^a{19998}", 9, err, sizeof err);
	assert_non_null(re);
	jsre_free(re);
	refused("^a{19999}", "pattern over 20000 instructions", 9);
}

static void test_limit_program_fits(void **state)
{
	(void)state;
	size_t n = 19997; /* ^, 19997 a, $ and MATCH: 20000 instructions */
	char *s = malloc(n + 2);
	assert_non_null(s);
	memset(s, 'a', n + 1);
	s[n] = '\0';
	assert_int_equal(search("^a{19997}$", s), 1);
	s[n] = 'a';
	s[n + 1] = '\0';
	assert_int_equal(search("^a{19997}$", s), 0);
	s[n - 1] = '\0';
	assert_int_equal(search("^a{19997}$", s), 0);
	/* an empty operand costs nothing however often it repeats */
	assert_int_equal(search("^(?:){1000000000}(?:a{0}){99999}$", ""), 1);
	free(s);
}

static void test_limit_compile_sizes(void **state)
{
	(void)state;
	/* pattern bytes */
	size_t n = LIMIT_JSRE_PATTERN_BYTES + 1;
	char *p = malloc(n);
	char err[200];
	assert_non_null(p);
	memset(p, 'a', n);
	assert_null(jsre_compile(p, n, err, sizeof err));
	assert_non_null(strstr(err, "pattern over"));
	/* alternation counts its SPLIT/JMP pairs */
	for (size_t i = 0; i < n; i++)
		p[i] = i % 2 ? '|' : 'a';
	assert_null(jsre_compile(p, LIMIT_JSRE_PATTERN_BYTES - 1, err, sizeof err));
	assert_non_null(strstr(err, "pattern over 20000 instructions"));
	/* group depth */
	size_t d = LIMIT_JSRE_DEPTH + 1;
	memset(p, '(', d);
	memset(p + d, ')', d);
	assert_null(jsre_compile(p, 2 * d, err, sizeof err));
	assert_non_null(strstr(err, "groups nested deeper than 128"));
	d = LIMIT_JSRE_DEPTH;
	memset(p, '(', d);
	memset(p + d, ')', d);
	struct jsre *re = jsre_compile(p, 2 * d, err, sizeof err);
	assert_non_null(re);
	assert_int_equal(jsre_search(re, "", 0), 1);
	jsre_free(re);
	/* class ranges: 684 per \p{L}, 100 of them */
	size_t k = 0;
	for (int i = 0; i < 100; i++)
		k += (size_t)sprintf(p + k, "\\p{L}");
	assert_null(jsre_compile(p, k, err, sizeof err));
	assert_non_null(strstr(err, "character classes over 65536 ranges"));
	/* a class inside a repetition is stored once */
	re = jsre_compile("^(?:\\p{L}\\P{L}){1000}", 21, err, sizeof err);
	assert_non_null(re);
	jsre_free(re);
	free(p);
}

static void test_limit_steps(void **state)
{
	(void)state;
	size_t n = 1u << 20;
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, 'a', n);
	s[n] = '\0';
	double t0 = now_s();
	/* about 500 live threads per character: the step cap answers -1 */
	assert_int_equal(search_n("(?:a?){500}b", 12, s, n), -1);
	double t = now_s() - t0;
	print_message("  step cap reached in %.1f ms\n", t * 1e3);
	/* about 50 ms at -O3, under a second with ASan, seconds under
	 * valgrind: the bound only says it ends */
	assert_true(t < 30.0);
	/* a small pattern on a megabyte of subject stays under the cap */
	assert_int_equal(search_n("^a*$", 4, s, n), 1);
	assert_int_equal(search_n("^[a-z]+$", 8, s, n), 1);
	assert_int_equal(search_n("b", 1, s, n), 0);
	assert_int_equal(search_n("^b", 2, s, n), 0); /* anchored: stops at once */
	free(s);
}

/* ---- the official test suite ------------------------------------------------------------ */

#define SUITE_NEW "/usr/share/perl5/auto/share/dist/Test-JSON-Schema-Acceptance/tests"
#define SUITE_OLD "/usr/share/json-schema-test-suite/tests"

static json_t *load(const char *path)
{
	json_error_t e;
	json_t *j = json_load_file(path, JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &e);
	if (!j)
		fail_msg("%s: %s", path, e.text);
	return j;
}

static int compiles(const char *pat, size_t len)
{
	char err[200];
	struct jsre *re = jsre_compile(pat, len, err, sizeof err);
	jsre_free(re);
	return re != NULL;
}

static int matches(const char *pat, size_t plen, json_t *str)
{
	return search_n(pat, plen, json_string_value(str), json_string_length(str));
}

/* Whether v passes the small schemas the suite's patternProperties tests
 * use: true, false, {"type": t}, {"maximum": n}; -1 for any other. */
static int tiny_valid(json_t *schema, json_t *v)
{
	if (json_is_boolean(schema))
		return json_is_true(schema);
	json_t *t = json_object_get(schema, "type"), *max = json_object_get(schema, "maximum");
	if (json_object_size(schema) != 1)
		return -1;
	if (json_is_string(t)) {
		const char *n = json_string_value(t);
		if (strcmp(n, "integer") == 0)
			return json_is_integer(v) ||
			       (json_is_real(v) && json_real_value(v) == (double)(long long)json_real_value(v));
		if (strcmp(n, "null") == 0)
			return json_is_null(v);
		if (strcmp(n, "boolean") == 0)
			return json_is_boolean(v);
		if (strcmp(n, "string") == 0)
			return json_is_string(v);
		return -1;
	}
	if (json_is_number(max))
		return !json_is_number(v) || json_number_value(v) <= json_number_value(max);
	return -1;
}

/* patternProperties over an object: every member whose name a pattern
 * matches passes that pattern's schema; with no_additional, every member
 * is matched by some pattern. -1 when a schema is not one tiny_valid()
 * knows. */
static int props_valid(json_t *pp, int no_additional, json_t *data)
{
	const char *key, *pk;
	json_t *v, *ps;
	int ok = 1;
	json_object_foreach(data, key, v) {
		int any = 0;
		json_object_foreach(pp, pk, ps) {
			if (search_n(pk, strlen(pk), key, strlen(key)) != 1)
				continue;
			any = 1;
			int r = tiny_valid(ps, v);
			if (r < 0)
				return -1;
			ok &= r;
		}
		if (no_additional && !any)
			ok = 0;
	}
	return ok;
}

/* One test of a group, checked when the schema is one this module decides
 * alone: "pattern" (data strings), patternProperties of true schemas with
 * additionalProperties false (object keys), the metaschema on {"pattern"}
 * and format "regex" (the data is a pattern). 1 when checked. */
static int suite_case(json_t *schema, json_t *data, int valid)
{
	json_t *pat = json_object_get(schema, "pattern");
	json_t *pp = json_object_get(schema, "patternProperties");
	json_t *fmt = json_object_get(schema, "format");
	if (json_is_string(pat)) {
		if (!json_is_string(data)) {
			assert_true(valid); /* "pattern" ignores other types */
			return 1;
		}
		int r = matches(json_string_value(pat), json_string_length(pat), data);
		if (r != valid)
			fail_msg("pattern %s on %s: %d, suite says %d", json_string_value(pat),
			         json_string_value(data), r, valid);
		return 1;
	}
	if (json_is_object(pp)) {
		if (!json_is_object(data))
			return 0;
		int ok = props_valid(pp, json_is_false(json_object_get(schema, "additionalProperties")),
		                     data);
		if (ok < 0)
			return 0;
		if (ok != valid)
			fail_msg("patternProperties on an object: %d, suite says %d", ok, valid);
		return 1;
	}
	if (json_is_string(fmt) && strcmp(json_string_value(fmt), "regex") == 0) {
		if (!json_is_string(data)) {
			assert_true(valid); /* formats ignore other types */
			return 1;
		}
		assert_int_equal(compiles(json_string_value(data), json_string_length(data)), valid);
		return 1;
	}
	json_t *dp = json_object_get(data, "pattern");
	if (json_is_string(json_object_get(schema, "$ref")) && json_is_string(dp)) {
		assert_int_equal(compiles(json_string_value(dp), json_string_length(dp)), valid);
		return 1;
	}
	return 0;
}

static unsigned suite_file(const char *path, unsigned *total)
{
	json_t *groups = load(path);
	unsigned checked = 0;
	size_t i, j;
	json_t *g, *t;
	json_array_foreach(groups, i, g) {
		json_array_foreach(json_object_get(g, "tests"), j, t) {
			(*total)++;
			checked += (unsigned)suite_case(json_object_get(g, "schema"),
			                                json_object_get(t, "data"),
			                                json_is_true(json_object_get(t, "valid")));
		}
	}
	json_decref(groups);
	return checked;
}

static int suite_present(void)
{
	struct stat st;
	return stat(SUITE_NEW "/draft2020-12/pattern.json", &st) == 0 &&
	       stat(SUITE_OLD "/draft7/pattern.json", &st) == 0;
}

static void test_suite_cases(void **state)
{
	(void)state;
	if (!suite_present()) {
		print_message("  JSON-Schema-Test-Suite not installed (tests/deps.sh): skipped\n");
		skip();
	}
	static const char *const files[] = {
		SUITE_NEW "/draft2020-12/pattern.json",
		SUITE_NEW "/draft2020-12/patternProperties.json",
		SUITE_NEW "/draft2020-12/optional/ecmascript-regex.json",
		SUITE_NEW "/draft2020-12/optional/non-bmp-regex.json",
		SUITE_NEW "/draft2020-12/optional/format/regex.json",
		SUITE_NEW "/draft7/pattern.json",
		SUITE_NEW "/draft7/patternProperties.json",
		SUITE_NEW "/draft7/optional/ecmascript-regex.json",
		SUITE_NEW "/draft7/optional/non-bmp-regex.json",
		SUITE_NEW "/draft7/optional/format/regex.json",
		SUITE_OLD "/draft7/pattern.json",
		SUITE_OLD "/draft7/patternProperties.json",
		SUITE_OLD "/draft7/optional/ecmascript-regex.json",
		SUITE_OLD "/draft7/optional/format/regex.json",
	};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		struct stat st;
		if (stat(files[i], &st) != 0)
			continue;
		unsigned total = 0, n = suite_file(files[i], &total);
		print_message("  %u of %u cases checked: %s\n", n, total,
		              files[i] + strlen("/usr/share/"));
		assert_true(n > 0);
	}
}

struct patstats {
	unsigned compiled;
	unsigned refused;
};

/* Every "pattern" string and patternProperties key under v. */
static void walk_patterns(json_t *v, struct patstats *st)
{
	const char *key;
	json_t *m;
	size_t i;
	if (json_is_array(v)) {
		json_array_foreach(v, i, m) walk_patterns(m, st);
		return;
	}
	if (!json_is_object(v))
		return;
	json_object_foreach(v, key, m) {
		char err[200];
		const char *pats[64];
		size_t lens[64], np = 0;
		if (strcmp(key, "pattern") == 0 && json_is_string(m)) {
			pats[np] = json_string_value(m);
			lens[np++] = json_string_length(m);
		}
		if (strcmp(key, "patternProperties") == 0 && json_is_object(m)) {
			const char *pk;
			json_t *ps;
			json_object_foreach(m, pk, ps) {
				if (np < 64) {
					pats[np] = pk;
					lens[np++] = strlen(pk);
				}
			}
		}
		for (size_t k = 0; k < np; k++) {
			struct jsre *re = jsre_compile(pats[k], lens[k], err, sizeof err);
			if (re) {
				st->compiled++;
				jsre_free(re);
				continue;
			}
			st->refused++;
			print_message("  refused %s: %s\n", pats[k], err);
			assert_true(strlen(err) > 0);
			/* the suite's one invalid pattern (it is data there) */
			assert_string_equal(pats[k], "\\a");
		}
		walk_patterns(m, st);
	}
}

static void walk_dir(const char *dir, struct patstats *st)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[1024];
		struct stat sb;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (stat(path, &sb) != 0)
			continue;
		if (S_ISDIR(sb.st_mode)) {
			walk_dir(path, st);
		} else if (strlen(e->d_name) > 5 &&
		           strcmp(e->d_name + strlen(e->d_name) - 5, ".json") == 0) {
			json_t *j = load(path);
			walk_patterns(j, st);
			json_decref(j);
		}
	}
	closedir(d);
}

static void test_suite_all_patterns(void **state)
{
	(void)state;
	if (!suite_present())
		skip();
	static const char *const dirs[] = {SUITE_NEW "/draft2020-12", SUITE_NEW "/draft7",
	                                   SUITE_OLD "/draft7"};
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		struct patstats st = {0, 0};
		walk_dir(dirs[i], &st);
		print_message("  %s: %u patterns compiled, %u refused\n",
		              dirs[i] + strlen("/usr/share/"), st.compiled, st.refused);
		assert_true(st.compiled > 10);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literals_not_anchored),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_dot),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_class_escapes),
		cmocka_unit_test(test_anchors),
		cmocka_unit_test(test_word_boundaries),
		cmocka_unit_test(test_groups_alternation),
		cmocka_unit_test(test_quantifiers),
		cmocka_unit_test(test_unicode),
		cmocka_unit_test(test_properties),
		cmocka_unit_test(test_invalid_utf8_subject),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limit_nested_star),
		cmocka_unit_test(test_limit_program),
		cmocka_unit_test(test_limit_program_fits),
		cmocka_unit_test(test_limit_compile_sizes),
		cmocka_unit_test(test_limit_steps),
		cmocka_unit_test(test_suite_cases),
		cmocka_unit_test(test_suite_all_patterns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Fuzz target for the JSON Schema regular expressions (checks/jsre.c).
 *
 * Input: PATTERN NUL SUBJECT. The bytes before the first NUL are the
 * pattern, those after it the subject; with no NUL the whole input is both
 * (so a pattern is also searched in its own text). Any bytes: invalid
 * UTF-8 must be refused in the pattern and read as U+FFFD in the subject.
 *
 * Properties checked, abort() on any violation:
 *  1. jsre_compile() refuses with a one-line reason that ends with
 *     " at byte N", N at most the pattern's length (or "out of memory"),
 *     and accepts with the error buffer left empty; a buffer of 1 byte and
 *     none at all give the same verdict.
 *  2. jsre_search() answers -1, 0 or 1, and the same twice.
 *  3. The pattern wrapped in (?: ) compiles when the pattern does (unless
 *     the group depth cap is hit) and answers the same.
 *  4. The search is a search: ^[^]*(?: pattern ) answers the same as the
 *     pattern unanchored (unless it reaches the step cap).
 *  5. The subject written as \u{H} escapes, one per code point (U+FFFD for
 *     each invalid byte), between ^ and $, compiles and matches the
 *     subject (subjects under 512 bytes).
 *  Properties 2-4 search subjects of up to FUZZ_JSRE_RESEARCH bytes only
 *  (a search may cost the whole step budget, a second under ASan), and
 *  not again after a -1. Every program is freed (ASan's leak check).
 *
 * Built with libFuzzer (make fuzz-run FUZZ=jsre) or with tests/fuzz/replay.c
 * to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/jsre.h"
#include "proxy/base/limits.h"
#include "tests/fuzz/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reason(const char *err, size_t plen)
{
	CHECK(err[0] != '\0');
	CHECK(strchr(err, '\n') == NULL);
	if (strcmp(err, "out of memory") == 0)
		return;
	const char *at = strstr(err, " at byte ");
	CHECK(at != NULL);
	char *end;
	unsigned long long n = strtoull(at + 9, &end, 10);
	CHECK(*end == '\0');
	CHECK(n <= plen);
}

/* Subjects up to this many bytes are searched again in the other forms
 * (properties 2-4). A search may cost up to LIMIT_JSRE_STEPS, a second or
 * so under ASan and coverage: longer subjects are searched once. */
#define FUZZ_JSRE_RESEARCH 64

/* The search of re in s, checked to be an answer. */
static int search1(const struct jsre *re, const char *s, size_t len)
{
	int r = jsre_search(re, s, len);
	CHECK(r == -1 || r == 0 || r == 1);
	return r;
}

/* The same, checked to be repeatable. */
static int search2(const struct jsre *re, const char *s, size_t len)
{
	int r = search1(re, s, len);
	CHECK(jsre_search(re, s, len) == r);
	return r;
}

/* Compiles prefix + pattern + suffix into a fresh buffer. */
static struct jsre *compile_wrapped(const char *pre, const uint8_t *p, size_t plen,
                                    const char *suf, char *err, size_t errlen)
{
	size_t a = strlen(pre), b = strlen(suf);
	char *buf = malloc(a + plen + b + 1);
	CHECK(buf != NULL);
	memcpy(buf, pre, a);
	if (plen)
		memcpy(buf + a, p, plen);
	memcpy(buf + a + plen, suf, b);
	struct jsre *re = jsre_compile(buf, a + plen + b, err, errlen);
	free(buf);
	return re;
}

/* Property 5: the subject as escapes matches itself. */
static void check_literal(const uint8_t *s, size_t len)
{
	char *pat = malloc(len * 12 + 3);
	size_t n = 0;
	char err[160];
	CHECK(pat != NULL);
	pat[n++] = '^';
	for (size_t i = 0; i < len;) {
		/* the same decoding as the engine: strict, one U+FFFD per bad byte */
		unsigned b = s[i], need = b < 0x80 ? 1 : b >= 0xC2 && b < 0xE0 ? 2
		                        : b >= 0xE0 && b < 0xF0 ? 3 : b >= 0xF0 && b < 0xF5 ? 4 : 0;
		uint32_t c = need == 1 ? b : need == 2 ? (b & 0x1F) : need == 3 ? (b & 0x0F) : (b & 7);
		int ok = need > 0 && len - i >= need;
		for (unsigned k = 1; ok && k < need; k++) {
			ok = (s[i + k] & 0xC0) == 0x80;
			c = (c << 6) | (s[i + k] & 0x3F);
		}
		if (ok && ((need == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) ||
		           (need == 4 && (c < 0x10000 || c > 0x10FFFF))))
			ok = 0;
		if (!ok) {
			c = 0xFFFD;
			need = 1;
		}
		n += (size_t)sprintf(pat + n, "\\u{%X}", (unsigned)c);
		i += need;
	}
	pat[n++] = '$';
	struct jsre *re = jsre_compile(pat, n, err, sizeof err);
	if (!re)
		fuzz_fail(err);
	CHECK(search2(re, (const char *)s, len) == 1);
	jsre_free(re);
	free(pat);
}

/* Properties 2-4 for a compiled pattern whose search of subj gave r. */
static void check_forms(const uint8_t *data, size_t plen, const char *subj, size_t slen,
                        const struct jsre *re, int r)
{
	char err[160];
	CHECK(search1(re, subj, slen) == r);
	struct jsre *g = compile_wrapped("(?:", data, plen, ")", err, sizeof err);
	if (g) {
		CHECK(search1(g, subj, slen) == r);
		jsre_free(g);
	} else {
		CHECK(strstr(err, "nested deeper") || strstr(err, "pattern over"));
	}
	struct jsre *a = compile_wrapped("^[^]*(?:", data, plen, ")", err, sizeof err);
	if (a) {
		int ra = search1(a, subj, slen);
		CHECK(ra == r || ra == -1);
		jsre_free(a);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t plen = nul ? (size_t)(nul - data) : size;
	const char *subj = nul ? (const char *)nul + 1 : (const char *)data;
	size_t slen = nul ? size - plen - 1 : size;
	char err[160], tiny[1];

	memset(err, 'x', sizeof err);
	struct jsre *re = jsre_compile((const char *)data, plen, err, sizeof err);
	struct jsre *re1 = jsre_compile((const char *)data, plen, tiny, sizeof tiny);
	struct jsre *re0 = jsre_compile((const char *)data, plen, NULL, 0);
	CHECK((re == NULL) == (re1 == NULL) && (re == NULL) == (re0 == NULL));
	jsre_free(re1);
	jsre_free(re0);
	if (!re) {
		CHECK(tiny[0] == '\0');
		check_reason(err, plen);
	} else {
		CHECK(err[0] == '\0');
		int r = search1(re, subj, slen);
		if (r != -1 && slen <= FUZZ_JSRE_RESEARCH)
			check_forms(data, plen, subj, slen, re, r);
		jsre_free(re);
	}
	if (slen < 512)
		check_literal((const uint8_t *)subj, slen);
	return 0;
}

/* Unit tests for proxy/base/hash.c: FNV-1a against the published test
 * vectors (draft-eastlake-fnv, "" "a" "foobar"), the incremental forms
 * against the whole-buffer one, and the word-at-a-time variant against a
 * plain reference written from its definition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/base/hash.h"

static void test_fnv1a32_vectors(void **state)
{
	(void)state;
	assert_int_equal(hash_fnv1a32(HASH_FNV1A32_INIT, "", 0), 0x811c9dc5u);
	assert_int_equal(hash_fnv1a32(HASH_FNV1A32_INIT, "a", 1), 0xe40c292cu);
	assert_int_equal(hash_fnv1a32(HASH_FNV1A32_INIT, "foobar", 6), 0xbf9cf968u);
	assert_int_equal(hash_fnv1a32_str(HASH_FNV1A32_INIT, "foobar"), 0xbf9cf968u);
}

static void test_fnv1a64_vectors(void **state)
{
	(void)state;
	assert_true(hash_fnv1a64("", 0) == 0xcbf29ce484222325ull);
	assert_true(hash_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(hash_fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
}

/* Byte by byte, string, and in two pieces: one hash. */
static void test_incremental_forms_agree(void **state)
{
	(void)state;
	const char *s = "tools/call\x01gh\xff" "z";
	size_t n = strlen(s);
	uint32_t h = HASH_FNV1A32_INIT ^ 0x5eedu;
	for (size_t i = 0; i < n; i++)
		h = hash_fnv1a32_byte(h, (unsigned char)s[i]);
	assert_int_equal(h, hash_fnv1a32_str(HASH_FNV1A32_INIT ^ 0x5eedu, s));
	for (size_t cut = 0; cut <= n; cut++)
		assert_int_equal(h, hash_fnv1a32(hash_fnv1a32(HASH_FNV1A32_INIT ^ 0x5eedu, s, cut),
		                                 s + cut, n - cut));
}

static uint64_t ref_words(const unsigned char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w = 0;
		for (int k = 7; k >= 0; k--) /* the word as this machine loads it */
			w = (w << 8) | s[i + (size_t)k];
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h ^ (h >> 32) ^ n;
}

static void test_words_matches_reference(void **state)
{
	(void)state;
	assert_true(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__); /* ref_words assumes it */
	unsigned char buf[80];
	srand(18);
	for (size_t n = 0; n < 64; n++)
		for (size_t off = 0; off < 8; off++) {
			for (size_t i = 0; i < n; i++)
				buf[off + i] = (unsigned char)rand();
			assert_true(hash_fnv1a64_words(buf + off, n) == ref_words(buf + off, n));
		}
	/* Same bytes, different lengths: different hashes (n is mixed in). */
	memset(buf, 0, sizeof(buf));
	assert_true(hash_fnv1a64_words(buf, 8) != hash_fnv1a64_words(buf, 16));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a32_vectors),
		cmocka_unit_test(test_fnv1a64_vectors),
		cmocka_unit_test(test_incremental_forms_agree),
		cmocka_unit_test(test_words_matches_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

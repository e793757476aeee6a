/* Unit tests for proxy/base/b64.c: RFC 4648 §10's test vectors both ways,
 * every length and byte round-trips, and the decoder's strict rule (the
 * one the 2026 headers' =?base64?…?= values and admin's Basic redaction
 * rely on): padding optional, only at the end, only as much as the
 * length calls for; nothing but the 64 characters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/base/b64.h"

static const char *const vectors[][2] = {
	{"", ""},         {"f", "Zg=="},        {"fo", "Zm8="},          {"foo", "Zm9v"},
	{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
};

static void test_rfc4648_vectors(void **state)
{
	(void)state;
	char enc[16];
	unsigned char dec[16];
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		size_t n = strlen(vectors[i][0]);
		assert_int_equal(b64_encoded_len(n), strlen(vectors[i][1]));
		assert_int_equal(b64_encode(vectors[i][0], n, enc), strlen(vectors[i][1]));
		assert_string_equal(enc, vectors[i][1]);
		long got = b64_decode(vectors[i][1], strlen(vectors[i][1]), dec);
		assert_int_equal(got, (long)n);
		assert_memory_equal(dec, vectors[i][0], n);
	}
}

static void test_both_alphabet_ends(void **state)
{
	(void)state;
	const unsigned char in[] = {0xfb, 0xff, 0xbf, 0x00};
	char enc[16];
	b64_encode(in, sizeof(in), enc);
	assert_string_equal(enc, "+/+/AA==");
}

static void test_round_trip_every_length(void **state)
{
	(void)state;
	unsigned char in[300], dec[300 / 4 * 3 + 3 + 200];
	char enc[404];
	srand(4648);
	for (size_t n = 0; n < sizeof(in); n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (unsigned char)rand();
		size_t el = b64_encode(in, n, enc);
		assert_int_equal(el, b64_encoded_len(n));
		assert_true(b64_decoded_max(el) <= sizeof(dec));
		assert_int_equal(b64_decode(enc, el, dec), (long)n);
		assert_memory_equal(dec, in, n);
		/* Unpadded, the same bytes. */
		size_t bare = el;
		while (bare && enc[bare - 1] == '=')
			bare--;
		assert_int_equal(b64_decode(enc, bare, dec), (long)n);
		assert_memory_equal(dec, in, n);
	}
}

static void test_decoder_refuses(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"Z",        /* a lone last character holds no byte */
		"Zm9vY",    /* the same after a whole group */
		"Zg=",      /* padding short of the length's */
		"Zm8==",    /* padding beyond it */
		"Z===",     /* three '=' */
		"Zg==Zg==", /* padding in the middle */
		"Zm 9v",    /* whitespace */
		"Zm9v\n",   /* a line break */
		"Zm-_",     /* the URL-safe alphabet */
		"Zm9v*",
	};
	unsigned char out[16];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(b64_decode(bad[i], strlen(bad[i]), out), -1);
}

/* Bits past the last whole byte are dropped, not refused. */
static void test_trailing_bits_dropped(void **state)
{
	(void)state;
	unsigned char out[4];
	assert_int_equal(b64_decode("Zh==", 4, out), 1);
	assert_int_equal(out[0], 'f');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4648_vectors),
		cmocka_unit_test(test_both_alphabet_ends),
		cmocka_unit_test(test_round_trip_every_length),
		cmocka_unit_test(test_decoder_refuses),
		cmocka_unit_test(test_trailing_bits_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

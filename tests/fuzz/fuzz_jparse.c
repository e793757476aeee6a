/* Fuzz target for proxy/jparse.c, differential against jansson.
 *
 * The input is any byte string. jparse() and json_loadb() parse it with
 * the same flags (both 0 and JSON_DECODE_ANY, the two the proxy uses);
 * they must agree on whether it is JSON, and when it is, on the value:
 * json_equal, and the same compact text (so member order, duplicate
 * members, -0.0 and real formatting agree too). abort() on any mismatch.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=jparse) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy/jparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what, const uint8_t *data, size_t size)
{
	fprintf(stderr, "fuzz_jparse: %s on %zu bytes: %.*s\n", what, size,
	        (int)(size < 200 ? size : 200), (const char *)data);
	abort();
}

static void compare(const uint8_t *data, size_t size, int any)
{
	json_error_t err;
	json_t *want = json_loadb((const char *)data, size, any ? JSON_DECODE_ANY : 0, &err);
	json_t *got = jparse((const char *)data, size, any);

	if (!want != !got)
		fuzz_fail(want ? "jparse refused what jansson accepts"
		               : "jparse accepted what jansson refuses", data, size);
	if (want) {
		if (!json_equal(want, got))
			fuzz_fail("values differ", data, size);
		char *a = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
		char *b = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!a || !b || strcmp(a, b) != 0)
			fuzz_fail("texts differ", data, size);
		free(a);
		free(b);
	}
	json_decref(want);
	json_decref(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	compare(data, size, 0);
	compare(data, size, 1);
	return 0;
}

/* Fuzz target for proxy/base/jreuse.c, differential against jparse.
 *
 * The input is up to three texts separated by a 0xff byte (never part of
 * UTF-8 JSON). One jreuse (reusing texts of any size) reads them in turn,
 * and each answer must be what jparse_span gives for the same text (with
 * flags any 0 and 1 in turn): both
 * NULL, or equal values with the same compact text and the same "result"
 * span. Then each text again, in reverse order, so that every text is
 * also read after a different last one. abort() on any mismatch.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=jreuse) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy/base/jparse.h"
#include "proxy/base/jreuse.h"
#include "tests/fuzz/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_text(const json_t *a, const json_t *b)
{
	char *x = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	char *y = json_dumps(b, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	int same = x && y && strcmp(x, y) == 0;
	free(x);
	free(y);
	return same;
}

static void one(struct jreuse *r, const char *text, size_t len, int any)
{
	struct jparse_span ws = {.name = "result"}, gs = {.name = "result"};
	json_t *want = jparse_span(text, len, any, &ws);
	json_t *got = jreuse_parse(r, text, len, any, &gs);
	CHECK(!want == !got);
	if (want) {
		CHECK(json_equal(want, got));
		CHECK(same_text(want, got));
		CHECK(ws.at == gs.at && ws.len == gs.len);
	}
	json_decref(want);
	json_decref(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *t[3];
	size_t n[3], k = 0;
	const char *p = (const char *)data, *end = p + size;
	while (k < 3) {
		const char *q = memchr(p, 0xff, (size_t)(end - p));
		t[k] = p;
		n[k] = (size_t)((q ? q : end) - p);
		k++;
		if (!q)
			break;
		p = q + 1;
	}
	struct jreuse *r = jreuse_new();
	CHECK(r);
	jreuse_set_min(r, 0);
	for (size_t i = 0; i < k; i++)
		one(r, t[i], n[i], (int)(i & 1));
	for (size_t i = k; i-- > 0;)
		one(r, t[i], n[i], (int)(i & 1) ^ 1);
	jreuse_free(r);
	return 0;
}

/* Fuzz target for proxy/cli/jsonloc.c, differential against jansson.
 *
 * The input is any byte string, read as a JSON text. On any input,
 * jsonloc_find with pointers made from the input's own bytes (its first
 * line, split at '/') answers within the text: offsets <= size, line and
 * column >= 1, never more tokens matched than the pointer has. When
 * jansson accepts the text (JSON_DECODE_ANY), every node of the value (the
 * first FUZZ_NODES in depth-first order, names up to JSONLOC_MAX_KEY) is
 * found by its RFC 6901 pointer: jsonloc_find answers 1, the text at
 * `value` parses (json_loadb, JSON_DISABLE_EOF_CHECK) to a value
 * json_equal to the node, `at` of a member is its name's quote, a
 * pointer one token past a leaf answers 0 with every real token matched,
 * and jsonloc_elements of an array gives its elements' offsets (the
 * first 16: each parses to its element).
 * abort() on any mismatch.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=jsonloc) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy/cli/jsonloc.h"
#include "tests/fuzz/check.h"

#define FUZZ_NODES 256
#define FUZZ_PTR   8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sane(const char *text, size_t size, const char *ptr)
{
	struct jsonloc l;
	int rc = jsonloc_find(text, size, ptr, &l);
	CHECK(rc >= -1 && rc <= 1);
	if (rc < 0)
		return;
	CHECK(l.at <= size && l.value <= size && l.at <= l.value);
	CHECK(l.line >= 1 && l.column >= 1);
	size_t tokens = 0;
	for (const char *p = ptr; *p; p++)
		tokens += *p == '/';
	CHECK(l.matched <= tokens);
	CHECK(rc == 0 || l.matched == tokens);
}

struct walk {
	const char *text;
	size_t size, nodes;
	char ptr[FUZZ_PTR];
};

/* Appends token (escaped) to w->ptr; returns the old length or -1 when it
 * does not fit (the node is then not checked). */
static long push(struct walk *w, const char *tok, size_t n)
{
	size_t len = strlen(w->ptr), k = len;
	if (n > JSONLOC_MAX_KEY || k + 1 + 2 * n + 1 > sizeof w->ptr)
		return -1;
	w->ptr[k++] = '/';
	for (size_t i = 0; i < n; i++) {
		if (tok[i] == '~' || tok[i] == '/') {
			w->ptr[k++] = '~';
			w->ptr[k++] = tok[i] == '~' ? '0' : '1';
		} else {
			w->ptr[k++] = tok[i];
		}
	}
	w->ptr[k] = '\0';
	return (long)len;
}

static void visit(struct walk *w, const json_t *node, int member)
{
	if (w->nodes++ >= FUZZ_NODES)
		return;
	struct jsonloc l;
	CHECK(jsonloc_find(w->text, w->size, w->ptr, &l) == 1);
	if (member)
		CHECK(w->text[l.at] == '"');
	json_t *v = json_loadb(w->text + l.value, w->size - l.value,
	                       JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, NULL);
	CHECK(v != NULL && json_equal(v, node));
	json_decref(v);
	size_t depth = 0;
	for (const char *p = w->ptr; *p; p++)
		depth += *p == '/';
	if (!json_is_object(node) && !json_is_array(node)) {
		long old = push(w, "x~y", 3);
		if (old >= 0) {
			CHECK(jsonloc_find(w->text, w->size, w->ptr, &l) == 0 && l.matched == depth);
			w->ptr[old] = '\0';
		}
		return;
	}
	if (json_is_array(node)) {
		size_t offs[16], want = json_array_size(node) < 16 ? json_array_size(node) : 16;
		CHECK(jsonloc_elements(w->text, w->size, w->ptr, offs, 16) == (long)want);
		for (size_t i = 0; i < want; i++) {
			json_t *e = json_loadb(w->text + offs[i], w->size - offs[i],
			                       JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, NULL);
			CHECK(e != NULL && json_equal(e, json_array_get(node, i)));
			json_decref(e);
		}
		for (size_t i = 0; i < json_array_size(node); i++) {
			char idx[24];
			int n = snprintf(idx, sizeof idx, "%zu", i);
			long old = push(w, idx, (size_t)n);
			if (old < 0)
				return;
			visit(w, json_array_get(node, i), 0);
			w->ptr[old] = '\0';
		}
		return;
	}
	const char *key;
	size_t klen;
	json_t *val;
	json_object_keylen_foreach((json_t *)(uintptr_t)node, key, klen, val) {
		long old = push(w, key, klen);
		if (old < 0)
			continue;
		visit(w, val, 1);
		w->ptr[old] = '\0';
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	/* Pointers from the input's first line. */
	char ptr[256];
	size_t n = 0;
	while (n < size && n < sizeof ptr - 2 && data[n] != '\n' && data[n])
		n++;
	ptr[0] = '/';
	memcpy(ptr + 1, data, n);
	ptr[n + 1] = '\0';
	sane(text, size, ptr);
	sane(text, size, ptr + 1);
	sane(text, size, "");
	sane(text, size, "/tools/0/inputSchema/properties");

	json_t *doc = json_loadb(text, size, JSON_DECODE_ANY, NULL);
	if (!doc)
		return 0;
	struct walk *w = calloc(1, sizeof *w);
	if (w) {
		w->text = text;
		w->size = size;
		visit(w, doc, 0);
	}
	free(w);
	json_decref(doc);
	return 0;
}

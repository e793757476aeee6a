/* Fuzz target for proxy/base/jparse.c, differential against jansson.
 *
 * The input is any byte string. jparse() and json_loadb() parse it with
 * the same flags (both 0 and JSON_DECODE_ANY, the two the proxy uses);
 * they must agree on whether it is JSON, and when it is, on the value:
 * json_equal, and the same compact text (so member order, duplicate
 * members, -0.0 and real formatting agree too), also for jparse_copy()
 * of the value. jparse_nest's depth is the text's nesting (at least the
 * value's: a replaced duplicate member may nest deeper). jparse_span's bytes of a
 * top-level member parse on their own to that member's value. For each
 * top-level array member, jparse_elements' spans (when it answers) parse
 * to its elements, and jparse_elements_since, from the input to the input
 * with one byte changed, answers what jparse_elements does. jparse_scan
 * accepts what json_loadb accepts (both flags), tells jparse_nest's
 * nesting, and each member it notes (and only those) is the value the
 * tree holds there, its decoded method and params.name those strings.
 * abort() on any mismatch.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=jparse) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy/base/jparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what, const uint8_t *data, size_t size)
{
	fprintf(stderr, "fuzz_jparse: %s on %zu bytes: %.*s\n", what, size,
	        (int)(size < 200 ? size : 200), (const char *)data);
	abort();
}

/* Whether a and b serialise to the same compact text. */
static int same_text(const json_t *a, const json_t *b)
{
	char *x = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
	char *y = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
	int same = x && y && strcmp(x, y) == 0;
	free(x);
	free(y);
	return same;
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
		if (!same_text(want, got))
			fuzz_fail("texts differ", data, size);
		json_t *copy = jparse_copy(got);
		if (!copy || !json_equal(copy, want) || (json_is_object(got) && copy == got))
			fuzz_fail("jparse_copy is not an equal copy", data, size);
		if (!same_text(want, copy))
			fuzz_fail("jparse_copy's text differs", data, size);
		json_decref(copy);
	}
	json_decref(want);
	json_decref(got);
}

/* The span of each top-level member is that member's value, as text. */
static void check_spans(const uint8_t *data, size_t size)
{
	json_t *v = jparse((const char *)data, size, 1);
	const char *key;
	json_t *val;

	if (!json_is_object(v)) {
		struct jparse_span sp = {.name = "result"};
		json_t *again = jparse_span((const char *)data, size, 1, &sp);
		if (sp.at)
			fuzz_fail("a span outside an object", data, size);
		json_decref(again);
		json_decref(v);
		return;
	}
	json_object_foreach(v, key, val) {
		struct jparse_span sp = {.name = key};
		json_t *again = jparse_span((const char *)data, size, 1, &sp);
		if (!again || !sp.at || sp.at < (const char *)data ||
		    sp.at + sp.len > (const char *)data + size)
			fuzz_fail("no span for a member", data, size);
		json_t *alone = jparse(sp.at, sp.len, 1);
		if (!alone || !json_equal(alone, val))
			fuzz_fail("a span is not its member's value", data, size);
		json_decref(alone);
		json_decref(again);
	}
	json_decref(v);
}

#define MAXEL 64

/* jparse_elements of text for name, checked against the parsed value v. */
static long elements_of(const uint8_t *data, size_t size, const char *text, size_t len,
                        const char *name, const json_t *arr, struct jparse_elem *out)
{
	long n = jparse_elements(text, len, name, out, MAXEL);
	if (n < 0)
		return n; /* allowed: it answers only when sure */
	if (!json_is_array(arr) || (size_t)n != json_array_size(arr))
		fuzz_fail("jparse_elements counts another array", data, size);
	for (long i = 0; i < n; i++) {
		json_t *alone = jparse(out[i].at, out[i].len, 1);
		if (!alone || !json_equal(alone, json_array_get(arr, (size_t)i)))
			fuzz_fail("an element span is not its element", data, size);
		json_decref(alone);
	}
	return n;
}

static void check_elements(const uint8_t *data, size_t size)
{
	json_t *v = jparse((const char *)data, size, 0);
	const char *key;
	json_t *val;
	static struct jparse_elem old[MAXEL], full[MAXEL], since[MAXEL];

	if (!json_is_object(v)) {
		json_decref(v);
		return;
	}
	char *edit = malloc(size ? size : 1);
	if (!edit)
		abort();
	json_object_foreach(v, key, val) {
		if (!json_is_array(val))
			continue;
		long no = elements_of(data, size, (const char *)data, size, key, val, old);
		if (no < 0)
			continue;
		/* One byte changed anywhere: where the texts differ is skimmed
		 * again, the rest taken from the old spans. */
		for (size_t at = 0; at < size; at += 1 + size / 8) {
			memcpy(edit, data, size);
			edit[at] = (char)(edit[at] == '1' ? '2' : edit[at] == ' ' ? '\n' : '1');
			json_t *w = jparse(edit, size, 0);
			if (!json_is_object(w)) {
				json_decref(w);
				continue;
			}
			long nf = elements_of(data, size, edit, size, key, json_object_get(w, key), full);
			long ns = jparse_elements_since(edit, size, key, since, MAXEL, (const char *)data,
			                                size, old, (size_t)no);
			if (nf != ns)
				fuzz_fail("jparse_elements_since counts otherwise", data, size);
			for (long i = 0; i < nf; i++)
				if (full[i].at != since[i].at || full[i].len != since[i].len)
					fuzz_fail("jparse_elements_since spans differ", data, size);
			json_decref(w);
		}
	}
	free(edit);
	json_decref(v);
}

/* How deeply objects and arrays nest in v, by walking it. */
static size_t nest_of(const json_t *v)
{
	size_t most = 0, n;
	const char *key;
	json_t *x;
	if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			if ((n = nest_of(json_array_get(v, i))) > most)
				most = n;
		return most + 1;
	}
	if (!json_is_object(v))
		return 0;
	json_object_foreach((json_t *)(uintptr_t)v, key, x)
		if ((n = nest_of(x)) > most)
			most = n;
	return most + 1;
}

/* How deeply brackets nest in JSON text jparse accepted, outside its
 * strings. */
static size_t nest_of_text(const uint8_t *data, size_t size)
{
	size_t depth = 0, most = 0;
	int in_string = 0;
	for (size_t i = 0; i < size; i++) {
		uint8_t c = data[i];
		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
		} else if (c == '"') {
			in_string = 1;
		} else if (c == '[' || c == '{') {
			if (++depth > most)
				most = depth;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return most;
}

/* jparse_nest's answer is the text's nesting, never less than the
 * parsed value's. */
static void check_nest(const uint8_t *data, size_t size)
{
	size_t nest = (size_t)-1;
	json_t *v = jparse_nest((const char *)data, size, 1, &nest);
	if (v && nest != nest_of_text(data, size))
		fuzz_fail("jparse_nest's depth is not the text's", data, size);
	if (v && nest < nest_of(v))
		fuzz_fail("jparse_nest's depth is less than the value's", data, size);
	json_decref(v);
}

/* The tree's value where slot s points (NULL: none). */
static json_t *member_at(json_t *v, int s)
{
	static const char *const names[JPI_N] = {
	        [JPI_ID] = "id",          [JPI_METHOD] = "method", [JPI_JSONRPC] = "jsonrpc",
	        [JPI_PARAMS] = "params",  [JPI_RESULT] = "result", [JPI_ERROR] = "error",
	        [JPI_NAME] = "name",      [JPI_ARGUMENTS] = "arguments", [JPI_META] = "_meta",
	        [JPI_CURSOR] = "cursor",  [JPI_IS_ERROR] = "isError", [JPI_CONTENT] = "content",
	        [JPI_CODE] = "code"};
	int parent = jparse_parent(s);
	json_t *o = parent ? json_object_get(v, names[parent]) : v;
	return json_is_object(o) ? json_object_get(o, names[s]) : NULL;
}

static void check_string(const uint8_t *data, size_t size, const json_t *want, const char *got,
                         int long_string)
{
	if (json_is_string(want) && !got && long_string &&
	    json_string_length(want) >= JPARSE_NAME_MAX)
		return;
	/* strcmp: a name with a NUL (\u0000) is no JSON to either parser. */
	if (!json_is_string(want) != !got || (got && strcmp(got, json_string_value(want)) != 0))
		fuzz_fail("jparse_scan's decoded string differs", data, size);
}

static void check_scan(const uint8_t *data, size_t size, int any)
{
	json_error_t err;
	json_t *want = json_loadb((const char *)data, size, any ? JSON_DECODE_ANY : 0, &err);
	struct jparse_index ix;
	int rc = jparse_scan((const char *)data, size, any, &ix);
	if (!want != (rc < 0))
		fuzz_fail(want ? "jparse_scan refused what jansson accepts"
		               : "jparse_scan accepted what jansson refuses", data, size);
	if (!want)
		return;
	size_t nest = 0;
	json_t *again = jparse_nest((const char *)data, size, any, &nest);
	if (!again || nest != ix.nest || ix.object != json_is_object(want))
		fuzz_fail("jparse_scan's nesting or kind differs", data, size);
	json_decref(again);
	for (int s = JPI_ID; s < JPI_N; s++) {
		json_t *m = ix.object ? member_at(want, s) : NULL;
		if (!m != !ix.at[s].at)
			fuzz_fail("jparse_scan notes another set of members", data, size);
		if (!m)
			continue;
		if (ix.at[s].at < (const char *)data || ix.at[s].at + ix.at[s].len > (const char *)data + size)
			fuzz_fail("a jparse_scan span outside the text", data, size);
		json_t *alone = jparse_ref_value(&ix.at[s]);
		if (!alone || !json_equal(alone, m))
			fuzz_fail("a jparse_scan span is not its member's value", data, size);
		json_decref(alone);
	}
	check_string(data, size, ix.object ? member_at(want, JPI_METHOD) : NULL, ix.method,
	             ix.long_string);
	check_string(data, size, ix.object ? member_at(want, JPI_NAME) : NULL, ix.name,
	             ix.long_string);
	json_decref(want);
}

/* jparse_pick's spans are the members' values, as jansson reads them;
 * its refusals are not checked (an escaped name, a name twice). */
static void check_picked(const uint8_t *data, size_t size, const json_t *o,
                         const char *const *names, size_t n, const struct jparse_ref *out)
{
	for (size_t i = 0; i < n; i++) {
		json_t *m = json_object_get(o, names[i]);
		if (!m != !out[i].at)
			fuzz_fail("jparse_pick finds another set of members", data, size);
		json_t *alone = m ? jparse_ref_value(&out[i]) : NULL;
		if (m && (!alone || !json_equal(alone, m)))
			fuzz_fail("a jparse_pick span is not its member's value", data, size);
		json_decref(alone);
	}
}

static void check_pick(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"type", "text", "a", "content"};
	enum { N = 4, MAX = 8 };
	struct jparse_ref out[N * MAX];
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!v)
		return;
	if (json_is_object(v) && jparse_pick((const char *)data, size, names, N, out) == 0)
		check_picked(data, size, v, names, N, out);
	long k = json_is_array(v) ? jparse_pick_each((const char *)data, size, names, N, out, MAX)
	                          : -1;
	if (k >= 0 && (size_t)k != json_array_size(v))
		fuzz_fail("jparse_pick_each counts another number of elements", data, size);
	for (long i = 0; i < k; i++)
		check_picked(data, size, json_array_get(v, (size_t)i), names, N, out + i * N);
	json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_pick(data, size);
	compare(data, size, 0);
	compare(data, size, 1);
	check_nest(data, size);
	check_spans(data, size);
	check_elements(data, size);
	check_scan(data, size, 0);
	check_scan(data, size, 1);
	return 0;
}

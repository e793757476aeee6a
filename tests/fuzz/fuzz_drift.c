/* Fuzz target for the baseline diff (checks/drift.c).
 *
 * Input: two JSON texts one after the other, the baseline then the new
 * listing ("{...}\n{...}"); each may be a tools/list result, a whole
 * JSON-RPC response or a bare tools array, as drift_tools_of() accepts.
 * When only one value parses it is diffed against itself. Every entry
 * point runs on the pair: drift_tools_of, drift_diff both ways,
 * drift_report_json, drift_report_text, drift_filter, drift_tool_broke,
 * drift_code_kind; every result is freed (ASan's leak check).
 *
 * Properties checked, abort() on any violation:
 *  1. drift_diff() of two arrays never fails (no allocation fails here) and
 *     refuses anything that is not an array.
 *  2. A list diffed against itself has no change at all.
 *  3. Every change is well formed: a known code whose drift_code_kind()
 *     is its kind, breaking set exactly for "breaking", a one-line message,
 *     a valid RFC 6901 pointer "/tools/<i>/..." whose tool entry, in the
 *     baseline or the new list, carries the change's tool name; and
 *     drift_tool_broke() holds for the tool of every breaking change.
 *  4. Counts agree: kept changes <= DRIFT_MAX_CHANGES, breaking count >=
 *     the breaking changes kept; the JSON report has the same changes,
 *     breaking count and truncated flag; the text report starts with the
 *     summary line.
 *  5. tool-added one way is tool-removed the other way (when no list was
 *     cut and no change dropped).
 *  6. drift_filter() keeps exactly the tools whose name did not break, in
 *     order, and every other member of the page untouched.
 *
 * Nothing is skipped: the anyOf/oneOf/$ref walk that used to take
 * exponential time (corpus file timeout-types-of-fanout, 21 s) is
 * memoised in drift.c and now runs with the rest under libFuzzer's
 * -timeout.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=drift) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checks/drift.h"
#include "tests/fuzz/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next JSON text at data[*pos..size), skipping blanks; *pos moves past
 * it. NULL when nothing (more) parses. */
static json_t *next_value(const uint8_t *data, size_t size, size_t *pos)
{
	json_error_t err;

	while (*pos < size && data[*pos] && strchr(" \t\r\n", data[*pos]))
		(*pos)++;
	if (*pos >= size)
		return NULL;
	json_t *v = json_loadb((const char *)data + *pos, size - *pos,
	                       JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &err);
	if (v == NULL)
		return NULL;
	*pos += err.position > 0 ? (size_t)err.position : 1;
	return v;
}

/* ---- checks ------------------------------------------------------------------ */

/* Decodes the next RFC 6901 token of *p into tok (NUL-terminated, at most
 * cap-1 bytes). Returns 1, 0 at the end, -1 on a bad escape. */
static int next_token(const char **p, char *tok, size_t cap, size_t *len)
{
	const char *s = *p;
	size_t n = 0;

	if (*s == '\0')
		return 0;
	CHECK(*s == '/');
	for (s++; *s && *s != '/'; s++) {
		char c = *s;
		if (c == '~') {
			if (s[1] != '0' && s[1] != '1')
				return -1;
			c = s[1] == '0' ? '~' : '/';
			s++;
		}
		if (n + 1 < cap)
			tok[n] = c;
		n++;
	}
	tok[n < cap ? n : cap - 1] = '\0';
	*len = n;
	*p = s;
	return 1;
}

/* The tool a change's pointer names: "/tools/<i>" in tools, else NULL. */
static const json_t *pointer_tool(const char *ptr, const json_t *tools)
{
	char tok[32];
	size_t len;
	const char *p = ptr;

	if (next_token(&p, tok, sizeof tok, &len) != 1 || strcmp(tok, "tools") != 0)
		return NULL;
	if (next_token(&p, tok, sizeof tok, &len) != 1 || len == 0 || len > 9)
		return NULL;
	for (size_t i = 0; i < len; i++)
		if (tok[i] < '0' || tok[i] > '9')
			return NULL;
	return json_array_get(tools, strtoul(tok, NULL, 10));
}

static int pointer_syntax_ok(const char *ptr)
{
	char tok[8];
	size_t len;
	const char *p = ptr;
	int rc;

	while ((rc = next_token(&p, tok, sizeof tok, &len)) == 1)
		;
	return rc == 0;
}

static int one_line(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static int names_tool(const json_t *tool, const char *name)
{
	const json_t *n = json_object_get(tool, "name");
	return json_is_string(n) && strcmp(json_string_value(n), name) == 0;
}

static size_t count_code(const struct drift_report *r, const char *code)
{
	size_t n = 0;
	for (size_t i = 0; i < drift_report_nchanges(r); i++)
		n += strcmp(drift_report_change(r, i)->code, code) == 0;
	return n;
}

static void check_report(const struct drift_report *r, const json_t *old_tools,
                         const json_t *new_tools)
{
	size_t n = drift_report_nchanges(r), breaking = 0;

	CHECK(n <= DRIFT_MAX_CHANGES);
	CHECK(drift_report_change(r, n) == NULL);
	for (size_t i = 0; i < n; i++) {
		const struct drift_change *c = drift_report_change(r, i);
		CHECK(c != NULL && c->code && c->kind && c->tool && c->pointer && c->message);
		const char *kind = drift_code_kind(c->code);
		CHECK(kind != NULL && strcmp(kind, c->kind) == 0);
		CHECK(c->breaking == (strcmp(c->kind, "breaking") == 0));
		CHECK(one_line(c->message) && c->message[0]);
		CHECK(pointer_syntax_ok(c->pointer));
		const json_t *ot = pointer_tool(c->pointer, old_tools);
		const json_t *nt = pointer_tool(c->pointer, new_tools);
		CHECK((ot && names_tool(ot, c->tool)) || (nt && names_tool(nt, c->tool)));
		if (c->breaking) {
			breaking++;
			CHECK(drift_tool_broke(r, c->tool));
		}
	}
	CHECK(drift_report_nbreaking(r) >= breaking);
	CHECK(!drift_tool_broke(r, NULL));

	json_t *j = drift_report_json(r);
	CHECK(j != NULL);
	CHECK(json_array_size(json_object_get(j, "changes")) == n);
	CHECK(json_integer_value(json_object_get(j, "breaking")) ==
	      (json_int_t)drift_report_nbreaking(r));
	CHECK(json_is_true(json_object_get(j, "truncated")) == drift_report_truncated(r));
	char *dump = json_dumps(j, JSON_COMPACT);
	CHECK(dump != NULL);
	free(dump);
	json_decref(j);

	char *text = drift_report_text(r);
	CHECK(text != NULL && strncmp(text, "drift: ", 7) == 0);
	free(text);
}

/* The object drift_filter() takes for doc: the one holding the array. */
static const json_t *page_of(const json_t *doc)
{
	if (json_is_array(doc) || json_is_array(json_object_get(doc, "tools")))
		return doc;
	return json_object_get(doc, "result");
}

static void check_filter(const json_t *doc, const struct drift_report *r)
{
	const json_t *page = page_of(doc);
	const json_t *tools = json_is_array(page) ? page : json_object_get(page, "tools");
	json_t *f = drift_filter(page, r);

	if (!json_is_array(tools)) {
		CHECK(f == NULL);
		return;
	}
	CHECK(f != NULL);
	const json_t *kept = json_is_array(page) ? f : json_object_get(f, "tools");
	CHECK(json_is_array(kept));
	size_t k = 0;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		const json_t *name = json_object_get(t, "name");
		if (json_is_string(name) && drift_tool_broke(r, json_string_value(name)))
			continue;
		CHECK(json_equal(json_array_get(kept, k), (json_t *)(uintptr_t)t));
		k++;
	}
	CHECK(k == json_array_size(kept));
	if (json_is_object(page)) {
		CHECK(json_object_size(f) == json_object_size(page));
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)(uintptr_t)page, key, v) {
			if (strcmp(key, "tools") != 0)
				CHECK(json_equal(v, json_object_get(f, key)));
		}
	}
	json_decref(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t pos = 0;
	json_t *old_doc = next_value(data, size, &pos);
	if (old_doc == NULL)
		return 0;
	json_t *new_doc = next_value(data, size, &pos);
	if (new_doc == NULL)
		new_doc = json_incref(old_doc);

	const json_t *old_tools = drift_tools_of(old_doc);
	const json_t *new_tools = drift_tools_of(new_doc);
	CHECK(drift_tools_of(NULL) == NULL);
	CHECK(drift_code_kind(NULL) == NULL && drift_code_kind("no-such-code") == NULL);

	/* Anything but two arrays is refused. */
	if (!json_is_array(old_doc))
		CHECK(drift_diff(old_doc, json_is_array(new_tools) ? new_tools : old_doc) == NULL);
	if (old_tools == NULL || new_tools == NULL)
		goto out;

	/* Against itself: nothing changed. */
	const json_t *self[2] = {old_tools, new_tools};
	for (int k = 0; k < 2; k++) {
		struct drift_report *r = drift_diff(self[k], self[k]);
		CHECK(r != NULL);
		CHECK(drift_report_nchanges(r) == 0 && drift_report_nbreaking(r) == 0);
		check_filter(k ? new_doc : old_doc, r);
		drift_report_free(r);
	}

	struct drift_report *fw = drift_diff(old_tools, new_tools);
	struct drift_report *bw = drift_diff(new_tools, old_tools);
	CHECK(fw != NULL && bw != NULL);
	check_report(fw, old_tools, new_tools);
	check_report(bw, new_tools, old_tools);
	CHECK(drift_report_truncated(fw) == drift_report_truncated(bw));
	if (!drift_report_truncated(fw) && drift_report_nchanges(fw) < DRIFT_MAX_CHANGES &&
	    drift_report_nchanges(bw) < DRIFT_MAX_CHANGES) {
		CHECK(count_code(fw, "tool-added") == count_code(bw, "tool-removed"));
		CHECK(count_code(fw, "tool-removed") == count_code(bw, "tool-added"));
	}
	check_filter(new_doc, fw);
	check_filter(old_doc, bw);
	drift_report_free(fw);
	drift_report_free(bw);
	drift_report_free(NULL);
out:
	json_decref(old_doc);
	json_decref(new_doc);
	return 0;
}

/* Unit tests for the incremental contract check (checks/contract.h,
 * "Incremental checking") and the tool spans it is fed with
 * (proxy/base/jparse.h, jparse_elements and jparse_elements_since).
 *
 * The property under test: checking a listing through a memo gives the
 * report a full contract_check() gives, finding for finding, whatever
 * changed since the memo's last listing. Random listings are mutated the
 * way deploys and bad servers change them (a description edited, tools
 * added, removed, renamed, reordered, duplicated, broken, whitespace
 * moved, the era or spec_only flipped) and every report is compared
 * whole: counts, findings, per-tool filter answers, JSON and text.
 * Another test pins that the incremental path is taken: a listing that
 * changed in one tool re-checks one tool.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "checks/contract.h"
#include "proxy/base/jparse.h"
#include "tests/unit/helpers.h"

/* ---- random listings ------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15u;

static unsigned rnd(unsigned n)
{
	return (unsigned)(th_xorshift(&rng) % n);
}

/* A tool, sometimes with problems or warnings of every kind. */
static json_t *random_tool(unsigned id)
{
	char name[64], desc[128];
	static const char *const bad_names[] = {"", "has space", "x/y"};
	switch (rnd(12)) {
	case 0:
		return json_integer(id); /* tool-not-object */
	case 1:
		snprintf(name, sizeof name, "%s", bad_names[rnd(3)]);
		break;
	case 2:
		snprintf(name, sizeof name, "dup_%u", rnd(3)); /* duplicates likely */
		break;
	default:
		snprintf(name, sizeof name, "tool_%u", id);
	}
	snprintf(desc, sizeof desc, rnd(8) == 0 ? "short %u" : "Does thing number %u for you.", id);
	json_t *t = json_object();
	if (rnd(10) != 0)
		json_object_set_new(t, "name", json_string(name));
	if (rnd(10) != 0)
		json_object_set_new(t, "description", json_string(desc));
	if (rnd(12) != 0) {
		json_t *props = json_object();
		json_t *a = json_pack("{s:s}", "type", "string");
		if (rnd(3) != 0)
			json_object_set_new(a, "description", json_string("The a"));
		if (rnd(4) == 0)
			json_object_set_new(a, "x-mcp-header", json_string(rnd(2) ? "X-A" : "bad header"));
		json_object_set_new(props, "a", a);
		if (rnd(3) == 0)
			json_object_set_new(props, "b", rnd(2) ? json_object() : json_integer(1));
		json_t *req = json_pack("[s]", rnd(4) == 0 ? "zz" : "a");
		json_t *in = json_pack("{s:s,s:o,s:o}", "type", rnd(15) == 0 ? "array" : "object",
		                       "properties", props, "required", req);
		json_object_set_new(t, "inputSchema", in);
	}
	if (rnd(6) == 0)
		json_object_set_new(t, "outputSchema",
		                    json_pack("{s:s}", "type", rnd(2) ? "object" : "string"));
	if (rnd(3) == 0)
		json_object_set_new(t, "annotations", json_pack("{s:b}", "readOnlyHint", rnd(2)));
	return t;
}

static void mutate(json_t *tools, unsigned *next_id)
{
	size_t n = json_array_size(tools);
	unsigned what = rnd(9);
	if (n == 0 || what == 0) {
		json_array_insert_new(tools, n ? rnd((unsigned)n + 1) : 0, random_tool((*next_id)++));
		return;
	}
	size_t i = rnd((unsigned)n);
	json_t *t = json_array_get(tools, i);
	switch (what) {
	case 1:
		json_array_remove(tools, i);
		break;
	case 2: { /* reorder */
		size_t j = rnd((unsigned)n);
		json_t *u = json_incref(json_array_get(tools, j));
		json_array_set(tools, j, t);
		json_array_set_new(tools, i, u);
		break;
	}
	case 3: /* duplicate */
		json_array_insert_new(tools, rnd((unsigned)n + 1), json_deep_copy(t));
		break;
	case 4: /* rename */
		if (json_is_object(t)) {
			char name[32];
			snprintf(name, sizeof name, "renamed_%u", (*next_id)++);
			json_object_set_new(t, "name", json_string(name));
		}
		break;
	case 5: /* replace */
		json_array_set_new(tools, i, random_tool((*next_id)++));
		break;
	default: /* a deploy edits a description */
		if (json_is_object(t)) {
			char desc[64];
			snprintf(desc, sizeof desc, rnd(6) ? "Edited description %u." : "", (*next_id)++);
			json_object_set_new(t, "description", json_string(desc));
		}
	}
}

/* ---- comparing reports --------------------------------------------------------- */

static void assert_same_report(const struct contract_report *a, const struct contract_report *b,
                               struct contract_memo *m)
{
	assert_int_equal(contract_report_ntools(a), contract_report_ntools(b));
	assert_int_equal(contract_report_nfailed(a), contract_report_nfailed(b));
	assert_int_equal(contract_report_nproblems(a), contract_report_nproblems(b));
	assert_int_equal(contract_report_nwarnings(a), contract_report_nwarnings(b));
	assert_int_equal(contract_report_passed(a), contract_report_passed(b));
	assert_int_equal(contract_report_truncated(a), contract_report_truncated(b));
	assert_int_equal(contract_report_nfindings(a), contract_report_nfindings(b));
	for (size_t i = 0; i < contract_report_nfindings(a); i++) {
		const struct contract_finding *x = contract_report_finding(a, i);
		const struct contract_finding *y = contract_report_finding(b, i);
		assert_string_equal(x->code, y->code);
		assert_string_equal(x->message, y->message);
		assert_string_equal(x->pointer, y->pointer);
		if (x->tool || y->tool) {
			assert_non_null(x->tool);
			assert_non_null(y->tool);
			assert_string_equal(x->tool, y->tool);
		}
		assert_int_equal(x->page, y->page);
		assert_int_equal(x->tool_index, y->tool_index);
		assert_int_equal(x->list_level, y->list_level);
		assert_int_equal(x->problem, y->problem);
		assert_int_equal(x->spec, y->spec);
	}
	for (size_t i = 0; i < contract_report_ntools(a) + 2; i++)
		assert_int_equal(contract_report_tool_failed(a, 0, i), contract_report_tool_failed(b, 0, i));
	json_t *ja = contract_report_json(a);
	json_t *jb = contract_report_json(b);
	json_t *jm = contract_report_json_memo(b, m);
	assert_true(json_equal(ja, jb));
	assert_true(json_equal(ja, jm));
	json_decref(ja);
	json_decref(jb);
	json_decref(jm);
	char *ta = contract_report_text(a), *tb = contract_report_text(b);
	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
}

/* The listing as a server would send it: compact, or with blanks. */
static char *render(const json_t *result)
{
	size_t flags = rnd(25) == 0 ? JSON_INDENT(1) : JSON_COMPACT;
	return json_dumps(result, flags);
}

/* Spans of text's tools, both ways, which must agree. */
static long spans_of(const char *text, struct jparse_elem *out, const char *prev, size_t prevlen,
                     const struct jparse_elem *pspans, size_t np)
{
	static struct jparse_elem full[CONTRACT_MAX_TOOLS + 8];
	long n = jparse_elements(text, strlen(text), "tools", full, CONTRACT_MAX_TOOLS + 8);
	long m = jparse_elements_since(text, strlen(text), "tools", out, CONTRACT_MAX_TOOLS + 8, prev,
	                               prevlen, pspans, np);
	assert_int_equal(n, m);
	for (long i = 0; i < n; i++) {
		assert_ptr_equal(full[i].at, out[i].at);
		assert_int_equal(full[i].len, out[i].len);
		/* A claimed twin has the very bytes. */
		if (out[i].same_as) {
			assert_true(out[i].same_as <= np);
			assert_int_equal(out[i].len, pspans[out[i].same_as - 1].len);
			assert_memory_equal(out[i].at, pspans[out[i].same_as - 1].at, out[i].len);
		}
	}
	return n;
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_memo_equals_full_check(void **state)
{
	(void)state;
	static struct jparse_elem spans[CONTRACT_MAX_TOOLS + 8], pspans[CONTRACT_MAX_TOOLS + 8];
	struct contract_text texts[CONTRACT_MAX_TOOLS + 8];
	struct contract_memo *m = contract_memo_new();
	assert_non_null(m);
	unsigned next_id = 0;
	json_t *tools = json_array();
	for (int i = 0; i < 40; i++)
		json_array_append_new(tools, random_tool(next_id++));
	char *prev = NULL;
	size_t np = 0, checked = 0, total = 0, findings = 0;
	for (int round = 0; round < 600; round++) {
		unsigned k = rnd(4);
		for (unsigned i = 0; i < k; i++)
			mutate(tools, &next_id);
		json_t *result = json_pack("{s:O}", "tools", tools);
		if (rnd(10) == 0)
			json_object_set_new(result, "_meta", json_pack("{s:i}", "round", round));
		char *text = render(result);
		long n = spans_of(text, spans, prev, prev ? strlen(prev) : 0, pspans, np);
		assert_int_equal(n, (long)json_array_size(tools));
		/* With the skim's word on which tools kept their text. */
		for (long i = 0; i < n; i++)
			texts[i] = (struct contract_text){spans[i].at, spans[i].len, spans[i].same_as};
		json_t *page = jparse(text, strlen(text), 0);
		assert_non_null(page);
		struct contract_opts o = {.era = rnd(25) == 0 ? "2026-07-28" : "2025-11-25",
		                          .spec_only = rnd(8) == 0};
		const json_t *pages[1] = {page};
		struct contract_report *full = contract_check(pages, 1, &o);
		struct contract_report *inc = contract_check_memo(page, texts, (size_t)n, &o, m);
		assert_non_null(full);
		assert_non_null(inc);
		assert_true(contract_memo_rechecked(m) <= (size_t)n);
		checked += contract_memo_rechecked(m);
		total += (size_t)n;
		findings += contract_report_nfindings(full);
		assert_same_report(full, inc, m);
		contract_report_free(full);
		contract_report_free(inc);
		json_decref(page);
		json_decref(result);
		/* The spans point into text; keep it as the next "previous". */
		free(prev);
		prev = text;
		memcpy(pspans, spans, (size_t)n * sizeof *spans);
		np = (size_t)n;
	}
	free(prev);
	json_decref(tools);
	contract_memo_free(m);
	/* The memo did its work, on listings with plenty to find. */
	assert_true(checked * 4 < total);
	assert_true(findings > total / 4);
	printf("memo: %zu of %zu tools checked afresh, %zu findings\n", checked, total, findings);
}

static struct contract_report *check_text(struct contract_memo *m, const char *text)
{
	static struct jparse_elem spans[CONTRACT_MAX_TOOLS];
	struct contract_text texts[CONTRACT_MAX_TOOLS];
	long n = jparse_elements(text, strlen(text), "tools", spans, CONTRACT_MAX_TOOLS);
	assert_true(n >= 0);
	for (long i = 0; i < n; i++)
		texts[i] = (struct contract_text){spans[i].at, spans[i].len, 0};
	json_t *page = jparse(text, strlen(text), 0);
	assert_non_null(page);
	struct contract_report *r = contract_check_memo(page, texts, (size_t)n, NULL, m);
	json_decref(page);
	assert_non_null(r);
	return r;
}

/* Fails when the memo is not used: a changed tool is all that is checked. */
static void test_memo_rechecks_only_changed_tools(void **state)
{
	(void)state;
	struct contract_memo *m = contract_memo_new();
	json_t *tools = json_array();
	for (unsigned i = 0; i < 200; i++) {
		char name[32];
		snprintf(name, sizeof name, "tool_%u", i);
		json_array_append_new(tools, json_pack("{s:s,s:s,s:{s:s}}", "name", name, "description",
		                                       "Does a thing for you.", "inputSchema", "type",
		                                       "object"));
	}
	json_t *result = json_pack("{s:O}", "tools", tools);
	char *text = json_dumps(result, JSON_COMPACT);
	contract_report_free(check_text(m, text));
	assert_int_equal(contract_memo_rechecked(m), 200);
	free(text);

	/* The same list again: nothing checked. */
	text = json_dumps(result, JSON_COMPACT);
	contract_report_free(check_text(m, text));
	assert_int_equal(contract_memo_rechecked(m), 0);
	free(text);

	/* One description edited: one tool checked. */
	json_object_set_new(json_array_get(tools, 7), "description", json_string("x"));
	text = json_dumps(result, JSON_COMPACT);
	struct contract_report *r = check_text(m, text);
	assert_int_equal(contract_memo_rechecked(m), 1);
	assert_int_equal(contract_report_nwarnings(r), 1); /* description-short */
	contract_report_free(r);
	free(text);

	/* A tool inserted at the front: every other one found by its text. */
	json_array_insert_new(tools, 0, json_pack("{s:s}", "name", "new"));
	text = json_dumps(result, JSON_COMPACT);
	r = check_text(m, text);
	assert_int_equal(contract_memo_rechecked(m), 1);
	/* Their pointers moved with them. */
	assert_string_equal(contract_report_finding(r, contract_report_nfindings(r) - 1)->pointer,
	                    "/tools/8/description");
	contract_report_free(r);
	free(text);

	/* A memo checked with other era rules starts over. */
	text = json_dumps(result, JSON_COMPACT);
	static struct jparse_elem spans[CONTRACT_MAX_TOOLS];
	struct contract_text texts[CONTRACT_MAX_TOOLS];
	long n = jparse_elements(text, strlen(text), "tools", spans, CONTRACT_MAX_TOOLS);
	for (long i = 0; i < n; i++)
		texts[i] = (struct contract_text){spans[i].at, spans[i].len, 0};
	struct contract_opts o = {.era = "2026-07-28"};
	r = contract_check_memo(result, texts, (size_t)n, &o, m);
	assert_int_equal(contract_memo_rechecked(m), 201);
	contract_report_free(r);
	/* Texts that do not match the tools: a plain check, memo untouched. */
	r = contract_check_memo(result, texts, (size_t)n - 1, &o, m);
	assert_non_null(r);
	assert_int_equal(contract_memo_rechecked(m), 201);
	contract_report_free(r);
	free(text);

	json_decref(result);
	json_decref(tools);
	contract_memo_free(m);
}

static void test_elements(void **state)
{
	(void)state;
	struct jparse_elem e[8];
	const char *t = " { \"a\" : [\"]\" , {\"tools\":1}], \"tools\" : [ 1 , \"x\\\"]\" ,{\"b\":[2]} ,null] } ";
	assert_int_equal(jparse_elements(t, strlen(t), "tools", e, 8), 4);
	assert_int_equal(e[0].len, 1);
	assert_memory_equal(e[1].at, "\"x\\\"]\"", e[1].len);
	assert_memory_equal(e[2].at, "{\"b\":[2]}", e[2].len);
	assert_memory_equal(e[3].at, "null", 4);
	/* Too many, none, two, an escaped name, not an array, not an object. */
	assert_int_equal(jparse_elements(t, strlen(t), "tools", e, 3), -1);
	const char *bad[] = {"{\"a\":[]}", "{\"tools\":[],\"tools\":[]}", "{\"tool\\u0073\":[]}",
	                     "{\"tools\":{}}", "[1]", "{}", "{\"tools\":[1,]}"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(jparse_elements(bad[i], strlen(bad[i]), "tools", e, 8), -1);
	const char *empty = "{\"tools\":[ ]}";
	assert_int_equal(jparse_elements(empty, strlen(empty), "tools", e, 8), 0);

	/* Since an earlier text: a second "tools" added after the array is
	 * seen; a string boundary moved by the change is followed. */
	struct jparse_elem p[8];
	const char *old = "{\"tools\":[{\"a\":\"x\"},{\"b\":1},{\"c\":2}]}";
	assert_int_equal(jparse_elements(old, strlen(old), "tools", p, 8), 3);
	const char *dup = "{\"tools\":[{\"a\":\"x\"},{\"b\":1},{\"c\":2}],\"tools\":[]}";
	assert_int_equal(jparse_elements_since(dup, strlen(dup), "tools", e, 8, old, strlen(old), p, 3),
	                 -1);
	const char *str = "{\"tools\":[{\"a\":\"x\\\"},{\\\"b\\\":1},{\"},{\"c\":2}]}";
	assert_int_equal(jparse_elements_since(str, strlen(str), "tools", e, 8, old, strlen(old), p, 3),
	                 jparse_elements(str, strlen(str), "tools", p + 4, 4));
	assert_int_equal(jparse_elements(str, strlen(str), "tools", e, 8), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elements),
		cmocka_unit_test(test_memo_rechecks_only_changed_tools),
		cmocka_unit_test(test_memo_equals_full_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

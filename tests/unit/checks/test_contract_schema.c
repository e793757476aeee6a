/* Unit tests for the contract checker's schema rules (issue 19, item 6):
 * outputSchema held to inputSchema's structural checks
 * (output-required-unknown) and every subschema of both checked for
 * validity in its dialect (schema-invalid, schema-unsupported,
 * schema-unchecked), each finding asserted with its code AND pointer, and
 * a near miss that must not fire. Through the public API only.
 *
 * Listings are written with single quotes (th_json() turns them into
 * double quotes).
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
#include "tests/unit/helpers.h"

/* ---- helpers ---------------------------------------------------------------- */

static struct contract_report *check_era(const char *text, const char *era, int spec_only)
{
	struct contract_opts o = {.era = era, .spec_only = spec_only};
	json_t *page = th_json(text);
	const json_t *pages[1] = {page};
	struct contract_report *r = contract_check(pages, 1, &o);
	assert_non_null(r);
	json_decref(page); /* the report keeps nothing borrowed from it */
	return r;
}

static size_t count(const struct contract_report *r, const char *code)
{
	size_t n = 0;
	for (size_t i = 0; i < contract_report_nfindings(r); i++)
		n += strcmp(contract_report_finding(r, i)->code, code) == 0;
	return n;
}

static void dump(const struct contract_report *r)
{
	for (size_t i = 0; i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		print_message("  %s %s %s: %s\n", f->problem ? "P" : "W", f->code, f->pointer, f->message);
	}
}

/* The one finding with this code and pointer; fails the test otherwise.
 * problem: 1 or 0 as expected. */
static const struct contract_finding *expect(const struct contract_report *r, const char *code,
                                             const char *pointer, int problem)
{
	for (size_t i = 0; i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		if (strcmp(f->code, code) == 0 && strcmp(f->pointer, pointer) == 0) {
			assert_int_equal(f->problem, problem);
			return f;
		}
	}
	dump(r);
	fail_msg("no %s at %s", code, pointer);
	return NULL;
}

static void expect_clean(const struct contract_report *r)
{
	if (contract_report_nfindings(r) != 0) {
		dump(r);
		fail_msg("expected no findings");
	}
	assert_true(contract_report_passed(r));
}

/* One tool around an inputSchema (and outputSchema when out is not NULL):
 * otherwise clean. Returns a static buffer. */
static const char *tool_with(const char *in, const char *out)
{
	static char buf[8192];
	snprintf(buf, sizeof buf,
	         "{'tools':[{'name':'t','description':'A perfectly fine tool for tests',"
	         "'inputSchema':%s%s%s}]}",
	         in, out ? ",'outputSchema':" : "", out ? out : "");
	return buf;
}

#define PROP(name, schema) "{'type':'object','properties':{'" name "':" schema "}}"

/* ---- outputSchema: the seed's rule --------------------------------------------- */

static void test_output_required_unknown(void **state)
{
	(void)state;
	struct contract_report *r = check_era(
		tool_with("{'type':'object'}",
		          "{'type':'object','properties':{'sum':{'type':'number'}},"
		          "'required':['sum','total','sum']}"),
		NULL, 0);
	const struct contract_finding *f =
		expect(r, "output-required-unknown", "/tools/0/outputSchema/required/1", 1);
	assert_non_null(strstr(f->message, "\"total\""));
	assert_false(f->spec); /* the schema never ties required to properties */
	assert_int_equal(count(r, "output-required-unknown"), 1);
	assert_int_equal(count(r, "required-unknown"), 0); /* input's code keeps its meaning */
	assert_false(contract_report_passed(r));
	assert_true(contract_report_tool_failed(r, 0, 0));
	assert_string_equal(contract_code_rule("output-required-unknown"), "usability");
	contract_report_free(r);

	/* spec_only: a warning, like required-unknown */
	r = check_era(tool_with("{'type':'object'}",
	                        "{'type':'object','properties':{},'required':['x']}"),
	              NULL, 1);
	expect(r, "output-required-unknown", "/tools/0/outputSchema/required/0", 0);
	assert_true(contract_report_passed(r));
	contract_report_free(r);
}

static void test_output_required_declared_by_composition(void **state)
{
	(void)state;
	/* Near misses: declared through allOf, a local $ref, patternProperties
	 * (cannot tell) or a remote $ref (cannot see): no finding. */
	struct contract_report *r = check_era(
		"{'tools':["
		"{'name':'a','description':'A perfectly fine tool for tests',"
		" 'inputSchema':{'type':'object'},'outputSchema':{'type':'object',"
		"  '$defs':{'R':{'properties':{'id':{'type':'string'}}}},"
		"  'allOf':[{'properties':{'n':{'type':'integer'}}},{'$ref':'#/$defs/R'}],"
		"  'required':['n','id']}},"
		"{'name':'b','description':'A perfectly fine tool for tests',"
		" 'inputSchema':{'type':'object'},'outputSchema':{'type':'object',"
		"  'patternProperties':{'^k':{}},'required':['k1']}},"
		"{'name':'c','description':'A perfectly fine tool for tests',"
		" 'inputSchema':{'type':'object'},'outputSchema':{'type':'object',"
		"  'allOf':[{'$ref':'https://example.com/out.json'}],'required':['z']}}"
		"]}",
		NULL, 0);
	expect_clean(r);
	contract_report_free(r);
}

static void test_output_structural_causes(void **state)
{
	(void)state;
	/* properties and required of outputSchema: output-schema-invalid, one
	 * per cause, as before; no schema-invalid on top for the same place. */
	struct contract_report *r = check_era(
		tool_with("{'type':'object'}",
		          "{'type':'object','properties':{'a':5},'required':[1]}"),
		NULL, 0);
	expect(r, "output-schema-invalid", "/tools/0/outputSchema/properties/a", 1);
	expect(r, "output-schema-invalid", "/tools/0/outputSchema/required/0", 1);
	assert_int_equal(count(r, "output-schema-invalid"), 2);
	assert_int_equal(count(r, "schema-invalid"), 0);
	contract_report_free(r);
}

/* ---- schema-invalid: every subschema, with the pointer of the keyword ---------- */

static void test_misspelt_type_deep(void **state)
{
	(void)state;
	const char *in = "{'type':'object','properties':{'filter':{'type':'object',"
	                 "'description':'d','properties':{'field':{'type':'strng'}}}}}";
	static const char *const eras[] = {NULL, "2025-06-18", "2025-11-25", "2026-07-28"};
	for (size_t e = 0; e < sizeof eras / sizeof *eras; e++) {
		struct contract_report *r = check_era(tool_with(in, NULL), eras[e], 0);
		const struct contract_finding *f = expect(
			r, "schema-invalid", "/tools/0/inputSchema/properties/filter/properties/field/type",
			1);
		assert_true(f->spec);
		assert_non_null(strstr(f->message, "strng"));
		assert_non_null(strstr(f->message, "inputSchema"));
		assert_int_equal(count(r, "schema-invalid"), 1);
		assert_true(contract_report_tool_failed(r, 0, 0));
		contract_report_free(r);
	}
	assert_string_equal(contract_code_rule("schema-invalid"), "spec");
}

static void test_ref_to_nowhere(void **state)
{
	(void)state;
	struct contract_report *r = check_era(
		tool_with("{'type':'object','$defs':{'A':{'type':'string'}},'properties':{"
		          "'ok':{'$ref':'#/$defs/A','description':'d'},"
		          "'list':{'type':'array','description':'d','items':{'$ref':'#/$defs/B'}}}}",
		          NULL),
		"2025-11-25", 0);
	const struct contract_finding *f =
		expect(r, "schema-invalid", "/tools/0/inputSchema/properties/list/items/$ref", 1);
	assert_non_null(strstr(f->message, "#/$defs/B"));
	assert_int_equal(count(r, "schema-invalid"), 1);
	contract_report_free(r);
}

static void test_enum_not_array_deep(void **state)
{
	(void)state;
	struct contract_report *r = check_era(
		tool_with("{'type':'object','properties':{'rows':{'type':'array','description':'d',"
		          "'items':{'anyOf':[{'type':'null'},{'type':'object','properties':{"
		          "'level':{'enum':'low'}}}]}}}}",
		          NULL),
		"2025-11-25", 0);
	expect(r, "schema-invalid",
	       "/tools/0/inputSchema/properties/rows/items/anyOf/1/properties/level/enum", 1);
	contract_report_free(r);
}

static void test_output_schema_deep(void **state)
{
	(void)state;
	struct contract_report *r = check_era(
		tool_with("{'type':'object'}",
		          "{'type':'object','properties':{'n':{'type':'integer','minimum':'0'}}}"),
		"2025-06-18", 0);
	const struct contract_finding *f =
		expect(r, "schema-invalid", "/tools/0/outputSchema/properties/n/minimum", 1);
	assert_non_null(strstr(f->message, "outputSchema"));
	contract_report_free(r);
}

static void test_first_bad_keyword_only(void **state)
{
	(void)state;
	/* One finding per schema: the first bad keyword jschema meets. Input
	 * and output schemas are judged apart. */
	struct contract_report *r = check_era(
		tool_with("{'type':'object','properties':{'a':{'type':'strng'},'b':{'type':'nmbr'}}}",
		          "{'type':'object','properties':{'c':{'enum':3}}}"),
		"2025-11-25", 0);
	assert_int_equal(count(r, "schema-invalid"), 2);
	expect(r, "schema-invalid", "/tools/0/outputSchema/properties/c/enum", 1);
	contract_report_free(r);
}

static void test_structural_place_not_reported_twice(void **state)
{
	(void)state;
	/* The root's type, a properties member that is no schema, a required
	 * that is no array: the structural code alone. */
	struct contract_report *r = check_era(tool_with("{'type':'strng'}", NULL), "2025-11-25", 0);
	expect(r, "input-schema-invalid", "/tools/0/inputSchema/type", 1);
	assert_int_equal(count(r, "schema-invalid"), 0);
	contract_report_free(r);

	r = check_era(tool_with("{'type':'object','properties':{'a':3}}", NULL), NULL, 0);
	expect(r, "properties-invalid", "/tools/0/inputSchema/properties/a", 1);
	assert_int_equal(count(r, "schema-invalid"), 0);
	contract_report_free(r);

	r = check_era(tool_with("{'type':'object','required':'a'}", NULL), NULL, 0);
	expect(r, "required-invalid", "/tools/0/inputSchema/required", 1);
	assert_int_equal(count(r, "schema-invalid"), 0);
	contract_report_free(r);

	/* ...but a deeper fault beside a structural one is still found. */
	r = check_era(tool_with("{'type':'object','required':[1],'properties':{"
	                        "'a':{'type':'object','description':'d','properties':{'b':{'type':'strng'}}}}}",
	                        NULL),
	              NULL, 0);
	expect(r, "required-invalid", "/tools/0/inputSchema/required/0", 1);
	expect(r, "schema-invalid", "/tools/0/inputSchema/properties/a/properties/b/type", 1);
	contract_report_free(r);
}

/* ---- dialects -------------------------------------------------------------------- */

static void test_dialect_by_era(void **state)
{
	(void)state;
	/* An array "items" (a tuple) is draft-07; 2020-12 wants one schema
	 * (prefixItems took the array form). */
	const char *in = PROP("pair", "{'type':'array','description':'d',"
	                              "'items':[{'type':'string'},{'type':'number'}]}");
	struct contract_report *r = check_era(tool_with(in, NULL), "2025-06-18", 0);
	expect_clean(r);
	contract_report_free(r);

	r = check_era(tool_with(in, NULL), "2025-11-25", 0);
	const struct contract_finding *f =
		expect(r, "schema-invalid", "/tools/0/inputSchema/properties/pair/items", 1);
	assert_non_null(strstr(f->message, "2020-12"));
	contract_report_free(r);

	/* No era: valid in either dialect is valid. */
	r = check_era(tool_with(in, NULL), NULL, 0);
	expect_clean(r);
	contract_report_free(r);
	r = check_era(tool_with(in, NULL), "draft", 0); /* not a date: no era */
	expect_clean(r);
	contract_report_free(r);
}

static void test_dollar_schema_decides(void **state)
{
	(void)state;
	/* zod-based servers name draft-07 in 2025-11-25 sessions: read as
	 * draft-07, so the tuple is fine there... */
	const char *in = "{'$schema':'http://json-schema.org/draft-07/schema#','type':'object',"
	                 "'properties':{'pair':{'type':'array','description':'d',"
	                 "'items':[{'type':'string'}]}}}";
	struct contract_report *r = check_era(tool_with(in, NULL), "2025-11-25", 0);
	expect_clean(r);
	contract_report_free(r);

	/* ...and a 2020-12 $schema in an old era is read as 2020-12. */
	in = "{'$schema':'https://json-schema.org/draft/2020-12/schema','type':'object',"
	     "'properties':{'pair':{'type':'array','description':'d','items':[{'type':'string'}]}}}";
	r = check_era(tool_with(in, NULL), "2025-03-26", 0);
	expect(r, "schema-invalid", "/tools/0/inputSchema/properties/pair/items", 1);
	contract_report_free(r);
	/* No era: the $schema decides, nothing is retried in the other. */
	r = check_era(tool_with(in, NULL), NULL, 0);
	expect(r, "schema-invalid", "/tools/0/inputSchema/properties/pair/items", 1);
	contract_report_free(r);
}

static void test_unsupported_dollar_schema(void **state)
{
	(void)state;
	const char *in = "{'$schema':'https://json-schema.org/draft/2019-09/schema','type':'object'}";
	struct contract_report *r = check_era(tool_with(in, NULL), "2025-11-25", 0);
	const struct contract_finding *f =
		expect(r, "schema-unsupported", "/tools/0/inputSchema/$schema", 1);
	assert_false(f->spec);
	assert_non_null(strstr(f->message, "2019-09"));
	assert_string_equal(contract_code_rule("schema-unsupported"), "usability");
	contract_report_free(r);

	r = check_era(tool_with("{'type':'object'}", in), "2025-11-25", 1); /* spec_only */
	expect(r, "schema-unsupported", "/tools/0/outputSchema/$schema", 0);
	assert_true(contract_report_passed(r));
	contract_report_free(r);

	/* Near miss: both supported spellings, with and without "#". */
	r = check_era(tool_with("{'$schema':'http://json-schema.org/draft-07/schema','type':'object'}",
	                        "{'$schema':'https://json-schema.org/draft/2020-12/schema#',"
	                        "'type':'object'}"),
	              "2025-11-25", 0);
	expect_clean(r);
	contract_report_free(r);
}

/* ---- remote references, patterns, limits -------------------------------------- */

static void test_remote_ref_no_finding_rest_checked(void **state)
{
	(void)state;
	/* A $ref into another document is valid JSON Schema the checker cannot
	 * read: no finding (contract.h, "Composed schemas")... */
	struct contract_report *r = check_era(
		tool_with(PROP("x", "{'$ref':'https://example.com/x.json','description':'d'}"), NULL),
		"2025-11-25", 0);
	expect_clean(r);
	contract_report_free(r);

	/* ...but the rest of the schema is still checked, past several of
	 * them, relative ones against an $id included. */
	r = check_era(
		tool_with("{'$id':'https://example.com/root.json','type':'object','properties':{"
		          "'a':{'$ref':'https://example.com/a.json','description':'d'},"
		          "'b':{'$ref':'other.json#/x','description':'d'},"
		          "'c':{'type':'integer','description':'d','maximum':'ten'}}}",
		          NULL),
		"2025-11-25", 0);
	expect(r, "schema-invalid", "/tools/0/inputSchema/properties/c/maximum", 1);
	assert_int_equal(contract_report_nfindings(r), 1);
	contract_report_free(r);
}

static void test_many_remote_refs_unchecked(void **state)
{
	(void)state;
	char in[4096];
	size_t o = (size_t)snprintf(in, sizeof in, "{'type':'object','properties':{");
	for (int i = 0; i < CONTRACT_MAX_REMOTE_REFS + 2; i++)
		o += (size_t)snprintf(in + o, sizeof in - o,
		                      "%s'p%02d':{'$ref':'https://example.com/%d.json','description':'d'}",
		                      i ? "," : "", i, i);
	snprintf(in + o, sizeof in - o, "}}");
	struct contract_report *r = check_era(tool_with(in, NULL), "2025-11-25", 0);
	assert_int_equal(count(r, "schema-unchecked"), 1);
	assert_int_equal(contract_report_nproblems(r), 0);
	assert_true(contract_report_passed(r));
	assert_string_equal(contract_code_rule("schema-unchecked"), "warning");
	contract_report_free(r);
}

static void test_pattern_engine_refuses(void **state)
{
	(void)state;
	/* A lookahead is ECMA-262 our engine does not take: a warning, never a
	 * problem (the server did nothing wrong). */
	struct contract_report *r = check_era(
		tool_with(PROP("pw", "{'type':'string','description':'d','pattern':'^(?=.*[0-9]).{8,}$'}"),
		          NULL),
		"2025-11-25", 0);
	expect(r, "schema-unchecked", "/tools/0/inputSchema/properties/pw/pattern", 0);
	assert_true(contract_report_passed(r));
	contract_report_free(r);

	/* Near miss: an ordinary pattern. */
	r = check_era(tool_with(PROP("id", "{'type':'string','description':'d','pattern':'^[a-z]{2,8}$'}"),
	                        NULL),
	              "2025-11-25", 0);
	expect_clean(r);
	contract_report_free(r);
}

static void test_long_pointer_points_at_schema(void **state)
{
	(void)state;
	/* A pointer longer than jschema keeps would lead nowhere: the finding
	 * points at the schema, the message quotes the cut pointer. */
	char key[301];
	memset(key, 'k', 300);
	key[300] = '\0';
	char in[1024];
	snprintf(in, sizeof in, "{'type':'object','properties':{'%s':{'type':'strng','description':'d'}}}",
	         key);
	struct contract_report *r = check_era(tool_with(in, NULL), "2025-11-25", 0);
	const struct contract_finding *f = expect(r, "schema-invalid", "/tools/0/inputSchema", 1);
	assert_non_null(strstr(f->message, "..."));
	assert_null(strchr(f->message, '\n'));
	contract_report_free(r);
}

/* ---- the real listings stay clean ------------------------------------------------ */

static void test_valid_rich_schemas_clean(void **state)
{
	(void)state;
	/* What real servers send, in both dialects: no finding. */
	struct contract_report *r = check_era(
		"{'tools':["
		"{'name':'a','description':'A perfectly fine tool for tests',"
		" 'inputSchema':{'type':'object','$defs':{'Tag':{'type':'string','minLength':1}},"
		"  'properties':{'tags':{'type':'array','items':{'$ref':'#/$defs/Tag'},'uniqueItems':true,"
		"   'description':'d'},'when':{'type':'string','format':'date-time','description':'d'},"
		"   'pt':{'type':'array','prefixItems':[{'type':'number'}],'items':false,'description':'d'},"
		"   'kind':{'oneOf':[{'const':'x'},{'const':'y'}],'description':'d'}},"
		"  'required':['tags'],'additionalProperties':false,"
		"  'dependentRequired':{'when':['tags']},'if':{'required':['kind']},"
		"  'then':{'properties':{'kind':{'description':'d'}}}},"
		" 'outputSchema':{'type':'object','properties':{'ok':{'type':'boolean'}},"
		"  'required':['ok'],'unevaluatedProperties':false}},"
		"{'name':'b','description':'A perfectly fine tool for tests',"
		" 'inputSchema':{'$schema':'http://json-schema.org/draft-07/schema#','type':'object',"
		"  'definitions':{'N':{'type':['number','null']}},"
		"  'properties':{'n':{'$ref':'#/definitions/N','description':'d'},"
		"   'm':{'type':'object','additionalProperties':{'type':'string'},'description':'d'}}}}"
		"]}",
		"2025-11-25", 0);
	expect_clean(r);
	contract_report_free(r);
}

/* ---- the memo ------------------------------------------------------------------------ */

/* contract_check_memo of text (one page) with m; returns the report. */
static struct contract_report *memo_check(struct contract_memo *m, const char *quoted,
                                          const char *era, json_t **keep)
{
	char *text = th_quotes(quoted);
	json_t *page = th_json_text(text, 0);
	/* Each tool's text, as the proxy finds it. */
	const json_t *tools = json_object_get(page, "tools");
	size_t n = json_array_size(tools);
	assert_true(n <= 8);
	struct contract_text texts[8];
	const char *p = strstr(text, "[") + 1;
	for (size_t i = 0; i < n; i++) {
		/* tools are objects here, written without nesting surprises:
		 * find each by its balanced braces */
		while (*p != '{')
			p++;
		const char *q = p;
		int depth = 0;
		do {
			depth += *q == '{';
			depth -= *q == '}';
			q++;
		} while (depth > 0);
		texts[i] = (struct contract_text){.at = p, .len = (size_t)(q - p)};
		p = q;
	}
	struct contract_opts o = {.era = era};
	struct contract_report *r = contract_check_memo(page, texts, n, &o, m);
	assert_non_null(r);
	*keep = page; /* texts borrowed the text only during the call */
	free(text);
	return r;
}

static void test_memo_replays_schema_findings(void **state)
{
	(void)state;
	const char *listing = tool_with(PROP("pair", "{'type':'array','description':'d',"
	                                             "'items':[{'type':'string'}]}"),
	                                NULL);
	struct contract_memo *m = contract_memo_new();
	assert_non_null(m);
	json_t *page;
	struct contract_report *r = memo_check(m, listing, "2025-11-25", &page);
	assert_int_equal(contract_memo_rechecked(m), 1);
	const struct contract_finding *f = expect(r, "schema-invalid", "/tools/0/inputSchema/properties/pair/items", 1);
	char *msg = strdup(f->message);
	contract_report_free(r);
	json_decref(page);

	/* Same text, same era: replayed, same finding. */
	r = memo_check(m, listing, "2025-11-25", &page);
	assert_int_equal(contract_memo_rechecked(m), 0);
	f = expect(r, "schema-invalid", "/tools/0/inputSchema/properties/pair/items", 1);
	assert_string_equal(f->message, msg);
	contract_report_free(r);
	json_decref(page);

	/* Another dialect: the memo's results no longer hold; draft-07 takes
	 * the tuple. */
	r = memo_check(m, listing, "2025-06-18", &page);
	assert_int_equal(contract_memo_rechecked(m), 1);
	expect_clean(r);
	contract_report_free(r);
	json_decref(page);
	free(msg);
	contract_memo_free(m);
}

static void test_memo_keeps_dialect_free_tools(void **state)
{
	(void)state;
	/* A tool whose schemas name their $schema reads the same in every
	 * era's dialect: clients of two eras listing one upstream replay it
	 * (only tools without $schema are checked again). */
	const char *listing =
		"{'tools':[{'name':'zod','description':'A perfectly fine tool for tests',"
		"'inputSchema':{'$schema':'http://json-schema.org/draft-07/schema#','type':'object',"
		"'properties':{'pair':{'type':'array','description':'d','items':[{'type':'string'}]}}}},"
		"{'name':'plain','description':'A perfectly fine tool for tests',"
		"'inputSchema':{'type':'object','properties':{'pair':{'type':'array','description':'d',"
		"'items':[{'type':'string'}]}}}}]}";
	struct contract_memo *m = contract_memo_new();
	assert_non_null(m);
	static const char *const eras[] = {"2025-06-18", "2025-11-25", "2025-06-18", NULL};
	for (size_t i = 0; i < sizeof eras / sizeof *eras; i++) {
		json_t *page;
		struct contract_report *r = memo_check(m, listing, eras[i], &page);
		assert_int_equal(contract_memo_rechecked(m), i == 0 ? 2 : 1);
		/* The memo's report is the full check's. */
		struct contract_report *full = check_era(listing, eras[i], 0);
		assert_int_equal(contract_report_nfindings(r), contract_report_nfindings(full));
		for (size_t k = 0; k < contract_report_nfindings(r); k++) {
			assert_string_equal(contract_report_finding(r, k)->code,
			                    contract_report_finding(full, k)->code);
			assert_string_equal(contract_report_finding(r, k)->pointer,
			                    contract_report_finding(full, k)->pointer);
		}
		assert_int_equal(count(r, "schema-invalid"),
		                 eras[i] != NULL && strcmp(eras[i], "2025-11-25") == 0);
		contract_report_free(full);
		contract_report_free(r);
		json_decref(page);
	}
	contract_memo_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_required_unknown),
		cmocka_unit_test(test_output_required_declared_by_composition),
		cmocka_unit_test(test_output_structural_causes),
		cmocka_unit_test(test_misspelt_type_deep),
		cmocka_unit_test(test_ref_to_nowhere),
		cmocka_unit_test(test_enum_not_array_deep),
		cmocka_unit_test(test_output_schema_deep),
		cmocka_unit_test(test_first_bad_keyword_only),
		cmocka_unit_test(test_structural_place_not_reported_twice),
		cmocka_unit_test(test_dialect_by_era),
		cmocka_unit_test(test_dollar_schema_decides),
		cmocka_unit_test(test_unsupported_dollar_schema),
		cmocka_unit_test(test_remote_ref_no_finding_rest_checked),
		cmocka_unit_test(test_many_remote_refs_unchecked),
		cmocka_unit_test(test_pattern_engine_refuses),
		cmocka_unit_test(test_long_pointer_points_at_schema),
		cmocka_unit_test(test_valid_rich_schemas_clean),
		cmocka_unit_test(test_memo_replays_schema_findings),
		cmocka_unit_test(test_memo_keeps_dialect_free_tools),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

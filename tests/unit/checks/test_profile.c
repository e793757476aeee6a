/* Unit tests for the client profiles (checks/profile.h) and their wiring
 * into the contract checker (contract_opts.profiles): each rule flags what
 * it models and leaves alone what the client takes; codes, levels and the
 * "client" rule kind; profiles off changes nothing; the memo gives what a
 * full check gives when the profiles change between listings.
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
#include "checks/profile.h"
#include "tests/unit/helpers.h"

/* ---- collecting findings --------------------------------------------------- */

struct got {
	char lines[64][PROFILE_PTR_MAX + 400];
	size_t n;
};

static void collect(void *arg, enum profile_code code, const char *suffix, const char *msg)
{
	struct got *g = arg;
	assert_true(g->n < 64);
	snprintf(g->lines[g->n++], sizeof g->lines[0], "%s %s | %s", profile_code_name(code), suffix,
	         msg);
}

/* The findings of mask on the tool written in text (' for "). */
static void run_tool(struct got *g, unsigned mask, const char *text)
{
	json_t *t = th_json(text);
	memset(g, 0, sizeof *g);
	profile_check_tool(mask, t, collect, g);
	json_decref(t);
}

static void run_page(struct got *g, unsigned mask, const char *text)
{
	json_t *p = th_json(text);
	memset(g, 0, sizeof *g);
	profile_check_page(mask, p, collect, g);
	json_decref(p);
}

/* 1 when a finding starts with "code pointer " (pointer NULL: any). */
static int has(const struct got *g, const char *code, const char *ptr)
{
	char want[PROFILE_PTR_MAX + 100];
	snprintf(want, sizeof want, "%s %s |", code, ptr ? ptr : "");
	for (size_t i = 0; i < g->n; i++) {
		if (ptr ? strncmp(g->lines[i], want, strlen(want)) == 0
		        : strncmp(g->lines[i], want, strlen(code) + 1) == 0)
			return 1;
	}
	return 0;
}

static int has_code(const struct got *g, const char *code)
{
	return has(g, code, NULL);
}

#define CLEAN_STRICT                                                                        \
	"{'name':'search','description':'Searches the index for things',"                       \
	"'inputSchema':{'type':'object','properties':{'q':{'type':'string'}},"                \
	"'required':['q'],'additionalProperties':false}}"

/* ---- codes and names --------------------------------------------------------- */

static void test_codes_stable(void **state)
{
	(void)state;
	for (int i = 0; i < PROFILE_NCODES; i++) {
		const char *n = profile_code_name((enum profile_code)i);
		assert_non_null(n);
		assert_int_equal(strncmp(n, "profile-", 8), 0);
		const char *pn = profile_name(profile_code_profile((enum profile_code)i));
		assert_non_null(pn);
		/* profile-<profile>-... */
		assert_int_equal(strncmp(n + 8, pn, strlen(pn)), 0);
		assert_int_equal(n[8 + strlen(pn)], '-');
		for (int j = 0; j < i; j++)
			assert_string_not_equal(n, profile_code_name((enum profile_code)j));
		/* The contract's rule table knows every one. */
		assert_string_equal(contract_code_rule(n),
		                    profile_code_problem((enum profile_code)i) ? "client" : "warning");
	}
	assert_null(profile_code_name(PROFILE_NCODES));
	assert_string_equal(profile_code_name(PROFILE_C_CLAUDE_ROOT_COMPOSITION),
	                    "profile-claude-code-root-composition");
	assert_string_equal(profile_code_name(PROFILE_C_OPENAI_OPTIONAL_PROPERTY),
	                    "profile-openai-strict-optional-property");
	assert_true(profile_code_problem(PROFILE_C_SDK_PROPERTY_NOT_OBJECT));
	assert_false(profile_code_problem(PROFILE_C_CLAUDE_NAME_LONG));
	assert_false(profile_code_problem(PROFILE_C_GEMINI_PARAM_NAME));
	assert_null(profile_name(0));
	assert_null(profile_name(3));
}

static void test_parse(void **state)
{
	(void)state;
	unsigned m = 0;
	const char *bad;
	size_t badlen;
	assert_int_equal(profile_parse("claude-code", &m, &bad, &badlen), 0);
	assert_int_equal(m, PROFILE_CLAUDE_CODE);
	m = 0;
	assert_int_equal(profile_parse(" sdk , gemini,sdk,openai-strict ", &m, NULL, NULL), 0);
	assert_int_equal(m, PROFILE_SDK | PROFILE_GEMINI | PROFILE_OPENAI_STRICT);
	m = 0;
	assert_int_equal(profile_parse("sdk,claude", &m, &bad, &badlen), -1);
	assert_int_equal(badlen, 6);
	assert_memory_equal(bad, "claude", 6);
	assert_int_equal(profile_parse("", &m, &bad, &badlen), -1);
	assert_int_equal(badlen, 0);
	assert_int_equal(profile_parse("sdk,", &m, &bad, &badlen), -1);
	assert_int_equal(profile_parse("SDK", &m, NULL, NULL), -1); /* names are exact */
	assert_int_equal(profile_parse(NULL, &m, NULL, NULL), -1);
}

/* ---- claude-code ------------------------------------------------------------- */

static void test_claude_root_composition(void **state)
{
	(void)state;
	struct got g;
	/* #88049: a root anyOf without type object (the core also fails the
	 * type); the API refuses a root anyOf/oneOf/allOf even with it. */
	run_tool(&g, PROFILE_CLAUDE_CODE,
	         "{'name':'a','inputSchema':{'anyOf':[{'type':'object'},{'type':'object'}]}}");
	assert_true(has(&g, "profile-claude-code-root-composition", "/inputSchema/anyOf"));
	run_tool(&g, PROFILE_CLAUDE_CODE,
	         "{'name':'a','inputSchema':{'type':'object','properties':{'x':{'type':'string'}},"
	         "'oneOf':[{'required':['x']}],'allOf':[{}]}}");
	assert_true(has(&g, "profile-claude-code-root-composition", "/inputSchema/oneOf"));
	assert_int_equal(g.n, 1); /* one per code: the first, "and 1 more place" */
	assert_non_null(strstr(g.lines[0], "and 1 more place)"));
	/* Composition below the root is fine (#95504's nested_oneof_ok). */
	run_tool(&g, PROFILE_CLAUDE_CODE,
	         "{'name':'a','inputSchema':{'type':'object','properties':{'t':{'oneOf':["
	         "{'type':'string'},{'type':'integer'}]}}}}");
	assert_int_equal(g.n, 0);
	/* Other profiles do not raise it. */
	run_tool(&g, PROFILE_SDK, "{'name':'a','inputSchema':{'type':'object','anyOf':[{}]}}");
	assert_false(has_code(&g, "profile-claude-code-root-composition"));
}

static void test_claude_name_length(void **state)
{
	(void)state;
	struct got g;
	char tool[256];
	char name[80];
	/* mcp__<server>__<name>: with a one-character server, 8 + n. */
	memset(name, 'a', sizeof name);
	name[57] = '\0';
	snprintf(tool, sizeof tool, "{'name':'%s','inputSchema':{'type':'object'}}", name);
	run_tool(&g, PROFILE_CLAUDE_CODE, tool);
	assert_true(has(&g, "profile-claude-code-name-length", "/name"));
	name[56] = '\0'; /* 64 exactly with a one-character server: long, not over */
	snprintf(tool, sizeof tool, "{'name':'%s','inputSchema':{'type':'object'}}", name);
	run_tool(&g, PROFILE_CLAUDE_CODE, tool);
	assert_false(has_code(&g, "profile-claude-code-name-length"));
	assert_true(has(&g, "profile-claude-code-name-long", "/name"));
	name[41] = '\0'; /* leaves 16 for the server: fine */
	snprintf(tool, sizeof tool, "{'name':'%s','inputSchema':{'type':'object'}}", name);
	run_tool(&g, PROFILE_CLAUDE_CODE, tool);
	assert_int_equal(g.n, 0);
	name[41] = 'a';
	name[42] = '\0';
	snprintf(tool, sizeof tool, "{'name':'%s','inputSchema':{'type':'object'}}", name);
	run_tool(&g, PROFILE_CLAUDE_CODE, tool);
	assert_true(has_code(&g, "profile-claude-code-name-long"));
}

/* ---- openai-strict ----------------------------------------------------------- */

static void test_openai_clean(void **state)
{
	(void)state;
	struct got g;
	run_tool(&g, PROFILE_OPENAI_STRICT, CLEAN_STRICT);
	assert_int_equal(g.n, 0);
	/* Nested objects and anyOf with everything required and closed. */
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'s','inputSchema':{'type':'object','additionalProperties':false,"
	         "'required':['o','l'],'properties':{'o':{'type':'object','properties':{"
	         "'d':{'type':['string','null'],'format':'date-time'}},'required':['d'],"
	         "'additionalProperties':false},'l':{'type':'array','items':{'anyOf':["
	         "{'type':'string'},{'type':'object','properties':{},'additionalProperties':false}]}}}}}");
	assert_int_equal(g.n, 0);
}

static void test_openai_optional_and_open(void **state)
{
	(void)state;
	struct got g;
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'s','inputSchema':{'type':'object','properties':{'q':{'type':'string'},"
	         "'n':{'type':'integer'}},'required':['q']}}");
	assert_true(has(&g, "profile-openai-strict-optional-property", "/inputSchema/properties/n"));
	assert_true(has(&g, "profile-openai-strict-additional-properties",
	                "/inputSchema/additionalProperties"));
	assert_int_equal(g.n, 2);
	/* additionalProperties true or a schema is not false. */
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'s','inputSchema':{'type':'object','properties':{},"
	         "'additionalProperties':{'type':'string'}}}");
	assert_true(has_code(&g, "profile-openai-strict-additional-properties"));
	/* Deep: an array's item object; the pointer goes there, escaped. */
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'s','inputSchema':{'type':'object','additionalProperties':false,"
	         "'required':['a/b'],'properties':{'a/b':{'type':'array','items':{'type':'object',"
	         "'additionalProperties':false,'properties':{'x~':{'type':'string'}}}}}}}");
	assert_true(has(&g, "profile-openai-strict-optional-property",
	                "/inputSchema/properties/a~1b/items/properties/x~0"));
	assert_int_equal(g.n, 1);
}

static void test_openai_keywords_and_formats(void **state)
{
	(void)state;
	struct got g;
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'s','inputSchema':{'type':'object','additionalProperties':false,"
	         "'required':['u','v'],'properties':{'u':{'type':'string','format':'uri'},"
	         "'v':{'type':'array','uniqueItems':true,'items':{'type':'string','format':'uuid'}}}}}");
	assert_true(has(&g, "profile-openai-strict-format", "/inputSchema/properties/u/format"));
	assert_true(has(&g, "profile-openai-strict-unsupported-keyword",
	                "/inputSchema/properties/v/uniqueItems"));
	assert_int_equal(g.n, 2);
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'s','inputSchema':{'type':'object','additionalProperties':false,"
	         "'properties':{},'allOf':[{'if':{},'then':{}}]}}");
	assert_true(has(&g, "profile-openai-strict-unsupported-keyword", "/inputSchema/allOf"));
	assert_non_null(strstr(g.lines[0], "(and 2 more places)")); /* if, then below */
	/* Keywords strict mode takes (anyOf, enum, const, $ref, $defs, pattern). */
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'s','inputSchema':{'type':'object','additionalProperties':false,"
	         "'required':['a'],'$defs':{'e':{'enum':['x','y']}},'properties':{'a':{'anyOf':["
	         "{'$ref':'#/$defs/e'},{'const':'z'},{'type':'string','pattern':'^a'}]}}}}");
	assert_int_equal(g.n, 0);
}

static void test_openai_name(void **state)
{
	(void)state;
	struct got g;
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'calendar.respondToEvent','inputSchema':{'type':'object','properties':{},"
	         "'additionalProperties':false}}");
	assert_true(has(&g, "profile-openai-strict-name-format", "/name"));
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'calendar_respond-To1','inputSchema':{'type':'object','properties':{},"
	         "'additionalProperties':false}}");
	assert_int_equal(g.n, 0);
	/* outputSchema is not sent to the model: not judged. */
	run_tool(&g, PROFILE_OPENAI_STRICT,
	         "{'name':'s','inputSchema':{'type':'object','properties':{},"
	         "'additionalProperties':false},'outputSchema':{'type':'object','properties':{"
	         "'x':{'type':'string','format':'uri'}}}}");
	assert_int_equal(g.n, 0);
}

/* ---- gemini -------------------------------------------------------------------- */

static void test_gemini(void **state)
{
	(void)state;
	struct got g;
	run_tool(&g, PROFILE_GEMINI,
	         "{'name':'search','inputSchema':{'type':'object','properties':{'q':{'type':'string',"
	         "'nullable':true,'format':'date-time','description':'d','enum':['a']},'l':{"
	         "'type':'array','items':{'type':'integer','minimum':1,'maximum':3},'minItems':1},"
	         "'o':{'anyOf':[{'type':'string'},{'type':'number'}]}},'required':['q'],"
	         "'propertyOrdering':['q','l','o']}}");
	assert_int_equal(g.n, 0);
	run_tool(&g, PROFILE_GEMINI,
	         "{'name':'search','inputSchema':{'$schema':'https://json-schema.org/draft/2020-12/"
	         "schema','type':'object','additionalProperties':false,'properties':{"
	         "'k':{'const':'x'},'t':{'type':['string','null']}}}}");
	assert_true(has(&g, "profile-gemini-unsupported-keyword", "/inputSchema/$schema"));
	assert_non_null(strstr(g.lines[0], "(and 2 more places)")); /* additionalProperties, const */
	assert_true(has(&g, "profile-gemini-type-array", "/inputSchema/properties/t/type"));
	run_tool(&g, PROFILE_GEMINI, "{'name':'1st','inputSchema':{'type':'object'}}");
	assert_true(has(&g, "profile-gemini-name-format", "/name"));
	run_tool(&g, PROFILE_GEMINI, "{'name':'_a.b-c:d','inputSchema':{'type':'object'}}");
	assert_int_equal(g.n, 0);
	run_tool(&g, PROFILE_GEMINI,
	         "{'name':'a','inputSchema':{'type':'object','properties':{'page-size':{'type':"
	         "'integer'}}}}");
	assert_true(has(&g, "profile-gemini-param-name", "/inputSchema/properties/page-size"));
	assert_false(profile_code_problem(PROFILE_C_GEMINI_PARAM_NAME));
}

/* ---- sdk ------------------------------------------------------------------------ */

static void test_sdk_properties(void **state)
{
	(void)state;
	struct got g;
	/* hermes-agent #101669: properties.x: true */
	run_tool(&g, PROFILE_SDK,
	         "{'name':'a','inputSchema':{'type':'object','properties':{'refresh':true}}}");
	assert_true(has(&g, "profile-sdk-property-not-object", "/inputSchema/properties/refresh"));
	run_tool(&g, PROFILE_SDK,
	         "{'name':'a','inputSchema':{'type':'object','properties':{'x':{}}},"
	         "'outputSchema':{'type':'object','properties':{'y':false}}}");
	assert_true(has(&g, "profile-sdk-property-not-object", "/outputSchema/properties/y"));
	assert_int_equal(g.n, 1);
	/* Below the root the zod schema does not look: a nested true is fine. */
	run_tool(&g, PROFILE_SDK,
	         "{'name':'a','inputSchema':{'type':'object','properties':{'x':{'type':'object',"
	         "'properties':{'y':true}}}}}");
	assert_int_equal(g.n, 0);
}

static void test_sdk_output_schema(void **state)
{
	(void)state;
	struct got g;
	run_tool(&g, PROFILE_SDK,
	         "{'name':'a','inputSchema':{'type':'object'},'outputSchema':{'$id':'x',"
	         "'description':'d'}}");
	assert_true(has(&g, "profile-sdk-output-schema-type", "/outputSchema/type"));
	run_tool(&g, PROFILE_SDK,
	         "{'name':'a','inputSchema':{'type':'object'},'outputSchema':null}");
	assert_true(has(&g, "profile-sdk-output-schema-type", "/outputSchema"));
	run_tool(&g, PROFILE_SDK,
	         "{'name':'a','inputSchema':{'type':'object'},'outputSchema':{'type':'object'}}");
	assert_int_equal(g.n, 0);
}

static void test_sdk_tool_fields(void **state)
{
	(void)state;
	struct got g;
	static const struct {
		const char *members, *ptr;
	} bad[] = {
		{"'title':5", "/title"},
		{"'description':null", "/description"},
		{"'icons':{}", "/icons"},
		{"'icons':[{'src':'a.png'},{'src':'b.png','theme':'blue'}]", "/icons/1/theme"},
		{"'icons':[{'mimeType':'image/png'}]", "/icons/0/src"},
		{"'icons':[{'src':'a','sizes':'48x48'}]", "/icons/0/sizes"},
		{"'annotations':{'readOnlyHint':'yes'}", "/annotations"},
		{"'annotations':null", "/annotations"},
		{"'execution':{'taskSupport':'sometimes'}", "/execution"},
		{"'_meta':[1]", "/_meta"},
	};
	char tool[512];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(tool, sizeof tool, "{'name':'a','inputSchema':{'type':'object'},%s}",
		         bad[i].members);
		run_tool(&g, PROFILE_SDK, tool);
		if (!has(&g, "profile-sdk-tool-field", bad[i].ptr))
			fail_msg("%s: %s", bad[i].members, g.n ? g.lines[0] : "(nothing)");
	}
	run_tool(&g, PROFILE_SDK,
	         "{'name':'a','title':'A','description':'d','inputSchema':{'type':'object'},"
	         "'icons':[{'src':'a.png','mimeType':'image/png','sizes':['48x48'],'theme':'dark'}],"
	         "'annotations':{'title':'t','readOnlyHint':true,'openWorldHint':false},"
	         "'execution':{'taskSupport':'optional'},'_meta':{'k':1},'unknown':[1]}");
	assert_int_equal(g.n, 0);
}

static void test_sdk_page(void **state)
{
	(void)state;
	struct got g;
	run_page(&g, PROFILE_SDK, "{'tools':[],'nextCursor':null}");
	assert_true(has(&g, "profile-sdk-result-field", "/nextCursor"));
	run_page(&g, PROFILE_SDK, "{'tools':[],'_meta':'x'}");
	assert_true(has(&g, "profile-sdk-result-field", "/_meta"));
	run_page(&g, PROFILE_SDK, "{'tools':[],'nextCursor':'c2','_meta':{}}");
	assert_int_equal(g.n, 0);
	run_page(&g, PROFILE_ALL & ~PROFILE_SDK, "{'tools':[],'nextCursor':null}");
	assert_int_equal(g.n, 0);
	run_page(&g, PROFILE_SDK, "[]");
	assert_int_equal(g.n, 0);
}

/* ---- bounds ------------------------------------------------------------------- */

static void test_bounds(void **state)
{
	(void)state;
	/* A schema nested far deeper than PROFILE_MAX_DEPTH, with an
	 * unsupported keyword at the bottom: not seen, no crash; one at a
	 * depth the walk reaches, seen, pointer cut to PROFILE_PTR_MAX. */
	json_t *leaf = json_pack("{s:s,s:b}", "type", "array", "uniqueItems", 1);
	json_t *s = leaf;
	for (int i = 0; i < 200; i++)
		s = json_pack("{s:s,s:o}", "type", "array", "items", s);
	json_t *tool = json_pack("{s:s,s:{s:s,s:b,s:[s],s:{s:o}}}", "name", "deep", "inputSchema",
	                         "type", "object", "additionalProperties", 0, "required", "d",
	                         "properties", "d", s);
	struct got g = {0};
	profile_check_tool(PROFILE_OPENAI_STRICT, tool, collect, &g);
	assert_int_equal(g.n, 0);
	json_decref(tool);

	char key[300];
	memset(key, 'k', sizeof key - 1);
	key[sizeof key - 1] = '\0';
	json_t *inner = json_pack("{s:s,s:b}", "type", "string", "uniqueItems", 1);
	json_t *mid = json_pack("{s:s,s:b,s:[s],s:{s:o}}", "type", "object", "additionalProperties",
	                        0, "required", key, "properties", key, inner);
	tool = json_pack("{s:s,s:{s:s,s:b,s:[s],s:{s:o}}}", "name", "long", "inputSchema", "type",
	                 "object", "additionalProperties", 0, "required", key, "properties", key, mid);
	memset(&g, 0, sizeof g);
	profile_check_tool(PROFILE_OPENAI_STRICT, tool, collect, &g);
	assert_int_equal(g.n, 1);
	assert_true(strlen(strchr(g.lines[0], ' ') + 1) - strlen(strstr(g.lines[0], " |")) <
	            PROFILE_PTR_MAX);
	/* The deepest place that fits: the first key (the second does not
	 * fit), never a keyword glued under a place it is not in. */
	char want[PROFILE_PTR_MAX + 100];
	snprintf(want, sizeof want, "profile-openai-strict-unsupported-keyword "
	         "/inputSchema/properties/%s/properties |", key);
	assert_int_equal(strncmp(g.lines[0], want, strlen(want)), 0);
	json_decref(tool);
	/* Not an object, no mask: nothing. */
	json_t *odd = th_json("[1]");
	memset(&g, 0, sizeof g);
	profile_check_tool(PROFILE_ALL, odd, collect, &g);
	profile_check_tool(0, odd, collect, &g);
	assert_int_equal(g.n, 0);
	json_decref(odd);
}

/* ---- through contract_check ---------------------------------------------------- */

#define LISTING                                                                             \
	"{'tools':[" CLEAN_STRICT ","                                                            \
	"{'name':'composed','description':'A tool whose root is composed',"                     \
	"'inputSchema':{'type':'object','properties':{'a':{'type':'string','description':'a'}},"\
	"'anyOf':[{'required':['a']}]}},"                                                       \
	"{'name':'boolprop','description':'A tool with a boolean property',"                    \
	"'inputSchema':{'type':'object','properties':{'x':true}}}],'nextCursor':null}"

static char *report_of(const json_t *page, const struct contract_opts *o)
{
	const json_t *pages[1] = {page};
	struct contract_report *r = contract_check(pages, 1, o);
	assert_non_null(r);
	json_t *j = contract_report_json(r);
	char *s = json_dumps(j, JSON_SORT_KEYS);
	json_decref(j);
	contract_report_free(r);
	return s;
}

static void test_contract_off_is_unchanged(void **state)
{
	(void)state;
	json_t *page = th_json(LISTING);
	struct contract_opts none = {0}, zero = {.profiles = 0};
	char *a = report_of(page, NULL), *b = report_of(page, &none), *c = report_of(page, &zero);
	assert_string_equal(a, b);
	assert_string_equal(a, c);
	assert_null(strstr(a, "profile-"));
	free(a);
	free(b);
	free(c);
	json_decref(page);
}

static void test_contract_findings(void **state)
{
	(void)state;
	json_t *page = th_json(LISTING);
	const json_t *pages[1] = {page};
	struct contract_opts o = {.profiles = PROFILE_CLAUDE_CODE | PROFILE_SDK};
	struct contract_report *r = contract_check(pages, 1, &o);
	assert_non_null(r);
	assert_false(contract_report_passed(r));
	/* tool 0 passes, 1 (root anyOf) and 2 (boolean property) fail. */
	assert_int_equal(contract_report_tool_failed(r, 0, 0), 0);
	assert_int_equal(contract_report_tool_failed(r, 0, 1), 1);
	assert_int_equal(contract_report_tool_failed(r, 0, 2), 1);
	int root = 0, prop = 0, cursor = 0;
	for (size_t i = 0; i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		if (strncmp(f->code, "profile-", 8) != 0) {
			assert_false(f->client);
			continue;
		}
		assert_true(f->client);
		assert_false(f->spec);
		assert_true(f->problem);
		assert_string_equal(contract_finding_rule(f), "client");
		if (strcmp(f->code, "profile-claude-code-root-composition") == 0) {
			root++;
			assert_string_equal(f->pointer, "/tools/1/inputSchema/anyOf");
			assert_string_equal(f->tool, "composed");
		} else if (strcmp(f->code, "profile-sdk-property-not-object") == 0) {
			prop++;
			assert_string_equal(f->pointer, "/tools/2/inputSchema/properties/x");
		} else if (strcmp(f->code, "profile-sdk-result-field") == 0) {
			cursor++;
			assert_true(f->list_level);
			assert_int_equal(f->tool_index, -1);
			assert_string_equal(f->pointer, "/nextCursor");
		}
	}
	assert_int_equal(root, 1);
	assert_int_equal(prop, 1);
	assert_int_equal(cursor, 1);
	/* The JSON report says rule "client". */
	json_t *j = contract_report_json(r);
	json_t *p = json_array_get(json_object_get(json_array_get(json_object_get(j, "tools"), 1),
	                                           "problems"), 0);
	assert_string_equal(json_string_value(json_object_get(p, "rule")), "client");
	json_decref(j);
	contract_report_free(r);

	/* spec_only keeps a profile's problems (asked for by name). */
	o.spec_only = 1;
	r = contract_check(pages, 1, &o);
	assert_int_equal(contract_report_tool_failed(r, 0, 1), 1);
	contract_report_free(r);
	json_decref(page);
}

static void test_contract_warning_counts(void **state)
{
	(void)state;
	json_t *page = th_json("{'tools':[{'name':'a_rather_long_tool_name_that_is_nearly_too_long',"
	                       "'description':'A tool with a long name, still fine',"
	                       "'inputSchema':{'type':'object'}}]}");
	const json_t *pages[1] = {page};
	struct contract_opts o = {0};
	struct contract_report *r = contract_check(pages, 1, &o);
	size_t w0 = contract_report_nwarnings(r);
	contract_report_free(r);
	o.profiles = PROFILE_CLAUDE_CODE;
	r = contract_check(pages, 1, &o);
	assert_int_equal(contract_report_nwarnings(r), w0 + 1);
	assert_true(contract_report_passed(r));
	contract_report_free(r);
	json_decref(page);
}

/* From 2026-07-28 the core lets outputSchema have any root; the SDK
 * client does not, so the sdk profile still fails it. */
static void test_contract_modern_output_schema(void **state)
{
	(void)state;
	json_t *page = th_json("{'resultType':'complete','ttlMs':0,'cacheScope':'public','tools':[{"
	                       "'name':'list_names','description':'Lists the names it knows',"
	                       "'inputSchema':{'type':'object'},'outputSchema':{'type':'array',"
	                       "'items':{'type':'string'}}}]}");
	const json_t *pages[1] = {page};
	struct contract_opts o = {.era = "2026-07-28"};
	struct contract_report *r = contract_check(pages, 1, &o);
	assert_true(contract_report_passed(r));
	contract_report_free(r);
	o.profiles = PROFILE_SDK;
	r = contract_check(pages, 1, &o);
	assert_false(contract_report_passed(r));
	assert_int_equal(contract_report_nproblems(r), 1);
	const struct contract_finding *f = contract_report_finding(r, 0);
	assert_string_equal(f->code, "profile-sdk-output-schema-type");
	assert_string_equal(f->pointer, "/tools/0/outputSchema/type");
	contract_report_free(r);
	json_decref(page);
}

/* The texts of a page's tools, as the proxy hands them to the memo. */
static size_t texts_of(const json_t *page, struct contract_text *tx, char **bufs, size_t cap)
{
	const json_t *tools = json_object_get(page, "tools");
	size_t n = json_array_size(tools);
	assert_true(n <= cap);
	for (size_t i = 0; i < n; i++) {
		bufs[i] = json_dumps(json_array_get(tools, i), JSON_COMPACT | JSON_ENCODE_ANY);
		tx[i] = (struct contract_text){.at = bufs[i], .len = strlen(bufs[i])};
	}
	return n;
}

static void test_memo_follows_profiles(void **state)
{
	(void)state;
	json_t *page = th_json(LISTING);
	struct contract_text tx[8];
	char *bufs[8];
	size_t n = texts_of(page, tx, bufs, 8);
	struct contract_memo *m = contract_memo_new();
	static const unsigned seq[] = {0, PROFILE_SDK, PROFILE_SDK, PROFILE_OPENAI_STRICT, 0,
	                               PROFILE_ALL, PROFILE_ALL};
	for (size_t k = 0; k < sizeof seq / sizeof seq[0]; k++) {
		struct contract_opts o = {.profiles = seq[k]};
		struct contract_report *r = contract_check_memo(page, tx, n, &o, m);
		assert_non_null(r);
		json_t *j = contract_report_json_memo(r, m);
		char *got = json_dumps(j, JSON_SORT_KEYS);
		char *want = report_of(page, &o);
		assert_string_equal(got, want);
		/* Same profiles as the call before: replayed, not re-checked. */
		if (k > 0 && seq[k] == seq[k - 1])
			assert_int_equal(contract_memo_rechecked(m), 0);
		else
			assert_int_equal(contract_memo_rechecked(m), n);
		free(got);
		free(want);
		json_decref(j);
		contract_report_free(r);
	}
	contract_memo_free(m);
	for (size_t i = 0; i < n; i++)
		free(bufs[i]);
	json_decref(page);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codes_stable),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_claude_root_composition),
		cmocka_unit_test(test_claude_name_length),
		cmocka_unit_test(test_openai_clean),
		cmocka_unit_test(test_openai_optional_and_open),
		cmocka_unit_test(test_openai_keywords_and_formats),
		cmocka_unit_test(test_openai_name),
		cmocka_unit_test(test_gemini),
		cmocka_unit_test(test_sdk_properties),
		cmocka_unit_test(test_sdk_output_schema),
		cmocka_unit_test(test_sdk_tool_fields),
		cmocka_unit_test(test_sdk_page),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_contract_off_is_unchanged),
		cmocka_unit_test(test_contract_findings),
		cmocka_unit_test(test_contract_warning_counts),
		cmocka_unit_test(test_contract_modern_output_schema),
		cmocka_unit_test(test_memo_follows_profiles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

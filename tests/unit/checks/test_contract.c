/* Unit tests for checks/contract.c, through the public API only.
 * Why this file is long: one test per behaviour of the module, each reading
 * on its own (a failure names one behaviour), with the regression cases.
 *
 * Listings are written with single quotes (th_json() turns them into double
 * quotes) so they read like the JSON they are. Every code has a test that
 * triggers it and asserts code AND pointer, and a near miss that must not.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* strdup, strcasecmp under -std=c11 */
#endif
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

static struct contract_report *check_pages(json_t **pages, size_t n, const char *era, int spec_only)
{
	struct contract_opts o = {.era = era, .spec_only = spec_only};
	const json_t *cp[64];
	assert_true(n <= 64);
	for (size_t i = 0; i < n; i++)
		cp[i] = pages[i];
	struct contract_report *r = contract_check(cp, n, &o);
	assert_non_null(r);
	return r;
}

/* Check one page given as text; the page is freed before returning, which
 * also proves the report keeps nothing borrowed from it. */
static struct contract_report *check_era(const char *text, const char *era, int spec_only)
{
	json_t *page = th_json(text);
	struct contract_report *r = check_pages(&page, 1, era, spec_only);
	json_decref(page);
	return r;
}

static struct contract_report *check(const char *text)
{
	return check_era(text, NULL, 0);
}

static size_t count(const struct contract_report *r, const char *code)
{
	size_t n = 0;
	for (size_t i = 0; i < contract_report_nfindings(r); i++)
		n += strcmp(contract_report_finding(r, i)->code, code) == 0;
	return n;
}

static const struct contract_finding *find(const struct contract_report *r, const char *code,
                                           const char *pointer)
{
	for (size_t i = 0; i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		if (strcmp(f->code, code) == 0 && strcmp(f->pointer, pointer) == 0)
			return f;
	}
	return NULL;
}

static void dump(const struct contract_report *r)
{
	for (size_t i = 0; i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		print_message("  %s %s %s: %s\n", f->problem ? "P" : "W", f->code, f->pointer, f->message);
	}
}

/* Assert a finding with this code at this pointer, and that it is a
 * problem (1) or a warning (0). */
static const struct contract_finding *expect(const struct contract_report *r, const char *code,
                                             const char *pointer, int problem)
{
	const struct contract_finding *f = find(r, code, pointer);
	if (f == NULL) {
		dump(r);
		fail_msg("no %s at %s", code, pointer);
	}
	assert_int_equal(f->problem, problem);
	assert_null(strchr(f->message, '\n'));
	assert_true(strlen(f->message) > 0);
	return f;
}

static void expect_none(const struct contract_report *r, const char *code)
{
	if (count(r, code) != 0) {
		dump(r);
		fail_msg("unexpected %s", code);
	}
}

static void expect_clean(const struct contract_report *r)
{
	if (contract_report_nfindings(r) != 0) {
		dump(r);
		fail_msg("expected no findings");
	}
	assert_true(contract_report_passed(r));
}

/* A good tool to surround the broken one with. */
#define GOOD(name)                                                                            \
	"{'name':'" name "','description':'A perfectly fine tool for tests',"                  \
	"'inputSchema':{'type':'object','properties':{'message':{'type':'string',"            \
	"'description':'Message to echo'}},'required':['message']}}"

/* A listing resembling @modelcontextprotocol/server-everything's as the
 * zod-based TypeScript SDK emits it: draft-07 $schema, additionalProperties,
 * defaults, enums, titles, annotations, execution, _meta, outputSchema. */
static const char everything[] =
	"{'tools':["
	"{'name':'echo','title':'Echo Tool','description':'Echoes back the input',"
	" 'inputSchema':{'type':'object','properties':{'message':{'type':'string',"
	"  'description':'Message to echo'}},'required':['message'],"
	"  'additionalProperties':false,'$schema':'http://json-schema.org/draft-07/schema#'},"
	" 'annotations':{'readOnlyHint':true,'destructiveHint':false,'idempotentHint':true,"
	"  'openWorldHint':false},'execution':{'taskSupport':'forbidden'}},"
	"{'name':'add','description':'Adds two numbers',"
	" 'inputSchema':{'type':'object','properties':{'a':{'type':'number','description':'First number'},"
	"  'b':{'type':'number','description':'Second number'}},'required':['a','b'],"
	"  'additionalProperties':false,'$schema':'http://json-schema.org/draft-07/schema#'}},"
	"{'name':'longRunningOperation','description':'Demonstrates a long running operation with progress updates',"
	" 'inputSchema':{'type':'object','properties':{"
	"  'duration':{'type':'number','default':10,'description':'Duration of the operation in seconds'},"
	"  'steps':{'type':'number','default':5,'description':'Number of steps in the operation'}},"
	"  'additionalProperties':false,'$schema':'http://json-schema.org/draft-07/schema#'}},"
	"{'name':'printEnv','description':'Prints all environment variables, helpful for debugging MCP server configuration',"
	" 'inputSchema':{'type':'object','properties':{},'additionalProperties':false,"
	"  '$schema':'http://json-schema.org/draft-07/schema#'}},"
	"{'name':'sampleLLM','description':'Samples from an LLM using MCP sampling feature',"
	" 'inputSchema':{'type':'object','properties':{"
	"  'prompt':{'type':'string','description':'The prompt to send to the LLM'},"
	"  'maxTokens':{'type':'number','default':100,'description':'Maximum number of tokens to generate'}},"
	"  'required':['prompt'],'additionalProperties':false,"
	"  '$schema':'http://json-schema.org/draft-07/schema#'}},"
	"{'name':'getTinyImage','description':'Returns the MCP_TINY_IMAGE',"
	" 'inputSchema':{'type':'object','properties':{},'additionalProperties':false,"
	"  '$schema':'http://json-schema.org/draft-07/schema#'},"
	" '_meta':{'vendor.example/cost':0}},"
	"{'name':'annotatedMessage','description':'Demonstrates how annotations can be used to provide metadata about content',"
	" 'inputSchema':{'type':'object','properties':{"
	"  'messageType':{'type':'string','enum':['error','success','debug'],"
	"   'description':'Type of message to demonstrate different annotation patterns'},"
	"  'includeImage':{'type':'boolean','default':false,'description':'Whether to include an example image'}},"
	"  'required':['messageType'],'additionalProperties':false,"
	"  '$schema':'http://json-schema.org/draft-07/schema#'}},"
	"{'name':'getResourceReference','description':'Returns a resource reference that can be used by MCP clients',"
	" 'inputSchema':{'type':'object','properties':{'resourceId':{'type':'number','minimum':1,"
	"  'maximum':100,'description':'ID of the resource to reference (1-100)'}},"
	"  'required':['resourceId'],'additionalProperties':false,"
	"  '$schema':'http://json-schema.org/draft-07/schema#'}},"
	"{'name':'getResourceLinks','description':'Returns multiple resource links that reference different types of resources',"
	" 'inputSchema':{'type':'object','properties':{'count':{'type':'number','minimum':1,"
	"  'maximum':10,'default':3,'description':'Number of resource links to return (1-10)'}},"
	"  'additionalProperties':false,'$schema':'http://json-schema.org/draft-07/schema#'}},"
	"{'name':'structuredContent','description':'Returns structured content along with an output schema',"
	" 'inputSchema':{'type':'object','properties':{'location':{'type':'string','minLength':1,"
	"  'description':'City name or zip code'}},'required':['location'],"
	"  'additionalProperties':false,'$schema':'http://json-schema.org/draft-07/schema#'},"
	" 'outputSchema':{'type':'object','properties':{"
	"  'temperature':{'type':'number','description':'Temperature in celsius'},"
	"  'conditions':{'type':'string','description':'Weather conditions description'},"
	"  'humidity':{'type':'number','description':'Humidity percentage'}},"
	"  'required':['temperature','conditions','humidity'],'additionalProperties':false,"
	"  '$schema':'http://json-schema.org/draft-07/schema#'}},"
	"{'name':'zip','description':'Compresses the provided resource files (mapping of name to URI) into a zip file',"
	" 'inputSchema':{'type':'object','properties':{'files':{'type':'object',"
	"  'additionalProperties':{'type':'string','format':'uri'},"
	"  'description':'Mapping of file names to URLs to include in the zip'}},"
	"  'required':['files'],'additionalProperties':false,"
	"  '$schema':'http://json-schema.org/draft-07/schema#'}}"
	"]}";

/* ---- clean listings --------------------------------------------------------- */

static void test_clean_everything_listing(void **state)
{
	(void)state;
	struct contract_report *r = check(everything);
	expect_clean(r);
	assert_int_equal(contract_report_ntools(r), 11);
	assert_true(contract_report_score(r) == 1.0);
	assert_false(contract_report_truncated(r));
	contract_report_free(r);

	/* every era, and spec-only, agree */
	r = check_era(everything, "2025-11-25", 1);
	expect_clean(r);
	contract_report_free(r);
	r = check_era(everything, "2024-11-05", 0);
	expect_clean(r);
	contract_report_free(r);
}

static void test_clean_everything_listing_2026(void **state)
{
	(void)state;
	json_t *page = th_json(everything);
	json_object_set_new(page, "resultType", json_string("complete"));
	json_object_set_new(page, "ttlMs", json_integer(0));
	json_object_set_new(page, "cacheScope", json_string("private"));
	struct contract_report *r = check_pages(&page, 1, "2026-07-28", 0);
	expect_clean(r);
	contract_report_free(r);
	json_decref(page);
}

static void test_clean_composed_schemas(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':["
		/* $ref to $defs, anyOf nullable, oneOf, allOf */
		"{'name':'create_issue','description':'Creates an issue in a repository',"
		" 'inputSchema':{'type':'object','$defs':{'Repo':{'type':'string',"
		"   'description':'owner/name of the repository'},"
		"  'Base':{'type':'object','properties':{'owner':{'type':'string',"
		"   'description':'Repository owner'}},'required':['owner']}},"
		"  'properties':{'repo':{'$ref':'#/$defs/Repo'},"
		"   'labels':{'anyOf':[{'type':'array','items':{'type':'string'}},{'type':'null'}],"
		"    'description':'Labels to set'},"
		"   'body':{'oneOf':[{'type':'string','description':'Markdown body'},"
		"    {'type':'object','description':'Structured body'}]},"
		"   'assignee':{'allOf':[{'$ref':'#/$defs/Repo'}]}},"
		"  'allOf':[{'$ref':'#/$defs/Base'}],"
		"  'required':['repo','owner']}},"
		/* required names declared only by composition */
		"{'name':'search','description':'Searches the index by any of several keys',"
		" 'inputSchema':{'type':'object','anyOf':[{'properties':{'id':{'type':'string',"
		"   'description':'Identifier'}}},{'properties':{'q':{'type':'string',"
		"   'description':'Query text'}}}],'required':['id']}},"
		/* the whole root is a reference, plus a definitions (draft-07) key */
		"{'name':'getUser','description':'Fetches a user by identifier',"
		" 'inputSchema':{'type':'object','$ref':'#/definitions/U','definitions':{'U':{"
		"  'properties':{'id':{'type':'integer','description':'User id'}}}},"
		"  'required':['id']}},"
		/* an unresolvable remote $ref and patternProperties: cannot tell */
		"{'name':'remote','description':'Uses a remote schema reference',"
		" 'inputSchema':{'type':'object','allOf':[{'$ref':'https://example.com/s.json'}],"
		"  'properties':{'x':{'$ref':'https://example.com/x.json'}},'required':['y']}},"
		"{'name':'patterned','description':'Accepts keys matching a pattern',"
		" 'inputSchema':{'type':'object','patternProperties':{'^k_':{'type':'string'}},"
		"  'required':['k_1']}},"
		/* a parameter forbidden by a false schema */
		"{'name':'noarg','description':'Takes no argument at all',"
		" 'inputSchema':{'type':'object','properties':{'legacy':false},"
		"  'additionalProperties':false}}"
		"]}");
	expect_clean(r);
	contract_report_free(r);
}

/* ---- per-tool problems ----------------------------------------------------------- */

static void test_tool_not_object(void **state)
{
	(void)state;
	struct contract_report *r = check("{'tools':[42," GOOD("echo") ",null]}");
	expect(r, "tool-not-object", "/tools/0", 1);
	expect(r, "tool-not-object", "/tools/2", 1);
	assert_int_equal(count(r, "tool-not-object"), 2);
	assert_null(find(r, "tool-not-object", "/tools/1"));
	/* nothing else is said about a non-object */
	assert_int_equal(contract_report_nfindings(r), 2);
	assert_null(contract_report_finding(r, 0)->tool);
	contract_report_free(r);
}

static void test_name_missing(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':[{'description':'A perfectly fine tool','inputSchema':{'type':'object'}},"
		"{'name':5,'description':'A perfectly fine tool','inputSchema':{'type':'object'}},"
		"{'name':'','description':'A perfectly fine tool','inputSchema':{'type':'object'}},"
		GOOD("echo") "]}");
	expect(r, "name-missing", "/tools/0/name", 1);
	expect(r, "name-missing", "/tools/1/name", 1);
	expect(r, "name-missing", "/tools/2/name", 1);
	assert_int_equal(count(r, "name-missing"), 3);
	assert_true(expect(r, "name-missing", "/tools/0/name", 1)->spec);
	expect_none(r, "name-format"); /* an absent name is not also badly formed */
	contract_report_free(r);
}

static void test_name_format(void **state)
{
	(void)state;
	char long_name[130], ok_name[129];
	memset(long_name, 'a', 129);
	long_name[129] = '\0';
	memset(ok_name, 'b', 128);
	ok_name[128] = '\0';
	char text[2048];
	snprintf(text, sizeof text,
	         "{'tools':[" GOOD("bad name!") "," GOOD("%s") "," GOOD("%s") ","
	         GOOD("admin.tools.list_v2-X") "," GOOD("caf\\u00e9") "]}",
	         long_name, ok_name);
	struct contract_report *r = check(text);
	expect(r, "name-format", "/tools/0/name", 0);
	expect(r, "name-format", "/tools/1/name", 0);
	expect(r, "name-format", "/tools/4/name", 0);
	assert_int_equal(count(r, "name-format"), 3);
	assert_true(contract_report_passed(r)); /* warnings never fail */
	assert_true(contract_report_score(r) == 1.0);
	contract_report_free(r);
}

static void test_description_missing(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':[{'name':'a','inputSchema':{'type':'object'}},"
		"{'name':'b','description':7,'inputSchema':{'type':'object'}},"
		"{'name':'c','description':' \\t\\n ','inputSchema':{'type':'object'}},"
		GOOD("d") "]}");
	const struct contract_finding *f = expect(r, "description-missing", "/tools/0/description", 1);
	assert_false(f->spec);
	assert_string_equal(f->tool, "a");
	assert_int_equal(f->tool_index, 0);
	expect(r, "description-missing", "/tools/1/description", 1);
	expect(r, "description-missing", "/tools/2/description", 1);
	assert_int_equal(count(r, "description-missing"), 3);
	expect_none(r, "description-short");
	contract_report_free(r);
}

static void test_description_short(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':[{'name':'a','description':'Adds.','inputSchema':{'type':'object'}},"
		/* 11 characters, 22 bytes: characters count, not bytes */
		"{'name':'b','description':'\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
		"\\u00e9\\u00e9\\u00e9','inputSchema':{'type':'object'}},"
		/* 12 characters, and blanks around it do not count */
		"{'name':'c','description':'  Echo message  ','inputSchema':{'type':'object'}}]}");
	expect(r, "description-short", "/tools/0/description", 0);
	expect(r, "description-short", "/tools/1/description", 0);
	assert_null(find(r, "description-short", "/tools/2/description"));
	assert_true(contract_report_passed(r));
	contract_report_free(r);
}

static void test_input_schema_missing(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':[{'name':'a','description':'A perfectly fine tool'}," GOOD("b") "]}");
	const struct contract_finding *f = expect(r, "input-schema-missing", "/tools/0/inputSchema", 1);
	assert_true(f->spec);
	assert_int_equal(count(r, "input-schema-missing"), 1);
	expect_none(r, "input-schema-invalid");
	contract_report_free(r);
}

static void test_input_schema_invalid(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':["
		"{'name':'a','description':'A perfectly fine tool','inputSchema':'object'},"
		"{'name':'b','description':'A perfectly fine tool','inputSchema':{'type':'array'}},"
		"{'name':'c','description':'A perfectly fine tool','inputSchema':{'properties':{}}},"
		"{'name':'d','description':'A perfectly fine tool','inputSchema':null},"
		"{'name':'e','description':'A perfectly fine tool','inputSchema':{'type':['object','null']}},"
		"{'name':'f','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'additionalProperties':false}}]}");
	expect(r, "input-schema-invalid", "/tools/0/inputSchema", 1);
	expect(r, "input-schema-invalid", "/tools/1/inputSchema/type", 1);
	expect(r, "input-schema-invalid", "/tools/2/inputSchema", 1);
	expect(r, "input-schema-invalid", "/tools/3/inputSchema", 1);
	expect(r, "input-schema-invalid", "/tools/4/inputSchema/type", 1);
	assert_int_equal(count(r, "input-schema-invalid"), 5);
	expect_none(r, "input-schema-missing");
	assert_int_equal(contract_report_nfailed(r), 5);
	contract_report_free(r);
}

static void test_properties_invalid(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':["
		"{'name':'a','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'properties':[]}},"
		"{'name':'b','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'properties':{'ok':{'type':'string','description':'fine'},'x':5}}},"
		"{'name':'c','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'properties':{}}},"
		"{'name':'d','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'properties':{'any':true}}}]}");
	expect(r, "properties-invalid", "/tools/0/inputSchema/properties", 1);
	expect(r, "properties-invalid", "/tools/1/inputSchema/properties/x", 1);
	assert_int_equal(count(r, "properties-invalid"), 2);
	/* a boolean schema is a schema: only the warnings apply */
	expect(r, "param-untyped", "/tools/3/inputSchema/properties/any", 0);
	contract_report_free(r);
}

static void test_required_invalid(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':["
		"{'name':'a','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'properties':{'m':{'type':'string','description':'fine'}},'required':'m'}},"
		"{'name':'b','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'properties':{'m':{'type':'string','description':'fine'}},'required':['m',3]}},"
		"{'name':'c','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'properties':{},'required':[]}}]}");
	expect(r, "required-invalid", "/tools/0/inputSchema/required", 1);
	expect(r, "required-invalid", "/tools/1/inputSchema/required/1", 1);
	assert_int_equal(count(r, "required-invalid"), 2);
	expect_none(r, "required-unknown");
	contract_report_free(r);
}

static void test_required_unknown(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':["
		"{'name':'a','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'properties':{'m':{'type':'string','description':'fine'}},"
		" 'required':['m','ghost','spook']}},"
		"{'name':'b','description':'A perfectly fine tool','inputSchema':{'type':'object',"
		" 'required':['x']}}," GOOD("c") "]}");
	const struct contract_finding *f =
		expect(r, "required-unknown", "/tools/0/inputSchema/required/1", 1);
	assert_false(f->spec);
	assert_non_null(strstr(f->message, "ghost"));
	expect(r, "required-unknown", "/tools/0/inputSchema/required/2", 1);
	expect(r, "required-unknown", "/tools/1/inputSchema/required/0", 1);
	assert_int_equal(count(r, "required-unknown"), 3);
	assert_true(contract_report_score(r) > 0.33 && contract_report_score(r) < 0.34);
	contract_report_free(r);
}

static void test_output_schema_invalid(void **state)
{
	(void)state;
	const char *text =
		"{'tools':["
		"{'name':'a','description':'A perfectly fine tool','inputSchema':{'type':'object'},"
		" 'outputSchema':'object'},"
		"{'name':'b','description':'A perfectly fine tool','inputSchema':{'type':'object'},"
		" 'outputSchema':{'type':'array','items':{'type':'string'}}},"
		"{'name':'c','description':'A perfectly fine tool','inputSchema':{'type':'object'},"
		" 'outputSchema':{'type':'object','properties':5,'required':[1]}},"
		"{'name':'d','description':'A perfectly fine tool','inputSchema':{'type':'object'},"
		" 'outputSchema':{'type':'object','properties':{'t':{'type':'number'}},"
		"  'required':['t','not_listed']}}]}";
	struct contract_report *r = check(text);
	expect(r, "output-schema-invalid", "/tools/0/outputSchema", 1);
	expect(r, "output-schema-invalid", "/tools/1/outputSchema/type", 1);
	expect(r, "output-schema-invalid", "/tools/2/outputSchema/properties", 1);
	expect(r, "output-schema-invalid", "/tools/2/outputSchema/required/0", 1);
	assert_int_equal(count(r, "output-schema-invalid"), 4);
	/* tool d is fine: the input-only rules do not apply to outputs */
	assert_null(find(r, "required-unknown", "/tools/3/outputSchema/required/1"));
	expect_none(r, "param-undescribed");
	expect_none(r, "properties-invalid");
	expect_none(r, "required-invalid");
	contract_report_free(r);

	/* 2026-07-28 lets outputSchema have any root */
	json_t *page = th_json(text);
	json_object_set_new(page, "resultType", json_string("complete"));
	json_object_set_new(page, "ttlMs", json_integer(60000));
	json_object_set_new(page, "cacheScope", json_string("public"));
	r = check_pages(&page, 1, "2026-07-28", 0);
	assert_null(find(r, "output-schema-invalid", "/tools/1/outputSchema/type"));
	expect(r, "output-schema-invalid", "/tools/0/outputSchema", 1);
	assert_int_equal(count(r, "output-schema-invalid"), 3);
	contract_report_free(r);
	json_decref(page);
}

/* ---- list-level problems ----------------------------------------------------------- */

static void test_duplicate_name(void **state)
{
	(void)state;
	json_t *page = th_json("{'tools':[" GOOD("echo") "," GOOD("add") "," GOOD("echo") "," GOOD("echo") "]}");
	const json_t *cp[1] = {page};
	struct contract_report *r = contract_check(cp, 1, NULL);
	const struct contract_finding *f = expect(r, "duplicate-name", "/tools/2/name", 1);
	assert_true(f->list_level);
	assert_string_equal(f->tool, "echo");
	expect(r, "duplicate-name", "/tools/3/name", 1);
	assert_int_equal(count(r, "duplicate-name"), 2);
	assert_false(contract_report_passed(r));
	/* list-level: the tools themselves are fine, the score says so */
	assert_true(contract_report_score(r) == 1.0);
	/* but filter mode keeps only the first occurrence */
	assert_false(contract_report_tool_failed(r, 0, 0));
	assert_true(contract_report_tool_failed(r, 0, 2));
	json_t *kept = contract_filter(page, 0, r);
	assert_int_equal(json_array_size(json_object_get(kept, "tools")), 2);
	json_decref(kept);
	contract_report_free(r);
	json_decref(page);

	r = check("{'tools':[" GOOD("echo") "," GOOD("Echo") "]}"); /* case-sensitive */
	expect_none(r, "duplicate-name");
	contract_report_free(r);
}

static void test_duplicate_name_across_pages(void **state)
{
	(void)state;
	json_t *pages[2] = {
		th_json("{'tools':[" GOOD("echo") "],'nextCursor':'p2'}"),
		th_json("{'tools':[" GOOD("add") ",{'name':'echo','inputSchema':{'type':'object'}}]}"),
	};
	struct contract_report *r = check_pages(pages, 2, NULL, 0);
	const struct contract_finding *f = expect(r, "duplicate-name", "/1/tools/1/name", 1);
	assert_int_equal(f->page, 1);
	assert_int_equal(f->tool_index, 1);
	/* with several pages every pointer names its page */
	expect(r, "description-missing", "/1/tools/1/description", 1);
	assert_int_equal(count(r, "duplicate-name"), 1);
	assert_false(contract_report_truncated(r));
	assert_int_equal(contract_report_ntools(r), 3);
	assert_true(contract_report_tool_failed(r, 1, 1));
	assert_false(contract_report_tool_failed(r, 1, 0));
	assert_false(contract_report_tool_failed(r, 0, 0));
	contract_report_free(r);
	json_decref(pages[0]);
	json_decref(pages[1]);
}

static void test_no_tools(void **state)
{
	(void)state;
	struct contract_report *r = check("{'tools':[]}");
	const struct contract_finding *f = expect(r, "no-tools", "/tools", 1);
	assert_true(f->list_level);
	assert_false(f->spec);
	assert_true(contract_report_score(r) == 0.0);
	assert_false(contract_report_passed(r));
	contract_report_free(r);

	/* an empty page that is not the last says nothing about the listing */
	r = check("{'tools':[],'nextCursor':'more'}");
	expect_none(r, "no-tools");
	assert_true(contract_report_truncated(r));
	contract_report_free(r);

	/* empty first page, tools on the second */
	json_t *pages[2] = {th_json("{'tools':[],'nextCursor':'c1'}"), th_json("{'tools':[" GOOD("a") "]}")};
	r = check_pages(pages, 2, NULL, 0);
	expect_clean(r);
	contract_report_free(r);
	json_decref(pages[0]);
	json_decref(pages[1]);

	r = check("[]"); /* a bare array is a listing too */
	expect(r, "no-tools", "/tools", 1);
	contract_report_free(r);
}

static void test_result_invalid(void **state)
{
	(void)state;
	struct contract_report *r = check("{'items':[]}");
	expect(r, "result-invalid", "/tools", 1);
	expect_none(r, "no-tools");
	contract_report_free(r);
	r = check("{'tools':{}}");
	expect(r, "result-invalid", "/tools", 1);
	contract_report_free(r);
	r = check("'hello'");
	expect(r, "result-invalid", "", 1);
	contract_report_free(r);
	r = check("{'tools':[" GOOD("a") "]}");
	expect_none(r, "result-invalid");
	contract_report_free(r);
}

static void test_cursor_loop(void **state)
{
	(void)state;
	json_t *pages[3] = {
		th_json("{'tools':[" GOOD("a") "],'nextCursor':'A'}"),
		th_json("{'tools':[" GOOD("b") "],'nextCursor':'B'}"),
		th_json("{'tools':[" GOOD("c") "],'nextCursor':'A'}"),
	};
	struct contract_report *r = check_pages(pages, 3, NULL, 0);
	const struct contract_finding *f = expect(r, "cursor-loop", "/2/nextCursor", 1);
	assert_true(f->spec);
	assert_int_equal(f->page, 2);
	assert_int_equal(count(r, "cursor-loop"), 1);
	assert_true(contract_report_truncated(r));
	assert_false(contract_report_passed(r));
	contract_report_free(r);

	/* advancing cursors and a last page without one: complete */
	json_object_del(pages[2], "nextCursor");
	r = check_pages(pages, 3, NULL, 0);
	expect_clean(r);
	assert_false(contract_report_truncated(r));
	contract_report_free(r);
	for (int i = 0; i < 3; i++)
		json_decref(pages[i]);
}

static void test_cursor_loop_sequence(void **state)
{
	(void)state;
	const char *loop[] = {"A", "B", "A"};
	const char *ok[] = {"A", "B", "C"};
	const char *same[] = {"X", "X"};
	const char *holes[] = {NULL, "A", NULL, "A"};
	assert_int_equal(contract_cursor_loop(loop, 3), 2);
	assert_int_equal(contract_cursor_loop(ok, 3), -1);
	assert_int_equal(contract_cursor_loop(same, 2), 1);
	assert_int_equal(contract_cursor_loop(holes, 4), 3);
	assert_int_equal(contract_cursor_loop(holes, 3), -1);
	assert_int_equal(contract_cursor_loop(NULL, 0), -1);
}

static void test_truncated_after_20_pages(void **state)
{
	(void)state;
	json_t *pages[21];
	char text[1024];
	for (int i = 0; i < 21; i++) {
		snprintf(text, sizeof text, "{'tools':[" GOOD("t%d") "]%s'c%d'}", i,
		         i < 20 ? ",'nextCursor':" : ",'x':", i);
		pages[i] = th_json(text);
	}
	struct contract_report *r = check_pages(pages, 21, NULL, 0);
	assert_true(contract_report_truncated(r));
	assert_int_equal(contract_report_ntools(r), CONTRACT_MAX_PAGES);
	expect_none(r, "cursor-loop");
	json_t *j = contract_report_json(r);
	assert_true(json_is_true(json_object_get(j, "truncated")));
	json_decref(j);
	char *txt = contract_report_text(r);
	assert_non_null(strstr(txt, "listing cut"));
	free(txt);
	contract_report_free(r);

	/* exactly 20 pages, the last without nextCursor: complete */
	json_object_del(pages[19], "nextCursor");
	r = check_pages(pages, 20, NULL, 0);
	assert_false(contract_report_truncated(r));
	expect_clean(r);
	contract_report_free(r);

	/* the first page alone, more to come: not presented as complete */
	r = check_pages(pages, 1, NULL, 0);
	assert_true(contract_report_truncated(r));
	assert_true(contract_report_passed(r));
	contract_report_free(r);
	for (int i = 0; i < 21; i++)
		json_decref(pages[i]);
}

/* ---- 2026-07-28 era --------------------------------------------------------------- */

#define MODERN_OK "'resultType':'complete','ttlMs':0,'cacheScope':'private'"

static void test_result_type_missing(void **state)
{
	(void)state;
	const char *absent = "{'tools':[" GOOD("a") "],'ttlMs':0,'cacheScope':'private'}";
	struct contract_report *r = check_era(absent, "2026-07-28", 0);
	const struct contract_finding *f = expect(r, "result-type-missing", "/resultType", 1);
	assert_true(f->list_level);
	assert_true(f->spec);
	assert_null(f->tool);
	assert_int_equal(f->tool_index, -1);
	assert_int_equal(count(r, "result-type-missing"), 1);
	assert_true(contract_report_score(r) == 1.0); /* not a tool's fault */
	contract_report_free(r);

	r = check_era("{'tools':[" GOOD("a") "],'resultType':'input_required','ttlMs':0,"
	              "'cacheScope':'private'}", "2026-09-01", 0);
	expect(r, "result-type-missing", "/resultType", 1);
	contract_report_free(r);

	/* older eras, no era, or an era we cannot read: not checked */
	const char *eras[] = {NULL, "2025-11-25", "2025-06-18", "draft", "2026-7-28"};
	for (size_t i = 0; i < sizeof eras / sizeof *eras; i++) {
		r = check_era(absent, eras[i], 0);
		expect_clean(r);
		contract_report_free(r);
	}
	r = check_era("{'tools':[" GOOD("a") "]," MODERN_OK "}", "2026-07-28", 0);
	expect_clean(r);
	contract_report_free(r);

	/* each page of a 2026 listing carries its own */
	json_t *pages[2] = {th_json("{'tools':[" GOOD("a") "],'nextCursor':'n'," MODERN_OK "}"),
	                    th_json("{'tools':[" GOOD("b") "],'ttlMs':0,'cacheScope':'private'}")};
	r = check_pages(pages, 2, "2026-07-28", 0);
	expect(r, "result-type-missing", "/1/resultType", 1);
	assert_int_equal(count(r, "result-type-missing"), 1);
	contract_report_free(r);
	json_decref(pages[0]);
	json_decref(pages[1]);
}

static void test_cache_fields_missing(void **state)
{
	(void)state;
	struct contract_report *r = check_era("{'tools':[" GOOD("a") "],'resultType':'complete'}",
	                                      "2026-07-28", 0);
	expect(r, "cache-fields-missing", "/ttlMs", 1);
	expect(r, "cache-fields-missing", "/cacheScope", 1);
	assert_int_equal(count(r, "cache-fields-missing"), 2);
	contract_report_free(r);

	r = check_era("{'tools':[" GOOD("a") "],'resultType':'complete','ttlMs':-1,"
	              "'cacheScope':'shared'}", "2026-07-28", 0);
	expect(r, "cache-fields-missing", "/ttlMs", 1);
	expect(r, "cache-fields-missing", "/cacheScope", 1);
	contract_report_free(r);

	r = check_era("{'tools':[" GOOD("a") "],'resultType':'complete','ttlMs':'60',"
	              "'cacheScope':'public'}", "2026-07-28", 0);
	expect(r, "cache-fields-missing", "/ttlMs", 1);
	assert_int_equal(count(r, "cache-fields-missing"), 1);
	contract_report_free(r);

	r = check_era("{'tools':[" GOOD("a") "],'resultType':'complete','ttlMs':1.5,"
	              "'cacheScope':'public'}", "2026-07-28", 0);
	expect(r, "cache-fields-missing", "/ttlMs", 1);
	contract_report_free(r);

	/* 0, a large integer, and 1000.0 (an integer to JSON Schema) are fine */
	const char *fine[] = {"0", "86400000", "1000.0"};
	for (size_t i = 0; i < 3; i++) {
		char text[512];
		snprintf(text, sizeof text, "{'tools':[" GOOD("a") "],'resultType':'complete',"
		         "'ttlMs':%s,'cacheScope':'public'}", fine[i]);
		r = check_era(text, "2026-07-28", 0);
		expect_clean(r);
		contract_report_free(r);
	}
	r = check_era("{'tools':[" GOOD("a") "],'resultType':'complete'}", NULL, 0);
	expect_none(r, "cache-fields-missing");
	contract_report_free(r);
}

static struct contract_report *check_header_tool(const char *input_schema, const char *era)
{
	char text[4096];
	snprintf(text, sizeof text,
	         "{'tools':[{'name':'t','description':'Runs in a region for tests',"
	         "'inputSchema':%s}]," MODERN_OK "}", input_schema);
	return check_era(text, era, 0);
}

static void test_x_mcp_header_valid(void **state)
{
	(void)state;
	const char *schemas[] = {
		"{'type':'object','properties':{'region':{'type':'string','description':'Region',"
		" 'x-mcp-header':'Region'},'n':{'type':'integer','description':'Count',"
		" 'x-mcp-header':'X-Count'},'b':{'type':'boolean','description':'Flag',"
		" 'x-mcp-header':'Flag_1'}}}",
		/* nested objects reached by properties alone */
		"{'type':'object','properties':{'outer':{'type':'object','description':'Outer',"
		" 'properties':{'inner':{'type':'string','x-mcp-header':'Inner'}}}}}",
		/* nullable, enum and const primitives */
		"{'type':'object','properties':{'a':{'type':['string','null'],'description':'A',"
		" 'x-mcp-header':'A'},'b':{'enum':['x','y'],'description':'B','x-mcp-header':'B'},"
		" 'c':{'const':3,'description':'C','x-mcp-header':'C'}}}",
		/* data that merely contains the key is not an annotation */
		"{'type':'object','properties':{'a':{'type':'object','description':'A',"
		" 'default':{'x-mcp-header':''},'enum':[{'x-mcp-header':5}]}}}",
		/* a property *named* x-mcp-header */
		"{'type':'object','properties':{'x-mcp-header':{'type':'string','description':'odd'}}}",
	};
	for (size_t i = 0; i < sizeof schemas / sizeof *schemas; i++) {
		struct contract_report *r = check_header_tool(schemas[i], "2026-07-28");
		expect_clean(r);
		contract_report_free(r);
	}
}

static void test_x_mcp_header_invalid(void **state)
{
	(void)state;
	static const struct {
		const char *schema;
		const char *pointer;
	} cases[] = {
		{"{'type':'object','properties':{'r':{'type':'string','x-mcp-header':''}}}",
		 "/tools/0/inputSchema/properties/r/x-mcp-header"},
		{"{'type':'object','properties':{'r':{'type':'string','x-mcp-header':'Bad Header'}}}",
		 "/tools/0/inputSchema/properties/r/x-mcp-header"},
		{"{'type':'object','properties':{'r':{'type':'string','x-mcp-header':'A:B'}}}",
		 "/tools/0/inputSchema/properties/r/x-mcp-header"},
		{"{'type':'object','properties':{'r':{'type':'string','x-mcp-header':'Caf\\u00e9'}}}",
		 "/tools/0/inputSchema/properties/r/x-mcp-header"},
		{"{'type':'object','properties':{'r':{'type':'string','x-mcp-header':7}}}",
		 "/tools/0/inputSchema/properties/r/x-mcp-header"},
		{"{'type':'object','properties':{'a':{'type':'string','x-mcp-header':'Region'},"
		 "'b':{'type':'string','x-mcp-header':'region'}}}",
		 "/tools/0/inputSchema/properties/b/x-mcp-header"},
		{"{'type':'object','properties':{'n':{'type':'number','x-mcp-header':'N'}}}",
		 "/tools/0/inputSchema/properties/n/x-mcp-header"},
		{"{'type':'object','properties':{'n':{'type':['integer','number'],'x-mcp-header':'N'}}}",
		 "/tools/0/inputSchema/properties/n/x-mcp-header"},
		{"{'type':'object','properties':{'o':{'type':'object','x-mcp-header':'O'}}}",
		 "/tools/0/inputSchema/properties/o/x-mcp-header"},
		{"{'type':'object','properties':{'l':{'type':'array','items':{'type':'string'},"
		 "'x-mcp-header':'L'}}}",
		 "/tools/0/inputSchema/properties/l/x-mcp-header"},
		{"{'type':'object','properties':{'u':{'description':'untyped','x-mcp-header':'U'}}}",
		 "/tools/0/inputSchema/properties/u/x-mcp-header"},
		{"{'type':'object','properties':{'e':{'enum':[1.5,2],'x-mcp-header':'E'}}}",
		 "/tools/0/inputSchema/properties/e/x-mcp-header"},
		{"{'type':'object','x-mcp-header':'Root'}", "/tools/0/inputSchema/x-mcp-header"},
		{"{'type':'object','properties':{'l':{'type':'array','items':{'type':'string',"
		 "'x-mcp-header':'Item'}}}}",
		 "/tools/0/inputSchema/properties/l/items/x-mcp-header"},
		{"{'type':'object','properties':{'v':{'anyOf':[{'type':'string','x-mcp-header':'V'},"
		 "{'type':'null'}]}}}",
		 "/tools/0/inputSchema/properties/v/anyOf/0/x-mcp-header"},
		{"{'type':'object','$defs':{'R':{'type':'string','x-mcp-header':'R'}},"
		 "'properties':{'r':{'$ref':'#/$defs/R'}}}",
		 "/tools/0/inputSchema/$defs/R/x-mcp-header"},
		{"{'type':'object','if':{'properties':{'k':{'type':'string','x-mcp-header':'K'}}}}",
		 "/tools/0/inputSchema/if/properties/k/x-mcp-header"},
		{"{'type':'object','additionalProperties':{'type':'string','x-mcp-header':'Any'}}",
		 "/tools/0/inputSchema/additionalProperties/x-mcp-header"},
		/* escaping in the pointer: a property named a/b~c */
		{"{'type':'object','properties':{'a/b~c':{'type':'object','x-mcp-header':'X'}}}",
		 "/tools/0/inputSchema/properties/a~1b~0c/x-mcp-header"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct contract_report *r = check_header_tool(cases[i].schema, "2026-07-28");
		const struct contract_finding *f = expect(r, "x-mcp-header-invalid", cases[i].pointer, 1);
		assert_true(f->spec);
		assert_string_equal(f->tool, "t");
		assert_int_equal(count(r, "x-mcp-header-invalid"), 1);
		assert_int_equal(contract_report_nfailed(r), 1);
		contract_report_free(r);

		/* other eras ignore the annotation */
		r = check_header_tool(cases[i].schema, "2025-11-25");
		expect_none(r, "x-mcp-header-invalid");
		contract_report_free(r);
		r = check_header_tool(cases[i].schema, NULL);
		expect_none(r, "x-mcp-header-invalid");
		contract_report_free(r);
	}
}

/* ---- warnings on parameters ------------------------------------------------------ */

static void test_param_untyped(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':[{'name':'t','description':'A perfectly fine tool','inputSchema':{"
		"'type':'object','$defs':{'S':{'type':'string'}},'properties':{"
		"'loose':{'description':'anything goes'},"
		"'r':{'$ref':'#/$defs/S','description':'ref'},"
		"'a':{'anyOf':[{'type':'string'}],'description':'any'},"
		"'o':{'oneOf':[{'type':'string'}],'description':'one'},"
		"'l':{'allOf':[{'type':'string'}],'description':'all'},"
		"'e':{'enum':[1,2],'description':'enum'},"
		"'c':{'const':'x','description':'const'},"
		"'t':{'type':'integer','description':'typed'}}}}]}");
	expect(r, "param-untyped", "/tools/0/inputSchema/properties/loose", 0);
	assert_int_equal(count(r, "param-untyped"), 1);
	assert_true(contract_report_passed(r));
	contract_report_free(r);
}

static void test_param_undescribed(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':[{'name':'t','description':'A perfectly fine tool','inputSchema':{"
		"'type':'object','$defs':{'D':{'type':'string','description':'described there'},"
		"'N':{'type':'string'}},'properties':{"
		"'bare':{'type':'string'},"
		"'blank':{'type':'string','description':'  '},"
		"'via_ref':{'$ref':'#/$defs/D'},"
		"'ref_undescribed':{'$ref':'#/$defs/N'},"
		"'via_anyof':{'anyOf':[{'$ref':'#/$defs/D'},{'type':'null'}]},"
		"'remote':{'$ref':'https://example.com/s.json'},"
		"'ok':{'type':'string','description':'fine'}}}}]}");
	expect(r, "param-undescribed", "/tools/0/inputSchema/properties/bare", 0);
	expect(r, "param-undescribed", "/tools/0/inputSchema/properties/blank", 0);
	expect(r, "param-undescribed", "/tools/0/inputSchema/properties/ref_undescribed", 0);
	assert_int_equal(count(r, "param-undescribed"), 3);
	assert_true(contract_report_passed(r));
	contract_report_free(r);
}

/* ---- score, spec-only ------------------------------------------------------------- */

static void test_score(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':[" GOOD("a") "," GOOD("b") "," GOOD("c") ","
		"{'name':'d','inputSchema':{'type':'object'}}]}");
	assert_true(contract_report_score(r) == 0.75);
	assert_int_equal(contract_report_ntools(r), 4);
	assert_int_equal(contract_report_nfailed(r), 1);
	assert_false(contract_report_passed(r));
	contract_report_free(r);

	/* several problems on one tool still count one tool */
	r = check("{'tools':[" GOOD("a") ",{'name':'','inputSchema':5}]}");
	assert_true(contract_report_score(r) == 0.5);
	assert_int_equal(contract_report_nproblems(r), 3);
	contract_report_free(r);

	r = check("{'tools':[]}");
	assert_true(contract_report_score(r) == 0.0);
	contract_report_free(r);

	/* warnings do not lower the score */
	r = check("{'tools':[{'name':'x y','description':'Short','inputSchema':{'type':'object',"
	          "'properties':{'p':{}}}}]}");
	assert_true(contract_report_score(r) == 1.0);
	assert_true(contract_report_passed(r));
	assert_int_equal(contract_report_nwarnings(r), 4);
	contract_report_free(r);
}

static void test_spec_only_demotes_usability(void **state)
{
	(void)state;
	const char *text =
		"{'tools':["
		"{'name':'a','inputSchema':{'type':'object','required':['ghost']}},"
		GOOD("b") "," GOOD("b") "]}";
	struct contract_report *r = check_era(text, NULL, 1);
	const struct contract_finding *f = expect(r, "description-missing", "/tools/0/description", 0);
	assert_false(f->spec);
	expect(r, "required-unknown", "/tools/0/inputSchema/required/0", 0);
	expect(r, "duplicate-name", "/tools/2/name", 0);
	assert_true(contract_report_passed(r));
	assert_true(contract_report_score(r) == 1.0);
	assert_int_equal(contract_report_nproblems(r), 0);
	assert_int_equal(contract_report_nwarnings(r), 3);
	/* a demoted duplicate is no reason to filter */
	assert_false(contract_report_tool_failed(r, 0, 2));
	contract_report_free(r);

	r = check_era("{'tools':[]}", NULL, 1);
	expect(r, "no-tools", "/tools", 0);
	assert_true(contract_report_passed(r));
	contract_report_free(r);

	/* spec violations stay problems */
	r = check_era("{'tools':[{'description':'A perfectly fine tool','inputSchema':"
	              "{'type':'string'}}]}", NULL, 1);
	expect(r, "name-missing", "/tools/0/name", 1);
	expect(r, "input-schema-invalid", "/tools/0/inputSchema/type", 1);
	assert_false(contract_report_passed(r));
	contract_report_free(r);

	/* the same listing without spec-only */
	r = check_era(text, NULL, 0);
	expect(r, "description-missing", "/tools/0/description", 1);
	expect(r, "required-unknown", "/tools/0/inputSchema/required/0", 1);
	expect(r, "duplicate-name", "/tools/2/name", 1);
	contract_report_free(r);
}

static void test_code_rules(void **state)
{
	(void)state;
	const char *spec[] = {"tool-not-object", "name-missing", "input-schema-missing",
	                      "input-schema-invalid", "properties-invalid", "required-invalid",
	                      "output-schema-invalid", "x-mcp-header-invalid", "result-type-missing",
	                      "cache-fields-missing", "cursor-loop", "result-invalid"};
	const char *usability[] = {"description-missing", "required-unknown", "duplicate-name",
	                           "no-tools"};
	const char *warning[] = {"name-format", "description-short", "param-untyped",
	                         "param-undescribed"};
	for (size_t i = 0; i < sizeof spec / sizeof *spec; i++)
		assert_string_equal(contract_code_rule(spec[i]), "spec");
	for (size_t i = 0; i < sizeof usability / sizeof *usability; i++)
		assert_string_equal(contract_code_rule(usability[i]), "usability");
	for (size_t i = 0; i < sizeof warning / sizeof *warning; i++)
		assert_string_equal(contract_code_rule(warning[i]), "warning");
	assert_null(contract_code_rule("no-such-code"));
	assert_null(contract_code_rule(NULL));
}

/* ---- filter ----------------------------------------------------------------------- */

static void test_filter_keeps_unknown_members(void **state)
{
	(void)state;
	json_t *page = th_json(
		"{'tools':["
		"{'name':'good','title':'Good','description':'A perfectly fine tool',"
		" 'inputSchema':{'type':'object','x-vendor':{'deep':[1,2]}},"
		" 'icons':[{'src':'https://example.com/i.png','sizes':['48x48']}],"
		" 'execution':{'taskSupport':'optional'},'x-future':true,'_meta':{'k':'v'}},"
		"{'name':'broken','inputSchema':{'type':'object'}},"
		"{'name':'also_good','description':'Another perfectly fine tool',"
		" 'inputSchema':{'type':'object'},'annotations':{'readOnlyHint':true}}],"
		"'nextCursor':'abc','_meta':{'trace':'1'},'x-extension':[null]}");
	json_t *before = json_deep_copy(page);
	const json_t *cp[1] = {page};
	struct contract_report *r = contract_check(cp, 1, NULL);
	assert_non_null(r);
	json_t *out = contract_filter(page, 0, r);
	assert_non_null(out);
	assert_true(json_equal(page, before)); /* the input is untouched */

	json_t *tools = json_object_get(out, "tools");
	assert_int_equal(json_array_size(tools), 2);
	assert_true(json_equal(json_array_get(tools, 0), json_array_get(json_object_get(page, "tools"), 0)));
	assert_true(json_equal(json_array_get(tools, 1), json_array_get(json_object_get(page, "tools"), 2)));
	/* every other member of the result is there, unchanged */
	json_object_del(before, "tools");
	json_object_del(out, "tools");
	assert_true(json_equal(out, before));
	json_decref(out);

	/* a bare array filters to a bare array */
	json_t *arr = json_deep_copy(json_object_get(page, "tools"));
	out = contract_filter(arr, 0, r);
	assert_true(json_is_array(out));
	assert_int_equal(json_array_size(out), 2);
	json_decref(out);
	json_decref(arr);

	assert_null(contract_filter(json_object_get(page, "_meta"), 0, r));
	contract_report_free(r);
	json_decref(page);
	json_decref(before);
}

static void test_filter_by_page(void **state)
{
	(void)state;
	json_t *pages[2] = {
		th_json("{'tools':[" GOOD("a") ",{'name':'b','inputSchema':{'type':'object'}}],'nextCursor':'n'}"),
		th_json("{'tools':[{'name':'c','inputSchema':{'type':'object'}}," GOOD("d") "]}"),
	};
	struct contract_report *r = check_pages(pages, 2, NULL, 0);
	json_t *o0 = contract_filter(pages[0], 0, r);
	json_t *o1 = contract_filter(pages[1], 1, r);
	assert_int_equal(json_array_size(json_object_get(o0, "tools")), 1);
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(json_object_get(o0, "tools"), 0), "name")), "a");
	assert_string_equal(json_string_value(json_object_get(o0, "nextCursor")), "n");
	assert_int_equal(json_array_size(json_object_get(o1, "tools")), 1);
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(json_object_get(o1, "tools"), 0), "name")), "d");
	json_decref(o0);
	json_decref(o1);
	contract_report_free(r);
	json_decref(pages[0]);
	json_decref(pages[1]);
}

/* ---- rendering -------------------------------------------------------------------- */

static void test_json_report(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':[" GOOD("a") ",{'name':'b','description':'Short','inputSchema':{'type':'object',"
		"'properties':{'p':{'type':'string','description':'fine'}},'required':['p','q']}},"
		GOOD("c") "," GOOD("a") ",7]}");
	json_t *j = contract_report_json(r);
	assert_non_null(j);
	json_t *tools = json_object_get(j, "tools");
	assert_int_equal(json_array_size(tools), 5);
	assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")), "a");
	assert_true(json_is_null(json_object_get(json_array_get(tools, 4), "name")));
	json_t *b = json_array_get(tools, 1);
	json_t *p = json_array_get(json_object_get(b, "problems"), 0);
	assert_string_equal(json_string_value(json_object_get(p, "code")), "required-unknown");
	assert_string_equal(json_string_value(json_object_get(p, "pointer")),
	                    "/tools/1/inputSchema/required/1");
	assert_string_equal(json_string_value(json_object_get(p, "rule")), "usability");
	assert_true(json_is_string(json_object_get(p, "message")));
	json_t *w = json_array_get(json_object_get(b, "warnings"), 0);
	assert_string_equal(json_string_value(json_object_get(w, "code")), "description-short");
	assert_int_equal(json_array_size(json_object_get(json_array_get(tools, 0), "problems")), 0);

	json_t *lp = json_object_get(j, "problems");
	assert_int_equal(json_array_size(lp), 1);
	json_t *d = json_array_get(lp, 0);
	assert_string_equal(json_string_value(json_object_get(d, "code")), "duplicate-name");
	assert_string_equal(json_string_value(json_object_get(d, "pointer")), "/tools/3/name");
	assert_string_equal(json_string_value(json_object_get(d, "tool")), "a");
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(json_object_get(json_array_get(tools, 4), "problems"), 0), "rule")), "spec");

	assert_true(json_real_value(json_object_get(j, "score")) == 0.6);
	assert_true(json_is_false(json_object_get(j, "passed")));
	assert_true(json_is_false(json_object_get(j, "truncated")));
	assert_int_equal(json_array_size(json_object_get(j, "warnings")), 0);
	char *s = json_dumps(j, 0);
	assert_non_null(s);
	free(s);
	json_decref(j);
	contract_report_free(r);

	r = check(everything);
	j = contract_report_json(r);
	assert_true(json_is_true(json_object_get(j, "passed")));
	assert_true(json_real_value(json_object_get(j, "score")) == 1.0);
	json_decref(j);
	contract_report_free(r);
}

static void test_text_report(void **state)
{
	(void)state;
	struct contract_report *r = check(
		"{'tools':[" GOOD("a") ",{'name':'evil\\nname\\u001b[31m','inputSchema':{'type':'object'}},"
		GOOD("a") "]}");
	char *t = contract_report_text(r);
	assert_non_null(t);
	assert_non_null(strstr(t, "FAILED"));
	assert_non_null(strstr(t, "description-missing"));
	assert_non_null(strstr(t, "duplicate-name"));
	assert_non_null(strstr(t, "/tools/1/description"));
	assert_non_null(strstr(t, "usability"));
	assert_null(strstr(t, "evil\nname"));  /* control characters never reach a terminal raw */
	assert_null(strchr(t, '\033'));
	free(t);
	contract_report_free(r);

	r = check(everything);
	t = contract_report_text(r);
	assert_non_null(strstr(t, "PASSED"));
	assert_non_null(strstr(t, "score 1.00"));
	free(t);
	contract_report_free(r);
}

static void test_messages_are_one_bounded_line(void **state)
{
	(void)state;
	char name[600];
	memset(name, 'x', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	memcpy(name + 10, "\\n", 2);
	memcpy(name + 200, "\\u00e9", 6); /* a two-byte character near the cut */
	char text[2048];
	snprintf(text, sizeof text, "{'tools':[{'name':'%s','description':'A perfectly fine tool',"
	         "'inputSchema':{'type':'object','required':['%s']}}]}", name, name);
	struct contract_report *r = check(text);
	for (size_t i = 0; i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		assert_null(strchr(f->message, '\n'));
		assert_true(strlen(f->message) < 200);
	}
	json_t *j = contract_report_json(r); /* valid UTF-8 throughout */
	assert_non_null(j);
	json_decref(j);
	contract_report_free(r);
}

/* ---- bounds and odd input ------------------------------------------------------------ */

static void test_bounds(void **state)
{
	(void)state;
	/* more tools than the cap */
	json_t *tools = json_array();
	for (int i = 0; i < CONTRACT_MAX_TOOLS + 10; i++) {
		char name[32];
		snprintf(name, sizeof name, "t%d", i);
		json_array_append_new(tools, json_pack("{s:s,s:s,s:{s:s}}", "name", name, "description",
		                                       "A perfectly fine tool", "inputSchema", "type",
		                                       "object"));
	}
	const json_t *cp[1] = {tools};
	struct contract_report *r = contract_check(cp, 1, NULL);
	assert_int_equal(contract_report_ntools(r), CONTRACT_MAX_TOOLS);
	assert_true(contract_report_truncated(r));
	assert_true(contract_report_passed(r));
	assert_false(contract_report_tool_failed(r, 0, CONTRACT_MAX_TOOLS + 5));
	contract_report_free(r);
	json_decref(tools);

	/* properties past the cap are not examined */
	json_t *props = json_object();
	for (int i = 0; i < CONTRACT_MAX_PROPS + 44; i++) {
		char k[16];
		snprintf(k, sizeof k, "p%d", i);
		json_object_set_new(props, k, json_object());
	}
	json_t *page = json_pack("{s:[{s:s,s:s,s:{s:s,s:o}}]}", "tools", "name", "t", "description",
	                         "A perfectly fine tool", "inputSchema", "type", "object",
	                         "properties", props);
	cp[0] = page;
	r = contract_check(cp, 1, NULL);
	assert_int_equal(contract_report_nwarnings(r), 2 * CONTRACT_MAX_PROPS);
	contract_report_free(r);
	json_decref(page);

	/* deep nesting and self-referencing schemas end */
	json_t *deep = json_pack("{s:s,s:s}", "type", "string", "x-mcp-header", "Deep");
	for (int i = 0; i < 200; i++)
		deep = json_pack("{s:s,s:{s:o}}", "type", "object", "properties", "p", deep);
	json_object_set_new(deep, "$ref", json_string("#"));
	json_object_set_new(deep, "required", json_pack("[s]", "nowhere"));
	page = json_pack("{s:[{s:s,s:s,s:o}],s:s,s:i,s:s}", "tools", "name", "t", "description",
	                 "A perfectly fine tool", "inputSchema", deep, "resultType", "complete",
	                 "ttlMs", 0, "cacheScope", "public");
	cp[0] = page;
	struct contract_opts o = {.era = "2026-07-28"};
	r = contract_check(cp, 1, &o);
	assert_non_null(r);
	expect_none(r, "x-mcp-header-invalid"); /* valid, and too deep to see anyway */
	contract_report_free(r);
	json_decref(page);
}

/* A string of n copies of c (owned). */
static char *filled(char c, size_t n)
{
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* {"anyOf": [{"$ref": ref} x n]} (or allOf), new reference. */
static json_t *refs(const char *key, const char *ref, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:s}", "$ref", ref));
	return json_pack("{s:o}", key, a);
}

/* Checks a page with one tool whose inputSchema is in (stolen). */
static struct contract_report *check_schema_of(json_t *in)
{
	json_t *page = json_pack("{s:[{s:s,s:s,s:o}]}", "tools", "name", "t", "description",
	                         "A perfectly fine tool", "inputSchema", in);
	assert_non_null(page);
	const json_t *cp[1] = {page};
	struct contract_report *r = contract_check(cp, 1, NULL);
	assert_non_null(r);
	json_decref(page);
	return r;
}

/* Regression (tests/fuzz/README.md, "Large inputs"): a long string read
 * again at every subschema a walk visits costs budget by its length. A
 * 4 MB required name hashed at up to CONTRACT_MAX_NODES subschemas took
 * 4 s, long $ref strings resolved again and again 0.4 s per 4 MB, a 1 MB
 * blank description reached 4096 times 7 s. Answers stay those of an
 * exhausted budget (declared, described): never a false finding. */
static void test_long_strings_revisited(void **state)
{
	(void)state;
	char *big = filled('n', 4 << 20);

	/* allOf of 64 $refs to d, d an anyOf of 64 $refs to e, both with
	 * properties: 4096 subschemas, each asked about the 4 MB name. */
	json_t *d = refs("anyOf", "#/$defs/e", 64);
	json_object_set_new(d, "properties", json_pack("{s:{}}", "y"));
	json_t *in = refs("allOf", "#/$defs/d", 64);
	json_object_set_new(in, "type", json_string("object"));
	json_object_set_new(in, "required", json_pack("[s]", big));
	json_object_set_new(in, "$defs", json_pack("{s:o,s:{s:{s:{}}}}", "d", d, "e", "properties",
	                                           "y"));
	struct contract_report *r = check_schema_of(in);
	expect_none(r, "required-unknown"); /* could not be read to the end */
	contract_report_free(r);

	/* Declared at the root, or nowhere in a plain schema: both still seen
	 * (the root is read once per name, whatever its length). */
	r = check_schema_of(json_pack("{s:s,s:{s:{s:s,s:s}},s:[s]}", "type", "object", "properties",
	                              big, "type", "string", "description", "d", "required", big));
	expect_clean(r);
	contract_report_free(r);
	r = check_schema_of(json_pack("{s:s,s:{s:{s:s,s:s}},s:[s]}", "type", "object", "properties",
	                              "x", "type", "string", "description", "d", "required", big));
	expect(r, "required-unknown", "/tools/0/inputSchema/required/0", 1);
	contract_report_free(r);
	/* 64 KB, declared in a $ref target or nowhere: the budget pays. */
	big[64 << 10] = '\0';
	r = check_schema_of(json_pack("{s:s,s:[{s:s}],s:{s:{s:{s:{s:s}}}},s:[s]}", "type", "object",
	                              "allOf", "$ref", "#/$defs/d", "$defs", "d", "properties", big,
	                              "type", "string", "required", big));
	expect_none(r, "required-unknown");
	contract_report_free(r);
	r = check_schema_of(json_pack("{s:s,s:[{s:s}],s:{s:{s:{s:{s:s}}}},s:[s]}", "type", "object",
	                              "allOf", "$ref", "#/$defs/d", "$defs", "d", "properties", "y",
	                              "type", "string", "required", big));
	expect(r, "required-unknown", "/tools/0/inputSchema/required/0", 1);
	contract_report_free(r);

	/* Long $ref strings: p -> A, A an anyOf of 64 $refs to B, B an anyOf
	 * of 64 $refs of 64 KB to C. */
	char *ref = malloc((64 << 10) + 16);
	assert_non_null(ref);
	snprintf(ref, (64 << 10) + 16, "#/$defs/%s", big);
	json_t *defs = json_pack("{s:o,s:o,s:{s:s}}", "A", refs("anyOf", "#/$defs/B", 64), "B",
	                         refs("anyOf", ref, 64), big, "type", "string");
	r = check_schema_of(json_pack("{s:s,s:o,s:{s:{s:s}}}", "type", "object", "$defs", defs,
	                              "properties", "p", "$ref", "#/$defs/A"));
	expect_none(r, "param-undescribed"); /* could not be read to the end */
	contract_report_free(r);

	/* A blank description of 1 MB reached through 64 x 64 $refs. */
	char *blank = filled(' ', 1 << 20);
	defs = json_pack("{s:o,s:o,s:{s:s}}", "A", refs("anyOf", "#/$defs/B", 64), "B",
	                 refs("anyOf", "#/$defs/C", 64), "C", "description", blank);
	r = check_schema_of(json_pack("{s:s,s:o,s:{s:{s:s}}}", "type", "object", "$defs", defs,
	                              "properties", "p", "$ref", "#/$defs/A"));
	expect_none(r, "param-undescribed");
	contract_report_free(r);
	/* On the property itself it is read once, and is blank. */
	r = check_schema_of(json_pack("{s:s,s:{s:{s:s,s:s}}}", "type", "object", "properties", "p",
	                              "type", "string", "description", blank));
	expect(r, "param-undescribed", "/tools/0/inputSchema/properties/p", 0);
	contract_report_free(r);

	free(blank);
	free(ref);
	free(big);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	assert_null(contract_check(NULL, 1, NULL));
	json_t *page = th_json("{'tools':[]}");
	const json_t *cp[1] = {page};
	assert_null(contract_check(cp, 0, NULL));
	contract_report_free(NULL);
	json_decref(page);
}

static void test_resolve_ref(void **state)
{
	(void)state;
	json_t *root = th_json("{'$defs':{'a/b':{'x':1},'m~n':[10,20]},'p%20q':2}");
	assert_ptr_equal(contract_resolve_ref(root, "#"), root);
	assert_int_equal(json_integer_value(json_object_get(contract_resolve_ref(root, "#/$defs/a~1b"), "x")), 1);
	assert_int_equal(json_integer_value(contract_resolve_ref(root, "#/$defs/m~0n/1")), 20);
	assert_null(contract_resolve_ref(root, "#/$defs/m~0n/2"));
	assert_null(contract_resolve_ref(root, "#/$defs/m~0n/-1"));
	assert_null(contract_resolve_ref(root, "#anchor"));
	assert_null(contract_resolve_ref(root, "other.json#/$defs"));
	assert_null(contract_resolve_ref(root, "#/nope"));
	json_decref(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_everything_listing),
		cmocka_unit_test(test_clean_everything_listing_2026),
		cmocka_unit_test(test_clean_composed_schemas),
		cmocka_unit_test(test_tool_not_object),
		cmocka_unit_test(test_name_missing),
		cmocka_unit_test(test_name_format),
		cmocka_unit_test(test_description_missing),
		cmocka_unit_test(test_description_short),
		cmocka_unit_test(test_input_schema_missing),
		cmocka_unit_test(test_input_schema_invalid),
		cmocka_unit_test(test_properties_invalid),
		cmocka_unit_test(test_required_invalid),
		cmocka_unit_test(test_required_unknown),
		cmocka_unit_test(test_output_schema_invalid),
		cmocka_unit_test(test_duplicate_name),
		cmocka_unit_test(test_duplicate_name_across_pages),
		cmocka_unit_test(test_no_tools),
		cmocka_unit_test(test_result_invalid),
		cmocka_unit_test(test_cursor_loop),
		cmocka_unit_test(test_cursor_loop_sequence),
		cmocka_unit_test(test_truncated_after_20_pages),
		cmocka_unit_test(test_result_type_missing),
		cmocka_unit_test(test_cache_fields_missing),
		cmocka_unit_test(test_x_mcp_header_valid),
		cmocka_unit_test(test_x_mcp_header_invalid),
		cmocka_unit_test(test_param_untyped),
		cmocka_unit_test(test_param_undescribed),
		cmocka_unit_test(test_score),
		cmocka_unit_test(test_spec_only_demotes_usability),
		cmocka_unit_test(test_code_rules),
		cmocka_unit_test(test_filter_keeps_unknown_members),
		cmocka_unit_test(test_filter_by_page),
		cmocka_unit_test(test_json_report),
		cmocka_unit_test(test_text_report),
		cmocka_unit_test(test_messages_are_one_bounded_line),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_long_strings_revisited),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_resolve_ref),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

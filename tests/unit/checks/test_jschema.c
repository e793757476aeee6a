/* Unit tests for checks/jschema.h, through the public API only.
 *
 * Schemas and instances are written with single quotes (th_json() turns
 * them into double quotes). The official suite (test_jschema_suite.c)
 * covers the keywords' semantics case by case; here each keyword gets a
 * valid and an invalid instance, and the things the suite does not test:
 * the pointers and keyword of each finding, the compile findings, the
 * limits, the dialect choice and the fast path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include <cmocka.h>
#include <jansson.h>

#include "checks/jschema.h"
#include "tests/unit/helpers.h"

/* ---- helpers ---------------------------------------------------------------- */

static struct jschema *compile_ok(const char *schema, enum jschema_dialect d, unsigned flags)
{
	json_t *j = th_json(schema);
	struct jschema_error why;
	struct jschema *s = jschema_compile(j, d, flags, &why);
	if (s == NULL)
		fail_msg("%s does not compile: %s at %s", schema, why.message, why.schema_ptr);
	json_decref(j); /* the compiled schema holds its own reference */
	return s;
}

/* Validates instance; checks the count against jschema_valid(). */
static int validate(const struct jschema *s, const char *instance, struct jschema_error *out,
                    size_t n)
{
	json_t *x = th_json(instance);
	int r = jschema_validate(s, x, out, n);
	int q = jschema_valid(s, x);
	if (r >= 0)
		assert_int_equal(q, r == 0);
	else
		assert_int_equal(q, -1);
	json_decref(x);
	return r;
}

static int valid_in(enum jschema_dialect d, const char *schema, const char *instance)
{
	struct jschema *s = compile_ok(schema, d, 0);
	int r = validate(s, instance, NULL, 0);
	jschema_free(s);
	assert_true(r >= 0);
	return r == 0;
}

static int valid(const char *schema, const char *instance)
{
	return valid_in(JSCHEMA_2020_12, schema, instance);
}

static struct jschema_error compile_err(const char *schema, enum jschema_dialect d)
{
	json_t *j = th_json(schema);
	struct jschema_error why;
	struct jschema *s = jschema_compile(j, d, 0, &why);
	json_decref(j);
	if (s != NULL)
		fail_msg("%s compiles", schema);
	return why;
}

/* The single finding of schema on instance. */
static struct jschema_error one_error(const char *schema, const char *instance)
{
	struct jschema *s = compile_ok(schema, JSCHEMA_2020_12, 0);
	struct jschema_error e[4];
	int r = validate(s, instance, e, 4);
	jschema_free(s);
	assert_int_equal(r, 1);
	assert_int_equal(e[0].code, JSCHEMA_VIOLATION);
	return e[0];
}

/* ---- keywords ------------------------------------------------------------------ */

static void test_type(void **state)
{
	(void)state;
	assert_true(valid("{'type':'string'}", "'a'"));
	assert_false(valid("{'type':'string'}", "1"));
	assert_true(valid("{'type':'integer'}", "1.0"));
	assert_false(valid("{'type':'integer'}", "1.5"));
	assert_true(valid("{'type':'number'}", "1"));
	assert_true(valid("{'type':['null','boolean']}", "false"));
	assert_false(valid("{'type':['null','boolean']}", "{}"));
	assert_true(valid("{'type':'array'}", "[]"));
	assert_true(valid("{'type':'object'}", "{}"));
}

static void test_enum_const(void **state)
{
	(void)state;
	assert_true(valid("{'enum':[1,'a',{'b':[null]}]}", "{'b':[null]}"));
	assert_true(valid("{'enum':[1]}", "1.0"));
	assert_false(valid("{'enum':[1,'a']}", "'b'"));
	assert_false(valid("{'enum':[false]}", "0"));
	assert_true(valid("{'const':{'a':1,'b':2}}", "{'b':2,'a':1.0}"));
	assert_false(valid("{'const':[1,2]}", "[2,1]"));
}

static void test_numbers(void **state)
{
	(void)state;
	assert_true(valid("{'multipleOf':3}", "9"));
	assert_false(valid("{'multipleOf':3}", "10"));
	assert_true(valid("{'multipleOf':0.5}", "4.5"));
	assert_true(valid("{'multipleOf':0.0001}", "0.0075"));
	assert_false(valid("{'multipleOf':0.0001}", "0.00751"));
	assert_true(valid("{'maximum':3}", "3"));
	assert_false(valid("{'exclusiveMaximum':3}", "3"));
	assert_true(valid("{'minimum':1.5}", "2"));
	assert_false(valid("{'exclusiveMinimum':1}", "1.0"));
	assert_true(valid("{'maximum':9007199254740993}", "9007199254740992"));
	assert_false(valid("{'maximum':9007199254740992}", "9007199254740993"));
	assert_true(valid("{'maximum':3}", "'not a number'"));
}

static void test_strings(void **state)
{
	(void)state;
	/* Code points, not bytes: two emoji are 2, and 8 bytes. */
	assert_true(valid("{'maxLength':2}", "'\\ud83d\\ude00\\ud83d\\ude00'"));
	assert_false(valid("{'minLength':3}", "'\\u00e9\\u00e9'"));
	assert_true(valid("{'pattern':'^a+$'}", "'aaa'"));
	assert_false(valid("{'pattern':'^a+$'}", "'aab'"));
	assert_true(valid("{'pattern':'b'}", "'abc'")); /* unanchored search */
}

static void test_objects(void **state)
{
	(void)state;
	const char *s = "{'properties':{'a':{'type':'integer'}},'patternProperties':{'^x-':{'type':'string'}},"
	                "'additionalProperties':false}";
	assert_true(valid(s, "{'a':1,'x-y':'s'}"));
	assert_false(valid(s, "{'a':'1'}"));
	assert_false(valid(s, "{'x-y':2}"));
	assert_false(valid(s, "{'b':1}"));
	assert_true(valid("{'required':['a']}", "{'a':null}"));
	assert_false(valid("{'required':['a']}", "{'b':null}"));
	assert_true(valid("{'required':['a']}", "[]"));
	assert_true(valid("{'propertyNames':{'maxLength':2}}", "{'ab':1}"));
	assert_false(valid("{'propertyNames':{'maxLength':2}}", "{'abc':1}"));
	assert_false(valid("{'minProperties':2}", "{'a':1}"));
	assert_false(valid("{'maxProperties':1}", "{'a':1,'b':2}"));
	assert_false(valid("{'dependentRequired':{'a':['b']}}", "{'a':1}"));
	assert_true(valid("{'dependentRequired':{'a':['b']}}", "{'b':1}"));
	assert_false(valid("{'dependentSchemas':{'a':{'required':['c']}}}", "{'a':1}"));
	assert_false(valid_in(JSCHEMA_DRAFT7, "{'dependencies':{'a':['b']}}", "{'a':1}"));
	assert_false(valid_in(JSCHEMA_DRAFT7, "{'dependencies':{'a':{'maxProperties':1}}}", "{'a':1,'b':2}"));
}

static void test_arrays(void **state)
{
	(void)state;
	assert_true(valid("{'prefixItems':[{'type':'integer'}],'items':{'type':'string'}}", "[1,'a','b']"));
	assert_false(valid("{'prefixItems':[{'type':'integer'}],'items':{'type':'string'}}", "[1,2]"));
	assert_false(valid("{'prefixItems':[true],'items':false}", "[1,2]"));
	assert_true(valid_in(JSCHEMA_DRAFT7, "{'items':[{'type':'integer'}],'additionalItems':false}", "[1]"));
	assert_false(valid_in(JSCHEMA_DRAFT7, "{'items':[{'type':'integer'}],'additionalItems':false}", "[1,2]"));
	assert_true(valid("{'contains':{'const':2}}", "[1,2]"));
	assert_false(valid("{'contains':{'const':2}}", "[1,3]"));
	assert_false(valid("{'contains':{'const':2},'minContains':2}", "[2,1]"));
	assert_false(valid("{'contains':{'const':2},'maxContains':1}", "[2,2]"));
	assert_true(valid("{'contains':{'const':2},'minContains':0}", "[]"));
	assert_true(valid("{'uniqueItems':true}", "[1,'1',[1],{'a':1}]"));
	assert_false(valid("{'uniqueItems':true}", "[{'a':1,'b':2},{'b':2,'a':1.0}]"));
	assert_false(valid("{'uniqueItems':true}", "[1,1.0]"));
	assert_false(valid("{'minItems':1}", "[]"));
	assert_false(valid("{'maxItems':1}", "[1,2]"));
}

static void test_applicators(void **state)
{
	(void)state;
	assert_false(valid("{'allOf':[{'type':'integer'},{'minimum':3}]}", "2"));
	assert_true(valid("{'anyOf':[{'type':'integer'},{'type':'string'}]}", "'a'"));
	assert_false(valid("{'anyOf':[{'type':'integer'},{'type':'string'}]}", "null"));
	assert_false(valid("{'oneOf':[{'type':'integer'},{'minimum':1}]}", "2"));
	assert_true(valid("{'oneOf':[{'type':'integer'},{'minimum':1}]}", "1.5"));
	assert_false(valid("{'not':{'type':'null'}}", "null"));
	const char *ite = "{'if':{'type':'integer'},'then':{'minimum':1},'else':{'type':'string'}}";
	assert_true(valid(ite, "1"));
	assert_false(valid(ite, "0"));
	assert_false(valid(ite, "null"));
	assert_true(valid("true", "1"));
	assert_false(valid("false", "1"));
}

static void test_unevaluated(void **state)
{
	(void)state;
	const char *s = "{'allOf':[{'properties':{'a':true}}],'properties':{'b':true},"
	                "'unevaluatedProperties':false}";
	assert_true(valid(s, "{'a':1,'b':2}"));
	assert_false(valid(s, "{'a':1,'c':2}"));
	/* A failed branch's annotations do not count. */
	const char *any = "{'anyOf':[{'properties':{'a':{'type':'string'}}},{'properties':{'b':true}}],"
	                  "'unevaluatedProperties':false}";
	assert_false(valid(any, "{'a':1,'b':1}"));
	assert_true(valid(any, "{'a':'s','b':1}"));
	assert_true(valid("{'prefixItems':[true],'contains':{'type':'string'},'unevaluatedItems':false}",
	                  "[1,'a','b']"));
	assert_false(valid("{'prefixItems':[true],'unevaluatedItems':false}", "[1,2]"));
}

static void test_refs(void **state)
{
	(void)state;
	const char *s = "{'$defs':{'pos':{'type':'integer','minimum':1}},'properties':{'n':{'$ref':'#/$defs/pos'}}}";
	assert_true(valid(s, "{'n':1}"));
	assert_false(valid(s, "{'n':0}"));
	assert_true(valid("{'$defs':{'a':{'$anchor':'x','type':'null'}},'$ref':'#x'}", "null"));
	assert_true(valid("{'$id':'http://e.com/root','$defs':{'a':{'$id':'a.json','type':'null'}},"
	                  "'$ref':'http://e.com/a.json'}",
	                  "null"));
	/* Relative $id and $ref resolve against the base URI (RFC 3986). */
	const char *rel = "{'$id':'http://e.com/a/b.json','$defs':{'x':{'$id':'../c/d.json?q#','type':'null'}},"
	                  "'properties':{'p':{'$ref':'/c/./d.json?q'},'u':{'$ref':'urn:x#/a'}}}";
	struct jschema_error e = compile_err(rel, JSCHEMA_2020_12);
	assert_int_equal(e.code, JSCHEMA_REMOTE_REF);
	assert_string_equal(e.schema_ptr, "/properties/u/$ref");
	assert_true(valid("{'$id':'http://e.com/a/b.json','$defs':{'x':{'$id':'../c/d.json?q#','type':'null'}},"
	                  "'properties':{'p':{'$ref':'/c/./d.json?q'}}}", "{'p':null}"));
	assert_false(valid("{'$id':'http://e.com/a/b.json','$defs':{'x':{'$id':'../c/d.json?q#','type':'null'}},"
	                   "'properties':{'p':{'$ref':'/c/./d.json?q'}}}", "{'p':1}"));
	assert_false(valid("{'$id':'urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed','$defs':{'b':{'type':'null'}},"
	                   "'$ref':'urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed#/$defs/b'}", "1"));
	/* A recursive schema on a deep instance. */
	const char *tree = "{'type':'object','properties':{'kids':{'type':'array','items':{'$ref':'#'}}}}";
	assert_true(valid(tree, "{'kids':[{'kids':[{}]}]}"));
	assert_false(valid(tree, "{'kids':[{'kids':[1]}]}"));
	/* draft-07 ignores a $ref's siblings. */
	assert_true(valid_in(JSCHEMA_DRAFT7, "{'definitions':{'a':{}},'$ref':'#/definitions/a','type':'string'}", "1"));
	assert_false(valid("{'$defs':{'a':{}},'$ref':'#/$defs/a','type':'string'}", "1"));
	/* Percent-encoded and escaped pointers. */
	assert_false(valid("{'$defs':{'a b':{'type':'null'},'c/d':{'type':'null'}},'allOf':[{'$ref':'#/$defs/a%20b'},{'$ref':'#/$defs/c~1d'}]}", "1"));
	/* A pointer into an unknown keyword compiles the target there. */
	assert_false(valid("{'x-defs':{'n':{'type':'null'}},'$ref':'#/x-defs/n'}", "1"));
}

static void test_dynamic_ref(void **state)
{
	(void)state;
	/* The classic extensible tree: the outer $dynamicAnchor wins. */
	const char *s =
		"{'$id':'https://e.com/strict','$dynamicAnchor':'node','$ref':'tree',"
		"'unevaluatedProperties':false,"
		"'$defs':{'tree':{'$id':'tree','$dynamicAnchor':'node','type':'object',"
		"'properties':{'data':true,'children':{'type':'array','items':{'$dynamicRef':'#node'}}}}}}";
	assert_true(valid(s, "{'children':[{'data':1}]}"));
	assert_false(valid(s, "{'children':[{'daat':1}]}"));
}

static void test_format(void **state)
{
	(void)state;
	struct jschema *ann = compile_ok("{'format':'date'}", JSCHEMA_2020_12, 0);
	struct jschema *as = compile_ok("{'format':'date'}", JSCHEMA_2020_12, JSCHEMA_FORMAT_ASSERT);
	assert_int_equal(validate(ann, "'2024-02-30'", NULL, 0), 0);
	assert_int_equal(validate(as, "'2024-02-30'", NULL, 0), 1);
	assert_int_equal(validate(as, "'2024-02-29'", NULL, 0), 0);
	assert_int_equal(validate(as, "12", NULL, 0), 0);
	jschema_free(ann);
	jschema_free(as);
	static const struct {
		const char *fmt, *ok, *bad;
	} cases[] = {
		{"date-time", "'1963-06-19T08:30:06.283185Z'", "'1963-06-19 08:30'"},
		{"time", "'08:30:06+01:00'", "'8:30:06Z'"},
		{"email", "'joe.bloggs@example.com'", "'2962'"},
		{"ipv4", "'192.168.0.1'", "'256.1.1.1'"},
		{"ipv6", "'::ffff:1.2.3.4'", "'12345::'"},
		{"uri", "'http://e.com/a?b#c'", "'//e.com/a'"},
		{"uuid", "'2eb8aa08-aa98-11ea-b4aa-73b441d16380'", "'2eb8aa08aa9811eab4aa73b441d16380'"},
		{"hostname", "'www.example.com'", "'-a.example.com'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char schema[64];
		snprintf(schema, sizeof schema, "{'format':'%s'}", cases[i].fmt);
		struct jschema *s = compile_ok(schema, JSCHEMA_2020_12, JSCHEMA_FORMAT_ASSERT);
		assert_int_equal(validate(s, cases[i].ok, NULL, 0), 0);
		assert_int_equal(validate(s, cases[i].bad, NULL, 0), 1);
		jschema_free(s);
	}
	/* uri: one '#', brackets only around an IP literal host. */
	struct jschema *u = compile_ok("{'format':'uri'}", JSCHEMA_2020_12, JSCHEMA_FORMAT_ASSERT);
	assert_int_equal(validate(u, "'ldap://[2001:db8::7]/c=GB?objectClass?one'", NULL, 0), 0);
	assert_int_equal(validate(u, "'http://a/b#c#d'", NULL, 0), 1);
	assert_int_equal(validate(u, "'http:/]foo'", NULL, 0), 1);
	assert_int_equal(validate(u, "'mailto:a@b[c'", NULL, 0), 1);
	jschema_free(u);
}

/* ---- findings ------------------------------------------------------------------- */

static void test_error_pointers(void **state)
{
	(void)state;
	struct jschema_error e = one_error(
		"{'properties':{'a/b':{'items':{'properties':{'c~d':{'type':'string'}}}}}}",
		"{'a/b':[{},{'c~d':1}]}");
	assert_string_equal(e.instance_ptr, "/a~1b/1/c~0d");
	assert_string_equal(e.schema_ptr, "/properties/a~1b/items/properties/c~0d/type");
	assert_string_equal(e.keyword, "type");

	e = one_error("{'required':['x']}", "{}");
	assert_string_equal(e.instance_ptr, "");
	assert_string_equal(e.schema_ptr, "/required");
	assert_non_null(strstr(e.message, "\"x\""));

	e = one_error("{'additionalProperties':false}", "{'extra':1}");
	assert_string_equal(e.instance_ptr, "/extra");
	assert_string_equal(e.keyword, "additionalProperties");

	/* Through a $ref: the pointer names the target's keyword. */
	e = one_error("{'$defs':{'n':{'minimum':5}},'properties':{'v':{'$ref':'#/$defs/n'}}}", "{'v':1}");
	assert_string_equal(e.schema_ptr, "/$defs/n/minimum");
	assert_string_equal(e.instance_ptr, "/v");

	e = one_error("{'properties':{'a':false}}", "{'a':1}");
	assert_string_equal(e.schema_ptr, "/properties/a");
	assert_string_equal(e.keyword, "false");
	assert_string_equal(e.instance_ptr, "/a");

	e = one_error("{'type':['string','null']}", "1.5");
	assert_string_equal(e.message, "number where null or string is expected");

	/* anyOf is one violation, not one per branch. */
	e = one_error("{'anyOf':[{'type':'string'},{'type':'null'}]}", "1");
	assert_string_equal(e.keyword, "anyOf");
}

static void test_error_count_and_cap(void **state)
{
	(void)state;
	struct jschema *s = compile_ok("{'items':{'type':'string'}}", JSCHEMA_2020_12, 0);
	struct jschema_error e[2];
	assert_int_equal(validate(s, "[1,2,3,'a',5]", e, 2), 4);
	assert_string_equal(e[0].instance_ptr, "/0");
	assert_string_equal(e[1].instance_ptr, "/1");
	assert_int_equal(validate(s, "[1]", NULL, 0), 1);
	jschema_free(s);
}

static void test_long_pointer_truncated(void **state)
{
	(void)state;
	char key[400];
	memset(key, 'k', sizeof key - 1);
	key[sizeof key - 1] = '\0';
	char *schema = malloc(1000), *inst = malloc(1000);
	snprintf(schema, 1000, "{'properties':{'%s':{'type':'string'}}}", key);
	snprintf(inst, 1000, "{'%s':1}", key);
	struct jschema_error e = one_error(schema, inst);
	assert_true(strlen(e.instance_ptr) < sizeof e.instance_ptr);
	assert_non_null(strstr(e.instance_ptr, "..."));
	assert_non_null(strstr(e.schema_ptr, "..."));
	free(schema);
	free(inst);
}

/* Regression (fuzz_jschema, corpus crash-control-char-in-message): a
 * message quoting a $ref with a newline stays one line. */
static void test_regress_message_one_line(void **state)
{
	(void)state;
	struct jschema_error e = compile_err("{'$ref':'#no\\nsuch'}", JSCHEMA_2020_12);
	assert_non_null(strstr(e.message, "no?such"));
	for (const char *m = e.message; *m; m++)
		assert_true((unsigned char)*m >= 0x20);
}

/* Regression (fuzz_jschema, corpus crash-pointer-cut-in-escape): a pointer
 * cut at LIMIT_JSCHEMA_PTR_BYTES never splits a ~1 escape. */
static void test_regress_truncation_keeps_escapes(void **state)
{
	(void)state;
	for (size_t pad = 0; pad < 4; pad++) {
		char key[600], schema[800];
		memset(key, 'p', pad);
		for (size_t i = pad; i < sizeof key - 1; i++)
			key[i] = '/';
		key[sizeof key - 1] = '\0';
		snprintf(schema, sizeof schema, "{'properties':{'%s':false}}", key);
		char inst[800];
		snprintf(inst, sizeof inst, "{'%s':1}", key);
		struct jschema_error e = one_error(schema, inst);
		for (const char *p = e.instance_ptr; *p; p++)
			if (*p == '~')
				assert_true(p[1] == '0' || p[1] == '1');
		for (const char *p = e.schema_ptr; *p; p++)
			if (*p == '~')
				assert_true(p[1] == '0' || p[1] == '1');
		assert_non_null(strstr(e.instance_ptr, "..."));
	}
}

/* Regression (fuzz_jschema, corpus crash-tilde-in-pattern-key): the
 * pointer of a bad patternProperties entry escapes its key. */
static void test_regress_pattern_key_escaped(void **state)
{
	(void)state;
	struct jschema_error e = compile_err("{'patternProperties':{'a~b/c':3}}", JSCHEMA_2020_12);
	assert_string_equal(e.schema_ptr, "/patternProperties/a~0b~1c");
	assert_string_equal(e.keyword, "patternProperties");
	e = compile_err("{'properties':{'x':{'pattern':'(a)\\\\1'}}}", JSCHEMA_2020_12);
	assert_int_equal(e.code, JSCHEMA_UNSUPPORTED);
	assert_string_equal(e.schema_ptr, "/properties/x/pattern");
	assert_string_equal(e.keyword, "pattern");
}

/* ---- compile findings --------------------------------------------------------------- */

static void test_compile_findings(void **state)
{
	(void)state;
	struct jschema_error e = compile_err("{'properties':{'a':{'items':{'type':'strng'}}}}", JSCHEMA_2020_12);
	assert_int_equal(e.code, JSCHEMA_INVALID);
	assert_string_equal(e.schema_ptr, "/properties/a/items/type");

	e = compile_err("{'properties':{'a':{'properties':{'b':{'enum':3}}}}}", JSCHEMA_2020_12);
	assert_string_equal(e.schema_ptr, "/properties/a/properties/b/enum");

	e = compile_err("{'properties':{'a':{'$ref':'#/$defs/nowhere'}}}", JSCHEMA_2020_12);
	assert_int_equal(e.code, JSCHEMA_INVALID);
	assert_string_equal(e.schema_ptr, "/properties/a/$ref");

	e = compile_err("{'$ref':'#nope'}", JSCHEMA_2020_12);
	assert_int_equal(e.code, JSCHEMA_INVALID);

	e = compile_err("{'$ref':'https://example.com/other.json'}", JSCHEMA_2020_12);
	assert_int_equal(e.code, JSCHEMA_REMOTE_REF);
	assert_string_equal(jschema_code_str(e.code), "remote-ref");

	e = compile_err("{'required':'a'}", JSCHEMA_2020_12);
	assert_string_equal(e.schema_ptr, "/required");
	e = compile_err("{'minLength':-1}", JSCHEMA_2020_12);
	assert_string_equal(e.keyword, "minLength");
	e = compile_err("{'allOf':[]}", JSCHEMA_2020_12);
	assert_string_equal(e.keyword, "allOf");
	e = compile_err("{'type':['string',3]}", JSCHEMA_2020_12);
	assert_string_equal(e.schema_ptr, "/type/1");
	e = compile_err("{'properties':{'a':3}}", JSCHEMA_2020_12);
	assert_string_equal(e.schema_ptr, "/properties/a");
	e = compile_err("3", JSCHEMA_2020_12);
	assert_int_equal(e.code, JSCHEMA_INVALID);
	e = compile_err("{'multipleOf':0}", JSCHEMA_2020_12);
	assert_string_equal(e.keyword, "multipleOf");
}

static void test_dialects(void **state)
{
	(void)state;
	/* prefixItems is a 2020-12 keyword; draft-07 ignores it. */
	const char *p = "{'prefixItems':[{'type':'string'}]}";
	assert_false(valid_in(JSCHEMA_2020_12, p, "[1]"));
	assert_true(valid_in(JSCHEMA_DRAFT7, p, "[1]"));
	/* $schema wins over the caller's default. */
	assert_true(valid_in(JSCHEMA_2020_12, "{'$schema':'http://json-schema.org/draft-07/schema#','prefixItems':[false]}", "[1]"));
	assert_false(valid_in(JSCHEMA_DRAFT7, "{'$schema':'https://json-schema.org/draft/2020-12/schema','prefixItems':[false]}", "[1]"));
	struct jschema *s = compile_ok("{'$schema':'http://json-schema.org/draft-07/schema'}", JSCHEMA_2020_12, 0);
	assert_int_equal(jschema_dialect_of(s), JSCHEMA_DRAFT7);
	jschema_free(s);
	struct jschema_error e = compile_err("{'$schema':'http://json-schema.org/draft-04/schema#'}", JSCHEMA_2020_12);
	assert_int_equal(e.code, JSCHEMA_UNSUPPORTED);
	assert_string_equal(e.keyword, "$schema");
	e = compile_err("{'$schema':'https://json-schema.org/draft/2019-09/schema'}", JSCHEMA_DRAFT7);
	assert_int_equal(e.code, JSCHEMA_UNSUPPORTED);
	e = compile_err("{'$schema':3}", JSCHEMA_DRAFT7);
	assert_int_equal(e.code, JSCHEMA_UNSUPPORTED);
	/* The era's default. */
	assert_int_equal(jschema_dialect_for_era("2024-11-05"), JSCHEMA_DRAFT7);
	assert_int_equal(jschema_dialect_for_era("2025-03-26"), JSCHEMA_DRAFT7);
	assert_int_equal(jschema_dialect_for_era("2025-06-18"), JSCHEMA_DRAFT7);
	assert_int_equal(jschema_dialect_for_era("2025-11-25"), JSCHEMA_2020_12);
	assert_int_equal(jschema_dialect_for_era("2026-07-28"), JSCHEMA_2020_12);
	assert_int_equal(jschema_dialect_for_era(NULL), JSCHEMA_DRAFT7);
	assert_int_equal(jschema_dialect_for_era("DRAFT-2026-v1"), JSCHEMA_DRAFT7);
}

/* ---- limits -------------------------------------------------------------------------- */

static void test_ref_cycle_is_a_finding(void **state)
{
	(void)state;
	const char *cycles[] = {
		"{'$ref':'#'}",
		"{'$defs':{'a':{'$ref':'#/$defs/b'},'b':{'$ref':'#/$defs/a'}},'$ref':'#/$defs/a'}",
		"{'anyOf':[{'type':'string'},{'$ref':'#'}]}",
	};
	for (size_t i = 0; i < sizeof cycles / sizeof cycles[0]; i++) {
		struct jschema *s = compile_ok(cycles[i], JSCHEMA_2020_12, 0);
		struct jschema_error e[1];
		assert_int_equal(validate(s, "1", e, 1), -1);
		assert_int_equal(e[0].code, JSCHEMA_LIMIT);
		assert_non_null(strstr(e[0].message, "cycle"));
		jschema_free(s);
	}
}

static void test_step_limit(void **state)
{
	(void)state;
	/* Each level doubles the work: 2^20 evaluations without a limit. */
	char schema[4096] = "{'$defs':{'l0':{'type':'integer'}";
	for (int i = 1; i <= 20; i++) {
		char def[128];
		snprintf(def, sizeof def, ",'l%d':{'allOf':[{'$ref':'#/$defs/l%d'},{'$ref':'#/$defs/l%d'}]}", i,
		         i - 1, i - 1);
		strcat(schema, def);
	}
	strcat(schema, "},'$ref':'#/$defs/l20'}");
	struct jschema *s = compile_ok(schema, JSCHEMA_2020_12, 0);
	struct jschema_error e[1];
	assert_int_equal(validate(s, "1", e, 1), -1);
	assert_int_equal(e[0].code, JSCHEMA_LIMIT);
	assert_non_null(strstr(e[0].message, "LIMIT_JSCHEMA_STEPS"));
	jschema_free(s);
}

static void test_depth_limits(void **state)
{
	(void)state;
	/* A schema nested past LIMIT_JSCHEMA_SCHEMA_DEPTH does not compile. */
	size_t depth = LIMIT_JSCHEMA_SCHEMA_DEPTH + 5;
	char *deep = malloc(depth * 8 + 16);
	char *o = deep;
	for (size_t i = 0; i < depth; i++)
		o += sprintf(o, "{'not':");
	o += sprintf(o, "true");
	for (size_t i = 0; i < depth; i++)
		*o++ = '}';
	*o = '\0';
	struct jschema_error e = compile_err(deep, JSCHEMA_2020_12);
	assert_int_equal(e.code, JSCHEMA_LIMIT);
	assert_non_null(strstr(e.message, "LIMIT_JSCHEMA_SCHEMA_DEPTH"));
	free(deep);

	/* A recursive schema on an instance deeper than the ref limit. */
	struct jschema *s = compile_ok("{'items':{'$ref':'#'}}", JSCHEMA_2020_12, 0);
	size_t n = LIMIT_JSCHEMA_REF_DEPTH + 10;
	char *inst = malloc(2 * n + 1);
	memset(inst, '[', n);
	memset(inst + n, ']', n);
	inst[2 * n] = '\0';
	struct jschema_error ve[1];
	assert_int_equal(validate(s, inst, ve, 1), -1);
	assert_int_equal(ve[0].code, JSCHEMA_LIMIT);
	free(inst);
	jschema_free(s);
}

static void test_node_limit(void **state)
{
	(void)state;
	json_t *props = json_object();
	for (int i = 0; i < LIMIT_JSCHEMA_NODES + 1; i++) {
		char k[16];
		snprintf(k, sizeof k, "p%d", i);
		json_object_set_new(props, k, json_object());
	}
	json_t *schema = json_pack("{s:o}", "properties", props);
	struct jschema_error e;
	assert_null(jschema_compile(schema, JSCHEMA_2020_12, 0, &e));
	assert_int_equal(e.code, JSCHEMA_LIMIT);
	assert_non_null(strstr(e.message, "LIMIT_JSCHEMA_NODES"));
	json_decref(schema);
}

static void test_ref_and_id_limits(void **state)
{
	(void)state;
	json_t *all = json_array();
	for (int i = 0; i < LIMIT_JSCHEMA_REFS + 1; i++)
		json_array_append_new(all, json_pack("{s:s}", "$ref", "#"));
	json_t *schema = json_pack("{s:o}", "allOf", all);
	struct jschema_error e;
	assert_null(jschema_compile(schema, JSCHEMA_2020_12, 0, &e));
	assert_int_equal(e.code, JSCHEMA_LIMIT);
	assert_non_null(strstr(e.message, "LIMIT_JSCHEMA_REFS"));
	json_decref(schema);

	json_t *defs = json_object();
	for (int i = 0; i < LIMIT_JSCHEMA_IDS + 1; i++) {
		char k[16];
		snprintf(k, sizeof k, "a%d", i);
		json_object_set_new(defs, k, json_pack("{s:s}", "$anchor", k));
	}
	schema = json_pack("{s:o}", "$defs", defs);
	assert_null(jschema_compile(schema, JSCHEMA_2020_12, 0, &e));
	assert_non_null(strstr(e.message, "LIMIT_JSCHEMA_IDS"));
	json_decref(schema);
	/* No schema or no instance: a limit finding, not a crash. */
	assert_int_equal(jschema_validate(NULL, NULL, &e, 1), -1);
	assert_int_equal(e.code, JSCHEMA_LIMIT);
}

static void test_shared_schema_survives_caller(void **state)
{
	(void)state;
	/* compile_ok() dropped its reference: the schema lives on in s. */
	struct jschema *s = compile_ok("{'enum':['a','b']}", JSCHEMA_DRAFT7, 0);
	assert_int_equal(validate(s, "'b'", NULL, 0), 0);
	assert_int_equal(validate(s, "'c'", NULL, 0), 1);
	jschema_free(s);
	jschema_free(NULL);
}

/* One compiled schema validated from several threads at once: the same
 * answers as alone (nothing in the compiled form is written). */
struct shared_run {
	const struct jschema *s;
	json_t *ok, *bad;
	int wrong;
};

static void *validate_many(void *arg)
{
	struct shared_run *r = arg;
	for (int i = 0; i < 2000; i++) {
		struct jschema_error e[2];
		if (jschema_validate(r->s, r->ok, e, 2) != 0 || jschema_validate(r->s, r->bad, e, 2) != 2 ||
		    strcmp(e[1].instance_ptr, "/n") != 0 || jschema_valid(r->s, r->bad) != 0)
			r->wrong++;
	}
	return NULL;
}

static void test_shared_across_threads(void **state)
{
	(void)state;
	struct jschema *s = compile_ok("{'$defs':{'n':{'type':'integer','minimum':0}},'properties':{"
	                               "'p':{'pattern':'^/[a-z]+$'},'n':{'$ref':'#/$defs/n'}},"
	                               "'unevaluatedProperties':false}",
	                               JSCHEMA_2020_12, 0);
	struct shared_run runs[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		runs[i] = (struct shared_run){.s = s, .ok = th_json("{'p':'/abc','n':3}"),
		                              .bad = th_json("{'p':'abc','n':-1}")};
		assert_int_equal(pthread_create(&th[i], NULL, validate_many, &runs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(runs[i].wrong, 0);
		json_decref(runs[i].ok);
		json_decref(runs[i].bad);
	}
	jschema_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_type),
		cmocka_unit_test(test_enum_const),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_objects),
		cmocka_unit_test(test_arrays),
		cmocka_unit_test(test_applicators),
		cmocka_unit_test(test_unevaluated),
		cmocka_unit_test(test_refs),
		cmocka_unit_test(test_dynamic_ref),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_error_pointers),
		cmocka_unit_test(test_error_count_and_cap),
		cmocka_unit_test(test_long_pointer_truncated),
		cmocka_unit_test(test_regress_message_one_line),
		cmocka_unit_test(test_regress_truncation_keeps_escapes),
		cmocka_unit_test(test_regress_pattern_key_escaped),
		cmocka_unit_test(test_compile_findings),
		cmocka_unit_test(test_dialects),
		cmocka_unit_test(test_ref_cycle_is_a_finding),
		cmocka_unit_test(test_step_limit),
		cmocka_unit_test(test_depth_limits),
		cmocka_unit_test(test_node_limit),
		cmocka_unit_test(test_ref_and_id_limits),
		cmocka_unit_test(test_shared_schema_survives_caller),
		cmocka_unit_test(test_shared_across_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for proxy/cli/report.c and its writers (report_junit.c,
 * report_sarif.c, report_md.c): one test per behaviour. The real
 * consumers (SARIF Multitool, junitparser, GitHub's line format) judge
 * the same outputs in tests/integration/formats.test.mjs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/cli/cli_out.h"
#include "proxy/cli/report.h"

/* r written as fmt (owned string). */
static char *written(const struct report *r, enum report_fmt fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	assert_non_null(m);
	assert_int_equal(report_write(r, fmt, m), 0);
	fclose(m);
	return buf;
}

/* A check of two tools, one failing with a problem and a warning. */
static struct report *sample(void)
{
	struct report *r = report_new("check", "0.1.0");
	assert_non_null(r);
	assert_int_equal(report_add_case(r, "tools.json", "ok_tool", REPORT_PASS, -1, NULL), 0);
	assert_int_equal(report_add_case(r, "tools.json", "bad|<tool>", REPORT_FAIL, -1, NULL), 0);
	struct report_finding f = {.code = "description-missing", .level = REPORT_LEVEL_ERROR,
	                           .message = "no \"description\" & 100% <bad>\nline",
	                           .tool = "bad|<tool>", .file = "tools.json",
	                           .pointer = "/tools/1/description", .line = 7, .column = 5};
	assert_int_equal(report_add_finding(r, &f), 0);
	struct report_finding w = {.code = "param-undescribed", .level = REPORT_LEVEL_WARNING,
	                           .message = "a, b: c", .tool = "ok_tool"};
	assert_int_equal(report_add_finding(r, &w), 0);
	assert_int_equal(report_set_result(r, 1, "FAILED: 1 problem, 0 breaking changes"), 0);
	return r;
}

static void test_format_parse(void **state)
{
	(void)state;
	struct report_out o;
	const char *why = NULL;
	assert_int_equal(report_format_parse("sarif=out.sarif", &o, &why), 0);
	assert_int_equal(o.fmt, REPORT_FMT_SARIF);
	assert_string_equal(o.file, "out.sarif");
	assert_int_equal(report_format_parse("markdown", &o, &why), 0);
	assert_null(o.file);
	assert_int_equal(report_format_parse("xml", &o, &why), -1);
	assert_non_null(why);
	assert_int_equal(report_format_parse("junit=", &o, &why), -1);
	assert_int_equal(report_format_parse("sarifx", &o, &why), -1);
}

static void test_outs_one_on_stdout(void **state)
{
	(void)state;
	struct report_outs o = {0};
	const char *why = NULL;
	assert_true(report_outs_has(&o, REPORT_FMT_TEXT));
	assert_int_equal(report_outs_add(&o, "json", &why), 0);
	assert_int_equal(report_outs_add(&o, "github", &why), -1);
	assert_int_equal(report_outs_add(&o, "sarif=a", &why), 0);
	assert_int_equal(report_outs_add(&o, "junit=a", &why), -1);
	assert_false(report_outs_has(&o, REPORT_FMT_TEXT));
	assert_true(report_outs_rich(&o));
}

static void test_junit_cases_and_escaping(void **state)
{
	(void)state;
	struct report *r = sample();
	char *x = written(r, REPORT_FMT_JUNIT);
	assert_non_null(strstr(x, "tests=\"2\" failures=\"1\" errors=\"0\""));
	assert_non_null(strstr(x, "name=\"bad|&lt;tool&gt;\""));
	assert_non_null(strstr(x, "type=\"description-missing\""));
	assert_non_null(strstr(x, "&quot;description&quot; &amp; 100% &lt;bad&gt;&#10;line"));
	assert_non_null(strstr(x, "<system-out>warning param-undescribed"));
	free(x);
	report_free(r);
}

static void test_junit_listing_and_error(void **state)
{
	(void)state;
	struct report *r = report_new("check", "0.1.0");
	struct report_finding f = {.code = "no-tools", .message = "no tools"};
	report_add_finding(r, &f);
	report_set_error(r, "cannot connect");
	char *x = written(r, REPORT_FMT_JUNIT);
	assert_non_null(strstr(x, "name=\"(listing)\""));
	assert_non_null(strstr(x, "<error message=\"cannot connect\""));
	assert_non_null(strstr(x, "tests=\"2\" failures=\"1\" errors=\"1\""));
	free(x);
	report_free(r);
}

static void test_sarif_rules_and_locations(void **state)
{
	(void)state;
	struct report *r = sample();
	char *s = written(r, REPORT_FMT_SARIF);
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	assert_non_null(j);
	json_t *run = json_array_get(json_object_get(j, "runs"), 0);
	json_t *rules = json_object_get(json_object_get(json_object_get(run, "tool"), "driver"), "rules");
	assert_int_equal(json_array_size(rules), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(rules, 1), "id")),
	                    "param-undescribed");
	json_t *res = json_object_get(run, "results");
	json_t *r0 = json_array_get(res, 0), *r1 = json_array_get(res, 1);
	assert_int_equal(json_integer_value(json_object_get(r1, "ruleIndex")), 1);
	json_t *loc = json_array_get(json_object_get(r0, "locations"), 0);
	json_t *region = json_object_get(json_object_get(loc, "physicalLocation"), "region");
	assert_int_equal(json_integer_value(json_object_get(region, "startLine")), 7);
	assert_int_equal(json_integer_value(json_object_get(region, "startColumn")), 5);
	/* No file: a logical location only. */
	json_t *loc1 = json_array_get(json_object_get(r1, "locations"), 0);
	assert_null(json_object_get(loc1, "physicalLocation"));
	assert_non_null(json_object_get(loc1, "logicalLocations"));
	json_decref(j);
	free(s);
	report_free(r);
}

/* The fingerprint ignores the tool's index and the line: a reordered
 * listing keeps its alerts. */
static void test_sarif_fingerprint_stable(void **state)
{
	(void)state;
	const char *fp[2];
	char *s[2];
	json_t *j[2];
	for (int k = 0; k < 2; k++) {
		struct report *r = report_new("check", "0.1.0");
		struct report_finding f = {.code = "param-undescribed", .message = "m", .tool = "t",
		                           .file = "x.json", .line = k ? 40 : 4,
		                           .pointer = k ? "/tools/9/inputSchema/properties/a"
		                                        : "/tools/0/inputSchema/properties/a"};
		report_add_finding(r, &f);
		s[k] = written(r, REPORT_FMT_SARIF);
		j[k] = json_loads(s[k], 0, NULL);
		json_t *res = json_array_get(
			json_object_get(json_array_get(json_object_get(j[k], "runs"), 0), "results"), 0);
		fp[k] = json_string_value(
			json_object_get(json_object_get(res, "partialFingerprints"), "mcpwarden/v1"));
		report_free(r);
	}
	assert_string_equal(fp[0], fp[1]);
	for (int k = 0; k < 2; k++) {
		json_decref(j[k]);
		free(s[k]);
	}
}

static void test_github_encoding(void **state)
{
	(void)state;
	struct report *r = sample();
	char *g = written(r, REPORT_FMT_GITHUB);
	assert_non_null(strstr(g, "::error file=tools.json,line=7,col=5,title=description-missing::"
	                          "tool \"bad|<tool>\": no \"description\" & 100%25 <bad>%0Aline\n"));
	assert_non_null(strstr(g, "::warning title=param-undescribed::tool \"ok_tool\": a, b: c\n"));
	free(g);
	report_free(r);
}

static void test_markdown_table_escaped(void **state)
{
	(void)state;
	struct report *r = sample();
	char *m = written(r, REPORT_FMT_MARKDOWN);
	assert_non_null(strstr(m, "### mcpwarden check: FAILED\n"));
	assert_non_null(strstr(m, "| tools.json | bad\\|\\<tool\\> | \xe2\x9d\x8c fail | 1 |\n"));
	assert_non_null(strstr(m, "#### Problems"));
	assert_true(strstr(m, "#### Problems") < strstr(m, "#### Warnings"));
	free(m);
	report_free(r);
}

static void test_own_text_and_json(void **state)
{
	(void)state;
	struct report *r = sample();
	report_set_text(r, "exact bytes\n");
	json_t *j = json_pack("{s:i}", "a", 1);
	report_set_json(r, j);
	json_decref(j);
	char *t = written(r, REPORT_FMT_TEXT), *js = written(r, REPORT_FMT_JSON);
	assert_string_equal(t, "exact bytes\n");
	assert_string_equal(js, "{\n  \"a\": 1\n}\n");
	free(t);
	free(js);
	report_free(r);
}

static void test_secrets_masked(void **state)
{
	(void)state;
	struct cli_secrets sec = {0};
	cli_secrets_add(&sec, "hunter22", 8);
	struct report *r = report_new("check", "0.1.0");
	report_set_secrets(r, &sec);
	report_set_error(r, "401 for token hunter22");
	for (enum report_fmt f = REPORT_FMT_TEXT; f <= REPORT_FMT_MARKDOWN; f++) {
		char *s = written(r, f);
		assert_null(strstr(s, "hunter22"));
		free(s);
	}
	report_free(r);
	cli_secrets_free(&sec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse),
		cmocka_unit_test(test_outs_one_on_stdout),
		cmocka_unit_test(test_junit_cases_and_escaping),
		cmocka_unit_test(test_junit_listing_and_error),
		cmocka_unit_test(test_sarif_rules_and_locations),
		cmocka_unit_test(test_sarif_fingerprint_stable),
		cmocka_unit_test(test_github_encoding),
		cmocka_unit_test(test_markdown_table_escaped),
		cmocka_unit_test(test_own_text_and_json),
		cmocka_unit_test(test_secrets_masked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

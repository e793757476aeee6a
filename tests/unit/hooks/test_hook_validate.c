/* Unit tests for proxy/hooks/hook_validate.c: the live contract driven
 * through the real inspect chain (the tools/list tracker, then the hook,
 * then an observer that copies each message's notes, as the recorder
 * reads them), with fabricated tools/list and tools/call exchanges.
 *
 * Covers: every mode of arguments and results, the era answers (-32602
 * before 2025-11-25, an isError tool result from it on), unknown tools,
 * calls before any listing, a changed listing recompiled, isError results
 * exempt, missing structuredContent, results without their request
 * (paired by session and id), unusable schemas, the findings bound, the
 * counters, the summary and the log rate limit.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
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

#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/hook_validate.h"
#include "proxy/hooks/inspect.h"
#include "proxy/hooks/tools.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/limits.h"
#include "tests/unit/helpers.h"

struct fx {
	struct px_config cfg;
	struct px_upstream_conf ups[1];
	struct px_proc proc;
	struct px_ctx ctx;
	char err[512];
	json_t *seen;       /* the last message's notes, as observers see them */
	int observed;
};

static enum inspect_verdict observe(void *arg, struct inspect_msg *m)
{
	struct fx *f = arg;
	json_decref(f->seen);
	f->seen = m->notes ? json_deep_copy(m->notes) : NULL;
	f->observed++;
	return INSPECT_FORWARD;
}

/* Upstream "a" with modes args/results (0 off, 1 report, 2 fail). */
static struct fx *fx_new(int args, int results, int formats)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->cfg.ups = f->ups;
	f->cfg.nups = 1;
	f->ups[0].name = "a";
	f->ups[0].validation.arguments = args;
	f->ups[0].validation.results = results;
	f->ups[0].validation.formats = formats;
	f->ctx.cfg = &f->cfg;
	f->ctx.proc = &f->proc;
	f->ctx.insp = inspect_new();
	assert_non_null(f->ctx.insp);
	f->proc.tools = tools_setup(&f->ctx, 0);
	assert_non_null(f->proc.tools);
	assert_int_equal(hook_validate_setup(&f->ctx, f->err, sizeof(f->err)), 0);
	assert_true(inspect_add_observer(f->ctx.insp, "obs", observe, NULL, f) >= 0);
	return f;
}

static void fx_free(struct fx *f)
{
	inspect_free(f->ctx.insp);
	hook_validate_free(f->proc.validate);
	tools_free(f->proc.tools);
	json_decref(f->seen);
	free(f);
}

static json_int_t next_id = 1;

/* A tools/list exchange whose result lists `tools` (JSON, ' for "). */
static void list(struct fx *f, const char *tools)
{
	json_int_t id = next_id++;
	json_t *req = json_pack("{s:s,s:I,s:s,s:{}}", "jsonrpc", "2.0", "id", id, "method",
	                        "tools/list", "params");
	json_t *resp = json_pack("{s:s,s:I,s:{s:o}}", "jsonrpc", "2.0", "id", id, "result", "tools",
	                         th_json(tools));
	struct inspect_where w = {.conn_id = 1, .upstream = "a", .http_method = "POST"};
	struct inspect_msg mc = {.dir = INSPECT_FROM_CLIENT, .kind = JRPC_REQUEST, .msg = req,
	                         .request = req, .where = &w};
	inspect_message(f->ctx.insp, &mc);
	struct inspect_msg ms = {.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT, .msg = resp,
	                         .request = req, .where = &w};
	inspect_message(f->ctx.insp, &ms);
	json_decref(req);
	json_decref(resp);
}

/* What one call did. */
struct call {
	enum inspect_verdict v;   /* of the request */
	json_t *answer;           /* owned: the hook's answer, or NULL */
	json_t *req_notes;        /* owned: the request's notes */
	json_t *resp;             /* owned: the response as forwarded, or NULL */
	int resp_modified;
	json_t *resp_notes;       /* owned */
};

static void call_free(struct call *c)
{
	json_decref(c->answer);
	json_decref(c->req_notes);
	json_decref(c->resp);
	json_decref(c->resp_notes);
}

/* tools/call of `tool` with `args` (JSON or NULL: none) in protocol
 * version proto; when result is not NULL and the call was forwarded,
 * the server answers with it (with its request unless orphan). */
static struct call call_ex(struct fx *f, const char *proto, const char *tool, const char *args,
                           const char *result, int orphan)
{
	struct call c = {0};
	json_int_t id = next_id++;
	json_t *req = json_pack("{s:s,s:I,s:s,s:{s:s}}", "jsonrpc", "2.0", "id", id, "method",
	                        "tools/call", "params", "name", tool);
	if (args)
		json_object_set_new(json_object_get(req, "params"), "arguments", th_json(args));
	struct inspect_where w = {.conn_id = 7, .upstream = "a", .http_method = "POST",
	                          .protocol = proto, .session_id = "s1"};
	struct inspect_msg mc = {.dir = INSPECT_FROM_CLIENT, .kind = JRPC_REQUEST, .msg = req,
	                         .request = req, .where = &w};
	c.v = inspect_message(f->ctx.insp, &mc);
	c.answer = mc.answer;
	c.req_notes = f->seen;
	f->seen = NULL;
	assert_null(mc.notes); /* freed by inspect after the observers */
	if (result && c.v == INSPECT_FORWARD) {
		json_t *resp = json_pack("{s:s,s:I,s:o}", "jsonrpc", "2.0", "id", id, "result",
		                         th_json(result));
		struct inspect_msg ms = {.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT, .msg = resp,
		                         .request = orphan ? NULL : req, .where = &w};
		inspect_message(f->ctx.insp, &ms);
		c.resp = resp;
		c.resp_modified = ms.modified;
		c.resp_notes = f->seen;
		f->seen = NULL;
	}
	json_decref(req);
	return c;
}

static struct call call(struct fx *f, const char *proto, const char *tool, const char *args,
                        const char *result)
{
	return call_ex(f, proto, tool, args, result, 0);
}

static const char *note_str(const json_t *notes, size_t i, const char *key)
{
	return json_string_value(json_object_get(json_array_get(notes, i), key));
}

#define TOOLS                                                                                  \
	"[{'name':'add','inputSchema':{'type':'object','properties':{'a':{'type':'number'},"  \
	"'b':{'type':'number'}},'required':['a','b']}},"                                          \
	"{'name':'weather','inputSchema':{'type':'object'},"                                      \
	"'outputSchema':{'type':'object','properties':{'temp':{'type':'number'}},"                \
	"'required':['temp']}}]"

/* ---- arguments ---------------------------------------------------------------- */

static void test_report_valid_no_findings(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 1, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-06-18", "add", "{'a':1,'b':2}", "{'content':[]}");
	assert_int_equal(c.v, INSPECT_FORWARD);
	assert_null(c.req_notes);
	assert_null(c.resp_notes);
	call_free(&c);
	fx_free(f);
}

static void test_report_invalid_forwards_with_findings(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 1, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-06-18", "add", "{'a':'x'}", NULL);
	assert_int_equal(c.v, INSPECT_FORWARD);
	assert_null(c.answer);
	assert_int_equal(json_array_size(c.req_notes), 2);
	assert_string_equal(note_str(c.req_notes, 0, "code"), "arguments-invalid");
	assert_string_equal(note_str(c.req_notes, 0, "kind"), "arguments");
	/* each finding names where, which keyword, why */
	int type = 0, required = 0;
	for (size_t i = 0; i < 2; i++) {
		if (strcmp(note_str(c.req_notes, i, "keyword"), "type") == 0) {
			type = 1;
			assert_string_equal(note_str(c.req_notes, i, "instance"), "/a");
			assert_string_equal(note_str(c.req_notes, i, "schema"), "/properties/a/type");
		}
		required |= strcmp(note_str(c.req_notes, i, "keyword"), "required") == 0;
	}
	assert_true(type && required);
	struct hook_validate_stats st;
	hook_validate_get_stats(f->proc.validate, &st);
	assert_int_equal(st.calls_checked, 1);
	assert_int_equal(st.findings, 2);
	assert_int_equal(st.compiled, 1);
	call_free(&c);
	fx_free(f);
}

static void test_fail_before_2025_11_25_is_32602(void **state)
{
	(void)state;
	struct fx *f = fx_new(2, 1, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-06-18", "add", "{'a':1}", "{'content':[]}");
	assert_int_equal(c.v, INSPECT_ANSWER);
	assert_non_null(c.answer);
	json_t *err = json_object_get(c.answer, "error");
	assert_int_equal(json_integer_value(json_object_get(err, "code")), -32602);
	assert_non_null(strstr(json_string_value(json_object_get(err, "message")), "\"b\""));
	json_t *v = json_object_get(json_object_get(err, "data"), "violations");
	assert_int_equal(json_array_size(v), 1);
	assert_string_equal(note_str(v, 0, "keyword"), "required");
	assert_int_equal(json_integer_value(json_object_get(c.answer, "id")), next_id - 1);
	assert_null(c.resp); /* not forwarded */
	/* the findings still reach the observers */
	assert_int_equal(json_array_size(c.req_notes), 1);
	call_free(&c);
	/* no version known: the earlier rule too */
	c = call(f, NULL, "add", "{}", NULL);
	assert_non_null(json_object_get(c.answer, "error"));
	call_free(&c);
	fx_free(f);
}

static void test_fail_from_2025_11_25_is_tool_result(void **state)
{
	(void)state;
	struct fx *f = fx_new(2, 1, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-11-25", "add", "{'a':1,'b':'two'}", NULL);
	assert_int_equal(c.v, INSPECT_ANSWER);
	json_t *r = json_object_get(c.answer, "result");
	assert_non_null(r);
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_t *content = json_object_get(r, "content");
	assert_int_equal(json_array_size(content), 2); /* a lead line, then each violation */
	const char *t = json_string_value(json_object_get(json_array_get(content, 1), "text"));
	assert_non_null(strstr(t, "/b"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(content, 1), "type")),
	                    "text");
	call_free(&c);
	/* a valid call passes in fail mode */
	c = call(f, "2025-11-25", "add", "{'a':1,'b':2}", "{'content':[]}");
	assert_int_equal(c.v, INSPECT_FORWARD);
	assert_non_null(c.resp);
	call_free(&c);
	fx_free(f);
}

static void test_off_does_nothing(void **state)
{
	(void)state;
	struct fx *f = fx_new(0, 0, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-06-18", "add", "{'a':'x'}",
	                     "{'content':[]}");
	assert_int_equal(c.v, INSPECT_FORWARD);
	assert_null(c.req_notes);
	assert_null(c.resp_notes);
	c.resp_notes = hook_validate_summary(f->proc.validate, "a");
	assert_int_equal(json_object_size(c.resp_notes), 0);
	call_free(&c);
	/* arguments off, results on: results still checked */
	fx_free(f);
	f = fx_new(0, 1, 0);
	list(f, TOOLS);
	c = call(f, "2025-06-18", "weather", "{'zzz':1}", "{'content':[],'structuredContent':{}}");
	assert_null(c.req_notes);
	assert_int_equal(json_array_size(c.resp_notes), 1);
	call_free(&c);
	fx_free(f);
}

static void test_unknown_tool_and_no_listing(void **state)
{
	(void)state;
	struct fx *f = fx_new(2, 1, 0);
	struct call c = call(f, "2025-06-18", "add", "{'a':'x'}", NULL);
	/* recorded as such, never refused: nothing to judge by */
	assert_int_equal(c.v, INSPECT_FORWARD);
	assert_string_equal(note_str(c.req_notes, 0, "code"), "no-listing");
	call_free(&c);
	list(f, TOOLS);
	c = call(f, "2025-06-18", "nope", "{}", NULL);
	assert_int_equal(c.v, INSPECT_FORWARD);
	assert_string_equal(note_str(c.req_notes, 0, "code"), "tool-unknown");
	call_free(&c);
	fx_free(f);
}

static void test_listing_change_recompiles(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 1, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-06-18", "add", "{'a':1,'b':2}", NULL);
	assert_null(c.req_notes);
	call_free(&c);
	c = call(f, "2025-06-18", "add", "{'a':1,'b':2}", NULL);
	call_free(&c);
	struct hook_validate_stats st;
	hook_validate_get_stats(f->proc.validate, &st);
	assert_int_equal(st.compiled, 1); /* once per listing */
	/* the same listing again: nothing recompiled */
	list(f, TOOLS);
	c = call(f, "2025-06-18", "add", "{'a':1,'b':2}", NULL);
	call_free(&c);
	hook_validate_get_stats(f->proc.validate, &st);
	assert_int_equal(st.compiled, 1);
	/* the deploy now wants a string: the new schema applies */
	list(f, "[{'name':'add','inputSchema':{'type':'object','properties':{'a':{'type':'string'}}}}]");
	c = call(f, "2025-06-18", "add", "{'a':1,'b':2}", NULL);
	assert_int_equal(json_array_size(c.req_notes), 1);
	assert_string_equal(note_str(c.req_notes, 0, "keyword"), "type");
	call_free(&c);
	hook_validate_get_stats(f->proc.validate, &st);
	assert_int_equal(st.compiled, 2);
	fx_free(f);
}

static void test_dialect_by_era(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 1, 0);
	/* prefixItems is a 2020-12 keyword: draft-07 ignores it */
	list(f, "[{'name':'t','inputSchema':{'type':'object','properties':{'p':"
	        "{'prefixItems':[{'type':'string'}]}}}}]");
	struct call c = call(f, "2025-06-18", "t", "{'p':[1]}", NULL);
	assert_null(c.req_notes);
	call_free(&c);
	c = call(f, "2025-11-25", "t", "{'p':[1]}", NULL);
	assert_int_equal(json_array_size(c.req_notes), 1);
	call_free(&c);
	fx_free(f);
}

static void test_schema_unusable(void **state)
{
	(void)state;
	struct fx *f = fx_new(2, 1, 0);
	list(f, "[{'name':'t','inputSchema':{'type':'object','properties':{'a':{'$ref':"
	        "'https://example.com/s.json'}}}}]");
	struct call c = call(f, "2025-06-18", "t", "{'a':1}", NULL);
	assert_int_equal(c.v, INSPECT_FORWARD); /* not blocked: not judged */
	assert_string_equal(note_str(c.req_notes, 0, "code"), "schema-unusable");
	assert_non_null(strstr(note_str(c.req_notes, 0, "message"), "remote-ref"));
	call_free(&c);
	struct hook_validate_stats st;
	hook_validate_get_stats(f->proc.validate, &st);
	assert_int_equal(st.compile_failed, 1);
	/* and not compiled again */
	c = call(f, "2025-06-18", "t", "{'a':1}", NULL);
	call_free(&c);
	hook_validate_get_stats(f->proc.validate, &st);
	assert_int_equal(st.compiled, 1);
	fx_free(f);
}

static void test_findings_bounded(void **state)
{
	(void)state;
	struct fx *f = fx_new(2, 1, 0);
	list(f, "[{'name':'t','inputSchema':{'type':'object','additionalProperties':false}}]");
	char args[2048] = "{";
	for (int i = 0; i < 40; i++)
		snprintf(args + strlen(args), sizeof(args) - strlen(args), "%s'k%d':1", i ? "," : "", i);
	strcat(args, "}");
	struct call c = call(f, "2025-06-18", "t", args, NULL);
	assert_int_equal(json_array_size(c.req_notes), LIMIT_VALIDATE_FINDINGS);
	const char *msg = json_string_value(json_object_get(json_object_get(c.answer, "error"),
	                                                    "message"));
	assert_non_null(strstr(msg, "more)"));
	call_free(&c);
	fx_free(f);
}

/* A message cut inside a character (the validator cuts at a byte bound)
 * still makes a finding: the stray bytes become '?'. */
static void test_finding_text_cut_in_a_character(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 1, 0);
	list(f, "[{'name':'t','inputSchema':{'type':'object','additionalProperties':false}}]");
	char args[512] = "{'a";
	for (int i = 0; i < 100; i++)
		strcat(args, "\xc3\xa9");
	strcat(args, "':1}");
	struct call c = call(f, "2025-06-18", "t", args, NULL);
	assert_int_equal(json_array_size(c.req_notes), 1);
	const char *msg = note_str(c.req_notes, 0, "message");
	assert_non_null(msg);
	assert_non_null(strstr(msg, "not allowed"));
	call_free(&c);
	fx_free(f);
}

/* ---- results ------------------------------------------------------------------- */

static void test_result_valid_and_invalid(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 1, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-06-18", "weather", "{}",
	                     "{'content':[],'structuredContent':{'temp':21}}");
	assert_null(c.resp_notes);
	assert_false(c.resp_modified);
	call_free(&c);
	c = call(f, "2025-06-18", "weather", "{}",
	         "{'content':[],'structuredContent':{'temp':'warm'}}");
	assert_false(c.resp_modified); /* report: forwarded unchanged */
	assert_string_equal(note_str(c.resp_notes, 0, "code"), "result-invalid");
	assert_string_equal(note_str(c.resp_notes, 0, "kind"), "result");
	assert_string_equal(note_str(c.resp_notes, 0, "instance"), "/temp");
	call_free(&c);
	fx_free(f);
}

static void test_result_fail_is_32004(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 2, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-11-25", "weather", "{}",
	                     "{'content':[],'structuredContent':{'temp':'warm'}}");
	assert_true(c.resp_modified);
	assert_null(json_object_get(c.resp, "result"));
	json_t *err = json_object_get(c.resp, "error");
	assert_int_equal(json_integer_value(json_object_get(err, "code")), HOOK_VALIDATE_RESULT_CODE);
	assert_int_equal(HOOK_VALIDATE_RESULT_CODE, -32004);
	assert_non_null(strstr(json_string_value(json_object_get(err, "message")), "/temp"));
	assert_int_equal(json_array_size(json_object_get(json_object_get(err, "data"), "violations")),
	                 1);
	call_free(&c);
	fx_free(f);
}

static void test_result_missing_structured_content(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 2, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-06-18", "weather", "{}",
	                     "{'content':[{'type':'text','text':'21'}]}");
	assert_true(c.resp_modified);
	assert_string_equal(note_str(c.resp_notes, 0, "code"), "structured-content-missing");
	call_free(&c);
	fx_free(f);
}

static void test_result_is_error_exempt(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 2, 0);
	list(f, TOOLS);
	struct call c = call(f, "2025-06-18", "weather", "{}",
	                     "{'content':[{'type':'text','text':'no city'}],'isError':true}");
	assert_false(c.resp_modified);
	assert_null(c.resp_notes);
	call_free(&c);
	/* a tool without outputSchema: nothing to hold it to */
	c = call(f, "2025-06-18", "add", "{'a':1,'b':2}", "{'content':[]}");
	assert_false(c.resp_modified);
	assert_null(c.resp_notes);
	call_free(&c);
	fx_free(f);
}

static void test_result_without_request_paired(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 1, 0);
	list(f, TOOLS);
	/* as on a legacy SSE stream: the result comes without its request */
	struct call c = call_ex(f, "2025-06-18", "weather", "{}",
	                        "{'content':[],'structuredContent':{}}", 1);
	assert_string_equal(note_str(c.resp_notes, 0, "code"), "result-invalid");
	call_free(&c);
	fx_free(f);
}

/* ---- what readers pull --------------------------------------------------------- */

struct counted {
	char line[16][128];
	int n;
};

static void count_fn(void *arg, const char *upstream, const char *tool, const char *code,
                     uint64_t n)
{
	struct counted *c = arg;
	if (c->n < 16)
		snprintf(c->line[c->n++], 128, "%s %s %s %llu", upstream, tool, code,
		         (unsigned long long)n);
}

static void test_counters_and_summary(void **state)
{
	(void)state;
	struct fx *f = fx_new(1, 1, 0);
	list(f, TOOLS);
	for (int i = 0; i < 3; i++) {
		struct call c = call(f, "2025-06-18", "add", "{'a':1}", NULL);
		call_free(&c);
	}
	struct call c = call(f, "2025-06-18", "add", "{'a':1,'b':1}", NULL);
	call_free(&c);
	c = call(f, "2025-06-18", "weather", "{}", "{'content':[]}");
	call_free(&c);
	struct counted k = {0};
	hook_validate_foreach_count(f->proc.validate, count_fn, &k);
	int args = 0, missing = 0;
	for (int i = 0; i < k.n; i++) {
		args |= strcmp(k.line[i], "a add arguments-invalid 3") == 0;
		missing |= strcmp(k.line[i], "a weather structured-content-missing 1") == 0;
	}
	assert_true(args && missing);
	json_t *s = hook_validate_summary(f->proc.validate, "a");
	json_t *add = json_object_get(s, "add");
	assert_int_equal(json_integer_value(json_object_get(add, "calls")), 4);
	assert_int_equal(json_integer_value(json_object_get(add, "arguments_invalid")), 3);
	json_t *last = json_object_get(add, "last");
	assert_string_equal(json_string_value(json_object_get(last, "code")), "arguments-invalid");
	assert_non_null(json_string_value(json_object_get(last, "time")));
	json_t *w = json_object_get(s, "weather");
	assert_int_equal(json_integer_value(json_object_get(w, "results")), 1);
	assert_int_equal(json_integer_value(json_object_get(w, "results_invalid")), 1);
	json_decref(s);
	s = hook_validate_summary(f->proc.validate, "nobody");
	assert_int_equal(json_object_size(s), 0);
	json_decref(s);
	assert_null(hook_validate_summary(NULL, "a"));
	/* three findings of one code and tool in a row: one log line */
	struct hook_validate_stats st;
	hook_validate_get_stats(f->proc.validate, &st);
	assert_int_equal(st.logs_suppressed, 2);
	fx_free(f);
}

static void test_formats_opt_in(void **state)
{
	(void)state;
	const char *tools = "[{'name':'t','inputSchema':{'type':'object','properties':"
	                    "{'d':{'type':'string','format':'date'}}}}]";
	struct fx *f = fx_new(1, 1, 0);
	list(f, tools);
	struct call c = call(f, "2025-06-18", "t", "{'d':'not a date'}", NULL);
	assert_null(c.req_notes); /* an annotation */
	call_free(&c);
	fx_free(f);
	f = fx_new(1, 1, 1);
	list(f, tools);
	c = call(f, "2025-06-18", "t", "{'d':'not a date'}", NULL);
	assert_string_equal(note_str(c.req_notes, 0, "keyword"), "format");
	call_free(&c);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_valid_no_findings),
		cmocka_unit_test(test_report_invalid_forwards_with_findings),
		cmocka_unit_test(test_fail_before_2025_11_25_is_32602),
		cmocka_unit_test(test_fail_from_2025_11_25_is_tool_result),
		cmocka_unit_test(test_off_does_nothing),
		cmocka_unit_test(test_unknown_tool_and_no_listing),
		cmocka_unit_test(test_listing_change_recompiles),
		cmocka_unit_test(test_dialect_by_era),
		cmocka_unit_test(test_schema_unusable),
		cmocka_unit_test(test_findings_bounded),
		cmocka_unit_test(test_finding_text_cut_in_a_character),
		cmocka_unit_test(test_result_valid_and_invalid),
		cmocka_unit_test(test_result_fail_is_32004),
		cmocka_unit_test(test_result_missing_structured_content),
		cmocka_unit_test(test_result_is_error_exempt),
		cmocka_unit_test(test_result_without_request_paired),
		cmocka_unit_test(test_counters_and_summary),
		cmocka_unit_test(test_formats_opt_in),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

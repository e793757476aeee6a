/* Unit tests for proxy/hooks/hook_contract.c: the hook driven through the real
 * inspect chain with fabricated tools/list exchanges (request + response,
 * as transport_http hands them over for a JSON reply or one SSE event).
 * Why this file is long: one test per behaviour of the module, each reading
 * on its own (a failure names one behaviour), with the regression cases.
 *
 * Covers: each mode, pages of one listing checked together (duplicates
 * across pages, no-tools and tool-removed only at the end), cursor loops,
 * the page cap, sessions kept apart, orphan pages, the era from the header
 * and from _meta, spec_only, baselines, config validation, bounds.
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
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/hook_contract.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "tests/unit/helpers.h"

/* ---- what readers pull ---------------------------------------------------------
 * The hook keeps each report for readers (admin) to pull with
 * hook_contract_published(); published() counts them. */

static uint64_t published(struct hook_contract *hc, const char *upstream)
{
	struct hook_contract_published pub;
	hook_contract_published(hc, upstream, &pub);
	json_decref(pub.report);
	return pub.count;
}

/* ---- a minimal proxy context ------------------------------------------------ */

struct fx {
	struct px_config cfg;
	struct px_upstream_conf ups[2];
	struct px_proc proc;
	struct px_ctx ctx;
	char err[2048];
	char files[4][64];
	int nfiles;
};

/* Writes text (single quotes allowed) to a temp file; returns its path. */
static const char *temp_file(struct fx *f, const char *text)
{
	char *path = f->files[f->nfiles++];
	snprintf(path, 64, "/tmp/test_hook_contract_XXXXXX");
	char *s = th_quotes(text);
	th_temp_write(path, s);
	free(s);
	return path;
}

/* Sets up upstreams "a" (contract a_conf, may be NULL) and "b" (report).
 * Returns hook_contract_setup's result. */
static int fx_setup(struct fx *f, json_t *a_conf)
{
	f->cfg.ups = f->ups;
	f->cfg.nups = 2;
	f->ups[0].name = "a";
	f->ups[0].contract = a_conf;
	f->ups[1].name = "b";
	f->ctx.cfg = &f->cfg;
	f->ctx.proc = &f->proc;
	f->ctx.insp = inspect_new();
	assert_non_null(f->ctx.insp);
	return hook_contract_setup(&f->ctx, f->err, sizeof(f->err));
}

static struct fx *fx_new(const char *a_conf)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	json_t *c = a_conf ? th_json(a_conf) : NULL;
	if (fx_setup(f, c) != 0)
		fail_msg("setup failed: %s", f->err);
	return f;
}

static void fx_free(struct fx *f)
{
	hook_contract_free(f->proc.contract);
	inspect_free(f->ctx.insp);
	json_decref(f->ups[0].contract);
	for (int i = 0; i < f->nfiles; i++)
		unlink(f->files[i]);
	free(f);
}

/* One tools/list exchange: the request (cursor or NULL) and the reply
 * result (text), on upstream `up` and session `sid`. Returns the message
 * the client gets (owned) and whether the hook modified it. */
struct sent {
	json_t *msg;
	int modified;
	enum inspect_verdict v;
};

static struct sent exchange_ex(struct fx *f, const char *up, const char *sid,
                               const char *protocol, const char *cursor, const char *result,
                               const char *meta_version)
{
	static json_int_t next_id = 100;
	json_int_t id = next_id++;
	json_t *req = json_pack("{s:s,s:I,s:s,s:{}}", "jsonrpc", "2.0", "id", id, "method",
	                        "tools/list", "params");
	if (cursor)
		json_object_set_new(json_object_get(req, "params"), "cursor", json_string(cursor));
	if (meta_version)
		json_object_set_new(json_object_get(req, "params"), "_meta",
		                    json_pack("{s:s}", "io.modelcontextprotocol/protocolVersion",
		                              meta_version));
	json_t *resp = json_pack("{s:s,s:I,s:o}", "jsonrpc", "2.0", "id", id, "result", th_json(result));
	struct inspect_where w = {.conn_id = 1, .upstream = up, .session_id = sid,
	                          .protocol = protocol, .http_method = "POST"};
	/* The client's request crosses first, as in the proxy. */
	struct inspect_msg mc = {.dir = INSPECT_FROM_CLIENT, .kind = JRPC_REQUEST, .msg = req,
	                         .request = req, .where = &w};
	assert_int_equal(inspect_message(f->ctx.insp, &mc), INSPECT_FORWARD);
	assert_false(mc.modified);
	struct inspect_msg m = {.dir = INSPECT_FROM_SERVER, .kind = jrpc_classify(resp), .msg = resp,
	                        .request = req, .where = &w};
	struct sent s;
	s.v = inspect_message(f->ctx.insp, &m);
	s.modified = m.modified;
	s.msg = resp;
	assert_null(m.answer);
	/* The id always survives. */
	assert_int_equal(json_integer_value(json_object_get(resp, "id")), id);
	json_decref(req);
	return s;
}

static struct sent exchange(struct fx *f, const char *sid, const char *cursor, const char *result)
{
	return exchange_ex(f, "a", sid, "2025-11-25", cursor, result, NULL);
}

static void expect_forwarded(struct sent s, const char *result)
{
	json_t *want = th_json(result);
	assert_int_equal(s.v, INSPECT_FORWARD);
	assert_false(s.modified);
	assert_true(json_equal(json_object_get(s.msg, "result"), want));
	json_decref(want);
	json_decref(s.msg);
}

/* The reply became a -32003 error; returns it (owned by the caller via
 * s.msg, which this frees: the message copy is returned). */
static char *expect_failed(struct sent s, const char *code_in_data)
{
	assert_int_equal(s.v, INSPECT_FORWARD);
	assert_true(s.modified);
	assert_null(json_object_get(s.msg, "result"));
	json_t *e = json_object_get(s.msg, "error");
	assert_non_null(e);
	assert_int_equal(json_integer_value(json_object_get(e, "code")), HOOK_CONTRACT_ERROR);
	const char *msg = json_string_value(json_object_get(e, "message"));
	assert_non_null(msg);
	assert_null(strchr(msg, '\n'));
	if (code_in_data) {
		char *d = json_dumps(json_object_get(e, "data"), 0);
		if (!strstr(d, code_in_data))
			fail_msg("data lacks %s: %s", code_in_data, d);
		free(d);
		assert_non_null(strstr(msg, code_in_data));
	}
	char *copy = strdup(msg);
	json_decref(s.msg);
	return copy;
}

static json_t *report(struct fx *f, const char *up)
{
	json_t *r = hook_contract_report(f->proc.contract, up);
	assert_non_null(r);
	return r;
}

static int report_has(const json_t *r, const char *list, const char *code, const char *pointer)
{
	const json_t *arr = json_object_get(r, list);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		const json_t *x = json_array_get(arr, i);
		if (strcmp(json_string_value(json_object_get(x, "code")), code) == 0 &&
		    (!pointer || strcmp(json_string_value(json_object_get(x, "pointer")), pointer) == 0))
			return 1;
	}
	return 0;
}

/* ---- listings --------------------------------------------------------------- */

#define GOOD(n)                                                                              \
	"{'name':'" n "','description':'A perfectly fine tool for tests',"                   \
	"'inputSchema':{'type':'object','properties':{'q':{'type':'string',"                 \
	"'description':'the query'}},'required':['q']}}"
#define NODESC(n) "{'name':'" n "','inputSchema':{'type':'object'}}"
#define BADREQ(n)                                                                            \
	"{'name':'" n "','description':'A perfectly fine tool for tests',"                   \
	"'inputSchema':{'type':'object','properties':{},'required':['ghost']}}"

static const char clean[] = "{'tools':[" GOOD("search") "," GOOD("fetch") "]}";
static const char broken[] =
	"{'tools':[" GOOD("search") "," NODESC("nodesc") "," BADREQ("ghosty") "],"
	"'nextCursorX':1,'_meta':{'keep':'me'}}";

/* ---- tests ------------------------------------------------------------------ */

static void test_report_mode_clean(void **state)
{
	(void)state;
	struct fx *f = fx_new(NULL);
	assert_null(hook_contract_report(f->proc.contract, "a"));
	expect_forwarded(exchange(f, "s1", NULL, clean), clean);
	json_t *r = report(f, "a");
	assert_true(json_is_true(json_object_get(r, "passed")));
	assert_true(json_is_true(json_object_get(r, "complete")));
	assert_string_equal(json_string_value(json_object_get(r, "mode")), "report");
	assert_string_equal(json_string_value(json_object_get(r, "action")), "forwarded");
	assert_string_equal(json_string_value(json_object_get(r, "era")), "2025-11-25");
	assert_int_equal(json_array_size(json_object_get(r, "tools")), 2);
	assert_true(json_is_array(json_object_get(r, "changes")));
	assert_true(json_real_value(json_object_get(r, "score")) == 1.0);
	json_decref(r);
	struct hook_contract_stats st;
	hook_contract_get_stats(f->proc.contract, &st);
	assert_int_equal(st.pages, 1);
	assert_int_equal(st.listings, 1);
	assert_int_equal(st.listings_failed, 0);
	fx_free(f);
}

static void test_report_mode_broken_forwarded(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'report'}");
	expect_forwarded(exchange(f, "s1", NULL, broken), broken);
	json_t *r = report(f, "a");
	assert_false(json_is_true(json_object_get(r, "passed")));
	char *d = json_dumps(r, 0);
	assert_non_null(strstr(d, "description-missing"));
	assert_non_null(strstr(d, "/tools/1/description"));
	assert_non_null(strstr(d, "required-unknown"));
	free(d);
	assert_true(json_real_value(json_object_get(r, "score")) < 0.34);
	json_decref(r);
	struct hook_contract_stats st;
	hook_contract_get_stats(f->proc.contract, &st);
	assert_int_equal(st.listings_failed, 1);
	assert_int_equal(st.replies_failed, 0);
	fx_free(f);
}

static void test_off_mode_checks_nothing(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'off'}");
	expect_forwarded(exchange(f, "s1", NULL, broken), broken);
	assert_null(hook_contract_report(f->proc.contract, "a"));
	struct hook_contract_stats st;
	hook_contract_get_stats(f->proc.contract, &st);
	assert_int_equal(st.pages, 0);
	assert_int_equal(st.listings, 0);
	/* Upstream "b" (report by default) is still checked. */
	expect_forwarded(exchange_ex(f, "b", "s1", "2025-11-25", NULL, broken, NULL), broken);
	json_t *r = report(f, "b");
	assert_false(json_is_true(json_object_get(r, "passed")));
	json_decref(r);
	fx_free(f);
}

static void test_filter_mode_withholds_broken_tools(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'filter'}");
	struct sent s = exchange(f, "s1", NULL, broken);
	assert_int_equal(s.v, INSPECT_FORWARD);
	assert_true(s.modified);
	json_t *res = json_object_get(s.msg, "result");
	json_t *tools = json_object_get(res, "tools");
	assert_int_equal(json_array_size(tools), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")),
	                    "search");
	/* Every other member crosses untouched. */
	assert_string_equal(json_string_value(json_object_get(json_object_get(res, "_meta"), "keep")),
	                    "me");
	assert_int_equal(json_integer_value(json_object_get(res, "nextCursorX")), 1);
	json_decref(s.msg);
	json_t *r = report(f, "a");
	assert_string_equal(json_string_value(json_object_get(r, "action")), "filtered");
	json_t *fl = json_object_get(r, "filtered");
	assert_int_equal(json_array_size(fl), 2);
	assert_string_equal(json_string_value(json_array_get(fl, 0)), "nodesc");
	json_decref(r);
	/* A clean listing is not re-serialised. */
	expect_forwarded(exchange(f, "s1", NULL, clean), clean);
	struct hook_contract_stats st;
	hook_contract_get_stats(f->proc.contract, &st);
	assert_int_equal(st.tools_filtered, 2);
	fx_free(f);
}

static void test_fail_mode_answers_error(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'fail'}");
	struct sent s = exchange(f, "s1", NULL, broken);
	json_t *data = json_deep_copy(json_object_get(json_object_get(s.msg, "error"), "data"));
	char *msg = expect_failed(s, "description-missing");
	assert_non_null(strstr(msg, "required-unknown"));
	assert_non_null(strstr(msg, "nodesc"));
	assert_non_null(strstr(msg, "ghosty"));
	assert_non_null(strstr(msg, "upstream a"));
	free(msg);
	assert_string_equal(json_string_value(json_object_get(data, "upstream")), "a");
	assert_int_equal(json_integer_value(json_object_get(data, "nproblems")), 2);
	json_t *p0 = json_array_get(json_object_get(data, "problems"), 0);
	assert_string_equal(json_string_value(json_object_get(p0, "pointer")), "/tools/1/description");
	assert_string_equal(json_string_value(json_object_get(p0, "tool")), "nodesc");
	assert_string_equal(json_string_value(json_object_get(p0, "rule")), "usability");
	json_decref(data);
	/* A clean listing passes untouched in fail mode. */
	expect_forwarded(exchange(f, "s1", NULL, clean), clean);
	struct hook_contract_stats st;
	hook_contract_get_stats(f->proc.contract, &st);
	assert_int_equal(st.replies_failed, 1);
	fx_free(f);
}

static void test_other_messages_ignored(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'fail'}");
	struct inspect_where w = {.upstream = "a", .session_id = "s1"};
	json_t *req = th_json("{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'x'}}");
	json_t *resp = th_json("{'jsonrpc':'2.0','id':1,'result':{'tools':[]}}");
	struct inspect_msg m = {.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT, .msg = resp,
	                        .request = req, .where = &w};
	inspect_message(f->ctx.insp, &m);
	assert_false(m.modified);
	/* tools/list answered with an error: not a listing. */
	json_t *lreq = th_json("{'jsonrpc':'2.0','id':2,'method':'tools/list'}");
	json_t *eresp = th_json("{'jsonrpc':'2.0','id':2,'error':{'code':-32601,'message':'no'}}");
	struct inspect_msg me = {.dir = INSPECT_FROM_SERVER, .kind = JRPC_ERROR, .msg = eresp,
	                         .request = lreq, .where = &w};
	inspect_message(f->ctx.insp, &me);
	assert_false(me.modified);
	/* A response with no request in the exchange (GET stream): unknown. */
	json_t *lresp = th_json("{'jsonrpc':'2.0','id':3,'result':{'tools':[]}}");
	struct inspect_msg mo = {.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT, .msg = lresp,
	                         .request = NULL, .where = &w};
	inspect_message(f->ctx.insp, &mo);
	assert_false(mo.modified);
	/* An upstream the hook does not know. */
	struct inspect_where wx = {.upstream = "zz"};
	struct inspect_msg mx = {.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT, .msg = lresp,
	                         .request = lreq, .where = &wx};
	inspect_message(f->ctx.insp, &mx);
	assert_false(mx.modified);
	assert_null(hook_contract_report(f->proc.contract, "a"));
	json_decref(req);
	json_decref(resp);
	json_decref(lreq);
	json_decref(eresp);
	json_decref(lresp);
	fx_free(f);
}

/* Pages of one listing: a duplicate across pages is caught on the page
 * that repeats the name, with a pointer into the array of pages. */
static void test_pages_checked_together(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'fail'}");
	const char p1[] = "{'tools':[" GOOD("alpha") "],'nextCursor':'c1'}";
	const char p2[] = "{'tools':[" GOOD("beta") "],'nextCursor':'c2'}";
	const char p3[] = "{'tools':[" GOOD("alpha") "]}";
	expect_forwarded(exchange(f, "s1", NULL, p1), p1);
	expect_forwarded(exchange(f, "s1", "c1", p2), p2);
	struct sent s = exchange(f, "s1", "c2", p3);
	json_t *e = json_deep_copy(json_object_get(s.msg, "error"));
	free(expect_failed(s, "duplicate-name"));
	char *d = json_dumps(json_object_get(e, "data"), 0);
	assert_non_null(strstr(d, "/2/tools/0/name"));
	free(d);
	json_decref(e);
	/* The same pages, each as its own listing (no cursor: page one of a
	 * new listing), pass. */
	expect_forwarded(exchange(f, "s1", NULL, "{'tools':[" GOOD("alpha") "]}"),
	                 "{'tools':[" GOOD("alpha") "]}");
	fx_free(f);
}

/* Filter mode drops the later duplicate and keeps the first. */
static void test_filter_duplicate_across_pages(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'filter'}");
	const char p1[] = "{'tools':[" GOOD("alpha") "],'nextCursor':'c1'}";
	const char p2[] = "{'tools':[" GOOD("alpha") "," GOOD("gamma") "]}";
	expect_forwarded(exchange(f, "s1", NULL, p1), p1);
	struct sent s = exchange(f, "s1", "c1", p2);
	assert_true(s.modified);
	json_t *tools = json_object_get(json_object_get(s.msg, "result"), "tools");
	assert_int_equal(json_array_size(tools), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")),
	                    "gamma");
	json_decref(s.msg);
	json_t *r = report(f, "a");
	assert_int_equal(json_integer_value(json_object_get(r, "pages")), 2);
	assert_true(json_is_true(json_object_get(r, "complete")));
	json_decref(r);
	fx_free(f);
}

/* An empty first page is no "no-tools" while more pages come; an empty
 * complete listing is. */
static void test_no_tools_only_when_complete(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'fail'}");
	const char p1[] = "{'tools':[],'nextCursor':'c1'}";
	const char p2[] = "{'tools':[" GOOD("alpha") "]}";
	expect_forwarded(exchange(f, "s1", NULL, p1), p1);
	json_t *r = report(f, "a");
	assert_false(json_is_true(json_object_get(r, "complete")));
	assert_true(json_is_true(json_object_get(r, "truncated")));
	json_decref(r);
	expect_forwarded(exchange(f, "s1", "c1", p2), p2);
	free(expect_failed(exchange(f, "s1", NULL, "{'tools':[]}"), "no-tools"));
	fx_free(f);
}

static void test_cursor_loop_report(void **state)
{
	(void)state;
	struct fx *f = fx_new(NULL);
	const char p1[] = "{'tools':[" GOOD("alpha") "],'nextCursor':'x'}";
	const char p2[] = "{'tools':[" GOOD("beta") "],'nextCursor':'x'}";
	expect_forwarded(exchange(f, "s1", NULL, p1), p1);
	expect_forwarded(exchange(f, "s1", "x", p2), p2);
	json_t *r = report(f, "a");
	assert_true(report_has(r, "problems", "cursor-loop", NULL));
	assert_false(json_is_true(json_object_get(r, "passed")));
	assert_false(json_is_true(json_object_get(r, "complete")));
	json_decref(r);
	/* The client keeps paging in the circle: forwarded, not re-checked. */
	expect_forwarded(exchange(f, "s1", "x", p2), p2);
	expect_forwarded(exchange(f, "s1", "x", p2), p2);
	struct hook_contract_stats st;
	hook_contract_get_stats(f->proc.contract, &st);
	assert_int_equal(st.pages, 2);
	fx_free(f);
}

static void test_cursor_loop_fail_and_filter(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		struct fx *f = fx_new(mode ? "{'mode':'filter'}" : "{'mode':'fail'}");
		const char p1[] = "{'tools':[" GOOD("alpha") "],'nextCursor':'x'}";
		const char p2[] = "{'tools':[" GOOD("beta") "],'nextCursor':'y'}";
		const char p3[] = "{'tools':[" GOOD("gamma") "],'nextCursor':'x'}";
		expect_forwarded(exchange(f, "s1", NULL, p1), p1);
		expect_forwarded(exchange(f, "s1", "x", p2), p2);
		free(expect_failed(exchange(f, "s1", "y", p3), "cursor-loop"));
		/* Paging on keeps failing: the listing stays cut. */
		free(expect_failed(exchange(f, "s1", "x", p2), "cursor-loop"));
		fx_free(f);
	}
}

/* 20 pages are checked; the 21st is not: forwarded in report mode,
 * refused in fail mode. */
static void test_page_cap(void **state)
{
	(void)state;
	for (int fail_mode = 0; fail_mode < 2; fail_mode++) {
		struct fx *f = fx_new(fail_mode ? "{'mode':'fail'}" : NULL);
		char page[512], cur[16], next[16];
		for (int i = 0; i < 21; i++) {
			snprintf(cur, sizeof(cur), "c%d", i);
			snprintf(next, sizeof(next), "c%d", i + 1);
			char name[16];
			snprintf(name, sizeof(name), "t%d", i);
			snprintf(page, sizeof(page),
			         "{'tools':[{'name':'%s','description':'A perfectly fine tool',"
			         "'inputSchema':{'type':'object'}}],'nextCursor':'%s'}",
			         name, next);
			struct sent s = exchange(f, "s1", i ? cur : NULL, page);
			if (i < 20) {
				expect_forwarded(s, page);
			} else if (fail_mode) {
				free(expect_failed(s, "listing-too-long"));
			} else {
				expect_forwarded(s, page);
			}
		}
		json_t *r = report(f, "a");
		assert_int_equal(json_integer_value(json_object_get(r, "pages")), 20);
		assert_false(json_is_true(json_object_get(r, "complete")));
		json_decref(r);
		struct hook_contract_stats st;
		hook_contract_get_stats(f->proc.contract, &st);
		assert_int_equal(st.pages, 20);
		fx_free(f);
	}
}

/* Listings of two sessions, or two upstreams, never mix. */
static void test_sessions_apart(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'fail'}");
	const char p1[] = "{'tools':[" GOOD("alpha") "],'nextCursor':'c1'}";
	const char p2[] = "{'tools':[" GOOD("alpha") "]}";
	expect_forwarded(exchange(f, "s1", NULL, p1), p1);
	/* Session s2 asks with the same cursor: not s1's listing, so alpha is
	 * no duplicate (an orphan page, checked on its own). */
	expect_forwarded(exchange(f, "s2", "c1", p2), p2);
	json_t *r = report(f, "a");
	assert_false(json_is_true(json_object_get(r, "complete")));
	json_decref(r);
	/* Upstream b (report mode) with the same cursor: its own. */
	expect_forwarded(exchange_ex(f, "b", "s1", NULL, "c1", p2, NULL), p2);
	/* s1 itself continues and catches the duplicate. */
	free(expect_failed(exchange(f, "s1", "c1", p2), "duplicate-name"));
	fx_free(f);
}

static void test_sessionless_by_cursor(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'fail'}");
	const char p1[] = "{'tools':[" GOOD("alpha") "],'nextCursor':'k1'}";
	const char p2[] = "{'tools':[" GOOD("alpha") "]}";
	expect_forwarded(exchange_ex(f, "a", NULL, "2025-11-25", NULL, p1, NULL), p1);
	free(expect_failed(exchange_ex(f, "a", NULL, "2025-11-25", "k1", p2, NULL), "duplicate-name"));
	fx_free(f);
}

/* The 2026-07-28 era comes from the header or from the request's _meta. */
static void test_era(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'fail'}");
	/* No era: era-independent checks only; a plain listing passes. */
	expect_forwarded(exchange_ex(f, "a", NULL, NULL, NULL, clean, NULL), clean);
	free(expect_failed(exchange_ex(f, "a", NULL, "2026-07-28", NULL, clean, NULL),
	                   "result-type-missing"));
	free(expect_failed(exchange_ex(f, "a", NULL, NULL, NULL, clean, "2026-07-28"),
	                   "cache-fields-missing"));
	const char modern[] = "{'resultType':'complete','ttlMs':0,'cacheScope':'private','tools':["
	                      GOOD("alpha") "]}";
	expect_forwarded(exchange_ex(f, "a", NULL, NULL, NULL, modern, "2026-07-28"), modern);
	json_t *r = report(f, "a");
	assert_string_equal(json_string_value(json_object_get(r, "era")), "2026-07-28");
	json_decref(r);
	fx_free(f);
}

static void test_spec_only(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'fail','spec_only':true}");
	/* description-missing and required-unknown are usability rules. */
	expect_forwarded(exchange(f, "s1", NULL, broken), broken);
	json_t *r = report(f, "a");
	assert_true(json_is_true(json_object_get(r, "passed")));
	assert_true(json_is_true(json_object_get(r, "spec_only")));
	json_decref(r);
	/* A spec violation still fails. */
	free(expect_failed(exchange(f, "s1", NULL, "{'tools':[{'name':'x','description':'fine "
	                                           "enough text'}]}"),
	                   "input-schema-missing"));
	fx_free(f);
}

/* ---- baselines ---------------------------------------------------------------- */

#define WITHP(n, extra)                                                                       \
	"{'name':'" n "','description':'A perfectly fine tool for tests',"                    \
	"'inputSchema':{'type':'object','properties':{'q':{'type':'string',"                  \
	"'description':'the query'}" extra "}}}"

static struct fx *fx_baseline(const char *mode, const char *baseline)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	const char *file = temp_file(f, baseline);
	char conf[256];
	snprintf(conf, sizeof(conf), "{'mode':'%s','baseline':'%s'}", mode, file);
	if (fx_setup(f, th_json(conf)) != 0)
		fail_msg("setup: %s", f->err);
	return f;
}

static const char base3[] = "{'tools':[" WITHP("alpha", ",'n':{'type':'integer','description':'n'}")
                            "," WITHP("beta", "") "," WITHP("gamma", "") "]}";

static void test_baseline_fail(void **state)
{
	(void)state;
	struct fx *f = fx_baseline("fail", base3);
	/* alpha lost parameter n: breaking. */
	const char now[] = "{'tools':[" WITHP("alpha", "") "," WITHP("beta", "") "," WITHP("gamma", "")
	                   "]}";
	struct sent s = exchange(f, "s1", NULL, now);
	json_t *e = json_deep_copy(json_object_get(s.msg, "error"));
	char *msg = expect_failed(s, "param-removed");
	assert_non_null(strstr(msg, "alpha"));
	free(msg);
	json_t *c0 = json_array_get(json_object_get(json_object_get(e, "data"), "changes"), 0);
	assert_string_equal(json_string_value(json_object_get(c0, "kind")), "breaking");
	assert_string_equal(json_string_value(json_object_get(c0, "pointer")),
	                    "/tools/0/inputSchema/properties/n");
	json_decref(e);
	/* The baseline itself passes; a notice alone passes too. */
	expect_forwarded(exchange(f, "s1", NULL, base3), base3);
	const char added[] = "{'tools':[" WITHP("alpha", ",'n':{'type':'integer','description':'n'}")
	                     "," WITHP("beta", "") "," WITHP("gamma", "") "," WITHP("delta", "")
	                     "]}";
	expect_forwarded(exchange(f, "s1", NULL, added), added);
	json_t *r = report(f, "a");
	assert_true(report_has(r, "changes", "tool-added", NULL));
	assert_int_equal(json_integer_value(json_object_get(r, "breaking")), 0);
	assert_true(json_is_true(json_object_get(r, "passed")));
	json_decref(r);
	fx_free(f);
}

/* tool-removed waits for the last page: gamma may come on page two. */
static void test_baseline_tool_removed_at_end(void **state)
{
	(void)state;
	struct fx *f = fx_baseline("fail", base3);
	const char p1[] = "{'tools':[" WITHP("alpha", ",'n':{'type':'integer','description':'n'}")
	                  "],'nextCursor':'c1'}";
	const char p2[] = "{'tools':[" WITHP("beta", "") "],'nextCursor':'c2'}";
	const char p3[] = "{'tools':[" WITHP("gamma", "") "]}";
	const char p3bad[] = "{'tools':[" WITHP("delta", "") "]}";
	expect_forwarded(exchange(f, "s1", NULL, p1), p1);
	expect_forwarded(exchange(f, "s1", "c1", p2), p2);
	expect_forwarded(exchange(f, "s1", "c2", p3), p3);
	expect_forwarded(exchange(f, "s2", NULL, p1), p1);
	expect_forwarded(exchange(f, "s2", "c1", p2), p2);
	char *msg = expect_failed(exchange(f, "s2", "c2", p3bad), "tool-removed");
	assert_non_null(strstr(msg, "gamma"));
	free(msg);
	fx_free(f);
}

static void test_baseline_filter(void **state)
{
	(void)state;
	struct fx *f = fx_baseline("filter", base3);
	/* beta gains a required parameter; gamma becomes destructive. */
	const char now[] =
	        "{'tools':[" WITHP("alpha", ",'n':{'type':'integer','description':'n'}") ","
	        "{'name':'beta','description':'A perfectly fine tool for tests','inputSchema':"
	        "{'type':'object','properties':{'q':{'type':'string','description':'the query'}},"
	        "'required':['q']}}," WITHP("gamma", "") "]}";
	struct sent s = exchange(f, "s1", NULL, now);
	assert_true(s.modified);
	json_t *tools = json_object_get(json_object_get(s.msg, "result"), "tools");
	assert_int_equal(json_array_size(tools), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 1), "name")),
	                    "gamma");
	json_decref(s.msg);
	json_t *r = report(f, "a");
	assert_true(report_has(r, "changes", "param-now-required", NULL));
	assert_string_equal(json_string_value(json_array_get(json_object_get(r, "filtered"), 0)),
	                    "beta");
	json_decref(r);
	fx_free(f);
}

static void test_baseline_hint_weakened_fail(void **state)
{
	(void)state;
	const char base[] = "{'tools':[{'name':'ro','description':'A perfectly fine tool',"
	                    "'inputSchema':{'type':'object'},'annotations':{'readOnlyHint':true}}]}";
	const char now[] = "{'tools':[{'name':'ro','description':'A perfectly fine tool',"
	                   "'inputSchema':{'type':'object'},'annotations':{'readOnlyHint':false}}]}";
	struct fx *f = fx_baseline("fail", base);
	free(expect_failed(exchange(f, "s1", NULL, now), "hint-weakened"));
	fx_free(f);
}

/* ---- configuration ----------------------------------------------------------- */

static void expect_setup_error(const char *conf, const char *want)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(fx_setup(f, th_json(conf)), -1);
	if (!strstr(f->err, want))
		fail_msg("error \"%s\" lacks \"%s\"", f->err, want);
	assert_null(f->proc.contract);
	inspect_free(f->ctx.insp);
	json_decref(f->ups[0].contract);
	free(f);
}

static void test_config_errors(void **state)
{
	(void)state;
	expect_setup_error("{'mode':'block'}",
	                   "$.upstreams[0].contract.mode: must be report, filter, fail or off");
	expect_setup_error("{'mode':3}", "$.upstreams[0].contract.mode: must be report");
	expect_setup_error("{'spec_only':'yes'}",
	                   "$.upstreams[0].contract.spec_only: must be true or false");
	expect_setup_error("{'basline':'x'}", "$.upstreams[0].contract.basline: unknown key");
	expect_setup_error("{'baseline':''}", "$.upstreams[0].contract.baseline: must be a file name");
	expect_setup_error("{'baseline':'/nonexistent/base.json'}",
	                   "$.upstreams[0].contract.baseline: ");
	/* Every error at once. */
	expect_setup_error("{'mode':'x','spec_only':1}", "spec_only: must be true or false");

	struct fx *f = calloc(1, sizeof(*f));
	const char *file = temp_file(f, "{'not':'tools'}");
	char conf[256];
	snprintf(conf, sizeof(conf), "{'baseline':'%s'}", file);
	assert_int_equal(fx_setup(f, th_json(conf)), -1);
	assert_non_null(strstr(f->err, "holds no tool list"));
	inspect_free(f->ctx.insp);
	json_decref(f->ups[0].contract);
	unlink(file);
	free(f);

	f = calloc(1, sizeof(*f));
	file = temp_file(f, "{'tools': [ ");
	snprintf(conf, sizeof(conf), "{'baseline':'%s'}", file);
	assert_int_equal(fx_setup(f, th_json(conf)), -1);
	assert_non_null(strstr(f->err, file));
	inspect_free(f->ctx.insp);
	json_decref(f->ups[0].contract);
	unlink(file);
	free(f);
}

static void test_reports_json(void **state)
{
	(void)state;
	struct fx *f = fx_new(NULL);
	uint64_t calls = published(f->proc.contract, "b");
	expect_forwarded(exchange_ex(f, "b", "s9", "2025-06-18", NULL, clean, NULL), clean);
	/* Published for readers too. */
	assert_int_equal(published(f->proc.contract, "b"), calls + 1);
	assert_int_equal(published(f->proc.contract, "a"), 0);
	struct hook_contract_published pub;
	hook_contract_published(f->proc.contract, "b", &pub);
	assert_true(pub.time_us > 0);
	assert_string_equal(json_string_value(json_object_get(pub.report, "upstream")), "b");
	assert_true(json_is_true(json_object_get(pub.report, "passed")));
	json_decref(pub.report);
	json_t *all = hook_contract_reports(f->proc.contract);
	assert_true(json_is_null(json_object_get(all, "a")));
	json_t *b = json_object_get(all, "b");
	assert_string_equal(json_string_value(json_object_get(b, "upstream")), "b");
	assert_true(json_is_null(json_object_get(b, "baseline")));
	assert_non_null(json_string_value(json_object_get(b, "time")));
	/* The session id is never part of a report. */
	char *d = json_dumps(all, 0);
	assert_null(strstr(d, "s9"));
	free(d);
	json_decref(all);
	assert_null(hook_contract_report(f->proc.contract, "nope"));
	fx_free(f);
}

/* Listings in progress are bounded; the oldest go first. */
static void test_bounded_listings(void **state)
{
	(void)state;
	struct fx *f = fx_new(NULL);
	const char p1[] = "{'tools':[" GOOD("alpha") "],'nextCursor':'c1'}";
	char sid[32];
	for (int i = 0; i < HOOK_CONTRACT_MAX_LISTINGS + 44; i++) {
		snprintf(sid, sizeof(sid), "session-%d", i);
		expect_forwarded(exchange(f, sid, NULL, p1), p1);
	}
	struct hook_contract_stats st;
	hook_contract_get_stats(f->proc.contract, &st);
	assert_int_equal(st.evicted, 44);
	fx_free(f);
	/* An evicted listing's next page is checked on its own. */
	f = fx_new("{'mode':'fail'}");
	expect_forwarded(exchange(f, "first", NULL, p1), p1);
	for (int i = 0; i < HOOK_CONTRACT_MAX_LISTINGS; i++) {
		snprintf(sid, sizeof(sid), "session-%d", i);
		expect_forwarded(exchange(f, sid, NULL, p1), p1);
	}
	const char p2[] = "{'tools':[" GOOD("alpha") "]}";
	expect_forwarded(exchange(f, "first", "c1", p2), p2);
	fx_free(f);
}

/* ---- unchanged lists: the kept verdict --------------------------------------- */

/* A tools/list exchange whose reply carries its result's text as it
 * arrived (result_raw), as transport_http hands JSON replies over. The
 * text is `raw` when given (so that equal values may differ in bytes),
 * else the compact form of result. */
static struct sent exchange_raw(struct fx *f, const char *sid, const char *protocol,
                                const char *result, const char *raw)
{
	static json_int_t next_id = 5000;
	json_int_t id = next_id++;
	json_t *req = json_pack("{s:s,s:I,s:s,s:{}}", "jsonrpc", "2.0", "id", id, "method",
	                        "tools/list", "params");
	json_t *res = th_json(result);
	char *text = raw ? strdup(raw) : json_dumps(res, JSON_COMPACT);
	json_t *resp = json_pack("{s:s,s:I,s:o}", "jsonrpc", "2.0", "id", id, "result", res);
	struct inspect_where w = {.conn_id = 7, .upstream = "a", .session_id = sid,
	                          .protocol = protocol, .http_method = "POST"};
	struct inspect_msg mc = {.dir = INSPECT_FROM_CLIENT, .kind = JRPC_REQUEST, .msg = req,
	                         .request = req, .where = &w};
	inspect_message(f->ctx.insp, &mc);
	struct inspect_msg m = {.dir = INSPECT_FROM_SERVER, .kind = jrpc_classify(resp), .msg = resp,
	                        .request = req, .where = &w, .result_raw = text,
	                        .result_raw_len = strlen(text)};
	struct sent out;
	out.v = inspect_message(f->ctx.insp, &m);
	out.modified = m.modified;
	out.msg = resp;
	json_object_del(resp, "id"); /* ids differ from call to call; the rest must not */
	free(text);
	json_decref(req);
	return out;
}

static struct hook_contract_stats stats_of(struct fx *f)
{
	struct hook_contract_stats st;
	hook_contract_get_stats(f->proc.contract, &st);
	return st;
}

/* The second listing of the same bytes is answered from the kept verdict:
 * the same reply and report, the counters as for a check. */
static void expect_replayed_twice(const char *mode, const char *list, int modified,
                                  uint64_t filtered_each, uint64_t failed_each)
{
	char conf[64];
	snprintf(conf, sizeof(conf), "{'mode':'%s'}", mode);
	struct fx *f = fx_new(conf);
	struct sent a = exchange_raw(f, "s1", "2025-11-25", list, NULL);
	json_t *ra = report(f, "a");
	uint64_t calls = published(f->proc.contract, "a");
	struct sent b = exchange_raw(f, "s2", "2025-11-25", list, NULL);
	json_t *rb = report(f, "a");

	struct hook_contract_stats st = stats_of(f);
	assert_int_equal(st.replayed, 1);
	assert_int_equal(st.pages, 2);
	assert_int_equal(st.listings, 2);
	assert_int_equal(st.tools_filtered, 2 * filtered_each);
	assert_int_equal(st.replies_failed, 2 * failed_each);
	assert_int_equal(a.modified, modified);
	assert_int_equal(b.modified, modified);
	if (!json_equal(a.msg, b.msg)) {
		char *x = json_dumps(a.msg, 0), *y = json_dumps(b.msg, 0);
		fail_msg("replayed reply differs:\n%s\n%s", x, y);
	}
	/* Published again, equal but for its time. */
	assert_int_equal(published(f->proc.contract, "a"), calls + 1);
	json_object_del(ra, "time");
	json_object_del(rb, "time");
	assert_true(json_equal(ra, rb));
	json_decref(ra);
	json_decref(rb);
	json_decref(a.msg);
	json_decref(b.msg);
	fx_free(f);
}

/* An unchanged listing asked for without a tree (inspect_listing_fast):
 * passes when the kept verdict forwarded it unchanged, replaying what a
 * parsed replay does (counters, report); refused when the verdict changed
 * the reply, for other bytes, or in another era. */
static int fast_again(struct fx *f, const char *list, const char *protocol)
{
	json_t *req = json_pack("{s:s,s:i,s:s,s:{}}", "jsonrpc", "2.0", "id", 1, "method",
	                        "tools/list", "params");
	json_t *res = th_json(list);
	char *text = json_dumps(res, JSON_COMPACT);
	struct inspect_where w = {.conn_id = 8, .upstream = "a", .session_id = "s3",
	                          .protocol = protocol, .http_method = "POST"};
	struct inspect_listing l = {.where = &w, .request = req, .raw = text, .len = strlen(text)};
	int ok = inspect_listing_fast(f->ctx.insp, &l, NULL);
	free(text);
	json_decref(res);
	json_decref(req);
	return ok;
}

static void expect_fast(const char *mode, const char *list, int want)
{
	char conf[64];
	snprintf(conf, sizeof(conf), "{'mode':'%s'}", mode);
	struct fx *f = fx_new(conf);
	assert_false(fast_again(f, list, "2025-11-25")); /* nothing kept yet */
	struct sent a = exchange_raw(f, "s1", "2025-11-25", list, NULL);
	json_decref(a.msg);
	uint64_t calls = published(f->proc.contract, "a");
	struct hook_contract_stats before = stats_of(f);
	assert_int_equal(fast_again(f, list, "2025-11-25"), want);
	struct hook_contract_stats st = stats_of(f);
	assert_int_equal(st.replayed, want ? 1 : 0);
	assert_int_equal(st.listings, before.listings + (want ? 1 : 0));
	assert_int_equal(published(f->proc.contract, "a"), calls + (want ? 1 : 0));
	/* Another era: checked again, parsed. */
	assert_false(fast_again(f, list, "2026-07-28"));
	fx_free(f);
}

static void test_unchanged_list_fast(void **state)
{
	(void)state;
	expect_fast("report", clean, 1);
	expect_fast("report", broken, 1);
	expect_fast("filter", clean, 1);
	expect_fast("filter", broken, 0); /* tools withheld: the tree is changed */
	expect_fast("fail", clean, 1);
	expect_fast("fail", broken, 0);   /* an error in place of the result */
	/* off checks nothing: every listing may pass */
	struct fx *f = fx_new("{'mode':'off'}");
	assert_true(fast_again(f, clean, NULL));
	fx_free(f);
}

static void test_unchanged_list_replayed_report(void **state)
{
	(void)state;
	expect_replayed_twice("report", clean, 0, 0, 0);
	expect_replayed_twice("report", broken, 0, 0, 0);
}

static void test_unchanged_list_replayed_filter(void **state)
{
	(void)state;
	/* Two of three tools withheld, each time. */
	expect_replayed_twice("filter", broken, 1, 2, 0);
	expect_replayed_twice("filter", clean, 0, 0, 0);
}

static void test_unchanged_list_replayed_fail(void **state)
{
	(void)state;
	expect_replayed_twice("fail", broken, 1, 0, 1);
}

/* Only the same bytes, in the same era, with their text known, replay;
 * pages of a longer listing are always checked. */
static void test_changed_list_checked(void **state)
{
	(void)state;
	struct fx *f = fx_new("{'mode':'filter'}");
	json_decref(exchange_raw(f, "s1", "2025-11-25", broken, NULL).msg);
	/* The same value in other bytes. */
	json_t *v = th_json(broken);
	char *spaced = json_dumps(v, JSON_INDENT(1));
	json_decref(v);
	struct sent s = exchange_raw(f, "s1", "2025-11-25", broken, spaced);
	free(spaced);
	assert_true(s.modified);
	json_decref(s.msg);
	/* Another era. */
	json_decref(exchange_raw(f, "s1", "2025-06-18", broken, NULL).msg);
	assert_int_equal(stats_of(f).replayed, 0);
	/* No text from the transport. */
	json_decref(exchange(f, "s1", NULL, broken).msg);
	assert_int_equal(stats_of(f).replayed, 0);
	assert_int_equal(stats_of(f).pages, 4);
	/* A page that more pages follow is never remembered. */
	const char *first = "{'tools':[" GOOD("one") "],'nextCursor':'c2'}";
	json_decref(exchange_raw(f, "s3", "2025-11-25", first, NULL).msg);
	json_decref(exchange(f, "s3", "c2", clean).msg);
	json_decref(exchange_raw(f, "s3", "2025-11-25", first, NULL).msg);
	assert_int_equal(stats_of(f).replayed, 0);
	/* The last one-page list checked (the 2025-06-18 one: pages of longer
	 * listings and lists without text left it alone) replays; another
	 * one replaces it. */
	json_decref(exchange_raw(f, "s4", "2025-06-18", broken, NULL).msg);
	assert_int_equal(stats_of(f).replayed, 1);
	json_decref(exchange_raw(f, "s5", "2025-11-25", broken, NULL).msg);
	assert_int_equal(stats_of(f).replayed, 1);
	json_decref(exchange_raw(f, "s5", "2025-11-25", broken, NULL).msg);
	assert_int_equal(stats_of(f).replayed, 2);
	json_decref(exchange_raw(f, "s4", "2025-06-18", broken, NULL).msg);
	assert_int_equal(stats_of(f).replayed, 2);
	fx_free(f);
}

/* A list that changed since the last one is checked incrementally (the
 * upstream's memo): the reply and the report must be those of a hook that
 * never saw the earlier lists, in every mode. */
static void test_changed_list_same_as_fresh(void **state)
{
	(void)state;
	static const char *const lists[] = {
		"{'tools':[" GOOD("search") "," NODESC("nodesc") "," BADREQ("bad") "]}",
		"{'tools':[" GOOD("search") "," NODESC("nodesc") "," GOOD("bad") "]}",
		/* Same lengths, edits far apart (the kept text is patched). */
		"{'tools':[" GOOD("searcH") "," NODESC("nodesc") "," GOOD("bad") "]}",
		"{'tools':[" GOOD("searcH") "," NODESC("nodesX") "," GOOD("baD") "]}",
		"{'tools':[" GOOD("search") "," NODESC("nodesX") "," GOOD("baD") "]}",
		"{'tools':[" GOOD("fetch") "," GOOD("search") "," NODESC("nodesc") "," GOOD("bad") "]}",
		"{'tools':[" GOOD("search") "," GOOD("search") "," NODESC("nodesc") "]}",
		"{'tools':[" NODESC("nodesc") "," GOOD("search") "]}",
		"{'tools':[" NODESC("nodesc") "," GOOD("search") "],'_meta':{'x':1}}",
		"{'tools':[]}",
		"{'tools':[" GOOD("search") "]}",
	};
	static const char *const modes[] = {"{'mode':'report'}", "{'mode':'filter'}",
	                                    "{'mode':'fail'}"};
	/* Through the memo: one tool changed, one tool checked. */
	struct fx *f = fx_new("{'mode':'report'}");
	json_decref(exchange_raw(f, "s1", "2025-11-25", lists[0], NULL).msg);
	assert_int_equal(stats_of(f).tools_checked, 3);
	json_decref(exchange_raw(f, "s1", "2025-11-25", lists[1], NULL).msg);
	assert_int_equal(stats_of(f).tools_checked, 4);
	json_decref(exchange_raw(f, "s1", "2025-11-25", lists[5], NULL).msg);
	assert_int_equal(stats_of(f).tools_checked, 5);
	/* Without the text from the transport: the whole list. */
	json_decref(exchange(f, "s1", NULL, lists[5]).msg);
	assert_int_equal(stats_of(f).tools_checked, 9);
	fx_free(f);

	for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
		struct fx *warm = fx_new(modes[k]);
		for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
			struct fx *fresh = fx_new(modes[k]);
			struct sent a = exchange_raw(warm, "s1", "2025-11-25", lists[i], NULL);
			struct sent b = exchange_raw(fresh, "s1", "2025-11-25", lists[i], NULL);
			assert_int_equal(a.v, b.v);
			assert_int_equal(a.modified, b.modified);
			assert_true(json_equal(a.msg, b.msg));
			json_t *ra = hook_contract_report(warm->proc.contract, "a");
			json_t *rb = hook_contract_report(fresh->proc.contract, "a");
			json_object_del(ra, "time");
			json_object_del(rb, "time");
			assert_true(json_equal(ra, rb));
			json_decref(ra);
			json_decref(rb);
			json_decref(a.msg);
			json_decref(b.msg);
			fx_free(fresh);
		}
		fx_free(warm);
	}
}

/* ---- live baselines (issue 21): accept, reload, the gate ------------------------ */

static enum hook_contract_gate gate_of(struct fx *f, const char *up, int *can_accept)
{
	struct hook_contract_published pub;
	hook_contract_published(f->proc.contract, up, &pub);
	json_decref(pub.report);
	if (can_accept)
		*can_accept = pub.can_accept;
	return pub.gate;
}

static const char now3[] = "{'tools':[" WITHP("alpha", "") "," WITHP("beta", "") "," WITHP("gamma", "")
                           "]}";

/* Nothing to accept before a complete listing; an unknown upstream. */
static void test_accept_needs_a_listing(void **state)
{
	(void)state;
	struct fx *f = fx_baseline("fail", base3);
	struct hook_contract_accepted out;
	char err[256];
	int can = 1;
	assert_int_equal(gate_of(f, "a", &can), HOOK_CONTRACT_GATE_UNKNOWN);
	assert_false(can);
	assert_int_equal(hook_contract_accept(f->proc.contract, "a", "t", NULL, &out, err, sizeof(err)),
	                 HOOK_CONTRACT_ACCEPT_NO_LISTING);
	assert_int_equal(hook_contract_accept(f->proc.contract, "zz", "t", NULL, &out, err, sizeof(err)),
	                 HOOK_CONTRACT_ACCEPT_UNKNOWN);
	/* a first page of several is no complete listing either */
	struct sent s = exchange(f, "s1", NULL, "{'tools':[" WITHP("alpha", "") "],'nextCursor':'c1'}");
	json_decref(s.msg);
	assert_int_equal(hook_contract_accept(f->proc.contract, "a", "t", NULL, &out, err, sizeof(err)),
	                 HOOK_CONTRACT_ACCEPT_NO_LISTING);
	fx_free(f);
}

/* The digest of the listing an accept would take: none before a listing;
 * the same twice (kept); naming another digest is STALE and changes
 * nothing; naming this one accepts. */
static void test_accept_names_the_listing(void **state)
{
	(void)state;
	struct fx *f = fx_baseline("fail", base3);
	struct hook_contract_accepted out;
	char err[256], hex[BASELINE_STORE_DIGEST_HEX], again[BASELINE_STORE_DIGEST_HEX];
	assert_int_equal(hook_contract_listing_digest(f->proc.contract, "a", hex), 0);
	assert_int_equal(hook_contract_listing_digest(f->proc.contract, "zz", hex), 0);
	free(expect_failed(exchange(f, "s1", NULL, now3), "param-removed"));
	assert_int_equal(hook_contract_listing_digest(f->proc.contract, "a", hex), 1);
	assert_int_equal(strlen(hex), 64);
	assert_int_equal(hook_contract_listing_digest(f->proc.contract, "a", again), 1);
	assert_string_equal(hex, again);
	char other[BASELINE_STORE_DIGEST_HEX];
	memset(other, '0', 64);
	other[64] = '\0';
	assert_int_equal(hook_contract_accept(f->proc.contract, "a", "t", other, &out, err, sizeof(err)),
	                 HOOK_CONTRACT_ACCEPT_STALE);
	assert_non_null(strstr(err, hex));
	assert_int_equal(gate_of(f, "a", NULL), HOOK_CONTRACT_GATE_FAILING);
	assert_int_equal(hook_contract_accept(f->proc.contract, "a", "t", hex, &out, err, sizeof(err)),
	                 HOOK_CONTRACT_ACCEPTED);
	assert_int_equal(gate_of(f, "a", NULL), HOOK_CONTRACT_GATE_PASSING);
	fx_free(f);
}

/* A breaking change fails; accepting it rewrites the file, passes the
 * gate at once (the report judged again) and the next listing too. */
static void test_accept_makes_the_listing_the_baseline(void **state)
{
	(void)state;
	struct fx *f = fx_baseline("fail", base3);
	struct hook_contract_accepted out;
	char err[256];
	free(expect_failed(exchange(f, "s1", NULL, now3), "param-removed"));
	assert_int_equal(gate_of(f, "a", NULL), HOOK_CONTRACT_GATE_FAILING);
	assert_int_equal(hook_contract_accept(f->proc.contract, "a", "127.0.0.1:9 (test)", NULL, &out, err,
	                                      sizeof(err)),
	                 HOOK_CONTRACT_ACCEPTED);
	assert_int_equal(out.ntools, 3);
	assert_string_equal(out.file, f->files[0]);
	int can = 0;
	assert_int_equal(gate_of(f, "a", &can), HOOK_CONTRACT_GATE_PASSING);
	assert_true(can);
	json_t *r = report(f, "a");
	assert_true(json_is_true(json_object_get(r, "passed")));
	assert_int_equal(json_array_size(json_object_get(r, "changes")), 0);
	assert_string_equal(json_string_value(json_object_get(r, "rejudged")), "accept");
	json_decref(r);
	struct hook_contract_published pub;
	hook_contract_published(f->proc.contract, "a", &pub);
	json_decref(pub.report);
	assert_string_equal(pub.accepted_by, "127.0.0.1:9 (test)");
	assert_true(pub.accepted_us > 0);
	assert_int_equal(pub.baseline_tools, 3);
	/* the file holds the accepted listing */
	json_t *file = json_load_file(f->files[0], 0, NULL);
	json_t *want = th_json(now3);
	assert_true(json_equal(file, want));
	json_decref(file);
	json_decref(want);
	/* the next listing (same bytes: the kept verdict was dropped) passes */
	expect_forwarded(exchange(f, "s2", NULL, now3), now3);
	/* and it is the baseline now: a tool gone from it breaks */
	free(expect_failed(exchange(f, "s2", NULL, "{'tools':[" WITHP("alpha", "") "," WITHP("beta", "")
	                                              "]}"),
	                   "tool-removed"));
	fx_free(f);
}

/* A file that cannot be written changes nothing: the old baseline stays
 * in force and the gate keeps failing. */
static void test_accept_write_fails(void **state)
{
	(void)state;
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	char dir[] = "/tmp/test_hook_contract_dXXXXXX", file[64], conf[256];
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/b.json", dir);
	char *q = th_quotes(base3);
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	fputs(q, fp);
	fclose(fp);
	free(q);
	snprintf(conf, sizeof(conf), "{'mode':'fail','baseline':'%s'}", file);
	if (fx_setup(f, th_json(conf)) != 0)
		fail_msg("setup: %s", f->err);
	free(expect_failed(exchange(f, "s1", NULL, now3), "param-removed"));
	/* its directory is gone: no temporary file can be made beside it */
	unlink(file);
	rmdir(dir);
	struct hook_contract_accepted out;
	char err[256];
	assert_int_equal(hook_contract_accept(f->proc.contract, "a", "t", NULL, &out, err, sizeof(err)),
	                 HOOK_CONTRACT_ACCEPT_FAILED);
	assert_non_null(strstr(err, "cannot create a temporary file"));
	assert_int_equal(gate_of(f, "a", NULL), HOOK_CONTRACT_GATE_FAILING);
	free(expect_failed(exchange(f, "s1", NULL, now3), "param-removed"));
	fx_free(f);
}

/* SIGHUP: a changed baseline file takes effect at once (the latest
 * listing judged again); a bad one is refused; an accepted baseline
 * without a file survives. */
static void test_reload_baseline(void **state)
{
	(void)state;
	struct fx *f = fx_baseline("fail", base3);
	expect_forwarded(exchange(f, "s1", NULL, base3), base3);
	assert_int_equal(gate_of(f, "a", NULL), HOOK_CONTRACT_GATE_PASSING);
	/* the same file, now a baseline the listing breaks (delta is gone) */
	char *q = th_quotes("{'tools':[" WITHP("alpha", ",'n':{'type':'integer','description':'n'}")
	                    "," WITHP("beta", "") "," WITHP("gamma", "") "," WITHP("delta", "") "]}");
	FILE *fp = fopen(f->files[0], "w");
	assert_non_null(fp);
	fputs(q, fp);
	fclose(fp);
	free(q);
	struct px_config next = f->cfg;
	struct px_upstream_conf ups[2];
	memcpy(ups, f->ups, sizeof(ups));
	ups[0].contract = json_deep_copy(f->ups[0].contract);
	next.ups = ups;
	struct hook_contract_staged *st = hook_contract_stage(&next, f->err, sizeof(f->err));
	assert_non_null(st);
	hook_contract_commit(f->proc.contract, st);
	assert_int_equal(gate_of(f, "a", NULL), HOOK_CONTRACT_GATE_FAILING);
	json_t *r = report(f, "a");
	assert_string_equal(json_string_value(json_object_get(r, "rejudged")), "reload");
	assert_true(report_has(r, "changes", "tool-removed", NULL));
	json_decref(r);
	free(expect_failed(exchange(f, "s1", NULL, base3), "tool-removed"));
	/* a bad file: refused, nothing staged */
	fp = fopen(f->files[0], "w");
	assert_non_null(fp);
	fputs("{\"tools\": [ nope", fp);
	fclose(fp);
	assert_null(hook_contract_stage(&next, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "$.upstreams[0].contract.baseline: "));
	hook_contract_free(f->proc.contract);
	f->proc.contract = NULL;
	json_decref(ups[0].contract);
	inspect_free(f->ctx.insp);
	f->ctx.insp = NULL;
	json_decref(f->ups[0].contract);
	f->ups[0].contract = NULL;
	for (int i = 0; i < f->nfiles; i++)
		unlink(f->files[i]);
	free(f);

	/* no file: accepted in memory, kept across a reload of the same section */
	f = fx_new("{'mode':'fail'}");
	expect_forwarded(exchange(f, "s1", NULL, base3), base3);
	struct hook_contract_accepted out;
	char err[256];
	assert_int_equal(hook_contract_accept(f->proc.contract, "a", "t", NULL, &out, err, sizeof(err)),
	                 HOOK_CONTRACT_ACCEPTED);
	assert_null(out.file);
	struct px_config next2 = f->cfg;
	struct px_upstream_conf ups2[2];
	memcpy(ups2, f->ups, sizeof(ups2));
	ups2[0].contract = th_json("{'mode':'report'}");
	next2.ups = ups2;
	st = hook_contract_stage(&next2, f->err, sizeof(f->err));
	assert_non_null(st);
	hook_contract_commit(f->proc.contract, st);
	struct sent s = exchange(f, "s1", NULL, now3); /* report mode: forwarded, but breaking */
	assert_false(s.modified);
	json_decref(s.msg);
	assert_int_equal(gate_of(f, "a", NULL), HOOK_CONTRACT_GATE_FAILING);
	hook_contract_free(f->proc.contract);
	f->proc.contract = NULL;
	json_decref(ups2[0].contract);
	fx_free(f);
}

/* Workers list while the admin thread accepts and SIGHUP commits: the
 * thread sanitizer build (make tsan) sees every access under the lock. */
struct lister {
	struct fx *f;
	int n;
};

static void *list_loop(void *arg)
{
	struct lister *l = arg;
	for (int i = 0; i < l->n; i++) {
		struct sent s = exchange(l->f, "s9", NULL, i % 2 ? base3 : now3);
		json_decref(s.msg);
	}
	return NULL;
}

static void test_accept_while_listing(void **state)
{
	(void)state;
	struct fx *f = fx_baseline("filter", base3);
	struct lister l = {f, 200};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, list_loop, &l), 0);
	struct px_config next = f->cfg;
	struct px_upstream_conf ups[2];
	memcpy(ups, f->ups, sizeof(ups));
	ups[0].contract = json_deep_copy(f->ups[0].contract);
	next.ups = ups;
	for (int i = 0; i < 50; i++) {
		struct hook_contract_accepted out;
		char err[256];
		hook_contract_accept(f->proc.contract, "a", "t", NULL, &out, err, sizeof(err));
		struct hook_contract_published pub;
		hook_contract_published(f->proc.contract, "a", &pub);
		json_decref(pub.report);
		struct hook_contract_staged *st = hook_contract_stage(&next, f->err, sizeof(f->err));
		if (st)
			hook_contract_commit(f->proc.contract, st);
	}
	pthread_join(t, NULL);
	hook_contract_free(f->proc.contract);
	f->proc.contract = NULL;
	json_decref(ups[0].contract);
	fx_free(f);
}

int main(void)
{
	log_setup(LOG_ERROR, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_mode_clean),
		cmocka_unit_test(test_report_mode_broken_forwarded),
		cmocka_unit_test(test_off_mode_checks_nothing),
		cmocka_unit_test(test_filter_mode_withholds_broken_tools),
		cmocka_unit_test(test_fail_mode_answers_error),
		cmocka_unit_test(test_other_messages_ignored),
		cmocka_unit_test(test_pages_checked_together),
		cmocka_unit_test(test_filter_duplicate_across_pages),
		cmocka_unit_test(test_no_tools_only_when_complete),
		cmocka_unit_test(test_cursor_loop_report),
		cmocka_unit_test(test_cursor_loop_fail_and_filter),
		cmocka_unit_test(test_page_cap),
		cmocka_unit_test(test_sessions_apart),
		cmocka_unit_test(test_sessionless_by_cursor),
		cmocka_unit_test(test_era),
		cmocka_unit_test(test_spec_only),
		cmocka_unit_test(test_baseline_fail),
		cmocka_unit_test(test_baseline_tool_removed_at_end),
		cmocka_unit_test(test_baseline_filter),
		cmocka_unit_test(test_baseline_hint_weakened_fail),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_reports_json),
		cmocka_unit_test(test_bounded_listings),
		cmocka_unit_test(test_unchanged_list_replayed_report),
		cmocka_unit_test(test_unchanged_list_fast),
		cmocka_unit_test(test_unchanged_list_replayed_filter),
		cmocka_unit_test(test_unchanged_list_replayed_fail),
		cmocka_unit_test(test_changed_list_checked),
		cmocka_unit_test(test_changed_list_same_as_fresh),
		cmocka_unit_test(test_accept_needs_a_listing),
		cmocka_unit_test(test_accept_names_the_listing),
		cmocka_unit_test(test_accept_makes_the_listing_the_baseline),
		cmocka_unit_test(test_accept_write_fails),
		cmocka_unit_test(test_reload_baseline),
		cmocka_unit_test(test_accept_while_listing),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	return rc;
}

/* Unit tests for proxy/hooks/tools.c, through the public API only: the tracker
 * is attached to a real message hook (inspect_new) and fed the messages
 * the proxy would hand it, so the observer path is the one under test.
 *
 * Why this file is long (over 800 lines): one test per behaviour of the
 * tracker (pages, cursors, caps, raw listings, listings sharing values),
 * all driven through the same hook fixture and page builders; split, the
 * halves would each carry that fixture again.
 *
 * JSON is written with ' for " (th_json()).
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

#include "proxy/ctx.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/hooks/tools.h"
#include "tests/unit/helpers.h"

/* ---- helpers ---------------------------------------------------------------- */

struct fx {
	struct inspect *in;
	struct tools *tc;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->in = inspect_new();
	f->tc = tools_new(0);
	assert_non_null(f->in);
	assert_non_null(f->tc);
	assert_int_equal(tools_attach(f->tc, f->in), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	inspect_free(f->in);
	tools_free(f->tc);
	free(f);
	return 0;
}

/* Hands one message to the hook as the adapter does, then drops it (the
 * cache must keep what it needs by reference). request may be NULL. */
static void feed(struct inspect *in, const char *upstream, enum inspect_dir dir,
                 const char *request, const char *msg)
{
	struct inspect_where where = {.upstream = upstream};
	json_t *req = request ? th_json(request) : NULL;
	json_t *m = th_json(msg);
	struct inspect_msg im = {
		.dir = dir,
		.kind = jrpc_classify(m),
		.msg = m,
		.request = dir == INSPECT_FROM_CLIENT ? m : req,
		.where = &where,
	};
	assert_int_equal(inspect_message(in, &im), INSPECT_FORWARD);
	json_decref(im.answer);
	json_decref(m);
	json_decref(req);
}

#define LIST_REQ      "{'jsonrpc':'2.0','id':1,'method':'tools/list','params':{}}"
#define LIST_REQ_AT(c) "{'jsonrpc':'2.0','id':2,'method':'tools/list','params':{'cursor':'" c "'}}"

static const char *tool_json(char *buf, size_t cap, const char *name, const char *header)
{
	snprintf(buf, cap,
	         "{'name':'%s','inputSchema':{'type':'object','properties':{'r':{'type':'string',"
	         "'x-mcp-header':'%s'}}}}", name, header);
	return buf;
}

/* A tools/list result page with the named tools (comma-separated) and an
 * optional nextCursor. */
static void page(struct inspect *in, const char *upstream, const char *request, const char *names,
                 const char *next)
{
	char text[16384], tb[256];
	size_t o = (size_t)snprintf(text, sizeof(text),
	                            "{'jsonrpc':'2.0','id':1,'result':{'resultType':'complete',"
	                            "'ttlMs':0,'cacheScope':'private','tools':[");
	char list[1024];
	snprintf(list, sizeof(list), "%s", names);
	int first = 1;
	for (char *save, *n = strtok_r(list, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		o += (size_t)snprintf(text + o, sizeof(text) - o, "%s%s", first ? "" : ",",
		                      tool_json(tb, sizeof(tb), n, n));
		first = 0;
	}
	if (next)
		snprintf(text + o, sizeof(text) - o, "],'nextCursor':'%s'}}", next);
	else
		snprintf(text + o, sizeof(text) - o, "]}}");
	feed(in, upstream, INSPECT_FROM_SERVER, request, text);
}

static const char *header_of(const json_t *tool)
{
	return json_string_value(json_object_get(
		json_object_get(json_object_get(json_object_get(tool, "inputSchema"), "properties"), "r"),
		"x-mcp-header"));
}

/* tools_get returns a new reference; these tests only look at a tool
 * while the cache still holds it too. */
static const json_t *tget(struct tools *tc, const char *upstream, const char *tool)
{
	json_t *t = tools_get(tc, upstream, tool);
	json_decref(t);
	return t;
}

static struct tools_stats stats(struct tools *tc, const char *upstream)
{
	struct tools_stats s;
	assert_int_equal(tools_stats(tc, upstream, &s), 0);
	return s;
}

/* ---- tests ------------------------------------------------------------------- */

static void test_single_page(void **state)
{
	struct fx *f = *state;
	assert_null(tget(f->tc, "up", "a"));
	page(f->in, "up", LIST_REQ, "a,b", NULL);
	const json_t *a = tget(f->tc, "up", "a");
	assert_non_null(a);
	assert_string_equal(json_string_value(json_object_get(a, "name")), "a");
	assert_string_equal(header_of(a), "a");
	assert_non_null(tget(f->tc, "up", "b"));
	assert_null(tget(f->tc, "up", "c"));
	assert_null(tget(f->tc, "other", "a"));
	struct tools_stats s = stats(f->tc, "up");
	assert_int_equal(s.tools, 2);
	assert_int_equal(s.listings, 1);
	assert_int_equal(s.pages, 1);
	assert_false(s.listing);
	assert_false(s.stale);
	assert_int_equal(tools_stats(f->tc, "other", &s), -1);
}

static void test_pages_accumulate(void **state)
{
	struct fx *f = *state;
	page(f->in, "up", LIST_REQ, "a,b", "p2");
	/* A client may call a tool from page 1 before fetching page 2. */
	assert_non_null(tget(f->tc, "up", "a"));
	assert_true(stats(f->tc, "up").listing);
	page(f->in, "up", LIST_REQ_AT("p2"), "c", "p3");
	page(f->in, "up", LIST_REQ_AT("p3"), "d", NULL);
	for (const char *n = "abcd"; *n; n++) {
		char name[2] = {*n, 0};
		assert_non_null(tget(f->tc, "up", name));
	}
	struct tools_stats s = stats(f->tc, "up");
	assert_int_equal(s.tools, 4);
	assert_int_equal(s.pages, 3);
	assert_int_equal(s.listings, 1);
	assert_false(s.listing);
}

static void test_new_listing_replaces(void **state)
{
	struct fx *f = *state;
	page(f->in, "up", LIST_REQ, "a,b", NULL);
	/* While the next listing pages in, the old tools stay findable. */
	page(f->in, "up", LIST_REQ, "b,c", "p2");
	assert_non_null(tget(f->tc, "up", "a"));
	assert_non_null(tget(f->tc, "up", "c"));
	assert_int_equal(stats(f->tc, "up").tools, 3);
	page(f->in, "up", LIST_REQ_AT("p2"), "d", NULL);
	/* Now the new listing is the list: a is gone. */
	assert_null(tget(f->tc, "up", "a"));
	assert_non_null(tget(f->tc, "up", "b"));
	assert_non_null(tget(f->tc, "up", "d"));
	assert_int_equal(stats(f->tc, "up").tools, 3);
	assert_int_equal(stats(f->tc, "up").listings, 2);
}

static void test_definition_updates(void **state)
{
	struct fx *f = *state;
	page(f->in, "up", LIST_REQ, "a", NULL);
	feed(f->in, "up", INSPECT_FROM_SERVER, LIST_REQ,
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'a','inputSchema':{'type':'object',"
	     "'properties':{'r':{'type':'string','x-mcp-header':'Renamed'}}}}]}}");
	assert_string_equal(header_of(tget(f->tc, "up", "a")), "Renamed");
}

static void test_continuation_without_start_merges(void **state)
{
	struct fx *f = *state;
	page(f->in, "up", LIST_REQ, "a", NULL);
	/* mcpwarden restarted mid-listing, or missed page 1: the page is
	 * added to what is known, nothing is removed. */
	page(f->in, "up", LIST_REQ_AT("p2"), "b", NULL);
	assert_non_null(tget(f->tc, "up", "a"));
	assert_non_null(tget(f->tc, "up", "b"));
	assert_int_equal(stats(f->tc, "up").listings, 1);
	/* Also on an upstream never listed before. */
	page(f->in, "fresh", LIST_REQ_AT("p9"), "z", NULL);
	assert_non_null(tget(f->tc, "fresh", "z"));
}

static void test_list_changed_marks_stale(void **state)
{
	struct fx *f = *state;
	page(f->in, "up", LIST_REQ, "a", NULL);
	feed(f->in, "up", INSPECT_FROM_SERVER, NULL,
	     "{'jsonrpc':'2.0','method':'notifications/tools/list_changed','params':{'_meta':"
	     "{'io.modelcontextprotocol/subscriptionId':'listen:1'}}}");
	assert_true(stats(f->tc, "up").stale);
	/* Stale, but still the best knowledge. */
	assert_non_null(tget(f->tc, "up", "a"));
	/* Another upstream's notification is not this one's. */
	assert_int_equal(tools_stats(f->tc, "other", &(struct tools_stats){0}), -1);
	feed(f->in, "other", INSPECT_FROM_SERVER, NULL,
	     "{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
	assert_int_equal(tools_stats(f->tc, "other", &(struct tools_stats){0}), -1);
	/* A half-done listing does not make it fresh; a whole one does. */
	page(f->in, "up", LIST_REQ, "a,b", "p2");
	assert_true(stats(f->tc, "up").stale);
	page(f->in, "up", LIST_REQ_AT("p2"), "c", NULL);
	assert_false(stats(f->tc, "up").stale);
}

static void test_ignored_messages(void **state)
{
	struct fx *f = *state;
	page(f->in, "up", LIST_REQ, "a", NULL);
	/* An error answer to tools/list. */
	feed(f->in, "up", INSPECT_FROM_SERVER, LIST_REQ,
	     "{'jsonrpc':'2.0','id':1,'error':{'code':-32603,'message':'x'}}");
	/* A result answering something else. */
	feed(f->in, "up", INSPECT_FROM_SERVER,
	     "{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'x'}}",
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'evil','inputSchema':{}}]}}");
	/* A result whose request is unknown (not in this exchange). */
	feed(f->in, "up", INSPECT_FROM_SERVER, NULL,
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'evil','inputSchema':{}}]}}");
	/* Not a complete result. */
	feed(f->in, "up", INSPECT_FROM_SERVER, LIST_REQ,
	     "{'jsonrpc':'2.0','id':1,'result':{'resultType':'input_required','tools':[{'name':'evil'}]}}");
	/* The client's direction: a client cannot teach the cache. */
	feed(f->in, "up", INSPECT_FROM_CLIENT, NULL,
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'evil','inputSchema':{}}]}}");
	/* No upstream (a 404 path). */
	feed(f->in, NULL, INSPECT_FROM_SERVER, LIST_REQ,
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'evil','inputSchema':{}}]}}");
	/* Malformed pages. */
	feed(f->in, "up", INSPECT_FROM_SERVER, LIST_REQ,
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':{'evil':{}}}}");
	assert_null(tget(f->tc, "up", "evil"));
	assert_non_null(tget(f->tc, "up", "a"));
	assert_int_equal(stats(f->tc, "up").listings, 1);
	/* Members that are not tools are skipped, the rest kept. */
	feed(f->in, "up", INSPECT_FROM_SERVER, LIST_REQ,
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[42,{'name':''},{'name':7},{'title':'x'},"
	     "{'name':'ok','inputSchema':{'type':'object'}}]}}");
	assert_int_equal(stats(f->tc, "up").tools, 1);
	assert_non_null(tget(f->tc, "up", "ok"));
	/* An explicit null cursor starts a listing like an absent one. */
	feed(f->in, "up", INSPECT_FROM_SERVER,
	     "{'jsonrpc':'2.0','id':1,'method':'tools/list','params':{'cursor':null}}",
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'n'}]}}");
	assert_null(tget(f->tc, "up", "ok"));
	assert_non_null(tget(f->tc, "up", "n"));
}

static void test_references_kept(void **state)
{
	struct fx *f = *state;
	json_t *req = th_json(LIST_REQ);
	json_t *m = th_json("{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'a'}]}}");
	json_t *tool = json_array_get(json_object_get(json_object_get(m, "result"), "tools"), 0);
	struct inspect_where where = {.upstream = "up"};
	struct inspect_msg im = {.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT, .msg = m,
	                         .request = req, .where = &where};
	inspect_message(f->in, &im);
	/* Kept by reference, not copied. */
	assert_ptr_equal(tget(f->tc, "up", "a"), tool);
	json_decref(m);
	json_decref(req);
	/* Still valid after the message is gone (valgrind watches). */
	assert_string_equal(json_string_value(json_object_get(tget(f->tc, "up", "a"), "name")),
	                    "a");
}

static void test_cap_tools(void **state)
{
	(void)state;
	struct inspect *in = inspect_new();
	struct tools *tc = tools_new(3);
	assert_int_equal(tools_attach(tc, in), 0);
	page(in, "up", LIST_REQ, "a,b", "p2");
	page(in, "up", LIST_REQ_AT("p2"), "c,d,e", NULL);
	struct tools_stats s = stats(tc, "up");
	assert_int_equal(s.tools, 3);
	assert_int_equal(s.dropped, 2);
	assert_non_null(tget(tc, "up", "c"));
	assert_null(tget(tc, "up", "d"));
	assert_null(tget(tc, "up", "e"));
	/* At the cap, known names still update. */
	page(in, "up", LIST_REQ, "a,b,c,x", NULL);
	assert_int_equal(stats(tc, "up").tools, 3);
	assert_null(tget(tc, "up", "x"));
	assert_int_equal(stats(tc, "up").dropped, 3);
	/* A continuation at the cap adds nothing. */
	page(in, "up", LIST_REQ_AT("p9"), "y", NULL);
	assert_null(tget(tc, "up", "y"));
	inspect_free(in);
	tools_free(tc);
}

static void test_cap_upstreams(void **state)
{
	struct fx *f = *state;
	char name[32];
	for (int i = 0; i < TOOLS_MAX_UPSTREAMS; i++) {
		snprintf(name, sizeof(name), "up%d", i);
		page(f->in, name, LIST_REQ, "a", NULL);
	}
	page(f->in, "one-too-many", LIST_REQ, "a", NULL);
	assert_null(tget(f->tc, "one-too-many", "a"));
	assert_non_null(tget(f->tc, "up0", "a"));
	snprintf(name, sizeof(name), "up%d", TOOLS_MAX_UPSTREAMS - 1);
	assert_non_null(tget(f->tc, name, "a"));
}

static void test_null_arguments(void **state)
{
	(void)state;
	struct tools_stats s;
	assert_null(tget(NULL, "up", "a"));
	struct tools *tc = tools_new(0);
	assert_null(tget(tc, NULL, "a"));
	assert_null(tget(tc, "up", NULL));
	assert_int_equal(tools_stats(NULL, "up", &s), -1);
	assert_int_equal(tools_stats(tc, NULL, &s), -1);
	tools_free(tc);
	tools_free(NULL);
}

static enum inspect_verdict noop(void *arg, struct inspect_msg *m)
{
	(void)arg;
	(void)m;
	return INSPECT_FORWARD;
}

static void test_setup_on_ctx(void **state)
{
	(void)state;
	struct px_proc proc = {0};
	struct px_ctx ctx = {.proc = &proc};
	ctx.insp = inspect_new();
	struct tools *tc = tools_setup(&ctx, 0);
	assert_non_null(tc);
	page(ctx.insp, "up", LIST_REQ, "a", NULL);
	assert_non_null(tget(tc, "up", "a"));
	inspect_free(ctx.insp);
	tools_free(tc);

	/* No hook slot left: NULL, nothing leaked. */
	ctx.insp = inspect_new();
	for (int i = 0; i < INSPECT_MAX_HOOKS; i++)
		assert_true(inspect_add(ctx.insp, "filler", noop, NULL, NULL) >= 0);
	assert_null(tools_setup(&ctx, 0));
	inspect_free(ctx.insp);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

/* A one-page listing with the bytes the proxy kept (inspect_msg's
 * result_raw): the same bytes again change nothing but the counters, other
 * bytes replace the listing. */
static void feed_raw(struct inspect *in, const char *result_text)
{
	struct inspect_where where = {.upstream = "up"};
	json_t *req = th_json(LIST_REQ);
	char text[2048];
	snprintf(text, sizeof(text), "{'jsonrpc':'2.0','id':1,'result':%s}", result_text);
	json_t *m = th_json(text);
	char *raw = json_dumps(json_object_get(m, "result"), JSON_COMPACT);
	assert_non_null(raw);
	struct inspect_msg im = {
		.dir = INSPECT_FROM_SERVER, .kind = jrpc_classify(m), .msg = m, .request = req,
		.where = &where, .result_raw = raw, .result_raw_len = strlen(raw),
	};
	assert_int_equal(inspect_message(in, &im), INSPECT_FORWARD);
	free(raw);
	json_decref(m);
	json_decref(req);
}

static void test_same_bytes_keep_the_listing(void **state)
{
	struct fx *f = *state;
	char t1[256], t2[256];
	char r1[600], r2[600];
	snprintf(r1, sizeof(r1), "{'tools':[%s]}", tool_json(t1, sizeof(t1), "a", "One"));
	snprintf(r2, sizeof(r2), "{'tools':[%s]}", tool_json(t2, sizeof(t2), "a", "Two"));

	feed_raw(f->in, r1);
	assert_string_equal(header_of(tget(f->tc, "up", "a")), "One");
	const json_t *held = tget(f->tc, "up", "a");
	feed(f->in, "up", INSPECT_FROM_SERVER, NULL,
	     "{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
	assert_true(stats(f->tc, "up").stale);
	feed_raw(f->in, r1);
	struct tools_stats s = stats(f->tc, "up");
	assert_int_equal(s.listings, 2);
	assert_int_equal(s.pages, 2);
	assert_false(s.stale);
	/* not rebuilt: the very same tool object is still held */
	assert_ptr_equal(tget(f->tc, "up", "a"), held);
	feed_raw(f->in, r2);
	assert_string_equal(header_of(tget(f->tc, "up", "a")), "Two");
	assert_int_equal(stats(f->tc, "up").listings, 3);
	/* a paged listing forgets the bytes: the first listing's bytes again
	 * replace it */
	page(f->in, "up", LIST_REQ, "b", "c1");
	page(f->in, "up", LIST_REQ_AT("c1"), "a", NULL);
	feed_raw(f->in, r1);
	assert_string_equal(header_of(tget(f->tc, "up", "a")), "One");
	assert_null(tget(f->tc, "up", "b"));
}

/* The tracker's answer for an unchanged listing (inspect_listing_fast):
 * the bytes of the last one-page listing, unless a list_changed was heard
 * since; passing counts what the same bytes parsed would. */
static int fast(struct fx *f, const char *result_text)
{
	struct inspect_where where = {.upstream = "up"};
	json_t *req = th_json(LIST_REQ);
	json_t *r = th_json(result_text);
	char *raw = json_dumps(r, JSON_COMPACT);
	assert_non_null(raw);
	struct inspect_listing l = {.where = &where, .request = req, .raw = raw, .len = strlen(raw)};
	int ok = inspect_listing_fast(f->in, &l, NULL);
	free(raw);
	json_decref(r);
	json_decref(req);
	return ok;
}

/* tools_listing_serial names the bytes kept: the same for the same bytes,
 * another for other bytes, 0 for bytes not held. */
static uint64_t serial_of(struct fx *f, const char *result_text)
{
	json_t *r = th_json(result_text);
	char *raw = json_dumps(r, JSON_COMPACT);
	assert_non_null(raw);
	uint64_t s = tools_listing_serial(f->tc, "up", raw, strlen(raw), 0);
	free(raw);
	json_decref(r);
	return s;
}

static void test_listing_serial(void **state)
{
	struct fx *f = *state;
	char t1[256], t2[256];
	char r1[600], r2[600];
	snprintf(r1, sizeof(r1), "{'tools':[%s]}", tool_json(t1, sizeof(t1), "a", "One"));
	snprintf(r2, sizeof(r2), "{'tools':[%s]}", tool_json(t2, sizeof(t2), "a", "Two"));
	assert_int_equal(serial_of(f, r1), 0);
	feed_raw(f->in, r1);
	uint64_t s1 = serial_of(f, r1);
	assert_true(s1 != 0);
	assert_int_equal(serial_of(f, r2), 0);
	feed_raw(f->in, r1); /* the same bytes again: the same name */
	assert_int_equal(serial_of(f, r1), s1);
	feed_raw(f->in, r2);
	uint64_t s2 = serial_of(f, r2);
	assert_true(s2 != 0 && s2 != s1);
	assert_int_equal(serial_of(f, r1), 0);
	feed_raw(f->in, r1); /* back to the first bytes: a new name */
	assert_true(serial_of(f, r1) != s1);
	assert_int_equal(tools_listing_serial(f->tc, "other", "{}", 2, 0), 0);
}

static void test_unchanged_listing_fast(void **state)
{
	struct fx *f = *state;
	char t1[256], t2[256];
	char r1[600], r2[600];
	snprintf(r1, sizeof(r1), "{'tools':[%s]}", tool_json(t1, sizeof(t1), "a", "One"));
	snprintf(r2, sizeof(r2), "{'tools':[%s]}", tool_json(t2, sizeof(t2), "a", "Two"));
	/* Nothing kept yet: parsed. */
	assert_false(fast(f, r1));
	feed_raw(f->in, r1);
	const json_t *held = tget(f->tc, "up", "a");
	assert_true(fast(f, r1));
	struct tools_stats s = stats(f->tc, "up");
	assert_int_equal(s.listings, 2);
	assert_int_equal(s.pages, 2);
	assert_ptr_equal(tget(f->tc, "up", "a"), held);
	/* Other bytes: parsed. */
	assert_false(fast(f, r2));
	assert_int_equal(stats(f->tc, "up").listings, 2);
	/* A list_changed heard: the next listing is parsed (and the
	 * subscribers told), even with the same bytes. */
	feed(f->in, "up", INSPECT_FROM_SERVER, NULL,
	     "{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
	assert_false(fast(f, r1));
	feed_raw(f->in, r1);
	assert_true(fast(f, r1));
	assert_int_equal(stats(f->tc, "up").listings, 4);
}

/* Cursors followed from a listing's first page: one leading back to a
 * page already seen is a loop; the same page fetched again by a second
 * client is not. */
static void test_cursor_loop(void **state)
{
	struct fx *f = *state;
	page(f->in, "up", LIST_REQ, "a", "c1");
	page(f->in, "up", LIST_REQ_AT("c1"), "b", "c2");
	/* Another client fetching page 2 again: the same edge, no loop. */
	page(f->in, "up", LIST_REQ_AT("c1"), "b", "c2");
	assert_false(stats(f->tc, "up").looping);
	/* Page 3 leads back to page 2. */
	page(f->in, "up", LIST_REQ_AT("c2"), "c", "c1");
	struct tools_stats s = stats(f->tc, "up");
	assert_true(s.looping);
	assert_true(s.listing);
	assert_int_equal(s.loops, 1);
	assert_int_equal(s.listings, 0);
	/* Counted once per listing; its pages are still what lookups find. */
	page(f->in, "up", LIST_REQ_AT("c1"), "b", "c2");
	assert_int_equal(stats(f->tc, "up").loops, 1);
	assert_non_null(tget(f->tc, "up", "c"));
	assert_null(tools_listing(f->tc, "up", NULL));
	/* A new listing starts afresh. */
	page(f->in, "up", LIST_REQ, "a", "c1");
	assert_false(stats(f->tc, "up").looping);
	page(f->in, "up", LIST_REQ_AT("c1"), "b", NULL);
	s = stats(f->tc, "up");
	assert_false(s.looping);
	assert_int_equal(s.listings, 1);
	/* A cursor to itself on a listing's first continuation. */
	page(f->in, "self", LIST_REQ, "a", "c1");
	page(f->in, "self", LIST_REQ_AT("c1"), "b", "c1");
	assert_int_equal(stats(f->tc, "self").loops, 1);
}

/* changes counts listings with other tools than the one before, whatever
 * the path (one page with or without its bytes, pages, a merged page). */
static void test_changes(void **state)
{
	struct fx *f = *state;
	uint64_t changes = 99;
	assert_null(tools_listing(f->tc, "up", &changes));
	assert_int_equal(changes, 0);
	page(f->in, "up", LIST_REQ, "a,b", NULL);
	assert_int_equal(stats(f->tc, "up").changes, 1);
	page(f->in, "up", LIST_REQ, "a,b", NULL);
	assert_int_equal(stats(f->tc, "up").changes, 1);
	page(f->in, "up", LIST_REQ, "a", "p2");
	page(f->in, "up", LIST_REQ_AT("p2"), "b", NULL);
	assert_int_equal(stats(f->tc, "up").changes, 1);
	assert_int_equal(stats(f->tc, "up").listings, 3);
	page(f->in, "up", LIST_REQ, "a", NULL);
	assert_int_equal(stats(f->tc, "up").changes, 2);
	page(f->in, "up", LIST_REQ_AT("p2"), "a", NULL);
	assert_int_equal(stats(f->tc, "up").changes, 2);
	page(f->in, "up", LIST_REQ_AT("p2"), "z", NULL);
	assert_int_equal(stats(f->tc, "up").changes, 3);
	json_t *l = tools_listing(f->tc, "up", &changes);
	assert_non_null(l);
	assert_int_equal(changes, 3);
	assert_int_equal(json_object_size(l), 2);
	json_decref(l);
}

/* A listing handed out is never changed afterwards: later pages and
 * listings make new tables. */
static void test_listing_is_immutable(void **state)
{
	struct fx *f = *state;
	page(f->in, "up", LIST_REQ, "a", NULL);
	json_t *l = tools_listing(f->tc, "up", NULL);
	assert_non_null(l);
	page(f->in, "up", LIST_REQ_AT("p2"), "b", NULL);
	page(f->in, "up", LIST_REQ, "c", "p3");
	page(f->in, "up", LIST_REQ_AT("p3"), "d", NULL);
	assert_int_equal(json_object_size(l), 1);
	assert_non_null(json_object_get(l, "a"));
	json_decref(l);
	l = tools_listing(f->tc, "up", NULL);
	assert_int_equal(json_object_size(l), 2);
	assert_non_null(json_object_get(l, "d"));
	json_decref(l);
}

/* A hook after the tracker that withholds a tool (as the contract's
 * filter mode or a policy hide rule do): the tracker keeps what the
 * upstream listed. */
static enum inspect_verdict withhold_all(void *arg, struct inspect_msg *m)
{
	(void)arg;
	json_t *tools = json_object_get(json_object_get(m->msg, "result"), "tools");
	if (json_is_array(tools) && json_array_size(tools)) {
		json_array_clear(tools);
		m->modified = 1;
	}
	return INSPECT_FORWARD;
}

static void test_sees_the_upstream_listing(void **state)
{
	struct fx *f = *state;
	assert_true(inspect_add(f->in, "withhold", withhold_all, NULL, NULL) >= 0);
	page(f->in, "up", LIST_REQ, "a,b", NULL);
	assert_non_null(tget(f->tc, "up", "a"));
	assert_int_equal(stats(f->tc, "up").tools, 2);
}

/* Subscribers hear of every page (also one without its request, known by
 * its shape, which the tracker itself does not take in) and of every
 * list_changed; not of other results; no more once unsubscribed. */
struct heard {
	int pages, changed;
	size_t last_n;
	char upstream[16];
};

static void heard_page(void *arg, const char *upstream, const json_t *tools)
{
	struct heard *h = arg;
	h->pages++;
	h->last_n = json_array_size(tools);
	snprintf(h->upstream, sizeof(h->upstream), "%s", upstream);
}

static void heard_changed(void *arg, const char *upstream)
{
	struct heard *h = arg;
	h->changed++;
	snprintf(h->upstream, sizeof(h->upstream), "%s", upstream);
}

static const struct tools_events heard_events = {heard_page, heard_changed};

static void test_subscribers(void **state)
{
	struct fx *f = *state;
	struct heard h = {0};
	assert_int_equal(tools_subscribe(f->tc, &heard_events, &h), 0);
	page(f->in, "up", LIST_REQ, "a,b", "p2");
	page(f->in, "up", LIST_REQ_AT("p2"), "c", NULL);
	assert_int_equal(h.pages, 2);
	assert_int_equal(h.last_n, 1);
	assert_string_equal(h.upstream, "up");
	feed(f->in, "up", INSPECT_FROM_SERVER, NULL,
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'w','inputSchema':{}}]}}");
	assert_int_equal(h.pages, 3);
	assert_null(tget(f->tc, "up", "w"));
	/* Not listings: a tools member of another result, one without the
	 * shape, an error. */
	feed(f->in, "up", INSPECT_FROM_SERVER,
	     "{'jsonrpc':'2.0','id':1,'method':'prompts/list'}",
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'w','inputSchema':{}}]}}");
	feed(f->in, "up", INSPECT_FROM_SERVER, NULL,
	     "{'jsonrpc':'2.0','id':1,'result':{'tools':[{'name':'w'}]}}");
	feed(f->in, "up", INSPECT_FROM_SERVER, LIST_REQ,
	     "{'jsonrpc':'2.0','id':1,'error':{'code':-32603,'message':'x'}}");
	assert_int_equal(h.pages, 3);
	feed(f->in, "other", INSPECT_FROM_SERVER, NULL,
	     "{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
	assert_int_equal(h.changed, 1);
	assert_string_equal(h.upstream, "other");
	tools_unsubscribe(f->tc, &h);
	page(f->in, "up", LIST_REQ, "a", NULL);
	assert_int_equal(h.pages, 3);
	/* Bounded. */
	struct heard many[TOOLS_MAX_SUBSCRIBERS + 1];
	for (size_t i = 0; i < TOOLS_MAX_SUBSCRIBERS; i++)
		assert_int_equal(tools_subscribe(f->tc, &heard_events, &many[i]), 0);
	assert_int_equal(tools_subscribe(f->tc, &heard_events, &many[TOOLS_MAX_SUBSCRIBERS]), -1);
	assert_int_equal(tools_subscribe(NULL, &heard_events, &h), -1);
	tools_unsubscribe(NULL, &h);
}

/* ---- listings as the upstream sent them (tools_raw) -------------------------- */

static int raw_freed;

static void raw_user_free(void *u)
{
	raw_freed++;
	free(u);
}

static void test_raw_pages_continue_by_cursor_and_session(void **state)
{
	(void)state;
	struct tools_raw *r = tools_raw_new(8, 1 << 20, raw_user_free);
	json_t *p1 = th_json("{'tools':[{'name':'a'}],'nextCursor':'c1'}");
	json_t *p2 = th_json("{'tools':[{'name':'b'}]}");
	raw_freed = 0;
	assert_non_null(r);

	struct tools_raw_listing *l = tools_raw_begin(r, 0, "up", "s1", "2025-06-18", 0, malloc(1));
	assert_non_null(l);
	assert_int_equal(tools_raw_add(r, l, p1, 100, 0), 0);
	tools_raw_set_next(l, "c1");
	/* A page that more follow is a copy: later hooks may rewrite the message. */
	json_object_set_new(p1, "tools", json_array());
	assert_int_equal(json_array_size(json_object_get(json_array_get(tools_raw_pages(l), 0),
	                                                 "tools")), 1);
	/* Only the very cursor, in the same session and upstream, continues it. */
	assert_null(tools_raw_find(r, 0, "s1", NULL));
	assert_null(tools_raw_find(r, 0, "s1", "c2"));
	assert_null(tools_raw_find(r, 0, "s2", "c1"));
	assert_null(tools_raw_find(r, 1, "s1", "c1"));
	assert_ptr_equal(tools_raw_find(r, 0, "s1", "c1"), l);
	assert_int_equal(tools_raw_add(r, l, p2, 50, 1), 0);
	assert_int_equal(json_array_size(tools_raw_pages(l)), 2);
	assert_ptr_equal(json_array_get(tools_raw_pages(l), 1), p2); /* the last: by reference */
	assert_int_equal(tools_raw_bytes(l), 150);
	assert_string_equal(tools_raw_era(l), "2025-06-18");
	assert_int_equal(tools_raw_orphan(l), 0);
	assert_int_equal(tools_raw_upstream(l), 0);
	assert_non_null(tools_raw_user(l));
	tools_raw_remove(r, l);
	assert_int_equal(raw_freed, 1);
	assert_int_equal(tools_raw_evicted(r), 0);
	tools_raw_free(r);
	json_decref(p1);
	json_decref(p2);
}

static void test_raw_bounded_least_recently_used(void **state)
{
	(void)state;
	struct tools_raw *r = tools_raw_new(2, 1000, raw_user_free);
	json_t *p = th_json("{'tools':[],'nextCursor':'n'}");
	struct tools_raw_listing *l[3];
	char sid[8];
	raw_freed = 0;

	for (int i = 0; i < 3; i++) {
		snprintf(sid, sizeof(sid), "s%d", i);
		l[i] = tools_raw_begin(r, 0, "up", sid, NULL, 0, malloc(1));
		assert_int_equal(tools_raw_add(r, l[i], p, 10, 0), 0);
		tools_raw_set_next(l[i], "n");
		if (i == 1)
			assert_ptr_equal(tools_raw_find(r, 0, "s0", "n"), l[0]); /* s0 used again */
	}
	/* Three listings, two fit: s1, the least recently used, went. */
	assert_int_equal(tools_raw_evicted(r), 1);
	assert_int_equal(raw_freed, 1);
	assert_null(tools_raw_find(r, 0, "s1", "n"));
	assert_ptr_equal(tools_raw_find(r, 0, "s0", "n"), l[0]);
	/* Bytes: a page that fills the bound evicts the others, never its own. */
	assert_int_equal(tools_raw_add(r, l[2], p, 985, 0), 0);
	assert_int_equal(tools_raw_evicted(r), 2);
	assert_null(tools_raw_find(r, 0, "s0", "n"));
	assert_ptr_equal(tools_raw_find(r, 0, "s2", "n"), l[2]);
	/* Room for a listing that would have been added: the last one goes too. */
	tools_raw_make_room(r, 1, 100);
	assert_int_equal(tools_raw_evicted(r), 3);
	assert_null(tools_raw_find(r, 0, "s2", "n"));
	assert_int_equal(raw_freed, 3);
	tools_raw_free(r);
	tools_raw_free(NULL);
	json_decref(p);
}

/* ---- listings that share their unchanged tools -------------------------------
 *
 * A listing is handed over as jreuse builds it (proxy/base/jreuse.h): the
 * tools that did not change are the very values of the last listing. */

#define NSHARED 16

static json_t *stool(const char *name, const char *header)
{
	char buf[256];
	return th_json(tool_json(buf, sizeof(buf), name, header));
}

/* Lists vals[0..n) (borrowed) in one page, the values themselves. */
static void list_values(struct inspect *in, const char *upstream, json_t *const *vals, size_t n)
{
	json_t *tools = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append(tools, vals[i]);
	json_t *msg = json_pack("{s:s, s:i, s:{s:o}}", "jsonrpc", "2.0", "id", 1, "result", "tools",
	                        tools);
	json_t *req = th_json(LIST_REQ);
	struct inspect_where where = {.upstream = upstream};
	struct inspect_msg im = {
		.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT, .msg = msg, .request = req,
		.where = &where,
	};
	assert_int_equal(inspect_message(in, &im), INSPECT_FORWARD);
	json_decref(msg);
	json_decref(req);
}

static void shared_start(json_t **vals, const char *dup)
{
	for (size_t i = 0; i < NSHARED; i++) {
		char name[16];
		snprintf(name, sizeof(name), "t%zu", i);
		vals[i] = stool(i == 9 && dup ? dup : name, "H0");
	}
}

static void shared_free(json_t **vals)
{
	for (size_t i = 0; i < NSHARED; i++)
		json_decref(vals[i]);
}

/* One tool changes, the rest are the same values: the tracker finds the
 * new definition, counts a change, and a table handed out before stays
 * as it was. */
static void test_shared_one_changed(void **state)
{
	struct fx *f = *state;
	json_t *v[NSHARED];
	shared_start(v, NULL);
	list_values(f->in, "up", v, NSHARED);
	list_values(f->in, "up", v, NSHARED);
	assert_int_equal(stats(f->tc, "up").changes, 1);
	/* Nobody holds the table: the new tool is put in place. */
	json_decref(v[4]);
	v[4] = stool("t4", "H1");
	list_values(f->in, "up", v, NSHARED);
	assert_ptr_equal(tget(f->tc, "up", "t4"), v[4]);
	assert_string_equal(header_of(tget(f->tc, "up", "t4")), "H1");
	assert_int_equal(stats(f->tc, "up").changes, 2);
	assert_int_equal(stats(f->tc, "up").tools, NSHARED);
	/* An equal value is no change. */
	json_decref(v[4]);
	v[4] = stool("t4", "H1");
	list_values(f->in, "up", v, NSHARED);
	assert_int_equal(stats(f->tc, "up").changes, 2);
	assert_ptr_equal(tget(f->tc, "up", "t4"), v[4]);
	/* A reader holds the table: it keeps what it was handed. */
	json_t *held = tools_listing(f->tc, "up", NULL);
	json_t *was = v[7];
	json_incref(was);
	json_decref(v[7]);
	v[7] = stool("t7", "H2");
	list_values(f->in, "up", v, NSHARED);
	assert_ptr_equal(json_object_get(held, "t7"), was);
	assert_ptr_equal(tget(f->tc, "up", "t7"), v[7]);
	assert_int_equal(stats(f->tc, "up").changes, 3);
	json_decref(held);
	json_decref(was);
	shared_free(v);
}

/* A tool renamed in place: the old name is gone, the new one found. */
static void test_shared_renamed(void **state)
{
	struct fx *f = *state;
	json_t *v[NSHARED];
	shared_start(v, NULL);
	list_values(f->in, "up", v, NSHARED);
	json_decref(v[2]);
	v[2] = stool("renamed", "H0");
	list_values(f->in, "up", v, NSHARED);
	assert_null(tget(f->tc, "up", "t2"));
	assert_ptr_equal(tget(f->tc, "up", "renamed"), v[2]);
	assert_int_equal(stats(f->tc, "up").tools, NSHARED);
	shared_free(v);
}

/* Two tools of one name: the later one is the one kept, whichever of
 * them changes. */
static void test_shared_duplicate_names(void **state)
{
	struct fx *f = *state;
	json_t *v[NSHARED];
	shared_start(v, "t3"); /* position 9 is named t3 too */
	list_values(f->in, "up", v, NSHARED);
	assert_ptr_equal(tget(f->tc, "up", "t3"), v[9]);
	json_decref(v[3]);
	v[3] = stool("t3", "H5");
	list_values(f->in, "up", v, NSHARED);
	assert_ptr_equal(tget(f->tc, "up", "t3"), v[9]);
	assert_string_equal(header_of(tget(f->tc, "up", "t3")), "H0");
	/* The same value twice (one tool listed twice, byte for byte): its
	 * first place changing leaves the second in the table. */
	json_decref(v[9]);
	v[9] = json_incref(v[3]);
	list_values(f->in, "up", v, NSHARED);
	json_decref(v[3]);
	v[3] = stool("t3", "H6");
	list_values(f->in, "up", v, NSHARED);
	assert_ptr_equal(tget(f->tc, "up", "t3"), v[9]);
	assert_string_equal(header_of(tget(f->tc, "up", "t3")), "H5");
	shared_free(v);
}

/* After a paged listing the next one-page listing is read whole. */
static void test_shared_after_pages(void **state)
{
	struct fx *f = *state;
	json_t *v[NSHARED];
	shared_start(v, NULL);
	list_values(f->in, "up", v, NSHARED);
	page(f->in, "up", LIST_REQ, "a", "p2");
	page(f->in, "up", LIST_REQ_AT("p2"), "b", NULL);
	assert_null(tget(f->tc, "up", "t0"));
	json_decref(v[5]);
	v[5] = stool("t5", "H9");
	list_values(f->in, "up", v, NSHARED);
	assert_null(tget(f->tc, "up", "a"));
	assert_ptr_equal(tget(f->tc, "up", "t0"), v[0]);
	assert_string_equal(header_of(tget(f->tc, "up", "t5")), "H9");
	assert_int_equal(stats(f->tc, "up").tools, NSHARED);
	shared_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_single_page),
		T(test_pages_accumulate),
		T(test_new_listing_replaces),
		T(test_definition_updates),
		T(test_continuation_without_start_merges),
		T(test_list_changed_marks_stale),
		T(test_ignored_messages),
		T(test_references_kept),
		cmocka_unit_test(test_cap_tools),
		T(test_cap_upstreams),
		cmocka_unit_test(test_null_arguments),
		cmocka_unit_test(test_setup_on_ctx),
		cmocka_unit_test(test_raw_pages_continue_by_cursor_and_session),
		cmocka_unit_test(test_raw_bounded_least_recently_used),
		cmocka_unit_test_setup_teardown(test_unchanged_listing_fast, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listing_serial, setup, teardown),
		T(test_same_bytes_keep_the_listing),
		T(test_cursor_loop),
		T(test_changes),
		T(test_listing_is_immutable),
		T(test_sees_the_upstream_listing),
		T(test_subscribers),
		T(test_shared_one_changed),
		T(test_shared_renamed),
		T(test_shared_duplicate_names),
		T(test_shared_after_pages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

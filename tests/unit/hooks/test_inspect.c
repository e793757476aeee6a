/* Unit tests for proxy/hooks/inspect.c: the hook chain. Each test hook appends its
 * name to a shared trace (observers also the verdict they saw, "name=v"), so
 * a test states the order hooks ran in as a string ("a,b,obs=1,").
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

#include "proxy/hooks/inspect.h"

struct trace {
	char s[512];
};

struct hook {
	const char *name;
	struct trace *t;
	enum inspect_verdict verdict;
	int set_answer;      /* put an answer in m->answer before returning */
	int modify;          /* set m->modified */
	int observer;        /* trace the verdict seen too */
	int calls, exchanges;
	const struct inspect_exchange *last_x;
	const char *decided_by_seen;
};

static void trace_add(struct trace *t, const char *what)
{
	size_t n = strlen(t->s);
	snprintf(t->s + n, sizeof(t->s) - n, "%s,", what);
}

static enum inspect_verdict on_msg(void *arg, struct inspect_msg *m)
{
	struct hook *h = arg;
	h->calls++;
	if (h->observer) {
		char tmp[32];
		snprintf(tmp, sizeof(tmp), "%s=%d", h->name, (int)m->verdict);
		trace_add(h->t, tmp);
		h->decided_by_seen = m->decided_by;
	} else {
		trace_add(h->t, h->name);
	}
	if (h->modify)
		m->modified = 1;
	if (h->set_answer) {
		json_decref(m->answer);
		m->answer = json_pack("{s:s}", "by", h->name);
	}
	return h->verdict;
}

static void on_ex(void *arg, const struct inspect_exchange *x)
{
	struct hook *h = arg;
	h->exchanges++;
	h->last_x = x;
	trace_add(h->t, h->name);
}

struct fixture {
	struct inspect *in;
	struct trace t;
	struct hook h[20];
	json_t *msg;
	struct inspect_where where;
	struct inspect_msg m;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	static const char *const names[] = {"h0", "h1", "h2", "h3", "h4", "h5", "h6",
	                                    "h7", "h8", "h9", "h10", "h11", "h12", "h13",
	                                    "h14", "h15", "h16", "h17", "h18", "h19"};
	if (!f)
		return -1;
	f->in = inspect_new();
	if (!f->in)
		return -1;
	for (size_t i = 0; i < 20; i++) {
		f->h[i].name = names[i];
		f->h[i].t = &f->t;
	}
	f->msg = json_pack("{s:s,s:i,s:s}", "jsonrpc", "2.0", "id", 1, "method", "tools/list");
	f->where.conn_id = 7;
	f->where.client = "127.0.0.1:5555";
	f->where.upstream = "default";
	f->where.http_method = "POST";
	f->m.dir = INSPECT_FROM_CLIENT;
	f->m.kind = JRPC_REQUEST;
	f->m.msg = f->msg;
	f->m.request = f->msg;
	f->m.where = &f->where;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	inspect_free(f->in);
	json_decref(f->m.answer);
	json_decref(f->msg);
	free(f);
	return 0;
}

/* Registers h[i] as a deciding hook; returns its hook_data slot. */
static int add(struct fixture *f, size_t i)
{
	int slot = inspect_add(f->in, f->h[i].name, on_msg, on_ex, &f->h[i]);
	assert_true(slot >= 0 && slot < INSPECT_MAX_HOOKS);
	return slot;
}

static int add_observer(struct fixture *f, size_t i)
{
	f->h[i].observer = 1;
	int slot = inspect_add_observer(f->in, f->h[i].name, on_msg, on_ex, &f->h[i]);
	assert_true(slot >= 0 && slot < INSPECT_MAX_HOOKS);
	return slot;
}

static void test_empty_chain_forwards(void **state)
{
	struct fixture *f = *state;
	struct inspect_stats st;

	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_FORWARD);
	assert_null(f->m.decided_by);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.messages[INSPECT_FROM_CLIENT], 1);
	assert_int_equal(st.messages[INSPECT_FROM_SERVER], 0);
	assert_int_equal(st.dropped + st.answered + st.modified, 0);
	inspect_exchange_done(f->in, &(struct inspect_exchange){0});
}

static void test_hooks_run_in_order(void **state)
{
	struct fixture *f = *state;

	add(f, 2);
	add(f, 0);
	add(f, 1);
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_FORWARD);
	assert_string_equal(f->t.s, "h2,h0,h1,");
	assert_null(f->m.decided_by);
	f->t.s[0] = '\0';
	f->m.dir = INSPECT_FROM_SERVER;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_FORWARD);
	assert_string_equal(f->t.s, "h2,h0,h1,");

	struct inspect_stats st;
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.messages[INSPECT_FROM_CLIENT], 1);
	assert_int_equal(st.messages[INSPECT_FROM_SERVER], 1);
}

static void test_drop_stops_chain(void **state)
{
	struct fixture *f = *state;
	struct inspect_stats st;

	add(f, 0);
	add(f, 1);
	add(f, 2);
	f->h[1].verdict = INSPECT_DROP;
	f->h[1].set_answer = 1;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_DROP);
	assert_string_equal(f->t.s, "h0,h1,");
	assert_string_equal(f->m.decided_by, "h1");
	assert_int_equal(f->h[2].calls, 0);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.answered, 0);

	/* A drop needs no answer (a server->client message has nobody to answer). */
	f->t.s[0] = '\0';
	f->h[1].set_answer = 0;
	json_decref(f->m.answer);
	f->m.answer = NULL;
	f->m.decided_by = NULL;
	f->m.dir = INSPECT_FROM_SERVER;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_DROP);
	assert_string_equal(f->m.decided_by, "h1");
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.dropped, 2);
}

static void test_answer_stops_chain(void **state)
{
	struct fixture *f = *state;
	struct inspect_stats st;

	add(f, 0);
	add(f, 1);
	add(f, 2);
	f->h[0].verdict = INSPECT_ANSWER;
	f->h[0].set_answer = 1;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_ANSWER);
	assert_string_equal(f->t.s, "h0,");
	assert_string_equal(f->m.decided_by, "h0");
	assert_string_equal(json_string_value(json_object_get(f->m.answer, "by")), "h0");
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.answered, 1);
	assert_int_equal(st.dropped, 0);
}

/* An ANSWER without an answer is a hook bug; the chain goes on as if the
 * hook had said FORWARD. */
static void test_answer_without_answer_forwards(void **state)
{
	struct fixture *f = *state;
	struct inspect_stats st;

	add(f, 0);
	add(f, 1);
	f->h[0].verdict = INSPECT_ANSWER;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_FORWARD);
	assert_string_equal(f->t.s, "h0,h1,");
	assert_null(f->m.decided_by);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.answered, 0);

	/* And a later hook may still answer. */
	f->t.s[0] = '\0';
	f->h[1].verdict = INSPECT_ANSWER;
	f->h[1].set_answer = 1;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_ANSWER);
	assert_string_equal(f->m.decided_by, "h1");
}

static void test_modified_counted(void **state)
{
	struct fixture *f = *state;
	struct inspect_stats st;

	add(f, 0);
	add(f, 1);
	/* Two hooks modify the same message: one modified message. */
	f->h[0].modify = 1;
	f->h[1].modify = 1;
	inspect_message(f->in, &f->m);
	assert_int_equal(f->m.modified, 1);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.modified, 1);

	/* The next message, modified by the second hook only. */
	f->m.modified = 0;
	f->h[0].modify = 0;
	inspect_message(f->in, &f->m);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.modified, 2);

	/* Nobody touches the third. */
	f->m.modified = 0;
	f->h[1].modify = 0;
	inspect_message(f->in, &f->m);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.modified, 2);
	assert_int_equal(st.messages[INSPECT_FROM_CLIENT], 3);
}

/* A modifying hook that then drops: both counted. */
static void test_modified_then_dropped(void **state)
{
	struct fixture *f = *state;
	struct inspect_stats st;

	add(f, 0);
	f->h[0].modify = 1;
	f->h[0].verdict = INSPECT_DROP;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_DROP);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.modified, 1);
	assert_int_equal(st.dropped, 1);
}

static void test_exchange_done_reaches_all(void **state)
{
	struct fixture *f = *state;
	struct inspect_exchange x = {.where = &f->where, .status = 200, .latency_us = 5};

	add(f, 0);
	add_observer(f, 1);
	add(f, 2);
	/* A hook that dropped messages still hears about the exchange, and
	 * so does an observer, in registration order. */
	f->h[0].verdict = INSPECT_DROP;
	inspect_message(f->in, &f->m);
	f->t.s[0] = '\0';
	inspect_exchange_done(f->in, &x);
	assert_string_equal(f->t.s, "h0,h1,h2,");
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(f->h[i].exchanges, 1);
		assert_ptr_equal(f->h[i].last_x, &x);
	}
}

/* Either function of a hook may be NULL. */
static void test_null_functions(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(inspect_add(f->in, "msg-only", on_msg, NULL, &f->h[0]), 0);
	assert_int_equal(inspect_add(f->in, "ex-only", NULL, on_ex, &f->h[1]), 1);
	assert_int_equal(inspect_add(f->in, "none", NULL, NULL, NULL), 2);
	assert_int_equal(inspect_add_observer(f->in, "obs-none", NULL, NULL, NULL), 3);
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_FORWARD);
	assert_string_equal(f->t.s, "h0,");
	f->t.s[0] = '\0';
	inspect_exchange_done(f->in, &(struct inspect_exchange){.status = 502, .error = "x"});
	assert_string_equal(f->t.s, "h1,");
}

/* Slots are handed out in registration order, deciding hooks and
 * observers alike, and end at INSPECT_MAX_HOOKS. */
static void test_hook_limit(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(INSPECT_MAX_HOOKS, 16);
	for (size_t i = 0; i < 15; i++)
		assert_int_equal(add(f, i), (int)i);
	assert_int_equal(add_observer(f, 15), 15);
	assert_int_equal(inspect_add(f->in, "h16", on_msg, on_ex, &f->h[16]), -1);
	assert_int_equal(inspect_add_observer(f->in, "h17", on_msg, on_ex, &f->h[17]), -1);
	/* The 16 registered still run, the refused ones never do. */
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_FORWARD);
	assert_string_equal(f->t.s, "h0,h1,h2,h3,h4,h5,h6,h7,h8,h9,h10,h11,h12,h13,h14,h15=0,");
	assert_int_equal(f->h[16].calls, 0);
	assert_int_equal(f->h[17].calls, 0);
	f->t.s[0] = '\0';
	inspect_exchange_done(f->in, &(struct inspect_exchange){0});
	assert_string_equal(f->t.s, "h0,h1,h2,h3,h4,h5,h6,h7,h8,h9,h10,h11,h12,h13,h14,h15,");
}

/* Observers run after every deciding hook, whatever their place in the
 * registration order, see the verdict, and cannot change it. */
static void test_observers_run_after_deciders(void **state)
{
	struct fixture *f = *state;
	struct inspect_stats st;

	add_observer(f, 0);
	add(f, 1);
	add_observer(f, 2);
	add(f, 3);
	/* An observer's DROP is ignored. */
	f->h[0].verdict = INSPECT_DROP;
	f->h[2].verdict = INSPECT_ANSWER;
	f->h[2].set_answer = 1;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_FORWARD);
	assert_string_equal(f->t.s, "h1,h3,h0=0,h2=0,");
	assert_int_equal(f->m.verdict, INSPECT_FORWARD);
	assert_null(f->m.decided_by);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.dropped + st.answered, 0);
}

static void test_observers_see_drop(void **state)
{
	struct fixture *f = *state;

	add(f, 0);
	add_observer(f, 1);
	add(f, 2);
	f->h[0].verdict = INSPECT_DROP;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_DROP);
	/* The deciding chain stopped at h0; the observer still ran. */
	assert_string_equal(f->t.s, "h0,h1=1,");
	assert_int_equal(f->m.verdict, INSPECT_DROP);
	assert_string_equal(f->h[1].decided_by_seen, "h0");

	/* The verdict is reset for each message. */
	f->t.s[0] = '\0';
	f->h[0].verdict = INSPECT_FORWARD;
	f->m.decided_by = NULL;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_FORWARD);
	assert_string_equal(f->t.s, "h0,h2,h1=0,");
	assert_int_equal(f->m.verdict, INSPECT_FORWARD);
}

static void test_observers_see_answer(void **state)
{
	struct fixture *f = *state;

	add_observer(f, 0);
	add(f, 1);
	f->h[1].verdict = INSPECT_ANSWER;
	f->h[1].set_answer = 1;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_ANSWER);
	assert_string_equal(f->t.s, "h1,h0=2,");
	assert_string_equal(f->h[0].decided_by_seen, "h1");
	/* A hook's ANSWER without an answer is FORWARD for observers too. */
	f->t.s[0] = '\0';
	json_decref(f->m.answer);
	f->m.answer = NULL;
	f->m.decided_by = NULL;
	f->h[1].set_answer = 0;
	assert_int_equal(inspect_message(f->in, &f->m), INSPECT_FORWARD);
	assert_string_equal(f->t.s, "h1,h0=0,");
}

/* inspect_listing_may_skip: each hook's answer, the first refusal named;
 * hooks without an answer (and observers) let a listing pass. */
static int uninspected_calls;
static const char *uninspected_upstream;

static int refuses(void *arg, const struct inspect_where *where)
{
	(void)arg;
	uninspected_calls++;
	uninspected_upstream = where->upstream;
	return 0;
}

static int allows(void *arg, const struct inspect_where *where)
{
	(void)arg;
	(void)where;
	uninspected_calls++;
	return 1;
}

static void test_listing_may_skip(void **state)
{
	struct fixture *f = *state;
	const char *who = "unset";
	uninspected_calls = 0;
	/* No hook, or hooks without an answer: a listing may pass. */
	assert_int_equal(inspect_listing_may_skip(f->in, &f->where, &who), 1);
	int a = add(f, 0);
	add_observer(f, 1);
	assert_int_equal(inspect_listing_may_skip(f->in, &f->where, &who), 1);
	assert_string_equal(who, "unset");
	/* One that allows, one that refuses: refused, and named. */
	inspect_set_uninspected(f->in, a, allows);
	int b = add(f, 2);
	inspect_set_uninspected(f->in, b, refuses);
	assert_int_equal(inspect_listing_may_skip(f->in, &f->where, &who), 0);
	assert_string_equal(who, "h2");
	assert_string_equal(uninspected_upstream, "default");
	assert_int_equal(uninspected_calls, 2);
	assert_int_equal(inspect_listing_may_skip(f->in, &f->where, NULL), 0);
	/* Asking runs no message hook. */
	assert_string_equal(f->t.s, "");
	/* A clone (a worker's chain) asks the same hooks. */
	struct inspect *c = inspect_clone(f->in);
	assert_non_null(c);
	assert_int_equal(inspect_listing_may_skip(c, &f->where, &who), 0);
	inspect_free(c);
	/* Out of range slots are ignored. */
	inspect_set_uninspected(f->in, -1, refuses);
	inspect_set_uninspected(f->in, INSPECT_MAX_HOOKS, refuses);
}

/* inspect_listing_fast: every hook is asked before any acts; a hook with
 * an on_message and no answer refuses; all agreeing, each `passed` runs
 * once and the message is counted. */
static int fast_may_calls, fast_passed_calls;
static size_t fast_len_seen;

static int fast_yes(void *arg, const struct inspect_listing *l)
{
	(void)arg;
	fast_may_calls++;
	fast_len_seen = l->len;
	return 1;
}

static int fast_no(void *arg, const struct inspect_listing *l)
{
	(void)arg;
	(void)l;
	fast_may_calls++;
	return 0;
}

static void fast_passed(void *arg, const struct inspect_listing *l)
{
	struct hook *h = arg;
	(void)l;
	fast_passed_calls++;
	trace_add(h->t, h->name);
}

static void test_listing_fast(void **state)
{
	struct fixture *f = *state;
	const char *who = NULL;
	struct inspect_listing l = {.where = &f->where, .request = f->msg, .raw = "{\"tools\":[]}", .len = 12};
	struct inspect_stats st;
	fast_may_calls = fast_passed_calls = 0;
	/* No hooks: nothing to replay, the listing passes and is counted. */
	assert_int_equal(inspect_listing_fast(f->in, &l, &who), 1);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.messages[1], 1);
	assert_int_equal(st.fast_listings, 1);
	/* A hook without an answer refuses: a new hook is never bypassed. */
	int a = add(f, 0);
	assert_int_equal(inspect_listing_fast(f->in, &l, &who), 0);
	assert_string_equal(who, "h0");
	/* Both agree: each passed once, in order; no on_message ran. */
	inspect_set_listing_fast(f->in, a, fast_yes, fast_passed);
	int o = add_observer(f, 1);
	inspect_set_listing_fast(f->in, o, fast_yes, fast_passed);
	assert_int_equal(inspect_listing_fast(f->in, &l, &who), 1);
	assert_int_equal(fast_len_seen, 12);
	assert_int_equal(fast_may_calls, 2);
	assert_int_equal(fast_passed_calls, 2);
	assert_string_equal(f->t.s, "h0,h1,");
	assert_int_equal(f->h[0].calls, 0);
	/* One refuses after another agreed: nobody acted, the refuser named,
	 * nothing counted. */
	int b = add(f, 2);
	inspect_set_listing_fast(f->in, b, fast_no, fast_passed);
	fast_may_calls = fast_passed_calls = 0;
	assert_int_equal(inspect_listing_fast(f->in, &l, &who), 0);
	assert_string_equal(who, "h2");
	assert_int_equal(fast_passed_calls, 0);
	assert_int_equal(fast_may_calls, 3);
	inspect_get_stats(f->in, &st);
	assert_int_equal(st.fast_listings, 2);
	assert_int_equal(st.messages[1], 2);
	/* Out of range slots are ignored. */
	inspect_set_listing_fast(f->in, -1, fast_yes, NULL);
	inspect_set_listing_fast(f->in, INSPECT_MAX_HOOKS, fast_yes, NULL);
}

static int tree_never(void *arg, const struct inspect_msg *m)
{
	(void)arg;
	(void)m;
	return 0;
}

/* inspect_needs_tree: a hook without an answer needs every tree (a new
 * hook is never bypassed); observers are asked too; a hook that reads
 * nothing (no on_message) needs none. */
static void test_needs_tree(void **state)
{
	struct fixture *f = *state;
	const char *who = NULL;
	assert_int_equal(inspect_needs_tree(f->in, &f->m, &who), 0);
	assert_int_equal(inspect_trees_optional(f->in), 1);
	assert_true(inspect_add(f->in, "exchange-only", NULL, on_ex, &f->h[0]) >= 0);
	assert_int_equal(inspect_needs_tree(f->in, &f->m, &who), 0);
	inspect_set_needs_tree(f->in, add(f, 1), tree_never);
	assert_int_equal(inspect_needs_tree(f->in, &f->m, &who), 0);
	int obs = inspect_add_observer(f->in, "h2", on_msg, NULL, &f->h[2]);
	assert_int_equal(inspect_needs_tree(f->in, &f->m, &who), 1);
	assert_string_equal(who, "h2");
	assert_int_equal(inspect_trees_optional(f->in), 0);
	inspect_set_needs_tree(f->in, obs, tree_never);
	assert_int_equal(inspect_needs_tree(f->in, &f->m, NULL), 0);
	assert_int_equal(inspect_trees_optional(f->in), 1);
	add(f, 3);
	assert_int_equal(inspect_trees_optional(f->in), 0);
	assert_int_equal(inspect_needs_tree(f->in, &f->m, &who), 1);
	assert_string_equal(who, "h3");
}

static void test_tree_for_listings(void **state)
{
	struct fixture *f = *state;
	json_t *call = json_pack("{s:s,s:i,s:s}", "jsonrpc", "2.0", "id", 2, "method", "tools/call");
	struct inspect_msg m = {.dir = INSPECT_FROM_CLIENT, .kind = JRPC_REQUEST, .method = "tools/list"};
	assert_int_equal(inspect_tree_for_listings(NULL, &m), 1);
	m.method = "tools/call";
	assert_int_equal(inspect_tree_for_listings(NULL, &m), 0);
	m = (struct inspect_msg){.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT};
	assert_int_equal(inspect_tree_for_listings(NULL, &m), 1); /* answers what? */
	m.request = call;
	m.request_method = "tools/call";
	assert_int_equal(inspect_tree_for_listings(NULL, &m), 0);
	m.request = f->msg;
	m.request_method = "tools/list";
	assert_int_equal(inspect_tree_for_listings(NULL, &m), 1);
	json_decref(call);
}

static const char *seen_method, *seen_tool, *seen_request_method;

static enum inspect_verdict note_names(void *arg, struct inspect_msg *m)
{
	(void)arg;
	seen_method = m->method;
	seen_tool = m->tool;
	seen_request_method = m->request_method;
	return INSPECT_FORWARD;
}

/* A message without a tree: the hooks see the transport's names (a
 * request's), a response none of its own, and the request's method. */
static void test_message_without_tree(void **state)
{
	struct fixture *f = *state;
	assert_true(inspect_add(f->in, "names", note_names, NULL, NULL) >= 0);
	struct inspect_msg m = {.dir = INSPECT_FROM_CLIENT, .kind = JRPC_REQUEST, .where = &f->where,
	                        .method = "tools/call", .tool = "echo"};
	assert_int_equal(inspect_message(f->in, &m), INSPECT_FORWARD);
	assert_string_equal(seen_method, "tools/call");
	assert_string_equal(seen_tool, "echo");
	assert_string_equal(seen_request_method, "tools/call");
	m = (struct inspect_msg){.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT, .where = &f->where,
	                         .request = f->msg, .method = "stale", .tool = "stale"};
	assert_int_equal(inspect_message(f->in, &m), INSPECT_FORWARD);
	assert_null(seen_method);
	assert_null(seen_tool);
	assert_string_equal(seen_request_method, "tools/list");
}

/* A hook whose handling changes the listing hands over the result it
 * sent before (struct inspect_listing, sent). */
static struct rcbytes *kept_sent;
static char raw_seen[32];

static int fast_replace(void *arg, const struct inspect_listing *l)
{
	(void)arg;
	if (!l->sent)
		return 0;
	*l->sent = rcbytes_ref(kept_sent);
	return 1;
}

static void fast_seen(void *arg, const struct inspect_listing *l)
{
	(void)arg;
	snprintf(raw_seen, sizeof(raw_seen), "%.*s", (int)l->len, l->raw);
}

static void test_listing_fast_sent(void **state)
{
	struct fixture *f = *state;
	const char *who = NULL;
	struct rcbytes *sent = NULL;
	struct inspect_listing l = {.where = &f->where, .request = f->msg, .raw = "{\"tools\":[1]}", .len = 13,
	                            .sent = &sent};
	kept_sent = rcbytes_new("{\"tools\":[]}", 12);
	assert_non_null(kept_sent);
	int a = add(f, 0), b = add_observer(f, 1);
	inspect_set_listing_fast(f->in, a, fast_replace, NULL);
	inspect_set_listing_fast(f->in, b, fast_yes, fast_seen);
	/* The replacement is the caller's; the observer after the replacing
	 * hook sees the bytes sent. */
	assert_int_equal(inspect_listing_fast(f->in, &l, &who), 1);
	assert_ptr_equal(sent, kept_sent);
	assert_string_equal(raw_seen, "{\"tools\":[]}");
	rcbytes_unref(sent);
	/* A transport that takes no replacement: the replacing hook refuses. */
	struct inspect_listing bare = {.where = &f->where, .request = f->msg, .raw = "{\"tools\":[1]}",
	                               .len = 13};
	assert_int_equal(inspect_listing_fast(f->in, &bare, &who), 0);
	assert_string_equal(who, "h0");
	/* A second replacement refuses, and a refusal after one gives it back. */
	int c = add(f, 2);
	inspect_set_listing_fast(f->in, c, fast_replace, NULL);
	sent = NULL;
	assert_int_equal(inspect_listing_fast(f->in, &l, &who), 0);
	assert_string_equal(who, "h2");
	assert_null(sent);
	assert_int_equal(kept_sent->refs, 1);
	rcbytes_unref(kept_sent);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty_chain_forwards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hooks_run_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_stops_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_stops_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_without_answer_forwards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modified_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modified_then_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exchange_done_reaches_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_functions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hook_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_observers_run_after_deciders, setup, teardown),
		cmocka_unit_test_setup_teardown(test_observers_see_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_observers_see_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listing_may_skip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listing_fast_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listing_fast, setup, teardown),
		cmocka_unit_test_setup_teardown(test_needs_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tree_for_listings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_message_without_tree, setup, teardown),
	};
	return cmocka_run_group_tests_name("inspect", tests, NULL, NULL);
}

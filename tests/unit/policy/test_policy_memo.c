/* Unit tests for policy/policy_memo.c: policy_memo_call must decide every
 * tools/call exactly as policy_eval does, however often a tool is called,
 * whatever its hints, client and upstream, and stay within its bounds.
 *
 * The main test draws random policies (tool, client, upstream and method
 * globs, annotation and name-word matchers, argument matchers, actions,
 * dry runs, unknown-tool handling) and random calls, and compares the two
 * evaluations field by field, each call several times so most of them are
 * answered from the memo.
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

#define POLICY_INTERNAL
#include "policy/policy.h"
#include "tests/unit/helpers.h"

/* A small deterministic generator (xorshift), so a failure replays. */
static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	return (uint32_t)(th_xorshift(&rng_state) % n);
}

#define PICK(arr) (arr)[rnd(sizeof(arr) / sizeof((arr)[0]))]

static struct policy *load(json_t *conf /* stolen */)
{
	char err[4096];
	struct policy *p = policy_load(conf, "$.policy", err, sizeof(err));
	json_decref(conf);
	return p;
}

static struct policy *load_text(const char *text)
{
	json_t *conf = th_json_flags(text, 0);
	char err[4096];
	struct policy *p = policy_load(conf, "$.policy", err, sizeof(err));
	json_decref(conf);
	if (!p)
		fail_msg("policy did not load:\n%s", err);
	return p;
}

static const char *const tool_globs[] = {
	"echo", "admin_*", "*.admin.*", "get_*", "*delete*", "run_query", "tool_?", "\\*lit", "*",
	"HTTP*", "x*y", "",
};
static const char *const client_globs[] = {"alice", "b*", "*", "", "?"};
static const char *const upstream_globs[] = {"up", "u*", "other"};
static const char *const methods[] = {"tools/call", "tools/*", "*"};
static const char *const hint_names[] = {"readOnlyHint", "destructiveHint", "idempotentHint",
                                         "openWorldHint"};
static const char *const word_lists[][3] = {
	{"get", "delet*", NULL}, {"echo", NULL, NULL}, {"*min", "query", NULL}, {"a?", NULL, NULL},
};
static const char *const actions[] = {"allow", "deny", "hide", "log"};

static json_t *glob_list(const char *const *pool, size_t n)
{
	if (rnd(3) == 0)
		return json_string(pool[rnd((uint32_t)n)]);
	json_t *a = json_array();
	for (uint32_t i = 0, k = 1 + rnd(3); i < k; i++)
		json_array_append_new(a, json_string(pool[rnd((uint32_t)n)]));
	return a;
}

static json_t *random_args(void)
{
	json_t *a = json_array();
	for (uint32_t i = 0, k = 1 + rnd(2); i < k; i++) {
		switch (rnd(7)) {
		case 4:
			json_array_append_new(a, json_pack("{s:s, s:b}", "pointer", "/0", "exists", 1));
			break;
		case 5:
			json_array_append_new(a, json_pack("{s:s, s:i}", "pointer", "/x/0", "equals", 1));
			break;
		case 6:
			json_array_append_new(a, json_pack("{s:s, s:b}", "pointer", "/a~1b", "exists", 1));
			break;
		case 0:
			json_array_append_new(a, json_pack("{s:s, s:s}", "pointer", "/sql", "matches",
			                                   "(?i)^\\s*(drop|delete)"));
			break;
		case 1:
			json_array_append_new(a, json_pack("{s:s, s:i}", "pointer", "/n", "equals", 1));
			break;
		case 2:
			json_array_append_new(a, json_pack("{s:s, s:b}", "pointer", "/x", "exists", 1));
			break;
		default:
			json_array_append_new(a, json_pack("{s:s, s:b}", "pointer", "/x", "exists", 0));
			break;
		}
	}
	return a;
}

static json_t *random_rule(size_t i)
{
	char name[32];
	snprintf(name, sizeof(name), "r%zu", i);
	json_t *match = json_object();
	if (rnd(2))
		json_object_set_new(match, "tool", glob_list(tool_globs, 12));
	if (rnd(6) == 0)
		json_object_set_new(match, "client", glob_list(client_globs, 5));
	if (rnd(6) == 0)
		json_object_set_new(match, "upstream", glob_list(upstream_globs, 3));
	if (rnd(8) == 0)
		json_object_set_new(match, "method", json_string(PICK(methods)));
	if (rnd(3) == 0) {
		json_t *ann = json_object();
		for (uint32_t k = 0, n = 1 + rnd(2); k < n; k++)
			json_object_set_new(ann, PICK(hint_names), json_boolean(rnd(2)));
		json_object_set_new(match, "annotations", ann);
	}
	if (rnd(3) == 0) {
		if (rnd(3) == 0) {
			json_t *w = json_array();
			const char *const *l = word_lists[rnd(4)];
			for (size_t k = 0; l[k]; k++)
				json_array_append_new(w, json_string(l[k]));
			json_object_set_new(match, "name_words", w);
		} else {
			json_object_set_new(match, "name_words", json_boolean(rnd(2)));
		}
	}
	if (rnd(3) == 0)
		json_object_set_new(match, "args", random_args());
	json_t *r = json_pack("{s:s, s:o, s:s}", "name", name, "match", match, "action",
	                      PICK(actions));
	if (rnd(8) == 0)
		json_object_set_new(r, "dry_run", json_true());
	return r;
}

static struct policy *random_policy(size_t max_rules)
{
	for (;;) {
		json_t *rules = json_array();
		size_t n = rnd((uint32_t)max_rules + 1);
		for (size_t i = 0; i < n; i++)
			json_array_append_new(rules, random_rule(i));
		json_t *conf = json_pack("{s:s, s:s, s:b, s:o}", "default", PICK(actions),
		                         "unknown_tools", rnd(2) ? "deny" : "rules", "dry_run",
		                         rnd(6) == 0, "rules", rules);
		if (rnd(4) == 0)
			json_object_set_new(conf, "extra_change_words", json_pack("[s, s]", "echo", "l?st"));
		struct policy *p = load(conf);
		if (p)
			return p;  /* some draws are refused by the loader: draw again */
	}
}

static char long_name[600];

static const char *random_tool(void)
{
	static const char *const tools[] = {
		"echo", "admin_users", "x.admin.y", "get_file", "deleteFile", "HTTPRequest",
		"run_query", "tool_1", "tool_12", "*lit", "", "set-value", "a", "xay", "list2Items",
		"get_admin", "Admin_Panel", "caf\xc3\xa9_delete",
	};
	if (rnd(20) == 0)
		return long_name;  /* over POLICY_MEMO_MAX_KEY: never kept */
	return PICK(tools);
}

static signed char tri(void)
{
	return (signed char)((int)rnd(3) - 1);
}

static void random_hints(struct policy_hints *h)
{
	*h = (struct policy_hints){tri(), tri(), tri(), tri()};
}

struct call {
	struct policy_input in;
	struct policy_hints h, b;
	json_t *params;  /* owned */
};

static void random_call(struct call *c)
{
	static const char *const clients[] = {NULL, "", "alice", "bob"};
	static const char *const ups[] = {NULL, "up", "other"};
	static const char *const argv[] = {
		NULL, "{}", "{\"sql\":\"DROP TABLE t\"}", "{\"sql\":\"select 1\"}", "{\"n\":1}",
		"{\"n\":1.0,\"x\":null}", "{\"x\":[1]}", "[1,2]", "{\"a/b\":0,\"0\":0}",
		"{\"sql\":\"x\\u0000drop\"}",
	};
	memset(c, 0, sizeof(*c));
	random_hints(&c->h);
	random_hints(&c->b);
	c->in.method = "tools/call";
	c->in.tool = rnd(30) == 0 ? NULL : random_tool();
	c->in.client = PICK(clients);
	c->in.upstream = PICK(ups);
	c->in.tool_known = rnd(5) != 0;
	c->in.hints = rnd(4) ? &c->h : NULL;
	c->in.baseline = rnd(3) == 0 ? &c->b : NULL;
	const char *a = PICK(argv);
	json_t *args = a ? json_loads(a, 0, NULL) : NULL;
	if (rnd(2)) {
		/* As the hook passes them: arguments looked up when needed. */
		c->params = json_object();
		if (args)
			json_object_set_new(c->params, "arguments", args);
		c->in.call_params = c->params;
	} else {
		c->params = args;
		c->in.args = args;
	}
}

static void assert_same(const struct policy_decision *a, const struct policy_decision *b,
                        const struct policy_input *in)
{
	if (a->action != b->action || a->rule != b->rule || a->reason != b->reason ||
	    a->dry_run_would != b->dry_run_would || a->tag != b->tag || a->stat != b->stat)
		fail_msg("tool %.40s client %s upstream %s: eval %s by %s, memo %s by %s",
		         in->tool ? in->tool : "(null)", in->client ? in->client : "(null)",
		         in->upstream ? in->upstream : "(null)", policy_action_str(a->action),
		         a->rule ? a->rule : "-", policy_action_str(b->action), b->rule ? b->rule : "-");
}

/* The plain evaluation, with the arguments resolved as the hook used to. */
static void eval_plain(const struct policy *p, const struct policy_input *in,
                       struct policy_decision *d)
{
	struct policy_input x = *in;
	if (!x.args && x.call_params)
		x.args = json_object_get(x.call_params, "arguments");
	x.call_params = NULL;
	policy_eval(p, &x, d);
}

static void test_memo_matches_eval_randomised(void **state)
{
	(void)state;
	memset(long_name, 'd', sizeof(long_name) - 1);
	memcpy(long_name, "delete_", 7);
	size_t calls = 0, kept = 0;
	for (uint64_t seed = 1; seed <= 300; seed++) {
		rng_state = seed * 0x9E3779B97F4A7C15ull;
		struct policy *p = random_policy(seed % 50 == 0 ? 20 : 7);
		struct policy_memo *m = policy_memo_new(p);
		assert_non_null(m);
		for (int i = 0; i < 200; i++) {
			struct call c;
			random_call(&c);
			for (int rep = 0; rep < 3; rep++) {
				struct policy_decision want, got;
				eval_plain(p, &c.in, &want);
				policy_memo_call(m, &c.in, &got);
				assert_same(&want, &got, &c.in);
				calls++;
				if (c.in.tool && c.in.tool_known) {
					/* The kept part on its own, as hook_policy keeps
					 * it per listed tool. */
					struct policy_cands pc;
					policy_cands_of(p, &c.in, &pc);
					policy_cands_call(p, &pc, &c.in, &got);
					assert_same(&want, &got, &c.in);
				}
			}
			json_decref(c.params);
		}
		kept += policy_memo_size(m);
		assert_true(policy_memo_size(m) <= POLICY_MEMO_MAX_ENTRIES);
		policy_memo_free(m);
		policy_free(p);
	}
	/* The memo was used, not bypassed. */
	assert_true(kept > 1000);
	assert_true(calls == 300 * 200 * 3);
}

/* More candidate rules than POLICY_MEMO_MAX_CAND: evaluation goes on past
 * the kept ones, in order. */
static void test_memo_many_candidates(void **state)
{
	(void)state;
	json_t *rules = json_array();
	for (int i = 0; i < 3 * POLICY_MEMO_MAX_CAND; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", i);
		json_array_append_new(
			rules, json_pack("{s:s, s:{s:s, s:[{s:s, s:i}]}, s:s}", "name", name, "match",
			                 "tool", "t*", "args", "pointer", "/n", "equals", i, "action",
			                 i % 2 ? "deny" : "log"));
	}
	struct policy *p = load(json_pack("{s:s, s:o}", "unknown_tools", "rules", "rules", rules));
	assert_non_null(p);
	struct policy_memo *m = policy_memo_new(p);
	for (int n = -1; n < 3 * POLICY_MEMO_MAX_CAND + 1; n++) {
		json_t *args = json_pack("{s:i}", "n", n);
		struct policy_input in = {.method = "tools/call", .tool = "tx", .args = args};
		struct policy_decision want, got;
		for (int rep = 0; rep < 2; rep++) {
			policy_eval(p, &in, &want);
			policy_memo_call(m, &in, &got);
			assert_same(&want, &got, &in);
		}
		if (n >= 0 && n < 3 * POLICY_MEMO_MAX_CAND)
			assert_int_equal(got.stat, n);
		else
			assert_string_equal(got.rule, POLICY_RULE_DEFAULT);
		json_decref(args);
	}
	assert_int_equal(policy_memo_size(m), 1);
	policy_memo_free(m);
	policy_free(p);
}

/* A flood of names: the memo never holds more than its cap, empties
 * itself when full, and keeps deciding right. Overlong names are not
 * kept at all. */
static void test_memo_bounded(void **state)
{
	(void)state;
	struct policy *p = load_text("{'unknown_tools':'rules','rules':["
	                             "{'name':'w','match':{'name_words':true},'action':'deny'},"
	                             "{'name':'a','match':{'tool':'admin_*'},'action':'hide'}]}");
	struct policy_memo *m = policy_memo_new(p);
	assert_int_equal(policy_memo_size(m), 0);
	for (int i = 0; i < 5 * POLICY_MEMO_MAX_ENTRIES; i++) {
		char name[64];
		snprintf(name, sizeof(name), i % 3 ? "get_thing_%d" : i % 2 ? "delete_%d" : "admin_%d",
		         i);
		struct policy_input in = {.method = "tools/call", .tool = name};
		struct policy_decision want, got;
		policy_eval(p, &in, &want);
		policy_memo_call(m, &in, &got);
		assert_same(&want, &got, &in);
		assert_true(policy_memo_size(m) <= POLICY_MEMO_MAX_ENTRIES);
	}
	assert_true(policy_memo_resets(m) >= 4);
	assert_true(policy_memo_size(m) > 0);

	size_t before = policy_memo_size(m);
	char big[POLICY_MEMO_MAX_KEY + 10];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "delete_", 7);
	struct policy_input in = {.method = "tools/call", .tool = big, .tool_known = 1};
	struct policy_decision d;
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "w");
	assert_int_equal(policy_memo_size(m), before);
	policy_memo_free(m);
	policy_free(p);
}

/* The same tool with other hints (a new listing, a baseline), another
 * client or upstream is another key: nothing stale is answered. */
static void test_memo_keys(void **state)
{
	(void)state;
	struct policy *p = load_text(
		"{'rules':["
		"{'name':'ro','match':{'annotations':{'readOnlyHint':true}},'action':'allow'},"
		"{'name':'bob','match':{'client':'bob'},'action':'log'},"
		"{'name':'nul','match':{'client':'*'},'action':'hide'},"
		"{'name':'prod','match':{'upstream':'prod'},'action':'log'},"
		"{'name':'rest','match':{'tool':'t'},'action':'deny'}]}");
	struct policy_memo *m = policy_memo_new(p);
	struct policy_hints ro = {1, -1, -1, -1}, rw = {0, 0, -1, -1};
	struct policy_input in = {.method = "tools/call", .tool = "t", .tool_known = 1, .hints = &ro,
	                          .client = "", .upstream = "staging"};
	struct policy_decision d;

	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "ro");
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "ro");
	in.hints = &rw;  /* relisted as writing */
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "nul");
	in.baseline = &rw;
	in.hints = &ro;  /* read-only now, not in the baseline */
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "nul");
	in.baseline = NULL;
	in.hints = &rw;
	in.client = "bob";
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "bob");
	in.client = NULL;  /* no client matches no glob, not even '*' */
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "rest");
	in.upstream = "prod";
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "prod");
	in.upstream = NULL;
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "rest");
	assert_int_equal(policy_memo_size(m), 6);
	/* Unknown tools are denied before any key is made. */
	in.tool_known = 0;
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, POLICY_RULE_UNKNOWN);
	assert_int_equal(policy_memo_size(m), 6);
	policy_memo_free(m);
	policy_free(p);
}

/* Arguments given as the call's params are looked up only when a
 * candidate rule has argument matchers, and then decide as before. */
static void test_memo_lazy_arguments(void **state)
{
	(void)state;
	struct policy *p = load_text(
		"{'rules':[{'name':'sql','match':{'tool':'q','args':[{'pointer':'/sql',"
		"'matches':'drop'}]},'action':'deny'},"
		"{'name':'gone','match':{'tool':'q','args':[{'pointer':'/sql','exists':false}]},"
		"'action':'log'}]}");
	struct policy_memo *m = policy_memo_new(p);
	json_t *params = json_pack("{s:s, s:{s:s}}", "name", "q", "arguments", "sql", "drop it");
	json_t *bare = json_pack("{s:s}", "name", "q");
	struct policy_input in = {.method = "tools/call", .tool = "q", .tool_known = 1,
	                          .call_params = params};
	struct policy_decision d;
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "sql");
	policy_eval(p, &in, &d);
	assert_string_equal(d.rule, "sql");
	in.call_params = bare;
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, "gone");
	in.tool = "other";
	policy_memo_call(m, &in, &d);
	assert_string_equal(d.rule, POLICY_RULE_DEFAULT);
	json_decref(params);
	json_decref(bare);
	policy_memo_free(m);
	policy_free(p);
}

/* A one-token pointer is looked up directly (policy_arg_prepare): it must
 * find what policy_pointer_get finds, in objects and arrays. */
static void test_one_token_pointers(void **state)
{
	(void)state;
	static const char *const ptrs[] = {"/a", "/0", "/", "/x", "/10", "/01", "/1", "/-"};
	static const char *const docs[] = {
		"{\"a\":1,\"\":2,\"0\":3,\"01\":4}", "[5,6]", "\"str\"", "{\"x\":[1]}", "[]",
		"[0,1,2,3,4,5,6,7,8,9,10,11]", "{}",
	};
	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
		json_t *conf = json_pack("{s:[{s:s, s:{s:s, s:[{s:s, s:b}]}, s:s}]}", "rules", "name",
		                         "e", "match", "tool", "t", "args", "pointer", ptrs[i],
		                         "exists", 1, "action", "deny");
		struct policy *p = load(conf);
		assert_non_null(p);
		assert_int_equal(p->rules[0].args[0].one_token, 1);
		for (size_t j = 0; j < sizeof(docs) / sizeof(docs[0]); j++) {
			json_t *doc = json_loads(docs[j], JSON_DECODE_ANY, NULL);
			assert_non_null(doc);
			struct policy_input in = {.method = "tools/call", .tool = "t", .tool_known = 1,
			                          .args = doc};
			struct policy_decision d;
			policy_eval(p, &in, &d);
			int found = policy_pointer_get(doc, ptrs[i]) != NULL;
			if ((strcmp(d.rule, "e") == 0) != found)
				fail_msg("pointer %s in %s: rule %s, pointer_get %d", ptrs[i], docs[j], d.rule,
				         found);
			json_decref(doc);
		}
		policy_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memo_matches_eval_randomised),
		cmocka_unit_test(test_memo_many_candidates),
		cmocka_unit_test(test_memo_bounded),
		cmocka_unit_test(test_memo_keys),
		cmocka_unit_test(test_memo_lazy_arguments),
		cmocka_unit_test(test_one_token_pointers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for policy/ (policy.c, policy_load.c), through the public API,
 * and for its glue proxy/hooks/hook_policy.c, driven through the message hook
 * (inspect_message) the way the transports drive it.
 * Why this file is long: one test per behaviour of the module, each reading
 * on its own (a failure names one behaviour), with the regression cases.
 *
 * Policies and arguments are written with single quotes; J() turns them
 * into double quotes. call() evaluates a tools/call of a listed tool with
 * the given annotations; callx() gives full control.
 */
#define POLICY_INTERNAL
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "policy/policy.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/hook_policy.h"
#include "proxy/hooks/inspect.h"
#include "proxy/hooks/tools.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "tests/unit/helpers.h"

/* Policies and arguments may hold \u0000 (JSON_ALLOW_NUL): the rules must
 * see the whole string. */
static json_t *J(const char *text)
{
	return th_json_flags(text, JSON_DECODE_ANY | JSON_ALLOW_NUL);
}

static struct policy *P(const char *text)
{
	char err[4096];
	json_t *conf = J(text);
	struct policy *p = policy_load(conf, "$.policy", err, sizeof(err));
	json_decref(conf);
	if (!p)
		fail_msg("policy did not load:\n%s", err);
	return p;
}

/* Loads text expecting failure; returns the error text (static). */
static const char *load_err(const char *text)
{
	static char err[4096];
	json_t *conf = J(text);
	struct policy *p = policy_load(conf, "$.policy", err, sizeof(err));
	json_decref(conf);
	if (p) {
		policy_free(p);
		fail_msg("policy loaded but should not have: %s", text);
	}
	return err;
}

static void assert_has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("expected %s in:\n%s", needle, hay);
}

static size_t lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* A tools/call of a listed tool. ann: annotations JSON (NULL: none);
 * args: arguments JSON (NULL: none). */
static struct policy_decision callx(const struct policy *p, const char *tool, const char *ann,
                                    const char *base, const char *args, const char *client,
                                    const char *upstream)
{
	struct policy_hints h, b;
	json_t *a = ann ? J(ann) : NULL, *bj = base ? J(base) : NULL, *av = args ? J(args) : NULL;
	policy_hints_from_json(a, &h);
	policy_hints_from_json(bj, &b);
	struct policy_input in = {
		.method = "tools/call",
		.tool = tool,
		.args = av,
		.client = client,
		.upstream = upstream,
		.tool_known = 1,
		.hints = &h,
		.baseline = base ? &b : NULL,
	};
	struct policy_decision d;
	policy_eval(p, &in, &d);
	json_decref(a);
	json_decref(bj);
	json_decref(av);
	return d;
}

static struct policy_decision call(const struct policy *p, const char *tool, const char *ann)
{
	return callx(p, tool, ann, NULL, NULL, NULL, NULL);
}

static struct policy_decision method(const struct policy *p, const char *m, const char *params,
                                     const char *client)
{
	json_t *pv = params ? J(params) : NULL;
	struct policy_input in = {.method = m, .args = pv, .client = client, .upstream = "up"};
	struct policy_decision d;
	policy_eval(p, &in, &d);
	json_decref(pv);
	return d;
}

#define assert_decision(d, act, rulename)                                                    \
	do {                                                                                 \
		struct policy_decision d_ = (d);                                             \
		if (d_.action != (act) || !d_.rule || strcmp(d_.rule, (rulename)) != 0)      \
			fail_msg("expected %s by %s, got %s by %s", policy_action_str(act),  \
			         (rulename), policy_action_str(d_.action),                   \
			         d_.rule ? d_.rule : "(none)");                              \
	} while (0)

/* ---- globs and pointers ------------------------------------------------------ */

static void test_glob(void **state)
{
	(void)state;
	assert_true(policy_glob("delete_file", "delete_file"));
	assert_false(policy_glob("delete_file", "delete_files"));
	assert_false(policy_glob("Delete_file", "delete_file"));  /* case-sensitive */
	assert_true(policy_glob("delete_*", "delete_file"));
	assert_true(policy_glob("delete_*", "delete_"));
	assert_false(policy_glob("delete_*", "undelete_file"));
	assert_true(policy_glob("*.admin.*", "db.admin.drop"));
	assert_true(policy_glob("*.admin.*", "a.b.admin.c.d"));
	assert_false(policy_glob("*.admin.*", "admin.drop"));
	assert_true(policy_glob("*", ""));
	assert_true(policy_glob("**a**", "banana"));
	assert_true(policy_glob("*a*a*a", "banana"));
	assert_false(policy_glob("*a*a*a*a", "banana"));
	assert_true(policy_glob("get-?um", "get-sum"));
	assert_false(policy_glob("get-?um", "get-um"));
	assert_true(policy_glob("caf?", "caf\xc3\xa9"));          /* ? is one UTF-8 character */
	assert_false(policy_glob("caf??", "caf\xc3\xa9"));
	assert_true(policy_glob("a\\*b", "a*b"));                 /* escaped star is literal */
	assert_false(policy_glob("a\\*b", "axxb"));
	assert_true(policy_glob("a?c*", "abcdef"));
	assert_false(policy_glob("", "x"));
	assert_true(policy_glob("", ""));
	/* A long mismatch stays fast (no exponential backtracking). */
	char s[4001];
	memset(s, 'a', 4000);
	s[4000] = '\0';
	assert_false(policy_glob("*a*a*a*a*a*a*a*b", s));
}

static void test_pointer(void **state)
{
	(void)state;
	json_t *doc = J("{'sql':'select 1','a/b':1,'m~n':2,'rows':[{'id':7},{'id':8}],'':3}");
	assert_ptr_equal(policy_pointer_get(doc, ""), doc);
	assert_string_equal(json_string_value(policy_pointer_get(doc, "/sql")), "select 1");
	assert_int_equal(json_integer_value(policy_pointer_get(doc, "/a~1b")), 1);
	assert_int_equal(json_integer_value(policy_pointer_get(doc, "/m~0n")), 2);
	assert_int_equal(json_integer_value(policy_pointer_get(doc, "/rows/1/id")), 8);
	assert_int_equal(json_integer_value(policy_pointer_get(doc, "/")), 3);
	assert_null(policy_pointer_get(doc, "/rows/2/id"));
	assert_null(policy_pointer_get(doc, "/rows/01"));
	assert_null(policy_pointer_get(doc, "/rows/-"));
	assert_null(policy_pointer_get(doc, "/nope"));
	assert_null(policy_pointer_get(doc, "/sql/x"));
	assert_null(policy_pointer_get(doc, "sql"));
	assert_null(policy_pointer_get(doc, "/a~2b"));
	assert_null(policy_pointer_get(NULL, "/sql"));
	json_decref(doc);
}

/* ---- annotations ---------------------------------------------------------------- */

static void test_hint_defaults(void **state)
{
	(void)state;
	struct policy_hints h, e;

	policy_hints_effective(NULL, NULL, &e);  /* unannotated */
	assert_int_equal(e.read_only, 0);
	assert_int_equal(e.destructive, 1);
	assert_int_equal(e.idempotent, 0);
	assert_int_equal(e.open_world, 1);

	json_t *a = J("{'readOnlyHint':true}");
	policy_hints_from_json(a, &h);
	json_decref(a);
	assert_int_equal(h.read_only, 1);
	assert_int_equal(h.destructive, -1);
	policy_hints_effective(&h, NULL, &e);
	assert_int_equal(e.read_only, 1);
	assert_int_equal(e.destructive, 0);  /* meaningless on a read-only tool */
	assert_int_equal(e.idempotent, 1);
	assert_int_equal(e.open_world, 1);

	a = J("{'readOnlyHint':'yes','destructiveHint':false,'openWorldHint':false}");
	policy_hints_from_json(a, &h);
	json_decref(a);
	assert_int_equal(h.read_only, -1);  /* not a boolean: absent */
	policy_hints_effective(&h, NULL, &e);
	assert_int_equal(e.read_only, 0);
	assert_int_equal(e.destructive, 0);
	assert_int_equal(e.open_world, 0);

	/* Rules see the defaults. */
	struct policy *p = P("{'rules':[{'name':'d','match':{'annotations':{'destructiveHint':true}},"
	                     "'action':'deny'},{'name':'ow','match':{'annotations':"
	                     "{'openWorldHint':true}},'action':'log'}]}");
	assert_decision(call(p, "anything", NULL), POLICY_DENY, "d");
	assert_decision(call(p, "anything", "{}"), POLICY_DENY, "d");
	assert_decision(call(p, "anything", "{'destructiveHint':false}"), POLICY_LOG, "ow");
	assert_decision(call(p, "reader", "{'readOnlyHint':true}"), POLICY_LOG, "ow");
	assert_decision(call(p, "reader", "{'readOnlyHint':true,'openWorldHint':false}"),
	                POLICY_ALLOW, "default");
	policy_free(p);
}

static void test_annotation_matchers(void **state)
{
	(void)state;
	struct policy *p = P("{'default':'deny','rules':["
	                     "{'name':'ro','match':{'annotations':{'readOnlyHint':true}},'action':'allow'},"
	                     "{'name':'idem','match':{'annotations':{'idempotentHint':true,"
	                     "'destructiveHint':false}},'action':'log'}]}");
	assert_decision(call(p, "t", "{'readOnlyHint':true}"), POLICY_ALLOW, "ro");
	assert_decision(call(p, "t", "{'readOnlyHint':false}"), POLICY_DENY, "default");
	assert_decision(call(p, "t", "{'idempotentHint':true}"), POLICY_DENY, "default");
	assert_decision(call(p, "t", "{'idempotentHint':true,'destructiveHint':false}"), POLICY_LOG,
	                "idem");
	policy_free(p);
}

static void test_baseline_less_safe(void **state)
{
	(void)state;
	struct policy *p = P("{'default':'deny','rules':[{'name':'ro','match':{'annotations':"
	                     "{'readOnlyHint':true}},'action':'allow'},{'name':'safe-write','match':"
	                     "{'annotations':{'destructiveHint':false}},'action':'log'}]}");
	/* Read-only now and in the baseline. */
	assert_decision(callx(p, "t", "{'readOnlyHint':true}", "{'readOnlyHint':true}", NULL, NULL,
	                      NULL), POLICY_ALLOW, "ro");
	/* Claims read-only now but was not in the baseline: not read-only, and
	 * destructive by the baseline's (default) claim. */
	assert_decision(callx(p, "t", "{'readOnlyHint':true}", "{}", NULL, NULL, NULL),
	                POLICY_DENY, "default");
	assert_decision(callx(p, "t", "{'readOnlyHint':true}", "{'destructiveHint':false}", NULL, NULL,
	                      NULL), POLICY_LOG, "safe-write");
	/* Read-only in the baseline, writing now: weakened, judged by now. */
	assert_decision(callx(p, "t", "{'readOnlyHint':false}", "{'readOnlyHint':true}", NULL, NULL,
	                      NULL), POLICY_DENY, "default");
	assert_decision(callx(p, "t", "{'readOnlyHint':false,'destructiveHint':false}",
	                      "{'readOnlyHint':true}", NULL, NULL, NULL), POLICY_LOG, "safe-write");
	/* Non-destructive in the baseline, destructive now. */
	assert_decision(callx(p, "t", "{'destructiveHint':true}", "{'destructiveHint':false}", NULL,
	                      NULL, NULL), POLICY_DENY, "default");

	struct policy_hints cur = {1, -1, -1, 0}, base = {0, 0, 1, -1}, e;
	policy_hints_effective(&cur, &base, &e);
	assert_int_equal(e.read_only, 0);
	assert_int_equal(e.destructive, 0);
	assert_int_equal(e.idempotent, 1);
	assert_int_equal(e.open_world, 1);  /* open-world by the baseline's default */
	policy_free(p);
}

/* ---- name words ------------------------------------------------------------------ */

static void test_name_words_builtin(void **state)
{
	(void)state;
	char w[64];
	static const struct {
		const char *name, *word;
	} yes[] = {
		{"delete_file", "delete"}, {"deleteFile", "delete"}, {"DeleteFile", "delete"},
		{"DELETE_USER", "delete"}, {"file.delete", "delete"}, {"file-remove", "remove"},
		{"HTTPDelete", "delete"}, {"sendEmail", "send"}, {"payInvoice", "pay"},
		{"bank_transfer_v2", "transfer"}, {"purgeCache", "purge"}, {"write2disk", "write"},
		{"user.update", "update"}, {"createIssue", "create"}, {"db/drop", "drop"},
		{"toggle-simulated-logging", "toggle"}, {"XMLWrite", "write"},
		{"DEL3TE", "del"},  /* letters and digits are separate words */
	};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!policy_change_word(NULL, yes[i].name, w, sizeof(w)))
			fail_msg("%s should have a change word", yes[i].name);
		assert_string_equal(w, yes[i].word);
	}
	static const char *const no[] = {
		"get_file", "getUpdates", "list_deleted_items", "get_address", "undelete_preview",
		"readSettings", "search", "echo", "get-sum", "getCommit", "get_post", "sender_info",
		"", "model3d",
	};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (policy_change_word(NULL, no[i], w, sizeof(w)))
			fail_msg("%s should have no change word (found %s)", no[i], w);
	assert_false(policy_change_word(NULL, NULL, NULL, 0));

	/* The built-in list is exported and has the documented words. */
	const char *const *b = policy_builtin_words();
	const char *must[] = {"delete", "remove", "drop", "send", "pay", "transfer", "purge",
	                      "write", "update", "create"};
	for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++) {
		size_t j = 0;
		while (b[j] && strcmp(b[j], must[i]) != 0)
			j++;
		assert_non_null(b[j]);
	}
}

static void test_name_words_rules(void **state)
{
	(void)state;
	struct policy *p = P("{'rules':[{'name':'changes','match':{'name_words':true},"
	                     "'action':'deny'}]}");
	assert_decision(call(p, "deleteRepo", "{'readOnlyHint':true}"), POLICY_DENY, "changes");
	assert_decision(call(p, "getRepo", NULL), POLICY_ALLOW, "default");
	policy_free(p);

	/* change_words replaces; entries are globs and case-insensitive. */
	p = P("{'change_words':['Nuke','delet*'],'rules':[{'name':'c','match':{'name_words':true},"
	      "'action':'deny'}]}");
	assert_decision(call(p, "nukeEverything", NULL), POLICY_DENY, "c");
	assert_decision(call(p, "deleting_rows", NULL), POLICY_DENY, "c");
	assert_decision(call(p, "send_mail", NULL), POLICY_ALLOW, "default");
	char w[16];
	assert_true(policy_change_word(p, "NUKE_IT", w, sizeof(w)));
	assert_string_equal(w, "nuke");
	policy_free(p);

	/* extra_change_words adds. */
	p = P("{'extra_change_words':['order'],'rules':[{'name':'c','match':{'name_words':true},"
	      "'action':'deny'}]}");
	assert_decision(call(p, "placeOrder", NULL), POLICY_DENY, "c");
	assert_decision(call(p, "send_mail", NULL), POLICY_DENY, "c");
	policy_free(p);

	/* name_words false, and a rule's own list. */
	p = P("{'rules':[{'name':'own','match':{'name_words':['refund']},'action':'deny'},"
	      "{'name':'clean','match':{'name_words':false},'action':'log'}]}");
	assert_decision(call(p, "issueRefund", NULL), POLICY_DENY, "own");
	assert_decision(call(p, "delete_all", NULL), POLICY_ALLOW, "default");
	assert_decision(call(p, "get_all", NULL), POLICY_LOG, "clean");
	policy_free(p);
}

/* ---- arguments ---------------------------------------------------------------------- */

static void test_args(void **state)
{
	(void)state;
	struct policy *p = P(
		"{'rules':["
		"{'name':'sql','match':{'tool':'run_query','args':[{'pointer':'/sql',"
		"'matches':'(?i)^\\\\s*(drop|delete|update)'}]},'action':'deny'},"
		"{'name':'env','match':{'args':[{'pointer':'/env','equals':'prod'}]},'action':'deny'},"
		"{'name':'n','match':{'args':[{'pointer':'/limit','equals':1000}]},'action':'log'},"
		"{'name':'force','match':{'args':[{'pointer':'/opts/force','exists':true}]},'action':'deny'},"
		"{'name':'case','match':{'args':[{'pointer':'/q','matches':'^Secret$'}]},'action':'deny'},"
		"{'name':'noid','match':{'tool':'fetch','args':[{'pointer':'/id','exists':false}]},"
		"'action':'deny'}]}");
	assert_decision(callx(p, "run_query", NULL, NULL, "{'sql':'  DROP TABLE users'}", NULL, NULL),
	                POLICY_DENY, "sql");
	assert_decision(callx(p, "run_query", NULL, NULL, "{'sql':'delete from t'}", NULL, NULL),
	                POLICY_DENY, "sql");
	assert_decision(callx(p, "run_query", NULL, NULL, "{'sql':'select * from drops'}", NULL, NULL),
	                POLICY_ALLOW, "default");
	assert_decision(callx(p, "run_query", NULL, NULL, "{}", NULL, NULL), POLICY_ALLOW, "default");
	assert_decision(callx(p, "run_query", NULL, NULL, NULL, NULL, NULL), POLICY_ALLOW, "default");
	/* A NUL in front does not hide the statement. */
	assert_decision(callx(p, "run_query", NULL, NULL, "{'sql':'\\u0000drop table x'}", NULL, NULL),
	                POLICY_DENY, "sql");
	/* Non-strings are matched as JSON text. */
	assert_decision(callx(p, "run_query", NULL, NULL, "{'sql':['drop table x']}", NULL, NULL),
	                POLICY_ALLOW, "default");  /* anchored ^ sees '[' first */
	/* equals */
	assert_decision(callx(p, "deploy", NULL, NULL, "{'env':'prod'}", NULL, NULL), POLICY_DENY,
	                "env");
	assert_decision(callx(p, "deploy", NULL, NULL, "{'env':'production'}", NULL, NULL),
	                POLICY_ALLOW, "default");
	assert_decision(callx(p, "deploy", NULL, NULL, "{'env':['prod']}", NULL, NULL), POLICY_ALLOW,
	                "default");
	assert_decision(callx(p, "list", NULL, NULL, "{'limit':1000.0}", NULL, NULL), POLICY_LOG, "n");
	assert_decision(callx(p, "list", NULL, NULL, "{'limit':'1000'}", NULL, NULL), POLICY_ALLOW,
	                "default");
	/* exists */
	assert_decision(callx(p, "x", NULL, NULL, "{'opts':{'force':false}}", NULL, NULL), POLICY_DENY,
	                "force");
	assert_decision(callx(p, "x", NULL, NULL, "{'opts':{}}", NULL, NULL), POLICY_ALLOW, "default");
	assert_decision(callx(p, "fetch", NULL, NULL, "{}", NULL, NULL), POLICY_DENY, "noid");
	assert_decision(callx(p, "fetch", NULL, NULL, "{'id':1}", NULL, NULL), POLICY_ALLOW, "default");
	/* Without (?i) a regex is case-sensitive. */
	assert_decision(callx(p, "s", NULL, NULL, "{'q':'Secret'}", NULL, NULL), POLICY_DENY, "case");
	assert_decision(callx(p, "s", NULL, NULL, "{'q':'secret'}", NULL, NULL), POLICY_ALLOW,
	                "default");
	policy_free(p);

	/* Unanchored patterns match anywhere; non-strings as JSON text. */
	p = P("{'rules':[{'name':'drop','match':{'args':[{'pointer':'','matches':'(?i)drop'}]},"
	      "'action':'deny'}]}");
	assert_decision(callx(p, "q", NULL, NULL, "{'sql':['x; DROP table']}", NULL, NULL), POLICY_DENY,
	                "drop");
	assert_decision(callx(p, "q", NULL, NULL, "{'n':1}", NULL, NULL), POLICY_ALLOW, "default");
	policy_free(p);
}

/* glibc's regexec locks the compiled pattern for the whole match, so
 * workers matching with one copy queued behind each other (and behind one
 * preempted mid-match). A caller gives each thread a policy_rx of its own
 * (policy_input.rx): four threads deciding at once, each with its own,
 * get the same answers as one; each set compiles its own copy at its
 * first match and policy_rx_free frees it (valgrind's leak check). */
#define RX_THREADS 4
static void *rx_thread(void *arg)
{
	const struct policy *p = arg;
	struct policy_rx *rx = policy_rx_new(p);
	if (!rx)
		return (void *)1;
	for (int i = 0; i < 200; i++) {
		json_t *args = J(i % 2 ? "{'sql':'x; DROP  table t'}" : "{'sql':'dropped'}");
		struct policy_input in = {.method = "tools/call", .tool = "q", .args = args,
		                          .tool_known = 1, .rx = rx};
		struct policy_decision d;
		policy_eval(p, &in, &d);
		json_decref(args);
		if (d.action != (i % 2 ? POLICY_DENY : POLICY_ALLOW)) {
			policy_rx_free(rx);
			return (void *)1;
		}
	}
	policy_rx_free(rx);
	return NULL;
}

static void test_regex_copy_per_thread(void **state)
{
	(void)state;
	struct policy *p = P("{'rules':[{'name':'drop','match':{'args':[{'pointer':'/sql',"
	                     "'matches':'(?i)drop\\\\s+table'}]},'action':'deny'}]}");
	/* Without a policy_rx: the loaded pattern itself. */
	assert_decision(callx(p, "q", NULL, NULL, "{'sql':'DROP TABLE x'}", NULL, NULL),
	                POLICY_DENY, "drop");
	pthread_t th[RX_THREADS];
	for (int i = 0; i < RX_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, rx_thread, p), 0);
	for (int i = 0; i < RX_THREADS; i++) {
		void *bad;
		assert_int_equal(pthread_join(th[i], &bad), 0);
		assert_null(bad);
	}
	assert_int_equal(p->nrx, 1);
	/* A policy without patterns: a set with nothing in it, still correct. */
	struct policy *q = P("{'rules':[{'name':'r','match':{'tool':'x'},'action':'deny'}]}");
	struct policy_rx *rx = policy_rx_new(q);
	assert_non_null(rx);
	assert_int_equal(q->nrx, 0);
	struct policy_input in = {.method = "tools/call", .tool = "x", .tool_known = 1, .rx = rx};
	struct policy_decision d;
	policy_eval(q, &in, &d);
	assert_decision(d, POLICY_DENY, "r");
	policy_rx_free(rx);
	policy_rx_free(NULL);
	policy_free(q);
	policy_free(p);
}

/* ---- regular expression limits ---------------------------------------------------------- */

/* A policy with one rule {"pointer":"/q","matches":rx}. Returns it, or
 * NULL with the error in err. */
static struct policy *rx_policy(const char *rx, char *err, size_t errlen)
{
	json_t *conf = json_pack("{s:[{s:s,s:s,s:{s:[{s:s,s:s}]}}]}", "rules", "name", "rx",
	                         "action", "deny", "match", "args", "pointer", "/q", "matches", rx);
	assert_non_null(conf);
	err[0] = '\0';
	struct policy *p = policy_load(conf, "$.policy", err, errlen);
	json_decref(conf);
	return p;
}

/* s repeated n times (static buffer). */
static const char *times(const char *s, size_t n)
{
	static char buf[POLICY_MAX_REGEX + 1];
	size_t len = strlen(s);
	assert_true(n * len <= POLICY_MAX_REGEX);
	for (size_t i = 0; i < n; i++)
		memcpy(buf + i * len, s, len);
	buf[n * len] = '\0';
	return buf;
}

/* Regressions timeout-regex-nested-repeat, timeout-regex-wide-repeat and
 * timeout-regex-stacked-plus (tests/fuzz/corpus/policy): glibc's regcomp
 * took 16 s and 8 GB, 6 s, 20 s and 6 GB on them. They, and the other
 * shapes glibc compiles in seconds, are refused before regcomp with an
 * error at the pattern (conf/README-policy.md, "Regular expressions"). */
static void test_regex_blowups_refused(void **state)
{
	(void)state;
	char pat[POLICY_MAX_REGEX + 1];
	static const struct {
		const char *rx;
		const char *error;
	} cases[] = {
		{"(a{1,1000}){1,1000}", "repetition \"{1,1000}\" at offset 2: a bound above 255"},
		{"a{1,32767}", "repetition \"{1,32767}\" at offset 1: a bound above 255"},
		{"a{256}", "repetition \"{256}\" at offset 1: a bound above 255"},
		{"x{,99999999999999999999}", "a bound above 255"},
		{"(?i)ab{300,}", "repetition \"{300,}\" at offset 6: a bound above 255"},
		{"(a|b)++++++++++++++++++++++", "repetition \"+\" at offset 6 follows another one"},
		{"a**", "repetition \"*\" at offset 2 follows another one"},
		{"a+?", "repetition \"?\" at offset 2 follows another one"},
		{"a{2}{3}", "repetition \"{3}\" at offset 4 follows another one"},
		{"(a*)*", "repetition \"*\" at offset 4 repeats something that matches the empty"},
		{"(a|)+", "repetition \"+\" at offset 4 repeats something that matches the empty"},
		{"()*", "matches the empty string"},
		{"(^)*", "matches the empty string"},
		{"(a?){2,}", "matches the empty string"},
		{"(a{1,255}){1,39}", "more than 10000 nodes once repetitions are unrolled"},
		{"((((((((((((((a)+)+)+)+)+)+)+)+)+)+)+)+)+)+", "more than 10000 nodes"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512];
		struct policy *p = rx_policy(cases[i].rx, err, sizeof err);
		if (p != NULL) {
			policy_free(p);
			fail_msg("loaded %s", cases[i].rx);
		}
		assert_has(err, "$.policy.rules[0].match.args[0].matches: ");
		assert_has(err, cases[i].error);
		assert_int_equal(lines(err), 1);
	}

	/* Longer ones: 20 "(a*|()+)" took 16 s, 30 "(()){0,100}" over 5 s,
	 * 64 "\B" 12 s and 2 GB, 16 "(x?){0,15}\b" 7 s and 1.2 GB, 64 copies
	 * of 16 "\b" and an "a" 3 s. */
	static const struct {
		const char *piece;
		size_t n;
		const char *error;
	} reps[] = {
		{"(a*|()+)", 20, "matches the empty string"},
		{"(()){0,100}", 30, "a chain of more than 1000 nodes"},
		{"(x?){0,100}", 4, "a chain of more than 1000 nodes"},
		{"\\B", 64, "more than 16 anchors and word boundaries"},
		{"(\\b|\\B)", 9, "more than 16 anchors and word boundaries"},
		{"(x?){0,15}\\b", 16, "(64 with an anchor or word boundary)"},
		{"\\b\\b\\b\\b\\b\\b\\b\\b\\b\\b\\b\\b\\b\\b\\b\\ba", 64, "more than 16 anchors"},
		{"(", 2000, "a chain of more than 1000 nodes"},
	};
	for (size_t i = 0; i < sizeof(reps) / sizeof(reps[0]); i++) {
		char err[512];
		strcpy(pat, times(reps[i].piece, reps[i].n));
		if (strcmp(reps[i].piece, "(") == 0)
			strcat(pat, times(")", reps[i].n));
		struct policy *p = rx_policy(pat, err, sizeof err);
		if (p != NULL) {
			policy_free(p);
			fail_msg("loaded %zu x %s", reps[i].n, reps[i].piece);
		}
		assert_has(err, "$.policy.rules[0].match.args[0].matches: ");
		assert_has(err, reps[i].error);
	}
}

/* The limits leave ordinary patterns alone, including the largest counts
 * allowed, and the ones loaded still match. */
static void test_regex_limits_keep_realistic(void **state)
{
	(void)state;
	static const struct {
		const char *rx, *hit, *miss;
	} cases[] = {
		{"(?i)^\\s*(drop|delete|update|insert|alter|truncate)", " DROP table t", "select"},
		{"\\b(drop|delete)\\b", "x; drop it", "dropped"},
		{"(^|[;,])\\s*(rm|del)\\b", "a, rm -rf", "farm"},
		{"^https?://(www\\.)?example\\.com/.*$", "https://example.com/a", "http://evil.com/"},
		{"^[a-z]{0,255}@[a-z]{0,255}\\.[a-z]{2,63}$", "me@example.org", "me@@x.org"},
		{"^.{0,255}x{0,255}$", "abcxx", NULL},
		{"a{1,255}", "a", "b"},
		{"^a{255}$", NULL, "aa"},
		{"(ab){1,255}c?", "ababc", "ba"},
		{"(\\s*,\\s*\\w+)*;", ", a , b;", NULL},
		{"(\\b\\w+\\b\\s*){1,8}", "one two", NULL},
		{"^(\\bone\\b|\\btwo\\b|\\bthree\\b|\\bfour\\b|\\bfive\\b|\\bsix\\b|\\bseven\\b)$", "six",
		 "sixty"},
		{"^/(home|tmp)/[^/]+(/[^/]+)*$", "/tmp/a/b", "/etc/passwd"},
		{"[[:alpha:]]+[^]x]\\w{2,3}(a|b)+", "ab-cdeab", NULL},
		{"(a?){2,5}", "", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512], args[600];
		struct policy *p = rx_policy(cases[i].rx, err, sizeof err);
		if (p == NULL)
			fail_msg("%s refused: %s", cases[i].rx, err);
		if (cases[i].hit) {
			snprintf(args, sizeof args, "{'q':'%s'}", cases[i].hit);
			assert_decision(callx(p, "t", NULL, NULL, args, NULL, NULL), POLICY_DENY, "rx");
		}
		if (cases[i].miss) {
			snprintf(args, sizeof args, "{'q':'%s'}", cases[i].miss);
			assert_decision(callx(p, "t", NULL, NULL, args, NULL, NULL), POLICY_ALLOW,
			                "default");
		}
		policy_free(p);
	}
	/* Up to the limits: 16 anchors, 10000 nodes, chains of 1000. */
	static const struct {
		const char *piece;
		size_t n;
	} reps[] = {
		{"\\b", 16}, {"(a{255}){19}", 1}, {"(()){0,100}", 3}, {"\\b(x?){0,15}a", 16},
	};
	for (size_t i = 0; i < sizeof(reps) / sizeof(reps[0]); i++) {
		char err[512];
		struct policy *p = rx_policy(times(reps[i].piece, reps[i].n), err, sizeof err);
		if (p == NULL)
			fail_msg("%zu x %s refused: %s", reps[i].n, reps[i].piece, err);
		policy_free(p);
	}
}

/* ---- client, upstream, method ----------------------------------------------------------- */

static void test_client_upstream_method(void **state)
{
	(void)state;
	struct policy *p = P(
		"{'default':'deny','rules':["
		"{'name':'ci','match':{'client':['ci','ci-*'],'upstream':'staging'},'action':'allow'},"
		"{'name':'agents-read','match':{'client':'agent-?','annotations':{'readOnlyHint':true}},"
		"'action':'allow'},"
		"{'name':'no-subscribe','match':{'method':'resources/subscribe'},'action':'deny'},"
		"{'name':'sampling','match':{'method':['sampling/*'],'client':'agent-*'},'action':'deny'},"
		"{'name':'prod-tools','match':{'method':'tools/call','upstream':'prod*'},'action':'log'}]}");
	assert_decision(callx(p, "drop_db", NULL, NULL, NULL, "ci", "staging"), POLICY_ALLOW, "ci");
	assert_decision(callx(p, "drop_db", NULL, NULL, NULL, "ci-nightly", "staging"), POLICY_ALLOW,
	                "ci");
	assert_decision(callx(p, "drop_db", NULL, NULL, NULL, "ci", "prod"), POLICY_LOG, "prod-tools");
	assert_decision(callx(p, "drop_db", NULL, NULL, NULL, "agent-1", "staging"), POLICY_DENY,
	                "default");
	assert_decision(callx(p, "read", "{'readOnlyHint':true}", NULL, NULL, "agent-1", "staging"),
	                POLICY_ALLOW, "agents-read");
	assert_decision(callx(p, "read", "{'readOnlyHint':true}", NULL, NULL, "agent-12", "staging"),
	                POLICY_DENY, "default");
	/* No client name: client matchers never match. */
	assert_decision(callx(p, "drop_db", NULL, NULL, NULL, NULL, "staging"), POLICY_DENY,
	                "default");

	/* Other methods: only rules naming them; otherwise allowed, no rule. */
	assert_decision(method(p, "resources/subscribe", "{'uri':'x'}", NULL), POLICY_DENY,
	                "no-subscribe");
	assert_decision(method(p, "sampling/createMessage", NULL, "agent-7"), POLICY_DENY, "sampling");
	struct policy_decision d = method(p, "sampling/createMessage", NULL, "ci");
	assert_int_equal(d.action, POLICY_ALLOW);
	assert_null(d.rule);
	assert_int_equal(d.stat, -1);
	d = method(p, "resources/read", NULL, NULL);
	assert_int_equal(d.action, POLICY_ALLOW);
	assert_null(d.rule);
	d = method(p, NULL, NULL, NULL);
	assert_null(d.rule);
	policy_free(p);

	/* Method rules look into params. */
	p = P("{'rules':[{'name':'secret-res','match':{'method':'resources/read','args':"
	      "[{'pointer':'/uri','matches':'^secret://'}]},'action':'deny'}]}");
	assert_decision(method(p, "resources/read", "{'uri':'secret://k'}", NULL), POLICY_DENY,
	                "secret-res");
	assert_null(method(p, "resources/read", "{'uri':'file://k'}", NULL).rule);
	policy_free(p);
}

/* ---- order, default, dry run, unknown ------------------------------------------------------ */

static void test_order_and_default(void **state)
{
	(void)state;
	struct policy *p = P("{'default':'log','rules':["
	                     "{'name':'first','match':{'tool':'a*'},'action':'allow'},"
	                     "{'name':'second','match':{'tool':'ab*'},'action':'deny'},"
	                     "{'name':'third','match':{'tool':['x','ab*']},'action':'hide'}]}");
	assert_decision(call(p, "abc", NULL), POLICY_ALLOW, "first");
	assert_decision(call(p, "x", NULL), POLICY_HIDE, "third");
	struct policy_decision d = call(p, "zzz", NULL);
	assert_decision(d, POLICY_LOG, "default");
	assert_string_equal(d.tag, "default");
	assert_int_equal(policy_default(p), POLICY_LOG);
	assert_int_equal(policy_nrules(p), 3);
	assert_true(policy_may_hide(p));
	policy_free(p);

	/* No rules at all: default is allow. */
	p = P("{}");
	assert_decision(call(p, "delete_everything", NULL), POLICY_ALLOW, "default");
	assert_false(policy_may_hide(p));
	assert_false(policy_dry_run(p));
	policy_free(p);

	/* An empty match and an absent one match every tools/call only. */
	p = P("{'rules':[{'name':'all','action':'deny'}]}");
	assert_decision(call(p, "anything", NULL), POLICY_DENY, "all");
	assert_null(method(p, "prompts/get", NULL, NULL).rule);
	policy_free(p);

	p = P("{'default':'hide'}");
	assert_true(policy_may_hide(p));
	assert_decision(call(p, "t", NULL), POLICY_HIDE, "default");
	policy_free(p);
}

static void test_dry_run(void **state)
{
	(void)state;
	struct policy *p = P("{'dry_run':true,'default':'deny','rules':["
	                     "{'name':'ok','match':{'tool':'ok'},'action':'allow'},"
	                     "{'name':'h','match':{'tool':'h'},'action':'hide'},"
	                     "{'name':'l','match':{'tool':'l'},'action':'log'}]}");
	assert_true(policy_dry_run(p));
	struct policy_decision d = call(p, "x", NULL);
	assert_int_equal(d.action, POLICY_LOG);
	assert_int_equal(d.dry_run_would, POLICY_DENY);
	assert_string_equal(d.rule, "default");
	assert_string_equal(d.tag, "dry-run:default");
	d = call(p, "h", NULL);
	assert_int_equal(d.action, POLICY_LOG);
	assert_int_equal(d.dry_run_would, POLICY_HIDE);
	assert_string_equal(d.tag, "dry-run:h");
	d = call(p, "ok", NULL);
	assert_int_equal(d.action, POLICY_ALLOW);
	assert_int_equal(d.dry_run_would, POLICY_NONE);
	assert_null(d.tag);
	d = call(p, "l", NULL);
	assert_int_equal(d.action, POLICY_LOG);
	assert_int_equal(d.dry_run_would, POLICY_NONE);
	assert_string_equal(d.tag, "l");
	policy_free(p);

	/* A rule's own dry run. */
	p = P("{'rules':[{'name':'try','match':{'tool':'a'},'action':'deny','dry_run':true},"
	      "{'name':'real','match':{'tool':'b'},'action':'deny'}]}");
	d = call(p, "a", NULL);
	assert_int_equal(d.action, POLICY_LOG);
	assert_int_equal(d.dry_run_would, POLICY_DENY);
	d = call(p, "b", NULL);
	assert_int_equal(d.action, POLICY_DENY);
	assert_string_equal(d.tag, "policy:real");
	policy_free(p);
}

static void test_unknown_tools(void **state)
{
	(void)state;
	struct policy_input in = {.method = "tools/call", .tool = "ghost", .tool_known = 0};
	struct policy_decision d;

	/* Default: denied before any rule, even an allow-all one. */
	struct policy *p = P("{'rules':[{'name':'all','action':'allow'}]}");
	assert_int_equal(policy_unknown_tools(p), POLICY_UNKNOWN_DENY);
	policy_eval(p, &in, &d);
	assert_decision(d, POLICY_DENY, POLICY_RULE_UNKNOWN);
	assert_string_equal(d.tag, "policy:unknown-tool");
	assert_int_equal(d.stat, 2);
	in.tool = NULL;  /* no name at all */
	policy_eval(p, &in, &d);
	assert_decision(d, POLICY_DENY, POLICY_RULE_UNKNOWN);
	in.tool = "ghost";
	policy_free(p);

	/* "rules": judged as an unannotated tool. */
	p = P("{'unknown_tools':'rules','rules':[{'name':'ro','match':{'annotations':"
	      "{'readOnlyHint':true}},'action':'allow'},{'name':'d','match':{'annotations':"
	      "{'destructiveHint':true}},'action':'deny'}]}");
	policy_eval(p, &in, &d);
	assert_decision(d, POLICY_DENY, "d");
	policy_free(p);

	/* Dry run covers it too. */
	p = P("{'dry_run':true}");
	policy_eval(p, &in, &d);
	assert_int_equal(d.action, POLICY_LOG);
	assert_int_equal(d.dry_run_would, POLICY_DENY);
	assert_string_equal(d.rule, POLICY_RULE_UNKNOWN);
	policy_free(p);
}

static void test_counts(void **state)
{
	(void)state;
	struct policy *p = P("{'default':'deny','rules':[{'name':'a','match':{'tool':'a'},"
	                     "'action':'allow'},{'name':'h','match':{'tool':'h'},'action':'hide',"
	                     "'dry_run':true}]}");
	struct policy_decision d = call(p, "a", NULL);
	policy_count(p, &d, 0);
	policy_count(p, &d, 0);
	d = call(p, "z", NULL);
	policy_count(p, &d, 0);
	d = call(p, "h", NULL);
	policy_count(p, &d, 0);
	policy_count(p, &d, 1);
	struct policy_input in = {.method = "tools/call", .tool = "ghost"};
	policy_eval(p, &in, &d);
	policy_count(p, &d, 0);
	d = method(p, "ping", NULL, NULL);
	policy_count(p, &d, 0);  /* no rule: not counted */

	assert_int_equal(policy_nstats(p), 4);
	struct policy_rule_stats s;
	assert_int_equal(policy_stats(p, 0, &s), 0);
	assert_string_equal(s.rule, "a");
	assert_int_equal(s.action, POLICY_ALLOW);
	assert_int_equal(s.matched, 2);
	assert_int_equal(s.allowed, 2);
	assert_int_equal(policy_stats(p, 1, &s), 0);
	assert_int_equal(s.matched, 1);
	assert_int_equal(s.logged, 1);
	assert_int_equal(s.dry_run, 1);
	assert_int_equal(s.dry_run_hidden, 1);
	assert_int_equal(s.hidden, 0);
	assert_int_equal(policy_stats(p, 2, &s), 0);
	assert_string_equal(s.rule, "default");
	assert_int_equal(s.denied, 1);
	assert_int_equal(policy_stats(p, 3, &s), 0);
	assert_string_equal(s.rule, "unknown-tool");
	assert_int_equal(s.denied, 1);
	assert_int_equal(policy_stats(p, 4, &s), -1);
	policy_free(p);
}

static void test_reasons(void **state)
{
	(void)state;
	struct policy *p = P("{'rules':[{'name':'m','match':{'tool':'a'},'action':'deny',"
	                     "'message':'no a today'},{'name':'s','match':{'tool':'b*',"
	                     "'annotations':{'destructiveHint':true},'client':'ci','args':"
	                     "[{'pointer':'/x','exists':true}]},'action':'deny'}]}");
	assert_string_equal(call(p, "a", NULL).reason, "no a today");
	struct policy_decision d = callx(p, "bb", NULL, NULL, "{'x':1}", "ci", NULL);
	assert_string_equal(d.rule, "s");
	assert_has(d.reason, "tool b*");
	assert_has(d.reason, "destructiveHint true");
	assert_has(d.reason, "client ci");
	assert_has(d.reason, "argument /x is present");
	assert_has(call(p, "zz", NULL).reason, "default");
	policy_free(p);
}

/* ---- loader --------------------------------------------------------------------------------- */

static void test_loader_errors(void **state)
{
	(void)state;
	static const struct {
		const char *policy, *error;
	} cases[] = {
		{"[]", "$.policy: must be an object"},
		{"{'defualt':'deny'}", "$.policy.defualt: unknown key"},
		{"{'default':'block'}", "$.policy.default: must be one of \"allow\", \"deny\", \"hide\""},
		{"{'dry_run':'yes'}", "$.policy.dry_run: must be true or false"},
		{"{'unknown_tools':'allow'}", "$.policy.unknown_tools: must be \"deny\" or \"rules\""},
		{"{'change_words':'delete'}", "$.policy.change_words: must be an array"},
		{"{'extra_change_words':[1]}", "$.policy.extra_change_words[0]: must be a string"},
		{"{'extra_change_words':['']}", "$.policy.extra_change_words[0]: must not be empty"},
		{"{'rules':{}}", "$.policy.rules: must be an array of rules"},
		{"{'rules':[7]}", "$.policy.rules[0]: must be an object"},
		{"{'rules':[{'action':'deny'}]}", "$.policy.rules[0].name: required"},
		{"{'rules':[{'name':'x'}]}", "$.policy.rules[0].action: required"},
		{"{'rules':[{'name':'a b','action':'deny'}]}", "$.policy.rules[0].name: must be a string"},
		{"{'rules':[{'name':'default','action':'deny'}]}", "$.policy.rules[0].name: \"default\" is reserved"},
		{"{'rules':[{'name':'x','action':'deny'},{'name':'x','action':'allow'}]}",
		 "$.policy.rules[1].name: \"x\" is also the name of rules[0]"},
		{"{'rules':[{'name':'x','action':'deny','colour':1}]}", "$.policy.rules[0].colour: unknown key"},
		{"{'rules':[{'name':'x','action':'deny','match':[]}]}", "$.policy.rules[0].match: must be an object"},
		{"{'rules':[{'name':'x','action':'deny','match':{'tool':7}}]}",
		 "$.policy.rules[0].match.tool: must be a string or an array of strings"},
		{"{'rules':[{'name':'x','action':'deny','match':{'tool':[]}}]}",
		 "$.policy.rules[0].match.tool: must not be an empty array"},
		{"{'rules':[{'name':'x','action':'deny','match':{'client':['a',3]}}]}",
		 "$.policy.rules[0].match.client[1]: must be a string"},
		{"{'rules':[{'name':'x','action':'deny','match':{'toool':'a'}}]}",
		 "$.policy.rules[0].match.toool: unknown key"},
		{"{'rules':[{'name':'x','action':'deny','match':{'annotations':{'readOnly':true}}}]}",
		 "$.policy.rules[0].match.annotations.readOnly: unknown key"},
		{"{'rules':[{'name':'x','action':'deny','match':{'annotations':{'readOnlyHint':1}}}]}",
		 "$.policy.rules[0].match.annotations.readOnlyHint: must be true or false"},
		{"{'rules':[{'name':'x','action':'deny','match':{'annotations':{}}}]}",
		 "$.policy.rules[0].match.annotations: must name at least one hint"},
		{"{'rules':[{'name':'x','action':'deny','match':{'name_words':'yes'}}]}",
		 "$.policy.rules[0].match.name_words: must be true, false, or an array of words"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':{}}}]}",
		 "$.policy.rules[0].match.args: must be a non-empty array"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'equals':1}]}}]}",
		 "$.policy.rules[0].match.args[0].pointer: required"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'pointer':'sql','equals':1}]}}]}",
		 "$.policy.rules[0].match.args[0].pointer: must be a JSON Pointer"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'pointer':'/a~2','equals':1}]}}]}",
		 "$.policy.rules[0].match.args[0].pointer: must be a JSON Pointer"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'pointer':'/a'}]}}]}",
		 "$.policy.rules[0].match.args[0]: needs exactly one of \"equals\", \"matches\", \"exists\""},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'pointer':'/a','equals':1,'exists':true}]}}]}",
		 "$.policy.rules[0].match.args[0]: needs exactly one of"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'pointer':'/a','matches':'(unclosed'}]}}]}",
		 "$.policy.rules[0].match.args[0].matches: invalid regular expression"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'pointer':'/a','matches':'(a)\\\\1'}]}}]}",
		 "$.policy.rules[0].match.args[0].matches: back-references (\\1) are not allowed"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'pointer':'/a','matches':5}]}}]}",
		 "$.policy.rules[0].match.args[0].matches: must be a string"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'pointer':'/a','exists':'y'}]}}]}",
		 "$.policy.rules[0].match.args[0].exists: must be true or false"},
		{"{'rules':[{'name':'x','action':'deny','match':{'args':[{'pointer':'/a','exists':true,'regex':'a'}]}}]}",
		 "$.policy.rules[0].match.args[0].regex: unknown key"},
		{"{'rules':[{'name':'x','action':'deny','match':{'tool':'a','method':'resources/read'}}]}",
		 "$.policy.rules[0].match.method: must include tools/call"},
		{"{'rules':[{'name':'x','action':'deny','message':'two\\nlines'}]}",
		 "$.policy.rules[0].message: must be one line"},
		{"{'rules':[{'name':'x','action':'deny','dry_run':1}]}",
		 "$.policy.rules[0].dry_run: must be true or false"},
		{"{'description':5}", "$.policy.description: must be a string"},
		{"{'$schema':5}", "$.policy.$schema: must be a string"},
		{"{'rules':[{'name':'x','action':'deny','$schema':'s'}]}",
		 "$.policy.rules[0].$schema: unknown key"},
		{"{'$id':'x'}", "$.policy.$id: unknown key"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_has(load_err(cases[i].policy), cases[i].error);

	/* Every error at once, one per line, third rule located. */
	const char *e = load_err("{'default':'nope','bogus':1,'rules':[{'name':'a','action':'deny'},"
	                         "{'name':'b','action':'allow'},{'name':'c','action':'deny',"
	                         "'match':{'tool':5,'upstream':[true]}}]}");
	assert_has(e, "$.policy.default: must be one of");
	assert_has(e, "$.policy.bogus: unknown key");
	assert_has(e, "$.policy.rules[2].match.tool: must be a string or an array of strings");
	assert_has(e, "$.policy.rules[2].match.upstream[0]: must be a string");
	assert_int_equal(lines(e), 4);

	/* A location prefix of the caller's choosing; a small buffer is cut
	 * cleanly. */
	char small[24];
	json_t *conf = J("{'x':1}");
	assert_null(policy_load(conf, "$", small, sizeof(small)));
	assert_string_equal(small, "$.x: unknown key\n");
	char tiny[8];
	assert_null(policy_load(conf, "$.policy", tiny, sizeof(tiny)));
	assert_int_equal(strlen(tiny), 7);
	assert_null(policy_load(conf, NULL, NULL, 0));
	json_decref(conf);
}

static void test_loader_limits(void **state)
{
	(void)state;
	/* More rules than allowed. */
	json_t *conf = json_object(), *rules = json_array();
	for (int i = 0; i <= POLICY_MAX_RULES; i++) {
		char name[16];
		snprintf(name, sizeof(name), "r%d", i);
		json_array_append_new(rules, json_pack("{s:s, s:s}", "name", name, "action", "deny"));
	}
	json_object_set_new(conf, "rules", rules);
	char err[256];
	assert_null(policy_load(conf, "$.policy", err, sizeof(err)));
	assert_has(err, "$.policy.rules: more than 1000 rules");
	/* Exactly the maximum loads. */
	json_array_remove(rules, 0);
	struct policy *p = policy_load(conf, "$.policy", err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(policy_nrules(p), POLICY_MAX_RULES);
	policy_free(p);
	json_decref(conf);

	/* An over-long pattern. */
	char *big = malloc(POLICY_MAX_STRING + 2);
	memset(big, 'a', POLICY_MAX_STRING + 1);
	big[POLICY_MAX_STRING + 1] = '\0';
	conf = json_pack("{s:[{s:s, s:s, s:{s:s}}]}", "rules", "name", "x", "action", "deny", "match",
	                 "tool", big);
	assert_null(policy_load(conf, "$.policy", err, sizeof(err)));
	assert_has(err, "$.policy.rules[0].match.tool: longer than 1024 bytes");
	json_decref(conf);
	free(big);
}

/* The editors' "$schema" hint at the top is accepted and changes nothing. */
static void test_loader_schema_hint(void **state)
{
	(void)state;
	struct policy *p = P("{'$schema':'./mcpwarden-policy.schema.json','default':'deny',"
	                     "'rules':[{'name':'r','match':{'tool':'get_*'},'action':'allow'}]}");
	assert_decision(call(p, "get_x", NULL), POLICY_ALLOW, "r");
	assert_decision(call(p, "put_x", NULL), POLICY_DENY, "default");
	policy_free(p);
}

static void test_loader_full_example(void **state)
{
	(void)state;
	/* The quick example of conf/README-policy.md. */
	struct policy *p = P(
		"{'default':'allow','unknown_tools':'deny','dry_run':false,'extra_change_words':['order'],"
		"'rules':["
		"{'name':'ci-may-write','match':{'client':'ci','upstream':'staging'},'action':'allow'},"
		"{'name':'no-raw-writes','match':{'tool':'run_query','args':[{'pointer':'/sql','matches':"
		"'(?i)^\\\\s*(drop|delete|update|insert|alter|truncate)'}]},'action':'deny',"
		"'message':'only SELECT queries through the proxy'},"
		"{'name':'no-destructive','match':{'annotations':{'destructiveHint':true}},'action':'deny'},"
		"{'name':'hide-admin','match':{'tool':['*.admin.*','admin_*']},'action':'hide'},"
		"{'name':'watch-writes','match':{'name_words':true},'action':'log'},"
		"{'name':'no-sampling','match':{'method':'sampling/createMessage','client':'agent-*'},"
		"'action':'deny'}]}");
	assert_decision(callx(p, "run_query", "{'destructiveHint':false}", NULL,
	                      "{'sql':'Update t set x=1'}", "agent-1", "staging"),
	                POLICY_DENY, "no-raw-writes");
	assert_decision(callx(p, "run_query", "{'destructiveHint':false}", NULL,
	                      "{'sql':'Update t set x=1'}", "ci", "staging"),
	                POLICY_ALLOW, "ci-may-write");
	assert_decision(callx(p, "run_query", "{'destructiveHint':false}", NULL, "{'sql':'select 1'}",
	                      "agent-1", "staging"), POLICY_LOG, "watch-writes");
	assert_decision(call(p, "db.admin.stats", "{'readOnlyHint':true}"), POLICY_HIDE, "hide-admin");
	assert_decision(call(p, "placeOrder", "{'destructiveHint':false}"), POLICY_LOG,
	                "watch-writes");
	assert_decision(call(p, "wipe", NULL), POLICY_DENY, "no-destructive");
	assert_decision(method(p, "sampling/createMessage", NULL, "agent-x"), POLICY_DENY,
	                "no-sampling");
	policy_free(p);
}

/* ---- the read-only preset ------------------------------------------------------------------------- */

static struct policy *load_preset(void)
{
	static const char *const paths[] = {"conf/policy-read-only.json",
	                                    "../conf/policy-read-only.json",
	                                    "../../conf/policy-read-only.json"};
	json_t *conf = NULL;
	for (size_t i = 0; !conf && i < 3; i++)
		conf = json_load_file(paths[i], 0, NULL);
	if (!conf)
		fail_msg("conf/policy-read-only.json not found (run from the repository root)");
	char err[2048];
	struct policy *p = policy_load(conf, "$.policy", err, sizeof(err));
	json_decref(conf);
	if (!p)
		fail_msg("preset did not load:\n%s", err);
	return p;
}

static void test_read_only_preset(void **state)
{
	(void)state;
	struct policy *p = load_preset();
	/* A listing with mixed annotations, as a server might send it. */
	json_t *listing = J(
		"{'tools':["
		"{'name':'get_weather','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':true}},"
		"{'name':'searchDocs','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':true,"
		"'openWorldHint':true}},"
		"{'name':'echo','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':true,"
		"'destructiveHint':false,'idempotentHint':true,'openWorldHint':false}},"
		"{'name':'delete_file','inputSchema':{'type':'object'},'annotations':{'destructiveHint':true}},"
		"{'name':'drop_table','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':false,"
		"'destructiveHint':true}},"
		"{'name':'append_log','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':false,"
		"'destructiveHint':false}},"
		"{'name':'mystery','inputSchema':{'type':'object'}},"
		"{'name':'get_thing','inputSchema':{'type':'object'},'annotations':{'title':'x'}},"
		"{'name':'deleteUser','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':true}},"
		"{'name':'sendInvoice','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':true}},"
		"{'name':'lying','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':'true'}}"
		"]}");
	static const struct {
		const char *name;
		enum policy_action want;
		const char *rule;
	} expect[] = {
		{"get_weather", POLICY_ALLOW, "read-only"},
		{"searchDocs", POLICY_ALLOW, "read-only"},
		{"echo", POLICY_ALLOW, "read-only"},
		{"delete_file", POLICY_DENY, "not-read-only"},   /* destructive */
		{"drop_table", POLICY_DENY, "not-read-only"},
		{"append_log", POLICY_DENY, "not-read-only"},    /* writes, not destructive */
		{"mystery", POLICY_DENY, "not-read-only"},       /* unannotated */
		{"get_thing", POLICY_DENY, "not-read-only"},     /* annotations without hints */
		{"deleteUser", POLICY_DENY, "not-read-only"},    /* read-only claim, change word */
		{"sendInvoice", POLICY_DENY, "not-read-only"},
		{"lying", POLICY_DENY, "not-read-only"},         /* not a boolean */
	};
	const json_t *tools = json_object_get(listing, "tools");
	assert_int_equal(json_array_size(tools), sizeof(expect) / sizeof(expect[0]));
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		struct policy_hints h;
		policy_hints_from_json(json_object_get(t, "annotations"), &h);
		struct policy_input in = {
			.method = "tools/call",
			.tool = json_string_value(json_object_get(t, "name")),
			.tool_known = 1,
			.hints = &h,
		};
		struct policy_decision d;
		policy_eval(p, &in, &d);
		assert_string_equal(in.tool, expect[i].name);
		if (d.action != expect[i].want || strcmp(d.rule, expect[i].rule) != 0)
			fail_msg("%s: expected %s by %s, got %s by %s", expect[i].name,
			         policy_action_str(expect[i].want), expect[i].rule,
			         policy_action_str(d.action), d.rule);
		if (d.action == POLICY_DENY)
			assert_has(d.reason, "read-only");
	}
	/* Never listed: denied. Other methods: pass. */
	struct policy_input ghost = {.method = "tools/call", .tool = "get_weather2"};
	struct policy_decision d;
	policy_eval(p, &ghost, &d);
	assert_decision(d, POLICY_DENY, POLICY_RULE_UNKNOWN);
	assert_null(method(p, "resources/read", "{'uri':'x'}", NULL).rule);
	assert_null(method(p, "tools/list", NULL, NULL).rule);
	assert_false(policy_may_hide(p));
	assert_false(policy_dry_run(p));
	json_decref(listing);
	policy_free(p);
}


/* ---- the glue: proxy/hooks/hook_policy.c --------------------------------------------------------------- */

/* A px_ctx with two upstreams ("staging", "prod") and an inspect chain. */
struct rig {
	struct px_proc proc;
	struct px_ctx ctx;
	struct px_config cfg;
	struct px_upstream_conf up[2];
};

/* The config (the first nups of "staging", "prod"; staging's contract
 * baseline if given) and the inspect chain, no hook yet. */
static void rig_init(struct rig *r, size_t nups, json_t *policy /* stolen */,
                     const char *baseline)
{
	memset(r, 0, sizeof(*r));
	log_setup(LOG_ERROR, 0);
	r->up[0].name = (char *)"staging";
	r->up[1].name = (char *)"prod";
	if (baseline)
		r->up[0].contract = json_pack("{s:s}", "baseline", baseline);
	r->cfg.ups = r->up;
	r->cfg.nups = nups;
	r->cfg.policy = policy;
	r->ctx.proc = &r->proc;
	r->ctx.cfg = &r->cfg;
	r->ctx.insp = inspect_new();
	assert_non_null(r->ctx.insp);
}

static void rig_start(struct rig *r, json_t *policy /* stolen */, const char *baseline)
{
	char err[2048];
	rig_init(r, 2, policy, baseline);
	/* As main does: the tracker the hook learns tools from, first. */
	r->proc.tools = tools_setup(&r->ctx, 0);
	assert_non_null(r->proc.tools);
	if (hook_policy_setup(&r->ctx, err, sizeof(err)) < 0)
		fail_msg("hook_policy_setup: %s", err);
	assert_non_null(r->proc.policy);
}

static void rig_stop(struct rig *r)
{
	hook_policy_free(r->proc.policy);
	inspect_free(r->ctx.insp);
	tools_free(r->proc.tools);
	json_decref(r->cfg.policy);
	json_decref(r->up[0].contract);
}

static json_t *preset_json(void)
{
	static const char *const paths[] = {"conf/policy-read-only.json",
	                                    "../conf/policy-read-only.json",
	                                    "../../conf/policy-read-only.json"};
	json_t *conf = NULL;
	for (size_t i = 0; !conf && i < 3; i++)
		conf = json_load_file(paths[i], 0, NULL);
	if (!conf)
		fail_msg("conf/policy-read-only.json not found (run from the repository root)");
	return conf;
}

/* One HTTP exchange. */
struct xch {
	struct inspect_where w;
};

static void x_begin(struct xch *x, const char *upstream, const char *client)
{
	memset(x, 0, sizeof(*x));
	x->w.conn_id = 1;
	x->w.upstream = upstream;
	x->w.client_name = client;
}

static void x_end(struct rig *r, struct xch *x)
{
	struct inspect_exchange e = {.where = &x->w};
	inspect_exchange_done(r->ctx.insp, &e);
	for (size_t i = 0; i < INSPECT_MAX_HOOKS; i++)
		assert_null(x->w.hook_data[i]);
}

struct seen {
	enum inspect_verdict v;
	json_t *answer;      /* owned by the test: free with json_decref */
	const char *reason;
	int modified;
};

static struct seen deliver_in(struct inspect *in, struct xch *x, enum inspect_dir dir,
                              json_t *msg, const json_t *request)
{
	struct inspect_msg m = {
		.dir = dir,
		.kind = jrpc_classify(msg),
		.msg = msg,
		.where = &x->w,
		.request = dir == INSPECT_FROM_CLIENT ? msg : request,
	};
	enum inspect_verdict v = inspect_message(in, &m);
	return (struct seen){v, m.answer, m.reason, m.modified};
}

static struct seen deliver(struct rig *r, struct xch *x, enum inspect_dir dir, json_t *msg,
                           const json_t *request)
{
	return deliver_in(r->ctx.insp, x, dir, msg, request);
}

/* A client tools/call; returns what the hook did. */
static struct seen tcall(struct rig *r, struct xch *x, const char *tool, const char *args)
{
	json_t *msg = json_pack("{s:s, s:i, s:s, s:{s:s, s:o}}", "jsonrpc", "2.0", "id", 9, "method",
	                        "tools/call", "params", "name", tool, "arguments",
	                        args ? J(args) : json_object());
	struct seen s = deliver(r, x, INSPECT_FROM_CLIENT, msg, NULL);
	json_decref(msg);
	return s;
}

/* A tools/list result for a request in the same exchange (request NULL:
 * no request known). Returns the result message (owned), as modified. */
static json_t *tlist(struct rig *r, struct xch *x, const char *result, const char *cursor,
                     struct seen *out)
{
	json_t *req = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", 3, "method",
	                        "tools/list", "params",
	                        cursor ? json_pack("{s:s}", "cursor", cursor) : json_object());
	json_t *msg = json_pack("{s:s, s:i, s:o}", "jsonrpc", "2.0", "id", 3, "result", J(result));
	struct seen s = deliver(r, x, INSPECT_FROM_CLIENT, req, NULL);
	assert_int_equal(s.v, INSPECT_FORWARD);
	s = deliver(r, x, INSPECT_FROM_SERVER, msg, req);
	json_decref(req);
	if (out)
		*out = s;
	return msg;
}

static void list_tools(struct rig *r, const char *upstream, const char *result)
{
	struct xch x;
	x_begin(&x, upstream, NULL);
	json_decref(tlist(r, &x, result, NULL, NULL));
	x_end(r, &x);
}

static void assert_refused(struct seen s, const char *rule, const char *action)
{
	assert_int_equal(s.v, INSPECT_ANSWER);
	assert_non_null(s.answer);
	const json_t *err = json_object_get(s.answer, "error");
	assert_int_equal(json_integer_value(json_object_get(err, "code")), HOOK_POLICY_ERROR_CODE);
	const json_t *data = json_object_get(err, "data");
	assert_string_equal(json_string_value(json_object_get(data, "rule")), rule);
	assert_string_equal(json_string_value(json_object_get(data, "action")), action);
	assert_has(json_string_value(json_object_get(err, "message")), rule);
	char tag[96];
	snprintf(tag, sizeof(tag), "policy:%s", rule);
	assert_string_equal(s.reason, tag);
}

static void assert_forwarded(struct seen s)
{
	if (s.v != INSPECT_FORWARD)
		fail_msg("expected FORWARD, got %d (%s)", s.v, s.reason ? s.reason : "-");
	assert_null(s.answer);
}

static const char *MIXED =
	"{'tools':["
	"{'name':'get_weather','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':true}},"
	"{'name':'delete_file','inputSchema':{'type':'object'},'annotations':{'destructiveHint':true}},"
	"{'name':'append_log','inputSchema':{'type':'object'},'annotations':{'readOnlyHint':false,"
	"'destructiveHint':false}},"
	"{'name':'mystery','inputSchema':{'type':'object'}}]}";

static void test_glue_preset_calls(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	rig_start(&r, preset_json(), NULL);
	assert_true(hook_policy_active(r.proc.policy));

	/* Before any listing, a call is refused as an unknown tool. */
	x_begin(&x, "staging", NULL);
	struct seen s = tcall(&r, &x, "get_weather", NULL);
	assert_refused(s, "unknown-tool", "deny");
	assert_null(json_object_get(json_object_get(json_object_get(s.answer, "error"), "data"),
	                            "hints"));
	assert_int_equal(json_integer_value(json_object_get(s.answer, "id")), 9);
	json_decref(s.answer);
	x_end(&r, &x);

	list_tools(&r, "staging", MIXED);

	x_begin(&x, "staging", "agent");
	assert_forwarded(tcall(&r, &x, "get_weather", NULL));
	s = tcall(&r, &x, "delete_file", "{'path':'/etc'}");
	assert_refused(s, "not-read-only", "deny");
	const json_t *data = json_object_get(json_object_get(s.answer, "error"), "data");
	assert_string_equal(json_string_value(json_object_get(data, "tool")), "delete_file");
	assert_string_equal(json_string_value(json_object_get(data, "method")), "tools/call");
	assert_string_equal(json_string_value(json_object_get(data, "change_word")), "delete");
	assert_true(json_is_false(json_object_get(json_object_get(data, "hints"), "readOnlyHint")));
	assert_true(json_is_true(json_object_get(json_object_get(data, "hints"), "destructiveHint")));
	json_decref(s.answer);
	s = tcall(&r, &x, "mystery", NULL);  /* unannotated */
	assert_refused(s, "not-read-only", "deny");
	json_decref(s.answer);
	s = tcall(&r, &x, "append_log", NULL);
	assert_refused(s, "not-read-only", "deny");
	json_decref(s.answer);
	x_end(&r, &x);

	/* Tool lists are per upstream: prod never listed get_weather. */
	x_begin(&x, "prod", NULL);
	s = tcall(&r, &x, "get_weather", NULL);
	assert_refused(s, "unknown-tool", "deny");
	json_decref(s.answer);
	x_end(&r, &x);

	struct hook_policy_stats st;
	hook_policy_get_stats(r.proc.policy, &st);
	assert_int_equal(st.allowed, 1);
	assert_int_equal(st.denied, 5);
	assert_int_equal(st.unknown_tool, 2);
	assert_int_equal(st.listings, 1);
	const struct policy *p = hook_policy_current(r.proc.policy);
	struct policy_rule_stats rs;
	assert_int_equal(policy_stats(p, 1, &rs), 0);
	assert_string_equal(rs.rule, "not-read-only");
	assert_int_equal(rs.denied, 3);

	json_t *sj = hook_policy_stats_json(r.proc.policy);
	assert_non_null(sj);
	assert_true(json_is_true(json_object_get(sj, "active")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(sj, "totals"), "denied")),
	                 5);
	assert_int_equal(json_array_size(json_object_get(sj, "rules")), 4);
	json_decref(sj);
	rig_stop(&r);
}

static void test_glue_hide(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	struct seen s;
	rig_start(&r, J("{'rules':[{'name':'hide-d','match':{'annotations':{'destructiveHint':true}},"
	                "'action':'hide'},{'name':'ci-hide','match':{'client':'ci','tool':'get_*'},"
	                "'action':'hide'}]}"), NULL);

	x_begin(&x, "staging", NULL);
	json_t *msg = tlist(&r, &x, "{'tools':[{'name':'get_weather','inputSchema':{},'annotations':"
	                            "{'readOnlyHint':true}},{'name':'delete_file','inputSchema':{}},"
	                            "{'name':'append_log','inputSchema':{},'annotations':"
	                            "{'destructiveHint':false}}],'nextCursor':'opaque==','_meta':"
	                            "{'k':1}}", NULL, &s);
	assert_forwarded(s);
	assert_true(s.modified);
	assert_string_equal(s.reason, "policy:hide");
	json_t *want = J("{'tools':[{'name':'get_weather','inputSchema':{},'annotations':"
	                 "{'readOnlyHint':true}},{'name':'append_log','inputSchema':{},'annotations':"
	                 "{'destructiveHint':false}}],'nextCursor':'opaque==','_meta':{'k':1}}");
	assert_true(json_equal(json_object_get(msg, "result"), want));
	json_decref(want);
	json_decref(msg);

	/* The next page, requested with its cursor: filtered too. */
	msg = tlist(&r, &x, "{'tools':[{'name':'drop_table','inputSchema':{}}]}", "opaque==", &s);
	assert_true(s.modified);
	assert_int_equal(json_array_size(json_object_get(json_object_get(msg, "result"), "tools")), 0);
	json_decref(msg);

	/* A hidden tool called anyway: refused, as "hide". */
	s = tcall(&r, &x, "delete_file", NULL);
	assert_refused(s, "hide-d", "hide");
	assert_has(json_string_value(json_object_get(json_object_get(s.answer, "error"), "message")),
	           "is hidden");
	json_decref(s.answer);
	assert_forwarded(tcall(&r, &x, "append_log", NULL));
	x_end(&r, &x);

	/* Per client: ci does not see get_* tools. */
	x_begin(&x, "staging", "ci");
	msg = tlist(&r, &x, "{'tools':[{'name':'get_weather','inputSchema':{},'annotations':"
	                    "{'readOnlyHint':true}}]}", NULL, &s);
	assert_true(s.modified);
	assert_int_equal(json_array_size(json_object_get(json_object_get(msg, "result"), "tools")), 0);
	json_decref(msg);
	x_end(&r, &x);

	/* A listing on another stream (no request known) is recognised by
	 * its shape; a "tools" member of another result is left alone. */
	x_begin(&x, "staging", NULL);
	msg = J("{'jsonrpc':'2.0','id':77,'result':{'tools':[{'name':'wipe','inputSchema':{}}]}}");
	s = deliver(&r, &x, INSPECT_FROM_SERVER, msg, NULL);
	assert_true(s.modified);
	json_decref(msg);
	json_t *req = J("{'jsonrpc':'2.0','id':78,'method':'prompts/list'}");
	msg = J("{'jsonrpc':'2.0','id':78,'result':{'tools':[{'name':'wipe','inputSchema':{}}]}}");
	deliver(&r, &x, INSPECT_FROM_CLIENT, req, NULL);
	s = deliver(&r, &x, INSPECT_FROM_SERVER, msg, req);
	assert_false(s.modified);
	assert_int_equal(json_array_size(json_object_get(json_object_get(msg, "result"), "tools")), 1);
	json_decref(msg);
	json_decref(req);
	x_end(&r, &x);

	struct hook_policy_stats st;
	hook_policy_get_stats(r.proc.policy, &st);
	assert_int_equal(st.tools_hidden, 4);
	struct policy_rule_stats rs;
	policy_stats(hook_policy_current(r.proc.policy), 0, &rs);
	assert_int_equal(rs.hidden, 3);
	assert_int_equal(rs.denied, 1);
	rig_stop(&r);
}

/* ---- listings that share their unchanged tools ------------------------------
 *
 * As jreuse hands listings over (proxy/base/jreuse.h): the tools that did
 * not change are the very values of the last listing. */

#define NSHARED 16

static json_t *stool(const char *name, const char *hint, const char *desc)
{
	char text[256];
	snprintf(text, sizeof(text), "{'name':'%s','description':'%s','inputSchema':{},"
	         "'annotations':{'%s':true}}", name, desc, hint);
	return J(text);
}

/* A tools/list of vals[0..n) (borrowed) in the exchange x; returns how
 * many tools the hooks left in it. */
static size_t tlist_values(struct rig *r, struct xch *x, json_t *const *vals, size_t n)
{
	json_t *tools = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append(tools, vals[i]);
	json_t *req = J("{'jsonrpc':'2.0','id':3,'method':'tools/list','params':{}}");
	json_t *msg = json_pack("{s:s, s:i, s:{s:o}}", "jsonrpc", "2.0", "id", 3, "result", "tools",
	                        tools);
	assert_int_equal(deliver(r, x, INSPECT_FROM_CLIENT, req, NULL).v, INSPECT_FORWARD);
	assert_int_equal(deliver(r, x, INSPECT_FROM_SERVER, msg, req).v, INSPECT_FORWARD);
	size_t left = json_array_size(json_object_get(json_object_get(msg, "result"), "tools"));
	json_decref(req);
	json_decref(msg);
	return left;
}

/* vals[i] := tool "t<i>", read-only. */
static void shared_tools(json_t **vals)
{
	for (size_t i = 0; i < NSHARED; i++) {
		char name[16];
		snprintf(name, sizeof(name), "t%zu", i);
		vals[i] = stool(name, "readOnlyHint", "one");
	}
}

static void shared_free(json_t **vals)
{
	for (size_t i = 0; i < NSHARED; i++)
		json_decref(vals[i]);
}

static void shared_replace(json_t **vals, size_t i, json_t *v)
{
	json_decref(vals[i]);
	vals[i] = v;
}

static int call_allowed(struct rig *r, struct xch *x, const char *tool)
{
	struct seen s = tcall(r, x, tool, NULL);
	json_decref(s.answer);
	return s.v == INSPECT_FORWARD;
}

/* A changed tool is judged as now listed, whether its call or its place
 * in the listing; the unchanged keep what they were decided. */
static void test_glue_shared_tools(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	json_t *v[NSHARED];
	rig_start(&r, J("{'rules':[{'name':'no-d','match':{'annotations':{'destructiveHint':true}},"
	                "'action':'deny'},{'name':'hide-x','match':{'tool':'x_*'},'action':'hide'}]}"),
	          NULL);
	shared_tools(v);
	shared_replace(v, 2, stool("x_2", "readOnlyHint", "one"));
	x_begin(&x, "staging", NULL);
	assert_int_equal(tlist_values(&r, &x, v, NSHARED), NSHARED - 1);
	assert_true(call_allowed(&r, &x, "t5"));
	shared_replace(v, 5, stool("t5", "destructiveHint", "two"));
	assert_int_equal(tlist_values(&r, &x, v, NSHARED), NSHARED - 1);
	assert_false(call_allowed(&r, &x, "t5"));
	assert_true(call_allowed(&r, &x, "t6"));
	shared_replace(v, 5, stool("t5", "readOnlyHint", "three"));
	assert_int_equal(tlist_values(&r, &x, v, NSHARED), NSHARED - 1);
	assert_true(call_allowed(&r, &x, "t5"));
	/* Renamed where it stands: hidden now. */
	shared_replace(v, 6, stool("x_6", "readOnlyHint", "one"));
	assert_int_equal(tlist_values(&r, &x, v, NSHARED), NSHARED - 2);
	shared_replace(v, 6, stool("t6", "readOnlyHint", "one"));
	assert_int_equal(tlist_values(&r, &x, v, NSHARED), NSHARED - 1);
	x_end(&r, &x);
	struct hook_policy_stats st;
	hook_policy_get_stats(r.proc.policy, &st);
	assert_int_equal(st.tools_hidden, 6);
	shared_free(v);
	rig_stop(&r);
}

/* Two tools of one name: the later one's hints are the name's, whichever
 * of the two changes. */
static void test_glue_shared_duplicate_names(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	json_t *v[NSHARED];
	rig_start(&r, J("{'rules':[{'name':'no-d','match':{'annotations':{'destructiveHint':true}},"
	                "'action':'deny'}]}"), NULL);
	shared_tools(v);
	shared_replace(v, 3, stool("dup", "readOnlyHint", "one"));
	shared_replace(v, 9, stool("dup", "destructiveHint", "one"));
	x_begin(&x, "staging", NULL);
	tlist_values(&r, &x, v, NSHARED);
	assert_false(call_allowed(&r, &x, "dup"));
	shared_replace(v, 3, stool("dup", "readOnlyHint", "two"));
	tlist_values(&r, &x, v, NSHARED);
	assert_false(call_allowed(&r, &x, "dup"));
	shared_replace(v, 9, stool("dup", "readOnlyHint", "two"));
	tlist_values(&r, &x, v, NSHARED);
	assert_true(call_allowed(&r, &x, "dup"));
	x_end(&r, &x);
	shared_free(v);
	rig_stop(&r);
}

/* A client-keyed hide rule: each client's listing is judged for it, the
 * same tools or not. */
static void test_glue_shared_clients(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	json_t *v[NSHARED];
	rig_start(&r, J("{'rules':[{'name':'ci-hide','match':{'client':'ci','tool':'t1'},"
	                "'action':'hide'}]}"), NULL);
	shared_tools(v);
	for (int round = 0; round < 2; round++) {
		x_begin(&x, "staging", "ci");
		assert_int_equal(tlist_values(&r, &x, v, NSHARED), NSHARED - 1);
		x_end(&r, &x);
		x_begin(&x, "staging", "ide");
		assert_int_equal(tlist_values(&r, &x, v, NSHARED), NSHARED);
		x_end(&r, &x);
		shared_replace(v, 7, stool("t7", "readOnlyHint", round ? "a" : "b"));
	}
	shared_free(v);
	rig_stop(&r);
}

static void test_glue_list_changed(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	struct seen s;
	rig_start(&r, J("{}"), NULL);

	x_begin(&x, "staging", NULL);
	json_decref(tlist(&r, &x, "{'tools':[{'name':'a','inputSchema':{}},{'name':'b',"
	                          "'inputSchema':{}}],'nextCursor':'2'}", NULL, NULL));
	/* Pages accumulate. */
	json_decref(tlist(&r, &x, "{'tools':[{'name':'c','inputSchema':{}}]}", "2", NULL));
	assert_forwarded(tcall(&r, &x, "a", NULL));
	assert_forwarded(tcall(&r, &x, "c", NULL));
	x_end(&r, &x);

	/* list_changed: stale, but kept until the next listing. */
	x_begin(&x, "staging", NULL);
	json_t *n = J("{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
	assert_forwarded(deliver(&r, &x, INSPECT_FROM_SERVER, n, NULL));
	json_decref(n);
	assert_forwarded(tcall(&r, &x, "a", NULL));
	s = tcall(&r, &x, "d", NULL);
	assert_refused(s, "unknown-tool", "deny");
	json_decref(s.answer);
	/* The next listing replaces the old one. */
	json_decref(tlist(&r, &x, "{'tools':[{'name':'c','inputSchema':{}},{'name':'d',"
	                          "'inputSchema':{}}]}", NULL, NULL));
	assert_forwarded(tcall(&r, &x, "d", NULL));
	s = tcall(&r, &x, "a", NULL);
	assert_refused(s, "unknown-tool", "deny");
	json_decref(s.answer);
	x_end(&r, &x);
	rig_stop(&r);
}

/* A hook between the tracker and policy withholding the tool "broken"
 * from listings, as the contract's filter mode does. */
static enum inspect_verdict withhold_broken(void *arg, struct inspect_msg *m)
{
	(void)arg;
	json_t *tools = json_object_get(json_object_get(m->msg, "result"), "tools");
	for (size_t i = json_array_size(tools); i-- > 0;) {
		const char *n = json_string_value(json_object_get(json_array_get(tools, i), "name"));
		if (n && strcmp(n, "broken") == 0) {
			json_array_remove(tools, i);
			m->modified = 1;
		}
	}
	return INSPECT_FORWARD;
}

/* The policy learns tools as the upstream listed them (from the tracker),
 * and acts on the listing as the hooks before it left it. */
static void test_glue_learns_the_upstream_listing(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	char err[512];
	rig_init(&r, 1, J("{}"), NULL);
	r.proc.tools = tools_setup(&r.ctx, 0);
	assert_non_null(r.proc.tools);
	assert_true(inspect_add(r.ctx.insp, "withhold", withhold_broken, NULL, NULL) >= 0);
	assert_int_equal(hook_policy_setup(&r.ctx, err, sizeof(err)), 0);

	x_begin(&x, "staging", NULL);
	json_t *msg = tlist(&r, &x, "{'tools':[{'name':'ok','inputSchema':{}},{'name':'broken',"
	                            "'inputSchema':{}}]}", NULL, NULL);
	/* The client got the listing without it... */
	json_t *tools = json_object_get(json_object_get(msg, "result"), "tools");
	assert_int_equal(json_array_size(tools), 1);
	json_decref(msg);
	/* ...but the upstream listed it: a call is not one to an unknown tool. */
	assert_forwarded(tcall(&r, &x, "broken", NULL));
	assert_forwarded(tcall(&r, &x, "ok", NULL));
	struct seen s = tcall(&r, &x, "never-listed", NULL);
	assert_refused(s, "unknown-tool", "deny");
	json_decref(s.answer);
	x_end(&r, &x);
	rig_stop(&r);
}

static void test_glue_reload(void **state)
{
	(void)state;
	struct rig r;
	struct xch x1, x2;
	struct seen s;
	char err[1024];
	rig_start(&r, J("{'rules':[{'name':'no-t','match':{'tool':'t'},'action':'deny'}]}"), NULL);
	list_tools(&r, "staging", "{'tools':[{'name':'t','inputSchema':{}},{'name':'u',"
	                          "'inputSchema':{}}]}");

	/* x1 starts under the first policy... */
	x_begin(&x1, "staging", NULL);
	assert_forwarded(tcall(&r, &x1, "u", NULL));

	/* ...a reload allows everything... */
	struct px_config next = r.cfg;
	next.policy = J("{'default':'allow'}");
	assert_int_equal(hook_policy_check(&next, err, sizeof(err)), 0);
	assert_int_equal(hook_policy_reload(&r.ctx, &next, err, sizeof(err)), 0);
	json_decref(next.policy);

	/* ...x1 finishes under the policy it started with; x2 gets the new. */
	s = tcall(&r, &x1, "t", NULL);
	assert_refused(s, "no-t", "deny");
	json_decref(s.answer);
	x_begin(&x2, "staging", NULL);
	assert_forwarded(tcall(&r, &x2, "t", NULL));
	x_end(&r, &x1);
	x_end(&r, &x2);

	/* A bad policy keeps the running one and says why, with locations. */
	next.policy = J("{'rules':[{'name':7,'action':'deny'}],'dflt':1}");
	assert_int_equal(hook_policy_check(&next, err, sizeof(err)), -1);
	assert_has(err, "$.policy.dflt: unknown key");
	assert_int_equal(hook_policy_reload(&r.ctx, &next, err, sizeof(err)), -1);
	json_decref(next.policy);
	assert_has(err, "$.policy.rules[0].name: must be a string");
	assert_has(err, "$.policy.dflt: unknown key");
	x_begin(&x1, "staging", NULL);
	assert_forwarded(tcall(&r, &x1, "t", NULL));
	x_end(&r, &x1);

	/* The tool lists survive reloads; a reload without a policy turns it
	 * off. */
	next.policy = NULL;
	assert_int_equal(hook_policy_reload(&r.ctx, &next, err, sizeof(err)), 0);
	assert_false(hook_policy_active(r.proc.policy));
	assert_null(hook_policy_current(r.proc.policy));
	x_begin(&x1, "staging", NULL);
	assert_forwarded(tcall(&r, &x1, "never-listed", NULL));
	x_end(&r, &x1);

	struct hook_policy_stats st;
	hook_policy_get_stats(r.proc.policy, &st);
	assert_int_equal(st.reloads, 2);
	assert_int_equal(st.reload_failures, 1);
	json_t *sj = hook_policy_stats_json(r.proc.policy);
	assert_true(json_is_false(json_object_get(sj, "active")));
	json_decref(sj);
	rig_stop(&r);
}

/* The hook keeps what a tool's name decides per policy (policy_memo):
 * calls repeated after the tool is listed again with other annotations,
 * or after a reload, must follow the new facts. */
static void test_glue_memo_follows_listings(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	struct seen s;
	rig_start(&r, J("{'rules':[{'name':'no-destructive','match':{'annotations':"
	                "{'destructiveHint':true}},'action':'deny'}]}"), NULL);
	list_tools(&r, "staging", "{'tools':[{'name':'w','inputSchema':{},'annotations':"
	                          "{'readOnlyHint':true}}]}");
	x_begin(&x, "staging", NULL);
	for (int i = 0; i < 3; i++)
		assert_forwarded(tcall(&r, &x, "w", NULL));
	x_end(&r, &x);

	/* Listed again, now destructive: refused from the next call on. */
	x_begin(&x, "staging", NULL);
	json_t *n = J("{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
	assert_forwarded(deliver(&r, &x, INSPECT_FROM_SERVER, n, NULL));
	json_decref(n);
	json_decref(tlist(&r, &x, "{'tools':[{'name':'w','inputSchema':{},'annotations':"
	                          "{'destructiveHint':true}}]}", NULL, NULL));
	for (int i = 0; i < 2; i++) {
		s = tcall(&r, &x, "w", NULL);
		assert_refused(s, "no-destructive", "deny");
		json_decref(s.answer);
	}
	/* A later page naming it read-only again (no list_changed): allowed. */
	json_decref(tlist(&r, &x, "{'tools':[{'name':'w','inputSchema':{},'annotations':"
	                          "{'readOnlyHint':true}}]}", NULL, NULL));
	assert_forwarded(tcall(&r, &x, "w", NULL));
	x_end(&r, &x);

	/* The same tool on another upstream is not known there. */
	x_begin(&x, "prod", NULL);
	s = tcall(&r, &x, "w", NULL);
	assert_refused(s, "unknown-tool", "deny");
	json_decref(s.answer);
	x_end(&r, &x);
	rig_stop(&r);
}

static void test_glue_memo_reload(void **state)
{
	(void)state;
	struct rig r;
	struct xch x1, x2;
	struct seen s;
	char err[1024];
	rig_start(&r, J("{'rules':[{'name':'words','match':{'name_words':true},"
	                "'action':'deny'}]}"), NULL);
	list_tools(&r, "staging", "{'tools':[{'name':'delete_row','inputSchema':{}},"
	                          "{'name':'get_row','inputSchema':{}}]}");
	x_begin(&x1, "staging", NULL);
	for (int i = 0; i < 3; i++) {
		s = tcall(&r, &x1, "delete_row", NULL);
		assert_refused(s, "words", "deny");
		json_decref(s.answer);
		assert_forwarded(tcall(&r, &x1, "get_row", NULL));
	}

	/* The reload turns the rule around; x1 keeps its policy (and what its
	 * memo holds), x2 starts under the new one. */
	struct px_config next = r.cfg;
	next.policy = J("{'change_words':['get'],'rules':[{'name':'gets','match':"
	                "{'name_words':true},'action':'deny'}]}");
	assert_int_equal(hook_policy_reload(&r.ctx, &next, err, sizeof(err)), 0);
	json_decref(next.policy);
	x_begin(&x2, "staging", NULL);
	for (int i = 0; i < 2; i++) {
		s = tcall(&r, &x1, "delete_row", NULL);
		assert_refused(s, "words", "deny");
		json_decref(s.answer);
		assert_forwarded(tcall(&r, &x1, "get_row", NULL));
		assert_forwarded(tcall(&r, &x2, "delete_row", NULL));
		s = tcall(&r, &x2, "get_row", NULL);
		assert_refused(s, "gets", "deny");
		json_decref(s.answer);
	}
	x_end(&r, &x1);
	x_end(&r, &x2);
	rig_stop(&r);
}

/* With rules that name clients, one tool decides differently per client:
 * nothing kept for one client may answer another's call. */
static void test_glue_memo_clients(void **state)
{
	(void)state;
	struct rig r;
	struct xch a, b;
	struct seen s;
	rig_start(&r, J("{'rules':[{'name':'ci-only-reads','match':{'client':'ci','tool':'w'},"
	                "'action':'deny'}]}"), NULL);
	list_tools(&r, "staging", "{'tools':[{'name':'w','inputSchema':{}}]}");
	x_begin(&a, "staging", "ci");
	x_begin(&b, "staging", "agent");
	for (int i = 0; i < 3; i++) {
		s = tcall(&r, &a, "w", NULL);
		assert_refused(s, "ci-only-reads", "deny");
		json_decref(s.answer);
		assert_forwarded(tcall(&r, &b, "w", NULL));
	}
	x_end(&r, &a);
	x_end(&r, &b);
	rig_stop(&r);
}

/* A reload that brings another baseline: an exchange that started before
 * it keeps its policy but sees the new baseline (as always), so nothing
 * its policy decided for a tool before the reload may be reused. */
static void test_glue_memo_reload_baseline(void **state)
{
	(void)state;
	struct rig r;
	struct xch x1, x2;
	struct seen s;
	char err[1024];
	char path[] = "/tmp/test_policy_memo_baseXXXXXX";
	th_temp_write(path, "{\"tools\":[{\"name\":\"w\",\"inputSchema\":{},\"annotations\":"
	                    "{\"readOnlyHint\":true}}]}");
	json_t *deny_destructive = J("{'rules':[{'name':'no-destructive','match':{'annotations':"
	                             "{'destructiveHint':true}},'action':'deny'}]}");
	rig_start(&r, json_deep_copy(deny_destructive), path);
	list_tools(&r, "staging", "{'tools':[{'name':'w','inputSchema':{},'annotations':"
	                          "{'readOnlyHint':true}}]}");
	x_begin(&x1, "staging", NULL);
	for (int i = 0; i < 2; i++)
		assert_forwarded(tcall(&r, &x1, "w", NULL));

	/* The baseline now says w destroys: the less safe claim wins. */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"tools\":[{\"name\":\"w\",\"inputSchema\":{},\"annotations\":"
	      "{\"destructiveHint\":true}}]}", f);
	fclose(f);
	struct px_config next = r.cfg;
	next.policy = deny_destructive;
	assert_int_equal(hook_policy_reload(&r.ctx, &next, err, sizeof(err)), 0);
	x_begin(&x2, "staging", NULL);
	for (int i = 0; i < 2; i++) {
		s = tcall(&r, &x1, "w", NULL);
		assert_refused(s, "no-destructive", "deny");
		json_decref(s.answer);
		s = tcall(&r, &x2, "w", NULL);
		assert_refused(s, "no-destructive", "deny");
		json_decref(s.answer);
	}
	x_end(&r, &x1);
	x_end(&r, &x2);
	json_decref(deny_destructive);
	rig_stop(&r);
	unlink(path);
}

static void test_glue_no_policy_then_reload(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	struct seen s;
	char err[256];
	rig_start(&r, NULL, NULL);
	assert_false(hook_policy_active(r.proc.policy));
	list_tools(&r, "prod", "{'tools':[{'name':'a','inputSchema':{}}]}");
	x_begin(&x, "prod", NULL);
	assert_forwarded(tcall(&r, &x, "zz", NULL));
	x_end(&r, &x);

	struct px_config next = r.cfg;
	next.policy = J("{}");
	assert_int_equal(hook_policy_reload(&r.ctx, &next, err, sizeof(err)), 0);
	json_decref(next.policy);
	x_begin(&x, "prod", NULL);
	assert_forwarded(tcall(&r, &x, "a", NULL));  /* listed before the policy came */
	s = tcall(&r, &x, "zz", NULL);
	assert_refused(s, "unknown-tool", "deny");
	json_decref(s.answer);
	x_end(&r, &x);
	rig_stop(&r);
}

static void test_glue_dry_run_and_log(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	rig_start(&r, J("{'dry_run':true,'rules':[{'name':'d','match':{'tool':'t'},'action':'deny'},"
	                "{'name':'l','match':{'tool':'u'},'action':'log'}]}"), NULL);
	list_tools(&r, "staging", "{'tools':[{'name':'t','inputSchema':{}},{'name':'u',"
	                          "'inputSchema':{}}]}");
	x_begin(&x, "staging", NULL);
	struct seen s = tcall(&r, &x, "t", NULL);
	assert_forwarded(s);
	assert_string_equal(s.reason, "dry-run:d");
	s = tcall(&r, &x, "u", NULL);
	assert_forwarded(s);
	assert_string_equal(s.reason, "l");
	s = tcall(&r, &x, "ghost", NULL);
	assert_forwarded(s);
	assert_string_equal(s.reason, "dry-run:unknown-tool");
	x_end(&r, &x);
	struct hook_policy_stats st;
	hook_policy_get_stats(r.proc.policy, &st);
	assert_int_equal(st.logged, 3);
	assert_int_equal(st.dry_run, 2);
	assert_int_equal(st.denied, 0);
	assert_int_equal(st.unknown_tool, 1);
	rig_stop(&r);
}

static void test_glue_methods(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	struct seen s;
	rig_start(&r, J("{'rules':["
	                "{'name':'no-sub','match':{'method':'resources/subscribe'},'action':'deny'},"
	                "{'name':'no-sampling','match':{'method':'sampling/*'},'action':'deny'},"
	                "{'name':'no-cancel','match':{'method':'notifications/cancelled'},"
	                "'action':'deny'}]}"), NULL);
	x_begin(&x, "staging", NULL);
	json_t *m = J("{'jsonrpc':'2.0','id':'s1','method':'resources/subscribe','params':{'uri':'x'}}");
	s = deliver(&r, &x, INSPECT_FROM_CLIENT, m, NULL);
	assert_refused(s, "no-sub", "deny");
	const json_t *data = json_object_get(json_object_get(s.answer, "error"), "data");
	assert_null(json_object_get(data, "tool"));
	assert_string_equal(json_string_value(json_object_get(data, "method")), "resources/subscribe");
	assert_string_equal(json_string_value(json_object_get(s.answer, "id")), "s1");
	json_decref(s.answer);
	json_decref(m);

	/* A notification cannot be answered: dropped. */
	m = J("{'jsonrpc':'2.0','method':'notifications/cancelled','params':{'requestId':1}}");
	s = deliver(&r, &x, INSPECT_FROM_CLIENT, m, NULL);
	assert_int_equal(s.v, INSPECT_DROP);
	assert_null(s.answer);
	assert_string_equal(s.reason, "policy:no-cancel");
	json_decref(m);

	/* A server request is dropped too (the hook cannot answer upstream). */
	m = J("{'jsonrpc':'2.0','id':5,'method':'sampling/createMessage','params':{}}");
	s = deliver(&r, &x, INSPECT_FROM_SERVER, m, NULL);
	assert_int_equal(s.v, INSPECT_DROP);
	assert_null(s.answer);
	json_decref(m);

	/* Everything else passes. */
	m = J("{'jsonrpc':'2.0','id':6,'method':'resources/read','params':{'uri':'x'}}");
	assert_forwarded(deliver(&r, &x, INSPECT_FROM_CLIENT, m, NULL));
	json_decref(m);
	m = J("{'jsonrpc':'2.0','method':'notifications/progress','params':{}}");
	assert_forwarded(deliver(&r, &x, INSPECT_FROM_SERVER, m, NULL));
	json_decref(m);
	m = J("{'jsonrpc':'2.0','id':5,'result':{}}");
	assert_forwarded(deliver(&r, &x, INSPECT_FROM_CLIENT, m, NULL));
	json_decref(m);
	x_end(&r, &x);
	rig_stop(&r);
}

static void test_glue_baseline(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	struct seen s;
	char path[] = "/tmp/test_policy_baselineXXXXXX";
	th_temp_write(path, "{\"tools\":[{\"name\":\"reader\",\"inputSchema\":{},\"annotations\":"
	                    "{\"readOnlyHint\":false}},{\"name\":\"old_reader\",\"inputSchema\":{},"
	                    "\"annotations\":{\"readOnlyHint\":true}},{\"name\":\"still_reader\","
	                    "\"inputSchema\":{},\"annotations\":{\"readOnlyHint\":true}}]}");

	rig_start(&r, preset_json(), path);
	list_tools(&r, "staging", "{'tools':[{'name':'reader','inputSchema':{},'annotations':"
	                          "{'readOnlyHint':true}},{'name':'still_reader','inputSchema':{},"
	                          "'annotations':{'readOnlyHint':true}}]}");
	x_begin(&x, "staging", NULL);
	/* Claims read-only now, was not in the baseline: the less safe wins. */
	s = tcall(&r, &x, "reader", NULL);
	assert_refused(s, "not-read-only", "deny");
	json_decref(s.answer);
	assert_forwarded(tcall(&r, &x, "still_reader", NULL));
	/* Only in the baseline: known, judged by it. */
	assert_forwarded(tcall(&r, &x, "old_reader", NULL));
	x_end(&r, &x);
	rig_stop(&r);

	/* A baseline that cannot be read stops the setup (and the check). */
	unlink(path);
	rig_init(&r, 1, J("{}"), path);
	char err[512];
	assert_int_equal(hook_policy_check(&r.cfg, err, sizeof(err)), -1);
	assert_has(err, "policy: upstream staging: baseline");
	assert_int_equal(hook_policy_setup(&r.ctx, err, sizeof(err)), -1);
	assert_has(err, "policy: upstream staging: baseline");
	assert_null(r.proc.policy);
	rig_stop(&r);
}

static void test_glue_cap(void **state)
{
	(void)state;
	struct rig r;
	struct xch x;
	rig_start(&r, J("{}"), NULL);
	json_t *tools = json_array();
	for (int i = 0; i <= HOOK_POLICY_MAX_TOOLS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "t%d", i);
		json_array_append_new(tools, json_pack("{s:s, s:{}}", "name", name, "inputSchema"));
	}
	char *long_name = malloc(HOOK_POLICY_MAX_TOOL_NAME + 2);
	memset(long_name, 'x', HOOK_POLICY_MAX_TOOL_NAME + 1);
	long_name[HOOK_POLICY_MAX_TOOL_NAME + 1] = '\0';
	json_array_insert_new(tools, 0, json_pack("{s:s, s:{}}", "name", long_name, "inputSchema"));
	json_t *res = json_pack("{s:o}", "tools", tools);
	char *text = json_dumps(res, JSON_COMPACT);
	json_decref(res);
	list_tools(&r, "staging", text);
	free(text);

	struct hook_policy_stats st;
	hook_policy_get_stats(r.proc.policy, &st);
	assert_int_equal(st.tools_over_cap, 2);
	x_begin(&x, "staging", NULL);
	assert_forwarded(tcall(&r, &x, "t0", NULL));
	assert_forwarded(tcall(&r, &x, "t9999", NULL));
	struct seen s = tcall(&r, &x, "t10000", NULL);
	assert_refused(s, "unknown-tool", "deny");
	json_decref(s.answer);
	s = tcall(&r, &x, long_name, NULL);
	assert_refused(s, "unknown-tool", "deny");
	json_decref(s.answer);
	x_end(&r, &x);
	free(long_name);
	rig_stop(&r);
}

/* ---- the glue under threads ------------------------------------------------------------------
 * Workers judge calls with no lock while a writer lists tools and
 * reloads (hook_policy.c, "Threads"). Readers check what must hold
 * whatever they raced with: a tool every listing names is never unknown
 * nor judged by half-built hints; one exchange keeps one policy (the
 * same rule refuses all its calls); the totals count every decision
 * once. Policy B names a client, so its calls go through each thread's
 * memo rather than the tables' entries. */

#define THR_READERS 3
#define THR_ROUNDS  4000  /* exchanges per reader, 5 calls each */

static const char *const THR_POLICY_A =
	"{'default':'allow','rules':["
	"{'name':'a-deny','match':{'tool':'t-deny'},'action':'deny'},"
	"{'name':'no-destructive','match':{'annotations':{'destructiveHint':true}},'action':'deny'},"
	"{'name':'hide-secret','match':{'tool':'secret*'},'action':'hide'}]}";
static const char *const THR_POLICY_B =
	"{'default':'allow','rules':["
	"{'name':'b-deny','match':{'tool':'t-deny'},'action':'deny'},"
	"{'name':'nobody','match':{'client':'nobody','tool':'fixed'},'action':'deny'},"
	"{'name':'no-destructive','match':{'annotations':{'destructiveHint':true}},'action':'deny'},"
	"{'name':'hide-secret','match':{'tool':'secret*'},'action':'hide'}]}";

struct thr {
	struct rig *r;
	struct inspect *insp;  /* this thread's chain, as each worker has */
	unsigned long forwarded, refused;
	char bad[600];         /* the first broken promise, or "" */
	int *readers_done;     /* atomic */
};

static void thr_end(struct thr *t, struct xch *x)
{
	struct inspect_exchange e = {.where = &x->w};
	inspect_exchange_done(t->insp, &e);
	for (size_t i = 0; i < INSPECT_MAX_HOOKS; i++)
		if (x->w.hook_data[i] && !t->bad[0])
			snprintf(t->bad, sizeof(t->bad), "exchange data left in slot %zu", i);
}

/* Calls tool; returns the refusing rule (static or the answer's, copied
 * into rule), or NULL when forwarded. */
static const char *thr_call(struct thr *t, struct xch *x, const char *tool, char *rule,
                            size_t rulelen)
{
	json_t *msg = json_pack("{s:s, s:i, s:s, s:{s:s, s:{}}}", "jsonrpc", "2.0", "id", 9,
	                        "method", "tools/call", "params", "name", tool, "arguments");
	struct seen s = deliver_in(t->insp, x, INSPECT_FROM_CLIENT, msg, NULL);
	json_decref(msg);
	if (s.v == INSPECT_FORWARD) {
		t->forwarded++;
		return NULL;
	}
	t->refused++;
	const json_t *data = json_object_get(json_object_get(s.answer, "error"), "data");
	const char *name = json_string_value(json_object_get(data, "rule"));
	snprintf(rule, rulelen, "%s", name ? name : "?");
	json_decref(s.answer);
	return rule;
}

static void thr_fail(struct thr *t, const char *what, const char *rule)
{
	if (!t->bad[0])
		snprintf(t->bad, sizeof(t->bad), "%s (%s)", what, rule ? rule : "forwarded");
}

static void *thr_reader(void *arg)
{
	struct thr *t = arg;
	char first[64], rule[64];
	for (int i = 0; i < THR_ROUNDS && !t->bad[0]; i++) {
		struct xch x;
		x_begin(&x, "staging", "agent");
		/* The exchange's first message fixes its policy: a-deny or
		 * b-deny refuses t-deny all through it, whatever reloads. */
		const char *r0 = thr_call(t, &x, "t-deny", first, sizeof(first));
		if (!r0 || (strcmp(r0, "a-deny") != 0 && strcmp(r0, "b-deny") != 0))
			thr_fail(t, "t-deny not refused by a policy's rule", r0);
		for (int k = 0; k < 2; k++) {
			const char *rk = thr_call(t, &x, "t-deny", rule, sizeof(rule));
			if (!rk || !r0 || strcmp(rk, r0) != 0)
				thr_fail(t, "an exchange changed policy", rk);
		}
		/* Every listing names fixed, read-only. */
		const char *rf = thr_call(t, &x, "fixed", rule, sizeof(rule));
		if (rf)
			thr_fail(t, "fixed refused", rf);
		/* churn comes and goes, read-only or destructive. */
		const char *rc = thr_call(t, &x, "churn", rule, sizeof(rule));
		if (rc && strcmp(rc, "unknown-tool") != 0 && strcmp(rc, "no-destructive") != 0)
			thr_fail(t, "churn refused by a rule that cannot match it", rc);
		thr_end(t, &x);
	}
	__atomic_add_fetch(t->readers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static const char *const THR_LISTS[] = {
	"{'tools':[{'name':'t-deny','inputSchema':{},'annotations':{'readOnlyHint':true}},"
	"{'name':'fixed','inputSchema':{},'annotations':{'readOnlyHint':true}},"
	"{'name':'secret_x','inputSchema':{},'annotations':{'readOnlyHint':true}},"
	"{'name':'churn','inputSchema':{},'annotations':{'readOnlyHint':true}}]}",
	"{'tools':[{'name':'churn','inputSchema':{},'annotations':{'destructiveHint':true}},"
	"{'name':'fixed','inputSchema':{},'annotations':{'readOnlyHint':true}},"
	"{'name':'t-deny','inputSchema':{},'annotations':{'readOnlyHint':true}}]}",
	"{'tools':[{'name':'fixed','inputSchema':{},'annotations':{'readOnlyHint':true}},"
	"{'name':'secret_y','inputSchema':{},'annotations':{'readOnlyHint':true}},"
	"{'name':'t-deny','inputSchema':{},'annotations':{'readOnlyHint':true}}]}",
};

/* Lists (after list_changed, so each listing replaces the last) and
 * reloads until the readers are done. */
static void *thr_writer(void *arg)
{
	struct thr *t = arg;
	struct rig *r = t->r;
	unsigned long n = 0;
	while (__atomic_load_n(t->readers_done, __ATOMIC_ACQUIRE) < THR_READERS && !t->bad[0]) {
		struct xch x;
		x_begin(&x, "staging", NULL);
		json_t *note = J("{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
		deliver_in(t->insp, &x, INSPECT_FROM_SERVER, note, NULL);
		json_decref(note);
		json_t *req = J("{'jsonrpc':'2.0','id':3,'method':'tools/list','params':{}}");
		json_t *res = json_pack("{s:s, s:i, s:o}", "jsonrpc", "2.0", "id", 3, "result",
		                        J(THR_LISTS[n % 3]));
		deliver_in(t->insp, &x, INSPECT_FROM_CLIENT, req, NULL);
		deliver_in(t->insp, &x, INSPECT_FROM_SERVER, res, req);
		const json_t *tools = json_object_get(json_object_get(res, "result"), "tools");
		for (size_t i = 0; i < json_array_size(tools); i++) {
			const char *name =
				json_string_value(json_object_get(json_array_get(tools, i), "name"));
			if (name && strncmp(name, "secret", 6) == 0)
				thr_fail(t, "a secret tool was not hidden", name);
		}
		json_decref(req);
		json_decref(res);
		thr_end(t, &x);
		if (++n % 5 == 0) {
			char err[512];
			struct px_config next = r->cfg;
			next.policy = J(n % 10 ? THR_POLICY_B : THR_POLICY_A);
			if (hook_policy_reload(&r->ctx, &next, err, sizeof(err)) < 0)
				thr_fail(t, "reload failed", err);
			json_decref(next.policy);
		}
		/* Some listings change nothing: no new view. */
		if (n % 7 == 0)
			list_tools(r, "prod", THR_LISTS[0]);
	}
	return NULL;
}

static void test_glue_threads(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, J(THR_POLICY_A), NULL);
	list_tools(&r, "staging", THR_LISTS[0]);
	int readers_done = 0;
	struct thr t[THR_READERS + 1];
	pthread_t th[THR_READERS + 1];
	for (int i = 0; i <= THR_READERS; i++) {
		t[i] = (struct thr){.r = &r, .insp = inspect_clone(r.ctx.insp),
		                    .readers_done = &readers_done};
		assert_non_null(t[i].insp);
	}
	/* The writer's prod listings go through r's own chain: on its thread. */
	assert_int_equal(pthread_create(&th[THR_READERS], NULL, thr_writer, &t[THR_READERS]), 0);
	for (int i = 0; i < THR_READERS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thr_reader, &t[i]), 0);
	for (int i = 0; i <= THR_READERS; i++)
		pthread_join(th[i], NULL);

	unsigned long forwarded = 0, refused = 0;
	for (int i = 0; i <= THR_READERS; i++) {
		if (t[i].bad[0])
			fail_msg("thread %d: %s", i, t[i].bad);
		forwarded += t[i].forwarded;
		refused += t[i].refused;
		inspect_free(t[i].insp);
	}
	assert_int_equal(refused + forwarded, (unsigned long)THR_READERS * THR_ROUNDS * 5);
	struct hook_policy_stats st;
	hook_policy_get_stats(r.proc.policy, &st);
	assert_int_equal(st.allowed, forwarded);
	assert_int_equal(st.denied, refused);
	assert_true(st.reloads > 0);
	if (getenv("THR_VERBOSE"))
		fprintf(stderr, "threads: %lu forwarded, %lu refused, %llu listings, %llu reloads\n",
		        forwarded, refused, (unsigned long long)st.listings,
		        (unsigned long long)st.reloads);
	json_decref(r.cfg.policy);
	r.cfg.policy = NULL;
	rig_stop(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glob),
		cmocka_unit_test(test_regex_copy_per_thread),
		cmocka_unit_test(test_pointer),
		cmocka_unit_test(test_hint_defaults),
		cmocka_unit_test(test_annotation_matchers),
		cmocka_unit_test(test_baseline_less_safe),
		cmocka_unit_test(test_name_words_builtin),
		cmocka_unit_test(test_name_words_rules),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_regex_blowups_refused),
		cmocka_unit_test(test_regex_limits_keep_realistic),
		cmocka_unit_test(test_client_upstream_method),
		cmocka_unit_test(test_order_and_default),
		cmocka_unit_test(test_dry_run),
		cmocka_unit_test(test_unknown_tools),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_loader_errors),
		cmocka_unit_test(test_loader_limits),
		cmocka_unit_test(test_loader_schema_hint),
		cmocka_unit_test(test_loader_full_example),
		cmocka_unit_test(test_read_only_preset),
		cmocka_unit_test(test_glue_preset_calls),
		cmocka_unit_test(test_glue_hide),
		cmocka_unit_test(test_glue_list_changed),
		cmocka_unit_test(test_glue_learns_the_upstream_listing),
		cmocka_unit_test(test_glue_reload),
		cmocka_unit_test(test_glue_memo_follows_listings),
		cmocka_unit_test(test_glue_memo_reload),
		cmocka_unit_test(test_glue_memo_clients),
		cmocka_unit_test(test_glue_memo_reload_baseline),
		cmocka_unit_test(test_glue_no_policy_then_reload),
		cmocka_unit_test(test_glue_dry_run_and_log),
		cmocka_unit_test(test_glue_methods),
		cmocka_unit_test(test_glue_baseline),
		cmocka_unit_test(test_glue_cap),
		cmocka_unit_test(test_glue_threads),
		cmocka_unit_test(test_glue_shared_tools),
		cmocka_unit_test(test_glue_shared_duplicate_names),
		cmocka_unit_test(test_glue_shared_clients),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

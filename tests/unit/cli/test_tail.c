/* Unit tests for `mcpwarden tail` and `mcpwarden status` (proxy/cli/
 * tail.c, status.c): the option parsing and the server-side filter path,
 * the client-side filter, the line format (columns, colour, what a
 * terminal must never receive), and status's summary of canned replies
 * (verdicts, defensive reading of members it does not know, the busiest
 * tools). The network half runs in tests/integration/tail-status.test.mjs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/cli/cli_out.h"
#include "proxy/cli/status.h"
#include "proxy/cli/tail.h"
#include "tests/unit/helpers.h"

#define ARGV(...) ((char *[]){"tail", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"tail", __VA_ARGS__}) / sizeof(char *)))

static int parse(struct tail_opts *o, char *err, int argc, char **argv)
{
	err[0] = '\0';
	return tail_parse_args(argc, argv, o, err, 256);
}

/* ---- options and the stream's path ------------------------------------------ */

static void test_parse_filters_and_path(void **state)
{
	(void)state;
	struct tail_opts o;
	char err[256], path[256];
	unsetenv("MCPWARDEN_ADMIN_TOKEN");
	assert_int_equal(parse(&o, err, ARGC("http://h:1", "--tool", "a b&c", "--outcome", "blocked",
	                                     "--upstream", "billing", "--color", "never", "--json"),
	                       ARGV("http://h:1", "--tool", "a b&c", "--outcome", "blocked",
	                            "--upstream", "billing", "--color", "never", "--json")),
	                 0);
	assert_string_equal(o.url, "http://h:1");
	assert_string_equal(o.upstream, "billing");
	assert_int_equal(o.color, TAIL_COLOR_NEVER);
	assert_true(o.json);
	assert_null(o.token);
	assert_int_equal(tail_stream_path(&o, path, sizeof(path)), 0);
	/* tool and outcome go to the endpoint, encoded; upstream does not (the
	 * stream has no such filter) */
	assert_string_equal(path, "/calls/stream?tool=a%20b%26c&outcome=blocked");
	assert_int_equal(tail_stream_path(&o, path, 20), -1);

	assert_int_equal(parse(&o, err, ARGC("http://h:1"), ARGV("http://h:1")), 0);
	assert_int_equal(tail_stream_path(&o, path, sizeof(path)), 0);
	assert_string_equal(path, "/calls/stream");
	assert_int_equal(o.color, TAIL_COLOR_AUTO);
}

static void test_parse_refuses(void **state)
{
	(void)state;
	struct tail_opts o;
	char err[256];
	assert_int_equal(parse(&o, err, ARGC("http://h:1", "--outcome", "fine"),
	                       ARGV("http://h:1", "--outcome", "fine")), -1);
	assert_non_null(strstr(err, "tool_error"));
	assert_int_equal(parse(&o, err, ARGC("http://h:1", "--color", "sometimes"),
	                       ARGV("http://h:1", "--color", "sometimes")), -1);
	assert_int_equal(parse(&o, err, ARGC("http://h:1", "--tool"), ARGV("http://h:1", "--tool")), -1);
	assert_non_null(strstr(err, "needs a value"));
	assert_int_equal(parse(&o, err, ARGC("http://h:1", "--tool", "a", "--tool", "b"),
	                       ARGV("http://h:1", "--tool", "a", "--tool", "b")), -1);
	assert_int_equal(parse(&o, err, ARGC("http://h:1", "--tool", ""),
	                       ARGV("http://h:1", "--tool", "")), -1);
	assert_int_equal(parse(&o, err, ARGC("http://h:1", "--bogus"), ARGV("http://h:1", "--bogus")), -1);
	assert_int_equal(parse(&o, err, ARGC("--json"), ARGV("--json")), -1);
	assert_non_null(strstr(err, "ADMIN_URL missing"));
	assert_int_equal(parse(&o, err, ARGC("a", "b"), ARGV("a", "b")), -1);
	assert_int_equal(parse(&o, err, ARGC("--help"), ARGV("--help")), 1);
}

static void test_token_from_env_never_in_errors(void **state)
{
	(void)state;
	struct tail_opts o;
	char err[256];
	setenv("MCPWARDEN_ADMIN_TOKEN", "s3cret-token-value", 1);
	assert_int_equal(parse(&o, err, ARGC("http://h:1"), ARGV("http://h:1")), 0);
	assert_string_equal(o.token, "s3cret-token-value");
	/* --token wins over the environment */
	assert_int_equal(parse(&o, err, ARGC("http://h:1", "--token", "other-token"),
	                       ARGV("http://h:1", "--token", "other-token")), 0);
	assert_string_equal(o.token, "other-token");
	assert_int_equal(parse(&o, err, ARGC("http://h:1", "--token", "t0ken", "--token", "t0ken"),
	                       ARGV("http://h:1", "--token", "t0ken", "--token", "t0ken")), -1);
	assert_null(strstr(err, "t0ken"));
	unsetenv("MCPWARDEN_ADMIN_TOKEN");
}

static void test_color_choice(void **state)
{
	(void)state;
	assert_true(tail_use_color(TAIL_COLOR_AUTO, NULL, 1));
	assert_false(tail_use_color(TAIL_COLOR_AUTO, NULL, 0));
	assert_false(tail_use_color(TAIL_COLOR_AUTO, "1", 1));
	assert_true(tail_use_color(TAIL_COLOR_AUTO, "", 1)); /* NO_COLOR empty: not set */
	assert_true(tail_use_color(TAIL_COLOR_ALWAYS, "1", 0));
	assert_false(tail_use_color(TAIL_COLOR_NEVER, NULL, 1));
}

/* ---- the client-side filter ---------------------------------------------------- */

static void test_match(void **state)
{
	(void)state;
	struct tail_opts o = {.upstream = "billing"};
	json_t *a = th_json("{'upstream':'billing','tool':'pay','outcome':'ok'}");
	json_t *b = th_json("{'upstream':'search','tool':'pay','outcome':'ok'}");
	json_t *c = th_json("{'upstream':null,'tool':null,'outcome':'ok'}");
	assert_true(tail_match(&o, a));
	assert_false(tail_match(&o, b));
	assert_false(tail_match(&o, c));
	o = (struct tail_opts){.tool = "pay", .outcome = "blocked"};
	assert_false(tail_match(&o, a)); /* an endpoint that ignored ?outcome= */
	o.outcome = "ok";
	assert_true(tail_match(&o, a));
	assert_false(tail_match(&o, c));
	o = (struct tail_opts){0};
	assert_true(tail_match(&o, c));
	json_t *arr = th_json("[1]");
	assert_false(tail_match(&o, arr));
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(arr);
}

/* ---- one line --------------------------------------------------------------------- */

static void test_format_columns(void **state)
{
	(void)state;
	char line[1024];
	json_t *r = th_json("{'time':'2026-12-02T02:30:00.123456Z','upstream':'billing',"
	                    "'method':'tools/call','tool':'pay','outcome':'ok','latency_us':12345,"
	                    "'rule':null}");
	size_t n = tail_format(r, 0, line, sizeof(line));
	assert_int_equal(n, strlen(line));
	assert_string_equal(line, "2026-12-02T02:30:00.123Z  billing       pay                       "
	                          "ok                12.3 ms");
	json_decref(r);

	/* no tool: the method; findings counted; the rule shown; microseconds */
	r = th_json("{'time':'2026-12-02T02:30:00.000001Z','upstream':'u','method':'tools/list',"
	            "'tool':null,'outcome':'blocked','latency_us':512,'rule':'contract:fail',"
	            "'findings':[{'code':'a'},{'code':'b'}]}");
	tail_format(r, 0, line, sizeof(line));
	assert_non_null(strstr(line, "  tools/list  "));
	assert_non_null(strstr(line, "   512 us  2 findings  rule=contract:fail"));
	json_decref(r);

	/* unanswered, unknown upstream, seconds */
	r = th_json("{'time':'x','upstream':null,'tool':'t','outcome':'timeout','latency_us':30500000}");
	tail_format(r, 0, line, sizeof(line));
	assert_non_null(strstr(line, "  -             t  "));
	assert_non_null(strstr(line, "timeout"));
	assert_non_null(strstr(line, "30.5 s"));
	json_decref(r);
	r = th_json("{'tool':'t','outcome':'cancelled','latency_us':null,'findings':[{}]}");
	tail_format(r, 0, line, sizeof(line));
	assert_non_null(strstr(line, "cancelled"));
	assert_non_null(strstr(line, " -  1 finding"));
	json_decref(r);
}

static void test_format_color(void **state)
{
	(void)state;
	char plain[1024], col[1024];
	json_t *r = th_json("{'time':'2026-12-02T02:30:00.123456Z','upstream':'u','tool':'t',"
	                    "'outcome':'upstream_error','latency_us':1000}");
	tail_format(r, 0, plain, sizeof(plain));
	tail_format(r, 1, col, sizeof(col));
	assert_null(strchr(plain, '\x1b'));
	assert_non_null(strstr(col, "\x1b[31mupstream_error\x1b[0m"));
	/* the same columns once the escapes are taken out */
	assert_int_equal(strlen(col) - strlen("\x1b[31m\x1b[0m"), strlen(plain));
	json_decref(r);
}

static void test_format_terminal_safe(void **state)
{
	(void)state;
	char line[1024];
	/* ESC, a C1 CSI (U+009B), CR, and broken UTF-8 in a client's tool
	 * name reach the terminal as '?' */
	json_t *r = json_pack("{s:s,s:s,s:s}", "tool", "a\x1b[31mb\xc2\x9b" "2Jc\rd",
	                      "outcome", "ok", "upstream", "\xc3\xa9t\xc3\xa9");
	json_t *bad = json_pack("{s:s}", "outcome", "ok");
	json_object_set_new(bad, "tool", json_stringn_nocheck("x\xff" "y", 3));
	tail_format(r, 0, line, sizeof(line));
	for (const unsigned char *p = (const unsigned char *)line; *p; p++)
		assert_false(*p < 0x20 || *p == 0x7f);
	assert_null(strstr(line, "\xc2\x9b"));
	assert_non_null(strstr(line, "a?[31mb?2Jc?d"));
	assert_non_null(strstr(line, "\xc3\xa9t\xc3\xa9")); /* UTF-8 stays */
	tail_format(bad, 0, line, sizeof(line));
	assert_non_null(strstr(line, "x?y"));
	json_decref(r);
	json_decref(bad);

	/* a long name is cut at a character boundary, with an ellipsis */
	char name[300];
	memset(name, 'n', sizeof(name));
	memcpy(name + 46, "\xc3\xa9\xc3\xa9", 4);
	name[299] = '\0';
	r = json_pack("{s:s,s:s}", "tool", name, "outcome", "ok");
	tail_format(r, 0, line, sizeof(line));
	assert_non_null(strstr(line, "\xc3\xa9\xe2\x80\xa6"));
	assert_true(strlen(line) < 200);
	json_decref(r);

	/* a buffer too small for the line is never overrun */
	char small[16];
	r = th_json("{'tool':'t','outcome':'ok','upstream':'u'}");
	size_t n = tail_format(r, 1, small, sizeof(small));
	assert_true(n < sizeof(small));
	assert_int_equal(strlen(small), n);
	json_decref(r);
}

/* ---- status's summary ------------------------------------------------------------- */

static void test_status_ready_and_passing(void **state)
{
	(void)state;
	json_t *ready = th_json("{'ready':true,'draining':false,'upstreams':[{'upstream':'a',"
	                        "'reachable':true},{'upstream':'b','reachable':true}]}");
	json_t *contract = th_json(
		"{'upstreams':[{'upstream':'a','updated':'T','report':{'passed':true,'score':1.0,"
		"'mode':'report','problems':[],'tools':[],'changes':[],'breaking':0},"
		"'live':{'x':{'calls':3},'y':{'calls':9}}},"
		"{'upstream':'b','updated':null,'report':null,'live':{'x':{'calls':5}}}]}");
	json_t *s = status_summary(ready, contract, NULL);
	assert_int_equal(json_integer_value(json_object_get(s, "exit")), CLI_EXIT_PASS);
	json_t *ups = json_object_get(s, "upstreams");
	assert_int_equal(json_array_size(ups), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ups, 0), "contract")),
	                    "passed");
	/* never checked: not a failure */
	assert_string_equal(json_string_value(json_object_get(json_array_get(ups, 1), "contract")),
	                    "unchecked");
	json_t *top = json_object_get(s, "busiest");
	assert_string_equal(json_string_value(json_object_get(s, "busiest_from")), "live");
	assert_int_equal(json_array_size(top), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(top, 0), "tool")), "y");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(top, 1), "calls")), 5);
	assert_string_equal(json_string_value(json_object_get(json_array_get(top, 1), "upstream")), "b");
	json_decref(s);
	json_decref(ready);
	json_decref(contract);
}

static void test_status_failing_and_not_ready(void **state)
{
	(void)state;
	json_t *ready = th_json("{'ready':false,'draining':false,'upstreams':[{'upstream':'a',"
	                        "'reachable':false,'error':'connection refused or unreachable'}]}");
	json_t *contract = th_json(
		"{'upstreams':[{'upstream':'a','report':{'passed':false,'score':0.5,'mode':'fail',"
		"'problems':[{'code':'duplicate-name','tool':'s','message':'m'}],"
		"'tools':[{'name':'n','problems':[{'code':'description-missing'}]}],"
		"'changes':[{'code':'tool-removed','kind':'breaking','tool':'old'},"
		"{'code':'tool-added','kind':'compatible','tool':'new'}],'breaking':1},'live':null}]}");
	json_t *s = status_summary(ready, contract, NULL);
	json_t *u = json_array_get(json_object_get(s, "upstreams"), 0);
	assert_int_equal(json_integer_value(json_object_get(s, "exit")), CLI_EXIT_FAIL);
	assert_false(json_is_true(json_object_get(s, "ready")));
	assert_false(json_is_true(json_object_get(u, "reachable")));
	assert_string_equal(json_string_value(json_object_get(u, "error")),
	                    "connection refused or unreachable");
	assert_string_equal(json_string_value(json_object_get(u, "contract")), "failed");
	assert_int_equal(json_integer_value(json_object_get(u, "problems")), 2);
	assert_int_equal(json_integer_value(json_object_get(u, "breaking")), 1);
	json_t *f = json_object_get(u, "findings");
	assert_int_equal(json_array_size(f), 3); /* the compatible change is not listed */
	assert_string_equal(json_string_value(json_object_get(json_array_get(f, 1), "tool")), "n");
	assert_true(json_is_true(json_object_get(json_array_get(f, 2), "breaking")));
	json_decref(s);

	/* ready, but a contract failing: 1 as well */
	json_object_set_new(ready, "ready", json_true());
	s = status_summary(ready, contract, NULL);
	assert_int_equal(json_integer_value(json_object_get(s, "exit")), CLI_EXIT_FAIL);
	json_decref(s);
	json_decref(ready);
	json_decref(contract);
}

static void test_status_reads_unknown_members_defensively(void **state)
{
	(void)state;
	json_t *ready = th_json("{'ready':true,'upstreams':[{'upstream':'a','reachable':true}]}");
	/* a later /contract with a baseline diff beside the report: breaking
	 * changes there fail the upstream; odd shapes are ignored */
	json_t *contract = th_json(
		"{'upstreams':[{'upstream':'a','report':{'passed':true},'live':null,"
		"'diff':{'changes':[{'code':'param-removed','kind':'breaking','tool':'t'}]},"
		"'weird':[1,2],'other':{'changes':'nope','breaking':'x'}},{'nameless':1}]}");
	json_t *s = status_summary(ready, contract, NULL);
	json_t *u = json_array_get(json_object_get(s, "upstreams"), 0);
	assert_int_equal(json_array_size(json_object_get(s, "upstreams")), 1);
	assert_string_equal(json_string_value(json_object_get(u, "contract")), "failed");
	assert_int_equal(json_integer_value(json_object_get(u, "breaking")), 1);
	assert_int_equal(json_integer_value(json_object_get(s, "exit")), CLI_EXIT_FAIL);
	json_decref(s);
	json_decref(contract);
	contract = th_json("{'upstreams':[{'upstream':'a','report':null,"
	                   "'baseline':{'passed':false}}]}");
	s = status_summary(ready, contract, NULL);
	assert_int_equal(json_integer_value(json_object_get(s, "exit")), CLI_EXIT_FAIL);
	json_decref(s);
	json_decref(contract);
	json_decref(ready);
}

static void test_status_busiest_from_calls(void **state)
{
	(void)state;
	json_t *ready = th_json("{'ready':true,'upstreams':[]}");
	json_t *contract = th_json("{'upstreams':[{'upstream':'a','report':null,'live':null}]}");
	json_t *calls = th_json("{'calls':[{'tool':'p','upstream':'a'},{'tool':'q','upstream':'a'},"
	                        "{'tool':'p','upstream':'a'},{'tool':null,'upstream':'a'},"
	                        "{'tool':'p','upstream':'b'}]}");
	json_t *s = status_summary(ready, contract, calls);
	json_t *top = json_object_get(s, "busiest");
	assert_string_equal(json_string_value(json_object_get(s, "busiest_from")), "calls");
	assert_int_equal(json_array_size(top), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(top, 0), "calls")), 2);
	assert_int_equal(json_integer_value(json_object_get(s, "exit")), CLI_EXIT_PASS);
	json_decref(s);
	/* no /contract at all (an older proxy): readiness alone decides */
	s = status_summary(ready, NULL, NULL);
	assert_true(json_is_null(json_object_get(s, "busiest_from")));
	assert_int_equal(json_integer_value(json_object_get(s, "exit")), CLI_EXIT_PASS);
	json_decref(s);
	json_decref(ready);
	json_decref(contract);
	json_decref(calls);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_filters_and_path),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_token_from_env_never_in_errors),
		cmocka_unit_test(test_color_choice),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_format_columns),
		cmocka_unit_test(test_format_color),
		cmocka_unit_test(test_format_terminal_safe),
		cmocka_unit_test(test_status_ready_and_passing),
		cmocka_unit_test(test_status_failing_and_not_ready),
		cmocka_unit_test(test_status_reads_unknown_members_defensively),
		cmocka_unit_test(test_status_busiest_from_calls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for proxy/hooks/hook_capture.c, the capture observer and its
 * writer: driven through the hook chain as a transport drives it
 * (inspect_message, then inspect_exchange_done), the file read back.
 *   - an initialize's clientInfo, capabilities and negotiated version reach
 *     the lines of its session, keyed by a capture key, never the id;
 *   - a call a deciding hook answered is blocked, its error "by" the proxy;
 *     a call the exchange's end left unanswered takes its outcome (timeout);
 *   - the stateless era: no session key;
 *   - rotation at max_bytes with keep, mode 0600, every line whole;
 *   - a symbolic link is refused (and by the --check-config check);
 *   - a file that can no longer be written drops lines and counts them.
 * The writer is asynchronous: tests wait on its counters (bounded). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/config.h"
#include "proxy/base/clock.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/hooks/hook_capture.h"
#include "proxy/hooks/inspect.h"
#include "proxy/hooks/redact.h"
#include "tests/unit/helpers.h"

struct fixture {
	char dir[64], file[128];
	struct inspect *in;
	struct hook_capture *hc;
	struct px_config cfg;
	struct px_upstream_conf up;
	struct inspect_where where;
	int answer_tool;           /* the decider answers tools/call of "deny-me" */
};

static enum inspect_verdict decider(void *arg, struct inspect_msg *m)
{
	struct fixture *f = arg;
	if (f->answer_tool && m->dir == INSPECT_FROM_CLIENT && m->tool &&
	    strcmp(m->tool, "deny-me") == 0) {
		m->answer = jrpc_error_new(jrpc_id(m->msg), -32003, "denied by rule", NULL);
		m->reason = "policy:no";
		return INSPECT_ANSWER;
	}
	return INSPECT_FORWARD;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/mw-capture-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->file, sizeof(f->file), "%s/c.capture", f->dir);
	f->up.name = "u";
	f->up.capture.path = f->file;
	f->up.capture.max_bytes = 64u << 20;
	f->up.capture.keep = 2;
	f->cfg.ups = &f->up;
	f->cfg.nups = 1;
	f->in = inspect_new();
	assert_true(inspect_add(f->in, "decider", decider, NULL, f) >= 0);
	*state = f;
	return 0;
}

static void start(struct fixture *f)
{
	char err[512] = "";
	f->hc = hook_capture_new(f->in, &f->cfg, redact_new(), 1, err, sizeof(err));
	if (!f->hc)
		fail_msg("hook_capture_new: %s", err);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	hook_capture_free(f->hc);
	inspect_free(f->in);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void feed(struct fixture *f, enum inspect_dir dir, const char *text)
{
	json_t *msg = th_json(text);
	struct inspect_msg m = {
		.dir = dir,
		.kind = jrpc_classify(msg),
		.msg = msg,
		.request = dir == INSPECT_FROM_CLIENT ? msg : NULL,
		.where = &f->where,
	};
	inspect_message(f->in, &m);
	json_decref(m.answer);
	json_decref(msg);
}

static void end(struct fixture *f, enum inspect_end how, const char *error)
{
	struct inspect_exchange x = {.end = how, .where = &f->where, .status = 200, .error = error};
	inspect_exchange_done(f->in, &x);
	memset(f->where.hook_data, 0, sizeof(f->where.hook_data));
}

static void exchange_begin(struct fixture *f, const char *session, const char *era)
{
	f->where = (struct inspect_where){
		.upstream = "u",
		.session_id = session,
		.era = era,
		.client_transport = "streamable_http",
		.start_us = clock_mono_us(),
	};
}

static void initialize(struct fixture *f, const char *sid)
{
	exchange_begin(f, NULL, "stateful");
	feed(f, INSPECT_FROM_CLIENT,
	     "{'jsonrpc':'2.0','id':0,'method':'initialize','params':{'protocolVersion':'2025-11-25',"
	     "'clientInfo':{'name':'unit','version':'9.1'},'capabilities':{'roots':{'listChanged':true}}}}");
	f->where.reply_session_id = sid;
	feed(f, INSPECT_FROM_SERVER,
	     "{'jsonrpc':'2.0','id':0,'result':{'protocolVersion':'2025-06-18','capabilities':{},"
	     "'serverInfo':{'name':'s','version':'1'}}}");
	end(f, INSPECT_END_OK, NULL);
}

static void call(struct fixture *f, const char *sid, int id, const char *tool, const char *arg)
{
	char req[512], res[512];
	snprintf(req, sizeof(req),
	         "{'jsonrpc':'2.0','id':%d,'method':'tools/call','params':{'name':'%s',"
	         "'arguments':{'message':'%s','password':'pw-1'}}}", id, tool, arg);
	snprintf(res, sizeof(res),
	         "{'jsonrpc':'2.0','id':%d,'result':{'content':[{'type':'text','text':'%s'}]}}", id, arg);
	exchange_begin(f, sid, "stateful");
	feed(f, INSPECT_FROM_CLIENT, req);
	feed(f, INSPECT_FROM_SERVER, res);
	end(f, INSPECT_END_OK, NULL);
}

/* Waits (bounded) until the writer accounted for n lines. */
static void wait_lines(struct fixture *f, uint64_t n, uint64_t *records, uint64_t *dropped)
{
	int on;
	for (int i = 0; i < 5000; i++) {
		hook_capture_stats(f->hc, 0, &on, records, dropped);
		if (*records + *dropped >= n)
			return;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	fail_msg("the writer accounted for %llu + %llu of %llu lines", (unsigned long long)*records,
	         (unsigned long long)*dropped, (unsigned long long)n);
}

/* The lines of path, parsed: an array (owned). */
static json_t *read_lines(const char *path)
{
	FILE *fp = fopen(path, "r");
	json_t *a = json_array();
	char buf[8192];
	if (!fp)
		return a;
	while (fgets(buf, sizeof(buf), fp)) {
		size_t n = strlen(buf);
		assert_true(n > 0 && buf[n - 1] == '\n');
		json_error_t e;
		json_t *l = json_loads(buf, 0, &e);
		if (!l)
			fail_msg("%s: not JSON (%s): %s", path, e.text, buf);
		json_array_append_new(a, l);
	}
	fclose(fp);
	return a;
}

static const char *str(const json_t *l, const char *k)
{
	return json_string_value(json_object_get(l, k));
}

static void test_session_from_initialize(void **state)
{
	struct fixture *f = *state;
	uint64_t r, d;
	start(f);
	initialize(f, "sess-secret-id-1");
	initialize(f, "sess-secret-id-2");
	call(f, "sess-secret-id-1", 1, "echo", "one");
	call(f, "sess-secret-id-1", 2, "echo", "two");
	call(f, "sess-secret-id-2", 1, "echo", "three");
	/* a session the proxy never saw begin: a key, no client info */
	call(f, "sess-unknown", 5, "echo", "four");
	wait_lines(f, 4, &r, &d);
	assert_int_equal(r, 4);
	assert_int_equal(d, 0);
	json_t *ls = read_lines(f->file);
	assert_int_equal(json_array_size(ls), 4);
	json_t *a = json_array_get(ls, 0), *b = json_array_get(ls, 1), *c = json_array_get(ls, 2);
	json_t *u = json_array_get(ls, 3);
	assert_string_equal(str(a, "session"), str(b, "session"));
	assert_string_not_equal(str(a, "session"), str(c, "session"));
	assert_int_equal(strlen(str(a, "session")), 18);
	assert_memory_equal(str(a, "session"), "c-", 2);
	assert_string_equal(str(a, "era"), "2025-06-18"); /* the negotiated one */
	json_t *want = th_json("{'name':'unit','version':'9.1'}");
	assert_true(json_equal(json_object_get(a, "client"), want));
	json_decref(want);
	want = th_json("{'roots':{'listChanged':true}}");
	assert_true(json_equal(json_object_get(c, "capabilities"), want));
	json_decref(want);
	assert_non_null(str(u, "session"));
	assert_true(json_is_null(json_object_get(u, "client")));
	assert_string_equal(str(a, "outcome"), "ok");
	/* redacted by default */
	json_t *args = json_object_get(json_object_get(a, "params"), "arguments");
	assert_string_equal(str(args, "password"), REDACT_MASK);
	char *text = json_dumps(ls, 0);
	assert_null(strstr(text, "sess-secret"));
	free(text);
	json_decref(ls);
	struct stat st;
	assert_int_equal(stat(f->file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_blocked_and_unanswered(void **state)
{
	struct fixture *f = *state;
	uint64_t r, d;
	f->answer_tool = 1;
	start(f);
	exchange_begin(f, "s", "stateful");
	feed(f, INSPECT_FROM_CLIENT,
	     "{'jsonrpc':'2.0','id':'a','method':'tools/call','params':{'name':'deny-me','arguments':{}}}");
	end(f, INSPECT_END_OK, NULL);
	exchange_begin(f, "s", "stateful");
	feed(f, INSPECT_FROM_CLIENT,
	     "{'jsonrpc':'2.0','id':'b','method':'tools/call','params':{'name':'slow','arguments':{}}}");
	end(f, INSPECT_END_TIMEOUT, "the upstream did not answer in time");
	exchange_begin(f, "s", "stateful");
	feed(f, INSPECT_FROM_CLIENT,
	     "{'jsonrpc':'2.0','id':'c','method':'tools/call','params':{'name':'gone','arguments':{}}}");
	end(f, INSPECT_END_CANCELLED, NULL);
	wait_lines(f, 3, &r, &d);
	json_t *ls = read_lines(f->file);
	assert_int_equal(json_array_size(ls), 3);
	json_t *bl = json_array_get(ls, 0), *to = json_array_get(ls, 1), *ca = json_array_get(ls, 2);
	assert_string_equal(str(bl, "outcome"), "blocked");
	assert_string_equal(str(bl, "by"), "proxy");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(bl, "error"), "code")),
	                 -32003);
	assert_string_equal(str(bl, "id"), "a");
	assert_string_equal(str(to, "outcome"), "timeout");
	assert_string_equal(str(to, "by"), "proxy");
	assert_string_equal(str(json_object_get(to, "error"), "message"),
	                    "the upstream did not answer in time");
	assert_string_equal(str(ca, "outcome"), "cancelled");
	assert_null(json_object_get(ca, "error"));
	assert_null(json_object_get(ca, "result"));
	json_decref(ls);
}

static void test_stateless_no_session(void **state)
{
	struct fixture *f = *state;
	uint64_t r, d;
	start(f);
	exchange_begin(f, NULL, "2026");
	f->where.protocol = "2026-07-28";
	feed(f, INSPECT_FROM_CLIENT,
	     "{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'echo','arguments':{},"
	     "'_meta':{'io.modelcontextprotocol/protocolVersion':'2026-07-28',"
	     "'io.modelcontextprotocol/clientInfo':{'name':'m','version':'2'},"
	     "'io.modelcontextprotocol/clientCapabilities':{'elicitation':{}}}}}");
	feed(f, INSPECT_FROM_SERVER, "{'jsonrpc':'2.0','id':1,'result':{'content':[]}}");
	end(f, INSPECT_END_OK, NULL);
	wait_lines(f, 1, &r, &d);
	json_t *ls = read_lines(f->file);
	json_t *l = json_array_get(ls, 0);
	assert_true(json_is_null(json_object_get(l, "session")));
	assert_string_equal(str(l, "era"), "2026-07-28");
	assert_string_equal(str(json_object_get(l, "client"), "name"), "m");
	assert_non_null(json_object_get(json_object_get(l, "capabilities"), "elicitation"));
	json_decref(ls);
}

static void test_rotation_keep(void **state)
{
	struct fixture *f = *state;
	uint64_t r, d;
	f->up.capture.max_bytes = 1024;
	f->up.capture.keep = 2;
	start(f);
	initialize(f, "s1");
	for (int i = 0; i < 30; i++)
		call(f, "s1", i + 1, "echo", "a message long enough to fill a kilobyte in a few lines");
	wait_lines(f, 30, &r, &d);
	assert_int_equal(r, 30);
	char p1[160], p2[160], p3[160];
	snprintf(p1, sizeof(p1), "%s.1", f->file);
	snprintf(p2, sizeof(p2), "%s.2", f->file);
	snprintf(p3, sizeof(p3), "%s.3", f->file);
	assert_int_equal(access(p1, F_OK), 0);
	assert_int_equal(access(p2, F_OK), 0);
	assert_int_equal(access(p3, F_OK), -1);
	const char *files[] = {p2, p1, f->file};
	long long last = 0;
	for (int k = 0; k < 3; k++) {
		struct stat st;
		assert_int_equal(stat(files[k], &st), 0);
		assert_true(st.st_size <= 1024);
		assert_int_equal(st.st_mode & 0777, 0600);
		json_t *ls = read_lines(files[k]);
		assert_true(json_array_size(ls) > 0);
		for (size_t i = 0; i < json_array_size(ls); i++) {
			long long seq = json_integer_value(json_object_get(json_array_get(ls, i), "seq"));
			assert_true(seq > last);
			last = seq;
		}
		json_decref(ls);
	}
	assert_int_equal(last, 30);
}

static void test_symlink_refused(void **state)
{
	struct fixture *f = *state;
	char target[160], err[512] = "";
	snprintf(target, sizeof(target), "%s/target", f->dir);
	FILE *fp = fopen(target, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(symlink(target, f->file), 0);
	assert_int_equal(hook_capture_check(&f->cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "$.upstreams[0].capture.path"));
	assert_non_null(strstr(err, "symbolic link"));
	err[0] = '\0';
	f->hc = hook_capture_new(f->in, &f->cfg, redact_new(), 1, err, sizeof(err));
	assert_null(f->hc);
	assert_non_null(strstr(err, "symbolic link"));
}

static void test_unwritable_drops_and_counts(void **state)
{
	struct fixture *f = *state;
	uint64_t r, d;
	f->up.capture.max_bytes = 1024;
	start(f);
	call(f, "s", 1, "echo", "first");
	wait_lines(f, 1, &r, &d);
	assert_int_equal(r, 1);
	/* The file and its directory go away: the rotation due soon cannot
	 * make a new file, and the lines after it are dropped, counted. */
	assert_int_equal(unlink(f->file), 0);
	assert_int_equal(rmdir(f->dir), 0);
	for (int i = 0; i < 20; i++)
		call(f, "s", i + 2, "echo", "a message long enough to need a rotation soon");
	wait_lines(f, 21, &r, &d);
	assert_true(d > 0);
	assert_int_equal(r + d, 21);
	assert_int_equal(mkdir(f->dir, 0700), 0); /* for teardown */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_session_from_initialize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blocked_and_unanswered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stateless_no_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rotation_keep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritable_drops_and_counts, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

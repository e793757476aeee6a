/* Unit tests for proxy/hooks/capture_line.c, one line of the capture file
 * (docs/capture.md): the keys and their order, redaction on and off, a
 * result vs an error (the proxy's with "by"), a null session in the
 * stateless era, no member for any header, the head and the time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/hooks/capture_line.h"
#include "proxy/hooks/hook_record.h"
#include "proxy/hooks/redact.h"
#include "tests/unit/helpers.h"

struct fixture {
	json_t *id, *params, *info, *caps, *result, *error;
	struct capture_line c;
	struct redact *rd;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	f->id = json_integer(7);
	f->params = th_json("{'name':'echo','arguments':{'message':'hi','password':'hunter2'},"
	                    "'_meta':{'progressToken':1}}");
	f->info = th_json("{'name':'cli','version':'1.2','title':'A client'}");
	f->caps = th_json("{'roots':{'listChanged':true}}");
	f->result = th_json("{'content':[{'type':'text','text':'hi'}],'api_key':'k-123'}");
	f->error = th_json("{'code':-32602,'message':'bad','data':{'token':'t-1'}}");
	f->rd = redact_new();
	f->c = (struct capture_line){
		.time_us = 1795314600123456ull, /* 2026-11-22T02:30:00.123456Z */
		.upstream = "staging",
		.session = "c-0123456789abcdef",
		.era = "2025-11-25",
		.transport = "streamable_http",
		.client_info = f->info,
		.capabilities = f->caps,
		.method = "tools/call",
		.id = f->id,
		.params = f->params,
		.outcome = "ok",
		.result = f->result,
		.latency_us = 12345,
	};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	json_decref(f->id);
	json_decref(f->params);
	json_decref(f->info);
	json_decref(f->caps);
	json_decref(f->result);
	json_decref(f->error);
	redact_free(f->rd);
	free(f);
	return 0;
}

/* The line as text (one line, no newline) and parsed. */
static json_t *line(const struct capture_line *c, uint64_t seq, const struct redact *rd,
                    char **text)
{
	struct sbuf b = {0};
	struct capture_line copy = *c;
	copy.redacted = rd != NULL;
	assert_int_equal(capture_line_write(&copy, seq, rd, &b), 0);
	assert_null(strchr(b.p, '\n'));
	json_error_t e;
	json_t *j = json_loads(b.p, 0, &e);
	if (!j)
		fail_msg("not JSON (%s): %s", e.text, b.p);
	if (text)
		*text = b.p;
	else
		free(b.p);
	return j;
}

/* The member names of o in order, joined by ','. */
static void keys_of(json_t *o, char *buf, size_t len)
{
	const char *k;
	json_t *v;
	buf[0] = '\0';
	json_object_foreach(o, k, v) {
		if (buf[0])
			strncat(buf, ",", len - strlen(buf) - 1);
		strncat(buf, k, len - strlen(buf) - 1);
	}
}

static void test_key_order_with_result(void **state)
{
	struct fixture *f = *state;
	char *text;
	json_t *j = line(&f->c, 42, NULL, &text);
	char keys[512];
	keys_of(j, keys, sizeof(keys));
	assert_string_equal(keys, "capture,seq,time,upstream,session,era,transport,client,"
	                          "capabilities,method,id,params,redacted,outcome,result,ms");
	assert_int_equal(json_integer_value(json_object_get(j, "capture")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 42);
	assert_string_equal(json_string_value(json_object_get(j, "time")), "2026-11-22T02:30:00.123Z");
	/* clientInfo: name and version only */
	json_t *want = th_json("{'name':'cli','version':'1.2'}");
	assert_true(json_equal(json_object_get(j, "client"), want));
	json_decref(want);
	assert_true(json_equal(json_object_get(j, "capabilities"), f->caps));
	assert_true(json_equal(json_object_get(j, "params"), f->params));
	assert_true(json_equal(json_object_get(j, "result"), f->result));
	assert_true(json_is_false(json_object_get(j, "redacted")));
	assert_float_equal(json_real_value(json_object_get(j, "ms")), 12.345, 1e-9);
	/* compact, like the wire */
	assert_non_null(strstr(text, "\"ms\":12.345}"));
	free(text);
	json_decref(j);
}

static void test_redaction_on_and_off(void **state)
{
	struct fixture *f = *state;
	char *text;
	json_t *j = line(&f->c, 1, f->rd, &text);
	assert_true(json_is_true(json_object_get(j, "redacted")));
	json_t *args = json_object_get(json_object_get(j, "params"), "arguments");
	assert_string_equal(json_string_value(json_object_get(args, "password")), REDACT_MASK);
	assert_string_equal(json_string_value(json_object_get(args, "message")), "hi");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "result"), "api_key")),
	                    REDACT_MASK);
	assert_null(strstr(text, "hunter2"));
	assert_null(strstr(text, "k-123"));
	/* the id is never masked */
	assert_int_equal(json_integer_value(json_object_get(j, "id")), 7);
	free(text);
	json_decref(j);

	j = line(&f->c, 1, NULL, &text);
	assert_non_null(strstr(text, "hunter2"));
	assert_non_null(strstr(text, "k-123"));
	free(text);
	json_decref(j);
}

static void test_error_and_proxy_error(void **state)
{
	struct fixture *f = *state;
	f->c.result = NULL;
	f->c.error = f->error;
	f->c.outcome = "rpc_error";
	json_t *j = line(&f->c, 1, f->rd, NULL);
	char keys[512];
	keys_of(j, keys, sizeof(keys));
	assert_non_null(strstr(keys, ",outcome,error,ms"));
	assert_null(json_object_get(j, "result"));
	assert_null(json_object_get(j, "by"));
	json_t *err = json_object_get(j, "error");
	assert_int_equal(json_integer_value(json_object_get(err, "code")), -32602);
	assert_string_equal(json_string_value(json_object_get(json_object_get(err, "data"), "token")),
	                    REDACT_MASK);
	json_decref(j);

	f->c.by_proxy = 1;
	f->c.outcome = "blocked";
	j = line(&f->c, 1, NULL, NULL);
	keys_of(j, keys, sizeof(keys));
	assert_non_null(strstr(keys, ",outcome,error,by,ms"));
	assert_string_equal(json_string_value(json_object_get(j, "by")), "proxy");
	json_decref(j);

	/* no answer at all: neither member */
	f->c.error = NULL;
	j = line(&f->c, 1, NULL, NULL);
	keys_of(j, keys, sizeof(keys));
	assert_non_null(strstr(keys, ",outcome,ms"));
	json_decref(j);
}

static void test_null_session_stateless(void **state)
{
	struct fixture *f = *state;
	f->c.session = NULL;
	f->c.era = "2026-07-28";
	f->c.client_info = NULL;
	f->c.capabilities = NULL;
	f->c.params = NULL;
	json_t *j = line(&f->c, 3, NULL, NULL);
	assert_true(json_is_null(json_object_get(j, "session")));
	assert_true(json_is_null(json_object_get(j, "client")));
	assert_true(json_is_null(json_object_get(j, "capabilities")));
	assert_string_equal(json_string_value(json_object_get(j, "era")), "2026-07-28");
	/* params absent: an empty object, still in its place */
	json_t *p = json_object_get(j, "params");
	assert_true(json_is_object(p) && json_object_size(p) == 0);
	json_decref(j);
}

static void test_no_header_member(void **state)
{
	struct fixture *f = *state;
	char *text;
	json_t *j = line(&f->c, 1, f->rd, &text);
	static const char *const banned[] = {"headers", "authorization", "Authorization", "cookie",
	                                     "client_name", "bearer"};
	for (size_t i = 0; i < sizeof(banned) / sizeof(banned[0]); i++)
		assert_null(strstr(text, banned[i]));
	assert_int_equal(json_object_size(j), 16);
	free(text);
	json_decref(j);
}

static void test_head_and_escaping(void **state)
{
	struct fixture *f = *state;
	char head[CAPTURE_LINE_HEAD_MAX];
	size_t n = capture_line_head(UINT64_MAX, head, sizeof(head));
	assert_string_equal(head, "{\"capture\":1,\"seq\":18446744073709551615");
	assert_int_equal(n, strlen(head));
	/* names from the configuration and the client's words are escaped */
	f->c.upstream = "a\"b\n";
	f->c.transport = "sse";
	json_t *j = line(&f->c, 9, NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "upstream")), "a\"b\n");
	json_decref(j);
}

/* Unredacted lines go through a redactor without keys or values: the
 * same bytes as jansson's own dump, reals, escapes and non-ASCII included. */
static void test_plain_writer_equals_jansson(void **state)
{
	struct fixture *f = *state;
	json_t *p = th_json("{'name':'t','arguments':{'password':'p','n':1.5,'e':1e300,'s':'a\\\\\\u00e9\\n\\u0001',"
	                    "'l':[true,false,null,-3,{}]}}");
	struct redact *plain = redact_new();
	redact_clear_keys(plain);
	f->c.params = p;
	struct sbuf a = {0}, b = {0};
	assert_int_equal(capture_line_body(&f->c, NULL, &a), 0);
	assert_int_equal(capture_line_body(&f->c, plain, &b), 0);
	assert_string_equal(a.p, b.p);
	assert_non_null(strstr(a.p, "\"password\":\"p\""));
	free(a.p);
	free(b.p);
	redact_free(plain);
	json_decref(p);
}

/* The date arithmetic against gmtime's (hook_record_time), cut to ms:
 * leap days, century years, year ends, the epoch. */
static void test_time_matches_gmtime(void **state)
{
	(void)state;
	uint64_t us = 0, x = 99;
	for (int i = 0; i < 200000; i++) {
		char a[40], b[40];
		capture_line_time(us, a, sizeof(a));
		hook_record_time(us, b, sizeof(b));
		memcpy(b + 23, "Z", 2); /* microseconds cut to milliseconds */
		assert_string_equal(a, b);
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		us += (x >> 20) % 40000000000ull; /* up to ~11 hours a step: centuries in all */
	}
	char c[40];
	capture_line_time(951782400000000ull, c, sizeof(c)); /* 2000-02-29 */
	assert_string_equal(c, "2000-02-29T00:00:00.000Z");
	capture_line_time(4107542399999999ull, c, sizeof(c));
	assert_string_equal(c, "2100-02-28T23:59:59.999Z");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_key_order_with_result, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redaction_on_and_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_and_proxy_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_session_stateless, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_header_member, setup, teardown),
		cmocka_unit_test_setup_teardown(test_head_and_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plain_writer_equals_jansson, setup, teardown),
		cmocka_unit_test(test_time_matches_gmtime),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

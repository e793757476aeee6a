/* Unit tests for proxy/hooks/hook_record.c: the call recorder.
 *
 * Each test drives the recorder the way a transport does (messages through
 * inspect_message, then inspect_exchange_done) and compares the records the
 * sink received, as the exact JSON text the ring stores, with the expected
 * text. Wall-clock time and measured latencies are the only members that
 * vary from run to run: they are replaced by "T" and 0 before comparing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/hooks/redact.h"
#include "proxy/hooks/hook_record.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/jsonrpc.h"

#define MAX_RECS 16

struct fixture {
	struct inspect *in;
	struct redact *rd;
	struct hook_record *hr;
	/* A deciding hook ahead of the recorder, to block or rewrite. */
	enum inspect_verdict verdict;
	const char *reason;
	int modify;
	json_t *answer_to_give;
	/* A reason given for a forwarded client message (a log rule, a dry
	 * run), and a server result to put an error in place of (the
	 * contract's fail mode), with reason. */
	const char *forward_reason;
	const char *refuse_result;
	/* What the sink got. */
	char *recs[MAX_RECS];
	char keys[MAX_RECS][4][300];
	size_t nrecs;
	uint64_t seq;
	struct inspect_where where;
};

static enum inspect_verdict decider(void *arg, struct inspect_msg *m)
{
	struct fixture *f = arg;
	if (f->refuse_result && m->dir == INSPECT_FROM_SERVER && m->kind == JRPC_RESULT) {
		json_object_del(m->msg, "result");
		json_object_set_new(m->msg, "error",
		                    json_pack("{s:i,s:s}", "code", -32003, "message", "refused"));
		m->modified = 1;
		m->reason = f->refuse_result;
		return INSPECT_FORWARD;
	}
	if (m->dir != INSPECT_FROM_CLIENT || f->verdict == INSPECT_FORWARD) {
		if (f->modify)
			m->modified = 1;
		if (m->dir == INSPECT_FROM_CLIENT)
			m->reason = f->forward_reason;
		return INSPECT_FORWARD;
	}
	m->reason = f->reason;
	if (f->answer_to_give)
		m->answer = json_deep_copy(f->answer_to_give);
	return f->verdict;
}

static void keep_key(char *dst, const char *s)
{
	snprintf(dst, 300, "%s", s ? s : "(null)");
}

static void sink(void *arg, struct hook_record_text *t, const struct record_keys *keys)
{
	struct fixture *f = arg;
	size_t len;
	const char *s = hook_record_text_seal(t, ++f->seq, &len);
	assert_int_equal(strlen(s), len);
	assert_true(f->nrecs < MAX_RECS);
	f->recs[f->nrecs] = strdup(s);
	keep_key(f->keys[f->nrecs][0], keys->method);
	keep_key(f->keys[f->nrecs][1], keys->tool);
	keep_key(f->keys[f->nrecs][2], keys->session);
	keep_key(f->keys[f->nrecs][3], keys->outcome);
	f->nrecs++;
}

static const struct record_sink sink_ops = {.record = sink};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	f->in = inspect_new();
	f->rd = redact_new();
	assert_int_equal(redact_add_value(f->rd, "hunter2"), 0);
	assert_true(inspect_add(f->in, "decider", decider, NULL, f) >= 0);
	f->hr = hook_record_new(f->in, f->rd, &sink_ops, f);
	assert_non_null(f->hr);
	f->where = (struct inspect_where){
		.conn_id = 7,
		.client = "127.0.0.1:5555",
		.upstream = "up",
		.session_id = "sess-1",
		.http_method = "POST",
		.client_transport = "streamable_http",
		.upstream_transport = "sse",
		.era = "stateful",
	};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	hook_record_free(f->hr);
	inspect_free(f->in);
	redact_free(f->rd);
	json_decref(f->answer_to_give);
	for (size_t i = 0; i < f->nrecs; i++)
		free(f->recs[i]);
	free(f);
	return 0;
}

/* Wall time and measured latency vary: "time" becomes "T", a settled
 * record's latency 0 (unsettled ones take the exchange's, which is fixed). */
static char *normalise(const char *rec)
{
	char *s = strdup(rec), *p;
	if ((p = strstr(s, "\"time\":\"")) != NULL) {
		char *q = strchr(p + 8, '"');
		memmove(p + 9, q, strlen(q) + 1);
		p[8] = 'T';
	}
	if ((p = strstr(s, "\"latency_us\":")) != NULL && strncmp(p + 13, "4242", 4) != 0 &&
	    strncmp(p + 13, "null", 4) != 0) {
		char *q = p + 13;
		while (*q >= '0' && *q <= '9')
			q++;
		memmove(p + 14, q, strlen(q) + 1);
		p[13] = '0';
	}
	return s;
}

static void expect_rec(struct fixture *f, size_t i, const char *want)
{
	assert_true(i < f->nrecs);
	char *got = normalise(f->recs[i]);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "record %zu:\n got  %s\n want %s\n", i, got, want);
	assert_string_equal(got, want);
	free(got);
}

static enum inspect_verdict send(struct fixture *f, enum inspect_dir dir, const char *text,
                                 const json_t *request)
{
	json_error_t e;
	json_t *msg = json_loads(text, 0, &e);
	assert_non_null(msg);
	struct inspect_msg m = {
		.dir = dir,
		.kind = jrpc_classify(msg),
		.msg = msg,
		.request = dir == INSPECT_FROM_CLIENT ? msg : request,
		.where = &f->where,
	};
	enum inspect_verdict v = inspect_message(f->in, &m);
	json_decref(m.answer);
	json_decref(msg);
	return v;
}

static void end(struct fixture *f, enum inspect_end how, int status, const char *error)
{
	struct inspect_exchange x = {
		.end = how,
		.where = &f->where,
		.status = status,
		.latency_us = 4242,
		.bytes_in = 100,
		.bytes_out = 200,
		.error = error,
	};
	inspect_exchange_done(f->in, &x);
}

#define HEAD_SESS1 \
	"\"time\":\"T\",\"session\":\"sess-1\",\"client\":\"127.0.0.1:5555\",\"client_name\":null," \
	"\"upstream\":\"up\",\"protocol\":null,\"client_transport\":\"streamable_http\"," \
	"\"upstream_transport\":\"sse\""

static void test_tool_call_ok(void **state)
{
	struct fixture *f = *state;
	send(f, INSPECT_FROM_CLIENT,
	     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	     "\"arguments\":{\"message\":\"hi \\\"there\\\"\\n\",\"n\":1.5,\"ok\":true,\"z\":null}}}",
	     NULL);
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
	     "\"Echo: hi\"},{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"xx\"}]}}",
	     NULL);
	assert_int_equal(f->nrecs, 0);
	end(f, INSPECT_END_OK, 200, NULL);
	assert_int_equal(f->nrecs, 1);
	expect_rec(f, 0,
	           "{\"seq\":1," HEAD_SESS1 ",\"from\":\"client\",\"kind\":\"request\","
	           "\"method\":\"tools/call\",\"tool\":\"echo\",\"id\":1,"
	           "\"arguments\":\"{\\\"message\\\":\\\"hi \\\\\\\"there\\\\\\\"\\\\n\\\",\\\"n\\\":1.5,"
	           "\\\"ok\\\":true,\\\"z\\\":null}\",\"arguments_cut\":false,"
	           "\"result_preview\":\"Echo: hi\\n[image image/png]\",\"result_cut\":false,"
	           "\"http_status\":200,\"is_error\":false,\"error_code\":null,\"error_message\":null,"
	           "\"outcome\":\"ok\",\"rule\":null,\"modified\":false,\"notifications\":0,"
	           "\"note\":null,\"latency_us\":0,\"bytes_in\":100,\"bytes_out\":200}");
	assert_string_equal(f->keys[0][0], "tools/call");
	assert_string_equal(f->keys[0][1], "echo");
	assert_string_equal(f->keys[0][2], "sess-1");
	assert_string_equal(f->keys[0][3], "ok");
}

static void test_secrets_masked(void **state)
{
	struct fixture *f = *state;
	send(f, INSPECT_FROM_CLIENT,
	     "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{\"name\":\"login\","
	     "\"arguments\":{\"user\":\"bob\",\"Api-Key\":{\"x\":1},\"note\":\"pw is hunter2!\","
	     "\"list\":[\"hunter2\",2,[]],\"db_password\":\"x\"}}}",
	     NULL);
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
	     "\"{\\\"token\\\":\\\"abc\\\",\\\"v\\\":\\\"hunter2\\\"}\"}],\"isError\":true}}",
	     NULL);
	end(f, INSPECT_END_OK, 200, NULL);
	expect_rec(f, 0,
	           "{\"seq\":1," HEAD_SESS1 ",\"from\":\"client\",\"kind\":\"request\","
	           "\"method\":\"tools/call\",\"tool\":\"login\",\"id\":\"a\","
	           "\"arguments\":\"{\\\"user\\\":\\\"bob\\\",\\\"Api-Key\\\":\\\"••••\\\","
	           "\\\"note\\\":\\\"pw is ••••!\\\",\\\"list\\\":[\\\"••••\\\",2,[]],"
	           "\\\"db_password\\\":\\\"••••\\\"}\",\"arguments_cut\":false,"
	           "\"result_preview\":\"{\\\"token\\\":\\\"••••\\\",\\\"v\\\":\\\"••••\\\"}\","
	           "\"result_cut\":false,\"http_status\":200,\"is_error\":true,\"error_code\":null,"
	           "\"error_message\":null,\"outcome\":\"tool_error\",\"rule\":null,"
	           "\"modified\":false,\"notifications\":0,\"note\":null,\"latency_us\":0,"
	           "\"bytes_in\":100,\"bytes_out\":200}");
}

static void test_long_values_cut(void **state)
{
	struct fixture *f = *state;
	char big[4000], sess[400], msg[5000];
	memset(big, 'a', sizeof(big));
	memcpy(big, "\xc3\xa9", 2); /* é: counted as one character */
	big[sizeof(big) - 1] = '\0';
	memset(sess, 's', sizeof(sess));
	sess[sizeof(sess) - 1] = '\0';
	f->where.session_id = sess;
	snprintf(msg, sizeof(msg),
	         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":\"%s\"}}",
	         big);
	send(f, INSPECT_FROM_CLIENT, msg, NULL);
	snprintf(msg, sizeof(msg),
	         "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32002,\"message\":\"no %s\"}}", big);
	send(f, INSPECT_FROM_SERVER, msg, NULL);
	end(f, INSPECT_END_OK, 200, NULL);
	assert_int_equal(f->nrecs, 1);
	char *got = normalise(f->recs[0]);
	/* 256 characters of the session id, then the marker. */
	char want_sess[400];
	snprintf(want_sess, sizeof(want_sess), "\"session\":\"%.256s…[cut: 256 of 399 chars]\"", sess);
	assert_non_null(strstr(got, want_sess));
	assert_non_null(strstr(got, "…[cut: 1000 of 4008 chars]\",\"arguments_cut\":true,"));
	assert_non_null(strstr(got, "\"error_code\":-32002,\"error_message\":\"no é"));
	assert_non_null(strstr(got, "…[cut: 500 of 4001 chars]\",\"outcome\":\"rpc_error\","));
	char want_key[400];
	snprintf(want_key, sizeof(want_key), "%.256s…[cut: 256 of 399 chars]", sess);
	assert_string_equal(f->keys[0][2], want_key);
	free(got);
}

/* The per-exchange members (client … upstream_transport) are kept as
 * text per thread while they do not change: each record still shows its
 * own exchange's values, also when the same buffer holds new ones. */
static void test_per_exchange_members_change(void **state)
{
	struct fixture *f = *state;
	char client[32] = "127.0.0.1:5555", name[300], want[600];
	const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
	const char *pong = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
	memset(name, 'n', sizeof(name));
	name[sizeof(name) - 1] = '\0';
	f->where.client = client;
	for (int i = 0; i < 4; i++) {
		if (i == 1) {
			snprintf(client, sizeof(client), "10.0.0.9:80"); /* same pointer */
		} else if (i == 2) {
			f->where.client_name = name;
			f->where.protocol = "2025-06-18";
			f->where.upstream = NULL;
			f->where.upstream_transport = "streamable_http";
		} else if (i == 3) {
			snprintf(client, sizeof(client), "127.0.0.1:5555");
			f->where.client_name = NULL;
			f->where.protocol = NULL;
			f->where.upstream = "up";
			f->where.upstream_transport = "sse";
		}
		send(f, INSPECT_FROM_CLIENT, ping, NULL);
		send(f, INSPECT_FROM_SERVER, pong, NULL);
		end(f, INSPECT_END_OK, 200, NULL);
	}
	assert_int_equal(f->nrecs, 4);
	snprintf(want, sizeof(want),
	         "\"client\":\"10.0.0.9:80\",\"client_name\":\"%.256s…[cut: 256 of 299 chars]\","
	         "\"upstream\":null,\"protocol\":\"2025-06-18\","
	         "\"client_transport\":\"streamable_http\","
	         "\"upstream_transport\":\"streamable_http\",\"from\":\"client\",",
	         name);
	for (size_t i = 0; i < 4; i++) {
		char *got = normalise(f->recs[i]);
		if (i == 1)
			assert_non_null(strstr(got, "\"client\":\"10.0.0.9:80\",\"client_name\":null,"
			                            "\"upstream\":\"up\",\"protocol\":null,"));
		else if (i == 2)
			assert_non_null(strstr(got, want));
		else
			assert_non_null(strstr(got, HEAD_SESS1 ",\"from\":\"client\","));
		json_t *j = json_loads(got, 0, NULL);
		assert_non_null(j);
		json_decref(j);
		free(got);
	}
}

static void test_blocked_and_unanswered(void **state)
{
	struct fixture *f = *state;
	f->verdict = INSPECT_ANSWER;
	f->reason = "no-writes";
	f->answer_to_give = json_loads("{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32003,"
	                               "\"message\":\"denied by policy\"}}",
	                               0, NULL);
	send(f, INSPECT_FROM_CLIENT,
	     "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"rm\"}}", NULL);
	f->verdict = INSPECT_FORWARD;
	send(f, INSPECT_FROM_CLIENT,
	     "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}", NULL);
	send(f, INSPECT_FROM_CLIENT,
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL);
	end(f, INSPECT_END_TIMEOUT, 504, "the upstream was too slow");
	assert_int_equal(f->nrecs, 3);
	expect_rec(f, 0,
	           "{\"seq\":1," HEAD_SESS1 ",\"from\":\"client\",\"kind\":\"request\","
	           "\"method\":\"tools/call\",\"tool\":\"rm\",\"id\":5,\"arguments\":null,"
	           "\"arguments_cut\":false,\"result_preview\":null,\"result_cut\":false,"
	           "\"http_status\":504,\"is_error\":null,\"error_code\":-32003,"
	           "\"error_message\":\"denied by policy\",\"outcome\":\"blocked\","
	           "\"rule\":\"no-writes\",\"modified\":false,\"notifications\":0,\"note\":null,"
	           "\"latency_us\":0,\"bytes_in\":100,\"bytes_out\":200}");
	expect_rec(f, 1,
	           "{\"seq\":2," HEAD_SESS1 ",\"from\":\"client\",\"kind\":\"request\","
	           "\"method\":\"ping\",\"tool\":null,\"id\":6,\"arguments\":null,"
	           "\"arguments_cut\":false,\"result_preview\":null,\"result_cut\":false,"
	           "\"http_status\":504,\"is_error\":null,\"error_code\":null,"
	           "\"error_message\":null,\"outcome\":\"timeout\",\"rule\":null,\"modified\":false,"
	           "\"notifications\":0,\"note\":\"the upstream was too slow\",\"latency_us\":4242,"
	           "\"bytes_in\":100,\"bytes_out\":200}");
	expect_rec(f, 2,
	           "{\"seq\":3," HEAD_SESS1 ",\"from\":\"client\",\"kind\":\"notification\","
	           "\"method\":\"notifications/initialized\",\"tool\":null,\"id\":null,"
	           "\"arguments\":null,\"arguments_cut\":false,\"result_preview\":null,"
	           "\"result_cut\":false,\"http_status\":504,\"is_error\":null,\"error_code\":null,"
	           "\"error_message\":null,\"outcome\":\"timeout\",\"rule\":null,\"modified\":false,"
	           "\"notifications\":0,\"note\":\"the upstream was too slow\",\"latency_us\":4242,"
	           "\"bytes_in\":100,\"bytes_out\":200}");
	assert_string_equal(f->keys[0][3], "blocked");
	assert_string_equal(f->keys[2][1], "(null)");
}

static void test_rejected_and_http_error(void **state)
{
	struct fixture *f = *state;
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", NULL);
	end(f, INSPECT_END_REJECTED, 403, NULL);
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", NULL);
	end(f, INSPECT_END_OK, 502, NULL);
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}", NULL);
	end(f, INSPECT_END_OK, 202, NULL);
	assert_int_equal(f->nrecs, 3);
	assert_non_null(strstr(f->recs[0], "\"outcome\":\"blocked\",\"rule\":\"mcpwarden\","));
	assert_non_null(strstr(f->recs[1], "\"outcome\":\"upstream_error\",\"rule\":null,"
	                                   "\"modified\":false,\"notifications\":0,\"note\":\"HTTP "
	                                   "502 without a JSON-RPC answer to this request\""));
	assert_non_null(strstr(f->recs[2], "\"http_status\":202,"));
	assert_non_null(strstr(f->recs[2], "\"outcome\":\"ok\",\"rule\":null,\"modified\":false,"
	                                   "\"notifications\":0,\"note\":null,"));
}

static void test_server_messages(void **state)
{
	struct fixture *f = *state;
	json_t *req = json_loads("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\"}", 0, NULL);
	f->modify = 1;
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\"}", NULL);
	f->modify = 0;
	/* Progress on the request's stream: counted, not recorded. */
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"p\":1}}", req);
	/* A server request: a record of its own at once. */
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"sampling/createMessage\","
	     "\"params\":{\"maxTokens\":5}}",
	     req);
	assert_int_equal(f->nrecs, 1);
	expect_rec(f, 0,
	           "{\"seq\":1," HEAD_SESS1 ",\"from\":\"server\",\"kind\":\"request\","
	           "\"method\":\"sampling/createMessage\",\"tool\":null,\"id\":\"s1\","
	           "\"arguments\":\"{\\\"maxTokens\\\":\\\"••••\\\"}\",\"arguments_cut\":false,"
	           "\"result_preview\":null,\"result_cut\":false,\"http_status\":null,"
	           "\"is_error\":null,\"error_code\":null,\"error_message\":null,\"outcome\":\"ok\","
	           "\"rule\":null,\"modified\":false,\"notifications\":0,\"note\":null,"
	           "\"latency_us\":null,\"bytes_in\":null,\"bytes_out\":null}");
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"tools\":[{\"name\":\"a\"}]}}", req);
	end(f, INSPECT_END_OK, 200, NULL);
	assert_int_equal(f->nrecs, 2);
	expect_rec(f, 1,
	           "{\"seq\":2," HEAD_SESS1 ",\"from\":\"client\",\"kind\":\"request\","
	           "\"method\":\"tools/list\",\"tool\":null,\"id\":9,\"arguments\":null,"
	           "\"arguments_cut\":false,\"result_preview\":\"{\\\"tools\\\":[{\\\"name\\\":"
	           "\\\"a\\\"}]}\",\"result_cut\":false,\"http_status\":200,\"is_error\":null,"
	           "\"error_code\":null,\"error_message\":null,\"outcome\":\"ok\",\"rule\":null,"
	           "\"modified\":true,\"notifications\":1,\"note\":null,\"latency_us\":0,"
	           "\"bytes_in\":100,\"bytes_out\":200}");
	/* The client answers the sampling request in its own exchange: the
	 * record carries the request's method. */
	send(f, INSPECT_FROM_CLIENT,
	     "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"error\":{\"code\":-1,\"message\":\"user said no\"}}",
	     NULL);
	end(f, INSPECT_END_OK, 202, NULL);
	assert_int_equal(f->nrecs, 3);
	expect_rec(f, 2,
	           "{\"seq\":3," HEAD_SESS1 ",\"from\":\"client\",\"kind\":\"response\","
	           "\"method\":\"sampling/createMessage\",\"tool\":null,\"id\":\"s1\","
	           "\"arguments\":null,\"arguments_cut\":false,\"result_preview\":null,"
	           "\"result_cut\":false,\"http_status\":202,\"is_error\":null,\"error_code\":-1,"
	           "\"error_message\":\"user said no\",\"outcome\":\"rpc_error\",\"rule\":null,"
	           "\"modified\":false,\"notifications\":0,\"note\":null,\"latency_us\":0,"
	           "\"bytes_in\":100,\"bytes_out\":200}");
	/* A GET stream: server notifications are records of their own. */
	f->where.http_method = "GET";
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\"}}",
	     NULL);
	assert_int_equal(f->nrecs, 4);
	assert_non_null(strstr(f->recs[3], "\"from\":\"server\",\"kind\":\"notification\","
	                                   "\"method\":\"notifications/message\",\"tool\":null,"
	                                   "\"id\":null,\"arguments\":\"{\\\"level\\\":\\\"info\\\"}\""));
	end(f, INSPECT_END_CANCELLED, 200, "the client left");
	assert_int_equal(f->nrecs, 4);
	json_decref(req);
}

static void test_batch_and_null_id_error(void **state)
{
	struct fixture *f = *state;
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}", NULL);
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"b\"}", NULL);
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"c\"}", NULL);
	send(f, INSPECT_FROM_SERVER, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}", NULL);
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"bad\"}}", NULL);
	end(f, INSPECT_END_OK, 200, NULL);
	assert_int_equal(f->nrecs, 3);
	assert_non_null(strstr(f->recs[0], "\"error_code\":-32700,\"error_message\":\"bad\","
	                                   "\"outcome\":\"rpc_error\""));
	assert_non_null(strstr(f->recs[1], "\"result_preview\":\"{}\",\"result_cut\":false,"
	                                   "\"http_status\":200,\"is_error\":null,"
	                                   "\"error_code\":null,\"error_message\":null,"
	                                   "\"outcome\":\"ok\""));
	assert_non_null(strstr(f->recs[2], "\"outcome\":\"rpc_error\""));
}

/* issue 17: a log rule's or a dry run's reason on a call it let through
 * is the record's rule; the outcome is the answer's. */
static void test_forwarded_with_a_reason(void **state)
{
	struct fixture *f = *state;
	f->forward_reason = "dry-run:no-danger";
	send(f, INSPECT_FROM_CLIENT,
	     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"danger\"}}",
	     NULL);
	f->forward_reason = NULL;
	send(f, INSPECT_FROM_SERVER, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}", NULL);
	end(f, INSPECT_END_OK, 200, NULL);
	assert_int_equal(f->nrecs, 1);
	assert_non_null(strstr(f->recs[0], "\"outcome\":\"ok\",\"rule\":\"dry-run:no-danger\","
	                                   "\"modified\":false"));
}

/* issue 17: an answer a hook replaced by its error (the contract refusing
 * a tools/list) is blocked, with the hook's reason as rule. */
static void test_answer_refused_is_blocked(void **state)
{
	struct fixture *f = *state;
	json_t *req = json_loads("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}", 0, NULL);
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}", NULL);
	f->refuse_result = "contract:fail";
	send(f, INSPECT_FROM_SERVER, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[]}}", req);
	f->refuse_result = NULL;
	end(f, INSPECT_END_OK, 200, NULL);
	assert_int_equal(f->nrecs, 1);
	assert_non_null(strstr(f->recs[0], "\"error_code\":-32003,\"error_message\":\"refused\","
	                                   "\"outcome\":\"blocked\",\"rule\":\"contract:fail\","
	                                   "\"modified\":true"));
	assert_string_equal(f->keys[0][3], "blocked");
	json_decref(req);
}

/* issue 17: an error with a null id in an exchange with no client message
 * (a GET stream refused with 405 and a JSON-RPC body) is no call: no
 * record. With a notification in the exchange, it is that one's answer. */
static void test_null_id_error_without_a_call(void **state)
{
	struct fixture *f = *state;
	f->where.http_method = "GET";
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"Method not "
	     "allowed.\"}}",
	     NULL);
	end(f, INSPECT_END_OK, 405, NULL);
	assert_int_equal(f->nrecs, 0);
	f->where.http_method = "POST";
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}", NULL);
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"no\"}}", NULL);
	end(f, INSPECT_END_OK, 400, NULL);
	assert_int_equal(f->nrecs, 1);
	assert_non_null(strstr(f->recs[0], "\"kind\":\"notification\",\"method\":\"notifications/x\""));
	assert_non_null(strstr(f->recs[0], "\"http_status\":400,\"is_error\":null,\"error_code\":-32600,"
	                                   "\"error_message\":\"no\",\"outcome\":\"rpc_error\""));
}

static void test_header_values(void **state)
{
	struct fixture *f = *state;
	f->where.session_id = NULL;
	f->where.reply_session_id = "from-reply";
	f->where.client_name = "ci\xff"; /* not UTF-8: null */
	f->where.protocol = "2025-06-18";
	send(f, INSPECT_FROM_CLIENT,
	     "{\"jsonrpc\":\"2.0\",\"id\":\"\\u00e9\\t\\u001f\",\"method\":\"initialize\","
	     "\"params\":{\"protocolVersion\":\"2025-06-18\",\"deep\":[[[[1]]]]}}",
	     NULL);
	send(f, INSPECT_FROM_SERVER,
	     "{\"jsonrpc\":\"2.0\",\"id\":\"\\u00e9\\t\\u001f\",\"result\":{\"structuredContent\":"
	     "{\"k\":\"v\"},\"protocolVersion\":\"2025-06-18\"}}",
	     NULL);
	end(f, INSPECT_END_OK, 200, NULL);
	expect_rec(f, 0,
	           "{\"seq\":1,\"time\":\"T\",\"session\":\"from-reply\",\"client\":\"127.0.0.1:5555\","
	           "\"client_name\":null,\"upstream\":\"up\",\"protocol\":\"2025-06-18\","
	           "\"client_transport\":\"streamable_http\",\"upstream_transport\":\"sse\","
	           "\"from\":\"client\",\"kind\":\"request\",\"method\":\"initialize\",\"tool\":null,"
	           "\"id\":\"é\\t\\u001F\",\"arguments\":\"{\\\"protocolVersion\\\":\\\"2025-06-18\\\","
	           "\\\"deep\\\":[[[[1]]]]}\",\"arguments_cut\":false,\"result_preview\":"
	           "\"{\\\"k\\\":\\\"v\\\"}\",\"result_cut\":false,\"http_status\":200,"
	           "\"is_error\":null,\"error_code\":null,\"error_message\":null,\"outcome\":\"ok\","
	           "\"rule\":null,\"modified\":false,\"notifications\":0,\"note\":null,"
	           "\"latency_us\":0,\"bytes_in\":100,\"bytes_out\":200}");
}

/* The session an exchange ends with is the record's: a request without
 * one whose reply names one (initialize) takes the reply's, and the
 * session key with it; one that had it from the start keeps it. */
static void test_session_known_at_the_end(void **state)
{
	struct fixture *f = *state;
	f->where.session_id = NULL;
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}",
	     NULL);
	f->where.reply_session_id = "late-one";
	send(f, INSPECT_FROM_SERVER, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", NULL);
	end(f, INSPECT_END_OK, 200, NULL);
	assert_int_equal(f->nrecs, 1);
	assert_non_null(strstr(f->recs[0], "\"session\":\"late-one\","));
	assert_string_equal(f->keys[0][2], "late-one");

	f->where.session_id = "sess-2";
	f->where.reply_session_id = NULL;
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", NULL);
	send(f, INSPECT_FROM_SERVER, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}", NULL);
	end(f, INSPECT_END_OK, 200, NULL);
	assert_int_equal(f->nrecs, 2);
	assert_non_null(strstr(f->recs[1], "\"session\":\"sess-2\","));
	assert_string_equal(f->keys[1][2], "sess-2");
}

static void test_deep_arguments(void **state)
{
	struct fixture *f = *state;
	char msg[1200];
	size_t n = (size_t)snprintf(msg, sizeof(msg), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\","
	                                              "\"params\":");
	for (int i = 0; i < 70; i++)
		msg[n++] = '[';
	for (int i = 0; i < 70; i++)
		msg[n++] = ']';
	memcpy(msg + n, "}", 2);
	send(f, INSPECT_FROM_CLIENT, msg, NULL);
	end(f, INSPECT_END_OK, 200, NULL);
	/* Nesting past REDACT_MAX_DEPTH shows as "…". */
	char want[400];
	n = 0;
	for (int i = 0; i < 64; i++)
		want[n++] = '[';
	memcpy(want + n, "\\\"…\\\"", sizeof("\\\"…\\\""));
	n += sizeof("\\\"…\\\"") - 1;
	for (int i = 0; i < 64; i++)
		want[n++] = ']';
	want[n] = '\0';
	assert_non_null(strstr(f->recs[0], want));
}

static void test_inflight(void **state)
{
	struct fixture *f = *state;
	send(f, INSPECT_FROM_CLIENT,
	     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\","
	     "\"arguments\":{\"token\":\"t\"}}}",
	     NULL);
	send(f, INSPECT_FROM_CLIENT, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}", NULL);
	assert_int_equal(hook_record_inflight_count(f->hr), 1);
	size_t count = 0;
	json_t *list = hook_record_inflight(f->hr, 10, &count);
	assert_int_equal(count, 1);
	assert_int_equal(json_array_size(list), 1);
	json_t *o = json_array_get(list, 0);
	json_object_del(o, "time");
	json_object_del(o, "age_us");
	char *s = json_dumps(o, JSON_COMPACT);
	assert_string_equal(s, "{\"session\":\"sess-1\",\"client\":\"127.0.0.1:5555\","
	                       "\"client_name\":null,\"upstream\":\"up\",\"method\":\"tools/call\","
	                       "\"tool\":\"slow\",\"id\":1,\"arguments\":\"{\\\"token\\\":\\\"••••\\\"}\","
	                       "\"arguments_cut\":false,\"notifications\":0}");
	free(s);
	json_decref(list);
	end(f, INSPECT_END_CANCELLED, 0, NULL);
	assert_int_equal(hook_record_inflight_count(f->hr), 0);
	assert_non_null(strstr(f->recs[0], "\"http_status\":null,"));
	assert_non_null(strstr(f->recs[0], "\"outcome\":\"cancelled\""));
}

static void test_time_format(void **state)
{
	(void)state;
	char buf[40];
	hook_record_time(1748779200123456ull, buf, sizeof(buf));
	assert_string_equal(buf, "2025-06-01T12:00:00.123456Z");
	hook_record_time(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00.000000Z");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tool_call_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secrets_masked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_values_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_exchange_members_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blocked_and_unanswered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rejected_and_http_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_and_null_id_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forwarded_with_a_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_refused_is_blocked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_id_error_without_a_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_known_at_the_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deep_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inflight, setup, teardown),
		cmocka_unit_test(test_time_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

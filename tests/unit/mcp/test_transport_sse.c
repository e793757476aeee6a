/* Unit tests for proxy/mcp/transport_sse.c: the client exchange's state
 * machine (transport_sse_state_str: new, head-pending, streaming, ended;
 * for a legacy call call-posting, call-replied, call-detached), driven
 * through real requests, the real session table and the bad moves.
 *
 * The .c is included (its statics are reached). Below it, conn (the
 * client's side: what is written, ended, aborted) and the upstream face
 * (upstream_sse.h: the test calls the face's callbacks, as an upstream
 * would make it) are fakes; the session table (session.c), the hook chain
 * (inspect.c, no hooks) and the SSE writer are the real ones.
 *
 * Behaviours:
 *   - a legacy GET waits for the upstream's endpoint (nothing written);
 *     the endpoint starts its stream, which names where to POST;
 *   - the upstream's stream ending before that: 502 on the GET, ended,
 *     and a delivery after it is refused with nothing written;
 *   - shutdown while the head waits: 503; a later endpoint writes nothing;
 *   - a legacy POST's call: posting until the upstream took the request
 *     (202 on the POST), its answer on the client's stream, detached and
 *     freed once the POST ended;
 *   - the upstream stream ending mid-exchange: the call's request gets its
 *     error on the stream, the stream ends, once;
 *   - a Streamable POST: a JSON reply ends it; an SSE one streams from the
 *     upstream's take; a reply after that end is refused, unwritten;
 *   - the flags word names only the flags.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/mcp/transport_sse.c"

#include "tests/unit/helpers.h"

/* ---- the fake conn ----------------------------------------------------------- */

struct conn {
	struct px_ctx *ctx;
	struct evbuffer *out;    /* everything written: "<status>\n", headers, body */
	int status, ends, aborted;
};

struct px_ctx *conn_ctx(const struct conn *c)
{
	return c->ctx;
}

uint64_t conn_bytes_in(const struct conn *c)
{
	(void)c;
	return 0;
}

uint64_t conn_bytes_out(const struct conn *c)
{
	return evbuffer_get_length(c->out);
}

int conn_reply_head(struct conn *c, int status, struct evbuffer *headers, int64_t len)
{
	(void)len;
	assert_int_equal(c->status, 0); /* one head per exchange */
	c->status = status;
	evbuffer_add_printf(c->out, "%d\n", status);
	if (headers)
		evbuffer_add(c->out, evbuffer_pullup(headers, -1), evbuffer_get_length(headers));
	return 0;
}

int conn_reply_status(const struct conn *c)
{
	return c->status;
}

int conn_reply_body(struct conn *c, const void *data, size_t len)
{
	assert_int_equal(c->ends, 0);
	return evbuffer_add(c->out, data, len);
}

int conn_reply_body_buffer(struct conn *c, struct evbuffer *buf)
{
	assert_int_equal(c->ends, 0);
	return evbuffer_add_buffer(c->out, buf);
}

void conn_reply_end(struct conn *c)
{
	c->ends++;
}

int conn_reply_json(struct conn *c, int status, const json_t *body)
{
	char *s = json_dumps(body, JSON_COMPACT);
	conn_reply_head(c, status, NULL, -1);
	evbuffer_add(c->out, s, strlen(s));
	free(s);
	conn_reply_end(c);
	return 0;
}

int conn_reply_error(struct conn *c, int status, const json_t *body, const char *message)
{
	(void)message;
	return conn_reply_json(c, status, body);
}

void conn_abort(struct conn *c, const char *reason)
{
	(void)reason;
	c->aborted++;
}

int conn_output_full(const struct conn *c)
{
	(void)c;
	return 0;
}

/* ---- the fake upstream face --------------------------------------------------- */

struct upstream_sse {
	const struct upstream_sse_cbs *cbs;
	void *arg;
	int sent, closed;
};

static struct upstream_sse *face; /* the last one made */

struct upstream_sse *upstream_sse_new(struct px_ctx *ctx, size_t up, enum px_transport first,
                                      int fallback, const char *authorization,
                                      const struct upstream_sse_cbs *cbs, void *arg)
{
	(void)ctx;
	(void)up;
	(void)first;
	(void)fallback;
	(void)authorization;
	face = calloc(1, sizeof(*face));
	assert_non_null(face);
	face->cbs = cbs;
	face->arg = arg;
	return face;
}

void upstream_sse_free(struct upstream_sse *f)
{
	free(f);
}

int upstream_sse_send(struct upstream_sse *f, json_t *msg, const char *raw, size_t raw_len)
{
	(void)msg;
	(void)raw;
	(void)raw_len;
	f->sent++;
	return 0;
}

void upstream_sse_close(struct upstream_sse *f)
{
	f->closed++;
}

void upstream_sse_pause(struct upstream_sse *f)
{
	(void)f;
}

void upstream_sse_resume(struct upstream_sse *f)
{
	(void)f;
}

enum px_transport upstream_sse_transport(const struct upstream_sse *f)
{
	(void)f;
	return PX_TRANSPORT_SSE;
}

/* The upstream here is configured "sse": the auto rule is not asked. */
enum px_transport upstream_sse_auto_first(const struct px_upstream_conf *uc)
{
	(void)uc;
	return PX_TRANSPORT_SSE;
}

int upstream_sse_probe_refused(int status, const char *content_type)
{
	(void)status;
	(void)content_type;
	return 0;
}

/* The face hands a message over, as upstream_sse does. */
static void face_says(const char *text)
{
	json_t *m = th_json(text);
	face->cbs->on_message(face->arg, m, NULL, 0);
	json_decref(m);
}

static void face_accepts(const char *text)
{
	json_t *m = th_json(text);
	face->cbs->on_accepted(face->arg, m);
	json_decref(m);
}

/* ---- fixture ------------------------------------------------------------------------ */

#define MAX_EX 4

/* One client request and what carries it. */
struct client {
	struct conn c;
	struct http_parser *p;
	const struct http_msg *req;
	struct inspect_where where;
	enum inspect_end end;
	const char *error;
	struct transport_sse_ex *x;
};

static struct px_upstream_conf ucf;
static struct px_config cfg;
static struct px_proc proc;
static struct px_ctx ctx;
static struct client clients[MAX_EX];
static size_t nclients;

static int setup(void **state)
{
	(void)state;
	ucf = (struct px_upstream_conf){
		.name = "up", .url_safe = "http://127.0.0.1:9/sse", .path = "/mcp",
		.sse_path = "/sse", .messages_path = "/messages", .transport = PX_TRANSPORT_SSE,
	};
	cfg = (struct px_config){0};
	cfg.ups = &ucf;
	cfg.nups = 1;
	cfg.limits.max_sessions = 4;
	cfg.limits.max_session_pending = 4;
	cfg.limits.max_session_queue = 4;
	cfg.limits.max_output_bytes = 1 << 20;
	cfg.timeouts.session_idle_ms = 60000;
	cfg.timeouts.request_ms = 60000;
	proc = (struct px_proc){.nworkers = 1};
	ctx = (struct px_ctx){.proc = &proc};
	ctx.base = event_base_new();
	ctx.cfg = &cfg;
	ctx.insp = inspect_new();
	assert_non_null(ctx.base);
	assert_non_null(ctx.insp);
	ctx.translated = transport_sse_sessions_new(&ctx);
	assert_non_null(ctx.translated);
	nclients = 0;
	face = NULL;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < nclients; i++) {
		transport_sse_free(clients[i].x, NULL);
		http_parser_free(clients[i].p);
		evbuffer_free(clients[i].c.out);
	}
	nclients = 0;
	session_table_reap(ctx.translated);
	session_table_free(ctx.translated);
	inspect_free(ctx.insp);
	event_base_free(ctx.base);
	return 0;
}

static int keep_msg(void *arg, const struct http_msg *m)
{
	*(const struct http_msg **)arg = m;
	return 1;
}

/* A request (head only; body, when not NULL, is its parsed JSON with '
 * for "), run through transport_sse_start. */
static struct client *request(const char *head, const char *body)
{
	static const struct http_parser_cbs cbs = {keep_msg, NULL};
	assert_true(nclients < MAX_EX);
	struct client *cl = &clients[nclients++];
	memset(cl, 0, sizeof(*cl));
	cl->c.ctx = &ctx;
	cl->c.out = evbuffer_new();
	cl->p = http_parser_new(HTTP_KIND_REQUEST, 8192, &cbs, &cl->req);
	size_t used = 0;
	assert_int_equal(http_parser_feed(cl->p, head, strlen(head), &used), HTTP_PARSE_DONE);
	assert_non_null(cl->req);
	cl->end = INSPECT_END_OK;
	cl->where.conn_id = nclients;
	struct transport_sse_link link = {&cl->where, &cl->end, &cl->error};
	json_t *b = body ? th_json(body) : NULL;
	cl->x = transport_sse_start(&cl->c, cl->req, 0, b, NULL, link);
	json_decref(b);
	assert_non_null(cl->x);
	return cl;
}

/* What the client got so far, as a string (valid until the next call). */
static const char *got(struct client *cl)
{
	static char buf[4096];
	size_t n = evbuffer_get_length(cl->c.out);
	assert_true(n < sizeof(buf));
	if (n)
		memcpy(buf, evbuffer_pullup(cl->c.out, -1), n);
	buf[n] = '\0';
	return buf;
}

static struct client *legacy_stream(void)
{
	struct client *cl = request("GET /sse HTTP/1.1\r\nHost: x\r\n\r\n", NULL);
	assert_int_equal(cl->x->kind, SX_SSE_STREAM);
	assert_non_null(face);
	return cl;
}

static struct client *post_to(struct client *stream, const char *body)
{
	char head[256];
	snprintf(head, sizeof(head), "POST /messages?sessionId=%s HTTP/1.1\r\nHost: x\r\n\r\n",
	         stream->x->sid);
	return request(head, body);
}

#define PING "{'jsonrpc':'2.0','id':7,'method':'ping'}"
#define PONG "{'jsonrpc':'2.0','id':7,'result':{}}"

/* ---- tests ------------------------------------------------------------------------- */

static void test_legacy_stream_waits_for_endpoint(void **state)
{
	(void)state;
	struct client *cl = legacy_stream();
	assert_string_equal(transport_sse_state_str(cl->x), "head-pending");
	assert_string_equal(got(cl), ""); /* a dead upstream can still be a 502 */
	face->cbs->on_ready(face->arg, PX_TRANSPORT_SSE);
	assert_string_equal(transport_sse_state_str(cl->x), "streaming");
	char want[128];
	snprintf(want, sizeof(want), "event: endpoint\ndata: /messages?sessionId=%s\n\n", cl->x->sid);
	assert_true(strncmp(got(cl), "200\n", 4) == 0);
	assert_non_null(strstr(got(cl), "Content-Type: text/event-stream\r\n"));
	assert_non_null(strstr(got(cl), want));
	face_says("{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}");
	assert_non_null(strstr(got(cl), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
	                                "\"notifications/tools/list_changed\"}\n\n"));
	assert_int_equal(cl->c.ends, 0);
}

static void test_upstream_ends_before_endpoint(void **state)
{
	(void)state;
	struct client *cl = legacy_stream();
	face->cbs->on_closed(face->arg, "the upstream closed its SSE stream before naming its endpoint");
	assert_string_equal(transport_sse_state_str(cl->x), "ended");
	assert_int_equal(cl->c.status, 502);
	assert_non_null(strstr(got(cl), "before naming its endpoint"));
	assert_int_equal(cl->end, INSPECT_END_UPSTREAM_ERROR);
	assert_int_equal(cl->c.ends, 1);
	size_t n = evbuffer_get_length(cl->c.out);
	/* A reply after the end: refused, nothing written. */
	json_t *m = th_json("{'jsonrpc':'2.0','method':'x'}");
	struct session_out o = {.msg = m};
	assert_int_equal(ops_deliver(cl->x, &o), -1);
	json_decref(m);
	ops_end_stream(cl->x, "again");
	ops_opened(cl->x);
	assert_int_equal(evbuffer_get_length(cl->c.out), n);
	assert_int_equal(cl->c.ends, 1);
	assert_string_equal(transport_sse_state_str(cl->x), "ended");
}

static void test_shutdown_while_head_pending(void **state)
{
	(void)state;
	struct client *cl = legacy_stream();
	transport_sse_shutdown(cl->x);
	assert_string_equal(transport_sse_state_str(cl->x), "ended");
	assert_int_equal(cl->c.status, 503);
	size_t n = evbuffer_get_length(cl->c.out);
	ops_opened(cl->x); /* the endpoint comes too late: no stream head */
	assert_int_equal(evbuffer_get_length(cl->c.out), n);
	assert_int_equal(cl->c.ends, 1);
}

static void test_legacy_call_lifecycle(void **state)
{
	(void)state;
	struct client *st = legacy_stream();
	face->cbs->on_ready(face->arg, PX_TRANSPORT_SSE);
	struct client *po = post_to(st, PING);
	struct transport_sse_ex *call = po->x->call;
	assert_non_null(call);
	assert_int_equal(call->kind, SX_CALL);
	assert_string_equal(transport_sse_state_str(call), "call-posting");
	assert_int_equal(face->sent, 1);
	assert_int_equal(po->c.status, 0); /* waits for the upstream's take */
	face_accepts(PING);
	assert_string_equal(transport_sse_state_str(call), "call-replied");
	assert_int_equal(po->c.status, 202);
	assert_int_equal(po->c.ends, 1);
	assert_string_equal(transport_sse_state_str(po->x), "ended");
	face_accepts(PING); /* said twice: no second reply */
	assert_int_equal(po->c.ends, 1);
	face_says(PONG);
	assert_non_null(strstr(got(st), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,"
	                                "\"result\":{}}\n\n"));
	assert_int_equal(call->waiting, 0);
	/* The POST's exchange ends: the call detaches and, nothing being due,
	 * is told and freed (valgrind checks the free). */
	transport_sse_free(po->x, NULL);
	po->x = NULL;
	assert_int_equal(st->c.ends, 0);
}

static void test_upstream_ends_mid_call(void **state)
{
	(void)state;
	struct client *st = legacy_stream();
	face->cbs->on_ready(face->arg, PX_TRANSPORT_SSE);
	struct client *po = post_to(st, PING);
	struct transport_sse_ex *call = po->x->call;
	face_accepts(PING);
	assert_string_equal(transport_sse_state_str(call), "call-replied");
	face->cbs->on_closed(face->arg, "the upstream closed its SSE stream");
	/* The request still got one answer, on the stream, before it ended. */
	const char *s = got(st);
	assert_non_null(strstr(s, "\"id\":7,\"error\""));
	assert_non_null(strstr(s, "the upstream closed its SSE stream"));
	assert_int_equal(st->c.ends, 1);
	assert_string_equal(transport_sse_state_str(st->x), "ended");
	assert_string_equal(st->error, "the upstream closed its SSE stream");
	assert_int_equal(call->waiting, 0);
	assert_int_equal(call->own_end, INSPECT_END_UPSTREAM_ERROR);
	assert_string_equal(transport_sse_state_str(call), "call-replied");
	/* The client left before its POST was answered: still one record. */
	transport_sse_free(po->x, "client gone");
	po->x = NULL;
}

static void test_call_detached_before_reply(void **state)
{
	(void)state;
	struct client *st = legacy_stream();
	face->cbs->on_ready(face->arg, PX_TRANSPORT_SSE);
	struct client *po = post_to(st, PING);
	struct transport_sse_ex *call = po->x->call;
	transport_sse_free(po->x, "client gone");
	po->x = NULL;
	/* Its request is still due: the call lives, detached. */
	assert_string_equal(transport_sse_state_str(call), "call-detached");
	assert_int_equal(call->own_end, INSPECT_END_CANCELLED);
	face_accepts(PING); /* no POST to answer any more */
	assert_string_equal(transport_sse_state_str(call), "call-detached");
	face_says(PONG); /* the answer still reaches the stream; the call ends */
	assert_non_null(strstr(got(st), "\"id\":7,\"result\""));
}

/* A Streamable client of the legacy upstream: initialize opens the session. */
#define INIT_HEAD(accept) "POST /mcp HTTP/1.1\r\nHost: x\r\nAccept: " accept "\r\n\r\n"
#define INIT "{'jsonrpc':'2.0','id':1,'method':'initialize','params':{}}"
#define INIT_OK "{'jsonrpc':'2.0','id':1,'result':{'protocolVersion':'2025-03-26'}}"

static void test_streamable_json_reply_then_late_reply(void **state)
{
	(void)state;
	struct client *cl = request(INIT_HEAD("application/json"), INIT);
	assert_int_equal(cl->x->kind, SX_POST);
	assert_string_equal(transport_sse_state_str(cl->x), "new");
	face->cbs->on_ready(face->arg, PX_TRANSPORT_SSE);
	face_accepts(INIT); /* JSON only: nothing to start */
	assert_string_equal(transport_sse_state_str(cl->x), "new");
	assert_int_equal(cl->c.status, 0);
	face_says(INIT_OK);
	assert_string_equal(transport_sse_state_str(cl->x), "ended");
	assert_int_equal(cl->c.status, 200);
	assert_non_null(strstr(got(cl), "Mcp-Session-Id: "));
	assert_non_null(strstr(got(cl), "\"protocolVersion\":\"2025-03-26\""));
	assert_int_equal(cl->c.ends, 1);
	/* A reply after the close: refused, nothing written. */
	size_t n = evbuffer_get_length(cl->c.out);
	json_t *m = th_json(INIT_OK);
	struct session_out o = {.msg = m};
	assert_int_equal(ops_deliver(cl->x, &o), -1);
	json_decref(m);
	ops_withdrawn(cl->x);
	ops_accepted(cl->x);
	assert_int_equal(ops_can_stream(cl->x), 0);
	assert_int_equal(evbuffer_get_length(cl->c.out), n);
	assert_int_equal(cl->c.ends, 1);
}

static void test_streamable_sse_reply(void **state)
{
	(void)state;
	struct client *cl = request(INIT_HEAD("application/json, text/event-stream"), INIT);
	char buf[64];
	assert_string_equal(transport_sse_flags_str(cl->x, buf, sizeof(buf)), "accepts-sse");
	face->cbs->on_ready(face->arg, PX_TRANSPORT_SSE);
	face_accepts(INIT);
	assert_string_equal(transport_sse_state_str(cl->x), "streaming");
	assert_int_equal(cl->c.status, 200);
	assert_non_null(strstr(got(cl), "Content-Type: text/event-stream\r\n"));
	assert_int_equal(ops_can_stream(cl->x), 1);
	face_accepts(INIT); /* a second take changes nothing */
	face_says(INIT_OK);
	assert_string_equal(transport_sse_state_str(cl->x), "ended");
	assert_non_null(strstr(got(cl), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,"));
	assert_int_equal(cl->c.ends, 1);
	assert_int_equal(ops_can_stream(cl->x), 0);
}

int main(void)
{
	log_setup(LOG_ERROR, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_legacy_stream_waits_for_endpoint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_ends_before_endpoint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shutdown_while_head_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_call_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_ends_mid_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_detached_before_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streamable_json_reply_then_late_reply, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_streamable_sse_reply, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

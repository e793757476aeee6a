/* Unit tests for proxy/mcp/upstream_sse.c: the face's state machine
 * (upstream_sse_state_str: starting, ready, ended, closing, draining,
 * finished) driven through its upstream requests, the bad moves included.
 *
 * The .c is included (its statics are reached), and the upstream client
 * below it (proxy/net/upstream.h) is a fake: upstream_req_new records the
 * request's bytes and its callbacks, and the test plays the upstream by
 * calling them, with response heads parsed by the real http_parse. The
 * owner's callbacks are counted. The kick runs when the test spins the
 * loop (spin), so "nothing from within a call" is checked on the way.
 *
 * Behaviours:
 *   - legacy: messages wait for the endpoint; the endpoint makes the face
 *     ready, once, and the POSTs go there;
 *   - a second endpoint event: no second on_ready (its endpoint is used);
 *     a bad one after ready ends the face (on_closed, once) and the stream;
 *   - the legacy stream ending mid-exchange (a POST taken, its answer due
 *     on the stream): on_closed once, no on_failed; before the endpoint:
 *     its own reason;
 *   - a reply after close: not delivered, the stream stops, on_finished
 *     once, never on_closed, send refused;
 *   - Streamable: ready at the first 2xx, close sends DELETE (draining)
 *     and finishes when it is answered; a 404 for the session id ends the
 *     face once, however many come;
 *   - the auto probe: a refused initialize POST switches to the legacy
 *     GET, still starting;
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

#include "proxy/mcp/upstream_sse.c"

#include "tests/unit/helpers.h"

/* ---- the fake upstream client ------------------------------------------------ */

#define MAX_REQS 16

struct upstream {
	const struct px_upstream_conf *conf;
};

struct upstream_req {
	const struct upstream_req_cbs *cbs;
	void *arg;
	char bytes[4096];   /* the request as sent, NUL-ended */
	int freed, paused, streaming;
};

static struct upstream_req *reqs[MAX_REQS];
static size_t nreqs;

const struct px_upstream_conf *upstream_conf(const struct upstream *u)
{
	return u->conf;
}

struct upstream_req *upstream_req_new(struct upstream *u, struct evbuffer *request,
                                      int head_only, const struct upstream_req_cbs *cbs,
                                      void *arg)
{
	(void)u;
	(void)head_only;
	assert_true(nreqs < MAX_REQS);
	struct upstream_req *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	size_t n = evbuffer_get_length(request);
	assert_true(n < sizeof(r->bytes));
	evbuffer_remove(request, r->bytes, n);
	evbuffer_free(request);
	r->cbs = cbs;
	r->arg = arg;
	reqs[nreqs++] = r;
	return r;
}

/* Kept until the test ends, to be looked at; marked only. */
void upstream_req_free(struct upstream_req *r)
{
	if (r)
		r->freed = 1;
}

void upstream_req_pause(struct upstream_req *r)
{
	r->paused = 1;
}

void upstream_req_resume(struct upstream_req *r)
{
	r->paused = 0;
}

void upstream_req_stream(struct upstream_req *r)
{
	r->streaming = 1;
}

/* ---- playing the upstream ------------------------------------------------------ */

struct head_call {
	struct upstream_req *r;
	int rc;
};

static int head_cb(void *arg, const struct http_msg *m)
{
	struct head_call *h = arg;
	h->rc = h->r->cbs->on_head(h->r->arg, m);
	return 1; /* no body here: the test feeds it with body() */
}

/* The response head (a whole "HTTP/1.1 ...\r\n...\r\n\r\n"); on_head's rc. */
static int head(struct upstream_req *r, const char *text)
{
	static const struct http_parser_cbs cbs = {head_cb, NULL};
	struct head_call h = {r, 99};
	struct http_parser *p = http_parser_new(HTTP_KIND_RESPONSE, 8192, &cbs, &h);
	size_t used = 0;
	assert_non_null(p);
	assert_int_equal(http_parser_feed(p, text, strlen(text), &used), HTTP_PARSE_DONE);
	http_parser_free(p);
	assert_int_not_equal(h.rc, 99);
	return h.rc;
}

static int body(struct upstream_req *r, const char *text)
{
	return r->cbs->on_body(r->arg, text, strlen(text));
}

static void done(struct upstream_req *r)
{
	r->cbs->on_done(r->arg);
}

/* ---- the owner --------------------------------------------------------------------- */

static struct {
	int ready, messages, accepted, failed, closed, finished;
	enum px_transport tr;
	int failed_status;
	const char *closed_detail;
	char last_method[64];
} seen;

static void on_ready(void *arg, enum px_transport tr)
{
	(void)arg;
	seen.ready++;
	seen.tr = tr;
}

static void on_message(void *arg, json_t *msg, const char *raw, size_t raw_len)
{
	(void)arg;
	(void)raw;
	(void)raw_len;
	const char *m = jrpc_method(msg);
	seen.messages++;
	snprintf(seen.last_method, sizeof(seen.last_method), "%s", m ? m : "");
}

static void on_accepted(void *arg, const json_t *msg)
{
	(void)arg;
	(void)msg;
	seen.accepted++;
}

static void on_failed(void *arg, const json_t *msg, int status, const char *detail,
                      const json_t *reply, const struct upstream_sse_refusal *refusal)
{
	(void)arg;
	(void)msg;
	(void)detail;
	(void)reply;
	(void)refusal;
	seen.failed++;
	seen.failed_status = status;
}

static void on_closed(void *arg, const char *detail)
{
	(void)arg;
	seen.closed++;
	seen.closed_detail = detail;
}

static void on_finished(void *arg)
{
	(void)arg;
	seen.finished++;
}

static const struct upstream_sse_cbs owner = {
	on_ready, on_message, on_accepted, on_failed, on_closed, on_finished,
};

/* ---- fixture ------------------------------------------------------------------------ */

static struct px_upstream_conf ucf;
static struct px_config cfg;
static struct upstream fake_up;
static struct upstream *ups[1];
static struct px_ctx ctx;

static int setup(void **state)
{
	(void)state;
	memset(&seen, 0, sizeof(seen));
	nreqs = 0;
	ucf = (struct px_upstream_conf){
		.name = "up", .url_safe = "http://127.0.0.1:9/sse", .host = "127.0.0.1", .port = "9",
		.target = "/sse", .host_header = "127.0.0.1:9",
	};
	cfg = (struct px_config){0};
	cfg.limits.max_body_bytes = 1 << 20;
	cfg.limits.max_sse_event_bytes = 1 << 16;
	cfg.limits.max_session_queue = 8;
	fake_up.conf = &ucf;
	ups[0] = &fake_up;
	ctx = (struct px_ctx){0};
	ctx.base = event_base_new();
	assert_non_null(ctx.base);
	ctx.cfg = &cfg;
	ctx.ups = ups;
	ctx.nups = 1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < nreqs; i++)
		free(reqs[i]);
	nreqs = 0;
	event_base_free(ctx.base);
	return 0;
}

/* Runs what the face deferred (the kick, op frees). */
static void spin(void)
{
	for (int i = 0; i < 4; i++)
		event_base_loop(ctx.base, EVLOOP_NONBLOCK);
}

static int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int send_text(struct upstream_sse *f, const char *text)
{
	json_t *m = th_json(text);
	int rc = upstream_sse_send(f, m, NULL, 0);
	json_decref(m);
	return rc;
}

#define INIT "{'jsonrpc':'2.0','id':1,'method':'initialize','params':{}}"
#define PING "{'jsonrpc':'2.0','id':2,'method':'ping'}"
#define SSE_OK "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"

/* A legacy face whose GET (reqs[0]) named /messages?sessionId=a. */
static struct upstream_sse *legacy_ready(void)
{
	struct upstream_sse *f = upstream_sse_new(&ctx, 0, PX_TRANSPORT_SSE, 0, NULL, &owner, NULL);
	assert_non_null(f);
	assert_int_equal(nreqs, 1);
	assert_int_equal(head(reqs[0], SSE_OK), 0);
	assert_int_equal(body(reqs[0], "event: endpoint\ndata: /messages?sessionId=a\n\n"), 0);
	assert_string_equal(upstream_sse_state_str(f), "ready");
	return f;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_legacy_waits_for_endpoint(void **state)
{
	(void)state;
	struct upstream_sse *f = upstream_sse_new(&ctx, 0, PX_TRANSPORT_SSE, 0, NULL, &owner, NULL);
	assert_non_null(f);
	assert_string_equal(upstream_sse_state_str(f), "starting");
	assert_true(starts_with(reqs[0]->bytes, "GET /sse HTTP/1.1\r\n"));
	assert_int_equal(send_text(f, INIT), 0);
	spin();
	assert_int_equal(nreqs, 1); /* no endpoint yet: queued */
	assert_int_equal(head(reqs[0], SSE_OK), 0);
	assert_int_equal(seen.ready, 0);
	assert_int_equal(body(reqs[0], "event: endpoint\ndata: /messages?sessionId=a\n\n"), 0);
	assert_int_equal(seen.ready, 1);
	assert_int_equal(seen.tr, PX_TRANSPORT_SSE);
	assert_true(reqs[0]->streaming);
	assert_string_equal(upstream_sse_state_str(f), "ready");
	spin();
	assert_int_equal(nreqs, 2);
	assert_true(starts_with(reqs[1]->bytes, "POST /messages?sessionId=a HTTP/1.1\r\n"));
	upstream_sse_free(f);
}

static void test_endpoint_twice(void **state)
{
	(void)state;
	struct upstream_sse *f = legacy_ready();
	assert_int_equal(body(reqs[0], "event: endpoint\ndata: /other?sessionId=b\n\n"), 0);
	assert_int_equal(seen.ready, 1); /* told once */
	assert_string_equal(upstream_sse_state_str(f), "ready");
	assert_int_equal(send_text(f, PING), 0);
	spin();
	assert_int_equal(nreqs, 2);
	assert_true(starts_with(reqs[1]->bytes, "POST /other?sessionId=b HTTP/1.1\r\n"));
	/* A bad one now: the face is over, the stream stops being read. */
	assert_int_equal(body(reqs[0], "event: endpoint\ndata: http://evil.example/x\n\n"), -1);
	assert_int_equal(seen.closed, 1);
	assert_string_equal(seen.closed_detail, "the upstream's endpoint is on another origin");
	assert_string_equal(upstream_sse_state_str(f), "ended");
	assert_int_equal(seen.ready, 1);
	upstream_sse_free(f);
}

static void test_stream_ends_mid_exchange(void **state)
{
	(void)state;
	struct upstream_sse *f = legacy_ready();
	assert_int_equal(send_text(f, PING), 0);
	spin();
	assert_int_equal(nreqs, 2);
	assert_int_equal(head(reqs[1], "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"), 0);
	assert_int_equal(seen.accepted, 1);
	done(reqs[1]);
	/* The answer was due on the stream, which ends now. */
	done(reqs[0]);
	assert_int_equal(seen.closed, 1);
	assert_string_equal(seen.closed_detail, "the upstream closed its SSE stream");
	assert_int_equal(seen.failed, 0); /* legacy: not the POST's to answer */
	assert_string_equal(upstream_sse_state_str(f), "ended");
	spin();
	assert_true(reqs[0]->freed && reqs[1]->freed);
	/* Closing an ended face: closing, then (no DELETE on legacy) finished. */
	upstream_sse_close(f);
	assert_string_equal(upstream_sse_state_str(f), "closing");
	assert_int_equal(seen.finished, 0); /* from the loop, never from within */
	spin();
	assert_string_equal(upstream_sse_state_str(f), "finished");
	assert_int_equal(seen.finished, 1);
	assert_int_equal(seen.closed, 1);
	upstream_sse_free(f);
}

static void test_stream_ends_before_endpoint(void **state)
{
	(void)state;
	struct upstream_sse *f = upstream_sse_new(&ctx, 0, PX_TRANSPORT_SSE, 0, NULL, &owner, NULL);
	assert_non_null(f);
	assert_int_equal(send_text(f, INIT), 0);
	assert_int_equal(head(reqs[0], SSE_OK), 0);
	reqs[0]->cbs->on_error(reqs[0]->arg, UPSTREAM_ERR_RESET, "reset");
	assert_int_equal(seen.closed, 1);
	assert_string_equal(seen.closed_detail, "no endpoint from the upstream's SSE stream");
	assert_int_equal(seen.ready, 0);
	assert_string_equal(upstream_sse_state_str(f), "ended");
	spin();
	assert_int_equal(nreqs, 1); /* the queued initialize never went */
	upstream_sse_free(f);
}

static void test_reply_after_close(void **state)
{
	(void)state;
	struct upstream_sse *f = legacy_ready();
	upstream_sse_close(f);
	assert_string_equal(upstream_sse_state_str(f), "closing");
	assert_int_equal(send_text(f, PING), -1);
	/* A message the upstream sends now is not delivered; reading stops. */
	assert_int_equal(body(reqs[0], "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n"),
	                 -1);
	assert_int_equal(seen.messages, 0);
	spin();
	assert_string_equal(upstream_sse_state_str(f), "finished");
	assert_int_equal(seen.finished, 1);
	assert_int_equal(seen.closed, 0); /* the owner closed it: nothing to tell */
	assert_true(reqs[0]->freed);
	upstream_sse_close(f); /* idempotent */
	spin();
	assert_int_equal(seen.finished, 1);
	assert_int_equal(nreqs, 1);
	upstream_sse_free(f);
}

static void test_streamable_close_drains_delete(void **state)
{
	(void)state;
	ucf.target = "/mcp";
	struct upstream_sse *f = upstream_sse_new(&ctx, 0, PX_TRANSPORT_STREAMABLE, 0, NULL, &owner,
	                                          NULL);
	assert_non_null(f);
	assert_int_equal(nreqs, 0); /* connects with its first message */
	assert_int_equal(send_text(f, INIT), 0);
	spin();
	assert_int_equal(nreqs, 1);
	assert_true(starts_with(reqs[0]->bytes, "POST /mcp HTTP/1.1\r\n"));
	assert_int_equal(head(reqs[0], "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                               "Mcp-Session-Id: s1\r\nContent-Length: 40\r\n\r\n"), 0);
	assert_int_equal(seen.ready, 1);
	assert_int_equal(seen.tr, PX_TRANSPORT_STREAMABLE);
	assert_int_equal(seen.accepted, 1);
	assert_int_equal(body(reqs[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"), 0);
	done(reqs[0]);
	assert_int_equal(seen.messages, 1);
	upstream_sse_close(f);
	spin();
	assert_string_equal(upstream_sse_state_str(f), "draining");
	assert_int_equal(nreqs, 2);
	assert_true(starts_with(reqs[1]->bytes, "DELETE /mcp HTTP/1.1\r\n"));
	assert_non_null(strstr(reqs[1]->bytes, "\r\nMcp-Session-Id: s1\r\n"));
	assert_int_equal(seen.finished, 0);
	assert_int_equal(head(reqs[1], "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 0);
	done(reqs[1]);
	spin();
	assert_string_equal(upstream_sse_state_str(f), "finished");
	assert_int_equal(seen.finished, 1);
	assert_int_equal(seen.closed, 0);
	upstream_sse_free(f);
}

static void test_streamable_404_ends_once(void **state)
{
	(void)state;
	ucf.target = "/mcp";
	struct upstream_sse *f = upstream_sse_new(&ctx, 0, PX_TRANSPORT_STREAMABLE, 0, NULL, &owner,
	                                          NULL);
	assert_int_equal(send_text(f, INIT), 0);
	spin();
	assert_int_equal(head(reqs[0], "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                               "Mcp-Session-Id: s1\r\nContent-Length: 2\r\n\r\n"), 0);
	assert_int_equal(send_text(f, PING), 0);
	assert_int_equal(send_text(f, "{'jsonrpc':'2.0','id':3,'method':'ping'}"), 0);
	spin();
	assert_int_equal(nreqs, 3);
	const char *nf = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	assert_int_equal(head(reqs[1], nf), -1);
	assert_int_equal(seen.closed, 1);
	assert_string_equal(upstream_sse_state_str(f), "ended");
	assert_int_equal(head(reqs[2], nf), -1);
	assert_int_equal(seen.closed, 1); /* once */
	assert_int_equal(seen.ready, 1);
	upstream_sse_free(f);
}

static void test_probe_switches_to_legacy(void **state)
{
	(void)state;
	ucf.target = "/mcp";
	struct upstream_sse *f = upstream_sse_new(&ctx, 0, PX_TRANSPORT_STREAMABLE, 1, NULL, &owner,
	                                          NULL);
	char buf[64];
	assert_string_equal(upstream_sse_flags_str(f, buf, sizeof(buf)), "fallback");
	assert_int_equal(upstream_sse_transport(f), PX_TRANSPORT_AUTO);
	assert_int_equal(send_text(f, INIT), 0);
	spin();
	assert_int_equal(nreqs, 1);
	assert_string_equal(upstream_sse_flags_str(f, buf, sizeof(buf)), "fallback|posting");
	assert_int_equal(head(reqs[0], "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain"
	                               "\r\nContent-Length: 0\r\n\r\n"), -1);
	/* Legacy now, on the same URL, still waiting for its endpoint. */
	assert_int_equal(nreqs, 2);
	assert_true(starts_with(reqs[1]->bytes, "GET /mcp HTTP/1.1\r\n"));
	assert_string_equal(upstream_sse_state_str(f), "starting");
	assert_int_equal(upstream_sse_transport(f), PX_TRANSPORT_SSE);
	assert_string_equal(upstream_sse_flags_str(f, buf, sizeof(buf)), "");
	assert_int_equal(seen.ready, 0);
	assert_int_equal(seen.failed, 0);
	assert_int_equal(head(reqs[1], SSE_OK), 0);
	assert_int_equal(body(reqs[1], "event: endpoint\ndata: /messages\n\n"), 0);
	assert_int_equal(seen.ready, 1);
	spin();
	/* The refused initialize goes again, first, to the endpoint. */
	assert_int_equal(nreqs, 3);
	assert_true(starts_with(reqs[2]->bytes, "POST /messages HTTP/1.1\r\n"));
	assert_non_null(strstr(reqs[2]->bytes, "\"initialize\""));
	upstream_sse_pause(f);
	assert_string_equal(upstream_sse_flags_str(f, buf, sizeof(buf)), "posting|paused");
	assert_true(reqs[1]->paused && reqs[2]->paused);
	upstream_sse_free(f);
}

int main(void)
{
	log_setup(LOG_ERROR, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_legacy_waits_for_endpoint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_endpoint_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_ends_mid_exchange, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_ends_before_endpoint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reply_after_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streamable_close_drains_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streamable_404_ends_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_probe_switches_to_legacy, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

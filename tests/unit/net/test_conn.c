/* Unit tests for proxy/net/conn.c: one client connection over a
 * socketpair, driven by a test handler (a fake transport_ops) and a test
 * owner (struct conn_owner), on one event loop. The client side is the
 * test itself: it writes raw bytes and reads what comes back.
 *
 * Covered: two pipelined requests in one write answered in order; two
 * requests on one kept-alive connection; a head that does not arrive in
 * time (408), a body that does not (408), no 408 once the request is in
 * and one again for the next request's head, a body over its cap (413),
 * a head over its cap (431), each with the body the handler's
 * ->error_body gives (and text/plain without one); a handler that
 * aborts from inside ->start; a client that half-closes
 * (shutdown(SHUT_WR)) after its request still gets the answer; the
 * state and flags a handler sees while it runs; the owner hears of every
 * end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/base/clock.h"
#include "proxy/base/log.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/net/conn.h"
#include "proxy/net/http_parse.h"
#include "proxy/net/peers.h"
#include "proxy/net/transport.h"

/* ---- the test handler --------------------------------------------------- */

/* A path answers with itself as a text/plain body, at once; "/abort"
 * calls conn_abort from inside ->start; "/slow" answers 50 ms later. */
struct exchange {
	struct conn *c;
	struct event *later;   /* owned: the "/slow" answer, or NULL */
	char path[64];
};

static struct {
	int starts, frees, aborted_starts;
	size_t body_len;       /* the last request's body, as ->start got it */
	char state_in_start[16];
	char flags_in_start[128];
} seen;

static void answer(struct exchange *ex)
{
	struct evbuffer *h = evbuffer_new();
	size_t n = strlen(ex->path);
	assert_non_null(h);
	evbuffer_add_printf(h, "Content-Type: text/plain\r\n");
	assert_int_equal(conn_reply_head(ex->c, 200, h, (int64_t)n), 0);
	assert_int_equal(conn_reply_body(ex->c, ex->path, n), 0);
	conn_reply_end(ex->c);
	evbuffer_free(h);
}

static void later_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	answer(arg);
}

static struct exchange *t_start(struct conn *c, const struct http_msg *req, struct evbuffer *body)
{
	seen.body_len = evbuffer_get_length(body);
	evbuffer_free(body);
	seen.starts++;
	snprintf(seen.state_in_start, sizeof(seen.state_in_start), "%s", conn_state_str(c));
	conn_flags_str(c, seen.flags_in_start, sizeof(seen.flags_in_start));
	if (strcmp(http_msg_url(req), "/abort") == 0) {
		seen.aborted_starts++;
		conn_abort(c, "the test handler aborted");
		return NULL;
	}
	struct exchange *ex = calloc(1, sizeof(*ex));
	assert_non_null(ex);
	ex->c = c;
	snprintf(ex->path, sizeof(ex->path), "%s", http_msg_url(req));
	if (strcmp(ex->path, "/stream") == 0) {
		/* A stream of one event: no length ahead, so chunked. */
		assert_int_equal(conn_reply_head(c, 200, NULL, -1), 0);
		assert_int_equal(conn_reply_body(c, "data: x\n\n", 9), 0);
		conn_reply_end(c);
	} else if (strcmp(ex->path, "/slow") == 0) {
		struct timeval tv = {0, 50 * 1000};
		ex->later = evtimer_new(conn_ctx(c)->base, later_cb, ex);
		evtimer_add(ex->later, &tv);
	} else {
		answer(ex);
	}
	return ex;
}

static void t_drained(struct exchange *ex)
{
	(void)ex;
}

static void t_shutdown(struct exchange *ex)
{
	(void)ex;
}

static void t_free(struct exchange *ex, const char *client_error)
{
	(void)client_error;
	seen.frees++;
	if (ex->later)
		event_free(ex->later);
	free(ex);
}

/* The refusal's body as the handler writes it: "E<status> <text>". */
static const char *t_error_body(int status, enum conn_refusal why, const char *text,
                                struct evbuffer *out)
{
	(void)why;
	evbuffer_add_printf(out, "E%d %s", status, text);
	return "application/x-test";
}

static const struct transport_ops test_ops = {
	.name = "test",
	.start = t_start,
	.drained = t_drained,
	.shutdown = t_shutdown,
	.free = t_free,
	.error_body = t_error_body,
};

/* The same without ->error_body: conn's text/plain fallback. */
static const struct transport_ops plain_ops = {
	.name = "plain",
	.start = t_start,
	.drained = t_drained,
	.shutdown = t_shutdown,
	.free = t_free,
};

/* ---- the test owner ---------------------------------------------------- */

static int closed_count, closed_moved;

static void t_closed(struct px_ctx *ctx, int moved)
{
	(void)ctx;
	closed_count++;
	closed_moved += moved != 0;
}

static const struct conn_owner test_owner = {.closed = t_closed};

/* ---- fixture ------------------------------------------------------------- */

struct fixture {
	struct event_base *base;
	struct px_config cfg;
	struct px_proc proc;
	struct px_ctx ctx;
	int cfd;                  /* the client's end */
	struct event *rd;         /* reads cfd into got */
	char got[16384];
	size_t len;
	int eof;
};

static void client_read(evutil_socket_t fd, short what, void *arg)
{
	struct fixture *f = arg;
	(void)what;
	for (;;) {
		ssize_t n = read(fd, f->got + f->len, sizeof(f->got) - 1 - f->len);
		if (n > 0) {
			f->len += (size_t)n;
			f->got[f->len] = '\0';
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			f->eof = 1;
			event_del(f->rd);
		}
		return;
	}
}

static struct fixture *fixture_new(void)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	memset(&seen, 0, sizeof(seen));
	closed_count = closed_moved = 0;
	f->base = event_base_new();
	assert_non_null(f->base);
	f->cfg.limits.max_header_bytes = 4096;
	f->cfg.limits.max_body_bytes = 1024;
	f->cfg.limits.max_output_bytes = 1 << 20;
	f->cfg.timeouts.client_idle_ms = 5000;
	f->cfg.timeouts.header_ms = 5000;
	f->cfg.timeouts.body_ms = 5000;
	f->ctx.base = f->base;
	f->ctx.cfg = &f->cfg;
	f->ctx.proc = &f->proc;
	f->proc.peers = peers_new();
	assert_non_null(f->proc.peers);
	return f;
}

/* Opens the connection (the limits set first) with ops. */
static void fixture_open(struct fixture *f, const struct transport_ops *ops)
{
	int sv[2];
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(40000),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	f->cfd = sv[0];
	f->rd = event_new(f->base, f->cfd, EV_READ | EV_PERSIST, client_read, f);
	event_add(f->rd, NULL);
	assert_non_null(conn_new(&f->ctx, sv[1], (struct sockaddr *)&sa, sizeof(sa), ops,
	                         &test_owner, NULL));
	assert_int_equal(f->ctx.nconns, 1);
}

static void fixture_free(struct fixture *f)
{
	while (f->ctx.conns)
		conn_destroy(f->ctx.conns);
	event_free(f->rd);
	if (f->cfd >= 0)
		close(f->cfd);
	peers_free(f->proc.peers);
	event_base_free(f->base);
	free(f);
}

static void client_write(struct fixture *f, const char *s)
{
	size_t n = strlen(s);
	assert_int_equal(write(f->cfd, s, n), (ssize_t)n);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void loop_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* How many whole 200 replies (head and Content-Length body) got holds. */
static size_t whole_replies(const struct fixture *f)
{
	size_t n = 0;
	const char *p = f->got;
	while ((p = strstr(p, "HTTP/1.1 200 "))) {
		const char *end = strstr(p, "\r\n\r\n"), *cl = strstr(p, "Content-Length: ");
		if (!end || !cl || cl > end)
			break;
		size_t len = strtoul(cl + 16, NULL, 10);
		if ((size_t)(f->got + f->len - (end + 4)) < len)
			break;
		n++;
		p = end + 4 + len;
	}
	return n;
}

/* Runs the loop until the client saw EOF, or (replies > 0) holds that
 * many whole answers, or ms passed. */
static void run_until(struct fixture *f, size_t replies, unsigned ms)
{
	struct timeval tick = {0, 10 * 1000};
	struct event *t = event_new(f->base, -1, EV_PERSIST, loop_tick, NULL);
	event_add(t, &tick);
	for (unsigned waited = 0; waited < ms && !f->eof; waited += 10) {
		if (replies && whole_replies(f) >= replies)
			break;
		event_base_loop(f->base, EVLOOP_ONCE);
	}
	event_free(t);
}

/* The body of the reply starting at p (after its blank line). */
static const char *body_of(const char *p)
{
	const char *b = strstr(p, "\r\n\r\n");
	return b ? b + 4 : "";
}

/* ---- tests ------------------------------------------------------------------ */

static void test_pipelined_requests_answered_in_order(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	fixture_open(f, &test_ops);
	client_write(f, "GET /first HTTP/1.1\r\nHost: h\r\n\r\n"
	                "GET /second HTTP/1.1\r\nHost: h\r\n\r\n");
	run_until(f, 2, 2000);
	assert_int_equal(seen.starts, 2);
	assert_int_equal(count(f->got, "HTTP/1.1 200 "), 2);
	const char *a = strstr(f->got, "/first"), *b = strstr(f->got, "/second");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	/* Each with its own framing, on a connection still open. */
	assert_int_equal(count(f->got, "Content-Length: 6\r\n"), 1);
	assert_int_equal(count(f->got, "Content-Length: 7\r\n"), 1);
	assert_false(f->eof);
	assert_int_equal(closed_count, 0);
	fixture_free(f);
}

static void test_keep_alive_two_requests_one_connection(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	fixture_open(f, &test_ops);
	client_write(f, "GET /one HTTP/1.1\r\nHost: h\r\n\r\n");
	run_until(f, 1, 2000);
	assert_int_equal(count(f->got, "HTTP/1.1 200 "), 1);
	assert_string_equal(body_of(f->got), "/one");
	/* The handler saw its request, nothing replied yet, on a plain
	 * connection counted under its address. */
	assert_string_equal(seen.state_in_start, "handling");
	assert_string_equal(seen.flags_in_start, "plain|counted|timeouts-set");

	f->len = 0;
	f->got[0] = '\0';
	client_write(f, "GET /two HTTP/1.1\r\nHost: h\r\n\r\n");
	run_until(f, 1, 2000);
	assert_string_equal(body_of(f->got), "/two");
	assert_int_equal(seen.starts, 2);
	assert_int_equal(seen.frees, 2);
	assert_int_equal(f->ctx.nconns, 1);
	assert_int_equal(closed_count, 0);
	assert_false(f->eof);

	/* The client leaves: the connection ends, its owner hears of it. */
	close(f->cfd);
	f->cfd = -1;
	for (int i = 0; i < 100 && f->ctx.nconns; i++)
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(f->ctx.nconns, 0);
	assert_int_equal(closed_count, 1);
	assert_int_equal(closed_moved, 0);
	fixture_free(f);
}

/* A GET answered by a stream lets go of the buffers kept for the next
 * request's body while it lasts; the connection still reads the next
 * request, body and all, once the stream ended (here pipelined behind
 * it, so read in the very step that ends the stream). */
static void test_body_after_a_streamed_get(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	fixture_open(f, &test_ops);
	client_write(f, "GET /stream HTTP/1.1\r\nHost: h\r\n\r\n"
	                "POST /two HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello");
	for (int i = 0; i < 200 && !strstr(f->got, "\r\n\r\n/two"); i++)
		run_until(f, 0, 10);
	assert_int_equal(seen.starts, 2);
	assert_int_equal(seen.body_len, 5);
	assert_non_null(strstr(f->got, "Transfer-Encoding: chunked\r\n"));
	assert_non_null(strstr(f->got, "9\r\ndata: x\n\n\r\n0\r\n\r\n"));
	assert_non_null(strstr(f->got, "Content-Length: 4\r\n"));
	assert_false(f->eof);
	assert_int_equal(closed_count, 0);
	fixture_free(f);
}

/* The request was refused with a 408 and the connection closed; no
 * handler saw it. */
static void assert_408(struct fixture *f)
{
	assert_true(f->eof);
	assert_int_equal(seen.starts, 0);
	assert_non_null(strstr(f->got, "HTTP/1.1 408 "));
	assert_string_equal(body_of(f->got), "E408 request not received in time");
}

static void test_header_timeout_408(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	f->cfg.timeouts.header_ms = 50;
	fixture_open(f, &test_ops);
	client_write(f, "GET / HTTP/1.1\r\nHo"); /* and nothing more */
	run_until(f, 0, 2000);
	assert_408(f);
	assert_non_null(strstr(f->got, "Content-Type: application/x-test\r\n"));
	assert_non_null(strstr(f->got, "Connection: close\r\n"));
	assert_int_equal(closed_count, 1);
	assert_int_equal(f->ctx.nconns, 0);
	fixture_free(f);
}

static void test_body_timeout_408(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	f->cfg.timeouts.body_ms = 50; /* the head's own (5 s) is not what ends it */
	fixture_open(f, &test_ops);
	client_write(f, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc");
	run_until(f, 0, 2000);
	assert_408(f);
	assert_int_equal(closed_count, 1);
	fixture_free(f);
}

/* timeouts.client_idle_ms (c->idle): a keep-alive connection left idle
 * that long closes without a word; a call that takes longer is not cut. */
static void test_idle_keepalive_closes(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	f->cfg.timeouts.client_idle_ms = 30;
	fixture_open(f, &test_ops);
	client_write(f, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n"); /* 50 ms > 30 */
	run_until(f, 1, 2000);
	assert_int_equal(count(f->got, "HTTP/1.1 200 "), 1);
	assert_false(f->eof);
	uint64_t t0 = clock_mono_us();
	run_until(f, 0, 2000);
	assert_true(f->eof);
	assert_true(clock_mono_us() - t0 < 1000000);
	assert_int_equal(count(f->got, "HTTP/1.1 "), 1); /* no 408: closed */
	assert_int_equal(closed_count, 1);
	assert_int_equal(f->ctx.nconns, 0);
	fixture_free(f);
}

/* Each byte pushes the idle timeout on: a head trickling in faster than it
 * is not cut by it; once the bytes stop, it is a 408 (the head's own
 * deadline, 5 s, is not what ends it). */
static void test_idle_mid_head_408(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	f->cfg.timeouts.client_idle_ms = 60;
	fixture_open(f, &test_ops);
	static const char *const pieces[] = {"GET / HT", "TP/1.1\r", "\nHo", "st: h\r"};
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		client_write(f, pieces[i]);
		run_until(f, 0, 30);
		assert_false(f->eof);
	}
	run_until(f, 0, 2000);
	assert_408(f);
	fixture_free(f);
}

/* The head's deadline ends with the head: a handler that takes longer
 * than it is not cut; the next request on the connection has its own. */
static void test_no_408_once_the_request_is_in(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	f->cfg.timeouts.header_ms = 50;
	fixture_open(f, &test_ops);
	client_write(f, "GET /slow HTTP/1.1\r\nHo");
	run_until(f, 0, 10); /* one turn: the head's first piece is read */
	client_write(f, "st: h\r\n\r\n"); /* "/slow" answers 50 ms later */
	run_until(f, 1, 2000);
	run_until(f, 0, 100);
	assert_int_equal(count(f->got, "HTTP/1.1 200 "), 1);
	assert_null(strstr(f->got, " 408 "));
	assert_false(f->eof);
	client_write(f, "GET /next HTTP/1.1\r\nHo"); /* and nothing more */
	run_until(f, 0, 2000);
	assert_true(f->eof);
	assert_int_equal(seen.starts, 1);
	assert_non_null(strstr(f->got, "HTTP/1.1 408 "));
	assert_int_equal(closed_count, 1);
	fixture_free(f);
}

static void test_body_too_large_413(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	f->cfg.limits.max_body_bytes = 16;
	fixture_open(f, &test_ops);
	client_write(f, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n");
	run_until(f, 0, 2000);
	assert_true(f->eof);
	assert_int_equal(seen.starts, 0);
	/* Exactly the bytes: status line, the handler's type, the length of
	 * its body, Connection: close. */
	const char *body = "E413 request body too large: Content-Length over limits.max_body_bytes";
	char want[512];
	snprintf(want, sizeof(want),
	         "HTTP/1.1 413 Content Too Large\r\nContent-Type: application/x-test\r\n"
	         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
	         strlen(body), body);
	assert_string_equal(f->got, want);
	assert_int_equal(f->ctx.stats.too_large, 1);
	assert_int_equal(closed_count, 1);
	fixture_free(f);
}

static void test_headers_too_large_431(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	char req[2048], pad[1500];
	f->cfg.limits.max_header_bytes = 256;
	fixture_open(f, &test_ops);
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: h\r\nX-Pad: %s\r\n\r\n", pad);
	client_write(f, req);
	run_until(f, 0, 2000);
	assert_true(f->eof);
	assert_int_equal(seen.starts, 0);
	assert_non_null(strstr(f->got, "HTTP/1.1 431 "));
	assert_true(strncmp(body_of(f->got), "E431 request headers too large", 30) == 0);
	assert_int_equal(closed_count, 1);
	fixture_free(f);
}

static void test_refusal_without_error_body_is_plain_text(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	f->cfg.limits.max_body_bytes = 16;
	fixture_open(f, &plain_ops);
	client_write(f, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n");
	run_until(f, 0, 2000);
	assert_true(f->eof);
	assert_non_null(strstr(f->got, "HTTP/1.1 413 "));
	assert_non_null(strstr(f->got, "Content-Type: text/plain; charset=utf-8\r\n"));
	assert_string_equal(body_of(f->got),
	                    "request body too large: Content-Length over limits.max_body_bytes\n");
	fixture_free(f);
}

static void test_abort_from_inside_start(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	fixture_open(f, &test_ops);
	client_write(f, "GET /abort HTTP/1.1\r\nHost: h\r\n\r\n");
	run_until(f, 0, 2000);
	/* Closed without a byte; freed from the loop, after ->start had
	 * returned (no exchange to free). */
	assert_true(f->eof);
	assert_int_equal(f->len, 0);
	assert_int_equal(seen.aborted_starts, 1);
	assert_int_equal(seen.frees, 0);
	assert_int_equal(f->ctx.stats.aborted, 1);
	assert_int_equal(f->ctx.nconns, 0);
	assert_int_equal(closed_count, 1);
	fixture_free(f);
}

static void test_half_close_still_gets_the_answer(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	fixture_open(f, &test_ops);
	client_write(f, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n");
	/* Let the request reach the handler, then: nothing more to send. */
	for (int i = 0; i < 100 && !seen.starts; i++)
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(seen.starts, 1);
	assert_int_equal(shutdown(f->cfd, SHUT_WR), 0);
	run_until(f, 0, 3000);
	/* The answer came (after the 100 Continue that probes whether the
	 * client is still there), then the connection closed. */
	assert_true(f->eof);
	assert_non_null(strstr(f->got, "HTTP/1.1 200 "));
	assert_non_null(strstr(f->got, "Connection: close\r\n"));
	assert_string_equal(body_of(strstr(f->got, "HTTP/1.1 200 ")), "/slow");
	assert_int_equal(seen.frees, 1);
	assert_int_equal(closed_count, 1);
	assert_int_equal(f->ctx.nconns, 0);
	fixture_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipelined_requests_answered_in_order),
		cmocka_unit_test(test_keep_alive_two_requests_one_connection),
		cmocka_unit_test(test_body_after_a_streamed_get),
		cmocka_unit_test(test_header_timeout_408),
		cmocka_unit_test(test_body_timeout_408),
		cmocka_unit_test(test_idle_keepalive_closes),
		cmocka_unit_test(test_idle_mid_head_408),
		cmocka_unit_test(test_no_408_once_the_request_is_in),
		cmocka_unit_test(test_body_too_large_413),
		cmocka_unit_test(test_headers_too_large_431),
		cmocka_unit_test(test_refusal_without_error_body_is_plain_text),
		cmocka_unit_test(test_abort_from_inside_start),
		cmocka_unit_test(test_half_close_still_gets_the_answer),
	};
	log_setup(LOG_WARN, 0); /* no access lines for the refusals */
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for proxy/net/upstream.c: a request whose head is handed over
 * apart from its body (upstream_req_new_split) reaches the server as the
 * same bytes as one whole request, on a fresh connection (queued in the
 * bufferevent until connected) and on a pooled one (one sendmsg), and
 * its body is kept intact for a retry. The server is a thread with
 * blocking sockets (test only), so valgrind sees the whole of it.
 *
 * The pool (issue 17): a connection that said anything after its last
 * response (bytes behind it in the same read, bytes arriving while idle,
 * even in the very loop turn that reuses it) is closed, never reused; so is
 * one whose reply was distrusted (upstream_req_distrust).
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
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/config.h"
#include "proxy/net/http_parse.h"
#include "proxy/net/upstream.h"
#include "proxy/base/clock.h"
#include "tests/unit/helpers.h"

/* ---- the server: N requests of known lengths on one connection ----------- */

#define SRV_MAX_REQS 4

struct server {
	int lfd;
	int port;
	size_t nreqs;
	size_t nanswers;             /* the first ones answered (0: all) */
	size_t want[SRV_MAX_REQS];   /* each request's length */
	char got[SRV_MAX_REQS][4096];
};

static void *server_run(void *arg)
{
	struct server *s = arg;
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	for (size_t i = 0; i < s->nreqs; i++) {
		size_t have = 0;
		while (have < s->want[i]) {
			ssize_t n = read(fd, s->got[i] + have, s->want[i] - have);
			if (n <= 0)
				goto out;
			have += (size_t)n;
		}
		if (s->nanswers && i >= s->nanswers) {
			char c;
			while (read(fd, &c, 1) > 0)
				; /* silent until the client gives up */
			break;
		}
		if (write(fd, reply, sizeof(reply) - 1) != (ssize_t)sizeof(reply) - 1)
			break;
	}
out:
	close(fd);
	return NULL;
}

static void server_start(struct server *s, pthread_t *t)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(t, NULL, server_run, s), 0);
}

/* ---- the client side ------------------------------------------------------ */

struct client {
	struct event_base *base;
	int status;
	char body[64];
	size_t body_len;
	int done, failed;
	enum upstream_err err;
};

static int on_head(void *arg, const struct http_msg *resp)
{
	struct client *c = arg;
	c->status = http_msg_status(resp);
	return 0;
}

static int on_body(void *arg, const char *data, size_t len)
{
	struct client *c = arg;
	if (len > sizeof(c->body) - c->body_len)
		return -1;
	memcpy(c->body + c->body_len, data, len);
	c->body_len += len;
	return 0;
}

static void on_done(void *arg)
{
	struct client *c = arg;
	c->done = 1;
	event_base_loopbreak(c->base);
}

static void on_error(void *arg, enum upstream_err err, const char *detail)
{
	struct client *c = arg;
	(void)detail;
	c->failed = 1;
	c->err = err;
	event_base_loopbreak(c->base);
}

static const struct upstream_req_cbs cbs = {on_head, on_body, on_done, on_error};

struct fixture {
	struct event_base *base;
	struct upstream_opts opts;
	struct px_upstream_conf conf;
	char port[16];
	struct upstream *u;
};

static void fixture_init(struct fixture *f, int port)
{
	char err[256];
	memset(f, 0, sizeof(*f));
	f->base = event_base_new();
	assert_non_null(f->base);
	f->opts.base = f->base;
	f->opts.max_header_bytes = 8192;
	f->opts.idle_ms = 10000;
	snprintf(f->port, sizeof(f->port), "%d", port);
	f->conf.name = (char *)"t";
	f->conf.url_safe = (char *)"http://127.0.0.1/mcp";
	f->conf.host = (char *)"127.0.0.1";
	f->conf.port = f->port;
	f->conf.connect_timeout_ms = 5000;
	f->conf.request_timeout_ms = 5000;
	f->u = upstream_new(&f->opts, &f->conf, err, sizeof(err));
	assert_non_null(f->u);
}

static void fixture_fini(struct fixture *f)
{
	upstream_free(f->u);
	event_base_free(f->base);
}

/* One request: head apart, body in an evbuffer of the given pieces (each
 * its own chain). Returns the request buffer handed back at the end. */
static struct evbuffer *run_split(struct fixture *f, const char *head, const char *const *pieces,
                                  size_t npieces)
{
	struct client c = {.base = f->base};
	struct evbuffer *body = evbuffer_new();
	for (size_t i = 0; i < npieces; i++) {
		struct evbuffer *one = evbuffer_new();
		evbuffer_add(one, pieces[i], strlen(pieces[i]));
		evbuffer_add_buffer(body, one); /* a chain of its own */
		evbuffer_free(one);
	}
	struct upstream_req *r =
	        upstream_req_new_split(f->u, head, strlen(head), body, 0, &cbs, &c);
	assert_non_null(r);
	assert_string_equal(upstream_req_state_str(r), "waiting");
	event_base_dispatch(f->base);
	char fl[64];
	assert_string_equal(upstream_req_state_str(r), "done");
	assert_string_equal(upstream_req_flags_str(r, fl, sizeof(fl)),
	                    strncmp(head, "GET ", 4) == 0 ? "replayable" : "");
	assert_true(c.done);
	assert_false(c.failed);
	assert_int_equal(c.status, 200);
	assert_int_equal(c.body_len, 2);
	assert_memory_equal(c.body, "ok", 2);
	return upstream_req_release(r);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_split_request_same_bytes(void **state)
{
	(void)state;
	static const char head1[] = "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n";
	static const char *const body1[] = {"hello", " world"};
	static const char head2[] = "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\n";
	static const char *const body2[] = {"a", "bc", "def", "ghi"};
	struct server s = {.nreqs = 2};
	pthread_t t;
	s.want[0] = strlen(head1) + 11;
	s.want[1] = strlen(head2) + 9;
	server_start(&s, &t);

	struct fixture f;
	fixture_init(&f, s.port);
	/* A fresh connection: queued until connected. */
	struct evbuffer *kept = run_split(&f, head1, body1, 2);
	/* The body stays intact (for a retry) until handed back. */
	assert_int_equal(evbuffer_get_length(kept), 11);
	assert_memory_equal(evbuffer_pullup(kept, -1), "hello world", 11);
	evbuffer_free(kept);
	assert_int_equal(upstream_idle_count(f.u), 1);
	/* The pooled connection: head and body chains in one sendmsg. */
	kept = run_split(&f, head2, body2, 4);
	evbuffer_free(kept);
	pthread_join(t, NULL);
	close(s.lfd);
	fixture_fini(&f);

	char want[512];
	snprintf(want, sizeof(want), "%shello world", head1);
	assert_memory_equal(s.got[0], want, s.want[0]);
	snprintf(want, sizeof(want), "%sabcdefghi", head2);
	assert_memory_equal(s.got[1], want, s.want[1]);
}

/* The request timeout counts from each request's start, on a reused
 * request whose timer was added for the one before: the second request,
 * started 100 ms after the first, times out 300 ms after its own start,
 * not at the first one's deadline. */
static void test_timeout_per_request_on_reuse(void **state)
{
	(void)state;
	static const char head[] = "GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n";
	struct server s = {.nreqs = 2, .nanswers = 1};
	pthread_t t;
	s.want[0] = s.want[1] = strlen(head);
	server_start(&s, &t);

	struct fixture f;
	fixture_init(&f, s.port);
	f.conf.request_timeout_ms = 300;
	evbuffer_free(run_split(&f, head, NULL, 0));
	th_run_for(f.base, 100);

	struct client c = {.base = f.base};
	uint64_t t0 = clock_mono_us();
	struct upstream_req *r =
	        upstream_req_new_split(f.u, head, strlen(head), evbuffer_new(), 0, &cbs, &c);
	assert_non_null(r);
	event_base_dispatch(f.base);
	uint64_t took = clock_mono_us() - t0;
	assert_true(c.failed);
	assert_int_equal(c.err, UPSTREAM_ERR_TIMEOUT);
	assert_string_equal(upstream_req_state_str(r), "failed");
	assert_true(took >= 290 * 1000);
	assert_true(took < 3000 * 1000);
	upstream_req_free(r);
	/* The failed connection is closed from the loop (deferred free): the
	 * server then sees EOF. */
	th_run_for(f.base, 100);
	pthread_join(t, NULL);
	close(s.lfd);
	fixture_fini(&f);
}

/* The options are read where they apply: once the owner drains (the flag
 * upstream_opts.draining points to) a finished connection is closed, not
 * pooled; a reload's options (upstream_set_conf) replace the first ones,
 * so an idle timeout of 0 stops the pooling too. */
static void test_opts_draining_and_reload_stop_pooling(void **state)
{
	(void)state;
	static const char head[] = "GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n";
	for (int step = 0; step < 2; step++) {
		struct server s = {.nreqs = 1};
		pthread_t t;
		s.want[0] = strlen(head);
		server_start(&s, &t);
		struct fixture f;
		fixture_init(&f, s.port);
		int draining = 0;
		f.opts.draining = &draining;
		upstream_free(f.u);
		char err[256];
		f.u = upstream_new(&f.opts, &f.conf, err, sizeof(err));
		assert_non_null(f.u);
		if (step == 0) {
			draining = 1; /* after upstream_new: read through, not copied */
		} else {
			struct upstream_opts reloaded = f.opts;
			reloaded.idle_ms = 0;
			upstream_set_conf(f.u, &f.conf, &reloaded);
		}
		evbuffer_free(run_split(&f, head, NULL, 0));
		assert_int_equal(upstream_idle_count(f.u), 0);
		/* Closed, not pooled: the server sees the end (deferred free). */
		event_base_loop(f.base, EVLOOP_NONBLOCK);
		pthread_join(t, NULL);
		close(s.lfd);
		fixture_fini(&f);
	}
}

/* A pooled connection left idle for opts.idle_ms is closed (the server
 * then sees its end); used again before that, it is not (the pool's
 * timeout waits, while in use, for the next spell in the pool). */
static void test_pool_idle_timeout_closes(void **state)
{
	(void)state;
	static const char head[] = "GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n";
	struct server s = {.nreqs = 3};
	pthread_t t;
	for (int i = 0; i < 3; i++)
		s.want[i] = strlen(head);
	server_start(&s, &t);
	struct fixture f;
	fixture_init(&f, s.port);
	f.opts.idle_ms = 150;
	upstream_free(f.u);
	char err[256];
	f.u = upstream_new(&f.opts, &f.conf, err, sizeof(err));
	assert_non_null(f.u);
	evbuffer_free(run_split(&f, head, NULL, 0));
	assert_int_equal(upstream_idle_count(f.u), 1);
	th_run_for(f.base, 100);
	evbuffer_free(run_split(&f, head, NULL, 0)); /* the same connection */
	assert_int_equal(upstream_idle_count(f.u), 1);
	th_run_for(f.base, 100); /* 200 ms since the first spell began */
	assert_int_equal(upstream_idle_count(f.u), 1);
	th_run_for(f.base, 400);
	assert_int_equal(upstream_idle_count(f.u), 0);
	pthread_join(t, NULL); /* it read the close: one connection, two requests */
	close(s.lfd);
	fixture_fini(&f);
}

/* A head larger than the room for it: refused, the body freed. */
static void test_split_head_too_large(void **state)
{
	(void)state;
	struct fixture f;
	struct client c = {0};
	fixture_init(&f, 9);
	char *head = malloc(UPSTREAM_HEAD_MAX + 1);
	assert_non_null(head);
	memset(head, 'x', UPSTREAM_HEAD_MAX + 1);
	struct evbuffer *body = evbuffer_new();
	evbuffer_add(body, "x", 1);
	c.base = f.base;
	assert_null(upstream_req_new_split(f.u, head, UPSTREAM_HEAD_MAX + 1, body, 0, &cbs, &c));
	free(head);
	fixture_fini(&f);
}

/* ---- the pool: what a connection said after its response ------------------ */

enum pool_mode {
	POOL_PLAIN,     /* one response per request */
	POOL_EXTRA,     /* bytes behind the first response, in the same write */
	POOL_STALE,     /* the first response again, once the test says so */
};

/* Serves two requests of `want` bytes each: the first on the first
 * connection, the second wherever it comes (that connection again, or a
 * new one: `reused` tells). */
struct pool_server {
	int lfd, port;
	enum pool_mode mode;
	size_t want;
	int accepts;
	int reused;
	sem_t go, written;  /* POOL_STALE: write the stale bytes / written */
};

static const char ok_reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
static const char stale_reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nNO";

static int read_request(int fd, size_t want)
{
	char buf[4096];
	size_t have = 0;
	while (have < want) {
		ssize_t n = read(fd, buf, want - have < sizeof(buf) ? want - have : sizeof(buf));
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	return 0;
}

static void *pool_server_run(void *arg)
{
	struct pool_server *s = arg;
	char first[256];
	int fd2 = -1;
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	s->accepts++;
	if (read_request(fd, s->want) < 0)
		goto out;
	size_t n = sizeof(ok_reply) - 1;
	memcpy(first, ok_reply, n);
	if (s->mode == POOL_EXTRA) {
		memcpy(first + n, stale_reply, sizeof(stale_reply) - 1);
		n += sizeof(stale_reply) - 1;
	}
	if (write(fd, first, n) != (ssize_t)n)
		goto out;
	if (s->mode == POOL_STALE) {
		sem_wait(&s->go);
		if (write(fd, stale_reply, sizeof(stale_reply) - 1) < 0)
			goto out;
		sem_post(&s->written);
	}
	/* The second request: on a new connection, or on this one again (a
	 * closed first connection just leaves the poll). */
	int on = -1;
	struct pollfd p[2] = {{.fd = s->lfd, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
	while (on < 0) {
		if (poll(p, 2, 5000) <= 0)
			goto out;
		if (p[1].revents) {
			char c;
			if (recv(fd, &c, 1, MSG_PEEK) > 0) {
				s->reused = 1;
				on = fd;
				break;
			}
			p[1].fd = -1;
		}
		if (p[0].revents & POLLIN) {
			fd2 = accept(s->lfd, NULL, NULL);
			if (fd2 < 0)
				goto out;
			s->accepts++;
			on = fd2;
		}
	}
	if (read_request(on, s->want) == 0 &&
	    write(on, ok_reply, sizeof(ok_reply) - 1) != (ssize_t)sizeof(ok_reply) - 1)
		goto out;
	/* Until the client closes (or the test ends). */
	char c;
	while (read(on, &c, 1) > 0)
		;
out:
	if (fd2 >= 0)
		close(fd2);
	close(fd);
	return NULL;
}

static void pool_server_start(struct pool_server *s, pthread_t *t)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(sem_init(&s->go, 0, 0), 0);
	assert_int_equal(sem_init(&s->written, 0, 0), 0);
	assert_int_equal(pthread_create(t, NULL, pool_server_run, s), 0);
}

static const char pool_head[] = "GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n";

/* One request; the exchange is left to the caller (answered "ok"). */
static struct upstream_req *pool_request(struct fixture *f, struct client *c)
{
	memset(c, 0, sizeof(*c));
	c->base = f->base;
	struct upstream_req *r = upstream_req_new_split(f->u, pool_head, strlen(pool_head),
	                                                evbuffer_new(), 0, &cbs, c);
	assert_non_null(r);
	event_base_dispatch(f->base);
	assert_true(c->done);
	assert_false(c->failed);
	assert_int_equal(c->status, 200);
	return r;
}

/* The second request, then the server's view of where it went. */
static void pool_second(struct fixture *f, struct pool_server *s, pthread_t t)
{
	struct client c;
	struct upstream_req *r = pool_request(f, &c);
	/* Its own answer, never the stale one. */
	assert_int_equal(c.body_len, 2);
	assert_memory_equal(c.body, "ok", 2);
	upstream_req_free(r);
	upstream_free(f->u); /* closes the pooled connection: the server ends */
	f->u = NULL;
	/* (bufferevents are freed from the loop: deferred callbacks.) */
	event_base_loop(f->base, EVLOOP_NONBLOCK);
	pthread_join(t, NULL);
	close(s->lfd);
	sem_destroy(&s->go);
	sem_destroy(&s->written);
	assert_false(s->reused);
	assert_int_equal(s->accepts, 2);
	event_base_free(f->base);
}

/* Bytes behind a complete response: the connection is not pooled. */
static void test_pool_extra_bytes_not_reused(void **state)
{
	(void)state;
	struct pool_server s = {.mode = POOL_EXTRA, .want = strlen(pool_head)};
	pthread_t t;
	struct fixture f;
	struct client c;
	pool_server_start(&s, &t);
	fixture_init(&f, s.port);
	upstream_req_free(pool_request(&f, &c));
	assert_memory_equal(c.body, "ok", 2);
	assert_int_equal(upstream_idle_count(f.u), 0);
	pool_second(&f, &s, t);
}

/* A second response that arrives while the connection is idle, before the
 * loop has polled it (the next request comes in the same loop turn): the
 * connection is looked at before reuse, and closed. */
static void test_pool_stale_bytes_while_idle_not_reused(void **state)
{
	(void)state;
	struct pool_server s = {.mode = POOL_STALE, .want = strlen(pool_head)};
	pthread_t t;
	struct fixture f;
	struct client c;
	pool_server_start(&s, &t);
	fixture_init(&f, s.port);
	upstream_req_free(pool_request(&f, &c));
	assert_int_equal(upstream_idle_count(f.u), 1);
	/* The stale reply is in our socket (loopback: written is received),
	 * and the loop does not run before the next request takes the pool. */
	sem_post(&s.go);
	sem_wait(&s.written);
	pool_second(&f, &s, t);
}

/* A reply the transport found to answer another request: never reused. */
static void test_pool_distrusted_not_reused(void **state)
{
	(void)state;
	struct pool_server s = {.mode = POOL_PLAIN, .want = strlen(pool_head)};
	pthread_t t;
	struct fixture f;
	struct client c;
	pool_server_start(&s, &t);
	fixture_init(&f, s.port);
	struct upstream_req *r = pool_request(&f, &c);
	upstream_req_distrust(r);
	char fl[64];
	assert_string_equal(upstream_req_flags_str(r, fl, sizeof(fl)), "replayable|distrusted");
	/* Cut short to what fits. */
	assert_string_equal(upstream_req_flags_str(r, fl, 12), "replayable");
	upstream_req_free(r);
	assert_int_equal(upstream_idle_count(f.u), 0);
	pool_second(&f, &s, t);
}

/* The control case: a connection that said nothing more is reused. */
static void test_pool_quiet_connection_reused(void **state)
{
	(void)state;
	struct pool_server s = {.mode = POOL_PLAIN, .want = strlen(pool_head)};
	pthread_t t;
	struct fixture f;
	struct client c;
	pool_server_start(&s, &t);
	fixture_init(&f, s.port);
	upstream_req_free(pool_request(&f, &c));
	assert_int_equal(upstream_idle_count(f.u), 1);
	upstream_req_free(pool_request(&f, &c));
	assert_memory_equal(c.body, "ok", 2);
	upstream_free(f.u);
	event_base_loop(f.base, EVLOOP_NONBLOCK);
	pthread_join(t, NULL);
	close(s.lfd);
	sem_destroy(&s.go);
	sem_destroy(&s.written);
	assert_true(s.reused);
	assert_int_equal(s.accepts, 1);
	event_base_free(f.base);
}

/* A stream (upstream_req_stream once the head came, as the SSE transports
 * call it) lets go of what only a retry could need: a body-less request's
 * empty buffer is freed, not handed back (release gives NULL), and its
 * head's room goes back to the upstream. The next requests on the pooled
 * connection still go out byte for byte, a POST's body is handed back
 * intact, and each request's head is its own (no bytes of the first). */
struct streamer {
	struct client c;
	struct upstream_req *r;
};

static int on_head_stream(void *arg, const struct http_msg *resp)
{
	struct streamer *s = arg;
	upstream_req_stream(s->r);
	return on_head(&s->c, resp);
}

static const struct upstream_req_cbs stream_cbs = {on_head_stream, on_body, on_done, on_error};

static struct evbuffer *run_stream(struct fixture *f, const char *head, const char *body)
{
	struct streamer s = {.c = {.base = f->base}};
	struct evbuffer *b = evbuffer_new();
	evbuffer_add(b, body, strlen(body));
	s.r = upstream_req_new_split(f->u, head, strlen(head), b, 0, &stream_cbs, &s);
	assert_non_null(s.r);
	event_base_dispatch(f->base);
	assert_true(s.c.done);
	assert_int_equal(s.c.status, 200);
	char fl[64];
	assert_non_null(strstr(upstream_req_flags_str(s.r, fl, sizeof(fl)), "streaming"));
	return upstream_req_release(s.r);
}

static void test_stream_lets_go_of_retry_copies(void **state)
{
	(void)state;
	static const char get[] = "GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n";
	static const char post[] = "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n";
	static const char get2[] = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";
	struct server s = {.nreqs = 3};
	pthread_t t;
	s.want[0] = strlen(get);
	s.want[1] = strlen(post) + 5;
	s.want[2] = strlen(get2);
	server_start(&s, &t);

	struct fixture f;
	fixture_init(&f, s.port);
	assert_null(run_stream(&f, get, ""));
	struct evbuffer *kept = run_stream(&f, post, "hello");
	assert_non_null(kept);
	assert_int_equal(evbuffer_get_length(kept), 5);
	evbuffer_free(kept);
	evbuffer_free(run_split(&f, get2, NULL, 0));
	pthread_join(t, NULL);
	close(s.lfd);
	fixture_fini(&f);

	assert_memory_equal(s.got[0], get, s.want[0]);
	char want[256];
	snprintf(want, sizeof(want), "%shello", post);
	assert_memory_equal(s.got[1], want, s.want[1]);
	assert_memory_equal(s.got[2], get2, s.want[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_request_same_bytes),
		cmocka_unit_test(test_stream_lets_go_of_retry_copies),
		cmocka_unit_test(test_timeout_per_request_on_reuse),
		cmocka_unit_test(test_opts_draining_and_reload_stop_pooling),
		cmocka_unit_test(test_pool_idle_timeout_closes),
		cmocka_unit_test(test_split_head_too_large),
		cmocka_unit_test(test_pool_extra_bytes_not_reused),
		cmocka_unit_test(test_pool_stale_bytes_while_idle_not_reused),
		cmocka_unit_test(test_pool_distrusted_not_reused),
		cmocka_unit_test(test_pool_quiet_connection_reused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

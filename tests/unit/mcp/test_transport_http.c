/* Unit tests for proxy/mcp/transport_http.c, the Streamable HTTP adapter
 *
 * Why this file is long (over 800 lines): one rig (client socketpair, scripted
 * upstream, a worker's px_ctx) serves every test, and each behaviour of the
 * adapter, the unchanged-listing fast path included, is one test of its own.
 *
 * (transport_http_ops), driven end to end on one event loop: the test is
 * the client (raw bytes into conn.c over a socketpair, as
 * tests/unit/net/test_conn.c does) and the upstream (a listening socket on
 * 127.0.0.1:0 that answers each complete request with a scripted reply from
 * the same loop). Between them runs the real thing: conn, the adapter, the
 * upstream pool, with a configuration built by config_from_argv and a
 * px_ctx holding what a worker holds (proxy/main.c's ctx_setup and
 * worker_setup) minus the hooks, the admin endpoint and the listener.
 *
 * Each test asserts on the bytes the client receives and on the bytes
 * (or the absence of any) the upstream received:
 *   - a JSON reply goes out with its Content-Length and its bytes as they
 *     came;
 *   - an SSE reply is re-framed event by event (canonical field order, LF
 *     line ends), each event flushed before the next one is complete;
 *   - a reply carrying another request's id is never delivered: 502 with
 *     -32000 for the request's own id;
 *   - a POST of notifications alone gets 202, whatever the upstream said;
 *   - an upstream that refuses the connection: 502 with -32000;
 *   - PUT at the MCP endpoint: 405 with Allow, nothing sent upstream;
 *   - an upstream 404 to a request with a session id: later requests with
 *     that id get 404 from the proxy (another session still goes through);
 *   - a request of the 2026-07-28 era gets -31502 for the same 502.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/base/limits.h"
#include "proxy/base/log.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/inspect.h"
#include "proxy/mcp/sessid.h"
#include "proxy/mcp/sesslimit.h"
#include "proxy/net/conn.h"
#include "proxy/net/peers.h"
#include "proxy/net/transport.h"
#include "proxy/net/upstream.h"
#include "tests/unit/helpers.h"

/* ---- the upstream: scripted replies from the loop ---------------------------- */

#define UP_MAX_CONNS 4
#define UP_MAX_REQS  4
#define UP_REQ_MAX   4096

/* The reply to one request: `first` at once; `second` (if any) when the
 * test says so (up_send_second), so that it can look at what the client
 * got in between; then, with `close`, the connection ends (a reply
 * without a length is delimited by the close). */
struct up_reply {
	const char *first, *second;
	int close;
};

struct upsrv;

struct up_conn {
	struct upsrv *s;
	int fd;                  /* -1 once closed */
	struct event *rd;        /* owned */
	const struct up_reply *pending;  /* the reply whose second part waits */
	char buf[UP_REQ_MAX];
	size_t len;
};

struct upsrv {
	int lfd;
	int port;
	struct event *accept_ev;           /* owned */
	struct up_conn conns[UP_MAX_CONNS];
	size_t accepts;
	struct up_reply script[UP_MAX_REQS];  /* reply i answers request i */
	size_t nreqs;                         /* complete requests received */
	char reqs[UP_MAX_REQS][UP_REQ_MAX];   /* each one's bytes, NUL-ended */
};

static void up_conn_close(struct up_conn *uc)
{
	if (uc->fd < 0)
		return;
	event_free(uc->rd);
	uc->rd = NULL;
	close(uc->fd);
	uc->fd = -1;
}

static void up_write(struct up_conn *uc, const char *s)
{
	size_t n = strlen(s);
	/* Loopback, a few hundred bytes: the socket buffer takes it whole. */
	assert_int_equal(write(uc->fd, s, n), (ssize_t)n);
}

/* The length of the complete request at the start of uc->buf, or 0. */
static size_t up_request_len(const struct up_conn *uc)
{
	const char *end = memmem(uc->buf, uc->len, "\r\n\r\n", 4);
	if (!end)
		return 0;
	size_t head = (size_t)(end - uc->buf) + 4, body = 0;
	for (const char *p = uc->buf; p && p < end; p = memchr(p, '\n', (size_t)(end - p))) {
		p += *p == '\n';
		if (strncasecmp(p, "Content-Length:", 15) == 0)
			body = strtoul(p + 15, NULL, 10);
	}
	return uc->len >= head + body ? head + body : 0;
}

static void up_answer(struct up_conn *uc)
{
	struct upsrv *s = uc->s;
	size_t n;
	while (uc->fd >= 0 && (n = up_request_len(uc)) > 0) {
		assert_true(s->nreqs < UP_MAX_REQS);
		const struct up_reply *r = &s->script[s->nreqs];
		memcpy(s->reqs[s->nreqs], uc->buf, n);
		s->reqs[s->nreqs][n] = '\0';
		s->nreqs++;
		memmove(uc->buf, uc->buf + n, uc->len - n);
		uc->len -= n;
		assert_non_null(r->first); /* a request the script did not expect */
		up_write(uc, r->first);
		if (r->second)
			uc->pending = r;
		else if (r->close)
			up_conn_close(uc);
	}
}

/* Sends the second part of the reply waiting on the i-th connection. */
static void up_send_second(struct upsrv *s, size_t i)
{
	struct up_conn *uc = &s->conns[i];
	assert_true(uc->fd >= 0);
	assert_non_null(uc->pending);
	const struct up_reply *r = uc->pending;
	uc->pending = NULL;
	up_write(uc, r->second);
	if (r->close)
		up_conn_close(uc);
}

static void up_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct up_conn *uc = arg;
	(void)what;
	for (;;) {
		ssize_t n = read(fd, uc->buf + uc->len, sizeof(uc->buf) - 1 - uc->len);
		if (n > 0) {
			uc->len += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			/* The proxy closed it (a distrusted or finished connection). */
			up_conn_close(uc);
			return;
		}
		break;
	}
	up_answer(uc);
}

static void up_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct upsrv *s = arg;
	(void)what;
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		return;
	assert_true(s->accepts < UP_MAX_CONNS);
	struct up_conn *uc = &s->conns[s->accepts++];
	uc->s = s;
	uc->fd = fd;
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	uc->rd = event_new(event_get_base(s->accept_ev), fd, EV_READ | EV_PERSIST, up_read_cb, uc);
	assert_non_null(uc->rd);
	event_add(uc->rd, NULL);
}

/* A socket bound to 127.0.0.1:0; its port in *port. */
static int loopback_socket(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void upsrv_start(struct upsrv *s, struct event_base *base)
{
	s->lfd = loopback_socket(&s->port);
	assert_int_equal(listen(s->lfd, 8), 0);
	assert_int_equal(fcntl(s->lfd, F_SETFL, O_NONBLOCK), 0);
	for (size_t i = 0; i < UP_MAX_CONNS; i++)
		s->conns[i].fd = -1;
	s->accept_ev = event_new(base, s->lfd, EV_READ | EV_PERSIST, up_accept_cb, s);
	assert_non_null(s->accept_ev);
	event_add(s->accept_ev, NULL);
}

static void upsrv_stop(struct upsrv *s)
{
	for (size_t i = 0; i < UP_MAX_CONNS; i++)
		up_conn_close(&s->conns[i]);
	if (s->accept_ev) {
		event_free(s->accept_ev);
		close(s->lfd);
	}
}

/* ---- the rig: a worker's px_ctx, one client connection ------------------------ */

struct rig {
	struct event_base *base;
	struct px_config *cfg;       /* owned */
	struct px_proc proc;
	struct px_ctx ctx;
	struct upstream *up;         /* owned: ctx.ups[0] */
	struct upsrv srv;
	int cfd;                     /* the client's end */
	struct event *crd;           /* reads cfd into got */
	char got[32768];
	size_t len;
	int eof;
};

static void closed_cb(struct px_ctx *ctx, int moved)
{
	(void)ctx;
	(void)moved;
}

static const struct conn_owner owner = {.closed = closed_cb};

static void client_read(evutil_socket_t fd, short what, void *arg)
{
	struct rig *r = arg;
	(void)what;
	for (;;) {
		ssize_t n = read(fd, r->got + r->len, sizeof(r->got) - 1 - r->len);
		if (n > 0) {
			r->len += (size_t)n;
			r->got[r->len] = '\0';
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			r->eof = 1;
			event_del(r->crd);
		}
		return;
	}
}

/* The proxy in front of the test's upstream (serve: listening), or of a
 * port where nothing listens (unreachable), and one client connection. */
static void rig_start(struct rig *r, int serve)
{
	char url[64], err[2048];
	int port;
	memset(r, 0, sizeof(*r));
	r->base = event_base_new();
	assert_non_null(r->base);
	assert_int_equal(event_base_priority_init(r->base, PX_PRIO_COUNT), 0);
	if (serve) {
		upsrv_start(&r->srv, r->base);
		port = r->srv.port;
	} else {
		/* Bound, never listening, then closed: connect is refused. */
		close(loopback_socket(&port));
		for (size_t i = 0; i < UP_MAX_CONNS; i++)
			r->srv.conns[i].fd = -1;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
	char *argv[] = {(char *)"mcpwarden", (char *)"--upstream", url,
	                (char *)"--upstream-transport", (char *)"streamable_http", NULL};
	enum config_action action;
	r->cfg = config_from_argv(5, argv, &action, err, sizeof(err));
	if (!r->cfg)
		fail_msg("config_from_argv: %s", err);
	assert_int_equal(action, CONFIG_RUN);

	/* What ctx_setup and worker_setup give a worker that the adapter and
	 * conn read: no hooks (an empty chain forwards everything), no
	 * translated sessions (nothing claims a request for the legacy
	 * transport), one worker (no handoff). */
	r->ctx.base = r->base;
	r->ctx.cfg = r->cfg;
	r->ctx.proc = &r->proc;
	r->proc.nworkers = 1;
	r->ctx.insp = inspect_new();
	r->proc.sessions = sessid_new(LIMIT_SESSION_IDS);
	r->proc.sesslimit = sesslimit_new(LIMIT_SESSLIMIT_ENTRIES);
	r->proc.peers = peers_new();
	assert_non_null(r->ctx.insp);
	assert_non_null(r->proc.sessions);
	assert_non_null(r->proc.sesslimit);
	assert_non_null(r->proc.peers);
	struct upstream_opts uo = {
		.base = r->base,
		.max_header_bytes = r->cfg->limits.max_header_bytes,
		.idle_ms = r->cfg->timeouts.upstream_idle_ms,
		.draining = &r->ctx.draining,
	};
	r->up = upstream_new(&uo, &r->cfg->ups[0], err, sizeof(err));
	if (!r->up)
		fail_msg("upstream_new: %s", err);
	r->ctx.ups = &r->up;
	r->ctx.nups = 1;

	int sv[2];
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(40000),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	r->cfd = sv[0];
	r->crd = event_new(r->base, r->cfd, EV_READ | EV_PERSIST, client_read, r);
	assert_non_null(r->crd);
	event_add(r->crd, NULL);
	assert_non_null(conn_new(&r->ctx, sv[1], (struct sockaddr *)&sa, sizeof(sa),
	                         &transport_http_ops, &owner, NULL));
}

static void rig_stop(struct rig *r)
{
	while (r->ctx.conns)
		conn_destroy(r->ctx.conns);
	upstream_free(r->up);
	upsrv_stop(&r->srv);
	/* Bufferevents with deferred callbacks finish freeing from the loop. */
	for (int i = 0; i < 4; i++)
		event_base_loop(r->base, EVLOOP_NONBLOCK);
	event_free(r->crd);
	close(r->cfd);
	sessid_free(r->proc.sessions);
	sesslimit_free(r->proc.sesslimit);
	peers_free(r->proc.peers);
	inspect_free(r->ctx.insp);
	config_free(r->cfg);
	event_base_free(r->base);
}

/* Sends a request: method, headers ("Name: v\r\n" lines, may be ""), and a
 * body written with ' for " (NULL: none). */
static void client_send(struct rig *r, const char *method, const char *headers,
                        const char *body)
{
	char req[4096];
	char *b = body ? th_quotes(body) : NULL;
	size_t blen = b ? strlen(b) : 0;
	int n = snprintf(req, sizeof(req),
	                 "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
	                 "Accept: application/json, text/event-stream\r\n%s%s"
	                 "Content-Length: %zu\r\n\r\n%s",
	                 method, headers, b ? "Content-Type: application/json\r\n" : "", blen,
	                 b ? b : "");
	free(b);
	assert_true(n > 0 && (size_t)n < sizeof(req));
	assert_int_equal(write(r->cfd, req, (size_t)n), n);
}

/* ---- reading replies ------------------------------------------------------------ */

/* One reply as the client got it: the head, and the body unframed. */
struct reply {
	int status;
	char head[2048];
	char body[16384];
	size_t body_len;
	int chunked;
};

/* Parses the reply at p (n bytes). Returns the bytes it takes when whole,
 * 0 when more is to come (at EOF: whatever came). */
static size_t reply_parse(const char *p, size_t n, int eof, struct reply *out)
{
	memset(out, 0, sizeof(*out));
	const char *end = memmem(p, n, "\r\n\r\n", 4);
	if (!end)
		return 0;
	size_t hl = (size_t)(end - p) + 4;
	assert_true(hl < sizeof(out->head));
	memcpy(out->head, p, hl);
	out->status = atoi(out->head + 9);
	out->chunked = strcasestr(out->head, "\r\nTransfer-Encoding: chunked\r\n") != NULL;
	const char *cl = strcasestr(out->head, "\r\nContent-Length: ");
	if (!out->chunked) {
		size_t want = cl ? strtoul(cl + 18, NULL, 10) : n - hl;
		if (n - hl < want || want >= sizeof(out->body))
			return 0;
		memcpy(out->body, p + hl, want);
		out->body_len = want;
		return cl || eof ? hl + want : 0;
	}
	size_t at = hl;
	for (;;) {
		const char *eol = memmem(p + at, n - at, "\r\n", 2);
		if (!eol)
			return 0;
		size_t size = strtoul(p + at, NULL, 16);
		at = (size_t)(eol - p) + 2;
		if (n - at < size + 2)
			return 0;
		if (size == 0)
			return at + 2;
		assert_true(out->body_len + size < sizeof(out->body));
		memcpy(out->body + out->body_len, p + at, size);
		out->body_len += size;
		at += size + 2;
	}
}

/* How many whole replies the client holds. */
static size_t whole_replies(const struct rig *r)
{
	struct reply one;
	size_t n = 0, at = 0, k;
	while (at < r->len && (k = reply_parse(r->got + at, r->len - at, r->eof, &one)) > 0) {
		n++;
		at += k;
	}
	return n;
}

/* The i-th whole reply (failing the test when there is none). */
static void reply_at(const struct rig *r, size_t i, struct reply *out)
{
	size_t at = 0;
	for (size_t k = 0;; k++) {
		size_t taken = reply_parse(r->got + at, r->len - at, r->eof, out);
		if (!taken)
			fail_msg("reply %zu not received; the client got:\n%s", i, r->got);
		if (k == i)
			return;
		at += taken;
	}
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

typedef int until_fn(const struct rig *r, const void *arg);

/* Runs the loop until done(r, arg), or the client's EOF, or ms passed. */
static void run_until(struct rig *r, until_fn *done, const void *arg, unsigned ms)
{
	struct timeval tick = {0, 5 * 1000};
	struct event *t = event_new(r->base, -1, EV_PERSIST, tick_cb, NULL);
	event_add(t, &tick);
	for (unsigned waited = 0; waited < ms && !r->eof && !done(r, arg); waited += 5)
		event_base_loop(r->base, EVLOOP_ONCE);
	event_free(t);
}

static int has_replies(const struct rig *r, const void *arg)
{
	return whole_replies(r) >= *(const size_t *)arg;
}

/* Runs until the client holds n whole replies (at most 3 s). */
static void run_replies(struct rig *r, size_t n)
{
	run_until(r, has_replies, &n, 3000);
}

static int has_text(const struct rig *r, const void *arg)
{
	return strstr(r->got, arg) != NULL;
}

/* The body of a reply as JSON (owned). */
static json_t *reply_json(const struct reply *rp)
{
	return th_json_text(rp->body, JSON_DECODE_ANY);
}

/* Asserts a JSON-RPC error for request id with the code. */
static void assert_error_for(const struct reply *rp, json_int_t id, json_int_t code)
{
	json_t *j = reply_json(rp);
	assert_int_equal(json_integer_value(json_object_get(j, "id")), id);
	json_t *e = json_object_get(j, "error");
	assert_non_null(e);
	assert_int_equal(json_integer_value(json_object_get(e, "code")), code);
	assert_null(json_object_get(j, "result"));
	json_decref(j);
}

/* ---- tests ------------------------------------------------------------------------ */

static const char list_req[] = "{'jsonrpc':'2.0','id':1,'method':'tools/list'}";

static void test_json_reply_forwarded_with_content_length(void **state)
{
	(void)state;
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}";
	char up_reply[256];
	struct rig r;
	rig_start(&r, 1);
	snprintf(up_reply, sizeof(up_reply),
	         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-json\r\n"
	         "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
	r.srv.script[0].first = up_reply;
	client_send(&r, "POST", "", list_req);
	run_replies(&r, 1);

	struct reply rp;
	reply_at(&r, 0, &rp);
	assert_int_equal(rp.status, 200);
	assert_false(rp.chunked);
	char cl[64];
	snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", strlen(body));
	assert_non_null(strstr(rp.head, cl));
	assert_non_null(strstr(rp.head, "\r\nContent-Type: application/json\r\n"));
	assert_non_null(strstr(rp.head, "\r\nMcp-Session-Id: s-json\r\n"));
	/* The upstream's bytes, as they came. */
	assert_int_equal(rp.body_len, strlen(body));
	assert_memory_equal(rp.body, body, strlen(body));
	assert_false(r.eof);

	/* Upstream: the configured target and Host, the client's body as it
	 * was sent, with its length. */
	assert_int_equal(r.srv.nreqs, 1);
	const char *q = r.srv.reqs[0];
	char host[64];
	snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%d\r\n", r.srv.port);
	assert_true(strncmp(q, "POST /mcp HTTP/1.1\r\n", 20) == 0);
	assert_non_null(strstr(q, host));
	assert_null(strstr(q, "127.0.0.1:8080"));
	char *want = th_quotes(list_req);
	snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", strlen(want));
	assert_non_null(strstr(q, cl));
	assert_string_equal(strstr(q, "\r\n\r\n") + 4, want);
	free(want);
	rig_stop(&r);
}

static void test_sse_reply_reframed_event_by_event(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, 1);
	/* CRLF line ends, fields out of the writer's order, a keep-alive
	 * comment; the second event arrives in two parts. */
	r.srv.script[0] = (struct up_reply){
		.first = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
		         "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
		         "\"params\":{\"progress\":1}}\r\nevent: message\r\n\r\n"
		         ": ping\r\n\r\n"
		         "data: {\"jsonrpc\":\"2.0\",\"id\":1,",
		.second = "\"result\":{\"tools\":[]}}\r\nid: 7\r\n\r\n",
		.close = 1,
	};
	static const char ev1[] = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
	                          "\"notifications/progress\",\"params\":{\"progress\":1}}\n\n";
	static const char ping[] = ": ping\n\n";
	static const char ev2[] = "id: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n\n";
	client_send(&r, "POST", "", list_req);

	/* The first event (and the comment) reach the client while the
	 * second is still incomplete upstream. */
	run_until(&r, has_text, ": ping\n", 3000);
	assert_int_equal(r.srv.nreqs, 1);
	assert_non_null(strstr(r.got, "HTTP/1.1 200 "));
	assert_non_null(strstr(r.got, ev1));
	assert_null(strstr(r.got, "\"id\":1"));

	up_send_second(&r.srv, 0);
	run_replies(&r, 1);
	struct reply rp;
	reply_at(&r, 0, &rp);
	assert_int_equal(rp.status, 200);
	assert_true(rp.chunked);
	assert_non_null(strstr(rp.head, "\r\nContent-Type: text/event-stream\r\n"));
	assert_non_null(strstr(rp.head, "\r\nX-Accel-Buffering: no\r\n"));
	/* The upstream's Connection: close is its own, not the client's. */
	assert_null(strstr(rp.head, "Connection: close"));
	char want[1024];
	snprintf(want, sizeof(want), "%s%s%s", ev1, ping, ev2);
	assert_int_equal(rp.body_len, strlen(want));
	assert_memory_equal(rp.body, want, strlen(want));
	assert_false(r.eof);
	rig_stop(&r);
}

static void test_reply_with_another_id_is_502(void **state)
{
	(void)state;
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"secret\":\"other\"}}";
	char up_reply[256];
	struct rig r;
	rig_start(&r, 1);
	snprintf(up_reply, sizeof(up_reply),
	         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	         strlen(body), body);
	r.srv.script[0].first = up_reply;
	client_send(&r, "POST", "", list_req);
	run_replies(&r, 1);

	struct reply rp;
	reply_at(&r, 0, &rp);
	assert_int_equal(rp.status, 502);
	assert_error_for(&rp, 1, -32000);
	/* None of the other request's answer reaches this client. */
	assert_null(strstr(r.got, "secret"));
	assert_int_equal(r.srv.nreqs, 1);
	/* The upstream connection is out of step: closed, never pooled. */
	assert_int_equal(upstream_idle_count(r.up), 0);
	rig_stop(&r);
}

static void test_notification_only_post_is_202(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, 1);
	/* An upstream that answers 200 {} where the spec says 202. */
	r.srv.script[0].first =
	        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
	client_send(&r, "POST", "", "{'jsonrpc':'2.0','method':'notifications/initialized'}");
	run_replies(&r, 1);

	struct reply rp;
	reply_at(&r, 0, &rp);
	assert_int_equal(rp.status, 202);
	assert_int_equal(rp.body_len, 0);
	assert_null(strstr(r.got, "{}"));
	/* The notification did go upstream. */
	assert_int_equal(r.srv.nreqs, 1);
	assert_non_null(strstr(r.srv.reqs[0], "\"method\":\"notifications/initialized\""));
	rig_stop(&r);
}

static void test_upstream_unreachable_is_502(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, 0);
	client_send(&r, "POST", "", list_req);
	run_replies(&r, 1);

	struct reply rp;
	reply_at(&r, 0, &rp);
	assert_int_equal(rp.status, 502);
	assert_non_null(strstr(rp.head, "\r\nContent-Type: application/json\r\n"));
	assert_error_for(&rp, 1, -32000);
	json_t *j = reply_json(&rp);
	json_t *data = json_object_get(json_object_get(j, "error"), "data");
	assert_string_equal(json_string_value(json_object_get(data, "reason")), "connection refused");
	assert_string_equal(json_string_value(json_object_get(data, "upstream")), r.cfg->ups[0].name);
	json_decref(j);
	rig_stop(&r);
}

static void test_put_is_405_with_allow(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, 1);
	client_send(&r, "PUT", "", list_req);
	run_replies(&r, 1);

	struct reply rp;
	reply_at(&r, 0, &rp);
	assert_int_equal(rp.status, 405);
	assert_non_null(strstr(rp.head, "\r\nAllow: GET, HEAD, POST, DELETE, OPTIONS\r\n"));
	json_t *j = reply_json(&rp);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "error"), "code")),
	                 -32600);
	json_decref(j);
	/* Give a stray upstream request time to show, then: none came. */
	th_run_for(r.base, 50);
	assert_int_equal(r.srv.accepts, 0);
	assert_int_equal(r.srv.nreqs, 0);
	rig_stop(&r);
}

static void test_upstream_404_ends_the_session(void **state)
{
	(void)state;
	static const char ok[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}";
	char up_ok[256];
	struct rig r;
	rig_start(&r, 1);
	snprintf(up_ok, sizeof(up_ok),
	         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	         strlen(ok), ok);
	r.srv.script[0].first = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
	                        "Content-Length: 9\r\n\r\nnot found";
	r.srv.script[1].first = up_ok;

	/* The upstream says the session is gone: its 404 goes through. */
	client_send(&r, "POST", "Mcp-Session-Id: sess-1\r\n", list_req);
	run_replies(&r, 1);
	struct reply rp;
	reply_at(&r, 0, &rp);
	assert_int_equal(rp.status, 404);
	assert_string_equal(rp.body, "not found");
	assert_int_equal(r.srv.nreqs, 1);
	assert_non_null(strstr(r.srv.reqs[0], "\r\nMcp-Session-Id: sess-1\r\n"));

	/* The same session again: 404 from the proxy, nothing upstream. */
	client_send(&r, "POST", "Mcp-Session-Id: sess-1\r\n",
	            "{'jsonrpc':'2.0','id':2,'method':'tools/list'}");
	run_replies(&r, 2);
	reply_at(&r, 1, &rp);
	assert_int_equal(rp.status, 404);
	assert_error_for(&rp, 2, -32001);
	assert_int_equal(r.srv.nreqs, 1);

	/* Another session is not affected. */
	client_send(&r, "POST", "Mcp-Session-Id: sess-2\r\n",
	            "{'jsonrpc':'2.0','id':3,'method':'tools/list'}");
	run_replies(&r, 3);
	reply_at(&r, 2, &rp);
	assert_int_equal(rp.status, 200);
	assert_string_equal(rp.body, ok);
	assert_int_equal(r.srv.nreqs, 2);
	assert_non_null(strstr(r.srv.reqs[1], "\r\nMcp-Session-Id: sess-2\r\n"));
	rig_stop(&r);
}

static void test_2026_era_error_code(void **state)
{
	(void)state;
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}";
	char up_reply[256];
	struct rig r;
	rig_start(&r, 1);
	snprintf(up_reply, sizeof(up_reply),
	         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	         strlen(body), body);
	r.srv.script[0].first = up_reply;
	/* The mirrored headers a 2026-07-28 request carries (they pass the
	 * check, so the request goes upstream). */
	client_send(&r, "POST", "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n",
	            "{'jsonrpc':'2.0','id':5,'method':'tools/list'}");
	run_replies(&r, 1);

	struct reply rp;
	reply_at(&r, 0, &rp);
	assert_int_equal(rp.status, 502);
	/* The era's code for a 502 of the proxy's own, not -32000. */
	assert_error_for(&rp, 5, -31502);
	assert_int_equal(r.srv.nreqs, 1);
	assert_non_null(strstr(r.srv.reqs[0], "\r\nMCP-Protocol-Version: 2026-07-28\r\n"));
	rig_stop(&r);
}

/* ---- unchanged listings (inspect_listing_fast) ----------------------------- */

/* A hook that kept one listing's result: a reply with those bytes may pass
 * unparsed; on_message counts the replies it parsed. */
struct kept_hook {
	const char *kept;
	int parsed, passed;
};

static enum inspect_verdict kept_on_message(void *arg, struct inspect_msg *m)
{
	struct kept_hook *h = arg;
	if (m->dir == INSPECT_FROM_SERVER)
		h->parsed++;
	return INSPECT_FORWARD;
}

static int kept_may(void *arg, const struct inspect_listing *l)
{
	const struct kept_hook *h = arg;
	return l->len == strlen(h->kept) && memcmp(l->raw, h->kept, l->len) == 0;
}

static void kept_passed(void *arg, const struct inspect_listing *l)
{
	(void)l;
	((struct kept_hook *)arg)->passed++;
}

/* A listing result of about 9 KB (over the fast path's floor). */
static char *big_result(char last)
{
	size_t n = 9000;
	char *s = malloc(n + 128);
	assert_non_null(s);
	int k = snprintf(s, 64, "{\"tools\":[{\"name\":\"t\",\"description\":\"a\\\"b ");
	memset(s + k, 'd', n);
	snprintf(s + k + n, 64, "%c\",\"inputSchema\":{\"type\":\"object\"}}]}", last);
	return s;
}

/* The client's reply to one tools/list answered with body. */
static void fast_exchange(struct kept_hook *h, const char *body, struct reply *rp)
{
	size_t cap = strlen(body) + 256;
	char *up_reply = malloc(cap);
	assert_non_null(up_reply);
	struct rig r;
	rig_start(&r, 1);
	int slot = inspect_add(r.ctx.insp, "kept", kept_on_message, NULL, h);
	inspect_set_listing_fast(r.ctx.insp, slot, kept_may, kept_passed);
	snprintf(up_reply, cap,
	         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	         strlen(body), body);
	r.srv.script[0].first = up_reply;
	client_send(&r, "POST", "", list_req);
	run_replies(&r, 1);
	reply_at(&r, 0, rp);
	rig_stop(&r);
	free(up_reply);
}

static void test_unchanged_listing_passes_unparsed(void **state)
{
	(void)state;
	char *kept = big_result('x');
	struct kept_hook h = {.kept = kept};
	char *body = malloc(strlen(kept) + 64);
	assert_non_null(body);
	struct reply *rp = malloc(sizeof(*rp));
	assert_non_null(rp);

	/* The same bytes, blanks around the members: forwarded as they came. */
	sprintf(body, "{ \"jsonrpc\":\"2.0\", \"id\" : 1 ,\"result\": %s }\n", kept);
	fast_exchange(&h, body, rp);
	assert_int_equal(rp->status, 200);
	assert_int_equal(rp->body_len, strlen(body));
	assert_memory_equal(rp->body, body, strlen(body));
	assert_int_equal(h.parsed, 0);
	assert_int_equal(h.passed, 1);

	/* One byte different: the hook refuses, the reply is parsed. */
	char *other = big_result('y');
	sprintf(body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":%s}", other);
	fast_exchange(&h, body, rp);
	assert_int_equal(rp->status, 200);
	assert_int_equal(h.parsed, 1);
	assert_int_equal(h.passed, 1);

	/* A member name with an escape (it could spell "result" twice): parsed. */
	sprintf(body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"res\\u0075lt\":%s}", kept);
	fast_exchange(&h, body, rp);
	assert_int_equal(h.parsed, 2);
	assert_int_equal(h.passed, 1);

	/* "result" before the other members: its span runs past the value,
	 * no hook kept such bytes, parsed. */
	sprintf(body, "{\"result\":%s,\"jsonrpc\":\"2.0\",\"id\":1}", kept);
	fast_exchange(&h, body, rp);
	assert_int_equal(rp->status, 200);
	assert_int_equal(h.parsed, 3);
	assert_int_equal(h.passed, 1);

	/* Another request's id: never delivered, whatever the hook kept. */
	sprintf(body, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":%s}", kept);
	fast_exchange(&h, body, rp);
	assert_int_equal(rp->status, 502);
	assert_int_equal(h.passed, 1);

	/* Not JSON past the result: the envelope's parse fails, as would the
	 * whole reply's. */
	sprintf(body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":%s,}", kept);
	fast_exchange(&h, body, rp);
	assert_int_equal(rp->status, 502);
	assert_int_equal(h.passed, 1);
	free(rp);
	free(body);
	free(other);
	free(kept);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_reply_forwarded_with_content_length),
		cmocka_unit_test(test_sse_reply_reframed_event_by_event),
		cmocka_unit_test(test_reply_with_another_id_is_502),
		cmocka_unit_test(test_notification_only_post_is_202),
		cmocka_unit_test(test_upstream_unreachable_is_502),
		cmocka_unit_test(test_put_is_405_with_allow),
		cmocka_unit_test(test_upstream_404_ends_the_session),
		cmocka_unit_test(test_2026_era_error_code),
		cmocka_unit_test(test_unchanged_listing_passes_unparsed),
	};
	log_setup(LOG_ERROR, 0); /* no access lines, no warnings for the 502s */
	return cmocka_run_group_tests(tests, NULL, NULL);
}

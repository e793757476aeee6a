/* upstream: see upstream.h.
 *
 *   upstream ──idle──▶ upconn ─▶ upconn ─▶ NULL     (LIFO: warmest first)
 *
 *   upstream_req ──uc──▶ upconn (owned while the exchange runs)
 *        ▲                  │
 *        └──────req─────────┘ (borrowed back-pointer for parser callbacks)
 *
 * Each upconn owns its bufferevent and its response parser, so a reused
 * connection allocates nothing per request but the request itself.
 *
 * An exchange: NEW -> WAITING (-> WAITING once: the retry) -> RECEIVING
 * (<-> INTERIM for each 1xx) -> DONE; FAILED from WAITING, RECEIVING or
 * INTERIM, or from FAILING (a start that got no connection); ABANDONED
 * when a callback says stop. req_moves is the table, req_to the one place
 * the state changes.
 *
 * Why this file is long (~900 lines, one file): the exchange and the pool share the insides of
 * struct upconn (its parser, read side and callbacks), each step of one
 * touching the other's.
 */
#include "proxy/net/upstream.h"

#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <openssl/ssl.h>

#include "proxy/config.h"
#include "proxy/net/deadline.h"
#include "proxy/net/http_parse.h"
#include "proxy/base/limits.h"
#include "proxy/base/log.h"
#include "proxy/net/sockread.h"
#include "proxy/net/tls.h"
#include "proxy/base/clock.h"
#include "proxy/base/flagnames.h"

struct upconn {
	struct upstream *up;            /* borrowed */
	struct bufferevent *bev;        /* owned */
	struct sockread *rd;            /* owned: bev's read side */
	struct http_parser *parser;     /* owned */
	struct upstream_req *req;       /* borrowed: the exchange using it, or NULL */
	struct upconn *next;            /* idle list link */
	int connected;
	unsigned uses;
	/* owned, or NULL before the first pool_put: the pool's idle timeout
	 * (opts.idle_ms), armed at the first pool_put and left armed while
	 * the connection is in use: pushed on at each return to the pool, a
	 * firing while in use arms it again (setting and clearing it per
	 * request would move the timer twice). */
	struct deadline *idle;
};

struct upstream {
	struct upstream_opts opts;             /* opts.draining borrowed */
	const struct px_upstream_conf *conf;   /* borrowed */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct upconn *idle;                   /* owned list */
	size_t nidle;
	SSL_CTX *tls;                          /* owned, for https upstreams */
	/* A freed request's memory, for the next one: a calloc and a free
	 * fewer per call. One is enough: a worker's
	 * requests to one upstream mostly come one after another. */
	struct upstream_req *spare;            /* owned, or NULL */
	/* The head room of a request that became a stream, for the next
	 * request that needs one (see upstream_req_stream). */
	char *spare_head;                      /* owned, or NULL */
};

/* Written by this worker only; the admin endpoint reads it as a gauge. */
static void set_nidle(struct upstream *u, size_t n)
{
	__atomic_store_n(&u->nidle, n, __ATOMIC_RELAXED);
}

/* An exchange's states, in order: the last three are final (no callback
 * after them). Every change goes through req_to, which asserts it is one
 * of req_moves. */
enum upreq_state {
	/* Being set up by upstream_req_new_split (fresh memory or the spare):
	 * no connection, no callback can run yet. */
	UPREQ_NEW,
	/* No connection could be opened: the error waits in kick, so that the
	 * caller never sees a callback from within upstream_req_new. */
	UPREQ_FAILING,
	/* Attached to a connection (connecting, writing or written) and no
	 * response byte yet: a reset on a reused connection may still be
	 * retried once, the request being intact. */
	UPREQ_WAITING,
	/* A response byte arrived: the final response is parsed and reported
	 * (on_head, on_body). No retry any more. */
	UPREQ_RECEIVING,
	/* Parsing a 1xx interim response: skipped, not forwarded; at its end
	 * the parser is reset and the final response follows (RECEIVING). */
	UPREQ_INTERIM,
	/* on_done ran: the response ended cleanly; the connection goes back
	 * to the pool at release if nothing else speaks against it. */
	UPREQ_DONE,
	/* on_error ran (or is running); the connection is closed (uc NULL). */
	UPREQ_FAILED,
	/* on_head or on_body returned -1: the exchange gave up and frees us;
	 * the connection is closed, no more callbacks. */
	UPREQ_ABANDONED,
};

#define UPREQ_NSTATES (UPREQ_ABANDONED + 1)
#define M(s) (1u << (s))
static const unsigned req_moves[UPREQ_NSTATES] = {
	[UPREQ_NEW] = M(UPREQ_WAITING) | M(UPREQ_FAILING),
	[UPREQ_FAILING] = M(UPREQ_FAILED),
	/* WAITING -> WAITING: the one retry, on a new connection. */
	[UPREQ_WAITING] = M(UPREQ_WAITING) | M(UPREQ_RECEIVING) | M(UPREQ_FAILED),
	[UPREQ_RECEIVING] = M(UPREQ_INTERIM) | M(UPREQ_DONE) | M(UPREQ_FAILED) | M(UPREQ_ABANDONED),
	[UPREQ_INTERIM] = M(UPREQ_RECEIVING) | M(UPREQ_FAILED) | M(UPREQ_ABANDONED),
};
#undef M

static const char *const req_state_names[UPREQ_NSTATES] = {
	"new", "failing", "waiting", "receiving", "interim", "done", "failed", "abandoned",
};

/* What the exchange is, apart from where it is (upstream_req_flags_str). */
enum upreq_flag {
	UPREQ_F_HEAD_ONLY = 1u << 0,  /* HEAD: the response has no body */
	UPREQ_F_REPLAYABLE = 1u << 1, /* idempotent method: may be sent twice */
	UPREQ_F_RETRIED = 1u << 2,    /* sent again once, on a new connection */
	UPREQ_F_PAUSED = 1u << 3,     /* backpressure: the response is not read */
	UPREQ_F_STREAMING = 1u << 4,  /* a stream: the request deadline is off */
	UPREQ_F_DISTRUSTED = 1u << 5, /* answered another request: never pooled */
	UPREQ_F_KICKED = 1u << 6,     /* kick is active: made so, not yet run */
};
#define UPREQ_NFLAGS 7 /* the last flag is 1u << (UPREQ_NFLAGS - 1) */

static const char *const req_flag_names[] = {
	"head_only", "replayable", "retried", "paused", "streaming", "distrusted", "kicked",
};
_Static_assert(sizeof(req_flag_names) / sizeof(req_flag_names[0]) == UPREQ_NFLAGS,
               "a name per upreq_flag");
_Static_assert(UPREQ_F_KICKED == 1u << (UPREQ_NFLAGS - 1), "UPREQ_NFLAGS is the count");

struct upstream_req {
	struct upstream *up;            /* borrowed */
	struct upconn *uc;              /* owned while attached */
	/* The request is head[0..head_len) (0: none apart) then request's
	 * bytes; both kept for one retry. */
	size_t head_len;
	struct evbuffer *request;       /* owned; kept for one retry */
	const struct upstream_req_cbs *cbs;
	void *arg;
	enum upreq_state state;         /* changed by req_to only */
	unsigned flags;                 /* enum upreq_flag */
	enum upstream_err pending_err;  /* FAILING: the error kick delivers */
	const char *pending_detail;
	short held_event;               /* a close that arrived while paused */
	/* From here on the request's own parts, made once with its memory
	 * and kept when it is reused (upstream->spare): the fields above are
	 * cleared for each exchange, these are not. */
	struct deadline *dl;            /* owned: request_timeout_ms */
	struct event kick_ev;           /* deferred start/resume/error */
	/* owned, UPSTREAM_HEAD_MAX bytes, or NULL: apart from the request so
	 * that a stream gives it back once no retry can need it. Embedded,
	 * it made the request 2,560 bytes (224 now) of the 17.5 KiB an idle
	 * SSE stream held (make bench-streams). */
	char *head;
};

static void req_to(struct upstream_req *r, enum upreq_state to)
{
	assert(req_moves[r->state] & (1u << to));
	r->state = to;
}

/* The exchange is over: on_done or on_error ran, or it gave up. */
static int req_over(const struct upstream_req *r)
{
	return r->state >= UPREQ_DONE;
}

static int req_has(const struct upstream_req *r, unsigned f)
{
	return (r->flags & f) != 0;
}

static const struct http_parser_cbs upconn_parser_cbs;

/* ---- connections --------------------------------------------------------- */

static void upconn_free(struct upconn *uc)
{
	if (!uc)
		return;
	deadline_free(uc->idle);
	sockread_free(uc->rd);
	if (uc->bev)
		bufferevent_free(uc->bev);
	http_parser_free(uc->parser);
	free(uc);
}

static void upstream_read_cb(struct bufferevent *bev, void *arg);
static void upstream_event_cb(struct bufferevent *bev, short what, void *arg);

static void upconn_idle_cb(void *arg);

static struct upconn *upconn_connect(struct upstream *u)
{
	struct upconn *uc = calloc(1, sizeof(*uc));
	if (!uc)
		return NULL;
	uc->up = u;
	uc->parser = http_parser_new(HTTP_KIND_RESPONSE, u->opts.max_header_bytes,
	                             &upconn_parser_cbs, uc);
	if (u->tls) {
		SSL *ssl = tls_client_ssl_new(u->tls, u->conf->host);
		uc->bev = ssl ? bufferevent_openssl_socket_new(u->opts.base, -1, ssl,
		                                               BUFFEREVENT_SSL_CONNECTING,
		                                               BEV_OPT_CLOSE_ON_FREE |
		                                                       BEV_OPT_DEFER_CALLBACKS)
		              : NULL;
		if (ssl && !uc->bev)
			SSL_free(ssl);
		/* Many servers close without close_notify; the HTTP framing
		 * tells a cut reply from a complete one anyway. */
		if (uc->bev)
			bufferevent_openssl_set_allow_dirty_shutdown(uc->bev, 1);
	} else {
		uc->bev = bufferevent_socket_new(u->opts.base, -1,
		                                 BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	}
	if (uc->bev)
		uc->rd = sockread_new(uc->bev, !u->tls);
	if (!uc->parser || !uc->bev || !uc->rd) {
		upconn_free(uc);
		return NULL;
	}
	unsigned ms = u->conf->connect_timeout_ms;
	if (ms) {
		/* While connecting, libevent reports a stalled connect as a write
		 * timeout; it is cleared once connected. */
		struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
		bufferevent_set_timeouts(uc->bev, NULL, &tv);
	}
	if (bufferevent_socket_connect(uc->bev, (struct sockaddr *)&u->addr, (int)u->addrlen) < 0) {
		upconn_free(uc);
		return NULL;
	}
	/* A request is one write; the next one must not wait for an ACK. */
	int one = 1;
	setsockopt(bufferevent_getfd(uc->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return uc;
}

static void idle_close(struct upconn *uc)
{
	struct upstream *u = uc->up;
	for (struct upconn **pp = &u->idle; *pp; pp = &(*pp)->next) {
		if (*pp == uc) {
			*pp = uc->next;
			set_nidle(u, u->nidle - 1);
			break;
		}
	}
	upconn_free(uc);
}

/* Anything from an idle connection (bytes, EOF, error, idle timeout) ends it:
 * a server may not send unsolicited bytes on HTTP/1.1. */
static void idle_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	idle_close(arg);
}

static void idle_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	idle_close(arg);
}

/* Idle for opts.idle_ms in the pool: closed. In use: the request's own
 * deadline (r->dl) is the one that counts; this one waits for the next
 * spell in the pool. */
static void upconn_idle_cb(void *arg)
{
	struct upconn *uc = arg;
	if (uc->req) {
		deadline_set(uc->idle, uc->up->opts.idle_ms);
		return;
	}
	idle_close(uc);
}

static void pool_put(struct upconn *uc)
{
	struct upstream *u = uc->up;
	unsigned ms = u->opts.idle_ms;

	if (u->nidle >= LIMIT_POOL_IDLE_PER_UPSTREAM || (u->opts.draining && *u->opts.draining) ||
	    ms == 0) {
		upconn_free(uc);
		return;
	}
	/* Made at the first spell here: a connection that carries a stream
	 * and then closes (most of them) never needs one. */
	if (!uc->idle && !(uc->idle = deadline_new(u->opts.base, upconn_idle_cb, uc))) {
		upconn_free(uc);
		return;
	}
	uc->req = NULL;
	http_parser_reset(uc->parser);
	/* Armed since an earlier spell here (a firing in use set it again):
	 * only pushed on. */
	if (deadline_armed(uc->idle))
		deadline_push(uc->idle, ms);
	else
		deadline_set(uc->idle, ms);
	bufferevent_setcb(uc->bev, idle_read_cb, NULL, idle_event_cb, uc);
	if (!sockread_enabled(uc->rd))
		sockread_enable(uc->rd);
	uc->next = u->idle;
	u->idle = uc;
	set_nidle(u, u->nidle + 1);
}

/* A server may close an idle connection at any moment (it restarted, its
 * keep-alive ran out), and the close may still sit unread in the socket
 * when a request wants the connection: look before reusing it. EOF or an
 * error means it is gone. Bytes mean the server said something nobody
 * asked for, most likely a second answer to the last request: had the
 * connection been reused, that answer would be read as the next client's
 * (issue 17). Such a connection is closed, never reused, like an idle one
 * that becomes readable (idle_read_cb; nginx's keepalive close handler,
 * HAProxy's idle-connection check). So the socket is looked at every time,
 * however short the idle spell: idle_read_cb only sees what the loop
 * polled, and a request read in the same loop turn as those bytes would
 * take the connection first. Over TLS, bytes in the socket may be a
 * post-handshake message, which OpenSSL consumes; application data that
 * OpenSSL decrypted is in the input buffer and is caught there. */
static int upconn_alive(struct upconn *uc)
{
	char b;
	if (evbuffer_get_length(bufferevent_get_input(uc->bev)) > 0)
		return 0;
	ssize_t n = recv(bufferevent_getfd(uc->bev), &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		return uc->up->tls != NULL;
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static struct upconn *pool_get(struct upstream *u)
{
	struct upconn *uc;
	while ((uc = u->idle) != NULL) {
		u->idle = uc->next;
		set_nidle(u, u->nidle - 1);
		uc->next = NULL;
		if (upconn_alive(uc))
			break;
		upconn_free(uc);
	}
	return uc;
}

/* ---- requests ------------------------------------------------------------ */

static void req_fail(struct upstream_req *r, enum upstream_err err, const char *detail)
{
	if (req_over(r))
		return;
	req_to(r, UPREQ_FAILED);
	deadline_clear(r->dl);
	/* A failed connection is never reused. */
	upconn_free(r->uc);
	r->uc = NULL;
	r->cbs->on_error(r->arg, err, detail);
}

static void req_complete(struct upstream_req *r)
{
	req_to(r, UPREQ_DONE);
	deadline_clear(r->dl);
	r->cbs->on_done(r->arg);
}

/* On a connected plain-TCP connection, sends what the socket takes of the
 * request at once. The bufferevent would instead register for writability,
 * wait a loop turn for it and unregister again: two epoll_ctl and an
 * epoll_wait per request, for a request that fits the socket buffer
 * anyway. Returns the bytes sent (the request is left intact, for a
 * retry), 0 when the bufferevent should do it all. */
static size_t send_now(struct upconn *uc, struct upstream_req *r)
{
	struct evbuffer_iovec v[16];
	struct iovec iov[17];
	int h = r->head_len > 0;

	if (!uc->connected || uc->up->tls)
		return 0;
	int n = evbuffer_peek(r->request, -1, NULL, v, 16);
	if (n < 0 || n > 16 || n + h == 0)
		return 0;
	if (h)
		iov[0] = (struct iovec){r->head, r->head_len};
	for (int i = 0; i < n; i++)
		iov[h + i] = (struct iovec){v[i].iov_base, v[i].iov_len};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)(h + n)};
	ssize_t w = sendmsg(bufferevent_getfd(uc->bev), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	/* An error is left for the bufferevent to meet and report. */
	return w > 0 ? (size_t)w : 0;
}

static int req_attach(struct upstream_req *r, struct upconn *uc)
{
	r->uc = uc;
	uc->req = r;
	uc->uses++;
	bufferevent_setcb(uc->bev, upstream_read_cb, NULL, upstream_event_cb, uc);
	size_t sent = send_now(uc, r);
	if (sent == r->head_len + evbuffer_get_length(r->request)) {
		/* All sent: enabling EV_WRITE would register for writability
		 * (libevent adds the event whether or not output is pending). */
		if (sockread_enabled(uc->rd))
			return 0; /* a pooled connection reads already */
		return sockread_enable(uc->rd);
	}
	/* The rest of the head copied; the body by reference, not a copy: the
	 * request stays intact for a retry. What went out already is drained
	 * from the reference only (out is empty before: a fresh or pooled
	 * connection). */
	struct evbuffer *out = bufferevent_get_output(uc->bev);
	size_t in_head = sent < r->head_len ? sent : r->head_len;
	if (r->head_len > in_head && evbuffer_add(out, r->head + in_head, r->head_len - in_head) < 0)
		return -1;
	sent -= in_head;
	if (evbuffer_add_buffer_reference(out, r->request) < 0 ||
	    (sent && evbuffer_drain(out, sent) < 0))
		return -1;
	if (!sockread_enabled(uc->rd) && sockread_enable(uc->rd) < 0)
		return -1;
	return bufferevent_enable(uc->bev, EV_WRITE);
}

static int req_start_fresh(struct upstream_req *r)
{
	struct upconn *uc = upconn_connect(r->up);
	if (!uc)
		return -1;
	if (req_attach(r, uc) < 0) {
		upconn_free(uc);
		r->uc = NULL;
		return -1;
	}
	return 0;
}

static void req_retry_or_fail(struct upstream_req *r, enum upstream_err err, const char *detail)
{
	/* Only a reused connection that produced no byte may have been closed
	 * by the server while idle; anything else is a real failure. Even
	 * then the server may instead have died while working on it: only an
	 * idempotent request may be sent again. A POST (every tools/call) is
	 * never replayed, so a call the upstream may have run is not run
	 * twice; pool_get() keeps the idle-close race to a sliver for it. */
	if (r->state == UPREQ_WAITING && req_has(r, UPREQ_F_REPLAYABLE) &&
	    !req_has(r, UPREQ_F_RETRIED) && r->uc && r->uc->uses > 1) {
		r->flags |= UPREQ_F_RETRIED;
		upconn_free(r->uc);
		r->uc = NULL;
		log_msg(LOG_DEBUG, "upstream %s: reused connection closed, retrying once",
		        r->up->conf->name);
		if (req_start_fresh(r) == 0) {
			req_to(r, UPREQ_WAITING);
			return;
		}
		err = UPSTREAM_ERR_CONNECT;
		detail = "cannot open a connection";
	}
	req_fail(r, err, detail);
}

static void req_process_input(struct upstream_req *r)
{
	struct upconn *uc = r->uc;
	struct evbuffer *in = bufferevent_get_input(uc->bev);

	while (!req_over(r) && !req_has(r, UPREQ_F_PAUSED) && evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec vec;
		size_t consumed;

		if (evbuffer_peek(in, -1, NULL, &vec, 1) < 1)
			break;
		if (r->state == UPREQ_WAITING)
			req_to(r, UPREQ_RECEIVING);
		enum http_parse_rc rc = http_parser_feed(uc->parser, vec.iov_base, vec.iov_len,
		                                         &consumed);
		evbuffer_drain(in, consumed);
		if (rc == HTTP_PARSE_ERROR) {
			if (http_parser_error(uc->parser) == HTTP_ERR_CALLBACK) {
				/* The exchange gave up; it will free us. */
				req_to(r, UPREQ_ABANDONED);
				deadline_clear(r->dl);
				upconn_free(r->uc);
				r->uc = NULL;
				return;
			}
			req_fail(r, UPSTREAM_ERR_PROTOCOL,
			         http_parser_error(uc->parser) == HTTP_ERR_HEADERS_TOO_BIG
			                 ? "the upstream's response headers are too large"
			                 : "the upstream's reply is not valid HTTP");
			return;
		}
		if (rc == HTTP_PARSE_DONE) {
			if (r->state == UPREQ_INTERIM) {
				req_to(r, UPREQ_RECEIVING);
				http_parser_reset(uc->parser);
				continue;
			}
			req_complete(r);
			return;
		}
	}
}

static void upstream_read_cb(struct bufferevent *bev, void *arg)
{
	struct upconn *uc = arg;
	(void)bev;
	if (uc->req)
		req_process_input(uc->req);
}

static void upstream_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct upconn *uc = arg;
	struct upstream_req *r = uc->req;

	if (what & BEV_EVENT_CONNECTED) {
		uc->connected = 1;
		bufferevent_set_timeouts(uc->bev, NULL, NULL);
		return;
	}
	if (!r || req_over(r))
		return;
	/* Bytes that arrived with the close are still ours to parse. */
	req_process_input(r);
	if (req_over(r))
		return;
	if (req_has(r, UPREQ_F_PAUSED)) {
		/* Handled on resume, after the bytes before it. */
		r->held_event = what;
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		req_fail(r, UPSTREAM_ERR_CONNECT, "connect timed out");
		return;
	}
	if (!uc->connected) {
		const char *why = errno == ECONNREFUSED ? "connection refused" : "cannot connect";
		if (r->up->tls && errno != ECONNREFUSED)
			why = tls_error_reason(bev);
		req_fail(r, UPSTREAM_ERR_CONNECT, why);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		enum http_parse_rc rc = http_parser_finish(uc->parser);
		if (rc == HTTP_PARSE_DONE && r->state != UPREQ_INTERIM) {
			req_complete(r);
			return;
		}
		if (r->state == UPREQ_WAITING) {
			req_retry_or_fail(r, UPSTREAM_ERR_RESET,
			                  "the upstream closed the connection without replying");
			return;
		}
		req_fail(r, UPSTREAM_ERR_RESET, "the upstream closed the connection mid-reply");
		return;
	}
	req_retry_or_fail(r, UPSTREAM_ERR_RESET,
	                  r->state != UPREQ_WAITING ? "the upstream reset the connection mid-reply"
	                                            : "the upstream reset the connection");
}

static void req_deadline_cb(void *arg)
{
	req_fail(arg, UPSTREAM_ERR_TIMEOUT, "the upstream did not answer in time");
}

static void req_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_req *r = arg;
	(void)fd;
	(void)what;
	r->flags &= ~UPREQ_F_KICKED;
	if (r->state == UPREQ_FAILING) {
		req_fail(r, r->pending_err, r->pending_detail);
		return;
	}
	if (r->uc && !req_over(r))
		req_process_input(r);
	if (r->uc && !req_over(r) && !req_has(r, UPREQ_F_PAUSED) && r->held_event) {
		short held = r->held_event;
		r->held_event = 0;
		upstream_event_cb(r->uc->bev, held, r->uc);
	}
}

/* ---- parser callbacks ---------------------------------------------------- */

static int uc_on_headers(void *arg, const struct http_msg *m)
{
	struct upconn *uc = arg;
	struct upstream_req *r = uc->req;
	int status = http_msg_status(m);

	if (!r)
		return -1;
	if (status >= 100 && status < 200) {
		/* Interim responses are not forwarded: we never send Expect. */
		req_to(r, UPREQ_INTERIM);
		return 0;
	}
	if (r->cbs->on_head(r->arg, m) < 0)
		return -1;
	return req_has(r, UPREQ_F_HEAD_ONLY) ? 1 : 0;
}

static int uc_on_body(void *arg, const char *data, size_t len)
{
	struct upconn *uc = arg;
	struct upstream_req *r = uc->req;
	if (!r || r->state == UPREQ_INTERIM)
		return 0;
	return r->cbs->on_body(r->arg, data, len) < 0 ? -1 : 0;
}

static const struct http_parser_cbs upconn_parser_cbs = {uc_on_headers, uc_on_body};

/* A request's memory with its own parts made (the deadline, the kick):
 * the spare's when there is one, cleared up to them. */
static struct upstream_req *req_alloc(struct upstream *u)
{
	struct upstream_req *r = u->spare;
	if (r) {
		u->spare = NULL;
		memset(r, 0, offsetof(struct upstream_req, dl));
		return r;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->dl = deadline_new(u->opts.base, req_deadline_cb, r);
	if (!r->dl || event_assign(&r->kick_ev, u->opts.base, -1, 0, req_kick_cb, r) < 0) {
		deadline_free(r->dl);
		free(r);
		return NULL;
	}
	return r;
}

/* Frees a request's memory; nothing of it may be pending. Accepts NULL. */
static void req_destroy(struct upstream_req *r)
{
	if (!r)
		return;
	deadline_free(r->dl);
	free(r->head);
	free(r);
}

/* Room for a head of up to UPSTREAM_HEAD_MAX bytes: the request's own
 * (kept with the spare), a stream's left behind, or new. 0, or -1. */
static int req_head_room(struct upstream_req *r)
{
	if (r->head)
		return 0;
	struct upstream *u = r->up;
	r->head = u->spare_head ? u->spare_head : malloc(UPSTREAM_HEAD_MAX);
	u->spare_head = NULL;
	return r->head ? 0 : -1;
}

/* The memory of a request that is over (its events deleted), kept for the
 * next one, or freed. */
static void req_recycle(struct upstream_req *r)
{
	struct upstream *u = r->up;
	if (!u->spare)
		u->spare = r;
	else
		req_destroy(r);
}

/* ---- public -------------------------------------------------------------- */

struct upstream *upstream_new(const struct upstream_opts *o, const struct px_upstream_conf *conf,
                              char *errbuf, size_t errlen)
{
	struct addrinfo hints = {0}, *res = NULL;
	struct upstream *u;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	int rc = getaddrinfo(conf->host, conf->port, &hints, &res);
	if (rc != 0 || !res) {
		snprintf(errbuf, errlen, "upstream %s (%s): cannot resolve host: %s", conf->name,
		         conf->url_safe, gai_strerror(rc));
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		freeaddrinfo(res);
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	u->opts = *o;
	u->conf = conf;
	memcpy(&u->addr, res->ai_addr, res->ai_addrlen);
	u->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	if (conf->tls) {
		struct tls_client_opts t = {conf->tls_ca_file, conf->tls_cert_file, conf->tls_key_file,
		                            conf->tls_insecure_skip_verify};
		u->tls = tls_client_ctx_new(&t, errbuf, errlen);
		if (!u->tls) {
			free(u);
			return NULL;
		}
		if (conf->tls_insecure_skip_verify)
			log_msg(LOG_WARN, "upstream %s (%s): TLS CERTIFICATE VERIFICATION IS OFF "
			                  "(insecure_skip_verify): anyone on the path can impersonate it",
			        conf->name, conf->url_safe);
	}
	return u;
}

void upstream_free(struct upstream *u)
{
	if (!u)
		return;
	while (u->idle) {
		struct upconn *uc = u->idle;
		u->idle = uc->next;
		upconn_free(uc);
	}
	tls_ctx_free(u->tls);
	req_destroy(u->spare);
	free(u->spare_head);
	free(u);
}

const struct px_upstream_conf *upstream_conf(const struct upstream *u)
{
	return u->conf;
}

void upstream_set_conf(struct upstream *u, const struct px_upstream_conf *conf,
                       const struct upstream_opts *o)
{
	assert(o->base == u->opts.base);
	u->conf = conf;
	u->opts = *o;
}

size_t upstream_idle_count(const struct upstream *u)
{
	return __atomic_load_n(&u->nidle, __ATOMIC_RELAXED);
}

/* RFC 9110 §9.2.2: the methods a client may repeat without changing the
 * outcome. The request line is at the start of the buffer. */
static int request_replayable(const struct upstream_req *r)
{
	static const char *const idempotent[] = {"GET ", "HEAD ", "OPTIONS ", "DELETE ", "PUT ",
	                                         NULL};
	char line[8];
	size_t n = r->head_len < sizeof(line) ? r->head_len : sizeof(line);
	if (n) /* a request given whole has no head of its own (r->head NULL) */
		memcpy(line, r->head, n);
	if (n < sizeof(line)) {
		ev_ssize_t k = evbuffer_copyout(r->request, line + n, sizeof(line) - n);
		n += k > 0 ? (size_t)k : 0;
	}
	for (size_t i = 0; n > 0 && idempotent[i]; i++) {
		size_t len = strlen(idempotent[i]);
		if (n >= len && memcmp(line, idempotent[i], len) == 0)
			return 1;
	}
	return 0;
}

struct upstream_req *upstream_req_new(struct upstream *u, struct evbuffer *request,
                                      int head_only, const struct upstream_req_cbs *cbs,
                                      void *arg)
{
	return upstream_req_new_split(u, NULL, 0, request, head_only, cbs, arg);
}

struct upstream_req *upstream_req_new_split(struct upstream *u, const char *head,
                                            size_t head_len, struct evbuffer *request,
                                            int head_only, const struct upstream_req_cbs *cbs,
                                            void *arg)
{
	struct upstream_req *r = head_len <= UPSTREAM_HEAD_MAX ? req_alloc(u) : NULL;
	if (!r) {
		evbuffer_free(request);
		return NULL;
	}
	r->up = u;
	if (head_len && req_head_room(r) < 0) {
		req_recycle(r);
		evbuffer_free(request);
		return NULL;
	}
	if (head_len)
		memcpy(r->head, head, head_len);
	r->head_len = head_len;
	r->request = request;
	r->cbs = cbs;
	r->arg = arg;
	if (head_only)
		r->flags |= UPREQ_F_HEAD_ONLY;
	if (request_replayable(r))
		r->flags |= UPREQ_F_REPLAYABLE;
	struct upconn *uc = pool_get(u);
	int rc = uc ? req_attach(r, uc) : req_start_fresh(r);
	if (rc < 0) {
		if (uc && r->uc == NULL)
			upconn_free(uc);
		/* Report asynchronously: callers never see a callback from here. */
		req_to(r, UPREQ_FAILING);
		r->pending_err = UPSTREAM_ERR_CONNECT;
		r->pending_detail = "cannot open a connection";
		r->flags |= UPREQ_F_KICKED;
		event_active(&r->kick_ev, 0, 0);
		return r;
	}
	req_to(r, UPREQ_WAITING);
	/* The deadline's own timer failing to be added leaves the request
	 * without one, as request_timeout_ms 0 does. */
	deadline_set(r->dl, u->conf->request_timeout_ms);
	return r;
}

void upstream_req_free(struct upstream_req *r)
{
	struct evbuffer *request = upstream_req_release(r);
	if (request)
		evbuffer_free(request);
}

struct evbuffer *upstream_req_release(struct upstream_req *r)
{
	if (!r)
		return NULL;
	if (r->uc) {
		struct upconn *uc = r->uc;
		const struct http_msg *m = http_parser_msg(uc->parser);
		int reusable = r->state == UPREQ_DONE && !req_has(r, UPREQ_F_DISTRUSTED) &&
		               http_msg_keep_alive(m) &&
		               evbuffer_get_length(bufferevent_get_input(uc->bev)) == 0 &&
		               evbuffer_get_length(bufferevent_get_output(uc->bev)) == 0;
		uc->req = NULL;
		if (reusable)
			pool_put(uc);
		else
			upconn_free(uc);
	}
	deadline_clear(r->dl);
	if (req_has(r, UPREQ_F_KICKED))
		event_del(&r->kick_ev);
	struct evbuffer *request = r->request;
	req_recycle(r);
	return request;
}

void upstream_req_pause(struct upstream_req *r)
{
	if (req_has(r, UPREQ_F_PAUSED) || !r->uc)
		return;
	r->flags |= UPREQ_F_PAUSED;
	sockread_disable(r->uc->rd);
}

void upstream_req_resume(struct upstream_req *r)
{
	if (!req_has(r, UPREQ_F_PAUSED))
		return;
	r->flags &= ~UPREQ_F_PAUSED;
	if (!r->uc || req_over(r))
		return;
	sockread_enable(r->uc->rd);
	/* Bytes read before the pause are parsed from the loop, not from
	 * inside the caller's stack. */
	if (evbuffer_get_length(bufferevent_get_input(r->uc->bev)) || r->held_event) {
		r->flags |= UPREQ_F_KICKED;
		event_active(&r->kick_ev, 0, 0);
	}
}

void upstream_req_distrust(struct upstream_req *r)
{
	r->flags |= UPREQ_F_DISTRUSTED;
}

void upstream_req_stream(struct upstream_req *r)
{
	r->flags |= UPREQ_F_STREAMING;
	deadline_clear(r->dl);
	/* Once a response byte came, nothing sends the request again: a
	 * stream, which may stay open for hours, gives its head room back
	 * (to the upstream for the next request, no free and malloc per SSE
	 * reply). Whatever of the head the socket did not take at once was
	 * copied into the connection's output (req_attach). */
	if (r->state != UPREQ_WAITING && r->state != UPREQ_NEW && r->head) {
		struct upstream *u = r->up;
		if (!u->spare_head)
			u->spare_head = r->head;
		else
			free(r->head);
		r->head = NULL;
		r->head_len = 0;
	}
	/* A body-less request (a GET stream's) keeps no empty buffer for the
	 * hours it may last; upstream_req_release hands back NULL then. A
	 * POST's body goes back to its caller for reuse, as before. */
	if (r->state != UPREQ_WAITING && r->state != UPREQ_NEW && r->request &&
	    evbuffer_get_length(r->request) == 0) {
		evbuffer_free(r->request);
		r->request = NULL;
	}
}

const char *upstream_req_state_str(const struct upstream_req *r)
{
	return req_state_names[r->state];
}

const char *upstream_req_flags_str(const struct upstream_req *r, char *buf, size_t len)
{
	return flagnames_str(r->flags, req_flag_names, UPREQ_NFLAGS, buf, len);
}

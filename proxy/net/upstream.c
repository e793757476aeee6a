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
 */
#include "proxy/net/upstream.h"

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
#include "proxy/ctx.h"
#include "proxy/net/http_parse.h"
#include "proxy/base/limits.h"
#include "proxy/base/log.h"
#include "proxy/net/sockread.h"
#include "proxy/net/tls.h"
#include "proxy/base/clock.h"

struct upconn {
	struct upstream *up;            /* borrowed */
	struct bufferevent *bev;        /* owned */
	struct sockread *rd;            /* owned: bev's read side */
	struct http_parser *parser;     /* owned */
	struct upstream_req *req;       /* borrowed: the exchange using it, or NULL */
	struct upconn *next;            /* idle list link */
	int connected;
	unsigned uses;
	unsigned idle_ms;               /* read timeout set on bev; 0: none */
};

struct upstream {
	struct px_ctx *ctx;                    /* borrowed */
	const struct px_upstream_conf *conf;   /* borrowed */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct upconn *idle;                   /* owned list */
	size_t nidle;
	SSL_CTX *tls;                          /* owned, for https upstreams */
	/* A freed request's memory, for the next one: a calloc and a free
	 * fewer per call (~250 instructions). One is enough: a worker's
	 * requests to one upstream mostly come one after another. */
	struct upstream_req *spare;            /* owned, or NULL */
};

/* Written by this worker only; the admin endpoint reads it as a gauge. */
static void set_nidle(struct upstream *u, size_t n)
{
	__atomic_store_n(&u->nidle, n, __ATOMIC_RELAXED);
}

struct upstream_req {
	struct upstream *up;            /* borrowed */
	struct upconn *uc;              /* owned while attached */
	/* The request is head[0..head_len) (0: none apart) then request's
	 * bytes; both kept for one retry. */
	size_t head_len;
	struct evbuffer *request;       /* owned; kept for one retry */
	const struct upstream_req_cbs *cbs;
	void *arg;
	struct event *timer;            /* -> timer_ev: request deadline */
	struct event *kick;             /* -> kick_ev: deferred start/resume/error */
	enum upstream_err pending_err;  /* error to deliver from kick */
	int kicked;                     /* kick is active: made so, not yet run */
	int timed;                      /* the deadline counts (see deadline_start) */
	struct timespec due;            /* the deadline, CLOCK_MONOTONIC_COARSE */
	const char *pending_detail;
	int head_only;
	int got_bytes;                  /* a response byte arrived */
	int retried;
	int replayable;                 /* idempotent method: may be sent twice */
	int finished;                   /* on_done or on_error was called */
	int complete;                   /* the response ended cleanly */
	int in_info;                    /* parsing a 1xx interim response */
	int paused;
	short held_event;               /* a close that arrived while paused */
	int streaming;
	int distrusted;                 /* upstream_req_distrust: never reused */
	/* Last, so that a reused request (upstream->spare) is cleared up to
	 * them: they stay assigned to it (same base, same callbacks, same
	 * argument), an event_assign fewer each per call. In the request,
	 * not allocated: two mallocs and frees fewer per call. */
	int assigned;                   /* timer_ev and kick_ev are assigned */
	int timer_pending;              /* timer_ev is added, due at timer_at */
	struct timespec timer_at;
	struct event timer_ev, kick_ev;
	char head[UPSTREAM_HEAD_MAX];
};

static const struct http_parser_cbs upconn_parser_cbs;

/* ---- connections --------------------------------------------------------- */

static void upconn_free(struct upconn *uc)
{
	if (!uc)
		return;
	sockread_free(uc->rd);
	if (uc->bev)
		bufferevent_free(uc->bev);
	http_parser_free(uc->parser);
	free(uc);
}

static void upstream_read_cb(struct bufferevent *bev, void *arg);
static void upstream_event_cb(struct bufferevent *bev, short what, void *arg);

static struct upconn *upconn_connect(struct upstream *u)
{
	struct upconn *uc = calloc(1, sizeof(*uc));
	if (!uc)
		return NULL;
	uc->up = u;
	uc->parser = http_parser_new(HTTP_KIND_RESPONSE, u->ctx->cfg->limits.max_header_bytes,
	                             &upconn_parser_cbs, uc);
	if (u->tls) {
		SSL *ssl = tls_client_ssl_new(u->tls, u->conf->host);
		uc->bev = ssl ? bufferevent_openssl_socket_new(u->ctx->base, -1, ssl,
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
		uc->bev = bufferevent_socket_new(u->ctx->base, -1,
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

static void pool_put(struct upconn *uc)
{
	struct upstream *u = uc->up;
	unsigned ms = u->ctx->cfg->timeouts.upstream_idle_ms;

	if (u->nidle >= LIMIT_POOL_IDLE_PER_UPSTREAM || u->ctx->draining || ms == 0) {
		upconn_free(uc);
		return;
	}
	uc->req = NULL;
	http_parser_reset(uc->parser);
	/* The idle timeout stays set while the connection is in use (a read
	 * timeout then is let pass, upstream_event_cb): setting timeouts
	 * re-adds both events, twice per request when it was cleared. */
	if (uc->idle_ms != ms) {
		struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
		sockread_set_timeouts(uc->rd, &tv, NULL);
		uc->idle_ms = ms;
	}
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
	if (r->finished)
		return;
	r->finished = 1;
	r->timed = 0;
	/* A failed connection is never reused. */
	upconn_free(r->uc);
	r->uc = NULL;
	r->cbs->on_error(r->arg, err, detail);
}

static void req_complete(struct upstream_req *r)
{
	r->finished = 1;
	r->complete = 1;
	r->timed = 0;
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
	if (r->replayable && !r->got_bytes && !r->retried && r->uc && r->uc->uses > 1) {
		r->retried = 1;
		upconn_free(r->uc);
		r->uc = NULL;
		log_msg(LOG_DEBUG, "upstream %s: reused connection closed, retrying once",
		        r->up->conf->name);
		if (req_start_fresh(r) == 0)
			return;
		err = UPSTREAM_ERR_CONNECT;
		detail = "cannot open a connection";
	}
	req_fail(r, err, detail);
}

static void req_process_input(struct upstream_req *r)
{
	struct upconn *uc = r->uc;
	struct evbuffer *in = bufferevent_get_input(uc->bev);

	while (!r->finished && !r->paused && evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec vec;
		size_t consumed;

		if (evbuffer_peek(in, -1, NULL, &vec, 1) < 1)
			break;
		r->got_bytes = 1;
		enum http_parse_rc rc = http_parser_feed(uc->parser, vec.iov_base, vec.iov_len,
		                                         &consumed);
		evbuffer_drain(in, consumed);
		if (rc == HTTP_PARSE_ERROR) {
			if (http_parser_error(uc->parser) == HTTP_ERR_CALLBACK) {
				/* The exchange gave up; it will free us. */
				r->finished = 1;
				r->timed = 0;
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
			if (r->in_info) {
				r->in_info = 0;
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
		sockread_set_timeouts(uc->rd, NULL, NULL);
		uc->idle_ms = 0;
		return;
	}
	if (!r || r->finished)
		return;
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) && uc->connected) {
		/* The pool's idle timeout, still set on a reused connection: the
		 * request's own deadline (r->timer) is the one that counts. */
		sockread_enable(uc->rd);
		return;
	}
	/* Bytes that arrived with the close are still ours to parse. */
	req_process_input(r);
	if (r->finished)
		return;
	if (r->paused) {
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
		if (rc == HTTP_PARSE_DONE && !r->in_info) {
			req_complete(r);
			return;
		}
		if (!r->got_bytes) {
			req_retry_or_fail(r, UPSTREAM_ERR_RESET,
			                  "the upstream closed the connection without replying");
			return;
		}
		req_fail(r, UPSTREAM_ERR_RESET, "the upstream closed the connection mid-reply");
		return;
	}
	req_retry_or_fail(r, UPSTREAM_ERR_RESET,
	                  r->got_bytes ? "the upstream reset the connection mid-reply"
	                               : "the upstream reset the connection");
}

static int ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* The timer goes off ms_left milliseconds after now. */
static void timer_arm_at(struct upstream_req *r, const struct timespec *now, long long ms_left)
{
	struct timeval tv = {(time_t)(ms_left / 1000), (suseconds_t)(ms_left % 1000 * 1000)};
	long long ns = now->tv_nsec + ms_left % 1000 * 1000000;
	r->timer_at.tv_sec = now->tv_sec + (time_t)(ms_left / 1000 + ns / 1000000000);
	r->timer_at.tv_nsec = (long)(ns % 1000000000);
	event_add(r->timer, &tv);
	r->timer_pending = 1;
}

/* The request's deadline, ms from now. A reused request's timer stays
 * added from request to request (upstream->spare): it is added again only
 * when it would go off after this deadline, and when it goes off early it
 * waits for the rest (req_timer_cb). Finishing just stops the deadline
 * counting (timed = 0). An event_add and an event_del fewer per call. The
 * clock is monotonic: wall-clock steps move no deadline. */
static void deadline_start(struct upstream_req *r, unsigned ms)
{
	struct timespec now;
	clock_mono_coarse(&now);
	long long ns = now.tv_nsec + (long long)(ms % 1000) * 1000000;
	r->due.tv_sec = now.tv_sec + (time_t)(ms / 1000 + ns / 1000000000);
	r->due.tv_nsec = (long)(ns % 1000000000);
	r->timed = 1;
	if (r->timer_pending && !ts_before(&r->due, &r->timer_at))
		return;
	timer_arm_at(r, &now, ms);
}

/* Before a request's memory is freed: its timer may still be added. */
static void req_forget(struct upstream_req *r)
{
	if (r->timer_pending)
		event_del(&r->timer_ev);
	r->timer_pending = 0;
}

static void req_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_req *r = arg;
	struct timespec now;
	(void)fd;
	(void)what;
	r->timer_pending = 0;
	if (!r->timed)
		return; /* finished, streaming, or kept for reuse */
	clock_mono_coarse(&now);
	if (ts_before(&now, &r->due)) {
		long long left = (long long)(r->due.tv_sec - now.tv_sec) * 1000 +
		                 (r->due.tv_nsec - now.tv_nsec) / 1000000 + 1;
		timer_arm_at(r, &now, left);
		return;
	}
	req_fail(r, UPSTREAM_ERR_TIMEOUT, "the upstream did not answer in time");
}

static void req_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_req *r = arg;
	(void)fd;
	(void)what;
	r->kicked = 0;
	if (r->pending_err) {
		req_fail(r, r->pending_err, r->pending_detail);
		return;
	}
	if (r->uc && !r->finished)
		req_process_input(r);
	if (r->uc && !r->finished && !r->paused && r->held_event) {
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
		r->in_info = 1;
		return 0;
	}
	if (r->cbs->on_head(r->arg, m) < 0)
		return -1;
	return r->head_only ? 1 : 0;
}

static int uc_on_body(void *arg, const char *data, size_t len)
{
	struct upconn *uc = arg;
	struct upstream_req *r = uc->req;
	if (!r || r->in_info)
		return 0;
	return r->cbs->on_body(r->arg, data, len) < 0 ? -1 : 0;
}

static const struct http_parser_cbs upconn_parser_cbs = {uc_on_headers, uc_on_body};

/* ---- public -------------------------------------------------------------- */

struct upstream *upstream_new(struct px_ctx *ctx, const struct px_upstream_conf *conf,
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
	u->ctx = ctx;
	u->conf = conf;
	memcpy(&u->addr, res->ai_addr, res->ai_addrlen);
	u->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	if (conf->tls) {
		struct tls_client_opts o = {conf->tls_ca_file, conf->tls_cert_file, conf->tls_key_file,
		                            conf->tls_insecure_skip_verify};
		u->tls = tls_client_ctx_new(&o, errbuf, errlen);
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
	if (u->spare)
		req_forget(u->spare);
	free(u->spare);
	free(u);
}

const struct px_upstream_conf *upstream_conf(const struct upstream *u)
{
	return u->conf;
}

void upstream_set_conf(struct upstream *u, const struct px_upstream_conf *conf)
{
	u->conf = conf;
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
	struct upstream_req *r = u->spare;
	if (r) {
		u->spare = NULL;
		memset(r, 0, offsetof(struct upstream_req, assigned));
	} else {
		r = calloc(1, sizeof(*r));
	}
	if (!r || head_len > sizeof(r->head)) {
		if (r && !u->spare)
			u->spare = r;
		else
			free(r);
		evbuffer_free(request);
		return NULL;
	}
	r->up = u;
	if (head_len)
		memcpy(r->head, head, head_len);
	r->head_len = head_len;
	r->request = request;
	r->cbs = cbs;
	r->arg = arg;
	r->head_only = head_only;
	r->replayable = request_replayable(r);
	if (!r->assigned &&
	    (evtimer_assign(&r->timer_ev, u->ctx->base, req_timer_cb, r) < 0 ||
	     event_assign(&r->kick_ev, u->ctx->base, -1, 0, req_kick_cb, r) < 0)) {
		upstream_req_free(r);
		return NULL;
	}
	r->assigned = 1;
	r->timer = &r->timer_ev;
	r->kick = &r->kick_ev;
	struct upconn *uc = pool_get(u);
	int rc = uc ? req_attach(r, uc) : req_start_fresh(r);
	if (rc < 0) {
		if (uc && r->uc == NULL)
			upconn_free(uc);
		/* Report asynchronously: callers never see a callback from here. */
		r->pending_err = UPSTREAM_ERR_CONNECT;
		r->pending_detail = "cannot open a connection";
		r->kicked = 1;
		event_active(r->kick, 0, 0);
		return r;
	}
	if (u->conf->request_timeout_ms)
		deadline_start(r, u->conf->request_timeout_ms);
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
		int reusable = r->complete && !r->distrusted && http_msg_keep_alive(m) &&
		               evbuffer_get_length(bufferevent_get_input(uc->bev)) == 0 &&
		               evbuffer_get_length(bufferevent_get_output(uc->bev)) == 0;
		uc->req = NULL;
		if (reusable)
			pool_put(uc);
		else
			upconn_free(uc);
	}
	/* Each event_del is ~80 instructions even when nothing is pending. */
	r->timed = 0;
	if (r->kick && r->kicked)
		event_del(r->kick);
	struct evbuffer *request = r->request;
	struct upstream *u = r->up;
	if (!u->spare) {
		u->spare = r; /* its timer may stay added: it finds nothing due */
	} else {
		req_forget(r);
		free(r);
	}
	return request;
}

void upstream_req_pause(struct upstream_req *r)
{
	if (r->paused || !r->uc)
		return;
	r->paused = 1;
	sockread_disable(r->uc->rd);
}

void upstream_req_resume(struct upstream_req *r)
{
	if (!r->paused)
		return;
	r->paused = 0;
	if (!r->uc || r->finished)
		return;
	sockread_enable(r->uc->rd);
	/* Bytes read before the pause are parsed from the loop, not from
	 * inside the caller's stack. */
	if (evbuffer_get_length(bufferevent_get_input(r->uc->bev)) || r->held_event) {
		r->kicked = 1;
		event_active(r->kick, 0, 0);
	}
}

void upstream_req_distrust(struct upstream_req *r)
{
	r->distrusted = 1;
}

void upstream_req_stream(struct upstream_req *r)
{
	r->streaming = 1;
	r->timed = 0;
}

/* conn: see conn.h.
 *
 * Every exit goes through conn_close_after_flush() or conn_free(); the
 * handler's calls (reply end, abort) only change the state or mark the
 * conn and activate `step`, which runs from the loop once the handler's
 * stack has unwound. The end is reported to the owner (struct
 * conn_owner), the body of conn's own refusals comes from the handler
 * (->error_body): nothing here calls up.
 *
 * Why this file is long (over 800 lines, on purpose): one state machine (parse, reply framing,
 * the direct writes, EOF and the handoff) whose parts all read and change
 * struct conn's state and flags; split, that struct would have to leave
 * this file. The handoff between workers is the first part to move if
 * it grows.
 */
#include "proxy/net/conn.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/ssl.h>

#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/net/deadline.h"
#include "proxy/net/http_parse.h"
#include "proxy/net/http_resp.h"
#include "proxy/net/inbox.h"
#include "proxy/base/log.h"
#include "proxy/net/peers.h"
#include "proxy/net/sockread.h"
#include "proxy/net/transport.h"
#include "proxy/base/clock.h"
#include "proxy/base/flagnames.h"

#define CONN_MAGIC 0x636f6e6eu /* "conn" */

/* What holds in each state. Changes go through conn_set_state, which
 * asserts the transitions of conn_next_states:
 *
 *          first byte          complete request         head
 *   IDLE -------------> READING ---------------> HANDLING ----> REPLYING
 *    ^  |                  |                          |             |
 *    |  | refused          | refused, EOF        end  |        end  |
 *    |  +--------------> CLOSING <-----+              v             |
 *    |                                 +-last------ REPLIED <-------+
 *    +--------------------keep-alive----------------/
 *
 * A conn is freed from any state (the client left, an abort, a drain);
 * conn_abort marks it (CF_ABORTING) in whatever state it is, and the
 * deferred step frees it.
 */
enum conn_state {
	CONN_IDLE,     /* between requests: no byte of the next one parsed, no
	                * exchange, no header/body deadline armed (dl); the
	                * idle timeout (idle) runs */
	CONN_READING,  /* a request's head or body is arriving: the parser has
	                * started; the header or body deadline is armed (or
	                * CF_BODY_DEADLINE_DUE); no exchange yet */
	CONN_HANDLING, /* the request is the handler's (ex, once ->start
	                * returned) and no reply byte is written; the parser
	                * is paused and input is only watched for the client
	                * leaving or flooding (so in the next two as well) */
	CONN_REPLYING, /* the reply's head is written (reply_status; framing
	                * in CF_CHUNKED, CF_STREAM_REPLY); body bytes may follow */
	CONN_REPLIED,  /* the reply is complete and queued (conn_reply_end);
	                * the deferred step frees the exchange and goes on to
	                * the next request, or closes */
	CONN_CLOSING,  /* no exchange; the last bytes are queued, nothing is
	                * read; freed once they are written */
};

/* Allowed next states, by state (a bit per state). HANDLING -> REPLIED:
 * a handler may end a reply it never began (conn_reply_json when its head
 * could not be written). */
static const unsigned conn_next_states[] = {
	[CONN_IDLE] = 1u << CONN_READING | 1u << CONN_CLOSING,
	[CONN_READING] = 1u << CONN_HANDLING | 1u << CONN_CLOSING,
	[CONN_HANDLING] = 1u << CONN_REPLYING | 1u << CONN_REPLIED,
	[CONN_REPLYING] = 1u << CONN_REPLIED,
	[CONN_REPLIED] = 1u << CONN_IDLE | 1u << CONN_CLOSING,
	[CONN_CLOSING] = 0,
};

/* One bit each of struct conn's flags word: facts orthogonal to the state
 * (CF_PLAIN, CF_COUNTED for the conn's life; the others for one request,
 * its reply, or a pending deferred event). */
enum conn_flag {
	CF_PLAIN = 1u << 0,             /* no TLS: direct writes possible */
	CF_COUNTED = 1u << 1,           /* counted in ctx->proc->peers */
	CF_TIMEOUTS_SET = 1u << 2,      /* the idle timeouts (idle, bev's write) are timeouts_ms */
	/* The head is complete: the body deadline starts, unless the body
	 * completes in the same feed (most requests), which then sets and
	 * clears no deadline. */
	CF_BODY_DEADLINE_DUE = 1u << 3,
	CF_REQ_HEAD = 1u << 4,          /* the request is a HEAD: no body goes out */
	CF_CLOSE_AFTER = 1u << 5,       /* this reply is the connection's last */
	CF_CHUNKED = 1u << 6,           /* the reply is sent with Transfer-Encoding: chunked */
	CF_STREAM_REPLY = 1u << 7,      /* ... its length is not known ahead */
	CF_FLUSH_DUE = 1u << 8,         /* flush_ev is active */
	CF_OUTPUT_FULL = 1u << 9,       /* output went over its cap: ->drained owed */
	CF_ABORTING = 1u << 10,         /* conn_abort: nothing more written, step frees */
	/* The client's side of the connection ended (EOF) while its request
	 * was in flight: it may have only half-closed (shutdown(SHUT_WR))
	 * and still read. Nothing more is read; the reply is written, then
	 * the connection closes (see client_eof). */
	CF_PEER_EOF = 1u << 11,
	CF_HANDED_OFF = 1u << 12,       /* socket and TLS state went to another worker */
	CF_HANDED_IN = 1u << 13,        /* the buffered request came from one: run it here */
};
#define CONN_NFLAGS 14 /* the last flag is 1u << (CONN_NFLAGS - 1) */

/* Three are in use at once per call (the request's body the upstream
 * request holds, the JSON reply, the next request's body), a fourth for a
 * moment (transport_http's room for a head too large to keep apart). The
 * next request's body is taken only once the exchange ended (step), so
 * during a call the spares hold that one too: with four, one buffer was
 * freed and made again on every call (+247 instructions per call,
 * tests/bench/profile.sh bare). */
#define CONN_SPARE_BUFFERS 5
/* A pending head's room: the usual reply head is a few hundred bytes;
 * a larger one goes through staged. 952, not 1024: struct conn then fits
 * jemalloc's 1,536-byte class instead of the 1,792 one, 256 bytes less
 * per open connection (an idle SSE stream holds one; make bench-streams). */
#define CONN_HEAD_MAX 952
/* A pending head and the first staged chains, written at once. */
#define CONN_WRITE_IOV 8

struct conn {
	unsigned magic;
	struct px_ctx *ctx;             /* borrowed */
	struct bufferevent *bev;        /* owned */
	struct sockread *rd;            /* owned: bev's read side */
	struct event *step;             /* owned: deferred next step */
	struct event *flush_ev;         /* owned: a stream's bytes out, once a turn */
	struct deadline *dl;            /* owned: header/body deadline (slowloris) */
	/* owned: the read side's idle timeout, timeouts_ms without a byte
	 * read while reading is on (read_on, read_off), pushed on by each
	 * read; it ends a keep-alive connection left idle. */
	struct deadline *idle;
	unsigned timeouts_ms;           /* the idle timeouts, if CF_TIMEOUTS_SET */
	struct http_parser *parser;     /* owned */
	struct evbuffer *body;          /* owned: request body being read; NULL
	                                 * from dispatch to the next IDLE */
	struct exchange *ex;            /* owned through ops->free */
	const struct transport_ops *ops;
	const struct conn_owner *owner; /* static: hears of the end */
	struct conn *next, *prev;       /* ctx->conns list */
	enum conn_state state;          /* changed by conn_set_state only */
	unsigned flags;                 /* enum conn_flag */
	unsigned long long id;
	char peer[64];
	/* Key in ctx->proc->peers: the adapter's name and the address. Each listener
	 * (client, admin) gives an address its own share of
	 * limits.max_connections_per_client, so a flood of admin connections
	 * from 127.0.0.1 cannot lock MCP clients on 127.0.0.1 out, and the
	 * reverse; each share is still capped. */
	char share[96];
	int reject_status;              /* set by a parser callback that refused */
	const char *reject_note;        /* static: why, for the log and the client */
	struct event *probe_ev;         /* owned, or NULL: watches probe_fd */
	/* After a client's EOF (CF_PEER_EOF): a dup of the socket watched
	 * edge-triggered for
	 * the reset that tells a client that closed from one that only
	 * half-closed (-1: none). */
	evutil_socket_t probe_fd;
	int req_version;                /* 10 or 11: the current request's */
	enum http_method_id req_method; /* the current request's */
	int reply_status;               /* the reply's, from CONN_REPLYING on */
	struct evbuffer *preload;       /* owned, or NULL: bytes handed over, read before bev's */
	/* Reply bytes not yet handed to bev: written to the socket at once
	 * when nothing is queued before them (flush()), which spares the loop
	 * a writability round trip (two epoll_ctl and an epoll_wait) per
	 * reply; only what the socket does not take goes through bev. */
	struct evbuffer *staged;        /* owned */
	/* A reply head not yet in staged: it goes out in front of staged's
	 * bytes in one sendmsg (flush_head), without a chain allocated and
	 * freed in staged for it. Only on plain connections, only while
	 * staged is empty when the head is made. */
	size_t head_len;
	char head[CONN_HEAD_MAX];
	/* Empty evbuffers kept for the next request (conn_buffer_get): a
	 * call used four, each an allocation and a free (of the evbuffer
	 * and its lock and callback state) that a kept one spares. Kept per
	 * connection, not per worker: MCP clients keep their connection, and
	 * a conn needs no lock. */
	struct evbuffer *spare[CONN_SPARE_BUFFERS]; /* owned */
	unsigned nspare;
	const char *abort_reason;
	uint64_t start_us, bytes_in, bytes_out;
	uint64_t first_us;              /* a head's first byte, when it came in pieces; or 0 */
	/* The message of the proxy's own 4xx error reply to this request
	 * (conn_reply_error, read by conn_reply_note), copied: the caller's
	 * string is gone by the time the exchange logs. Empty: none. */
	char reply_note[128];
};

/* See CONN_HEAD_MAX: a field more moves every connection up a class. */
_Static_assert(sizeof(struct conn) <= 1536 || sizeof(void *) != 8,
               "struct conn fits jemalloc's 1,536-byte class");

static const char *const conn_state_names[] = {
	[CONN_IDLE] = "idle",
	[CONN_READING] = "reading",
	[CONN_HANDLING] = "handling",
	[CONN_REPLYING] = "replying",
	[CONN_REPLIED] = "replied",
	[CONN_CLOSING] = "closing",
};

const char *conn_state_str(const struct conn *c)
{
	return conn_state_names[c->state];
}

const char *conn_flags_str(const struct conn *c, char *buf, size_t len)
{
	static const char *const names[] = {
		"plain", "counted", "timeouts-set", "body-deadline-due",
		"req-head", "close-after", "chunked", "stream-reply", "flush-due", "output-full",
		"aborting", "peer-eof", "handed-off", "handed-in",
	};

	_Static_assert(sizeof(names) / sizeof(names[0]) == CONN_NFLAGS, "a name per conn_flag");
	_Static_assert(CF_HANDED_IN == 1u << (CONN_NFLAGS - 1), "CONN_NFLAGS is the count");
	return flagnames_str(c->flags, names, CONN_NFLAGS, buf, len);
}

/* Every state change: the table above says which are possible. */
static void conn_set_state(struct conn *c, enum conn_state to)
{
	assert(conn_next_states[c->state] & (1u << to));
	c->state = to;
}

/* The request is the handler's (HANDLING, REPLYING, REPLIED). */
static inline int handling(const struct conn *c)
{
	return c->state >= CONN_HANDLING && c->state <= CONN_REPLIED;
}

static inline void flag_put(struct conn *c, unsigned f, int on)
{
	c->flags = on ? c->flags | f : c->flags & ~f;
}

/* Frees a bufferevent made without BEV_OPT_CLOSE_ON_FREE (so that a
 * handoff can keep the socket and its TLS state): closes them too, unless
 * they now belong to another worker. */
static void bev_release(struct bufferevent *bev, int keep)
{
	evutil_socket_t fd = bufferevent_getfd(bev);
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	bufferevent_free(bev);
	if (keep)
		return;
	if (ssl)
		SSL_free(ssl);
	if (fd >= 0)
		evutil_closesocket(fd);
}

/* The idle timeout, both ways, set once and again only when a reload
 * changed it: setting bev's write timeout re-adds its events, work that
 * twice per request would redo for nothing. The read side's is c->idle
 * (a pending read takes a new one at once, as a bufferevent's does).
 * While the adapter runs, a quiet client is normal (a long tool call, a
 * GET stream): event_cb lets a read timeout pass then; only a client that
 * stops reading its reply is cut. */
static void set_timeouts(struct conn *c)
{
	unsigned ms = c->ctx->cfg->timeouts.client_idle_ms;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	if ((c->flags & CF_TIMEOUTS_SET) && c->timeouts_ms == ms)
		return;
	bufferevent_set_timeouts(c->bev, NULL, ms ? &tv : NULL);
	c->timeouts_ms = ms;
	c->flags |= CF_TIMEOUTS_SET;
	if (sockread_enabled(c->rd))
		deadline_set(c->idle, ms);
}

/* Reading starts (or restarts): so does the idle timeout, as a read
 * side's did at every enable. 0, or -1. */
static int read_on(struct conn *c)
{
	deadline_set(c->idle, c->timeouts_ms);
	return sockread_enable(c->rd);
}

static void read_off(struct conn *c)
{
	sockread_disable(c->rd);
	deadline_clear(c->idle);
}

static void conn_free(struct conn *c)
{
	assert(c->magic == CONN_MAGIC);
	if (c->ex) {
		c->ops->free(c->ex, c->abort_reason ? c->abort_reason : "client connection closed");
		c->ex = NULL;
	}
	struct px_ctx *ctx = c->ctx;
	if (c->prev)
		c->prev->next = c->next;
	else
		ctx->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	ctx->nconns--;
	if (c->ops->low_priority)
		ctx->nconns_low--;
	/* A handed-off connection keeps its place: it moved, it did not end. */
	int moved = (c->flags & CF_HANDED_OFF) != 0;
	const struct conn_owner *owner = c->owner;
	if (c->flags & CF_COUNTED)
		peers_remove(ctx->proc->peers, c->share);
	deadline_free(c->dl);
	deadline_free(c->idle);
	if (c->probe_ev)
		event_free(c->probe_ev);
	if (c->probe_fd >= 0)
		close(c->probe_fd);
	sockread_free(c->rd);
	if (c->bev)
		bev_release(c->bev, (c->flags & CF_HANDED_OFF) != 0);
	if (c->step)
		event_free(c->step);
	if (c->flush_ev)
		event_free(c->flush_ev);
	http_parser_free(c->parser);
	if (c->body)
		evbuffer_free(c->body);
	if (c->preload)
		evbuffer_free(c->preload);
	if (c->staged)
		evbuffer_free(c->staged);
	while (c->nspare)
		evbuffer_free(c->spare[--c->nspare]);
	c->magic = 0;
	free(c);
	owner->closed(ctx, moved);
}

/* The pending head, with what staged holds after it, straight to the
 * socket when nothing is queued in bev; what the socket does not take
 * goes back in front of staged. A write error is left for bev to meet on
 * its own next write, as evbuffer_write's would be. */
static void flush_head(struct conn *c, struct evbuffer *out)
{
	struct evbuffer_iovec v[CONN_WRITE_IOV - 1];
	struct iovec iov[CONN_WRITE_IOV];
	size_t len = c->head_len, sent = 0;

	c->head_len = 0;
	if (evbuffer_get_length(out) == 0) {
		int n = evbuffer_peek(c->staged, -1, NULL, v, CONN_WRITE_IOV - 1);
		if (n > CONN_WRITE_IOV - 1)
			n = CONN_WRITE_IOV - 1;
		iov[0] = (struct iovec){c->head, len};
		for (int i = 0; i < n; i++)
			iov[i + 1] = (struct iovec){v[i].iov_base, v[i].iov_len};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)(n > 0 ? n : 0) + 1};
		ssize_t w = sendmsg(bufferevent_getfd(c->bev), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		sent = w > 0 ? (size_t)w : 0;
	}
	if (sent >= len)
		evbuffer_drain(c->staged, sent - len);
	else
		evbuffer_prepend(c->staged, c->head + sent, len - sent);
}

/* Hands what is staged to the socket, or to bev when something is queued
 * there already (order) or the socket does not take it all. A write
 * error is left for bev to meet on its own next write. */
static void flush(struct conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	if (c->head_len)
		flush_head(c, out);
	if (evbuffer_get_length(c->staged) == 0)
		return;
	if ((c->flags & CF_PLAIN) && evbuffer_get_length(out) == 0)
		evbuffer_write(c->staged, bufferevent_getfd(c->bev));
	if (evbuffer_get_length(c->staged))
		bufferevent_write_buffer(c->bev, c->staged);
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	(void)fd;
	(void)what;
	c->flags &= ~CF_FLUSH_DUE;
	flush(c);
}

/* A stream's pieces (head, events, end) go out together when they come in
 * the same loop turn, as they do for a short SSE reply: one write, not one
 * per piece (each a syscall and a wake-up of the client). The head of a
 * long stream still leaves at the end of the turn that made it. */
static void flush_soon(struct conn *c)
{
	if (!(c->flags & CF_STREAM_REPLY)) {
		flush(c);
		return;
	}
	if (!(c->flags & CF_FLUSH_DUE)) {
		c->flags |= CF_FLUSH_DUE;
		event_active(c->flush_ev, 0, 0);
	}
}

/* Send what is queued, then close. */
static void conn_close_after_flush(struct conn *c)
{
	flush(c);
	conn_set_state(c, CONN_CLOSING);
	read_off(c);
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		conn_free(c);
		return;
	}
	bufferevent_enable(c->bev, EV_WRITE);
}

/* ---- request parsing ----------------------------------------------------- */

/* Headers the proxy decides on (Host, the allow-lists' Origin, the
 * client token, the session it routes by, the era it answers in, what
 * the body is) that must come once: with two, the proxy would judge the
 * first while the upstream may act on the other (RFC 9110 §5.3: none of
 * them is a list). Identical repeats too: no client sends them, and
 * refusing every repeat leaves nothing to compare or normalise. The
 * 2026 headers Mcp-Method and Mcp-Name are held to the same by mirror.c
 * (-32020); Content-Length by llhttp. */
static const struct {
	enum http_hdr_id id;
	const char *note;
} once_headers[] = {
	{HH_MCP_SESSION_ID, "repeated Mcp-Session-Id header"},
	{HH_MCP_PROTOCOL_VERSION, "repeated MCP-Protocol-Version header"},
	{HH_AUTHORIZATION, "repeated Authorization header"},
	{HH_ORIGIN, "repeated Origin header"},
	{HH_CONTENT_TYPE, "repeated Content-Type header"},
	{HH_LAST_EVENT_ID, "repeated Last-Event-ID header"},
};

/* A complete head the HTTP layer refuses before any adapter sees it.
 * Returns 0, or 1 with reject_status and reject_note set. */
static int head_refused(struct conn *c, const struct http_msg *m)
{
	/* mcpwarden is no forward proxy: there is nothing to tunnel to. */
	if (http_msg_method_id(m) == HM_CONNECT) {
		c->reject_status = 405;
		c->reject_note = "CONNECT: mcpwarden is not a forward proxy";
		return 1;
	}
	/* RFC 9112 §3.2: 400, before the Host allow-list could say 403. */
	if (http_msg_version(m) == 11 && !http_msg_get(m, HH_HOST)) {
		c->reject_status = 400;
		c->reject_note = "missing Host header";
		return 1;
	}
	/* Heads seldom repeat a known name: one test, then the walk. */
	if (!http_msg_repeats(m))
		return 0;
	for (size_t i = 0; i < sizeof(once_headers) / sizeof(once_headers[0]); i++)
		if (http_msg_repeated(m, once_headers[i].id)) {
			c->reject_status = 400;
			c->reject_note = once_headers[i].note;
			return 1;
		}
	return 0;
}

static int on_req_headers(void *arg, const struct http_msg *m)
{
	struct conn *c = arg;
	const struct px_config *cfg = c->ctx->cfg;
	int64_t cl = http_msg_content_length(m);

	c->start_us = clock_mono_us();
	c->flags |= CF_BODY_DEADLINE_DUE; /* armed by parse_input unless the body is in */
	if (cl > 0 && (uint64_t)cl > cfg->limits.max_body_bytes) {
		c->reject_status = 413;
		return -1;
	}
	if (head_refused(c, m))
		return -1;
	const char *expect = http_msg_get(m, HH_EXPECT);
	if (expect && strcasecmp(expect, "100-continue") == 0 && http_msg_version(m) >= 11)
		bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	return 0;
}

static int on_req_body(void *arg, const char *data, size_t len)
{
	struct conn *c = arg;
	if (evbuffer_get_length(c->body) + len > c->ctx->cfg->limits.max_body_bytes)
		return -2;
	return evbuffer_add(c->body, data, len) == 0 ? 0 : -1;
}

static const struct http_parser_cbs req_cbs = {on_req_headers, on_req_body};

/* The access line of a request refused before any adapter saw it, in
 * the shape of every other (log_access): what is known of it (method and
 * path once parsed; the path only in origin form, so that a target that
 * failed to parse, credentials and all, is never logged), and why. */
static void log_refusal(struct conn *c, int status, const char *note)
{
	const struct http_msg *m = http_parser_msg(c->parser);
	const char *url = http_msg_url(m);
	char path[256];
	uint64_t now = clock_mono_us();

	if (!log_enabled(LOG_INFO))
		return;
	http_url_path(path, sizeof(path), url);
	struct log_access a = {
		.conn_id = c->id,
		.client = c->peer,
		.http_method = http_msg_method(m)[0] ? http_msg_method(m) : NULL,
		.path = url[0] == '/' || (url[0] == '*' && !url[1]) ? path : NULL,
		.status = status,
		.latency_us = c->first_us && now > c->first_us ? now - c->first_us : 0,
		.bytes_in = c->bytes_in,
		.bytes_out = c->bytes_out,
		.note = note,
	};
	log_access(&a);
}

/* The refusal's head and body into out (Connection: close: conn closes
 * after it), the body from the handler (->error_body). Returns 0, or -1
 * when nothing could be written. */
static int put_refusal(struct conn *c, struct evbuffer *out, int status, enum conn_refusal why,
                       const char *text, const char *extra)
{
	struct evbuffer *body = evbuffer_new();
	const char *type = NULL;
	int rc = -1;

	if (!body)
		return -1;
	if (c->ops->error_body)
		type = c->ops->error_body(status, why, text, body);
	else if (evbuffer_add_printf(body, "%s\n", text) >= 0)
		type = "text/plain; charset=utf-8";
	if (type && http_resp_status_line(out, 11, status) == 0 &&
	    evbuffer_add_printf(out, "%sContent-Type: %s\r\nContent-Length: %zu\r\n"
	                             "Connection: close\r\n\r\n",
	                        extra ? extra : "", type, evbuffer_get_length(body)) >= 0 &&
	    evbuffer_add_buffer(out, body) == 0)
		rc = 0;
	evbuffer_free(body);
	return rc;
}

/* Answers a request the HTTP layer refuses, logs it, closes. message is
 * what the client reads (static); note (static, NULL: message) says why in
 * more words, to the client and in the log; neither holds a byte the
 * client sent. extra: header lines, or NULL. */
static void reject_with(struct conn *c, int status, enum conn_refusal why, const char *message,
                        const char *note, const char *extra)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	char text[256];

	if (note && strcmp(note, message) != 0)
		snprintf(text, sizeof(text), "%s: %s", message, note);
	else
		snprintf(text, sizeof(text), "%s", message);
	size_t before = evbuffer_get_length(out);

	PX_STAT_INC(c->ctx, bad_requests);
	if (status == 413)
		PX_STAT_INC(c->ctx, too_large);
	put_refusal(c, out, status, why, text, extra);
	c->bytes_out += evbuffer_get_length(out) - before;
	log_refusal(c, status, note ? note : message);
	conn_close_after_flush(c);
}

static void reject(struct conn *c, int status, enum conn_refusal why, const char *message)
{
	reject_with(c, status, why, message, NULL, NULL);
}

/* ---- handoff between workers ------------------------------------------------ */

/* A request that belongs to another worker (it names a translated session
 * that worker holds) moves there with its connection: the socket, its TLS
 * state, and the request re-serialised with what followed it, which the
 * new owner parses as if it had just arrived. */
struct handoff {
	struct px_ctx *to;
	const struct transport_ops *ops;
	const struct conn_owner *owner;
	evutil_socket_t fd;
	SSL *ssl;                 /* owned, or NULL */
	struct evbuffer *in;      /* owned: bytes to parse first */
	struct evbuffer *out;     /* owned: bytes still to write (100 Continue) */
};

static void handoff_drop(void *arg)
{
	struct handoff *h = arg;
	if (h->ssl)
		SSL_free(h->ssl);
	evutil_closesocket(h->fd);
	h->owner->closed(h->to, 0); /* it ended in transit: its place is free */
	evbuffer_free(h->in);
	evbuffer_free(h->out);
	free(h);
}

static struct conn *conn_open(struct px_ctx *ctx, evutil_socket_t fd, SSL *ssl, int ssl_state,
                              const struct sockaddr *sa, const struct transport_ops *ops,
                              const struct conn_owner *owner);
static void parse_input(struct conn *c);
static struct evbuffer *input_of(struct conn *c);

static void handoff_run(void *arg)
{
	struct handoff *h = arg;
	struct sockaddr_storage ss = {0};
	socklen_t sl = sizeof(ss);

	getpeername(h->fd, (struct sockaddr *)&ss, &sl);
	struct conn *c = conn_open(h->to, h->fd, h->ssl, BUFFEREVENT_SSL_OPEN,
	                           (struct sockaddr *)&ss, h->ops, h->owner);
	if (c) {
		bufferevent_write_buffer(c->bev, h->out);
		/* A bufferevent's input only takes what it reads itself: the
		 * request waits in front of it. */
		c->preload = h->in;
		h->in = NULL;
		c->flags |= CF_HANDED_IN;
		parse_input(c);
	}
	if (h->in)
		evbuffer_free(h->in);
	evbuffer_free(h->out);
	free(h);
}

static int put_request(struct evbuffer *dst, const struct http_msg *m, struct evbuffer *body)
{
	int rc = evbuffer_add_printf(dst, "%s %s HTTP/1.%d\r\n", http_msg_method(m), http_msg_url(m),
	                             http_msg_version(m) == 10 ? 0 : 1) < 0;
	const char *n, *v;
	size_t nl, vl;
	for (size_t i = 0; http_msg_header_at(m, i, &n, &nl, &v, &vl) == 0; i++) {
		/* The body goes with a Content-Length of its own; 100 Continue
		 * was answered here already. */
		if ((nl == 14 && strncasecmp(n, "content-length", 14) == 0) ||
		    (nl == 17 && strncasecmp(n, "transfer-encoding", 17) == 0) ||
		    (nl == 6 && strncasecmp(n, "expect", 6) == 0))
			continue;
		rc |= evbuffer_add_printf(dst, "%.*s: %.*s\r\n", (int)nl, n, (int)vl, v) < 0;
	}
	rc |= evbuffer_add_printf(dst, "Content-Length: %zu\r\n\r\n", evbuffer_get_length(body)) < 0;
	rc |= evbuffer_add_buffer(dst, body);
	return rc ? -1 : 0;
}

/* What followed the request: its preload (itself handed over) first. */
static int move_input(struct conn *c, struct evbuffer *dst)
{
	if (c->preload && evbuffer_add_buffer(dst, c->preload) < 0)
		return -1;
	return evbuffer_add_buffer(dst, bufferevent_get_input(c->bev));
}

/* A bufferevent's output cannot be drained from outside: copied. */
static int copy_output(struct conn *c, struct evbuffer *dst)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	size_t n = evbuffer_get_length(out);
	if (n == 0)
		return 0;
	char *tmp = malloc(n);
	int rc = tmp && evbuffer_copyout(out, tmp, n) == (ev_ssize_t)n ? evbuffer_add(dst, tmp, n) : -1;
	free(tmp);
	return rc;
}

/* 0: c is gone (freed here), the request runs on `to`. -1: it stays. */
static int handoff(struct conn *c, struct px_ctx *to, const struct http_msg *m)
{
	struct handoff *h = calloc(1, sizeof(*h));
	if (!h)
		return -1;
	h->to = to;
	h->ops = c->ops;
	h->owner = c->owner;
	h->in = evbuffer_new();
	h->out = evbuffer_new();
	if (!h->in || !h->out) {
		if (h->in)
			evbuffer_free(h->in);
		if (h->out)
			evbuffer_free(h->out);
		free(h);
		return -1;
	}
	if (put_request(h->in, m, c->body) < 0 || move_input(c, h->in) < 0 ||
	    copy_output(c, h->out) < 0) {
		/* Part of the request may have moved: it cannot run here either. */
		evbuffer_free(h->in);
		evbuffer_free(h->out);
		free(h);
		conn_abort(c, "out of memory");
		return 0;
	}
	/* Off this loop before the target's sees the socket: no byte may be
	 * read here once the other worker reads. */
	read_off(c);
	bufferevent_disable(c->bev, EV_WRITE);
	h->fd = bufferevent_getfd(c->bev);
	h->ssl = bufferevent_openssl_get_ssl(c->bev);
	c->flags |= CF_HANDED_OFF;
	c->abort_reason = "handed to another worker";
	PX_STAT_INC(c->ctx, handoffs);
	conn_free(c);
	if (inbox_post(to->inbox, handoff_run, handoff_drop, h) < 0)
		handoff_drop(h);
	return 0;
}

static void dispatch(struct conn *c)
{
	const struct http_msg *m = http_parser_msg(c->parser);
	struct evbuffer *body = c->body;

	if (c->ops->route && !(c->flags & CF_HANDED_IN)) {
		struct px_ctx *to = c->ops->route(c->ctx, m);
		if (to && to != c->ctx && handoff(c, to, m) == 0)
			return;
	}
	c->flags &= ~CF_HANDED_IN;

	PX_STAT_INC(c->ctx, requests);
	conn_set_state(c, CONN_HANDLING);
	c->flags &= ~CF_BODY_DEADLINE_DUE;
	deadline_clear(c->dl);
	c->req_version = http_msg_version(m);
	flag_put(c, CF_REQ_HEAD, http_msg_method_id(m) == HM_HEAD);
	flag_put(c, CF_CLOSE_AFTER,
	         !http_msg_keep_alive(m) || c->ctx->draining ||
	                 ((c->flags & CF_PEER_EOF) && evbuffer_get_length(input_of(c)) == 0));
	c->flags &= ~CF_CHUNKED;
	c->req_method = http_msg_method_id(m);
	c->reply_status = 0;
	c->reply_note[0] = '\0';
	/* The next request's body buffer is taken when that request can
	 * begin (step): none is held while this one is handled (a stream may
	 * last hours). */
	c->body = NULL;
	c->ex = c->ops->start(c, m, body);
	if (c->ex && c->state == CONN_REPLIED && c->ops->replied)
		c->ops->replied(c->ex);
}

/* Where the next request bytes are: what a handoff brought, then the
 * socket's. */
static struct evbuffer *input_of(struct conn *c)
{
	if (c->preload && evbuffer_get_length(c->preload) == 0) {
		evbuffer_free(c->preload);
		c->preload = NULL;
	}
	return c->preload ? c->preload : bufferevent_get_input(c->bev);
}

/* The answer to a request the parser, or the head checks, refused. */
static void parse_refused(struct conn *c)
{
	enum http_parse_err e = http_parser_error(c->parser);
	const char *why = http_parser_reason(c->parser); /* static */

	if (c->reject_status == 413 || e == HTTP_ERR_BODY_TOO_BIG)
		reject_with(c, 413, CONN_REFUSED_REQUEST, "request body too large",
		            c->reject_status == 413 ? "Content-Length over limits.max_body_bytes"
		                                    : "body over limits.max_body_bytes",
		            NULL);
	else if (c->reject_status == 405)
		/* RFC 9110 §15.5.6 wants Allow in a 405: a CONNECT's target is
		 * a tunnel's destination, where mcpwarden serves no method at
		 * all, and an empty Allow says so (§10.2.1). */
		reject_with(c, 405, CONN_REFUSED_REQUEST, "method not allowed", c->reject_note,
		            "Allow: \r\n");
	else if (c->reject_status == 400)
		reject_with(c, 400, CONN_REFUSED_REQUEST, "malformed HTTP request", c->reject_note, NULL);
	else if (e == HTTP_ERR_HEADERS_TOO_BIG)
		reject_with(c, 431, CONN_REFUSED_REQUEST, "request headers too large", why, NULL);
	else if (e == HTTP_ERR_VERSION)
		reject_with(c, 505, CONN_REFUSED_REQUEST, "HTTP version not supported",
		            "only HTTP/1.0 and HTTP/1.1", NULL);
	else
		reject_with(c, 400, CONN_REFUSED_REQUEST, "malformed HTTP request", why, NULL);
}

static void parse_input(struct conn *c)
{
	struct evbuffer *in;

	while ((c->state == CONN_IDLE || c->state == CONN_READING) &&
	       evbuffer_get_length(in = input_of(c))) {
		struct evbuffer_iovec vec;
		size_t used;

		if (evbuffer_peek(in, -1, NULL, &vec, 1) < 1)
			return;
		enum http_parse_rc rc = http_parser_feed(c->parser, vec.iov_base, vec.iov_len, &used);
		evbuffer_drain(in, used);
		c->bytes_in += used;
		if (c->state == CONN_IDLE && http_parser_started(c->parser)) {
			conn_set_state(c, CONN_READING);
			/* Unless the whole head came at once (the body deadline
			 * is then armed already), the head has its own, and a
			 * refusal's latency its start (a head read at once is
			 * refused within microseconds: no clock read for it). */
			if (!http_msg_method(http_parser_msg(c->parser))[0]) {
				c->first_us = clock_mono_us();
				deadline_set(c->dl, c->ctx->cfg->timeouts.header_ms);
			}
		}
		if (rc == HTTP_PARSE_MORE && (c->flags & CF_BODY_DEADLINE_DUE)) {
			c->flags &= ~CF_BODY_DEADLINE_DUE;
			deadline_set(c->dl, c->ctx->cfg->timeouts.body_ms);
		}
		if (rc == HTTP_PARSE_ERROR) {
			c->bytes_in += vec.iov_len; /* read, if not consumed */
			parse_refused(c);
			return;
		}
		if (rc == HTTP_PARSE_DONE) {
			dispatch(c);
			return;
		}
	}
	/* The client sent EOF earlier and no whole request is left: done
	 * (a request it cut short can never complete). */
	if (c->flags & CF_PEER_EOF)
		conn_close_after_flush(c);
}

/* ---- a client's EOF while its request runs ---------------------------------- */

/* After client_eof: the watched socket changed. A reset (the probe below
 * met a closed socket) is the client gone: end the exchange as when it
 * closes mid-answer. A plain EOF is what was known already. The error is
 * asked for with SO_ERROR: recv() past a FIN reports the EOF, not it. */
static void probe_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int err = 0;
	socklen_t len = sizeof(err);
	(void)what;
	assert(c->magic == CONN_MAGIC);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		if (!c->abort_reason)
			c->abort_reason = "client closed the connection";
		conn_free(c);
	}
}

/* The client sent EOF (its FIN) with its request in flight. At the socket
 * a half-close (shutdown(SHUT_WR): the client still reads) and a close
 * look alike; HAProxy (without abortonclose) and nginx's own handlers
 * carry on and let a write fail if it is really gone: the answer is
 * written, then the connection closes (nothing more can be read). That
 * alone would keep an upstream call running for a client that left, until
 * its answer; so an HTTP/1.1 client is told "100 Continue" at once (RFC
 * 9110 §15.2: a client MUST parse 1xx it did not ask for): a closed socket
 * answers those bytes with a reset, seen on an edge-triggered watch of a
 * dup of the socket (the bufferevent's own events are level-triggered,
 * and libevent does not mix the two on one descriptor), which cancels the
 * exchange as before. No 1xx may go to an HTTP/1.0 client (§15.2): there
 * the answer's write is what finds a client gone. */
static void client_eof(struct conn *c)
{
	c->flags |= CF_PEER_EOF;
	/* Unless a pipelined request is buffered, this answer is the last. */
	if (evbuffer_get_length(input_of(c)) == 0)
		c->flags |= CF_CLOSE_AFTER;
	if (c->state != CONN_HANDLING || c->req_version < 11 || c->probe_ev)
		return;
	if (!(event_base_get_features(c->ctx->base) & EV_FEATURE_ET))
		return;
	evutil_socket_t fd = bufferevent_getfd(c->bev);
	c->probe_fd = fd >= 0 ? dup(fd) : -1;
	if (c->probe_fd < 0)
		return;
	c->probe_ev = event_new(c->ctx->base, c->probe_fd, EV_READ | EV_ET | EV_PERSIST, probe_cb, c);
	if (!c->probe_ev || event_add(c->probe_ev, NULL) < 0)
		return;
	bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

/* ---- callbacks ------------------------------------------------------------ */

/* A request must arrive within a deadline however its bytes trickle in:
 * the idle timeout alone restarts with every byte (slowloris). The head
 * has timeouts.header_ms from its first byte, the body timeouts.body_ms
 * from the head's end (0: none; deadline_set clears then). */
static void deadline_cb(void *arg)
{
	struct conn *c = arg;
	assert(c->magic == CONN_MAGIC);
	if (c->state == CONN_READING)
		reject(c, 408, CONN_REFUSED_REQUEST, "request not received in time");
}

static void event_cb(struct bufferevent *bev, short what, void *arg);

/* The client sent no byte for timeouts.client_idle_ms while reading was
 * on: as a read side's timeout, reading stops and event_cb hears it (a
 * keep-alive connection idle that long closes, a request arriving that
 * slowly is refused with 408, a call in flight reads on). */
static void idle_cb(void *arg)
{
	struct conn *c = arg;
	assert(c->magic == CONN_MAGIC);
	read_off(c);
	event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, c);
}

static void step_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	(void)fd;
	(void)what;
	assert(c->magic == CONN_MAGIC);
	if (c->flags & CF_ABORTING) {
		PX_STAT_INC(c->ctx, aborted);
		conn_free(c);
		return;
	}
	if (c->state != CONN_REPLIED)
		return;
	if (c->ex) {
		c->ops->free(c->ex, NULL);
		c->ex = NULL;
	}
	if ((c->flags & CF_CLOSE_AFTER) || c->ctx->draining) {
		conn_close_after_flush(c);
		return;
	}
	/* Keep-alive: on to the next request, which may already be buffered.
	 * Byte counts are per exchange. */
	c->bytes_in = c->bytes_out = 0;
	if (!c->body && !(c->body = conn_buffer_get(c))) {
		conn_abort(c, "out of memory");
		return;
	}
	http_parser_reset(c->parser);
	conn_set_state(c, CONN_IDLE);
	c->reject_status = 0;
	c->reject_note = NULL;
	c->first_us = 0;
	set_timeouts(c);
	/* After an EOF, only what was buffered before it is left to serve
	 * (parse_input closes once that is done). */
	if (!(c->flags & CF_PEER_EOF) && !sockread_enabled(c->rd))
		read_on(c);
	parse_input(c);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	deadline_push(c->idle, c->timeouts_ms);
	switch (c->state) {
	case CONN_IDLE:
	case CONN_READING:
		parse_input(c);
		break;
	case CONN_HANDLING:
	case CONN_REPLYING:
	case CONN_REPLIED: {
		/* A pipelined request waits; a client that floods while waiting
		 * is cut off rather than buffered without bound. */
		const struct px_config *cfg = c->ctx->cfg;
		if (evbuffer_get_length(in) > cfg->limits.max_header_bytes + cfg->limits.max_body_bytes)
			conn_abort(c, "client sent too much while waiting");
		break;
	}
	case CONN_CLOSING:
		evbuffer_drain(in, evbuffer_get_length(in));
		break;
	}
}

static void write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->state == CONN_CLOSING) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_free(c);
		return;
	}
	if ((c->flags & CF_OUTPUT_FULL) && !conn_output_full(c)) {
		c->flags &= ~CF_OUTPUT_FULL;
		if (c->ex && !(c->flags & CF_ABORTING))
			c->ops->drained(c->ex);
	}
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	(void)bev;

	/* A TLS handshake finished: nothing to do, requests follow. */
	if (what == BEV_EVENT_CONNECTED)
		return;
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) && handling(c)) {
		/* A client quiet while its call runs: reading stopped, read
		 * on (a close or a pipelined request is still seen). */
		read_on(c);
		return;
	}
	/* The read side stopped at its EOF or error: so does its timeout. */
	if ((what & BEV_EVENT_READING) && (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		deadline_clear(c->idle);
	if (c->state == CONN_READING && (what & BEV_EVENT_TIMEOUT)) {
		reject(c, 408, CONN_REFUSED_REQUEST, "request not received in time");
		return;
	}
	/* A client's EOF while its request is in flight and before its answer
	 * began: it may only have half-closed (nothing more to send, still
	 * reading): the answer is written, then the connection closes.
	 * Mid-answer (a stream), an EOF is the client leaving, as before. */
	if (what == (BEV_EVENT_READING | BEV_EVENT_EOF) && !(c->flags & CF_ABORTING) &&
	    (c->state == CONN_HANDLING || c->state == CONN_REPLIED)) {
		client_eof(c);
		return;
	}
	if (handling(c) && !c->abort_reason)
		c->abort_reason = (what & BEV_EVENT_TIMEOUT) ? "client stopped reading"
		                                             : "client closed the connection";
	conn_free(c);
}

/* ---- public --------------------------------------------------------------- */

struct conn *conn_new(struct px_ctx *ctx, evutil_socket_t fd, const struct sockaddr *sa,
                      int salen, const struct transport_ops *ops,
                      const struct conn_owner *owner, struct ssl_ctx_st *tls)
{
	SSL *ssl = NULL;
	(void)salen;
	if (tls && !(ssl = SSL_new(tls))) {
		evutil_closesocket(fd);
		owner->closed(ctx, 0);
		return NULL;
	}
	return conn_open(ctx, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, sa, ops, owner);
}

/* Takes fd and ssl (NULL: plain TCP) whatever happens. */
static struct conn *conn_open(struct px_ctx *ctx, evutil_socket_t fd, SSL *ssl, int ssl_state,
                              const struct sockaddr *sa, const struct transport_ops *ops,
                              const struct conn_owner *owner)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		if (ssl)
			SSL_free(ssl);
		evutil_closesocket(fd);
		owner->closed(ctx, 0);
		return NULL;
	}
	c->magic = CONN_MAGIC;
	c->ctx = ctx;
	c->ops = ops;
	c->owner = owner;
	c->probe_fd = -1;
	c->id = __atomic_add_fetch(&ctx->proc->next_conn_id, 1, __ATOMIC_RELAXED);
	char ip[INET6_ADDRSTRLEN] = "?";
	const char *addr = ""; /* the address without port, for the share key */
	int port = 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)sa;
		inet_ntop(AF_INET, &in4->sin_addr, ip, sizeof(ip));
		port = ntohs(in4->sin_port);
		snprintf(c->peer, sizeof(c->peer), "%s:%d", ip, port);
		addr = ip;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		port = ntohs(in6->sin6_port);
		snprintf(c->peer, sizeof(c->peer), "[%s]:%d", ip, port);
		addr = ip;
	}
	/* Without BEV_OPT_CLOSE_ON_FREE: bev_release() closes, so that a
	 * handoff can keep the socket and its TLS state. */
	if (ssl) {
		c->bev = bufferevent_openssl_socket_new(ctx->base, fd, ssl,
		                                        (enum bufferevent_ssl_state)ssl_state,
		                                        BEV_OPT_DEFER_CALLBACKS);
		if (!c->bev)
			SSL_free(ssl);
		else
			bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
	} else {
		c->bev = bufferevent_socket_new(ctx->base, fd, BEV_OPT_DEFER_CALLBACKS);
	}
	if (c->bev)
		c->rd = sockread_new(c->bev, ssl == NULL);
	c->step = event_new(ctx->base, -1, 0, step_cb, c);
	c->flush_ev = event_new(ctx->base, -1, 0, flush_cb, c);
	c->dl = deadline_new(ctx->base, deadline_cb, c);
	c->idle = deadline_new(ctx->base, idle_cb, c);
	c->parser = http_parser_new(HTTP_KIND_REQUEST, ctx->cfg->limits.max_header_bytes,
	                            &req_cbs, c);
	c->body = evbuffer_new();
	c->staged = evbuffer_new();
	flag_put(c, CF_PLAIN, ssl == NULL);
	c->next = ctx->conns;
	if (ctx->conns)
		ctx->conns->prev = c;
	ctx->conns = c;
	ctx->nconns++;
	if (ops->low_priority)
		ctx->nconns_low++;
	PX_STAT_INC(ctx, connections);
	if (!c->bev || !c->rd || !c->step || !c->flush_ev || !c->dl || !c->idle || !c->parser || !c->body ||
	    !c->staged) {
		if (!c->bev)
			evutil_closesocket(fd);
		conn_free(c);
		return NULL;
	}
	bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
	if (ops->low_priority) {
		bufferevent_priority_set(c->bev, PX_PRIO_LOW);
		event_priority_set(c->step, PX_PRIO_LOW);
		deadline_set_priority(c->dl, PX_PRIO_LOW);
		deadline_set_priority(c->idle, PX_PRIO_LOW);
	}
	bufferevent_setwatermark(c->bev, EV_WRITE, ctx->cfg->limits.max_output_bytes / 2, 0);
	set_timeouts(c);
	read_on(c);
	bufferevent_enable(c->bev, EV_WRITE);
	snprintf(c->share, sizeof(c->share), "%s %s", ops->name, addr);
	size_t n = peers_add(ctx->proc->peers, c->share);
	flag_put(c, CF_COUNTED, n > 0);
	size_t cap = ctx->cfg->limits.max_connections_per_client;
	if (cap && n > cap) {
		/* Over this address's share: a clear answer, then close; the
		 * access line says which limit. */
		reject_with(c, 503, CONN_REFUSED_REQUEST, "too many connections from this address",
		            "over limits.max_connections_per_client", NULL);
		return NULL;
	}
	return c;
}

void conn_shutdown(struct conn *c)
{
	switch (c->state) {
	case CONN_IDLE:
		conn_free(c);
		break;
	case CONN_READING:
		c->flags |= CF_CLOSE_AFTER;
		break;
	case CONN_HANDLING:
	case CONN_REPLYING:
		c->flags |= CF_CLOSE_AFTER;
		if (c->ex && !(c->flags & CF_ABORTING))
			c->ops->shutdown(c->ex);
		break;
	case CONN_REPLIED:
		c->flags |= CF_CLOSE_AFTER;
		break;
	case CONN_CLOSING:
		break;
	}
}

void conn_destroy(struct conn *c)
{
	if (!c->abort_reason)
		c->abort_reason = "mcpwarden is shutting down";
	conn_free(c);
}

struct conn *conn_next(const struct conn *c)
{
	return c->next;
}

struct px_ctx *conn_ctx(const struct conn *c)
{
	return c->ctx;
}

unsigned long long conn_id(const struct conn *c)
{
	return c->id;
}

const char *conn_peer(const struct conn *c)
{
	return c->peer;
}

uint64_t conn_request_start_us(const struct conn *c)
{
	return c->start_us;
}

uint64_t conn_bytes_in(const struct conn *c)
{
	return c->bytes_in;
}

uint64_t conn_bytes_out(const struct conn *c)
{
	return c->bytes_out;
}

struct evbuffer *conn_buffer_get(struct conn *c)
{
	return c->nspare ? c->spare[--c->nspare] : evbuffer_new();
}

void conn_buffer_put(struct conn *c, struct evbuffer *buf)
{
	if (!buf)
		return;
	/* Drained here: a spare is always empty. Chains still referenced
	 * elsewhere (evbuffer_add_buffer_reference) live on by their own
	 * count. */
	size_t len = evbuffer_get_length(buf);
	if (len)
		evbuffer_drain(buf, len);
	if (c->nspare < CONN_SPARE_BUFFERS)
		c->spare[c->nspare++] = buf;
	else
		evbuffer_free(buf);
}

/* The framing lines after the head's own (Content-Length, chunked,
 * Connection) and the blank line, into tail; notes the reply as begun.
 * Returns the length of tail, or -1 when no head may be written. */
static long reply_framing(struct conn *c, int status, int64_t content_length, char *tail)
{
	int version = c->req_version == 10 ? 10 : 11;
	int no_body = status < 200 || status == 204 || status == 304;
	size_t t = 0;

	if (c->state != CONN_HANDLING || (c->flags & CF_ABORTING))
		return -1;
	conn_set_state(c, CONN_REPLYING);
	c->reply_status = status;
	if (status >= 100 && status < 600)
		PX_STAT_INC(c->ctx, responses_by_class[status / 100]);
	if (no_body) {
		/* no framing */
	} else if (c->flags & CF_REQ_HEAD) {
		if (content_length >= 0)
			t += http_resp_content_length_line(tail + t, (uint64_t)content_length);
	} else if (content_length >= 0) {
		t += http_resp_content_length_line(tail + t, (uint64_t)content_length);
	} else if (version == 11) {
		memcpy(tail + t, "Transfer-Encoding: chunked\r\n", 28);
		t += 28;
		c->flags |= CF_CHUNKED;
	} else {
		c->flags |= CF_CLOSE_AFTER; /* HTTP/1.0: the body ends with the connection */
	}
	if ((c->flags & CF_CLOSE_AFTER) || c->ctx->draining) {
		memcpy(tail + t, "Connection: close\r\n", 19);
		t += 19;
	} else if (version == 10) {
		memcpy(tail + t, "Connection: keep-alive\r\n", 24);
		t += 24;
	}
	memcpy(tail + t, "\r\n", 2);
	return (long)(t + 2);
}

/* A GET answered by a stream is a standalone stream (a session's GET, a
 * legacy /sse): it may stay open for hours, and the buffers kept for the
 * next request's body are not worth their 160 bytes each while it does
 * (make bench-streams). A POST's SSE reply keeps them: it ends with its
 * answer, and the connection's next call takes them. */
__attribute__((noinline, cold)) static void drop_spares(struct conn *c)
{
	while (c->nspare)
		evbuffer_free(c->spare[--c->nspare]);
}

/* The head is in staged (from byte before on), or pending (head_len). */
static void reply_head_written(struct conn *c, int status, int64_t content_length,
                               size_t before)
{
	int no_body = status < 200 || status == 204 || status == 304;

	c->bytes_out += evbuffer_get_length(c->staged) - before + c->head_len;
	/* A reply of known length is written with its body; a stream's head
	 * goes this turn: the client may wait for it long before the first
	 * event. */
	flag_put(c, CF_STREAM_REPLY, content_length < 0 && !no_body);
	if ((c->flags & CF_STREAM_REPLY) && c->req_method == HM_GET)
		drop_spares(c);
	if (c->flags & CF_STREAM_REPLY)
		flush_soon(c);
	else if (no_body)
		flush(c);
}

/* The framing lines after the upstream's: the head goes out in one add
 * (each add is a chain lookup and a callback check). */
#define CONN_TAIL_MAX (HTTP_RESP_CL_LINE_MAX + 64)

int conn_reply_head(struct conn *c, int status, struct evbuffer *headers,
                    int64_t content_length)
{
	size_t before = evbuffer_get_length(c->staged);
	char tail[CONN_TAIL_MAX];
	long t = reply_framing(c, status, content_length, tail);

	if (t < 0)
		return -1;
	http_resp_head(c->staged, c->req_version == 10 ? 10 : 11, status, headers, tail,
	               (size_t)t);
	reply_head_written(c, status, content_length, before);
	return 0;
}

int conn_reply_head_fn(struct conn *c, int status, conn_head_fn *put, void *arg,
                       int64_t content_length)
{
	size_t before = evbuffer_get_length(c->staged);
	char tail[CONN_TAIL_MAX];
	long t = reply_framing(c, status, content_length, tail);
	struct http_headbuf hb;

	if (t < 0)
		return -1;
	http_headbuf_init(&hb, c->staged);
	http_headbuf_status_line(&hb, c->req_version == 10 ? 10 : 11, status);
	if (put)
		put(&hb, arg);
	http_headbuf_add(&hb, tail, (size_t)t);
	if ((c->flags & CF_PLAIN) && before == 0 && !c->head_len && !hb.err &&
	    evbuffer_get_length(c->staged) == 0 && hb.len <= sizeof(c->head)) {
		memcpy(c->head, hb.buf, hb.len);
		c->head_len = hb.len;
	} else {
		http_headbuf_flush(&hb);
	}
	reply_head_written(c, status, content_length, before);
	return 0;
}

int conn_replied(const struct conn *c)
{
	return c->state == CONN_REPLYING || c->state == CONN_REPLIED;
}

int conn_reply_status(const struct conn *c)
{
	return c->reply_status;
}

/* "<len in hex>\r\n" in one add, no printf. Returns 0 or 1 (failed). */
static int chunk_size_line(struct evbuffer *out, size_t len)
{
	char line[2 * sizeof(size_t) + 2], *p = line + sizeof(line);
	*--p = '\n';
	*--p = '\r';
	do {
		*--p = "0123456789abcdef"[len & 0xf];
		len >>= 4;
	} while (len);
	return evbuffer_add(out, p, (size_t)(line + sizeof(line) - p)) != 0;
}

static void note_output(struct conn *c)
{
	if (conn_output_full(c))
		c->flags |= CF_OUTPUT_FULL;
}

int conn_reply_body(struct conn *c, const void *data, size_t len)
{
	struct evbuffer *out = c->staged;
	int rc = 0;

	if (c->state != CONN_REPLYING || (c->flags & (CF_ABORTING | CF_REQ_HEAD)) || len == 0)
		return conn_replied(c) && !(c->flags & CF_ABORTING) ? 0 : -1;
	if (c->flags & CF_CHUNKED)
		rc |= chunk_size_line(out, len);
	rc |= evbuffer_add(out, data, len);
	if (c->flags & CF_CHUNKED)
		rc |= evbuffer_add(out, "\r\n", 2);
	c->bytes_out += len;
	flush_soon(c);
	note_output(c);
	return rc ? -1 : 0;
}

int conn_reply_body_buffer(struct conn *c, struct evbuffer *buf)
{
	struct evbuffer *out = c->staged;
	size_t len = evbuffer_get_length(buf);
	int rc = 0;

	if (c->state != CONN_REPLYING || (c->flags & CF_ABORTING))
		return -1;
	if (len == 0 || (c->flags & CF_REQ_HEAD)) {
		evbuffer_drain(buf, len);
		return 0;
	}
	if (c->flags & CF_CHUNKED)
		rc |= chunk_size_line(out, len);
	rc |= evbuffer_add_buffer(out, buf);
	if (c->flags & CF_CHUNKED)
		rc |= evbuffer_add(out, "\r\n", 2);
	c->bytes_out += len;
	flush_soon(c);
	note_output(c);
	return rc ? -1 : 0;
}

void conn_reply_end(struct conn *c)
{
	if ((c->state != CONN_HANDLING && c->state != CONN_REPLYING) || (c->flags & CF_ABORTING))
		return;
	conn_set_state(c, CONN_REPLIED);
	if ((c->flags & CF_CHUNKED) && !(c->flags & CF_REQ_HEAD))
		evbuffer_add(c->staged, "0\r\n\r\n", 5);
	/* Before the bytes leave (a reply made inside ->start has no
	 * exchange yet: see dispatch). */
	if (c->ex && c->ops->replied)
		c->ops->replied(c->ex);
	flush(c);
	event_active(c->step, 0, 0);
}

/* A 4xx the proxy answers itself carries its reason (the proxy's words:
 * static strings and header names, never a value or a body byte of the
 * client's). Kept for the access line. Cold. */
__attribute__((noinline, cold)) static void note_reply(struct conn *c, const char *message)
{
	snprintf(c->reply_note, sizeof(c->reply_note), "%s", message ? message : "");
}

int conn_reply_error(struct conn *c, int status, const json_t *body, const char *message)
{
	if (status >= 400 && status < 500)
		note_reply(c, message);
	return conn_reply_json(c, status, body);
}

int conn_reply_json(struct conn *c, int status, const json_t *body)
{
	char *s = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
	struct evbuffer *h = evbuffer_new();
	int rc = -1;

	if (s && h) {
		size_t n = strlen(s);
		s[n] = '\n'; /* json_dumps's NUL becomes the trailing newline */
		evbuffer_add(h, "Content-Type: application/json\r\n", 32);
		rc = conn_reply_head(c, status, h, (int64_t)n + 1);
		if (rc == 0)
			rc = conn_reply_body(c, s, n + 1);
		conn_reply_end(c);
	}
	free(s);
	if (h)
		evbuffer_free(h);
	return rc;
}

void conn_abort(struct conn *c, const char *reason)
{
	if (c->flags & CF_ABORTING)
		return;
	c->flags |= CF_ABORTING;
	c->abort_reason = reason;
	read_off(c);
	event_active(c->step, 0, 0);
}

size_t conn_output_pending(const struct conn *c)
{
	return evbuffer_get_length(bufferevent_get_output(c->bev)) + c->head_len +
	       evbuffer_get_length(c->staged);
}

int conn_output_full(const struct conn *c)
{
	return conn_output_pending(c) > c->ctx->cfg->limits.max_output_bytes;
}

/* At the end, with reject() and conn_abort() above it: one entry point for
 * main.c's drain deadline, so no answer is skipped for a bare close. */
void conn_drain_deadline(struct conn *c)
{
	assert(c->magic == CONN_MAGIC);
	switch (c->state) {
	case CONN_IDLE:
		conn_free(c);
		break;
	case CONN_READING:
		/* A request still arriving: a clear "not now" (as for a
		 * client over its share), not a close mid-request. */
		reject(c, 503, CONN_REFUSED_SHUTDOWN, "mcpwarden is shutting down");
		break;
	case CONN_HANDLING:
	case CONN_REPLYING:
		if (c->flags & CF_ABORTING)
			break; /* on its way out already */
		if (c->ex && c->ops->deadline)
			c->ops->deadline(c->ex);
		if (c->state != CONN_REPLIED)
			conn_abort(c, "mcpwarden is shutting down (timeouts.drain_ms passed)");
		break;
	case CONN_REPLIED:
		break; /* answered */
	case CONN_CLOSING:
		break;
	}
}

const char *conn_reply_note(const struct conn *c)
{
	return c->reply_note[0] ? c->reply_note : NULL;
}

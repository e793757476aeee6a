/* upstream: HTTP/1.1 exchanges with one configured upstream server.
 *
 * An upstream keeps a pool of idle keep-alive connections. An upstream_req
 * is one request/response on one connection: it connects (or reuses an idle
 * connection), writes the request, parses the response with http_parse and
 * reports it through callbacks, head first, then body fragments as they
 * arrive (never buffered whole), then done or error, exactly one of the two.
 *
 * A pooled connection is reused only while it has said nothing since its
 * last response: bytes after a complete response, or arriving while idle,
 * close it (they could only be read as the next request's answer).
 *
 * A request that fails on a reused connection before any response byte
 * arrived is retried once on a new connection: the server may have closed
 * its idle end just as we wrote (the keep-alive race).
 */
#ifndef MCPWARDEN_UPSTREAM_H
#define MCPWARDEN_UPSTREAM_H

#include <stddef.h>

struct px_upstream_conf;
struct http_msg;
struct evbuffer;
struct event_base;

enum upstream_err {
	UPSTREAM_ERR_CONNECT = 1, /* refused, unreachable, connect timeout */
	UPSTREAM_ERR_RESET,       /* closed or reset before the response ended */
	UPSTREAM_ERR_TIMEOUT,     /* no (complete) response within request_ms */
	UPSTREAM_ERR_PROTOCOL,    /* the reply is not HTTP */
};

struct upstream_req_cbs {
	/* Response head (1xx are skipped). Return 0, or -1 to stop (no more
	 * callbacks; the connection is closed). */
	int (*on_head)(void *arg, const struct http_msg *resp);
	/* A body fragment, de-chunked. Return 0 or -1 as above. */
	int (*on_body)(void *arg, const char *data, size_t len);
	/* The response is complete. */
	void (*on_done)(void *arg);
	/* The exchange failed; detail is a static string. */
	void (*on_error)(void *arg, enum upstream_err err, const char *detail);
};

struct upstream;
struct upstream_req;

/* What an upstream takes from whoever runs it, besides its own section of
 * the configuration: copied by upstream_new, except what draining points
 * to, which is read each time a connection could go back to the pool. */
struct upstream_opts {
	struct event_base *base;  /* the loop it runs on; NULL: upstream_new only
	                           * checks (resolves, loads the TLS files) */
	size_t max_header_bytes;  /* a response head's limit */
	unsigned idle_ms;         /* a pooled connection's idle timeout; 0: no pool */
	const int *draining;      /* borrowed, or NULL: nonzero once the owner
	                           * drains; no connection is pooled then */
};

/* Resolves the host now (at start-up, never on the data path). Returns NULL
 * with a reason in errbuf. conf is borrowed for the upstream's lifetime. */
struct upstream *upstream_new(const struct upstream_opts *o, const struct px_upstream_conf *conf,
                              char *errbuf, size_t errlen);
void upstream_free(struct upstream *u);
const struct px_upstream_conf *upstream_conf(const struct upstream *u);
/* After a reload: the same upstream (config_restart_needed() said so) with
 * new settings (timeouts, headers, o's limits). conf is borrowed like
 * upstream_new's; o->base must be the loop it already runs on. */
void upstream_set_conf(struct upstream *u, const struct px_upstream_conf *conf,
                       const struct upstream_opts *o);

/* Starts an exchange. request holds the whole request (head and body) and
 * is stolen. head_only: the request is HEAD (no response body). Callbacks
 * run from the event loop, never from within this call. */
struct upstream_req *upstream_req_new(struct upstream *u, struct evbuffer *request,
                                      int head_only, const struct upstream_req_cbs *cbs,
                                      void *arg);
/* The same, with the request's head apart: head_len bytes at head
 * (copied; at most UPSTREAM_HEAD_MAX, else NULL) go before request's
 * (stolen; may be empty). Spares the caller an evbuffer chain for the
 * head and the move of the body behind it. */
#define UPSTREAM_HEAD_MAX 2048
struct upstream_req *upstream_req_new_split(struct upstream *u, const char *head,
                                            size_t head_len, struct evbuffer *request,
                                            int head_only, const struct upstream_req_cbs *cbs,
                                            void *arg);
/* Ends the exchange: a finished connection goes back to the pool, an
 * unfinished one is closed (that is how a cancel reaches the server).
 * No callback runs after this. Accepts NULL. */
void upstream_req_free(struct upstream_req *r);
/* The same, but the request buffer is handed back (owned by the caller,
 * possibly not empty) instead of freed, for reuse. NULL for r NULL, and
 * for a stream whose request had no body (upstream_req_stream freed it). */
struct evbuffer *upstream_req_release(struct upstream_req *r);

/* The response, complete as HTTP, is not the answer that was asked for (its
 * JSON-RPC id answers another request): the connection is out of step with
 * its requests, so it is closed when the exchange ends, never reused. */
void upstream_req_distrust(struct upstream_req *r);

/* Backpressure: stop / resume reading the response. */
void upstream_req_pause(struct upstream_req *r);
void upstream_req_resume(struct upstream_req *r);
/* The response is a stream: the request timeout no longer applies, and
 * (a response byte having come, so no retry) the copy of the request's
 * head and an empty request buffer are let go. */
void upstream_req_stream(struct upstream_req *r);

/* For logs: where the exchange is ("waiting", "receiving", "done", ...),
 * and what it is ("head_only|replayable|paused", "" for none), written
 * into buf (cut short to len) and returned. */
const char *upstream_req_state_str(const struct upstream_req *r);
const char *upstream_req_flags_str(const struct upstream_req *r, char *buf, size_t len);

/* Idle pooled connections (for tests and metrics). */
size_t upstream_idle_count(const struct upstream *u);

#endif

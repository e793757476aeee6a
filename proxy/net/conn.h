/* conn: one client connection speaking HTTP/1.1.
 *
 * It reads a request (head and bounded body), hands it to the transport
 * adapter, writes the reply the adapter produces with the framing the
 * client needs (Content-Length, chunked, or close-delimited for HTTP/1.0),
 * then reads the next request on the same connection. Every way out goes
 * through one close path, deferred to the event loop so that no caller
 * ever holds a freed conn.
 */
#ifndef MCPWARDEN_CONN_H
#define MCPWARDEN_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <jansson.h>

#include <event2/util.h>

struct px_ctx;
struct evbuffer;

struct conn;

struct transport_ops;
struct ssl_ctx_st;

/* Who opened a connection and hears when it ends (the listener): conn
 * calls nothing above it, it reports through this. Static: a listener is
 * freed at the start of a drain while its connections live on, so the
 * owner holds no pointer to one; ctx says which worker's connection it
 * was (after a handoff, the worker it moved to). */
struct conn_owner {
	/* A connection of ctx is gone (freed, or never opened: conn_new
	 * failed). moved: it went to another worker (a handoff), so what it
	 * held under the owner's caps goes with it. Runs last: c is freed. */
	void (*closed)(struct px_ctx *ctx, int moved);
};

/* Takes ownership of fd; requests go to the handler ops (the MCP
 * transports on the client listener, the admin endpoint on its own);
 * owner (static, not NULL) hears of the end, also when this fails.
 * Returns NULL (fd closed) on failure. */
struct conn *conn_new(struct px_ctx *ctx, evutil_socket_t fd, const struct sockaddr *sa,
                      int salen, const struct transport_ops *ops,
                      const struct conn_owner *owner, struct ssl_ctx_st *tls);

/* Start of drain (SIGTERM): idle connections close now, busy ones after
 * their reply, long-lived streams are ended. */
void conn_shutdown(struct conn *c);
struct conn *conn_next(const struct conn *c);
/* Closes at once, whatever its state (teardown after a drain timed out). */
void conn_destroy(struct conn *c);
/* The drain deadline passed (timeouts.drain_ms after the signal): what the
 * connection still owes its client is answered now (a request being read
 * gets a 503; one in flight is answered by the adapter's ->deadline, or
 * the connection is aborted), then it closes once its output is written.
 * c may be freed before this returns. */
void conn_drain_deadline(struct conn *c);

/* For logs: the state ("idle", "reading", "handling", "replying",
 * "replied", "closing"), and the flags set, as "plain|chunked" into buf
 * (returned; "" for none, truncated to len). */
const char *conn_state_str(const struct conn *c);
const char *conn_flags_str(const struct conn *c, char *buf, size_t len);

/* ---- for transport adapters --------------------------------------------- */

struct px_ctx *conn_ctx(const struct conn *c);
unsigned long long conn_id(const struct conn *c);
const char *conn_peer(const struct conn *c);    /* "ip:port" */
/* Monotonic microseconds when the current request's head arrived. */
uint64_t conn_request_start_us(const struct conn *c);
uint64_t conn_bytes_in(const struct conn *c);
uint64_t conn_bytes_out(const struct conn *c);

/* An empty evbuffer, owned by the caller: one the connection kept for
 * reuse, else a new one. NULL when out of memory. */
struct evbuffer *conn_buffer_get(struct conn *c);
/* Gives buf (owned, NULL accepted) back for later requests on c: it is
 * drained, then kept or freed. It must carry no callbacks and no flags
 * of its own (as conn_buffer_get gave it). */
void conn_buffer_put(struct conn *c, struct evbuffer *buf);

/* Writes the status line and headers. headers holds "Name: value\r\n"
 * lines and is drained. content_length < 0: the body is streamed
 * (chunked to HTTP/1.1 clients). Returns 0 or -1. */
int conn_reply_head(struct conn *c, int status, struct evbuffer *headers,
                    int64_t content_length);
/* The same, with the header lines written by put (NULL: none) straight
 * into the head, between the status line and the framing lines: no
 * evbuffer to stage them in. put runs before this returns; arg is its. */
struct http_headbuf;
typedef void conn_head_fn(struct http_headbuf *hb, void *arg);
int conn_reply_head_fn(struct conn *c, int status, conn_head_fn *put, void *arg,
                       int64_t content_length);
/* Whether the head was written (after that, errors can only abort). */
int conn_replied(const struct conn *c);
int conn_reply_status(const struct conn *c);
/* Body bytes (copied) or a whole buffer (moved). Returns 0 or -1. */
int conn_reply_body(struct conn *c, const void *data, size_t len);
int conn_reply_body_buffer(struct conn *c, struct evbuffer *buf);
/* The reply is complete. The connection goes on to the next request
 * once control is back in the loop; the adapter's ->free runs then. */
void conn_reply_end(struct conn *c);
/* A whole JSON reply (head, body, end). body is borrowed. */
int conn_reply_json(struct conn *c, int status, const json_t *body);
/* The same for an error of the proxy's own whose error.message is message
 * (borrowed): a 4xx keeps it for conn_reply_note. */
int conn_reply_error(struct conn *c, int status, const json_t *body, const char *message);
/* Abandons the reply and closes (e.g. the upstream broke mid-stream). */
void conn_abort(struct conn *c, const char *reason);
/* Bytes queued to the client and not yet written. */
size_t conn_output_pending(const struct conn *c);
/* Whether the client's output is over its cap (the adapter should pause
 * its upstream; ->drained is called when it is not any more). */
int conn_output_full(const struct conn *c);

/* Why the proxy itself refused the current request with a 4xx (the
 * message given to conn_reply_error, e.g. "Parse error: the body is not valid
 * JSON"), for the access line's note; NULL when it did not. Valid until
 * the next request on c. */
const char *conn_reply_note(const struct conn *c);

#endif

/* transport: the handler of a listener, between a client connection and
 * what answers it.
 *
 * conn.c speaks HTTP/1.1 to the client and knows nothing of MCP or
 * JSON-RPC. Once a request is complete it hands it to the handler its
 * listener was given, which runs the exchange: for the MCP listener the
 * transport adapter (routes it, parses its JSON-RPC messages through the
 * message hook, talks to the upstream), for admin's its endpoints; either
 * writes the reply back through conn's conn_reply_* functions. Even the
 * replies conn makes itself (a request refused before any handler saw
 * it) take their body from the handler (->error_body), so that a client
 * reads errors in the one language its endpoint speaks. Streamable HTTP
 * is proxy/mcp/transport_http.c (the legacy HTTP+SSE transport is
 * reached through it); admin's is admin/admin.c.
 */
#ifndef MCPWARDEN_TRANSPORT_H
#define MCPWARDEN_TRANSPORT_H

struct conn;
struct px_ctx;
struct http_msg;
struct evbuffer;
struct exchange;

/* Why the HTTP layer answers a request itself (->error_body). */
enum conn_refusal {
	CONN_REFUSED_REQUEST,   /* the request is refused: malformed, too large,
	                         * too slow, over a per-address cap */
	CONN_REFUSED_SHUTDOWN,  /* fine, but mcpwarden is shutting down */
};

struct transport_ops {
	const char *name;
	/* Served after everything else when the loop is busy (admin). */
	int low_priority;
	/* Optional: the worker whose state the complete request needs (it
	 * names a translated session another worker holds), or NULL / ctx
	 * for this one. The connection then moves there (conn.c). */
	struct px_ctx *(*route)(struct px_ctx *ctx, const struct http_msg *req);
	/* The request is complete: req is valid until the exchange ends, body
	 * is stolen. Returns the exchange (owned by conn until it calls
	 * ->free), even when the adapter answered at once (so the answer is
	 * logged and recorded like any other); NULL only after conn_abort(). */
	struct exchange *(*start)(struct conn *c, const struct http_msg *req,
	                          struct evbuffer *body);
	/* The client's output drained under its cap: resume reading upstream. */
	void (*drained)(struct exchange *ex);
	/* The proxy is draining: a long-lived stream ends now, a request in
	 * flight is left to finish. */
	void (*shutdown)(struct exchange *ex);
	/* Optional: the drain deadline passed (timeouts.drain_ms after the
	 * signal) and the reply is not complete. The exchange answers now, as
	 * a proxy does whose upstream cannot answer in time: a reply not
	 * begun becomes a whole error reply (503 and a JSON-RPC error for
	 * the request's id), a stream begun ends cleanly (after an error
	 * event for a request still owed its answer); what cannot end
	 * honestly is aborted. The upstream request is given up first, so no
	 * late byte of it races the answer. Absent, or when it leaves the
	 * reply unfinished: conn aborts the connection. */
	void (*deadline)(struct exchange *ex);
	/* Optional: the reply's last bytes are queued, about to be written.
	 * What the exchange held for its request alone goes back now, not a
	 * loop turn later in ->free: a client that has its answer and sends
	 * the next request at once (from another worker's connection) must
	 * not be refused for a request that is over. */
	void (*replied)(struct exchange *ex);
	/* Ends the exchange (after the reply or when the client left): frees
	 * it and everything it holds, closing an unfinished upstream request. */
	void (*free)(struct exchange *ex, const char *client_error);
	/* Optional: the body of a reply conn makes itself, for a request it
	 * refused before the handler saw one (400, 405, 408, 413, 431, 503,
	 * 505): no exchange exists. text is what the client is to read
	 * (static words and limit names, never a byte the client sent).
	 * Appends the body to out; returns its media type (static), or NULL
	 * when it could not (out of memory: conn then closes without a
	 * reply). Absent: conn writes text and a newline as text/plain. */
	const char *(*error_body)(int status, enum conn_refusal why, const char *text,
	                          struct evbuffer *out);
};

extern const struct transport_ops transport_http_ops;

#endif

/* transport: the adapter between a client connection and an upstream.
 *
 * conn.c speaks HTTP/1.1 to the client and knows nothing of MCP. Once a
 * request is complete it hands it to a transport adapter, which runs the
 * exchange: routes it, parses its JSON-RPC messages through the message
 * hook, talks to the upstream and writes the reply back through conn's
 * conn_reply_* functions. Streamable HTTP is transport_http.c; the legacy
 * HTTP+SSE transport plugs in the same way.
 */
#ifndef MCPWARDEN_TRANSPORT_H
#define MCPWARDEN_TRANSPORT_H

struct conn;
struct px_ctx;
struct http_msg;
struct evbuffer;
struct exchange;

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
};

extern const struct transport_ops transport_http_ops;

#endif

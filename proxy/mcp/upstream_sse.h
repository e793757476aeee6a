/* upstream_sse: the upstream face of a translated session.
 *
 * It speaks to one upstream with either HTTP transport, whichever the
 * session needs, and hides which from the session:
 *
 *   legacy HTTP+SSE (2024-11-05)        Streamable HTTP (2025-03-26 ..)
 *   ─────────────────────────────       ───────────────────────────────
 *   GET <url>, Accept: text/event-      POST <url> per message; the reply is
 *     stream; first event `endpoint`      202, JSON, or an SSE stream; the
 *     names where to POST (resolved       upstream's Mcp-Session-Id and the
 *     against <url>, same origin only)    negotiated MCP-Protocol-Version go
 *   POST <endpoint> per message, one      on every later request
 *     at a time, in order; 202 expected GET <url> after `initialized`: the
 *   every server message arrives as       standalone stream (405 is fine;
 *     `event: message` on the GET         re-opened with Last-Event-ID when
 *                                         it drops)
 *   session over = the GET closes       DELETE <url> when the session ends;
 *                                         404 on our session id = it expired
 *
 * "auto" probes (the one rule, shared with `mcpwarden check`: the three
 * upstream_sse_auto_* / _refused functions below): the first message (the
 * client's initialize) goes as a Streamable POST; a 400, 404 or 405 that
 * is not a JSON-RPC error falls back to the legacy GET on the same URL
 * (docs/transports.md). When the URL ends in /sse the legacy GET is tried
 * first and a refusal falls back to Streamable HTTP. No other URL is
 * guessed (no sibling /sse of a /mcp URL): see upstream_sse_auto_first.
 *
 * Messages are sent in the order given. Replies are parsed here and handed
 * over one message at a time; nothing is inspected here. All callbacks run
 * from the event loop, never from within a call into this module, and none
 * runs after upstream_sse_free().
 *
 * Not here: TLS, resuming a legacy stream (legacy servers start a new
 * session on reconnect, so a dropped legacy GET ends the session).
 */
#ifndef MCPWARDEN_UPSTREAM_SSE_H
#define MCPWARDEN_UPSTREAM_SSE_H

#include <stddef.h>
#include <jansson.h>

#include "proxy/config.h"

struct px_ctx;
struct px_upstream_conf;

/* An upstream's HTTP refusal of a message (a 4xx or 5xx answer to its
 * POST), as it came: what a client must see of it to act on it (a 401's
 * challenge, a 403's explanation). Borrowed, valid for the callback. */
struct upstream_sse_refusal {
	int status;
	const char *content_type;      /* or NULL */
	const char *www_authenticate;  /* or NULL */
	const char *body;              /* the first ERROR_BODY_MAX bytes, or NULL */
	size_t body_len;
};

struct upstream_sse_cbs {
	/* The transport works (legacy: the endpoint is known; Streamable: the
	 * first POST was accepted). Called once, with the transport chosen. */
	void (*on_ready)(void *arg, enum px_transport tr);
	/* A message from the upstream. msg is borrowed (the callee may keep a
	 * reference); raw is its bytes, borrowed. */
	void (*on_message)(void *arg, json_t *msg, const char *raw, size_t raw_len);
	/* The upstream took the request msg (borrowed): its POST was answered
	 * 2xx (legacy: 202, the response follows on the stream; Streamable:
	 * the reply's head). Not called for notifications and responses. */
	void (*on_accepted)(void *arg, const json_t *msg);
	/* msg (borrowed) could not be delivered, or was a request whose reply
	 * ended without its response. status: the HTTP status that fits
	 * (upstream 4xx/5xx as they came, 502 or 504 for our own), detail the
	 * reason (naming the upstream's status when it refused; valid as long
	 * as the face); reply: the upstream's JSON-RPC error for it, if it
	 * sent one (borrowed), else NULL; refusal: the upstream's HTTP answer
	 * when it refused the message, else NULL. */
	void (*on_failed)(void *arg, const json_t *msg, int status, const char *detail,
	                  const json_t *reply, const struct upstream_sse_refusal *refusal);
	/* The upstream session is over (the legacy stream ended or was refused,
	 * the session id expired, or no transport worked). detail is static. */
	void (*on_closed)(void *arg, const char *detail);
	/* After upstream_sse_close(): the face is done (DELETE answered or
	 * given up); the owner may now free it. */
	void (*on_finished)(void *arg);
};

struct upstream_sse;

/* A face for upstream `up` (ctx->ups[up]). first: the transport to try
 * first, PX_TRANSPORT_SSE or PX_TRANSPORT_STREAMABLE; fallback: when that
 * one is refused at the start (see above), try the other once (the auto
 * probe). authorization: the client's Authorization to send on (copied),
 * or NULL. Returns NULL when out of memory. A legacy GET starts at once; a
 * Streamable face connects with its first message. */
struct upstream_sse *upstream_sse_new(struct px_ctx *ctx, size_t up, enum px_transport first,
                                      int fallback, const char *authorization,
                                      const struct upstream_sse_cbs *cbs, void *arg);
/* Frees at once: open requests are closed, nothing more is sent, no
 * callback runs. Accepts NULL. */
void upstream_sse_free(struct upstream_sse *f);

/* Queues msg for the upstream (a reference is taken; raw, when not NULL,
 * is the exact bytes to send and is copied). Returns 0, or -1 when the
 * queue is full or the face is closing. */
int upstream_sse_send(struct upstream_sse *f, json_t *msg, const char *raw, size_t raw_len);

/* Ends the upstream session: drops what is queued, closes the streams and
 * (Streamable HTTP, with a session id) sends DELETE. on_finished follows,
 * from the loop. Idempotent. */
void upstream_sse_close(struct upstream_sse *f);


/* Backpressure from the client side: stop / resume reading replies. */
void upstream_sse_pause(struct upstream_sse *f);
void upstream_sse_resume(struct upstream_sse *f);

/* The transport in use: PX_TRANSPORT_AUTO while the probe runs. */
enum px_transport upstream_sse_transport(const struct upstream_sse *f);
/* f's state for a log line ("starting", "ready", "ended", "closing",
 * "draining", "finished"): static. */
const char *upstream_sse_state_str(const struct upstream_sse *f);
/* f's flags for a log line ("fallback|posting", "|"-separated), written to
 * buf (truncated to len); returns buf. */
const char *upstream_sse_flags_str(const struct upstream_sse *f, char *buf, size_t len);

/* Resolves the data of a legacy `endpoint` event against the upstream's
 * URL (uc->target, uc->host, uc->port) into a request-target for POSTs.
 * Accepts absolute URLs of the same origin (http, same host and port),
 * scheme-relative, absolute-path, relative-path and query-only references.
 * Returns 0, or -1 with a static reason (other origin, bad characters,
 * too long). */
int upstream_sse_resolve_endpoint(const struct px_upstream_conf *uc, const char *data,
                                  size_t len, char *out, size_t outlen, const char **why);

/* The auto rule, used by the proxy and by `mcpwarden check` alike.
 *
 * Which transport to try first on the URL as given: PX_TRANSPORT_SSE when
 * its path ends in "/sse", else PX_TRANSPORT_STREAMABLE. Either way the
 * other transport is tried on the same URL, as the spec's backwards
 * compatibility rule says (clients POST to the URL, then GET the URL). A
 * sibling /sse of a /mcp URL is never guessed: the URL names the endpoint
 * (and the credentials sent there), a guess would make `check` pass a URL
 * that spec-following clients cannot use, and a server that refuses
 * Streamable HTTP at /mcp for another reason would be hidden behind its
 * legacy face. A legacy server is configured by its SSE URL. */
enum px_transport upstream_sse_auto_first(const struct px_upstream_conf *uc);

/* Whether a Streamable HTTP answer to an initialize POST means "try the
 * legacy transport": 400, 404 or 405 without a JSON body (a JSON body is a
 * modern server's JSON-RPC error, e.g. for an expired session). */
int upstream_sse_probe_refused(int status, const char *content_type);

/* Whether an answer to the legacy GET (tried first) means "try Streamable
 * HTTP": no event stream, and either the probe_refused statuses or a 2xx
 * (a Streamable server's GET answering something else). 401, 403 and 5xx
 * are failures of their own, not a sign of the other transport. */
int upstream_sse_stream_refused(int status, const char *content_type);

/* Whether the upstream URL's path ends in "/sse" (auto tries legacy first). */
int upstream_sse_url_is_sse(const struct px_upstream_conf *uc);

#endif

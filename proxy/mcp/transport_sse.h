/* transport_sse: the client face of translated sessions.
 *
 * transport_http.c serves every request on the client listener. It hands
 * a request to this module when it belongs to a translated session
 * (transport_sse_claims), after authenticating it and parsing its POST
 * body, and keeps the access log line and the hooks' end-of-exchange call
 * for it; this module answers it:
 *
 *   legacy HTTP+SSE clients (2024-11-05), whatever the upstream speaks:
 *     GET  <sse_path>                      a new session; its stream starts
 *                                          with `event: endpoint`, then one
 *                                          `event: message` per server message
 *     POST <messages_path>?sessionId=<id>  202 Accepted once the upstream took
 *                                          the message (or at once: nothing to
 *                                          wait for), the upstream's own 4xx
 *                                          refusal as it came, 404 for an
 *                                          unknown id; each POST's messages
 *                                          are one call for the hooks, ended
 *                                          when its answers were written
 *
 *   Streamable HTTP clients of an upstream that speaks the legacy transport
 *   (configured, or found by the auto probe), with an Mcp-Session-Id that
 *   mcpwarden mints:
 *     POST  initialize without a session  a new session: the upstream's SSE
 *                                          stream is opened, its endpoint
 *                                          learnt, initialize posted there
 *     POST  with the session id            responses come back on this POST:
 *                                          an SSE stream when the client
 *                                          accepts text/event-stream (started
 *                                          once the upstream took the request,
 *                                          events flushed as they come), JSON
 *                                          when it accepts only JSON; the
 *                                          upstream's 4xx refusal of its one
 *                                          request as it came
 *     GET   with the session id            the stream for server messages
 *     DELETE                               ends the session (and upstream)
 *     unknown or expired session id        404
 *
 * Every client message goes through inspect_message() here, once, and
 * every server message when it is delivered (session.h). Routing and
 * session life are session.c's; the upstream side is upstream_sse.c's.
 */
#ifndef MCPWARDEN_TRANSPORT_SSE_H
#define MCPWARDEN_TRANSPORT_SSE_H

#include <stddef.h>
#include <jansson.h>

#include "proxy/hooks/inspect.h"

struct px_ctx;
struct conn;
struct http_msg;
struct evbuffer;
struct session_table;

/* What a translated exchange shares with the transport_http exchange that
 * carries it: the hooks' context, and where to write how it ended (for
 * the access log and inspect_exchange_done(), which transport_http does). */
struct transport_sse_link {
	struct inspect_where *where;  /* borrowed: valid until transport_sse_free */
	enum inspect_end *end;
	const char **error;           /* static reason */
};

struct transport_sse_ex;

/* The session table, with the limits of ctx->cfg and this module as the
 * sessions' client face (main.c stores it in ctx->proc->sessions). */
struct session_table *transport_sse_sessions_new(struct px_ctx *ctx);

/* Whether the request is this module's: a legacy path of an upstream, or
 * the MCP path of an upstream that speaks legacy SSE (or may, for an auto
 * upstream whose URL ends in /sse), or a session id mcpwarden minted.
 * *up receives the upstream's index. path is without the query. */
int transport_sse_claims(struct px_ctx *ctx, const struct http_msg *req, const char *path,
                         size_t *up);

/* transport_ops.route for the MCP listener: with several workers, the one
 * holding the translated session a request names (legacy POST's sessionId,
 * or Mcp-Session-Id), or NULL. */
struct px_ctx *transport_sse_route(struct px_ctx *ctx, const struct http_msg *req);

/* Runs a claimed request. body: the parsed POST body (borrowed; valid
 * until transport_sse_free), or NULL; raw: its bytes (stolen, may be
 * NULL). Always returns the exchange (it may have answered already), or
 * NULL after conn_abort(). */
struct transport_sse_ex *transport_sse_start(struct conn *c, const struct http_msg *req,
                                             size_t up, json_t *body, struct evbuffer *raw,
                                             struct transport_sse_link link);

/* The auto probe, from transport_http's reply head to a Streamable POST:
 * records the transport an "auto" upstream speaks when the POST was an
 * initialize without a session, and returns 1 when the answer means the
 * legacy transport must be tried (then transport_sse_adopt takes the
 * request over); 0 otherwise. */
int transport_sse_probe(struct px_ctx *ctx, size_t up, const struct http_msg *req,
                        const json_t *body, int status, const char *content_type);
/* Takes over an initialize whose Streamable attempt was refused: a new
 * session on the legacy transport. body was inspected already (borrowed). */
struct transport_sse_ex *transport_sse_adopt(struct conn *c, const struct http_msg *req,
                                             size_t up, json_t *body,
                                             struct transport_sse_link link);

/* The transport_ops calls, forwarded by transport_http. */
void transport_sse_drained(struct transport_sse_ex *x);
void transport_sse_shutdown(struct transport_sse_ex *x);
/* x's state for a log line ("new", "head-pending", "streaming", "ended",
 * and for a legacy call "call-posting", "call-replied", "call-detached"):
 * static. */
const char *transport_sse_state_str(const struct transport_sse_ex *x);
/* x's flags for a log line ("accepts-sse|batch", "|"-separated),
 * written to buf (truncated to len); returns buf. */
const char *transport_sse_flags_str(const struct transport_sse_ex *x, char *buf, size_t len);
/* Ends and frees the exchange (after transport_http logged it). A client
 * that left (client_error set) leaves its requests running upstream, their
 * responses dropped; a legacy client's stream ending ends its session.
 * Accepts NULL. */
void transport_sse_free(struct transport_sse_ex *x, const char *client_error);

#endif

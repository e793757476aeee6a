/* session: MCP sessions that mcpwarden translates between transports.
 *
 * A translated session has two faces:
 *
 *   client face (transport_sse.c)          upstream face (upstream_sse.c)
 *   ─────────────────────────────          ──────────────────────────────
 *   legacy HTTP+SSE: GET /sse + POST       legacy HTTP+SSE: one long GET,
 *     /messages?sessionId=<id>               POSTs to its `endpoint`
 *   Streamable HTTP: POST/GET/DELETE  ◀──▶ Streamable HTTP: POST per message,
 *     with Mcp-Session-Id: <id>              JSON or SSE replies, GET stream
 *
 * and between them this module: a bounded table of sessions keyed by an id
 * mcpwarden mints, and the routing of every message (docs/transports.md):
 *
 *   - a response goes to the client exchange waiting for its JSON-RPC id
 *     (a Streamable POST, or the legacy stream); ids are never rewritten,
 *     because mcpwarden injects no requests of its own;
 *   - notifications/progress goes to the POST of the request whose
 *     progressToken it names, when that POST can carry an SSE reply;
 *   - every other server message goes to the client's stream (the legacy
 *     GET, or the Streamable GET), held in a bounded queue until one is
 *     open; a server request may instead ride an in-flight POST that can
 *     stream, so that a client without a GET stream still sees it;
 *   - each message goes to exactly one place;
 *   - the exchange a request waits at hears when the upstream took it
 *     (ops->accepted), so a reply that streams starts then, not with its
 *     first message.
 *
 * Every client request that went upstream gets exactly one answer: its
 * response, or an error the proxy makes when the upstream fails, when the
 * request is overdue, or when the session ends under it. A request the
 * client cancelled gets none (as the spec wants), and its POST just ends.
 *
 * Messages reach this module already inspected on the client side; the
 * server side is inspected by the client face when it delivers (so queued
 * messages are inspected once, on the stream that carries them).
 *
 * Not here: HTTP (the faces do it), resumable client streams (the proxy
 * keeps no event buffer), id rewriting.
 */
#ifndef MCPWARDEN_SESSION_H
#define MCPWARDEN_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "proxy/config.h"

struct px_ctx;
struct upstream_sse_refusal;

/* A minted id: 128 random bits as lowercase hex (0x21..0x7E by design). */
#define SESSION_ID_LEN 32
/* replicas: the longest id, "<replica_id>-" then SESSION_ID_LEN hex digits
 * when the config names a replica_id (conf/haproxy/README.md). */
#define SESSION_ID_MAX (PX_REPLICA_ID_MAX + 1 + SESSION_ID_LEN)

enum session_face {
	SESSION_FACE_SSE = 0,     /* legacy HTTP+SSE client (2024-11-05) */
	SESSION_FACE_STREAMABLE,  /* Streamable HTTP client, proxy-minted Mcp-Session-Id */
};

/* What holds in each state; session.c's session_moves lists the allowed
 * transitions, all through one function. */
enum session_state {
	/* In the table; no upstream traffic yet (a legacy client whose upstream
	 * speaks Streamable HTTP is only connected by its first message). */
	SESSION_NEW = 0,
	/* The upstream face is starting: the legacy GET waits for its endpoint
	 * event, or the auto probe is running. Client messages wait in the
	 * face's bounded queue, in order. */
	SESSION_CONNECTING,
	/* The upstream face works: messages flow both ways. */
	SESSION_OPEN,
	/* Out of the table (its id now gets 404); every pending request was
	 * answered and the client stream told to end; the upstream face is
	 * closing. Freed once no client exchange and no face refers to it. */
	SESSION_ENDED,
};

const char *session_state_str(enum session_state st);

/* One message for the client face to deliver. */
struct session_out {
	json_t *msg;             /* borrowed; the face may modify it (hooks) */
	const char *raw;         /* the upstream's bytes for msg, or NULL */
	size_t raw_len;
	const json_t *request;   /* borrowed: the client request msg answers, or NULL */
	int local;               /* made by mcpwarden (an error), not from the upstream */
	int status;              /* for errors: the HTTP status that fits, or 0 */
	/* msg answers a request the upstream refused with this HTTP answer
	 * (borrowed, for the call), else NULL: a face that can still give an
	 * HTTP status (a legacy client's POST) gives the client that answer
	 * instead of msg. */
	const struct upstream_sse_refusal *refusal;
};

/* What the client face does for sessions. A "target" is one of its
 * exchanges (a POST waiting for responses, or a stream), opaque here. */
struct session_client_ops {
	/* Delivers m to target. Returns 0, or -1 when target cannot take it
	 * (the message is then dropped and logged). */
	int (*deliver)(void *target, const struct session_out *m);
	/* Whether target can carry server messages besides its responses (a
	 * Streamable POST whose client accepts text/event-stream). */
	int (*can_stream)(void *target);
	/* A request target waited for will get no response (the client
	 * cancelled it). */
	void (*withdrawn)(void *target);
	/* The session ended: target, its client stream, ends now. */
	void (*end_stream)(void *target, const char *why);
	/* The upstream face is ready (SESSION_OPEN): target is the stream. */
	void (*opened)(void *target);
	/* The upstream took a request target waits for: a reply that streams
	 * may start now, as a pass-through reply starts with the upstream's
	 * head (target is a POST, or the legacy stream). */
	void (*accepted)(void *target);
};

struct session_limits {
	size_t max_sessions;     /* limits.max_sessions */
	size_t max_pending;      /* limits.max_session_pending: requests in flight */
	size_t max_queue;        /* limits.max_session_queue: messages held for a stream */
	size_t max_queue_bytes;  /* limits.max_output_bytes, for the same queue */
	uint64_t idle_us;        /* timeouts.session_idle_ms (0: never) */
	uint64_t request_us;     /* default wait for a response (0: forever) */
	char id_prefix[PX_REPLICA_ID_MAX + 1];  /* replicas: replica_id, "" for none */
};

struct session_table;
struct session;

/* ctx may be NULL (unit tests): then no timers run (call
 * session_table_sweep/_reap yourself) and no upstream is ever connected.
 * lim is copied; ops is borrowed for the table's lifetime. */
struct session_table *session_table_new(struct px_ctx *ctx, const struct session_limits *lim,
                                        const struct session_client_ops *ops);
/* Frees every session at once (teardown: no answers, no upstream DELETE).
 * Client exchanges must be gone already. Accepts NULL. */
void session_table_free(struct session_table *t);
size_t session_table_count(const struct session_table *t);

/* Ends sessions idle longer than idle_us at now_us, and answers requests
 * whose response is overdue. Returns the number of sessions ended. */
size_t session_table_sweep(struct session_table *t, uint64_t now_us);
/* Frees ended sessions that nothing refers to any more. */
void session_table_reap(struct session_table *t);

/* The transport an "auto" upstream turned out to speak:
 * PX_TRANSPORT_AUTO until known. */
enum px_transport session_table_detected(const struct session_table *t, size_t up);
/* Records it (logged once when it changes). */
void session_table_set_detected(struct session_table *t, size_t up, enum px_transport tr);
/* What mcpwarden speaks to upstream `up` now: its configured transport,
 * else the detected one, else PX_TRANSPORT_AUTO. */
enum px_transport session_table_transport(const struct session_table *t, size_t up);

/* Writes a fresh id (SESSION_ID_LEN hex digits + NUL) from the kernel's
 * random source. Returns 0, or -1 when none is available. */
int session_mint_id(char *out, size_t outlen);

/* A new session in the table, with a minted id, for the client face and
 * upstream given; client_name is whose token opened it (NULL: none), and
 * later requests must present the same. Returns NULL with a static reason
 * in *why (table full, no randomness, out of memory). */
struct session *session_new(struct session_table *t, size_t up, enum session_face face,
                            const char *client_name, const char **why);
/* The session with this id still in the table, or NULL. */
struct session *session_find(struct session_table *t, const char *id);

const char *session_id(const struct session *s);
enum session_face session_face(const struct session *s);
enum session_state session_state(const struct session *s);
/* s's flags for a log line ("face-done", "|"-separated), written to buf
 * (truncated to len); returns buf. */
const char *session_flags_str(const struct session *s, char *buf, size_t len);
size_t session_upstream(const struct session *s);
const char *session_client_name(const struct session *s);
/* "sse" or "streamable_http" once the upstream face chose, else "auto". */
const char *session_transport_str(const struct session *s);

/* Starts the upstream face. authorization: the client's Authorization
 * header to pass on (copied), or NULL. streamable_failed: the Streamable
 * HTTP attempt already failed (the auto probe ran in transport_http.c), so
 * only the legacy transport is tried. Returns 0, or -1 (out of memory). */
int session_connect(struct session *s, const char *authorization, int streamable_failed);

/* Client exchanges that keep a pointer to s hold a reference. */
void session_ref(struct session *s);
void session_unref(struct session *s);

/* Makes target the client's stream. Messages queued for it are delivered
 * at once, in order. Returns 0, or -1 when a stream is already open. */
int session_attach_stream(struct session *s, void *target);
/* The stream target, or NULL. */
void *session_stream(const struct session *s);
/* Backpressure: a client exchange of s has its output over the cap
 * (pause), or drained again (resume). The upstream face reads again once
 * every pause was resumed. */
void session_pause(struct session *s);
void session_resume(struct session *s);

/* A client exchange ends: when it is the stream, the stream is gone (for a
 * legacy client that ends the session); requests waiting at it lose their
 * target (their responses are dropped when they come). */
void session_detach(struct session *s, void *target);

/* A client message, inspected already. A request waits for its response
 * at target. Returns 0, or -1 with a static reason in *why: the request
 * was not sent and the caller answers it itself. */
int session_client_message(struct session *s, json_t *msg, const char *raw, size_t raw_len,
                           void *target, const char **why);

/* A message from the upstream: routed as described above. raw (may be
 * NULL) is its bytes, borrowed. */
void session_upstream_message(struct session *s, json_t *msg, const char *raw, size_t raw_len);
/* The upstream took the client request msg (borrowed): the exchange that
 * waits for its response is told (ops->accepted), once per request. */
void session_upstream_accepted(struct session *s, const json_t *msg);

/* Ends the session: answers every pending request with an error naming
 * why (static string), drops what was queued for the stream, ends the
 * client stream, closes the upstream face (DELETE or closing its stream).
 * Safe from within any callback; idempotent. */
void session_end(struct session *s, const char *why);

/* Counters for metrics and tests. */
struct session_stats {
	uint64_t opened, ended, expired, refused;  /* refused: table full */
	uint64_t queued_dropped, late_responses, timeouts;
};
void session_table_stats(const struct session_table *t, struct session_stats *out);

#endif

/* inspect: the message hook, the one place every JSON-RPC message crosses.
 *
 * Each message parsed from a client POST body (client -> server) or from an
 * upstream reply, JSON or SSE (server -> client), is handed once to
 * inspect_message(). Modules register hooks (the contract checker, policy,
 * the call recorder) and each hook, in registration order, may:
 *   - read it (return INSPECT_FORWARD),
 *   - rewrite it in place (change m->msg, set m->modified, FORWARD),
 *   - drop it (INSPECT_DROP: it is not forwarded; for a client request the
 *     proxy then answers with m->answer, which the hook must set),
 *   - answer it itself (INSPECT_ANSWER with m->answer: a client request is
 *     not forwarded and the client gets m->answer as the reply).
 * The first hook that drops or answers ends the chain of deciding hooks.
 * Observer hooks (inspect_add_observer: the call recorder, metrics) run
 * after it on every message whatever was decided, and see the verdict.
 *
 * When an HTTP exchange ends, inspect_exchange_done() tells every hook
 * what happened (status, timing, bytes), for recording and metrics.
 *
 * Hooks run on the event loop: they must not block.
 */
#ifndef MCPWARDEN_INSPECT_H
#define MCPWARDEN_INSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <jansson.h>

#include "proxy/base/jsonrpc.h"
#include "proxy/base/rcbytes.h"

enum inspect_dir { INSPECT_FROM_CLIENT = 0, INSPECT_FROM_SERVER };

enum inspect_verdict { INSPECT_FORWARD = 0, INSPECT_DROP, INSPECT_ANSWER };

#define INSPECT_MAX_HOOKS 16

/* Where a message was seen: one per HTTP exchange, alive from its first
 * message to inspect_exchange_done(). Borrowed strings. */
struct inspect_where {
	unsigned long long conn_id;
	const char *client;       /* "ip:port" */
	const char *client_name;  /* name of the client token presented, or NULL */
	const char *upstream;     /* upstream name */
	const char *session_id;   /* Mcp-Session-Id of the request, or NULL */
	/* Mcp-Session-Id the upstream's reply carried (set on initialize), or
	 * NULL; known from the reply's head on, i.e. for server messages. */
	const char *reply_session_id;
	/* The protocol version the request names: its 2026-07-28 _meta
	 * envelope, else its MCP-Protocol-Version header; NULL when neither. */
	const char *protocol;
	const char *era;          /* "stateful" or "2026" (proxy/mcp/mirror.h) */
	const char *http_method;  /* of the HTTP request carrying the exchange */
	const char *client_transport;   /* "streamable_http", "sse" */
	const char *upstream_transport; /* "streamable_http", "sse" */
	uint64_t start_us;        /* monotonic, when the request arrived */
	/* telemetry (issue 23, proxy/hooks/hook_trace.h): the client's W3C
	 * headers (borrowed, or NULL; set by the transport only when tracing
	 * is on); the SERVER span's ids in hex ("" when not traced), which
	 * records carry; the traceparent the upstream gets instead of the
	 * client's ("" none: the client's headers pass as they came). */
	const char *traceparent, *tracestate;
	const char *user_agent;   /* the client's User-Agent, borrowed, or NULL */
	char trace_id[33], span_id[17];
	char up_traceparent[56];
	/* Per-exchange state a hook may keep, at the slot inspect_add*()
	 * returned. The hook owns what it stores and must release it in its
	 * on_exchange callback, which always runs, exactly once. */
	void *hook_data[INSPECT_MAX_HOOKS];
};

struct jparse_index;

struct inspect_msg {
	enum inspect_dir dir;
	enum jrpc_kind kind;
	/* borrowed; a hook may modify it in place. NULL when the transport
	 * built no tree (no hook needed one: inspect_set_needs_tree): then
	 * ix is set, and method and tool are the transport's (from ix). */
	json_t *msg;
	/* The message's text as jparse_scan indexed it (borrowed, valid for
	 * the call: ix->at[...] point into the text), or NULL. Set whenever
	 * msg is NULL; a hook reads members through it (jparse_ref_value). */
	const struct jparse_index *ix;
	/* For a response: the request it answers when it came in the same HTTP
	 * exchange (borrowed), else NULL. For a request: msg itself. */
	const json_t *request;
	struct inspect_where *where;
	/* msg's method, params and, for tools/call, params.name (borrowed from
	 * msg, or NULL), read once by inspect_message for every hook, and read
	 * again after a hook modifies msg. */
	const char *method;
	const char *tool;
	json_t *params;
	/* The method of the request msg answers, when known (request != NULL;
	 * for a request, its own method). */
	const char *request_method;
	int modified;             /* a hook changed msg: it is re-serialised */
	/* The text of msg's "result" member exactly as it arrived (borrowed,
	 * valid for the call), or NULL when the transport does not know it
	 * (batches, translated transports). Cleared once a hook modifies msg,
	 * so it always spells what msg->result holds; a hook may key a cache
	 * on it (hook_contract does). */
	const char *result_raw;
	size_t result_raw_len;
	/* The tools tracker's number for result_raw's bytes when it keeps them
	 * as the upstream's last one-page listing (tools_listing_serial: the
	 * same bytes are given that number again, no other bytes ever are),
	 * or 0. Set by the tracker, for the hooks after it (policy, the
	 * observers; not the contract checker, before it), and cleared with
	 * result_raw: a hook may key what it keeps of a listing on it, with
	 * no copy of the bytes to compare. */
	uint64_t result_serial;
	/* result_raw's bytes held by reference count (the upstream's kept
	 * listing's copy: proxy/mcp/listings.h), or NULL: a hook that keeps
	 * them takes a reference (rcbytes_ref) instead of copying them.
	 * Borrowed; cleared with result_raw. */
	struct rcbytes *result_bytes;
	json_t *answer;           /* owned by the proxy once set: reply to send */
	const char *decided_by;   /* name of the hook that dropped/answered */
	/* For observers: what the deciding hooks decided, and the rule or
	 * reason they gave (a static or hook-owned string), if any. */
	enum inspect_verdict verdict;
	const char *reason;
	/* Findings a deciding hook attached for the observers (the live
	 * contract's, hook_validate.h): an owned array of objects, or NULL. A
	 * hook appends to it (creating it when NULL); inspect_message frees it
	 * after the observers ran, so a transport never sees it. */
	json_t *notes;
};

/* How an HTTP exchange ended. */
enum inspect_end {
	INSPECT_END_OK = 0,        /* a reply was sent (whatever its status) */
	INSPECT_END_UPSTREAM_ERROR,/* the upstream failed (502, or a cut stream) */
	INSPECT_END_TIMEOUT,       /* the upstream was too slow (504) */
	INSPECT_END_CANCELLED,     /* the client left before the reply ended */
	INSPECT_END_REJECTED,      /* mcpwarden refused the request (4xx of its own) */
};

/* Summary of one HTTP exchange, given to hooks when it ends. */
struct inspect_exchange {
	enum inspect_end end;
	struct inspect_where *where;
	const json_t *request_body;  /* the parsed POST body, or NULL */
	int status;                  /* HTTP status sent to the client (0: none) */
	uint64_t latency_us;
	uint64_t bytes_in, bytes_out;
	const char *error;           /* why the exchange failed, or NULL */
	/* Not an HTTP exchange of its own: a legacy client's call, whose
	 * answers came on the client's stream after the POST that carried it
	 * (proxy/mcp/transport_sse.c); that POST's exchange was told (and
	 * counted) when it ended, without messages. bytes_* are the POST's. */
	int deferred;
};

typedef enum inspect_verdict (*inspect_message_fn)(void *arg, struct inspect_msg *m);
typedef void (*inspect_exchange_fn)(void *arg, const struct inspect_exchange *x);

struct inspect;

struct inspect *inspect_new(void);
void inspect_free(struct inspect *in);
/* Another worker's chain: the same hooks (same args, same locks), its own
 * counters. Hooks registered afterwards are not copied. */
struct inspect *inspect_clone(const struct inspect *in);
/* The hook at `slot` runs (on_message and on_exchange) holding *lock:
 * hooks keep state shared by every worker, so their calls from several
 * workers' threads are serialised. lock is borrowed; NULL: no lock. */
void inspect_set_lock(struct inspect *in, int slot, pthread_mutex_t *lock);
/* Hooks registered so far (the next one gets this slot). */
size_t inspect_count(const struct inspect *in);

/* Registers a deciding hook (runs in registration order, may drop or
 * answer). name is borrowed (a static string). Either function may be
 * NULL. Returns the hook's slot in where->hook_data (>= 0), or -1 (too
 * many hooks). */
int inspect_add(struct inspect *in, const char *name, inspect_message_fn on_message,
                inspect_exchange_fn on_exchange, void *arg);
/* Registers an observer: it runs after the deciding hooks on every
 * message, sees m->verdict, and its return value is ignored. */
int inspect_add_observer(struct inspect *in, const char *name, inspect_message_fn on_message,
                         inspect_exchange_fn on_exchange, void *arg);

/* Replies too big to inspect. What the transport buffers to read one reply
 * is bounded (limits.max_inspect_bytes); past the bound the reply cannot be
 * parsed, and no hook sees it. For most replies that is acceptable (they
 * pass unread, with a warning), but a hook that acts on tool listings (the
 * contract in filter or fail mode, a policy that hides tools) would be
 * bypassed by size alone: so before a tools/list reply passes unread, each
 * hook is asked. The function returns 1 when a listing for where->upstream
 * may pass uninspected, 0 when it must be refused; it must not block. */
typedef int (*inspect_uninspected_fn)(void *arg, const struct inspect_where *where);

/* Gives the hook at slot its answer to that question (fn NULL: it has
 * none, a listing may pass). Call it right after inspect_add. */
void inspect_set_uninspected(struct inspect *in, int slot, inspect_uninspected_fn fn);

/* Whether a tools/list reply too big to inspect may pass unread: 1 when
 * every hook agrees, 0 when one refuses (then *who, if who is not NULL,
 * names it: a static string). where is borrowed. */
int inspect_listing_may_skip(const struct inspect *in, const struct inspect_where *where,
                             const char **who);

/* Unchanged listings (issue 20, "Big lists at byte speed"). A one-page
 * tools/list reply whose "result" member is, byte for byte, the one a hook
 * kept from the last listing it handled needs no tree: each hook already
 * knows what handling it does. Before the transport parses such a reply it
 * asks every deciding hook and observer, passing the result's bytes as
 * received; only when all agree is the reply forwarded as the upstream sent
 * it, and each hook's `passed` then does again what handling those bytes
 * did (counters, log lines, reports). A hook with an on_message but no
 * answer here refuses: a new hook is never bypassed by accident. */
/* A hook keeps bytes to send again as rcbytes (proxy/base/rcbytes.h): the
 * transport may still be sending them when the hook lets them go. */

struct inspect_listing {
	struct inspect_where *where; /* a hook may keep exchange state, as in on_message */
	const json_t *request;   /* the tools/list request answered (borrowed) */
	const char *raw;         /* the reply's "result" member as received */
	size_t len;
	/* When a hook's handling of these bytes changed the reply (the
	 * policy hid tools), its `may` sets *sent to a reference on the
	 * "result" it sent last time for the same bytes (and the same of
	 * whatever else its verdict depends on, such as the client): the
	 * transport sends that instead, in the reply's own envelope.
	 * NULL: the transport does not take a replacement, and a hook that
	 * would change the reply refuses. At most one hook replaces. */
	struct rcbytes **sent;
	/* Set by inspect_listing_fast: names this one question, different in
	 * every call of every thread, so that hooks may share what one found
	 * about these bytes during it (tools_listing_serial). */
	uint64_t call;
};
/* 1: these bytes may pass unparsed, with `passed` doing this hook's part
 * (and *l->sent set when this hook's part changes them); 0: the reply
 * must be parsed. No side effects but *l->sent; must not block. */
typedef int (*inspect_listing_may_fn)(void *arg, const struct inspect_listing *l);
/* The listing passed unparsed: do what handling it would have done. */
typedef void (*inspect_listing_passed_fn)(void *arg, const struct inspect_listing *l);

/* Gives the hook at slot its answers (may NULL: it refuses; passed NULL:
 * nothing to do). Call it right after inspect_add*. */
void inspect_set_listing_fast(struct inspect *in, int slot, inspect_listing_may_fn may,
                              inspect_listing_passed_fn passed);

/* Asks every hook whether l may pass unparsed; when all agree, runs their
 * `passed` (under each hook's lock, as on_message), counts the message and
 * returns 1 (*l->sent, when set, is the caller's reference: the result to
 * send; the hooks after the one that set it are passed those bytes as
 * l->raw, as the parsed path shows them the changed message). Else
 * returns 0 (*who, if who is not NULL, names the first hook that refused:
 * a static string), *l->sent is NULL and nothing happened. */
int inspect_listing_fast(struct inspect *in, const struct inspect_listing *l, const char **who);

/* No tree where none is needed (issue 20). Building a message's jansson
 * tree and freeing it cost more than all the hooks' reading of a
 * tools/call result, and most hooks read only the envelope: the method,
 * the tool, the id, whether it is a result. So before building the tree a
 * transport may ask every hook whether it needs it, passing an
 * inspect_msg with msg NULL and kind, where, request and request_method
 * set (and method and tool, for a request). A reply is asked about before
 * its bytes are scanned, as a result (kind JRPC_RESULT, ix NULL): an
 * answer for a result must cover an error to the same request, which
 * needs no more of the message. When none does
 * the hooks run on that message as it is (msg NULL: a hook reads what it
 * wants through m->ix) and the bytes pass untouched; when one does, the
 * tree is built and the hooks see it as always.
 *
 * 1: this hook needs m's tree (it will change it, or walk more of it
 * than ix notes); 0: it reads m, if at all, from ix, and must not set
 * m->modified or m->answer on such a message. No side effects; must not
 * block; runs without the hook's lock (it reads configuration, or state
 * the hook reads safely itself). A hook with an on_message and no
 * function here needs every tree: a new hook is never bypassed by
 * accident. Examples of answers a hook gives:
 *   - the live contract (hook_validate): 1 only when it will validate
 *     this message: a tools/call whose tool has an input schema, the
 *     result of a tool with an outputSchema;
 *   - a hook acting on tool listings only (the contract checker, the
 *     tools tracker): inspect_tree_for_listings below;
 *   - policy: 1 for a tools/call only when a rule has args matchers for
 *     this tool (it reads m->tool, the name being in ix), and for
 *     listings it filters;
 *   - the recorder: 0 when it records from the raw bytes (the message's
 *     text is the one ix indexes).
 * Today transports ask only about replies to a single request, JSON or
 * SSE events (proxy/mcp/transport_http.c); batches, translated
 * transports and client messages keep building trees. */
typedef int (*inspect_tree_fn)(void *arg, const struct inspect_msg *m);

/* Gives the hook at slot its answer (fn NULL: it needs every tree). Call
 * it right after inspect_add*. */
void inspect_set_needs_tree(struct inspect *in, int slot, inspect_tree_fn fn);

/* 1 when some hook needs m's tree (*who, if who is not NULL, then names
 * the first: a static string), 0 when none does. */
int inspect_needs_tree(const struct inspect *in, const struct inspect_msg *m, const char **who);

/* 0 when some hook has no inspect_tree_fn (so every message needs its
 * tree): a transport then need not scan a text before parsing it. */
int inspect_trees_optional(const struct inspect *in);

/* An inspect_tree_fn for a hook that reads only tool listings: 1 for a
 * tools/list request and for a reply to one or to an unknown request
 * (m->request NULL), 0 for anything else. arg is unused. */
int inspect_tree_for_listings(void *arg, const struct inspect_msg *m);

/* Runs the hooks on one message. Returns the verdict; with DROP/ANSWER
 * m->decided_by names the hook. A hook returning ANSWER without an answer
 * is treated as FORWARD (and is a bug in that hook). */
enum inspect_verdict inspect_message(struct inspect *in, struct inspect_msg *m);

void inspect_exchange_done(struct inspect *in, const struct inspect_exchange *x);

/* Counters over the process lifetime. */
struct inspect_stats {
	uint64_t messages[2];  /* by direction */
	uint64_t dropped, answered, modified;
	uint64_t fast_listings; /* of messages[1]: passed unparsed (inspect_listing_fast) */
};
void inspect_get_stats(const struct inspect *in, struct inspect_stats *out);

#endif

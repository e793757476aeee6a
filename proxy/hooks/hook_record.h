/* hook_record: the call recorder, an observer on the message hook.
 *
 * It turns the JSON-RPC traffic of each HTTP exchange into call records:
 *   - a client request and its answer (joined by id within the exchange)
 *     make one record, kind "request";
 *   - a client notification, or a response the client sends to a server
 *     request, makes one record of its own ("notification", "response");
 *   - a request or notification the server sends on its own (sampling,
 *     logging on the GET stream…) makes one record, from "server", at once;
 *     server notifications that arrive on the reply stream of a client's
 *     request are counted on that request's record ("notifications")
 *     instead, so a chatty progress stream does not flush the ring.
 * Client records are finished when the exchange ends (that is when the
 * HTTP status and the bytes are known); until then a request waiting for
 * its answer is listed by hook_record_inflight().
 *
 * Record (one JSON object, members always present but for the optional
 * ones named so, in this order):
 *   seq              the sink numbers it (hook_record_text_seal)
 *   time             RFC 3339 UTC with microseconds, when the request arrived
 *   session          Mcp-Session-Id (the reply's for initialize) or null
 *   client           "ip:port";  client_name: the client token's name or null
 *   upstream         upstream name or null
 *   client_transport, upstream_transport   "streamable_http", "sse"
 *   from             "client" | "server"
 *   kind             "request" | "notification" | "response"
 *   method, tool     tool: params.name of tools/call, else null
 *   id               the JSON-RPC id or null
 *   arguments        tools/call and prompts/get: params.arguments, other
 *                    methods: params; as redacted compact JSON text cut at
 *                    1000 characters (arguments_cut says so), or null
 *   result_preview   text of the result, redacted, cut at 800 (result_cut)
 *   http_status      status sent to the client, null for server messages
 *   is_error         tools/call result's isError (false when absent), null
 *                    for other methods and for errors
 *   error_code, error_message   the JSON-RPC error, or null
 *   outcome          ok | tool_error | rpc_error | blocked | upstream_error
 *                    | timeout | cancelled
 *   rule             the rule or reason a deciding hook gave: of a block
 *                    ("policy:<rule>", "contract:<mode>"), of a call it
 *                    let through flagged (a log rule's "<rule>", a dry
 *                    run's "dry-run:<rule>", "policy:hide" for a listing
 *                    it filtered), or null
 *   modified         a hook rewrote the request or its answer
 *   notifications    server notifications seen on the request's stream
 *   note             why the exchange failed (mcpwarden's words), or null
 *   latency_us       arrival to answer (unanswered: to the exchange's end)
 *   bytes_in, bytes_out   of the HTTP exchange that carried it (shared by
 *                    the records of one batch)
 *   trace_id, span_id   only when telemetry is on (issue 23,
 *                    docs/telemetry.md): the W3C trace id and the SERVER
 *                    span's id of the exchange (hook_trace.h), lowercase
 *                    hex, also when the trace was not sampled
 *   findings         only when there are some: what the live contract
 *                    found (proxy/hooks/hook_validate.h) in the request
 *                    and in its answer, one array, request's first:
 *                    [{"code", "kind": "arguments"|"result", "instance",
 *                    "schema" (JSON Pointers), "keyword", "message"}],
 *                    masked like the other texts
 * Header values are never recorded: the session id and the client token's
 * name are the only header-derived fields.
 *
 * Records are for calls: an exchange without a JSON-RPC message makes
 * none, nor does an error with a null id in an exchange that carried no
 * client message (a Streamable server without a GET stream answers the
 * GET 405, often with such a body: normal, and no call); with client
 * messages, such an error answers each of them.
 *
 * Outcome: an answer that is a JSON-RPC error is rpc_error, a result with
 * isError true tool_error, else ok; a message a deciding hook dropped or
 * answered, and an answer that came as a result and that a hook replaced
 * by its error (the contract's fail mode), is blocked (rule = its reason,
 * else the hook's name); a request
 * still unanswered when the exchange ends takes the exchange's end:
 * upstream_error, timeout, cancelled, blocked (mcpwarden rejected the
 * exchange), and upstream_error when the reply simply ended without it.
 */
#ifndef MCPWARDEN_HOOK_RECORD_H
#define MCPWARDEN_HOOK_RECORD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "proxy/base/sbuf.h"
#include "proxy/hooks/sink.h"

struct inspect;
struct redact;
struct hook_record;

/* A finished record, kept in a compact stored form: its members as they
 * were built (redacted and cut: no secret is in it), written as the JSON
 * object above only when it is read (issue 20). Owned by the recorder,
 * borrowed by the sink for the call (proxy/hooks/sink.h). */
struct hook_record_text;

/* The record's whole JSON text, "seq" first ({"seq":N,"time":…},
 * NUL-terminated, *len bytes), written now; NULL when memory runs out.
 * The text lives in the recorder's buffer until the sink returns; the
 * sink may write to it (and to the NUL at [*len]) but keeps no pointer
 * into it. */
char *hook_record_text_seal(struct hook_record_text *t, uint64_t seq, size_t *len);

/* The stored record as a block, for a sink that keeps records without
 * copying them (admin/ring.h ring_swap): json[0..len) is the stored form
 * (not JSON text: hook_record_stored_text writes it), or with
 * hook_record_set_text_now on the sealed JSON text (seq in it). The sink may swap
 * the block for another one of its own (an older record's, empty, or
 * {NULL, 0}), which the recorder takes back when the sink returns. The
 * keys are in the buffer too: after a swap they belong to whoever took
 * the block. seq: the text's (not used for the stored form: the reader
 * numbers it). */
struct record_block *hook_record_text_block(struct hook_record_text *t, uint64_t seq);

/* Appends the JSON text of a stored record (a block's json[0..len), as
 * hook_record_text_block gave it) as record seq to out (NUL-terminated).
 * 0, or -1 when memory runs out or stored is not a stored record. Any
 * thread; stored is only read. */
int hook_record_stored_text(const char *stored, size_t len, uint64_t seq, struct sbuf *out);

/* Registers the recorder as an observer on in. rd, sink and arg are
 * borrowed and must outlive it (sink: see proxy/hooks/sink.h; its record
 * op keys point into the record and are valid for the call, like t, and
 * until t's buffer is swapped away). Returns NULL when the hook table is
 * full or memory runs out. The observer stays registered in `in`: free
 * the recorder only once no exchange can run any more. */
struct hook_record *hook_record_new(struct inspect *in, const struct redact *rd,
                                    const struct record_sink *sink, void *arg);
void hook_record_free(struct hook_record *hr);  /* accepts NULL */

/* on: the sink reads every record as it comes (a call log), so the
 * recorder writes each one's JSON text per call (record_text_format, the
 * block then holds that text, seq in it) instead of keeping the stored
 * form for readers to write. Set before the first exchange. */
void hook_record_set_text_now(struct hook_record *hr, int on);

/* The tools tracker (borrowed: outlives hr) whose numbers for listings
 * key the preview each worker keeps of the last one (inspect.h,
 * result_serial): without it, an unchanged listing that passes unparsed is
 * parsed here for its preview. Set before the first exchange. */
struct tools;
void hook_record_set_tools(struct hook_record *hr, struct tools *tr);

/* Several threads: the recorder serialises, with lock (borrowed; NULL:
 * one thread only), what they share: its in-flight list and the sink's
 * ops. It takes the lock itself, briefly (the costly work, redaction and
 * writing the text, runs outside it), and only when
 * it is free (below), so its hook must not be run under a lock too (no
 * inspect_set_lock for it). Readers of hook_record_inflight*() and of
 * what the sink feeds hold the same lock.
 * Set it before the first exchange. */
void hook_record_set_lock(struct hook_record *hr, pthread_mutex_t *lock);

/* Finished records wait in per-thread outboxes for the lock (see
 * hook_record.c): a worker never waits for another one to publish. A
 * holder of the lock given to hook_record_set_lock other than the
 * recorder itself calls hook_record_drain_locked once it has it, so that
 * what it reads holds every finished record, and hook_record_unlocked
 * right after releasing it, to publish what workers left meanwhile. */
void hook_record_drain_locked(struct hook_record *hr);
void hook_record_unlocked(struct hook_record *hr);

/* The client requests still waiting for an answer, oldest first, at most
 * limit: a new array (owned) of objects with the record's identifying
 * members (time, session, client, upstream, method, tool, id, arguments)
 * plus age_us, and in *count (count may be NULL) how many there are in
 * all, seen at the same moment. NULL when memory runs out. Each worker's
 * list is locked while it is read (the readers are rare). */
json_t *hook_record_inflight(const struct hook_record *hr, size_t limit, size_t *count);
size_t hook_record_inflight_count(const struct hook_record *hr);

/* Formats a Unix time in microseconds as RFC 3339 UTC with microseconds
 * ("2025-06-01T12:00:00.123456Z") into buf (at least 32 bytes). */
void hook_record_time(uint64_t unix_us, char *buf, size_t len);

#endif

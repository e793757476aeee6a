/* limits.h: every size and time cap of the proxy, with its default.
 *
 * Each one has a configuration key (conf/README.md) and, for the common
 * ones, a command-line flag. Nothing on the data path grows without one of
 * these bounds.
 */
#ifndef MCPWARDEN_LIMITS_H
#define MCPWARDEN_LIMITS_H

/* limits.max_body_bytes: a client request body; over it the client gets 413. */
#define LIMIT_MAX_BODY_BYTES        (8u * 1024 * 1024)
/* limits.max_inspect_bytes: the most of one JSON upstream reply buffered to
 * parse and inspect it. Its own bound, not the client body's: replies are
 * the upstream's to size, and tool listings run large (the biggest seen
 * were tens of MB: thousands of tools with full schemas; issue 17 met a
 * 23 MB one). 32 MiB inspects those and still bounds what one reply holds
 * (the bytes, then jansson's tree of them, a few times as much, for as long
 * as the hooks run), and a listing that fits is also within what the
 * contract keeps of a listing's pages (HOOK_CONTRACT_MAX_BYTES, 64 MiB).
 * Past it a tools/list reply is refused (502, JSON-RPC -32000 for its id)
 * when a hook acts on listings (contract filter/fail mode, a policy hide
 * rule: inspect_listing_may_skip), else passed through unread with a
 * warning, as is every other reply past it. */
#define LIMIT_MAX_INSPECT_BYTES     (32u * 1024 * 1024)
/* limits.max_header_bytes: request line/status line plus all headers; 431. */
#define LIMIT_MAX_HEADER_BYTES      (32u * 1024)
/* Most header fields in one message (not configurable: 431 past it). */
#define LIMIT_MAX_HEADERS           100
/* Chunk-extension bytes in one request body, all chunks together (not
 * configurable: 400 past it). They mean nothing to the proxy and are never
 * forwarded (the body goes upstream with a Content-Length of its own); no
 * MCP client sends any. Unbounded, they let a client make the proxy read
 * any number of bytes per body byte (one-byte chunks, long extensions:
 * neither max_body_bytes nor max_header_bytes counts them), the hole of
 * Node.js's CVE-2024-22019; per message, not per chunk, for that reason. */
#define LIMIT_MAX_CHUNK_EXT_BYTES   1024
/* limits.max_sse_event_bytes: one SSE block from the upstream. */
#define LIMIT_MAX_SSE_EVENT_BYTES   (8u * 1024 * 1024)
/* limits.max_connections: open client connections; accept pauses past it. */
#define LIMIT_MAX_CONNECTIONS       10000
/* limits.max_connections_per_client: open connections from one client
 * address; past it the new connection gets 503 and is closed. */
#define LIMIT_MAX_CONNECTIONS_PER_CLIENT 1000
/* limits.max_json_depth: nesting of a client's JSON body (400 past it). */
#define LIMIT_MAX_JSON_DEPTH        64
/* limits.max_batch: messages in one 2025-03-26 JSON-RPC batch. */
#define LIMIT_MAX_BATCH             100
/* limits.max_output_bytes: bytes queued to a slow client before we stop
 * reading from its upstream (backpressure, not an error). */
#define LIMIT_MAX_OUTPUT_BYTES      (1u * 1024 * 1024)
/* Session ids remembered (issued or ended) to answer 404 for ended ones. */
#define LIMIT_SESSION_IDS           65536
/* limits.max_sessions: translated sessions (legacy HTTP+SSE on either
 * side) open at once; past it a new one gets 503. */
#define LIMIT_MAX_SESSIONS          1000
/* limits.max_session_pending: client requests in flight in one translated
 * session; past it the request gets a JSON-RPC error. */
#define LIMIT_MAX_SESSION_PENDING   256
/* limits.max_session_queue: messages one translated session holds, for a
 * client stream not open yet or for an upstream not ready yet (bytes are
 * bounded by limits.max_output_bytes); past it they are dropped (a server
 * request is answered with an error). */
#define LIMIT_MAX_SESSION_QUEUE     256
/* limits.max_inflight_per_session: requests of one pass-through session
 * (an Mcp-Session-Id the upstream issued) being processed at once; past it
 * 429 with Retry-After. An SDK client sends a handful at a time; 64 leaves
 * room for parallel tool calls and still keeps one runaway agent from
 * holding every upstream connection (each request in flight holds one). */
#define LIMIT_MAX_INFLIGHT_PER_SESSION 64
/* "yield_after_us" (proxy/net/loop.h): the default, and its bound. */
#define LIMIT_YIELD_AFTER_US 300
#define LIMIT_YIELD_AFTER_US_MAX 1000000
/* limits.max_streams_per_session: concurrent GET SSE streams of one
 * pass-through session; past it 429. A client needs one; a few more cover
 * a reconnect that overlaps the stream it replaces. */
#define LIMIT_MAX_STREAMS_PER_SESSION 4
/* Pass-through sessions holding a slot at once (proxy/mcp/sesslimit.c); past
 * it 503. Each holds a connection, so max_connections bounds it first. */
#define LIMIT_SESSLIMIT_ENTRIES     65536
/* Idle upstream connections kept per upstream. */
#define LIMIT_POOL_IDLE_PER_UPSTREAM 64
/* (No trust window: a pooled connection is peeked at before every reuse,
 * however briefly it was idle; see upconn_alive in proxy/net/upstream.c.) */

/* ---- JSON Schema validator (checks/jschema.h) ----------------------------
 * Past any of these, jschema_compile() fails or jschema_validate() stops,
 * with a finding naming the limit (code JSCHEMA_LIMIT), never a hang. */
/* Nesting of subschemas inside one schema document (compile). */
#define LIMIT_JSCHEMA_SCHEMA_DEPTH  128
/* Subschemas (compiled nodes) in one schema document, lazily compiled
 * $ref targets included (compile). */
#define LIMIT_JSCHEMA_NODES         20000
/* $ref/$dynamicRef keywords in one schema document, and identifiers
 * ($id resources plus anchors): resolving each is a scan, so these bound
 * compile time on a hostile listing (tool schemas have a handful). */
#define LIMIT_JSCHEMA_REFS          1024
#define LIMIT_JSCHEMA_IDS           1024
/* $ref/$dynamicRef frames nested in one validation: bounds recursive
 * schemas on deep instances; a cycle that makes no progress on the
 * instance is caught before it (the same subschema at the same instance
 * location twice on the stack). */
#define LIMIT_JSCHEMA_REF_DEPTH     128
/* Nesting of subschema evaluations in one validation (instance depth plus
 * in-place applicators). */
#define LIMIT_JSCHEMA_EVAL_DEPTH    512
/* Work units per validation: one per subschema evaluated, per property or
 * item visited, per uniqueItems comparison, per regex search. */
#define LIMIT_JSCHEMA_STEPS         200000
/* Bytes of a JSON Pointer or message in a jschema_error (truncated past). */
#define LIMIT_JSCHEMA_PTR_BYTES     256
#define LIMIT_JSCHEMA_MSG_BYTES     192
/* ---- end of the JSON Schema validator's block ---------------------------- */

/* JSON Schema regular expressions (checks/jsre.c): not configurable; a
 * pattern over a compile-time cap is refused with a located reason, the
 * schema's validator reports it. */
/* Bytes of one pattern. Schema patterns are tens of bytes; this bounds the
 * parser's node array before any other cap applies. */
#define LIMIT_JSRE_PATTERN_BYTES    (32u * 1024)
/* Instructions of one compiled pattern, counted repetition expanded
 * (a{1000} is 1000, (?:a{1000}){1000} a million: refused). The VM's
 * memory per search is a few words per instruction. */
#define LIMIT_JSRE_PROGRAM          20000
/* Code point ranges of all the character classes of one pattern (\p{L} is
 * 684 of them; a class copied by a repetition is stored once). */
#define LIMIT_JSRE_RANGES           65536
/* Nesting of groups (the parser and the compiler recurse on it). */
#define LIMIT_JSRE_DEPTH            128
/* VM steps (an instruction visited or a thread stepped) in one search:
 * about 50 ms at -O3. Past it jsre_search answers -1 (no guess); a small
 * pattern gets there only on a subject of megabytes (^[a-z]+$ costs about
 * 5 steps a character). */
#define LIMIT_JSRE_STEPS            20000000u

/* timeouts.connect_ms: TCP connect to an upstream; 502 past it. */
#define TIMEOUT_CONNECT_MS          5000
/* timeouts.request_ms: from sending a request upstream to its response
 * headers, and for a non-streamed reply to its last byte; 504 past it. */
#define TIMEOUT_REQUEST_MS          60000
/* timeouts.header_ms: from a request's first byte to the end of its
 * headers, however the bytes trickle in (slowloris); 408 past it. */
#define TIMEOUT_HEADER_MS           10000
/* timeouts.body_ms: from the end of the headers to the end of the body. */
#define TIMEOUT_BODY_MS             60000
/* timeouts.client_idle_ms: a client connection with no request in flight,
 * or a client sending its request that slowly. */
#define TIMEOUT_CLIENT_IDLE_MS      60000
/* timeouts.upstream_idle_ms: an idle pooled upstream connection. Kept under
 * Node's default 5 s keep-alive so we close first and never race it. */
#define TIMEOUT_UPSTREAM_IDLE_MS    4000
/* timeouts.sse_keepalive_ms: a comment line on an SSE stream quiet this long. */
#define TIMEOUT_SSE_KEEPALIVE_MS    15000
/* timeouts.session_idle_ms: a translated session with no message either
 * way, no request in flight and no client stream listening ends. */
#define TIMEOUT_SESSION_IDLE_MS     (30u * 60 * 1000)
/* timeouts.drain_ms: after SIGTERM, how long in-flight requests may finish. */
#define TIMEOUT_DRAIN_MS            30000

#endif

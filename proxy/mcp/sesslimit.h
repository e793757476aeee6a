/* sesslimit: per-session caps for pass-through Streamable HTTP sessions.
 *
 * A session the upstream owns (its Mcp-Session-Id crosses the proxy
 * unchanged) is still one client's: limits.max_inflight_per_session caps
 * the requests of one session being processed at once, and
 * limits.max_streams_per_session its concurrent GET SSE streams, so that
 * one runaway agent cannot take every upstream connection. Translated
 * sessions have their own caps (proxy/mcp/session.c).
 *
 * The table maps (upstream index, session id) to the slots held. Worker
 * threads, one event loop each, share one table; a slot is taken and given
 * back without waiting for another worker (sesslimit.c). An entry is kept
 * a while after its last slot is given back (parked: a few thousand short
 * ids at most), so that a session's next request finds it; the table is
 * bounded (max_entries busy sessions). The caller releases each slot it
 * acquired exactly once.
 *
 * Not here: what the client is told (transport_http.c answers 429), which
 * requests count (only those at an MCP path carrying a session id).
 */
#ifndef MCPWARDEN_SESSLIMIT_H
#define MCPWARDEN_SESSLIMIT_H

#include <stddef.h>
#include <stdint.h>

enum sesslimit_kind {
	SESSLIMIT_INFLIGHT = 0,   /* a request (POST, DELETE…) being processed */
	SESSLIMIT_STREAM,         /* a GET SSE stream */
	SESSLIMIT_NKINDS
};

enum sesslimit_rc {
	SESSLIMIT_OK = 0,         /* admitted: *slot holds one slot */
	SESSLIMIT_OVER,           /* the session holds `cap` slots of the kind */
	SESSLIMIT_OVER_FIRST,     /* the same, the first time for this entry:
	                           * the caller logs this one at warn */
	SESSLIMIT_FULL,           /* max_entries sessions busy, or no memory */
};

struct sesslimit;
/* One session's entry, handed out with a slot: valid until that slot is
 * released (the entry lives while any of its slots is held). */
struct sesslimit_entry;

struct sesslimit_stats {
	uint64_t refused[SESSLIMIT_NKINDS];  /* requests over a cap, since start */
	uint64_t full;                       /* refused because the table was full */
	uint64_t held[SESSLIMIT_NKINDS];     /* slots held now */
	uint64_t entries;                    /* sessions holding a slot now */
	uint64_t parked;                     /* entries kept between busy spells */
};

/* A new empty table for at most max_entries busy sessions (0 means 1).
 * NULL when out of memory. */
struct sesslimit *sesslimit_new(size_t max_entries);
/* Frees the table (accepts NULL). Entries still held are freed too; the
 * caller has released every slot before, or is exiting. */
void sesslimit_free(struct sesslimit *t);

/* Takes one slot of `kind` for session `sid` of upstream `up` unless the
 * session holds `cap` of them already (cap 0: no cap, the slot is still
 * counted). sid is borrowed (copied when an entry is made). On
 * SESSLIMIT_OK *slot is set; release it with sesslimit_release(). */
enum sesslimit_rc sesslimit_acquire(struct sesslimit *t, size_t up, const char *sid,
                                    enum sesslimit_kind kind, size_t cap,
                                    struct sesslimit_entry **slot);
/* Gives back one slot of `kind` taken by sesslimit_acquire() on `slot`.
 * The entry is freed once it holds none; `slot` must not be used after. */
void sesslimit_release(struct sesslimit *t, struct sesslimit_entry *slot,
                       enum sesslimit_kind kind);

/* Slots of `kind` session (up, sid) holds now (0 when it has no entry). */
size_t sesslimit_held(struct sesslimit *t, size_t up, const char *sid, enum sesslimit_kind kind);
/* Counters and gauges, each read atomically. */
void sesslimit_get_stats(struct sesslimit *t, struct sesslimit_stats *out);

/* "in-flight requests" or "SSE streams", for messages. */
const char *sesslimit_kind_str(enum sesslimit_kind kind);

#endif

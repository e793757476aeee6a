/* ring: a fixed-slot ring of call records (HAProxy ring-t.h in spirit).
 *
 * Each record is stored as the recorder kept it (a compact stored form,
 * already redacted: hook_record.h) and written as the JSON text it is
 * served as (/calls, /calls/stream) when it is read, through the ring's
 * text function (ring_set_text), plus the few keys the filters compare.
 * Records appended as text (ring_append) are kept as that text. The ring has a fixed number of slots chosen
 * at creation; appending is O(1) and overwrites the oldest record once the
 * ring is full, counting it as dropped:
 *
 *        oldest                newest
 *          v                     v
 *   slots [ 5 ][ 6 ][ 7 ][ 8 ][ 9 ][ 4 ]   size 6, head -> slot of seq 10
 *                                  ^ next append overwrites seq 4 (dropped)
 *
 * Sequence numbers start at 1 and grow by one per record; a record's slot is
 * (seq - 1) % size. Reads copy records out (the caller owns the copies), so
 * nothing a reader holds is ever invalidated by a later append.
 *
 * Memory is bounded: size slots of at most RING_MAX_RECORD_BYTES of stored
 * record (or JSON text) and four keys of at most RING_KEY_MAX bytes each.
 *
 * Pure: no I/O, no clock, no logging. Not here: what a record contains
 * (proxy/hooks/hook_record.c) and how it is served (admin/calls.c).
 */
#ifndef MCPWARDEN_RING_H
#define MCPWARDEN_RING_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/base/sbuf.h"
#include "proxy/hooks/sink.h"

#define RING_DEFAULT_SIZE     1024
#define RING_MAX_SIZE         100000
/* A record's JSON text. The recorder cuts arguments and previews long
 * before this; it is the last line of defence. */
#define RING_MAX_RECORD_BYTES (64u * 1024)
/* Filter keys are stored and compared on at most this many bytes
 * (a longer key is kept cut, and a filter value is cut the same way). */
#define RING_KEY_MAX          256

/* The keys the filters compare: struct record_keys (proxy/hooks/sink.h),
 * every field may be NULL ("none"). */

/* A read query. NULL string fields and 0 numbers match everything. */
struct ring_filter {
	size_t limit;         /* at most this many records (0: no limit) */
	uint64_t since;       /* only records with seq > since */
	const char *method, *tool, *session, *outcome;  /* exact match */
	/* A finding code (proxy/hooks/hook_validate.h): only records whose
	 * top-level "findings" array holds one with this "code". Not a key:
	 * read from the record's text (a search, then a parse of the records
	 * that may hold it), so ring_keys_match ignores it. */
	const char *finding;
	int oldest_first;     /* 0: newest first (the /calls order) */
};

/* One record copied out of the ring. */
struct ring_item {
	uint64_t seq;
	char *json;           /* owned: NUL-terminated JSON text */
	size_t len;
};

struct ring;

/* A ring of size slots (1..RING_MAX_SIZE). Returns NULL on a bad size or
 * when memory runs out. */
struct ring *ring_new(size_t size);
void ring_free(struct ring *r);  /* accepts NULL */

/* The sequence number the next append will get (the recorder writes it
 * into the record before serialising it). */
uint64_t ring_next_seq(const struct ring *r);

/* Appends one record: json[0..len) is copied, keys are copied (cut at
 * RING_KEY_MAX - 1 bytes). Returns the record's sequence number, or 0 when
 * len is over RING_MAX_RECORD_BYTES or memory runs out (nothing changes,
 * and the sequence number is not used). */
uint64_t ring_append(struct ring *r, const struct record_keys *keys, const char *json, size_t len);

/* A record handed over whole (struct record_block, proxy/hooks/sink.h):
 * keys are compared on their first RING_KEY_MAX - 1 bytes, like
 * ring_append's cut copies. */

/* Appends b without copying (json[0..len): its stored record when the
 * ring has a text function, else its JSON text): its block moves into the next slot, and b
 * gets back the block that slot held ({NULL, 0} when it was empty), which
 * the caller now owns (to reuse or free, preferably outside any lock).
 * The caller keeps the memory bound: cap at most 2 * what the record
 * needs + 1024, as ring_append's reuse rule. Returns the record's
 * sequence number, or 0 when len is over RING_MAX_RECORD_BYTES (nothing
 * changes, b is left alone). */
uint64_t ring_swap(struct ring *r, struct record_block *b);

/* How a stored record (a block ring_swap took) becomes the JSON text it
 * is read as: appends the text of record seq, stored[0..len), to out. 0,
 * or -1 (out of memory, or not a stored record: the reader skips it). */
typedef int (*ring_text_fn)(const char *stored, size_t len, uint64_t seq, struct sbuf *out);
/* Blocks ring_swap takes from now on are stored records, read through
 * fn (NULL: blocks hold their JSON text, as ring_append's). Set it
 * before the first swap. */
void ring_set_text(struct ring *r, ring_text_fn fn);

/* Copies out the records matching f (NULL: all, newest first) into a new
 * array (*out, owned: free with ring_items_free). Returns how many; *out
 * is NULL when none matched. Returns (size_t)-1 when memory runs out. */
size_t ring_read(const struct ring *r, const struct ring_filter *f, struct ring_item **out);
void ring_items_free(struct ring_item *items, size_t n);

/* Whether one record matches f's string filters (used by live streams,
 * which apply the same filters to records as they are appended). */
int ring_keys_match(const struct record_keys *k, const struct ring_filter *f);

size_t ring_size(const struct ring *r);    /* slots */
size_t ring_count(const struct ring *r);   /* records held (<= size) */
uint64_t ring_dropped(const struct ring *r);  /* records overwritten */
/* Oldest and newest sequence numbers held; 0 when empty. */
uint64_t ring_oldest_seq(const struct ring *r);
uint64_t ring_newest_seq(const struct ring *r);

#endif

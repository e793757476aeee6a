/* record_text: a call record (hook_record.h says what it holds) as JSON
 * text, written from a table of its members.
 *
 * A leaf module of the recorder: hook_record decides what a record says
 * and fills a struct record_text_rec with it through record_text_set*;
 * this file stores and writes it (how it is spelled, and fast). It knows
 * nothing of exchanges, hooks or sinks beyond the block and keys it
 * hands over (proxy/hooks/sink.h).
 *
 * Tuning, with the gain measured when each step went in (instructions
 * per tools/call, callgrind; the commit named holds the runs):
 *   - the text is written once into a buffer allocated at its need: the
 *     strings' escaped lengths, known when they were stored, plus a bound
 *     on the rest (FIXED_ROOM) computed from the member table, so no
 *     member checks for room: format 2,818 -> 1,525 (998a874);
 *   - the per-exchange members come as one piece of text kept per
 *     thread (struct record_text_consts): profile 47,415 -> 46,710
 *     (b205908);
 *   - a member is escaped once, when it is stored, and reserved with
 *     inline arena helpers (no sbuf_room call): on_message 4,724 -> 4,706
 *     (acbb40a);
 *   - numbers 0..999 spelled in place, no call: format 1,274 -> 1,213
 *     (affbec2);
 *   - the date part of "time" kept per clock while the second lasts, the
 *     microseconds two digits a division: part of 46,416..46,570 ->
 *     46,352 (585ad64);
 *   - member names copied at a fixed size (no call), the slack in the
 *     bound: the table-driven writer cost +0.9% with it (40c7ffe).
 */
#ifndef MCPWARDEN_RECORD_TEXT_H
#define MCPWARDEN_RECORD_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "proxy/base/sbuf.h"
#include "proxy/hooks/sink.h"

enum record_text_kind { RT_KIND_REQUEST, RT_KIND_NOTIFICATION, RT_KIND_RESPONSE };

/* A record's string members, in the order they are written. From
 * RT_PREVIEW on they are the answer's, kept in rec.ans. */
enum record_text_str {
	RT_SESSION, RT_CLIENT, RT_CLIENT_NAME, RT_UPSTREAM, RT_PROTOCOL, RT_CLIENT_TRANSPORT,
	RT_UPSTREAM_TRANSPORT, RT_METHOD, RT_TOOL, RT_ID,
	RT_TRACE_ID, RT_SPAN_ID, /* telemetry (issue 23): the SERVER span's, hex */
	RT_ARGUMENTS, RT_PREVIEW,
	RT_ERROR_MESSAGE, RT_RULE, RT_NOTE, RT_FINDINGS, RT_NSTR
};
/* RT_FINDINGS holds JSON text, not a string: the findings' objects,
 * comma-separated, without the brackets (record_text_add_json); the
 * member is written only when there are some. */
#define RT_ANS_FIRST RT_PREVIEW
/* Members kept as they are (the ring's keys, the metrics' labels and id
 * matching read them); the others are kept as the escaped text of their
 * JSON string, ready to be copied into records. */
#define RT_RAW_FIELDS (1u << RT_SESSION | 1u << RT_METHOD | 1u << RT_TOOL | 1u << RT_ID)
#define RT_IS_RAW(f) ((RT_RAW_FIELDS >> (f)) & 1u)

/* The members client..upstream_transport: per exchange, not per message
 * (see struct record_text_consts). */
#define RT_CONST_FIRST RT_CLIENT
#define RT_NCONST (RT_UPSTREAM_TRANSPORT - RT_CLIENT + 1)

/* A record, as its writer reads it. The caller fills it; every field is
 * read (none is left over from an earlier use: reset a reused one). */
struct record_text_rec {
	/* 1 + offset of the member's NUL-terminated text in its arena; 0:
	 * null. Offsets, not pointers: an arena may move as it grows. */
	size_t str[RT_NSTR];
	size_t len[RT_NSTR];     /* the member's length when not null */
	size_t esc[RT_NSTR];     /* and its length escaped (= len if not RT_IS_RAW) */
	/* owned; arena: the members up to RT_ARGUMENTS, and the id; ans:
	 * the answer's */
	struct sbuf arena, ans;
	/* 1 + arena offset of the members RT_CLIENT..RT_UPSTREAM_TRANSPORT
	 * as JSON text, names and all (record_text_consts_put), and its length;
	 * 0: not there, the writer writes them one by one. */
	size_t consts, consts_len;
	uint64_t wall_us;        /* Unix time for "time" */
	const char *from;        /* static: "client", "server" */
	enum record_text_kind kind;
	const char *outcome;     /* static, or NULL: not decided yet */
	long long id_int;        /* the id when id_kind is RT_ID_INT */
	enum { RT_ID_NULL, RT_ID_INT, RT_ID_STR } id_kind;
	size_t id_raw, id_raw_len; /* a string id, whole, for matching: arena offset */
	long long error_code;
	int has_error_code;
	int is_error;            /* -1: null */
	int http_status;         /* 0: null */
	int arguments_cut, result_cut, modified;
	unsigned notifications;
	int finished;            /* latency and bytes are known */
	uint64_t latency_us, bytes_in, bytes_out;
};

/* Member f's text (NULL: null). */
static inline const char *record_text_get(const struct record_text_rec *r,
                                          enum record_text_str f)
{
	const struct sbuf *a = f >= RT_ANS_FIRST ? &r->ans : &r->arena;
	return r->str[f] ? a->p + r->str[f] - 1 : NULL;
}

/* A record's text (sink.h's struct hook_record_text): embedded by the
 * recorder's outboxes, which swap the buffers between texts. */
struct hook_record_text {
	/* room for "seq", the members, NUL, then the keys' text */
	struct sbuf b;               /* owned, kept across uses */
	size_t json_len;             /* of the members, after the room for "seq" */
	struct record_keys keys;     /* into b, or static */
	struct record_block rb;      /* record_text_block's */
	struct sbuf text;            /* owned: hook_record_text_seal's JSON text */
	int stored;                  /* b holds the stored form (record_text_pack),
	                              * else the JSON text (record_text_format) */
};

/* The date part of the last time written (per thread: a writer's own). */
struct record_text_clock {
	time_t day_sec;              /* the second day_text spells, or -1 */
	char day_text[24];           /* "YYYY-MM-DDTHH:MM:SS" */
	size_t day_len;              /* strlen(day_text) */
};
#define RECORD_TEXT_CLOCK_INIT {.day_sec = (time_t)-1}

/* r's text (every member but "seq") and keys into t, replacing what t
 * held; its buffer is reused when big enough. 0, or -1 when memory runs
 * out (t then holds no record). */
int record_text_format(struct hook_record_text *t, struct record_text_clock *c,
                       const struct record_text_rec *r);

/* Puts "seq" in front of t's text and returns the whole of it
 * (hook_record_text_seal, hook_record.h). */
char *record_text_seal(struct hook_record_text *t, uint64_t seq, size_t *len);
/* The sealed text as a block (hook_record_text_block, hook_record.h). */
struct record_block *record_text_block(struct hook_record_text *t, uint64_t seq);

/* ---- the stored form ---- */

/* r as the ring keeps it (issue 20: records are written as JSON text when
 * they are read, not per call): r's struct and its arenas' bytes, copied
 * into t's buffer (reused when big enough), t->json_len bytes; keys into
 * it. Cost per tools/call, callgrind: see the commit that brought it.
 * The strings are the record's own, redacted and cut before they were
 * stored: no secret is in these bytes. 0, or -1 when memory runs out. */
int record_text_pack(struct hook_record_text *t, const struct record_text_rec *r);
/* A view of a stored record (stored[0..len), as record_text_pack wrote
 * it): v's arenas point into stored, which must outlive v and is not
 * written. -1: not a stored record of that length. */
int record_text_view(const char *stored, size_t len, struct record_text_rec *v);
/* Appends r's whole JSON text, "seq" first, to out (NUL-terminated). 0,
 * or -1 when memory runs out. */
int record_text_write(struct sbuf *out, struct record_text_clock *c,
                      const struct record_text_rec *r, uint64_t seq);

/* ---- filling a record ---- */

/* Stores s[0..n) as member f of r (NULL: null), in the arena the member
 * belongs to: as it is for the raw members (RT_IS_RAW), else as the
 * escaped text of its JSON string, so that each writing copies it. Text
 * that is not UTF-8 (header values can be anything, and JSON text must
 * be UTF-8) is null. Out of memory: null, and the arena's oom is set. */
void record_text_set(struct record_text_rec *r, enum record_text_str f, const char *s, size_t n);
/* Appends the JSON text s[0..n) (one or more values, comma-separated)
 * to member f, kept as JSON text (RT_FINDINGS), after a comma when it
 * holds some already. Out of memory: the arena's oom is set. */
void record_text_add_json(struct record_text_rec *r, enum record_text_str f, const char *s,
                          size_t n);
/* record_text_set of s (NUL-terminated, or NULL) cut to max characters,
 * visibly (redact_cut). */
void record_text_set_cut(struct record_text_rec *r, enum record_text_str f, const char *s,
                         size_t max);

/* The members RT_CLIENT..RT_UPSTREAM_TRANSPORT as JSON text for the
 * values they last had, kept by one thread: most exchanges come from the
 * client connection and go to the upstream the last one did, so a record
 * copies that text in one piece (rec.consts) after a strcmp a value,
 * instead of storing six members. */
struct record_text_consts;
struct record_text_consts *record_text_consts_new(void); /* NULL: out of memory */
void record_text_consts_free(struct record_text_consts *c); /* accepts NULL */
/* Sets r's members RT_CLIENT..RT_UPSTREAM_TRANSPORT to v (RT_NCONST
 * values, in that order, NULL for null), through c: the members whose bit
 * (1u << f) is set in cut are cut to max characters, as
 * record_text_set_cut would. Out of memory: r's arena's oom is set (the
 * record is not written). */
void record_text_consts_put(struct record_text_consts *c, struct record_text_rec *r,
                            const char *const *v, unsigned cut, size_t max);

#endif

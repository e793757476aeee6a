/* record_text: see record_text.h. */
#include "proxy/hooks/record_text.h"

#include <assert.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "proxy/hooks/redact.h"

/* Room left in front of a record's text for {"seq":N, */
#define SEQ_ROOM 32

/* The per-exchange members as JSON text for the values they last had
 * (record_text.h). */
struct record_text_consts {
	int valid;
	struct sbuf key;          /* owned: each non-NULL value, with its NUL */
	size_t key_at[RT_NCONST]; /* 1 + offset of the value in key; 0: NULL */
	struct sbuf text;         /* owned: ,"client":…,"upstream_transport":… */
	size_t str[RT_NCONST];    /* as a record's str, offsets into text */
	size_t len[RT_NCONST];    /* as a record's len (= esc) */
	struct record_text_rec *tmp; /* owned, or NULL: where the text is made */
};

/* ---- storing members ------------------------------------------------------- */

static struct sbuf *arena_of(struct record_text_rec *r, enum record_text_str f)
{
	return f >= RT_ANS_FIRST ? &r->ans : &r->arena;
}

/* sbuf_room and sbuf_wrote for an arena, the common case (room enough)
 * without a call: a record sets a dozen members. */
static inline char *arena_room(struct sbuf *a, size_t n)
{
	if (!a->oom && n < a->cap && a->len < a->cap - n)
		return a->p + a->len;
	return sbuf_room(a, n);
}

static inline void arena_wrote(struct sbuf *a, size_t k)
{
	a->len += k;
	a->p[a->len] = '\0';
}

void record_text_set(struct record_text_rec *r, enum record_text_str f, const char *s, size_t n)
{
	if (!s) {
		r->str[f] = 0;
		return;
	}
	struct sbuf *a = arena_of(r, f);
	if (sbuf_json_plain(s, n)) {
		/* Names, addresses, ids: mostly their own JSON text, found so
		 * in one scan. A raw member keeps its NUL in the arena. */
		char *w = arena_room(a, n + 1);
		if (!w) {
			r->str[f] = 0;
			return;
		}
		memcpy(w, s, n);
		w[n] = '\0';
		r->str[f] = a->len + 1;
		r->len[f] = r->esc[f] = n;
		arena_wrote(a, RT_IS_RAW(f) ? n + 1 : n);
		return;
	}
	if (!sbuf_utf8_valid(s, n)) {
		r->str[f] = 0;
		return;
	}
	if (!RT_IS_RAW(f)) {
		/* Escaped once, here; each record then copies it. Room for the
		 * worst case when that is small, else for the exact size (a long
		 * text must not grow a pooled arena sixfold). */
		char *w = arena_room(a, n <= 256 ? 6 * n : sbuf_json_escaped_len(s, n));
		if (!w) {
			r->str[f] = 0;
			return;
		}
		size_t e = sbuf_json_escape_to(w, s, n);
		r->str[f] = a->len + 1;
		r->len[f] = r->esc[f] = e;
		arena_wrote(a, e);
		return;
	}
	char *w = sbuf_room(a, n + 1);
	if (!w) {
		r->str[f] = 0;
		return;
	}
	memcpy(w, s, n);
	w[n] = '\0'; /* its NUL, as part of the arena's content */
	r->str[f] = a->len + 1;
	r->len[f] = n;
	r->esc[f] = sbuf_json_escaped_len(s, n);
	sbuf_wrote(a, n + 1);
}

void record_text_add_json(struct record_text_rec *r, enum record_text_str f, const char *s,
                          size_t n)
{
	struct sbuf *a = arena_of(r, f);
	size_t old = r->str[f] ? r->len[f] : 0, at = r->str[f];
	/* A new copy at the arena's end (the old one stays, unread): the
	 * arena may move as it grows, so the old text is found by offset. */
	char *w = sbuf_room(a, old + 1 + n + 1);
	if (!w)
		return;
	if (old) {
		memcpy(w, a->p + at - 1, old);
		w[old] = ',';
		memcpy(w + old + 1, s, n);
	} else {
		memcpy(w, s, n);
	}
	size_t len = old ? old + 1 + n : n;
	w[len] = '\0';
	r->str[f] = a->len + 1;
	r->len[f] = r->esc[f] = len;
	sbuf_wrote(a, len);
}

void record_text_set_cut(struct record_text_rec *r, enum record_text_str f, const char *s,
                         size_t max)
{
	size_t n = s ? strnlen(s, max + 1) : 0;
	if (!s || n <= max) {
		record_text_set(r, f, s, n);
		return;
	}
	char *cut = redact_cut(s, max, NULL);
	record_text_set(r, f, cut, cut ? strlen(cut) : 0);
	free(cut);
}

/* ---- time ---------------------------------------------------------------- */

#define TIME_TEXT_MAX 40 /* what put_time writes at most, quotes included */

/* hook_record_time (hook_record.h) as a quoted JSON string at w, the date
 * part reused while the second lasts (per clock): calls come thousands a
 * second, gmtime and strftime once a second. Returns the end. */
static char *put_time(struct record_text_clock *l, char *w, uint64_t unix_us)
{
	time_t secs = (time_t)(unix_us / 1000000u);
	unsigned us = (unsigned)(unix_us % 1000000u);
	char frac[9] = {'.', 0, 0, 0, 0, 0, 0, 'Z', '"'};

	if (secs != l->day_sec) {
		struct tm tm;
		gmtime_r(&secs, &tm);
		l->day_len = strftime(l->day_text, sizeof(l->day_text), "%Y-%m-%dT%H:%M:%S", &tm);
		if (l->day_len == 0)
			l->day_text[0] = '\0';
		l->day_sec = secs;
	}
	/* two digits a division */
	for (int i = 6; i >= 2; i -= 2, us /= 100) {
		unsigned d = us % 100;
		frac[i] = (char)('0' + d % 10);
		frac[i - 1] = (char)('0' + d / 10);
	}
	size_t n = l->day_len;
	*w++ = '"';
	memcpy(w, l->day_text, n);
	w += n;
	memcpy(w, frac, sizeof(frac));
	return w + sizeof(frac);
}

/* ---- the record as JSON text ------------------------------------------------ */

/* A text's buffer grows to its need rounded up to this, not by doubling:
 * blocks the ring keeps stay near their record's size. */
#define TEXT_ROUND 256

#define W_LIT(w, lit) (memcpy((w), (lit), sizeof(lit) - 1), (w) + sizeof(lit) - 1)

/* A string member as JSON: esc is sbuf_json_escaped_len(s, n). */
static char *w_str(char *w, const char *s, size_t n, size_t esc)
{
	if (!s)
		return W_LIT(w, "null");
	*w++ = '"';
	if (esc == n)
		memcpy(w, s, n); /* nothing to escape: the common case */
	else
		sbuf_json_escape_to(w, s, n);
	w += esc;
	*w++ = '"';
	return w;
}

static char *w_bool(char *w, int v)
{
	return v ? W_LIT(w, "true") : W_LIT(w, "false");
}

static char *w_i64(char *w, long long v)
{
	/* Most numbers in a record are short (an id, a status, a count, the
	 * bytes of a small exchange): those are written without a call. */
	if (v >= 0 && v < 1000) {
		unsigned u = (unsigned)v;
		if (u >= 100)
			*w++ = (char)('0' + u / 100);
		if (u >= 10)
			*w++ = (char)('0' + u / 10 % 10);
		*w++ = (char)('0' + u % 10);
		return w;
	}
	return w + sbuf_i64_text(w, v);
}

static char *w_u64_or_null(char *w, int known, uint64_t v)
{
	return known ? w_i64(w, (long long)v) : W_LIT(w, "null");
}

static const char *const kind_words[] = {"request", "notification", "response"};
static const size_t kind_lens[] = {sizeof("request") - 1, sizeof("notification") - 1,
                                   sizeof("response") - 1};

/* Member f of r as JSON. */
static char *w_member(char *w, const struct record_text_rec *r, enum record_text_str f)
{
	return w_str(w, record_text_get(r, f), r->len[f], r->esc[f]);
}

static char *w_word(char *w, const char *s, size_t n)
{
	return w_str(w, s, n, n);
}

/* The names of the members RT_CLIENT..RT_UPSTREAM_TRANSPORT, as written. */
#define CONST_NAME(s) {s, sizeof(s) - 1}
static const struct {
	const char *s;
	size_t n;
} const_names[RT_NCONST] = {
	CONST_NAME(",\"client\":"),           CONST_NAME(",\"client_name\":"),
	CONST_NAME(",\"upstream\":"),         CONST_NAME(",\"protocol\":"),
	CONST_NAME(",\"client_transport\":"), CONST_NAME(",\"upstream_transport\":"),
};
/* What const_names and their values write beyond the values' escaped
 * text: 91 bytes of names, and at most 4 a value ("null"). */
#define CONST_ROOM 128

/* The members RT_CLIENT..RT_UPSTREAM_TRANSPORT of r, names and all, at w;
 * at (or NULL) receives the offset of each value from w. */
static char *w_consts(char *w, const struct record_text_rec *r, size_t *at)
{
	char *start = w;
	for (int i = 0; i < RT_NCONST; i++) {
		memcpy(w, const_names[i].s, const_names[i].n);
		w += const_names[i].n;
		if (at)
			at[i] = (size_t)(w - start);
		w = w_member(w, r, (enum record_text_str)(RT_CONST_FIRST + i));
	}
	return w;
}


/* The lengths of r's words, outcome 0 when it is null. */
struct words {
	size_t from, kind, outcome;
};

/* ---- the record's members, as a table ---------------------------------- */

/* The members after "seq", in the order hook_record.h lists them: one
 * line each, its name, how its value is written (M_*), and which value
 * (a string member, or the offset of a number or flag in struct record_text_rec).
 * Adding a member is adding its line (and, for a new kind of value, a
 * case in rec_write and its ROOM_). */
#define RECORD_MEMBERS(X)                                               \
	X("time", TIME, 0)                                              \
	X("session", STR, RT_SESSION)                                    \
	X("", CONSTS, 0) /* client … upstream_transport (w_consts) */  \
	X("from", FROM, 0)                                              \
	X("kind", KIND, 0)                                              \
	X("method", STR, RT_METHOD)                                      \
	X("tool", STR, RT_TOOL)                                          \
	X("id", ID, 0)                                                  \
	X("arguments", STR, RT_ARGUMENTS)                                \
	X("arguments_cut", BOOL, offsetof(struct record_text_rec, arguments_cut))   \
	X("result_preview", STR, RT_PREVIEW)                             \
	X("result_cut", BOOL, offsetof(struct record_text_rec, result_cut))         \
	X("http_status", STATUS, 0)                                     \
	X("is_error", TRI, offsetof(struct record_text_rec, is_error))              \
	X("error_code", ERROR_CODE, 0)                                  \
	X("error_message", STR, RT_ERROR_MESSAGE)                        \
	X("outcome", OUTCOME, 0)                                        \
	X("rule", STR, RT_RULE)                                          \
	X("modified", BOOL, offsetof(struct record_text_rec, modified))             \
	X("notifications", COUNT, offsetof(struct record_text_rec, notifications))  \
	X("note", STR, RT_NOTE)                                          \
	X("latency_us", FINISHED, offsetof(struct record_text_rec, latency_us))     \
	X("bytes_in", FINISHED, offsetof(struct record_text_rec, bytes_in))         \
	X("bytes_out", FINISHED, offsetof(struct record_text_rec, bytes_out))    \
	X("trace_id", STR_OPT, RT_TRACE_ID) /* telemetry: only when on */ \
	X("span_id", STR_OPT, RT_SPAN_ID)                                \
	X("findings", JSON_OPT, RT_FINDINGS) /* only when there are some */

enum member_kind {
	M_TIME,       /* r->wall_us, RFC 3339 (put_time) */
	M_STR,        /* string member arg (w_member), or null */
	M_CONSTS,     /* the per-exchange members, names and all (no name here) */
	M_FROM,       /* r->from */
	M_KIND,       /* r->kind's word */
	M_ID,         /* the JSON-RPC id: integer, string (RT_ID) or null */
	M_BOOL,       /* the int at offset arg */
	M_STATUS,     /* r->http_status, null when 0 */
	M_TRI,        /* the int at offset arg: < 0 null, else a boolean */
	M_ERROR_CODE, /* r->error_code when r->has_error_code, else null */
	M_OUTCOME,    /* r->outcome, or null */
	M_COUNT,      /* the unsigned at offset arg */
	M_FINISHED,   /* the uint64_t at offset arg once r->finished, else null */
	M_JSON_OPT,   /* string member arg as a JSON array of its text, name and
	               * all; nothing when it is null (an optional member) */
	M_STR_OPT,    /* string member arg, name and all; nothing when it is null
	               * (telemetry's ids: records stay as they were without it) */
};

/* What a member's value writes at most beyond the escaped text of its
 * strings (counted from the arenas and words by record_text_format): a
 * string's quotes or "null", a number, a boolean. */
#define ROOM_TIME       TIME_TEXT_MAX
#define ROOM_STR        4
#define ROOM_CONSTS     CONST_ROOM
#define ROOM_FROM       4
#define ROOM_KIND       4
#define ROOM_ID         SBUF_I64_MAX
#define ROOM_BOOL       5
#define ROOM_STATUS     SBUF_I64_MAX
#define ROOM_TRI        5
#define ROOM_ERROR_CODE SBUF_I64_MAX
#define ROOM_OUTCOME    4
#define ROOM_COUNT      SBUF_I64_MAX
#define ROOM_FINISHED   SBUF_I64_MAX
#define ROOM_JSON_OPT   2
#define ROOM_STR_OPT    4

/* A name is copied as MEMBER_NAME_MAX bytes whatever its length (a
 * fixed-size copy, no call), then the pointer moves by its length: the
 * bytes past it are overwritten by what follows. MEMBER_NAME_MAX of slack
 * in FIXED_ROOM keeps the last copy inside the buffer. */
#define MEMBER_NAME_MAX 24
#define MEMBER_NAME(name) ",\"" name "\":"
#define MEMBER_ENTRY(name, kind, arg) \
	{MEMBER_NAME(name), sizeof(MEMBER_NAME(name)) - 1, M_##kind, (unsigned short)(arg)},
#define MEMBER_ROOM(name, kind, arg) +(sizeof(MEMBER_NAME(name)) - 1 + ROOM_##kind)

#define MEMBER_FITS(name, kind, arg)                                  \
	_Static_assert(sizeof(MEMBER_NAME(name)) - 1 <= MEMBER_NAME_MAX, \
	               "member name too long: " name);
RECORD_MEMBERS(MEMBER_FITS)

static const struct member {
	char name[MEMBER_NAME_MAX]; /* ,"name": (the first is written without the comma) */
	unsigned char len;
	unsigned char kind;    /* enum member_kind */
	unsigned short arg;
} members[] = {RECORD_MEMBERS(MEMBER_ENTRY)};

/* Everything rec_write writes but the strings' escaped text: the names,
 * each value's room, '}', and the names' slack. A bound, computed from
 * the table; checked by an assert after each write. */
#define FIXED_ROOM (0 RECORD_MEMBERS(MEMBER_ROOM) + 1 + MEMBER_NAME_MAX)

static int rec_int_at(const struct record_text_rec *r, unsigned off)
{
	int v;
	memcpy(&v, (const char *)r + off, sizeof(v));
	return v;
}

/* The members after "seq", as the table says, at w (room for FIXED_ROOM
 * + every string's escaped size). Returns the end. */
static char *rec_write(struct record_text_clock *l, const struct record_text_rec *r,
                       const struct words *n, char *w)
{
	/* The first member has no comma before it. */
	memcpy(w, members[0].name + 1, MEMBER_NAME_MAX - 1);
	w += members[0].len - 1;
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		const struct member *m = &members[i];
		if (m->kind == M_JSON_OPT) {
			const char *j = record_text_get(r, (enum record_text_str)m->arg);
			if (!j)
				continue;
			memcpy(w, m->name, MEMBER_NAME_MAX);
			w += m->len;
			*w++ = '[';
			memcpy(w, j, r->len[m->arg]);
			w += r->len[m->arg];
			*w++ = ']';
			continue;
		}
		if (m->kind == M_STR_OPT) {
			if (!r->str[m->arg])
				continue;
			memcpy(w, m->name, MEMBER_NAME_MAX);
			w += m->len;
			w = w_member(w, r, (enum record_text_str)m->arg);
			continue;
		}
		if (i > 0 && m->kind != M_CONSTS) {
			memcpy(w, m->name, MEMBER_NAME_MAX);
			w += m->len;
		}
		switch ((enum member_kind)m->kind) {
		case M_TIME:
			w = put_time(l, w, r->wall_us);
			break;
		case M_STR:
			w = w_member(w, r, (enum record_text_str)m->arg);
			break;
		case M_CONSTS:
			if (r->consts) {
				memcpy(w, r->arena.p + r->consts - 1, r->consts_len);
				w += r->consts_len;
			} else {
				w = w_consts(w, r, NULL);
			}
			break;
		case M_FROM:
			w = w_word(w, r->from, n->from);
			break;
		case M_KIND:
			w = w_word(w, kind_words[r->kind], n->kind);
			break;
		case M_ID:
			if (r->id_kind == RT_ID_INT)
				w = w_i64(w, r->id_int);
			else if (r->id_kind == RT_ID_STR)
				w = w_member(w, r, RT_ID);
			else
				w = W_LIT(w, "null");
			break;
		case M_BOOL:
			w = w_bool(w, rec_int_at(r, m->arg));
			break;
		case M_STATUS:
			w = w_u64_or_null(w, r->http_status != 0, (uint64_t)r->http_status);
			break;
		case M_TRI: {
			int v = rec_int_at(r, m->arg);
			w = v < 0 ? W_LIT(w, "null") : w_bool(w, v);
			break;
		}
		case M_ERROR_CODE:
			w = r->has_error_code ? w_i64(w, r->error_code) : W_LIT(w, "null");
			break;
		case M_OUTCOME:
			w = w_word(w, r->outcome, n->outcome);
			break;
		case M_COUNT: {
			unsigned v;
			memcpy(&v, (const char *)r + m->arg, sizeof(v));
			w = w_i64(w, v);
			break;
		}
		case M_JSON_OPT:
		case M_STR_OPT:
			break; /* above */
		case M_FINISHED: {
			uint64_t v;
			memcpy(&v, (const char *)r + m->arg, sizeof(v));
			w = w_u64_or_null(w, r->finished, v);
			break;
		}
		}
	}
	*w++ = '}';
	return w;
}

char *record_text_seal(struct hook_record_text *t, uint64_t seq, size_t *len)
{
	char head[SEQ_ROOM];
	size_t n = 0;
	memcpy(head, "{\"seq\":", 7);
	n = 7 + sbuf_i64_text(head + 7, (long long)seq);
	head[n++] = ',';
	char *start = t->b.p + SEQ_ROOM - n;
	memcpy(start, head, n);
	*len = n + t->json_len;
	return start;
}

struct record_block *record_text_block(struct hook_record_text *t, uint64_t seq)
{
	size_t len;
	char *s = record_text_seal(t, seq, &len);
	t->rb = (struct record_block){
		.block = t->b.p, .cap = t->b.cap, .json = s, .len = len, .keys = t->keys,
	};
	return &t->rb;
}

/* The bytes r's text needs at most, "seq" included, and its words' lengths
 * into *n. Every string member's escaped text, quotes aside, is in the
 * arenas but for the raw members', which are there unescaped: their
 * escaped sizes on top (an over-count, not a per-member sum). */
static size_t text_need(const struct record_text_rec *r, struct words *n)
{
	*n = (struct words){
		.from = strlen(r->from),
		.kind = kind_lens[r->kind],
		.outcome = r->outcome ? strlen(r->outcome) : 0,
	};
	size_t need = SEQ_ROOM + FIXED_ROOM + r->arena.len + r->ans.len + n->from + n->kind +
	              n->outcome;
	for (int f = 0; f < RT_ANS_FIRST; f++)
		if (RT_IS_RAW(f) && r->str[f])
			need += r->esc[f];
	return need;
}

/* A key's copy after the text, for the ring (NULL stays NULL). */
static const char *put_key(char **w, const char *s, size_t n)
{
	if (!s)
		return NULL;
	char *k = *w;
	memcpy(k, s, n);
	k[n] = '\0';
	*w += n + 1;
	return k;
}

/* r's text and keys into t (see record_text.h): 0, or -1 when memory
 * runs out (the record is lost, as a failed json_dumps lost it). */
int record_text_format(struct hook_record_text *t, struct record_text_clock *l,
                       const struct record_text_rec *r)
{
	struct sbuf *b = &t->b;
	const char *method = record_text_get(r, RT_METHOD), *tool = record_text_get(r, RT_TOOL),
		   *session = record_text_get(r, RT_SESSION);
	size_t n_method = method ? r->len[RT_METHOD] : 0, n_tool = tool ? r->len[RT_TOOL] : 0,
	       n_session = session ? r->len[RT_SESSION] : 0;
	struct words n;
	/* the text, then the keys */
	size_t need = text_need(r, &n) + n_method + n_tool + n_session;

	b->len = 0;
	b->oom = 0;
	if (b->cap < need + 1) {
		/* Nothing in it to keep: a fresh block, not a realloc's copy. */
		size_t cap = (need + 1 + TEXT_ROUND - 1) / TEXT_ROUND * TEXT_ROUND;
		free(b->p);
		*b = (struct sbuf){.p = malloc(cap), .cap = cap};
		if (!b->p) {
			*b = (struct sbuf){0};
			return -1;
		}
	}
	char *start = b->p;
	t->stored = 0;
	memset(start, ' ', SEQ_ROOM);
	char *w = rec_write(l, r, &n, start + SEQ_ROOM);
	t->json_len = (size_t)(w - start) - SEQ_ROOM;
	*w++ = '\0';
	t->keys.method = put_key(&w, method, n_method);
	t->keys.tool = put_key(&w, tool, n_tool);
	t->keys.session = put_key(&w, session, n_session);
	t->keys.outcome = r->outcome; /* static */
	assert((size_t)(w - start) <= need);
	sbuf_wrote(b, (size_t)(w - start) - 1); /* the last key's NUL is sbuf's */
	/* The ring may keep this very block: hold it to ring_append's rule
	 * (at most twice what it needs, plus 1024). */
	if (b->cap > 2 * (b->len + 1) + 1024) {
		char *p = realloc(b->p, b->len + 1);
		if (p) {
			b->p = p;
			b->cap = b->len + 1;
		}
	}
	return 0;
}

/* ---- the stored form (issue 20: formatting when records are read) -------- */

/* A record is kept as it was built: the struct itself (its arenas'
 * pointers aside), then the arena's bytes and the answer arena's. Its
 * strings are in there already redacted, cut and escaped; what writing
 * adds (member names, numbers, "time") is done when a reader asks. */
static size_t stored_need(const struct record_text_rec *r)
{
	return sizeof(*r) + r->arena.len + 1 + r->ans.len + 1;
}

int record_text_pack(struct hook_record_text *t, const struct record_text_rec *r)
{
	struct sbuf *b = &t->b;
	size_t need = stored_need(r);
	b->len = 0;
	b->oom = 0;
	if (b->cap < need + 1 || b->cap > 2 * (need + 1) + 1024) {
		/* Nothing in it to keep: a fresh block, not a realloc's copy;
		 * held to ring_append's rule (at most twice what it needs, plus
		 * 1024), as the ring may keep this very block. */
		size_t cap = (need + 1 + TEXT_ROUND - 1) / TEXT_ROUND * TEXT_ROUND;
		free(b->p);
		*b = (struct sbuf){.p = malloc(cap), .cap = cap};
		if (!b->p) {
			*b = (struct sbuf){0};
			return -1;
		}
	}
	char *w = b->p;
	struct record_text_rec h = *r;
	h.arena = (struct sbuf){.len = r->arena.len};
	h.ans = (struct sbuf){.len = r->ans.len};
	memcpy(w, &h, sizeof(h));
	w += sizeof(h);
	char *arena = w;
	if (r->arena.len)
		memcpy(w, r->arena.p, r->arena.len);
	w += r->arena.len;
	*w++ = '\0';
	if (r->ans.len)
		memcpy(w, r->ans.p, r->ans.len);
	w += r->ans.len;
	*w++ = '\0';
	/* The keys are the raw members, NUL-terminated in the arena copy. */
	t->keys.method = r->str[RT_METHOD] ? arena + r->str[RT_METHOD] - 1 : NULL;
	t->keys.tool = r->str[RT_TOOL] ? arena + r->str[RT_TOOL] - 1 : NULL;
	t->keys.session = r->str[RT_SESSION] ? arena + r->str[RT_SESSION] - 1 : NULL;
	t->keys.outcome = r->outcome; /* static */
	t->json_len = need;
	t->stored = 1;
	b->len = need;
	return 0;
}

int record_text_view(const char *stored, size_t len, struct record_text_rec *v)
{
	if (len < sizeof(*v))
		return -1;
	memcpy(v, stored, sizeof(*v));
	if (stored_need(v) != len)
		return -1;
	char *arena = (char *)(uintptr_t)stored + sizeof(*v); /* read only */
	v->arena.p = arena;
	v->arena.cap = v->arena.len + 1;
	v->ans.p = arena + v->arena.len + 1;
	v->ans.cap = v->ans.len + 1;
	return 0;
}

int record_text_write(struct sbuf *out, struct record_text_clock *c,
                      const struct record_text_rec *r, uint64_t seq)
{
	struct words n;
	size_t need = text_need(r, &n);
	char *start = sbuf_room(out, need + 1);
	if (!start)
		return -1;
	char *w = start;
	memcpy(w, "{\"seq\":", 7);
	w += 7;
	w += sbuf_i64_text(w, (long long)seq);
	*w++ = ',';
	w = rec_write(c, r, &n, w);
	assert((size_t)(w - start) <= need);
	*w = '\0';
	sbuf_wrote(out, (size_t)(w - start));
	return 0;
}

/* ---- the per-exchange members, cached (struct record_text_consts) -------- */

/* Whether c was made of the values v (NULL for NULL). */
static int consts_hold(const struct record_text_consts *c, const char *const *v)
{
	if (!c->valid)
		return 0;
	for (int i = 0; i < RT_NCONST; i++) {
		if (!v[i] != !c->key_at[i])
			return 0;
		if (v[i] && strcmp(v[i], c->key.p + c->key_at[i] - 1) != 0)
			return 0;
	}
	return 1;
}

/* c made anew of the values v, each stored as a record stores it (cut as
 * the caller says, escaped, or null when not UTF-8). -1: out of memory. */
static int consts_make(struct record_text_consts *c, const char *const *v, unsigned cut,
                       size_t max)
{
	c->valid = 0;
	if (!c->tmp && !(c->tmp = calloc(1, sizeof(*c->tmp))))
		return -1;
	struct record_text_rec *t = c->tmp;
	struct sbuf arena = t->arena;
	memset(t, 0, sizeof(*t));
	t->arena = (struct sbuf){.p = arena.p, .cap = arena.cap};
	for (int i = 0; i < RT_NCONST; i++) {
		enum record_text_str f = (enum record_text_str)(RT_CONST_FIRST + i);
		if (cut >> f & 1u)
			record_text_set_cut(t, f, v[i], max);
		else
			record_text_set(t, f, v[i], v[i] ? strlen(v[i]) : 0);
	}
	c->key.len = 0;
	c->key.oom = 0;
	for (int i = 0; i < RT_NCONST; i++) {
		c->key_at[i] = v[i] ? c->key.len + 1 : 0;
		if (v[i])
			sbuf_putn(&c->key, v[i], strlen(v[i]) + 1);
	}
	/* The non-raw members' arena holds their escaped text only. */
	size_t need = t->arena.len + CONST_ROOM, at[RT_NCONST];
	c->text.len = 0;
	c->text.oom = 0;
	char *w = sbuf_room(&c->text, need);
	if (!w || t->arena.oom || c->key.oom)
		return -1;
	size_t n = (size_t)(w_consts(w, t, at) - w);
	assert(n <= need);
	sbuf_wrote(&c->text, n);
	for (int i = 0; i < RT_NCONST; i++) {
		enum record_text_str f = (enum record_text_str)(RT_CONST_FIRST + i);
		/* 1 + the offset of the value's text, past its quote */
		c->str[i] = t->str[f] ? at[i] + 2 : 0;
		c->len[i] = t->str[f] ? t->len[f] : 0;
	}
	c->valid = 1;
	return 0;
}

struct record_text_consts *record_text_consts_new(void)
{
	return calloc(1, sizeof(struct record_text_consts));
}

void record_text_consts_free(struct record_text_consts *c)
{
	if (!c)
		return;
	free(c->key.p);
	free(c->text.p);
	if (c->tmp)
		free(c->tmp->arena.p);
	free(c->tmp);
	free(c);
}

void record_text_consts_put(struct record_text_consts *c, struct record_text_rec *r,
                            const char *const *v, unsigned cut, size_t max)
{
	if (!consts_hold(c, v) && consts_make(c, v, cut, max) < 0) {
		/* Out of memory: the record is not written, as when its own
		 * arena runs out. */
		r->arena.oom = 1;
		return;
	}
	char *d = arena_room(&r->arena, c->text.len);
	if (!d)
		return; /* the arena is out of memory (oom set) */
	size_t base = r->arena.len;
	memcpy(d, c->text.p, c->text.len);
	arena_wrote(&r->arena, c->text.len);
	r->consts = base + 1;
	r->consts_len = c->text.len;
	for (int i = 0; i < RT_NCONST; i++) {
		enum record_text_str f = (enum record_text_str)(RT_CONST_FIRST + i);
		r->str[f] = c->str[i] ? base + c->str[i] : 0;
		r->len[f] = r->esc[f] = c->len[i];
	}
}

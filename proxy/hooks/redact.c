/* redact: see redact.h.
 *
 * Why this file is long (over 800 lines): the key and value matchers, the JSON walk and the
 * preview memo share the redactor's published value set; each part is
 * small, and splitting them would only export that set's internals.
 *
 * Key patterns and literals are few (REDACT_MAX_PATTERNS) and short, so a
 * plain substring search per key and per string is enough; nothing here
 * runs unless a call is being recorded.
 */
#include "proxy/hooks/redact.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/base/sbuf.h"
#include "proxy/base/jparse.h"

static const char *const default_keys[] = {
	"password", "token", "secret", "authorization", "api_key",
};

/* The literal values, as one immutable set: workers read it while a
 * reload may publish a larger one (redact_add_secrets), so readers load
 * rd->vals once per string and a set, once published, never changes.
 *
 * Matching is one pass over a string whatever the number of values:
 *
 *   pair bitmap (65536 bits): is s[i]s[i+1] the start of some value?
 *        |  yes (rare in text that holds none)
 *        v
 *   v[] sorted by first two bytes, then longest first: binary search for
 *   the run of that pair, the first value of the run found at s+i wins
 *   (leftmost, then longest), masked, the scan goes on after it.
 *
 * Strings shorter than the shortest value are not scanned at all. */
struct vset {
	uint64_t gen;            /* unique: the memos' key for this set */
	size_t n;
	char **v;                /* owned, NUL-terminated, in the order above */
	size_t *len;
	uint16_t *pair;          /* v[i]'s first two bytes, v[i][0] << 8 | v[i][1] */
	size_t min_len;
	uint64_t bits[65536 / 64];
	struct vset *older;      /* owned: the sets this one replaced */
};

struct redact {
	char *keys[REDACT_MAX_PATTERNS];    /* owned, normalised */
	size_t key_len[REDACT_MAX_PATTERNS];
	size_t nkeys;
	/* Names the key patterns, for the memos that keep answers found with
	 * them (pv_key_secret's per thread, a kept preview): new at each
	 * change, unique across redactors. */
	uint64_t gen;
	struct vset *vals;                  /* owned; NULL: no values (atomic) */
};

/* Lowercase, without '_' and '-': "X-Api-Key" and "api_key" meet at
 * "xapikey" / "apikey". Writes at most cap-1 bytes; returns the length
 * the whole normalised key needs. */
static size_t normalise(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	for (; *s; s++) {
		char c = *s;
		if (c == '_' || c == '-')
			continue;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (n + 1 < cap)
			out[n] = c;
		n++;
	}
	if (cap)
		out[n < cap ? n : cap - 1] = '\0';
	return n;
}

static uint64_t redact_gens;

static void new_gen(struct redact *rd)
{
	rd->gen = __atomic_add_fetch(&redact_gens, 1, __ATOMIC_RELAXED);
}

/* ---- the value set -------------------------------------------------------- */

static uint16_t pair_of(const char *s)
{
	return (uint16_t)((unsigned char)s[0] << 8 | (unsigned char)s[1]);
}

static void vset_free(struct vset *vs)
{
	while (vs) {
		struct vset *older = vs->older;
		for (size_t i = 0; i < vs->n; i++) {
			/* Credentials: not left behind in freed memory. */
			explicit_bzero(vs->v[i], vs->len[i]);
			free(vs->v[i]);
		}
		free(vs->v);
		free(vs->len);
		free(vs->pair);
		free(vs);
		vs = older;
	}
}

static struct vset *vset_new(size_t cap)
{
	struct vset *vs = calloc(1, sizeof(*vs));
	if (!vs)
		return NULL;
	cap = cap ? cap : 1;
	vs->v = calloc(cap, sizeof(*vs->v));
	vs->len = calloc(cap, sizeof(*vs->len));
	vs->pair = calloc(cap, sizeof(*vs->pair));
	if (!vs->v || !vs->len || !vs->pair) {
		vset_free(vs);
		return NULL;
	}
	return vs;
}

/* The first index whose pair is >= p. */
static size_t vset_lower(const struct vset *vs, uint16_t p)
{
	size_t lo = 0, hi = vs->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (vs->pair[mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int vset_has(const struct vset *vs, const char *s, size_t len)
{
	uint16_t p = pair_of(s);
	for (size_t i = vset_lower(vs, p); i < vs->n && vs->pair[i] == p; i++)
		if (vs->len[i] == len && memcmp(vs->v[i], s, len) == 0)
			return 1;
	return 0;
}

/* Adds s (len >= 2) in its place (room for it was allocated): 0 or -1. */
static int vset_insert(struct vset *vs, const char *s, size_t len)
{
	char *c = malloc(len + 1);
	if (!c)
		return -1;
	memcpy(c, s, len);
	c[len] = '\0';
	uint16_t p = pair_of(s);
	size_t at = vset_lower(vs, p);
	while (at < vs->n && vs->pair[at] == p && vs->len[at] >= len)
		at++;
	memmove(vs->v + at + 1, vs->v + at, (vs->n - at) * sizeof(*vs->v));
	memmove(vs->len + at + 1, vs->len + at, (vs->n - at) * sizeof(*vs->len));
	memmove(vs->pair + at + 1, vs->pair + at, (vs->n - at) * sizeof(*vs->pair));
	vs->v[at] = c;
	vs->len[at] = len;
	vs->pair[at] = p;
	vs->n++;
	vs->bits[p >> 6] |= 1ull << (p & 63);
	if (!vs->min_len || len < vs->min_len)
		vs->min_len = len;
	return 0;
}

/* The length of the value found at s (n bytes left, n >= 2), 0: none. */
static inline size_t vset_match(const struct vset *vs, const char *s, size_t n)
{
	uint16_t p = pair_of(s);
	if (!(vs->bits[p >> 6] >> (p & 63) & 1))
		return 0;
	for (size_t i = vset_lower(vs, p); i < vs->n && vs->pair[i] == p; i++)
		if (vs->len[i] <= n && memcmp(s, vs->v[i], vs->len[i]) == 0)
			return vs->len[i];
	return 0;
}

static const struct vset *vals_of(const struct redact *rd)
{
	return __atomic_load_n(&rd->vals, __ATOMIC_ACQUIRE);
}

/* Names what a text redacted by rd depends on: its key patterns and the
 * value set in force. */
static void gens_of(const struct redact *rd, uint64_t *kgen, uint64_t *vgen)
{
	const struct vset *vs = vals_of(rd);
	*kgen = rd->gen;
	*vgen = vs ? vs->gen : 0;
}

struct redact *redact_new(void)
{
	struct redact *rd = calloc(1, sizeof(*rd));
	if (!rd)
		return NULL;
	new_gen(rd);
	for (size_t i = 0; i < sizeof(default_keys) / sizeof(default_keys[0]); i++) {
		if (redact_add_key(rd, default_keys[i]) < 0) {
			redact_free(rd);
			return NULL;
		}
	}
	return rd;
}

void redact_clear_keys(struct redact *rd)
{
	for (size_t i = 0; i < rd->nkeys; i++)
		free(rd->keys[i]);
	rd->nkeys = 0;
	new_gen(rd);
}

void redact_free(struct redact *rd)
{
	if (!rd)
		return;
	redact_clear_keys(rd);
	vset_free(rd->vals);
	free(rd);
}

int redact_add_key(struct redact *rd, const char *pattern)
{
	if (!pattern || rd->nkeys >= REDACT_MAX_PATTERNS)
		return -1;
	size_t need = normalise(pattern, NULL, 0);
	if (need == 0)
		return -1;
	char *k = malloc(need + 1);
	if (!k)
		return -1;
	normalise(pattern, k, need + 1);
	rd->key_len[rd->nkeys] = need;
	rd->keys[rd->nkeys++] = k;
	new_gen(rd);
	return 0;
}

/* A new set of rd's values and lits' in rd->vals. keep: rd may be in use
 * on other threads, so the set replaced stays until redact_free; else
 * it goes at once. The number added, or -1 (out of memory). */
static int add_values(struct redact *rd, const char *const *lits, size_t n, int keep)
{
	struct vset *cur = rd->vals;
	size_t have = cur ? cur->n : 0, added = 0;
	struct vset *vs = vset_new(have + n);
	if (!vs)
		return -1;
	for (size_t i = 0; i < have; i++)
		if (vset_insert(vs, cur->v[i], cur->len[i]) < 0)
			goto oom;
	for (size_t i = 0; i < n; i++) {
		size_t len = lits[i] ? strlen(lits[i]) : 0;
		if (len < REDACT_MIN_VALUE_LEN || vs->n >= REDACT_MAX_VALUES || vset_has(vs, lits[i], len))
			continue;
		if (vset_insert(vs, lits[i], len) < 0)
			goto oom;
		added++;
	}
	if (!added) {
		vset_free(vs);
		return 0;
	}
	vs->gen = __atomic_add_fetch(&redact_gens, 1, __ATOMIC_RELAXED);
	if (keep) {
		vs->older = cur;
	} else if (cur) {
		vs->older = cur->older;
		cur->older = NULL;
		vset_free(cur);
	}
	/* Readers see the whole set or the one before: it is complete
	 * before the pointer is. */
	__atomic_store_n(&rd->vals, vs, __ATOMIC_RELEASE);
	return (int)added;
oom:
	vset_free(vs);
	return -1;
}

int redact_add_value(struct redact *rd, const char *literal)
{
	const struct vset *vs = rd->vals;
	size_t len = literal ? strlen(literal) : 0;
	if (len < REDACT_MIN_VALUE_LEN)
		return -1;
	if (vs && vset_has(vs, literal, len))
		return 0; /* given twice: masked once */
	return add_values(rd, &literal, 1, 0) == 1 ? 0 : -1;
}

int redact_add_secrets(struct redact *rd, const char *const *lits, size_t n)
{
	return add_values(rd, lits, n, 1);
}

size_t redact_nvalues(const struct redact *rd)
{
	const struct vset *vs = vals_of(rd);
	return vs ? vs->n : 0;
}

int redact_key_is_secret(const struct redact *rd, const char *key)
{
	char stack[256], *buf = stack;
	int hit = 0;

	if (!key || rd->nkeys == 0)
		return 0;
	size_t need = normalise(key, stack, sizeof(stack));
	if (need >= sizeof(stack)) {
		buf = malloc(need + 1);
		if (!buf)
			return 1; /* cannot tell: the safe answer */
		normalise(key, buf, need + 1);
	}
	/* Names are short and patterns few: a plain search, the length
	 * known, beats strstr's setup. */
	for (size_t i = 0; i < rd->nkeys && !hit; i++) {
		const char *k = rd->keys[i];
		size_t kn = rd->key_len[i];
		for (size_t j = 0; j + kn <= need && !hit; j++)
			hit = buf[j] == k[0] && memcmp(buf + j, k, kn) == 0;
	}
	if (buf != stack)
		free(buf);
	return hit;
}

/* mask_literals when s may hold a value of vs. */
static char *mask_some(const struct vset *vs, const char *s, size_t len, size_t *out_len,
                       int *changed)
{
	const size_t mlen = sizeof(REDACT_MASK) - 1;
	struct sbuf out = {0};
	size_t done = 0; /* s[0..done) is in out */

	*changed = 0;
	for (size_t i = 0; i + vs->min_len <= len;) {
		size_t hit = vset_match(vs, s + i, len - i);
		if (!hit) {
			i++;
			continue;
		}
		sbuf_putn(&out, s + done, i - done);
		sbuf_putn(&out, REDACT_MASK, mlen);
		i += hit;
		done = i;
		*changed = 1;
	}
	if (!*changed)
		return NULL;
	sbuf_putn(&out, s + done, len - done);
	if (out.oom) {
		free(out.p);
		return NULL; /* *changed = 1: out of memory */
	}
	*out_len = out.len;
	return out.p;
}

/* s[0..len) with every literal masked: a new buffer (*out_len), or NULL
 * with *changed = 0 when nothing matched; NULL with *changed = 1 when
 * memory ran out. Inline: most configurations have no literals, and it
 * runs for every name and string of a record; a string shorter than the
 * shortest value is not looked at. */
static inline char *mask_literals(const struct redact *rd, const char *s, size_t len,
                                  size_t *out_len, int *changed)
{
	const struct vset *vs = vals_of(rd);
	if (!vs || len < vs->min_len) {
		*changed = 0;
		return NULL;
	}
	return mask_some(vs, s, len, out_len, changed);
}

char *redact_text(const struct redact *rd, const char *s)
{
	size_t n;
	int changed;
	char *m = mask_literals(rd, s, strlen(s), &n, &changed);
	if (m || changed)
		return m;
	return strdup(s);
}

static json_t *copy_value(const struct redact *rd, const json_t *v, int depth)
{
	if (depth >= REDACT_MAX_DEPTH)
		return json_string("\xe2\x80\xa6"); /* … */
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		json_t *o = json_object();
		/* json_object_foreach wants a non-const object; nothing is
		 * modified through it. */
		json_t *src = (json_t *)(uintptr_t)v, *val;
		const char *key;
		if (!o)
			return NULL;
		json_object_foreach(src, key, val) {
			size_t klen;
			int changed;
			char *k2 = mask_literals(rd, key, strlen(key), &klen, &changed);
			if (!k2 && changed)
				goto fail_obj;
			json_t *c = redact_key_is_secret(rd, key) ? json_string(REDACT_MASK)
			                                          : copy_value(rd, val, depth + 1);
			int rc = json_object_set_new(o, k2 ? k2 : key, c);
			free(k2);
			if (!c || rc < 0)
				goto fail_obj;
		}
		return o;
	fail_obj:
		json_decref(o);
		return NULL;
	}
	case JSON_ARRAY: {
		json_t *a = json_array();
		if (!a)
			return NULL;
		for (size_t i = 0; i < json_array_size(v); i++) {
			json_t *c = copy_value(rd, json_array_get(v, i), depth + 1);
			if (!c || json_array_append_new(a, c) < 0) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	case JSON_STRING: {
		size_t n;
		int changed;
		char *m = mask_literals(rd, json_string_value(v), json_string_length(v), &n, &changed);
		if (m) {
			json_t *s = json_stringn(m, n);
			free(m);
			return s;
		}
		return changed ? NULL : json_stringn(json_string_value(v), json_string_length(v));
	}
	default:
		/* numbers, true, false, null: immutable values, a new copy each */
		return json_deep_copy(v);
	}
}

json_t *redact_json(const struct redact *rd, const json_t *v)
{
	return v ? copy_value(rd, v, 0) : NULL;
}

static size_t count_chars(const char *s, size_t len)
{
	return sbuf_utf8_chars(s, len);
}

/* s[0..len) holds at least the first max_chars+1 code points of a text of
 * total code points: appends it, cut to max_chars with the marker, to out
 * (NUL-terminated as sbufs are). 0, or -1 when memory runs out. */
static int cut_into(struct sbuf *out, const char *s, size_t len, size_t max_chars, size_t total,
                    int *cut)
{
	if (cut)
		*cut = 0;
	if (total <= max_chars) {
		sbuf_putn(out, s, len);
		return out->oom ? -1 : 0;
	}
	size_t i = 0, chars = 0;
	for (; i < len; i++) {
		if (((unsigned char)s[i] & 0xC0) != 0x80) {
			if (chars == max_chars)
				break;
			chars++;
		}
	}
	char marker[80];
	int m = snprintf(marker, sizeof(marker), "\xe2\x80\xa6[cut: %zu of %zu chars]", max_chars,
	                 total);
	sbuf_putn(out, s, i);
	sbuf_putn(out, marker, (size_t)m);
	if (out->oom)
		return -1;
	if (cut)
		*cut = 1;
	return 0;
}

/* cut_into a new string (owned), NULL when memory runs out. */
static char *cut_known(const char *s, size_t len, size_t max_chars, size_t total, int *cut)
{
	struct sbuf b = {0};
	sbuf_putn(&b, "", 0); /* "" rather than NULL when s is empty */
	if (cut_into(&b, s, len, max_chars, total, cut) < 0) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

char *redact_cut(const char *s, size_t max_chars, int *cut)
{
	size_t len = strlen(s);
	return cut_known(s, len, max_chars, count_chars(s, len), cut);
}

/* ---- bounded text ----------------------------------------------------------- */

/* A text of bounded size that still counts every code point offered: what
 * the JSON text and the preview are written into before cut_known(). */
struct preview {
	char *buf;               /* stack, or owned once it outgrew stack */
	char *stack;             /* borrowed: the caller's first buffer, or NULL */
	size_t len, cap, limit;  /* limit: bytes kept */
	size_t chars;            /* code points offered in all */
	int oom;
	int fallback;            /* pv_json: take the copying path */
	/* pv_json stops once the limit is reached (chars then counts only
	 * what was walked): the caller knows the total otherwise. */
	int bounded;
};

/* Member names repeat, within a message ("type", "description"... a
 * thousand times in a tool list) and from call to call (a tool's
 * argument names): redact_key_is_secret's answer for recent ones, per
 * thread. An answer is kept with the generation of the patterns it was
 * found for (rd->gen), so it is never given for other patterns. */
#define KEY_MEMO_SLOTS 64
struct key_memo {
	uint64_t gen;            /* 0: empty slot */
	unsigned char len;
	char secret;
	char key[30];
};
static _Thread_local struct key_memo key_memo[KEY_MEMO_SLOTS];

/* Room for n more bytes and a NUL at p->buf + p->len: 0, or -1 (oom). */
static int pv_reserve(struct preview *p, size_t n)
{
	if (p->len + n + 1 <= p->cap)
		return 0;
	size_t cap = p->cap ? p->cap : 256;
	while (cap < p->len + n + 1)
		cap *= 2;
	char *b = p->buf == p->stack ? malloc(cap) : realloc(p->buf, cap);
	if (!b) {
		p->oom = 1;
		return -1;
	}
	if (p->buf && p->buf == p->stack)
		memcpy(b, p->buf, p->len);
	p->buf = b;
	p->cap = cap;
	return 0;
}

/* s[0..len), which holds chars code points. */
static void pv_add_chars(struct preview *p, const char *s, size_t len, size_t chars)
{
	p->chars += chars;
	if (p->len >= p->limit)
		return;
	if (len > p->limit - p->len)
		len = p->limit - p->len;
	if (pv_reserve(p, len) < 0)
		return;
	memcpy(p->buf + p->len, s, len);
	p->len += len;
	p->buf[p->len] = '\0';
}

static void pv_add(struct preview *p, const char *s, size_t len)
{
	pv_add_chars(p, s, len, count_chars(s, len));
}

/* Most previews and argument texts are short: they start in the caller's
 * stack buffer and only a long one costs a malloc. */
#define PV_STACK 1024

static void pv_start(struct preview *p, char *stack, size_t limit)
{
	*p = (struct preview){.buf = stack, .stack = stack, .cap = PV_STACK, .limit = limit};
	stack[0] = '\0';
}

static void pv_fini(struct preview *p)
{
	if (p->buf != p->stack)
		free(p->buf);
}

static void pv_str(struct preview *p, const char *s)
{
	pv_add(p, s, strlen(s));
}

static void pv_put(void *arg, const char *s, size_t n)
{
	pv_add(arg, s, n);
}

/* ASCII only (punctuation, literals, numbers): one code point a byte, so
 * past the limit counting needs no scan. */
static void pv_ascii(struct preview *p, const char *s, size_t n)
{
	pv_add_chars(p, s, n, n);
}

/* One ASCII character (punctuation): pv_ascii without a copy call. */
static void pv_char(struct preview *p, char c)
{
	if (p->len >= p->limit || p->len + 2 > p->cap) {
		pv_add_chars(p, &c, 1, 1);
		return;
	}
	p->chars++;
	p->buf[p->len++] = c;
	p->buf[p->len] = '\0';
}

/* s[0..n) as a quoted JSON string: what sbuf_json_escape(pv_put, p, s, n)
 * adds, short strings escaped straight into the buffer. */
static void pv_escaped(struct preview *p, const char *s, size_t n)
{
	if (p->len >= p->limit) {
		p->chars += sbuf_json_str_chars(s, n); /* past the limit: counted only */
		return;
	}
	if (n <= PV_STACK && pv_reserve(p, 6 * n + 2) == 0) {
		char *w = p->buf + p->len;
		size_t e;
		if (sbuf_json_plain(s, n)) {
			/* ASCII, nothing to escape: a code point a byte */
			memcpy(w + 1, s, n);
			e = n + 2;
			p->chars += e;
		} else {
			e = sbuf_json_escape_to(w + 1, s, n) + 2;
			p->chars += count_chars(w + 1, e - 2) + 2;
		}
		w[0] = '"';
		w[e - 1] = '"';
		/* Kept up to the limit, as pv_add keeps it. */
		p->len += e < p->limit - p->len ? e : p->limit - p->len;
		p->buf[p->len] = '\0';
		return;
	}
	if (!p->oom)
		sbuf_json_escape(pv_put, p, s, n);
}

/* redact_key_is_secret(rd, key), key being n bytes long. */
static int pv_key_secret(const struct redact *rd, const char *key, size_t n)
{
	if (n == 0 || n > sizeof(key_memo[0].key))
		return redact_key_is_secret(rd, key);
	unsigned h = (unsigned)n;
	for (size_t i = 0; i < n; i++)
		h = h * 31u + (unsigned char)key[i];
	struct key_memo *m = &key_memo[h % KEY_MEMO_SLOTS];
	if (m->gen == rd->gen && m->len == n && memcmp(m->key, key, n) == 0)
		return m->secret;
	m->gen = rd->gen;
	m->len = (unsigned char)n;
	memcpy(m->key, key, n);
	m->secret = (char)redact_key_is_secret(rd, key);
	return m->secret;
}

/* Enough bytes for the first max_chars + 1 code points of UTF-8; the rest
 * is only counted. */
static size_t pv_limit(size_t max_chars)
{
	return max_chars > ((size_t)-1 - 64) / 4 ? (size_t)-1 - 1 : max_chars * 4 + 8;
}

/* ---- redacted JSON text ------------------------------------------------------ */

static void pv_json_string(const struct redact *rd, struct preview *p, const char *s, size_t n)
{
	size_t mlen;
	int changed;
	char *m = mask_literals(rd, s, n, &mlen, &changed);
	if (changed && !m) {
		p->oom = 1;
		return;
	}
	pv_escaped(p, m ? m : s, m ? mlen : n);
	if (m)
		free(m); /* free(NULL) is a call too, for every string */
}

static void pv_json(const struct redact *rd, struct preview *p, const json_t *v, int depth);

/* Code points of a result's raw text: most are ASCII, tested 32 bytes at
 * a time (a 470 kB listing: 0.6M instructions counted by
 * sbuf_utf8_chars, ~0.1M tested first). */
static size_t raw_chars(const char *s, size_t n)
{
	uint64_t acc = 0, w[4];
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		memcpy(w, s + i, 32);
		acc |= w[0] | w[1] | w[2] | w[3];
	}
	for (; i < n; i++)
		acc |= (unsigned char)s[i];
	return acc & 0x8080808080808080u ? count_chars(s, n) : n;
}

/* A bounded walk has all it keeps. */
static inline int pv_full(const struct preview *p)
{
	return p->bounded && p->len >= p->limit;
}

static void pv_json_object(const struct redact *rd, struct preview *p, const json_t *v,
                           int depth)
{
	json_t *src = (json_t *)(uintptr_t)v, *val; /* read only, see copy_value */
	const char *key;
	int first = 1;

	pv_char(p, '{');
	json_object_foreach(src, key, val) {
		size_t klen = strlen(key), mlen;
		int changed;
		char *masked = mask_literals(rd, key, klen, &mlen, &changed);
		if (changed) {
			/* Masking a name may make two names equal, and the copy keeps
			 * one of them: only the copying path gives that text. */
			free(masked);
			p->fallback = 1;
			return;
		}
		if (!first)
			pv_char(p, ',');
		first = 0;
		pv_escaped(p, key, klen);
		pv_char(p, ':');
		if (pv_key_secret(rd, key, klen))
			pv_add(p, "\"" REDACT_MASK "\"", sizeof(REDACT_MASK) + 1);
		else
			pv_json(rd, p, val, depth + 1);
		if (p->oom || p->fallback || pv_full(p))
			return;
	}
	pv_char(p, '}');
}

/* Writes v as compact JSON text with both rules applied, without copying
 * it first: byte for byte json_dumps(redact_json(v)). */
static void pv_json(const struct redact *rd, struct preview *p, const json_t *v, int depth)
{
	char num[SBUF_I64_MAX];

	if (depth >= REDACT_MAX_DEPTH) {
		pv_add(p, "\"\xe2\x80\xa6\"", 5); /* "…", as copy_value puts it */
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		pv_json_object(rd, p, v, depth);
		return;
	case JSON_ARRAY:
		pv_char(p, '[');
		for (size_t i = 0; i < json_array_size(v) && !p->oom && !p->fallback && !pv_full(p);
		     i++) {
			if (i)
				pv_char(p, ',');
			pv_json(rd, p, json_array_get(v, i), depth + 1);
		}
		pv_char(p, ']');
		return;
	case JSON_STRING:
		pv_json_string(rd, p, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		pv_ascii(p, num, sbuf_i64_text(num, (long long)json_integer_value(v)));
		return;
	case JSON_TRUE:
		pv_ascii(p, "true", 4);
		return;
	case JSON_FALSE:
		pv_ascii(p, "false", 5);
		return;
	case JSON_NULL:
		pv_ascii(p, "null", 4);
		return;
	default: {
		/* Reals: jansson's own formatting (precision, exponent form). */
		char *t = json_dumps(v, JSON_ENCODE_ANY);
		if (t)
			pv_str(p, t);
		else
			p->oom = 1;
		free(t);
		return;
	}
	}
}

/* The copying path: a redacted deep copy, serialised, cut. */
static char *json_text_by_copy(const struct redact *rd, const json_t *v, size_t max_chars,
                               int *cut)
{
	json_t *c = redact_json(rd, v);
	if (!c)
		return NULL;
	char *text = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(c);
	if (!text)
		return NULL;
	char *r = redact_cut(text, max_chars, cut);
	free(text);
	return r;
}

int redact_json_text_to(const struct redact *rd, const json_t *v, size_t max_chars, int *cut,
                        struct sbuf *out)
{
	char stack[PV_STACK];
	struct preview p;
	int rc;

	if (!v)
		return -1;
	pv_start(&p, stack, pv_limit(max_chars));
	pv_json(rd, &p, v, 0);
	if (p.fallback) {
		char *t = json_text_by_copy(rd, v, max_chars, cut);
		sbuf_puts(out, t ? t : "");
		rc = t && !out->oom ? 0 : -1;
		free(t);
	} else {
		rc = p.oom ? -1 : cut_into(out, p.buf, p.len, max_chars, p.chars, cut);
	}
	pv_fini(&p);
	return rc;
}

char *redact_json_text(const struct redact *rd, const json_t *v, size_t max_chars, int *cut)
{
	struct sbuf b = {0};
	sbuf_putn(&b, "", 0);
	if (!v || redact_json_text_to(rd, v, max_chars, cut, &b) < 0) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* v's redacted JSON text added to p: what pv_str(p, redact_json_text(v,
 * unbounded)) adds, without building the whole text when p keeps only
 * its start (a large result is counted, not copied, past the limit). */
static void pv_add_json(const struct redact *rd, struct preview *p, const json_t *v)
{
	char stack[PV_STACK];
	struct preview q;

	pv_start(&q, stack, p->len < p->limit ? p->limit - p->len : 0);
	q.bounded = p->bounded;
	pv_json(rd, &q, v, 0);
	if (q.fallback || q.oom) {
		pv_fini(&q);
		char *t = q.fallback ? json_text_by_copy(rd, v, (size_t)-1, NULL) : NULL;
		if (!t) {
			p->oom = 1;
			return;
		}
		pv_str(p, t);
		free(t);
		return;
	}
	size_t kept = q.len ? count_chars(q.buf, q.len) : 0;
	if (q.len)
		pv_add(p, q.buf, q.len);
	p->chars += q.chars - kept;
	pv_fini(&q);
}

/* ---- result previews ------------------------------------------------------ */

/* Text larger than this is previewed as text even when it is JSON: it is
 * not worth parsing a megabyte to show 800 characters of it. */
#define PREVIEW_PARSE_MAX (64u * 1024)

static void pv_text(const struct redact *rd, struct preview *p, const char *s, size_t len)
{
	/* Past the limit a text is only counted (for the marker's total). */
	if (p->len < p->limit && len <= PREVIEW_PARSE_MAX && len && (s[0] == '{' || s[0] == '[')) {
		json_t *j = json_loadb(s, len, 0, NULL);
		if (j) {
			pv_add_json(rd, p, j);
			json_decref(j);
			return;
		}
	}
	pv_add(p, s, len);
}

static void pv_item(const struct redact *rd, struct preview *p, const json_t *item)
{
	const char *type = json_string_value(JPARSE_MEMBER(item, "type"));
	char tag[320];

	if (type && strcmp(type, "text") == 0) {
		const json_t *t = JPARSE_MEMBER(item, "text");
		if (json_is_string(t))
			pv_text(rd, p, json_string_value(t), json_string_length(t));
		return;
	}
	const char *mime = json_string_value(JPARSE_MEMBER(item, "mimeType"));
	const char *uri = json_string_value(JPARSE_MEMBER(item, "uri"));
	if (type && strcmp(type, "resource") == 0)
		uri = json_string_value(JPARSE_MEMBER(JPARSE_MEMBER(item, "resource"), "uri"));
	snprintf(tag, sizeof(tag), "[%.32s%s%.200s]", type ? type : "?",
	         uri || mime ? " " : "", uri ? uri : mime ? mime : "");
	pv_str(p, tag);
}

/* The preview p built, masked and cut into out (raw[0..raw_len): as for
 * preview_to); p is finished with. */
static int preview_done(const struct redact *rd, struct preview *p, size_t max_chars, int *cut,
                        struct sbuf *out, const char *raw, size_t raw_len)
{
	if (p->oom) {
		pv_fini(p);
		return -1;
	}
	/* Literals last, over the whole text: a URI or a tag may hold one. */
	size_t mlen;
	int changed, rc;
	char *masked = mask_literals(rd, p->buf, p->len, &mlen, &changed);
	if (!masked && changed) {
		pv_fini(p);
		return -1;
	}
	/* A bounded walk that filled the preview holds more than max_chars
	 * (limit bytes are more code points than that): cut, of raw's total. */
	size_t raw_total = 0;
	if (pv_full(p)) {
		raw_total = raw_chars(raw, raw_len);
		if (raw_total <= max_chars)
			raw_total = max_chars + 1;
	}
	if (masked) {
		/* Masking changes the length: recount what is kept. */
		size_t chars = raw_total ? raw_total
		                         : p->chars - count_chars(p->buf, p->len) + count_chars(masked, mlen);
		rc = cut_into(out, masked, mlen, max_chars, chars, cut);
		free(masked);
	} else {
		rc = cut_into(out, p->buf, p->len, max_chars, raw_total ? raw_total : p->chars, cut);
	}
	pv_fini(p);
	return rc;
}

/* redact_result_preview_to; raw[0..raw_len): result's text as it arrived,
 * or NULL. A result previewed as its whole JSON text (a listing) is then
 * walked only as far as the preview keeps, and the marker's total is the
 * code points of raw: a changed 1,000-tool tools/list (469,901 bytes)
 * cost 11,455,877 instructions walked whole, 0 here (test_redact's
 * test_preview_big_listing_bounded under callgrind). raw's total counts
 * what the redaction masks: the record's bytes_out tells its size anyway. */
static int preview_to(const struct redact *rd, const json_t *result, size_t max_chars,
                      int *cut, struct sbuf *out, const char *raw, size_t raw_len)
{
	char stack[PV_STACK];
	struct preview p;
	const json_t *content = JPARSE_MEMBER(result, "content");

	pv_start(&p, stack, pv_limit(max_chars));
	if (json_is_array(content) && json_array_size(content) > 0) {
		for (size_t i = 0; i < json_array_size(content); i++) {
			if (i)
				pv_str(&p, "\n");
			pv_item(rd, &p, json_array_get(content, i));
		}
	} else {
		const json_t *structured = JPARSE_MEMBER(result, "structuredContent");
		p.bounded = raw && !structured;
		pv_add_json(rd, &p, structured ? structured : result);
	}
	return preview_done(rd, &p, max_chars, cut, out, raw, raw_len);
}

/* ---- a tools/call result's preview from its text (issue 20) -------------- */

/* Content items previewed from the text: more take the tree path. */
#define PV_RAW_ITEMS 16

/* The content items of the result text raw[0..len) into p, as preview_to
 * puts them from the tree, when every item is a plain text item
 * ({"type": "text", "text": ...}: what tools/call answers nearly always):
 * 1. 0 when the text is anything else (another item type, a name spelt
 * with an escape, a member twice, no content, too many items): nothing
 * was added, the caller takes the tree path. content: as for
 * redact_result_preview_raw_to. */
static int pv_content_raw(const struct redact *rd, struct preview *p, const char *raw, size_t len,
                          const struct jparse_ref *content)
{
	static const char *const top[] = {"content"}, *const names[] = {"type", "text"};
	struct jparse_ref m[PV_RAW_ITEMS * 2], found;
	if (!content) {
		if (jparse_pick(raw, len, top, 1, &found) < 0)
			return 0;
		content = &found;
	}
	if (!content->at)
		return 0;
	long n = jparse_pick_each(content->at, content->len, names, 2, m, PV_RAW_ITEMS);
	if (n <= 0)
		return 0;
	/* All items checked before one is written: a fallback starts afresh. */
	for (long i = 0; i < n; i++)
		if (!m[2 * i].at || m[2 * i].len != 6 || memcmp(m[2 * i].at, "\"text\"", 6) != 0)
			return 0;
	for (long i = 0; i < n; i++) {
		if (i)
			pv_str(p, "\n");
		const struct jparse_ref *t = &m[2 * i + 1];
		if (!t->at || t->at[0] != '"')
			continue; /* no text, or not a string: nothing, as pv_item */
		const char *s = t->at + 1;
		size_t sl = t->len - 2;
		if (!memchr(s, '\\', sl)) {
			pv_text(rd, p, s, sl);
			continue;
		}
		json_t *j = jparse_ref_value(t); /* escapes: decoded by the parser */
		if (!j) {
			p->oom = 1;
			return 1;
		}
		pv_text(rd, p, json_string_value(j), json_string_length(j));
		json_decref(j);
	}
	return 1;
}

int redact_result_preview_raw_to(const struct redact *rd, struct redact_preview_memo *pm,
                                 const char *raw, size_t raw_len,
                                 const struct jparse_ref *content, uint64_t serial,
                                 size_t max_chars, int *cut, struct sbuf *out)
{
	if (!raw)
		return -1;
	if (serial) {
		/* Bytes the tools tracker named (a listing): the memo's preview,
		 * if it keeps one, needs no parse. */
		int kept = redact_preview_memo_get(rd, pm, serial, max_chars, cut, out);
		if (kept)
			return kept < 0 ? -1 : 0;
	} else {
		char stack[PV_STACK];
		struct preview p;
		pv_start(&p, stack, pv_limit(max_chars));
		if (pv_content_raw(rd, &p, raw, raw_len, content))
			return preview_done(rd, &p, max_chars, cut, out, raw, raw_len);
		pv_fini(&p);
	}
	json_t *result = jparse(raw, raw_len, 1);
	if (!result)
		return -1;
	int rc = redact_result_preview_memo_to(rd, pm, result, raw, raw_len, serial, max_chars, cut,
	                                       out);
	json_decref(result);
	return rc;
}

int redact_result_preview_to(const struct redact *rd, const json_t *result, size_t max_chars,
                             int *cut, struct sbuf *out)
{
	return preview_to(rd, result, max_chars, cut, out, NULL, 0);
}

/* ---- the last listing's preview, kept ------------------------------------- */

/* The preview of the bytes a serial names (redact.h): no copy of the
 * bytes, which the serial's owner (the tools tracker) keeps. */
struct redact_preview_memo {
	uint64_t gen;       /* rd->gen of the key patterns; 0: nothing kept */
	uint64_t vgen;      /* and of the value set (0: none) */
	uint64_t serial;    /* of the bytes previewed */
	size_t max_chars;
	char *text;         /* owned: their preview */
	size_t text_len;
	int cut;
};

struct redact_preview_memo *redact_preview_memo_new(void)
{
	return calloc(1, sizeof(struct redact_preview_memo));
}

void redact_preview_memo_free(struct redact_preview_memo *pm)
{
	if (!pm)
		return;
	free(pm->text);
	free(pm);
}

static int memo_holds(const struct redact_preview_memo *pm, const struct redact *rd,
                      uint64_t serial, size_t max_chars)
{
	uint64_t kgen, vgen;
	gens_of(rd, &kgen, &vgen);
	return pm->gen && pm->gen == kgen && pm->vgen == vgen && pm->max_chars == max_chars &&
	       pm->serial == serial;
}

/* Keeps text (the preview just made of the bytes of serial); on a failed
 * malloc keeps nothing, which only costs the next preview its shortcut. */
static void memo_keep(struct redact_preview_memo *pm, uint64_t kgen, uint64_t vgen,
                      uint64_t serial, size_t max_chars, const char *text, size_t text_len,
                      int cut)
{
	pm->gen = 0;
	free(pm->text);
	pm->text = malloc(text_len + 1);
	if (!pm->text)
		return;
	memcpy(pm->text, text, text_len);
	pm->text_len = text_len;
	pm->serial = serial;
	pm->max_chars = max_chars;
	pm->cut = cut;
	pm->vgen = vgen;
	pm->gen = kgen;
}

int redact_preview_memo_get(const struct redact *rd, const struct redact_preview_memo *pm,
                            uint64_t serial, size_t max_chars, int *cut, struct sbuf *out)
{
	if (!pm || !serial || !memo_holds(pm, rd, serial, max_chars))
		return 0;
	if (cut)
		*cut = pm->cut;
	sbuf_putn(out, pm->text, pm->text_len);
	return out->oom ? -1 : 1;
}

int redact_result_preview_memo_to(const struct redact *rd, struct redact_preview_memo *pm,
                                  const json_t *result, const char *raw, size_t raw_len,
                                  uint64_t serial, size_t max_chars, int *cut, struct sbuf *out)
{
	int kept = raw ? redact_preview_memo_get(rd, pm, serial, max_chars, cut, out) : 0;
	if (kept)
		return kept < 0 ? -1 : 0;
	size_t at = out->len;
	int c = 0;
	uint64_t kgen, vgen;
	/* Named before the preview is made: a set published meanwhile (a
	 * reload) is not taken for the one it was made with. */
	gens_of(rd, &kgen, &vgen);
	if (preview_to(rd, result, max_chars, &c, out, raw, raw_len) < 0)
		return -1;
	if (cut)
		*cut = c;
	if (pm && raw && serial)
		memo_keep(pm, kgen, vgen, serial, max_chars, out->p ? out->p + at : "", out->len - at,
		          c);
	return 0;
}

char *redact_result_preview(const struct redact *rd, const json_t *result, size_t max_chars,
                            int *cut)
{
	struct sbuf b = {0};
	sbuf_putn(&b, "", 0);
	if (redact_result_preview_to(rd, result, max_chars, cut, &b) < 0) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

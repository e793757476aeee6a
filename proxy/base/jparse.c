/* jparse: see jparse.h.
 *
 * Why this file is long (over 800 lines): the element-span skimmer at the end, which shares
 * nothing with the parser: moving it out means splitting jparse.h's API in
 * two (jparse_elements*), the step to take when either half grows.
 *
 * jparse_scan is the same descent with ix set: the constructors give the
 * json_null() singleton instead of values, and scan_member notes spans,
 * so the grammar (what is accepted) is one piece of code for both.
 *
 * Recursive descent over the bytes in place. A string without escapes is
 * handed to json_stringn_nocheck straight from the input; one with escapes
 * is decoded into a scratch buffer first (never longer than its source).
 * Each step mirrors a rule of jansson 2.14's load.c, named where the rule
 * is not plain RFC 8259.
 */
#include "proxy/base/jparse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/base/sbuf.h"
#include "proxy/base/jarena.h"

struct jp {
	const char *p, *end;
	size_t depth;
	size_t nest, nest_max;  /* containers open now, most ever */
	struct jparse_span *span;  /* borrowed, or NULL */
	size_t span_len;        /* strlen(span->name) */
	char *scratch;          /* owned: decoded strings with escapes */
	size_t scratch_cap;
	/* jparse_scan: no value is built (every constructor gives the
	 * json_null() singleton, which needs no free), the index is filled. */
	struct jparse_index *ix; /* borrowed, or NULL: building a tree */
	enum jparse_slot under;  /* the top-level member whose value is being read */
};

/* A decoded string: in the input, or in jp->scratch. */
struct jstr {
	const char *s;
	size_t len;
};

static json_t *parse_value(struct jp *jp, int c);

static void skip_ws(struct jp *jp)
{
	const char *p = jp->p, *end = jp->end;
	/* Most texts are compact: the first byte above ' ' ends it at once. */
	while (p < end && (unsigned char)*p <= ' ' &&
	       (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	jp->p = p;
}

static __attribute__((noinline)) int peek_slow(struct jp *jp)
{
	skip_ws(jp);
	return jp->p < jp->end ? (unsigned char)*jp->p : -1;
}

/* Past blanks: the byte at jp->p (not consumed), or -1 at the end of the
 * text. A compact text has no blanks, so this is one test where a skip
 * and then a look would be two. */
static inline int peek(struct jp *jp)
{
	const char *p = jp->p;
	if (p < jp->end && (unsigned char)*p > ' ')
		return (unsigned char)*p;
	return peek_slow(jp);
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at s (s + 4 <= end checked by the caller); -1 if not. */
static long hex4(const char *s)
{
	long v = 0;
	for (int i = 0; i < 4; i++) {
		int d = hex_digit(s[i]);
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static size_t utf8_put(char *w, unsigned long cp)
{
	if (cp < 0x80) {
		w[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		w[0] = (char)(0xC0 | (cp >> 6));
		w[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		w[0] = (char)(0xE0 | (cp >> 12));
		w[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		w[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	w[0] = (char)(0xF0 | (cp >> 18));
	w[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	w[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	w[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Decodes the escapes of raw[0..n) (known to end before the closing
 * quote, with no raw control bytes) into jp->scratch. -1 on a bad escape,
 * a lone surrogate or \u0000 (load.c: "\u0000 is not allowed", "NUL byte
 * in object key"). */
static __attribute__((noinline)) int decode_escapes(struct jp *jp, const char *raw, size_t n, struct jstr *out)
{
	if (n > jp->scratch_cap) {
		char *s = realloc(jp->scratch, n);
		if (!s)
			return -1;
		jp->scratch = s;
		jp->scratch_cap = n;
	}
	char *w = jp->scratch;
	const char *p = raw, *end = raw + n;
	while (p < end) {
		if (*p != '\\') {
			*w++ = *p++;
			continue;
		}
		char e = p[1];
		p += 2;
		if (e != 'u') {
			static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
			const char *k = memchr(from, e, sizeof(from) - 1);
			if (!k)
				return -1;
			*w++ = to[k - from];
			continue;
		}
		if (end - p < 4)
			return -1;
		long cp = hex4(p);
		p += 4;
		if (cp < 0)
			return -1;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			/* A high surrogate needs a low one right after it. */
			if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
				return -1;
			long lo = hex4(p + 2);
			if (lo < 0xDC00 || lo > 0xDFFF)
				return -1;
			p += 6;
			cp = ((cp - 0xD800) << 10) + (lo - 0xDC00) + 0x10000;
		} else if ((cp >= 0xDC00 && cp <= 0xDFFF) || cp == 0) {
			return -1;
		}
		w += utf8_put(w, (unsigned long)cp);
	}
	out->s = jp->scratch;
	out->len = (size_t)(w - jp->scratch);
	return 0;
}

/* Index of the first flagged byte of a nonzero sbuf_json_special_word
 * mask: the lowest flag is a true one, and the first byte in memory is the
 * low byte on a little-endian machine, the high one otherwise. */
static unsigned first_flag(uint64_t m)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (unsigned)__builtin_clzll(m) / 8;
#else
	return (unsigned)__builtin_ctzll(m) / 8;
#endif
}

/* The string starting at jp->p (on its opening quote). */
static inline __attribute__((always_inline)) int parse_string(struct jp *jp, struct jstr *out)
{
	const char *start = ++jp->p, *p = start, *end = jp->end;
	const uint64_t highs = 0x8080808080808080ull;
	uint64_t high = 0;
	int escapes = 0;

	/* Eight bytes a step: the first quote, backslash or control byte of a
	 * word is found at once, so a short key costs one step, not a byte
	 * loop. High bytes are only noted (those of a whole word: one after
	 * the closing quote only costs a validation that passes) and the
	 * string is validated as UTF-8 once, below. Under eight bytes from
	 * the end of the text, a byte at a time. */
	for (;;) {
		unsigned char c;
		if (end - p >= 8) {
			uint64_t v;
			memcpy(&v, p, 8);
			uint64_t m = sbuf_json_special_word(v);
			high |= v;
			if (!m) {
				p += 8;
				continue;
			}
			p += first_flag(m);
			c = (unsigned char)*p;
		} else {
			if (p >= end)
				return -1;
			c = (unsigned char)*p;
			high |= c;
			if (c != '"' && c != '\\' && c >= 0x20) {
				p++;
				continue;
			}
		}
		if (c == '"')
			break;
		if (c < 0x20)
			return -1; /* control characters, NUL included */
		/* A backslash. The escaped byte is checked when decoding; only
		 * step over it here so that \" does not end the string. */
		escapes = 1;
		if (end - p < 2)
			return -1;
		p += 2;
	}
	size_t n = (size_t)(p - start);
	jp->p = p + 1;
	if ((high & highs) && !sbuf_utf8_valid(start, n))
		return -1;
	if (!escapes) {
		out->s = start;
		out->len = n;
		return 0;
	}
	/* An escaped byte under 0x20 ("\<LF>") is an invalid escape anyway,
	 * and decode_escapes refuses every escape but the nine valid ones. */
	return decode_escapes(jp, start, n, out);
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Past one or more digits at p; NULL when there is none. */
static const char *digits(const char *p, const char *end)
{
	if (p >= end || !is_digit(*p))
		return NULL;
	while (p < end && is_digit(*p))
		p++;
	return p;
}

/* A number (load.c lex_scan_number): an integer when it has no fraction
 * and no exponent (strtoll semantics, overflow is an error), else a real
 * from strtod (overflow to infinity is an error, underflow is not). */
static json_t *parse_number(struct jp *jp)
{
	const char *s = jp->p, *p = s, *end = jp->end;
	int neg = 0, real = 0;

	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	if (p >= end || !is_digit(*p))
		return NULL;
	if (*p == '0') {
		p++;
		if (p < end && is_digit(*p))
			return NULL;
	} else {
		p = digits(p, end);
	}
	if (p < end && *p == '.') {
		if (!(p = digits(p + 1, end)))
			return NULL;
		real = 1;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (!(p = digits(p, end)))
			return NULL;
		real = 1;
	}
	jp->p = p;
	if (!real) {
		/* Accumulate the magnitude; LLONG_MIN's is one more than
		 * LLONG_MAX's. */
		unsigned long long v = 0, lim = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
		for (const char *d = s + neg; d < p; d++) {
			unsigned dig = (unsigned)(*d - '0');
			if (v > (lim - dig) / 10)
				return NULL;
			v = v * 10 + dig;
		}
		json_int_t i = neg ? (json_int_t)(0 - v) : (json_int_t)v;
		return jp->ix ? json_null() : json_integer(i);
	}
	char stack[64], *buf = stack;
	size_t n = (size_t)(p - s);
	if (n >= sizeof(stack) && !(buf = malloc(n + 1)))
		return NULL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	double d = strtod(buf, NULL);
	int overflow = (d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE;
	if (buf != stack)
		free(buf);
	return overflow ? NULL : jp->ix ? json_null() : json_real(d);
}

/* Past an opening bracket: 1 when `close` follows at once (consumed). */
static int opens_empty(struct jp *jp, char close)
{
	jp->p++;
	if (peek(jp) == close) {
		jp->p++;
		return 1;
	}
	return 0;
}

/* After a member or an element: 1 at `close`, 0 after a comma (both
 * consumed), -1 on anything else. */
static int next_or_close(struct jp *jp, char close)
{
	int c = peek(jp);
	if (c < 0)
		return -1;
	jp->p++;
	return c == close ? 1 : c == ',' ? 0 : -1;
}

/* A string value at jp->p (on its opening quote). */
static inline json_t *string_value(struct jp *jp)
{
	struct jstr s;
	if (parse_string(jp, &s) < 0)
		return NULL;
	return jp->ix ? json_null() : json_stringn_nocheck(s.s, s.len);
}

/* One "key": value of an object into o. 0, or -1. */
static int parse_member(struct jp *jp, json_t *o)
{
	struct jstr key;

	if (peek(jp) != '"' || parse_string(jp, &key) < 0)
		return -1;
	/* The key may sit in the scratch buffer, which the value's own strings
	 * reuse: keep it until it is set. */
	char kstack[128], *kbuf = NULL;
	const char *k = key.s;
	if (key.s == jp->scratch) {
		kbuf = key.len <= sizeof(kstack) ? kstack : malloc(key.len);
		if (!kbuf)
			return -1;
		memcpy(kbuf, key.s, key.len);
		k = kbuf;
	}
	json_t *v = NULL;
	if (peek(jp) == ':') {
		jp->p++;
		int c = peek(jp);
		const char *at = jp->p;
		/* A string, the most common member value, without the call:
		 * parse_value would count it one deeper and refuse it at
		 * JSON_PARSER_MAX_DEPTH, so it only takes the others. */
		if (c == '"' && jp->depth < JSON_PARSER_MAX_DEPTH)
			v = string_value(jp);
		else
			v = parse_value(jp, c);
		/* depth 1: this is the top-level object's member. */
		if (v && jp->span && jp->depth == 1 && key.len == jp->span_len &&
		    memcmp(k, jp->span->name, key.len) == 0) {
			jp->span->at = at;
			jp->span->len = (size_t)(jp->p - at);
		}
	}
	int rc = v ? json_object_setn_new_nocheck(o, k, key.len, v) : -1;
	if (kbuf && kbuf != kstack)
		free(kbuf);
	return rc < 0 ? -1 : 0;
}

/* One element of an array into a. 0, or -1. */
static int parse_element(struct jp *jp, json_t *a)
{
	json_t *v = parse_value(jp, peek(jp));
	return v && json_array_append_new(a, v) == 0 ? 0 : -1;
}

/* An object or an array (c, new and owned, or NULL): its items, each read
 * by `item`, up to `close`. Returns c, or NULL after freeing it. */
static json_t *parse_items(struct jp *jp, json_t *c, char close,
                           int (*item)(struct jp *, json_t *))
{
	if (!c)
		return NULL;
	if (++jp->nest > jp->nest_max)
		jp->nest_max = jp->nest;
	if (opens_empty(jp, close)) {
		jp->nest--;
		return c;
	}
	for (;;) {
		int next = item(jp, c) < 0 ? -1 : next_or_close(jp, close);
		if (next > 0) {
			jp->nest--;
			return c;
		}
		if (next < 0)
			break;
	}
	json_decref(c);
	return NULL;
}

/* ---- jparse_scan: the same grammar, no tree ---------------------------------- */

#define KEY_IS(lit) (n == sizeof(lit) - 1 && memcmp(key, lit, n) == 0)

/* The slot a member named key[0..n) fills: a top-level one (depth 1), or
 * one of the object that top-level member `under` holds (depth 2). By
 * length first: most keys of a message are none of these (a loop over
 * the names cost half the scan of a tools/call result). */
static enum jparse_slot slot_of(size_t depth, enum jparse_slot under, const char *key, size_t n)
{
	if (depth == 1) {
		switch (n) {
		case 2: return KEY_IS("id") ? JPI_ID : JPI_NONE;
		case 5: return KEY_IS("error") ? JPI_ERROR : JPI_NONE;
		case 7: return KEY_IS("jsonrpc") ? JPI_JSONRPC : JPI_NONE;
		case 6:
			return KEY_IS("method") ? JPI_METHOD
			       : KEY_IS("params") ? JPI_PARAMS
			       : KEY_IS("result") ? JPI_RESULT
			                          : JPI_NONE;
		default: return JPI_NONE;
		}
	}
	if (depth != 2)
		return JPI_NONE;
	switch (under) {
	case JPI_PARAMS:
		return KEY_IS("name") ? JPI_NAME
		       : KEY_IS("arguments") ? JPI_ARGUMENTS
		       : KEY_IS("_meta") ? JPI_META
		       : KEY_IS("cursor") ? JPI_CURSOR
		                          : JPI_NONE;
	case JPI_RESULT:
		return KEY_IS("isError") ? JPI_IS_ERROR : KEY_IS("content") ? JPI_CONTENT : JPI_NONE;
	case JPI_ERROR: return KEY_IS("code") ? JPI_CODE : JPI_NONE;
	default: return JPI_NONE;
	}
}

#undef KEY_IS

/* A later top-level member of the same name replaces the earlier one
 * (jansson keeps the last): what was found inside the earlier goes. */
static void forget_inside(struct jparse_index *ix, enum jparse_slot top)
{
	for (int s = JPI_NAME; s < JPI_N; s++)
		if (jparse_parent(s) == top)
			ix->at[s] = (struct jparse_ref){NULL, 0};
	if (top == JPI_PARAMS)
		ix->name = NULL;
}

/* The decoded string of a member the proxy reads by name, kept in buf
 * (NULL: not a string, or too long: then *long_string). */
static const char *keep_string(struct jparse_index *ix, char *buf, const struct jstr *s)
{
	if (!s)
		return NULL;
	if (s->len >= JPARSE_NAME_MAX) {
		ix->long_string = 1;
		return NULL;
	}
	memcpy(buf, s->s, s->len);
	buf[s->len] = '\0';
	return buf;
}

/* scan's parse_member: validates one "key": value, noting its span when
 * the index wants it. */
static int scan_member(struct jp *jp, json_t *unused)
{
	struct jparse_index *ix = jp->ix;
	struct jstr key, str;
	(void)unused;

	if (peek(jp) != '"' || parse_string(jp, &key) < 0 || peek(jp) != ':')
		return -1;
	/* Before the value: its strings may reuse the key's scratch. */
	enum jparse_slot slot = slot_of(jp->depth, jp->under, key.s, key.len);
	jp->p++;
	int c = peek(jp);
	const char *at = jp->p;
	int top = jp->depth == 1;
	if (top) {
		jp->under = slot == JPI_PARAMS || slot == JPI_RESULT || slot == JPI_ERROR ? slot : JPI_NONE;
		if (jp->under)
			forget_inside(ix, slot);
	}
	json_t *v;
	int is_str = c == '"' && jp->depth < JSON_PARSER_MAX_DEPTH;
	if (is_str)
		v = parse_string(jp, &str) < 0 ? NULL : json_null();
	else
		v = parse_value(jp, c);
	if (top)
		jp->under = JPI_NONE;
	if (!v)
		return -1;
	if (slot != JPI_NONE)
		ix->at[slot] = (struct jparse_ref){at, (size_t)(jp->p - at)};
	if (slot == JPI_METHOD)
		ix->method = keep_string(ix, ix->method_buf, is_str ? &str : NULL);
	else if (slot == JPI_NAME)
		ix->name = keep_string(ix, ix->name_buf, is_str ? &str : NULL);
	return 0;
}

static int scan_element(struct jp *jp, json_t *unused)
{
	(void)unused;
	return parse_value(jp, peek(jp)) ? 0 : -1;
}

static int literal(struct jp *jp, const char *word, size_t n)
{
	if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, word, n) != 0)
		return 0;
	jp->p += n;
	return 1;
}

/* A number or a true/false/null at jp->p. */
static json_t *parse_scalar(struct jp *jp)
{
	json_t *v;

	switch (*jp->p) {
	case 't':
		v = literal(jp, "true", 4) ? json_true() : NULL;
		break;
	case 'f':
		v = literal(jp, "false", 5) ? json_false() : NULL;
		break;
	case 'n':
		v = literal(jp, "null", 4) ? json_null() : NULL;
		break;
	default:
		v = parse_number(jp);
		break;
	}
	/* load.c quirk, kept so both parsers accept the same texts: the byte
	 * that ends a number or a true/false/null is read and pushed back, and
	 * a pushed-back NUL reads as "buffer empty": one NUL right there is
	 * skipped ({"x":1\0} is JSON to jansson). */
	if (v && jp->p < jp->end && *jp->p == '\0')
		jp->p++;
	return v;
}

/* A value at jp->p (blanks skipped), whose first byte is c (peek: -1 at
 * the end of the text). load.c counts every value, scalars included,
 * against JSON_PARSER_MAX_DEPTH. */
static json_t *parse_value(struct jp *jp, int c)
{
	json_t *v;

	if (c < 0 || ++jp->depth > JSON_PARSER_MAX_DEPTH)
		return NULL;
	switch (c) {
	case '{':
		v = jp->ix ? parse_items(jp, json_null(), '}', scan_member)
		           : parse_items(jp, json_object(), '}', parse_member);
		break;
	case '[':
		v = jp->ix ? parse_items(jp, json_null(), ']', scan_element)
		           : parse_items(jp, json_array(), ']', parse_element);
		break;
	case '"':
		v = string_value(jp);
		break;
	default:
		v = parse_scalar(jp);
		break;
	}
	jp->depth--;
	return v;
}

static json_t *jparse_full(const char *buf, size_t len, int any, struct jparse_span *span,
                           size_t *nest, struct jparse_index *ix)
{
	struct jp jp = {.p = buf, .end = buf + len, .span = span, .ix = ix};

	if (span) {
		span->at = NULL;
		span->len = 0;
		jp.span_len = strlen(span->name);
	}
	if (!buf)
		return NULL;
	skip_ws(&jp);
	char first = jp.p < jp.end ? *jp.p : 0;
	if (!any && first != '{' && first != '[')
		return NULL;
	/* A small text's tree is cut from the arena (jarena.h): most of its
	 * values are freed together when the exchange ends. */
	int arena = !ix && len <= JARENA_MAX_TEXT;
	if (arena)
		jarena_open();
	json_t *v = parse_value(&jp, peek(&jp));
	if (arena)
		jarena_close();
	if (jp.scratch) /* rarely: only strings with escapes need it */
		free(jp.scratch);
	if (!v) {
		if (span)
			span->at = NULL;
		return NULL;
	}
	skip_ws(&jp);
	if (jp.p != jp.end) {
		json_decref(v);
		if (span)
			span->at = NULL;
		return NULL;
	}
	if (nest)
		*nest = jp.nest_max;
	if (ix) {
		ix->object = first == '{';
		ix->nest = jp.nest_max;
	}
	return v;
}

json_t *jparse(const char *buf, size_t len, int any)
{
	return jparse_span(buf, len, any, NULL);
}

json_t *jparse_span(const char *buf, size_t len, int any, struct jparse_span *span)
{
	return jparse_full(buf, len, any, span, NULL, NULL);
}

json_t *jparse_nest(const char *buf, size_t len, int any, size_t *nest)
{
	return jparse_full(buf, len, any, NULL, nest, NULL);
}

int jparse_scan(const char *buf, size_t len, int any, struct jparse_index *ix)
{
	memset(ix, 0, sizeof(*ix));
	/* v is the json_null() singleton: nothing to free. */
	json_t *v = jparse_full(buf, len, any, NULL, NULL, ix);
	if (!v) {
		memset(ix, 0, sizeof(*ix));
		return -1;
	}
	return 0;
}

json_t *jparse_ref_value(const struct jparse_ref *r)
{
	return r->at ? jparse(r->at, r->len, 1) : NULL;
}

json_t *jparse_copy(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		json_t *o = json_object(), *src = (json_t *)(uintptr_t)v; /* read only */
		for (void *it = json_object_iter(src); o && it; it = json_object_iter_next(src, it)) {
			json_t *c = jparse_copy(json_object_iter_value(it));
			if (!c || json_object_setn_new_nocheck(o, json_object_iter_key(it),
			                                       json_object_iter_key_len(it), c) < 0) {
				json_decref(o);
				o = NULL;
			}
		}
		return o;
	}
	case JSON_ARRAY: {
		json_t *a = json_array();
		for (size_t i = 0; a && i < json_array_size(v); i++) {
			json_t *c = jparse_copy(json_array_get(v, i));
			if (!c || json_array_append_new(a, c) < 0) {
				json_decref(a);
				a = NULL;
			}
		}
		return a;
	}
	case JSON_STRING:
		return json_stringn_nocheck(json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return json_integer(json_integer_value(v));
	case JSON_REAL:
		return json_real(json_real_value(v));
	case JSON_TRUE:
		return json_true();
	case JSON_FALSE:
		return json_false();
	case JSON_NULL:
		return json_null();
	default:
		return NULL;
	}
}

/* ---- element spans ------------------------------------------------------------
 *
 * A skimmer, not a parser: the text was parsed already (it is the one
 * jparse accepted), so only strings need care (a bracket inside one is
 * text), and a string's end is found with memchr. Anything unexpected
 * answers -1, never a guess. */

enum { SK_OTHER = 0, SK_WS, SK_QUOTE, SK_OPEN, SK_CLOSE, SK_SEP };

static const unsigned char sk_class[256] = {
	[' '] = SK_WS, ['\t'] = SK_WS, ['\n'] = SK_WS, ['\r'] = SK_WS, ['"'] = SK_QUOTE,
	['{'] = SK_OPEN, ['['] = SK_OPEN, ['}'] = SK_CLOSE, [']'] = SK_CLOSE,
	[','] = SK_SEP, [':'] = SK_SEP,
};

static const char *sk_ws(const char *p, const char *end)
{
	while (p < end && sk_class[(unsigned char)*p] == SK_WS)
		p++;
	return p;
}

/* p just after an opening quote: just after the closing one, or NULL. */
static const char *sk_string(const char *p, const char *end)
{
	const char *s = p;
	for (;;) {
		const char *q = memchr(p, '"', (size_t)(end - p));
		if (!q)
			return NULL;
		const char *b = q;
		while (b > s && b[-1] == '\\')
			b--;
		if (((q - b) & 1) == 0)
			return q + 1;
		p = q + 1;
	}
}

/* One value from p (no leading blanks): just after it, or NULL. */
static const char *sk_value(const char *p, const char *end)
{
	size_t depth = 0;
	while (p < end) {
		switch (sk_class[(unsigned char)*p]) {
		case SK_WS:
			p++;
			continue;
		case SK_QUOTE:
			if (!(p = sk_string(p + 1, end)))
				return NULL;
			break;
		case SK_OPEN:
			if (++depth > JSON_PARSER_MAX_DEPTH + 1)
				return NULL;
			p++;
			continue;
		case SK_CLOSE:
			if (depth == 0)
				return NULL;
			depth--;
			p++;
			break;
		case SK_SEP:
			if (depth == 0)
				return NULL;
			p++;
			continue;
		default:
			do
				p++;
			while (p < end && sk_class[(unsigned char)*p] == SK_OTHER);
		}
		if (depth == 0)
			return p;
	}
	return NULL;
}

/* A member's name and colon from p (its opening quote): just after the
 * colon and the blanks after it, or NULL; the name (escapes not decoded)
 * is *k[0..*klen). An escaped name answers NULL: it could spell any name
 * another way. */
static const char *sk_name(const char *p, const char *end, const char **k, size_t *klen)
{
	if (p >= end || *p != '"')
		return NULL;
	*k = p + 1;
	if (!(p = sk_string(*k, end)))
		return NULL;
	*klen = (size_t)(p - 1 - *k);
	if (memchr(*k, '\\', *klen))
		return NULL;
	p = sk_ws(p, end);
	if (p >= end || *p != ':')
		return NULL;
	return sk_ws(p + 1, end);
}

/* sk_name, *is_name telling whether the name is name[0..nlen). */
static const char *sk_key(const char *p, const char *end, const char *name, size_t nlen,
                          int *is_name)
{
	const char *k;
	size_t klen;
	if (!(p = sk_name(p, end, &k, &klen)))
		return NULL;
	*is_name = klen == nlen && memcmp(k, name, nlen) == 0;
	return p;
}

/* The members of an object from p (just after '{' or after a member's
 * value, blanks skipped), up to its '}'. The elements of a member named
 * name[0..nlen) go to out (at most max), *found counting them; a second
 * such member, or anything unexpected, answers -1. */
static int sk_members(const char *p, const char *end, const char *name, size_t nlen,
                      struct jparse_elem *out, size_t max, long *found, int first)
{
	for (;;) {
		p = sk_ws(p, end);
		if (p < end && *p == '}')  /* "{}" has no such member; after the
		                              object, the text ends */
			return first || sk_ws(p + 1, end) != end ? -1 : 0;
		if (!first) {
			if (p >= end || *p != ',')
				return -1;
			p = sk_ws(p + 1, end);
		}
		first = 0;
		/* A second member of that name would replace the first (jparse
		 * keeps the last). */
		int is_name;
		if (!(p = sk_key(p, end, name, nlen, &is_name)))
			return -1;
		if (!is_name) {
			if (!(p = sk_value(p, end)))
				return -1;
			continue;
		}
		if (*found >= 0 || p >= end || *p != '[')
			return -1;
		*found = 0;
		p = sk_ws(p + 1, end);
		if (p < end && *p == ']') {
			p++;
			continue;
		}
		for (;;) {
			const char *s = p;
			if (!(p = sk_value(p, end)) || (size_t)*found >= max)
				return -1;
			out[*found] = (struct jparse_elem){s, (size_t)(p - s), 0};
			(*found)++;
			p = sk_ws(p, end);
			if (p < end && *p == ',') {
				p = sk_ws(p + 1, end);
				continue;
			}
			if (p < end && *p == ']') {
				p++;
				break;
			}
			return -1;
		}
	}
}

long jparse_elements(const char *text, size_t len, const char *name, struct jparse_elem *out,
                     size_t max)
{
	long found = -1;
	if (!text)
		return -1;
	const char *p = sk_ws(text, text + len);
	if (p >= text + len || *p != '{')
		return -1;
	if (sk_members(p + 1, text + len, name, strlen(name), out, max, &found, 1) < 0)
		return -1;
	return found;
}

int jparse_last_member(const char *text, size_t len, const char *name, struct jparse_ref *out)
{
	const char *end = text + len, *p = text ? sk_ws(text, end) : NULL;
	size_t nlen = strlen(name);
	*out = (struct jparse_ref){NULL, 0};
	if (!p || p >= end || *p != '{')
		return -1;
	while (end > p && sk_class[(unsigned char)end[-1]] == SK_WS)
		end--;
	if (end - p < 2 || end[-1] != '}')
		return -1;
	end--; /* the object's closing brace */
	p = sk_ws(p + 1, end);
	for (;;) {
		int is_name;
		const char *v = sk_key(p, end, name, nlen, &is_name);
		if (!v)
			return -1;
		if (is_name) {
			const char *e = end;
			while (e > v && sk_class[(unsigned char)e[-1]] == SK_WS)
				e--;
			if (e == v)
				return -1;
			*out = (struct jparse_ref){v, (size_t)(e - v)};
			return 0;
		}
		if (!(p = sk_value(v, end)))
			return -1;
		p = sk_ws(p, end);
		if (p >= end || *p != ',')
			return -1;
		p = sk_ws(p + 1, end);
	}
}

/* The members of the object at p (its '{') named names[0..n) (lengths
 * nl) into out: just after the object's '}', or NULL (jparse_pick). */
static const char *sk_pick(const char *p, const char *end, const char *const *names,
                           const size_t *nl, size_t n, struct jparse_ref *out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (struct jparse_ref){NULL, 0};
	if (p >= end || *p != '{')
		return NULL;
	p = sk_ws(p + 1, end);
	if (p < end && *p == '}')
		return p + 1;
	for (;;) {
		const char *k, *v;
		size_t klen;
		if (!(v = sk_name(p, end, &k, &klen)) || !(p = sk_value(v, end)))
			return NULL;
		for (size_t i = 0; i < n; i++) {
			if (nl[i] != klen || memcmp(names[i], k, klen) != 0)
				continue;
			if (out[i].at) /* twice: jparse would keep the second */
				return NULL;
			out[i] = (struct jparse_ref){v, (size_t)(p - v)};
		}
		p = sk_ws(p, end);
		if (p < end && *p == ',') {
			p = sk_ws(p + 1, end);
			continue;
		}
		return p < end && *p == '}' ? p + 1 : NULL;
	}
}

#define PICK_NAMES 8

int jparse_pick(const char *text, size_t len, const char *const *names, size_t n,
                struct jparse_ref *out)
{
	const char *end = text + len, *p = text ? sk_ws(text, end) : NULL;
	size_t nl[PICK_NAMES];
	if (!p || n > PICK_NAMES)
		return -1;
	for (size_t i = 0; i < n; i++)
		nl[i] = strlen(names[i]);
	p = sk_pick(p, end, names, nl, n, out);
	return p && sk_ws(p, end) == end ? 0 : -1;
}

long jparse_pick_each(const char *text, size_t len, const char *const *names, size_t n,
                      struct jparse_ref *out, size_t max)
{
	const char *end = text + len, *p = text ? sk_ws(text, end) : NULL;
	size_t nl[PICK_NAMES];
	long found = 0;
	if (!p || n > PICK_NAMES || p >= end || *p != '[')
		return -1;
	for (size_t i = 0; i < n; i++)
		nl[i] = strlen(names[i]);
	p = sk_ws(p + 1, end);
	if (p < end && *p == ']')
		return sk_ws(p + 1, end) == end ? 0 : -1;
	for (;;) {
		if ((size_t)found >= max || !(p = sk_pick(p, end, names, nl, n, out + found * n)))
			return -1;
		found++;
		p = sk_ws(p, end);
		if (p < end && *p == ',') {
			p = sk_ws(p + 1, end);
			continue;
		}
		return p < end && *p == ']' && sk_ws(p + 1, end) == end ? found : -1;
	}
}

/* Bytes a and b have in common from the start (at most n), and from the
 * end (at most n): blocks through memcmp, smaller and smaller, then bytes. */
static size_t common_head(const char *a, const char *b, size_t n)
{
	size_t i = 0;
	for (size_t blk = 16384; blk >= 64; blk /= 16)
		while (i + blk <= n && memcmp(a + i, b + i, blk) == 0)
			i += blk;
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

static size_t common_tail(const char *a, size_t alen, const char *b, size_t blen, size_t n)
{
	size_t i = 0;
	for (size_t blk = 16384; blk >= 64; blk /= 16)
		while (i + blk <= n && memcmp(a + alen - i - blk, b + blen - i - blk, blk) == 0)
			i += blk;
	while (i < n && a[alen - 1 - i] == b[blen - 1 - i])
		i++;
	return i;
}

/* The window: with P bytes in common at the head and S at the tail (not
 * overlapping), old element j is the same in the new text when it ends
 * before P (its last byte and the one after it decide where it ends), at
 * the same offset; an old element that ends at or past len - S ends at the
 * same distance from the end in both. So the new text is skimmed from the
 * first element not wholly in the head, in the state an element starts
 * in, until an element ends where an old one ended (same distance from
 * the end, inside the tail): from there on both texts are the same bytes
 * read in the same state, and the old spans hold, shifted. Reaching the
 * array's end first, the members after it are skimmed again. */
long jparse_elements_since(const char *text, size_t len, const char *name,
                           struct jparse_elem *out, size_t max, const char *old, size_t oldlen,
                           const struct jparse_elem *prev, size_t nprev)
{
	if (!text || !old || nprev == 0 || nprev > max)
		return jparse_elements(text, len, name, out, max);
	size_t m = len < oldlen ? len : oldlen;
	size_t P = common_head(text, old, m);
	size_t S = common_tail(text, len, old, oldlen, m - P);
	ptrdiff_t d = (ptrdiff_t)len - (ptrdiff_t)oldlen;
	const char *end = text + len;
	size_t k = 0;
	while (k < nprev && (size_t)(prev[k].at + prev[k].len - old) < P)
		k++;
	const char *p;
	int in_value;
	if (k < nprev && (size_t)(prev[k].at - old) <= P) {
		p = text + (prev[k].at - old);
		in_value = 1;
	} else if (k > 0) {
		p = text + (prev[k - 1].at + prev[k - 1].len - old);
		in_value = 0;
	} else {
		return jparse_elements(text, len, name, out, max);
	}
	for (size_t i = 0; i < k; i++)
		out[i] = (struct jparse_elem){text + (prev[i].at - old), prev[i].len, i + 1};
	long n = (long)k;
	size_t j = k; /* old elements ending before the sync point are passed */
	for (;;) {
		if (in_value) {
			const char *s = p;
			if (!(p = sk_value(p, end)) || (size_t)n >= max)
				return -1;
			out[n++] = (struct jparse_elem){s, (size_t)(p - s), 0};
			size_t y = (size_t)(p - text);
			if (y >= len - S) {
				ptrdiff_t oy = (ptrdiff_t)y - d;
				while (j < nprev && prev[j].at + prev[j].len - old < oy)
					j++;
				if (j < nprev && prev[j].at + prev[j].len - old == oy) {
					if ((size_t)n + (nprev - j - 1) > max)
						return -1;
					for (size_t i = j + 1; i < nprev; i++)
						out[n++] = (struct jparse_elem){text + (prev[i].at - old) + d,
						                                prev[i].len, i + 1};
					return n;
				}
			}
		}
		p = sk_ws(p, end);
		if (p < end && *p == ',') {
			p = sk_ws(p + 1, end);
			in_value = 1;
			continue;
		}
		if (p < end && *p == ']')
			break;
		return -1;
	}
	/* The array ended before the texts met again: the members after it. */
	long dummy = 0;
	if (sk_members(p + 1, end, name, strlen(name), NULL, 0, &dummy, 0) < 0)
		return -1;
	return n;
}

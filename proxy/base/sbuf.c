/* sbuf: see sbuf.h. */
#include "proxy/base/sbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and a NUL. 0, or -1 (oom set). */
static int sbuf_grow(struct sbuf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 128;
	while (cap < b->len + n + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (p == NULL) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void sbuf_putn(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap && sbuf_grow(b, n) < 0)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_putn(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n >= 0)
		sbuf_putn(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void sbuf_token(struct sbuf *b, const char *tok)
{
	sbuf_putn(b, "/", 1);
	/* Plain runs in one copy each: names rarely hold '~' or '/'. */
	while (*tok) {
		size_t run = strcspn(tok, "~/");
		sbuf_putn(b, tok, run);
		tok += run;
		if (*tok) {
			sbuf_putn(b, *tok == '~' ? "~0" : "~1", 2);
			tok++;
		}
	}
}

void sbuf_index(struct sbuf *b, size_t i)
{
	char tmp[1 + SBUF_I64_MAX];
	tmp[0] = '/';
	sbuf_putn(b, tmp, 1 + sbuf_i64_text(tmp + 1, (long long)i));
}

void sbuf_cut(struct sbuf *b, size_t len)
{
	if (b->p != NULL && len <= b->len) {
		b->len = len;
		b->p[len] = '\0';
	}
}

size_t sbuf_i64_text(char *buf, long long v)
{
	/* Two digits a division, written in place from the end: records
	 * carry several numbers each. */
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
	                            "31323334353637383940414243444546474849505152535455565758596061"
	                            "6263646566676869707172737475767778798081828384858687888990919293"
	                            "949596979899";
	/* In unsigned arithmetic so that LLONG_MIN negates without overflow. */
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	/* Counted by comparisons, four at a step: numbers in records are
	 * mostly short (a status, a count, an id), and a division costs. */
	size_t digits = 1;
	for (unsigned long long t = u;; t /= 10000, digits += 4) {
		if (t < 10)
			break;
		if (t < 100) {
			digits += 1;
			break;
		}
		if (t < 1000) {
			digits += 2;
			break;
		}
		if (t < 10000) {
			digits += 3;
			break;
		}
	}
	size_t n = digits + (v < 0);
	char *p = buf + n;
	while (u >= 100) {
		unsigned d = (unsigned)(u % 100) * 2;
		u /= 100;
		p -= 2;
		p[0] = pairs[d];
		p[1] = pairs[d + 1];
	}
	if (u >= 10) {
		p -= 2;
		p[0] = pairs[u * 2];
		p[1] = pairs[u * 2 + 1];
	} else {
		*--p = (char)('0' + u);
	}
	if (v < 0)
		*--p = '-';
	return n;
}

void sbuf_i64(struct sbuf *b, long long v)
{
	char tmp[SBUF_I64_MAX];
	sbuf_putn(b, tmp, sbuf_i64_text(tmp, v));
}

/* What each byte becomes inside a JSON string: 0 as itself, 'u' as
 * \u00XX, any other letter as a backslash and that letter. */
static const char json_esc[256] = {
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
	0,   0,   '"', [92] = '\\',
};

/* Eight bytes at a time: call records are mostly plain ASCII, and a
 * block of eight that needs no escape is one 8-byte copy. The test that
 * flags a block holding a byte < 0x20, '"' or '\\' is
 * sbuf_json_special_word (sbuf.h), shared with proxy/base/jparse.c. */
#define ONES  0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

static inline uint64_t load8(const char *s)
{
	uint64_t v;
	memcpy(&v, s, 8);
	return v;
}

static inline uint32_t load4(const char *s)
{
	uint32_t v;
	memcpy(&v, s, 4);
	return v;
}

/* The OR of s[0..n): its top bits say whether any byte is >= 0x80. Short
 * texts (names, addresses) are the common case: their bytes are read as
 * two overlapping blocks, not one at a time. */
static inline uint64_t or_bytes(const char *s, size_t n)
{
	uint64_t acc = 0;
	if (n >= 8) {
		for (size_t i = 0; i + 8 <= n; i += 8)
			acc |= load8(s + i);
		return acc | load8(s + n - 8);
	}
	if (n >= 4)
		return load4(s) | load4(s + n - 4);
	for (size_t i = 0; i < n; i++)
		acc |= (unsigned char)s[i];
	return acc;
}

/* Whether no byte of s[0..n) needs escaping (overlapping blocks, as
 * or_bytes). */
static inline int plain_json(const char *s, size_t n)
{
	if (n >= 8) {
		for (size_t i = 0; i + 8 <= n; i += 8)
			if (sbuf_json_special_word(load8(s + i)))
				return 0;
		return !sbuf_json_special_word(load8(s + n - 8));
	}
	if (n >= 4) {
		/* a block of the first four and the last four (overlapping) */
		uint64_t v = (uint64_t)load4(s) | (uint64_t)load4(s + n - 4) << 32;
		return !sbuf_json_special_word(v);
	}
	for (size_t i = 0; i < n; i++)
		if (json_esc[(unsigned char)s[i]])
			return 0;
	return 1;
}

int sbuf_json_plain(const char *s, size_t n)
{
	/* plain_json's blocks, also flagging bytes >= 0x80 */
	if (n >= 8) {
		for (size_t i = 0; i + 8 <= n; i += 8) {
			uint64_t v = load8(s + i);
			if (sbuf_json_special_word(v) | (v & HIGHS))
				return 0;
		}
		uint64_t v = load8(s + n - 8);
		return !(sbuf_json_special_word(v) | (v & HIGHS));
	}
	if (n >= 4) {
		uint64_t v = (uint64_t)load4(s) | (uint64_t)load4(s + n - 4) << 32;
		return !(sbuf_json_special_word(v) | (v & HIGHS));
	}
	for (size_t i = 0; i < n; i++)
		if (json_esc[(unsigned char)s[i]] || (unsigned char)s[i] >= 0x80)
			return 0;
	return 1;
}

/* One byte escaped into w; returns the bytes written. */
static inline size_t escape_byte(char *w, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";
	char e = json_esc[c];
	if (!e) {
		*w = (char)c;
		return 1;
	}
	if (e == 'u') {
		memcpy(w, "\\u00", 4);
		w[4] = hex[c >> 4];
		w[5] = hex[c & 15];
		return 6;
	}
	w[0] = '\\';
	w[1] = e;
	return 2;
}

/* Escapes s[0..n) into w, which has room for 6 * n bytes (every byte may
 * become \u00XX). Returns the bytes written. */
static size_t escape_into(char *w, const char *s, size_t n)
{
	char *start = w;
	size_t i = 0;

	if (plain_json(s, n)) {
		memcpy(w, s, n); /* the common case: nothing to escape */
		return n;
	}

	while (i + 8 <= n) {
		uint64_t v = load8(s + i);
		uint64_t m = sbuf_json_special_word(v);
		/* All eight copied (w has room: 6 bytes a byte); kept up to the
		 * first byte to escape, then the run goes on after it. */
		memcpy(w, &v, 8);
		if (!m) {
			w += 8;
			i += 8;
			continue;
		}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		/* The lowest flag is a true one (see sbuf_json_special_word) and, little
		 * endian, the first byte in memory. */
		size_t k = (size_t)__builtin_ctzll(m) / 8;
#else
		size_t k = 0;
		while (!json_esc[(unsigned char)s[i + k]])
			k++;
#endif
		w += k;
		i += k;
		w += escape_byte(w, (unsigned char)s[i++]);
	}
	for (; i < n; i++)
		w += escape_byte(w, (unsigned char)s[i]);
	return (size_t)(w - start);
}

size_t sbuf_json_escape_to(char *w, const char *s, size_t n)
{
	return escape_into(w, s, n);
}

size_t sbuf_json_escaped_len(const char *s, size_t n)
{
	static const unsigned char extra[256] = {
		5, 5, 5, 5, 5, 5, 5, 5, 1, 1, 1, 5, 1, 1, 5, 5,
		5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
		0, 0, 1, [92] = 1,
	};
	size_t len = n, i = 0;
	if (plain_json(s, n))
		return n;
	for (;;) {
		while (i + 8 <= n && !sbuf_json_special_word(load8(s + i)))
			i += 8;
		if (i >= n)
			return len;
		size_t end = i + 8 <= n ? i + 8 : n;
		for (; i < end; i++)
			len += extra[(unsigned char)s[i]];
	}
}

char *sbuf_room(struct sbuf *b, size_t n)
{
	if (b->oom)
		return NULL;
	if (n > (size_t)-1 - b->len - 1) {
		b->oom = 1;
		return NULL;
	}
	if (b->len + n + 1 > b->cap && sbuf_grow(b, n) < 0)
		return NULL;
	return b->p + b->len;
}

void sbuf_wrote(struct sbuf *b, size_t k)
{
	b->len += k;
	b->p[b->len] = '\0';
}

void sbuf_json_escape(sbuf_put_fn put, void *arg, const char *s, size_t n)
{
	char chunk[6 * 256];

	put(arg, "\"", 1);
	for (size_t i = 0; i < n; i += 256) {
		size_t k = n - i < 256 ? n - i : 256;
		put(arg, chunk, escape_into(chunk, s + i, k));
	}
	put(arg, "\"", 1);
}

/* Continuation bytes (10xxxxxx) in a block of eight. */
static inline unsigned cont8(uint64_t v)
{
	/* One bit a byte, summed by a multiply: without -mpopcnt the
	 * builtin is a call to libgcc. */
	uint64_t c = (v & ~(v << 1) & HIGHS) >> 7;
	return (unsigned)((c * ONES) >> 56);
}

size_t sbuf_utf8_chars(const char *s, size_t n)
{
	size_t chars = n, i = 0;
	for (; i + 8 <= n; i += 8)
		chars -= cont8(load8(s + i));
	for (; i < n; i++)
		chars -= ((unsigned char)s[i] & 0xC0) == 0x80;
	return chars;
}

size_t sbuf_json_str_chars(const char *s, size_t n)
{
	size_t chars = 2, i = 0;
	for (;;) {
		/* Plain blocks: a code point per byte but continuation bytes. */
		for (; i + 8 <= n; i += 8) {
			uint64_t v = load8(s + i);
			if (sbuf_json_special_word(v))
				break;
			chars += 8 - cont8(v);
		}
		if (i >= n)
			return chars;
		size_t end = i + 8 <= n ? i + 8 : n;
		for (; i < end; i++) {
			unsigned char c = (unsigned char)s[i];
			char e = json_esc[c];
			if ((c & 0xC0) == 0x80)
				continue; /* inside a multi-byte sequence: counted at its lead */
			chars += !e ? 1 : e == 'u' ? 6 : 2;
		}
	}
}

void sbuf_json_str(struct sbuf *b, const char *s, size_t n)
{
	/* Room for the worst case, then escaped in place: one capacity check
	 * per string, not per byte. */
	if (b->oom || n > ((size_t)-1 - b->len - 3) / 6) {
		b->oom = 1;
		return;
	}
	if (b->len + 6 * n + 3 > b->cap && sbuf_grow(b, 6 * n + 2) < 0)
		return;
	char *w = b->p + b->len;
	*w++ = '"';
	w += escape_into(w, s, n);
	*w++ = '"';
	*w = '\0';
	b->len = (size_t)(w - b->p);
}

/* Length of the sequence s[0..n) starts with, 0 when it is not valid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0], need, cp;
	if (c < 0x80)
		return 1;
	if (c < 0xC2 || c > 0xF4)
		return 0; /* continuation byte, overlong 2-byte lead, past U+10FFFF */
	need = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
	if (n < need)
		return 0;
	cp = c & (0x3Fu >> (need - 1));
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3Fu);
	}
	if ((need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return need;
}

int sbuf_utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	if (!(or_bytes(s, n) & HIGHS))
		return 1; /* ASCII: most text is */
	for (size_t i = 0; i < n;) {
		/* ASCII blocks, eight bytes a test. */
		if (i + 8 <= n && !(load8(s + i) & HIGHS)) {
			i += 8;
			continue;
		}
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = utf8_seq(u + i, n - i);
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

const char *sbuf_str(const struct sbuf *b)
{
	return b->p ? b->p : "";
}

const char *sbuf_quote(char *buf, size_t size, const char *s, size_t max)
{
	size_t n = strlen(s);
	int cut = 0;

	if (max > size - 4)
		max = size - 4;
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
		cut = 1;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		buf[i] = (ch < 0x20 || ch == 0x7F) ? '?' : (char)ch;
	}
	if (cut) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

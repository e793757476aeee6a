/* sbuf: a growing string with a sticky out-of-memory flag, for building
 * JSON Pointers and text reports in checks/, and JSON text where jansson's
 * json_dumps() would cost more than the data is worth (call records).
 * Callers append freely and check `oom` once at the end.
 *
 * The struct is embedded by its users (it is three fields and a flag), so
 * it is not opaque. Start from `struct sbuf b = {0}`; free(b.p) when done.
 */
#ifndef MCPWARDEN_SBUF_H
#define MCPWARDEN_SBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct sbuf {
	char *p;        /* owned, NUL-terminated when not NULL */
	size_t len, cap;
	int oom;        /* an allocation failed: content is incomplete */
};

void sbuf_putn(struct sbuf *b, const char *s, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
/* printf-style; one call appends at most 511 bytes. */
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "/" and one RFC 6901 reference token ("~" -> "~0", "/" -> "~1"). */
void sbuf_token(struct sbuf *b, const char *tok);
/* "/" and an array index. */
void sbuf_index(struct sbuf *b, size_t i);
/* Back to the first len bytes (len <= current length). */
void sbuf_cut(struct sbuf *b, size_t len);
/* Untrusted text for a one-line message, into buf (size bytes): at most
 * max bytes, cut on a UTF-8 boundary (json_string() needs valid UTF-8)
 * and marked "...", control characters replaced by '?'. Returns buf. */
const char *sbuf_quote(char *buf, size_t size, const char *s, size_t max);

/* JSON text, byte for byte what json_dumps() writes for the same value:
 * s[0..n) (valid UTF-8, NULs allowed) as a quoted string with '"', '\\'
 * and control characters escaped (\b \f \n \r \t, else \u00XX), and
 * integers in decimal. */
void sbuf_json_str(struct sbuf *b, const char *s, size_t n);
/* The same quoted, escaped string handed to put(arg, bytes, len) in runs,
 * for writers that are not an sbuf. */
typedef void (*sbuf_put_fn)(void *arg, const char *s, size_t n);
void sbuf_json_escape(sbuf_put_fn put, void *arg, const char *s, size_t n);
/* s[0..n) escaped as sbuf_json_str writes it, without the quotes, into w
 * (room for 6 * n bytes: any byte may become \u00XX). Returns the bytes
 * written, which is sbuf_json_escaped_len(s, n). */
size_t sbuf_json_escape_to(char *w, const char *s, size_t n);
size_t sbuf_json_escaped_len(const char *s, size_t n);
/* For writers that know how much they will write: room for n more bytes
 * (and a NUL) at the end of b, NULL when out of memory (oom set). Write at
 * most n bytes there, then sbuf_wrote(b, k) with the k written. */
char *sbuf_room(struct sbuf *b, size_t n);
void sbuf_wrote(struct sbuf *b, size_t k);
/* The code points sbuf_json_str would write for s[0..n), quotes included,
 * without writing them. */
size_t sbuf_json_str_chars(const char *s, size_t n);
/* The code points of UTF-8 text s[0..n): the bytes that are not
 * continuation bytes (10xxxxxx). */
size_t sbuf_utf8_chars(const char *s, size_t n);
void sbuf_i64(struct sbuf *b, long long v);
/* v in decimal into buf (at least SBUF_I64_MAX bytes, not NUL-terminated);
 * returns the length. */
#define SBUF_I64_MAX 20
size_t sbuf_i64_text(char *buf, long long v);

/* Whether s[0..n) is ASCII with nothing to escape: valid UTF-8 that is
 * its own JSON string text (one scan for what names and addresses are). */
int sbuf_json_plain(const char *s, size_t n);

/* Whether s[0..n) is UTF-8 as jansson accepts it (shortest forms, no
 * surrogates, nothing past U+10FFFF; NUL bytes allowed). */
int sbuf_utf8_valid(const char *s, size_t n);

/* Nonzero when one of the eight bytes of v (as loaded from memory) is
 * special inside a JSON string: '"', '\\' or a control byte (< 0x20);
 * bytes >= 0x80 never are. SWAR "has less than" and "has zero" tests: a
 * flag may be set wrongly only above a true one, so "any flag" is exact
 * (and the lowest flag is a true one). For scanners and escapers that
 * step over plain runs eight bytes at a time. */
static inline uint64_t sbuf_json_special_word(uint64_t v)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
	/* q and b keep v's top bits ('"' and '\\' are ASCII): ~v stands for
	 * ~q and ~b in their "has zero" tests. */
	return ((v - ones * 0x20) | (q - ones) | (b - ones)) & ~v & highs;
}

/* The same for the eight bytes at s. */
static inline uint64_t sbuf_json_special8(const char *s)
{
	uint64_t v;
	memcpy(&v, s, 8);
	return sbuf_json_special_word(v);
}

/* Nonzero when one of the eight bytes at s is >= 0x80. */
static inline uint64_t sbuf_high8(const char *s)
{
	uint64_t v;
	memcpy(&v, s, 8);
	return v & 0x8080808080808080ull;
}

/* The content, "" when empty. Borrowed. */
const char *sbuf_str(const struct sbuf *b);

#endif

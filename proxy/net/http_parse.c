/* http_parse: see http_parse.h.
 *
 * Why this file is long (over 800 lines): it is one fuzzed parser; every llhttp callback appends to
 * the bounded buffer and header array of struct http_parser, and the
 * per-header steps are inline for speed, so a split would export that
 * struct and lose the inlining on the hot path.
 *
 * Layout of the header block buffer (offsets, never pointers, so it can be
 * reallocated while it grows up to its cap):
 *
 *   buf: [url\0][name\0][value\0][name\0][value\0]...
 *         ^url_off  ^hdr[0].name  ^hdr[0].value
 */
#include "proxy/net/http_parse.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <llhttp.h>

#include "proxy/base/limits.h"

/* 16 bytes, so that hdr[i] is a shift away (the id is in http_msg.id). */
struct http_hdr {
	uint32_t name_off, name_len, val_off, val_len;
};

_Static_assert(LIMIT_MAX_HEADERS < 255, "header index + 1 fits in http_msg.first");
/* Headers a parser holds without a table of its own: more than a usual
 * request or reply head has (SDK clients and servers send 8 to 14). */
#define HDR_INLINE 24
_Static_assert(HDR_INLINE <= LIMIT_MAX_HEADERS, "the inline table is the smaller");
_Static_assert(HH__COUNT <= 256, "a header id fits in http_msg.id");
_Static_assert(HH__COUNT <= 32, "a bit per header id in http_msg.repeated");

/* Where llhttp is in the head. llhttp calls on_url, on_header_field and
 * on_header_value with spans of the text, any of them possibly cut by the
 * end of a feed and continued by the next call. The *_complete callbacks
 * are not registered (llhttp still calls its api.c wrappers, but not ours:
 * two calls per header and one per request less); what they did is done
 * at the next transition instead:
 *
 *   URL --field--> (URL terminated) NONE --field--> NAME
 *   NAME --field span that ends before the feed does (llhttp saw the ':')-->
 *        NAMED: id, token check, name terminated
 *   NAME --field span cut by the feed's end--> NAME (its rest comes next)
 *   NAMED --value--> VALUE --value--> VALUE (the rest, or an obs-fold line)
 *   NAMED or VALUE --field--> (value trimmed, terminated, counted) NAME
 *   any --on_headers_complete--> (the same) TRAILERS
 *
 * A name is completed in the field span that ends it, where
 * on_header_field_complete ran before, so a bad name is refused at the
 * same byte as before; the buffer holds the same bytes at every append,
 * so the cap is met at the same byte too. Until the head is complete, a
 * header shows in the message once the next one begins. */
enum hdr_phase {
	HP_NONE = 0,    /* no header open (none yet, or the last one ended) */
	HP_URL,         /* request: URL bytes came, not yet NUL-terminated */
	HP_NAME,        /* hdr[nhdr]: name open, cut by the end of a feed */
	HP_NAMED,       /* hdr[nhdr]: name complete and terminated, no value yet */
	HP_VALUE,       /* hdr[nhdr]: value open (untrimmed, unterminated) */
	HP_TRAILERS,    /* past the head: chunked trailers, counted only */
};

struct http_msg {
	const char *method;           /* static, from llhttp */
	enum http_method_id method_id;
	int status;
	int version;
	int keep_alive;
	int64_t content_length;
	uint32_t url_off, url_len;
	int url_done;
	/* The first Connection header lists a token that is not one of the
	 * fixed hop-by-hop names (set when the head is complete). */
	int conn_options;
	/* Bit id: a second header of that id came. */
	uint32_t repeated;
	/* An absolute-form target: its authority, NUL-terminated in buf,
	 * stands for Host (RFC 9112 §3.2.2). */
	int absolute;
	uint32_t auth_off, auth_len;
	/* 1 + index of the first header of each id; 0: absent. Cleared with
	 * the fields above it on reset (it sits before hdr). */
	uint8_t first[HH__COUNT];
	/* hdr_in and id_in, until a head has more than HDR_INLINE headers:
	 * then owned tables of LIMIT_MAX_HEADERS, kept for the parser's life.
	 * A full table in every parser was 1.7 KB of the 14 KiB an idle SSE
	 * stream held (two parsers a stream), for heads that have about 12. */
	struct http_hdr *hdr;
	uint8_t *id;                    /* enum http_hdr_id of hdr[i] */
	size_t hcap;
	size_t nhdr;
	enum hdr_phase phase;
	/* Past the head (HP_TRAILERS): chunked trailers are not headers
	 * (nothing after the head may move the buffer under pointers handed
	 * out), but their bytes still count against the cap. */
	size_t trailer_bytes;
	char *buf;                    /* owned */
	size_t used, cap;
	struct http_hdr hdr_in[HDR_INLINE];
	uint8_t id_in[HDR_INLINE];
};

struct http_parser {
	llhttp_t ll;
	llhttp_settings_t settings;
	enum http_kind kind;
	size_t max;
	const struct http_parser_cbs *cbs;  /* borrowed: caller's static table */
	void *arg;
	struct http_msg msg;
	enum http_parse_err err;
	const char *reason;
	int started, done;
	/* End of the bytes of the llhttp_execute running: a span ending there
	 * was cut by the feed and goes on in the next one. */
	const char *feed_end;
	/* Bytes of the CRLF after a chunk's data still to be checked (llhttp
	 * 8 skips those two bytes unread outside its strict mode), maybe at
	 * the start of the next feed. */
	unsigned crlf_left;
	/* Chunk-extension bytes of this message (requests). */
	size_t chunk_ext;
	/* The last Host found valid on this connection (kept across
	 * messages): a keep-alive client sends the same one every time, and
	 * comparing it costs less than checking each byte again (~60
	 * instructions a request). Same bytes, same answer. */
	uint8_t host_ok_len;
	char host_ok[64];
};

#define PARSER(ll) ((struct http_parser *)(ll)->data)

static int fail(struct http_parser *p, enum http_parse_err err, const char *reason)
{
	p->err = err;
	p->reason = reason;
	return HPE_USER;
}

/* Makes room for need bytes, within the cap. Cold: the buffer is kept
 * across messages, so it grows in the first few only. */
__attribute__((noinline, cold)) static int buf_grow(struct http_parser *p, size_t need)
{
	struct http_msg *m = &p->msg;

	if (need > p->max)
		return fail(p, HTTP_ERR_HEADERS_TOO_BIG, "header block too large");
	size_t cap = m->cap ? m->cap : 1024;
	while (cap < need)
		cap *= 2;
	if (cap > p->max)
		cap = p->max;
	char *nb = realloc(m->buf, cap);
	if (!nb)
		return fail(p, HTTP_ERR_CALLBACK, "out of memory");
	m->buf = nb;
	m->cap = cap;
	return 0;
}

static inline uint64_t ld64(const char *s)
{
	uint64_t v;
	memcpy(&v, s, sizeof(v));
	return v;
}

static inline uint32_t ld32(const char *s)
{
	uint32_t v;
	memcpy(&v, s, sizeof(v));
	return v;
}

/* The slow way to append: a long span (memcpy), or the buffer must grow
 * first. Out of line, so the span callbacks' usual path calls nothing. */
__attribute__((noinline)) static int append_slow(struct http_parser *p, const char *at,
                                                 size_t len)
{
	struct http_msg *m = &p->msg;

	if (m->used + len + 1 > m->cap && buf_grow(p, m->used + len + 1))
		return HPE_USER;
	memcpy(m->buf + m->used, at, len);
	m->used += len;
	return 0;
}

/* Appends a span and keeps room for one more byte (a NUL terminator).
 * m->cap never exceeds p->max, so within cap is within the cap: one
 * comparison on the usual path. Spans of up to 32 bytes (names, most
 * values) are copied here without a call (http_copy_short); longer ones
 * and a buffer that must grow go the slow way. */
static inline int buf_append(struct http_parser *p, const char *at, size_t len)
{
	struct http_msg *m = &p->msg;
	size_t used = m->used;

	if (len > 32 || used + len + 1 > m->cap)
		return append_slow(p, at, len);
	http_copy_short(m->buf + used, at, len);
	m->used = used + len;
	return 0;
}

static int terminate(struct http_parser *p)
{
	/* buf_append reserved room for this byte. */
	p->msg.buf[p->msg.used++] = '\0';
	return 0;
}

static int on_message_begin(llhttp_t *ll)
{
	PARSER(ll)->started = 1;
	return 0;
}

static int on_url(llhttp_t *ll, const char *at, size_t len)
{
	struct http_parser *p = PARSER(ll);
	if (p->msg.url_len == 0)
		p->msg.url_off = (uint32_t)p->msg.used;
	p->msg.url_len += (uint32_t)len;
	/* Terminated by url_end, at the first header or the end of the head
	 * (one on_url_complete call less per request). */
	p->msg.phase = HP_URL;
	return buf_append(p, at, len);
}

/* An absolute-form target (RFC 9112 §3.2.2: a server MUST accept it),
 * "http://authority/path?query": the target becomes its origin form
 * ("/path?query", "/" for an empty path) and the authority is kept, to
 * stand for Host once the head is complete. Both are appended after the
 * URL, before any header. Other forms than http(s) are left as they are
 * (routing finds no endpoint there). Cold: clients send origin form.
 * Returns 0 or HPE_USER. */
__attribute__((noinline, cold)) static int absolute_form(struct http_parser *p)
{
	struct http_msg *m = &p->msg;
	const char *u = m->buf + m->url_off;
	size_t n = m->url_len, s, a;

	if (n >= 7 && strncasecmp(u, "http://", 7) == 0)
		s = 7;
	else if (n >= 8 && strncasecmp(u, "https://", 8) == 0)
		s = 8;
	else
		return 0;
	for (a = s; a < n && u[a] != '/' && u[a] != '?'; a++)
		;
	if (a == s)
		return fail(p, HTTP_ERR_SYNTAX, "absolute-form target without a host");
	/* RFC 9110 §4.2.4: userinfo in an http(s) URI is an error. */
	if (memchr(u + s, '@', a - s))
		return fail(p, HTTP_ERR_SYNTAX, "userinfo in the request target");
	size_t slash = a == n || u[a] == '?';
	size_t need = m->used + slash + (n - a) + 1 + (a - s) + 1;
	/* Grown first: the copies read from the buffer itself. */
	if (need > m->cap && buf_grow(p, need))
		return HPE_USER;
	char *b = m->buf;
	uint32_t url = m->url_off, t = (uint32_t)m->used;
	if (slash)
		b[m->used++] = '/';
	memcpy(b + m->used, b + url + a, n - a);
	m->used += n - a;
	b[m->used++] = '\0';
	m->auth_off = (uint32_t)m->used;
	m->auth_len = (uint32_t)(a - s);
	memcpy(b + m->used, b + url + s, a - s);
	m->used += a - s;
	b[m->used++] = '\0';
	m->url_off = t;
	m->url_len = (uint32_t)(slash + n - a);
	m->absolute = 1;
	return 0;
}

/* NUL-terminates the URL; nothing else is appended between its last
 * span and this. */
static int url_end(struct http_parser *p)
{
	struct http_msg *m = &p->msg;

	if (m->url_len == 0) {
		m->url_off = (uint32_t)m->used;
		if (buf_append(p, "", 0))
			return HPE_USER;
	}
	m->url_done = 1;
	m->phase = HP_NONE;
	terminate(p);
	/* Origin form ("/...") and asterisk form ("*") as they are. */
	char c = m->buf[m->url_off];
	return c == '/' || c == '*' ? 0 : absolute_form(p);
}

static int count_trailer(struct http_parser *p, size_t len)
{
	p->msg.trailer_bytes += len;
	if (p->msg.used + p->msg.trailer_bytes > p->max)
		return fail(p, HTTP_ERR_HEADERS_TOO_BIG, "trailer block too large");
	return 0;
}

/* RFC 9110 §5.6.2 tchar: visible ASCII but the delimiters. A table: this
 * runs on every header name byte. */
static const unsigned char tchar[256] = {
	['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
	['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
	['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
	['8'] = 1, ['9'] = 1,
	['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
	['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
	['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
	['Y'] = 1, ['Z'] = 1,
	['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
	['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
	['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
	['y'] = 1, ['z'] = 1,
};

/* Case-insensitive comparison of a header name with a lower-case literal
 * made of letters and '-', a word at a time: a byte of the literal with bit
 * 0x40 set is a letter, and only there does the name get 0x20 or'ed in, so
 * 'C' and 'c' match 'c' and nothing else does, and '-' matches only '-'
 * (the same folding as a tolower of A-Z, but ~6 instructions per 8 bytes
 * instead of ~7 per byte: this runs on every header of every message).
 * Loads overlap rather than run past either end: neither string has to be
 * NUL-terminated or padded. */
static inline int fold_eq64(uint64_t name, uint64_t lit)
{
	return (name | ((lit & 0x4040404040404040ull) >> 1)) == lit;
}

static inline int fold_eq32(uint32_t name, uint32_t lit)
{
	return (name | ((lit & 0x40404040u) >> 1)) == lit;
}

static inline int fold_eq16(const char *name, const char *lit)
{
	uint16_t n, l;
	memcpy(&n, name, sizeof(n));
	memcpy(&l, lit, sizeof(l));
	return (uint16_t)(n | ((l & 0x4040u) >> 1)) == l;
}

/* len: 2 or more; the callers pass the literal's size, a constant. */
static inline int name_eq(const char *name, const char *lit, size_t len)
{
	if (len >= 8) {
		for (size_t i = 0; i + 8 < len; i += 8)
			if (!fold_eq64(ld64(name + i), ld64(lit + i)))
				return 0;
		return fold_eq64(ld64(name + len - 8), ld64(lit + len - 8));
	}
	if (len >= 4)
		return fold_eq32(ld32(name), ld32(lit)) &&
		       fold_eq32(ld32(name + len - 4), ld32(lit + len - 4));
	/* 2 or 3 bytes: head and tail overlap, as above. */
	return fold_eq16(name, lit) && fold_eq16(name + len - 2, lit + len - 2);
}

/* Inline in the parser's name_end, which runs once per header. */
static inline enum http_hdr_id hdr_id_of(const char *n, size_t len)
{
#define HH(s, id) if (name_eq(n, s, sizeof(s) - 1)) return id
	switch (len) {
	case 2: HH("te", HH_TE); break;
	case 4: HH("host", HH_HOST); break;
	case 6: HH("accept", HH_ACCEPT); HH("origin", HH_ORIGIN); HH("expect", HH_EXPECT); break;
	case 7: HH("trailer", HH_TRAILER); HH("upgrade", HH_UPGRADE); break;
	case 8: HH("location", HH_LOCATION); break;
	case 10: HH("connection", HH_CONNECTION); HH("keep-alive", HH_KEEP_ALIVE); break;
	case 12: HH("content-type", HH_CONTENT_TYPE); break;
	case 13: HH("authorization", HH_AUTHORIZATION); HH("last-event-id", HH_LAST_EVENT_ID); break;
	case 14: HH("content-length", HH_CONTENT_LENGTH); HH("mcp-session-id", HH_MCP_SESSION_ID); break;
	case 15: HH("accept-encoding", HH_ACCEPT_ENCODING); break;
	case 16: HH("proxy-connection", HH_PROXY_CONNECTION); break;
	case 17: HH("transfer-encoding", HH_TRANSFER_ENCODING);
		HH("x-accel-buffering", HH_X_ACCEL_BUFFERING); break;
	case 18: HH("proxy-authenticate", HH_PROXY_AUTHENTICATE); break;
	case 19: HH("proxy-authorization", HH_PROXY_AUTHORIZATION); break;
	case 20: HH("mcp-protocol-version", HH_MCP_PROTOCOL_VERSION); break;
	default: break;
	}
#undef HH
	return HH_OTHER;
}

enum http_hdr_id http_hdr_id(const char *n, size_t len)
{
	return hdr_id_of(n, len);
}

/* A second header of a known id: noted; a second Host in a request is
 * refused at once (RFC 9112 §3.2: 400, whatever the values). Out of line:
 * heads rarely repeat a known name. Returns 0 or HPE_USER. */
__attribute__((noinline)) static int repeat(struct http_parser *p, enum http_hdr_id id)
{
	p->msg.repeated |= (uint32_t)1 << id;
	if (id == HH_HOST && p->kind == HTTP_KIND_REQUEST)
		return fail(p, HTTP_ERR_SYNTAX, "repeated Host header");
	return 0;
}

/* Room for hdr[nhdr], past the inline table: the full-size tables, once.
 * Returns 0, or HPE_USER (out of memory: the head is refused as too big,
 * which is what the caller can answer). Cold. */
__attribute__((noinline, cold)) static int hdr_grow(struct http_parser *p)
{
	struct http_msg *m = &p->msg;
	struct http_hdr *h = malloc(LIMIT_MAX_HEADERS * (sizeof(*h) + 1));
	if (!h)
		return fail(p, HTTP_ERR_HEADERS_TOO_BIG, "out of memory for header fields");
	uint8_t *id = (uint8_t *)(h + LIMIT_MAX_HEADERS);
	memcpy(h, m->hdr, m->nhdr * sizeof(*h));
	memcpy(id, m->id, m->nhdr);
	m->hdr = h;
	m->id = id;
	m->hcap = LIMIT_MAX_HEADERS;
	return 0;
}

/* The name of hdr[nhdr] is complete (HP_NAME -> HP_NAMED): its id, and a
 * token check for a name that has none. */
static inline int name_end(struct http_parser *p)
{
	struct http_msg *m = &p->msg;
	struct http_hdr *h = &m->hdr[m->nhdr];
	const char *name = m->buf + h->name_off;
	enum http_hdr_id id = hdr_id_of(name, h->name_len);
	m->id[m->nhdr] = (uint8_t)id;
	if (id != HH_OTHER) {
		/* A known name is letters and '-' (name_eq matches nothing
		 * else): a token already. */
		if (!m->first[id])
			m->first[id] = (uint8_t)(m->nhdr + 1);
		else if (repeat(p, id))
			return HPE_USER;
	} else {
		/* llhttp 8 lets a space through in a field name, and an empty
		 * name (": v"); either would be forwarded as is, so refuse it
		 * here (RFC 9110 §5.1: a token, one byte at least). */
		if (h->name_len == 0)
			return fail(p, HTTP_ERR_SYNTAX, "empty header field name");
		for (uint32_t i = 0; i < h->name_len; i++)
			if (!tchar[(unsigned char)name[i]])
				return fail(p, HTTP_ERR_SYNTAX, "invalid header field name");
	}
	m->phase = HP_NAMED;
	/* Every buf_append left room for this byte, within the cap. */
	return terminate(p);
}

/* A value span outside a header: a trailer's, counted; anything else
 * would be llhttp giving a value before it ended a name (it ends the name,
 * with a field span that ends before the feed does, before any value). */
__attribute__((noinline)) static int value_other(struct http_parser *p, size_t len)
{
	if (p->msg.phase == HP_TRAILERS)
		return count_trailer(p, len);
	return fail(p, HTTP_ERR_SYNTAX, "header value without a name");
}

static int on_header_value(llhttp_t *ll, const char *at, size_t len)
{
	struct http_parser *p = PARSER(ll);
	struct http_msg *m = &p->msg;
	struct http_hdr *h = &m->hdr[m->nhdr]; /* one past the end in trailers */

	if (m->phase == HP_NAMED) {
		h->val_off = (uint32_t)m->used;
		h->val_len = (uint32_t)len;
		m->phase = HP_VALUE;
	} else if (m->phase == HP_VALUE) {
		h->val_len += (uint32_t)len; /* the rest, or an obs-fold line */
	} else {
		return value_other(p, len);
	}
	return buf_append(p, at, len);
}

/* Ends hdr[nhdr], in HP_VALUE: its value without trailing blanks,
 * NUL-terminated, counted. Then HP_NONE. */
static inline void hdr_end(struct http_msg *m)
{
	struct http_hdr *h = &m->hdr[m->nhdr];
	const char *v = m->buf + h->val_off;
	uint32_t n = h->val_len;
	/* Both blanks are <= ' ': one comparison for the usual value that
	 * ends in neither. */
	if (n && (unsigned char)v[n - 1] <= ' ') {
		while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		h->val_len = n;
	}
	/* Trimming only gave bytes back: the room buf_append left for the
	 * terminator is still there. */
	size_t end = h->val_off + n;
	m->buf[end] = '\0';
	m->used = end + 1;
	m->nhdr++;
	m->phase = HP_NONE;
}

/* The header before a new name, or before the end of the head, is
 * complete. llhttp gives every value at least one span (an empty one for
 * an empty value), but a header that is only NAMED here still gets an
 * empty value, as on_header_value(ll, "", 0) gives it. */
static int prev_hdr_end(struct http_parser *p)
{
	struct http_msg *m = &p->msg;

	if (m->phase == HP_NAMED) {
		m->hdr[m->nhdr].val_off = (uint32_t)m->used;
		m->hdr[m->nhdr].val_len = 0;
		m->phase = HP_VALUE;
		if (buf_append(p, "", 0))
			return HPE_USER;
	}
	hdr_end(m);
	return 0;
}

/* A field span: a new header (HP_NONE, or just ended), or the rest of a
 * name cut by the end of the last feed (HP_NAME). */
static inline int field_span(struct http_parser *p, const char *at, size_t len)
{
	struct http_msg *m = &p->msg;

	if (m->phase != HP_NAME) {
		if (m->nhdr >= LIMIT_MAX_HEADERS)
			return fail(p, HTTP_ERR_HEADERS_TOO_BIG, "too many header fields");
		if (m->nhdr == m->hcap && hdr_grow(p))
			return HPE_USER;
		m->hdr[m->nhdr].name_off = (uint32_t)m->used;
		m->hdr[m->nhdr].name_len = 0;
		m->phase = HP_NAME;
	}
	m->hdr[m->nhdr].name_len += (uint32_t)len;
	if (buf_append(p, at, len))
		return HPE_USER;
	/* llhttp ends a name span at its ':', a byte of this feed; a span
	 * that reaches the feed's end goes on in the next feed (maybe with
	 * no byte, when the ':' comes first there). */
	if (at + len == p->feed_end)
		return 0;
	return name_end(p);
}

/* The field spans that do not follow a value: the first header (after
 * the URL), a header after an unseen empty value, a trailer. */
__attribute__((noinline)) static int field_other(struct http_parser *p, const char *at,
                                                 size_t len)
{
	switch (p->msg.phase) {
	case HP_TRAILERS:
		return count_trailer(p, len);
	case HP_URL:
		if (url_end(p))
			return HPE_USER;
		break;
	case HP_NAMED:
		if (prev_hdr_end(p))
			return HPE_USER;
		break;
	default:
		break;
	}
	return field_span(p, at, len);
}

static int on_header_field(llhttp_t *ll, const char *at, size_t len)
{
	struct http_parser *p = PARSER(ll);
	struct http_msg *m = &p->msg;

	if (m->phase == HP_VALUE)
		hdr_end(m); /* a new name: the header before it is complete */
	else if (m->phase != HP_NAME && m->phase != HP_NONE)
		return field_other(p, at, len);
	return field_span(p, at, len);
}

const char *http_list_token(const char **cursor, size_t *len)
{
	const char *p = *cursor;
	if (!*p)
		return NULL;
	while (*p == ' ' || *p == '\t' || *p == ',')
		p++;
	const char *s = p;
	while (*p && *p != ',' && *p != ' ' && *p != '\t')
		p++;
	*len = (size_t)(p - s);
	*cursor = p;
	return s;
}

/* Whether a Connection value names anything but the fixed hop-by-hop
 * headers: only then must a forwarding filter look each header up in it
 * (http_msg_connection_options). An empty token counts, as it does for
 * the filters: a list ending in a separator yields one there. */
static int lists_options(const char *p)
{
	const char *t;
	size_t n;
	while ((t = http_list_token(&p, &n)))
		if (http_hdr_id(t, n) < HH_FIRST_HOP_BY_HOP)
			return 1;
	return 0;
}

/* RFC 3986 uri-host [":" port]: reg-name, IPv4 or IP-literal bytes, and
 * the port's ':' and digits. What a Host may hold, checked per request:
 * a table. */
static const unsigned char hostchar[256] = {
	['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1, ['!'] = 1, ['$'] = 1, ['&'] = 1, ['\''] = 1,
	['('] = 1, [')'] = 1, ['*'] = 1, ['+'] = 1, [','] = 1, [';'] = 1, ['='] = 1, ['%'] = 1,
	[':'] = 1, ['['] = 1, [']'] = 1,
	['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
	['8'] = 1, ['9'] = 1,
	['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
	['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
	['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
	['Y'] = 1, ['Z'] = 1,
	['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
	['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
	['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
	['y'] = 1, ['z'] = 1,
};

/* An absolute-form request: its authority is its Host (RFC 9112 §3.2.2:
 * the received Host is ignored). An HTTP/1.0 request may come without
 * one: it gets one, a header the forwarding drops like any Host. Cold.
 * Returns 0 or HPE_USER. */
__attribute__((noinline, cold)) static int authority_as_host(struct http_parser *p)
{
	struct http_msg *m = &p->msg;
	unsigned k = m->first[HH_HOST];

	if (!k) {
		if (m->nhdr >= LIMIT_MAX_HEADERS)
			return fail(p, HTTP_ERR_HEADERS_TOO_BIG, "too many header fields");
		if (m->nhdr == m->hcap && hdr_grow(p))
			return HPE_USER;
		uint32_t name = (uint32_t)m->used;
		if (buf_append(p, "Host", 4))
			return HPE_USER;
		terminate(p);
		m->hdr[m->nhdr].name_off = name;
		m->hdr[m->nhdr].name_len = 4;
		m->id[m->nhdr] = HH_HOST;
		k = m->first[HH_HOST] = (uint8_t)(m->nhdr + 1);
		m->nhdr++;
	}
	m->hdr[k - 1].val_off = m->auth_off;
	m->hdr[k - 1].val_len = m->auth_len;
	return 0;
}

/* What RFC 9112 makes a server refuse in a request head: a version it
 * does not speak (llhttp parses HTTP/0.9 and HTTP/2.0 request lines), a
 * Host that is no uri-host[:port] (§3.2: 400; a second one was refused as
 * it came). An HTTP/1.1 request without Host is refused by the caller
 * (conn.c): it is well-formed, and the message is complete without it.
 * Returns 0 or HPE_USER. */
static inline int request_head(struct http_parser *p)
{
	struct http_msg *m = &p->msg;

	if (m->version != 11 && m->version != 10)
		return fail(p, HTTP_ERR_VERSION, "HTTP version not supported");
	/* An HTTP/1.1 request must still have sent a Host (§3.2). */
	if (m->absolute && (m->first[HH_HOST] || m->version == 10) && authority_as_host(p))
		return HPE_USER;
	unsigned k = m->first[HH_HOST];
	if (!k)
		return 0;
	const unsigned char *v = (const unsigned char *)m->buf + m->hdr[k - 1].val_off;
	uint32_t i = 0, n = m->hdr[k - 1].val_len;
	if (n == p->host_ok_len && memcmp(v, p->host_ok, n) == 0)
		return 0;
	unsigned ok = 1;
	for (; i + 4 <= n; i += 4)
		ok &= hostchar[v[i]] & hostchar[v[i + 1]] & hostchar[v[i + 2]] & hostchar[v[i + 3]];
	for (; i < n; i++)
		ok &= hostchar[v[i]];
	if (!ok)
		return fail(p, HTTP_ERR_SYNTAX, "invalid Host header");
	if (n < sizeof(p->host_ok) && n) {
		memcpy(p->host_ok, v, n);
		p->host_ok_len = (uint8_t)n;
	}
	return 0;
}

static enum http_method_id method_id_of(uint8_t method)
{
	switch (method) {
	case HTTP_GET: return HM_GET;
	case HTTP_HEAD: return HM_HEAD;
	case HTTP_POST: return HM_POST;
	case HTTP_PUT: return HM_PUT;
	case HTTP_PATCH: return HM_PATCH;
	case HTTP_DELETE: return HM_DELETE;
	case HTTP_CONNECT: return HM_CONNECT;
	default: return HM_OTHER;
	}
}

static int on_headers_complete(llhttp_t *ll)
{
	struct http_parser *p = PARSER(ll);
	struct http_msg *m = &p->msg;

	switch (m->phase) {
	case HP_NAME:
		/* Not seen: llhttp ends the name before the head can end. */
		if (name_end(p))
			return HPE_USER;
		/* fall through */
	case HP_NAMED:
	case HP_VALUE:
		if (prev_hdr_end(p))
			return HPE_USER;
		break;
	default:
		break;
	}
	/* A request without headers: its URL is still open (HP_URL). */
	if (p->kind == HTTP_KIND_REQUEST && !m->url_done && url_end(p))
		return HPE_USER;
	m->version = ll->http_major * 10 + ll->http_minor;
	if (p->kind == HTTP_KIND_REQUEST && request_head(p))
		return HPE_USER;
	m->phase = HP_TRAILERS;
	if (m->first[HH_CONNECTION]) {
		const struct http_hdr *c = &m->hdr[m->first[HH_CONNECTION] - 1];
		const char *v = m->buf + c->val_off;
		/* The usual "keep-alive": a whole value that is one hop-by-hop
		 * name (letters and '-', so one token) lists no option. */
		if (hdr_id_of(v, c->val_len) < HH_FIRST_HOP_BY_HOP)
			m->conn_options = lists_options(v);
	}
	/* The proxy never switches protocols or tunnels (Upgrade and
	 * Connection are hop-by-hop and dropped; RFC 9110 §7.8 lets a server
	 * ignore Upgrade): parse on as HTTP/1.1 instead of stopping. */
	ll->upgrade = 0;
	/* The fields of llhttp_t read directly, as flags and content_length
	 * below: llhttp's getters are one call each. */
	if (p->kind == HTTP_KIND_REQUEST) {
		m->method = llhttp_method_name((llhttp_method_t)ll->method);
		m->method_id = method_id_of(ll->method);
	} else
		m->status = ll->status_code;
	m->keep_alive = llhttp_should_keep_alive(ll);
	/* llhttp only keeps content_length internally when the header is
	 * present; flags tell whether it was. */
	m->content_length = (ll->flags & F_CONTENT_LENGTH) ? (int64_t)ll->content_length : -1;
	if (!p->cbs->on_headers)
		return 0;
	int rc = p->cbs->on_headers(p->arg, m);
	if (rc < 0)
		return fail(p, HTTP_ERR_CALLBACK, "refused by handler"), -1;
	return rc; /* 1: skip body */
}

/* Checks the CRLF after a chunk's data against data[0..n): 0, or -1
 * with the error set. */
static int crlf_check(struct http_parser *p, const char *data, size_t n)
{
	for (; p->crlf_left && n; data++, n--, p->crlf_left--)
		if (*data != (p->crlf_left == 2 ? '\r' : '\n')) {
			fail(p, HTTP_ERR_SYNTAX, "chunk data not followed by CRLF");
			return -1;
		}
	return 0;
}

static int on_body(llhttp_t *ll, const char *at, size_t len)
{
	struct http_parser *p = PARSER(ll);
	if (p->cbs->on_body) {
		int rc = p->cbs->on_body(p->arg, at, len);
		if (rc == -2)
			return fail(p, HTTP_ERR_BODY_TOO_BIG, "body too large");
		if (rc < 0)
			return fail(p, HTTP_ERR_CALLBACK, "refused by handler");
	}
	/* The span that ends a chunk's data (llhttp counts down what is
	 * left of the chunk in content_length): the next two bytes must be
	 * CRLF (RFC 9112 §7.1), which llhttp skips unread. A chunk-data
	 * smuggling trick ("3\r\nabcXY5\r\n...") otherwise passes. */
	if ((ll->flags & F_CHUNKED) && ll->content_length == 0) {
		p->crlf_left = 2;
		if (crlf_check(p, at + len, (size_t)(p->feed_end - (at + len))))
			return HPE_USER;
	}
	return 0;
}

/* A span of a chunk extension's name or value (requests): counted, all
 * chunks of the message together. */
static int on_chunk_ext(llhttp_t *ll, const char *at, size_t len)
{
	struct http_parser *p = PARSER(ll);
	(void)at;
	p->chunk_ext += len;
	if (p->chunk_ext > LIMIT_MAX_CHUNK_EXT_BYTES)
		return fail(p, HTTP_ERR_SYNTAX, "chunk extensions too long");
	return 0;
}

static int on_message_complete(llhttp_t *ll)
{
	struct http_parser *p = PARSER(ll);
	p->done = 1;
	/* One message at a time: the caller resumes with http_parser_reset(). */
	return HPE_PAUSED;
}

struct http_parser *http_parser_new(enum http_kind kind, size_t max_header_bytes,
                                    const struct http_parser_cbs *cbs, void *arg)
{
	struct http_parser *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	llhttp_settings_init(&p->settings);
	p->settings.on_message_begin = on_message_begin;
	p->settings.on_url = on_url;
	/* No on_url_complete, on_header_field_complete or
	 * on_header_value_complete: see enum hdr_phase. */
	p->settings.on_header_field = on_header_field;
	p->settings.on_header_value = on_header_value;
	p->settings.on_headers_complete = on_headers_complete;
	p->settings.on_body = on_body;
	p->settings.on_message_complete = on_message_complete;
	if (kind == HTTP_KIND_REQUEST) {
		p->settings.on_chunk_extension_name = on_chunk_ext;
		p->settings.on_chunk_extension_value = on_chunk_ext;
	}
	llhttp_init(&p->ll, kind == HTTP_KIND_REQUEST ? HTTP_REQUEST : HTTP_RESPONSE,
	            &p->settings);
	p->ll.data = p;
	p->kind = kind;
	p->max = max_header_bytes ? max_header_bytes : LIMIT_MAX_HEADER_BYTES;
	p->cbs = cbs;
	p->arg = arg;
	p->msg.content_length = -1;
	p->msg.hdr = p->msg.hdr_in;
	p->msg.id = p->msg.id_in;
	p->msg.hcap = HDR_INLINE;
	return p;
}

void http_parser_free(struct http_parser *p)
{
	if (!p)
		return;
	free(p->msg.buf);
	if (p->msg.hdr != p->msg.hdr_in)
		free(p->msg.hdr);
	free(p);
}

static void msg_clear(struct http_msg *m)
{
	char *buf = m->buf;
	size_t cap = m->cap;

	memset(m, 0, offsetof(struct http_msg, hdr));
	m->nhdr = 0;
	m->phase = HP_NONE;
	m->trailer_bytes = 0;
	m->buf = buf;
	m->cap = cap;
	m->used = 0;
	m->content_length = -1;
}

void http_parser_reset(struct http_parser *p)
{
	msg_clear(&p->msg);
	p->started = p->done = 0;
	p->err = HTTP_ERR_NONE;
	p->reason = NULL;
	p->crlf_left = 0;
	p->chunk_ext = 0;
	if (p->ll.error == HPE_PAUSED) /* llhttp_get_errno(), without the call */
		llhttp_resume(&p->ll);
}

int http_parser_started(const struct http_parser *p)
{
	return p->started;
}

static const char *ll_reason(struct http_parser *p)
{
	const char *r = llhttp_get_error_reason(&p->ll);
	return r ? r : "malformed HTTP";
}

enum http_parse_rc http_parser_feed(struct http_parser *p, const char *data, size_t len,
                                    size_t *consumed)
{
	*consumed = 0;
	if (p->err != HTTP_ERR_NONE)
		return HTTP_PARSE_ERROR;
	if (p->done)
		return HTTP_PARSE_DONE; /* still the last message: reset first */
	/* The rest of a chunk's CRLF, cut by the end of the last feed. */
	if (p->crlf_left && crlf_check(p, data, len))
		return HTTP_PARSE_ERROR;
	p->feed_end = data + len;
	llhttp_errno_t e = llhttp_execute(&p->ll, data, len);
	if (e == HPE_OK) {
		*consumed = len;
		return HTTP_PARSE_MORE;
	}
	if (e == HPE_PAUSED && p->done) {
		*consumed = (size_t)(llhttp_get_error_pos(&p->ll) - data);
		return HTTP_PARSE_DONE;
	}
	if (p->err == HTTP_ERR_NONE && e == HPE_INVALID_VERSION && p->kind == HTTP_KIND_REQUEST &&
	    strcmp(ll_reason(p), "Invalid HTTP version") == 0) {
		/* "HTTP/1.2", "HTTP/3.0": digits llhttp reads, a version it
		 * does not know. A malformed one ("HTTP/1.x": "Invalid minor
		 * version") stays a 400, as in nginx. */
		p->err = HTTP_ERR_VERSION;
		p->reason = "HTTP version not supported";
	}
	if (p->err == HTTP_ERR_NONE) {
		p->err = HTTP_ERR_SYNTAX;
		p->reason = ll_reason(p);
	}
	/* A request refused inside its head still says its method (for the
	 * log) once its request line was read. */
	if (p->kind == HTTP_KIND_REQUEST && !p->msg.method && p->msg.url_done)
		p->msg.method = llhttp_method_name((llhttp_method_t)p->ll.method);
	return HTTP_PARSE_ERROR;
}

enum http_parse_rc http_parser_finish(struct http_parser *p)
{
	if (p->err != HTTP_ERR_NONE)
		return HTTP_PARSE_ERROR;
	if (p->done)
		return HTTP_PARSE_DONE;
	if (!p->started)
		return HTTP_PARSE_MORE; /* between messages: a clean end */
	llhttp_errno_t e = llhttp_finish(&p->ll);
	if (e == HPE_PAUSED && p->done)
		return HTTP_PARSE_DONE;
	if (e == HPE_OK)
		return p->started ? HTTP_PARSE_ERROR : HTTP_PARSE_MORE;
	if (p->err == HTTP_ERR_NONE) {
		p->err = HTTP_ERR_SYNTAX;
		p->reason = ll_reason(p);
	}
	return HTTP_PARSE_ERROR;
}

enum http_parse_err http_parser_error(const struct http_parser *p)
{
	return p->err;
}

const char *http_parser_reason(const struct http_parser *p)
{
	return p->reason ? p->reason : "no error";
}

const struct http_msg *http_parser_msg(const struct http_parser *p)
{
	return &p->msg;
}

const char *http_msg_method(const struct http_msg *m)
{
	return m->method ? m->method : "";
}

enum http_method_id http_msg_method_id(const struct http_msg *m)
{
	return m->method_id;
}

const char *http_msg_url(const struct http_msg *m)
{
	return m->buf && m->url_done ? m->buf + m->url_off : "";
}

int http_msg_status(const struct http_msg *m)
{
	return m->status;
}

int http_msg_version(const struct http_msg *m)
{
	return m->version;
}

int http_msg_keep_alive(const struct http_msg *m)
{
	return m->keep_alive;
}

int64_t http_msg_content_length(const struct http_msg *m)
{
	return m->content_length;
}

size_t http_msg_header_count(const struct http_msg *m)
{
	return m->nhdr;
}

int http_msg_header_at(const struct http_msg *m, size_t i, const char **name, size_t *name_len,
                       const char **value, size_t *value_len)
{
	if (i >= m->nhdr)
		return -1;
	*name = m->buf + m->hdr[i].name_off;
	*name_len = m->hdr[i].name_len;
	*value = m->buf + m->hdr[i].val_off;
	*value_len = m->hdr[i].val_len;
	return 0;
}

void http_url_path(char *dst, size_t cap, const char *url)
{
	size_t n = strcspn(url, "?");
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, url, n);
	dst[n] = '\0';
}

int http_msg_repeated(const struct http_msg *m, enum http_hdr_id id)
{
	return id > HH_OTHER && id < HH__COUNT && (m->repeated >> id & 1u);
}

uint32_t http_msg_repeats(const struct http_msg *m)
{
	return m->repeated;
}

enum http_hdr_id http_msg_header_id(const struct http_msg *m, size_t i)
{
	return i < m->nhdr ? (enum http_hdr_id)m->id[i] : HH_OTHER;
}

const char *http_msg_get(const struct http_msg *m, enum http_hdr_id id)
{
	unsigned k = id > HH_OTHER && id < HH__COUNT ? m->first[id] : 0;
	/* A header still being parsed (k - 1 == nhdr) has no value yet. */
	return k && k - 1 < m->nhdr ? m->buf + m->hdr[k - 1].val_off : NULL;
}

const char *http_msg_connection_options(const struct http_msg *m)
{
	/* Before the head is complete, conn_options is not known yet. */
	if (m->phase != HP_TRAILERS || m->conn_options)
		return http_msg_get(m, HH_CONNECTION);
	return NULL;
}

const char *http_msg_header(const struct http_msg *m, const char *name)
{
	size_t n = strlen(name);
	enum http_hdr_id id = http_hdr_id(name, n);
	if (id != HH_OTHER)
		return http_msg_get(m, id);
	for (size_t i = 0; i < m->nhdr; i++)
		if (m->hdr[i].name_len == n && strncasecmp(m->buf + m->hdr[i].name_off, name, n) == 0)
			return m->buf + m->hdr[i].val_off;
	return NULL;
}

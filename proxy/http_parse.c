/* http_parse: see http_parse.h.
 *
 * Layout of the header block buffer (offsets, never pointers, so it can be
 * reallocated while it grows up to its cap):
 *
 *   buf: [url\0][name\0][value\0][name\0][value\0]...
 *         ^url_off  ^hdr[0].name  ^hdr[0].value
 */
#include "proxy/http_parse.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <llhttp.h>

#include "proxy/limits.h"

struct http_hdr {
	uint32_t name_off, name_len, val_off, val_len;
	enum http_hdr_id id;
};

_Static_assert(LIMIT_MAX_HEADERS < 255, "header index + 1 fits in http_msg.first");

struct http_msg {
	const char *method;           /* static, from llhttp */
	int status;
	int version;
	int keep_alive;
	int64_t content_length;
	uint32_t url_off, url_len;
	int url_done;
	/* The first Connection header lists a token that is not one of the
	 * fixed hop-by-hop names (set when the head is complete). */
	int conn_options;
	/* 1 + index of the first header of each id; 0: absent. Cleared with
	 * the fields above it on reset (it sits before hdr). */
	uint8_t first[HH__COUNT];
	struct http_hdr hdr[LIMIT_MAX_HEADERS];
	size_t nhdr;
	int in_field, in_value;       /* a header entry is open */
	/* Past the head: chunked trailers are not headers (nothing after the
	 * head may move the buffer under pointers handed out), but their bytes
	 * still count against the cap. */
	int in_trailers;
	size_t trailer_bytes;
	char *buf;                    /* owned */
	size_t used, cap;
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
};

#define PARSER(ll) ((struct http_parser *)(ll)->data)

static int fail(struct http_parser *p, enum http_parse_err err, const char *reason)
{
	p->err = err;
	p->reason = reason;
	return HPE_USER;
}

static int buf_append(struct http_parser *p, const char *at, size_t len)
{
	struct http_msg *m = &p->msg;

	if (m->used + len + 1 > p->max)
		return fail(p, HTTP_ERR_HEADERS_TOO_BIG, "header block too large");
	if (m->used + len + 1 > m->cap) {
		size_t cap = m->cap ? m->cap : 1024;
		while (cap < m->used + len + 1)
			cap *= 2;
		if (cap > p->max)
			cap = p->max;
		char *nb = realloc(m->buf, cap);
		if (!nb)
			return fail(p, HTTP_ERR_CALLBACK, "out of memory");
		m->buf = nb;
		m->cap = cap;
	}
	memcpy(m->buf + m->used, at, len);
	m->used += len;
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
	return buf_append(p, at, len);
}

static int on_url_complete(llhttp_t *ll)
{
	struct http_parser *p = PARSER(ll);
	if (p->msg.url_len == 0) {
		p->msg.url_off = (uint32_t)p->msg.used;
		if (buf_append(p, "", 0))
			return HPE_USER;
	}
	p->msg.url_done = 1;
	return terminate(p);
}

static int count_trailer(struct http_parser *p, size_t len)
{
	p->msg.trailer_bytes += len;
	if (p->msg.used + p->msg.trailer_bytes > p->max)
		return fail(p, HTTP_ERR_HEADERS_TOO_BIG, "trailer block too large");
	return 0;
}

static int on_header_field(llhttp_t *ll, const char *at, size_t len)
{
	struct http_parser *p = PARSER(ll);
	struct http_msg *m = &p->msg;

	if (m->in_trailers)
		return count_trailer(p, len);
	if (!m->in_field) {
		if (m->nhdr >= LIMIT_MAX_HEADERS)
			return fail(p, HTTP_ERR_HEADERS_TOO_BIG, "too many header fields");
		m->hdr[m->nhdr].name_off = (uint32_t)m->used;
		m->hdr[m->nhdr].name_len = 0;
		m->in_field = 1;
	}
	m->hdr[m->nhdr].name_len += (uint32_t)len;
	return buf_append(p, at, len);
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

enum http_hdr_id http_hdr_id(const char *n, size_t len)
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

static int on_header_field_complete(llhttp_t *ll)
{
	struct http_parser *p = PARSER(ll);
	if (p->msg.in_trailers)
		return 0;
	if (!p->msg.in_field && on_header_field(ll, "", 0))
		return HPE_USER;
	struct http_msg *m = &p->msg;
	struct http_hdr *h = &m->hdr[m->nhdr];
	const char *name = m->buf + h->name_off;
	h->id = http_hdr_id(name, h->name_len);
	if (h->id != HH_OTHER) {
		/* A known name is letters and '-' (name_eq matches nothing
		 * else): a token already. */
		if (!m->first[h->id])
			m->first[h->id] = (uint8_t)(m->nhdr + 1);
	} else {
		/* llhttp 8 lets a space through in a field name; such a name
		 * would be forwarded as is, so refuse it here (RFC 9110 §5.1:
		 * a token). */
		for (uint32_t i = 0; i < h->name_len; i++)
			if (!tchar[(unsigned char)name[i]])
				return fail(p, HTTP_ERR_SYNTAX, "invalid header field name");
	}
	/* Every buf_append left room for this byte, within the cap. */
	return terminate(p);
}

static int on_header_value(llhttp_t *ll, const char *at, size_t len)
{
	struct http_parser *p = PARSER(ll);
	struct http_msg *m = &p->msg;

	if (m->in_trailers)
		return count_trailer(p, len);
	if (!m->in_value) {
		m->hdr[m->nhdr].val_off = (uint32_t)m->used;
		m->hdr[m->nhdr].val_len = 0;
		m->in_value = 1;
	}
	m->hdr[m->nhdr].val_len += (uint32_t)len;
	return buf_append(p, at, len);
}

static int on_header_value_complete(llhttp_t *ll)
{
	struct http_parser *p = PARSER(ll);
	struct http_msg *m = &p->msg;

	if (m->in_trailers)
		return 0;
	if (!m->in_value && on_header_value(ll, "", 0))
		return HPE_USER;
	struct http_hdr *h = &m->hdr[m->nhdr];
	while (h->val_len && (m->buf[h->val_off + h->val_len - 1] == ' ' ||
	                      m->buf[h->val_off + h->val_len - 1] == '\t'))
		h->val_len--;
	/* Trimming only gave bytes back: the room buf_append left for the
	 * terminator is still there. */
	m->used = h->val_off + h->val_len;
	terminate(p);
	m->nhdr++;
	m->in_field = m->in_value = 0;
	return 0;
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

static int on_headers_complete(llhttp_t *ll)
{
	struct http_parser *p = PARSER(ll);
	struct http_msg *m = &p->msg;

	m->in_trailers = 1;
	if (m->first[HH_CONNECTION])
		m->conn_options = lists_options(http_msg_get(m, HH_CONNECTION));
	/* The proxy never switches protocols or tunnels (Upgrade and
	 * Connection are hop-by-hop and dropped; RFC 9110 §7.8 lets a server
	 * ignore Upgrade): parse on as HTTP/1.1 instead of stopping. */
	ll->upgrade = 0;
	if (p->kind == HTTP_KIND_REQUEST) {
		m->method = llhttp_method_name((llhttp_method_t)llhttp_get_method(ll));
		if (!m->url_done && on_url_complete(ll))
			return HPE_USER;
	} else {
		m->status = llhttp_get_status_code(ll);
	}
	m->version = llhttp_get_http_major(ll) * 10 + llhttp_get_http_minor(ll);
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

static int on_body(llhttp_t *ll, const char *at, size_t len)
{
	struct http_parser *p = PARSER(ll);
	if (!p->cbs->on_body)
		return 0;
	int rc = p->cbs->on_body(p->arg, at, len);
	if (rc == -2)
		return fail(p, HTTP_ERR_BODY_TOO_BIG, "body too large");
	if (rc < 0)
		return fail(p, HTTP_ERR_CALLBACK, "refused by handler");
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
	p->settings.on_url_complete = on_url_complete;
	p->settings.on_header_field = on_header_field;
	p->settings.on_header_field_complete = on_header_field_complete;
	p->settings.on_header_value = on_header_value;
	p->settings.on_header_value_complete = on_header_value_complete;
	p->settings.on_headers_complete = on_headers_complete;
	p->settings.on_body = on_body;
	p->settings.on_message_complete = on_message_complete;
	llhttp_init(&p->ll, kind == HTTP_KIND_REQUEST ? HTTP_REQUEST : HTTP_RESPONSE,
	            &p->settings);
	p->ll.data = p;
	p->kind = kind;
	p->max = max_header_bytes ? max_header_bytes : LIMIT_MAX_HEADER_BYTES;
	p->cbs = cbs;
	p->arg = arg;
	p->msg.content_length = -1;
	return p;
}

void http_parser_free(struct http_parser *p)
{
	if (!p)
		return;
	free(p->msg.buf);
	free(p);
}

static void msg_clear(struct http_msg *m)
{
	char *buf = m->buf;
	size_t cap = m->cap;

	memset(m, 0, offsetof(struct http_msg, hdr));
	m->nhdr = 0;
	m->in_field = m->in_value = 0;
	m->in_trailers = 0;
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
	if (llhttp_get_errno(&p->ll) == HPE_PAUSED)
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
	llhttp_errno_t e = llhttp_execute(&p->ll, data, len);
	if (e == HPE_OK) {
		*consumed = len;
		return HTTP_PARSE_MORE;
	}
	if (e == HPE_PAUSED && p->done) {
		*consumed = (size_t)(llhttp_get_error_pos(&p->ll) - data);
		return HTTP_PARSE_DONE;
	}
	if (p->err == HTTP_ERR_NONE) {
		p->err = HTTP_ERR_SYNTAX;
		p->reason = ll_reason(p);
	}
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

enum http_hdr_id http_msg_header_id(const struct http_msg *m, size_t i)
{
	return i < m->nhdr ? m->hdr[i].id : HH_OTHER;
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
	if (!m->in_trailers || m->conn_options)
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

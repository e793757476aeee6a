/* http_resp: see http_resp.h. */
#include "proxy/net/http_resp.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "proxy/base/jsonrpc.h"
#include "proxy/net/http_parse.h"

const char *http_resp_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return status < 200 ? "Informational" : status < 300 ? "Success"
	              : status < 400 ? "Redirection" : status < 500 ? "Client Error"
	                                                           : "Server Error";
	}
}

/* Each line goes out in one evbuffer_add: an add per piece costs a chain
 * lookup and a callback check each, and headers are written per request. */

/* The status line into line (128 bytes), or 0 when the status or its
 * reason does not fit the fixed layout (then printf writes it). */
static size_t status_line_fmt(char *line, int version, int status)
{
	/* The status of nearly every reply: one fixed line, no reason lookup
	 * or strlen (~40 instructions a reply less). */
	if (status == 200) {
		memcpy(line, "HTTP/1.1 200 OK\r\n", 17);
		if (version == 10)
			line[7] = '0';
		return 17;
	}
	const char *reason = http_resp_reason(status);
	size_t rlen = strlen(reason), n = 0;

	if (status < 100 || status > 999 || rlen > 64)
		return 0;
	memcpy(line, version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ", 9);
	n = 9;
	line[n++] = (char)('0' + status / 100);
	line[n++] = (char)('0' + status / 10 % 10);
	line[n++] = (char)('0' + status % 10);
	line[n++] = ' ';
	memcpy(line + n, reason, rlen);
	n += rlen;
	memcpy(line + n, "\r\n", 2);
	return n + 2;
}

int http_resp_status_line(struct evbuffer *out, int version, int status)
{
	char line[128];
	size_t n = status_line_fmt(line, version, status);

	if (!n)
		return evbuffer_add_printf(out, "HTTP/1.%d %d %s\r\n", version == 10 ? 0 : 1, status,
		                           http_resp_reason(status)) < 0 ? -1 : 0;
	return evbuffer_add(out, line, n) ? -1 : 0;
}

void http_headbuf_status_line(struct http_headbuf *h, int version, int status)
{
	char line[128];
	size_t n;

	/* Written in place when there is room (there always is: it comes
	 * first), not through a copy on the stack. */
	if (sizeof(h->buf) - h->len >= sizeof(line)) {
		n = status_line_fmt(h->buf + h->len, version, status);
		if (n) {
			h->len += n;
			return;
		}
	} else if ((n = status_line_fmt(line, version, status))) {
		http_headbuf_add(h, line, n);
		return;
	}
	/* Off the fixed layout: printf writes it, after what is gathered. */
	if (http_headbuf_flush(h) < 0 || http_resp_status_line(h->out, version, status) < 0)
		h->err = 1;
}

int http_resp_head(struct evbuffer *out, int version, int status, struct evbuffer *headers,
                   const char *tail, size_t tail_len)
{
	/* Big enough for the heads the proxy writes itself and most an
	 * upstream sends; a larger one goes out in pieces. */
	char head[4096];
	size_t hl = headers ? evbuffer_get_length(headers) : 0;
	size_t n = hl + tail_len < sizeof(head) - 128 ? status_line_fmt(head, version, status) : 0;

	if (!n) {
		int rc = http_resp_status_line(out, version, status);
		if (headers && evbuffer_add_buffer(out, headers))
			rc = -1;
		if (evbuffer_add(out, tail, tail_len))
			rc = -1;
		return rc;
	}
	if (hl) {
		/* The lines are in one chain in practice: pullup then does not
		 * copy, and costs less than evbuffer_remove's copyout. */
		const unsigned char *h = evbuffer_pullup(headers, -1);
		if (!h)
			return -1;
		memcpy(head + n, h, hl);
		evbuffer_drain(headers, hl);
	}
	memcpy(head + n + hl, tail, tail_len);
	return evbuffer_add(out, head, n + hl + tail_len) ? -1 : 0;
}

void http_headbuf_init(struct http_headbuf *h, struct evbuffer *out)
{
	h->out = out;
	h->len = 0;
	h->err = 0;
}

int http_headbuf_flush(struct http_headbuf *h)
{
	if (h->len && evbuffer_add(h->out, h->buf, h->len))
		h->err = 1;
	h->len = 0;
	return h->err ? -1 : 0;
}

/* The general add: a piece over 32 bytes, or one that does not fit. Out
 * of line, so that the usual path calls nothing and saves no register
 * (~18 instructions a call less, a dozen calls a head). */
__attribute__((noinline)) static void add_slow(struct http_headbuf *h, const char *p, size_t n)
{
	if (n > sizeof(h->buf) - h->len) {
		http_headbuf_flush(h);
		if (n > sizeof(h->buf)) {
			if (evbuffer_add(h->out, p, n))
				h->err = 1;
			return;
		}
	}
	memcpy(h->buf + h->len, p, n);
	h->len += n;
}

void http_headbuf_add(struct http_headbuf *h, const char *p, size_t n)
{
	if (n > 32 || n > sizeof(h->buf) - h->len) {
		add_slow(h, p, n);
		return;
	}
	http_copy_short(h->buf + h->len, p, n);
	h->len += n;
}

/* A line with a long name or value, or one that does not fit: piece by
 * piece (the same bytes: pieces that fit are gathered, as a whole line
 * would be). */
__attribute__((noinline)) static void header_slow(struct http_headbuf *h, const char *name,
                                                  size_t name_len, const char *value,
                                                  size_t value_len)
{
	http_headbuf_add(h, name, name_len);
	http_headbuf_add(h, ": ", 2);
	http_headbuf_add(h, value, value_len);
	http_headbuf_add(h, "\r\n", 2);
}

void http_headbuf_header(struct http_headbuf *h, const char *name, size_t name_len,
                         const char *value, size_t value_len)
{
	if (name_len > 32 || value_len > 32 || name_len + value_len + 4 > sizeof(h->buf) - h->len) {
		header_slow(h, name, name_len, value, value_len);
		return;
	}
	char *w = h->buf + h->len;
	http_copy_short(w, name, name_len);
	memcpy(w + name_len, ": ", 2);
	http_copy_short(w + name_len + 2, value, value_len);
	memcpy(w + name_len + 2 + value_len, "\r\n", 2);
	h->len += name_len + value_len + 4;
}

size_t http_resp_content_length_line(char *line, uint64_t n)
{
	char digits[24];
	size_t k = 0, len = 16;

	memcpy(line, "Content-Length: ", 16);
	do {
		digits[k++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	while (k)
		line[len++] = digits[--k];
	memcpy(line + len, "\r\n", 2);
	return len + 2;
}

int http_resp_content_length(struct evbuffer *out, uint64_t n)
{
	char line[HTTP_RESP_CL_LINE_MAX];
	return evbuffer_add(out, line, http_resp_content_length_line(line, n)) ? -1 : 0;
}

int http_token_listed(const char *list, const char *name, size_t len)
{
	const char *t;
	size_t n;
	while ((t = http_list_token(&list, &n)))
		if (n == len && strncasecmp(t, name, len) == 0)
			return 1;
	return 0;
}

int http_hop_by_hop(const char *name, size_t len, const char *connection)
{
	return http_hop_by_hop_id(http_hdr_id(name, len), name, len, connection);
}

int http_resp_json(struct evbuffer *out, int version, int status, const json_t *body,
                   int keep_alive)
{
	return http_resp_json_with(out, version, status, NULL, body, keep_alive);
}

int http_resp_json_with(struct evbuffer *out, int version, int status, const char *extra,
                        const json_t *body, int keep_alive)
{
	char *s = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s)
		return -1;
	size_t n = strlen(s);
	int rc = http_resp_status_line(out, version, status);
	if (rc == 0 && evbuffer_add_printf(out,
	                                   "%sContent-Type: application/json\r\n"
	                                   "Content-Length: %zu\r\n%s\r\n",
	                                   extra ? extra : "", n + 1,
	                                   keep_alive ? "" : "Connection: close\r\n") < 0)
		rc = -1;
	if (rc == 0 && (evbuffer_add(out, s, n) || evbuffer_add(out, "\n", 1)))
		rc = -1;
	free(s);
	return rc;
}

const char *http_resp_jrpc_error_body(int status, enum conn_refusal why, const char *text,
                                      struct evbuffer *out)
{
	int code = why == CONN_REFUSED_SHUTDOWN ? JRPC_UPSTREAM_ERROR : JRPC_INVALID_REQUEST;
	(void)status;
	return jrpc_error_text(code, text, out) == 0 ? "application/json" : NULL;
}

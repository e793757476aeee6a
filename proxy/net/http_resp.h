/* http_resp: the only writer of status lines, header lines and the proxy's
 * own error responses. Also the one hop-by-hop test (the names themselves
 * are ids of http_parse.h, recognised as a head is parsed). */
#ifndef MCPWARDEN_HTTP_RESP_H
#define MCPWARDEN_HTTP_RESP_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "proxy/net/http_parse.h"
#include "proxy/net/transport.h"

struct evbuffer;

const char *http_resp_reason(int status);

/* "HTTP/1.1 200 OK\r\n". version is 10 or 11. Returns 0 or -1. */
int http_resp_status_line(struct evbuffer *out, int version, int status);
/* Header lines gathered in place and handed to an evbuffer in one add: a
 * head is a dozen small pieces, and each evbuffer_add is a call, a chain
 * check and a callback run. What does not fit goes to out as it comes
 * (same bytes, same order). On the stack: init, add, flush. */
struct http_headbuf {
	struct evbuffer *out;   /* borrowed */
	size_t len;
	int err;
	char buf[2048];
};
void http_headbuf_init(struct http_headbuf *h, struct evbuffer *out);
void http_headbuf_add(struct http_headbuf *h, const char *p, size_t n);
/* "Name: value\r\n". */
void http_headbuf_header(struct http_headbuf *h, const char *name, size_t name_len,
                         const char *value, size_t value_len);
/* The status line, as http_resp_status_line writes it. */
void http_headbuf_status_line(struct http_headbuf *h, int version, int status);
/* Hands what is gathered to out. Returns 0, or -1 when any add failed. */
int http_headbuf_flush(struct http_headbuf *h);
/* "Content-Length: n\r\n". Returns 0 or -1. */
int http_resp_content_length(struct evbuffer *out, uint64_t n);
/* The same line into line (HTTP_RESP_CL_LINE_MAX bytes); returns its length. */
#define HTTP_RESP_CL_LINE_MAX 40
size_t http_resp_content_length_line(char *line, uint64_t n);
/* A whole head in one add, as one write wants it: the status line, then
 * the header lines in headers (NULL, or drained into out), then tail (the
 * proxy's own lines and the blank line). A head too large for a stack
 * buffer goes in pieces, same bytes. Returns 0 or -1. */
int http_resp_head(struct evbuffer *out, int version, int status, struct evbuffer *headers,
                   const char *tail, size_t tail_len);

/* Whether a header must not cross the proxy (RFC 9110 §7.6.1): the fixed
 * hop-by-hop set plus every token listed in the message's Connection header
 * (connection may be NULL). */
int http_hop_by_hop(const char *name, size_t len, const char *connection);
/* Whether the comma-separated token list (a Connection value) names the
 * header name (case-insensitive). */
int http_token_listed(const char *list, const char *name, size_t len);
/* The same as http_hop_by_hop for a name whose id is known
 * (http_msg_header_id). Inline: the forwarding filters ask it of every
 * header, and it is an id comparison when the message's Connection lists
 * no option (~100 instructions a call less than a call each). */
static inline int http_hop_by_hop_id(enum http_hdr_id id, const char *name, size_t len,
                                     const char *connection)
{
	if (id >= HH_FIRST_HOP_BY_HOP)
		return 1;
	return connection && http_token_listed(connection, name, len);
}

/* Appends a whole response whose body is `body` serialised (borrowed):
 * status line, Content-Type: application/json, Content-Length, and
 * Connection: close unless keep_alive. Returns 0 or -1. */
int http_resp_json(struct evbuffer *out, int version, int status, const json_t *body,
                   int keep_alive);
/* The same with extra header lines ("Name: value\r\n"..., NULL: none)
 * after the status line (a 405's Allow). */
int http_resp_json_with(struct evbuffer *out, int version, int status, const char *extra,
                        const json_t *body, int keep_alive);

/* A transport_ops.error_body (transport.h) for a handler whose clients
 * read JSON-RPC (the MCP port, admin's): what the HTTP layer refuses
 * before any request reached a handler is told as a JSON-RPC error
 * without an id (none was read): -32600 for the request, the upstream
 * error code when mcpwarden is shutting down. One shape on either port.
 * Returns "application/json", or NULL when out of memory. */
const char *http_resp_jrpc_error_body(int status, enum conn_refusal why, const char *text,
                                      struct evbuffer *out);

#endif

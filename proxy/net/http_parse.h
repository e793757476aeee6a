/* http_parse: llhttp -> a bounded http_msg, for client requests and for
 * upstream responses. No I/O: the caller feeds bytes and gets callbacks, so
 * the same code is unit-tested and fuzzed.
 *
 * Header fields arrive from llhttp in fragments; they are appended into one
 * buffer that never grows past max_header_bytes (431 / 502 beyond). The
 * body is not stored: it goes to the on_body callback, and the caller moves
 * it where it belongs. Parsing stops (pauses) after each complete message so
 * a keep-alive connection handles one request at a time.
 *
 * Strict where RFC 9112 says a server MUST refuse (requests; responses
 * keep llhttp's rules): a header line with an empty name; a second Host or
 * a Host that is not a uri-host[:port] (§3.2; a missing one is the
 * caller's to refuse, conn.c); chunk data not followed by CRLF (§7.1); a version other than
 * HTTP/1.0 and HTTP/1.1 (HTTP_ERR_VERSION: 505, as nginx answers a major
 * version above 1). Chunk extensions, never forwarded (the body goes on
 * with a Content-Length of its own), are bounded by
 * LIMIT_MAX_CHUNK_EXT_BYTES per message. An absolute-form target
 * (`POST http://host:port/mcp`, §3.2.2) reads as its origin form
 * (`/mcp`), and its authority stands for Host, whatever Host said.
 */
#ifndef MCPWARDEN_HTTP_PARSE_H
#define MCPWARDEN_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum http_kind { HTTP_KIND_REQUEST, HTTP_KIND_RESPONSE };

/* Results of http_parser_feed(). */
enum http_parse_rc {
	HTTP_PARSE_ERROR = -1,  /* malformed; see http_parser_error() */
	HTTP_PARSE_MORE = 0,    /* all bytes consumed, message not complete */
	HTTP_PARSE_DONE = 1,    /* a message completed; *consumed says where */
};

/* Why a parse failed, as far as the peer should know. */
enum http_parse_err {
	HTTP_ERR_NONE = 0,
	HTTP_ERR_SYNTAX,        /* 400 */
	HTTP_ERR_HEADERS_TOO_BIG, /* 431 */
	HTTP_ERR_BODY_TOO_BIG,  /* 413 (set by a callback returning -2) */
	HTTP_ERR_CALLBACK,      /* a callback refused */
	HTTP_ERR_VERSION,       /* 505: a request not in HTTP/1.0 or HTTP/1.1 */
};

struct http_msg;
struct http_parser;

struct http_parser_cbs {
	/* Headers are complete. Return 0 to go on, 1 to say "no body follows"
	 * (response to HEAD), -1 to stop with HTTP_ERR_CALLBACK. */
	int (*on_headers)(void *arg, const struct http_msg *m);
	/* A body fragment. Return 0, -1 (HTTP_ERR_CALLBACK) or -2 (too big). */
	int (*on_body)(void *arg, const char *data, size_t len);
};

struct http_parser *http_parser_new(enum http_kind kind, size_t max_header_bytes,
                                    const struct http_parser_cbs *cbs, void *arg);
void http_parser_free(struct http_parser *p);

/* Parses up to len bytes. *consumed is how many were used (on DONE, the
 * rest belongs to the next message). */
enum http_parse_rc http_parser_feed(struct http_parser *p, const char *data, size_t len,
                                    size_t *consumed);
/* The peer closed: completes a body delimited by the connection's end.
 * Returns DONE if that ended a message, MORE if nothing was in progress,
 * ERROR if a message was cut short. */
enum http_parse_rc http_parser_finish(struct http_parser *p);
/* Ready for the next message on the same connection. */
void http_parser_reset(struct http_parser *p);
/* Whether any byte of a message has been seen since the last reset. */
int http_parser_started(const struct http_parser *p);

enum http_parse_err http_parser_error(const struct http_parser *p);
const char *http_parser_reason(const struct http_parser *p); /* static string */

/* The message being parsed; valid until the next reset. Before its head
 * is complete it holds the headers so far, each from when the next one
 * begins. */
const struct http_msg *http_parser_msg(const struct http_parser *p);

/* ---- the message -------------------------------------------------------- */

const char *http_msg_method(const struct http_msg *m);   /* "GET", "POST"… */
/* The methods the proxy acts on, known from the parse, so that asking
 * "is it a POST?" several times per call compares no string. */
enum http_method_id {
	HM_OTHER = 0, HM_GET, HM_HEAD, HM_POST, HM_PUT, HM_PATCH, HM_DELETE, HM_CONNECT
};
enum http_method_id http_msg_method_id(const struct http_msg *m);
/* The request-target; an absolute-form one in its origin form ("/" when
 * it had no path). */
const char *http_msg_url(const struct http_msg *m);
int http_msg_status(const struct http_msg *m);
int http_msg_version(const struct http_msg *m);          /* 10 or 11 */
/* Keep-alive as llhttp decides from version and Connection. */
int http_msg_keep_alive(const struct http_msg *m);
/* Content-Length, or -1 when absent (chunked or close-delimited). */
int64_t http_msg_content_length(const struct http_msg *m);
size_t http_msg_header_count(const struct http_msg *m);
/* The i-th header; returns 0, or -1 past the end. Value is trimmed. */
int http_msg_header_at(const struct http_msg *m, size_t i, const char **name, size_t *name_len,
                       const char **value, size_t *value_len);
/* dst = the path of request-target url, without its query, cut to cap - 1
 * bytes; NUL-terminated. Every request needs it: no printf. */
void http_url_path(char *dst, size_t cap, const char *url);

/* The next token of a comma- or blank-separated header list (Connection)
 * at *cursor: its start (*len bytes, not NUL-terminated), *cursor moved
 * past it; NULL at the end of the list. A list that ends in a separator
 * yields one empty token there. */
const char *http_list_token(const char **cursor, size_t *len);

/* The first header named `name` (case-insensitive), NUL-terminated, or NULL.
 * For the names of enum http_hdr_id this is a table lookup. */
const char *http_msg_header(const struct http_msg *m, const char *name);

/* Header names the proxy acts on, recognised once per header while the
 * head is parsed, so that lookups and the forwarding filters do not compare
 * every header against every name they care about, twice per call. */
enum http_hdr_id {
	HH_OTHER = 0,
	HH_HOST, HH_CONTENT_TYPE, HH_CONTENT_LENGTH, HH_AUTHORIZATION, HH_ORIGIN, HH_ACCEPT,
	HH_ACCEPT_ENCODING, HH_EXPECT, HH_LOCATION, HH_LAST_EVENT_ID, HH_MCP_SESSION_ID,
	HH_MCP_PROTOCOL_VERSION, HH_X_ACCEL_BUFFERING,
	/* Hop-by-hop (RFC 9110 §7.6.1), from here to the end. */
	HH_CONNECTION, HH_KEEP_ALIVE, HH_PROXY_CONNECTION, HH_TE, HH_TRAILER,
	HH_TRANSFER_ENCODING, HH_UPGRADE, HH_PROXY_AUTHENTICATE, HH_PROXY_AUTHORIZATION,
	HH__COUNT
};
#define HH_FIRST_HOP_BY_HOP HH_CONNECTION

/* The id of a header name (case-insensitive), HH_OTHER when none. */
enum http_hdr_id http_hdr_id(const char *name, size_t len);
/* The first header of that id (not HH_OTHER), NUL-terminated, or NULL:
 * http_msg_header without comparing a single letter. */
const char *http_msg_get(const struct http_msg *m, enum http_hdr_id id);
/* Whether more than one header of that id came (requests and responses
 * alike; a second Host in a request is refused by the parser itself).
 * Which repeats matter is the caller's call: the proxy refuses those of
 * headers it decides on (conn.c). */
int http_msg_repeated(const struct http_msg *m, enum http_hdr_id id);
/* All of them at once: bit id set when that id repeated. */
uint32_t http_msg_repeats(const struct http_msg *m);
/* The id of the i-th header (HH_OTHER past the end). */
enum http_hdr_id http_msg_header_id(const struct http_msg *m, size_t i);
/* What the hop-by-hop filters need of the Connection header: its value
 * when it lists a token besides the fixed hop-by-hop names, else NULL.
 * Passed to http_hop_by_hop_id in place of the value, it gives the same
 * answers (a fixed name has a hop-by-hop id already) without a walk of
 * "keep-alive" per forwarded header. */
const char *http_msg_connection_options(const struct http_msg *m);

/* Copies n bytes, up to 32 of them without a call to memcpy: two loads
 * and two stores that overlap in the middle cover n to 2n bytes; nothing
 * is read or written outside [s, s + n) and [d, d + n). For the short
 * pieces of a head (names, most values), where a memcpy call was ~15 of
 * the ~50 instructions a line cost. Shared by the parser's appends and
 * http_resp's head writer. */
static inline void http_copy_short(char *d, const char *s, size_t n)
{
	if (n > 32) {
		memcpy(d, s, n);
	} else if (n > 16) {
		struct { char b[16]; } a, b;
		memcpy(&a, s, 16);
		memcpy(&b, s + n - 16, 16);
		memcpy(d, &a, 16);
		memcpy(d + n - 16, &b, 16);
	} else if (n >= 8) {
		uint64_t a, b;
		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;
		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + n - 4, &b, 4);
	} else if (n) {
		d[0] = s[0];
		d[n >> 1] = s[n >> 1];
		d[n - 1] = s[n - 1];
	}
}

#endif

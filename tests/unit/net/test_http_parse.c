/* Unit tests for proxy/net/http_parse.c, through the public API only.
 * Why this file is long: one test per behaviour of the module, each reading
 * on its own (a failure names one behaviour), with the regression cases.
 *
 * Most tests go through one driver, run_feed(), which feeds an input cut at
 * the given offsets, resets after every complete message (as conn.c and
 * upstream.c do) and renders every outcome into one line of a text log:
 *
 *   request:  {GET /x v11 ka1 cl-1 [Host=a][X=b] body=...}
 *   response: {200 v11 ka1 cl5 [Content-Length=5] body=hello}
 *   error:    error=<enum http_parse_err>
 *   finish:   finish=<enum http_parse_rc>   (when asked to call finish)
 *
 * so a test states its whole expected outcome as a string, and the
 * fragmentation tests compare the logs of every split with the log of the
 * whole input.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "proxy/net/http_parse.h"
#include "proxy/base/limits.h"

#define LOG_MAX  16384
#define BODY_MAX 8192

struct run {
	/* set by the test */
	enum http_kind kind;
	size_t max_hdr;          /* 0: the default */
	int headers_rc;          /* what on_headers returns */
	int body_rc;             /* what on_body returns once body_cap is passed */
	size_t body_cap;         /* 0: no cap */
	int finish;              /* call http_parser_finish after the last byte */
	/* filled in */
	char log[LOG_MAX];
	size_t len;
	char body[BODY_MAX];
	size_t body_len;
	int headers_calls, body_calls;
	size_t messages;
	size_t last_consumed;    /* from the first feed that returned DONE */
};

static void log_put(struct run *r, const char *s, size_t n)
{
	assert_true(n < LOG_MAX - r->len);
	memcpy(r->log + r->len, s, n);
	r->len += n;
	r->log[r->len] = '\0';
}

static void log_printf(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void log_printf(struct run *r, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(tmp));
	log_put(r, tmp, (size_t)n);
}

static void log_escaped(struct run *r, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n')
			log_put(r, "\\n", 2);
		else if (c == '\r')
			log_put(r, "\\r", 2);
		else if (c < 0x20 || c >= 0x7f)
			log_printf(r, "\\x%02X", c);
		else
			log_put(r, s + i, 1);
	}
}

static int cb_headers(void *arg, const struct http_msg *m)
{
	struct run *r = arg;
	(void)m;
	r->headers_calls++;
	return r->headers_rc;
}

static int cb_body(void *arg, const char *data, size_t len)
{
	struct run *r = arg;
	r->body_calls++;
	if (r->body_cap && r->body_len + len > r->body_cap)
		return r->body_rc;
	assert_true(len <= BODY_MAX - r->body_len);
	memcpy(r->body + r->body_len, data, len);
	r->body_len += len;
	return 0;
}

static const struct http_parser_cbs test_cbs = {cb_headers, cb_body};

/* The names of enum http_hdr_id, for a reference lookup that shares no
 * code with the parser's (a plain strncasecmp scan). */
static const struct { const char *name; enum http_hdr_id id; } known_names[] = {
	{"host", HH_HOST}, {"content-type", HH_CONTENT_TYPE},
	{"content-length", HH_CONTENT_LENGTH}, {"authorization", HH_AUTHORIZATION},
	{"origin", HH_ORIGIN}, {"accept", HH_ACCEPT}, {"accept-encoding", HH_ACCEPT_ENCODING},
	{"expect", HH_EXPECT}, {"location", HH_LOCATION}, {"last-event-id", HH_LAST_EVENT_ID},
	{"mcp-session-id", HH_MCP_SESSION_ID}, {"mcp-protocol-version", HH_MCP_PROTOCOL_VERSION},
	{"x-accel-buffering", HH_X_ACCEL_BUFFERING}, {"connection", HH_CONNECTION},
	{"keep-alive", HH_KEEP_ALIVE}, {"proxy-connection", HH_PROXY_CONNECTION}, {"te", HH_TE},
	{"trailer", HH_TRAILER}, {"transfer-encoding", HH_TRANSFER_ENCODING},
	{"upgrade", HH_UPGRADE}, {"proxy-authenticate", HH_PROXY_AUTHENTICATE},
	{"proxy-authorization", HH_PROXY_AUTHORIZATION},
};
#define NKNOWN (sizeof(known_names) / sizeof(known_names[0]))

static enum http_hdr_id ref_id(const char *n, size_t nl)
{
	for (size_t i = 0; i < NKNOWN; i++)
		if (strlen(known_names[i].name) == nl && strncasecmp(n, known_names[i].name, nl) == 0)
			return known_names[i].id;
	return HH_OTHER;
}

/* Appends the message the parser holds, then forgets its body. */
static void log_message(struct run *r, const struct http_msg *m)
{
	if (r->kind == HTTP_KIND_REQUEST)
		log_printf(r, "{%s %s", http_msg_method(m), http_msg_url(m));
	else
		log_printf(r, "{%d", http_msg_status(m));
	log_printf(r, " v%d ka%d cl%lld ", http_msg_version(m), http_msg_keep_alive(m),
	           (long long)http_msg_content_length(m));
	for (size_t i = 0; i < http_msg_header_count(m); i++) {
		const char *n, *v;
		size_t nl, vl;
		assert_int_equal(http_msg_header_at(m, i, &n, &nl, &v, &vl), 0);
		/* Both are NUL-terminated where the lengths say. */
		assert_int_equal(n[nl], '\0');
		assert_int_equal(v[vl], '\0');
		/* Every message of every test, whole or split, also checks the
		 * ids the parser gave against the reference. */
		assert_int_equal(http_msg_header_id(m, i), ref_id(n, nl));
		log_put(r, "[", 1);
		log_escaped(r, n, nl);
		log_put(r, "=", 1);
		log_escaped(r, v, vl);
		log_put(r, "]", 1);
	}
	log_put(r, " body=", 6);
	log_escaped(r, r->body, r->body_len);
	log_put(r, "}", 1);
	r->body_len = 0;
	r->messages++;
}

/* Feeds data cut at cuts[0..ncuts) (ascending offsets); see the file
 * comment for the log. Returns the number of complete messages. */
static size_t run_feed(struct run *r, const char *data, size_t len, const size_t *cuts,
                       size_t ncuts)
{
	struct http_parser *p = http_parser_new(r->kind, r->max_hdr, &test_cbs, r);
	size_t start = 0;
	int failed = 0;

	assert_non_null(p);
	r->len = 0;
	r->log[0] = '\0';
	r->body_len = 0;
	r->messages = 0;
	r->last_consumed = (size_t)-1;
	for (size_t k = 0; k <= ncuts && !failed; k++) {
		size_t end = k < ncuts ? cuts[k] : len;
		assert_true(end >= start && end <= len);
		const char *seg = data + start;
		size_t seglen = end - start;
		start = end;
		/* Empty feeds between cuts must be harmless too. */
		do {
			size_t used = 12345;
			enum http_parse_rc rc = http_parser_feed(p, seg, seglen, &used);
			if (rc == HTTP_PARSE_ERROR) {
				assert_int_equal(used, 0);
				assert_int_not_equal(http_parser_error(p), HTTP_ERR_NONE);
				log_printf(r, "error=%d", (int)http_parser_error(p));
				failed = 1;
				break;
			}
			assert_true(used <= seglen);
			if (rc == HTTP_PARSE_MORE) {
				assert_int_equal(used, seglen);
				break;
			}
			assert_int_equal(rc, HTTP_PARSE_DONE);
			if (r->last_consumed == (size_t)-1)
				r->last_consumed = used;
			log_message(r, http_parser_msg(p));
			http_parser_reset(p);
			seg += used;
			seglen -= used;
		} while (seglen > 0);
	}
	if (r->finish && !failed) {
		enum http_parse_rc rc = http_parser_finish(p);
		if (rc == HTTP_PARSE_DONE)
			log_message(r, http_parser_msg(p));
		log_printf(r, "finish=%d", (int)rc);
		if (rc == HTTP_PARSE_ERROR)
			log_printf(r, " error=%d", (int)http_parser_error(p));
	}
	http_parser_free(p);
	return r->messages;
}

static size_t run_whole(struct run *r, const char *data)
{
	return run_feed(r, data, strlen(data), NULL, 0);
}

/* The log of data fed whole equals the log of every one-cut and two-cut
 * split, and of a feed one byte at a time. */
static void check_every_split(const struct run *tmpl, const char *data)
{
	size_t len = strlen(data);
	struct run *whole = malloc(sizeof(*whole)), *r = malloc(sizeof(*r));
	size_t *cuts = malloc((len + 1) * sizeof(*cuts));

	assert_non_null(whole);
	assert_non_null(r);
	assert_non_null(cuts);
	*whole = *tmpl;
	run_feed(whole, data, len, NULL, 0);
	for (size_t i = 0; i <= len; i++) {
		for (size_t j = i; j <= len; j++) {
			size_t two[2] = {i, j};
			*r = *tmpl;
			run_feed(r, data, len, two, 2);
			if (strcmp(r->log, whole->log) != 0) {
				print_error("split at %zu and %zu:\n  got  %s\n  want %s\n", i, j, r->log,
				            whole->log);
				fail();
			}
		}
	}
	for (size_t i = 0; i < len; i++)
		cuts[i] = i + 1;
	*r = *tmpl;
	run_feed(r, data, len, cuts, len);
	assert_string_equal(r->log, whole->log);
	free(cuts);
	free(r);
	free(whole);
}

static struct run *run_new(enum http_kind kind)
{
	struct run *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->kind = kind;
	r->body_rc = -2;
	return r;
}

/* ---- basic messages ----------------------------------------------------- */

static const char post_chunked[] =
	"POST /mcp?x=1 HTTP/1.1\r\n"
	"Host: 127.0.0.1:8080\r\n"
	"Content-Type: application/json\r\n"
	"Accept: application/json, text/event-stream\r\n"
	"Transfer-Encoding: chunked\r\n"
	"\r\n"
	"7\r\n{\"a\":1}\r\n"
	"3;ext=1\r\n[2]\r\n"
	"0\r\n\r\n";

static void test_request_simple(void **state)
{
	(void)state;
	static const char req[] = "GET /mcp HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n";
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	size_t used;

	assert_non_null(p);
	assert_int_equal(http_parser_started(p), 0);
	assert_int_equal(http_parser_feed(p, req, strlen(req), &used), HTTP_PARSE_DONE);
	assert_int_equal(used, strlen(req));
	assert_int_equal(http_parser_started(p), 1);
	assert_int_equal(http_parser_error(p), HTTP_ERR_NONE);
	assert_string_equal(http_parser_reason(p), "no error");

	const struct http_msg *m = http_parser_msg(p);
	assert_string_equal(http_msg_method(m), "GET");
	assert_string_equal(http_msg_url(m), "/mcp");
	assert_int_equal(http_msg_version(m), 11);
	assert_int_equal(http_msg_keep_alive(m), 1);
	assert_int_equal(http_msg_content_length(m), -1);
	assert_int_equal(http_msg_header_count(m), 2);

	const char *n, *v;
	size_t nl, vl;
	assert_int_equal(http_msg_header_at(m, 0, &n, &nl, &v, &vl), 0);
	assert_int_equal(nl, 4);
	assert_memory_equal(n, "Host", 4);
	assert_int_equal(vl, 11);
	assert_string_equal(v, "example.com");
	assert_int_equal(http_msg_header_at(m, 1, &n, &nl, &v, &vl), 0);
	assert_string_equal(n, "Accept");
	assert_string_equal(v, "*/*");
	assert_int_equal(http_msg_header_at(m, 2, &n, &nl, &v, &vl), -1);

	http_parser_reset(p);
	assert_int_equal(http_parser_started(p), 0);
	assert_int_equal(http_msg_header_count(http_parser_msg(p)), 0);
	http_parser_free(p);
	http_parser_free(NULL);
}

/* Callbacks are optional. */
static void test_null_callbacks(void **state)
{
	(void)state;
	static const char req[] = "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
	static const struct http_parser_cbs none = {NULL, NULL};
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &none, NULL);
	size_t used;

	assert_int_equal(http_parser_feed(p, req, strlen(req), &used), HTTP_PARSE_DONE);
	assert_int_equal(used, strlen(req));
	assert_int_equal(http_msg_content_length(http_parser_msg(p)), 3);
	http_parser_free(p);
}

static void test_response_simple(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_RESPONSE);

	assert_int_equal(run_whole(r, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                              "Content-Length: 11\r\n\r\n{\"ok\":true}"),
	                 1);
	assert_string_equal(r->log, "{200 v11 ka1 cl11 [Content-Type=application/json]"
	                            "[Content-Length=11] body={\"ok\":true}}");
	assert_int_equal(r->headers_calls, 1);
	free(r);
}

/* A response has no method or URL; a request has no status. */
static void test_kind_specific_fields_empty(void **state)
{
	(void)state;
	static const char resp[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	static const char req[] = "DELETE /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_RESPONSE, 0, &test_cbs, &r0);
	size_t used;

	assert_int_equal(http_parser_feed(p, resp, strlen(resp), &used), HTTP_PARSE_DONE);
	assert_string_equal(http_msg_method(http_parser_msg(p)), "");
	assert_string_equal(http_msg_url(http_parser_msg(p)), "");
	assert_int_equal(http_msg_status(http_parser_msg(p)), 404);
	assert_int_equal(http_msg_content_length(http_parser_msg(p)), 0);
	http_parser_free(p);

	p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	assert_int_equal(http_parser_feed(p, req, strlen(req), &used), HTTP_PARSE_DONE);
	assert_string_equal(http_msg_method(http_parser_msg(p)), "DELETE");
	assert_int_equal(http_msg_status(http_parser_msg(p)), 0);
	http_parser_free(p);
}

/* The method id agrees with the name, for each id and for others; a
 * response, and a request after a reset before its head, have none. */
static void test_method_ids(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		enum http_method_id id;
	} cases[] = {
		{"GET", HM_GET},       {"HEAD", HM_HEAD},        {"POST", HM_POST},
		{"PUT", HM_PUT},       {"PATCH", HM_PATCH},      {"DELETE", HM_DELETE},
		{"OPTIONS", HM_OTHER}, {"PROPFIND", HM_OTHER},
	};
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	char req[128];
	size_t used;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(req, sizeof(req), "%s /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		         cases[i].name);
		assert_int_equal(http_parser_feed(p, req, strlen(req), &used), HTTP_PARSE_DONE);
		assert_string_equal(http_msg_method(http_parser_msg(p)), cases[i].name);
		assert_int_equal(http_msg_method_id(http_parser_msg(p)), cases[i].id);
		http_parser_reset(p);
		assert_int_equal(http_msg_method_id(http_parser_msg(p)), HM_OTHER);
	}
	http_parser_free(p);

	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	p = http_parser_new(HTTP_KIND_RESPONSE, 0, &test_cbs, &r0);
	assert_int_equal(http_parser_feed(p, resp, strlen(resp), &used), HTTP_PARSE_DONE);
	assert_int_equal(http_msg_method_id(http_parser_msg(p)), HM_OTHER);
	http_parser_free(p);
}

/* ---- fragmentation ------------------------------------------------------ */

static void test_request_every_split(void **state)
{
	(void)state;
	struct run *t = run_new(HTTP_KIND_REQUEST);

	run_whole(t, post_chunked);
	assert_string_equal(t->log,
	                    "{POST /mcp?x=1 v11 ka1 cl-1 [Host=127.0.0.1:8080]"
	                    "[Content-Type=application/json]"
	                    "[Accept=application/json, text/event-stream]"
	                    "[Transfer-Encoding=chunked] body={\"a\":1}[2]}");
	check_every_split(t, post_chunked);
	free(t);
}

static void test_pipelined_every_split(void **state)
{
	(void)state;
	static const char two[] = "POST /a HTTP/1.1\r\nContent-Length: 5\r\nX-Pad:  v  \r\n\r\nhello"
	                          "GET /b?q HTTP/1.1\r\nHost: h\r\n\r\n"
	                          "DELETE /c HTTP/1.0\r\n\r\n";
	struct run *t = run_new(HTTP_KIND_REQUEST);

	assert_int_equal(run_whole(t, two), 3);
	assert_string_equal(t->log, "{POST /a v11 ka1 cl5 [Content-Length=5][X-Pad=v] body=hello}"
	                            "{GET /b?q v11 ka1 cl-1 [Host=h] body=}"
	                            "{DELETE /c v10 ka0 cl-1  body=}");
	check_every_split(t, two);
	free(t);
}

static void test_response_every_split(void **state)
{
	(void)state;
	static const char sse[] = "HTTP/1.1 200 OK\r\n"
	                          "Content-Type: text/event-stream\r\n"
	                          "Cache-Control: no-cache\r\n"
	                          "Transfer-Encoding: chunked\r\n\r\n"
	                          "1f\r\nevent: message\ndata: {\"id\":1}\n\n\r\n"
	                          "0\r\n\r\n"
	                          "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
	struct run *t = run_new(HTTP_KIND_RESPONSE);

	assert_int_equal(run_whole(t, sse), 2);
	assert_string_equal(t->log, "{200 v11 ka1 cl-1 [Content-Type=text/event-stream]"
	                            "[Cache-Control=no-cache][Transfer-Encoding=chunked]"
	                            " body=event: message\\ndata: {\"id\":1}\\n\\n}"
	                            "{202 v11 ka1 cl0 [Content-Length=0] body=}");
	check_every_split(t, sse);
	free(t);
}

static void test_close_delimited_every_split(void **state)
{
	(void)state;
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it";
	struct run *t = run_new(HTTP_KIND_RESPONSE);

	t->finish = 1;
	run_whole(t, resp);
	assert_string_equal(t->log, "{200 v11 ka0 cl-1 [Content-Type=text/plain] body=all of it}"
	                            "finish=1");
	check_every_split(t, resp);
	free(t);
}

/* ---- headers ------------------------------------------------------------ */

static void test_header_lookup_case_insensitive(void **state)
{
	(void)state;
	static const char req[] = "POST /mcp HTTP/1.1\r\nMcp-Session-Id: abc\r\n"
	                          "content-TYPE: application/json\r\nX-Dup: first\r\n"
	                          "x-dup: second\r\nContent-Length: 0\r\n\r\n";
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	size_t used;

	assert_int_equal(http_parser_feed(p, req, strlen(req), &used), HTTP_PARSE_DONE);
	const struct http_msg *m = http_parser_msg(p);
	assert_string_equal(http_msg_header(m, "mcp-session-id"), "abc");
	assert_string_equal(http_msg_header(m, "MCP-SESSION-ID"), "abc");
	assert_string_equal(http_msg_header(m, "Content-Type"), "application/json");
	/* The first of repeated fields. */
	assert_string_equal(http_msg_header(m, "X-DUP"), "first");
	/* Neither a prefix nor an extension of a name matches. */
	assert_null(http_msg_header(m, "mcp-session"));
	assert_null(http_msg_header(m, "mcp-session-idx"));
	assert_null(http_msg_header(m, ""));
	assert_null(http_msg_header(m, "absent"));
	http_parser_free(p);
}

/* Every name the proxy acts on has its id whatever its case; a name one
 * letter off, shorter or longer has none. */
static void test_header_ids(void **state)
{
	(void)state;
	int seen[HH__COUNT] = {0};
	for (size_t i = 0; i < NKNOWN; i++) {
		char up[64], off[64];
		const char *name = known_names[i].name;
		size_t n = strlen(name);
		assert_int_equal(http_hdr_id(name, n), known_names[i].id);
		for (size_t k = 0; k < n; k++)
			up[k] = (char)(k % 2 ? toupper((unsigned char)name[k]) : name[k]);
		assert_int_equal(http_hdr_id(up, n), known_names[i].id);
		for (size_t k = 0; k < n; k++)
			up[k] = (char)toupper((unsigned char)name[k]);
		assert_int_equal(http_hdr_id(up, n), known_names[i].id);
		for (size_t k = 0; k < n; k++) {
			memcpy(off, name, n);
			off[k] = off[k] == 'z' ? 'y' : 'z';
			assert_int_equal(http_hdr_id(off, n), HH_OTHER);
		}
		assert_int_equal(http_hdr_id(name, n - 1), HH_OTHER);
		assert_int_equal(http_hdr_id(name + 1, n - 1), HH_OTHER);
		seen[known_names[i].id]++;
	}
	for (int id = 1; id < HH__COUNT; id++)
		assert_int_equal(seen[id], 1); /* the table above names every id */
	assert_int_equal(http_hdr_id("x-unknown", 9), HH_OTHER);
	assert_int_equal(http_hdr_id("", 0), HH_OTHER);
}

/* The names are compared a word at a time with a case bit or'ed in: only
 * the two cases of a letter may match it, and only '-' matches '-'. Every
 * byte value at every position of every name: CR is '-' with the case bit,
 * '@' is '`' without it, '[' is '{'. */
static void test_header_ids_fold_only_letters(void **state)
{
	(void)state;
	for (size_t i = 0; i < NKNOWN; i++) {
		const char *name = known_names[i].name;
		size_t n = strlen(name);
		for (size_t k = 0; k < n; k++) {
			for (int b = 0; b < 256; b++) {
				char s[64];
				memcpy(s, name, n);
				s[k] = (char)b;
				int same = tolower(b) == (unsigned char)name[k];
				assert_int_equal(http_hdr_id(s, n), same ? known_names[i].id : HH_OTHER);
				/* The same name from the parser, in the heap and unpadded. */
				char *h = malloc(n);
				assert_non_null(h);
				memcpy(h, s, n);
				assert_int_equal(http_hdr_id(h, n), same ? known_names[i].id : HH_OTHER);
				free(h);
			}
		}
	}
}

/* A known name skips the token check (it can only have matched letters
 * and '-'); a name of the same length with any other byte in it is still
 * checked, refused if it is not a token, whole or split anywhere. */
static void test_field_name_not_a_token(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"Content Type", "Content\"Type", "Host(", "Mcp-Session-I}", "T@",
		"Connection/", "X Foo",
	};
	for (int kind = 0; kind < 2; kind++) {
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char in[256];
			if (kind == 0)
				snprintf(in, sizeof(in), "GET / HTTP/1.1\r\nHost: a\r\n%s: v\r\n\r\n", bad[i]);
			else
				snprintf(in, sizeof(in), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n%s: v\r\n\r\n",
				         bad[i]);
			struct run *t = run_new(kind == 0 ? HTTP_KIND_REQUEST : HTTP_KIND_RESPONSE);
			run_whole(t, in);
			assert_string_equal(t->log, "error=1");
			check_every_split(t, in);
			free(t);
		}
	}
}

/* The byte checks go four bytes a step: a name or a Host of every length
 * from 1 to 13 with one bad byte at each position is refused, and the same
 * without it accepted (the step and the tail both see every byte). */
static void test_bad_byte_at_every_position(void **state)
{
	(void)state;
	for (size_t len = 1; len <= 13; len++) {
		for (size_t bad = 0; bad <= len; bad++) { /* bad == len: none */
			char name[16], host[16], in[128];
			for (size_t i = 0; i < len; i++) {
				name[i] = (char)('a' + i); /* "abc...": never a known name */
				host[i] = (char)('a' + i);
			}
			name[len] = host[len] = '\0';
			if (bad < len) {
				name[bad] = ' ';
				host[bad] = '/';
			}
			const char *want = bad < len ? "error=1" : NULL;
			snprintf(in, sizeof(in), "GET / HTTP/1.1\r\nHost: a\r\nX%s: v\r\n\r\n", name);
			struct run *t = run_new(HTTP_KIND_REQUEST);
			run_whole(t, in);
			if (want)
				assert_string_equal(t->log, want);
			else
				assert_null(strstr(t->log, "error"));
			free(t);
			snprintf(in, sizeof(in), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host);
			t = run_new(HTTP_KIND_REQUEST);
			run_whole(t, in);
			if (want)
				assert_string_equal(t->log, want);
			else
				assert_null(strstr(t->log, "error"));
			free(t);
		}
	}
}

/* Known names in any case, split anywhere (a name may come in pieces
 * over several feeds): the same headers and ids as fed whole; the ids are
 * checked by log_message. */
static void test_header_ids_every_split(void **state)
{
	(void)state;
	static const char resp[] = "HTTP/1.1 200 OK\r\n"
	                           "sERVER: nginx\r\n"
	                           "CONTENT-type: application/json\r\n"
	                           "Content-Length: 2\r\n"
	                           "mcp-session-ID: s1\r\n"
	                           "Connection: keep-alive\r\n"
	                           "X-Accel-Bufferinh: no\r\n"
	                           "te: x\r\n\r\n{}";
	struct run *t = run_new(HTTP_KIND_RESPONSE);

	run_whole(t, resp);
	assert_string_equal(t->log, "{200 v11 ka1 cl2 [sERVER=nginx]"
	                            "[CONTENT-type=application/json][Content-Length=2]"
	                            "[mcp-session-ID=s1][Connection=keep-alive]"
	                            "[X-Accel-Bufferinh=no][te=x] body={}}");
	check_every_split(t, resp);
	free(t);
}

/* A lookup by name (a table for known names) gives what a scan of the
 * headers in order gives, over random heads mixing known and unknown
 * names, repeated ones and every case. */
static const char *scan_header(const struct http_msg *m, const char *name)
{
	const char *n, *v;
	size_t nl, vl;
	for (size_t i = 0; http_msg_header_at(m, i, &n, &nl, &v, &vl) == 0; i++)
		if (nl == strlen(name) && strncasecmp(n, name, nl) == 0)
			return v;
	return NULL;
}

static void test_header_lookup_matches_scan(void **state)
{
	(void)state;
	static const char *const names[] = {
		"Host", "Mcp-Session-Id", "Authorization", "Origin", "Accept", "Content-Type",
		"Last-Event-ID", "MCP-Protocol-Version", "Connection", "X-Other", "Mcp-Session",
		"Te", "Location", "Expect", "X-Accel-Buffering", "Accept-Encoding",
	};
	const size_t nn = sizeof(names) / sizeof(names[0]);
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	unsigned seed = 12345;

	for (int round = 0; round < 2000; round++) {
		char req[4096];
		size_t len = (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\n");
		int nh = (int)(rand_r(&seed) % 12), hosts = 0;
		for (int h = 0; h < nh; h++) {
			char name[64];
			const char *base = names[rand_r(&seed) % nn];
			size_t k;
			/* A second Host is refused (test_regress_i17_repeated_host). */
			if (base == names[0] && hosts++)
				base = "X-Other";
			for (k = 0; base[k]; k++)
				name[k] = (char)(rand_r(&seed) % 2 ? toupper((unsigned char)base[k])
				                                   : tolower((unsigned char)base[k]));
			name[k] = '\0';
			len += (size_t)snprintf(req + len, sizeof(req) - len, "%s: v%d\r\n", name, h);
		}
		len += (size_t)snprintf(req + len, sizeof(req) - len, "\r\n");
		size_t used;
		http_parser_reset(p);
		assert_int_equal(http_parser_feed(p, req, len, &used), HTTP_PARSE_DONE);
		const struct http_msg *m = http_parser_msg(p);
		for (size_t i = 0; i < nn; i++) {
			const char *want = scan_header(m, names[i]), *got = http_msg_header(m, names[i]);
			if (!want)
				assert_null(got);
			else
				assert_ptr_equal(got, want);
			enum http_hdr_id id = http_hdr_id(names[i], strlen(names[i]));
			if (id != HH_OTHER)
				assert_ptr_equal(http_msg_get(m, id), want);
		}
		assert_null(http_msg_get(m, HH_OTHER));
		for (size_t i = 0; i < http_msg_header_count(m); i++) {
			const char *n, *v;
			size_t nl, vl;
			http_msg_header_at(m, i, &n, &nl, &v, &vl);
			assert_int_equal(http_msg_header_id(m, i), http_hdr_id(n, nl));
		}
	}
	http_parser_free(p);
}

static void test_url_path(void **state)
{
	(void)state;
	char b[8];
	http_url_path(b, sizeof(b), "/mcp?session=1");
	assert_string_equal(b, "/mcp");
	http_url_path(b, sizeof(b), "/mcp");
	assert_string_equal(b, "/mcp");
	http_url_path(b, sizeof(b), "?q");
	assert_string_equal(b, "");
	http_url_path(b, sizeof(b), "/longer/than/eight?x");
	assert_string_equal(b, "/longer"); /* cut to fit, NUL-terminated */
}

static void test_header_value_whitespace_trimmed(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_REQUEST);

	run_whole(r, "GET / HTTP/1.1\r\nA: x \r\nB:\t y\t \t\r\nC:   \r\nD:\r\n"
	             "E: in  side \r\n\r\n");
	assert_string_equal(r->log, "{GET / v11 ka1 cl-1 [A=x][B=y][C=][D=][E=in  side] body=}");
	free(r);
}

static void test_header_value_trim_lookup(void **state)
{
	(void)state;
	static const char req[] = "GET / HTTP/1.1\r\nAccept: application/json \t \r\n\r\n";
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	size_t used;

	assert_int_equal(http_parser_feed(p, req, strlen(req), &used), HTTP_PARSE_DONE);
	assert_string_equal(http_msg_header(http_parser_msg(p), "accept"), "application/json");
	http_parser_free(p);
}

/* Regression (fixed in 87860bb): llhttp hands the trailer section of a
 * chunked message to the same callbacks as the header section, and trailer
 * fields used to be appended to the header list after on_headers ran, so a
 * client could pass what looks like a request header (Mcp-Session-Id,
 * Authorization...) in a trailer and have it forwarded upstream as one
 * (RFC 9110 §6.5.1: a recipient must not merge them). Trailers are not
 * header fields; their bytes still count against max_header_bytes. */
static void test_regress_trailer_fields_are_not_headers(void **state)
{
	(void)state;
	static const char req[] = "POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	                          "2\r\n{}\r\n0\r\nMcp-Session-Id: someone-else\r\n"
	                          "Authorization: Bearer x\r\n\r\n";
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	size_t used;

	enum http_parse_rc rc = http_parser_feed(p, req, strlen(req), &used);
	const struct http_msg *m = http_parser_msg(p);
	int sid = http_msg_header(m, "mcp-session-id") != NULL;
	int auth = http_msg_header(m, "authorization") != NULL;
	size_t count = http_msg_header_count(m);
	http_parser_free(p); /* before any assert, so a failure leaks nothing */
	assert_int_equal(rc, HTTP_PARSE_DONE);
	assert_int_equal(used, strlen(req));
	assert_int_equal(r0.body_len, 2);
	assert_false(sid);
	assert_false(auth);
	assert_int_equal(count, 1);
}

/* Header strings handed out in on_headers stay where they are while the
 * rest of the message goes by ("valid until the next reset").
 * Regression (fixed in 87860bb, same cause as above): trailers that made
 * the header buffer grow reallocated it under pointers taken in
 * on_headers. */
struct keep {
	const char *ctype;
	char copy[64];
};

static int keep_headers(void *arg, const struct http_msg *m)
{
	struct keep *k = arg;
	k->ctype = http_msg_header(m, "content-type");
	assert_non_null(k->ctype);
	snprintf(k->copy, sizeof(k->copy), "%s", k->ctype);
	return 0;
}

static const struct http_parser_cbs keep_cbs = {keep_headers, NULL};

static void test_regress_trailers_keep_header_buffer(void **state)
{
	(void)state;
	/* A trailer big enough that glibc serves the grown buffer from mmap, so
	 * it moves on every allocator, not only under valgrind/ASan. */
	enum { TRAILER = 200000 };
	size_t cap = TRAILER + 256;
	char *req = malloc(cap);
	struct keep k = {0};
	size_t used;

	assert_non_null(req);
	int n = snprintf(req, cap,
	                 "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n"
	                 "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Trailer: ");
	memset(req + n, 'a', TRAILER);
	memcpy(req + n + TRAILER, "\r\n\r\n", 5);
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 1u << 20, &keep_cbs, &k);
	enum http_parse_rc rc = http_parser_feed(p, req, strlen(req), &used);
	/* Compare addresses only: reading through a moved pointer would be the
	 * use-after-free itself. */
	const char *now = http_msg_header(http_parser_msg(p), "content-type");
	int moved = now != k.ctype;
	int same_text = now && strcmp(now, k.copy) == 0;
	http_parser_free(p);
	free(req);
	assert_int_equal(rc, HTTP_PARSE_DONE);
	assert_true(same_text);
	assert_false(moved);
}

/* ---- pipelining and bodies ----------------------------------------------- */

static void test_pipelined_requests(void **state)
{
	(void)state;
	static const char first[] = "POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
	static const char second[] = "GET /mcp HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n";
	char both[256];
	struct run r0 = {0};
	size_t used;

	r0.kind = HTTP_KIND_REQUEST;
	snprintf(both, sizeof(both), "%s%s", first, second);
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	assert_int_equal(http_parser_feed(p, both, strlen(both), &used), HTTP_PARSE_DONE);
	assert_int_equal(used, strlen(first));
	assert_true(used < strlen(both));
	assert_string_equal(http_msg_method(http_parser_msg(p)), "POST");
	assert_int_equal(r0.body_len, 2);
	http_parser_reset(p);
	r0.body_len = 0;
	assert_int_equal(http_parser_feed(p, both + used, strlen(both) - used, &used),
	                 HTTP_PARSE_DONE);
	assert_int_equal(used, strlen(second));
	assert_string_equal(http_msg_method(http_parser_msg(p)), "GET");
	assert_string_equal(http_msg_header(http_parser_msg(p), "accept"), "text/event-stream");
	assert_int_equal(r0.body_len, 0);
	http_parser_reset(p);
	/* Nothing left: the parser waits for the next message. */
	assert_int_equal(http_parser_feed(p, "", 0, &used), HTTP_PARSE_MORE);
	assert_int_equal(http_parser_started(p), 0);
	http_parser_free(p);
}

static void test_chunked_body_dechunked(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_RESPONSE);

	run_whole(r, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	             "5\r\nhello\r\n1;name=val\r\n \r\nA\r\n0123456789\r\n0\r\n\r\n");
	assert_string_equal(r->log,
	                    "{200 v11 ka1 cl-1 [Transfer-Encoding=chunked] body=hello 0123456789}");
	free(r);
}

static void test_content_length(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_REQUEST);

	run_whole(r, "GET / HTTP/1.1\r\n\r\n");
	assert_string_equal(r->log, "{GET / v11 ka1 cl-1  body=}");
	run_whole(r, "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(r->log, "{POST / v11 ka1 cl0 [Content-Length=0] body=}");
	run_whole(r, "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
	assert_string_equal(r->log, "{POST / v11 ka1 cl3 [Content-Length=3] body=abc}");
	free(r);
}

/* Request smuggling guards come from llhttp; make sure nothing disables them. */
static void test_ambiguous_length_rejected(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_REQUEST);

	run_whole(r, "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
	             "0\r\n\r\n");
	assert_string_equal(r->log, "error=1");
	run_whole(r, "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd");
	assert_string_equal(r->log, "error=1");
	run_whole(r, "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n");
	assert_string_equal(r->log, "error=1");
	free(r);
}

static void test_close_delimited_response(void **state)
{
	(void)state;
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":";
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_RESPONSE, 0, &test_cbs, &r0);
	size_t used;

	assert_int_equal(http_parser_feed(p, resp, strlen(resp), &used), HTTP_PARSE_MORE);
	assert_int_equal(used, strlen(resp));
	assert_int_equal(http_parser_feed(p, "1}", 2, &used), HTTP_PARSE_MORE);
	assert_int_equal(http_msg_keep_alive(http_parser_msg(p)), 0);
	assert_int_equal(http_msg_content_length(http_parser_msg(p)), -1);
	assert_int_equal(http_parser_finish(p), HTTP_PARSE_DONE);
	assert_int_equal(r0.body_len, 7);
	assert_memory_equal(r0.body, "{\"a\":1}", 7);
	/* Asking again says the same. */
	assert_int_equal(http_parser_finish(p), HTTP_PARSE_DONE);
	http_parser_free(p);
}

static void test_finish_cases(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_RESPONSE);

	r->finish = 1;
	/* Nothing seen: MORE. */
	run_whole(r, "");
	assert_string_equal(r->log, "finish=0");
	/* Cut inside the status line, the headers or a counted/chunked body. */
	run_whole(r, "HTTP/1.1 20");
	assert_string_equal(r->log, "finish=-1 error=1");
	run_whole(r, "HTTP/1.1 200 OK\r\nContent-Le");
	assert_string_equal(r->log, "finish=-1 error=1");
	run_whole(r, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
	assert_string_equal(r->log, "finish=-1 error=1");
	run_whole(r, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
	assert_string_equal(r->log, "finish=-1 error=1");
	/* A request cannot be close-delimited. */
	r->kind = HTTP_KIND_REQUEST;
	run_whole(r, "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab");
	assert_string_equal(r->log, "finish=-1 error=1");
	free(r);
}

/* Regression (fixed in 87860bb): finish returns MORE "if nothing was in
 * progress", but right after a message completed and http_parser_reset(),
 * llhttp has not yet run past its after-message state ("unsafe to finish"
 * until the next llhttp_execute), and finish used to report a syntax error
 * ("Invalid EOF state") for a peer that closed cleanly between messages;
 * the outcome then depended on whether an empty feed came in between. */
static void test_regress_finish_after_reset_is_more(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_RESPONSE);

	char resp_log[LOG_MAX], req_log[LOG_MAX];

	r->finish = 1;
	run_whole(r, "HTTP/1.1 204 No Content\r\n\r\n");
	memcpy(resp_log, r->log, r->len + 1);
	r->kind = HTTP_KIND_REQUEST;
	run_whole(r, "GET / HTTP/1.1\r\n\r\n");
	memcpy(req_log, r->log, r->len + 1);
	free(r);
	assert_string_equal(resp_log, "{204 v11 ka1 cl-1  body=}finish=0");
	assert_string_equal(req_log, "{GET / v11 ka1 cl-1  body=}finish=0");
}

/* ---- limits and errors -------------------------------------------------- */

/* The header block buffer holds "url\0name\0value\0..." and never grows
 * past max_header_bytes. */
static void test_headers_too_big_boundary(void **state)
{
	(void)state;
	static const char req[] = "GET /abc HTTP/1.1\r\nHost: h\r\nX-Long: 0123456789\r\n\r\n";
	/* "/abc\0" 5 + "Host\0h\0" 7 + "X-Long\00123456789\0" 18 = 30 */
	struct run *r = run_new(HTTP_KIND_REQUEST);

	r->max_hdr = 30;
	run_whole(r, req);
	assert_string_equal(r->log, "{GET /abc v11 ka1 cl-1 [Host=h][X-Long=0123456789] body=}");
	r->max_hdr = 29;
	run_whole(r, req);
	assert_string_equal(r->log, "error=2");
	check_every_split(r, req);
	free(r);
}

static void test_headers_too_big(void **state)
{
	(void)state;
	char big[LIMIT_MAX_HEADER_BYTES + 200];
	struct run r0 = {0};
	size_t used;

	/* One huge header over the default cap. */
	int n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Big: ");
	memset(big + n, 'a', LIMIT_MAX_HEADER_BYTES);
	memcpy(big + n + LIMIT_MAX_HEADER_BYTES, "\r\n\r\n", 5);
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	assert_int_equal(http_parser_feed(p, big, strlen(big), &used), HTTP_PARSE_ERROR);
	assert_int_equal(http_parser_error(p), HTTP_ERR_HEADERS_TOO_BIG);
	assert_string_not_equal(http_parser_reason(p), "no error");
	/* Errors are sticky. */
	assert_int_equal(http_parser_feed(p, "GET / HTTP/1.1\r\n\r\n", 18, &used), HTTP_PARSE_ERROR);
	assert_int_equal(used, 0);
	assert_int_equal(http_parser_finish(p), HTTP_PARSE_ERROR);
	assert_int_equal(http_parser_error(p), HTTP_ERR_HEADERS_TOO_BIG);
	http_parser_free(p);

	/* A long URL counts too; so does a response's headers. */
	struct run *r = run_new(HTTP_KIND_REQUEST);
	r->max_hdr = 64;
	run_whole(r, "GET /0123456789012345678901234567890123456789012345678901234567890123 "
	             "HTTP/1.1\r\n\r\n");
	assert_string_equal(r->log, "error=2");
	r->kind = HTTP_KIND_RESPONSE;
	run_whole(r, "HTTP/1.1 200 OK\r\nX-A: 01234567890123456789\r\nX-B: 01234567890123456789"
	             "\r\nX-C: 01234567890123456789\r\n\r\n");
	assert_string_equal(r->log, "error=2");
	free(r);
}

static void test_too_many_headers(void **state)
{
	(void)state;
	size_t cap = 64 + (LIMIT_MAX_HEADERS + 1) * 16;
	char *req = malloc(cap);
	struct run *r = run_new(HTTP_KIND_REQUEST);
	size_t n;

	assert_non_null(req);
	n = (size_t)snprintf(req, cap, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < LIMIT_MAX_HEADERS; i++)
		n += (size_t)snprintf(req + n, cap - n, "X-%d: v\r\n", i);
	memcpy(req + n, "\r\n", 3);
	assert_int_equal(run_whole(r, req), 1);
	assert_non_null(strstr(r->log, "[X-99=v]"));

	n += (size_t)snprintf(req + n, cap - n, "X-%d: v\r\n\r\n", LIMIT_MAX_HEADERS);
	run_whole(r, req);
	assert_string_equal(r->log, "error=2");
	free(r);
	free(req);
}

static void test_malformed_request_line(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"GET/ HTTP/1.1\r\n\r\n",
		"GARBAGE\r\n\r\n",
		"GET / HTTP/1.1 extra\r\n\r\n",
		"GET / FTP/1.1\r\n\r\n",
		"GET /\x01 HTTP/1.1\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", /* TLS ClientHello */
		"GET / HTTP/1.1\r\nContent-Length : 0\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
		"GET / HTTP/1.1\nHost: a\n\n\x01",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run r0 = {0};
		struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
		size_t used = 1;
		enum http_parse_rc rc = http_parser_feed(p, bad[i], strlen(bad[i]), &used);
		if (rc == HTTP_PARSE_DONE) {
			/* A bare-LF request: then the junk after it is the error. */
			http_parser_reset(p);
			const char *rest = bad[i] + used;
			rc = http_parser_feed(p, rest, strlen(rest), &used);
		}
		if (rc != HTTP_PARSE_ERROR)
			print_error("input %zu was accepted\n", i);
		assert_int_equal(rc, HTTP_PARSE_ERROR);
		assert_int_equal(used, 0);
		assert_int_equal(http_parser_error(p), HTTP_ERR_SYNTAX);
		assert_non_null(http_parser_reason(p));
		assert_string_not_equal(http_parser_reason(p), "no error");
		http_parser_free(p);
	}
}

static void test_malformed_status_line(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_RESPONSE);

	run_whole(r, "HTTP/1.1 OK\r\n\r\n");
	assert_string_equal(r->log, "error=1");
	run_whole(r, "<html>hello</html>");
	assert_string_equal(r->log, "error=1");
	run_whole(r, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
	assert_string_equal(r->log, "error=1");
	free(r);
}

static void test_body_too_big(void **state)
{
	(void)state;
	static const char req[] = "POST /mcp HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789";
	struct run *r = run_new(HTTP_KIND_REQUEST);

	r->body_cap = 10;
	run_whole(r, req);
	assert_string_equal(r->log, "{POST /mcp v11 ka1 cl10 [Content-Length=10] body=0123456789}");
	r->body_cap = 9;
	run_whole(r, req);
	assert_string_equal(r->log, "error=3");
	check_every_split(r, req);
	/* Any other negative value is a refusal. */
	r->body_rc = -1;
	run_whole(r, req);
	assert_string_equal(r->log, "error=4");
	free(r);
}

static void test_on_headers_refuses(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_REQUEST);

	r->headers_rc = -1;
	run_whole(r, "POST / HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n");
	assert_string_equal(r->log, "error=4");
	assert_int_equal(r->body_calls, 0);
	free(r);
}

/* on_headers returning 1: the response to a HEAD has no body, whatever its
 * Content-Length says, and the next response follows at once. */
static void test_head_response_skips_body(void **state)
{
	(void)state;
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
	                           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	struct run *r = run_new(HTTP_KIND_RESPONSE);

	r->headers_rc = 1;
	assert_int_equal(run_whole(r, resp), 2);
	assert_string_equal(r->log, "{200 v11 ka1 cl1234 [Content-Length=1234] body=}"
	                            "{200 v11 ka1 cl-1 [Transfer-Encoding=chunked] body=}");
	assert_int_equal(r->body_calls, 0);
	assert_int_equal(r->last_consumed, strlen("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"));
	check_every_split(r, resp);
	free(r);
}

/* Regression (fixed in 87860bb): feeding again after DONE without
 * http_parser_reset() used to return DONE with *consumed computed from
 * llhttp_get_error_pos(), which still pointed into the previous buffer:
 * garbage, usually far larger than len. Now DONE with nothing consumed. */
static void test_regress_feed_after_done_without_reset(void **state)
{
	(void)state;
	static const char first[] = "GET /a HTTP/1.1\r\n\r\n";
	char second[64];
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	size_t used;

	snprintf(second, sizeof(second), "GET /b HTTP/1.1\r\n\r\n");
	enum http_parse_rc rc1 = http_parser_feed(p, first, strlen(first), &used);
	enum http_parse_rc rc2 = http_parser_feed(p, second, strlen(second), &used);
	/* Still the first message. */
	int still_a = strcmp(http_msg_url(http_parser_msg(p)), "/a") == 0;
	http_parser_free(p);
	assert_int_equal(rc1, HTTP_PARSE_DONE);
	assert_int_equal(rc2, HTTP_PARSE_DONE);
	assert_true(used <= strlen(second));
	assert_int_equal(used, 0);
	assert_true(still_a);
}

/* Regression (fixed in 87860bb): the proxy never switches protocols
 * (Upgrade and Connection are hop-by-hop and dropped; RFC 9110 §7.8 lets a
 * server ignore Upgrade), so a request carrying "Upgrade:" (curl --http2 on
 * http:// sends "Connection: Upgrade, HTTP2-Settings" + "Upgrade: h2c") is
 * answered as plain HTTP/1.1. llhttp still treated it as an upgrade, so
 * the next request on that keep-alive connection failed ("Pause on
 * CONNECT/Upgrade", a 400), as did even an empty feed after the reset
 * (found by fuzz_http_request). CONNECT likewise: the proxy never tunnels. */
static void test_regress_upgrade_request_keeps_keep_alive(void **state)
{
	(void)state;
	static const char reqs[] = "GET /mcp HTTP/1.1\r\nHost: h\r\n"
	                           "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
	                           "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"
	                           "POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
	static const char one[] = "GET /mcp HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
	struct run *r = run_new(HTTP_KIND_REQUEST);
	char upgrade_log[LOG_MAX], empty_feed_log[LOG_MAX];
	size_t upgrade_n, connect_n, cut = strlen(one);

	upgrade_n = run_whole(r, reqs);
	memcpy(upgrade_log, r->log, r->len + 1);
	connect_n = run_whole(r, "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n"
	                         "GET /mcp HTTP/1.1\r\n\r\n");
	/* An empty feed right after the message must not change anything. */
	run_feed(r, one, strlen(one), &cut, 1);
	memcpy(empty_feed_log, r->log, r->len + 1);
	free(r);
	assert_string_equal(upgrade_log, "{GET /mcp v11 ka1 cl-1 [Host=h]"
	                                 "[Connection=Upgrade, HTTP2-Settings][Upgrade=h2c]"
	                                 "[HTTP2-Settings=AAMAAABkAAQCAAAAAAIAAAAA] body=}"
	                                 "{POST /mcp v11 ka1 cl2 [Content-Length=2] body={}}");
	assert_int_equal(upgrade_n, 2);
	assert_int_equal(connect_n, 2);
	assert_string_equal(empty_feed_log,
	                    "{GET /mcp v11 ka1 cl-1 [Connection=Upgrade][Upgrade=h2c] body=}");
}

/* ---- header spans without the *_complete callbacks ---------------------- */

/* check_every_split's single cuts and byte-at-a-time feed only: for heads
 * too long for every pair of cuts. */
static void check_one_cut_splits(const struct run *tmpl, const char *data)
{
	size_t len = strlen(data);
	struct run *whole = malloc(sizeof(*whole)), *r = malloc(sizeof(*r));
	size_t *cuts = malloc((len + 1) * sizeof(*cuts));

	assert_non_null(whole);
	assert_non_null(r);
	assert_non_null(cuts);
	*whole = *tmpl;
	run_feed(whole, data, len, NULL, 0);
	for (size_t i = 0; i <= len; i++) {
		*r = *tmpl;
		run_feed(r, data, len, &i, 1);
		if (strcmp(r->log, whole->log) != 0) {
			print_error("cut at %zu:\n  got  %s\n  want %s\n", i, r->log, whole->log);
			fail();
		}
	}
	for (size_t i = 0; i < len; i++)
		cuts[i] = i + 1;
	*r = *tmpl;
	run_feed(r, data, len, cuts, len);
	assert_string_equal(r->log, whole->log);
	free(cuts);
	free(r);
	free(whole);
}

/* A name or a value may come in pieces over several feeds (a piece may
 * be empty: a feed that ends right before the ':'). Names and values of
 * every size the copy takes a different way for (0 to 3, 4 to 7, 8 to 16,
 * 17 to 32, over 32 bytes), split at every byte and every pair of bytes. */
static void test_header_split_every_byte(void **state)
{
	(void)state;
	static const char req[] = "GET /mcp HTTP/1.1\r\n"
	                          "H: a\r\n"
	                          "Host: abcdefg\r\n"
	                          "Content-Type: application/json\r\n"
	                          "X-Sixteen-Bytes!: 0123456789abcdefghijklmnopqrstuv\r\n"
	                          "X-Seventeen-Bytes: 0123456789abcdefghijklmnopqrstuvw\r\n"
	                          "Mcp-Session-Id: 0123456789abcdef\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\n"
	                           "Ab: 123\r\n"
	                           "Connection: keep-alive\r\n"
	                           "Content-Length: 2\r\n\r\nok";
	struct run *t = run_new(HTTP_KIND_REQUEST);

	run_whole(t, req);
	assert_string_equal(t->log, "{GET /mcp v11 ka1 cl-1 [H=a][Host=abcdefg]"
	                            "[Content-Type=application/json]"
	                            "[X-Sixteen-Bytes!=0123456789abcdefghijklmnopqrstuv]"
	                            "[X-Seventeen-Bytes=0123456789abcdefghijklmnopqrstuvw]"
	                            "[Mcp-Session-Id=0123456789abcdef] body=}");
	check_every_split(t, req);
	t->kind = HTTP_KIND_RESPONSE;
	run_whole(t, resp);
	assert_string_equal(t->log, "{200 v11 ka1 cl2 [Ab=123][Connection=keep-alive]"
	                            "[Content-Length=2] body=ok}");
	check_every_split(t, resp);
	free(t);
}

/* Empty values first, in the middle and last (the last one is completed by
 * the end of the head, not by a next name), alone, and for known names
 * (a lookup gives "", not NULL); whole or split anywhere. */
static void test_empty_values(void **state)
{
	(void)state;
	static const char req[] = "GET / HTTP/1.1\r\nA:\r\nB: x\r\nC:\r\nD: y\r\nE:\r\n\r\n";
	static const char alone[] = "GET / HTTP/1.1\r\nX-Empty:\r\n\r\n";
	static const char known[] = "HTTP/1.1 200 OK\r\nMcp-Session-Id:\r\nContent-Type: \r\n"
	                            "Content-Length: 0\r\nAccept:\r\n\r\n";
	struct run *t = run_new(HTTP_KIND_REQUEST);

	run_whole(t, req);
	assert_string_equal(t->log, "{GET / v11 ka1 cl-1 [A=][B=x][C=][D=y][E=] body=}");
	check_every_split(t, req);
	run_whole(t, alone);
	assert_string_equal(t->log, "{GET / v11 ka1 cl-1 [X-Empty=] body=}");
	check_every_split(t, alone);
	t->kind = HTTP_KIND_RESPONSE;
	run_whole(t, known);
	assert_string_equal(t->log, "{200 v11 ka1 cl0 [Mcp-Session-Id=][Content-Type=]"
	                            "[Content-Length=0][Accept=] body=}");
	check_every_split(t, known);
	free(t);

	struct http_parser *p = http_parser_new(HTTP_KIND_RESPONSE, 0, &test_cbs, &(struct run){0});
	size_t used;
	assert_int_equal(http_parser_feed(p, known, strlen(known), &used), HTTP_PARSE_DONE);
	const struct http_msg *m = http_parser_msg(p);
	assert_string_equal(http_msg_get(m, HH_MCP_SESSION_ID), "");
	assert_string_equal(http_msg_get(m, HH_CONTENT_TYPE), "");
	assert_string_equal(http_msg_get(m, HH_ACCEPT), "");
	assert_string_equal(http_msg_get(m, HH_CONTENT_LENGTH), "0");
	http_parser_free(p);
}

/* A value of blanks only is empty, also when the blanks come on an
 * obs-fold line of their own (llhttp hands those to on_header_value as a
 * second span of the same value, which trimming must see whole). */
static void test_value_only_blanks(void **state)
{
	(void)state;
	static const char req[] = "GET / HTTP/1.1\r\n"
	                          "X:  \t \r\n"
	                          "Y: \r\n  \t\r\n"
	                          "Z:a\r\n \r\n"
	                          "W: a \t\r\n\t b \r\n"
	                          "V: \t\r\n\r\n";
	struct run *t = run_new(HTTP_KIND_REQUEST);

	run_whole(t, req);
	assert_string_equal(t->log, "{GET / v11 ka1 cl-1 [X=][Y=][Z=a][W=a \\x09\\x09 b][V=] body=}");
	check_every_split(t, req);
	free(t);
}

/* Trailers are not headers, but their name and value bytes count against
 * the cap with the head's: one byte under the cap is refused, split
 * anywhere. Head "/mcp\0" 5 + "Transfer-Encoding\0chunked\0" 26 = 31;
 * trailers "X-T" "abc" 6 + "Y" "" 1 = 38. */
static void test_trailers_counted_every_split(void **state)
{
	(void)state;
	static const char req[] = "POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	                          "2\r\n{}\r\n0\r\nX-T: abc\r\nY:\r\n\r\n";
	struct run *t = run_new(HTTP_KIND_REQUEST);

	t->max_hdr = 38;
	run_whole(t, req);
	assert_string_equal(t->log, "{POST /mcp v11 ka1 cl-1 [Transfer-Encoding=chunked] body={}}");
	check_every_split(t, req);
	t->max_hdr = 37;
	run_whole(t, req);
	assert_string_equal(t->log, "error=2");
	check_every_split(t, req);
	free(t);
}

/* LIMIT_MAX_HEADERS headers pass, the last one empty or not; one more is
 * refused, even an empty one, fed in one piece or cut anywhere. */
static void test_header_count_limit_every_split(void **state)
{
	(void)state;
	size_t cap = 64 + (LIMIT_MAX_HEADERS + 1) * 16;
	char *req = malloc(cap);
	struct run *t = run_new(HTTP_KIND_REQUEST);
	size_t n, last;

	assert_non_null(req);
	n = (size_t)snprintf(req, cap, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < LIMIT_MAX_HEADERS - 1; i++)
		n += (size_t)snprintf(req + n, cap - n, "X-%d: v\r\n", i);
	last = n;
	n += (size_t)snprintf(req + n, cap - n, "L:\r\n\r\n");
	assert_int_equal(run_whole(t, req), 1);
	assert_non_null(strstr(t->log, "[X-98=v][L=] body=}"));
	check_one_cut_splits(t, req);

	n = last + (size_t)snprintf(req + last, cap - last, "L: v\r\nM:\r\n\r\n");
	run_whole(t, req);
	assert_string_equal(t->log, "error=2");
	check_one_cut_splits(t, req);
	free(t);
	free(req);
}

/* The cap counts a value's bytes as they come, trailing blanks included
 * (they are trimmed once the value is complete): "/abc\0" 5, "X\0" 2,
 * "ab" and six blanks 8, room for the NUL 1 = 16, though the block ends at
 * 10 bytes. */
static void test_header_size_limit_every_split(void **state)
{
	(void)state;
	static const char req[] = "GET /abc HTTP/1.1\r\nX: ab      \r\n\r\n";
	struct run *t = run_new(HTTP_KIND_REQUEST);

	t->max_hdr = 16;
	run_whole(t, req);
	assert_string_equal(t->log, "{GET /abc v11 ka1 cl-1 [X=ab] body=}");
	check_every_split(t, req);
	t->max_hdr = 15;
	run_whole(t, req);
	assert_string_equal(t->log, "error=2");
	check_every_split(t, req);
	free(t);
}

/* A parser holds 24 headers without a table of its own and takes one at
 * the 25th (issue 20: an idle stream's two parsers). Every header reads
 * back across the step, the Host an HTTP/1.0 absolute-form request gets
 * may be the one that takes it, and the next message on the connection
 * (the parser reset, its table kept) reads as well; cut anywhere too. */
static void test_header_table_grows_past_inline(void **state)
{
	(void)state;
	for (int k = 23; k <= 26; k++) {
		char req[2048], want[2048];
		size_t n = (size_t)snprintf(req, sizeof(req), "GET http://h.example/x HTTP/1.0\r\n");
		size_t w = (size_t)snprintf(want, sizeof(want), "{GET /x v10 ka1 cl-1 ");
		for (int i = 0; i < k; i++) {
			n += (size_t)snprintf(req + n, sizeof(req) - n, "X-%d: v%d\r\n", i, i);
			w += (size_t)snprintf(want + w, sizeof(want) - w, "[X-%d=v%d]", i, i);
		}
		n += (size_t)snprintf(req + n, sizeof(req) - n,
		                      "Connection: keep-alive\r\n\r\nGET /y HTTP/1.1\r\nHost: a\r\n\r\n");
		snprintf(want + w, sizeof(want) - w,
		         "[Connection=keep-alive][Host=h.example] body=}{GET /y v11 ka1 cl-1 [Host=a] body=}");
		struct run *t = run_new(HTTP_KIND_REQUEST);
		assert_int_equal(run_whole(t, req), 2);
		assert_string_equal(t->log, want);
		check_one_cut_splits(t, req);
		free(t);
	}
}

/* An invalid field name is refused in the feed that brings its ':', as
 * before: the name is complete there, whatever follows (nothing yet, an
 * empty value, the end of the head). llhttp refuses most bad bytes itself
 * at once; a space it lets through, and that is ours to refuse. */
static void test_invalid_name_refused_at_colon(void **state)
{
	(void)state;
	static const char *const heads[] = {
		"GET / HTTP/1.1\r\nBad Name:",
		"GET / HTTP/1.1\r\nHost: a\r\nContent Type:",
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nMcp Session-Id:",
	};
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		enum http_kind kind = heads[i][0] == 'H' ? HTTP_KIND_RESPONSE : HTTP_KIND_REQUEST;
		struct http_parser *p = http_parser_new(kind, 0, &test_cbs, &(struct run){0});
		size_t len = strlen(heads[i]), used;
		/* Up to the ':' the name may still go on: not refused yet. */
		assert_int_equal(http_parser_feed(p, heads[i], len - 1, &used), HTTP_PARSE_MORE);
		enum http_parse_rc rc = http_parser_feed(p, heads[i] + len - 1, 1, &used);
		enum http_parse_err err = http_parser_error(p);
		http_parser_free(p);
		if (rc != HTTP_PARSE_ERROR)
			print_error("head %zu: not refused at its ':'\n", i);
		assert_int_equal(rc, HTTP_PARSE_ERROR);
		assert_int_equal(err, HTTP_ERR_SYNTAX);
	}

	static const char *const msgs[] = {
		"GET / HTTP/1.1\r\nA: b\r\nBad Name:\r\n\r\n",
		"GET / HTTP/1.1\r\nX Y: v\r\nA:\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA:\r\nContent Type:\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		struct run *t = run_new(msgs[i][0] == 'H' ? HTTP_KIND_RESPONSE : HTTP_KIND_REQUEST);
		run_whole(t, msgs[i]);
		assert_string_equal(t->log, "error=1");
		check_every_split(t, msgs[i]);
		free(t);
	}
}

/* ---- keep-alive and interim responses ------------------------------------ */

static void test_keep_alive(void **state)
{
	(void)state;
	static const struct {
		const char *msg;
		int version, ka;
	} cases[] = {
		{"GET / HTTP/1.1\r\n\r\n", 11, 1},
		{"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 11, 0},
		{"GET / HTTP/1.1\r\nConnection: CLOSE\r\n\r\n", 11, 0},
		{"GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", 11, 1},
		{"GET / HTTP/1.0\r\n\r\n", 10, 0},
		{"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 10, 1},
		{"GET / HTTP/1.0\r\nConnection: close\r\n\r\n", 10, 0},
	};
	struct run r0 = {0};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
		size_t used;
		assert_int_equal(http_parser_feed(p, cases[i].msg, strlen(cases[i].msg), &used),
		                 HTTP_PARSE_DONE);
		assert_int_equal(http_msg_version(http_parser_msg(p)), cases[i].version);
		if (http_msg_keep_alive(http_parser_msg(p)) != cases[i].ka)
			print_error("case %zu\n", i);
		assert_int_equal(http_msg_keep_alive(http_parser_msg(p)), cases[i].ka);
		http_parser_free(p);
	}

	struct run *r = run_new(HTTP_KIND_RESPONSE);
	run_whole(r, "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(r->log, "{200 v10 ka0 cl0 [Content-Length=0] body=}");
	run_whole(r, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(r->log, "{200 v11 ka0 cl0 [Connection=close][Content-Length=0] body=}");
	free(r);
}

static void test_interim_response(void **state)
{
	(void)state;
	static const char resp[] = "HTTP/1.1 100 Continue\r\n\r\n"
	                           "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
	                           "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	struct run *r = run_new(HTTP_KIND_RESPONSE);

	assert_int_equal(run_whole(r, resp), 3);
	assert_string_equal(r->log, "{100 v11 ka1 cl-1  body=}"
	                            "{103 v11 ka1 cl-1 [Link=</s.css>; rel=preload] body=}"
	                            "{200 v11 ka1 cl2 [Content-Length=2] body=ok}");
	assert_int_equal(r->last_consumed, strlen("HTTP/1.1 100 Continue\r\n\r\n"));
	check_every_split(r, resp);
	free(r);
}

static void test_no_body_statuses(void **state)
{
	(void)state;
	struct run *r = run_new(HTTP_KIND_RESPONSE);

	/* 204 and 304 end at their headers, even without Content-Length. */
	assert_int_equal(run_whole(r, "HTTP/1.1 204 No Content\r\n\r\n"
	                              "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"),
	                 2);
	assert_string_equal(r->log, "{204 v11 ka1 cl-1  body=}{304 v11 ka1 cl-1 [ETag=\"x\"] body=}");
	free(r);
}

static void test_started(void **state)
{
	(void)state;
	struct run r0 = {0};
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &r0);
	size_t used;

	assert_int_equal(http_parser_started(p), 0);
	assert_int_equal(http_parser_feed(p, "", 0, &used), HTTP_PARSE_MORE);
	assert_int_equal(http_parser_started(p), 0);
	assert_int_equal(http_parser_feed(p, "P", 1, &used), HTTP_PARSE_MORE);
	assert_int_equal(used, 1);
	assert_int_equal(http_parser_started(p), 1);
	assert_int_equal(http_parser_feed(p, "UT /x HTTP/1.1\r\n\r\n", 18, &used), HTTP_PARSE_DONE);
	assert_string_equal(http_msg_method(http_parser_msg(p)), "PUT");
	http_parser_reset(p);
	assert_int_equal(http_parser_started(p), 0);
	http_parser_free(p);
}

/* The Connection list walk both the parser and the filters use. */
static void test_list_tokens(void **state)
{
	(void)state;
	/* Separators run together (",," yields no empty token in the
	 * middle); only a trailing separator yields one. */
	const char *want[] = {"keep-alive", "X-Foo", "te", ""};
	const char *c = " keep-alive,X-Foo ,,\tte ,";
	const char *t;
	size_t n, i = 0;
	while ((t = http_list_token(&c, &n))) {
		assert_true(i < 4);
		assert_int_equal(n, strlen(want[i]));
		assert_memory_equal(t, want[i], n);
		i++;
	}
	assert_int_equal(i, 4);
	c = "";
	assert_null(http_list_token(&c, &n));
	c = "close";
	assert_non_null(t = http_list_token(&c, &n));
	assert_int_equal(n, 5);
	assert_null(http_list_token(&c, &n));
}

/* ---- issue 17: strict where RFC 9112 says MUST --------------------------- */

/* Runs in whole and every split, and expects the same log. */
static void expect_log(enum http_kind kind, const char *in, const char *want)
{
	struct run *t = run_new(kind);
	run_whole(t, in);
	if (strcmp(t->log, want) != 0)
		print_error("input %s\n", in);
	assert_string_equal(t->log, want);
	check_every_split(t, in);
	free(t);
}

/* ": v" was kept as a header with an empty name and forwarded. */
static void test_regress_i17_empty_header_name(void **state)
{
	(void)state;
	expect_log(HTTP_KIND_REQUEST, "GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", "error=1");
	expect_log(HTTP_KIND_REQUEST, "GET / HTTP/1.1\r\n: v\r\nHost: a\r\n\r\n", "error=1");
	expect_log(HTTP_KIND_REQUEST, "GET / HTTP/1.1\r\nHost: a\r\n:\r\n\r\n", "error=1");
	expect_log(HTTP_KIND_RESPONSE, "HTTP/1.1 200 OK\r\n: v\r\nContent-Length: 0\r\n\r\n",
	           "error=1");
}

/* Two Host lines (same value or not) were both accepted (RFC 9112 §3.2:
 * 400); so was a Host that is not a uri-host[:port]. */
static void test_regress_i17_repeated_host(void **state)
{
	(void)state;
	expect_log(HTTP_KIND_REQUEST, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "error=1");
	expect_log(HTTP_KIND_REQUEST, "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nhost: a\r\n\r\n",
	           "error=1");
	static const char *const bad[] = {"a b", "a/b", "a@b", "a?b", "caf\xc3\xa9", "a\x01", "a\\b"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char in[128];
		snprintf(in, sizeof(in), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", bad[i]);
		expect_log(HTTP_KIND_REQUEST, in, "error=1");
	}
	/* Names, addresses, ports: fine; so is an empty value (no authority). */
	expect_log(HTTP_KIND_REQUEST,
	           "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\nGET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	           "GET / HTTP/1.1\r\nHost: mcp.example-1.com:443\r\n\r\nGET / HTTP/1.1\r\nHost:\r\n\r\n",
	           "{GET / v11 ka1 cl-1 [Host=[::1]:8080] body=}{GET / v11 ka1 cl-1 [Host=127.0.0.1] body=}"
	           "{GET / v11 ka1 cl-1 [Host=mcp.example-1.com:443] body=}{GET / v11 ka1 cl-1 [Host=] body=}");
	/* A response's Host is not looked at. */
	expect_log(HTTP_KIND_RESPONSE, "HTTP/1.1 204 No Content\r\nHost: a\r\nHost: b\r\n\r\n",
	           "{204 v11 ka1 cl-1 [Host=a][Host=b] body=}");
}

/* Repeats of every known name are noted for the caller, which refuses
 * those it decides on (conn.c); unknown names are not tracked. */
static void test_regress_i17_repeated_known_headers(void **state)
{
	(void)state;
	static const char req[] = "POST / HTTP/1.1\r\nHost: a\r\nMcp-Session-Id: s1\r\nX-A: 1\r\n"
	                          "Authorization: Bearer t\r\nmcp-session-id: s2\r\nX-A: 2\r\n"
	                          "Content-Type: application/json\r\nContent-Length: 0\r\n\r\n";
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &(struct run){0});
	size_t used;
	assert_int_equal(http_parser_feed(p, req, strlen(req), &used), HTTP_PARSE_DONE);
	const struct http_msg *m = http_parser_msg(p);
	assert_true(http_msg_repeated(m, HH_MCP_SESSION_ID));
	assert_false(http_msg_repeated(m, HH_AUTHORIZATION));
	assert_false(http_msg_repeated(m, HH_HOST));
	assert_false(http_msg_repeated(m, HH_CONTENT_TYPE));
	assert_false(http_msg_repeated(m, HH_OTHER));
	assert_false(http_msg_repeated(m, HH__COUNT));
	assert_int_equal(http_msg_repeats(m), 1u << HH_MCP_SESSION_ID);
	assert_string_equal(http_msg_get(m, HH_MCP_SESSION_ID), "s1");
	/* Cleared by a reset. */
	http_parser_reset(p);
	static const char next[] = "GET / HTTP/1.1\r\nHost: a\r\nMcp-Session-Id: s1\r\n\r\n";
	assert_int_equal(http_parser_feed(p, next, strlen(next), &used), HTTP_PARSE_DONE);
	assert_false(http_msg_repeated(http_parser_msg(p), HH_MCP_SESSION_ID));
	assert_int_equal(http_msg_repeats(http_parser_msg(p)), 0);
	http_parser_free(p);
}

/* HTTP/2.0 and HTTP/0.9 request lines were accepted (llhttp parses
 * them); HTTP/1.2 was a plain 400. All are HTTP_ERR_VERSION (505) now; a
 * malformed version stays a syntax error. */
static void test_regress_i17_version(void **state)
{
	(void)state;
	static const char *const unsupported[] = {"HTTP/2.0", "HTTP/0.9", "HTTP/1.2", "HTTP/3.0"};
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		char in[128];
		snprintf(in, sizeof(in), "POST /mcp %s\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}",
		         unsupported[i]);
		expect_log(HTTP_KIND_REQUEST, in, "error=5");
	}
	static const char *const malformed[] = {"HTTP/1.x", "HTTP/1", "HTTP/x.1"};
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		char in[128];
		snprintf(in, sizeof(in), "GET / %s\r\nHost: a\r\n\r\n", malformed[i]);
		expect_log(HTTP_KIND_REQUEST, in, "error=1");
	}
	expect_log(HTTP_KIND_REQUEST, "GET / HTTP/1.0\r\n\r\n", "{GET / v10 ka0 cl-1  body=}");
	/* Responses keep llhttp's rules. */
	expect_log(HTTP_KIND_RESPONSE, "HTTP/2.0 204 No Content\r\n\r\n",
	           "{204 v20 ka0 cl-1  body=}");
}

/* Chunk data not followed by CRLF: llhttp skipped the two bytes unread,
 * so "3\r\nabcXY5\r\nhello\r\n0\r\n\r\n" was the body "abchello". */
static void test_regress_i17_chunk_data_crlf(void **state)
{
	(void)state;
	static const char *const bodies[] = {
		"3\r\nabcXY5\r\nhello\r\n0\r\n\r\n",
		"3\r\nabc\nX5\r\nhello\r\n0\r\n\r\n",
		"3\r\nabc\r\r0\r\n\r\n",
		"3\r\nabc\n\r\n0\r\n\r\n",
		"3\r\nabc0\r\n\r\n",
	};
	for (int kind = 0; kind < 2; kind++) {
		for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
			char in[256];
			snprintf(in, sizeof(in), "%s\r\nTransfer-Encoding: chunked\r\n\r\n%s",
			         kind == 0 ? "POST / HTTP/1.1\r\nHost: a" : "HTTP/1.1 200 OK", bodies[i]);
			expect_log(kind == 0 ? HTTP_KIND_REQUEST : HTTP_KIND_RESPONSE, in, "error=1");
		}
	}
	/* Well-formed chunks, with a short extension, still pass. */
	expect_log(HTTP_KIND_REQUEST,
	           "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
	           "3;x=1\r\nabc\r\n5\r\nhello\r\n0\r\n\r\n",
	           "{POST / v11 ka1 cl-1 [Host=a][Transfer-Encoding=chunked] body=abchello}");
}

/* 100 KiB of chunk extensions were read and dropped: now bounded per
 * message, all chunks together (LIMIT_MAX_CHUNK_EXT_BYTES). */
static void test_regress_i17_chunk_extensions_bounded(void **state)
{
	(void)state;
	static const char head[] = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
	size_t cap = 4096 + 2 * LIMIT_MAX_CHUNK_EXT_BYTES;
	char *in = malloc(cap);
	assert_non_null(in);

	/* One long extension name. */
	size_t n = (size_t)snprintf(in, cap, "%s1;", head);
	memset(in + n, 'e', LIMIT_MAX_CHUNK_EXT_BYTES + 1);
	n += LIMIT_MAX_CHUNK_EXT_BYTES + 1;
	n += (size_t)snprintf(in + n, cap - n, "\r\nx\r\n0\r\n\r\n");
	struct run *r = run_new(HTTP_KIND_REQUEST);
	run_feed(r, in, n, NULL, 0);
	assert_string_equal(r->log, "error=1");
	/* The same bytes cut in two inside the name. */
	size_t cut[1] = {sizeof(head) + 100};
	run_feed(r, in, n, cut, 1);
	assert_string_equal(r->log, "error=1");

	/* Many small ones, each fine alone, over the cap together. */
	n = (size_t)snprintf(in, cap, "%s", head);
	for (size_t i = 0; i * 6 <= LIMIT_MAX_CHUNK_EXT_BYTES; i++) /* 6 bytes each */
		n += (size_t)snprintf(in + n, cap - n, "1;ab=cdef\r\nx\r\n");
	n += (size_t)snprintf(in + n, cap - n, "0\r\n\r\n");
	run_feed(r, in, n, NULL, 0);
	assert_string_equal(r->log, "error=1");

	/* Just at the cap: accepted (name and value bytes count). */
	n = (size_t)snprintf(in, cap, "%s1;", head);
	memset(in + n, 'e', LIMIT_MAX_CHUNK_EXT_BYTES - 1);
	n += LIMIT_MAX_CHUNK_EXT_BYTES - 1;
	n += (size_t)snprintf(in + n, cap - n, "=v\r\nx\r\n0\r\n\r\n");
	run_feed(r, in, n, NULL, 0);
	assert_string_equal(r->log, "{POST / v11 ka1 cl-1 [Host=a][Transfer-Encoding=chunked] body=x}");
	/* The count starts again with the next message. */
	memcpy(in + n, in, n);
	run_feed(r, in, 2 * n, NULL, 0);
	assert_int_equal(r->messages, 2);
	free(r);
	free(in);
}

/* An absolute-form target ("POST http://host:port/mcp", which servers
 * MUST accept) was kept as is, so no path matched (404). It reads as its
 * origin form, and its authority replaces Host. */
static void test_regress_i17_absolute_form(void **state)
{
	(void)state;
	expect_log(HTTP_KIND_REQUEST,
	           "POST http://127.0.0.1:8080/mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
	           "Content-Length: 2\r\n\r\n{}",
	           "{POST /mcp?x=1 v11 ka1 cl2 [Host=127.0.0.1:8080][Content-Length=2] body={}}");
	/* RFC 9112 §3.2.2: the received Host is ignored. */
	expect_log(HTTP_KIND_REQUEST, "GET HTTPS://Mcp.Example/a/b HTTP/1.1\r\nHost: other\r\n\r\n",
	           "{GET /a/b v11 ka1 cl-1 [Host=Mcp.Example] body=}");
	/* No path: "/". */
	expect_log(HTTP_KIND_REQUEST,
	           "GET http://h:1 HTTP/1.1\r\nHost: h:1\r\n\r\nGET http://h?q=1 HTTP/1.1\r\nHost: h\r\n\r\n",
	           "{GET / v11 ka1 cl-1 [Host=h:1] body=}{GET /?q=1 v11 ka1 cl-1 [Host=h] body=}");
	/* HTTP/1.0 without Host: the authority is its Host. */
	expect_log(HTTP_KIND_REQUEST, "GET http://[::1]:9/x HTTP/1.0\r\nA: b\r\n\r\n",
	           "{GET /x v10 ka0 cl-1 [A=b][Host=[::1]:9] body=}");
	/* HTTP/1.1 without Host stays without: the caller refuses it. */
	expect_log(HTTP_KIND_REQUEST, "GET http://h/x HTTP/1.1\r\n\r\n", "{GET /x v11 ka1 cl-1  body=}");
	/* No host, userinfo, a host that is not one: 400. */
	expect_log(HTTP_KIND_REQUEST, "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", "error=1");
	expect_log(HTTP_KIND_REQUEST, "GET http://u:p@h/x HTTP/1.1\r\nHost: h\r\n\r\n", "error=1");
	expect_log(HTTP_KIND_REQUEST, "GET http://h%2f\"/x HTTP/1.1\r\nHost: h\r\n\r\n", "error=1");
	/* Other forms are left as they are. */
	expect_log(HTTP_KIND_REQUEST, "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
	           "{OPTIONS * v11 ka1 cl-1 [Host=h] body=}");
	expect_log(HTTP_KIND_REQUEST, "GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n",
	           "{GET ftp://h/x v11 ka1 cl-1 [Host=h] body=}");
}

/* CONNECT has its id, for the caller's 405. */
static void test_regress_i17_connect_id(void **state)
{
	(void)state;
	static const char req[] = "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n";
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 0, &test_cbs, &(struct run){0});
	size_t used;
	assert_int_equal(http_parser_feed(p, req, strlen(req), &used), HTTP_PARSE_DONE);
	assert_int_equal(http_msg_method_id(http_parser_msg(p)), HM_CONNECT);
	assert_string_equal(http_msg_url(http_parser_msg(p)), "h:443");
	http_parser_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_tokens),
		cmocka_unit_test(test_request_simple),
		cmocka_unit_test(test_null_callbacks),
		cmocka_unit_test(test_response_simple),
		cmocka_unit_test(test_kind_specific_fields_empty),
		cmocka_unit_test(test_method_ids),
		cmocka_unit_test(test_request_every_split),
		cmocka_unit_test(test_pipelined_every_split),
		cmocka_unit_test(test_response_every_split),
		cmocka_unit_test(test_close_delimited_every_split),
		cmocka_unit_test(test_header_lookup_case_insensitive),
		cmocka_unit_test(test_header_ids),
		cmocka_unit_test(test_header_ids_fold_only_letters),
		cmocka_unit_test(test_field_name_not_a_token),
		cmocka_unit_test(test_bad_byte_at_every_position),
		cmocka_unit_test(test_header_ids_every_split),
		cmocka_unit_test(test_url_path),
		cmocka_unit_test(test_header_lookup_matches_scan),
		cmocka_unit_test(test_header_value_whitespace_trimmed),
		cmocka_unit_test(test_header_value_trim_lookup),
		cmocka_unit_test(test_regress_trailer_fields_are_not_headers),
		cmocka_unit_test(test_regress_trailers_keep_header_buffer),
		cmocka_unit_test(test_pipelined_requests),
		cmocka_unit_test(test_chunked_body_dechunked),
		cmocka_unit_test(test_content_length),
		cmocka_unit_test(test_ambiguous_length_rejected),
		cmocka_unit_test(test_close_delimited_response),
		cmocka_unit_test(test_finish_cases),
		cmocka_unit_test(test_regress_finish_after_reset_is_more),
		cmocka_unit_test(test_headers_too_big_boundary),
		cmocka_unit_test(test_headers_too_big),
		cmocka_unit_test(test_too_many_headers),
		cmocka_unit_test(test_header_table_grows_past_inline),
		cmocka_unit_test(test_malformed_request_line),
		cmocka_unit_test(test_malformed_status_line),
		cmocka_unit_test(test_body_too_big),
		cmocka_unit_test(test_on_headers_refuses),
		cmocka_unit_test(test_head_response_skips_body),
		cmocka_unit_test(test_header_split_every_byte),
		cmocka_unit_test(test_empty_values),
		cmocka_unit_test(test_value_only_blanks),
		cmocka_unit_test(test_trailers_counted_every_split),
		cmocka_unit_test(test_header_count_limit_every_split),
		cmocka_unit_test(test_header_size_limit_every_split),
		cmocka_unit_test(test_invalid_name_refused_at_colon),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_interim_response),
		cmocka_unit_test(test_no_body_statuses),
		cmocka_unit_test(test_started),
		cmocka_unit_test(test_regress_feed_after_done_without_reset),
		cmocka_unit_test(test_regress_upgrade_request_keeps_keep_alive),
		cmocka_unit_test(test_regress_i17_empty_header_name),
		cmocka_unit_test(test_regress_i17_repeated_host),
		cmocka_unit_test(test_regress_i17_repeated_known_headers),
		cmocka_unit_test(test_regress_i17_version),
		cmocka_unit_test(test_regress_i17_chunk_data_crlf),
		cmocka_unit_test(test_regress_i17_chunk_extensions_bounded),
		cmocka_unit_test(test_regress_i17_absolute_form),
		cmocka_unit_test(test_regress_i17_connect_id),
	};
	return cmocka_run_group_tests_name("http_parse", tests, NULL, NULL);
}

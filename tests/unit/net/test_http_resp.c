/* Unit tests for proxy/net/http_resp.c: hop-by-hop headers, status lines, and
 * the bytes of the proxy's own JSON responses (checked literally and by
 * parsing them back with proxy/net/http_parse.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <jansson.h>

#include "proxy/net/http_parse.h"
#include "proxy/net/http_resp.h"

/* The whole buffer as a NUL-terminated string (owned). */
static char *drain_str(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = malloc(n + 1);
	assert_non_null(s);
	assert_int_equal(evbuffer_remove(b, s, n), (int)n);
	s[n] = '\0';
	return s;
}

static int hop(const char *name, const char *connection)
{
	return http_hop_by_hop(name, strlen(name), connection);
}

static void test_hop_by_hop_fixed_set(void **state)
{
	(void)state;
	static const char *const yes[] = {
		"Connection", "connection", "KEEP-ALIVE", "Proxy-Connection", "TE", "te",
		"Trailer", "Transfer-Encoding", "Upgrade", "Proxy-Authenticate",
		"Proxy-Authorization",
	};
	static const char *const no[] = {
		"Content-Type", "Content-Length", "Mcp-Session-Id", "Authorization", "Host",
		"Accept", "tea", "t", "Trailers", "Connections", "Upgrade-Insecure-Requests", "",
	};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!hop(yes[i], NULL))
			print_error("%s\n", yes[i]);
		assert_true(hop(yes[i], NULL));
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		if (hop(no[i], NULL))
			print_error("%s\n", no[i]);
		assert_false(hop(no[i], NULL));
	}
	/* Only len bytes of the name count. */
	assert_true(http_hop_by_hop("te: trailers", 2, NULL));
	assert_false(http_hop_by_hop("Transfer-Encoding", 8, NULL));
}

static void test_hop_by_hop_connection_tokens(void **state)
{
	(void)state;
	static const char conn[] = "close, X-Foo ,\tx-bar,,  Keep-Alive,Mcp-Custom";

	assert_true(hop("X-Foo", conn));
	assert_true(hop("x-foo", conn));
	assert_true(hop("X-BAR", conn));
	assert_true(hop("mcp-custom", conn));
	assert_true(hop("close", conn));
	/* Neither prefixes nor extensions of a listed token. */
	assert_false(hop("X-Fo", conn));
	assert_false(hop("X-Foo2", conn));
	assert_false(hop("x-ba", conn));
	assert_false(hop("Mcp-Custom-2", conn));
	assert_false(hop("Content-Type", conn));
	/* A single token, with or without surrounding spaces. */
	assert_true(hop("X-Only", "X-Only"));
	assert_true(hop("X-Only", "  x-only  "));
	assert_false(hop("X-Only", ""));
	assert_false(hop("X-Only", " , ,"));
	assert_false(hop("X-Only", NULL));
	/* Last token without a separator after it; a tab inside ends one. */
	assert_true(hop("b", "a,b"));
	assert_true(hop("b", "a\tb"));
	assert_false(hop("a\tb", "a\tb"));
}

static const struct http_parser_cbs no_cbs = {NULL, NULL};

/* http_msg_connection_options in place of the Connection value gives the
 * same hop-by-hop answers for every header, over random lists mixing the
 * fixed hop-by-hop names (which let it return NULL), other tokens, empty
 * entries and every separator, in any case. */
static void test_connection_options_same_answers(void **state)
{
	(void)state;
	static const char *const toks[] = {
		"keep-alive", "Keep-Alive", "close", "upgrade", "TE", "trailer", "x-foo", "X-Bar",
		"content-type", "Mcp-Session-Id", "transfer-encoding", "proxy-connection", "",
	};
	static const char *const seps[] = {",", ", ", " ,", "\t", ",,", " "};
	static const char *const names[] = {
		"Host", "X-Foo", "x-bar", "Content-Type", "Mcp-Session-Id", "Close", "Keep-Alive",
		"Upgrade", "Te", "Accept", "X-Other", "Trailer",
	};
	const size_t nt = sizeof(toks) / sizeof(toks[0]), ns = sizeof(seps) / sizeof(seps[0]);
	const size_t nn = sizeof(names) / sizeof(names[0]);
	struct http_parser *p = http_parser_new(HTTP_KIND_RESPONSE, 0, &no_cbs, NULL);
	unsigned seed = 7;
	int saw_null = 0, saw_value = 0;

	assert_non_null(p);
	for (int round = 0; round < 3000; round++) {
		char conn[256] = "", resp[2048];
		int k = (int)(rand_r(&seed) % 4) + (round % 10 == 0 ? 0 : 1);
		for (int i = 0; i < k; i++) {
			if (i || rand_r(&seed) % 4 == 0)
				strcat(conn, seps[rand_r(&seed) % ns]);
			strcat(conn, toks[rand_r(&seed) % nt]);
		}
		if (rand_r(&seed) % 4 == 0)
			strcat(conn, seps[rand_r(&seed) % ns]);
		size_t len = (size_t)snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\n");
		int with_conn = round % 7 != 0;
		if (with_conn)
			len += (size_t)snprintf(resp + len, sizeof(resp) - len, "Connection: %s\r\n", conn);
		for (size_t i = 0; i < nn; i++)
			len += (size_t)snprintf(resp + len, sizeof(resp) - len, "%s: v\r\n", names[i]);
		len += (size_t)snprintf(resp + len, sizeof(resp) - len, "Content-Length: 0\r\n\r\n");
		size_t used;
		/* A new parser each time: after "close" one takes no more. */
		http_parser_free(p);
		p = http_parser_new(HTTP_KIND_RESPONSE, 0, &no_cbs, NULL);
		assert_non_null(p);
		if (http_parser_feed(p, resp, len, &used) != HTTP_PARSE_DONE) {
			print_error("%s: %s\n", resp, http_parser_reason(p));
			fail();
		}
		const struct http_msg *m = http_parser_msg(p);
		const char *value = http_msg_get(m, HH_CONNECTION), *opts = http_msg_connection_options(m);
		if (!with_conn)
			assert_null(value);
		if (opts)
			assert_ptr_equal(opts, value);
		saw_null += value && !opts;
		saw_value += opts != NULL;
		for (size_t i = 0; i < http_msg_header_count(m); i++) {
			const char *n, *v;
			size_t nl, vl;
			http_msg_header_at(m, i, &n, &nl, &v, &vl);
			enum http_hdr_id id = http_msg_header_id(m, i);
			if (http_hop_by_hop_id(id, n, nl, value) != http_hop_by_hop_id(id, n, nl, opts)) {
				print_error("Connection: \"%s\", header %s\n", value ? value : "", n);
				fail();
			}
		}
	}
	/* Both ways were taken. */
	assert_true(saw_null > 100);
	assert_true(saw_value > 100);
	http_parser_free(p);
}

/* Until the head is complete the options are not known: the value then. */
static void test_connection_options_before_head(void **state)
{
	(void)state;
	static const char part[] = "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nX: y\r\n";
	struct http_parser *p = http_parser_new(HTTP_KIND_RESPONSE, 0, &no_cbs, NULL);
	size_t used;

	assert_int_equal(http_parser_feed(p, part, sizeof(part) - 1, &used), HTTP_PARSE_MORE);
	const struct http_msg *m = http_parser_msg(p);
	assert_string_equal(http_msg_connection_options(m), "keep-alive");
	assert_int_equal(http_parser_feed(p, "\r\n", 2, &used), HTTP_PARSE_MORE);
	assert_null(http_msg_connection_options(m));
	http_parser_free(p);
}

static void test_status_line(void **state)
{
	(void)state;
	struct evbuffer *b = evbuffer_new();
	char *s;

	assert_int_equal(http_resp_status_line(b, 11, 200), 0);
	assert_int_equal(http_resp_status_line(b, 10, 404), 0);
	assert_int_equal(http_resp_status_line(b, 11, 431), 0);
	assert_int_equal(http_resp_status_line(b, 11, 413), 0);
	assert_int_equal(http_resp_status_line(b, 11, 502), 0);
	assert_int_equal(http_resp_status_line(b, 10, 504), 0);
	s = drain_str(b);
	assert_string_equal(s, "HTTP/1.1 200 OK\r\n"
	                       "HTTP/1.0 404 Not Found\r\n"
	                       "HTTP/1.1 431 Request Header Fields Too Large\r\n"
	                       "HTTP/1.1 413 Content Too Large\r\n"
	                       "HTTP/1.1 502 Bad Gateway\r\n"
	                       "HTTP/1.0 504 Gateway Timeout\r\n");
	free(s);
	evbuffer_free(b);
}

static void test_reason_fallbacks(void **state)
{
	(void)state;
	assert_string_equal(http_resp_reason(202), "Accepted");
	assert_string_equal(http_resp_reason(405), "Method Not Allowed");
	assert_string_equal(http_resp_reason(199), "Informational");
	assert_string_equal(http_resp_reason(299), "Success");
	assert_string_equal(http_resp_reason(399), "Redirection");
	assert_string_equal(http_resp_reason(499), "Client Error");
	assert_string_equal(http_resp_reason(599), "Server Error");
}

static void test_header_line(void **state)
{
	(void)state;
	struct evbuffer *b = evbuffer_new();
	struct http_headbuf hb;

	http_headbuf_init(&hb, b);
	http_headbuf_header(&hb, "Mcp-Session-Id", 14, "abc", 3);
	/* Lengths, not NULs, delimit. */
	http_headbuf_header(&hb, "X-Ab", 3, "123", 2);
	http_headbuf_header(&hb, "X-Empty", 7, "", 0);
	assert_int_equal(evbuffer_get_length(b), 0); /* gathered, not yet added */
	assert_int_equal(http_headbuf_flush(&hb), 0);
	char *s = drain_str(b);
	assert_string_equal(s, "Mcp-Session-Id: abc\r\nX-A: 12\r\nX-Empty: \r\n");
	free(s);
	evbuffer_free(b);
}

/* The fixed 200 line, in either version, in a headbuf and alone. */
static void test_status_line_200(void **state)
{
	(void)state;
	for (int version = 10; version <= 11; version++) {
		struct evbuffer *b = evbuffer_new();
		struct http_headbuf hb;
		http_headbuf_init(&hb, b);
		http_headbuf_status_line(&hb, version, 200);
		assert_int_equal(http_headbuf_flush(&hb), 0);
		assert_int_equal(http_resp_status_line(b, version, 200), 0);
		char *s = drain_str(b);
		assert_string_equal(s, version == 10 ? "HTTP/1.0 200 OK\r\nHTTP/1.0 200 OK\r\n"
		                                     : "HTTP/1.1 200 OK\r\nHTTP/1.1 200 OK\r\n");
		free(s);
		evbuffer_free(b);
	}
}

/* Names and values of every length the short copies branch on (0 to 40,
 * around 4, 8, 16 and 32), each line exactly its bytes, none past them. */
static void test_header_line_lengths(void **state)
{
	(void)state;
	char name[41], value[41];
	for (size_t i = 0; i < sizeof(name); i++) {
		name[i] = (char)('A' + i % 26);
		value[i] = (char)('a' + (i * 7) % 26);
	}
	for (size_t nl = 0; nl <= 40; nl++) {
		for (size_t vl = 0; vl <= 40; vl++) {
			struct evbuffer *b = evbuffer_new();
			struct http_headbuf hb;
			http_headbuf_init(&hb, b);
			http_headbuf_add(&hb, value, vl);
			http_headbuf_header(&hb, name, nl, value, vl);
			http_headbuf_add(&hb, name, nl);
			assert_int_equal(http_headbuf_flush(&hb), 0);
			char want[200];
			int wl = snprintf(want, sizeof(want), "%.*s%.*s: %.*s\r\n%.*s", (int)vl, value,
			                  (int)nl, name, (int)vl, value, (int)nl, name);
			assert_int_equal(evbuffer_get_length(b), (size_t)wl);
			assert_memory_equal(evbuffer_pullup(b, -1), want, (size_t)wl);
			evbuffer_free(b);
		}
	}
}

/* Pieces of every size around the buffer's: the same bytes in the same
 * order as added one by one, whatever spills. */
static void test_headbuf_spills_in_order(void **state)
{
	(void)state;
	static char value[5100]; /* room for the largest size, from offset 7 */
	for (size_t i = 0; i < sizeof(value); i++)
		value[i] = (char)('a' + i % 26);
	const size_t sizes[] = {0, 1, 100, 1000, 2030, 2040, 2044, 2048, 2049, 3000, 4999};
	for (size_t a = 0; a < sizeof(sizes) / sizeof(sizes[0]); a++) {
		for (size_t b = 0; b < sizeof(sizes) / sizeof(sizes[0]); b++) {
			struct evbuffer *got = evbuffer_new(), *want = evbuffer_new();
			struct http_headbuf hb;
			http_headbuf_init(&hb, got);
			http_headbuf_add(&hb, value, sizes[a]);
			http_headbuf_header(&hb, "X-Long", 6, value + 7, sizes[b]);
			http_headbuf_add(&hb, "\r\n", 2);
			assert_int_equal(http_headbuf_flush(&hb), 0);
			evbuffer_add(want, value, sizes[a]);
			evbuffer_add(want, "X-Long: ", 8);
			evbuffer_add(want, value + 7, sizes[b]);
			evbuffer_add(want, "\r\n\r\n", 4);
			size_t n = evbuffer_get_length(want);
			assert_int_equal(evbuffer_get_length(got), n);
			assert_memory_equal(evbuffer_pullup(got, -1), evbuffer_pullup(want, -1), n);
			evbuffer_free(got);
			evbuffer_free(want);
		}
	}
}

/* The same bytes as the status line, the headers and the tail added one
 * by one, for every size of header block around the stack buffer's, for
 * statuses written by printf, for both versions and for no headers; the
 * headers are drained; a head that fits goes out in one add. */
static void count_adds(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
	(void)b;
	if (info->n_added)
		(*(int *)arg)++;
}

static void test_head_one_add(void **state)
{
	(void)state;
	static const int statuses[] = {200, 404, 202, 99, 1000, 599};
	static const size_t sizes[] = {0, 1, 30, 3800, 3900, 3950, 3967, 3968, 3969, 4000, 4096,
	                               9000};
	static const char tail[] = "Content-Length: 12\r\nConnection: close\r\n\r\n";

	for (size_t si = 0; si < sizeof(statuses) / sizeof(statuses[0]); si++) {
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			for (int version = 10; version <= 11; version++) {
				struct evbuffer *want = evbuffer_new(), *got = evbuffer_new();
				struct evbuffer *h = evbuffer_new();
				int adds = 0;
				char *hdrs = malloc(sizes[k] + 1);
				assert_non_null(hdrs);
				for (size_t i = 0; i < sizes[k]; i++)
					hdrs[i] = (char)('a' + i % 26);
				/* In two chains (the second moved in), as a head built
				 * from several buffers is. */
				struct evbuffer *second = evbuffer_new();
				evbuffer_add(h, hdrs, sizes[k] / 2);
				evbuffer_add(second, hdrs + sizes[k] / 2, sizes[k] - sizes[k] / 2);
				evbuffer_add_buffer(h, second);
				evbuffer_free(second);
				http_resp_status_line(want, version, statuses[si]);
				evbuffer_add(want, hdrs, sizes[k]);
				evbuffer_add(want, tail, sizeof(tail) - 1);
				evbuffer_add_cb(got, count_adds, &adds);
				assert_int_equal(http_resp_head(got, version, statuses[si],
				                                sizes[k] ? h : NULL, tail, sizeof(tail) - 1),
				                 0);
				assert_int_equal(evbuffer_get_length(h), sizes[k] ? 0 : sizes[k]);
				char *w = drain_str(want), *g = drain_str(got);
				assert_string_equal(g, w);
				if (statuses[si] >= 100 && statuses[si] <= 999 && sizes[k] < 3900)
					assert_int_equal(adds, 1);
				free(w);
				free(g);
				free(hdrs);
				evbuffer_free(h);
				evbuffer_free(want);
				evbuffer_free(got);
			}
		}
	}
}

/* In a headbuf, the status line is http_resp_status_line's, in order with
 * what comes before and after it, for statuses off the fixed layout too
 * (printf) and after a spill. */
static void test_headbuf_status_line(void **state)
{
	(void)state;
	static const int statuses[] = {200, 404, 99, 1000, 599};
	static char fill[2100];
	memset(fill, 'x', sizeof(fill));
	for (size_t si = 0; si < sizeof(statuses) / sizeof(statuses[0]); si++) {
		for (int version = 10; version <= 11; version++) {
			for (size_t pre = 0; pre <= sizeof(fill); pre += sizeof(fill) - 60) {
				struct evbuffer *want = evbuffer_new(), *got = evbuffer_new();
				struct http_headbuf hb;
				http_headbuf_init(&hb, got);
				http_headbuf_add(&hb, fill, pre);
				http_headbuf_status_line(&hb, version, statuses[si]);
				http_headbuf_header(&hb, "A", 1, "b", 1);
				assert_int_equal(http_headbuf_flush(&hb), 0);
				evbuffer_add(want, fill, pre);
				http_resp_status_line(want, version, statuses[si]);
				evbuffer_add(want, "A: b\r\n", 6);
				char *w = drain_str(want), *g = drain_str(got);
				assert_string_equal(g, w);
				free(w);
				free(g);
				evbuffer_free(want);
				evbuffer_free(got);
			}
		}
	}
}

static void test_content_length_line(void **state)
{
	(void)state;
	static const uint64_t ns[] = {0, 1, 9, 10, 99, 100, 999, 1000, 12345, 9999999999999999999ull,
	                              10000000000000000000ull, UINT64_MAX};
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		char line[HTTP_RESP_CL_LINE_MAX + 1], want[64];
		size_t n = http_resp_content_length_line(line, ns[i]);
		line[n] = '\0';
		snprintf(want, sizeof(want), "Content-Length: %llu\r\n", (unsigned long long)ns[i]);
		assert_string_equal(line, want);
		assert_true(n <= HTTP_RESP_CL_LINE_MAX);
	}
}

static void test_json_bytes(void **state)
{
	(void)state;
	struct evbuffer *b = evbuffer_new();
	json_t *body = json_pack("{s:s,s:n,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", "error", "code",
	                         -32600, "message", "bad");
	char *s;

	assert_int_equal(http_resp_json(b, 11, 400, body, 0), 0);
	s = drain_str(b);
	static const char json[] =
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"bad\"}}\n";
	char want[512];
	snprintf(want, sizeof(want),
	         "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
	         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
	         strlen(json), json);
	assert_string_equal(s, want);
	free(s);

	/* Keep-alive: no Connection header; HTTP/1.0 status line. */
	assert_int_equal(http_resp_json(b, 10, 200, body, 1), 0);
	s = drain_str(b);
	snprintf(want, sizeof(want),
	         "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
	         "Content-Length: %zu\r\n\r\n%s",
	         strlen(json), json);
	assert_string_equal(s, want);
	free(s);

	/* Non-ASCII text is sent as UTF-8 and counted in bytes. */
	json_t *u = json_pack("{s:s}", "m", "h\xc3\xa9llo \xe2\x82\xac");
	assert_int_equal(http_resp_json(b, 11, 200, u, 1), 0);
	s = drain_str(b);
	/* {"m":"h\xc3\xa9llo \xe2\x82\xac"} is 18 bytes, plus the newline. */
	assert_non_null(strstr(s, "Content-Length: 19\r\n"));
	json_decref(u);
	free(s);

	/* The body is borrowed. */
	assert_int_equal(body->refcount, 1);
	json_decref(body);
	evbuffer_free(b);
}

struct got {
	char body[1024];
	size_t len;
};

static int got_body(void *arg, const char *data, size_t len)
{
	struct got *g = arg;
	assert_true(len <= sizeof(g->body) - g->len);
	memcpy(g->body + g->len, data, len);
	g->len += len;
	return 0;
}

static const struct http_parser_cbs got_cbs = {NULL, got_body};

/* What http_resp_json writes is one well-formed response, whose body is
 * the JSON, whatever the status and keep-alive. */
static void test_json_parses_back(void **state)
{
	(void)state;
	static const int statuses[] = {200, 202, 400, 401, 404, 413, 431, 500, 502, 504};
	json_t *body = json_pack("{s:s,s:i,s:{s:[s,s]}}", "jsonrpc", "2.0", "id", 7, "result",
	                         "tools", "a", "b");
	char *text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);

	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		for (int ka = 0; ka < 2; ka++) {
			struct evbuffer *b = evbuffer_new();
			struct got g = {{0}, 0};
			size_t used;
			assert_int_equal(http_resp_json(b, 11, statuses[i], body, ka), 0);
			size_t n = evbuffer_get_length(b);
			const char *bytes = (const char *)evbuffer_pullup(b, -1);
			struct http_parser *p = http_parser_new(HTTP_KIND_RESPONSE, 0, &got_cbs, &g);
			assert_int_equal(http_parser_feed(p, bytes, n, &used), HTTP_PARSE_DONE);
			assert_int_equal(used, n);
			const struct http_msg *m = http_parser_msg(p);
			assert_int_equal(http_msg_status(m), statuses[i]);
			assert_int_equal(http_msg_keep_alive(m), ka);
			assert_int_equal(http_msg_content_length(m), (int64_t)g.len);
			assert_string_equal(http_msg_header(m, "content-type"), "application/json");
			assert_int_equal(g.len, strlen(text) + 1);
			assert_memory_equal(g.body, text, strlen(text));
			assert_int_equal(g.body[g.len - 1], '\n');
			http_parser_free(p);
			evbuffer_free(b);
		}
	}
	free(text);
	json_decref(body);
}

/* Issue 17: the 505 the HTTP layer now answers has its reason phrase, and
 * a refusal can carry extra header lines (a 405's Allow). */
static void test_regress_i17_505_and_extra_lines(void **state)
{
	(void)state;
	assert_string_equal(http_resp_reason(505), "HTTP Version Not Supported");
	struct evbuffer *b = evbuffer_new();
	json_t *body = json_pack("{s:i}", "a", 1);
	assert_int_equal(http_resp_json_with(b, 11, 405, "Allow: \r\n", body, 0), 0);
	char *s = drain_str(b);
	assert_string_equal(s, "HTTP/1.1 405 Method Not Allowed\r\nAllow: \r\n"
	                       "Content-Type: application/json\r\nContent-Length: 8\r\n"
	                       "Connection: close\r\n\r\n{\"a\":1}\n");
	free(s);
	assert_int_equal(http_resp_json_with(b, 11, 505, NULL, body, 0), 0);
	s = drain_str(b);
	static const char line[] = "HTTP/1.1 505 HTTP Version Not Supported\r\nContent-Type:";
	assert_true(strncmp(s, line, sizeof(line) - 1) == 0);
	free(s);
	json_decref(body);
	evbuffer_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hop_by_hop_fixed_set),
		cmocka_unit_test(test_hop_by_hop_connection_tokens),
		cmocka_unit_test(test_connection_options_same_answers),
		cmocka_unit_test(test_connection_options_before_head),
		cmocka_unit_test(test_status_line),
		cmocka_unit_test(test_reason_fallbacks),
		cmocka_unit_test(test_header_line),
		cmocka_unit_test(test_header_line_lengths),
		cmocka_unit_test(test_status_line_200),
		cmocka_unit_test(test_headbuf_spills_in_order),
		cmocka_unit_test(test_head_one_add),
		cmocka_unit_test(test_headbuf_status_line),
		cmocka_unit_test(test_content_length_line),
		cmocka_unit_test(test_json_bytes),
		cmocka_unit_test(test_json_parses_back),
		cmocka_unit_test(test_regress_i17_505_and_extra_lines),
	};
	return cmocka_run_group_tests_name("http_resp", tests, NULL, NULL);
}

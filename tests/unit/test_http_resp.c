/* Unit tests for proxy/http_resp.c: hop-by-hop headers, status lines, and
 * the bytes of the proxy's own JSON responses (checked literally and by
 * parsing them back with proxy/http_parse.c).
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

#include "proxy/http_parse.h"
#include "proxy/http_resp.h"

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

	assert_int_equal(http_resp_header(b, "Mcp-Session-Id", 14, "abc", 3), 0);
	/* Lengths, not NULs, delimit. */
	assert_int_equal(http_resp_header(b, "X-Ab", 3, "123", 2), 0);
	assert_int_equal(http_resp_header(b, "X-Empty", 7, "", 0), 0);
	char *s = drain_str(b);
	assert_string_equal(s, "Mcp-Session-Id: abc\r\nX-A: 12\r\nX-Empty: \r\n");
	free(s);
	evbuffer_free(b);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hop_by_hop_fixed_set),
		cmocka_unit_test(test_hop_by_hop_connection_tokens),
		cmocka_unit_test(test_status_line),
		cmocka_unit_test(test_reason_fallbacks),
		cmocka_unit_test(test_header_line),
		cmocka_unit_test(test_json_bytes),
		cmocka_unit_test(test_json_parses_back),
	};
	return cmocka_run_group_tests_name("http_resp", tests, NULL, NULL);
}

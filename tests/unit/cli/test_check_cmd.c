/* Unit tests for the check and diff commands (proxy/cli/: check.c,
 * check_client.c, diff.c, cli_out.c). The static helpers are reached by
 * including the .c files (STYLE.md §3); the client path runs against a canned
 * HTTP server on a thread (blocking sockets, test only), so valgrind sees
 * the whole of it (event loop, upstream module, state machine, report,
 * teardown).
 */
#include "proxy/cli/cli_out.c"
#include "proxy/cli/check_client.c"
#include "proxy/cli/check.c"
#include "proxy/cli/diff.c"

#include <setjmp.h>
#include <stddef.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/helpers.h"

/* ---- helpers ------------------------------------------------------------ */

/* Runs fn with stdout and stderr sent to a temp file; returns the output
 * (owned) and the exit code in *rc. */
static char *captured(int (*fn)(int, char **), int argc, char **argv, int *rc)
{
	char path[] = "/tmp/test_check_cmd_out_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	dup2(fd, 1);
	dup2(fd, 2);
	*rc = fn(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	off_t n = lseek(fd, 0, SEEK_END);
	char *buf = calloc(1, (size_t)n + 1);
	assert_int_equal(pread(fd, buf, (size_t)n, 0), n);
	close(fd);
	unlink(path);
	return buf;
}

/* A temp file holding text with ' for "; the path is owned. */
static char *temp_json(const char *text)
{
	char *path = strdup("/tmp/test_check_cmd_XXXXXX");
	char *s = th_quotes(text);
	assert_non_null(path);
	th_temp_write(path, s);
	free(s);
	return path;
}

/* ---- pure helpers --------------------------------------------------------- */

/* Issue 17: check's first transport is the proxy's (one function), on the
 * URL as given: a /mcp URL is never turned into its sibling /sse. */
static void expect_first(const char *url, enum px_transport want)
{
	struct px_upstream_conf u = {0};
	const char *why;
	assert_int_equal(config_parse_url(&u, url, &why), 0);
	assert_int_equal(upstream_sse_auto_first(&u), want);
	url_clear(&u);
}

static void test_auto_first(void **state)
{
	(void)state;
	expect_first("http://h:1/mcp", PX_TRANSPORT_STREAMABLE);
	expect_first("http://h:1/sse", PX_TRANSPORT_SSE);
	expect_first("http://h:1/api/v1/sse?k=1", PX_TRANSPORT_SSE);
	expect_first("http://h:1/api", PX_TRANSPORT_STREAMABLE);
	expect_first("http://h:1", PX_TRANSPORT_STREAMABLE);
}

/* http_reason on a body: what a refusal's text becomes when printed. */
static void expect_reason(const char *body, const char *want)
{
	struct hreq h = {0};
	char buf[CHECK_REASON_MAX + 16];
	h.body = evbuffer_new();
	assert_non_null(h.body);
	evbuffer_add(h.body, body, strlen(body));
	http_reason(&h, buf, sizeof(buf));
	assert_string_equal(buf, want);
	evbuffer_free(h.body);
}

static void test_http_reason(void **state)
{
	(void)state;
	expect_reason("", "");
	expect_reason(" \r\n\t", "");
	expect_reason("Access is only allowed at localhost:8931\n",
	              ": Access is only allowed at localhost:8931");
	expect_reason("\x1b[31mno\x1b[0m\r\n  way\x7f", ": [31mno [0m way");
	expect_reason("sent Bearer abc.def-123, and basic dXNl", ": sent Bearer " CLI_MASK ", and basic " CLI_MASK);
	expect_reason("token=\"Bearer xyz\"", ": token=\"Bearer " CLI_MASK "\"");
	expect_reason("NotBearer x", ": NotBearer x");

	/* Long: cut at CHECK_REASON_MAX bytes, on a character boundary. */
	char big[1200];
	size_t n = 0;
	while (n + 2 < sizeof(big) - 1) {
		memcpy(big + n, "\xc3\xa9", 2); /* é */
		n += 2;
	}
	big[n] = '\0';
	struct hreq h = {0};
	char buf[CHECK_REASON_MAX + 16];
	h.body = evbuffer_new();
	evbuffer_add(h.body, big, n);
	http_reason(&h, buf, sizeof(buf));
	evbuffer_free(h.body);
	size_t l = strlen(buf);
	assert_true(l <= 2 + CHECK_REASON_MAX + 3);
	assert_memory_equal(buf + l - 3, "\xe2\x80\xa6", 3);
	assert_memory_equal(buf + l - 5, "\xc3\xa9", 2); /* a whole é before the … */
	assert_int_equal((l - 2 - 3) % 2, 0);
}

static void expect_ref(const char *base, const char *ref, const char *want)
{
	struct px_upstream_conf u = {0};
	const char *why;
	assert_int_equal(config_parse_url(&u, base, &why), 0);
	char *s = resolve_ref(&u, ref);
	assert_string_equal(s, want);
	free(s);
	url_clear(&u);
}

static void test_resolve_ref(void **state)
{
	(void)state;
	expect_ref("http://h:1/a/sse", "/message?sessionId=x", "http://h:1/message?sessionId=x");
	expect_ref("http://h:1/a/sse", "message?s=1", "http://h:1/a/message?s=1");
	expect_ref("http://h:1/a/sse", "http://other:2/m", "http://other:2/m");
	expect_ref("https://h:1/a/sse", "//other:2/m", "https://other:2/m");
	expect_ref("http://h:1/sse?q=1/2", "m", "http://h:1/m");
}

static void test_emit_masks(void **state)
{
	(void)state;
	struct cli_secrets s = {0};
	cli_secrets_add(&s, "abcd", 4);
	cli_secrets_add(&s, "abcdef", 6);
	cli_secrets_add(&s, "xy", 2); /* too short: never masked */
	char buf[256] = "";
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	cli_emit(&s, f, "k=abcdef; j=abcd; xy; abcdabcd");
	fclose(f);
	assert_string_equal(buf, "k=" CLI_MASK "; j=" CLI_MASK "; xy; " CLI_MASK CLI_MASK);
	cli_secrets_free(&s);
}

/* ${NAME} in a --header value, filled from the environment by the parser
 * check shares with replay (check_client_header_parse): what a variable
 * gave is masked; an unset one is an error, nothing added. */
static void test_expand_env(void **state)
{
	(void)state;
	struct check_opts o = {0};
	setenv("TCC_A", "alpha-value", 1);
	setenv("TCC_B", "b", 1);
	unsetenv("TCC_NOPE");
	assert_int_equal(add_header(&o, "X-Trace: Bearer ${TCC_A}.${TCC_B}$x${"), 0);
	assert_int_equal(o.nheaders, 1);
	assert_string_equal(o.headers[0].name, "X-Trace");
	assert_string_equal(o.headers[0].wire, "Bearer alpha-value.b$x${");
	assert_int_equal(o.sec.n, 1); /* "b" is too short to mask */
	assert_string_equal(o.sec.v[0], "alpha-value");
	assert_int_equal(add_header(&o, "X-Trace: x ${TCC_NOPE}"), -1);
	assert_int_equal(o.nheaders, 1);
	opts_free(&o);
}

/* The conf's name rule (envx.h): an odd name is an error, never looked up
 * and never sent as is. Before, check sent "${}" literally and looked up
 * "TCC-A" or "1TCC". */
static void test_expand_env_odd_names(void **state)
{
	(void)state;
	struct check_opts o = {0};
	char arg[160];
	setenv("TCC_A", "alpha-value", 1);
	static const char *const odd[] = {"${}", "x ${TCC-A}", "${1TCC}", "${TCC A}", "${TCC_A:-d}"};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		snprintf(arg, sizeof(arg), "X-Trace: %s", odd[i]);
		assert_int_equal(add_header(&o, arg), -1);
	}
	assert_int_equal(o.sec.n, 0);
	char longname[140];
	memset(longname, 'A', sizeof(longname));
	memcpy(longname, "${", 2);
	memcpy(longname + 2 + 128, "}", 2); /* 128 characters: one too many */
	snprintf(arg, sizeof(arg), "X-Trace: %s", longname);
	assert_int_equal(add_header(&o, arg), -1);
	assert_int_equal(o.nheaders, 0);
	opts_free(&o);
}

/* Through --header: the usage error names the rule (exit 2 from the CLI). */
static void test_header_odd_env_name(void **state)
{
	(void)state;
	int so = dup(2);
	char path[] = "/tmp/test_check_cmd_err_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct check_opts o = {0};
	fflush(stderr);
	dup2(fd, 2);
	int rc = add_header(&o, "Authorization: Bearer ${MCP-TOKEN}");
	fflush(stderr);
	dup2(so, 2);
	close(so);
	char buf[512] = "";
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(path);
	assert_int_equal(rc, -1);
	assert_true(n > 0);
	assert_string_equal(buf, "mcpwarden check: --header Authorization: ${…} must name an environment "
	                         "variable ([A-Za-z_][A-Za-z0-9_]*, up to 127 characters)\n");
	assert_int_equal(o.nheaders, 0);
	opts_free(&o);
}

static int parse(const char *const *args, struct check_opts *o)
{
	char *argv[16];
	int argc = 0;
	for (; args[argc]; argc++)
		argv[argc] = (char *)(uintptr_t)args[argc];
	memset(o, 0, sizeof(*o));
	int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 2);
	int rc = parse_check_args(argc, argv, o);
	dup2(saved, 2);
	close(saved);
	close(devnull);
	return rc;
}

static void test_parse_args(void **state)
{
	(void)state;
	struct check_opts o;
	setenv("TCC_TOKEN", "tok-123456", 1);
	const char *ok[] = {"check", "http://h:1/mcp", "--json", "--lenient", "--timeout", "2.5",
	                    "--header", "Authorization: Bearer ${TCC_TOKEN}", "--header",
	                    "X-Team:  blue  ", "--transport", "sse", NULL};
	assert_int_equal(parse(ok, &o), 0);
	assert_string_equal(o.url, "http://h:1/mcp");
	assert_true(o.json && o.lenient);
	assert_true(o.timeout_s == 2.5);
	assert_int_equal(o.nheaders, 2);
	assert_string_equal(o.headers[0].wire, "Bearer tok-123456");
	assert_string_equal(o.headers[1].name, "X-Team");
	assert_string_equal(o.headers[1].wire, "blue");
	assert_string_equal(o.transport, "sse");
	/* Masked: the env value, the whole Authorization value. */
	int env = 0, whole = 0;
	for (size_t i = 0; i < o.sec.n; i++) {
		env |= strcmp(o.sec.v[i], "tok-123456") == 0;
		whole |= strcmp(o.sec.v[i], "Bearer tok-123456") == 0;
	}
	assert_true(env && whole);
	opts_free(&o);

	const char *help[] = {"check", "--help", NULL};
	assert_int_equal(parse(help, &o), 1);
	opts_free(&o);
	const char *const bad[][6] = {
		{"check", NULL},
		{"check", "http://a/mcp", "http://b/mcp", NULL},
		{"check", "http://a/mcp", "--tools-file", "f", NULL},
		{"check", "--tools-file", "f", "--header", "A: b", NULL},
		{"check", "http://a/mcp", "--timeout", "0", NULL},
		{"check", "http://a/mcp", "--timeout", NULL},
		{"check", "http://a/mcp", "--header", "Bad Name: x", NULL},
		{"check", "http://a/mcp", "--header", "Content-Length: 3", NULL},
		{"check", "http://a/mcp", "--transport", "stdio", NULL},
		{"check", "http://a/mcp", "--protocol", "", NULL},
		{"check", "http://a/mcp", "--nope", NULL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &o) != -1)
			fail_msg("case %zu was accepted", i);
		opts_free(&o);
	}
}

static void test_page_of_doc(void **state)
{
	(void)state;
	json_t *a = json_loads("[{\"name\":\"x\"}]", 0, NULL);
	json_t *b = json_loads("{\"tools\":[]}", 0, NULL);
	json_t *c = json_loads("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}", 0, NULL);
	json_t *d = json_loads("{\"result\":{}}", 0, NULL);
	assert_ptr_equal(page_of_doc(a), a);
	assert_ptr_equal(page_of_doc(b), b);
	assert_ptr_equal(page_of_doc(c), json_object_get(c, "result"));
	assert_null(page_of_doc(d));
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(d);
}

static void test_modern_versions(void **state)
{
	(void)state;
	assert_true(is_modern_version("2026-07-28"));
	assert_true(is_modern_version("2027-01-01"));
	assert_false(is_modern_version("2025-11-25"));
	assert_false(is_modern_version("draft"));
	assert_false(is_modern_version(NULL));
	json_t *v = json_loads("[\"2025-11-25\",\"2027-02-02\",\"2026-07-28\"]", 0, NULL);
	assert_string_equal(pick_modern(v), "2026-07-28");
	json_array_remove(v, 2);
	assert_string_equal(pick_modern(v), "2027-02-02");
	json_array_remove(v, 1);
	assert_null(pick_modern(v));
	json_decref(v);
}

/* ---- the commands on files -------------------------------------------------- */

#define TOOL(n, d) "{'name':'" n "','description':'" d "','inputSchema':{'type':'object'}}"

static void test_tools_file_exit_codes(void **state)
{
	(void)state;
	char *good = temp_json("{'tools':[" TOOL("a", "A perfectly fine tool") "]}");
	char *bad = temp_json("{'tools':[" TOOL("a", "A perfectly fine tool") ",{'name':'b'}]}");
	char *none = temp_json("{'x':1}");
	int rc;
	char *out;

	char *a1[] = {"check", "--tools-file", good, NULL};
	out = captured(check_main, 3, a1, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "PASSED"));
	free(out);

	char *a2[] = {"check", "--tools-file", bad, "--json", NULL};
	out = captured(check_main, 4, a2, &rc);
	assert_int_equal(rc, 1);
	json_t *j = json_loads(out, JSON_DISABLE_EOF_CHECK, NULL);
	assert_non_null(j);
	assert_false(json_is_true(json_object_get(j, "passed")));
	assert_true(json_real_value(json_object_get(j, "score")) == 0.5);
	json_decref(j);
	free(out);

	char *a3[] = {"check", "--tools-file", bad, "--lenient", NULL};
	out = captured(check_main, 4, a3, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "PASSED (lenient)"));
	free(out);

	/* A breaking change fails even with --lenient. */
	char *a4[] = {"check", "--tools-file", good, "--lenient", "--baseline", bad, NULL};
	out = captured(check_main, 6, a4, &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(out, "tool-removed"));
	free(out);

	char *a5[] = {"check", "--tools-file", none, NULL};
	out = captured(check_main, 3, a5, &rc);
	assert_int_equal(rc, 2);
	free(out);

	/* --save-baseline writes every tool; diff of a file with itself. */
	char saved[] = "/tmp/test_check_cmd_saved_XXXXXX";
	close(mkstemp(saved));
	char *a6[] = {"check", "--tools-file", bad, "--save-baseline", saved, NULL};
	out = captured(check_main, 5, a6, &rc);
	assert_int_equal(rc, 1);
	free(out);
	char *d1[] = {"diff", saved, bad, "--json", NULL};
	out = captured(diff_main, 4, d1, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"breaking\": 0"));
	free(out);
	char *d2[] = {"diff", bad, good, NULL};
	out = captured(diff_main, 3, d2, &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(out, "tool-removed"));
	free(out);
	char *d3[] = {"diff", bad, none, NULL};
	out = captured(diff_main, 3, d3, &rc);
	assert_int_equal(rc, 2);
	free(out);

	unlink(saved);
	unlink(good);
	unlink(bad);
	unlink(none);
	free(good);
	free(bad);
	free(none);
}

/* ---- the client against a canned server ------------------------------------ */

/* Answers one request per connection by the JSON-RPC method in its body:
 * discover 400, initialize (session), initialized 202, two pages of
 * tools/list, DELETE 200. Returns (1) after the DELETE. */
static void *canned_server(void *arg)
{
	int lfd = *(int *)arg;
	for (int n = 0; n < 20; n++) {
		int c = accept(lfd, NULL, NULL);
		if (c < 0)
			return NULL;
		char req[8192];
		size_t got = 0;
		for (;;) {
			ssize_t r = read(c, req + got, sizeof(req) - 1 - got);
			if (r <= 0)
				break;
			got += (size_t)r;
			req[got] = '\0';
			char *end = strstr(req, "\r\n\r\n");
			const char *cl = strcasestr(req, "content-length:");
			if (end && (!cl || got >= (size_t)(end + 4 - req) + (size_t)atoi(cl + 15)))
				break;
		}
		const char *body;
		int status = 200;
		int del = strncmp(req, "DELETE", 6) == 0;
		if (del)
			body = "";
		else if (strstr(req, "server/discover")) {
			status = 400;
			body = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"
			       "\"message\":\"no session\"}}";
		} else if (strstr(req, "\"initialize\""))
			body = "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"protocolVersion\":\"2025-06-18\","
			       "\"capabilities\":{},\"serverInfo\":{\"name\":\"c\",\"version\":\"0\"}}}";
		else if (strstr(req, "notifications/initialized")) {
			status = 202;
			body = "";
		} else if (strstr(req, "\"cursor\""))
			body = "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[{\"name\":\"b\","
			       "\"inputSchema\":{\"type\":\"object\"}}]}}";
		else
			body = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[{\"name\":\"a\","
			       "\"description\":\"A perfectly fine tool\",\"inputSchema\":{\"type\":"
			       "\"object\"}}],\"nextCursor\":\"p2\"}}";
		char head[256];
		int hl = snprintf(head, sizeof(head),
		                  "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
		                  "Mcp-Session-Id: canned-1\r\nContent-Length: %zu\r\n"
		                  "Connection: close\r\n\r\n",
		                  status, strlen(body));
		if (write(c, head, (size_t)hl) < 0 || write(c, body, strlen(body)) < 0) {
			close(c);
			return NULL;
		}
		close(c);
		if (del)
			return (void *)1;
	}
	return NULL;
}

static void test_client_against_canned_server(void **state)
{
	(void)state;
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 8), 0);
	socklen_t al = sizeof(a);
	getsockname(lfd, (struct sockaddr *)&a, &al);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, canned_server, &lfd), 0);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", ntohs(a.sin_port));
	char *argv[] = {"check", url, "--json", NULL};
	int rc;
	char *out = captured(check_main, 3, argv, &rc);
	void *saw_delete = NULL;
	pthread_join(th, &saw_delete);
	close(lfd);
	assert_ptr_equal(saw_delete, (void *)1);
	assert_int_equal(rc, 1); /* tool b has no description */
	json_t *j = json_loads(out, JSON_DISABLE_EOF_CHECK, NULL);
	if (!j)
		fail_msg("not JSON: %s", out);
	json_t *src = json_object_get(j, "source");
	assert_string_equal(json_string_value(json_object_get(src, "protocol")), "2025-06-18");
	assert_int_equal(json_integer_value(json_object_get(src, "pages")), 2);
	assert_int_equal(json_array_size(json_object_get(j, "tools")), 2);
	json_decref(j);
	free(out);
}

static void test_client_connection_refused(void **state)
{
	(void)state;
	/* A port nothing listens on: bind, read it, close. */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(s, (struct sockaddr *)&a, sizeof(a));
	socklen_t al = sizeof(a);
	getsockname(s, (struct sockaddr *)&a, &al);
	close(s);
	char url[64];
	snprintf(url, sizeof(url), "http://u:p@127.0.0.1:%d/mcp?q=1", ntohs(a.sin_port));
	char *argv[] = {"check", url, NULL};
	int rc;
	char *out = captured(check_main, 2, argv, &rc);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(out, "connection refused"));
	assert_null(strstr(out, "u:p@"));
	assert_null(strstr(out, "q=1"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auto_first),
		cmocka_unit_test(test_http_reason),
		cmocka_unit_test(test_resolve_ref),
		cmocka_unit_test(test_emit_masks),
		cmocka_unit_test(test_expand_env),
		cmocka_unit_test(test_expand_env_odd_names),
		cmocka_unit_test(test_header_odd_env_name),
		cmocka_unit_test(test_parse_args),
		cmocka_unit_test(test_page_of_doc),
		cmocka_unit_test(test_modern_versions),
		cmocka_unit_test(test_tools_file_exit_codes),
		cmocka_unit_test(test_client_against_canned_server),
		cmocka_unit_test(test_client_connection_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

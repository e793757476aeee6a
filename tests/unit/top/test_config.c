/* Unit tests for proxy/config.c: upstream URLs, JSON config files (written
 * to temporary files) and the command line. Public API only.
 *
 * Why this file is long: one test per behaviour of the module, each reading
 * on its own (a failure names one behaviour), with the regression cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "admin/admin.h"
#include "proxy/config.h"
#include "proxy/base/limits.h"
#include "tests/unit/helpers.h"

/* ---- helpers -------------------------------------------------------------- */

static void ups_fini(struct px_upstream_conf *u)
{
	free(u->name);
	free(u->path);
	free(u->url_safe);
	free(u->host);
	free(u->port);
	free(u->target);
	free(u->host_header);
	free(u->basic_auth);
	free(u->tls_ca_file);
	free(u->tls_cert_file);
	free(u->tls_key_file);
	json_decref(u->contract);
	for (size_t i = 0; i < u->nheaders; i++) {
		free(u->headers[i].name);
		free(u->headers[i].value);
	}
	free(u->headers);
	memset(u, 0, sizeof(*u));
}

/* Parses url into *u (zeroed first); returns config_parse_url's result. */
static int parse(struct px_upstream_conf *u, const char *url, const char **why)
{
	memset(u, 0, sizeof(*u));
	*why = NULL;
	return config_parse_url(u, url, why);
}

struct tmpfile {
	char path[64];
};

/* Writes text to a new temporary file. */
static void tmp_write(struct tmpfile *t, const char *text)
{
	snprintf(t->path, sizeof(t->path), "/tmp/mcpwarden-test-XXXXXX");
	th_temp_write(t->path, text);
}

static void tmp_remove(struct tmpfile *t)
{
	unlink(t->path);
}

/* Loads a config from text; returns it (or NULL with errbuf filled). */
static struct px_config *load_text(const char *text, char *errbuf, size_t errlen)
{
	struct tmpfile t;
	tmp_write(&t, text);
	struct px_config *cfg = config_load_file(t.path, errbuf, errlen);
	tmp_remove(&t);
	return cfg;
}

/* Asserts that loading text fails with an error containing want. */
static void load_fails(const char *text, const char *want)
{
	char err[2048];
	struct px_config *cfg = load_text(text, err, sizeof(err));
	int accepted = cfg != NULL;
	if (cfg || !strstr(err, want))
		print_error("config:\n%s\nerrors:\n%s\nwanted: %s\n", text, cfg ? "(none)" : err,
		            want);
	config_free(cfg);
	assert_false(accepted);
	assert_non_null(strstr(err, want));
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- config_parse_url ------------------------------------------------------ */

static void test_url_basic(void **state)
{
	(void)state;
	struct px_upstream_conf u;
	const char *why;

	assert_int_equal(parse(&u, "http://127.0.0.1:3001/mcp", &why), 0);
	assert_int_equal(u.tls, 0);
	assert_string_equal(u.host, "127.0.0.1");
	assert_string_equal(u.port, "3001");
	assert_string_equal(u.target, "/mcp");
	assert_string_equal(u.host_header, "127.0.0.1:3001");
	assert_string_equal(u.url_safe, "http://127.0.0.1:3001/mcp");
	assert_null(u.basic_auth);
	ups_fini(&u);
}

static void test_url_default_ports(void **state)
{
	(void)state;
	struct px_upstream_conf u;
	const char *why;

	assert_int_equal(parse(&u, "http://example.com/mcp", &why), 0);
	assert_string_equal(u.port, "80");
	assert_string_equal(u.host_header, "example.com");
	assert_string_equal(u.url_safe, "http://example.com:80/mcp");
	ups_fini(&u);

	assert_int_equal(parse(&u, "https://example.com", &why), 0);
	assert_int_equal(u.tls, 1);
	assert_string_equal(u.port, "443");
	assert_string_equal(u.target, "/");
	assert_string_equal(u.host_header, "example.com");
	ups_fini(&u);

	/* An explicit default port is still left out of Host. */
	assert_int_equal(parse(&u, "http://example.com:80/x", &why), 0);
	assert_string_equal(u.host_header, "example.com");
	ups_fini(&u);
	assert_int_equal(parse(&u, "https://example.com:443/x", &why), 0);
	assert_string_equal(u.host_header, "example.com");
	ups_fini(&u);

	/* The other scheme's default is not a default. */
	assert_int_equal(parse(&u, "http://example.com:443/x", &why), 0);
	assert_string_equal(u.host_header, "example.com:443");
	ups_fini(&u);
	assert_int_equal(parse(&u, "https://example.com:80/x", &why), 0);
	assert_string_equal(u.host_header, "example.com:80");
	ups_fini(&u);
	assert_int_equal(parse(&u, "http://example.com:8080", &why), 0);
	assert_string_equal(u.host_header, "example.com:8080");
	assert_string_equal(u.target, "/");
	ups_fini(&u);
}

static void test_url_userinfo(void **state)
{
	(void)state;
	struct px_upstream_conf u;
	const char *why;

	assert_int_equal(parse(&u, "http://alice:s3cret@h:1/p?token=abc", &why), 0);
	assert_string_equal(u.basic_auth, "Basic YWxpY2U6czNjcmV0");
	assert_string_equal(u.host, "h");
	assert_string_equal(u.host_header, "h:1");
	assert_string_equal(u.target, "/p?token=abc");
	/* The loggable form has neither the user, the password nor the query. */
	assert_string_equal(u.url_safe, "http://h:1/p");
	assert_null(strstr(u.url_safe, "alice"));
	assert_null(strstr(u.url_safe, "s3cret"));
	assert_null(strstr(u.url_safe, "token"));
	ups_fini(&u);

	/* Percent-encoded userinfo is decoded before base64. */
	assert_int_equal(parse(&u, "http://us%40er:p%3Ass@h/", &why), 0);
	assert_string_equal(u.basic_auth, "Basic dXNAZXI6cDpzcw==");
	assert_string_equal(u.url_safe, "http://h:80/");
	ups_fini(&u);
	assert_int_equal(parse(&u, "http://%ff%FE%fd:x@h/", &why), 0);
	assert_string_equal(u.basic_auth, "Basic //79Ong=");
	ups_fini(&u);

	/* Padding for every length mod 3. */
	assert_int_equal(parse(&u, "http://a@h/", &why), 0);
	assert_string_equal(u.basic_auth, "Basic YQ==");
	ups_fini(&u);
	assert_int_equal(parse(&u, "http://ab@h/", &why), 0);
	assert_string_equal(u.basic_auth, "Basic YWI=");
	ups_fini(&u);
	assert_int_equal(parse(&u, "http://abc@h/", &why), 0);
	assert_string_equal(u.basic_auth, "Basic YWJj");
	ups_fini(&u);
	assert_int_equal(parse(&u, "http://user:@h/", &why), 0);
	assert_string_equal(u.basic_auth, "Basic dXNlcjo=");
	ups_fini(&u);

	/* An '@' after the authority is not userinfo. */
	assert_int_equal(parse(&u, "http://h/a@b?c@d", &why), 0);
	assert_null(u.basic_auth);
	assert_string_equal(u.host, "h");
	assert_string_equal(u.target, "/a@b?c@d");
	assert_string_equal(u.url_safe, "http://h:80/a@b");
	ups_fini(&u);
}

static void test_url_ipv6(void **state)
{
	(void)state;
	struct px_upstream_conf u;
	const char *why;

	assert_int_equal(parse(&u, "http://[::1]:3001/mcp", &why), 0);
	assert_string_equal(u.host, "::1");
	assert_string_equal(u.port, "3001");
	assert_string_equal(u.host_header, "[::1]:3001");
	assert_string_equal(u.url_safe, "http://[::1]:3001/mcp");
	ups_fini(&u);

	assert_int_equal(parse(&u, "http://u:p@[2001:db8::5]/x?y", &why), 0);
	assert_string_equal(u.host, "2001:db8::5");
	assert_string_equal(u.port, "80");
	assert_string_equal(u.host_header, "[2001:db8::5]");
	assert_string_equal(u.url_safe, "http://[2001:db8::5]:80/x");
	assert_non_null(u.basic_auth);
	ups_fini(&u);
}

static void test_url_target(void **state)
{
	(void)state;
	struct px_upstream_conf u;
	const char *why;

	assert_int_equal(parse(&u, "http://h:1?x=1", &why), 0);
	assert_string_equal(u.target, "/?x=1");
	assert_string_equal(u.url_safe, "http://h:1/");
	ups_fini(&u);

	assert_int_equal(parse(&u, "http://h:1/a/b?x=1&y=2#frag", &why), 0);
	assert_string_equal(u.target, "/a/b?x=1&y=2");
	assert_string_equal(u.url_safe, "http://h:1/a/b");
	ups_fini(&u);

	assert_int_equal(parse(&u, "http://h#frag", &why), 0);
	assert_string_equal(u.target, "/");
	assert_string_equal(u.host, "h");
	ups_fini(&u);

	assert_int_equal(parse(&u, "http://h:00080/", &why), 0);
	assert_string_equal(u.port, "80");
	assert_string_equal(u.host_header, "h");
	ups_fini(&u);
}

static void test_url_errors(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"ftp://h/",
		"h:80/mcp",
		"HTTP//h/",
		"",
		"http://",
		"http:///mcp",
		"http://:80/mcp",
		"http://user@/mcp",
		"http://h:0/",
		"http://h:65536/",
		"http://h:123456789/",
		"http://h:abc/",
		"http://h:/",
		"http://h:-1/",
		"http://h:+80/",
		"http://h:8 0/",
		"http://[::1/x",
		"http://[::1]:/x",
		"http://[::1]:x/",
		"http://[]:80/",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct px_upstream_conf u;
		const char *why;
		int rc = parse(&u, bad[i], &why);
		if (rc != -1)
			print_error("accepted: \"%s\"\n", bad[i]);
		ups_fini(&u);
		assert_int_equal(rc, -1);
		assert_non_null(why);
	}
}

/* Regression (fixed in 87860bb): after "]" only ":port" was looked at and
 * anything else up to the path was ignored, so "http://[::1]8080/mcp" was
 * taken as port 80. */
static void test_regress_url_junk_after_ipv6(void **state)
{
	(void)state;
	static const char *const bad[] = {"http://[::1]junk/mcp", "http://[::1]8080/mcp"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct px_upstream_conf u;
		const char *why;
		int rc = parse(&u, bad[i], &why);
		if (rc != -1)
			print_error("accepted: \"%s\" as port %s\n", bad[i], u.port);
		ups_fini(&u);
		assert_int_equal(rc, -1);
	}
}

/* ---- config_load_file -------------------------------------------------------- */

static void test_load_good_file(void **state)
{
	(void)state;
	char err[1024] = "x";
	struct px_config *cfg = load_text(
		"{\n"
		"  \"listen\": \"[::1]:9000\",\n"
		"  \"timeouts\": {\"connect_ms\": 1500, \"request_ms\": 2500, \"client_idle_ms\": 3,\n"
		"               \"upstream_idle_ms\": 4, \"sse_keepalive_ms\": 5, \"drain_ms\": 6},\n"
		"  \"limits\": {\"max_body_bytes\": 1000, \"max_header_bytes\": 2000,\n"
		"             \"max_sse_event_bytes\": 3000, \"max_connections\": 40,\n"
		"             \"max_batch\": 0, \"max_output_bytes\": 5000},\n"
		"  \"log\": {\"level\": \"debug\", \"format\": \"json\"},\n"
		"  \"upstreams\": [\n"
		"    {\"name\": \"prod\", \"path\": \"/prod/mcp\", \"url\": \"http://10.0.0.1:3001/mcp\",\n"
		"     \"timeouts\": {\"connect_ms\": 100, \"request_ms\": 200}},\n"
		"    {\"url\": \"http://u:p@[::1]:3002/mcp?k=v\", \"path\": \"/staging/mcp\"}\n"
		"  ]\n"
		"}\n",
		err, sizeof(err));
	if (!cfg)
		print_error("%s", err);
	assert_non_null(cfg);
	assert_string_equal(err, "");
	assert_string_equal(cfg->listen_host, "::1");
	assert_string_equal(cfg->listen_port, "9000");
	assert_int_equal(cfg->timeouts.connect_ms, 1500);
	assert_int_equal(cfg->timeouts.request_ms, 2500);
	assert_int_equal(cfg->timeouts.client_idle_ms, 3);
	assert_int_equal(cfg->timeouts.upstream_idle_ms, 4);
	assert_int_equal(cfg->timeouts.sse_keepalive_ms, 5);
	assert_int_equal(cfg->timeouts.drain_ms, 6);
	assert_int_equal(cfg->limits.max_body_bytes, 1000);
	assert_int_equal(cfg->limits.max_header_bytes, 2000);
	assert_int_equal(cfg->limits.max_sse_event_bytes, 3000);
	assert_int_equal(cfg->limits.max_connections, 40);
	assert_int_equal(cfg->limits.max_batch, 0);
	assert_int_equal(cfg->limits.max_output_bytes, 5000);
	assert_int_equal(cfg->log_level, LOG_DEBUG);
	assert_int_equal(cfg->log_json, 1);
	assert_non_null(cfg->config_file);
	assert_int_equal(cfg->nups, 2);

	struct px_upstream_conf *u = &cfg->ups[0];
	assert_string_equal(u->name, "prod");
	assert_string_equal(u->path, "/prod/mcp");
	assert_string_equal(u->host, "10.0.0.1");
	assert_string_equal(u->port, "3001");
	assert_int_equal(u->connect_timeout_ms, 100);
	assert_int_equal(u->request_timeout_ms, 200);

	u = &cfg->ups[1];
	assert_string_equal(u->name, "upstream1");
	assert_string_equal(u->path, "/staging/mcp");
	assert_string_equal(u->host, "::1");
	assert_string_equal(u->target, "/mcp?k=v");
	assert_string_equal(u->url_safe, "http://[::1]:3002/mcp");
	assert_string_equal(u->basic_auth, "Basic dTpw");
	/* Per-upstream timeouts default to the global ones. */
	assert_int_equal(u->connect_timeout_ms, 1500);
	assert_int_equal(u->request_timeout_ms, 2500);
	config_free(cfg);
	config_free(NULL);
}

static void test_load_minimal_defaults(void **state)
{
	(void)state;
	char err[256];
	struct px_config *cfg = load_text("{\"upstreams\": [{\"url\": \"http://127.0.0.1:3001/mcp\"}]}",
	                                  err, sizeof(err));
	assert_non_null(cfg);
	assert_string_equal(cfg->listen_host, "127.0.0.1");
	assert_string_equal(cfg->listen_port, "8080");
	assert_int_equal(cfg->timeouts.connect_ms, TIMEOUT_CONNECT_MS);
	assert_int_equal(cfg->timeouts.request_ms, TIMEOUT_REQUEST_MS);
	assert_int_equal(cfg->timeouts.client_idle_ms, TIMEOUT_CLIENT_IDLE_MS);
	assert_int_equal(cfg->timeouts.upstream_idle_ms, TIMEOUT_UPSTREAM_IDLE_MS);
	assert_int_equal(cfg->timeouts.sse_keepalive_ms, TIMEOUT_SSE_KEEPALIVE_MS);
	assert_int_equal(cfg->timeouts.drain_ms, TIMEOUT_DRAIN_MS);
	assert_int_equal(cfg->limits.max_body_bytes, LIMIT_MAX_BODY_BYTES);
	assert_int_equal(cfg->limits.max_header_bytes, LIMIT_MAX_HEADER_BYTES);
	assert_int_equal(cfg->limits.max_batch, LIMIT_MAX_BATCH);
	assert_int_equal(cfg->log_level, LOG_INFO);
	assert_int_equal(cfg->log_json, 0);
	assert_int_equal(cfg->nups, 1);
	assert_string_equal(cfg->ups[0].name, "upstream0");
	assert_string_equal(cfg->ups[0].path, "/mcp");
	assert_int_equal(cfg->ups[0].connect_timeout_ms, TIMEOUT_CONNECT_MS);
	config_free(cfg);

	/* ":port" listens on every address. */
	cfg = load_text("{\"listen\": \":0\", \"upstreams\": [{\"url\": \"http://h/\"}]}", err,
	                sizeof(err));
	assert_non_null(cfg);
	assert_string_equal(cfg->listen_host, "0.0.0.0");
	assert_string_equal(cfg->listen_port, "0");
	config_free(cfg);
}

static void test_load_unknown_keys(void **state)
{
	(void)state;
	static const char up[] = "\"upstreams\": [{\"url\": \"http://h/\"}]";
	char text[512];

	snprintf(text, sizeof(text), "{%s, \"listn\": \"x\"}", up);
	load_fails(text, "$.listn: unknown key");
	load_fails("{\"upstreams\": [{\"urll\": \"http://h/\"}]}", "$.upstreams[0].urll: unknown key");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}, {\"url\": \"http://h/\", "
	           "\"path\": \"/b\", \"timeouts\": {\"idle_ms\": 1}}]}",
	           "$.upstreams[1].timeouts.idle_ms: unknown key");
	snprintf(text, sizeof(text), "{%s, \"timeouts\": {\"conect_ms\": 1}}", up);
	load_fails(text, "$.timeouts.conect_ms: unknown key");
	snprintf(text, sizeof(text), "{%s, \"limits\": {\"max_bodyy\": 1}}", up);
	load_fails(text, "$.limits.max_bodyy: unknown key");
	snprintf(text, sizeof(text), "{%s, \"log\": {\"lvl\": \"info\"}}", up);
	load_fails(text, "$.log.lvl: unknown key");
}

/* Issue 17: editors put "$schema" in a JSON file; it is accepted and
 * ignored, but still must be a string. */
static void test_r17_schema_key(void **state)
{
	(void)state;
	char err[2048];
	struct px_config *cfg = load_text("{\"$schema\": \"https://example.com/mcpwarden.json\", "
	                                  "\"upstreams\": [{\"url\": \"http://h/\"}]}",
	                                  err, sizeof(err));
	if (!cfg)
		print_error("%s", err);
	assert_non_null(cfg);
	config_free(cfg);
	load_fails("{\"$schema\": 1, \"upstreams\": [{\"url\": \"http://h/\"}]}",
	           "$.$schema: must be a string");
	load_fails("{\"$schemas\": \"x\", \"upstreams\": [{\"url\": \"http://h/\"}]}",
	           "$.$schemas: unknown key");
}

/* admin_check on the admin section of text; returns its result, errors in err. */
static int admin_check_text(const char *admin, char *err, size_t errlen)
{
	char text[1024], lerr[1024];
	snprintf(text, sizeof(text), "{\"upstreams\": [{\"url\": \"http://h/\"}], \"admin\": %s}",
	         admin);
	struct px_config *cfg = load_text(text, lerr, sizeof(lerr));
	if (!cfg)
		print_error("%s", lerr);
	assert_non_null(cfg);
	int rc = admin_check(cfg, err, errlen);
	config_free(cfg);
	return rc;
}

static void admin_check_fails(const char *admin, const char *want)
{
	char err[2048];
	int rc = admin_check_text(admin, err, sizeof(err));
	if (rc == 0 || !strstr(err, want))
		print_error("admin: %s\nerrors:\n%s\nwanted: %s\n", admin, rc ? err : "(none)", want);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err, want));
}

/* Issue 17: --check-config checks the admin section as admin_setup would
 * (it printed OK for all of these, and the start failed). */
static void test_r17_admin_check(void **state)
{
	(void)state;
	char err[2048];

	assert_int_equal(admin_check_text("{\"listen\": \"off\", \"ring_size\": 10}", err,
	                                  sizeof(err)), 0);
	assert_int_equal(admin_check_text("{\"listen\": \"127.0.0.1:0\", \"max_streams\": 2, "
	                                  "\"redact_keys\": [\"secret\"]}", err, sizeof(err)), 0);
	admin_check_fails("{\"listen\": \"off\", \"bogus\": 1}", "$.admin.bogus: unknown key");
	admin_check_fails("{\"listen\": \"off\", \"ring_size\": 0}", "$.admin.ring_size:");
	admin_check_fails("{\"listen\": \"127.0.0.1:0\", \"max_labels\": 0}", "$.admin.max_labels:");
	admin_check_fails("{\"listen\": \"nowhere\"}", "$.admin.listen:");
	admin_check_fails("{\"token_file\": \"/nonexistent/token\"}",
	                  "$.admin.token_file: /nonexistent/token");
	admin_check_fails("{\"listen\": \"127.0.0.1:0\", \"tls\": \"listener\"}",
	                  "$.admin.tls: \"listener\" needs TLS on the client listener");
	admin_check_fails("{\"listen\": \"127.0.0.1:0\", \"tls\": {\"cert_file\": "
	                  "\"/nonexistent/a.pem\", \"key_file\": \"/nonexistent/a.key\"}}",
	                  "$.admin.tls: TLS certificate /nonexistent/a.pem");
	admin_check_fails("{\"listen\": \"off\", \"log_calls\": \"/nonexistent/dir/calls.jsonl\"}",
	                  "$.admin.log_calls: /nonexistent/dir/calls.jsonl");
	admin_check_fails("{\"listen\": \"127.0.0.1:0\", \"redact_keys\": [\"--\"]}",
	                  "$.admin.redact_keys[0]: cannot be used");
	/* Off with no call log: admin_setup builds nothing, so nothing fails. */
	assert_int_equal(admin_check_text("{\"listen\": \"off\", \"redact_keys\": [\"--\"]}", err,
	                                  sizeof(err)), 0);
	/* Every error at once. */
	assert_int_equal(admin_check_text("{\"listen\": \"off\", \"bogus\": 1, \"ring_size\": 0}",
	                                  err, sizeof(err)), -1);
	assert_non_null(strstr(err, "$.admin.bogus: unknown key"));
	assert_non_null(strstr(err, "$.admin.ring_size:"));
	/* A log file that does not exist yet is fine, and is not created. */
	char path[64];
	snprintf(path, sizeof(path), "/tmp/mcpwarden-calls-%d.jsonl", (int)getpid());
	unlink(path);
	char admin[160];
	snprintf(admin, sizeof(admin), "{\"listen\": \"off\", \"log_calls\": \"%s\"}", path);
	assert_int_equal(admin_check_text(admin, err, sizeof(err)), 0);
	assert_int_equal(access(path, F_OK), -1);
}

/* Per-session caps of pass-through sessions: defaults, values, 0, range. */
static void test_load_session_caps(void **state)
{
	(void)state;
	char err[256];
	struct px_config *cfg = load_text("{\"upstreams\": [{\"url\": \"http://h/\"}]}", err,
	                                  sizeof(err));
	assert_non_null(cfg);
	assert_int_equal(cfg->limits.max_inflight_per_session, LIMIT_MAX_INFLIGHT_PER_SESSION);
	assert_int_equal(cfg->limits.max_streams_per_session, LIMIT_MAX_STREAMS_PER_SESSION);
	config_free(cfg);
	cfg = load_text("{\"upstreams\": [{\"url\": \"http://h/\"}], \"limits\": "
	                "{\"max_inflight_per_session\": 3, \"max_streams_per_session\": 0}}",
	                err, sizeof(err));
	assert_non_null(cfg);
	assert_int_equal(cfg->limits.max_inflight_per_session, 3);
	assert_int_equal(cfg->limits.max_streams_per_session, 0);
	config_free(cfg);
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"limits\": "
	           "{\"max_inflight_per_session\": -1}}",
	           "$.limits.max_inflight_per_session: must be from 0 to 100000");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"limits\": "
	           "{\"max_streams_per_session\": \"4\"}}",
	           "$.limits.max_streams_per_session: must be a non-negative integer");
}

/* "yield_after_us" (proxy/net/loop.h): 300 by default, 0 turns it off, a
 * change needs a restart (the loops read it when they start). */
static void test_load_yield_after(void **state)
{
	(void)state;
	char err[256];
	struct px_config *a = load_text("{\"upstreams\": [{\"url\": \"http://h/\"}]}", err,
	                                sizeof(err));
	assert_non_null(a);
	assert_int_equal(a->yield_after_us, LIMIT_YIELD_AFTER_US);
	struct px_config *b = load_text("{\"upstreams\": [{\"url\": \"http://h/\"}], "
	                                "\"yield_after_us\": 0}", err, sizeof(err));
	assert_non_null(b);
	assert_int_equal(b->yield_after_us, 0);
	assert_string_equal(config_restart_needed(a, b), "yield_after_us");
	config_free(a);
	config_free(b);
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"yield_after_us\": 2000000}",
	           "$.yield_after_us: must be from 0 to 1000000");
}

/* upstreams[].validation: defaults report/report/false, each key parsed,
 * errors located, a change needs a restart. */
static void test_load_validation(void **state)
{
	(void)state;
	char err[256];
	struct px_config *a = load_text("{\"upstreams\": [{\"url\": \"http://h/\"}]}", err,
	                                sizeof(err));
	assert_non_null(a);
	assert_int_equal(a->ups[0].validation.arguments, 1);
	assert_int_equal(a->ups[0].validation.results, 1);
	assert_int_equal(a->ups[0].validation.formats, 0);
	struct px_config *b = load_text("{\"upstreams\": [{\"url\": \"http://h/\", \"validation\": "
	                                "{\"arguments\": \"fail\", \"results\": \"off\", "
	                                "\"formats\": true}}]}", err, sizeof(err));
	assert_non_null(b);
	assert_int_equal(b->ups[0].validation.arguments, 2);
	assert_int_equal(b->ups[0].validation.results, 0);
	assert_int_equal(b->ups[0].validation.formats, 1);
	assert_string_equal(config_restart_needed(a, b), "an upstream's validation settings");
	config_free(a);
	config_free(b);
	/* --upstream gets the defaults too */
	char *argv[] = {"mcpwarden", "--upstream", "http://h/mcp"};
	enum config_action act;
	struct px_config *c = config_from_argv(3, argv, &act, err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->ups[0].validation.arguments, 1);
	assert_int_equal(c->ups[0].validation.results, 1);
	config_free(c);
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"validation\": {\"results\": "
	           "\"strict\"}}]}",
	           "$.upstreams[0].validation.results: must be off, report or fail");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"validation\": {\"argument\": "
	           "\"fail\"}}]}",
	           "$.upstreams[0].validation.argument: unknown key");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"validation\": {\"formats\": 1}}]}",
	           "$.upstreams[0].validation.formats: must be true or false");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"validation\": \"fail\"}]}",
	           "$.upstreams[0].validation: must be an object");
}

/* Every mistake is reported, one a line, not only the first. */
static void test_load_reports_every_error(void **state)
{
	(void)state;
	char err[2048];
	struct px_config *cfg = load_text("{\"listn\": 1, \"upstreams\": [{\"urll\": \"x\"}],"
	                                  " \"log\": {\"level\": \"loud\"}}",
	                                  err, sizeof(err));
	assert_null(cfg);
	assert_non_null(strstr(err, "$.listn: unknown key\n"));
	assert_non_null(strstr(err, "$.upstreams[0].urll: unknown key\n"));
	assert_non_null(strstr(err, "$.upstreams[0].url: required\n"));
	assert_non_null(strstr(err, "$.log.level: must be debug, info, warn or error\n"));
	assert_int_equal(count_lines(err), 4);
}

static void test_load_wrong_types(void **state)
{
	(void)state;
	static const char up[] = "\"upstreams\": [{\"url\": \"http://h/\"}]";
	char text[512];

	snprintf(text, sizeof(text), "{%s, \"listen\": 8080}", up);
	load_fails(text, "$.listen: must be a string");
	load_fails("{\"upstreams\": {\"url\": \"http://h/\"}}", "$.upstreams: must be an array");
	load_fails("{\"upstreams\": [\"http://h/\"]}", "$.upstreams[0]: must be an object");
	load_fails("{\"upstreams\": [{\"url\": 5}]}", "$.upstreams[0].url: must be a string");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"timeouts\": []}]}",
	           "$.upstreams[0].timeouts: must be an object");
	snprintf(text, sizeof(text), "{%s, \"timeouts\": {\"connect_ms\": \"5\"}}", up);
	load_fails(text, "$.timeouts.connect_ms: must be a non-negative integer");
	snprintf(text, sizeof(text), "{%s, \"timeouts\": {\"connect_ms\": 1.5}}", up);
	load_fails(text, "$.timeouts.connect_ms: must be a non-negative integer");
	snprintf(text, sizeof(text), "{%s, \"timeouts\": {\"connect_ms\": -1}}", up);
	load_fails(text, "$.timeouts.connect_ms: must be from 0 to 86400000");
	snprintf(text, sizeof(text), "{%s, \"timeouts\": {\"drain_ms\": 86400001}}", up);
	load_fails(text, "$.timeouts.drain_ms: must be from 0 to 86400000");
	snprintf(text, sizeof(text), "{%s, \"limits\": {\"max_header_bytes\": 1048577}}", up);
	load_fails(text, "$.limits.max_header_bytes: must be from 0 to 1048576");
	snprintf(text, sizeof(text), "{%s, \"limits\": {\"max_batch\": true}}", up);
	load_fails(text, "$.limits.max_batch: must be a non-negative integer");
	snprintf(text, sizeof(text), "{%s, \"limits\": []}", up);
	load_fails(text, "$.limits: must be an object");
	snprintf(text, sizeof(text), "{%s, \"log\": {\"format\": \"xml\"}}", up);
	load_fails(text, "$.log.format: must be text or json");
	snprintf(text, sizeof(text), "{%s, \"listen\": \"8080\"}", up);
	load_fails(text, "$.listen: must be HOST:PORT");
	snprintf(text, sizeof(text), "{%s, \"listen\": \"h:99999\"}", up);
	load_fails(text, "$.listen: must be HOST:PORT");
	load_fails("[1, 2]", "$: the config must be a JSON object");
}

static void test_load_bad_upstreams(void **state)
{
	(void)state;
	load_fails("{}", "$.upstreams: required");
	load_fails("{\"listen\": \"127.0.0.1:1\"}", "$.upstreams: required");
	load_fails("{\"upstreams\": []}", "$.upstreams: must list at least one upstream");
	load_fails("{\"upstreams\": [{\"path\": \"/x\"}]}", "$.upstreams[0].url: required");
	load_fails("{\"upstreams\": [{\"url\": \"ftp://h/\"}]}",
	           "$.upstreams[0].url: the URL must start with http:// or https://");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"path\": \"mcp\"}]}",
	           "$.upstreams[0].path: must start with /");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"path\": \"/a b\"}]}",
	           "$.upstreams[0].path: must start with /");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"path\": \"/a?b\"}]}",
	           "$.upstreams[0].path: must start with /");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"path\": \"/a#b\"}]}",
	           "$.upstreams[0].path: must start with /");
}

static void test_load_duplicates(void **state)
{
	(void)state;
	/* Both default to /mcp. */
	load_fails("{\"upstreams\": [{\"url\": \"http://a/\"}, {\"url\": \"http://b/\"}]}",
	           "$.upstreams[1].path: \"/mcp\" is already used by $.upstreams[0]");
	load_fails("{\"upstreams\": [{\"url\": \"http://a/\", \"path\": \"/a\"},"
	           " {\"url\": \"http://b/\", \"path\": \"/b\"},"
	           " {\"url\": \"http://c/\", \"path\": \"/a\"}]}",
	           "$.upstreams[2].path: \"/a\" is already used by $.upstreams[0]");
	load_fails("{\"upstreams\": [{\"name\": \"x\", \"url\": \"http://a/\", \"path\": \"/a\"},"
	           " {\"name\": \"x\", \"url\": \"http://b/\", \"path\": \"/b\"}]}",
	           "$.upstreams[1].name: \"x\" is already used by $.upstreams[0]");
	/* A key given twice in one object is an error too. */
	load_fails("{\"upstreams\": [{\"url\": \"http://a/\"}],\n \"listen\": \"a:1\",\n"
	           " \"listen\": \"b:2\"}",
	           "duplicate");
}

static void test_load_invalid_json(void **state)
{
	(void)state;
	char err[512];
	struct tmpfile t;
	char want[128];

	tmp_write(&t, "{\n  \"upstreams\": [\n    {\"url\": \"http://h/\"},\n  ]\n}\n");
	struct px_config *cfg = config_load_file(t.path, err, sizeof(err));
	assert_null(cfg);
	/* path:line:column: reason */
	snprintf(want, sizeof(want), "%s:4:", t.path);
	if (strncmp(err, want, strlen(want)) != 0)
		print_error("got: %s\n", err);
	assert_int_equal(strncmp(err, want, strlen(want)), 0);
	int line = 0, col = 0;
	assert_int_equal(sscanf(err + strlen(t.path), ":%d:%d:", &line, &col), 2);
	assert_int_equal(line, 4);
	assert_true(col > 0);
	tmp_remove(&t);

	tmp_write(&t, "");
	cfg = config_load_file(t.path, err, sizeof(err));
	assert_null(cfg);
	assert_non_null(strstr(err, t.path));
	tmp_remove(&t);
}

static void test_load_missing_file(void **state)
{
	(void)state;
	char err[512];
	struct px_config *cfg = config_load_file("/nonexistent/mcpwarden.json", err, sizeof(err));
	assert_null(cfg);
	assert_non_null(strstr(err, "/nonexistent/mcpwarden.json"));
	/* No error buffer at all is fine. */
	assert_null(config_load_file("/nonexistent/mcpwarden.json", NULL, 0));
}

/* A small error buffer gets a truncated, terminated message. */
static void test_load_error_buffer_truncated(void **state)
{
	(void)state;
	char err[24];
	memset(err, 'z', sizeof(err));
	struct px_config *cfg = load_text("{\"aaaaaaaaaaaaaaaaaaa\": 1, \"bbbbbbbbbbbbbbbbbbbbbb\": 2,"
	                                  " \"upstreams\": [{\"urll\": 1}]}",
	                                  err, 16);
	assert_null(cfg);
	assert_true(strlen(err) < 16);
	assert_int_equal(err[16], 'z');
	assert_int_equal(strncmp(err, "$.aaaaaaa", 9), 0);
	cfg = load_text("{\"x\": 1}", err, 1);
	assert_null(cfg);
	assert_string_equal(err, "");
}

/* ---- upstream headers, clients and module sections ------------------------- */

static void test_load_upstream_headers(void **state)
{
	(void)state;
	char err[512];

	setenv("MCPW_TEST_SECRET", "s3cr3t", 1);
	struct px_config *cfg = load_text(
		"{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": {"
		"\"Authorization\": \"Bearer ${MCPW_TEST_SECRET}\","
		"\"X-Both\": \"${MCPW_TEST_SECRET}-${MCPW_TEST_SECRET}\","
		"\"X-Plain\": \"a $ {b} ${c\\tx\", \"X-Empty\": \"\"}}]}",
		err, sizeof(err));
	if (!cfg)
		print_error("%s", err);
	assert_non_null(cfg);
	struct px_upstream_conf *u = &cfg->ups[0];
	assert_int_equal(u->nheaders, 4);
	for (size_t i = 0; i < u->nheaders; i++) {
		const char *n = u->headers[i].name, *v = u->headers[i].value;
		if (strcmp(n, "Authorization") == 0)
			assert_string_equal(v, "Bearer s3cr3t");
		else if (strcmp(n, "X-Both") == 0)
			assert_string_equal(v, "s3cr3t-s3cr3t");
		else if (strcmp(n, "X-Plain") == 0)
			assert_string_equal(v, "a $ {b} ${c\tx"); /* no closing brace: literal */
		else if (strcmp(n, "X-Empty") == 0)
			assert_string_equal(v, "");
		else
			fail_msg("unexpected header %s", n);
	}
	config_free(cfg);

	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": "
	           "{\"X-Key\": \"${MCPW_TEST_UNSET_VARIABLE}\"}}]}",
	           "$.upstreams[0].headers.X-Key: environment variable MCPW_TEST_UNSET_VARIABLE "
	           "is not set");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": {\"Bad Name\": \"v\"}}]}",
	           "$.upstreams[0].headers.Bad Name: not a valid header name");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": {\"X:Y\": \"v\"}}]}",
	           "not a valid header name");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": {\"\": \"v\"}}]}",
	           "$.upstreams[0].headers.: not a valid header name");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": {\"X-N\": 1}}]}",
	           "$.upstreams[0].headers.X-N: must be a string");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": {\"X-N\": \"a\\r\\nX: b\"}}]}",
	           "$.upstreams[0].headers.X-N: the value holds control characters");
	/* A secret from the environment may not smuggle a header either. */
	setenv("MCPW_TEST_CRLF", "x\r\nX-Injected: 1", 1);
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": "
	           "{\"X-N\": \"${MCPW_TEST_CRLF}\"}}]}",
	           "$.upstreams[0].headers.X-N: the value holds control characters");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": [\"X: y\"]}]}",
	           "$.upstreams[0].headers: must be an object");
	unsetenv("MCPW_TEST_SECRET");
	unsetenv("MCPW_TEST_CRLF");
}

/* Regression (fixed in 87860bb): any token used to be accepted as a
 * configured upstream header name, but transport_http.c writes its own Host
 * and Content-Length before the configured headers, so a configured
 * Content-Length or Transfer-Encoding sent conflicting framing upstream
 * (request smuggling territory), Host sent two Host fields (RFC 9112 §3.2:
 * 400), and hop-by-hop names make no sense end to end. */
static void test_regress_upstream_headers_reject_framing(void **state)
{
	(void)state;
	static const char *const names[] = {"Content-Length", "transfer-encoding", "Host",
	                                    "Connection", "Upgrade", "TE"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char text[256], err[512];
		snprintf(text, sizeof(text),
		         "{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": {\"%s\": \"1\"}}]}",
		         names[i]);
		struct px_config *cfg = load_text(text, err, sizeof(err));
		int accepted = cfg != NULL;
		if (accepted)
			print_error("accepted a configured \"%s\" header\n", names[i]);
		config_free(cfg); /* before any assert, so a failure leaks nothing */
		assert_false(accepted);
		assert_non_null(strstr(err, names[i]));
		assert_non_null(strstr(err, "set by the proxy, cannot be configured"));
	}
}

static void test_load_clients(void **state)
{
	(void)state;
	char err[512];

	setenv("MCPW_TEST_TOKEN", "from-the-environment-0123", 1);
	struct px_config *cfg = load_text(
		"{\"upstreams\": [{\"url\": \"http://h/\"}],\n"
		" \"clients\": [{\"name\": \"alice\", \"token\": \"alice-token-0123456789\"},\n"
		"             {\"name\": \"bob\", \"token_env\": \"MCPW_TEST_TOKEN\"}]}",
		err, sizeof(err));
	if (!cfg)
		print_error("%s", err);
	assert_non_null(cfg);
	assert_int_equal(cfg->ntokens, 2);
	assert_true(json_is_array(cfg->clients));
	const struct px_client *c = config_client_by_token(cfg, "alice-token-0123456789");
	assert_non_null(c);
	assert_string_equal(c->name, "alice");
	c = config_client_by_token(cfg, "from-the-environment-0123");
	assert_non_null(c);
	assert_string_equal(c->name, "bob");
	/* Prefixes, extensions, case changes and empty strings match nothing. */
	assert_null(config_client_by_token(cfg, "alice-token-012345678"));
	assert_null(config_client_by_token(cfg, "alice-token-0123456789x"));
	assert_null(config_client_by_token(cfg, "ALICE-token-0123456789"));
	assert_null(config_client_by_token(cfg, ""));
	config_free(cfg);
	unsetenv("MCPW_TEST_TOKEN");

	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"clients\": [{\"name\": \"a\", "
	           "\"token\": \"short\"}]}",
	           "$.clients[0]: the token must be at least 16 characters");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"clients\": [{\"name\": \"a\", "
	           "\"token\": \"0123456789abcdef\", \"token_env\": \"X\"}]}",
	           "$.clients[0]: give exactly one of token and token_env");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"clients\": [{\"name\": \"a\"}]}",
	           "$.clients[0]: give exactly one of token and token_env");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"clients\": [{\"name\": \"a\", "
	           "\"token_env\": \"MCPW_TEST_UNSET_VARIABLE\"}]}",
	           "$.clients[0].token_env: environment variable MCPW_TEST_UNSET_VARIABLE is not set");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"clients\": [{\"token\": "
	           "\"0123456789abcdef\"}]}",
	           "$.clients[0].name: required");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"clients\": [\"0123456789abcdef\"]}",
	           "$.clients[0]: must be an object");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"clients\": [{\"name\": \"a\", "
	           "\"token\": \"0123456789abcdef\", \"tokn\": 1}]}",
	           "$.clients[0].tokn: unknown key");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"clients\": {}}",
	           "$.clients: must be an array");
}

/* Module sections are kept as JSON for their modules; only the type is
 * checked here. */
static void test_load_module_sections(void **state)
{
	(void)state;
	char err[512];
	struct px_config *cfg = load_text(
		"{\"upstreams\": [{\"url\": \"http://h/\", \"contract\": {\"mode\": \"warn\"}},"
		" {\"url\": \"http://h/\", \"path\": \"/b\"}],"
		" \"policy\": {\"rules\": []}, \"admin\": {\"listen\": \"127.0.0.1:0\"}}",
		err, sizeof(err));
	if (!cfg)
		print_error("%s", err);
	assert_non_null(cfg);
	assert_true(json_is_array(json_object_get(cfg->policy, "rules")));
	assert_string_equal(json_string_value(json_object_get(cfg->admin, "listen")), "127.0.0.1:0");
	assert_null(cfg->clients);
	assert_int_equal(cfg->ntokens, 0);
	assert_string_equal(json_string_value(json_object_get(cfg->ups[0].contract, "mode")), "warn");
	assert_null(cfg->ups[1].contract);
	/* The config holds the only reference: nothing else keeps the file's tree. */
	assert_int_equal(cfg->policy->refcount, 1);
	assert_int_equal(cfg->admin->refcount, 1);
	assert_int_equal(cfg->ups[0].contract->refcount, 1);
	config_free(cfg);

	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"policy\": []}",
	           "$.policy: must be an object");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"admin\": \"127.0.0.1:1\"}",
	           "$.admin: must be an object");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\", \"contract\": \"warn\"}]}",
	           "$.upstreams[0].contract: must be an object");
}

/* ---- TLS, allowed hosts and origins ------------------------------------------ */

static void test_load_tls(void **state)
{
	(void)state;
	char err[512];
	struct px_config *cfg = load_text(
		"{\"upstreams\": [{\"url\": \"https://api.example.com/mcp\", \"path\": \"/a\","
		"  \"tls\": {\"ca_file\": \"/etc/ca.pem\", \"cert_file\": \"/c.pem\","
		"          \"key_file\": \"/k.pem\", \"insecure_skip_verify\": false}},"
		" {\"url\": \"https://[::1]:8443\", \"path\": \"/b\","
		"  \"tls\": {\"insecure_skip_verify\": true}},"
		" {\"url\": \"https://h/\", \"path\": \"/c\"}],"
		" \"tls\": {\"cert_file\": \"/srv.pem\", \"key_file\": \"/srv.key\"}}",
		err, sizeof(err));
	if (!cfg)
		print_error("%s", err);
	assert_non_null(cfg);
	struct px_upstream_conf *u = &cfg->ups[0];
	assert_int_equal(u->tls, 1);
	assert_string_equal(u->port, "443");
	assert_string_equal(u->host_header, "api.example.com");
	assert_string_equal(u->tls_ca_file, "/etc/ca.pem");
	assert_string_equal(u->tls_cert_file, "/c.pem");
	assert_string_equal(u->tls_key_file, "/k.pem");
	assert_int_equal(u->tls_insecure_skip_verify, 0);
	u = &cfg->ups[1];
	assert_int_equal(u->tls, 1);
	assert_string_equal(u->host_header, "[::1]:8443");
	assert_null(u->tls_ca_file);
	assert_int_equal(u->tls_insecure_skip_verify, 1);
	u = &cfg->ups[2];
	assert_null(u->tls_ca_file);
	assert_null(u->tls_cert_file);
	assert_int_equal(u->tls_insecure_skip_verify, 0);
	assert_string_equal(cfg->tls_cert_file, "/srv.pem");
	assert_string_equal(cfg->tls_key_file, "/srv.key");
	config_free(cfg);

	load_fails("{\"upstreams\": [{\"url\": \"https://h/\", \"tls\": {\"cert_file\": \"/c\"}}]}",
	           "$.upstreams[0].tls: cert_file and key_file go together");
	load_fails("{\"upstreams\": [{\"url\": \"https://h/\", \"tls\": {\"key_file\": \"/k\"}}]}",
	           "$.upstreams[0].tls: cert_file and key_file go together");
	load_fails("{\"upstreams\": [{\"url\": \"https://h/\", \"tls\": {\"insecure_skip_verify\": 1}}]}",
	           "$.upstreams[0].tls.insecure_skip_verify: must be true or false");
	load_fails("{\"upstreams\": [{\"url\": \"https://h/\", \"tls\": {\"verify\": false}}]}",
	           "$.upstreams[0].tls.verify: unknown key");
	load_fails("{\"upstreams\": [{\"url\": \"https://h/\", \"tls\": true}]}",
	           "$.upstreams[0].tls: must be an object");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"tls\": {\"cert_file\": \"/c\"}}",
	           "$.tls: cert_file and key_file are both required");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"tls\": {\"ca_file\": \"/c\","
	           " \"cert_file\": \"/c\", \"key_file\": \"/k\"}}",
	           "$.tls.ca_file: unknown key");
}

static void test_load_allowed_hosts_origins(void **state)
{
	(void)state;
	char err[512];
	struct px_config *cfg = load_text(
		"{\"upstreams\": [{\"url\": \"http://h/\"}],"
		" \"allowed_hosts\": [\"localhost:8080\", \"mcp.example.com\"],"
		" \"allowed_origins\": [\"https://app.example.com\"]}",
		err, sizeof(err));
	if (!cfg)
		print_error("%s", err);
	assert_non_null(cfg);
	assert_int_equal(cfg->nhosts, 2);
	assert_string_equal(cfg->hosts[0], "localhost:8080");
	assert_string_equal(cfg->hosts[1], "mcp.example.com");
	assert_int_equal(cfg->norigins, 1);
	assert_string_equal(cfg->origins[0], "https://app.example.com");
	config_free(cfg);

	cfg = load_text("{\"upstreams\": [{\"url\": \"http://h/\"}], \"allowed_hosts\": []}", err,
	                sizeof(err));
	assert_non_null(cfg);
	assert_int_equal(cfg->nhosts, 0);
	config_free(cfg);

	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"allowed_hosts\": [\"a\", \"\"]}",
	           "$.allowed_hosts[1]: must be a non-empty string without spaces");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"allowed_hosts\": [\"a b\"]}",
	           "$.allowed_hosts[0]: must be a non-empty string without spaces");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"allowed_origins\": [1]}",
	           "$.allowed_origins[0]: must be a non-empty string without spaces");
	load_fails("{\"upstreams\": [{\"url\": \"http://h/\"}], \"allowed_origins\": \"*\"}",
	           "$.allowed_origins: must be an array");
}

/* ---- config_from_argv ---------------------------------------------------------- */

static void test_argv_upstream(void **state)
{
	(void)state;
	char *argv[] = {"mcpwarden", "--upstream", "http://127.0.0.1:3001/mcp"};
	enum config_action action = CONFIG_HELP;
	char err[256] = "x";
	struct px_config *cfg = config_from_argv(ARGC(argv), argv, &action, err, sizeof(err));

	assert_non_null(cfg);
	assert_int_equal(action, CONFIG_RUN);
	assert_string_equal(err, "");
	assert_int_equal(cfg->nups, 1);
	assert_string_equal(cfg->ups[0].name, "default");
	assert_string_equal(cfg->ups[0].path, "/mcp");
	assert_string_equal(cfg->ups[0].host, "127.0.0.1");
	assert_string_equal(cfg->ups[0].port, "3001");
	assert_int_equal(cfg->ups[0].connect_timeout_ms, TIMEOUT_CONNECT_MS);
	assert_int_equal(cfg->ups[0].request_timeout_ms, TIMEOUT_REQUEST_MS);
	assert_string_equal(cfg->listen_host, "127.0.0.1");
	assert_string_equal(cfg->listen_port, "8080");
	assert_null(cfg->config_file);
	config_free(cfg);
}

static void test_argv_all_flags(void **state)
{
	(void)state;
	char *argv[] = {"mcpwarden",
	                "--upstream=http://u:p@[::1]:3001/mcp",
	                "--listen", "0.0.0.0:9090",
	                "--path", "/a/mcp",
	                "--connect-timeout", "111",
	                "--request-timeout=222",
	                "--idle-timeout", "333",
	                "--sse-keepalive", "444",
	                "--max-body", "1048576",
	                "--log-level", "warn",
	                "--log-format", "json"};
	enum config_action action;
	char err[256];
	struct px_config *cfg = config_from_argv(ARGC(argv), argv, &action, err, sizeof(err));

	if (!cfg)
		print_error("%s", err);
	assert_non_null(cfg);
	assert_int_equal(action, CONFIG_RUN);
	assert_string_equal(cfg->listen_host, "0.0.0.0");
	assert_string_equal(cfg->listen_port, "9090");
	assert_string_equal(cfg->ups[0].path, "/a/mcp");
	assert_string_equal(cfg->ups[0].host, "::1");
	assert_string_equal(cfg->ups[0].basic_auth, "Basic dTpw");
	assert_int_equal(cfg->timeouts.connect_ms, 111);
	assert_int_equal(cfg->timeouts.request_ms, 222);
	assert_int_equal(cfg->timeouts.client_idle_ms, 333);
	assert_int_equal(cfg->timeouts.sse_keepalive_ms, 444);
	assert_int_equal(cfg->ups[0].connect_timeout_ms, 111);
	assert_int_equal(cfg->ups[0].request_timeout_ms, 222);
	assert_int_equal(cfg->limits.max_body_bytes, 1048576);
	assert_int_equal(cfg->log_level, LOG_WARN);
	assert_int_equal(cfg->log_json, 1);
	config_free(cfg);
}

static void test_argv_errors(void **state)
{
	(void)state;
	static const struct {
		const char *args[4];
		const char *want;
	} cases[] = {
		{{"--bogus"}, "--bogus: unknown option (see --help)"},
		{{"-x"}, "-x: unknown option"},
		{{"--upstreamx=http://h/"}, "--upstreamx=http://h/: unknown option"},
		{{"--path", "/x"}, "--path: goes with --upstream"},
		{{"--upstream"}, "--upstream: needs a value"},
		{{"--upstream", "http://h/", "--listen"}, "--listen: needs a value"},
		{{NULL}, "no upstream"},
		{{"--listen", "127.0.0.1:1"}, "no upstream"},
		{{"--upstream", "ftp://h/"}, "--upstream: the URL must start with http://"},
		{{"--upstream", "http://h/", "--tls-cert"}, "--tls-cert: needs a value"},
		{{"--upstream", "http://h/", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		{{"--upstream", "http://h/", "--tls-key", "k.pem"}, "--tls-cert and --tls-key go together"},
		{{"--upstream", "http://h/", "--path", "mcp"}, "--path: must start with /"},
		{{"--upstream", "http://h/", "--listen", "nope"}, "--listen: must be HOST:PORT"},
		{{"--upstream", "http://h/", "--max-body", "abc"}, "--max-body: must be a whole number"},
		{{"--upstream", "http://h/", "--max-body", "-1"}, "--max-body: must be a whole number"},
		{{"--upstream", "http://h/", "--max-body", "1073741825"}, "--max-body: must be a whole"},
		{{"--upstream", "http://h/", "--connect-timeout", "86400001"},
		 "--connect-timeout: must be a whole number from 0 to 86400000"},
		{{"--upstream", "http://h/", "--log-level", "loud"}, "--log-level: must be"},
		{{"--upstream", "http://h/", "--log-format", "xml"}, "--log-format: must be text or json"},
		{{"-c", "/nonexistent/x.json"}, "/nonexistent/x.json"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[5] = {"mcpwarden"};
		int argc = 1;
		while (argc < 5 && cases[i].args[argc - 1])
			argv[argc] = (char *)(uintptr_t)cases[i].args[argc - 1], argc++;
		enum config_action action;
		char err[512];
		struct px_config *cfg = config_from_argv(argc, argv, &action, err, sizeof(err));
		int accepted = cfg != NULL;
		if (cfg || !strstr(err, cases[i].want))
			print_error("case %zu: got \"%s\", want \"%s\"\n", i, cfg ? "(ok)" : err,
			            cases[i].want);
		config_free(cfg);
		assert_false(accepted);
		assert_non_null(strstr(err, cases[i].want));
	}
}

static void test_argv_actions(void **state)
{
	(void)state;
	static const struct {
		const char *arg;
		enum config_action action;
	} cases[] = {
		{"--help", CONFIG_HELP}, {"-h", CONFIG_HELP},
		{"--version", CONFIG_VERSION}, {"-V", CONFIG_VERSION},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* No upstream needed, and later arguments do not matter. */
		char *argv[] = {"mcpwarden", (char *)(uintptr_t)cases[i].arg, "--bogus"};
		enum config_action action = CONFIG_RUN;
		char err[256];
		struct px_config *cfg = config_from_argv(ARGC(argv), argv, &action, err, sizeof(err));
		assert_non_null(cfg);
		assert_int_equal(action, cases[i].action);
		config_free(cfg);
	}
	assert_non_null(strstr(config_usage(), "--upstream"));
	assert_non_null(strstr(config_usage(), "--check-config"));
}

static void test_argv_check_config(void **state)
{
	(void)state;
	struct tmpfile t;
	tmp_write(&t, "{\"upstreams\": [{\"url\": \"http://127.0.0.1:3001/mcp\", \"path\": \"/m\","
	              " \"timeouts\": {\"connect_ms\": 7}}]}");
	char *argv[] = {"mcpwarden", "--check-config", "-c", t.path};
	enum config_action action;
	char err[256];
	struct px_config *cfg = config_from_argv(ARGC(argv), argv, &action, err, sizeof(err));

	assert_non_null(cfg);
	assert_int_equal(action, CONFIG_CHECK_ONLY);
	assert_string_equal(cfg->config_file, t.path);
	assert_int_equal(cfg->nups, 1);
	assert_string_equal(cfg->ups[0].path, "/m");
	assert_int_equal(cfg->ups[0].connect_timeout_ms, 7);
	config_free(cfg);

	/* --config=FILE and flags that override the file. */
	char cfgflag[128];
	snprintf(cfgflag, sizeof(cfgflag), "--config=%s", t.path);
	char *argv2[] = {"mcpwarden", cfgflag, "--listen", "[::1]:7", "--connect-timeout", "9"};
	cfg = config_from_argv(ARGC(argv2), argv2, &action, err, sizeof(err));
	assert_non_null(cfg);
	assert_int_equal(action, CONFIG_RUN);
	assert_string_equal(cfg->listen_host, "::1");
	assert_string_equal(cfg->listen_port, "7");
	assert_int_equal(cfg->timeouts.connect_ms, 9);
	/* A flag overrides the upstream's own value from the file too. */
	assert_int_equal(cfg->ups[0].connect_timeout_ms, 9);
	config_free(cfg);

	/* The file already names the upstreams. */
	char *argv3[] = {"mcpwarden", "-c", t.path, "--upstream", "http://h/"};
	cfg = config_from_argv(ARGC(argv3), argv3, &action, err, sizeof(err));
	assert_null(cfg);
	assert_non_null(strstr(err, "--upstream: the config file already defines upstreams"));

	/* Errors in the file come out through config_from_argv too. */
	tmp_remove(&t);
	tmp_write(&t, "{\"upstreams\": [{\"urll\": \"http://h/\"}]}");
	char *argv4[] = {"mcpwarden", "--check-config", "-c", t.path};
	cfg = config_from_argv(ARGC(argv4), argv4, &action, err, sizeof(err));
	assert_null(cfg);
	assert_int_equal(action, CONFIG_CHECK_ONLY);
	assert_non_null(strstr(err, "$.upstreams[0].urll: unknown key"));
	tmp_remove(&t);
}

static void test_argv_tls_and_loopback(void **state)
{
	(void)state;
	static const struct {
		const char *listen;
		int loopback;
	} cases[] = {
		{"127.0.0.1:0", 1}, {"127.9.9.9:1", 1}, {"localhost:1", 1}, {"[::1]:1", 1},
		{"0.0.0.0:1", 0},   {":1", 0},          {"10.0.0.1:1", 0},  {"[::]:1", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = {"mcpwarden", "--upstream", "https://h/", "--listen",
		                (char *)(uintptr_t)cases[i].listen};
		enum config_action action;
		char err[256];
		struct px_config *cfg = config_from_argv(ARGC(argv), argv, &action, err, sizeof(err));
		assert_non_null(cfg);
		if (cfg->listen_loopback != cases[i].loopback)
			print_error("%s\n", cases[i].listen);
		assert_int_equal(cfg->listen_loopback, cases[i].loopback);
		assert_int_equal(cfg->ups[0].tls, 1);
		config_free(cfg);
	}

	char *argv[] = {"mcpwarden", "--upstream", "http://h/", "--tls-cert", "/c.pem",
	                "--tls-key=/k.pem"};
	enum config_action action;
	char err[256];
	struct px_config *cfg = config_from_argv(ARGC(argv), argv, &action, err, sizeof(err));
	assert_non_null(cfg);
	assert_string_equal(cfg->tls_cert_file, "/c.pem");
	assert_string_equal(cfg->tls_key_file, "/k.pem");
	config_free(cfg);
}

/* BUG (proxy/config.c, config_from_argv, the listen_loopback test at the
 * end): loopback is recognised by spelling only ("localhost", "::1",
 * "127."), so a loopback listener written another way gets
 * listen_loopback = 0, and with no allowed_hosts origin.c then accepts any
 * Host: the DNS-rebinding protection silently turns off for exactly the
 * listeners it exists for. Fix: compare "localhost" case-insensitively, and
 * for numeric hosts parse with inet_pton and test 127/8, IN6_IS_ADDR_LOOPBACK
 * and IN6_IS_ADDR_V4MAPPED + 127/8 (or, best, decide from the address the
 * listener actually bound, in listener.c). */
static void test_bug_argv_loopback_spellings(void **state)
{
	(void)state;
	static const char *const loopback[] = {
		"LOCALHOST:1", "Localhost:1", "[0:0:0:0:0:0:0:1]:1", "[::ffff:127.0.0.1]:1",
		"[0::1]:1",
	};
	int missed = 0;
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		char *argv[] = {"mcpwarden", "--upstream", "http://h/", "--listen",
		                (char *)(uintptr_t)loopback[i]};
		enum config_action action;
		char err[256];
		struct px_config *cfg = config_from_argv(ARGC(argv), argv, &action, err, sizeof(err));
		assert_non_null(cfg);
		if (!cfg->listen_loopback) {
			print_error("--listen %s is loopback, listen_loopback says not\n", loopback[i]);
			missed++;
		}
		config_free(cfg);
	}
	assert_int_equal(missed, 0);
}

static void test_argv_module_flags(void **state)
{
	(void)state;
	struct tmpfile pol;
	enum config_action action;
	char err[512];

	tmp_write(&pol, "{\"rules\": [{\"deny\": \"shell_*\"}]}");
	char *argv[] = {"mcpwarden", "--upstream", "http://h/", "--policy", pol.path,
	                "--admin", "127.0.0.1:9901", "--contract", "enforce",
	                "--baseline", "/tmp/base.json", "--spec-only"};
	struct px_config *cfg = config_from_argv(ARGC(argv), argv, &action, err, sizeof(err));
	if (!cfg)
		print_error("%s", err);
	assert_non_null(cfg);
	assert_true(json_is_array(json_object_get(cfg->policy, "rules")));
	assert_string_equal(json_string_value(json_object_get(cfg->admin, "listen")),
	                    "127.0.0.1:9901");
	json_t *c = cfg->ups[0].contract;
	assert_string_equal(json_string_value(json_object_get(c, "mode")), "enforce");
	assert_string_equal(json_string_value(json_object_get(c, "baseline")), "/tmp/base.json");
	assert_true(json_is_true(json_object_get(c, "spec_only")));
	config_free(cfg);
	tmp_remove(&pol);

	/* A policy file that is not an object, or not JSON. */
	tmp_write(&pol, "[1]");
	char *argv2[] = {"mcpwarden", "--upstream", "http://h/", "--policy", pol.path};
	cfg = config_from_argv(ARGC(argv2), argv2, &action, err, sizeof(err));
	assert_null(cfg);
	assert_non_null(strstr(err, "--policy"));
	assert_non_null(strstr(err, "must hold a JSON object"));
	tmp_remove(&pol);
	tmp_write(&pol, "{\n\"rules\": [\n");
	cfg = config_from_argv(ARGC(argv2), argv2, &action, err, sizeof(err));
	assert_null(cfg);
	char want[128];
	snprintf(want, sizeof(want), "--policy %s:", pol.path);
	assert_non_null(strstr(err, want));
	tmp_remove(&pol);

	/* --contract needs exactly one upstream. */
	struct tmpfile two;
	tmp_write(&two, "{\"upstreams\": [{\"url\": \"http://a/\", \"path\": \"/a\"},"
	                " {\"url\": \"http://b/\", \"path\": \"/b\"}]}");
	char *argv3[] = {"mcpwarden", "-c", two.path, "--contract", "warn"};
	cfg = config_from_argv(ARGC(argv3), argv3, &action, err, sizeof(err));
	assert_null(cfg);
	assert_non_null(strstr(err, "need exactly one upstream"));
	tmp_remove(&two);
}

/* Regression (fixed in 87860bb): conf/README.md says "0 disables" and an
 * upstream's timeouts.*_ms overrides the global value, but through
 * config_from_argv an explicit per-upstream 0 used to be replaced by the
 * global value. (A flag such as --request-timeout still overrides every
 * upstream: the operator's last word.) */
static void test_regress_argv_keeps_per_upstream_zero_timeout(void **state)
{
	(void)state;
	struct tmpfile t;
	tmp_write(&t, "{\"upstreams\": [{\"url\": \"http://h/\","
	              " \"timeouts\": {\"connect_ms\": 0, \"request_ms\": 0}}]}");
	char *argv[] = {"mcpwarden", "-c", t.path};
	enum config_action action;
	char err[256];

	/* config_load_file keeps them... */
	struct px_config *cfg = config_load_file(t.path, err, sizeof(err));
	assert_non_null(cfg);
	assert_int_equal(cfg->ups[0].request_timeout_ms, 0);
	assert_int_equal(cfg->ups[0].connect_timeout_ms, 0);
	config_free(cfg);
	/* ...and so must the command line. */
	cfg = config_from_argv(ARGC(argv), argv, &action, err, sizeof(err));
	tmp_remove(&t);
	assert_non_null(cfg);
	unsigned got_request = cfg->ups[0].request_timeout_ms;
	unsigned got_connect = cfg->ups[0].connect_timeout_ms;
	config_free(cfg);
	assert_int_equal(got_request, 0);
	assert_int_equal(got_connect, 0);
}

/* Found by fuzz_config: the userinfo ends at the LAST '@', so a password
 * holding '@' never shows up as part of the host (url_safe is logged). */
static void test_regress_url_at_in_password(void **state)
{
	(void)state;
	struct px_upstream_conf u;
	const char *why;
	assert_int_equal(parse(&u, "http://user:p@ss@127.0.0.1:9/mcp", &why), 0);
	assert_string_equal(u.host, "127.0.0.1");
	assert_null(strstr(u.url_safe, "ss"));
	assert_non_null(u.basic_auth);
	ups_fini(&u);
}

/* Found by fuzz_config: spaces and control bytes in a URL would reach the
 * request line and inject headers into every upstream request. */
static void test_regress_url_control_chars(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"http://127.0.0.1:3001/mcp HTTP/1.1\r\nX-Injected: 1",
		"http://exa mple/", "http://host/\x7f", "http://h\xc3\xa9/",
		"http://bad!host/", "http://[zz::1]/",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct px_upstream_conf u;
		const char *why;
		int rc = parse(&u, bad[i], &why);
		ups_fini(&u);
		assert_int_equal(rc, -1);
	}
	char host[300];
	memset(host, 'a', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	char url[400];
	snprintf(url, sizeof(url), "http://%s/", host);
	struct px_upstream_conf u;
	const char *why;
	int rc = parse(&u, url, &why);
	ups_fini(&u);
	assert_int_equal(rc, -1); /* over 253 bytes */
}

/* ${NAME} must be a plain variable name: a cut or odd one could pick up
 * another variable. */
static void test_env_names_checked(void **state)
{
	(void)state;
	char err[1024];
	struct px_config *cfg = load_text(
		"{\"upstreams\": [{\"url\": \"http://h/\", \"headers\": "
		"{\"X-A\": \"${1BAD}\", \"X-B\": \"${}\"}}]}", err, sizeof(err));
	assert_null(cfg);
	assert_non_null(strstr(err, "$.upstreams[0].headers.X-A: ${…} must name"));
	assert_non_null(strstr(err, "$.upstreams[0].headers.X-B: ${…} must name"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_basic),
		cmocka_unit_test(test_r17_schema_key),
		cmocka_unit_test(test_r17_admin_check),
		cmocka_unit_test(test_url_default_ports),
		cmocka_unit_test(test_url_userinfo),
		cmocka_unit_test(test_url_ipv6),
		cmocka_unit_test(test_url_target),
		cmocka_unit_test(test_url_errors),
		cmocka_unit_test(test_regress_url_junk_after_ipv6),
		cmocka_unit_test(test_regress_url_at_in_password),
		cmocka_unit_test(test_regress_url_control_chars),
		cmocka_unit_test(test_env_names_checked),
		cmocka_unit_test(test_load_good_file),
		cmocka_unit_test(test_load_minimal_defaults),
		cmocka_unit_test(test_load_unknown_keys),
		cmocka_unit_test(test_load_session_caps),
		cmocka_unit_test(test_load_yield_after),
		cmocka_unit_test(test_load_validation),
		cmocka_unit_test(test_load_reports_every_error),
		cmocka_unit_test(test_load_wrong_types),
		cmocka_unit_test(test_load_bad_upstreams),
		cmocka_unit_test(test_load_duplicates),
		cmocka_unit_test(test_load_invalid_json),
		cmocka_unit_test(test_load_missing_file),
		cmocka_unit_test(test_load_error_buffer_truncated),
		cmocka_unit_test(test_load_upstream_headers),
		cmocka_unit_test(test_regress_upstream_headers_reject_framing),
		cmocka_unit_test(test_load_clients),
		cmocka_unit_test(test_load_module_sections),
		cmocka_unit_test(test_load_tls),
		cmocka_unit_test(test_load_allowed_hosts_origins),
		cmocka_unit_test(test_argv_upstream),
		cmocka_unit_test(test_argv_all_flags),
		cmocka_unit_test(test_argv_errors),
		cmocka_unit_test(test_argv_actions),
		cmocka_unit_test(test_argv_check_config),
		cmocka_unit_test(test_argv_tls_and_loopback),
		cmocka_unit_test(test_bug_argv_loopback_spellings),
		cmocka_unit_test(test_argv_module_flags),
		cmocka_unit_test(test_regress_argv_keeps_per_upstream_zero_timeout),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}

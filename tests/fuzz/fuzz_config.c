/* Fuzz target for the config loader (proxy/config.c).
 *
 * Input: a config file's bytes (conf/mcpwarden.json and conf/README.md
 * describe the format). config.c reads configs from files only, so the
 * input is written to a fresh mkstemp() file in $TMPDIR (default /tmp),
 * loaded with config_load_file() (with several error buffers) and with
 * config_from_argv({"mcpwarden", "-c", FILE}), then unlinked. The input up
 * to its first NUL is also given to config_parse_url() as an upstream URL,
 * and so is every "url" of the file. A loaded config goes through
 * config_restart_needed and config_client_by_token; everything is freed
 * (ASan's leak check).
 *
 * LLVMFuzzerInitialize sets FUZZ_TOKEN and FUZZ_SECRET in the environment
 * so seeds can use "token_env" and "${FUZZ_SECRET}".
 *
 * Properties checked, abort() on any violation:
 *  1. config_load_file fails exactly when it reports an error, whatever the
 *     error buffer (NULL, 1 byte, small: always NUL-terminated), and
 *     config_from_argv with -c agrees with it.
 *  2. A loaded config keeps its documented promises: at least one upstream;
 *     paths start with '/' and hold no blank, '?' or '#'; upstream paths,
 *     names and legacy paths are unique; header names are tokens and never
 *     framing or hop-by-hop fields, values have no control character but
 *     tab; client tokens are >= 16 bytes; limits and timeouts within their
 *     ranges; a config needs no restart against itself; every token finds
 *     its (first) client.
 *  3. A URL config_parse_url accepts gives: tls as the scheme says; a
 *     non-empty host; a decimal port 1-65535; a target starting with '/'
 *     and without fragment; url_safe = scheme://host:port + the target's
 *     path (no user, password or query); Host = host[:port] (brackets for
 *     IPv6, port only when not the default); "Basic " + base64 exactly
 *     when there is userinfo.
 *  4. Regressions (once open bugs, corpus files crash-url-*): the host
 *     holds no '@' (the last '@' ends the userinfo, so "user:p@ss@host"
 *     never shows part of the password in url_safe), no blank or control
 *     character, and the target none either (both go into the request
 *     line and the Host header); Host is never cut.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=config) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "proxy/config.h"
#include "tests/fuzz/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("FUZZ_TOKEN", "fuzz-token-0123456789abcdef", 1);
	setenv("FUZZ_SECRET", "s3cr3t-value", 1);
	return 0;
}

/* ---- URLs -------------------------------------------------------------------- */

static int all_digits(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int clean(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static void free_url(struct px_upstream_conf *u)
{
	free(u->url_safe);
	free(u->host);
	free(u->port);
	free(u->target);
	free(u->host_header);
	free(u->basic_auth);
	memset(u, 0, sizeof(*u));
}

/* The promises of a parsed upstream URL (property 3). */
static void check_url_fields(const struct px_upstream_conf *u, const char *url)
{
	const char *scheme = u->tls ? "https://" : "http://";
	CHECK(strncmp(url, scheme, strlen(scheme)) == 0);
	CHECK(u->host && u->host[0]);
	CHECK(u->port && all_digits(u->port));
	long port = strtol(u->port, NULL, 10);
	CHECK(port >= 1 && port <= 65535);
	CHECK(u->target && u->target[0] == '/' && strchr(u->target, '#') == NULL);
	CHECK(u->host_header && u->url_safe);

	int v6 = strchr(u->host, ':') != NULL;
	int dflt = port == (u->tls ? 443 : 80);
	size_t hl = strlen(u->host);
	char *want = malloc(hl + 16);
	CHECK(want != NULL);
	snprintf(want, hl + 16, "%s%s%s%s%s", v6 ? "[" : "", u->host, v6 ? "]" : "", dflt ? "" : ":",
	         dflt ? "" : u->port);
	CHECK(strcmp(u->host_header, want) == 0);
	free(want);

	/* url_safe: scheme://host:port + the path of the target, cut at 1199
	 * bytes (it is only ever shown). */
	size_t plen = strcspn(u->target, "?");
	size_t cap = hl + plen + 64;
	char *safe = malloc(cap);
	CHECK(safe != NULL);
	snprintf(safe, cap, "%s%s%s%s:%s%.*s", scheme, v6 ? "[" : "", u->host, v6 ? "]" : "",
	         u->port, (int)plen, u->target);
	size_t sl = strlen(u->url_safe);
	CHECK(sl <= 1199 && strncmp(u->url_safe, safe, sl) == 0);
	CHECK(sl == 1199 || strcmp(u->url_safe, safe) == 0);
	CHECK(strchr(u->url_safe, '?') == NULL);
	free(safe);

	/* userinfo exactly when there is an '@' before the path */
	const char *auth = url + strlen(scheme);
	size_t alen = strcspn(auth, "/?#");
	int has_at = memchr(auth, '@', alen) != NULL;
	CHECK(has_at == (u->basic_auth != NULL));
	if (u->basic_auth) {
		CHECK(strncmp(u->basic_auth, "Basic ", 6) == 0);
		const char *b = u->basic_auth + 6;
		size_t bl = strlen(b);
		CHECK(bl % 4 == 0);
		CHECK(strspn(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == bl);
	}
	CHECK(strchr(u->host, '@') == NULL);
	CHECK(clean(u->host) && clean(u->target) && clean(u->host_header));
}

static void check_url(const char *url)
{
	struct px_upstream_conf u;
	const char *why = NULL;

	memset(&u, 0, sizeof u);
	int rc = config_parse_url(&u, url, &why);
	CHECK(rc == 0 || rc == -1);
	if (rc == 0)
		check_url_fields(&u, url);
	else
		CHECK(why != NULL && why[0] != '\0');
	free_url(&u);
}

/* ---- a loaded config ---------------------------------------------------------------- */

static int path_fine(const char *p)
{
	if (p[0] != '/')
		return 0;
	for (; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == '?' || *p == '#' || (unsigned char)*p >= 0x7f)
			return 0;
	return 1;
}

static int token_name(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f ||
		    strchr("\"(),/:;<=>?@[\\]{}", *s))
			return 0;
	return 1;
}

static void check_config(const struct px_config *cfg)
{
	static const char *const framing[] = {"host", "content-length", "transfer-encoding",
	                                      "connection", "expect", "upgrade", "te",
	                                      "keep-alive", "trailer", "proxy-connection"};

	CHECK(cfg->nups >= 1 && cfg->ups != NULL);
	CHECK(cfg->listen_host && cfg->listen_port && all_digits(cfg->listen_port));
	CHECK(strtol(cfg->listen_port, NULL, 10) <= 65535);
	for (size_t i = 0; i < cfg->nups; i++) {
		const struct px_upstream_conf *u = &cfg->ups[i];
		CHECK(u->name && u->name[0] && u->path && path_fine(u->path));
		CHECK(u->url_safe && u->host && u->port && u->target && u->host_header);
		CHECK(u->transport == PX_TRANSPORT_AUTO || u->transport == PX_TRANSPORT_STREAMABLE ||
		      u->transport == PX_TRANSPORT_SSE);
		CHECK(config_transport_str(u->transport) != NULL);
		CHECK(u->connect_timeout_ms <= 86400000u && u->request_timeout_ms <= 86400000u);
		CHECK(u->contract == NULL || json_is_object(u->contract));
		CHECK(!u->tls_cert_file == !u->tls_key_file);
		if (u->tls_ca_file || u->tls_cert_file || u->tls_insecure_skip_verify)
			CHECK(u->tls);
		for (size_t k = 0; k < u->nheaders; k++) {
			const struct px_header *h = &u->headers[k];
			CHECK(h->name && h->value && token_name(h->name));
			for (size_t f = 0; f < sizeof framing / sizeof *framing; f++)
				CHECK(strcasecmp(h->name, framing[f]) != 0);
			for (const char *c = h->value; *c; c++)
				CHECK((unsigned char)*c >= 0x20 || *c == '\t');
		}
		const char *mine[3] = {u->path, u->sse_path, u->messages_path};
		for (size_t a = 1; a < 3; a++)
			CHECK(mine[a] == NULL || path_fine(mine[a]));
		for (size_t j = 0; j < cfg->nups; j++) {
			const struct px_upstream_conf *o = &cfg->ups[j];
			const char *theirs[3] = {o->path, o->sse_path, o->messages_path};
			if (j != i)
				CHECK(strcmp(u->name, o->name) != 0);
			for (size_t a = 0; a < 3; a++)
				for (size_t b = 0; b < 3; b++)
					if ((j != i || a != b) && mine[a] && theirs[b])
						CHECK(strcmp(mine[a], theirs[b]) != 0);
		}
	}
	CHECK(cfg->limits.max_body_bytes <= (1u << 30) && cfg->limits.max_header_bytes <= (1u << 20));
	CHECK(cfg->limits.max_batch <= 100000 && cfg->limits.max_connections <= 1000000);
	CHECK(cfg->timeouts.connect_ms <= 86400000u && cfg->timeouts.request_ms <= 86400000u);
	CHECK(cfg->log_level >= LOG_DEBUG && cfg->log_level <= LOG_ERROR);
	CHECK(cfg->policy == NULL || json_is_object(cfg->policy));
	CHECK(cfg->admin == NULL || json_is_object(cfg->admin));
	CHECK(cfg->clients == NULL || json_is_array(cfg->clients));
	CHECK(!cfg->tls_cert_file == !cfg->tls_key_file);
	for (size_t i = 0; i < cfg->nhosts; i++)
		CHECK(cfg->hosts[i] && cfg->hosts[i][0] && !strpbrk(cfg->hosts[i], " \t\r\n"));
	for (size_t i = 0; i < cfg->norigins; i++)
		CHECK(cfg->origins[i] && cfg->origins[i][0] && !strpbrk(cfg->origins[i], " \t\r\n"));
	for (size_t i = 0; i < cfg->ntokens; i++) {
		const struct px_client *c = &cfg->tokens[i];
		CHECK(c->name && c->name[0] && c->token && strlen(c->token) >= 16);
		const struct px_client *found = config_client_by_token(cfg, c->token);
		CHECK(found != NULL && strcmp(found->token, c->token) == 0);
		CHECK(found <= c); /* the first with that token */
	}
	CHECK(config_client_by_token(cfg, "") == NULL);
	CHECK(config_client_by_token(cfg, "short") == NULL);
	CHECK(config_restart_needed(cfg, cfg) == NULL);
}

/* Every "url" string of the file, through config_parse_url alone. */
static void check_file_urls(const uint8_t *data, size_t size)
{
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	const json_t *ups = json_object_get(root, "upstreams");
	for (size_t i = 0; i < json_array_size(ups) && i < 64; i++) {
		const char *url = json_string_value(json_object_get(json_array_get(ups, i), "url"));
		if (url)
			check_url(url);
	}
	json_decref(root);
}

/* ---- entry ----------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The input as a URL, up to its first NUL. */
	char *url = malloc(size + 1);
	CHECK(url != NULL);
	if (size)
		memcpy(url, data, size);
	url[size] = '\0';
	check_url(url);
	free(url);

	const char *dir = getenv("TMPDIR");
	char path[512];
	snprintf(path, sizeof path, "%s/fuzz_config.XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("fuzz_config: mkstemp");
		abort();
	}
	size_t off = 0;
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);
		if (n <= 0) {
			perror("fuzz_config: write");
			close(fd);
			unlink(path);
			abort();
		}
		off += (size_t)n;
	}
	close(fd);

	char err[8192], small[64];
	struct px_config *cfg = config_load_file(path, err, sizeof err);
	if (cfg == NULL) {
		CHECK(err[0] != '\0');
	} else {
		CHECK(err[0] == '\0');
		check_config(cfg);
	}
	static const size_t caps[] = {1, 2, 33, sizeof small};
	for (size_t i = 0; i < sizeof caps / sizeof *caps; i++) {
		memset(small, 'x', sizeof small);
		struct px_config *again = config_load_file(path, small, caps[i]);
		CHECK((again == NULL) == (cfg == NULL));
		CHECK(memchr(small, '\0', caps[i]) != NULL);
		if (again) {
			CHECK(config_restart_needed(cfg, again) == NULL);
			CHECK(again->nups == cfg->nups);
		}
		config_free(again);
	}
	struct px_config *quiet = config_load_file(path, NULL, 0);
	CHECK((quiet == NULL) == (cfg == NULL));
	config_free(quiet);

	char *argv[] = {"mcpwarden", "-c", path, NULL};
	enum config_action action;
	struct px_config *viaargv = config_from_argv(3, argv, &action, err, sizeof err);
	CHECK((viaargv == NULL) == (cfg == NULL));
	if (viaargv) {
		CHECK(action == CONFIG_RUN);
		CHECK(viaargv->nups == cfg->nups);
		CHECK(config_restart_needed(cfg, viaargv) == NULL);
	}
	config_free(viaargv);
	config_free(cfg);
	config_free(NULL);
	unlink(path);

	check_file_urls(data, size);
	return 0;
}

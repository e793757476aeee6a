/* config: see config.h.
 *
 * Why this file is long (over 800 lines): the JSON file, argv and reload sections all fill one
 * struct px_config through the small parsers and the error collector at the
 * top (parse_uint, parse_listen, path_ok, config_defaults, errs); splitting
 * a section out needs those in a private config header, with
 * config_parse_url the first candidate.
 *
 * Parsing goes argv -> defaults -> file (if -c) -> flags that override the
 * file. All errors are collected into the caller's errbuf, one per line, so
 * --check-config shows every mistake at once rather than the first one.
 */
#include "proxy/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "proxy/base/errs.h"
#include "proxy/net/http_resp.h"
#include "proxy/base/limits.h"
#include "proxy/base/b64.h"
#include "proxy/base/envx.h"

const char *config_usage(void)
{
	return "usage: mcpwarden [options]\n"
	       "       mcpwarden --check-config -c FILE\n"
	       "       mcpwarden check URL [--json] [--baseline FILE] ...   (mcpwarden check --help)\n"
	       "       mcpwarden diff OLD NEW [--json]\n"
	       /* tail / status (issue 22, item 7) */
	       "       mcpwarden tail ADMIN_URL [--tool NAME] [--outcome OUTCOME] ...   (mcpwarden tail --help)\n"
	       "       mcpwarden status ADMIN_URL [--json] [--token TOKEN]\n"
	       "       mcpwarden replay FILE --against URL ...   (mcpwarden replay --help)\n" /* replay */
	       "\n"
	       "A reverse proxy for MCP servers: Streamable HTTP and legacy HTTP+SSE on both\n"
	       "sides, contract checks, tool policy, call recording (admin endpoint).\n"
	       "\n"
	       "  -c, --config FILE         JSON config file (see conf/README.md)\n"
	       "      --check-config        validate the config and exit (0 when valid)\n"
	       "      --listen HOST:PORT    client listener (default 127.0.0.1:8080)\n"
	       "      --upstream URL        the one upstream, e.g. http://127.0.0.1:3001/mcp\n"
	       "      --path PATH           client-side path of that upstream (default /mcp)\n"
	       "      --upstream-transport T  auto|streamable_http|sse (default auto; every upstream)\n"
	       "      --connect-timeout MS  upstream TCP connect (default 5000)\n"
	       "      --request-timeout MS  upstream response (default 60000)\n"
	       "      --idle-timeout MS     idle client connection (default 60000)\n"
	       "      --sse-keepalive MS    comment line on quiet SSE streams (default 15000)\n"
	       "      --max-body BYTES      client request body (default 8388608)\n"
	       "      --workers N           event loops, one thread each (default: one per core)\n"
	       "      --tls-cert FILE --tls-key FILE   TLS on the client listener\n"
	       "      --policy FILE         tool policy (conf/README-policy.md)\n"
	       "      --contract MODE       report|filter|fail|off (the one upstream)\n"
	       "      --baseline FILE       tool list to diff against (the one upstream)\n"
	       "      --spec-only           only spec violations fail the contract\n"
	       "      --admin ADDR|off      admin endpoint (default 127.0.0.1:9090)\n"
	       "      --log-level LEVEL     debug|info|warn|error (default info)\n"
	       "      --log-format FORMAT   text|json (default text)\n"
	       "  -h, --help                this text\n"
	       "  -V, --version             version\n";
}

static char *xstrndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static void upstream_conf_fini(struct px_upstream_conf *u)
{
	free(u->name);
	free(u->path);
	free(u->url_safe);
	free(u->host);
	free(u->port);
	free(u->target);
	free(u->host_header);
	if (u->basic_auth)
		explicit_bzero(u->basic_auth, strlen(u->basic_auth));
	free(u->basic_auth);
	free(u->sse_path);
	free(u->messages_path);
	free(u->capture.path); /* capture */
	json_decref(u->contract);
	free(u->tls_ca_file);
	free(u->tls_cert_file);
	free(u->tls_key_file);
	for (size_t i = 0; i < u->nheaders; i++) {
		free(u->headers[i].name);
		/* Configured values are credentials: wipe before freeing. */
		explicit_bzero(u->headers[i].value, strlen(u->headers[i].value));
		free(u->headers[i].value);
	}
	free(u->headers);
	memset(u, 0, sizeof(*u));
}

void config_free(struct px_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->nups; i++)
		upstream_conf_fini(&cfg->ups[i]);
	free(cfg->ups);
	free(cfg->listen_host);
	free(cfg->listen_port);
	free(cfg->config_file);
	json_decref(cfg->policy);
	json_decref(cfg->clients);
	json_decref(cfg->admin);
	for (size_t i = 0; i < cfg->ntokens; i++) {
		free(cfg->tokens[i].name);
		if (cfg->tokens[i].token) {
			explicit_bzero(cfg->tokens[i].token, strlen(cfg->tokens[i].token));
			free(cfg->tokens[i].token);
		}
	}
	free(cfg->tokens);
	for (size_t i = 0; i < cfg->nhosts; i++)
		free(cfg->hosts[i]);
	free(cfg->hosts);
	for (size_t i = 0; i < cfg->norigins; i++)
		free(cfg->origins[i]);
	free(cfg->origins);
	free(cfg->tls_cert_file);
	free(cfg->tls_key_file);
	upstream_conf_fini(&cfg->telemetry.otlp); /* telemetry */
	free(cfg->telemetry.service_name);
	json_decref(cfg->telemetry.resource);
	free(cfg);
}

const struct px_client *config_client_by_token(const struct px_config *cfg, const char *bearer)
{
	const struct px_client *found = NULL;
	size_t bl = strlen(bearer);

	/* Every token is compared in full, so timing tells nothing of which
	 * one (or how much of one) matched. */
	for (size_t i = 0; i < cfg->ntokens; i++) {
		const char *t = cfg->tokens[i].token;
		size_t tl = strlen(t);
		unsigned char diff = (unsigned char)(tl != bl);
		for (size_t k = 0; k < tl; k++)
			diff |= (unsigned char)(t[k] ^ (k < bl ? bearer[k] : 0));
		if (diff == 0 && !found)
			found = &cfg->tokens[i];
	}
	return found;
}

static struct px_config *config_defaults(void)
{
	struct px_config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return NULL;
	cfg->listen_host = strdup("127.0.0.1");
	cfg->listen_port = strdup("8080");
	cfg->timeouts.connect_ms = TIMEOUT_CONNECT_MS;
	cfg->timeouts.request_ms = TIMEOUT_REQUEST_MS;
	cfg->timeouts.client_idle_ms = TIMEOUT_CLIENT_IDLE_MS;
	cfg->timeouts.upstream_idle_ms = TIMEOUT_UPSTREAM_IDLE_MS;
	cfg->timeouts.header_ms = TIMEOUT_HEADER_MS;
	cfg->timeouts.body_ms = TIMEOUT_BODY_MS;
	cfg->timeouts.sse_keepalive_ms = TIMEOUT_SSE_KEEPALIVE_MS;
	cfg->timeouts.drain_ms = TIMEOUT_DRAIN_MS;
	cfg->timeouts.session_idle_ms = TIMEOUT_SESSION_IDLE_MS;
	cfg->limits.max_body_bytes = LIMIT_MAX_BODY_BYTES;
	cfg->limits.max_header_bytes = LIMIT_MAX_HEADER_BYTES;
	cfg->limits.max_sse_event_bytes = LIMIT_MAX_SSE_EVENT_BYTES;
	cfg->limits.max_inspect_bytes = LIMIT_MAX_INSPECT_BYTES;
	cfg->limits.max_connections = LIMIT_MAX_CONNECTIONS;
	cfg->limits.max_connections_per_client = LIMIT_MAX_CONNECTIONS_PER_CLIENT;
	cfg->limits.max_json_depth = LIMIT_MAX_JSON_DEPTH;
	cfg->limits.max_batch = LIMIT_MAX_BATCH;
	cfg->limits.max_output_bytes = LIMIT_MAX_OUTPUT_BYTES;
	cfg->limits.max_sessions = LIMIT_MAX_SESSIONS;
	cfg->limits.max_session_pending = LIMIT_MAX_SESSION_PENDING;
	cfg->limits.max_session_queue = LIMIT_MAX_SESSION_QUEUE;
	cfg->limits.max_inflight_per_session = LIMIT_MAX_INFLIGHT_PER_SESSION;
	cfg->yield_after_us = LIMIT_YIELD_AFTER_US;
	cfg->limits.max_streams_per_session = LIMIT_MAX_STREAMS_PER_SESSION;
	cfg->log_level = LOG_INFO;
	if (!cfg->listen_host || !cfg->listen_port) {
		config_free(cfg);
		return NULL;
	}
	return cfg;
}

/* ---- small parsers ------------------------------------------------------ */

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* "host:port", "[v6]:port" or ":port". */
static int parse_listen(struct px_config *cfg, const char *s)
{
	const char *colon = strrchr(s, ':');
	unsigned long long port;

	if (!colon || parse_uint(colon + 1, 65535, &port) < 0)
		return -1;
	const char *h = s;
	size_t hl = (size_t)(colon - s);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	free(cfg->listen_host);
	free(cfg->listen_port);
	cfg->listen_host = hl ? xstrndup(h, hl) : strdup("0.0.0.0");
	cfg->listen_port = strdup(colon + 1);
	return cfg->listen_host && cfg->listen_port ? 0 : -1;
}

static char *basic_auth_of(const char *userinfo, size_t n)
{
	char *out = malloc(6 + b64_encoded_len(n) + 1);
	if (!out)
		return NULL;
	memcpy(out, "Basic ", 6);
	b64_encode(userinfo, n, out + 6);
	return out;
}

/* A DNS name or IPv4 address (letters, digits, '-', '.', '_'; at most 253
 * bytes), or, in brackets, an IPv6 address. */
static int host_ok(const char *h, int bracketed)
{
	if (bracketed) {
		struct in6_addr a6;
		return inet_pton(AF_INET6, h, &a6) == 1;
	}
	size_t n = strlen(h);
	if (n > 253)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)h[i]) && !strchr("-._", h[i]))
			return 0;
	return 1;
}

int config_parse_url(struct px_upstream_conf *u, const char *url, const char **why)
{
	const char *p, *auth_end, *host_start, *host_end, *path;
	char portbuf[24];

	if (strncmp(url, "http://", 7) == 0) {
		u->tls = 0;
		p = url + 7;
	} else if (strncmp(url, "https://", 8) == 0) {
		u->tls = 1;
		p = url + 8;
	} else {
		*why = "the URL must start with http:// or https://";
		return -1;
	}
	/* The URL ends up in a request line and a Host header: spaces and
	 * control bytes there would let it inject headers. */
	for (const char *c = url; *c; c++) {
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f) {
			*why = "the URL holds spaces, control or non-ASCII characters "
			       "(percent-encode them)";
			return -1;
		}
	}
	path = p + strcspn(p, "/?#");
	/* The userinfo ends at the last '@' of the authority: a password may
	 * hold '@', and cutting at the first would show the rest of it as the
	 * host in every log line. */
	auth_end = memrchr(p, '@', (size_t)(path - p));
	host_start = auth_end ? auth_end + 1 : p;
	if (auth_end) {
		/* userinfo is percent-encoded; decode it for the Basic header. */
		size_t n = (size_t)(auth_end - p), j = 0;
		char *dec = malloc(n + 1);
		if (!dec) {
			*why = "out of memory";
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			if (p[i] == '%' && i + 2 < n && isxdigit((unsigned char)p[i + 1]) &&
			    isxdigit((unsigned char)p[i + 2])) {
				char hex[3] = {p[i + 1], p[i + 2], 0};
				dec[j++] = (char)strtol(hex, NULL, 16);
				i += 2;
			} else {
				dec[j++] = p[i];
			}
		}
		u->basic_auth = basic_auth_of(dec, j);
		free(dec);
	}
	const char *port = NULL;
	if (*host_start == '[') {
		host_end = memchr(host_start, ']', (size_t)(path - host_start));
		if (!host_end) {
			*why = "unterminated IPv6 address in the URL";
			return -1;
		}
		if (host_end + 1 < path && host_end[1] == ':') {
			port = host_end + 2;
		} else if (host_end + 1 != path) {
			*why = "junk after the IPv6 address in the URL";
			return -1;
		}
		u->host = xstrndup(host_start + 1, (size_t)(host_end - host_start - 1));
	} else {
		host_end = memchr(host_start, ':', (size_t)(path - host_start));
		if (host_end)
			port = host_end + 1;
		else
			host_end = path;
		u->host = xstrndup(host_start, (size_t)(host_end - host_start));
	}
	if (!u->host || !*u->host) {
		*why = "the URL has no host";
		return -1;
	}
	if (!host_ok(u->host, *host_start == '[')) {
		*why = "the URL's host is not a valid name or address";
		return -1;
	}
	unsigned long long pv = u->tls ? 443 : 80;
	if (port) {
		char tmp[8];
		size_t pl = (size_t)(path - port);
		if (pl == 0 || pl >= sizeof(tmp)) {
			*why = "the URL's port is not a number from 1 to 65535";
			return -1;
		}
		memcpy(tmp, port, pl);
		tmp[pl] = '\0';
		if (parse_uint(tmp, 65535, &pv) < 0 || pv == 0) {
			*why = "the URL's port is not a number from 1 to 65535";
			return -1;
		}
	}
	snprintf(portbuf, sizeof(portbuf), "%llu", pv);
	u->port = strdup(portbuf);
	const char *frag = strchr(path, '#');
	size_t tlen = frag ? (size_t)(frag - path) : strlen(path);
	if (tlen == 0 || path[0] != '/') {
		/* "http://h:1?x" or "http://h:1": target starts at "/". */
		char *t = malloc(tlen + 2);
		if (t) {
			t[0] = '/';
			memcpy(t + 1, path, tlen);
			t[tlen + 1] = '\0';
		}
		u->target = t;
	} else {
		u->target = xstrndup(path, tlen);
	}
	int v6 = strchr(u->host, ':') != NULL;
	int default_port = pv == (u->tls ? 443u : 80u);
	char hh[300];
	snprintf(hh, sizeof(hh), "%s%s%s%s%s", v6 ? "[" : "", u->host, v6 ? "]" : "",
	         default_port ? "" : ":", default_port ? "" : portbuf);
	u->host_header = strdup(hh);
	/* The only form that may be shown: no userinfo, no query, no fragment. */
	size_t plen = strcspn(u->target, "?");
	char safe[1200];
	snprintf(safe, sizeof(safe), "%s://%s%s%s:%s%.*s", u->tls ? "https" : "http",
	         v6 ? "[" : "", u->host, v6 ? "]" : "", portbuf, (int)plen, u->target);
	u->url_safe = strdup(safe);
	if (!u->port || !u->target || !u->host_header || !u->url_safe) {
		*why = "out of memory";
		return -1;
	}
	return 0;
}

/* ---- JSON file ---------------------------------------------------------- */

struct key_spec {
	const char *name;
	json_type type;      /* JSON_STRING, JSON_INTEGER, JSON_OBJECT, JSON_ARRAY */
};

/* Reports keys of obj not in specs; returns how many. */
static int check_keys(struct errs *e, const char *where, json_t *obj,
                      const struct key_spec *specs)
{
	const char *key;
	json_t *val;
	int bad = 0;

	json_object_foreach(obj, key, val) {
		const struct key_spec *s = specs;
		while (s->name && strcmp(s->name, key) != 0)
			s++;
		if (!s->name) {
			errs_add(e, "%s.%s: unknown key", where, key);
			bad++;
		} else if (json_typeof(val) != s->type &&
		           !(s->type == JSON_TRUE && json_is_boolean(val)) &&
		           !(s->type == JSON_REAL && json_is_number(val))) { /* telemetry: a ratio */
			errs_add(e, "%s.%s: must be %s", where, key,
			        s->type == JSON_STRING    ? "a string"
			        : s->type == JSON_INTEGER ? "a non-negative integer"
			        : s->type == JSON_OBJECT  ? "an object"
			        : s->type == JSON_TRUE    ? "true or false"
			        : s->type == JSON_REAL    ? "a number"
			                                  : "an array");
			bad++;
		}
	}
	return bad;
}

static void get_uint(struct errs *e, const char *where, json_t *obj, const char *key,
                     unsigned long long max, void *out, size_t out_size)
{
	json_t *v = json_object_get(obj, key);
	if (!v || !json_is_integer(v))
		return; /* type errors were reported by check_keys */
	json_int_t n = json_integer_value(v);
	if (n < 0 || (unsigned long long)n > max) {
		errs_add(e, "%s.%s: must be from 0 to %llu", where, key, max);
		return;
	}
	if (out_size == sizeof(unsigned))
		*(unsigned *)out = (unsigned)n;
	else
		*(size_t *)out = (size_t)n;
}

static const struct key_spec timeout_keys[] = {
	{"connect_ms", JSON_INTEGER},    {"request_ms", JSON_INTEGER},
	{"client_idle_ms", JSON_INTEGER}, {"upstream_idle_ms", JSON_INTEGER},
	{"header_ms", JSON_INTEGER}, {"body_ms", JSON_INTEGER},
	{"sse_keepalive_ms", JSON_INTEGER}, {"drain_ms", JSON_INTEGER},
	{"session_idle_ms", JSON_INTEGER},
	{NULL, 0},
};

static const struct key_spec limit_keys[] = {
	{"max_body_bytes", JSON_INTEGER},   {"max_header_bytes", JSON_INTEGER},
	{"max_sse_event_bytes", JSON_INTEGER}, {"max_connections", JSON_INTEGER},
	{"max_connections_per_client", JSON_INTEGER}, {"max_json_depth", JSON_INTEGER},
	{"max_batch", JSON_INTEGER},        {"max_output_bytes", JSON_INTEGER},
	{"max_sessions", JSON_INTEGER},     {"max_session_pending", JSON_INTEGER},
	{"max_session_queue", JSON_INTEGER}, {"max_inflight_per_session", JSON_INTEGER},
	{"max_streams_per_session", JSON_INTEGER}, {"max_inspect_bytes", JSON_INTEGER},
	{NULL, 0},
};

static const struct key_spec upstream_keys[] = {
	{"name", JSON_STRING}, {"path", JSON_STRING}, {"url", JSON_STRING},
	{"timeouts", JSON_OBJECT}, {"contract", JSON_OBJECT}, {"headers", JSON_OBJECT},
	{"tls", JSON_OBJECT}, {"transport", JSON_STRING}, {"sse_path", JSON_STRING},
	{"messages_path", JSON_STRING}, {"validation", JSON_OBJECT},
	{"capture", JSON_OBJECT}, /* capture (proxy/hooks/hook_capture.h) */
	{NULL, 0},
};

static const struct key_spec upstream_validation_keys[] = {
	{"arguments", JSON_STRING}, {"results", JSON_STRING}, {"formats", JSON_TRUE}, {NULL, 0},
};

static const struct key_spec upstream_tls_keys[] = {
	{"ca_file", JSON_STRING}, {"cert_file", JSON_STRING}, {"key_file", JSON_STRING},
	{"insecure_skip_verify", JSON_TRUE}, {NULL, 0},
};

static const struct key_spec listen_tls_keys[] = {
	{"cert_file", JSON_STRING}, {"key_file", JSON_STRING}, {NULL, 0},
};

static const struct key_spec top_keys[] = {
	{"listen", JSON_STRING}, {"upstreams", JSON_ARRAY}, {"timeouts", JSON_OBJECT},
	{"limits", JSON_OBJECT}, {"log", JSON_OBJECT}, {"policy", JSON_OBJECT},
	{"clients", JSON_ARRAY}, {"admin", JSON_OBJECT}, {"allowed_hosts", JSON_ARRAY},
	{"allowed_origins", JSON_ARRAY}, {"tls", JSON_OBJECT}, {"workers", JSON_INTEGER},
	{"yield_after_us", JSON_INTEGER},
	{"telemetry", JSON_OBJECT}, /* telemetry (issue 23) */
	{"replica_id", JSON_STRING},  /* replicas */
	/* Editors' JSON Schema hint ("$schema": URL): accepted, not used. */
	{"$schema", JSON_STRING}, {NULL, 0},
};

static const struct key_spec log_keys[] = {
	{"level", JSON_STRING}, {"format", JSON_STRING}, {NULL, 0},
};

#define MAX_MS 86400000ull

static void load_timeouts(struct errs *e, const char *where, json_t *t, struct px_config *cfg)
{
	check_keys(e, where, t, timeout_keys);
	get_uint(e, where, t, "connect_ms", MAX_MS, &cfg->timeouts.connect_ms, sizeof(unsigned));
	get_uint(e, where, t, "request_ms", MAX_MS, &cfg->timeouts.request_ms, sizeof(unsigned));
	get_uint(e, where, t, "client_idle_ms", MAX_MS, &cfg->timeouts.client_idle_ms, sizeof(unsigned));
	get_uint(e, where, t, "upstream_idle_ms", MAX_MS, &cfg->timeouts.upstream_idle_ms, sizeof(unsigned));
	get_uint(e, where, t, "header_ms", MAX_MS, &cfg->timeouts.header_ms, sizeof(unsigned));
	get_uint(e, where, t, "body_ms", MAX_MS, &cfg->timeouts.body_ms, sizeof(unsigned));
	get_uint(e, where, t, "sse_keepalive_ms", MAX_MS, &cfg->timeouts.sse_keepalive_ms, sizeof(unsigned));
	get_uint(e, where, t, "drain_ms", MAX_MS, &cfg->timeouts.drain_ms, sizeof(unsigned));
	get_uint(e, where, t, "session_idle_ms", MAX_MS, &cfg->timeouts.session_idle_ms, sizeof(unsigned));
}

/* ---- replicas: "replica_id" ---------------------------------------------------
 * One to PX_REPLICA_ID_MAX of [A-Za-z0-9_]: it becomes an HAProxy server
 * name and the part before the first '-' of a minted session id, so it
 * may hold no '-' itself (conf/haproxy/mcpwarden.cfg splits on it). */
static void load_replica_id(struct errs *e, json_t *root, struct px_config *cfg)
{
	const char *v = json_string_value(json_object_get(root, "replica_id"));
	if (!v)
		return;
	size_t n = strlen(v);
	int ok = n >= 1 && n <= PX_REPLICA_ID_MAX;
	for (size_t i = 0; ok && i < n; i++)
		ok = (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
		     (v[i] >= '0' && v[i] <= '9') || v[i] == '_';
	if (!ok) {
		errs_add(e, "$.replica_id: must be 1 to %d of A-Z, a-z, 0-9 and _", PX_REPLICA_ID_MAX);
		return;
	}
	memcpy(cfg->replica_id, v, n + 1);
}
/* ---- end replicas ---- */

static void load_limits(struct errs *e, json_t *l, struct px_config *cfg)
{
	const char *w = "$.limits";
	check_keys(e, w, l, limit_keys);
	get_uint(e, w, l, "max_body_bytes", 1ull << 30, &cfg->limits.max_body_bytes, sizeof(size_t));
	get_uint(e, w, l, "max_header_bytes", 1ull << 20, &cfg->limits.max_header_bytes, sizeof(size_t));
	get_uint(e, w, l, "max_sse_event_bytes", 1ull << 30, &cfg->limits.max_sse_event_bytes, sizeof(size_t));
	get_uint(e, w, l, "max_inspect_bytes", 1ull << 30, &cfg->limits.max_inspect_bytes, sizeof(size_t));
	get_uint(e, w, l, "max_connections", 1000000, &cfg->limits.max_connections, sizeof(size_t));
	get_uint(e, w, l, "max_connections_per_client", 1000000,
	         &cfg->limits.max_connections_per_client, sizeof(size_t));
	get_uint(e, w, l, "max_json_depth", 2000, &cfg->limits.max_json_depth, sizeof(size_t));
	get_uint(e, w, l, "max_batch", 100000, &cfg->limits.max_batch, sizeof(size_t));
	get_uint(e, w, l, "max_output_bytes", 1ull << 30, &cfg->limits.max_output_bytes, sizeof(size_t));
	get_uint(e, w, l, "max_sessions", 1000000, &cfg->limits.max_sessions, sizeof(size_t));
	get_uint(e, w, l, "max_session_pending", 100000, &cfg->limits.max_session_pending, sizeof(size_t));
	get_uint(e, w, l, "max_session_queue", 100000, &cfg->limits.max_session_queue, sizeof(size_t));
	get_uint(e, w, l, "max_inflight_per_session", 100000, &cfg->limits.max_inflight_per_session,
	         sizeof(size_t));
	get_uint(e, w, l, "max_streams_per_session", 100000, &cfg->limits.max_streams_per_session,
	         sizeof(size_t));
}

static void load_log(struct errs *e, json_t *l, struct px_config *cfg)
{
	check_keys(e, "$.log", l, log_keys);
	const char *lv = json_string_value(json_object_get(l, "level"));
	const char *fmt = json_string_value(json_object_get(l, "format"));
	if (lv && log_level_parse(lv, &cfg->log_level) < 0)
		errs_add(e, "$.log.level: must be debug, info, warn or error");
	if (fmt) {
		if (strcmp(fmt, "json") == 0)
			cfg->log_json = 1;
		else if (strcmp(fmt, "text") == 0)
			cfg->log_json = 0;
		else
			errs_add(e, "$.log.format: must be text or json");
	}
}

static int path_ok(const char *p)
{
	if (p[0] != '/')
		return 0;
	for (; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == '?' || *p == '#' || (unsigned char)*p >= 0x7f)
			return 0;
	return 1;
}

struct env_where {
	struct errs *e;
	const char *where;
};

/* An unset variable is an error (a silently empty credential would only
 * show up as a 401 from the upstream), noted here so that every one is
 * reported. */
static const char *env_get(void *arg, const char *name)
{
	const struct env_where *w = arg;
	const char *val = getenv(name);
	if (!val) {
		errs_add(w->e, "%s: environment variable %s is not set", w->where, name);
		val = "";
	}
	return val;
}

/* "${NAME}" anywhere in a value is replaced by the environment variable
 * NAME (envx.h's rule). Returns an owned string, or NULL after saying why
 * (or when out of memory). */
static char *expand_env(struct errs *e, const char *where, const char *v)
{
	struct env_where w = {e, where};
	struct envx_fail fail;
	char *out = envx_expand(v, env_get, &w, &fail);
	if (!out && fail.why == ENVX_BAD_NAME)
		errs_add(e, "%s: ${…} must name an environment variable (" ENVX_RULE ")", where);
	return out;
}

static int header_value_ok(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 && *v != '\t')
			return 0;
	return 1;
}

static int token_char(int c)
{
	return c > 0x20 && c < 0x7f && !strchr("\"(),/:;<=>?@[\\]{}", c);
}

static void load_headers(struct errs *e, const char *where, json_t *hj,
                         struct px_upstream_conf *u)
{
	const char *key;
	json_t *val;
	size_t n = json_object_size(hj);

	u->headers = calloc(n ? n : 1, sizeof(*u->headers));
	if (!u->headers)
		return;
	json_object_foreach(hj, key, val) {
		char w[160];
		snprintf(w, sizeof(w), "%s.headers.%s", where, key);
		const char *k;
		for (k = key; *k && token_char((unsigned char)*k); k++)
			;
		if (!*key || *k) {
			errs_add(e, "%s: not a valid header name", w);
			continue;
		}
		/* Framing and hop-by-hop fields are the proxy's to set: a
		 * configured Content-Length or Transfer-Encoding would send
		 * conflicting framing upstream. */
		if (http_hop_by_hop(key, strlen(key), NULL) || strcasecmp(key, "host") == 0 ||
		    strcasecmp(key, "content-length") == 0 || strcasecmp(key, "expect") == 0) {
			errs_add(e, "%s: set by the proxy, cannot be configured", w);
			continue;
		}
		if (!json_is_string(val)) {
			errs_add(e, "%s: must be a string", w);
			continue;
		}
		char *v = expand_env(e, w, json_string_value(val));
		if (!v)
			continue; /* said why, or out of memory */
		if (!header_value_ok(v)) {
			errs_add(e, "%s: the value holds control characters", w);
			free(v);
			continue;
		}
		u->headers[u->nheaders].name = strdup(key);
		u->headers[u->nheaders].value = v;
		u->nheaders++;
	}
}

/* telemetry: whether u has a header named name already. */
static int configured_header_name(const struct px_upstream_conf *u, const char *name)
{
	for (size_t i = 0; i < u->nheaders; i++)
		if (strcasecmp(u->headers[i].name, name) == 0)
			return 1;
	return 0;
}

static const struct key_spec client_keys[] = {
	{"name", JSON_STRING}, {"token", JSON_STRING}, {"token_env", JSON_STRING}, {NULL, 0},
};

static void load_clients(struct errs *e, json_t *arr, struct px_config *cfg)
{
	size_t n = json_array_size(arr);
	cfg->tokens = calloc(n ? n : 1, sizeof(*cfg->tokens));
	if (!cfg->tokens)
		return;
	for (size_t i = 0; i < n; i++) {
		char w[64];
		json_t *cj = json_array_get(arr, i);
		snprintf(w, sizeof(w), "$.clients[%zu]", i);
		if (!json_is_object(cj)) {
			errs_add(e, "%s: must be an object", w);
			continue;
		}
		check_keys(e, w, cj, client_keys);
		const char *name = json_string_value(json_object_get(cj, "name"));
		const char *tok = json_string_value(json_object_get(cj, "token"));
		const char *env = json_string_value(json_object_get(cj, "token_env"));
		if (!name || !*name) {
			errs_add(e, "%s.name: required", w);
			continue;
		}
		if (!!tok == !!env) {
			errs_add(e, "%s: give exactly one of token and token_env", w);
			continue;
		}
		if (env && !(tok = getenv(env))) {
			errs_add(e, "%s.token_env: environment variable %s is not set", w, env);
			continue;
		}
		if (strlen(tok) < 16) {
			errs_add(e, "%s: the token must be at least 16 characters", w);
			continue;
		}
		cfg->tokens[cfg->ntokens].name = strdup(name);
		cfg->tokens[cfg->ntokens].token = strdup(tok);
		cfg->ntokens++;
	}
}

const char *config_transport_str(enum px_transport t)
{
	return t == PX_TRANSPORT_SSE ? "sse" : t == PX_TRANSPORT_STREAMABLE ? "streamable_http" : "auto";
}

static int config_transport_parse(const char *s, enum px_transport *out)
{
	if (strcmp(s, "auto") == 0)
		*out = PX_TRANSPORT_AUTO;
	else if (strcmp(s, "streamable_http") == 0)
		*out = PX_TRANSPORT_STREAMABLE;
	else if (strcmp(s, "sse") == 0)
		*out = PX_TRANSPORT_SSE;
	else
		return -1;
	return 0;
}

/* Whether `p` is taken by an upstream path or by another legacy path. */
static int path_taken(const struct px_config *cfg, const char *p, const void *self)
{
	for (size_t i = 0; i < cfg->nups; i++) {
		const struct px_upstream_conf *u = &cfg->ups[i];
		if ((u->path && strcmp(u->path, p) == 0) ||
		    ((const void *)&u->sse_path != self && u->sse_path && strcmp(u->sse_path, p) == 0) ||
		    ((const void *)&u->messages_path != self && u->messages_path &&
		     strcmp(u->messages_path, p) == 0))
			return 1;
	}
	return 0;
}

/* The legacy HTTP+SSE face of each upstream (proxy/mcp/transport_sse.h): by
 * default "/mcp" -> "/sse" + "/messages", "/x/mcp" -> "/x/sse" +
 * "/x/messages", "/x" -> "/x/sse" + "/x/messages". A default that clashes
 * with a path in use is left off quietly; a configured one is an error.
 * Returns 0 or -1. */
static int legacy_paths(struct errs *e, struct px_config *cfg)
{
	int before = e->count;

	for (size_t i = 0; i < cfg->nups; i++) {
		struct px_upstream_conf *u = &cfg->ups[i];
		for (int k = 0; k < 2; k++) {
			char **slot = k ? &u->messages_path : &u->sse_path;
			const char *leaf = k ? "/messages" : "/sse";
			int derived = !*slot;
			if (*slot && !**slot) {
				free(*slot); /* "": this face is off */
				*slot = NULL;
				continue;
			}
			if (derived) {
				size_t n = strlen(u->path);
				if (n >= 4 && strcmp(u->path + n - 4, "/mcp") == 0)
					n -= 4;
				else if (n == 1)
					n = 0;
				char buf[1200];
				snprintf(buf, sizeof(buf), "%.*s%s", (int)n, u->path, leaf);
				*slot = strdup(buf);
				if (!*slot)
					return -1;
			}
			if (path_taken(cfg, *slot, slot)) {
				if (!derived)
					errs_add(e, "$.upstreams[%zu].%s: \"%s\" is already in use", i,
					        k ? "messages_path" : "sse_path", *slot);
				free(*slot);
				*slot = NULL;
			}
		}
	}
	return e->count > before ? -1 : 0;
}

/* Defaults of an upstream's "validation" (hook_validate.h: report). */
static void validation_defaults(struct px_upstream_conf *u)
{
	u->validation.arguments = 1;
	u->validation.results = 1;
	u->validation.formats = 0;
}

/* "off" 0, "report" 1, "fail" 2 (enum validate_mode), or -1. */
static int validation_mode(const char *s)
{
	static const char *const names[] = {"off", "report", "fail"};
	for (int k = 0; k < 3; k++)
		if (strcmp(s, names[k]) == 0)
			return k;
	return -1;
}

/* upstreams[i].validation: {"arguments", "results": off|report|fail,
 * "formats": bool}, each error located ("$.upstreams[0].validation.results"). */
static void load_validation(struct errs *e, const char *where, json_t *vj,
                            struct px_upstream_conf *u)
{
	char w2[80];
	snprintf(w2, sizeof(w2), "%s.validation", where);
	check_keys(e, w2, vj, upstream_validation_keys);
	static const char *const keys[] = {"arguments", "results"};
	int *out[] = {&u->validation.arguments, &u->validation.results};
	for (int k = 0; k < 2; k++) {
		const char *v = json_string_value(json_object_get(vj, keys[k]));
		if (!v)
			continue; /* absent, or a type error check_keys reported */
		int m = validation_mode(v);
		if (m < 0)
			errs_add(e, "%s.%s: must be off, report or fail", w2, keys[k]);
		else
			*out[k] = m;
	}
	json_t *f = json_object_get(vj, "formats");
	if (json_is_boolean(f))
		u->validation.formats = json_is_true(f);
}

/* ---- capture: upstreams[i].capture (proxy/hooks/hook_capture.h) ---- */
#define CAPTURE_DEFAULT_MAX_BYTES (64ull * 1024 * 1024)
#define CAPTURE_MIN_MAX_BYTES 1024ull
#define CAPTURE_MAX_KEEP 1000

static const struct key_spec upstream_capture_keys[] = {
	{"path", JSON_STRING}, {"max_bytes", JSON_INTEGER}, {"keep", JSON_INTEGER},
	{"unredacted", JSON_TRUE}, {NULL, 0},
};

/* {"path": FILE (required), "max_bytes": 64 MiB, "keep": 2,
 * "unredacted": false}, each error located. */
static void load_capture(struct errs *e, const char *where, json_t *cj,
                         struct px_upstream_conf *u)
{
	char w2[80];
	snprintf(w2, sizeof(w2), "%s.capture", where);
	check_keys(e, w2, cj, upstream_capture_keys);
	const char *path = json_string_value(json_object_get(cj, "path"));
	u->capture.max_bytes = CAPTURE_DEFAULT_MAX_BYTES;
	u->capture.keep = 2;
	get_uint(e, w2, cj, "max_bytes", 1ull << 50, &u->capture.max_bytes, sizeof(size_t));
	get_uint(e, w2, cj, "keep", CAPTURE_MAX_KEEP, &u->capture.keep, sizeof(unsigned));
	u->capture.unredacted = json_is_true(json_object_get(cj, "unredacted"));
	if (u->capture.max_bytes < CAPTURE_MIN_MAX_BYTES)
		errs_add(e, "%s.max_bytes: must be at least %llu", w2, CAPTURE_MIN_MAX_BYTES);
	if (!path || !*path)
		errs_add(e, "%s.path: required (a file name)", w2);
	else
		u->capture.path = strdup(path);
}
/* ---- end capture ---- */

static void load_upstream(struct errs *e, size_t i, json_t *uj, struct px_config *cfg)
{
	char where[64];
	struct px_upstream_conf *u = &cfg->ups[i];
	const char *why;

	snprintf(where, sizeof(where), "$.upstreams[%zu]", i);
	if (!json_is_object(uj)) {
		errs_add(e, "%s: must be an object", where);
		return;
	}
	check_keys(e, where, uj, upstream_keys);
	const char *url = json_string_value(json_object_get(uj, "url"));
	const char *path = json_string_value(json_object_get(uj, "path"));
	const char *name = json_string_value(json_object_get(uj, "name"));
	u->connect_timeout_ms = cfg->timeouts.connect_ms;
	u->request_timeout_ms = cfg->timeouts.request_ms;
	u->contract = json_incref(json_object_get(uj, "contract"));
	validation_defaults(u);
	json_t *vj = json_object_get(uj, "validation");
	if (json_is_object(vj))
		load_validation(e, where, vj, u);
	json_t *cj = json_object_get(uj, "capture"); /* capture */
	if (json_is_object(cj))
		load_capture(e, where, cj, u);
	json_t *hj = json_object_get(uj, "headers");
	if (json_is_object(hj))
		load_headers(e, where, hj, u);
	json_t *t = json_object_get(uj, "timeouts");
	if (json_is_object(t)) {
		char w2[80];
		snprintf(w2, sizeof(w2), "%s.timeouts", where);
		static const struct key_spec up_timeout_keys[] = {
			{"connect_ms", JSON_INTEGER}, {"request_ms", JSON_INTEGER}, {NULL, 0},
		};
		check_keys(e, w2, t, up_timeout_keys);
		get_uint(e, w2, t, "connect_ms", MAX_MS, &u->connect_timeout_ms, sizeof(unsigned));
		get_uint(e, w2, t, "request_ms", MAX_MS, &u->request_timeout_ms, sizeof(unsigned));
	}
	if (!url) {
		errs_add(e, "%s.url: required", where);
	} else if (config_parse_url(u, url, &why) < 0) {
		errs_add(e, "%s.url: %s", where, why);
	}
	json_t *tj = json_object_get(uj, "tls");
	if (json_is_object(tj)) {
		char w2[80];
		snprintf(w2, sizeof(w2), "%s.tls", where);
		check_keys(e, w2, tj, upstream_tls_keys);
		const char *ca = json_string_value(json_object_get(tj, "ca_file"));
		const char *cert = json_string_value(json_object_get(tj, "cert_file"));
		const char *key = json_string_value(json_object_get(tj, "key_file"));
		u->tls_ca_file = ca ? strdup(ca) : NULL;
		u->tls_cert_file = cert ? strdup(cert) : NULL;
		u->tls_key_file = key ? strdup(key) : NULL;
		u->tls_insecure_skip_verify = json_is_true(json_object_get(tj, "insecure_skip_verify"));
		if (!!cert != !!key)
			errs_add(e, "%s: cert_file and key_file go together", w2);
		if (url && !u->tls)
			errs_add(e, "%s: set for an http:// upstream (use https://)", w2);
	}
	path = path ? path : "/mcp";
	if (!path_ok(path))
		errs_add(e, "%s.path: must start with / and hold no spaces, '?' or '#'", where);
	u->path = strdup(path);
	const char *tr = json_string_value(json_object_get(uj, "transport"));
	if (tr && config_transport_parse(tr, &u->transport) < 0)
		errs_add(e, "%s.transport: must be auto, streamable_http or sse", where);
	/* Legacy paths as given ("" turns that face off); the rest are
	 * derived from `path` once every upstream is known. */
	const char *lp[2] = {json_string_value(json_object_get(uj, "sse_path")),
	                     json_string_value(json_object_get(uj, "messages_path"))};
	for (int k = 0; k < 2; k++) {
		if (lp[k] && *lp[k] && !path_ok(lp[k]))
			errs_add(e, "%s.%s: must start with / and hold no spaces, '?' or '#'", where,
			        k ? "messages_path" : "sse_path");
		if (lp[k])
			*(k ? &u->messages_path : &u->sse_path) = strdup(lp[k]);
	}
	char defname[32];
	snprintf(defname, sizeof(defname), "upstream%zu", i);
	u->name = strdup(name && *name ? name : defname);
	for (size_t j = 0; j < i; j++) {
		if (cfg->ups[j].path && strcmp(cfg->ups[j].path, u->path) == 0)
			errs_add(e, "%s.path: \"%s\" is already used by $.upstreams[%zu]", where, u->path, j);
		if (cfg->ups[j].name && strcmp(cfg->ups[j].name, u->name) == 0)
			errs_add(e, "%s.name: \"%s\" is already used by $.upstreams[%zu]", where, u->name, j);
	}
}

/* An array of non-empty strings into an owned char * array. */
static void load_strings(struct errs *e, const char *where, json_t *arr, char ***out, size_t *n)
{
	size_t len = json_array_size(arr);
	*out = calloc(len ? len : 1, sizeof(**out));
	if (!*out)
		return;
	for (size_t i = 0; i < len; i++) {
		const char *s = json_string_value(json_array_get(arr, i));
		if (!s || !*s || strpbrk(s, " \t\r\n")) {
			errs_add(e, "%s[%zu]: must be a non-empty string without spaces", where, i);
			continue;
		}
		(*out)[(*n)++] = strdup(s);
	}
}

/* ---- telemetry (issue 23): "telemetry.otlp" and OTEL_* ------------------ */

/* What the file says wins over the environment, key by key; the
 * environment fills what the file leaves out (docs/telemetry.md). */
static const struct key_spec telemetry_keys[] = {{"otlp", JSON_OBJECT}, {NULL, 0}};
static const struct key_spec otlp_keys[] = {
	{"enabled", JSON_TRUE},        {"endpoint", JSON_STRING},     {"headers", JSON_OBJECT},
	{"timeout_ms", JSON_INTEGER},  {"protocol", JSON_STRING},     {"service_name", JSON_STRING},
	{"sampler", JSON_STRING},      {"sampler_arg", JSON_REAL},    {"queue_spans", JSON_INTEGER},
	{"batch_spans", JSON_INTEGER}, {"batch_delay_ms", JSON_INTEGER}, {NULL, 0},
};

/* The file's choices, kept until telemetry_finish merges the environment. */
static void load_telemetry(struct errs *e, json_t *sec, struct px_config *cfg)
{
	check_keys(e, "$.telemetry", sec, telemetry_keys);
	json_t *o = json_object_get(sec, "otlp");
	if (!json_is_object(o))
		return;
	check_keys(e, "$.telemetry.otlp", o, otlp_keys);
	json_decref(cfg->telemetry.resource);
	/* the section itself, read again by telemetry_finish */
	cfg->telemetry.resource = json_incref(o);
	struct px_telemetry *t = &cfg->telemetry;
	get_uint(e, "$.telemetry.otlp", o, "timeout_ms", MAX_MS, &t->otlp.request_timeout_ms,
	         sizeof(unsigned));
	get_uint(e, "$.telemetry.otlp", o, "queue_spans", 1u << 20, &t->queue_spans, sizeof(unsigned));
	get_uint(e, "$.telemetry.otlp", o, "batch_spans", 1u << 16, &t->batch_spans, sizeof(unsigned));
	get_uint(e, "$.telemetry.otlp", o, "batch_delay_ms", MAX_MS, &t->batch_delay_ms,
	         sizeof(unsigned));
	json_t *h = json_object_get(o, "headers");
	if (json_is_object(h))
		load_headers(e, "$.telemetry.otlp", h, &t->otlp);
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* %XX decoded in place (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES
 * are W3C Baggage-style lists, percent-encoded). */
static void percent_decode(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2])) {
			char hx[3] = {r[1], r[2], 0};
			*w++ = (char)strtol(hx, NULL, 16);
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

typedef void (*kv_fn)(struct errs *e, const char *var, char *k, char *v, void *arg);

/* "k1=v1,k2=v2": each pair, trimmed and decoded, to fn. */
static void env_list(struct errs *e, const char *var, kv_fn fn, void *arg)
{
	const char *v = env_nonempty(var);
	char *copy = v ? strdup(v) : NULL, *save = NULL;
	for (char *p = copy ? strtok_r(copy, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(p, '=');
		if (!eq) {
			errs_add(e, "%s: \"%s\" is not key=value", var, trim(p));
			continue;
		}
		*eq = '\0';
		char *k = trim(p), *val = trim(eq + 1);
		percent_decode(k);
		percent_decode(val);
		fn(e, var, k, val, arg);
	}
	if (copy)
		explicit_bzero(copy, strlen(copy)); /* header values are credentials */
	free(copy);
}

static void env_header(struct errs *e, const char *var, char *k, char *v, void *arg)
{
	struct px_upstream_conf *u = arg;
	const char *c;
	for (c = k; *c && token_char((unsigned char)*c); c++)
		;
	if (!*k || *c || !header_value_ok(v)) {
		errs_add(e, "%s: a header name or value is not valid", var); /* never the value */
		return;
	}
	if (configured_header_name(u, k))
		return; /* the file's, or the more specific variable's, wins */
	struct px_header *nh = realloc(u->headers, (u->nheaders + 1) * sizeof(*nh));
	if (!nh)
		return;
	u->headers = nh;
	nh[u->nheaders].name = strdup(k);
	nh[u->nheaders].value = strdup(v);
	u->nheaders++;
}

static void env_resource(struct errs *e, const char *var, char *k, char *v, void *arg)
{
	(void)e;
	(void)var;
	json_t *res = arg;
	json_array_append_new(res, json_pack("{s:s,s:{s:s}}", "key", k, "value", "stringValue", v));
}

/* Sampler name (OTEL_TRACES_SAMPLER's words) and arg into t. */
static void set_sampler(struct errs *e, const char *where, const char *name, const char *arg,
                        struct px_telemetry *t)
{
	double ratio = 1.0;
	if (arg) {
		char *end;
		ratio = strtod(arg, &end);
		if (end == arg || *end || ratio < 0 || ratio > 1) {
			errs_add(e, "%s: the sampler argument must be a number from 0 to 1", where);
			ratio = 1.0;
		}
	}
	static const struct {
		const char *name;
		enum px_sampler s;
		double fixed; /* < 0: the argument */
	} words[] = {
		{"always_on", PX_SAMPLER_RATIO, 1},
		{"always_off", PX_SAMPLER_RATIO, 0},
		{"traceidratio", PX_SAMPLER_RATIO, -1},
		{"parentbased_always_on", PX_SAMPLER_PARENT_RATIO, 1},
		{"parentbased_always_off", PX_SAMPLER_PARENT_RATIO, 0},
		{"parentbased_traceidratio", PX_SAMPLER_PARENT_RATIO, -1},
	};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (strcmp(name, words[i].name) == 0) {
			t->sampler = words[i].s;
			t->ratio = words[i].fixed < 0 ? ratio : words[i].fixed;
			return;
		}
	}
	errs_add(e, "%s: unknown sampler \"%s\" (always_on, always_off, traceidratio, "
	            "parentbased_always_on, parentbased_always_off, parentbased_traceidratio)",
	         where, name);
}

static void check_protocol(struct errs *e, const char *where, const char *p)
{
	if (p && strcmp(p, "http/json") != 0)
		errs_add(e, "%s=%s: mcpwarden exports OTLP over http/json only (set http/json, or "
		            "put an OpenTelemetry Collector in between)", where, p);
}

/* The endpoint URL: the file's as is, else the traces variable as is,
 * else the generic one with /v1/traces appended (OTLP exporter spec). */
static char *endpoint_url(const char *file_ep)
{
	const char *v;
	if (file_ep)
		return strdup(file_ep);
	if ((v = env_nonempty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")))
		return strdup(v);
	if ((v = env_nonempty("OTEL_EXPORTER_OTLP_ENDPOINT"))) {
		size_t n = strlen(v);
		char *u = malloc(n + 12);
		if (u)
			snprintf(u, n + 12, "%.*s/v1/traces", (int)(n && v[n - 1] == '/' ? n - 1 : n), v);
		return u;
	}
	return NULL;
}

static void telemetry_finish(struct errs *e, struct px_config *cfg)
{
	struct px_telemetry *t = &cfg->telemetry;
	json_t *o = t->resource; /* the file's section, or NULL */
	t->resource = json_array();
	const char *file_ep = json_string_value(json_object_get(o, "endpoint"));
	const char *dis = env_nonempty("OTEL_SDK_DISABLED");
	char *url = endpoint_url(file_ep);
	const char *why;
	/* On with a section in the file or an endpoint in the environment;
	 * a section without an endpoint sends to the OTLP default. */
	t->enabled = (o || url) && !(dis && strcasecmp(dis, "true") == 0) &&
	             !json_is_false(json_object_get(o, "enabled"));
	if (!t->enabled || !t->resource)
		goto done;
	check_protocol(e, "$.telemetry.otlp.protocol",
	               json_string_value(json_object_get(o, "protocol")));
	check_protocol(e, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	               env_nonempty("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"));
	if (!env_nonempty("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
		check_protocol(e, "OTEL_EXPORTER_OTLP_PROTOCOL", env_nonempty("OTEL_EXPORTER_OTLP_PROTOCOL"));
	t->otlp.name = strdup("otlp");
	t->otlp.path = strdup("/v1/traces");
	if (config_parse_url(&t->otlp, url ? url : "http://localhost:4318/v1/traces", &why) < 0)
		errs_add(e, "telemetry endpoint: %s", why);
	env_list(e, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", env_header, &t->otlp);
	env_list(e, "OTEL_EXPORTER_OTLP_HEADERS", env_header, &t->otlp);
	const char *to = env_nonempty("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT");
	to = to ? to : env_nonempty("OTEL_EXPORTER_OTLP_TIMEOUT");
	if (!t->otlp.request_timeout_ms)
		t->otlp.request_timeout_ms = to ? (unsigned)strtoul(to, NULL, 10) : 10000;
	t->otlp.connect_timeout_ms = t->otlp.request_timeout_ms;
	const char *sname = json_string_value(json_object_get(o, "sampler"));
	const char *sv = env_nonempty("OTEL_TRACES_SAMPLER");
	json_t *sarg = json_object_get(o, "sampler_arg");
	char argbuf[32];
	if (sarg)
		snprintf(argbuf, sizeof(argbuf), "%.17g", json_number_value(sarg));
	set_sampler(e, sname ? "$.telemetry.otlp.sampler" : "OTEL_TRACES_SAMPLER",
	            sname ? sname : sv ? sv : "parentbased_always_on",
	            sarg ? argbuf : env_nonempty("OTEL_TRACES_SAMPLER_ARG"), t);
	env_list(e, "OTEL_RESOURCE_ATTRIBUTES", env_resource, t->resource);
	const char *svc = json_string_value(json_object_get(o, "service_name"));
	svc = svc ? svc : env_nonempty("OTEL_SERVICE_NAME");
	t->service_name = strdup(svc ? svc : "mcpwarden");
	/* The batch span processor's variables, then its defaults. */
	const char *bsp;
	if (!t->queue_spans)
		t->queue_spans = (bsp = env_nonempty("OTEL_BSP_MAX_QUEUE_SIZE")) ? (unsigned)strtoul(bsp, NULL, 10) : 2048;
	if (!t->batch_spans)
		t->batch_spans = (bsp = env_nonempty("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")) ? (unsigned)strtoul(bsp, NULL, 10) : 512;
	if (!t->batch_delay_ms && (bsp = env_nonempty("OTEL_BSP_SCHEDULE_DELAY")))
		t->batch_delay_ms = (unsigned)strtoul(bsp, NULL, 10);
	if (!t->queue_spans)
		t->queue_spans = 1;
	if (!t->batch_spans)
		t->batch_spans = 1;
	if (t->batch_spans > t->queue_spans)
		t->batch_spans = t->queue_spans;
	if (!t->batch_delay_ms)
		t->batch_delay_ms = 5000;
done:
	free(url);
	json_decref(o);
}

static void load_json(struct errs *e, json_t *root, struct px_config *cfg)
{
	if (!json_is_object(root)) {
		errs_add(e, "$: the config must be a JSON object");
		return;
	}
	check_keys(e, "$", root, top_keys);
	const char *listen = json_string_value(json_object_get(root, "listen"));
	if (listen && parse_listen(cfg, listen) < 0)
		errs_add(e, "$.listen: must be HOST:PORT");
	json_t *t = json_object_get(root, "timeouts");
	if (json_is_object(t))
		load_timeouts(e, "$.timeouts", t, cfg);
	json_t *l = json_object_get(root, "limits");
	if (json_is_object(l))
		load_limits(e, l, cfg);
	json_t *lg = json_object_get(root, "log");
	if (json_is_object(lg))
		load_log(e, lg, cfg);
	get_uint(e, "$", root, "workers", PX_MAX_WORKERS, &cfg->workers, sizeof(unsigned));
	get_uint(e, "$", root, "yield_after_us", LIMIT_YIELD_AFTER_US_MAX, &cfg->yield_after_us,
	         sizeof(unsigned));
	json_t *sec;
	if (json_is_object(sec = json_object_get(root, "tls"))) {
		check_keys(e, "$.tls", sec, listen_tls_keys);
		const char *cert = json_string_value(json_object_get(sec, "cert_file"));
		const char *key = json_string_value(json_object_get(sec, "key_file"));
		if (!cert || !key)
			errs_add(e, "$.tls: cert_file and key_file are both required");
		cfg->tls_cert_file = cert ? strdup(cert) : NULL;
		cfg->tls_key_file = key ? strdup(key) : NULL;
	}
	load_replica_id(e, root, cfg);  /* replicas */
	if (json_is_array(sec = json_object_get(root, "allowed_hosts")))
		load_strings(e, "$.allowed_hosts", sec, &cfg->hosts, &cfg->nhosts);
	if (json_is_array(sec = json_object_get(root, "allowed_origins")))
		load_strings(e, "$.allowed_origins", sec, &cfg->origins, &cfg->norigins);
	if (json_is_object(sec = json_object_get(root, "policy")))
		cfg->policy = json_incref(sec);
	if (json_is_array(sec = json_object_get(root, "clients"))) {
		cfg->clients = json_incref(sec);
		load_clients(e, sec, cfg);
	}
	if (json_is_object(sec = json_object_get(root, "admin")))
		cfg->admin = json_incref(sec);
	if (json_is_object(sec = json_object_get(root, "telemetry")))
		load_telemetry(e, sec, cfg); /* telemetry (issue 23) */
	json_t *ups = json_object_get(root, "upstreams");
	if (json_is_array(ups)) {
		size_t n = json_array_size(ups);
		if (n == 0)
			errs_add(e, "$.upstreams: must list at least one upstream");
		cfg->ups = calloc(n ? n : 1, sizeof(*cfg->ups));
		if (!cfg->ups) {
			errs_add(e, "out of memory");
			return;
		}
		cfg->nups = n;
		for (size_t i = 0; i < n; i++)
			load_upstream(e, i, json_array_get(ups, i), cfg);
	}
}

static int load_file_into(struct errs *e, const char *path, struct px_config *cfg)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (jerr.line > 0)
			errs_add(e, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
		else
			errs_add(e, "%s: %s", path, jerr.text);
		return -1;
	}
	int before = e->count;
	load_json(e, root, cfg);
	json_decref(root);
	free(cfg->config_file);
	cfg->config_file = strdup(path);
	return e->count > before ? -1 : 0;
}

struct px_config *config_load_file(const char *path, char *errbuf, size_t errlen)
{
	struct errs e = {errbuf, errlen, 0, 0};
	struct px_config *cfg = config_defaults();

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!cfg) {
		errs_add(&e, "out of memory");
		return NULL;
	}
	if (load_file_into(&e, path, cfg) < 0 || cfg->nups == 0 || legacy_paths(&e, cfg) < 0 ||
	    (telemetry_finish(&e, cfg), e.count > 0)) { /* telemetry */
		if (e.count == 0)
			errs_add(&e, "%s: $.upstreams: required", path);
		config_free(cfg);
		return NULL;
	}
	return cfg;
}

/* ---- argv ---------------------------------------------------------------- */

struct cli {
	const char *file, *listen, *upstream, *path, *log_level, *log_format;
	const char *connect_ms, *request_ms, *idle_ms, *keepalive_ms, *max_body;
	const char *policy, *admin, *contract, *baseline;
	const char *tls_cert, *tls_key;
	const char *upstream_transport, *workers;
	int spec_only;
};

static const char *flag_value(int argc, char **argv, int *i, const char *arg,
                              const char *name, struct errs *e)
{
	size_t n = strlen(name);
	if (strncmp(arg, name, n) == 0 && arg[n] == '=')
		return arg + n + 1;
	if (*i + 1 >= argc) {
		errs_add(e, "%s: needs a value", name);
		return NULL;
	}
	return argv[++*i];
}

static int is_flag(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static void parse_argv(int argc, char **argv, struct cli *cli, enum config_action *action,
                       struct errs *e)
{
	static const struct {
		const char *name;
		size_t off;
	} valued[] = {
		{"--config", offsetof(struct cli, file)},
		{"--listen", offsetof(struct cli, listen)},
		{"--upstream", offsetof(struct cli, upstream)},
		{"--path", offsetof(struct cli, path)},
		{"--log-level", offsetof(struct cli, log_level)},
		{"--log-format", offsetof(struct cli, log_format)},
		{"--connect-timeout", offsetof(struct cli, connect_ms)},
		{"--request-timeout", offsetof(struct cli, request_ms)},
		{"--idle-timeout", offsetof(struct cli, idle_ms)},
		{"--sse-keepalive", offsetof(struct cli, keepalive_ms)},
		{"--max-body", offsetof(struct cli, max_body)},
		{"--policy", offsetof(struct cli, policy)},
		{"--admin", offsetof(struct cli, admin)},
		{"--contract", offsetof(struct cli, contract)},
		{"--baseline", offsetof(struct cli, baseline)},
		{"--tls-cert", offsetof(struct cli, tls_cert)},
		{"--tls-key", offsetof(struct cli, tls_key)},
		{"--upstream-transport", offsetof(struct cli, upstream_transport)},
		{"--workers", offsetof(struct cli, workers)},
	};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			*action = CONFIG_HELP;
			return;
		}
		if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			*action = CONFIG_VERSION;
			return;
		}
		if (strcmp(a, "--check-config") == 0) {
			*action = CONFIG_CHECK_ONLY;
			continue;
		}
		if (strcmp(a, "--spec-only") == 0) {
			cli->spec_only = 1;
			continue;
		}
		if (strcmp(a, "-c") == 0)
			a = "--config";
		size_t k;
		for (k = 0; k < sizeof(valued) / sizeof(valued[0]); k++)
			if (is_flag(a, valued[k].name))
				break;
		if (k == sizeof(valued) / sizeof(valued[0])) {
			errs_add(e, "%s: unknown option (see --help)", argv[i]);
			continue;
		}
		const char *v = flag_value(argc, argv, &i, argv[i], valued[k].name, e);
		if (v)
			*(const char **)((char *)cli + valued[k].off) = v;
	}
}

static void cli_uint(struct errs *e, const char *flag, const char *v,
                     unsigned long long max, void *out, size_t size)
{
	unsigned long long n;
	if (!v)
		return;
	if (parse_uint(v, max, &n) < 0) {
		errs_add(e, "%s: must be a whole number from 0 to %llu", flag, max);
		return;
	}
	if (size == sizeof(unsigned))
		*(unsigned *)out = (unsigned)n;
	else
		*(size_t *)out = (size_t)n;
}

static json_t *load_json_file(struct errs *e, const char *flag, const char *path)
{
	json_error_t jerr;
	json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		errs_add(e, "%s %s:%d:%d: %s", flag, path, jerr.line, jerr.column, jerr.text);
	return j;
}

/* Flags that fill module sections: --policy FILE, --admin ADDR|off, and
 * for the one upstream --contract MODE, --baseline FILE, --spec-only. */
static void apply_cli_modules(struct errs *e, const struct cli *cli, struct px_config *cfg)
{
	if (cli->policy) {
		json_t *p = load_json_file(e, "--policy", cli->policy);
		if (p && !json_is_object(p)) {
			errs_add(e, "--policy %s: must hold a JSON object", cli->policy);
			json_decref(p);
			p = NULL;
		}
		if (p) {
			json_decref(cfg->policy);
			cfg->policy = p;
		}
	}
	if (cli->admin) {
		if (!cfg->admin)
			cfg->admin = json_object();
		json_object_set_new(cfg->admin, "listen", json_string(cli->admin));
	}
	if (cli->contract || cli->baseline || cli->spec_only) {
		if (cfg->nups != 1) {
			errs_add(e, "--contract/--baseline/--spec-only: need exactly one upstream "
			           "(use \"contract\" per upstream in the config file)");
			return;
		}
		struct px_upstream_conf *u = &cfg->ups[0];
		if (!u->contract)
			u->contract = json_object();
		if (cli->contract)
			json_object_set_new(u->contract, "mode", json_string(cli->contract));
		if (cli->baseline)
			json_object_set_new(u->contract, "baseline", json_string(cli->baseline));
		if (cli->spec_only)
			json_object_set_new(u->contract, "spec_only", json_true());
	}
}

static void apply_cli(struct errs *e, const struct cli *cli, struct px_config *cfg)
{
	const char *why;

	if (cli->listen && parse_listen(cfg, cli->listen) < 0)
		errs_add(e, "--listen: must be HOST:PORT");
	cli_uint(e, "--connect-timeout", cli->connect_ms, MAX_MS, &cfg->timeouts.connect_ms, sizeof(unsigned));
	cli_uint(e, "--request-timeout", cli->request_ms, MAX_MS, &cfg->timeouts.request_ms, sizeof(unsigned));
	cli_uint(e, "--idle-timeout", cli->idle_ms, MAX_MS, &cfg->timeouts.client_idle_ms, sizeof(unsigned));
	cli_uint(e, "--sse-keepalive", cli->keepalive_ms, MAX_MS, &cfg->timeouts.sse_keepalive_ms, sizeof(unsigned));
	cli_uint(e, "--max-body", cli->max_body, 1ull << 30, &cfg->limits.max_body_bytes, sizeof(size_t));
	cli_uint(e, "--workers", cli->workers, PX_MAX_WORKERS, &cfg->workers, sizeof(unsigned));
	if (cli->log_level && log_level_parse(cli->log_level, &cfg->log_level) < 0)
		errs_add(e, "--log-level: must be debug, info, warn or error");
	if (cli->log_format) {
		if (strcmp(cli->log_format, "json") == 0)
			cfg->log_json = 1;
		else if (strcmp(cli->log_format, "text") == 0)
			cfg->log_json = 0;
		else
			errs_add(e, "--log-format: must be text or json");
	}
	if (cli->upstream) {
		if (cfg->nups) {
			errs_add(e, "--upstream: the config file already defines upstreams");
			return;
		}
		cfg->ups = calloc(1, sizeof(*cfg->ups));
		if (!cfg->ups) {
			errs_add(e, "out of memory");
			return;
		}
		cfg->nups = 1;
		struct px_upstream_conf *u = &cfg->ups[0];
		u->name = strdup("default");
		validation_defaults(u);
		u->connect_timeout_ms = cfg->timeouts.connect_ms;
		u->request_timeout_ms = cfg->timeouts.request_ms;
		u->path = strdup(cli->path ? cli->path : "/mcp");
		if (!path_ok(u->path))
			errs_add(e, "--path: must start with / and hold no spaces, '?' or '#'");
		if (config_parse_url(u, cli->upstream, &why) < 0)
			errs_add(e, "--upstream: %s", why);
	} else if (cli->path) {
		errs_add(e, "--path: goes with --upstream");
	}
	if (cli->tls_cert || cli->tls_key) {
		if (!cli->tls_cert || !cli->tls_key) {
			errs_add(e, "--tls-cert and --tls-key go together");
		} else {
			free(cfg->tls_cert_file);
			free(cfg->tls_key_file);
			cfg->tls_cert_file = strdup(cli->tls_cert);
			cfg->tls_key_file = strdup(cli->tls_key);
		}
	}
	if (cli->upstream_transport) {
		enum px_transport t;
		if (config_transport_parse(cli->upstream_transport, &t) < 0)
			errs_add(e, "--upstream-transport: must be auto, streamable_http or sse");
		else
			for (size_t i = 0; i < cfg->nups; i++)
				cfg->ups[i].transport = t;
	}
	apply_cli_modules(e, cli, cfg);
	/* A flag is the operator's last word: it overrides every upstream's
	 * own timeout (an explicit 0 in the file, which disables, included). */
	for (size_t i = 0; i < cfg->nups; i++) {
		if (cli->connect_ms)
			cfg->ups[i].connect_timeout_ms = cfg->timeouts.connect_ms;
		if (cli->request_ms)
			cfg->ups[i].request_timeout_ms = cfg->timeouts.request_ms;
	}
}

/* By address, not spelling: LOCALHOST, [0::1] and ::ffff:127.0.0.1 are
 * loopback too, and rebinding protection must not turn off for them. */
static int is_loopback_host(const char *h)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (strcasecmp(h, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, h, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, h, &a6) == 1) {
		if (IN6_IS_ADDR_LOOPBACK(&a6))
			return 1;
		return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
	}
	return 0;
}

struct px_config *config_from_argv(int argc, char **argv, enum config_action *action,
                                   char *errbuf, size_t errlen)
{
	struct errs e = {errbuf, errlen, 0, 0};
	struct cli cli = {0};
	struct px_config *cfg;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	*action = CONFIG_RUN;
	parse_argv(argc, argv, &cli, action, &e);
	if (*action == CONFIG_HELP || *action == CONFIG_VERSION)
		return config_defaults();
	cfg = config_defaults();
	if (!cfg) {
		errs_add(&e, "out of memory");
		return NULL;
	}
	if (cli.file)
		load_file_into(&e, cli.file, cfg);
	if (e.count == 0)
		apply_cli(&e, &cli, cfg);
	if (e.count == 0 && cfg->nups == 0)
		errs_add(&e, "no upstream: give --upstream URL or a config file with \"upstreams\"");
	if (e.count == 0)
		legacy_paths(&e, cfg);
	if (e.count == 0)
		telemetry_finish(&e, cfg); /* telemetry (issue 23) */
	if (e.count) {
		config_free(cfg);
		return NULL;
	}
	cfg->listen_loopback = is_loopback_host(cfg->listen_host);
	return cfg;
}

static int str_differs(const char *a, const char *b)
{
	return (!a != !b) || (a && strcmp(a, b) != 0);
}

static int json_differs(const json_t *a, const json_t *b)
{
	return (!a != !b) || (a && !json_equal((json_t *)(uintptr_t)a, (json_t *)(uintptr_t)b));
}

const char *config_restart_needed(const struct px_config *running, const struct px_config *next)
{
	if (str_differs(running->listen_host, next->listen_host) ||
	    str_differs(running->listen_port, next->listen_port))
		return "listen";
	if (json_differs(running->admin, next->admin))
		return "admin";
	if (running->workers != next->workers)
		return "workers";
	if (running->yield_after_us != next->yield_after_us)
		return "yield_after_us";
	if (strcmp(running->replica_id, next->replica_id) != 0)  /* replicas */
		return "replica_id";
	if (running->nups != next->nups)
		return "the list of upstreams";
	for (size_t i = 0; i < next->nups; i++) {
		const struct px_upstream_conf *a = &running->ups[i], *b = &next->ups[i];
		/* Identity, addressing and TLS live in objects built at start-up
		 * (resolved address, TLS context, sessions, contract state). */
		if (str_differs(a->name, b->name) || str_differs(a->path, b->path) ||
		    str_differs(a->host, b->host) || str_differs(a->port, b->port) ||
		    str_differs(a->target, b->target) || a->tls != b->tls ||
		    a->transport != b->transport || str_differs(a->sse_path, b->sse_path) ||
		    str_differs(a->messages_path, b->messages_path) ||
		    str_differs(a->tls_ca_file, b->tls_ca_file) ||
		    str_differs(a->tls_cert_file, b->tls_cert_file) ||
		    a->tls_insecure_skip_verify != b->tls_insecure_skip_verify)
			return "an upstream's name, paths, URL, transport or TLS settings";
		/* Live baselines (issue 21): "contract" sections are re-read by
		 * SIGHUP (hook_contract_stage/commit), no restart. */
		/* The live contract's modes are read once, when its tables
		 * per upstream are built (proxy/hooks/hook_validate.c). */
		if (a->validation.arguments != b->validation.arguments ||
		    a->validation.results != b->validation.results ||
		    a->validation.formats != b->validation.formats)
			return "an upstream's validation settings";
		/* capture: its files and writer are made at start-up. */
		if (str_differs(a->capture.path, b->capture.path) ||
		    a->capture.max_bytes != b->capture.max_bytes || a->capture.keep != b->capture.keep ||
		    a->capture.unredacted != b->capture.unredacted)
			return "an upstream's capture settings";
	}
	return NULL;
}

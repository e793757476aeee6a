/* admin_conf: see admin_conf.h. */
#include "admin/admin_conf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "admin/calllog.h"
#include "admin/metrics.h"
#include "admin/ring.h"
#include "proxy/base/errs.h"
#include "proxy/config.h"
#include "proxy/hooks/redact.h"
#include "proxy/net/tls.h"

static const char *const admin_keys[] = {
	"listen", "token", "token_file", "ring_size", "log_calls", "redact_keys",
	"redact_values", "max_streams", "max_labels", "tls",
	"ready_requires_contract", /* live baselines (issue 21) */
	"probe_interval_ms", "probe_timeout_ms", "probe_parallel", /* readiness probes (issue 23) */
	NULL,
};

/* "HOST:PORT", "[V6]:PORT" or ":PORT" (every address). Returns 0 or -1. */
static int split_listen(const char *s, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon = strrchr(s, ':');
	if (!colon || !colon[1] || strlen(colon + 1) >= plen)
		return -1;
	for (const char *p = colon + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	long pn = strtol(colon + 1, NULL, 10);
	if (pn < 0 || pn > 65535)
		return -1;
	const char *h = s;
	size_t n = (size_t)(colon - s);
	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	} else if (memchr(h, ':', n)) {
		return -1; /* a bare IPv6 address needs brackets */
	}
	if (n == 0) {
		h = "0.0.0.0";
		n = 7;
	}
	if (n >= hlen)
		return -1;
	memcpy(host, h, n);
	host[n] = '\0';
	snprintf(port, plen, "%s", colon + 1);
	return 0;
}

static int addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)sa;
		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)sa;
		if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
			return 1;
		return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127;
	}
	return 0;
}

/* 1 when every address host resolves to is loopback, 0 when one is not,
 * -1 when it does not resolve. Start-up only (may block on DNS). */
static int host_is_loopback(const char *host, const char *port)
{
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
		return -1;
	int all = 1;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
		all &= addr_is_loopback(ai->ai_addr);
	freeaddrinfo(res);
	return all;
}

static void get_size(struct errs *e, const json_t *conf, const char *key, size_t min, size_t max,
                     size_t *out)
{
	const json_t *v = json_object_get(conf, key);
	if (!v)
		return;
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)min ||
	    json_integer_value(v) > (json_int_t)max) {
		errs_add(e, "$.admin.%s: must be a whole number from %zu to %zu", key, min, max);
		return;
	}
	*out = (size_t)json_integer_value(v);
}

static int token_chars_ok(const char *t)
{
	/* RFC 6750 b64token: what can follow "Bearer " on one header line. */
	for (; *t; t++)
		if (!isalnum((unsigned char)*t) && !strchr("-._~+/=", *t))
			return 0;
	return 1;
}

static void read_token_file(struct errs *e, const char *path, struct admin_conf *ac)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		errs_add(e, "$.admin.token_file: %s: %s", path, strerror(errno));
		return;
	}
	size_t n = fread(ac->tokbuf, 1, sizeof(ac->tokbuf) - 1, f);
	int more = fgetc(f) != EOF;
	fclose(f);
	if (more) {
		errs_add(e, "$.admin.token_file: %s: longer than %d bytes", path, ADMIN_TOKEN_MAX);
		return;
	}
	while (n > 0 && isspace((unsigned char)ac->tokbuf[n - 1]))
		n--;
	ac->tokbuf[n] = '\0';
	ac->token = ac->tokbuf;
}

static void check_string_list(struct errs *e, const json_t *conf, const char *key,
                              size_t min_len, const json_t **out)
{
	const json_t *a = json_object_get(conf, key);
	if (!a)
		return;
	if (!json_is_array(a)) {
		errs_add(e, "$.admin.%s: must be an array of strings", key);
		return;
	}
	if (json_array_size(a) > REDACT_MAX_PATTERNS)
		errs_add(e, "$.admin.%s: at most %d entries", key, REDACT_MAX_PATTERNS);
	for (size_t i = 0; i < json_array_size(a); i++) {
		const json_t *s = json_array_get(a, i);
		if (!json_is_string(s) || json_string_length(s) < min_len ||
		    strlen(json_string_value(s)) != json_string_length(s))
			errs_add(e, "$.admin.%s[%zu]: must be a string of at least %zu characters", key,
			        i, min_len);
	}
	*out = a;
}

/* "tls": {"cert_file", "key_file"} (the shape of the top-level "tls"), or
 * "listener" to serve the client listener's certificate. */
static void parse_tls(struct errs *e, const json_t *conf, struct admin_conf *ac)
{
	const json_t *t = json_object_get(conf, "tls");
	const char *k;
	json_t *v;

	if (!t)
		return;
	if (json_is_string(t) && strcmp(json_string_value(t), "listener") == 0) {
		ac->tls_listener = 1;
		return;
	}
	if (!json_is_object(t)) {
		errs_add(e, "$.admin.tls: must be {\"cert_file\": …, \"key_file\": …} or \"listener\"");
		return;
	}
	json_object_foreach((json_t *)(uintptr_t)t, k, v) {
		if (strcmp(k, "cert_file") != 0 && strcmp(k, "key_file") != 0)
			errs_add(e, "$.admin.tls.%s: unknown key", k);
		else if (!json_is_string(v) || json_string_length(v) == 0)
			errs_add(e, "$.admin.tls.%s: must be a file path", k);
	}
	ac->tls_cert = json_string_value(json_object_get(t, "cert_file"));
	ac->tls_key = json_string_value(json_object_get(t, "key_file"));
	if (!ac->tls_cert || !ac->tls_key)
		errs_add(e, "$.admin.tls: cert_file and key_file are both required");
}

void admin_conf_parse(struct errs *e, const json_t *conf, struct admin_conf *ac)
{
	const char *k;
	json_t *v;

	ac->listen_default = 1;
	snprintf(ac->host, sizeof(ac->host), "%s", ADMIN_DEFAULT_HOST);
	snprintf(ac->port, sizeof(ac->port), "%s", ADMIN_DEFAULT_PORT);
	ac->ring_size = RING_DEFAULT_SIZE;
	ac->max_streams = ADMIN_DEFAULT_STREAMS;
	ac->max_labels = METRICS_DEFAULT_MAX_LABELS;
	ac->probe.interval_ms = ADMIN_PROBE_DEFAULT_INTERVAL_MS; /* readiness probes (issue 23) */
	ac->probe.parallel = ADMIN_PROBE_DEFAULT_PARALLEL;
	if (!conf)
		return;
	/* json_object_foreach wants a non-const object; it is only read. */
	json_t *obj = (json_t *)(uintptr_t)conf;
	json_object_foreach(obj, k, v) {
		size_t i = 0;
		while (admin_keys[i] && strcmp(admin_keys[i], k) != 0)
			i++;
		if (!admin_keys[i])
			errs_add(e, "$.admin.%s: unknown key", k);
	}
	const json_t *listen = json_object_get(conf, "listen");
	if (listen) {
		const char *s = json_string_value(listen);
		ac->listen_default = 0;
		if (s && strcmp(s, "off") == 0)
			ac->off = 1;
		else if (!s || split_listen(s, ac->host, sizeof(ac->host), ac->port,
		                            sizeof(ac->port)) < 0)
			errs_add(e, "$.admin.listen: must be \"HOST:PORT\", \"[IPV6]:PORT\", \":PORT\" or "
			           "\"off\"");
	}
	const json_t *tok = json_object_get(conf, "token");
	const json_t *tokf = json_object_get(conf, "token_file");
	if (tok && tokf)
		errs_add(e, "$.admin.token_file: give token or token_file, not both");
	if (tok) {
		if (!json_is_string(tok) || json_string_length(tok) == 0)
			errs_add(e, "$.admin.token: must be a non-empty string");
		else
			ac->token = json_string_value(tok);
	} else if (tokf) {
		if (!json_is_string(tokf) || json_string_length(tokf) == 0)
			errs_add(e, "$.admin.token_file: must be a file path");
		else
			read_token_file(e, json_string_value(tokf), ac);
	}
	if (ac->token) {
		const char *where = tok ? "token" : "token_file";
		if (!*ac->token)
			errs_add(e, "$.admin.%s: the token is empty", where);
		else if (strlen(ac->token) > ADMIN_TOKEN_MAX || !token_chars_ok(ac->token))
			errs_add(e, "$.admin.%s: the token must be at most %d characters of A-Z a-z 0-9 "
			           "- . _ ~ + / =", where, ADMIN_TOKEN_MAX);
	}
	get_size(e, conf, "ring_size", 1, RING_MAX_SIZE, &ac->ring_size);
	get_size(e, conf, "max_streams", 1, ADMIN_MAX_STREAMS, &ac->max_streams);
	get_size(e, conf, "max_labels", 1, METRICS_MAX_LABELS, &ac->max_labels);
	const json_t *lc = json_object_get(conf, "log_calls");
	if (lc) {
		if (!json_is_string(lc) || json_string_length(lc) == 0)
			errs_add(e, "$.admin.log_calls: must be \"stdout\" or a file path");
		else
			ac->log_calls = json_string_value(lc);
	}
	check_string_list(e, conf, "redact_keys", 1, &ac->redact_keys);
	check_string_list(e, conf, "redact_values", REDACT_MIN_VALUE_LEN, &ac->redact_values);
	parse_tls(e, conf, ac);
	/* Live baselines (issue 21): /readyz also waits for the contracts. */
	const json_t *rrc = json_object_get(conf, "ready_requires_contract");
	if (rrc && !json_is_boolean(rrc))
		errs_add(e, "$.admin.ready_requires_contract: must be true or false");
	ac->ready_requires_contract = json_is_true(rrc);
	/* Readiness probes (issue 23): their background schedule. */
	get_size(e, conf, "probe_interval_ms", 100, 600000, &ac->probe.interval_ms);
	get_size(e, conf, "probe_timeout_ms", 10, 60000, &ac->probe.timeout_ms);
	get_size(e, conf, "probe_parallel", 1, ADMIN_PROBE_MAX_PARALLEL, &ac->probe.parallel);
	if (!ac->off && !ac->token && e->count == 0) {
		int lo = host_is_loopback(ac->host, ac->port);
		if (lo < 0)
			errs_add(e, "$.admin.listen: %s does not resolve", ac->host);
		else if (!lo)
			errs_add(e, "$.admin.listen: %s is not a loopback address: set admin.token to "
			           "expose the admin endpoint", ac->host);
	}
}

int admin_conf_check(const struct px_config *cfg, char *err, size_t errlen)
{
	struct errs e = {.buf = err, .len = errlen};
	struct admin_conf ac = {0};
	char why[512];

	if (err && errlen)
		err[0] = '\0';
	admin_conf_parse(&e, cfg->admin, &ac);
	if (!e.count && !(ac.off && !ac.log_calls)) {
		/* build_redact's patterns, compiled and dropped. */
		struct redact *rd = redact_new();
		if (!rd)
			errs_add(&e, "admin: out of memory");
		for (size_t i = 0; rd && ac.redact_keys && i < json_array_size(ac.redact_keys); i++)
			if (redact_add_key(rd, json_string_value(json_array_get(ac.redact_keys, i))) < 0)
				errs_add(&e, "$.admin.redact_keys[%zu]: cannot be used", i);
		redact_free(rd);
		if (ac.log_calls && strcmp(ac.log_calls, "stdout") != 0 && calllog_appendable(ac.log_calls) < 0)
			errs_add(&e, "$.admin.log_calls: %s: %s", ac.log_calls, strerror(errno));
	}
	if (!e.count && !ac.off) {
		/* setup_tls's conditions, with the client listener's TLS as the
		 * configuration gives it. */
		if (ac.tls_listener && !cfg->tls_cert_file)
			errs_add(&e, "$.admin.tls: \"listener\" needs TLS on the client listener (tls, or "
			             "--tls-cert and --tls-key)");
		if (ac.tls_cert) {
			struct ssl_ctx_st *t = tls_server_ctx_new(ac.tls_cert, ac.tls_key, why, sizeof(why));
			if (!t)
				errs_add(&e, "$.admin.tls: %s", why);
			tls_ctx_free(t);
		}
	}
	explicit_bzero(ac.tokbuf, sizeof(ac.tokbuf));
	return e.count ? -1 : 0;
}

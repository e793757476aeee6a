/* admin_conf: the "admin" section of the configuration, read and checked
 * (conf/README.md "admin"): what admin_setup builds from, and what
 * admin_check (--check-config) refuses without building anything.
 *
 * Not here: building the endpoint (admin.c), the call log file
 * (calllog.c), the credentials masked in records (secrets.c).
 */
#ifndef MCPWARDEN_ADMIN_CONF_H
#define MCPWARDEN_ADMIN_CONF_H

#include <stddef.h>
#include <jansson.h>

#define ADMIN_DEFAULT_HOST    "127.0.0.1"
#define ADMIN_DEFAULT_PORT    "9090"
#define ADMIN_DEFAULT_STREAMS 32
#define ADMIN_MAX_STREAMS     1024
#define ADMIN_TOKEN_MAX       4096

/* Readiness probes (issue 23): the background schedule of /readyz's
 * upstream probes (conf/README.md "admin"). */
#define ADMIN_PROBE_DEFAULT_INTERVAL_MS 1000u
#define ADMIN_PROBE_DEFAULT_PARALLEL    16u
#define ADMIN_PROBE_MAX_PARALLEL        1024u
struct admin_probe_conf {
	size_t interval_ms;  /* a round starts this long after the last started */
	size_t timeout_ms;   /* 0: each upstream's connect timeout, capped */
	size_t parallel;     /* connects in flight at most */
};

struct errs;

struct admin_conf {
	int off, listen_default;
	char host[256], port[16];
	const char *token;            /* borrowed from the config, or from tokbuf */
	char tokbuf[ADMIN_TOKEN_MAX + 1];  /* explicit_bzero it when done */
	size_t ring_size, max_streams, max_labels;
	const char *log_calls;
	const json_t *redact_keys, *redact_values;
	const char *tls_cert, *tls_key;  /* borrowed from the config, or NULL */
	int tls_listener;             /* "tls": "listener" */
	int ready_requires_contract;  /* live baselines (issue 21): /readyz gate */
	struct admin_probe_conf probe;  /* readiness probes (issue 23) */
};

/* Fills ac (zeroed by the caller) from conf ($.admin, borrowed: ac points
 * into it; NULL: every default), adding each error to e ("$.admin.<key>:
 * …"). Reads the token file; resolves the listen host (start-up only: it
 * may block on DNS) to refuse a non-loopback address without a token. */
void admin_conf_parse(struct errs *e, const json_t *conf, struct admin_conf *ac);

/* admin_check (admin.h): the section's parse plus what building would
 * find (the redaction patterns, the certificate pair, the call log's
 * file), with nothing kept. */
struct px_config;
int admin_conf_check(const struct px_config *cfg, char *err, size_t errlen);

#endif

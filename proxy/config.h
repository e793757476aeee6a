/* config: command line and JSON config file -> an immutable px_config.
 *
 * Every key is documented in conf/README.md. Unknown keys are errors, each
 * reported with its location ("$.upstreams[0].urll"). Upstream URLs are kept
 * twice: the full form (used on the wire only) and a redacted form without
 * user, password or query, the only one that may reach a log line or an
 * error body.
 */
#ifndef MCPWARDEN_CONFIG_H
#define MCPWARDEN_CONFIG_H

#include <stddef.h>
#include <sys/socket.h>

#include <jansson.h>

#include "proxy/base/log.h"

/* A header the proxy adds to every request to an upstream (its own
 * credentials, say). The value may come from the environment and is a
 * secret: it is only ever written to the upstream's socket. */
struct px_header {
	char *name;          /* owned */
	char *value;         /* owned */
};

/* A client token: requests presenting it are from `name`. */
struct px_client {
	char *name;          /* owned */
	char *token;         /* owned, secret */
};

/* How mcpwarden speaks to an upstream: upstreams[].transport,
 * --upstream-transport (proxy/mcp/upstream_sse.h, docs/transports.md). */
enum px_transport {
	PX_TRANSPORT_AUTO = 0,   /* "auto": probe Streamable HTTP, fall back to SSE */
	PX_TRANSPORT_STREAMABLE, /* "streamable_http" (2025-03-26 and later) */
	PX_TRANSPORT_SSE,        /* "sse": legacy HTTP+SSE (2024-11-05) */
};

/* "auto", "streamable_http", "sse". */
const char *config_transport_str(enum px_transport t);

struct px_upstream_conf {
	char *name;          /* owned */
	char *path;          /* owned: client-side path, e.g. "/staging/mcp" */
	char *url_safe;      /* owned: scheme://host:port/path, loggable */
	char *host;          /* owned */
	char *port;          /* owned: decimal */
	char *target;        /* owned: upstream request-target (path + query) */
	char *host_header;   /* owned: "host:port" as sent in Host */
	char *basic_auth;    /* owned: "Basic ..." from URL userinfo, or NULL */
	int tls;             /* https:// */
	/* "tls": verification of an https upstream (owned strings or NULL) */
	char *tls_ca_file, *tls_cert_file, *tls_key_file;
	int tls_insecure_skip_verify;
	unsigned connect_timeout_ms;
	unsigned request_timeout_ms;
	/* owned reference: this upstream's "contract" section, parsed by the
	 * contract hook (NULL when absent) */
	json_t *contract;
	/* "validation": the live contract's modes (proxy/hooks/hook_validate.h,
	 * whose enum validate_mode the two modes hold: 0 off, 1 report, 2 fail;
	 * an int here, as this header includes nothing above base/). Default
	 * report, report, formats false. */
	struct {
		int arguments, results;
		int formats;  /* "format" asserted for the common formats */
	} validation;
	struct px_header *headers;  /* owned array: "headers" */
	size_t nheaders;
	enum px_transport transport;  /* "transport" */
	/* owned: client-side paths of the legacy HTTP+SSE face ("sse_path",
	 * "messages_path"; derived from `path` by default), NULL when off */
	char *sse_path, *messages_path;
	/* capture: "capture" (proxy/hooks/hook_capture.h); path NULL: off.
	 * Defaults max_bytes 64 MiB, keep 2, unredacted false. */
	struct {
		char *path;          /* owned */
		size_t max_bytes;
		unsigned keep;
		int unredacted;
	} capture;
};

/* telemetry (issue 23): "telemetry": {"otlp": {...}} and the OTEL_*
 * environment variables folded in (docs/telemetry.md says which wins).
 * enabled 0: no span is made, no id is drawn. */
enum px_sampler {
	PX_SAMPLER_PARENT_RATIO = 0, /* parentbased_traceidratio (ratio 1: parentbased_always_on) */
	PX_SAMPLER_RATIO,            /* traceidratio, always_on (1), always_off (0) */
};
struct px_telemetry {
	int enabled;
	struct px_upstream_conf otlp;  /* the endpoint as an upstream: url, headers, timeout */
	char *service_name;            /* owned */
	json_t *resource;              /* owned: array of OTLP KeyValue (OTEL_RESOURCE_ATTRIBUTES) */
	enum px_sampler sampler;
	double ratio;                  /* 0..1: new roots sampled (and every trace for RATIO) */
	unsigned queue_spans;          /* per worker; past it spans are dropped */
	unsigned batch_spans;          /* per POST */
	unsigned batch_delay_ms;       /* a partial batch waits at most this */
};
/* replicas: longest "replica_id" ([A-Za-z0-9_], so '-' ends it in an id). */
#define PX_REPLICA_ID_MAX 16

/* Upper bound of "workers": more loops than that only add contention. */
#define PX_MAX_WORKERS 64

struct px_config {
	char *listen_host;   /* owned */
	char *listen_port;   /* owned */
	struct px_upstream_conf *ups; /* owned array */
	size_t nups;
	struct {
		unsigned connect_ms, request_ms, client_idle_ms, upstream_idle_ms;
		unsigned header_ms, body_ms;
		unsigned sse_keepalive_ms, drain_ms;
		unsigned session_idle_ms;     /* translated sessions (session.h) */
	} timeouts;
	struct {
		size_t max_body_bytes, max_header_bytes, max_sse_event_bytes;
		size_t max_inspect_bytes;     /* a JSON reply read to inspect it */
		size_t max_connections, max_batch, max_output_bytes;
		size_t max_connections_per_client, max_json_depth;
		size_t max_sessions, max_session_pending, max_session_queue;
		/* pass-through sessions (proxy/mcp/sesslimit.h) */
		size_t max_inflight_per_session, max_streams_per_session;
	} limits;
	enum log_level log_level;
	int log_json;
	char *config_file;   /* owned, or NULL */
	/* Module sections, owned references, NULL when absent. config checks
	 * only their JSON type; each module parses its own section (policy/,
	 * admin/, the client list in transport_http.c). */
	json_t *policy;      /* object: "policy" or the file named by --policy */
	json_t *clients;     /* array: "clients" (parsed into `tokens` below) */
	json_t *admin;       /* object: "admin" (with --admin folded in) */
	/* With tokens, every MCP request must present one (401 otherwise);
	 * the client's Authorization then stays at the proxy. */
	struct px_client *tokens;   /* owned array */
	size_t ntokens;
	/* "allowed_hosts" / "allowed_origins": owned arrays of owned strings. */
	char **hosts;
	size_t nhosts;
	char **origins;
	size_t norigins;
	int listen_loopback;        /* listen_host is a loopback address/name */
	/* "workers" / --workers: event loops, one thread each; 0 (the
	 * default) means one per online core. */
	unsigned workers;
	/* "yield_after_us": a worker that ran this long without a pause lets
	 * other runnable threads have its core (proxy/net/loop.h); 0: never. */
	unsigned yield_after_us;
	/* "tls" / --tls-cert --tls-key: TLS on the client listener */
	char *tls_cert_file, *tls_key_file;   /* owned, or NULL */
	struct px_telemetry telemetry;        /* telemetry (issue 23) */
	/* replicas: "replica_id", the prefix of the session ids this replica
	 * mints ("<replica_id>-<hex>"), so a load balancer routes a legacy
	 * session's POSTs back to it (conf/haproxy/README.md); "" for none. */
	char replica_id[PX_REPLICA_ID_MAX + 1];
};

/* The client whose token is `bearer` (constant-time compares), or NULL. */
const struct px_client *config_client_by_token(const struct px_config *cfg, const char *bearer);

/* What main should do after parsing argv. */
enum config_action { CONFIG_RUN, CONFIG_CHECK_ONLY, CONFIG_HELP, CONFIG_VERSION };

/* Parses argv (and the -c file it names). On success returns a new config
 * (free with config_free) and sets *action. On failure returns NULL and
 * writes every error, one per line, into errbuf. */
struct px_config *config_from_argv(int argc, char **argv, enum config_action *action,
                                   char *errbuf, size_t errlen);

/* Loads a JSON config file alone (used by tests and by --check-config). */
struct px_config *config_load_file(const char *path, char *errbuf, size_t errlen);

void config_free(struct px_config *cfg);

/* Fills cfg->ups[i] from a URL string. Returns 0, or -1 with a reason. */
int config_parse_url(struct px_upstream_conf *u, const char *url, const char **why);

const char *config_usage(void);

/* What a reload cannot change in a running process: the first such
 * setting that differs between the running config and a new one (a short
 * static description, e.g. "listen"), or NULL when a reload may proceed. */
const char *config_restart_needed(const struct px_config *running, const struct px_config *next);

#endif

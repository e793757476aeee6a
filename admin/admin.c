/* admin: see admin.h.
 *
 * Each admin request is one `struct admin_x` (the transport adapter's
 * exchange). Most are answered at once from start(); two kinds live on:
 *
 *   AX_STREAM  a /calls/stream subscriber, in adm->streams until its
 *              connection ends; records are written to it as the recorder
 *              hands them over (on_record), keep-alive comments from one
 *              shared timer. A reader whose output is over
 *              limits.max_output_bytes gets nothing more queued: it is
 *              marked behind and fed from the ring as it drains
 *              (stream_pump), with a "gap" event for whatever left the ring
 *              meanwhile. Memory per reader is bounded by the output cap;
 *              a reader that stops reading is cut by conn's write timeout.
 *   AX_READY   a /readyz request waiting for the upstream probes, in
 *              adm->ready_waiters until they finish.
 *
 * Not here: the HTTP framing (proxy/net/conn.c), the records' contents
 * (proxy/hooks/hook_record.c), the page's script (admin/page.html).
 */
#include "admin/admin.h"

#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "admin/metrics.h"
#include "proxy/hooks/redact.h"
#include "admin/ring.h"
#include "policy/policy.h"
#include "proxy/config.h"
#include "proxy/net/conn.h"
#include "proxy/ctx.h"
#include "proxy/base/errs.h"
#include "proxy/hooks/hook_policy.h"
#include "proxy/hooks/hook_record.h"
#include "proxy/base/jparse.h"
#include "proxy/net/http_parse.h"
#include "proxy/net/inbox.h"
#include "proxy/hooks/inspect.h"
#include "proxy/net/listener.h"
#include "proxy/mcp/sesslimit.h"
#include "proxy/base/log.h"
#include "proxy/net/origin.h"
#include "proxy/net/tls.h"
#include "proxy/net/transport.h"
#include "proxy/net/upstream.h"
#include "proxy/base/clock.h"
#include "proxy/base/b64.h"

/* admin/page.html, linked in by admin/page_asset.S (.incbin). */
extern const char admin_page_start[];
extern const char admin_page_end[];

#define ADMIN_X_MAGIC        0x61646d78u /* "admx" */
#define ADMIN_DEFAULT_HOST   "127.0.0.1"
#define ADMIN_DEFAULT_PORT   "9090"
#define ADMIN_DEFAULT_STREAMS 32
#define ADMIN_MAX_STREAMS    1024
#define ADMIN_CALLS_DEFAULT  100
#define ADMIN_INFLIGHT_MAX   1000
#define ADMIN_TOKEN_MAX      4096
#define ADMIN_PROBE_EVERY_US 1000000u  /* /readyz probes at most this often */
#define ADMIN_PROBE_MAX_MS   2000u
#define ADMIN_KEEPALIVE_MS   15000u    /* when timeouts.sse_keepalive_ms is 0 */
#define ADMIN_LOG_RETRY_US   1000000u  /* a failing call log is tried again this often */

enum ax_kind { AX_DONE, AX_STREAM, AX_READY };

struct admin_x {
	unsigned magic;
	struct admin *adm;            /* borrowed */
	struct conn *c;               /* borrowed: conn owns the exchange */
	enum ax_kind kind;
	struct admin_x *prev, *next;  /* adm->streams or adm->ready_waiters */
	struct ring_filter filter;    /* streams: strings point into fval */
	char fval[4][RING_KEY_MAX];
	uint64_t last_write_us;
	uint64_t next_seq;            /* streams: the first record not sent yet */
	int behind;                   /* streams: catching up from the ring */
	int dead;                     /* stream ended: write nothing more */
};

struct probe {
	struct admin *adm;            /* borrowed */
	const char *name;             /* borrowed: config */
	struct sockaddr_storage ss;
	socklen_t sslen;              /* 0: the host did not resolve */
	unsigned timeout_ms;
	evutil_socket_t fd;           /* owned while probing, else -1 */
	struct event *ev;             /* owned while probing */
	int up;                       /* -1 never probed */
	const char *why;              /* static: why it is down */
};

struct admin {
	struct px_ctx *ctx;           /* borrowed */
	struct listener *lst;         /* owned, NULL when off */
	/* HTTPS: a certificate of its own (tls, re-read on SIGHUP from the
	 * files), or the client listener's (ctx->tls_server); else plain. */
	struct ssl_ctx_st *tls;       /* owned, or NULL */
	char *tls_cert, *tls_key;     /* owned: tls's files, or NULL */
	int https;
	struct ring *ring;            /* owned */
	struct redact *rd;            /* owned */
	struct metrics *m;            /* owned */
	struct hook_record *rec;      /* owned */
	char *token;                  /* owned, NULL: no token */
	size_t token_len;
	FILE *log;                    /* owned unless stdout */
	int log_is_stdout, log_failed;
	uint64_t log_retry_us;        /* log_failed: next write attempt (mono_us) */
	uint64_t log_lost;            /* records not written since it failed */
	off_t log_good;               /* end of the last whole line, -1 unknown */
	size_t max_streams, nstreams;
	struct admin_x *streams;      /* borrowed list: exchanges owned by conn */
	struct admin_x *ready_waiters;
	struct event *keepalive;      /* owned */
	struct event *relisten;       /* owned */
	struct probe *probes;         /* owned: one per upstream */
	size_t nprobes, probing;
	uint64_t probed_at;
	json_t *contract;             /* owned: {"upstream": {"time", "report"}} */
	double start_time;
	/* Guards what every worker's recorder writes and this thread reads:
	 * ring, metrics, the recorder's in-flight table, contract reports,
	 * the call log. The recorder's hooks run holding it
	 * (inspect_set_lock); the endpoints hold it only to copy out. */
	pthread_mutex_t lock;
	int locked;                   /* lock initialised */
	/* New records for the /calls/stream readers, which live on this
	 * (worker 0's) loop: a record made on any worker wakes them once. */
	struct event *notify;         /* owned */
	int notify_pending;           /* atomic: a wakeup is on its way */
	int streams_open;             /* atomic copy of nstreams for other threads */
	pthread_t thread;             /* worker 0's, where streams live */
};

/* ---- configuration ------------------------------------------------------- */


struct admin_conf {
	int off, listen_default;
	char host[256], port[16];
	const char *token;            /* borrowed from the config, or from tokbuf */
	char tokbuf[ADMIN_TOKEN_MAX + 1];
	size_t ring_size, max_streams, max_labels;
	const char *log_calls;
	const json_t *redact_keys, *redact_values;
	const char *tls_cert, *tls_key;  /* borrowed from the config, or NULL */
	int tls_listener;             /* "tls": "listener" */
};

static const char *const admin_keys[] = {
	"listen", "token", "token_file", "ring_size", "log_calls", "redact_keys",
	"redact_values", "max_streams", "max_labels", "tls", NULL,
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

static void parse_conf(struct errs *e, const json_t *conf, struct admin_conf *ac)
{
	const char *k;
	json_t *v;

	ac->listen_default = 1;
	snprintf(ac->host, sizeof(ac->host), "%s", ADMIN_DEFAULT_HOST);
	snprintf(ac->port, sizeof(ac->port), "%s", ADMIN_DEFAULT_PORT);
	ac->ring_size = RING_DEFAULT_SIZE;
	ac->max_streams = ADMIN_DEFAULT_STREAMS;
	ac->max_labels = METRICS_DEFAULT_MAX_LABELS;
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
	if (!ac->off && !ac->token && e->count == 0) {
		int lo = host_is_loopback(ac->host, ac->port);
		if (lo < 0)
			errs_add(e, "$.admin.listen: %s does not resolve", ac->host);
		else if (!lo)
			errs_add(e, "$.admin.listen: %s is not a loopback address: set admin.token to "
			           "expose the admin endpoint", ac->host);
	}
}

/* ---- the credentials mcpwarden sends upstream ---------------------------- */

/* Every credential mcpwarden sends upstream must stay out of whatever it
 * shows (records, the stream, the call log), even when an upstream
 * echoes it back in a tool result: the strings below are added to the
 * redactor's literal values at start and at each reload, in every form
 * an echo may carry them. Values only ever join the set (a token
 * replaced by a reload was sent, and may still come back). Values
 * shorter than REDACT_MIN_VALUE_LEN are not masked: they would mask
 * everything. Not here: a client's own Authorization, passed through
 * when no client tokens are configured (it is the client's, not known
 * before its request). */

/* A list of strings (owned) for redact_add_secrets. */
struct secrets {
	char **v;
	size_t n, cap;
	int oom;
};

static void sec_add(struct secrets *s, const char *v, size_t len)
{
	if (len < REDACT_MIN_VALUE_LEN || s->oom)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		char **nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv) {
			s->oom = 1;
			return;
		}
		s->v = nv;
		s->cap = cap;
	}
	char *c = strndup(v, len);
	if (!c) {
		s->oom = 1;
		return;
	}
	s->v[s->n++] = c;
}

static void sec_free(struct secrets *s)
{
	for (size_t i = 0; i < s->n; i++) {
		explicit_bzero(s->v[i], strlen(s->v[i]));
		free(s->v[i]);
	}
	free(s->v);
}

/* Credentials beyond this are not re-encoded (they are masked as sent). */
#define SEC_B64_MAX 3072

/* v's base64 (padded, the alphabet of an Authorization: Basic value). */
static void sec_add_b64(struct secrets *s, const char *v, size_t len)
{
	unsigned char out[SEC_B64_MAX / 3 * 4 + 8];
	if (len < REDACT_MIN_VALUE_LEN || len > SEC_B64_MAX)
		return;
	size_t n = b64_encode(v, len, (char *)out);
	if (n > 0)
		sec_add(s, (const char *)out, n);
	explicit_bzero(out, sizeof(out));
}

/* What a Basic credential (b64) encodes: user:password, the user, the
 * password. */
static void sec_add_basic(struct secrets *s, const char *b64, size_t len)
{
	unsigned char out[SEC_B64_MAX + 8];
	if (len == 0 || len % 4 || len / 4 * 3 > SEC_B64_MAX)
		return;
	long n = b64_decode(b64, len, out);
	if (n < 0)
		return;
	sec_add(s, (const char *)out, (size_t)n);
	const unsigned char *colon = memchr(out, ':', (size_t)n);
	if (colon) {
		sec_add(s, (const char *)out, (size_t)(colon - out));
		sec_add(s, (const char *)colon + 1, (size_t)(out + n - colon - 1));
	}
	explicit_bzero(out, sizeof(out));
}

/* A header value mcpwarden sends: as sent and in base64; when it is
 * "<scheme> <credentials>" (an Authorization header, or a Basic or Bearer
 * value in another one), the credentials alone too, and what a Basic
 * one encodes. */
static void sec_add_header(struct secrets *s, const char *name, const char *v)
{
	size_t len = strlen(v);
	sec_add(s, v, len);
	sec_add_b64(s, v, len);
	const char *sp = strchr(v, ' ');
	if (!sp)
		return;
	size_t slen = (size_t)(sp - v);
	int basic = slen == 5 && strncasecmp(v, "basic", 5) == 0;
	int bearer = slen == 6 && strncasecmp(v, "bearer", 6) == 0;
	if (!basic && !bearer && strcasecmp(name, "authorization") != 0 &&
	    strcasecmp(name, "proxy-authorization") != 0)
		return;
	while (*sp == ' ')
		sp++;
	size_t tl = strlen(sp);
	while (tl > 0 && sp[tl - 1] == ' ')
		tl--;
	sec_add(s, sp, tl);
	sec_add_b64(s, sp, tl);
	if (basic)
		sec_add_basic(s, sp, tl);
}

static void pct_decode(const char *s, size_t len, char *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n + 1 < cap; i++) {
		if (s[i] == '%' && i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
		    isxdigit((unsigned char)s[i + 2])) {
			char hex[3] = {s[i + 1], s[i + 2], 0};
			out[n++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			out[n++] = s[i] == '+' ? ' ' : s[i];
		}
	}
	out[n] = '\0';
}

/* The query of an upstream URL (whole, and each value raw and decoded). */
static void sec_add_query(struct secrets *s, const char *q)
{
	char buf[2048];
	sec_add(s, q, strlen(q));
	for (const char *p = q; *p;) {
		size_t n = strcspn(p, "&");
		const char *eq = memchr(p, '=', n);
		if (eq) {
			size_t vl = n - (size_t)(eq + 1 - p);
			pct_decode(eq + 1, vl, buf, sizeof(buf));
			sec_add(s, buf, strlen(buf));
			sec_add(s, eq + 1, vl);
		}
		p += n + (p[n] == '&');
	}
	explicit_bzero(buf, sizeof(buf));
}

/* Adds cfg's credentials to rd: each upstream's Basic value (from the
 * URL's user and password), the query of its URL, its configured header
 * values (after ${ENV} expansion: as config.c filled them in); and the
 * client tokens. Safe while workers redact (redact_add_secrets). */
static void add_config_secrets(struct redact *rd, const struct px_config *cfg)
{
	struct secrets s = {0};

	for (size_t i = 0; i < cfg->nups; i++) {
		const struct px_upstream_conf *u = &cfg->ups[i];
		if (u->basic_auth)
			sec_add_header(&s, "Authorization", u->basic_auth);
		const char *q = u->target ? strchr(u->target, '?') : NULL;
		if (q)
			sec_add_query(&s, q + 1);
		for (size_t h = 0; h < u->nheaders; h++)
			sec_add_header(&s, u->headers[h].name, u->headers[h].value);
	}
	for (size_t i = 0; i < cfg->ntokens; i++)
		sec_add(&s, cfg->tokens[i].token, strlen(cfg->tokens[i].token));
	if (s.oom || redact_add_secrets(rd, (const char *const *)s.v, s.n) < 0)
		log_msg(LOG_ERROR, "admin: out of memory: some credentials are not masked in records");
	else if (redact_nvalues(rd) >= REDACT_MAX_VALUES)
		log_msg(LOG_WARN, "admin: more than %d values to mask: some credentials are not "
		                  "masked in records", REDACT_MAX_VALUES);
	sec_free(&s);
}

/* ---- replies --------------------------------------------------------------- */

static struct evbuffer *common_headers(const char *content_type)
{
	struct evbuffer *h = evbuffer_new();
	if (!h)
		return NULL;
	evbuffer_add_printf(h, "Content-Type: %s\r\n", content_type);
	evbuffer_add_printf(h, "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n");
	return h;
}

/* Sends a whole reply. headers (may be NULL) is consumed. */
static void reply(struct admin_x *ax, int status, const char *content_type,
                  struct evbuffer *extra, const void *body, size_t len)
{
	struct evbuffer *h = common_headers(content_type);
	if (!h) {
		if (extra)
			evbuffer_free(extra);
		conn_abort(ax->c, "out of memory");
		return;
	}
	if (extra) {
		evbuffer_add_buffer(h, extra);
		evbuffer_free(extra);
	}
	conn_reply_head(ax->c, status, h, (int64_t)len);
	evbuffer_free(h);
	conn_reply_body(ax->c, body, len);
	conn_reply_end(ax->c);
}

/* body is stolen. */
static void reply_json(struct admin_x *ax, int status, json_t *body, struct evbuffer *extra)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!s) {
		if (extra)
			evbuffer_free(extra);
		conn_abort(ax->c, "out of memory");
		return;
	}
	size_t n = strlen(s);
	s[n] = '\n'; /* the NUL becomes the trailing newline */
	reply(ax, status, "application/json", extra, s, n + 1);
	free(s);
}

static void reply_error(struct admin_x *ax, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void reply_error(struct admin_x *ax, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct evbuffer *extra = NULL;
	if (status == 401 || status == 405) {
		extra = evbuffer_new();
		if (extra && status == 401)
			evbuffer_add_printf(extra, "WWW-Authenticate: Bearer realm=\"mcpwarden admin\"\r\n");
		else if (extra)
			evbuffer_add_printf(extra, "Allow: GET, HEAD\r\n");
	}
	json_t *body = json_object(), *text = json_string(msg);
	/* msg may quote a client's bytes that are not UTF-8 */
	json_object_set_new(body, "error", text ? text : json_string("bad request"));
	reply_json(ax, status, body, extra);
}

/* ---- query strings ---------------------------------------------------------- */

struct query {
	const char *name[8];
	char value[8][RING_KEY_MAX];
	size_t n;
};

/* Splits "a=1&b=x%20y" into decoded pairs. Returns 0, or -1 with a reply
 * sent: an unknown or repeated parameter, or too many. */
static int parse_query(struct admin_x *ax, const char *q, const char *const allowed[],
                       struct query *out)
{
	out->n = 0;
	while (q && *q) {
		size_t n = strcspn(q, "&");
		const char *eq = memchr(q, '=', n);
		size_t klen = eq ? (size_t)(eq - q) : n;
		char key[64];
		pct_decode(q, klen, key, sizeof(key));
		size_t i = 0;
		while (allowed[i] && strcmp(allowed[i], key) != 0)
			i++;
		if (klen == 0) {
			/* "a=1&&b=2": an empty piece is harmless */
		} else if (!allowed[i]) {
			reply_error(ax, 400, "unknown parameter \"%.60s\"", key);
			return -1;
		} else {
			for (size_t j = 0; j < out->n; j++) {
				if (out->name[j] == allowed[i]) {
					reply_error(ax, 400, "parameter \"%s\" given twice", key);
					return -1;
				}
			}
			if (out->n >= sizeof(out->name) / sizeof(out->name[0])) {
				reply_error(ax, 400, "too many parameters");
				return -1;
			}
			out->name[out->n] = allowed[i];
			if (eq)
				pct_decode(eq + 1, n - klen - 1, out->value[out->n], RING_KEY_MAX);
			else
				out->value[out->n][0] = '\0';
			out->n++;
		}
		q += n + (q[n] == '&');
	}
	return 0;
}

static const char *query_get(const struct query *q, const char *name)
{
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->name[i], name) == 0)
			return q->value[i];
	return NULL;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static const char *const outcome_names[] = {
	"ok", "tool_error", "rpc_error", "blocked", "upstream_error", "timeout", "cancelled", NULL,
};

/* Fills f from the common filter parameters. Returns 0, or -1 after
 * replying 400. Strings in f point into q. */
static int query_filter(struct admin_x *ax, const struct query *q, struct ring_filter *f)
{
	const char *since = query_get(q, "since");
	const char *outcome = query_get(q, "outcome");

	if (since && parse_u64(since, UINT64_MAX - 1, &f->since) < 0) {
		reply_error(ax, 400, "since: must be a record sequence number");
		return -1;
	}
	if (outcome && !*outcome)
		outcome = NULL;
	if (outcome) {
		size_t i = 0;
		while (outcome_names[i] && strcmp(outcome_names[i], outcome) != 0)
			i++;
		if (!outcome_names[i]) {
			reply_error(ax, 400, "outcome: must be one of ok, tool_error, rpc_error, blocked, "
			                     "upstream_error, timeout, cancelled");
			return -1;
		}
	}
	/* An empty value ("tool=", as a form sends it) filters nothing. */
	const char *const names[] = {"method", "tool", "session"};
	const char **dst[] = {&f->method, &f->tool, &f->session};
	for (size_t i = 0; i < 3; i++) {
		const char *v = query_get(q, names[i]);
		*dst[i] = v && *v ? v : NULL;
	}
	f->outcome = outcome;
	return 0;
}

/* ---- endpoints ------------------------------------------------------------ */

/* The page holds no data: without the token it is still sent, with a 401,
 * so that a browser shows the form asking for the token (every data
 * request then carries it). */
static void ep_page(struct admin_x *ax, int status)
{
	struct evbuffer *extra = evbuffer_new();
	if (extra) {
		evbuffer_add_printf(extra,
		                    "Content-Security-Policy: default-src 'none'; script-src "
		                    "'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
		                    "img-src data:; base-uri 'none'; form-action 'none'; "
		                    "frame-ancestors 'none'\r\n"
		                    "Referrer-Policy: no-referrer\r\nX-Frame-Options: DENY\r\n");
		if (status == 401)
			evbuffer_add_printf(extra, "WWW-Authenticate: Bearer realm=\"mcpwarden admin\"\r\n");
	}
	reply(ax, status, "text/html; charset=utf-8", extra, admin_page_start,
	      (size_t)(admin_page_end - admin_page_start));
}


/* adm->lock is the recorder's too (hook_record_set_lock), which leaves
 * finished records waiting rather than wait for it: a reader first
 * publishes what waits, so that it reads every finished record, and after
 * releasing the lock publishes what workers left meanwhile. */
static void admin_lock(struct admin *adm)
{
	pthread_mutex_lock(&adm->lock);
	hook_record_drain_locked(adm->rec);
}

static void admin_unlock(struct admin *adm)
{
	pthread_mutex_unlock(&adm->lock);
	hook_record_unlocked(adm->rec);
}

static void ep_calls(struct admin_x *ax, const char *qs)
{
	static const char *const allowed[] = {"limit", "since", "method", "tool", "session",
	                                      "outcome", NULL};
	struct admin *adm = ax->adm;
	struct query q;
	struct ring_filter f = {0};
	uint64_t limit = ADMIN_CALLS_DEFAULT;

	if (parse_query(ax, qs, allowed, &q) < 0 || query_filter(ax, &q, &f) < 0)
		return;
	const char *l = query_get(&q, "limit");
	if (l && (parse_u64(l, RING_MAX_SIZE, &limit) < 0 || limit == 0 ||
	          limit > ring_size(adm->ring))) {
		reply_error(ax, 400, "limit: must be a whole number from 1 to %zu",
		            ring_size(adm->ring));
		return;
	}
	f.limit = (size_t)limit;
	struct ring_item *items;
	admin_lock(adm);
	size_t n = ring_read(adm->ring, &f, &items);
	size_t records = ring_count(adm->ring);
	unsigned long long oldest = ring_oldest_seq(adm->ring), newest = ring_newest_seq(adm->ring);
	unsigned long long dropped = ring_dropped(adm->ring);
	admin_unlock(adm);
	if (n == (size_t)-1) {
		reply_error(ax, 500, "out of memory");
		return;
	}
	struct evbuffer *body = evbuffer_new();
	if (!body) {
		ring_items_free(items, n);
		conn_abort(ax->c, "out of memory");
		return;
	}
	evbuffer_add(body, "{\"calls\":[", 10);
	for (size_t i = 0; i < n; i++) {
		if (i)
			evbuffer_add(body, ",", 1);
		evbuffer_add(body, items[i].json, items[i].len);
	}
	ring_items_free(items, n);
	evbuffer_add_printf(body,
	                    "],\"count\":%zu,\"ring\":{\"size\":%zu,\"records\":%zu,"
	                    "\"oldest_seq\":%llu,\"newest_seq\":%llu,\"dropped\":%llu}}\n",
	                    n, ring_size(adm->ring), records, oldest, newest, dropped);
	struct evbuffer *h = common_headers("application/json");
	if (!h) {
		evbuffer_free(body);
		conn_abort(ax->c, "out of memory");
		return;
	}
	conn_reply_head(ax->c, 200, h, (int64_t)evbuffer_get_length(body));
	evbuffer_free(h);
	conn_reply_body_buffer(ax->c, body);
	evbuffer_free(body);
	conn_reply_end(ax->c);
}

static void ep_inflight(struct admin_x *ax, const char *qs)
{
	static const char *const allowed[] = {"limit", NULL};
	struct query q;
	uint64_t limit = ADMIN_CALLS_DEFAULT;

	if (parse_query(ax, qs, allowed, &q) < 0)
		return;
	const char *l = query_get(&q, "limit");
	if (l && (parse_u64(l, ADMIN_INFLIGHT_MAX, &limit) < 0 || limit == 0)) {
		reply_error(ax, 400, "limit: must be a whole number from 1 to %d", ADMIN_INFLIGHT_MAX);
		return;
	}
	size_t count = 0;
	json_t *list = hook_record_inflight(ax->adm->rec, (size_t)limit, &count);
	json_t *body = json_object();
	if (body && list) {
		json_object_set_new(body, "count", json_integer((json_int_t)count));
		json_object_set_new(body, "inflight", list);
		list = NULL;
	}
	json_decref(list);
	reply_json(ax, 200, body, NULL);
}

static void ep_contract(struct admin_x *ax)
{
	struct admin *adm = ax->adm;
	const struct px_config *cfg = adm->ctx->cfg;
	json_t *body = json_object(), *ups = json_array();

	if (!body || !ups) {
		json_decref(body);
		json_decref(ups);
		reply_error(ax, 500, "out of memory");
		return;
	}
	/* Every configured upstream, in order, with null until a report came.
	 * Entries are replaced, never changed: a reference outlives the lock. */
	admin_lock(adm);
	for (size_t i = 0; i < cfg->nups; i++) {
		const json_t *e = json_object_get(adm->contract, cfg->ups[i].name);
		json_t *o = json_object();
		json_object_set_new(o, "upstream", json_string(cfg->ups[i].name));
		json_object_set_new(o, "updated",
		                    json_incref(e ? json_object_get(e, "time") : json_null()));
		json_object_set_new(o, "report",
		                    json_incref(e ? json_object_get(e, "report") : json_null()));
		json_array_append_new(ups, o);
	}
	admin_unlock(adm);
	json_object_set_new(body, "upstreams", ups);
	/* Tool names and findings are the upstream's words: credentials it
	 * echoes there are masked as in records (rare endpoint, a copy). */
	json_t *shown = redact_json(adm->rd, body);
	json_decref(body);
	if (!shown) {
		reply_error(ax, 500, "out of memory");
		return;
	}
	reply_json(ax, 200, shown, NULL);
}

/* ---- admin connections ------------------------------------------------------- */

/* Open connections on the MCP listener, every worker's: each connection
 * knows its listener, so admin connections are not among them. */
static uint64_t client_connections(struct admin *adm)
{
	return __atomic_load_n(&adm->ctx->shared->client_conns, __ATOMIC_RELAXED);
}

static void fill_snapshot(struct admin *adm, struct metrics_snapshot *s,
                          struct metrics_upstream *ups, struct metrics_worker *workers)
{
	struct px_ctx *ctx = adm->ctx;

	s->client_connections = client_connections(adm);
	/* Every worker's counters, summed: one view of the process. */
	for (size_t w = 0; w < ctx->nworkers; w++) {
		const struct px_ctx *wc = ctx->workers[w];
		struct inspect_stats is;
		inspect_get_stats(wc->insp, &is);
		s->connections_total += px_stat_get(&wc->stats.connections);
		s->http_requests_total += px_stat_get(&wc->stats.requests);
		for (size_t i = 0; i < 6; i++)
			s->http_responses[i] += px_stat_get(&wc->stats.responses_by_class[i]);
		s->upstream_errors += px_stat_get(&wc->stats.upstream_errors);
		s->upstream_timeouts += px_stat_get(&wc->stats.timeouts);
		s->requests_too_large += px_stat_get(&wc->stats.too_large);
		s->bad_requests += px_stat_get(&wc->stats.bad_requests);
		s->aborted += px_stat_get(&wc->stats.aborted);
		s->messages_from_client += is.messages[INSPECT_FROM_CLIENT];
		s->messages_from_server += is.messages[INSPECT_FROM_SERVER];
		s->hook_dropped += is.dropped;
		s->hook_answered += is.answered;
		s->hook_modified += is.modified;
		workers[w].connections_total = px_stat_get(&wc->stats.connections);
		workers[w].requests_total = px_stat_get(&wc->stats.requests);
		workers[w].handoffs_total = px_stat_get(&wc->stats.handoffs);
		workers[w].yields_total = px_stat_get(&wc->stats.yields);
	}
	s->workers = workers;
	s->nworkers = ctx->nworkers;
	s->ring_capacity = ring_size(adm->ring);
	s->ring_records = ring_count(adm->ring);
	s->ring_dropped = ring_dropped(adm->ring);
	s->inflight_calls = hook_record_inflight_count(adm->rec);
	s->admin_streams = adm->nstreams;
	if (ctx->sesslimit) {
		struct sesslimit_stats sl;
		sesslimit_get_stats(ctx->sesslimit, &sl);
		for (size_t k = 0; k < 2; k++) {
			s->session_refused[k] = sl.refused[k];
			s->session_slots[k] = sl.held[k];
		}
	}
	for (const struct admin_x *ax = adm->streams; ax; ax = ax->next)
		s->admin_streams_behind += ax->behind && !ax->dead;
	s->start_time_seconds = adm->start_time;
	for (size_t i = 0; i < ctx->nups; i++) {
		ups[i].name = ctx->cfg->ups[i].name;
		/* Another worker's pool count, read as it changes: a gauge. */
		for (size_t w = 0; w < ctx->nworkers; w++)
			ups[i].idle_connections += upstream_idle_count(ctx->workers[w]->ups[i]);
		ups[i].reachable = i < adm->nprobes ? adm->probes[i].up : -1;
	}
	s->ups = ups;
	s->nups = ctx->nups;
}

/* The policy module's counters for /metrics: *mp filled, its rules in a
 * new array (owned by the caller, NULL when there are none). The rule
 * names are the policy's, valid until the next reload: this thread's. */
static struct metrics_policy_rule *policy_snapshot(const struct px_ctx *ctx,
                                                   struct metrics_policy *mp)
{
	struct hook_policy_stats st;
	size_t n;
	hook_policy_get_stats(ctx->policy, &st);
	const struct policy *p = hook_policy_current(ctx->policy);
	*mp = (struct metrics_policy){
		.active = p != NULL,
		.dry_run_mode = p ? policy_dry_run(p) : 0,
		.allowed = st.allowed,
		.denied = st.denied,
		.logged = st.logged,
		.dry_run = st.dry_run,
		.unknown_tool = st.unknown_tool,
		.tools_hidden = st.tools_hidden,
		.listings = st.listings,
		.tools_over_cap = st.tools_over_cap,
		.reloads = st.reloads,
		.reload_failures = st.reload_failures,
	};
	struct policy_rule_stats *rs = hook_policy_rule_stats(ctx->policy, &n);
	struct metrics_policy_rule *out = n ? calloc(n, sizeof(*out)) : NULL;
	for (size_t i = 0; out && i < n; i++)
		out[i] = (struct metrics_policy_rule){
			.rule = rs[i].rule,
			.action = policy_action_str(rs[i].action),
			.matched = rs[i].matched,
			.allowed = rs[i].allowed,
			.denied = rs[i].denied,
			.logged = rs[i].logged,
			.dry_run = rs[i].dry_run,
			.hidden = rs[i].hidden,
			.dry_run_hidden = rs[i].dry_run_hidden,
		};
	free(rs);
	mp->rules = out;
	mp->nrules = out ? n : 0;
	return out;
}

static void ep_metrics(struct admin_x *ax)
{
	struct admin *adm = ax->adm;
	struct metrics_snapshot s = {0};
	struct metrics_upstream *ups = calloc(adm->ctx->nups ? adm->ctx->nups : 1, sizeof(*ups));
	struct metrics_worker *workers = calloc(adm->ctx->nworkers, sizeof(*workers));
	size_t len;

	if (!ups || !workers) {
		free(ups);
		free(workers);
		reply_error(ax, 500, "out of memory");
		return;
	}
	struct metrics_policy mp;
	struct metrics_policy_rule *rules = policy_snapshot(adm->ctx, &mp);
	s.policy = &mp;
	admin_lock(adm);
	fill_snapshot(adm, &s, ups, workers);
	char *text = metrics_render(adm->m, &s, &len);
	admin_unlock(adm);
	free(rules);
	free(ups);
	free(workers);
	if (!text) {
		reply_error(ax, 500, "out of memory");
		return;
	}
	reply(ax, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, text, len);
	free(text);
}

static void ep_healthz(struct admin_x *ax)
{
	json_t *body = json_pack("{s:s}", "status", "ok");
	reply_json(ax, 200, body, NULL);
}

/* ---- /readyz ---------------------------------------------------------------- */

static void list_remove(struct admin_x **head, struct admin_x *ax)
{
	if (ax->prev)
		ax->prev->next = ax->next;
	else if (*head == ax)
		*head = ax->next;
	if (ax->next)
		ax->next->prev = ax->prev;
	ax->prev = ax->next = NULL;
}

static void list_push(struct admin_x **head, struct admin_x *ax)
{
	ax->prev = NULL;
	ax->next = *head;
	if (*head)
		(*head)->prev = ax;
	*head = ax;
}

static void answer_ready(struct admin_x *ax)
{
	struct admin *adm = ax->adm;
	json_t *ups = json_array();
	int ready = !adm->ctx->draining;

	for (size_t i = 0; i < adm->nprobes; i++) {
		const struct probe *p = &adm->probes[i];
		json_t *o = json_pack("{s:s,s:b}", "upstream", p->name, "reachable", p->up == 1);
		if (o && p->up != 1)
			json_object_set_new(o, "error", json_string(p->why ? p->why : "not probed"));
		json_array_append_new(ups, o);
		ready &= p->up == 1;
	}
	json_t *body = json_pack("{s:b,s:b,s:o}", "ready", ready, "draining",
	                         adm->ctx->draining != 0, "upstreams", ups);
	reply_json(ax, ready ? 200 : 503, body, NULL);
}

/* Every probe has finished: answer whoever waits. */
static void probes_finished(struct admin *adm)
{
	adm->probed_at = clock_mono_us();
	while (adm->ready_waiters) {
		struct admin_x *ax = adm->ready_waiters;
		list_remove(&adm->ready_waiters, ax);
		ax->kind = AX_DONE;
		answer_ready(ax);
	}
}

static void probe_done(struct probe *p, int up, const char *why)
{
	struct admin *adm = p->adm;
	if (p->ev) {
		event_free(p->ev);
		p->ev = NULL;
	}
	if (p->fd >= 0) {
		evutil_closesocket(p->fd);
		p->fd = -1;
	}
	p->up = up;
	p->why = why;
	assert(adm->probing > 0);
	if (--adm->probing == 0)
		probes_finished(adm);
}

static void probe_cb(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;
	int err = 0;
	socklen_t len = sizeof(err);

	if (what & EV_TIMEOUT) {
		probe_done(p, 0, "connect timed out");
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	probe_done(p, err == 0, err == 0 ? NULL : "connection refused or unreachable");
}

/* A plain non-blocking connect: the probe only asks whether the upstream
 * accepts TCP, it never sends a byte. */
static void probe_one(struct admin *adm, struct probe *p)
{
	if (p->sslen == 0) {
		probe_done(p, 0, "the host does not resolve");
		return;
	}
	p->fd = socket(p->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0) {
		probe_done(p, 0, "cannot create a socket");
		return;
	}
	if (connect(p->fd, (struct sockaddr *)&p->ss, p->sslen) == 0) {
		probe_done(p, 1, NULL);
		return;
	}
	if (errno != EINPROGRESS) {
		probe_done(p, 0, "connection refused or unreachable");
		return;
	}
	struct timeval tv = {p->timeout_ms / 1000, (p->timeout_ms % 1000) * 1000};
	p->ev = event_new(adm->ctx->base, p->fd, EV_WRITE, probe_cb, p);
	if (!p->ev || event_add(p->ev, &tv) < 0)
		probe_done(p, 0, "out of memory");
}

static void probe_start(struct admin *adm)
{
	/* One extra count so that probes finishing inside the loop cannot
	 * answer the waiters before every probe started. */
	adm->probing = adm->nprobes + 1;
	for (size_t i = 0; i < adm->nprobes; i++)
		probe_one(adm, &adm->probes[i]);
	if (--adm->probing == 0)
		probes_finished(adm);
}

static void ep_readyz(struct admin_x *ax)
{
	struct admin *adm = ax->adm;
	uint64_t now = clock_mono_us();

	if (!adm->probing && adm->probed_at && now - adm->probed_at < ADMIN_PROBE_EVERY_US) {
		answer_ready(ax);
		return;
	}
	ax->kind = AX_READY;
	list_push(&adm->ready_waiters, ax);
	if (!adm->probing)
		probe_start(adm);
}

static void probes_setup(struct admin *adm)
{
	const struct px_config *cfg = adm->ctx->cfg;
	adm->probes = calloc(cfg->nups ? cfg->nups : 1, sizeof(*adm->probes));
	if (!adm->probes)
		return;
	adm->nprobes = cfg->nups;
	for (size_t i = 0; i < cfg->nups; i++) {
		struct probe *p = &adm->probes[i];
		const struct px_upstream_conf *u = &cfg->ups[i];
		struct addrinfo hints = {0}, *res = NULL;
		p->adm = adm;
		p->fd = -1;
		p->name = u->name;
		p->up = -1;
		unsigned ms = u->connect_timeout_ms ? u->connect_timeout_ms : ADMIN_PROBE_MAX_MS;
		p->timeout_ms = ms < ADMIN_PROBE_MAX_MS ? ms : ADMIN_PROBE_MAX_MS;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICSERV;
		/* Start-up only, like upstream_new: never on the data path. */
		if (getaddrinfo(u->host, u->port, &hints, &res) == 0 && res &&
		    res->ai_addrlen <= sizeof(p->ss)) {
			memcpy(&p->ss, res->ai_addr, res->ai_addrlen);
			p->sslen = (socklen_t)res->ai_addrlen;
		}
		if (res)
			freeaddrinfo(res);
	}
}

/* ---- /calls/stream -------------------------------------------------------- */

/* Records read from the ring per pass when a stream catches up. */
#define STREAM_PUMP_BATCH 64

static void stream_write(struct admin_x *ax, const char *data, size_t len)
{
	conn_reply_body(ax->c, data, len);
	ax->last_write_us = clock_mono_us();
}

/* One record as an SSE event. */
static void stream_event(struct admin_x *ax, uint64_t seq, const char *json, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	if (!b)
		return;
	evbuffer_add_printf(b, "id: %llu\ndata: ", (unsigned long long)seq);
	evbuffer_add(b, json, len);
	evbuffer_add(b, "\n\n", 2);
	conn_reply_body_buffer(ax->c, b);
	evbuffer_free(b);
	ax->last_write_us = clock_mono_us();
	ax->next_seq = seq + 1;
}

/* Writes what the stream has not had yet, from the ring, oldest first,
 * until it is current or its output is over the cap; ->drained calls it
 * again once the reader took some. Records that left the ring meanwhile
 * are announced by a "gap" event, never skipped silently. */
static void stream_pump(struct admin_x *ax)
{
	struct admin *adm = ax->adm;

	while (ax->behind && !ax->dead && !conn_output_full(ax->c)) {
		struct ring_filter f = ax->filter;
		f.oldest_first = 1;
		f.limit = STREAM_PUMP_BATCH;
		struct ring_item *items;
		/* What left the ring and what is read from it, in one look:
		 * workers append between two (they hold the lock only to
		 * publish), and a record overwritten in between would be
		 * missed without its gap. */
		admin_lock(adm);
		uint64_t oldest = ring_oldest_seq(adm->ring), from = ax->next_seq;
		if (oldest && from < oldest)
			from = oldest;
		f.since = from - 1;
		size_t n = ring_read(adm->ring, &f, &items);
		uint64_t newest = ring_newest_seq(adm->ring);
		admin_unlock(adm);
		if (n == (size_t)-1)
			return; /* out of memory: try again on the next drain or record */
		if (from > ax->next_seq) {
			char gap[128];
			int k = snprintf(gap, sizeof(gap),
			                 "event: gap\ndata: {\"missed_from\":%llu,\"missed_to\":%llu}\n\n",
			                 (unsigned long long)ax->next_seq, (unsigned long long)from - 1);
			stream_write(ax, gap, (size_t)k);
			ax->next_seq = from;
		}
		size_t i = 0;
		for (; i < n && !conn_output_full(ax->c); i++)
			stream_event(ax, items[i].seq, items[i].json, items[i].len);
		ring_items_free(items, n);
		if (i == n && n < STREAM_PUMP_BATCH) {
			/* Nothing more matches: current from the next record on. */
			ax->next_seq = newest + 1;
			ax->behind = 0;
		}
	}
}

static void ep_stream(struct admin_x *ax, const struct http_msg *req, const char *qs)
{
	static const char *const allowed[] = {"since", "method", "tool", "session", "outcome", NULL};
	struct admin *adm = ax->adm;
	struct query q;
	struct ring_filter f = {0};

	if (parse_query(ax, qs, allowed, &q) < 0 || query_filter(ax, &q, &f) < 0)
		return;
	const char *last = http_msg_header(req, "last-event-id");
	if (last && *last && parse_u64(last, UINT64_MAX - 1, &f.since) < 0) {
		reply_error(ax, 400, "Last-Event-ID: must be a record sequence number");
		return;
	}
	if (!query_get(&q, "since") && !(last && *last)) {
		admin_lock(adm);
		f.since = ring_newest_seq(adm->ring); /* only what happens from now on */
		admin_unlock(adm);
	}
	if (adm->ctx->draining) {
		reply_error(ax, 503, "mcpwarden is shutting down");
		return;
	}
	if (adm->nstreams >= adm->max_streams) {
		struct evbuffer *extra = evbuffer_new();
		if (extra)
			evbuffer_add_printf(extra, "Retry-After: 5\r\n");
		json_t *body = json_pack("{s:s}", "error", "too many /calls/stream readers");
		reply_json(ax, 503, body, extra);
		return;
	}
	/* The filter strings live in the exchange. */
	const char **dst[4] = {&f.method, &f.tool, &f.session, &f.outcome};
	for (size_t i = 0; i < 4; i++) {
		if (*dst[i]) {
			snprintf(ax->fval[i], sizeof(ax->fval[i]), "%s", *dst[i]);
			*dst[i] = ax->fval[i];
		}
	}
	ax->filter = f;
	ax->filter.since = 0;

	struct evbuffer *h = common_headers("text/event-stream");
	if (!h) {
		conn_abort(ax->c, "out of memory");
		return;
	}
	evbuffer_add_printf(h, "X-Accel-Buffering: no\r\n");
	conn_reply_head(ax->c, 200, h, -1);
	evbuffer_free(h);
	static const char hello[] = "retry: 2000\n: mcpwarden calls\n\n";
	stream_write(ax, hello, sizeof(hello) - 1);
	ax->kind = AX_STREAM;
	list_push(&adm->streams, ax);
	adm->nstreams++;
	__atomic_store_n(&adm->streams_open, (int)adm->nstreams, __ATOMIC_RELAXED);
	/* Catch up from the ring (oldest first), then live. */
	ax->next_seq = f.since + 1;
	ax->behind = 1;
	stream_pump(ax);
}

static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct admin *adm = arg;
	uint64_t now = clock_mono_us();
	unsigned ms = adm->ctx->cfg->timeouts.sse_keepalive_ms;
	uint64_t every = (uint64_t)(ms ? ms : ADMIN_KEEPALIVE_MS) * 1000u;
	(void)fd;
	(void)what;
	for (struct admin_x *ax = adm->streams; ax; ax = ax->next) {
		if (ax->dead || now - ax->last_write_us + 1000 < every || conn_output_full(ax->c))
			continue;
		stream_write(ax, ": keep-alive\n\n", 14);
	}
}

/* ---- the recorder's sink ---------------------------------------------------- */

/* One record's line in the call log (s[len] is its NUL, briefly the
 * newline). The ring and /calls keep every record whatever happens here;
 * the log is a copy for shippers. When a write fails (disk full), that is
 * logged once, the lines of the records that follow are counted as lost
 * and writing is tried again once a second; the first line that goes
 * through again is logged with the count. A line cut short by the failure
 * is truncated away where the log is a regular file, so a shipper never
 * reads half a record glued to the next one. */
static void log_line(struct admin *adm, char *s, size_t len)
{
	uint64_t now = clock_mono_us();
	if (adm->log_failed && now < adm->log_retry_us) {
		adm->log_lost++;
		return;
	}
	clearerr(adm->log);
	s[len] = '\n';
	int ok = fwrite(s, 1, len + 1, adm->log) == len + 1 && fflush(adm->log) == 0;
	int err = errno;
	s[len] = '\0';
	if (ok) {
		if (adm->log_failed)
			log_msg(LOG_WARN, "admin: the call log is written again; %llu records were not "
			                  "written to it (they are on /calls while the ring keeps them)",
			        (unsigned long long)adm->log_lost);
		adm->log_failed = 0;
		adm->log_lost = 0;
		/* Flushed, so the descriptor's offset (O_APPEND: the end) is
		 * where whole lines end; stdio's own idea may be stale after a
		 * truncation. */
		if (adm->log_good >= 0)
			adm->log_good = lseek(fileno(adm->log), 0, SEEK_CUR);
		return;
	}
	/* stdio dropped what it could not write; the file may end in part of
	 * this line. Not a regular file (stdout, a pipe): nothing to undo. */
	if (adm->log_good >= 0 && ftruncate(fileno(adm->log), adm->log_good) < 0)
		adm->log_good = -1;
	adm->log_lost++;
	adm->log_retry_us = now + ADMIN_LOG_RETRY_US;
	if (!adm->log_failed)
		log_msg(LOG_ERROR, "admin: writing the call log failed (%s): records still reach "
		                   "/calls; the log is tried again every second",
		        strerror(err));
	adm->log_failed = 1;
}

/* On worker 0's loop: new records for the /calls/stream readers. */
static void notify_run(void *arg)
{
	struct admin *adm = arg;
	/* Cleared first: a record made while we pump wakes us again. */
	__atomic_store_n(&adm->notify_pending, 0, __ATOMIC_RELEASE);
	for (struct admin_x *ax = adm->streams; ax; ax = ax->next) {
		if (ax->dead)
			continue;
		ax->behind = 1;
		stream_pump(ax);
	}
}

static void notify_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	notify_run(arg);
}

static void on_record(void *arg, struct hook_record_text *t, const struct ring_keys *keys)
{
	struct admin *adm = arg;
	(void)keys; /* they travel in the block */
	/* The recorder's buffer moves into the ring, no copy: what the slot
	 * held goes back to the recorder, which frees or reuses it once the
	 * lock is released. */
	struct ring_block *b = hook_record_text_block(t, ring_next_seq(adm->ring));
	char *s = b->block + (b->json - b->block); /* the ring's once swapped: under the lock */
	size_t len = b->len;

	if (ring_swap(adm->ring, b) == 0) {
		log_msg(LOG_WARN, "admin: a call record of %zu bytes was not kept", len);
		return;
	}
	if (adm->log)
		log_line(adm, s, len);
	/* Runs on whichever worker saw the call, holding adm->lock: the
	 * readers are told to look at the ring from their own loop. */
	if (__atomic_load_n(&adm->streams_open, __ATOMIC_RELAXED) &&
	    !__atomic_exchange_n(&adm->notify_pending, 1, __ATOMIC_ACQ_REL)) {
		if (pthread_equal(pthread_self(), adm->thread))
			event_active(adm->notify, 0, 0);
		else if (inbox_post(adm->ctx->inbox, notify_run, NULL, adm) < 0)
			__atomic_store_n(&adm->notify_pending, 0, __ATOMIC_RELEASE);
	}
}

/* ---- the adapter ---------------------------------------------------------- */

/* Constant time in the presented token: the time depends only on the
 * configured token's length. */
static int token_ok(const struct admin *adm, const char *header)
{
	if (!header || strncasecmp(header, "Bearer ", 7) != 0)
		return 0;
	const char *t = header + 7;
	while (*t == ' ')
		t++;
	size_t n = strlen(t);
	while (n > 0 && t[n - 1] == ' ')
		n--;
	unsigned char diff = n != adm->token_len;
	for (size_t i = 0; i < adm->token_len; i++)
		diff |= (unsigned char)((i < n ? (unsigned char)t[i] : 0) ^
		                        (unsigned char)adm->token[i]);
	return diff == 0;
}

/* Without a token the endpoint is on loopback: only loopback Host names
 * (a DNS-rebound name is refused) and same-host or no Origin. */
static int origin_ok(const struct http_msg *req)
{
	static const struct origin_policy loopback = {.loopback_only = 1};
	const char *host = http_msg_header(req, "host");
	return origin_host_allowed(&loopback, host) &&
	       origin_origin_allowed(&loopback, http_msg_header(req, "origin"), host);
}

static struct exchange *admin_start(struct conn *c, const struct http_msg *req,
                                    struct evbuffer *body)
{
	struct px_ctx *ctx = conn_ctx(c);
	struct admin *adm = ctx->admin;
	struct admin_x *ax = calloc(1, sizeof(*ax));

	evbuffer_free(body); /* no endpoint takes a body */
	if (!ax || !adm) {
		free(ax);
		conn_abort(c, "out of memory");
		return NULL;
	}
	ax->magic = ADMIN_X_MAGIC;
	ax->adm = adm;
	ax->c = c;

	const char *method = http_msg_method(req);
	const char *url = http_msg_url(req);
	char path[256];
	size_t plen = strcspn(url, "?");
	const char *qs = url[plen] == '?' ? url + plen + 1 : NULL;
	snprintf(path, sizeof(path), "%.*s", (int)(plen < sizeof(path) ? plen : sizeof(path) - 1),
	         url);

	int page = strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0;
	int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	if (adm->token && !token_ok(adm, http_msg_header(req, "authorization"))) {
		if (page && get)
			ep_page(ax, 401);
		else
			reply_error(ax, 401, "this admin endpoint needs Authorization: Bearer <admin.token>");
	} else if (!adm->token && !origin_ok(req)) {
		reply_error(ax, 403, "Host or Origin not allowed: without admin.token only loopback "
		                     "names and same-host pages are answered");
	} else if (!get) {
		reply_error(ax, 405, "only GET and HEAD");
	} else if (page) {
		ep_page(ax, 200);
	} else if (strcmp(path, "/calls") == 0) {
		ep_calls(ax, qs);
	} else if (strcmp(path, "/calls/inflight") == 0) {
		ep_inflight(ax, qs);
	} else if (strcmp(path, "/calls/stream") == 0) {
		if (strcmp(method, "HEAD") == 0) {
			struct evbuffer *h = common_headers("text/event-stream");
			conn_reply_head(c, 200, h, -1);
			if (h)
				evbuffer_free(h);
			conn_reply_end(c);
		} else {
			ep_stream(ax, req, qs);
		}
	} else if (strcmp(path, "/contract") == 0) {
		ep_contract(ax);
	} else if (strcmp(path, "/metrics") == 0) {
		ep_metrics(ax);
	} else if (strcmp(path, "/healthz") == 0) {
		ep_healthz(ax);
	} else if (strcmp(path, "/readyz") == 0) {
		ep_readyz(ax);
	} else {
		reply_error(ax, 404, "no admin endpoint at %.100s", path);
	}
	return (struct exchange *)ax;
}

static struct admin_x *ax_of(struct exchange *ex)
{
	struct admin_x *ax = (struct admin_x *)ex;
	assert(ax->magic == ADMIN_X_MAGIC);
	return ax;
}

static void admin_drained(struct exchange *ex)
{
	struct admin_x *ax = ax_of(ex);
	if (ax->kind == AX_STREAM)
		stream_pump(ax);
}

static void admin_shutdown(struct exchange *ex)
{
	struct admin_x *ax = ax_of(ex);
	if (ax->kind == AX_STREAM && !ax->dead) {
		ax->dead = 1;
		conn_reply_end(ax->c);
	}
}

static void admin_xfree(struct exchange *ex, const char *client_error)
{
	if (!ex)
		return;
	struct admin_x *ax = ax_of(ex);
	struct admin *adm = ax->adm;
	(void)client_error;
	if (ax->kind == AX_STREAM) {
		list_remove(&adm->streams, ax);
		adm->nstreams--;
		__atomic_store_n(&adm->streams_open, (int)adm->nstreams, __ATOMIC_RELAXED);
	} else if (ax->kind == AX_READY) {
		list_remove(&adm->ready_waiters, ax);
	}
	ax->magic = 0;
	free(ax);
}

static const struct transport_ops admin_ops = {
	.name = "admin",
	.low_priority = 1,
	.start = admin_start,
	.drained = admin_drained,
	.shutdown = admin_shutdown,
	.free = admin_xfree,
};

/* ---- set-up and teardown ---------------------------------------------------- */

static void relisten_cb(evutil_socket_t fd, short what, void *arg)
{
	struct admin *adm = arg;
	(void)fd;
	(void)what;
	/* The listener pauses at limits.max_connections like the client one,
	 * but only the client listener is told when connections close. */
	if (adm->lst)
		listener_update(adm->lst);
}

void admin_set_contract(struct admin *adm, const char *upstream, const json_t *report)
{
	char when[40];
	if (!adm || !upstream || !report)
		return;
	/* A reference, not a copy: a published report is never changed
	 * (admin.h), and copying a 1,000-tool report on every listing cost
	 * more than checking it. */
	json_t *copy = json_incref((json_t *)(uintptr_t)report);
	hook_record_time(clock_real_us(), when, sizeof(when));
	json_t *e = json_pack("{s:s,s:o}", "time", when, "report", copy);
	admin_lock(adm);
	if (e)
		json_object_set_new(adm->contract, upstream, e);
	metrics_set_contract(adm->m, upstream, report);
	admin_unlock(adm);
}

int admin_tls_load(const struct admin *adm, struct ssl_ctx_st **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!adm || !adm->tls)
		return 0;
	*out = tls_server_ctx_new(adm->tls_cert, adm->tls_key, err, errlen);
	return *out ? 0 : -1;
}

void admin_add_credentials(struct admin *adm, const struct px_config *cfg)
{
	if (adm && cfg)
		add_config_secrets(adm->rd, cfg);
}

void admin_tls_swap(struct admin *adm, struct ssl_ctx_st *tls)
{
	char what[512];
	if (!adm)
		return;
	/* The reload's configuration is this thread's now: its credentials
	 * (a new token in a header, say) join the masked values. */
	admin_add_credentials(adm, adm->ctx->cfg);
	if (!tls)
		return;
	/* Open connections hold a reference to the old context. */
	tls_ctx_free(adm->tls);
	adm->tls = tls;
	tls_describe(tls, what, sizeof(what));
	log_msg(LOG_INFO, "admin: new connections get TLS certificate %s", what);
}

/* HTTPS on the admin listener, as "tls" says. Returns 0 or -1 (errors in e). */
static int setup_tls(struct admin *adm, const struct admin_conf *ac, struct errs *e)
{
	char err[512], what[512];
	struct px_ctx *ctx = adm->ctx;

	if (ac->tls_listener && !ctx->tls_server) {
		errs_add(e, "$.admin.tls: \"listener\" needs TLS on the client listener (tls, or "
		            "--tls-cert and --tls-key)");
		return -1;
	}
	if (ac->tls_cert) {
		adm->tls = tls_server_ctx_new(ac->tls_cert, ac->tls_key, err, sizeof(err));
		adm->tls_cert = strdup(ac->tls_cert);
		adm->tls_key = strdup(ac->tls_key);
		if (!adm->tls || !adm->tls_cert || !adm->tls_key) {
			errs_add(e, "$.admin.tls: %s", adm->tls ? "out of memory" : err);
			return -1;
		}
	}
	adm->https = adm->tls || ac->tls_listener;
	if (adm->lst && adm->https) {
		listener_set_tls(adm->lst, adm->tls ? &adm->tls : &ctx->tls_server);
		tls_describe(adm->tls ? adm->tls : ctx->tls_server, what, sizeof(what));
		log_msg(LOG_INFO, "admin: TLS certificate %s%s", what,
		        adm->tls ? "" : " (the client listener's)");
	}
	return 0;
}

const char *admin_address(const struct admin *adm)
{
	return adm && adm->lst ? listener_address(adm->lst) : NULL;
}

void admin_free(struct admin *adm)
{
	if (!adm)
		return;
	assert(adm->streams == NULL && adm->ready_waiters == NULL);
	for (size_t i = 0; i < adm->nprobes; i++) {
		if (adm->probes[i].ev)
			event_free(adm->probes[i].ev);
		if (adm->probes[i].fd >= 0)
			evutil_closesocket(adm->probes[i].fd);
	}
	free(adm->probes);
	if (adm->keepalive)
		event_free(adm->keepalive);
	if (adm->relisten)
		event_free(adm->relisten);
	listener_free(adm->lst);
	tls_ctx_free(adm->tls);
	free(adm->tls_cert);
	free(adm->tls_key);
	hook_record_free(adm->rec);
	metrics_free(adm->m);
	ring_free(adm->ring);
	redact_free(adm->rd);
	if (adm->log && !adm->log_is_stdout)
		fclose(adm->log);
	else if (adm->log)
		fflush(adm->log);
	if (adm->token) {
		/* Not left behind in freed memory. */
		volatile char *t = adm->token;
		for (size_t i = 0; i < adm->token_len; i++)
			t[i] = 0;
		free(adm->token);
	}
	json_decref(adm->contract);
	if (adm->notify)
		event_free(adm->notify);
	if (adm->locked)
		pthread_mutex_destroy(&adm->lock);
	free(adm);
}

static int build_redact(struct admin *adm, const struct admin_conf *ac, struct errs *e)
{
	adm->rd = redact_new();
	if (!adm->rd)
		return -1;
	if (ac->redact_keys) {
		redact_clear_keys(adm->rd);
		for (size_t i = 0; i < json_array_size(ac->redact_keys); i++)
			if (redact_add_key(adm->rd, json_string_value(json_array_get(ac->redact_keys, i))) < 0)
				errs_add(e, "$.admin.redact_keys[%zu]: cannot be used", i);
	}
	for (size_t i = 0; ac->redact_values && i < json_array_size(ac->redact_values); i++)
		if (redact_add_value(adm->rd, json_string_value(json_array_get(ac->redact_values, i))) < 0)
			errs_add(e, "$.admin.redact_values[%zu]: cannot be used", i);
	add_config_secrets(adm->rd, adm->ctx->cfg);
	return e->count ? -1 : 0;
}

static int open_log(struct admin *adm, const char *target, struct errs *e)
{
	if (!target)
		return 0;
	if (strcmp(target, "stdout") == 0) {
		adm->log = stdout;
		adm->log_is_stdout = 1;
		adm->log_good = -1; /* never truncate what others may write to */
		return 0;
	}
	adm->log = fopen(target, "ae");
	if (!adm->log) {
		errs_add(e, "$.admin.log_calls: %s: %s", target, strerror(errno));
		return -1;
	}
	/* Where whole lines end (-1: not a regular file, nothing to undo). */
	struct stat st;
	adm->log_good = fstat(fileno(adm->log), &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
	return 0;
}

int admin_setup(struct px_ctx *ctx, char *err, size_t errlen)
{
	struct errs e = {.buf = err, .len = errlen};
	struct admin_conf ac = {0};
	struct admin *adm = NULL;

	if (err && errlen)
		err[0] = '\0';
	ctx->admin = NULL;
	parse_conf(&e, ctx->cfg->admin, &ac);
	if (e.count)
		goto fail;
	if (ac.off && !ac.log_calls)
		return 0;

	adm = calloc(1, sizeof(*adm));
	if (!adm)
		goto oom;
	adm->ctx = ctx;
	adm->thread = pthread_self();
	if (pthread_mutex_init(&adm->lock, NULL) != 0)
		goto oom;
	adm->locked = 1;
	adm->max_streams = ac.max_streams;
	adm->start_time = (double)clock_real_us() / 1e6;
	adm->ring = ring_new(ac.ring_size);
	adm->m = metrics_new(ac.max_labels);
	adm->contract = json_object();
	adm->notify = event_new(ctx->base, -1, 0, notify_cb, adm);
	if (!adm->ring || !adm->m || !adm->contract || !adm->notify ||
	    event_priority_set(adm->notify, PX_PRIO_LOW) < 0)
		goto oom;
	if (ac.token) {
		adm->token = strdup(ac.token);
		if (!adm->token)
			goto oom;
		adm->token_len = strlen(adm->token);
	}
	if (build_redact(adm, &ac, &e) < 0 || open_log(adm, ac.log_calls, &e) < 0)
		goto fail;
	probes_setup(adm);
	if (!adm->probes)
		goto oom;

	if (!ac.off) {
		/* Until ctx->admin is set nothing can reach the adapter: the
		 * listener only accepts once the loop runs. */
		char lerr[512];
		adm->lst = listener_new(ctx, ac.host, ac.port, &admin_ops, 0, lerr, sizeof(lerr));
		if (!adm->lst && !ac.listen_default) {
			errs_add(&e, "$.admin.listen: %s", lerr);
			goto fail;
		}
		if (!adm->lst)
			log_msg(LOG_WARN, "admin: %s; running without the admin endpoint (set "
			                  "admin.listen or --admin ADDRESS:PORT|off)", lerr);
		if (setup_tls(adm, &ac, &e) < 0)
			goto fail;
	}
	if (adm->lst) {
		struct timeval one = {1, 0};
		unsigned ms = ctx->cfg->timeouts.sse_keepalive_ms;
		ms = ms ? ms : ADMIN_KEEPALIVE_MS;
		/* Check quiet streams at a quarter of the interval: none stays
		 * silent much longer than the interval itself. */
		unsigned tick = ms / 4 ? ms / 4 : 1;
		struct timeval ka = {tick / 1000, (tick % 1000) * 1000};
		adm->keepalive = event_new(ctx->base, -1, EV_PERSIST, keepalive_cb, adm);
		adm->relisten = event_new(ctx->base, -1, EV_PERSIST, relisten_cb, adm);
		if (!adm->keepalive || !adm->relisten || event_add(adm->keepalive, &ka) < 0 ||
		    event_add(adm->relisten, &one) < 0)
			goto oom;
	}
	/* Last: once registered, the observer is called for every message. */
	adm->rec = hook_record_new(ctx->insp, adm->rd, adm->m, on_record, adm);
	if (!adm->rec) {
		errs_add(&e, "admin: cannot register the call recorder (too many hooks?)");
		goto fail;
	}
	/* The recorder takes adm->lock itself, only to publish (see
	 * hook_record_set_lock): its hooks run without it. */
	hook_record_set_lock(adm->rec, &adm->lock);
	ctx->admin = adm;
	if (adm->lst)
		log_msg(LOG_INFO, "admin endpoint on %s://%s/%s", adm->https ? "https" : "http",
		        listener_address(adm->lst), adm->token ? " (token required)" : "");
	if (ac.log_calls)
		log_msg(LOG_INFO, "admin: call records also go to %s", ac.log_calls);
	explicit_bzero(ac.tokbuf, sizeof(ac.tokbuf));
	return 0;
oom:
	errs_add(&e, "admin: out of memory");
fail:
	explicit_bzero(ac.tokbuf, sizeof(ac.tokbuf));
	admin_free(adm);
	return -1;
}

/* Whether fopen(path, "a") would succeed, without creating the file: the
 * file is writable, or it does not exist and its directory is. */
static int appendable(const char *path)
{
	if (access(path, W_OK) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	char dir[4096];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	if (n >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, n);
	dir[n] = '\0';
	return access(slash ? (n ? dir : "/") : ".", W_OK | X_OK);
}

int admin_check(const struct px_config *cfg, char *err, size_t errlen)
{
	struct errs e = {.buf = err, .len = errlen};
	struct admin_conf ac = {0};
	char why[512];

	if (err && errlen)
		err[0] = '\0';
	parse_conf(&e, cfg->admin, &ac);
	if (!e.count && !(ac.off && !ac.log_calls)) {
		/* build_redact's patterns, compiled and dropped. */
		struct redact *rd = redact_new();
		if (!rd)
			errs_add(&e, "admin: out of memory");
		for (size_t i = 0; rd && ac.redact_keys && i < json_array_size(ac.redact_keys); i++)
			if (redact_add_key(rd, json_string_value(json_array_get(ac.redact_keys, i))) < 0)
				errs_add(&e, "$.admin.redact_keys[%zu]: cannot be used", i);
		redact_free(rd);
		if (ac.log_calls && strcmp(ac.log_calls, "stdout") != 0 && appendable(ac.log_calls) < 0)
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

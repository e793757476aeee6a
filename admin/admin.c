/* admin: see admin.h. This file holds the endpoint's frame: the listener
 * and its TLS, routing and access (token or loopback names), replies,
 * /contract and /metrics (both pulled from other modules when asked), and
 * set-up and teardown. The jobs live in their own files: calls.c (/calls,
 * the stream, the recorder's sink), probes.c (/healthz, /readyz),
 * calllog.c (the call log file), admin_conf.c (the section), secrets.c
 * (the credentials masked in records), metrics.c (the exposition);
 * admin_int.h is what they share.
 *
 * Why this file is long (over 800 lines): the listener, access rule and
 * routing table are one unit; the two routes still here (/contract with
 * its accept, /metrics) are short and read the same state the router
 * holds. Splitting them would move admin_int.h's fields into more hands
 * for no reader's gain; a new route with its own job gets its own file,
 * like calls.c and probes.c.
 *
 * Not here: the HTTP framing (proxy/net/conn.c), the records' contents
 * (proxy/hooks/hook_record.c), the page's script (admin/page.html).
 */
#include "admin/admin.h"

#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "admin/admin_conf.h"
#include "admin/admin_int.h"
#include "admin/calllog.h"
#include "admin/contract_view.h"
#include "admin/metrics.h"
#include "admin/ring.h"
#include "admin/secrets.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/base/clock.h"
#include "proxy/base/errs.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/media.h"
#include "proxy/base/log.h"
#include "proxy/hooks/hook_contract.h"
#include "proxy/hooks/hook_record.h"
#include "proxy/hooks/hook_validate.h"
#include "proxy/hooks/redact.h"
#include "proxy/net/conn.h"
#include "proxy/net/http_parse.h"
#include "proxy/net/http_resp.h"
#include "proxy/net/listener.h"
#include "proxy/net/origin.h"
#include "proxy/net/tls.h"
#include "proxy/net/transport.h"

/* admin/page.html, linked in by admin/page_asset.S (.incbin). */
extern const char admin_page_start[];
extern const char admin_page_end[];

/* ---- replies --------------------------------------------------------------- */

struct evbuffer *admin_common_headers(const char *content_type)
{
	struct evbuffer *h = evbuffer_new();
	if (!h)
		return NULL;
	evbuffer_add_printf(h, "Content-Type: %s\r\n", content_type);
	evbuffer_add_printf(h, "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n");
	return h;
}

void admin_reply(struct admin_x *ax, int status, const char *content_type,
                 struct evbuffer *extra, const void *body, size_t len)
{
	struct evbuffer *h = admin_common_headers(content_type);
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

void admin_reply_json(struct admin_x *ax, int status, json_t *body, struct evbuffer *extra)
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
	admin_reply(ax, status, "application/json", extra, s, n + 1);
	free(s);
}

void admin_reply_error(struct admin_x *ax, int status, const char *fmt, ...)
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
	admin_reply_json(ax, status, body, extra);
}

void admin_pct_decode(const char *s, size_t len, char *out, size_t cap)
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

void admin_list_remove(struct admin_x **head, struct admin_x *ax)
{
	if (ax->prev)
		ax->prev->next = ax->next;
	else if (*head == ax)
		*head = ax->next;
	if (ax->next)
		ax->next->prev = ax->prev;
	ax->prev = ax->next = NULL;
}

void admin_list_push(struct admin_x **head, struct admin_x *ax)
{
	ax->prev = NULL;
	ax->next = *head;
	if (*head)
		(*head)->prev = ax;
	*head = ax;
}

void admin_lock(struct admin *adm)
{
	pthread_mutex_lock(&adm->lock);
	hook_record_drain_locked(adm->rec);
}

void admin_unlock(struct admin *adm)
{
	pthread_mutex_unlock(&adm->lock);
	hook_record_unlocked(adm->rec);
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
	admin_reply(ax, status, "text/html; charset=utf-8", extra, admin_page_start,
	      (size_t)(admin_page_end - admin_page_start));
}

/* ---- live baselines (issue 21) ---------------------------------------------- */

/* The "diff" member of an upstream's /contract entry (contract_view.h)
 * from what the hook published. New object, or NULL when out of memory. */
static json_t *contract_diff_of(struct hook_contract *hc, const char *upstream,
                                const struct hook_contract_published *pub)
{
	char when[40], digest[BASELINE_STORE_DIGEST_HEX];
	int has_digest = pub->can_accept && hook_contract_listing_digest(hc, upstream, digest) == 1;
	struct contract_view_baseline b = {
		.has_baseline = pub->has_baseline,
		.baseline_tools = pub->baseline_tools,
		.can_accept = pub->can_accept,
		.listing_sha256 = has_digest ? digest : NULL,
		.gate = hook_contract_gate_name(pub->gate),
		.accepted_by = pub->accepted_us ? pub->accepted_by : NULL,
	};
	if (pub->accepted_us) {
		hook_record_time(pub->accepted_us, when, sizeof(when));
		b.accepted_time = when;
	}
	return contract_view_diff(pub->report, &b);
}

static void ep_contract(struct admin_x *ax)
{
	struct admin *adm = ax->adm;
	const struct px_config *cfg = adm->ctx->cfg;
	json_t *body = json_object(), *ups = json_array();
	int oom = 0;

	if (!body || !ups) {
		json_decref(body);
		json_decref(ups);
		admin_reply_error(ax, 500, "out of memory");
		return;
	}
	/* Every configured upstream, in order, with null until a report came:
	 * pulled from the contract hook (a copy each: no reference crosses
	 * threads). */
	for (size_t i = 0; i < cfg->nups; i++) {
		struct hook_contract_published pub;
		char when[40];
		hook_contract_published(adm->ctx->proc->contract, cfg->ups[i].name, &pub);
		if (pub.report)
			hook_record_time(pub.time_us, when, sizeof(when));
		/* The live contract's per-tool summary beside the declared one
		 * (admin/contract_view.h): a copy the hook made for us. */
		json_t *live = hook_validate_summary(adm->ctx->proc->validate, cfg->ups[i].name);
		/* Live baselines (issue 21): the diff against the baseline,
		 * breaking first, and what accepting would do. */
		json_t *diff = contract_diff_of(adm->ctx->proc->contract, cfg->ups[i].name, &pub);
		json_t *entry = contract_view_upstream(cfg->ups[i].name, pub.report ? when : NULL,
		                                       pub.report, live);
		if (contract_view_add_diff(entry, diff) < 0 || json_array_append_new(ups, entry) < 0)
			oom = 1;
	}
	json_object_set_new(body, "upstreams", ups);
	/* Tool names and findings are the upstream's words: credentials it
	 * echoes there are masked as in records (rare endpoint, a copy). */
	json_t *shown = oom ? NULL : redact_json(adm->rd, body);
	json_decref(body);
	if (!shown) {
		admin_reply_error(ax, 500, "out of memory");
		return;
	}
	admin_reply_json(ax, 200, shown, NULL);
}

/* ---- /metrics -------------------------------------------------------------- */

/* What the admin endpoint knows itself for /metrics: the ring, the
 * in-flight calls, its streams, the probes' verdicts (on the upstreams a
 * source listed) and the start time. Under adm->lock. */
static void fill_own(struct admin *adm, struct metrics_snapshot *s)
{
	s->ring_capacity = ring_size(adm->ring);
	s->ring_records = ring_count(adm->ring);
	s->ring_dropped = ring_dropped(adm->ring);
	s->inflight_calls = hook_record_inflight_count(adm->rec);
	s->admin_streams = adm->nstreams;
	for (const struct admin_x *ax = adm->streams; ax; ax = ax->next)
		s->admin_streams_behind += ax->behind && !ax->dead;
	s->start_time_seconds = adm->start_time;
	for (size_t i = 0; s->ups && i < s->nups && i < adm->nprobes; i++)
		s->ups[i].reachable = adm->probes[i].up;
}

static void ep_metrics(struct admin_x *ax)
{
	struct admin *adm = ax->adm;
	struct metrics_snapshot s = {0};
	size_t len;

	/* Every other module's counters, from the sources registered with
	 * admin_add_metrics_source (their own getters, their own locks). */
	metrics_collect(adm->m, &s);
	/* The contract summaries, from the reports the hook published (pulled
	 * before taking adm->lock: the hook's lock is never taken under it). */
	const struct px_config *cfg = adm->ctx->cfg;
	json_t **reports = metrics_snapshot_alloc(&s, cfg->nups, sizeof(*reports));
	for (size_t i = 0; reports && i < cfg->nups; i++) {
		struct hook_contract_published pub;
		hook_contract_published(adm->ctx->proc->contract, cfg->ups[i].name, &pub);
		reports[i] = pub.report;
	}
	char *text = NULL;
	if (!s.oom) {
		admin_lock(adm);
		for (size_t i = 0; i < cfg->nups; i++)
			if (reports[i])
				metrics_set_contract(adm->m, cfg->ups[i].name, reports[i]);
		metrics_fold_validate(adm->m, &s);
		fill_own(adm, &s);
		text = metrics_render(adm->m, &s, &len);
		admin_unlock(adm);
	}
	for (size_t i = 0; reports && i < cfg->nups; i++)
		json_decref(reports[i]);
	metrics_snapshot_release(&s);
	if (!text) {
		admin_reply_error(ax, 500, "out of memory");
		return;
	}
	admin_reply(ax, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, text, len);
	free(text);
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

/* ---- POST /contract/<upstream>/accept (live baselines, issue 21) -------------- */

/* The longest accept body read: {"listing_sha256": "..."} with room. */
#define ACCEPT_BODY_MAX 1024

/* The upstream named by /contract/<name>/accept into name (decoded), or
 * 0 when path is not that route. */
static int accept_route(const char *path, char *name, size_t cap)
{
	static const char pre[] = "/contract/", suf[] = "/accept";
	size_t n = strlen(path), np = sizeof(pre) - 1, ns = sizeof(suf) - 1;
	if (n <= np + ns || strncmp(path, pre, np) != 0 || strcmp(path + n - ns, suf) != 0)
		return 0;
	const char *s = path + np;
	size_t len = n - np - ns;
	if (memchr(s, '/', len))
		return 0;
	admin_pct_decode(s, len, name, cap);
	return 1;
}

/* A JSON answer with extra header lines (printf), for this route's own
 * statuses (admin_reply_error's 405 names GET). */
static void accept_reply(struct admin_x *ax, int status, json_t *body, const char *extra)
{
	struct evbuffer *h = extra ? evbuffer_new() : NULL;
	if (h)
		evbuffer_add_printf(h, "%s", extra);
	admin_reply_json(ax, status, body, h);
}

static void accept_error(struct admin_x *ax, int status, const char *extra, const char *msg,
                         const char *upstream)
{
	json_t *b = json_pack("{s:s}", "error", msg);
	if (b && upstream)
		json_object_set_new(b, "upstream", json_string(upstream));
	accept_reply(ax, status, b, extra);
}

/* Who may accept. With admin.token: its holder only, even on loopback (no
 * Authorization: 401; another token: 403). Without: the loopback rules of
 * every admin request. Either way a browser page of another origin is
 * refused (its Origin), and the body must be declared JSON: a form post
 * or any other "simple" request cannot carry that without a CORS
 * preflight, which this endpoint never grants. Returns 1 when allowed
 * (else answered). */
static int accept_allowed(struct admin_x *ax, const struct http_msg *req, const char **how)
{
	static const struct origin_policy same_host = {0};
	const struct admin *adm = ax->adm;
	const char *auth = http_msg_header(req, "authorization");
	const char *host = http_msg_header(req, "host");
	*how = adm->token ? "admin token" : "loopback, no token configured";
	if (adm->token && (!auth || strncasecmp(auth, "Bearer ", 7) != 0)) {
		accept_error(ax, 401, "WWW-Authenticate: Bearer realm=\"mcpwarden admin\"\r\n",
		             "accepting a baseline needs Authorization: Bearer <admin.token>", NULL);
		return 0;
	}
	if (adm->token && !token_ok(adm, auth)) {
		accept_error(ax, 403, NULL, "this token may not accept baselines", NULL);
		return 0;
	}
	if ((!adm->token && !origin_ok(req)) ||
	    !origin_origin_allowed(&same_host, http_msg_header(req, "origin"), host)) {
		accept_error(ax, 403, NULL, "Host or Origin not allowed to accept a baseline", NULL);
		return 0;
	}
	return 1;
}

/* The accept's body: empty, {}, or {"listing_sha256": "<the digest
 * /contract showed>"} to accept only the listing that was reviewed. Fills
 * want ("" when none is named). Returns 0, or -1 after answering 400. */
static int accept_body(struct admin_x *ax, struct evbuffer *body,
                       char want[BASELINE_STORE_DIGEST_HEX])
{
	size_t len = body ? evbuffer_get_length(body) : 0;
	want[0] = '\0';
	if (len == 0)
		return 0;
	if (len > ACCEPT_BODY_MAX) {
		accept_error(ax, 400, NULL, "the body is too long: {} or {\"listing_sha256\": \"...\"}",
		             NULL);
		return -1;
	}
	json_t *j = json_loadb((const char *)evbuffer_pullup(body, -1), len, 0, NULL);
	const json_t *d = json_object_get(j, "listing_sha256");
	const char *s = json_string_value(d);
	int ok = json_is_object(j) && (!d || (s && strlen(s) == BASELINE_STORE_DIGEST_HEX - 1 &&
	                                      strspn(s, "0123456789abcdef") == strlen(s)));
	if (ok && s)
		memcpy(want, s, BASELINE_STORE_DIGEST_HEX);
	json_decref(j);
	if (!ok)
		accept_error(ax, 400, NULL, "the body must be {} or {\"listing_sha256\": \"<64 "
		                            "lowercase hex digits, as /contract shows>\"}", NULL);
	return ok ? 0 : -1;
}

static void ep_accept(struct admin_x *ax, const struct http_msg *req, const char *method,
                      const char *upstream, struct evbuffer *body)
{
	struct hook_contract_accepted out;
	char err[512], by[96], safe[128], want[BASELINE_STORE_DIGEST_HEX];
	const char *how;

	int bad = !accept_allowed(ax, req, &how);
	if (!bad && strcmp(method, "POST") != 0) {
		accept_error(ax, 405, "Allow: POST\r\n", "only POST", NULL);
		bad = 1;
	}
	if (!bad && !media_is_json(http_msg_header(req, "content-type"))) {
		accept_error(ax, 415, NULL, "send Content-Type: application/json (the body may be {})",
		             NULL);
		bad = 1;
	}
	bad = bad || accept_body(ax, body, want) < 0;
	evbuffer_free(body);
	if (bad)
		return;
	/* The peer's address and how it was let in: never the token. */
	snprintf(by, sizeof(by), "%s (%s)", conn_peer(ax->c), how);
	enum hook_contract_accept_rc rc =
		hook_contract_accept(ax->adm->ctx->proc->contract, upstream, by, want[0] ? want : NULL,
		                     &out, err, sizeof(err));
	snprintf(safe, sizeof(safe), "%s", upstream);
	for (char *p = safe; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	switch (rc) {
	case HOOK_CONTRACT_ACCEPT_UNKNOWN:
		accept_error(ax, 404, NULL, "no such upstream", upstream);
		return;
	case HOOK_CONTRACT_ACCEPT_NO_LISTING:
		accept_error(ax, 409, NULL, "no complete tool listing from this upstream yet (or its "
		                            "contract is off): nothing to accept", upstream);
		return;
	case HOOK_CONTRACT_ACCEPT_STALE:
		/* Nothing changed: the reviewer looks again. */
		log_msg(LOG_WARN, "admin: contract baseline of upstream %s NOT accepted (by %s): the "
		                  "listing changed since it was reviewed", safe, by);
		accept_error(ax, 409, NULL, "the listing changed since it was reviewed (its "
		                            "listing_sha256 differs): look at /contract again", upstream);
		return;
	case HOOK_CONTRACT_ACCEPT_FAILED:
		log_msg(LOG_ERROR, "admin: contract baseline of upstream %s NOT accepted (by %s): %s",
		        safe, by, err);
		accept_error(ax, 500, NULL, err, upstream);
		return;
	case HOOK_CONTRACT_ACCEPTED:
		break;
	}
	if (out.file_warning)
		log_msg(LOG_WARN, "admin: contract baseline of upstream %s: %s", safe, err);
	log_msg(LOG_INFO, "admin: contract baseline of upstream %s accepted by %s: %zu tools%s%s",
	        safe, by, out.ntools, out.file ? ", written to " : ", in memory only (no contract.baseline file)",
	        out.file ? out.file : "");
	char when[40];
	hook_record_time(clock_real_us(), when, sizeof(when));
	json_t *b = json_pack("{s:s,s:b,s:I,s:s?,s:s,s:s}", "upstream", upstream, "accepted", 1,
	                      "tools", (json_int_t)out.ntools, "baseline", out.file, "time", when,
	                      "by", by);
	accept_reply(ax, 200, b, NULL);
}

static struct exchange *admin_start(struct conn *c, const struct http_msg *req,
                                    struct evbuffer *body)
{
	struct px_ctx *ctx = conn_ctx(c);
	struct admin *adm = ctx->proc->admin;
	struct admin_x *ax = calloc(1, sizeof(*ax));

	if (!ax || !adm) {
		evbuffer_free(body);
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
	char accept_up[128];
	if (accept_route(path, accept_up, sizeof(accept_up))) {
		/* Live baselines (issue 21): its own access rules and methods;
		 * the one endpoint that reads a body. */
		ep_accept(ax, req, method, accept_up, body);
		return (struct exchange *)ax;
	}
	evbuffer_free(body);
	if (adm->token && !token_ok(adm, http_msg_header(req, "authorization"))) {
		if (page && get)
			ep_page(ax, 401);
		else
			admin_reply_error(ax, 401, "this admin endpoint needs Authorization: Bearer <admin.token>");
	} else if (!adm->token && !origin_ok(req)) {
		admin_reply_error(ax, 403, "Host or Origin not allowed: without admin.token only loopback "
		                     "names and same-host pages are answered");
	} else if (!get) {
		admin_reply_error(ax, 405, "only GET and HEAD");
	} else if (page) {
		ep_page(ax, 200);
	} else if (strcmp(path, "/calls") == 0) {
		calls_list(ax, qs);
	} else if (strcmp(path, "/calls/inflight") == 0) {
		calls_inflight(ax, qs);
	} else if (strcmp(path, "/calls/stream") == 0) {
		if (strcmp(method, "HEAD") == 0) {
			struct evbuffer *h = admin_common_headers("text/event-stream");
			conn_reply_head(c, 200, h, -1);
			if (h)
				evbuffer_free(h);
			conn_reply_end(c);
		} else {
			calls_stream(ax, req, qs);
		}
	} else if (strcmp(path, "/contract") == 0) {
		ep_contract(ax);
	} else if (strcmp(path, "/metrics") == 0) {
		ep_metrics(ax);
	} else if (strcmp(path, "/healthz") == 0) {
		probes_healthz(ax);
	} else if (strcmp(path, "/readyz") == 0) {
		probes_readyz(ax);
	} else {
		admin_reply_error(ax, 404, "no admin endpoint at %.100s", path);
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
		calls_stream_pump(ax);
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
		admin_list_remove(&adm->streams, ax);
		adm->nstreams--;
		__atomic_store_n(&adm->streams_open, (int)adm->nstreams, __ATOMIC_RELAXED);
	} else if (ax->kind == AX_READY) {
		admin_list_remove(&adm->ready_waiters, ax);
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
	/* The HTTP layer's own refusals on the admin port (408, 413, 431, a
	 * client over its share) answer as the MCP port's do. */
	.error_body = http_resp_jrpc_error_body,
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
		secrets_add_config(adm->rd, cfg);
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

int admin_add_metrics_source(struct admin *adm, const char *name, metrics_source_fn fn,
                             void *arg)
{
	return adm ? metrics_add_source(adm->m, name, fn, arg) : 0;
}

/* capture */
struct redact *admin_redactor(struct admin *adm)
{
	return adm ? adm->rd : NULL;
}

void admin_reopen_log(struct admin *adm)
{
	char err[512];
	if (!adm || !adm->log) {
		log_msg(LOG_INFO, "SIGUSR1: no call log file to reopen");
		return;
	}
	/* Records finished before are written to the old file by
	 * admin_lock; those that finish meanwhile wait for the unlock and
	 * go to the new one. */
	admin_lock(adm);
	int rc = calllog_reopen(adm->log, err, sizeof(err));
	admin_unlock(adm);
	if (rc < 0)
		log_msg(LOG_ERROR, "SIGUSR1: cannot reopen the call log (%s); still writing to the "
		                   "file it had open", err);
	else
		log_msg(LOG_INFO, "SIGUSR1: call log %s reopened", calllog_path(adm->log));
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
	probes_free(adm);
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
	calllog_free(adm->log);
	if (adm->token) {
		/* Not left behind in freed memory. */
		volatile char *t = adm->token;
		for (size_t i = 0; i < adm->token_len; i++)
			t[i] = 0;
		free(adm->token);
	}
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
	secrets_add_config(adm->rd, adm->ctx->cfg);
	return e->count ? -1 : 0;
}

int admin_setup(struct px_ctx *ctx, char *err, size_t errlen)
{
	struct errs e = {.buf = err, .len = errlen};
	struct admin_conf ac = {0};
	struct admin *adm = NULL;

	if (err && errlen)
		err[0] = '\0';
	ctx->proc->admin = NULL;
	admin_conf_parse(&e, ctx->cfg->admin, &ac);
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
	adm->ready_requires_contract = ac.ready_requires_contract; /* issue 21 */
	adm->probe_conf = ac.probe; /* readiness probes (issue 23) */
	adm->start_time = (double)clock_real_us() / 1e6;
	adm->ring = ring_new(ac.ring_size);
	adm->m = metrics_new(ac.max_labels);
	adm->notify = event_new(ctx->base, -1, 0, calls_notify_cb, adm);
	if (!adm->ring || !adm->m || !adm->notify ||
	    event_priority_set(adm->notify, PX_PRIO_LOW) < 0)
		goto oom;
	if (ac.token) {
		adm->token = strdup(ac.token);
		if (!adm->token)
			goto oom;
		adm->token_len = strlen(adm->token);
	}
	if (build_redact(adm, &ac, &e) < 0 || (ac.log_calls && !(adm->log = calllog_open(ac.log_calls, &e))))
		goto fail;
	probes_setup(adm);
	if (!adm->probes)
		goto oom;

	if (!ac.off) {
		/* Until ctx->proc->admin is set nothing can reach the adapter: the
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
		adm->keepalive = event_new(ctx->base, -1, EV_PERSIST, calls_keepalive_cb, adm);
		adm->relisten = event_new(ctx->base, -1, EV_PERSIST, relisten_cb, adm);
		if (!adm->keepalive || !adm->relisten || event_add(adm->keepalive, &ka) < 0 ||
		    event_add(adm->relisten, &one) < 0)
			goto oom;
	}
	/* Last: once registered, the observer is called for every message. */
	adm->rec = hook_record_new(ctx->insp, adm->rd, &calls_sink, adm);
	/* Records are written as JSON text when they are read (issue 20),
	 * but for the call log, which reads each one as it comes: with it,
	 * the recorder writes the text per call, once, and the ring keeps it. */
	if (adm->rec && adm->log)
		hook_record_set_text_now(adm->rec, 1);
	else if (adm->rec)
		ring_set_text(adm->ring, hook_record_stored_text);
	if (!adm->rec) {
		errs_add(&e, "admin: cannot register the call recorder (too many hooks?)");
		goto fail;
	}
	hook_record_set_tools(adm->rec, ctx->proc->tools);
	/* The recorder takes adm->lock itself, only to publish (see
	 * hook_record_set_lock): its hooks run without it. */
	hook_record_set_lock(adm->rec, &adm->lock);
	ctx->proc->admin = adm;
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

int admin_check(const struct px_config *cfg, char *err, size_t errlen)
{
	return admin_conf_check(cfg, err, errlen);
}

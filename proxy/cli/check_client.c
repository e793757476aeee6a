/* check_client: see check_client.h.
 * Why this file is long (~1.2k lines): it is one state machine: the steps, the HTTP
 * exchanges, redirects and fallbacks all read and write struct chk, so a
 * split would have to export that struct and its transitions.
 *
 * The client is driven by one state machine. Callbacks from the upstream
 * module only record what happened and activate `kick`; every decision
 * (next request, redirect, fallback, failure) is taken in advance(), from
 * the loop, where freeing an exchange is safe.
 *
 *   streamable_http:  [discover] ─▶ initialize ─▶ initialized ─▶ list… ─▶ DELETE
 *                        │ modern era (2026-07-28): no session
 *                        └──────────────────────────────▶ list…
 *   sse (2024-11-05): GET stream ─endpoint event─▶ initialize ─▶ initialized
 *                     ─▶ list… (POSTs answered 202, replies on the stream)
 *
 * auto tries streamable_http, then sse (sse first when the URL ends in
 * /sse), both on the URL as given: the proxy's own rule, from the same
 * functions (upstream_sse_auto_first, _probe_refused, _stream_refused in
 * proxy/mcp/upstream_sse.h), so that check passes exactly where the proxy in
 * front of the same URL works. Redirects (at most 3) are followed on the first request of an
 * attempt only; one to another origin stops sending the --header values
 * and the URL's user:password (whose password goes into the secrets, so
 * cli_emit masks it as ••••).
 */
#include "proxy/cli/check_client.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "checks/contract.h"
#include "proxy/base/b64.h"
#include "proxy/base/clock.h"
#include "proxy/base/envx.h"
#include "proxy/config.h"
#include "proxy/net/http_parse.h"
#include "proxy/base/limits.h"
#include "proxy/base/sse.h"
#include "proxy/net/upstream.h"
#include "proxy/mcp/upstream_sse.h"
#include "proxy/base/media.h"
#include "proxy/base/version.h"

#define CHECK_CLIENT_NAME    "mcpwarden-check"
/* issue 22: the proxy's own version (proxy/base/version.h). */
#define CHECK_CLIENT_VERSION version_get()
#define CHECK_MAX_REPLY      (8u * 1024 * 1024) /* one reply, or one SSE event */
#define CHECK_MAX_REDIRECTS  3
#define LEGACY_VERSION       "2025-11-25" /* newest initialize-era version */
#define MODERN_VERSION       "2026-07-28"
#define META_VERSION_KEY     "io.modelcontextprotocol/protocolVersion"
/* What check prints of a server's error body, at most (UTF-8 bytes). */
#define CHECK_REASON_MAX     300

enum transport { TR_STREAMABLE = 0, TR_SSE };
static const char *const transport_names[] = {"streamable_http", "sse"};

enum chk_state {
	ST_SSE_OPEN,     /* legacy GET in flight; waiting for the endpoint event */
	ST_DISCOVER,     /* server/discover in flight (era probe) */
	ST_INIT,         /* initialize in flight */
	ST_INITIALIZED,  /* notifications/initialized in flight */
	ST_LIST,         /* a tools/list page in flight */
	ST_CALL,         /* target call call_i in flight (replay: calls given) */
	ST_DELETE,       /* DELETE of the session in flight (best effort) */
	ST_DONE,         /* the loop is being left */
};

struct chk;

/* One HTTP exchange. Filled by the upstream callbacks, read by advance(). */
struct hreq {
	struct chk *chk;             /* borrowed */
	struct upstream_req *ur;     /* owned */
	int status;                  /* 0 until the head arrived */
	int is_sse, is_json;
	int stream;                  /* the legacy GET stream: events go to chk */
	char *session;               /* owned: Mcp-Session-Id of the reply */
	char *location;              /* owned: Location of the reply */
	char *ctype;                 /* owned: Content-Type of the reply, or NULL */
	char *www_auth;              /* owned: WWW-Authenticate of the reply, or NULL */
	struct evbuffer *body;       /* owned: non-SSE body (bounded) */
	struct sse_reader *sse;      /* owned */
	size_t nbytes;
	json_int_t want_id;          /* the response this exchange waits for, 0: none */
	int sent_session;            /* the request carried Mcp-Session-Id */
	json_t *reply;               /* owned: that response, or a JSON-RPC error body */
	int finished;                /* 1 ended, -1 failed */
	const char *error;           /* static, when failed */
};

struct chk {
	const struct check_client_target *o; /* borrowed */
	struct event_base *base;       /* owned */
	struct upstream_opts uo;       /* the loop and the limits of every upstream */
	struct event *kick, *timer;    /* owned */
	struct px_upstream_conf url;   /* owned strings: the URL of this attempt */
	struct upstream *up;           /* owned: one per origin */
	char *basic_auth;              /* owned: from the user's URL, or NULL */
	int cross_origin;              /* redirected elsewhere: no headers, no auth */
	enum transport tr;
	int tried[2];                  /* per transport */
	int first_pending;             /* the attempt's first request unanswered */
	int redirects;
	enum chk_state st;
	struct hreq *h;                /* owned: the exchange in flight */
	struct hreq *stream;           /* owned: the legacy GET stream */
	char *post_target;             /* owned: legacy POST target (endpoint event) */
	json_t *legacy_reply;          /* owned: a response that came on the stream */
	json_int_t pending_id;
	char *session;                 /* owned */
	char *era;                     /* owned: negotiated protocol version */
	int modern;                    /* 2026-07-28 envelope, no session */
	int reinit_used;
	json_int_t next_id;
	json_t *pages;                 /* owned */
	json_t *notes;                 /* owned: array of strings */
	size_t call_i;                 /* the next or current of o->calls */
	json_t *replies;               /* owned: one per call done (header) */
	uint64_t sent_us;              /* when the call in flight was sent */
	const char *mcp_name;          /* borrowed during send_rpc: Mcp-Name */
	const json_t *call_headers;    /* borrowed during send_rpc: the call's "headers" */
	const char *waiting_for;       /* static: what the timer guards */
	int timed_out;
	int exit_code;
	char *error;                   /* owned: why it failed */
	char *url_shown;               /* owned: printable form of the user's URL */
};

static void advance(struct chk *c);
static void start_init(struct chk *c);
static void start_list(struct chk *c, const char *cursor);
static void start_sse(struct chk *c);
static void start_streamable(struct chk *c);
static void session_up(struct chk *c);
static void list_done(struct chk *c);
static void http_reason(const struct hreq *h, char *buf, size_t cap);

static void note(struct chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct chk *c, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n >= 0)
		json_array_append_new(c->notes, json_string(s));
	free(s);
}

static void url_clear(struct px_upstream_conf *u)
{
	free(u->name);
	free(u->host);
	free(u->port);
	free(u->target);
	free(u->host_header);
	free(u->basic_auth);
	free(u->url_safe);
	memset(u, 0, sizeof(*u));
}

static void hreq_free(struct hreq *h)
{
	if (!h)
		return;
	upstream_req_free(h->ur);
	free(h->session);
	free(h->location);
	free(h->ctype);
	free(h->www_auth);
	if (h->body)
		evbuffer_free(h->body);
	sse_reader_free(h->sse);
	json_decref(h->reply);
	free(h);
}

static void kick(struct chk *c)
{
	event_active(c->kick, 0, 0);
}

static void hreq_fail(struct hreq *h, const char *why)
{
	if (h->finished)
		return;
	h->finished = -1;
	h->error = why;
	kick(h->chk);
}

static int is_response(const json_t *m)
{
	return json_is_object(m) && json_object_get(m, "id") &&
	       (json_object_get(m, "result") || json_object_get(m, "error"));
}

static int id_is(const json_t *m, json_int_t id)
{
	const json_t *v = json_object_get(m, "id");
	return json_is_integer(v) && json_integer_value(v) == id;
}

/* Legacy stream events: the endpoint, then every server message. */
static void stream_event(struct chk *c, const struct sse_event *ev)
{
	int is_endpoint = ev->event && ev->event_len == 8 && memcmp(ev->event, "endpoint", 8) == 0;
	if (is_endpoint && ev->data && !c->post_target) {
		char *t = strndup(ev->data, ev->data_len);
		if (t)
			c->post_target = t;
		kick(c);
		return;
	}
	if (ev->event && !(ev->event_len == 7 && memcmp(ev->event, "message", 7) == 0))
		return;
	if (!ev->data || !c->pending_id)
		return;
	json_t *m = json_loadb(ev->data, ev->data_len, 0, NULL);
	if (is_response(m) && id_is(m, c->pending_id) && !c->legacy_reply) {
		c->legacy_reply = m;
		kick(c);
		return;
	}
	json_decref(m); /* notifications (tools/list_changed…) and the rest */
}

static int on_sse_event(void *arg, const struct sse_event *ev, const char *comment,
                        size_t comment_len)
{
	struct hreq *h = arg;
	(void)comment;
	(void)comment_len;
	if (!ev || !ev->data || ev->data_len == 0)
		return 0;
	if (h->stream) {
		stream_event(h->chk, ev);
		return 0;
	}
	json_t *m = json_loadb(ev->data, ev->data_len, 0, NULL);
	if (is_response(m) && id_is(m, h->want_id)) {
		json_decref(h->reply);
		h->reply = m;
		return 1; /* got it: stop reading, the exchange is over */
	}
	json_decref(m);
	return 0;
}

static int up_on_head(void *arg, const struct http_msg *resp)
{
	struct hreq *h = arg;
	const char *ct = http_msg_get(resp, HH_CONTENT_TYPE);
	const char *sid = http_msg_get(resp, HH_MCP_SESSION_ID);
	const char *loc = http_msg_get(resp, HH_LOCATION);

	h->status = http_msg_status(resp);
	h->is_sse = media_is(ct, "text/event-stream");
	h->is_json = media_is_json(ct);
	if (sid)
		h->session = strdup(sid);
	if (loc)
		h->location = strdup(loc);
	if (ct)
		h->ctype = strdup(ct);
	const char *wa = http_msg_header(resp, "WWW-Authenticate");
	if (wa)
		h->www_auth = strdup(wa);
	if (h->is_sse && h->status / 100 == 2) {
		upstream_req_stream(h->ur);
		h->sse = sse_reader_new(CHECK_MAX_REPLY);
		if (!h->sse) {
			hreq_fail(h, "out of memory");
			return -1;
		}
	} else {
		h->body = evbuffer_new();
		if (!h->body) {
			hreq_fail(h, "out of memory");
			return -1;
		}
	}
	if (h->stream)
		kick(h->chk); /* the head alone may decide (status, type) */
	return 0;
}

static int up_on_body(void *arg, const char *data, size_t len)
{
	struct hreq *h = arg;
	h->nbytes += len;
	if (h->sse) {
		/* The legacy stream lives long: only each event is bounded. */
		if (!h->stream && h->nbytes > CHECK_MAX_REPLY) {
			hreq_fail(h, "the reply is over 8 MiB");
			return -1;
		}
		int rc = sse_reader_feed(h->sse, data, len, on_sse_event, h);
		if (rc == SSE_ERR_TOO_BIG) {
			hreq_fail(h, "an SSE event of the reply is over 8 MiB");
			return -1;
		}
		if (rc != 0) {
			h->finished = 1;
			kick(h->chk);
			return -1;
		}
		return 0;
	}
	if (h->nbytes > CHECK_MAX_REPLY) {
		hreq_fail(h, "the reply is over 8 MiB");
		return -1;
	}
	return evbuffer_add(h->body, data, len);
}

static void up_on_done(void *arg)
{
	struct hreq *h = arg;
	if (h->body && evbuffer_get_length(h->body) && (h->is_json || h->status / 100 != 2)) {
		size_t len = evbuffer_get_length(h->body);
		json_t *j = json_loadb((const char *)evbuffer_pullup(h->body, -1), len, JSON_DECODE_ANY,
		                       NULL);
		json_t *found = NULL;
		if (json_is_array(j)) {
			for (size_t i = 0; i < json_array_size(j) && !found; i++)
				if (is_response(json_array_get(j, i)) && id_is(json_array_get(j, i), h->want_id))
					found = json_incref(json_array_get(j, i));
			json_decref(j);
		} else if (json_is_object(j)) {
			found = j;
		} else {
			json_decref(j);
		}
		json_decref(h->reply);
		h->reply = found;
	}
	h->finished = 1;
	kick(h->chk);
}

static void up_on_error(void *arg, enum upstream_err err, const char *detail)
{
	(void)err;
	hreq_fail(arg, detail);
}

static const struct upstream_req_cbs hreq_cbs = {up_on_head, up_on_body, up_on_done, up_on_error};

static void timer_arm(struct chk *c, const char *what)
{
	double s = c->o->timeout_s;
	struct timeval tv = {(time_t)s, (suseconds_t)((s - floor(s)) * 1e6)};
	c->waiting_for = what;
	evtimer_add(c->timer, &tv);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct chk *c = arg;
	(void)fd;
	(void)what;
	c->timed_out = 1;
	advance(c);
}

static void kick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	advance(arg);
}

/* jansson's object iterator takes json_t * but never modifies the object. */
static json_t *mut(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

/* Mcp-Name and Mcp-Param-* (STATELESS-2026.md 2.2): as is when
 * header-safe (VCHAR, inner spaces) and not shaped like the sentinel, else
 * =?base64?...?=. */
static void add_mcp_value(struct evbuffer *req, const char *name, const char *v)
{
	size_t n = strlen(v);
	int safe = n > 0 && v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t' &&
	           strncmp(v, "=?base64?", 9) != 0;
	for (size_t i = 0; safe && i < n; i++)
		safe = (v[i] >= 0x21 && v[i] <= 0x7e) || v[i] == ' ' || v[i] == '\t';
	if (safe) {
		evbuffer_add_printf(req, "%s: %s\r\n", name, v);
		return;
	}
	char *enc = malloc(b64_encoded_len(n) + 1);
	if (!enc)
		return; /* the server answers -32020: recorded like any reply */
	enc[b64_encode(v, n, enc)] = '\0';
	evbuffer_add_printf(req, "%s: =?base64?%s?=\r\n", name, enc);
	free(enc);
}

/* Starts an HTTP exchange on the current origin. body is borrowed. */
static struct hreq *hreq_start(struct chk *c, const char *method, const char *target,
                               const json_t *body, json_int_t want_id, const char *mcp_method,
                               int stream)
{
	struct hreq *h = calloc(1, sizeof(*h));
	struct evbuffer *req = evbuffer_new();
	char *json = body ? json_dumps(body, JSON_COMPACT) : NULL;

	if (!h || !req || (body && !json)) {
		free(h);
		free(json);
		if (req)
			evbuffer_free(req);
		return NULL;
	}
	h->chk = c;
	h->want_id = want_id;
	h->stream = stream;
	evbuffer_add_printf(req, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s/%s\r\n", method,
	                    target, c->url.host_header, CHECK_CLIENT_NAME, CHECK_CLIENT_VERSION);
	evbuffer_add_printf(req, "Accept: %s\r\n", strcmp(method, "GET") == 0
	                                                   ? "text/event-stream"
	                                                   : "application/json, text/event-stream");
	int user_auth = 0;
	if (!c->cross_origin) {
		for (size_t i = 0; i < c->o->nheaders; i++) {
			evbuffer_add_printf(req, "%s: %s\r\n", c->o->headers[i].name, c->o->headers[i].wire);
			user_auth |= strcasecmp(c->o->headers[i].name, "authorization") == 0;
		}
		if (c->basic_auth && !user_auth)
			evbuffer_add_printf(req, "Authorization: %s\r\n", c->basic_auth);
	}
	if (c->tr == TR_STREAMABLE) {
		if (c->session) {
			evbuffer_add_printf(req, "Mcp-Session-Id: %s\r\n", c->session);
			h->sent_session = 1;
		}
		if (c->modern)
			evbuffer_add_printf(req, "MCP-Protocol-Version: %s\r\nMcp-Method: %s\r\n", c->era,
			                    mcp_method);
		else if (c->era)
			evbuffer_add_printf(req, "MCP-Protocol-Version: %s\r\n", c->era);
		if (c->modern && c->mcp_name)
			add_mcp_value(req, "Mcp-Name", c->mcp_name);
		const char *hk;
		const json_t *hv;
		json_object_foreach(mut(c->call_headers), hk, hv)
			if (json_is_string(hv))
				add_mcp_value(req, hk, json_string_value(hv));
	}
	if (json) {
		evbuffer_add_printf(req, "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
		                    strlen(json));
		evbuffer_add(req, json, strlen(json));
		free(json);
	} else if (strcmp(method, "GET") == 0) {
		evbuffer_add_printf(req, "Cache-Control: no-cache\r\n\r\n");
	} else {
		evbuffer_add_printf(req, "Content-Length: 0\r\n\r\n");
	}
	h->ur = upstream_req_new(c->up, req, 0, &hreq_cbs, h);
	if (!h->ur) {
		free(h);
		return NULL;
	}
	return h;
}

static void finish(struct chk *c)
{
	c->st = ST_DONE;
	event_del(c->timer);
	event_base_loopbreak(c->base);
}

static void start_delete(struct chk *c)
{
	hreq_free(c->h);
	c->h = NULL;
	if (c->tr != TR_STREAMABLE || !c->session || c->modern) {
		finish(c);
		return;
	}
	c->st = ST_DELETE;
	c->h = hreq_start(c, "DELETE", c->url.target, NULL, 0, NULL, 0);
	if (!c->h) {
		finish(c);
		return;
	}
	timer_arm(c, "DELETE of the session");
}

/* Records the first failure, ends the session if there is one, and stops. */
static void fail(struct chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct chk *c, const char *fmt, ...)
{
	if (!c->error) {
		va_list ap;
		va_start(ap, fmt);
		if (vasprintf(&c->error, fmt, ap) < 0)
			c->error = NULL;
		va_end(ap);
		c->exit_code = CLI_EXIT_ERROR;
	}
	if (c->st == ST_DELETE || c->st == ST_DONE) {
		finish(c);
		return;
	}
	start_delete(c);
}

/* Switches to url (absolute). Keeps the upstream when the origin is the
 * same. Returns 0, or -1 with *why. */
static int set_url(struct chk *c, const char *url, const char **why)
{
	struct px_upstream_conf u = {0};
	char err[256];

	if (config_parse_url(&u, url, why) < 0) {
		url_clear(&u);
		return -1;
	}
	u.name = strdup("check");
	u.connect_timeout_ms = (unsigned)(c->o->timeout_s * 1000);
	u.request_timeout_ms = 0; /* our own timer covers each step */
	/* The upstream borrows the conf, so it is rebuilt with it (no request
	 * is in flight here; connections are never pooled). */
	upstream_free(c->up);
	url_clear(&c->url);
	c->url = u;
	c->up = upstream_new(&c->uo, &c->url, err, sizeof(err));
	if (!c->up) {
		static char reason[256];
		/* The reason names the host, never a credential (none in conf). */
		snprintf(reason, sizeof(reason), "%s", err);
		*why = reason;
		return -1;
	}
	return 0;
}

static char *url_string(const struct px_upstream_conf *u, const char *target)
{
	char *s = NULL;
	int v6 = strchr(u->host, ':') != NULL;
	if (asprintf(&s, "%s://%s%s%s:%s%s", u->tls ? "https" : "http", v6 ? "[" : "", u->host,
	             v6 ? "]" : "", u->port, target) < 0)
		return NULL;
	return s;
}

/* Resolves a Location or endpoint reference against the current URL.
 * Returns an owned absolute URL. */
static char *resolve_ref(const struct px_upstream_conf *base, const char *ref)
{
	if (strncmp(ref, "http://", 7) == 0 || strncmp(ref, "https://", 8) == 0)
		return strdup(ref);
	if (strncmp(ref, "//", 2) == 0) {
		char *s = NULL;
		if (asprintf(&s, "%s:%s", base->tls ? "https" : "http", ref) < 0)
			return NULL;
		return s;
	}
	if (ref[0] == '/')
		return url_string(base, ref);
	/* Relative to the base path's directory. */
	size_t plen = strcspn(base->target, "?");
	const char *slash = base->target;
	for (size_t i = 0; i < plen; i++)
		if (base->target[i] == '/')
			slash = base->target + i;
	char *t = NULL;
	if (asprintf(&t, "%.*s/%s", (int)(slash - base->target), base->target, ref) < 0)
		return NULL;
	char *s = url_string(base, t);
	free(t);
	return s;
}

/* Follows a redirect of the attempt's first request. Returns 1 when it did
 * (the caller re-sends), 0 when the reply is no redirect, -1 after fail(). */
static int maybe_redirect(struct chk *c, struct hreq *h)
{
	if (h->status != 301 && h->status != 302 && h->status != 303 && h->status != 307 &&
	    h->status != 308)
		return 0;
	if (!h->location || !*h->location) {
		fail(c, "HTTP %d from %s without a Location", h->status, c->url.url_safe);
		return -1;
	}
	if (!c->first_pending) {
		fail(c, "HTTP %d from %s: redirects are followed on the first request only",
		     h->status, c->url.url_safe);
		return -1;
	}
	if (c->redirects >= CHECK_MAX_REDIRECTS) {
		fail(c, "more than %d redirects (last from %s)", CHECK_MAX_REDIRECTS, c->url.url_safe);
		return -1;
	}
	char *to = resolve_ref(&c->url, h->location);
	struct px_upstream_conf old = {0};
	const char *why = NULL;
	if (!to) {
		fail(c, "out of memory");
		return -1;
	}
	old.tls = c->url.tls;
	old.host = strdup(c->url.host);
	old.port = strdup(c->url.port);
	old.url_safe = strdup(c->url.url_safe);
	hreq_free(c->h == h ? c->h : NULL);
	if (c->h == h)
		c->h = NULL;
	if (c->stream == h) {
		hreq_free(c->stream);
		c->stream = NULL;
	}
	if (set_url(c, to, &why) < 0) {
		fail(c, "redirect from %s: %s", old.url_safe ? old.url_safe : "?", why);
		free(to);
		url_clear(&old);
		return -1;
	}
	free(to);
	c->redirects++;
	int other = old.host && old.port && (old.tls != c->url.tls ||
	                                     strcasecmp(old.host, c->url.host) != 0 ||
	                                     strcmp(old.port, c->url.port) != 0);
	if (other && !c->cross_origin) {
		c->cross_origin = 1;
		note(c, "redirected to another origin (%s): the configured headers are not sent there",
		     c->url.url_safe);
	} else {
		note(c, "redirected to %s", c->url.url_safe);
	}
	url_clear(&old);
	return 1;
}

/* Common outcome handling. Returns 0 when the caller should look at the
 * reply, 1 when the exchange was dealt with (redirected, failed,
 * re-initialized). `what` names the step. `resend` restarts it. */
static int outcome(struct chk *c, struct hreq *h, const char *what, void (*resend)(struct chk *))
{
	if (h->finished < 0) {
		fail(c, "%s: %s (%s)", what, h->error, c->url.url_safe);
		return 1;
	}
	int r = maybe_redirect(c, h);
	if (r > 0) {
		resend(c);
		return 1;
	}
	if (r < 0)
		return 1;
	c->first_pending = 0;
	if (h->status == 401 || h->status == 403) {
		/* Only a 401, or a 403 whose challenge says the token lacks a
		 * scope, is about credentials; another 403 says why in its body
		 * (Playwright MCP: the Host it accepts), and that is printed. */
		char why[CHECK_REASON_MAX + 16];
		http_reason(h, why, sizeof(why));
		int scope = h->status == 403 && h->www_auth &&
		            strcasestr(h->www_auth, "insufficient_scope") != NULL;
		if (h->status == 401 || scope)
			fail(c, "HTTP %d from %s for %s: the server wants credentials%s; add e.g. "
			        "--header 'Authorization: Bearer ${TOKEN}'%s%s%s",
			     h->status, c->url.url_safe, what,
			     scope ? " with more scope (WWW-Authenticate: insufficient_scope)" : "",
			     c->cross_origin ? " (headers are not sent after a redirect to another origin)"
			                     : "",
			     why[0] ? "; the server says" : "", why);
		else
			fail(c, "HTTP 403 from %s for %s%s", c->url.url_safe, what,
			     why[0] ? why : ": forbidden (the server gave no reason)");
		return 1;
	}
	if (h->status == 404 && h->sent_session) {
		if (c->reinit_used) {
			fail(c, "%s: the session expired again (HTTP 404) right after initializing", what);
			return 1;
		}
		c->reinit_used = 1;
		if (c->st == ST_CALL)
			note(c, "the session expired (HTTP 404 on %s, call %zu): initialized again and "
			        "the call sent again", what, c->call_i + 1);
		else
			note(c, "the session expired (HTTP 404 on %s): initialized again and listed from "
			        "the first page", what);
		free(c->session);
		c->session = NULL;
		json_array_clear(c->pages);
		hreq_free(c->h);
		c->h = NULL;
		start_init(c);
		return 1;
	}
	return 0;
}

/* Whether text[i..] starts a credential a server may echo back
 * ("Bearer x", "Basic x"): the length of the scheme and its space, or 0. */
static size_t credential_scheme(const char *text, size_t i, size_t n)
{
	static const char *const schemes[] = {"bearer ", "basic "};
	for (size_t k = 0; k < sizeof(schemes) / sizeof(schemes[0]); k++) {
		size_t l = strlen(schemes[k]);
		if (i + l < n && strncasecmp(text + i, schemes[k], l) == 0 &&
		    (i == 0 || !isalnum((unsigned char)text[i - 1])))
			return l;
	}
	return 0;
}

/* A short, printable reason from an HTTP error reply, as ": text" (or ""):
 * its JSON-RPC error message, else its body. Sanitised for a terminal and
 * a CI log: control characters and runs of spaces become one space, what
 * follows "Bearer " or "Basic " is masked, at most CHECK_REASON_MAX bytes
 * (cut on a UTF-8 boundary, "…" says so). The values of --header and the
 * URL's password are masked when printed (cli_emit). */
static void http_reason(const struct hreq *h, char *buf, size_t cap)
{
	const json_t *err = json_object_get(h->reply, "error");
	const char *msg = json_string_value(json_object_get(err, "message"));
	const char *text = NULL;
	size_t n = 0;

	if (!msg)
		msg = json_string_value(err);
	if (msg) {
		text = msg;
		n = strlen(msg);
	} else if (h->body && evbuffer_get_length(h->body)) {
		n = evbuffer_get_length(h->body);
		text = (const char *)evbuffer_pullup(h->body, -1);
	}
	buf[0] = '\0';
	if (!text || cap < 8)
		return;
	size_t max = cap - 6 < CHECK_REASON_MAX ? cap - 6 : CHECK_REASON_MAX; /* ": " "…" NUL */
	size_t w = 2, room = 2 + max;
	int space = 1, cut = 0;
	memcpy(buf, ": ", 2);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)text[i];
		size_t sl = credential_scheme(text, i, n);
		if (sl) {
			const size_t ml = sizeof(CLI_MASK) - 1;
			if (w + sl + ml > room) {
				cut = 1;
				break;
			}
			memcpy(buf + w, text + i, sl);
			memcpy(buf + w + sl, CLI_MASK, ml);
			w += sl + ml;
			i += sl;
			while (i < n && !isspace((unsigned char)text[i]) && text[i] != '"' &&
			       text[i] != ',')
				i++;
			i--;
			space = 0;
			continue;
		}
		if (ch < 0x20 || ch == 0x7f || ch == ' ') {
			if (!space && w < room)
				buf[w++] = ' ';
			space = 1;
			continue;
		}
		if (w >= room) {
			cut = 1;
			break;
		}
		buf[w++] = (char)ch;
		space = 0;
	}
	if (cut) {
		while (w > 2 && ((unsigned char)buf[w - 1] & 0xc0) == 0x80)
			w--; /* continuation bytes of a cut character */
		if (w > 2 && (unsigned char)buf[w - 1] >= 0xc0)
			w--;
	}
	while (w > 2 && buf[w - 1] == ' ')
		w--;
	if (w == 2) {
		buf[0] = '\0';
		return;
	}
	if (cut) {
		memcpy(buf + w, "\xe2\x80\xa6", 3); /* … */
		w += 3;
	}
	buf[w] = '\0';
}

/* The clientInfo and capabilities to send: the target's (replay: the
 * captured client's), else mcpwarden-check's and none. Owned. */
static json_t *client_info(const struct chk *c)
{
	if (c->o->client_info)
		return json_deep_copy(c->o->client_info);
	return json_pack("{s:s,s:s}", "name", CHECK_CLIENT_NAME, "version", CHECK_CLIENT_VERSION);
}

static json_t *client_caps(const struct chk *c)
{
	return c->o->capabilities ? json_deep_copy(c->o->capabilities) : json_object();
}

static json_t *envelope(const struct chk *c)
{
	return json_pack("{s:s,s:o,s:o}", META_VERSION_KEY, c->era,
	                 "io.modelcontextprotocol/clientCapabilities", client_caps(c),
	                 "io.modelcontextprotocol/clientInfo", client_info(c));
}

/* Sends a JSON-RPC request (id > 0) or notification (id 0) on the current
 * transport. Returns 0, or -1 after fail(). */
static int send_rpc(struct chk *c, const char *method, json_t *params, int notification)
{
	json_t *msg = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
	json_int_t id = notification ? 0 : ++c->next_id;
	if (!msg) {
		json_decref(params);
		fail(c, "out of memory");
		return -1;
	}
	if (!notification)
		json_object_set_new(msg, "id", json_integer(id));
	if (params)
		json_object_set_new(msg, "params", params);
	hreq_free(c->h);
	c->h = NULL;
	json_decref(c->legacy_reply);
	c->legacy_reply = NULL;
	c->pending_id = c->tr == TR_SSE ? id : 0;
	const char *target = c->tr == TR_SSE ? c->post_target : c->url.target;
	const json_t *p = json_object_get(msg, "params");
	c->mcp_name = json_string_value(json_object_get(p, "name"));
	if (strcmp(method, "resources/read") == 0)
		c->mcp_name = json_string_value(json_object_get(p, "uri"));
	else if (strcmp(method, "tools/call") != 0 && strcmp(method, "prompts/get") != 0)
		c->mcp_name = NULL;
	c->h = hreq_start(c, "POST", target, msg, c->tr == TR_SSE ? 0 : id, method, 0);
	c->mcp_name = NULL;
	json_decref(msg);
	c->sent_us = clock_mono_us();
	if (!c->h) {
		fail(c, "cannot start a request to %s", c->url.url_safe);
		return -1;
	}
	timer_arm(c, method);
	return 0;
}

/* The response to the step in flight: from the POST reply (streamable)
 * or from the stream (sse). Borrowed. */
static const json_t *rpc_reply(const struct chk *c)
{
	if (c->tr == TR_SSE)
		return c->legacy_reply;
	return c->h && is_response(c->h->reply) && id_is(c->h->reply, c->next_id) ? c->h->reply
	                                                                           : NULL;
}

/* Fails with the error a JSON-RPC reply carries. */
static void fail_rpc_error(struct chk *c, const char *what, const json_t *reply)
{
	const json_t *e = json_object_get(reply, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));
	fail(c, "%s failed: JSON-RPC error %lld: %.300s", what,
	     (long long)json_integer_value(json_object_get(e, "code")), msg ? msg : "(no message)");
}

static int is_modern_version(const char *v)
{
	/* Dates compare as strings; anything else ("draft") is not a date. */
	return v && strlen(v) == 10 && isdigit((unsigned char)v[0]) && strcmp(v, MODERN_VERSION) >= 0;
}

/* A modern version we can speak from a supportedVersions-like array. */
static const char *pick_modern(const json_t *versions)
{
	const char *best = NULL;
	for (size_t i = 0; i < json_array_size(versions); i++) {
		const char *v = json_string_value(json_array_get(versions, i));
		if (v && strcmp(v, MODERN_VERSION) == 0)
			return v;
		if (is_modern_version(v) && (!best || strcmp(v, best) > 0))
			best = v;
	}
	return best;
}

static void set_era(struct chk *c, const char *v)
{
	char *d = v ? strdup(v) : NULL;
	free(c->era);
	c->era = d;
}

/* ---- the steps ------------------------------------------------------------- */

static void start_discover(struct chk *c)
{
	c->st = ST_DISCOVER;
	c->modern = 1;
	set_era(c, MODERN_VERSION);
	json_t *params = json_pack("{s:o}", "_meta", envelope(c));
	send_rpc(c, "server/discover", params, 0);
}

static void on_discover(struct chk *c)
{
	struct hreq *h = c->h;
	if (outcome(c, h, "server/discover", start_discover))
		return;
	const json_t *reply = rpc_reply(c);
	const json_t *res = json_object_get(reply, "result");
	const json_t *err = json_object_get(h->reply, "error");
	const char *v = NULL;
	if (h->status / 100 == 2 && json_is_object(res))
		v = pick_modern(json_object_get(res, "supportedVersions"));
	else if (json_integer_value(json_object_get(err, "code")) == -32022)
		v = pick_modern(json_object_get(json_object_get(err, "data"), "supported"));
	if (v) {
		set_era(c, v);
		c->modern = 1;
		session_up(c);
		return;
	}
	/* Not a modern server (SDK 1.x servers answer 400 without a session):
	 * the initialize handshake. */
	c->modern = 0;
	set_era(c, NULL);
	start_init(c);
}

static void start_init(struct chk *c)
{
	const char *v = c->o->protocol ? c->o->protocol : LEGACY_VERSION;
	c->st = ST_INIT;
	c->modern = 0;
	set_era(c, NULL);
	json_t *params = json_pack("{s:s,s:o,s:o}", "protocolVersion", v, "capabilities",
	                           client_caps(c), "clientInfo", client_info(c));
	send_rpc(c, "initialize", params, 0);
}

static void on_init(struct chk *c)
{
	struct hreq *h = c->h;
	if (outcome(c, h, "initialize", start_init))
		return;
	const json_t *reply = rpc_reply(c);
	if (c->tr == TR_STREAMABLE && (!reply || h->status / 100 != 2)) {
		char why[256];
		http_reason(h, why, sizeof(why));
		if (strcmp(c->o->transport, "auto") == 0 && !c->tried[TR_SSE] &&
		    upstream_sse_probe_refused(h->status, h->ctype)) {
			note(c, "Streamable HTTP initialize got HTTP %d: trying the HTTP+SSE transport",
			     h->status);
			start_sse(c);
			return;
		}
		fail(c, "initialize at %s: HTTP %d%s%s", c->url.url_safe, h->status, why,
		     h->status / 100 == 2 ? " (no JSON-RPC response)" : "");
		return;
	}
	if (c->tr == TR_SSE && (h->status / 100 != 2 || !reply)) {
		char why[256];
		http_reason(h, why, sizeof(why));
		fail(c, "initialize over HTTP+SSE: HTTP %d%s", h->status, why);
		return;
	}
	if (json_object_get(reply, "error")) {
		fail_rpc_error(c, "initialize", reply);
		return;
	}
	const json_t *res = json_object_get(reply, "result");
	const char *v = json_string_value(json_object_get(res, "protocolVersion"));
	const char *asked = c->o->protocol ? c->o->protocol : LEGACY_VERSION;
	if (!v) {
		fail(c, "initialize: the result has no protocolVersion");
		return;
	}
	if (c->o->protocol && strcmp(v, asked) != 0)
		note(c, "asked for protocol %s, the server chose %s", asked, v);
	set_era(c, v);
	if (c->tr == TR_STREAMABLE && h->session) {
		free(c->session);
		c->session = strdup(h->session);
	}
	c->st = ST_INITIALIZED;
	send_rpc(c, "notifications/initialized", NULL, 1);
}

static void on_initialized(struct chk *c)
{
	struct hreq *h = c->h;
	if (outcome(c, h, "notifications/initialized", start_init))
		return;
	if (h->status / 100 != 2) {
		char why[256];
		http_reason(h, why, sizeof(why));
		fail(c, "notifications/initialized: HTTP %d%s", h->status, why);
		return;
	}
	session_up(c);
}

static void start_list(struct chk *c, const char *cursor)
{
	json_t *params = json_object();
	c->st = ST_LIST;
	if (cursor)
		json_object_set_new(params, "cursor", json_string(cursor));
	if (c->modern)
		json_object_set_new(params, "_meta", envelope(c));
	send_rpc(c, "tools/list", params, 0);
}

static void restart_list(struct chk *c)
{
	json_array_clear(c->pages);
	start_list(c, NULL);
}

static void on_list(struct chk *c)
{
	struct hreq *h = c->h;
	if (outcome(c, h, "tools/list", restart_list))
		return;
	const json_t *reply = rpc_reply(c);
	if (!reply) {
		char why[256];
		http_reason(h, why, sizeof(why));
		fail(c, "tools/list: HTTP %d%s (no JSON-RPC response)", h->status, why);
		return;
	}
	if (json_object_get(reply, "error")) {
		fail_rpc_error(c, "tools/list", reply);
		return;
	}
	json_t *res = json_object_get(reply, "result");
	json_array_append(c->pages, res);
	const char *next = json_is_object(res) ? json_string_value(json_object_get(res, "nextCursor"))
	                                       : NULL;
	size_t n = json_array_size(c->pages);
	if (next) {
		/* Stop before asking a page twice: the checker reports the loop
		 * from the pages' nextCursor values. */
		for (size_t i = 0; i + 1 < n; i++) {
			const char *prev = json_string_value(
			        json_object_get(json_array_get(c->pages, i), "nextCursor"));
			if (prev && strcmp(prev, next) == 0) {
				note(c, "the server's nextCursor repeats (page %zu): listing stopped", n);
				list_done(c);
				return;
			}
		}
		if (n >= CONTRACT_MAX_PAGES) {
			note(c, "more than %d pages: the rest is not listed", CONTRACT_MAX_PAGES);
			list_done(c);
			return;
		}
		start_list(c, next);
		return;
	}
	list_done(c);
}

/* ---- target calls (replay) ---------------------------------------------------- */

static void start_call(struct chk *c)
{
	const json_t *call = json_array_get(c->o->calls, c->call_i);
	if (!call) {
		start_delete(c);
		return;
	}
	const char *method = json_string_value(json_object_get(call, "method"));
	const json_t *p = json_object_get(call, "params");
	json_t *params = json_is_object(p) ? json_deep_copy(p) : json_object();
	if (c->modern && params) {
		/* The per-request form: the envelope joins the client's own _meta. */
		json_t *meta = json_object_get(params, "_meta");
		if (!json_is_object(meta)) {
			meta = json_object();
			json_object_set_new(params, "_meta", meta);
		}
		json_t *env = envelope(c);
		json_object_update(meta, env);
		json_decref(env);
	}
	c->st = ST_CALL;
	c->call_headers = c->modern ? json_object_get(call, "headers") : NULL;
	send_rpc(c, method ? method : "tools/call", params, 0);
	c->call_headers = NULL;
}

/* The session is initialized (or needs none): list, or go to the calls. */
static void session_up(struct chk *c)
{
	if (c->o->calls && c->o->skip_list)
		start_call(c);
	else
		start_list(c, NULL);
}

static void list_done(struct chk *c)
{
	if (c->o->calls)
		start_call(c);
	else
		start_delete(c);
}

static void record_call(struct chk *c, json_t *entry)
{
	double ms = (double)(clock_mono_us() - c->sent_us) / 1000.0;
	if (entry) {
		json_object_set_new(entry, "ms", json_real(ms));
		json_array_append_new(c->replies, entry);
	}
	/* An answered call is progress: a later expiry may initialize again
	 * (the guard is against a session that dies right after initialize). */
	if (json_object_get(entry, "response"))
		c->reinit_used = 0;
	c->call_i++;
	start_call(c);
}

static void on_call(struct chk *c)
{
	struct hreq *h = c->h;
	if (h->finished < 0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", h->error ? h->error : "the request failed");
		record_call(c, json_pack("{s:s}", "error", msg));
		return;
	}
	if (outcome(c, h, "tools/call", start_call))
		return;
	const json_t *reply = rpc_reply(c);
	if (!reply) {
		char why[CHECK_REASON_MAX + 16], msg[CHECK_REASON_MAX + 64];
		http_reason(h, why, sizeof(why));
		snprintf(msg, sizeof(msg), "HTTP %d%s (no JSON-RPC response)", h->status, why);
		record_call(c, json_pack("{s:s}", "error", msg));
		return;
	}
	record_call(c, json_pack("{s:O}", "response", reply));
}

static void open_stream(struct chk *c)
{
	c->st = ST_SSE_OPEN;
	hreq_free(c->stream);
	c->stream = hreq_start(c, "GET", c->url.target, NULL, 0, NULL, 1);
	if (!c->stream) {
		fail(c, "cannot start a request to %s", c->url.url_safe);
		return;
	}
	timer_arm(c, "the SSE endpoint event");
}

static void start_sse(struct chk *c)
{
	hreq_free(c->h);
	c->h = NULL;
	free(c->session);
	c->session = NULL;
	free(c->post_target);
	c->post_target = NULL;
	c->tr = TR_SSE;
	c->tried[TR_SSE] = 1;
	c->first_pending = 1;
	c->modern = 0;
	set_era(c, NULL);
	/* The URL as given: no sibling /sse is guessed (upstream_sse.h). */
	open_stream(c);
}

static void on_sse_open(struct chk *c)
{
	struct hreq *h = c->stream;
	if (!c->post_target) {
		if (outcome(c, h, "the SSE stream", open_stream))
			return;
		char why[256];
		http_reason(h, why, sizeof(why));
		if (strcmp(c->o->transport, "auto") == 0 && !c->tried[TR_STREAMABLE] &&
		    upstream_sse_stream_refused(h->status, h->ctype)) {
			note(c, "no SSE stream at %s (HTTP %d): trying Streamable HTTP", c->url.url_safe,
			     h->status);
			start_streamable(c);
			return;
		}
		if (h->status == 200 && h->is_sse)
			fail(c, "the SSE stream at %s ended without an endpoint event", c->url.url_safe);
		else
			fail(c, "no SSE stream at %s: HTTP %d%s%s", c->url.url_safe, h->status, why,
			     h->status == 404 && upstream_sse_auto_first(&c->url) != PX_TRANSPORT_SSE
			             ? " (for a legacy HTTP+SSE server, give its SSE URL: one ending in "
			               "/sse is tried with the legacy transport first)"
			             : "");
		return;
	}
	c->first_pending = 0;
	/* The endpoint must stay on the stream's origin (as the SDK insists). */
	char *abs = resolve_ref(&c->url, c->post_target);
	struct px_upstream_conf u = {0};
	const char *why = NULL;
	if (!abs || config_parse_url(&u, abs, &why) < 0) {
		fail(c, "the SSE endpoint event names no usable URL");
	} else if (u.tls != c->url.tls || strcasecmp(u.host, c->url.host) != 0 ||
	           strcmp(u.port, c->url.port) != 0) {
		fail(c, "the SSE endpoint event names another origin (%s): refused", u.url_safe);
	} else {
		free(c->post_target);
		c->post_target = strdup(u.target);
		start_init(c);
	}
	free(abs);
	url_clear(&u);
}

static void start_streamable(struct chk *c)
{
	const char *why = NULL;
	hreq_free(c->stream);
	c->stream = NULL;
	hreq_free(c->h);
	c->h = NULL;
	c->tr = TR_STREAMABLE;
	c->tried[TR_STREAMABLE] = 1;
	c->first_pending = 1;
	if (set_url(c, c->o->url, &why) < 0) {
		fail(c, "%s", why);
		return;
	}
	if (c->cross_origin) {
		/* Back at the user's own URL: its headers apply again. */
		c->cross_origin = 0;
	}
	if (c->o->protocol && !is_modern_version(c->o->protocol)) {
		start_init(c);
	} else if (c->o->protocol) {
		c->modern = 1;
		set_era(c, c->o->protocol);
		session_up(c);
	} else {
		start_discover(c);
	}
}

/* Whether the step in flight has all it waits for. */
static int step_ready(const struct chk *c)
{
	if (c->st == ST_SSE_OPEN)
		return c->post_target || c->stream->finished;
	if (!c->h)
		return 1; /* advance() fails the step */
	if (c->tr == TR_SSE && c->st != ST_DELETE) {
		if (c->stream && c->stream->finished && !c->legacy_reply && c->pending_id)
			return 1; /* the stream is gone: the reply never comes */
		if (!c->h->finished)
			return 0;
		return c->h->finished < 0 || c->h->status / 100 != 2 || !c->pending_id ||
		       c->legacy_reply;
	}
	return c->h->finished != 0;
}

static void advance(struct chk *c)
{
	if (c->st == ST_DONE)
		return;
	if (c->timed_out) {
		c->timed_out = 0;
		if (c->st == ST_DELETE) {
			finish(c);
			return;
		}
		if (c->st == ST_CALL) {
			char msg[128];
			snprintf(msg, sizeof(msg), "no answer within %g s", c->o->timeout_s);
			record_call(c, json_pack("{s:s}", "error", msg));
			return;
		}
		fail(c, "no answer within %g s while waiting for %s (%s)", c->o->timeout_s,
		     c->waiting_for ? c->waiting_for : "the server", c->url.url_safe);
		return;
	}
	if (!step_ready(c))
		return;
	event_del(c->timer);
	if (c->st != ST_SSE_OPEN && !c->h) {
		fail(c, "internal error: no request in flight for %s", c->waiting_for);
		return;
	}
	if (c->tr == TR_SSE && c->st != ST_SSE_OPEN && c->st != ST_DELETE && c->stream &&
	    c->stream->finished && !c->legacy_reply && c->pending_id) {
		fail(c, "the SSE stream closed (%s) while waiting for the %s reply",
		     c->stream->error ? c->stream->error : "by the server", c->waiting_for);
		return;
	}
	switch (c->st) {
	case ST_SSE_OPEN:
		on_sse_open(c);
		break;
	case ST_DISCOVER:
		on_discover(c);
		break;
	case ST_INIT:
		on_init(c);
		break;
	case ST_INITIALIZED:
		on_initialized(c);
		break;
	case ST_LIST:
		on_list(c);
		break;
	case ST_CALL:
		on_call(c);
		break;
	case ST_DELETE:
		finish(c);
		break;
	case ST_DONE:
		break;
	}
}

int check_client_run(const struct check_client_target *o, struct check_client_result *r)
{
	struct chk c = {.o = o};
	const char *why = NULL;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	/* Only the printable form of the URL ever appears. */
	struct px_upstream_conf shown = {0};
	if (config_parse_url(&shown, o->url, &why) < 0) {
		fprintf(stderr, "mcpwarden %s: %s: %s\n", o->cmd ? o->cmd : "check", "URL", why);
		url_clear(&shown);
		return -1;
	}
	c.url_shown = shown.url_safe ? strdup(shown.url_safe) : NULL;
	if (shown.basic_auth) {
		c.basic_auth = strdup(shown.basic_auth);
		cli_secrets_add(o->sec, shown.basic_auth + 6, strlen(shown.basic_auth + 6));
	}
	url_clear(&shown);

	c.base = event_base_new();
	c.uo = (struct upstream_opts){
		.base = c.base,
		.max_header_bytes = LIMIT_MAX_HEADER_BYTES,
		.idle_ms = 0, /* no pooling: nothing lingers */
	};
	c.pages = json_array();
	c.notes = json_array();
	c.replies = o->calls ? json_array() : NULL;
	c.kick = c.base ? event_new(c.base, -1, 0, kick_cb, &c) : NULL;
	c.timer = c.base ? evtimer_new(c.base, timer_cb, &c) : NULL;
	if (!c.base || !c.pages || !c.notes || (o->calls && !c.replies) || !c.kick || !c.timer || !c.url_shown) {
		rc = 1;
		goto done;
	}
	if (set_url(&c, o->url, &why) < 0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s: %s", c.url_shown, why);
		free(c.error);
		c.error = strdup(msg);
		rc = c.error ? 0 : 1;
		goto done;
	}
	int sse_first = strcmp(o->transport, "sse") == 0 ||
	                (strcmp(o->transport, "auto") == 0 &&
	                 upstream_sse_auto_first(&c.url) == PX_TRANSPORT_SSE);
	if (sse_first)
		start_sse(&c);
	else
		start_streamable(&c);
	if (c.st != ST_DONE)
		event_base_dispatch(c.base);
done:
	/* The findings move to *r; the rest of the run goes. */
	r->url_shown = c.url_shown;
	r->pages = c.pages;
	r->notes = c.notes;
	r->transport = transport_names[c.tr];
	r->era = c.era;
	r->error = c.error;
	r->replies = c.replies;
	hreq_free(c.h);
	hreq_free(c.stream);
	upstream_free(c.up);
	url_clear(&c.url);
	if (c.kick)
		event_free(c.kick);
	if (c.timer)
		event_free(c.timer);
	if (c.base)
		event_base_free(c.base);
	json_decref(c.legacy_reply);
	free(c.basic_auth);
	free(c.post_target);
	free(c.session);
	return rc;
}

void check_client_result_fini(struct check_client_result *r)
{
	json_decref(r->pages);
	json_decref(r->notes);
	json_decref(r->replies);
	free(r->url_shown);
	free(r->era);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

/* ---- --header for other commands (replay) ------------------------------------ */

static const char *header_env(void *arg, const char *name)
{
	const char *val = getenv(name);
	if (val)
		cli_secrets_add(arg, val, strlen(val)); /* what ${NAME} gave is a secret */
	return val;
}

/* Whether the header name may be given: a token, not one mcpwarden sets. */
static const char *header_name_problem(const char *name, size_t n)
{
	static const char *const ours[] = {"host", "content-length", "transfer-encoding",
	                                   "connection", "content-type"};
	if (n == 0)
		return "wants 'Name: value'";
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("!#$%&'*+-.^_`|~", name[i]))
			return "the name is not a header name";
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (strlen(ours[i]) == n && strncasecmp(name, ours[i], n) == 0)
			return "that header is set by mcpwarden itself";
	return NULL;
}

int check_client_header_parse(const char *cmd, const char *arg, struct check_header *out,
                              struct cli_secrets *sec)
{
	const char *colon = strchr(arg, ':');
	size_t nl = colon ? (size_t)(colon - arg) : 0;
	const char *bad = colon ? header_name_problem(arg, nl) : "wants 'Name: value'";
	memset(out, 0, sizeof(*out));
	if (bad) {
		fprintf(stderr, "mcpwarden %s: --header: %s\n", cmd, bad);
		return -1;
	}
	const char *v = colon + 1 + strspn(colon + 1, " \t");
	struct envx_fail ef;
	char *wire = envx_expand(v, header_env, sec, &ef);
	if (!wire) {
		if (ef.why == ENVX_UNSET)
			fprintf(stderr, "mcpwarden %s: --header %.*s: environment variable %s is not set\n",
			        cmd, (int)nl, arg, ef.name);
		else
			fprintf(stderr, "mcpwarden %s: --header %.*s: %s\n", cmd, (int)nl, arg,
			        ef.why == ENVX_BAD_NAME
			                ? "${…} must name an environment variable (" ENVX_RULE ")"
			                : "out of memory");
		return -1;
	}
	size_t wl = strlen(wire);
	while (wl && (wire[wl - 1] == ' ' || wire[wl - 1] == '\t'))
		wire[--wl] = '\0';
	for (size_t i = 0; i < wl; i++) {
		if (((unsigned char)wire[i] < 0x20 && wire[i] != '\t') || wire[i] == 0x7f) {
			fprintf(stderr, "mcpwarden %s: --header %.*s: control characters in the value\n",
			        cmd, (int)nl, arg);
			free(wire);
			return -1;
		}
	}
	out->name = strndup(arg, nl);
	out->wire = wire;
	if (!out->name) {
		check_client_header_fini(out);
		return -1;
	}
	/* Credential-like values are masked whole even when typed literally. */
	if (strcasecmp(out->name, "authorization") == 0 || strcasecmp(out->name, "cookie") == 0 ||
	    strcasecmp(out->name, "proxy-authorization") == 0 || strcasestr(out->name, "token") ||
	    strcasestr(out->name, "key") || strcasestr(out->name, "secret")) {
		const char *sp = strchr(wire, ' ');
		cli_secrets_add(sec, wire, wl);
		if (sp)
			cli_secrets_add(sec, sp + 1, strlen(sp + 1));
	}
	return 0;
}

void check_client_header_fini(struct check_header *h)
{
	free(h->name);
	free(h->wire);
	h->name = h->wire = NULL;
}

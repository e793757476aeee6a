/* admin_client: see admin_client.h.
 *
 * One exchange at a time on the client's own loop: the upstream module
 * connects (TLS for https), writes the GET, and reports head, body
 * fragments, then done or error; each of those sets the exchange's state
 * and, once it is over, breaks the loop, so admin_client_get and
 * admin_client_stream simply run the loop until then.
 */
#include "proxy/cli/admin_client.h"

#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "proxy/base/limits.h"
#include "proxy/base/media.h"
#include "proxy/base/sse.h"
#include "proxy/config.h"
#include "proxy/net/http_parse.h"
#include "proxy/net/upstream.h"

#define ADMIN_CLIENT_AGENT "mcpwarden-cli"
/* The body of a reply that is not the stream asked for: only its error
 * text is wanted. */
#define ADMIN_CLIENT_ERROR_BODY (64u * 1024)

/* Where the exchange in flight is. */
enum ax_state {
	AX_RUNNING,  /* the request is out; the loop runs */
	AX_DONE,     /* the reply is complete */
	AX_FAILED,   /* the upstream module reported an error (uerr, detail) */
	AX_TOO_BIG,  /* the body or an SSE block is over its bound */
	AX_STOPPED,  /* a signal, or the event callback said stop */
	AX_OUTPUT,   /* the event callback failed (its output) */
	AX_OOM,
	AX_IDLE,     /* a stream said nothing for idle_s */
};

struct admin_client {
	struct event_base *base;       /* owned */
	struct upstream_opts uo;
	struct px_upstream_conf url;   /* owned strings */
	struct upstream *up;           /* owned */
	char *prefix;                  /* owned: the URL's path without a trailing '/' */
	char *shown;                   /* owned: printable URL */
	char *auth;                    /* owned: "Bearer …" or NULL */
	double timeout_s, idle_s;
	struct event *idle;            /* owned: a stream's silence timer, or NULL */
	/* the exchange in flight */
	struct upstream_req *ur;       /* owned */
	enum ax_state st;
	int status;
	char *ctype;                   /* owned */
	struct evbuffer *body;         /* owned: a plain reply */
	size_t body_max;
	struct sse_reader *sse;        /* owned: a stream's reader */
	int want_stream;
	size_t max_event;
	admin_event_fn fn;
	void *arg;
	enum upstream_err uerr;
	const char *detail;            /* static */
};

/* The strings config_parse_url filled in (and the name set here). */
static void url_clear(struct px_upstream_conf *u)
{
	char **owned[] = {&u->name, &u->path, &u->url_safe, &u->host, &u->port,
	                  &u->target, &u->host_header, &u->basic_auth};
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		free(*owned[i]);
	memset(u, 0, sizeof(*u));
}

static void seterr(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
}

/* A token goes into a header line: CR, LF or other control bytes there
 * would end the line and inject headers. */
static int token_ok(const char *t)
{
	if (!*t)
		return 0;
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		if (*p < 0x21 || *p == 0x7f)
			return 0;
	return 1;
}

struct admin_client *admin_client_new(const struct admin_client_target *t, char *err,
                                      size_t errlen)
{
	struct admin_client *ac = calloc(1, sizeof(*ac));
	const char *why = NULL;
	char uerr[256];

	if (!ac) {
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	ac->timeout_s = t->timeout_s > 0 ? t->timeout_s : 10;
	ac->idle_s = t->idle_s > 0 ? t->idle_s : 0;
	if (config_parse_url(&ac->url, t->url, &why) < 0) {
		seterr(err, errlen, "ADMIN_URL: %s", why);
		goto fail;
	}
	if (ac->url.basic_auth) {
		/* Never echoed: the URL is not printed here at all. */
		seterr(err, errlen, "ADMIN_URL: credentials in the URL are not used; give the admin "
		                    "token with --token or MCPWARDEN_ADMIN_TOKEN");
		goto fail;
	}
	if (strchr(ac->url.target, '?') || strchr(t->url, '#')) {
		seterr(err, errlen, "ADMIN_URL: no query or fragment, only scheme://host:port[/prefix]");
		goto fail;
	}
	if (t->token && !token_ok(t->token)) {
		seterr(err, errlen, "the admin token is empty or holds spaces or control characters");
		goto fail;
	}
	size_t pl = strlen(ac->url.target);
	while (pl > 0 && ac->url.target[pl - 1] == '/')
		pl--;
	ac->prefix = strndup(ac->url.target, pl);
	ac->url.name = strdup("admin");
	ac->shown = ac->url.url_safe ? strdup(ac->url.url_safe) : NULL;
	if (t->token && asprintf(&ac->auth, "Bearer %s", t->token) < 0)
		ac->auth = NULL;
	ac->base = event_base_new();
	if (!ac->prefix || !ac->url.name || !ac->shown || (t->token && !ac->auth) || !ac->base) {
		seterr(err, errlen, "out of memory");
		goto fail;
	}
	ac->url.connect_timeout_ms = (unsigned)(ac->timeout_s * 1000);
	ac->url.request_timeout_ms = (unsigned)(ac->timeout_s * 1000);
	ac->uo = (struct upstream_opts){
		.base = ac->base,
		.max_header_bytes = LIMIT_MAX_HEADER_BYTES,
		.idle_ms = 0, /* one exchange at a time, nothing pooled */
	};
	ac->up = upstream_new(&ac->uo, &ac->url, uerr, sizeof(uerr));
	if (!ac->up) {
		/* The reason names the host or a TLS file, never a credential;
		 * its "upstream admin (URL): " head says what we say already. */
		const char *r = strstr(uerr, "): ");
		seterr(err, errlen, "%s: %s", ac->shown,
		       strncmp(uerr, "upstream admin (", 16) == 0 && r ? r + 3 : uerr);
		goto fail;
	}
	return ac;
fail:
	admin_client_free(ac);
	return NULL;
}

const char *admin_client_url(const struct admin_client *ac)
{
	return ac->shown;
}

static void x_reset(struct admin_client *ac)
{
	upstream_req_free(ac->ur);
	ac->ur = NULL;
	free(ac->ctype);
	ac->ctype = NULL;
	if (ac->body)
		evbuffer_free(ac->body);
	ac->body = NULL;
	sse_reader_free(ac->sse);
	ac->sse = NULL;
	ac->status = 0;
	ac->fn = NULL;
	ac->want_stream = 0;
	ac->st = AX_RUNNING;
}

void admin_client_free(struct admin_client *ac)
{
	if (!ac)
		return;
	x_reset(ac);
	upstream_free(ac->up);
	url_clear(&ac->url);
	if (ac->base)
		event_base_free(ac->base);
	if (ac->auth) {
		/* Not left in freed memory. */
		volatile char *p = ac->auth;
		while (*p)
			*p++ = 0;
	}
	free(ac->auth);
	free(ac->prefix);
	free(ac->shown);
	free(ac);
}

/* ---- the upstream callbacks ----------------------------------------------- */

static void x_end(struct admin_client *ac, enum ax_state st)
{
	if (ac->st != AX_RUNNING)
		return;
	ac->st = st;
	event_base_loopbreak(ac->base);
}

static void idle_arm(struct admin_client *ac)
{
	if (!ac->idle)
		return;
	struct timeval tv = {(time_t)ac->idle_s, (suseconds_t)((ac->idle_s - floor(ac->idle_s)) * 1e6)};
	evtimer_add(ac->idle, &tv);
}

static int on_head(void *arg, const struct http_msg *resp)
{
	struct admin_client *ac = arg;
	const char *ct = http_msg_get(resp, HH_CONTENT_TYPE);

	ac->status = http_msg_status(resp);
	if (ct && !(ac->ctype = strdup(ct))) {
		x_end(ac, AX_OOM);
		return -1;
	}
	if (ac->want_stream && ac->status == 200 && media_is(ct, "text/event-stream")) {
		upstream_req_stream(ac->ur); /* no reply timeout for a live stream */
		ac->sse = sse_reader_new(ac->max_event);
		idle_arm(ac); /* silence instead, from now on */
	} else {
		ac->body = evbuffer_new();
		ac->body_max = ac->want_stream ? ADMIN_CLIENT_ERROR_BODY : ADMIN_CLIENT_MAX_BODY;
	}
	if (!ac->sse && !ac->body) {
		x_end(ac, AX_OOM);
		return -1;
	}
	return 0;
}

static int on_sse(void *arg, const struct sse_event *ev, const char *comment, size_t clen)
{
	struct admin_client *ac = arg;
	(void)comment;
	(void)clen;
	if (!ev)
		return 0; /* keep-alives and the greeting */
	int rc = ac->fn(ac->arg, ev);
	return rc > 0 ? 1 : rc < 0 ? -1 : 0;
}

static int on_body(void *arg, const char *data, size_t len)
{
	struct admin_client *ac = arg;
	if (ac->sse) {
		idle_arm(ac); /* keep-alives count: the peer is there */
		int rc = sse_reader_feed(ac->sse, data, len, on_sse, ac);
		if (rc == 0)
			return 0;
		x_end(ac, rc == SSE_ERR_TOO_BIG ? AX_TOO_BIG : rc > 0 ? AX_STOPPED : AX_OUTPUT);
		return -1;
	}
	if (evbuffer_get_length(ac->body) + len > ac->body_max) {
		x_end(ac, AX_TOO_BIG);
		return -1;
	}
	if (evbuffer_add(ac->body, data, len) < 0) {
		x_end(ac, AX_OOM);
		return -1;
	}
	return 0;
}

static void on_done(void *arg)
{
	x_end(arg, AX_DONE);
}

static void on_error(void *arg, enum upstream_err err, const char *detail)
{
	struct admin_client *ac = arg;
	ac->uerr = err;
	ac->detail = detail;
	x_end(ac, AX_FAILED);
}

static const struct upstream_req_cbs x_cbs = {on_head, on_body, on_done, on_error};

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	x_end(arg, AX_STOPPED);
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	x_end(arg, AX_IDLE);
}

/* ---- running one exchange --------------------------------------------------- */

/* Starts GET path and runs the loop until the exchange is over. Returns
 * 0, or -1 with err set when the request could not be started. */
static int x_run(struct admin_client *ac, const char *path, const char *accept, char *err,
                 size_t errlen)
{
	char head[UPSTREAM_HEAD_MAX];
	int n = snprintf(head, sizeof(head),
	                 "GET %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: " ADMIN_CLIENT_AGENT "\r\n"
	                 "Accept: %s\r\n%s%s%sConnection: close\r\n\r\n",
	                 ac->prefix, path, ac->url.host_header, accept, ac->auth ? "Authorization: " : "",
	                 ac->auth ? ac->auth : "", ac->auth ? "\r\n" : "");
	struct evbuffer *none = evbuffer_new();
	if (n < 0 || (size_t)n >= sizeof(head) || !none) {
		if (none)
			evbuffer_free(none);
		seterr(err, errlen, n < 0 || !none ? "out of memory" : "ADMIN_URL is too long");
		return -1;
	}
	ac->st = AX_RUNNING;
	ac->ur = upstream_req_new_split(ac->up, head, (size_t)n, none, 0, &x_cbs, ac);
	/* the head's copy of the token is wiped at once */
	volatile char *p = head;
	for (int i = 0; i < n; i++)
		p[i] = 0;
	if (!ac->ur) {
		seterr(err, errlen, "out of memory");
		return -1;
	}
	event_base_dispatch(ac->base);
	return 0;
}

/* The sentence for an exchange that failed on the way (not a status). */
static void x_failure(const struct admin_client *ac, char *err, size_t errlen)
{
	switch (ac->st) {
	case AX_TOO_BIG:
		seterr(err, errlen, "%s: the reply is over the size limit", ac->shown);
		return;
	case AX_OOM:
		seterr(err, errlen, "out of memory");
		return;
	case AX_OUTPUT:
		seterr(err, errlen, "the output failed");
		return;
	default:
		break;
	}
	const char *hint = "";
	if (ac->uerr == UPSTREAM_ERR_CONNECT) {
		seterr(err, errlen, "cannot connect to %s: %s%s", ac->shown,
		       ac->detail ? ac->detail : "cannot connect",
		       ac->url.tls ? " (is the admin endpoint https?)" : "");
		return;
	}
	if (ac->uerr == UPSTREAM_ERR_TIMEOUT) {
		seterr(err, errlen, "%s: no reply within %g s", ac->shown, ac->timeout_s);
		return;
	}
	if (!ac->url.tls && ac->status == 0)
		hint = " (an https admin endpoint? then say https://)";
	seterr(err, errlen, "%s: %s%s", ac->shown,
	       ac->uerr == UPSTREAM_ERR_PROTOCOL ? "the reply is not HTTP"
	       : ac->status == 0                 ? "the connection closed without a reply"
	                                         : "the connection closed before the reply ended",
	       hint);
}

static char *body_string(struct evbuffer *b, size_t *len)
{
	*len = b ? evbuffer_get_length(b) : 0;
	char *s = malloc(*len + 1);
	if (!s)
		return NULL;
	if (*len)
		evbuffer_remove(b, s, *len);
	s[*len] = '\0';
	return s;
}

int admin_client_get(struct admin_client *ac, const char *path, struct admin_reply *r,
                     char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	x_reset(ac);
	if (x_run(ac, path, "application/json", err, errlen) < 0)
		return -1;
	int rc = 0;
	if (ac->st != AX_DONE) {
		x_failure(ac, err, errlen);
		rc = -1;
	} else {
		r->status = ac->status;
		r->body = body_string(ac->body, &r->len);
		r->ctype = ac->ctype;
		ac->ctype = NULL;
		if (!r->body) {
			seterr(err, errlen, "out of memory");
			rc = -1;
		}
	}
	x_reset(ac);
	return rc;
}

void admin_reply_fini(struct admin_reply *r)
{
	free(r->body);
	free(r->ctype);
	memset(r, 0, sizeof(*r));
}

enum admin_stream_end admin_client_stream(struct admin_client *ac, const char *path,
                                          size_t max_event, admin_event_fn fn, void *arg,
                                          char *err, size_t errlen)
{
	enum admin_stream_end end = ADMIN_STREAM_ERROR;
	x_reset(ac);
	ac->want_stream = 1;
	ac->max_event = max_event;
	ac->fn = fn;
	ac->arg = arg;
	struct event *sint = evsignal_new(ac->base, SIGINT, on_signal, ac);
	struct event *sterm = evsignal_new(ac->base, SIGTERM, on_signal, ac);
	if (ac->idle_s > 0)
		ac->idle = evtimer_new(ac->base, on_idle, ac);
	if (!sint || !sterm || event_add(sint, NULL) < 0 || event_add(sterm, NULL) < 0 ||
	    (ac->idle_s > 0 && !ac->idle)) {
		seterr(err, errlen, "out of memory");
		goto out;
	}
	if (x_run(ac, path, "text/event-stream", err, errlen) < 0)
		goto out;
	if (ac->st == AX_STOPPED) {
		end = ADMIN_STREAM_STOPPED;
	} else if (ac->st == AX_DONE && ac->sse) {
		end = ADMIN_STREAM_CLOSED;
	} else if (ac->st == AX_DONE) {
		struct admin_reply r = {.status = ac->status, .ctype = ac->ctype};
		r.body = body_string(ac->body, &r.len);
		admin_client_status_error(ac, &r, err, errlen);
		if (r.status == 200)
			seterr(err, errlen, "%s%s: the reply is not an event stream (not an admin "
			                    "endpoint?)", ac->shown, path);
		free(r.body);
	} else if (ac->st == AX_IDLE) {
		seterr(err, errlen, "%s: nothing for %g s, not even a keep-alive: the connection is "
		                    "taken as lost", ac->shown, ac->idle_s);
	} else if (ac->st == AX_FAILED && ac->sse) {
		seterr(err, errlen, "%s: the connection was lost (%s)", ac->shown,
		       ac->uerr == UPSTREAM_ERR_TIMEOUT ? "timed out" : "closed or reset mid-stream");
	} else {
		x_failure(ac, err, errlen);
	}
out:
	if (ac->idle)
		event_free(ac->idle);
	ac->idle = NULL;
	if (sint)
		event_free(sint);
	if (sterm)
		event_free(sterm);
	x_reset(ac);
	return end;
}

/* Copies the endpoint's text: printable ASCII and UTF-8 only, runs of
 * space and control bytes as one space, cut to max bytes. */
static void clean_copy(char *dst, size_t cap, const char *src, size_t max)
{
	size_t w = 0;
	int space = 0;
	for (size_t i = 0; src[i] && i < max && w + 1 < cap; i++) {
		unsigned char ch = (unsigned char)src[i];
		if (ch < 0x20 || ch == 0x7f || ch == ' ') {
			if (!space && w)
				dst[w++] = ' ';
			space = 1;
			continue;
		}
		dst[w++] = (char)ch;
		space = 0;
	}
	while (w && dst[w - 1] == ' ')
		w--;
	dst[w] = '\0';
}

void admin_client_status_error(const struct admin_client *ac, const struct admin_reply *r,
                               char *buf, size_t cap)
{
	char text[256] = "";
	json_t *j = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
	const char *e = json_string_value(json_object_get(j, "error"));
	if (e)
		clean_copy(text, sizeof(text), e, 200);
	json_decref(j);

	if (r->status == 401) {
		seterr(buf, cap, "%s: 401: %s", ac->shown,
		       ac->auth ? "the admin token was refused (--token or MCPWARDEN_ADMIN_TOKEN)"
		                : "the admin endpoint needs a token: --token TOKEN or "
		                  "MCPWARDEN_ADMIN_TOKEN");
	} else if (r->status == 404) {
		seterr(buf, cap, "%s: 404: %s (is ADMIN_URL the admin endpoint, not the MCP listener?)",
		       ac->shown, *text ? text : "not found");
	} else {
		seterr(buf, cap, "%s: HTTP %d%s%s", ac->shown, r->status, *text ? ": " : "", text);
	}
}

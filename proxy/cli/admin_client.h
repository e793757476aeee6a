/* admin_client: the network half of `mcpwarden tail` and `mcpwarden
 * status` (tail.h, status.h): GETs on a running mcpwarden's admin
 * endpoint (admin/admin.h), one at a time, on an event loop of its own
 * with the upstream module (proxy/net/upstream.h), so http and https
 * admin URLs work like any upstream URL (https is verified against the
 * system's CAs; SSL_CERT_FILE names another bundle, as for OpenSSL).
 *
 * The admin token goes in "Authorization: Bearer"; it is never part of a
 * message this module writes. Failures come back as one sentence for the
 * user ("cannot connect to http://127.0.0.1:9090: connection refused",
 * "401: the admin token was refused"); nothing is printed here.
 *
 * Not here: options, what the replies mean, printing (tail.c, status.c).
 */
#ifndef MCPWARDEN_ADMIN_CLIENT_H
#define MCPWARDEN_ADMIN_CLIENT_H

#include <stddef.h>

struct sse_event;

/* What to reach (borrowed for the client's lifetime). */
struct admin_client_target {
	const char *url;      /* ADMIN_URL: http(s)://host[:port][/prefix], no query */
	const char *token;    /* the admin token, or NULL */
	double timeout_s;     /* connect, and each reply (a stream: its head) */
	double idle_s;        /* a stream silent this long (not even a
	                       * keep-alive) is taken as lost; 0: never */
};

/* A finished GET. body is NUL-terminated (owned); ctype owned or NULL. */
struct admin_reply {
	int status;
	char *body;
	size_t len;
	char *ctype;
};

/* How a stream ended. */
enum admin_stream_end {
	ADMIN_STREAM_CLOSED = 0,  /* the endpoint ended it cleanly (shutdown) */
	ADMIN_STREAM_STOPPED,     /* SIGINT/SIGTERM, or the callback said stop */
	ADMIN_STREAM_ERROR,       /* err says why */
};

/* Called per SSE block of a stream (ev borrowed for the call). Return 0
 * to go on, 1 to stop (ADMIN_STREAM_STOPPED), -1 for an error (err is
 * then "the output failed"). */
typedef int (*admin_event_fn)(void *arg, const struct sse_event *ev);

struct admin_client;

/* Parses t->url and sets up the loop. Returns an owned client, or NULL
 * with why in err (the URL is not an http(s) URL, carries a query or
 * credentials, out of memory). */
struct admin_client *admin_client_new(const struct admin_client_target *t, char *err,
                                      size_t errlen);
void admin_client_free(struct admin_client *ac);

/* The URL as it may be printed: scheme://host:port/prefix. Borrowed. */
const char *admin_client_url(const struct admin_client *ac);

/* GET path (e.g. "/readyz"), blocking on the client's loop until the
 * reply is complete (at most ADMIN_CLIENT_MAX_BODY bytes). Returns 0
 * with *r filled (any status; 401 included), or -1 with why in err.
 * admin_reply_fini(r) in both cases. */
#define ADMIN_CLIENT_MAX_BODY (16u * 1024 * 1024)
int admin_client_get(struct admin_client *ac, const char *path, struct admin_reply *r,
                     char *err, size_t errlen);
void admin_reply_fini(struct admin_reply *r);

/* GET path as a text/event-stream, calling fn per block (each at most
 * max_event bytes) until it ends. SIGINT and SIGTERM stop it; a stream
 * quiet for t->idle_s is an error (a peer gone without a word). A reply
 * that is not a 200 stream is an error; err then says why (a 401 says
 * whether a token was given). */
enum admin_stream_end admin_client_stream(struct admin_client *ac, const char *path,
                                          size_t max_event, admin_event_fn fn, void *arg,
                                          char *err, size_t errlen);

/* One sentence for a reply that is not 2xx: the endpoint's own "error"
 * text when it sent one, with a hint for 401, 403 and 404. Written to
 * buf (cut to cap). */
void admin_client_status_error(const struct admin_client *ac, const struct admin_reply *r,
                               char *buf, size_t cap);

#endif

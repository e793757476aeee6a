/* listener: a listening socket (the client one, admin's). Accepts until
 * limits.max_connections are open, then pauses until one closes: each
 * connection it opens reports its end to it (struct conn_owner, conn.h). */
#ifndef MCPWARDEN_LISTENER_H
#define MCPWARDEN_LISTENER_H

#include <stddef.h>

struct px_ctx;
struct listener;

struct transport_ops;
struct ssl_ctx_st;

/* Binds host:port; accepted connections hand their requests to ops.
 * reuseport: with SO_REUSEPORT, so that every worker has a socket of its
 * own on the same port and the kernel spreads connections over them.
 * Returns NULL with a reason in errbuf. */
struct listener *listener_new(struct px_ctx *ctx, const char *host, const char *port,
                              const struct transport_ops *ops, int reuseport, char *errbuf,
                              size_t errlen);
/* Before the workers bind host:port with SO_REUSEPORT: checks that nobody
 * listens there and resolves port 0, writing the port into `bound`.
 * Returns 0, or -1 with a reason in errbuf. */
int listener_reserve(const char *host, const char *port, char *bound, size_t boundlen,
                     char *errbuf, size_t errlen);
/* Whether host:port resolves to an address listener_new could bind (no
 * socket is opened): --check-config. Returns 0, or -1 with a reason. */
int listener_resolvable(const char *host, const char *port, char *errbuf, size_t errlen);
/* New connections speak TLS with *tls (read at each accept, so a reload
 * that swaps the context applies to the next connection). */
void listener_set_tls(struct listener *l, struct ssl_ctx_st **tls);
void listener_free(struct listener *l);
/* Re-checks the connection cap (after a connection closed). */
void listener_update(struct listener *l);
/* Ends this worker's loop when its drain is over: draining, no connection
 * left and (worker 0) no other worker still running. Run after every
 * connection's end; main runs it at the other steps of a drain. */
void listener_drain_check(struct px_ctx *ctx);
/* "127.0.0.1:8080": the address actually bound (port 0 resolved). */
const char *listener_address(const struct listener *l);

#endif

/* listener: see listener.h. */
#include "proxy/net/listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "proxy/config.h"
#include "proxy/net/conn.h"
#include "proxy/ctx.h"
#include "proxy/net/inbox.h"
#include "proxy/base/log.h"
#include "proxy/net/transport.h"

/* A connection accepted while the shared cap was full: it waits, unread,
 * for a place (as it would have in the kernel's queue). */
struct parked {
	evutil_socket_t fd;
	struct sockaddr_storage sa;
	int salen;
	struct parked *next;
};

struct listener {
	struct px_ctx *ctx;           /* borrowed */
	const struct transport_ops *ops;
	struct ssl_ctx_st **tls;      /* borrowed: where the current context is */
	struct evconnlistener *evl;   /* owned */
	struct parked *parked, **parked_tail;  /* owned FIFO */
	int paused;
	char address[80];
};

static const struct conn_owner client_owner, low_owner;

/* Takes a place under limits.max_connections, shared by every worker's
 * client connections: 1, or 0 when full. */
static int slot_take(struct px_ctx *ctx)
{
	size_t cap = ctx->cfg->limits.max_connections;
	if (__atomic_add_fetch(&ctx->proc->client_conns, 1, __ATOMIC_RELAXED) <= cap)
		return 1;
	__atomic_sub_fetch(&ctx->proc->client_conns, 1, __ATOMIC_RELAXED);
	return 0;
}

static void park(struct listener *l, evutil_socket_t fd, const struct sockaddr *sa, int salen)
{
	struct parked *p = calloc(1, sizeof(*p));
	if (!p || salen < 0 || (size_t)salen > sizeof(p->sa)) {
		free(p);
		evutil_closesocket(fd);
		return;
	}
	p->fd = fd;
	memcpy(&p->sa, sa, (size_t)salen);
	p->salen = salen;
	*l->parked_tail = p;
	l->parked_tail = &p->next;
}

/* Parked connections first, while places are free. */
static void unpark(struct listener *l)
{
	while (l->parked && slot_take(l->ctx)) {
		struct parked *p = l->parked;
		l->parked = p->next;
		if (!l->parked)
			l->parked_tail = &l->parked;
		conn_new(l->ctx, p->fd, (struct sockaddr *)&p->sa, p->salen, l->ops, &client_owner,
		         l->tls ? *l->tls : NULL);
		free(p);
	}
}

static void accept_cb(struct evconnlistener *evl, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
	struct listener *l = arg;
	int one = 1;
	(void)evl;
	/* Replies leave in as few writes as conn can make them, and the last
	 * one (a chunked reply's terminator, an SSE event) must not wait for
	 * the client's delayed ACK: Nagle off, as every HTTP server does. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Client connections take a place under the cap every worker shares
	 * before anything else: exact however the kernel spreads them. */
	if (!l->ops->low_priority && (l->parked || !slot_take(l->ctx)))
		park(l, fd, sa, salen);
	else
		conn_new(l->ctx, fd, sa, salen, l->ops,
		         l->ops->low_priority ? &low_owner : &client_owner, l->tls ? *l->tls : NULL);
	listener_update(l);
}

static void accept_error_cb(struct evconnlistener *evl, void *arg)
{
	struct listener *l = arg;
	(void)evl;
	/* EMFILE and friends: say so and keep going; existing clients are
	 * unaffected and the next close frees a descriptor. */
	log_msg(LOG_WARN, "accept failed: %s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	(void)l;
}

/* The address to listen on (numeric port; freeaddrinfo it), or NULL with
 * a reason in errbuf. */
static struct addrinfo *resolve(const char *host, const char *port, char *errbuf, size_t errlen)
{
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0 || !res) {
		snprintf(errbuf, errlen, "listen %s:%s: %s", host, port, gai_strerror(rc));
		if (res)
			freeaddrinfo(res);
		return NULL;
	}
	return res;
}

int listener_resolvable(const char *host, const char *port, char *errbuf, size_t errlen)
{
	struct addrinfo *res = resolve(host, port, errbuf, errlen);
	if (!res)
		return -1;
	freeaddrinfo(res);
	return 0;
}

int listener_reserve(const char *host, const char *port, char *bound, size_t boundlen,
                     char *errbuf, size_t errlen)
{
	struct addrinfo *res = resolve(host, port, errbuf, errlen);
	if (!res)
		return -1;
	/* Bound without SO_REUSEPORT: fails when anyone listens there,
	 * including another mcpwarden whose workers would otherwise share
	 * our port without a word. */
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(errbuf, errlen, "listen %s:%s: %s", host, port,
		         evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		if (fd >= 0)
			evutil_closesocket(fd);
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	evutil_closesocket(fd);
	int p = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
	                                 : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	snprintf(bound, boundlen, "%d", p);
	return 0;
}

struct listener *listener_new(struct px_ctx *ctx, const char *host, const char *port,
                              const struct transport_ops *ops, int reuseport, char *errbuf,
                              size_t errlen)
{
	struct addrinfo *res = resolve(host, port, errbuf, errlen);
	if (!res)
		return NULL;
	struct listener *l = calloc(1, sizeof(*l));
	if (!l) {
		freeaddrinfo(res);
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	l->ctx = ctx;
	l->ops = ops;
	l->parked_tail = &l->parked;
	l->evl = evconnlistener_new_bind(ctx->base, accept_cb, l,
	                                 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
	                                         LEV_OPT_CLOSE_ON_EXEC |
	                                         (reuseport ? LEV_OPT_REUSEABLE_PORT : 0),
	                                 1024, res->ai_addr, (int)res->ai_addrlen);
	freeaddrinfo(res);
	if (!l->evl) {
		snprintf(errbuf, errlen, "listen %s:%s: %s", host, port,
		         evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		free(l);
		return NULL;
	}
	evconnlistener_set_error_cb(l->evl, accept_error_cb);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN] = "?";
	int p = 0;
	if (getsockname(evconnlistener_get_fd(l->evl), (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
			p = ntohs(a->sin_port);
			snprintf(l->address, sizeof(l->address), "%s:%d", ip, p);
		} else {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
			p = ntohs(a->sin6_port);
			snprintf(l->address, sizeof(l->address), "[%s]:%d", ip, p);
		}
	}
	return l;
}

static void wake_listener(void *arg)
{
	struct px_ctx *ctx = arg;
	if (ctx->lst)
		listener_update(ctx->lst);
}

/* A connection ended (slot: it held a client place, given back here): the
 * listeners may resume accepting (every worker's, when the cap had been
 * reached) and main may finish a drain. */
static void note_closed(struct px_ctx *ctx, int slot)
{
	int was_full = 0;
	if (slot)
		was_full = __atomic_sub_fetch(&ctx->proc->client_conns, 1, __ATOMIC_RELAXED) + 1 >=
		           ctx->cfg->limits.max_connections;
	if (ctx->lst)
		listener_update(ctx->lst);
	/* The cap on client connections is shared: when this close made
	 * room, a worker that paused its listener must hear of it. */
	if (was_full && ctx->proc->nworkers > 1)
		for (size_t i = 0; i < ctx->proc->nworkers; i++)
			if (ctx->proc->workers[i] != ctx)
				inbox_post(ctx->proc->workers[i]->inbox, wake_listener, NULL, ctx->proc->workers[i]);
	listener_drain_check(ctx);
}

/* Client connections hold a place under the shared cap until they end;
 * one that moved to another worker took its place along. Admin's
 * (low-priority) take none: their listener counts its own. */
static void client_closed(struct px_ctx *ctx, int moved)
{
	note_closed(ctx, !moved);
}

static void low_closed(struct px_ctx *ctx, int moved)
{
	(void)moved;
	note_closed(ctx, 0);
}

static const struct conn_owner client_owner = {.closed = client_closed};
static const struct conn_owner low_owner = {.closed = low_closed};

void listener_drain_check(struct px_ctx *ctx)
{
	/* Worker 0 outlives the others: it reads the signals, and a second
	 * one must exit at once whichever worker still drains. */
	int others_running = ctx->worker_id == 0 && ctx->proc->workers_running > 0;
	if (ctx->draining && ctx->nconns == 0 && !others_running)
		event_base_loopexit(ctx->base, NULL);
}

void listener_set_tls(struct listener *l, struct ssl_ctx_st **tls)
{
	l->tls = tls;
}

void listener_free(struct listener *l)
{
	if (!l)
		return;
	evconnlistener_free(l->evl);
	for (struct parked *p = l->parked, *next; p; p = next) {
		next = p->next;
		evutil_closesocket(p->fd);
		free(p);
	}
	free(l);
}

void listener_update(struct listener *l)
{
	const struct px_ctx *ctx = l->ctx;
	if (!l->ops->low_priority)
		unpark(l);
	size_t open = l->ops->low_priority
	                      ? ctx->nconns_low
	                      : __atomic_load_n(&ctx->proc->client_conns, __ATOMIC_RELAXED);
	int full = l->parked || open >= ctx->cfg->limits.max_connections;
	if (full && !l->paused) {
		evconnlistener_disable(l->evl);
		l->paused = 1;
		log_msg(LOG_WARN, "%zu %s connections open: not accepting more for now", open,
		        l->ops->name);
	} else if (!full && l->paused) {
		evconnlistener_enable(l->evl);
		l->paused = 0;
	}
}

const char *listener_address(const struct listener *l)
{
	return l->address;
}

/* relay: the bench table's floor, a TCP byte pump between the client and
 * the upstream fixture with nothing on top: what any HTTP proxy on this
 * machine must at least spend per call.
 *
 *   relay --port P --upstream U [--workers N]
 *
 * Each accepted client connection gets one upstream connection of its own
 * (127.0.0.1:U), opened at accept and kept for the client connection's
 * life: a keep-alive client is a keep-alive upstream connection, 1:1. The
 * bytes of each direction are read into a buffer and written to the other
 * side as they are; nothing is parsed, so pipelined requests, chunked and
 * SSE replies, large listings and sessions all pass because the relay never
 * looks at them. An EOF is passed on as a half-close once what came before
 * it is written; the pair is closed when both directions have ended, or at
 * the first error.
 *
 * N workers (default 1; the bench gives mcpwarden's --workers count), each
 * a thread with its own epoll and its own listening socket on the same port
 * (SO_REUSEPORT, so the kernel spreads connections), the way mcpwarden's
 * workers and nginx's processes share a port. Level-triggered epoll, one
 * read and one write per readiness: per request and direction that is an
 * epoll_wait, a recv and a send, the fewest a user-space proxy can do
 * without splice.
 *
 * Left out on purpose: HTTP (no header, no rewrite, no timeout), TLS,
 * anything but loopback.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "benchnet.h"

#define RELAY_BUF (64 * 1024)  /* per direction: a 448 KB listing in 7 reads */
#define RELAY_EVENTS 256
#define RELAY_MAX_WORKERS 64

/* One direction: bytes read from end `from`, waiting to be written to the
 * other end. Invariant: off <= len; len == 0 when nothing is pending. */
struct relay_dir {
	char buf[RELAY_BUF];
	size_t off, len;
	int eof;    /* the reading end sent FIN */
	int shut;   /* FIN passed on (shutdown SHUT_WR of the other end) */
};

struct relay_pair;

/* One socket of a pair; the epoll data points here. */
struct relay_end {
	int fd;
	int side;                  /* 0 client, 1 upstream */
	uint32_t interest;         /* what epoll watches now */
	struct relay_pair *pair;   /* borrowed: the owner */
};

struct relay_pair {
	struct relay_end end[2];
	struct relay_dir dir[2];   /* dir[i]: from end[i] to end[1 - i] */
	int dead;                  /* closed; freed after the current batch */
	struct relay_pair *next_dead;
};

struct relay_worker {
	int port, upstream;
	int lfd, ep;
	struct relay_pair *dead;   /* closed this batch: events may still name them */
};

static void pair_close(struct relay_worker *w, struct relay_pair *p)
{
	if (p->dead)
		return;
	p->dead = 1;
	close(p->end[0].fd); /* also removes them from the epoll set */
	close(p->end[1].fd);
	p->next_dead = w->dead;
	w->dead = p;
}

/* What end i waits for: reading while its direction has nothing pending
 * (back-pressure otherwise), writing while the other direction has. */
static uint32_t end_interest(const struct relay_pair *p, int i)
{
	uint32_t ev = 0;
	if (p->dir[i].len == 0 && !p->dir[i].eof)
		ev |= EPOLLIN;
	if (p->dir[1 - i].len > 0)
		ev |= EPOLLOUT;
	return ev;
}

static int pair_watch(struct relay_worker *w, struct relay_pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct relay_end *e = &p->end[i];
		uint32_t ev = end_interest(p, i);
		if (ev == e->interest)
			continue;
		struct epoll_event ee = { .events = ev, .data.ptr = e };
		if (epoll_ctl(w->ep, EPOLL_CTL_MOD, e->fd, &ee) < 0)
			return -1;
		e->interest = ev;
	}
	return 0;
}

/* Write what direction i holds to the other end; pass its EOF on once
 * empty. -1 on a write error. */
static int dir_flush(struct relay_pair *p, int i)
{
	struct relay_dir *d = &p->dir[i];
	int to = p->end[1 - i].fd;
	if (d->len > 0) {
		ssize_t n = send(to, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
		if (n < 0)
			return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
		d->off += (size_t)n;
		if (d->off == d->len)
			d->off = d->len = 0;
	}
	if (d->len == 0 && d->eof && !d->shut) {
		d->shut = 1;
		shutdown(to, SHUT_WR);
	}
	return 0;
}

/* One read from end i into its (empty) direction, then one write. */
static int dir_fill(struct relay_pair *p, int i)
{
	struct relay_dir *d = &p->dir[i];
	if (d->len > 0 || d->eof)
		return 0;
	ssize_t n = recv(p->end[i].fd, d->buf, sizeof(d->buf), 0);
	if (n < 0)
		return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
	if (n == 0)
		d->eof = 1;
	else
		d->len = (size_t)n;
	return dir_flush(p, i);
}

static void end_event(struct relay_worker *w, struct relay_end *e, uint32_t ev)
{
	struct relay_pair *p = e->pair;
	int i = e->side;
	if (p->dead)
		return;
	/* A socket error (a reset) ends the pair: the peer gave up, and
	 * epoll would report it again on every wait. A hang-up (both
	 * directions shut) is read to its EOF like any readiness. */
	if (ev & EPOLLERR)
		goto fail;
	if ((ev & (EPOLLOUT | EPOLLHUP)) && dir_flush(p, 1 - i) < 0)
		goto fail;
	if ((ev & (EPOLLIN | EPOLLHUP)) && dir_fill(p, i) < 0)
		goto fail;
	if (p->dir[0].shut && p->dir[1].shut)
		goto fail; /* both directions ended: done, not an error */
	if (pair_watch(w, p) < 0)
		goto fail;
	return;
fail:
	pair_close(w, p);
}

static void relay_accept(struct relay_worker *w)
{
	for (;;) {
		int cfd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return; /* EAGAIN, or out of descriptors: the backlog keeps it */
		int one = 1;
		setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		/* A blocking connect on loopback takes microseconds; it keeps the
		 * pair's states to "connected". */
		int ufd = bn_connect(w->upstream);
		struct relay_pair *p = ufd < 0 ? NULL : calloc(1, sizeof(*p));
		if (!p) {
			if (ufd >= 0)
				close(ufd);
			close(cfd);
			continue;
		}
		int fds[2] = { cfd, ufd };
		int ok = 1;
		for (int i = 0; i < 2; i++) {
			p->end[i] = (struct relay_end){ .fd = fds[i], .side = i, .interest = EPOLLIN, .pair = p };
			struct epoll_event ee = { .events = EPOLLIN, .data.ptr = &p->end[i] };
			if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fds[i], &ee) < 0)
				ok = 0;
		}
		if (!ok) {
			close(cfd);
			close(ufd);
			free(p);
		}
	}
}

static void *worker_main(void *arg)
{
	struct relay_worker *w = arg;
	struct epoll_event evs[RELAY_EVENTS];
	for (;;) {
		int n = epoll_wait(w->ep, evs, RELAY_EVENTS, -1);
		if (n < 0 && errno != EINTR) {
			perror("relay: epoll_wait");
			exit(1);
		}
		for (int k = 0; k < n; k++) {
			if (evs[k].data.ptr == NULL)
				relay_accept(w);
			else
				end_event(w, evs[k].data.ptr, evs[k].events);
		}
		while (w->dead) {
			struct relay_pair *p = w->dead;
			w->dead = p->next_dead;
			free(p);
		}
	}
	return NULL;
}

static int listen_reuseport(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int worker_init(struct relay_worker *w, int port, int upstream)
{
	*w = (struct relay_worker){ .port = port, .upstream = upstream };
	w->lfd = listen_reuseport(port);
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ee = { .events = EPOLLIN, .data.ptr = NULL };
	if (w->lfd < 0 || w->ep < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->lfd, &ee) < 0) {
		fprintf(stderr, "relay: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long port = 0, upstream = 0, workers = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = bn_parse_long("--port", argv[++i], 1, 65535);
		else if (!strcmp(argv[i], "--upstream") && i + 1 < argc)
			upstream = bn_parse_long("--upstream", argv[++i], 1, 65535);
		else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			workers = bn_parse_long("--workers", argv[++i], 1, RELAY_MAX_WORKERS);
		else {
			fprintf(stderr, "usage: relay --port P --upstream U [--workers N]\n");
			return 2;
		}
	}
	if (!port || !upstream) {
		fprintf(stderr, "usage: relay --port P --upstream U [--workers N]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	bn_raise_nofile(20000);
	static struct relay_worker ws[RELAY_MAX_WORKERS];
	/* Every listener is bound before any thread runs, so the port is whole
	 * once the bench sees it listening. */
	for (long i = 0; i < workers; i++)
		if (worker_init(&ws[i], (int)port, (int)upstream) < 0)
			return 1;
	for (long i = 1; i < workers; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker_main, &ws[i]) != 0) {
			fprintf(stderr, "relay: cannot start worker %ld\n", i);
			return 1;
		}
	}
	worker_main(&ws[0]);
	return 0;
}

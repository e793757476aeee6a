/* sockread: see sockread.h. */
#include "proxy/net/sockread.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <event2/buffer.h>
#include <event2/event.h>

/* A wake-up's first read's space: a whole tools/call or its reply in one
 * syscall. libevent rounds a chain (this plus its header) up to a power
 * of two: under 8 KiB, the chain is 8 KiB, ~200 instructions cheaper
 * to get and give back per read than the 32 KiB chain a 16 KiB read
 * made (callgrind, jemalloc). */
#define SOCKREAD_FIRST   (8192 - 128)
/* When that filled up, more is coming: the next reads take more at once
 * (a 16 KiB chain), a good piece of a tools/list per syscall. */
#define SOCKREAD_CHUNK   (16384 - 128)
/* Reads per wake-up while each fills its space: other connections of the
 * loop get their turn after 56 KiB. */
#define SOCKREAD_ROUNDS  4

struct sockread {
	struct bufferevent *bev;  /* borrowed */
	struct event *ev;         /* owned; made on first enable (plain only) */
	int plain;
	int enabled;
	size_t bytes, reads;
};

struct sockread *sockread_new(struct bufferevent *bev, int plain)
{
	struct sockread *sr = calloc(1, sizeof(*sr));
	if (!sr)
		return NULL;
	sr->bev = bev;
	sr->plain = plain;
	return sr;
}

void sockread_free(struct sockread *sr)
{
	if (!sr)
		return;
	if (sr->ev)
		event_free(sr->ev);
	free(sr);
}

/* Reading stops, then the bufferevent's event callback hears why. The
 * callback may free everything: nothing is touched after it. */
static void stop_and_tell(struct sockread *sr, short what, int err)
{
	bufferevent_event_cb eventcb;
	void *arg;

	sockread_disable(sr);
	bufferevent_getcb(sr->bev, NULL, NULL, &eventcb, &arg);
	if (eventcb) {
		errno = err;
		eventcb(sr->bev, (short)(BEV_EVENT_READING | what), arg);
	}
}

/* One readv into the input's free space. >0 bytes (*full: as many as
 * there was room for), 0 EOF, -1 errno. */
static ssize_t read_once(struct sockread *sr, evutil_socket_t fd, struct evbuffer *in,
                         size_t size, int *full)
{
	struct evbuffer_iovec v[2];
	int n = evbuffer_reserve_space(in, (ev_ssize_t)size, v, 2);
	if (n <= 0) {
		errno = ENOMEM;
		return -1;
	}
	struct iovec iov[2];
	size_t room = 0;
	for (int i = 0; i < n; i++) {
		iov[i] = (struct iovec){v[i].iov_base, v[i].iov_len};
		room += v[i].iov_len;
	}
	ssize_t got = readv(fd, iov, n);
	if (got <= 0) {
		int err = errno;
		evbuffer_commit_space(in, v, 0);
		errno = err;
		return got;
	}
	size_t left = (size_t)got;
	for (int i = 0; i < n; i++) {
		size_t take = left < v[i].iov_len ? left : v[i].iov_len;
		v[i].iov_len = take;
		left -= take;
	}
	evbuffer_commit_space(in, v, n);
	*full = (size_t)got == room;
	sr->bytes += (size_t)got;
	sr->reads++;
	return got;
}

static void read_ev(evutil_socket_t fd, short what, void *arg)
{
	struct sockread *sr = arg;
	struct evbuffer *in = bufferevent_get_input(sr->bev);
	size_t total = 0;
	int full = 0;

	(void)what;
	/* The bufferevent keeps its input's end frozen so that only its
	 * reader adds to it; so does this one. */
	evbuffer_unfreeze(in, 0);
	for (int round = 0; round < SOCKREAD_ROUNDS; round++) {
		ssize_t got = read_once(sr, fd, in, round ? SOCKREAD_CHUNK : SOCKREAD_FIRST, &full);
		if (got == 0) {
			if (total)
				break; /* the bytes first; EOF is met on the next wake-up */
			evbuffer_freeze(in, 0);
			stop_and_tell(sr, BEV_EVENT_EOF, 0);
			return;
		}
		if (got < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				break;
			if (total)
				break; /* the bytes first; the error stays for the next read */
			int err = errno;
			evbuffer_freeze(in, 0);
			stop_and_tell(sr, BEV_EVENT_ERROR, err);
			return;
		}
		total += (size_t)got;
		if (!full)
			break; /* the socket is empty: no read to learn it */
	}
	evbuffer_freeze(in, 0);
	if (!total)
		return;
	bufferevent_data_cb readcb;
	void *cbarg;
	bufferevent_getcb(sr->bev, &readcb, NULL, NULL, &cbarg);
	if (readcb)
		readcb(sr->bev, cbarg);
}

int sockread_enable(struct sockread *sr)
{
	if (!sr->plain)
		return bufferevent_enable(sr->bev, EV_READ);
	if (!sr->ev) {
		evutil_socket_t fd = bufferevent_getfd(sr->bev);
		if (fd < 0)
			return -1;
		sr->ev = event_new(bufferevent_get_base(sr->bev), fd, EV_READ | EV_PERSIST, read_ev, sr);
		if (!sr->ev)
			return -1;
		/* Same priority as the bufferevent's write side. */
		event_priority_set(sr->ev, bufferevent_get_priority(sr->bev));
	}
	if (event_add(sr->ev, NULL) < 0)
		return -1;
	sr->enabled = 1;
	return 0;
}

void sockread_disable(struct sockread *sr)
{
	if (!sr->plain) {
		bufferevent_disable(sr->bev, EV_READ);
		return;
	}
	if (sr->ev && sr->enabled)
		event_del(sr->ev);
	sr->enabled = 0;
}

int sockread_enabled(const struct sockread *sr)
{
	if (!sr->plain)
		return (bufferevent_get_enabled(sr->bev) & EV_READ) != 0;
	return sr->enabled;
}

void sockread_stats(const struct sockread *sr, size_t *bytes, size_t *reads)
{
	*bytes = sr->bytes;
	*reads = sr->reads;
}

/* inbox: see inbox.h. A mutex-protected FIFO of work items and an eventfd
 * the target's loop watches. The eventfd is written only when the list
 * goes from empty to non-empty, so a burst of posts costs one wakeup. */
#include "proxy/net/inbox.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/ctx.h"

struct inbox_item {
	inbox_fn fn, drop;
	void *arg;
	struct inbox_item *next;
};

struct inbox {
	pthread_mutex_t lock;
	struct inbox_item *head, **tail;  /* guarded by lock */
	int efd;
	struct event *ev;                 /* owned */
};

static struct inbox_item *take_all(struct inbox *ib)
{
	pthread_mutex_lock(&ib->lock);
	struct inbox_item *all = ib->head;
	ib->head = NULL;
	ib->tail = &ib->head;
	pthread_mutex_unlock(&ib->lock);
	return all;
}

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct inbox *ib = arg;
	uint64_t n;
	(void)what;
	/* Reset the counter before taking the list: a post racing with us
	 * either lands in this batch or writes the eventfd again. */
	while (read(fd, &n, sizeof(n)) < 0 && errno == EINTR)
		;
	for (struct inbox_item *it = take_all(ib), *next; it; it = next) {
		next = it->next;
		it->fn(it->arg);
		free(it);
	}
}

struct inbox *inbox_new(struct event_base *base)
{
	struct inbox *ib = calloc(1, sizeof(*ib));
	if (!ib)
		return NULL;
	ib->tail = &ib->head;
	ib->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ib->efd < 0 || pthread_mutex_init(&ib->lock, NULL) != 0) {
		if (ib->efd >= 0)
			close(ib->efd);
		free(ib);
		return NULL;
	}
	ib->ev = event_new(base, ib->efd, EV_READ | EV_PERSIST, wake_cb, ib);
	if (!ib->ev || event_priority_set(ib->ev, PX_PRIO_DEFAULT) < 0 || event_add(ib->ev, NULL) < 0) {
		if (ib->ev)
			event_free(ib->ev);
		pthread_mutex_destroy(&ib->lock);
		close(ib->efd);
		free(ib);
		return NULL;
	}
	return ib;
}

void inbox_free(struct inbox *ib)
{
	if (!ib)
		return;
	event_free(ib->ev);
	for (struct inbox_item *it = take_all(ib), *next; it; it = next) {
		next = it->next;
		if (it->drop)
			it->drop(it->arg);
		free(it);
	}
	pthread_mutex_destroy(&ib->lock);
	close(ib->efd);
	free(ib);
}

int inbox_post(struct inbox *ib, inbox_fn fn, inbox_fn drop, void *arg)
{
	struct inbox_item *it = malloc(sizeof(*it));
	if (!it)
		return -1;
	*it = (struct inbox_item){fn, drop, arg, NULL};
	pthread_mutex_lock(&ib->lock);
	int was_empty = ib->head == NULL;
	*ib->tail = it;
	ib->tail = &it->next;
	pthread_mutex_unlock(&ib->lock);
	if (was_empty) {
		uint64_t one = 1;
		/* Can only fail when the counter would overflow: it is then
		 * already non-zero and the loop wakes anyway. */
		while (write(ib->efd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
	}
	return 0;
}

/* deadline: see deadline.h. */
#include "proxy/net/deadline.h"
#include "proxy/base/clock.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>
#include <event2/event_struct.h>

enum deadline_state {
	DEADLINE_OFF,    /* never set, or cleared: the timer event is not added */
	DEADLINE_ARMED,  /* the timer event is added, to go off at due or
	                  * before it (deadline_push moved due on since) */
	DEADLINE_FIRED,  /* due passed and the callback ran; the event is not added */
};

struct deadline {
	struct event ev;          /* the one timer event, assigned once */
	deadline_fn *fn;
	void *arg;
	/* CLOCK_MONOTONIC_COARSE in µs, while ARMED. One integer, not a
	 * timespec: the struct then fits jemalloc's 160-byte class, not the
	 * 192 one (every connection holds two, an upstream request one). */
	uint64_t due_us;
	enum deadline_state state;
	int pushed;               /* due moved past the timer's (deadline_push) */
};

/* ms milliseconds from now. */
static uint64_t due_in(unsigned ms)
{
	return clock_mono_coarse_us() + (uint64_t)ms * 1000;
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct deadline *d = arg;
	(void)fd;
	(void)what;
	uint64_t now = clock_mono_coarse_us();
	if (d->pushed && now < d->due_us) {
		/* Pushed on since the timer was added: wait for the rest. */
		d->pushed = 0;
		uint64_t left = d->due_us - now;
		struct timeval tv = {(time_t)(left / 1000000), (suseconds_t)(left % 1000000)};
		if (evtimer_add(&d->ev, &tv) == 0)
			return;
	}
	d->state = DEADLINE_FIRED;
	d->fn(d->arg);
}

struct deadline *deadline_new(struct event_base *base, deadline_fn *fn, void *arg)
{
	struct deadline *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	if (evtimer_assign(&d->ev, base, deadline_cb, d) < 0) {
		free(d);
		return NULL;
	}
	d->fn = fn;
	d->arg = arg;
	return d;
}

void deadline_free(struct deadline *d)
{
	if (!d)
		return;
	deadline_clear(d);
	free(d);
}

int deadline_set_priority(struct deadline *d, int prio)
{
	return event_priority_set(&d->ev, prio);
}

int deadline_set(struct deadline *d, unsigned ms)
{
	if (!ms) {
		deadline_clear(d);
		return 0;
	}
	d->due_us = due_in(ms);
	d->pushed = 0;
	/* Adding an added timer moves it: no event_del first. */
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	if (evtimer_add(&d->ev, &tv) < 0) {
		d->state = DEADLINE_OFF;
		return -1;
	}
	d->state = DEADLINE_ARMED;
	return 0;
}

int deadline_push(struct deadline *d, unsigned ms)
{
	if (d->state != DEADLINE_ARMED)
		return 0;
	if (!ms)
		return deadline_set(d, ms);
	uint64_t due = due_in(ms);
	/* Earlier than the timer's (a shorter ms): the timer must move. */
	if (due < d->due_us)
		return deadline_set(d, ms);
	d->due_us = due;
	d->pushed = 1;
	return 0;
}

void deadline_clear(struct deadline *d)
{
	/* event_del costs even when nothing is added: only when ARMED. */
	if (d->state == DEADLINE_ARMED)
		evtimer_del(&d->ev);
	d->state = DEADLINE_OFF;
}

int deadline_armed(const struct deadline *d)
{
	return d->state != DEADLINE_OFF;
}

int deadline_expired(const struct deadline *d)
{
	if (d->state != DEADLINE_ARMED)
		return d->state == DEADLINE_FIRED;
	return clock_mono_coarse_us() >= d->due_us;
}

/* deadline: one time limit for one owner, on one timer event.
 *
 * An owner (an upstream request, a client connection) that must finish a
 * step within some time holds one deadline: deadline_set starts it (again),
 * deadline_clear stops it, and when it runs out its callback runs once
 * from the event loop. Nothing else: no timer kept armed across uses, no
 * second timestamp to reconcile with the timer's. The one clock is
 * CLOCK_MONOTONIC_COARSE, the one libevent's timers use on Linux (without
 * EVENT_BASE_FLAG_PRECISE_TIMER): a wall-clock step moves no deadline.
 * An idle timeout (no byte for so long) is a deadline pushed on at every
 * byte (deadline_push): that only notes the new time, and the timer, when
 * it goes off early, waits for the rest.
 *
 *   OFF ──set──▶ ARMED ──time passes──▶ FIRED (callback ran)
 *    ▲            │  ▲                    │
 *    └──clear─────┘  └───────set──────────┘    (clear from any state: OFF)
 */
#ifndef MCPWARDEN_DEADLINE_H
#define MCPWARDEN_DEADLINE_H

struct event_base;
struct deadline;

/* Runs from the loop when the deadline runs out; the deadline is FIRED
 * then, and the callback may set, clear or free it. */
typedef void deadline_fn(void *arg);

/* NULL when out of memory. */
struct deadline *deadline_new(struct event_base *base, deadline_fn *fn, void *arg);
/* Accepts NULL. */
void deadline_free(struct deadline *d);
/* libevent priority of the timer event (event_priority_set). 0 or -1. */
int deadline_set_priority(struct deadline *d, int prio);

/* Starts the deadline ms milliseconds from now, replacing any earlier
 * one. ms 0: the same as deadline_clear. 0, or -1 (the timer could not be
 * added: the deadline is OFF). */
int deadline_set(struct deadline *d, unsigned ms);
/* For a timeout restarted by every read: an ARMED deadline moves to ms
 * from now (later: only the time is noted, and the timer, once there,
 * waits for the rest; earlier: as deadline_set). One OFF or FIRED stays
 * so. ms 0: the same as deadline_clear. 0, or -1 (as deadline_set). */
int deadline_push(struct deadline *d, unsigned ms);
/* Stops it: no callback until the next deadline_set. */
void deadline_clear(struct deadline *d);
/* The deadline is set (ARMED or FIRED since the last set). */
int deadline_armed(const struct deadline *d);
/* It ran out: its callback ran, or the time is past and the callback has
 * not run yet (the loop has not got to it in this turn). */
int deadline_expired(const struct deadline *d);

#endif

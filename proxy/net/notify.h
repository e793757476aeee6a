/* notify: tells the service manager (systemd, Type=notify) how the process
 * is doing, through the documented datagram protocol (sd_notify(3)): one
 * datagram of "KEY=VALUE\n" lines to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace). No
 * libsystemd: the protocol is a sendto(2), and the daemon then needs no
 * library that only exists on systemd machines.
 *
 * Without $NOTIFY_SOCKET (not started by systemd) notify_new returns NULL
 * and every function here accepts NULL and does nothing. A send never
 * blocks (a full socket drops the message: the manager reads it at once
 * anyway) and a failure is logged once, not on every watchdog tick.
 *
 * The watchdog (WatchdogSec= sets $WATCHDOG_USEC, and $WATCHDOG_PID when
 * it names the process meant) is a persistent timer on one event loop
 * (worker 0's), sending WATCHDOG=1 every half period: it stops when that
 * loop stops turning, which is what the manager should notice.
 *
 * Not here: when each message is sent (proxy/main.c decides).
 */
#ifndef MCPWARDEN_NOTIFY_H
#define MCPWARDEN_NOTIFY_H

#include <stdint.h>
#include <sys/types.h>

struct event_base;
struct notify;

/* From the environment ($NOTIFY_SOCKET, $WATCHDOG_USEC, $WATCHDOG_PID).
 * NULL when there is nothing to notify (no socket) or on an error, which
 * is logged (a bad address, no memory, no descriptor). */
struct notify *notify_new(void);

/* The same from given values (NULL: unset), for tests; self is the pid
 * that $WATCHDOG_PID must name. */
struct notify *notify_new_from(const char *socket, const char *watchdog_usec,
                               const char *watchdog_pid, pid_t self);

/* Stops the watchdog timer and closes the socket. Accepts NULL. Call
 * before the watchdog's event base is freed. */
void notify_free(struct notify *n);

/* Sends msg as one datagram. 0 sent, -1 not (logged the first time). */
int notify_send(struct notify *n, const char *msg);

/* READY=1: every listener is bound (after a start or a reload). */
int notify_ready(struct notify *n);
/* RELOADING=1 with MONOTONIC_USEC=now (CLOCK_MONOTONIC µs), as systemd
 * 253's Type=notify-reload wants it; READY=1 must follow. */
int notify_reloading(struct notify *n);
/* STOPPING=1: draining has begun. */
int notify_stopping(struct notify *n);

/* The watchdog period in µs, 0 when none is wanted of this process. */
uint64_t notify_watchdog_usec(const struct notify *n);

/* Starts sending WATCHDOG=1 every period / 2 from base's loop (one
 * WATCHDOG=1 at once too). 0 started or no watchdog wanted, -1 (logged)
 * when the timer cannot be made. */
int notify_watchdog_start(struct notify *n, struct event_base *base);

#endif

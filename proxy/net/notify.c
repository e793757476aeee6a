/* notify: see notify.h. */
#include "proxy/net/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/base/clock.h"
#include "proxy/base/log.h"

struct notify {
	int fd;                     /* owned: AF_UNIX SOCK_DGRAM, non-blocking */
	struct sockaddr_un addr;
	socklen_t addrlen;
	uint64_t watchdog_usec;     /* 0: no watchdog wanted of this process */
	struct event *watchdog;     /* owned, or NULL */
	int failed;                 /* a send failed and was logged */
};

/* "/run/systemd/notify" or "@name" (abstract: a leading NUL, and the
 * length counts exactly the name's bytes, no terminator). */
static int address_parse(struct notify *n, const char *s)
{
	size_t len = strlen(s);
	if ((s[0] != '/' && s[0] != '@') || len < 2 || len >= sizeof(n->addr.sun_path))
		return -1;
	n->addr.sun_family = AF_UNIX;
	memcpy(n->addr.sun_path, s, len);
	if (s[0] == '@')
		n->addr.sun_path[0] = '\0';
	n->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (s[0] == '/'));
	return 0;
}

/* A positive decimal, nothing after it; 0 otherwise. */
static uint64_t decimal_parse(const char *s)
{
	if (!s || *s < '0' || *s > '9')
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	return errno || *end ? 0 : (uint64_t)v;
}

static uint64_t watchdog_parse(const char *usec, const char *pid, pid_t self)
{
	if (!usec)
		return 0;
	uint64_t v = decimal_parse(usec);
	if (!v) {
		log_msg(LOG_WARN, "systemd: WATCHDOG_USEC=%s is not a positive number: no watchdog", usec);
		return 0;
	}
	/* Meant for another process (a parent that exec'd us would have
	 * left it behind): not ours to answer. */
	if (pid && decimal_parse(pid) != (uint64_t)self)
		return 0;
	return v;
}

struct notify *notify_new_from(const char *socket_name, const char *watchdog_usec,
                               const char *watchdog_pid, pid_t self)
{
	if (!socket_name || !*socket_name)
		return NULL;
	struct notify *n = calloc(1, sizeof(*n));
	if (!n) {
		log_msg(LOG_ERROR, "systemd: out of memory: the service manager is not notified");
		return NULL;
	}
	n->fd = -1;
	if (address_parse(n, socket_name) < 0) {
		log_msg(LOG_ERROR, "systemd: NOTIFY_SOCKET=%s is not an absolute path or an @name: "
		                   "the service manager is not notified", socket_name);
		goto fail;
	}
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (n->fd < 0) {
		log_msg(LOG_ERROR, "systemd: no socket for NOTIFY_SOCKET (%s): the service manager is "
		                   "not notified", strerror(errno));
		goto fail;
	}
	n->watchdog_usec = watchdog_parse(watchdog_usec, watchdog_pid, self);
	return n;
fail:
	free(n);
	return NULL;
}

struct notify *notify_new(void)
{
	return notify_new_from(getenv("NOTIFY_SOCKET"), getenv("WATCHDOG_USEC"),
	                       getenv("WATCHDOG_PID"), getpid());
}

void notify_free(struct notify *n)
{
	if (!n)
		return;
	if (n->watchdog)
		event_free(n->watchdog);
	close(n->fd);
	free(n);
}

int notify_send(struct notify *n, const char *msg)
{
	if (!n)
		return 0;
	size_t len = strlen(msg);
	/* MSG_DONTWAIT as well as the non-blocking socket: the loop must
	 * never wait on the manager. */
	ssize_t r = sendto(n->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL,
	                   (const struct sockaddr *)&n->addr, n->addrlen);
	if (r == (ssize_t)len) {
		if (n->failed)
			log_msg(LOG_INFO, "systemd: notifications reach the service manager again");
		n->failed = 0;
		return 0;
	}
	if (!n->failed)
		log_msg(LOG_WARN, "systemd: a notification did not reach the service manager (%s); "
		                  "not logged again until one does",
		        r < 0 ? strerror(errno) : "cut short");
	n->failed = 1;
	return -1;
}

int notify_ready(struct notify *n)
{
	return notify_send(n, "READY=1");
}

int notify_reloading(struct notify *n)
{
	char msg[64];
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
	         (unsigned long long)clock_mono_us());
	return notify_send(n, msg);
}

int notify_stopping(struct notify *n)
{
	return notify_send(n, "STOPPING=1");
}

uint64_t notify_watchdog_usec(const struct notify *n)
{
	return n ? n->watchdog_usec : 0;
}

static void watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	notify_send(arg, "WATCHDOG=1");
}

int notify_watchdog_start(struct notify *n, struct event_base *base)
{
	if (!n || !n->watchdog_usec || n->watchdog)
		return 0;
	/* Half the period, as sd_watchdog_enabled(3) advises: one late loop
	 * turn must not cost the process its life. */
	uint64_t half = n->watchdog_usec / 2;
	if (!half)
		half = 1;
	struct timeval tv = {(time_t)(half / 1000000u), (suseconds_t)(half % 1000000u)};
	n->watchdog = event_new(base, -1, EV_PERSIST, watchdog_cb, n);
	if (!n->watchdog || event_add(n->watchdog, &tv) < 0) {
		log_msg(LOG_ERROR, "systemd: cannot start the watchdog timer: the service manager "
		                   "will think the process hangs");
		if (n->watchdog)
			event_free(n->watchdog);
		n->watchdog = NULL;
		return -1;
	}
	notify_send(n, "WATCHDOG=1");
	return 0;
}

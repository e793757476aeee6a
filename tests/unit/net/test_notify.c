/* Unit tests for proxy/net/notify.c: no NOTIFY_SOCKET means no object and
 * every call a no-op; a path and an abstract "@name" socket each get the
 * messages as single datagrams (READY=1, STOPPING=1, RELOADING=1 with a
 * monotonic timestamp taken between before and after); a bad address is
 * refused; WATCHDOG_USEC is honoured only when positive and when
 * WATCHDOG_PID is absent or ours; the watchdog timer sends WATCHDOG=1 at
 * once and again from the loop; a send to a socket nobody listens on
 * fails without blocking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include <event2/event.h>

#include "proxy/base/clock.h"
#include "proxy/net/notify.h"

/* A bound receiving socket at name ("/path" or "@abstract"). */
static int listen_at(const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	assert_true(len < sizeof(a.sun_path));
	memcpy(a.sun_path, name, len);
	if (name[0] == '@')
		a.sun_path[0] = '\0';
	else
		unlink(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	assert_true(fd >= 0);
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (name[0] == '/'));
	assert_int_equal(bind(fd, (struct sockaddr *)&a, alen), 0);
	return fd;
}

/* The next datagram's text, or "" when none is waiting. */
static const char *next_msg(int fd, char *buf, size_t len)
{
	ssize_t r = recv(fd, buf, len - 1, MSG_DONTWAIT);
	buf[r > 0 ? r : 0] = '\0';
	return buf;
}

static void test_no_socket(void **state)
{
	(void)state;
	assert_null(notify_new_from(NULL, "1000", NULL, getpid()));
	assert_null(notify_new_from("", NULL, NULL, getpid()));
	/* Everything accepts NULL. */
	assert_int_equal(notify_ready(NULL), 0);
	assert_int_equal(notify_reloading(NULL), 0);
	assert_int_equal(notify_stopping(NULL), 0);
	assert_int_equal(notify_watchdog_usec(NULL), 0);
	assert_int_equal(notify_watchdog_start(NULL, NULL), 0);
	notify_free(NULL);
}

static void test_bad_address(void **state)
{
	(void)state;
	assert_null(notify_new_from("relative/path", NULL, NULL, getpid()));
	assert_null(notify_new_from("@", NULL, NULL, getpid()));
	char longname[200];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';
	assert_null(notify_new_from(longname, NULL, NULL, getpid()));
}

static void check_messages(const char *name)
{
	char buf[256];
	int fd = listen_at(name);
	struct notify *n = notify_new_from(name, NULL, NULL, getpid());
	assert_non_null(n);
	assert_int_equal(notify_ready(n), 0);
	assert_string_equal(next_msg(fd, buf, sizeof(buf)), "READY=1");
	uint64_t before = clock_mono_us();
	assert_int_equal(notify_reloading(n), 0);
	uint64_t after = clock_mono_us();
	unsigned long long ts = 0;
	assert_int_equal(sscanf(next_msg(fd, buf, sizeof(buf)), "RELOADING=1\nMONOTONIC_USEC=%llu", &ts), 1);
	assert_true(ts >= before && ts <= after);
	assert_int_equal(notify_stopping(n), 0);
	assert_string_equal(next_msg(fd, buf, sizeof(buf)), "STOPPING=1");
	assert_string_equal(next_msg(fd, buf, sizeof(buf)), "");
	notify_free(n);
	close(fd);
	if (name[0] == '/')
		unlink(name);
}

static void test_path_socket(void **state)
{
	(void)state;
	char name[64];
	snprintf(name, sizeof(name), "/tmp/test_notify.%d", (int)getpid());
	check_messages(name);
}

static void test_abstract_socket(void **state)
{
	(void)state;
	char name[64];
	snprintf(name, sizeof(name), "@mcpwarden/test_notify/%d", (int)getpid());
	check_messages(name);
}

static void test_watchdog_env(void **state)
{
	(void)state;
	char pid[32], other[32];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(other, sizeof(other), "%d", (int)getpid() + 1);
	char sock[64];
	snprintf(sock, sizeof(sock), "@mcpwarden/test_notify/wd/%d", (int)getpid());
	struct {
		const char *usec, *pid;
		uint64_t want;
	} cases[] = {
		{NULL, NULL, 0},       {"200000", NULL, 200000}, {"200000", pid, 200000},
		{"200000", other, 0},  {"0", NULL, 0},           {"12x", NULL, 0},
		{"-5", NULL, 0},       {"", NULL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct notify *n = notify_new_from(sock, cases[i].usec, cases[i].pid, getpid());
		assert_non_null(n);
		assert_int_equal(notify_watchdog_usec(n), cases[i].want);
		notify_free(n);
	}
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

static void test_watchdog_timer(void **state)
{
	(void)state;
	char buf[64];
	char name[64];
	snprintf(name, sizeof(name), "@mcpwarden/test_notify/timer/%d", (int)getpid());
	int fd = listen_at(name);
	struct event_base *base = event_base_new();
	struct notify *n = notify_new_from(name, "20000", NULL, getpid());
	assert_non_null(n);
	assert_int_equal(notify_watchdog_start(n, base), 0);
	assert_string_equal(next_msg(fd, buf, sizeof(buf)), "WATCHDOG=1");
	/* The period is 20 ms, so ticks come every 10 ms: after 55 ms five
	 * more, or fewer on a loaded machine, but more than one and never
	 * more than the period allows. */
	struct event *stop = evtimer_new(base, stop_cb, base);
	struct timeval tv = {0, 55000};
	evtimer_add(stop, &tv);
	event_base_dispatch(base);
	int ticks = 0;
	while (strcmp(next_msg(fd, buf, sizeof(buf)), "WATCHDOG=1") == 0)
		ticks++;
	assert_true(ticks >= 2);
	assert_true(ticks <= 6);
	notify_free(n);
	event_free(stop);
	event_base_free(base);
	close(fd);
}

static void test_nobody_listening(void **state)
{
	(void)state;
	char name[64];
	snprintf(name, sizeof(name), "@mcpwarden/test_notify/nobody/%d", (int)getpid());
	struct notify *n = notify_new_from(name, NULL, NULL, getpid());
	assert_non_null(n);
	assert_int_equal(notify_ready(n), -1);
	/* Logged once; still failing, still not blocking. */
	assert_int_equal(notify_stopping(n), -1);
	notify_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_socket),
		cmocka_unit_test(test_bad_address),
		cmocka_unit_test(test_path_socket),
		cmocka_unit_test(test_abstract_socket),
		cmocka_unit_test(test_watchdog_env),
		cmocka_unit_test(test_watchdog_timer),
		cmocka_unit_test(test_nobody_listening),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for proxy/net/sockread.c: the read side of a socket bufferevent,
 * done without libevent's FIONREAD and 4 KiB reads. What the callers rely
 * on is the bufferevent's read behaviour: bytes land in the bufferevent's
 * input and its read callback runs; EOF or an error disables reading and
 * reaches its event callback with BEV_EVENT_READING. (Idle timeouts are
 * their owners' deadlines: test_deadline, test_conn, test_upstream.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/net/sockread.h"
#include "tests/unit/helpers.h"

struct fixture {
	struct event_base *base;
	struct bufferevent *bev;
	struct sockread *sr;
	int peer;               /* the other end, written by the test */
	size_t read_calls;
	short events;           /* last event callback's flags */
	int event_calls;
	int event_errno;
	size_t bytes_at_event;  /* input length when the event came */
};

static void on_read(struct bufferevent *bev, void *arg)
{
	struct fixture *f = arg;
	(void)bev;
	f->read_calls++;
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct fixture *f = arg;
	f->events = what;
	f->event_calls++;
	f->event_errno = errno;
	f->bytes_at_event = evbuffer_get_length(bufferevent_get_input(bev));
	event_base_loopbreak(f->base);
}

static void nonblock(int fd)
{
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

static void setup_fds(struct fixture *f, int ours, int peer, int plain)
{
	memset(f, 0, sizeof(*f));
	f->base = event_base_new();
	assert_non_null(f->base);
	nonblock(ours);
	f->peer = peer;
	f->bev = bufferevent_socket_new(f->base, ours, BEV_OPT_CLOSE_ON_FREE);
	assert_non_null(f->bev);
	bufferevent_setcb(f->bev, on_read, NULL, on_event, f);
	f->sr = sockread_new(f->bev, plain);
	assert_non_null(f->sr);
	assert_int_equal(sockread_enable(f->sr), 0);
}

static void setup_pair(struct fixture *f, int plain)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	setup_fds(f, sv[0], sv[1], plain);
}

static void teardown(struct fixture *f)
{
	sockread_free(f->sr);
	bufferevent_free(f->bev);
	if (f->peer >= 0)
		close(f->peer);
	event_base_free(f->base);
}

static size_t input_len(struct fixture *f)
{
	return evbuffer_get_length(bufferevent_get_input(f->bev));
}

static void test_bytes_reach_input_and_read_cb(void **state)
{
	struct fixture f;
	(void)state;
	setup_pair(&f, 1);
	assert_int_equal(write(f.peer, "hello, proxy", 12), 12);
	for (int i = 0; i < 50 && input_len(&f) < 12; i++)
		th_run_for(f.base, 20);
	assert_int_equal(input_len(&f), 12);
	assert_true(f.read_calls >= 1);
	char buf[12];
	assert_int_equal(evbuffer_remove(bufferevent_get_input(f.bev), buf, 12), 12);
	assert_memory_equal(buf, "hello, proxy", 12);
	assert_int_equal(f.event_calls, 0);
	assert_true(sockread_enabled(f.sr));
	teardown(&f);
}

/* n bytes of a..z (owned). */
static char *letters(size_t n)
{
	char *p = malloc(n);
	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)('a' + i % 26);
	return p;
}

/* A big reply comes in reads far larger than libevent's 4 KiB. */
static void test_big_payload_in_few_reads(void **state)
{
	struct fixture f;
	enum { TOTAL = 256 * 1024 };
	char *payload = letters(TOTAL);
	(void)state;
	setup_pair(&f, 1);
	nonblock(f.peer);
	size_t sent = 0;
	for (int i = 0; i < 10000 && input_len(&f) < TOTAL; i++) {
		if (sent < TOTAL) {
			ssize_t w = write(f.peer, payload + sent, TOTAL - sent);
			if (w > 0)
				sent += (size_t)w;
		}
		event_base_loop(f.base, EVLOOP_NONBLOCK);
	}
	assert_int_equal(input_len(&f), TOTAL);
	unsigned char *got = evbuffer_pullup(bufferevent_get_input(f.bev), -1);
	assert_memory_equal(got, payload, TOTAL);
	size_t bytes, reads;
	sockread_stats(f.sr, &bytes, &reads);
	assert_int_equal(bytes, TOTAL);
	/* 64 reads at 4 KiB; here each takes up to 16 KiB. */
	assert_true(reads <= TOTAL / 8192);
	free(payload);
	teardown(&f);
}

/* A wake-up's first read takes under 8 KiB (a small chain, cheap to get
 * and free), and when it fills, the next reads of the same wake-up take
 * more: 20,000 bytes waiting arrive in two reads. */
static void test_small_first_read_then_larger(void **state)
{
	struct fixture f;
	enum { TOTAL = 20000 };
	char *payload = letters(TOTAL);
	(void)state;
	setup_pair(&f, 1);
	assert_int_equal(write(f.peer, payload, TOTAL), TOTAL);
	for (int i = 0; i < 50 && input_len(&f) < TOTAL; i++)
		th_run_for(f.base, 20);
	assert_int_equal(input_len(&f), TOTAL);
	struct evbuffer_iovec v[4];
	int n = evbuffer_peek(bufferevent_get_input(f.bev), -1, NULL, v, 4);
	assert_int_equal(n, 2);
	assert_true(v[0].iov_len < 8192);
	assert_int_equal(v[0].iov_len + v[1].iov_len, TOTAL);
	size_t bytes, reads;
	sockread_stats(f.sr, &bytes, &reads);
	assert_int_equal(reads, 2);
	assert_memory_equal(evbuffer_pullup(bufferevent_get_input(f.bev), -1), payload, TOTAL);
	free(payload);
	teardown(&f);
}

static void test_eof_disables_and_reports(void **state)
{
	struct fixture f;
	(void)state;
	setup_pair(&f, 1);
	assert_int_equal(write(f.peer, "last words", 10), 10);
	close(f.peer);
	f.peer = -1;
	th_run_for(f.base, 2000);
	assert_int_equal(f.event_calls, 1);
	assert_int_equal(f.events, BEV_EVENT_READING | BEV_EVENT_EOF);
	/* The bytes before the close came first. */
	assert_int_equal(f.bytes_at_event, 10);
	assert_true(f.read_calls >= 1);
	assert_false(sockread_enabled(f.sr));
	teardown(&f);
}

static void test_reset_is_an_error(void **state)
{
	struct fixture f;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	(void)state;
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 1), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
	int cs = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(cs, (struct sockaddr *)&sa, sizeof(sa)), 0);
	int as = accept(ls, NULL, NULL);
	assert_true(as >= 0);
	close(ls);
	setup_fds(&f, cs, as, 1);
	struct linger lg = {1, 0};
	assert_int_equal(setsockopt(f.peer, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(f.peer); /* RST */
	f.peer = -1;
	th_run_for(f.base, 2000);
	assert_int_equal(f.event_calls, 1);
	assert_int_equal(f.events, BEV_EVENT_READING | BEV_EVENT_ERROR);
	assert_int_equal(f.event_errno, ECONNRESET);
	assert_false(sockread_enabled(f.sr));
	teardown(&f);
}

static void test_disabled_reads_nothing(void **state)
{
	struct fixture f;
	(void)state;
	setup_pair(&f, 1);
	sockread_disable(f.sr);
	assert_false(sockread_enabled(f.sr));
	assert_int_equal(write(f.peer, "wait", 4), 4);
	th_run_for(f.base, 100);
	assert_int_equal(input_len(&f), 0);
	assert_int_equal(f.read_calls, 0);
	assert_int_equal(sockread_enable(f.sr), 0);
	for (int i = 0; i < 50 && input_len(&f) < 4; i++)
		th_run_for(f.base, 20);
	assert_int_equal(input_len(&f), 4);
	teardown(&f);
}

/* Not plain (TLS): the bufferevent reads itself; sockread passes on. */
static void test_not_plain_passes_to_bufferevent(void **state)
{
	struct fixture f;
	(void)state;
	setup_pair(&f, 0);
	assert_true(bufferevent_get_enabled(f.bev) & EV_READ);
	assert_true(sockread_enabled(f.sr));
	assert_int_equal(write(f.peer, "tls-ish", 7), 7);
	for (int i = 0; i < 50 && input_len(&f) < 7; i++)
		th_run_for(f.base, 20);
	assert_int_equal(input_len(&f), 7);
	size_t bytes, reads;
	sockread_stats(f.sr, &bytes, &reads);
	assert_int_equal(bytes, 0); /* libevent read them */
	sockread_disable(f.sr);
	assert_false(bufferevent_get_enabled(f.bev) & EV_READ);
	assert_false(sockread_enabled(f.sr));
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_reach_input_and_read_cb),
		cmocka_unit_test(test_big_payload_in_few_reads),
		cmocka_unit_test(test_small_first_read_then_larger),
		cmocka_unit_test(test_eof_disables_and_reports),
		cmocka_unit_test(test_reset_is_an_error),
		cmocka_unit_test(test_disabled_reads_nothing),
		cmocka_unit_test(test_not_plain_passes_to_bufferevent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

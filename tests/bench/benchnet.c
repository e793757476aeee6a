/* benchnet: see benchnet.h. */
#include "tests/bench/benchnet.h"
#include "proxy/base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

void bn_buf_init(struct bn_buf *b, size_t max)
{
	b->data = NULL;
	b->len = b->cap = 0;
	b->max = max;
}

void bn_buf_fini(struct bn_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

static int reserve(struct bn_buf *b, size_t n)
{
	if (n > b->max || b->len > b->max - n)
		return -1;
	if (b->len + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 512;
	while (cap < b->len + n)
		cap *= 2;
	if (cap > b->max)
		cap = b->max;
	char *p = realloc(b->data, cap);
	if (!p)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

int bn_buf_add(struct bn_buf *b, const void *p, size_t n)
{
	if (reserve(b, n) < 0)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int bn_buf_addf(struct bn_buf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n < sizeof(small))
		return bn_buf_add(b, small, (size_t)n);
	if (reserve(b, (size_t)n + 1) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void bn_buf_consume(struct bn_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

int bn_field_add(char *field, size_t *len, size_t cap, const char *at, size_t n)
{
	if (n >= cap - *len)
		return -1;
	memcpy(field + *len, at, n);
	*len += n;
	field[*len] = '\0';
	return 0;
}

void bn_sid_reset(struct bn_sid *h)
{
	h->hname_len = h->sid_len = 0;
	h->hname[0] = h->sid[0] = '\0';
	h->in_sid = 0;
}

void bn_sid_name(struct bn_sid *h, const char *at, size_t n)
{
	size_t room = sizeof(h->hname) - 1 - h->hname_len;
	/* A name longer than the buffer is not Mcp-Session-Id: cut it. */
	bn_field_add(h->hname, &h->hname_len, sizeof(h->hname), at, n < room ? n : room);
}

void bn_sid_name_done(struct bn_sid *h)
{
	h->in_sid = strcasecmp(h->hname, "mcp-session-id") == 0;
	h->hname_len = 0;
	h->hname[0] = '\0';
}

int bn_sid_value(struct bn_sid *h, const char *at, size_t n)
{
	if (!h->in_sid)
		return 0;
	if (bn_field_add(h->sid, &h->sid_len, sizeof(h->sid), at, n) == 0)
		return 0;
	h->sid_len = 0;          /* no half id: the message has none */
	h->sid[0] = '\0';
	h->in_sid = 0;
	return -1;
}

int64_t bn_now_us(void)
{
	return (int64_t)clock_mono_us();
}

long bn_raise_nofile(long want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	if ((long)rl.rlim_cur >= want)
		return (long)rl.rlim_cur;
	if ((long)rl.rlim_max < want) {
		struct rlimit up = {(rlim_t)want, (rlim_t)want};
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			return want;
	}
	rl.rlim_cur = (long)rl.rlim_max < want ? rl.rlim_max : (rlim_t)want;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	return (long)rl.rlim_cur;
}

int bn_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL, 0);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void loopback(struct sockaddr_in *sa, int port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

int bn_listen(int port, int backlog)
{
	struct sockaddr_in sa;
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	loopback(&sa, port);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int bn_connect(int port)
{
	struct sockaddr_in sa;
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	loopback(&sa, port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || bn_set_nonblock(fd) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int bn_write_all(int fd, const void *p, size_t n, int timeout_ms)
{
	const char *s = p;
	int64_t deadline = bn_now_us() + (int64_t)timeout_ms * 1000;

	while (n) {
		ssize_t w = write(fd, s, n);
		if (w > 0) {
			s += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			return -1;
		int left = (int)((deadline - bn_now_us()) / 1000);
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -1;
	}
	return 0;
}

long bn_proc_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	long v = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			v = strtol(line + flen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

long bn_parse_long(const char *opt, const char *s, long lo, long hi)
{
	char *end;

	errno = 0;
	long v = s ? strtol(s, &end, 10) : 0;
	if (!s || errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: expected an integer in [%ld, %ld], got '%s'\n", opt, lo, hi,
		        s ? s : "(nothing)");
		exit(2);
	}
	return v;
}

/* streams: many idle SSE streams through a proxy, and how fast a message
 * pushed on one of them arrives.
 *
 *   streams --port P --upstream-port U --pid PID [--pid PID...]
 *           [--streams 10000] [--pushes 100] [--concurrency 200]
 *           [--path /mcp] [--label NAME]
 *
 * 1. Opens --streams client connections to 127.0.0.1:P. On each, as an MCP
 *    client would: POST initialize (keeps the Mcp-Session-Id), POST
 *    notifications/initialized, then GET the session's stream and keep it
 *    open. Each stream is its own session. At most --concurrency set-ups are
 *    in flight at once.
 * 2. Reads VmRSS of every --pid (summed: nginx has a master and workers)
 *    before the first connection and once all streams are open, and prints
 *    the growth per stream.
 * 3. --pushes times: picks a random open stream, asks the upstream fixture
 *    (127.0.0.1:U, POST /push?session=ID) to write one event on it, and
 *    times its arrival at this client: from before the push request
 *    (end to end) and from the upstream's own timestamp in the event
 *    (the hop through the proxy; both clocks are CLOCK_MONOTONIC of this
 *    machine). p50/p99/max of each.
 * 4. Checks that every stream is still open (no EOF, no error on any of
 *    them after the pushes) and asks the fixture how many it holds.
 *
 * Exit status 0 when every stream opened, every push arrived and every
 * stream stayed open; 1 otherwise (the figures are printed either way).
 * Bounded: set-up stops after 120 s, each push waits 2 s at most.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <llhttp.h>

#include "tests/bench/benchnet.h"

#define MAX_PIDS     16
#define MAX_EVENT    (64u << 10)
#define SETUP_US     (120LL * 1000000)
#define PUSH_WAIT_US (2LL * 1000000)

enum strm_state {
	ST_INIT,     /* initialize sent, waiting for its reply */
	ST_NOTIF,    /* notifications/initialized sent, waiting for 202 */
	ST_GET,      /* GET sent, waiting for the stream's head */
	ST_OPEN,     /* stream open; events are counted */
	ST_DEAD,     /* failed or closed: fd closed */
};

struct strm {
	int fd;
	enum strm_state state;
	llhttp_t ll;
	struct bn_sid h;         /* the session id from initialize's reply */
	int msg_done;            /* the reply in progress completed */
	struct bn_buf ev;        /* SSE bytes not yet split into events */
	unsigned long events;    /* data events received while open */
	long long last_t_us;     /* the upstream's stamp in the last event */
	int64_t last_at;         /* when the last event arrived */
};

struct opts {
	int port, up_port;
	pid_t pids[MAX_PIDS];
	int npids;
	long nstreams, npushes, conc;
	const char *path, *label;
};

static struct opts O;
static struct strm *S;
static int EP;
static llhttp_settings_t SETTINGS;
static const char *fail_reason;

/* ---- response parsing ---------------------------------------------------- */

#define ST(ll) ((struct strm *)(ll)->data)

static int on_hfield(llhttp_t *ll, const char *at, size_t n)
{
	bn_sid_name(&ST(ll)->h, at, n);
	return 0;
}

static int on_hfield_done(llhttp_t *ll)
{
	bn_sid_name_done(&ST(ll)->h);
	return 0;
}

static int on_hvalue(llhttp_t *ll, const char *at, size_t n)
{
	bn_sid_value(&ST(ll)->h, at, n);   /* too long: no id, initialize fails */
	return 0;
}

static int on_headers_done(llhttp_t *ll)
{
	struct strm *s = ST(ll);
	if (s->state == ST_GET) {
		if (ll->status_code != 200)
			return -1;
		s->state = ST_OPEN;
	}
	return 0;
}

/* Split complete events ("\n\n"-terminated) off the buffer and note the
 * ones carrying data; comments (": keep-alive") are not events. */
static void scan_events(struct strm *s)
{
	size_t start = 0;
	for (;;) {
		char *end = memmem(s->ev.data + start, s->ev.len - start, "\n\n", 2);
		if (!end)
			break;
		size_t elen = (size_t)(end - (s->ev.data + start));
		char *d = memmem(s->ev.data + start, elen, "data:", 5);
		if (d) {
			char *t = memmem(d, elen - (size_t)(d - (s->ev.data + start)), "\"t_us\":", 7);
			s->last_t_us = t ? strtoll(t + 7, NULL, 10) : 0;
			s->last_at = bn_now_us();
			s->events++;
		}
		start += elen + 2;
	}
	bn_buf_consume(&s->ev, start);
}

static int on_body(llhttp_t *ll, const char *at, size_t n)
{
	struct strm *s = ST(ll);
	if (s->state != ST_OPEN)
		return 0;       /* initialize's JSON: only the header matters */
	if (bn_buf_add(&s->ev, at, n) < 0)
		return -1;      /* an event over 64 KiB: not what the fixture sends */
	scan_events(s);
	return 0;
}

static int on_complete(llhttp_t *ll)
{
	struct strm *s = ST(ll);
	if (s->state == ST_OPEN)
		return -1;      /* the stream ended */
	s->msg_done = 1;
	return HPE_PAUSED;
}

/* ---- set-up -------------------------------------------------------------- */

static void strm_kill(struct strm *s, const char *why)
{
	if (s->state == ST_DEAD)
		return;
	if (!fail_reason)
		fail_reason = why;
	epoll_ctl(EP, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
	s->state = ST_DEAD;
	bn_buf_fini(&s->ev);
}

static int strm_send_post(struct strm *s, const char *body, int with_sid)
{
	char req[1024];
	int n = snprintf(req, sizeof(req),
	                 "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
	                 "Accept: application/json, text/event-stream\r\n"
	                 "MCP-Protocol-Version: 2025-11-25\r\n%s%s%sContent-Length: %zu\r\n\r\n%s",
	                 O.path, O.port, with_sid ? "Mcp-Session-Id: " : "", with_sid ? s->h.sid : "",
	                 with_sid ? "\r\n" : "", strlen(body), body);
	return bn_write_all(s->fd, req, (size_t)n, 5000);
}

static int strm_send_get(struct strm *s)
{
	char req[512];
	int n = snprintf(req, sizeof(req),
	                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n"
	                 "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\n\r\n",
	                 O.path, O.port, s->h.sid);
	return bn_write_all(s->fd, req, (size_t)n, 5000);
}

static int strm_start(struct strm *s)
{
	static const char init[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	    "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"mcpwarden-bench-streams\","
	    "\"version\":\"1.0.0\"}}}";
	s->fd = bn_connect(O.port);
	if (s->fd < 0)
		return -1;
	llhttp_init(&s->ll, HTTP_RESPONSE, &SETTINGS);
	s->ll.data = s;
	bn_buf_init(&s->ev, MAX_EVENT);
	s->state = ST_INIT;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = s};
	if (epoll_ctl(EP, EPOLL_CTL_ADD, s->fd, &ev) < 0 || strm_send_post(s, init, 0) < 0) {
		close(s->fd);
		s->state = ST_DEAD;
		return -1;
	}
	return 0;
}

/* A reply completed during set-up: send the next request. */
static void strm_next(struct strm *s)
{
	int status = s->ll.status_code;
	s->msg_done = 0;
	llhttp_resume(&s->ll);
	if (s->state == ST_INIT) {
		if (status != 200 || !s->h.sid_len) {
			strm_kill(s, status != 200 ? "initialize: non-200 reply" : "initialize: no session id");
			return;
		}
		s->state = ST_NOTIF;
		if (strm_send_post(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
		                   1) < 0)
			strm_kill(s, "write failed");
	} else if (s->state == ST_NOTIF) {
		if (status != 202 && status != 200) {
			strm_kill(s, "notifications/initialized: not accepted");
			return;
		}
		s->state = ST_GET;
		if (strm_send_get(s) < 0)
			strm_kill(s, "write failed");
	}
}

/* Read what is there; parse it; returns -1 when the stream died. */
static int strm_read(struct strm *s)
{
	char buf[16384];
	for (;;) {
		ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
		if (n == 0) {
			strm_kill(s, "closed by the proxy");
			return -1;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			strm_kill(s, "read error");
			return -1;
		}
		const char *p = buf;
		size_t left = (size_t)n;
		while (left) {
			llhttp_errno_t e = llhttp_execute(&s->ll, p, left);
			if (e == HPE_OK)
				break;
			if (e != HPE_PAUSED) {
				strm_kill(s, s->state == ST_GET ? "GET: no 200 event stream" : "bad reply");
				return -1;
			}
			const char *stop = llhttp_get_error_pos(&s->ll);
			left -= (size_t)(stop - p);
			p = stop;
			strm_next(s);
			if (s->state == ST_DEAD)
				return -1;
		}
	}
}

static void pump(int timeout_ms)
{
	struct epoll_event evs[512];
	int n = epoll_wait(EP, evs, 512, timeout_ms);
	for (int i = 0; i < n; i++) {
		struct strm *s = evs[i].data.ptr;
		if (s->state != ST_DEAD)
			strm_read(s);
	}
}

static long count_state(enum strm_state st)
{
	long k = 0;
	for (long i = 0; i < O.nstreams; i++)
		k += S[i].state == st;
	return k;
}

static long rss_kib(const char *field)
{
	long sum = 0;
	for (int i = 0; i < O.npids; i++) {
		long v = bn_proc_kib(O.pids[i], field);
		if (v < 0)
			return -1;
		sum += v;
	}
	return sum;
}

static int64_t open_all(void)
{
	int64_t t0 = bn_now_us();
	long next = 0;

	while (bn_now_us() - t0 < SETUP_US) {
		long busy = 0;
		for (long i = 0; i < next; i++)
			busy += S[i].state < ST_OPEN;
		while (next < O.nstreams && busy < O.conc) {
			if (strm_start(&S[next]) < 0 && !fail_reason)
				fail_reason = "connect failed";
			next++;
			busy++;
		}
		if (next == O.nstreams && busy == 0)
			break;
		pump(50);
	}
	return bn_now_us() - t0;
}

/* ---- pushes -------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void print_dist(const char *what, int64_t *v, long n)
{
	if (!n) {
		printf("  %-34s none\n", what);
		return;
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	long i99 = (n * 99 + 99) / 100 - 1;
	printf("  %-34s p50 %7.3f ms  p99 %7.3f ms  max %7.3f ms\n", what, v[(n - 1) / 2] / 1000.0,
	       v[i99 < 0 ? 0 : i99] / 1000.0, v[n - 1] / 1000.0);
}

/* Ask the fixture to push on s; wait for the reply on the control socket. */
static int push_on(int ctl, struct strm *s)
{
	char req[512], resp[1024];
	int n = snprintf(req, sizeof(req),
	                 "POST /push?session=%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 0"
	                 "\r\n\r\n",
	                 s->h.sid, O.up_port);
	if (bn_write_all(ctl, req, (size_t)n, 2000) < 0)
		return -1;
	/* The fixture answers after it wrote the event; the answer is small
	 * and one read normally takes all of it. */
	size_t got = 0;
	int64_t t0 = bn_now_us();
	while (bn_now_us() - t0 < PUSH_WAIT_US) {
		ssize_t r = recv(ctl, resp + got, sizeof(resp) - 1 - got, 0);
		if (r > 0) {
			got += (size_t)r;
			resp[got] = '\0';
			char *h = strstr(resp, "\r\n\r\n");
			char *cl = strcasestr(resp, "content-length:");
			if (h && cl && got >= (size_t)(h + 4 - resp) + (size_t)atol(cl + 15))
				return strncmp(resp, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
			continue;
		}
		if (r == 0 || (errno != EAGAIN && errno != EINTR))
			return -1;
		pump(1);        /* keep reading the streams meanwhile */
	}
	return -1;
}

static long run_pushes(int64_t *e2e, int64_t *hop)
{
	int ctl = bn_connect(O.up_port);
	long done = 0;

	if (ctl < 0) {
		fail_reason = "cannot reach the upstream's /push";
		return 0;
	}
	srand((unsigned)bn_now_us());
	for (long k = 0; k < O.npushes; k++) {
		long tries = 0, i;
		do
			i = rand() % O.nstreams;
		while (S[i].state != ST_OPEN && ++tries < O.nstreams);
		if (S[i].state != ST_OPEN)
			break;
		struct strm *s = &S[i];
		unsigned long before = s->events;
		int64_t t0 = bn_now_us();
		if (push_on(ctl, s) < 0) {
			fail_reason = "push refused by the upstream";
			continue;
		}
		while (s->events == before && s->state == ST_OPEN && bn_now_us() - t0 < PUSH_WAIT_US)
			pump(1);
		if (s->events == before) {
			fail_reason = "a pushed message did not arrive within 2 s";
			continue;
		}
		e2e[done] = s->last_at - t0;
		hop[done] = s->last_t_us ? s->last_at - s->last_t_us : 0;
		done++;
		usleep(2000);   /* spaced out, not a burst */
	}
	close(ctl);
	return done;
}

/* The fixture's count of open streams from GET /stats, or -1. */
static long upstream_streams(void)
{
	static const char req[] = "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char resp[2048];
	size_t got = 0;
	int fd = bn_connect(O.up_port);

	if (fd < 0 || bn_write_all(fd, req, sizeof(req) - 1, 2000) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int64_t t0 = bn_now_us();
	while (got < sizeof(resp) - 1 && bn_now_us() - t0 < 2000000) {
		ssize_t r = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);
		if (r == 0)
			break;
		if (r > 0)
			got += (size_t)r;
		else
			usleep(1000);
	}
	close(fd);
	resp[got] = '\0';
	char *p = strstr(resp, "\"streams\":");
	return p ? atol(p + 10) : -1;
}

/* ---- main ---------------------------------------------------------------- */

static void parse_args(int argc, char **argv)
{
	O.nstreams = 10000;
	O.npushes = 100;
	O.conc = 200;
	O.path = "/mcp";
	O.label = "proxy";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			goto usage;
		if (strcmp(a, "--port") == 0)
			O.port = (int)bn_parse_long(a, v, 1, 65535);
		else if (strcmp(a, "--upstream-port") == 0)
			O.up_port = (int)bn_parse_long(a, v, 1, 65535);
		else if (strcmp(a, "--pid") == 0 && O.npids < MAX_PIDS)
			O.pids[O.npids++] = (pid_t)bn_parse_long(a, v, 1, 1 << 30);
		else if (strcmp(a, "--streams") == 0)
			O.nstreams = bn_parse_long(a, v, 1, 1000000);
		else if (strcmp(a, "--pushes") == 0)
			O.npushes = bn_parse_long(a, v, 0, 1000000);
		else if (strcmp(a, "--concurrency") == 0)
			O.conc = bn_parse_long(a, v, 1, 100000);
		else if (strcmp(a, "--path") == 0)
			O.path = v;
		else if (strcmp(a, "--label") == 0)
			O.label = v;
		else
			goto usage;
		i++;
	}
	if (O.port && O.up_port && O.npids)
		return;
usage:
	fputs("usage: streams --port P --upstream-port U --pid PID [--pid PID...] [--streams N]\n"
	      "               [--pushes N] [--concurrency N] [--path /mcp] [--label NAME]\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	long lim = bn_raise_nofile(O.nstreams + 64);
	if (lim < O.nstreams + 16) {
		fprintf(stderr, "streams: only %ld descriptors allowed, %ld needed\n", lim,
		        O.nstreams + 16);
		return 1;
	}
	S = calloc((size_t)O.nstreams, sizeof(*S));
	EP = epoll_create1(EPOLL_CLOEXEC);
	if (!S || EP < 0)
		return 1;
	llhttp_settings_init(&SETTINGS);
	SETTINGS.on_header_field = on_hfield;
	SETTINGS.on_header_field_complete = on_hfield_done;
	SETTINGS.on_header_value = on_hvalue;
	SETTINGS.on_headers_complete = on_headers_done;
	SETTINGS.on_body = on_body;
	SETTINGS.on_message_complete = on_complete;

	long rss0 = rss_kib("VmRSS");
	int64_t took = open_all();
	long opened = count_state(ST_OPEN);
	pump(200);          /* let the proxy settle before reading its size */
	usleep(500000);
	long rss1 = rss_kib("VmRSS"), hwm = rss_kib("VmHWM");
	printf("%s: %ld of %ld streams open in %.2f s (each its own session: initialize, "
	       "notifications/initialized, GET)\n",
	       O.label, opened, O.nstreams, took / 1e6);
	printf("  resident (VmRSS of %d process%s)   before %ld KiB, with the streams %ld KiB, "
	       "peak %ld KiB\n",
	       O.npids, O.npids == 1 ? "" : "es", rss0, rss1, hwm);
	printf("  per open stream                    %.2f KiB (target < 20 KiB)\n",
	       opened ? (double)(rss1 - rss0) / (double)opened : 0.0);

	int64_t *e2e = calloc((size_t)O.npushes + 1, sizeof(int64_t));
	int64_t *hop = calloc((size_t)O.npushes + 1, sizeof(int64_t));
	long delivered = e2e && hop ? run_pushes(e2e, hop) : 0;
	printf("  pushes delivered                   %ld of %ld (random streams, 2 ms apart)\n",
	       delivered, O.npushes);
	print_dist("push request -> client (end to end)", e2e, delivered);
	print_dist("upstream write -> client (the hop)", hop, delivered);

	pump(200);          /* anything that closed during the pushes shows now */
	long still = count_state(ST_OPEN), ups = upstream_streams();
	printf("  still open at the end              %ld of %ld (upstream holds %ld streams)\n", still,
	       opened, ups);
	if (fail_reason)
		printf("  first failure: %s\n", fail_reason);
	int ok = opened == O.nstreams && delivered == O.npushes && still == opened;
	for (long i = 0; i < O.nstreams; i++)
		if (S[i].state != ST_DEAD)
			strm_kill(&S[i], NULL);
	free(e2e);
	free(hop);
	free(S);
	return ok ? 0 : 1;
}

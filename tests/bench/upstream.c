/* upstream: the benchmark's MCP server (Streamable HTTP), fast enough that
 * a proxy in front of it, not the server, is what the figures measure.
 *
 *   upstream --port P [--tools N] [--vary-list] [--max-sessions N]
 *
 * POST /mcp
 *   initialize        JSON result, a fresh Mcp-Session-Id header
 *   notifications     202, no body (so are JSON-RPC responses)
 *   tools/call        {"content":[{"type":"text","text":"hello"}]} as JSON;
 *                     the tool named "sse" gets the same result as a
 *                     text/event-stream reply: one `event: message`, end
 *   tools/list        N tools (default 3; the bench uses 1000), each with a
 *                     name, description, small inputSchema and annotations,
 *                     rendered once at start-up. With --vary-list the first
 *                     description carries a counter, so no two listings have
 *                     the same bytes (defeats a proxy's cache of verdicts).
 *   ping              {}
 *   anything else     JSON-RPC error -32601
 *   Every request but initialize needs a known Mcp-Session-Id (400 without
 *   one, 404 for an unknown one), so a client that loses its session shows.
 *   The JSON-RPC id is echoed: integers byte for byte, strings and other
 *   values re-encoded by jansson (same value, possibly other escapes).
 * GET /mcp            with a session: a chunked text/event-stream held open,
 *                     silent until a push; one stream per session (409).
 * DELETE /mcp         ends the session.
 * POST /push?session=ID   writes one notifications/message event onto that
 *                     session's GET stream. Its data carries "t_us", this
 *                     machine's CLOCK_MONOTONIC in µs when it was written,
 *                     so a client can time the hop through a proxy.
 * GET /stats          {"sessions":…,"streams":…,"requests":…,"pushes":…}
 *
 * One thread, epoll, llhttp for requests (pipelining, chunked bodies),
 * jansson for bodies. Bounded: 1 MiB request bodies (413), 16 MiB queued
 * output per connection (reading pauses past 4 MiB), --max-sessions (503).
 * Left out on purpose: TLS, resumable streams (Last-Event-ID), batches
 * (400), anything the benchmarks do not drive.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <llhttp.h>

#include "tests/bench/benchnet.h"
#include "proxy/base/hash.h"

#define MAX_BODY     (1u << 20)
#define MAX_OUT      (16u << 20)
#define OUT_PAUSE    (4u << 20)
#define MAX_URL      1024
#define SID_LEN      32
#define NBUCKETS     65536
#define UCONN_MAGIC  0x75636f6eu /* "ucon" */

struct session {
	char id[SID_LEN + 1];
	struct uconn *stream;   /* borrowed: the open GET stream, or NULL */
	struct session *next;   /* hash chain */
};

struct uconn {
	unsigned magic;
	int fd;
	int want_out;           /* EPOLLOUT registered */
	int paused;             /* EPOLLIN dropped: output over OUT_PAUSE */
	int close_after;        /* close once output is flushed */
	llhttp_t ll;
	struct bn_buf out;
	/* the request being parsed */
	char url[MAX_URL + 1];
	size_t url_len;
	struct bn_sid h;        /* its Mcp-Session-Id */
	int bad;                /* a field overflowed: answer 400/413 */
	struct bn_buf body;
	struct session *stream_of; /* this connection is that session's GET stream */
	int closed;             /* fd closed; freed after this epoll batch */
	struct uconn *next_dead;
};

struct upstream {
	int ep, lfd;
	long ntools;
	int vary;
	long max_sessions;
	char *list_head, *list_tail; /* the tools array split inside tool 0's description */
	size_t head_len, tail_len;
	struct session *buckets[NBUCKETS];
	unsigned long nsessions, nstreams, nrequests, npushes, nlistings;
	uint64_t rng;
	llhttp_settings_t settings;
	/* Closed connections wait here until the epoll batch is done: a push
	 * can close another connection whose event is later in the batch. */
	struct uconn *dead;
};

static struct upstream U;
static volatile sig_atomic_t stopping;

static int conn_flush(struct uconn *c);
static void out_add(struct uconn *c, const void *p, size_t n);

/* ---- sessions ------------------------------------------------------------ */

static unsigned bucket_of(const char *id, size_t n)
{
	return hash_fnv1a32(HASH_FNV1A32_INIT, id, n) % NBUCKETS;
}

static struct session *session_find(const char *id, size_t n)
{
	if (n != SID_LEN)
		return NULL;
	for (struct session *s = U.buckets[bucket_of(id, n)]; s; s = s->next)
		if (memcmp(s->id, id, n) == 0)
			return s;
	return NULL;
}

static uint64_t rng_next(void)
{
	/* xorshift64*: fresh ids, not secrets (a benchmark fixture). */
	U.rng ^= U.rng >> 12;
	U.rng ^= U.rng << 25;
	U.rng ^= U.rng >> 27;
	return U.rng * 2685821657736338717ull;
}

static struct session *session_new(void)
{
	if ((long)U.nsessions >= U.max_sessions)
		return NULL;
	struct session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->id, sizeof(s->id), "%016llx%016llx", (unsigned long long)rng_next(),
	         (unsigned long long)rng_next());
	unsigned b = bucket_of(s->id, SID_LEN);
	s->next = U.buckets[b];
	U.buckets[b] = s;
	U.nsessions++;
	return s;
}

static void session_free(struct session *s)
{
	struct session **pp = &U.buckets[bucket_of(s->id, SID_LEN)];
	while (*pp != s)
		pp = &(*pp)->next;
	*pp = s->next;
	if (s->stream) {
		/* end the stream: the last chunk, then close */
		s->stream->stream_of = NULL;
		s->stream->close_after = 1;
		out_add(s->stream, "0\r\n\r\n", 5);
		U.nstreams--;
		conn_flush(s->stream);
	}
	free(s);
	U.nsessions--;
}

/* ---- connections --------------------------------------------------------- */

static void conn_update_events(struct uconn *c)
{
	struct epoll_event ev = {.data.ptr = c};
	ev.events = (c->paused ? 0 : EPOLLIN) | (c->want_out ? EPOLLOUT : 0) | EPOLLRDHUP;
	epoll_ctl(U.ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void conn_close(struct uconn *c)
{
	if (c->closed)
		return;
	if (c->stream_of) {
		c->stream_of->stream = NULL;
		U.nstreams--;
	}
	epoll_ctl(U.ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	bn_buf_fini(&c->out);
	bn_buf_fini(&c->body);
	c->closed = 1;
	c->next_dead = U.dead;
	U.dead = c;
}

static void free_dead(void)
{
	while (U.dead) {
		struct uconn *c = U.dead;
		U.dead = c->next_dead;
		c->magic = 0;
		free(c);
	}
}

/* Write what is queued; returns -1 when c was closed. */
static int conn_flush(struct uconn *c)
{
	size_t off = 0;
	if (c->closed)
		return -1;
	while (off < c->out.len) {
		ssize_t w = send(c->fd, c->out.data + off, c->out.len - off, MSG_NOSIGNAL);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		conn_close(c);
		return -1;
	}
	bn_buf_consume(&c->out, off);
	if (!c->out.len && c->close_after) {
		conn_close(c);
		return -1;
	}
	int want = c->out.len > 0, pause = c->out.len > OUT_PAUSE;
	if (want != c->want_out || pause != c->paused) {
		c->want_out = want;
		c->paused = pause;
		conn_update_events(c);
	}
	return 0;
}

/* Queue bytes; a connection that cannot take them (16 MiB behind) is cut. */
static void out_add(struct uconn *c, const void *p, size_t n)
{
	if (c->closed)
		return;
	if (bn_buf_add(&c->out, p, n) < 0) {
		c->out.len = 0;
		c->close_after = 1;
	}
}

static void respond(struct uconn *c, int status, const char *reason, const char *ctype,
                    const char *extra, const char *body, size_t blen)
{
	char head[512];
	int n = snprintf(head, sizeof(head),
	                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
	                 status, reason, ctype, blen, extra ? extra : "",
	                 c->close_after ? "Connection: close\r\n" : "");
	out_add(c, head, (size_t)n);
	out_add(c, body, blen);
}

static void respond_text(struct uconn *c, int status, const char *reason, const char *text)
{
	respond(c, status, reason, "text/plain", NULL, text, strlen(text));
}

static void respond_rpc_error(struct uconn *c, int status, const char *reason, const char *id,
                              int code, const char *msg)
{
	char body[256];
	int n = snprintf(body, sizeof(body),
	                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
	                 id, code, msg);
	respond(c, status, reason, "application/json", NULL, body, (size_t)n);
}

/* ---- replies ------------------------------------------------------------- */

#define HELLO "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}"

/* The reply {"jsonrpc":"2.0","id":ID,"result":PARTS...} with the parts
 * concatenated, as JSON (Content-Length) or as one SSE event (chunked). */
static void reply_result(struct uconn *c, const char *id, const char *const *parts,
                         const size_t *lens, int nparts, int sse, const char *extra)
{
	static const char pre[] = "{\"jsonrpc\":\"2.0\",\"id\":";
	static const char mid[] = ",\"result\":";
	static const char ev[] = "event: message\ndata: ";
	size_t jlen = sizeof(pre) - 1 + strlen(id) + sizeof(mid) - 1 + 1;
	for (int i = 0; i < nparts; i++)
		jlen += lens[i];
	char head[512];
	int n;
	if (sse)
		n = snprintf(head, sizeof(head),
		             "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		             "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n%s%s\r\n%zx\r\n%s",
		             extra ? extra : "", c->close_after ? "Connection: close\r\n" : "",
		             sizeof(ev) - 1 + jlen + 2, ev);
	else
		n = snprintf(head, sizeof(head),
		             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		             "Content-Length: %zu\r\n%s%s\r\n",
		             jlen, extra ? extra : "", c->close_after ? "Connection: close\r\n" : "");
	out_add(c, head, (size_t)n);
	out_add(c, pre, sizeof(pre) - 1);
	out_add(c, id, strlen(id));
	out_add(c, mid, sizeof(mid) - 1);
	for (int i = 0; i < nparts; i++)
		out_add(c, parts[i], lens[i]);
	out_add(c, "}", 1);
	if (sse)
		out_add(c, "\n\n\r\n0\r\n\r\n", 9);
}

static void reply_one(struct uconn *c, const char *id, const char *result, int sse,
                      const char *extra)
{
	size_t len = strlen(result);
	reply_result(c, id, &result, &len, 1, sse, extra);
}

static void do_initialize(struct uconn *c, const char *id, json_t *params)
{
	struct session *s = session_new();
	if (!s) {
		respond_rpc_error(c, 503, "Service Unavailable", id, -32000, "too many sessions");
		return;
	}
	const char *ver = json_string_value(json_object_get(params, "protocolVersion"));
	char result[512], hdr[96];
	snprintf(result, sizeof(result),
	         "{\"protocolVersion\":\"%.32s\",\"capabilities\":{\"tools\":{\"listChanged\":false},"
	         "\"logging\":{}},\"serverInfo\":{\"name\":\"mcpwarden-bench-upstream\",\"version\":"
	         "\"1.0.0\"}}",
	         ver && strlen(ver) < 32 && !strpbrk(ver, "\"\\") ? ver : "2025-11-25");
	snprintf(hdr, sizeof(hdr), "Mcp-Session-Id: %s\r\n", s->id);
	reply_one(c, id, result, 0, hdr);
}

static void do_list(struct uconn *c, const char *id)
{
	char mark[32];
	const char *parts[4] = {"{\"tools\":", U.list_head, mark, U.list_tail};
	size_t lens[4] = {9, U.head_len, 0, U.tail_len};

	U.nlistings++;
	mark[0] = '\0';
	if (U.vary)
		snprintf(mark, sizeof(mark), " (listing %lu)", U.nlistings);
	lens[2] = strlen(mark);
	/* the tail closes the array and the result object */
	reply_result(c, id, parts, lens, 4, 0, NULL);
}

/* The id as JSON text into buf (integers as they are), or "null". */
static const char *id_text(json_t *id, char *buf, size_t len, char **dyn)
{
	*dyn = NULL;
	if (json_is_integer(id)) {
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
		return buf;
	}
	if (!id)
		return "null";
	*dyn = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
	return *dyn ? *dyn : "null";
}

static void do_rpc(struct uconn *c, json_t *msg)
{
	json_t *jid = json_object_get(msg, "id");
	const char *method = json_string_value(json_object_get(msg, "method"));
	char ibuf[32], *dyn;

	if (!method || !jid) {          /* a notification or a response */
		respond(c, 202, "Accepted", "text/plain", NULL, "", 0);
		return;
	}
	const char *id = id_text(jid, ibuf, sizeof(ibuf), &dyn);
	json_t *params = json_object_get(msg, "params");
	if (strcmp(method, "initialize") == 0) {
		do_initialize(c, id, params);
	} else if (c->h.sid_len == 0) {
		respond_rpc_error(c, 400, "Bad Request", id, -32000, "Mcp-Session-Id required");
	} else if (!session_find(c->h.sid, c->h.sid_len)) {
		respond_rpc_error(c, 404, "Not Found", id, -32001, "unknown session");
	} else if (strcmp(method, "tools/call") == 0) {
		const char *name = json_string_value(json_object_get(params, "name"));
		reply_one(c, id, HELLO, name && strcmp(name, "sse") == 0, NULL);
	} else if (strcmp(method, "tools/list") == 0) {
		do_list(c, id);
	} else if (strcmp(method, "ping") == 0) {
		reply_one(c, id, "{}", 0, NULL);
	} else {
		respond_rpc_error(c, 200, "OK", id, -32601, "method not found");
	}
	free(dyn);
}

static void do_post_mcp(struct uconn *c)
{
	json_error_t jerr;
	json_t *msg = json_loadb(c->body.data ? c->body.data : "", c->body.len, 0, &jerr);

	if (!msg)
		respond_rpc_error(c, 400, "Bad Request", "null", -32700, "parse error");
	else if (!json_is_object(msg))
		respond_rpc_error(c, 400, "Bad Request", "null", -32600, "batches not supported");
	else
		do_rpc(c, msg);
	json_decref(msg);
}

static void do_get_mcp(struct uconn *c)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	                           "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
	struct session *s = session_find(c->h.sid, c->h.sid_len);

	if (!c->h.sid_len)
		respond_text(c, 400, "Bad Request", "Mcp-Session-Id required\n");
	else if (!s)
		respond_text(c, 404, "Not Found", "unknown session\n");
	else if (s->stream)
		respond_text(c, 409, "Conflict", "this session already has a stream\n");
	else {
		out_add(c, head, sizeof(head) - 1);
		s->stream = c;
		c->stream_of = s;
		U.nstreams++;
	}
}

static void do_push(struct uconn *c)
{
	const char *q = strstr(c->url, "session=");
	size_t n = q ? strcspn(q + 8, "&") : 0;
	struct session *s = q ? session_find(q + 8, n) : NULL;

	if (!s) {
		respond_text(c, 404, "Not Found", "unknown session\n");
		return;
	}
	if (!s->stream) {
		respond_text(c, 409, "Conflict", "no open stream on this session\n");
		return;
	}
	char ev[512], body[96];
	long long t = (long long)bn_now_us();
	int len = snprintf(ev + 16, sizeof(ev) - 16,
	                   "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
	                   "message\",\"params\":{\"level\":\"info\",\"logger\":\"bench\",\"data\":{"
	                   "\"seq\":%lu,\"t_us\":%lld}}}\n\n",
	                   ++U.npushes, t);
	int hl = snprintf(ev, 16, "%x\r\n", len);
	memmove(ev + hl, ev + 16, (size_t)len);
	memcpy(ev + hl + len, "\r\n", 2);
	out_add(s->stream, ev, (size_t)(hl + len + 2));
	if (s->stream != c && conn_flush(s->stream) < 0) {
		respond_text(c, 502, "Bad Gateway", "stream closed\n");
		return;
	}
	int bl = snprintf(body, sizeof(body), "{\"seq\":%lu,\"t_us\":%lld}", U.npushes, t);
	respond(c, 200, "OK", "application/json", NULL, body, (size_t)bl);
}

static void do_stats(struct uconn *c)
{
	char body[256];
	int n = snprintf(body, sizeof(body),
	                 "{\"sessions\":%lu,\"streams\":%lu,\"requests\":%lu,\"pushes\":%lu,"
	                 "\"listings\":%lu}",
	                 U.nsessions, U.nstreams, U.nrequests, U.npushes, U.nlistings);
	respond(c, 200, "OK", "application/json", NULL, body, (size_t)n);
}

static void handle(struct uconn *c)
{
	const char *m = llhttp_method_name((llhttp_method_t)llhttp_get_method(&c->ll));
	size_t plen = strcspn(c->url, "?");
	int is_mcp = plen == 4 && memcmp(c->url, "/mcp", 4) == 0;

	U.nrequests++;
	c->close_after = !llhttp_should_keep_alive(&c->ll);
	if (c->bad) {
		respond_text(c, c->bad, c->bad == 413 ? "Payload Too Large" : "Bad Request",
		             "request field or body too large\n");
		c->close_after = 1;
	} else if (is_mcp && strcmp(m, "POST") == 0) {
		do_post_mcp(c);
	} else if (is_mcp && strcmp(m, "GET") == 0) {
		do_get_mcp(c);
	} else if (is_mcp && strcmp(m, "DELETE") == 0) {
		struct session *s = session_find(c->h.sid, c->h.sid_len);
		if (s)
			session_free(s);
		respond_text(c, s ? 200 : 404, s ? "OK" : "Not Found", s ? "" : "unknown session\n");
	} else if (is_mcp) {
		respond(c, 405, "Method Not Allowed", "text/plain", "Allow: GET, POST, DELETE\r\n", "",
		        0);
	} else if (plen == 5 && memcmp(c->url, "/push", 5) == 0 && strcmp(m, "POST") == 0) {
		do_push(c);
	} else if (plen == 6 && memcmp(c->url, "/stats", 6) == 0) {
		do_stats(c);
	} else {
		respond_text(c, 404, "Not Found", "no such path\n");
	}
}

/* ---- llhttp callbacks ---------------------------------------------------- */

#define UC(ll) ((struct uconn *)(ll)->data)

static int on_begin(llhttp_t *ll)
{
	struct uconn *c = UC(ll);
	c->url_len = 0;
	c->url[0] = '\0';
	bn_sid_reset(&c->h);
	c->bad = 0;
	c->body.len = 0;
	return 0;
}

static int on_url(llhttp_t *ll, const char *at, size_t n)
{
	struct uconn *c = UC(ll);
	if (bn_field_add(c->url, &c->url_len, sizeof(c->url), at, n) < 0)
		c->bad = 400;
	return 0;
}

static int on_hfield(llhttp_t *ll, const char *at, size_t n)
{
	bn_sid_name(&UC(ll)->h, at, n);
	return 0;
}

static int on_hfield_done(llhttp_t *ll)
{
	bn_sid_name_done(&UC(ll)->h);
	return 0;
}

static int on_hvalue(llhttp_t *ll, const char *at, size_t n)
{
	struct uconn *c = UC(ll);
	if (bn_sid_value(&c->h, at, n) < 0)
		c->bad = 400;
	return 0;
}

static int on_body(llhttp_t *ll, const char *at, size_t n)
{
	struct uconn *c = UC(ll);
	if (!c->bad && bn_buf_add(&c->body, at, n) < 0)
		c->bad = 413;
	return 0;
}

static int on_complete(llhttp_t *ll)
{
	struct uconn *c = UC(ll);
	handle(c);
	/* One message at a time once a stream is open or the end is decided:
	 * nothing may follow a stream's head or a Connection: close. */
	return c->stream_of || c->close_after ? HPE_PAUSED : 0;
}

/* ---- the loop ------------------------------------------------------------ */

static void conn_read(struct uconn *c)
{
	char buf[65536];
	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			conn_close(c);
			return;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (c->stream_of || c->close_after)
			continue;       /* a stream only listens for its end */
		llhttp_errno_t e = llhttp_execute(&c->ll, buf, (size_t)n);
		if (e != HPE_OK && e != HPE_PAUSED) {
			c->close_after = 1;
			respond_text(c, 400, "Bad Request", "malformed HTTP request\n");
			break;
		}
		if ((size_t)n < sizeof(buf) || c->out.len > OUT_PAUSE)
			break;
	}
	conn_flush(c);
}

static void accept_all(void)
{
	for (;;) {
		int fd = accept4(U.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				static int told;
				if (!told++)
					fprintf(stderr, "upstream: out of descriptors, accepts wait\n");
				usleep(1000);
			}
			return;
		}
		struct uconn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->magic = UCONN_MAGIC;
		c->fd = fd;
		bn_buf_init(&c->out, MAX_OUT);
		bn_buf_init(&c->body, MAX_BODY);
		llhttp_init(&c->ll, HTTP_REQUEST, &U.settings);
		c->ll.data = c;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
		if (epoll_ctl(U.ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			conn_close(c);
	}
}

/* ---- the tool list ------------------------------------------------------- */

static void tool_name(long i, char *buf, size_t len)
{
	static const char *const fixed[] = {"echo", "sse", "add"};
	if (i < 3)
		snprintf(buf, len, "%s", fixed[i]);
	else
		snprintf(buf, len, "tool_%04ld", i);
}

/* Render the list once; split inside tool 0's description so --vary-list
 * can put a counter there without re-rendering. */
static int render_tools(void)
{
	struct bn_buf b;
	size_t split = 0;

	bn_buf_init(&b, (size_t)1 << 30);
	bn_buf_add(&b, "[", 1);
	for (long i = 0; i < U.ntools; i++) {
		char name[32];
		tool_name(i, name, sizeof(name));
		if (bn_buf_addf(&b, "%s{\"name\":\"%s\",\"title\":\"Bench tool %ld\",\"description\":"
		                "\"Returns a fixed greeting; one of the benchmark's tools",
		                i ? "," : "", name, i) < 0)
			goto oom;
		if (i == 0)
			split = b.len;
		if (bn_buf_addf(&b,
		                ".\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"message\":{"
		                "\"type\":\"string\",\"description\":\"text to send back\"},\"count\":{"
		                "\"type\":\"integer\",\"minimum\":1,\"description\":\"how many times\"}},"
		                "\"required\":[\"message\"]},\"annotations\":{\"title\":\"Bench tool "
		                "%ld\",\"readOnlyHint\":true,\"destructiveHint\":false,"
		                "\"idempotentHint\":true,\"openWorldHint\":false}}",
		                i) < 0)
			goto oom;
	}
	if (bn_buf_add(&b, "]}", 2) < 0)
		goto oom;
	if (!split) {                   /* no tools: nothing to vary */
		split = 1;
		U.vary = 0;
	}
	U.list_head = strndup(b.data, split);
	U.list_tail = strndup(b.data + split, b.len - split);
	U.head_len = split;
	U.tail_len = b.len - split;
	bn_buf_fini(&b);
	return U.list_head && U.list_tail ? 0 : -1;
oom:
	bn_buf_fini(&b);
	return -1;
}

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void usage(void)
{
	fputs("usage: upstream --port P [--tools N] [--vary-list] [--max-sessions N]\n", stderr);
	exit(2);
}

static int setup(int argc, char **argv)
{
	int port = -1;

	U.ntools = 3;
	U.max_sessions = 200000;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
			port = (int)bn_parse_long("--port", argv[++i], 1, 65535);
		else if (strcmp(argv[i], "--tools") == 0 && i + 1 < argc)
			U.ntools = bn_parse_long("--tools", argv[++i], 0, 100000);
		else if (strcmp(argv[i], "--max-sessions") == 0 && i + 1 < argc)
			U.max_sessions = bn_parse_long("--max-sessions", argv[++i], 1, 10000000);
		else if (strcmp(argv[i], "--vary-list") == 0)
			U.vary = 1;
		else
			usage();
	}
	if (port < 0)
		usage();
	if (getrandom(&U.rng, sizeof(U.rng), 0) != sizeof(U.rng) || !U.rng)
		U.rng = (uint64_t)bn_now_us() | 1;
	if (render_tools() < 0) {
		fprintf(stderr, "upstream: out of memory rendering %ld tools\n", U.ntools);
		return -1;
	}
	bn_raise_nofile(1 << 20);
	llhttp_settings_init(&U.settings);
	U.settings.on_message_begin = on_begin;
	U.settings.on_url = on_url;
	U.settings.on_header_field = on_hfield;
	U.settings.on_header_field_complete = on_hfield_done;
	U.settings.on_header_value = on_hvalue;
	U.settings.on_body = on_body;
	U.settings.on_message_complete = on_complete;
	U.lfd = bn_listen(port, 4096);
	U.ep = epoll_create1(EPOLL_CLOEXEC);
	if (U.lfd < 0 || U.ep < 0) {
		fprintf(stderr, "upstream: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
		return -1;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	epoll_ctl(U.ep, EPOLL_CTL_ADD, U.lfd, &ev);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	return 0;
}

int main(int argc, char **argv)
{
	struct epoll_event evs[256];

	if (setup(argc, argv) < 0)
		return 1;
	while (!stopping) {
		int n = epoll_wait(U.ep, evs, 256, 1000);
		for (int i = 0; i < n; i++) {
			struct uconn *c = evs[i].data.ptr;
			if (!c) {
				accept_all();
				continue;
			}
			if (c->magic != UCONN_MAGIC || c->closed)
				continue;   /* closed earlier in this batch */
			if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				conn_read(c);
			else if (evs[i].events & EPOLLOUT)
				conn_flush(c);
		}
		free_dead();
	}
	return 0;
}

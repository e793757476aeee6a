/* admin_int: what the admin endpoint's own files share (admin.c: listener,
 * routing, access, replies, set-up; calls.c: /calls, /calls/inflight,
 * /calls/stream and the recorder's sink; probes.c: /healthz, /readyz).
 * Nothing outside admin/ includes it: the endpoint's API is admin.h.
 *
 * Each admin request is one `struct admin_x` (the transport adapter's
 * exchange). Most are answered at once from admin_start(); two kinds live
 * on:
 *
 *   AX_STREAM  a /calls/stream subscriber, in adm->streams until its
 *              connection ends; records are written to it as the recorder
 *              hands them over, keep-alive comments from one shared
 *              timer. A reader whose output is over limits.max_output_bytes
 *              gets nothing more queued: it is marked behind and fed from
 *              the ring as it drains (calls_stream_pump), with a "gap"
 *              event for whatever left the ring meanwhile. Memory per
 *              reader is bounded by the output cap; a reader that stops
 *              reading is cut by conn's write timeout.
 *   AX_READY   a /readyz request waiting for the first round of upstream
 *              probes, in adm->ready_waiters until it finishes (or
 *              ADMIN_READY_WAIT_MS passed). Later requests are answered
 *              at once from the latest results (probes.c).
 */
#ifndef MCPWARDEN_ADMIN_INT_H
#define MCPWARDEN_ADMIN_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <event2/util.h>
#include <jansson.h>

#include "admin/admin_conf.h"
#include "admin/ring.h"
#include "proxy/hooks/sink.h"

#define ADMIN_X_MAGIC        0x61646d78u /* "admx" */
#define ADMIN_CALLS_DEFAULT  100
#define ADMIN_INFLIGHT_MAX   1000
#define ADMIN_PROBE_MAX_MS   2000u     /* default probe timeout's cap */
/* Readiness probes (issue 23): how long the first /readyz waits for the
 * first round, under Kubernetes' default 1 s probe timeout. */
#define ADMIN_READY_WAIT_MS  800u
#define ADMIN_KEEPALIVE_MS   15000u    /* when timeouts.sse_keepalive_ms is 0 */

struct conn;
struct evbuffer;
struct http_msg;
struct calllog;

/* What an admin exchange is once admin_start returned. */
enum ax_kind {
	AX_DONE,    /* answered (or answering): nothing of admin refers to it */
	AX_STREAM,  /* a /calls/stream reader, linked in adm->streams */
	AX_READY,   /* a /readyz request, linked in adm->ready_waiters */
};

struct admin_x {
	unsigned magic;
	struct admin *adm;            /* borrowed */
	struct conn *c;               /* borrowed: conn owns the exchange */
	enum ax_kind kind;
	struct admin_x *prev, *next;  /* adm->streams or adm->ready_waiters */
	struct ring_filter filter;    /* streams: strings point into fval */
	char fval[4][RING_KEY_MAX];
	uint64_t last_write_us;
	uint64_t next_seq;            /* streams: the first record not sent yet */
	int behind;                   /* streams: catching up from the ring */
	int dead;                     /* stream ended: write nothing more */
};

/* Readiness probes (issue 23): one upstream's probe. */
enum probe_state {
	PROBE_IDLE,        /* waiting for its turn in a round */
	PROBE_CONNECTING,  /* fd and ev live */
};

struct probe {
	struct admin *adm;            /* borrowed */
	enum probe_state state;
	const char *name;             /* borrowed: config */
	struct sockaddr_storage ss;
	socklen_t sslen;              /* 0: the host did not resolve */
	unsigned timeout_ms;
	evutil_socket_t fd;           /* owned while probing, else -1 */
	struct event *ev;             /* owned while probing */
	int up;                       /* -1 never probed */
	const char *why;              /* static: why it is down */
	uint64_t result_us;           /* when up/why were set, 0: never */
};

struct admin {
	struct px_ctx *ctx;           /* borrowed */
	struct listener *lst;         /* owned, NULL when off */
	/* HTTPS: a certificate of its own (tls, re-read on SIGHUP from the
	 * files), or the client listener's (ctx->tls_server); else plain. */
	struct ssl_ctx_st *tls;       /* owned, or NULL */
	char *tls_cert, *tls_key;     /* owned: tls's files, or NULL */
	int https;
	struct ring *ring;            /* owned */
	struct redact *rd;            /* owned */
	struct metrics *m;            /* owned */
	struct hook_record *rec;      /* owned */
	char *token;                  /* owned, NULL: no token */
	size_t token_len;
	struct calllog *log;          /* owned, NULL: no call log */
	size_t max_streams, nstreams;
	struct admin_x *streams;      /* borrowed list: exchanges owned by conn */
	struct admin_x *ready_waiters;
	struct event *keepalive;      /* owned */
	struct event *relisten;       /* owned */
	struct probe *probes;         /* owned: one per upstream */
	size_t nprobes;
	/* Readiness probes (issue 23): the background schedule (probes.c). */
	struct admin_probe_conf probe_conf;
	struct event *probe_tick;     /* owned: starts the next round */
	struct event *probe_wait;     /* owned: ends the first /readyz's wait */
	size_t probe_next;            /* the round's next probe to start */
	size_t probe_running, probe_peak;
	uint64_t probe_rounds, round_start_us;
	int probe_started;            /* the schedule runs (first /readyz) */
	int probe_known;              /* the first round ended, or the wait did */
	int probe_pumping;            /* in probe_pump: no re-entry */
	double start_time;
	/* Guards what every worker's recorder writes and this thread reads:
	 * ring, metrics, the recorder's in-flight table, the call log. The
	 * recorder takes it itself, only to publish (hook_record_set_lock);
	 * the endpoints hold it only to copy out. */
	pthread_mutex_t lock;
	int locked;                   /* lock initialised */
	/* New records for the /calls/stream readers, which live on this
	 * (worker 0's) loop: a record made on any worker wakes them once. */
	struct event *notify;         /* owned */
	int notify_pending;           /* atomic: a wakeup is on its way */
	int streams_open;             /* atomic copy of nstreams for other threads */
	pthread_t thread;             /* worker 0's, where streams live */
	int ready_requires_contract;  /* live baselines (issue 21): /readyz gate */
};

/* ---- admin.c ---- */

/* adm->lock is the recorder's too (hook_record_set_lock), which leaves
 * finished records waiting rather than wait for it: admin_lock first
 * publishes what waits, so that the holder reads every finished record,
 * and admin_unlock publishes what workers left meanwhile. */
void admin_lock(struct admin *adm);
void admin_unlock(struct admin *adm);

/* Content-Type plus the headers every reply carries, in a new buffer
 * (owned), NULL when memory runs out. */
struct evbuffer *admin_common_headers(const char *content_type);
/* A whole reply; extra (may be NULL: more header lines) is consumed. */
void admin_reply(struct admin_x *ax, int status, const char *content_type,
                 struct evbuffer *extra, const void *body, size_t len);
/* body (stolen) as compact JSON and a newline. */
void admin_reply_json(struct admin_x *ax, int status, json_t *body, struct evbuffer *extra);
/* {"error": "<message>"}, with WWW-Authenticate on 401, Allow on 405. */
void admin_reply_error(struct admin_x *ax, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Percent-decodes s[0..len) ('+' is a space) into out (cap bytes, cut,
 * always NUL-terminated). */
void admin_pct_decode(const char *s, size_t len, char *out, size_t cap);

/* The doubly linked lists of exchanges (adm->streams, ready_waiters). */
void admin_list_push(struct admin_x **head, struct admin_x *ax);
void admin_list_remove(struct admin_x **head, struct admin_x *ax);

/* ---- calls.c ---- */

/* GET /calls, /calls/inflight, /calls/stream (qs: the query, or NULL). */
void calls_list(struct admin_x *ax, const char *qs);
void calls_inflight(struct admin_x *ax, const char *qs);
void calls_stream(struct admin_x *ax, const struct http_msg *req, const char *qs);
/* A stream reader drained its output: write what it has not had yet. */
void calls_stream_pump(struct admin_x *ax);
/* The keep-alive timer (every stream that was quiet too long gets a
 * comment) and the wake-up for new records; arg: the admin. */
void calls_keepalive_cb(evutil_socket_t fd, short what, void *arg);
void calls_notify_cb(evutil_socket_t fd, short what, void *arg);
/* The recorder's sink (proxy/hooks/sink.h; arg: the admin): records into
 * the ring, the call log and the streams, counts into the metrics. */
extern const struct record_sink calls_sink;

/* ---- probes.c ---- */

/* One probe per configured upstream (its address resolved now: start-up
 * only). Leaves adm->probes NULL when memory runs out. */
void probes_setup(struct admin *adm);
/* Ends the probes still running and frees them. */
void probes_free(struct admin *adm);
/* GET /healthz, GET /readyz. */
void probes_healthz(struct admin_x *ax);
void probes_readyz(struct admin_x *ax);

#endif

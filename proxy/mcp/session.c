/* session: see session.h.
 * Why this file is long (over 800 lines): the table, the routing and the answers owed share struct
 * session's insides; the table (ids, buckets, LRU, sweep, reap) moves out first.
 *
 *   session_table
 *     buckets[] ──▶ session ─hnext─▶ session ─▶ NULL    (lookup by id)
 *     lru_head  ──▶ session ⇄ session ⇄ session          (live, least recently
 *                                                         active first: sweep)
 *     ended     ──▶ session ─lnext─▶ session ─▶ NULL    (waiting to be freed)
 *
 *   session
 *     pending ──▶ {id, progressToken, request, target, deadline} ─▶ …
 *                 (client requests in flight, oldest first)
 *     qhead   ──▶ {msg, raw} ─▶ …  (server messages for a stream not open yet)
 *     uf      ──▶ upstream_sse     (the upstream face, owned)
 *     stream  ──▶ the client's stream (a client-face exchange, borrowed)
 *
 * A session is freed from the table's `reap` event, never from a call
 * stack that could still hold it: once it has ended, no client exchange
 * holds a reference, and its upstream face finished closing.
 */
#include "proxy/mcp/session.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/net/affinity.h"
#include "proxy/ctx.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "proxy/mcp/upstream_sse.h"
#include "proxy/base/clock.h"
#include "proxy/base/flagnames.h"
#include "proxy/base/hash.h"

#define SESSION_MAGIC 0x73657373u /* "sess" */

/* A pending request has no life of its own beyond being in s->pending
 * (from session_client_message until answered, cancelled or overdue), so
 * no state enum: only what the upstream did with it. */
enum pending_flag {
	PF_ACCEPTED = 1u << 0,  /* the upstream took it (ops->accepted was called) */
};

struct pending {
	json_t *id;             /* owned copy */
	json_t *token;          /* owned copy of params._meta.progressToken, or NULL */
	json_t *request;        /* owned reference */
	void *target;           /* borrowed: the client exchange waiting, NULL once it left */
	unsigned flags;         /* enum pending_flag */
	uint64_t deadline_us;   /* answer by then (0: no deadline) */
	struct pending *next;
};

struct queued {
	json_t *msg;            /* owned reference */
	char *raw;              /* owned copy, or NULL */
	size_t raw_len;
	size_t bytes;           /* what it counts against max_queue_bytes */
	struct queued *next;
};

/* One bit each of struct session's flags word: facts orthogonal to the
 * state (session_flags_str). */
enum session_flag {
	/* No upstream face, or it finished closing (on_finished): nothing of
	 * the face refers to the session any more, so reap may free it. Set
	 * from session_new until session_connect makes a face. */
	SF_FACE_DONE = 1u << 0,
};
#define SESSION_NFLAGS 1 /* the last flag is 1u << (SESSION_NFLAGS - 1) */

struct session {
	unsigned magic;
	struct session_table *t;        /* borrowed */
	char id[SESSION_ID_MAX + 1];
	enum session_state state;       /* changed by set_state only */
	unsigned flags;                 /* enum session_flag */
	enum session_face face;
	size_t up;
	char *client_name;              /* owned, or NULL */
	struct upstream_sse *uf;        /* owned, or NULL before session_connect */
	void *stream;                   /* borrowed: the client's stream, or NULL */
	struct pending *pending;        /* owned list, oldest first */
	size_t npending;
	struct queued *qhead, *qtail;   /* owned */
	size_t nqueued, qbytes;
	int refs;                       /* client exchanges pointing here */
	int paused;                     /* client exchanges whose output is full */
	uint64_t last_active_us;
	const char *end_reason;         /* static, or the face's (it lives as long as s) */
	struct session *hnext;          /* bucket chain */
	struct session *lprev, *lnext;  /* LRU while live; ended list after */
};

struct session_table {
	struct px_ctx *ctx;                     /* borrowed, NULL in unit tests */
	const struct session_client_ops *ops;   /* borrowed */
	struct session_limits lim;
	struct session **buckets;               /* owned array of chains */
	size_t nbuckets;                        /* a power of two */
	struct session *lru_head, *lru_tail;
	size_t count;
	struct session *ended;
	enum px_transport *detected;            /* owned: one per upstream */
	size_t nups;
	struct event *sweep;                    /* owned: expiry and deadlines */
	struct event *reap;                     /* owned: deferred frees */
	struct session_stats stats;
};

const char *session_state_str(enum session_state st)
{
	switch (st) {
	case SESSION_NEW: return "new";
	case SESSION_CONNECTING: return "connecting";
	case SESSION_OPEN: return "open";
	case SESSION_ENDED: return "ended";
	}
	return "?";
}

static const char *face_str(enum session_face f)
{
	return f == SESSION_FACE_SSE ? "sse" : "streamable_http";
}

static const struct px_upstream_conf *up_conf(const struct session *s)
{
	return s->t->ctx ? &s->t->ctx->cfg->ups[s->up] : NULL;
}

/* Allowed next states, by state (a bit per state):
 *
 *         legacy face made, or          face ready
 *         first client message
 *   NEW ----------------------> CONNECTING ---------> OPEN
 *    |  \                           |                  ^ |
 *    |   +---------------------------|------------------+ |
 *    |     face ready (a Streamable face has no           |
 *    |     endpoint to wait for)     |                    |
 *    |                               v                    |
 *    +------------------------->  ENDED  <----------------+
 *                 session_end, from any live state
 *
 * ENDED is final: session_end and every face callback check for it first. */
#define M(st) (1u << (st))
static const unsigned session_moves[] = {
	[SESSION_NEW] = M(SESSION_CONNECTING) | M(SESSION_OPEN) | M(SESSION_ENDED),
	[SESSION_CONNECTING] = M(SESSION_OPEN) | M(SESSION_ENDED),
	[SESSION_OPEN] = M(SESSION_ENDED),
	[SESSION_ENDED] = 0,
};
#undef M

/* Every transition goes through here, so the log tells a session's life;
 * the table above says which are possible. */
static void set_state(struct session *s, enum session_state st)
{
	assert(session_moves[s->state] & (1u << st));
	log_msg(LOG_DEBUG, "session %.8s…: %s -> %s", s->id, session_state_str(s->state),
	        session_state_str(st));
	s->state = st;
}

static int has_flag(const struct session *s, unsigned f)
{
	return (s->flags & f) != 0;
}

static void flag_put(struct session *s, unsigned f, int on)
{
	s->flags = on ? s->flags | f : s->flags & ~f;
}

const char *session_flags_str(const struct session *s, char *buf, size_t len)
{
	static const char *const names[] = {"face-done"};
	_Static_assert(sizeof(names) / sizeof(names[0]) == SESSION_NFLAGS, "a name per flag");
	_Static_assert(SF_FACE_DONE == 1u << (SESSION_NFLAGS - 1), "SESSION_NFLAGS is the count");
	return flagnames_str(s->flags, names, SESSION_NFLAGS, buf, len);
}

/* ---- ids ------------------------------------------------------------------ */

static int random_bytes(unsigned char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got == n)
		return 0;
	/* Kernels without getrandom(2): the device it reads from. */
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	got = 0;
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return got == n ? 0 : -1;
}

int session_mint_id(char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[SESSION_ID_LEN / 2];

	if (outlen < SESSION_ID_LEN + 1 || random_bytes(b, sizeof(b)) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(b); i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[SESSION_ID_LEN] = '\0';
	return 0;
}

/* replicas: "<replica_id>-<hex>" when the table has a prefix, so that a
 * load balancer in front of several replicas can send every request
 * naming the session to the replica that holds it. */
static int mint_prefixed(const struct session_table *t, char *out, size_t outlen)
{
	size_t n = strlen(t->lim.id_prefix);
	if (n == 0)
		return session_mint_id(out, outlen);
	if (outlen < n + 1 + SESSION_ID_LEN + 1)
		return -1;
	memcpy(out, t->lim.id_prefix, n);
	out[n] = '-';
	return session_mint_id(out + n + 1, outlen - n - 1);
}

/* ---- the table ------------------------------------------------------------ */

static size_t bucket_of(const struct session_table *t, const char *id)
{
	return hash_fnv1a32_str(HASH_FNV1A32_INIT, id) & (t->nbuckets - 1);
}

static void lru_unlink(struct session_table *t, struct session *s)
{
	if (s->lprev)
		s->lprev->lnext = s->lnext;
	else
		t->lru_head = s->lnext;
	if (s->lnext)
		s->lnext->lprev = s->lprev;
	else
		t->lru_tail = s->lprev;
	s->lprev = s->lnext = NULL;
}

static void lru_append(struct session_table *t, struct session *s)
{
	s->lnext = NULL;
	s->lprev = t->lru_tail;
	if (t->lru_tail)
		t->lru_tail->lnext = s;
	else
		t->lru_head = s;
	t->lru_tail = s;
}

static void touch(struct session *s)
{
	s->last_active_us = clock_mono_us();
	if (s->state != SESSION_ENDED && s->t->lru_tail != s) {
		lru_unlink(s->t, s);
		lru_append(s->t, s);
	}
}

/* limits.max_sessions counts every worker's translated sessions: a place
 * is taken atomically before a session is made, given back in
 * table_remove(). Without workers (tests) the table's own count. */
static size_t *shared_count(const struct session_table *t)
{
	return t->ctx && t->ctx->proc ? &t->ctx->proc->translated_sessions : NULL;
}

static int take_place(struct session_table *t)
{
	size_t *n = shared_count(t);
	if (!n)
		return t->count < t->lim.max_sessions ? 0 : -1;
	if (__atomic_add_fetch(n, 1, __ATOMIC_RELAXED) <= t->lim.max_sessions)
		return 0;
	__atomic_sub_fetch(n, 1, __ATOMIC_RELAXED);
	return -1;
}

static void give_place(struct session_table *t)
{
	size_t *n = shared_count(t);
	if (n)
		__atomic_sub_fetch(n, 1, __ATOMIC_RELAXED);
}

static void table_remove(struct session_table *t, struct session *s)
{
	for (struct session **pp = &t->buckets[bucket_of(t, s->id)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == s) {
			*pp = s->hnext;
			break;
		}
	}
	s->hnext = NULL;
	lru_unlink(t, s);
	t->count--;
	give_place(t);
	if (t->ctx && t->ctx->proc->affinity)
		affinity_forget(t->ctx->proc->affinity, s->id);
}

static void schedule_reap(struct session_table *t)
{
	if (t->reap)
		event_active(t->reap, 0, 0);
}

static void reap_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	session_table_reap(arg);
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	session_table_sweep(arg, clock_mono_us());
}

struct session_table *session_table_new(struct px_ctx *ctx, const struct session_limits *lim,
                                        const struct session_client_ops *ops)
{
	struct session_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ctx = ctx;
	t->ops = ops;
	t->lim = *lim;
	t->nbuckets = 16;
	while (t->nbuckets < lim->max_sessions && t->nbuckets < (1u << 20))
		t->nbuckets <<= 1;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	t->nups = ctx ? ctx->cfg->nups : 0;
	t->detected = calloc(t->nups ? t->nups : 1, sizeof(*t->detected));
	if (!t->buckets || !t->detected)
		goto fail;
	if (ctx) {
		/* Deadlines and idle expiry are checked a few times per period,
		 * at most once a second: a request can be answered up to that
		 * much after its deadline. */
		uint64_t period = lim->request_us;
		if (lim->idle_us && (!period || lim->idle_us < period))
			period = lim->idle_us;
		period /= 4;
		if (period == 0 || period > 1000000)
			period = 1000000;
		if (period < 50000)
			period = 50000;
		struct timeval tv = {(time_t)(period / 1000000), (suseconds_t)(period % 1000000)};
		t->sweep = event_new(ctx->base, -1, EV_PERSIST, sweep_cb, t);
		t->reap = event_new(ctx->base, -1, 0, reap_cb, t);
		if (!t->sweep || !t->reap || event_add(t->sweep, &tv) < 0)
			goto fail;
	}
	return t;
fail:
	session_table_free(t);
	return NULL;
}

static void pending_free(struct pending *p)
{
	json_decref(p->id);
	json_decref(p->token);
	json_decref(p->request);
	free(p);
}

static void queued_free(struct queued *q)
{
	json_decref(q->msg);
	free(q->raw);
	free(q);
}

static void queue_clear(struct session *s)
{
	while (s->qhead) {
		struct queued *q = s->qhead;
		s->qhead = q->next;
		queued_free(q);
	}
	s->qtail = NULL;
	s->nqueued = s->qbytes = 0;
}

static void session_free(struct session *s)
{
	assert(s->magic == SESSION_MAGIC);
	while (s->pending) {
		struct pending *p = s->pending;
		s->pending = p->next;
		pending_free(p);
	}
	queue_clear(s);
	upstream_sse_free(s->uf);
	free(s->client_name);
	s->magic = 0;
	free(s);
}

void session_table_free(struct session_table *t)
{
	if (!t)
		return;
	while (t->lru_head) {
		struct session *s = t->lru_head;
		table_remove(t, s);
		session_free(s);
	}
	while (t->ended) {
		struct session *s = t->ended;
		t->ended = s->lnext;
		session_free(s);
	}
	if (t->sweep)
		event_free(t->sweep);
	if (t->reap)
		event_free(t->reap);
	free(t->buckets);
	free(t->detected);
	free(t);
}

size_t session_table_count(const struct session_table *t)
{
	return t->count;
}

void session_table_stats(const struct session_table *t, struct session_stats *out)
{
	*out = t->stats;
}

enum px_transport session_table_detected(const struct session_table *t, size_t up)
{
	return up < t->nups ? t->detected[up] : PX_TRANSPORT_AUTO;
}

void session_table_set_detected(struct session_table *t, size_t up, enum px_transport tr)
{
	if (up >= t->nups || t->detected[up] == tr)
		return;
	t->detected[up] = tr;
	const struct px_upstream_conf *uc = &t->ctx->cfg->ups[up];
	log_msg(LOG_INFO, "upstream %s (%s) speaks %s (detected; transport \"auto\")", uc->name,
	        uc->url_safe, config_transport_str(tr));
}

enum px_transport session_table_transport(const struct session_table *t, size_t up)
{
	if (up >= t->nups)
		return PX_TRANSPORT_AUTO;
	enum px_transport conf = t->ctx->cfg->ups[up].transport;
	return conf != PX_TRANSPORT_AUTO ? conf : t->detected[up];
}

void session_table_reap(struct session_table *t)
{
	struct session **pp = &t->ended;
	while (*pp) {
		struct session *s = *pp;
		if (s->refs == 0 && has_flag(s, SF_FACE_DONE)) {
			*pp = s->lnext;
			session_free(s);
		} else {
			pp = &s->lnext;
		}
	}
}

/* ---- delivery ------------------------------------------------------------- */

static int deliver_refusal(struct session *s, void *target, json_t *msg, const char *raw,
                           size_t raw_len, const json_t *request, int local, int status,
                           const struct upstream_sse_refusal *refusal)
{
	struct session_out o = {msg, raw, raw_len, request, local, status, refusal};
	if (s->t->ops->deliver(target, &o) < 0) {
		log_msg(LOG_DEBUG, "session %.8s…: a %s could not be delivered to the client", s->id,
		        jrpc_kind_str(jrpc_classify(msg)));
		return -1;
	}
	return 0;
}

static int deliver(struct session *s, void *target, json_t *msg, const char *raw, size_t raw_len,
                   const json_t *request, int local, int status)
{
	return deliver_refusal(s, target, msg, raw, raw_len, request, local, status, NULL);
}

/* The one answer of a request the upstream will not answer (refusal: the
 * upstream's HTTP answer when it refused it, else NULL). */
static void answer_refused(struct session *s, struct pending *p, int status, const char *why,
                           const struct upstream_sse_refusal *refusal)
{
	const struct px_upstream_conf *uc = up_conf(s);
	char msg[512];
	json_t *data = NULL;

	if (!p->target)
		return;
	if (uc) {
		snprintf(msg, sizeof(msg), "upstream %s: %s", uc->url_safe, why);
		data = json_pack("{s:s,s:s,s:s}", "upstream", uc->name, "url", uc->url_safe, "reason",
		                 why);
	} else {
		snprintf(msg, sizeof(msg), "%s", why);
	}
	json_t *err = jrpc_error_new(p->id, JRPC_UPSTREAM_ERROR, msg, data);
	if (!err)
		return;
	deliver_refusal(s, p->target, err, NULL, 0, p->request, 1, status, refusal);
	json_decref(err);
}

static void answer_error(struct session *s, struct pending *p, int status, const char *why)
{
	answer_refused(s, p, status, why, NULL);
}

/* How long a request may wait for its response (or its next progress). */
static uint64_t request_wait_us(const struct session *s)
{
	const struct px_upstream_conf *uc = up_conf(s);
	return uc ? (uint64_t)uc->request_timeout_ms * 1000u : s->t->lim.request_us;
}

static const char *request_method(const struct pending *p)
{
	return jrpc_method(p->request);
}

static struct pending *find_pending(struct session *s, const json_t *id, struct pending ***prevp)
{
	if (!id)
		return NULL;
	for (struct pending **pp = &s->pending; *pp; pp = &(*pp)->next) {
		if (jrpc_id_equal((*pp)->id, id)) {
			if (prevp)
				*prevp = pp;
			return *pp;
		}
	}
	return NULL;
}

static struct pending *take_pending(struct session *s, const json_t *id)
{
	struct pending **pp;
	struct pending *p = find_pending(s, id, &pp);
	if (p) {
		*pp = p->next;
		p->next = NULL;
		s->npending--;
	}
	return p;
}

static json_t *progress_token(const json_t *msg)
{
	json_t *params = json_object_get(msg, "params");
	json_t *meta = json_object_get(params, "_meta");
	json_t *tok = json_object_get(meta, "progressToken");
	return json_is_string(tok) || json_is_integer(tok) ? tok : NULL;
}

static struct pending *find_by_token(struct session *s, const json_t *tok)
{
	for (struct pending *p = s->pending; p; p = p->next)
		if (p->token && jrpc_id_equal(p->token, tok))
			return p;
	return NULL;
}

static void send_upstream(struct session *s, json_t *msg)
{
	if (s->uf && upstream_sse_send(s->uf, msg, NULL, 0) < 0)
		log_msg(LOG_WARN, "session %.8s…: the upstream queue is full: a %s was dropped", s->id,
		        jrpc_kind_str(jrpc_classify(msg)));
}

/* A server message for the client's stream: there, or held until one
 * opens. A server request may also ride a POST that can stream, so a
 * client that never opens a GET stream still gets to answer it. */
static void to_stream(struct session *s, json_t *msg, const char *raw, size_t raw_len,
                      int is_request)
{
	const struct session_limits *lim = &s->t->lim;

	if (s->stream) {
		deliver(s, s->stream, msg, raw, raw_len, NULL, 0, 0);
		return;
	}
	if (is_request) {
		for (struct pending *p = s->pending; p; p = p->next) {
			if (p->target && s->t->ops->can_stream(p->target)) {
				deliver(s, p->target, msg, raw, raw_len, NULL, 0, 0);
				return;
			}
		}
	}
	size_t bytes = raw ? raw_len : 256;
	if (s->nqueued >= lim->max_queue || s->qbytes + bytes > lim->max_queue_bytes) {
		s->t->stats.queued_dropped++;
		log_msg(LOG_WARN, "session %.8s…: no client stream and %zu messages held: a server "
		        "%s was dropped", s->id, s->nqueued, jrpc_kind_str(jrpc_classify(msg)));
		if (is_request) {
			/* The server would wait for ever: tell it. */
			json_t *err = jrpc_error_new(jrpc_id(msg), JRPC_UPSTREAM_ERROR,
			                             "mcpwarden: the client has no stream open to "
			                             "receive this request", NULL);
			if (err)
				send_upstream(s, err);
			json_decref(err);
		}
		return;
	}
	struct queued *q = calloc(1, sizeof(*q));
	if (!q)
		return;
	q->msg = json_incref(msg);
	q->bytes = bytes;
	if (raw && (q->raw = malloc(raw_len ? raw_len : 1)))
		memcpy(q->raw, raw, raw_len), q->raw_len = raw_len;
	if (s->qtail)
		s->qtail->next = q;
	else
		s->qhead = q;
	s->qtail = q;
	s->nqueued++;
	s->qbytes += bytes;
}

void session_upstream_message(struct session *s, json_t *msg, const char *raw, size_t raw_len)
{
	enum jrpc_kind k = jrpc_classify(msg);

	if (s->state == SESSION_ENDED)
		return;
	touch(s);
	if (k == JRPC_RESULT || k == JRPC_ERROR) {
		struct pending *p = take_pending(s, jrpc_id(msg));
		if (!p || !p->target) {
			/* Cancelled, overdue, or its client left: nobody waits. */
			s->t->stats.late_responses++;
			log_msg(LOG_DEBUG, "session %.8s…: a response nobody waits for was dropped", s->id);
			if (p)
				pending_free(p);
			return;
		}
		deliver(s, p->target, msg, raw, raw_len, p->request, 0, 0);
		const char *m = request_method(p);
		int init_failed = k == JRPC_ERROR && m && strcmp(m, "initialize") == 0;
		pending_free(p);
		if (init_failed)
			session_end(s, "the upstream refused initialize");
		return;
	}
	const char *method = jrpc_method(msg);
	if (k == JRPC_NOTIFICATION && method && strcmp(method, "notifications/progress") == 0) {
		json_t *params = json_object_get(msg, "params");
		json_t *tok = json_object_get(params, "progressToken");
		struct pending *p = tok ? find_by_token(s, tok) : NULL;
		if (p) {
			/* Progress keeps a request alive (its deadline restarts). */
			if (p->deadline_us)
				p->deadline_us = clock_mono_us() + request_wait_us(s);
			if (p->target && p->target != s->stream && s->t->ops->can_stream(p->target)) {
				deliver(s, p->target, msg, raw, raw_len, p->request, 0, 0);
				return;
			}
		}
	}
	to_stream(s, msg, raw, raw_len, k == JRPC_REQUEST);
}

void session_upstream_accepted(struct session *s, const json_t *msg)
{
	if (s->state == SESSION_ENDED)
		return;
	struct pending *p = find_pending(s, jrpc_id(msg), NULL);
	/* Only the request the upstream took: a response that came first
	 * (legacy: it may overtake the 202) took its pending entry already. */
	if (p && p->target && !(p->flags & PF_ACCEPTED)) {
		p->flags |= PF_ACCEPTED;
		s->t->ops->accepted(p->target);
	}
}

/* ---- sessions --------------------------------------------------------------- */

struct session *session_new(struct session_table *t, size_t up, enum session_face face,
                            const char *client_name, const char **why)
{
	if (take_place(t) < 0) {
		t->stats.refused++;
		*why = "too many sessions open";
		return NULL;
	}
	struct session *s = calloc(1, sizeof(*s));
	if (!s || (client_name && !(s->client_name = strdup(client_name)))) {
		free(s);
		give_place(t);
		*why = "out of memory";
		return NULL;
	}
	/* A collision among 2^128 values is not going to happen, but looking
	 * costs nothing and an id must never name two sessions. */
	do {
		if (mint_prefixed(t, s->id, sizeof(s->id)) < 0) {
			free(s->client_name);
			free(s);
			give_place(t);
			*why = "no random source for session ids";
			return NULL;
		}
	} while (session_find(t, s->id));
	s->magic = SESSION_MAGIC;
	s->t = t;
	s->face = face;
	s->up = up;
	s->state = SESSION_NEW;
	s->flags = SF_FACE_DONE;
	s->last_active_us = clock_mono_us();
	size_t b = bucket_of(t, s->id);
	s->hnext = t->buckets[b];
	t->buckets[b] = s;
	lru_append(t, s);
	t->count++;
	t->stats.opened++;
	/* Other workers hand requests naming it to this one. Should this
	 * fail (out of memory), they answer 404 and the client starts over. */
	if (t->ctx && t->ctx->proc->affinity)
		affinity_set(t->ctx->proc->affinity, s->id, t->ctx->worker_id);
	const struct px_upstream_conf *uc = up_conf(s);
	log_msg(LOG_INFO, "session %.8s… opened: %s client, upstream %s", s->id, face_str(face),
	        uc ? uc->name : "-");
	return s;
}

struct session *session_find(struct session_table *t, const char *id)
{
	/* Asked for every Streamable HTTP request: most workers hold no
	 * translated session, and hashing the id would be for nothing. */
	if (!t->count)
		return NULL;
	for (struct session *s = t->buckets[bucket_of(t, id)]; s; s = s->hnext)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

const char *session_id(const struct session *s)
{
	return s->id;
}

enum session_face session_face(const struct session *s)
{
	return s->face;
}

enum session_state session_state(const struct session *s)
{
	return s->state;
}

size_t session_upstream(const struct session *s)
{
	return s->up;
}

const char *session_client_name(const struct session *s)
{
	return s->client_name;
}

const char *session_transport_str(const struct session *s)
{
	if (s->uf)
		return config_transport_str(upstream_sse_transport(s->uf));
	return s->t->ctx ? config_transport_str(session_table_transport(s->t, s->up)) : "auto";
}

void session_ref(struct session *s)
{
	s->refs++;
}

void session_unref(struct session *s)
{
	assert(s->refs > 0);
	if (--s->refs == 0 && s->state == SESSION_ENDED)
		schedule_reap(s->t);
}

void session_pause(struct session *s)
{
	if (s->paused++ == 0 && s->uf)
		upstream_sse_pause(s->uf);
}

void session_resume(struct session *s)
{
	assert(s->paused > 0);
	if (--s->paused == 0 && s->uf)
		upstream_sse_resume(s->uf);
}

/* ---- the upstream face's callbacks ----------------------------------------- */

static void face_ready(void *arg, enum px_transport tr)
{
	struct session *s = arg;
	if (s->state == SESSION_ENDED)
		return;
	set_state(s, SESSION_OPEN);
	if (s->t->ctx->cfg->ups[s->up].transport == PX_TRANSPORT_AUTO)
		session_table_set_detected(s->t, s->up, tr);
	if (s->stream)
		s->t->ops->opened(s->stream);
}

static void face_message(void *arg, json_t *msg, const char *raw, size_t raw_len)
{
	session_upstream_message(arg, msg, raw, raw_len);
}

static void face_accepted(void *arg, const json_t *msg)
{
	session_upstream_accepted(arg, msg);
}

/* Whether an upstream's refusal of initialize says it only speaks the
 * stateless era (2026-07-28 and later: no initialize, no sessions), which
 * no legacy HTTP+SSE client can use: UnsupportedProtocolVersion whose
 * data.supported lists only such versions. */
static int stateless_only(const json_t *reply)
{
	const json_t *err = json_object_get(reply, "error");
	const json_t *sup = json_object_get(json_object_get(err, "data"), "supported");
	size_t n = json_array_size(sup);

	if (json_integer_value(json_object_get(err, "code")) != -32022 || n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *v = json_string_value(json_array_get(sup, i));
		if (!v || strcmp(v, "2026-07-28") < 0)
			return 0;
	}
	return 1;
}

/* The error a legacy client gets for such an upstream: the mismatch named,
 * the upstream's versions kept. */
static void answer_era_mismatch(struct session *s, struct pending *p, int status,
                                const json_t *reply)
{
	const struct px_upstream_conf *uc = up_conf(s);
	const json_t *data = json_object_get(json_object_get(reply, "error"), "data");
	char msg[512];

	snprintf(msg, sizeof(msg), "upstream %s speaks only the stateless MCP era (2026-07-28 and "
	         "later, without initialize or sessions); a legacy HTTP+SSE client cannot use it "
	         "through mcpwarden until bridging between eras is built",
	         uc ? uc->url_safe : "?");
	json_t *d = json_pack("{s:s,s:O?,s:O?}", "reason", "protocol era mismatch", "supported",
	                      json_object_get(data, "supported"), "requested",
	                      json_object_get(data, "requested"));
	json_t *err = jrpc_error_new(p->id, -32022, msg, d);
	if (err)
		deliver(s, p->target, err, NULL, 0, p->request, 1, status);
	json_decref(err);
}

static void face_failed(void *arg, const json_t *msg, int status, const char *detail,
                        const json_t *reply, const struct upstream_sse_refusal *refusal)
{
	struct session *s = arg;

	if (s->state == SESSION_ENDED)
		return;
	if (jrpc_classify(msg) != JRPC_REQUEST) {
		log_msg(LOG_WARN, "session %.8s…: a client %s did not reach the upstream: %s", s->id,
		        jrpc_kind_str(jrpc_classify(msg)), detail);
		return;
	}
	struct pending *p = take_pending(s, jrpc_id(msg));
	if (!p)
		return;
	const char *m = request_method(p);
	int init = m && strcmp(m, "initialize") == 0;
	if (p->target && init && s->face == SESSION_FACE_SSE && reply && stateless_only(reply)) {
		log_msg(LOG_WARN, "session %.8s…: the upstream speaks only the stateless era: a "
		        "legacy client cannot use it", s->id);
		answer_era_mismatch(s, p, status, reply);
	} else if (p->target && reply && jrpc_classify(reply) == JRPC_ERROR &&
	    jrpc_id_equal(jrpc_id(reply), p->id)) {
		/* The upstream's own error for it: the client gets that. */
		json_t *copy = json_deep_copy(reply);
		if (copy)
			deliver_refusal(s, p->target, copy, NULL, 0, p->request, 0, status, refusal);
		json_decref(copy);
	} else {
		answer_refused(s, p, status ? status : 502, detail, refusal);
	}
	pending_free(p);
	if (init)
		session_end(s, detail);
}

static void face_closed(void *arg, const char *detail)
{
	session_end(arg, detail);
}

static void face_finished(void *arg)
{
	struct session *s = arg;
	flag_put(s, SF_FACE_DONE, 1);
	schedule_reap(s->t);
}

static const struct upstream_sse_cbs face_cbs = {
	face_ready, face_message, face_accepted, face_failed, face_closed, face_finished,
};

int session_connect(struct session *s, const char *authorization, int streamable_failed)
{
	struct session_table *t = s->t;
	const struct px_upstream_conf *uc = up_conf(s);
	enum px_transport first;
	int fallback;

	if (!uc || s->uf)
		return s->uf ? 0 : -1;
	if (streamable_failed) {
		first = PX_TRANSPORT_SSE;
		fallback = 0;
	} else if (uc->transport != PX_TRANSPORT_AUTO) {
		first = uc->transport;
		fallback = 0;
	} else {
		/* auto: what worked last time first, but a change of heart on the
		 * upstream's side is followed. */
		first = t->detected[s->up];
		if (first == PX_TRANSPORT_AUTO)
			first = upstream_sse_auto_first(uc);
		fallback = 1;
	}
	s->uf = upstream_sse_new(t->ctx, s->up, first, fallback, authorization, &face_cbs, s);
	if (!s->uf)
		return -1;
	flag_put(s, SF_FACE_DONE, 0);
	/* Not when the face already failed from within upstream_sse_new (its
	 * stream could not start: session_end ran, the session is ENDED). */
	if (first == PX_TRANSPORT_SSE && s->state == SESSION_NEW)
		set_state(s, SESSION_CONNECTING);
	return 0;
}

/* ---- the client side -------------------------------------------------------- */

int session_attach_stream(struct session *s, void *target)
{
	if (s->state == SESSION_ENDED || s->stream)
		return -1;
	s->stream = target;
	touch(s);
	while (s->qhead && s->stream == target) {
		struct queued *q = s->qhead;
		s->qhead = q->next;
		if (!s->qhead)
			s->qtail = NULL;
		s->nqueued--;
		s->qbytes -= q->bytes;
		deliver(s, target, q->msg, q->raw, q->raw_len, NULL, 0, 0);
		queued_free(q);
	}
	return 0;
}

void *session_stream(const struct session *s)
{
	return s->stream;
}

void session_detach(struct session *s, void *target)
{
	for (struct pending *p = s->pending; p; p = p->next)
		if (p->target == target)
			p->target = NULL;
	if (s->stream != target)
		return;
	s->stream = NULL;
	touch(s);
	/* The legacy transport has no session without its stream. */
	if (s->face == SESSION_FACE_SSE)
		session_end(s, "the client closed its SSE stream");
}

int session_client_message(struct session *s, json_t *msg, const char *raw, size_t raw_len,
                           void *target, const char **why)
{
	enum jrpc_kind k = jrpc_classify(msg);

	if (s->state == SESSION_ENDED) {
		*why = "the session has ended";
		return -1;
	}
	touch(s);
	if (s->state == SESSION_NEW && s->uf)
		set_state(s, SESSION_CONNECTING);
	if (k == JRPC_REQUEST) {
		if (s->npending >= s->t->lim.max_pending) {
			*why = "too many requests in flight in this session";
			return -1;
		}
		if (find_pending(s, jrpc_id(msg), NULL)) {
			*why = "a request with this id is already in flight";
			return -1;
		}
		struct pending *p = calloc(1, sizeof(*p));
		if (!p || !(p->id = json_deep_copy(jrpc_id(msg)))) {
			free(p);
			*why = "out of memory";
			return -1;
		}
		json_t *tok = progress_token(msg);
		p->token = tok ? json_deep_copy(tok) : NULL;
		p->request = json_incref(msg);
		p->target = target;
		uint64_t wait = request_wait_us(s);
		p->deadline_us = wait ? clock_mono_us() + wait : 0;
		if (s->uf && upstream_sse_send(s->uf, msg, raw, raw_len) < 0) {
			pending_free(p);
			*why = "too many messages wait for the upstream";
			return -1;
		}
		struct pending **tail = &s->pending;
		while (*tail)
			tail = &(*tail)->next;
		*tail = p;
		s->npending++;
		return 0;
	}
	if (k == JRPC_NOTIFICATION && jrpc_method(msg) &&
	    strcmp(jrpc_method(msg), "notifications/cancelled") == 0) {
		/* The client gave up on a request: it expects no answer, and the
		 * POST that waited for it may end. */
		json_t *rid = json_object_get(json_object_get(msg, "params"), "requestId");
		struct pending *p = take_pending(s, rid);
		if (p) {
			void *w = p->target;
			pending_free(p);
			if (w && w != s->stream)
				s->t->ops->withdrawn(w);
		}
	}
	if (s->uf && upstream_sse_send(s->uf, msg, raw, raw_len) < 0) {
		*why = "too many messages wait for the upstream";
		return -1;
	}
	return 0;
}

void session_end(struct session *s, const char *why)
{
	struct session_table *t = s->t;

	if (s->state == SESSION_ENDED)
		return;
	set_state(s, SESSION_ENDED);
	s->end_reason = why;
	table_remove(t, s);
	s->lnext = t->ended;
	t->ended = s;
	t->stats.ended++;
	log_msg(LOG_INFO, "session %.8s… ended: %s (%zu request%s answered with an error)", s->id,
	        why, s->npending, s->npending == 1 ? "" : "s");
	/* Exactly one answer each, oldest first. */
	while (s->pending) {
		struct pending *p = s->pending;
		s->pending = p->next;
		s->npending--;
		answer_error(s, p, 502, why);
		pending_free(p);
	}
	queue_clear(s);
	void *st = s->stream;
	s->stream = NULL;
	if (st)
		t->ops->end_stream(st, why);
	if (s->uf)
		upstream_sse_close(s->uf);
	schedule_reap(t);
}

/* ---- time ------------------------------------------------------------------- */

static void expire_requests(struct session *s, uint64_t now_us)
{
	struct pending **pp = &s->pending;
	while (*pp) {
		struct pending *p = *pp;
		if (!p->deadline_us || now_us < p->deadline_us) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		s->npending--;
		s->t->stats.timeouts++;
		log_msg(LOG_WARN, "session %.8s…: no response to %s in time", s->id,
		        request_method(p) ? request_method(p) : "a request");
		answer_error(s, p, 504, "the upstream did not answer in time");
		const char *m = request_method(p);
		if (!m || strcmp(m, "initialize") != 0) {
			/* As a client would (lifecycle "Timeouts"): tell the server
			 * to stop. initialize must never be cancelled. */
			json_t *c = json_pack("{s:s,s:s,s:{s:O,s:s}}", "jsonrpc", "2.0", "method",
			                      "notifications/cancelled", "params", "requestId", p->id,
			                      "reason", "mcpwarden: no response in time");
			if (c)
				send_upstream(s, c);
			json_decref(c);
		}
		pending_free(p);
	}
}

size_t session_table_sweep(struct session_table *t, uint64_t now_us)
{
	size_t ended = 0;
	struct session *s = t->lru_head;

	while (s) {
		struct session *next = s->lnext;
		expire_requests(s, now_us);
		/* Idle: nothing in flight, no client stream listening, no message
		 * either way for idle_us. A listening client keeps its session. */
		if (t->lim.idle_us && !s->stream && s->npending == 0 &&
		    now_us > s->last_active_us && now_us - s->last_active_us >= t->lim.idle_us) {
			t->stats.expired++;
			session_end(s, "the session was idle too long");
			ended++;
		}
		s = next;
	}
	return ended;
}

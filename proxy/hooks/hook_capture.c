/* hook_capture: see hook_capture.h.
 *
 * Why this file is long (over 800 lines): the observer, the session cache and
 * the writer thread share the queue and its locks; keeping them in one file
 * keeps every lock and the order it is taken in in sight. The line itself
 * is built in capture_line.c, a pure module.
 *
 *   worker (observer)                         writer thread
 *   ------------------------------------------+-----------------------------
 *   client tools/call: id and params kept     |
 *     (a reference) in the exchange's slot    |
 *   its answer (or the exchange's end):       |
 *     line body built (redacted), linked to   | waits on `cond`; unlinks the
 *     the queue under `qlock` if it fits      | whole queue; numbers each line
 *     (else dropped, counted)                 | (seq), rotates, writev()s it
 *   initialize's clientInfo/capabilities      |
 *     kept until its result names the session |
 *     -> the session cache (`slock`)          |
 *
 * The writer alone touches the files, so a rotation or a reopen never
 * races a write, and a line is never split between two files.
 */
#include "proxy/hooks/hook_capture.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "proxy/config.h"
#include "proxy/base/clock.h"
#include "proxy/base/errs.h"
#include "proxy/base/hash.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "proxy/base/sbuf.h"
#include "proxy/hooks/capture_line.h"
#include "proxy/hooks/inspect.h"
#include "proxy/hooks/redact.h"

#define CX_MAGIC 0x63617078u /* "capx" */
#define SESS_WAYS 8
#define SESS_SETS (CAPTURE_SESSIONS / SESS_WAYS)
#define SESS_ID_MAX 128          /* longer session ids are not remembered */
#define VERSION_MAX 32
#define SESS_KEY_LEN 20          /* "c-" + 16 hex + NUL */
#define CAPTURE_BATCH_NS 5000000L /* 5 ms: see writer_main */
#define REOPEN_RETRY_US 1000000u /* a file that cannot be opened: tried again this often */
#define META_CLIENT "io.modelcontextprotocol/clientInfo"
#define META_CAPS   "io.modelcontextprotocol/clientCapabilities"

/* One upstream's file; the writer's alone but for the atomics. */
struct cap_up {
	char *name, *path;           /* owned */
	size_t max_bytes;
	unsigned keep;
	int on, unredacted;
	int fd;                      /* -1: not open */
	uint64_t size;               /* bytes in the file now */
	uint64_t retry_us;           /* fd < 0: next open attempt */
	int failing;                 /* a write failed (logged once) */
	uint64_t records, dropped;   /* atomics */
};

/* A session whose initialize was seen: texts as the client sent them
 * (redaction is the line's, per upstream). */
struct sess {
	uint64_t hash;               /* 0: empty */
	size_t up;
	char id[SESS_ID_MAX];
	char version[VERSION_MAX];
	char key[SESS_KEY_LEN];      /* its capture key, "" until made */
	char *client, *caps;         /* owned: the line's members as text, or NULL */
	uint64_t used;               /* sclock when last used (atomic): the oldest of a set goes */
};

/* One line waiting for the writer. */
struct qline {
	struct qline *next;
	size_t up, len;
	char *body;                  /* owned */
};

/* A tools/call waiting for its answer in this exchange. */
struct creq {
	struct creq *next;
	json_t *id, *params;         /* references */
	json_t *meta_client, *meta_caps; /* 2026-era _meta members, references */
};

/* The exchange's slot: its calls, and an initialize being answered. */
struct cx {
	unsigned magic;
	struct creq *reqs;           /* owned */
	json_t *init_id, *init_client, *init_caps; /* references, or NULL */
};

struct hook_capture {
	int slot;
	struct redact *rd;           /* borrowed unless own_rd */
	int own_rd;
	struct redact *plain;        /* owned: no keys, no values (unredacted lines) */
	struct cap_up *ups;          /* owned, cfg order */
	size_t nups;
	unsigned char key[32];       /* the session keys' HMAC key, per process */
	/* The session cache: read-locked by every call (readers never wait
	 * for each other), write-locked by an initialize's answer. */
	pthread_rwlock_t slock;
	struct sess *sess;           /* owned: SESS_SETS x SESS_WAYS */
	uint64_t sclock;             /* atomic */
	pthread_mutex_t qlock;       /* the queue and the writer's flags */
	pthread_cond_t cond;
	struct qline *qhead, **qtail;
	size_t qbytes;
	int reopen, stop;
	pthread_t writer;
	int started;
	uint64_t seq;                /* the writer's */
};

/* ---- the files (writer thread, and set-up) ---------------------------------- */

/* The file at path opened for appending, created 0600, a link refused.
 * -1 with errno (or with *why, a static reason). */
static int open_capture(const char *path, uint64_t *size, const char **why)
{
	*why = NULL;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
	              0600);
	if (fd < 0) {
		if (errno == ELOOP)
			*why = "is a symbolic link (refused: captured arguments would go where it points)";
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		*why = "is not a regular file";
		return -1;
	}
	/* A file left wider by someone else holds captured calls: narrow it. */
	if ((st.st_mode & 077) && fchmod(fd, 0600) < 0) {
		close(fd);
		*why = "has group or other permissions and cannot be set to 0600";
		return -1;
	}
	/* Blocking from here on: a regular file never waits on a reader. */
	(void)fcntl(fd, F_SETFL, O_APPEND);
	*size = (uint64_t)st.st_size;
	return fd;
}

static const char *open_error(const char *why)
{
	return why ? why : strerror(errno);
}

/* Opens u's path; when names the occasion in the log line ("SIGUSR1: "),
 * "" for none. A failure is logged once until the file works again
 * (`failing`); the next attempt comes after REOPEN_RETRY_US. */
static void up_open(struct cap_up *u, const char *when)
{
	const char *why;
	u->fd = open_capture(u->path, &u->size, &why);
	if (u->fd < 0) {
		if (!u->failing)
			log_msg(LOG_ERROR, "%scapture file %s (upstream %s): %s; lines are dropped "
			                   "until it can be opened", when, u->path, u->name,
			        open_error(why));
		u->failing = 1;
		u->retry_us = clock_mono_us() + REOPEN_RETRY_US;
	} else if (*when) {
		log_msg(LOG_INFO, "%scapture file %s reopened", when, u->path);
	}
}

/* FILE.(keep-1) -> FILE.keep ... FILE -> FILE.1, then a new FILE. */
static void up_rotate(struct cap_up *u)
{
	char from[PATH_MAX], to[PATH_MAX];
	close(u->fd);
	u->fd = -1;
	if (u->keep == 0) {
		(void)unlink(u->path);
	} else {
		for (unsigned i = u->keep - 1; i >= 1; i--) {
			snprintf(from, sizeof(from), "%s.%u", u->path, i);
			snprintf(to, sizeof(to), "%s.%u", u->path, i + 1);
			(void)rename(from, to); /* ENOENT: fewer files so far */
		}
		snprintf(to, sizeof(to), "%s.1", u->path);
		if (rename(u->path, to) < 0 && !u->failing)
			log_msg(LOG_ERROR, "capture file %s: cannot rotate it (%s)", u->path,
			        strerror(errno));
	}
	up_open(u, "");
}

/* Lines written with one writev: a busy queue costs a system call per
 * batch, not per line. */
#define RUN_MAX 256

/* Writes lines q, q->next, ... of upstream u (up to RUN_MAX of them, all
 * in the same file: a run stops where a rotation is due, rotating first
 * when it is due before its first line). Returns the first line not
 * taken. Each line gets its seq here, in file order. */
static struct qline *up_write_run(struct hook_capture *hc, struct cap_up *u, struct qline *q)
{
	static char nl[] = "\n";
	char heads[RUN_MAX][CAPTURE_LINE_HEAD_MAX];
	struct iovec iov[RUN_MAX * 3];
	size_t n = 0, total = 0;
	size_t up = q->up;

	if (u->fd < 0 && clock_mono_us() >= u->retry_us)
		up_open(u, "");
	for (; q && q->up == up && n < RUN_MAX; q = q->next, n++) {
		size_t hn = capture_line_head(hc->seq + n + 1, heads[n], sizeof(heads[n]));
		size_t len = hn + q->len + 1;
		/* Before a line would take the file past max_bytes (one longer
		 * than that gets a file of its own). */
		if (u->fd >= 0 && u->size + total > 0 && u->size + total + len > u->max_bytes) {
			if (n > 0)
				break;
			up_rotate(u);
		}
		if (u->fd < 0)
			break;
		iov[n * 3] = (struct iovec){heads[n], hn};
		iov[n * 3 + 1] = (struct iovec){q->body, q->len};
		iov[n * 3 + 2] = (struct iovec){nl, 1};
		total += len;
	}
	if (u->fd < 0) {
		/* Not open (logged where it failed): this line is lost. */
		__atomic_add_fetch(&u->dropped, 1, __ATOMIC_RELAXED);
		return q->next;
	}
	ssize_t w = writev(u->fd, iov, (int)(n * 3));
	if (w == (ssize_t)total) {
		hc->seq += n;
		u->size += total;
		__atomic_add_fetch(&u->records, n, __ATOMIC_RELAXED);
		if (u->failing)
			log_msg(LOG_WARN, "capture file %s is written again", u->path);
		u->failing = 0;
		return q;
	}
	int err = w < 0 ? errno : ENOSPC;
	/* Never half a line: cut what went out of this run. */
	if (w > 0 && ftruncate(u->fd, (off_t)u->size) < 0)
		u->size += (uint64_t)w;
	__atomic_add_fetch(&u->dropped, n, __ATOMIC_RELAXED);
	if (!u->failing)
		log_msg(LOG_ERROR, "writing capture file %s failed (%s): lines are dropped and "
		                   "counted (mcpwarden_capture_dropped_total)", u->path, strerror(err));
	u->failing = 1;
	return q;
}

static void *writer_main(void *arg)
{
	struct hook_capture *hc = arg;
	for (;;) {
		pthread_mutex_lock(&hc->qlock);
		while (!hc->qhead && !hc->reopen && !hc->stop)
			pthread_cond_wait(&hc->cond, &hc->qlock);
		struct qline *q = hc->qhead;
		int reopen = hc->reopen, stop = hc->stop, had = q != NULL;
		hc->qhead = NULL;
		hc->qtail = &hc->qhead;
		hc->qbytes = 0;
		hc->reopen = 0;
		pthread_mutex_unlock(&hc->qlock);
		for (size_t i = 0; reopen && i < hc->nups; i++) {
			struct cap_up *u = &hc->ups[i];
			if (!u->on)
				continue;
			if (u->fd >= 0)
				close(u->fd);
			up_open(u, "SIGUSR1: ");
		}
		while (q) {
			struct qline *rest = up_write_run(hc, &hc->ups[q->up], q);
			while (q != rest) {
				struct qline *next = q->next;
				free(q->body);
				free(q);
				q = next;
			}
		}
		/* stop is only seen with the queue it came with written. */
		if (stop)
			return NULL;
		/* After a batch, let the next one gather: while calls come, the
		 * workers find the queue non-empty and wake nobody, and a batch
		 * is one writev. A line waits at most this long for the file. */
		if (had)
			nanosleep(&(struct timespec){0, CAPTURE_BATCH_NS}, NULL);
	}
}

/* ---- the queue (workers) ------------------------------------------------------- */

static void enqueue(struct hook_capture *hc, size_t up, struct sbuf *body)
{
	struct cap_up *u = &hc->ups[up];
	struct qline *q = body->oom ? NULL : malloc(sizeof(*q));
	if (!q) {
		free(body->p);
		__atomic_add_fetch(&u->dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	*q = (struct qline){NULL, up, body->len, body->p};
	pthread_mutex_lock(&hc->qlock);
	int fits = hc->qbytes + q->len <= CAPTURE_QUEUE_BYTES;
	if (fits) {
		/* The writer sleeps only on an empty queue: one wake-up per
		 * batch, not per line. */
		if (!hc->qhead)
			pthread_cond_signal(&hc->cond);
		*hc->qtail = q;
		hc->qtail = &q->next;
		hc->qbytes += q->len;
	}
	pthread_mutex_unlock(&hc->qlock);
	if (!fits) {
		free(q->body);
		free(q);
		__atomic_add_fetch(&u->dropped, 1, __ATOMIC_RELAXED);
	}
}

/* ---- sessions ------------------------------------------------------------------ */

static uint64_t sess_hash(size_t up, const char *id)
{
	uint64_t h = hash_fnv1a64(id, strlen(id)) ^ ((uint64_t)up * 0x9e3779b97f4a7c15u);
	return h ? h : 1;
}

/* The slot of (up, id), or NULL. Under slock. */
static struct sess *sess_find(struct hook_capture *hc, size_t up, const char *id, uint64_t h)
{
	struct sess *set = &hc->sess[(h >> 7) % SESS_SETS * SESS_WAYS];
	for (size_t i = 0; i < SESS_WAYS; i++)
		if (set[i].hash == h && set[i].up == up && strcmp(set[i].id, id) == 0)
			return &set[i];
	return NULL;
}

/* (up, id)'s slot, found or taken from the least recently used of its
 * set (emptied). Under slock, written. */
static struct sess *sess_slot(struct hook_capture *hc, size_t up, const char *id, uint64_t h)
{
	struct sess *s = sess_find(hc, up, id, h);
	if (!s) {
		struct sess *set = &hc->sess[(h >> 7) % SESS_SETS * SESS_WAYS];
		s = &set[0];
		for (size_t i = 1; i < SESS_WAYS; i++)
			if (set[i].used < s->used)
				s = &set[i];
		free(s->client);
		free(s->caps);
		*s = (struct sess){.hash = h, .up = up};
		snprintf(s->id, sizeof(s->id), "%s", id);
	}
	s->used = __atomic_add_fetch(&hc->sclock, 1, __ATOMIC_RELAXED);
	return s;
}

/* "c-" and 16 hex digits of HMAC-SHA256(key, upstream NUL id): the same
 * session gives the same key for this process's life, and the key tells
 * nothing of the id. */
static void session_key(const struct hook_capture *hc, size_t up, const char *id,
                        char out[SESS_KEY_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	struct sbuf b = {0};
	sbuf_puts(&b, hc->ups[up].name);
	sbuf_putn(&b, "", 1);
	sbuf_puts(&b, id);
	if (b.oom || !HMAC(EVP_sha256(), hc->key, sizeof(hc->key), (const unsigned char *)b.p,
	                   b.len, md, &mdlen) || mdlen < 8) {
		free(b.p);
		snprintf(out, SESS_KEY_LEN, "c-unknown");
		return;
	}
	free(b.p);
	snprintf(out, SESS_KEY_LEN, "c-%02x%02x%02x%02x%02x%02x%02x%02x", md[0], md[1], md[2],
	         md[3], md[4], md[5], md[6], md[7]);
}

static const struct redact *rd_of(const struct hook_capture *hc, size_t up)
{
	return hc->ups[up].unredacted ? hc->plain : hc->rd;
}

/* The session's initialize, its members written once as its lines will
 * show them (redacted as the upstream's lines are). */
static void sess_store(struct hook_capture *hc, size_t up, const char *id, const json_t *client,
                       const json_t *caps, const char *version)
{
	if (!id || strlen(id) >= SESS_ID_MAX)
		return;
	uint64_t h = sess_hash(up, id);
	struct sbuf ct = {0}, pt = {0};
	char key[SESS_KEY_LEN];
	capture_line_client(&ct, client, rd_of(hc, up));
	capture_line_value(&pt, json_is_object(caps) ? caps : NULL, rd_of(hc, up));
	session_key(hc, up, id, key);
	pthread_rwlock_wrlock(&hc->slock);
	struct sess *s = sess_slot(hc, up, id, h);
	free(s->client);
	free(s->caps);
	s->client = ct.oom ? NULL : ct.p;
	s->caps = pt.oom ? NULL : pt.p;
	memcpy(s->key, key, sizeof(key));
	snprintf(s->version, sizeof(s->version), "%s", version ? version : "");
	pthread_rwlock_unlock(&hc->slock);
	if (ct.oom)
		free(ct.p);
	if (pt.oom)
		free(pt.p);
}

/* What one line takes of its session. */
struct sess_view {
	char key[SESS_KEY_LEN];
	char version[VERSION_MAX];   /* "" when unknown */
	char *client, *caps;         /* owned copies, or NULL */
};

/* (up, id)'s key, version and initialize members. A session the cache
 * does not know (it began before this process, or was pushed out) gets
 * a slot with its key only, so the key is made once per session. */
static void sess_get(struct hook_capture *hc, size_t up, const char *id, struct sess_view *v)
{
	memset(v, 0, sizeof(*v));
	if (strlen(id) >= SESS_ID_MAX) {
		session_key(hc, up, id, v->key);
		return;
	}
	uint64_t h = sess_hash(up, id);
	pthread_rwlock_rdlock(&hc->slock);
	struct sess *s = sess_find(hc, up, id, h);
	if (s) {
		__atomic_store_n(&s->used, __atomic_add_fetch(&hc->sclock, 1, __ATOMIC_RELAXED),
		                 __ATOMIC_RELAXED);
		memcpy(v->key, s->key, sizeof(v->key));
		memcpy(v->version, s->version, sizeof(v->version));
		v->client = s->client ? strdup(s->client) : NULL;
		v->caps = s->caps ? strdup(s->caps) : NULL;
	}
	pthread_rwlock_unlock(&hc->slock);
	if (s)
		return;
	session_key(hc, up, id, v->key);
	pthread_rwlock_wrlock(&hc->slock);
	s = sess_slot(hc, up, id, h);
	if (!s->key[0])
		memcpy(s->key, v->key, sizeof(v->key));
	pthread_rwlock_unlock(&hc->slock);
}

/* ---- the observer ------------------------------------------------------------- */

static size_t up_of(const struct hook_capture *hc, const char *name)
{
	for (size_t i = 0; name && i < hc->nups; i++)
		if (hc->ups[i].on && strcmp(hc->ups[i].name, name) == 0)
			return i;
	return SIZE_MAX;
}

static int is_2026(const struct inspect_where *w)
{
	return w->era && strcmp(w->era, "2026") == 0;
}

static const char *session_of(const struct inspect_where *w)
{
	return w->session_id ? w->session_id : w->reply_session_id;
}

static struct cx *cx_of(struct hook_capture *hc, struct inspect_where *w)
{
	struct cx *cx = w->hook_data[hc->slot];
	if (!cx) {
		cx = calloc(1, sizeof(*cx));
		if (!cx)
			return NULL;
		cx->magic = CX_MAGIC;
		w->hook_data[hc->slot] = cx;
	}
	return cx;
}

static void creq_free(struct creq *r)
{
	json_decref(r->id);
	json_decref(r->params);
	json_decref(r->meta_client);
	json_decref(r->meta_caps);
	free(r);
}

/* One line for call r of exchange w, answered by msg (its "result" or
 * "error"), or by nothing (msg NULL). */
static void emit(struct hook_capture *hc, size_t up, const struct inspect_where *w,
                 const struct creq *r, const json_t *msg, const char *outcome, int by_proxy,
                 const json_t *own_error)
{
	uint64_t now = clock_mono_us();
	uint64_t lat = now > w->start_us ? now - w->start_us : 0;
	struct sess_view sv;
	memset(&sv, 0, sizeof(sv));
	const char *sid = is_2026(w) ? NULL : session_of(w);
	if (sid)
		sess_get(hc, up, sid, &sv);
	struct capture_line c = {
		.time_us = clock_real_us() - lat,
		.upstream = hc->ups[up].name,
		.session = sid ? sv.key : NULL,
		.era = sv.version[0] ? sv.version : w->protocol,
		.transport = w->client_transport,
		.client_info = r->meta_client,
		.capabilities = r->meta_caps,
		.client_text = sv.client,
		.capabilities_text = sv.caps,
		.method = "tools/call",
		.id = r->id,
		.params = r->params,
		.outcome = outcome,
		.result = msg ? json_object_get(msg, "result") : NULL,
		.error = msg ? json_object_get(msg, "error") : own_error,
		.by_proxy = by_proxy,
		.redacted = !hc->ups[up].unredacted,
		.latency_us = lat,
	};
	struct sbuf body = {0};
	capture_line_body(&c, rd_of(hc, up), &body);
	free(sv.client);
	free(sv.caps);
	enqueue(hc, up, &body);
}

/* The recorder's outcome of an answer (hook_record.h), and whether the
 * proxy made it: a hook dropped or answered the call, or put an error in
 * place of the upstream's result. */
static const char *answer_outcome(const struct inspect_msg *m, const json_t *msg, int *by_proxy)
{
	enum jrpc_kind k = jrpc_classify(msg);
	*by_proxy = m->verdict != INSPECT_FORWARD ||
	            (m->modified && m->kind == JRPC_RESULT && k == JRPC_ERROR);
	if (*by_proxy)
		return "blocked";
	if (k == JRPC_ERROR)
		return "rpc_error";
	return json_is_true(json_object_get(json_object_get(msg, "result"), "isError"))
		       ? "tool_error"
		       : "ok";
}

static void client_request(struct hook_capture *hc, size_t up, struct inspect_msg *m)
{
	struct cx *cx = cx_of(hc, m->where);
	if (!cx || !m->method)
		return;
	if (strcmp(m->method, "initialize") == 0) {
		json_decref(cx->init_id);
		json_decref(cx->init_client);
		json_decref(cx->init_caps);
		cx->init_id = json_incref(jrpc_id(m->msg));
		cx->init_client = json_incref(json_object_get(m->params, "clientInfo"));
		cx->init_caps = json_incref(json_object_get(m->params, "capabilities"));
		return;
	}
	if (strcmp(m->method, "tools/call") != 0)
		return;
	struct creq *r = calloc(1, sizeof(*r));
	if (!r)
		return;
	json_t *meta = json_object_get(m->params, "_meta");
	r->id = json_incref(jrpc_id(m->msg));
	r->params = json_incref(m->params);
	r->meta_client = json_incref(json_object_get(meta, META_CLIENT));
	r->meta_caps = json_incref(json_object_get(meta, META_CAPS));
	if (m->verdict != INSPECT_FORWARD) {
		/* Answered here: what the client got is the line's answer. */
		int by_proxy;
		const char *o = m->answer ? answer_outcome(m, m->answer, &by_proxy) : "blocked";
		emit(hc, up, m->where, r, m->answer, o, 1, NULL);
		creq_free(r);
		return;
	}
	/* In arrival order: unanswered ones are written in it at the end. */
	struct creq **pp = &cx->reqs;
	while (*pp)
		pp = &(*pp)->next;
	*pp = r;
}

static void server_answer(struct hook_capture *hc, size_t up, struct inspect_msg *m)
{
	struct cx *cx = m->where->hook_data[hc->slot];
	const json_t *id = jrpc_id(m->msg);
	if (!cx || !id)
		return;
	if (cx->init_id && jrpc_id_equal(cx->init_id, id)) {
		const json_t *res = json_object_get(m->msg, "result");
		if (res)
			sess_store(hc, up, session_of(m->where), cx->init_client, cx->init_caps,
			           json_string_value(json_object_get(res, "protocolVersion")));
		json_decref(cx->init_id);
		cx->init_id = NULL;
		return;
	}
	for (struct creq **pp = &cx->reqs; *pp; pp = &(*pp)->next) {
		struct creq *r = *pp;
		if (!jrpc_id_equal(r->id, id))
			continue;
		*pp = r->next;
		int by_proxy;
		const char *o = answer_outcome(m, m->msg, &by_proxy);
		emit(hc, up, m->where, r, m->answer && m->verdict != INSPECT_FORWARD ? m->answer : m->msg,
		     o, by_proxy, NULL);
		creq_free(r);
		return;
	}
}

static enum inspect_verdict on_message(void *arg, struct inspect_msg *m)
{
	struct hook_capture *hc = arg;
	size_t up = up_of(hc, m->where->upstream);
	if (up == SIZE_MAX)
		return INSPECT_FORWARD;
	if (m->dir == INSPECT_FROM_CLIENT && m->kind == JRPC_REQUEST)
		client_request(hc, up, m);
	else if (m->dir == INSPECT_FROM_SERVER && (m->kind == JRPC_RESULT || m->kind == JRPC_ERROR))
		server_answer(hc, up, m);
	return INSPECT_FORWARD;
}

/* The recorder's outcome of a call the exchange's end left unanswered
 * (hook_record.h): a reply that simply ended is an upstream error. */
static const char *const end_outcome[] = {
	[INSPECT_END_OK] = "upstream_error",       [INSPECT_END_UPSTREAM_ERROR] = "upstream_error",
	[INSPECT_END_TIMEOUT] = "timeout",         [INSPECT_END_CANCELLED] = "cancelled",
	[INSPECT_END_REJECTED] = "blocked",
};

/* Calls still unanswered when the exchange ends get a line too: the
 * proxy's word for what happened is their error. */
static void on_exchange(void *arg, const struct inspect_exchange *x)
{
	struct hook_capture *hc = arg;
	struct inspect_where *w = x->where;
	struct cx *cx = w->hook_data[hc->slot];
	if (!cx)
		return;
	assert(cx->magic == CX_MAGIC);
	w->hook_data[hc->slot] = NULL;
	size_t up = up_of(hc, w->upstream);
	while (cx->reqs) {
		struct creq *r = cx->reqs;
		cx->reqs = r->next;
		if (up != SIZE_MAX) {
			const char *o = (size_t)x->end < sizeof(end_outcome) / sizeof(end_outcome[0])
			                        ? end_outcome[x->end]
			                        : "upstream_error";
			/* A client that left got no answer: the line has none. */
			json_t *err = x->end == INSPECT_END_CANCELLED
				              ? NULL
				              : json_pack("{s:i,s:s}", "code", JRPC_UPSTREAM_ERROR, "message",
				                          x->error ? x->error : "no answer to this request");
			emit(hc, up, w, r, NULL, o, 1, err);
			json_decref(err);
		}
		creq_free(r);
	}
	json_decref(cx->init_id);
	json_decref(cx->init_client);
	json_decref(cx->init_caps);
	free(cx);
}

/* ---- public ------------------------------------------------------------------- */

int hook_capture_wanted(const struct px_config *cfg)
{
	for (size_t i = 0; i < cfg->nups; i++)
		if (cfg->ups[i].capture.path)
			return 1;
	return 0;
}

/* Whether path could be opened by open_capture and rotated: 0, or -1 with
 * the reason in *why (static) or errno. */
static int appendable(const char *path, const char **why)
{
	struct stat st;
	char dir[PATH_MAX];
	*why = NULL;
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			*why = "is a symbolic link (refused: captured arguments would go where it points)";
			return -1;
		}
		if (!S_ISREG(st.st_mode)) {
			*why = "is not a regular file";
			return -1;
		}
		if (access(path, W_OK) < 0)
			return -1;
	} else if (errno != ENOENT) {
		return -1;
	}
	if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	char *cut = strrchr(dir, '/');
	const char *d = !cut ? "." : cut == dir ? "/" : dir;
	if (cut && cut != dir)
		*cut = '\0';
	/* Creating it and rotating (renames) both need the directory. */
	if (access(d, W_OK | X_OK) < 0) {
		*why = "its directory is not writable (the file is created and rotated there)";
		return -1;
	}
	return 0;
}

int hook_capture_check(const struct px_config *cfg, char *err, size_t errlen)
{
	struct errs e = {err, errlen, 0, 0};
	const char *why;
	for (size_t i = 0; i < cfg->nups; i++) {
		const char *path = cfg->ups[i].capture.path;
		if (path && appendable(path, &why) < 0)
			errs_add(&e, "$.upstreams[%zu].capture.path: %s: %s", i, path, open_error(why));
	}
	return e.count ? -1 : 0;
}

static void ups_free(struct hook_capture *hc)
{
	for (size_t i = 0; i < hc->nups; i++) {
		if (hc->ups[i].fd >= 0)
			close(hc->ups[i].fd);
		free(hc->ups[i].name);
		free(hc->ups[i].path);
	}
	free(hc->ups);
}

static int ups_open(struct hook_capture *hc, const struct px_config *cfg, struct errs *e)
{
	hc->ups = calloc(cfg->nups, sizeof(*hc->ups));
	if (!hc->ups) {
		errs_add(e, "capture: out of memory");
		return -1;
	}
	hc->nups = cfg->nups;
	for (size_t i = 0; i < cfg->nups; i++) {
		const struct px_upstream_conf *c = &cfg->ups[i];
		struct cap_up *u = &hc->ups[i];
		u->fd = -1;
		u->name = strdup(c->name);
		if (!u->name || !c->capture.path)
			continue;
		u->path = strdup(c->capture.path);
		u->on = u->path != NULL;
		u->max_bytes = c->capture.max_bytes;
		u->keep = c->capture.keep;
		u->unredacted = c->capture.unredacted;
		const char *why;
		if (u->on && (u->fd = open_capture(u->path, &u->size, &why)) < 0)
			errs_add(e, "$.upstreams[%zu].capture.path: %s: %s", i, u->path, open_error(why));
		else if (u->on && u->unredacted)
			log_msg(LOG_WARN, "upstream %s: capturing unredacted arguments and results to %s",
			        u->name, u->path);
	}
	return e->count ? -1 : 0;
}

/* The writer runs with every signal blocked: worker 0 alone reads them. */
static int writer_start(struct hook_capture *hc)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = pthread_create(&hc->writer, NULL, writer_main, hc);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	hc->started = rc == 0;
	return rc == 0 ? 0 : -1;
}

struct hook_capture *hook_capture_new(struct inspect *in, const struct px_config *cfg,
                                      struct redact *rd, int own_rd, char *err, size_t errlen)
{
	struct errs e = {err, errlen, 0, 0};
	struct hook_capture *hc = calloc(1, sizeof(*hc));
	if (!hc) {
		errs_add(&e, "capture: out of memory");
		if (own_rd)
			redact_free(rd);
		return NULL;
	}
	hc->rd = rd;
	hc->own_rd = own_rd;
	hc->qtail = &hc->qhead;
	pthread_rwlock_init(&hc->slock, NULL);
	pthread_mutex_init(&hc->qlock, NULL);
	pthread_cond_init(&hc->cond, NULL);
	hc->sess = calloc(CAPTURE_SESSIONS, sizeof(*hc->sess));
	hc->plain = redact_new();
	if (hc->plain)
		redact_clear_keys(hc->plain);
	if (!hc->sess || !rd || !hc->plain || RAND_bytes(hc->key, sizeof(hc->key)) != 1) {
		errs_add(&e, "capture: out of memory or no random bytes");
		goto fail;
	}
	if (ups_open(hc, cfg, &e) < 0)
		goto fail;
	hc->slot = inspect_add_observer(in, "capture", on_message, on_exchange, hc);
	if (hc->slot < 0) {
		errs_add(&e, "capture: too many hooks");
		goto fail;
	}
	if (writer_start(hc) < 0) {
		errs_add(&e, "capture: cannot start the writer thread");
		goto fail;
	}
	return hc;
fail:
	/* A slot taken stays registered: the caller fails the start. */
	hook_capture_free(hc);
	return NULL;
}

void hook_capture_free(struct hook_capture *hc)
{
	if (!hc)
		return;
	if (hc->started) {
		pthread_mutex_lock(&hc->qlock);
		hc->stop = 1;
		pthread_cond_signal(&hc->cond);
		pthread_mutex_unlock(&hc->qlock);
		pthread_join(hc->writer, NULL);
	}
	while (hc->qhead) {
		struct qline *q = hc->qhead;
		hc->qhead = q->next;
		free(q->body);
		free(q);
	}
	for (size_t i = 0; hc->sess && i < CAPTURE_SESSIONS; i++) {
		free(hc->sess[i].client);
		free(hc->sess[i].caps);
	}
	free(hc->sess);
	ups_free(hc);
	if (hc->own_rd)
		redact_free(hc->rd);
	redact_free(hc->plain);
	pthread_cond_destroy(&hc->cond);
	pthread_mutex_destroy(&hc->qlock);
	pthread_rwlock_destroy(&hc->slock);
	free(hc);
}

void hook_capture_reopen(struct hook_capture *hc)
{
	if (!hc)
		return;
	pthread_mutex_lock(&hc->qlock);
	hc->reopen = 1;
	pthread_cond_signal(&hc->cond);
	pthread_mutex_unlock(&hc->qlock);
}

const char *hook_capture_stats(const struct hook_capture *hc, size_t i, int *on,
                               uint64_t *records, uint64_t *dropped)
{
	if (!hc || i >= hc->nups)
		return NULL;
	const struct cap_up *u = &hc->ups[i];
	*on = u->on;
	*records = __atomic_load_n(&u->records, __ATOMIC_RELAXED);
	*dropped = __atomic_load_n(&u->dropped, __ATOMIC_RELAXED);
	return u->name ? u->name : "";
}

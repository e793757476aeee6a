/* hook_record: see hook_record.h.
 *
 * Why this file is long (1.3k lines): what a record says (built from messages,
 * settled at the exchange's end) and the machinery that carries it (the
 * pools, the per-thread outboxes, the in-flight lists /calls/inflight
 * reads) share struct rx, pending and hr_local; the outboxes (publishing,
 * ~170 lines) are the next piece to move out. How a record is stored and
 * spelled, and all its tuning, is proxy/hooks/record_text.c.
 *
 * Per HTTP exchange the recorder keeps a `struct rx` in the exchange's
 * hook_data slot, holding the client messages of the exchange as records
 * under construction:
 *
 *   where->hook_data[slot] -> rx --> pending(request id 1) -> pending(notif)
 *                             |        rec: numbers + strings in an arena
 *                             +-- linked in hr->rxs (for /calls/inflight)
 *
 * A server answer fills its request's record in place; on_exchange, which
 * runs exactly once per exchange, settles what is still open from the
 * exchange's end, writes every record as JSON text, hands it to the sink
 * and returns the rx to the recorder's pool.
 *
 * Cost. This runs on every call, so a record is a C struct, not a jansson
 * object: its strings (already redacted and cut) go into arenas per
 * record, and record_text writes its JSON text once into a buffer the
 * recorder reuses. The rx and pending structs, arenas included, are
 * pooled (a reused one is cleared whole, but for its arenas' memory): a
 * call in steady state allocates nothing here.
 *
 * Threads. Every worker's exchanges come here (inspect_clone shares the
 * hook), and the admin endpoint reads the in-flight list and what the sink
 * fed from its own loop. No worker ever waits for another here: on two
 * busy cores a worker is preempted thousands of times a second, and one
 * preempted while holding a lock the other needs on every call stalls
 * that one too, for up to a scheduler tick. So:
 *
 *   worker thread                          | shared
 *   ---------------------------------------+---------------------------------
 *   request: record built, args redacted;  | rx linked in its thread's list
 *     rx linked under its thread's lock    | (l->lock: the owner, or a
 *                                          | reader of /calls/inflight)
 *   answer: preview redacted, in `ans`     | (settled: an atomic flag)
 *   exchange end: records finished, JSON   | the thread's outbox: one
 *     text written, put in the outbox      | writer, one reader at a time
 *     with what is counted of them         | (whoever holds hr->lock)
 *   then, if hr->lock is free, every       | counts and texts handed to the
 *     outbox drained under it              | sink (proxy/hooks/sink.h)
 *
 * A worker that finds hr->lock taken goes on: the holder drains again
 * after releasing it when anything was put meanwhile (hr->waiting; see
 * combine()), and so does every other holder of the lock (the admin
 * endpoint's readers, through hook_record_unlocked). An outbox that fills
 * up (the holder was preempted for long) makes its worker wait, as every
 * publication did before.
 *
 * What /calls/inflight reads of a linked record (the identifying members,
 * in `arena`) is written before it is linked and not changed until it is
 * unlinked; what an answer adds goes to the record's second arena (`ans`),
 * which the reader never touches. Pools, the text buffers and the time
 * cache are per thread (struct hr_local).
 */
#include "proxy/hooks/hook_record.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/hooks/record_text.h"
#include "proxy/hooks/redact.h"
#include "proxy/base/sbuf.h"
#include "proxy/hooks/inspect.h"
#include "proxy/hooks/tools.h"
#include "proxy/base/jparse.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/clock.h"

#define RX_MAGIC 0x72656378u /* "recx" */
/* Server requests remembered so that the client's response to one is
 * recorded under the request's method (sampling/createMessage…). */
#define SRV_REQ_MAX 64
#define ERROR_MESSAGE_CHARS 500
/* Names, ids and header values are the client's: a record keeps at most
 * this many characters of each (the ring's bound per record holds). */
#define FIELD_CHARS 256
/* Pooled structs kept for reuse, and the largest arena a pooled record
 * keeps (a bigger one is freed: one huge call must not pin memory). */
#define POOL_MAX 64
#define ARENA_KEEP (16u * 1024)

struct pending {
	struct pending *next;
	/* An answer or a verdict decided the outcome. Atomic: the in-flight
	 * list reads it without the writer's ordering. */
	int settled;
	uint64_t done_us;       /* monotonic, when settled */
	struct record_text_rec rec; /* arenas kept (emptied) across reuses */
};

struct rx {
	unsigned magic;
	struct hook_record *hr;       /* borrowed */
	struct hr_local *home;        /* borrowed: the thread whose exchange it is */
	struct inspect_where *where;  /* borrowed: exchange lifetime */
	/* owned list, arrival order; changed under hr->lock once linked */
	struct pending *head;
	struct pending **tail;
	unsigned notifications;       /* server notifications on this reply (atomic) */
	int has_requests;             /* a client request came in this exchange */
	int linked;                   /* in home->rxs (a client message is listed) */
	uint64_t wall_us;             /* Unix time of where->start_us */
	struct rx *prev, *next;       /* home->rxs, oldest first; next: pool link */
	struct rx *lprev, *lnext;     /* home->live */
};

struct srv_req {
	char session[128];
	char id[64];
	char method[64];
};

/* A finished record waiting in its thread's outbox for hr->lock: its
 * text (keys inside) and what the sink counts of it. The labels are
 * copies (the record is reused at once), one byte longer than any
 * counter keeps (RECORD_LABEL_MAX) so that it cuts them as it would the
 * original. */
#define OUTBOX_SIZE 64
#define OUT_LABEL (RECORD_LABEL_MAX + 2)
struct outrec {
	struct hook_record_text t;   /* owned buffer, kept across uses */
	int text;                    /* t holds a record for the sink */
	enum { OUT_NONE, OUT_CALL, OUT_SERVER } count;
	char method[OUT_LABEL], tool[OUT_LABEL];
	int has_tool;
	const char *outcome;         /* static */
	int64_t latency_us;          /* < 0: not timed */
	int exchange, closed;        /* an exchange ended (a DELETE closed a session) */
	uint64_t bytes_in, bytes_out;
};

/* One writer (the owning thread) and one reader at a time (the holder
 * of hr->lock): slots [head, tail) are waiting. */
struct outbox {
	struct outrec slot[OUTBOX_SIZE];
	atomic_size_t head, tail;
};

/* What one thread keeps for itself. Shared: its in-flight list (lock) and
 * its outbox. */
struct hr_local {
	struct hr_local *next;       /* hr->locals */
	struct rx *free_rx;          /* owned pool */
	struct pending *free_pending;/* owned pool */
	size_t nfree_rx, nfree_pending;
	struct rx *live;             /* rxs of this thread's open exchanges */
	/* Exchanges with client records under way, oldest first, for
	 * /calls/inflight: changed by this thread, read by the admin's, both
	 * under lock. */
	pthread_mutex_t lock;
	struct rx *rxs, *rxs_tail;
	struct hook_record_text out; /* owned: the text being written */
	struct record_text_clock clock; /* the date part of the last "time" */
	struct outbox ob;
	struct sbuf scratch;         /* owned: redacted text before it is escaped */
	struct redact_preview_memo *pmemo; /* owned, or NULL: the last large preview */
	struct record_text_consts *consts; /* owned, or NULL: not made yet */
};

struct hook_record {
	const struct redact *rd;     /* borrowed */
	const struct record_sink *sink; /* borrowed */
	void *arg;
	int count;                   /* the sink counts (its count ops are set) */
	int text_now;                /* write JSON text per call (hook_record_set_text_now) */
	struct tools *tools;         /* borrowed, or NULL: names listings (hook_record_set_tools) */
	int slot;                    /* our index in where->hook_data */
	pthread_mutex_t *lock;       /* borrowed, or NULL: one thread only */
	uint64_t gen;                /* tells this recorder's hr_locals apart */
	atomic_size_t waiting;       /* records in outboxes, all threads */
	/* Under lock: */
	struct srv_req srv[SRV_REQ_MAX];
	size_t srv_next;
	/* Grown under locals_lock (a thread's first call), at its head, and
	 * read without it (an atomic pointer); emptied at teardown: */
	pthread_mutex_t locals_lock;
	struct hr_local *locals;     /* owned: one per thread that called */
};

static void combine(struct hook_record *hr);

static void hr_lock(const struct hook_record *hr)
{
	if (hr->lock)
		pthread_mutex_lock(hr->lock);
}

/* Every holder of hr->lock looks at the outboxes after releasing it: a
 * worker that found it taken meanwhile left its record there. */
static void hr_unlock(struct hook_record *hr)
{
	if (hr->lock) {
		pthread_mutex_unlock(hr->lock);
		combine(hr);
	}
}

/* This thread's hr_local for hr. The thread-local cache names the
 * recorder by address and generation, so a recorder freed and another
 * allocated at the same address never finds the old one's. */
static uint64_t hr_gens;
static _Thread_local struct {
	const struct hook_record *hr;
	uint64_t gen;
	struct hr_local *l;
} tl;

static struct hr_local *local_of(struct hook_record *hr)
{
	if (tl.hr == hr && tl.gen == hr->gen)
		return tl.l;
	struct hr_local *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->clock = (struct record_text_clock)RECORD_TEXT_CLOCK_INIT;
	if (pthread_mutex_init(&l->lock, NULL) != 0) {
		free(l);
		return NULL;
	}
	pthread_mutex_lock(&hr->locals_lock);
	l->next = hr->locals;
	/* Readers walk the list without locals_lock: l is whole first. */
	__atomic_store_n(&hr->locals, l, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&hr->locals_lock);
	tl.hr = hr;
	tl.gen = hr->gen;
	tl.l = l;
	return l;
}

/* ---- small helpers ------------------------------------------------------- */

void hook_record_time(uint64_t unix_us, char *buf, size_t len)
{
	time_t secs = (time_t)(unix_us / 1000000u);
	struct tm tm;
	char day[32];
	gmtime_r(&secs, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06uZ", day, (unsigned)(unix_us % 1000000u));
}

static const char *session_of(const struct inspect_where *w)
{
	return w->session_id ? w->session_id : w->reply_session_id;
}

static const char *verdict_str(enum inspect_verdict v)
{
	return v == INSPECT_DROP ? "drop" : v == INSPECT_ANSWER ? "answer" : "forward";
}

static const char *end_outcome(enum inspect_end end)
{
	switch (end) {
	case INSPECT_END_TIMEOUT:
		return "timeout";
	case INSPECT_END_CANCELLED:
		return "cancelled";
	case INSPECT_END_REJECTED:
		return "blocked";
	case INSPECT_END_UPSTREAM_ERROR:
	case INSPECT_END_OK:
	default:
		return "upstream_error";
	}
}

/* ---- record members -------------------------------------------------------- */

static void rec_set(struct record_text_rec *r, enum record_text_str f, const char *s)
{
	record_text_set(r, f, s, s ? strlen(s) : 0);
}

/* s cut to FIELD_CHARS characters (visibly), or null. */
static void rec_set_bounded(struct record_text_rec *r, enum record_text_str f, const char *s)
{
	record_text_set_cut(r, f, s, FIELD_CHARS);
}

/* Whether member f (a raw one) is the word lit (a string literal, within
 * FIELD_CHARS: as the member's source text was), without a strcmp call:
 * the member's length is known. */
#define REC_IS(r, f, lit)                                                    \
	((r)->str[f] && (r)->len[f] == sizeof(lit) - 1 &&                    \
	 memcmp(record_text_get(r, f), lit, sizeof(lit) - 1) == 0)

/* Whether member f (a raw one) already holds s as rec_set_bounded would
 * store it: most exchanges end with the session they started with. */
static int rec_holds(const struct record_text_rec *r, enum record_text_str f, const char *s)
{
	assert(RT_IS_RAW(f));
	if (!s)
		return !r->str[f];
	size_t n = strnlen(s, FIELD_CHARS + 1);
	return n <= FIELD_CHARS && r->str[f] && r->len[f] == n &&
	       memcmp(record_text_get(r, f), s, n) == 0;
}

static void rec_set_id(struct record_text_rec *r, const json_t *id)
{
	if (json_is_integer(id)) {
		r->id_kind = RT_ID_INT;
		r->id_int = (long long)json_integer_value(id);
	} else if (json_is_string(id)) {
		r->id_kind = RT_ID_STR;
		rec_set_bounded(r, RT_ID, json_string_value(id));
		/* Matching compares the whole id, NULs and all. */
		r->id_raw = r->arena.len;
		r->id_raw_len = json_string_length(id);
		sbuf_putn(&r->arena, json_string_value(id), r->id_raw_len);
	} else {
		r->id_kind = RT_ID_NULL;
	}
}

/* Whether id (string or integer) is this record's request id. */
static int rec_id_is(const struct record_text_rec *r, const json_t *id)
{
	if (r->id_kind == RT_ID_INT)
		return json_is_integer(id) && (long long)json_integer_value(id) == r->id_int;
	if (r->id_kind == RT_ID_STR && !r->arena.oom)
		return json_is_string(id) && json_string_length(id) == r->id_raw_len &&
		       memcmp(json_string_value(id), r->arena.p + r->id_raw, r->id_raw_len) == 0;
	return 0;
}

/* ---- the pools ---------------------------------------------------------------- */

static struct pending *pending_get(struct hr_local *l)
{
	struct pending *p = l->free_pending;
	if (!p)
		return calloc(1, sizeof(*p));
	l->free_pending = p->next;
	l->nfree_pending--;
	/* A reused record is a fresh one but for its arenas' memory. */
	struct sbuf arena = p->rec.arena, ans = p->rec.ans;
	memset(p, 0, sizeof(*p));
	p->rec.arena = (struct sbuf){.p = arena.p, .cap = arena.cap};
	p->rec.ans = (struct sbuf){.p = ans.p, .cap = ans.cap};
	return p;
}

static void pending_put(struct hr_local *l, struct pending *p)
{
	if (l->nfree_pending >= POOL_MAX || p->rec.arena.cap > ARENA_KEEP ||
	    p->rec.ans.cap > ARENA_KEEP) {
		free(p->rec.arena.p);
		free(p->rec.ans.p);
		free(p);
		return;
	}
	p->next = l->free_pending;
	l->free_pending = p;
	l->nfree_pending++;
}

static void local_free(struct hr_local *l)
{
	while (l->free_pending) {
		struct pending *p = l->free_pending;
		l->free_pending = p->next;
		free(p->rec.arena.p);
		free(p->rec.ans.p);
		free(p);
	}
	while (l->free_rx) {
		struct rx *rx = l->free_rx;
		l->free_rx = rx->next;
		free(rx);
	}
	free(l->out.b.p);
	free(l->out.text.p);
	for (size_t i = 0; i < OUTBOX_SIZE; i++) {
		free(l->ob.slot[i].t.b.p);
		free(l->ob.slot[i].t.text.p);
	}
	free(l->scratch.p);
	record_text_consts_free(l->consts);
	redact_preview_memo_free(l->pmemo);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* ---- records ------------------------------------------------------------- */


/* m's id: from its tree, or when the transport built none (a reply read
 * from its index: record_needs_tree) parsed from its bytes into *own,
 * which the caller releases. NULL when it has none. */
static const json_t *msg_id(const struct inspect_msg *m, json_t **own)
{
	*own = NULL;
	if (m->msg)
		return JPARSE_MEMBER(m->msg, "id");
	if (m->ix && m->ix->at[JPI_ID].at)
		*own = jparse_ref_value(&m->ix->at[JPI_ID]);
	return *own;
}

static void record_init(const struct hook_record *hr, struct hr_local *l, struct record_text_rec *r,
                        const struct inspect_where *w, uint64_t wall_us, const char *from,
                        enum record_text_kind kind, const struct inspect_msg *m, const char *method)
{
	struct sbuf *scratch = &l->scratch;
	r->wall_us = wall_us;
	r->from = from;
	r->kind = kind;
	r->is_error = -1;
	rec_set_bounded(r, RT_SESSION, session_of(w));
	if (w->trace_id[0]) { /* telemetry (issue 23): set by hook_trace */
		record_text_set(r, RT_TRACE_ID, w->trace_id, 32);
		record_text_set(r, RT_SPAN_ID, w->span_id, 16);
	}
	/* The client's own words are cut; ours (addresses, names from the
	 * configuration, transports) are not. */
	const char *v[RT_NCONST] = {w->client,   w->client_name,      w->upstream,
	                            w->protocol, w->client_transport, w->upstream_transport};
	if (!l->consts && !(l->consts = record_text_consts_new()))
		r->arena.oom = 1; /* the record is not written */
	else
		record_text_consts_put(l->consts, r, v,
		                       1u << RT_CLIENT_NAME | 1u << RT_PROTOCOL, FIELD_CHARS);
	rec_set_bounded(r, RT_METHOD, method);
	/* What a record keeps of a request's parameters: tools/call and
	 * prompts/get their arguments, other methods all of them. For a
	 * request, method is the message's own (inspect_message read it, and
	 * the tool's name, once for every hook). */
	const json_t *params = kind == RT_KIND_RESPONSE ? NULL : m->params;
	int call = REC_IS(r, RT_METHOD, "tools/call");
	rec_set_bounded(r, RT_TOOL, kind == RT_KIND_REQUEST && call ? m->tool : NULL);
	json_t *own_id;
	rec_set_id(r, msg_id(m, &own_id));
	json_decref(own_id);
	const json_t *args = params;
	if (call || REC_IS(r, RT_METHOD, "prompts/get"))
		args = JPARSE_MEMBER(params, "arguments");
	if (args) {
		scratch->len = 0;
		scratch->oom = 0;
		if (redact_json_text_to(hr->rd, args, REDACT_ARGS_CHARS, &r->arguments_cut, scratch) <
		    0) {
			/* Out of memory: null, as a failed redact_json_text gave. */
			r->arguments_cut = 0;
			r->str[RT_ARGUMENTS] = 0;
		} else {
			record_text_set(r, RT_ARGUMENTS, scratch->p, scratch->len);
		}
	}
}

/* Fills the answer members from a response message (a server's answer,
 * a hook's answer, or a client's response to a server request) and
 * returns the outcome it implies. The message is its tree (answer), or
 * when the transport built none (answer NULL) the index ix of its text
 * (NULL: none either, only raw); raw: the text of its result as it
 * arrived (inspect_msg.result_raw), or NULL. */
static const char *fill_answer(const struct hook_record *hr, struct hr_local *l,
                               struct record_text_rec *r, const json_t *answer,
                               const struct jparse_index *ix, enum jrpc_kind kind,
                               const char *raw, size_t raw_len, uint64_t serial)
{
	struct sbuf *scratch = &l->scratch;
	if (answer)
		ix = NULL; /* the tree says it all */

	if (kind == JRPC_ERROR) {
		json_t *own = ix ? jparse_ref_value(&ix->at[JPI_ERROR]) : NULL;
		const json_t *err = answer ? JPARSE_MEMBER(answer, "error") : own;
		const json_t *code = JPARSE_MEMBER(err, "code");
		const char *msg = json_string_value(JPARSE_MEMBER(err, "message"));
		r->has_error_code = json_is_integer(code);
		r->error_code = r->has_error_code ? (long long)json_integer_value(code) : 0;
		if (msg) {
			char *masked = redact_text(hr->rd, msg);
			char *cut = masked ? redact_cut(masked, ERROR_MESSAGE_CHARS, NULL) : NULL;
			rec_set(r, RT_ERROR_MESSAGE, cut);
			free(cut);
			free(masked);
		}
		json_decref(own);
		return "rpc_error";
	}
	const json_t *result = answer ? JPARSE_MEMBER(answer, "result") : NULL;
	if (!result && (answer || !raw))
		return "ok";
	r->result_cut = 0;
	scratch->len = 0;
	scratch->oom = 0;
	/* A listing comes again unchanged: its preview is kept per worker,
	 * under the number the tools tracker gave its bytes. */
	if (serial && !l->pmemo)
		l->pmemo = redact_preview_memo_new();
	if ((result ? redact_result_preview_memo_to(hr->rd, l->pmemo, result, raw, raw_len, serial,
	                                            REDACT_PREVIEW_CHARS, &r->result_cut, scratch)
	            : redact_result_preview_raw_to(hr->rd, l->pmemo, raw, raw_len,
	                                           ix ? &ix->at[JPI_CONTENT] : NULL, serial,
	                                           REDACT_PREVIEW_CHARS, &r->result_cut, scratch)) <
	    0) {
		/* Out of memory: null, as a failed redact_result_preview gave. */
		r->result_cut = 0;
		r->str[RT_PREVIEW] = 0;
	} else {
		record_text_set(r, RT_PREVIEW, scratch->p, scratch->len);
	}
	if (REC_IS(r, RT_METHOD, "tools/call")) {
		r->is_error = result ? json_is_true(JPARSE_MEMBER(result, "isError"))
		                     : ix && jparse_ref_is_true(&ix->at[JPI_IS_ERROR]);
		return r->is_error ? "tool_error" : "ok";
	}
	return "ok";
}

/* The findings a deciding hook attached to m (inspect_msg.notes: the live
 * contract's) onto r's "findings", each as compact JSON text, masked like
 * every other text a record shows (a message may quote a property name
 * or a number the client sent). */
static void add_findings(const struct hook_record *hr, struct record_text_rec *r,
                         const json_t *notes)
{
	for (size_t i = 0; i < json_array_size(notes); i++) {
		char *t = json_dumps(json_array_get(notes, i), JSON_COMPACT | JSON_ENSURE_ASCII);
		char *masked = t ? redact_text(hr->rd, t) : NULL;
		if (masked)
			record_text_add_json(r, RT_FINDINGS, masked, strlen(masked));
		free(masked);
		free(t);
	}
}

/* m->msg's kind: the transport classified it, unless a hook rewrote it. */
static enum jrpc_kind msg_kind(const struct inspect_msg *m)
{
	return m->modified ? jrpc_classify(m->msg) : m->kind;
}

static void set_blocked(struct record_text_rec *r, const struct inspect_msg *m)
{
	const char *rule = m->reason ? m->reason : m->decided_by;
	r->outcome = "blocked";
	rec_set(r, RT_RULE, rule ? rule : "unknown");
}

/* What the deciding hooks made of m, on its record r. Blocked: a message
 * they dropped or answered, and an answer that came as a result and
 * leaves as an error they put in its place (the contract's fail mode
 * refusing a tools/list): either way mcpwarden refused, whatever the
 * upstream said. A message they let through with a reason (a log rule,
 * a dry run's would-be refusal, tools hidden from a listing) keeps the
 * reason as its rule, unless a rule is there already. */
static void apply_verdict(struct record_text_rec *r, const struct inspect_msg *m)
{
	if (m->modified)
		r->modified = 1;
	if (m->verdict != INSPECT_FORWARD ||
	    (m->modified && m->kind == JRPC_RESULT && jrpc_classify(m->msg) == JRPC_ERROR))
		set_blocked(r, m);
	else if (m->reason && !r->str[RT_RULE])
		rec_set(r, RT_RULE, m->reason);
}

/* ---- the outboxes (see the file head) ----------------------------------- */

/* v (n bytes, no NUL among them) cut to what fits a label copy; the
 * sink cuts it further, the same way as it would the original. */
static void label_copy(char *dst, const char *v, size_t n)
{
	if (n > OUT_LABEL - 1)
		n = OUT_LABEL - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* Counts o and hands its text to the sink. Under hr->lock (or alone). */
static void out_publish(struct hook_record *hr, struct outrec *o)
{
	const struct record_sink *k = hr->sink;
	if (hr->count) {
		if (o->exchange) {
			k->exchange(hr->arg, o->bytes_in, o->bytes_out);
			if (o->closed)
				k->session_closed(hr->arg);
		}
		if (o->count == OUT_CALL)
			k->call(hr->arg, o->method, o->has_tool ? o->tool : NULL, o->outcome,
			        o->latency_us);
		else if (o->count == OUT_SERVER)
			k->server_message(hr->arg, o->method);
	}
	if (!o->text)
		return;
	struct hook_record_text *t = &o->t;
	t->rb.block = t->b.p;
	k->record(hr->arg, t, &t->keys);
	if (t->rb.block != t->b.p) {
		/* The sink took the text's block (a ring's swap): what it gave
		 * back is the outbox's now, for a later record. */
		t->b = (struct sbuf){.p = t->rb.block, .cap = t->rb.cap};
	}
	if (t->b.cap > ARENA_KEEP * 4) {
		free(t->b.p);
		t->b = (struct sbuf){0};
	}
}

/* Publishes what waits in every thread's outbox. Under hr->lock (or
 * alone): one reader of the outboxes at a time. */
static void drain(struct hook_record *hr)
{
	/* The list only grows, at its head: past the head, its links do not
	 * change. */
	struct hr_local *first = __atomic_load_n(&hr->locals, __ATOMIC_ACQUIRE);
	for (struct hr_local *l = first; l; l = l->next) {
		size_t h = atomic_load_explicit(&l->ob.head, memory_order_relaxed);
		size_t t = atomic_load_explicit(&l->ob.tail, memory_order_acquire);
		if (h == t)
			continue;
		for (size_t i = h; i != t; i++)
			out_publish(hr, &l->ob.slot[i % OUTBOX_SIZE]);
		atomic_store_explicit(&l->ob.head, t, memory_order_release);
		atomic_fetch_sub_explicit(&hr->waiting, t - h, memory_order_seq_cst);
	}
}

/* Drains the outboxes if hr->lock is free, and again while records come
 * in meanwhile. A worker that finds the lock taken returns: it put its
 * record (and counted it in hr->waiting) before trying, and the holder
 * looks at hr->waiting after releasing the lock, so one of the two
 * drains it (both steps are full barriers). */
static void combine(struct hook_record *hr)
{
	if (!hr->lock) {
		drain(hr);
		return;
	}
	for (;;) {
		atomic_thread_fence(memory_order_seq_cst);
		if (!atomic_load_explicit(&hr->waiting, memory_order_seq_cst))
			return;
		if (pthread_mutex_trylock(hr->lock) != 0)
			return;
		drain(hr);
		pthread_mutex_unlock(hr->lock);
	}
}

/* The slot this thread fills next, emptied. When the outbox is full (the
 * lock's holder was kept off the CPU while this worker went on), this
 * worker waits for the lock, as every publication once did. */
static struct outrec *out_begin(struct hook_record *hr, struct hr_local *l)
{
	size_t t = atomic_load_explicit(&l->ob.tail, memory_order_relaxed);
	if (t - atomic_load_explicit(&l->ob.head, memory_order_acquire) == OUTBOX_SIZE) {
		hr_lock(hr);
		drain(hr);
		hr_unlock(hr);
	}
	struct outrec *o = &l->ob.slot[t % OUTBOX_SIZE];
	o->text = 0;
	o->count = OUT_NONE;
	o->exchange = o->closed = 0;
	return o;
}

/* What the metrics count of r, and its text (in l->out when text). */
static void out_record(struct hr_local *l, struct outrec *o, const struct record_text_rec *r,
                       int text)
{
	const char *method = record_text_get(r, RT_METHOD), *tool = record_text_get(r, RT_TOOL);
	/* A client's response to a server request of unknown method still
	 * gets a readable label. */
	if (method)
		label_copy(o->method, method, r->len[RT_METHOD]);
	else
		label_copy(o->method, "(response)", sizeof("(response)") - 1);
	o->has_tool = tool != NULL;
	if (tool)
		label_copy(o->tool, tool, r->len[RT_TOOL]);
	o->count = r->from[0] == 'c' ? OUT_CALL : OUT_SERVER; /* "client" */
	o->outcome = r->outcome;
	int timed = r->kind == RT_KIND_REQUEST && r->finished;
	o->latency_us = timed ? (int64_t)r->latency_us : -1;
	if (text) {
		/* The text changes hands: the slot's old buffer (perhaps a block
		 * the ring gave back) is the next text's. Only the buffer is
		 * swapped (record_text_format writes the rest anew; rb is the
		 * sink's). */
		struct sbuf spare = o->t.b;
		o->t.b = l->out.b;
		o->t.json_len = l->out.json_len;
		o->t.keys = l->out.keys;
		o->t.stored = l->out.stored;
		l->out.b = spare;
		o->text = 1;
	}
}

/* The slot out_begin gave is filled: readers may take it. */
static void out_put(struct hook_record *hr, struct hr_local *l)
{
	size_t t = atomic_load_explicit(&l->ob.tail, memory_order_relaxed);
	atomic_store_explicit(&l->ob.tail, t + 1, memory_order_release);
	atomic_fetch_add_explicit(&hr->waiting, 1, memory_order_seq_cst);
	combine(hr);
	/* Published already (the common case): the slot is this thread's
	 * again, and the block the ring gave back for it is the next text's
	 * (the one written least recently is the one to reuse). */
	if (atomic_load_explicit(&l->ob.head, memory_order_acquire) > t) {
		struct outrec *o = &l->ob.slot[t % OUTBOX_SIZE];
		struct sbuf spare = l->out.b;
		l->out.b = o->t.b;
		o->t.b = spare;
	}
}

/* Whether r was stored (into l->out) for the sink. Stored, not written
 * as JSON text: that is done when the record is read
 * (hook_record_stored_text). */
static int write_text(struct hook_record *hr, struct hr_local *l, const struct record_text_rec *r)
{
	if (!hr->sink->record || r->arena.oom || r->ans.oom)
		return 0;
	return (hr->text_now ? record_text_format(&l->out, &l->clock, r)
	                     : record_text_pack(&l->out, r)) == 0;
}

/* A finished record to the sink: its text and its counts. */
static void emit(struct hook_record *hr, struct hr_local *l, const struct record_text_rec *r)
{
	int text = write_text(hr, l, r);
	if (!hr->count && !text)
		return;
	struct outrec *o = out_begin(hr, l);
	out_record(l, o, r, text);
	out_put(hr, l);
}

/* ---- server requests ----------------------------------------------------- */

static void id_text(const json_t *id, char *buf, size_t len)
{
	char *s = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	snprintf(buf, len, "%s", s ? s : "");
	free(s);
}

/* Under hr->lock. */
static void srv_remember(struct hook_record *hr, const char *session, const json_t *id,
                         const char *method)
{
	struct srv_req *s = &hr->srv[hr->srv_next++ % SRV_REQ_MAX];
	snprintf(s->session, sizeof(s->session), "%s", session ? session : "");
	id_text(id, s->id, sizeof(s->id));
	snprintf(s->method, sizeof(s->method), "%s", method ? method : "");
}

/* Under hr->lock; the method is copied into out (64 bytes). */
static const char *srv_lookup(const struct hook_record *hr, const char *session, const json_t *id,
                              char *out)
{
	char want[64];
	id_text(id, want, sizeof(want));
	for (size_t i = 0; i < SRV_REQ_MAX; i++) {
		const struct srv_req *s = &hr->srv[i];
		if (s->method[0] && strcmp(s->id, want) == 0 &&
		    strcmp(s->session, session ? session : "") == 0) {
			memcpy(out, s->method, sizeof(s->method));
			return out;
		}
	}
	return NULL;
}

/* ---- per exchange --------------------------------------------------------- */

static struct rx *rx_get(struct hook_record *hr, struct hr_local *l, struct inspect_where *w)
{
	struct rx *rx = w->hook_data[hr->slot];
	if (rx) {
		assert(rx->magic == RX_MAGIC);
		return rx;
	}
	if ((rx = l->free_rx)) {
		l->free_rx = rx->next;
		l->nfree_rx--;
		memset(rx, 0, sizeof(*rx));
	} else if (!(rx = calloc(1, sizeof(*rx)))) {
		return NULL;
	}
	rx->magic = RX_MAGIC;
	rx->hr = hr;
	rx->home = l;
	rx->where = w;
	rx->tail = &rx->head;
	uint64_t now = clock_mono_us(), age = w->start_us && now > w->start_us ? now - w->start_us : 0;
	rx->wall_us = clock_real_us() - age;
	rx->lnext = l->live;
	if (l->live)
		l->live->lprev = rx;
	l->live = rx;
	w->hook_data[hr->slot] = rx;
	return rx;
}

/* Takes rx off its thread's list: under rx->home->lock (or alone at
 * teardown). */
static void rx_unlink(struct rx *rx)
{
	struct hr_local *l = rx->home;
	if (!rx->linked)
		return;
	if (rx->prev)
		rx->prev->next = rx->next;
	else
		l->rxs = rx->next;
	if (rx->next)
		rx->next->prev = rx->prev;
	else
		l->rxs_tail = rx->prev;
	rx->prev = rx->next = NULL;
	rx->linked = 0;
}

/* Back to its thread's pools; rx is unlinked. */
static void rx_free(struct rx *rx)
{
	struct hook_record *hr = rx->hr;
	struct hr_local *l = rx->home;
	assert(!rx->linked);
	for (struct pending *p = rx->head, *next; p; p = next) {
		next = p->next;
		pending_put(l, p);
	}
	if (rx->lprev)
		rx->lprev->lnext = rx->lnext;
	else
		l->live = rx->lnext;
	if (rx->lnext)
		rx->lnext->lprev = rx->lprev;
	rx->where->hook_data[hr->slot] = NULL;
	rx->magic = 0;
	if (l->nfree_rx >= POOL_MAX) {
		free(rx);
		return;
	}
	rx->next = l->free_rx;
	l->free_rx = rx;
	l->nfree_rx++;
}

/* Appends p, fully built, to rx's records, and lists rx for
 * /calls/inflight. */
static void pending_link(struct rx *rx, struct pending *p)
{
	struct hr_local *l = rx->home;
	pthread_mutex_lock(&l->lock);
	if (!rx->linked) {
		rx->prev = l->rxs_tail;
		if (l->rxs_tail)
			l->rxs_tail->next = rx;
		else
			l->rxs = rx;
		l->rxs_tail = rx;
		rx->linked = 1;
	}
	*rx->tail = p;
	rx->tail = &p->next;
	pthread_mutex_unlock(&l->lock);
}

static void settle(struct pending *p)
{
	p->done_us = clock_mono_us();
	__atomic_store_n(&p->settled, 1, __ATOMIC_RELEASE);
}

static int settled(const struct pending *p)
{
	return __atomic_load_n(&p->settled, __ATOMIC_ACQUIRE);
}

static void client_message(struct hook_record *hr, struct hr_local *l, struct rx *rx,
                           struct inspect_msg *m)
{
	enum record_text_kind kind;
	const char *method = m->method;
	char srv_method[64];

	switch (m->kind) {
	case JRPC_REQUEST:
		kind = RT_KIND_REQUEST;
		rx->has_requests = 1;
		break;
	case JRPC_NOTIFICATION:
		kind = RT_KIND_NOTIFICATION;
		break;
	case JRPC_RESULT:
	case JRPC_ERROR:
		kind = RT_KIND_RESPONSE;
		hr_lock(hr);
		method = srv_lookup(hr, rx->where->session_id, jrpc_id(m->msg), srv_method);
		hr_unlock(hr);
		break;
	default:
		return;
	}
	struct pending *p = pending_get(l);
	if (!p)
		return;
	struct record_text_rec *r = &p->rec;
	record_init(hr, l, r, rx->where, rx->wall_us, "client", kind, m, method);
	add_findings(hr, r, m->notes);
	if (m->verdict != INSPECT_FORWARD) {
		/* The hook's answer is what the client got: show it, but the
		 * outcome stays "blocked" (apply_verdict). */
		if (m->answer)
			fill_answer(hr, l, r, m->answer, NULL, jrpc_classify(m->answer), NULL, 0, 0);
	} else if (kind == RT_KIND_RESPONSE) {
		/* The client's answer to a server request: its own outcome. */
		const char *o = fill_answer(hr, l, r, m->msg, m->ix, msg_kind(m), m->result_raw,
		                            m->result_raw_len, m->result_serial);
		if (strcmp(o, "ok") != 0)
			r->outcome = o;
	}
	apply_verdict(r, m);
	if (r->outcome)
		settle(p);
	pending_link(rx, p);
}

/* A record of its own for something the server sent unprompted. */
static void server_record(struct hook_record *hr, struct hr_local *l, struct rx *rx,
                          struct inspect_msg *m, enum record_text_kind kind)
{
	const char *method = m->method;
	struct pending *p = pending_get(l);
	if (!p)
		return;
	struct record_text_rec *r = &p->rec;
	record_init(hr, l, r, rx->where, clock_real_us(), "server", kind, m, method);
	add_findings(hr, r, m->notes);
	r->outcome = kind == RT_KIND_RESPONSE
	             ? fill_answer(hr, l, r, m->msg, m->ix, msg_kind(m), m->result_raw,
	                           m->result_raw_len, m->result_serial)
	             : "ok";
	apply_verdict(r, m);
	if (kind == RT_KIND_REQUEST) {
		hr_lock(hr);
		srv_remember(hr, rx->where->session_id, jrpc_id(m->msg), method);
		hr_unlock(hr);
	}
	emit(hr, l, r);
	pending_put(l, p);
}

static void answer_request(struct hook_record *hr, struct hr_local *l, struct pending *p,
                           struct inspect_msg *m)
{
	struct record_text_rec *r = &p->rec;
	r->outcome = fill_answer(hr, l, r, m->msg, m->ix, msg_kind(m), m->result_raw,
	                         m->result_raw_len, m->result_serial);
	add_findings(hr, r, m->notes);
	apply_verdict(r, m);
	settle(p);
}

/* ---- unchanged listings (issue 20) ---------------------------------------- */

/* The preview of a listing's result from its bytes alone: what the worker's
 * preview memo keeps for them (the tracker names them: tools_listing_serial,
 * which the tracker's own question in this call answered already), else
 * the result parsed and previewed (fill_answer without a tree). */
static void listing_preview(const struct hook_record *hr, struct hr_local *l,
                            struct record_text_rec *r, const struct inspect_listing *ls)
{
	uint64_t serial = ls->where ? tools_listing_serial(hr->tools, ls->where->upstream, ls->raw,
	                                                   ls->len, ls->call)
	                            : 0;
	(void)fill_answer(hr, l, r, NULL, NULL, JRPC_RESULT, ls->raw, ls->len, serial);
}

/* inspect_listing_may_fn: the recorder can record any listing from its
 * bytes (listing_preview). */
static int listing_may(void *arg, const struct inspect_listing *ls)
{
	(void)arg;
	(void)ls;
	return 1;
}

/* inspect_listing_passed_fn: the listing answers its request's record, as
 * server_message does for a result forwarded unchanged with no verdict
 * and no findings. The reply's id is the request's (the transport checked
 * it). */
static void listing_passed(void *arg, const struct inspect_listing *ls)
{
	struct hook_record *hr = arg;
	struct hr_local *l = local_of(hr);
	struct rx *rx = l ? rx_get(hr, l, ls->where) : NULL;
	const json_t *id = jrpc_id(ls->request);
	if (!rx || !id || json_is_null(id))
		return;
	for (struct pending *p = rx->head; p; p = p->next) {
		if (p->rec.kind != RT_KIND_REQUEST || settled(p) || !rec_id_is(&p->rec, id))
			continue;
		listing_preview(hr, l, &p->rec, ls);
		p->rec.outcome = "ok";
		settle(p);
		return;
	}
}

static void count_locked(struct hook_record *hr, void (*fn)(void *, const char *),
                         const char *label)
{
	if (!hr->count)
		return;
	hr_lock(hr);
	fn(hr->arg, label);
	hr_unlock(hr);
}

static void server_message(struct hook_record *hr, struct hr_local *l, struct rx *rx,
                           struct inspect_msg *m)
{
	switch (m->kind) {
	case JRPC_RESULT:
	case JRPC_ERROR: {
		json_t *own_id;
		const json_t *id = msg_id(m, &own_id);
		int matched = 0;
		/* Only this thread changes rx's list: reading it needs no lock. */
		for (struct pending *p = rx->head; p; p = p->next) {
			if (p->rec.kind != RT_KIND_REQUEST || settled(p))
				continue;
			/* An error with a null id answers a request the server could
			 * not read: all of this exchange's open requests failed. */
			if (id && !json_is_null(id) ? rec_id_is(&p->rec, id) : m->kind == JRPC_ERROR) {
				answer_request(hr, l, p, m);
				matched = 1;
				if (id && !json_is_null(id))
					break;
			}
		}
		const char *method = m->request_method;
		/* (the first byte tested inline: most answers are to tools/call) */
		if (hr->count && m->kind == JRPC_RESULT && method && method[0] == 'i' &&
		    strcmp(method, "initialize") == 0 &&
		    rx->where->reply_session_id) {
			hr_lock(hr);
			hr->sink->session_opened(hr->arg);
			hr_unlock(hr);
		}
		if (!matched && m->kind == JRPC_ERROR && (!id || json_is_null(id))) {
			/* An error for no request in particular: the server could not
			 * read what this exchange carried. It answers the client's
			 * other messages too (a notification it refused); with none
			 * at all (a GET for a stream the server does not offer,
			 * answered 405 with such a body) it is an HTTP refusal's
			 * body, no call, and makes no record: records are for
			 * calls, the exchange is counted in the metrics. */
			for (struct pending *p = rx->head; p; p = p->next) {
				if (settled(p))
					continue;
				answer_request(hr, l, p, m);
				matched = 1;
			}
		} else if (!matched) {
			server_record(hr, l, rx, m, RT_KIND_RESPONSE);
		}
		json_decref(own_id);
		break;
	}
	case JRPC_NOTIFICATION:
		if (rx->has_requests) {
			__atomic_store_n(&rx->notifications, rx->notifications + 1, __ATOMIC_RELAXED);
			count_locked(hr, hr->sink->server_message, m->method);
		} else {
			server_record(hr, l, rx, m, RT_KIND_NOTIFICATION);
		}
		break;
	case JRPC_REQUEST:
		server_record(hr, l, rx, m, RT_KIND_REQUEST);
		break;
	default:
		break;
	}
}

/* inspect_tree_fn (issue 20): an answer to a request of the same
 * exchange is recorded from its index (its id, its error, isError, and
 * the preview from its bytes: redact_result_preview_raw_to); what a
 * record keeps of anything else is read from its tree. */
static int record_needs_tree(void *arg, const struct inspect_msg *m)
{
	(void)arg;
	return !(m->dir == INSPECT_FROM_SERVER && m->request &&
	         (m->kind == JRPC_RESULT || m->kind == JRPC_ERROR));
}

static enum inspect_verdict on_message(void *arg, struct inspect_msg *m)
{
	struct hook_record *hr = arg;

	if (hr->count && (m->verdict != INSPECT_FORWARD || m->reason)) {
		hr_lock(hr);
		hr->sink->policy(hr->arg, m->reason ? m->reason : m->decided_by, verdict_str(m->verdict));
		hr_unlock(hr);
	}
	struct hr_local *l = local_of(hr);
	struct rx *rx = l ? rx_get(hr, l, m->where) : NULL;
	if (!rx)
		return INSPECT_FORWARD;
	if (m->dir == INSPECT_FROM_CLIENT)
		client_message(hr, l, rx, m);
	else
		server_message(hr, l, rx, m);
	return INSPECT_FORWARD;
}

/* rx is unlinked: nobody else reads its records any more. */
static void finish(struct rx *rx, struct pending *p, const struct inspect_exchange *x)
{
	struct record_text_rec *r = &p->rec;
	const struct inspect_where *w = rx->where;

	if (!rec_holds(r, RT_SESSION, session_of(w)))
		rec_set_bounded(r, RT_SESSION, session_of(w));
	r->http_status = x->status;
	r->finished = 1;
	r->bytes_in = x->bytes_in;
	r->bytes_out = x->bytes_out;
	if (r->kind == RT_KIND_REQUEST)
		r->notifications = rx->notifications;
	if (p->settled) {
		r->latency_us = p->done_us > w->start_us ? p->done_us - w->start_us : 0;
		if (!r->outcome)
			r->outcome = "ok";
		return;
	}
	r->latency_us = x->latency_us;
	const char *note = x->error;
	char buf[96];
	if (r->kind != RT_KIND_REQUEST && x->end == INSPECT_END_OK && x->status < 400) {
		r->outcome = "ok";
	} else {
		r->outcome = end_outcome(x->end);
		if (!note && x->end == INSPECT_END_OK) {
			snprintf(buf, sizeof(buf), "HTTP %d without a JSON-RPC answer%s", x->status,
			         r->kind == RT_KIND_REQUEST ? " to this request" : "");
			note = buf;
		}
	}
	if (x->end == INSPECT_END_REJECTED)
		rec_set(r, RT_RULE, "mcpwarden");
	if (note)
		rec_set(r, RT_NOTE, note);
}

static void on_exchange(void *arg, const struct inspect_exchange *x)
{
	struct hook_record *hr = arg;
	struct inspect_where *w = x->where;
	struct rx *rx = w->hook_data[hr->slot];
	int closed = hr->count && w->http_method && w->http_method[0] == 'D' &&
	             strcmp(w->http_method, "DELETE") == 0 &&
	             w->session_id && x->status >= 200 && x->status < 300;

	if (rx)
		assert(rx->magic == RX_MAGIC);
	/* The common exchange has one record, answered: it is written first,
	 * then put in the outbox with the exchange's counts. Only a settled
	 * record may be finished while still listed: /calls/inflight skips
	 * those, and finish writes into the record's arena. */
	struct pending *one = rx && rx->head && !rx->head->next && settled(rx->head) ? rx->head
	                                                                          : NULL;
	struct hr_local *l = rx ? rx->home : hr->count ? local_of(hr) : NULL;
	int text = 0;
	if (one) {
		finish(rx, one, x);
		text = write_text(hr, l, &one->rec);
	}
	if (rx && rx->linked) {
		pthread_mutex_lock(&l->lock);
		rx_unlink(rx);
		pthread_mutex_unlock(&l->lock);
	}
	if (l && (hr->count || text)) {
		struct outrec *o = out_begin(hr, l);
		if (hr->count && !x->deferred) { /* a deferred one was counted as its POST */
			o->exchange = 1;
			o->bytes_in = x->bytes_in;
			o->bytes_out = x->bytes_out;
			o->closed = closed;
		}
		if (one)
			out_record(l, o, &one->rec, text);
		out_put(hr, l);
	} else if (hr->count && !x->deferred) {
		/* No thread state (out of memory): counted the old way. */
		hr_lock(hr);
		hr->sink->exchange(hr->arg, x->bytes_in, x->bytes_out);
		if (closed)
			hr->sink->session_closed(hr->arg);
		hr_unlock(hr);
	}
	if (!rx)
		return;
	for (struct pending *p = one ? NULL : rx->head; p; p = p->next) {
		finish(rx, p, x);
		emit(hr, rx->home, &p->rec);
	}
	rx_free(rx);
}

/* ---- public ---------------------------------------------------------------- */

/* The date part of the last "time" a reader's thread wrote: the call log
 * writes every record as it comes, mostly within one second. */
static _Thread_local struct record_text_clock reader_clock = RECORD_TEXT_CLOCK_INIT;

int hook_record_stored_text(const char *stored, size_t len, uint64_t seq, struct sbuf *out)
{
	struct record_text_rec v;
	if (record_text_view(stored, len, &v) < 0)
		return -1;
	return record_text_write(out, &reader_clock, &v, seq);
}

char *hook_record_text_seal(struct hook_record_text *t, uint64_t seq, size_t *len)
{
	if (!t->stored)
		return record_text_seal(t, seq, len);
	t->text.len = 0;
	t->text.oom = 0;
	*len = 0;
	if (hook_record_stored_text(t->b.p, t->json_len, seq, &t->text) < 0)
		return NULL;
	*len = t->text.len;
	return t->text.p;
}

struct record_block *hook_record_text_block(struct hook_record_text *t, uint64_t seq)
{
	if (!t->stored)
		return record_text_block(t, seq);
	t->rb = (struct record_block){
		.block = t->b.p, .cap = t->b.cap, .json = t->b.p, .len = t->json_len, .keys = t->keys,
	};
	return &t->rb;
}

struct hook_record *hook_record_new(struct inspect *in, const struct redact *rd,
                                    const struct record_sink *sink, void *arg)
{
	static const struct record_sink none = {0};
	struct hook_record *hr = calloc(1, sizeof(*hr));
	if (!hr)
		return NULL;
	hr->rd = rd;
	hr->sink = sink ? sink : &none;
	hr->arg = arg;
	hr->count = hr->sink->call != NULL;
	hr->gen = __atomic_add_fetch(&hr_gens, 1, __ATOMIC_RELAXED);
	if (pthread_mutex_init(&hr->locals_lock, NULL) != 0) {
		free(hr);
		return NULL;
	}
	hr->slot = inspect_add_observer(in, "record", on_message, on_exchange, hr);
	if (hr->slot < 0) {
		pthread_mutex_destroy(&hr->locals_lock);
		free(hr);
		return NULL;
	}
	inspect_set_listing_fast(in, hr->slot, listing_may, listing_passed);
	inspect_set_needs_tree(in, hr->slot, record_needs_tree);
	return hr;
}

void hook_record_set_text_now(struct hook_record *hr, int on)
{
	hr->text_now = on;
}

void hook_record_set_tools(struct hook_record *hr, struct tools *tr)
{
	hr->tools = tr;
}

void hook_record_set_lock(struct hook_record *hr, pthread_mutex_t *lock)
{
	hr->lock = lock;
}

void hook_record_free(struct hook_record *hr)
{
	if (!hr)
		return;
	/* No other thread runs now. What waits in an outbox goes out (the
	 * sink outlives the recorder); exchanges still open (teardown
	 * without their on_exchange) are dropped with their records. */
	drain(hr);
	for (struct hr_local *l = hr->locals; l; l = l->next) {
		while (l->live) {
			rx_unlink(l->live);
			rx_free(l->live);
		}
	}
	while (hr->locals) {
		struct hr_local *l = hr->locals;
		hr->locals = l->next;
		local_free(l);
	}
	pthread_mutex_destroy(&hr->locals_lock);
	free(hr);
}

void hook_record_drain_locked(struct hook_record *hr)
{
	if (hr)
		drain(hr);
}

void hook_record_unlocked(struct hook_record *hr)
{
	if (hr)
		combine(hr);
}

/* The in-flight lists are read with every thread's list locked (the
 * readers are the admin endpoint's, rare), in the order of hr->locals. */
static struct hr_local *locals_lock_all(const struct hook_record *hr)
{
	struct hr_local *first = __atomic_load_n(&hr->locals, __ATOMIC_ACQUIRE);
	for (struct hr_local *l = first; l; l = l->next)
		pthread_mutex_lock(&l->lock);
	return first;
}

static void locals_unlock_all(struct hr_local *first)
{
	for (struct hr_local *l = first; l; l = l->next)
		pthread_mutex_unlock(&l->lock);
}

/* With every list locked. */
static size_t inflight_count(const struct hr_local *first)
{
	size_t n = 0;
	for (const struct hr_local *l = first; l; l = l->next)
		for (const struct rx *rx = l->rxs; rx; rx = rx->next)
			for (const struct pending *p = rx->head; p; p = p->next)
				n += p->rec.kind == RT_KIND_REQUEST && !settled(p);
	return n;
}

size_t hook_record_inflight_count(const struct hook_record *hr)
{
	struct hr_local *first = locals_lock_all(hr);
	size_t n = inflight_count(first);
	locals_unlock_all(first);
	return n;
}

static json_t *str_json(const struct record_text_rec *r, enum record_text_str f)
{
	const char *s = record_text_get(r, f);
	json_t *j = NULL;
	if (s && RT_IS_RAW(f)) {
		j = json_string(s);
	} else if (s) {
		/* kept escaped: read back as the JSON string it spells */
		char *q = malloc(r->len[f] + 2);
		if (q) {
			q[0] = '"';
			memcpy(q + 1, s, r->len[f]);
			q[r->len[f] + 1] = '"';
			j = json_loadb(q, r->len[f] + 2, JSON_DECODE_ANY, NULL);
			free(q);
		}
	}
	return j ? j : json_null();
}

/* The identifying members of an open request, as hook_record.h lists.
 * Only what was written before the record was linked is read here. */
static json_t *inflight_item(const struct rx *rx, const struct record_text_rec *r, uint64_t now)
{
	char when[40];
	json_t *o = json_object();
	if (!o)
		return NULL;
	hook_record_time(r->wall_us, when, sizeof(when));
	json_object_set_new(o, "time", json_string(when));
	json_object_set_new(o, "session", str_json(r, RT_SESSION));
	json_object_set_new(o, "client", str_json(r, RT_CLIENT));
	json_object_set_new(o, "client_name", str_json(r, RT_CLIENT_NAME));
	json_object_set_new(o, "upstream", str_json(r, RT_UPSTREAM));
	json_object_set_new(o, "method", str_json(r, RT_METHOD));
	json_object_set_new(o, "tool", str_json(r, RT_TOOL));
	json_object_set_new(o, "id", r->id_kind == RT_ID_INT   ? json_integer((json_int_t)r->id_int)
	                             : r->id_kind == RT_ID_STR ? str_json(r, RT_ID)
	                                                    : json_null());
	json_object_set_new(o, "arguments", str_json(r, RT_ARGUMENTS));
	json_object_set_new(o, "arguments_cut", json_boolean(r->arguments_cut));
	if (r->str[RT_TRACE_ID]) { /* telemetry: only when on */
		json_object_set_new(o, "trace_id", str_json(r, RT_TRACE_ID));
		json_object_set_new(o, "span_id", str_json(r, RT_SPAN_ID));
	}
	uint64_t start = rx->where->start_us;
	json_object_set_new(o, "age_us", json_integer((json_int_t)(now > start ? now - start : 0)));
	json_object_set_new(o, "notifications",
	                    json_integer(__atomic_load_n(&rx->notifications, __ATOMIC_RELAXED)));
	return o;
}

/* The oldest of the threads' next exchanges (each list is oldest first):
 * cur[i] walks the i-th thread's list. */
static const struct rx *oldest_next(const struct rx **cur, size_t n, size_t *which)
{
	const struct rx *best = NULL;
	for (size_t i = 0; i < n; i++) {
		if (cur[i] && (!best || cur[i]->wall_us < best->wall_us)) {
			best = cur[i];
			*which = i;
		}
	}
	return best;
}

/* Counts rx's open requests into *count and appends them to out, up to
 * limit. Each is looked at once: an answer may settle it meanwhile (its
 * worker does not wait for the list's lock to do so), and the count and
 * the items must agree. -1: out of memory. */
static int inflight_of(json_t *out, const struct rx *rx, size_t limit, uint64_t now,
                       size_t *count)
{
	for (const struct pending *p = rx->head; p; p = p->next) {
		if (p->rec.kind != RT_KIND_REQUEST || settled(p))
			continue;
		++*count;
		if (json_array_size(out) >= limit)
			continue;
		json_t *o = inflight_item(rx, &p->rec, now);
		if (!o || json_array_append_new(out, o) < 0)
			return -1;
	}
	return 0;
}

json_t *hook_record_inflight(const struct hook_record *hr, size_t limit, size_t *count)
{
	json_t *out = json_array();
	uint64_t now = clock_mono_us();
	if (!out)
		return NULL;
	struct hr_local *first = locals_lock_all(hr);
	size_t n = 0;
	for (const struct hr_local *l = first; l; l = l->next)
		n++;
	const struct rx **cur = calloc(n ? n : 1, sizeof(*cur));
	int rc = cur ? 0 : -1;
	size_t i = 0;
	for (const struct hr_local *l = first; cur && l; l = l->next)
		cur[i++] = l->rxs;
	const struct rx *rx;
	size_t which = 0, all = 0;
	while (rc == 0 && (rx = oldest_next(cur, n, &which))) {
		rc = inflight_of(out, rx, limit, now, &all);
		cur[which] = rx->next;
	}
	if (count)
		*count = all;
	locals_unlock_all(first);
	free(cur);
	if (rc < 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

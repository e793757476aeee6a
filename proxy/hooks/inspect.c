/* inspect: see inspect.h. A fixed array of hooks; running them is a loop
 * over function pointers, nothing allocated per message. */
#include "proxy/hooks/inspect.h"

#include "proxy/base/jsonrpc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct inspect_hook {
	const char *name;
	inspect_message_fn on_message;
	inspect_exchange_fn on_exchange;
	void *arg;
	int observer;
	pthread_mutex_t *lock;   /* borrowed, or NULL: see inspect_set_lock */
	inspect_uninspected_fn uninspected; /* or NULL: see inspect_set_uninspected */
	inspect_listing_may_fn listing_may;      /* or NULL: inspect_set_listing_fast */
	inspect_listing_passed_fn listing_passed;
	inspect_tree_fn needs_tree; /* or NULL: needs every tree (inspect_set_needs_tree) */
};

struct inspect {
	struct inspect_hook hooks[INSPECT_MAX_HOOKS];
	size_t n;
	struct inspect_stats stats;
};

struct inspect *inspect_new(void)
{
	return calloc(1, sizeof(struct inspect));
}

struct inspect *inspect_clone(const struct inspect *in)
{
	struct inspect *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	memcpy(c->hooks, in->hooks, sizeof(c->hooks));
	c->n = in->n;
	memset(&c->stats, 0, sizeof(c->stats));
	return c;
}

size_t inspect_count(const struct inspect *in)
{
	return in->n;
}

void inspect_set_lock(struct inspect *in, int slot, pthread_mutex_t *lock)
{
	if (slot >= 0 && (size_t)slot < in->n)
		in->hooks[slot].lock = lock;
}

void inspect_set_uninspected(struct inspect *in, int slot, inspect_uninspected_fn fn)
{
	if (slot >= 0 && (size_t)slot < in->n)
		in->hooks[slot].uninspected = fn;
}

int inspect_listing_may_skip(const struct inspect *in, const struct inspect_where *where,
                             const char **who)
{
	/* Not under the hook's lock (inspect_set_lock): the answer comes from
	 * the hook's configuration, which each hook reads safely itself. */
	for (size_t i = 0; i < in->n; i++) {
		const struct inspect_hook *h = &in->hooks[i];
		if (h->uninspected && !h->uninspected(h->arg, where)) {
			if (who)
				*who = h->name;
			return 0;
		}
	}
	return 1;
}

/* Counters: this worker's thread writes, the admin endpoint's reads. */
#define STAT_INC(in, field)                                                                    \
	__atomic_store_n(&(in)->stats.field, (in)->stats.field + 1, __ATOMIC_RELAXED)

void inspect_set_listing_fast(struct inspect *in, int slot, inspect_listing_may_fn may,
                              inspect_listing_passed_fn passed)
{
	if (slot >= 0 && (size_t)slot < in->n) {
		in->hooks[slot].listing_may = may;
		in->hooks[slot].listing_passed = passed;
	}
}

static void lock_hook(const struct inspect_hook *h)
{
	if (h->lock)
		pthread_mutex_lock(h->lock);
}

static void unlock_hook(const struct inspect_hook *h)
{
	if (h->lock)
		pthread_mutex_unlock(h->lock);
}

/* Asks one hook (under its lock). Once a hook replaced the result, a
 * second replacement is a refusal: the one kept was made from bytes the
 * other had not changed. */
static int listing_ask(const struct inspect_hook *h, const struct inspect_listing *l)
{
	if (!h->listing_may)
		return 0;
	struct rcbytes *second = NULL;
	struct inspect_listing after = *l;
	if (l->sent && *l->sent)
		after.sent = &second;
	lock_hook(h);
	int ok = h->listing_may(h->arg, &after);
	unlock_hook(h);
	if (second) {
		rcbytes_unref(second);
		ok = 0;
	}
	return ok;
}

static uint64_t listing_calls;

int inspect_listing_fast(struct inspect *in, const struct inspect_listing *asked, const char **who)
{
	struct inspect_listing q = *asked;
	q.call = __atomic_add_fetch(&listing_calls, 1, __ATOMIC_RELAXED);
	const struct inspect_listing *l = &q;
	/* Everyone is asked before anyone acts: a hook that replayed its part
	 * and then saw the reply parsed after all would count it twice. */
	size_t setter = in->n; /* the hook that changed the reply, if any */
	for (size_t i = 0; i < in->n; i++) {
		const struct inspect_hook *h = &in->hooks[i];
		if (!h->on_message)
			continue;
		int had = l->sent && *l->sent;
		if (!listing_ask(h, l)) {
			if (who)
				*who = h->name;
			if (l->sent) {
				rcbytes_unref(*l->sent);
				*l->sent = NULL;
			}
			return 0;
		}
		if (!had && l->sent && *l->sent)
			setter = i;
	}
	STAT_INC(in, messages[1]);
	STAT_INC(in, fast_listings);
	/* The hooks after the one that changed the reply see it changed. */
	struct inspect_listing now = *l;
	for (size_t i = 0; i < in->n; i++) {
		const struct inspect_hook *h = &in->hooks[i];
		if (h->on_message && h->listing_passed) {
			lock_hook(h);
			h->listing_passed(h->arg, &now);
			unlock_hook(h);
		}
		if (i == setter) {
			now.raw = (*l->sent)->text;
			now.len = (*l->sent)->len;
		}
	}
	return 1;
}

void inspect_free(struct inspect *in)
{
	free(in);
}

static enum inspect_verdict call(const struct inspect_hook *h, struct inspect_msg *m)
{
	if (!h->lock)
		return h->on_message(h->arg, m);
	pthread_mutex_lock(h->lock);
	enum inspect_verdict v = h->on_message(h->arg, m);
	pthread_mutex_unlock(h->lock);
	return v;
}

static int hook_add(struct inspect *in, const char *name, inspect_message_fn on_message,
                    inspect_exchange_fn on_exchange, void *arg, int observer)
{
	if (in->n >= INSPECT_MAX_HOOKS)
		return -1;
	in->hooks[in->n] =
	        (struct inspect_hook){.name = name, .on_message = on_message,
	                              .on_exchange = on_exchange, .arg = arg, .observer = observer};
	return (int)in->n++;
}

int inspect_add(struct inspect *in, const char *name, inspect_message_fn on_message,
                inspect_exchange_fn on_exchange, void *arg)
{
	return hook_add(in, name, on_message, on_exchange, arg, 0);
}

int inspect_add_observer(struct inspect *in, const char *name, inspect_message_fn on_message,
                         inspect_exchange_fn on_exchange, void *arg)
{
	return hook_add(in, name, on_message, on_exchange, arg, 1);
}

void inspect_set_needs_tree(struct inspect *in, int slot, inspect_tree_fn fn)
{
	if (slot >= 0 && (size_t)slot < in->n)
		in->hooks[slot].needs_tree = fn;
}

int inspect_needs_tree(const struct inspect *in, const struct inspect_msg *m, const char **who)
{
	for (size_t i = 0; i < in->n; i++) {
		const struct inspect_hook *h = &in->hooks[i];
		if (h->on_message && (!h->needs_tree || h->needs_tree(h->arg, m))) {
			if (who)
				*who = h->name;
			return 1;
		}
	}
	return 0;
}

int inspect_trees_optional(const struct inspect *in)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->hooks[i].on_message && !in->hooks[i].needs_tree)
			return 0;
	return 1;
}

int inspect_tree_for_listings(void *arg, const struct inspect_msg *m)
{
	(void)arg;
	const char *method = m->dir == INSPECT_FROM_CLIENT ? m->method : m->request_method;
	if (m->dir == INSPECT_FROM_SERVER && !m->request)
		return 1;
	return method && strcmp(method, "tools/list") == 0;
}

/* The observers, then the notes go (inspect.h: the message's last
 * readers are the observers). */
static void run_observers(struct inspect *in, struct inspect_msg *m)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->hooks[i].observer && in->hooks[i].on_message)
			call(&in->hooks[i], m);
	json_decref(m->notes);
	m->notes = NULL;
}

enum inspect_verdict inspect_message(struct inspect *in, struct inspect_msg *m)
{
	STAT_INC(in, messages[m->dir == INSPECT_FROM_SERVER]);
	m->verdict = INSPECT_FORWARD;
	if (!m->msg) {
		/* No tree (inspect_needs_tree said so): the transport's names. */
		m->params = NULL;
		if (m->kind != JRPC_REQUEST && m->kind != JRPC_NOTIFICATION)
			m->method = m->tool = NULL;
	} else if (m->kind == JRPC_REQUEST || m->kind == JRPC_NOTIFICATION) {
		jrpc_names(m->msg, &m->method, &m->tool, &m->params);
	} else {
		m->method = m->tool = NULL;
		m->params = NULL;
	}
	/* (msg NULL and no request: a client message, its own method) */
	m->request_method = m->request == m->msg ? m->method
	                    : m->request ? jrpc_method(m->request) : NULL;
	for (size_t i = 0; i < in->n; i++) {
		const struct inspect_hook *h = &in->hooks[i];
		if (!h->on_message || h->observer)
			continue;
		int was_modified = m->modified;
		enum inspect_verdict v = call(h, m);
		if (m->modified && !was_modified) {
			STAT_INC(in, modified);
			m->result_raw = NULL; /* no longer what msg holds */
			m->result_raw_len = 0;
			m->result_serial = 0;
			m->result_bytes = NULL;
		}
		if (m->modified && m->method && m->msg) {
			jrpc_names(m->msg, &m->method, &m->tool, &m->params);
			if (m->request == m->msg)
				m->request_method = m->method;
		}
		if (v == INSPECT_ANSWER && !m->answer)
			v = INSPECT_FORWARD;
		if (v == INSPECT_DROP || v == INSPECT_ANSWER) {
			m->decided_by = h->name;
			if (v == INSPECT_DROP)
				STAT_INC(in, dropped);
			else
				STAT_INC(in, answered);
			m->verdict = v;
			run_observers(in, m);
			return v;
		}
	}
	run_observers(in, m);
	return INSPECT_FORWARD;
}

void inspect_exchange_done(struct inspect *in, const struct inspect_exchange *x)
{
	for (size_t i = 0; i < in->n; i++) {
		const struct inspect_hook *h = &in->hooks[i];
		if (!h->on_exchange)
			continue;
		if (h->lock)
			pthread_mutex_lock(h->lock);
		h->on_exchange(h->arg, x);
		if (h->lock)
			pthread_mutex_unlock(h->lock);
	}
}

void inspect_get_stats(const struct inspect *in, struct inspect_stats *out)
{
	out->messages[0] = __atomic_load_n(&in->stats.messages[0], __ATOMIC_RELAXED);
	out->messages[1] = __atomic_load_n(&in->stats.messages[1], __ATOMIC_RELAXED);
	out->dropped = __atomic_load_n(&in->stats.dropped, __ATOMIC_RELAXED);
	out->answered = __atomic_load_n(&in->stats.answered, __ATOMIC_RELAXED);
	out->modified = __atomic_load_n(&in->stats.modified, __ATOMIC_RELAXED);
	out->fast_listings = __atomic_load_n(&in->stats.fast_listings, __ATOMIC_RELAXED);
}

/* inspect: see inspect.h. A fixed array of hooks; running them is a loop
 * over function pointers, nothing allocated per message. */
#include "proxy/inspect.h"

#include <stdlib.h>

struct inspect_hook {
	const char *name;
	inspect_message_fn on_message;
	inspect_exchange_fn on_exchange;
	void *arg;
	int observer;
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

void inspect_free(struct inspect *in)
{
	free(in);
}

static int hook_add(struct inspect *in, const char *name, inspect_message_fn on_message,
                    inspect_exchange_fn on_exchange, void *arg, int observer)
{
	if (in->n >= INSPECT_MAX_HOOKS)
		return -1;
	in->hooks[in->n] = (struct inspect_hook){name, on_message, on_exchange, arg, observer};
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

static void run_observers(struct inspect *in, struct inspect_msg *m)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->hooks[i].observer && in->hooks[i].on_message)
			in->hooks[i].on_message(in->hooks[i].arg, m);
}

enum inspect_verdict inspect_message(struct inspect *in, struct inspect_msg *m)
{
	in->stats.messages[m->dir == INSPECT_FROM_SERVER]++;
	m->verdict = INSPECT_FORWARD;
	for (size_t i = 0; i < in->n; i++) {
		const struct inspect_hook *h = &in->hooks[i];
		if (!h->on_message || h->observer)
			continue;
		int was_modified = m->modified;
		enum inspect_verdict v = h->on_message(h->arg, m);
		if (m->modified && !was_modified) {
			in->stats.modified++;
			m->result_raw = NULL; /* no longer what msg holds */
			m->result_raw_len = 0;
		}
		if (v == INSPECT_ANSWER && !m->answer)
			v = INSPECT_FORWARD;
		if (v == INSPECT_DROP || v == INSPECT_ANSWER) {
			m->decided_by = h->name;
			if (v == INSPECT_DROP)
				in->stats.dropped++;
			else
				in->stats.answered++;
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
	for (size_t i = 0; i < in->n; i++)
		if (in->hooks[i].on_exchange)
			in->hooks[i].on_exchange(in->hooks[i].arg, x);
}

void inspect_get_stats(const struct inspect *in, struct inspect_stats *out)
{
	*out = in->stats;
}

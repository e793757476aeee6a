/* policy_memo: policy_eval for tools/call with the tool-only part of every
 * rule remembered (see policy.h). policy_eval tries every rule's tool
 * globs and splits the tool name into words for every name_words rule on
 * every call, although the answer only changes with the tool, the client,
 * the upstream and the tool's hints. Here that answer is kept per key:
 *
 *   key   = [hints] tool NUL [client tag, client NUL] [upstream tag, upstream NUL]
 *           (client and upstream only when some rule names one; the tag
 *           tells a missing name from an empty one, which globs treat
 *           differently)
 *   entry = cand[0..ncand-1]: the rules, in order, whose non-argument
 *           matchers hold; the list ends at the first such rule without
 *           argument matchers (it always matches), or when full, in which
 *           case `resume` is where full evaluation goes on.
 *
 * A call then costs one hash of the key, one probe, and the argument
 * matchers of the candidates. The table is open addressing, grows to
 * 2 * POLICY_MEMO_MAX_ENTRIES slots and is emptied when it holds
 * POLICY_MEMO_MAX_ENTRIES keys (a flood of made-up tool names costs
 * re-computing, never memory).
 *
 * Not here: the rules themselves (policy.c), locking (the caller's).
 */
#define POLICY_INTERNAL
#include "policy/policy.h"
#include "proxy/base/hash.h"

#include <stdlib.h>
#include <string.h>

struct memo_entry {
	char *key;          /* owned; NULL: free slot */
	uint32_t hash;
	uint16_t keylen;
	struct policy_cands c;
};

struct policy_memo {
	const struct policy *p;     /* borrowed */
	struct memo_entry *slots;   /* owned: cap slots, cap a power of two */
	size_t cap, n, resets;
	uint32_t seed;              /* keeps probe sequences unpredictable */
	int uses_client, uses_upstream, uses_hints;
};

/* POLICY_MAX_RULES must fit the uint16_t indexes above. */
_Static_assert(POLICY_MAX_RULES < 65535, "rule indexes are 16 bits");
_Static_assert(POLICY_MEMO_MAX_KEY < 65535, "key lengths are 16 bits");
_Static_assert(POLICY_MEMO_MAX_CAND < 256, "candidate counts are 8 bits");

struct policy_memo *policy_memo_new(const struct policy *p)
{
	struct policy_memo *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->p = p;
	m->seed = HASH_FNV1A32_INIT ^ (uint32_t)((uintptr_t)m >> 4);
	for (size_t i = 0; i < p->nrules; i++) {
		const struct policy_rule *r = &p->rules[i];
		m->uses_client |= r->client.n > 0;
		m->uses_upstream |= r->upstream.n > 0;
		m->uses_hints |= policy_rule_uses_hints(r);
	}
	return m;
}

static void memo_clear(struct policy_memo *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		free(m->slots[i].key);
		m->slots[i].key = NULL;
	}
	m->n = 0;
}

void policy_memo_free(struct policy_memo *m)
{
	if (!m)
		return;
	memo_clear(m);
	free(m->slots);
	free(m);
}

size_t policy_memo_size(const struct policy_memo *m)
{
	return m->n;
}

size_t policy_memo_resets(const struct policy_memo *m)
{
	return m->resets;
}

/* ---- keys ------------------------------------------------------------------- */

struct keybuf {
	char b[POLICY_MEMO_MAX_KEY];
	size_t n;
	uint32_t h;    /* FNV-1a of b[0..n-1], from the memo's seed */
};

static void key_byte(struct keybuf *k, char c)
{
	/* Callers check room first. */
	k->b[k->n++] = c;
	k->h = hash_fnv1a32_byte(k->h, (unsigned char)c);
}

/* Appends s and its NUL. Returns 0, or -1 when the key would be too long. */
static int key_str(struct keybuf *k, const char *s)
{
	for (;; s++) {
		if (k->n >= sizeof(k->b))
			return -1;
		key_byte(k, *s);
		if (!*s)
			return 0;
	}
}

static int key_opt(struct keybuf *k, const char *s)
{
	if (k->n >= sizeof(k->b))
		return -1;
	key_byte(k, s ? 'y' : 'n');
	return s ? key_str(k, s) : 0;
}

static int key_of(const struct policy_memo *m, const struct policy_input *in, struct keybuf *k)
{
	unsigned char hints = 0x10;
	k->n = 0;
	k->h = m->seed;
	if (m->uses_hints) {
		/* Rules see the hints only after defaults and the less-safe
		 * merge with the baseline: those four bits are all that counts. */
		struct policy_hints e;
		policy_hints_effective(in->hints, in->baseline, &e);
		hints |= (unsigned char)(e.read_only | e.destructive << 1 | e.idempotent << 2 |
		                         e.open_world << 3);
	}
	key_byte(k, (char)hints);
	if (key_str(k, in->tool) < 0)
		return -1;
	if (m->uses_client && key_opt(k, in->client) < 0)
		return -1;
	if (m->uses_upstream && key_opt(k, in->upstream) < 0)
		return -1;
	return 0;
}

/* ---- the table ----------------------------------------------------------------- */

static struct memo_entry *memo_find(const struct policy_memo *m, const struct keybuf *k)
{
	if (!m->n)
		return NULL;
	for (size_t i = k->h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct memo_entry *e = &m->slots[i];
		if (!e->key)
			return NULL;
		if (e->hash == k->h && e->keylen == k->n && memcmp(e->key, k->b, k->n) == 0)
			return e;
	}
}

static int memo_grow(struct policy_memo *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 16;
	struct memo_entry *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		struct memo_entry *e = &m->slots[i];
		if (!e->key)
			continue;
		size_t j = e->hash & (ncap - 1);
		while (ns[j].key)
			j = (j + 1) & (ncap - 1);
		ns[j] = *e;
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

/* A free slot for a new key, or NULL (out of memory). */
static struct memo_entry *memo_slot(struct policy_memo *m, const struct keybuf *k)
{
	if (m->n >= POLICY_MEMO_MAX_ENTRIES) {
		memo_clear(m);
		m->resets++;
	}
	/* Load factor at most 1/2: POLICY_MEMO_MAX_ENTRIES keys in at most
	 * twice as many slots. */
	if ((m->n + 1) * 2 > m->cap && memo_grow(m) < 0)
		return NULL;
	size_t i = k->h & (m->cap - 1);
	while (m->slots[i].key)
		i = (i + 1) & (m->cap - 1);
	return &m->slots[i];
}

void policy_cands_of(const struct policy *p, const struct policy_input *in,
                     struct policy_cands *c)
{
	c->n = 0;
	c->resume = (uint16_t)p->nrules;
	for (size_t i = 0; i < p->nrules; i++) {
		const struct policy_rule *r = &p->rules[i];
		if (!policy_rule_static(p, r, in, 1))
			continue;
		if (c->n == POLICY_MEMO_MAX_CAND) {
			c->resume = (uint16_t)i;
			return;
		}
		c->cand[c->n++] = (uint16_t)i;
		if (r->nargs == 0)
			return;
	}
}

int policy_client_keyed(const struct policy *p)
{
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].client.n)
			return 1;
	return 0;
}

/* ---- evaluation ------------------------------------------------------------------ */

void policy_cands_call(const struct policy *p, const struct policy_cands *c,
                       const struct policy_input *in, struct policy_decision *out)
{
	if (!c->n && c->resume == p->nrules) {
		policy_decide_default(p, out);
		return;
	}
	const json_t *args = NULL;
	int have_args = 0;
	for (size_t i = 0; i < c->n; i++) {
		const struct policy_rule *r = &p->rules[c->cand[i]];
		if (r->nargs && !have_args) {
			args = policy_input_args(in);
			have_args = 1;
		}
		if (policy_rule_args(r, args, in->rx)) {
			policy_decide_rule(p, c->cand[i], out);
			return;
		}
	}
	policy_eval_from(p, in, 1, c->resume, out);
}

void policy_memo_call(struct policy_memo *m, const struct policy_input *in,
                      struct policy_decision *out)
{
	const struct policy *p = m->p;

	if (!in->tool || !in->tool_known) {
		if (p->unknown == POLICY_UNKNOWN_DENY) {
			policy_decide_unknown(p, in, out);
			return;
		}
		if (!in->tool) {
			/* Nothing to key on (and no rule that names a tool or its
			 * hints can match): the plain walk. */
			policy_eval_from(p, in, 1, 0, out);
			return;
		}
	}

	struct keybuf k;
	struct policy_cands tmp;
	const struct policy_cands *c = NULL;
	struct memo_entry *e = NULL;
	if (key_of(m, in, &k) == 0 && !(e = memo_find(m, &k))) {
		char *copy = malloc(k.n);
		e = copy ? memo_slot(m, &k) : NULL;
		if (e) {
			memcpy(copy, k.b, k.n);
			e->key = copy;
			e->hash = k.h;
			e->keylen = (uint16_t)k.n;
			policy_cands_of(p, in, &e->c);
			m->n++;
		} else {
			free(copy);
		}
	}
	if (e) {
		c = &e->c;
	} else {
		/* Key too long, or out of memory: the same walk, not kept. */
		policy_cands_of(p, in, &tmp);
		c = &tmp;
	}
	policy_cands_call(p, c, in, out);
}

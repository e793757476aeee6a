/* ring: see ring.h.
 *
 * Each slot owns one heap block holding the record (its JSON text, or the
 * recorder's stored form, written as text by r->text when read) and its
 * keys. An
 * append reuses the block of the record it overwrites when that is big
 * enough and not much bigger (records of one workload are about one size),
 * so a full ring in steady state appends with one memcpy and no malloc;
 * otherwise it is one realloc. O(1) whatever the ring size. ring_swap
 * does not even copy: the block changes hands, and the writer gets the
 * overwritten record's block to write its next one into.
 */
#include "admin/ring.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

enum { KEY_METHOD, KEY_TOOL, KEY_SESSION, KEY_OUTCOME, NKEYS };

struct slot {
	uint64_t seq;             /* 0: empty */
	char *block;              /* owned: json text and the keys */
	size_t cap;               /* bytes allocated for block */
	const char *json;         /* into block */
	size_t len;               /* json length */
	const char *key[NKEYS];   /* into block, static strings, or NULL */
	int stored;               /* json is a stored record (r->text writes it) */
};

struct ring {
	struct slot *slots;       /* owned: size of them */
	size_t size;
	uint64_t next_seq;        /* >= 1 */
	uint64_t dropped;
	ring_text_fn text;        /* NULL: swapped blocks hold JSON text */
};

struct ring *ring_new(size_t size)
{
	if (size == 0 || size > RING_MAX_SIZE)
		return NULL;
	struct ring *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->slots = calloc(size, sizeof(*r->slots));
	if (!r->slots) {
		free(r);
		return NULL;
	}
	r->size = size;
	r->next_seq = 1;
	return r;
}

void ring_free(struct ring *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->size; i++)
		free(r->slots[i].block);
	free(r->slots);
	free(r);
}

void ring_set_text(struct ring *r, ring_text_fn fn)
{
	r->text = fn;
}

uint64_t ring_next_seq(const struct ring *r)
{
	return r->next_seq;
}

static size_t key_len(const char *k)
{
	return k ? strnlen(k, RING_KEY_MAX - 1) : 0;
}

uint64_t ring_append(struct ring *r, const struct record_keys *keys, const char *json, size_t len)
{
	const char *in[NKEYS] = {0};
	size_t klen[NKEYS], total = len + 1;

	if (len > RING_MAX_RECORD_BYTES)
		return 0;
	if (keys) {
		in[KEY_METHOD] = keys->method;
		in[KEY_TOOL] = keys->tool;
		in[KEY_SESSION] = keys->session;
		in[KEY_OUTCOME] = keys->outcome;
	}
	for (int k = 0; k < NKEYS; k++) {
		klen[k] = key_len(in[k]);
		if (in[k])
			total += klen[k] + 1;
	}
	struct slot *s = &r->slots[(r->next_seq - 1) % r->size];
	char *block = s->block;
	/* Reuse unless too small, or so big that keeping it would pin memory
	 * a large record once needed. */
	if (!block || s->cap < total || s->cap > 2 * total + 1024) {
		block = realloc(s->block, total);
		if (!block)
			return 0;
		s->block = block;
		s->cap = total;
	}
	if (s->seq)
		r->dropped++;
	memcpy(block, json, len);
	block[len] = '\0';
	s->json = block;
	char *p = block + len + 1;
	for (int k = 0; k < NKEYS; k++) {
		s->key[k] = NULL;
		if (!in[k])
			continue;
		memcpy(p, in[k], klen[k]);
		p[klen[k]] = '\0';
		s->key[k] = p;
		p += klen[k] + 1;
	}
	assert((size_t)(p - block) == total);
	s->len = len;
	s->stored = 0;
	s->seq = r->next_seq++;
	return s->seq;
}

uint64_t ring_swap(struct ring *r, struct record_block *b)
{
	if (b->len > RING_MAX_RECORD_BYTES)
		return 0;
	struct slot *s = &r->slots[(r->next_seq - 1) % r->size];
	struct record_block old = {.block = s->block, .cap = s->cap};
	if (s->seq)
		r->dropped++;
	s->block = b->block;
	s->cap = b->cap;
	s->json = b->json;
	s->len = b->len;
	s->key[KEY_METHOD] = b->keys.method;
	s->key[KEY_TOOL] = b->keys.tool;
	s->key[KEY_SESSION] = b->keys.session;
	s->key[KEY_OUTCOME] = b->keys.outcome;
	s->stored = r->text != NULL;
	s->seq = r->next_seq++;
	*b = old;
	return s->seq;
}

static int key_match(const char *have, const char *want)
{
	if (!want)
		return 1;
	return have && strncmp(have, want, RING_KEY_MAX - 1) == 0;
}

/* Whether a record's top-level "findings" holds one whose code is code.
 * Most records have none: two text searches rule them out without a
 * parse, and only a record that names the code is parsed (a text match
 * alone could be in arguments or a result preview). */
static int finding_match(const char *json, size_t len, const char *code)
{
	char quoted[RING_KEY_MAX + 2];
	int n = snprintf(quoted, sizeof(quoted), "\"%s\"", code);
	if (n < 0 || (size_t)n >= sizeof(quoted) || !memmem(json, len, "\"findings\"", 10) ||
	    !memmem(json, len, quoted, (size_t)n))
		return 0;
	json_t *rec = json_loadb(json, len, 0, NULL);
	const json_t *list = json_object_get(rec, "findings"), *f;
	size_t i;
	int hit = 0;
	json_array_foreach(list, i, f) {
		const char *c = json_string_value(json_object_get(f, "code"));
		if (c && strcmp(c, code) == 0) {
			hit = 1;
			break;
		}
	}
	json_decref(rec);
	return hit;
}

/* s's JSON text into out (emptied first): 0, or -1. */
static int slot_text(const struct ring *r, const struct slot *s, struct sbuf *out)
{
	out->len = 0;
	out->oom = 0;
	if (s->stored)
		return r->text(s->json, s->len, s->seq, out);
	sbuf_putn(out, s->json, s->len);
	return out->oom ? -1 : 0;
}

/* Whether s matches f; its text is in *text (written once, when the
 * finding filter needs it: -1 when it could not be). */
static int slot_match(const struct ring *r, const struct slot *s, const struct ring_filter *f,
                      struct sbuf *text, int *have)
{
	if (!(key_match(s->key[KEY_METHOD], f->method) && key_match(s->key[KEY_TOOL], f->tool) &&
	      key_match(s->key[KEY_SESSION], f->session) &&
	      key_match(s->key[KEY_OUTCOME], f->outcome)))
		return 0;
	if (!f->finding)
		return 1;
	*have = slot_text(r, s, text) == 0 ? 1 : -1;
	return *have > 0 && finding_match(text->p, text->len, f->finding);
}

int ring_keys_match(const struct record_keys *k, const struct ring_filter *f)
{
	if (!f)
		return 1;
	return key_match(k->method, f->method) && key_match(k->tool, f->tool) &&
	       key_match(k->session, f->session) && key_match(k->outcome, f->outcome);
}

size_t ring_count(const struct ring *r)
{
	uint64_t n = r->next_seq - 1;
	return n < r->size ? (size_t)n : r->size;
}

uint64_t ring_newest_seq(const struct ring *r)
{
	return r->next_seq - 1;
}

uint64_t ring_oldest_seq(const struct ring *r)
{
	size_t n = ring_count(r);
	return n ? r->next_seq - n : 0;
}

size_t ring_size(const struct ring *r)
{
	return r->size;
}

uint64_t ring_dropped(const struct ring *r)
{
	return r->dropped;
}

static const struct slot *slot_of(const struct ring *r, uint64_t seq)
{
	const struct slot *s = &r->slots[(seq - 1) % r->size];
	assert(s->seq == seq);
	return s;
}

size_t ring_read(const struct ring *r, const struct ring_filter *f, struct ring_item **out)
{
	static const struct ring_filter all = {0};
	size_t n = ring_count(r), got = 0, cap;

	*out = NULL;
	if (!f)
		f = &all;
	if (n == 0)
		return 0;
	uint64_t lo = ring_oldest_seq(r), hi = ring_newest_seq(r);
	if (f->since >= hi)
		return 0;
	if (f->since >= lo)
		lo = f->since + 1;
	cap = (size_t)(hi - lo + 1);
	if (f->limit && f->limit < cap)
		cap = f->limit;

	struct ring_item *items = calloc(cap, sizeof(*items));
	if (!items)
		return (size_t)-1;
	/* Walk from the end the reader wants first; stop at the limit. Each
	 * item's text is written into its own buffer, which it keeps. */
	for (uint64_t i = 0; i <= hi - lo && got < cap; i++) {
		uint64_t seq = f->oldest_first ? lo + i : hi - i;
		const struct slot *s = slot_of(r, seq);
		struct sbuf text = {0};
		int have = 0, match = slot_match(r, s, f, &text, &have);
		if (match && !have)
			have = slot_text(r, s, &text) == 0 ? 1 : -1;
		if (!match || have < 0) {
			free(text.p);
			if (text.oom) {
				ring_items_free(items, got);
				return (size_t)-1;
			}
			continue;
		}
		items[got++] = (struct ring_item){.seq = seq, .json = text.p, .len = text.len};
	}
	if (got == 0) {
		free(items);
		return 0;
	}
	*out = items;
	return got;
}

void ring_items_free(struct ring_item *items, size_t n)
{
	if (!items)
		return;
	for (size_t i = 0; i < n; i++)
		free(items[i].json);
	free(items);
}

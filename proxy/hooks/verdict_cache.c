/* verdict_cache: see verdict_cache.h (the measured gain of each layer).
 *
 *   verdict_cache
 *     ├─ verdict   opaque, owned   + the bytes it is for (own copy, or
 *     │                              NULL: the skim's text, shared)
 *     ├─ memo      checks/contract.h per-tool results
 *     └─ text, spans               the last listing checked with the
 *                                  memo, where its tools sit in it
 */
#include "proxy/hooks/verdict_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checks/contract.h"
#include "proxy/base/jparse.h"
#include "proxy/base/rcbytes.h"

struct verdict_cache {
	/* The verdict layer. */
	void *verdict;               /* owned through free_fn, or NULL */
	uint64_t serial;             /* of verdict: verdict_cache_serial */
	void (*free_fn)(void *);
	struct rcbytes *bytes;       /* one reference: the bytes verdict is for */
	char *era;                   /* owned, or NULL */
	int text_now;                /* text holds the page being checked now */
	/* The memo and skim layers (allocated on first use). */
	struct contract_memo *memo;
	struct contract_text *texts; /* scratch, CONTRACT_MAX_TOOLS */
	struct jparse_elem *spans;   /* scratch, CONTRACT_MAX_TOOLS */
	struct rcbytes *text;        /* one reference: the last listing, or NULL */
	struct jparse_elem *text_spans; /* CONTRACT_MAX_TOOLS, into text */
	size_t nspans;
};

/* Every verdict kept, in any cache, gets its own serial. */
static uint64_t serials;

uint64_t verdict_cache_serial(const struct verdict_cache *vc)
{
	return vc ? vc->serial : 0;
}

static void verdict_drop(struct verdict_cache *vc)
{
	if (vc->verdict && vc->free_fn)
		vc->free_fn(vc->verdict);
	rcbytes_unref(vc->bytes);
	free(vc->era);
	vc->verdict = NULL;
	vc->serial = 0;
	vc->bytes = NULL;
	vc->era = NULL;
}

static void memo_drop(struct verdict_cache *vc)
{
	contract_memo_free(vc->memo);
	free(vc->texts);
	free(vc->spans);
	rcbytes_unref(vc->text);
	free(vc->text_spans);
	vc->memo = NULL;
	vc->texts = NULL;
	vc->spans = NULL;
	vc->text = NULL;
	vc->text_spans = NULL;
	vc->nspans = 0;
}

struct verdict_cache *verdict_cache_new(void)
{
	return calloc(1, sizeof(struct verdict_cache));
}

void verdict_cache_free(struct verdict_cache *vc)
{
	if (!vc)
		return;
	memo_drop(vc);
	verdict_drop(vc);
	free(vc);
}

void verdict_cache_forget(struct verdict_cache *vc)
{
	if (vc)
		verdict_drop(vc);
}

const char *verdict_cache_text(const struct verdict_cache *vc, size_t *len, int *now)
{
	*len = vc && vc->text ? vc->text->len : 0;
	if (now)
		*now = vc && vc->text && vc->text_now;
	return vc && vc->text ? vc->text->text : NULL;
}

static int same_era(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

void *verdict_cache_lookup(struct verdict_cache *vc, const char *raw, size_t len,
                           const char *era)
{
	if (!vc)
		return NULL;
	vc->text_now = 0;
	if (!vc->verdict || !raw || len != vc->bytes->len || !same_era(era, vc->era))
		return NULL;
	return memcmp(raw, vc->bytes->text, len) == 0 ? vc->verdict : NULL;
}

void verdict_cache_keep(struct verdict_cache *vc, const char *raw, size_t len, const char *era,
                        void *verdict, void (*free_fn)(void *))
{
	if (!vc || !raw || len > VERDICT_CACHE_BYTES) {
		if (verdict && free_fn)
			free_fn(verdict);
		return;
	}
	/* The skim kept these bytes already: share them. */
	int shared = vc->text_now && vc->text && vc->text->len == len;
	struct rcbytes *bytes = shared ? rcbytes_ref(vc->text) : rcbytes_new(raw, len);
	char *e = NULL;
	if (!bytes || (era && !(e = strdup(era)))) {
		rcbytes_unref(bytes);
		if (verdict && free_fn)
			free_fn(verdict);
		return;
	}
	verdict_drop(vc);
	vc->verdict = verdict;
	vc->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	vc->free_fn = free_fn;
	vc->bytes = bytes;
	vc->era = e;
}

static int memo_ready(struct verdict_cache *vc)
{
	if (vc->memo)
		return 1;
	vc->memo = contract_memo_new();
	vc->texts = malloc(CONTRACT_MAX_TOOLS * sizeof(*vc->texts));
	vc->spans = malloc(CONTRACT_MAX_TOOLS * sizeof(*vc->spans));
	vc->text_spans = malloc(CONTRACT_MAX_TOOLS * sizeof(*vc->text_spans));
	if (vc->memo && vc->texts && vc->spans && vc->text_spans)
		return 1;
	memo_drop(vc);
	return 0;
}

/* Keeps raw as the text the next listing is skimmed against: bytes (raw's
 * own, held by reference) when given, else a copy. */
static void text_keep(struct verdict_cache *vc, const char *raw, size_t len, long k,
                      struct rcbytes *bytes)
{
	struct rcbytes *t = bytes && bytes->len == len ? rcbytes_ref(bytes) : rcbytes_new(raw, len);
	if (!t)
		return;
	rcbytes_unref(vc->text);
	vc->text = t;
	for (long i = 0; i < k; i++)
		vc->text_spans[i] = (struct jparse_elem){t->text + (vc->spans[i].at - raw),
		                                         vc->spans[i].len, 0};
	vc->nspans = (size_t)k;
	vc->text_now = 1;
}

struct contract_report *verdict_cache_check(struct verdict_cache *vc, const json_t *page,
                                            const char *raw, size_t len, struct rcbytes *bytes,
                                            const struct contract_opts *opts, uint64_t *checked)
{
	const json_t *tools = json_object_get(page, "tools");
	*checked = UINT64_MAX; /* a plain check: every tool examined */
	if (!vc || !json_is_array(tools) || !raw || len > VERDICT_CACHE_BYTES ||
	    json_array_size(tools) > CONTRACT_MAX_TOOLS || !memo_ready(vc))
		return contract_check(&page, 1, opts);
	long k = jparse_elements_since(raw, len, "tools", vc->spans, CONTRACT_MAX_TOOLS,
	                               vc->text ? vc->text->text : NULL, vc->text ? vc->text->len : 0,
	                               vc->text_spans, vc->nspans);
	vc->nspans = 0;
	if (k < 0 || (size_t)k != json_array_size(tools))
		return contract_check(&page, 1, opts);
	for (long i = 0; i < k; i++)
		vc->texts[i] = (struct contract_text){vc->spans[i].at, vc->spans[i].len,
		                                      vc->spans[i].same_as};
	struct contract_report *r = contract_check_memo(page, vc->texts, (size_t)k, opts, vc->memo);
	if (!r)
		return NULL; /* the text (no spans now) and the memo may disagree: no hints next time */
	*checked = contract_memo_rechecked(vc->memo);
	text_keep(vc, raw, len, k, bytes);
	return r;
}

json_t *verdict_cache_report_json(struct verdict_cache *vc, const struct contract_report *r)
{
	return contract_report_json_memo(r, vc ? vc->memo : NULL);
}

/* jreuse: see jreuse.h.
 *
 * A listing is built in four steps, each of which may send it back to the
 * whole parse (jparse_span), which then gives the one answer for the text:
 *   1. the skim finds the result (jparse_last_member: the reply's last
 *      member, as JSON-RPC replies have it) and its tools
 *      (jparse_elements_since: where the text is the last one's bytes,
 *      the tools there are known to be the same without reading them);
 *   2. each tool is the kept value for the same bytes, or parsed alone;
 *   3. the rest of the text, with each tool's bytes replaced by null (the
 *      skeleton), is parsed: that checks every byte outside the tools, and
 *      gives the envelope and the result with an array of nulls;
 *   4. the nulls are replaced by the tools.
 * The text is then JSON exactly when the skeleton and every tool are (a
 * value's text is a value wherever it stands), and the tree is the one
 * jparse builds for it, as long as the tools nest no deeper than jparse
 * allows where they stand (checked in step 2).
 */
#include "proxy/base/jreuse.h"

#include <stdlib.h>
#include <string.h>


struct jreuse {
	struct rcbytes *text;    /* one reference: the last listing's "result" bytes */
	int kept_now;            /* the last jreuse_parse kept its text */
	struct jparse_elem *el;  /* owned: its tools, pointing into text */
	json_t **val;            /* owned references, one per el */
	size_t *nest;            /* each tool's nesting (jparse_nest) */
	size_t n;
	size_t min;              /* smaller texts are parsed whole */
	struct jreuse_stats st;
};

/* One listing being built (steps 1 and 2). */
struct build {
	struct jparse_ref res;   /* the result's bytes, in the text */
	struct jparse_elem *el;  /* owned: the tools, into the text */
	json_t **val;            /* owned references, el[0..nval) */
	size_t *nest;
	size_t n, nval;
};

/* Where a tool stands: inside the reply (1), its result (2), the tools
 * array (3). jparse refuses what nests deeper than JSON_PARSER_MAX_DEPTH. */
#define TOOL_DEPTH 3

struct jreuse *jreuse_new(void)
{
	struct jreuse *r = calloc(1, sizeof(*r));
	if (r)
		r->min = JREUSE_MIN_BYTES;
	return r;
}

void jreuse_set_min(struct jreuse *r, size_t min_bytes)
{
	r->min = min_bytes;
}

static void values_free(json_t **val, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(val[i]);
}

void jreuse_free(struct jreuse *r)
{
	if (!r)
		return;
	values_free(r->val, r->n);
	free(r->val);
	free(r->nest);
	free(r->el);
	rcbytes_unref(r->text);
	free(r);
}

static void build_free(struct build *b)
{
	values_free(b->val, b->nval);
	free(b->val);
	free(b->nest);
	free(b->el);
}

/* Step 1. Room for the last listing's count and half as many more; a list
 * that outgrew it is skimmed again with room for the most elements its
 * bytes can hold (one byte and a comma each). */
static int elements(const struct jreuse *r, struct build *b)
{
	size_t most = b->res.len / 2 + 1, cap = r->n + r->n / 2 + 1024;
	for (;;) {
		if (cap > most)
			cap = most;
		b->el = malloc(cap * sizeof(*b->el));
		if (!b->el)
			return -1;
		long n = jparse_elements_since(b->res.at, b->res.len, "tools", b->el, cap,
		                               r->text ? r->text->text : NULL, r->text ? r->text->len : 0,
		                               r->el, r->n);
		if (n > 0) {
			b->n = (size_t)n;
			return 0;
		}
		free(b->el);
		b->el = NULL;
		if (n == 0 || cap == most)
			return -1; /* no tools (nothing to share), or not a tool list */
		cap = most;
	}
}

/* Step 2: the kept value for the same bytes, else the tool parsed. */
static int values(struct jreuse *r, struct build *b)
{
	b->val = malloc(b->n * sizeof(*b->val));
	b->nest = malloc(b->n * sizeof(*b->nest));
	if (!b->val || !b->nest)
		return -1;
	for (size_t i = 0; i < b->n; i++) {
		size_t same = b->el[i].same_as;
		if (same) {
			b->val[i] = json_incref(r->val[same - 1]);
			b->nest[i] = r->nest[same - 1];
		} else {
			b->val[i] = jparse_nest(b->el[i].at, b->el[i].len, 1, &b->nest[i]);
			if (!b->val[i])
				return -1;
		}
		b->nval = i + 1;
		if (b->nest[i] + TOOL_DEPTH > JSON_PARSER_MAX_DEPTH)
			return -1;
	}
	return 0;
}

/* Steps 3 and 4: the tree, or NULL. */
static json_t *assemble(const char *buf, size_t len, const struct build *b)
{
	size_t tools = 0;
	for (size_t i = 0; i < b->n; i++)
		tools += b->el[i].len;
	size_t slen = len - tools + 4 * b->n;
	char *s = malloc(slen), *w = s;
	if (!s)
		return NULL;
	const char *p = buf;
	for (size_t i = 0; i < b->n; i++) {
		memcpy(w, p, (size_t)(b->el[i].at - p));
		w += b->el[i].at - p;
		memcpy(w, "null", 4);
		w += 4;
		p = b->el[i].at + b->el[i].len;
	}
	memcpy(w, p, (size_t)(buf + len - p));
	json_t *tree = jparse(s, slen, 0);
	free(s);
	json_t *arr = json_object_get(json_object_get(tree, "result"), "tools");
	if (!json_is_array(arr) || json_array_size(arr) != b->n) {
		json_decref(tree);
		return NULL;
	}
	for (size_t i = 0; i < b->n; i++) {
		if (!json_is_null(json_array_get(arr, i)) || json_array_set(arr, i, b->val[i]) < 0) {
			json_decref(tree);
			return NULL;
		}
	}
	return tree;
}

/* The listing just built becomes the one kept, its bytes a new copy that
 * others may share (jreuse_kept). 0, or -1 (out of memory: the old one
 * stays). */
static int keep(struct jreuse *r, struct build *b)
{
	struct rcbytes *text = rcbytes_new(b->res.at, b->res.len);
	if (!text)
		return -1;
	for (size_t i = 0; i < b->n; i++) {
		b->el[i].at = text->text + (b->el[i].at - b->res.at);
		b->el[i].same_as = 0;
	}
	values_free(r->val, r->n);
	free(r->val);
	free(r->nest);
	free(r->el);
	rcbytes_unref(r->text);
	r->text = text;
	r->el = b->el;
	r->val = b->val;
	r->nest = b->nest;
	r->n = b->n;
	*b = (struct build){0};
	return 0;
}

static json_t *whole(struct jreuse *r, const char *buf, size_t len, int any,
                     struct jparse_span *span)
{
	r->st.whole++;
	return jparse_span(buf, len, any, span);
}

json_t *jreuse_parse(struct jreuse *r, const char *buf, size_t len, int any,
                     struct jparse_span *span)
{
	struct build b = {0};
	r->kept_now = 0;
	if (len < r->min || (span && strcmp(span->name, "result") != 0) ||
	    jparse_last_member(buf, len, "result", &b.res) < 0 || elements(r, &b) < 0)
		return whole(r, buf, len, any, span);
	json_t *tree = values(r, &b) == 0 ? assemble(buf, len, &b) : NULL;
	if (!tree) {
		build_free(&b);
		return whole(r, buf, len, any, span);
	}
	size_t parsed = 0;
	for (size_t i = 0; i < b.n; i++)
		parsed += b.el[i].same_as == 0;
	r->st.listings++;
	r->st.parsed += parsed;
	r->st.reused += b.n - parsed;
	if (span) {
		span->at = b.res.at;
		span->len = b.res.len;
	}
	if (keep(r, &b) < 0)
		build_free(&b);
	else
		r->kept_now = 1;
	return tree;
}

struct rcbytes *jreuse_kept(const struct jreuse *r)
{
	return r->kept_now ? rcbytes_ref(r->text) : NULL;
}

void jreuse_stats(const struct jreuse *r, struct jreuse_stats *out)
{
	*out = r->st;
}

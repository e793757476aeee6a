/* Fuzz target for the tool-definition contract checker (checks/contract.c).
 *
 * Input: one JSON text, parsed as the proxy parses a tools/list reply
 * (JSON_DECODE_ANY, no NUL in strings). It is checked
 *  - as one page, with and without spec_only, with no era and with era
 *    "2026-07-28" (and once with opts NULL);
 *  - when it is an array, as its first 1..3 elements taken as pages;
 *  - as the same page twice (every named tool repeats, a nextCursor loops).
 * Each report goes through every accessor, contract_report_json,
 * contract_report_text and contract_filter of every page; every result is
 * freed (ASan's leak check). contract_resolve_ref and contract_cursor_loop
 * are driven on the input too.
 *
 * Properties checked, abort() on any violation:
 *  1. contract_check() of >= 1 page never fails (no allocation fails here).
 *  2. Counts agree: findings kept <= CONTRACT_MAX_FINDINGS <= problems +
 *     warnings when cut, = otherwise; passed == no problem; 0 <= score <= 1;
 *     failed <= tools <= CONTRACT_MAX_TOOLS.
 *  3. Every finding is well formed: a code contract_code_rule() knows, a
 *     one-line message, problem/spec set as the code's rule and spec_only
 *     say, a valid RFC 6901 pointer whose parent (at least) resolves in the
 *     pages as documented (bare arrays read as {"tools": array}, several
 *     pages through their index), tool-level findings pointing inside their
 *     tool and carrying its name.
 *  4. spec_only only moves usability problems to warnings: same findings.
 *  5. The JSON report matches the accessors (tools, problems per place,
 *     passed, truncated) and serialises; the text report has its summary.
 *  6. contract_filter() keeps exactly the tools not failed, in order, and
 *     the other members of the page; checking the filtered page again
 *     finds no failed tool (when every tool was examined).
 *  7. A page given twice: one duplicate-name per named tool of the second
 *     copy, and a nextCursor makes exactly one cursor-loop and a truncated
 *     report.
 *  8. contract_resolve_ref("#" + pointer) finds the very node the pointer
 *     was built from ('%' written as %25), "#" the root.
 *  9. Through a memo (contract_check_memo, tools located in the text by
 *     jparse_elements), the report is the full check's, finding for
 *     finding, JSON and text alike: on the input, on it again under every
 *     option (all replayed), and on its tools rotated by one and re-dumped
 *     (found by their text at other places).
 *
 * The module bounds its work (contract.h, BOUNDS); deep and huge inputs
 * are in the corpus (big-*) to keep those bounds honest.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=contract) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checks/contract.h"
#include "proxy/base/jparse.h"
#include "tests/fuzz/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *mut(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

#define ERA_MODERN "2026-07-28"
#define MAX_TRY_PAGES 3

/* ---- pointers ------------------------------------------------------------------ */

/* Decodes the RFC 6901 token at *p ("/..."), moving *p past it. Returns a
 * malloc'd token (length in *len), or NULL on a bad escape. */
static char *take_token(const char **p, size_t *len)
{
	const char *s = *p + 1;
	size_t n = 0, cap = strcspn(s, "/") + 1;
	char *tok = malloc(cap);

	CHECK(tok != NULL);
	for (; *s && *s != '/'; s++) {
		char c = *s;
		if (c == '~') {
			if (s[1] != '0' && s[1] != '1') {
				free(tok);
				return NULL;
			}
			c = s[1] == '0' ? '~' : '/';
			s++;
		}
		tok[n++] = c;
	}
	tok[n] = '\0';
	*len = n;
	*p = s;
	return tok;
}

static const json_t *step(const json_t *cur, const char *tok, size_t n)
{
	if (json_is_object(cur))
		return json_object_getn(cur, tok, n);
	if (!json_is_array(cur) || n == 0 || n > 9 || (n > 1 && tok[0] == '0'))
		return NULL;
	size_t idx = 0;
	for (size_t i = 0; i < n; i++) {
		if (tok[i] < '0' || tok[i] > '9')
			return NULL;
		idx = idx * 10 + (size_t)(tok[i] - '0');
	}
	return json_array_get(cur, idx);
}

/* Resolves a finding's pointer in the pages (see contract.h, POINTERS).
 * When parent is set, the last token is left out. NULL when it does not
 * resolve. *ok is cleared on a syntax error. */
static const json_t *resolve(const json_t *const pages[], size_t npages, const char *ptr,
                             int parent, int *ok)
{
	const char *p = ptr;
	const json_t *cur;
	int at_page;

	if (*p != '\0' && *p != '/') {
		*ok = 0;
		return NULL;
	}
	if (parent) {
		const char *last = strrchr(ptr, '/');
		if (last == NULL)
			return NULL; /* "" has no parent */
	}
	const char *end = parent ? strrchr(ptr, '/') : ptr + strlen(ptr);
	if (npages == 1) {
		cur = pages[0];
		at_page = 1;
	} else {
		cur = NULL; /* the array of pages */
		at_page = 0;
	}
	while (p < end) {
		size_t n;
		char *tok = take_token(&p, &n);
		if (tok == NULL) {
			*ok = 0;
			return NULL;
		}
		if (cur == NULL && !at_page) {
			/* index into the pages */
			size_t idx = 0;
			int digits = n > 0 && n <= 9 && !(n > 1 && tok[0] == '0');
			for (size_t i = 0; digits && i < n; i++)
				digits = tok[i] >= '0' && tok[i] <= '9';
			for (size_t i = 0; digits && i < n; i++)
				idx = idx * 10 + (size_t)(tok[i] - '0');
			free(tok);
			if (!digits || idx >= npages)
				return NULL;
			cur = pages[idx];
			at_page = 1;
			continue;
		}
		if (at_page && json_is_array(cur) && strcmp(tok, "tools") == 0) {
			/* a bare tools array reads as {"tools": array} */
			free(tok);
			at_page = 0;
			continue;
		}
		at_page = 0;
		cur = step(cur, tok, n);
		free(tok);
		if (cur == NULL)
			return NULL;
	}
	if (cur == NULL && !at_page)
		return NULL; /* "" with several pages: the array itself, fine */
	return cur;
}

static int one_line(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

/* ---- one report -------------------------------------------------------------- */

static size_t page_tools(const json_t *page)
{
	const json_t *t = json_is_array(page) ? page : json_object_get(page, "tools");
	return json_array_size(t);
}

static size_t count_code(const struct contract_report *r, const char *code, size_t page)
{
	size_t n = 0;
	for (size_t i = 0; i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		n += strcmp(f->code, code) == 0 && f->page == page;
	}
	return n;
}

static void check_finding(const struct contract_finding *f, const json_t *const pages[],
                          size_t npages, int spec_only)
{
	CHECK(f->code && f->message && f->pointer);
	const char *rule = contract_code_rule(f->code);
	CHECK(rule != NULL);
	CHECK(f->spec == (strcmp(rule, "spec") == 0));
	CHECK(f->problem == (strcmp(rule, "spec") == 0 ||
	                     (strcmp(rule, "usability") == 0 && !spec_only)));
	CHECK(f->message[0] && one_line(f->message));
	CHECK(f->page < npages && f->page < CONTRACT_MAX_PAGES);
	CHECK(f->tool_index >= -1);

	int ok = 1;
	const json_t *at = resolve(pages, npages, f->pointer, 0, &ok);
	CHECK(ok);
	if (at == NULL) {
		/* absent: its parent must be there (or the pointer is a page) */
		const json_t *up = resolve(pages, npages, f->pointer, 1, &ok);
		CHECK(ok);
		CHECK(up != NULL || npages > 1);
	}

	/* Tool findings point into their tool: "/tools/i..." or "/p/tools/i...". */
	if (f->tool_index >= 0) {
		char prefix[64];
		if (npages > 1)
			snprintf(prefix, sizeof prefix, "/%zu/tools/%ld", f->page, f->tool_index);
		else
			snprintf(prefix, sizeof prefix, "/tools/%ld", f->tool_index);
		size_t pl = strlen(prefix);
		CHECK(strncmp(f->pointer, prefix, pl) == 0 &&
		      (f->pointer[pl] == '\0' || f->pointer[pl] == '/'));
		const json_t *page = pages[f->page];
		const json_t *tools = json_is_array(page) ? page : json_object_get(page, "tools");
		const json_t *tool = json_array_get(tools, (size_t)f->tool_index);
		const json_t *name = json_object_get(tool, "name");
		if (f->tool != NULL)
			CHECK(json_is_string(name) && strcmp(json_string_value(name), f->tool) == 0);
		else
			CHECK(!json_is_string(name) || json_string_length(name) == 0);
	}
}

/* Counts and every finding; returns the number of problems kept. */
static size_t check_counts(const struct contract_report *r, const json_t *const pages[],
                           size_t npages, int spec_only)
{
	size_t nf = contract_report_nfindings(r), probs = 0, warns = 0;

	CHECK(nf <= CONTRACT_MAX_FINDINGS);
	CHECK(contract_report_finding(r, nf) == NULL);
	for (size_t i = 0; i < nf; i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		CHECK(f != NULL);
		check_finding(f, pages, npages, spec_only);
		if (f->problem)
			probs++;
		else
			warns++;
	}
	size_t np = contract_report_nproblems(r), nw = contract_report_nwarnings(r);
	CHECK(np >= probs && nw >= warns);
	if (nf < CONTRACT_MAX_FINDINGS)
		CHECK(np == probs && nw == warns);
	CHECK(contract_report_passed(r) == (np == 0));
	size_t nt = contract_report_ntools(r), nfail = contract_report_nfailed(r);
	CHECK(nt <= CONTRACT_MAX_TOOLS && nfail <= nt);
	double score = contract_report_score(r);
	CHECK(score >= 0.0 && score <= 1.0);
	CHECK(nt > 0 || score == 0.0);
	if (nfail > 0)
		CHECK(!contract_report_passed(r));
	size_t total = 0;
	for (size_t p = 0; p < npages && p < CONTRACT_MAX_PAGES; p++)
		total += page_tools(pages[p]);
	if (total > CONTRACT_MAX_TOOLS || npages > CONTRACT_MAX_PAGES)
		CHECK(contract_report_truncated(r));
	if (total <= CONTRACT_MAX_TOOLS && npages <= CONTRACT_MAX_PAGES)
		CHECK(nt == total);
	return probs;
}

static void check_json(const struct contract_report *r)
{
	json_t *j = contract_report_json(r);
	CHECK(j != NULL);
	const json_t *tools = json_object_get(j, "tools");
	CHECK(json_array_size(tools) == contract_report_ntools(r));
	CHECK(json_is_true(json_object_get(j, "passed")) == contract_report_passed(r));
	CHECK(json_is_true(json_object_get(j, "truncated")) == contract_report_truncated(r));
	CHECK(json_is_number(json_object_get(j, "score")));

	/* Every kept finding sits once in its place. */
	size_t nf = contract_report_nfindings(r), lp = 0, lw = 0, tp = 0, tw = 0;
	for (size_t i = 0; i < nf; i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		if (f->list_level)
			*(f->problem ? &lp : &lw) += 1;
		else
			*(f->problem ? &tp : &tw) += 1;
	}
	CHECK(json_array_size(json_object_get(j, "problems")) == lp);
	CHECK(json_array_size(json_object_get(j, "warnings")) == lw);
	size_t sp = 0, sw = 0;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		sp += json_array_size(json_object_get(t, "problems"));
		sw += json_array_size(json_object_get(t, "warnings"));
	}
	CHECK(sp == tp && sw == tw);
	char *dump = json_dumps(j, JSON_COMPACT);
	CHECK(dump != NULL);
	json_t *back = json_loads(dump, 0, NULL);
	CHECK(back != NULL && json_equal(back, j));
	json_decref(back);
	free(dump);
	json_decref(j);

	char *text = contract_report_text(r);
	CHECK(text != NULL);
	CHECK(strncmp(text, "contract: PASSED", 16) == 0 || strncmp(text, "contract: FAILED", 16) == 0);
	free(text);
}

/* contract_filter on page p; with recheck, the filtered page is checked
 * again with the same options and must have no failed tool. */
static void check_filter(const struct contract_report *r, const json_t *page, size_t p,
                         const struct contract_opts *o, int recheck)
{
	const json_t *tools = json_is_array(page) ? page : json_object_get(page, "tools");
	json_t *f = contract_filter(page, p, r);

	if (!json_is_array(tools)) {
		CHECK(f == NULL);
		return;
	}
	CHECK(f != NULL);
	const json_t *kept = json_is_array(page) ? f : json_object_get(f, "tools");
	CHECK(json_is_array(kept));
	size_t k = 0;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		if (contract_report_tool_failed(r, p, i))
			continue;
		CHECK(json_equal(json_array_get(kept, k), json_array_get(tools, i)));
		k++;
	}
	CHECK(k == json_array_size(kept));
	if (json_is_object(page)) {
		CHECK(json_object_size(f) == json_object_size(page));
		const char *key;
		json_t *v;
		json_object_foreach(mut(page), key, v) {
			if (strcmp(key, "tools") != 0)
				CHECK(json_equal(v, json_object_get(f, key)));
		}
	}
	if (recheck) {
		const json_t *one[1] = {f};
		struct contract_report *again = contract_check(one, 1, o);
		CHECK(again != NULL);
		CHECK(contract_report_nfailed(again) == 0);
		contract_report_free(again);
	}
	json_decref(f);
}

static struct contract_report *run(const json_t *const pages[], size_t npages,
                                   const struct contract_opts *o)
{
	struct contract_report *r = contract_check(pages, npages, o);
	CHECK(r != NULL);
	check_counts(r, pages, npages, o != NULL && o->spec_only);
	check_json(r);
	CHECK(contract_report_tool_failed(r, CONTRACT_MAX_PAGES, 0) == 0);
	for (size_t p = 0; p < npages && p < CONTRACT_MAX_PAGES; p++) {
		CHECK(contract_report_tool_failed(r, p, page_tools(pages[p])) == 0);
		check_filter(r, pages[p], p, o,
		             npages == 1 && !contract_report_truncated(r) &&
		                 page_tools(pages[p]) <= CONTRACT_MAX_TOOLS);
	}
	return r;
}

/* Same findings, usability problems demoted. */
static void same_findings(const struct contract_report *a, const struct contract_report *b)
{
	size_t n = contract_report_nfindings(a);
	CHECK(n == contract_report_nfindings(b));
	CHECK(contract_report_nproblems(a) + contract_report_nwarnings(a) ==
	      contract_report_nproblems(b) + contract_report_nwarnings(b));
	CHECK(contract_report_nproblems(b) <= contract_report_nproblems(a));
	for (size_t i = 0; i < n; i++) {
		const struct contract_finding *x = contract_report_finding(a, i);
		const struct contract_finding *y = contract_report_finding(b, i);
		CHECK(strcmp(x->code, y->code) == 0 && strcmp(x->pointer, y->pointer) == 0);
		CHECK(!y->problem || x->problem);
	}
}

/* ---- $ref and cursors ---------------------------------------------------------- */

struct walk {
	const json_t *root;
	char *ref;          /* "#" + pointer so far */
	size_t len, cap;
	unsigned left;      /* nodes still to try */
};

static void ref_put(struct walk *w, const char *s, size_t n)
{
	if (w->len + n + 1 > w->cap) {
		size_t cap = (w->len + n + 1) * 2;
		char *p = realloc(w->ref, cap);
		CHECK(p != NULL);
		w->ref = p;
		w->cap = cap;
	}
	memcpy(w->ref + w->len, s, n);
	w->len += n;
	w->ref[w->len] = '\0';
}

static void ref_walk(struct walk *w, const json_t *node, unsigned depth)
{
	if (w->left == 0 || depth > 64)
		return;
	w->left--;
	CHECK(contract_resolve_ref(w->root, w->ref) == node);
	size_t base = w->len;
	if (json_is_object(node)) {
		const char *key;
		json_t *v;
		json_object_foreach(mut(node), key, v) {
			ref_put(w, "/", 1);
			for (const char *k = key; *k; k++) {
				if (*k == '~')
					ref_put(w, "~0", 2);
				else if (*k == '/')
					ref_put(w, "~1", 2);
				else if (*k == '%')
					ref_put(w, "%25", 3);
				else
					ref_put(w, k, 1);
			}
			ref_walk(w, v, depth + 1);
			w->len = base;
			w->ref[base] = '\0';
			if (w->left == 0)
				return;
		}
	} else if (json_is_array(node)) {
		for (size_t i = 0; i < json_array_size(node) && w->left; i++) {
			char idx[32];
			int n = snprintf(idx, sizeof idx, "/%zu", i);
			ref_put(w, idx, (size_t)n);
			ref_walk(w, json_array_get(node, i), depth + 1);
			w->len = base;
			w->ref[base] = '\0';
		}
	}
}

static void check_refs(const json_t *v)
{
	struct walk w = {.root = v, .left = 256};
	ref_put(&w, "#", 1);
	ref_walk(&w, v, 0);
	free(w.ref);
	CHECK(contract_resolve_ref(v, "http://example.com/schema#/a") == NULL);
	CHECK(contract_resolve_ref(v, "#anchor") == NULL);
}

static void check_cursors(const json_t *v)
{
	const char *cur[8] = {0};
	size_t n = 0;
	for (size_t i = 0; json_is_array(v) && i < json_array_size(v) && n < 8; i++) {
		const json_t *c = json_object_get(json_array_get(v, i), "nextCursor");
		cur[n++] = json_string_value(c); /* NULL entries are skipped */
	}
	long loop = contract_cursor_loop(cur, n);
	CHECK(loop >= -1 && loop < (long)n);
	if (loop >= 0) {
		CHECK(cur[loop] != NULL);
		int seen = 0;
		for (long j = 0; j < loop; j++)
			seen |= cur[j] != NULL && strcmp(cur[j], cur[loop]) == 0;
		CHECK(seen);
	}
	CHECK(contract_cursor_loop(NULL, 3) == -1);
}

/* ---- the memo ------------------------------------------------------------------------ */

static void same_report(const struct contract_report *a, const struct contract_report *b,
                        struct contract_memo *m)
{
	CHECK(contract_report_nfindings(a) == contract_report_nfindings(b));
	CHECK(contract_report_nproblems(a) == contract_report_nproblems(b));
	CHECK(contract_report_nwarnings(a) == contract_report_nwarnings(b));
	CHECK(contract_report_ntools(a) == contract_report_ntools(b));
	CHECK(contract_report_nfailed(a) == contract_report_nfailed(b));
	CHECK(contract_report_truncated(a) == contract_report_truncated(b));
	for (size_t i = 0; i < contract_report_nfindings(a); i++) {
		const struct contract_finding *x = contract_report_finding(a, i);
		const struct contract_finding *y = contract_report_finding(b, i);
		CHECK(strcmp(x->code, y->code) == 0 && strcmp(x->pointer, y->pointer) == 0 &&
		      strcmp(x->message, y->message) == 0 && x->problem == y->problem &&
		      x->tool_index == y->tool_index && x->list_level == y->list_level &&
		      !x->tool == !y->tool && (!x->tool || strcmp(x->tool, y->tool) == 0));
	}
	for (size_t i = 0; i <= contract_report_ntools(a); i++)
		CHECK(contract_report_tool_failed(a, 0, i) == contract_report_tool_failed(b, 0, i));
	json_t *ja = contract_report_json(a), *jb = contract_report_json_memo(b, m);
	CHECK(ja && jb && json_equal(ja, jb));
	json_decref(ja);
	json_decref(jb);
	char *ta = contract_report_text(a), *tb = contract_report_text(b);
	CHECK(ta && tb && strcmp(ta, tb) == 0);
	free(ta);
	free(tb);
}

/* text (a result object's) through m and in full; 0 when the memo could
 * not be fed (no tools array found in the text). */
static int memo_once(struct contract_memo *m, const char *text, size_t len,
                     const struct contract_opts *o)
{
	static struct jparse_elem el[CONTRACT_MAX_TOOLS];
	static struct contract_text tx[CONTRACT_MAX_TOOLS];
	long n = jparse_elements(text, len, "tools", el, CONTRACT_MAX_TOOLS);
	json_t *page = jparse(text, len, 0);
	if (n < 0 || !page) {
		json_decref(page);
		return 0;
	}
	for (long i = 0; i < n; i++)
		tx[i] = (struct contract_text){el[i].at, el[i].len, 0};
	const json_t *one[1] = {page};
	struct contract_report *full = contract_check(one, 1, o);
	struct contract_report *inc = contract_check_memo(page, tx, (size_t)n, o, m);
	CHECK(full && inc);
	same_report(full, inc, m);
	contract_report_free(full);
	contract_report_free(inc);
	json_decref(page);
	return 1;
}

static void check_memo(const uint8_t *data, size_t size, const json_t *v,
                       const struct contract_opts opts[4])
{
	struct contract_memo *m = contract_memo_new();
	CHECK(m != NULL);
	if (memo_once(m, (const char *)data, size, &opts[0])) {
		for (int i = 0; i < 4; i++)
			memo_once(m, (const char *)data, size, &opts[i]);
		json_t *rot = json_deep_copy(v);
		json_t *tools = json_object_get(rot, "tools");
		if (json_array_size(tools) > 1) {
			json_array_append(tools, json_array_get(tools, 0));
			json_array_remove(tools, 0);
		}
		char *text = json_dumps(rot, JSON_COMPACT);
		if (text)
			memo_once(m, text, strlen(text), &opts[size % 4]);
		free(text);
		json_decref(rot);
	}
	contract_memo_free(m);
}

/* ---- entry ------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t err;
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, &err);

	CHECK(contract_check(NULL, 1, NULL) == NULL);
	contract_report_free(NULL);
	CHECK(contract_code_rule(NULL) == NULL && contract_code_rule("no-such-code") == NULL);
	if (v == NULL)
		return 0;

	/* One page, four ways (and opts NULL, the defaults). */
	const json_t *one[1] = {v};
	struct contract_opts opts[4] = {
		{NULL, 0}, {NULL, 1}, {ERA_MODERN, 0}, {ERA_MODERN, 1},
	};
	struct contract_report *rs[4];
	for (int i = 0; i < 4; i++)
		rs[i] = run(one, 1, &opts[i]);
	same_findings(rs[0], rs[1]);
	same_findings(rs[2], rs[3]);
	struct contract_report *dflt = contract_check(one, 1, NULL);
	CHECK(dflt != NULL);
	CHECK(contract_report_nfindings(dflt) == contract_report_nfindings(rs[0]) &&
	      contract_report_nproblems(dflt) == contract_report_nproblems(rs[0]));
	contract_report_free(dflt);
	for (int i = 0; i < 4; i++)
		contract_report_free(rs[i]);

	/* The elements of an array as 1..3 pages. */
	if (json_is_array(v) && json_array_size(v) > 0) {
		const json_t *pages[MAX_TRY_PAGES];
		size_t n = json_array_size(v) < MAX_TRY_PAGES ? json_array_size(v) : MAX_TRY_PAGES;
		for (size_t i = 0; i < n; i++)
			pages[i] = json_array_get(v, i);
		/* which options: from the input, so every mix gets tried */
		struct contract_opts *o = &opts[size % 4];
		struct contract_report *r = run(pages, n, o);
		contract_report_free(r);
		check_cursors(v);
	}

	/* The same page twice. */
	const json_t *twice[2] = {v, v};
	struct contract_report *r = run(twice, 2, &opts[(size / 4) % 2]);
	const json_t *next = json_object_get(v, "nextCursor");
	if (json_is_string(next) && json_string_length(next) > 0) {
		CHECK(count_code(r, "cursor-loop", 1) == 1);
		CHECK(contract_report_truncated(r));
	}
	if (!contract_report_truncated(r) &&
	    contract_report_nproblems(r) + contract_report_nwarnings(r) < CONTRACT_MAX_FINDINGS) {
		const json_t *tools = json_is_array(v) ? v : json_object_get(v, "tools");
		size_t named = 0;
		for (size_t i = 0; i < json_array_size(tools); i++) {
			const json_t *name = json_object_get(json_array_get(tools, i), "name");
			named += json_is_string(name) && json_string_length(name) > 0;
		}
		CHECK(count_code(r, "duplicate-name", 1) == named);
	}
	contract_report_free(r);

	if (json_is_object(v))
		check_memo(data, size, v, opts);
	check_refs(v);
	json_decref(v);
	return 0;
}

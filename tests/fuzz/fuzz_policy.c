/* Fuzz target for the policy loader and matcher (policy/policy_load.c,
 * policy/policy.c).
 *
 * Input: JSON texts one after the other, then raw bytes:
 *   POLICY  REQUEST  TOOLS  [BASELINE]  TAIL
 * POLICY is a policy object (conf/README-policy.md), REQUEST a JSON-RPC
 * message (a tools/call: {"method":"tools/call","params":{"name":..,
 * "arguments":..}}), TOOLS and BASELINE tool lists with annotations (a bare
 * array, {"tools":[...]} or a whole tools/list response). TAIL is what is
 * left after the JSON texts (all of the input when POLICY does not parse):
 * split at its first newline into a pattern and a subject (the pattern is
 * tried as a glob and as a regular expression), and used as a JSON
 * Pointer.
 *
 * The policy is loaded with several error buffers; a loaded one judges the
 * request as it is, and as the methods, tools, clients and upstreams below
 * (the way proxy/hooks/hook_policy.c asks: calls with the tool's hints as listed
 * and as in the baseline, and the no-argument listing question), counts
 * the decisions and reads the statistics back; policy_change_word,
 * policy_hints_* , policy_glob and policy_pointer_get are driven directly.
 * Everything is freed (ASan's leak check).
 *
 * Properties checked, abort() on any violation:
 *  1. policy_load fails exactly when it reports an error, whatever the
 *     error buffer (NULL, 1 byte, small, large, always NUL-terminated), and
 *     loads the same policy twice.
 *  2. Decisions are coherent: action allow/deny/hide/log; a dry run never
 *     denies or hides and says what it would have done; the tag matches the
 *     action; an unlisted tool with unknown_tools "deny" is refused by the
 *     pseudo-rule; a method no rule names passes with no rule; the
 *     statistics slot names the deciding rule. Counting keeps matched ==
 *     allowed + denied + logged and dry_run <= logged per rule.
 *  3. Effective hints: read-only means non-destructive and idempotent; a
 *     baseline only ever makes a tool less safe.
 *  4. policy_change_word answers the same whatever the word buffer, writes
 *     a NUL-terminated word that fits, and uses the built-in list when the
 *     policy has no change_words.
 *  5. policy_glob: "*" matches anything, a pattern with every byte escaped
 *     matches exactly its text, and (on short inputs) the result equals a
 *     straightforward dynamic-programming matcher of the documented rules.
 *  6. policy_pointer_get finds every node of the request through a pointer
 *     built from its path (~0 ~1 escapes), and agrees with a reference
 *     resolver on the raw TAIL.
 *  7. The TAIL's glob pattern, as the "matches" of a rule, loads or is
 *     refused with one error line located at it.
 *  8. policy_memo_call decides every tools/call exactly as policy_eval,
 *     first (memo miss) and second time (hit), and with the arguments
 *     given as the call's params (looked up only when a rule needs them).
 *
 * Regular expressions. policy_load refuses "matches" patterns that glibc's
 * regcomp would take seconds and gigabytes to compile (interval bounds
 * above 255, stacked repetitions, loops over what matches the empty
 * string, too many nodes once unrolled, long chains of what matches the
 * empty string: policy_load.c, conf/README-policy.md). Nothing is skipped
 * here any more: every pattern the loader accepts is compiled under
 * libFuzzer's -timeout and -rss_limit_mb, so an accepted pattern that is
 * still too slow is a finding (corpus files timeout-regex-* hold the
 * patterns that used to hang, now refused).
 *
 * Built with libFuzzer (make fuzz-run FUZZ=policy) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/policy.h"
#include "tests/fuzz/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *mut(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

/* The next JSON text at data[*pos..size), skipping blanks; *pos moves past
 * it. NULL when nothing (more) parses; *pos is then left alone. */
static json_t *next_value(const uint8_t *data, size_t size, size_t *pos)
{
	json_error_t err;
	size_t p = *pos;

	while (p < size && data[p] && strchr(" \t\r\n", data[p]))
		p++;
	if (p >= size)
		return NULL;
	json_t *v = json_loadb((const char *)data + p, size - p,
	                       JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &err);
	if (v == NULL)
		return NULL;
	*pos = p + (err.position > 0 ? (size_t)err.position : 1);
	return v;
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	CHECK(s != NULL);
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* ---- loading ------------------------------------------------------------------ */

static int lines_ok(const char *err, size_t cap)
{
	size_t n = strlen(err);
	if (n >= cap)
		return 0;
	/* One error per line: no empty line. */
	for (size_t i = 0; i + 1 < n; i++)
		if (err[i] == '\n' && err[i + 1] == '\n')
			return 0;
	return 1;
}

static struct policy *load_all_ways(const json_t *conf)
{
	static const size_t caps[] = {1, 2, 17, 100, 300};
	char err[8192], small[300];

	struct policy *p = policy_load(conf, "$.policy", err, sizeof err);
	CHECK(lines_ok(err, sizeof err));
	if (p == NULL)
		CHECK(err[0] != '\0');
	else
		CHECK(err[0] == '\0');

	struct policy *q = policy_load(conf, NULL, NULL, 0);
	CHECK((q == NULL) == (p == NULL));
	if (q != NULL) {
		CHECK(policy_nrules(q) == policy_nrules(p));
		CHECK(policy_default(q) == policy_default(p));
		CHECK(policy_dry_run(q) == policy_dry_run(p));
		CHECK(policy_unknown_tools(q) == policy_unknown_tools(p));
		CHECK(policy_may_hide(q) == policy_may_hide(p));
	}
	policy_free(q);
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
		memset(small, 'x', sizeof small);
		q = policy_load(conf, "$", small, caps[i]);
		CHECK((q == NULL) == (p == NULL));
		CHECK(memchr(small, '\0', caps[i]) != NULL);
		if (q == NULL && caps[i] > 1)
			CHECK(small[0] != '\0');
		policy_free(q);
	}
	return p;
}

/* ---- decisions ------------------------------------------------------------------ */

static const json_t *tools_of(const json_t *doc)
{
	if (json_is_array(doc))
		return doc;
	const json_t *t = json_object_get(doc, "tools");
	if (json_is_array(t))
		return t;
	t = json_object_get(json_object_get(doc, "result"), "tools");
	return json_is_array(t) ? t : NULL;
}

/* The annotations of the first tool named name in tools, or NULL with
 * *found cleared. */
static const json_t *find_tool(const json_t *tools, const char *name, int *found)
{
	*found = 0;
	for (size_t i = 0; name && i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		const char *n = json_string_value(json_object_get(t, "name"));
		if (n && strcmp(n, name) == 0) {
			*found = 1;
			return json_object_get(t, "annotations");
		}
	}
	return NULL;
}

static void check_hints(const struct policy_hints *h, const struct policy_hints *b)
{
	struct policy_hints e, alone;
	policy_hints_effective(h, b, &e);
	CHECK(e.read_only == 0 || e.read_only == 1);
	CHECK(e.destructive == 0 || e.destructive == 1);
	CHECK(e.idempotent == 0 || e.idempotent == 1);
	CHECK(e.open_world == 0 || e.open_world == 1);
	if (e.read_only)
		CHECK(!e.destructive && e.idempotent);
	policy_hints_effective(h, NULL, &alone);
	/* a baseline never makes a tool look safer */
	CHECK(e.read_only <= alone.read_only && e.idempotent <= alone.idempotent);
	CHECK(e.destructive >= alone.destructive && e.open_world >= alone.open_world);
	if (h == NULL) {
		CHECK(!alone.read_only && alone.destructive && !alone.idempotent && alone.open_world);
	}
}

static void check_decision(struct policy *p, const struct policy_input *in,
                           const struct policy_decision *d)
{
	size_t nrules = policy_nrules(p);
	int is_call = in->method && strcmp(in->method, "tools/call") == 0;

	CHECK(d->action >= POLICY_ALLOW && d->action <= POLICY_LOG);
	CHECK(d->reason != NULL && d->reason[0] != '\0');
	CHECK(d->stat >= -1 && (size_t)(d->stat + 1) <= nrules + 2);
	CHECK(d->dry_run_would == POLICY_NONE || d->dry_run_would == POLICY_DENY ||
	      d->dry_run_would == POLICY_HIDE);
	if (d->dry_run_would != POLICY_NONE)
		CHECK(d->action == POLICY_LOG);
	if (policy_dry_run(p))
		CHECK(d->action != POLICY_DENY && d->action != POLICY_HIDE);
	CHECK(strcmp(policy_action_str(d->action), "none") != 0);

	if (d->rule == NULL) {
		CHECK(!is_call && d->action == POLICY_ALLOW && d->stat == -1 && d->tag == NULL);
		return;
	}
	CHECK(d->stat >= 0);
	struct policy_rule_stats st;
	CHECK(policy_stats(p, (size_t)d->stat, &st) == 0);
	CHECK(st.rule != NULL && strcmp(st.rule, d->rule) == 0);
	if (is_call && (!in->tool_known || !in->tool) && policy_unknown_tools(p) == POLICY_UNKNOWN_DENY)
		CHECK(strcmp(d->rule, POLICY_RULE_UNKNOWN) == 0);
	if (strcmp(d->rule, POLICY_RULE_DEFAULT) == 0)
		CHECK(is_call && (size_t)d->stat == nrules);
	if (strcmp(d->rule, POLICY_RULE_UNKNOWN) == 0)
		CHECK(is_call && (size_t)d->stat == nrules + 1);

	switch (d->action) {
	case POLICY_ALLOW:
		CHECK(d->tag == NULL);
		break;
	case POLICY_DENY:
	case POLICY_HIDE:
		CHECK(d->tag && strncmp(d->tag, "policy:", 7) == 0 && strcmp(d->tag + 7, d->rule) == 0);
		break;
	case POLICY_LOG:
		if (d->dry_run_would != POLICY_NONE)
			CHECK(d->tag && strncmp(d->tag, "dry-run:", 8) == 0 &&
			      strcmp(d->tag + 8, d->rule) == 0);
		else
			CHECK(d->tag && strcmp(d->tag, d->rule) == 0);
		break;
	default:
		CHECK(0);
	}
}

static int same_decision(const struct policy_decision *a, const struct policy_decision *b)
{
	return a->action == b->action && a->rule == b->rule && a->reason == b->reason &&
	       a->dry_run_would == b->dry_run_would && a->tag == b->tag && a->stat == b->stat;
}

/* Property 8. */
static void check_memo(struct policy_memo *m, const struct policy_input *in,
                       const struct policy_decision *want)
{
	struct policy_decision d;
	if (!m || !in->method || strcmp(in->method, "tools/call") != 0)
		return;
	for (int i = 0; i < 2; i++) {
		memset(&d, 0xA5, sizeof d);
		policy_memo_call(m, in, &d);
		CHECK(same_decision(&d, want));
	}
	json_t *params = json_object();
	if (in->args)
		json_object_set(params, "arguments", (json_t *)(uintptr_t)in->args);
	struct policy_input lazy = *in;
	lazy.args = NULL;
	lazy.call_params = params;
	memset(&d, 0xA5, sizeof d);
	policy_memo_call(m, &lazy, &d);
	CHECK(same_decision(&d, want));
	json_decref(params);
}

static void eval_count(struct policy *p, struct policy_memo *m, const struct policy_input *in,
                       int listing)
{
	struct policy_decision d;
	memset(&d, 0xA5, sizeof d); /* every field must be written */
	policy_eval(p, in, &d);
	check_decision(p, in, &d);
	check_memo(m, in, &d);
	if (d.rule)
		policy_count(p, &d, listing);
}

static void check_stats(const struct policy *p)
{
	size_t n = policy_nstats(p);
	struct policy_rule_stats st;

	CHECK(n == policy_nrules(p) + 2);
	for (size_t i = 0; i < n; i++) {
		CHECK(policy_stats(p, i, &st) == 0);
		CHECK(st.rule != NULL);
		CHECK(st.matched == st.allowed + st.denied + st.logged);
		CHECK(st.dry_run <= st.logged);
	}
	CHECK(policy_stats(p, 0, &st) == 0);
	CHECK(policy_stats(p, n - 2, &st) == 0 && strcmp(st.rule, POLICY_RULE_DEFAULT) == 0);
	CHECK(policy_stats(p, n - 1, &st) == 0 && strcmp(st.rule, POLICY_RULE_UNKNOWN) == 0);
	CHECK(policy_stats(p, n, &st) == -1);
}

static void check_words(const struct policy *p, const char *name, int builtin)
{
	static const size_t caps[] = {1, 2, 5, POLICY_MAX_WORD + 1};
	char word[POLICY_MAX_WORD + 1];

	int has = policy_change_word(p, name, NULL, 0);
	CHECK(has == 0 || has == 1);
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
		memset(word, 'X', sizeof word);
		CHECK(policy_change_word(p, name, word, caps[i]) == has);
		if (has) {
			CHECK(memchr(word, '\0', caps[i]) != NULL);
			for (const char *c = word; *c; c++)
				CHECK(!(*c >= 'A' && *c <= 'Z'));
		}
	}
	if (builtin)
		CHECK(policy_change_word(NULL, name, NULL, 0) == has);
}

static void judge(struct policy *p, const json_t *req, const json_t *tools, const json_t *base,
                  int builtin_words)
{
	static const char *const clients[] = {NULL, "ci", "agent-7", "*"};
	static const char *const upstreams[] = {NULL, "staging", "search"};
	static const char *const methods[] = {"tools/call", "tools/list", "resources/read",
	                                      "sampling/createMessage", "initialize", NULL};
	const json_t *params = json_object_get(req, "params");
	const char *rmethod = json_string_value(json_object_get(req, "method"));
	const char *rtool = json_string_value(json_object_get(params, "name"));
	const json_t *rargs = json_object_get(params, "arguments");
	struct policy_memo *memo = policy_memo_new(p);

	for (size_t c = 0; c < sizeof clients / sizeof *clients; c++) {
		for (size_t u = 0; u < sizeof upstreams / sizeof *upstreams; u++) {
			struct policy_input in = {.client = clients[c], .upstream = upstreams[u]};
			struct policy_hints h, b;
			int live, known;

			/* The request as it came. */
			const json_t *ann = find_tool(tools, rtool, &live);
			const json_t *bann = find_tool(base, rtool, &known);
			policy_hints_from_json(ann, &h);
			policy_hints_from_json(bann, &b);
			in.method = rmethod;
			in.tool = rtool;
			in.args = rmethod && strcmp(rmethod, "tools/call") == 0 ? rargs : params;
			in.tool_known = live || known;
			in.hints = live ? &h : known ? &b : NULL;
			in.baseline = known ? &b : NULL;
			eval_count(p, memo, &in, 0);

			/* Other methods, with the request's params. */
			for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
				in.method = methods[m];
				in.args = params;
				eval_count(p, memo, &in, 0);
			}

			/* Every listed tool: called with the request's arguments,
			 * and the listing question (no arguments). */
			for (size_t i = 0; i < json_array_size(tools) && i < 16; i++) {
				const json_t *t = json_array_get(tools, i);
				const char *name = json_string_value(json_object_get(t, "name"));
				policy_hints_from_json(json_object_get(t, "annotations"), &h);
				policy_hints_from_json(find_tool(base, name, &known), &b);
				in.method = "tools/call";
				in.tool = name;
				in.tool_known = name != NULL;
				in.hints = &h;
				in.baseline = known ? &b : NULL;
				check_hints(in.hints, in.baseline);
				in.args = rargs;
				eval_count(p, memo, &in, 0);
				in.args = NULL;
				eval_count(p, memo, &in, 1);
				if (c == 0 && u == 0 && name)
					check_words(p, name, builtin_words);
			}
		}
	}
	policy_memo_free(memo);
	check_hints(NULL, NULL);
	if (rtool)
		check_words(p, rtool, builtin_words);
	check_stats(p);
}

/* ---- globs ---------------------------------------------------------------------- */

static size_t utf8_step(const char *s, size_t i)
{
	i++;
	while (((unsigned char)s[i] & 0xC0) == 0x80)
		i++;
	return i;
}

/* The documented glob rules as a table over (pattern, subject) positions. */
static int glob_ref(const char *p, const char *s)
{
	size_t pl = strlen(p), sl = strlen(s);
	unsigned char *m = calloc((pl + 1) * (sl + 1), 1);
	CHECK(m != NULL);
#define M(i, j) m[(i) * (sl + 1) + (j)]
	M(pl, sl) = 1;
	for (size_t i = pl + 1; i-- > 0;) {
		for (size_t j = sl + 1; j-- > 0;) {
			if (i == pl) {
				M(i, j) = j == sl;
				continue;
			}
			if (p[i] == '*') {
				M(i, j) = M(i + 1, j) || (j < sl && M(i, j + 1));
			} else if (p[i] == '?') {
				M(i, j) = j < sl && M(i + 1, utf8_step(s, j));
			} else {
				size_t lit = p[i] == '\\' && p[i + 1] ? i + 1 : i;
				M(i, j) = j < sl && p[lit] == s[j] && M(lit + 1, j + 1);
			}
		}
	}
	int r = M(0, 0);
#undef M
	free(m);
	return r;
}

static void check_glob(const char *pat, const char *s)
{
	int r = policy_glob(pat, s);
	CHECK(r == 0 || r == 1);
	CHECK(policy_glob("*", s) == 1);
	CHECK(policy_glob("", s) == (*s == '\0'));
	/* every byte escaped: the text itself */
	size_t n = strlen(s);
	char *esc = malloc(2 * n + 1);
	CHECK(esc != NULL);
	for (size_t i = 0; i < n; i++) {
		esc[2 * i] = '\\';
		esc[2 * i + 1] = s[i];
	}
	esc[2 * n] = '\0';
	CHECK(policy_glob(esc, s) == 1);
	free(esc);
	if (strlen(pat) <= 256 && n <= 256) {
		CHECK(glob_ref(pat, s) == r);
		CHECK(glob_ref(s, pat) == policy_glob(s, pat));
	}
}

/* ---- pointers ------------------------------------------------------------------- */

/* Reference RFC 6901 resolver with policy.c's documented limits: tokens of
 * at most POLICY_MAX_STRING bytes, array indexes of 1-9 digits without a
 * leading zero. */
static const json_t *pointer_ref(const json_t *doc, const char *ptr)
{
	if (*ptr && *ptr != '/')
		return NULL;
	while (*ptr) {
		char *tok = malloc(strlen(ptr) + 1);
		size_t n = 0;
		CHECK(tok != NULL);
		for (ptr++; *ptr && *ptr != '/'; ptr++) {
			char c = *ptr;
			if (c == '~') {
				if (ptr[1] != '0' && ptr[1] != '1') {
					free(tok);
					return NULL;
				}
				c = *++ptr == '0' ? '~' : '/';
			}
			tok[n++] = c;
		}
		const json_t *next = NULL;
		if (n <= POLICY_MAX_STRING) {
			if (json_is_object(doc)) {
				next = json_object_getn(doc, tok, n);
			} else if (json_is_array(doc) && n >= 1 && n <= 9 && !(n > 1 && tok[0] == '0')) {
				size_t idx = 0, i;
				for (i = 0; i < n && tok[i] >= '0' && tok[i] <= '9'; i++)
					idx = idx * 10 + (size_t)(tok[i] - '0');
				next = i == n ? json_array_get(doc, idx) : NULL;
			}
		}
		free(tok);
		if (next == NULL)
			return NULL;
		doc = next;
	}
	return doc;
}

struct pwalk {
	const json_t *root;
	char *ptr;
	size_t len, cap;
	unsigned left;
	size_t maxtok; /* longest decoded token on the path */
};

static void pw_put(struct pwalk *w, const char *s, size_t n)
{
	if (w->len + n + 1 > w->cap) {
		size_t cap = (w->len + n + 1) * 2;
		char *np = realloc(w->ptr, cap);
		CHECK(np != NULL);
		w->ptr = np;
		w->cap = cap;
	}
	memcpy(w->ptr + w->len, s, n);
	w->len += n;
	w->ptr[w->len] = '\0';
}

static void pw_walk(struct pwalk *w, const json_t *node, unsigned depth)
{
	if (w->left == 0 || depth > 64)
		return;
	w->left--;
	if (w->maxtok <= POLICY_MAX_STRING)
		CHECK(policy_pointer_get(w->root, w->ptr) == node);
	CHECK(pointer_ref(w->root, w->ptr) == (w->maxtok <= POLICY_MAX_STRING ? node : NULL));
	size_t base = w->len, maxtok = w->maxtok;
	if (json_is_object(node)) {
		const char *key;
		size_t klen;
		json_t *v;
		json_object_keylen_foreach(mut(node), key, klen, v) {
			if (memchr(key, '\0', klen))
				continue; /* not expressible as a C string pointer */
			pw_put(w, "/", 1);
			for (size_t i = 0; i < klen; i++) {
				if (key[i] == '~')
					pw_put(w, "~0", 2);
				else if (key[i] == '/')
					pw_put(w, "~1", 2);
				else
					pw_put(w, key + i, 1);
			}
			if (klen > w->maxtok)
				w->maxtok = klen;
			pw_walk(w, v, depth + 1);
			w->len = base;
			w->ptr[base] = '\0';
			w->maxtok = maxtok;
			if (w->left == 0)
				return;
		}
	} else if (json_is_array(node)) {
		for (size_t i = 0; i < json_array_size(node) && w->left; i++) {
			char idx[32];
			int n = snprintf(idx, sizeof idx, "/%zu", i);
			pw_put(w, idx, (size_t)n);
			pw_walk(w, json_array_get(node, i), depth + 1);
			w->len = base;
			w->ptr[base] = '\0';
		}
	}
}

static void check_pointers(const json_t *doc, const char *raw)
{
	struct pwalk w = {.root = doc, .left = 256};
	pw_put(&w, "", 0);
	pw_walk(&w, doc, 0);
	free(w.ptr);
	CHECK(policy_pointer_get(NULL, "") == NULL);
	CHECK(policy_pointer_get(doc, NULL) == NULL);
	CHECK(policy_pointer_get(doc, raw) == pointer_ref(doc, raw));
}

/* ---- regular expressions ----------------------------------------------------------- */

/* The TAIL's pattern as the "matches" of a rule: the loader accepts it, or
 * refuses it with one line located at the pattern. An accepted pattern is
 * compiled (under libFuzzer's -timeout and -rss_limit_mb: the loader's
 * limits must keep glibc's regcomp fast) and matched against the subject. */
static void check_regex(const char *pat, const char *subj)
{
	static const char where[] = "$.policy.rules[0].match.args[0].matches: ";
	json_t *rx = json_string(pat); /* NULL: not UTF-8, no policy has it */
	if (rx == NULL)
		return;
	json_t *conf = json_pack("{s:[{s:s,s:s,s:{s:[{s:s,s:o}]}}]}", "rules", "name", "rx",
	                         "action", "deny", "match", "args", "pointer", "/q", "matches", rx);
	CHECK(conf != NULL);
	char err[512];
	struct policy *p = policy_load(conf, "$.policy", err, sizeof err);
	if (p == NULL) {
		CHECK(strncmp(err, where, sizeof where - 1) == 0);
		CHECK(strchr(err, '\n') == err + strlen(err) - 1);
	} else {
		json_t *args = json_pack("{s:s}", "q", subj); /* NULL: not UTF-8 */
		struct policy_input in = {.method = "tools/call", .tool = "t", .tool_known = 1,
		                          .args = args};
		if (args != NULL)
			eval_count(p, NULL, &in, 0);
		json_decref(args);
		policy_free(p);
	}
	json_decref(conf);
}

/* ---- entry ------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t pos = 0;
	json_t *conf = next_value(data, size, &pos);
	json_t *req = conf ? next_value(data, size, &pos) : NULL;
	json_t *list = req ? next_value(data, size, &pos) : NULL;
	json_t *base = list ? next_value(data, size, &pos) : NULL;

	/* TAIL: a glob pattern, a newline, a subject; also a pointer. */
	const uint8_t *tail = data + pos;
	size_t tl = size - pos;
	const uint8_t *nl = tl ? memchr(tail, '\n', tl) : NULL;
	size_t cut = nl ? (size_t)(nl - tail) : tl / 2;
	char *pat = dup_bytes(tail, cut);
	char *subj = dup_bytes(tail + cut + (nl ? 1 : 0), tl - cut - (nl ? 1 : 0));
	char *raw = dup_bytes(tail, tl);
	check_glob(pat, subj);
	check_regex(pat, subj);
	check_words(NULL, subj, 0);
	check_pointers(req ? req : conf ? conf : json_null(), raw);

	if (json_is_object(conf)) {
		struct policy *p = load_all_ways(conf);
		if (p != NULL) {
			int builtin = json_object_get(conf, "change_words") == NULL &&
			              json_object_get(conf, "extra_change_words") == NULL;
			judge(p, req, tools_of(list), tools_of(base), builtin);
			policy_free(p);
		}
	} else if (conf != NULL) {
		char err[256];
		CHECK(policy_load(conf, "$.policy", err, sizeof err) == NULL && err[0] != '\0');
	}
	policy_free(NULL);
	free(pat);
	free(subj);
	free(raw);
	json_decref(conf);
	json_decref(req);
	json_decref(list);
	json_decref(base);
	return 0;
}

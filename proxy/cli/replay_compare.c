/* replay_compare: see replay_compare.h. Pure functions on jansson values:
 * normalising text (built-in rules, then --rules), comparing one answer with
 * its reference, and judging a dataset case's expectations.
 *
 * Why this file is long (over 800 lines): every comparison and every matcher
 * uses the same normaliser and the same finding list, and each is a short
 * function; the unit tests (tests/unit/cli/test_replay_compare.c) cover the
 * file as one interface.
 */
#include "proxy/cli/replay_compare.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checks/jsre.h"
#include "policy/policy.h"
#include "proxy/base/sbuf.h"

struct replay_repl {
	struct jsre *re;       /* owned: the pattern */
	struct jsre *whole;    /* owned: ^(?:pattern)$ */
	char *with;            /* owned */
};

struct replay_rules {
	int builtin;
	char *ignore[REPLAY_MAX_RULES]; /* owned pointers */
	size_t nignore;
	struct replay_repl repl[REPLAY_MAX_RULES];
	size_t nrepl;
};

struct replay_expect {
	json_t *equals;            /* owned: normalised, or NULL */
	struct jsre *pattern;      /* owned, or NULL */
	struct jschema *schema;    /* owned, or NULL */
	json_t *schema_doc;        /* owned: what schema borrows */
	struct jschema *sschema;   /* owned: for structuredContent, or NULL */
	json_t *sschema_doc;       /* owned */
	long long max_bytes, min_bytes; /* -1: none */
	int is_error;              /* -1: none */
};

/* jansson's object iterator takes json_t * but never modifies the object;
 * uintptr_t keeps -Wcast-qual quiet at this one place. */
static json_t *mut(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

/* ---- findings ---------------------------------------------------------------- */

static int add(json_t *findings, const char *code, int error, const char *pointer,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int add(json_t *findings, const char *code, int error, const char *pointer,
               const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *f = json_pack("{s:s,s:s,s:s}", "code", code, "severity", error ? "error" : "warning",
	                      "message", msg);
	if (f && pointer)
		json_object_set_new(f, "pointer", json_string(pointer));
	json_array_append_new(findings, f);
	return error ? 1 : 0;
}

/* ---- rules ------------------------------------------------------------------- */

struct replay_rules *replay_rules_new(void)
{
	struct replay_rules *r = calloc(1, sizeof(*r));
	if (r)
		r->builtin = 1;
	return r;
}

void replay_rules_free(struct replay_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nignore; i++)
		free(r->ignore[i]);
	for (size_t i = 0; i < r->nrepl; i++) {
		jsre_free(r->repl[i].re);
		jsre_free(r->repl[i].whole);
		free(r->repl[i].with);
	}
	free(r);
}

static int add_replacement(struct replay_rules *r, const json_t *item, size_t i, char *err,
                           size_t errlen)
{
	const char *pat = json_string_value(json_object_get(item, "pattern"));
	const char *with = json_string_value(json_object_get(item, "with"));
	char why[160];
	if (!pat || !with) {
		snprintf(err, errlen, "replace[%zu]: wants {\"pattern\": RE, \"with\": STRING}", i);
		return -1;
	}
	if (r->nrepl >= REPLAY_MAX_RULES) {
		snprintf(err, errlen, "replace: at most %d rules", REPLAY_MAX_RULES);
		return -1;
	}
	struct replay_repl *p = &r->repl[r->nrepl];
	p->re = jsre_compile(pat, strlen(pat), why, sizeof(why));
	if (!p->re) {
		snprintf(err, errlen, "replace[%zu].pattern: %s", i, why);
		return -1;
	}
	char *w = NULL;
	if (asprintf(&w, "^(?:%s)$", pat) < 0)
		w = NULL;
	p->whole = w ? jsre_compile(w, strlen(w), why, sizeof(why)) : NULL;
	free(w);
	p->with = strdup(with);
	if (!p->whole || !p->with) {
		jsre_free(p->re);
		jsre_free(p->whole);
		free(p->with);
		snprintf(err, errlen, "replace[%zu].pattern: %s", i, "cannot be anchored");
		return -1;
	}
	r->nrepl++;
	return 0;
}

int replay_rules_add(struct replay_rules *r, const json_t *doc, char *err, size_t errlen)
{
	const char *k;
	const json_t *v;
	if (!json_is_object(doc)) {
		snprintf(err, errlen, "the rules file must hold a JSON object");
		return -1;
	}
	json_object_foreach(mut(doc), k, v) {
		if (strcmp(k, "builtin") == 0 && json_is_boolean(v)) {
			r->builtin = json_is_true(v);
		} else if (strcmp(k, "ignore") == 0 && json_is_array(v)) {
			for (size_t i = 0; i < json_array_size(v); i++) {
				const char *p = json_string_value(json_array_get(v, i));
				if (!p || (p[0] && p[0] != '/')) {
					snprintf(err, errlen, "ignore[%zu]: not a JSON Pointer", i);
					return -1;
				}
				if (r->nignore >= REPLAY_MAX_RULES) {
					snprintf(err, errlen, "ignore: at most %d pointers", REPLAY_MAX_RULES);
					return -1;
				}
				r->ignore[r->nignore] = strdup(p);
				if (!r->ignore[r->nignore])
					return -1;
				r->nignore++;
			}
		} else if (strcmp(k, "replace") == 0 && json_is_array(v)) {
			for (size_t i = 0; i < json_array_size(v); i++)
				if (add_replacement(r, json_array_get(v, i), i, err, errlen) < 0)
					return -1;
		} else {
			snprintf(err, errlen, "unknown or malformed member \"%s\" (ignore, replace, builtin)",
			         k);
			return -1;
		}
	}
	return 0;
}

/* ---- built-in normalisers ------------------------------------------------------- */

static int ishex(int c)
{
	return isxdigit((unsigned char)c);
}

static int isword(int c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Length of a UUID at s (8-4-4-4-12 hex), or 0. */
static size_t uuid_at(const char *s, size_t n)
{
	static const int groups[] = {8, 4, 4, 4, 12};
	size_t i = 0;
	for (int g = 0; g < 5; g++) {
		for (int k = 0; k < groups[g]; k++, i++)
			if (i >= n || !ishex(s[i]))
				return 0;
		if (g < 4) {
			if (i >= n || s[i] != '-')
				return 0;
			i++;
		}
	}
	return i < n && isword(s[i]) ? 0 : i;
}

static int digits(const char *s, size_t n, size_t at, size_t k)
{
	for (size_t i = 0; i < k; i++)
		if (at + i >= n || !isdigit((unsigned char)s[at + i]))
			return 0;
	return 1;
}

/* Length of an RFC 3339 date-time at s (T or t or a space; fraction and
 * offset optional), or 0. */
static size_t timestamp_at(const char *s, size_t n)
{
	if (!digits(s, n, 0, 4) || n < 19 || s[4] != '-' || !digits(s, n, 5, 2) || s[7] != '-' ||
	    !digits(s, n, 8, 2) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    !digits(s, n, 11, 2) || s[13] != ':' || !digits(s, n, 14, 2) || s[16] != ':' ||
	    !digits(s, n, 17, 2))
		return 0;
	size_t i = 19;
	if (i < n && s[i] == '.' && i + 1 < n && isdigit((unsigned char)s[i + 1])) {
		i++;
		while (i < n && isdigit((unsigned char)s[i]))
			i++;
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z'))
		i++;
	else if (i + 6 <= n && (s[i] == '+' || s[i] == '-') && digits(s, n, i + 1, 2) &&
	         s[i + 3] == ':' && digits(s, n, i + 4, 2))
		i += 6;
	return i;
}

/* Length of a hex id (16+ hex digits, one a digit) or a number id (10+
 * digits) at s, with *tag set; 0 when none. */
static size_t id_at(const char *s, size_t n, const char **tag)
{
	size_t i = 0;
	int digit = 0, alpha = 0;
	while (i < n && ishex(s[i])) {
		digit |= isdigit((unsigned char)s[i]) != 0;
		alpha |= !isdigit((unsigned char)s[i]);
		i++;
	}
	if (i < n && isword(s[i]))
		return 0;
	if (!alpha && i >= 10) {
		*tag = "<number>";
		return i;
	}
	if (digit && i >= 16) {
		*tag = "<hex>";
		return i;
	}
	return 0;
}

static void builtin_pass(const char *s, size_t n, struct sbuf *out)
{
	for (size_t i = 0; i < n;) {
		size_t len = 0;
		const char *tag = NULL;
		int at_word_start = i == 0 || !isword(s[i - 1]);
		if (at_word_start && (len = uuid_at(s + i, n - i)) > 0)
			tag = "<uuid>";
		else if (at_word_start && (len = timestamp_at(s + i, n - i)) > 0)
			tag = "<timestamp>";
		else if (at_word_start)
			len = id_at(s + i, n - i, &tag);
		if (len && tag) {
			sbuf_puts(out, tag);
			i += len;
			continue;
		}
		sbuf_putn(out, s + i, 1);
		i++;
	}
}

/* The buffer's string (owned), or NULL after an allocation failed. */
static char *sbuf_take(struct sbuf *b)
{
	if (b->oom) {
		free(b->p);
		return NULL;
	}
	return b->p ? b->p : strdup("");
}

/* ---- regex replacements ----------------------------------------------------- */

static int found(const struct jsre *re, const char *s, size_t n)
{
	return jsre_search(re, s, n) == 1;
}

/* The span [*b, *e) of the first match in s[0..n) (header's rule).
 * Returns 1, or 0 when none. */
static int match_span(const struct replay_repl *p, const char *s, size_t n, size_t *b, size_t *e)
{
	if (!found(p->re, s, n))
		return 0;
	size_t lo = 0, hi = n; /* the least end: s[0..end) holds a match */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (found(p->re, s, mid))
			hi = mid;
		else
			lo = mid + 1;
	}
	size_t end = lo, st = 0, top = end; /* the last start: s[st..end) holds one */
	while (st < top) {
		size_t mid = st + (top - st + 1) / 2;
		if (found(p->re, s + mid, end - mid))
			st = mid;
		else
			top = mid - 1;
	}
	while (end < n && found(p->whole, s + st, end + 1 - st))
		end++;
	if (end == st)
		return 0; /* an empty match: nothing to replace (and no loop) */
	*b = st;
	*e = end;
	return 1;
}

static char *replace_pass(const struct replay_repl *p, const char *s, size_t n)
{
	struct sbuf out = {0};
	size_t at = 0, b, e;
	while (at < n && match_span(p, s + at, n - at, &b, &e)) {
		sbuf_putn(&out, s + at, b);
		sbuf_puts(&out, p->with);
		at += e;
	}
	sbuf_putn(&out, s + at, n - at);
	return sbuf_take(&out);
}

char *replay_normalize_text(const struct replay_rules *r, const char *s, size_t n)
{
	char *cur;
	if (n > REPLAY_MAX_TEXT || !r->builtin) {
		cur = strndup(s, n); /* too long to scan: compared as is */
	} else {
		struct sbuf out = {0};
		builtin_pass(s, n, &out);
		cur = sbuf_take(&out);
	}
	for (size_t i = 0; cur && i < r->nrepl && strlen(cur) <= REPLAY_MAX_TEXT; i++) {
		char *next = replace_pass(&r->repl[i], cur, strlen(cur));
		free(cur);
		cur = next;
	}
	return cur;
}

/* ---- normalised values --------------------------------------------------------- */

/* Removes the value at pointer from doc (the last token from its parent). */
static void remove_pointer(json_t *doc, const char *pointer)
{
	const char *slash = strrchr(pointer, '/');
	if (!slash)
		return;
	char *parent = strndup(pointer, (size_t)(slash - pointer));
	char tok[256];
	size_t w = 0;
	for (const char *q = slash + 1; *q && w + 1 < sizeof(tok); q++) {
		if (q[0] == '~' && q[1] == '0') {
			tok[w++] = '~';
			q++;
		} else if (q[0] == '~' && q[1] == '1') {
			tok[w++] = '/';
			q++;
		} else {
			tok[w++] = *q;
		}
	}
	tok[w] = '\0';
	json_t *p = parent ? mut(policy_pointer_get(doc, parent)) : NULL;
	free(parent);
	if (json_is_object(p)) {
		json_object_del(p, tok);
	} else if (json_is_array(p)) {
		char *end = NULL;
		unsigned long i = strtoul(tok, &end, 10);
		if (end && !*end && *tok)
			json_array_remove(p, i);
	}
}

static int normalize_strings(const struct replay_rules *r, json_t *v)
{
	const char *k;
	json_t *x;
	if (json_is_string(v)) {
		char *s = replay_normalize_text(r, json_string_value(v), json_string_length(v));
		if (!s)
			return -1;
		json_string_set(v, s);
		free(s);
	} else if (json_is_object(v)) {
		json_object_foreach(v, k, x)
			if (normalize_strings(r, x) < 0)
				return -1;
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			if (normalize_strings(r, json_array_get(v, i)) < 0)
				return -1;
	}
	return 0;
}

json_t *replay_normalize(const struct replay_rules *r, const json_t *v)
{
	json_t *c = json_deep_copy(v);
	if (!c)
		return NULL;
	for (size_t i = 0; i < r->nignore; i++)
		remove_pointer(c, r->ignore[i]);
	if (normalize_strings(r, c) < 0) {
		json_decref(c);
		return NULL;
	}
	return c;
}

/* ---- comparison -------------------------------------------------------------- */

static const char *type_name(const json_t *v)
{
	static const char *const names[] = {
		[JSON_OBJECT] = "object", [JSON_ARRAY] = "array",  [JSON_STRING] = "string",
		[JSON_INTEGER] = "integer", [JSON_REAL] = "number", [JSON_TRUE] = "boolean",
		[JSON_FALSE] = "boolean", [JSON_NULL] = "null",
	};
	return names[json_typeof(v)];
}

/* Integer and number are one JSON type: 1 and 1.5 do not differ in shape. */
static int same_type(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return 1;
	if (json_is_boolean(a) && json_is_boolean(b))
		return 1;
	return json_typeof(a) == json_typeof(b);
}

static void ptr_join(char *out, size_t cap, const char *base, const char *tok)
{
	size_t w = (size_t)snprintf(out, cap, "%s/", base);
	for (const char *q = tok; *q && w + 3 < cap; q++) {
		if (*q == '~' || *q == '/') {
			out[w++] = '~';
			out[w++] = *q == '~' ? '0' : '1';
		} else {
			out[w++] = *q;
		}
	}
	out[w < cap ? w : cap - 1] = '\0';
}

/* Shape of new vs old structuredContent: keys missing, types changed
 * (objects by key, arrays by their first item). */
static int shape(const json_t *o, const json_t *n, const char *ptr, json_t *findings, int depth)
{
	int errs = 0;
	char sub[512];
	if (!same_type(o, n)) {
		return add(findings, "replay-structured-type", 1, ptr, "%s was %s, now %s", ptr,
		           type_name(o), type_name(n));
	}
	if (depth > 32)
		return 0;
	if (json_is_object(o)) {
		const char *k;
		const json_t *v;
		json_object_foreach(mut(o), k, v) {
			const json_t *nv = json_object_get(n, k);
			ptr_join(sub, sizeof(sub), ptr, k);
			if (!nv)
				errs += add(findings, "replay-structured-keys", 1, sub, "%s is gone", sub);
			else
				errs += shape(v, nv, sub, findings, depth + 1);
		}
	} else if (json_is_array(o) && json_array_size(o) && json_array_size(n)) {
		snprintf(sub, sizeof(sub), "%s/0", ptr);
		errs += shape(json_array_get(o, 0), json_array_get(n, 0), sub, findings, depth + 1);
	}
	return errs;
}

static int is_error_result(const json_t *res)
{
	return json_is_true(json_object_get(res, "isError"));
}

/* ores and nres are normalised (ignored pointers gone, strings rewritten). */
static int compare_structured(const json_t *ores, const json_t *nres, int values,
                              json_t *findings)
{
	const json_t *os = json_object_get(ores, "structuredContent");
	const json_t *ns = json_object_get(nres, "structuredContent");
	if (os && !ns)
		return add(findings, "replay-structured-missing", 1, "/structuredContent",
		           "the result has no structuredContent any more%s",
		           is_error_result(nres) ? " (an error result)" : "");
	if (!os && ns)
		return add(findings, "replay-structured-added", 0, "/structuredContent",
		           "the result has structuredContent now");
	if (!os)
		return 0;
	int errs = shape(os, ns, "/structuredContent", findings, 0);
	if (!errs && values && !json_equal(os, ns))
		errs += add(findings, "replay-structured-changed", 1, "/structuredContent",
		            "structuredContent differs after normalisation");
	return errs;
}

static int output_schema(const struct replay_call_ctx *cx, const json_t *nres, json_t *findings)
{
	if (!cx || !cx->output_schema || is_error_result(nres))
		return 0; /* the spec binds only non-error results to outputSchema */
	const json_t *ns = json_object_get(nres, "structuredContent");
	if (!ns)
		return add(findings, "replay-output-schema", 1, "/structuredContent",
		           "the tool declares an outputSchema but the result has no structuredContent");
	struct jschema_error e;
	int n = jschema_validate(cx->output_schema, ns, &e, 1);
	if (n == 0)
		return 0;
	return add(findings, "replay-output-schema", 1, "/structuredContent",
	           "structuredContent does not conform to the tool's outputSchema: %s%s%s%s",
	           n < 0 ? "validation limit: " : "", e.instance_ptr, e.instance_ptr[0] ? ": " : "",
	           e.message);
}

/* "text,image" etc.: the content item types in order. */
static void content_types(const json_t *res, char *out, size_t cap)
{
	const json_t *c = json_object_get(res, "content");
	size_t w = 0;
	out[0] = '\0';
	for (size_t i = 0; i < json_array_size(c) && w + 1 < cap; i++) {
		const char *t = json_string_value(json_object_get(json_array_get(c, i), "type"));
		int n = snprintf(out + w, cap - w, "%s%s", i ? "," : "", t ? t : "?");
		if (n < 0)
			break;
		w += (size_t)n;
	}
	if (w >= cap)
		out[cap - 1] = '\0';
}

static int compare_content(const json_t *ores, const json_t *nres, int values, json_t *findings)
{
	char ot[512], nt[512];
	content_types(ores, ot, sizeof(ot));
	content_types(nres, nt, sizeof(nt));
	if (strcmp(ot, nt) != 0)
		return add(findings, "replay-content-types", 1, "/content",
		           "content items were [%s], now [%s]", ot, nt);
	const json_t *oc = json_object_get(ores, "content"), *nc = json_object_get(nres, "content");
	int errs = 0;
	for (size_t i = 0; values && i < json_array_size(oc) && i < json_array_size(nc); i++) {
		const json_t *a = json_array_get(oc, i), *b = json_array_get(nc, i);
		const char *at = json_string_value(json_object_get(a, "text"));
		const char *bt = json_string_value(json_object_get(b, "text"));
		char ptr[64];
		snprintf(ptr, sizeof(ptr), "/content/%zu", i);
		if ((at || bt) && (!at || !bt || strcmp(at, bt) != 0))
			errs += add(findings, "replay-text-changed", 1, ptr,
			            "the text of content item %zu differs after normalisation", i);
		else if (!at && !json_equal(a, b))
			errs += add(findings, "replay-text-changed", 1, ptr,
			            "content item %zu differs after normalisation", i);
	}
	return errs;
}

int replay_compare(const struct replay_rules *r, const json_t *old_resp, const json_t *new_resp,
                   const char *new_why, const struct replay_call_ctx *cx, json_t *findings)
{
	if (!new_resp)
		return add(findings, "replay-no-response", 1, NULL, "no response: %s",
		           new_why ? new_why : "unknown");
	const json_t *oe = json_object_get(old_resp, "error"), *ne = json_object_get(new_resp, "error");
	const json_t *ores = json_object_get(old_resp, "result");
	const json_t *nres = json_object_get(new_resp, "result");
	int errs = 0;
	if (oe && ne) {
		json_int_t a = json_integer_value(json_object_get(oe, "code"));
		json_int_t b = json_integer_value(json_object_get(ne, "code"));
		if (a != b)
			errs += add(findings, "replay-error-code", 1, NULL,
			            "the JSON-RPC error code was %lld, now %lld", (long long)a, (long long)b);
		return errs;
	}
	if (!ores || !nres) {
		const char *m = json_string_value(json_object_get(ne, "message"));
		return add(findings, "replay-error-flip", 1, NULL, "%s",
		           ne ? (m ? m : "a JSON-RPC error instead of a result")
		              : "a result where the capture has a JSON-RPC error");
	}
	json_t *on = replay_normalize(r, ores), *nn = replay_normalize(r, nres);
	if (!on || !nn) {
		json_decref(on);
		json_decref(nn);
		return add(findings, "replay-no-response", 1, NULL, "out of memory");
	}
	if (is_error_result(on) != is_error_result(nn))
		errs += add(findings, "replay-iserror-flip", 1, "/isError", "isError was %s, now %s",
		            is_error_result(on) ? "true" : "false", is_error_result(nn) ? "true" : "false");
	int values = !cx || !cx->redacted;
	errs += compare_structured(on, nn, values, findings);
	errs += output_schema(cx, nres, findings); /* the answer as sent */
	errs += compare_content(on, nn, values, findings);
	json_decref(on);
	json_decref(nn);
	if (cx && cx->max_slowdown > 0 && cx->old_ms > 0 && cx->new_ms > cx->old_ms * cx->max_slowdown)
		errs += add(findings, "replay-slower", 1, NULL, "%.1f ms, was %.1f ms (x%.2f > x%.2f)",
		            cx->new_ms, cx->old_ms, cx->new_ms / cx->old_ms, cx->max_slowdown);
	return errs;
}

/* ---- dataset expectations ---------------------------------------------------- */

void replay_expect_free(struct replay_expect *e)
{
	if (!e)
		return;
	json_decref(e->equals);
	jsre_free(e->pattern);
	jschema_free(e->schema);
	json_decref(e->schema_doc);
	jschema_free(e->sschema);
	json_decref(e->sschema_doc);
	free(e);
}

static struct jschema *compile_schema(const json_t *v, const char *what, const char *era,
                                      json_t **doc, char *err, size_t errlen)
{
	struct jschema_error why;
	if (!json_is_object(v) && !json_is_boolean(v)) {
		snprintf(err, errlen, "expect.%s: a JSON Schema is an object or a boolean", what);
		return NULL;
	}
	*doc = json_deep_copy(v);
	struct jschema *s = *doc ? jschema_compile(*doc, jschema_dialect_for_era(era), 0, &why) : NULL;
	if (!s)
		snprintf(err, errlen, "expect.%s: %s %s", what, why.schema_ptr, why.message);
	return s;
}

static int expect_member(const struct replay_rules *r, struct replay_expect *e, const char *k,
                         const json_t *v, const char *era, char *err, size_t errlen)
{
	char why[160];
	if (strcmp(k, "equals") == 0) {
		e->equals = replay_normalize(r, v);
		return e->equals ? 0 : -1;
	}
	if (strcmp(k, "pattern") == 0 && json_is_string(v)) {
		e->pattern = jsre_compile(json_string_value(v), json_string_length(v), why, sizeof(why));
		if (!e->pattern)
			snprintf(err, errlen, "expect.pattern: %s", why);
		return e->pattern ? 0 : -1;
	}
	if (strcmp(k, "schema") == 0) {
		e->schema = compile_schema(v, k, era, &e->schema_doc, err, errlen);
		return e->schema ? 0 : -1;
	}
	if (strcmp(k, "structured_schema") == 0) {
		e->sschema = compile_schema(v, k, era, &e->sschema_doc, err, errlen);
		return e->sschema ? 0 : -1;
	}
	if ((strcmp(k, "max_bytes") == 0 || strcmp(k, "min_bytes") == 0) && json_is_integer(v) &&
	    json_integer_value(v) >= 0) {
		*(k[1] == 'a' ? &e->max_bytes : &e->min_bytes) = json_integer_value(v);
		return 0;
	}
	if (strcmp(k, "isError") == 0 && json_is_boolean(v)) {
		e->is_error = json_is_true(v);
		return 0;
	}
	snprintf(err, errlen,
	         "expect: unknown or malformed member \"%s\" (equals, pattern, schema, "
	         "structured_schema, max_bytes, min_bytes, isError)",
	         k);
	return -1;
}

struct replay_expect *replay_expect_new(const struct replay_rules *r, const json_t *expect,
                                        const char *era, char *err, size_t errlen)
{
	const char *k;
	const json_t *v;
	if (!json_is_object(expect)) {
		snprintf(err, errlen, "expect: must be an object");
		return NULL;
	}
	struct replay_expect *e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e->max_bytes = e->min_bytes = -1;
	e->is_error = -1;
	snprintf(err, errlen, "out of memory");
	json_object_foreach(mut(expect), k, v) {
		if (expect_member(r, e, k, v, era, err, errlen) < 0) {
			replay_expect_free(e);
			return NULL;
		}
	}
	return e;
}

/* The text content joined by newlines (owned). */
static char *joined_text(const json_t *res)
{
	struct sbuf b = {0};
	const json_t *c = json_object_get(res, "content");
	int first = 1;
	for (size_t i = 0; i < json_array_size(c); i++) {
		const json_t *t = json_object_get(json_array_get(c, i), "text");
		if (!json_is_string(t))
			continue;
		if (!first)
			sbuf_putn(&b, "\n", 1);
		sbuf_putn(&b, json_string_value(t), json_string_length(t));
		first = 0;
	}
	return sbuf_take(&b);
}

static int check_schema(const struct jschema *s, const json_t *v, const char *code,
                        const char *what, json_t *findings)
{
	struct jschema_error e;
	if (!v)
		return add(findings, code, 1, NULL, "the result has no %s", what);
	int n = jschema_validate(s, v, &e, 1);
	if (n == 0)
		return 0;
	return add(findings, code, 1, e.instance_ptr[0] ? e.instance_ptr : NULL,
	           "the %s does not conform: %s%s", what, n < 0 ? "validation limit: " : "", e.message);
}

static int check_text(const struct replay_rules *r, const struct replay_expect *e,
                      const json_t *res, json_t *findings)
{
	int errs = 0;
	if (e->equals) {
		json_t *n = replay_normalize(r, res);
		if (!n || !json_equal(n, e->equals))
			errs += add(findings, "replay-expect-equals", 1, NULL,
			            "the result differs from expect.equals after normalisation");
		json_decref(n);
	}
	if (e->pattern) {
		char *t = joined_text(res);
		int m = t ? jsre_search(e->pattern, t, strlen(t)) : -1;
		if (m != 1)
			errs += add(findings, "replay-expect-pattern", 1, "/content",
			            m < 0 ? "expect.pattern: the regex step limit was hit"
			                  : "the text content does not match expect.pattern");
		free(t);
	}
	return errs;
}

int replay_expect_check(const struct replay_rules *r, const struct replay_expect *e,
                        const json_t *new_resp, const char *new_why, json_t *findings)
{
	if (!new_resp)
		return add(findings, "replay-no-response", 1, NULL, "no response: %s",
		           new_why ? new_why : "unknown");
	const json_t *res = json_object_get(new_resp, "result");
	if (!res) {
		const char *m = json_string_value(
		        json_object_get(json_object_get(new_resp, "error"), "message"));
		return add(findings, "replay-expect-result", 1, NULL, "a JSON-RPC error, not a result: %s",
		           m ? m : "(no message)");
	}
	int errs = check_text(r, e, res, findings);
	if (e->schema)
		errs += check_schema(e->schema, res, "replay-expect-schema", "result", findings);
	if (e->sschema)
		errs += check_schema(e->sschema, json_object_get(res, "structuredContent"),
		                     "replay-expect-structured-schema", "structuredContent", findings);
	if (e->max_bytes >= 0 || e->min_bytes >= 0) {
		char *s = json_dumps(res, JSON_COMPACT);
		long long n = s ? (long long)strlen(s) : 0;
		free(s);
		if (e->max_bytes >= 0 && n > e->max_bytes)
			errs += add(findings, "replay-expect-size", 1, NULL,
			            "the result is %lld bytes, over max_bytes %lld", n, e->max_bytes);
		if (e->min_bytes >= 0 && n < e->min_bytes)
			errs += add(findings, "replay-expect-size", 1, NULL,
			            "the result is %lld bytes, under min_bytes %lld", n, e->min_bytes);
	}
	if (e->is_error >= 0 && is_error_result(res) != e->is_error)
		errs += add(findings, "replay-expect-iserror", 1, "/isError",
		            "isError is %s, expected %s", is_error_result(res) ? "true" : "false",
		            e->is_error ? "true" : "false");
	return errs;
}

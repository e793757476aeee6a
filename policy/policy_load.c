/* policy_load: the JSON form of a policy -> its compiled form (policy.h).
 *
 * The format is documented in conf/README-policy.md. Unknown keys, wrong
 * types, bad globs' limits, bad pointers and regular expressions are all
 * errors, each reported with its location ("$.policy.rules[2].match.tool:
 * must be a string or an array of strings"), all of them at once, one per
 * line. Pure: the caller reads the file.
 */
#define POLICY_INTERNAL
#include "policy/policy.h"
#include "policy/regex_limits.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOAD_MAX_PATH 256

struct load {
	char *err;
	size_t errlen, used;
	int nerr;
};

static void lerr(struct load *l, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void lerr(struct load *l, const char *path, const char *fmt, ...)
{
	l->nerr++;
	if (!l->err || l->used + 1 >= l->errlen)
		return;
	int n = snprintf(l->err + l->used, l->errlen - l->used, "%s: ", path);
	if (n < 0 || (size_t)n >= l->errlen - l->used) {
		l->used = l->errlen - 1;
		return;
	}
	l->used += (size_t)n;
	va_list ap;
	va_start(ap, fmt);
	n = vsnprintf(l->err + l->used, l->errlen - l->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= l->errlen - l->used) {
		l->used = l->errlen - 1;
		return;
	}
	l->used += (size_t)n;
	if (l->used + 1 < l->errlen) {
		l->err[l->used++] = '\n';
		l->err[l->used] = '\0';
	}
}

/* path + "." + key, with the key's unprintable bytes shown as '?' (keys
 * come from the file and end up in a log line). */
static void path_key(char *dst, const char *path, const char *key)
{
	size_t n = (size_t)snprintf(dst, LOAD_MAX_PATH, "%s.", path);
	if (n >= LOAD_MAX_PATH)
		return;
	for (size_t i = 0; key[i] && i < 64 && n + 1 < LOAD_MAX_PATH; i++) {
		unsigned char c = (unsigned char)key[i];
		dst[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	dst[n] = '\0';
}

static void path_index(char *dst, const char *path, size_t i)
{
	/* A path cut short still names the place well enough. */
	if (snprintf(dst, LOAD_MAX_PATH, "%s[%zu]", path, i) >= LOAD_MAX_PATH)
		dst[LOAD_MAX_PATH - 1] = '\0';
}

/* Reports every key of obj not in keys (NULL-terminated). */
static void check_keys(struct load *l, const json_t *obj, const char *path,
                       const char *const *keys)
{
	const char *k;
	json_t *v;
	char sub[LOAD_MAX_PATH];

	json_object_foreach((json_t *)(uintptr_t)obj, k, v) {
		size_t i = 0;
		while (keys[i] && strcmp(keys[i], k) != 0)
			i++;
		if (!keys[i]) {
			path_key(sub, path, k);
			lerr(l, sub, "unknown key");
		}
	}
}

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *dup_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* A string value that is usable as a pattern or word: non-empty, bounded,
 * no NUL inside. Returns it, or NULL after reporting. */
static const char *good_string(struct load *l, const json_t *v, const char *path, size_t max)
{
	if (!json_is_string(v)) {
		lerr(l, path, "must be a string");
		return NULL;
	}
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0) {
		lerr(l, path, "must not be empty");
		return NULL;
	}
	if (strlen(s) != n) {
		lerr(l, path, "must not contain NUL characters");
		return NULL;
	}
	if (n > max) {
		lerr(l, path, "longer than %zu bytes", max);
		return NULL;
	}
	return s;
}

static int list_push(struct policy_strlist *lst, const char *s, int lower)
{
	char **nv = realloc(lst->v, (lst->n + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	lst->v = nv;
	char *d = dup_str(s);
	if (!d)
		return -1;
	if (lower)
		for (char *c = d; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
	lst->v[lst->n++] = d;
	return 0;
}

/* A string or an array of strings (allow_empty: [] is accepted). */
static void parse_strlist(struct load *l, const json_t *v, const char *path,
                          struct policy_strlist *out, size_t max, int lower, int allow_empty)
{
	char sub[LOAD_MAX_PATH];

	if (json_is_string(v)) {
		const char *s = good_string(l, v, path, POLICY_MAX_STRING);
		if (s && list_push(out, s, lower) < 0)
			lerr(l, path, "out of memory");
		return;
	}
	if (!json_is_array(v)) {
		lerr(l, path, "must be a string or an array of strings");
		return;
	}
	if (json_array_size(v) == 0 && !allow_empty) {
		lerr(l, path, "must not be an empty array");
		return;
	}
	if (json_array_size(v) > max) {
		lerr(l, path, "more than %zu entries", max);
		return;
	}
	for (size_t i = 0; i < json_array_size(v); i++) {
		path_index(sub, path, i);
		const char *s = good_string(l, json_array_get(v, i), sub, POLICY_MAX_STRING);
		if (s && list_push(out, s, lower) < 0)
			lerr(l, sub, "out of memory");
	}
}

static int parse_action(struct load *l, const json_t *v, const char *path,
                        enum policy_action *out)
{
	static const struct {
		const char *name;
		enum policy_action a;
	} actions[] = {
		{"allow", POLICY_ALLOW}, {"deny", POLICY_DENY}, {"hide", POLICY_HIDE}, {"log", POLICY_LOG},
	};
	if (json_is_string(v))
		for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
			if (strcmp(json_string_value(v), actions[i].name) == 0) {
				*out = actions[i].a;
				return 0;
			}
	lerr(l, path, "must be one of \"allow\", \"deny\", \"hide\", \"log\"");
	return -1;
}

static void parse_bool(struct load *l, const json_t *v, const char *path, int *out)
{
	if (!json_is_boolean(v)) {
		lerr(l, path, "must be true or false");
		return;
	}
	*out = json_is_true(v);
}

/* ---- argument matchers ------------------------------------------------------------ */

static int pointer_ok(const char *p)
{
	if (*p && *p != '/')
		return 0;
	for (; *p; p++)
		if (*p == '~' && p[1] != '0' && p[1] != '1')
			return 0;
	return 1;
}

static void parse_regex(struct load *l, const json_t *v, const char *path, struct policy_arg *a)
{
	if (!json_is_string(v)) {
		lerr(l, path, "must be a string (a POSIX extended regular expression)");
		return;
	}
	const char *rx = json_string_value(v);
	size_t n = json_string_length(v);
	if (strlen(rx) != n) {
		lerr(l, path, "must not contain NUL characters");
		return;
	}
	if (n > POLICY_MAX_REGEX) {
		lerr(l, path, "longer than %d bytes", POLICY_MAX_REGEX);
		return;
	}
	int flags = REG_EXTENDED | REG_NOSUB;
	if (strncmp(rx, "(?i)", 4) == 0) {
		flags |= REG_ICASE;
		rx += 4;
	}
	for (const char *c = rx; *c; c++) {
		if (*c == '\\' && c[1]) {
			if (c[1] >= '1' && c[1] <= '9') {
				/* glibc accepts them in EREs, and they make matching
				 * exponential on a hostile argument. */
				lerr(l, path, "back-references (\\%c) are not allowed", c[1]);
				return;
			}
			c++;
		}
	}
	char why[200];
	if (regex_limits_check(rx, (flags & REG_ICASE) ? 4 : 0, why, sizeof why) < 0) {
		lerr(l, path, "%s", why);
		return;
	}
	int rc = regcomp(&a->re, rx, flags);
	if (rc != 0) {
		regerror(rc, &a->re, why, sizeof(why));
		lerr(l, path, "invalid regular expression: %s", why);
		return;
	}
	a->re_ok = 1;
	/* Without it every thread shares re (slower, not wrong). */
	a->rx = strdup(rx);
	a->re_flags = flags;
}

static void parse_arg(struct load *l, const json_t *v, const char *path, struct policy_arg *a)
{
	static const char *const keys[] = {"pointer", "equals", "matches", "exists", NULL};
	char sub[LOAD_MAX_PATH];

	if (!json_is_object(v)) {
		lerr(l, path, "must be an object {\"pointer\", and one of \"equals\", \"matches\", "
		              "\"exists\"}");
		return;
	}
	check_keys(l, v, path, keys);
	const json_t *ptr = json_object_get(v, "pointer");
	path_key(sub, path, "pointer");
	if (!ptr) {
		lerr(l, sub, "required");
	} else if (!json_is_string(ptr)) {
		lerr(l, sub, "must be a string (a JSON Pointer such as \"/sql\")");
	} else if (json_string_length(ptr) > POLICY_MAX_STRING ||
	           strlen(json_string_value(ptr)) != json_string_length(ptr) ||
	           !pointer_ok(json_string_value(ptr))) {
		lerr(l, sub, "must be a JSON Pointer: empty, or \"/\"-separated tokens with ~0 and ~1 "
		             "escapes");
	} else if (!(a->pointer = dup_str(json_string_value(ptr)))) {
		lerr(l, sub, "out of memory");
	} else {
		policy_arg_prepare(a);
	}

	const json_t *eq = json_object_get(v, "equals"), *mt = json_object_get(v, "matches"),
	             *ex = json_object_get(v, "exists");
	if ((eq != NULL) + (mt != NULL) + (ex != NULL) != 1) {
		lerr(l, path, "needs exactly one of \"equals\", \"matches\", \"exists\"");
		return;
	}
	if (eq) {
		a->op = POLICY_ARG_EQUALS;
		a->equals = json_incref((json_t *)(uintptr_t)eq);
	} else if (mt) {
		a->op = POLICY_ARG_MATCHES;
		path_key(sub, path, "matches");
		parse_regex(l, mt, sub, a);
	} else {
		a->op = POLICY_ARG_EXISTS;
		path_key(sub, path, "exists");
		parse_bool(l, ex, sub, &a->exists);
	}
}

/* ---- rules ------------------------------------------------------------------------ */

static void parse_hints(struct load *l, const json_t *v, const char *path, struct policy_hints *h)
{
	static const char *const keys[] = {"readOnlyHint", "destructiveHint", "idempotentHint",
	                                   "openWorldHint", NULL};
	char sub[LOAD_MAX_PATH];
	signed char *slot[] = {&h->read_only, &h->destructive, &h->idempotent, &h->open_world};

	if (!json_is_object(v)) {
		lerr(l, path, "must be an object of hints, e.g. {\"readOnlyHint\": true}");
		return;
	}
	if (json_object_size(v) == 0)
		lerr(l, path, "must name at least one hint");
	check_keys(l, v, path, keys);
	for (size_t i = 0; keys[i]; i++) {
		const json_t *b = json_object_get(v, keys[i]);
		if (!b)
			continue;
		path_key(sub, path, keys[i]);
		if (!json_is_boolean(b))
			lerr(l, sub, "must be true or false");
		else
			*slot[i] = (signed char)json_is_true(b);
	}
}

static void parse_match(struct load *l, const json_t *m, const char *path, struct policy_rule *r)
{
	static const char *const keys[] = {"tool", "client", "upstream", "method", "annotations",
	                                   "name_words", "args", NULL};
	char sub[LOAD_MAX_PATH], sub2[LOAD_MAX_PATH];
	const json_t *v;

	if (!json_is_object(m)) {
		lerr(l, path, "must be an object");
		return;
	}
	check_keys(l, m, path, keys);
	struct {
		const char *key;
		struct policy_strlist *list;
	} lists[] = {
		{"tool", &r->tool}, {"client", &r->client}, {"upstream", &r->upstream},
		{"method", &r->method},
	};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		if ((v = json_object_get(m, lists[i].key))) {
			path_key(sub, path, lists[i].key);
			parse_strlist(l, v, sub, lists[i].list, POLICY_MAX_PATTERNS, 0, 0);
		}
	}
	if ((v = json_object_get(m, "annotations"))) {
		path_key(sub, path, "annotations");
		parse_hints(l, v, sub, &r->hints);
	}
	if ((v = json_object_get(m, "name_words"))) {
		path_key(sub, path, "name_words");
		if (json_is_boolean(v)) {
			r->name_words = json_is_true(v);
		} else if (json_is_array(v)) {
			r->name_words = 1;
			parse_strlist(l, v, sub, &r->words, POLICY_MAX_WORDS, 1, 0);
		} else {
			lerr(l, sub, "must be true, false, or an array of words");
		}
	}
	if ((v = json_object_get(m, "args"))) {
		path_key(sub, path, "args");
		if (!json_is_array(v) || json_array_size(v) == 0) {
			lerr(l, sub, "must be a non-empty array of argument matchers");
		} else if (json_array_size(v) > POLICY_MAX_ARGS) {
			lerr(l, sub, "more than %d argument matchers", POLICY_MAX_ARGS);
		} else if (!(r->args = calloc(json_array_size(v), sizeof(*r->args)))) {
			lerr(l, sub, "out of memory");
		} else {
			for (size_t i = 0; i < json_array_size(v); i++) {
				path_index(sub2, sub, i);
				r->nargs++;
				parse_arg(l, json_array_get(v, i), sub2, &r->args[i]);
			}
		}
	}
	/* Tool matchers only ever see tools/call: a method list leaving it out
	 * makes a rule that can never match, which is a mistake to report. */
	int toolish = r->tool.n || r->name_words >= 0 || r->hints.read_only >= 0 ||
	              r->hints.destructive >= 0 || r->hints.idempotent >= 0 ||
	              r->hints.open_world >= 0;
	if (toolish && r->method.n) {
		int call = 0;
		for (size_t i = 0; i < r->method.n; i++)
			call |= policy_glob(r->method.v[i], "tools/call");
		if (!call) {
			path_key(sub, path, "method");
			lerr(l, sub, "must include tools/call when tool, annotations or name_words are "
			             "matched (only tools/call has a tool)");
		}
	}
}

static void summary_add(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void summary_add(char *buf, size_t cap, const char *fmt, ...)
{
	size_t n = strlen(buf);
	if (n + 1 >= cap)
		return;
	if (n && n + 2 < cap) {
		strcat(buf, "; ");
		n += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, cap - n, fmt, ap);
	va_end(ap);
}

static void summary_list(char *buf, size_t cap, const char *what, const struct policy_strlist *l)
{
	if (!l->n)
		return;
	summary_add(buf, cap, "%s %s%s", what, l->v[0], l->n > 1 ? " (or others)" : "");
}

/* What a rule matched on, for the decision's reason when it has no
 * "message". */
static char *rule_summary(const struct policy_rule *r)
{
	static const char *const hint_names[] = {"readOnlyHint", "destructiveHint", "idempotentHint",
	                                         "openWorldHint"};
	char buf[512] = "";
	const signed char h[] = {r->hints.read_only, r->hints.destructive, r->hints.idempotent,
	                         r->hints.open_world};

	summary_list(buf, sizeof(buf), "method", &r->method);
	summary_list(buf, sizeof(buf), "tool", &r->tool);
	for (size_t i = 0; i < 4; i++)
		if (h[i] >= 0)
			summary_add(buf, sizeof(buf), "%s %s", hint_names[i], h[i] ? "true" : "false");
	if (r->name_words >= 0)
		summary_add(buf, sizeof(buf), "name %s a change word",
		            r->name_words ? "has" : "has no");
	summary_list(buf, sizeof(buf), "client", &r->client);
	summary_list(buf, sizeof(buf), "upstream", &r->upstream);
	for (size_t i = 0; i < r->nargs; i++) {
		const struct policy_arg *a = &r->args[i];
		const char *ptr = a->pointer ? a->pointer : "?";
		if (a->op == POLICY_ARG_MATCHES)
			summary_add(buf, sizeof(buf), "argument %s matches a pattern", ptr);
		else if (a->op == POLICY_ARG_EQUALS)
			summary_add(buf, sizeof(buf), "argument %s has a given value", ptr);
		else
			summary_add(buf, sizeof(buf), "argument %s is %s", ptr,
			            a->exists ? "present" : "absent");
	}
	if (!buf[0])
		return dup_printf("matched rule %s (every %s)", r->name,
		                  r->method.n ? "request" : "tools/call");
	return dup_printf("matched rule %s: %s", r->name, buf);
}

static int name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > POLICY_MAX_NAME)
		return 0;
	for (; *s; s++) {
		char c = *s;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.' || c == ':'))
			return 0;
	}
	return 1;
}

static void parse_rule(struct load *l, const json_t *v, const char *path, struct policy *p,
                       struct policy_rule *r)
{
	static const char *const keys[] = {"name", "description", "match", "action", "message",
	                                   "dry_run", NULL};
	char sub[LOAD_MAX_PATH];
	const json_t *x;

	r->hints = (struct policy_hints){-1, -1, -1, -1};
	r->name_words = -1;
	if (!json_is_object(v)) {
		lerr(l, path, "must be an object {\"name\", \"match\", \"action\"}");
		return;
	}
	check_keys(l, v, path, keys);

	path_key(sub, path, "name");
	x = json_object_get(v, "name");
	if (!x) {
		lerr(l, sub, "required");
	} else if (!json_is_string(x) || !name_ok(json_string_value(x))) {
		lerr(l, sub, "must be a string of 1 to %d letters, digits, '_', '-', '.' or ':'",
		     POLICY_MAX_NAME);
	} else if (strcmp(json_string_value(x), POLICY_RULE_DEFAULT) == 0 ||
	           strcmp(json_string_value(x), POLICY_RULE_UNKNOWN) == 0) {
		lerr(l, sub, "\"%s\" is reserved", json_string_value(x));
	} else {
		for (size_t i = 0; i < p->nrules; i++)
			if (p->rules[i].name && strcmp(p->rules[i].name, json_string_value(x)) == 0)
				lerr(l, sub, "\"%s\" is also the name of rules[%zu]", json_string_value(x), i);
		r->name = dup_str(json_string_value(x));
	}

	if ((x = json_object_get(v, "description")) && !json_is_string(x)) {
		path_key(sub, path, "description");
		lerr(l, sub, "must be a string");
	}

	path_key(sub, path, "action");
	if (!(x = json_object_get(v, "action")))
		lerr(l, sub, "required");
	else
		parse_action(l, x, sub, &r->action);

	if ((x = json_object_get(v, "dry_run"))) {
		path_key(sub, path, "dry_run");
		parse_bool(l, x, sub, &r->dry_run);
	}

	if ((x = json_object_get(v, "match"))) {
		path_key(sub, path, "match");
		parse_match(l, x, sub, r);
	}

	if ((x = json_object_get(v, "message"))) {
		path_key(sub, path, "message");
		const char *s = good_string(l, x, sub, 512);
		if (s) {
			for (const char *c = s; *c; c++)
				if ((unsigned char)*c < 0x20) {
					lerr(l, sub, "must be one line (no control characters)");
					s = NULL;
					break;
				}
		}
		if (s)
			r->reason = dup_str(s);
	}
	if (r->name) {
		if (!r->reason)
			r->reason = rule_summary(r);
		r->tag_block = dup_printf("policy:%s", r->name);
		r->tag_dry = dup_printf("dry-run:%s", r->name);
		if (!r->reason || !r->tag_block || !r->tag_dry)
			lerr(l, path, "out of memory");
	}
}

/* ---- the policy --------------------------------------------------------------------- */

static void parse_words(struct load *l, const json_t *conf, const char *path, struct policy *p)
{
	char sub[LOAD_MAX_PATH];
	const json_t *v = json_object_get(conf, "change_words");

	if (v) {
		path_key(sub, path, "change_words");
		if (!json_is_array(v))
			lerr(l, sub, "must be an array of words (it replaces the built-in list)");
		else
			parse_strlist(l, v, sub, &p->words, POLICY_MAX_WORDS, 1, 1);
	} else {
		const char *const *b = policy_builtin_words();
		for (size_t i = 0; b[i]; i++)
			if (list_push(&p->words, b[i], 1) < 0)
				lerr(l, path, "out of memory");
	}
	if ((v = json_object_get(conf, "extra_change_words"))) {
		path_key(sub, path, "extra_change_words");
		if (!json_is_array(v))
			lerr(l, sub, "must be an array of words (added to the list)");
		else if (p->words.n + json_array_size(v) > POLICY_MAX_WORDS)
			lerr(l, sub, "more than %d change words in all", POLICY_MAX_WORDS);
		else
			parse_strlist(l, v, sub, &p->words, POLICY_MAX_WORDS, 1, 1);
	}
}

/* Each argument pattern's place in a caller's policy_rx. */
static void number_patterns(struct policy *p)
{
	for (size_t i = 0; i < p->nrules; i++)
		for (size_t k = 0; k < p->rules[i].nargs; k++)
			if (p->rules[i].args[k].op == POLICY_ARG_MATCHES && p->rules[i].args[k].rx)
				p->rules[i].args[k].rx_id = p->nrx++;
}

static int fill_stats(struct policy *p)
{
	p->stats = calloc(p->nrules + 2, sizeof(*p->stats));
	p->default_tag_block = dup_printf("policy:%s", POLICY_RULE_DEFAULT);
	p->default_tag_dry = dup_printf("dry-run:%s", POLICY_RULE_DEFAULT);
	p->unknown_tag_block = dup_printf("policy:%s", POLICY_RULE_UNKNOWN);
	p->unknown_tag_dry = dup_printf("dry-run:%s", POLICY_RULE_UNKNOWN);
	if (!p->stats || !p->default_tag_block || !p->default_tag_dry || !p->unknown_tag_block ||
	    !p->unknown_tag_dry)
		return -1;
	for (size_t i = 0; i < p->nrules; i++) {
		p->stats[i].rule = p->rules[i].name;
		p->stats[i].action = p->rules[i].action;
	}
	p->stats[p->nrules].rule = POLICY_RULE_DEFAULT;
	p->stats[p->nrules].action = p->dflt;
	p->stats[p->nrules + 1].rule = POLICY_RULE_UNKNOWN;
	p->stats[p->nrules + 1].action = POLICY_DENY;
	return 0;
}

struct policy *policy_load(const json_t *conf, const char *where, char *err, size_t errlen)
{
	/* "$schema": the JSON Schema hint editors read (conf/mcpwarden-policy.schema.json),
	 * accepted as the config file's is, and not used. */
	static const char *const keys[] = {"$schema", "description", "default", "dry_run",
	                                   "unknown_tools", "change_words", "extra_change_words",
	                                   "rules", NULL};
	struct load l = {.err = err, .errlen = errlen};
	char sub[LOAD_MAX_PATH], sub2[LOAD_MAX_PATH];
	const json_t *v;

	if (err && errlen)
		err[0] = '\0';
	if (!where)
		where = "$";
	if (!json_is_object(conf)) {
		lerr(&l, where, "must be an object");
		return NULL;
	}
	struct policy *p = calloc(1, sizeof(*p));
	if (!p) {
		lerr(&l, where, "out of memory");
		return NULL;
	}
	p->dflt = POLICY_ALLOW;
	p->unknown = POLICY_UNKNOWN_DENY;
	check_keys(&l, conf, where, keys);

	if ((v = json_object_get(conf, "$schema")) && !json_is_string(v)) {
		path_key(sub, where, "$schema");
		lerr(&l, sub, "must be a string");
	}
	if ((v = json_object_get(conf, "description")) && !json_is_string(v)) {
		path_key(sub, where, "description");
		lerr(&l, sub, "must be a string");
	}
	if ((v = json_object_get(conf, "default"))) {
		path_key(sub, where, "default");
		parse_action(&l, v, sub, &p->dflt);
	}
	if ((v = json_object_get(conf, "dry_run"))) {
		path_key(sub, where, "dry_run");
		parse_bool(&l, v, sub, &p->dry_run);
	}
	if ((v = json_object_get(conf, "unknown_tools"))) {
		path_key(sub, where, "unknown_tools");
		if (json_is_string(v) && strcmp(json_string_value(v), "deny") == 0)
			p->unknown = POLICY_UNKNOWN_DENY;
		else if (json_is_string(v) && strcmp(json_string_value(v), "rules") == 0)
			p->unknown = POLICY_UNKNOWN_RULES;
		else
			lerr(&l, sub, "must be \"deny\" or \"rules\"");
	}
	parse_words(&l, conf, where, p);

	if ((v = json_object_get(conf, "rules"))) {
		path_key(sub, where, "rules");
		if (!json_is_array(v)) {
			lerr(&l, sub, "must be an array of rules");
		} else if (json_array_size(v) > POLICY_MAX_RULES) {
			lerr(&l, sub, "more than %d rules", POLICY_MAX_RULES);
		} else if (json_array_size(v) &&
		           !(p->rules = calloc(json_array_size(v), sizeof(*p->rules)))) {
			lerr(&l, sub, "out of memory");
		} else {
			for (size_t i = 0; i < json_array_size(v); i++) {
				path_index(sub2, sub, i);
				parse_rule(&l, json_array_get(v, i), sub2, p, &p->rules[i]);
				p->nrules++;
			}
		}
	}
	if (l.nerr == 0 && fill_stats(p) < 0)
		lerr(&l, where, "out of memory");
	number_patterns(p);
	if (l.nerr) {
		policy_free(p);
		return NULL;
	}
	return p;
}

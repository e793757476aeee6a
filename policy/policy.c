/* policy: evaluation of a compiled policy (see policy.h). The compiled form
 * is built by policy_load.c; this file only reads it, apart from the
 * statistics counters.
 *
 * Not here: parsing (policy_load.c), tool listings and what to do with a
 * decision (proxy/hooks/hook_policy.c).
 */
#define POLICY_INTERNAL
#include "policy/policy.h"

#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Verbs that signal a change of data or state. Chosen to be rarely nouns
 * in read-only tool names: "post", "order", "share", "commit",
 * "schedule", "close", "block", "start" are left out because get_post,
 * get_commit, get_schedule, get_close_price… are common read-only tools.
 * Add them with "extra_change_words" where they mean a change. */
static const char *const builtin_words[] = {
	/* removal */
	"delete", "del", "remove", "rm", "rmdir", "unlink", "drop", "destroy", "erase",
	"purge", "wipe", "truncate", "clear", "reset",
	/* messages leaving the system */
	"send", "publish", "broadcast", "notify", "reply", "invite",
	/* money */
	"pay", "charge", "refund", "transfer", "withdraw", "deposit", "purchase", "buy", "sell",
	/* writes */
	"write", "update", "upsert", "create", "insert", "add", "put", "patch", "edit",
	"modify", "set", "rename", "move", "mv", "copy", "cp", "upload", "save", "overwrite",
	"replace", "append", "mkdir", "touch", "import", "migrate", "restore", "mutate",
	"toggle",
	/* processes and deployments */
	"kill", "terminate", "shutdown", "stop", "restart", "reboot", "deploy", "rollback",
	"install", "uninstall", "exec", "execute", "eval", "run", "trigger",
	/* workflow and access */
	"merge", "push", "fork", "clone", "apply", "approve", "reject", "grant", "revoke",
	"assign", "unassign", "ban", "enable", "disable", "archive", "cancel", "submit",
	"reopen", "clean", "cleanup", "flush",
	NULL,
};

const char *const *policy_builtin_words(void)
{
	return builtin_words;
}

const char *policy_action_str(enum policy_action a)
{
	switch (a) {
	case POLICY_ALLOW: return "allow";
	case POLICY_DENY: return "deny";
	case POLICY_HIDE: return "hide";
	case POLICY_LOG: return "log";
	case POLICY_NONE: break;
	}
	return "none";
}

/* ---- globs ------------------------------------------------------------------ */

static const char *utf8_next(const char *s)
{
	s++;
	while (((unsigned char)*s & 0xC0) == 0x80)
		s++;
	return s;
}

int policy_glob(const char *p, const char *s)
{
	/* Classic two-pointer matcher: on a mismatch, let the last '*' eat
	 * one more byte and retry from just after it. Linear in practice,
	 * O(len(p) * len(s)) at worst; no recursion. */
	const char *star_p = NULL, *star_s = NULL;

	for (;;) {
		if (*p == '*') {
			while (*p == '*')
				p++;
			if (!*p)
				return 1;
			star_p = p;
			star_s = s;
			continue;
		}
		if (!*s)
			return *p == '\0';
		if (*p == '?') {
			p++;
			s = utf8_next(s);
			continue;
		}
		const char *lit = (*p == '\\' && p[1]) ? p + 1 : p;
		if (*lit && *lit == *s) {
			p = lit + 1;
			s++;
			continue;
		}
		if (!star_p || !*star_s)
			return 0;
		p = star_p;
		s = ++star_s;
	}
}

static int list_match(const struct policy_strlist *l, const char *s)
{
	if (!s)
		return 0;
	for (size_t i = 0; i < l->n; i++)
		if (policy_glob(l->v[i], s))
			return 1;
	return 0;
}

/* ---- JSON pointers ------------------------------------------------------------ */

static const json_t *array_index(const json_t *a, const char *tok, size_t n)
{
	if (n == 0 || n > 9 || (n > 1 && tok[0] == '0'))
		return NULL;
	size_t idx = 0;
	for (size_t i = 0; i < n; i++) {
		if (tok[i] < '0' || tok[i] > '9')
			return NULL;
		idx = idx * 10 + (size_t)(tok[i] - '0');
	}
	return json_array_get(a, idx);
}

const json_t *policy_pointer_get(const json_t *doc, const char *ptr)
{
	char tok[POLICY_MAX_STRING + 1];
	const json_t *cur = doc;

	if (!doc || !ptr)
		return NULL;
	if (*ptr && *ptr != '/')
		return NULL;
	while (*ptr == '/') {
		const char *key = ++ptr;
		size_t n = 0;
		int escaped = 0;
		while (ptr[n] && ptr[n] != '/')
			escaped |= ptr[n++] == '~';
		if (escaped) {
			/* ~0 and ~1 decoded into tok; a token without them is used
			 * where it stands (lookups take a length, no NUL needed). */
			size_t k = 0;
			for (size_t i = 0; i < n; i++) {
				char c = ptr[i];
				if (c == '~') {
					if (ptr[i + 1] == '0')
						c = '~';
					else if (ptr[i + 1] == '1')
						c = '/';
					else
						return NULL;
					i++;
				}
				if (k >= sizeof(tok) - 1)
					return NULL;
				tok[k++] = c;
			}
			key = tok;
			ptr += n;
			n = k;
		} else {
			/* The same bound as a decoded token's. */
			if (n > sizeof(tok) - 1)
				return NULL;
			ptr += n;
		}
		if (json_is_object(cur))
			cur = json_object_getn(cur, key, n);
		else if (json_is_array(cur))
			cur = array_index(cur, key, n);
		else
			return NULL;
		if (!cur)
			return NULL;
	}
	return cur;
}

/* ---- hints ---------------------------------------------------------------------- */

static signed char hint_value(const json_t *v)
{
	return json_is_boolean(v) ? (signed char)json_is_true(v) : -1;
}

/* One walk over the members, not four lookups: annotations hold a few
 * members, and hashing four keys for each of a thousand tools was most of
 * a listing's policy walk (1.7M instructions a 1,000-tool list,
 * tests/bench/profile.sh listvary). */
void policy_hints_from_json(const json_t *annotations, struct policy_hints *out)
{
	json_t *ann = (json_t *)(uintptr_t)annotations; /* read only: the iterator wants non-const */
	*out = (struct policy_hints){-1, -1, -1, -1};
	if (!json_is_object(ann))
		return;
	for (void *it = json_object_iter(ann); it; it = json_object_iter_next(ann, it)) {
		const char *k = json_object_iter_key(it);
		size_t n = json_object_iter_key_len(it);
		signed char *slot = n == 12 && memcmp(k, "readOnlyHint", 12) == 0       ? &out->read_only
		                    : n == 15 && memcmp(k, "destructiveHint", 15) == 0 ? &out->destructive
		                    : n == 14 && memcmp(k, "idempotentHint", 14) == 0  ? &out->idempotent
		                    : n == 13 && memcmp(k, "openWorldHint", 13) == 0   ? &out->open_world
		                                                                      : NULL;
		if (slot)
			*slot = hint_value(json_object_iter_value(it));
	}
}

/* Spec defaults: readOnly false, destructive true, idempotent false,
 * openWorld true; the last two hints only apply to tools that write. */
static void hints_defaulted(const struct policy_hints *h, struct policy_hints *o)
{
	static const struct policy_hints none = {-1, -1, -1, -1};
	if (!h)
		h = &none;
	o->read_only = h->read_only == 1;
	o->destructive = o->read_only ? 0 : h->destructive != 0;
	o->idempotent = o->read_only ? 1 : h->idempotent == 1;
	o->open_world = h->open_world != 0;
}

void policy_hints_effective(const struct policy_hints *hints, const struct policy_hints *baseline,
                            struct policy_hints *out)
{
	hints_defaulted(hints, out);
	if (!baseline)
		return;
	struct policy_hints b;
	hints_defaulted(baseline, &b);
	/* The less safe of the two claims, hint by hint. */
	out->read_only = out->read_only && b.read_only;
	out->destructive = out->destructive || b.destructive;
	out->idempotent = out->idempotent && b.idempotent;
	out->open_world = out->open_world || b.open_world;
}

/* ---- name words ------------------------------------------------------------------- */

enum char_class { CC_SEP, CC_LOWER, CC_UPPER, CC_DIGIT };

static enum char_class cclass(unsigned char c)
{
	if (c >= 'a' && c <= 'z')
		return CC_LOWER;
	if (c >= 'A' && c <= 'Z')
		return CC_UPPER;
	if (c >= '0' && c <= '9')
		return CC_DIGIT;
	/* Bytes of non-ASCII characters belong to words (as lower case). */
	return c >= 0x80 ? CC_LOWER : CC_SEP;
}

/* Whether a word starts at i (i > 0, name[i] not a separator). */
static int word_boundary(const char *name, size_t i)
{
	enum char_class prev = cclass((unsigned char)name[i - 1]);
	enum char_class cur = cclass((unsigned char)name[i]);
	if (prev == CC_SEP)
		return 1;
	if ((prev == CC_DIGIT) != (cur == CC_DIGIT))
		return 1;
	if (prev == CC_LOWER && cur == CC_UPPER)
		return 1;
	/* "HTTPRequest": the R starts "Request". */
	if (prev == CC_UPPER && cur == CC_UPPER && cclass((unsigned char)name[i + 1]) == CC_LOWER)
		return 1;
	return 0;
}

static int word_in(const char *const *list, size_t n, const char *word)
{
	for (size_t i = 0; i < n; i++) {
		/* A pattern opening with a plain character other than the word's
		 * first cannot match: most of the list is skipped without a glob
		 * call (word is never empty). */
		char c = list[i][0];
		if (c != word[0] && c != '*' && c != '?' && c != '\\')
			continue;
		if (policy_glob(list[i], word))
			return 1;
	}
	return 0;
}

/* Splits name into words and looks each (lower-cased) up in list. */
static int name_has_word(const char *const *list, size_t n, const char *name, char *found,
                         size_t foundlen)
{
	char word[POLICY_MAX_WORD + 1];
	size_t i = 0;

	if (!name)
		return 0;
	while (name[i]) {
		if (cclass((unsigned char)name[i]) == CC_SEP) {
			i++;
			continue;
		}
		size_t len = 0;
		do {
			if (len < sizeof(word) - 1) {
				unsigned char c = (unsigned char)name[i];
				word[len] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
			}
			len++;
			i++;
		} while (name[i] && cclass((unsigned char)name[i]) != CC_SEP && !word_boundary(name, i));
		if (len > POLICY_MAX_WORD)
			continue;
		word[len] = '\0';
		if (word_in(list, n, word)) {
			if (found && foundlen) {
				strncpy(found, word, foundlen - 1);
				found[foundlen - 1] = '\0';
			}
			return 1;
		}
	}
	return 0;
}

static size_t builtin_count(void)
{
	size_t n = 0;
	while (builtin_words[n])
		n++;
	return n;
}

int policy_change_word(const struct policy *p, const char *name, char *word, size_t wordlen)
{
	if (!p)
		return name_has_word(builtin_words, builtin_count(), name, word, wordlen);
	return name_has_word((const char *const *)p->words.v, p->words.n, name, word, wordlen);
}

/* ---- arguments ------------------------------------------------------------------------- */

static int json_same(const json_t *a, const json_t *b)
{
	/* 1 and 1.0 are the same argument value to a person writing a rule. */
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal(a, b);
}

struct policy_rx {
	size_t n;                /* the policy's nrx */
	regex_t **re;            /* owned: n patterns, NULL until first used */
};

struct policy_rx *policy_rx_new(const struct policy *p)
{
	struct policy_rx *rx = calloc(1, sizeof(*rx));
	if (!rx)
		return NULL;
	rx->n = p->nrx;
	if (!(rx->re = calloc(rx->n ? rx->n : 1, sizeof(*rx->re)))) {
		free(rx);
		return NULL;
	}
	return rx;
}

void policy_rx_free(struct policy_rx *rx)
{
	if (!rx)
		return;
	for (size_t i = 0; i < rx->n; i++) {
		if (rx->re[i]) {
			regfree(rx->re[i]);
			free(rx->re[i]);
		}
	}
	free(rx->re);
	free(rx);
}

/* The compiled pattern a's values are matched with: the caller's copy
 * (compiled here the first time), or a->re without one (or when it cannot
 * be compiled: out of memory). */
static const regex_t *regex_of(const struct policy_arg *a, struct policy_rx *rx)
{
	if (!rx || !a->rx || a->rx_id >= rx->n)
		return &a->re;
	regex_t *re = rx->re[a->rx_id];
	if (re)
		return re;
	if (!(re = malloc(sizeof(*re))))
		return &a->re;
	if (regcomp(re, a->rx, a->re_flags) != 0) {
		free(re);
		return &a->re;
	}
	rx->re[a->rx_id] = re;
	return re;
}

static int regex_on(const regex_t *re, const json_t *v)
{
	char *text;
	if (json_is_string(v)) {
		/* regexec stops at NUL: an argument "\u0000DROP …" must not slip
		 * past, so NULs are read as spaces. Without one, the string is
		 * matched where it stands. */
		size_t n = json_string_length(v);
		if (!memchr(json_string_value(v), '\0', n))
			return regexec(re, json_string_value(v), 0, NULL, 0) == 0;
		text = malloc(n + 1);
		if (!text)
			return 1;  /* fail closed: a deny rule still denies */
		memcpy(text, json_string_value(v), n);
		for (size_t i = 0; i < n; i++)
			if (text[i] == '\0')
				text[i] = ' ';
		text[n] = '\0';
	} else {
		/* Numbers, booleans, arrays, objects: their compact JSON text, so
		 * ["DROP TABLE x"] where a string was expected is still seen. */
		text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text)
			return 1;
	}
	int rc = regexec(re, text, 0, NULL, 0);
	free(text);
	return rc == 0;
}

void policy_arg_prepare(struct policy_arg *a)
{
	const char *p = a->pointer;
	a->one_token = p[0] == '/' && !strpbrk(p + 1, "/~");
	a->tok_len = a->one_token ? strlen(p + 1) : 0;
}

/* policy_pointer_get(args, a->pointer), without walking the pointer's
 * text when it is one plain token. */
static const json_t *arg_value(const struct policy_arg *a, const json_t *args)
{
	if (!args)
		return NULL;
	if (!a->one_token)
		return policy_pointer_get(args, a->pointer);
	if (json_is_object(args))
		return json_object_getn(args, a->pointer + 1, a->tok_len);
	if (json_is_array(args))
		return array_index(args, a->pointer + 1, a->tok_len);
	return NULL;
}

static int arg_matches(const struct policy_arg *a, const json_t *args, struct policy_rx *rx)
{
	const json_t *v = arg_value(a, args);
	switch (a->op) {
	case POLICY_ARG_EXISTS:
		return (v != NULL) == (a->exists != 0);
	case POLICY_ARG_EQUALS:
		return v && json_same(v, a->equals);
	case POLICY_ARG_MATCHES:
		return v && regex_on(regex_of(a, rx), v);
	}
	return 0;
}

/* ---- evaluation ------------------------------------------------------------------------- */

/* The matchers of a rule that do not look at the arguments: method, tool,
 * client, upstream, hints, name words. */
int policy_rule_static(const struct policy *p, const struct policy_rule *r,
                       const struct policy_input *in, int is_call)
{
	if (r->method.n == 0 ? !is_call : !list_match(&r->method, in->method))
		return 0;
	if (r->tool.n && !list_match(&r->tool, in->tool))
		return 0;
	if (r->client.n && !list_match(&r->client, in->client))
		return 0;
	if (r->upstream.n && !list_match(&r->upstream, in->upstream))
		return 0;
	if (policy_rule_uses_hints(r)) {
		if (!is_call || !in->tool)
			return 0;
		struct policy_hints e;
		policy_hints_effective(in->hints, in->baseline, &e);
		if ((r->hints.read_only >= 0 && r->hints.read_only != e.read_only) ||
		    (r->hints.destructive >= 0 && r->hints.destructive != e.destructive) ||
		    (r->hints.idempotent >= 0 && r->hints.idempotent != e.idempotent) ||
		    (r->hints.open_world >= 0 && r->hints.open_world != e.open_world))
			return 0;
	}
	if (r->name_words >= 0) {
		if (!in->tool)
			return 0;
		const struct policy_strlist *w = r->words.n ? &r->words : &p->words;
		int has = name_has_word((const char *const *)w->v, w->n, in->tool, NULL, 0);
		if (has != r->name_words)
			return 0;
	}
	return 1;
}

int policy_rule_args(const struct policy_rule *r, const json_t *args, struct policy_rx *rx)
{
	for (size_t i = 0; i < r->nargs; i++)
		if (!arg_matches(&r->args[i], args, rx))
			return 0;
	return 1;
}

int policy_rule_uses_hints(const struct policy_rule *r)
{
	return r->hints.read_only >= 0 || r->hints.destructive >= 0 || r->hints.idempotent >= 0 ||
	       r->hints.open_world >= 0;
}

const json_t *policy_input_args(const struct policy_input *in)
{
	if (in->args || !in->call_params)
		return in->args;
	return json_object_getn(in->call_params, "arguments", 9);
}

/* in->args must be resolved (policy_input_args) by the caller. */
static int rule_matches(const struct policy *p, const struct policy_rule *r,
                        const struct policy_input *in, int is_call)
{
	return policy_rule_static(p, r, in, is_call) && policy_rule_args(r, in->args, in->rx);
}

static void decide(struct policy_decision *out, enum policy_action action, int dry,
                   const char *rule, const char *reason, const char *tag_block,
                   const char *tag_dry, int stat)
{
	out->rule = rule;
	out->reason = reason;
	out->stat = stat;
	out->dry_run_would = POLICY_NONE;
	out->action = action;
	out->tag = NULL;
	if ((action == POLICY_DENY || action == POLICY_HIDE) && dry) {
		out->dry_run_would = action;
		out->action = POLICY_LOG;
		out->tag = tag_dry;
	} else if (action == POLICY_DENY || action == POLICY_HIDE) {
		out->tag = tag_block;
	} else if (action == POLICY_LOG) {
		out->tag = rule;
	}
}

void policy_decide_unknown(const struct policy *p, const struct policy_input *in,
                           struct policy_decision *out)
{
	decide(out, POLICY_DENY, p->dry_run, POLICY_RULE_UNKNOWN,
	       in->tool ? "the upstream has not listed this tool, so its annotations are "
	                  "unknown (list the tools first)"
	                : "tools/call without a tool name",
	       p->unknown_tag_block, p->unknown_tag_dry, (int)p->nrules + 1);
}

void policy_decide_rule(const struct policy *p, size_t i, struct policy_decision *out)
{
	const struct policy_rule *r = &p->rules[i];
	decide(out, r->action, p->dry_run || r->dry_run, r->name, r->reason, r->tag_block,
	       r->tag_dry, (int)i);
}

void policy_decide_default(const struct policy *p, struct policy_decision *out)
{
	decide(out, p->dflt, p->dry_run, POLICY_RULE_DEFAULT,
	       "no rule matched: the policy's default action", p->default_tag_block,
	       p->default_tag_dry, (int)p->nrules);
}

void policy_eval_from(const struct policy *p, const struct policy_input *in, int is_call,
                      size_t from, struct policy_decision *out)
{
	struct policy_input resolved;
	if (from < p->nrules && !in->args && in->call_params) {
		resolved = *in;
		resolved.args = policy_input_args(in);
		in = &resolved;
	}
	for (size_t i = from; i < p->nrules; i++) {
		if (rule_matches(p, &p->rules[i], in, is_call)) {
			policy_decide_rule(p, i, out);
			return;
		}
	}
	if (is_call) {
		policy_decide_default(p, out);
		return;
	}
	decide(out, POLICY_ALLOW, 0, NULL, "no rule names this method", NULL, NULL, -1);
}

void policy_eval(const struct policy *p, const struct policy_input *in,
                 struct policy_decision *out)
{
	int is_call = in->method && strcmp(in->method, "tools/call") == 0;

	if (is_call && (!in->tool_known || !in->tool) && p->unknown == POLICY_UNKNOWN_DENY) {
		policy_decide_unknown(p, in, out);
		return;
	}
	policy_eval_from(p, in, is_call, 0, out);
}

/* ---- statistics and accessors ----------------------------------------------------------- */

/* The counters are bumped by every worker thread that judges under p, with
 * no lock (proxy/hooks/hook_policy.c): relaxed atomic adds, so none is lost and
 * no thread ever waits for another; a reader may see one counter of a
 * decision before the other, which totals over time do not mind. */
static void bump(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static uint64_t peek(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

void policy_count(struct policy *p, const struct policy_decision *d, int listing)
{
	if (!p || d->stat < 0 || (size_t)d->stat >= p->nrules + 2)
		return;
	struct policy_rule_stats *s = &p->stats[d->stat];
	if (listing) {
		if (d->action == POLICY_HIDE)
			bump(&s->hidden);
		else if (d->dry_run_would == POLICY_HIDE)
			bump(&s->dry_run_hidden);
		return;
	}
	bump(&s->matched);
	switch (d->action) {
	case POLICY_ALLOW:
		bump(&s->allowed);
		break;
	case POLICY_DENY:
	case POLICY_HIDE:
		bump(&s->denied);
		break;
	case POLICY_LOG:
		bump(&s->logged);
		if (d->dry_run_would != POLICY_NONE)
			bump(&s->dry_run);
		break;
	case POLICY_NONE:
		break;
	}
}

size_t policy_nstats(const struct policy *p)
{
	return p->nrules + 2;
}

int policy_stats(const struct policy *p, size_t i, struct policy_rule_stats *out)
{
	if (i >= p->nrules + 2)
		return -1;
	const struct policy_rule_stats *s = &p->stats[i];
	*out = (struct policy_rule_stats){
		.rule = s->rule,
		.action = s->action,
		.matched = peek(&s->matched),
		.allowed = peek(&s->allowed),
		.denied = peek(&s->denied),
		.logged = peek(&s->logged),
		.dry_run = peek(&s->dry_run),
		.hidden = peek(&s->hidden),
		.dry_run_hidden = peek(&s->dry_run_hidden),
	};
	return 0;
}

size_t policy_nrules(const struct policy *p)
{
	return p->nrules;
}

int policy_dry_run(const struct policy *p)
{
	return p->dry_run;
}

enum policy_action policy_default(const struct policy *p)
{
	return p->dflt;
}

enum policy_unknown policy_unknown_tools(const struct policy *p)
{
	return p->unknown;
}

int policy_may_hide(const struct policy *p)
{
	if (p->dflt == POLICY_HIDE)
		return 1;
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].action == POLICY_HIDE)
			return 1;
	return 0;
}

/* ---- freeing ---------------------------------------------------------------------------- */

void policy_strlist_fini(struct policy_strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void policy_rule_fini(struct policy_rule *r)
{
	free(r->name);
	free(r->reason);
	free(r->tag_block);
	free(r->tag_dry);
	policy_strlist_fini(&r->tool);
	policy_strlist_fini(&r->client);
	policy_strlist_fini(&r->upstream);
	policy_strlist_fini(&r->method);
	policy_strlist_fini(&r->words);
	for (size_t i = 0; i < r->nargs; i++) {
		struct policy_arg *a = &r->args[i];
		free(a->pointer);
		json_decref(a->equals);
		if (a->re_ok)
			regfree(&a->re);
		free(a->rx);
	}
	free(r->args);
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nrules; i++)
		policy_rule_fini(&p->rules[i]);
	free(p->rules);
	policy_strlist_fini(&p->words);
	free(p->stats);
	free(p->default_tag_block);
	free(p->default_tag_dry);
	free(p->unknown_tag_block);
	free(p->unknown_tag_dry);
	free(p);
}

/* policy: compiled rules that decide, per JSON-RPC message, whether it may
 * go on. Pure: no I/O, no global state, no clock; the glue in
 * proxy/hooks/hook_policy.c feeds it what the proxy knows (method, tool, the
 * tool's hints as last listed and as pinned in a baseline, client and
 * upstream names, arguments) and acts on the decision.
 *
 * Evaluation (policy_eval):
 *   1. A tools/call of a tool nobody listed ("unknown tool") is denied
 *      before any rule when unknown_tools is "deny" (the default): its
 *      annotations cannot be known. With "rules" it is judged by the rules
 *      as an unannotated tool.
 *   2. Rules in order; the first whose every matcher holds decides.
 *      A rule without a "method" matcher only ever matches tools/call.
 *   3. No rule matched: a tools/call gets the default action; any other
 *      method is allowed (decision.rule NULL, nothing counted).
 *   4. dry_run (whole policy, or the rule's own) turns deny and hide into
 *      log; decision.dry_run_would keeps what it would have done.
 *
 * Hints. Annotations are claims by the server. Absent (or non-boolean)
 * hints take the spec defaults: readOnlyHint false, destructiveHint true,
 * idempotentHint false, openWorldHint true. destructiveHint and
 * idempotentHint mean something only when readOnlyHint is false: a
 * read-only tool counts as non-destructive and idempotent. When a baseline
 * is given, each hint is the less safe of baseline and current (read-only
 * only if both say so, destructive if either does, idempotent only if
 * both, open-world if either).
 *
 * Name words. A tool name is split into words on every character that is
 * not a letter or digit (_ - . / …), between a lower-case letter or digit
 * and an upper-case letter (camelCase), before the last capital of a run
 * followed by a lower-case letter ("HTTPRequest" -> HTTP, Request), and
 * between letters and digits. Words are compared case-insensitively with
 * the change-word list (entries may be globs, e.g. "delet*"). Words longer
 * than POLICY_MAX_WORD bytes match nothing.
 *
 * The JSON format is documented in conf/README-policy.md and parsed by
 * policy_load.c.
 */
#ifndef MCPWARDEN_POLICY_H
#define MCPWARDEN_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct policy;
struct policy_rx;

#define POLICY_MAX_RULES    1000  /* rules in one policy */
#define POLICY_MAX_PATTERNS 256   /* strings in one tool/client/upstream/method list */
#define POLICY_MAX_WORDS    1024  /* change words */
#define POLICY_MAX_ARGS     32    /* argument matchers in one rule */
#define POLICY_MAX_STRING   1024  /* bytes in one pattern, word or pointer */
#define POLICY_MAX_REGEX    4096  /* bytes in one regular expression */
#define POLICY_MAX_WORD     255   /* bytes in one word of a tool name */
#define POLICY_MAX_NAME     64    /* bytes in a rule name */

enum policy_action {
	POLICY_NONE = 0,  /* no decision (only in dry_run_would) */
	POLICY_ALLOW,
	POLICY_DENY,      /* not forwarded; the client gets an error */
	POLICY_HIDE,      /* removed from tools/list, and denied when called */
	POLICY_LOG,       /* forwarded, flagged in the record and the log */
};

/* What to do with a tools/call of a tool the upstream never listed. */
enum policy_unknown { POLICY_UNKNOWN_DENY = 0, POLICY_UNKNOWN_RULES };

/* The hints of one tool as a server listed them: -1 absent (or not a
 * boolean), 0 false, 1 true. Defaults are applied at evaluation. */
struct policy_hints {
	signed char read_only, destructive, idempotent, open_world;
};

/* What the proxy knows about one message. Everything is borrowed. */
struct policy_input {
	const char *method;     /* JSON-RPC method; NULL matches nothing */
	const char *tool;       /* tools/call params.name, or NULL */
	const json_t *args;     /* tools/call: params.arguments; other methods:
	                         * params; NULL when absent */
	/* A tools/call's params (or NULL): when set and args is NULL,
	 * params.arguments is looked up only if a rule needs it (most calls
	 * meet no argument matcher). */
	const json_t *call_params;
	const char *client;     /* client name (client token), or NULL */
	const char *upstream;   /* upstream name, or NULL */
	int tool_known;         /* the tool was listed (now or in a baseline) */
	const struct policy_hints *hints;     /* as last listed; NULL: none */
	const struct policy_hints *baseline;  /* as pinned; NULL: no baseline */
	/* The caller's copies of the policy's patterns (policy_rx_new for the
	 * policy judging), or NULL: the policy's own are used. */
	struct policy_rx *rx;
};

/* Copies of a policy's compiled patterns, for one thread. glibc's regexec
 * holds a lock inside the compiled pattern for the whole match: threads
 * matching with one pattern wait on each other, and one preempted
 * mid-match stalls the rest for a scheduler tick. A caller judging from
 * several threads (proxy/hooks/hook_policy.c) gives each thread its own
 * policy_rx in policy_input.rx; each pattern is compiled into it at its
 * first match. Not thread-safe: one thread uses one at a time. p is
 * borrowed and must outlive it. Returns NULL when out of memory (then
 * judge without: still correct). */
struct policy_rx *policy_rx_new(const struct policy *p);
/* Accepts NULL. */
void policy_rx_free(struct policy_rx *rx);

/* Pseudo-rule names used in decisions and statistics. */
#define POLICY_RULE_DEFAULT "default"
#define POLICY_RULE_UNKNOWN "unknown-tool"

struct policy_decision {
	enum policy_action action;         /* final, after dry run */
	const char *rule;                  /* rule name, POLICY_RULE_DEFAULT,
	                                    * POLICY_RULE_UNKNOWN, or NULL (a
	                                    * non-tool method no rule names) */
	const char *reason;                /* one line: the rule's "message", or
	                                    * what it matched on */
	/* DENY or HIDE when a dry run turned that into LOG; else NONE. */
	enum policy_action dry_run_would;
	/* Label for records: "policy:<rule>" for deny/hide, "dry-run:<rule>"
	 * when a dry run forwarded it, the rule name for log, NULL else. */
	const char *tag;
	int stat;                          /* statistics slot, -1: none */
};
/* Strings in a decision are owned by the policy: valid while it lives. */


/* Compiles a policy from its JSON form (borrowed; nothing is kept).
 * `where` prefixes error locations ("$.policy" gives
 * "$.policy.rules[2].match.tool: must be a string or an array of
 * strings"). Every error found is written to err, one per line. Returns
 * an owned policy (policy_free), or NULL. In policy_load.c. */
struct policy *policy_load(const json_t *conf, const char *where, char *err, size_t errlen);
void policy_free(struct policy *p);  /* accepts NULL */

/* Decides on one message. Pure (counts nothing): see policy_count. */
void policy_eval(const struct policy *p, const struct policy_input *in,
                 struct policy_decision *out);

/* ---- memo (policy_memo.c) ---------------------------------------------------
 * policy_eval for tools/call, with what depends only on the tool kept:
 * whether a rule's method, tool, client, upstream, annotation and
 * name-word matchers hold is the same for every call of one tool by one
 * client through one upstream with the same effective hints. A memo keeps,
 * per such key, the rules whose name part held (in order, up to the first
 * one that has no argument matcher), so a call then only evaluates their
 * argument matchers; first match wins as in policy_eval, and the decision
 * is the same in every case.
 *
 * The key holds the effective hints (and the client and upstream names
 * when some rule looks at them), so a tool whose annotations change is
 * simply looked up under another key: no invalidation is needed. A memo
 * belongs to one policy (a reload makes a new policy, and a new memo).
 * Bounded: at most POLICY_MEMO_MAX_ENTRIES keys (when full, it is emptied
 * and refilled), keys over POLICY_MEMO_MAX_KEY bytes are not kept (those
 * calls are judged by policy_eval), and at most POLICY_MEMO_MAX_CAND rules
 * per key (evaluation goes on from the next rule in full).
 * Not thread-safe: the caller serialises policy_memo_eval on one memo. */
#define POLICY_MEMO_MAX_ENTRIES 1024
#define POLICY_MEMO_MAX_KEY     256
#define POLICY_MEMO_MAX_CAND    8

struct policy_memo;

/* p is borrowed and must outlive the memo. Returns an owned memo
 * (policy_memo_free) or NULL (out of memory). Nothing is allocated for
 * the table until the first call. */
struct policy_memo *policy_memo_new(const struct policy *p);
void policy_memo_free(struct policy_memo *m);  /* accepts NULL */

/* policy_eval(p, in, out) for a tools/call and the memo's policy:
 * in->method is not read (taken to be "tools/call"). */
void policy_memo_call(struct policy_memo *m, const struct policy_input *in,
                      struct policy_decision *out);

/* The kept part itself, for a caller that has a place of its own per
 * tool (hook_policy keeps one in each listed tool's entry): the rules,
 * in order, whose non-argument matchers hold for a tools/call, up to the
 * first without argument matchers; resume: the rule where evaluation goes
 * on in full once they fail (nrules: the default decides). Valid for the
 * policy, tool, upstream, effective hints and (when policy_client_keyed)
 * client it was made for; it never depends on the arguments. */
struct policy_cands {
	uint16_t cand[POLICY_MEMO_MAX_CAND];
	uint16_t resume;
	uint8_t n;
};
void policy_cands_of(const struct policy *p, const struct policy_input *in,
                     struct policy_cands *c);
/* policy_eval for a known tool's tools/call (in->tool_known set, in->tool
 * not NULL; in->method not read) with c made by policy_cands_of for it. */
void policy_cands_call(const struct policy *p, const struct policy_cands *c,
                       const struct policy_input *in, struct policy_decision *out);
/* Whether some rule names clients, so that cands depend on the client. */
int policy_client_keyed(const struct policy *p);

/* Keys held, and times the memo was emptied because it was full (for
 * tests and debugging). */
size_t policy_memo_size(const struct policy_memo *m);
size_t policy_memo_resets(const struct policy_memo *m);

/* Counts a decision the proxy acted on. listing: the decision was a tool
 * hidden from (or, in a dry run, left in) a tools/list reply rather than
 * a call. Safe from several threads at once, as is policy_stats (relaxed
 * atomic counters: no lock). */
void policy_count(struct policy *p, const struct policy_decision *d, int listing);

/* Per-rule statistics: slots 0..nrules-1 are the rules in order, then
 * POLICY_RULE_DEFAULT, then POLICY_RULE_UNKNOWN. */
struct policy_rule_stats {
	const char *rule;        /* borrowed: policy lifetime */
	enum policy_action action;
	uint64_t matched;        /* calls (and other requests) decided */
	uint64_t allowed, denied, logged;
	uint64_t dry_run;        /* of logged: a dry run forwarded a deny/hide */
	uint64_t hidden;         /* tools removed from tools/list replies */
	uint64_t dry_run_hidden; /* tools a dry run left in tools/list replies */
};
size_t policy_nstats(const struct policy *p);
/* Returns 0, or -1 past the end. */
int policy_stats(const struct policy *p, size_t i, struct policy_rule_stats *out);

/* Reading a compiled policy. */
size_t policy_nrules(const struct policy *p);
int policy_dry_run(const struct policy *p);
enum policy_action policy_default(const struct policy *p);
enum policy_unknown policy_unknown_tools(const struct policy *p);

/* Whether some rule can hide tools (so tools/list replies must be
 * filtered). */
int policy_may_hide(const struct policy *p);

/* Reads the hints out of a tool's "annotations" (borrowed; NULL or not an
 * object: every hint absent). */
void policy_hints_from_json(const json_t *annotations, struct policy_hints *out);

/* The hints a tool is judged by, as 0/1 each, after defaults and the
 * less-safe rule (baseline may be NULL; hints NULL is "unannotated"). */
void policy_hints_effective(const struct policy_hints *hints,
                            const struct policy_hints *baseline, struct policy_hints *out);

/* Whether the tool name holds a change word of the policy's list (p NULL:
 * the built-in list). When it does and word is not NULL, the first such
 * word (lower case) is copied into word. Returns 1 or 0. */
int policy_change_word(const struct policy *p, const char *name, char *word, size_t wordlen);

/* The built-in change words, NULL-terminated (static). */
const char *const *policy_builtin_words(void);

/* Glob match: '*' any run of characters, '?' one character (one UTF-8
 * sequence), '\' makes the next character literal; everything else
 * compares exactly. Returns 1 on a match. */
int policy_glob(const char *pattern, const char *s);

/* Resolves an RFC 6901 JSON Pointer in doc. Returns the value (borrowed
 * from doc) or NULL. */
const json_t *policy_pointer_get(const json_t *doc, const char *pointer);

const char *policy_action_str(enum policy_action a);  /* static */

/* ------------------------------------------------------------------------
 * Compiled form. Internal to policy/ (policy.c evaluates it, policy_load.c
 * builds it, tests/unit/policy/test_policy.c may inspect it): every other module
 * sees struct policy as opaque and goes through the functions above.
 */
#ifdef POLICY_INTERNAL
#include <regex.h>

enum policy_arg_op { POLICY_ARG_EQUALS, POLICY_ARG_MATCHES, POLICY_ARG_EXISTS };

struct policy_strlist {
	char **v;          /* owned strings */
	size_t n;
};

struct policy_arg {
	char *pointer;      /* owned */
	/* The pointer is "/" and one token without ~ escapes (the usual
	 * "/sql"): the token is pointer + 1, tok_len bytes, and is looked up
	 * directly (policy_arg_prepare). */
	int one_token;
	size_t tok_len;
	enum policy_arg_op op;
	json_t *equals;     /* owned reference (EQUALS) */
	regex_t re;         /* compiled (MATCHES) */
	int re_ok;          /* re must be regfree'd */
	/* For a caller's own copy of re (struct policy_rx): the pattern as
	 * given to regcomp (owned; NULL when memory ran out at load: re is
	 * then used by all), its flags, and its index in a policy_rx. */
	char *rx;
	int re_flags;
	size_t rx_id;
	int exists;         /* EXISTS: 1 present, 0 absent */
};

struct policy_rule {
	char *name;         /* owned */
	char *reason;       /* owned: "message", or a summary of the match */
	char *tag_block;    /* owned: "policy:<name>" */
	char *tag_dry;      /* owned: "dry-run:<name>" */
	enum policy_action action;
	int dry_run;
	struct policy_strlist tool, client, upstream, method;  /* any-of globs */
	/* Hints the tool must have (after defaults): -1 not checked. */
	struct policy_hints hints;
	int name_words;     /* -1 not checked, 0 no change word, 1 has one */
	struct policy_strlist words;  /* the rule's own words; n == 0: policy's */
	struct policy_arg *args;      /* owned array: all must hold */
	size_t nargs;
};

struct policy {
	enum policy_action dflt;
	int dry_run;
	enum policy_unknown unknown;
	struct policy_strlist words;  /* change words, lower case */
	struct policy_rule *rules;    /* owned array */
	size_t nrules;
	struct policy_rule_stats *stats;  /* owned: nrules + 2 */
	char *default_tag_block, *default_tag_dry;
	char *unknown_tag_block, *unknown_tag_dry;
	size_t nrx;                   /* arguments with a pattern (rx_id 0..nrx-1) */
};

/* For policy_memo.c: the parts of policy_eval. policy_rule_static: the
 * rule's matchers other than its arguments hold; policy_rule_args: all its
 * argument matchers hold. policy_eval_from: policy_eval from rule `from`
 * on, after the unknown-tool check. policy_decide_*: fill out as
 * policy_eval does for rule i, the default, an unknown tool. */
int policy_rule_static(const struct policy *p, const struct policy_rule *r,
                       const struct policy_input *in, int is_call);
int policy_rule_args(const struct policy_rule *r, const json_t *args, struct policy_rx *rx);
int policy_rule_uses_hints(const struct policy_rule *r);
void policy_eval_from(const struct policy *p, const struct policy_input *in, int is_call,
                      size_t from, struct policy_decision *out);
/* in->args, or params.arguments of in->call_params when args is NULL. */
const json_t *policy_input_args(const struct policy_input *in);
void policy_decide_rule(const struct policy *p, size_t i, struct policy_decision *out);
void policy_decide_default(const struct policy *p, struct policy_decision *out);
void policy_decide_unknown(const struct policy *p, const struct policy_input *in,
                           struct policy_decision *out);

/* For policy_load.c: fills one_token and tok_len once a->pointer is set. */
void policy_arg_prepare(struct policy_arg *a);

/* For policy_load.c: frees what a rule owns (not the rule itself). */
void policy_rule_fini(struct policy_rule *r);
void policy_strlist_fini(struct policy_strlist *l);
#endif /* POLICY_INTERNAL */

#endif

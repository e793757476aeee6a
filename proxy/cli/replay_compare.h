/* replay_compare: the pure half of `mcpwarden replay` (replay.h): how one
 * replayed tools/call answer is judged, against the captured (or the
 * baseline's) answer, or against a dataset case's expectations. Pure
 * functions on jansson values: no I/O, no clock, no globals.
 *
 * A "response" here is a JSON-RPC response object: {"result": {...}} or
 * {"error": {...}} (other members ignored).
 *
 * Normalisation (replay_rules): before text and values are compared, each
 * string of a result has its volatile parts replaced: UUIDs ("<uuid>"),
 * RFC 3339 timestamps ("<timestamp>"), runs of 16+ hex digits holding a
 * digit ("<hex>"), runs of 10+ decimal digits ("<number>"); then each
 * --rules "replace" regex (checks/jsre.h, ECMA-262) in order. JSON
 * Pointers of --rules "ignore" (relative to the result) are removed first.
 * A match, for a replacement: the one that ends first, from its last
 * possible start, extended while the longer span still matches the whole
 * pattern (jsre answers only whether a string matches, so spans are found
 * by bisection).
 *
 * Findings: each difference is appended to an array as
 * {"code": C, "severity": "error"|"warning", "message": M, "pointer"?: P}.
 * Codes (stable, docs/replay.md): replay-no-response, replay-error-flip,
 * replay-error-code, replay-iserror-flip, replay-structured-missing,
 * replay-structured-added (warning), replay-structured-keys,
 * replay-structured-type, replay-structured-changed, replay-output-schema,
 * replay-content-types, replay-text-changed, replay-slower, and for
 * datasets replay-expect-result, replay-expect-equals, replay-expect-pattern,
 * replay-expect-schema, replay-expect-structured-schema, replay-expect-size,
 * replay-expect-iserror.
 */
#ifndef MCPWARDEN_REPLAY_COMPARE_H
#define MCPWARDEN_REPLAY_COMPARE_H

#include <stddef.h>

#include <jansson.h>

#include "checks/jschema.h"

#define REPLAY_MAX_RULES   64     /* ignore pointers, and replacements, each */
#define REPLAY_MAX_TEXT    (1u << 20) /* bytes of one string normalised */

struct replay_rules;

/* The built-in normalisers only. Returns NULL when out of memory. */
struct replay_rules *replay_rules_new(void);
/* Adds a --rules document: {"ignore": [POINTER...], "replace": [{"pattern":
 * RE, "with": S}...], "builtin": bool (default true)}. doc is borrowed.
 * Returns 0, or -1 with err filled (one line). */
int replay_rules_add(struct replay_rules *r, const json_t *doc, char *err, size_t errlen);
void replay_rules_free(struct replay_rules *r); /* accepts NULL */

/* A normalised copy of v (owned; NULL when out of memory): ignored
 * pointers removed, every string normalised. */
json_t *replay_normalize(const struct replay_rules *r, const json_t *v);
/* The normalised form of s[0..n) (owned, NUL-terminated) or NULL. */
char *replay_normalize_text(const struct replay_rules *r, const char *s, size_t n);

/* What is known of the call, for replay_compare. */
struct replay_call_ctx {
	const struct jschema *output_schema; /* the tool's current one, or NULL */
	double old_ms, new_ms;               /* latencies; < 0: unknown */
	double max_slowdown;                 /* ratio for replay-slower; <= 0: off */
	/* The reference was redacted by the recorder (secrets masked, long
	 * text cut): text and values are not compared, only shapes. */
	int redacted;
};

/* Compares new_resp with old_resp (both borrowed; new_resp NULL: no
 * response came, new_why says why). Appends findings to `findings`.
 * Returns the number of "error" findings appended. */
int replay_compare(const struct replay_rules *r, const json_t *old_resp, const json_t *new_resp,
                   const char *new_why, const struct replay_call_ctx *cx, json_t *findings);

/* A dataset case's expectations, compiled. */
struct replay_expect;

/* Compiles an "expect" object (borrowed; its "equals" is normalised and
 * kept). era picks the JSON Schema dialect. Returns NULL with err filled
 * when a member is malformed (an unknown key, a bad regex or schema). */
struct replay_expect *replay_expect_new(const struct replay_rules *r, const json_t *expect,
                                        const char *era, char *err, size_t errlen);
void replay_expect_free(struct replay_expect *e); /* accepts NULL */

/* Judges new_resp (borrowed; NULL: none came, new_why says why) against e.
 * Appends findings; returns the number of "error" findings. */
int replay_expect_check(const struct replay_rules *r, const struct replay_expect *e,
                        const json_t *new_resp, const char *new_why, json_t *findings);

#endif

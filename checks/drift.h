/* drift.h: the diff of a tool listing against a baseline (schema drift).
 *
 * Pure functions over jansson values, no I/O. A baseline is a saved tool
 * list; drift_diff() classifies each change of a new list against it.
 * Tools are matched by name (first occurrence; entries without a string
 * name are skipped: the contract checker reports them). Codes are stable
 * API:
 *
 *   code                     kind      raised when
 *   tool-removed             breaking  a baseline tool is gone
 *   param-removed            breaking  an inputSchema property is gone
 *   param-now-required       breaking  a name newly in inputSchema.required
 *                                      (a new required parameter, or an
 *                                      optional one made required)
 *   param-type-changed       breaking  a parameter accepts fewer types than
 *                                      before (string -> integer, untyped ->
 *                                      typed; integer -> number is a
 *                                      widening and passes), or gained an
 *                                      enum it did not have
 *   enum-value-removed       breaking  a value left a parameter's enum (or
 *                                      its items' enum, for arrays)
 *   output-property-removed  breaking  an outputSchema property is gone, or
 *                                      is no longer required
 *   output-type-changed      breaking  outputSchema (root or a property) may
 *                                      now produce a type it could not
 *                                      before, or outputSchema is gone
 *   hint-weakened            breaking  the tool looks less safe: read-only
 *                                      -> not read-only, or non-destructive
 *                                      -> destructive while not read-only
 *   tool-added               notice    a new tool
 *   param-added              notice    a new optional parameter
 *   enum-value-added         notice    a value joined an enum
 *   description-changed      notice    the tool's or a parameter's
 *                                      description changed, appeared or
 *                                      went (the "rug pull" to review)
 *   annotations-changed      notice    any other change of annotations
 *
 * Hints take the spec's defaults when absent or not boolean (readOnlyHint
 * false, destructiveHint true, idempotentHint false, openWorldHint true),
 * so spelling out a default is no change; destructiveHint means nothing on
 * a read-only tool. hint-weakened replaces annotations-changed for that
 * tool. Types are compared as sets read from "type", or from the members
 * of anyOf/oneOf, a local $ref target, or enum/const values; a schema
 * whose types cannot be read accepts anything.
 *
 * POINTERS (RFC 6901) point into {"tools": <the array given>}: into the new
 * list ("/tools/2/inputSchema/required/0"), or into the baseline for what
 * the new list lacks (tool-removed, param-removed, enum-value-removed,
 * output-property-removed, outputSchema removed). Pages of one listing are
 * compared as one array: join them first.
 *
 * BOUNDS. At most DRIFT_MAX_TOOLS tools of each list (beyond: not compared,
 * report truncated), DRIFT_MAX_PROPS properties and required entries and
 * DRIFT_MAX_ENUM enum values per schema, DRIFT_MAX_DEPTH levels of
 * anyOf/$ref when reading types; at most DRIFT_MAX_CHANGES changes kept
 * (the breaking count stays exact).
 */
#ifndef MCPWARDEN_DRIFT_H
#define MCPWARDEN_DRIFT_H

#include <stddef.h>
#include <jansson.h>

#define DRIFT_MAX_TOOLS   1024
#define DRIFT_MAX_PROPS   256
#define DRIFT_MAX_ENUM    256
#define DRIFT_MAX_DEPTH   8
#define DRIFT_MAX_CHANGES 4096

struct drift_report;

/* One change, read through drift_report_change(). Strings are borrowed and
 * live as long as the report. */
struct drift_change {
	const char *code;     /* static, one of the codes above */
	const char *kind;     /* static: "breaking" or "notice" */
	const char *tool;     /* tool name */
	const char *pointer;  /* RFC 6901, see POINTERS */
	const char *message;  /* one line, no control characters */
	int breaking;         /* 1 for kind "breaking" */
};

/* The tools array inside a saved listing: doc may be {"tools":[...]}, a
 * whole JSON-RPC response {"jsonrpc":"2.0","id":...,"result":{"tools":
 * [...]}}, or a bare array. Returns a pointer borrowed from doc (valid as
 * long as doc is), NULL when doc holds no tools array. */
const json_t *drift_tools_of(const json_t *doc);

/* Diff new_tools against old_tools (both borrowed tools arrays, e.g. from
 * drift_tools_of; nothing is kept). Returns an owned report
 * (drift_report_free), or NULL when an argument is not an array or memory
 * runs out. Changes come in order: removed tools (baseline order), then
 * each tool of the new list in its order. */
struct drift_report *drift_diff(const json_t *old_tools, const json_t *new_tools);
void drift_report_free(struct drift_report *r);  /* accepts NULL */

size_t drift_report_nchanges(const struct drift_report *r);   /* kept */
size_t drift_report_nbreaking(const struct drift_report *r);  /* exact */
/* 1 when a list had more than DRIFT_MAX_TOOLS tools (not all compared). */
int drift_report_truncated(const struct drift_report *r);
/* The i-th change, NULL past the end. Borrowed: report lifetime. */
const struct drift_change *drift_report_change(const struct drift_report *r, size_t i);
/* 1 when the tool named `name` (borrowed) has a breaking change. */
int drift_tool_broke(const struct drift_report *r, const char *name);
/* "breaking" or "notice" for a code, NULL for an unknown one. Static. */
const char *drift_code_kind(const char *code);

/* {"changes":[{"code","kind","tool","pointer","message"}],"breaking":N}
 * (plus "truncated":true when cut), new reference owned by the caller, or
 * NULL when memory runs out. A check report embeds the "changes" array. */
json_t *drift_report_json(const struct drift_report *r);
/* Readable multi-line report (owned: free()), or NULL when out of memory. */
char *drift_report_text(const struct drift_report *r);

/* A deep copy of page (borrowed: a tools/list result object or a bare
 * tools array) without the tools drift_tool_broke() names; every other
 * member is kept untouched. Owned by the caller; NULL when page has no
 * tools array or memory runs out. For the proxy's filter mode. */
json_t *drift_filter(const json_t *page, const struct drift_report *r);

#endif

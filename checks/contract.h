/* contract.h: the tool-definition contract of a tools/list listing.
 *
 * Pure functions over jansson values: no I/O, no globals, no logging. The
 * proxy (inspect.c) runs them on every tools/list reply, `mcpwarden check`
 * on a fetched or saved listing. The baseline diff lives in drift.h.
 *
 * Findings. A *problem* fails the contract, a *warning* never does. Codes are
 * stable API (tests, --json, metrics and the admin page use them):
 *
 *   code                  scope  default  rule       raised when
 *   tool-not-object       tool   problem  spec       the tools[] entry is not an object
 *   name-missing          tool   problem  spec       name absent, not a string, or ""
 *   description-missing   tool   problem  usability  description absent, not a string, blank
 *   input-schema-missing  tool   problem  spec       no inputSchema
 *   input-schema-invalid  tool   problem  spec       inputSchema not an object / type != "object"
 *   properties-invalid    tool   problem  spec       inputSchema.properties not an object, or
 *                                                    one of its members not a schema
 *                                                    (object or boolean)
 *   required-invalid      tool   problem  spec       inputSchema.required not an array of
 *                                                    strings (one per bad element)
 *   required-unknown      tool   problem  usability  a required name no subschema declares
 *                                                    (one per name)
 *   output-schema-invalid tool   problem  spec       outputSchema fails the checks above
 *                                                    (one per cause; see ERAS)
 *   output-required-unknown tool problem  usability  an outputSchema required name no
 *                                                    subschema declares (one per name;
 *                                                    required-unknown's rule)
 *   schema-invalid        tool   problem  spec       a keyword of inputSchema or
 *                                                    outputSchema, at any depth, is not
 *                                                    valid in the schema's dialect (one
 *                                                    per schema; see SCHEMA VALIDITY)
 *   schema-unsupported    tool   problem  usability  a "$schema" other than draft-07 or
 *                                                    2020-12 (one per schema)
 *   x-mcp-header-invalid  tool   problem  spec       2026-07-28 era only, see below
 *   duplicate-name        list   problem  usability  a name seen before (one per extra
 *                                                    occurrence, across pages)
 *   no-tools              list   problem  usability  a complete listing with no tool
 *   result-invalid        list   problem  spec       a page is not an object with a
 *                                                    "tools" array (not in issue 4: a
 *                                                    missing array is a schema violation
 *                                                    and must not read as "no tools")
 *   cursor-loop           list   problem  spec       a page's nextCursor repeats an
 *                                                    earlier page's
 *   result-type-missing   list   problem  spec       2026-07-28 era: resultType absent or
 *                                                    not "complete" (one per page)
 *   cache-fields-missing  list   problem  spec       2026-07-28 era: ttlMs not an integer
 *                                                    >= 0, or cacheScope not
 *                                                    "public"/"private" (one per field
 *                                                    and page)
 *   name-format           tool   warning  -          name not 1-128 of [A-Za-z0-9_.-]
 *   description-short     tool   warning  -          description under 12 characters
 *   param-untyped         tool   warning  -          a property with none of type, $ref,
 *                                                    anyOf, oneOf, allOf, enum, const
 *   param-undescribed     tool   warning  -          a property without a description
 *   schema-unchecked      tool   warning  -          a schema could not be checked in full:
 *                                                    a pattern the regex engine refuses,
 *                                                    more than CONTRACT_MAX_REMOTE_REFS
 *                                                    remote $refs, a LIMIT_JSCHEMA_* hit
 *
 * Spec violation vs usability rule. "spec" codes contradict the JSON schema
 * of the era or a MUST of the spec text (cursor-loop: a cursor names the
 * position after the page, so one that repeats breaks pagination itself;
 * x-mcp-header: clients MUST drop the tool). "usability" codes are stricter
 * than the spec: the schema makes description optional and never ties
 * required names to properties; unique names are only a SHOULD; an empty
 * listing is valid. They are what an AI client needs, so they are problems
 * by default; contract_opts.spec_only demotes them to warnings.
 *
 * ERAS. contract_opts.era is the protocol version the listing came in
 * ("2025-11-25", ...); NULL runs only the era-independent checks. An era
 * that is a date >= "2026-07-28" adds result-type-missing,
 * cache-fields-missing and x-mcp-header-invalid, and relaxes outputSchema's
 * root (any JSON Schema type; before it, the schema pins type "object", and
 * the TypeScript SDK clients of those eras reject the whole listing
 * otherwise, so NULL keeps that rule). Any other string (e.g. "draft")
 * counts as NULL.
 *
 * x-mcp-header-invalid, one per offending annotation, pointer to it: the
 * value is not a string, is empty, is not an RFC 9110 token, repeats an
 * earlier header of the tool ignoring case, sits on a parameter that is not
 * string/integer/boolean (or an enum/const of such values), or is not
 * reached from the root through "properties" alone (under items, anyOf,
 * $defs, ... or on the root itself).
 *
 * Composed schemas. A required name counts as declared when the root, an
 * allOf/anyOf/oneOf/then/else/dependentSchemas member or a local $ref
 * ("#/...") target declares it in "properties"; a patternProperties or an
 * unresolvable (remote, anchor) $ref makes every name count as declared,
 * since we cannot see or evaluate it. A parameter counts as described when
 * it, a member of its allOf/anyOf/oneOf or its local $ref target carries a
 * description (unresolvable: described). No false positive over guessing.
 *
 * SCHEMA VALIDITY. inputSchema and outputSchema (when objects) are each
 * compiled by checks/jschema.h, which walks every subschema and stops at
 * the first keyword whose value is not valid: a misspelt type deep in a
 * property, a non-array enum, a $ref or anchor that leads nowhere, items
 * as an array in 2020-12, ... The finding points at that keyword
 * ("/tools/0/inputSchema/properties/a/type"); only the first per schema is
 * reported (fix it and the next shows). Dialect: the schema's "$schema"
 * when it has one; else the era's: draft-07 up to 2025-06-18, 2020-12 from
 * 2025-11-25 (jschema_dialect_for_era); with no era (NULL or not a date) a
 * schema valid in either dialect is valid. A place the structural checks
 * above already judge (the root's type, properties or one of its members,
 * required) is not reported again as schema-invalid; it is set aside and
 * the rest of the schema checked. A $ref into another document is valid
 * JSON Schema we cannot read: no finding (as in "Composed schemas"); it is
 * pointed at "#" in a private copy and the rest checked, up to
 * CONTRACT_MAX_REMOTE_REFS per schema. A pointer over
 * LIMIT_JSCHEMA_PTR_BYTES points at the schema instead, the message quoting
 * the cut one. The compiled form is not kept; a tool replayed from the
 * memo is not compiled again. A memo entry made under another era's
 * dialect holds only when every schema of its tool names its "$schema"
 * (then the era does not matter); otherwise that tool is checked again.
 *
 * POINTERS (RFC 6901, "~" -> "~0", "/" -> "~1"). With one page they point
 * into that page's result object: "/tools/3/inputSchema/required/1". With
 * several pages they point into the JSON array of the pages, in the order
 * given: "/1/tools/3/name" is tool 3 of the second page. A bare tools array
 * passed as a page is treated as {"tools": array}, so pointers read the
 * same whatever form was saved. Findings about something absent point where
 * it belongs ("/tools/0/description").
 *
 * CLIENT PROFILES (issue 21). contract_opts.profiles adds the rules of
 * named clients (checks/profile.h lists the codes, docs/contract.md cites
 * what each models): codes "profile-<profile>-...", rule "client". A
 * profile's problem fails the contract like any other (and filter mode
 * withholds its tool); spec_only does not demote it, the profile having
 * been asked for by name. Tool findings come after the tool's own, page
 * findings (profile-sdk-result-field) after the page's. 0 changes nothing.
 * The memo holds entries for one set of profiles: another empties it.
 *
 * BOUNDS. At most CONTRACT_MAX_PAGES pages and CONTRACT_MAX_TOOLS tools are
 * examined (beyond: not checked, report truncated); per schema at most
 * CONTRACT_MAX_PROPS properties and required entries; recursion into
 * composed schemas, $ref chains and the x-mcp-header walk stops at
 * CONTRACT_MAX_DEPTH levels and CONTRACT_MAX_NODES subschemas per tool
 * (annotations deeper than that are not seen); at most CONTRACT_MAX_FINDINGS
 * findings are kept (counts, score and passed stay exact beyond it).
 * Messages quote at most 64 bytes of a name, control characters replaced.
 */
#ifndef MCPWARDEN_CONTRACT_H
#define MCPWARDEN_CONTRACT_H

#include <stddef.h>
#include <jansson.h>

#define CONTRACT_MAX_PAGES    20
#define CONTRACT_MAX_TOOLS    1024
#define CONTRACT_MAX_PROPS    256
#define CONTRACT_MAX_DEPTH    32
#define CONTRACT_MAX_NODES    4096
#define CONTRACT_MAX_FINDINGS 4096
#define CONTRACT_MAX_REMOTE_REFS 16 /* per schema, set aside to check the rest */

struct contract_report;

struct contract_opts {
	const char *era;   /* borrowed, may be NULL: see ERAS above */
	int spec_only;     /* 1: usability problems become warnings */
	unsigned profiles; /* client profiles (issue 21): PROFILE_* bits of
	                      checks/profile.h, 0 = none; see CLIENT PROFILES */
};

/* One finding, read through contract_report_finding(). Every string is
 * borrowed and lives as long as the report. */
struct contract_finding {
	const char *code;     /* static, one of the codes above */
	const char *tool;     /* tool name, NULL when it has none or list-level
	                         without a tool */
	const char *message;  /* one line, no control characters */
	const char *pointer;  /* RFC 6901, see POINTERS */
	size_t page;          /* index of the page in contract_check's array */
	long tool_index;      /* index of the tool in its page, -1 when the
	                         finding is about the page itself */
	int list_level;       /* 1: reported in the listing's problems[] */
	int problem;          /* 1 problem, 0 warning (after spec_only) */
	int spec;             /* 1 spec violation, 0 usability rule/warning */
	int client;           /* 1: a client profile's finding (issue 21) */
};

/* Check the pages of one listing together. pages[i] (borrowed) is a
 * tools/list result object ({"tools":[...], "nextCursor"?, ...}) or a bare
 * tools array; a whole JSON-RPC response is not a page, pass its "result"
 * (so pointers stay relative to the result the client sees). Pages past CONTRACT_MAX_PAGES are ignored and mark the
 * report truncated. The cursor sequence is read from each page's
 * nextCursor: a repeat raises cursor-loop; a last page that still names a
 * next page marks the report truncated (the proxy checking the pages seen
 * so far gets an honest "not complete"). opts may be NULL (all defaults).
 * Returns an owned report (contract_report_free), or NULL when pages is
 * NULL, npages is 0 or memory runs out. Nothing in pages is kept. */
struct contract_report *contract_check(const json_t *const pages[], size_t npages,
                                       const struct contract_opts *opts);
void contract_report_free(struct contract_report *r);  /* accepts NULL */

/* Share of examined tools with no tool-level problem (3 of 4 -> 0.75);
 * 0 when no tool was examined. */
double contract_report_score(const struct contract_report *r);
/* 1 when there is no problem at all (tool or list level), else 0. */
int contract_report_passed(const struct contract_report *r);
/* 1 when the report does not cover the whole listing: more pages or tools
 * than the caps, or the last page still has a nextCursor (including a
 * cursor loop). Never present such a listing as complete. */
int contract_report_truncated(const struct contract_report *r);
size_t contract_report_ntools(const struct contract_report *r);   /* examined */
size_t contract_report_nfailed(const struct contract_report *r);  /* with a problem */
size_t contract_report_nproblems(const struct contract_report *r);
size_t contract_report_nwarnings(const struct contract_report *r);
/* Findings kept and the i-th (NULL past the end), in the order found: for
 * each page its own findings then its tools' in order; cursor-loop and
 * no-tools last. Borrowed: report lifetime. */
size_t contract_report_nfindings(const struct contract_report *r);
const struct contract_finding *contract_report_finding(const struct contract_report *r,
                                                       size_t i);
/* 1 when tool `index` of page `page` has a problem and must not reach a
 * client in filter mode (a tool-level problem, or it repeats an earlier
 * name while duplicate-name is a problem); 0 otherwise, also for tools
 * beyond the caps, which were not examined. */
int contract_report_tool_failed(const struct contract_report *r, size_t page, size_t index);

/* "spec" or "usability" for a problem code, "client" for a client
 * profile's problem code, "warning" for a warning-only code, NULL for an
 * unknown code. Static string. */
const char *contract_code_rule(const char *code);
/* The "rule" member a finding gets in the JSON report: "spec",
 * "client" (any client profile finding) or "usability" (every other). */
const char *contract_finding_rule(const struct contract_finding *f);

/* Index (>= 0) of the first cursor equal to an earlier one in
 * cursors[0..n) (borrowed; NULL entries are skipped), -1 when none repeats.
 * Callers paging through a listing use it to stop at a cursor loop before
 * fetching the same page again; contract_check applies the same rule to
 * the pages' nextCursor values. */
long contract_cursor_loop(const char *const cursors[], size_t n);

/* The target of a local $ref inside root (borrowed from root): "#" or an
 * RFC 6901 fragment "#/$defs/a" (~0, ~1 and %XX decoded). NULL for other
 * references (remote documents, "#anchor") or one that leads nowhere.
 * Never fetches anything. */
const json_t *contract_resolve_ref(const json_t *root, const char *ref);

/* The report as a new JSON object (owned by the caller):
 *   {"tools":[{"name":s|null,"problems":[F],"warnings":[F]}],
 *    "problems":[F], "warnings":[F], "score":0.75, "passed":bool,
 *    "truncated":bool}
 * with F = {"code","message","pointer","rule":"spec"|"usability"} and, for
 * list-level findings about a tool, "tool". "tools" lists every examined
 * tool in order. NULL when memory runs out. */
json_t *contract_report_json(const struct contract_report *r);
/* A readable multi-line report (NUL-terminated, owned: free()), or NULL
 * when memory runs out. Only tools with findings are listed. */
char *contract_report_text(const struct contract_report *r);

/* A copy of page (borrowed; result object or bare tools array, as given
 * to contract_check at index page_index) without the tools for which
 * contract_report_tool_failed() is 1. Every other member of the result and
 * of each kept tool is kept untouched, unknown ones included. Returns a new
 * deep copy owned by the caller, or NULL when page has no tools array or
 * memory runs out. */
json_t *contract_filter(const json_t *page, size_t page_index,
                        const struct contract_report *r);

/* ---- Incremental checking ---------------------------------------------------
 *
 * A proxy checks the same upstream's listing again and again, and from one
 * listing to the next most tools are the same text (a deploy changes a
 * few). A memo keeps, per tool text, what checking that tool found, so
 * that contract_check_memo() checks only the tools whose text it has not
 * seen in the last listing checked with it, and replays the rest. The
 * report is the one contract_check() gives for the same page, finding for
 * finding: a tool's own findings depend only on its value (parsed from
 * its text), the era rules (a change of rules empties the memo) and, for
 * two codes whose message names it, its index (those hold at that index
 * only); duplicate-name, page and list findings are worked out afresh
 * every time.
 *
 * Bounds: the memo holds the entries of the last listing only (at most
 * CONTRACT_MAX_TOOLS, each with a copy of its tool's text, so about the
 * listing's size) and at most CONTRACT_MAX_FINDINGS findings in all; a
 * tool over that is checked afresh every time. Not thread-safe: one memo
 * per upstream, used under the caller's lock. */
struct contract_memo;

/* The JSON text a tool was parsed from (borrowed). */
struct contract_text {
	const char *at;
	size_t len;
	/* 1 + the index of the tool of the previous contract_check_memo() call
	 * with the same memo whose text this is, byte for byte (the caller
	 * knows it without comparing: jparse_elements_since); 0 when not
	 * known: the memo then compares texts itself. */
	size_t same_as;
};

/* A new, empty memo (owned; contract_memo_free), NULL when out of memory. */
struct contract_memo *contract_memo_new(void);
void contract_memo_free(struct contract_memo *m);  /* accepts NULL */

/* contract_check() of the one page `page`, with texts[i] the exact text
 * that tool i of its tools array was parsed from (same bytes for the same
 * value is what makes replaying safe: pass nothing else). When ntexts is
 * not the size of that array, or page has none, the check is a plain one
 * and m is left as it was. m (not NULL) is updated to this listing.
 * Returns what contract_check() returns, except that the report borrows
 * tool names from m: free it before the next call with m and before
 * contract_memo_free(m). */
struct contract_report *contract_check_memo(const json_t *page, const struct contract_text *texts,
                                            size_t ntexts, const struct contract_opts *opts,
                                            struct contract_memo *m);

/* Tools the last contract_check_memo() call with m checked afresh (not
 * replayed); for tests and counters. */
size_t contract_memo_rechecked(const struct contract_memo *m);

/* contract_report_json() of r, equal to it, reusing the per-tool objects
 * of "tools" built for earlier reports from m when r is m's latest report
 * (otherwise it is contract_report_json). The tool objects are shared:
 * they and the arrays inside must never be modified; the root and its
 * other members are the caller's own. */
json_t *contract_report_json_memo(const struct contract_report *r, struct contract_memo *m);

#endif

/* profile.h: client profiles, the rules of named MCP clients that are
 * stricter than the spec (issue 21, item 5).
 *
 * Pure functions over jansson values: no I/O, no globals, no logging. The
 * contract checker (contract.h, contract_opts.profiles) runs them on each
 * tool and page when a profile is chosen, so `mcpwarden check --profile`
 * and the proxy's per-upstream contract.profiles report their findings in
 * the same report as every other code. docs/contract.md, "Client
 * profiles", cites the public client behaviour each rule models.
 *
 *   profile        codes (profile-<profile>-...)
 *   claude-code    root-composition, name-length (problems), name-long (warning)
 *   openai-strict  optional-property, additional-properties,
 *                  unsupported-keyword, format, name-format (problems)
 *   gemini         unsupported-keyword, type-array, name-format (problems),
 *                  param-name (warning)
 *   sdk            property-not-object, output-schema-type, tool-field,
 *                  result-field (problems; result-field is page-level)
 *
 * What each rule reads. claude-code, openai-strict and gemini judge the
 * tool's name and inputSchema (what those clients send to their model
 * APIs); sdk judges what the TypeScript SDK client's ListToolsResult
 * schema (zod) parses: the tool's members and the page's. A profile never
 * repeats what the core checks already raise for every listing (a root
 * type other than "object", a missing name, ...).
 *
 * One finding per code and tool: the first place found (walk order:
 * the schema's own keywords, then properties, items, ... in document
 * order), the message saying how many more places share it.
 *
 * BOUNDS. The walk of a schema stops at PROFILE_MAX_DEPTH levels and
 * PROFILE_MAX_NODES subschemas per tool (contract.h's CONTRACT_MAX_DEPTH
 * and CONTRACT_MAX_NODES; contract.c asserts they agree); what lies
 * beyond is not seen. Pointers over PROFILE_PTR_MAX bytes point at the
 * deepest place that fits.
 */
#ifndef MCPWARDEN_PROFILE_H
#define MCPWARDEN_PROFILE_H

#include <stddef.h>
#include <jansson.h>

/* Profile bits for contract_opts.profiles; 0 = none. */
#define PROFILE_CLAUDE_CODE   (1u << 0)
#define PROFILE_OPENAI_STRICT (1u << 1)
#define PROFILE_GEMINI        (1u << 2)
#define PROFILE_SDK           (1u << 3)
#define PROFILE_ALL           0xfu

/* The known names, for usage and error messages. */
#define PROFILE_NAMES "claude-code, openai-strict, gemini, sdk"

#define PROFILE_PTR_MAX   512  /* bytes of a finding's pointer suffix */
#define PROFILE_MAX_DEPTH 32   /* = CONTRACT_MAX_DEPTH */
#define PROFILE_MAX_NODES 4096 /* = CONTRACT_MAX_NODES */

/* Stable codes: the order is the order findings of one tool come in. */
enum profile_code {
	PROFILE_C_CLAUDE_ROOT_COMPOSITION,
	PROFILE_C_CLAUDE_NAME_LENGTH,
	PROFILE_C_CLAUDE_NAME_LONG,
	PROFILE_C_OPENAI_NAME_FORMAT,
	PROFILE_C_OPENAI_ADDITIONAL_PROPERTIES,
	PROFILE_C_OPENAI_OPTIONAL_PROPERTY,
	PROFILE_C_OPENAI_UNSUPPORTED_KEYWORD,
	PROFILE_C_OPENAI_FORMAT,
	PROFILE_C_GEMINI_NAME_FORMAT,
	PROFILE_C_GEMINI_PARAM_NAME,
	PROFILE_C_GEMINI_UNSUPPORTED_KEYWORD,
	PROFILE_C_GEMINI_TYPE_ARRAY,
	PROFILE_C_SDK_TOOL_FIELD,
	PROFILE_C_SDK_PROPERTY_NOT_OBJECT,
	PROFILE_C_SDK_OUTPUT_SCHEMA_TYPE,
	PROFILE_C_SDK_RESULT_FIELD,
	PROFILE_NCODES
};

/* The code's stable name ("profile-claude-code-root-composition"), static;
 * NULL past the end. */
const char *profile_code_name(enum profile_code c);
/* 1 when the code is a problem (the client drops the tool, the server or
 * the request), 0 for a warning (it degrades). */
int profile_code_problem(enum profile_code c);
/* The profile bit the code belongs to. */
unsigned profile_code_profile(enum profile_code c);

/* The name of one profile bit ("sdk"), NULL for anything else. Static. */
const char *profile_name(unsigned bit);

/* Parses a comma-separated list of names ("claude-code,sdk"; blanks
 * around names ignored, repeats allowed) into *mask (OR-ed in). Returns 0,
 * or -1 for an empty list or an unknown name: then *bad and *badlen
 * (either may be NULL) point at the offending name inside list. */
int profile_parse(const char *list, unsigned *mask, const char **bad, size_t *badlen);

/* One finding. suffix: RFC 6901 pointer relative to the tool (or the
 * page), e.g. "/inputSchema/anyOf"; message: one line. Both borrowed for
 * the call only. */
typedef void (*profile_emit_fn)(void *arg, enum profile_code code, const char *suffix,
                                const char *message);

/* The rules of the profiles in mask on one tools[] entry (borrowed; not
 * an object: nothing, the core reports it). */
void profile_check_tool(unsigned mask, const json_t *tool, profile_emit_fn emit, void *arg);
/* The page-level rules (a tools/list result object; anything else:
 * nothing). */
void profile_check_page(unsigned mask, const json_t *page, profile_emit_fn emit, void *arg);

#endif

/* jschema.h: a JSON Schema validator (draft-07 and 2020-12) over jansson.
 *
 * Pure: no I/O, no globals, every loop bounded (proxy/base/limits.h,
 * LIMIT_JSCHEMA_*). A schema is compiled once into an immutable form
 * (nodes per subschema, $ref targets resolved, patterns compiled) that any
 * number of threads may validate against at once; validation allocates
 * only for unevaluatedProperties/unevaluatedItems bookkeeping.
 *
 * Dialect: the root's "$schema" when present (draft-07 or 2020-12, with or
 * without the trailing "#", http or https); any other "$schema" is a
 * compile finding (JSCHEMA_UNSUPPORTED), never a guess. Without "$schema"
 * the caller's default applies (MCP: draft-07 up to 2025-06-18, 2020-12
 * from 2025-11-25).
 *
 * Keywords: every keyword of both drafts that needs no network. $ref
 * resolves only inside the document ($id, $anchor, $dynamicAnchor, JSON
 * Pointers, draft-07 "#name" ids); a $ref to any other document is a
 * compile finding (JSCHEMA_REMOTE_REF). draft-07 ignores a $ref's sibling
 * keywords. "format" is an annotation unless JSCHEMA_FORMAT_ASSERT is
 * given: then date-time, date, time, email, ipv4, ipv6, uri, uuid and
 * hostname are checked (other formats stay annotations). "pattern" and
 * "patternProperties" use checks/jsre.h (ECMA-262 subset, step-bounded).
 *
 * Not here: remote documents and meta-schema validation of the schema
 * itself ($vocabulary is ignored; a "$schema" below the root is too: one
 * dialect per document), content* assertions, "default". The keyword
 * values are checked as far as evaluation needs (a misspelt type, a
 * non-array enum, a $ref to nowhere are JSCHEMA_INVALID with the pointer
 * of the first bad keyword), not against the meta-schema in full.
 */
#ifndef MCPWARDEN_CHECKS_JSCHEMA_H
#define MCPWARDEN_CHECKS_JSCHEMA_H

#include <stddef.h>

#include <jansson.h>

#include "proxy/base/limits.h"

enum jschema_dialect {
	JSCHEMA_DRAFT7,  /* http://json-schema.org/draft-07/schema# */
	JSCHEMA_2020_12, /* https://json-schema.org/draft/2020-12/schema */
};

/* jschema_compile() flags. */
#define JSCHEMA_FORMAT_ASSERT 1u /* "format" asserts the common formats */

/* What a finding is. Stable API: jschema_code_str() names each. */
enum jschema_code {
	JSCHEMA_VIOLATION,   /* the instance breaks a keyword */
	JSCHEMA_LIMIT,       /* a LIMIT_JSCHEMA_* or the regex step limit hit */
	JSCHEMA_INVALID,     /* compile: a keyword's value is not valid */
	JSCHEMA_UNSUPPORTED, /* compile: $schema, or a pattern jsre refuses */
	JSCHEMA_REMOTE_REF,  /* compile: $ref to another document (no fetch) */
};

/* One finding, bounded (no allocation, nothing borrowed but keyword, which
 * is a static string or points into the compiled schema, and is never
 * NULL: "" for a finding about a whole subschema, "false" for the boolean
 * schema false). instance_ptr and schema_ptr are RFC 6901 JSON Pointers
 * ("" is the root); schema_ptr names the keyword ("/properties/a/type").
 * Compile findings leave instance_ptr empty. Pointers past
 * LIMIT_JSCHEMA_PTR_BYTES end in "..."; messages are one line. */
struct jschema_error {
	enum jschema_code code;
	const char *keyword;
	char instance_ptr[LIMIT_JSCHEMA_PTR_BYTES];
	char schema_ptr[LIMIT_JSCHEMA_PTR_BYTES];
	char message[LIMIT_JSCHEMA_MSG_BYTES];
};

struct jschema;

/* Compiles schema (borrowed: it is referenced, not copied, so the caller
 * must not modify it while the result lives). Returns the compiled schema
 * (free with jschema_free), or NULL with *why filled (why may be NULL):
 * an unsupported $schema, a remote $ref, an invalid keyword value, a
 * pattern jsre cannot take, a LIMIT_JSCHEMA_* hit, or out of memory. */
struct jschema *jschema_compile(const json_t *schema, enum jschema_dialect default_dialect,
                                unsigned flags, struct jschema_error *why);

/* Validates instance. Returns the number of violations found (0: valid)
 * and writes the first min(that, n) into out (out may be NULL when n is
 * 0). Returns -1 when a work limit stopped validation: out[0] (when n > 0)
 * says which, code JSCHEMA_LIMIT. Violations inside anyOf/oneOf/not/if
 * branches are not listed one by one: the applicator is the violation.
 * Thread-safe on a shared s. */
int jschema_validate(const struct jschema *s, const json_t *instance, struct jschema_error *out,
                     size_t n);

/* Like jschema_validate() but answers only valid (1), invalid (0) or
 * limit hit (-1); stops at the first violation (the fast path). */
int jschema_valid(const struct jschema *s, const json_t *instance);

/* The default dialect of an MCP protocol version ("2025-06-18"): draft-07
 * up to 2025-06-18, 2020-12 from 2025-11-25 (SEP-1613) and for any later
 * version; NULL or a version that is not a YYYY-MM-DD date: draft-07 (the
 * dialect the first versions' schemas were generated in). */
enum jschema_dialect jschema_dialect_for_era(const char *protocol_version);

/* The dialect the schema was compiled in. */
enum jschema_dialect jschema_dialect_of(const struct jschema *s);

/* "violation", "limit", "invalid-schema", "unsupported", "remote-ref". */
const char *jschema_code_str(enum jschema_code code);

void jschema_free(struct jschema *s);

#endif

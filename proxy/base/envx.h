/* envx: "${NAME}" in a configured value, filled from the environment: the
 * one rule of mcpwarden, for the conf's upstream `headers` and for
 * `mcpwarden check --header`.
 *
 *   - "${" followed by a "}" is a reference; NAME, between them, must be
 *     [A-Za-z_][A-Za-z0-9_]*, 1 to ENVX_NAME_MAX characters (POSIX's
 *     portable names). Anything else ("${}", "${1X}", "${A-B}", "${a b}",
 *     a longer name) is an error, never looked up and never left as is: a
 *     cut or odd name could pick up another variable, and a literal
 *     "${...}" sent as a credential would only show up as a 401.
 *   - "$" not followed by "{", and "${" with no "}" after it, are literal.
 *   - No nesting, no defaults ("${A:-x}" is an odd name), no escapes.
 *
 * Pure but for the lookup, which the caller passes (getenv, or a function
 * that also notes the value for redaction).
 */
#ifndef MCPWARDEN_ENVX_H
#define MCPWARDEN_ENVX_H

#include <stddef.h>

#define ENVX_NAME_MAX 127

/* Returns NAME's value (borrowed, valid until envx_expand returns), or
 * NULL when it is unset. May return a stand-in ("") after noting the
 * unset name itself, to let the caller report every unset variable. */
typedef const char *envx_get_fn(void *arg, const char *name);

enum envx_why {
	ENVX_OK,       /* no failure */
	ENVX_BAD_NAME, /* a ${...} whose name breaks the rule above */
	ENVX_UNSET,    /* get returned NULL for name */
	ENVX_NOMEM,    /* out of memory */
};

struct envx_fail {
	enum envx_why why;
	char name[ENVX_NAME_MAX + 1]; /* ENVX_UNSET: the variable; "" otherwise */
};

/* Expands every ${NAME} of v through get (NULL: getenv; arg is passed to
 * it). Returns an owned string, or NULL with *fail saying why. */
char *envx_expand(const char *v, envx_get_fn *get, void *arg, struct envx_fail *fail);

/* The name rule in a phrase, for error messages. */
#define ENVX_RULE "[A-Za-z_][A-Za-z0-9_]*, up to 127 characters"

#endif

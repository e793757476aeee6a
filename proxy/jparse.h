/* jparse: JSON text to a jansson value, faster than json_loadb.
 *
 * Every JSON-RPC message crossing the proxy is parsed once, and jansson's
 * loader reads its input a byte at a time through a callback and a
 * UTF-8 decoder: about half of the instructions of a proxied tools/call
 * went there. This parser reads the bytes in place and builds the same
 * jansson values with the *_nocheck constructors.
 *
 * It accepts exactly what json_loadb(buf, len, flags, …) accepts for flags
 * 0 and JSON_DECODE_ANY, and returns an equal value (same members in the
 * same order, same numbers): strict RFC 8259 grammar, UTF-8 only, no NUL
 * in strings (nor \u0000), surrogate escapes in pairs, integers within
 * json_int_t, reals that do not overflow, nesting up to
 * JSON_PARSER_MAX_DEPTH, a later duplicate member replacing an earlier
 * one in place, and jansson's one quirk: a NUL byte right after a number
 * or a true/false/null is skipped. tests/fuzz/fuzz_jparse.c checks all of
 * it against json_loadb.
 *
 * Not here: error messages (callers answer "not valid JSON" whatever the
 * reason), JSON_ALLOW_NUL and the other decoding flags. No I/O, no state.
 */
#ifndef MCPWARDEN_JPARSE_H
#define MCPWARDEN_JPARSE_H

#include <stddef.h>
#include <jansson.h>

/* A new value (owned) from buf[0..len), or NULL when the text is not
 * JSON as json_loadb sees it, or memory runs out. any = 0: the text must
 * be an object or an array (json_loadb's flags 0); any = 1: any value
 * (JSON_DECODE_ANY). buf need not be NUL-terminated. */
json_t *jparse(const char *buf, size_t len, int any);

/* Where the value of one member of the top-level object sits in the text
 * (the last one of that name, as it is the one kept). at is NULL when the
 * text is no object or has no such member. */
struct jparse_span {
	const char *name;   /* in: the member, e.g. "result" */
	const char *at;     /* out: into buf */
	size_t len;         /* out */
};

/* jparse(), also filling *span (may be NULL): a hook can key a cache on a
 * member's bytes as they arrived without serialising the value again. */
json_t *jparse_span(const char *buf, size_t len, int any, struct jparse_span *span);

/* A deep copy of v (owned), equal to json_deep_copy(v), NULL when memory
 * runs out. jansson 2.14's copy checks each object and array for cycles
 * with a formatted pointer in a hash table, which costs more than the copy
 * itself; values parsed from text have no cycles, and neither may v. */
json_t *jparse_copy(const json_t *v);

#endif

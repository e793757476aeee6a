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
#include <stdint.h>
#include <string.h>
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

/* jparse(), also telling how deeply objects and arrays nest in the text
 * (*nest: 0 for a scalar, 1 for a container of scalars, ...), so a
 * caller's depth limit needs no second walk over the tree. The text's
 * nesting, which is what parsing it cost: a member that a later one of
 * the same name replaces counts, though the value no longer holds it. */
json_t *jparse_nest(const char *buf, size_t len, int any, size_t *nest);

/* ---- jparse_scan: the members the proxy reads, without a tree ----------------
 *
 * Most messages are only read by the hooks (method, tool, id, whether it is
 * a result or an error), never changed: building their tree and freeing it
 * was about a third of a proxied tools/call's instructions (issue 20). This
 * scan checks the text with the very grammar jparse uses (the same code,
 * building nothing: it accepts exactly what jparse and json_loadb accept,
 * tests/fuzz/fuzz_jparse.c checks it) and notes where the members below
 * sit. A member that appears twice is noted where its last instance is
 * (the one jansson keeps), and what an earlier instance held is forgotten. */
enum jparse_slot {
	JPI_NONE = 0,
	/* members of the top-level object */
	JPI_ID, JPI_METHOD, JPI_JSONRPC, JPI_PARAMS, JPI_RESULT, JPI_ERROR,
	/* members of params (when it is an object) */
	JPI_NAME, JPI_ARGUMENTS, JPI_META, JPI_CURSOR,
	JPI_IS_ERROR, /* result.isError */
	JPI_CONTENT,  /* result.content */
	JPI_CODE,     /* error.code */
	JPI_N
};

/* The top-level member a slot sits in (JPI_NONE: it is one itself). */
static inline enum jparse_slot jparse_parent(int slot)
{
	return slot >= JPI_NAME && slot <= JPI_CURSOR ? JPI_PARAMS
	       : slot == JPI_IS_ERROR || slot == JPI_CONTENT ? JPI_RESULT
	       : slot == JPI_CODE                     ? JPI_ERROR
	                                              : JPI_NONE;
}

/* A value's bytes in the text (at NULL: no such member). A string's
 * include its quotes; blanks around a value are not included. */
struct jparse_ref {
	const char *at;
	size_t len;
};

/* Longest method or tool name kept decoded (with its NUL). */
#define JPARSE_NAME_MAX 256

struct jparse_index {
	int object;                   /* the text is an object (else: no member found) */
	size_t nest;                  /* nesting, as jparse_nest tells it */
	struct jparse_ref at[JPI_N];  /* by enum jparse_slot */
	/* "method" and params.name decoded (escapes resolved), NUL-terminated,
	 * pointing into the buffers below (so an index is not to be copied);
	 * NULL when absent or not a string. long_string: one was a string of
	 * JPARSE_NAME_MAX bytes or more and is left NULL: read the tree. */
	const char *method, *name;
	int long_string;
	char method_buf[JPARSE_NAME_MAX], name_buf[JPARSE_NAME_MAX];
};

/* Checks buf[0..len) (any as for jparse) and fills *ix. 0: JSON as
 * json_loadb sees it; -1: not (or out of memory on a long escaped
 * string), *ix then all empty. Allocates nothing else. */
int jparse_scan(const char *buf, size_t len, int any, struct jparse_index *ix);

/* The value a noted span holds (owned), e.g. a message's id; NULL when
 * the member is absent. For spans jparse_scan gave. */
json_t *jparse_ref_value(const struct jparse_ref *r);

/* Whether a noted span is the literal true, read without a tree (e.g. a
 * result's isError). At least 4 bytes: the span may end in the NUL that
 * jansson's quirk skips after a literal. */
static inline int jparse_ref_is_true(const struct jparse_ref *r)
{
	return r->at && r->len >= 4 && memcmp(r->at, "true", 4) == 0;
}

/* Where each element of the array that member `name` of the object
 * text[0..len) holds sits in the text, for a hook that keys a cache on
 * each element's bytes (hook_contract: a tool list's tools). For text
 * jparse accepted, and that only: it skims, it does not validate. Fills
 * out[0..n) in order and returns n; -1 when the text is no object, has no
 * such member or more than one, names a member with an escape (it could
 * spell `name` another way), the member is not an array, it has more
 * than max elements, or anything but blanks follows the object. Element spans exclude surrounding blanks. */
struct jparse_elem {
	const char *at;     /* into text */
	size_t len;
	size_t same_as;     /* jparse_elements_since: 1 + the index of the
	                       earlier text's element with these very bytes,
	                       found without reading them; 0: not known */
};
long jparse_elements(const char *text, size_t len, const char *name, struct jparse_elem *out,
                     size_t max);
/* The same answer for text, skimming only where it differs from an
 * earlier text old[0..oldlen) whose jparse_elements() gave prev[0..nprev)
 * (pointing into old) for the same name: a list that changed in one tool
 * costs that tool, not the list. Falls back to jparse_elements. */
long jparse_elements_since(const char *text, size_t len, const char *name,
                           struct jparse_elem *out, size_t max, const char *old, size_t oldlen,
                           const struct jparse_elem *prev, size_t nprev);

/* Where the value of member `name` of the object text[0..len) sits when
 * it is the last member (JSON-RPC replies put "result" there), for text
 * read before it is parsed (jreuse.h, the transport's unchanged-listing
 * path): only the members before it are
 * skimmed, and the span is taken to run to the object's closing brace.
 * So it is unchecked: a later member would be in it (jparse_elements on it
 * then refuses it). 0 and *out, or -1 when the text is no object, has no
 * such member, or names a member before it with an escape. The span
 * excludes surrounding blanks. */
int jparse_last_member(const char *text, size_t len, const char *name, struct jparse_ref *out);

/* Where the values of the members names[0..n) of the object text[0..len)
 * sit (out[i].at NULL: no member names[i]), for a reader that needs a few
 * members of a small object it does not parse (the recorder's preview of
 * a tools/call result's content items). For text jparse accepted, and that
 * only: it skims. 0, or -1 when the text is no object, a member's name has
 * an escape (it could spell one of names), one of names appears twice, or
 * anything but blanks follows the object, or n is over 8; out is then
 * to be ignored. */
int jparse_pick(const char *text, size_t len, const char *const *names, size_t n,
                struct jparse_ref *out);

/* jparse_pick on each element of the array text[0..len), element i's
 * members going to out[i * n .. i * n + n): the number of elements, or -1
 * when the text is no array, an element is no object or is refused as
 * jparse_pick refuses it, or it has more than max elements. n is at most
 * 8. */
long jparse_pick_each(const char *text, size_t len, const char *const *names, size_t n,
                      struct jparse_ref *out, size_t max);

/* A deep copy of v (owned), equal to json_deep_copy(v), NULL when memory
 * runs out. jansson 2.14's copy checks each object and array for cycles
 * with a formatted pointer in a hash table, which costs more than the copy
 * itself; values parsed from text have no cycles, and neither may v. */
json_t *jparse_copy(const json_t *v);

/* json_object_get(o, key[0..len)) for the small objects of a message (an
 * envelope, a result, a content item): one walk over the members, which
 * with a few of them costs less than hashing the key (past
 * JPARSE_MEMBER_WALK of them, hashed, so that no message makes a lookup
 * cost its size). NULL when o is not an object or has no such member.
 * Borrowed. Inline: the comparison of a literal key is then a few
 * instructions. */
#define JPARSE_MEMBER_WALK 8
static inline json_t *jparse_member(const json_t *o, const char *key, size_t len)
{
	json_t *obj = (json_t *)(uintptr_t)o; /* read only: the iterator wants non-const */
	if (!json_is_object(obj))
		return NULL;
	if (json_object_size(obj) > JPARSE_MEMBER_WALK)
		return json_object_getn(obj, key, len);
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
		/* Lengths too: a key built with json_object_setn may hold a NUL. */
		if (json_object_iter_key_len(it) == len &&
		    memcmp(json_object_iter_key(it), key, len) == 0)
			return json_object_iter_value(it);
	}
	return NULL;
}
#define JPARSE_MEMBER(o, lit) jparse_member((o), (lit), sizeof(lit) - 1)

#endif

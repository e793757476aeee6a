/* jschema_int.h: the compiled form shared by the validator's files
 * (jschema_compile.c builds it, jschema_validate.c walks it,
 * jschema_format.c checks formats). Not a public header: only checks/
 * jschema*.c include it.
 *
 *   struct jschema
 *     root ------------> jsnode (one per subschema, boolean ones too)
 *     nodes[] (owned)      |- keyword fields, NULL/0 when absent
 *     res[]  (resources:   |- children: jsnode pointers into nodes[]
 *       $id'd subschemas)  '- ref/dynref: resolved targets (may cycle)
 *     anchors[]
 *
 * Every node is owned by nodes[] and freed from there; children and
 * resolved targets are borrowed pointers, so reference cycles are fine.
 * Strings and JSON values (enum, const, property names) point into the
 * schema document, which struct jschema holds a reference to.
 */
#ifndef MCPWARDEN_CHECKS_JSCHEMA_INT_H
#define MCPWARDEN_CHECKS_JSCHEMA_INT_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include <jansson.h>

#include "checks/jschema.h"
#include "checks/jsre.h"

/* Instance types as bits of jsnode.types. JT_INT is "integer" (an integer,
 * or a real with an integral value); JT_NUM is "number". */
enum {
	JT_NULL = 1u << 0,
	JT_BOOL = 1u << 1,
	JT_OBJ = 1u << 2,
	JT_ARR = 1u << 3,
	JT_NUM = 1u << 4,
	JT_STR = 1u << 5,
	JT_INT = 1u << 6,
};

/* Presence of the keywords whose value is a plain number or flag. */
enum {
	KW_TYPE = 1u << 0,
	KW_ENUM = 1u << 1,
	KW_CONST = 1u << 2,
	KW_MULTIPLE = 1u << 3,
	KW_MAX = 1u << 4,
	KW_EXMAX = 1u << 5,
	KW_MIN = 1u << 6,
	KW_EXMIN = 1u << 7,
	KW_MAXLEN = 1u << 8,
	KW_MINLEN = 1u << 9,
	KW_MAXITEMS = 1u << 10,
	KW_MINITEMS = 1u << 11,
	KW_MAXPROPS = 1u << 12,
	KW_MINPROPS = 1u << 13,
	KW_MINCONTAINS = 1u << 14,
	KW_MAXCONTAINS = 1u << 15,
	KW_UNIQUE = 1u << 16,
	KW_REQUIRED = 1u << 17,
	KW_FORMAT = 1u << 18,
	/* Any keyword that looks at an object / array / string / number: lets
	 * the validator skip whole groups for other instance types. */
	KW_OBJ_ANY = 1u << 24,
	KW_ARR_ANY = 1u << 25,
	KW_STR_ANY = 1u << 26,
	KW_NUM_ANY = 1u << 27,
	/* The node (2020-12) has unevaluatedProperties/Items: its in-place
	 * subschemas must report what they evaluated. */
	KW_NEEDS_EV = 1u << 28,
};

/* Formats asserted under JSCHEMA_FORMAT_ASSERT; JF_OTHER is any other
 * (an annotation only). */
enum jschema_fmt {
	JF_NONE,
	JF_DATETIME,
	JF_DATE,
	JF_TIME,
	JF_EMAIL,
	JF_IPV4,
	JF_IPV6,
	JF_URI,
	JF_UUID,
	JF_HOSTNAME,
	JF_OTHER,
};

enum jsnode_kind {
	JSN_TRUE,   /* the boolean schema true: everything is valid */
	JSN_FALSE,  /* the boolean schema false: nothing is */
	JSN_SCHEMA, /* an object schema: the keyword fields below apply */
};

struct jsnode;

struct jsprop {
	const char *name; /* borrowed: schema document */
	struct jsnode *node;
};

struct jspat {
	struct jsre *re; /* owned */
	const char *src; /* borrowed */
	struct jsnode *node;
};

struct jsdep {
	const char *key;       /* borrowed */
	const char *kw;        /* static: the keyword it came from */
	const json_t *names;   /* dependentRequired: array of strings, or NULL */
	struct jsnode *node;   /* dependentSchemas: the subschema, or NULL */
};

struct jsnode {
	enum jsnode_kind kind;
	uint32_t has;           /* KW_* bits */
	unsigned types;         /* JT_* bits, with KW_TYPE */
	unsigned resource;      /* index into jschema.res: its base URI */
	char *path;             /* owned: JSON Pointer from the document root */
	const json_t *src;      /* borrowed: this subschema's JSON */
	uint64_t kwmask;        /* compile only: which keywords the object has */

	const json_t *enum_, *const_;
	const json_t *multiple_of, *maximum, *ex_maximum, *minimum, *ex_minimum;
	size_t max_len, min_len, max_items, min_items, max_props, min_props;
	size_t min_contains, max_contains;
	struct jsre *pattern; /* owned */
	enum jschema_fmt format;
	const char *format_name;

	struct jsprop *props; /* owned array, sorted by name */
	size_t nprops;
	struct jspat *pats; /* owned array */
	size_t npats;
	struct jsdep *deps; /* owned array */
	size_t ndeps;
	const json_t *required;

	struct jsnode *addl_props, *prop_names, *uneval_props;
	struct jsnode **prefix; /* owned array: prefixItems / draft-07 items[] */
	size_t nprefix;
	struct jsnode *items, *addl_items, *contains, *uneval_items;
	struct jsnode **all_of, **any_of, **one_of; /* owned arrays */
	size_t nall_of, nany_of, none_of;
	struct jsnode *not_, *if_, *then_, *else_;

	struct jsnode *ref;         /* $ref target, resolved */
	struct jsnode *dynref;      /* $dynamicRef static target */
	const char *dynref_name;    /* when the target bookends: the anchor name */
	const char *dyn_anchor;     /* this node's $dynamicAnchor */
};

/* A schema resource: the document root or a subschema with its own $id. */
struct jsres {
	char *uri;            /* owned: absolute, no fragment */
	struct jsnode *root;
	const json_t *json;
};

struct jsanchor {
	unsigned resource;
	const char *name; /* borrowed */
	struct jsnode *node;
	int dynamic;      /* a $dynamicAnchor (also usable as a plain anchor) */
};

struct jschema {
	json_t *doc; /* a reference held on the caller's schema */
	enum jschema_dialect dialect;
	unsigned flags;
	struct jsnode *root;
	struct jsnode **nodes; /* owned */
	size_t nnodes, capnodes;
	struct jsres *res;     /* owned */
	size_t nres, capres;
	struct jsanchor *anchors; /* owned */
	size_t nanchors, capanchors;
};

/* jschema_uri.c. The target of reference ref against base (both
 * NUL-terminated) into out (JSCHEMA_URI_MAX bytes); -1 when too long. */
#define JSCHEMA_URI_MAX 1024
int jschema_uri_resolve(const char *base, const char *ref, char *out);
/* Cuts uri at '#' (uri keeps the document); returns the fragment or NULL. */
char *jschema_uri_split_frag(char *uri);
/* %XX -> byte, in place. */
void jschema_uri_percent_decode(char *s);

/* jschema_format.c: 1 when s[0..len) is a valid instance of format f. */
int jschema_format_ok(enum jschema_fmt f, const char *s, size_t len);
enum jschema_fmt jschema_format_of(const char *name);

/* jschema_value.c: JSON equality (1 == 1.0; objects by key), a hash that
 * agrees with it, code points of UTF-8 text, a value's type name. */
int jschema_json_equal(const json_t *a, const json_t *b);
uint64_t jschema_json_hash(const json_t *j);
size_t jschema_utf8_len(const char *s, size_t n);
const char *jschema_type_name(const json_t *x);
/* Appends s to out[*o..cap): escaped as a pointer token (escape), or as a
 * pointer already (an escape pair never split); "..." when cut (returns 1). */
int jschema_put_ptr(char *out, size_t cap, size_t *o, const char *s, int escape);

/* Numbers compared by value (integers exactly). */
static inline int jschema_num_cmp(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b)) {
		json_int_t x = json_integer_value(a), y = json_integer_value(b);
		return x < y ? -1 : x > y;
	}
	double x = json_number_value(a), y = json_number_value(b);
	return x < y ? -1 : x > y;
}

/* x is one of the JT_* types. */
static inline int jschema_type_ok(unsigned types, const json_t *x)
{
	switch (json_typeof(x)) {
	case JSON_OBJECT: return types & JT_OBJ;
	case JSON_ARRAY: return types & JT_ARR;
	case JSON_STRING: return types & JT_STR;
	case JSON_INTEGER: return types & (JT_INT | JT_NUM);
	case JSON_REAL: {
		double d = json_real_value(x);
		return (types & JT_NUM) || ((types & JT_INT) && d == floor(d) && isfinite(d));
	}
	case JSON_TRUE:
	case JSON_FALSE: return types & JT_BOOL;
	default: return types & JT_NULL;
	}
}

/* Fills e (if not NULL): code, keyword, a schema pointer made of base and
 * kw ("" for none), printf-style message. */
void jschema_set_error(struct jschema_error *e, enum jschema_code code, const char *base,
                       const char *kw, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif

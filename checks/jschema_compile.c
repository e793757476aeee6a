/* jschema_compile.c: a schema document -> struct jschema (jschema_int.h).
 *
 * Two passes. The walk creates one node per subschema in a keyword
 * position, checks each keyword's value (a bad one is a JSCHEMA_INVALID
 * finding with its pointer), registers resources ($id) and anchors, and
 * queues every $ref/$dynamicRef. Then the queue is resolved: a reference
 * is resolved against its node's base URI (RFC 3986 section 5.2), its
 * document must be one of this document's resources (else
 * JSCHEMA_REMOTE_REF), and its fragment is a JSON Pointer or an anchor. A
 * pointer to a location the walk did not compile (inside an unknown
 * keyword, or a draft-07 $ref's ignored siblings) is compiled then, which
 * may queue more references; the queue ends because each location is
 * compiled once and nodes are capped (LIMIT_JSCHEMA_NODES).
 *
 * Why this file is long: the keyword table, the walk that checks each
 * keyword's value and the resolution that may walk again share one
 * compiler state; split, each part would export its internals to the
 * other. (The URI arithmetic is in jschema_uri.c.)
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/jschema_int.h"

struct pending {
	struct jsnode *node;
	const char *ref; /* borrowed */
	int dynamic;
};

/* The compiler's state; one per jschema_compile() call. */
struct jsc {
	struct jschema *s;
	struct jschema_error *why;
	int failed;
	struct pending *q;
	size_t nq, capq;
};

static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 8;
	while (n < need)
		n *= 2;
	void *p = realloc(*arr, n * size);
	if (p == NULL)
		return -1;
	*arr = p;
	*cap = n;
	return 0;
}

static void fail(struct jsc *c, enum jschema_code code, const char *path, const char *kw,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void fail(struct jsc *c, enum jschema_code code, const char *path, const char *kw,
                 const char *fmt, ...)
{
	if (c->failed)
		return;
	c->failed = 1;
	if (c->why == NULL)
		return;
	char msg[LIMIT_JSCHEMA_MSG_BYTES];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	jschema_set_error(c->why, code, path, kw, "%s", msg);
}

static void oom(struct jsc *c, const char *path)
{
	fail(c, JSCHEMA_LIMIT, path, "", "out of memory");
}

static char *path_join(const char *path, const char *key);

/* A finding at path/<key escaped>, naming keyword kw (static). */
static void fail_key(struct jsc *c, enum jschema_code code, const char *path, const char *key,
                     const char *kw, const char *msg, const char *detail)
{
	int first = !c->failed;
	char *full = path_join(path, key);
	fail(c, code, full ? full : path, "", "%s%.100s", msg, detail);
	if (first && c->why)
		c->why->keyword = kw;
	free(full);
}

/* path + "/" + escaped key, owned by the caller. */
static char *path_join(const char *path, const char *key)
{
	size_t pl = strlen(path), extra = 0;
	for (const char *k = key; *k; k++)
		extra += *k == '~' || *k == '/';
	char *p = malloc(pl + strlen(key) + extra + 2);
	if (p == NULL)
		return NULL;
	memcpy(p, path, pl);
	char *o = p + pl;
	*o++ = '/';
	for (const char *k = key; *k; k++) {
		if (*k == '~' || *k == '/') {
			*o++ = '~';
			*o++ = *k == '~' ? '0' : '1';
		} else {
			*o++ = *k;
		}
	}
	*o = '\0';
	return p;
}

/* ---- keyword presence --------------------------------------------------------------
 * Each schema object's keys are looked up once in this sorted table; the
 * walk then asks jansson only for keywords that are there (most of the
 * compile time went to hashing absent keyword names). */

enum kw_index {
	K_S_anchor,
	K_S_defs,
	K_S_dynamicAnchor,
	K_S_dynamicRef,
	K_S_id,
	K_S_ref,
	K_additionalItems,
	K_additionalProperties,
	K_allOf,
	K_anyOf,
	K_const,
	K_contains,
	K_definitions,
	K_dependencies,
	K_dependentRequired,
	K_dependentSchemas,
	K_else,
	K_enum,
	K_exclusiveMaximum,
	K_exclusiveMinimum,
	K_format,
	K_if,
	K_items,
	K_maxContains,
	K_maxItems,
	K_maxLength,
	K_maxProperties,
	K_maximum,
	K_minContains,
	K_minItems,
	K_minLength,
	K_minProperties,
	K_minimum,
	K_multipleOf,
	K_not,
	K_oneOf,
	K_pattern,
	K_patternProperties,
	K_prefixItems,
	K_properties,
	K_propertyNames,
	K_required,
	K_then,
	K_type,
	K_unevaluatedItems,
	K_unevaluatedProperties,
	K_uniqueItems,
	K_COUNT,
};

static const char *const kw_names[] = {
	"$anchor",
	"$defs",
	"$dynamicAnchor",
	"$dynamicRef",
	"$id",
	"$ref",
	"additionalItems",
	"additionalProperties",
	"allOf",
	"anyOf",
	"const",
	"contains",
	"definitions",
	"dependencies",
	"dependentRequired",
	"dependentSchemas",
	"else",
	"enum",
	"exclusiveMaximum",
	"exclusiveMinimum",
	"format",
	"if",
	"items",
	"maxContains",
	"maxItems",
	"maxLength",
	"maxProperties",
	"maximum",
	"minContains",
	"minItems",
	"minLength",
	"minProperties",
	"minimum",
	"multipleOf",
	"not",
	"oneOf",
	"pattern",
	"patternProperties",
	"prefixItems",
	"properties",
	"propertyNames",
	"required",
	"then",
	"type",
	"unevaluatedItems",
	"unevaluatedProperties",
	"uniqueItems",
};

static uint64_t kw_mask(const json_t *j)
{
	uint64_t m = 0;
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)(uintptr_t)j, key, v) {
		size_t lo = 0, hi = K_COUNT;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			int c = strcmp(key, kw_names[mid]);
			if (c == 0) {
				m |= 1ull << mid;
				break;
			}
			if (c < 0)
				hi = mid;
			else
				lo = mid + 1;
		}
	}
	return m;
}

/* The value of keyword k in n's object, or NULL. */
static const json_t *kw_get(const struct jsnode *n, const json_t *j, enum kw_index k)
{
	return (n->kwmask >> k) & 1 ? json_object_get(j, kw_names[k]) : NULL;
}

/* ---- registries ----------------------------------------------------------------- */

static long find_res(const struct jschema *s, const char *uri)
{
	for (size_t i = 0; i < s->nres; i++)
		if (strcmp(s->res[i].uri, uri) == 0)
			return (long)i;
	return -1;
}

static long add_res(struct jsc *c, const char *uri, struct jsnode *root, const json_t *json)
{
	struct jschema *s = c->s;
	long have = find_res(s, uri);
	if (have >= 0)
		return have;
	if (grow((void **)&s->res, &s->capres, s->nres + 1, sizeof *s->res))
		return -1;
	char *u = strdup(uri);
	if (u == NULL)
		return -1;
	s->res[s->nres] = (struct jsres){.uri = u, .root = root, .json = json};
	return (long)s->nres++;
}

static int add_anchor(struct jsc *c, unsigned res, const char *name, struct jsnode *n, int dynamic)
{
	struct jschema *s = c->s;
	if (grow((void **)&s->anchors, &s->capanchors, s->nanchors + 1, sizeof *s->anchors))
		return -1;
	s->anchors[s->nanchors++] =
		(struct jsanchor){.resource = res, .name = name, .node = n, .dynamic = dynamic};
	return 0;
}

static struct jsnode *find_anchor(const struct jschema *s, unsigned res, const char *name)
{
	for (size_t i = 0; i < s->nanchors; i++)
		if (s->anchors[i].resource == res && strcmp(s->anchors[i].name, name) == 0)
			return s->anchors[i].node;
	return NULL;
}

static struct jsnode *new_node(struct jsc *c, const json_t *src, char *path, unsigned res)
{
	struct jschema *s = c->s;
	if (path == NULL) {
		oom(c, "");
		return NULL;
	}
	if (s->nnodes >= LIMIT_JSCHEMA_NODES) {
		fail(c, JSCHEMA_LIMIT, path, "", "more than %d subschemas (LIMIT_JSCHEMA_NODES)",
		     LIMIT_JSCHEMA_NODES);
		free(path);
		return NULL;
	}
	struct jsnode *n = calloc(1, sizeof *n);
	if (n == NULL || grow((void **)&s->nodes, &s->capnodes, s->nnodes + 1, sizeof *s->nodes)) {
		free(n);
		oom(c, path);
		free(path);
		return NULL;
	}
	n->path = path;
	n->src = src;
	n->resource = res;
	n->kind = json_is_true(src) ? JSN_TRUE : json_is_false(src) ? JSN_FALSE : JSN_SCHEMA;
	s->nodes[s->nnodes++] = n;
	return n;
}

/* ---- the walk ---------------------------------------------------------------------- */

static struct jsnode *walk(struct jsc *c, const json_t *j, char *path, unsigned res, int depth);

static struct jsnode *sub(struct jsc *c, struct jsnode *n, const json_t *j, const char *kw,
                          int depth)
{
	char *p = path_join(n->path, kw);
	return walk(c, j, p, n->resource, depth + 1);
}

static struct jsnode *sub_at(struct jsc *c, struct jsnode *n, const json_t *j, const char *kw,
                             const char *key, int depth)
{
	char *p1 = path_join(n->path, kw);
	if (p1 == NULL) {
		oom(c, n->path);
		return NULL;
	}
	char *p = path_join(p1, key);
	free(p1);
	return walk(c, j, p, n->resource, depth + 1);
}

static int is_schema(const json_t *j)
{
	return json_is_object(j) || json_is_boolean(j);
}

/* A non-negative integer keyword value (1.0 counts). */
static int get_count(struct jsc *c, struct jsnode *n, const json_t *v, const char *kw, size_t *out)
{
	double d;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (size_t)json_integer_value(v);
		return 0;
	}
	if (json_is_real(v) && (d = json_real_value(v)) >= 0 && d == floor(d)) {
		*out = d > 1e18 ? (size_t)1e18 : (size_t)d;
		return 0;
	}
	fail(c, JSCHEMA_INVALID, n->path, kw, "%s must be a non-negative integer", kw);
	return -1;
}

static const json_t *get_number(struct jsc *c, struct jsnode *n, const json_t *v, const char *kw)
{
	if (!json_is_number(v)) {
		fail(c, JSCHEMA_INVALID, n->path, kw, "%s must be a number", kw);
		return NULL;
	}
	return v;
}

static int type_bit(const char *t)
{
	static const struct {
		const char *name;
		unsigned bit;
	} types[] = {
		{"null", JT_NULL},  {"boolean", JT_BOOL}, {"object", JT_OBJ},  {"array", JT_ARR},
		{"number", JT_NUM}, {"string", JT_STR},   {"integer", JT_INT},
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (strcmp(t, types[i].name) == 0)
			return (int)types[i].bit;
	return 0;
}

static int kw_type(struct jsc *c, struct jsnode *n, const json_t *v)
{
	if (json_is_string(v)) {
		int b = type_bit(json_string_value(v));
		if (!b) {
			fail(c, JSCHEMA_INVALID, n->path, "type", "unknown type \"%.40s\"",
			     json_string_value(v));
			return -1;
		}
		n->types = (unsigned)b;
	} else if (json_is_array(v) && json_array_size(v) > 0) {
		size_t i;
		const json_t *t;
		json_array_foreach(v, i, t) {
			int b = json_is_string(t) ? type_bit(json_string_value(t)) : 0;
			if (!b) {
				char kw[32];
				snprintf(kw, sizeof kw, "type/%zu", i);
				fail(c, JSCHEMA_INVALID, n->path, kw, "type entries must be type names");
				return -1;
			}
			n->types |= (unsigned)b;
		}
	} else {
		fail(c, JSCHEMA_INVALID, n->path, "type", "type must be a string or a non-empty array");
		return -1;
	}
	n->has |= KW_TYPE;
	return 0;
}

static int string_array(struct jsc *c, struct jsnode *n, const json_t *v, const char *kw)
{
	size_t i;
	const json_t *t;
	if (!json_is_array(v)) {
		fail(c, JSCHEMA_INVALID, n->path, kw, "%s must be an array of strings", kw);
		return -1;
	}
	json_array_foreach(v, i, t) {
		if (!json_is_string(t)) {
			fail(c, JSCHEMA_INVALID, n->path, kw, "%s must be an array of strings", kw);
			return -1;
		}
	}
	return 0;
}

static int schema_list(struct jsc *c, struct jsnode *n, const json_t *v, const char *kw,
                       struct jsnode ***out, size_t *nout, int depth, int allow_empty)
{
	if (!json_is_array(v) || (!allow_empty && json_array_size(v) == 0)) {
		fail(c, JSCHEMA_INVALID, n->path, kw, "%s must be a non-empty array of schemas", kw);
		return -1;
	}
	size_t len = json_array_size(v);
	*out = calloc(len ? len : 1, sizeof **out);
	if (*out == NULL) {
		oom(c, n->path);
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		char idx[24];
		snprintf(idx, sizeof idx, "%zu", i);
		(*out)[i] = sub_at(c, n, json_array_get(v, i), kw, idx, depth);
		if ((*out)[i] == NULL)
			return -1;
		*nout = i + 1;
	}
	return 0;
}

/* A keyword whose value must be one schema. */
static int one_schema(struct jsc *c, struct jsnode *n, const json_t *v, const char *kw,
                      struct jsnode **out, int depth)
{
	if (!is_schema(v)) {
		fail(c, JSCHEMA_INVALID, n->path, kw, "%s must be a schema (object or boolean)", kw);
		return -1;
	}
	*out = sub(c, n, v, kw, depth);
	return *out ? 0 : -1;
}

static int cmp_prop(const void *a, const void *b)
{
	return strcmp(((const struct jsprop *)a)->name, ((const struct jsprop *)b)->name);
}

static int kw_properties(struct jsc *c, struct jsnode *n, const json_t *v, int depth)
{
	const char *key;
	const json_t *val;
	if (!json_is_object(v)) {
		fail(c, JSCHEMA_INVALID, n->path, "properties", "properties must be an object");
		return -1;
	}
	n->props = calloc(json_object_size(v) + 1, sizeof *n->props);
	if (n->props == NULL) {
		oom(c, n->path);
		return -1;
	}
	json_object_foreach((json_t *)(uintptr_t)v, key, val) {
		if (!is_schema(val)) {
			char *p = path_join(n->path, "properties");
			fail_key(c, JSCHEMA_INVALID, p ? p : n->path, key, "properties",
			         "a property's schema must be an object or boolean", "");
			free(p);
			return -1;
		}
		struct jsnode *child = sub_at(c, n, val, "properties", key, depth);
		if (child == NULL)
			return -1;
		n->props[n->nprops++] = (struct jsprop){.name = key, .node = child};
	}
	qsort(n->props, n->nprops, sizeof *n->props, cmp_prop);
	return 0;
}

/* The pattern v, found at path/<key>; a refusal names keyword kw. */
static struct jsre *compile_re(struct jsc *c, const char *path, const char *key, const char *kw,
                               const json_t *v)
{
	char err[128] = "";
	struct jsre *re = jsre_compile(json_string_value(v), json_string_length(v), err, sizeof err);
	if (re == NULL)
		fail_key(c, JSCHEMA_UNSUPPORTED, path, key, kw, "pattern not supported: ", err);
	return re;
}

static int kw_pattern_props(struct jsc *c, struct jsnode *n, const json_t *v, int depth)
{
	const char *key;
	const json_t *val;
	if (!json_is_object(v)) {
		fail(c, JSCHEMA_INVALID, n->path, "patternProperties", "patternProperties must be an object");
		return -1;
	}
	n->pats = calloc(json_object_size(v) + 1, sizeof *n->pats);
	if (n->pats == NULL) {
		oom(c, n->path);
		return -1;
	}
	json_object_foreach((json_t *)(uintptr_t)v, key, val) {
		char *p = path_join(n->path, "patternProperties");
		if (p == NULL) {
			oom(c, n->path);
			return -1;
		}
		if (!is_schema(val)) {
			fail_key(c, JSCHEMA_INVALID, p, key, "patternProperties",
			         "a pattern's schema must be an object or boolean", "");
			free(p);
			return -1;
		}
		json_t *ks = json_string(key);
		struct jsre *re = ks ? compile_re(c, p, key, "patternProperties", ks) : NULL;
		json_decref(ks);
		free(p);
		if (re == NULL) {
			if (!c->failed)
				oom(c, n->path);
			return -1;
		}
		n->pats[n->npats++] = (struct jspat){.re = re, .src = key};
		struct jsnode *child = sub_at(c, n, val, "patternProperties", key, depth);
		if (child == NULL)
			return -1;
		n->pats[n->npats - 1].node = child;
	}
	return 0;
}

/* dependentRequired (names), dependentSchemas (schemas), or draft-07
 * dependencies (either per key). */
static int kw_deps(struct jsc *c, struct jsnode *n, const json_t *v, const char *kw, int names_ok,
                   int schemas_ok, int depth)
{
	const char *key;
	const json_t *val;
	if (!json_is_object(v)) {
		fail(c, JSCHEMA_INVALID, n->path, kw, "%s must be an object", kw);
		return -1;
	}
	void *p = realloc(n->deps, (n->ndeps + json_object_size(v) + 1) * sizeof *n->deps);
	if (p == NULL) {
		oom(c, n->path);
		return -1;
	}
	n->deps = p;
	json_object_foreach((json_t *)(uintptr_t)v, key, val) {
		struct jsdep *d = &n->deps[n->ndeps];
		*d = (struct jsdep){.key = key, .kw = kw};
		if (names_ok && json_is_array(val)) {
			if (string_array(c, n, val, kw))
				return -1;
			d->names = val;
		} else if (schemas_ok && is_schema(val)) {
			d->node = sub_at(c, n, val, kw, key, depth);
			if (d->node == NULL)
				return -1;
		} else {
			fail(c, JSCHEMA_INVALID, n->path, kw, "%s/%.40s has the wrong type", kw, key);
			return -1;
		}
		n->ndeps++;
	}
	return 0;
}

static int queue_ref(struct jsc *c, struct jsnode *n, const json_t *v, const char *kw, int dynamic)
{
	if (!json_is_string(v)) {
		fail(c, JSCHEMA_INVALID, n->path, kw, "%s must be a string", kw);
		return -1;
	}
	if (c->nq >= LIMIT_JSCHEMA_REFS) {
		fail(c, JSCHEMA_LIMIT, n->path, kw, "more than %d $ref/$dynamicRef (LIMIT_JSCHEMA_REFS)",
		     LIMIT_JSCHEMA_REFS);
		return -1;
	}
	if (grow((void **)&c->q, &c->capq, c->nq + 1, sizeof *c->q)) {
		oom(c, n->path);
		return -1;
	}
	c->q[c->nq++] = (struct pending){.node = n, .ref = json_string_value(v), .dynamic = dynamic};
	return 0;
}

/* $id / $anchor / $dynamicAnchor: may start a resource (returns its
 * index through *res). */
static int identifiers(struct jsc *c, struct jsnode *n, const json_t *j, unsigned *res)
{
	if (c->s->nres + c->s->nanchors >= LIMIT_JSCHEMA_IDS) {
		fail(c, JSCHEMA_LIMIT, n->path, "", "more than %d $id/$anchor/$dynamicAnchor (LIMIT_JSCHEMA_IDS)",
		     LIMIT_JSCHEMA_IDS);
		return -1;
	}
	int d7 = c->s->dialect == JSCHEMA_DRAFT7;
	const json_t *id = kw_get(n, j, K_S_id);
	if (id && !(d7 && kw_get(n, j, K_S_ref))) {
		char abs[JSCHEMA_URI_MAX];
		if (!json_is_string(id)) {
			fail(c, JSCHEMA_INVALID, n->path, "$id", "$id must be a string");
			return -1;
		}
		if (jschema_uri_resolve(c->s->res[*res].uri, json_string_value(id), abs)) {
			fail(c, JSCHEMA_INVALID, n->path, "$id", "$id too long");
			return -1;
		}
		char *frag = jschema_uri_split_frag(abs);
		if (!d7 && frag && *frag) {
			fail(c, JSCHEMA_INVALID, n->path, "$id", "$id must not have a fragment");
			return -1;
		}
		if (json_string_value(id)[0] != '#') {
			long r = add_res(c, abs, n, j);
			if (r < 0) {
				oom(c, n->path);
				return -1;
			}
			*res = (unsigned)r;
			n->resource = *res;
		}
		/* draft-07: "#name" (or "uri#name") is a location-independent id;
		 * the name is borrowed from the $id string itself. */
		const char *hash = strchr(json_string_value(id), '#');
		if (d7 && hash && hash[1] && add_anchor(c, *res, hash + 1, n, 0)) {
			oom(c, n->path);
			return -1;
		}
	}
	if (d7)
		return 0;
	const json_t *a = kw_get(n, j, K_S_anchor);
	if (a) {
		if (!json_is_string(a)) {
			fail(c, JSCHEMA_INVALID, n->path, "$anchor", "$anchor must be a string");
			return -1;
		}
		if (add_anchor(c, *res, json_string_value(a), n, 0)) {
			oom(c, n->path);
			return -1;
		}
	}
	const json_t *da = kw_get(n, j, K_S_dynamicAnchor);
	if (da) {
		if (!json_is_string(da)) {
			fail(c, JSCHEMA_INVALID, n->path, "$dynamicAnchor", "$dynamicAnchor must be a string");
			return -1;
		}
		n->dyn_anchor = json_string_value(da);
		if (add_anchor(c, *res, n->dyn_anchor, n, 1)) {
			oom(c, n->path);
			return -1;
		}
	}
	return 0;
}

/* The keywords both dialects share. */
static int kw_common(struct jsc *c, struct jsnode *n, const json_t *j, int depth)
{
	const json_t *v;
	int d7 = c->s->dialect == JSCHEMA_DRAFT7;

	if ((v = kw_get(n, j, K_type)) && kw_type(c, n, v))
		return -1;
	if ((v = kw_get(n, j, K_enum))) {
		if (!json_is_array(v)) {
			fail(c, JSCHEMA_INVALID, n->path, "enum", "enum must be an array");
			return -1;
		}
		n->enum_ = v;
		n->has |= KW_ENUM;
	}
	if ((v = kw_get(n, j, K_const))) {
		n->const_ = v;
		n->has |= KW_CONST;
	}
	if ((v = kw_get(n, j, K_multipleOf))) {
		if (!json_is_number(v) || json_number_value(v) <= 0) {
			fail(c, JSCHEMA_INVALID, n->path, "multipleOf", "multipleOf must be a number > 0");
			return -1;
		}
		n->multiple_of = v;
		n->has |= KW_MULTIPLE | KW_NUM_ANY;
	}
	static const struct {
		const char *kw;
		enum kw_index k;
		size_t off;
		uint32_t bit;
	} nums[] = {
		{"maximum", K_maximum, offsetof(struct jsnode, maximum), KW_MAX},
		{"exclusiveMaximum", K_exclusiveMaximum, offsetof(struct jsnode, ex_maximum), KW_EXMAX},
		{"minimum", K_minimum, offsetof(struct jsnode, minimum), KW_MIN},
		{"exclusiveMinimum", K_exclusiveMinimum, offsetof(struct jsnode, ex_minimum), KW_EXMIN},
	};
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		if ((v = kw_get(n, j, nums[i].k)) == NULL)
			continue;
		if (!get_number(c, n, v, nums[i].kw))
			return -1;
		*(const json_t **)(void *)((char *)n + nums[i].off) = v;
		n->has |= nums[i].bit | KW_NUM_ANY;
	}
	static const struct {
		const char *kw;
		enum kw_index k;
		size_t off;
		uint32_t bit;
	} counts[] = {
		{"maxLength", K_maxLength, offsetof(struct jsnode, max_len), KW_MAXLEN | KW_STR_ANY},
		{"minLength", K_minLength, offsetof(struct jsnode, min_len), KW_MINLEN | KW_STR_ANY},
		{"maxItems", K_maxItems, offsetof(struct jsnode, max_items), KW_MAXITEMS | KW_ARR_ANY},
		{"minItems", K_minItems, offsetof(struct jsnode, min_items), KW_MINITEMS | KW_ARR_ANY},
		{"maxProperties", K_maxProperties, offsetof(struct jsnode, max_props), KW_MAXPROPS | KW_OBJ_ANY},
		{"minProperties", K_minProperties, offsetof(struct jsnode, min_props), KW_MINPROPS | KW_OBJ_ANY},
		{"minContains", K_minContains, offsetof(struct jsnode, min_contains), KW_MINCONTAINS},
		{"maxContains", K_maxContains, offsetof(struct jsnode, max_contains), KW_MAXCONTAINS},
	};
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		if ((v = kw_get(n, j, counts[i].k)) == NULL)
			continue;
		if (d7 && (counts[i].bit & (KW_MINCONTAINS | KW_MAXCONTAINS)))
			continue;
		if (get_count(c, n, v, counts[i].kw, (size_t *)(void *)((char *)n + counts[i].off)))
			return -1;
		n->has |= counts[i].bit;
	}
	if ((v = kw_get(n, j, K_pattern))) {
		if (!json_is_string(v)) {
			fail(c, JSCHEMA_INVALID, n->path, "pattern", "pattern must be a string");
			return -1;
		}
		if ((n->pattern = compile_re(c, n->path, "pattern", "pattern", v)) == NULL)
			return -1;
		n->has |= KW_STR_ANY;
	}
	if ((v = kw_get(n, j, K_format))) {
		if (!json_is_string(v)) {
			fail(c, JSCHEMA_INVALID, n->path, "format", "format must be a string");
			return -1;
		}
		n->format_name = json_string_value(v);
		n->format = jschema_format_of(n->format_name);
		if ((c->s->flags & JSCHEMA_FORMAT_ASSERT) && n->format != JF_OTHER)
			n->has |= KW_FORMAT | KW_STR_ANY;
	}
	if ((v = kw_get(n, j, K_uniqueItems))) {
		if (!json_is_boolean(v)) {
			fail(c, JSCHEMA_INVALID, n->path, "uniqueItems", "uniqueItems must be a boolean");
			return -1;
		}
		if (json_is_true(v))
			n->has |= KW_UNIQUE | KW_ARR_ANY;
	}
	if ((v = kw_get(n, j, K_required))) {
		if (string_array(c, n, v, "required"))
			return -1;
		n->required = v;
		n->has |= KW_REQUIRED | KW_OBJ_ANY;
	}
	if ((v = kw_get(n, j, K_properties)) && kw_properties(c, n, v, depth))
		return -1;
	if ((v = kw_get(n, j, K_patternProperties)) && kw_pattern_props(c, n, v, depth))
		return -1;
	if ((v = kw_get(n, j, K_additionalProperties)) &&
	    one_schema(c, n, v, "additionalProperties", &n->addl_props, depth))
		return -1;
	if ((v = kw_get(n, j, K_propertyNames)) &&
	    one_schema(c, n, v, "propertyNames", &n->prop_names, depth))
		return -1;
	if (n->nprops || n->npats || n->addl_props || n->prop_names)
		n->has |= KW_OBJ_ANY;
	if ((v = kw_get(n, j, K_contains)) && one_schema(c, n, v, "contains", &n->contains, depth))
		return -1;
	if ((v = kw_get(n, j, K_allOf)) &&
	    schema_list(c, n, v, "allOf", &n->all_of, &n->nall_of, depth, 0))
		return -1;
	if ((v = kw_get(n, j, K_anyOf)) &&
	    schema_list(c, n, v, "anyOf", &n->any_of, &n->nany_of, depth, 0))
		return -1;
	if ((v = kw_get(n, j, K_oneOf)) &&
	    schema_list(c, n, v, "oneOf", &n->one_of, &n->none_of, depth, 0))
		return -1;
	if ((v = kw_get(n, j, K_not)) && one_schema(c, n, v, "not", &n->not_, depth))
		return -1;
	if ((v = kw_get(n, j, K_if))) {
		if (one_schema(c, n, v, "if", &n->if_, depth))
			return -1;
		if ((v = kw_get(n, j, K_then)) && one_schema(c, n, v, "then", &n->then_, depth))
			return -1;
		if ((v = kw_get(n, j, K_else)) && one_schema(c, n, v, "else", &n->else_, depth))
			return -1;
	}
	/* Keywords under definitions/$defs are compiled so $refs into them
	 * find their node, base URI and anchors. */
	const char *defs_kw[] = {"$defs", "definitions"};
	const enum kw_index defs_k[] = {K_S_defs, K_definitions};
	for (size_t i = 0; i < 2; i++) {
		const char *key;
		const json_t *val;
		if ((v = kw_get(n, j, defs_k[i])) == NULL)
			continue;
		if (!json_is_object(v)) {
			fail(c, JSCHEMA_INVALID, n->path, defs_kw[i], "%s must be an object", defs_kw[i]);
			return -1;
		}
		json_object_foreach((json_t *)(uintptr_t)v, key, val) {
			if (!is_schema(val)) {
				fail(c, JSCHEMA_INVALID, n->path, defs_kw[i], "%s/%.40s must be a schema",
				     defs_kw[i], key);
				return -1;
			}
			if (sub_at(c, n, val, defs_kw[i], key, depth) == NULL)
				return -1;
		}
	}
	return 0;
}

static int kw_draft7(struct jsc *c, struct jsnode *n, const json_t *j, int depth)
{
	const json_t *v;
	if ((v = kw_get(n, j, K_items))) {
		if (json_is_array(v)) {
			if (schema_list(c, n, v, "items", &n->prefix, &n->nprefix, depth, 1))
				return -1;
			if ((v = kw_get(n, j, K_additionalItems)) &&
			    one_schema(c, n, v, "additionalItems", &n->addl_items, depth))
				return -1;
		} else if (one_schema(c, n, v, "items", &n->items, depth)) {
			return -1;
		}
	}
	if ((v = kw_get(n, j, K_dependencies)) && kw_deps(c, n, v, "dependencies", 1, 1, depth))
		return -1;
	return 0;
}

static int kw_2020(struct jsc *c, struct jsnode *n, const json_t *j, int depth)
{
	const json_t *v;
	if ((v = kw_get(n, j, K_prefixItems)) &&
	    schema_list(c, n, v, "prefixItems", &n->prefix, &n->nprefix, depth, 0))
		return -1;
	if ((v = kw_get(n, j, K_items)) && one_schema(c, n, v, "items", &n->items, depth))
		return -1;
	if ((v = kw_get(n, j, K_dependentRequired)) &&
	    kw_deps(c, n, v, "dependentRequired", 1, 0, depth))
		return -1;
	if ((v = kw_get(n, j, K_dependentSchemas)) &&
	    kw_deps(c, n, v, "dependentSchemas", 0, 1, depth))
		return -1;
	if ((v = kw_get(n, j, K_unevaluatedProperties)) &&
	    one_schema(c, n, v, "unevaluatedProperties", &n->uneval_props, depth))
		return -1;
	if ((v = kw_get(n, j, K_unevaluatedItems)) &&
	    one_schema(c, n, v, "unevaluatedItems", &n->uneval_items, depth))
		return -1;
	if (n->uneval_props || n->uneval_items)
		n->has |= KW_NEEDS_EV;
	/* draft-07's dependencies, kept by 2020-12 implementations for
	 * compatibility (the suite's optional/dependencies-compatibility). */
	if ((v = kw_get(n, j, K_dependencies)) && kw_deps(c, n, v, "dependencies", 1, 1, depth))
		return -1;
	if ((v = kw_get(n, j, K_S_dynamicRef)) && queue_ref(c, n, v, "$dynamicRef", 1))
		return -1;
	return 0;
}

static struct jsnode *walk(struct jsc *c, const json_t *j, char *path, unsigned res, int depth)
{
	if (c->failed) {
		free(path);
		return NULL;
	}
	struct jsnode *n = new_node(c, j, path, res);
	if (n == NULL)
		return NULL;
	if (n->kind != JSN_SCHEMA)
		return n;
	if (!json_is_object(j)) {
		fail(c, JSCHEMA_INVALID, n->path, "", "a schema must be an object or a boolean");
		return NULL;
	}
	n->kwmask = kw_mask(j);
	if (depth > LIMIT_JSCHEMA_SCHEMA_DEPTH) {
		fail(c, JSCHEMA_LIMIT, n->path, "", "subschemas nested deeper than %d (LIMIT_JSCHEMA_SCHEMA_DEPTH)",
		     LIMIT_JSCHEMA_SCHEMA_DEPTH);
		return NULL;
	}
	if (identifiers(c, n, j, &res))
		return NULL;
	const json_t *ref = kw_get(n, j, K_S_ref);
	if (ref && queue_ref(c, n, ref, "$ref", 0))
		return NULL;
	/* draft-07: "All other properties in a "$ref" object MUST be ignored." */
	if (ref && c->s->dialect == JSCHEMA_DRAFT7)
		return n;
	if (kw_common(c, n, j, depth))
		return NULL;
	if ((c->s->dialect == JSCHEMA_DRAFT7 ? kw_draft7 : kw_2020)(c, n, j, depth))
		return NULL;
	if (n->nprefix || n->items || n->addl_items || n->contains || n->uneval_items)
		n->has |= KW_ARR_ANY;
	if (n->ndeps || n->uneval_props)
		n->has |= KW_OBJ_ANY;
	return n;
}

/* ---- references ---------------------------------------------------------------------- */

/* The value at RFC 6901 pointer ptr (already percent-decoded) in doc. */
static const json_t *pointer_get(const json_t *doc, const char *ptr)
{
	char tok[512];
	while (*ptr == '/' && doc) {
		size_t n = 0;
		for (ptr++; *ptr && *ptr != '/'; ptr++) {
			char ch = *ptr;
			if (ch == '~' && (ptr[1] == '0' || ptr[1] == '1'))
				ch = *++ptr == '0' ? '~' : '/';
			if (n + 1 >= sizeof tok)
				return NULL;
			tok[n++] = ch;
		}
		tok[n] = '\0';
		if (json_is_object(doc)) {
			doc = json_object_get(doc, tok);
		} else if (json_is_array(doc)) {
			char *end;
			if (n == 0 || (n > 1 && tok[0] == '0'))
				return NULL;
			unsigned long i = strtoul(tok, &end, 10);
			if (*end)
				return NULL;
			doc = json_array_get(doc, i);
		} else {
			return NULL;
		}
	}
	return *ptr ? NULL : doc;
}

static struct jsnode *node_of(const struct jschema *s, const json_t *j)
{
	for (size_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i]->src == j)
			return s->nodes[i];
	return NULL;
}

static int resolve(struct jsc *c, const struct pending *p)
{
	struct jschema *s = c->s;
	const char *kw = p->dynamic ? "$dynamicRef" : "$ref";
	char abs[JSCHEMA_URI_MAX];
	if (jschema_uri_resolve(s->res[p->node->resource].uri, p->ref, abs)) {
		fail(c, JSCHEMA_INVALID, p->node->path, kw, "%s too long", kw);
		return -1;
	}
	char *frag = jschema_uri_split_frag(abs);
	long r = find_res(s, abs);
	if (r < 0) {
		fail(c, JSCHEMA_REMOTE_REF, p->node->path, kw,
		     "%s \"%.100s\" is in another document (no remote fetch)", kw, p->ref);
		return -1;
	}
	struct jsres *res = &s->res[r];
	struct jsnode *t = res->root;
	if (frag)
		jschema_uri_percent_decode(frag);
	if (frag && frag[0] == '/') {
		const json_t *j = pointer_get(res->json, frag);
		if (j == NULL) {
			fail(c, JSCHEMA_INVALID, p->node->path, kw, "%s \"%.100s\" points to nothing", kw,
			     p->ref);
			return -1;
		}
		t = json_is_boolean(j) ? NULL : node_of(s, j);
		if (t == NULL) {
			char *path = malloc(strlen(res->root->path) + strlen(frag) + 1);
			if (path)
				strcat(strcpy(path, res->root->path), frag);
			t = walk(c, j, path, (unsigned)r, 0);
			if (t == NULL)
				return -1;
		}
	} else if (frag && frag[0]) {
		t = find_anchor(s, (unsigned)r, frag);
		if (t == NULL) {
			fail(c, JSCHEMA_INVALID, p->node->path, kw, "%s \"%.100s\": no such anchor", kw,
			     p->ref);
			return -1;
		}
	}
	if (!p->dynamic) {
		p->node->ref = t;
		return 0;
	}
	p->node->dynref = t;
	/* Dynamic only when the initial target bookends the anchor. */
	if (frag && frag[0] && frag[0] != '/' && t->dyn_anchor && strcmp(t->dyn_anchor, frag) == 0)
		for (size_t i = 0; i < s->nanchors; i++)
			if (s->anchors[i].node == t && s->anchors[i].dynamic)
				p->node->dynref_name = s->anchors[i].name;
	return 0;
}

/* ---- API ------------------------------------------------------------------------------- */

static int dialect_of(const json_t *schema, enum jschema_dialect *d)
{
	const json_t *v = json_is_object(schema) ? json_object_get(schema, "$schema") : NULL;
	if (v == NULL)
		return 0;
	if (!json_is_string(v))
		return -1;
	const char *u = json_string_value(v);
	if (strncmp(u, "https://", 8) == 0)
		u += 8;
	else if (strncmp(u, "http://", 7) == 0)
		u += 7;
	else
		return -1;
	if (strcmp(u, "json-schema.org/draft-07/schema#") == 0 ||
	    strcmp(u, "json-schema.org/draft-07/schema") == 0) {
		*d = JSCHEMA_DRAFT7;
		return 0;
	}
	if (strcmp(u, "json-schema.org/draft/2020-12/schema") == 0 ||
	    strcmp(u, "json-schema.org/draft/2020-12/schema#") == 0) {
		*d = JSCHEMA_2020_12;
		return 0;
	}
	return -1;
}

/* The base URI of a document without $id: never equal to a remote one. */
#define DEFAULT_BASE "urn:mcpwarden:jschema:root"

struct jschema *jschema_compile(const json_t *schema, enum jschema_dialect default_dialect,
                                unsigned flags, struct jschema_error *why)
{
	struct jsc c = {.why = why};
	if (why)
		memset(why, 0, sizeof *why);
	if (schema == NULL || !is_schema(schema)) {
		fail(&c, JSCHEMA_INVALID, "", "", "a schema must be an object or a boolean");
		return NULL;
	}
	struct jschema *s = calloc(1, sizeof *s);
	if (s == NULL) {
		oom(&c, "");
		return NULL;
	}
	c.s = s;
	s->doc = json_incref((json_t *)(uintptr_t)schema);
	s->flags = flags;
	s->dialect = default_dialect;
	if (dialect_of(schema, &s->dialect)) {
		const json_t *v = json_object_get(schema, "$schema");
		fail(&c, JSCHEMA_UNSUPPORTED, "", "$schema", "unsupported $schema \"%.100s\"",
		     json_is_string(v) ? json_string_value(v) : "(not a string)");
		goto fail;
	}
	if (add_res(&c, DEFAULT_BASE, NULL, schema) < 0) {
		oom(&c, "");
		goto fail;
	}
	s->root = walk(&c, schema, strdup(""), 0, 0);
	if (s->root == NULL)
		goto fail;
	s->res[0].root = s->root;
	for (size_t i = 0; i < c.nq; i++) {
		struct pending p = c.q[i]; /* resolve() may grow c.q */
		if (resolve(&c, &p))
			goto fail;
	}
	free(c.q);
	return s;
fail:
	free(c.q);
	jschema_free(s);
	return NULL;
}

enum jschema_dialect jschema_dialect_for_era(const char *v)
{
	/* Versions are dates, so they compare as strings. */
	if (v == NULL || strlen(v) != 10 || v[4] != '-' || v[7] != '-')
		return JSCHEMA_DRAFT7;
	for (size_t i = 0; i < 10; i++)
		if (i != 4 && i != 7 && (v[i] < '0' || v[i] > '9'))
			return JSCHEMA_DRAFT7;
	return strcmp(v, "2025-11-25") >= 0 ? JSCHEMA_2020_12 : JSCHEMA_DRAFT7;
}

enum jschema_dialect jschema_dialect_of(const struct jschema *s)
{
	return s->dialect;
}

const char *jschema_code_str(enum jschema_code code)
{
	switch (code) {
	case JSCHEMA_VIOLATION: return "violation";
	case JSCHEMA_LIMIT: return "limit";
	case JSCHEMA_INVALID: return "invalid-schema";
	case JSCHEMA_UNSUPPORTED: return "unsupported";
	case JSCHEMA_REMOTE_REF: return "remote-ref";
	}
	return "?";
}

static void node_free(struct jsnode *n)
{
	jsre_free(n->pattern);
	for (size_t i = 0; i < n->npats; i++)
		jsre_free(n->pats[i].re);
	free(n->pats);
	free(n->props);
	free(n->deps);
	free(n->prefix);
	free(n->all_of);
	free(n->any_of);
	free(n->one_of);
	free(n->path);
	free(n);
}

void jschema_free(struct jschema *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nnodes; i++)
		node_free(s->nodes[i]);
	free(s->nodes);
	for (size_t i = 0; i < s->nres; i++)
		free(s->res[i].uri);
	free(s->res);
	free(s->anchors);
	json_decref(s->doc);
	free(s);
}

/* jschema_validate.c: an instance against a compiled schema.
 *
 * One recursive walk over the nodes (jschema_int.h). vnode() returns 1
 * (valid), 0 (invalid) or -1 (a work limit: everything unwinds). A
 * violation is recorded where it is found unless the walk is "quiet":
 * inside anyOf/oneOf/not/if and contains, whose branches' failures are not
 * violations of their own, and in jschema_valid(); quiet walks stop at the
 * first failure.
 *
 * unevaluatedProperties/unevaluatedItems: a node that has one, or whose
 * caller asks, records which properties (by iteration position) or items
 * its keywords evaluated in a struct jsev; in-place applicators ($ref,
 * allOf, anyOf, oneOf, if/then/else, dependentSchemas) pass their node's
 * jsev down, and a subschema's record is merged up only when it is valid
 * (a failed subschema's annotations are dropped, as the spec says).
 * Nodes of schemas without those keywords never allocate.
 *
 * Why this file is long: one function per keyword group, each with its
 * error message, reads better than a table of callbacks (values and the
 * writing of findings are in jschema_value.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/jschema_int.h"

struct seg {
	const char *key; /* NULL: an array index */
	size_t idx;
};

struct frame {
	const struct jsnode *node;
	const json_t *inst;
};

struct jsv {
	const struct jschema *s;
	struct jschema_error *out;
	size_t n, nerr;
	int quiet;      /* > 0: do not record, stop at the first failure */
	int limit;      /* a limit was hit (recorded in out[0]) */
	size_t steps;
	unsigned depth;
	unsigned nseg;
	struct seg seg[LIMIT_JSCHEMA_EVAL_DEPTH];
	unsigned nref;
	struct frame ref[LIMIT_JSCHEMA_REF_DEPTH];
	unsigned nscope;
	unsigned scope[LIMIT_JSCHEMA_EVAL_DEPTH]; /* dynamic scope: resources */
};

/* Evaluated properties (by iteration position) or items of one instance. */
struct jsev {
	size_t n;
	unsigned char *bit;
	unsigned char small[32];
};

static int ev_init(struct jsev *ev, size_t n)
{
	ev->n = n;
	ev->bit = n <= sizeof ev->small ? ev->small : calloc(n, 1);
	if (ev->bit == ev->small)
		memset(ev->small, 0, sizeof ev->small);
	return ev->bit ? 0 : -1;
}

static void ev_fini(struct jsev *ev)
{
	if (ev->bit != ev->small)
		free(ev->bit);
}

static void ev_merge(struct jsev *dst, const struct jsev *src)
{
	size_t n = dst->n < src->n ? dst->n : src->n;
	for (size_t i = 0; i < n; i++)
		dst->bit[i] |= src->bit[i];
}

/* ---- findings ----------------------------------------------------------------------- */

static void render_instance(const struct jsv *v, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	for (unsigned i = 0; i < v->nseg; i++) {
		if (jschema_put_ptr(out, cap, &o, "/", 0))
			return;
		char num[24];
		const char *tok = v->seg[i].key;
		if (tok == NULL) {
			snprintf(num, sizeof num, "%zu", v->seg[i].idx);
			tok = num;
		}
		if (jschema_put_ptr(out, cap, &o, tok, 1))
			return;
	}
}

/* Records a violation of n's keyword kw (unless quiet). Returns 0, so a
 * check can "return violation(...)". */
static int violation(struct jsv *v, const struct jsnode *n, const char *kw, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int violation(struct jsv *v, const struct jsnode *n, const char *kw, const char *fmt, ...)
{
	if (v->quiet)
		return 0;
	if (v->nerr++ >= v->n || v->out == NULL)
		return 0;
	struct jschema_error *e = &v->out[v->nerr - 1];
	char msg[LIMIT_JSCHEMA_MSG_BYTES];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	jschema_set_error(e, JSCHEMA_VIOLATION, n->path, kw, "%s", msg);
	render_instance(v, e->instance_ptr, sizeof e->instance_ptr);
	return 0;
}

static int limit(struct jsv *v, const struct jsnode *n, const char *kw, const char *what)
{
	if (!v->limit) {
		v->limit = 1;
		if (v->out && v->n) {
			jschema_set_error(&v->out[0], JSCHEMA_LIMIT, n->path, kw, "%s", what);
			render_instance(v, v->out[0].instance_ptr, sizeof v->out[0].instance_ptr);
		}
	}
	return -1;
}

/* ---- the walk ---------------------------------------------------------------------------- */

static int vnode(struct jsv *v, const struct jsnode *n, const json_t *x, struct jsev *pev);

/* Fold one check's result r into *ok; nonzero when the caller must return
 * (limit, or a quiet walk that failed). */
#define FOLD(r, ok) ((r) < 0 ? ((ok) = -1, 1) : (r) == 0 ? ((ok) = 0, v->quiet) : 0)

static int vchild_key(struct jsv *v, const struct jsnode *n, const json_t *x, const char *key)
{
	v->seg[v->nseg++] = (struct seg){.key = key};
	int r = vnode(v, n, x, NULL);
	v->nseg--;
	return r;
}

static int vchild_idx(struct jsv *v, const struct jsnode *n, const json_t *x, size_t i)
{
	v->seg[v->nseg++] = (struct seg){.idx = i};
	int r = vnode(v, n, x, NULL);
	v->nseg--;
	return r;
}

static int vquiet(struct jsv *v, const struct jsnode *n, const json_t *x, struct jsev *ev)
{
	v->quiet++;
	int r = vnode(v, n, x, ev);
	v->quiet--;
	return r;
}

static int vnumber(struct jsv *v, const struct jsnode *n, const json_t *x)
{
	int ok = 1;
	double d = json_number_value(x);
	if ((n->has & KW_MULTIPLE)) {
		int mult;
		if (json_is_integer(x) && json_is_integer(n->multiple_of)) {
			json_int_t m = json_integer_value(n->multiple_of);
			mult = m == -1 || json_integer_value(x) % m == 0;
		} else {
			double m = json_number_value(n->multiple_of), q = d / m;
			if (!isfinite(q))
				mult = fmod(d, m) == 0;
			else
				mult = fabs(q - nearbyint(q)) <= 1e-9 * fmax(1.0, fabs(q));
		}
		if (!mult) {
			violation(v, n, "multipleOf", "%g is not a multiple of %g", d,
			          json_number_value(n->multiple_of));
			if (v->quiet)
				return 0;
			ok = 0;
		}
	}
	if ((n->has & KW_MAX) && jschema_num_cmp(x, n->maximum) > 0) {
		violation(v, n, "maximum", "%g is above the maximum %g", d, json_number_value(n->maximum));
		if (v->quiet)
			return 0;
		ok = 0;
	}
	if ((n->has & KW_EXMAX) && jschema_num_cmp(x, n->ex_maximum) >= 0) {
		violation(v, n, "exclusiveMaximum", "%g is not below %g", d,
		          json_number_value(n->ex_maximum));
		if (v->quiet)
			return 0;
		ok = 0;
	}
	if ((n->has & KW_MIN) && jschema_num_cmp(x, n->minimum) < 0) {
		violation(v, n, "minimum", "%g is below the minimum %g", d, json_number_value(n->minimum));
		if (v->quiet)
			return 0;
		ok = 0;
	}
	if ((n->has & KW_EXMIN) && jschema_num_cmp(x, n->ex_minimum) <= 0) {
		violation(v, n, "exclusiveMinimum", "%g is not above %g", d,
		          json_number_value(n->ex_minimum));
		ok = 0;
	}
	return ok;
}

static int vstring(struct jsv *v, const struct jsnode *n, const json_t *x)
{
	int ok = 1;
	const char *s = json_string_value(x);
	size_t len = json_string_length(x);
	if (n->has & (KW_MAXLEN | KW_MINLEN)) {
		size_t cps = jschema_utf8_len(s, len);
		if ((n->has & KW_MAXLEN) && cps > n->max_len) {
			violation(v, n, "maxLength", "string of %zu characters is longer than %zu", cps,
			          n->max_len);
			if (v->quiet)
				return 0;
			ok = 0;
		}
		if ((n->has & KW_MINLEN) && cps < n->min_len) {
			violation(v, n, "minLength", "string of %zu characters is shorter than %zu", cps,
			          n->min_len);
			if (v->quiet)
				return 0;
			ok = 0;
		}
	}
	if (n->pattern) {
		v->steps++;
		int m = jsre_search(n->pattern, s, len);
		if (m < 0)
			return limit(v, n, "pattern", "regex step limit hit");
		if (m == 0) {
			violation(v, n, "pattern", "string does not match the pattern %.80s",
			          json_string_value(json_object_get(n->src, "pattern")));
			if (v->quiet)
				return 0;
			ok = 0;
		}
	}
	if ((n->has & KW_FORMAT) && !jschema_format_ok(n->format, s, len)) {
		violation(v, n, "format", "string is not a valid %s", n->format_name);
		ok = 0;
	}
	return ok;
}

static const struct jsprop *find_prop(const struct jsnode *n, const char *key)
{
	size_t lo = 0, hi = n->nprops;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(key, n->props[mid].name);
		if (c == 0)
			return &n->props[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int vobject(struct jsv *v, const struct jsnode *n, const json_t *x, struct jsev *ev)
{
	int ok = 1, r;
	const char *key;
	const json_t *val;
	size_t i = 0, size = json_object_size(x);

	if ((n->has & KW_MAXPROPS) && size > n->max_props) {
		violation(v, n, "maxProperties", "%zu properties, more than %zu", size, n->max_props);
		if (v->quiet)
			return 0;
		ok = 0;
	}
	if ((n->has & KW_MINPROPS) && size < n->min_props) {
		violation(v, n, "minProperties", "%zu properties, fewer than %zu", size, n->min_props);
		if (v->quiet)
			return 0;
		ok = 0;
	}
	if (n->required) {
		size_t k;
		const json_t *name;
		json_array_foreach(n->required, k, name) {
			if (json_object_get(x, json_string_value(name)) == NULL) {
				violation(v, n, "required", "required property \"%.80s\" is missing",
				          json_string_value(name));
				if (v->quiet)
					return 0;
				ok = 0;
			}
		}
	}
	for (size_t d = 0; d < n->ndeps; d++) {
		const struct jsdep *dep = &n->deps[d];
		if (json_object_get(x, dep->key) == NULL)
			continue;
		const char *kw = dep->kw;
		if (dep->names) {
			size_t k;
			const json_t *name;
			json_array_foreach(dep->names, k, name) {
				if (json_object_get(x, json_string_value(name)) == NULL) {
					violation(v, n, kw, "property \"%.60s\" requires \"%.60s\"", dep->key,
					          json_string_value(name));
					if (v->quiet)
						return 0;
					ok = 0;
				}
			}
		} else {
			r = vnode(v, dep->node, x, ev);
			if (FOLD(r, ok))
				return ok;
		}
	}
	if (!(n->nprops || n->npats || n->addl_props || n->prop_names))
		return ok;
	json_object_foreach((json_t *)(uintptr_t)x, key, val) {
		int matched = 0;
		if (++v->steps > LIMIT_JSCHEMA_STEPS)
			return limit(v, n, "properties", "more than LIMIT_JSCHEMA_STEPS work units");
		if (n->nprops) {
			const struct jsprop *p = find_prop(n, key);
			if (p) {
				matched = 1;
				r = vchild_key(v, p->node, val, key);
				if (FOLD(r, ok))
					return ok;
			}
		}
		for (size_t k = 0; k < n->npats; k++) {
			int m = jsre_search(n->pats[k].re, key, strlen(key));
			v->steps++;
			if (m < 0)
				return limit(v, n, "patternProperties", "regex step limit hit");
			if (m) {
				matched = 1;
				r = vchild_key(v, n->pats[k].node, val, key);
				if (FOLD(r, ok))
					return ok;
			}
		}
		if (!matched && n->addl_props) {
			matched = 1;
			if (n->addl_props->kind == JSN_FALSE) {
				v->seg[v->nseg++] = (struct seg){.key = key};
				violation(v, n, "additionalProperties", "property \"%.80s\" is not allowed", key);
				v->nseg--;
				ok = 0;
				if (v->quiet)
					return 0;
			} else {
				r = vchild_key(v, n->addl_props, val, key);
				if (FOLD(r, ok))
					return ok;
			}
		}
		if (matched && ev && i < ev->n)
			ev->bit[i] = 1;
		if (n->prop_names && n->prop_names->kind != JSN_TRUE) {
			json_t *ks = json_string(key);
			if (ks == NULL)
				return limit(v, n, "propertyNames", "out of memory");
			r = vchild_key(v, n->prop_names, ks, key);
			json_decref(ks);
			if (FOLD(r, ok))
				return ok;
		}
		i++;
	}
	return ok;
}

static int cmp_hash(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* uniqueItems: sort (hash, index) pairs, compare within equal hashes. */
static int vunique(struct jsv *v, const struct jsnode *n, const json_t *x)
{
	size_t len = json_array_size(x);
	if (len < 2)
		return 1;
	v->steps += len;
	if (v->steps > LIMIT_JSCHEMA_STEPS)
		return limit(v, n, "uniqueItems", "more than LIMIT_JSCHEMA_STEPS work units");
	uint64_t(*h)[2] = malloc(len * sizeof *h);
	if (h == NULL)
		return limit(v, n, "uniqueItems", "out of memory");
	for (size_t i = 0; i < len; i++) {
		h[i][0] = jschema_json_hash(json_array_get(x, i));
		h[i][1] = i;
	}
	qsort(h, len, sizeof *h, cmp_hash);
	int ok = 1;
	size_t a = 0, b = 0;
	for (size_t i = 0; i < len && ok; i++)
		for (size_t j = i + 1; j < len && h[j][0] == h[i][0] && ok; j++) {
			if (++v->steps > LIMIT_JSCHEMA_STEPS) {
				free(h);
				return limit(v, n, "uniqueItems", "more than LIMIT_JSCHEMA_STEPS work units");
			}
			if (jschema_json_equal(json_array_get(x, h[i][1]), json_array_get(x, h[j][1]))) {
				ok = 0;
				a = h[i][1] < h[j][1] ? h[i][1] : h[j][1];
				b = h[i][1] < h[j][1] ? h[j][1] : h[i][1];
			}
		}
	free(h);
	if (!ok)
		violation(v, n, "uniqueItems", "items %zu and %zu are equal", a, b);
	return ok;
}

static int vcontains(struct jsv *v, const struct jsnode *n, const json_t *x, struct jsev *ev)
{
	size_t len = json_array_size(x), found = 0;
	size_t min = (n->has & KW_MINCONTAINS) ? n->min_contains : 1;
	size_t max = (n->has & KW_MAXCONTAINS) ? n->max_contains : (size_t)-1;
	for (size_t i = 0; i < len; i++) {
		v->seg[v->nseg++] = (struct seg){.idx = i};
		int r = vquiet(v, n->contains, json_array_get(x, i), NULL);
		v->nseg--;
		if (r < 0)
			return -1;
		if (r) {
			found++;
			if (ev && i < ev->n)
				ev->bit[i] = 1;
			/* Every match must be marked when annotations count. */
			if (!ev && found >= min && max == (size_t)-1)
				break;
		}
	}
	if (found < min) {
		if (min == 1 && !(n->has & KW_MINCONTAINS))
			return violation(v, n, "contains", "no item matches contains");
		return violation(v, n, "minContains", "%zu items match contains, fewer than %zu", found,
		                 min);
	}
	if (found > max)
		return violation(v, n, "maxContains", "%zu items match contains, more than %zu", found,
		                 max);
	return 1;
}

static int varray(struct jsv *v, const struct jsnode *n, const json_t *x, struct jsev *ev)
{
	int ok = 1, r;
	size_t len = json_array_size(x);
	if ((n->has & KW_MAXITEMS) && len > n->max_items) {
		violation(v, n, "maxItems", "%zu items, more than %zu", len, n->max_items);
		if (v->quiet)
			return 0;
		ok = 0;
	}
	if ((n->has & KW_MINITEMS) && len < n->min_items) {
		violation(v, n, "minItems", "%zu items, fewer than %zu", len, n->min_items);
		if (v->quiet)
			return 0;
		ok = 0;
	}
	if (n->has & KW_UNIQUE) {
		r = vunique(v, n, x);
		if (FOLD(r, ok))
			return ok;
	}
	const struct jsnode *rest = n->nprefix && v->s->dialect == JSCHEMA_DRAFT7 ? n->addl_items : n->items;
	const char *rest_kw = rest == n->items ? "items" : "additionalItems";
	for (size_t i = 0; i < len; i++) {
		const struct jsnode *s = i < n->nprefix ? n->prefix[i] : rest;
		if (s == NULL)
			break;
		if (++v->steps > LIMIT_JSCHEMA_STEPS)
			return limit(v, n, "items", "more than LIMIT_JSCHEMA_STEPS work units");
		if (ev && i < ev->n)
			ev->bit[i] = 1;
		if (s->kind == JSN_FALSE) {
			v->seg[v->nseg++] = (struct seg){.idx = i};
			violation(v, n, rest_kw, "item %zu is not allowed", i);
			v->nseg--;
			ok = 0;
			if (v->quiet)
				return 0;
			continue;
		}
		r = vchild_idx(v, s, json_array_get(x, i), i);
		if (FOLD(r, ok))
			return ok;
	}
	if (n->contains) {
		r = vcontains(v, n, x, ev);
		if (FOLD(r, ok))
			return ok;
	}
	return ok;
}

/* unevaluatedProperties / unevaluatedItems, after everything else. */
static int vuneval(struct jsv *v, const struct jsnode *n, const json_t *x, struct jsev *ev)
{
	int ok = 1, r;
	if (n->uneval_props && json_is_object(x)) {
		const char *key;
		const json_t *val;
		size_t i = 0;
		json_object_foreach((json_t *)(uintptr_t)x, key, val) {
			if (i < ev->n && !ev->bit[i]) {
				if (n->uneval_props->kind == JSN_FALSE) {
					v->seg[v->nseg++] = (struct seg){.key = key};
					violation(v, n, "unevaluatedProperties",
					          "property \"%.80s\" is not evaluated and not allowed", key);
					v->nseg--;
					r = 0;
				} else {
					r = vchild_key(v, n->uneval_props, val, key);
				}
				if (FOLD(r, ok))
					return ok;
				ev->bit[i] = 1;
			}
			i++;
		}
	}
	if (n->uneval_items && json_is_array(x)) {
		for (size_t i = 0; i < json_array_size(x) && i < ev->n; i++) {
			if (ev->bit[i])
				continue;
			if (n->uneval_items->kind == JSN_FALSE) {
				v->seg[v->nseg++] = (struct seg){.idx = i};
				violation(v, n, "unevaluatedItems", "item %zu is not evaluated and not allowed", i);
				v->nseg--;
				r = 0;
			} else {
				r = vchild_idx(v, n->uneval_items, json_array_get(x, i), i);
			}
			if (FOLD(r, ok))
				return ok;
			ev->bit[i] = 1;
		}
	}
	return ok;
}

static int vref(struct jsv *v, const struct jsnode *n, const struct jsnode *t, const char *kw,
                const json_t *x, struct jsev *ev)
{
	for (unsigned i = 0; i < v->nref; i++)
		if (v->ref[i].node == t && v->ref[i].inst == x)
			return limit(v, n, kw, "reference cycle: the same subschema again at the same instance location");
	if (v->nref >= LIMIT_JSCHEMA_REF_DEPTH)
		return limit(v, n, kw, "references nested deeper than LIMIT_JSCHEMA_REF_DEPTH");
	v->ref[v->nref++] = (struct frame){.node = t, .inst = x};
	int r = vnode(v, t, x, ev);
	v->nref--;
	return r;
}

/* $dynamicRef: the outermost resource of the dynamic scope with a
 * $dynamicAnchor of that name, else the static target. */
static const struct jsnode *dyn_target(struct jsv *v, const struct jsnode *n)
{
	if (n->dynref_name == NULL)
		return n->dynref;
	const struct jschema *s = v->s;
	/* The scan's cost, in steps: bounded like everything else. */
	v->steps += v->nscope * (1 + s->nanchors / 8);
	for (unsigned i = 0; i < v->nscope; i++)
		for (size_t k = 0; k < s->nanchors; k++)
			if (s->anchors[k].dynamic && s->anchors[k].resource == v->scope[i] &&
			    strcmp(s->anchors[k].name, n->dynref_name) == 0)
				return s->anchors[k].node;
	return n->dynref;
}

/* anyOf, oneOf (branches quiet, their annotations kept when valid). */
static int vbranches(struct jsv *v, const struct jsnode *n, struct jsnode *const *b, size_t nb,
                     int one, const json_t *x, struct jsev *ev)
{
	size_t valid = 0, first = 0;
	for (size_t i = 0; i < nb; i++) {
		struct jsev bev;
		if (ev && ev_init(&bev, ev->n))
			return limit(v, n, one ? "oneOf" : "anyOf", "out of memory");
		int r = vquiet(v, b[i], x, ev ? &bev : NULL);
		if (r > 0 && ev)
			ev_merge(ev, &bev);
		if (ev)
			ev_fini(&bev);
		if (r < 0)
			return -1;
		if (r > 0 && valid++ == 0)
			first = i;
		if (r > 0 && !one && !ev)
			break;
		if (one && valid > 1)
			return violation(v, n, "oneOf", "more than one oneOf branch matches (%zu and %zu)",
			                 first, i);
	}
	if (valid == 0)
		return violation(v, n, one ? "oneOf" : "anyOf", "no %s branch matches",
		                 one ? "oneOf" : "anyOf");
	return 1;
}

static int vapplicators(struct jsv *v, const struct jsnode *n, const json_t *x, struct jsev *ev)
{
	int ok = 1, r;
	for (size_t i = 0; i < n->nall_of; i++) {
		r = vnode(v, n->all_of[i], x, ev);
		if (FOLD(r, ok))
			return ok;
	}
	if (n->nany_of) {
		r = vbranches(v, n, n->any_of, n->nany_of, 0, x, ev);
		if (FOLD(r, ok))
			return ok;
	}
	if (n->none_of) {
		r = vbranches(v, n, n->one_of, n->none_of, 1, x, ev);
		if (FOLD(r, ok))
			return ok;
	}
	if (n->not_) {
		r = vquiet(v, n->not_, x, NULL);
		if (r < 0)
			return -1;
		if (r > 0) {
			violation(v, n, "not", "the instance matches the \"not\" schema");
			if (v->quiet)
				return 0;
			ok = 0;
		}
	}
	/* A lone "if" asserts nothing: evaluated only for its annotations. */
	if (n->if_ && (n->then_ || n->else_ || ev)) {
		r = vquiet(v, n->if_, x, ev);
		if (r < 0)
			return -1;
		const struct jsnode *next = r ? n->then_ : n->else_;
		if (next) {
			r = vnode(v, next, x, ev);
			if (FOLD(r, ok))
				return ok;
		}
	}
	return ok;
}

static int vkeywords(struct jsv *v, const struct jsnode *n, const json_t *x, struct jsev *ev)
{
	int ok = 1, r;
	if (n->ref) {
		r = vref(v, n, n->ref, "$ref", x, ev);
		if (FOLD(r, ok))
			return ok;
	}
	if (n->dynref) {
		r = vref(v, n, dyn_target(v, n), "$dynamicRef", x, ev);
		if (FOLD(r, ok))
			return ok;
	}
	if ((n->has & KW_TYPE) && !jschema_type_ok(n->types, x)) {
		char want[80] = "";
		static const char *const names[] = {"null",   "boolean", "object", "array",
		                                    "number", "string",  "integer"};
		for (unsigned b = 0; b < 7; b++)
			if (n->types & (1u << b))
				snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s",
				         want[0] ? " or " : "", names[b]);
		violation(v, n, "type", "%s where %s is expected", jschema_type_name(x), want);
		if (v->quiet)
			return 0;
		ok = 0;
	}
	if (n->has & KW_ENUM) {
		size_t i;
		const json_t *e;
		int found = 0;
		json_array_foreach(n->enum_, i, e) if ((found = jschema_json_equal(x, e))) break;
		if (!found) {
			violation(v, n, "enum", "value is not one of the %zu enum values",
			          json_array_size(n->enum_));
			if (v->quiet)
				return 0;
			ok = 0;
		}
	}
	if ((n->has & KW_CONST) && !jschema_json_equal(x, n->const_)) {
		violation(v, n, "const", "value is not the const value");
		if (v->quiet)
			return 0;
		ok = 0;
	}
	if ((n->has & KW_NUM_ANY) && json_is_number(x))
		r = vnumber(v, n, x);
	else if ((n->has & KW_STR_ANY) && json_is_string(x))
		r = vstring(v, n, x);
	else if ((n->has & KW_OBJ_ANY) && json_is_object(x))
		r = vobject(v, n, x, ev);
	else if ((n->has & KW_ARR_ANY) && json_is_array(x))
		r = varray(v, n, x, ev);
	else
		r = 1;
	if (FOLD(r, ok))
		return ok;
	if (n->nall_of || n->nany_of || n->none_of || n->not_ || n->if_) {
		r = vapplicators(v, n, x, ev);
		if (FOLD(r, ok))
			return ok;
	}
	if (n->uneval_props || n->uneval_items) {
		r = vuneval(v, n, x, ev);
		if (FOLD(r, ok))
			return ok;
	}
	return ok;
}

static int vnode(struct jsv *v, const struct jsnode *n, const json_t *x, struct jsev *pev)
{
	if (n->kind == JSN_TRUE)
		return 1;
	if (n->kind == JSN_FALSE)
	{
		size_t before = v->nerr;
		violation(v, n, "", "the schema false allows nothing");
		/* The pointer is the subschema itself; the keyword names it. */
		if (v->nerr > before && v->nerr <= v->n && v->out)
			v->out[v->nerr - 1].keyword = "false";
		return 0;
	}
	if (++v->steps > LIMIT_JSCHEMA_STEPS)
		return limit(v, n, "", "more than LIMIT_JSCHEMA_STEPS work units");
	if (v->depth >= LIMIT_JSCHEMA_EVAL_DEPTH - 1 || v->nseg >= LIMIT_JSCHEMA_EVAL_DEPTH - 1)
		return limit(v, n, "", "subschemas nested deeper than LIMIT_JSCHEMA_EVAL_DEPTH");
	v->depth++;
	int pushed = v->nscope == 0 || v->scope[v->nscope - 1] != n->resource;
	if (pushed)
		v->scope[v->nscope++] = n->resource;

	struct jsev ev, *evp = NULL;
	if ((pev || (n->has & KW_NEEDS_EV)) && (json_is_object(x) || json_is_array(x))) {
		size_t size = json_is_object(x) ? json_object_size(x) : json_array_size(x);
		if (ev_init(&ev, size)) {
			v->depth--;
			if (pushed)
				v->nscope--;
			return limit(v, n, "", "out of memory");
		}
		evp = &ev;
	}
	int r = vkeywords(v, n, x, evp);
	if (evp) {
		if (r > 0 && pev)
			ev_merge(pev, evp);
		ev_fini(evp);
	}
	if (pushed)
		v->nscope--;
	v->depth--;
	return r;
}

static int run(const struct jschema *s, const json_t *x, struct jschema_error *out, size_t n,
               int quiet)
{
	/* On the stack (about 12 KiB): no allocation for a plain validation. */
	if (s == NULL || x == NULL) {
		if (out && n)
			jschema_set_error(&out[0], JSCHEMA_LIMIT, "", "", "no schema or no instance");
		return -1;
	}
	struct jsv vs, *v = &vs;
	v->s = s;
	v->out = out;
	v->n = out ? n : 0;
	v->nerr = 0;
	v->quiet = quiet;
	v->limit = 0;
	v->steps = 0;
	v->depth = v->nseg = v->nref = v->nscope = 0;
	int r = vnode(v, s->root, x, NULL);
	size_t nerr = v->nerr;
	int lim = v->limit;
	if (lim || r < 0)
		return -1;
	if (quiet)
		return r;
	if (r == 0 && nerr == 0) {
		/* Invalid without a recorded violation cannot happen; say so
		 * rather than answer "valid". */
		if (out && n)
			jschema_set_error(&out[0], JSCHEMA_VIOLATION, "", "", "invalid");
		return 1;
	}
	return (int)(nerr > (size_t)INT32_MAX ? INT32_MAX : nerr);
}

int jschema_validate(const struct jschema *s, const json_t *instance, struct jschema_error *out,
                     size_t n)
{
	return run(s, instance, out, n, 0);
}

int jschema_valid(const struct jschema *s, const json_t *instance)
{
	return run(s, instance, NULL, 0, 1);
}

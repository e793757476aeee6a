/* drift.c: the baseline diff of two tool lists (see drift.h).
 *
 * Why this file is long (over 800 lines): the comparisons (half of it) read every schema through
 * the type bit sets and the anyOf/oneOf/$ref reader above them and fill one
 * struct ctx and report; a split would have to export those three in a
 * private header.
 *
 * Each list is indexed by tool name in a jansson object (name -> index),
 * then every tool of the new list is compared with its namesake member by
 * member. Types are compared as bit sets so that widening and narrowing
 * can be told apart: inputs break when they accept less, outputs when they
 * may produce more.
 *
 * Uses contract_resolve_ref() for local $ref, so it links with contract.c.
 *
 * Leaves out: reading files (the caller loads the JSON), the contract
 * itself (contract.c), comparisons deeper than a parameter's own schema and
 * its items (nested object properties, conditionals): those changes pass
 * unreported rather than risk false alarms.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* strdup, strcasecmp under -std=c11 */
#endif
#include "checks/drift.h"
#include "checks/contract.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/base/sbuf.h"

enum code {
	D_TOOL_REMOVED,
	D_PARAM_REMOVED,
	D_PARAM_NOW_REQUIRED,
	D_PARAM_TYPE_CHANGED,
	D_ENUM_VALUE_REMOVED,
	D_OUTPUT_PROPERTY_REMOVED,
	D_OUTPUT_TYPE_CHANGED,
	D_HINT_WEAKENED,
	D_TOOL_ADDED,
	D_PARAM_ADDED,
	D_ENUM_VALUE_ADDED,
	D_DESCRIPTION_CHANGED,
	D_ANNOTATIONS_CHANGED,
	D_COUNT
};

static const struct {
	const char *name;
	int breaking;
} codes[D_COUNT] = {
	[D_TOOL_REMOVED] = {"tool-removed", 1},
	[D_PARAM_REMOVED] = {"param-removed", 1},
	[D_PARAM_NOW_REQUIRED] = {"param-now-required", 1},
	[D_PARAM_TYPE_CHANGED] = {"param-type-changed", 1},
	[D_ENUM_VALUE_REMOVED] = {"enum-value-removed", 1},
	[D_OUTPUT_PROPERTY_REMOVED] = {"output-property-removed", 1},
	[D_OUTPUT_TYPE_CHANGED] = {"output-type-changed", 1},
	[D_HINT_WEAKENED] = {"hint-weakened", 1},
	[D_TOOL_ADDED] = {"tool-added", 0},
	[D_PARAM_ADDED] = {"param-added", 0},
	[D_ENUM_VALUE_ADDED] = {"enum-value-added", 0},
	[D_DESCRIPTION_CHANGED] = {"description-changed", 0},
	[D_ANNOTATIONS_CHANGED] = {"annotations-changed", 0},
};

const char *drift_code_kind(const char *code)
{
	for (size_t i = 0; code != NULL && i < D_COUNT; i++)
		if (strcmp(codes[i].name, code) == 0)
			return codes[i].breaking ? "breaking" : "notice";
	return NULL;
}

/* ---- helpers --------------------------------------------------------------- */

/* jansson's object iterator takes json_t * but never modifies the object;
 * uintptr_t keeps -Wcast-qual quiet at this one place. */
static json_t *mut(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

#define QMAX 64
#define QBUF (QMAX + 8)

/* ---- report ------------------------------------------------------------------ */

struct change {
	struct drift_change pub;
	char *tool, *pointer, *message;  /* owned */
};

struct drift_report {
	struct change *c;   /* owned */
	json_t *broken;     /* owned: name -> true for every tool with a
	                       breaking change, kept or dropped */
	size_t n, cap;
	size_t nbreaking;
	size_t dropped;     /* changes past DRIFT_MAX_CHANGES */
	int truncated;
	int oom;
};

void drift_report_free(struct drift_report *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->c[i].tool);
		free(r->c[i].pointer);
		free(r->c[i].message);
	}
	free(r->c);
	json_decref(r->broken);
	free(r);
}

/* What types_of() learnt about one schema node; see there. */
struct tnode {
	const json_t *root, *s; /* borrowed; s == NULL: free slot */
	unsigned char state;    /* TN_* */
	unsigned char set;      /* TN_DONE: the types, when room >= need */
	unsigned char need;     /* TN_DONE: levels below s the answer needs;
	                           TN_CUT: more than need - 1 levels */
};

/* Open addressing over (root, s), linear probing, at most half full. */
struct tmemo {
	struct tnode *t; /* owned */
	size_t n, cap;
};

/* State of one drift_diff call. */
struct ctx {
	struct drift_report *r;
	const char *tool;       /* borrowed: name of the tool compared */
	struct sbuf optr, nptr; /* "/tools/<i>" of the tool in each list, extended */
	struct tmemo memo;      /* types_of() answers, for the whole call */
};

static void add_change(struct ctx *x, enum code code, const struct sbuf *ptr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add_change(struct ctx *x, enum code code, const struct sbuf *ptr, const char *fmt, ...)
{
	struct drift_report *r = x->r;
	if (codes[code].breaking) {
		r->nbreaking++;
		/* Even when the change itself is dropped below: filter mode
		 * must still hide the tool. */
		if (json_object_set_new(r->broken, x->tool, json_true()) < 0)
			r->oom = 1;
	}
	if (r->n >= DRIFT_MAX_CHANGES) {
		r->dropped++;
		return;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct change *c = realloc(r->c, cap * sizeof *c);
		if (c == NULL) {
			r->oom = 1;
			return;
		}
		r->c = c;
		r->cap = cap;
	}
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct change *c = &r->c[r->n];
	c->tool = strdup(x->tool);
	c->pointer = strdup(ptr->p ? ptr->p : "");
	c->message = strdup(msg);
	if (c->tool == NULL || c->pointer == NULL || c->message == NULL) {
		free(c->tool);
		free(c->pointer);
		free(c->message);
		r->oom = 1;
		return;
	}
	c->pub.code = codes[code].name;
	c->pub.kind = codes[code].breaking ? "breaking" : "notice";
	c->pub.breaking = codes[code].breaking;
	c->pub.tool = c->tool;
	c->pub.pointer = c->pointer;
	c->pub.message = c->message;
	r->n++;
}

/* ---- types ------------------------------------------------------------------- */

enum {
	T_OBJECT = 1 << 0,
	T_ARRAY = 1 << 1,
	T_STRING = 1 << 2,
	T_NUMBER = 1 << 3,
	T_INTEGER = 1 << 4,
	T_BOOLEAN = 1 << 5,
	T_NULL = 1 << 6,
	T_ANY = 0x7F,
};

static const char *const type_names[] = {"object", "array", "string", "number",
                                         "integer", "boolean", "null"};

static unsigned type_bit(const json_t *v)
{
	for (unsigned i = 0; i < sizeof type_names / sizeof *type_names; i++)
		if (json_is_string(v) && strcmp(json_string_value(v), type_names[i]) == 0)
			return 1u << i;
	return 0;
}

static unsigned value_bit(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return T_OBJECT;
	case JSON_ARRAY: return T_ARRAY;
	case JSON_STRING: return T_STRING;
	case JSON_INTEGER: return T_INTEGER;
	case JSON_REAL: return T_NUMBER;
	case JSON_TRUE:
	case JSON_FALSE: return T_BOOLEAN;
	case JSON_NULL: return T_NULL;
	}
	return T_ANY;
}

/* The types a leaf schema s admits (s has "type", or none of anyOf, oneOf
 * and $ref to follow), before normalisation. */
static unsigned leaf_types(const json_t *s)
{
	unsigned set = 0;
	const json_t *t = json_object_get(s, "type");
	if (json_is_string(t)) {
		set = type_bit(t);
	} else if (json_is_array(t)) {
		for (size_t i = 0; i < json_array_size(t); i++)
			set |= type_bit(json_array_get(t, i));
	} else if (t == NULL) {
		const json_t *e = json_object_get(s, "enum");
		if (json_is_array(e)) {
			for (size_t i = 0; i < json_array_size(e) && i < DRIFT_MAX_ENUM; i++)
				set |= value_bit(json_array_get(e, i));
		} else if (json_object_get(s, "const") != NULL) {
			set = value_bit(json_object_get(s, "const"));
		}
	}
	return set;
}

/* "number" admits integers too; an unreadable schema admits anything. */
static unsigned normal_types(unsigned set)
{
	if (set == 0)
		return T_ANY;
	return set & T_NUMBER ? set | T_INTEGER : set;
}

/* ---- reading types through anyOf, oneOf and $ref ----------------------------
 *
 * The types of a schema are those of its "type", or the union over its
 * anyOf/oneOf members, or those of its local $ref target, followed at most
 * DRIFT_MAX_DEPTH levels down: deeper (a cycle, say) reads as T_ANY. Read
 * naively that walk is exponential in breadth: an anyOf of 64 $refs to
 * itself (1.7 KB) took 21 s. So every answer is remembered per node for the
 * whole drift_diff call, which makes the walk linear in the schemas.
 *
 * The answer for node s with `room` levels left below it is
 *   T_ANY          when the walk from s goes deeper than room (h(s) > room),
 *   types(s)       otherwise,
 * where h(s), the depth of the walk under s, and types(s), the union of
 * the leaves it reaches, do not depend on where s was reached from. So a
 * node learns, once: TN_DONE with types(s) and need = h(s) (need 0 when
 * types(s) is T_ANY anyway, which covers cycles: h is infinite there), or,
 * when the walk was cut at room, TN_CUT with need = room + 1 (h is at
 * least that; asked again with more room, the node is walked again, at most
 * DRIFT_MAX_DEPTH + 1 times in all). TN_GRAY marks the nodes being walked:
 * reaching one again is a cycle. Answers are the same as the plain
 * depth-bounded walk's, only computed once.
 */
enum { TN_GRAY = 1, TN_DONE, TN_CUT };

static size_t tmemo_slot(const struct tmemo *m, const json_t *root, const json_t *s)
{
	uint64_t h = (uint64_t)(uintptr_t)s * 0x9E3779B97F4A7C15u ^
	             (uint64_t)(uintptr_t)root * 0xC2B2AE3D27D4EB4Fu;
	size_t i = (size_t)(h ^ (h >> 29)) & (m->cap - 1);
	while (m->t[i].s != NULL && (m->t[i].s != s || m->t[i].root != root))
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* The slot of (root, s), added (state 0) when new; NULL when out of
 * memory. The pointer is valid until the next call. */
static struct tnode *tmemo_get(struct tmemo *m, const json_t *root, const json_t *s)
{
	if (m->cap > 0) {
		struct tnode *e = &m->t[tmemo_slot(m, root, s)];
		if (e->s != NULL)
			return e;
	}
	if (2 * (m->n + 1) > m->cap) {
		struct tmemo g = {calloc(m->cap ? 2 * m->cap : 64, sizeof *g.t), m->n,
		                  m->cap ? 2 * m->cap : 64};
		if (g.t == NULL)
			return NULL;
		for (size_t i = 0; i < m->cap; i++)
			if (m->t[i].s != NULL)
				g.t[tmemo_slot(&g, m->t[i].root, m->t[i].s)] = m->t[i];
		free(m->t);
		*m = g;
	}
	struct tnode *e = &m->t[tmemo_slot(m, root, s)];
	e->root = root;
	e->s = s;
	e->state = 0;
	m->n++;
	return e;
}

/* The answer for s (inside root) with `room` levels left below it, see
 * above. *cut: T_ANY only because room ran out. *need: h(s), when not
 * cut. Out of memory: T_ANY and x->r->oom. */
static unsigned walk_types(struct ctx *x, const json_t *root, const json_t *s, long room,
                           int *cut, unsigned *need)
{
	*cut = 0;
	*need = 0;
	if (room < 0) {
		*cut = 1;
		return T_ANY;
	}
	if (!json_is_object(s))
		return T_ANY;
	struct tnode *e = tmemo_get(&x->memo, root, s);
	if (e == NULL) {
		x->r->oom = 1;
		return T_ANY;
	}
	if (e->state == TN_GRAY)
		return T_ANY; /* a cycle: the walk never ends, whatever the room */
	if (e->state == TN_DONE || (e->state == TN_CUT && room < (long)e->need)) {
		if (room < (long)e->need) {
			*cut = 1;
			return T_ANY;
		}
		*need = e->need;
		return e->set;
	}

	/* The children the walk follows: anyOf/oneOf members, or the $ref
	 * target; a node with "type" or with neither is a leaf. */
	const json_t *kids = NULL, *target = NULL;
	size_t nkids = 0;
	int is_ref = 0;
	if (json_object_get(s, "type") == NULL) {
		kids = json_object_get(s, "anyOf");
		if (!json_is_array(kids))
			kids = json_object_get(s, "oneOf");
		nkids = json_is_array(kids) ? json_array_size(kids) : 0;
		if (nkids > DRIFT_MAX_PROPS)
			nkids = DRIFT_MAX_PROPS;
		const json_t *ref = json_object_get(s, "$ref");
		if (nkids == 0 && json_is_string(ref)) {
			target = contract_resolve_ref(root, json_string_value(ref));
			is_ref = 1;
			nkids = 1;
		}
	}
	unsigned set = 0, h = 0;
	if (nkids == 0) {
		set = normal_types(leaf_types(s));
	} else if (is_ref && target == NULL) {
		set = T_ANY; /* a $ref leading nowhere */
	} else {
		e->state = TN_GRAY;
		for (size_t i = 0; i < nkids; i++) {
			const json_t *k = is_ref ? target : json_array_get(kids, i);
			int kcut;
			unsigned kneed;
			unsigned kset = walk_types(x, root, k, room - 1, &kcut, &kneed);
			/* The table may have grown: find s's slot again. */
			e = tmemo_get(&x->memo, root, s);
			if (e == NULL) {
				x->r->oom = 1;
				return T_ANY;
			}
			if (kcut) {
				e->state = TN_CUT;
				e->need = (unsigned char)(room + 1);
				*cut = 1;
				return T_ANY;
			}
			if (kset == T_ANY) {
				set = T_ANY;
				h = 0; /* T_ANY at any room: no need to look further */
				break;
			}
			set |= kset;
			if (kneed + 1 > h)
				h = kneed + 1;
		}
		set = normal_types(set);
	}
	e->state = TN_DONE;
	e->set = (unsigned char)set;
	e->need = (unsigned char)(set == T_ANY ? 0 : h);
	*need = e->need;
	return set;
}

/* The types schema s (inside root) admits; T_ANY when it cannot be read.
 * "number" admits integers too, so it carries T_INTEGER. */
static unsigned types_of(struct ctx *x, const json_t *root, const json_t *s)
{
	int cut;
	unsigned need;
	return walk_types(x, root, s, DRIFT_MAX_DEPTH, &cut, &need);
}

static void types_str(char *buf, size_t size, unsigned set)
{
	buf[0] = '\0';
	if (set == T_ANY) {
		snprintf(buf, size, "any");
		return;
	}
	for (unsigned i = 0; i < sizeof type_names / sizeof *type_names; i++) {
		/* "number" implies "integer": do not print both */
		if (!(set & (1u << i)) || ((1u << i) == T_INTEGER && (set & T_NUMBER)))
			continue;
		size_t len = strlen(buf);
		snprintf(buf + len, size - len, "%s%s", len ? "|" : "", type_names[i]);
	}
}

/* ---- comparisons --------------------------------------------------------------- */

static const json_t *obj_member(const json_t *o, const char *key)
{
	return json_is_object(o) ? json_object_get(o, key) : NULL;
}

static int in_strings(const json_t *arr, const char *s)
{
	for (size_t i = 0; json_is_array(arr) && i < json_array_size(arr) && i < DRIFT_MAX_PROPS; i++) {
		const json_t *e = json_array_get(arr, i);
		if (json_is_string(e) && strcmp(json_string_value(e), s) == 0)
			return 1;
	}
	return 0;
}

static int in_values(const json_t *arr, const json_t *v)
{
	for (size_t i = 0; i < json_array_size(arr) && i < DRIFT_MAX_ENUM; i++)
		if (json_equal(json_array_get(arr, i), v))
			return 1;
	return 0;
}

static const char *value_str(char *buf, size_t size, const json_t *v)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	if (s == NULL)
		return "?";
	sbuf_quote(buf, size, s, QMAX);
	free(s);
	return buf;
}

/* Enum values of one schema level; ptr names that level in each list. */
static void diff_enum(struct ctx *x, const json_t *os, const json_t *ns, const char *what)
{
	const json_t *oe = obj_member(os, "enum");
	const json_t *ne = obj_member(ns, "enum");
	size_t ob = x->optr.len, nb = x->nptr.len;
	char v[QBUF];
	if (!json_is_array(ne))
		return; /* no enum now: it accepts more, nothing breaks */
	if (!json_is_array(oe)) {
		sbuf_puts(&x->nptr, "/enum");
		add_change(x, D_PARAM_TYPE_CHANGED, &x->nptr, "%s is now restricted to %zu enum values",
		           what, json_array_size(ne));
		sbuf_cut(&x->nptr, nb);
		return;
	}
	for (size_t i = 0; i < json_array_size(oe) && i < DRIFT_MAX_ENUM; i++) {
		const json_t *val = json_array_get(oe, i);
		if (in_values(ne, val))
			continue;
		sbuf_printf(&x->optr, "/enum/%zu", i);
		add_change(x, D_ENUM_VALUE_REMOVED, &x->optr, "%s no longer accepts %s", what,
		           value_str(v, sizeof v, val));
		sbuf_cut(&x->optr, ob);
	}
	for (size_t i = 0; i < json_array_size(ne) && i < DRIFT_MAX_ENUM; i++) {
		const json_t *val = json_array_get(ne, i);
		if (in_values(oe, val))
			continue;
		sbuf_printf(&x->nptr, "/enum/%zu", i);
		add_change(x, D_ENUM_VALUE_ADDED, &x->nptr, "%s now accepts %s", what,
		           value_str(v, sizeof v, val));
		sbuf_cut(&x->nptr, nb);
	}
}

/* One parameter present in both lists; pointers name its schema. */
static void diff_param(struct ctx *x, const json_t *oroot, const json_t *nroot, const json_t *op,
                       const json_t *np, const char *pname)
{
	size_t ob = x->optr.len, nb = x->nptr.len;
	char what[QBUF + 16], a[96], b[96];
	snprintf(what, sizeof what, "parameter \"%s\"", pname);

	unsigned ot = types_of(x, oroot, op), nt = types_of(x, nroot, np);
	if ((ot & nt) != ot) {
		types_str(a, sizeof a, ot);
		types_str(b, sizeof b, nt);
		if (obj_member(np, "type") != NULL)
			sbuf_puts(&x->nptr, "/type");
		add_change(x, D_PARAM_TYPE_CHANGED, &x->nptr, "%s type changed from %s to %s", what, a, b);
		sbuf_cut(&x->nptr, nb);
	}

	diff_enum(x, op, np, what);
	const json_t *oi = obj_member(op, "items"), *ni = obj_member(np, "items");
	if (json_is_object(oi) && json_is_object(ni)) {
		char items[QBUF + 32];
		snprintf(items, sizeof items, "items of %s", what);
		sbuf_puts(&x->optr, "/items");
		sbuf_puts(&x->nptr, "/items");
		diff_enum(x, oi, ni, items);
		sbuf_cut(&x->optr, ob);
		sbuf_cut(&x->nptr, nb);
	}

	const json_t *od = obj_member(op, "description"), *nd = obj_member(np, "description");
	if (!(od == NULL && nd == NULL) && !(od != NULL && nd != NULL && json_equal(od, nd))) {
		sbuf_puts(&x->nptr, "/description");
		add_change(x, D_DESCRIPTION_CHANGED, &x->nptr, "description of %s %s", what,
		           od == NULL ? "added" : nd == NULL ? "removed" : "changed");
		sbuf_cut(&x->nptr, nb);
	}
}

static void diff_input(struct ctx *x, const json_t *oin, const json_t *nin)
{
	const json_t *oprops = obj_member(oin, "properties");
	const json_t *nprops = obj_member(nin, "properties");
	const json_t *oreq = obj_member(oin, "required");
	const json_t *nreq = obj_member(nin, "required");
	size_t ob = x->optr.len, nb = x->nptr.len;
	char q[QBUF];
	size_t n;

	if (!json_is_object(oprops))
		oprops = NULL;
	if (!json_is_object(nprops))
		nprops = NULL;

	n = 0;
	for (void *it = oprops ? json_object_iter(mut(oprops)) : NULL; it && n < DRIFT_MAX_PROPS;
	     it = json_object_iter_next(mut(oprops), it), n++) {
		const char *key = json_object_iter_key(it);
		if (obj_member(nprops, key) != NULL)
			continue;
		sbuf_puts(&x->optr, "/inputSchema/properties");
		sbuf_token(&x->optr, key);
		add_change(x, D_PARAM_REMOVED, &x->optr, "parameter \"%s\" removed",
		           sbuf_quote(q, sizeof q, key, QMAX));
		sbuf_cut(&x->optr, ob);
	}

	for (size_t i = 0; json_is_array(nreq) && i < json_array_size(nreq) && i < DRIFT_MAX_PROPS; i++) {
		const json_t *e = json_array_get(nreq, i);
		if (!json_is_string(e) || in_strings(oreq, json_string_value(e)))
			continue;
		const char *name = json_string_value(e);
		sbuf_printf(&x->nptr, "/inputSchema/required/%zu", i);
		add_change(x, D_PARAM_NOW_REQUIRED, &x->nptr,
		           obj_member(oprops, name) != NULL ? "optional parameter \"%s\" is now required"
		                                            : "new required parameter \"%s\"",
		           sbuf_quote(q, sizeof q, name, QMAX));
		sbuf_cut(&x->nptr, nb);
	}

	n = 0;
	for (void *it = nprops ? json_object_iter(mut(nprops)) : NULL; it && n < DRIFT_MAX_PROPS;
	     it = json_object_iter_next(mut(nprops), it), n++) {
		const char *key = json_object_iter_key(it);
		const json_t *op = obj_member(oprops, key);
		sbuf_quote(q, sizeof q, key, QMAX);
		sbuf_puts(&x->nptr, "/inputSchema/properties");
		sbuf_token(&x->nptr, key);
		if (op == NULL) {
			if (!in_strings(nreq, key))
				add_change(x, D_PARAM_ADDED, &x->nptr, "optional parameter \"%s\" added", q);
		} else {
			sbuf_puts(&x->optr, "/inputSchema/properties");
			sbuf_token(&x->optr, key);
			diff_param(x, oin, nin, op, json_object_iter_value(it), q);
			sbuf_cut(&x->optr, ob);
		}
		sbuf_cut(&x->nptr, nb);
	}
}

static void diff_output(struct ctx *x, const json_t *oout, const json_t *nout)
{
	size_t ob = x->optr.len, nb = x->nptr.len;
	char q[QBUF], a[96], b[96];
	if (!json_is_object(oout))
		return; /* a new outputSchema only promises more */
	if (!json_is_object(nout)) {
		sbuf_puts(&x->optr, "/outputSchema");
		add_change(x, D_OUTPUT_TYPE_CHANGED, &x->optr, "outputSchema removed");
		sbuf_cut(&x->optr, ob);
		return;
	}
	unsigned ot = types_of(x, oout, oout), nt = types_of(x, nout, nout);
	if ((nt & ot) != nt) {
		types_str(a, sizeof a, ot);
		types_str(b, sizeof b, nt);
		sbuf_puts(&x->nptr, obj_member(nout, "type") ? "/outputSchema/type" : "/outputSchema");
		add_change(x, D_OUTPUT_TYPE_CHANGED, &x->nptr, "output type changed from %s to %s", a, b);
		sbuf_cut(&x->nptr, nb);
	}

	const json_t *oprops = obj_member(oout, "properties");
	const json_t *nprops = obj_member(nout, "properties");
	size_t n = 0;
	for (void *it = json_is_object(oprops) ? json_object_iter(mut(oprops)) : NULL;
	     it && n < DRIFT_MAX_PROPS; it = json_object_iter_next(mut(oprops), it), n++) {
		const char *key = json_object_iter_key(it);
		const json_t *np = obj_member(nprops, key);
		sbuf_quote(q, sizeof q, key, QMAX);
		if (np == NULL) {
			sbuf_puts(&x->optr, "/outputSchema/properties");
			sbuf_token(&x->optr, key);
			add_change(x, D_OUTPUT_PROPERTY_REMOVED, &x->optr, "output property \"%s\" removed", q);
			sbuf_cut(&x->optr, ob);
			continue;
		}
		ot = types_of(x, oout, json_object_iter_value(it));
		nt = types_of(x, nout, np);
		if ((nt & ot) != nt) {
			types_str(a, sizeof a, ot);
			types_str(b, sizeof b, nt);
			sbuf_puts(&x->nptr, "/outputSchema/properties");
			sbuf_token(&x->nptr, key);
			if (obj_member(np, "type") != NULL)
				sbuf_puts(&x->nptr, "/type");
			add_change(x, D_OUTPUT_TYPE_CHANGED, &x->nptr,
			           "output property \"%s\" type changed from %s to %s", q, a, b);
			sbuf_cut(&x->nptr, nb);
		}
	}

	/* A consumer may rely on a required output property being there. */
	const json_t *oreq = obj_member(oout, "required");
	const json_t *nreq = obj_member(nout, "required");
	for (size_t i = 0; json_is_array(oreq) && i < json_array_size(oreq) && i < DRIFT_MAX_PROPS; i++) {
		const json_t *e = json_array_get(oreq, i);
		if (!json_is_string(e) || in_strings(nreq, json_string_value(e)) ||
		    obj_member(nprops, json_string_value(e)) == NULL)
			continue; /* still required, or gone and reported above */
		sbuf_printf(&x->optr, "/outputSchema/required/%zu", i);
		add_change(x, D_OUTPUT_PROPERTY_REMOVED, &x->optr,
		           "output property \"%s\" is no longer required",
		           sbuf_quote(q, sizeof q, json_string_value(e), QMAX));
		sbuf_cut(&x->optr, ob);
	}
}

/* A hint's value, or the spec's default when absent or not boolean. */
static int hint(const json_t *ann, const char *key, int dflt)
{
	const json_t *v = obj_member(ann, key);
	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* annotations with every hint spelled out, so an explicit default equals
 * an absent one. New reference, NULL when out of memory. */
static json_t *normalized_annotations(const json_t *ann)
{
	static const struct {
		const char *key;
		int dflt;
	} hints[] = {{"readOnlyHint", 0}, {"destructiveHint", 1}, {"idempotentHint", 0},
	             {"openWorldHint", 1}};
	json_t *n = json_is_object(ann) ? json_deep_copy(ann) : json_object();
	for (size_t i = 0; n != NULL && i < sizeof hints / sizeof *hints; i++) {
		if (json_object_set_new(n, hints[i].key,
		                        json_boolean(hint(ann, hints[i].key, hints[i].dflt))) < 0) {
			json_decref(n);
			n = NULL;
		}
	}
	return n;
}

/* 0 read-only, 1 may write but not destroy, 2 may destroy. */
static int danger(const json_t *ann)
{
	if (hint(ann, "readOnlyHint", 0))
		return 0;
	return hint(ann, "destructiveHint", 1) ? 2 : 1;
}

static void diff_annotations(struct ctx *x, const json_t *oa, const json_t *na)
{
	size_t nb = x->nptr.len;
	int od = danger(oa), nd = danger(na);
	if (nd > od) {
		if (od == 0) {
			sbuf_puts(&x->nptr, "/annotations/readOnlyHint");
			add_change(x, D_HINT_WEAKENED, &x->nptr, "tool is no longer read-only%s",
			           nd == 2 ? " and may be destructive" : "");
		} else {
			sbuf_puts(&x->nptr, "/annotations/destructiveHint");
			add_change(x, D_HINT_WEAKENED, &x->nptr, "tool is now destructive");
		}
		sbuf_cut(&x->nptr, nb);
		return;
	}
	json_t *on = normalized_annotations(oa), *nn = normalized_annotations(na);
	if (on == NULL || nn == NULL) {
		x->r->oom = 1;
	} else if (!json_equal(on, nn)) {
		sbuf_puts(&x->nptr, "/annotations");
		add_change(x, D_ANNOTATIONS_CHANGED, &x->nptr, "annotations changed");
		sbuf_cut(&x->nptr, nb);
	}
	json_decref(on);
	json_decref(nn);
}

static void diff_tool(struct ctx *x, const json_t *ot, const json_t *nt)
{
	size_t nb = x->nptr.len;
	const json_t *od = json_object_get(ot, "description");
	const json_t *nd = json_object_get(nt, "description");
	if (!(od == NULL && nd == NULL) && !(od != NULL && nd != NULL && json_equal(od, nd))) {
		sbuf_puts(&x->nptr, "/description");
		add_change(x, D_DESCRIPTION_CHANGED, &x->nptr, "tool description %s",
		           od == NULL ? "added" : nd == NULL ? "removed" : "changed");
		sbuf_cut(&x->nptr, nb);
	}
	diff_annotations(x, json_object_get(ot, "annotations"), json_object_get(nt, "annotations"));
	diff_input(x, json_object_get(ot, "inputSchema"), json_object_get(nt, "inputSchema"));
	diff_output(x, json_object_get(ot, "outputSchema"), json_object_get(nt, "outputSchema"));
}

/* name -> index of the first object with a string name; NULL on OOM. */
static json_t *index_tools(const json_t *tools, int *truncated)
{
	json_t *idx = json_object();
	for (size_t i = 0; idx != NULL && i < json_array_size(tools); i++) {
		if (i >= DRIFT_MAX_TOOLS) {
			*truncated = 1;
			break;
		}
		const json_t *name = obj_member(json_array_get(tools, i), "name");
		if (!json_is_string(name) || json_object_get(idx, json_string_value(name)) != NULL)
			continue;
		if (json_object_set_new(idx, json_string_value(name), json_integer((json_int_t)i)) < 0) {
			json_decref(idx);
			idx = NULL;
		}
	}
	return idx;
}

const json_t *drift_tools_of(const json_t *doc)
{
	if (json_is_array(doc))
		return doc;
	const json_t *tools = obj_member(doc, "tools");
	if (json_is_array(tools))
		return tools;
	tools = obj_member(obj_member(doc, "result"), "tools");
	return json_is_array(tools) ? tools : NULL;
}

struct drift_report *drift_diff(const json_t *old_tools, const json_t *new_tools)
{
	if (!json_is_array(old_tools) || !json_is_array(new_tools))
		return NULL;
	struct drift_report *r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	struct ctx x = {.r = r};
	char q[QBUF];
	json_t *oidx = index_tools(old_tools, &r->truncated);
	json_t *nidx = index_tools(new_tools, &r->truncated);
	r->broken = json_object();
	if (oidx == NULL || nidx == NULL || r->broken == NULL)
		goto fail;

	for (void *it = json_object_iter(oidx); it && !r->oom; it = json_object_iter_next(oidx, it)) {
		const char *name = json_object_iter_key(it);
		if (json_object_get(nidx, name) != NULL)
			continue;
		x.tool = name;
		sbuf_cut(&x.optr, 0);
		sbuf_printf(&x.optr, "/tools/%lld", (long long)json_integer_value(json_object_iter_value(it)));
		add_change(&x, D_TOOL_REMOVED, &x.optr, "tool \"%s\" removed",
		           sbuf_quote(q, sizeof q, name, QMAX));
	}
	for (void *it = json_object_iter(nidx); it && !r->oom; it = json_object_iter_next(nidx, it)) {
		const char *name = json_object_iter_key(it);
		json_int_t ni = json_integer_value(json_object_iter_value(it));
		const json_t *oi = json_object_get(oidx, name);
		x.tool = name;
		sbuf_cut(&x.nptr, 0);
		sbuf_printf(&x.nptr, "/tools/%lld", (long long)ni);
		if (oi == NULL) {
			add_change(&x, D_TOOL_ADDED, &x.nptr, "tool \"%s\" added",
			           sbuf_quote(q, sizeof q, name, QMAX));
			continue;
		}
		sbuf_cut(&x.optr, 0);
		sbuf_printf(&x.optr, "/tools/%lld", (long long)json_integer_value(oi));
		diff_tool(&x, json_array_get(old_tools, (size_t)json_integer_value(oi)),
		          json_array_get(new_tools, (size_t)ni));
	}
	if (r->oom || x.optr.oom || x.nptr.oom)
		goto fail;
	json_decref(oidx);
	json_decref(nidx);
	free(x.optr.p);
	free(x.nptr.p);
	free(x.memo.t);
	return r;
fail:
	json_decref(oidx);
	json_decref(nidx);
	free(x.optr.p);
	free(x.nptr.p);
	free(x.memo.t);
	drift_report_free(r);
	return NULL;
}

/* ---- accessors and rendering ------------------------------------------------------ */

size_t drift_report_nchanges(const struct drift_report *r)
{
	return r->n;
}

size_t drift_report_nbreaking(const struct drift_report *r)
{
	return r->nbreaking;
}

int drift_report_truncated(const struct drift_report *r)
{
	return r->truncated;
}

const struct drift_change *drift_report_change(const struct drift_report *r, size_t i)
{
	return i < r->n ? &r->c[i].pub : NULL;
}

int drift_tool_broke(const struct drift_report *r, const char *name)
{
	/* A set built while diffing: drift_filter asks once per tool of a page
	 * that may hold 500,000 entries, and a scan of the changes each time
	 * took 8 s. */
	return name != NULL && json_object_get(r->broken, name) != NULL;
}

json_t *drift_report_json(const struct drift_report *r)
{
	json_t *changes = json_array();
	if (changes == NULL)
		return NULL;
	for (size_t i = 0; i < r->n; i++) {
		const struct drift_change *c = &r->c[i].pub;
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "code", c->code, "kind", c->kind, "tool",
		                      c->tool, "pointer", c->pointer, "message", c->message);
		if (o == NULL || json_array_append_new(changes, o) < 0) {
			json_decref(changes);
			return NULL;
		}
	}
	json_t *root = json_pack("{s:o,s:I}", "changes", changes, "breaking",
	                         (json_int_t)r->nbreaking);
	if (root != NULL && r->truncated &&
	    json_object_set_new(root, "truncated", json_true()) < 0) {
		json_decref(root);
		return NULL;
	}
	return root;
}

char *drift_report_text(const struct drift_report *r)
{
	struct sbuf b = {0};
	char q[QBUF], p[256];
	sbuf_printf(&b, "drift: %zu changes, %zu breaking\n", r->n + r->dropped, r->nbreaking);
	for (size_t i = 0; i < r->n; i++) {
		const struct drift_change *c = &r->c[i].pub;
		/* Piece by piece: sbuf_printf cuts at 512 bytes. */
		sbuf_printf(&b, "  %-8s %s tool \"%s\" at ", c->kind, c->code,
		          sbuf_quote(q, sizeof q, c->tool, QMAX));
		sbuf_puts(&b, sbuf_quote(p, sizeof p, c->pointer, sizeof p - 4));
		sbuf_puts(&b, ": ");
		sbuf_puts(&b, c->message);
		sbuf_puts(&b, "\n");
	}
	if (r->dropped)
		sbuf_printf(&b, "  (%zu more changes not kept)\n", r->dropped);
	if (r->truncated)
		sbuf_printf(&b, "  list cut: only the first %d tools of each list were compared\n",
		          DRIFT_MAX_TOOLS);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

json_t *drift_filter(const json_t *page, const struct drift_report *r)
{
	const json_t *tools = json_is_array(page) ? page : obj_member(page, "tools");
	if (!json_is_array(tools))
		return NULL;
	json_t *kept = json_array();
	for (size_t i = 0; kept != NULL && i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		const json_t *name = obj_member(t, "name");
		if (json_is_string(name) && drift_tool_broke(r, json_string_value(name)))
			continue;
		if (json_array_append_new(kept, json_deep_copy(t)) < 0) {
			json_decref(kept);
			kept = NULL;
		}
	}
	if (kept == NULL || json_is_array(page))
		return kept;
	json_t *out = json_object();
	for (void *it = json_object_iter(mut(page)); out != NULL && it;
	     it = json_object_iter_next(mut(page), it)) {
		const char *key = json_object_iter_key(it);
		json_t *v = strcmp(key, "tools") == 0 ? json_incref(kept)
		                                      : json_deep_copy(json_object_iter_value(it));
		if (json_object_set_new(out, key, v) < 0) {
			json_decref(out);
			out = NULL;
		}
	}
	json_decref(kept);
	return out;
}

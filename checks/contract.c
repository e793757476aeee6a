/* contract.c: the tool-definition contract checker (see contract.h).
 *
 * Why this file is long (over 800 lines): the checks, the memo and the rendering all read and write
 * struct contract_report's tool records and findings and the codes table;
 * the memo (about 450 lines, a cache for unchanged tools) is the part to
 * move out first, behind accessors to those records.
 *
 * One pass over the pages, in order. A report collects tool records (one
 * per examined tools[] entry, so the filter and the per-tool JSON can find
 * them by page and index) and findings (code, pointer, message). Pointers
 * are built in one growing buffer that each recursive step extends and cuts
 * back, so deep schemas cost no allocation per level.
 *
 * Schema validity is jschema's compile (checks/jschema.h): one walker of
 * every subschema, not a second one here; what this file adds is the
 * choice of dialect, setting aside what is reported already or cannot be
 * read (remote $refs), and the mapping of its codes (contract.h, SCHEMA
 * VALIDITY).
 *
 * Leaves out: validating arguments against schemas (hook_validate), the
 * baseline diff (drift.c), anything that needs the network ($ref to remote
 * documents is never followed, only "#..." inside the same schema).
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* strdup, strcasecmp under -std=c11 */
#endif
#include "checks/contract.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "checks/jschema.h"
#include "checks/profile.h" /* client profiles (issue 21) */
#include "proxy/base/sbuf.h"
#include "proxy/base/hash.h"

/* ---- codes ---------------------------------------------------------------- */

enum rule { R_SPEC, R_USABILITY, R_WARNING, R_CLIENT };

enum code {
	C_TOOL_NOT_OBJECT,
	C_NAME_MISSING,
	C_DESCRIPTION_MISSING,
	C_INPUT_SCHEMA_MISSING,
	C_INPUT_SCHEMA_INVALID,
	C_PROPERTIES_INVALID,
	C_REQUIRED_INVALID,
	C_REQUIRED_UNKNOWN,
	C_OUTPUT_SCHEMA_INVALID,
	C_OUTPUT_REQUIRED_UNKNOWN,
	C_SCHEMA_INVALID,
	C_SCHEMA_UNSUPPORTED,
	C_X_MCP_HEADER_INVALID,
	C_DUPLICATE_NAME,
	C_NO_TOOLS,
	C_RESULT_INVALID,
	C_CURSOR_LOOP,
	C_RESULT_TYPE_MISSING,
	C_CACHE_FIELDS_MISSING,
	C_NAME_FORMAT,
	C_DESCRIPTION_SHORT,
	C_PARAM_UNTYPED,
	C_PARAM_UNDESCRIBED,
	C_SCHEMA_UNCHECKED,
	C_COUNT,
	/* Client profiles (issue 21): C_COUNT + enum profile_code, named and
	 * ruled by checks/profile.h (code_name, code_rule). */
	C_PROFILE_LAST = C_COUNT + PROFILE_NCODES - 1
};
#define C_ALL (C_COUNT + PROFILE_NCODES)
_Static_assert(PROFILE_MAX_DEPTH == CONTRACT_MAX_DEPTH && PROFILE_MAX_NODES == CONTRACT_MAX_NODES,
               "profile walks are bounded like the contract's");

/* The rule column of contract.h's table; keep both in step. */
static const struct {
	const char *name;
	enum rule rule;
} codes[C_COUNT] = {
	[C_TOOL_NOT_OBJECT] = {"tool-not-object", R_SPEC},
	[C_NAME_MISSING] = {"name-missing", R_SPEC},
	[C_DESCRIPTION_MISSING] = {"description-missing", R_USABILITY},
	[C_INPUT_SCHEMA_MISSING] = {"input-schema-missing", R_SPEC},
	[C_INPUT_SCHEMA_INVALID] = {"input-schema-invalid", R_SPEC},
	[C_PROPERTIES_INVALID] = {"properties-invalid", R_SPEC},
	[C_REQUIRED_INVALID] = {"required-invalid", R_SPEC},
	[C_REQUIRED_UNKNOWN] = {"required-unknown", R_USABILITY},
	[C_OUTPUT_SCHEMA_INVALID] = {"output-schema-invalid", R_SPEC},
	[C_OUTPUT_REQUIRED_UNKNOWN] = {"output-required-unknown", R_USABILITY},
	[C_SCHEMA_INVALID] = {"schema-invalid", R_SPEC},
	[C_SCHEMA_UNSUPPORTED] = {"schema-unsupported", R_USABILITY},
	[C_X_MCP_HEADER_INVALID] = {"x-mcp-header-invalid", R_SPEC},
	[C_DUPLICATE_NAME] = {"duplicate-name", R_USABILITY},
	[C_NO_TOOLS] = {"no-tools", R_USABILITY},
	[C_RESULT_INVALID] = {"result-invalid", R_SPEC},
	[C_CURSOR_LOOP] = {"cursor-loop", R_SPEC},
	[C_RESULT_TYPE_MISSING] = {"result-type-missing", R_SPEC},
	[C_CACHE_FIELDS_MISSING] = {"cache-fields-missing", R_SPEC},
	[C_NAME_FORMAT] = {"name-format", R_WARNING},
	[C_DESCRIPTION_SHORT] = {"description-short", R_WARNING},
	[C_PARAM_UNTYPED] = {"param-untyped", R_WARNING},
	[C_PARAM_UNDESCRIBED] = {"param-undescribed", R_WARNING},
	[C_SCHEMA_UNCHECKED] = {"schema-unchecked", R_WARNING},
};

/* ---- client profiles: codes (issue 21) ---- */
static const char *code_name(enum code c)
{
	return c < C_COUNT ? codes[c].name : profile_code_name((enum profile_code)(c - C_COUNT));
}

/* A profile's problem is of its own kind, "client": spec_only keeps it
 * (the profile was asked for by name). */
static enum rule code_rule(enum code c)
{
	if (c < C_COUNT)
		return codes[c].rule;
	return profile_code_problem((enum profile_code)(c - C_COUNT)) ? R_CLIENT : R_WARNING;
}
/* ---- end client profiles ---- */

const char *contract_code_rule(const char *code)
{
	if (code == NULL)
		return NULL;
	for (int i = 0; i < C_ALL; i++) {
		if (strcmp(code_name((enum code)i), code) != 0)
			continue;
		switch (code_rule((enum code)i)) {
		case R_SPEC: return "spec";
		case R_USABILITY: return "usability";
		case R_WARNING: return "warning";
		case R_CLIENT: return "client";
		}
	}
	return NULL;
}

const char *contract_finding_rule(const struct contract_finding *f)
{
	return f->spec ? "spec" : f->client ? "client" : "usability";
}

/* ---- small helpers --------------------------------------------------------- */

/* jansson's object iterator takes json_t * but never modifies the object.
 * Going through uintptr_t keeps -Wcast-qual quiet at this one place. */
static json_t *mut(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

#define QMAX 64
#define QBUF (QMAX + 8)

static int is_blank(const char *s)
{
	for (; *s; s++)
		if (!strchr(" \t\r\n\f\v", *s))
			return 0;
	return 1;
}

/* Characters (UTF-8 code points) of s without surrounding ASCII blanks. */
static size_t trimmed_chars(const char *s)
{
	const char *e = s + strlen(s);
	while (*s && strchr(" \t\r\n\f\v", *s))
		s++;
	while (e > s && strchr(" \t\r\n\f\v", e[-1]))
		e--;
	size_t n = 0;
	for (; s < e; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

static int str_is(const json_t *v, const char *s)
{
	return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

static int is_nonblank_string(const json_t *v)
{
	return json_is_string(v) && !is_blank(json_string_value(v));
}

static int era_is_date(const char *era)
{
	if (era == NULL || strlen(era) != 10)
		return 0;
	for (int i = 0; i < 10; i++) {
		if (i == 4 || i == 7) {
			if (era[i] != '-')
				return 0;
		} else if (era[i] < '0' || era[i] > '9') {
			return 0;
		}
	}
	return 1;
}

/* A date-shaped era at or after the stateless era turns on its checks;
 * date strings compare correctly as strings. */
static int era_is_modern(const char *era)
{
	return era_is_date(era) && strcmp(era, "2026-07-28") >= 0;
}

/* The dialect a schema without "$schema" is read in (schema-invalid). */
enum dialect_rule {
	D_EITHER,  /* no era known: valid in draft-07 or in 2020-12 is valid
	              (guessing one would report the other's schemas) */
	D_DRAFT7,  /* eras up to 2025-06-18 */
	D_2020_12, /* 2025-11-25 and later */
};

static enum dialect_rule era_dialect(const char *era)
{
	if (!era_is_date(era))
		return D_EITHER;
	return jschema_dialect_for_era(era) == JSCHEMA_2020_12 ? D_2020_12 : D_DRAFT7;
}

/* ---- report ---------------------------------------------------------------- */

struct finding {
	struct contract_finding pub;
	char *message;   /* owned */
	char *pointer;   /* owned */
	long rec;        /* tool record, -1 for page-level findings */
};

struct memo_ent;

struct tool_rec {
	char *name;      /* owned (borrowed from the memo entry when ent is
	                    set), NULL when the tool has none */
	size_t page, index;
	size_t f_first, f_end;   /* its findings (duplicate-name included) are
	                            f[f_first..f_end) when nothing was dropped */
	struct memo_ent *ent;    /* borrowed: the memo entry that holds its
	                            result, valid while report->memo_gen is the
	                            memo's generation; NULL when none */
	int failed;      /* a tool-level problem */
	int dup_failed;  /* repeats a name while duplicate-name is a problem */
};

struct contract_report {
	struct finding *f;       /* owned */
	size_t nf, capf;
	size_t dropped;          /* findings past CONTRACT_MAX_FINDINGS */
	struct tool_rec *t;      /* owned */
	size_t nt, capt;
	size_t npages;           /* pages examined */
	size_t page_first[CONTRACT_MAX_PAGES];
	size_t page_count[CONTRACT_MAX_PAGES];
	size_t nproblems, nwarnings;
	int truncated;
	int spec_only;
	int oom;
	const struct contract_memo *memo;  /* borrowed: the memo it was checked
	                                      with, or NULL */
	unsigned long memo_gen;            /* that memo's generation then */
};

void contract_report_free(struct contract_report *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nf; i++) {
		free(r->f[i].message);
		free(r->f[i].pointer);
	}
	for (size_t i = 0; i < r->nt; i++)
		if (r->t[i].ent == NULL)
			free(r->t[i].name);
	free(r->f);
	free(r->t);
	free(r);
}

/* Adds one finding whose message is already written. */
static void add_finding_s(struct contract_report *r, enum code code, long rec, size_t page,
                          long tool_index, int list_level, const char *pointer,
                          const char *msg)
{
	enum rule rule = code_rule(code);
	int problem = rule == R_SPEC || rule == R_CLIENT || (rule == R_USABILITY && !r->spec_only);
	if (problem)
		r->nproblems++;
	else
		r->nwarnings++;
	if (problem && rec >= 0) {
		if (code == C_DUPLICATE_NAME)
			r->t[rec].dup_failed = 1;
		else if (!list_level)
			r->t[rec].failed = 1;
	}
	if (r->nf >= CONTRACT_MAX_FINDINGS) {
		r->dropped++;
		return;
	}
	if (r->nf == r->capf) {
		size_t cap = r->capf ? r->capf * 2 : 16;
		struct finding *f = realloc(r->f, cap * sizeof *f);
		if (f == NULL) {
			r->oom = 1;
			return;
		}
		r->f = f;
		r->capf = cap;
	}
	struct finding *f = &r->f[r->nf];
	memset(f, 0, sizeof *f);
	f->message = strdup(msg);
	f->pointer = strdup(pointer);
	if (f->message == NULL || f->pointer == NULL) {
		free(f->message);
		free(f->pointer);
		r->oom = 1;
		return;
	}
	f->rec = rec;
	f->pub.code = code_name(code);
	f->pub.tool = rec >= 0 ? r->t[rec].name : NULL;
	f->pub.message = f->message;
	f->pub.pointer = f->pointer;
	f->pub.page = page;
	f->pub.tool_index = tool_index;
	f->pub.list_level = list_level;
	f->pub.problem = problem;
	f->pub.spec = rule == R_SPEC;
	f->pub.client = code >= C_COUNT; /* client profiles (issue 21) */
	r->nf++;
}

static void add_finding(struct contract_report *r, enum code code, long rec, size_t page,
                        long tool_index, int list_level, const char *pointer,
                        const char *fmt, ...) __attribute__((format(printf, 8, 9)));
static void add_finding(struct contract_report *r, enum code code, long rec, size_t page,
                        long tool_index, int list_level, const char *pointer,
                        const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	add_finding_s(r, code, rec, page, tool_index, list_level, pointer, msg);
}

/* ---- checking ------------------------------------------------------------- */

/* Names seen so far (duplicate-name): open addressing over record
 * indices, at most half full. Cheaper than a jansson object, which
 * allocated a key and an integer per tool. */
struct nameset {
	long *slot;      /* owned: record index, -1 for a free slot */
	uint32_t *hash;  /* owned: the name's hash, per slot */
	size_t cap, n;
};

/* State of one contract_check call. */
struct ctx {
	struct contract_report *r;
	struct sbuf ptr;          /* pointer of the place being examined */
	struct nameset seen;      /* tool name -> record index */
	int modern;               /* era >= 2026-07-28 */
	unsigned profiles;        /* client profiles (issue 21): PROFILE_* bits */
	enum dialect_rule dialect;
	size_t nstruct;           /* structural problems of the schema being
	                             checked (check_schema), dropped or not */
	int dialect_used;         /* the current tool has a schema without a
	                             "$schema" string: its findings depend on
	                             c->dialect (the memo's rule) */
	/* current tool */
	long rec;
	size_t page, index;
	int lazy;                 /* ptr does not name the tool yet (tool_ptr) */
	size_t budget;            /* subschemas left to visit for this tool */
	const char *headers[CONTRACT_MAX_PROPS]; /* borrowed: valid x-mcp-header values */
	size_t nheaders;
};

/* Makes c->ptr name the current tool. The memo's path does only when a
 * finding needs it: most tools replayed have none. */
static void tool_ptr(struct ctx *c)
{
	if (c->lazy) {
		sbuf_puts(&c->ptr, "/tools");
		sbuf_index(&c->ptr, c->index);
		c->lazy = 0;
	}
}

static void tool_finding(struct ctx *c, enum code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void tool_finding(struct ctx *c, enum code code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (code == C_INPUT_SCHEMA_INVALID || code == C_PROPERTIES_INVALID ||
	    code == C_REQUIRED_INVALID || code == C_OUTPUT_SCHEMA_INVALID)
		c->nstruct++;
	add_finding_s(c->r, code, c->rec, c->page, (long)c->index, 0, sbuf_str(&c->ptr), msg);
}

const json_t *contract_resolve_ref(const json_t *root, const char *ref)
{
	if (ref[0] != '#')
		return NULL;
	if (ref[1] == '\0')
		return root;
	if (ref[1] != '/')
		return NULL;
	char *tok = malloc(strlen(ref));
	if (tok == NULL)
		return NULL;
	const json_t *cur = root;
	const char *s = ref + 1;
	while (cur != NULL && *s == '/') {
		size_t n = 0;
		for (s++; *s && *s != '/'; s++) {
			if (s[0] == '~' && s[1] == '1') {
				tok[n++] = '/';
				s++;
			} else if (s[0] == '~' && s[1] == '0') {
				tok[n++] = '~';
				s++;
			} else if (s[0] == '%' && s[1] && s[2] &&
			           strchr("0123456789abcdefABCDEF", s[1]) &&
			           strchr("0123456789abcdefABCDEF", s[2])) {
				char hex[3] = {s[1], s[2], '\0'};
				tok[n++] = (char)strtol(hex, NULL, 16);
				s += 2;
			} else {
				tok[n++] = *s;
			}
		}
		tok[n] = '\0';
		if (json_is_object(cur)) {
			cur = json_object_get(cur, tok);
		} else if (json_is_array(cur)) {
			char *end;
			unsigned long i = strtoul(tok, &end, 10);
			cur = (n > 0 && *end == '\0' && tok[0] >= '0' && tok[0] <= '9')
			          ? json_array_get(cur, i) : NULL;
		} else {
			cur = NULL;
		}
	}
	free(tok);
	return cur;
}

/* Spend one unit of the per-tool visit budget; 0 when the walk must stop. */
static int visit(struct ctx *c, size_t depth)
{
	if (depth > CONTRACT_MAX_DEPTH || c->budget == 0)
		return 0;
	c->budget--;
	return 1;
}

/* Reading a string again costs budget too: hashing a required name at
 * every subschema visited, resolving a $ref or scanning a blank
 * description each time a walk comes back to it, cost 1 s per MB of the
 * string (a 4 MB required name: 4 s) while visits stayed within budget.
 * One unit pays for BUDGET_BYTES bytes, about the work of one visit. A
 * name or a description read at the root of a walk is free: that happens
 * once per required name or property, linear in the input. */
#define BUDGET_BYTES 64

/* Pays for reading n more bytes; 0, with nothing spent, when the budget
 * cannot: the caller then answers as for an exhausted budget. */
static int spend(struct ctx *c, size_t n)
{
	size_t units = n / BUDGET_BYTES;
	if (units > c->budget)
		return 0;
	c->budget -= units;
	return 1;
}

/* The local $ref target of ref (a string) inside root, paid for. NULL
 * when it leads nowhere or the budget cannot pay: either way the walk
 * cannot read it. */
static const json_t *resolve_paid(struct ctx *c, const json_t *root, const json_t *ref)
{
	if (!spend(c, json_string_length(ref)))
		return NULL;
	return contract_resolve_ref(root, json_string_value(ref));
}

/* Does schema s (inside root) declare property `name` (nlen bytes)?
 * Unknown cases answer yes: required-unknown must never fire on a schema
 * we cannot read. */
static int declares(struct ctx *c, const json_t *root, const json_t *s, const char *name,
                    size_t nlen, size_t depth)
{
	static const char *const arrays[] = {"allOf", "anyOf", "oneOf"};
	static const char *const singles[] = {"then", "else"};
	if (!visit(c, depth))
		return 1;
	if (!json_is_object(s))
		return 0;
	const json_t *v = json_object_get(s, "properties");
	if (json_is_object(v)) {
		if (depth > 0 && !spend(c, nlen))
			return 1;
		if (json_object_getn(v, name, nlen) != NULL)
			return 1;
	}
	v = json_object_get(s, "patternProperties");
	if (json_is_object(v) && json_object_size(v) > 0)
		return 1; /* ECMA-262 patterns: not evaluated here */
	for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) {
		v = json_object_get(s, arrays[k]);
		for (size_t i = 0; json_is_array(v) && i < json_array_size(v) && i < CONTRACT_MAX_PROPS; i++)
			if (declares(c, root, json_array_get(v, i), name, nlen, depth + 1))
				return 1;
	}
	for (size_t k = 0; k < sizeof singles / sizeof *singles; k++) {
		v = json_object_get(s, singles[k]);
		if (v != NULL && declares(c, root, v, name, nlen, depth + 1))
			return 1;
	}
	v = json_object_get(s, "dependentSchemas");
	if (json_is_object(v)) {
		for (void *it = json_object_iter(mut(v)); it; it = json_object_iter_next(mut(v), it))
			if (declares(c, root, json_object_iter_value(it), name, nlen, depth + 1))
				return 1;
	}
	v = json_object_get(s, "$ref");
	if (json_is_string(v)) {
		const json_t *t = resolve_paid(c, root, v);
		return t == NULL || declares(c, root, t, name, nlen, depth + 1);
	}
	return 0;
}

/* Is property schema s described, here or where it points? */
static int described(struct ctx *c, const json_t *root, const json_t *s, size_t depth)
{
	static const char *const arrays[] = {"allOf", "anyOf", "oneOf"};
	if (!visit(c, depth))
		return 1;
	if (!json_is_object(s))
		return 0;
	const json_t *v = json_object_get(s, "description");
	if (json_is_string(v)) {
		const char *d = json_string_value(v);
		size_t blanks = strspn(d, " \t\r\n\f\v");
		if (d[blanks] != '\0')
			return 1;
		/* All blank: paid for after the scan, since its length is only
		 * known then; an overdraft ends the walk. */
		if (depth > 0 && !spend(c, blanks)) {
			c->budget = 0;
			return 1;
		}
	}
	v = json_object_get(s, "$ref");
	if (json_is_string(v)) {
		const json_t *t = resolve_paid(c, root, v);
		if (t == NULL || described(c, root, t, depth + 1))
			return 1;
	}
	for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) {
		v = json_object_get(s, arrays[k]);
		for (size_t i = 0; json_is_array(v) && i < json_array_size(v) && i < CONTRACT_MAX_PROPS; i++)
			if (described(c, root, json_array_get(v, i), depth + 1))
				return 1;
	}
	return 0;
}

static int typed(const json_t *s)
{
	static const char *const keys[] = {"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"};
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
		if (json_object_get(s, keys[k]) != NULL)
			return 1;
	return 0;
}

static int is_type_name(const json_t *v)
{
	static const char *const names[] = {"object", "array", "string", "number",
	                                    "integer", "boolean", "null"};
	for (size_t k = 0; k < sizeof names / sizeof *names; k++)
		if (str_is(v, names[k]))
			return 1;
	return 0;
}

/* ---- schema validity (jschema) ---------------------------------------------- */

/* Is schema pointer p (relative to the schema) a place the structural
 * checks of check_schema judge: the root, its type, its properties map or
 * one member of it, its required list? Those are reported once, by the
 * structural code. */
static int structural_place(const char *p)
{
	static const char *const under[] = {"/type", "/required"};
	if (p[0] == '\0' || strcmp(p, "/properties") == 0)
		return 1;
	if (strncmp(p, "/properties/", 12) == 0 && strchr(p + 12, '/') == NULL)
		return 1;
	for (size_t k = 0; k < sizeof under / sizeof *under; k++) {
		size_t n = strlen(under[k]);
		if (strncmp(p, under[k], n) == 0 && (p[n] == '\0' || p[n] == '/'))
			return 1;
	}
	return 0;
}

/* Points the $ref (or $dynamicRef) that pointer p names inside doc (a
 * copy we own) at "#", the document itself. 0, or -1 when p does not lead
 * there (a pointer jschema had to cut). */
static int localise_ref(json_t *doc, const char *p)
{
	char tok[LIMIT_JSCHEMA_PTR_BYTES];
	json_t *cur = doc, *parent = NULL;
	while (cur != NULL && *p == '/') {
		size_t n = 0;
		for (p++; *p && *p != '/'; p++) {
			if (p[0] == '~' && (p[1] == '0' || p[1] == '1'))
				tok[n++] = *++p == '0' ? '~' : '/';
			else
				tok[n++] = *p;
		}
		tok[n] = '\0';
		parent = cur;
		if (json_is_object(cur)) {
			cur = json_object_get(cur, tok);
		} else if (json_is_array(cur) && tok[0] >= '0' && tok[0] <= '9') {
			cur = json_array_get(cur, strtoul(tok, NULL, 10));
		} else {
			cur = NULL;
		}
	}
	if (!json_is_string(cur) || !json_is_object(parent) ||
	    (strcmp(tok, "$ref") != 0 && strcmp(tok, "$dynamicRef") != 0))
		return -1;
	return json_object_set_new(parent, tok, json_string("#"));
}

/* Takes out of doc (a copy we own) the root keyword or properties member
 * that schema pointer p names, when p is a structural place
 * (structural_place): reported already, it must not hide what lies
 * beyond. 0, or -1 when p is no such place. */
static int set_aside(json_t *doc, const char *p)
{
	char tok[LIMIT_JSCHEMA_PTR_BYTES];
	if (strncmp(p, "/properties/", 12) == 0) {
		size_t n = 0;
		for (p += 12; *p && *p != '/'; p++) {
			if (p[0] == '~' && (p[1] == '0' || p[1] == '1'))
				tok[n++] = *++p == '0' ? '~' : '/';
			else
				tok[n++] = *p;
		}
		tok[n] = '\0';
		return json_object_del(json_object_get(doc, "properties"), tok);
	}
	static const char *const keys[] = {"type", "required", "properties"};
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
		size_t n = strlen(keys[k]);
		if (p[0] == '/' && strncmp(p + 1, keys[k], n) == 0 && (p[1 + n] == '\0' || p[1 + n] == '/'))
			return json_object_del(doc, keys[k]);
	}
	return -1;
}

/* Compiles s in dialect d and drops the result (the contract keeps
 * nothing; hook_validate compiles its own). 1 when it compiles, 0 with
 * *why filled. A $ref into another document is valid JSON Schema we
 * cannot read (contract.h, "Composed schemas": no finding), but jschema
 * stops there; so it is pointed at "#" in a copy (*copy, owned by the
 * caller once made) and the rest of the schema compiled again, at most
 * CONTRACT_MAX_REMOTE_REFS times. */
static int compiles(const json_t *s, enum jschema_dialect d, int nstruct, json_t **copy,
                    struct jschema_error *why)
{
	for (int n = 0, nset = 0;; n++) {
		struct jschema *js = jschema_compile(*copy ? *copy : s, d, 0, why);
		jschema_free(js);
		if (js != NULL)
			return 1;
		int remote = why->code == JSCHEMA_REMOTE_REF && n < CONTRACT_MAX_REMOTE_REFS;
		/* At most one per structural finding: each takes one away. */
		int structural = nset < nstruct && structural_place(why->schema_ptr) &&
		                 why->schema_ptr[0] != '\0';
		if (!remote && !structural)
			return 0;
		if (*copy == NULL && (*copy = json_deep_copy(s)) == NULL) {
			why->code = JSCHEMA_LIMIT; /* read as out of memory below */
			why->schema_ptr[0] = '\0';
			snprintf(why->message, sizeof why->message, "out of memory");
			return 0;
		}
		if (structural) {
			nset++;
			if (set_aside(*copy, why->schema_ptr) < 0)
				return 0;
		} else if (localise_ref(*copy, why->schema_ptr) < 0) {
			return 0;
		}
	}
}

/* schema-invalid, schema-unsupported, schema-unchecked: s (an object,
 * c->ptr names it) compiled by checks/jschema.h in its dialect, which
 * walks every subschema and stops at the first bad keyword; the finding
 * points at that keyword. */
static void check_validity(struct ctx *c, const json_t *s, const char *what)
{
	static const char *const dname[] = {[D_EITHER] = "draft-07 or 2020-12",
	                                    [D_DRAFT7] = "draft-07", [D_2020_12] = "2020-12"};
	struct jschema_error why;
	json_t *copy = NULL;
	enum jschema_dialect d = c->dialect == D_2020_12 ? JSCHEMA_2020_12 : JSCHEMA_DRAFT7;
	if (!json_is_string(json_object_get(s, "$schema")))
		c->dialect_used = 1;
	int ok = compiles(s, d, (int)c->nstruct, &copy, &why);
	/* No era: a schema that is valid in the other dialect is valid. A
	 * "$schema" decides the dialect itself, so there is nothing to retry. */
	if (!ok && c->dialect == D_EITHER && json_object_get(s, "$schema") == NULL &&
	    why.code != JSCHEMA_LIMIT) {
		struct jschema_error why2;
		json_t *copy2 = NULL;
		ok = compiles(s, JSCHEMA_2020_12, (int)c->nstruct, &copy2, &why2);
		json_decref(copy2);
	}
	json_decref(copy);
	if (ok)
		return;
	if (why.code == JSCHEMA_LIMIT && strcmp(why.message, "out of memory") == 0) {
		c->r->oom = 1;
		return;
	}
	/* Already reported by the structural checks: one cause, one finding. */
	if (c->nstruct > 0 && structural_place(why.schema_ptr))
		return;

	enum code code = C_SCHEMA_UNCHECKED;
	const char *kind = "was not checked in full";
	const json_t *sch = json_object_get(s, "$schema");
	const char *dialect = json_is_string(sch) ? "its $schema" : dname[c->dialect];
	if (why.code == JSCHEMA_INVALID) {
		code = C_SCHEMA_INVALID;
		kind = "is not a valid JSON Schema";
	} else if (why.code == JSCHEMA_UNSUPPORTED && strcmp(why.keyword, "$schema") == 0) {
		/* Clients MUST support 2020-12 and may refuse anything else;
		 * a pattern our regex engine refuses (the other
		 * JSCHEMA_UNSUPPORTED) may be valid ECMA-262 beyond its subset:
		 * not the server's fault, so only schema-unchecked. */
		code = C_SCHEMA_UNSUPPORTED;
		kind = "names a dialect clients need not support";
	}
	/* A pointer jschema had to cut ("...") leads nowhere: point at the
	 * schema and quote the cut one in the message. */
	size_t plen = strlen(why.schema_ptr);
	int cut = plen + 8 > sizeof why.schema_ptr && plen >= 3 &&
	          strcmp(why.schema_ptr + plen - 3, "...") == 0;
	size_t base = c->ptr.len;
	char q[QBUF * 4];
	if (cut) {
		tool_finding(c, code, "%s %s (%s) at \"%s\": %s", what, kind, dialect,
		             sbuf_quote(q, sizeof q, why.schema_ptr, sizeof q - 8), why.message);
	} else {
		sbuf_puts(&c->ptr, why.schema_ptr);
		tool_finding(c, code, "%s %s (%s): %s", what, kind, dialect, why.message);
	}
	sbuf_cut(&c->ptr, base);
}

/* The checks inputSchema and outputSchema share. c->ptr names the schema.
 * For outputSchema every cause is output-schema-invalid. */
static void check_schema(struct ctx *c, const json_t *s, int input)
{
	enum code bad_schema = input ? C_INPUT_SCHEMA_INVALID : C_OUTPUT_SCHEMA_INVALID;
	enum code bad_props = input ? C_PROPERTIES_INVALID : C_OUTPUT_SCHEMA_INVALID;
	enum code bad_req = input ? C_REQUIRED_INVALID : C_OUTPUT_SCHEMA_INVALID;
	const char *what = input ? "inputSchema" : "outputSchema";
	size_t base = c->ptr.len;
	char q[QBUF];

	c->nstruct = 0;
	if (!json_is_object(s)) {
		tool_finding(c, bad_schema, "%s is not an object", what);
		return;
	}
	const json_t *type = json_object_get(s, "type");
	/* The stateless era lets outputSchema have any root; before it the
	 * schema pins "object" (contract.h, ERAS). */
	int any_root = !input && c->modern;
	if (type == NULL) {
		if (!any_root)
			tool_finding(c, bad_schema, "%s has no type (must be \"object\")", what);
	} else if (!str_is(type, "object")) {
		int ok = 0;
		if (any_root) {
			ok = is_type_name(type);
			for (size_t i = 0; json_is_array(type) && i < json_array_size(type); i++)
				ok = i == 0 ? is_type_name(json_array_get(type, i))
				            : ok && is_type_name(json_array_get(type, i));
		}
		if (!ok) {
			sbuf_puts(&c->ptr, "/type");
			if (json_is_string(type))
				tool_finding(c, bad_schema, "%s type is \"%s\", not \"object\"", what,
				             sbuf_quote(q, sizeof q, json_string_value(type), QMAX));
			else
				tool_finding(c, bad_schema, "%s type is not the string \"object\"", what);
			sbuf_cut(&c->ptr, base);
		}
	}

	const json_t *props = json_object_get(s, "properties");
	if (props != NULL) {
		sbuf_puts(&c->ptr, "/properties");
		if (!json_is_object(props)) {
			tool_finding(c, bad_props, "%s properties is not an object", what);
		} else {
			size_t n = 0;
			size_t pbase = c->ptr.len;
			for (void *it = json_object_iter(mut(props)); it && n < CONTRACT_MAX_PROPS;
			     it = json_object_iter_next(mut(props), it), n++) {
				const char *key = json_object_iter_key(it);
				const json_t *p = json_object_iter_value(it);
				sbuf_token(&c->ptr, key);
				/* The name is quoted only for a finding: most have none. */
				if (!json_is_object(p) && !json_is_boolean(p)) {
					tool_finding(c, bad_props, "%s property \"%s\" is not a schema", what,
					             sbuf_quote(q, sizeof q, key, QMAX));
				} else if (input && !json_is_false(p)) {
					/* A false schema forbids the parameter on purpose:
					 * nothing to type or describe. */
					if (!json_is_object(p) || !typed(p))
						tool_finding(c, C_PARAM_UNTYPED,
						             "parameter \"%s\" declares no type",
						             sbuf_quote(q, sizeof q, key, QMAX));
					if (!described(c, s, p, 0))
						tool_finding(c, C_PARAM_UNDESCRIBED,
						             "parameter \"%s\" has no description",
						             sbuf_quote(q, sizeof q, key, QMAX));
				}
				sbuf_cut(&c->ptr, pbase);
			}
		}
		sbuf_cut(&c->ptr, base);
	}

	const json_t *req = json_object_get(s, "required");
	if (req != NULL) {
		sbuf_puts(&c->ptr, "/required");
		if (!json_is_array(req)) {
			tool_finding(c, bad_req, "%s required is not an array", what);
		} else {
			size_t rbase = c->ptr.len;
			for (size_t i = 0; i < json_array_size(req) && i < CONTRACT_MAX_PROPS; i++) {
				const json_t *e = json_array_get(req, i);
				sbuf_index(&c->ptr, i);
				if (!json_is_string(e))
					tool_finding(c, bad_req, "%s required[%zu] is not a string", what, i);
				else if (!declares(c, s, s, json_string_value(e), json_string_length(e), 0))
					tool_finding(c, input ? C_REQUIRED_UNKNOWN : C_OUTPUT_REQUIRED_UNKNOWN,
					             input ? "required parameter \"%s\" is not in properties"
					                   : "required output property \"%s\" is not in properties",
					             sbuf_quote(q, sizeof q, json_string_value(e), QMAX));
				sbuf_cut(&c->ptr, rbase);
			}
		}
		sbuf_cut(&c->ptr, base);
	}
	check_validity(c, s, what);
}

/* ---- x-mcp-header (2026-07-28) ---------------------------------------------- */

static int is_token(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || (ch && strchr("!#$%&'*+-.^_`|~", ch))))
			return 0;
	}
	return 1;
}

/* Why a property schema cannot carry a header, or NULL when it can:
 * string, integer or boolean (optionally nullable), or an enum/const of
 * such values. */
static const char *not_primitive(const json_t *p)
{
	const json_t *t = json_object_get(p, "type");
	if (json_is_string(t)) {
		if (str_is(t, "string") || str_is(t, "integer") || str_is(t, "boolean"))
			return NULL;
		return str_is(t, "number") ? "a number parameter" : "a non-primitive parameter";
	}
	if (json_is_array(t)) {
		size_t prim = 0;
		for (size_t i = 0; i < json_array_size(t); i++) {
			const json_t *e = json_array_get(t, i);
			if (str_is(e, "string") || str_is(e, "integer") || str_is(e, "boolean"))
				prim++;
			else if (str_is(e, "number"))
				return "a number parameter";
			else if (!str_is(e, "null"))
				return "a non-primitive parameter";
		}
		return prim ? NULL : "a non-primitive parameter";
	}
	if (t != NULL)
		return "a non-primitive parameter";
	const json_t *vals = json_object_get(p, "enum");
	const json_t *cst = json_object_get(p, "const");
	size_t n = json_is_array(vals) ? json_array_size(vals) : 0;
	if (n == 0 && cst == NULL)
		return "a parameter without a primitive type";
	for (size_t i = 0; i <= n; i++) {
		const json_t *v = i < n ? json_array_get(vals, i) : cst;
		if (v == NULL)
			continue;
		if (json_is_real(v))
			return "a number parameter";
		if (!json_is_string(v) && !json_is_integer(v) && !json_is_boolean(v))
			return "a non-primitive parameter";
	}
	return NULL;
}

static void xh_check(struct ctx *c, const json_t *p, const json_t *h, int is_root, int on_chain)
{
	char q[QBUF];
	size_t base = c->ptr.len;
	sbuf_puts(&c->ptr, "/x-mcp-header");
	const char *why;
	if (!on_chain) {
		tool_finding(c, C_X_MCP_HEADER_INVALID,
		             is_root ? "x-mcp-header on the schema root, not on a parameter"
		                     : "x-mcp-header not reachable through properties alone");
	} else if (!json_is_string(h)) {
		tool_finding(c, C_X_MCP_HEADER_INVALID, "x-mcp-header is not a string");
	} else if (json_string_length(h) == 0) {
		tool_finding(c, C_X_MCP_HEADER_INVALID, "x-mcp-header is empty");
	} else if (!is_token(json_string_value(h), json_string_length(h))) {
		tool_finding(c, C_X_MCP_HEADER_INVALID, "x-mcp-header \"%s\" is not an HTTP token",
		             sbuf_quote(q, sizeof q, json_string_value(h), QMAX));
	} else if ((why = not_primitive(p)) != NULL) {
		tool_finding(c, C_X_MCP_HEADER_INVALID, "x-mcp-header \"%s\" on %s",
		             sbuf_quote(q, sizeof q, json_string_value(h), QMAX), why);
	} else {
		const char *name = json_string_value(h);
		size_t i;
		for (i = 0; i < c->nheaders; i++)
			if (strcasecmp(c->headers[i], name) == 0)
				break;
		if (i < c->nheaders)
			tool_finding(c, C_X_MCP_HEADER_INVALID,
			             "x-mcp-header \"%s\" repeats an earlier header ignoring case",
			             sbuf_quote(q, sizeof q, name, QMAX));
		else if (c->nheaders < CONTRACT_MAX_PROPS)
			c->headers[c->nheaders++] = name;
	}
	sbuf_cut(&c->ptr, base);
}

/* Walk every subschema of an inputSchema looking for x-mcp-header.
 * on_chain: s is a property reached from the root by properties alone. */
static void xh_walk(struct ctx *c, const json_t *s, int is_root, int on_chain, size_t depth)
{
	/* Keywords whose value is a map of subschemas, one subschema, or an
	 * array of subschemas. enum/const/default/examples hold data, never
	 * schemas, so an "x-mcp-header" member there is not an annotation. */
	static const char *const maps[] = {"patternProperties", "$defs", "definitions",
	                                   "dependentSchemas", "dependencies"};
	static const char *const singles[] = {"items", "additionalProperties", "additionalItems",
	                                      "unevaluatedProperties", "unevaluatedItems",
	                                      "contains", "propertyNames", "not", "if", "then",
	                                      "else", "contentSchema"};
	static const char *const arrays[] = {"allOf", "anyOf", "oneOf", "prefixItems", "items"};
	if (!json_is_object(s) || !visit(c, depth))
		return;
	size_t base = c->ptr.len;
	const json_t *h = json_object_get(s, "x-mcp-header");
	if (h != NULL)
		xh_check(c, s, h, is_root, on_chain);

	const json_t *v = json_object_get(s, "properties");
	if (json_is_object(v)) {
		size_t n = 0;
		for (void *it = json_object_iter(mut(v)); it && n < CONTRACT_MAX_PROPS;
		     it = json_object_iter_next(mut(v), it), n++) {
			sbuf_puts(&c->ptr, "/properties");
			sbuf_token(&c->ptr, json_object_iter_key(it));
			xh_walk(c, json_object_iter_value(it), 0, is_root || on_chain, depth + 1);
			sbuf_cut(&c->ptr, base);
		}
	}
	for (size_t k = 0; k < sizeof maps / sizeof *maps; k++) {
		v = json_object_get(s, maps[k]);
		if (!json_is_object(v))
			continue;
		size_t n = 0;
		for (void *it = json_object_iter(mut(v)); it && n < CONTRACT_MAX_PROPS;
		     it = json_object_iter_next(mut(v), it), n++) {
			sbuf_token(&c->ptr, maps[k]);
			sbuf_token(&c->ptr, json_object_iter_key(it));
			xh_walk(c, json_object_iter_value(it), 0, 0, depth + 1);
			sbuf_cut(&c->ptr, base);
		}
	}
	for (size_t k = 0; k < sizeof singles / sizeof *singles; k++) {
		v = json_object_get(s, singles[k]);
		if (!json_is_object(v))
			continue;
		sbuf_token(&c->ptr, singles[k]);
		xh_walk(c, v, 0, 0, depth + 1);
		sbuf_cut(&c->ptr, base);
	}
	for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) {
		v = json_object_get(s, arrays[k]);
		for (size_t i = 0; json_is_array(v) && i < json_array_size(v) && i < CONTRACT_MAX_PROPS; i++) {
			sbuf_token(&c->ptr, arrays[k]);
			sbuf_index(&c->ptr, i);
			xh_walk(c, json_array_get(v, i), 0, 0, depth + 1);
			sbuf_cut(&c->ptr, base);
		}
	}
}

/* ---- tools and pages ---------------------------------------------------------- */

static int name_format_ok(const json_t *name)
{
	const char *s = json_string_value(name);
	size_t n = json_string_length(name);
	if (n < 1 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return 0;
	}
	return 1;
}

static int new_rec(struct ctx *c)
{
	struct contract_report *r = c->r;
	if (r->nt == r->capt) {
		size_t cap = r->capt ? r->capt * 2 : 16;
		struct tool_rec *t = realloc(r->t, cap * sizeof *t);
		if (t == NULL)
			return -1;
		r->t = t;
		r->capt = cap;
	}
	memset(&r->t[r->nt], 0, sizeof r->t[r->nt]);
	r->t[r->nt].page = c->page;
	r->t[r->nt].index = c->index;
	r->t[r->nt].f_first = r->nf;
	c->rec = (long)r->nt++;
	return 0;
}

/* The record of the first tool named name (nlen bytes), or -1; adds rec
 * under that name when there is none. -2 when out of memory. */
static long nameset_put(struct ctx *c, const char *name, size_t nlen, long rec)
{
	struct nameset *ns = &c->seen;
	if (2 * (ns->n + 1) > ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 64;
		long *slot = malloc(cap * sizeof *slot);
		uint32_t *hash = malloc(cap * sizeof *hash);
		if (slot == NULL || hash == NULL) {
			free(slot);
			free(hash);
			return -2;
		}
		for (size_t i = 0; i < cap; i++)
			slot[i] = -1;
		for (size_t i = 0; i < ns->cap; i++) {
			if (ns->slot[i] < 0)
				continue;
			size_t j = ns->hash[i] & (cap - 1);
			while (slot[j] >= 0)
				j = (j + 1) & (cap - 1);
			slot[j] = ns->slot[i];
			hash[j] = ns->hash[i];
		}
		free(ns->slot);
		free(ns->hash);
		ns->slot = slot;
		ns->hash = hash;
		ns->cap = cap;
	}
	uint32_t h = (uint32_t)hash_fnv1a64_words(name, nlen);
	size_t i = h & (ns->cap - 1);
	for (; ns->slot[i] >= 0; i = (i + 1) & (ns->cap - 1))
		if (ns->hash[i] == h && strcmp(c->r->t[ns->slot[i]].name, name) == 0)
			return ns->slot[i];
	ns->slot[i] = rec;
	ns->hash[i] = h;
	ns->n++;
	return -1;
}

/* The first part of a tool's checks, up to its name: everything before
 * duplicate-name. c->ptr names the tool. Returns 0 when the tool is not
 * an object (nothing more to check) or memory ran out, else 1. */
static int check_tool_head(struct ctx *c, const json_t *tool)
{
	struct contract_report *r = c->r;
	size_t base = c->ptr.len;
	char q[QBUF];

	if (!json_is_object(tool)) {
		tool_finding(c, C_TOOL_NOT_OBJECT, "tools[%zu] is not an object", c->index);
		return 0;
	}
	const json_t *name = json_object_get(tool, "name");
	if (json_is_string(name) && json_string_length(name) > 0) {
		struct tool_rec *t = &r->t[c->rec];
		t->name = strdup(json_string_value(name));
		if (t->name == NULL) {
			r->oom = 1;
			return 0;
		}
	}
	sbuf_puts(&c->ptr, "/name");
	if (r->t[c->rec].name == NULL) {
		tool_finding(c, C_NAME_MISSING, "tools[%zu] has no name (absent, not a string, or empty)",
		             c->index);
	} else if (!name_format_ok(name)) {
		tool_finding(c, C_NAME_FORMAT,
		             "name \"%s\" is not 1-128 characters of letters, digits, _ - .",
		             sbuf_quote(q, sizeof q, r->t[c->rec].name, QMAX));
	}
	sbuf_cut(&c->ptr, base);
	return 1;
}

/* duplicate-name for the current record, whose name is known. */
static void check_dup(struct ctx *c)
{
	struct contract_report *r = c->r;
	const char *n = r->t[c->rec].name;
	if (n == NULL)
		return;
	long first = nameset_put(c, n, strlen(n), c->rec);
	if (first == -2) {
		r->oom = 1;
	} else if (first >= 0) {
		tool_ptr(c);
		size_t base = c->ptr.len;
		char q[QBUF];
		const struct tool_rec *f = &r->t[first];
		sbuf_puts(&c->ptr, "/name");
		add_finding(r, C_DUPLICATE_NAME, c->rec, c->page, (long)c->index, 1,
		            sbuf_str(&c->ptr), "name \"%s\" already used by tools[%zu] of page %zu",
		            sbuf_quote(q, sizeof q, n, QMAX), f->index, f->page);
		sbuf_cut(&c->ptr, base);
	}
}

/* ---- client profiles: findings into the report (issue 21) ---- */
/* A profile finding at c->ptr + suffix: the current tool's, or the
 * page's (list level) when page is 1. */
static void profile_add(struct ctx *c, int page, enum profile_code code, const char *suffix,
                        const char *msg)
{
	size_t base = c->ptr.len;
	sbuf_puts(&c->ptr, suffix);
	add_finding_s(c->r, (enum code)(C_COUNT + code), page ? -1 : c->rec, c->page,
	              page ? -1 : (long)c->index, page, sbuf_str(&c->ptr), msg);
	sbuf_cut(&c->ptr, base);
}

static void profile_tool_emit(void *arg, enum profile_code code, const char *suffix,
                              const char *msg)
{
	profile_add(arg, 0, code, suffix, msg);
}

static void profile_page_emit(void *arg, enum profile_code code, const char *suffix,
                              const char *msg)
{
	profile_add(arg, 1, code, suffix, msg);
}
/* ---- end client profiles ---- */

/* The rest of an object tool's checks, after duplicate-name. */
static void check_tool_body(struct ctx *c, const json_t *tool)
{
	size_t base = c->ptr.len;

	const json_t *desc = json_object_get(tool, "description");
	sbuf_puts(&c->ptr, "/description");
	if (!is_nonblank_string(desc))
		tool_finding(c, C_DESCRIPTION_MISSING, "description is absent, not a string, or blank");
	else if (trimmed_chars(json_string_value(desc)) < 12)
		tool_finding(c, C_DESCRIPTION_SHORT, "description is under 12 characters");
	sbuf_cut(&c->ptr, base);

	const json_t *in = json_object_get(tool, "inputSchema");
	sbuf_puts(&c->ptr, "/inputSchema");
	if (in == NULL)
		tool_finding(c, C_INPUT_SCHEMA_MISSING, "inputSchema is absent");
	else
		check_schema(c, in, 1);
	if (c->modern && json_is_object(in)) {
		/* A fresh budget: the checks above must not hide annotations. */
		c->budget = CONTRACT_MAX_NODES;
		xh_walk(c, in, 1, 0, 0);
	}
	sbuf_cut(&c->ptr, base);

	const json_t *out = json_object_get(tool, "outputSchema");
	if (out != NULL) {
		sbuf_puts(&c->ptr, "/outputSchema");
		check_schema(c, out, 0);
		sbuf_cut(&c->ptr, base);
	}
	/* client profiles (issue 21): last, so a tool's own findings keep
	 * their order; the memo keeps these like the others. */
	if (c->profiles)
		profile_check_tool(c->profiles, tool, profile_tool_emit, c);
}

/* c->ptr names the tool ("/tools/3" or "/1/tools/3"); the record is made.
 * *split: findings of the tool before duplicate-name (for the memo). */
static void check_tool(struct ctx *c, const json_t *tool, size_t *split)
{
	c->budget = CONTRACT_MAX_NODES;
	c->nheaders = 0;
	c->dialect_used = 0;
	int more = check_tool_head(c, tool);
	*split = c->r->nf;
	if (!more)
		return;
	check_dup(c);
	check_tool_body(c, tool);
}

/* Page-level findings: c->ptr is the page prefix ("" or "/1"). */
static void page_finding(struct ctx *c, enum code code, const char *member, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void page_finding(struct ctx *c, enum code code, const char *member, const char *fmt, ...)
{
	char msg[512];
	size_t base = c->ptr.len;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (member != NULL)
		sbuf_token(&c->ptr, member);
	add_finding_s(c->r, code, -1, c->page, -1, 1, sbuf_str(&c->ptr), msg);
	sbuf_cut(&c->ptr, base);
}

static int ttl_ok(const json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v) >= 0;
	/* JSON Schema's integer is mathematical: 1000.0 is one. */
	if (json_is_real(v)) {
		double d = json_real_value(v);
		return d >= 0 && d < 9.2e18 && (double)(long long)d == d;
	}
	return 0;
}

static void check_era(struct ctx *c, const json_t *result)
{
	const json_t *rt = json_object_get(result, "resultType");
	if (!str_is(rt, "complete"))
		page_finding(c, C_RESULT_TYPE_MISSING, "resultType",
		             rt == NULL ? "resultType is absent (required from 2026-07-28)"
		                        : "resultType is not \"complete\"");
	const json_t *ttl = json_object_get(result, "ttlMs");
	if (!ttl_ok(ttl))
		page_finding(c, C_CACHE_FIELDS_MISSING, "ttlMs",
		             ttl == NULL ? "ttlMs is absent (required from 2026-07-28)"
		                         : "ttlMs is not a non-negative integer");
	const json_t *cs = json_object_get(result, "cacheScope");
	if (!str_is(cs, "public") && !str_is(cs, "private"))
		page_finding(c, C_CACHE_FIELDS_MISSING, "cacheScope",
		             cs == NULL ? "cacheScope is absent (required from 2026-07-28)"
		                        : "cacheScope is not \"public\" or \"private\"");
}

long contract_cursor_loop(const char *const cursors[], size_t n)
{
	if (cursors == NULL)
		return -1;
	for (size_t i = 1; i < n; i++) {
		if (cursors[i] == NULL)
			continue;
		for (size_t j = 0; j < i; j++)
			if (cursors[j] != NULL && strcmp(cursors[i], cursors[j]) == 0)
				return (long)i;
	}
	return -1;
}

/* ---- the memo (contract.h, "Incremental checking") -------------------------- */

/* One finding of a tool as its check wrote it; the pointer without the
 * tool's own prefix ("/tools/3"), which depends on where the tool sits. */
struct memo_finding {
	enum code code;
	char *suffix;    /* owned */
	char *message;   /* owned */
};

/* What checking one tool text found. Shared by the listing positions
 * that hold the same text; owned by the memo. */
struct memo_ent {
	uint64_t hash;            /* hash_fnv1a64_words(text) */
	char *text;               /* copy of the tool's text, in the same block
	                             (just after the struct) */
	size_t len;
	char *name;               /* owned, NULL when the tool has none */
	int more;                 /* an object: duplicate-name and the body apply */
	long index;               /* >= 0: a message names the tool's index, so
	                             the result holds at that index only */
	struct memo_finding *f;   /* owned: tool-level findings, in order */
	size_t nf, split;         /* f[0..split) come before duplicate-name */
	json_t *json;             /* owned, or NULL: the tool's entry of the JSON
	                             report, built for json_index and
	                             json_spec_only; immutable once built */
	size_t json_index;
	int json_spec_only;
	unsigned long gen;        /* the last check that used it */
	/* The dialect rule it was made under, and whether its findings
	 * depend on it (a schema without "$schema"): clients of several eras
	 * listing one upstream must not empty the memo each time. */
	enum dialect_rule dialect;
	int dialect_used;
	int dying;                /* being freed (an entry may sit at several
	                             positions) */
};

struct contract_memo {
	struct memo_ent **cur;    /* owned entries, by position in the last
	                             listing (NULL: not kept) */
	size_t ncur;
	struct memo_ent **tab;    /* owned array of borrowed entries (of cur),
	                             by hash; built when a call first needs it */
	size_t tabcap;
	int tab_built;
	int modern;               /* the era rules the entries were made under */
	unsigned profiles;        /* and the client profiles (issue 21) */
	unsigned long gen;        /* calls so far */
	size_t nfindings;         /* findings held by all entries */
	size_t rechecked;         /* tools checked afresh by the last call */
};

struct contract_memo *contract_memo_new(void)
{
	return calloc(1, sizeof(struct contract_memo));
}

static void ent_free(struct contract_memo *m, struct memo_ent *e)
{
	for (size_t i = 0; i < e->nf; i++) {
		free(e->f[i].suffix);
		free(e->f[i].message);
	}
	m->nfindings -= e->nf;
	free(e->f);
	free(e->name);
	json_decref(e->json);
	free(e);
}

/* Frees the entries of m->cur whose generation is not gen, and cur. */
static void memo_drop_old(struct contract_memo *m, unsigned long gen)
{
	/* An entry may sit at several positions: list each once (in cur
	 * itself, behind the reading position), then free the list. */
	size_t nd = 0;
	for (size_t i = 0; i < m->ncur; i++) {
		struct memo_ent *e = m->cur[i];
		if (e == NULL || e->gen == gen || e->dying)
			continue;
		e->dying = 1;
		m->cur[nd++] = e;
	}
	for (size_t k = 0; k < nd; k++)
		ent_free(m, m->cur[k]);
	free(m->cur);
	m->cur = NULL;
	m->ncur = 0;
	free(m->tab);
	m->tab = NULL;
	m->tabcap = 0;
	m->tab_built = 0;
}

void contract_memo_free(struct contract_memo *m)
{
	if (m == NULL)
		return;
	memo_drop_old(m, m->gen + 1);
	free(m);
}

size_t contract_memo_rechecked(const struct contract_memo *m)
{
	return m ? m->rechecked : 0;
}

/* The table of m->cur by hash; 0, or -1 when out of memory (then no
 * lookup by content: a miss). */
static int memo_tab(struct contract_memo *m)
{
	if (m->tab_built)
		return m->tab ? 0 : -1;
	m->tab_built = 1;
	size_t cap = 64;
	while (cap < 2 * m->ncur)
		cap *= 2;
	m->tab = calloc(cap, sizeof *m->tab);
	if (m->tab == NULL)
		return -1;
	m->tabcap = cap;
	for (size_t i = 0; i < m->ncur; i++) {
		struct memo_ent *e = m->cur[i];
		if (e == NULL)
			continue;
		size_t j = (size_t)e->hash & (cap - 1);
		while (m->tab[j] != NULL && m->tab[j] != e)
			j = (j + 1) & (cap - 1);
		m->tab[j] = e;
	}
	return 0;
}

/* The entry for text tx at position i: first the entry that was at i
 * (a list that changed in a few places keeps most tools where they were),
 * else any entry with the same text. *hash: the text's hash when it was
 * computed, else 0 with *hashed 0. */
static struct memo_ent *memo_find(struct contract_memo *m, size_t i,
                                  const struct contract_text *tx, uint64_t *hash, int *hashed)
{
	*hashed = 0;
	/* The caller's word that the text is the same: nothing to read. */
	if (tx->same_as > 0 && tx->same_as <= m->ncur && m->cur[tx->same_as - 1] != NULL &&
	    m->cur[tx->same_as - 1]->len == tx->len)
		return m->cur[tx->same_as - 1];
	if (i < m->ncur && m->cur[i] != NULL && m->cur[i]->len == tx->len &&
	    memcmp(m->cur[i]->text, tx->at, tx->len) == 0)
		return m->cur[i];
	*hash = hash_fnv1a64_words(tx->at, tx->len);
	*hashed = 1;
	if (m->ncur == 0 || memo_tab(m) < 0)
		return NULL;
	for (size_t j = (size_t)*hash & (m->tabcap - 1); m->tab[j] != NULL;
	     j = (j + 1) & (m->tabcap - 1)) {
		const struct memo_ent *e = m->tab[j];
		if (e->hash == *hash && e->len == tx->len && memcmp(e->text, tx->at, tx->len) == 0)
			return m->tab[j];
	}
	return NULL;
}

/* An entry for what check_tool just found: findings r->f[f0..) of the
 * current record, split at `split`. NULL when it cannot be kept (a finding
 * was dropped over the cap, the memo holds too many, out of memory): the
 * tool is then checked afresh next time. */
static struct memo_ent *memo_keep(struct contract_memo *m, struct ctx *c,
                                  const struct contract_text *tx, uint64_t hash, size_t f0,
                                  size_t split, size_t dropped_before, int more)
{
	struct contract_report *r = c->r;
	size_t plen = c->ptr.len;
	const char *prefix = sbuf_str(&c->ptr);
	size_t n = 0;
	if (r->oom || r->dropped != dropped_before)
		return NULL;
	for (size_t k = f0; k < r->nf; k++)
		n += !r->f[k].pub.list_level;
	if (m->nfindings + n > CONTRACT_MAX_FINDINGS)
		return NULL;
	/* One block for the entry and its text: a fresh list makes a
	 * thousand of them. */
	struct memo_ent *e = malloc(sizeof *e + tx->len);
	if (e == NULL)
		return NULL;
	memset(e, 0, sizeof *e);
	e->hash = hash;
	e->len = tx->len;
	e->more = more;
	e->index = -1;
	e->dialect = c->dialect;
	e->dialect_used = c->dialect_used;
	e->text = (char *)(e + 1);
	memcpy(e->text, tx->at, tx->len);
	e->f = n ? calloc(n, sizeof *e->f) : NULL;
	if (n && e->f == NULL)
		goto fail;
	for (size_t k = f0; k < r->nf; k++) {
		const struct finding *f = &r->f[k];
		if (f->pub.list_level)
			continue;
		if (strncmp(f->pointer, prefix, plen) != 0)
			goto fail; /* cannot happen: every tool finding is under it */
		struct memo_finding *mf = &e->f[e->nf];
		mf->code = C_ALL;
		for (int code = 0; code < C_ALL; code++)
			if (code_name((enum code)code) == f->pub.code)
				mf->code = (enum code)code;
		mf->suffix = strdup(f->pointer + plen);
		mf->message = strdup(f->message);
		e->nf++;
		m->nfindings++;
		if (mf->code == C_ALL || mf->suffix == NULL || mf->message == NULL)
			goto fail;
		if (mf->code == C_TOOL_NOT_OBJECT || mf->code == C_NAME_MISSING)
			e->index = (long)c->index;
		if (k < split)
			e->split = e->nf;
	}
	/* The record's name moves to the entry, which the record then
	 * borrows it from (its findings point at it already). */
	e->name = r->t[c->rec].name;
	return e;
fail:
	ent_free(m, e);
	return NULL;
}

/* The current record from entry e, as check_tool would have made it. */
static void memo_replay(struct ctx *c, struct memo_ent *e)
{
	struct contract_report *r = c->r;
	struct tool_rec *t = &r->t[c->rec];
	t->name = e->name; /* borrowed: t->ent is set */
	t->ent = e;
	if (e->nf > 0)
		tool_ptr(c);
	size_t base = c->ptr.len;
	for (size_t k = 0; k < e->nf; k++) {
		if (k == e->split && e->more)
			check_dup(c);
		sbuf_puts(&c->ptr, e->f[k].suffix);
		add_finding_s(r, e->f[k].code, c->rec, c->page, (long)c->index, 0, sbuf_str(&c->ptr),
		              e->f[k].message);
		sbuf_cut(&c->ptr, base);
	}
	if (e->nf == e->split && e->more)
		check_dup(c);
}

/* Tool i of a one-page listing whose text is tx: replayed from the memo
 * or checked (and kept). next[i] gets the entry. */
static void memo_tool(struct ctx *c, struct contract_memo *m, const json_t *tool,
                      const struct contract_text *tx, struct memo_ent **next)
{
	struct contract_report *r = c->r;
	uint64_t hash = 0;
	int hashed;
	if (new_rec(c) < 0) {
		r->oom = 1;
		return;
	}
	struct memo_ent *e = memo_find(m, c->index, tx, &hash, &hashed);
	if (e != NULL && e->index >= 0 && e->index != (long)c->index)
		e = NULL;
	if (e != NULL && e->dialect_used && e->dialect != c->dialect)
		e = NULL; /* read in another dialect: its findings may differ */
	if (e != NULL) {
		memo_replay(c, e);
	} else {
		size_t f0 = r->nf, dropped = r->dropped, split;
		tool_ptr(c);
		c->budget = CONTRACT_MAX_NODES;
		c->nheaders = 0;
		c->dialect_used = 0;
		int more = check_tool_head(c, tool);
		split = r->nf;
		if (more) {
			check_dup(c);
			check_tool_body(c, tool);
		}
		m->rechecked++;
		if (!hashed)
			hash = hash_fnv1a64_words(tx->at, tx->len);
		e = memo_keep(m, c, tx, hash, f0, split, dropped, more);
	}
	r->t[c->rec].f_end = r->nf;
	r->t[c->rec].ent = e;
	next[c->index] = e;
	if (e != NULL)
		e->gen = m->gen;
}

/* contract_check, and contract_check_memo when m is not NULL: then
 * texts[0..ntexts) are the texts of the only page's tools. */
static struct contract_report *check_pages(const json_t *const pages[], size_t npages,
                                           const struct contract_opts *opts,
                                           struct contract_memo *m,
                                           const struct contract_text *texts, size_t ntexts)
{
	if (pages == NULL || npages == 0)
		return NULL;
	struct contract_report *r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	struct ctx c = {.r = r, .rec = -1};
	struct memo_ent **now = NULL; /* m's entries by position, this time */
	r->spec_only = opts != NULL && opts->spec_only;
	c.modern = opts != NULL && era_is_modern(opts->era);
	c.profiles = opts != NULL ? opts->profiles & PROFILE_ALL : 0; /* client profiles */
	c.dialect = era_dialect(opts != NULL ? opts->era : NULL);
	if (m != NULL) {
		const json_t *tools = json_is_array(pages[0]) ? pages[0]
		                                              : json_object_get(pages[0], "tools");
		if (npages != 1 || texts == NULL || !json_is_array(tools) ||
		    ntexts != json_array_size(tools)) {
			m = NULL; /* not what the memo is for: a plain check */
		} else {
			size_t nnext = ntexts < CONTRACT_MAX_TOOLS ? ntexts : CONTRACT_MAX_TOOLS;
			now = calloc(nnext ? nnext : 1, sizeof *now);
			if (now == NULL)
				goto fail;
			if (m->modern != c.modern || m->profiles != c.profiles)
				memo_drop_old(m, m->gen + 1); /* other rules: nothing holds */
			m->modern = c.modern;
			m->profiles = c.profiles; /* client profiles (issue 21) */
			m->gen++;
			m->rechecked = 0;
			r->memo = m;
			r->memo_gen = m->gen;
		}
	}

	int multi = npages > 1;
	size_t n = npages < CONTRACT_MAX_PAGES ? npages : CONTRACT_MAX_PAGES;
	if (npages > CONTRACT_MAX_PAGES)
		r->truncated = 1;
	const char *cursors[CONTRACT_MAX_PAGES] = {0}; /* borrowed: pages */
	size_t total = 0;    /* tools[] entries seen, examined or not */
	int invalid = 0;     /* a page without a tools array */

	for (size_t p = 0; p < n && !r->oom; p++) {
		const json_t *page = pages[p];
		const json_t *tools;
		c.page = p;
		sbuf_cut(&c.ptr, 0);
		sbuf_puts(&c.ptr, ""); /* a valid empty string even before any token */
		if (multi)
			sbuf_index(&c.ptr, p);
		r->page_first[p] = r->nt;
		r->npages = p + 1;
		if (json_is_array(page)) {
			tools = page;
		} else if (json_is_object(page)) {
			tools = json_object_get(page, "tools");
			const json_t *next = json_object_get(page, "nextCursor");
			/* JS clients stop on a falsy cursor, so "" ends the listing. */
			if (json_is_string(next) && json_string_length(next) > 0)
				cursors[p] = json_string_value(next);
			if (!json_is_array(tools)) {
				page_finding(&c, C_RESULT_INVALID, "tools",
				             "result has no tools array");
				invalid = 1;
			}
		} else {
			page_finding(&c, C_RESULT_INVALID, NULL, "result is not an object");
			invalid = 1;
			continue;
		}
		if (c.modern)
			check_era(&c, json_is_object(page) ? page : NULL);
		if (c.profiles) /* client profiles (issue 21) */
			profile_check_page(c.profiles, page, profile_page_emit, &c);
		if (!json_is_array(tools))
			continue;
		size_t pbase = c.ptr.len;
		for (size_t i = 0; i < json_array_size(tools) && !r->oom; i++, total++) {
			if (r->nt >= CONTRACT_MAX_TOOLS) {
				r->truncated = 1;
				continue;
			}
			c.index = i;
			if (m != NULL) {
				c.lazy = 1;
				memo_tool(&c, m, json_array_get(tools, i), &texts[i], now);
				c.lazy = 0;
			} else {
				sbuf_puts(&c.ptr, "/tools");
				sbuf_index(&c.ptr, i);
				size_t split;
				if (new_rec(&c) < 0) {
					r->oom = 1;
				} else {
					check_tool(&c, json_array_get(tools, i), &split);
					r->t[c.rec].f_end = r->nf;
				}
			}
			sbuf_cut(&c.ptr, pbase);
		}
		r->page_count[p] = r->nt - r->page_first[p];
	}

	for (size_t p = 1; p < r->npages; p++) {
		if (cursors[p] == NULL)
			continue;
		for (size_t q = 0; q < p; q++) {
			if (cursors[q] == NULL || strcmp(cursors[p], cursors[q]) != 0)
				continue;
			char qb[QBUF];
			c.page = p;
			sbuf_cut(&c.ptr, 0);
			sbuf_index(&c.ptr, p);
			page_finding(&c, C_CURSOR_LOOP, "nextCursor",
			             "nextCursor \"%s\" repeats the one of page %zu",
			             sbuf_quote(qb, sizeof qb, cursors[p], QMAX), q);
			break;
		}
	}
	if (r->npages > 0 && cursors[r->npages - 1] != NULL)
		r->truncated = 1;
	if (total == 0 && !invalid && !r->truncated) {
		c.page = 0;
		sbuf_cut(&c.ptr, 0);
		sbuf_puts(&c.ptr, "");
		if (multi)
			sbuf_index(&c.ptr, 0);
		page_finding(&c, C_NO_TOOLS, "tools", "the server lists no tools");
	}

	if (m != NULL) {
		/* This listing's entries replace the last one's, failed or not:
		 * each in next is whole. */
		memo_drop_old(m, m->gen);
		m->cur = now;
		m->ncur = r->page_count[0];
		now = NULL;
	}
	if (r->oom || c.ptr.oom)
		goto fail;
	free(c.seen.slot);
	free(c.seen.hash);
	free(c.ptr.p);
	return r;
fail:
	free(now);
	free(c.seen.slot);
	free(c.seen.hash);
	free(c.ptr.p);
	contract_report_free(r);
	return NULL;
}

struct contract_report *contract_check(const json_t *const pages[], size_t npages,
                                       const struct contract_opts *opts)
{
	return check_pages(pages, npages, opts, NULL, NULL, 0);
}

struct contract_report *contract_check_memo(const json_t *page, const struct contract_text *texts,
                                            size_t ntexts, const struct contract_opts *opts,
                                            struct contract_memo *m)
{
	const json_t *pages[1] = {page};
	return check_pages(pages, 1, opts, m, texts, ntexts);
}

/* ---- accessors -------------------------------------------------------------- */

size_t contract_report_ntools(const struct contract_report *r)
{
	return r->nt;
}

size_t contract_report_nfailed(const struct contract_report *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nt; i++)
		n += r->t[i].failed != 0;
	return n;
}

double contract_report_score(const struct contract_report *r)
{
	if (r->nt == 0)
		return 0;
	return (double)(r->nt - contract_report_nfailed(r)) / (double)r->nt;
}

int contract_report_passed(const struct contract_report *r)
{
	return r->nproblems == 0;
}

int contract_report_truncated(const struct contract_report *r)
{
	return r->truncated;
}

size_t contract_report_nproblems(const struct contract_report *r)
{
	return r->nproblems;
}

size_t contract_report_nwarnings(const struct contract_report *r)
{
	return r->nwarnings;
}

size_t contract_report_nfindings(const struct contract_report *r)
{
	return r->nf;
}

const struct contract_finding *contract_report_finding(const struct contract_report *r, size_t i)
{
	return i < r->nf ? &r->f[i].pub : NULL;
}

int contract_report_tool_failed(const struct contract_report *r, size_t page, size_t index)
{
	if (page >= r->npages || index >= r->page_count[page])
		return 0;
	const struct tool_rec *t = &r->t[r->page_first[page] + index];
	return t->failed || t->dup_failed;
}

/* ---- rendering ---------------------------------------------------------------- */

static json_t *finding_json(const struct finding *f, int with_tool)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "code", f->pub.code, "message", f->pub.message,
	                      "pointer", f->pub.pointer, "rule", contract_finding_rule(&f->pub));
	if (o != NULL && with_tool && f->pub.tool != NULL &&
	    json_object_set_new(o, "tool", json_string(f->pub.tool)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The report's root around its three arrays (stolen, even on failure). */
static json_t *report_root(const struct contract_report *r, json_t *tools, json_t *problems,
                           json_t *warnings)
{
	json_t *root = json_pack("{s:o,s:o,s:o,s:f,s:b,s:b}", "tools", tools, "problems", problems,
	                         "warnings", warnings, "score", contract_report_score(r), "passed",
	                         contract_report_passed(r), "truncated", r->truncated);
	if (root == NULL)
		return NULL; /* "o" stole the arrays even on failure */
	if (r->dropped > 0 &&
	    json_object_set_new(root, "findings_dropped", json_integer((json_int_t)r->dropped)) < 0) {
		json_decref(root);
		return NULL;
	}
	return root;
}

json_t *contract_report_json(const struct contract_report *r)
{
	json_t *tools = json_array();
	json_t *problems = json_array();
	json_t *warnings = json_array();
	if (tools == NULL || problems == NULL || warnings == NULL)
		goto fail;
	for (size_t i = 0; i < r->nt; i++) {
		/* Built directly: json_pack parses its format once per tool, and
		 * a list has a thousand of them. */
		json_t *t = json_object();
		json_t *name = r->t[i].name ? json_string(r->t[i].name) : json_null();
		if (t == NULL) {
			json_decref(name);
			goto fail;
		}
		if (json_object_set_new_nocheck(t, "name", name) < 0 ||
		    json_object_set_new_nocheck(t, "problems", json_array()) < 0 ||
		    json_object_set_new_nocheck(t, "warnings", json_array()) < 0) {
			json_decref(t); /* set_new took name (and the arrays) either way */
			goto fail;
		}
		if (json_array_append_new(tools, t) < 0)
			goto fail;
	}
	for (size_t i = 0; i < r->nf; i++) {
		const struct finding *f = &r->f[i];
		json_t *dst;
		if (f->pub.list_level)
			dst = f->pub.problem ? problems : warnings;
		else
			dst = json_object_get(json_array_get(tools, (size_t)f->rec),
			                      f->pub.problem ? "problems" : "warnings");
		json_t *o = finding_json(f, f->pub.list_level);
		if (o == NULL || json_array_append_new(dst, o) < 0)
			goto fail;
	}
	return report_root(r, tools, problems, warnings);
fail:
	json_decref(tools);
	json_decref(problems);
	json_decref(warnings);
	return NULL;
}

/* Tool i's entry of the JSON report, from its findings f[f_first..f_end)
 * (so only when none was dropped). */
static json_t *tool_json(const struct contract_report *r, size_t i)
{
	const struct tool_rec *t = &r->t[i];
	json_t *o = json_object();
	json_t *name = t->name ? json_string(t->name) : json_null();
	json_t *problems = json_array(), *warnings = json_array();
	if (o == NULL || json_object_set_new_nocheck(o, "name", name) < 0 ||
	    json_object_set_new_nocheck(o, "problems", problems) < 0 ||
	    json_object_set_new_nocheck(o, "warnings", warnings) < 0) {
		json_decref(o); /* set_new took what it was given either way */
		return NULL;
	}
	for (size_t k = t->f_first; k < t->f_end; k++) {
		const struct finding *f = &r->f[k];
		if (f->pub.list_level)
			continue;
		json_t *fo = finding_json(f, 0);
		if (fo == NULL || json_array_append_new(f->pub.problem ? problems : warnings, fo) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *contract_report_json_memo(const struct contract_report *r, struct contract_memo *m)
{
	if (m == NULL || r->memo != m || r->memo_gen != m->gen || r->dropped > 0 || r->npages != 1)
		return contract_report_json(r);
	json_t *tools = json_array();
	json_t *problems = json_array();
	json_t *warnings = json_array();
	if (tools == NULL || problems == NULL || warnings == NULL)
		goto fail;
	for (size_t i = 0; i < r->nt; i++) {
		struct memo_ent *e = r->t[i].ent;
		json_t *t;
		if (e != NULL && e->json != NULL && e->json_index == r->t[i].index &&
		    e->json_spec_only == r->spec_only) {
			t = json_incref(e->json);
		} else {
			t = tool_json(r, i);
			if (t != NULL && e != NULL) {
				json_decref(e->json);
				e->json = json_incref(t);
				e->json_index = r->t[i].index;
				e->json_spec_only = r->spec_only;
			}
		}
		if (t == NULL || json_array_append_new(tools, t) < 0)
			goto fail;
	}
	for (size_t i = 0; i < r->nf; i++) {
		const struct finding *f = &r->f[i];
		if (!f->pub.list_level)
			continue;
		json_t *o = finding_json(f, 1);
		if (o == NULL || json_array_append_new(f->pub.problem ? problems : warnings, o) < 0)
			goto fail;
	}
	return report_root(r, tools, problems, warnings);
fail:
	json_decref(tools);
	json_decref(problems);
	json_decref(warnings);
	return NULL;
}

static void text_finding(struct sbuf *b, const struct finding *f)
{
	char q[256];
	/* Piece by piece: sbuf_printf cuts at 512 bytes, a long pointer plus a
	 * message could reach that. */
	sbuf_printf(b, "    %-7s %s [%s] at ", f->pub.problem ? "problem" : "warning",
	          f->pub.code, contract_finding_rule(&f->pub));
	sbuf_puts(b, sbuf_quote(q, sizeof q, f->pub.pointer, sizeof q - 4));
	sbuf_puts(b, ": ");
	sbuf_puts(b, f->pub.message);
	sbuf_puts(b, "\n");
}

char *contract_report_text(const struct contract_report *r)
{
	struct sbuf b = {0};
	char q[QBUF];
	sbuf_printf(&b, "contract: %s, %zu tools, %zu without problems, score %.2f, "
	              "%zu problems, %zu warnings\n",
	          contract_report_passed(r) ? "PASSED" : "FAILED", r->nt,
	          r->nt - contract_report_nfailed(r), contract_report_score(r), r->nproblems,
	          r->nwarnings);
	for (size_t i = 0; i < r->nt; i++) {
		int header = 0;
		for (size_t k = 0; k < r->nf; k++) {
			const struct finding *f = &r->f[k];
			if (f->rec != (long)i || f->pub.list_level)
				continue;
			if (!header) {
				if (r->t[i].name)
					sbuf_printf(&b, "  tool \"%s\":\n",
					          sbuf_quote(q, sizeof q, r->t[i].name, QMAX));
				else
					sbuf_printf(&b, "  tools[%zu] of page %zu (no name):\n",
					          r->t[i].index, r->t[i].page);
				header = 1;
			}
			text_finding(&b, f);
		}
	}
	int header = 0;
	for (size_t k = 0; k < r->nf; k++) {
		if (!r->f[k].pub.list_level)
			continue;
		if (!header) {
			sbuf_puts(&b, "  listing:\n");
			header = 1;
		}
		text_finding(&b, &r->f[k]);
	}
	if (r->dropped)
		sbuf_printf(&b, "  (%zu more findings not kept)\n", r->dropped);
	if (r->truncated)
		sbuf_puts(&b, "  listing cut: not every page was checked, the listing may "
		            "hold more tools\n");
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

json_t *contract_filter(const json_t *page, size_t page_index, const struct contract_report *r)
{
	const json_t *tools = json_is_array(page) ? page : json_object_get(page, "tools");
	if (!json_is_array(tools))
		return NULL;
	json_t *kept = json_array();
	if (kept == NULL)
		return NULL;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		if (contract_report_tool_failed(r, page_index, i))
			continue;
		if (json_array_append_new(kept, json_deep_copy(json_array_get(tools, i))) < 0) {
			json_decref(kept);
			return NULL;
		}
	}
	if (json_is_array(page))
		return kept;
	/* Copy every other member of the result as is: _meta, nextCursor,
	 * resultType, ttlMs and members we do not know. */
	json_t *out = json_object();
	if (out == NULL) {
		json_decref(kept);
		return NULL;
	}
	for (void *it = json_object_iter(mut(page)); it; it = json_object_iter_next(mut(page), it)) {
		const char *key = json_object_iter_key(it);
		json_t *v = strcmp(key, "tools") == 0 ? json_incref(kept)
		                                      : json_deep_copy(json_object_iter_value(it));
		if (json_object_set_new(out, key, v) < 0) {
			json_decref(kept);
			json_decref(out);
			return NULL;
		}
	}
	json_decref(kept);
	return out;
}

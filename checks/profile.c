/* profile.c: client profiles (see profile.h).
 *
 * One bounded walk per schema collects, per code, the first place and how
 * many places share it; the findings are emitted at the end in code
 * order, so a tool's profile findings come out in a fixed order whatever
 * the walk met first. The keyword lists are the clients' documented
 * subsets (docs/contract.md, "Client profiles", cites each).
 *
 * Leaves out: anything the core checks already raise (contract.c), and
 * rewriting schemas into what a client would take.
 */
#include "checks/profile.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>


/* ---- codes ----------------------------------------------------------------- */

static const struct {
	const char *name;
	unsigned profile;
	int problem;
} pcodes[PROFILE_NCODES] = {
	[PROFILE_C_CLAUDE_ROOT_COMPOSITION] = {"profile-claude-code-root-composition",
	                                       PROFILE_CLAUDE_CODE, 1},
	[PROFILE_C_CLAUDE_NAME_LENGTH] = {"profile-claude-code-name-length", PROFILE_CLAUDE_CODE, 1},
	[PROFILE_C_CLAUDE_NAME_LONG] = {"profile-claude-code-name-long", PROFILE_CLAUDE_CODE, 0},
	[PROFILE_C_OPENAI_NAME_FORMAT] = {"profile-openai-strict-name-format",
	                                  PROFILE_OPENAI_STRICT, 1},
	[PROFILE_C_OPENAI_ADDITIONAL_PROPERTIES] = {"profile-openai-strict-additional-properties",
	                                            PROFILE_OPENAI_STRICT, 1},
	[PROFILE_C_OPENAI_OPTIONAL_PROPERTY] = {"profile-openai-strict-optional-property",
	                                        PROFILE_OPENAI_STRICT, 1},
	[PROFILE_C_OPENAI_UNSUPPORTED_KEYWORD] = {"profile-openai-strict-unsupported-keyword",
	                                          PROFILE_OPENAI_STRICT, 1},
	[PROFILE_C_OPENAI_FORMAT] = {"profile-openai-strict-format", PROFILE_OPENAI_STRICT, 1},
	[PROFILE_C_GEMINI_NAME_FORMAT] = {"profile-gemini-name-format", PROFILE_GEMINI, 1},
	[PROFILE_C_GEMINI_PARAM_NAME] = {"profile-gemini-param-name", PROFILE_GEMINI, 0},
	[PROFILE_C_GEMINI_UNSUPPORTED_KEYWORD] = {"profile-gemini-unsupported-keyword",
	                                          PROFILE_GEMINI, 1},
	[PROFILE_C_GEMINI_TYPE_ARRAY] = {"profile-gemini-type-array", PROFILE_GEMINI, 1},
	[PROFILE_C_SDK_TOOL_FIELD] = {"profile-sdk-tool-field", PROFILE_SDK, 1},
	[PROFILE_C_SDK_PROPERTY_NOT_OBJECT] = {"profile-sdk-property-not-object", PROFILE_SDK, 1},
	[PROFILE_C_SDK_OUTPUT_SCHEMA_TYPE] = {"profile-sdk-output-schema-type", PROFILE_SDK, 1},
	[PROFILE_C_SDK_RESULT_FIELD] = {"profile-sdk-result-field", PROFILE_SDK, 1},
};

const char *profile_code_name(enum profile_code c)
{
	return (unsigned)c < PROFILE_NCODES ? pcodes[c].name : NULL;
}

int profile_code_problem(enum profile_code c)
{
	return (unsigned)c < PROFILE_NCODES && pcodes[c].problem;
}

unsigned profile_code_profile(enum profile_code c)
{
	return (unsigned)c < PROFILE_NCODES ? pcodes[c].profile : 0;
}

static const struct {
	const char *name;
	unsigned bit;
} pnames[] = {
	{"claude-code", PROFILE_CLAUDE_CODE},
	{"openai-strict", PROFILE_OPENAI_STRICT},
	{"gemini", PROFILE_GEMINI},
	{"sdk", PROFILE_SDK},
};
#define NPNAMES (sizeof pnames / sizeof pnames[0])

const char *profile_name(unsigned bit)
{
	for (size_t i = 0; i < NPNAMES; i++)
		if (pnames[i].bit == bit)
			return pnames[i].name;
	return NULL;
}

int profile_parse(const char *list, unsigned *mask, const char **bad, size_t *badlen)
{
	const char *p = list;
	int any = 0;
	if (bad)
		*bad = list ? list : "";
	if (badlen)
		*badlen = 0;
	if (list == NULL)
		return -1;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		const char *s = p;
		while (*p && *p != ',')
			p++;
		const char *e = p;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		size_t n = (size_t)(e - s);
		size_t k = 0;
		while (k < NPNAMES && !(strlen(pnames[k].name) == n && memcmp(pnames[k].name, s, n) == 0))
			k++;
		if (k == NPNAMES) {
			if (bad)
				*bad = s;
			if (badlen)
				*badlen = n;
			return -1;
		}
		*mask |= pnames[k].bit;
		any = 1;
		if (*p == '\0')
			break;
		p++; /* the comma */
	}
	return any ? 0 : -1;
}

/* ---- the walk -------------------------------------------------------------- */

#define PMSG 256

/* The first place of one code and how many places share it. */
struct first {
	size_t n;
	char ptr[PROFILE_PTR_MAX];
	char msg[PMSG];
};

struct walk {
	unsigned mask;
	char ptr[PROFILE_PTR_MAX];
	size_t plen;
	size_t over;              /* tokens pushed that did not fit: deeper ones
	                             do not either, the pointer stays put */
	size_t budget;            /* subschemas left (PROFILE_MAX_NODES per tool) */
	struct first f[PROFILE_NCODES];
};

#define NOT_PUSHED ((size_t)-1)

/* Appends "/" + token (RFC 6901 escaped) when it fits; returns what to
 * cut back to. A token that does not fit (and every one below it) leaves
 * the pointer at the deepest place that fits. */
static size_t push(struct walk *w, const char *tok)
{
	size_t old = w->plen, n = old;
	if (w->over > 0 || n + 1 >= sizeof w->ptr) {
		w->over++;
		return NOT_PUSHED;
	}
	w->ptr[n++] = '/';
	for (const char *t = tok; *t; t++) {
		const char *esc = *t == '~' ? "~0" : *t == '/' ? "~1" : NULL;
		size_t need = esc ? 2 : 1;
		if (n + need >= sizeof w->ptr) {
			w->ptr[old] = '\0';
			w->over++;
			return NOT_PUSHED;
		}
		if (esc) {
			memcpy(w->ptr + n, esc, 2);
		} else {
			w->ptr[n] = *t;
		}
		n += need;
	}
	w->ptr[n] = '\0';
	w->plen = n;
	return old;
}

static void push_index(struct walk *w, size_t i, size_t *old)
{
	char b[24];
	snprintf(b, sizeof b, "%zu", i);
	*old = push(w, b);
}

static void cut(struct walk *w, size_t len)
{
	if (len == NOT_PUSHED) {
		w->over--;
		return;
	}
	w->plen = len;
	w->ptr[len] = '\0';
}

/* Records a place for code (its pointer: the current one plus tok, when
 * not NULL). */
static void note(struct walk *w, enum profile_code code, const char *tok, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void vnote(struct walk *w, enum profile_code code, const char *tok, const char *fmt,
                  va_list ap)
{
	struct first *f = &w->f[code];
	if (f->n++ > 0)
		return;
	size_t old = tok ? push(w, tok) : w->plen;
	memcpy(f->ptr, w->ptr, w->plen + 1);
	cut(w, old);
	vsnprintf(f->msg, sizeof f->msg, fmt, ap);
}

static void note(struct walk *w, enum profile_code code, const char *tok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vnote(w, code, tok, fmt, ap);
	va_end(ap);
}

/* note() at "properties/<key>" under the current place. */
static void note_prop(struct walk *w, enum profile_code code, const char *key, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));
static void note_prop(struct walk *w, enum profile_code code, const char *key, const char *fmt,
                      ...)
{
	va_list ap;
	size_t o = push(w, "properties");
	va_start(ap, fmt);
	vnote(w, code, key, fmt, ap);
	va_end(ap);
	cut(w, o);
}

static void flush(struct walk *w, profile_emit_fn emit, void *arg)
{
	for (int c = 0; c < PROFILE_NCODES; c++) {
		struct first *f = &w->f[c];
		if (f->n == 0)
			continue;
		char msg[PMSG + 64];
		if (f->n > 1)
			snprintf(msg, sizeof msg, "%s (and %zu more place%s)", f->msg, f->n - 1,
			         f->n > 2 ? "s" : "");
		else
			snprintf(msg, sizeof msg, "%s", f->msg);
		emit(arg, (enum profile_code)c, f->ptr, msg);
	}
}

/* A name quoted for a message: at most 48 bytes, control characters as '?'. */
static const char *q(char *buf, size_t cap, const char *s)
{
	size_t n = 0;
	for (; s[n] && n + 4 < cap && n < 48; n++)
		buf[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
	if (s[n] && n + 4 <= cap) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

static int in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* OpenAI strict mode: keywords outside the supported subset. */
static const char *const openai_unsupported[] = {
	"allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
	"patternProperties", "unevaluatedProperties", "propertyNames", "minProperties",
	"maxProperties", "unevaluatedItems", "contains", "minContains", "maxContains",
	"uniqueItems", NULL,
};
static const char *const openai_formats[] = {
	"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", NULL,
};
/* Gemini's Schema object (the OpenAPI 3.0 subset of `parameters`): every
 * field it has; any other member is "Unknown name ... Cannot find field". */
static const char *const gemini_fields[] = {
	"type", "format", "title", "description", "nullable", "default", "items", "minItems",
	"maxItems", "enum", "properties", "propertyOrdering", "required", "minProperties",
	"maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf", "minimum",
	"maximum", NULL,
};

/* Applicators whose value is one subschema, a map or an array of them. */
static const char *const sub_one[] = {
	"additionalProperties", "items", "not", "if", "then", "else", "contains", "propertyNames",
	"unevaluatedProperties", "unevaluatedItems", "additionalItems", NULL,
};
static const char *const sub_map[] = {
	"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", NULL,
};
static const char *const sub_arr[] = {"allOf", "anyOf", "oneOf", "prefixItems", "items", NULL};

static int type_has(const json_t *s, const char *t)
{
	const json_t *ty = json_object_get(s, "type");
	if (json_is_string(ty))
		return strcmp(json_string_value(ty), t) == 0;
	size_t i;
	const json_t *v;
	json_array_foreach(ty, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), t) == 0)
			return 1;
	return 0;
}

static int in_required(const json_t *s, const char *name)
{
	size_t i;
	const json_t *v;
	json_array_foreach(json_object_get(s, "required"), i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
			return 1;
	return 0;
}

/* OpenAI strict mode on one object subschema of inputSchema. */
static void openai_node(struct walk *w, const json_t *s)
{
	char b[64];
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)(uintptr_t)s, key, v) {
		if (in_list(key, openai_unsupported))
			note(w, PROFILE_C_OPENAI_UNSUPPORTED_KEYWORD, key,
			     "[openai-strict] \"%s\" is not in strict mode's supported subset: the API "
			     "refuses the request", q(b, sizeof b, key));
	}
	const json_t *fmt = json_object_get(s, "format");
	if (json_is_string(fmt) && !in_list(json_string_value(fmt), openai_formats))
		note(w, PROFILE_C_OPENAI_FORMAT, "format",
		     "[openai-strict] format \"%s\" is not one strict mode supports: the API refuses "
		     "the request", q(b, sizeof b, json_string_value(fmt)));
	const json_t *props = json_object_get(s, "properties");
	if (!type_has(s, "object") && !json_is_object(props))
		return;
	const json_t *ap = json_object_get(s, "additionalProperties");
	if (!json_is_false(ap))
		note(w, PROFILE_C_OPENAI_ADDITIONAL_PROPERTIES, "additionalProperties",
		     "[openai-strict] an object schema without \"additionalProperties\": false: strict "
		     "mode requires it on every object");
	json_object_foreach((json_t *)(uintptr_t)props, key, v) {
		if (in_required(s, key))
			continue;
		note_prop(w, PROFILE_C_OPENAI_OPTIONAL_PROPERTY, key,
		          "[openai-strict] property \"%s\" is not in \"required\": strict mode requires "
		          "every property there (optional ones as a null-able type)", q(b, sizeof b, key));
	}
}

/* Gemini's `parameters` subset on one subschema of inputSchema. */
static void gemini_node(struct walk *w, const json_t *s)
{
	char b[64];
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)(uintptr_t)s, key, v) {
		if (!in_list(key, gemini_fields))
			note(w, PROFILE_C_GEMINI_UNSUPPORTED_KEYWORD, key,
			     "[gemini] \"%s\" is not a field of Gemini's function parameter Schema: the API "
			     "refuses the request (unknown field)", q(b, sizeof b, key));
	}
	if (json_is_array(json_object_get(s, "type")))
		note(w, PROFILE_C_GEMINI_TYPE_ARRAY, "type",
		     "[gemini] \"type\" is an array: Gemini's Schema takes one type (use \"nullable\" "
		     "or \"anyOf\")");
}

static void visit(struct walk *w, const json_t *s, size_t depth);

static void visit_children(struct walk *w, const json_t *s, size_t depth)
{
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)(uintptr_t)s, key, v) {
		size_t o = push(w, key);
		if (json_is_object(v) && in_list(key, sub_map)) {
			const char *k2;
			const json_t *v2;
			json_object_foreach((json_t *)(uintptr_t)v, k2, v2) {
				size_t o2 = push(w, k2);
				visit(w, v2, depth + 1);
				cut(w, o2);
			}
		} else if (json_is_array(v) && in_list(key, sub_arr)) {
			size_t i;
			const json_t *e;
			json_array_foreach(v, i, e) {
				size_t o2;
				push_index(w, i, &o2);
				visit(w, e, depth + 1);
				cut(w, o2);
			}
		} else if (json_is_object(v) && in_list(key, sub_one)) {
			visit(w, v, depth + 1);
		}
		cut(w, o);
	}
}

static void visit(struct walk *w, const json_t *s, size_t depth)
{
	if (!json_is_object(s) || depth >= PROFILE_MAX_DEPTH || w->budget == 0)
		return;
	w->budget--;
	if (w->mask & PROFILE_OPENAI_STRICT)
		openai_node(w, s);
	if (w->mask & PROFILE_GEMINI)
		gemini_node(w, s);
	visit_children(w, s, depth);
}

/* ---- per tool -------------------------------------------------------------- */

static int name_chars(const char *s, const char *extra, int first_alpha)
{
	if (*s == '\0')
		return 0;
	if (first_alpha && !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr(extra, *s)))
			return 0;
	return 1;
}

/* Claude Code names an MCP tool "mcp__<server>__<tool>" and the model
 * API takes at most 64 characters: 8 + len > 64 fails with any server. */
#define CLAUDE_NAME_MAX 64
#define CLAUDE_PREFIX_MIN 8   /* "mcp__" + a one-character server + "__" */
#define CLAUDE_ROOM_WARN 16   /* fewer characters left for the server name: warning */

static void name_rules(struct walk *w, const char *name)
{
	char b[64];
	size_t n = strlen(name);
	if (w->mask & PROFILE_CLAUDE_CODE) {
		if (n + CLAUDE_PREFIX_MIN > CLAUDE_NAME_MAX)
			note(w, PROFILE_C_CLAUDE_NAME_LENGTH, "name",
			     "[claude-code] name \"%s\" is %zu characters: mcp__<server>__<name> exceeds the "
			     "API's 64 whatever the server is called", q(b, sizeof b, name), n);
		else if (CLAUDE_NAME_MAX - 7 - n < CLAUDE_ROOM_WARN)
			note(w, PROFILE_C_CLAUDE_NAME_LONG, "name",
			     "[claude-code] name \"%s\" leaves %zu characters for the server name in "
			     "mcp__<server>__<name> (64 at most)", q(b, sizeof b, name),
			     CLAUDE_NAME_MAX - 7 - n);
	}
	if ((w->mask & PROFILE_OPENAI_STRICT) && !name_chars(name, "_-", 0))
		note(w, PROFILE_C_OPENAI_NAME_FORMAT, "name",
		     "[openai-strict] name \"%s\" does not match ^[a-zA-Z0-9_-]+$: the API refuses the "
		     "request", q(b, sizeof b, name));
	if ((w->mask & PROFILE_GEMINI) && (n > 64 || !name_chars(name, "_.-:", 1)))
		note(w, PROFILE_C_GEMINI_NAME_FORMAT, "name",
		     "[gemini] name \"%s\" is not a function name Gemini takes (a letter or _ first, then "
		     "letters, digits, _ . - :, at most 64)", q(b, sizeof b, name));
}

static void claude_root(struct walk *w, const json_t *in)
{
	static const char *const comp[] = {"anyOf", "oneOf", "allOf"};
	for (size_t i = 0; i < 3; i++)
		if (json_object_get(in, comp[i]) != NULL)
			note(w, PROFILE_C_CLAUDE_ROOT_COMPOSITION, comp[i],
			     "[claude-code] inputSchema has \"%s\" at its root: Claude's API refuses "
			     "top-level anyOf/oneOf/allOf and Claude Code loses the server's tools", comp[i]);
}

static void gemini_params(struct walk *w, const json_t *in)
{
	char b[64];
	const char *key;
	const json_t *v;
	json_object_foreach(json_object_get(in, "properties"), key, v) {
		if (strlen(key) <= 64 && name_chars(key, "_", 1))
			continue;
		note_prop(w, PROFILE_C_GEMINI_PARAM_NAME, key,
		          "[gemini] parameter \"%s\" is not a name Gemini documents (a letter or _ first, "
		          "then letters, digits, _, at most 64)", q(b, sizeof b, key));
	}
}

/* The TypeScript SDK client's ToolSchema: optional members that must
 * have a type when present. */
static int is_str_or_absent(const json_t *v)
{
	return v == NULL || json_is_string(v);
}

static int is_bool_or_absent(const json_t *v)
{
	return v == NULL || json_is_boolean(v);
}

static int str_array(const json_t *v)
{
	size_t i;
	const json_t *e;
	if (!json_is_array(v))
		return 0;
	json_array_foreach(v, i, e)
		if (!json_is_string(e))
			return 0;
	return 1;
}

/* The first icon member the SDK refuses, NULL when all parse. */
static const char *bad_icons(const json_t *icons, size_t *at)
{
	size_t i;
	const json_t *ic;
	json_array_foreach(icons, i, ic) {
		*at = i;
		if (!json_is_object(ic))
			return "";
		if (!json_is_string(json_object_get(ic, "src")))
			return "src";
		if (!is_str_or_absent(json_object_get(ic, "mimeType")))
			return "mimeType";
		const json_t *sizes = json_object_get(ic, "sizes");
		if (sizes != NULL && !str_array(sizes))
			return "sizes";
		const json_t *th = json_object_get(ic, "theme");
		if (th != NULL && !(json_is_string(th) && (strcmp(json_string_value(th), "light") == 0 ||
		                                           strcmp(json_string_value(th), "dark") == 0)))
			return "theme";
	}
	return NULL;
}

static void sdk_field(struct walk *w, const char *member, const char *what)
{
	note(w, PROFILE_C_SDK_TOOL_FIELD, member,
	     "[sdk] \"%s\" is not %s: the TypeScript SDK client's listTools() throws for the whole "
	     "listing", member, what);
}

static void sdk_tool_fields(struct walk *w, const json_t *tool)
{
	if (!is_str_or_absent(json_object_get(tool, "title")))
		sdk_field(w, "title", "a string");
	if (!is_str_or_absent(json_object_get(tool, "description")))
		sdk_field(w, "description", "a string");
	const json_t *icons = json_object_get(tool, "icons");
	size_t at = 0;
	const char *bad = NULL;
	if (icons != NULL && (!json_is_array(icons) || (bad = bad_icons(icons, &at)) != NULL)) {
		if (!json_is_array(icons)) {
			sdk_field(w, "icons", "an array of icons");
		} else {
			size_t o = push(w, "icons"), o2;
			push_index(w, at, &o2);
			note(w, PROFILE_C_SDK_TOOL_FIELD, *bad ? bad : NULL,
			     "[sdk] icons[%zu]%s%s is not what the SDK's Icon schema takes: listTools() throws "
			     "for the whole listing", at, *bad ? "." : "", bad);
			cut(w, o2);
			cut(w, o);
		}
	}
	const json_t *an = json_object_get(tool, "annotations");
	if (an != NULL) {
		static const char *const hints[] = {"readOnlyHint", "destructiveHint", "idempotentHint",
		                                    "openWorldHint"};
		int ok = json_is_object(an) && is_str_or_absent(json_object_get(an, "title"));
		for (size_t i = 0; ok && i < 4; i++)
			ok = is_bool_or_absent(json_object_get(an, hints[i]));
		if (!ok)
			sdk_field(w, "annotations", "an object of a string title and boolean hints");
	}
	const json_t *ex = json_object_get(tool, "execution");
	if (ex != NULL) {
		const json_t *ts = json_object_get(ex, "taskSupport");
		const char *t = json_string_value(ts);
		if (!json_is_object(ex) ||
		    (ts != NULL && (t == NULL || (strcmp(t, "required") != 0 && strcmp(t, "optional") != 0 &&
		                                  strcmp(t, "forbidden") != 0))))
			sdk_field(w, "execution",
			          "an object whose taskSupport is \"required\", \"optional\" or \"forbidden\"");
	}
	const json_t *meta = json_object_get(tool, "_meta");
	if (meta != NULL && !json_is_object(meta))
		sdk_field(w, "_meta", "an object");
}

/* The SDK's zod schema checks the root's properties members only: each
 * must be a non-null object (true/false are JSON Schemas, but not that). */
static void sdk_props(struct walk *w, const json_t *schema, const char *member)
{
	char b[64];
	const char *key;
	const json_t *v;
	size_t o = push(w, member);
	json_object_foreach(json_object_get(schema, "properties"), key, v) {
		if (!json_is_object(v) && !json_is_array(v))
			note_prop(w, PROFILE_C_SDK_PROPERTY_NOT_OBJECT, key,
			          "[sdk] %s property \"%s\" is %s, not an object: the TypeScript SDK "
			          "client's listTools() throws for the whole listing", member,
			          q(b, sizeof b, key),
			          json_is_true(v) ? "true" : json_is_false(v) ? "false" : "not a schema");
	}
	cut(w, o);
}

static void sdk_rules(struct walk *w, const json_t *tool)
{
	sdk_tool_fields(w, tool);
	const json_t *in = json_object_get(tool, "inputSchema");
	if (json_is_object(in))
		sdk_props(w, in, "inputSchema");
	const json_t *out = json_object_get(tool, "outputSchema");
	if (out == NULL)
		return;
	const json_t *ty = json_object_get(out, "type");
	if (!json_is_object(out) || !json_is_string(ty) ||
	    strcmp(json_string_value(ty), "object") != 0) {
		size_t o = json_is_object(out) ? push(w, "outputSchema") : w->plen;
		note(w, PROFILE_C_SDK_OUTPUT_SCHEMA_TYPE, json_is_object(out) ? "type" : "outputSchema",
		     "[sdk] outputSchema is not an object schema with type \"object\": the TypeScript SDK "
		     "client's listTools() throws for the whole listing (every era)");
		cut(w, o);
	}
	if (json_is_object(out))
		sdk_props(w, out, "outputSchema");
}

void profile_check_tool(unsigned mask, const json_t *tool, profile_emit_fn emit, void *arg)
{
	if (!json_is_object(tool) || (mask & PROFILE_ALL) == 0)
		return;
	struct walk w;
	memset(&w, 0, sizeof w);
	w.mask = mask;
	w.budget = PROFILE_MAX_NODES;
	const char *name = json_string_value(json_object_get(tool, "name"));
	if (name != NULL && *name)
		name_rules(&w, name);
	const json_t *in = json_object_get(tool, "inputSchema");
	if (json_is_object(in)) {
		size_t o = push(&w, "inputSchema");
		if (mask & PROFILE_CLAUDE_CODE)
			claude_root(&w, in);
		if (mask & PROFILE_GEMINI)
			gemini_params(&w, in);
		if (mask & (PROFILE_OPENAI_STRICT | PROFILE_GEMINI))
			visit(&w, in, 0);
		cut(&w, o);
	}
	if (mask & PROFILE_SDK)
		sdk_rules(&w, tool);
	flush(&w, emit, arg);
}

void profile_check_page(unsigned mask, const json_t *page, profile_emit_fn emit, void *arg)
{
	if (!(mask & PROFILE_SDK) || !json_is_object(page))
		return;
	struct walk w;
	memset(&w, 0, sizeof w);
	w.mask = mask;
	const json_t *nc = json_object_get(page, "nextCursor");
	if (nc != NULL && !json_is_string(nc))
		note(&w, PROFILE_C_SDK_RESULT_FIELD, "nextCursor",
		     "[sdk] nextCursor is not a string: the TypeScript SDK client's listTools() throws "
		     "(leave it out on the last page)");
	const json_t *meta = json_object_get(page, "_meta");
	if (meta != NULL && !json_is_object(meta))
		note(&w, PROFILE_C_SDK_RESULT_FIELD, "_meta",
		     "[sdk] _meta is not an object: the TypeScript SDK client's listTools() throws");
	flush(&w, emit, arg);
}

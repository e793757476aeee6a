/* report: see report.h. The model, the rule table, the text and JSON
 * forms, and --format's outputs; the other writers are report_junit.c,
 * report_sarif.c and report_md.c. */
#include "proxy/cli/report.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checks/contract.h"
#include "checks/drift.h"
#include "proxy/cli/cli_out.h"
#include "proxy/cli/report_model.h"

static const char *const fmt_names[] = {"text", "json", "junit", "sarif", "github", "markdown"};

const char *report_fmt_name(enum report_fmt fmt)
{
	return (size_t)fmt < sizeof fmt_names / sizeof *fmt_names ? fmt_names[fmt] : "?";
}

const char *report_level_name(enum report_level l)
{
	return l == REPORT_LEVEL_ERROR ? "error" : l == REPORT_LEVEL_WARNING ? "warning" : "note";
}

const char *report_status_name(enum report_status s)
{
	switch (s) {
	case REPORT_PASS: return "pass";
	case REPORT_FAIL: return "fail";
	case REPORT_ERROR: return "error";
	case REPORT_SKIPPED: return "skipped";
	}
	return "?";
}

/* strdup that keeps NULL as NULL; *oom set when a copy fails. */
static char *dup_opt(const char *s, int *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*oom = 1;
	return d;
}

struct report *report_new(const char *command, const char *version)
{
	struct report *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->command = strdup(command);
	r->version = strdup(version);
	if (!r->command || !r->version) {
		report_free(r);
		return NULL;
	}
	return r;
}

void report_free(struct report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->ncases; i++) {
		free(r->cases[i].suite);
		free(r->cases[i].name);
		free(r->cases[i].message);
	}
	for (size_t i = 0; i < r->nitems; i++) {
		struct report_item *it = &r->items[i];
		free(it->code);
		free(it->message);
		free(it->tool);
		free(it->suite);
		free(it->file);
		free(it->pointer);
	}
	for (size_t i = 0; i < r->nrules; i++) {
		free(r->rules[i].code);
		free(r->rules[i].short_desc);
		free(r->rules[i].help);
	}
	free(r->cases);
	free(r->items);
	free(r->command);
	free(r->version);
	free(r->summary);
	free(r->error);
	free(r->text);
	json_decref(r->json);
	free(r);
}

void report_set_secrets(struct report *r, const struct cli_secrets *sec)
{
	r->sec = sec;
}

/* Room for one more element of an array that doubles; -1 past cap. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem, size_t max)
{
	if (n < *cap)
		return 0;
	if (n >= max)
		return -1;
	size_t nc = *cap ? *cap * 2 : 16;
	if (nc > max)
		nc = max;
	void *p = realloc(*arr, nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

int report_add_case(struct report *r, const char *suite, const char *name,
                    enum report_status status, double duration_s, const char *message)
{
	if (grow((void **)&r->cases, &r->cases_cap, r->ncases, sizeof *r->cases, REPORT_MAX_CASES) < 0)
		return -1;
	int oom = 0;
	struct report_case c = {
		.suite = dup_opt(suite ? suite : r->command, &oom),
		.name = dup_opt(name ? name : "(unnamed)", &oom),
		.message = dup_opt(message, &oom),
		.status = status,
		.duration_s = duration_s,
	};
	if (oom) {
		free(c.suite);
		free(c.name);
		free(c.message);
		return -1;
	}
	r->cases[r->ncases++] = c;
	return 0;
}

int report_add_finding(struct report *r, const struct report_finding *f)
{
	if (grow((void **)&r->items, &r->items_cap, r->nitems, sizeof *r->items,
	         REPORT_MAX_FINDINGS) < 0) {
		r->dropped++;
		return -1;
	}
	int oom = 0;
	struct report_item it = {
		.code = dup_opt(f->code ? f->code : "finding", &oom),
		.message = dup_opt(f->message ? f->message : "", &oom),
		.tool = dup_opt(f->tool, &oom),
		.suite = dup_opt(f->suite, &oom),
		.file = dup_opt(f->file, &oom),
		.pointer = dup_opt(f->pointer, &oom),
		.level = f->level,
		.breaking = f->breaking,
		.line = f->line > 0 ? f->line : 0,
		.column = f->line > 0 && f->column > 0 ? f->column : 0,
	};
	if (oom) {
		free(it.code);
		free(it.message);
		free(it.tool);
		free(it.suite);
		free(it.file);
		free(it.pointer);
		r->dropped++;
		return -1;
	}
	r->items[r->nitems++] = it;
	return 0;
}

int report_describe_rule(struct report *r, const char *code, enum report_level level,
                         const char *short_desc, const char *help)
{
	if (r->nrules >= REPORT_MAX_RULES)
		return -1;
	int oom = 0;
	struct report_rule u = {.code = dup_opt(code, &oom),
	                        .short_desc = dup_opt(short_desc ? short_desc : code, &oom),
	                        .help = dup_opt(help ? help : short_desc ? short_desc : code, &oom),
	                        .level = level};
	if (oom || !u.code) {
		free(u.code);
		free(u.short_desc);
		free(u.help);
		return -1;
	}
	r->rules[r->nrules++] = u;
	return 0;
}

/* ---- built-in rules: checks/contract.h and checks/drift.h's codes ------------ */

struct builtin_rule {
	const char *code, *short_desc;
};

/* One line each, from the tables in contract.h and drift.h. */
static const struct builtin_rule builtin[] = {
	{"tool-not-object", "A tools[] entry is not an object."},
	{"name-missing", "A tool has no name (absent, not a string, or empty)."},
	{"description-missing", "A tool has no description."},
	{"input-schema-missing", "A tool has no inputSchema."},
	{"input-schema-invalid", "inputSchema is not an object schema of type \"object\"."},
	{"properties-invalid", "inputSchema.properties is not an object of schemas."},
	{"required-invalid", "inputSchema.required is not an array of strings."},
	{"required-unknown", "A required parameter is declared by no subschema."},
	{"output-schema-invalid", "outputSchema is not a valid output schema."},
	{"output-required-unknown", "A required outputSchema property is declared by no subschema."},
	{"schema-invalid", "A schema keyword is not valid in the schema's dialect."},
	{"schema-unsupported", "A \"$schema\" other than draft-07 or 2020-12."},
	{"x-mcp-header-invalid", "An x-mcp-header annotation clients must refuse."},
	{"duplicate-name", "A tool name seen before in the listing."},
	{"no-tools", "A complete listing with no tool."},
	{"result-invalid", "A page is not an object with a \"tools\" array."},
	{"cursor-loop", "A page's nextCursor repeats an earlier page's."},
	{"result-type-missing", "A page's resultType is absent or not \"complete\"."},
	{"cache-fields-missing", "A page's ttlMs or cacheScope is missing or invalid."},
	{"name-format", "A tool name outside 1-128 of [A-Za-z0-9_.-]."},
	{"description-short", "A tool description under 12 characters."},
	{"param-untyped", "A parameter without a type."},
	{"param-undescribed", "A parameter without a description."},
	{"schema-unchecked", "A schema that could not be checked in full."},
	{"tool-removed", "A baseline tool is gone."},
	{"param-removed", "An inputSchema property of the baseline is gone."},
	{"param-now-required", "A parameter is newly required."},
	{"param-type-changed", "A parameter accepts fewer types than in the baseline."},
	{"enum-value-removed", "A value left a parameter's enum."},
	{"output-property-removed", "An outputSchema property is gone or no longer required."},
	{"output-type-changed", "The output may now have a type it could not have before."},
	{"hint-weakened", "The tool's annotations look less safe than in the baseline."},
	{"tool-added", "A new tool."},
	{"param-added", "A new optional parameter."},
	{"enum-value-added", "A value joined an enum."},
	{"description-changed", "A tool's or a parameter's description changed."},
	{"annotations-changed", "A tool's annotations changed."},
};

void report_rule_of(const struct report *r, const char *code, struct report_rule *out)
{
	for (size_t i = 0; i < r->nrules; i++) {
		if (strcmp(r->rules[i].code, code) == 0) {
			*out = r->rules[i];
			return;
		}
	}
	out->code = (char *)(uintptr_t)code;
	out->short_desc = out->help = NULL;
	out->level = REPORT_LEVEL_ERROR;
	const char *kind = drift_code_kind(code), *rule = contract_code_rule(code);
	if (kind)
		out->level = strcmp(kind, "breaking") == 0 ? REPORT_LEVEL_ERROR : REPORT_LEVEL_NOTE;
	else if (rule)
		out->level = strcmp(rule, "warning") == 0 ? REPORT_LEVEL_WARNING : REPORT_LEVEL_ERROR;
	for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++) {
		if (strcmp(builtin[i].code, code) == 0) {
			/* Static strings, never freed: the struct's fields are only
			 * owned inside r->rules. */
			out->short_desc = out->help = (char *)(uintptr_t)builtin[i].short_desc;
			return;
		}
	}
}

/* ---- verdict and the command's own renderings -------------------------------- */

static int set_str(char **dst, const char *s)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		return -1;
	free(*dst);
	*dst = d;
	return 0;
}

int report_set_result(struct report *r, int exit_code, const char *summary)
{
	r->exit_code = exit_code;
	return set_str(&r->summary, summary);
}

int report_set_error(struct report *r, const char *why)
{
	r->exit_code = CLI_EXIT_ERROR;
	return set_str(&r->error, why ? why : "error");
}

int report_set_text(struct report *r, const char *text)
{
	return set_str(&r->text, text);
}

int report_set_json(struct report *r, json_t *j)
{
	json_decref(r->json);
	r->json = json_incref(j);
	r->json_none = j == NULL;
	return 0;
}

/* The generic text form (a command without its own). */
static int write_text(const struct report *r, FILE *f)
{
	if (r->error)
		fprintf(f, "mcpwarden %s: %s\n", r->command, r->error);
	for (size_t i = 0; i < r->ncases; i++) {
		const struct report_case *c = &r->cases[i];
		fprintf(f, "  %-7s %s%s%s\n", report_status_name(c->status), c->name,
		        c->message ? ": " : "", c->message ? c->message : "");
	}
	for (size_t i = 0; i < r->nitems; i++) {
		const struct report_item *it = &r->items[i];
		fprintf(f, "  %-7s %s%s%s%s: %s\n", report_level_name(it->level), it->code,
		        it->tool ? " tool \"" : "", it->tool ? it->tool : "", it->tool ? "\"" : "",
		        it->message);
	}
	if (r->summary)
		fprintf(f, "%s\n", r->summary);
	return 0;
}

static json_t *generic_json(const struct report *r)
{
	json_t *cases = json_array(), *items = json_array();
	for (size_t i = 0; cases && i < r->ncases; i++) {
		const struct report_case *c = &r->cases[i];
		json_array_append_new(cases, json_pack("{s:s,s:s,s:s,s:s?}", "suite", c->suite, "name",
		                                       c->name, "status", report_status_name(c->status),
		                                       "message", c->message));
	}
	for (size_t i = 0; items && i < r->nitems; i++) {
		const struct report_item *it = &r->items[i];
		json_t *o = json_pack("{s:s,s:s,s:s,s:s?,s:s?,s:s?}", "code", it->code, "level",
		                      report_level_name(it->level), "message", it->message, "tool",
		                      it->tool, "file", it->file, "pointer", it->pointer);
		if (o && it->line)
			json_object_set_new(o, "line", json_integer(it->line));
		json_array_append_new(items, o);
	}
	json_t *j = json_pack("{s:s,s:s?,s:s?,s:o,s:o,s:b,s:i}", "command", r->command, "summary",
	                      r->summary, "error", r->error, "cases", cases ? cases : json_null(),
	                      "findings", items ? items : json_null(), "passed",
	                      r->exit_code == CLI_EXIT_PASS, "exit", r->exit_code);
	return j;
}

int report_put_json(FILE *f, const json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!s)
		return -1;
	fputs(s, f);
	fputc('\n', f);
	free(s);
	return 0;
}

static int render(const struct report *r, enum report_fmt fmt, FILE *f)
{
	switch (fmt) {
	case REPORT_FMT_TEXT:
		if (r->text) {
			fputs(r->text, f);
			return 0;
		}
		return write_text(r, f);
	case REPORT_FMT_JSON: {
		if (r->json_none)
			return 0;
		json_t *j = r->json ? json_incref(r->json) : generic_json(r);
		int rc = j ? report_put_json(f, j) : -1;
		json_decref(j);
		return rc;
	}
	case REPORT_FMT_JUNIT: return report_write_junit(r, f);
	case REPORT_FMT_SARIF: return report_write_sarif(r, f);
	case REPORT_FMT_GITHUB: return report_write_github(r, f);
	case REPORT_FMT_MARKDOWN: return report_write_markdown(r, f);
	}
	return -1;
}

int report_write(const struct report *r, enum report_fmt fmt, FILE *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return -1;
	int rc = render(r, fmt, m);
	if (fclose(m) != 0)
		rc = -1;
	if (rc == 0)
		cli_emit(r->sec, f, buf);
	free(buf);
	return rc == 0 && !ferror(f) ? 0 : -1;
}

/* ---- --format FMT[=FILE] ------------------------------------------------------ */

int report_format_parse(const char *arg, struct report_out *out, const char **why)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	for (size_t i = 0; i < sizeof fmt_names / sizeof *fmt_names; i++) {
		if (strlen(fmt_names[i]) == n && strncmp(arg, fmt_names[i], n) == 0) {
			if (eq && !eq[1]) {
				*why = "--format FMT=FILE wants a file name after '='";
				return -1;
			}
			out->fmt = (enum report_fmt)i;
			out->file = eq ? eq + 1 : NULL;
			return 0;
		}
	}
	*why = "--format wants text, json, junit, sarif, github or markdown (FMT or FMT=FILE)";
	return -1;
}

int report_outs_add(struct report_outs *o, const char *arg, const char **why)
{
	struct report_out out;
	if (report_format_parse(arg, &out, why) < 0)
		return -1;
	if (o->n >= REPORT_MAX_OUTS) {
		*why = "too many --format options";
		return -1;
	}
	for (size_t i = 0; i < o->n; i++) {
		if (!out.file && !o->v[i].file) {
			*why = "at most one --format on stdout (give the others =FILE)";
			return -1;
		}
		if (out.file && o->v[i].file && strcmp(out.file, o->v[i].file) == 0) {
			*why = "two --format options name the same file";
			return -1;
		}
	}
	o->v[o->n++] = out;
	return 0;
}

int report_outs_has(const struct report_outs *o, enum report_fmt fmt)
{
	if (o->n == 0)
		return fmt == REPORT_FMT_TEXT;
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].fmt == fmt)
			return 1;
	return 0;
}

int report_outs_rich(const struct report_outs *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].fmt != REPORT_FMT_TEXT && o->v[i].fmt != REPORT_FMT_JSON)
			return 1;
	return 0;
}

static int write_file(const struct report *r, const struct report_out *out, const char *prefix)
{
	FILE *f = fopen(out->file, "w");
	if (!f) {
		fprintf(stderr, "%s: --format %s: cannot write %s: %s\n", prefix,
		        report_fmt_name(out->fmt), out->file, strerror(errno));
		return -1;
	}
	int rc = report_write(r, out->fmt, f);
	if (fclose(f) != 0)
		rc = -1;
	if (rc < 0)
		fprintf(stderr, "%s: --format %s: writing %s failed\n", prefix,
		        report_fmt_name(out->fmt), out->file);
	return rc;
}

int report_outs_write(const struct report_outs *o, const struct report *r, const char *prefix)
{
	if (o->n == 0)
		return report_write(r, REPORT_FMT_TEXT, stdout);
	int rc = 0;
	for (size_t i = 0; i < o->n; i++) {
		if (o->v[i].file)
			rc |= write_file(r, &o->v[i], prefix);
		else if (report_write(r, o->v[i].fmt, stdout) < 0)
			rc = -1;
	}
	return rc ? -1 : 0;
}

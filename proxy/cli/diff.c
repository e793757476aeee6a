/* diff: see diff.h. */
#include "proxy/cli/diff.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checks/contract.h"
#include "checks/drift.h"
#include "proxy/base/sbuf.h"
#include "proxy/cli/cli_out.h"
#include "proxy/cli/report.h"

static const char diff_usage[] =
	"usage: mcpwarden diff OLD NEW [--json]\n"
	"                      [--format text|json|junit|sarif|github|markdown[=FILE]]...\n"
	"\n"
	"Compares two saved tool listings ({\"tools\":[...]}, a tools/list response or\n"
	"an array). Exit status: 0 no breaking change, 1 breaking changes, 2 bad usage.\n";

/* ---- schemas that broke ----------------------------------------------------
 *
 * The baseline diff reads schemas for what they promise; a schema that
 * stops being usable promises nothing, and clients that validate refuse
 * the tool. So a tool of NEW with one of these contract findings that the
 * same-named tool of OLD did not have (same code at the same place in the
 * tool) is a breaking change too, under the contract's code. The contract
 * runs without an era (valid in draft-07 or in 2020-12 is valid, a
 * "$schema" decides). */
/* json_array_extend takes json_t * but only reads the other array. */
static json_t *mut_json(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

static const char *const schema_codes[] = {"schema-invalid", "schema-unsupported",
                                           "output-required-unknown"};

static int is_schema_code(const char *code)
{
	for (size_t k = 0; k < sizeof schema_codes / sizeof *schema_codes; k++)
		if (strcmp(code, schema_codes[k]) == 0)
			return 1;
	return 0;
}

/* The pointer below the tool ("/tools/3/inputSchema/x" -> "/inputSchema/x"). */
static const char *in_tool(const char *pointer)
{
	const char *p = strncmp(pointer, "/tools/", 7) == 0 ? pointer + 7 : pointer;
	while (*p >= '0' && *p <= '9')
		p++;
	return p;
}

static int had_before(const struct contract_report *old, const struct contract_finding *f)
{
	for (size_t i = 0; i < contract_report_nfindings(old); i++) {
		const struct contract_finding *o = contract_report_finding(old, i);
		if (o->tool != NULL && strcmp(o->tool, f->tool) == 0 && strcmp(o->code, f->code) == 0 &&
		    strcmp(in_tool(o->pointer), in_tool(f->pointer)) == 0)
			return 1;
	}
	return 0;
}

/* The schema findings of NEW that OLD did not have, as change objects
 * {"code","kind":"breaking","tool","pointer","message"} in a new array
 * (owned), NULL when memory runs out. */
static json_t *schemas_broken(const json_t *old_tools, const json_t *new_tools)
{
	const json_t *po[1] = {old_tools}, *pn[1] = {new_tools};
	struct contract_report *ro = contract_check(po, 1, NULL);
	struct contract_report *rn = contract_check(pn, 1, NULL);
	json_t *out = ro && rn ? json_array() : NULL;
	for (size_t i = 0; out != NULL && i < contract_report_nfindings(rn); i++) {
		const struct contract_finding *f = contract_report_finding(rn, i);
		if (f->tool == NULL || f->list_level || !is_schema_code(f->code) || had_before(ro, f))
			continue;
		json_t *c = json_pack("{s:s,s:s,s:s,s:s,s:s}", "code", f->code, "kind", "breaking",
		                      "tool", f->tool, "pointer", f->pointer, "message", f->message);
		if (c == NULL || json_array_append_new(out, c) < 0) {
			json_decref(out);
			out = NULL;
		}
	}
	contract_report_free(ro);
	contract_report_free(rn);
	return out;
}

/* drift's JSON report with the broken schemas (borrowed) added to its
 * changes and breaking count; NULL when memory runs out. */
static json_t *diff_json(const struct drift_report *d, const json_t *broken)
{
	json_t *j = drift_report_json(d);
	json_t *changes = json_object_get(j, "changes");
	if (j == NULL || !json_is_array(changes) || json_array_extend(changes, mut_json(broken)) < 0 ||
	    json_object_set_new(j, "breaking",
	                        json_integer((json_int_t)(drift_report_nbreaking(d) +
	                                                  json_array_size(broken)))) < 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* The text lines of the broken schemas, in drift_report_text's form. */
static void print_broken(FILE *out, const json_t *broken)
{
	if (json_array_size(broken) == 0)
		return;
	fprintf(out, "schemas: %zu newly broken\n", json_array_size(broken));
	char q[72], p[256];
	for (size_t i = 0; i < json_array_size(broken); i++) {
		const json_t *c = json_array_get(broken, i);
		/* Names and pointers come from the file: one line each, bounded. */
		fprintf(out, "  %-8s %s tool \"%s\" at %s: %s\n", "breaking",
		       json_string_value(json_object_get(c, "code")),
		       sbuf_quote(q, sizeof q, json_string_value(json_object_get(c, "tool")), 64),
		       sbuf_quote(p, sizeof p, json_string_value(json_object_get(c, "pointer")), sizeof p - 4),
		       json_string_value(json_object_get(c, "message")));
	}
}

/* ---- the CI formats (report.h) --------------------------------------------- */

static int tool_broke(const struct drift_report *d, const json_t *broken, const char *name)
{
	if (drift_tool_broke(d, name))
		return 1;
	for (size_t i = 0; i < json_array_size(broken); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(broken, i), "tool")), name) == 0)
			return 1;
	return 0;
}

/* One case per tool of NEW (failing when it broke) and per tool removed;
 * one finding per change, located in NEW, or in OLD for what NEW lacks. */
static int diff_findings(struct report *rep, const struct drift_report *d, const json_t *broken,
                         const char *files[2], const json_t *docs[2])
{
	const json_t *nt = drift_tools_of(docs[1]);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < json_array_size(nt) && i < DRIFT_MAX_TOOLS; i++) {
		const char *name = json_string_value(json_object_get(json_array_get(nt, i), "name"));
		if (name)
			rc = report_add_case(rep, files[1], name,
			                     tool_broke(d, broken, name) ? REPORT_FAIL : REPORT_PASS, -1, NULL);
	}
	struct cli_listing_text lt[2] = {{0}, {0}};
	cli_listing_text_load(&lt[0], files[0], docs[0]);
	cli_listing_text_load(&lt[1], files[1], docs[1]);
	size_t nd = drift_report_nchanges(d);
	for (size_t i = 0; rc == 0 && i < nd + json_array_size(broken); i++) {
		const struct drift_change *c = i < nd ? drift_report_change(d, i) : NULL;
		const json_t *b = c ? NULL : json_array_get(broken, i - nd);
		struct report_finding f = {
			.code = c ? c->code : json_string_value(json_object_get(b, "code")),
			.message = c ? c->message : json_string_value(json_object_get(b, "message")),
			.tool = c ? c->tool : json_string_value(json_object_get(b, "tool")),
			.pointer = c ? c->pointer : json_string_value(json_object_get(b, "pointer")),
			.breaking = c ? c->breaking : 1,
		};
		f.level = f.breaking ? REPORT_LEVEL_ERROR : REPORT_LEVEL_NOTE;
		cli_listing_locate(&lt[cli_change_in_old(f.code, f.message) ? 0 : 1], f.pointer, NULL, &f);
		if (c && strcmp(c->code, "tool-removed") == 0)
			rc = report_add_case(rep, files[1], c->tool, REPORT_FAIL, -1,
			                     "removed since OLD");
		if (rc == 0)
			rc = report_add_finding(rep, &f);
	}
	cli_listing_text_fini(&lt[0]);
	cli_listing_text_fini(&lt[1]);
	return rc;
}

/* The text report (owned string), NULL when out of memory. */
static char *diff_text(const struct drift_report *d, const json_t *broken, const char *verdict)
{
	char *t = drift_report_text(d), *buf = NULL;
	size_t len = 0;
	FILE *out = t ? open_memstream(&buf, &len) : NULL;
	if (out) {
		fputs(t, out);
		print_broken(out, broken);
		fprintf(out, "%s\n", verdict);
		if (fclose(out) != 0) {
			free(buf);
			buf = NULL;
		}
	}
	free(t);
	return buf;
}

/* Builds every requested form of the diff into rep. Returns the exit code. */
static int diff_report(struct report *rep, const struct report_outs *outs,
                       const struct drift_report *d, const json_t *broken, const char *files[2],
                       const json_t *docs[2])
{
	int nbreaking = drift_report_nbreaking(d) > 0 || json_array_size(broken) > 0;
	int rc = nbreaking ? CLI_EXIT_FAIL : CLI_EXIT_PASS;
	const char *verdict = nbreaking ? "FAILED: breaking changes" : "PASSED: no breaking change";
	if (report_outs_has(outs, REPORT_FMT_JSON)) {
		json_t *j = diff_json(d, broken);
		if (!j)
			return CLI_EXIT_ERROR;
		report_set_json(rep, j);
		json_decref(j);
	}
	if (report_outs_has(outs, REPORT_FMT_TEXT)) {
		char *t = diff_text(d, broken, verdict);
		int bad = !t || report_set_text(rep, t) < 0;
		free(t);
		if (bad)
			return CLI_EXIT_ERROR;
	}
	if (report_outs_rich(outs) && diff_findings(rep, d, broken, files, docs) < 0)
		return CLI_EXIT_ERROR;
	report_set_result(rep, rc, verdict);
	return rc;
}

int diff_main(int argc, char **argv)
{
	const char *files[2] = {NULL, NULL};
	int json = 0, nf = 0;
	struct report_outs outs = {0};
	const char *why;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--format") == 0) {
			why = "--format needs a value";
			if (i + 1 >= argc || report_outs_add(&outs, argv[++i], &why) < 0) {
				fprintf(stderr, "mcpwarden diff: %s\n", why);
				return CLI_EXIT_ERROR;
			}
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(diff_usage, stdout);
			return CLI_EXIT_PASS;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "mcpwarden diff: unknown option %s\n%s", argv[i], diff_usage);
			return CLI_EXIT_ERROR;
		} else if (nf < 2) {
			files[nf++] = argv[i];
		} else {
			fprintf(stderr, "mcpwarden diff: two files, OLD and NEW\n%s", diff_usage);
			return CLI_EXIT_ERROR;
		}
	}
	if (nf != 2) {
		fprintf(stderr, "mcpwarden diff: two files, OLD and NEW\n%s", diff_usage);
		return CLI_EXIT_ERROR;
	}
	if (json && report_outs_add(&outs, "json", &why) < 0) {
		fprintf(stderr, "mcpwarden diff: --json: %s\n", why);
		return CLI_EXIT_ERROR;
	}
	json_t *old_doc = cli_load_listing(files[0], "OLD");
	json_t *new_doc = old_doc ? cli_load_listing(files[1], "NEW") : NULL;
	if (!old_doc || !new_doc) {
		json_decref(old_doc);
		return CLI_EXIT_ERROR;
	}
	struct drift_report *d = drift_diff(drift_tools_of(old_doc), drift_tools_of(new_doc));
	json_t *broken = d ? schemas_broken(drift_tools_of(old_doc), drift_tools_of(new_doc)) : NULL;
	struct report *rep = report_new("diff", REPORT_MCPWARDEN_VERSION);
	const json_t *docs[2] = {old_doc, new_doc};
	int rc = d && broken && rep ? diff_report(rep, &outs, d, broken, files, docs) : CLI_EXIT_ERROR;
	if (rc == CLI_EXIT_ERROR)
		fprintf(stderr, "mcpwarden diff: out of memory\n");
	else if (report_outs_write(&outs, rep, "mcpwarden diff") < 0)
		rc = CLI_EXIT_ERROR;
	report_free(rep);
	drift_report_free(d);
	json_decref(broken);
	json_decref(old_doc);
	json_decref(new_doc);
	fflush(stdout);
	return rc;
}

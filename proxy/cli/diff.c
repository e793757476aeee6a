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

static const char diff_usage[] =
	"usage: mcpwarden diff OLD NEW [--json]\n"
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
static void print_broken(const json_t *broken)
{
	if (json_array_size(broken) == 0)
		return;
	printf("schemas: %zu newly broken\n", json_array_size(broken));
	char q[72], p[256];
	for (size_t i = 0; i < json_array_size(broken); i++) {
		const json_t *c = json_array_get(broken, i);
		/* Names and pointers come from the file: one line each, bounded. */
		printf("  %-8s %s tool \"%s\" at %s: %s\n", "breaking",
		       json_string_value(json_object_get(c, "code")),
		       sbuf_quote(q, sizeof q, json_string_value(json_object_get(c, "tool")), 64),
		       sbuf_quote(p, sizeof p, json_string_value(json_object_get(c, "pointer")), sizeof p - 4),
		       json_string_value(json_object_get(c, "message")));
	}
}

int diff_main(int argc, char **argv)
{
	const char *files[2] = {NULL, NULL};
	int json = 0, nf = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
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
	json_t *old_doc = cli_load_listing(files[0], "OLD");
	json_t *new_doc = old_doc ? cli_load_listing(files[1], "NEW") : NULL;
	if (!old_doc || !new_doc) {
		json_decref(old_doc);
		return CLI_EXIT_ERROR;
	}
	struct drift_report *d = drift_diff(drift_tools_of(old_doc), drift_tools_of(new_doc));
	json_t *broken = d ? schemas_broken(drift_tools_of(old_doc), drift_tools_of(new_doc)) : NULL;
	int rc = CLI_EXIT_ERROR;
	if (d && broken) {
		int nbreaking = drift_report_nbreaking(d) > 0 || json_array_size(broken) > 0;
		rc = nbreaking ? CLI_EXIT_FAIL : CLI_EXIT_PASS;
		if (json) {
			json_t *j = diff_json(d, broken);
			if (j)
				cli_emit_json(NULL, stdout, j);
			else
				rc = CLI_EXIT_ERROR;
			json_decref(j);
		} else {
			char *t = drift_report_text(d);
			if (t) {
				fputs(t, stdout);
				print_broken(broken);
				printf("%s\n", rc == CLI_EXIT_FAIL ? "FAILED: breaking changes"
				                               : "PASSED: no breaking change");
			} else {
				rc = CLI_EXIT_ERROR;
			}
			free(t);
		}
	} else {
		fprintf(stderr, "mcpwarden diff: out of memory\n");
	}
	drift_report_free(d);
	json_decref(broken);
	json_decref(old_doc);
	json_decref(new_doc);
	fflush(stdout);
	return rc;
}

/* diff: see diff.h. */
#include "proxy/cli/diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checks/drift.h"
#include "proxy/cli/cli_out.h"

static const char diff_usage[] =
	"usage: mcpwarden diff OLD NEW [--json]\n"
	"\n"
	"Compares two saved tool listings ({\"tools\":[...]}, a tools/list response or\n"
	"an array). Exit status: 0 no breaking change, 1 breaking changes, 2 bad usage.\n";

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
	int rc = CLI_EXIT_ERROR;
	if (d) {
		rc = drift_report_nbreaking(d) ? CLI_EXIT_FAIL : CLI_EXIT_PASS;
		if (json) {
			json_t *j = drift_report_json(d);
			if (j)
				cli_emit_json(NULL, stdout, j);
			else
				rc = CLI_EXIT_ERROR;
			json_decref(j);
		} else {
			char *t = drift_report_text(d);
			if (t) {
				fputs(t, stdout);
				printf("%s\n", rc == CLI_EXIT_FAIL ? "FAILED: breaking changes"
				                               : "PASSED: no breaking change");
			} else {
				rc = CLI_EXIT_ERROR;
			}
			free(t);
		}
		drift_report_free(d);
	} else {
		fprintf(stderr, "mcpwarden diff: out of memory\n");
	}
	json_decref(old_doc);
	json_decref(new_doc);
	fflush(stdout);
	return rc;
}

/* report_model: the report's insides, shared by report.c and its writers
 * (report_junit.c, report_sarif.c, report_md.c). Nothing else includes
 * this: everyone else sees the opaque struct report of report.h. */
#ifndef MCPWARDEN_REPORT_MODEL_H
#define MCPWARDEN_REPORT_MODEL_H

#include <stdio.h>

#include <jansson.h>

#include "proxy/cli/report_types.h"

struct cli_secrets;

#define REPORT_MAX_CASES    4096
#define REPORT_MAX_FINDINGS 8192
#define REPORT_MAX_RULES    256

struct report_case {
	char *suite, *name; /* owned */
	char *message;      /* owned, may be NULL */
	enum report_status status;
	double duration_s;  /* < 0: unknown */
};

/* A finding as kept: struct report_finding with owned copies. */
struct report_item {
	char *code, *message, *tool, *suite, *file, *pointer; /* owned; all but code and
	                                                         message may be NULL */
	enum report_level level;
	int breaking;
	int line, column;
};

struct report_rule {
	char *code, *short_desc, *help; /* owned */
	enum report_level level;
};

struct report {
	char *command, *version;          /* owned */
	const struct cli_secrets *sec;    /* borrowed, may be NULL */
	struct report_case *cases;        /* owned array */
	size_t ncases, cases_cap;
	struct report_item *items;        /* owned array */
	size_t nitems, items_cap, dropped;
	struct report_rule rules[REPORT_MAX_RULES];
	size_t nrules;
	int exit_code;
	char *summary;                    /* owned, may be NULL */
	char *error;                      /* owned: could not run, NULL otherwise */
	char *text;                       /* owned: the command's text, may be NULL */
	json_t *json;                     /* owned reference, may be NULL */
	int json_none;                    /* 1: the command writes no JSON */
};

/* The rule of code: the described one, else the built-in one (static
 * strings), else a generic one. Never NULL. */
void report_rule_of(const struct report *r, const char *code, struct report_rule *out);

/* The writers: each renders r into f (a memory stream; report_write masks
 * the secrets afterwards). Return 0 or -1. */
int report_write_junit(const struct report *r, FILE *f);
int report_write_sarif(const struct report *r, FILE *f);
int report_write_github(const struct report *r, FILE *f);
int report_write_markdown(const struct report *r, FILE *f);

/* j indented in key order, then a newline (cli_emit_json's form). */
int report_put_json(FILE *f, const json_t *j);

/* "error", "warning", "note". */
const char *report_level_name(enum report_level l);
/* "pass", "fail", "error", "skipped". */
const char *report_status_name(enum report_status s);

#endif

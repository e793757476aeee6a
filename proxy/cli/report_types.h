/* report_types: the plain types of report.h (formats, verdicts, levels, a
 * finding as given, the --format outputs), apart so that report_model.h
 * (the report's insides, for its writers) needs no report.h. Include
 * report.h, not this. */
#ifndef MCPWARDEN_REPORT_TYPES_H
#define MCPWARDEN_REPORT_TYPES_H

#include <stddef.h>

#define REPORT_MAX_OUTS 8 /* --format options per command */

enum report_fmt {
	REPORT_FMT_TEXT,
	REPORT_FMT_JSON,
	REPORT_FMT_JUNIT,
	REPORT_FMT_SARIF,
	REPORT_FMT_GITHUB,
	REPORT_FMT_MARKDOWN,
};

/* A case's verdict: JUnit passed / <failure> / <error> / <skipped>. */
enum report_status {
	REPORT_PASS,
	REPORT_FAIL,    /* judged, and found wanting */
	REPORT_ERROR,   /* could not be judged (no answer, transport error) */
	REPORT_SKIPPED, /* not run on purpose (e.g. the policy refused it) */
};

/* SARIF's levels; GitHub ::error / ::warning / ::notice. */
enum report_level {
	REPORT_LEVEL_ERROR,
	REPORT_LEVEL_WARNING,
	REPORT_LEVEL_NOTE,
};

/* One finding as given to report_add_finding; every string is borrowed
 * for the call only (the report keeps copies). */
struct report_finding {
	const char *code;     /* rule id, required */
	enum report_level level;
	int breaking;         /* 1: a breaking change (Markdown lists these first) */
	const char *message;  /* one line, required */
	const char *tool;     /* the tool it is about, NULL for the listing */
	const char *suite;    /* the case's suite when several, NULL: the first */
	const char *file;     /* artifact (as given on the command line), NULL: none */
	const char *pointer;  /* RFC 6901, as the command prints it (into the
	                         listing: "/tools/3/name"), NULL: none */
	int line, column;     /* 1-based in file, 0: unknown (column counts
	                         Unicode code points) */
};

struct report_out {
	enum report_fmt fmt;
	const char *file; /* borrowed from argv; NULL: stdout */
};

/* The --format options of one command. Not opaque: commands embed it by
 * value, zero-initialised. */
struct report_outs {
	struct report_out v[REPORT_MAX_OUTS];
	size_t n;
};

#endif

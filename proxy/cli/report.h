/* report: the format-neutral result of a CLI command (check, diff, replay)
 * and its writers for every CI's format (issue 21, item 4).
 *
 * A command builds one report: the cases it judged (one per tool: JUnit's
 * test cases, the Markdown table's rows), the findings (code = the stable
 * rule id, level, message, the tool, and where: a file with a JSON Pointer
 * and a 1-based line/column when known), and its verdict. report_write()
 * renders it as
 *
 *   text, json  the command's own rendering handed over with
 *               report_set_text/report_set_json (check and diff keep
 *               their historic bytes); without one, a plain generic form
 *   junit       JUnit XML: testsuites/testsuite (one per suite)/testcase
 *               (one per case) with failure/error/skipped
 *   sarif       SARIF 2.1.0: one run, tool.driver.rules[] (id = code) and
 *               results with ruleId/ruleIndex, locations (physical when a
 *               file is known, logical = the tool), partialFingerprints
 *   github      GitHub workflow commands, one ::error/::warning/::notice
 *               line per finding (file=,line=,col=,title=CODE)
 *   markdown    for $GITHUB_STEP_SUMMARY: a summary line, a table of the
 *               cases with their verdicts, the findings (breaking first)
 *
 * Output is deterministic: order is the order things were added, no
 * timestamps, no absolute paths beyond what the command gave. Every
 * writer masks the secrets given with report_set_secrets (cli_out.h).
 *
 * Not here: running anything, argument parsing beyond --format's value
 * (report_outs_add), what a finding means (the command decides).
 */
#ifndef MCPWARDEN_REPORT_H
#define MCPWARDEN_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "proxy/cli/report_types.h"

struct cli_secrets; /* cli_out.h */

/* main.c's MCPWARDEN_VERSION (the commands cannot see main.c): keep equal. */
#define REPORT_MCPWARDEN_VERSION "0.1.0"

struct report;

/* A new, empty report for `command` ("check", "diff", "replay") of
 * mcpwarden `version` (both borrowed, copied). NULL when out of memory. */
struct report *report_new(const char *command, const char *version);
void report_free(struct report *r); /* accepts NULL */

/* The values never to print (borrowed: must outlive the report). */
void report_set_secrets(struct report *r, const struct cli_secrets *sec);

/* Adds a case (JUnit test case, a row of the Markdown table): suite is
 * the upstream URL shown or the file name, name the tool. duration_s < 0:
 * unknown. message may be NULL (for a failure: the case's findings speak).
 * Returns 0, -1 when out of memory or past the caps. */
int report_add_case(struct report *r, const char *suite, const char *name,
                    enum report_status status, double duration_s, const char *message);

/* Adds a finding (copied). Returns 0, -1 when out of memory or past the
 * caps (the count of dropped findings is kept and shown). */
int report_add_finding(struct report *r, const struct report_finding *f);

/* Describes a rule for SARIF's rules[] and the help text; codes without a
 * description get the built-in one for contract and drift codes
 * (checks/contract.h, checks/drift.h), else a generic one. Copied.
 * Returns 0 or -1. */
int report_describe_rule(struct report *r, const char *code, enum report_level level,
                         const char *short_desc, const char *help);

/* The command's verdict: exit code (enum cli_exit) and one summary line
 * ("FAILED: 2 problems, 1 breaking change"). Copied. */
int report_set_result(struct report *r, int exit_code, const char *summary);
/* The command could not run (exit 2): why (copied). JUnit writes one
 * <error> case, SARIF executionSuccessful false with a notification. */
int report_set_error(struct report *r, const char *why);

/* The command's own text and JSON renderings (text copied; j borrowed,
 * a reference is taken). "" writes no text; j NULL writes no JSON (a
 * command that reports a failure on stderr only). Without either call the
 * generic forms are written. */
int report_set_text(struct report *r, const char *text);
int report_set_json(struct report *r, json_t *j);

/* Writes r as fmt to f. Returns 0, -1 on a write error or out of memory. */
int report_write(const struct report *r, enum report_fmt fmt, FILE *f);

/* ---- --format FMT[=FILE] ---------------------------------------------------- */

/* Parses "sarif" or "sarif=out.sarif" (arg borrowed). Returns 0, or -1
 * with *why set (static). */
int report_format_parse(const char *arg, struct report_out *out, const char **why);
/* report_format_parse, then adds it: at most one output on stdout, never
 * the same file twice, at most REPORT_MAX_OUTS. -1 with *why (static). */
int report_outs_add(struct report_outs *o, const char *arg, const char **why);
/* 1 when fmt is among o's outputs (or o is empty and fmt is text). */
int report_outs_has(const struct report_outs *o, enum report_fmt fmt);
/* 1 when o asks for anything but text and json (locations are needed). */
int report_outs_rich(const struct report_outs *o);
/* Writes r to every output of o (text on stdout when o is empty). Files
 * are written whole (created, or truncated). Returns 0, or -1 after
 * printing why on stderr (prefix e.g. "mcpwarden check"). */
int report_outs_write(const struct report_outs *o, const struct report *r, const char *prefix);

/* "text", "json", ... for fmt. Static. */
const char *report_fmt_name(enum report_fmt fmt);

#endif

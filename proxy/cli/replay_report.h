/* replay_report: a replay result (replay.h's JSON document) as a CLI report
 * (report.h), so that `mcpwarden replay --format junit|sarif|github|markdown`
 * speaks every CI's format: one case per tool (suite: the URL replayed
 * against), one finding per difference, located at the line of the capture
 * or dataset file it came from, rule ids = the replay codes
 * (replay_compare.h), each described once.
 *
 * Not here: running the replay (replay.c), judging (replay_compare.c).
 */
#ifndef MCPWARDEN_REPLAY_REPORT_H
#define MCPWARDEN_REPLAY_REPORT_H

#include <jansson.h>

struct cli_secrets;
struct report;

/* Builds the report of doc (borrowed). file names the capture as given on
 * the command line; text is replay's own text rendering (copied; NULL: the
 * generic one). sec is borrowed and must outlive the report. Returns an
 * owned report (report_free), or NULL when out of memory. */
struct report *replay_report_build(const json_t *doc, const char *file, const char *text,
                                   const struct cli_secrets *sec);

#endif

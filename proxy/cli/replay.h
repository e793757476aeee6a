/* replay: the `mcpwarden replay` command (issue 21, item 2): re-issues
 * the tools/calls of a capture file (docs/replay.md; the format is the
 * capture's, WAVE4) against a new build and reports, per call and per
 * tool, what changed; or runs a dataset (the same format, lines with
 * "expect") as contract tests.
 *
 *   mcpwarden replay FILE --against URL [--baseline-url URL] [--policy FILE]
 *                         [--rules FILE] [--header 'Name: value']...
 *                         [--timeout S] [--max-slowdown R]
 *                         [--format FMT[=FILE]]... [--json]
 *
 * Each captured session is re-created (initialize with its client info and
 * capabilities in its era; a null session is one stateless request, in the
 * 2026-07-28 per-request form) on check_client.h's client. Only calls the
 * policy allows are sent (default: the read-only preset the proxy ships,
 * conf/policy-read-only.json, judged on the new build's tools/list); the
 * rest are "skipped (policy)". Judging is replay_compare.h.
 *
 * Exit codes (cli_out.h): 0 nothing regressed, 1 something did, 2 could
 * not run (bad file with its line, unreachable, bad options).
 *
 * Output: replay_result() (replay.c) builds the whole result as one JSON
 * document (docs/replay.md, "Output"); text and json print it, and
 * replay_report.h turns it into the report every other --format writes
 * (report.h).
 */
#ifndef MCPWARDEN_REPLAY_H
#define MCPWARDEN_REPLAY_H

#include <jansson.h>

/* argv[0] is "replay" (main passes argv + 1). Returns the exit code. */
int replay_main(int argc, char **argv);

#endif

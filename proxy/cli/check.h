/* check: the `mcpwarden check` command (issue 4, item 4), for CI pipelines
 * and for people: a server's tool contract (checks/contract.h) and, with
 * --baseline, its breaking changes (checks/drift.h). docs/contract.md has
 * the usage, the JSON shapes and the exit codes. `mcpwarden diff` is
 * diff.h; the network client is check_client.h.
 *
 *   mcpwarden check URL [--transport auto|streamable_http|sse]
 *                       [--header 'Name: value']... [--protocol VERSION]
 *                       [--json] [--lenient] [--spec-only] [--baseline FILE]
 *                       [--save-baseline FILE] [--timeout S]
 *   mcpwarden check --tools-file FILE [--protocol VERSION] [--json]
 *                       [--lenient] [--spec-only] [--baseline FILE]
 *                       [--save-baseline FILE]
 *   both also [--format text|json|junit|sarif|github|markdown[=FILE]]...
 *   (report.h; --json is --format json)
 *
 * Exit codes: 0 passed; 1 the contract has problems or the baseline
 * breaking changes (--lenient: only breaking changes); 2 could not
 * connect, the server failed us, or the command was used wrongly.
 */
#ifndef MCPWARDEN_CHECK_H
#define MCPWARDEN_CHECK_H

/* argv[0] is "check" (main passes argv + 1). Returns the exit code. */
int check_main(int argc, char **argv);

#endif

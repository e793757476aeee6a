/* check_cmd: the `mcpwarden check` and `mcpwarden diff` commands (issue 4,
 * item 4), for CI pipelines and for people. docs/contract.md has the
 * usage, the JSON shapes and the exit codes.
 *
 *   mcpwarden check URL [--transport auto|streamable_http|sse]
 *                       [--header 'Name: value']... [--protocol VERSION]
 *                       [--json] [--lenient] [--spec-only] [--baseline FILE]
 *                       [--save-baseline FILE] [--timeout S]
 *   mcpwarden check --tools-file FILE [--protocol VERSION] [--json]
 *                       [--lenient] [--spec-only] [--baseline FILE]
 *                       [--save-baseline FILE]
 *   mcpwarden diff OLD NEW [--json]
 *
 * `check URL` runs its own event loop with the upstream module (so https
 * works wherever the proxy's upstreams do): it connects in the newest era
 * the server speaks (server/discover, then initialize; legacy HTTP+SSE as
 * a fallback), lists every page of tools, runs checks/contract.h (and
 * checks/drift.h against --baseline), prints the report and ends the
 * session (DELETE). Nothing blocks: no blocking sockets, one loop.
 *
 * Exit codes: 0 passed; 1 the contract has problems or the baseline
 * breaking changes (--lenient: only breaking changes); 2 could not
 * connect, the server failed us, or the command was used wrongly.
 */
#ifndef MCPWARDEN_CHECK_CMD_H
#define MCPWARDEN_CHECK_CMD_H

/* argv[0] is "check" (main passes argv + 1). Returns the exit code. */
int check_main(int argc, char **argv);

/* argv[0] is "diff". Returns the exit code. */
int diff_main(int argc, char **argv);

#endif

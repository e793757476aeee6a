/* status: the `mcpwarden status` command (issue 22, item 7): a running
 * mcpwarden at a glance, from its admin endpoint (admin/admin.h):
 * readiness (/readyz), each upstream's contract verdict and breaking
 * changes (/contract), and the busiest tools (the live contract's per-tool
 * counts on /contract, else the recent records of /calls).
 *
 *   mcpwarden status ADMIN_URL [--json] [--token TOKEN]
 *
 * Exit codes (enum cli_exit): 0 ready and every contract passing (an
 * upstream not checked yet does not fail), 1 not ready or a contract
 * failing, 2 unreachable, refused (401) or bad usage.
 *
 * status_summary is exported for the unit tests; the network half is
 * admin_client.h.
 */
#ifndef MCPWARDEN_STATUS_H
#define MCPWARDEN_STATUS_H

#include <jansson.h>

/* The summary of three replies (all borrowed; contract and calls may be
 * NULL when not served): a new object (owned, NULL when out of memory)
 *   {"ready", "draining", "upstreams": [{"upstream", "reachable",
 *    "error"?, "contract": "passed"|"failed"|"unchecked", "mode"?,
 *    "score"?, "problems", "breaking", "findings": [{"code", "tool"?,
 *    "message"?, "breaking"?}], "updated"?}], "busiest": [{"tool",
 *    "upstream", "calls"}], "busiest_from": "live"|"calls"|null, "exit"}
 * Members of /contract this version does not know are read defensively:
 * an object member of an upstream's entry holding "passed": false, a
 * positive "breaking" or breaking "changes" fails that contract too. */
json_t *status_summary(const json_t *readyz, const json_t *contract, const json_t *calls);

/* argv[0] is "status" (main passes argv + 1). Returns the exit code. */
int status_main(int argc, char **argv);

#endif

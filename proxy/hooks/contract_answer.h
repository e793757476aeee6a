/* contract_answer: how the contract hook's verdict on a listing reads: the
 * one log line per listing, the JSON-RPC error that replaces a refused
 * page, and the drift changes that count so far. Pure formatting of
 * checks/contract.h and checks/drift.h reports: no hook state, no lock.
 */
#ifndef MCPWARDEN_CONTRACT_ANSWER_H
#define MCPWARDEN_CONTRACT_ANSWER_H

#include <stddef.h>
#include <jansson.h>

struct contract_report;
struct drift_report;
struct inspect_msg;

/* What the hook did with the page, for the report and the log. */
struct contract_verdict {
	const char *action;   /* "forwarded", "filtered", "failed" */
	size_t nbreaking;     /* breaking changes that count now */
	int complete;         /* the last page of a listing seen from its start */
	int unexamined;       /* more tools than the checker examines */
	int passed;           /* no problem, no breaking change, all examined */
};

/* The changes that count now: all of them for a complete listing; before
 * the last page a tool missing from the pages seen so far may still come,
 * so tool-removed waits. Returns a new array (NULL when out of memory);
 * *nbreaking its breaking count. d may be NULL (none). */
json_t *contract_answer_changes(const struct drift_report *d, int complete, size_t *nbreaking);

/* The line logged for a listing of npages pages from `upstream` checked
 * in `mode` (its name): verdict, score, counts and the first codes, into
 * line (all but the "#<conn> " it is logged with). */
void contract_answer_line(const char *upstream, const char *mode, size_t npages,
                          const struct contract_report *r, const struct contract_verdict *v,
                          char *line, size_t cap);

/* Replaces m's result by the error of a refused page (JSON-RPC error
 * `code`, same id; m->modified set, m->reason := reason, a static string): the
 * message names each problem of r and breaking change of d (the first
 * ones; data lists them all) and extra, a reason of its own (NULL: none).
 * r and d may be NULL. Out of memory leaves m as it was. */
void contract_answer_failed(struct inspect_msg *m, int code, const char *upstream,
                            const char *reason, const struct contract_report *r,
                            const struct drift_report *d, int complete, const char *extra);

#endif

/* contract_view: one upstream's entry of GET /contract, the declared
 * contract (the contract hook's latest report) beside the live one (the
 * live contract's per-tool summary, proxy/hooks/hook_validate.h):
 *
 *   {"upstream": name, "updated": RFC 3339 or null, "report": {…} or null,
 *    "live": {"tool": {"calls", "arguments_invalid", "results",
 *                      "results_invalid", "last"}, …} or null}
 *
 * "live" is null without the live contract (or when its summary could not
 * be made), {} before it saw a call. Members are only ever added here:
 * readers of the older shape (upstream, updated, report) are unaffected.
 *
 * Pure: builds JSON from what the caller pulled; no I/O, no lock. Not
 * here: pulling (admin/admin.c ep_contract) and redaction (its caller). */
#ifndef MCPWARDEN_CONTRACT_VIEW_H
#define MCPWARDEN_CONTRACT_VIEW_H

#include <jansson.h>

/* A new object (owned; NULL when memory runs out, report and live then
 * released). name and updated borrowed (updated NULL: no report yet);
 * report and live stolen (NULL: null; a live that is not an object is
 * shown as null). */
json_t *contract_view_upstream(const char *name, const char *updated, json_t *report,
                               json_t *live);

/* ---- live baselines (issue 21) ----
 *
 * The "diff" member of an entry: the classified diff of the upstream's
 * latest listing against its baseline, breaking changes first (each group
 * in checks/drift.h's order), and what an accept would do:
 *
 *   "diff": {"baseline": file or null, "has_baseline": bool,
 *            "baseline_tools": N, "complete": bool, "gate": "passing"|
 *            "failing"|"unknown"|"off", "breaking": N, "notices": N,
 *            "changes": [{"code","kind","tool","pointer","message"}, …],
 *            "can_accept": bool, "listing_sha256": hex or null (the
 *            listing an accept would take: name it in the accept's body
 *            to take only that one),
 *            "accepted": {"time": RFC 3339, "by": "…"} or null}
 */
struct contract_view_baseline {
	int has_baseline;          /* a baseline is in force (file or accepted) */
	size_t baseline_tools;
	int can_accept;            /* a complete listing is there to accept */
	const char *listing_sha256; /* borrowed: its digest, NULL: none */
	const char *gate;          /* borrowed: hook_contract_gate_name() */
	const char *accepted_time; /* borrowed, NULL: never accepted */
	const char *accepted_by;   /* borrowed, NULL: never accepted */
};

/* A new "diff" object (owned; NULL when memory runs out) from report
 * (borrowed: the hook's latest report, NULL: none yet) and b. */
json_t *contract_view_diff(const json_t *report, const struct contract_view_baseline *b);

/* Adds diff (stolen) to entry as "diff". Returns 0, or -1 when either is
 * NULL or memory runs out (diff released; entry then released too). */
int contract_view_add_diff(json_t *entry, json_t *diff);

#endif

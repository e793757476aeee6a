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

#endif

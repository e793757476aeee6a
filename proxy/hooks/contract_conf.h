/* contract_conf: one upstream's "contract" section, checked and loaded
 *   {"mode": "report"|"filter"|"fail"|"off",   default "report"
 *    "baseline": "FILE",                 saved tool list, optional
 *    "spec_only": false,                 usability rules become warnings
 *    "profiles": ["sdk", ...]}           client profiles (issue 21), default none
 * for the contract hook (hook_contract.h says what each key does). No
 * hook state: also what --check-config runs.
 */
#ifndef MCPWARDEN_CONTRACT_CONF_H
#define MCPWARDEN_CONTRACT_CONF_H

#include <stddef.h>
#include <jansson.h>

enum contract_mode {
	CONTRACT_MODE_REPORT = 0, /* forward unchanged, report and log */
	CONTRACT_MODE_FILTER,     /* withhold the tools with a problem */
	CONTRACT_MODE_FAIL,       /* answer a failed listing with an error */
	CONTRACT_MODE_OFF,        /* not checked */
};

struct contract_conf {
	enum contract_mode mode;
	int spec_only;
	unsigned profiles;            /* client profiles (issue 21): PROFILE_* bits */
	const char *baseline_file;    /* borrowed from the section, or NULL */
	json_t *baseline;             /* owned: the loaded document, or NULL */
	const json_t *baseline_tools; /* borrowed from baseline */
};

/* "report", "filter", "fail" or "off". */
const char *contract_mode_name(enum contract_mode m);

/* Reads section (upstream i's "contract" member, NULL: none) into cf
 * (zeroed by the caller: report mode, no baseline) and loads its baseline
 * (a {"tools":[...]} document, a whole JSON-RPC response or a bare
 * array). Each error is added to err, located like
 * "$.upstreams[0].contract.mode: must be report, filter, fail or off",
 * and counted in *nerr. */
void contract_conf_load(struct contract_conf *cf, const json_t *section, size_t i, char *err,
                        size_t errlen, int *nerr);

/* Frees what cf owns and zeroes it. */
void contract_conf_clear(struct contract_conf *cf);

/* Live baselines (issue 21): doc (stolen: {"tools":[...]}) becomes cf's
 * baseline in place of the one it had (freed); baseline_file is kept. */
void contract_conf_set_baseline(struct contract_conf *cf, json_t *doc);

/* Appends one error line to err[0..errlen) (kept NUL-terminated; what
 * does not fit is dropped) and counts it in *nerr. err may be NULL. */
void contract_conf_error(char *err, size_t errlen, int *nerr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif

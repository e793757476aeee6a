/* hook_contract: the tool-list contract, checked live on every tools/list
 * reply that crosses the proxy (issue 4, item 2).
 *
 * A deciding hook on the inspect chain. It looks only at server -> client
 * responses whose request (same HTTP exchange) is tools/list, whether the
 * reply came as JSON or as one event of an SSE stream, and runs the pure
 * checkers of checks/contract.h and, when the upstream has a baseline,
 * checks/drift.h on it.
 *
 * Pagination. The pages of one listing are checked together: a page asked
 * without params.cursor starts a listing for (upstream, session); a page
 * asked with the cursor that the listing's last page named as nextCursor
 * continues it. Up to CONTRACT_MAX_PAGES pages are kept and re-checked as
 * one listing, so a duplicate name on page 3 of a tool on page 1 is seen,
 * and a nextCursor that repeats an earlier one is cursor-loop. A page
 * asked with a cursor no listing knows (its listing was evicted, or the
 * proxy restarted) is checked on its own and never counts as complete.
 * Until the last page arrives a listing is "not complete": no-tools and
 * the baseline's tool-removed wait for the end. The pages are kept by the
 * tools tracker's module (proxy/hooks/tools.h, "Listings as the upstream
 * sent them"), which says why that view is not the tracker's own.
 *
 * Modes, per upstream ("contract": {"mode": ...}):
 *   report  forward unchanged; log one line per listing (score, counts,
 *           first codes) and keep the report for hook_contract_report()
 *           and the admin page.
 *   filter  forward each page without the tools that have a problem or a
 *           breaking change; a listing that cannot be served honestly
 *           (cursor loop, more pages or tools than the checker examines)
 *           is answered as in fail mode.
 *   fail    a page whose listing has a problem or a breaking change is
 *           replaced by a JSON-RPC error (HOOK_CONTRACT_ERROR, same id)
 *           whose message names the problems and whose data lists them.
 *   off     not checked at all: no report, no log line (what the check
 *           costs is measured against this; tests/bench/listcheck.sh).
 *
 * Bounded memory: at most HOOK_CONTRACT_MAX_LISTINGS listings in progress
 * and HOOK_CONTRACT_MAX_BYTES bytes of kept pages (their size as received,
 * serialised when the transport does not say), the least recently used
 * listing evicted first; one report per upstream.
 *
 * Unchanged lists. Clients list tools again and again, and upstreams
 * mostly answer with the same bytes. A listing of one page (asked without
 * a cursor, answered without nextCursor) whose result is byte for byte the
 * upstream's previous one, in the same era, is not checked again: the
 * verdict kept from last time is replayed: the same log line, report
 * (with a new time), counters, and the same reply to the client (the
 * same tools withheld in filter mode, the same error in fail mode). The
 * bytes are compared whole (no hash to collide), one result of at most
 * VERDICT_CACHE_BYTES per upstream (proxy/hooks/verdict_cache.h, which
 * keeps it, says what it saves).
 *
 * Changed lists. A one-page listing whose bytes differ (of at most
 * VERDICT_CACHE_BYTES) is checked through the upstream's memo
 * (checks/contract.h, "Incremental checking"): only tools whose text is
 * new since the previous such listing are checked, the rest replayed;
 * the tools' texts are located by skimming only where the result's text
 * differs from the previous one (proxy/base/jparse.h). Same report, same
 * reply, as a full check. Published reports are never changed afterwards
 * (readers keep a reference), so their per-tool parts can be shared from
 * one report to the next.
 *
 * Not here: a tools/list response that reaches the hook without its
 * request (m->request NULL: replayed on a resumed GET stream, or a legacy
 * transport that did not correlate it) is not checked; the proxy's own
 * tools/list requests (it sends none); policy on tools/call; metrics
 * exposition (hook_contract_get_stats gives counters).
 */
#ifndef MCPWARDEN_HOOK_CONTRACT_H
#define MCPWARDEN_HOOK_CONTRACT_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "proxy/hooks/baseline_store.h"

struct px_ctx;
struct px_config;
struct hook_contract;

/* JSON-RPC error code of a tools/list reply refused in fail (or filter)
 * mode. In the implementation-defined range -32000..-32019 that every MCP
 * era leaves free (-32002 is resources' "not found"). */
#define HOOK_CONTRACT_ERROR (-32003)

#define HOOK_CONTRACT_MAX_LISTINGS 256
#define HOOK_CONTRACT_MAX_BYTES    (64u * 1024 * 1024)

/* Validates the "contract" section of every upstream in ctx->cfg
 *   {"mode": "report"|"filter"|"fail"|"off",   default "report"
 *    "baseline": "FILE",                 saved tool list, optional
 *    "spec_only": false}                 usability rules become warnings
 * loads each baseline (a {"tools":[...]} document, a whole JSON-RPC
 * response or a bare array), and registers the hook on ctx->insp. On
 * success sets ctx->proc->contract (owned by ctx: hook_contract_free) and
 * returns 0. On failure writes every error, one per line, located like
 * "$.upstreams[0].contract.mode: must be report, filter, fail or off", into
 * err and returns -1 (ctx->proc->contract stays NULL). ctx must outlive the
 * hook. */
int hook_contract_setup(struct px_ctx *ctx, char *err, size_t errlen);

/* Only the validation half of hook_contract_setup (sections and
 * baselines), for --check-config: 0, or -1 with the same errors in err.
 * Registers nothing, keeps nothing. */
int hook_contract_validate(const struct px_config *cfg, char *err, size_t errlen);

/* Frees the hook's state. Accepts NULL. The inspect chain keeps a pointer
 * to it: free it after the last message (ctx teardown). */
void hook_contract_free(struct hook_contract *hc);

/* The latest report for the upstream named `upstream` (borrowed), as a new
 * JSON object owned by the caller, or NULL when that upstream has not
 * listed tools yet (or is unknown). Shape: the check --json report
 *   {"tools":[...], "problems":[...], "warnings":[...], "changes":[...],
 *    "score":0.75, "passed":bool, "truncated":bool}
 * plus "upstream", "mode", "spec_only", "era" (string|null), "baseline"
 * (file|null), "breaking" (count), "pages", "complete" (false until the
 * last page), "action" ("forwarded"|"filtered"|"failed"), "filtered"
 * (names of tools withheld from the client) and "time" (UTC, ISO 8601).
 * "passed" is the listing's verdict: no problem and no breaking change. */
json_t *hook_contract_report(const struct hook_contract *hc, const char *upstream);

/* Every upstream's latest report: {"<name>": report|null, ...}, new
 * object owned by the caller (NULL when out of memory). */
json_t *hook_contract_reports(const struct hook_contract *hc);

/* Live baselines (issue 21): how the upstream's contract stands for the
 * readiness gate (admin.ready_requires_contract), from its latest
 * complete listing. */
enum hook_contract_gate {
	HOOK_CONTRACT_GATE_UNKNOWN = 0, /* no complete listing seen yet */
	HOOK_CONTRACT_GATE_PASSING,     /* the latest one passed */
	HOOK_CONTRACT_GATE_FAILING,     /* the latest one had a problem or a
	                                   breaking change (any mode) */
	HOOK_CONTRACT_GATE_OFF,         /* contract.mode off: nothing judged */
};

/* "unknown", "passing", "failing", "off". */
const char *hook_contract_gate_name(enum hook_contract_gate g);

/* What hook_contract_published gives: the latest report as published
 * (the shape of hook_contract_report's), when, and how many so far. */
struct hook_contract_published {
	json_t *report;            /* the caller's own copy (json_decref it), or
	                              NULL: none yet; no reference crosses
	                              threads */
	uint64_t time_us;          /* Unix time it was published, 0 with none */
	uint64_t count;            /* reports published for the upstream */
	/* Live baselines (issue 21). */
	enum hook_contract_gate gate;
	int has_baseline;          /* a baseline is in force (file or accepted) */
	size_t baseline_tools;     /* its tool count */
	int can_accept;            /* a complete listing is kept to accept */
	uint64_t accepted_us;      /* Unix time of the last accept, 0: none */
	char accepted_by[96];      /* who accepted it (address, how), or "" */
};

/* The hook keeps each upstream's latest report; readers (the admin
 * endpoint's /contract and /metrics) pull it here, from any thread (it
 * takes the hook's lock briefly). *out is zeroed first; an unknown
 * upstream or a NULL hc leaves it so. */
void hook_contract_published(struct hook_contract *hc, const char *upstream,
                             struct hook_contract_published *out);

/* ---- live baselines (issue 21) ---- */

/* What hook_contract_accept did. */
enum hook_contract_accept_rc {
	HOOK_CONTRACT_ACCEPTED = 0,
	HOOK_CONTRACT_ACCEPT_UNKNOWN,    /* no such upstream */
	HOOK_CONTRACT_ACCEPT_NO_LISTING, /* no complete listing kept yet (or mode off) */
	HOOK_CONTRACT_ACCEPT_FAILED,     /* the file could not be written (err), or
	                                    out of memory: nothing changed */
	HOOK_CONTRACT_ACCEPT_STALE,      /* the listing is not the one expected (it
	                                    changed since it was reviewed) */
};

struct hook_contract_accepted {
	size_t ntools;             /* tools in the accepted listing */
	const char *file;          /* borrowed (config lifetime): written, or NULL */
	int file_warning;          /* written, but err holds a warning */
};

/* Makes the upstream's latest complete listing its baseline: written
 * atomically to contract.baseline when one is configured
 * (proxy/hooks/baseline_store.h), then, under the hook's lock, in force
 * for every worker's next listing (the kept verdict dropped) and the
 * latest report judged again against it (so /contract and the readiness
 * gate see it at once). `by` (borrowed) names who accepted, for
 * /contract. The file is written before anything changes, so a failed
 * write leaves the old baseline. Blocking I/O: the admin thread only. */
enum hook_contract_accept_rc hook_contract_accept(struct hook_contract *hc, const char *upstream,
                                                  const char *by, const char *expect_digest,
                                                  struct hook_contract_accepted *out,
                                                  char *err, size_t errlen);

/* The digest (baseline_store_digest) of the listing hook_contract_accept
 * would accept now, into hex: what /contract shows, and what an accept
 * may name (expect_digest above: STALE when the listing differs, nothing
 * changed; NULL: whatever the listing is now). Returns 1 with hex set, 0
 * when there is nothing to accept (no such upstream, no listing, mode
 * off), -1 out of memory. Worked out once per listing kept (outside the
 * lock: a large listing parses in milliseconds), from any thread. */
int hook_contract_listing_digest(struct hook_contract *hc, const char *upstream,
                                 char hex[BASELINE_STORE_DIGEST_HEX]);

/* SIGHUP: every upstream's contract section of cfg (the new
 * configuration), parsed and its baseline read, staged before anything
 * is swapped. NULL with the errors in err (the reload is then refused). */
struct hook_contract_staged;
struct hook_contract_staged *hook_contract_stage(const struct px_config *cfg, char *err,
                                                 size_t errlen);
/* Puts the staged sections in force (cannot fail; frees staged). Where
 * an upstream's settings changed its verdict cache starts afresh; where
 * only its baseline changed its kept verdict is dropped and its latest
 * report judged again. An upstream without a baseline file keeps a
 * baseline accepted through the admin endpoint. cfg must be the one
 * staged and outlive the hook (retired configs do). */
void hook_contract_commit(struct hook_contract *hc, struct hook_contract_staged *staged);
void hook_contract_staged_free(struct hook_contract_staged *staged); /* accepts NULL */

/* Counters over the process lifetime. */
struct hook_contract_stats {
	uint64_t pages;            /* tools/list pages checked */
	uint64_t listings;         /* listings completed (last page seen) */
	uint64_t listings_failed;  /* ... of which with a problem or breaking change */
	uint64_t tools_filtered;   /* tools withheld in filter mode */
	uint64_t replies_failed;   /* pages replaced by a JSON-RPC error */
	uint64_t evicted;          /* listings dropped to stay within bounds */
	uint64_t replayed;         /* pages answered from the kept verdict (of pages) */
	uint64_t tools_checked;    /* tools checked afresh: not replayed with a
	                              verdict nor from the memo of per-tool
	                              results ("Changed lists") */
};
void hook_contract_get_stats(const struct hook_contract *hc, struct hook_contract_stats *out);

#endif

/* verdict_cache: what the contract hook keeps of one upstream's last
 * one-page tools/list, so that the next listing costs what changed in it.
 * A tuning module (issue 18, "Tuning only in leaf modules"): the hook
 * would give the same replies, reports and counters without it, slower.
 *
 * Three layers, each kept because a measurement shows its gain
 * (tests/bench/contract_time.c, 1,000 tools, 480,825 bytes, report mode,
 * median of 200 runs on one core, gcc -O2; the JSON parse of that reply,
 * done for every reply anyway, is 2.3 ms on the same machine):
 *
 *   verdict  the listing's bytes as they arrived and what checking them
 *            did (opaque to this module: the hook's counters, log line,
 *            report, reply change). The same bytes again in the same
 *            era are not checked: "check again" 0.21 ms without it,
 *            0.03 ms with it. Compared whole (no hash to collide).
 *   memo     per-tool results (checks/contract.h, "Incremental
 *            checking"): a listing that differs in one tool checks that
 *            tool only: "check fresh" (every tool new) 2.4 ms, "check
 *            first" (one tool new) 0.22 ms.
 *   skim     the last listing's text and where its tools sit in it
 *            (proxy/base/jparse.h, jparse_elements_since), so that the
 *            next one is scanned only where it differs: "check first"
 *            0.50 ms without it, 0.22 ms with it.
 *
 * The verdict shares the skim's copy of the text when both are of the
 * same listing (one copy of a 4 MiB list, not two), and the skim shares
 * the upstream's kept listing's when the transport has it (rcbytes).
 * Bounds: one listing of at most VERDICT_CACHE_BYTES; the memo's own (checks/contract.h). Not thread-safe: one per upstream, used
 * under the caller's lock.
 */
#ifndef MCPWARDEN_VERDICT_CACHE_H
#define MCPWARDEN_VERDICT_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct contract_opts;
struct contract_report;
struct verdict_cache;

/* The largest listing text kept (bytes of its result as received). */
#define VERDICT_CACHE_BYTES (4u * 1024 * 1024)

/* A new, empty cache (owned; verdict_cache_free), NULL when out of memory.
 * Allocates its tables on first use. */
struct verdict_cache *verdict_cache_new(void);
void verdict_cache_free(struct verdict_cache *vc); /* accepts NULL */

/* The verdict kept for text raw[0..len) in era (NULL: none), borrowed, or
 * NULL when the kept one is for other bytes or another era, or there is
 * none. Call it first for every whole listing in one page: it also marks
 * the start of a new page for verdict_cache_keep's sharing. */
void *verdict_cache_lookup(struct verdict_cache *vc, const char *raw, size_t len,
                           const char *era);

/* Keeps verdict (owned: freed with free_fn when replaced, dropped, or
 * now when memory runs out) for raw[0..len) in era, in place of the one
 * kept. len at most VERDICT_CACHE_BYTES (else it is freed at once). */
void verdict_cache_keep(struct verdict_cache *vc, const char *raw, size_t len, const char *era,
                        void *verdict, void (*free_fn)(void *));

/* Names the verdict kept now: a number no other verdict kept in any
 * cache had or will have (0: none kept). A caller that looked a verdict
 * up may find it again by this, without comparing the bytes again, as
 * long as the serial has not moved. vc may be NULL. */
uint64_t verdict_cache_serial(const struct verdict_cache *vc);

/* Drops the kept verdict (the memo and skim stay: they hold each tool's
 * own findings, which no baseline changes). For a new baseline (issue 21):
 * the next listing is judged against it. vc may be NULL. */
void verdict_cache_forget(struct verdict_cache *vc);

/* The text of the last listing verdict_cache_check() skimmed (borrowed:
 * valid until the next verdict_cache_check or verdict_cache_free), or
 * NULL with none; *len its length. *now (may be NULL) is 1 when that
 * listing is the one being checked since the last lookup. Live baselines
 * (issue 21) take the listing to accept from here instead of a copy of
 * their own. */
const char *verdict_cache_text(const struct verdict_cache *vc, size_t *len, int *now);

/* contract_check() of the one page `page` (a result object, the whole
 * listing) parsed from raw[0..len), through the memo and the skim when
 * they apply (raw not NULL, len within VERDICT_CACHE_BYTES, at most
 * CONTRACT_MAX_TOOLS tools), a plain check otherwise. bytes: raw's bytes
 * held by reference (inspect.h result_bytes), kept as the skim's text
 * instead of a copy, or NULL. *checked receives how many tools were
 * checked afresh, UINT64_MAX after a plain check (every tool). Returns the
 * report (free it before the next call with vc and before
 * verdict_cache_free), NULL when memory runs out. vc may be NULL (a plain
 * check). */
struct rcbytes;
struct contract_report *verdict_cache_check(struct verdict_cache *vc, const json_t *page,
                                            const char *raw, size_t len, struct rcbytes *bytes,
                                            const struct contract_opts *opts, uint64_t *checked);

/* contract_report_json() of r, sharing the per-tool objects the memo
 * built for earlier reports when r is its latest (contract_report_json_memo).
 * vc may be NULL. */
json_t *verdict_cache_report_json(struct verdict_cache *vc, const struct contract_report *r);

#endif

/* stats: the wiring's sources for GET /metrics (admin/metrics.h
 * "sources"): what every worker counts (connections, requests, responses,
 * the inspect chain's messages), the upstream pools, the session caps, the
 * policy and the live contract (proxy/hooks/hook_validate.h), each read through its own module's getter when a scrape
 * asks. They live here, with the wiring, because the wiring alone sees
 * every module: the admin endpoint reads none of them itself.
 *
 * Not here: the exposition (admin/metrics.c), what the admin endpoint
 * counts itself (the ring, streams, probes: admin/admin.c fill_own).
 */
#ifndef MCPWARDEN_STATS_H
#define MCPWARDEN_STATS_H

struct px_ctx;

/* Registers the sources with ctx->proc->admin (nothing when the endpoint and
 * the call log are off). ctx is worker 0's and must outlive the admin
 * endpoint; the sources read ctx->proc->workers at each scrape, so they may be
 * registered before the workers exist. Returns 0, or -1 when the
 * metrics' source table is full. */
int stats_register(struct px_ctx *ctx);

#endif

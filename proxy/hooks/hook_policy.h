/* hook_policy: the policy (policy/) plugged into the message hook.
 *
 * One deciding hook, "policy", registered with inspect_add():
 *   - remembers, per upstream, the tools each tools/list result lists
 *     (name -> annotation hints; pages accumulate; a
 *     notifications/tools/list_changed marks the list stale and the next
 *     listing replaces it), at most HOOK_POLICY_MAX_TOOLS per upstream,
 *     as the tools/list tracker (proxy/hooks/tools.h, which must be in
 *     ctx->proc->tools) hears them from the upstream: before a hook ahead of
 *     this one (the contract) withholds tools or fails the listing;
 *   - judges every client->server request and notification that carries a
 *     method, and server->client ones for the rules that name a method:
 *       deny/hide  a request gets a JSON-RPC error (HOOK_POLICY_ERROR_CODE,
 *                  message naming the rule, data {"rule","action","tool",
 *                  "reason","method"}) and is not forwarded; a
 *                  notification, or a server->client request, is dropped.
 *                  m->reason = "policy:<rule>".
 *       log        forwarded; m->reason = the rule name, or
 *                  "dry-run:<rule>" when a dry run let a deny/hide through;
 *                  one log line either way.
 *   - removes the tools a hide rule covers from every tools/list result
 *     (JSON or SSE-framed; nextCursor and every other member kept),
 *     m->modified set.
 * A tool is judged by its hints as last listed by its upstream, and, when
 * the upstream's "contract" names a "baseline" file, by the less safe of
 * baseline and current; a tool listed only in the baseline counts as
 * known.
 *
 * Reload: a new policy applies to exchanges that start after it; an
 * exchange keeps the policy it started with (each holds a reference),
 * so in-flight requests finish under their policy. The tool lists survive
 * reloads.
 *
 * Threads: every worker runs the hook. Requests and notifications are
 * judged with no lock another worker may hold (an immutable view of the
 * policy and tool lists, republished by listings and reloads; see
 * hook_policy.c); listings, reloads and the readers below take a lock.
 */
#ifndef MCPWARDEN_HOOK_POLICY_H
#define MCPWARDEN_HOOK_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct px_ctx;
struct px_config;
struct policy;
struct hook_policy;

/* JSON-RPC error code of a refusal: implementation-defined server error
 * range, clear of the -32020..-32099 the 2026-07-28 spec reserves. */
#define HOOK_POLICY_ERROR_CODE (-32001)

#define HOOK_POLICY_MAX_TOOLS     10000  /* tools remembered per upstream */
#define HOOK_POLICY_MAX_TOOL_NAME 512    /* longer names are not remembered */
#define HOOK_POLICY_MAX_UPSTREAMS 256    /* upstreams with a tool list */

/* Compiles cfg->policy when present (errors with their JSON location,
 * one per line), reads the baselines named in the upstreams' contracts,
 * registers the hook with ctx->insp and stores the module in
 * ctx->proc->policy. With no policy configured the hook is still registered:
 * it only remembers tool lists (so a policy added by a reload knows the
 * tools clients listed before) and forwards everything. Returns 0, or -1
 * with err set (nothing registered, ctx->proc->policy untouched). */
int hook_policy_setup(struct px_ctx *ctx, char *err, size_t errlen);

/* Compiles newcfg->policy (and its baselines). On success the new policy
 * governs the exchanges that start from now on and 0 is returned; on
 * error the old one stays, err says why and -1 is returned. newcfg is
 * borrowed: nothing is kept from it. */
int hook_policy_reload(struct px_ctx *ctx, const struct px_config *newcfg, char *err,
                       size_t errlen);

/* Compiles cfg->policy and reads its baselines without installing
 * anything: for --check-config. Returns 0, or -1 with err set. */
int hook_policy_check(const struct px_config *cfg, char *err, size_t errlen);

/* Frees the module (NULL accepted). Call it after every connection has
 * been closed (their exchanges release policy references through the
 * hook), e.g. in ctx_teardown after the conn loop. */
void hook_policy_free(struct hook_policy *hp);

/* Totals over the process lifetime (they survive reloads). */
struct hook_policy_stats {
	uint64_t allowed;        /* forwarded by an allow rule or the default */
	uint64_t denied;         /* refused: deny and hide rules, unknown tools */
	uint64_t logged;         /* forwarded and flagged (log rules, dry runs) */
	uint64_t dry_run;        /* of logged: a dry run forwarded a refusal */
	uint64_t unknown_tool;   /* calls of never-listed tools (denied or dry run) */
	uint64_t tools_hidden;   /* tool entries removed from tools/list results */
	uint64_t listings;       /* tools/list results seen */
	uint64_t tools_over_cap; /* listed tools not remembered (caps above) */
	uint64_t reloads, reload_failures;
};
void hook_policy_get_stats(const struct hook_policy *hp, struct hook_policy_stats *out);

/* 1 when a policy is in force. */
int hook_policy_active(const struct hook_policy *hp);

/* The policy in force (borrowed; valid until the next reload), or NULL.
 * Per-rule counts: policy_nstats() / policy_stats(). */
const struct policy *hook_policy_current(const struct hook_policy *hp);

/* Each rule's counts of the policy in force (policy_stats, in its order):
 * a new array (owned, free()) of *n entries, NULL with *n = 0 when no
 * policy is in force or memory runs out. The rule names are the policy's:
 * valid until the next reload (worker 0's thread, as /metrics). */
struct policy_rule_stats;
struct policy_rule_stats *hook_policy_rule_stats(const struct hook_policy *hp, size_t *n);

/* {"active":bool,"dry_run":bool,"totals":{...},"rules":[{"rule","action",
 * "matched","allowed","denied","logged","dry_run","hidden",
 * "dry_run_hidden"}]}: a new reference (caller owns), or NULL. */
json_t *hook_policy_stats_json(const struct hook_policy *hp);

#endif

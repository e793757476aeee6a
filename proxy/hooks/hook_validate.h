/* hook_validate: the live contract on calls and results. Every tools/call
 * a client sends is validated against the inputSchema its upstream last
 * listed (proxy/hooks/tools.h), every result of a tool that declares an
 * outputSchema against that schema (checks/jschema.h); schemas are
 * compiled once per listing and reused until the listing changes.
 *
 * Per upstream (conf/README.md, "validation"):
 *   arguments: off | report (default) | fail
 *   results:   off | report (default) | fail
 *   formats:   false (default): "format" is an annotation; true: the
 *              common formats are asserted
 * report forwards unchanged and records; fail does not forward a call with
 * invalid arguments (answered as the request's era says: from 2025-11-25 a
 * tool result with isError true naming each violation, before -32602) and
 * replaces an off-schema result with a JSON-RPC error (code
 * HOOK_VALIDATE_RESULT_CODE, docs/contract.md), never with a rewritten
 * result. isError results are not held to the schema.
 *
 * Findings: each one goes on the message as a note (inspect_msg.notes) for
 * the recorder, is counted per upstream x tool x code, and is logged once
 * per code and tool per interval (rate limited). Codes are stable API:
 *
 *   code                     raised when
 *   arguments-invalid        arguments violate the tool's inputSchema
 *   result-invalid           structuredContent violates the outputSchema
 *   structured-content-missing  a tool with outputSchema answered without
 *                            structuredContent (and not isError)
 *   tool-unknown             a call to a tool the last listing lacks
 *   no-listing               a call before the upstream listed its tools
 *   schema-unusable          the tool's schema does not compile (its own
 *                            finding names why: unsupported $schema, remote
 *                            $ref, a limit): nothing validated against it
 *   validation-limit         a validation hit a work bound: undecided,
 *                            never counted as valid or invalid
 *
 * Registered after the policy hook (a denied call is not validated) and
 * before the observers; runs without the chain's lock: its tables guard
 * themselves, compiled schemas are shared read-only by every worker. */
#ifndef MCPWARDEN_HOOK_VALIDATE_H
#define MCPWARDEN_HOOK_VALIDATE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct px_ctx;
struct hook_validate;

/* The JSON-RPC error code of a result replaced in results: fail mode,
 * next to the contract's -32003 (docs/contract.md). */
#define HOOK_VALIDATE_RESULT_CODE (-32004)

enum validate_mode { VALIDATE_OFF = 0, VALIDATE_REPORT, VALIDATE_FAIL };

/* Reads every upstream's "validation" section of ctx->cfg, registers the
 * hook on ctx->insp and sets ctx->proc->validate. Returns 0, or -1 with
 * err set (nothing registered). */
int hook_validate_setup(struct px_ctx *ctx, char *err, size_t errlen);
/* Accepts NULL. Free the hook chains first. */
void hook_validate_free(struct hook_validate *hv);

/* Per-tool summary for /contract: a new reference (json_decref it),
 *   {"tool": {"calls": n, "arguments_invalid": n, "results": n,
 *             "results_invalid": n, "last": {finding} or null}, ...}
 * where a finding is {"code", "kind": "arguments"|"result", "instance"
 * (JSON Pointer), "schema" (JSON Pointer), "keyword", "message",
 * "time" (RFC 3339)}; an empty object when nothing was seen; NULL when
 * hv is NULL or out of memory. */
json_t *hook_validate_summary(struct hook_validate *hv, const char *upstream);

/* Every counter, for /metrics: fn is called once per upstream x tool x
 * code with a count > 0 (strings borrowed for the call). */
typedef void (*hook_validate_count_fn)(void *arg, const char *upstream, const char *tool,
                                       const char *code, uint64_t n);
void hook_validate_foreach_count(struct hook_validate *hv, hook_validate_count_fn fn, void *arg);

struct hook_validate_stats {
	uint64_t calls_checked, results_checked;
	uint64_t compiled;        /* schemas compiled */
	uint64_t compile_failed;  /* ... of which unusable */
	uint64_t findings;        /* notes attached */
	uint64_t logs_suppressed; /* finding log lines held back by the rate limit */
};
void hook_validate_get_stats(struct hook_validate *hv, struct hook_validate_stats *out);

#endif

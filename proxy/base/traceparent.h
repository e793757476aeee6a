/* traceparent: the W3C Trace Context "traceparent" header (Trace Context
 * Level 1, §3.2), parsed and written.
 *
 *   traceparent_parse(s, len, &tc)  0 and tc filled, or -1 (invalid: the
 *                                   caller starts a new trace, as §3.2.2.x
 *                                   says a receiver must)
 *   traceparent_format(&tc, out)    "00-<32 hex>-<16 hex>-<2 hex>", NUL
 *                                   ended, TRACEPARENT_LEN bytes
 *   traceparent_hex(p, n, out)      n bytes as 2n lowercase hex + NUL
 *
 * Rules kept (the spec's): version "ff" is invalid; version 00 is exactly
 * 55 bytes; a higher version may be longer, its extra part starting with
 * '-' and ignored; hex is lowercase only; an all-zero trace id or parent
 * id is invalid. Leading and trailing blanks (OWS) are trimmed.
 *
 * Pure: no state, no I/O, no randomness (ids are made by the caller:
 * proxy/hooks/hook_trace.c). Fuzzed: tests/fuzz/fuzz_traceparent.c.
 * Not here: tracestate, which a proxy passes on unchanged (§3.3.1.1:
 * a vendor that does not add an entry may forward it as is).
 */
#ifndef MCPWARDEN_TRACEPARENT_H
#define MCPWARDEN_TRACEPARENT_H

#include <stddef.h>
#include <stdint.h>

#define TRACEPARENT_LEN 55
#define TRACE_ID_BYTES 16
#define SPAN_ID_BYTES 8
#define TRACE_FLAG_SAMPLED 0x01u

struct trace_ctx {
	uint8_t trace_id[TRACE_ID_BYTES];
	uint8_t span_id[SPAN_ID_BYTES];  /* the parent's (parsed) or ours (formatted) */
	uint8_t flags;
};

int traceparent_parse(const char *s, size_t len, struct trace_ctx *out);
/* out has room for TRACEPARENT_LEN + 1 bytes. Returns TRACEPARENT_LEN.
 * The version written is 00, and only the sampled flag is kept (§3.2.2.5:
 * a version-00 writer must not pass on flags it does not know). */
size_t traceparent_format(const struct trace_ctx *tc, char *out);
/* out has room for 2n + 1 bytes. */
void traceparent_hex(const uint8_t *p, size_t n, char *out);
/* 1 when the n bytes are all zero (an invalid id). */
int traceparent_zero(const uint8_t *p, size_t n);

#endif

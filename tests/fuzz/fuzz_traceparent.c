/* Fuzz target for the traceparent parser (proxy/base/traceparent.c).
 *
 * Properties checked, abort() on any violation: whatever parses writes
 * back as a version-00 header that parses again to the same ids and
 * sampled flag; an input of version 00 that parses writes back as itself
 * unless it had other flags than sampled. Nothing is read past len.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/base/traceparent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_ctx a, b;
	char out[TRACEPARENT_LEN + 1];

	if (traceparent_parse((const char *)data, size, &a) < 0)
		return 0;
	if (traceparent_format(&a, out) != TRACEPARENT_LEN || strlen(out) != TRACEPARENT_LEN)
		abort();
	if (traceparent_parse(out, TRACEPARENT_LEN, &b) < 0)
		abort();
	if (memcmp(a.trace_id, b.trace_id, TRACE_ID_BYTES) ||
	    memcmp(a.span_id, b.span_id, SPAN_ID_BYTES) ||
	    (a.flags & TRACE_FLAG_SAMPLED) != b.flags)
		abort();
	if (size == TRACEPARENT_LEN && data[0] == '0' && data[1] == '0' && a.flags <= 1 &&
	    memcmp(out, data, size) != 0)
		abort();
	return 0;
}

/* tracehand: see tracehand.h. */
#include "proxy/mcp/tracehand.h"

#include <stdio.h>

static _Thread_local char current[TRACEHAND_MAX];

void tracehand_set(const char *tp)
{
	snprintf(current, sizeof(current), "%s", tp ? tp : "");
}

const char *tracehand_get(void)
{
	return current;
}

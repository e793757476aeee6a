/* flagnames: see flagnames.h. */
#include "proxy/base/flagnames.h"

#include <stdio.h>

const char *flagnames_str(unsigned flags, const char *const *names, unsigned n, char *buf,
                          size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (unsigned i = 0; i < n && i < 32; i++) {
		if (!(flags & (1u << i)) || used >= len)
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? "|" : "", names[i]);
		used = w < 0 ? len : used + (size_t)w;
	}
	return buf;
}

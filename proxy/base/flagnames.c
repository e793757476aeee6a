/* flagnames: see flagnames.h. */
#include "proxy/base/flagnames.h"

#include <stdio.h>

const char *flagnames_str(unsigned flags, const char *const *names, unsigned n, char *buf,
                          size_t len)
{
	size_t used = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (unsigned i = 0; i < n && i < 32; i++) {
		if (!(flags & (1u << i)))
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? "|" : "", names[i]);
		if (w < 0 || (size_t)w >= len - used) {
			buf[used] = '\0'; /* cut short: whole names only */
			break;
		}
		used += (size_t)w;
	}
	return buf;
}

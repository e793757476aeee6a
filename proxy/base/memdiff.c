/* memdiff: see memdiff.h. */
#include "proxy/base/memdiff.h"

#include <string.h>

/* Blocks of this size are compared: a memcmp call costs little against
 * 4 KiB, and an edit costs at most two blocks more than its own bytes. */
#define MEMDIFF_BLOCK 4096

void memdiff_copy(char *dst, size_t dlen, const char *src, size_t len)
{
	size_t i = 0, j = len;
	if (dlen == len) {
		while (i + MEMDIFF_BLOCK <= len && memcmp(dst + i, src + i, MEMDIFF_BLOCK) == 0)
			i += MEMDIFF_BLOCK;
		while (j >= i + MEMDIFF_BLOCK &&
		       memcmp(dst + j - MEMDIFF_BLOCK, src + j - MEMDIFF_BLOCK, MEMDIFF_BLOCK) == 0)
			j -= MEMDIFF_BLOCK;
	}
	memcpy(dst + i, src + i, j - i);
}

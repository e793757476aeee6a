/* rcbytes: see rcbytes.h. */
#include "proxy/base/rcbytes.h"

#include <stdlib.h>
#include <string.h>

struct rcbytes *rcbytes_new(const char *text, size_t len)
{
	struct rcbytes *b = malloc(sizeof(*b) + len + 1);
	if (!b)
		return NULL;
	b->refs = 1;
	b->len = len;
	memcpy(b->text, text, len);
	b->text[len] = '\0';
	return b;
}

struct rcbytes *rcbytes_ref(struct rcbytes *b)
{
	if (b)
		__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
	return b;
}

void rcbytes_unref(struct rcbytes *b)
{
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(b);
}

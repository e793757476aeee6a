/* rcbytes: immutable bytes shared by reference count.
 *
 * A large tool listing's bytes are wanted by several modules after its
 * reply is gone: the kept listing that the next one is built from
 * (jreuse.h), the tools tracker (to know the same bytes again), the
 * contract's verdict cache, the policy's reply with tools hidden. Each kept
 * its own copy of 448 KB, brought up to date on every change. One copy,
 * shared, is made once per listing; a holder keeps a reference.
 *
 * The counts are atomic (acquire-release): any thread may let go of a
 * reference. The bytes never change once made.
 */
#ifndef MCPWARDEN_RCBYTES_H
#define MCPWARDEN_RCBYTES_H

#include <stddef.h>

struct rcbytes {
	unsigned refs;           /* atomic */
	size_t len;
	char text[];             /* len bytes, then a NUL */
};

/* A copy of text[0..len) (refs 1), or NULL when out of memory. */
struct rcbytes *rcbytes_new(const char *text, size_t len);
/* b with one more reference (NULL accepted). */
struct rcbytes *rcbytes_ref(struct rcbytes *b);
/* One reference less; freed with the last. NULL accepted. */
void rcbytes_unref(struct rcbytes *b);

#endif

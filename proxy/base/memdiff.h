/* memdiff: a kept copy of a text brought up to date where it changed.
 *
 * Several hooks keep the bytes of the last tool listing to tell the next
 * one apart (the contract's verdict cache, the recorder's preview memo,
 * jreuse). A listing that changes in one description keeps its length,
 * and copying its 448 KB again for each of them cost more than finding
 * where it differs.
 */
#ifndef MCPWARDEN_MEMDIFF_H
#define MCPWARDEN_MEMDIFF_H

#include <stddef.h>

/* dst[0..len) := src[0..len), dst holding dlen bytes of an earlier text
 * (room for len: the caller's): when dlen == len, only what lies between
 * the blocks the two have in common at the head and at the tail is
 * copied. dst and src must not overlap. */
void memdiff_copy(char *dst, size_t dlen, const char *src, size_t len);

#endif

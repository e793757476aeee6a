/* jarena: where the jansson values of a parsed message live.
 *
 * A tools/call crossing the proxy is two small JSON texts, and jparse
 * turns each into a jansson tree of some 20 to 30 values, each a malloc
 * (the value, an object's bucket table, each member, each string's bytes)
 * freed one by one when the exchange ends: about a tenth of the
 * instructions of a proxied call went to the allocator. While a window is
 * open (jparse opens one around building the tree of a small text), the
 * calling thread's jansson allocations are cut from 4 KiB blocks instead:
 * a pointer bump to allocate, a count to free. A block is reused once
 * every value cut from it is freed, so a value kept longer (json_incref'd
 * by a hook) stays valid: it only holds its block back.
 *
 * Blocks come from one reserved address range, so telling an arena value
 * from a malloc'd one at free time is a range check, and values made
 * outside a window (or too big for a block) are plain malloc. A value
 * freed by another thread than the one that cut it is handed back to that
 * thread, which counts it at its next window: each block is counted by
 * one thread only, without atomics.
 *
 * jarena_install() must run before the first jansson value is made (the
 * first thing main does), since free must know every value's origin. A
 * program that never installs it (unit tests, fuzz targets) gets plain
 * malloc everywhere, windows or not. An AddressSanitizer build does not
 * install it either: ASan then checks each value on its own.
 */
#ifndef MCPWARDEN_JARENA_H
#define MCPWARDEN_JARENA_H

#include <stddef.h>

/* Texts up to this size get a window (jparse). A tool listing's tree
 * too (issue 20): a 1,000-tool listing (448,808 bytes) is some 55,000
 * values, and cutting them from blocks cost 31.2M instructions per
 * changing listing against 40.8M with malloc (tests/bench/profile.sh
 * listvary). A hook that keeps part of such a tree (json_incref) holds
 * its blocks back until it lets go, as it held the malloc'd values. A
 * larger text keeps malloc: a tree of many megabytes would take a large
 * share of the arena's reserved range. */
#define JARENA_MAX_TEXT (1024 * 1024)

/* Makes jansson allocate through the arena (json_set_alloc_funcs).
 * Returns 0, or -1 when the address range could not be reserved (jansson
 * then keeps malloc). Idempotent. */
int jarena_install(void);
/* Whether jansson allocates through the arena (not in an ASan build). */
int jarena_installed(void);

/* Opens / closes the calling thread's window. Windows nest (counted). */
void jarena_open(void);
void jarena_close(void);

/* What the calling thread's arena holds, for tests. */
struct jarena_stats {
	size_t blocks_used;   /* holding live values, or the block being cut */
	size_t blocks_cached; /* empty, kept for the next window */
	size_t handed_back;   /* freed elsewhere, not yet counted */
	size_t values;        /* values cut and not yet freed */
};
void jarena_stats(struct jarena_stats *out);

#endif

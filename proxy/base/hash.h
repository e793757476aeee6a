/* hash: FNV-1a, the one non-keyed hash of mcpwarden's tables (sessions,
 * peers, metric labels, tool names, policy memo keys).
 *
 * Fast and simple, not keyed: a table that hashes what a client sends
 * mixes a per-table seed into the start value (policy_memo does) and
 * confirms every hit by comparing the bytes. Values are never shown or
 * stored: a table may change its hash without any visible effect.
 *
 *   hash_fnv1a32(h, p, n)    bytes p[0..n-1], continuing from h (start
 *                            from HASH_FNV1A32_INIT, or that xor a seed)
 *   hash_fnv1a32_str(h, s)   the bytes of s up to its NUL
 *   hash_fnv1a32_byte(h, c)  one byte, for keys built byte by byte
 *   hash_fnv1a64(p, n)       64-bit FNV-1a of p[0..n-1]
 *   hash_fnv1a64_words(p, n) the 64-bit hash eight bytes at a time (each
 *                            word xored in, then multiplied and folded):
 *                            a different value, ~8x fewer multiplications
 *                            on long text (a tool's description)
 *
 * Pure: no state. Not here: keyed hashes (SipHash) and anything crypto.
 */
#ifndef MCPWARDEN_HASH_H
#define MCPWARDEN_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A32_INIT 2166136261u
#define HASH_FNV1A32_PRIME 16777619u
#define HASH_FNV1A64_INIT 0xcbf29ce484222325u
#define HASH_FNV1A64_PRIME 0x100000001b3u

static inline uint32_t hash_fnv1a32_byte(uint32_t h, unsigned char c)
{
	return (h ^ c) * HASH_FNV1A32_PRIME;
}

/* Inline, like the step: session and limit tables hash an id on every
 * call (perf-guard counts the call overhead). */
static inline uint32_t hash_fnv1a32(uint32_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = hash_fnv1a32_byte(h, s[i]);
	return h;
}

static inline uint32_t hash_fnv1a32_str(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = hash_fnv1a32_byte(h, (unsigned char)*s);
	return h;
}

uint64_t hash_fnv1a64(const void *p, size_t n);
uint64_t hash_fnv1a64_words(const void *p, size_t n);

#endif

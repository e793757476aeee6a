/* hash: see hash.h (the 32-bit forms are inline there). */
#include "proxy/base/hash.h"

#include <string.h>

uint64_t hash_fnv1a64(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = HASH_FNV1A64_INIT;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * HASH_FNV1A64_PRIME;
	return h;
}

uint64_t hash_fnv1a64_words(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = HASH_FNV1A64_INIT;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		h = (h ^ w) * HASH_FNV1A64_PRIME;
		/* A word's high bytes only reach the low bits through the
		 * multiplication's carries; folding brings them down, since
		 * tables take the low bits. */
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ s[i]) * HASH_FNV1A64_PRIME;
	return h ^ (h >> 32) ^ n;
}

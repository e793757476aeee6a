/* jsame: the values of an array as last seen, held by reference, so that
 * the next array is told apart from it position by position without
 * reading a single value.
 *
 * A changed tool listing's unchanged tools are the very values of the last
 * one (proxy/base/jreuse.h). The hooks that walked all 1,000 tools of such
 * a listing to find the one that changed (each walk a cache miss per tool:
 * the tools tracker's table, the policy's hints and hide decisions) compare
 * 1,000 pointers instead, and read only the tools whose pointer is new.
 * Each reader keeps its own jsame: the last array *it* took in, so that a
 * difference always means "since what this reader knows".
 *
 * Holding the references is what makes the comparison sound: a value kept
 * here is not freed, so no other value can be at its address.
 *
 * Not thread-safe: one owner, or the owner's lock.
 */
#ifndef MCPWARDEN_JSAME_H
#define MCPWARDEN_JSAME_H

#include <stddef.h>
#include <jansson.h>

struct jsame;

/* An empty one (owned), or NULL when out of memory. */
struct jsame *jsame_new(void);
/* Lets go of the values kept. NULL accepted. */
void jsame_free(struct jsame *s);

/* The positions of array whose value is not the one kept at the same
 * position, in ascending order, into pos[0..max): their count, or -1 when
 * there is nothing to compare with (nothing kept, another length, not an
 * array) or more than max positions differ. */
long jsame_diff(const struct jsame *s, const json_t *array, size_t *pos, size_t max);

/* At most this many positions, and an eighth of the array, are worth
 * reading alone: past that, reading the whole array costs no more. */
#define JSAME_FEW 64

/* jsame_diff bounded so: the positions that differ into pos[0..JSAME_FEW),
 * their count, or -1 (nothing to compare with, or too many differ). */
long jsame_few(const struct jsame *s, const json_t *array, size_t pos[JSAME_FEW]);

/* Keeps array's values: all of them (npos < 0), or only those at
 * pos[0..npos) (what jsame_diff returned for this array). Returns 0, or -1
 * when out of memory: then nothing is kept. */
int jsame_keep(struct jsame *s, const json_t *array, const size_t *pos, long npos);

/* The value kept at position i (borrowed), or NULL. */
const json_t *jsame_at(const struct jsame *s, size_t i);

/* How many values are kept. */
size_t jsame_size(const struct jsame *s);

/* Lets go of the values kept: the next jsame_diff has nothing to compare
 * with. */
void jsame_clear(struct jsame *s);

#endif

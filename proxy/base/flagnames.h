/* flagnames: a flags word as text for log lines, "ready|posting".
 *
 * Every state machine keeps its facts besides the state in one flags word
 * (bit i named names[i]); this writes the bits that are set, "|"-separated,
 * into buf and returns buf. What does not fit in len is left out by whole
 * names (a log line never shows half a name, which could read as another
 * flag); buf is always NUL-terminated when len > 0. Bits without a name
 * (i >= n) are left out.
 *
 * Pure: no state, no allocation.
 */
#ifndef MCPWARDEN_FLAGNAMES_H
#define MCPWARDEN_FLAGNAMES_H

#include <stddef.h>

const char *flagnames_str(unsigned flags, const char *const *names, unsigned n, char *buf,
                          size_t len);

#endif

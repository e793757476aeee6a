/* regex_limits: refuses a POSIX extended regular expression that glibc's
 * regcomp would take seconds and gigabytes to compile (regex_limits.c has
 * the measurements and the rules), before regcomp sees it. Pure: no
 * allocation kept, no global state. Used by policy_load.c on every
 * "regex" of a policy file.
 */
#ifndef MCPWARDEN_REGEX_LIMITS_H
#define MCPWARDEN_REGEX_LIMITS_H

#include <stddef.h>

#define REGEX_LIMITS_MAX_BOUND   255
#define REGEX_LIMITS_MAX_NODES   10000
#define REGEX_LIMITS_MAX_CHAIN   1000
#define REGEX_LIMITS_MAX_ACHAIN  64
#define REGEX_LIMITS_MAX_ASSERTS 16

/* 0 when rx is within the limits above; otherwise -1 with the reason in
 * why (whylen bytes). skip is added to the offsets shown (a "(?i)" cut
 * off the front). */
int regex_limits_check(const char *rx, size_t skip, char *why, size_t whylen);

#endif

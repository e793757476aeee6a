/* jsre.h: ECMA-262 regular expressions for JSON Schema "pattern".
 * temporary: replaced by h6-jsre (this header only pins the API). */
#ifndef MCPWARDEN_CHECKS_JSRE_H
#define MCPWARDEN_CHECKS_JSRE_H

#include <stddef.h>

struct jsre;

/* NULL + err if unsupported. */
struct jsre *jsre_compile(const char *pattern, size_t len, char *err, size_t errlen);
/* 1 match, 0 no, -1 step limit. */
int jsre_search(const struct jsre *re, const char *s, size_t len);
void jsre_free(struct jsre *re);

#endif

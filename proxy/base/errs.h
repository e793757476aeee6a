/* errs: collects configuration errors, one per line, into a caller's fixed
 * buffer, so that --check-config shows every mistake at once. Counts every
 * error even once the buffer is full (the count decides success). */
#ifndef MCPWARDEN_ERRS_H
#define MCPWARDEN_ERRS_H

#include <stddef.h>

struct errs {
	char *buf;       /* borrowed: the caller's buffer, or NULL */
	size_t len;      /* its size */
	size_t used;
	int count;       /* errors added, written or not */
};

/* Appends one line (printf-style, without the newline). */
void errs_add(struct errs *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

/* check.h: how the fuzz targets fail. A broken invariant prints which one
 * and aborts: libFuzzer reports a crash and keeps the input, and the
 * corpus replay (replay.c) fails `make fuzz`. Header only: each target is
 * linked on its own. */
#ifndef MCPWARDEN_FUZZ_CHECK_H
#define MCPWARDEN_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static inline void fuzz_fail_at(const char *file, const char *what)
{
	fprintf(stderr, "%s: %s\n", file, what);
	abort();
}

#define fuzz_fail(what) fuzz_fail_at(__FILE__, what)

#define CHECK(cond)                                        \
	do {                                               \
		if (!(cond))                               \
			fuzz_fail("check failed: " #cond); \
	} while (0)

#endif

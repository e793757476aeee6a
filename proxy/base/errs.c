/* errs: see errs.h. */
#include "proxy/base/errs.h"

#include <stdarg.h>
#include <stdio.h>

void errs_add(struct errs *e, const char *fmt, ...)
{
	va_list ap;

	e->count++;
	if (!e->buf || e->used + 1 >= e->len)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(e->buf + e->used, e->len - e->used, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	e->used += (size_t)n < e->len - e->used ? (size_t)n : e->len - e->used - 1;
	if (e->used + 1 < e->len) {
		e->buf[e->used++] = '\n';
		e->buf[e->used] = '\0';
	}
}

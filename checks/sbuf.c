/* sbuf: see sbuf.h. */
#include "checks/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbuf_putn(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (p == NULL) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_putn(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n >= 0)
		sbuf_putn(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void sbuf_token(struct sbuf *b, const char *tok)
{
	sbuf_putn(b, "/", 1);
	for (const char *s = tok; *s; s++) {
		if (*s == '~')
			sbuf_putn(b, "~0", 2);
		else if (*s == '/')
			sbuf_putn(b, "~1", 2);
		else
			sbuf_putn(b, s, 1);
	}
}

void sbuf_index(struct sbuf *b, size_t i)
{
	sbuf_printf(b, "/%zu", i);
}

void sbuf_cut(struct sbuf *b, size_t len)
{
	if (b->p != NULL && len <= b->len) {
		b->len = len;
		b->p[len] = '\0';
	}
}

const char *sbuf_str(const struct sbuf *b)
{
	return b->p ? b->p : "";
}

const char *sbuf_quote(char *buf, size_t size, const char *s, size_t max)
{
	size_t n = strlen(s);
	int cut = 0;

	if (max > size - 4)
		max = size - 4;
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
		cut = 1;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		buf[i] = (ch < 0x20 || ch == 0x7F) ? '?' : (char)ch;
	}
	if (cut) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

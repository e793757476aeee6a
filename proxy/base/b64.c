/* b64: see b64.h. */
#include "proxy/base/b64.h"

#include <stdint.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t b64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *s = in;
	char *p = out;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		*p++ = alphabet[(v >> 18) & 63];
		*p++ = alphabet[(v >> 12) & 63];
		*p++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		*p++ = i + 2 < n ? alphabet[v & 63] : '=';
	}
	*p = '\0';
	return (size_t)(p - out);
}

static int digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long b64_decode(const char *s, size_t n, unsigned char *out)
{
	size_t pad = 0;
	while (n > 0 && s[n - 1] == '=' && pad < 2) {
		n--;
		pad++;
	}
	if (n % 4 == 1 || (pad && (n + pad) % 4 != 0))
		return -1;
	uint32_t acc = 0;
	unsigned bits = 0;
	long len = 0;
	for (size_t i = 0; i < n; i++) {
		int d = digit((unsigned char)s[i]);
		if (d < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[len++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	return len;
}

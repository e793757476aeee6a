/* b64: Base64 with the standard alphabet (RFC 4648 §4), the one encoder
 * and decoder of mcpwarden: Authorization: Basic values made from a URL's
 * userinfo (config), their redaction (admin), and the =?base64?…?= header
 * values of the 2026 era (mirror).
 *
 * Encoding always pads. Decoding is strict about what it accepts, since
 * its input comes from clients: only the 64 characters, '=' padding
 * optional but, when present, only at the end and only as much as the
 * length calls for; no whitespace, no line breaks; a lone last character
 * (n % 4 == 1) is refused. Bits past the last whole byte are dropped
 * (RFC 4648 §3.5 lets a decoder refuse them; mirror never did).
 *
 * Pure: no allocation, no state. Not here: the URL-safe alphabet (nothing
 * uses it), MIME line wrapping.
 */
#ifndef MCPWARDEN_B64_H
#define MCPWARDEN_B64_H

#include <stddef.h>

/* The length of n bytes' padded encoding, without a NUL. */
static inline size_t b64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/* Room b64_decode() may need for n characters. */
static inline size_t b64_decoded_max(size_t n)
{
	return n / 4 * 3 + 3;
}

/* Writes the padded encoding of in[0..n-1] and a NUL to out, which has
 * room for b64_encoded_len(n) + 1. Returns the encoding's length. */
size_t b64_encode(const void *in, size_t n, char *out);

/* Decodes s[0..n-1] into out (room for b64_decoded_max(n)). Returns the
 * decoded length, or -1 when s is not Base64 by the rule above (out may
 * then hold part of it). */
long b64_decode(const char *s, size_t n, unsigned char *out);

#endif

/* traceparent: see traceparent.h. */
#include "proxy/base/traceparent.h"

#include <string.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* uppercase too: the spec allows lowercase only */
}

/* n bytes from 2n hex digits at s. Returns 0 or -1. */
static int unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int traceparent_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

int traceparent_parse(const char *s, size_t len, struct trace_ctx *out)
{
	uint8_t version;

	while (len && blank(*s)) {
		s++;
		len--;
	}
	while (len && blank(s[len - 1]))
		len--;
	if (len < TRACEPARENT_LEN || s[2] != '-' || s[35] != '-' || s[52] != '-')
		return -1;
	if (unhex(s, &version, 1) < 0 || version == 0xff)
		return -1;
	/* Version 00 is exactly this long; a later version may add fields
	 * after a '-', which a version-00 reader ignores (§3.2.4). */
	if (version == 0 ? len != TRACEPARENT_LEN : len > TRACEPARENT_LEN && s[55] != '-')
		return -1;
	if (unhex(s + 3, out->trace_id, TRACE_ID_BYTES) < 0 ||
	    unhex(s + 36, out->span_id, SPAN_ID_BYTES) < 0 || unhex(s + 53, &out->flags, 1) < 0)
		return -1;
	if (traceparent_zero(out->trace_id, TRACE_ID_BYTES) ||
	    traceparent_zero(out->span_id, SPAN_ID_BYTES))
		return -1;
	return 0;
}

void traceparent_hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

size_t traceparent_format(const struct trace_ctx *tc, char *out)
{
	uint8_t flags = tc->flags & TRACE_FLAG_SAMPLED;
	memcpy(out, "00-", 3);
	traceparent_hex(tc->trace_id, TRACE_ID_BYTES, out + 3);
	out[35] = '-';
	traceparent_hex(tc->span_id, SPAN_ID_BYTES, out + 36);
	out[52] = '-';
	traceparent_hex(&flags, 1, out + 53);
	return TRACEPARENT_LEN;
}

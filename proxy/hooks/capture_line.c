/* capture_line: see capture_line.h.
 *
 * The line is written member by member in the fixed order (a table would
 * hide it: the order is the format). JSON values go through the
 * recorder's redacting writer (redact_json_text_to): the same text as
 * json_dumps of the masked copy, without making the copy; jansson's own
 * dump was a third of a captured call's instructions (callgrind).
 */
#include "proxy/hooks/capture_line.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "proxy/hooks/redact.h"

static int put_cb(const char *buf, size_t size, void *data)
{
	sbuf_putn(data, buf, size);
	return 0;
}

static void put_str(struct sbuf *out, const char *s)
{
	if (s)
		sbuf_json_str(out, s, strlen(s));
	else
		sbuf_puts(out, "null");
}

/* v as compact JSON through rd (see capture_line.h); NULL: null. */
void capture_line_value(struct sbuf *out, const json_t *v, const struct redact *rd)
{
	if (!v) {
		sbuf_puts(out, "null");
		return;
	}
	if (rd) {
		/* No cut: SIZE_MAX characters. */
		if (redact_json_text_to(rd, v, SIZE_MAX, NULL, out) < 0)
			out->oom = 1;
		return;
	}
	if (json_dump_callback(v, put_cb, out, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER) < 0)
		out->oom = 1;
}

/* {"name":…,"version":…} of a clientInfo: the two members a client is
 * re-created with; anything else there (title, icons) is left out. */
void capture_line_client(struct sbuf *out, const json_t *info, const struct redact *rd)
{
	if (!json_is_object(info)) {
		sbuf_puts(out, "null");
		return;
	}
	sbuf_puts(out, "{\"name\":");
	capture_line_value(out, json_object_get(info, "name"), rd);
	sbuf_puts(out, ",\"version\":");
	capture_line_value(out, json_object_get(info, "version"), rd);
	sbuf_puts(out, "}");
}

/* n as exactly `digits` decimal digits at w. */
static char *put_digits(char *w, unsigned n, int digits)
{
	for (int i = digits - 1; i >= 0; i--, n /= 10)
		w[i] = (char)('0' + n % 10);
	return w + digits;
}

/* Civil date of a day count since 1970-01-01 (proleptic Gregorian; the
 * days-from-civil inverse of H. Hinnant's public-domain date algorithms):
 * no strftime, no locale, on every line. */
void capture_line_time(uint64_t unix_us, char *buf, size_t len)
{
	uint64_t secs = unix_us / 1000000u;
	long long z = (long long)(secs / 86400u) + 719468;
	unsigned sod = (unsigned)(secs % 86400u);
	long long era = z / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	unsigned d = doy - (153 * mp + 2) / 5 + 1;
	unsigned m = mp < 10 ? mp + 3 : mp - 9;
	unsigned y = (unsigned)(yoe + era * 400) + (m <= 2);
	char t[32], *w = t;
	w = put_digits(w, y, 4);
	*w++ = '-';
	w = put_digits(w, m, 2);
	*w++ = '-';
	w = put_digits(w, d, 2);
	*w++ = 'T';
	w = put_digits(w, sod / 3600, 2);
	*w++ = ':';
	w = put_digits(w, sod / 60 % 60, 2);
	*w++ = ':';
	w = put_digits(w, sod % 60, 2);
	*w++ = '.';
	w = put_digits(w, (unsigned)(unix_us % 1000000u / 1000u), 3);
	*w++ = 'Z';
	*w = '\0';
	snprintf(buf, len, "%s", t);
}

size_t capture_line_head(uint64_t seq, char *buf, size_t len)
{
	int n = snprintf(buf, len, "{\"capture\":%d,\"seq\":%" PRIu64, CAPTURE_LINE_VERSION, seq);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

int capture_line_body(const struct capture_line *c, const struct redact *rd, struct sbuf *out)
{
	char when[40];
	static const json_t *const none = NULL;

	capture_line_time(c->time_us, when, sizeof(when));
	sbuf_puts(out, ",\"time\":");
	put_str(out, when);
	sbuf_puts(out, ",\"upstream\":");
	put_str(out, c->upstream);
	sbuf_puts(out, ",\"session\":");
	put_str(out, c->session);
	sbuf_puts(out, ",\"era\":");
	put_str(out, c->era);
	sbuf_puts(out, ",\"transport\":");
	put_str(out, c->transport);
	sbuf_puts(out, ",\"client\":");
	if (c->client_text)
		sbuf_puts(out, c->client_text);
	else
		capture_line_client(out, c->client_info, rd);
	sbuf_puts(out, ",\"capabilities\":");
	if (c->capabilities_text)
		sbuf_puts(out, c->capabilities_text);
	else
		capture_line_value(out, json_is_object(c->capabilities) ? c->capabilities : none, rd);
	sbuf_puts(out, ",\"method\":");
	put_str(out, c->method);
	sbuf_puts(out, ",\"id\":");
	/* The id is the client's to match answers by: never masked. */
	if (json_is_integer(c->id))
		sbuf_i64(out, (long long)json_integer_value(c->id));
	else if (json_is_string(c->id))
		sbuf_json_str(out, json_string_value(c->id), json_string_length(c->id));
	else
		capture_line_value(out, c->id, NULL);
	sbuf_puts(out, ",\"params\":");
	if (c->params)
		capture_line_value(out, c->params, rd);
	else
		sbuf_puts(out, "{}");
	sbuf_puts(out, c->redacted ? ",\"redacted\":true" : ",\"redacted\":false");
	sbuf_puts(out, ",\"outcome\":");
	put_str(out, c->outcome);
	if (c->result) {
		sbuf_puts(out, ",\"result\":");
		capture_line_value(out, c->result, rd);
	} else if (c->error) {
		sbuf_puts(out, ",\"error\":");
		capture_line_value(out, c->error, rd);
		if (c->by_proxy)
			sbuf_puts(out, ",\"by\":\"proxy\"");
	}
	/* Milliseconds with three decimals, as "%.3f" writes them. */
	char frac[8] = ".";
	put_digits(frac + 1, (unsigned)(c->latency_us % 1000u), 3);
	sbuf_puts(out, ",\"ms\":");
	sbuf_i64(out, (long long)(c->latency_us / 1000u));
	sbuf_putn(out, frac, 4);
	sbuf_puts(out, "}");
	return out->oom ? -1 : 0;
}

int capture_line_write(const struct capture_line *c, uint64_t seq, const struct redact *rd,
                       struct sbuf *out)
{
	char head[CAPTURE_LINE_HEAD_MAX];
	size_t n = capture_line_head(seq, head, sizeof(head));
	sbuf_putn(out, head, n);
	return capture_line_body(c, rd, out);
}

/* capture_line: see capture_line.h.
 *
 * The line is written member by member in the fixed order (a table would
 * hide it: the order is the format). JSON values go through jansson's
 * compact dump (the same text json_dumps gives, so a reader comparing
 * captured and live values sees what the wire carried); redaction first
 * makes the recorder's masked deep copy (redact_json), which is what
 * costs on a large result: capture is opt-in, and the copy is made on the
 * worker only while the file is on.
 */
#include "proxy/hooks/capture_line.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proxy/hooks/hook_record.h"
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

/* v as compact JSON, redacted with rd when rd is given; NULL: null. */
static void put_value(struct sbuf *out, const json_t *v, const struct redact *rd)
{
	if (!v) {
		sbuf_puts(out, "null");
		return;
	}
	json_t *shown = rd ? redact_json(rd, v) : NULL;
	if (rd && !shown) {
		out->oom = 1;
		return;
	}
	if (json_dump_callback(shown ? shown : v, put_cb, out,
	                       JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER) < 0)
		out->oom = 1;
	json_decref(shown);
}

/* {"name":…,"version":…} of a clientInfo: the two members a client is
 * re-created with; anything else there (title, icons) is left out. */
static void put_client(struct sbuf *out, const json_t *info, const struct redact *rd)
{
	if (!json_is_object(info)) {
		sbuf_puts(out, "null");
		return;
	}
	sbuf_puts(out, "{\"name\":");
	put_value(out, json_object_get(info, "name"), rd);
	sbuf_puts(out, ",\"version\":");
	put_value(out, json_object_get(info, "version"), rd);
	sbuf_puts(out, "}");
}

/* The recorder's time (microseconds) cut to milliseconds. */
void capture_line_time(uint64_t unix_us, char *buf, size_t len)
{
	char us[40];
	hook_record_time(unix_us, us, sizeof(us));
	char *dot = strchr(us, '.');
	if (dot && strlen(dot) >= 5)
		memcpy(dot + 4, "Z", 2);
	snprintf(buf, len, "%s", us);
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
	put_client(out, c->client_info, rd);
	sbuf_puts(out, ",\"capabilities\":");
	put_value(out, json_is_object(c->capabilities) ? c->capabilities : none, rd);
	sbuf_puts(out, ",\"method\":");
	put_str(out, c->method);
	sbuf_puts(out, ",\"id\":");
	/* The id is the client's to match answers by: never masked. */
	put_value(out, c->id, NULL);
	sbuf_puts(out, ",\"params\":");
	if (c->params)
		put_value(out, c->params, rd);
	else
		sbuf_puts(out, "{}");
	sbuf_puts(out, rd ? ",\"redacted\":true" : ",\"redacted\":false");
	sbuf_puts(out, ",\"outcome\":");
	put_str(out, c->outcome);
	if (c->result) {
		sbuf_puts(out, ",\"result\":");
		put_value(out, c->result, rd);
	} else if (c->error) {
		sbuf_puts(out, ",\"error\":");
		put_value(out, c->error, rd);
		if (c->by_proxy)
			sbuf_puts(out, ",\"by\":\"proxy\"");
	}
	sbuf_printf(out, ",\"ms\":%.3f}", (double)c->latency_us / 1000.0);
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

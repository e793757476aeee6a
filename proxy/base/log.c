/* log: see log.h. Lines are written with one fputs so that they are never
 * interleaved; stderr is unbuffered, so each line is one write(2). */
#include "proxy/base/log.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/time.h>

#include <jansson.h>

/* Set at start and by a reload (SIGHUP, worker 0's thread) while every
 * worker logs: read and written atomically. */
static int log_min = LOG_INFO;
static int log_json;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_setup(enum log_level level, int json)
{
	__atomic_store_n(&log_min, (int)level, __ATOMIC_RELAXED);
	__atomic_store_n(&log_json, json, __ATOMIC_RELAXED);
}

int log_enabled(enum log_level level)
{
	return (int)level >= __atomic_load_n(&log_min, __ATOMIC_RELAXED);
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (int i = LOG_DEBUG; i <= LOG_ERROR; i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

/* RFC 3339 UTC with milliseconds. The seconds are written once per
 * second and thread (strftime and gmtime_r cost some 1,500 instructions a
 * line, an access line per request). */
static void log_time(char *buf, size_t len)
{
	static _Thread_local struct {
		time_t sec;
		char text[32];
		size_t len;
	} tl;
	struct timeval tv;

	gettimeofday(&tv, NULL);
	if (tv.tv_sec != tl.sec || !tl.len) {
		struct tm tm;
		gmtime_r(&tv.tv_sec, &tm);
		tl.len = strftime(tl.text, sizeof(tl.text), "%Y-%m-%dT%H:%M:%S", &tm);
		tl.sec = tv.tv_sec;
	}
	unsigned ms = (unsigned)(tv.tv_usec / 1000);
	if (len < tl.len + 6) {
		if (len)
			buf[0] = '\0';
		return;
	}
	memcpy(buf, tl.text, tl.len);
	char *p = buf + tl.len;
	p[0] = '.';
	p[1] = (char)('0' + ms / 100);
	p[2] = (char)('0' + ms / 10 % 10);
	p[3] = (char)('0' + ms % 10);
	p[4] = 'Z';
	p[5] = '\0';
}

/* Reals with 15 significant digits: every double that is the nearest to
 * a decimal of up to 15 digits (a latency in whole microseconds, a score
 * in hundredths) prints as that decimal, where jansson's default 17 shows
 * the binary noise (0.058000000000000003). */
#define LOG_JSON_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

static void log_emit_json(json_t *obj)
{
	char *s = json_dumps(obj, LOG_JSON_FLAGS);
	if (s) {
		size_t n = strlen(s);
		char line[8192];
		if (n + 2 <= sizeof(line)) {
			memcpy(line, s, n);
			line[n] = '\n';
			line[n + 1] = '\0';
			fputs(line, stderr);
		} else {
			fprintf(stderr, "%s\n", s);
		}
		free(s);
	}
	json_decref(obj);
}

/* Writes a text line with every control byte shown as \xNN and every C1
 * control (U+0080..U+009F, which some terminals obey like ESC) as \u00NN,
 * then the one newline. Tool names, methods and paths are the client's
 * bytes: raw, a newline in one forged a second log line and an escape
 * sequence reached the operator's terminal. UTF-8 text is kept.
 * keep_newlines: only for log_block's own multi-line reports. */
#define ONES  0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Whether the 8 bytes of w are all printable ASCII (0x20..0x7e): none
 * below 0x20, none equal to 0x7f, none from 0x80 (a NUL is below 0x20). */
static int plain8(uint64_t w)
{
	uint64_t low = (w - ONES * 0x20) & ~w & HIGHS;
	uint64_t del = w ^ (ONES * 0x7f);
	del = (del - ONES) & ~del & HIGHS;
	return !(low | del | (w & HIGHS));
}

static void log_put_text(const char *s, int keep_newlines)
{
	static const char hex[] = "0123456789abcdef";
	char out[4400];
	size_t o = 0;
	const unsigned char *p = (const unsigned char *)s;

	/* Most lines are printable ASCII: 8 bytes at a time while they are
	 * (byte by byte, a line of 150 bytes cost some 2,500 instructions). */
	for (size_t n = strlen(s); n >= 8 && o + 16 < sizeof(out); n -= 8, p += 8, o += 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		if (!plain8(w))
			break;
		memcpy(out + o, &w, 8);
	}
	for (; *p && o + 8 < sizeof(out); p++) {
		if (*p == '\n' && keep_newlines) {
			out[o++] = '\n';
		} else if (*p < 0x20 || *p == 0x7f) {
			memcpy(out + o, "\\x", 2);
			out[o + 2] = hex[*p >> 4];
			out[o + 3] = hex[*p & 15];
			o += 4;
		} else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = hex[p[1] >> 4];
			out[o + 5] = hex[p[1] & 15];
			o += 6;
			p++;
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o++] = '\n';
	out[o] = '\0';
	fputs(out, stderr);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char ts[40], msg[2048], line[2200];
	va_list ap;

	if (!log_enabled(level))
		return;
	log_time(ts, sizeof(ts));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (__atomic_load_n(&log_json, __ATOMIC_RELAXED)) {
		json_t *o = json_object();
		json_object_set_new(o, "time", json_string(ts));
		json_object_set_new(o, "level", json_string(level_names[level]));
		json_object_set_new(o, "msg", json_string(msg));
		log_emit_json(o);
		return;
	}
	snprintf(line, sizeof(line), "%s %-5s %s", ts, level_names[level], msg);
	log_put_text(line, 0);
}

/* Every key in every access line, null when unknown: one shape, whether
 * the request reached an adapter or was refused as it arrived. */
static void set_str(json_t *o, const char *k, const char *v)
{
	json_object_set_new(o, k, v ? json_string(v) : json_null());
}

/* A text line being written into a fixed buffer, cut at its end as
 * snprintf cuts. */
struct line {
	char *p;
	size_t n, cap;  /* cap counts the terminating NUL */
};

static void line_putn(struct line *l, const char *s, size_t k)
{
	if (k > l->cap - 1 - l->n)
		k = l->cap - 1 - l->n;
	memcpy(l->p + l->n, s, k);
	l->n += k;
}

static void line_puts(struct line *l, const char *s)
{
	line_putn(l, s, strlen(s));
}

static void line_u64(struct line *l, unsigned long long v)
{
	char d[24];
	size_t i = sizeof(d);
	do
		d[--i] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	line_putn(l, d + i, sizeof(d) - i);
}

/* " <key><value>" when value is set. */
static void line_opt(struct line *l, const char *key, const char *value)
{
	if (!value)
		return;
	line_puts(l, key);
	line_puts(l, value);
}

/* The text access line, written by hand: snprintf with its 19
 * conversions cost some 7,000 instructions a request (callgrind,
 * tests/perf/guard.mjs at log level info). */
static void access_text(const struct log_access *a, const char *ts, char *buf, size_t cap)
{
	struct line l = {buf, 0, cap};
	line_puts(&l, ts);
	line_puts(&l, " info  #");
	line_u64(&l, a->conn_id);
	line_puts(&l, " ");
	line_puts(&l, a->client ? a->client : "-");
	line_opt(&l, " as=", a->client_name);
	line_puts(&l, " ");
	line_puts(&l, a->http_method ? a->http_method : "-");
	line_puts(&l, " ");
	line_puts(&l, a->path ? a->path : "-");
	line_opt(&l, " ", a->rpc_method);
	line_opt(&l, " tool=", a->tool);
	line_puts(&l, " -> ");
	if (a->status < 0) {
		line_puts(&l, "-");
		line_u64(&l, (unsigned long long)-(long long)a->status);
	} else {
		line_u64(&l, (unsigned long long)a->status);
	}
	line_puts(&l, " ");
	unsigned long long tenths = (a->latency_us + 50) / 100;
	line_u64(&l, tenths / 10);
	line_puts(&l, ".");
	line_u64(&l, tenths % 10);
	line_puts(&l, "ms in=");
	line_u64(&l, a->bytes_in);
	line_puts(&l, " out=");
	line_u64(&l, a->bytes_out);
	line_opt(&l, " up=", a->upstream);
	line_opt(&l, " note=", a->note);
	buf[l.n] = '\0';
}

void log_access(const struct log_access *a)
{
	char ts[40], line[2048];

	if (!log_enabled(LOG_INFO))
		return;
	log_time(ts, sizeof(ts));
	if (__atomic_load_n(&log_json, __ATOMIC_RELAXED)) {
		json_t *o = json_object();
		json_object_set_new(o, "time", json_string(ts));
		json_object_set_new(o, "level", json_string("info"));
		json_object_set_new(o, "msg", json_string("request"));
		json_object_set_new(o, "conn", json_integer((json_int_t)a->conn_id));
		set_str(o, "client", a->client);
		set_str(o, "client_name", a->client_name);
		set_str(o, "http_method", a->http_method);
		set_str(o, "path", a->path);
		set_str(o, "upstream", a->upstream);
		set_str(o, "rpc_method", a->rpc_method);
		set_str(o, "tool", a->tool);
		json_object_set_new(o, "status", json_integer(a->status));
		/* Whole microseconds, as measured. */
		json_object_set_new(o, "latency_ms", json_real((double)a->latency_us / 1000.0));
		json_object_set_new(o, "bytes_in", json_integer((json_int_t)a->bytes_in));
		json_object_set_new(o, "bytes_out", json_integer((json_int_t)a->bytes_out));
		set_str(o, "note", a->note);
		log_emit_json(o);
		return;
	}
	access_text(a, ts, line, sizeof(line));
	log_put_text(line, 0);
}

void log_block(enum log_level level, const char *head, const char *text)
{
	char ts[40], line[4400];

	if (!log_enabled(level))
		return;
	if (__atomic_load_n(&log_json, __ATOMIC_RELAXED)) {
		log_msg(level, "%s\n%s", head, text);
		return;
	}
	log_time(ts, sizeof(ts));
	snprintf(line, sizeof(line), "%s %-5s %s\n%s", ts, level_names[level], head, text);
	log_put_text(line, 1);
}

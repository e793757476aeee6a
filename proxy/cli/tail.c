/* tail: see tail.h.
 *
 * The stream's events are records (one compact JSON object each, id = the
 * record's seq) and "gap" events when the ring overwrote records the
 * stream had not sent yet; both are read here, printed through cli_emit
 * so the token cannot appear even if a record echoed it.
 */
#include "proxy/cli/tail.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proxy/base/sse.h"
#include "proxy/cli/admin_client.h"
#include "proxy/cli/cli_out.h"

#define TAIL_TIMEOUT_S  10.0
/* The endpoint sends a keep-alive after 15 s of quiet by default
 * (timeouts.sse_keepalive_ms): this much silence means it is gone (a host
 * down, a cut network), which a TCP connection alone may never say. */
#define TAIL_IDLE_S     300.0
/* A record is cut by the recorder (arguments 1000 characters, result
 * preview 800, findings masked and bounded): far under this. */
#define TAIL_MAX_EVENT  (1024u * 1024)
#define TAIL_LINE_MAX   1024
#define TAIL_FIELD_MAX  48   /* bytes of a name shown in a column */

static const char tail_usage[] =
	"usage: mcpwarden tail ADMIN_URL [--tool NAME] [--outcome OUTCOME] [--upstream NAME]\n"
	"                                [--color auto|always|never] [--json] [--token TOKEN]\n"
	"\n"
	"Follows a running mcpwarden's calls on its admin endpoint (/calls/stream),\n"
	"one line a call: time, upstream, tool (or method), outcome, latency, and the\n"
	"live contract's findings. ADMIN_URL: http://127.0.0.1:9090 or https://...\n"
	"(verified against the system CAs; SSL_CERT_FILE names another bundle).\n"
	"  --tool NAME        only calls of that tool\n"
	"  --outcome OUTCOME  ok, tool_error, rpc_error, blocked, upstream_error, timeout\n"
	"                     or cancelled\n"
	"  --upstream NAME    only calls to that upstream\n"
	"  --color WHEN       colour the outcome: auto (default: on a terminal, unless\n"
	"                     NO_COLOR is set), always, never\n"
	"  --json             each record as one JSON line, as the endpoint sent it\n"
	"  --token TOKEN      the admin token (default: $MCPWARDEN_ADMIN_TOKEN, which\n"
	"                     keeps it out of the process list); never printed\n"
	"Only calls from now on are shown. There is no reconnect: when the proxy ends\n"
	"the stream (it shuts down) tail says so and exits 0; when the connection\n"
	"fails or is lost (or is silent for 5 minutes, not even a keep-alive) it\n"
	"exits 2 with the reason. Ctrl-C exits 0.\n"
	"Exit status: 0 the stream ended or was interrupted, 2 error or bad usage.\n";

static const char *const outcomes[] = {
	"ok", "tool_error", "rpc_error", "blocked", "upstream_error", "timeout", "cancelled", NULL,
};

/* ---- options ----------------------------------------------------------------- */

static int known_outcome(const char *s)
{
	for (size_t i = 0; outcomes[i]; i++)
		if (strcmp(outcomes[i], s) == 0)
			return 1;
	return 0;
}

int tail_parse_args(int argc, char **argv, struct tail_opts *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	const struct {
		const char *flag;
		const char **dst; /* NULL: --color */
	} valued[] = {
		{"--tool", &o->tool},   {"--outcome", &o->outcome}, {"--upstream", &o->upstream},
		{"--token", &o->token}, {"--color", NULL},          {"--colour", NULL},
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t k = 0, nv = sizeof(valued) / sizeof(valued[0]);
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return 1;
		if (strcmp(a, "--json") == 0) {
			o->json = 1;
			continue;
		}
		while (k < nv && strcmp(valued[k].flag, a) != 0)
			k++;
		if (k == nv && a[0] == '-' && a[1]) {
			snprintf(err, errlen, "unknown option %.60s (mcpwarden tail --help)", a);
			return -1;
		}
		if (k == nv && o->url) {
			snprintf(err, errlen, "one ADMIN_URL only (mcpwarden tail --help)");
			return -1;
		}
		if (k == nv) {
			o->url = a;
			continue;
		}
		const char **dst = valued[k].dst;
		if (i + 1 >= argc) {
			snprintf(err, errlen, "%s needs a value", a);
			return -1;
		}
		const char *v = argv[++i];
		if (dst) {
			if (*dst) {
				snprintf(err, errlen, "%s given twice", a);
				return -1;
			}
			*dst = v;
			continue;
		}
		if (strcmp(v, "auto") == 0)
			o->color = TAIL_COLOR_AUTO;
		else if (strcmp(v, "always") == 0)
			o->color = TAIL_COLOR_ALWAYS;
		else if (strcmp(v, "never") == 0)
			o->color = TAIL_COLOR_NEVER;
		else {
			snprintf(err, errlen, "--color: auto, always or never");
			return -1;
		}
	}
	if (!o->url) {
		snprintf(err, errlen, "ADMIN_URL missing (mcpwarden tail --help)");
		return -1;
	}
	if (o->outcome && !known_outcome(o->outcome)) {
		snprintf(err, errlen, "--outcome: one of ok, tool_error, rpc_error, blocked, "
		                      "upstream_error, timeout, cancelled");
		return -1;
	}
	const char **names[] = {&o->tool, &o->upstream};
	for (size_t i = 0; i < 2; i++) {
		if (*names[i] && !**names[i]) {
			snprintf(err, errlen, "--%s: an empty name matches nothing",
			         i == 0 ? "tool" : "upstream");
			return -1;
		}
	}
	if (!o->token) {
		const char *env = getenv("MCPWARDEN_ADMIN_TOKEN");
		o->token = env && *env ? env : NULL;
	}
	return 0;
}

/* Appends "&name=value" (or "?name=value" first), percent-encoding every
 * byte outside the unreserved set. Returns 0, or -1 when it does not fit. */
static int add_param(char *buf, size_t cap, size_t *w, const char *name, const char *v)
{
	static const char hex[] = "0123456789ABCDEF";
	int n = snprintf(buf + *w, cap - *w, "%s%s=", strchr(buf, '?') ? "&" : "?", name);
	if (n < 0 || (size_t)n >= cap - *w)
		return -1;
	*w += (size_t)n;
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		            (*p >= '0' && *p <= '9') || strchr("-._~", *p);
		if (*w + (plain ? 1 : 3) >= cap)
			return -1;
		if (plain) {
			buf[(*w)++] = (char)*p;
		} else {
			buf[(*w)++] = '%';
			buf[(*w)++] = hex[*p >> 4];
			buf[(*w)++] = hex[*p & 15];
		}
	}
	buf[*w] = '\0';
	return 0;
}

int tail_stream_path(const struct tail_opts *o, char *buf, size_t cap)
{
	size_t w = 0;
	int n = snprintf(buf, cap, "/calls/stream");
	if (n < 0 || (size_t)n >= cap)
		return -1;
	w = (size_t)n;
	if (o->tool && add_param(buf, cap, &w, "tool", o->tool) < 0)
		return -1;
	if (o->outcome && add_param(buf, cap, &w, "outcome", o->outcome) < 0)
		return -1;
	return 0;
}

static int str_is(const json_t *rec, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(rec, key));
	return v && strcmp(v, want) == 0;
}

int tail_match(const struct tail_opts *o, const json_t *rec)
{
	/* The endpoint filters tool and outcome already; checked again so
	 * an endpoint that ignores a filter cannot make tail show more. */
	return json_is_object(rec) && (!o->tool || str_is(rec, "tool", o->tool)) &&
	       (!o->outcome || str_is(rec, "outcome", o->outcome)) &&
	       (!o->upstream || str_is(rec, "upstream", o->upstream));
}

int tail_use_color(enum tail_color c, const char *no_color, int is_tty)
{
	if (c != TAIL_COLOR_AUTO)
		return c == TAIL_COLOR_ALWAYS;
	return is_tty && !(no_color && *no_color);
}

/* ---- one line ------------------------------------------------------------------ */

struct line {
	char *buf;
	size_t cap, w;
};

static void put(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct line *l, const char *fmt, ...)
{
	if (l->w + 1 >= l->cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(l->buf + l->w, l->cap - l->w, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->w += (size_t)n < l->cap - l->w ? (size_t)n : l->cap - l->w - 1;
}

size_t tail_printable(const char *s, size_t max, char *out, size_t cap)
{
	size_t w = 0, shown = 0;
	if (cap < 4)
		return 0;
	if (max > cap - 4)
		max = cap - 4; /* room for the '…' and the NUL */
	if (!s)
		s = "-";
	size_t i = 0, n = strlen(s);
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
		int bad = c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xc2) || c > 0xf4 || i + len > n;
		for (size_t k = 1; !bad && k < len; k++)
			bad = ((unsigned char)s[i + k] & 0xc0) != 0x80;
		if (bad)
			len = 1;
		/* U+0080..U+009F: C1 controls (CSI among them), one '?' each */
		else if (c == 0xc2 && (unsigned char)s[i + 1] < 0xa0)
			bad = 1;
		if (w + (bad ? 1 : len) > max) {
			memcpy(out + w, "\xe2\x80\xa6", 3);
			w += 3;
			shown++;
			break;
		}
		if (bad)
			out[w++] = '?';
		else {
			memcpy(out + w, s + i, len);
			w += len;
		}
		shown++;
		i += len;
	}
	out[w] = '\0';
	return shown;
}

/* s (the record's words: a client's tool name, an upstream's rule) made
 * printable, cut to max bytes, padded with spaces to width (0: none). */
static void put_field(struct line *l, const char *s, size_t max, size_t width)
{
	char out[TAIL_FIELD_MAX * 2 + 8];
	size_t shown = tail_printable(s, max, out, sizeof(out));
	put(l, "%s", out);
	for (; shown < width; shown++)
		put(l, " ");
}

static const char *outcome_color(const char *outcome)
{
	static const struct {
		const char *name, *sgr;
	} colors[] = {
		{"ok", "32"},             {"tool_error", "33"}, {"rpc_error", "33"},
		{"blocked", "35"},        {"upstream_error", "31"}, {"timeout", "31"},
		{"cancelled", "2"},
	};
	for (size_t i = 0; outcome && i < sizeof(colors) / sizeof(colors[0]); i++)
		if (strcmp(colors[i].name, outcome) == 0)
			return colors[i].sgr;
	return "1";
}

/* RFC 3339 with microseconds cut to milliseconds: "2026-12-02T02:30:00.123Z". */
static void put_time(struct line *l, const char *t)
{
	if (t && strlen(t) >= 23 && t[10] == 'T' && t[19] == '.') {
		char ms[24];
		memcpy(ms, t, 23);
		ms[23] = '\0';
		put_field(l, ms, 23, 0);
		put(l, "Z");
		return;
	}
	put_field(l, t, 32, 24);
}

static void put_latency(struct line *l, const json_t *v)
{
	if (!json_is_integer(v)) {
		put(l, "%9s", "-");
		return;
	}
	double us = (double)json_integer_value(v);
	if (us < 1000)
		put(l, "%6.0f us", us);
	else if (us < 10e6)
		put(l, "%6.1f ms", us / 1e3);
	else
		put(l, "%7.1f s", us / 1e6);
}

size_t tail_format(const json_t *rec, int color, char *buf, size_t cap)
{
	struct line l = {buf, cap, 0};
	if (!cap)
		return 0;
	buf[0] = '\0';
	const char *outcome = json_string_value(json_object_get(rec, "outcome"));
	const char *tool = json_string_value(json_object_get(rec, "tool"));
	const char *name = tool ? tool : json_string_value(json_object_get(rec, "method"));

	put_time(&l, json_string_value(json_object_get(rec, "time")));
	put(&l, "  ");
	put_field(&l, json_string_value(json_object_get(rec, "upstream")), TAIL_FIELD_MAX, 12);
	put(&l, "  ");
	put_field(&l, name, TAIL_FIELD_MAX, 24);
	put(&l, "  ");
	if (color)
		put(&l, "\x1b[%sm", outcome_color(outcome));
	put_field(&l, outcome, 20, color ? 0 : 14);
	if (color) {
		put(&l, "\x1b[0m");
		for (size_t n = outcome ? strlen(outcome) : 1; n < 14; n++)
			put(&l, " ");
	}
	put(&l, "  ");
	put_latency(&l, json_object_get(rec, "latency_us"));
	size_t nf = json_array_size(json_object_get(rec, "findings"));
	if (nf)
		put(&l, "  %zu finding%s", nf, nf == 1 ? "" : "s");
	const char *rule = json_string_value(json_object_get(rec, "rule"));
	if (rule) {
		put(&l, "  rule=");
		put_field(&l, rule, TAIL_FIELD_MAX * 2, 0);
	}
	/* no trailing spaces */
	while (l.w && buf[l.w - 1] == ' ')
		buf[--l.w] = '\0';
	return l.w;
}

/* ---- the stream ---------------------------------------------------------------- */

struct tail_run {
	const struct tail_opts *o;
	const struct cli_secrets *sec;
	int color;
};

static int on_event(void *arg, const struct sse_event *ev)
{
	struct tail_run *t = arg;
	if (!ev->data)
		return 0;
	if (ev->event && ev->event_len == 3 && memcmp(ev->event, "gap", 3) == 0) {
		json_t *g = json_loadb(ev->data, ev->data_len, 0, NULL);
		json_int_t from = json_integer_value(json_object_get(g, "missed_from"));
		json_int_t to = json_integer_value(json_object_get(g, "missed_to"));
		json_decref(g);
		fprintf(stderr, "mcpwarden tail: %lld record%s missed (the ring overwrote them before "
		                "they were sent)\n", (long long)(to - from + 1), to == from ? "" : "s");
		return 0;
	}
	if (ev->event && !(ev->event_len == 7 && memcmp(ev->event, "message", 7) == 0))
		return 0; /* a kind of event this version does not know */
	json_t *rec = json_loadb(ev->data, ev->data_len, 0, NULL);
	if (!rec) {
		fprintf(stderr, "mcpwarden tail: an event is not JSON (skipped)\n");
		return 0;
	}
	int rc = 0;
	if (tail_match(t->o, rec)) {
		if (t->o->json) {
			char *s = strndup(ev->data, ev->data_len);
			if (s) {
				cli_emit(t->sec, stdout, s);
				fputc('\n', stdout);
			}
			free(s);
		} else {
			char line[TAIL_LINE_MAX];
			tail_format(rec, t->color, line, sizeof(line));
			cli_emit(t->sec, stdout, line);
			fputc('\n', stdout);
		}
		/* one line at a time: a pipe or a test sees each call at once */
		rc = fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
	}
	json_decref(rec);
	return rc;
}

int tail_main(int argc, char **argv)
{
	struct tail_opts o;
	struct cli_secrets sec = {0};
	char err[512], path[1024];

	int prc = tail_parse_args(argc, argv, &o, err, sizeof(err));
	if (prc == 1) {
		fputs(tail_usage, stdout);
		return CLI_EXIT_PASS;
	}
	if (prc < 0) {
		fprintf(stderr, "mcpwarden tail: %s\n", err);
		return CLI_EXIT_ERROR;
	}
	if (o.token)
		cli_secrets_add(&sec, o.token, strlen(o.token));
	if (tail_stream_path(&o, path, sizeof(path)) < 0) {
		fprintf(stderr, "mcpwarden tail: --tool is too long\n");
		cli_secrets_free(&sec);
		return CLI_EXIT_ERROR;
	}
	struct admin_client_target tg = {.url = o.url, .token = o.token, .timeout_s = TAIL_TIMEOUT_S,
	                                 .idle_s = TAIL_IDLE_S};
	struct admin_client *ac = admin_client_new(&tg, err, sizeof(err));
	if (!ac) {
		cli_emitf(&sec, stderr, "mcpwarden tail: %s\n", err);
		cli_secrets_free(&sec);
		return CLI_EXIT_ERROR;
	}
	struct tail_run t = {
		.o = &o,
		.sec = &sec,
		.color = tail_use_color(o.color, getenv("NO_COLOR"), isatty(STDOUT_FILENO)),
	};
	enum admin_stream_end end =
		admin_client_stream(ac, path, TAIL_MAX_EVENT, on_event, &t, err, sizeof(err));
	int rc = CLI_EXIT_PASS;
	if (end == ADMIN_STREAM_CLOSED) {
		cli_emitf(&sec, stderr, "mcpwarden tail: %s ended the stream (the proxy is shutting "
		                        "down)\n", admin_client_url(ac));
	} else if (end == ADMIN_STREAM_ERROR) {
		cli_emitf(&sec, stderr, "mcpwarden tail: %s\n", err);
		rc = CLI_EXIT_ERROR;
	}
	admin_client_free(ac);
	cli_secrets_free(&sec);
	return rc;
}

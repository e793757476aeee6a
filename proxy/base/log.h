/* log: leveled log lines on stderr, as text or as one JSON object a line.
 *
 * The level and format are process-wide (set once by main before the loop
 * starts) because every module logs and threading a logger through each
 * call would buy nothing: there is one event loop and one stderr.
 * Callers never pass secrets: URLs go through config's redacted form and
 * header values are never logged.
 */
#ifndef MCPWARDEN_LOG_H
#define MCPWARDEN_LOG_H

#include <stdarg.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_setup(enum log_level level, int json);
int log_enabled(enum log_level level);
/* Parses "debug|info|warn|error"; returns 0 or -1. */
int log_level_parse(const char *s, enum log_level *out);

/* A free-form line (message is printf-formatted). In text, control bytes
 * come out as \xNN and C1 controls as \u00NN: always one line. */
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A report of several lines (a config's errors, one per line): head on
 * the log line, then text as it is, line by line. Control bytes other
 * than the newlines are escaped as in every text line; in JSON one object
 * whose msg holds both. Only for text the program wrote itself: a client's
 * bytes go through log_msg, where a newline cannot start a line. */
void log_block(enum log_level level, const char *head, const char *text);

/* The one access-log line per HTTP request, also for a request refused
 * before any adapter saw it (conn.c: 400, 405, 408, 413, 431, 503, 505),
 * so every such line has the same fields: in JSON every key is there
 * (null when unknown), in text the same order with "-" for an unknown
 * method or path. Strings may be NULL; note is a static reason, never
 * bytes the client sent. */
struct log_access {
	unsigned long long conn_id;
	const char *client;      /* "ip:port" */
	const char *client_name; /* whose client token, or NULL */
	const char *http_method;
	const char *path;        /* without query string */
	const char *upstream;    /* upstream name */
	const char *rpc_method;  /* first JSON-RPC method of the body */
	const char *tool;        /* tools/call params.name */
	int status;
	/* Whole microseconds; text shows milliseconds to a tenth, rounded
	 * half up (1,250 us: 1.3ms), JSON the milliseconds to the us. */
	unsigned long long latency_us;
	unsigned long long bytes_in, bytes_out;
	const char *note;        /* why it failed, when it did */
};
void log_access(const struct log_access *a);

#endif

/* capture_line: one line of a capture file (docs/capture.md), as text.
 *
 * A capture line is one JSON object on one line, its keys always in this
 * order (the format helper "replay" reads; docs/capture.md is the promise):
 *
 *   capture seq time upstream session era transport client capabilities
 *   method id params redacted outcome [result | error [by]] ms
 *
 * "result" is present when the upstream answered a result, "error" when
 * the answer was a JSON-RPC error; "by": "proxy" follows "error" when
 * mcpwarden made that error (a blocked call, an upstream that failed or
 * timed out). Neither when there was no answer at all.
 *
 * The line is written in two parts so that the writer of the file, which
 * alone knows the order lines reach the file, numbers them: the head
 * ({"capture":1,"seq":N) and the body (everything after seq, through the
 * closing brace, no newline). Redaction, when asked, applies the call
 * recorder's rules (proxy/hooks/redact.h) to params, client, capabilities,
 * result and error; the other members are the proxy's own words.
 *
 * Pure: no I/O, no clock, no state. Not here: what a session key is or
 * where client info comes from (hook_capture.c), the file (hook_capture.c).
 */
#ifndef MCPWARDEN_CAPTURE_LINE_H
#define MCPWARDEN_CAPTURE_LINE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "proxy/base/sbuf.h"

struct redact;

#define CAPTURE_LINE_VERSION 1
/* The longest head: {"capture":1,"seq":18446744073709551615 */
#define CAPTURE_LINE_HEAD_MAX 48

/* What one line says. Every pointer is borrowed for the call; NULL means
 * JSON null (or, for result/error, the member is absent). */
struct capture_line {
	uint64_t time_us;            /* Unix time of the request's arrival, µs */
	const char *upstream;
	const char *session;         /* the capture-local session key */
	const char *era;             /* negotiated protocol version */
	const char *transport;       /* the client's: "streamable_http" | "sse" */
	const json_t *client_info;   /* initialize's clientInfo: name, version kept */
	const json_t *capabilities;  /* initialize's capabilities */
	/* Or the same members already written by capture_line_client /
	 * capture_line_value (with the same rd): used instead when not NULL,
	 * so a session's are rendered once, not on every call. */
	const char *client_text, *capabilities_text;
	const char *method;          /* "tools/call" */
	const json_t *id;            /* the client's JSON-RPC id */
	const json_t *params;        /* whole params; NULL: {} */
	const char *outcome;         /* the recorder's outcome word */
	const json_t *result;        /* the answer's result, or NULL */
	const json_t *error;         /* the answer's error, or NULL */
	int by_proxy;                /* mcpwarden made the error */
	int redacted;                /* "redacted": rd (below) masks */
	uint64_t latency_us;         /* arrival to answer */
};

/* Writes {"capture":1,"seq":N into buf (at least CAPTURE_LINE_HEAD_MAX
 * bytes); returns its length. */
size_t capture_line_head(uint64_t seq, char *buf, size_t len);

/* Appends the body (from ,"time" through the closing brace) to out. The
 * JSON values are written through rd (proxy/hooks/redact.h
 * redact_json_text_to, byte for byte json_dumps of the redacted copy):
 * the masking redactor when c->redacted, one without keys or values
 * (nothing masked, the fast writer all the same) when not; NULL: jansson's
 * own dump, unmasked. Returns 0, or -1 when memory ran out (out->oom; out
 * then holds part of it). */
int capture_line_body(const struct capture_line *c, const struct redact *rd, struct sbuf *out);

/* The whole line, head and body, appended to out (tests, one-shot use). */
int capture_line_write(const struct capture_line *c, uint64_t seq, const struct redact *rd,
                       struct sbuf *out);

/* The "client" member's value for clientInfo info ({"name","version"},
 * null when info is not an object) / any value as a line writes it
 * (null for NULL), written through rd as capture_line_body does. */
void capture_line_client(struct sbuf *out, const json_t *info, const struct redact *rd);
void capture_line_value(struct sbuf *out, const json_t *v, const struct redact *rd);

/* Formats a Unix time in µs as "2026-12-02T02:30:00.123Z" (milliseconds)
 * into buf (at least 32 bytes). */
void capture_line_time(uint64_t unix_us, char *buf, size_t len);

#endif

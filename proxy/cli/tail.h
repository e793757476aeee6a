/* tail: the `mcpwarden tail` command (issue 22, item 7): a running
 * mcpwarden's live call stream (admin /calls/stream, admin/admin.h), one
 * readable line a call, for people who live in a shell.
 *
 *   mcpwarden tail ADMIN_URL [--tool NAME] [--outcome OUTCOME] [--upstream NAME]
 *                            [--color auto|always|never] [--json] [--token TOKEN]
 *
 * The token comes from --token or MCPWARDEN_ADMIN_TOKEN and is never
 * printed. --tool and --outcome go to the endpoint (its stream filters);
 * --upstream, which the stream cannot filter on, is applied here. No
 * reconnect (like `kubectl logs -f`): exit 0 when the proxy ends the
 * stream cleanly (a shutdown) or on SIGINT/SIGTERM, 2 with a message when
 * the connection fails or is lost, or on bad usage.
 *
 * The pieces below are exported for the unit tests
 * (tests/unit/cli/test_tail.c); the network half is admin_client.h.
 */
#ifndef MCPWARDEN_TAIL_H
#define MCPWARDEN_TAIL_H

#include <stddef.h>

#include <jansson.h>

enum tail_color { TAIL_COLOR_AUTO = 0, TAIL_COLOR_ALWAYS, TAIL_COLOR_NEVER };

/* The options (strings borrowed from argv or the environment). */
struct tail_opts {
	const char *url, *tool, *outcome, *upstream, *token;
	enum tail_color color;
	int json;
};

/* Parses argv (argv[0] is "tail"); the token falls back to the
 * environment. Returns 0, 1 for --help, -1 with why in err (never the
 * token). */
int tail_parse_args(int argc, char **argv, struct tail_opts *o, char *err, size_t errlen);

/* "/calls/stream" with the server-side filters, percent-encoded, in buf.
 * Returns 0, or -1 when it does not fit. */
int tail_stream_path(const struct tail_opts *o, char *buf, size_t cap);

/* Whether rec (a call record, borrowed) passes every filter of o. */
int tail_match(const struct tail_opts *o, const json_t *rec);

/* One readable line for rec, without the newline, in buf (cut to cap):
 *   TIME  UPSTREAM  TOOL-OR-METHOD  OUTCOME  LATENCY  [N findings] [rule=…]
 * Bytes of the record that a terminal would act on (control characters,
 * escapes, C1 controls) are shown as '?'. color: ANSI colour on the
 * outcome. Returns the length written. */
size_t tail_format(const json_t *rec, int color, char *buf, size_t cap);

/* s made safe for a terminal: bytes a terminal would act on (control
 * characters, ESC, C1 controls, broken UTF-8) become '?'; cut at a
 * character boundary to max bytes with '…'. s NULL: "-". Written to out
 * (cap bytes, at least 4). Returns the characters shown. status.c uses
 * it for the endpoint's words too. */
size_t tail_printable(const char *s, size_t max, char *out, size_t cap);

/* Whether to colour: --color, NO_COLOR (non-empty) and whether stdout
 * is a terminal (is_tty). --color always wins over NO_COLOR. */
int tail_use_color(enum tail_color c, const char *no_color, int is_tty);

/* argv[0] is "tail" (main passes argv + 1). Returns the exit code. */
int tail_main(int argc, char **argv);

#endif

/* cli_out: what the `check` and `diff` commands share: their exit codes,
 * printing with secrets masked, and reading a saved tool listing (with the
 * error messages both commands print for a bad file).
 *
 * Not here: argument parsing (each command has its own options, see
 * check.h and diff.h) and the reports themselves.
 */
#ifndef MCPWARDEN_CLI_OUT_H
#define MCPWARDEN_CLI_OUT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "proxy/cli/report_types.h"

/* What every masked value prints as: •••• */
#define CLI_MASK "\xe2\x80\xa2\xe2\x80\xa2\xe2\x80\xa2\xe2\x80\xa2"

/* Two per --header at most (the whole value and what follows its scheme). */
#define CLI_MAX_SECRETS 64

/* docs/contract.md's exit codes. */
enum cli_exit { CLI_EXIT_PASS = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_ERROR = 2 };

/* The values never to print. Not opaque: check's options embed it by
 * value, zero-initialised (a fixed array, nothing to set up). */
struct cli_secrets {
	char *v[CLI_MAX_SECRETS]; /* owned */
	size_t n;
};

/* Remembers a copy of v[0..len). Values under 4 bytes are ignored (masking
 * them would mangle ordinary words); so are values past the cap. */
void cli_secrets_add(struct cli_secrets *s, const char *v, size_t len);
/* Frees the copies; s itself is the caller's. */
void cli_secrets_free(struct cli_secrets *s);

/* Writes s to f with every secret replaced by CLI_MASK. sec may be NULL
 * (nothing masked). */
void cli_emit(const struct cli_secrets *sec, FILE *f, const char *s);
void cli_emitf(const struct cli_secrets *sec, FILE *f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* j indented, in key order, then a newline. */
void cli_emit_json(const struct cli_secrets *sec, FILE *f, const json_t *j);

/* Loads a saved listing ({"tools":[...]}, a tools/list response or an
 * array) from file. Returns the document (owned), or NULL after printing
 * why on stderr, naming the file as `what` (e.g. "--baseline", "OLD"). */
json_t *cli_load_listing(const char *file, const char *what);

/* ---- where findings sit in a saved listing (issue 21, item 4) -------------
 *
 * The CI formats point a finding at the line of the listing file it is
 * about: the pointers of checks/contract.h and checks/drift.h are into the
 * listing's {"tools":[...]}, and the file may hold that object, a
 * tools/list response ({"result":{"tools":...}}) or a bare array, so each
 * pointer is first moved into the file's own shape, then found in its text
 * (jsonloc.h). */

/* 1 when a drift change (checks/drift.h) points into the old list (what
 * the new one lacks: drift.h's POINTERS), 0 when into the new list. */
int cli_change_in_old(const char *code, const char *message);

#define CLI_LISTING_TEXT_MAX (64u << 20) /* bigger files get no line numbers */

/* A saved listing's text. Not opaque: commands embed it, zeroed. */
struct cli_listing_text {
	const char *file;     /* borrowed: argv */
	char *text;           /* owned, NULL when not read */
	size_t len;
	const json_t *doc;    /* borrowed: the parsed document of the same file */
	/* Where each tool starts (offset, line, column), found once at load:
	 * a finding is then looked for inside its tool's text alone, so
	 * locating every finding of a big listing stays one pass over it. */
	size_t *tool_at;      /* owned, ntools entries */
	int *tool_line, *tool_col; /* owned */
	size_t ntools;
};

/* Reads file's text for doc (borrowed, cli_load_listing's result).
 * Quietly keeps no text when it cannot (then findings carry the file but
 * no line). */
void cli_listing_text_load(struct cli_listing_text *t, const char *file, const json_t *doc);
void cli_listing_text_fini(struct cli_listing_text *t);

/* Points f (file, line, column) at pointer (into the listing's
 * {"tools":[...]}) in t. With tool not NULL the pointer's tool index is
 * replaced by the index of the tool of that name in t (a finding about
 * another listing's copy of the tool); a tool t lacks gets the file alone.
 * f's strings borrow from t. */
void cli_listing_locate(const struct cli_listing_text *t, const char *pointer, const char *tool,
                        struct report_finding *f);

#endif

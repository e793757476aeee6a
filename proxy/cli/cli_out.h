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

#endif

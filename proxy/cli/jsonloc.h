/* jsonloc: where an RFC 6901 JSON Pointer lands in a JSON text: byte
 * offsets and a 1-based line and column, for pointing CI annotations
 * (SARIF regions, GitHub file/line) at the line of a saved listing that a
 * finding is about.
 *
 * A scanner over the text, not a parser: no allocation, no recursion, no
 * value built. It walks the pointer's tokens one by one, skipping the
 * values in between by counting brackets outside strings, so the cost is
 * one pass over at most the text and the memory a few words. The text is
 * untrusted (a file from the command line): every read is bounded by len
 * and a malformed text gives an answer or -1, never more (fuzzed:
 * tests/fuzz/fuzz_jsonloc.c, against jansson on valid JSON).
 *
 * Member names are compared after decoding their JSON escapes (\uXXXX
 * with surrogate pairs as UTF-8); a name over JSONLOC_MAX_KEY bytes
 * decoded never matches. With duplicate names the last one counts
 * (jansson's rule, what the checks saw). Array indexes are decimal without
 * leading zeros ("-" names no element).
 *
 * Not here: validating the text (the caller parsed it already) and
 * resolving "$ref"s.
 */
#ifndef MCPWARDEN_JSONLOC_H
#define MCPWARDEN_JSONLOC_H

#include <stddef.h>

#define JSONLOC_MAX_KEY 1024

struct jsonloc {
	size_t at;      /* where the place starts: a member's name (its opening
	                   quote), else the value */
	size_t value;   /* where the value starts */
	int line;       /* 1-based line of `at` (lines end at '\n') */
	int column;     /* 1-based column of `at`, in Unicode code points */
	size_t matched; /* how many tokens of the pointer were found */
};

/* Locates pointer (NUL-terminated, "" is the whole text) in text[0..len).
 * Returns 1 when the whole pointer was found, 0 when only a prefix was
 * (out describes the deepest place found: for a finding about something
 * absent, the object it belongs in), -1 when the pointer is not a JSON
 * Pointer (no leading '/') or the text holds no value there. */
int jsonloc_find(const char *text, size_t len, const char *pointer, struct jsonloc *out);

/* The offsets of the elements of the array at pointer, in order: offs[i]
 * for the first max of them (one pass, so a caller locating many
 * pointers under the elements scans each element alone). Returns how many
 * were stored, -1 when pointer does not lead to an array. */
long jsonloc_elements(const char *text, size_t len, const char *pointer, size_t *offs, size_t max);

/* The line and column of byte offset at in text[0..len) (at past the end
 * counts as len). */
void jsonloc_line_col(const char *text, size_t len, size_t at, int *line, int *column);

#endif

/* Helpers shared by the unit tests: one copy of each, in helpers.c, linked
 * into every test binary by the Makefile (tests/unit/README.md). A helper
 * that a second test would copy belongs here; one only a single test needs
 * stays in that test.
 *
 * Each helper fails the running cmocka test on a setup error (bad JSON, a
 * file that cannot be written), so callers need not check. The th_ prefix
 * keeps them apart from the library's names, which every test also links.
 */
#ifndef MCPWARDEN_TESTS_UNIT_HELPERS_H
#define MCPWARDEN_TESTS_UNIT_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

struct event_base;

/* Parses JSON written with ' for " (listings and bodies then read like the
 * JSON they are), any value at top level (JSON_DECODE_ANY). The caller owns
 * the result; bad JSON fails the test with jansson's position and text. */
json_t *th_json(const char *text);

/* The same with the caller's json_loads flags (JSON_DECODE_ANY included or
 * not, as given). */
json_t *th_json_flags(const char *text, size_t flags);

/* Parses text as it is (no ' rewriting) with json_loads flags; bad JSON
 * fails the test. The caller owns the result. */
json_t *th_json_text(const char *text, size_t flags);

/* A copy of text with every ' turned into "; the caller frees it. */
char *th_quotes(const char *text);

/* Writes text to a new file made from the mkstemp template path (ending in
 * XXXXXX, rewritten in place with the file's name); the caller unlinks it.
 * For a file written with ' for ", pass th_quotes(text). */
void th_temp_write(char *path, const char *text);

/* Runs base's loop for at most ms milliseconds, or until a callback breaks
 * or exits it first. */
void th_run_for(struct event_base *base, unsigned ms);

/* The next value of a xorshift64 generator (shifts 13, 7, 17) whose state
 * is *state (never 0): cheap, reproducible randomness for property tests. */
uint64_t th_xorshift(uint64_t *state);

#endif

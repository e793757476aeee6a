/* redact: keeps secrets out of call records.
 *
 * Two rules, applied to a deep copy (the message on the wire is never
 * touched):
 *   - a member whose KEY looks secret has its value, whatever its type,
 *     replaced by "••••". A key looks secret when, lowercased and with '_'
 *     and '-' removed, it contains one of the key patterns (same treatment):
 *     by default password, token, secret, authorization, api_key (so
 *     "apiKey", "X-Api-Key" and "db_password" match too);
 *   - every occurrence of a literal VALUE inside a string (or a member
 *     name) is replaced by "••••": admin.redact_values, and every
 *     credential mcpwarden sends upstream (admin/secrets.c builds that
 *     set from the configuration at start and at each reload). Leftmost match
 *     first, the longest of those starting there; one pass over a string
 *     whatever the number of values, and none over a string shorter than
 *     the shortest value (see redact.c).
 * Then text is cut: a record keeps at most N characters (Unicode code
 * points, never a split UTF-8 sequence) followed by a visible marker
 * "…[cut: N of M chars]".
 *
 * Pure: no I/O, no globals. Threads: every worker redacts with the same
 * redactor at once; it is read only, but for redact_add_secrets, which
 * may run meanwhile (it publishes a new value set; the sets it replaced
 * are freed with the redactor). Everything else that changes it runs
 * before it is shared. Not here: which parts of a message are recorded
 * (proxy/hooks/hook_record.c), which strings are credentials
 * (admin/secrets.c).
 */
#ifndef MCPWARDEN_REDACT_H
#define MCPWARDEN_REDACT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <jansson.h>

#include "proxy/base/sbuf.h"

struct jparse_ref; /* proxy/base/jparse.h */

#define REDACT_MASK          "\xe2\x80\xa2\xe2\x80\xa2\xe2\x80\xa2\xe2\x80\xa2" /* •••• */
#define REDACT_ARGS_CHARS    1000  /* tool arguments in a record */
#define REDACT_PREVIEW_CHARS 800   /* result preview in a record */
/* Nesting kept in a copy; deeper values become the string "…". */
#define REDACT_MAX_DEPTH     64
#define REDACT_MAX_PATTERNS  64    /* key patterns; values in admin.redact_values */
#define REDACT_MAX_VALUES    4096  /* literal values in all (credentials included) */
#define REDACT_MIN_VALUE_LEN 3     /* shorter literals would mask everything */

struct redact;

/* A redactor with the default key patterns and no literal values. NULL
 * when memory runs out. */
struct redact *redact_new(void);
void redact_free(struct redact *rd);  /* accepts NULL */

/* Forgets every key pattern (a configuration replacing the default list
 * calls this first). */
void redact_clear_keys(struct redact *rd);
/* Adds a key pattern / a literal value (copied). Return 0, or -1 when it
 * is empty (a key) or shorter than REDACT_MIN_VALUE_LEN (a value), there
 * are already REDACT_MAX_PATTERNS keys / REDACT_MAX_VALUES values, or
 * memory runs out (a value given twice is kept once: 0). Before rd is
 * shared only. */
int redact_add_key(struct redact *rd, const char *pattern);
int redact_add_value(struct redact *rd, const char *literal);

/* Adds the literal values lits[0..n) (copied; NULL entries, values
 * shorter than REDACT_MIN_VALUE_LEN, ones already there and those past
 * REDACT_MAX_VALUES are skipped) as one new set, published at once: safe
 * while other threads redact with rd (one caller at a time). Values are
 * only ever added: a secret once sent stays one. Returns how many were
 * added, or -1 when memory runs out (nothing changed). */
int redact_add_secrets(struct redact *rd, const char *const *lits, size_t n);
/* Literal values in force. */
size_t redact_nvalues(const struct redact *rd);

/* Whether a member name looks secret under rd's patterns. */
int redact_key_is_secret(const struct redact *rd, const char *key);

/* A new deep copy of v (borrowed) with both rules applied, NULL when
 * memory runs out. Never returns v itself. */
json_t *redact_json(const struct redact *rd, const json_t *v);

/* s with every configured literal replaced by the mask: a new string
 * (owned, free()), NULL when memory runs out. */
char *redact_text(const struct redact *rd, const char *s);

/* Cuts s to max_chars code points: returns a new string (owned), with the
 * marker appended when something was cut (*cut = 1, else 0; cut may be
 * NULL). NULL when memory runs out. */
char *redact_cut(const char *s, size_t max_chars, int *cut);

/* Compact JSON text of v redacted and cut to max_chars (owned string).
 * NULL when memory runs out. */
char *redact_json_text(const struct redact *rd, const json_t *v, size_t max_chars, int *cut);

/* The same text appended to out (which stays NUL-terminated) instead of
 * returned: for callers that gather texts in one buffer. Returns 0, or -1
 * when memory runs out (out may then hold part of it). */
int redact_json_text_to(const struct redact *rd, const json_t *v, size_t max_chars, int *cut,
                        struct sbuf *out);

/* A text preview of a JSON-RPC result (borrowed), redacted and cut to
 * max_chars (owned string): for a tools/call result the text of its
 * content items (non-text items as "[image image/png]", "[resource URI]"…,
 * a text that parses as JSON is redacted as JSON), else its
 * structuredContent; for any other result its compact JSON. NULL when
 * memory runs out. */
char *redact_result_preview(const struct redact *rd, const json_t *result, size_t max_chars,
                            int *cut);
/* The same appended to out; 0, or -1 as redact_json_text_to. */
int redact_result_preview_to(const struct redact *rd, const json_t *result, size_t max_chars,
                             int *cut, struct sbuf *out);

/* The preview of the last large result, kept with that result's text as
 * it arrived. Previewing a 1,000-tool tools/list result cost ~15M
 * instructions (the "of N chars" total counts the whole redacted text),
 * and clients fetch the same list again and again. One per thread (a
 * worker's recorder); not thread-safe. */
struct redact_preview_memo;
struct redact_preview_memo *redact_preview_memo_new(void);
void redact_preview_memo_free(struct redact_preview_memo *pm);  /* accepts NULL */

/* redact_result_preview_to(rd, result, ...), where raw[0..raw_len) is
 * result's text as it arrived (NULL: not known) and serial a number that
 * names those bytes: the same bytes are given it again, no other bytes
 * ever are (the tools tracker's, inspect.h result_serial), or 0. When
 * the bytes of serial were previewed last with the same patterns (and
 * max_chars), the kept preview is given without reading result; without
 * a serial nothing is kept. pm may be NULL.
 * Given raw, a result previewed as its whole JSON text (a listing: no
 * content items, no structuredContent) is walked only as far as the
 * preview keeps, and when cut the marker's total is the code points of
 * raw, not of the redacted text: a changed 1,000-tool listing cost
 * ~11.5M instructions walked whole, 0.77M bounded (with a copy of its
 * 448 KB that the memo no longer makes). */
int redact_result_preview_memo_to(const struct redact *rd, struct redact_preview_memo *pm,
                                  const json_t *result, const char *raw, size_t raw_len,
                                  uint64_t serial, size_t max_chars, int *cut, struct sbuf *out);

/* redact_result_preview_memo_to for a result known only by its text
 * raw[0..raw_len) (JSON jparse accepted: the transport scanned it and
 * built no tree). Byte for byte the same preview; a tools/call result of
 * text items is previewed from the text, bytes the memo keeps a preview
 * for (serial) are not parsed, anything else is parsed first.
 * content: where the result's "content" member is when the caller knows
 * (jparse_scan's JPI_CONTENT, at NULL when there is none), NULL when it
 * does not: it is looked for.
 * 0, or -1 when memory runs out or raw is NULL or not JSON. */
int redact_result_preview_raw_to(const struct redact *rd, struct redact_preview_memo *pm,
                                 const char *raw, size_t raw_len,
                                 const struct jparse_ref *content, uint64_t serial,
                                 size_t max_chars, int *cut, struct sbuf *out);

/* The preview pm keeps for the bytes of serial (with rd's patterns and
 * max_chars), appended to out: 1, or 0 when it keeps none for them
 * (nothing written), -1 when out ran out of memory. */
int redact_preview_memo_get(const struct redact *rd, const struct redact_preview_memo *pm,
                            uint64_t serial, size_t max_chars, int *cut, struct sbuf *out);


#endif

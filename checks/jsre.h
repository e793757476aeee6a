/* jsre.h: ECMA-262 regular expressions for JSON Schema "pattern" and
 * "patternProperties".
 *
 * JSON Schema patterns are ECMA-262 regular expressions, matched against
 * Unicode strings and not implicitly anchored. A pattern is read with the
 * 'u' flag's grammar and meaning (code points, strict escapes) and no other
 * flag (no i, m, s, y, v). It is compiled to a small program that runs as a
 * Pike VM (a Thompson NFA simulation over code points): the work of one
 * search is at most (subject code points + 1) x (program size), so no
 * pattern can take exponential time, whatever it nests. Bounds, all in
 * proxy/base/limits.h: LIMIT_JSRE_PATTERN_BYTES, LIMIT_JSRE_PROGRAM (counted
 * repetition is expanded, so a{1000} costs 1000 instructions),
 * LIMIT_JSRE_RANGES, LIMIT_JSRE_DEPTH at compile time; LIMIT_JSRE_STEPS per
 * search.
 *
 * Supported: literals; the escapes \t \n \r \f \v \0 \cX \xHH \uHHHH (a
 * surrogate pair of them is one code point) \u{H...} and the escaped syntax
 * characters ^ $ \ . * + ? ( ) [ ] { } | and /; '.' (any code point but the
 * line terminators \n \r U+2028 U+2029); classes [...] [^...] with ranges,
 * \b (backspace) and \- inside; \d \D \w \W (ASCII) \s \S (ECMA white space
 * and line terminators) inside and outside classes; \p{..} \P{..} for the
 * general categories L Lu Ll N Nd (also by their long names, "digit", and as
 * gc=.. or General_Category=..) and Any, ASCII; the anchors ^ $ (input start
 * and end: no multiline) and \b \B; groups ( ) (?: ) (?<name> ); alternation;
 * the quantifiers * + ? {n} {n,} {n,m}, greedy or lazy (laziness does not
 * change whether a search matches).
 *
 * Refused with a reason: any syntax error of the 'u' grammar (\a, a lone
 * '{' or ']', nothing to repeat, {3,1}, an unterminated class or group,
 * [\d-z], invalid UTF-8 in the pattern), backreferences (\1, \k<n>),
 * lookahead (?= (?! and lookbehind (?<= (?<!, modifiers (?i: ), the other
 * Unicode properties, group names written with \u escapes or used twice
 * (node 20 refuses the latter too), and a pattern over a limit.
 *
 * Subjects are UTF-8; an invalid byte is read as U+FFFD (one per byte), so
 * any bytes are searched without failing. Captures are not reported: the
 * schema only asks whether a string matches.
 *
 * Pure: no I/O, no globals, no logging. A compiled jsre is immutable, so
 * one may be searched from several threads at once (each search allocates
 * its own VM state).
 */
#ifndef MCPWARDEN_CHECKS_JSRE_H
#define MCPWARDEN_CHECKS_JSRE_H

#include <stddef.h>

struct jsre;

/* Compiles an ECMA-262 pattern (UTF-8, len bytes; NUL bytes are ordinary
 * characters). Returns an owned program (free it with jsre_free), or NULL
 * on a syntax error, an unsupported feature (backreferences, lookahead,
 * lookbehind: the reason says which) or a limit; then err (when errlen > 0)
 * holds a one-line reason ending with the byte offset, such as
 * "lookahead is not supported at byte 3". NULL also when memory runs out
 * ("out of memory"). */
struct jsre *jsre_compile(const char *pattern, size_t len, char *err, size_t errlen);

/* 1 when the pattern matches somewhere in s (len bytes of UTF-8; ECMA
 * "search" semantics: not anchored unless the pattern says ^ or $), 0 when
 * not, -1 when LIMIT_JSRE_STEPS was reached (or the VM state could not be
 * allocated): the caller reports that, never a guess. */
int jsre_search(const struct jsre *re, const char *s, size_t len);

/* Frees a program from jsre_compile; NULL is accepted. */
void jsre_free(struct jsre *re);

#endif

/* media: the one Content-Type rule of mcpwarden (RFC 9110 §8.3):
 *
 *   Content-Type = type "/" subtype *( OWS ";" OWS parameter )
 *
 * type and subtype compare case-insensitively; whatever follows them,
 * after optional whitespace (SP, HTAB), must be the end or a ';' that
 * starts the parameters, which are not looked at (a charset changes
 * nothing for JSON, RFC 8259 §11). So "Application/JSON ; charset=utf-8"
 * is application/json, and "application/jsonx" or "application/json x"
 * is not. Leading whitespace is skipped too (a parser that kept it).
 *
 * Pure: no allocation, no state. Not here: Accept lists with q-values
 * (what a client takes is a different question).
 */
#ifndef MCPWARDEN_MEDIA_H
#define MCPWARDEN_MEDIA_H

#include <stddef.h>
#include <string.h>

/* 1 when the Content-Type value ct names the media type type[0..n-1]
 * ("type/subtype", no parameters), 0 otherwise or when ct is NULL. */
int media_is_n(const char *ct, const char *type, size_t n);

/* The same for a NUL-terminated type; inline so that a literal's length
 * is counted at compile time (this runs on every upstream reply). */
static inline int media_is(const char *ct, const char *type)
{
	return media_is_n(ct, type, strlen(type));
}

/* 1 when ct is JSON: application/json, or any type whose subtype has the
 * +json structured suffix (RFC 6839 §3.1, e.g. application/vnd.x+json);
 * 0 otherwise or when ct is NULL. */
int media_is_json(const char *ct);

#endif

/* jschema_value.c: what the validator needs of JSON values and findings,
 * apart from the walk: JSON equality (1 == 1.0, objects by key) and a hash
 * that agrees with it (uniqueItems), code point counts, type names, and
 * the bounded writing of a finding (pointers cut at an escape boundary,
 * one-line messages). No allocation.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "checks/jschema_int.h"

/* Appends "..." at *o (room for it and the NUL is always kept). */
static void ellipsis(char *out, size_t *o)
{
	memcpy(out + *o, "...", 4);
	*o += 3;
}

/* Appends s to out[*o..cap) escaped as a pointer token (escape) or as is
 * (already a pointer: an escape pair is never split); keeps 4 bytes for
 * "...". Returns 1 when s was cut (and "..." appended). */
int jschema_put_ptr(char *out, size_t cap, size_t *o, const char *s, int escape)
{
	for (; *s; s++) {
		int pair = escape ? (*s == '~' || *s == '/') : *s == '~';
		if (*o + (pair ? 2 : 1) + 4 > cap) {
			ellipsis(out, o);
			return 1;
		}
		if (escape && pair) {
			out[(*o)++] = '~';
			out[(*o)++] = *s == '~' ? '0' : '1';
		} else if (pair && s[1]) {
			out[(*o)++] = *s++;
			out[(*o)++] = *s;
		} else {
			out[(*o)++] = *s;
		}
	}
	out[*o] = '\0';
	return 0;
}

void jschema_set_error(struct jschema_error *e, enum jschema_code code, const char *base,
                       const char *kw, const char *fmt, ...)
{
	va_list ap;
	size_t o = 0;
	if (e == NULL)
		return;
	e->code = code;
	e->keyword = kw ? kw : "";
	e->schema_ptr[0] = '\0';
	/* kw may already be a pointer tail ("type/1"): copied as is. */
	if (!jschema_put_ptr(e->schema_ptr, sizeof e->schema_ptr, &o, base, 0) && kw && *kw &&
	    !jschema_put_ptr(e->schema_ptr, sizeof e->schema_ptr, &o, "/", 0))
		jschema_put_ptr(e->schema_ptr, sizeof e->schema_ptr, &o, kw, 0);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
	/* Messages quote names and $refs from the documents: keep them one
	 * line (a log line, a record field). */
	for (char *m = e->message; *m; m++)
		if ((unsigned char)*m < 0x20 || *m == 0x7f)
			*m = '?';
}

/* ---- values ---------------------------------------------------------------------------- */

int jschema_json_equal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return jschema_num_cmp(a, b) == 0;
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!jschema_json_equal(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_OBJECT: {
		const char *key;
		const json_t *val;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)(uintptr_t)a, key, val) {
			const json_t *o = json_object_get(b, key);
			if (o == NULL || !jschema_json_equal(val, o))
				return 0;
		}
		return 1;
	}
	default:
		return 1; /* true, false, null: the type is the value */
	}
}

/* A hash agreeing with jschema_json_equal (numbers by value, objects
 * independent of key order). */
uint64_t jschema_json_hash(const json_t *j)
{
	uint64_t h = 1469598103934665603ull;
	switch (json_typeof(j)) {
	case JSON_INTEGER:
	case JSON_REAL: {
		double d = json_number_value(j);
		if (d == 0)
			d = 0; /* -0.0 == 0 */
		uint64_t bits;
		memcpy(&bits, &d, sizeof bits);
		return bits * 0x9e3779b97f4a7c15ull + 7;
	}
	case JSON_STRING: {
		const unsigned char *s = (const unsigned char *)json_string_value(j);
		for (size_t i = 0; i < json_string_length(j); i++)
			h = (h ^ s[i]) * 1099511628211ull;
		return h;
	}
	case JSON_ARRAY:
		for (size_t i = 0; i < json_array_size(j); i++)
			h = (h ^ jschema_json_hash(json_array_get(j, i))) * 1099511628211ull;
		return h + 3;
	case JSON_OBJECT: {
		const char *key;
		const json_t *val;
		uint64_t sum = 5;
		json_object_foreach((json_t *)(uintptr_t)j, key, val) {
			uint64_t k = 1469598103934665603ull;
			for (const char *p = key; *p; p++)
				k = (k ^ (unsigned char)*p) * 1099511628211ull;
			sum += (k ^ (jschema_json_hash(val) * 31));
		}
		return sum;
	}
	case JSON_TRUE: return 11;
	case JSON_FALSE: return 13;
	default: return 17;
	}
}

size_t jschema_utf8_len(const char *s, size_t n)
{
	size_t cps = 0;
	for (size_t i = 0; i < n; i++)
		cps += ((unsigned char)s[i] & 0xC0) != 0x80;
	return cps;
}

const char *jschema_type_name(const json_t *x)
{
	switch (json_typeof(x)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

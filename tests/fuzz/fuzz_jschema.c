/* Fuzz target for the JSON Schema validator (checks/jschema.h).
 *
 * Input: two JSON texts one after the other, the schema then the instance
 * ("{...}\n..."); when only one parses, the schema is validated against
 * itself. The schema is compiled in both dialects, with and without
 * JSCHEMA_FORMAT_ASSERT, and every compiled schema validates the instance
 * and the schema document; every result is freed (ASan's leak check).
 *
 * Properties checked, abort() on any violation:
 *  1. A failed compile says why: a compile code (never VIOLATION), a
 *     one-line message, a schema pointer of RFC 6901 syntax, and no
 *     instance pointer.
 *  2. jschema_validate() and jschema_valid() agree: 0 violations is valid,
 *     some is invalid, and a limit hit by the fast path is a limit for the
 *     full walk too (which does at least the same work).
 *  3. Every finding written is well formed: code VIOLATION (or LIMIT in
 *     out[0] with -1), a keyword (never NULL), a keyword pointer and instance pointer of pointer
 *     syntax, a one-line message; never more written than asked for.
 *  4. Validation is deterministic: the same answer twice, also with a
 *     smaller output array.
 * Every run is bounded by the LIMIT_JSCHEMA_* limits: a hang or a slow
 * unit is a bug, caught by libFuzzer's -timeout.
 *
 * Built with libFuzzer (make fuzz-run FUZZ=jschema) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checks/jschema.h"
#include "tests/fuzz/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *next_value(const uint8_t *data, size_t size, size_t *pos)
{
	json_error_t err;

	while (*pos < size && data[*pos] && strchr(" \t\r\n", data[*pos]))
		(*pos)++;
	if (*pos >= size)
		return NULL;
	json_t *v = json_loadb((const char *)data + *pos, size - *pos,
	                       JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL, &err);
	if (v == NULL)
		return NULL;
	*pos += err.position > 0 ? (size_t)err.position : 1;
	return v;
}

static int one_line(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	if (n == cap)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
			return 0;
	return 1;
}

/* RFC 6901 syntax: empty, or "/"-separated tokens whose "~" escapes are
 * ~0 or ~1 (a truncated pointer ends in "..."). */
static int pointer_ok(const char *p, size_t cap)
{
	size_t n = strnlen(p, cap);
	if (n == cap)
		return 0;
	if (n == 0)
		return 1;
	if (p[0] != '/')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] == '~' && i + 1 < n && p[i + 1] != '0' && p[i + 1] != '1')
			return 0;
	return 1;
}

static void check_error(const struct jschema_error *e, int limit)
{
	CHECK(e->code == (limit ? JSCHEMA_LIMIT : JSCHEMA_VIOLATION));
	CHECK(e->keyword != NULL);
	CHECK(one_line(e->message, sizeof e->message) && e->message[0]);
	CHECK(pointer_ok(e->schema_ptr, sizeof e->schema_ptr));
	CHECK(pointer_ok(e->instance_ptr, sizeof e->instance_ptr));
}

static void check_validate(const struct jschema *s, const json_t *x)
{
	struct jschema_error out[9];
	memset(&out[8], 0x5a, sizeof out[8]);
	int r = jschema_validate(s, x, out, 8);
	int q = jschema_valid(s, x);
	CHECK(r >= -1 && q >= -1 && q <= 1);
	if (r == 0)
		CHECK(q == 1);
	if (r > 0)
		CHECK(q == 0);
	if (q == -1)
		CHECK(r == -1);
	if (r == -1)
		check_error(&out[0], 1);
	for (int i = r == -1 ? 1 : 0; r > 0 && i < r && i < 8; i++)
		check_error(&out[i], 0);
	struct jschema_error canary;
	memset(&canary, 0x5a, sizeof canary);
	CHECK(memcmp(&out[8], &canary, sizeof canary) == 0);

	struct jschema_error few[2];
	int r2 = jschema_validate(s, x, few, 2);
	CHECK(r2 == r);
	if (r > 0)
		CHECK(strcmp(few[0].schema_ptr, out[0].schema_ptr) == 0 &&
		      strcmp(few[0].instance_ptr, out[0].instance_ptr) == 0);
	CHECK(jschema_validate(s, x, NULL, 0) == r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t pos = 0;
	json_t *schema = next_value(data, size, &pos);
	if (schema == NULL)
		return 0;
	json_t *inst = next_value(data, size, &pos);

	static const enum jschema_dialect dialects[] = {JSCHEMA_DRAFT7, JSCHEMA_2020_12};
	for (size_t d = 0; d < 2; d++) {
		for (unsigned flags = 0; flags <= JSCHEMA_FORMAT_ASSERT; flags += JSCHEMA_FORMAT_ASSERT) {
			struct jschema_error why;
			struct jschema *s = jschema_compile(schema, dialects[d], flags, &why);
			if (s == NULL) {
				CHECK(jschema_compile(schema, dialects[d], flags, NULL) == NULL);
				CHECK(why.code != JSCHEMA_VIOLATION);
				CHECK(jschema_code_str(why.code)[0] != '?');
				CHECK(one_line(why.message, sizeof why.message) && why.message[0]);
				CHECK(pointer_ok(why.schema_ptr, sizeof why.schema_ptr));
				CHECK(why.instance_ptr[0] == '\0');
				CHECK(why.keyword != NULL);
				continue;
			}
			/* Compiling is deterministic, and why may be NULL. */
			struct jschema *again = jschema_compile(schema, dialects[d], flags, NULL);
			CHECK(again != NULL);
			jschema_free(again);
			if (inst)
				check_validate(s, inst);
			check_validate(s, schema);
			jschema_free(s);
		}
	}
	json_decref(inst);
	json_decref(schema);
	return 0;
}

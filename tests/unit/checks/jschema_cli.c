/* jschema_cli: the C side of the ajv differential
 * (tests/integration/jschema-differential.test.mjs). Not a unit test (the
 * name does not start with test_, so `make unit` does not run it); built by
 * the unit-test rule as build/tests/checks/jschema_cli.
 *
 * stdin: one JSON object per line, {"schema": S, "instance": I,
 * "dialect": "draft7" | "2020-12", "format": true|false (optional: assert
 * formats)}. stdout: one line per input line: "true" (valid), "false"
 * (invalid), "limit" (a work limit hit), or "error <code> <pointer>
 * <message>" when the schema does not compile or the line is not such an
 * object. The same schema text on consecutive lines is compiled once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checks/jschema.h"

int main(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	json_t *last_schema = NULL;
	struct jschema *s = NULL;
	enum jschema_dialect last_d = JSCHEMA_DRAFT7;
	unsigned last_flags = 0;
	struct jschema_error why = {0};

	while ((len = getline(&line, &cap, stdin)) > 0) {
		json_error_t jerr;
		json_t *in = json_loadb(line, (size_t)len, JSON_DECODE_ANY, &jerr);
		json_t *schema = json_object_get(in, "schema");
		json_t *inst = json_object_get(in, "instance");
		const char *dn = json_string_value(json_object_get(in, "dialect"));
		if (schema == NULL || inst == NULL || dn == NULL) {
			printf("error input bad line: %s\n", jerr.text);
			json_decref(in);
			continue;
		}
		enum jschema_dialect d = strcmp(dn, "draft7") == 0 ? JSCHEMA_DRAFT7 : JSCHEMA_2020_12;
		unsigned flags = json_is_true(json_object_get(in, "format")) ? JSCHEMA_FORMAT_ASSERT : 0;
		if (last_schema == NULL || d != last_d || flags != last_flags ||
		    !json_equal(schema, last_schema)) {
			jschema_free(s);
			json_decref(last_schema);
			last_schema = json_incref(schema);
			last_d = d;
			last_flags = flags;
			s = jschema_compile(schema, d, flags, &why);
		}
		if (s == NULL) {
			printf("error %s %s %s\n", jschema_code_str(why.code), why.schema_ptr, why.message);
		} else {
			struct jschema_error e[1];
			int r = jschema_validate(s, inst, e, 1);
			int q = jschema_valid(s, inst);
			if (r >= 0 && q != (r == 0))
				printf("error fast-path %d vs %d\n", q, r);
			else
				puts(r < 0 ? "limit" : r == 0 ? "true" : "false");
		}
		fflush(stdout);
		json_decref(in);
	}
	jschema_free(s);
	json_decref(last_schema);
	free(line);
	return 0;
}

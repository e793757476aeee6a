/* cli_out: see cli_out.h. */
#include "proxy/cli/cli_out.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "checks/drift.h"

void cli_secrets_add(struct cli_secrets *s, const char *v, size_t len)
{
	/* Too short to mask without mangling ordinary words; such a value is
	 * never printed by us anyway (headers always print as ••••). */
	if (len < 4 || s->n >= sizeof(s->v) / sizeof(s->v[0]))
		return;
	char *d = malloc(len + 1);
	if (!d)
		return;
	memcpy(d, v, len);
	d[len] = '\0';
	s->v[s->n++] = d;
}

void cli_secrets_free(struct cli_secrets *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

/* Writes s to f with every secret replaced by ••••. */
void cli_emit(const struct cli_secrets *sec, FILE *f, const char *s)
{
	while (*s) {
		size_t best = 0, at = strlen(s);
		for (size_t i = 0; sec && i < sec->n; i++) {
			const char *p = strstr(s, sec->v[i]);
			if (p && ((size_t)(p - s) < at || ((size_t)(p - s) == at &&
			                                   strlen(sec->v[i]) > best))) {
				at = (size_t)(p - s);
				best = strlen(sec->v[i]);
			}
		}
		fwrite(s, 1, at, f);
		if (!best)
			break;
		fputs(CLI_MASK, f);
		s += at + best;
	}
}

void cli_emitf(const struct cli_secrets *sec, FILE *f, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	cli_emit(sec, f, s);
	free(s);
}

void cli_emit_json(const struct cli_secrets *sec, FILE *f, const json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!s) {
		fputs("{\"error\":\"out of memory\"}\n", f);
		return;
	}
	cli_emit(sec, f, s);
	fputc('\n', f);
	free(s);
}

json_t *cli_load_listing(const char *file, const char *what)
{
	json_error_t jerr;
	json_t *doc = json_load_file(file, 0, &jerr);
	if (!doc) {
		if (jerr.line > 0)
			fprintf(stderr, "mcpwarden: %s %s:%d:%d: %s\n", what, file, jerr.line, jerr.column,
			        jerr.text);
		else
			fprintf(stderr, "mcpwarden: %s %s\n", what, jerr.text);
		return NULL;
	}
	if (!drift_tools_of(doc)) {
		fprintf(stderr, "mcpwarden: %s %s holds no tool list ({\"tools\":[...]}, a tools/list "
		                "response or an array)\n", what, file);
		json_decref(doc);
		return NULL;
	}
	return doc;
}


/* cli_out: see cli_out.h. */
#include "proxy/cli/cli_out.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "checks/drift.h"
#include "proxy/cli/jsonloc.h"

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


/* Where the tools array sits in the file: drift_tools_of's shapes. */
static const char *tools_prefix(const json_t *doc)
{
	return json_is_array(doc) ? "" : json_is_object(json_object_get(doc, "result")) ? "/result/tools"
	                                                                              : "/tools";
}

/* Fills t's tool index (nothing when memory runs out: then every finding
 * is looked for in the whole text). */
static void index_tools(struct cli_listing_text *t)
{
	size_t n = json_array_size(drift_tools_of(t->doc));
	t->tool_at = n ? calloc(n, sizeof *t->tool_at) : NULL;
	t->tool_line = n ? calloc(n, sizeof *t->tool_line) : NULL;
	t->tool_col = n ? calloc(n, sizeof *t->tool_col) : NULL;
	long got = t->tool_at && t->tool_line && t->tool_col
	                   ? jsonloc_elements(t->text, t->len, tools_prefix(t->doc), t->tool_at, n)
	                   : -1;
	if (got != (long)n) {
		free(t->tool_at);
		free(t->tool_line);
		free(t->tool_col);
		t->tool_at = NULL;
		t->tool_line = t->tool_col = NULL;
		return;
	}
	/* One pass for all the lines: each tool's from the previous one's. */
	int line = 1, col = 1;
	size_t from = 0;
	for (size_t i = 0; i < n; i++) {
		int dl, dc;
		jsonloc_line_col(t->text + from, t->len - from, t->tool_at[i] - from, &dl, &dc);
		col = dl == 1 ? col + dc - 1 : dc;
		line += dl - 1;
		t->tool_line[i] = line;
		t->tool_col[i] = col;
		from = t->tool_at[i];
	}
	t->ntools = n;
}

void cli_listing_text_load(struct cli_listing_text *t, const char *file, const json_t *doc)
{
	t->file = file;
	t->doc = doc;
	t->text = NULL;
	t->len = 0;
	FILE *f = fopen(file, "rb");
	if (!f)
		return;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			size_t nc = cap ? cap * 2 : 65536;
			char *p = nc <= CLI_LISTING_TEXT_MAX ? realloc(buf, nc) : NULL;
			if (!p) {
				free(buf);
				fclose(f);
				return;
			}
			buf = p;
			cap = nc;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return;
	}
	t->text = buf;
	t->len = len;
	index_tools(t);
}

void cli_listing_text_fini(struct cli_listing_text *t)
{
	free(t->text);
	free(t->tool_at);
	free(t->tool_line);
	free(t->tool_col);
	memset(t, 0, sizeof *t);
}

/* The index in a pointer "/tools/N..." and what follows it; -1 when the
 * pointer is not under a tool. */
static long tool_index(const char *pointer, const char **rest)
{
	if (strncmp(pointer, "/tools/", 7) != 0 || pointer[7] < '0' || pointer[7] > '9')
		return -1;
	char *end;
	long i = strtol(pointer + 7, &end, 10);
	*rest = end;
	return i;
}

static long index_of_name(const json_t *tools, const char *name)
{
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const char *n = json_string_value(json_object_get(json_array_get(tools, i), "name"));
		if (n && strcmp(n, name) == 0)
			return (long)i;
	}
	return -1;
}

void cli_listing_locate(const struct cli_listing_text *t, const char *pointer, const char *tool,
                        struct report_finding *f)
{
	f->file = t->file;
	f->line = f->column = 0;
	if (!t->text || !pointer)
		return;
	char ptr[1024];
	const char *rest = "";
	long idx = tool_index(pointer, &rest);
	if (tool) {
		idx = index_of_name(drift_tools_of(t->doc), tool);
		if (idx < 0)
			return;
	}
	if (idx >= 0 && (size_t)idx < t->ntools) {
		/* Inside the tool's own text, from its known line. */
		size_t from = t->tool_at[idx];
		size_t to = (size_t)idx + 1 < t->ntools ? t->tool_at[idx + 1] : t->len;
		struct jsonloc l;
		if (jsonloc_find(t->text + from, to - from, rest, &l) >= 0) {
			f->line = t->tool_line[idx] + l.line - 1;
			f->column = l.line == 1 ? t->tool_col[idx] + l.column - 1 : l.column;
		}
		return;
	}
	const char *pre = tools_prefix(t->doc);
	int n = idx >= 0 ? snprintf(ptr, sizeof ptr, "%s/%ld%s", pre, idx, rest)
	                 : snprintf(ptr, sizeof ptr, "%s%s", *pre == '/' && pre[1] == 'r' ? "/result" : "",
	                            json_is_array(t->doc) ? "" : pointer);
	if (n < 0 || (size_t)n >= sizeof ptr)
		return;
	struct jsonloc l;
	if (jsonloc_find(t->text, t->len, ptr, &l) >= 0) {
		f->line = l.line;
		f->column = l.column;
	}
}

int cli_change_in_old(const char *code, const char *message)
{
	return strcmp(code, "tool-removed") == 0 || strcmp(code, "param-removed") == 0 ||
	       strcmp(code, "enum-value-removed") == 0 ||
	       strcmp(code, "output-property-removed") == 0 ||
	       (strcmp(code, "output-type-changed") == 0 && strcmp(message, "outputSchema removed") == 0);
}

/* report_md: report.h's writers for GitHub Actions: workflow commands
 * (annotations) and the Markdown step summary.
 *
 * github: one line per finding,
 *   ::error file=F,line=L,col=C,title=CODE::message
 * (::warning, ::notice by level; no file= when the finding has none, no
 * line= when its line is unknown), with GitHub's encodings: in the
 * message % CR LF as %25 %0D %0A, in properties also : and , as %3A %2C.
 * A command that could not run writes one ::error with its reason.
 *
 * markdown: a heading with the verdict, the summary line, a table of the
 * cases (tool, verdict, findings), then the findings grouped: breaking
 * changes first, then errors, warnings, notes. Every text from the listing
 * is escaped (Markdown's punctuation and the table's pipes backslashed,
 * newlines as spaces), so a tool name cannot break the table or inject
 * markup.
 */
#include <string.h>

#include "proxy/cli/report_model.h"

/* ---- github ----------------------------------------------------------------- */

static void gh_put(FILE *f, const char *s, int property)
{
	for (; s && *s; s++) {
		if (*s == '%')
			fputs("%25", f);
		else if (*s == '\r')
			fputs("%0D", f);
		else if (*s == '\n')
			fputs("%0A", f);
		else if (property && *s == ':')
			fputs("%3A", f);
		else if (property && *s == ',')
			fputs("%2C", f);
		else
			fputc(*s, f);
	}
}

static const char *gh_command(enum report_level l)
{
	return l == REPORT_LEVEL_ERROR ? "error" : l == REPORT_LEVEL_WARNING ? "warning" : "notice";
}

int report_write_github(const struct report *r, FILE *f)
{
	if (r->error) {
		fputs("::error title=mcpwarden ", f);
		gh_put(f, r->command, 1);
		fputs("::", f);
		gh_put(f, r->error, 0);
		fputc('\n', f);
	}
	for (size_t i = 0; i < r->nitems; i++) {
		const struct report_item *it = &r->items[i];
		fprintf(f, "::%s ", gh_command(it->level));
		if (it->file) {
			fputs("file=", f);
			gh_put(f, it->file, 1);
			if (it->line)
				fprintf(f, ",line=%d,col=%d", it->line, it->column ? it->column : 1);
			fputc(',', f);
		}
		fputs("title=", f);
		gh_put(f, it->code, 1);
		fputs("::", f);
		if (it->tool) {
			fputs("tool \"", f);
			gh_put(f, it->tool, 0);
			fputs("\": ", f);
		}
		gh_put(f, it->message, 0);
		fputc('\n', f);
	}
	return 0;
}

/* ---- markdown --------------------------------------------------------------- */

static void md_put(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\n' || *s == '\r')
			fputc(' ', f);
		else if (strchr("\\`*_[]<>|~&", *s)) {
			fputc('\\', f);
			fputc(*s, f);
		} else
			fputc(*s, f);
	}
}

static const char *verdict(enum report_status s)
{
	switch (s) {
	case REPORT_PASS: return "\xe2\x9c\x85 pass";            /* ✅ */
	case REPORT_FAIL: return "\xe2\x9d\x8c fail";            /* ❌ */
	case REPORT_ERROR: return "\xe2\x9a\xa0\xef\xb8\x8f error"; /* ⚠️ */
	case REPORT_SKIPPED: return "\xe2\x8f\xad\xef\xb8\x8f skipped"; /* ⏭️ */
	}
	return "?";
}

static size_t findings_of(const struct report *r, const struct report_case *c)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nitems; i++) {
		const struct report_item *it = &r->items[i];
		n += it->tool && strcmp(it->tool, c->name) == 0 &&
		     (!it->suite || strcmp(it->suite, c->suite) == 0);
	}
	return n;
}

static void md_item(FILE *f, const struct report_item *it)
{
	fputs("- **", f);
	md_put(f, it->code);
	fputs("**", f);
	if (it->tool) {
		fputs(" tool ", f);
		md_put(f, it->tool);
	}
	if (it->file) {
		fputs(" (", f);
		md_put(f, it->file);
		if (it->line)
			fprintf(f, ":%d", it->line);
		fputs(")", f);
	}
	fputs(": ", f);
	md_put(f, it->message);
	fputc('\n', f);
}

/* The findings of one group: breaking changes, or the non-breaking ones
 * of one level. */
static void md_group(const struct report *r, FILE *f, const char *title, int breaking,
                     enum report_level level)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nitems; i++) {
		const struct report_item *it = &r->items[i];
		if (breaking ? !it->breaking : (it->breaking || it->level != level))
			continue;
		if (n++ == 0)
			fprintf(f, "\n#### %s\n\n", title);
		md_item(f, it);
	}
}

int report_write_markdown(const struct report *r, FILE *f)
{
	const char *v = r->error ? "could not run" : r->exit_code == 0 ? "passed" : "FAILED";
	fprintf(f, "### mcpwarden %s: %s\n\n", r->command, v);
	if (r->error) {
		md_put(f, r->error);
		fputs("\n", f);
	}
	if (r->summary) {
		md_put(f, r->summary);
		fputs("\n", f);
	}
	if (r->ncases) {
		fputs("\n| Suite | Tool | Verdict | Findings |\n|---|---|---|---:|\n", f);
		for (size_t i = 0; i < r->ncases; i++) {
			const struct report_case *c = &r->cases[i];
			fputs("| ", f);
			md_put(f, c->suite);
			fputs(" | ", f);
			md_put(f, c->name);
			fprintf(f, " | %s | %zu |\n", verdict(c->status), findings_of(r, c));
		}
	}
	md_group(r, f, "Breaking changes", 1, REPORT_LEVEL_ERROR);
	md_group(r, f, "Problems", 0, REPORT_LEVEL_ERROR);
	md_group(r, f, "Warnings", 0, REPORT_LEVEL_WARNING);
	md_group(r, f, "Notices", 0, REPORT_LEVEL_NOTE);
	if (r->dropped)
		fprintf(f, "\n%zu more findings not shown (cap).\n", r->dropped);
	return 0;
}

/* report_junit: report.h's JUnit XML writer.
 *
 *   <testsuites name="mcpwarden check" tests failures errors skipped>
 *     <testsuite name=SUITE ...>      one per suite, in order of first case
 *       <testcase classname=SUITE name=TOOL [time]>   one per case
 *         <failure message type=CODE>the case's findings, one a line</failure>
 *         | <error message> | <skipped message>
 *         <system-out>its warnings and notes</system-out>   when any
 *
 * The shape Jenkins, GitLab and junitparser read (the de-facto schema of
 * Ant's JUnit task). Findings about the listing rather than a tool make a
 * failing case "(listing)" of the first suite; a command that could not
 * run writes one <error> case named after the command.
 */
#include <string.h>

#include "proxy/cli/report_model.h"

/* XML 1.0 text or attribute value: the five specials escaped, control
 * characters (not allowed in XML 1.0) as U+FFFD. */
static void xml_put(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		case '\n': fputs("&#10;", f); break;
		case '\t': fputs("&#9;", f); break;
		default:
			if (c < 0x20 || c == 0x7f)
				fputs("\xef\xbf\xbd", f);
			else
				fputc(c, f);
		}
	}
}

static int same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* Whether finding it belongs to case c (suite NULL: the first suite). */
static int item_of(const struct report *r, const struct report_item *it, const struct report_case *c)
{
	if (!same(it->tool, c->name))
		return 0;
	return it->suite ? same(it->suite, c->suite) : same(c->suite, r->cases[0].suite);
}

static void item_line(FILE *f, const struct report_item *it)
{
	fprintf(f, "%s ", report_level_name(it->level));
	xml_put(f, it->code);
	if (it->file) {
		fputs(" at ", f);
		xml_put(f, it->file);
		if (it->line)
			fprintf(f, ":%d:%d", it->line, it->column);
	}
	if (it->pointer) {
		fputs(" (", f);
		xml_put(f, it->pointer);
		fputc(')', f);
	}
	fputs(": ", f);
	xml_put(f, it->message);
	fputc('\n', f);
}

/* The first error-level finding of case c, or NULL. */
static const struct report_item *first_error(const struct report *r, const struct report_case *c)
{
	for (size_t i = 0; i < r->nitems; i++)
		if (r->items[i].level == REPORT_LEVEL_ERROR && item_of(r, &r->items[i], c))
			return &r->items[i];
	return NULL;
}

static void write_case(const struct report *r, const struct report_case *c, FILE *f)
{
	fputs("    <testcase classname=\"", f);
	xml_put(f, c->suite);
	fputs("\" name=\"", f);
	xml_put(f, c->name);
	fputc('"', f);
	if (c->duration_s >= 0)
		fprintf(f, " time=\"%.3f\"", c->duration_s);
	const struct report_item *e = first_error(r, c);
	int other = 0;
	for (size_t i = 0; i < r->nitems; i++)
		other |= r->items[i].level != REPORT_LEVEL_ERROR && item_of(r, &r->items[i], c);
	if (c->status == REPORT_PASS && !other) {
		fputs("/>\n", f);
		return;
	}
	fputs(">\n", f);
	if (c->status == REPORT_FAIL || c->status == REPORT_ERROR) {
		int fail = c->status == REPORT_FAIL;
		fputs(fail ? "      <failure message=\"" : "      <error message=\"", f);
		xml_put(f, c->message ? c->message : e ? e->message : report_status_name(c->status));
		fputs("\" type=\"", f);
		xml_put(f, e ? e->code : report_status_name(c->status));
		fputs("\">", f);
		for (size_t i = 0; i < r->nitems; i++)
			if (r->items[i].level == REPORT_LEVEL_ERROR && item_of(r, &r->items[i], c))
				item_line(f, &r->items[i]);
		fputs(fail ? "</failure>\n" : "</error>\n", f);
	} else if (c->status == REPORT_SKIPPED) {
		fputs("      <skipped message=\"", f);
		xml_put(f, c->message ? c->message : "skipped");
		fputs("\"/>\n", f);
	}
	if (other) {
		fputs("      <system-out>", f);
		for (size_t i = 0; i < r->nitems; i++)
			if (r->items[i].level != REPORT_LEVEL_ERROR && item_of(r, &r->items[i], c))
				item_line(f, &r->items[i]);
		fputs("</system-out>\n", f);
	}
	fputs("    </testcase>\n", f);
}

/* Whether it is an error of suite s (first: s is the first suite) that no
 * case owns: about the listing, or a tool no case names. */
static int of_listing(const struct report *r, const struct report_item *it, const char *s, int first)
{
	if (it->level != REPORT_LEVEL_ERROR || (it->suite ? !same(it->suite, s) : !first))
		return 0;
	for (size_t k = 0; it->tool && k < r->ncases; k++)
		if (item_of(r, it, &r->cases[k]))
			return 0;
	return 1;
}

/* Listing-level errors of suite s. */
static size_t listing_errors(const struct report *r, const char *s, int first)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nitems; i++)
		n += of_listing(r, &r->items[i], s, first);
	return n;
}

static void write_listing_case(const struct report *r, const char *s, int first, FILE *f)
{
	fputs("    <testcase classname=\"", f);
	xml_put(f, s);
	fputs("\" name=\"(listing)\">\n      <failure message=\"the listing itself has problems\" "
	      "type=\"listing\">", f);
	for (size_t i = 0; i < r->nitems; i++)
		if (of_listing(r, &r->items[i], s, first))
			item_line(f, &r->items[i]);
	fputs("</failure>\n    </testcase>\n", f);
}

struct counts {
	size_t tests, failures, errors, skipped;
};

static void count_suite(const struct report *r, const char *s, int first, struct counts *k)
{
	for (size_t i = 0; i < r->ncases; i++) {
		if (!same(r->cases[i].suite, s))
			continue;
		k->tests++;
		k->failures += r->cases[i].status == REPORT_FAIL;
		k->errors += r->cases[i].status == REPORT_ERROR;
		k->skipped += r->cases[i].status == REPORT_SKIPPED;
	}
	if (listing_errors(r, s, first)) {
		k->tests++;
		k->failures++;
	}
}

static void counts_attr(FILE *f, const struct counts *k)
{
	fprintf(f, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\"", k->tests,
	        k->failures, k->errors, k->skipped);
}

/* Index of the first case of the suite of case i (suites in order of first
 * appearance). */
static int first_of_suite(const struct report *r, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (same(r->cases[k].suite, r->cases[i].suite))
			return 0;
	return 1;
}

int report_write_junit(const struct report *r, FILE *f)
{
	struct counts all = {0};
	const char *lone = r->ncases ? NULL : r->command; /* the one suite of a report without cases */
	for (size_t i = 0; i < r->ncases; i++)
		if (first_of_suite(r, i))
			count_suite(r, r->cases[i].suite, i == 0, &all);
	if (lone)
		count_suite(r, lone, 1, &all);
	if (r->error) {
		all.tests++;
		all.errors++;
	}
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcpwarden ", f);
	xml_put(f, r->command);
	fputc('"', f);
	counts_attr(f, &all);
	fputs(">\n", f);
	for (size_t i = 0; i <= r->ncases; i++) {
		const char *s = i < r->ncases ? r->cases[i].suite : lone;
		if (!s || (i < r->ncases && !first_of_suite(r, i)))
			continue;
		struct counts k = {0};
		count_suite(r, s, i == 0, &k);
		int err_here = r->error && i == 0;
		if (err_here) {
			k.tests++;
			k.errors++;
		}
		fputs("  <testsuite name=\"", f);
		xml_put(f, s);
		fputc('"', f);
		counts_attr(f, &k);
		fputs(">\n", f);
		if (err_here) {
			fputs("    <testcase classname=\"", f);
			xml_put(f, s);
			fputs("\" name=\"", f);
			xml_put(f, r->command);
			fputs("\">\n      <error message=\"", f);
			xml_put(f, r->error);
			fputs("\" type=\"could-not-run\"/>\n    </testcase>\n", f);
		}
		for (size_t c = i; c < r->ncases; c++)
			if (same(r->cases[c].suite, s))
				write_case(r, &r->cases[c], f);
		if (listing_errors(r, s, i == 0))
			write_listing_case(r, s, i == 0, f);
		fputs("  </testsuite>\n", f);
	}
	if (r->dropped)
		fprintf(f, "  <!-- %zu findings not kept (cap) -->\n", r->dropped);
	fputs("</testsuites>\n", f);
	return 0;
}

/* The official JSON-Schema-Test-Suite against checks/jschema.h.
 *
 * Reads every file of draft2020-12 and draft7 from the Debian package
 * libtest-json-schema-acceptance-perl (the official suite, newer, with
 * 2020-12) and draft7 from json-schema-test-suite 2.0.0 (tests/deps.sh
 * installs both), optional/ and optional/format/ included, and runs every
 * test case. A group whose schema cannot compile because it needs another
 * document ($ref to a remote) is skipped with that reason, as are format
 * files for formats the validator does not assert and, in optional files,
 * patterns jsre refuses. Everything else counts.
 *
 * Prints one line per skipped group and per failed case, then a table per
 * file (passed / failed / skipped). Fails when a required (non-optional)
 * case fails. With --markdown PATH it also writes the table as markdown
 * (docs/jschema-suite.md):
 *
 *   make build/tests/checks/test_jschema_suite &&
 *     build/tests/checks/test_jschema_suite --markdown docs/jschema-suite.md
 *
 * JSCHEMA_SUITE_ACCEPTANCE / JSCHEMA_SUITE_DEBIAN override the two roots.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checks/jschema.h"

#define ACCEPTANCE "/usr/share/perl5/auto/share/dist/Test-JSON-Schema-Acceptance/tests"
#define DEBIAN "/usr/share/json-schema-test-suite/tests"

struct row {
	char suite[64];
	char file[160];
	int optional;
	size_t passed, failed, skipped;
};

struct tally {
	struct row *rows;
	size_t nrows, cap;
	size_t req_failed;
	FILE *skips; /* the skip list for the markdown */
};

static const char *asserted_formats[] = {"date-time", "date", "time", "email", "ipv4",
                                         "ipv6",      "uri",  "uuid", "hostname"};

static int format_asserted(const char *file)
{
	for (size_t i = 0; i < sizeof asserted_formats / sizeof asserted_formats[0]; i++) {
		size_t n = strlen(asserted_formats[i]);
		if (strncmp(file, asserted_formats[i], n) == 0 && strcmp(file + n, ".json") == 0)
			return 1;
	}
	return 0;
}

static struct row *new_row(struct tally *t, const char *suite, const char *file, int optional)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->rows = realloc(t->rows, t->cap * sizeof *t->rows);
		if (t->rows == NULL)
			abort();
	}
	struct row *r = &t->rows[t->nrows++];
	memset(r, 0, sizeof *r);
	snprintf(r->suite, sizeof r->suite, "%s", suite);
	snprintf(r->file, sizeof r->file, "%s", file);
	r->optional = optional;
	return r;
}

static void skip(struct tally *t, struct row *r, const char *group, size_t ncases, const char *why)
{
	r->skipped += ncases;
	printf("SKIP %s %s \"%s\" (%zu cases): %s\n", r->suite, r->file, group, ncases, why);
	if (t->skips)
		fprintf(t->skips, "| %s | %s | %s | %zu | %s |\n", r->suite, r->file, group, ncases, why);
}

static void run_file(struct tally *t, const char *suite, const char *dir, const char *file,
                     const char *label, int optional, int format_dir, enum jschema_dialect d)
{
	char path[1024];
	json_error_t jerr;
	snprintf(path, sizeof path, "%s/%s", dir, file);
	json_t *doc = json_load_file(path, JSON_ALLOW_NUL, &jerr);
	struct row *r = new_row(t, suite, label, optional);
	if (!json_is_array(doc) && optional) {
		char why[300];
		snprintf(why, sizeof why, "jansson cannot read the file: %s", jerr.text);
		skip(t, r, "(whole file)", 0, why);
		json_decref(doc);
		return;
	}
	if (!json_is_array(doc)) {
		printf("FAIL %s: cannot read: %s\n", path, jerr.text);
		r->failed++;
		t->req_failed++;
		json_decref(doc);
		return;
	}
	unsigned flags = format_dir ? JSCHEMA_FORMAT_ASSERT : 0;
	size_t gi;
	json_t *group;
	json_array_foreach(doc, gi, group) {
		const char *gdesc = json_string_value(json_object_get(group, "description"));
		json_t *tests = json_object_get(group, "tests");
		size_t ncases = json_array_size(tests);
		if (optional && strcmp(file, "content.json") == 0) {
			skip(t, r, gdesc, ncases, "contentEncoding/contentMediaType/contentSchema are "
			                          "annotations here (assertion not supported)");
			continue;
		}
		if (format_dir && !format_asserted(file)) {
			skip(t, r, gdesc, ncases, "format not asserted (an annotation only)");
			continue;
		}
		struct jschema_error why;
		struct jschema *s = jschema_compile(json_object_get(group, "schema"), d, flags, &why);
		if (s == NULL) {
			char reason[600];
			snprintf(reason, sizeof reason, "%s at %s: %s", jschema_code_str(why.code),
			         why.schema_ptr, why.message);
			int custom_meta = why.code == JSCHEMA_UNSUPPORTED && why.keyword &&
			                  strcmp(why.keyword, "$schema") == 0;
			if (custom_meta)
				snprintf(reason, sizeof reason, "$schema names a custom meta-schema in another "
				                                "document (remote, reported as unsupported)");
			if (why.code == JSCHEMA_REMOTE_REF || custom_meta ||
			    (optional && why.code == JSCHEMA_UNSUPPORTED)) {
				skip(t, r, gdesc, ncases, reason);
				continue;
			}
			printf("FAIL %s %s \"%s\": does not compile: %s\n", suite, label, gdesc, reason);
			r->failed += ncases;
			if (!optional)
				t->req_failed += ncases;
			continue;
		}
		size_t ti;
		json_t *tc;
		json_array_foreach(tests, ti, tc) {
			int want = json_is_true(json_object_get(tc, "valid"));
			struct jschema_error errs[4];
			int got = jschema_validate(s, json_object_get(tc, "data"), errs, 4);
			int quick = jschema_valid(s, json_object_get(tc, "data"));
			if (got >= 0 && (got == 0) == want && quick == want) {
				r->passed++;
				continue;
			}
			r->failed++;
			if (!optional)
				t->req_failed++;
			printf("FAIL %s %s \"%s\" / \"%s\": want %s, got %d (fast %d)%s%s%s\n", suite, label,
			       gdesc, json_string_value(json_object_get(tc, "description")),
			       want ? "valid" : "invalid", got, quick, got != 0 ? ": " : "",
			       got != 0 ? errs[0].schema_ptr : "", got != 0 ? errs[0].message : "");
		}
		jschema_free(s);
	}
	json_decref(doc);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(struct tally *t, const char *suite, const char *dir, const char *prefix,
                   int optional, int format_dir, enum jschema_dialect d)
{
	DIR *dh = opendir(dir);
	if (dh == NULL) {
		printf("FAIL cannot open %s (make deps installs the suites)\n", dir);
		return -1;
	}
	char *names[256];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(dh)) != NULL && n < 256) {
		size_t l = strlen(e->d_name);
		if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0)
			names[n++] = strdup(e->d_name);
	}
	closedir(dh);
	qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; i < n; i++) {
		char label[160];
		snprintf(label, sizeof label, "%s%s", prefix, names[i]);
		run_file(t, suite, dir, names[i], label, optional, format_dir, d);
		free(names[i]);
	}
	return n ? 0 : -1;
}

static int run_suite(struct tally *t, const char *suite, const char *root, enum jschema_dialect d)
{
	char dir[1024];
	int rc = run_dir(t, suite, root, "", 0, 0, d);
	snprintf(dir, sizeof dir, "%s/optional", root);
	rc |= run_dir(t, suite, dir, "optional/", 1, 0, d);
	snprintf(dir, sizeof dir, "%s/optional/format", root);
	rc |= run_dir(t, suite, dir, "optional/format/", 1, 1, d);
	return rc;
}

static void table(const struct tally *t, FILE *f, int md)
{
	const char *last = "";
	size_t tp = 0, tf = 0, ts = 0, rp = 0, rf = 0, rs = 0;
	for (size_t i = 0; i <= t->nrows; i++) {
		const struct row *r = i < t->nrows ? &t->rows[i] : NULL;
		if (r == NULL || strcmp(r->suite, last) != 0) {
			if (*last) {
				if (md)
					fprintf(f, "| **required total** | **%zu** | **%zu** | **%zu** |\n"
					           "| **all total** | **%zu** | **%zu** | **%zu** |\n\n",
					        rp, rf, rs, tp, tf, ts);
				else
					fprintf(f, "%-48s %7zu %7zu %7zu\n%-48s %7zu %7zu %7zu\n\n",
					        "required total", rp, rf, rs, "all total", tp, tf, ts);
			}
			if (r == NULL)
				break;
			last = r->suite;
			tp = tf = ts = rp = rf = rs = 0;
			if (md)
				fprintf(f, "### %s\n\n| file | passed | failed | skipped |\n|---|---:|---:|---:|\n",
				        r->suite);
			else
				fprintf(f, "== %s\n%-48s %7s %7s %7s\n", r->suite, "file", "passed", "failed",
				        "skipped");
		}
		if (md)
			fprintf(f, "| %s | %zu | %zu | %zu |\n", r->file, r->passed, r->failed, r->skipped);
		else
			fprintf(f, "%-48s %7zu %7zu %7zu\n", r->file, r->passed, r->failed, r->skipped);
		tp += r->passed;
		tf += r->failed;
		ts += r->skipped;
		if (!r->optional) {
			rp += r->passed;
			rf += r->failed;
			rs += r->skipped;
		}
	}
}

int main(int argc, char **argv)
{
	const char *md = argc == 3 && strcmp(argv[1], "--markdown") == 0 ? argv[2] : NULL;
	const char *acc = getenv("JSCHEMA_SUITE_ACCEPTANCE");
	const char *deb = getenv("JSCHEMA_SUITE_DEBIAN");
	char dir[1024];
	struct tally t = {0};
	char *skipbuf = NULL;
	size_t skiplen = 0;
	t.skips = open_memstream(&skipbuf, &skiplen);
	int rc = 0;

	snprintf(dir, sizeof dir, "%s/draft2020-12", acc ? acc : ACCEPTANCE);
	rc |= run_suite(&t, "draft2020-12 (Test-JSON-Schema-Acceptance 1.019)", dir, JSCHEMA_2020_12);
	snprintf(dir, sizeof dir, "%s/draft7", acc ? acc : ACCEPTANCE);
	rc |= run_suite(&t, "draft7 (Test-JSON-Schema-Acceptance 1.019)", dir, JSCHEMA_DRAFT7);
	snprintf(dir, sizeof dir, "%s/draft7", deb ? deb : DEBIAN);
	rc |= run_suite(&t, "draft7 (json-schema-test-suite 2.0.0)", dir, JSCHEMA_DRAFT7);
	fclose(t.skips);

	printf("\n");
	table(&t, stdout, 0);
	if (md) {
		FILE *f = fopen(md, "w");
		if (f == NULL) {
			perror(md);
			return 1;
		}
		fprintf(f, "# checks/jschema against the official JSON-Schema-Test-Suite\n\n"
		           "Generated by `make build/tests/checks/test_jschema_suite && "
		           "build/tests/checks/test_jschema_suite --markdown docs/jschema-suite.md` "
		           "(tests/unit/checks/test_jschema_suite.c; `make unit` runs it and fails when a "
		           "required case fails). Cases are counted one by one; a skipped group counts all "
		           "its cases. `optional/format/*` runs with JSCHEMA_FORMAT_ASSERT; the required "
		           "`format.json` without it (format is an annotation).\n\n");
		table(&t, f, 1);
		fprintf(f, "## Skipped groups and why\n\n| suite | file | group | cases | reason |\n"
		           "|---|---|---|---:|---|\n%s",
		        skipbuf ? skipbuf : "");
		fclose(f);
	}
	free(skipbuf);
	free(t.rows);
	if (rc) {
		printf("FAIL: a suite directory is missing or empty\n");
		return 1;
	}
	if (t.req_failed) {
		printf("FAIL: %zu required cases failed\n", t.req_failed);
		return 1;
	}
	printf("OK: every required case of the supported keywords passes\n");
	return 0;
}

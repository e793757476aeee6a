/* Unit tests for proxy/hooks/baseline_store.c: an accepted listing written
 * as a baseline file atomically (issue 21, "Live baselines"): the content,
 * the old file's mode, a new file's mode, nothing left beside it, and a
 * failure that leaves the old file untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/hooks/baseline_store.h"

struct fx {
	char dir[64];
	char file[96];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_baseline_store_XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->file, sizeof(f->file), "%s/base.json", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	DIR *d = opendir(f->dir);
	struct dirent *e;
	char p[384];
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", f->dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Entries in dir besides base.json. */
static int others(const struct fx *f)
{
	DIR *d = opendir(f->dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.' && strcmp(e->d_name, "base.json") != 0;
	if (d)
		closedir(d);
	return n;
}

static json_t *tools2(void)
{
	return json_loads("[{\"name\":\"a\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"b\"}]", 0,
	                  NULL);
}

static void test_new_file(void **state)
{
	struct fx *f = *state;
	char err[256];
	json_t *t = tools2();
	assert_int_equal(baseline_store_write(f->file, t, err, sizeof(err)), 0);
	json_t *got = json_load_file(f->file, 0, NULL);
	assert_non_null(got);
	assert_true(json_equal(json_object_get(got, "tools"), t));
	assert_int_equal(json_object_size(got), 1);
	struct stat st;
	assert_int_equal(stat(f->file, &st), 0);
	assert_int_equal(st.st_mode & 0777, BASELINE_STORE_NEW_MODE);
	assert_int_equal(others(f), 0);
	json_decref(got);
	json_decref(t);
}

static void test_replaces_keeping_mode(void **state)
{
	struct fx *f = *state;
	char err[256];
	FILE *fp = fopen(f->file, "w");
	assert_non_null(fp);
	fputs("{\"tools\":[]}\n", fp);
	fclose(fp);
	assert_int_equal(chmod(f->file, 0640), 0);
	struct stat before;
	assert_int_equal(stat(f->file, &before), 0);
	json_t *t = tools2();
	assert_int_equal(baseline_store_write(f->file, t, err, sizeof(err)), 0);
	struct stat st;
	assert_int_equal(stat(f->file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	/* a new inode: renamed into place, not rewritten where it was */
	assert_true(st.st_ino != before.st_ino);
	json_t *got = json_load_file(f->file, 0, NULL);
	assert_true(json_equal(json_object_get(got, "tools"), t));
	assert_int_equal(others(f), 0);
	json_decref(got);
	json_decref(t);
}

static void test_failure_leaves_nothing(void **state)
{
	struct fx *f = *state;
	char err[256], file[160];
	json_t *t = tools2();
	snprintf(file, sizeof(file), "%s/missing/base.json", f->dir);
	assert_int_equal(baseline_store_write(file, t, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot create a temporary file"));
	assert_non_null(strstr(err, file));
	/* not a tool array: refused before touching anything */
	json_t *obj = json_object();
	assert_int_equal(baseline_store_write(f->file, obj, err, sizeof(err)), -1);
	assert_int_equal(access(f->file, F_OK), -1);
	assert_int_equal(others(f), 0);
	json_decref(obj);
	json_decref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replaces_keeping_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_leaves_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

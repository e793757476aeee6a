/* replay: a standalone main() for any libFuzzer target, so `make test`
 * replays checked-in corpora with plain gcc and no libFuzzer runtime.
 *
 *   fuzz_x [-v] PATH...
 *
 * Each PATH is a file or a directory; a directory's regular files are run in
 * name order (not recursing, skipping dotfiles such as .gitkeep). Each input
 * is copied into a buffer of exactly its size, as libFuzzer does, so that
 * AddressSanitizer builds catch reads past the end. A target that crashes
 * ends the run there (the file name has been printed first with -v, or can be
 * found by rerunning with -v). A file that cannot be read, or a target return
 * value other than 0 or -1 (libFuzzer reserves the others), counts as failed.
 *
 * Prints "N passed, M failed" and exits non-zero when M > 0 or when no PATH
 * was given.
 *
 * It leaves out everything else libFuzzer does: no mutation, no options, no
 * timeouts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* scandir, alphasort */
#endif

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional in a target; weak so targets without it still link. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

struct replay {
	unsigned passed;
	unsigned failed;
	int      verbose;
};

/* Reads path into a malloc'd buffer of exactly its size (NULL for an empty
 * file, like libFuzzer's empty input). Returns 0 or -1. */
static int
read_file(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long sz;

	*out = NULL;
	*len = 0;
	if (f == NULL)
		return -1;
	if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0)
		goto fail;
	if (sz > 0) {
		buf = malloc((size_t)sz);
		if (buf == NULL || fread(buf, 1, (size_t)sz, f) != (size_t)sz)
			goto fail;
	}
	fclose(f);
	*out = buf;
	*len = (size_t)sz;
	return 0;
fail:
	free(buf);
	fclose(f);
	return -1;
}

static void
run_file(struct replay *rp, const char *path)
{
	uint8_t *buf;
	size_t len;
	int rc;

	if (rp->verbose) {
		fprintf(stderr, "replay: %s\n", path);
		fflush(stderr);
	}
	if (read_file(path, &buf, &len) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		rp->failed++;
		return;
	}
	rc = LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	if (rc != 0 && rc != -1) {
		fprintf(stderr, "replay: %s: target returned %d\n", path, rc);
		rp->failed++;
		return;
	}
	rp->passed++;
}

static int
skip_entry(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static void
run_dir(struct replay *rp, const char *dir)
{
	struct dirent **ents;
	int n, i;

	n = scandir(dir, &ents, skip_entry, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		rp->failed++;
		return;
	}
	if (n == 0)
		fprintf(stderr, "replay: %s: empty\n", dir);
	for (i = 0; i < n; i++) {
		size_t plen = strlen(dir) + strlen(ents[i]->d_name) + 2;
		char *path = malloc(plen);
		struct stat st;

		if (path == NULL) {
			fprintf(stderr, "replay: out of memory\n");
			rp->failed++;
		} else {
			snprintf(path, plen, "%s/%s", dir, ents[i]->d_name);
			/* Only regular files: subdirectories are not corpora. */
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
				run_file(rp, path);
			free(path);
		}
		free(ents[i]);
	}
	free(ents);
}

int
main(int argc, char **argv)
{
	struct replay rp = { 0, 0, 0 };
	int i, paths = 0;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		struct stat st;

		if (strcmp(argv[i], "-v") == 0) {
			rp.verbose = 1;
			continue;
		}
		paths++;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i],
			        strerror(errno));
			rp.failed++;
		} else if (S_ISDIR(st.st_mode))
			run_dir(&rp, argv[i]);
		else
			run_file(&rp, argv[i]);
	}
	if (paths == 0) {
		fprintf(stderr, "usage: %s [-v] FILE_OR_DIR...\n", argv[0]);
		return 2;
	}
	printf("%u passed, %u failed\n", rp.passed, rp.failed);
	return rp.failed > 0 ? 1 : 0;
}

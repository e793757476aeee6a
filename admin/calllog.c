/* calllog: see calllog.h. */
#include "admin/calllog.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy/base/errs.h"
#include "proxy/base/log.h"

struct calllog {
	FILE *f;                      /* owned unless stdout */
	char *path;                   /* owned; NULL for stdout */
	int is_stdout, failed;
	uint64_t retry_us;            /* failed: next write attempt (mono_us) */
	uint64_t lost;                /* records not written since it failed */
	off_t good;                   /* end of the last whole line, -1 unknown */
};

/* Where whole lines end (-1: not a regular file, nothing to undo). */
static off_t end_of_lines(FILE *f)
{
	struct stat st;
	return fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
}

struct calllog *calllog_open(const char *target, struct errs *e)
{
	struct calllog *l = calloc(1, sizeof(*l));
	if (!l) {
		errs_add(e, "admin: out of memory");
		return NULL;
	}
	if (strcmp(target, "stdout") == 0) {
		l->f = stdout;
		l->is_stdout = 1;
		l->good = -1; /* never truncate what others may write to */
		return l;
	}
	l->path = strdup(target);
	l->f = fopen(target, "ae");
	if (!l->path || !l->f) {
		errs_add(e, "$.admin.log_calls: %s: %s", target, l->path ? strerror(errno) : "out of memory");
		if (l->f)
			fclose(l->f);
		free(l->path);
		free(l);
		return NULL;
	}
	l->good = end_of_lines(l->f);
	return l;
}

int calllog_reopen(struct calllog *l, char *err, size_t errlen)
{
	if (l->is_stdout)
		return 0;
	FILE *f = fopen(l->path, "ae");
	if (!f) {
		snprintf(err, errlen, "%s: %s", l->path, strerror(errno));
		return -1;
	}
	/* Every line went out whole with its own fflush, so the old file
	 * holds nothing half written that closing could cut or lose. */
	fclose(l->f);
	l->f = f;
	l->good = end_of_lines(f);
	/* A new file may well take what the old one's disk refused: the next
	 * record tries at once instead of after the retry delay. */
	l->retry_us = 0;
	return 0;
}

const char *calllog_path(const struct calllog *l)
{
	return l->path ? l->path : "stdout";
}

void calllog_free(struct calllog *l)
{
	if (!l)
		return;
	if (l->is_stdout)
		fflush(l->f);
	else
		fclose(l->f);
	free(l->path);
	free(l);
}

void calllog_write(struct calllog *l, char *s, size_t len, uint64_t now)
{
	if (l->failed && now < l->retry_us) {
		l->lost++;
		return;
	}
	clearerr(l->f);
	s[len] = '\n';
	int ok = fwrite(s, 1, len + 1, l->f) == len + 1 && fflush(l->f) == 0;
	int err = errno;
	s[len] = '\0';
	if (ok) {
		if (l->failed)
			log_msg(LOG_WARN, "admin: the call log is written again; %llu records were not "
			                  "written to it (they are on /calls while the ring keeps them)",
			        (unsigned long long)l->lost);
		l->failed = 0;
		l->lost = 0;
		/* Flushed, so the descriptor's offset (O_APPEND: the end) is
		 * where whole lines end; stdio's own idea may be stale after a
		 * truncation. */
		if (l->good >= 0)
			l->good = lseek(fileno(l->f), 0, SEEK_CUR);
		return;
	}
	/* stdio dropped what it could not write; the file may end in part of
	 * this line. Not a regular file (stdout, a pipe): nothing to undo. */
	if (l->good >= 0 && ftruncate(fileno(l->f), l->good) < 0)
		l->good = -1;
	l->lost++;
	l->retry_us = now + CALLLOG_RETRY_US;
	if (!l->failed)
		log_msg(LOG_ERROR, "admin: writing the call log failed (%s): records still reach "
		                   "/calls; the log is tried again every second",
		        strerror(err));
	l->failed = 1;
}

int calllog_appendable(const char *path)
{
	if (access(path, W_OK) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	char dir[4096];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	if (n >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, n);
	dir[n] = '\0';
	return access(slash ? (n ? dir : "/") : ".", W_OK | X_OK);
}

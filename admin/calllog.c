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
	int is_stdout, failed;
	uint64_t retry_us;            /* failed: next write attempt (mono_us) */
	uint64_t lost;                /* records not written since it failed */
	off_t good;                   /* end of the last whole line, -1 unknown */
};

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
	l->f = fopen(target, "ae");
	if (!l->f) {
		errs_add(e, "$.admin.log_calls: %s: %s", target, strerror(errno));
		free(l);
		return NULL;
	}
	/* Where whole lines end (-1: not a regular file, nothing to undo). */
	struct stat st;
	l->good = fstat(fileno(l->f), &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
	return l;
}

void calllog_free(struct calllog *l)
{
	if (!l)
		return;
	if (l->is_stdout)
		fflush(l->f);
	else
		fclose(l->f);
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

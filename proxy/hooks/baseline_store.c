/* baseline_store: see baseline_store.h. */
#include "proxy/hooks/baseline_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

/* FILE's directory into dir (cap bytes): "." for a bare name. */
static int dir_of(const char *file, char *dir, size_t cap)
{
	const char *slash = strrchr(file, '/');
	if (!slash)
		return snprintf(dir, cap, ".") < (int)cap ? 0 : -1;
	size_t n = slash == file ? 1 : (size_t)(slash - file);
	if (n + 1 > cap)
		return -1;
	memcpy(dir, file, n);
	dir[n] = '\0';
	return 0;
}

static int write_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The directory entry of the rename made durable: without it a crash
 * may bring the old name back. */
static int sync_dir(const char *file)
{
	char dir[4096];
	if (dir_of(file, dir, sizeof(dir)) < 0)
		return -1;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

int baseline_store_write(const char *file, const json_t *tools, char *err, size_t errlen)
{
	char tmp[4096];
	struct stat st;
	const char *step = "cannot serialise the listing";

	if (!file || !*file || !json_is_array(tools)) {
		snprintf(err, errlen, "no baseline file or no tool list");
		return -1;
	}
	mode_t mode = stat(file, &st) == 0 ? (st.st_mode & 07777) : BASELINE_STORE_NEW_MODE;
	json_t *doc = json_pack("{s:O}", "tools", (json_t *)(uintptr_t)tools);
	char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
	json_decref(doc);
	if (!text) {
		snprintf(err, errlen, "%s: %s", file, step);
		return -1;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", file) >= (int)sizeof(tmp)) {
		free(text);
		snprintf(err, errlen, "%s: path too long", file);
		return -1;
	}
	int fd = mkstemp(tmp);
	if (fd < 0) {
		int e = errno;
		free(text);
		snprintf(err, errlen, "%s: cannot create a temporary file beside it: %s", file,
		         strerror(e));
		return -1;
	}
	int rc = -1;
	step = "write";
	if (write_all(fd, text, strlen(text)) == 0 && write_all(fd, "\n", 1) == 0) {
		step = "chmod";
		if (fchmod(fd, mode) == 0) {
			step = "fsync";
			if (fsync(fd) == 0)
				rc = 0;
		}
	}
	int e = errno;
	free(text);
	if (close(fd) < 0 && rc == 0) {
		e = errno;
		step = "close";
		rc = -1;
	}
	if (rc == 0 && rename(tmp, file) < 0) {
		e = errno;
		step = "rename";
		rc = -1;
	}
	if (rc < 0) {
		unlink(tmp);
		snprintf(err, errlen, "%s: %s failed: %s", file, step, strerror(e));
		return -1;
	}
	if (sync_dir(file) < 0) {
		/* The file is in place; only its durability across a crash is
		 * in doubt. Said, not undone. */
		snprintf(err, errlen, "%s: written, but syncing its directory failed: %s", file,
		         strerror(errno));
		return 1;
	}
	return 0;
}

int baseline_store_digest(const json_t *tools, char hex[BASELINE_STORE_DIGEST_HEX])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char d[SHA256_DIGEST_LENGTH];
	char *text = json_dumps(tools, JSON_COMPACT | JSON_PRESERVE_ORDER);
	hex[0] = '\0';
	if (!text)
		return -1;
	SHA256((const unsigned char *)text, strlen(text), d);
	free(text);
	for (size_t i = 0; i < sizeof(d); i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[2 * sizeof(d)] = '\0';
	return 0;
}

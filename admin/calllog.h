/* calllog: admin.log_calls, the JSON-lines copy of every call record for
 * log shippers (stdout or a file opened for appending).
 *
 * The ring and /calls keep every record whatever happens here. When a
 * write fails (disk full), that is logged once, the lines of the records
 * that follow are counted as lost and writing is tried again once a
 * second; the first line that goes through again is logged with the
 * count. A line cut short by the failure is truncated away where the log
 * is a regular file, so a shipper never reads half a record glued to the
 * next one.
 *
 * One writer at a time (the caller serialises: admin's lock). Not here:
 * what a record holds (proxy/hooks/hook_record.h).
 */
#ifndef MCPWARDEN_CALLLOG_H
#define MCPWARDEN_CALLLOG_H

#include <stddef.h>
#include <stdint.h>

#define CALLLOG_RETRY_US 1000000u  /* a failing call log is tried again this often */

struct calllog;
struct errs;

/* target: "stdout" or a file path (opened for appending, created if need
 * be). NULL with the reason added to e ("$.admin.log_calls: …"). */
struct calllog *calllog_open(const char *target, struct errs *e);
/* Flushes (stdout) or closes (a file). Accepts NULL. */
void calllog_free(struct calllog *l);

/* SIGUSR1, after logrotate moved the file: opens the path again (created
 * if need be) and writes there from the next record on; the old file
 * keeps every line written before, each whole. Under the same
 * serialisation as calllog_write. 0 (stdout: nothing to do), or -1 with
 * the reason in err, the old file still written to. */
int calllog_reopen(struct calllog *l, char *err, size_t errlen);

/* The path given to calllog_open, or "stdout". Borrowed: l's lifetime. */
const char *calllog_path(const struct calllog *l);

/* One record's line: s[0..len) is its JSON text and s[len] its NUL, which
 * becomes the newline for the write and is put back. now: a monotonic
 * clock in microseconds (for the retry delay). */
void calllog_write(struct calllog *l, char *s, size_t len, uint64_t now);

/* Whether calllog_open(path) would succeed, without creating the file:
 * 0 when it is writable, or does not exist and its directory is; -1 with
 * errno set otherwise. For --check-config. */
int calllog_appendable(const char *path);

#endif

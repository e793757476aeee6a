/* hook_capture: the capture file, an observer on the message hook.
 *
 * Per upstream with "capture": {"path", "max_bytes", "keep", "unredacted"}
 * (conf/README.md), every tools/call exchange becomes one JSON line in
 * that file (proxy/hooks/capture_line.h; the keys, their order and what
 * is never captured: docs/capture.md). The line carries the session's
 * capture key (a keyed hash of its session id, never the id), the
 * negotiated protocol version, the client's transport, the clientInfo and
 * capabilities of the session's initialize when this process saw it (or
 * the 2026-07-28 request's own _meta), the whole params, and the whole
 * answer, redacted with the recorder's rules unless "unredacted": true.
 * No HTTP header is ever captured: the line has no member for one.
 *
 * Off the data path: a worker builds the line (redaction included) and
 * queues it; one writer thread of this module appends it to the file. The
 * queue is bounded (CAPTURE_QUEUE_BYTES over all upstreams): a line that
 * does not fit is dropped and counted, so a slow disk costs lines, never
 * memory or a worker's time. Workers take the queue's lock only to link a
 * line; the writer takes it only to unlink the whole queue, writes it in
 * runs (one writev each) and naps 5 ms after a batch, so that while calls
 * come nobody has to wake it.
 *
 * The file: opened O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW with mode 0600; a
 * symbolic link or anything but a regular file at the path is refused (a
 * link someone else planted would send captured arguments wherever it
 * points); a file there already with wider permissions is narrowed to
 * 0600. Before a line would take it past max_bytes it is rotated: FILE.
 * (keep-1) -> FILE.keep ... FILE -> FILE.1, a new FILE (keep 0: the old
 * lines are discarded). hook_capture_reopen (SIGUSR1) reopens every path,
 * after logrotate moved a file away.
 *
 * Not here: the line's text (capture_line.c), the configuration keys
 * (proxy/config.c), the counters' exposition (admin/metrics.c).
 */
#ifndef MCPWARDEN_HOOK_CAPTURE_H
#define MCPWARDEN_HOOK_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

struct inspect;
struct redact;
struct px_config;

/* Lines waiting for the writer, in bytes, over all upstreams. */
#define CAPTURE_QUEUE_BYTES (32u * 1024 * 1024)
/* Sessions whose initialize is remembered (set-associative, oldest of a
 * set replaced): past it, a session's lines have null client info. */
#define CAPTURE_SESSIONS 4096

struct hook_capture;

/* Whether any upstream of cfg captures. */
int hook_capture_wanted(const struct px_config *cfg);

/* For --check-config (and a start's preflight): every capture path can be
 * opened for appending (a regular file, not a link, writable, or absent
 * in a writable directory, which rotation needs too). Creates nothing.
 * Returns 0, or -1 with one error per line in err
 * ("$.upstreams[0].capture.path: …"). */
int hook_capture_check(const struct px_config *cfg, char *err, size_t errlen);

/* Opens every capture file of cfg (borrowed; its upstream names and
 * capture settings are copied), starts the writer and registers the
 * observer on in. rd: the redactor (the recorder's: same rules, same
 * credentials), borrowed unless own_rd, when the capture frees it. NULL
 * with the reason in err. */
struct hook_capture *hook_capture_new(struct inspect *in, const struct px_config *cfg,
                                      struct redact *rd, int own_rd, char *err, size_t errlen);
/* Writes what is queued, stops the writer, closes the files. Call once no
 * exchange can run any more. Accepts NULL. */
void hook_capture_free(struct hook_capture *hc);

/* SIGUSR1: the writer reopens every capture path (created 0600 when it
 * was moved away) before its next line, and logs it. Any thread. */
void hook_capture_reopen(struct hook_capture *hc);

/* Counters of upstream i (cfg order): lines written, lines dropped (the
 * queue was full, or the file could not be written). 0 when upstream i
 * does not capture; returns its name, or NULL past the last upstream. */
const char *hook_capture_stats(const struct hook_capture *hc, size_t i, int *on,
                               uint64_t *records, uint64_t *dropped);

#endif

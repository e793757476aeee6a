/* sink: where the call recorder (proxy/hooks/hook_record.c) hands what it
 * makes: finished records as JSON text, and the events counters are made
 * of (a call ended, the server sent a message, an exchange ended, a hook
 * decided, a session opened or closed).
 *
 * Hooks publish, the layer above pulls: the recorder knows nothing of who
 * keeps records (admin's ring, its call log, /calls/stream) or what counts
 * them (admin's metrics); the admin endpoint implements these ops and gives
 * them to hook_record_new. A test gives its own.
 *
 * Every op runs holding the recorder's lock (hook_record_set_lock), one at
 * a time, on whichever thread drains the outboxes; none may call back into
 * the recorder. Strings are borrowed for the call.
 *
 * Not here: the record's members (hook_record.h), its storage (admin/ring.h
 * uses struct record_block to take a record's buffer without a copy).
 */
#ifndef MCPWARDEN_SINK_H
#define MCPWARDEN_SINK_H

#include <stddef.h>
#include <stdint.h>

/* Label values handed to the count ops (method, tool, rule) are cut to at
 * most this many bytes: no counter keeps a longer label (admin/metrics.h
 * METRICS_LABEL_MAX is at most this), so a cut value is cut no further
 * than the original would be. */
#define RECORD_LABEL_MAX 128

/* The keys a record is filtered by. Every field may be NULL ("none"). */
struct record_keys {
	const char *method;
	const char *tool;
	const char *session;
	const char *outcome;
};

/* A record handed over whole: block (owned, cap bytes allocated) holds
 * the NUL-terminated JSON text at json[0..len] and the keys, which point
 * into block or are static strings (NULL: none). */
struct record_block {
	char *block;
	size_t cap;
	const char *json;
	size_t len;
	struct record_keys keys;
};

/* A finished record as the recorder wrote it (hook_record.h). */
struct hook_record_text;

struct record_sink {
	/* A finished record: t and keys as hook_record.h says. NULL: no
	 * record text is written at all. */
	void (*record)(void *arg, struct hook_record_text *t, const struct record_keys *keys);
	/* The counts: all set, or all NULL (nothing counted). */
	/* One client call ended (a request with its answer, or a
	 * notification); tool NULL: not a tools/call; outcome static (see
	 * hook_record.h); latency_us < 0: not timed. */
	void (*call)(void *arg, const char *method, const char *tool, const char *outcome,
	             int64_t latency_us);
	/* A message the server sent on its own (notification or request). */
	void (*server_message)(void *arg, const char *method);
	/* One HTTP exchange ended with these byte counts. */
	void (*exchange)(void *arg, uint64_t bytes_in, uint64_t bytes_out);
	/* A deciding hook's verdict ("forward", "drop", "answer") and the
	 * rule or reason it gave (never NULL). */
	void (*policy)(void *arg, const char *rule, const char *verdict);
	/* An initialize reply carried a session id / a DELETE ended one. */
	void (*session_opened)(void *arg);
	void (*session_closed)(void *arg);
};

#endif

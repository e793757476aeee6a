/* sse: incremental Server-Sent Events reader and writer.
 *
 * The reader is fed the body of a text/event-stream response in whatever
 * fragments the network delivers and reports each complete block (the lines
 * up to a blank line) once. It accepts LF, CRLF and lone CR line endings, a
 * CR at the end of one fragment and its LF at the start of the next, a UTF-8
 * BOM at the start of the stream, multi-line data, fields without a colon and
 * comments. It does no I/O; it allocates only its own buffers (the current
 * line and the block's fields), bounded together by max_block_bytes.
 *
 * Unlike a browser's EventSource it also reports blocks whose data is empty
 * (the 2025-11-25 priming event "id: X\ndata:\n\n") and blocks that carry only
 * `retry`, because a proxy must pass those through for resumption to work.
 *
 * The writer serialises a block back in canonical form (LF endings, one
 * `data:` line per data line).
 */
#ifndef MCPWARDEN_SSE_H
#define MCPWARDEN_SSE_H

#include <stddef.h>

struct evbuffer;

/* One block. Pointers are borrowed: valid only during the callback, and not
 * NUL-terminated (data may itself contain NUL); use the lengths. An empty
 * field gives a non-NULL pointer with length 0. */
struct sse_event {
	const char *id;      /* NULL when the block has no id field */
	size_t      id_len;
	const char *event;   /* NULL when the block has no event field */
	size_t      event_len;
	const char *data;    /* data lines joined with '\n'; NULL when no data field */
	size_t      data_len;
	long        retry;   /* -1 when absent or not all digits */
};

struct sse_reader;

/* Called once per complete block, and once per comment line (with
 * `comment` set and `ev` NULL; comment excludes the leading ':' and one
 * space after it). A block is complete at a blank line and is reported if it
 * had a data, event, id (without NUL) or all-digit retry field; unknown
 * fields alone report nothing.
 * Return 0 to go on; any other value stops sse_reader_feed(), which returns it.
 * Avoid returning SSE_ERR_TOO_BIG, which the caller could not tell apart. */
typedef int (*sse_event_fn)(void *arg, const struct sse_event *ev,
                            const char *comment, size_t comment_len);

/* max_block_bytes bounds the bytes buffered for one block: the current line
 * (whether or not it arrived in one fragment) plus the field values kept so
 * far. Returns an owned reader, or NULL when out of memory. */
struct sse_reader *sse_reader_new(size_t max_block_bytes);
void sse_reader_free(struct sse_reader *r);

/* Feeds len bytes (buf may be NULL when len is 0). Returns 0 when all bytes
 * were consumed, SSE_ERR_TOO_BIG when a block exceeds the bound or its memory
 * cannot be allocated (the reader is then unusable: every later feed returns
 * it again), or the first non-zero value a callback returned (bytes after
 * the line that triggered it are not consumed). Whether the stream arrives
 * whole or in pieces, the same reports and the same result come out. A block
 * left incomplete when the stream ends is never reported. */
#define SSE_ERR_TOO_BIG (-2)
int sse_reader_feed(struct sse_reader *r, const char *buf, size_t len,
                    sse_event_fn fn, void *arg);

/* Bytes currently buffered for an incomplete block: the unfinished line and
 * the field values kept so far. 0 between blocks, but also inside a block
 * whose fields so far are only retry or empty values. */
size_t sse_reader_pending(const struct sse_reader *r);

/* Appends ev in canonical form followed by a blank line: "id", "event",
 * "retry" (when >= 0), then one "data" line per '\n'-separated piece of data;
 * "name: value\n", or "name:\n" for an empty value. Returns -1, appending
 * nothing, when id or event contains CR or LF, id contains NUL, or data
 * contains CR (none of which the reader can produce, and each would break or
 * change the framing), or when memory runs out; 0 otherwise. */
int sse_write_event(struct evbuffer *out, const struct sse_event *ev);

/* Appends a comment line ": text\n\n"-style keep-alive (":\n\n" when text
 * is NULL or empty). Returns -1, appending nothing, when text contains CR or
 * LF or memory runs out; 0 otherwise. */
int sse_write_comment(struct evbuffer *out, const char *text);

#endif

/* Fuzz target for the SSE reader and writer (proxy/base/sse.c).
 *
 * Input layout: byte 0 picks max_block_bytes (low 3 bits index `maxes`),
 * byte 1 picks after which report the callback asks to stop (low 4 bits, 0:
 * never); the rest is the stream. Seeds start with printable digits: "70"
 * means a 1 MiB bound and no stop, "30" a 16-byte bound, "71" stop after the
 * first report.
 *
 * Properties checked, abort() on any violation:
 *  1. Fragmentation does not matter: the stream fed whole and fed in pieces
 *     (single bytes, uneven chunks, two halves at several points, with empty
 *     feeds between) gives byte-identical reports, the same final result and
 *     the same pending count.
 *  2. Every block the reader reports can be written back, and reading what
 *     was written reports the same blocks and comments again.
 *  3. pending never exceeds the bound.
 *
 * Built with libFuzzer (make fuzz-run) or with tests/fuzz/replay.c to replay
 * the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "proxy/base/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A growable byte log of reports, compared across runs. */
struct flog {
	unsigned char *p;
	size_t len, cap;
};

struct frun {
	struct flog      log;
	int              calls;
	int              stop_at;
	struct evbuffer *rt;      /* when set: every report written back here */
	struct flog      rt_log;  /* reports expected when reading rt back */
};

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_sse: %s\n", what);
	abort();
}

static void
flog_add(struct flog *l, const void *s, size_t n)
{
	if (n > l->cap - l->len) {
		size_t ncap = l->cap ? l->cap : 256;
		unsigned char *np;

		while (ncap - l->len < n)
			ncap *= 2;
		np = realloc(l->p, ncap);
		if (np == NULL)
			fail("out of memory");
		l->p = np;
		l->cap = ncap;
	}
	if (n > 0)
		memcpy(l->p + l->len, s, n);
	l->len += n;
}

/* Tag, presence and length are logged so that NULL, "" and different splits
 * of the same bytes between fields all differ. */
static void
flog_str(struct flog *l, const char *s, size_t n)
{
	unsigned char present = s != NULL;

	flog_add(l, &present, 1);
	if (s == NULL)
		return;
	flog_add(l, &n, sizeof(n));
	flog_add(l, s, n);
}

static void
flog_report(struct flog *l, const struct sse_event *ev, const char *comment,
            size_t comment_len)
{
	if (ev != NULL) {
		flog_add(l, "E", 1);
		flog_str(l, ev->id, ev->id_len);
		flog_str(l, ev->event, ev->event_len);
		flog_str(l, ev->data, ev->data_len);
		flog_add(l, &ev->retry, sizeof(ev->retry));
	} else {
		flog_add(l, "C", 1);
		flog_str(l, comment, comment_len);
	}
}

static int
on_report(void *arg, const struct sse_event *ev, const char *comment,
          size_t comment_len)
{
	struct frun *run = arg;

	if ((ev == NULL) == (comment == NULL))
		fail("exactly one of ev and comment must be set");
	if (ev != NULL && ev->id == NULL && ev->event == NULL &&
	    ev->data == NULL && ev->retry < 0)
		fail("reported a block without fields");
	if (ev != NULL && ev->id != NULL && memchr(ev->id, '\0', ev->id_len))
		fail("reported an id with NUL");
	flog_report(&run->log, ev, comment, comment_len);

	if (run->rt != NULL) {
		if (ev != NULL) {
			if (sse_write_event(run->rt, ev) != 0)
				fail("could not write back a reported block");
			flog_report(&run->rt_log, ev, NULL, 0);
		} else if (memchr(comment, '\0', comment_len) == NULL) {
			/* The comment writer takes a C string: only comments
			 * without NUL can make the round trip. */
			char *c = malloc(comment_len + 1);

			if (c == NULL)
				fail("out of memory");
			memcpy(c, comment, comment_len);
			c[comment_len] = '\0';
			if (sse_write_comment(run->rt, c) != 0)
				fail("could not write back a comment");
			flog_report(&run->rt_log, NULL, c, comment_len);
			free(c);
		}
	}

	run->calls++;
	return run->calls == run->stop_at ? 1 : 0;
}

/* Ways of cutting the stream: single bytes; a cycle of uneven chunk sizes
 * including empty feeds; two pieces cut at a given offset. */
enum split_kind { SPLIT_BYTES, SPLIT_UNEVEN, SPLIT_AT };

struct outcome {
	int    rc;
	size_t pending;
};

static struct outcome
feed_split(struct sse_reader *r, const char *s, size_t n, enum split_kind k,
           size_t at, struct frun *run)
{
	static const size_t uneven[] = { 2, 0, 3, 1, 5, 7, 0, 11, 64 };
	struct outcome o = { 0, 0 };
	size_t off = 0, step = 0;

	while (off < n && o.rc == 0) {
		size_t c;

		switch (k) {
		case SPLIT_BYTES:
			c = 1;
			break;
		case SPLIT_UNEVEN:
			c = uneven[step++ % (sizeof(uneven) / sizeof(uneven[0]))];
			break;
		default:
			c = off < at ? at - off : n - off;
			break;
		}
		if (c > n - off)
			c = n - off;
		o.rc = sse_reader_feed(r, c ? s + off : NULL, c, on_report, run);
		off += c;
	}
	o.pending = sse_reader_pending(r);
	return o;
}

static void
check_split(const char *s, size_t n, size_t max, int stop_at,
            enum split_kind k, size_t at, const struct flog *want,
            const struct outcome *want_o)
{
	struct sse_reader *r = sse_reader_new(max);
	struct frun run;
	struct outcome o;

	if (r == NULL)
		fail("sse_reader_new");
	memset(&run, 0, sizeof(run));
	run.stop_at = stop_at;
	o = feed_split(r, s, n, k, at, &run);
	if (o.rc != want_o->rc)
		fail("split feeding changed the result");
	if (run.log.len != want->len ||
	    (want->len > 0 && memcmp(run.log.p, want->p, want->len) != 0))
		fail("split feeding changed the reports");
	if (o.rc == 0 && o.pending != want_o->pending)
		fail("split feeding changed pending");
	if (o.pending > max)
		fail("pending above the bound");
	sse_reader_free(r);
	free(run.log.p);
}

/* Reads back what the writer produced and expects the same reports. */
static void
check_roundtrip(struct frun *whole)
{
	size_t n = evbuffer_get_length(whole->rt);
	struct sse_reader *r = sse_reader_new(SIZE_MAX);
	struct frun run;
	unsigned char *flat;

	if (r == NULL)
		fail("sse_reader_new");
	memset(&run, 0, sizeof(run));
	flat = evbuffer_pullup(whole->rt, -1);
	if (n > 0 && flat == NULL)
		fail("evbuffer_pullup");
	if (sse_reader_feed(r, (const char *)flat, n, on_report, &run) != 0)
		fail("reading the written stream failed");
	if (sse_reader_pending(r) != 0)
		fail("written stream left a partial block");
	if (run.log.len != whole->rt_log.len ||
	    (run.log.len > 0 &&
	     memcmp(run.log.p, whole->rt_log.p, run.log.len) != 0))
		fail("write then read changed the reports");
	sse_reader_free(r);
	free(run.log.p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t maxes[8] = { 0, 1, 7, 16, 64, 300, 4096, 1 << 20 };
	size_t max = 1 << 20, n, i;
	int stop_at = 0, crs;
	const char *s;
	struct sse_reader *r;
	struct frun whole;
	struct outcome o;

	if (size >= 2) {
		max = maxes[data[0] & 7];
		stop_at = data[1] & 0x0f;
		data += 2;
		size -= 2;
	}
	s = (const char *)data;
	n = size;

	r = sse_reader_new(max);
	if (r == NULL)
		fail("sse_reader_new");
	memset(&whole, 0, sizeof(whole));
	whole.stop_at = stop_at;
	whole.rt = evbuffer_new();
	if (whole.rt == NULL)
		fail("evbuffer_new");
	o.rc = sse_reader_feed(r, n ? s : NULL, n, on_report, &whole);
	o.pending = sse_reader_pending(r);
	if (o.rc != 0 && o.rc != SSE_ERR_TOO_BIG && o.rc != 1)
		fail("unexpected result");
	if (o.pending > max)
		fail("pending above the bound");
	if (o.rc == SSE_ERR_TOO_BIG &&
	    sse_reader_feed(r, "\n\n", 2, on_report, &whole) != SSE_ERR_TOO_BIG)
		fail("error is not sticky");
	sse_reader_free(r);

	check_roundtrip(&whole);

	check_split(s, n, max, stop_at, SPLIT_BYTES, 0, &whole.log, &o);
	check_split(s, n, max, stop_at, SPLIT_UNEVEN, 0, &whole.log, &o);
	for (i = 1; i < 4; i++)
		check_split(s, n, max, stop_at, SPLIT_AT, n * i / 4, &whole.log, &o);
	/* Cut right after each of the first few CRs: the CRLF-across-feeds
	 * case the split points above would rarely hit. */
	for (i = 0, crs = 0; i < n && crs < 4; i++) {
		if (s[i] == '\r') {
			crs++;
			check_split(s, n, max, stop_at, SPLIT_AT, i + 1,
			            &whole.log, &o);
		}
	}

	evbuffer_free(whole.rt);
	free(whole.log.p);
	free(whole.rt_log.p);
	return 0;
}

/* sse: incremental Server-Sent Events reader and writer.
 *
 * Reader: the WHATWG "event stream interpretation" rules, adapted for a
 * proxy (see sse.h). It keeps no last-event-id across blocks: each report
 * carries only the fields of its own block, which is what a proxy relays.
 * It leaves out reconnection and the default "message" event type: it
 * reports what was on the wire, not what a browser would dispatch.
 *
 * Storage: four byte buffers, all grown by sse_buf_reserve() and all counted
 * against one bound:
 *
 *     line  + data + id + event  <=  max_block_bytes
 *     ^^^^    ^^^^^^^^^^^^^^^^^
 *     |       fields of the block so far (data joined with '\n')
 *     the line being read; only a line that crosses a fragment
 *     boundary is copied into `line`, complete lines inside one
 *     fragment are parsed in place
 *
 * The bound is checked against the full length of the current line whether
 * or not it sits in `line`, so the outcome does not depend on how the stream
 * was fragmented. Each byte is scanned once, so feeding a huge stream one
 * byte at a time stays linear.
 *
 * Writer: canonical form, LF endings, "name: value\n" or "name:\n" for an
 * empty value (a space only ever precedes a non-empty value).
 */
#include "proxy/base/sse.h"

#include <assert.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

/* Smallest allocation for a buffer; typical ids, event names and JSON-RPC
 * lines fit without a second realloc. */
#define SSE_BUF_MIN 256
/* Buffers that grew past this are released once their content is used (a
 * field buffer when its block ends, the line buffer when its line ends), so
 * an idle stream after one large event does not keep up to max_block_bytes
 * per buffer alive for the connection's lifetime. */
#define SSE_BUF_KEEP 4096

static const unsigned char sse_bom[3] = { 0xEF, 0xBB, 0xBF };

struct sse_buf {
	char  *p;   /* owned; NULL until first use */
	size_t len;
	size_t cap;
};

struct sse_reader {
	size_t         max;       /* max_block_bytes */
	struct sse_buf line;      /* head of a line split across fragments */
	struct sse_buf data;      /* data lines joined with '\n' */
	struct sse_buf id;
	struct sse_buf event;
	long           retry;     /* -1 when the block has no valid retry */
	bool           has_data;  /* a data field was seen (data may be "") */
	bool           has_id;
	bool           has_event;
	bool           has_fields;/* any of the above or a valid retry */
	bool           skip_lf;   /* last line ended with CR: eat one LF */
	bool           bom_done;  /* past the start of the stream */
	unsigned       bom_held;  /* leading bytes that matched the BOM so far */
	bool           failed;    /* sticky SSE_ERR_TOO_BIG */
};

/* The only growth strategy: double from SSE_BUF_MIN, never beyond cap.
 * Callers have already checked need <= cap against the block bound. */
static int
sse_buf_reserve(struct sse_buf *b, size_t need, size_t cap)
{
	size_t ncap;
	char *np;

	assert(need <= cap);
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : SSE_BUF_MIN;
	while (ncap < need && ncap <= SIZE_MAX / 2)
		ncap *= 2;
	if (ncap < need || ncap > cap)
		ncap = cap;
	np = realloc(b->p, ncap);
	if (np == NULL)
		return -1;
	b->p = np;
	b->cap = ncap;
	return 0;
}

static int
sse_buf_append(struct sse_buf *b, const char *s, size_t n, size_t cap)
{
	if (n == 0)
		return 0;
	if (sse_buf_reserve(b, b->len + n, cap) < 0)
		return -1;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

static void
sse_buf_reset(struct sse_buf *b)
{
	b->len = 0;
	if (b->cap > SSE_BUF_KEEP) {
		free(b->p);
		b->p = NULL;
		b->cap = 0;
	}
}

static void
sse_buf_fini(struct sse_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Bytes held for the fields of the current block. Never exceeds r->max. */
static size_t
sse_fields_bytes(const struct sse_reader *r)
{
	return r->data.len + r->id.len + r->event.len;
}

struct sse_reader *
sse_reader_new(size_t max_block_bytes)
{
	struct sse_reader *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->max = max_block_bytes;
	r->retry = -1;
	return r;
}

void
sse_reader_free(struct sse_reader *r)
{
	if (r == NULL)
		return;
	sse_buf_fini(&r->line);
	sse_buf_fini(&r->data);
	sse_buf_fini(&r->id);
	sse_buf_fini(&r->event);
	free(r);
}

/* Leading bytes held while deciding whether they are a BOM are not counted:
 * they belong to no block yet, and counting them would let pending exceed
 * the bound (they are checked against it once they turn out to be content). */
size_t
sse_reader_pending(const struct sse_reader *r)
{
	return r->line.len + sse_fields_bytes(r);
}

static int
sse_fail(struct sse_reader *r)
{
	r->failed = true;
	return SSE_ERR_TOO_BIG;
}

/* Would a line of line_len bytes (complete or not) fit next to the fields
 * already held? Written so that it cannot overflow. */
static bool
sse_line_fits(const struct sse_reader *r, size_t line_len)
{
	return line_len <= r->max - sse_fields_bytes(r);
}

/* Keeps the head of a line that continues in a later fragment. */
static int
sse_line_append(struct sse_reader *r, const char *s, size_t n)
{
	if (n > SIZE_MAX - r->line.len || !sse_line_fits(r, r->line.len + n))
		return -1;
	return sse_buf_append(&r->line, s, n, r->max);
}

static void
sse_block_reset(struct sse_reader *r)
{
	sse_buf_reset(&r->data);
	sse_buf_reset(&r->id);
	sse_buf_reset(&r->event);
	r->retry = -1;
	r->has_data = r->has_id = r->has_event = r->has_fields = false;
}

/* Only a non-empty run of ASCII digits is a retry; a value that does not fit
 * a long is treated like any other invalid one rather than clamped, so what
 * we pass on is always what the server sent. */
static long
sse_parse_retry(const char *v, size_t n)
{
	long val = 0;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		int d;

		if (v[i] < '0' || v[i] > '9')
			return -1;
		d = v[i] - '0';
		if (val > (LONG_MAX - d) / 10)
			return -1;
		val = val * 10 + d;
	}
	return val;
}

static bool
sse_name_is(const char *name, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n == l && memcmp(name, lit, l) == 0;
}

/* Applies one field. Space has been checked by the caller: the line holding
 * the value was within the bound, and the value (plus a '\n' separator) is
 * never longer than that line, so the fields stay within it too. Returns -1
 * only when memory runs out. */
static int
sse_field(struct sse_reader *r, const char *name, size_t nn,
          const char *val, size_t vn)
{
	if (sse_name_is(name, nn, "data")) {
		if (r->has_data && sse_buf_append(&r->data, "\n", 1, r->max) < 0)
			return -1;
		if (sse_buf_append(&r->data, val, vn, r->max) < 0)
			return -1;
		r->has_data = r->has_fields = true;
	} else if (sse_name_is(name, nn, "event")) {
		r->event.len = 0;
		if (sse_buf_append(&r->event, val, vn, r->max) < 0)
			return -1;
		r->has_event = r->has_fields = true;
	} else if (sse_name_is(name, nn, "id")) {
		/* WHATWG: an id with NUL is ignored, because clients could not
		 * send it back in Last-Event-ID. */
		if (memchr(val, '\0', vn) != NULL)
			return 0;
		r->id.len = 0;
		if (sse_buf_append(&r->id, val, vn, r->max) < 0)
			return -1;
		r->has_id = r->has_fields = true;
	} else if (sse_name_is(name, nn, "retry")) {
		long v = sse_parse_retry(val, vn);

		if (v >= 0) {
			r->retry = v;
			r->has_fields = true;
		}
	}
	/* Unknown fields are ignored, as browsers do. */
	assert(sse_fields_bytes(r) <= r->max);
	return 0;
}

/* Blank line: report the block if it had any field, then start afresh. The
 * buffers are reset only after the callback, since ev borrows them. */
static int
sse_dispatch(struct sse_reader *r, sse_event_fn fn, void *arg)
{
	struct sse_event ev;
	int rc;

	if (!r->has_fields)
		return 0;
	memset(&ev, 0, sizeof(ev));
	if (r->has_id) {
		ev.id = r->id.p ? r->id.p : "";
		ev.id_len = r->id.len;
	}
	if (r->has_event) {
		ev.event = r->event.p ? r->event.p : "";
		ev.event_len = r->event.len;
	}
	if (r->has_data) {
		ev.data = r->data.p ? r->data.p : "";
		ev.data_len = r->data.len;
	}
	ev.retry = r->retry;
	rc = fn(arg, &ev, NULL, 0);
	sse_block_reset(r);
	return rc;
}

/* One complete line, without its ending. Returns 0, a callback's non-zero
 * value, or SSE_ERR_TOO_BIG. */
static int
sse_line(struct sse_reader *r, const char *s, size_t n,
         sse_event_fn fn, void *arg)
{
	const char *colon, *val;
	size_t nn, vn;

	if (n == 0)
		return sse_dispatch(r, fn, arg);
	colon = memchr(s, ':', n);
	if (colon == s) {
		val = s + 1;
		vn = n - 1;
		if (vn > 0 && *val == ' ') {
			val++;
			vn--;
		}
		return fn(arg, NULL, val, vn);
	}
	if (colon == NULL) {
		nn = n;
		val = s + n;
		vn = 0;
	} else {
		nn = (size_t)(colon - s);
		val = colon + 1;
		vn = n - nn - 1;
		if (vn > 0 && *val == ' ') {
			val++;
			vn--;
		}
	}
	if (sse_field(r, s, nn, val, vn) < 0)
		return sse_fail(r);
	return 0;
}

/* First CR or LF in [p, end), or NULL. */
static const char *
sse_find_eol(const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p == '\n' || *p == '\r')
			return p;
	return NULL;
}

/* Consumes a leading BOM, which may arrive one byte per fragment. Bytes that
 * started like a BOM but were not one are the head of the first line. */
static int
sse_skip_bom(struct sse_reader *r, const char **pp, const char *end)
{
	const char *p = *pp;

	while (!r->bom_done && p < end) {
		if ((unsigned char)*p == sse_bom[r->bom_held]) {
			p++;
			if (++r->bom_held == sizeof(sse_bom)) {
				r->bom_done = true;
				r->bom_held = 0;
			}
			continue;
		}
		r->bom_done = true;
		if (sse_line_append(r, (const char *)sse_bom, r->bom_held) < 0) {
			r->bom_held = 0;
			return -1;
		}
		r->bom_held = 0;
	}
	*pp = p;
	return 0;
}

int
sse_reader_feed(struct sse_reader *r, const char *buf, size_t len,
                sse_event_fn fn, void *arg)
{
	const char *p, *end;

	assert(fn != NULL);
	if (r->failed)
		return SSE_ERR_TOO_BIG;
	if (len == 0)
		return 0;
	p = buf;
	end = buf + len;
	if (!r->bom_done && sse_skip_bom(r, &p, end) < 0)
		return sse_fail(r);

	while (p < end) {
		const char *eol, *line;
		size_t n;
		int rc;

		if (r->skip_lf) {
			r->skip_lf = false;
			if (*p == '\n') {
				p++;
				continue;
			}
		}
		eol = sse_find_eol(p, end);
		if (eol == NULL) {
			if (sse_line_append(r, p, (size_t)(end - p)) < 0)
				return sse_fail(r);
			return 0;
		}
		n = (size_t)(eol - p);
		if (r->line.len == 0) {
			if (!sse_line_fits(r, n))
				return sse_fail(r);
			line = p;
		} else {
			if (sse_line_append(r, p, n) < 0)
				return sse_fail(r);
			line = r->line.p;
			n = r->line.len;
		}
		/* A CR ends the line now; an LF right after it, even in the
		 * next fragment, belongs to the same line ending. */
		r->skip_lf = (*eol == '\r');
		p = eol + 1;
		rc = sse_line(r, line, n, fn, arg);
		sse_buf_reset(&r->line);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- writer -------------------------------------------------------------- */

static bool
sse_has_eol(const char *s, size_t n)
{
	return memchr(s, '\n', n) != NULL || memchr(s, '\r', n) != NULL;
}

/* Bytes of "name: value\n", or "name:\n" when value is empty. */
static size_t
sse_field_size(size_t name_len, size_t value_len)
{
	return name_len + 1 + (value_len ? 1 + value_len : 0) + 1;
}

static int
sse_add_field(struct evbuffer *out, const char *name, const char *v, size_t n)
{
	if (evbuffer_add(out, name, strlen(name)) < 0)
		return -1;
	if (n == 0)
		return evbuffer_add(out, ":\n", 2);
	if (evbuffer_add(out, ": ", 2) < 0 || evbuffer_add(out, v, n) < 0)
		return -1;
	return evbuffer_add(out, "\n", 1);
}

int
sse_write_event(struct evbuffer *out, const struct sse_event *ev)
{
	char retry[32];
	size_t total = 1, rlen = 0;

	if (out == NULL || ev == NULL)
		return -1;
	/* A CR or LF in id or event would end the line early and let the
	 * value inject fields or a blank line. An id with NUL would be dropped
	 * by the receiving reader, so refuse it rather than lose it. */
	if (ev->id != NULL && (sse_has_eol(ev->id, ev->id_len) ||
	                       memchr(ev->id, '\0', ev->id_len) != NULL))
		return -1;
	if (ev->event != NULL && sse_has_eol(ev->event, ev->event_len))
		return -1;
	/* Data is split on '\n' only, the inverse of the reader's join. A CR
	 * would be read back as a line end, so it cannot be carried. */
	if (ev->data != NULL && (memchr(ev->data, '\r', ev->data_len) != NULL ||
	                         ev->data_len > SIZE_MAX / 8))
		return -1;

	if (ev->id != NULL)
		total += sse_field_size(2, ev->id_len);
	if (ev->event != NULL)
		total += sse_field_size(5, ev->event_len);
	if (ev->retry >= 0) {
		int k = snprintf(retry, sizeof(retry), "retry: %ld\n", ev->retry);

		assert(k > 0 && (size_t)k < sizeof(retry));
		rlen = (size_t)k;
		total += rlen;
	}
	if (ev->data != NULL) {
		const char *p = ev->data, *end = ev->data + ev->data_len, *nl;

		for (;;) {
			nl = memchr(p, '\n', (size_t)(end - p));
			total += sse_field_size(4, (size_t)((nl ? nl : end) - p));
			if (nl == NULL)
				break;
			p = nl + 1;
		}
	}

	/* Reserve everything first so a failure leaves out untouched: adds
	 * into reserved space do not allocate. */
	if (evbuffer_expand(out, total) < 0)
		return -1;
	if (ev->id != NULL && sse_add_field(out, "id", ev->id, ev->id_len) < 0)
		return -1;
	if (ev->event != NULL &&
	    sse_add_field(out, "event", ev->event, ev->event_len) < 0)
		return -1;
	if (rlen > 0 && evbuffer_add(out, retry, rlen) < 0)
		return -1;
	if (ev->data != NULL) {
		const char *p = ev->data, *end = ev->data + ev->data_len, *nl;

		for (;;) {
			nl = memchr(p, '\n', (size_t)(end - p));
			if (sse_add_field(out, "data", p,
			                  (size_t)((nl ? nl : end) - p)) < 0)
				return -1;
			if (nl == NULL)
				break;
			p = nl + 1;
		}
	}
	return evbuffer_add(out, "\n", 1);
}

int
sse_write_comment(struct evbuffer *out, const char *text)
{
	size_t n;

	if (out == NULL)
		return -1;
	if (text == NULL)
		text = "";
	n = strlen(text);
	/* A line break would end the comment and start a field or a block. */
	if (sse_has_eol(text, n))
		return -1;
	if (evbuffer_expand(out, n + 4) < 0)
		return -1;
	if (n == 0)
		return evbuffer_add(out, ":\n\n", 3);
	if (evbuffer_add(out, ": ", 2) < 0 || evbuffer_add(out, text, n) < 0)
		return -1;
	return evbuffer_add(out, "\n\n", 2);
}

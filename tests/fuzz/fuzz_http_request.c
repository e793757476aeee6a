/* Fuzz target for proxy/net/http_parse.c on client requests; with
 * FUZZ_HTTP_RESPONSE defined (tests/fuzz/fuzz_http_response.c) the same
 * driver parses upstream responses.
 *
 * The input is the raw byte stream of one connection: no prefix, so seeds
 * are plain HTTP. It is parsed the way conn.c and upstream.c do: feed, and
 * after every complete message reset and go on with the bytes left over
 * (pipelining). Responses end with http_parser_finish(), as at the peer's
 * close.
 *
 * Each stream is parsed under a few configurations (the default header cap
 * and no body cap; a 256-byte header cap and a 64-byte body cap; for
 * responses also "every response answers a HEAD") and, under each, fed
 * whole, cut at three points derived from a hash of the data, cut at two
 * other points, and, for short inputs, one byte at a time.
 *
 * Properties checked, abort() on any violation:
 *  1. Fragmentation does not matter: every feeding gives the same event
 *     log (each message's method, URL, status, version, keep-alive,
 *     Content-Length and header fields as on_headers saw them, its body,
 *     how it ended; errors with their code and reason, except that a head
 *     both malformed and too big may say either; the finish result).
 *  2. The API's own promises: consumed <= len, consumed == len on MORE,
 *     0 on ERROR; every header name and value NUL-terminated at its length;
 *     no value ends in SP/HTAB; at most LIMIT_MAX_HEADERS fields;
 *     http_msg_header() finds the first field of each name whatever its
 *     case; an error is sticky.
 *  3. Bounds: the header block never needs more than the cap (checked as
 *     the sum of URL, names and values, each with its NUL), and there are
 *     never more complete messages than input bytes (progress).
 *  4. Strictness (issue 17): no header name is empty; a request has at
 *     most one Host, in HTTP/1.0 or HTTP/1.1, and its target is never an
 *     http(s) absolute form (that reads as its origin form).
 *
 * Built with libFuzzer (make fuzz-run FUZZ=http_request) or with
 * tests/fuzz/replay.c to replay the corpus (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/net/http_parse.h"
#include "proxy/base/limits.h"
#include "proxy/base/hash.h"

#ifdef FUZZ_HTTP_RESPONSE
#define FUZZ_KIND HTTP_KIND_RESPONSE
#define FUZZ_NAME "fuzz_http_response"
#else
#define FUZZ_KIND HTTP_KIND_REQUEST
#define FUZZ_NAME "fuzz_http_request"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what)
{
	fprintf(stderr, FUZZ_NAME ": %s\n", what);
	abort();
}

#define CHECK(cond)                                    \
	do {                                           \
		if (!(cond))                           \
			fuzz_fail("check failed: " #cond); \
	} while (0)

/* A growable byte log, compared across feedings. */
struct flog {
	unsigned char *p;
	size_t len, cap;
};

static void flog_add(struct flog *l, const void *s, size_t n)
{
	if (n == 0)
		return;
	if (n > l->cap - l->len) {
		size_t ncap = l->cap ? l->cap : 512;
		while (ncap - l->len < n)
			ncap *= 2;
		unsigned char *np = realloc(l->p, ncap);
		if (!np)
			fuzz_fail("out of memory");
		l->p = np;
		l->cap = ncap;
	}
	memcpy(l->p + l->len, s, n);
	l->len += n;
}

static void flog_str(struct flog *l, const char *s)
{
	flog_add(l, s, strlen(s) + 1);
}

static void flog_num(struct flog *l, long long v)
{
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "%lld", v);
	flog_str(l, tmp);
}

struct fconf {
	size_t max_hdr;      /* 0: default */
	size_t body_cap;     /* on_body returns -2 past it; 0: none */
	int head;            /* on_headers returns 1 */
};

static const struct fconf confs[] = {
	{0, 0, 0},
	{256, 64, 0},
#ifdef FUZZ_HTTP_RESPONSE
	{0, 0, 1},
#endif
};

struct frun {
	const struct fconf *conf;
	struct flog log;
	size_t body_len;     /* of the current message */
	struct flog body;
	int headers_seen;    /* on_headers ran for the current message */
};

/* ASCII case-insensitive, as strncasecmp in the C locale. */
static int lower(char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static int tchar_eq(char a, char b)
{
	return lower(a) == lower(b);
}

/* Whether s begins with the lowercase prefix, in any case. */
static int lower_prefix(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++)
		if (lower(*s) != *prefix)
			return 0;
	return 1;
}

/* Checks the message's invariants and logs what on_headers sees. */
static void check_and_log_msg(struct frun *r, const struct http_msg *m)
{
	size_t n = http_msg_header_count(m);
	size_t block = 0;

	CHECK(n <= LIMIT_MAX_HEADERS);
	flog_str(&r->log, http_msg_method(m));
	flog_str(&r->log, http_msg_url(m));
	flog_num(&r->log, http_msg_status(m));
	flog_num(&r->log, http_msg_version(m));
	flog_num(&r->log, http_msg_keep_alive(m));
	flog_num(&r->log, (long long)http_msg_content_length(m));
	flog_num(&r->log, (long long)n);
	/* The block holds "url\0" for requests only. */
	if (FUZZ_KIND == HTTP_KIND_REQUEST)
		block += strlen(http_msg_url(m)) + 1;
	size_t hosts = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name, *value;
		size_t nl, vl;
		CHECK(http_msg_header_at(m, i, &name, &nl, &value, &vl) == 0);
		CHECK(nl > 0);
		hosts += http_msg_header_id(m, i) == HH_HOST;
		CHECK(name[nl] == '\0');
		CHECK(value[vl] == '\0');
		CHECK(vl == 0 || (value[vl - 1] != ' ' && value[vl - 1] != '\t'));
		block += nl + 1 + vl + 1;
		flog_add(&r->log, name, nl + 1);
		flog_add(&r->log, value, vl + 1);
		/* The lookup finds the first field of that name, in any case. */
		if (memchr(name, '\0', nl) == NULL) {
			const char *found = http_msg_header(m, name);
			size_t first;
			CHECK(found != NULL);
			for (first = 0; first < i; first++) {
				const char *n2, *v2;
				size_t nl2, vl2;
				http_msg_header_at(m, first, &n2, &nl2, &v2, &vl2);
				if (nl2 == nl) {
					size_t k = 0;
					while (k < nl && tchar_eq(n2[k], name[k]))
						k++;
					if (k == nl)
						break;
				}
			}
			const char *n3, *v3;
			size_t nl3, vl3;
			http_msg_header_at(m, first, &n3, &nl3, &v3, &vl3);
			CHECK(found == v3);
		}
	}
	CHECK(block <= (r->conf->max_hdr ? r->conf->max_hdr : LIMIT_MAX_HEADER_BYTES));
	if (FUZZ_KIND == HTTP_KIND_REQUEST) {
		const char *u = http_msg_url(m);
		CHECK(hosts <= 1);
		CHECK(http_msg_version(m) == 10 || http_msg_version(m) == 11);
		CHECK(!lower_prefix(u, "http://") && !lower_prefix(u, "https://"));
	}
	CHECK(http_msg_header_at(m, n, &(const char *){NULL}, &(size_t){0}, &(const char *){NULL},
	                         &(size_t){0}) == -1);
}

static int on_headers(void *arg, const struct http_msg *m)
{
	struct frun *r = arg;
	CHECK(!r->headers_seen);
	r->headers_seen = 1;
	flog_str(&r->log, "H");
	check_and_log_msg(r, m);
	return r->conf->head ? 1 : 0;
}

static int on_body(void *arg, const char *data, size_t len)
{
	struct frun *r = arg;
	CHECK(r->headers_seen);
	/* len may be 0: llhttp flushes an empty span when a feed starts in the
	 * middle of a close-delimited body. */
	if (r->conf->body_cap && r->body_len + len > r->conf->body_cap)
		return -2;
	r->body_len += len;
	flog_add(&r->body, data, len);
	return 0;
}

static const struct http_parser_cbs fuzz_cbs = {on_headers, on_body};

static void log_done(struct frun *r, const struct http_parser *p)
{
	/* A message without headers complete cannot be complete. */
	CHECK(r->headers_seen);
	flog_str(&r->log, "D");
	check_and_log_msg(r, http_parser_msg(p));
	flog_num(&r->log, (long long)r->body_len);
	flog_add(&r->log, r->body.p, r->body.len);
	r->body.len = 0;
	r->body_len = 0;
	r->headers_seen = 0;
}

static void log_error(struct frun *r, struct http_parser *p)
{
	size_t used = 1;
	enum http_parse_err e = http_parser_error(p);

	CHECK(e != HTTP_ERR_NONE);
	CHECK(http_parser_reason(p) != NULL);
	flog_str(&r->log, "E");
	/* A head that is both malformed and over the cap may be reported
	 * either way: llhttp hands a field over (and the cap is checked) at
	 * the end of each feed, but rejects a bad byte before handing over the
	 * span that holds it. Both mean "this head is refused". */
	if (e == HTTP_ERR_SYNTAX || e == HTTP_ERR_HEADERS_TOO_BIG) {
		flog_str(&r->log, "head");
	} else {
		flog_num(&r->log, e);
		flog_str(&r->log, http_parser_reason(p));
	}
	/* Sticky. */
	CHECK(http_parser_feed(p, "GET / HTTP/1.1\r\n\r\n", 18, &used) == HTTP_PARSE_ERROR);
	CHECK(used == 0);
	CHECK(http_parser_error(p) == e);
	CHECK(http_parser_finish(p) == HTTP_PARSE_ERROR);
}

/* Parses data cut at cuts[0..ncuts) (ascending) and logs into r. */
static void run(struct frun *r, const uint8_t *data, size_t size, const size_t *cuts,
                size_t ncuts)
{
	struct http_parser *p = http_parser_new(FUZZ_KIND, r->conf->max_hdr, &fuzz_cbs, r);
	size_t start = 0, messages = 0;
	int failed = 0;

	if (!p)
		fuzz_fail("out of memory");
	r->log.len = 0;
	r->body.len = 0;
	r->body_len = 0;
	r->headers_seen = 0;
	for (size_t k = 0; k <= ncuts && !failed; k++) {
		size_t end = k < ncuts ? cuts[k] : size;
		const char *seg = (const char *)data + start;
		size_t len = end - start;
		start = end;
		do {
			size_t used = (size_t)-1;
			enum http_parse_rc rc = http_parser_feed(p, seg, len, &used);
			if (rc == HTTP_PARSE_ERROR) {
				CHECK(used == 0);
				log_error(r, p);
				failed = 1;
				break;
			}
			CHECK(used <= len);
			if (rc == HTTP_PARSE_MORE) {
				CHECK(used == len);
				break;
			}
			CHECK(rc == HTTP_PARSE_DONE);
			CHECK(http_parser_started(p));
			log_done(r, p);
			http_parser_reset(p);
			CHECK(!http_parser_started(p));
			CHECK(http_msg_header_count(http_parser_msg(p)) == 0);
			/* Progress: no message out of nothing. */
			CHECK(++messages <= size);
			seg += used;
			len -= used;
		} while (len > 0);
	}
	if (!failed) {
		flog_str(&r->log, "M");
		flog_num(&r->log, http_parser_started(p));
#ifdef FUZZ_HTTP_RESPONSE
		enum http_parse_rc rc = http_parser_finish(p);
		flog_str(&r->log, "F");
		flog_num(&r->log, rc);
		if (rc == HTTP_PARSE_DONE)
			log_done(r, p);
		else if (rc == HTTP_PARSE_ERROR)
			log_error(r, p);
#endif
	}
	http_parser_free(p);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

static void same_log(const struct frun *a, const struct frun *b, const char *how)
{
	if (a->log.len != b->log.len || memcmp(a->log.p, b->log.p, a->log.len) != 0) {
		fprintf(stderr, FUZZ_NAME ": fed %s, the outcome differs from fed whole\n", how);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = hash_fnv1a64(data, size);
	size_t three[3] = {h % (size + 1), (h >> 21) % (size + 1), (h >> 42) % (size + 1)};
	size_t two[2] = {size / 3, size - size / 5};

	qsort(three, 3, sizeof(three[0]), cmp_size);
	for (size_t c = 0; c < sizeof(confs) / sizeof(confs[0]); c++) {
		struct frun whole = {&confs[c], {0}, 0, {0}, 0};
		struct frun other = {&confs[c], {0}, 0, {0}, 0};

		run(&whole, data, size, NULL, 0);
		run(&other, data, size, three, 3);
		same_log(&whole, &other, "in four pieces");
		run(&other, data, size, two, 2);
		same_log(&whole, &other, "in three pieces");
		if (size <= 512) {
			size_t *bytes = malloc((size ? size : 1) * sizeof(*bytes));
			if (!bytes)
				fuzz_fail("out of memory");
			for (size_t i = 0; i < size; i++)
				bytes[i] = i + 1;
			run(&other, data, size, bytes, size);
			same_log(&whole, &other, "one byte at a time");
			free(bytes);
		}
		free(whole.log.p);
		free(whole.body.p);
		free(other.log.p);
		free(other.body.p);
	}
	return 0;
}

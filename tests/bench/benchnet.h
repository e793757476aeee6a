/* benchnet: the small pieces the benchmark programs (upstream.c and
 * streams.c) share: a bounded growable byte buffer, non-blocking loopback
 * sockets, a monotonic clock, the descriptor limit and /proc memory
 * figures.
 *
 * Left out: anything HTTP (each program drives llhttp itself, the way it
 * needs) and anything not on loopback: the benchmarks never leave it.
 */
#ifndef MCPWARDEN_BENCHNET_H
#define MCPWARDEN_BENCHNET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A byte buffer that grows up to max. Embedded; bn_buf_init/bn_buf_fini. */
struct bn_buf {
	char *data;  /* owned */
	size_t len, cap, max;
};

void bn_buf_init(struct bn_buf *b, size_t max);
void bn_buf_fini(struct bn_buf *b);
/* Append n bytes; -1 (nothing appended) when past max or out of memory. */
int bn_buf_add(struct bn_buf *b, const void *p, size_t n);
/* printf-style append; -1 when it does not fit under max. */
int bn_buf_addf(struct bn_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop the first n bytes (n <= len). */
void bn_buf_consume(struct bn_buf *b, size_t n);

/* Append n bytes to a NUL-terminated field with room for cap bytes (NUL
 * included); -1, nothing appended, when they do not fit. llhttp hands
 * fields over in fragments. */
int bn_field_add(char *field, size_t *len, size_t cap, const char *at, size_t n);

/* The Mcp-Session-Id header of a message being parsed, fed from llhttp's
 * header callbacks (field, field complete, value). Embedded; zero it (or
 * bn_sid_reset) before each message. */
#define BN_SID_MAX 128
struct bn_sid {
	char hname[32];          /* the header name so far (longer ones cut) */
	size_t hname_len;
	int in_sid;              /* the value being read is Mcp-Session-Id */
	char sid[BN_SID_MAX + 1];
	size_t sid_len;
};
void bn_sid_reset(struct bn_sid *h);
void bn_sid_name(struct bn_sid *h, const char *at, size_t n);
void bn_sid_name_done(struct bn_sid *h);
/* -1 when the session id is longer than BN_SID_MAX (then it is dropped). */
int bn_sid_value(struct bn_sid *h, const char *at, size_t n);

/* CLOCK_MONOTONIC in microseconds: the same clock in every process of the
 * machine, so one program can time an event another one stamped. */
int64_t bn_now_us(void);

/* Raise RLIMIT_NOFILE (soft, and hard when allowed) to at least want;
 * returns the soft limit in force afterwards. */
long bn_raise_nofile(long want);

/* A non-blocking listening socket on 127.0.0.1:port (SO_REUSEADDR), or -1
 * with errno set. */
int bn_listen(int port, int backlog);
/* A blocking-connect then non-blocking TCP socket to 127.0.0.1:port with
 * TCP_NODELAY, or -1. */
int bn_connect(int port);
int bn_set_nonblock(int fd);

/* Write all n bytes on a blocking or non-blocking fd (polling on EAGAIN,
 * at most timeout_ms in all); 0 or -1. */
int bn_write_all(int fd, const void *p, size_t n, int timeout_ms);

/* A "VmRSS:"-style field of /proc/PID/status in KiB, or -1. */
long bn_proc_kib(pid_t pid, const char *field);

/* Parse a decimal option value in [lo, hi]; exits with a message if not. */
long bn_parse_long(const char *opt, const char *s, long lo, long hi);

#endif

/* ctx: struct px_ctx, the runtime root of one worker, and struct px_proc,
 * what the workers share. main() builds one px_ctx per worker (one event
 * loop, one thread each) and passes it down; nothing else is global but
 * the log level.
 *
 * A worker's own parts (its loop, listener socket, connections, upstream
 * pools, translated sessions, counters) are in struct px_ctx and touched
 * only by its thread. What every worker shares (policy, contract state,
 * the admin endpoint, session and tool tables, process-wide counters) is
 * in struct px_proc, which each ctx points at. Worker 0 runs on the main
 * thread, owns the px_proc and alone handles signals and the admin
 * endpoint. Worker to worker: proxy/net/inbox.h. */
#ifndef MCPWARDEN_CTX_H
#define MCPWARDEN_CTX_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct event;
struct px_config;
struct upstream;
struct inspect;
struct listener;
struct conn;
struct admin;
struct hook_policy;
struct hook_contract;
struct hook_validate;
struct hook_capture;
struct sessid;
struct tools;
struct peers;
struct session_table;
struct inbox;
struct affinity;
struct sesslimit;
struct hook_trace; /* telemetry */
struct otlp;       /* telemetry */
struct listings;

/* Counters of one worker, written by its thread only (PX_STAT_ADD) and read
 * by the admin endpoint's thread (px_stat_get): relaxed atomics, so a
 * reader sees whole values without making the writer pay for a lock. */
struct px_stats {
	uint64_t connections, requests, responses_by_class[6];
	uint64_t upstream_errors, timeouts, too_large, bad_requests, aborted;
	uint64_t handoffs;  /* requests passed to the worker holding their session */
	uint64_t yields;    /* times the loop gave its core away (proxy/net/loop.h) */
	/* Tools of changed listings taken from the last one, and parsed
	 * (proxy/base/jreuse.h; transport_http). */
	uint64_t listing_tools_reused, listing_tools_parsed;
};

/* What the process shares: built by worker 0 (proxy/main.c) before the
 * other workers start and torn down after they stopped. Every worker's ctx
 * points at the one px_proc (borrowed); nothing is copied into a worker.
 * The modules below guard themselves (a mutex or atomics each); the
 * counters are atomics (__atomic_*); the rest is written by worker 0 only,
 * before the workers start or while they are stopped. */
struct px_proc {
	struct px_ctx **workers;      /* owned array (index = worker_id) */
	size_t nworkers;
	/* Worker 0 only: the other workers whose loops still run. Its own
	 * loop, which alone reads the signals, ends after theirs. */
	size_t workers_running;
	unsigned long long next_conn_id;  /* atomic: ids unique across workers */
	size_t client_conns;              /* atomic: open client connections */
	size_t translated_sessions;       /* atomic: open translated sessions */
	struct affinity *affinity;    /* owned: translated session id -> worker */
	struct sessid *sessions;      /* owned: session ids seen issued / ended */
	struct tools *tools;          /* owned: tools as each upstream last listed them */
	struct listings *listings;    /* owned: each upstream's last large listing (listings.h) */
	struct peers *peers;          /* owned: open connections per client address */
	struct sesslimit *sesslimit;  /* owned: pass-through sessions' slots (sesslimit.c) */
	/* Modules plugged into the hook chain; each NULL when not configured. */
	struct admin *admin;              /* owned: admin/admin.c */
	struct hook_policy *policy;       /* owned: proxy/hooks/hook_policy.c */
	struct hook_contract *contract;   /* owned: proxy/hooks/hook_contract.c */
	struct hook_validate *validate;   /* owned: proxy/hooks/hook_validate.c */
	struct hook_capture *capture;     /* owned: proxy/hooks/hook_capture.c (capture) */
	struct hook_trace *trace;         /* owned: proxy/hooks/hook_trace.c (telemetry) */
	/* SIGHUP re-reads the configuration from the same command line. */
	int argc;
	char **argv;                  /* borrowed: main's */
	/* Configs replaced by a reload, kept until exit: exchanges that began
	 * under one still point into it. A reload is a deliberate act, so the
	 * list stays short. */
	struct px_config **retired;   /* owned */
	size_t nretired;
};

/* One worker: its loop and everything only its thread touches. */
struct px_ctx {
	struct event_base *base;      /* owned */
	unsigned worker_id;           /* 0: the main thread's */
	struct px_proc *proc;         /* borrowed: what the process shares */
	struct inbox *inbox;          /* owned: work other threads hand this loop */
	/* This worker's view of the configuration (owned by worker 0, with
	 * the retired ones): a reload hands each worker the new one. */
	const struct px_config *cfg;
	struct upstream **ups;        /* owned: one per cfg->ups[i], same order */
	size_t nups;
	struct inspect *insp;         /* owned: the message hook chain */
	struct listener *lst;         /* owned; NULL once draining */
	struct conn *conns;           /* borrowed list head: every open client conn */
	size_t nconns;
	/* Of nconns, those of low-priority listeners (admin): each listener
	 * caps its own kind, so neither can fill the other's slots. */
	size_t nconns_low;
	/* 0 running; 1 draining (requests in flight finish); 2 the drain
	 * deadline passed (they were answered; their bytes are leaving). */
	int draining;
	struct event *drain_timer;    /* owned */
	/* Owned reference: TLS on the client listener, or NULL. Per worker,
	 * so a reload swaps it on each worker's own thread. */
	struct ssl_ctx_st *tls_server;
	struct session_table *translated; /* owned: translated sessions (session.c) */
	struct px_stats stats;
	struct otlp *otlp;            /* owned: this worker's exporter, or NULL (telemetry) */
};

/* Event priorities (event_base_priority_init): everything runs at the
 * default; the admin endpoint's connections run below it, so a flood of
 * admin requests waits for MCP traffic instead of slowing it. */
#define PX_PRIO_COUNT   3
#define PX_PRIO_DEFAULT 1
#define PX_PRIO_LOW     2

#define PX_STAT_ADD(ctx, field, n)                                                            \
	__atomic_store_n(&(ctx)->stats.field, (ctx)->stats.field + (n), __ATOMIC_RELAXED)
#define PX_STAT_INC(ctx, field) PX_STAT_ADD(ctx, field, 1)
static inline uint64_t px_stat_get(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

#endif

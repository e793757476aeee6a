/* ctx: struct px_ctx, the runtime root of one worker. main() builds one per
 * worker (one event loop, one thread each) and passes it down; nothing else
 * is global but the log level.
 *
 * A worker's own parts (its loop, listener socket, connections, upstream
 * pools, translated sessions, counters) are touched only by its thread.
 * The parts every worker shares (configuration modules, policy, contract
 * state, the admin endpoint, session and tool tables) are the same objects
 * in every worker's ctx; each guards itself with a mutex. Worker 0 runs on
 * the main thread, owns the shared parts and alone handles signals and
 * the admin endpoint. Worker to worker: proxy/net/inbox.h. */
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
struct sessid;
struct tools;
struct peers;
struct session_table;
struct inbox;
struct affinity;
struct sesslimit;

/* Counters of one worker, written by its thread only (PX_STAT_ADD) and read
 * by the admin endpoint's thread (px_stat_get): relaxed atomics, so a
 * reader sees whole values without making the writer pay for a lock. */
struct px_stats {
	uint64_t connections, requests, responses_by_class[6];
	uint64_t upstream_errors, timeouts, too_large, bad_requests, aborted;
	uint64_t handoffs;  /* requests passed to the worker holding their session */
	uint64_t yields;    /* times the loop gave its core away (proxy/net/loop.h) */
};

/* What the workers count together: atomics (px_shared_*). */
struct px_shared {
	unsigned long long next_conn_id;  /* ids unique across workers */
	size_t client_conns;              /* open client connections, all workers */
	size_t translated_sessions;       /* open translated sessions, all workers */
};

struct px_ctx {
	struct event_base *base;      /* owned */
	unsigned worker_id;           /* 0: the main thread's */
	struct inbox *inbox;          /* owned: work other threads hand this loop */
	/* Shared: every worker's ctx (index = worker_id), owned by worker 0. */
	struct px_ctx **workers;
	size_t nworkers;
	struct px_shared *shared;     /* shared, owned by worker 0 */
	struct affinity *affinity;    /* shared, owned by worker 0: translated
	                               * session id -> the worker holding it */
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
	/* Worker 0 only: the other workers whose loops still run. Its own
	 * loop, which alone reads the signals, ends after theirs. */
	size_t workers_running;
	struct ssl_ctx_st *tls_server;  /* owned: TLS on the client listener, or NULL */
	struct sessid *sessions;      /* owned: session ids seen issued / ended */
	struct tools *tools;          /* owned: tools as each upstream last listed them */
	struct peers *peers;          /* owned: open connections per client address */
	/* SIGHUP re-reads the configuration from the same command line. */
	int argc;
	char **argv;                  /* borrowed: main's */
	/* Configs replaced by a reload, kept until exit: exchanges that began
	 * under one still point into it. A reload is a deliberate act, so the
	 * list stays short. */
	struct px_config **retired;   /* owned */
	size_t nretired;
	struct session_table *translated; /* owned: translated sessions (session.c) */
	struct sesslimit *sesslimit;  /* owned: pass-through sessions' slots (sesslimit.c) */
	struct px_stats stats;
	/* Shared modules plugged into the hook; each NULL when not configured. */
	struct admin *admin;              /* owned: admin/admin.c */
	struct hook_policy *policy;       /* owned: proxy/hooks/hook_policy.c */
	struct hook_contract *contract;   /* owned: proxy/hooks/hook_contract.c */
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

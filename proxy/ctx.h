/* ctx: struct px_ctx, the only runtime root. main() builds it and passes it
 * down; nothing else is global but the log level. */
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
struct toolcache;
struct peers;
struct session_table;
struct sesslimit;

struct px_stats {
	uint64_t connections, requests, responses_by_class[6];
	uint64_t upstream_errors, timeouts, too_large, bad_requests, aborted;
};

struct px_ctx {
	struct event_base *base;      /* owned */
	const struct px_config *cfg;  /* owned (immutable while running) */
	struct upstream **ups;        /* owned: one per cfg->ups[i], same order */
	size_t nups;
	struct inspect *insp;         /* owned: the message hook chain */
	struct listener *lst;         /* owned; NULL once draining */
	struct conn *conns;           /* borrowed list head: every open client conn */
	size_t nconns;
	/* Of nconns, those of low-priority listeners (admin): each listener
	 * caps its own kind, so neither can fill the other's slots. */
	size_t nconns_low;
	unsigned long long next_conn_id;
	int draining;
	struct event *drain_timer;    /* owned */
	struct ssl_ctx_st *tls_server;  /* owned: TLS on the client listener, or NULL */
	struct sessid *sessions;      /* owned: session ids seen issued / ended */
	struct toolcache *toolcache;  /* owned: tools as each upstream last listed them */
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
	/* Modules plugged into the hook; each NULL when not configured. */
	struct admin *admin;              /* owned: admin/admin.c */
	struct hook_policy *policy;       /* owned: proxy/hook_policy.c */
	struct hook_contract *contract;   /* owned: proxy/hook_contract.c */
};

/* Event priorities (event_base_priority_init): everything runs at the
 * default; the admin endpoint's connections run below it, so a flood of
 * admin requests waits for MCP traffic instead of slowing it. */
#define PX_PRIO_COUNT   3
#define PX_PRIO_DEFAULT 1
#define PX_PRIO_LOW     2

/* Called by conn when a connection ends: lets listener resume accepting
 * and main finish a drain. */
void px_conn_closed(struct px_ctx *ctx);

#endif

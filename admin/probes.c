/* probes: /healthz (alive while the loop runs) and /readyz (every
 * upstream accepts a TCP connection), see admin.h.
 *
 * Readiness probes (issue 23): the probes run in the background, on worker
 * 0's loop at low priority, in rounds: a round connects to every upstream,
 * at most probe_parallel at a time (a burst of hundreds of SYNs at one
 * small listen backlog is dropped and retried by TCP a second later, which
 * is what made /readyz take a second with 200 upstreams), and the next
 * round starts probe_interval_ms after this one started (at once when it
 * ran longer). /readyz answers from the latest results at once, whatever
 * the number of upstreams. A result older than PROBE_STALE_ROUNDS
 * intervals plus the timeout counts as failing ("stale"): the schedule
 * fell that far behind, so nothing is known.
 *
 * The schedule starts with the first /readyz: a process nobody asks about
 * its readiness opens no probe connections (as before). That first request
 * (and any arriving meanwhile) waits for the first round, at most
 * ADMIN_READY_WAIT_MS: readiness is false until known, as Kubernetes
 * expects. A probe only connects: it never sends a byte, so it costs an
 * upstream nothing but an accept. */
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <event2/event.h>

#include "admin/admin_int.h"
#include "proxy/base/clock.h"
#include "proxy/base/log.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/hook_contract.h"

void probes_healthz(struct admin_x *ax)
{
	json_t *body = json_pack("{s:s}", "status", "ok");
	admin_reply_json(ax, 200, body, NULL);
}

/* Live baselines (issue 21), admin.ready_requires_contract: the upstream
 * is not ready while its latest complete listing fails its contract (a
 * problem or a breaking change, in any mode but off). No complete listing
 * yet is no verdict and does not hold readiness back: mcpwarden lists no
 * tools itself, and a pod kept unready gets no client to list them, so
 * waiting for one would never end. Adds "contract" (and "contract_error"
 * when failing) to o. Returns 0 when it holds readiness back. */
static int contract_gate(struct admin *adm, const char *name, json_t *o)
{
	struct hook_contract_published pub;
	hook_contract_published(adm->ctx->proc->contract, name, &pub);
	json_object_set_new(o, "contract", json_string(hook_contract_gate_name(pub.gate)));
	int failing = pub.gate == HOOK_CONTRACT_GATE_FAILING;
	if (failing) {
		char why[160];
		const json_t *r = pub.report;
		size_t nprob = json_array_size(json_object_get(r, "problems"));
		const json_t *tools = json_object_get(r, "tools");
		for (size_t i = 0; i < json_array_size(tools); i++)
			nprob += json_array_size(json_object_get(json_array_get(tools, i), "problems"));
		snprintf(why, sizeof(why), "contract failing: %zu problems, %lld breaking changes",
		         nprob, (long long)json_integer_value(json_object_get(r, "breaking")));
		json_object_set_new(o, "contract_error", json_string(why));
	}
	json_decref(pub.report);
	return !failing;
}

#define PROBE_STALE_ROUNDS 3u
#define PROBE_PACE_MIN_US  5000u

static uint64_t probe_stale_after_ms(const struct admin *adm, unsigned max_timeout_ms)
{
	return (uint64_t)PROBE_STALE_ROUNDS * adm->probe_conf.interval_ms + max_timeout_ms;
}

/* One upstream's entry in /readyz's "upstreams" (the keys /readyz always
 * had) and its result's age in ages. Returns whether it counts as up. */
static int probe_entry(const struct probe *p, uint64_t now, uint64_t stale_ms, json_t **o,
                       json_t *ages)
{
	uint64_t age_ms = p->result_us ? (now - p->result_us) / 1000 : 0;
	int stale = p->result_us && age_ms > stale_ms;
	int up = p->up == 1 && !stale;
	char why[96];

	*o = json_pack("{s:s,s:b}", "upstream", p->name, "reachable", up);
	json_object_set_new(ages, p->name, p->result_us ? json_integer((json_int_t)age_ms) : json_null());
	if (*o && !up) {
		if (stale)
			snprintf(why, sizeof(why), "probe result stale (%llu ms old)",
			         (unsigned long long)age_ms);
		else
			snprintf(why, sizeof(why), "%s", p->up == -1 ? "not probed" : p->why ? p->why : "down");
		json_object_set_new(*o, "error", json_string(why));
	}
	return up;
}

static void answer_ready(struct admin_x *ax)
{
	struct admin *adm = ax->adm;
	json_t *ups = json_array(), *ages = json_object();
	int ready = !adm->ctx->draining;
	uint64_t now = clock_mono_us();
	unsigned max_timeout = 0;

	for (size_t i = 0; i < adm->nprobes; i++)
		if (adm->probes[i].timeout_ms > max_timeout)
			max_timeout = adm->probes[i].timeout_ms;
	uint64_t stale_ms = probe_stale_after_ms(adm, max_timeout);
	for (size_t i = 0; i < adm->nprobes; i++) {
		const struct probe *p = &adm->probes[i];
		json_t *o = NULL;
		ready &= probe_entry(p, now, stale_ms, &o, ages);
		if (o && adm->ready_requires_contract)
			ready &= contract_gate(adm, p->name, o);
		json_array_append_new(ups, o);
	}
	json_t *probes = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}",
	                           "interval_ms", (json_int_t)adm->probe_conf.interval_ms,
	                           "timeout_ms", (json_int_t)max_timeout,
	                           "stale_after_ms", (json_int_t)stale_ms,
	                           "parallel", (json_int_t)adm->probe_conf.parallel,
	                           "running", (json_int_t)adm->probe_running,
	                           "peak_running", (json_int_t)adm->probe_peak,
	                           "rounds", (json_int_t)adm->probe_rounds, "age_ms", ages);
	json_t *body = json_pack("{s:b,s:b,s:o,s:o?}", "ready", ready, "draining",
	                         adm->ctx->draining != 0, "upstreams", ups, "probes", probes);
	admin_reply_json(ax, ready ? 200 : 503, body, NULL);
}

/* The first round ended (or the first request waited long enough): from
 * now on /readyz answers at once; answer whoever waits. */
static void probes_known(struct admin *adm)
{
	adm->probe_known = 1;
	if (adm->probe_wait)
		event_del(adm->probe_wait);
	while (adm->ready_waiters) {
		struct admin_x *ax = adm->ready_waiters;
		admin_list_remove(&adm->ready_waiters, ax);
		ax->kind = AX_DONE;
		answer_ready(ax);
	}
}

static void probe_wait_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	probes_known(arg);
}

static void probe_pump(struct admin *adm);

/* Arms the schedule's one timer wait_us from now. */
static void probe_arm(struct admin *adm, uint64_t wait_us)
{
	struct timeval tv = {(time_t)(wait_us / 1000000), (suseconds_t)(wait_us % 1000000)};
	if (event_add(adm->probe_tick, &tv) < 0)
		log_msg(LOG_ERROR, "admin: cannot schedule the readiness probes");
}

/* Every probe of the round has its result: the next round starts one
 * interval after this one started, at once if this one took longer. */
static void round_done(struct admin *adm)
{
	uint64_t now = clock_mono_us();
	uint64_t next = adm->round_start_us + (uint64_t)adm->probe_conf.interval_ms * 1000;

	adm->round_start_us = 0;
	adm->probe_rounds++;
	if (!adm->probe_known)
		probes_known(adm);
	probe_arm(adm, next > now ? next - now : 0);
}

static void probe_done(struct probe *p, int up, const char *why)
{
	struct admin *adm = p->adm;
	if (p->ev) {
		event_free(p->ev);
		p->ev = NULL;
	}
	if (p->fd >= 0) {
		evutil_closesocket(p->fd);
		p->fd = -1;
	}
	p->state = PROBE_IDLE;
	p->up = up;
	p->why = why;
	p->result_us = clock_mono_us();
	assert(adm->probe_running > 0);
	adm->probe_running--;
	probe_pump(adm);
}

static void probe_cb(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;
	int err = 0;
	socklen_t len = sizeof(err);

	if (what & EV_TIMEOUT) {
		probe_done(p, 0, "connect timed out");
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	probe_done(p, err == 0, err == 0 ? NULL : "connection refused or unreachable");
}

/* A plain non-blocking connect: the probe only asks whether the upstream
 * accepts TCP, it never sends a byte. May finish (probe_done) at once. */
static void probe_one(struct admin *adm, struct probe *p)
{
	p->state = PROBE_CONNECTING;
	if (++adm->probe_running > adm->probe_peak)
		adm->probe_peak = adm->probe_running;
	if (p->sslen == 0) {
		probe_done(p, 0, "the host does not resolve");
		return;
	}
	p->fd = socket(p->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0) {
		probe_done(p, 0, "cannot create a socket");
		return;
	}
	if (connect(p->fd, (struct sockaddr *)&p->ss, p->sslen) == 0) {
		probe_done(p, 1, NULL);
		return;
	}
	if (errno != EINPROGRESS) {
		probe_done(p, 0, "connection refused or unreachable");
		return;
	}
	struct timeval tv = {p->timeout_ms / 1000, (p->timeout_ms % 1000) * 1000};
	p->ev = event_new(adm->ctx->base, p->fd, EV_WRITE, probe_cb, p);
	if (!p->ev || event_priority_set(p->ev, PX_PRIO_LOW) < 0 || event_add(p->ev, &tv) < 0)
		probe_done(p, 0, "out of memory");
}

/* When the round's probe i may start. The first round goes as fast as
 * the parallel bound lets it (readiness waits for it); later ones are
 * spread over the interval: the kernel completes a handshake without the
 * server's process, so a burst of probes fills a small listen backlog
 * (Python's http.server: 5) faster than a busy server accepts, and the
 * SYNs dropped then wait a second for TCP's retransmission. */
static uint64_t probe_slot_us(const struct admin *adm, size_t i)
{
	if (adm->probe_rounds == 0 || adm->nprobes == 0)
		return adm->round_start_us;
	uint64_t interval_us = (uint64_t)adm->probe_conf.interval_ms * 1000;
	return adm->round_start_us + interval_us * i / adm->nprobes;
}

/* Starts the round's probes that are due, up to the parallel bound. A
 * probe that finishes at once calls back in here: the flag keeps that a
 * loop, not a recursion as deep as the fleet. */
static void probe_pump(struct admin *adm)
{
	if (adm->probe_pumping || !adm->round_start_us)
		return;
	adm->probe_pumping = 1;
	uint64_t now = clock_mono_us();
	while (adm->probe_running < adm->probe_conf.parallel && adm->probe_next < adm->nprobes &&
	       probe_slot_us(adm, adm->probe_next) <= now)
		probe_one(adm, &adm->probes[adm->probe_next++]);
	adm->probe_pumping = 0;
	if (adm->probe_next == adm->nprobes) {
		if (adm->probe_running == 0)
			round_done(adm);
	} else if (adm->probe_running < adm->probe_conf.parallel) {
		/* Waiting for the next slot, not for a probe to finish; waking
		 * at most every PROBE_PACE_MIN_US starts the slots due in batches. */
		uint64_t due = probe_slot_us(adm, adm->probe_next);
		uint64_t wait = due > now ? due - now : 0;
		probe_arm(adm, wait > PROBE_PACE_MIN_US ? wait : PROBE_PACE_MIN_US);
	}
}

/* The schedule's timer: the next slot of the round under way, or the next
 * round. */
static void probe_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct admin *adm = arg;
	(void)fd;
	(void)what;
	if (!adm->round_start_us) {
		adm->round_start_us = clock_mono_us();
		adm->probe_next = 0;
	}
	probe_pump(adm);
}

/* The first /readyz: start the rounds, and wait for the first. */
static void probes_start(struct admin *adm)
{
	static const struct timeval now = {0, 0};
	struct timeval wait = {ADMIN_READY_WAIT_MS / 1000, (ADMIN_READY_WAIT_MS % 1000) * 1000};

	adm->probe_started = 1;
	if (event_add(adm->probe_wait, &wait) < 0 || event_add(adm->probe_tick, &now) < 0) {
		log_msg(LOG_ERROR, "admin: cannot start the readiness probes");
		probes_known(adm);
	}
}

void probes_readyz(struct admin_x *ax)
{
	struct admin *adm = ax->adm;

	if (adm->probe_known) {
		answer_ready(ax);
		return;
	}
	ax->kind = AX_READY;
	admin_list_push(&adm->ready_waiters, ax);
	if (!adm->probe_started)
		probes_start(adm);
}

void probes_setup(struct admin *adm)
{
	const struct px_config *cfg = adm->ctx->cfg;
	adm->probes = calloc(cfg->nups ? cfg->nups : 1, sizeof(*adm->probes));
	if (!adm->probes)
		return;
	adm->nprobes = cfg->nups;
	for (size_t i = 0; i < cfg->nups; i++) {
		struct probe *p = &adm->probes[i];
		const struct px_upstream_conf *u = &cfg->ups[i];
		struct addrinfo hints = {0}, *res = NULL;
		p->adm = adm;
		p->fd = -1;
		p->name = u->name;
		p->up = -1;
		unsigned ms = u->connect_timeout_ms ? u->connect_timeout_ms : ADMIN_PROBE_MAX_MS;
		p->timeout_ms = ms < ADMIN_PROBE_MAX_MS ? ms : ADMIN_PROBE_MAX_MS;
		if (adm->probe_conf.timeout_ms) /* admin.probe_timeout_ms (issue 23) */
			p->timeout_ms = (unsigned)adm->probe_conf.timeout_ms;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICSERV;
		/* Start-up only, like upstream_new: never on the data path. */
		if (getaddrinfo(u->host, u->port, &hints, &res) == 0 && res &&
		    res->ai_addrlen <= sizeof(p->ss)) {
			memcpy(&p->ss, res->ai_addr, res->ai_addrlen);
			p->sslen = (socklen_t)res->ai_addrlen;
		}
		if (res)
			freeaddrinfo(res);
	}
	/* The schedule's timers (issue 23); none: as out of memory. */
	adm->probe_tick = event_new(adm->ctx->base, -1, 0, probe_tick_cb, adm);
	adm->probe_wait = event_new(adm->ctx->base, -1, 0, probe_wait_cb, adm);
	if (!adm->probe_tick || !adm->probe_wait || event_priority_set(adm->probe_tick, PX_PRIO_LOW) < 0)
		probes_free(adm);
}

void probes_free(struct admin *adm)
{
	for (size_t i = 0; i < adm->nprobes; i++) {
		if (adm->probes[i].ev)
			event_free(adm->probes[i].ev);
		if (adm->probes[i].fd >= 0)
			evutil_closesocket(adm->probes[i].fd);
	}
	if (adm->probe_tick)
		event_free(adm->probe_tick);
	if (adm->probe_wait)
		event_free(adm->probe_wait);
	adm->probe_tick = adm->probe_wait = NULL;
	free(adm->probes);
	adm->probes = NULL;
	adm->nprobes = 0;
}

/* probes: /healthz (alive while the loop runs) and /readyz (every
 * upstream accepts a TCP connection; probed asynchronously, at most once
 * every ADMIN_PROBE_EVERY_US, requests arriving meanwhile wait for the
 * round under way), see admin.h. A probe only connects: it never sends a
 * byte, so it costs an upstream nothing but an accept. */
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <event2/event.h>

#include "admin/admin_int.h"
#include "proxy/base/clock.h"
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

static void answer_ready(struct admin_x *ax)
{
	struct admin *adm = ax->adm;
	json_t *ups = json_array();
	int ready = !adm->ctx->draining;

	for (size_t i = 0; i < adm->nprobes; i++) {
		const struct probe *p = &adm->probes[i];
		json_t *o = json_pack("{s:s,s:b}", "upstream", p->name, "reachable", p->up == 1);
		if (o && p->up != 1)
			json_object_set_new(o, "error", json_string(p->why ? p->why : "not probed"));
		if (adm->ready_requires_contract)
			ready &= contract_gate(adm, p->name, o);
		json_array_append_new(ups, o);
		ready &= p->up == 1;
	}
	json_t *body = json_pack("{s:b,s:b,s:o}", "ready", ready, "draining",
	                         adm->ctx->draining != 0, "upstreams", ups);
	admin_reply_json(ax, ready ? 200 : 503, body, NULL);
}

/* Every probe has finished: answer whoever waits. */
static void probes_finished(struct admin *adm)
{
	adm->probed_at = clock_mono_us();
	while (adm->ready_waiters) {
		struct admin_x *ax = adm->ready_waiters;
		admin_list_remove(&adm->ready_waiters, ax);
		ax->kind = AX_DONE;
		answer_ready(ax);
	}
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
	p->up = up;
	p->why = why;
	assert(adm->probing > 0);
	if (--adm->probing == 0)
		probes_finished(adm);
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
 * accepts TCP, it never sends a byte. */
static void probe_one(struct admin *adm, struct probe *p)
{
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
	if (!p->ev || event_add(p->ev, &tv) < 0)
		probe_done(p, 0, "out of memory");
}

static void probe_start(struct admin *adm)
{
	/* One extra count so that probes finishing inside the loop cannot
	 * answer the waiters before every probe started. */
	adm->probing = adm->nprobes + 1;
	for (size_t i = 0; i < adm->nprobes; i++)
		probe_one(adm, &adm->probes[i]);
	if (--adm->probing == 0)
		probes_finished(adm);
}

void probes_readyz(struct admin_x *ax)
{
	struct admin *adm = ax->adm;
	uint64_t now = clock_mono_us();

	if (!adm->probing && adm->probed_at && now - adm->probed_at < ADMIN_PROBE_EVERY_US) {
		answer_ready(ax);
		return;
	}
	ax->kind = AX_READY;
	admin_list_push(&adm->ready_waiters, ax);
	if (!adm->probing)
		probe_start(adm);
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
}

void probes_free(struct admin *adm)
{
	for (size_t i = 0; i < adm->nprobes; i++) {
		if (adm->probes[i].ev)
			event_free(adm->probes[i].ev);
		if (adm->probes[i].fd >= 0)
			evutil_closesocket(adm->probes[i].fd);
	}
	free(adm->probes);
	adm->probes = NULL;
	adm->nprobes = 0;
}

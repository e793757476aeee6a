/* hook_contract: see hook_contract.h.
 *
 * Why this file is long (about 800 lines): one page's path (find its
 * listing, check it, decide the reply, publish the report, keep or replay
 * the verdict) reads and writes the per-upstream struct up_state under
 * hc->lock; what has no such state is elsewhere: the section's parsing
 * (contract_conf.c), how a verdict reads (contract_answer.c), the caches
 * (verdict_cache.c), the listings in progress (tools.c, tools_raw).
 *
 *   hook_contract
 *     ├─ ups[i]        one per configured upstream: mode, baseline, latest
 *     │                report (owned JSON), verdict_cache
 *     └─ raw           listings in progress as the upstream sent them,
 *                      per (upstream, session), least recently used
 *                      evicted first: the tools tracker's module keeps the
 *                      paging (tools.h, tools_raw); each carries the
 *                      hook's struct listing (withheld names, cut)
 *
 * A page that more pages follow is kept as a deep copy: later hooks may
 * rewrite the message in place, and the checker re-reads every page of
 * the listing each time a page is added (20 pages at most). The last page
 * (most listings have one) is checked and the listing dropped within the
 * call, so it is only referenced.
 *
 * What checking the last one-page listing did (struct kept_verdict:
 * counters, log line, report, the reply's change) is kept in the
 * upstream's verdict_cache (hook_contract.h, "Unchanged lists"), which
 * also holds the per-tool memo and the listing's text ("Changed lists");
 * that module's head gives what each layer saves.
 */
#include "proxy/hooks/hook_contract.h"

#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checks/contract.h"
#include "checks/drift.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/contract_answer.h"
#include "proxy/hooks/contract_conf.h"
#include "proxy/hooks/inspect.h"
#include "proxy/hooks/tools.h"
#include "proxy/hooks/verdict_cache.h"
#include "proxy/base/clock.h"
#include "proxy/base/jparse.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"

#define META_VERSION_KEY "io.modelcontextprotocol/protocolVersion"

/* The reason a refusal gives (m->reason): the record's rule, a
 * mcpwarden_policy_decisions_total label (docs/contract.md). */
static const char *const mode_reasons[] = {"contract:report", "contract:filter", "contract:fail",
                                           "contract:off"};

/* Why a listing stopped taking pages. */
enum cut_reason {
	CUT_NONE = 0,
	CUT_LOOP,   /* a nextCursor repeated: the server pages in a circle */
	CUT_PAGES,  /* more than CONTRACT_MAX_PAGES pages */
	CUT_BYTES,  /* its pages alone are over HOOK_CONTRACT_MAX_BYTES */
};

struct up_state {
	const struct px_upstream_conf *conf;  /* borrowed: ctx->cfg lifetime */
	struct contract_conf cf;     /* its "contract" section (contract_conf.h) */
	json_t *latest;              /* owned: latest report, or NULL; never
	                                changed once published (readers of
	                                hook_contract_published keep a
	                                reference) */
	uint64_t published_us;       /* Unix time latest was published */
	uint64_t published;          /* reports published so far */
	struct verdict_cache *vc;    /* owned: the last one-page listing's
	                                verdict, memo and text (verdict_cache.h) */
};

/* What checking a one-page listing did, to do again for the same bytes
 * (kept in the upstream's verdict_cache). */
struct kept_verdict {
	enum log_level level;
	char line[1024];             /* the log line after "#<conn> " */
	json_t *report;              /* owned: as published ("time" is renewed) */
	json_t *error;               /* owned: fail: what replaced the result, or NULL */
	size_t *withheld;            /* owned: filter: tool indices, ascending */
	size_t nwithheld;
	struct hook_contract_stats delta;  /* what the check added to the counters */
};

/* What the hook adds to a listing in progress (its user data in
 * hc->raw, freed with it: listing_free). */
struct listing {
	struct tools_raw_listing *raw; /* the listing this belongs to */
	const json_t *pages; /* borrowed from raw: its page results */
	const char *era;     /* borrowed from raw, or NULL: era of the first page */
	int orphan;          /* began with a cursor no listing knew */
	json_t *filtered;    /* owned: names withheld so far (filter mode) */
	int logged;          /* the cut was logged */
	enum cut_reason cut;
};

struct hook_contract {
	/* Shared by every worker: contract_on_message holds it while it
	 * handles a tool listing (the only messages that touch this state). */
	pthread_mutex_t lock;
	int locked;                  /* lock initialised */
	struct px_ctx *ctx;          /* borrowed */
	struct up_state *ups;        /* owned array, ctx->cfg->nups entries */
	size_t nups;
	struct tools_raw *raw;       /* owned: listings in progress (tools.h) */
	struct hook_contract_stats stats;
};

/* ---- small helpers -------------------------------------------------------- */

static const char *request_cursor(const json_t *req)
{
	return json_string_value(json_object_get(json_object_get(req, "params"), "cursor"));
}

static const char *page_next_cursor(const json_t *page)
{
	return json_is_object(page) ? json_string_value(json_object_get(page, "nextCursor")) : NULL;
}

/* The era the listing came in: the MCP-Protocol-Version header, else the
 * 2026-07-28 request envelope's version. */
static const char *era_of(const struct inspect_where *w, const json_t *request)
{
	if (w->protocol && *w->protocol)
		return w->protocol;
	const json_t *meta = json_object_get(json_object_get(request, "params"), "_meta");
	return json_string_value(json_object_get(meta, META_VERSION_KEY));
}

static const char *message_era(const struct inspect_msg *m)
{
	return era_of(m->where, m->request);
}

static const char *session_key(const struct inspect_where *w)
{
	if (w->session_id)
		return w->session_id;
	return w->reply_session_id ? w->reply_session_id : "";
}

static const json_t *page_tools(const json_t *page)
{
	return json_is_array(page) ? page : json_object_get(page, "tools");
}

static void utc_now(char *buf, size_t cap)
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void kept_free(void *arg)
{
	struct kept_verdict *c = arg;
	if (!c)
		return;
	json_decref(c->report);
	json_decref(c->error);
	free(c->withheld);
	free(c);
}

/* ---- listings ------------------------------------------------------------- */

static void listing_free(void *arg)
{
	struct listing *l = arg;
	json_decref(l->filtered);
	free(l);
}

/* A new listing of (up, session) in hc->raw, with the hook's part. */
static struct listing *listing_new(struct hook_contract *hc, size_t up, const char *session,
                                   const char *era, int orphan)
{
	struct listing *l = calloc(1, sizeof(*l));
	if (!l || !(l->filtered = json_array())) {
		free(l);
		return NULL;
	}
	l->raw = tools_raw_begin(hc->raw, up, hc->ups[up].conf->name, session, era, orphan, l);
	if (!l->raw)
		return NULL; /* l freed with it */
	l->pages = tools_raw_pages(l->raw);
	l->era = tools_raw_era(l->raw);
	l->orphan = orphan;
	return l;
}

static struct listing *listing_find(struct hook_contract *hc, size_t up, const char *session,
                                    const char *cursor)
{
	struct tools_raw_listing *raw = tools_raw_find(hc->raw, up, session, cursor);
	return raw ? tools_raw_user(raw) : NULL;
}

/* ---- reports -------------------------------------------------------------- */

/* Publishes the upstream's latest report: kept, for readers to pull
 * (hook_contract_published). Under hc->lock. */
static void publish(struct hook_contract *hc, struct up_state *us, json_t *report)
{
	(void)hc;
	json_decref(us->latest);
	us->latest = report;
	if (report) {
		us->published_us = clock_real_us();
		us->published++;
	}
}

static json_t *build_report(struct up_state *us, const struct listing *l,
                            const struct contract_report *r, json_t *changes,
                            const struct contract_verdict *v)
{
	char now[32];
	json_t *o = verdict_cache_report_json(us->vc, r);
	if (!o) {
		json_decref(changes);
		return NULL;
	}
	utc_now(now, sizeof(now));
	json_object_set_new(o, "changes", changes ? changes : json_array());
	json_object_set_new(o, "breaking", json_integer((json_int_t)v->nbreaking));
	json_object_set_new(o, "passed", json_boolean(v->passed));
	json_object_set_new(o, "upstream", json_string(us->conf->name));
	json_object_set_new(o, "mode", json_string(contract_mode_name(us->cf.mode)));
	json_object_set_new(o, "spec_only", json_boolean(us->cf.spec_only));
	json_object_set_new(o, "era", l->era ? json_string(l->era) : json_null());
	json_object_set_new(o, "baseline",
	                    us->cf.baseline_file ? json_string(us->cf.baseline_file) : json_null());
	json_object_set_new(o, "pages", json_integer((json_int_t)json_array_size(l->pages)));
	json_object_set_new(o, "complete", json_boolean(v->complete));
	json_object_set_new(o, "action", json_string(v->action));
	json_object_set_new(o, "filtered", json_deep_copy(l->filtered));
	json_object_set_new(o, "time", json_string(now));
	return o;
}

/* ---- a page --------------------------------------------------------------- */

/* Replaces m's page by the error of a refusal (contract_answer.h). */
static void refuse(const struct up_state *us, struct inspect_msg *m,
                   const struct contract_report *r, const struct drift_report *d, int complete,
                   const char *extra)
{
	contract_answer_failed(m, HOOK_CONTRACT_ERROR, us->conf->name, mode_reasons[us->cf.mode], r, d,
	                       complete, extra);
}

static const char *cut_text(enum cut_reason c)
{
	switch (c) {
	case CUT_LOOP:
		return "cursor-loop";
	case CUT_PAGES:
		return "listing-too-long: more than 20 pages";
	case CUT_BYTES:
		return "listing-too-large: its pages exceed the bytes mcpwarden keeps to check it";
	default:
		return "";
	}
}

/* A page of a listing that was cut earlier (or is cut now): not checked.
 * report forwards it; filter and fail cannot vouch for it. */
static void page_of_cut_listing(struct hook_contract *hc, struct up_state *us, struct listing *l,
                                struct inspect_msg *m)
{
	if (!l->logged) {
		log_msg(LOG_WARN, "#%llu contract: upstream %s: tools/list cut (%s): pages from here on "
		                  "are not checked%s",
		        m->where->conn_id, us->conf->name, cut_text(l->cut),
		        us->cf.mode == CONTRACT_MODE_REPORT ? "" : ", the client gets an error");
		l->logged = 1;
	}
	if (us->cf.mode == CONTRACT_MODE_REPORT)
		return;
	hc->stats.replies_failed++;
	refuse(us, m, NULL, NULL, 0, cut_text(l->cut));
}

/* What one check did to the message, for the verdict cache. */
struct effect {
	int cacheable;        /* the check ran to its end, nothing out of memory */
	size_t *withheld;     /* owned: filter: indices withheld from the page */
	size_t nwithheld;
};

/* Withholds this page's failed tools. Returns how many were withheld;
 * their indices go to e. */
static size_t filter_page(struct listing *l, size_t idx, const struct contract_report *r,
                          const struct drift_report *d, struct inspect_msg *m, struct effect *e)
{
	json_t *page = json_array_get(l->pages, idx);
	const json_t *tools = page_tools(page);
	size_t withheld = 0;

	if (!json_is_array(tools))
		return 0;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		const char *name = json_string_value(json_object_get(t, "name"));
		if (contract_report_tool_failed(r, idx, i) || (d && name && drift_tool_broke(d, name))) {
			withheld++;
			json_array_append_new(l->filtered, name ? json_string(name) : json_null());
			size_t *w = realloc(e->withheld, (e->nwithheld + 1) * sizeof(*w));
			if (w) {
				w[e->nwithheld++] = i;
				e->withheld = w;
			} else {
				e->cacheable = 0;
			}
		}
	}
	if (!withheld)
		return 0;
	json_t *out = contract_filter(page, idx, r);
	if (out && d) {
		json_t *o2 = drift_filter(out, d);
		json_decref(out);
		out = o2;
	}
	if (!out) {
		log_msg(LOG_ERROR, "contract: out of memory filtering a tool list: forwarded unfiltered");
		e->cacheable = 0;
		return 0;
	}
	if (json_is_array(page) || !json_is_object(m->msg)) {
		json_decref(out);
		e->nwithheld = 0; /* nothing changed on the wire */
		return 0; /* a bare array is never a result the client accepts */
	}
	json_object_set_new(m->msg, "result", out);
	m->modified = 1;
	return withheld;
}

static size_t total_tools(const json_t *pages)
{
	size_t n = 0;
	for (size_t i = 0; i < json_array_size(pages); i++) {
		const json_t *t = page_tools(json_array_get(pages, i));
		n += json_is_array(t) ? json_array_size(t) : 0;
	}
	return n;
}

/* The listing's tools joined into one array (references), for the diff. */
static json_t *joined_tools(const json_t *pages)
{
	json_t *all = json_array();
	for (size_t i = 0; all && i < json_array_size(pages); i++) {
		json_t *t = (json_t *)(uintptr_t)page_tools(json_array_get(pages, i));
		if (json_is_array(t))
			json_array_extend(all, t);
	}
	return all;
}

/* contract_check() of the listing's pages. A listing of one page whose
 * text the transport kept (the common case: a client listing tools
 * again) goes through the upstream's memo: only tools whose text is new
 * since its last such listing are checked, the others' findings are
 * replayed (checks/contract.h, "Incremental checking"). */
static struct contract_report *check_pages(struct up_state *us, const json_t *const *pages,
                                           size_t n, int orphan, const struct contract_opts *opts,
                                           const struct inspect_msg *m, uint64_t *checked)
{
	*checked = UINT64_MAX; /* a plain check: every tool examined */
	/* Only a whole listing in one page, the kind the verdict is kept for. */
	if (n != 1 || orphan || page_next_cursor(pages[0]) || !json_is_object(pages[0]))
		return contract_check(pages, n, opts);
	return verdict_cache_check(us->vc, pages[0], m->result_raw, m->result_raw_len, opts,
	                           checked);
}

/* Checks the listing with its newest page and decides what the client
 * gets. Returns 1 when the listing is over (complete, or failed in fail
 * mode) and can be dropped. */
static int check_listing(struct hook_contract *hc, struct up_state *us, struct listing *l,
                         struct inspect_msg *m, struct effect *e, char *line, size_t cap,
                         enum log_level *level)
{
	size_t n = json_array_size(l->pages), idx = n - 1;
	const json_t *pages[CONTRACT_MAX_PAGES];
	struct contract_opts opts = {.era = l->era, .spec_only = us->cf.spec_only,
	                             .profiles = us->cf.profiles /* client profiles */};
	struct contract_verdict v = {.action = "forwarded"};

	for (size_t i = 0; i < n && i < CONTRACT_MAX_PAGES; i++)
		pages[i] = json_array_get(l->pages, i);
	uint64_t checked;
	struct contract_report *r = check_pages(us, pages, n, l->orphan, &opts, m, &checked);
	if (!r) {
		log_msg(LOG_ERROR, "contract: out of memory checking a tool list: forwarded unchecked");
		e->cacheable = 0;
		return 0;
	}
	hc->stats.tools_checked += checked == UINT64_MAX ? contract_report_ntools(r) : checked;
	struct drift_report *d = NULL;
	if (us->cf.baseline_tools) {
		json_t *all = joined_tools(l->pages);
		d = all ? drift_diff(us->cf.baseline_tools, all) : NULL;
		json_decref(all);
	}
	const char *next = page_next_cursor(json_array_get(l->pages, idx));
	int loop = 0;
	for (size_t i = 0; i < contract_report_nfindings(r); i++)
		if (strcmp(contract_report_finding(r, i)->code, "cursor-loop") == 0)
			loop = 1;
	v.complete = !next && !l->orphan;
	v.unexamined = total_tools(l->pages) > CONTRACT_MAX_TOOLS ||
	               (d && drift_report_truncated(d));
	json_t *changes = contract_answer_changes(d, v.complete, &v.nbreaking);
	v.passed = contract_report_passed(r) && v.nbreaking == 0 && !v.unexamined;
	hc->stats.pages++;

	int over = 0;
	if (us->cf.mode == CONTRACT_MODE_FAIL && !v.passed) {
		v.action = "failed";
		refuse(us, m, r, d, v.complete,
		       v.unexamined ? "listing-too-long: more tools than mcpwarden checks" : NULL);
		hc->stats.replies_failed++;
		over = !loop;
		if (!json_object_get(m->msg, "error"))
			e->cacheable = 0; /* out of memory: the reply went out unchanged */
	} else if (us->cf.mode == CONTRACT_MODE_FILTER && (loop || v.unexamined)) {
		/* Filtering cannot make a circular or unchecked listing whole. */
		v.action = "failed";
		refuse(us, m, r, NULL, v.complete,
		       loop ? NULL : "listing-too-long: more tools than mcpwarden checks");
		hc->stats.replies_failed++;
		if (!json_object_get(m->msg, "error"))
			e->cacheable = 0;
	} else if (us->cf.mode == CONTRACT_MODE_FILTER) {
		size_t w = filter_page(l, idx, r, d, m, e);
		if (w) {
			v.action = "filtered";
			hc->stats.tools_filtered += w;
		} else if (json_array_size(l->filtered)) {
			v.action = "filtered";
		}
	}
	if (loop) {
		l->cut = CUT_LOOP;
		l->logged = 1; /* the line below says it */
	}
	if (v.complete) {
		hc->stats.listings++;
		if (!v.passed)
			hc->stats.listings_failed++;
	}
	/* One line per listing: at its end, or when it ends early for the
	 * client (refused) or for the checker (loop, orphan page). */
	line[0] = '\0';
	if (v.complete || loop || l->orphan || strcmp(v.action, "failed") == 0) {
		contract_answer_line(us->conf->name, contract_mode_name(us->cf.mode),
		                     json_array_size(l->pages), r, &v, line, cap);
		*level = v.passed ? LOG_INFO : LOG_WARN;
		log_msg(*level, "#%llu %s", m->where->conn_id, line);
	}
	json_t *report = build_report(us, l, r, changes, &v);
	if (!report || !v.complete || loop)
		e->cacheable = 0;
	publish(hc, us, report);
	tools_raw_set_next(l->raw, next);
	contract_report_free(r);
	drift_report_free(d);
	/* Over: the last page, or a failure the client cannot page past. A cut
	 * listing stays, so a client paging in the loop keeps the verdict. */
	return !next || over;
}

/* ---- the verdict cache ---------------------------------------------------- */

static void stats_add(struct hook_contract_stats *to, const struct hook_contract_stats *d)
{
	to->pages += d->pages;
	to->listings += d->listings;
	to->listings_failed += d->listings_failed;
	to->tools_filtered += d->tools_filtered;
	to->replies_failed += d->replies_failed;
}

static struct hook_contract_stats stats_sub(const struct hook_contract_stats *a,
                                            const struct hook_contract_stats *b)
{
	return (struct hook_contract_stats){
		.pages = a->pages - b->pages,
		.listings = a->listings - b->listings,
		.listings_failed = a->listings_failed - b->listings_failed,
		.tools_filtered = a->tools_filtered - b->tools_filtered,
		.replies_failed = a->replies_failed - b->replies_failed,
	};
}

/* What checking these bytes (len of them, on connection conn_id) did
 * last time besides changing the reply: counters, log line, report. */
static void replay_effects(struct hook_contract *hc, struct up_state *us,
                           const struct kept_verdict *c, unsigned long long conn_id, size_t len)
{
	char now[32];

	/* A listing would have been added and dropped: the same evictions. */
	tools_raw_make_room(hc->raw, 1, len);
	stats_add(&hc->stats, &c->delta);
	hc->stats.replayed++;
	if (c->line[0])
		log_msg(c->level, "#%llu %s", conn_id, c->line);
	utc_now(now, sizeof(now));
	/* A new root sharing every member: the kept report was published and
	 * is never changed (admin may be reading it). */
	json_t *report = json_object();
	if (report && (json_object_update(report, c->report) < 0 ||
	               json_object_set_new(report, "time", json_string(now)) < 0)) {
		json_decref(report);
		report = NULL;
	}
	publish(hc, us, report ? report : json_incref(c->report));
}

/* Does again what checking these bytes did last time. */
static void replay(struct hook_contract *hc, struct up_state *us, const struct kept_verdict *c,
                   struct inspect_msg *m)
{
	replay_effects(hc, us, c, m->where->conn_id, m->result_raw_len);
	if (c->error) {
		json_t *err = jparse_copy(c->error);
		if (err) {
			json_object_del(m->msg, "result");
			json_object_set_new(m->msg, "error", err);
			m->modified = 1;
			m->reason = mode_reasons[us->cf.mode];
		}
	} else if (c->nwithheld) {
		json_t *tools = json_object_get(json_object_get(m->msg, "result"), "tools");
		for (size_t i = c->nwithheld; i-- > 0;)
			json_array_remove(tools, c->withheld[i]);
		m->modified = 1;
	}
}

/* Keeps what checking m's page did (e, the counters since `before`, the
 * line logged) for the next listing with the same bytes. */
static void remember(struct up_state *us, const struct inspect_msg *m, const char *era,
                     struct effect *e, const struct hook_contract_stats *delta,
                     const char *line, enum log_level level)
{
	struct kept_verdict *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->level = level;
	snprintf(c->line, sizeof(c->line), "%s", line);
	c->report = json_incref(us->latest);
	c->delta = *delta;
	c->withheld = e->withheld;
	c->nwithheld = e->nwithheld;
	e->withheld = NULL;
	if (m->modified && !json_object_get(m->msg, "result")) {
		/* Replaced by an error (fail mode, or a refusal in filter mode). */
		if (!(c->error = jparse_copy(json_object_get(m->msg, "error")))) {
			kept_free(c);
			return;
		}
	}
	verdict_cache_keep(us->vc, m->result_raw, m->result_raw_len, era, c, kept_free);
}

/* ---- a listing's page --------------------------------------------------------- */

static void on_page(struct hook_contract *hc, size_t up, struct inspect_msg *m)
{
	struct up_state *us = &hc->ups[up];
	const char *cursor = request_cursor(m->request);
	const char *session = session_key(m->where);
	json_t *result = json_object_get(m->msg, "result");
	struct listing *l = cursor ? listing_find(hc, up, session, cursor) : NULL;
	const char *era = cursor ? NULL : message_era(m);

	const struct kept_verdict *kept =
		cursor ? NULL : verdict_cache_lookup(us->vc, m->result_raw, m->result_raw_len, era);
	if (kept) {
		replay(hc, us, kept, m);
		return;
	}
	if (l) {
		if (!l->cut && json_array_size(l->pages) >= CONTRACT_MAX_PAGES)
			l->cut = CUT_PAGES;
		if (l->cut) {
			page_of_cut_listing(hc, us, l, m);
			return;
		}
	} else {
		l = listing_new(hc, up, session, message_era(m), cursor != NULL);
		if (!l) {
			log_msg(LOG_ERROR, "contract: out of memory: tools/list forwarded unchecked");
			return;
		}
		if (cursor)
			log_msg(LOG_DEBUG, "#%llu contract: upstream %s: a tools/list page for a cursor no "
			                   "listing knows: checked on its own",
			        m->where->conn_id, us->conf->name);
	}
	/* The size as it arrived when the transport knows it: serialising a
	 * large list only to measure it cost more than checking it. */
	size_t bytes = m->result_raw ? m->result_raw_len : json_dumpb(result, NULL, 0, JSON_COMPACT);
	if (tools_raw_bytes(l->raw) + bytes > HOOK_CONTRACT_MAX_BYTES) {
		l->cut = CUT_BYTES;
		page_of_cut_listing(hc, us, l, m);
		return;
	}
	/* A last page is checked and dropped before this call returns: a
	 * reference is enough. One more pages follow is kept past it. */
	int last = !page_next_cursor(result);
	if (tools_raw_add(hc->raw, l->raw, result, bytes, last) < 0) {
		log_msg(LOG_ERROR, "contract: out of memory: tools/list forwarded unchecked");
		return;
	}

	struct effect e = {.cacheable = !cursor && last && m->result_raw &&
	                                m->result_raw_len <= VERDICT_CACHE_BYTES};
	struct hook_contract_stats before = hc->stats;
	char line[1024];
	enum log_level level = LOG_INFO;
	int over = check_listing(hc, us, l, m, &e, line, sizeof(line), &level);
	if (e.cacheable && !l->orphan) {
		struct hook_contract_stats delta = stats_sub(&hc->stats, &before);
		remember(us, m, era, &e, &delta, line, level);
	}
	free(e.withheld);
	if (over)
		tools_raw_remove(hc->raw, l->raw);
}

static enum inspect_verdict contract_on_message(void *arg, struct inspect_msg *m)
{
	struct hook_contract *hc = arg;

	if (m->dir != INSPECT_FROM_SERVER || !m->request || !m->where || !m->where->upstream)
		return INSPECT_FORWARD;
	const char *method = m->request_method; /* read once for every hook */
	if (!method || strcmp(method, "tools/list") != 0 || m->kind != JRPC_RESULT)
		return INSPECT_FORWARD;
	/* Only tool listings take the lock: every other message of every
	 * worker used to, twice a call. */
	if (hc->locked)
		pthread_mutex_lock(&hc->lock);
	for (size_t i = 0; i < hc->nups; i++) {
		if (strcmp(hc->ups[i].conf->name, m->where->upstream) == 0) {
			/* off: not even parsed pages are kept; the benchmark's
			 * baseline for what checking costs. */
			if (hc->ups[i].cf.mode != CONTRACT_MODE_OFF)
				on_page(hc, i, m);
			break;
		}
	}
	if (hc->locked)
		pthread_mutex_unlock(&hc->lock);
	return INSPECT_FORWARD;
}

/* ---- setup ---------------------------------------------------------------- */

/* The hook's state for cfg, every contract section parsed and every
 * baseline loaded; NULL with the errors in err. */
static struct hook_contract *hook_contract_new(const struct px_config *cfg, char *err,
                                               size_t errlen)
{
	int nerr = 0;

	if (err && errlen)
		err[0] = '\0';
	struct hook_contract *hc = calloc(1, sizeof(*hc));
	if (!hc || !(hc->ups = calloc(cfg->nups ? cfg->nups : 1, sizeof(*hc->ups))) ||
	    !(hc->raw = tools_raw_new(HOOK_CONTRACT_MAX_LISTINGS, HOOK_CONTRACT_MAX_BYTES,
	                              listing_free))) {
		if (hc)
			free(hc->ups);
		free(hc);
		contract_conf_error(err, errlen, &nerr, "out of memory");
		return NULL;
	}
	hc->nups = cfg->nups;
	for (size_t i = 0; i < cfg->nups; i++) {
		hc->ups[i].conf = &cfg->ups[i];
		contract_conf_load(&hc->ups[i].cf, cfg->ups[i].contract, i, err, errlen, &nerr);
		/* NULL when out of memory: every listing is then checked afresh. */
		hc->ups[i].vc = verdict_cache_new();
	}
	if (nerr) {
		hook_contract_free(hc);
		return NULL;
	}
	return hc;
}

int hook_contract_validate(const struct px_config *cfg, char *err, size_t errlen)
{
	struct hook_contract *hc = hook_contract_new(cfg, err, errlen);
	hook_contract_free(hc);
	return hc ? 0 : -1;
}

static int contract_uninspected_ok(void *arg, const struct inspect_where *where);
static int contract_listing_may(void *arg, const struct inspect_listing *l);
static void contract_listing_passed(void *arg, const struct inspect_listing *l);

int hook_contract_setup(struct px_ctx *ctx, char *err, size_t errlen)
{
	struct hook_contract *hc = hook_contract_new(ctx->cfg, err, errlen);
	if (!hc)
		return -1;
	hc->ctx = ctx;
	int slot = inspect_add(ctx->insp, "contract", contract_on_message, NULL, hc);
	if (slot < 0 || pthread_mutex_init(&hc->lock, NULL) != 0) {
		int nerr = 0;
		contract_conf_error(err, errlen, &nerr, "contract: too many message hooks");
		hook_contract_free(hc);
		return -1;
	}
	inspect_set_uninspected(ctx->insp, slot, contract_uninspected_ok);
	inspect_set_listing_fast(ctx->insp, slot, contract_listing_may, contract_listing_passed);
	hc->locked = 1; /* taken by contract_on_message for tool listings only */
	for (size_t i = 0; i < hc->nups; i++) {
		const struct up_state *us = &hc->ups[i];
		if (us->cf.mode != CONTRACT_MODE_REPORT || us->cf.baseline || us->cf.spec_only)
			log_msg(LOG_INFO, "upstream %s: tool-list contract mode %s%s%s%s", us->conf->name,
			        contract_mode_name(us->cf.mode), us->cf.spec_only ? ", spec rules only" : "",
			        us->cf.baseline ? ", baseline " : "", us->cf.baseline ? us->cf.baseline_file : "");
	}
	ctx->proc->contract = hc;
	return 0;
}

void hook_contract_free(struct hook_contract *hc)
{
	if (!hc)
		return;
	tools_raw_free(hc->raw);
	for (size_t i = 0; i < hc->nups; i++) {
		contract_conf_clear(&hc->ups[i].cf);
		json_decref(hc->ups[i].latest);
		verdict_cache_free(hc->ups[i].vc);
	}
	free(hc->ups);
	if (hc->locked)
		pthread_mutex_destroy(&hc->lock);
	free(hc);
}

json_t *hook_contract_report(const struct hook_contract *hc, const char *upstream)
{
	for (size_t i = 0; hc && upstream && i < hc->nups; i++)
		if (strcmp(hc->ups[i].conf->name, upstream) == 0)
			return hc->ups[i].latest ? json_deep_copy(hc->ups[i].latest) : NULL;
	return NULL;
}

json_t *hook_contract_reports(const struct hook_contract *hc)
{
	json_t *o = json_object();
	for (size_t i = 0; o && hc && i < hc->nups; i++) {
		const struct up_state *us = &hc->ups[i];
		json_object_set_new(o, us->conf->name,
		                    us->latest ? json_deep_copy(us->latest) : json_null());
	}
	return o;
}

void hook_contract_published(struct hook_contract *hc, const char *upstream,
                             struct hook_contract_published *out)
{
	*out = (struct hook_contract_published){0};
	if (!hc || !upstream)
		return;
	if (hc->locked)
		pthread_mutex_lock(&hc->lock);
	for (size_t i = 0; i < hc->nups; i++) {
		const struct up_state *us = &hc->ups[i];
		if (strcmp(us->conf->name, upstream) == 0) {
			out->report = json_incref(us->latest);
			out->time_us = us->latest ? us->published_us : 0;
			out->count = us->published;
			break;
		}
	}
	if (hc->locked)
		pthread_mutex_unlock(&hc->lock);
}

void hook_contract_get_stats(const struct hook_contract *hc, struct hook_contract_stats *out)
{
	*out = hc->stats;
	out->evicted = tools_raw_evicted(hc->raw);
}

/* inspect_uninspected_fn (issue 17): a tools/list reply too big to inspect
 * may pass unread only where the contract would forward it anyway (report
 * or off); filter and fail mode would be bypassed by size alone. The mode
 * is fixed at setup (a change needs a restart): no lock. */
static int contract_uninspected_ok(void *arg, const struct inspect_where *where)
{
	const struct hook_contract *hc = arg;
	for (size_t i = 0; where->upstream && i < hc->nups; i++)
		if (strcmp(hc->ups[i].conf->name, where->upstream) == 0)
			return hc->ups[i].cf.mode != CONTRACT_MODE_FILTER &&
			       hc->ups[i].cf.mode != CONTRACT_MODE_FAIL;
	return 1;
}

/* ---- unchanged listings (issue 20) ------------------------------------------ */

/* The upstream's state when it checks listings (not off), or NULL. */
static struct up_state *checking_up(struct hook_contract *hc, const struct inspect_where *w)
{
	for (size_t i = 0; w && w->upstream && i < hc->nups; i++)
		if (strcmp(hc->ups[i].conf->name, w->upstream) == 0)
			return hc->ups[i].cf.mode != CONTRACT_MODE_OFF ? &hc->ups[i] : NULL;
	return NULL;
}

/* The verdict kept for l's bytes in l's era when it forwarded the listing
 * unchanged (no error in its place, no tool withheld), else NULL. A
 * verdict that changed the reply needs the tree to change it again.
 * Under hc->lock. */
static const struct kept_verdict *kept_unchanged(struct up_state *us,
                                                 const struct inspect_listing *l)
{
	const struct kept_verdict *c =
		verdict_cache_lookup(us->vc, l->raw, l->len, era_of(l->where, l->request));
	return c && !c->error && !c->nwithheld ? c : NULL;
}

/* inspect_listing_may_fn: off checks nothing; otherwise the same bytes as
 * a verdict that let the listing through as it was. */
static int contract_listing_may(void *arg, const struct inspect_listing *l)
{
	struct hook_contract *hc = arg;
	if (!l->where || request_cursor(l->request))
		return 0;
	if (hc->locked)
		pthread_mutex_lock(&hc->lock);
	struct up_state *us = checking_up(hc, l->where);
	int ok = !us || kept_unchanged(us, l) != NULL;
	if (hc->locked)
		pthread_mutex_unlock(&hc->lock);
	return ok;
}

/* inspect_listing_passed_fn: replay()'s effects. Another worker may have
 * replaced the verdict since contract_listing_may: then the listing passed
 * as the verdict of a moment ago said, and is counted as replayed. */
static void contract_listing_passed(void *arg, const struct inspect_listing *l)
{
	struct hook_contract *hc = arg;
	if (hc->locked)
		pthread_mutex_lock(&hc->lock);
	struct up_state *us = checking_up(hc, l->where);
	const struct kept_verdict *c = us ? kept_unchanged(us, l) : NULL;
	if (c)
		replay_effects(hc, us, c, l->where->conn_id, l->len);
	else if (us)
		hc->stats.replayed++;
	if (hc->locked)
		pthread_mutex_unlock(&hc->lock);
}

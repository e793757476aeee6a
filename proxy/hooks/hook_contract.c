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
 *     │                report (owned JSON), verdict_cache, and (live
 *     │                baselines, issue 21) the latest complete listing
 *     │                to accept (cur) and the readiness gate
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
#include "proxy/hooks/baseline_store.h"
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
	/* Live baselines (issue 21): the latest complete listing, what
	 * POST /contract/<upstream>/accept makes the baseline. One form
	 * only: the text of a one-page listing as received, shared with the
	 * verdict cache's skim (in_vc: no copy on the data path) or a copy
	 * of it, else a deep copy of the joined tools (later hooks rewrite
	 * the pages in place). */
	struct {
		int in_vc;               /* the text is verdict_cache_text(vc) */
		char *raw;               /* owned, or NULL */
		size_t len;
		json_t *tools;           /* owned, or NULL */
		uint64_t id;             /* hc->listing_ids at its check; 0: none */
		int clean;               /* no problem, all examined: passed but
		                            for the baseline */
	} cur;
	int latest_current;          /* latest is cur's report */
	enum hook_contract_gate gate;
	uint64_t accepted_us;
	char accepted_by[96];
	/* baseline_store_digest of cur's tools when cur.id == digest_id
	 * (hook_contract_listing_digest); digest_id 0: none worked out. */
	char digest[BASELINE_STORE_DIGEST_HEX];
	uint64_t digest_id;
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
	uint64_t listing_id;         /* live baselines: the listing's cur.id */
	int clean;                   /* its cur.clean */
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
	uint64_t listing_ids;        /* live baselines: last cur.id given */
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
	us->latest_current = 0; /* until the caller keeps its listing (cur) */
	if (report) {
		us->published_us = clock_real_us();
		us->published++;
		/* The readiness gate follows complete listings only: a page in
		 * progress says nothing of the deploy yet. */
		if (json_is_true(json_object_get(report, "complete")))
			us->gate = json_is_true(json_object_get(report, "passed"))
				? HOOK_CONTRACT_GATE_PASSING : HOOK_CONTRACT_GATE_FAILING;
	}
}

/* ---- live baselines (issue 21): the listing to accept ------------------------ */

static void cur_clear(struct up_state *us)
{
	free(us->cur.raw);
	json_decref(us->cur.tools);
	us->cur.raw = NULL;
	us->cur.tools = NULL;
	us->cur.len = 0;
	us->cur.id = 0;
	us->cur.in_vc = 0;
}

static int cur_present(const struct up_state *us)
{
	return us->cur.in_vc || us->cur.raw || us->cur.tools;
}

/* cur's text (borrowed) and its length, NULL when it is kept as tools. */
static const char *cur_text(const struct up_state *us, size_t *len)
{
	if (us->cur.in_vc)
		return verdict_cache_text(us->vc, len, NULL);
	*len = us->cur.len;
	return us->cur.raw;
}

/* cur := the text the verdict cache kept of the listing just checked. */
static void cur_set_shared(struct up_state *us, uint64_t id, int clean)
{
	cur_clear(us);
	us->cur.in_vc = 1;
	us->cur.id = id;
	us->cur.clean = clean;
	us->latest_current = 1;
}

/* A copy of its own of a text shared with the verdict cache, before the
 * cache is replaced (SIGHUP with new settings). */
static void cur_own(struct up_state *us)
{
	size_t len;
	const char *t;
	if (!us->cur.in_vc)
		return;
	t = verdict_cache_text(us->vc, &len, NULL);
	char *copy = t ? malloc(len ? len : 1) : NULL;
	if (!copy) {
		cur_clear(us);
		return;
	}
	memcpy(copy, t, len);
	us->cur.in_vc = 0;
	us->cur.raw = copy;
	us->cur.len = len;
}

/* cur := the one-page listing text raw[0..len). Under hc->lock. */
static void cur_set_raw(struct up_state *us, const char *raw, size_t len, uint64_t id, int clean)
{
	char *copy = malloc(len ? len : 1);
	cur_clear(us);
	if (!copy)
		return; /* nothing to accept until the next listing */
	memcpy(copy, raw, len);
	us->cur.raw = copy;
	us->cur.len = len;
	us->cur.id = id;
	us->cur.clean = clean;
	us->latest_current = 1;
}

/* cur := a copy of tools (borrowed: the listing's joined array). */
static void cur_set_tools(struct up_state *us, const json_t *tools, uint64_t id, int clean)
{
	json_t *copy = json_deep_copy(tools);
	cur_clear(us);
	if (!copy)
		return;
	us->cur.tools = copy;
	us->cur.id = id;
	us->cur.clean = clean;
	us->latest_current = 1;
}

/* The tools array of cur (new reference), NULL with none or out of
 * memory. Parses the text when that is the form kept. */
static json_t *cur_tools(const struct up_state *us)
{
	size_t len;
	if (us->cur.tools)
		return json_incref(us->cur.tools);
	const char *text = cur_text(us, &len);
	if (!text)
		return NULL;
	json_t *page = json_loadb(text, len, 0, NULL);
	json_t *tools = json_incref((json_t *)(uintptr_t)drift_tools_of(page));
	json_decref(page);
	return tools;
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
	uint64_t listing_id;  /* live baselines: cur.id given to the listing */
	int clean;
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
	return verdict_cache_check(us->vc, pages[0], m->result_raw, m->result_raw_len,
	                           m->result_bytes, opts, checked);
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
	if (report && v.complete && !loop) {
		/* Live baselines: the listing POST .../accept would take. */
		e->listing_id = ++hc->listing_ids;
		e->clean = contract_report_passed(r) && !v.unexamined;
		size_t tlen;
		int now;
		const char *t = verdict_cache_text(us->vc, &tlen, &now);
		if (n == 1 && m->result_raw && t && now && tlen == m->result_raw_len) {
			cur_set_shared(us, e->listing_id, e->clean); /* no copy */
		} else if (n == 1 && m->result_raw) {
			cur_set_raw(us, m->result_raw, m->result_raw_len, e->listing_id, e->clean);
		} else {
			json_t *all = joined_tools(l->pages);
			if (all)
				cur_set_tools(us, all, e->listing_id, e->clean);
			json_decref(all);
		}
	} else if (us->cur.in_vc) {
		int now;
		size_t tlen;
		/* the skim took this listing's text, which is not cur's */
		if (verdict_cache_text(us->vc, &tlen, &now) && now)
			cur_clear(us);
	}
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
                           const struct kept_verdict *c, unsigned long long conn_id,
                           const char *raw, size_t len)
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
	/* The same bytes as the listing checked then: cur is still it,
	 * unless a listing of several pages came in between. */
	if (us->cur.id == c->listing_id && c->listing_id)
		us->latest_current = 1;
	else if (raw)
		cur_set_raw(us, raw, len, c->listing_id, c->clean);
}

/* Does again what checking these bytes did last time. */
static void replay(struct hook_contract *hc, struct up_state *us, const struct kept_verdict *c,
                   struct inspect_msg *m)
{
	replay_effects(hc, us, c, m->where->conn_id, m->result_raw, m->result_raw_len);
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
	c->listing_id = e->listing_id;
	c->clean = e->clean;
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
	/* It reads tool listings only: any other message may pass without a tree. */
	inspect_set_needs_tree(ctx->insp, slot, inspect_tree_for_listings);
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
		cur_clear(&hc->ups[i]);
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
			/* A copy of the reader's own, not a reference: the report
			 * is replaced (and its last reference dropped) on any
			 * worker, and jansson's json_decref reads the count
			 * without an atomic before decrementing it, a race that
			 * TSan reported (test_accept_while_listing). Readers are
			 * the admin endpoint's, rare next to listings. */
			out->report = us->latest ? json_deep_copy(us->latest) : NULL;
			out->time_us = us->latest ? us->published_us : 0;
			out->count = us->published;
			out->gate = us->cf.mode == CONTRACT_MODE_OFF ? HOOK_CONTRACT_GATE_OFF : us->gate;
			out->has_baseline = us->cf.baseline_tools != NULL;
			out->baseline_tools = json_array_size(us->cf.baseline_tools);
			out->can_accept = us->cf.mode != CONTRACT_MODE_OFF && cur_present(us);
			out->accepted_us = us->accepted_us;
			snprintf(out->accepted_by, sizeof(out->accepted_by), "%s", us->accepted_by);
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
 * or off); filter and fail mode would be bypassed by size alone. SIGHUP
 * may change the mode (issue 21): read under the lock (oversized replies
 * only). */
static int contract_uninspected_ok(void *arg, const struct inspect_where *where)
{
	struct hook_contract *hc = arg;
	int ok = 1;
	if (hc->locked)
		pthread_mutex_lock(&hc->lock);
	for (size_t i = 0; where->upstream && i < hc->nups; i++)
		if (strcmp(hc->ups[i].conf->name, where->upstream) == 0) {
			ok = hc->ups[i].cf.mode != CONTRACT_MODE_FILTER &&
			     hc->ups[i].cf.mode != CONTRACT_MODE_FAIL;
			break;
		}
	if (hc->locked)
		pthread_mutex_unlock(&hc->lock);
	return ok;
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

/* The verdict this thread's last contract_listing_may found, for the
 * `passed` that follows it in the same inspect_listing_fast: named by
 * its serial, which no other verdict ever has, so passed need not
 * compare the listing's bytes again (a 448 KB memcmp: 60k instructions). */
static _Thread_local struct {
	const struct verdict_cache *vc;
	uint64_t serial;
	const struct kept_verdict *c;
} last_may;

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
	const struct kept_verdict *c = us ? kept_unchanged(us, l) : NULL;
	int ok = !us || c != NULL;
	last_may.vc = us ? us->vc : NULL;
	last_may.serial = c ? verdict_cache_serial(us->vc) : 0;
	last_may.c = c;
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
	const struct kept_verdict *c = NULL;
	if (us && last_may.serial && last_may.vc == us->vc &&
	    verdict_cache_serial(us->vc) == last_may.serial)
		c = last_may.c;
	else if (us)
		c = kept_unchanged(us, l);
	last_may.serial = 0;
	if (c)
		replay_effects(hc, us, c, l->where->conn_id, l->raw, l->len);
	else if (us)
		hc->stats.replayed++;
	if (hc->locked)
		pthread_mutex_unlock(&hc->lock);
}

/* ---- live baselines (issue 21): accept, reload, readiness ------------------------ */

const char *hook_contract_gate_name(enum hook_contract_gate g)
{
	switch (g) {
	case HOOK_CONTRACT_GATE_PASSING:
		return "passing";
	case HOOK_CONTRACT_GATE_FAILING:
		return "failing";
	case HOOK_CONTRACT_GATE_OFF:
		return "off";
	default:
		return "unknown";
	}
}

static struct up_state *up_named(struct hook_contract *hc, const char *name)
{
	for (size_t i = 0; hc && name && i < hc->nups; i++)
		if (strcmp(hc->ups[i].conf->name, name) == 0)
			return &hc->ups[i];
	return NULL;
}

/* The latest report judged again against the baseline now in force, when
 * it is the report of cur (a complete listing): changes, breaking and
 * passed anew, the rest as it was, plus "rejudged" (why) and a new time.
 * So /contract and the readiness gate follow an accept or a reload at
 * once, before any client lists again. known (borrowed, may be NULL) is
 * cur's tools array when the caller has it. Under hc->lock. */
static void rejudge(struct hook_contract *hc, struct up_state *us, const char *why,
                    json_t *known)
{
	char now[32];
	if (!us->latest || !us->latest_current)
		return;
	/* known: cur's tools parsed by the caller outside the lock, or NULL */
	json_t *tools = known ? json_incref(known) : cur_tools(us);
	struct drift_report *d = tools && us->cf.baseline_tools
		? drift_diff(us->cf.baseline_tools, tools) : NULL;
	size_t nbreaking = 0;
	json_t *changes = contract_answer_changes(d, 1, &nbreaking);
	int passed = us->cur.clean && nbreaking == 0 && !(d && drift_report_truncated(d));
	json_t *report = json_object();
	utc_now(now, sizeof(now));
	if (!tools || !changes || !report || json_object_update(report, us->latest) < 0 ||
	    json_object_set_new(report, "changes", json_incref(changes)) < 0 ||
	    json_object_set_new(report, "breaking", json_integer((json_int_t)nbreaking)) < 0 ||
	    json_object_set_new(report, "passed", json_boolean(passed)) < 0 ||
	    json_object_set_new(report, "baseline", us->cf.baseline_file
	                                            ? json_string(us->cf.baseline_file)
	                                            : json_null()) < 0 ||
	    json_object_set_new(report, "rejudged", json_string(why)) < 0 ||
	    json_object_set_new(report, "time", json_string(now)) < 0) {
		log_msg(LOG_ERROR, "contract: upstream %s: out of memory judging the latest listing "
		                   "again; the next listing is judged against the new baseline",
		        us->conf->name);
		json_decref(report);
	} else {
		publish(hc, us, report);
		us->latest_current = 1;
	}
	json_decref(changes);
	drift_report_free(d);
	json_decref(tools);
}

/* The tools of the upstream's latest complete listing (*tools owned),
 * with its cur.id, its state and its baseline file. The text is copied,
 * not parsed, under the lock: a 4 MiB listing parses in milliseconds
 * every worker's listings would wait for. ACCEPTED: found; UNKNOWN,
 * NO_LISTING; FAILED: out of memory. */
static enum hook_contract_accept_rc cur_tools_out(struct hook_contract *hc, const char *upstream,
                                                  struct up_state **usp, json_t **tools,
                                                  uint64_t *id, const char **file)
{
	if (!hc)
		return HOOK_CONTRACT_ACCEPT_UNKNOWN;
	pthread_mutex_lock(&hc->lock);
	struct up_state *us = up_named(hc, upstream);
	if (!us) {
		pthread_mutex_unlock(&hc->lock);
		return HOOK_CONTRACT_ACCEPT_UNKNOWN;
	}
	int none = us->cf.mode == CONTRACT_MODE_OFF || !cur_present(us);
	*tools = none ? NULL : json_incref(us->cur.tools);
	size_t len = 0;
	const char *text = none || *tools ? NULL : cur_text(us, &len);
	char *raw = text ? malloc(len ? len : 1) : NULL;
	*id = us->cur.id;
	if (raw)
		memcpy(raw, text, len);
	*file = us->cf.baseline_file; /* config's: retired configs live on */
	*usp = us;
	pthread_mutex_unlock(&hc->lock);
	if (raw) {
		json_t *page = json_loadb(raw, len, 0, NULL);
		*tools = json_incref((json_t *)(uintptr_t)drift_tools_of(page));
		json_decref(page);
		free(raw);
	}
	if (none || !*tools) {
		json_decref(*tools);
		*tools = NULL;
		return none ? HOOK_CONTRACT_ACCEPT_NO_LISTING : HOOK_CONTRACT_ACCEPT_FAILED;
	}
	return HOOK_CONTRACT_ACCEPTED;
}

int hook_contract_listing_digest(struct hook_contract *hc, const char *upstream,
                                 char hex[BASELINE_STORE_DIGEST_HEX])
{
	hex[0] = '\0';
	if (!hc)
		return 0;
	pthread_mutex_lock(&hc->lock);
	struct up_state *us = up_named(hc, upstream);
	int kept = us && us->cf.mode != CONTRACT_MODE_OFF && cur_present(us) && us->digest_id &&
	           us->digest_id == us->cur.id;
	if (kept)
		memcpy(hex, us->digest, BASELINE_STORE_DIGEST_HEX);
	pthread_mutex_unlock(&hc->lock);
	if (kept)
		return 1;
	json_t *tools = NULL;
	uint64_t id = 0;
	const char *file = NULL;
	enum hook_contract_accept_rc rc = cur_tools_out(hc, upstream, &us, &tools, &id, &file);
	if (rc != HOOK_CONTRACT_ACCEPTED)
		return rc == HOOK_CONTRACT_ACCEPT_FAILED ? -1 : 0;
	int bad = baseline_store_digest(tools, hex) < 0;
	json_decref(tools);
	if (bad)
		return -1;
	pthread_mutex_lock(&hc->lock);
	if (us->cur.id == id) {
		memcpy(us->digest, hex, BASELINE_STORE_DIGEST_HEX);
		us->digest_id = id;
	}
	pthread_mutex_unlock(&hc->lock);
	return 1;
}

enum hook_contract_accept_rc hook_contract_accept(struct hook_contract *hc, const char *upstream,
                                                  const char *by, const char *expect_digest,
                                                  struct hook_contract_accepted *out,
                                                  char *err, size_t errlen)
{
	*out = (struct hook_contract_accepted){0};
	if (err && errlen)
		err[0] = '\0';
	/* 1. What to accept, and is it what the reviewer saw. */
	json_t *tools = NULL;
	uint64_t id = 0;
	const char *file = NULL;
	struct up_state *us = NULL;
	enum hook_contract_accept_rc got = cur_tools_out(hc, upstream, &us, &tools, &id, &file);
	if (got != HOOK_CONTRACT_ACCEPTED) {
		if (got == HOOK_CONTRACT_ACCEPT_FAILED)
			snprintf(err, errlen, "out of memory");
		return got;
	}
	if (expect_digest) {
		char now[BASELINE_STORE_DIGEST_HEX];
		if (baseline_store_digest(tools, now) < 0) {
			json_decref(tools);
			snprintf(err, errlen, "out of memory");
			return HOOK_CONTRACT_ACCEPT_FAILED;
		}
		if (strcmp(now, expect_digest) != 0) {
			json_decref(tools);
			snprintf(err, errlen, "the listing is now %s", now);
			return HOOK_CONTRACT_ACCEPT_STALE;
		}
	}
	/* 2. The file first (blocking, outside the lock): a failed write
	 * changes nothing. Accepts and reloads both run on worker 0's
	 * thread, one at a time, so nothing replaces the baseline between. */
	json_t *doc = json_pack("{s:o}", "tools", tools); /* steals tools */
	if (!doc) {
		snprintf(err, errlen, "out of memory");
		return HOOK_CONTRACT_ACCEPT_FAILED;
	}
	if (file) {
		int rc = baseline_store_write(file, json_object_get(doc, "tools"), err, errlen);
		if (rc < 0) {
			json_decref(doc);
			return HOOK_CONTRACT_ACCEPT_FAILED;
		}
		out->file = file;
		out->file_warning = rc > 0;
	}
	out->ntools = json_array_size(json_object_get(doc, "tools"));
	/* 3. In force for every worker's next listing, the latest report
	 * judged again. */
	pthread_mutex_lock(&hc->lock);
	contract_conf_set_baseline(&us->cf, doc);
	verdict_cache_forget(us->vc);
	us->accepted_us = clock_real_us();
	snprintf(us->accepted_by, sizeof(us->accepted_by), "%s", by ? by : "");
	rejudge(hc, us, "accept", us->cur.id == id ? json_object_get(doc, "tools") : NULL);
	pthread_mutex_unlock(&hc->lock);
	return HOOK_CONTRACT_ACCEPTED;
}

struct hook_contract_staged {
	const struct px_config *cfg;   /* borrowed: the new configuration */
	struct contract_conf *cf;      /* owned: one per cfg->ups[i] */
	size_t n;
};

void hook_contract_staged_free(struct hook_contract_staged *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		contract_conf_clear(&st->cf[i]);
	free(st->cf);
	free(st);
}

struct hook_contract_staged *hook_contract_stage(const struct px_config *cfg, char *err,
                                                 size_t errlen)
{
	int nerr = 0;
	if (err && errlen)
		err[0] = '\0';
	struct hook_contract_staged *st = calloc(1, sizeof(*st));
	if (!st || !(st->cf = calloc(cfg->nups ? cfg->nups : 1, sizeof(*st->cf)))) {
		free(st);
		contract_conf_error(err, errlen, &nerr, "out of memory");
		return NULL;
	}
	st->cfg = cfg;
	st->n = cfg->nups;
	for (size_t i = 0; i < cfg->nups; i++)
		contract_conf_load(&st->cf[i], cfg->ups[i].contract, i, err, errlen, &nerr);
	if (nerr) {
		hook_contract_staged_free(st);
		return NULL;
	}
	return st;
}

static int same_json(const json_t *a, const json_t *b)
{
	return a == b || (a && b && json_equal((json_t *)(uintptr_t)a, (json_t *)(uintptr_t)b));
}

/* One upstream's new section in force. Under hc->lock. */
static void commit_one(struct hook_contract *hc, struct up_state *us, struct contract_conf *next,
                       const struct px_upstream_conf *conf)
{
	/* A baseline accepted without a file lives until a restart, or until
	 * the section names a file (which then wins). */
	if (!next->baseline_file && !us->cf.baseline_file && us->cf.baseline) {
		next->baseline = us->cf.baseline;
		next->baseline_tools = us->cf.baseline_tools;
		us->cf.baseline = NULL;
	}
	int settings = !same_json(us->conf->contract, conf->contract);
	int baseline = !same_json(us->cf.baseline_tools, next->baseline_tools);
	contract_conf_clear(&us->cf);
	us->cf = *next;
	*next = (struct contract_conf){0};
	us->conf = conf;
	if (settings) {
		/* Mode or rules may differ: the kept verdict and memo both go. */
		struct verdict_cache *fresh = verdict_cache_new();
		cur_own(us); /* its text goes with the old cache */
		if (fresh) {
			verdict_cache_free(us->vc);
			us->vc = fresh;
		} else {
			verdict_cache_forget(us->vc);
		}
	} else if (baseline) {
		verdict_cache_forget(us->vc);
	}
	if (settings || baseline) {
		log_msg(LOG_INFO, "SIGHUP: upstream %s: tool-list contract mode %s%s%s%s (%zu tools)",
		        conf->name, contract_mode_name(us->cf.mode),
		        us->cf.spec_only ? ", spec rules only" : "",
		        us->cf.baseline_tools ? ", baseline " : ", no baseline",
		        us->cf.baseline_file ? us->cf.baseline_file
		                             : (us->cf.baseline_tools ? "(accepted)" : ""),
		        json_array_size(us->cf.baseline_tools));
		if (us->cf.mode == CONTRACT_MODE_OFF)
			us->gate = HOOK_CONTRACT_GATE_UNKNOWN;
		else
			rejudge(hc, us, "reload", NULL);
	}
}

void hook_contract_commit(struct hook_contract *hc, struct hook_contract_staged *st)
{
	if (!hc || !st) {
		hook_contract_staged_free(st);
		return;
	}
	pthread_mutex_lock(&hc->lock);
	for (size_t i = 0; i < hc->nups && i < st->n; i++)
		commit_one(hc, &hc->ups[i], &st->cf[i], &st->cfg->ups[i]);
	pthread_mutex_unlock(&hc->lock);
	hook_contract_staged_free(st);
}

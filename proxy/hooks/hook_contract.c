/* hook_contract: see hook_contract.h.
 *
 * Why this file is long (over 800 lines): listings, reports, pages and the verdict cache all read
 * and write the per-upstream struct up_state under hc->lock; the verdict
 * cache (its own section, a tuning layer) is what to move out first, once
 * up_state has accessors.
 *
 *   hook_contract
 *     ├─ ups[i]        one per configured upstream: mode, baseline, latest
 *     │                report (owned JSON)
 *     └─ head ⇄ … ⇄ tail   listings in progress, most recently used first
 *          listing: (upstream, session) + deep copies of its pages +
 *                   the nextCursor that continues it
 *
 * A page that more pages follow is kept as a deep copy: later hooks may
 * rewrite the message in place, and the checker re-reads every page of
 * the listing each time a page is added (20 pages at most). The last page
 * (most listings have one) is checked and the listing dropped within the
 * call, so it is only referenced.
 *
 * Each upstream also keeps the verdict on its last one-page listing (see
 * hook_contract.h, "Unchanged lists"): the result's bytes as they arrived,
 * and what checking them did (counters, log line, report, the reply's
 * change). A listing with the same bytes replays it instead of checking.
 * And it keeps a memo of per-tool results with the last one-page
 * listing's text and tool spans ("Changed lists"), so that a listing with
 * other bytes costs the tools that changed.
 */
#include "proxy/hooks/hook_contract.h"

#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checks/contract.h"
#include "checks/drift.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/clock.h"
#include "proxy/base/jparse.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"

#define META_VERSION_KEY "io.modelcontextprotocol/protocolVersion"

enum contract_mode { MODE_REPORT = 0, MODE_FILTER, MODE_FAIL, MODE_OFF };

static const char *const mode_names[] = {"report", "filter", "fail", "off"};
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
	enum contract_mode mode;
	int spec_only;
	const char *baseline_file;   /* borrowed from conf->contract, or NULL */
	json_t *baseline;            /* owned: the loaded document, or NULL */
	const json_t *baseline_tools;/* borrowed from baseline */
	json_t *latest;              /* owned: latest report, or NULL; never
	                                changed once published (readers of
	                                hook_contract_published keep a
	                                reference) */
	uint64_t published_us;       /* Unix time latest was published */
	uint64_t published;          /* reports published so far */
	struct verdict_cache *cache; /* owned: last one-page listing's verdict, or NULL */
	struct contract_memo *memo;  /* owned: per-tool results of the last
	                                one-page listing, or NULL */
	struct contract_text *texts; /* owned: scratch, CONTRACT_MAX_TOOLS */
	struct jparse_elem *spans;   /* owned: scratch, CONTRACT_MAX_TOOLS */
	/* The text of the last listing checked with the memo and where its
	 * tools sit in it, so that the next one is skimmed only where it
	 * differs (jparse_elements_since). */
	char *prev;                  /* owned copy, or NULL */
	size_t prev_len, prev_cap;
	struct jparse_elem *prev_spans; /* owned: CONTRACT_MAX_TOOLS, into prev */
	size_t nprev;
	int prev_now;                /* prev is the page being checked now */
};

/* What checking a one-page listing did, to do again for the same bytes. */
struct verdict_cache {
	char *bytes;                 /* owned: the result's text as it arrived;
	                                NULL: it is up_state.prev (shared) */
	size_t len;
	char *era;                   /* owned, or NULL */
	enum log_level level;
	char line[1024];             /* the log line after "#<conn> " */
	json_t *report;              /* owned: as published ("time" is renewed) */
	json_t *error;               /* owned: fail: what replaced the result, or NULL */
	size_t *withheld;            /* owned: filter: tool indices, ascending */
	size_t nwithheld;
	struct hook_contract_stats delta;  /* what the check added to the counters */
};

struct listing {
	struct listing *prev, *next;  /* LRU links, owned by hook_contract */
	size_t up;
	char *session;       /* owned: "" when the exchange had no session */
	char *era;           /* owned, or NULL: era of the first page */
	json_t *pages;       /* owned: array of deep-copied page results */
	json_t *filtered;    /* owned: names withheld so far (filter mode) */
	size_t bytes;        /* serialised size of pages */
	char *next_cursor;   /* owned: the last page's nextCursor, or NULL */
	int orphan;          /* began with a cursor no listing knew */
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
	struct listing *head, *tail; /* owned list */
	size_t nlistings;
	size_t bytes;                /* sum of listings' bytes */
	struct hook_contract_stats stats;
};

/* ---- small helpers -------------------------------------------------------- */

static char *dup_str(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Appends to a fixed error buffer, one line per error. */
static void err_add(char *err, size_t errlen, int *nerr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void err_add(char *err, size_t errlen, int *nerr, const char *fmt, ...)
{
	size_t used = err && errlen ? strnlen(err, errlen) : 0;
	(*nerr)++;
	if (!err || used + 1 >= errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + used, errlen - used, fmt, ap);
	va_end(ap);
	used = strnlen(err, errlen);
	if (used + 1 < errlen) {
		err[used] = '\n';
		err[used + 1] = '\0';
	}
}

/* A name made safe for one log or message line: at most 64 bytes, control
 * characters and quotes replaced. */
static const char *safe_name(char *buf, size_t cap, const char *s)
{
	size_t j = 0;
	if (!s)
		return "(no name)";
	for (size_t i = 0; s[i] && j + 4 < cap && i < 64; i++) {
		unsigned char c = (unsigned char)s[i];
		buf[j++] = (c < 0x20 || c == 0x7f || c == '"' || c == '\\') ? '?' : (char)c;
	}
	if (strlen(s) > 64 && j + 4 < cap) {
		memcpy(buf + j, "...", 3);
		j += 3;
	}
	buf[j] = '\0';
	return buf;
}

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
static const char *message_era(const struct inspect_msg *m)
{
	if (m->where->protocol && *m->where->protocol)
		return m->where->protocol;
	const json_t *meta = json_object_get(json_object_get(m->request, "params"), "_meta");
	return json_string_value(json_object_get(meta, META_VERSION_KEY));
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

static void cache_free(struct verdict_cache *c)
{
	if (!c)
		return;
	free(c->bytes);
	free(c->era);
	json_decref(c->report);
	json_decref(c->error);
	free(c->withheld);
	free(c);
}

/* ---- listings ------------------------------------------------------------- */

static void listing_unlink(struct hook_contract *hc, struct listing *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else
		hc->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		hc->tail = l->prev;
	l->prev = l->next = NULL;
}

static void listing_push_front(struct hook_contract *hc, struct listing *l)
{
	l->prev = NULL;
	l->next = hc->head;
	if (hc->head)
		hc->head->prev = l;
	hc->head = l;
	if (!hc->tail)
		hc->tail = l;
}

static void listing_free(struct listing *l)
{
	if (!l)
		return;
	free(l->session);
	free(l->era);
	free(l->next_cursor);
	json_decref(l->pages);
	json_decref(l->filtered);
	free(l);
}

static void listing_remove(struct hook_contract *hc, struct listing *l)
{
	listing_unlink(hc, l);
	hc->nlistings--;
	hc->bytes -= l->bytes;
	listing_free(l);
}

/* Evicts least recently used listings (never `keep`) until within bounds,
 * with room for `more` listings of `bytes` more (a replayed page stands
 * for a listing that would have been added and dropped). */
static void listings_make_room(struct hook_contract *hc, const struct listing *keep, size_t more,
                               size_t bytes)
{
	while (hc->nlistings + more > HOOK_CONTRACT_MAX_LISTINGS ||
	       hc->bytes + bytes > HOOK_CONTRACT_MAX_BYTES) {
		struct listing *victim = hc->tail;
		if (victim == keep)
			victim = victim->prev;
		if (!victim)
			return;
		log_msg(LOG_DEBUG, "contract: listing of upstream %s evicted (%zu in progress, %zu bytes)",
		        hc->ups[victim->up].conf->name, hc->nlistings, hc->bytes);
		hc->stats.evicted++;
		listing_remove(hc, victim);
	}
}

static void listings_bound(struct hook_contract *hc, const struct listing *keep)
{
	listings_make_room(hc, keep, 0, 0);
}

/* The listing of (up, session) that `cursor` continues, most recent first. */
static struct listing *listing_find(struct hook_contract *hc, size_t up, const char *session,
                                    const char *cursor)
{
	for (struct listing *l = hc->head; l; l = l->next)
		if (l->up == up && l->next_cursor && strcmp(l->next_cursor, cursor) == 0 &&
		    strcmp(l->session, session) == 0)
			return l;
	return NULL;
}

static struct listing *listing_new(struct hook_contract *hc, size_t up, const char *session,
                                   const char *era, int orphan)
{
	struct listing *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->up = up;
	l->orphan = orphan;
	l->session = dup_str(session);
	l->era = dup_str(era);
	l->pages = json_array();
	l->filtered = json_array();
	if (!l->session || (era && !l->era) || !l->pages || !l->filtered) {
		listing_free(l);
		return NULL;
	}
	listing_push_front(hc, l);
	hc->nlistings++;
	return l;
}

/* ---- reports -------------------------------------------------------------- */

/* The changes that count now: all of them for a complete listing; before
 * the last page a tool missing from the pages seen so far may still come,
 * so tool-removed waits. Returns a new array; *nbreaking its breaking
 * count. */
static json_t *relevant_changes(const struct drift_report *d, int complete, size_t *nbreaking)
{
	json_t *arr = json_array();
	*nbreaking = 0;
	for (size_t i = 0; d && arr && i < drift_report_nchanges(d); i++) {
		const struct drift_change *c = drift_report_change(d, i);
		if (!complete && strcmp(c->code, "tool-removed") == 0)
			continue;
		if (c->breaking)
			(*nbreaking)++;
		json_array_append_new(arr, json_pack("{s:s,s:s,s:s?,s:s,s:s}", "code", c->code, "kind",
		                                     c->kind, "tool", c->tool, "pointer", c->pointer,
		                                     "message", c->message));
	}
	return arr;
}

static json_t *finding_json(const struct contract_finding *f)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "code", f->code, "message", f->message,
	                      "pointer", f->pointer, "rule", f->spec ? "spec" : "usability");
	if (o && f->tool)
		json_object_set_new(o, "tool", json_string(f->tool));
	return o;
}

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

/* What the hook did with the page, for the report and the log. */
struct verdict {
	const char *action;   /* "forwarded", "filtered", "failed" */
	size_t nbreaking;     /* breaking changes that count now */
	int complete;         /* the last page of a listing seen from its start */
	int unexamined;       /* more tools than the checker examines */
	int passed;           /* no problem, no breaking change, all examined */
};

static json_t *build_report(struct up_state *us, const struct listing *l,
                            const struct contract_report *r, json_t *changes,
                            const struct verdict *v)
{
	char now[32];
	json_t *o = contract_report_json_memo(r, us->memo);
	if (!o) {
		json_decref(changes);
		return NULL;
	}
	utc_now(now, sizeof(now));
	json_object_set_new(o, "changes", changes ? changes : json_array());
	json_object_set_new(o, "breaking", json_integer((json_int_t)v->nbreaking));
	json_object_set_new(o, "passed", json_boolean(v->passed));
	json_object_set_new(o, "upstream", json_string(us->conf->name));
	json_object_set_new(o, "mode", json_string(mode_names[us->mode]));
	json_object_set_new(o, "spec_only", json_boolean(us->spec_only));
	json_object_set_new(o, "era", l->era ? json_string(l->era) : json_null());
	json_object_set_new(o, "baseline",
	                    us->baseline_file ? json_string(us->baseline_file) : json_null());
	json_object_set_new(o, "pages", json_integer((json_int_t)json_array_size(l->pages)));
	json_object_set_new(o, "complete", json_boolean(v->complete));
	json_object_set_new(o, "action", json_string(v->action));
	json_object_set_new(o, "filtered", json_deep_copy(l->filtered));
	json_object_set_new(o, "time", json_string(now));
	return o;
}

/* One line per listing: verdict, score, counts, and the first codes;
 * into line (all but the "#<conn> " it is logged with). */
static void format_listing(const struct up_state *us, const struct listing *l,
                           const struct contract_report *r, const struct verdict *v,
                           char *line, size_t cap)
{
	char codes[512] = "", nb[80];
	size_t used = 0, shown = 0, more = 0;

	for (size_t i = 0; i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		if (!f->problem)
			continue;
		if (shown >= 5) {
			more++;
			continue;
		}
		int w = snprintf(codes + used, sizeof(codes) - used, "%s%s%s%s%s", shown ? ", " : "",
		                 f->code, f->tool ? " \"" : "", f->tool ? safe_name(nb, sizeof(nb), f->tool) : "",
		                 f->tool ? "\"" : "");
		if (w < 0 || (size_t)w >= sizeof(codes) - used)
			break;
		used += (size_t)w;
		shown++;
	}
	if (more && used + 32 < sizeof(codes))
		snprintf(codes + used, sizeof(codes) - used, " and %zu more", more);
	snprintf(line, cap,
	        "contract: upstream %s: tools/list %s, score %.2f, %zu tools on %zu page%s%s, "
	        "%zu problem%s, %zu warning%s, %zu breaking change%s (mode %s: %s)%s%s",
	        us->conf->name, v->passed ? "PASSED" : "FAILED",
	        contract_report_score(r), contract_report_ntools(r), json_array_size(l->pages),
	        json_array_size(l->pages) == 1 ? "" : "s", v->complete ? "" : " (listing not complete)",
	        contract_report_nproblems(r), contract_report_nproblems(r) == 1 ? "" : "s",
	        contract_report_nwarnings(r), contract_report_nwarnings(r) == 1 ? "" : "s",
	        v->nbreaking, v->nbreaking == 1 ? "" : "s", mode_names[us->mode], v->action,
	        *codes ? ": " : "", codes);
}

/* ---- answers -------------------------------------------------------------- */

/* Replaces the response in m->msg by a JSON-RPC error with the same id.
 * data is stolen; reason: mode_reasons[]. */
static void replace_with_error(struct inspect_msg *m, const char *reason, const char *message,
                               json_t *data)
{
	json_t *err = json_object();
	if (!err) {
		json_decref(data);
		return;
	}
	json_object_set_new(err, "code", json_integer(HOOK_CONTRACT_ERROR));
	json_object_set_new(err, "message", json_string(message));
	if (data)
		json_object_set_new(err, "data", data);
	json_object_del(m->msg, "result");
	json_object_set_new(m->msg, "error", err);
	m->modified = 1;
	m->reason = reason;
}

struct msgbuf {
	char s[1024];
	size_t n, items, more;
};

static void mb_item(struct msgbuf *b, const char *code, const char *tool)
{
	char nb[80];
	if (b->items >= 8 || b->n + 120 >= sizeof(b->s)) {
		b->more++;
		return;
	}
	int w = snprintf(b->s + b->n, sizeof(b->s) - b->n, "%s%s%s%s%s", b->items ? "; " : "", code,
	                 tool ? " (tool \"" : "", tool ? safe_name(nb, sizeof(nb), tool) : "",
	                 tool ? "\")" : "");
	if (w > 0 && (size_t)w < sizeof(b->s) - b->n) {
		b->n += (size_t)w;
		b->items++;
	}
}

/* The error that replaces a page in fail mode (and filter mode's refusals):
 * the message names each problem and breaking change (the first ones; data
 * lists them all). */
static void answer_failed(const struct up_state *us, const struct contract_report *r,
                          const struct drift_report *d, int complete, const char *extra,
                          struct inspect_msg *m)
{
	struct msgbuf b = {.n = 0};
	json_t *problems = json_array(), *changes = json_array();
	size_t np = 0, nbk = 0;

	b.n = (size_t)snprintf(b.s, sizeof(b.s), "tools/list from upstream %s failed the contract: ",
	                       us->conf->name);
	if (b.n >= sizeof(b.s))
		b.n = sizeof(b.s) - 1;
	for (size_t i = 0; r && i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		if (!f->problem)
			continue;
		np++;
		mb_item(&b, f->code, f->tool);
		json_array_append_new(problems, finding_json(f));
	}
	for (size_t i = 0; d && i < drift_report_nchanges(d); i++) {
		const struct drift_change *c = drift_report_change(d, i);
		if (!c->breaking || (!complete && strcmp(c->code, "tool-removed") == 0))
			continue;
		nbk++;
		mb_item(&b, c->code, c->tool);
		json_array_append_new(changes, json_pack("{s:s,s:s,s:s?,s:s,s:s}", "code", c->code,
		                                         "kind", c->kind, "tool", c->tool, "pointer",
		                                         c->pointer, "message", c->message));
	}
	if (extra)
		mb_item(&b, extra, NULL);
	if (b.more)
		snprintf(b.s + b.n, sizeof(b.s) - b.n, "; and %zu more", b.more);
	json_t *data = json_pack("{s:s,s:o,s:o,s:I,s:I,s:b}", "upstream", us->conf->name, "problems",
	                         problems, "changes", changes, "nproblems", (json_int_t)np,
	                         "breaking", (json_int_t)nbk, "complete", complete);
	if (data && r)
		json_object_set_new(data, "score", json_real(contract_report_score(r)));
	if (data && extra)
		json_object_set_new(data, "reason", json_string(extra));
	replace_with_error(m, mode_reasons[us->mode], b.s, data);
}

/* ---- a page --------------------------------------------------------------- */

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
		        us->mode == MODE_REPORT ? "" : ", the client gets an error");
		l->logged = 1;
	}
	if (us->mode == MODE_REPORT)
		return;
	hc->stats.replies_failed++;
	answer_failed(us, NULL, NULL, 0, cut_text(l->cut), m);
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

/* Before prev changes: a verdict kept on its bytes goes. */
static void prev_release(struct up_state *us)
{
	if (us->cache && !us->cache->bytes) {
		cache_free(us->cache);
		us->cache = NULL;
	}
}

/* prev[0..len) := raw[0..len), prev holding plen bytes of the previous
 * text: a text of the same length (a description edited in place) is
 * copied where it differs only. */
static void prev_update(char *prev, size_t plen, const char *raw, size_t len)
{
	size_t i = 0, j = len;
	if (plen == len) {
		while (i + 4096 <= len && memcmp(prev + i, raw + i, 4096) == 0)
			i += 4096;
		while (j >= i + 4096 && memcmp(prev + j - 4096, raw + j - 4096, 4096) == 0)
			j -= 4096;
	}
	memcpy(prev + i, raw + i, j - i);
}

static void memo_free(struct up_state *us)
{
	prev_release(us);
	contract_memo_free(us->memo);
	free(us->texts);
	free(us->spans);
	free(us->prev);
	free(us->prev_spans);
	us->memo = NULL;
	us->texts = NULL;
	us->spans = NULL;
	us->prev = NULL;
	us->prev_spans = NULL;
	us->prev_len = us->prev_cap = us->nprev = 0;
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
	/* Only a whole listing in one page, the kind the verdict cache keeps:
	 * pages of longer ones would push its bytes out of prev. */
	const json_t *tools = n == 1 && !orphan && !page_next_cursor(pages[0])
	                          ? page_tools(pages[0]) : NULL;
	if (!json_is_array(tools) || !m->result_raw || m->result_raw_len > HOOK_CONTRACT_CACHE_BYTES ||
	    json_array_size(tools) > CONTRACT_MAX_TOOLS || json_is_array(pages[0]))
		return contract_check(pages, n, opts);
	if (!us->memo) {
		us->memo = contract_memo_new();
		us->texts = malloc(CONTRACT_MAX_TOOLS * sizeof(*us->texts));
		us->spans = malloc(CONTRACT_MAX_TOOLS * sizeof(*us->spans));
		us->prev_spans = malloc(CONTRACT_MAX_TOOLS * sizeof(*us->prev_spans));
		if (!us->memo || !us->texts || !us->spans || !us->prev_spans) {
			memo_free(us);
			return contract_check(pages, n, opts);
		}
	}
	const char *raw = m->result_raw;
	long k = jparse_elements_since(raw, m->result_raw_len, "tools", us->spans, CONTRACT_MAX_TOOLS,
	                               us->prev, us->prev_len, us->prev_spans, us->nprev);
	us->nprev = 0;
	if (k < 0 || (size_t)k != json_array_size(tools))
		return contract_check(pages, n, opts);
	for (long i = 0; i < k; i++)
		us->texts[i] = (struct contract_text){us->spans[i].at, us->spans[i].len,
		                                      us->spans[i].same_as};
	struct contract_report *r = contract_check_memo(pages[0], us->texts, (size_t)k, opts,
	                                                us->memo);
	if (!r)
		return NULL; /* prev (nprev 0 now) and the memo may disagree: no hints next time */
	*checked = contract_memo_rechecked(us->memo);
	/* Keep this text for the next listing's skim (and the verdict cache). */
	prev_release(us);
	if (us->prev_cap < m->result_raw_len) {
		char *p = realloc(us->prev, m->result_raw_len);
		if (!p)
			return r;
		us->prev = p;
		us->prev_cap = m->result_raw_len;
	}
	prev_update(us->prev, us->prev_len, raw, m->result_raw_len);
	us->prev_len = m->result_raw_len;
	for (long i = 0; i < k; i++)
		us->prev_spans[i] = (struct jparse_elem){us->prev + (us->spans[i].at - raw),
		                                         us->spans[i].len, 0};
	us->nprev = (size_t)k;
	us->prev_now = 1;
	return r;
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
	struct contract_opts opts = {.era = l->era, .spec_only = us->spec_only};
	struct verdict v = {.action = "forwarded"};

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
	if (us->baseline_tools) {
		json_t *all = joined_tools(l->pages);
		d = all ? drift_diff(us->baseline_tools, all) : NULL;
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
	json_t *changes = relevant_changes(d, v.complete, &v.nbreaking);
	v.passed = contract_report_passed(r) && v.nbreaking == 0 && !v.unexamined;
	hc->stats.pages++;

	int over = 0;
	if (us->mode == MODE_FAIL && !v.passed) {
		v.action = "failed";
		answer_failed(us, r, d, v.complete,
		              v.unexamined ? "listing-too-long: more tools than mcpwarden checks" : NULL,
		              m);
		hc->stats.replies_failed++;
		over = !loop;
		if (!json_object_get(m->msg, "error"))
			e->cacheable = 0; /* out of memory: the reply went out unchanged */
	} else if (us->mode == MODE_FILTER && (loop || v.unexamined)) {
		/* Filtering cannot make a circular or unchecked listing whole. */
		v.action = "failed";
		answer_failed(us, r, NULL, v.complete,
		              loop ? NULL : "listing-too-long: more tools than mcpwarden checks", m);
		hc->stats.replies_failed++;
		if (!json_object_get(m->msg, "error"))
			e->cacheable = 0;
	} else if (us->mode == MODE_FILTER) {
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
		format_listing(us, l, r, &v, line, cap);
		*level = v.passed ? LOG_INFO : LOG_WARN;
		log_msg(*level, "#%llu %s", m->where->conn_id, line);
	}
	json_t *report = build_report(us, l, r, changes, &v);
	if (!report || !v.complete || loop)
		e->cacheable = 0;
	publish(hc, us, report);
	free(l->next_cursor);
	l->next_cursor = dup_str(next);
	contract_report_free(r);
	drift_report_free(d);
	/* Over: the last page, or a failure the client cannot page past. A cut
	 * listing stays, so a client paging in the loop keeps the verdict. */
	return !next || over;
}

/* ---- the verdict cache ---------------------------------------------------- */

static int same_era(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether m's page is the upstream's last one-page listing again. */
static int cache_hit(const struct up_state *us, const struct inspect_msg *m, const char *era)
{
	const struct verdict_cache *c = us->cache;
	return c && m->result_raw && m->result_raw_len == c->len && same_era(era, c->era) &&
	       memcmp(m->result_raw, c->bytes ? c->bytes : us->prev, c->len) == 0;
}

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

/* Does again what checking these bytes did last time. */
static void replay(struct hook_contract *hc, struct up_state *us, struct inspect_msg *m)
{
	struct verdict_cache *c = us->cache;
	char now[32];

	/* A listing would have been added and dropped: the same evictions. */
	listings_make_room(hc, NULL, 1, c->len);
	stats_add(&hc->stats, &c->delta);
	hc->stats.replayed++;
	if (c->line[0])
		log_msg(c->level, "#%llu %s", m->where->conn_id, c->line);
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
	if (c->error) {
		json_t *err = jparse_copy(c->error);
		if (err) {
			json_object_del(m->msg, "result");
			json_object_set_new(m->msg, "error", err);
			m->modified = 1;
			m->reason = mode_reasons[us->mode];
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
	struct verdict_cache *c = calloc(1, sizeof(*c));
	/* The memo kept these bytes already: share them (prev_release drops
	 * this verdict before they change). */
	int shared = us->prev_now && us->prev_len == m->result_raw_len;
	if (!c || (!shared && !(c->bytes = malloc(m->result_raw_len))) ||
	    (era && !(c->era = dup_str(era)))) {
		cache_free(c);
		return;
	}
	if (!shared)
		memcpy(c->bytes, m->result_raw, m->result_raw_len);
	c->len = m->result_raw_len;
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
			cache_free(c);
			return;
		}
	}
	cache_free(us->cache);
	us->cache = c;
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

	us->prev_now = 0;
	if (!cursor && cache_hit(us, m, era)) {
		replay(hc, us, m);
		return;
	}
	if (l) {
		listing_unlink(hc, l);
		listing_push_front(hc, l);
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
	if (l->bytes + bytes > HOOK_CONTRACT_MAX_BYTES) {
		l->cut = CUT_BYTES;
		page_of_cut_listing(hc, us, l, m);
		return;
	}
	/* A last page is checked and dropped before this call returns: a
	 * reference is enough. One more pages follow is kept past it. */
	int last = !page_next_cursor(result);
	json_t *page = last ? json_incref(result) : jparse_copy(result);
	if (!page || json_array_append_new(l->pages, page) < 0) {
		log_msg(LOG_ERROR, "contract: out of memory: tools/list forwarded unchecked");
		listing_remove(hc, l);
		return;
	}
	l->bytes += bytes;
	hc->bytes += bytes;
	listings_bound(hc, l);

	struct effect e = {.cacheable = !cursor && last && m->result_raw &&
	                                m->result_raw_len <= HOOK_CONTRACT_CACHE_BYTES};
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
		listing_remove(hc, l);
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
			if (hc->ups[i].mode != MODE_OFF)
				on_page(hc, i, m);
			break;
		}
	}
	if (hc->locked)
		pthread_mutex_unlock(&hc->lock);
	return INSPECT_FORWARD;
}

/* ---- setup ---------------------------------------------------------------- */

static void load_section(struct up_state *us, size_t i, char *err, size_t errlen, int *nerr)
{
	const json_t *c = us->conf->contract;
	const char *key;
	json_t *val;
	char where[64];

	snprintf(where, sizeof(where), "$.upstreams[%zu].contract", i);
	if (!c)
		return;
	if (!json_is_object(c)) {
		err_add(err, errlen, nerr, "%s: must be an object", where);
		return;
	}
	json_object_foreach((json_t *)(uintptr_t)c, key, val) {
		if (strcmp(key, "mode") == 0) {
			const char *s = json_string_value(val);
			size_t k = 0;
			while (s && k < 4 && strcmp(s, mode_names[k]) != 0)
				k++;
			if (!s || k == 4)
				err_add(err, errlen, nerr, "%s.mode: must be report, filter, fail or off",
				        where);
			else
				us->mode = (enum contract_mode)k;
		} else if (strcmp(key, "spec_only") == 0) {
			if (!json_is_boolean(val))
				err_add(err, errlen, nerr, "%s.spec_only: must be true or false", where);
			else
				us->spec_only = json_is_true(val);
		} else if (strcmp(key, "baseline") == 0) {
			const char *file = json_string_value(val);
			json_error_t jerr;
			if (!file || !*file) {
				err_add(err, errlen, nerr, "%s.baseline: must be a file name", where);
				continue;
			}
			us->baseline_file = file;
			us->baseline = json_load_file(file, 0, &jerr);
			if (!us->baseline) {
				if (jerr.line > 0)
					err_add(err, errlen, nerr, "%s.baseline: %s:%d:%d: %s", where, file,
					        jerr.line, jerr.column, jerr.text);
				else
					err_add(err, errlen, nerr, "%s.baseline: %s", where, jerr.text);
				continue;
			}
			us->baseline_tools = drift_tools_of(us->baseline);
			if (!us->baseline_tools)
				err_add(err, errlen, nerr,
				        "%s.baseline: %s holds no tool list ({\"tools\":[...]}, a tools/list "
				        "response or an array)",
				        where, file);
		} else {
			err_add(err, errlen, nerr, "%s.%s: unknown key", where, key);
		}
	}
}

/* The hook's state for cfg, every contract section parsed and every
 * baseline loaded; NULL with the errors in err. */
static struct hook_contract *hook_contract_new(const struct px_config *cfg, char *err,
                                               size_t errlen)
{
	int nerr = 0;

	if (err && errlen)
		err[0] = '\0';
	struct hook_contract *hc = calloc(1, sizeof(*hc));
	if (!hc || !(hc->ups = calloc(cfg->nups ? cfg->nups : 1, sizeof(*hc->ups)))) {
		free(hc);
		err_add(err, errlen, &nerr, "out of memory");
		return NULL;
	}
	hc->nups = cfg->nups;
	for (size_t i = 0; i < cfg->nups; i++) {
		hc->ups[i].conf = &cfg->ups[i];
		load_section(&hc->ups[i], i, err, errlen, &nerr);
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

int hook_contract_setup(struct px_ctx *ctx, char *err, size_t errlen)
{
	struct hook_contract *hc = hook_contract_new(ctx->cfg, err, errlen);
	if (!hc)
		return -1;
	hc->ctx = ctx;
	int slot = inspect_add(ctx->insp, "contract", contract_on_message, NULL, hc);
	if (slot < 0 || pthread_mutex_init(&hc->lock, NULL) != 0) {
		int nerr = 0;
		err_add(err, errlen, &nerr, "contract: too many message hooks");
		hook_contract_free(hc);
		return -1;
	}
	inspect_set_uninspected(ctx->insp, slot, contract_uninspected_ok);
	hc->locked = 1; /* taken by contract_on_message for tool listings only */
	for (size_t i = 0; i < hc->nups; i++) {
		const struct up_state *us = &hc->ups[i];
		if (us->mode != MODE_REPORT || us->baseline || us->spec_only)
			log_msg(LOG_INFO, "upstream %s: tool-list contract mode %s%s%s%s", us->conf->name,
			        mode_names[us->mode], us->spec_only ? ", spec rules only" : "",
			        us->baseline ? ", baseline " : "", us->baseline ? us->baseline_file : "");
	}
	ctx->proc->contract = hc;
	return 0;
}

void hook_contract_free(struct hook_contract *hc)
{
	if (!hc)
		return;
	while (hc->head)
		listing_remove(hc, hc->head);
	for (size_t i = 0; i < hc->nups; i++) {
		json_decref(hc->ups[i].baseline);
		json_decref(hc->ups[i].latest);
		memo_free(&hc->ups[i]); /* first: it may free a cache sharing its text */
		cache_free(hc->ups[i].cache);
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
			return hc->ups[i].mode != MODE_FILTER && hc->ups[i].mode != MODE_FAIL;
	return 1;
}

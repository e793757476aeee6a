/* hook_validate: see hook_validate.h.
 *
 * Why this file is long (~900 lines): the schema cache, the pairing of
 * results with their calls, the counters and the era answers all read one
 * struct vup per upstream; apart they would pass its internals around.
 *
 *   hv ─┬─ ups[i]   one per configured upstream: modes, then
 *       │   ├─ cur ──> snap: the listing it was built from (a reference,
 *       │   │          changes count), tools by name (open addressing),
 *       │   │          each tool's compiled schemas [input|output][dialect],
 *       │   │          compiled on first use and published with a CAS
 *       │   │          (several workers may race: the loser frees its own)
 *       │   └─ stats   tools seen (bounded), counts per code, last finding,
 *       │              the log rate limit; under stats_lock
 *       └─ pend     calls whose result must be checked, by (upstream,
 *                   session, id), for a result that reaches the hook
 *                   without its request (another stream): a ring, newest
 *                   first, the oldest overwritten
 *
 * Locks: vup.lock guards `cur` only (a pointer swap and a reference
 * taken); stats_lock the counters; pend_lock the ring. Validation runs
 * with none held, on a snapshot the caller holds a reference to: compiled
 * schemas are immutable once published (checks/jschema.h: thread-safe).
 * A snapshot is rebuilt when the tracker's `changes` for the upstream
 * moved (proxy/hooks/tools.h): a listing with other tools; the old one
 * goes when its last reader lets it go.
 */
#include "proxy/hooks/hook_validate.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/jschema.h"
#include "proxy/base/clock.h"
#include "proxy/base/hash.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/limits.h"
#include "proxy/base/log.h"
#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/hook_record.h"
#include "proxy/hooks/inspect.h"
#include "proxy/hooks/tools.h"

_Static_assert(VALIDATE_OFF == 0 && VALIDATE_REPORT == 1 && VALIDATE_FAIL == 2,
               "proxy/config.h keeps validation modes as these ints");

/* Finding codes (hook_validate.h), in the order the counters keep them. */
enum vcode {
	VC_ARGS_INVALID, VC_RESULT_INVALID, VC_SC_MISSING, VC_TOOL_UNKNOWN, VC_NO_LISTING,
	VC_SCHEMA_UNUSABLE, VC_LIMIT, VC_N
};
static const char *const names[VC_N] = {
	"arguments-invalid", "result-invalid", "structured-content-missing", "tool-unknown",
	"no-listing", "schema-unusable", "validation-limit",
};

enum vkind { VK_ARGS = 0, VK_RESULT };
static const char *const kind_names[2] = {"arguments", "result"};

/* ---- compiled schemas, per listing ------------------------------------------ */

/* One schema as compiled for one dialect: s, or NULL with why (unusable). */
struct vcomp {
	struct jschema *s;        /* owned */
	struct jschema_error why; /* when s is NULL */
};

struct vtool {
	const char *name;         /* borrowed: the snapshot's listing */
	const json_t *schema[2];  /* borrowed: inputSchema, outputSchema (or NULL) */
	_Atomic(struct vcomp *) comp[2][2]; /* owned: [kind][dialect], NULL: not yet */
};

struct snap {
	atomic_uint refs;
	uint64_t changes;
	uint64_t gen;             /* vup.gen when last known current (vup.lock) */
	json_t *listing;          /* owned reference */
	struct vtool *tools;      /* owned array */
	size_t ntools;
	int any_output;           /* a tool declares an outputSchema */
	uint32_t *slots;          /* owned: 1 + index into tools, 0 empty */
	size_t cap;               /* a power of two */
};

/* ---- counters per tool -------------------------------------------------------- */

struct vstat {
	char *name;               /* owned; NULL: free slot */
	uint64_t calls, args_invalid, results, results_invalid;
	uint64_t count[VC_N];
	uint64_t last_log_us[VC_N];
	uint64_t suppressed[VC_N];
	json_t *last;             /* owned: the last finding, with "time" */
};

struct vup {
	const char *name;         /* borrowed: the configuration's */
	int args, results, formats;
	pthread_mutex_t lock;     /* guards cur */
	struct snap *cur;         /* owned reference, or NULL */
	/* Bumped (atomic) by every tools/list page and list_changed the
	 * tracker tells of (tools_subscribe): while it has not moved, cur is
	 * what the tracker holds, without asking it. */
	uint64_t gen;
	pthread_mutex_t stats_lock;
	struct vstat *stats;      /* owned: stats_cap slots, open addressing */
	size_t stats_cap, nstats;
	struct vstat other;       /* tools past LIMIT_VALIDATE_TOOLS */
};

/* A call waiting for its result, for results without their request. */
struct vpend {
	int used;
	size_t up;
	char session[LIMIT_VALIDATE_KEY_BYTES];
	char id[LIMIT_VALIDATE_KEY_BYTES];
	char tool[LIMIT_VALIDATE_KEY_BYTES];
};

struct hook_validate {
	struct tools *tools;      /* borrowed: ctx->proc->tools */
	int unsubscribed;         /* tools_subscribe failed: see snap_get */
	struct vup *ups;          /* owned array */
	size_t nups;
	pthread_mutex_t pend_lock;
	struct vpend *pend;       /* owned ring of LIMIT_VALIDATE_PENDING */
	size_t pend_next;
	/* hook_validate_stats, atomics */
	uint64_t calls_checked, results_checked, compiled, compile_failed, findings,
	        logs_suppressed;
};

#define ST_ADD(hv, f, n) __atomic_add_fetch(&(hv)->f, (n), __ATOMIC_RELAXED)

static void comp_free(struct vcomp *c)
{
	if (c) {
		jschema_free(c->s);
		free(c);
	}
}

static void snap_unref(struct snap *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->ntools; i++)
		for (int k = 0; k < 2; k++)
			for (int d = 0; d < 2; d++)
				comp_free(atomic_load(&s->tools[i].comp[k][d]));
	free(s->tools);
	free(s->slots);
	json_decref(s->listing);
	free(s);
}

/* A snapshot of listing (a reference is taken), its tools indexed by
 * name; nothing compiled yet. NULL when out of memory. */
static struct snap *snap_new(json_t *listing, uint64_t changes)
{
	struct snap *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	size_t n = json_object_size(listing), cap = 8;
	while (cap < 2 * n)
		cap *= 2;
	s->tools = calloc(n ? n : 1, sizeof(*s->tools));
	s->slots = calloc(cap, sizeof(*s->slots));
	if (!s->tools || !s->slots) {
		free(s->tools);
		free(s->slots);
		free(s);
		return NULL;
	}
	atomic_init(&s->refs, 1);
	s->changes = changes;
	s->listing = json_incref(listing);
	s->cap = cap;
	const char *key;
	json_t *tool;
	json_object_foreach(listing, key, tool) {
		struct vtool *t = &s->tools[s->ntools];
		t->name = key;
		const json_t *in = json_object_get(tool, "inputSchema");
		const json_t *out = json_object_get(tool, "outputSchema");
		/* A schema is an object (or, in the schema's own terms, a
		 * boolean); anything else has nothing to validate against. */
		t->schema[VK_ARGS] = json_is_object(in) || json_is_boolean(in) ? in : NULL;
		t->schema[VK_RESULT] = json_is_object(out) || json_is_boolean(out) ? out : NULL;
		s->any_output |= t->schema[VK_RESULT] != NULL;
		for (int k = 0; k < 2; k++)
			for (int d = 0; d < 2; d++)
				atomic_init(&t->comp[k][d], NULL);
		size_t i = hash_fnv1a32_str(HASH_FNV1A32_INIT, key) & (cap - 1);
		while (s->slots[i])
			i = (i + 1) & (cap - 1);
		s->slots[i] = (uint32_t)(++s->ntools);
	}
	return s;
}

static struct vtool *snap_find(const struct snap *s, const char *name)
{
	size_t i = hash_fnv1a32_str(HASH_FNV1A32_INIT, name) & (s->cap - 1);
	for (; s->slots[i]; i = (i + 1) & (s->cap - 1)) {
		struct vtool *t = &s->tools[s->slots[i] - 1];
		if (strcmp(t->name, name) == 0)
			return t;
	}
	return NULL;
}

/* The upstream's snapshot for its last complete listing (a reference:
 * snap_unref it), rebuilt when the listing changed; NULL when the
 * upstream has listed nothing yet (or memory ran out). */
static struct snap *snap_get(struct hook_validate *hv, struct vup *u)
{
	/* The common case: no page since cur was known current. */
	uint64_t gen = __atomic_load_n(&u->gen, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&u->lock);
	struct snap *s = u->cur;
	if (s && s->gen == gen && !hv->unsubscribed) {
		atomic_fetch_add(&s->refs, 1);
		pthread_mutex_unlock(&u->lock);
		return s;
	}
	pthread_mutex_unlock(&u->lock);
	uint64_t changes = 0;
	json_t *listing = tools_listing(hv->tools, u->name, &changes);
	if (!listing)
		return NULL;
	pthread_mutex_lock(&u->lock);
	s = u->cur;
	if (s && s->changes == changes) {
		/* A page came, the tools did not change: cur stays. */
		s->gen = gen;
		atomic_fetch_add(&s->refs, 1);
		pthread_mutex_unlock(&u->lock);
		json_decref(listing);
		return s;
	}
	pthread_mutex_unlock(&u->lock);
	/* Built outside the lock: it indexes every tool (a 1,000-tool
	 * listing is tens of microseconds), nothing is compiled. */
	struct snap *fresh = snap_new(listing, changes);
	json_decref(listing);
	if (!fresh)
		return NULL;
	fresh->gen = gen;
	pthread_mutex_lock(&u->lock);
	if (u->cur && u->cur->changes == changes) {
		/* Another worker was first: its snapshot, with what it compiled. */
		snap_unref(fresh);
		fresh = u->cur;
	} else {
		struct snap *old = u->cur;
		u->cur = fresh;
		snap_unref(old);
	}
	atomic_fetch_add(&fresh->refs, 1);
	pthread_mutex_unlock(&u->lock);
	return fresh;
}

/* The tracker's news (tools_subscribe): the upstream's gen moves. */
static void gen_bump(void *arg, const char *upstream)
{
	struct hook_validate *hv = arg;
	for (size_t i = 0; upstream && i < hv->nups; i++)
		if (strcmp(hv->ups[i].name, upstream) == 0)
			__atomic_add_fetch(&hv->ups[i].gen, 1, __ATOMIC_RELEASE);
}

static void on_page(void *arg, const char *upstream, const json_t *tools)
{
	(void)tools;
	gen_bump(arg, upstream);
}

static const struct tools_events tracker_events = {on_page, gen_bump};

/* t's schema of kind k compiled for dialect d: compiled on first use and
 * published for every worker; a schema that does not compile is kept as
 * such (its why), so it is not compiled again with every call. NULL only
 * when out of memory. */
static const struct vcomp *tool_schema(struct hook_validate *hv, const struct vup *u,
                                       struct vtool *t, enum vkind k, enum jschema_dialect d)
{
	struct vcomp *c = atomic_load_explicit(&t->comp[k][d], memory_order_acquire);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->s = jschema_compile(t->schema[k], d, u->formats ? JSCHEMA_FORMAT_ASSERT : 0, &c->why);
	struct vcomp *expected = NULL;
	if (!atomic_compare_exchange_strong_explicit(&t->comp[k][d], &expected, c,
	                                             memory_order_acq_rel, memory_order_acquire)) {
		comp_free(c);
		return expected;
	}
	ST_ADD(hv, compiled, 1);
	if (!c->s)
		ST_ADD(hv, compile_failed, 1);
	return c;
}

/* ---- findings ---------------------------------------------------------------- */

/* Whether p[0..len) is one valid UTF-8 character (overlong forms and
 * surrogates refused, as jansson refuses them). */
static int utf8_char_ok(const unsigned char *p, size_t len)
{
	json_t *j = json_stringn((const char *)p, len);
	json_decref(j);
	return j != NULL;
}

/* A JSON string of s that is valid UTF-8 whatever s holds: a finding's
 * pointers and message are cut at a byte bound (checks/jschema.h), which
 * may split a character, and a property name is the client's bytes. Bytes
 * that do not form a character become '?'. */
static json_t *str_utf8(const char *s)
{
	if (!s)
		return json_string("");
	json_t *j = json_string(s);
	if (j)
		return j;
	char buf[LIMIT_JSCHEMA_PTR_BYTES + LIMIT_JSCHEMA_MSG_BYTES + 128];
	size_t n = 0;
	const unsigned char *p = (const unsigned char *)s;
	while (*p && n + 1 < sizeof(buf)) {
		size_t len = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3
		           : (*p >> 3) == 30 ? 4 : 0;
		size_t k = 1;
		while (len && k < len && (p[k] & 0xC0) == 0x80)
			k++;
		if (len && k == len && n + len < sizeof(buf) && utf8_char_ok(p, len)) {
			memcpy(buf + n, p, len);
			n += len;
			p += len;
			continue;
		}
		buf[n++] = '?';
		p++;
	}
	buf[n] = '\0';
	return json_string(buf);
}

static json_t *finding_new(enum vcode code, enum vkind kind, const char *instance,
                           const char *schema, const char *keyword, const char *message)
{
	return json_pack("{s:s,s:s,s:o,s:o,s:o,s:o}", "code", names[code], "kind", kind_names[kind],
	                 "instance", str_utf8(instance), "schema", str_utf8(schema), "keyword",
	                 str_utf8(keyword), "message", str_utf8(message));
}

static json_t *finding_of(enum vcode code, enum vkind kind, const struct jschema_error *e)
{
	return finding_new(code, kind, e->instance_ptr, e->schema_ptr, e->keyword, e->message);
}

/* The tool's counters (a slot of u->stats, or u->other past the bound);
 * stats_lock held. */
static struct vstat *stat_of(struct vup *u, const char *tool)
{
	if (!u->stats) {
		u->stats_cap = 64;
		u->stats = calloc(u->stats_cap, sizeof(*u->stats));
		if (!u->stats) {
			u->stats_cap = 0;
			return &u->other;
		}
	}
	if (2 * (u->nstats + 1) > u->stats_cap && u->nstats < LIMIT_VALIDATE_TOOLS) {
		size_t cap = u->stats_cap * 2;
		struct vstat *ns = calloc(cap, sizeof(*ns));
		if (ns) {
			for (size_t i = 0; i < u->stats_cap; i++) {
				if (!u->stats[i].name)
					continue;
				size_t j = hash_fnv1a32_str(HASH_FNV1A32_INIT, u->stats[i].name) & (cap - 1);
				while (ns[j].name)
					j = (j + 1) & (cap - 1);
				ns[j] = u->stats[i];
			}
			free(u->stats);
			u->stats = ns;
			u->stats_cap = cap;
		}
	}
	size_t i = hash_fnv1a32_str(HASH_FNV1A32_INIT, tool) & (u->stats_cap - 1);
	for (; u->stats[i].name; i = (i + 1) & (u->stats_cap - 1))
		if (strcmp(u->stats[i].name, tool) == 0)
			return &u->stats[i];
	if (u->nstats >= LIMIT_VALIDATE_TOOLS || 2 * (u->nstats + 1) > u->stats_cap)
		return &u->other;
	u->stats[i].name = strndup(tool, LIMIT_VALIDATE_KEY_BYTES - 1);
	if (!u->stats[i].name)
		return &u->other;
	u->nstats++;
	return &u->stats[i];
}

/* What one message's validation found, before it is published. */
struct vfound {
	json_t *notes;            /* owned array, or NULL */
	size_t n;                 /* findings (all of them, listed or not) */
	uint64_t count[VC_N];
	const char *first_text;   /* for the log line: into notes */
};

static void found_add(struct hook_validate *hv, struct vfound *f, enum vcode code, json_t *note)
{
	f->count[code]++;
	f->n++;
	if (!note)
		return;
	if (!f->notes)
		f->notes = json_array();
	if (!f->notes || json_array_size(f->notes) >= LIMIT_VALIDATE_FINDINGS) {
		json_decref(note);
		return;
	}
	json_array_append_new(f->notes, note);
	ST_ADD(hv, findings, 1);
}

/* The findings of one message: counted per tool and code, the last kept
 * for the summary, one log line per code and tool per interval. */
static void publish(struct hook_validate *hv, struct vup *u, const char *tool, enum vkind kind,
                    int valid_known, const struct vfound *f, unsigned long long conn_id)
{
	uint64_t now = clock_mono_us();
	struct {
		enum vcode code;
		const json_t *note;
		uint64_t suppressed;
	} logs[VC_N];
	size_t nlogs = 0;

	pthread_mutex_lock(&u->stats_lock);
	struct vstat *st = stat_of(u, tool ? tool : "");
	if (kind == VK_ARGS) {
		st->calls++;
		if (valid_known && f->count[VC_ARGS_INVALID])
			st->args_invalid++;
	} else {
		st->results++;
		if (f->count[VC_RESULT_INVALID] || f->count[VC_SC_MISSING])
			st->results_invalid++;
	}
	for (int c = 0; c < VC_N; c++) {
		if (!f->count[c])
			continue;
		st->count[c] += f->count[c];
		const json_t *note = NULL;
		for (size_t i = 0; f->notes && i < json_array_size(f->notes); i++) {
			const json_t *o = json_array_get(f->notes, i);
			if (strcmp(json_string_value(json_object_get(o, "code")), names[c]) == 0) {
				note = o;
				break;
			}
		}
		if (note) {
			json_t *last = json_deep_copy(note);
			char t[40];
			hook_record_time(clock_real_us(), t, sizeof(t));
			if (last) {
				json_object_set_new(last, "time", json_string(t));
				json_decref(st->last);
				st->last = last;
			}
		}
		if (st->last_log_us[c] && now - st->last_log_us[c] < LIMIT_VALIDATE_LOG_INTERVAL_US) {
			st->suppressed[c]++;
			ST_ADD(hv, logs_suppressed, 1);
			continue;
		}
		st->last_log_us[c] = now;
		logs[nlogs].code = (enum vcode)c;
		logs[nlogs].note = note ? json_incref((json_t *)(uintptr_t)note) : NULL;
		logs[nlogs].suppressed = st->suppressed[c];
		st->suppressed[c] = 0;
		nlogs++;
	}
	pthread_mutex_unlock(&u->stats_lock);
	/* Logged outside the lock (stderr may block a moment). */
	for (size_t i = 0; i < nlogs; i++) {
		const json_t *n = logs[i].note;
		const char *inst = n ? json_string_value(json_object_get(n, "instance")) : "";
		const char *msg = n ? json_string_value(json_object_get(n, "message")) : "";
		char more[64] = "";
		if (logs[i].suppressed)
			snprintf(more, sizeof(more), " (%llu more since the last line)",
			         (unsigned long long)logs[i].suppressed);
		log_msg(LOG_WARN, "#%llu validate: upstream %s tool %s: %s %s%s%s%s", conn_id, u->name,
		        tool ? tool : "?", names[logs[i].code], inst && *inst ? inst : "",
		        inst && *inst ? ": " : "", msg ? msg : "", more);
		json_decref((json_t *)(uintptr_t)n);
	}
}

/* Hands the findings to the observers (m->notes, freed by inspect). */
static void attach(struct inspect_msg *m, struct vfound *f)
{
	if (!f->notes)
		return;
	if (!m->notes) {
		m->notes = f->notes;
	} else {
		json_array_extend(m->notes, f->notes);
		json_decref(f->notes);
	}
	f->notes = NULL;
}

/* Validates instance against t's compiled schema c; violations and a
 * limit go into f as code `bad`. Returns 1 valid, 0 invalid, -1 undecided. */
static int check_instance(struct hook_validate *hv, struct vfound *f, const struct vcomp *c,
                          const json_t *instance, enum vkind kind, enum vcode bad)
{
	/* Most instances are valid: the quiet walk first, the one that lists
	 * violations only for those that are not. */
	if (jschema_valid(c->s, instance) == 1)
		return 1;
	struct jschema_error errs[LIMIT_VALIDATE_FINDINGS];
	int n = jschema_validate(c->s, instance, errs, LIMIT_VALIDATE_FINDINGS);
	if (n < 0) {
		found_add(hv, f, VC_LIMIT, finding_of(VC_LIMIT, kind, &errs[0]));
		return -1;
	}
	size_t listed = (size_t)n < LIMIT_VALIDATE_FINDINGS ? (size_t)n : LIMIT_VALIDATE_FINDINGS;
	for (size_t i = 0; i < listed; i++)
		found_add(hv, f, bad, finding_of(bad, kind, &errs[i]));
	for (size_t i = listed; i < (size_t)n; i++)
		found_add(hv, f, bad, NULL); /* counted, not listed */
	return n == 0;
}

/* The compiled schema, or a schema-unusable finding (NULL). */
static const struct vcomp *usable(struct hook_validate *hv, struct vfound *f, const struct vup *u,
                                  struct vtool *t, enum vkind k, enum jschema_dialect d)
{
	const struct vcomp *c = tool_schema(hv, u, t, k, d);
	if (c && c->s)
		return c;
	char msg[LIMIT_JSCHEMA_MSG_BYTES + 64];
	snprintf(msg, sizeof(msg), "%s does not compile (%s): %s; nothing validated",
	         k == VK_ARGS ? "inputSchema" : "outputSchema",
	         c ? jschema_code_str(c->why.code) : "out of memory", c ? c->why.message : "");
	found_add(hv, f, VC_SCHEMA_UNUSABLE,
	          finding_new(VC_SCHEMA_UNUSABLE, k, "", c ? c->why.schema_ptr : "",
	                      c ? c->why.keyword : "", msg));
	return NULL;
}

/* ---- answers -------------------------------------------------------------------- */

/* Whether the request's protocol version answers input validation
 * failures as a tool result (2025-11-25 on, SEP-1303); dates compare as
 * strings. No version known: the earlier rule (a JSON-RPC error). */
static int era_tool_result(const struct inspect_where *w)
{
	const char *p = w ? w->protocol : NULL;
	return p && strlen(p) == 10 && strcmp(p, "2025-11-25") >= 0;
}

/* "Invalid arguments for tool T: /a: must be ...; /b: ..." (the first
 * ones), into buf. */
static void violations_text(const char *lead, const char *tool, const json_t *notes, size_t n,
                            char *buf, size_t cap)
{
	int w = snprintf(buf, cap, "%s %s:", lead, tool);
	size_t used = w > 0 && (size_t)w < cap ? (size_t)w : cap - 1;
	for (size_t i = 0; i < json_array_size(notes) && used + 1 < cap; i++) {
		const json_t *o = json_array_get(notes, i);
		const char *inst = json_string_value(json_object_get(o, "instance"));
		w = snprintf(buf + used, cap - used, "%s %s%s%s", i ? ";" : "",
		             inst && *inst ? inst : "", inst && *inst ? ": " : "",
		             json_string_value(json_object_get(o, "message")));
		used = w > 0 && used + (size_t)w < cap ? used + (size_t)w : cap - 1;
	}
	if (n > json_array_size(notes) && used + 1 < cap)
		snprintf(buf + used, cap - used, " (and %zu more)", n - json_array_size(notes));
}

/* The answer to a call refused in arguments: fail (owned, or NULL). */
static json_t *args_answer(const struct inspect_msg *m, const char *tool, const json_t *notes,
                           size_t n)
{
	char text[2048];
	const json_t *id = jrpc_id(m->msg);
	if (era_tool_result(m->where)) {
		/* A tool result the model can read and correct itself by: one
		 * text item per violation. */
		json_t *content = json_array();
		violations_text("Invalid arguments for tool", tool, NULL, 0, text, sizeof(text));
		json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text", "text", text));
		for (size_t i = 0; i < json_array_size(notes); i++) {
			const json_t *o = json_array_get(notes, i);
			const char *inst = json_string_value(json_object_get(o, "instance"));
			snprintf(text, sizeof(text), "%s: %s", inst && *inst ? inst : "(arguments)",
			         json_string_value(json_object_get(o, "message")));
			json_array_append_new(content,
			                      json_pack("{s:s,s:s}", "type", "text", "text", text));
		}
		json_t *result = json_pack("{s:o,s:b}", "content", content, "isError", 1);
		if (result && m->where && m->where->era && strcmp(m->where->era, "2026") == 0)
			json_object_set_new(result, "resultType", json_string("complete"));
		return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
		                 "result", result);
	}
	violations_text("Invalid arguments for tool", tool, notes, n, text, sizeof(text));
	return jrpc_error_new(id, -32602, text, json_pack("{s:O}", "violations", notes));
}

/* m's result replaced by the -32004 error naming the violations (results:
 * fail): never a rewritten result. */
static void result_replace(struct inspect_msg *m, const char *tool, const json_t *notes, size_t n)
{
	char text[2048];
	violations_text("Result does not match the outputSchema of tool", tool, notes, n, text,
	                sizeof(text));
	json_t *err = json_pack("{s:i,s:s,s:{s:O}}", "code", HOOK_VALIDATE_RESULT_CODE, "message",
	                        text, "data", "violations", notes);
	if (!err)
		return;
	json_object_del(m->msg, "result");
	json_object_set_new(m->msg, "error", err);
	m->modified = 1;
	m->reason = "validate:result";
}

/* ---- pairing results with calls ------------------------------------------------ */

static void id_key(const json_t *id, char *buf, size_t cap)
{
	if (json_is_integer(id))
		snprintf(buf, cap, "i%lld", (long long)json_integer_value(id));
	else if (json_is_string(id))
		snprintf(buf, cap, "s%s", json_string_value(id));
	else
		snprintf(buf, cap, "-");
}

/* Whether a call's answer may come without its request: a legacy SSE
 * client (answers on its GET stream) or a legacy upstream (answers on the
 * proxy's stream to it). Only those calls are remembered: a Streamable
 * exchange carries its request with its answers. */
static int out_of_band(const struct inspect_where *w)
{
	return w && ((w->client_transport && strcmp(w->client_transport, "sse") == 0) ||
	             (w->upstream_transport && strcmp(w->upstream_transport, "sse") == 0));
}

static void pend_put(struct hook_validate *hv, size_t up, const struct inspect_msg *m,
                     const char *tool)
{
	pthread_mutex_lock(&hv->pend_lock);
	struct vpend *p = &hv->pend[hv->pend_next];
	hv->pend_next = (hv->pend_next + 1) % LIMIT_VALIDATE_PENDING;
	p->used = 1;
	p->up = up;
	snprintf(p->session, sizeof(p->session), "%s",
	         m->where && m->where->session_id ? m->where->session_id : "");
	id_key(jrpc_id(m->msg), p->id, sizeof(p->id));
	snprintf(p->tool, sizeof(p->tool), "%s", tool);
	pthread_mutex_unlock(&hv->pend_lock);
}

/* The tool of the call a result without its request answers, into tool
 * (the entry is taken); 0, or -1 when no such call is waiting. */
static int pend_take(struct hook_validate *hv, size_t up, const struct inspect_msg *m,
                     char *tool, size_t cap)
{
	char id[LIMIT_VALIDATE_KEY_BYTES];
	const char *sess = m->where && m->where->session_id ? m->where->session_id : "";
	id_key(jrpc_id(m->msg), id, sizeof(id));
	int found = -1;
	pthread_mutex_lock(&hv->pend_lock);
	for (size_t k = 0; k < LIMIT_VALIDATE_PENDING; k++) {
		/* newest first */
		size_t i = (hv->pend_next + LIMIT_VALIDATE_PENDING - 1 - k) % LIMIT_VALIDATE_PENDING;
		struct vpend *p = &hv->pend[i];
		if (!p->used || p->up != up || strcmp(p->id, id) != 0 ||
		    strncmp(p->session, sess, sizeof(p->session) - 1) != 0)
			continue;
		snprintf(tool, cap, "%s", p->tool);
		p->used = 0;
		found = 0;
		break;
	}
	pthread_mutex_unlock(&hv->pend_lock);
	return found;
}

/* ---- the hook ------------------------------------------------------------------- */

static struct vup *up_of(struct hook_validate *hv, const struct inspect_msg *m, size_t *idx)
{
	const char *name = m->where ? m->where->upstream : NULL;
	for (size_t i = 0; name && i < hv->nups; i++)
		if (strcmp(hv->ups[i].name, name) == 0) {
			*idx = i;
			return &hv->ups[i];
		}
	return NULL;
}

static enum jschema_dialect dialect_of(const struct inspect_msg *m)
{
	return jschema_dialect_for_era(m->where ? m->where->protocol : NULL);
}

static enum inspect_verdict on_call(struct hook_validate *hv, struct vup *u, size_t idx,
                                    struct inspect_msg *m)
{
	const char *tool = m->tool;
	struct vfound f = {0};
	int valid = -1;
	struct snap *s = snap_get(hv, u);
	struct vtool *t = s && tool ? snap_find(s, tool) : NULL;
	char msg[LIMIT_VALIDATE_KEY_BYTES + 96];

	if (u->args == VALIDATE_OFF) {
		/* results only: the call is remembered, not judged */
	} else if (ST_ADD(hv, calls_checked, 1), !s) {
		found_add(hv, &f, VC_NO_LISTING,
		          finding_new(VC_NO_LISTING, VK_ARGS, "", "", "",
		                      "a call before the upstream listed its tools: not validated"));
	} else if (!t) {
		snprintf(msg, sizeof(msg), "tool %.*s is not in the upstream's last listing",
		         LIMIT_VALIDATE_KEY_BYTES, tool ? tool : "(no name)");
		found_add(hv, &f, VC_TOOL_UNKNOWN, finding_new(VC_TOOL_UNKNOWN, VK_ARGS, "", "", "", msg));
	} else if (t->schema[VK_ARGS]) {
		const struct vcomp *c = usable(hv, &f, u, t, VK_ARGS, dialect_of(m));
		if (c) {
			/* Absent arguments are an empty object (the SDKs send none
			 * for a tool without parameters). */
			json_t *args = json_object_get(m->params, "arguments");
			json_t *empty = args ? NULL : json_object();
			valid = check_instance(hv, &f, c, args ? args : empty, VK_ARGS,
			                       VC_ARGS_INVALID);
			json_decref(empty);
		}
	}
	/* A result to check later: remember the call for a reply that comes
	 * without its request. */
	if (t && t->schema[VK_RESULT] && u->results != VALIDATE_OFF && out_of_band(m->where))
		pend_put(hv, idx, m, tool);
	snap_unref(s);
	enum inspect_verdict v = INSPECT_FORWARD;
	if (u->args != VALIDATE_OFF) {
		publish(hv, u, tool, VK_ARGS, valid >= 0, &f, m->where ? m->where->conn_id : 0);
		if (u->args == VALIDATE_FAIL && valid == 0 && f.notes) {
			m->answer = args_answer(m, tool, f.notes, f.count[VC_ARGS_INVALID]);
			if (m->answer) {
				m->reason = "validate:arguments";
				v = INSPECT_ANSWER;
			}
		}
	}
	attach(m, &f);
	json_decref(f.notes);
	return v;
}

static void on_result(struct hook_validate *hv, struct vup *u, size_t idx,
                      struct inspect_msg *m)
{
	char tool_buf[LIMIT_VALIDATE_KEY_BYTES];
	const char *tool = NULL;
	if (m->request && (!m->request_method || strcmp(m->request_method, "tools/call") != 0))
		return;
	struct snap *s = snap_get(hv, u);
	/* Most listings declare no outputSchema at all: nothing to look up. */
	if (!s || (!s->any_output && m->request)) {
		snap_unref(s);
		return;
	}
	if (m->request) {
		tool = jrpc_tool_name(m->request);
		if (out_of_band(m->where)) /* it came with its request after all */
			(void)pend_take(hv, idx, m, tool_buf, sizeof(tool_buf));
	} else if (pend_take(hv, idx, m, tool_buf, sizeof(tool_buf)) == 0) {
		tool = tool_buf;
	}
	const json_t *result = json_object_get(m->msg, "result");
	struct vtool *t = tool ? snap_find(s, tool) : NULL;
	if (!t || !t->schema[VK_RESULT] || !json_is_object(result)) {
		snap_unref(s);
		return;
	}
	ST_ADD(hv, results_checked, 1);
	struct vfound f = {0};
	int valid = 1;
	if (!json_is_true(json_object_get(result, "isError"))) {
		/* isError results are exempt: an error says nothing of the shape
		 * a success promises, and holding it to one masks the error. */
		const json_t *sc = json_object_get(result, "structuredContent");
		if (!sc) {
			found_add(hv, &f, VC_SC_MISSING,
			          finding_new(VC_SC_MISSING, VK_RESULT, "", "", "",
			                      "the tool declares an outputSchema but the result has no "
			                      "structuredContent"));
			valid = 0;
		} else {
			const struct vcomp *c = usable(hv, &f, u, t, VK_RESULT, dialect_of(m));
			valid = c ? check_instance(hv, &f, c, sc, VK_RESULT, VC_RESULT_INVALID) : -1;
		}
	}
	snap_unref(s);
	publish(hv, u, tool, VK_RESULT, valid >= 0, &f, m->where ? m->where->conn_id : 0);
	if (u->results == VALIDATE_FAIL && valid == 0 && f.notes)
		result_replace(m, tool, f.notes, f.count[VC_RESULT_INVALID] + f.count[VC_SC_MISSING]);
	attach(m, &f);
	json_decref(f.notes);
}

static enum inspect_verdict on_message(void *arg, struct inspect_msg *m)
{
	struct hook_validate *hv = arg;
	size_t idx = 0;

	if (m->dir == INSPECT_FROM_CLIENT) {
		/* (the first byte first: most client messages are calls) */
		if (m->kind != JRPC_REQUEST || !m->method || m->method[0] != 't' ||
		    strcmp(m->method, "tools/call") != 0)
			return INSPECT_FORWARD;
		struct vup *u = up_of(hv, m, &idx);
		if (!u || (u->args == VALIDATE_OFF && u->results == VALIDATE_OFF))
			return INSPECT_FORWARD;
		return on_call(hv, u, idx, m);
	}
	if (m->kind != JRPC_RESULT && m->kind != JRPC_ERROR)
		return INSPECT_FORWARD;
	if (m->request && (!m->request_method || m->request_method[0] != 't'))
		return INSPECT_FORWARD;
	struct vup *u = up_of(hv, m, &idx);
	if (!u || u->results == VALIDATE_OFF)
		return INSPECT_FORWARD;
	if (m->kind == JRPC_ERROR) {
		/* An error answers the call: nothing to check, the pairing goes. */
		char tool[LIMIT_VALIDATE_KEY_BYTES];
		if (out_of_band(m->where))
			(void)pend_take(hv, idx, m, tool, sizeof(tool));
		return INSPECT_FORWARD;
	}
	on_result(hv, u, idx, m);
	return INSPECT_FORWARD;
}

/* inspect_tree_fn (issue 20): the tree only of a message this hook will
 * read past its envelope: a call's arguments (transports ask about
 * replies only, today), a result it validates, or one it pairs with its
 * call by the id (out of band). A result without an outputSchema, an
 * error, anything but a tools/call's answer: read from the index. */
static int needs_tree(void *arg, const struct inspect_msg *m)
{
	struct hook_validate *hv = arg;
	size_t idx = 0;

	if (m->dir == INSPECT_FROM_CLIENT)
		return m->kind == JRPC_REQUEST && m->method && strcmp(m->method, "tools/call") == 0;
	if (m->kind != JRPC_RESULT && m->kind != JRPC_ERROR)
		return 0;
	if (m->request && (!m->request_method || strcmp(m->request_method, "tools/call") != 0))
		return 0;
	struct vup *u = up_of(hv, m, &idx);
	if (!u || u->results == VALIDATE_OFF)
		return 0;
	if (!m->request || out_of_band(m->where))
		return 1;
	if (m->kind == JRPC_ERROR)
		return 0;
	struct snap *s = snap_get(hv, u);
	const char *tool = s && s->any_output ? jrpc_tool_name(m->request) : NULL;
	const struct vtool *t = tool ? snap_find(s, tool) : NULL;
	int need = t && t->schema[VK_RESULT];
	snap_unref(s);
	return need;
}

/* inspect_listing_may_fn (issue 20): a listing is no call's result,
 * on_result leaves it alone; an unchanged one may pass unparsed. */
static int listing_may(void *arg, const struct inspect_listing *l)
{
	(void)arg;
	(void)l;
	return 1;
}

/* ---- set-up and readers ------------------------------------------------------- */

static void vstat_clear(struct vstat *st)
{
	free(st->name);
	json_decref(st->last);
}

void hook_validate_free(struct hook_validate *hv)
{
	if (!hv)
		return;
	if (!hv->unsubscribed)
		tools_unsubscribe(hv->tools, hv);
	for (size_t i = 0; i < hv->nups; i++) {
		struct vup *u = &hv->ups[i];
		snap_unref(u->cur);
		for (size_t k = 0; k < u->stats_cap; k++)
			vstat_clear(&u->stats[k]);
		free(u->stats);
		vstat_clear(&u->other);
		pthread_mutex_destroy(&u->lock);
		pthread_mutex_destroy(&u->stats_lock);
	}
	pthread_mutex_destroy(&hv->pend_lock);
	free(hv->pend);
	free(hv->ups);
	free(hv);
}

int hook_validate_setup(struct px_ctx *ctx, char *err, size_t errlen)
{
	const struct px_config *cfg = ctx->cfg;
	struct hook_validate *hv = calloc(1, sizeof(*hv));
	if (hv) {
		hv->ups = calloc(cfg->nups ? cfg->nups : 1, sizeof(*hv->ups));
		hv->pend = calloc(LIMIT_VALIDATE_PENDING, sizeof(*hv->pend));
	}
	if (!hv || !hv->ups || !hv->pend) {
		if (hv) {
			free(hv->ups);
			free(hv->pend);
		}
		free(hv);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&hv->pend_lock, NULL);
	hv->tools = ctx->proc->tools;
	hv->nups = cfg->nups;
	int any = 0;
	for (size_t i = 0; i < cfg->nups; i++) {
		struct vup *u = &hv->ups[i];
		const struct px_upstream_conf *uc = &cfg->ups[i];
		u->name = uc->name;
		u->args = uc->validation.arguments;
		u->results = uc->validation.results;
		u->formats = uc->validation.formats;
		pthread_mutex_init(&u->lock, NULL);
		pthread_mutex_init(&u->stats_lock, NULL);
		any |= u->args != VALIDATE_OFF || u->results != VALIDATE_OFF;
		static const char *const mode_names[] = {"off", "report", "fail"};
		if (u->args != VALIDATE_REPORT || u->results != VALIDATE_REPORT || u->formats)
			log_msg(LOG_INFO, "upstream %s: live contract: arguments %s, results %s%s",
			        u->name, mode_names[u->args], mode_names[u->results],
			        u->formats ? ", formats asserted" : "");
	}
	/* Not under the chain's lock (inspect_set_lock): the tables guard
	 * themselves and validation runs with no lock held. */
	int slot = any ? inspect_add(ctx->insp, "validate", on_message, NULL, hv) : 0;
	if (slot < 0) {
		hook_validate_free(hv);
		snprintf(err, errlen, "too many hooks");
		return -1;
	}
	if (any) {
		inspect_set_listing_fast(ctx->insp, slot, listing_may, NULL);
		inspect_set_needs_tree(ctx->insp, slot, needs_tree);
	}
	if (any && tools_subscribe(hv->tools, &tracker_events, hv) < 0) {
		/* Without the news, every call asks the tracker (correct, slower). */
		hv->unsubscribed = 1;
	}
	ctx->proc->validate = hv;
	return 0;
}

static struct vup *up_named(struct hook_validate *hv, const char *upstream)
{
	for (size_t i = 0; hv && upstream && i < hv->nups; i++)
		if (strcmp(hv->ups[i].name, upstream) == 0)
			return &hv->ups[i];
	return NULL;
}

static json_t *summary_item(const struct vstat *st)
{
	/* the last finding copied: the reader's thread owns what it gets */
	return json_pack("{s:I,s:I,s:I,s:I,s:o}", "calls", (json_int_t)st->calls,
	                 "arguments_invalid", (json_int_t)st->args_invalid, "results",
	                 (json_int_t)st->results, "results_invalid", (json_int_t)st->results_invalid,
	                 "last", st->last ? json_deep_copy(st->last) : json_null());
}

json_t *hook_validate_summary(struct hook_validate *hv, const char *upstream)
{
	if (!hv)
		return NULL;
	json_t *out = json_object();
	struct vup *u = up_named(hv, upstream);
	if (!out || !u)
		return out;
	pthread_mutex_lock(&u->stats_lock);
	for (size_t i = 0; i < u->stats_cap; i++)
		if (u->stats[i].name)
			json_object_set_new(out, u->stats[i].name, summary_item(&u->stats[i]));
	if (u->other.calls || u->other.results)
		json_object_set_new(out, "(other tools)", summary_item(&u->other));
	pthread_mutex_unlock(&u->stats_lock);
	return out;
}

void hook_validate_foreach_count(struct hook_validate *hv, hook_validate_count_fn fn, void *arg)
{
	for (size_t i = 0; hv && i < hv->nups; i++) {
		struct vup *u = &hv->ups[i];
		pthread_mutex_lock(&u->stats_lock);
		for (size_t k = 0; k <= u->stats_cap; k++) {
			const struct vstat *st = k < u->stats_cap ? &u->stats[k] : &u->other;
			if (k < u->stats_cap && !st->name)
				continue;
			for (int c = 0; c < VC_N; c++)
				if (st->count[c])
					fn(arg, u->name, k < u->stats_cap ? st->name : "(other tools)", names[c],
					   st->count[c]);
		}
		pthread_mutex_unlock(&u->stats_lock);
	}
}

void hook_validate_get_stats(struct hook_validate *hv, struct hook_validate_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!hv)
		return;
	out->calls_checked = __atomic_load_n(&hv->calls_checked, __ATOMIC_RELAXED);
	out->results_checked = __atomic_load_n(&hv->results_checked, __ATOMIC_RELAXED);
	out->compiled = __atomic_load_n(&hv->compiled, __ATOMIC_RELAXED);
	out->compile_failed = __atomic_load_n(&hv->compile_failed, __ATOMIC_RELAXED);
	out->findings = __atomic_load_n(&hv->findings, __ATOMIC_RELAXED);
	out->logs_suppressed = __atomic_load_n(&hv->logs_suppressed, __ATOMIC_RELAXED);
}

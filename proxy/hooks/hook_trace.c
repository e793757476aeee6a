/* hook_trace: see hook_trace.h.
 *
 * Per exchange, in where->hook_data[slot]: a struct tx, made at the first
 * client message (deciding hook: ids, upstream traceparent, _meta
 * rewrite), filled by the observer (verdicts, findings, errors), turned
 * into spans and freed in on_exchange, which runs exactly once.
 */
#include "proxy/hooks/hook_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>
#include <openssl/sha.h>

#include "proxy/base/clock.h"
#include "proxy/base/jparse.h"
#include "proxy/base/otlp_json.h"
#include "proxy/base/traceparent.h"
#include "proxy/config.h"
#include "proxy/hooks/inspect.h"

#define TX_NAME 160
/* Ids drawn per RAND_bytes call: its fixed cost (~50k instructions:
 * the DRBG lookup and reseed check) amortised over ~100 exchanges. */
#define RAND_BUF 4096

struct hook_trace {
	const struct px_telemetry *t;   /* borrowed */
	const struct px_config *cfg;    /* borrowed: upstream addresses */
	hook_trace_emit_fn emit;
	void *arg;
	int slot, obs_slot;
	uint64_t ratio_bound;           /* trace id's low 8 bytes below it: sampled */
};

struct tx {
	struct trace_ctx parent;        /* valid when has_parent */
	int has_parent, sampled, forwarded, failed;
	uint8_t trace_id[TRACE_ID_BYTES], server_id[SPAN_ID_BYTES], client_id[SPAN_ID_BYTES];
	uint64_t start_ns, client_start_ns;
	char method[64], name[TX_NAME], tool[128], req_id[64], session[33];
	char error_type[48];
	long long rpc_code;
	int has_rpc_code;
	struct sbuf events;             /* owned: Event texts for the SERVER span */
};

/* ---- ids ---------------------------------------------------------------- */

struct rand_buf {
	uint8_t b[RAND_BUF];
	size_t used;
};
static _Thread_local struct rand_buf rnd = {.used = RAND_BUF};

/* n random bytes, never all zero (an invalid id). */
static void random_id(uint8_t *out, size_t n)
{
	do {
		if (rnd.used + n > RAND_BUF) {
			if (RAND_bytes(rnd.b, RAND_BUF) != 1)
				abort(); /* no CSPRNG: ids would be guessable */
			rnd.used = 0;
		}
		memcpy(out, rnd.b + rnd.used, n);
		rnd.used += n;
	} while (traceparent_zero(out, n));
}

static uint64_t low8(const uint8_t *id)
{
	uint64_t v = 0;
	for (int i = 8; i < 16; i++)
		v = v << 8 | id[i];
	return v;
}

static int sampled_root(const struct hook_trace *ht, const uint8_t *trace_id)
{
	if (ht->t->ratio >= 1.0)
		return 1;
	return low8(trace_id) < ht->ratio_bound;
}

/* ---- context ------------------------------------------------------------ */

static const char *meta_traceparent(json_t *params)
{
	json_t *meta = json_object_get(params, "_meta");
	return json_string_value(json_object_get(meta, "traceparent"));
}

/* The last session hashed on this thread and its hash: a session's calls
 * come one after another, so most exchanges skip the SHA-256. */
static _Thread_local struct {
	char sid[128];
	char hash[33];
} last_session;

static void session_hash(const char *sid, char *out)
{
	size_t n = strlen(sid);
	if (n < sizeof(last_session.sid) && memcmp(last_session.sid, sid, n + 1) == 0) {
		memcpy(out, last_session.hash, sizeof(last_session.hash));
		return;
	}
	uint8_t d[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)sid, n, d);
	traceparent_hex(d, 16, out);
	if (n < sizeof(last_session.sid)) {
		memcpy(last_session.sid, sid, n + 1);
		memcpy(last_session.hash, out, sizeof(last_session.hash));
	}
}

/* s into dst (cap bytes), cut; no snprintf on the path. */
static void copy_cut(char *dst, size_t cap, const char *s)
{
	size_t n = strlen(s);
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static struct tx *tx_new(struct hook_trace *ht, struct inspect_msg *m)
{
	struct inspect_where *w = m->where;
	struct tx *tx = calloc(1, sizeof(*tx));
	if (!tx)
		return NULL;
	const char *tp = w->traceparent;
	int from_meta = 0;
	if (!tp || traceparent_parse(tp, strlen(tp), &tx->parent) < 0) {
		tp = meta_traceparent(m->params);
		from_meta = tp && traceparent_parse(tp, strlen(tp), &tx->parent) == 0;
	}
	tx->has_parent = tp && (from_meta || w->traceparent == tp);
	if (tx->has_parent) {
		memcpy(tx->trace_id, tx->parent.trace_id, TRACE_ID_BYTES);
		tx->sampled = ht->t->sampler == PX_SAMPLER_PARENT_RATIO
		                      ? (tx->parent.flags & TRACE_FLAG_SAMPLED) != 0
		                      : sampled_root(ht, tx->trace_id);
	} else {
		random_id(tx->trace_id, TRACE_ID_BYTES);
		tx->sampled = sampled_root(ht, tx->trace_id);
	}
	random_id(tx->server_id, SPAN_ID_BYTES);
	random_id(tx->client_id, SPAN_ID_BYTES);
	uint64_t now = clock_mono_us(), real = clock_real_us();
	tx->start_ns = (real - (now > w->start_us ? now - w->start_us : 0)) * 1000;
	tx->client_start_ns = real * 1000;
	traceparent_hex(tx->trace_id, TRACE_ID_BYTES, w->trace_id);
	traceparent_hex(tx->server_id, SPAN_ID_BYTES, w->span_id);
	struct trace_ctx up = {.flags = tx->sampled ? TRACE_FLAG_SAMPLED : 0};
	memcpy(up.trace_id, tx->trace_id, TRACE_ID_BYTES);
	memcpy(up.span_id, tx->client_id, SPAN_ID_BYTES);
	traceparent_format(&up, w->up_traceparent);
	if (from_meta) {
		/* The client carried it in _meta: so does the upstream. */
		json_t *meta = json_object_get(m->params, "_meta");
		if (json_object_set_new(meta, "traceparent", json_string(w->up_traceparent)) == 0)
			m->modified = 1;
	}
	if (w->session_id)
		session_hash(w->session_id, tx->session);
	return tx;
}

/* The call's names, from its first request (or notification). */
static void tx_describe(struct tx *tx, const struct inspect_msg *m)
{
	const char *method = m->method ? m->method : "";
	copy_cut(tx->method, sizeof(tx->method), method);
	const char *target = m->tool;
	if (!target && strcmp(method, "prompts/get") == 0)
		target = json_string_value(json_object_get(m->params, "name"));
	if (m->tool)
		copy_cut(tx->tool, sizeof(tx->tool), m->tool);
	/* "{mcp.method.name} {target}", or the method alone */
	copy_cut(tx->name, sizeof(tx->name), method);
	size_t n = strlen(tx->name);
	if (target && n + 2 < sizeof(tx->name)) {
		tx->name[n] = ' ';
		copy_cut(tx->name + n + 1, sizeof(tx->name) - n - 1, target);
	}
	json_t *id = jrpc_id(m->msg);
	if (json_is_integer(id))
		tx->req_id[sbuf_i64_text(tx->req_id, (long long)json_integer_value(id))] = '\0';
	else if (json_is_string(id))
		copy_cut(tx->req_id, sizeof(tx->req_id), json_string_value(id));
}

static enum inspect_verdict on_context(void *arg, struct inspect_msg *m)
{
	struct hook_trace *ht = arg;
	struct inspect_where *w = m->where;
	if (m->dir != INSPECT_FROM_CLIENT || w->hook_data[ht->slot] ||
	    (m->kind != JRPC_REQUEST && m->kind != JRPC_NOTIFICATION))
		return INSPECT_FORWARD;
	struct tx *tx = tx_new(ht, m);
	if (tx)
		tx_describe(tx, m);
	w->hook_data[ht->slot] = tx;
	return INSPECT_FORWARD;
}

/* ---- what happened ------------------------------------------------------ */

static void event_add(struct tx *tx, const char *name, const char *k1, const char *v1,
                      const char *k2, const char *v2)
{
	if (!tx->sampled)
		return;
	otlp_json_event_begin(&tx->events, name, clock_real_us() * 1000);
	otlp_json_attr_str(&tx->events, k1, v1);
	if (k2)
		otlp_json_attr_str(&tx->events, k2, v2);
	otlp_json_event_end(&tx->events);
}

static void set_error(struct tx *tx, const char *type)
{
	if (!tx->error_type[0])
		snprintf(tx->error_type, sizeof(tx->error_type), "%s", type);
}

/* The error code, or a tool error, a reply carries: from its tree, or
 * from its index when it has none (inspect.h). */
static void reply_outcome(struct tx *tx, const struct inspect_msg *m)
{
	int is_error, has_err = 0;
	if (m->msg) {
		json_t *err = json_object_get(m->msg, "error");
		if (err) {
			tx->rpc_code = json_integer_value(json_object_get(err, "code"));
			has_err = 1;
		}
		is_error = json_is_true(json_object_get(json_object_get(m->msg, "result"), "isError"));
	} else if (m->ix) {
		if (m->ix->at[JPI_ERROR].at) {
			json_t *code = jparse_ref_value(&m->ix->at[JPI_CODE]);
			tx->rpc_code = json_integer_value(code);
			has_err = 1;
			json_decref(code);
		}
		is_error = jparse_ref_is_true(&m->ix->at[JPI_IS_ERROR]);
	} else {
		return;
	}
	if (has_err) {
		tx->has_rpc_code = 1;
		char c[24];
		snprintf(c, sizeof(c), "%lld", tx->rpc_code);
		set_error(tx, c);
	} else if (is_error) {
		set_error(tx, "tool_error");
	}
}

static enum inspect_verdict on_observe(void *arg, struct inspect_msg *m)
{
	struct hook_trace *ht = arg;
	struct tx *tx = m->where->hook_data[ht->slot];
	if (!tx)
		return INSPECT_FORWARD;
	size_t i;
	json_t *n;
	json_array_foreach(m->notes, i, n) {
		char *text = json_dumps(n, JSON_COMPACT);
		event_add(tx, "mcpwarden.validation.finding", "mcpwarden.finding", text, NULL, NULL);
		free(text);
	}
	if (m->dir == INSPECT_FROM_CLIENT && (m->kind == JRPC_REQUEST || m->kind == JRPC_NOTIFICATION)) {
		if (m->verdict == INSPECT_FORWARD) {
			tx->forwarded = 1;
		} else {
			event_add(tx, "mcpwarden.policy.decision", "mcpwarden.verdict",
			          m->verdict == INSPECT_DROP ? "drop" : "answer", "mcpwarden.rule",
			          m->reason ? m->reason : m->decided_by);
			set_error(tx, "mcpwarden.denied");
		}
	} else if (m->dir == INSPECT_FROM_SERVER) {
		if (m->verdict != INSPECT_FORWARD)
			event_add(tx, "mcpwarden.contract.decision", "mcpwarden.verdict",
			          m->verdict == INSPECT_DROP ? "drop" : "answer", "mcpwarden.rule",
			          m->reason ? m->reason : m->decided_by);
		reply_outcome(tx, m);
	}
	return INSPECT_FORWARD;
}

/* inspect_tree_fn (issue 20): the observer reads a reply's error code and
 * result.isError, which a message without a tree has in its index. */
static int observe_tree(void *arg, const struct inspect_msg *m)
{
	(void)arg;
	(void)m;
	return 0;
}

/* on_context reads (and may rewrite) a client message's params._meta;
 * of a reply, nothing. */
static int context_tree(void *arg, const struct inspect_msg *m)
{
	(void)arg;
	return m->dir == INSPECT_FROM_CLIENT;
}

/* ---- spans -------------------------------------------------------------- */

static const struct px_upstream_conf *upstream_of(const struct hook_trace *ht, const char *name)
{
	for (size_t i = 0; name && i < ht->cfg->nups; i++)
		if (strcmp(ht->cfg->ups[i].name, name) == 0)
			return &ht->cfg->ups[i];
	return NULL;
}

/* The MCP attributes both spans carry. */
static void mcp_attrs(struct sbuf *s, const struct tx *tx, const struct inspect_where *w)
{
	otlp_json_attr_str(s, "mcp.method.name", tx->method);
	if (tx->session[0])
		otlp_json_attr_str(s, "mcp.session.id", tx->session);
	otlp_json_attr_str(s, "mcp.protocol.version", w->protocol);
	if (tx->req_id[0])
		otlp_json_attr_str(s, "jsonrpc.request.id", tx->req_id);
	otlp_json_attr_str(s, "jsonrpc.protocol.version", "2.0");
	if (tx->tool[0]) {
		otlp_json_attr_str(s, "gen_ai.tool.name", tx->tool);
		otlp_json_attr_str(s, "gen_ai.operation.name", "execute_tool");
	}
	otlp_json_attr_str(s, "network.transport", "tcp");
	otlp_json_attr_str(s, "network.protocol.name", "http");
	otlp_json_attr_str(s, "network.protocol.version", "1.1");
	if (tx->has_rpc_code) {
		char c[SBUF_I64_MAX + 1];
		c[sbuf_i64_text(c, tx->rpc_code)] = '\0';
		otlp_json_attr_str(s, "rpc.response.status_code", c);
	}
	if (tx->error_type[0])
		otlp_json_attr_str(s, "error.type", tx->error_type);
}

/* One span's head and shared attributes into b (its own come after). */
static void span_begin(struct sbuf *b, const struct tx *tx, const struct inspect_where *w,
                       int client, uint64_t end_ns)
{
	struct otlp_span_head h = {
		.trace_id = tx->trace_id,
		.span_id = client ? tx->client_id : tx->server_id,
		.parent_id = client ? tx->server_id : tx->has_parent ? tx->parent.span_id : NULL,
		.parent_remote = !client,
		.tracestate = w->tracestate,
		.name = tx->name,
		.kind = client ? OTLP_KIND_CLIENT : OTLP_KIND_SERVER,
		.start_ns = client ? tx->client_start_ns : tx->start_ns,
		.end_ns = end_ns,
		.flags = TRACE_FLAG_SAMPLED,
	};
	otlp_json_span_begin(b, &h);
	mcp_attrs(b, tx, w);
}

static void client_addr(struct sbuf *s, const char *client)
{
	/* "ip:port" or "[v6]:port" */
	const char *colon = client ? strrchr(client, ':') : NULL;
	if (!colon)
		return;
	const char *h = client;
	size_t n = (size_t)(colon - client);
	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	}
	otlp_json_attr_strn(s, "client.address", h, n);
	otlp_json_attr_int(s, "client.port", strtol(colon + 1, NULL, 10));
}

/* The span text buffer, per thread, kept across calls. */
static _Thread_local struct sbuf span_buf;

static void emit_text(struct hook_trace *ht, struct sbuf *b)
{
	if (!b->oom)
		ht->emit(ht->arg, b->p, b->len);
	b->len = 0;
	b->oom = 0;
}

static void emit_client(struct hook_trace *ht, struct tx *tx, const struct inspect_exchange *x,
                        const struct px_upstream_conf *u, uint64_t end, int failed)
{
	const struct inspect_where *w = x->where;
	struct sbuf *b = &span_buf;
	span_begin(b, tx, w, 1, end);
	otlp_json_attr_str(b, "http.request.method", "POST");
	if (u) {
		otlp_json_attr_str(b, "server.address", u->host);
		otlp_json_attr_int(b, "server.port", strtol(u->port, NULL, 10));
		/* never the query */
		otlp_json_attr_strn(b, "url.path", u->target, strcspn(u->target, "?"));
	}
	otlp_json_attr_str(b, "mcpwarden.upstream.transport", w->upstream_transport);
	otlp_json_events(b);
	int err = failed || tx->has_rpc_code || tx->error_type[0];
	otlp_json_span_end(b, err ? OTLP_STATUS_ERROR : OTLP_STATUS_UNSET,
	                   err ? (x->error ? x->error : tx->error_type) : NULL);
	emit_text(ht, b);
}

static void emit_spans(struct hook_trace *ht, struct tx *tx, const struct inspect_exchange *x)
{
	const struct inspect_where *w = x->where;
	uint64_t end = clock_real_us() * 1000;
	const struct px_upstream_conf *u = upstream_of(ht, w->upstream);
	int failed = x->end != INSPECT_END_OK && x->end != INSPECT_END_REJECTED;
	if (failed)
		set_error(tx, x->end == INSPECT_END_TIMEOUT     ? "timeout"
		              : x->end == INSPECT_END_CANCELLED ? "cancelled"
		                                                : "mcpwarden.upstream_error");
	if (x->status >= 500)
		set_error(tx, "http_5xx");
	if (!tx->session[0] && w->reply_session_id)
		session_hash(w->reply_session_id, tx->session); /* initialize: the id it got */
	if (tx->forwarded)
		emit_client(ht, tx, x, u, end, failed);
	struct sbuf *b = &span_buf;
	span_begin(b, tx, w, 0, end);
	otlp_json_attr_str(b, "http.request.method", w->http_method);
	if (x->status)
		otlp_json_attr_int(b, "http.response.status_code", x->status);
	if (u)
		otlp_json_attr_str(b, "url.path", u->path);
	client_addr(b, w->client);
	otlp_json_attr_str(b, "server.address", ht->cfg->listen_host);
	if (ht->cfg->listen_port)
		otlp_json_attr_int(b, "server.port", strtol(ht->cfg->listen_port, NULL, 10));
	otlp_json_attr_str(b, "user_agent.original", w->user_agent);
	otlp_json_attr_str(b, "mcpwarden.upstream", w->upstream);
	otlp_json_attr_str(b, "mcpwarden.client.transport", w->client_transport);
	otlp_json_attr_str(b, "mcpwarden.era", w->era);
	otlp_json_events(b);
	if (tx->events.len)
		sbuf_putn(b, tx->events.p, tx->events.len);
	otlp_json_span_end(b, tx->error_type[0] ? OTLP_STATUS_ERROR : OTLP_STATUS_UNSET,
	                   tx->error_type[0] ? (x->error ? x->error : tx->error_type) : NULL);
	emit_text(ht, b);
}

static void on_exchange(void *arg, const struct inspect_exchange *x)
{
	struct hook_trace *ht = arg;
	struct tx *tx = x->where->hook_data[ht->slot];
	if (!tx)
		return;
	x->where->hook_data[ht->slot] = NULL;
	if (tx->sampled)
		emit_spans(ht, tx, x);
	free(tx->events.p);
	free(tx);
}

struct hook_trace *hook_trace_new(struct inspect *in, const struct px_config *cfg,
                                  hook_trace_emit_fn emit, void *arg)
{
	struct hook_trace *ht = calloc(1, sizeof(*ht));
	if (!ht)
		return NULL;
	const struct px_telemetry *t = &cfg->telemetry;
	ht->t = t;
	ht->cfg = cfg;
	ht->emit = emit;
	ht->arg = arg;
	ht->ratio_bound = (uint64_t)(t->ratio * 18446744073709551615.0);
	ht->slot = inspect_add(in, "trace", on_context, on_exchange, ht);
	ht->obs_slot = inspect_add_observer(in, "trace-observer", on_observe, NULL, ht);
	if (ht->slot < 0 || ht->obs_slot < 0) {
		free(ht);
		return NULL;
	}
	inspect_set_needs_tree(in, ht->slot, context_tree);
	inspect_set_needs_tree(in, ht->obs_slot, observe_tree);
	return ht;
}

void hook_trace_thread_exit(void)
{
	free(span_buf.p);
	span_buf = (struct sbuf){0};
}

void hook_trace_free(struct hook_trace *ht)
{
	hook_trace_thread_exit();
	free(ht);
}

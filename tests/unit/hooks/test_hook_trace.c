/* Unit tests for proxy/hooks/hook_trace.c on a real hook chain:
 *   - a client's traceparent becomes the SERVER span's parent, the
 *     upstream traceparent names the CLIENT span, both spans are emitted
 *     as JSON text with the MCP attributes (session id hashed);
 *   - without one, a new trace (random, non-zero ids) is started;
 *   - params._meta.traceparent is read and rewritten (m->modified);
 *   - a refused call has no CLIENT span and a policy event;
 *   - an unsampled parent (flags 00) with parent-based sampling: ids for
 *     the record, no span; ratio 0 for a new root: the same;
 *   - an invalid traceparent starts a new trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/config.h"
#include "proxy/hooks/hook_trace.h"
#include "proxy/hooks/inspect.h"
#include "tests/unit/helpers.h"

#define PARENT "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

struct fx {
	struct px_config cfg;
	struct px_upstream_conf up;
	struct inspect *in;
	struct hook_trace *ht;
	json_t *spans; /* every emitted span, parsed */
};

static void on_span(void *arg, const char *span, size_t len)
{
	struct fx *f = arg;
	json_error_t e;
	json_t *j = json_loadb(span, len, 0, &e);
	assert_non_null(j);
	json_array_append_new(f->spans, j);
}

static struct fx *fx_new(enum px_sampler s, double ratio)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->up.name = "a";
	f->up.path = "/mcp";
	f->up.host = "127.0.0.1";
	f->up.port = "9999";
	f->up.target = "/mcp?key=secret";
	f->cfg.ups = &f->up;
	f->cfg.nups = 1;
	f->cfg.telemetry.enabled = 1;
	f->cfg.telemetry.sampler = s;
	f->cfg.telemetry.ratio = ratio;
	f->in = inspect_new();
	f->spans = json_array();
	f->ht = hook_trace_new(f->in, &f->cfg, on_span, f);
	assert_non_null(f->ht);
	return f;
}

static void fx_free(struct fx *f)
{
	hook_trace_free(f->ht);
	inspect_free(f->in);
	json_decref(f->spans);
	free(f);
}

/* One exchange: req (JSON text), answered with resp unless refuse. */
static void exchange(struct fx *f, struct inspect_where *w, const char *req, const char *resp,
                     int *modified, json_t **sent)
{
	json_t *rq = th_json(req);
	struct inspect_msg mc = {.dir = INSPECT_FROM_CLIENT, .kind = JRPC_REQUEST, .msg = rq,
	                         .request = rq, .where = w};
	inspect_message(f->in, &mc);
	json_decref(mc.answer); /* the proxy's to send: the test's to free */
	if (modified)
		*modified = mc.modified;
	if (resp) {
		json_t *rs = th_json(resp);
		struct inspect_msg ms = {.dir = INSPECT_FROM_SERVER, .kind = JRPC_RESULT, .msg = rs,
		                         .request = rq, .where = w};
		inspect_message(f->in, &ms);
		json_decref(rs);
	}
	struct inspect_exchange x = {.end = INSPECT_END_OK, .where = w, .status = 200};
	inspect_exchange_done(f->in, &x);
	if (sent)
		*sent = rq;
	else
		json_decref(rq);
}

static const char *attr(json_t *span, const char *k)
{
	size_t i;
	json_t *kv;
	json_array_foreach(json_object_get(span, "attributes"), i, kv)
		if (strcmp(json_string_value(json_object_get(kv, "key")), k) == 0)
			return json_string_value(json_object_get(json_object_get(kv, "value"), "stringValue"));
	return NULL;
}

static const char *sv(json_t *span, const char *k)
{
	return json_string_value(json_object_get(span, k));
}

static void test_header_parent_two_spans(void **state)
{
	(void)state;
	struct fx *f = fx_new(PX_SAMPLER_PARENT_RATIO, 1.0);
	struct inspect_where w = {.upstream = "a", .http_method = "POST", .traceparent = PARENT,
	                          .session_id = "sess-secret-1"};
	exchange(f, &w, "{'jsonrpc':'2.0','id':7,'method':'tools/call','params':{'name':'echo'}}",
	         "{'jsonrpc':'2.0','id':7,'result':{'content':[]}}", NULL, NULL);
	assert_int_equal(json_array_size(f->spans), 2);
	json_t *cli = json_array_get(f->spans, 0), *srv = json_array_get(f->spans, 1);
	assert_int_equal(json_integer_value(json_object_get(srv, "kind")), 2);
	assert_int_equal(json_integer_value(json_object_get(cli, "kind")), 3);
	assert_string_equal(sv(srv, "traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(sv(srv, "parentSpanId"), "00f067aa0ba902b7");
	assert_string_equal(sv(cli, "parentSpanId"), sv(srv, "spanId"));
	assert_string_equal(sv(srv, "name"), "tools/call echo");
	assert_string_equal(attr(srv, "gen_ai.tool.name"), "echo");
	assert_string_equal(attr(srv, "gen_ai.operation.name"), "execute_tool");
	assert_string_equal(attr(srv, "jsonrpc.request.id"), "7");
	assert_string_equal(attr(cli, "url.path"), "/mcp"); /* never the query */
	const char *sid = attr(srv, "mcp.session.id");
	assert_non_null(sid);
	assert_int_equal(strlen(sid), 32);
	assert_null(strstr(sid, "secret"));
	/* the record's ids and the upstream's traceparent */
	assert_string_equal(w.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(w.span_id, sv(srv, "spanId"));
	assert_int_equal(strncmp(w.up_traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-", 36), 0);
	assert_int_equal(strncmp(w.up_traceparent + 36, sv(cli, "spanId"), 16), 0);
	assert_string_equal(w.up_traceparent + 52, "-01");
	fx_free(f);
}

static void test_new_root_and_invalid_parent(void **state)
{
	(void)state;
	struct fx *f = fx_new(PX_SAMPLER_PARENT_RATIO, 1.0);
	struct inspect_where a = {.upstream = "a", .http_method = "POST"};
	struct inspect_where b = {.upstream = "a", .http_method = "POST",
	                          .traceparent = "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"};
	exchange(f, &a, "{'jsonrpc':'2.0','id':1,'method':'ping'}", "{'jsonrpc':'2.0','id':1,'result':{}}", NULL, NULL);
	exchange(f, &b, "{'jsonrpc':'2.0','id':2,'method':'ping'}", "{'jsonrpc':'2.0','id':2,'result':{}}", NULL, NULL);
	assert_int_equal(json_array_size(f->spans), 4);
	assert_null(json_object_get(json_array_get(f->spans, 1), "parentSpanId"));
	assert_null(json_object_get(json_array_get(f->spans, 3), "parentSpanId"));
	assert_int_equal(strlen(a.trace_id), 32);
	assert_string_not_equal(a.trace_id, b.trace_id);
	assert_string_not_equal(b.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_not_equal(a.trace_id, "00000000000000000000000000000000");
	fx_free(f);
}

static void test_meta_rewritten(void **state)
{
	(void)state;
	struct fx *f = fx_new(PX_SAMPLER_PARENT_RATIO, 1.0);
	struct inspect_where w = {.upstream = "a", .http_method = "POST"};
	int modified = 0;
	json_t *sent = NULL;
	exchange(f, &w, "{'jsonrpc':'2.0','id':3,'method':'tools/call','params':{'name':'x','_meta':"
	                "{'traceparent':'" PARENT "'}}}", "{'jsonrpc':'2.0','id':3,'result':{}}",
	         &modified, &sent);
	assert_int_equal(modified, 1);
	const char *tp = json_string_value(
	    json_object_get(json_object_get(json_object_get(sent, "params"), "_meta"), "traceparent"));
	assert_string_equal(tp, w.up_traceparent);
	assert_string_equal(sv(json_array_get(f->spans, 1), "parentSpanId"), "00f067aa0ba902b7");
	json_decref(sent);
	fx_free(f);
}

/* A deciding hook that answers every tools/call (a policy's deny). */
static enum inspect_verdict deny(void *arg, struct inspect_msg *m)
{
	(void)arg;
	if (m->dir != INSPECT_FROM_CLIENT)
		return INSPECT_FORWARD;
	m->answer = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", jrpc_id(m->msg),
	                      "error", "code", -32003, "message", "denied");
	m->reason = "policy:no-x";
	return INSPECT_ANSWER;
}

static void test_refused_no_client_span(void **state)
{
	(void)state;
	struct fx *f = fx_new(PX_SAMPLER_PARENT_RATIO, 1.0);
	inspect_add(f->in, "deny", deny, NULL, NULL);
	struct inspect_where w = {.upstream = "a", .http_method = "POST"};
	exchange(f, &w, "{'jsonrpc':'2.0','id':4,'method':'tools/call','params':{'name':'x'}}", NULL, NULL, NULL);
	assert_int_equal(json_array_size(f->spans), 1);
	json_t *srv = json_array_get(f->spans, 0);
	json_t *ev = json_array_get(json_object_get(srv, "events"), 0);
	assert_string_equal(sv(ev, "name"), "mcpwarden.policy.decision");
	assert_string_equal(attr(ev, "mcpwarden.rule"), "policy:no-x");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(srv, "status"), "code")), 2);
	fx_free(f);
}

static void test_unsampled_ids_only(void **state)
{
	(void)state;
	struct fx *f = fx_new(PX_SAMPLER_PARENT_RATIO, 1.0);
	struct inspect_where w = {.upstream = "a", .http_method = "POST",
	                          .traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"};
	exchange(f, &w, "{'jsonrpc':'2.0','id':5,'method':'ping'}", "{'jsonrpc':'2.0','id':5,'result':{}}", NULL, NULL);
	assert_int_equal(json_array_size(f->spans), 0);
	assert_string_equal(w.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_int_equal(strlen(w.span_id), 16);
	assert_string_equal(w.up_traceparent + 52, "-00");
	fx_free(f);
	f = fx_new(PX_SAMPLER_RATIO, 0.0);
	struct inspect_where r = {.upstream = "a", .http_method = "POST"};
	exchange(f, &r, "{'jsonrpc':'2.0','id':6,'method':'ping'}", "{'jsonrpc':'2.0','id':6,'result':{}}", NULL, NULL);
	assert_int_equal(json_array_size(f->spans), 0);
	assert_int_equal(strlen(r.trace_id), 32);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_parent_two_spans),
		cmocka_unit_test(test_new_root_and_invalid_parent),
		cmocka_unit_test(test_meta_rewritten),
		cmocka_unit_test(test_refused_no_client_span),
		cmocka_unit_test(test_unsampled_ids_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

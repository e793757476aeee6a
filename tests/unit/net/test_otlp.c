/* Unit tests for proxy/net/otlp.c (its statics read by including it):
 *   - a full queue drops the span and counts it (queue_full);
 *   - a batch takes at most batch_spans spans, cut whole, the request's
 *     envelope around them; the rest stays queued, each span whole;
 *   - a refused connection is retried (attempt counted), not dropped.
 * The endpoint is a closed loopback port: nothing answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "proxy/net/otlp.c"
#include "tests/unit/helpers.h"

struct fx {
	struct event_base *base;
	struct px_telemetry t;
	struct otlp *o;
};

static struct fx *fx_new(unsigned queue, unsigned batch)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *why;
	char err[256] = "";
	f->base = event_base_new();
	assert_int_equal(config_parse_url(&f->t.otlp, "http://127.0.0.1:1/v1/traces", &why), 0);
	f->t.otlp.connect_timeout_ms = f->t.otlp.request_timeout_ms = 1000;
	f->t.service_name = "svc";
	f->t.resource = json_array();
	f->t.queue_spans = queue;
	f->t.batch_spans = batch;
	f->t.batch_delay_ms = 60000;
	f->o = otlp_new(f->base, &f->t, err, sizeof(err));
	assert_non_null(f->o);
	return f;
}

static void fx_free(struct fx *f)
{
	otlp_free(f->o);
	struct px_upstream_conf *u = &f->t.otlp;
	free(u->host);
	free(u->port);
	free(u->target);
	free(u->host_header);
	free(u->url_safe);
	free(u->basic_auth);
	json_decref(f->t.resource);
	event_base_free(f->base);
	free(f);
}

static void put(struct otlp *o, const char *s)
{
	otlp_enqueue(o, s, strlen(s));
}

static void test_queue_full_counts(void **state)
{
	(void)state;
	struct fx *f = fx_new(3, 100);
	for (int i = 0; i < 5; i++)
		put(f->o, "{}");
	uint64_t e, d[OTLP_DROP_N];
	otlp_stats(f->o, &e, d);
	assert_int_equal(d[OTLP_DROP_QUEUE_FULL], 2);
	assert_int_equal(otlp_pending(f->o), 3);
	fx_free(f);
}

static void test_batch_cut_whole(void **state)
{
	(void)state;
	struct fx *f = fx_new(10, 2);
	put(f->o, "{\"a\":1}");
	put(f->o, "{\"b\":2}"); /* a full batch: sent at once */
	put(f->o, "{\"c\":3}");
	put(f->o, "{\"d\":4}");
	put(f->o, "{\"e\":5}");
	struct otlp *o = f->o;
	assert_int_equal(o->body_spans, 2);
	assert_non_null(strstr(o->body.p, "\"spans\":[{\"a\":1},{\"b\":2}]}]}]}"));
	assert_non_null(strstr(o->body.p, "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"svc\"}}"));
	json_error_t je;
	json_t *j = json_loadb(o->body.p, o->body.len, 0, &je);
	assert_non_null(j);
	json_decref(j);
	assert_int_equal(o->nq, 3);
	assert_int_equal(o->queue.len, strlen("{\"c\":3},{\"d\":4},{\"e\":5}"));
	assert_memory_equal(o->queue.p, "{\"c\":3},{\"d\":4},{\"e\":5}", o->queue.len);
	assert_int_equal(o->ends[0], 7);
	assert_int_equal(o->ends[2], o->queue.len);
	/* The refused connection: a retry is scheduled, nothing dropped. */
	th_run_for(f->base, 200);
	assert_true(o->attempt >= 1);
	uint64_t e, d[OTLP_DROP_N];
	otlp_stats(o, &e, d);
	assert_int_equal(d[OTLP_DROP_EXPORT_FAILED], 0);
	assert_int_equal(otlp_pending(o), 5);
	fx_free(f);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(otlp_drop_name(OTLP_DROP_QUEUE_FULL), "queue_full");
	assert_string_equal(otlp_drop_name(OTLP_DROP_EXPORT_FAILED), "export_failed");
	assert_string_equal(otlp_drop_name(OTLP_DROP_SHUTDOWN), "shutdown");
	otlp_bind(NULL);
	assert_null(otlp_current());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_full_counts),
		cmocka_unit_test(test_batch_cut_whole),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

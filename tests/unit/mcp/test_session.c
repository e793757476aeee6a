/* Unit tests for proxy/mcp/session.c (and the pure helpers of upstream_sse.c).
 * Why this file is long: one test per behaviour of the module, each reading
 * on its own (a failure names one behaviour), with the regression cases.
 *
 * The table runs without a px_ctx: no timers, no upstream face. The client
 * face is a fake that records every delivery; "targets" are fake exchanges
 * whose can_stream answer the test sets. Time is passed to
 * session_table_sweep() explicitly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/config.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "proxy/mcp/session.h"
#include "proxy/mcp/upstream_sse.h"
#include "tests/unit/helpers.h"
#include "proxy/base/clock.h"

/* ---- the fake client face --------------------------------------------------- */

struct target {
	const char *name;
	int streams;       /* can_stream() answer */
	int refuse;        /* deliver() fails */
	int withdrawn;
	int ended;
	int opened;
	int accepted;
	const char *end_why;
};

#define MAX_DELIVERIES 64

struct delivery {
	struct target *to;
	json_t *msg;       /* owned copy */
	int local, status, has_request, has_raw;
};

static struct delivery deliveries[MAX_DELIVERIES];
static size_t ndeliveries;

static int fake_deliver(void *target, const struct session_out *m)
{
	struct target *t = target;
	if (t->refuse)
		return -1;
	assert_true(ndeliveries < MAX_DELIVERIES);
	deliveries[ndeliveries++] = (struct delivery){
		t, json_deep_copy(m->msg), m->local, m->status, m->request != NULL, m->raw != NULL,
	};
	return 0;
}

static int fake_can_stream(void *target)
{
	return ((struct target *)target)->streams;
}

static void fake_withdrawn(void *target)
{
	((struct target *)target)->withdrawn++;
}

static void fake_end_stream(void *target, const char *why)
{
	struct target *t = target;
	t->ended++;
	t->end_why = why;
}

static void fake_opened(void *target)
{
	((struct target *)target)->opened++;
}

static void fake_accepted(void *target)
{
	((struct target *)target)->accepted++;
}

static const struct session_client_ops fake_ops = {
	fake_deliver, fake_can_stream, fake_withdrawn, fake_end_stream, fake_opened, fake_accepted,
};

static const struct session_limits default_limits = {
	.max_sessions = 4,
	.max_pending = 3,
	.max_queue = 2,
	.max_queue_bytes = 1000,
	.idle_us = 1000000,
	.request_us = 5000000,
};

static int setup(void **state)
{
	struct session_table *t = session_table_new(NULL, &default_limits, &fake_ops);
	assert_non_null(t);
	ndeliveries = 0;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	session_table_free(*state);
	for (size_t i = 0; i < ndeliveries; i++)
		json_decref(deliveries[i].msg);
	ndeliveries = 0;
	return 0;
}

/* Sends a client message (a fresh parse of text); returns its result. */
static int client_send(struct session *s, const char *text, void *target, const char **why)
{
	json_t *m = th_json_text(text, 0);
	const char *dummy;
	int rc = session_client_message(s, m, NULL, 0, target, why ? why : &dummy);
	json_decref(m);
	return rc;
}

static void upstream_send(struct session *s, const char *text)
{
	json_t *m = th_json_text(text, 0);
	session_upstream_message(s, m, text, strlen(text));
	json_decref(m);
}

static json_int_t delivered_id(size_t i)
{
	return json_integer_value(jrpc_id(deliveries[i].msg));
}

static const char *delivered_method(size_t i)
{
	return jrpc_method(deliveries[i].msg);
}

static struct session *new_session(struct session_table *t, enum session_face face)
{
	const char *why = NULL;
	struct session *s = session_new(t, 0, face, NULL, &why);
	assert_non_null(s);
	return s;
}

/* ---- ids ------------------------------------------------------------------------ */

static void test_mint_id_format(void **state)
{
	(void)state;
	char id[SESSION_ID_LEN + 1];
	assert_int_equal(session_mint_id(id, sizeof(id)), 0);
	assert_int_equal(strlen(id), SESSION_ID_LEN);
	for (size_t i = 0; i < SESSION_ID_LEN; i++) {
		assert_true(id[i] >= 0x21 && id[i] <= 0x7e);
		assert_non_null(strchr("0123456789abcdef", id[i]));
	}
}

static void test_mint_id_too_small_buffer(void **state)
{
	(void)state;
	char id[SESSION_ID_LEN];
	assert_int_equal(session_mint_id(id, sizeof(id)), -1);
}

static void test_mint_ids_differ(void **state)
{
	(void)state;
	enum { N = 500 };
	static char ids[N][SESSION_ID_LEN + 1];
	for (int i = 0; i < N; i++) {
		assert_int_equal(session_mint_id(ids[i], sizeof(ids[i])), 0);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(ids[i], ids[j]);
	}
}

/* replicas: with a replica_id, minted ids are "<replica_id>-<32 hex>",
 * found by that id, as long as SESSION_ID_MAX allows. */
static void test_mint_with_replica_prefix(void **state)
{
	(void)state;
	struct session_limits lim = default_limits;
	snprintf(lim.id_prefix, sizeof(lim.id_prefix), "%s", "abcdefghijklmno_");
	struct session_table *t = session_table_new(NULL, &lim, &fake_ops);
	assert_non_null(t);
	struct session *s = new_session(t, SESSION_FACE_SSE);
	const char *id = session_id(s);
	assert_int_equal(strlen(id), SESSION_ID_MAX);
	assert_memory_equal(id, "abcdefghijklmno_-", 17);
	for (size_t i = 17; i < SESSION_ID_MAX; i++)
		assert_non_null(strchr("0123456789abcdef", id[i]));
	assert_ptr_equal(session_find(t, id), s);
	assert_null(session_find(t, id + 17));  /* the bare hex names nothing */
	session_table_free(t);
}

/* ---- the table ------------------------------------------------------------------- */

static void test_new_and_find(void **state)
{
	struct session_table *t = *state;
	struct session *a = new_session(t, SESSION_FACE_SSE);
	struct session *b = new_session(t, SESSION_FACE_STREAMABLE);

	assert_int_equal(session_table_count(t), 2);
	assert_string_not_equal(session_id(a), session_id(b));
	assert_ptr_equal(session_find(t, session_id(a)), a);
	assert_ptr_equal(session_find(t, session_id(b)), b);
	assert_null(session_find(t, "00000000000000000000000000000000"));
	assert_null(session_find(t, ""));
	assert_int_equal(session_face(a), SESSION_FACE_SSE);
	assert_int_equal(session_face(b), SESSION_FACE_STREAMABLE);
	assert_int_equal(session_state(a), SESSION_NEW);
	assert_string_equal(session_state_str(SESSION_ENDED), "ended");
}

static void test_client_name_kept(void **state)
{
	struct session_table *t = *state;
	const char *why;
	struct session *s = session_new(t, 0, SESSION_FACE_SSE, "alice", &why);
	assert_non_null(s);
	assert_string_equal(session_client_name(s), "alice");
	assert_null(session_client_name(new_session(t, SESSION_FACE_SSE)));
}

static void test_table_is_bounded(void **state)
{
	struct session_table *t = *state;
	const char *why = NULL;
	struct session_stats st;

	for (size_t i = 0; i < default_limits.max_sessions; i++)
		new_session(t, SESSION_FACE_SSE);
	assert_null(session_new(t, 0, SESSION_FACE_SSE, NULL, &why));
	assert_string_equal(why, "too many sessions open");
	session_table_stats(t, &st);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.opened, default_limits.max_sessions);
}

static void test_ended_session_frees_slot(void **state)
{
	struct session_table *t = *state;
	struct session *first = NULL;
	const char *why = NULL;

	for (size_t i = 0; i < default_limits.max_sessions; i++) {
		struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
		if (!first)
			first = s;
	}
	char id[SESSION_ID_LEN + 1];
	memcpy(id, session_id(first), sizeof(id));
	session_end(first, "test");
	assert_null(session_find(t, id));
	assert_int_equal(session_table_count(t), default_limits.max_sessions - 1);
	assert_non_null(session_new(t, 0, SESSION_FACE_SSE, NULL, &why));
	session_table_reap(t);
}

/* ---- routing --------------------------------------------------------------------- */

static void test_response_goes_to_its_waiter(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target post1 = {.name = "post1"}, post2 = {.name = "post2"}, stream = {.name = "stream"};

	assert_int_equal(session_attach_stream(s, &stream), 0);
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &post1, NULL), 0);
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", &post2, NULL), 0);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}");
	assert_int_equal(ndeliveries, 2);
	assert_ptr_equal(deliveries[0].to, &post2);
	assert_int_equal(delivered_id(0), 2);
	assert_ptr_equal(deliveries[1].to, &post1);
	assert_int_equal(delivered_id(1), 1);
	assert_true(deliveries[0].has_request && deliveries[0].has_raw && !deliveries[0].local);
}

/* The upstream took a request: its waiter hears it once, before its
 * response (the POST's SSE reply starts then); a notification, a request
 * already answered, or one whose waiter left tells nobody. */
static void test_accepted_tells_the_waiter(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target post1 = {.name = "post1"}, post2 = {.name = "post2"}, gone = {.name = "gone"};
	json_t *r1 = th_json_text("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 0);
	json_t *r2 = th_json_text("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", 0);
	json_t *r3 = th_json_text("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", 0);
	json_t *n = th_json_text("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 0);
	const char *why;

	assert_int_equal(session_client_message(s, r1, NULL, 0, &post1, &why), 0);
	assert_int_equal(session_client_message(s, r2, NULL, 0, &post2, &why), 0);
	assert_int_equal(session_client_message(s, r3, NULL, 0, &gone, &why), 0);
	assert_int_equal(session_client_message(s, n, NULL, 0, NULL, &why), 0);
	session_detach(s, &gone);

	session_upstream_accepted(s, r1);
	session_upstream_accepted(s, r1);
	assert_int_equal(post1.accepted, 1);
	assert_int_equal(post2.accepted, 0);
	/* A legacy response may overtake its 202: then there is nothing to say. */
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
	session_upstream_accepted(s, r2);
	assert_int_equal(post2.accepted, 0);
	session_upstream_accepted(s, r3);
	session_upstream_accepted(s, n);
	assert_int_equal(gone.accepted, 0);
	assert_int_equal(ndeliveries, 1);
	assert_ptr_equal(deliveries[0].to, &post2);
	json_decref(r1);
	json_decref(r2);
	json_decref(r3);
	json_decref(n);
}

static void test_string_and_integer_ids_differ(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target a = {.name = "a"}, b = {.name = "b"};

	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", &a, NULL), 0);
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"method\":\"ping\"}", &b, NULL), 0);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":{}}");
	assert_int_equal(ndeliveries, 1);
	assert_ptr_equal(deliveries[0].to, &b);
}

static void test_unknown_response_dropped(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target stream = {.name = "stream"};
	struct session_stats st;

	session_attach_stream(s, &stream);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}");
	/* Never on the GET stream: a response belongs to its POST only. */
	assert_int_equal(ndeliveries, 0);
	session_table_stats(t, &st);
	assert_int_equal(st.late_responses, 1);
}

static void test_duplicate_id_refused(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target a = {.name = "a"};
	const char *why = NULL;

	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &a, NULL), 0);
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &a, &why), -1);
	assert_string_equal(why, "a request with this id is already in flight");
}

static void test_pending_is_bounded(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target a = {.name = "a"};
	const char *why = NULL;
	char buf[128];

	for (size_t i = 0; i < default_limits.max_pending; i++) {
		snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"ping\"}", i);
		assert_int_equal(client_send(s, buf, &a, NULL), 0);
	}
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":100,\"method\":\"ping\"}", &a, &why), -1);
	assert_string_equal(why, "too many requests in flight in this session");
	/* Notifications are not requests: they still go. */
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}", &a, NULL), 0);
	/* An answered request frees its slot. */
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}");
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":100,\"method\":\"ping\"}", &a, NULL), 0);
}

static void test_progress_follows_its_token(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target post = {.name = "post", .streams = 1}, json_only = {.name = "json"}, stream = {.name = "stream"};

	session_attach_stream(s, &stream);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"_meta\":{\"progressToken\":\"tok\"}}}", &post, NULL);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"_meta\":{\"progressToken\":5}}}", &json_only, NULL);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":1}}");
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":5,\"progress\":1}}");
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"nope\",\"progress\":1}}");
	assert_int_equal(ndeliveries, 3);
	assert_ptr_equal(deliveries[0].to, &post);       /* its POST streams */
	assert_true(deliveries[0].has_request);
	assert_ptr_equal(deliveries[1].to, &stream);     /* JSON-only POST: the stream */
	assert_ptr_equal(deliveries[2].to, &stream);     /* unknown token: the stream */
}

static void test_server_messages_queue_until_stream(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target stream = {.name = "stream"}, other = {.name = "other"};

	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"notifications/a\"}");
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/b\"}");
	assert_int_equal(ndeliveries, 0);
	assert_int_equal(session_attach_stream(s, &stream), 0);
	assert_int_equal(ndeliveries, 2);
	assert_string_equal(delivered_method(0), "notifications/a");
	assert_string_equal(delivered_method(1), "notifications/b");
	assert_ptr_equal(deliveries[1].to, &stream);
	assert_false(deliveries[1].has_request);
	/* One stream at a time. */
	assert_int_equal(session_attach_stream(s, &other), -1);
	assert_ptr_equal(session_stream(s), &stream);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/c\"}");
	assert_int_equal(ndeliveries, 3);
	assert_ptr_equal(deliveries[2].to, &stream);
	/* Detached: queueing again. */
	session_detach(s, &stream);
	assert_null(session_stream(s));
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/d\"}");
	assert_int_equal(ndeliveries, 3);
	assert_int_equal(session_attach_stream(s, &other), 0);
	assert_int_equal(ndeliveries, 4);
	assert_ptr_equal(deliveries[3].to, &other);
}

static void test_queue_is_bounded(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target stream = {.name = "stream"};
	struct session_stats st;

	for (int i = 0; i < 5; i++)
		upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/n\"}");
	session_table_stats(t, &st);
	assert_int_equal(st.queued_dropped, 5 - default_limits.max_queue);
	session_attach_stream(s, &stream);
	assert_int_equal(ndeliveries, default_limits.max_queue);
}

static void test_queue_bytes_bounded(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target stream = {.name = "stream"};
	struct session_stats st;
	char big[1200];

	snprintf(big, sizeof(big), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/big\",\"params\":{\"x\":\"%0900d\"}}", 0);
	upstream_send(s, big);   /* ~950 bytes: fits in 1000 */
	upstream_send(s, big);   /* would pass 1000 bytes */
	session_table_stats(t, &st);
	assert_int_equal(st.queued_dropped, 1);
	session_attach_stream(s, &stream);
	assert_int_equal(ndeliveries, 1);
	assert_true(deliveries[0].has_raw);
}

static void test_server_request_rides_a_streaming_post(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target json_only = {.name = "json"}, post = {.name = "post", .streams = 1};

	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", &json_only, NULL);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\"}", &post, NULL);
	/* No GET stream: a server request would wait for ever, so it rides
	 * the POST that can stream; a notification waits for the stream. */
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"sampling/createMessage\"}");
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
	assert_int_equal(ndeliveries, 1);
	assert_ptr_equal(deliveries[0].to, &post);
	assert_string_equal(delivered_method(0), "sampling/createMessage");
}

static void test_legacy_face_everything_on_the_stream(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_SSE);
	struct target stream = {.name = "stream"};

	session_attach_stream(s, &stream);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"_meta\":{\"progressToken\":1}}}",
	            session_stream(s), NULL);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}");
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"roots/list\"}");
	assert_int_equal(ndeliveries, 3);
	for (size_t i = 0; i < 3; i++)
		assert_ptr_equal(deliveries[i].to, &stream);
	/* In the upstream's order. */
	assert_string_equal(delivered_method(0), "notifications/progress");
	assert_int_equal(delivered_id(1), 1);
	assert_string_equal(delivered_method(2), "roots/list");
}

static void test_cancel_withdraws_without_answer(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target post = {.name = "post"}, other = {.name = "other"};

	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", &post, NULL);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}", &other, NULL);
	assert_int_equal(post.withdrawn, 1);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	assert_int_equal(ndeliveries, 0);   /* the late response goes nowhere */
	/* The id is free again. */
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &post, NULL), 0);
}

static void test_waiter_gone_response_dropped(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target post = {.name = "post"};

	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", &post, NULL);
	session_detach(s, &post);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	assert_int_equal(ndeliveries, 0);
	assert_int_equal(session_state(s), SESSION_NEW);  /* a POST leaving ends nothing */
}

/* ---- the end of a session ----------------------------------------------------------- */

static void test_end_answers_each_request_once(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target p1 = {.name = "p1"}, p2 = {.name = "p2"}, stream = {.name = "stream"};
	char id[SESSION_ID_LEN + 1];

	memcpy(id, session_id(s), sizeof(id));
	session_attach_stream(s, &stream);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", &p1, NULL);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\"}", &p1, NULL);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\"}", &p2, NULL);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
	assert_int_equal(ndeliveries, 1);
	session_end(s, "the upstream closed its SSE stream");
	session_end(s, "again");   /* idempotent */
	assert_int_equal(ndeliveries, 3);
	assert_int_equal(delivered_id(1), 1);
	assert_ptr_equal(deliveries[1].to, &p1);
	assert_int_equal(delivered_id(2), 3);
	assert_ptr_equal(deliveries[2].to, &p2);
	for (size_t i = 1; i < 3; i++) {
		json_t *err = json_object_get(deliveries[i].msg, "error");
		assert_int_equal(json_integer_value(json_object_get(err, "code")), JRPC_UPSTREAM_ERROR);
		assert_non_null(strstr(json_string_value(json_object_get(err, "message")),
		                       "the upstream closed its SSE stream"));
		assert_true(deliveries[i].local);
		assert_int_equal(deliveries[i].status, 502);
		assert_true(deliveries[i].has_request);
	}
	assert_int_equal(stream.ended, 1);
	assert_string_equal(stream.end_why, "the upstream closed its SSE stream");
	assert_int_equal(session_state(s), SESSION_ENDED);
	assert_null(session_find(t, id));
	/* Nothing after the end. */
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}");
	const char *why = NULL;
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}", &p1, &why), -1);
	assert_string_equal(why, "the session has ended");
	assert_int_equal(ndeliveries, 3);
	session_table_reap(t);
}

static void test_end_skips_departed_waiters(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target gone = {.name = "gone"}, here = {.name = "here"};

	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", &gone, NULL);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\"}", &here, NULL);
	session_detach(s, &gone);
	session_end(s, "bye");
	assert_int_equal(ndeliveries, 1);
	assert_ptr_equal(deliveries[0].to, &here);
}

static void test_legacy_stream_gone_ends_session(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_SSE);
	struct target stream = {.name = "stream"};

	session_ref(s);
	session_attach_stream(s, &stream);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", &stream, NULL);
	session_detach(s, &stream);
	assert_int_equal(session_state(s), SESSION_ENDED);
	/* The stream is gone: nothing is delivered to it, nor ended twice. */
	assert_int_equal(ndeliveries, 0);
	assert_int_equal(stream.ended, 0);
	/* Still referenced: not freed by a reap; freed once released. */
	session_table_reap(t);
	assert_int_equal(session_state(s), SESSION_ENDED);
	session_unref(s);
	session_table_reap(t);
}

/* ---- time ------------------------------------------------------------------------- */

static void test_idle_session_expires(void **state)
{
	struct session_table *t = *state;
	struct session *idle = new_session(t, SESSION_FACE_STREAMABLE);
	struct session *listening = new_session(t, SESSION_FACE_STREAMABLE);
	struct session *busy = new_session(t, SESSION_FACE_STREAMABLE);
	struct target stream = {.name = "stream"}, post = {.name = "post"};
	struct session_stats st;
	char id[SESSION_ID_LEN + 1];

	memcpy(id, session_id(idle), sizeof(id));
	session_attach_stream(listening, &stream);
	client_send(busy, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", &post, NULL);
	uint64_t now = clock_mono_us();
	assert_int_equal(session_table_sweep(t, now), 0);
	assert_int_equal(session_table_sweep(t, now + default_limits.idle_us + 1000), 1);
	assert_null(session_find(t, id));
	assert_non_null(session_find(t, session_id(listening)));
	assert_non_null(session_find(t, session_id(busy)));
	session_table_stats(t, &st);
	assert_int_equal(st.expired, 1);
	assert_int_equal(ndeliveries, 0);
	session_table_reap(t);
}

static void test_overdue_request_answered_504(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target post = {.name = "post"};
	struct session_stats st;

	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", &post, NULL);
	uint64_t now = clock_mono_us();
	session_table_sweep(t, now + 1000);
	assert_int_equal(ndeliveries, 0);
	session_table_sweep(t, now + default_limits.request_us + 1000);
	assert_int_equal(ndeliveries, 1);
	assert_int_equal(delivered_id(0), 1);
	assert_int_equal(deliveries[0].status, 504);
	assert_true(deliveries[0].local);
	session_table_stats(t, &st);
	assert_int_equal(st.timeouts, 1);
	/* Answered once: the late response goes nowhere. */
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	assert_int_equal(ndeliveries, 1);
}

static void test_progress_extends_deadline(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target post = {.name = "post"}, stream = {.name = "stream"};
	uint64_t start = clock_mono_us();

	session_attach_stream(s, &stream);
	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"_meta\":{\"progressToken\":1}}}", &post, NULL);
	/* Progress arrives; the deadline restarts from (about) now. */
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}");
	size_t before = ndeliveries;
	uint64_t after_progress = clock_mono_us();
	session_table_sweep(t, start + default_limits.request_us - 1);
	assert_int_equal(ndeliveries, before);
	session_table_sweep(t, after_progress + default_limits.request_us + 1000);
	assert_int_equal(ndeliveries, before + 1);
	assert_int_equal(deliveries[before].status, 504);
}

static void test_undeliverable_is_dropped(void **state)
{
	struct session_table *t = *state;
	struct session *s = new_session(t, SESSION_FACE_STREAMABLE);
	struct target refusing = {.name = "refusing", .refuse = 1};

	client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &refusing, NULL);
	upstream_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	assert_int_equal(ndeliveries, 0);
	/* Taken all the same: its id is free, and the end answers nothing. */
	assert_int_equal(client_send(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &refusing, NULL), 0);
}

/* ---- upstream_sse helpers ------------------------------------------------------------ */

static struct px_upstream_conf conf_of(const char *host, const char *port, const char *target,
                                       int tls)
{
	struct px_upstream_conf uc = {0};
	uc.host = (char *)(uintptr_t)host;
	uc.port = (char *)(uintptr_t)port;
	uc.target = (char *)(uintptr_t)target;
	uc.tls = tls;
	return uc;
}

static void expect_endpoint(const struct px_upstream_conf *uc, const char *data, const char *want)
{
	char out[256];
	const char *why = NULL;
	int rc = upstream_sse_resolve_endpoint(uc, data, strlen(data), out, sizeof(out), &why);
	if (!want) {
		assert_int_equal(rc, -1);
		assert_non_null(why);
		return;
	}
	assert_int_equal(rc, 0);
	assert_string_equal(out, want);
}

static void test_endpoint_resolution(void **state)
{
	(void)state;
	struct px_upstream_conf uc = conf_of("127.0.0.1", "3001", "/api/sse?key=1", 0);

	expect_endpoint(&uc, "/message?sessionId=abc", "/message?sessionId=abc");
	expect_endpoint(&uc, "message?sessionId=abc", "/api/message?sessionId=abc");
	expect_endpoint(&uc, "?sessionId=abc", "/api/sse?sessionId=abc");
	expect_endpoint(&uc, "http://127.0.0.1:3001/m?s=1", "/m?s=1");
	expect_endpoint(&uc, "HTTP://127.0.0.1:3001/m", "/m");
	expect_endpoint(&uc, "//127.0.0.1:3001/m#frag", "/m");
	expect_endpoint(&uc, "http://127.0.0.1:3001", "/api/sse");
	/* Other origins: host, port, scheme, userinfo. */
	expect_endpoint(&uc, "http://evil.example:3001/m", NULL);
	expect_endpoint(&uc, "http://127.0.0.1:3002/m", NULL);
	expect_endpoint(&uc, "https://127.0.0.1:3001/m", NULL);
	expect_endpoint(&uc, "http://u@127.0.0.1:3001/m", NULL);
	expect_endpoint(&uc, "//evil.example/m", NULL);
	/* Framing attacks and garbage. */
	expect_endpoint(&uc, "/m\r\nX-Injected: 1", NULL);
	expect_endpoint(&uc, "/m x", NULL);
	expect_endpoint(&uc, "", NULL);

	struct px_upstream_conf def = conf_of("localhost", "80", "/sse", 0);
	expect_endpoint(&def, "http://LOCALHOST/messages", "/messages");
	expect_endpoint(&def, "http://localhost:80/messages", "/messages");
	expect_endpoint(&def, "http://localhost:8080/messages", NULL);
	struct px_upstream_conf v6 = conf_of("::1", "3001", "/sse", 0);
	expect_endpoint(&v6, "http://[::1]:3001/m", "/m");
	expect_endpoint(&v6, "http://[::2]:3001/m", NULL);
	struct px_upstream_conf tls = conf_of("h.example", "443", "/sse", 1);
	expect_endpoint(&tls, "https://h.example/m", "/m");
	expect_endpoint(&tls, "http://h.example/m", NULL);
}

static void test_endpoint_too_long(void **state)
{
	(void)state;
	struct px_upstream_conf uc = conf_of("127.0.0.1", "3001", "/sse", 0);
	char data[300], out[64];
	const char *why = NULL;
	memset(data, 'a', sizeof(data));
	data[0] = '/';
	assert_int_equal(upstream_sse_resolve_endpoint(&uc, data, sizeof(data), out, sizeof(out), &why), -1);
	assert_string_equal(why, "the upstream's endpoint is too long");
}

static void test_url_is_sse_and_probe_statuses(void **state)
{
	(void)state;
	struct px_upstream_conf a = conf_of("h", "1", "/sse", 0);
	struct px_upstream_conf b = conf_of("h", "1", "/x/sse?token=1", 0);
	struct px_upstream_conf c = conf_of("h", "1", "/mcp", 0);
	struct px_upstream_conf d = conf_of("h", "1", "/sse/", 0);
	assert_true(upstream_sse_url_is_sse(&a));
	assert_true(upstream_sse_url_is_sse(&b));
	assert_false(upstream_sse_url_is_sse(&c));
	assert_false(upstream_sse_url_is_sse(&d));

	assert_true(upstream_sse_probe_refused(404, "text/html; charset=utf-8"));
	assert_true(upstream_sse_probe_refused(405, NULL));
	assert_true(upstream_sse_probe_refused(400, "text/plain"));
	assert_false(upstream_sse_probe_refused(404, "application/json"));   /* a JSON-RPC error */
	assert_false(upstream_sse_probe_refused(401, NULL));
	assert_false(upstream_sse_probe_refused(500, NULL));
	assert_false(upstream_sse_probe_refused(200, "text/event-stream"));
}

/* Issue 17: the auto rule `check` shares with the proxy. The other
 * transport is tried on the URL as given: no sibling /sse is derived. */
static void test_auto_rule(void **state)
{
	(void)state;
	struct px_upstream_conf sse = conf_of("h", "1", "/x/sse?k=1", 0);
	struct px_upstream_conf mcp = conf_of("h", "1", "/x/mcp", 0);
	assert_int_equal(upstream_sse_auto_first(&sse), PX_TRANSPORT_SSE);
	assert_int_equal(upstream_sse_auto_first(&mcp), PX_TRANSPORT_STREAMABLE);

	/* The legacy GET tried first: what means "try Streamable HTTP". */
	assert_true(upstream_sse_stream_refused(404, "text/html"));
	assert_true(upstream_sse_stream_refused(405, NULL));
	assert_true(upstream_sse_stream_refused(200, "application/json")); /* not a stream */
	assert_true(upstream_sse_stream_refused(204, NULL));
	assert_false(upstream_sse_stream_refused(200, "text/event-stream; charset=utf-8"));
	assert_false(upstream_sse_stream_refused(401, NULL));  /* credentials, not transport */
	assert_false(upstream_sse_stream_refused(403, "text/plain"));
	assert_false(upstream_sse_stream_refused(502, NULL));
	assert_false(upstream_sse_stream_refused(404, "application/json"));
}

int main(void)
{
	log_setup(LOG_ERROR, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mint_id_format),
		cmocka_unit_test(test_mint_id_too_small_buffer),
		cmocka_unit_test(test_mint_ids_differ),
		cmocka_unit_test(test_mint_with_replica_prefix),  /* replicas */
		cmocka_unit_test_setup_teardown(test_new_and_find, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_name_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ended_session_frees_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_response_goes_to_its_waiter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accepted_tells_the_waiter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_string_and_integer_ids_differ, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_response_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_id_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_progress_follows_its_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_messages_queue_until_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_bytes_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_request_rides_a_streaming_post, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_face_everything_on_the_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_withdraws_without_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waiter_gone_response_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_end_answers_each_request_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_end_skips_departed_waiters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_stream_gone_ends_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_session_expires, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overdue_request_answered_504, setup, teardown),
		cmocka_unit_test_setup_teardown(test_progress_extends_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_undeliverable_is_dropped, setup, teardown),
		cmocka_unit_test(test_endpoint_resolution),
		cmocka_unit_test(test_endpoint_too_long),
		cmocka_unit_test(test_url_is_sse_and_probe_statuses),
		cmocka_unit_test(test_auto_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

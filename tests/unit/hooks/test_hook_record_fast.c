/* Unit tests for proxy/hooks/hook_record.c's fast paths: pooled records
 * reused clean, records handed to a ring without a copy (ring_swap, the displaced
 * block reused for the next record), several threads recording while
 * another reads the in-flight list and the ring, and the outboxes: a
 * worker never waits for a lock another thread holds (until its outbox is
 * full), and no record waiting in one is lost. The .c is included to
 * reach its static helpers (h2o's t/00unit style). */
#include "proxy/hooks/hook_record.c"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include <cmocka.h>

#include "admin/ring.h"

/* ---- records through a ring ------------------------------------------------- */

struct fix {
	struct inspect *in;
	struct redact *rd;
	struct hook_record *hr;
	struct ring *ring;
	pthread_mutex_t lock;
	int swap;                 /* the sink swaps (else it copies) */
	char *copies[64];         /* what a copying sink got */
	size_t ncopies;
	char *given[8];           /* buffers handed to the ring, in order */
	size_t ngiven;
	char *stored[8];          /* copies of the bytes handed to the ring */
	size_t stored_len[8];
};

static void sink(void *arg, struct hook_record_text *t, const struct record_keys *keys)
{
	struct fix *f = arg;
	if (!f->swap) {
		size_t len;
		char *s = hook_record_text_seal(t, ring_next_seq(f->ring), &len);
		assert_true(f->ncopies < 64);
		f->copies[f->ncopies++] = strndup(s, len);
		ring_append(f->ring, keys, s, len);
		return;
	}
	struct record_block *b = hook_record_text_block(t, ring_next_seq(f->ring));
	if (f->ngiven < 8) {
		f->stored[f->ngiven] = malloc(b->len);
		assert_non_null(f->stored[f->ngiven]);
		memcpy(f->stored[f->ngiven], b->json, b->len);
		f->stored_len[f->ngiven] = b->len;
		f->given[f->ngiven++] = b->block;
	}
	assert_int_not_equal(ring_swap(f->ring, b), 0);
}

static const struct record_sink sink_ops = {.record = sink};

static void fix_init(struct fix *f, int swap, size_t ring_size)
{
	memset(f, 0, sizeof(*f));
	f->swap = swap;
	f->in = inspect_new();
	f->rd = redact_new();
	f->ring = ring_new(ring_size);
	ring_set_text(f->ring, hook_record_stored_text);
	assert_int_equal(pthread_mutex_init(&f->lock, NULL), 0);
	f->hr = hook_record_new(f->in, f->rd, &sink_ops, f);
	assert_non_null(f->hr);
	hook_record_set_lock(f->hr, &f->lock);
}

static void fix_fini(struct fix *f)
{
	hook_record_free(f->hr);
	inspect_free(f->in);
	redact_free(f->rd);
	ring_free(f->ring);
	pthread_mutex_destroy(&f->lock);
	for (size_t i = 0; i < f->ncopies; i++)
		free(f->copies[i]);
	for (size_t i = 0; i < f->ngiven; i++)
		free(f->stored[i]);
}

static void one_call(struct inspect *in, struct inspect_where *w, int id, const char *text)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
	         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	         "\"arguments\":{\"message\":\"%s\",\"token\":\"t\"}}}",
	         id, text);
	json_t *req = json_loads(buf, 0, NULL);
	assert_non_null(req);
	struct inspect_msg m = {.dir = INSPECT_FROM_CLIENT, .kind = jrpc_classify(req), .msg = req,
	                        .request = req, .where = w};
	inspect_message(in, &m);
	snprintf(buf, sizeof(buf),
	         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":\"text\","
	         "\"text\":\"Echo: %s\"}]}}",
	         id, text);
	json_t *res = json_loads(buf, 0, NULL);
	assert_non_null(res);
	struct inspect_msg a = {.dir = INSPECT_FROM_SERVER, .kind = jrpc_classify(res), .msg = res,
	                        .request = req, .where = w};
	inspect_message(in, &a);
	struct inspect_exchange x = {.end = INSPECT_END_OK, .where = w, .status = 200,
	                             .latency_us = 10, .bytes_in = 1, .bytes_out = 2};
	inspect_exchange_done(in, &x);
	json_decref(req);
	json_decref(res);
}

static struct inspect_where where_of(const char *client)
{
	return (struct inspect_where){
		.client = client, .upstream = "up", .session_id = "s-1", .http_method = "POST",
		.client_transport = "streamable_http", .upstream_transport = "streamable_http",
	};
}

/* The text without "time" and "latency_us", which vary. */
static char *stable(const char *rec)
{
	json_t *j = json_loads(rec, 0, NULL);
	assert_non_null(j);
	json_object_del(j, "time");
	json_object_del(j, "latency_us");
	char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	return s;
}

static void test_swapped_records_match_copied_ones(void **state)
{
	(void)state;
	struct fix a, b;
	fix_init(&a, 0, 64);
	fix_init(&b, 1, 64);
	struct inspect_where wa = where_of("127.0.0.1:1"), wb = where_of("127.0.0.1:1");
	const char *texts[] = {"hello", "a \\\"quoted\\\" word", "tab\\there", "\xc3\xa9t\xc3\xa9",
	                       "x"};
	for (int i = 0; i < 5; i++) {
		one_call(a.in, &wa, i, texts[i]);
		one_call(b.in, &wb, i, texts[i]);
	}
	struct ring_item *items;
	struct ring_filter oldest = {.oldest_first = 1};
	size_t n = ring_read(b.ring, &oldest, &items);
	assert_int_equal(n, 5);
	assert_int_equal(a.ncopies, 5);
	for (size_t i = 0; i < n; i++) {
		char *x = stable(a.copies[i]), *y = stable(items[i].json);
		assert_string_equal(x, y);
		free(x);
		free(y);
	}
	ring_items_free(items, n);
	/* keys travel in the block: the filters see them */
	struct ring_filter f = {.method = "tools/call", .tool = "echo", .session = "s-1",
	                        .outcome = "ok"};
	n = ring_read(b.ring, &f, &items);
	assert_int_equal(n, 5);
	ring_items_free(items, n);
	fix_fini(&a);
	fix_fini(&b);
}

static void test_displaced_block_is_reused(void **state)
{
	(void)state;
	struct fix f;
	fix_init(&f, 1, 2);
	struct inspect_where w = where_of("127.0.0.1:2");
	one_call(f.in, &w, 1, "one");
	one_call(f.in, &w, 2, "two");
	/* the ring is full: each record now displaces one, whose block the
	 * recorder writes the next record into */
	one_call(f.in, &w, 3, "three");
	one_call(f.in, &w, 4, "four");
	assert_int_equal(f.ngiven, 4);
	assert_ptr_equal(f.given[3], f.given[0]);
	assert_int_equal(ring_dropped(f.ring), 2);
	struct ring_item *items;
	size_t n = ring_read(f.ring, NULL, &items);
	assert_int_equal(n, 2);
	assert_non_null(strstr(items[0].json, "\"seq\":4,"));
	assert_non_null(strstr(items[0].json, "Echo: four"));
	assert_non_null(strstr(items[1].json, "Echo: three"));
	ring_items_free(items, n);
	fix_fini(&f);
}

/* Records are kept in a stored form and written as text when read (issue
 * 20): redaction still comes first, so the bytes the ring holds carry no
 * secret, neither a secret-looking argument's value nor a configured
 * literal in the arguments or the result, while what is not secret is
 * there. */
static void test_ring_holds_no_secret(void **state)
{
	(void)state;
	struct fix f;
	fix_init(&f, 1, 4);
	assert_int_equal(redact_add_value(f.rd, "lit-secret-123"), 0);
	struct inspect_where w = where_of("127.0.0.1:3");
	one_call(f.in, &w, 1, "visible lit-secret-123");
	const char *req_text =
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"login\",\"arguments\":{\"user\":\"ann\",\"api_key\":\"k-9f8e7d6c5b\"}}}";
	json_t *req = json_loads(req_text, 0, NULL);
	json_t *res = json_loads("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":"
	                         "\"text\",\"text\":\"{\\\"password\\\":\\\"hunter2-pw\\\"}\"}]}}",
	                         0, NULL);
	assert_non_null(req);
	assert_non_null(res);
	struct inspect_msg m = {.dir = INSPECT_FROM_CLIENT, .kind = jrpc_classify(req), .msg = req,
	                        .request = req, .where = &w};
	inspect_message(f.in, &m);
	struct inspect_msg a = {.dir = INSPECT_FROM_SERVER, .kind = jrpc_classify(res), .msg = res,
	                        .request = req, .where = &w};
	inspect_message(f.in, &a);
	struct inspect_exchange x = {.end = INSPECT_END_OK, .where = &w, .status = 200};
	inspect_exchange_done(f.in, &x);
	json_decref(req);
	json_decref(res);

	assert_int_equal(f.ngiven, 2);
	static const char *const secrets[] = {"lit-secret-123", "k-9f8e7d6c5b", "hunter2-pw"};
	for (size_t i = 0; i < f.ngiven; i++)
		for (size_t k = 0; k < 3; k++)
			assert_null(memmem(f.stored[i], f.stored_len[i], secrets[k], strlen(secrets[k])));
	assert_non_null(memmem(f.stored[0], f.stored_len[0], "Echo: visible", 13));
	assert_non_null(memmem(f.stored[1], f.stored_len[1], "ann", 3));
	/* and the text read from them shows the masks */
	struct ring_item *items;
	size_t n = ring_read(f.ring, NULL, &items);
	assert_int_equal(n, 2);
	assert_non_null(strstr(items[0].json, "\"api_key\\\":\\\"" REDACT_MASK));
	assert_non_null(strstr(items[0].json, "\"password\\\":\\\"" REDACT_MASK));
	assert_non_null(strstr(items[1].json, "Echo: visible " REDACT_MASK));
	ring_items_free(items, n);
	fix_fini(&f);
}

/* ---- the pools ------------------------------------------------------------ */

/* A pooled record comes back whole-cleared, arenas emptied but kept: no
 * member length, flag or number of its last use is left in it. */
static void test_reused_record_is_clean(void **state)
{
	(void)state;
	struct hr_local l = {0};
	struct pending *p = pending_get(&l);
	assert_non_null(p);
	struct record_text_rec *r = &p->rec;
	rec_set(r, RT_METHOD, "tools/call");
	rec_set(r, RT_PREVIEW, "a \"quoted\" answer");
	r->finished = r->modified = 1;
	r->is_error = 1;
	r->latency_us = 42;
	char *arena = r->arena.p;
	pending_put(&l, p);
	struct pending *q = pending_get(&l);
	assert_ptr_equal(q, p);
	r = &q->rec;
	assert_ptr_equal(r->arena.p, arena);
	assert_int_equal(r->arena.len, 0);
	assert_int_equal(r->ans.len, 0);
	for (int f = 0; f < RT_NSTR; f++) {
		assert_int_equal(r->str[f], 0);
		assert_int_equal(r->len[f], 0);
		assert_int_equal(r->esc[f], 0);
	}
	assert_int_equal(r->finished + r->modified + r->is_error, 0);
	assert_int_equal(r->latency_us, 0);
	free(r->arena.p);
	free(r->ans.p);
	free(q);
}

/* ---- threads ---------------------------------------------------------------- */

#define CALLS_PER_THREAD 2000

struct worker {
	struct fix *f;
	struct inspect *in;    /* the worker's clone of the chain */
	char client[32];
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct inspect_where w = where_of(wk->client);
	for (int i = 0; i < CALLS_PER_THREAD; i++)
		one_call(wk->in, &w, i, "hi");
	return NULL;
}

static void test_threads_record_under_the_lock(void **state)
{
	(void)state;
	struct fix f;
	fix_init(&f, 1, 256);
	struct worker wk[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		wk[i].f = &f;
		wk[i].in = inspect_clone(f.in);
		assert_non_null(wk[i].in);
		snprintf(wk[i].client, sizeof(wk[i].client), "127.0.0.1:%d", 1000 + i);
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &wk[i]), 0);
	}
	/* the admin endpoint's side: reads while they write, holding the
	 * lock as admin_lock/admin_unlock do */
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&f.lock);
		hook_record_drain_locked(f.hr);
		size_t count = 0;
		json_t *list = hook_record_inflight(f.hr, 10, &count);
		struct ring_item *items;
		size_t n = ring_read(f.ring, NULL, &items);
		pthread_mutex_unlock(&f.lock);
		hook_record_unlocked(f.hr);
		assert_non_null(list);
		assert_int_equal(json_array_size(list), count < 10 ? count : 10);
		json_decref(list);
		for (size_t k = 0; k < n; k++) {
			json_t *j = json_loads(items[k].json, 0, NULL);
			assert_non_null(j);
			assert_int_equal(json_integer_value(json_object_get(j, "seq")), items[k].seq);
			json_decref(j);
		}
		ring_items_free(items, n);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		inspect_free(wk[i].in);
	}
	/* Nothing left waiting once every thread stopped: each record was
	 * published by its worker or by the lock's holder of the moment. */
	assert_int_equal(ring_newest_seq(f.ring), 2 * CALLS_PER_THREAD);
	assert_int_equal(atomic_load(&f.hr->waiting), 0);
	assert_int_equal(hook_record_inflight_count(f.hr), 0);
	fix_fini(&f);
}

/* ---- the outboxes ---------------------------------------------------------- */

struct held_worker {
	struct fix *f;
	struct inspect *in;
	int calls;
	int done;                 /* atomic: the worker finished its calls */
};

static void *held_worker_main(void *arg)
{
	struct held_worker *hw = arg;
	struct inspect_where w = where_of("127.0.0.1:3000");
	for (int i = 1; i <= hw->calls; i++)
		one_call(hw->in, &w, i, "held");
	__atomic_store_n(&hw->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int wait_done(struct held_worker *hw, int ms)
{
	for (int i = 0; i < ms && !__atomic_load_n(&hw->done, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	return __atomic_load_n(&hw->done, __ATOMIC_ACQUIRE);
}

/* While another thread holds the lock (the admin endpoint reading, or the
 * other worker preempted while publishing), a worker's calls complete
 * all the same: their records wait, and the holder publishes them, in
 * order, when it lets go. */
static void test_worker_never_waits_for_the_lock(void **state)
{
	(void)state;
	struct fix f;
	fix_init(&f, 1, 256);
	struct held_worker hw = {.f = &f, .in = inspect_clone(f.in), .calls = OUTBOX_SIZE - 1};
	assert_non_null(hw.in);
	pthread_mutex_lock(&f.lock);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, held_worker_main, &hw), 0);
	assert_true(wait_done(&hw, 10000));
	assert_int_equal(ring_newest_seq(f.ring), 0);
	assert_int_equal(atomic_load(&f.hr->waiting), OUTBOX_SIZE - 1);
	pthread_mutex_unlock(&f.lock);
	hook_record_unlocked(f.hr);
	assert_int_equal(ring_newest_seq(f.ring), OUTBOX_SIZE - 1);
	struct ring_item *items;
	struct ring_filter oldest = {.oldest_first = 1};
	size_t n = ring_read(f.ring, &oldest, &items);
	assert_int_equal(n, OUTBOX_SIZE - 1);
	for (size_t i = 0; i < n; i++) {
		json_t *j = json_loads(items[i].json, 0, NULL);
		assert_non_null(j);
		assert_int_equal(json_integer_value(json_object_get(j, "id")), (json_int_t)i + 1);
		json_decref(j);
	}
	ring_items_free(items, n);
	pthread_join(th, NULL);
	inspect_free(hw.in);
	fix_fini(&f);
}

/* A full outbox makes its worker wait for the lock (memory stays
 * bounded); nothing is lost, nothing is published twice. */
static void test_full_outbox_waits_and_loses_nothing(void **state)
{
	(void)state;
	struct fix f;
	fix_init(&f, 1, 1024);
	struct held_worker hw = {.f = &f, .in = inspect_clone(f.in), .calls = OUTBOX_SIZE + 10};
	assert_non_null(hw.in);
	pthread_mutex_lock(&f.lock);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, held_worker_main, &hw), 0);
	usleep(200 * 1000);
	assert_false(__atomic_load_n(&hw.done, __ATOMIC_ACQUIRE)); /* waits: the outbox is full */
	assert_int_equal(atomic_load(&f.hr->waiting), OUTBOX_SIZE);
	pthread_mutex_unlock(&f.lock);
	hook_record_unlocked(f.hr);
	pthread_join(th, NULL);
	assert_int_equal(ring_newest_seq(f.ring), OUTBOX_SIZE + 10);
	assert_int_equal(atomic_load(&f.hr->waiting), 0);
	inspect_free(hw.in);
	fix_fini(&f);
}

/* Records waiting when the recorder is freed still reach the sink. */
static void test_free_publishes_what_waits(void **state)
{
	(void)state;
	struct fix f;
	fix_init(&f, 1, 16);
	struct held_worker hw = {.f = &f, .in = inspect_clone(f.in), .calls = 3};
	pthread_mutex_lock(&f.lock);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, held_worker_main, &hw), 0);
	pthread_join(th, NULL);
	pthread_mutex_unlock(&f.lock); /* without hook_record_unlocked */
	assert_int_equal(ring_newest_seq(f.ring), 0);
	inspect_free(hw.in);
	hook_record_free(f.hr);
	f.hr = NULL;
	assert_int_equal(ring_newest_seq(f.ring), 3);
	fix_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_swapped_records_match_copied_ones),
		cmocka_unit_test(test_displaced_block_is_reused),
		cmocka_unit_test(test_ring_holds_no_secret),
		cmocka_unit_test(test_reused_record_is_clean),
		cmocka_unit_test(test_threads_record_under_the_lock),
		cmocka_unit_test(test_worker_never_waits_for_the_lock),
		cmocka_unit_test(test_full_outbox_waits_and_loses_nothing),
		cmocka_unit_test(test_free_publishes_what_waits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

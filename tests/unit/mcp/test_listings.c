/* Unit tests for proxy/mcp/listings.c: one upstream's listings read by
 * several threads at once share one kept listing, and each tree built is
 * the tree of its own text. Run under ThreadSanitizer too (make tsan).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/base/jparse.h"
#include "proxy/mcp/listings.h"

#define NTOOLS 120
#define ROUNDS 60

/* A tools/list reply of NTOOLS tools, tool `which` described with `ver`
 * (the bytes change there only). Owned. */
static char *listing(int which, int ver)
{
	size_t cap = NTOOLS * 160 + 256, o = 0;
	char *t = malloc(cap);
	assert_non_null(t);
	o += (size_t)snprintf(t + o, cap - o, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[");
	for (int i = 0; i < NTOOLS; i++)
		o += (size_t)snprintf(t + o, cap - o,
		                      "%s{\"name\":\"tool_%03d\",\"description\":\"v%d of tool %d\","
		                      "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":"
		                      "{\"type\":\"string\"}}}}",
		                      i ? "," : "", i, i == which ? ver : 0, i);
	snprintf(t + o, cap - o, "]}}");
	assert_true(strlen(t) >= JREUSE_MIN_BYTES);
	return t;
}

static void test_shared_tools(void **state)
{
	(void)state;
	struct listings *l = listings_new();
	assert_non_null(l);
	struct jreuse_stats did;
	struct rcbytes *kept, *kept_a;
	struct jparse_span span = {.name = "result"};
	char *a = listing(3, 1), *b = listing(3, 2);
	json_t *ta = listings_parse(l, 0, a, strlen(a), 0, &span, &did, &kept_a);
	assert_int_equal(did.parsed, NTOOLS);
	/* The result's bytes, as kept, for the hooks to share. */
	assert_non_null(kept_a);
	assert_int_equal(kept_a->len, span.len);
	assert_memory_equal(kept_a->text, span.at, span.len);
	json_t *tb = listings_parse(l, 0, b, strlen(b), 0, NULL, &did, &kept);
	assert_int_equal(did.reused, NTOOLS - 1);
	assert_int_equal(did.parsed, 1);
	assert_non_null(kept);
	assert_ptr_not_equal(kept, kept_a);
	/* Held: the bytes outlive the listing kept after them. */
	assert_memory_equal(kept_a->text, span.at, span.len);
	rcbytes_unref(kept);
	rcbytes_unref(kept_a);
	const json_t *ka = json_object_get(json_object_get(ta, "result"), "tools");
	const json_t *kb = json_object_get(json_object_get(tb, "result"), "tools");
	assert_ptr_equal(json_array_get(ka, 7), json_array_get(kb, 7));
	assert_ptr_not_equal(json_array_get(ka, 3), json_array_get(kb, 3));
	/* Another upstream keeps its own; one past the last is parsed whole. */
	json_t *tc = listings_parse(l, 1, a, strlen(a), 0, NULL, &did, &kept);
	assert_int_equal(did.parsed, NTOOLS);
	rcbytes_unref(kept);
	json_t *td = listings_parse(l, LISTINGS_MAX_UPSTREAMS, a, strlen(a), 0, NULL, &did, &kept);
	assert_non_null(td);
	assert_null(kept);
	assert_int_equal(did.parsed + did.reused, 0);
	assert_null(listings_parse(l, 0, "{\"x\":", 5, 0, NULL, &did, &kept));
	assert_null(kept);
	json_decref(ta);
	json_decref(tb);
	json_decref(tc);
	json_decref(td);
	free(a);
	free(b);
	listings_free(l);
	listings_free(NULL);
}

struct worker {
	struct listings *l;
	int id;
	int bad;
};

/* Each thread lists in turn, changing the tool its id names: the kept
 * listing is the other thread's as often as its own. */
static void *lister(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < ROUNDS; i++) {
		char *t = listing(w->id, i);
		struct jreuse_stats did;
		struct rcbytes *kept;
		struct jparse_span got = {.name = "result"};
		json_t *tree = listings_parse(w->l, 0, t, strlen(t), 0, &got, &did, &kept);
		json_t *want = jparse_span(t, strlen(t), 0, NULL);
		if (!tree || !want || !json_equal(tree, want) || !kept || kept->len != got.len ||
		    memcmp(kept->text, got.at, got.len) != 0)
			w->bad++;
		rcbytes_unref(kept);
		json_decref(want);
		json_decref(tree);
		free(t);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct listings *l = listings_new();
	assert_non_null(l);
	struct worker w[2] = {{l, 1, 0}, {l, 2, 0}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, lister, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(w[0].bad, 0);
	assert_int_equal(w[1].bad, 0);
	listings_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_tools),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

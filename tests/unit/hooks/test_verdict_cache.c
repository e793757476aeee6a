/* Unit tests for proxy/hooks/verdict_cache.c, through its public API: a
 * verdict is found again only for the very bytes and era it was kept for,
 * goes when the listing text it shares changes, and a listing checked
 * through the memo costs the tools that changed, with the report a plain
 * check gives.
 *
 * JSON is written with ' for " (th_json_text()).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "checks/contract.h"
#include "proxy/hooks/verdict_cache.h"
#include "proxy/base/rcbytes.h"
#include "tests/unit/helpers.h"

static int freed;

static void count_free(void *v)
{
	freed++;
	free(v);
}

#define TOOL(n, d)                                                                          \
	"{'name':'" n "','description':'" d "','inputSchema':{'type':'object','properties':{}}}"

static char *listing(const char *tools)
{
	char *q = th_quotes(tools);
	size_t n = strlen(q) + 16;
	char *s = malloc(n);
	assert_non_null(s);
	snprintf(s, n, "{\"tools\":[%s]}", q);
	free(q);
	return s;
}

static void test_verdict_same_bytes_same_era(void **state)
{
	(void)state;
	struct verdict_cache *vc = verdict_cache_new();
	const char *a = "{\"tools\":[]}", *b = "{\"tools\":[ ]}";
	freed = 0;
	assert_null(verdict_cache_lookup(vc, a, strlen(a), NULL));
	int *v = malloc(sizeof(*v));
	verdict_cache_keep(vc, a, strlen(a), "2025-06-18", v, count_free);
	assert_ptr_equal(verdict_cache_lookup(vc, a, strlen(a), "2025-06-18"), v);
	assert_null(verdict_cache_lookup(vc, a, strlen(a), NULL));          /* other era */
	assert_null(verdict_cache_lookup(vc, a, strlen(a), "2025-03-26"));
	assert_null(verdict_cache_lookup(vc, b, strlen(b), "2025-06-18"));  /* other bytes */
	assert_null(verdict_cache_lookup(vc, NULL, 0, "2025-06-18"));
	/* A new verdict replaces the old one, which is freed. */
	verdict_cache_keep(vc, b, strlen(b), NULL, malloc(1), count_free);
	assert_int_equal(freed, 1);
	assert_null(verdict_cache_lookup(vc, a, strlen(a), "2025-06-18"));
	assert_non_null(verdict_cache_lookup(vc, b, strlen(b), NULL));
	verdict_cache_free(vc);
	assert_int_equal(freed, 2);
}

static void test_memo_checks_what_changed(void **state)
{
	(void)state;
	struct verdict_cache *vc = verdict_cache_new();
	struct contract_opts opts = {0};
	char *one = listing(TOOL("search", "Searches the index for documents.") ","
	                    TOOL("fetch", "Fetches one document by its id."));
	char *two = listing(TOOL("search", "Searches the index for documents.") ","
	                    TOOL("fetch", "Fetches one document by its identifier."));
	json_t *p1 = th_json_text(one, 0), *p2 = th_json_text(two, 0);
	uint64_t checked;

	struct contract_report *r = verdict_cache_check(vc, p1, one, strlen(one), NULL, &opts, &checked);
	assert_non_null(r);
	assert_int_equal(checked, 2);
	contract_report_free(r);
	r = verdict_cache_check(vc, p2, two, strlen(two), NULL, &opts, &checked);
	assert_int_equal(checked, 1); /* only fetch's text is new */
	const json_t *pages[] = {p2};
	struct contract_report *plain = contract_check(pages, 1, &opts);
	json_t *a = verdict_cache_report_json(vc, r), *b = contract_report_json(plain);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	contract_report_free(plain);
	contract_report_free(r);
	/* Without text: a plain check. */
	r = verdict_cache_check(vc, p2, NULL, 0, NULL, &opts, &checked);
	assert_int_equal(checked, UINT64_MAX);
	contract_report_free(r);
	/* A NULL cache is a plain check too. */
	r = verdict_cache_check(NULL, p2, two, strlen(two), NULL, &opts, &checked);
	assert_non_null(r);
	assert_int_equal(checked, UINT64_MAX);
	contract_report_free(r);
	json_decref(p1);
	json_decref(p2);
	free(one);
	free(two);
	verdict_cache_free(vc);
}

static void test_shared_text_stays_with_its_verdict(void **state)
{
	(void)state;
	struct verdict_cache *vc = verdict_cache_new();
	struct contract_opts opts = {0};
	char *one = listing(TOOL("search", "Searches the index for documents."));
	char *two = listing(TOOL("search", "Searches the whole index for documents."));
	json_t *p1 = th_json_text(one, 0), *p2 = th_json_text(two, 0);
	uint64_t checked;
	freed = 0;

	/* The verdict of the listing just checked shares its text. */
	assert_null(verdict_cache_lookup(vc, one, strlen(one), NULL));
	contract_report_free(verdict_cache_check(vc, p1, one, strlen(one), NULL, &opts, &checked));
	verdict_cache_keep(vc, one, strlen(one), NULL, malloc(1), count_free);
	assert_non_null(verdict_cache_lookup(vc, one, strlen(one), NULL));
	/* Another listing's check takes the skim's text on: the verdict keeps
	 * the bytes it is for (a reference), and is found for them. */
	char *copy = strdup(one);
	contract_report_free(verdict_cache_check(vc, p2, two, strlen(two), NULL, &opts, &checked));
	assert_int_equal(freed, 0);
	assert_non_null(verdict_cache_lookup(vc, copy, strlen(copy), NULL));
	assert_null(verdict_cache_lookup(vc, two, strlen(two), NULL));
	/* The next verdict replaces it. */
	contract_report_free(verdict_cache_check(vc, p2, two, strlen(two), NULL, &opts, &checked));
	verdict_cache_keep(vc, two, strlen(two), NULL, malloc(1), count_free);
	assert_int_equal(freed, 1);
	assert_null(verdict_cache_lookup(vc, copy, strlen(copy), NULL));
	assert_non_null(verdict_cache_lookup(vc, two, strlen(two), NULL));
	free(copy);
	json_decref(p1);
	json_decref(p2);
	free(one);
	free(two);
	verdict_cache_free(vc);
}

/* The skim keeps the transport's bytes by reference: the text it answers
 * is those very bytes, held after the caller lets go. */
static void test_skim_shares_the_bytes(void **state)
{
	(void)state;
	struct verdict_cache *vc = verdict_cache_new();
	struct contract_opts opts = {0};
	char *one = listing(TOOL("search", "Searches the index for documents."));
	json_t *p1 = th_json_text(one, 0);
	uint64_t checked;
	struct rcbytes *b = rcbytes_new(one, strlen(one));
	contract_report_free(verdict_cache_check(vc, p1, one, strlen(one), b, &opts, &checked));
	size_t len;
	int now;
	assert_ptr_equal(verdict_cache_text(vc, &len, &now), b->text);
	assert_int_equal(len, strlen(one));
	assert_true(now);
	rcbytes_unref(b);
	assert_memory_equal(verdict_cache_text(vc, &len, NULL), one, len);
	/* Bytes of another length are not taken: a copy is kept. */
	struct rcbytes *short_b = rcbytes_new(one, 3);
	contract_report_free(verdict_cache_check(vc, p1, one, strlen(one), short_b, &opts, &checked));
	assert_ptr_not_equal(verdict_cache_text(vc, &len, NULL), short_b->text);
	assert_memory_equal(verdict_cache_text(vc, &len, NULL), one, len);
	rcbytes_unref(short_b);
	json_decref(p1);
	free(one);
	verdict_cache_free(vc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict_same_bytes_same_era),
		cmocka_unit_test(test_memo_checks_what_changed),
		cmocka_unit_test(test_shared_text_stays_with_its_verdict),
		cmocka_unit_test(test_skim_shares_the_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

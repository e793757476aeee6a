/* Unit tests for admin/ring.c: bounds, overwrite order, drops, filters,
 * copy-out reads. Records are tiny JSON texts naming their own number so
 * a test can state what it expects to read back as one string. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admin/ring.h"

static uint64_t put(struct ring *r, int n, const char *method, const char *tool,
                    const char *session, const char *outcome)
{
	char json[64];
	struct record_keys k = {method, tool, session, outcome};
	int len = snprintf(json, sizeof(json), "{\"n\":%d}", n);
	return ring_append(r, &k, json, (size_t)len);
}

/* "10,9,8": the n of each record read, in order. */
static void read_as(const struct ring *r, const struct ring_filter *f, const char *want)
{
	struct ring_item *items;
	char got[4096] = "";
	size_t n = ring_read(r, f, &items);
	assert_int_not_equal(n, (size_t)-1);
	for (size_t i = 0; i < n; i++) {
		int v;
		assert_int_equal(sscanf(items[i].json, "{\"n\":%d}", &v), 1);
		assert_int_equal(strlen(items[i].json), items[i].len);
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%d", i ? "," : "", v);
	}
	if (n == 0)
		assert_null(items);
	ring_items_free(items, n);
	assert_string_equal(got, want);
}

static void test_bad_sizes(void **state)
{
	(void)state;
	assert_null(ring_new(0));
	assert_null(ring_new(RING_MAX_SIZE + 1));
	struct ring *r = ring_new(RING_MAX_SIZE);
	assert_non_null(r);
	ring_free(r);
	ring_free(NULL);
}

static void test_empty(void **state)
{
	(void)state;
	struct ring *r = ring_new(4);
	assert_int_equal(ring_size(r), 4);
	assert_int_equal(ring_count(r), 0);
	assert_int_equal(ring_dropped(r), 0);
	assert_int_equal(ring_oldest_seq(r), 0);
	assert_int_equal(ring_newest_seq(r), 0);
	assert_int_equal(ring_next_seq(r), 1);
	read_as(r, NULL, "");
	ring_free(r);
}

static void test_append_numbers_from_one(void **state)
{
	(void)state;
	struct ring *r = ring_new(4);
	for (int i = 1; i <= 3; i++) {
		assert_int_equal(ring_next_seq(r), (uint64_t)i);
		assert_int_equal(put(r, i, NULL, NULL, NULL, NULL), (uint64_t)i);
	}
	assert_int_equal(ring_count(r), 3);
	assert_int_equal(ring_oldest_seq(r), 1);
	assert_int_equal(ring_newest_seq(r), 3);
	read_as(r, NULL, "3,2,1");
	struct ring_filter f = {.oldest_first = 1};
	read_as(r, &f, "1,2,3");
	ring_free(r);
}

static void test_overwrite_oldest_and_count_drops(void **state)
{
	(void)state;
	struct ring *r = ring_new(4);
	for (int i = 1; i <= 10; i++)
		put(r, i, NULL, NULL, NULL, NULL);
	assert_int_equal(ring_count(r), 4);
	assert_int_equal(ring_dropped(r), 6);
	assert_int_equal(ring_oldest_seq(r), 7);
	assert_int_equal(ring_newest_seq(r), 10);
	read_as(r, NULL, "10,9,8,7");
	struct ring_filter f = {.oldest_first = 1};
	read_as(r, &f, "7,8,9,10");
	/* one more: exactly one more drop, the oldest */
	put(r, 11, NULL, NULL, NULL, NULL);
	assert_int_equal(ring_dropped(r), 7);
	read_as(r, NULL, "11,10,9,8");
	ring_free(r);
}

static void test_size_one(void **state)
{
	(void)state;
	struct ring *r = ring_new(1);
	put(r, 1, NULL, NULL, NULL, NULL);
	put(r, 2, NULL, NULL, NULL, NULL);
	read_as(r, NULL, "2");
	assert_int_equal(ring_dropped(r), 1);
	ring_free(r);
}

static void test_limit_and_since(void **state)
{
	(void)state;
	struct ring *r = ring_new(8);
	for (int i = 1; i <= 12; i++)
		put(r, i, NULL, NULL, NULL, NULL);
	/* held: 5..12 */
	struct ring_filter f = {.limit = 3};
	read_as(r, &f, "12,11,10");
	f = (struct ring_filter){.since = 9};
	read_as(r, &f, "12,11,10");
	f = (struct ring_filter){.since = 9, .oldest_first = 1, .limit = 2};
	read_as(r, &f, "10,11");
	f = (struct ring_filter){.since = 12};
	read_as(r, &f, "");
	f = (struct ring_filter){.since = 1000};
	read_as(r, &f, "");
	/* since older than the oldest held: everything held */
	f = (struct ring_filter){.since = 2, .oldest_first = 1};
	read_as(r, &f, "5,6,7,8,9,10,11,12");
	ring_free(r);
}

static void test_filters(void **state)
{
	(void)state;
	struct ring *r = ring_new(16);
	put(r, 1, "initialize", NULL, "s1", "ok");
	put(r, 2, "tools/call", "echo", "s1", "ok");
	put(r, 3, "tools/call", "add", "s2", "tool_error");
	put(r, 4, "tools/call", "echo", "s2", "blocked");
	put(r, 5, "tools/list", NULL, NULL, "ok");
	put(r, 6, "tools/call", "echo", "s1", "rpc_error");

	struct ring_filter f = {.method = "tools/call"};
	read_as(r, &f, "6,4,3,2");
	f = (struct ring_filter){.tool = "echo"};
	read_as(r, &f, "6,4,2");
	f = (struct ring_filter){.session = "s2"};
	read_as(r, &f, "4,3");
	f = (struct ring_filter){.outcome = "ok"};
	read_as(r, &f, "5,2,1");
	f = (struct ring_filter){.tool = "echo", .session = "s1"};
	read_as(r, &f, "6,2");
	f = (struct ring_filter){.tool = "echo", .limit = 1};
	read_as(r, &f, "6");
	f = (struct ring_filter){.tool = "echo", .since = 2, .oldest_first = 1};
	read_as(r, &f, "4,6");
	/* a record without a key never matches a filter on it */
	f = (struct ring_filter){.session = ""};
	read_as(r, &f, "");
	f = (struct ring_filter){.tool = "nope"};
	read_as(r, &f, "");
	ring_free(r);
}

static void test_keys_match(void **state)
{
	(void)state;
	struct record_keys k = {"tools/call", "echo", NULL, "ok"};
	struct ring_filter f = {0};
	assert_true(ring_keys_match(&k, NULL));
	assert_true(ring_keys_match(&k, &f));
	f.tool = "echo";
	f.outcome = "ok";
	assert_true(ring_keys_match(&k, &f));
	f.session = "s";
	assert_false(ring_keys_match(&k, &f));
	f.session = NULL;
	f.method = "tools/list";
	assert_false(ring_keys_match(&k, &f));
}

static void test_long_keys_are_cut_alike(void **state)
{
	(void)state;
	char longname[RING_KEY_MAX * 2];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	struct ring *r = ring_new(2);
	put(r, 1, NULL, longname, NULL, NULL);
	struct ring_filter f = {.tool = longname};
	read_as(r, &f, "1");
	ring_free(r);
}

static void test_too_big_is_refused(void **state)
{
	(void)state;
	struct ring *r = ring_new(2);
	char *big = malloc(RING_MAX_RECORD_BYTES + 1);
	memset(big, 'a', RING_MAX_RECORD_BYTES + 1);
	assert_int_equal(ring_append(r, NULL, big, RING_MAX_RECORD_BYTES + 1), 0);
	assert_int_equal(ring_next_seq(r), 1);
	assert_int_equal(ring_count(r), 0);
	/* exactly the maximum is fine */
	assert_int_equal(ring_append(r, NULL, big, RING_MAX_RECORD_BYTES), 1);
	free(big);
	ring_free(r);
}

static void test_reads_are_copies(void **state)
{
	(void)state;
	struct ring *r = ring_new(2);
	struct ring_item *items;
	put(r, 1, NULL, NULL, NULL, NULL);
	size_t n = ring_read(r, NULL, &items);
	assert_int_equal(n, 1);
	assert_int_equal(items[0].seq, 1);
	/* the ring overwrites the slot; the copy is unaffected */
	put(r, 2, NULL, NULL, NULL, NULL);
	put(r, 3, NULL, NULL, NULL, NULL);
	assert_string_equal(items[0].json, "{\"n\":1}");
	items[0].json[2] = 'X';
	ring_items_free(items, n);
	read_as(r, NULL, "3,2");
	ring_free(r);
}

static void test_null_keys_and_embedded_data(void **state)
{
	(void)state;
	struct ring *r = ring_new(3);
	assert_int_equal(ring_append(r, NULL, "[1]", 3), 1);
	struct ring_item *items;
	assert_int_equal(ring_read(r, NULL, &items), 1);
	assert_string_equal(items[0].json, "[1]");
	assert_int_equal(items[0].len, 3);
	ring_items_free(items, 1);
	ring_free(r);
}

/* The ring's memory does not depend on how many records went through. */
static void test_flood_stays_bounded(void **state)
{
	(void)state;
	struct ring *r = ring_new(64);
	for (int i = 1; i <= 100000; i++)
		put(r, i, "tools/call", "echo", "s", "ok");
	assert_int_equal(ring_count(r), 64);
	assert_int_equal(ring_dropped(r), 100000 - 64);
	struct ring_filter f = {.limit = 2};
	read_as(r, &f, "100000,99999");
	ring_free(r);
}

/* A block as a writer builds it for ring_swap: some room in front (the
 * recorder's place for "seq"), the text, then the keys. */
static struct record_block block_of(int n, const char *method, const char *outcome)
{
	struct record_block b = {0};
	b.cap = 256;
	b.block = malloc(b.cap);
	assert_non_null(b.block);
	char *json = b.block + 8;
	int len = snprintf(json, 64, "{\"n\":%d}", n);
	char *k = json + len + 1;
	strcpy(k, method);
	b.json = json;
	b.len = (size_t)len;
	b.keys.method = k;
	b.keys.outcome = outcome; /* a static string */
	return b;
}

static void test_swap_moves_blocks(void **state)
{
	(void)state;
	struct ring *r = ring_new(2);
	struct record_block b = block_of(1, "a", "ok");
	char *first = b.block;
	assert_int_equal(ring_swap(r, &b), 1);
	assert_null(b.block); /* the slot was empty */
	assert_int_equal(b.cap, 0);
	b = block_of(2, "b", "ok");
	assert_int_equal(ring_swap(r, &b), 2);
	assert_null(b.block);
	b = block_of(3, "a", "timeout");
	char *third = b.block;
	assert_int_equal(ring_swap(r, &b), 3);
	/* record 1's block comes back to the writer, whole */
	assert_ptr_equal(b.block, first);
	assert_int_equal(b.cap, 256);
	free(b.block);
	assert_int_equal(ring_dropped(r), 1);
	read_as(r, NULL, "3,2");
	struct ring_filter f = {.method = "a"};
	read_as(r, &f, "3");
	f = (struct ring_filter){.outcome = "ok"};
	read_as(r, &f, "2");
	/* ring_append over a swapped slot, and a swap over an appended one */
	assert_int_equal(put(r, 4, "c", NULL, NULL, "ok"), 4);
	read_as(r, NULL, "4,3");
	b = block_of(5, "d", "ok");
	assert_int_equal(ring_swap(r, &b), 5);
	assert_ptr_equal(b.block, third);
	free(b.block);
	read_as(r, NULL, "5,4");
	f = (struct ring_filter){.method = "c"};
	read_as(r, &f, "4");
	ring_free(r);
}

static void test_swap_too_big_is_refused(void **state)
{
	(void)state;
	struct ring *r = ring_new(2);
	struct record_block b = block_of(1, "a", "ok");
	struct record_block keep = b;
	b.len = RING_MAX_RECORD_BYTES + 1;
	assert_int_equal(ring_swap(r, &b), 0);
	assert_ptr_equal(b.block, keep.block); /* left alone: still the writer's */
	assert_int_equal(ring_count(r), 0);
	assert_int_equal(ring_next_seq(r), 1);
	free(b.block);
	ring_free(r);
}

/* issue 19: ?finding=<code> matches records whose top-level "findings"
 * holds that code, not records that only mention it elsewhere. */
static void test_finding_filter(void **state)
{
	(void)state;
	static const char *const texts[] = {
		"{\"n\":1}",
		"{\"n\":2,\"findings\":[{\"code\":\"arguments-invalid\",\"kind\":\"arguments\"}]}",
		"{\"n\":3,\"arguments\":\"{\\\"code\\\":\\\"arguments-invalid\\\"}\",\"findings\":[]}",
		"{\"n\":4,\"findings\":[{\"code\":\"tool-unknown\"},{\"code\":\"result-invalid\"}]}",
		"{\"n\":5,\"note\":\"\\\"arguments-invalid\\\" \\\"findings\\\"\"}",
		"{\"n\":6,\"findings\":[{\"code\":\"arguments-invalid-x\"}]}",
	};
	struct ring *r = ring_new(8);
	struct record_keys k = {"tools/call", "echo", "s1", "ok"};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		assert_int_not_equal(ring_append(r, &k, texts[i], strlen(texts[i])), 0);
	struct ring_filter f = {.finding = "arguments-invalid"};
	read_as(r, &f, "2");
	f = (struct ring_filter){.finding = "result-invalid"};
	read_as(r, &f, "4");
	f = (struct ring_filter){.finding = "result-invalid", .tool = "other"};
	read_as(r, &f, "");
	f = (struct ring_filter){.finding = "no-listing"};
	read_as(r, &f, "");
	/* the stream's key match does not look at it */
	assert_true(ring_keys_match(&k, &f));
	ring_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_sizes),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_append_numbers_from_one),
		cmocka_unit_test(test_overwrite_oldest_and_count_drops),
		cmocka_unit_test(test_size_one),
		cmocka_unit_test(test_limit_and_since),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_keys_match),
		cmocka_unit_test(test_long_keys_are_cut_alike),
		cmocka_unit_test(test_too_big_is_refused),
		cmocka_unit_test(test_reads_are_copies),
		cmocka_unit_test(test_null_keys_and_embedded_data),
		cmocka_unit_test(test_flood_stays_bounded),
		cmocka_unit_test(test_swap_moves_blocks),
		cmocka_unit_test(test_swap_too_big_is_refused),
		cmocka_unit_test(test_finding_filter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

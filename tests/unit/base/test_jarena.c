/* Unit tests for proxy/base/jarena.c: jansson values of small parsed texts cut
 * from blocks. What must hold: the trees are the same values json_loadb
 * gives; a value kept past its message stays intact while later messages
 * reuse the space around it; blocks go back once empty, so a stream of
 * messages holds a bounded number of them; values freed on another thread
 * are counted by the thread that cut them; big texts, big values and
 * values made outside a window are plain malloc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <jansson.h>

#include "proxy/base/jarena.h"
#include "proxy/base/jparse.h"

static const char CALL[] =
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\","
	"\"text\":\"hello\"}],\"isError\":false}}";

static struct jarena_stats stats(void)
{
	struct jarena_stats s;
	jarena_stats(&s);
	return s;
}

static json_t *parse(const char *text)
{
	json_t *v = jparse(text, strlen(text), 0);
	assert_non_null(v);
	return v;
}

static void test_tree_cut_and_freed(void **state)
{
	(void)state;
	size_t before = stats().values;
	json_t *v = parse(CALL);
	assert_true(stats().values >= before + 10);
	json_t *ref = json_loadb(CALL, strlen(CALL), 0, NULL);
	assert_true(json_equal(v, ref));
	json_decref(ref);
	json_decref(v);
	assert_int_equal(stats().values, before);
}

/* A value a hook keeps (json_incref) outlives its message: the messages
 * after it must not be cut over it. */
static void test_kept_value_stays_intact(void **state)
{
	(void)state;
	size_t before = stats().values;
	json_t *v = parse(CALL);
	json_t *kept = json_incref(json_object_get(json_object_get(v, "result"), "content"));
	json_decref(v);
	assert_true(stats().values > before);
	for (int i = 0; i < 5000; i++) {
		char text[128];
		snprintf(text, sizeof(text), "{\"id\":%d,\"result\":{\"content\":[{\"type\":\"x%d\"}]}}",
		         i, i);
		json_decref(parse(text));
	}
	json_t *want = json_loads("[{\"type\":\"text\",\"text\":\"hello\"}]", 0, NULL);
	assert_true(json_equal(kept, want));
	json_decref(want);
	json_decref(kept);
	assert_int_equal(stats().values, before);
}

/* One message after another: the same block or two, not one per message. */
static void test_blocks_reused(void **state)
{
	(void)state;
	for (int i = 0; i < 20000; i++)
		json_decref(parse(CALL));
	struct jarena_stats s = stats();
	assert_int_equal(s.values, 0);
	assert_true(s.blocks_used <= 1);
	assert_true(s.blocks_cached <= 2);
}

/* A tree bigger than a block spans several, all given back after. */
static void test_tree_over_several_blocks(void **state)
{
	(void)state;
	char text[12000];
	size_t n = 0;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "{");
	for (int i = 0; i < 400; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\"k%d\":\"v%d\"", i ? "," : "", i, i);
	snprintf(text + n, sizeof(text) - n, "}");
	assert_true(strlen(text) <= JARENA_MAX_TEXT);
	json_t *v = parse(text);
	assert_true(stats().blocks_used > 3);
	assert_int_equal(json_object_size(v), 400);
	assert_string_equal(json_string_value(json_object_get(v, "k399")), "v399");
	json_decref(v);
	struct jarena_stats s = stats();
	assert_int_equal(s.values, 0);
	assert_true(s.blocks_used <= 1);
}

/* Values that are not cut: a text past JARENA_MAX_TEXT, a string too big
 * for a block's share, anything made outside a window. */
static void test_plain_malloc_cases(void **state)
{
	(void)state;
	size_t len = JARENA_MAX_TEXT + 100;
	char *big = malloc(len + 1);
	assert_non_null(big);
	memset(big, 'a', len);
	memcpy(big, "[\"", 2);
	memcpy(big + len - 2, "\"]", 2);
	big[len] = '\0';
	size_t before = stats().values;
	json_t *v = parse(big);
	assert_int_equal(stats().values, before);
	json_decref(v);
	free(big);

	char text[1200];
	memset(text, 'b', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	memcpy(text, "[\"", 2);
	memcpy(text + sizeof(text) - 3, "\"]", 2);
	v = parse(text);
	size_t during = stats().values;
	assert_true(during > before && during < before + 4); /* the array, not the string */
	assert_int_equal(json_string_length(json_array_get(v, 0)), sizeof(text) - 5);
	json_decref(v);

	json_t *o = json_pack("{s:s, s:i}", "a", "b", "c", 1);
	assert_int_equal(stats().values, before);
	json_decref(o);
	assert_int_equal(stats().values, before);
}

static void *decref_thread(void *arg)
{
	json_decref(arg);
	return NULL;
}

/* A tree freed by another thread (a handed-over exchange) is counted by
 * the thread that cut it, at its next window. */
static void test_freed_on_another_thread(void **state)
{
	(void)state;
	size_t before = stats().values;
	json_t *v = parse(CALL);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, decref_thread, v), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	struct jarena_stats s = stats();
	assert_true(s.handed_back >= 10);
	assert_true(s.values > before);
	jarena_open();
	jarena_close();
	s = stats();
	assert_int_equal(s.handed_back, 0);
	assert_int_equal(s.values, before);
}

/* Windows nest: values are cut until the last one closes, and a close
 * too many changes nothing. */
static void test_windows_nest(void **state)
{
	(void)state;
	size_t before = stats().values;
	jarena_open();
	jarena_open();
	json_t *a = json_integer(1);
	assert_int_equal(stats().values, before + 1);
	jarena_close();
	json_t *b = json_integer(2);
	assert_int_equal(stats().values, before + 2);
	jarena_close();
	json_t *c = json_integer(3);
	jarena_close();
	json_t *d = json_integer(4);
	assert_int_equal(stats().values, before + 2);
	json_decref(a);
	json_decref(b);
	/* The block being cut is empty again, window closed: still malloc. */
	json_t *e = json_integer(5);
	assert_int_equal(stats().values, before);
	json_decref(c);
	json_decref(d);
	json_decref(e);
	jarena_open();
	json_t *f = json_integer(6);
	assert_int_equal(stats().values, before + 1);
	jarena_close();
	json_decref(f);
	assert_int_equal(stats().values, before);
}

static void *no_window_thread(void *arg)
{
	(void)arg;
	json_t *v = json_pack("{s:[i,s]}", "a", 1, "b");
	struct jarena_stats s = stats();
	int ok = v && s.values == 0 && s.blocks_used == 0;
	json_decref(v);
	return ok ? arg : NULL;
}

/* A thread that never opens a window makes and frees plain values. */
static void test_thread_without_window(void **state)
{
	(void)state;
	pthread_t th;
	void *ok = NULL;
	int token;
	assert_int_equal(pthread_create(&th, NULL, no_window_thread, &token), 0);
	assert_int_equal(pthread_join(th, &ok), 0);
	assert_ptr_equal(ok, &token);
}

int main(void)
{
	/* Before any jansson value, as main() does. */
	if (jarena_install() < 0)
		return 1;
	if (!jarena_installed()) {
		/* An AddressSanitizer build: jansson keeps malloc, and ASan
		 * checks each value on its own. */
		puts("test_jarena: the arena is not used in this build");
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_cut_and_freed),
		cmocka_unit_test(test_kept_value_stays_intact),
		cmocka_unit_test(test_blocks_reused),
		cmocka_unit_test(test_tree_over_several_blocks),
		cmocka_unit_test(test_plain_malloc_cases),
		cmocka_unit_test(test_freed_on_another_thread),
		cmocka_unit_test(test_windows_nest),
		cmocka_unit_test(test_thread_without_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

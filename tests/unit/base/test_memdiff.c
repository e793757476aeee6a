/* Unit tests for memdiff (proxy/base/memdiff.h): after memdiff_copy the
 * kept copy is the new text, whatever it held and wherever the texts
 * differ (head, middle, tail, block edges), same length or not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/base/memdiff.h"
#include "tests/unit/helpers.h"

#define N (5 * 4096 + 123)

static void fill(char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)('a' + (i * 7 + seed) % 26);
}

static void test_edits_at_every_place(void **state)
{
	(void)state;
	static char kept[N], text[N];
	const size_t at[] = {0, 1, 4095, 4096, 4097, 8191, 10000, N - 4097, N - 4096, N - 1};
	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		fill(kept, N, 1);
		fill(text, N, 1);
		text[at[k]] ^= 0x20;
		memdiff_copy(kept, N, text, N);
		assert_memory_equal(kept, text, N);
	}
}

static void test_other_length_copied_whole(void **state)
{
	(void)state;
	static char kept[N], text[N];
	fill(kept, N, 1);
	fill(text, N, 2);
	memdiff_copy(kept, N - 10, text, N); /* kept held a shorter text */
	assert_memory_equal(kept, text, N);
	fill(text, N, 3);
	memdiff_copy(kept, N, text, 100);
	assert_memory_equal(kept, text, 100);
	memdiff_copy(kept, 0, text, 0);
}

/* dlen says what dst held; a dst that holds other bytes is still made equal. */
static void test_any_content(void **state)
{
	(void)state;
	static char kept[N], text[N];
	memset(kept, 'x', N);
	fill(text, N, 4);
	memdiff_copy(kept, N, text, N);
	assert_memory_equal(kept, text, N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edits_at_every_place),
		cmocka_unit_test(test_other_length_copied_whole),
		cmocka_unit_test(test_any_content),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for proxy/net/origin.c: Host and Origin checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "proxy/net/origin.h"

static const struct origin_policy loopback = {.loopback_only = 1};
static const struct origin_policy open_policy = {0};

static void test_loopback_hosts_allowed(void **state)
{
	(void)state;
	assert_true(origin_host_allowed(&loopback, "127.0.0.1:8080"));
	assert_true(origin_host_allowed(&loopback, "127.0.0.1"));
	assert_true(origin_host_allowed(&loopback, "localhost:8080"));
	assert_true(origin_host_allowed(&loopback, "LOCALHOST"));
	assert_true(origin_host_allowed(&loopback, "[::1]:8080"));
	assert_true(origin_host_allowed(&loopback, "127.1.2.3:1"));
}

static void test_rebinding_hosts_refused(void **state)
{
	(void)state;
	assert_false(origin_host_allowed(&loopback, "evil.example.com"));
	assert_false(origin_host_allowed(&loopback, "evil.example.com:8080"));
	assert_false(origin_host_allowed(&loopback, "127.0.0.1.evil.example"));
	assert_false(origin_host_allowed(&loopback, "localhost.evil.example"));
	assert_false(origin_host_allowed(&loopback, NULL));
	assert_false(origin_host_allowed(&loopback, ""));
	assert_false(origin_host_allowed(&loopback, "[::1"));
	assert_false(origin_host_allowed(&loopback, "::1"));
}

static void test_host_list(void **state)
{
	(void)state;
	const char *hosts[] = {"mcp.staging.example", "proxy"};
	struct origin_policy p = {.hosts = hosts, .nhosts = 2, .loopback_only = 1};
	assert_true(origin_host_allowed(&p, "mcp.staging.example:443"));
	assert_true(origin_host_allowed(&p, "PROXY"));
	/* A list replaces the loopback default. */
	assert_false(origin_host_allowed(&p, "127.0.0.1:8080"));
	assert_false(origin_host_allowed(&p, "other.example"));
}

static void test_no_list_not_loopback_allows_any_host(void **state)
{
	(void)state;
	assert_true(origin_host_allowed(&open_policy, "anything.example"));
	assert_true(origin_host_allowed(&open_policy, NULL));
}

static void test_origin_absent_allowed(void **state)
{
	(void)state;
	assert_true(origin_origin_allowed(&loopback, NULL, "127.0.0.1:8080"));
}

static void test_origin_same_host(void **state)
{
	(void)state;
	assert_true(origin_origin_allowed(&loopback, "http://127.0.0.1:8080", "127.0.0.1:8080"));
	assert_false(origin_origin_allowed(&loopback, "http://127.0.0.1:9999", "127.0.0.1:8080"));
	assert_false(origin_origin_allowed(&loopback, "http://evil.example.com", "127.0.0.1:8080"));
	assert_false(origin_origin_allowed(&loopback, "null", "127.0.0.1:8080"));
	assert_false(origin_origin_allowed(&loopback, "http://127.0.0.1:8080", NULL));
}

static void test_origin_list(void **state)
{
	(void)state;
	const char *origins[] = {"https://app.example:8443"};
	struct origin_policy p = {.origins = origins, .norigins = 1};
	assert_true(origin_origin_allowed(&p, "https://app.example:8443", "proxy:8080"));
	assert_true(origin_origin_allowed(&p, "HTTPS://APP.EXAMPLE:8443", "proxy:8080"));
	assert_false(origin_origin_allowed(&p, "https://app.example", "proxy:8080"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loopback_hosts_allowed),
		cmocka_unit_test(test_rebinding_hosts_refused),
		cmocka_unit_test(test_host_list),
		cmocka_unit_test(test_no_list_not_loopback_allows_any_host),
		cmocka_unit_test(test_origin_absent_allowed),
		cmocka_unit_test(test_origin_same_host),
		cmocka_unit_test(test_origin_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for admin/metrics.c: what is counted and the Prometheus text
 * format it is exposed in. Every rendering goes through check_format(), a
 * small validator of the exposition format (0.0.4): HELP and TYPE before a
 * family's samples, metric and label names, escaped label values, numeric
 * values, no series twice. The integration suite runs the real promtool. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admin/metrics.h"

/* ---- format checker ------------------------------------------------------- */

static int name_char(int c, int first)
{
	return isalpha(c) || c == '_' || c == ':' || (!first && isdigit(c));
}

/* The family a sample belongs to: histograms add _bucket/_sum/_count. */
static void family_of(const char *name, const char *typed, char *out, size_t len)
{
	static const char *const sfx[] = {"_bucket", "_sum", "_count"};
	snprintf(out, len, "%s", name);
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(name), s = strlen(sfx[i]);
		if (n > s && strcmp(name + n - s, sfx[i]) == 0 && strncmp(typed, name, n - s) == 0 &&
		    typed[n - s] == '\0') {
			snprintf(out, len, "%.*s", (int)(n - s), name);
			return;
		}
	}
}

static void check_format(const char *text)
{
	char typed[256] = "", helped[256] = "";
	char **seen = NULL;
	size_t nseen = 0;
	const char *p = text;

	assert_non_null(text);
	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	while (*p) {
		const char *eol = strchr(p, '\n');
		assert_non_null(eol);
		char line[2048];
		size_t n = (size_t)(eol - p);
		assert_true(n < sizeof(line));
		memcpy(line, p, n);
		line[n] = '\0';
		p = eol + 1;
		if (strncmp(line, "# HELP ", 7) == 0) {
			sscanf(line + 7, "%255s", helped);
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			char type[32];
			assert_int_equal(sscanf(line + 7, "%255s %31s", typed, type), 2);
			assert_string_equal(typed, helped); /* HELP right before TYPE */
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
			            strcmp(type, "histogram") == 0);
			if (strcmp(type, "counter") == 0)
				assert_non_null(strstr(typed, "_total"));
			continue;
		}
		assert_true(line[0] != '#' && line[0] != '\0');
		/* name */
		size_t i = 0;
		assert_true(name_char((unsigned char)line[0], 1));
		while (name_char((unsigned char)line[i], i == 0))
			i++;
		char name[256], fam[256];
		snprintf(name, sizeof(name), "%.*s", (int)i, line);
		family_of(name, typed, fam, sizeof(fam));
		if (strcmp(fam, typed) != 0)
			fail_msg("sample %s outside its family (TYPE %s)", name, typed);
		/* labels */
		if (line[i] == '{') {
			i++;
			while (line[i] != '}') {
				size_t k = i;
				while (name_char((unsigned char)line[i], i == k))
					i++;
				assert_true(i > k);
				assert_int_equal(line[i], '=');
				assert_int_equal(line[i + 1], '"');
				i += 2;
				while (line[i] != '"') {
					assert_true(line[i] != '\0');
					if (line[i] == '\\') {
						assert_true(line[i + 1] == '\\' || line[i + 1] == '"' ||
						            line[i + 1] == 'n');
						i++;
					}
					i++;
				}
				i++;
				if (line[i] == ',')
					i++;
				else
					assert_int_equal(line[i], '}');
			}
			i++;
		}
		assert_int_equal(line[i], ' ');
		/* no series twice */
		for (size_t s = 0; s < nseen; s++)
			if (strncmp(seen[s], line, i) == 0 && seen[s][i] == '\0')
				fail_msg("series twice: %.*s", (int)i, line);
		seen = realloc(seen, (nseen + 1) * sizeof(*seen));
		seen[nseen] = strndup(line, i);
		nseen++;
		/* value */
		const char *v = line + i + 1;
		char *end;
		if (strcmp(v, "+Inf") != 0) {
			strtod(v, &end);
			assert_true(end != v && *end == '\0');
		}
	}
	for (size_t s = 0; s < nseen; s++)
		free(seen[s]);
	free(seen);
}

static char *render(const struct metrics *m, const struct metrics_snapshot *s)
{
	size_t len = 0;
	char *text = metrics_render(m, s, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	check_format(text);
	return text;
}

static void has_line(const char *text, const char *line)
{
	char want[1024];
	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("missing line: %s\n---\n%s", line, text);
}

static void lacks(const char *text, const char *s)
{
	if (strstr(text, s))
		fail_msg("unexpected: %s", s);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_bad_sizes(void **state)
{
	(void)state;
	assert_null(metrics_new(0));
	assert_null(metrics_new(METRICS_MAX_LABELS + 1));
	metrics_free(NULL);
}

static void test_empty_has_every_family(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(METRICS_DEFAULT_MAX_LABELS);
	char *t = render(m, NULL);
	static const char *const families[] = {
		"mcpwarden_requests_total counter", "mcpwarden_errors_total counter",
		"mcpwarden_tool_calls_total counter",
		"mcpwarden_request_duration_seconds histogram",
		"mcpwarden_tool_call_duration_seconds histogram",
		"mcpwarden_client_connections gauge", "mcpwarden_sessions gauge",
		"mcpwarden_upstream_idle_connections gauge", "mcpwarden_received_bytes_total counter",
		"mcpwarden_sent_bytes_total counter", "mcpwarden_policy_decisions_total counter",
		"mcpwarden_ring_dropped_total counter", "mcpwarden_contract_score gauge",
		"mcpwarden_contract_problems gauge",
	};
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char want[128];
		snprintf(want, sizeof(want), "# TYPE %s", families[i]);
		has_line(t, want);
	}
	lacks(t, "method=");
	free(t);
	metrics_free(m);
}

static void test_calls_by_method_tool_outcome(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(METRICS_DEFAULT_MAX_LABELS);
	metrics_call(m, "tools/call", "echo", "ok", 1500);
	metrics_call(m, "tools/call", "echo", "ok", 3000);
	metrics_call(m, "tools/call", "add", "tool_error", 20000);
	metrics_call(m, "initialize", NULL, "ok", 800);
	metrics_call(m, "notifications/initialized", NULL, "ok", -1);
	metrics_call(m, "tools/call", "echo", "weird", 10);
	char *t = render(m, NULL);
	has_line(t, "mcpwarden_requests_total{method=\"tools/call\",outcome=\"ok\"} 2");
	has_line(t, "mcpwarden_requests_total{method=\"tools/call\",outcome=\"tool_error\"} 1");
	has_line(t, "mcpwarden_requests_total{method=\"tools/call\",outcome=\"other\"} 1");
	has_line(t, "mcpwarden_requests_total{method=\"notifications/initialized\",outcome=\"ok\"} 1");
	has_line(t, "mcpwarden_errors_total{method=\"tools/call\",outcome=\"tool_error\"} 1");
	lacks(t, "mcpwarden_errors_total{method=\"tools/call\",outcome=\"ok\"}");
	has_line(t, "mcpwarden_tool_calls_total{tool=\"echo\",outcome=\"ok\"} 2");
	has_line(t, "mcpwarden_tool_calls_total{tool=\"add\",outcome=\"tool_error\"} 1");
	/* histograms: cumulative buckets, +Inf = count, sum in seconds */
	has_line(t, "mcpwarden_request_duration_seconds_bucket{method=\"tools/call\",le=\"0.001\"} 1");
	has_line(t, "mcpwarden_request_duration_seconds_bucket{method=\"tools/call\",le=\"0.0025\"} 2");
	has_line(t, "mcpwarden_request_duration_seconds_bucket{method=\"tools/call\",le=\"0.005\"} 3");
	has_line(t, "mcpwarden_request_duration_seconds_bucket{method=\"tools/call\",le=\"0.025\"} 4");
	has_line(t, "mcpwarden_request_duration_seconds_bucket{method=\"tools/call\",le=\"+Inf\"} 4");
	has_line(t, "mcpwarden_request_duration_seconds_count{method=\"tools/call\"} 4");
	has_line(t, "mcpwarden_request_duration_seconds_sum{method=\"tools/call\"} 0.024510");
	has_line(t, "mcpwarden_tool_call_duration_seconds_count{tool=\"echo\"} 3");
	/* untimed (notifications) are counted but not in a histogram */
	lacks(t, "mcpwarden_request_duration_seconds_count{method=\"notifications/initialized\"}");
	free(t);
	metrics_free(m);
}

static void test_label_escaping_and_cut(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(10);
	metrics_call(m, "tools/call", "we\"ird\\to\nol", "ok", 5);
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	metrics_call(m, "tools/call", longname, "ok", 5);
	/* a cut never splits a UTF-8 sequence */
	char utf[300] = "x";
	for (int i = 0; i < 100; i++)
		strcat(utf, "\xc3\xa9");
	metrics_call(m, "tools/call", utf, "ok", 5);
	char *t = render(m, NULL);
	has_line(t, "mcpwarden_tool_calls_total{tool=\"we\\\"ird\\\\to\\nol\",outcome=\"ok\"} 1");
	char want[512];
	snprintf(want, sizeof(want), "mcpwarden_tool_calls_total{tool=\"%.*s\",outcome=\"ok\"} 1",
	         METRICS_LABEL_MAX, longname);
	has_line(t, want);
	snprintf(want, sizeof(want), "mcpwarden_tool_calls_total{tool=\"%.*s\",outcome=\"ok\"} 1",
	         METRICS_LABEL_MAX - 1, utf);
	has_line(t, want);
	free(t);
	metrics_free(m);
}

/* The value looked up last is compared first: runs of one value, a value
 * whose cut equals the last one's, "" after NULL, and a switch back all
 * land on their own series. */
static void test_repeated_labels(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(10);
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	metrics_call(m, "tools/call", "a", "ok", 5);
	metrics_call(m, "tools/call", "a", "ok", 5);
	metrics_call(m, "tools/call", "ab", "ok", 5);
	metrics_call(m, "tools/call", "b", "ok", 5);
	metrics_call(m, "tools/call", "a", "ok", 5);
	longname[METRICS_LABEL_MAX] = '\0'; /* the cut's own text first */
	metrics_call(m, "tools/call", longname, "ok", 5);
	longname[METRICS_LABEL_MAX] = 'a';
	metrics_call(m, "tools/call", longname, "ok", 5);
	metrics_call(m, "tools/call", longname, "ok", 5);
	metrics_call(m, "x", NULL, "ok", 5);
	metrics_server_message(m, NULL);
	metrics_server_message(m, "");
	metrics_server_message(m, "other");
	metrics_server_message(m, "other");
	char *t = render(m, NULL);
	has_line(t, "mcpwarden_tool_calls_total{tool=\"a\",outcome=\"ok\"} 3");
	has_line(t, "mcpwarden_tool_calls_total{tool=\"ab\",outcome=\"ok\"} 1");
	has_line(t, "mcpwarden_tool_calls_total{tool=\"b\",outcome=\"ok\"} 1");
	has_line(t, "mcpwarden_requests_total{method=\"tools/call\",outcome=\"ok\"} 8");
	char want[512];
	snprintf(want, sizeof(want), "mcpwarden_tool_calls_total{tool=\"%.*s\",outcome=\"ok\"} 3",
	         METRICS_LABEL_MAX, longname);
	has_line(t, want);
	has_line(t, "mcpwarden_requests_total{method=\"x\",outcome=\"ok\"} 1");
	has_line(t, "mcpwarden_server_messages_total{method=\"\"} 2");
	has_line(t, "mcpwarden_server_messages_total{method=\"other\"} 2");
	free(t);
	metrics_free(m);
}

static void test_cardinality_cap(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(3);
	const char *tools[] = {"a", "b", "c", "d", "e", "a", "other"};
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		metrics_call(m, "tools/call", tools[i], "ok", 1);
	char *t = render(m, NULL);
	has_line(t, "mcpwarden_tool_calls_total{tool=\"a\",outcome=\"ok\"} 2");
	has_line(t, "mcpwarden_tool_calls_total{tool=\"b\",outcome=\"ok\"} 1");
	has_line(t, "mcpwarden_tool_calls_total{tool=\"c\",outcome=\"ok\"} 1");
	/* d, e and a real tool named "other" share the one "other" series */
	has_line(t, "mcpwarden_tool_calls_total{tool=\"other\",outcome=\"ok\"} 3");
	lacks(t, "tool=\"d\"");
	lacks(t, "tool=\"e\"");
	free(t);
	/* many more distinct values cost no series */
	char name[32];
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "junk%d", i);
		metrics_call(m, name, name, "ok", 1);
		metrics_policy(m, name, "drop");
	}
	t = render(m, NULL);
	assert_null(strstr(t, "junk3"));
	has_line(t, "mcpwarden_policy_decisions_total{rule=\"other\",verdict=\"drop\"} 9997");
	free(t);
	metrics_free(m);
}

static void test_policy_sessions_bytes(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(METRICS_DEFAULT_MAX_LABELS);
	metrics_policy(m, "deny-shell", "drop");
	metrics_policy(m, "deny-shell", "drop");
	metrics_policy(m, "rate-limit", "answer");
	metrics_policy(m, NULL, "forward");
	metrics_session_opened(m);
	metrics_session_opened(m);
	metrics_session_closed(m);
	metrics_exchange(m, 100, 2000);
	metrics_exchange(m, 50, 10);
	metrics_server_message(m, "notifications/message");
	char *t = render(m, NULL);
	has_line(t, "mcpwarden_policy_decisions_total{rule=\"deny-shell\",verdict=\"drop\"} 2");
	has_line(t, "mcpwarden_policy_decisions_total{rule=\"rate-limit\",verdict=\"answer\"} 1");
	has_line(t, "mcpwarden_policy_decisions_total{rule=\"unknown\",verdict=\"forward\"} 1");
	has_line(t, "mcpwarden_sessions_opened_total 2");
	has_line(t, "mcpwarden_sessions_closed_total 1");
	has_line(t, "mcpwarden_sessions 1");
	has_line(t, "mcpwarden_received_bytes_total 150");
	has_line(t, "mcpwarden_sent_bytes_total 2010");
	has_line(t, "mcpwarden_exchanges_total 2");
	has_line(t, "mcpwarden_server_messages_total{method=\"notifications/message\"} 1");
	free(t);
	/* closes beyond opens (sessions from before a restart) never go negative */
	metrics_session_closed(m);
	metrics_session_closed(m);
	assert_int_equal(metrics_sessions_open(m), 0);
	t = render(m, NULL);
	has_line(t, "mcpwarden_sessions 0");
	free(t);
	metrics_free(m);
}

static void test_contract(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(METRICS_DEFAULT_MAX_LABELS);
	json_t *r = json_loads(
		"{\"tools\":[{\"name\":\"a\",\"problems\":[{\"code\":\"x\"},{\"code\":\"y\"}],"
		"\"warnings\":[{\"code\":\"w\"}]},{\"name\":\"b\",\"problems\":[]}],"
		"\"problems\":[{\"code\":\"no-tools\"}],\"warnings\":[],\"score\":0.5,"
		"\"passed\":false,\"changes\":[{\"kind\":\"removed\"}]}", 0, NULL);
	assert_non_null(r);
	assert_int_equal(metrics_set_contract(m, "staging", r), 0);
	char *t = render(m, NULL);
	has_line(t, "mcpwarden_contract_score{upstream=\"staging\"} 0.5");
	has_line(t, "mcpwarden_contract_problems{upstream=\"staging\"} 3");
	has_line(t, "mcpwarden_contract_warnings{upstream=\"staging\"} 1");
	has_line(t, "mcpwarden_contract_passed{upstream=\"staging\"} 0");
	has_line(t, "mcpwarden_contract_tools{upstream=\"staging\"} 2");
	has_line(t, "mcpwarden_contract_changes{upstream=\"staging\"} 1");
	free(t);
	/* a new report replaces the old one; missing members count as 0 */
	json_t *ok = json_loads("{\"tools\":[],\"score\":1,\"passed\":true}", 0, NULL);
	assert_int_equal(metrics_set_contract(m, "staging", ok), 0);
	t = render(m, NULL);
	has_line(t, "mcpwarden_contract_score{upstream=\"staging\"} 1");
	has_line(t, "mcpwarden_contract_problems{upstream=\"staging\"} 0");
	has_line(t, "mcpwarden_contract_passed{upstream=\"staging\"} 1");
	free(t);
	json_decref(ok);
	json_decref(r);
	metrics_free(m);
}

static void test_snapshot(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(METRICS_DEFAULT_MAX_LABELS);
	struct metrics_upstream ups[] = {{"a", 3, 1}, {"b\"q", 0, -1}};
	struct metrics_snapshot s = {
		.client_connections = 7,
		.http_responses = {0, 0, 10, 0, 2, 1},
		.ring_capacity = 1024,
		.ring_records = 12,
		.ring_dropped = 4,
		.inflight_calls = 2,
		.session_refused = {5, 6},
		.session_slots = {3, 1},
		.start_time_seconds = 1700000000.5,
		.ups = ups,
		.nups = 2,
	};
	char *t = render(m, &s);
	has_line(t, "mcpwarden_client_connections 7");
	has_line(t, "mcpwarden_http_responses_total{code=\"2xx\"} 10");
	has_line(t, "mcpwarden_http_responses_total{code=\"5xx\"} 1");
	has_line(t, "mcpwarden_upstream_idle_connections{upstream=\"a\"} 3");
	has_line(t, "mcpwarden_upstream_idle_connections{upstream=\"b\\\"q\"} 0");
	has_line(t, "mcpwarden_upstream_up{upstream=\"a\"} 1");
	lacks(t, "mcpwarden_upstream_up{upstream=\"b");
	has_line(t, "mcpwarden_ring_capacity 1024");
	has_line(t, "mcpwarden_ring_records 12");
	has_line(t, "mcpwarden_ring_dropped_total 4");
	has_line(t, "mcpwarden_inflight_calls 2");
	has_line(t, "mcpwarden_session_limit_refusals_total{limit=\"inflight\"} 5");
	has_line(t, "mcpwarden_session_limit_refusals_total{limit=\"streams\"} 6");
	has_line(t, "mcpwarden_session_slots{kind=\"inflight\"} 3");
	has_line(t, "mcpwarden_session_slots{kind=\"streams\"} 1");
	has_line(t, "mcpwarden_start_time_seconds 1700000000.500");
	free(t);
	metrics_free(m);
}

static void test_help_and_type_once_each(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(5);
	metrics_call(m, "a", "t", "ok", 1);
	metrics_call(m, "b", "t", "rpc_error", 1);
	char *t = render(m, NULL);
	const char *p = t;
	int n = 0;
	while ((p = strstr(p, "# TYPE mcpwarden_requests_total ")))
		n++, p++;
	assert_int_equal(n, 1);
	free(t);
	metrics_free(m);
}

/* issue 17: the policy counters of conf/README-policy.md's Metrics
 * section, totals and per rule, from the snapshot. */
static void test_policy_counters(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(METRICS_DEFAULT_MAX_LABELS);
	/* none configured: every total there, at 0, no rule */
	char *t = render(m, NULL);
	has_line(t, "# TYPE mcpwarden_policy_allowed_total counter");
	has_line(t, "mcpwarden_policy_allowed_total 0");
	has_line(t, "mcpwarden_policy_active 0");
	has_line(t, "# TYPE mcpwarden_policy_rule_matched_total counter");
	lacks(t, "rule_matched_total{");
	free(t);

	const struct metrics_policy_rule rules[] = {
		{.rule = "no-shell", .action = "deny", .matched = 3, .denied = 2, .dry_run = 1},
		{.rule = "watch", .action = "log", .matched = 5, .logged = 5},
		{.rule = "hide-admin", .action = "hide", .hidden = 7, .dry_run_hidden = 1},
		{.rule = "default", .action = "allow", .matched = 11, .allowed = 11},
	};
	const struct metrics_policy p = {
		.active = 1, .dry_run_mode = 0, .allowed = 11, .denied = 2, .logged = 6, .dry_run = 1,
		.unknown_tool = 4, .tools_hidden = 7, .listings = 9, .tools_over_cap = 12, .reloads = 2,
		.reload_failures = 1, .rules = rules, .nrules = 4,
	};
	struct metrics_snapshot snap = {.policy = &p};
	t = render(m, &snap);
	static const char *const want[] = {
		"mcpwarden_policy_active 1",
		"mcpwarden_policy_dry_run_mode 0",
		"mcpwarden_policy_allowed_total 11",
		"mcpwarden_policy_denied_total 2",
		"mcpwarden_policy_logged_total 6",
		"mcpwarden_policy_dry_run_total 1",
		"mcpwarden_policy_unknown_tool_total 4",
		"mcpwarden_policy_tools_hidden_total 7",
		"mcpwarden_policy_listings_total 9",
		"mcpwarden_policy_tools_over_cap_total 12",
		"mcpwarden_policy_reloads_total 2",
		"mcpwarden_policy_reload_failures_total 1",
		"mcpwarden_policy_rule_matched_total{rule=\"no-shell\",action=\"deny\"} 3",
		"mcpwarden_policy_rule_matched_total{rule=\"default\",action=\"allow\"} 11",
		"mcpwarden_policy_rule_denied_total{rule=\"no-shell\"} 2",
		"mcpwarden_policy_rule_dry_run_total{rule=\"no-shell\"} 1",
		"mcpwarden_policy_rule_logged_total{rule=\"watch\"} 5",
		"mcpwarden_policy_rule_allowed_total{rule=\"default\"} 11",
		"mcpwarden_policy_rule_hidden_total{rule=\"hide-admin\"} 7",
		"mcpwarden_policy_rule_dry_run_hidden_total{rule=\"hide-admin\"} 1",
		"# TYPE mcpwarden_policy_rule_dry_run_hidden_total counter",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		has_line(t, want[i]);
	free(t);
	metrics_free(m);
}

/* issue 19: the live contract's counts per upstream x tool x code and its
 * process totals, from a fake snapshot as the source in proxy/stats.c
 * fills it. */
static struct metrics_validate *fake_validate(struct metrics_snapshot *s, size_t cap)
{
	struct metrics_validate *v = metrics_snapshot_alloc(s, 1, sizeof(*v));
	assert_non_null(v);
	v->counts = metrics_snapshot_alloc(s, cap, sizeof(*v->counts));
	assert_non_null(v->counts);
	v->cap = cap;
	s->validate = v;
	return v;
}

static void test_validate_counts(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(METRICS_DEFAULT_MAX_LABELS);
	struct metrics_snapshot s = {0};
	struct metrics_validate *v = fake_validate(&s, 8);
	v->calls_checked = 12;
	v->results_checked = 5;
	v->compiled = 3;
	v->compile_failed = 1;
	v->logs_suppressed = 9;
	metrics_validate_add(v, "staging", "get-sum", "arguments-invalid", 4);
	metrics_validate_add(v, "staging", "get-sum", "result-invalid", 1);
	metrics_validate_add(v, "prod", "ech\"o", "tool-unknown", 2);
	metrics_validate_add(v, "prod", "echo", "made-up-code", 1);
	metrics_validate_add(v, "prod", "echo", "another-made-up", 2);
	metrics_fold_validate(m, &s);
	char *t = render(m, &s);
	has_line(t, "# TYPE mcpwarden_validation_findings_total counter");
	has_line(t, "mcpwarden_validation_findings_total{upstream=\"staging\",tool=\"get-sum\","
	            "code=\"arguments-invalid\"} 4");
	has_line(t, "mcpwarden_validation_findings_total{upstream=\"staging\",tool=\"get-sum\","
	            "code=\"result-invalid\"} 1");
	has_line(t, "mcpwarden_validation_findings_total{upstream=\"prod\",tool=\"ech\\\"o\","
	            "code=\"tool-unknown\"} 2");
	/* codes outside hook_validate.h's list are one "other" series */
	has_line(t, "mcpwarden_validation_findings_total{upstream=\"prod\",tool=\"echo\","
	            "code=\"other\"} 3");
	lacks(t, "made-up-code");
	has_line(t, "mcpwarden_validation_calls_checked_total 12");
	has_line(t, "mcpwarden_validation_results_checked_total 5");
	has_line(t, "mcpwarden_validation_schemas_compiled_total 3");
	has_line(t, "mcpwarden_validation_schema_compile_failures_total 1");
	has_line(t, "mcpwarden_validation_log_lines_suppressed_total 9");
	has_line(t, "mcpwarden_validation_counts_left_out 0");
	free(t);
	metrics_snapshot_release(&s);
	metrics_free(m);
}

/* Without the hook: every family with zeros, no series. */
static void test_validate_absent(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(METRICS_DEFAULT_MAX_LABELS);
	metrics_fold_validate(m, NULL);
	char *t = render(m, NULL);
	has_line(t, "# TYPE mcpwarden_validation_findings_total counter");
	has_line(t, "mcpwarden_validation_calls_checked_total 0");
	lacks(t, "mcpwarden_validation_findings_total{");
	free(t);
	metrics_free(m);
}

/* Tools beyond max_labels are summed under "other", and the tools that
 * got a label keep it on later scrapes whatever order the counts come in:
 * every series only grows. A long tool name is cut the way labels are. */
static void test_validate_cardinality(void **state)
{
	(void)state;
	struct metrics *m = metrics_new(2);
	char longname[METRICS_LABEL_MAX + 40];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';

	struct metrics_snapshot s = {0};
	struct metrics_validate *v = fake_validate(&s, 2);
	metrics_validate_add(v, "u", "a", "arguments-invalid", 1);
	metrics_validate_add(v, "u", "b", "arguments-invalid", 1);
	metrics_validate_add(v, "u", "c", "arguments-invalid", 1); /* past cap */
	assert_int_equal(v->left_out, 1);
	metrics_fold_validate(m, &s);
	char *t = render(m, &s);
	has_line(t, "mcpwarden_validation_counts_left_out 1");
	free(t);
	metrics_snapshot_release(&s);

	struct metrics_snapshot s2 = {0};
	v = fake_validate(&s2, 8);
	metrics_validate_add(v, "u", "d", "arguments-invalid", 5);
	metrics_validate_add(v, "u", longname, "arguments-invalid", 7);
	metrics_validate_add(v, "u", "c", "arguments-invalid", 2);
	metrics_validate_add(v, "u", "b", "arguments-invalid", 3);
	metrics_validate_add(v, "u", "a", "arguments-invalid", 4);
	metrics_fold_validate(m, &s2);
	t = render(m, &s2);
	has_line(t, "mcpwarden_validation_findings_total{upstream=\"u\",tool=\"a\",code=\"arguments-invalid\"} 4");
	has_line(t, "mcpwarden_validation_findings_total{upstream=\"u\",tool=\"b\",code=\"arguments-invalid\"} 3");
	has_line(t, "mcpwarden_validation_findings_total{upstream=\"u\",tool=\"other\",code=\"arguments-invalid\"} 14");
	lacks(t, "tool=\"c\"");
	lacks(t, "tool=\"d\"");
	lacks(t, "xxxxx");
	free(t);
	metrics_snapshot_release(&s2);

	/* a cut name stays within METRICS_LABEL_MAX on its own label table */
	struct metrics *m2 = metrics_new(4);
	struct metrics_snapshot s3 = {0};
	v = fake_validate(&s3, 2);
	metrics_validate_add(v, "u", longname, "no-listing", 1);
	metrics_validate_add(v, "u", longname + 1, "no-listing", 2); /* same once cut */
	metrics_fold_validate(m2, &s3);
	assert_int_equal(v->ncounts, 1);
	assert_int_equal(v->counts[0].n, 3);
	assert_int_equal(strlen(v->counts[0].tool), METRICS_LABEL_MAX);
	t = render(m2, &s3);
	free(t);
	metrics_snapshot_release(&s3);
	metrics_free(m2);
	metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_sizes),
		cmocka_unit_test(test_empty_has_every_family),
		cmocka_unit_test(test_calls_by_method_tool_outcome),
		cmocka_unit_test(test_label_escaping_and_cut),
		cmocka_unit_test(test_repeated_labels),
		cmocka_unit_test(test_cardinality_cap),
		cmocka_unit_test(test_policy_sessions_bytes),
		cmocka_unit_test(test_policy_counters),
		cmocka_unit_test(test_contract),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_help_and_type_once_each),
		cmocka_unit_test(test_validate_counts),
		cmocka_unit_test(test_validate_absent),
		cmocka_unit_test(test_validate_cardinality),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

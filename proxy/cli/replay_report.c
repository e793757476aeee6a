/* replay_report: see replay_report.h. */
#include "proxy/cli/replay_report.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proxy/base/version.h"
#include "proxy/cli/cli_out.h"
#include "proxy/cli/report.h"

/* Every code replay writes, with its level and a one-line description
 * (docs/replay.md has the long form). */
static const struct {
	const char *code;
	enum report_level level;
	const char *desc;
} rules[] = {
	{"replay-no-response", REPORT_LEVEL_ERROR, "No JSON-RPC response to a replayed call"},
	{"replay-baseline-no-response", REPORT_LEVEL_ERROR, "The baseline gave no response (A/B)"},
	{"replay-tool-missing", REPORT_LEVEL_ERROR, "The new build does not list a replayed tool"},
	{"replay-error-flip", REPORT_LEVEL_ERROR, "A JSON-RPC error where a result was, or the reverse"},
	{"replay-error-code", REPORT_LEVEL_ERROR, "The JSON-RPC error code changed"},
	{"replay-iserror-flip", REPORT_LEVEL_ERROR, "isError changed"},
	{"replay-structured-missing", REPORT_LEVEL_ERROR, "structuredContent is gone"},
	{"replay-structured-added", REPORT_LEVEL_WARNING, "structuredContent appeared"},
	{"replay-structured-keys", REPORT_LEVEL_ERROR, "A key of structuredContent is gone"},
	{"replay-structured-type", REPORT_LEVEL_ERROR, "A structuredContent value changed JSON type"},
	{"replay-structured-changed", REPORT_LEVEL_ERROR, "structuredContent values changed"},
	{"replay-output-schema", REPORT_LEVEL_ERROR,
	 "structuredContent does not conform to the tool's current outputSchema"},
	{"replay-content-types", REPORT_LEVEL_ERROR, "The content item types or their count changed"},
	{"replay-text-changed", REPORT_LEVEL_ERROR, "Content text changed after normalisation"},
	{"replay-slower", REPORT_LEVEL_ERROR, "The call got slower than --max-slowdown allows"},
	{"replay-expect-result", REPORT_LEVEL_ERROR, "A dataset case got a JSON-RPC error"},
	{"replay-expect-equals", REPORT_LEVEL_ERROR, "A dataset case's result differs from equals"},
	{"replay-expect-pattern", REPORT_LEVEL_ERROR, "A dataset case's text does not match pattern"},
	{"replay-expect-schema", REPORT_LEVEL_ERROR, "A dataset case's result breaks its schema"},
	{"replay-expect-structured-schema", REPORT_LEVEL_ERROR,
	 "A dataset case's structuredContent breaks structured_schema"},
	{"replay-expect-size", REPORT_LEVEL_ERROR, "A dataset case's result is outside its byte bounds"},
	{"replay-expect-iserror", REPORT_LEVEL_ERROR, "A dataset case's isError is not the expected one"},
};

static enum report_status tool_status(const json_t *t)
{
	const char *v = json_string_value(json_object_get(t, "verdict"));
	const json_t *codes = json_object_get(t, "codes");
	if (strcmp(v, "skipped") == 0)
		return REPORT_SKIPPED;
	if (strcmp(v, "pass") == 0)
		return REPORT_PASS;
	/* Nothing came back at all: the call could not be judged. */
	for (size_t i = 0; i < json_array_size(codes); i++) {
		const char *c = json_string_value(json_array_get(codes, i));
		if (strcmp(c, "replay-no-response") != 0 && strcmp(c, "replay-baseline-no-response") != 0)
			return REPORT_FAIL;
	}
	return REPORT_ERROR;
}

static int add_cases(struct report *rep, const json_t *doc)
{
	const char *suite = json_string_value(json_object_get(doc, "against"));
	const json_t *tools = json_object_get(doc, "tools"), *calls = json_object_get(doc, "calls");
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		const char *name = json_string_value(json_object_get(t, "tool"));
		double s = 0;
		for (size_t k = 0; k < json_array_size(calls); k++) {
			const json_t *c = json_array_get(calls, k);
			if (strcmp(json_string_value(json_object_get(c, "tool")), name) == 0)
				s += json_number_value(json_object_get(c, "ms")) / 1000.0;
		}
		char msg[128];
		snprintf(msg, sizeof(msg), "%lld calls: %lld passed, %lld regressed, %lld skipped",
		         (long long)json_integer_value(json_object_get(t, "calls")),
		         (long long)json_integer_value(json_object_get(t, "passed")),
		         (long long)json_integer_value(json_object_get(t, "regressed")),
		         (long long)json_integer_value(json_object_get(t, "skipped")));
		if (report_add_case(rep, suite, name, tool_status(t), s, msg) < 0)
			return -1;
	}
	return 0;
}

/* One finding per difference, at the line of the file its call came from
 * (the writers print the location: the message stays replay's own). */
static int add_findings(struct report *rep, const json_t *doc, const char *file)
{
	const json_t *calls = json_object_get(doc, "calls");
	for (size_t k = 0; k < json_array_size(calls); k++) {
		const json_t *c = json_array_get(calls, k);
		const json_t *fs = json_object_get(c, "findings");
		int line = (int)json_integer_value(json_object_get(c, "line"));
		const char *tool = json_string_value(json_object_get(c, "tool"));
		for (size_t i = 0; i < json_array_size(fs); i++) {
			const json_t *f = json_array_get(fs, i);
			struct report_finding rf = {
				.code = json_string_value(json_object_get(f, "code")),
				.level = strcmp(json_string_value(json_object_get(f, "severity")), "error") == 0
				                 ? REPORT_LEVEL_ERROR
				                 : REPORT_LEVEL_WARNING,
				.breaking = strcmp(json_string_value(json_object_get(f, "severity")), "error") == 0,
				.message = json_string_value(json_object_get(f, "message")),
				.tool = tool,
				.file = file,
				.line = line,
				.column = 1,
			};
			if (report_add_finding(rep, &rf) < 0)
				return -1;
		}
	}
	return 0;
}

struct report *replay_report_build(const json_t *doc, const char *file, const char *text,
                                   const struct cli_secrets *sec)
{
	struct report *rep = report_new("replay", version_get());
	const json_t *sum = json_object_get(doc, "summary");
	char summary[160];
	if (!rep)
		return NULL;
	report_set_secrets(rep, sec);
	int bad = 0;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		bad |= report_describe_rule(rep, rules[i].code, rules[i].level, rules[i].desc, NULL) < 0;
	int exit_code = (int)json_integer_value(json_object_get(doc, "exit"));
	snprintf(summary, sizeof(summary), "%s: %lld calls: %lld passed, %lld regressed, %lld skipped",
	         exit_code ? "REGRESSED" : "PASSED",
	         (long long)json_integer_value(json_object_get(sum, "calls")),
	         (long long)json_integer_value(json_object_get(sum, "passed")),
	         (long long)json_integer_value(json_object_get(sum, "regressed")),
	         (long long)json_integer_value(json_object_get(sum, "skipped")));
	bad |= add_cases(rep, doc) < 0 || add_findings(rep, doc, file) < 0;
	bad |= report_set_result(rep, exit_code, summary) < 0;
	bad |= report_set_json(rep, (json_t *)(uintptr_t)doc) < 0;
	if (text)
		bad |= report_set_text(rep, text) < 0;
	if (bad) {
		report_free(rep);
		return NULL;
	}
	return rep;
}

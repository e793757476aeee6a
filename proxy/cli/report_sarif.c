/* report_sarif: report.h's SARIF 2.1.0 writer (OASIS sarif-v2.1.0).
 *
 * One run: tool.driver (name, version, informationUri, rules[] = the
 * codes the results use, in order of first use), one invocation
 * (executionSuccessful false with a notification when the command could
 * not run), columnKind unicodeCodePoints (report.h's columns), results in
 * finding order. A result's locations: a physicalLocation when the finding
 * names a file (a region when the line is known), and a logicalLocation
 * naming the tool. partialFingerprints["mcpwarden/v1"] hashes what
 * identifies the finding across runs (code, suite, tool, the pointer
 * below the tool: not the tool's index, line or message), so code
 * scanning keeps an alert open across commits instead of re-raising it.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/base/hash.h"
#include "proxy/cli/report_model.h"

#define SARIF_SCHEMA "https://json.schemastore.org/sarif-2.1.0.json"
/* tool.driver.informationUri must be an absolute URI. The project has no
 * published home yet: this is a placeholder, overridable at build time
 * (CFLAGS+=-DSARIF_INFO_URI='"https://..."'). */
#ifndef SARIF_INFO_URI
#define SARIF_INFO_URI "https://github.com/mcpwarden/mcpwarden"
#endif

static const char *sarif_level(enum report_level l)
{
	return report_level_name(l); /* "error", "warning", "note": SARIF's own words */
}

/* The pointer below the tool: "/tools/3/inputSchema/x" -> "/inputSchema/x"
 * (also with a page prefix "/1/tools/3/..." or a file's "/result/tools/3"). */
static const char *below_tool(const char *p)
{
	const char *t = p ? strstr(p, "/tools/") : NULL;
	if (!t)
		return p ? p : "";
	t += 7;
	while (*t >= '0' && *t <= '9')
		t++;
	return t;
}

static void fp_add(uint64_t *h, const char *s)
{
	/* FNV-1a over the parts with a NUL between, so "a"+"bc" != "ab"+"c". */
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); ; p++) {
		*h ^= *p;
		*h *= 0x100000001b3ULL;
		if (!*p)
			break;
	}
}

static json_t *fingerprint(const struct report_item *it)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	fp_add(&h, it->code);
	fp_add(&h, it->suite);
	fp_add(&h, it->tool);
	fp_add(&h, below_tool(it->pointer));
	char hex[17];
	snprintf(hex, sizeof hex, "%016" PRIx64, h);
	return json_pack("{s:s}", "mcpwarden/v1", hex);
}

/* A file name as a URI reference: unreserved characters and '/' as they
 * are, the rest %XX; an absolute path becomes a file:// URI. */
static json_t *artifact_uri(const char *file)
{
	size_t n = strlen(file);
	char *u = malloc(n * 3 + 8);
	if (!u)
		return NULL;
	size_t k = 0;
	if (file[0] == '/')
		k += (size_t)sprintf(u, "file://");
	for (const unsigned char *p = (const unsigned char *)file; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~/", *p))
			u[k++] = (char)*p;
		else
			k += (size_t)sprintf(u + k, "%%%02X", *p);
	}
	u[k] = '\0';
	json_t *j = json_string(u);
	free(u);
	return j;
}

static json_t *locations(const struct report_item *it)
{
	json_t *loc = json_object();
	if (it->file) {
		json_t *phys = json_pack("{s:{s:o}}", "artifactLocation", "uri", artifact_uri(it->file));
		if (phys && it->line)
			json_object_set_new(phys, "region", json_pack("{s:i,s:i}", "startLine", it->line,
			                                              "startColumn",
			                                              it->column ? it->column : 1));
		json_object_set_new(loc, "physicalLocation", phys);
	}
	if (it->tool)
		json_object_set_new(loc, "logicalLocations",
		                    json_pack("[{s:s,s:s}]", "name", it->tool, "kind", "function"));
	if (json_object_size(loc) == 0) {
		json_decref(loc);
		return json_array();
	}
	return json_pack("[o]", loc);
}

/* Index of code in rules (adding it when new). */
static size_t rule_index(const struct report *r, json_t *rules, const char *code)
{
	for (size_t i = 0; i < json_array_size(rules); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(rules, i), "id")), code) == 0)
			return i;
	struct report_rule u;
	report_rule_of(r, code, &u);
	const char *sd = u.short_desc ? u.short_desc : "A finding of mcpwarden.";
	json_array_append_new(
		rules, json_pack("{s:s,s:{s:s},s:{s:s},s:{s:s}}", "id", code, "shortDescription", "text",
		                 sd, "help", "text", u.help ? u.help : sd, "defaultConfiguration", "level",
		                 sarif_level(u.level)));
	return json_array_size(rules) - 1;
}

static json_t *results(const struct report *r, json_t *rules)
{
	json_t *res = json_array();
	for (size_t i = 0; res && i < r->nitems; i++) {
		const struct report_item *it = &r->items[i];
		size_t ri = rule_index(r, rules, it->code);
		json_t *o = json_pack("{s:s,s:I,s:s,s:{s:s},s:o,s:o}", "ruleId", it->code, "ruleIndex",
		                      (json_int_t)ri, "level", sarif_level(it->level), "message", "text",
		                      it->message, "locations", locations(it), "partialFingerprints",
		                      fingerprint(it));
		if (o && it->pointer)
			json_object_set_new(o, "properties", json_pack("{s:s}", "pointer", it->pointer));
		if (!o || json_array_append_new(res, o) < 0) {
			json_decref(res);
			return NULL;
		}
	}
	return res;
}

static json_t *invocation(const struct report *r)
{
	json_t *inv = json_pack("{s:b}", "executionSuccessful", r->error == NULL);
	if (inv && r->error)
		json_object_set_new(inv, "toolExecutionNotifications",
		                    json_pack("[{s:{s:s},s:s}]", "message", "text", r->error, "level",
		                              "error"));
	if (inv)
		json_object_set_new(inv, "exitCode", json_integer(r->exit_code));
	return inv;
}

int report_write_sarif(const struct report *r, FILE *f)
{
	json_t *rules = json_array();
	json_t *res = rules ? results(r, rules) : NULL;
	json_t *doc = NULL;
	if (res) {
		doc = json_pack("{s:s,s:s,s:[{s:{s:{s:s,s:s,s:s,s:o}},s:[o],s:s,s:o}]}", "$schema",
		                SARIF_SCHEMA, "version", "2.1.0", "runs", "tool", "driver", "name",
		                "mcpwarden", "version", r->version, "informationUri", SARIF_INFO_URI,
		                "rules", json_incref(rules), "invocations", invocation(r), "columnKind",
		                "unicodeCodePoints", "results", json_incref(res));
	}
	int rc = doc ? report_put_json(f, doc) : -1;
	json_decref(doc);
	json_decref(rules);
	json_decref(res);
	return rc;
}

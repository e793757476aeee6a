/* replay: see replay.h. One pass, in steps that each own their part of
 * struct rp: options -> rules and policy -> the file's lines -> the new
 * build's listing -> the policy's decisions -> one client run per session
 * (and per baseline) -> a verdict per call and per tool -> the writers.
 * Output is in file order (sessions by their first line, calls by line),
 * so two runs over the same answers print the same bytes.
 *
 * Why this file is long (over 800 lines): the steps share struct rp and run
 * once, in order; each is a short function. What is pure is already out
 * (replay_compare.c judges, replay_report.c writes formats, check_client.c
 * talks MCP); what is left is the sequence itself, which reads best in one
 * place.
 */
#include "proxy/cli/replay.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/jschema.h"
#include "policy/policy.h"
#include "proxy/base/version.h"
#include "proxy/cli/check_client.h"
#include "proxy/cli/cli_out.h"
#include "proxy/cli/replay_compare.h"
#include "proxy/cli/replay_report.h"
#include "proxy/cli/report.h"

#define REPLAY_TIMEOUT_S    10.0
#define REPLAY_MAX_HEADERS  16
#define REPLAY_MAX_LINES    100000
#define REPLAY_MAX_LINE     (64u * 1024 * 1024)

_Static_assert(REPLAY_MAX_HEADERS * 2 <= CLI_MAX_SECRETS, "every --header can be masked");

/* The read-only preset, embedded from conf/policy-read-only.json
 * (replay_preset.S): the very file the proxy's docs point to. */
extern const char replay_preset_start[], replay_preset_end[];

static const char replay_usage[] =
	"usage: mcpwarden replay FILE --against URL [--baseline-url URL] [--policy FILE]\n"
	"                        [--rules FILE] [--header 'Name: value']... [--timeout S]\n"
	"                        [--max-slowdown R]\n"
	"                        [--format text|json|junit|sarif|github|markdown[=FILE]]... [--json]\n";

/* One line of the file (a capture exchange or a dataset case). */
struct rp_call {
	size_t line;                   /* 1-based */
	json_t *doc;                   /* owned: the parsed line */
	const char *tool;              /* borrowed from doc */
	const char *session;           /* borrowed from doc, or NULL */
	struct replay_expect *expect;  /* owned, or NULL */
	size_t sess;                   /* index into rp.sess */
	const char *skip;              /* static/policy-owned reason, or NULL: sent */
	json_t *skip_detail;           /* owned: {"rule", "reason"} of a policy skip */
	int missing;                   /* the new build does not list the tool */
	const json_t *live, *base;     /* borrowed from the runs' replies */
	const char *live_err, *base_err; /* borrowed: why a run gave no replies */
};

struct rp_sess {
	size_t first;                  /* index of its first call */
	size_t *calls;                 /* owned: indices, in file order */
	size_t n, cap;
	struct check_client_result live, base; /* owned */
};

struct rp {
	const char *file, *against, *baseline, *policy_file, *rules_file;
	struct check_header headers[REPLAY_MAX_HEADERS];
	size_t nheaders;
	double timeout_s, max_slowdown;
	struct report_outs outs;       /* --format; --json adds json on stdout */
	char why[512];                 /* why it could not run, for the CI formats */
	struct cli_secrets sec;
	struct replay_rules *rules;    /* owned */
	struct policy *policy;         /* owned */
	struct rp_call *calls;         /* owned */
	size_t ncalls;
	struct rp_sess *sess;          /* owned */
	size_t nsess;
	json_t *tools;                 /* owned: name -> tool of the new build */
	char *era;                     /* owned: the listing's era */
	char *against_shown, *baseline_shown; /* owned */
	json_t *notes;                 /* owned: array of strings */
};

static void rp_free(struct rp *r)
{
	for (size_t i = 0; i < r->nheaders; i++)
		check_client_header_fini(&r->headers[i]);
	for (size_t i = 0; i < r->ncalls; i++) {
		json_decref(r->calls[i].doc);
		json_decref(r->calls[i].skip_detail);
		replay_expect_free(r->calls[i].expect);
	}
	for (size_t i = 0; i < r->nsess; i++) {
		free(r->sess[i].calls);
		check_client_result_fini(&r->sess[i].live);
		check_client_result_fini(&r->sess[i].base);
	}
	free(r->calls);
	free(r->sess);
	replay_rules_free(r->rules);
	policy_free(r->policy);
	json_decref(r->tools);
	json_decref(r->notes);
	free(r->era);
	free(r->against_shown);
	free(r->baseline_shown);
	cli_secrets_free(&r->sec);
}

/* ---- options ------------------------------------------------------------------- */

static int add_format(struct rp *r, const char *v)
{
	const char *why = NULL;
	if (report_outs_add(&r->outs, v, &why) < 0) {
		fprintf(stderr, "mcpwarden replay: --format %s: %s\n", v, why ? why : "refused");
		return -1;
	}
	return 0;
}

static int positive(const char *opt, const char *v, double max, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || *end || !(d > 0) || d > max) {
		fprintf(stderr, "mcpwarden replay: %s wants a number (0 < N <= %g), not \"%s\"\n", opt,
		        max, v);
		return -1;
	}
	*out = d;
	return 0;
}

/* The option's value slot, or NULL when a is not a valued option. */
static const char **value_slot(struct rp *r, const char *a)
{
	if (strcmp(a, "--against") == 0)
		return &r->against;
	if (strcmp(a, "--baseline-url") == 0)
		return &r->baseline;
	if (strcmp(a, "--policy") == 0)
		return &r->policy_file;
	if (strcmp(a, "--rules") == 0)
		return &r->rules_file;
	return NULL;
}

static int take_value(struct rp *r, const char *a, const char *v)
{
	const char **slot = value_slot(r, a);
	if (slot) {
		*slot = v;
		return 0;
	}
	if (strcmp(a, "--timeout") == 0)
		return positive(a, v, 86400, &r->timeout_s);
	if (strcmp(a, "--max-slowdown") == 0)
		return positive(a, v, 1e6, &r->max_slowdown);
	if (strcmp(a, "--format") == 0)
		return add_format(r, v);
	if (r->nheaders >= REPLAY_MAX_HEADERS) {
		fprintf(stderr, "mcpwarden replay: at most %d --header options\n", REPLAY_MAX_HEADERS);
		return -1;
	}
	if (check_client_header_parse("replay", v, &r->headers[r->nheaders], &r->sec) < 0)
		return -1;
	r->nheaders++;
	return 0;
}

static int is_valued(const char *a)
{
	static const char *const v[] = {"--against", "--baseline-url", "--policy", "--rules",
	                                "--header",  "--timeout",      "--max-slowdown", "--format"};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (strcmp(a, v[i]) == 0)
			return 1;
	return 0;
}

/* Returns 0, 1 for --help, -1 on misuse (reported). */
static int parse_args(int argc, char **argv, struct rp *r)
{
	r->timeout_s = REPLAY_TIMEOUT_S;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return 1;
		if (strcmp(a, "--json") == 0) {
			if (add_format(r, "json") < 0)
				return -1;
		} else if (is_valued(a)) {
			if (i + 1 >= argc) {
				fprintf(stderr, "mcpwarden replay: %s needs a value\n", a);
				return -1;
			}
			if (take_value(r, a, argv[++i]) < 0)
				return -1;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "mcpwarden replay: unknown option %s\n%s", a, replay_usage);
			return -1;
		} else if (r->file) {
			fprintf(stderr, "mcpwarden replay: one FILE only (got \"%s\" too)\n", a);
			return -1;
		} else {
			r->file = a;
		}
	}
	if (!r->file || !r->against) {
		fprintf(stderr, "mcpwarden replay: give FILE and --against URL\n%s", replay_usage);
		return -1;
	}
	return 0;
}

/* ---- rules and policy ------------------------------------------------------------ */

static int load_rules(struct rp *r)
{
	char err[512];
	r->rules = replay_rules_new();
	if (!r->rules)
		return -1;
	if (!r->rules_file)
		return 0;
	json_error_t je;
	json_t *doc = json_load_file(r->rules_file, 0, &je);
	if (!doc) {
		fprintf(stderr, "mcpwarden replay: --rules %s: line %d: %s\n", r->rules_file, je.line,
		        je.text);
		return -1;
	}
	int rc = replay_rules_add(r->rules, doc, err, sizeof(err));
	json_decref(doc);
	if (rc < 0)
		fprintf(stderr, "mcpwarden replay: --rules %s: %s\n", r->rules_file, err);
	return rc;
}

static int load_policy(struct rp *r)
{
	json_error_t je;
	json_t *doc = r->policy_file
	                      ? json_load_file(r->policy_file, 0, &je)
	                      : json_loadb(replay_preset_start,
	                                   (size_t)(replay_preset_end - replay_preset_start), 0, &je);
	const char *what = r->policy_file ? r->policy_file : "(the read-only preset)";
	char err[2048];
	if (!doc) {
		fprintf(stderr, "mcpwarden replay: --policy %s: line %d: %s\n", what, je.line, je.text);
		return -1;
	}
	r->policy = policy_load(doc, "$", err, sizeof(err));
	json_decref(doc);
	if (!r->policy) {
		fprintf(stderr, "mcpwarden replay: --policy %s:\n%s\n", what, err);
		return -1;
	}
	return 0;
}

/* ---- the file ---------------------------------------------------------------- */

static int line_error(struct rp *r, size_t line, const char *why)
{
	fprintf(stderr, "mcpwarden replay: %s:%zu: %s\n", r->file, line, why);
	snprintf(r->why, sizeof(r->why), "%.200s:%zu: %.280s", r->file, line, why);
	return -1;
}

/* The shape WAVE4 fixes, as far as replay reads it. Returns NULL or why. */
static const char *line_problem(const json_t *d)
{
	const json_t *p = json_object_get(d, "params");
	const json_t *s = json_object_get(d, "session");
	const json_t *c = json_object_get(d, "client"), *k = json_object_get(d, "capabilities");
	const json_t *era = json_object_get(d, "era");
	if (!json_is_object(d))
		return "not a JSON object";
	if (!json_is_integer(json_object_get(d, "capture")) ||
	    json_integer_value(json_object_get(d, "capture")) != 1)
		return "\"capture\" must be 1 (the format version)";
	if (!json_is_string(json_object_get(d, "method")))
		return "\"method\" must be a string";
	if (!json_is_object(p))
		return "\"params\" must be an object";
	if (strcmp(json_string_value(json_object_get(d, "method")), "tools/call") == 0 &&
	    !json_is_string(json_object_get(p, "name")))
		return "\"params\" must be an object with a string \"name\"";
	if (s && !json_is_string(s) && !json_is_null(s))
		return "\"session\" must be a string or null";
	if (era && !json_is_string(era) && !json_is_null(era))
		return "\"era\" must be a string";
	if ((c && !json_is_object(c) && !json_is_null(c)) ||
	    (k && !json_is_object(k) && !json_is_null(k)))
		return "\"client\" and \"capabilities\" must be objects or null";
	if (json_object_get(d, "result") && !json_is_object(json_object_get(d, "result")))
		return "\"result\" must be an object";
	if (json_object_get(d, "error") && !json_is_object(json_object_get(d, "error")))
		return "\"error\" must be an object";
	return NULL;
}

static int add_line(struct rp *r, size_t line, const char *text, size_t len)
{
	json_error_t je;
	char err[600];
	json_t *d = json_loadb(text, len, 0, &je);
	if (!d) {
		snprintf(err, sizeof(err), "not JSON: %s", je.text);
		return line_error(r, line, err);
	}
	const char *bad = line_problem(d);
	if (bad) {
		json_decref(d);
		return line_error(r, line, bad);
	}
	struct rp_call *c = &r->calls[r->ncalls];
	memset(c, 0, sizeof(*c));
	c->line = line;
	c->doc = d;
	r->ncalls++;
	c->tool = json_string_value(json_object_get(json_object_get(d, "params"), "name"));
	if (!c->tool) /* another method (v1 captures hold tools/call only): named by it */
		c->tool = json_string_value(json_object_get(d, "method"));
	c->session = json_string_value(json_object_get(d, "session"));
	const json_t *ex = json_object_get(d, "expect");
	if (ex) {
		char why[512];
		c->expect = replay_expect_new(r->rules, ex, json_string_value(json_object_get(d, "era")),
		                              why, sizeof(why));
		if (!c->expect)
			return line_error(r, line, why);
	}
	return 0;
}

static int load_file(struct rp *r)
{
	FILE *f = strcmp(r->file, "-") == 0 ? stdin : fopen(r->file, "r");
	char *buf = NULL;
	size_t cap = 0, line = 0;
	ssize_t n;
	int rc = 0;
	if (!f) {
		fprintf(stderr, "mcpwarden replay: %s: %s\n", r->file, strerror(errno));
		return -1;
	}
	r->calls = calloc(1024, sizeof(*r->calls));
	size_t room = r->calls ? 1024 : 0;
	while (rc == 0 && (n = getline(&buf, &cap, f)) >= 0) {
		line++;
		size_t len = (size_t)n;
		while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
			len--;
		if (len == 0)
			continue;
		if (len > REPLAY_MAX_LINE || r->ncalls >= REPLAY_MAX_LINES) {
			rc = line_error(r, line, "over the bound (64 MiB a line, 100000 lines)");
			break;
		}
		if (r->ncalls == room) {
			struct rp_call *m = realloc(r->calls, room * 2 * sizeof(*m));
			if (!m) {
				rc = line_error(r, line, "out of memory");
				break;
			}
			r->calls = m;
			room *= 2;
		}
		rc = r->calls ? add_line(r, line, buf, len) : line_error(r, line, "out of memory");
	}
	if (rc == 0 && ferror(f))
		rc = line_error(r, line + 1, strerror(errno));
	if (rc == 0 && r->ncalls == 0)
		rc = line_error(r, line, "no exchange in the file");
	free(buf);
	if (f != stdin)
		fclose(f);
	return rc;
}

/* ---- sessions --------------------------------------------------------------- */

static int sess_push(struct rp_sess *s, size_t call)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 8;
		size_t *m = realloc(s->calls, nc * sizeof(*m));
		if (!m)
			return -1;
		s->calls = m;
		s->cap = nc;
	}
	s->calls[s->n++] = call;
	return 0;
}

/* Groups calls by session key, in the order each session first appears; a
 * null session is a session of its own (the stateless era). */
static int group(struct rp *r)
{
	r->sess = calloc(r->ncalls, sizeof(*r->sess));
	if (!r->sess)
		return -1;
	for (size_t i = 0; i < r->ncalls; i++) {
		struct rp_call *c = &r->calls[i];
		size_t s = r->nsess;
		for (size_t k = 0; c->session && k < r->nsess; k++) {
			const char *key = r->calls[r->sess[k].first].session;
			if (key && strcmp(key, c->session) == 0) {
				s = k;
				break;
			}
		}
		if (s == r->nsess)
			r->sess[r->nsess++].first = i;
		c->sess = s;
		if (sess_push(&r->sess[s], i) < 0)
			return -1;
	}
	return 0;
}

/* ---- the new build's tools and the policy ------------------------------------------ */

static void target_init(struct rp *r, struct check_client_target *t, const char *url)
{
	memset(t, 0, sizeof(*t));
	t->url = url;
	t->transport = "auto";
	t->headers = r->headers;
	t->nheaders = r->nheaders;
	t->timeout_s = r->timeout_s;
	t->sec = &r->sec; /* the client adds the URL's password */
	t->cmd = "replay";
}

/* Lists the tools of url (every page) into r->tools. Returns 0, or -1 after
 * printing why. shown gets the printable URL. */
static int list_tools(struct rp *r, const char *url, char **shown)
{
	struct check_client_target t;
	struct check_client_result res;
	target_init(r, &t, url);
	int rc = check_client_run(&t, &res);
	if (rc == 0 && res.error) {
		cli_emitf(&r->sec, stderr, "mcpwarden replay: %s\n", res.error);
		snprintf(r->why, sizeof(r->why), "%s", res.error); /* masked by the writers */
	}
	else if (rc > 0)
		fprintf(stderr, "mcpwarden replay: out of memory\n");
	*shown = res.url_shown ? strdup(res.url_shown) : NULL;
	if (rc != 0 || res.error) {
		check_client_result_fini(&res);
		return -1;
	}
	if (!r->tools) {
		r->tools = json_object();
		r->era = res.era ? strdup(res.era) : NULL;
		for (size_t p = 0; p < json_array_size(res.pages); p++) {
			const json_t *list = json_object_get(json_array_get(res.pages, p), "tools");
			for (size_t i = 0; i < json_array_size(list); i++) {
				json_t *tool = json_array_get(list, i);
				const char *name = json_string_value(json_object_get(tool, "name"));
				if (name && !json_object_get(r->tools, name))
					json_object_set(r->tools, name, tool);
			}
		}
	}
	check_client_result_fini(&res);
	return 0;
}

static void decide(struct rp *r, struct rp_call *c)
{
	const json_t *tool = json_object_get(r->tools, c->tool);
	const char *method = json_string_value(json_object_get(c->doc, "method"));
	const json_t *err = json_object_get(c->doc, "error");
	if (strcmp(method, "tools/call") != 0) {
		c->skip = "skipped (not a tools/call)";
		return;
	}
	c->missing = !tool;
	if (!c->expect && !json_object_get(c->doc, "result") && !err && !r->baseline) {
		c->skip = "skipped (no captured answer)";
		return;
	}
	/* "by" beside "error" (the recorder's place), or inside it. */
	const char *by = json_string_value(json_object_get(c->doc, "by"));
	if (!by)
		by = json_string_value(json_object_get(err, "by"));
	if (!c->expect && !r->baseline && by && strcmp(by, "proxy") == 0) {
		c->skip = "skipped (the proxy answered, not the server)";
		return;
	}
	struct policy_hints h;
	policy_hints_from_json(json_object_get(tool, "annotations"), &h);
	struct policy_input in = {
		.method = "tools/call",
		.tool = c->tool,
		.call_params = json_object_get(c->doc, "params"),
		.upstream = json_string_value(json_object_get(c->doc, "upstream")),
		.tool_known = tool != NULL,
		.hints = tool ? &h : NULL,
	};
	struct policy_decision d;
	policy_eval(r->policy, &in, &d);
	if (d.action == POLICY_DENY || d.action == POLICY_HIDE) {
		c->skip = "skipped (policy)";
		c->skip_detail = json_pack("{s:s,s:s}", "rule", d.rule ? d.rule : "",
		                           "reason", d.reason ? d.reason : "");
	}
}

/* ---- the runs ------------------------------------------------------------------ */

/* Mcp-Param-<H> for each x-mcp-header property reached from the root by
 * "properties" alone (STATELESS-2026.md 2.2), from the call's arguments:
 * strings as they are, integers in decimal, booleans as true/false; other
 * values and absent arguments send nothing. */
static void param_headers(const json_t *schema, const json_t *args, json_t *out, int depth)
{
	const json_t *props = json_object_get(schema, "properties");
	const char *k;
	json_t *sub;
	if (!json_is_object(props) || !json_is_object(args) || depth > 16)
		return;
	json_object_foreach((json_t *)(uintptr_t)props, k, sub) {
		const json_t *v = json_object_get(args, k);
		const char *h = json_string_value(json_object_get(sub, "x-mcp-header"));
		char name[128], val[32];
		if (!v)
			continue;
		if (h && snprintf(name, sizeof(name), "Mcp-Param-%s", h) < (int)sizeof(name)) {
			if (json_is_string(v))
				json_object_set_new(out, name, json_string(json_string_value(v)));
			else if (json_is_integer(v) || json_is_boolean(v)) {
				if (json_is_integer(v))
					snprintf(val, sizeof(val), "%lld", (long long)json_integer_value(v));
				else
					snprintf(val, sizeof(val), "%s", json_is_true(v) ? "true" : "false");
				json_object_set_new(out, name, json_string(val));
			}
		}
		param_headers(sub, v, out, depth + 1);
	}
}

/* The requests of session s that are sent, as check_client wants them. */
static json_t *session_calls(const struct rp *r, const struct rp_sess *s)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < s->n; i++) {
		const struct rp_call *c = &r->calls[s->calls[i]];
		if (c->skip)
			continue;
		const json_t *params = json_object_get(c->doc, "params");
		json_t *h = json_object();
		param_headers(json_object_get(json_object_get(r->tools, c->tool), "inputSchema"),
		              json_object_get(params, "arguments"), h, 0);
		json_array_append_new(a, json_pack("{s:s,s:O,s:o}", "method", "tools/call", "params",
		                                   params, "headers", h));
	}
	return a;
}

static int run_session(struct rp *r, struct rp_sess *s, const char *url,
                       struct check_client_result *res)
{
	const json_t *first = r->calls[s->first].doc;
	json_t *calls = session_calls(r, s);
	struct check_client_target t;
	if (!calls)
		return -1;
	if (json_array_size(calls) == 0) {
		json_decref(calls);
		return 0; /* nothing to send: no session is opened */
	}
	target_init(r, &t, url);
	t.protocol = json_string_value(json_object_get(first, "era"));
	const json_t *ci = json_object_get(first, "client");
	const json_t *caps = json_object_get(first, "capabilities");
	t.client_info = json_is_object(ci) ? ci : NULL;
	t.capabilities = json_is_object(caps) ? caps : NULL;
	t.calls = calls;
	t.skip_list = 1;
	int rc = check_client_run(&t, res);
	json_decref(calls);
	return rc == 0 ? 0 : -1;
}

/* Hands each sent call its reply (or the run's error). */
static void attach(struct rp *r, const struct rp_sess *s, const struct check_client_result *res,
                   int base)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct rp_call *c = &r->calls[s->calls[i]];
		if (c->skip)
			continue;
		const json_t *rep = json_array_get(res->replies, k++);
		const char *why = json_string_value(json_object_get(rep, "error"));
		if (!rep)
			why = res->error ? res->error : "the session ended before this call";
		*(base ? &c->base : &c->live) = rep;
		*(base ? &c->base_err : &c->live_err) = why;
	}
}

static int run_all(struct rp *r)
{
	for (size_t i = 0; i < r->nsess; i++) {
		struct rp_sess *s = &r->sess[i];
		if (run_session(r, s, r->against, &s->live) < 0)
			return -1;
		attach(r, s, &s->live, 0);
		if (r->baseline) {
			if (run_session(r, s, r->baseline, &s->base) < 0)
				return -1;
			attach(r, s, &s->base, 1);
		}
	}
	return 0;
}

/* ---- verdicts ----------------------------------------------------------------- */

static double reply_ms(const json_t *rep)
{
	const json_t *ms = json_object_get(rep, "ms");
	return json_is_number(ms) ? json_number_value(ms) : -1;
}

static struct jschema *output_schema(const struct rp *r, const char *tool)
{
	const json_t *os = json_object_get(json_object_get(r->tools, tool), "outputSchema");
	struct jschema_error why;
	return os ? jschema_compile(os, jschema_dialect_for_era(r->era), 0, &why) : NULL;
}

/* The reference answer: the baseline's (A/B) or the captured one. Owned,
 * or NULL when the baseline gave none (*ms set either way). */
static json_t *reference(const struct rp *r, const struct rp_call *c, double *ms)
{
	if (r->baseline) {
		*ms = reply_ms(c->base);
		return json_incref(json_object_get(c->base, "response"));
	}
	const json_t *cms = json_object_get(c->doc, "ms");
	const char *k = json_object_get(c->doc, "result") ? "result" : "error";
	*ms = json_is_number(cms) ? json_number_value(cms) : -1;
	return json_pack("{s:O}", k, json_object_get(c->doc, k));
}

/* The findings of one sent call (owned array). */
static json_t *judge(struct rp *r, struct rp_call *c)
{
	json_t *findings = json_array();
	const json_t *live = json_object_get(c->live, "response");
	if (c->expect) {
		replay_expect_check(r->rules, c->expect, live, c->live_err, findings);
		return findings;
	}
	struct jschema *os = output_schema(r, c->tool);
	struct replay_call_ctx cx = {.max_slowdown = r->max_slowdown,
	                             .new_ms = reply_ms(c->live),
	                             .output_schema = os,
	                             .redacted = !r->baseline &&
	                                         json_is_true(json_object_get(c->doc, "redacted"))};
	json_t *old = reference(r, c, &cx.old_ms);
	if (old)
		replay_compare(r->rules, old, live, c->live_err, &cx, findings);
	else
		json_array_append_new(findings,
		                      json_pack("{s:s,s:s,s:s}", "code", "replay-baseline-no-response",
		                                "severity", "error", "message",
		                                c->base_err ? c->base_err : "no response"));
	json_decref(old);
	jschema_free(os);
	return findings;
}

static json_t *call_entry(struct rp *r, struct rp_call *c)
{
	json_t *e = json_pack("{s:I,s:O,s:s,s:o}", "line", (json_int_t)c->line, "seq",
	                      json_object_get(c->doc, "seq") ? json_object_get(c->doc, "seq")
	                                                     : json_null(),
	                      "tool", c->tool, "session",
	                      c->session ? json_string(c->session) : json_null());
	json_t *findings = c->skip ? json_array() : judge(r, c);
	if (c->missing)
		json_array_insert_new(findings, 0,
		                      json_pack("{s:s,s:s,s:s}", "code", "replay-tool-missing", "severity",
		                                "error", "message",
		                                "the new build does not list this tool"));
	int errors = 0;
	for (size_t i = 0; i < json_array_size(findings); i++)
		errors += strcmp(json_string_value(json_object_get(json_array_get(findings, i),
		                                                   "severity")), "error") == 0;
	const char *verdict = errors ? "regressed" : c->skip ? "skipped" : "pass";
	json_object_set_new(e, "verdict", json_string(verdict));
	if (c->expect)
		json_object_set_new(e, "case", json_true());
	else if (!c->skip && !r->baseline && json_is_true(json_object_get(c->doc, "redacted")))
		json_object_set_new(e, "redacted", json_true()); /* shapes only: see docs */
	if (c->skip)
		json_object_set_new(e, "reason", json_string(c->skip));
	if (c->skip_detail)
		json_object_set(e, "policy", c->skip_detail);
	double nms = reply_ms(c->live);
	double oms = c->base ? reply_ms(c->base)
	                     : json_number_value(json_object_get(c->doc, "ms"));
	if (!c->skip && nms >= 0) {
		json_object_set_new(e, "ms", json_real(nms));
		if (oms > 0 && !c->expect) {
			json_object_set_new(e, r->baseline ? "baseline_ms" : "captured_ms", json_real(oms));
			json_object_set_new(e, "ratio", json_real(nms / oms));
		}
	}
	json_object_set_new(e, "findings", findings);
	return e;
}

/* Per tool, in name order: worst verdict wins (regressed > pass > skipped). */
static json_t *tool_summary(const json_t *calls)
{
	json_t *by = json_object();
	for (size_t i = 0; i < json_array_size(calls); i++) {
		const json_t *c = json_array_get(calls, i);
		const char *name = json_string_value(json_object_get(c, "tool"));
		const char *v = json_string_value(json_object_get(c, "verdict"));
		json_t *t = json_object_get(by, name);
		if (!t) {
			t = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:[]}", "tool", name, "verdict", "skipped",
			              "calls", 0, "passed", 0, "regressed", 0, "skipped", 0, "codes");
			json_object_set_new(by, name, t);
		}
		const char *slot = strcmp(v, "pass") == 0 ? "passed" : v;
		json_object_set_new(t, "calls",
		                    json_integer(json_integer_value(json_object_get(t, "calls")) + 1));
		json_object_set_new(t, slot,
		                    json_integer(json_integer_value(json_object_get(t, slot)) + 1));
		const char *tv = json_string_value(json_object_get(t, "verdict"));
		if (strcmp(v, "regressed") == 0 || (strcmp(v, "pass") == 0 && strcmp(tv, "skipped") == 0))
			json_object_set_new(t, "verdict", json_string(v));
		json_t *codes = json_object_get(t, "codes");
		const json_t *fs = json_object_get(c, "findings");
		for (size_t k = 0; k < json_array_size(fs); k++) {
			const char *code = json_string_value(json_object_get(json_array_get(fs, k), "code"));
			int seen = 0;
			for (size_t j = 0; j < json_array_size(codes); j++)
				seen |= strcmp(json_string_value(json_array_get(codes, j)), code) == 0;
			if (!seen)
				json_array_append_new(codes, json_string(code));
		}
	}
	json_t *out = json_array();
	const char **names = calloc(json_object_size(by) + 1, sizeof(*names));
	size_t n = 0;
	const char *k;
	json_t *v;
	json_object_foreach(by, k, v)
		if (names)
			names[n++] = k;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++)
		json_array_append(out, json_object_get(by, names[i]));
	free(names);
	json_decref(by);
	return out;
}

/* The seam (replay.h): the whole result as one document. Owned. */
static json_t *replay_result(struct rp *r)
{
	json_t *calls = json_array();
	size_t passed = 0, regressed = 0, skipped = 0;
	for (size_t s = 0; s < r->nsess; s++) {
		for (size_t i = 0; i < r->sess[s].n; i++) {
			json_t *e = call_entry(r, &r->calls[r->sess[s].calls[i]]);
			const char *v = json_string_value(json_object_get(e, "verdict"));
			passed += strcmp(v, "pass") == 0;
			regressed += strcmp(v, "regressed") == 0;
			skipped += strcmp(v, "skipped") == 0;
			json_array_append_new(calls, e);
		}
	}
	json_t *tools = tool_summary(calls);
	for (size_t s = 0; s < r->nsess; s++)
		for (size_t i = 0; i < json_array_size(r->sess[s].live.notes); i++)
			json_array_append(r->notes, json_array_get(r->sess[s].live.notes, i));
	return json_pack("{s:s,s:s,s:o,s:s,s:{s:I,s:I,s:I,s:I},s:o,s:o,s:O,s:i}", "file", r->file,
	                 "against", r->against_shown ? r->against_shown : "",
	                 "baseline", r->baseline_shown ? json_string(r->baseline_shown) : json_null(),
	                 "policy", r->policy_file ? r->policy_file : "read-only (preset)",
	                 "summary", "calls", (json_int_t)r->ncalls, "passed", (json_int_t)passed,
	                 "regressed", (json_int_t)regressed, "skipped", (json_int_t)skipped,
	                 "calls", calls, "tools", tools, "notes", r->notes,
	                 "exit", regressed ? CLI_EXIT_FAIL : CLI_EXIT_PASS);
}

/* ---- writers ----------------------------------------------------------------- */

static void write_call_text(const struct rp *r, FILE *f, const json_t *c)
{
	const char *v = json_string_value(json_object_get(c, "verdict"));
	const json_t *seq = json_object_get(c, "seq");
	cli_emitf(&r->sec, f, "  line %lld", (long long)json_integer_value(json_object_get(c, "line")));
	if (json_is_integer(seq))
		cli_emitf(&r->sec, f, " (seq %lld)", (long long)json_integer_value(seq));
	cli_emitf(&r->sec, f, " %s: %s", json_string_value(json_object_get(c, "tool")),
	          strcmp(v, "skipped") == 0 ? json_string_value(json_object_get(c, "reason"))
	          : strcmp(v, "regressed") == 0 ? "REGRESSED" : "pass");
	const json_t *pol = json_object_get(c, "policy");
	if (pol)
		cli_emitf(&r->sec, f, " [rule %s]", json_string_value(json_object_get(pol, "rule")));
	if (json_object_get(c, "ms"))
		cli_emitf(&r->sec, f, " %.1f ms", json_number_value(json_object_get(c, "ms")));
	if (json_object_get(c, "ratio"))
		cli_emitf(&r->sec, f, " (x%.2f)", json_number_value(json_object_get(c, "ratio")));
	cli_emit(&r->sec, f, "\n");
	const json_t *fs = json_object_get(c, "findings");
	for (size_t i = 0; i < json_array_size(fs); i++) {
		const json_t *x = json_array_get(fs, i);
		cli_emitf(&r->sec, f, "      %s %s: %s\n",
		          strcmp(json_string_value(json_object_get(x, "severity")), "error") == 0
		                  ? "error"
		                  : "warning",
		          json_string_value(json_object_get(x, "code")),
		          json_string_value(json_object_get(x, "message")));
	}
}

static void write_text(const struct rp *r, FILE *f, const json_t *doc)
{
	const json_t *sum = json_object_get(doc, "summary");
	const json_t *calls = json_object_get(doc, "calls");
	const char *last = NULL;
	int first = 1;
	cli_emitf(&r->sec, f, "replay %s against %s", r->file,
	          json_string_value(json_object_get(doc, "against")));
	if (r->baseline_shown)
		cli_emitf(&r->sec, f, " (A/B with %s)", r->baseline_shown);
	cli_emitf(&r->sec, f, ", policy %s\n", json_string_value(json_object_get(doc, "policy")));
	for (size_t i = 0; i < json_array_size(calls); i++) {
		const json_t *c = json_array_get(calls, i);
		const char *s = json_string_value(json_object_get(c, "session"));
		if (first || !s || !last || strcmp(s, last) != 0)
			cli_emitf(&r->sec, f, "session %s\n", s ? s : "(stateless)");
		first = 0;
		last = s;
		write_call_text(r, f, c);
	}
	cli_emit(&r->sec, f, "tools:\n");
	const json_t *tools = json_object_get(doc, "tools");
	for (size_t i = 0; i < json_array_size(tools); i++) {
		const json_t *t = json_array_get(tools, i);
		cli_emitf(&r->sec, f, "  %s: %s (%lld calls)\n",
		          json_string_value(json_object_get(t, "tool")),
		          json_string_value(json_object_get(t, "verdict")),
		          (long long)json_integer_value(json_object_get(t, "calls")));
	}
	const json_t *notes = json_object_get(doc, "notes");
	for (size_t i = 0; i < json_array_size(notes); i++)
		cli_emitf(&r->sec, f, "note: %s\n", json_string_value(json_array_get(notes, i)));
	cli_emitf(&r->sec, f, "%lld calls: %lld passed, %lld regressed, %lld skipped\n",
	          (long long)json_integer_value(json_object_get(sum, "calls")),
	          (long long)json_integer_value(json_object_get(sum, "passed")),
	          (long long)json_integer_value(json_object_get(sum, "regressed")),
	          (long long)json_integer_value(json_object_get(sum, "skipped")));
}

/* The text rendering as a string (owned), for the report. */
static char *text_of(const struct rp *r, const json_t *doc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	write_text(r, f, doc);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Every --format through report.h (text and json are replay's own). */
static int write_outputs(struct rp *r, const json_t *doc)
{
	char *text = report_outs_has(&r->outs, REPORT_FMT_TEXT) ? text_of(r, doc) : NULL;
	struct report *rep = replay_report_build(doc, r->file, text, &r->sec);
	free(text);
	if (!rep) {
		fprintf(stderr, "mcpwarden replay: out of memory\n");
		return -1;
	}
	int rc = report_outs_write(&r->outs, rep, "mcpwarden replay");
	report_free(rep);
	return rc;
}

/* Could not run: the CI formats still get a report saying why (JUnit an
 * <error> case, SARIF executionSuccessful false); text and json stay on
 * stderr only, as before. */
static void write_error(struct rp *r)
{
	if (!report_outs_rich(&r->outs))
		return;
	struct report *rep = report_new("replay", version_get());
	if (!rep)
		return;
	report_set_secrets(rep, &r->sec);
	report_set_error(rep, r->why[0] ? r->why : "could not run (see the messages on stderr)");
	report_set_text(rep, "");
	report_set_json(rep, NULL);
	report_set_result(rep, CLI_EXIT_ERROR, "could not run");
	report_outs_write(&r->outs, rep, "mcpwarden replay");
	report_free(rep);
}

/* ---- main ------------------------------------------------------------------- */

static int replay_steps(struct rp *r)
{
	if (load_rules(r) < 0 || load_policy(r) < 0 || load_file(r) < 0)
		return CLI_EXIT_ERROR;
	r->notes = json_array();
	if (!r->notes || group(r) < 0)
		return CLI_EXIT_ERROR;
	if (list_tools(r, r->against, &r->against_shown) < 0)
		return CLI_EXIT_ERROR;
	if (r->baseline && list_tools(r, r->baseline, &r->baseline_shown) < 0)
		return CLI_EXIT_ERROR;
	for (size_t i = 0; i < r->ncalls; i++)
		decide(r, &r->calls[i]);
	if (run_all(r) < 0) {
		fprintf(stderr, "mcpwarden replay: out of memory or a bad URL\n");
		return CLI_EXIT_ERROR;
	}
	json_t *doc = replay_result(r);
	if (!doc) {
		fprintf(stderr, "mcpwarden replay: out of memory\n");
		return CLI_EXIT_ERROR;
	}
	int rc = (int)json_integer_value(json_object_get(doc, "exit"));
	if (write_outputs(r, doc) < 0)
		rc = CLI_EXIT_ERROR;
	json_decref(doc);
	return rc;
}

int replay_main(int argc, char **argv)
{
	struct rp r = {0};
	int p = parse_args(argc, argv, &r);
	int rc;
	if (p > 0) {
		fputs(replay_usage, stdout);
		rc = CLI_EXIT_PASS;
	} else if (p < 0) {
		rc = CLI_EXIT_ERROR;
	} else {
		rc = replay_steps(&r);
		if (rc == CLI_EXIT_ERROR)
			write_error(&r);
	}
	rp_free(&r);
	return rc;
}

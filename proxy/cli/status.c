/* status: see status.h.
 *
 * Three GETs in a row on one admin client: /readyz (200 ready, 503 not:
 * both carry the per-upstream probes), /contract (each upstream's latest
 * report and live summary), and /calls only when no upstream has a live
 * summary. The summary is built as JSON first (status_summary); the text
 * is printed from it, so --json and the text never disagree.
 */
#include "proxy/cli/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/cli/admin_client.h"
#include "proxy/cli/cli_out.h"
#include "proxy/cli/tail.h"

#define STATUS_TIMEOUT_S   10.0
#define STATUS_TOP_TOOLS   5
#define STATUS_MAX_FINDINGS 10  /* per upstream, in the summary */

static const char status_usage[] =
	"usage: mcpwarden status ADMIN_URL [--json] [--token TOKEN]\n"
	"\n"
	"A running mcpwarden at a glance, from its admin endpoint: whether it is\n"
	"ready (/readyz), each upstream's contract verdict and breaking changes\n"
	"(/contract), and the busiest tools. ADMIN_URL: http://127.0.0.1:9090 or\n"
	"https://... (verified against the system CAs; SSL_CERT_FILE names another).\n"
	"  --json          the summary as one JSON object\n"
	"  --token TOKEN   the admin token (default: $MCPWARDEN_ADMIN_TOKEN, which\n"
	"                  keeps it out of the process list); never printed\n"
	"Exit status: 0 ready and every contract passing (an upstream whose listing\n"
	"was not checked yet does not fail), 1 not ready or a contract failing,\n"
	"2 unreachable, token refused, or bad usage.\n";

/* ---- the summary ------------------------------------------------------------- */

static json_t *upstream_entry(json_t *ups, const char *name)
{
	size_t i;
	json_t *u;
	json_array_foreach(ups, i, u) {
		if (strcmp(json_string_value(json_object_get(u, "upstream")), name) == 0)
			return u;
	}
	u = json_pack("{s:s,s:n,s:s,s:i,s:i,s:[]}", "upstream", name, "reachable", "contract",
	              "unchecked", "problems", 0, "breaking", 0, "findings");
	if (json_array_append_new(ups, u) < 0)
		return NULL;
	return u;
}

static void add_finding(json_t *u, const json_t *f, const char *tool, int breaking)
{
	json_t *list = json_object_get(u, "findings");
	const char *code = json_string_value(json_object_get(f, "code"));
	if (!code || json_array_size(list) >= STATUS_MAX_FINDINGS)
		return;
	json_t *o = json_pack("{s:s}", "code", code);
	const char *t = tool ? tool : json_string_value(json_object_get(f, "tool"));
	const char *msg = json_string_value(json_object_get(f, "message"));
	if (o && t)
		json_object_set_new(o, "tool", json_string(t));
	if (o && msg)
		json_object_set_new(o, "message", json_string(msg));
	if (o && breaking)
		json_object_set_new(o, "breaking", json_true());
	json_array_append_new(list, o);
}

static void bump(json_t *u, const char *key, json_int_t by)
{
	json_int_t v = json_integer_value(json_object_get(u, key));
	json_object_set_new(u, key, json_integer(v + by));
}

/* The breaking ones of a "changes" array: listed, counted. Returns how
 * many. */
static json_int_t breaking_changes(json_t *u, const json_t *changes)
{
	size_t i;
	const json_t *c;
	json_int_t n = 0;
	json_array_foreach(changes, i, c) {
		const char *kind = json_string_value(json_object_get(c, "kind"));
		if (kind && strcmp(kind, "breaking") == 0) {
			add_finding(u, c, NULL, 1);
			n++;
		}
	}
	return n;
}

static void read_report(json_t *u, const json_t *report)
{
	size_t i, j;
	const json_t *t, *p;
	json_int_t problems = 0;

	json_object_set_new(u, "contract", json_string(json_is_false(json_object_get(report, "passed"))
	                                                   ? "failed" : "passed"));
	const char *mode = json_string_value(json_object_get(report, "mode"));
	if (mode)
		json_object_set_new(u, "mode", json_string(mode));
	if (json_is_number(json_object_get(report, "score")))
		json_object_set(u, "score", json_object_get(report, "score"));
	json_array_foreach(json_object_get(report, "problems"), i, p) {
		add_finding(u, p, NULL, 0);
		problems++;
	}
	json_array_foreach(json_object_get(report, "tools"), i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		json_array_foreach(json_object_get(t, "problems"), j, p) {
			add_finding(u, p, name, 0);
			problems++;
		}
	}
	bump(u, "problems", problems);
	json_int_t nb = breaking_changes(u, json_object_get(report, "changes"));
	json_int_t declared = json_integer_value(json_object_get(report, "breaking"));
	bump(u, "breaking", declared > nb ? declared : nb);
}

/* Members of an entry this version does not know (a baseline diff added
 * later, say): only what plainly says "failing" is taken from them. */
static void read_extras(json_t *u, json_t *entry)
{
	static const char *const known[] = {"upstream", "updated", "report", "live", NULL};
	const char *key;
	json_t *v;
	json_object_foreach(entry, key, v) {
		size_t k = 0;
		while (known[k] && strcmp(known[k], key) != 0)
			k++;
		if (known[k] || !json_is_object(v))
			continue;
		json_int_t nb = breaking_changes(u, json_object_get(v, "changes"));
		json_int_t declared = json_integer_value(json_object_get(v, "breaking"));
		if (declared > nb)
			nb = declared;
		bump(u, "breaking", nb);
		if (nb > 0 || json_is_false(json_object_get(v, "passed")))
			json_object_set_new(u, "contract", json_string("failed"));
	}
}

static int by_calls(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "calls"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "calls"));
	return x < y ? 1 : x > y ? -1 : 0;
}

static void add_count(json_t *list, const char *tool, const char *upstream, json_int_t n)
{
	size_t i;
	json_t *o;
	json_array_foreach(list, i, o) {
		if (strcmp(json_string_value(json_object_get(o, "tool")), tool) == 0 &&
		    strcmp(json_string_value(json_object_get(o, "upstream")), upstream) == 0) {
			bump(o, "calls", n);
			return;
		}
	}
	json_array_append_new(list, json_pack("{s:s,s:s,s:I}", "tool", tool, "upstream", upstream,
	                                      "calls", (json_int_t)n));
}

/* The top tools, from the live summaries when any upstream has one (every
 * call since start), else from /calls (the records still in the ring). */
static json_t *busiest(const json_t *contract, const json_t *calls, const char **from)
{
	json_t *list = json_array();
	size_t i;
	const json_t *e;
	int live = 0;
	*from = NULL;
	json_array_foreach(json_object_get(contract, "upstreams"), i, e) {
		json_t *l = json_object_get(e, "live");
		const char *up = json_string_value(json_object_get(e, "upstream"));
		const char *tool;
		json_t *t;
		if (!json_is_object(l) || !up)
			continue;
		live = 1;
		json_object_foreach(l, tool, t) {
			json_int_t n = json_integer_value(json_object_get(t, "calls"));
			if (n > 0)
				add_count(list, tool, up, n);
		}
	}
	if (live) {
		*from = "live";
	} else if (calls) {
		*from = "calls";
		json_array_foreach(json_object_get(calls, "calls"), i, e) {
			const char *tool = json_string_value(json_object_get(e, "tool"));
			const char *up = json_string_value(json_object_get(e, "upstream"));
			if (tool && up)
				add_count(list, tool, up, 1);
		}
	}
	size_t n = json_array_size(list);
	json_t **v = n ? calloc(n, sizeof(*v)) : NULL;
	json_t *top = json_array();
	for (size_t k = 0; v && k < n; k++)
		v[k] = json_array_get(list, k);
	if (v)
		qsort(v, n, sizeof(*v), by_calls);
	for (size_t k = 0; v && top && k < n && k < STATUS_TOP_TOOLS; k++)
		json_array_append(top, v[k]);
	free(v);
	json_decref(list);
	return top;
}

json_t *status_summary(const json_t *readyz, const json_t *contract, const json_t *calls)
{
	json_t *s = json_object(), *ups = json_array();
	size_t i;
	json_t *e;
	if (!s || !ups) {
		json_decref(s);
		json_decref(ups);
		return NULL;
	}
	int ready = json_is_true(json_object_get(readyz, "ready"));
	json_object_set_new(s, "ready", json_boolean(ready));
	json_object_set_new(s, "draining", json_boolean(json_is_true(json_object_get(readyz,
	                                                                             "draining"))));
	json_array_foreach(json_object_get(readyz, "upstreams"), i, e) {
		const char *name = json_string_value(json_object_get(e, "upstream"));
		json_t *u = name ? upstream_entry(ups, name) : NULL;
		if (!u)
			continue;
		json_object_set_new(u, "reachable", json_boolean(json_is_true(json_object_get(e,
		                                                                  "reachable"))));
		const char *why = json_string_value(json_object_get(e, "error"));
		if (why)
			json_object_set_new(u, "error", json_string(why));
	}
	int failing = 0;
	json_array_foreach(json_object_get(contract, "upstreams"), i, e) {
		const char *name = json_string_value(json_object_get(e, "upstream"));
		json_t *u = name ? upstream_entry(ups, name) : NULL;
		if (!u)
			continue;
		const json_t *report = json_object_get(e, "report");
		if (json_is_object(report))
			read_report(u, report);
		read_extras(u, e);
		const char *when = json_string_value(json_object_get(e, "updated"));
		if (when)
			json_object_set_new(u, "updated", json_string(when));
		failing |= strcmp(json_string_value(json_object_get(u, "contract")), "failed") == 0;
	}
	json_object_set_new(s, "upstreams", ups);
	const char *from;
	json_object_set_new(s, "busiest", busiest(contract, calls, &from));
	json_object_set_new(s, "busiest_from", from ? json_string(from) : json_null());
	json_object_set_new(s, "exit",
	                    json_integer(ready && !failing ? CLI_EXIT_PASS : CLI_EXIT_FAIL));
	return s;
}

/* ---- printing ------------------------------------------------------------------ */

/* The endpoint's words (tool names, messages) made safe for a terminal. */
static const char *safe(const json_t *v, size_t max, char *buf, size_t cap)
{
	tail_printable(json_string_value(v), max, buf, cap);
	return buf;
}

static void print_upstream(const struct cli_secrets *sec, const json_t *u)
{
	char name[128], why[256], mode[64];
	const char *verdict = json_string_value(json_object_get(u, "contract"));
	const json_t *reach = json_object_get(u, "reachable");
	cli_emitf(sec, stdout, "  %s: %s", safe(json_object_get(u, "upstream"), 60, name, sizeof(name)),
	          json_is_true(reach) ? "reachable" : json_is_false(reach) ? "UNREACHABLE" : "not probed");
	if (json_object_get(u, "error"))
		cli_emitf(sec, stdout, " (%s)", safe(json_object_get(u, "error"), 120, why, sizeof(why)));
	if (strcmp(verdict, "unchecked") == 0) {
		cli_emit(sec, stdout, "; contract not checked yet\n");
	} else {
		json_int_t np = json_integer_value(json_object_get(u, "problems"));
		json_int_t nb = json_integer_value(json_object_get(u, "breaking"));
		cli_emitf(sec, stdout, "; contract %s (", strcmp(verdict, "failed") == 0 ? "FAILED" : "passed");
		if (json_object_get(u, "mode"))
			cli_emitf(sec, stdout, "mode %s, ", safe(json_object_get(u, "mode"), 20, mode, sizeof(mode)));
		if (json_is_number(json_object_get(u, "score")))
			cli_emitf(sec, stdout, "score %.2f, ", json_number_value(json_object_get(u, "score")));
		cli_emitf(sec, stdout, "%lld problem%s, %lld breaking change%s)\n", (long long)np,
		          np == 1 ? "" : "s", (long long)nb, nb == 1 ? "" : "s");
	}
	size_t i;
	const json_t *f;
	json_array_foreach(json_object_get(u, "findings"), i, f) {
		char code[96], tool[128], msg[256];
		cli_emitf(sec, stdout, "      %s%s", json_is_true(json_object_get(f, "breaking")) ? "breaking: " : "",
		          safe(json_object_get(f, "code"), 60, code, sizeof(code)));
		if (json_object_get(f, "tool"))
			cli_emitf(sec, stdout, " (tool \"%s\")", safe(json_object_get(f, "tool"), 60, tool, sizeof(tool)));
		if (json_object_get(f, "message"))
			cli_emitf(sec, stdout, ": %s", safe(json_object_get(f, "message"), 160, msg, sizeof(msg)));
		cli_emit(sec, stdout, "\n");
	}
}

static void print_text(const struct cli_secrets *sec, const char *url, const json_t *s)
{
	size_t i;
	const json_t *u;
	int ready = json_is_true(json_object_get(s, "ready"));
	cli_emitf(sec, stdout, "mcpwarden at %s: %s%s\n", url, ready ? "ready" : "NOT READY",
	          json_is_true(json_object_get(s, "draining")) ? " (draining)" : "");
	if (json_array_size(json_object_get(s, "upstreams")))
		cli_emit(sec, stdout, "upstreams:\n");
	json_array_foreach(json_object_get(s, "upstreams"), i, u)
		print_upstream(sec, u);
	const json_t *top = json_object_get(s, "busiest");
	const char *from = json_string_value(json_object_get(s, "busiest_from"));
	if (!from)
		return;
	if (!json_array_size(top)) {
		cli_emit(sec, stdout, "busiest tools: no tool calls yet\n");
		return;
	}
	cli_emitf(sec, stdout, "busiest tools (%s):\n",
	          strcmp(from, "live") == 0 ? "calls since start" : "recent records");
	json_array_foreach(top, i, u) {
		char tool[128], up[128];
		cli_emitf(sec, stdout, "  %8lld  %s (%s)\n",
		          (long long)json_integer_value(json_object_get(u, "calls")),
		          safe(json_object_get(u, "tool"), 60, tool, sizeof(tool)),
		          safe(json_object_get(u, "upstream"), 60, up, sizeof(up)));
	}
}

/* ---- running it --------------------------------------------------------------- */

struct status_opts {
	const char *url, *token;
	int json;
};

static int parse_status_args(int argc, char **argv, struct status_opts *o, char *err, size_t cap)
{
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return 1;
		if (strcmp(a, "--json") == 0) {
			o->json = 1;
		} else if (strcmp(a, "--token") == 0) {
			if (i + 1 >= argc) {
				snprintf(err, cap, "--token needs a value");
				return -1;
			}
			o->token = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			snprintf(err, cap, "unknown option %.60s (mcpwarden status --help)", a);
			return -1;
		} else if (!o->url) {
			o->url = a;
		} else {
			snprintf(err, cap, "one ADMIN_URL only (mcpwarden status --help)");
			return -1;
		}
	}
	if (!o->url) {
		snprintf(err, cap, "ADMIN_URL missing (mcpwarden status --help)");
		return -1;
	}
	if (!o->token) {
		const char *env = getenv("MCPWARDEN_ADMIN_TOKEN");
		o->token = env && *env ? env : NULL;
	}
	return 0;
}

/* GET path as JSON. Returns the document (owned), NULL with *missing set
 * when the endpoint does not serve it (404), or NULL with err set. ok2,
 * when nonzero, is a second status whose body is the answer too (503 of
 * /readyz). */
static json_t *get_json(struct admin_client *ac, const char *path, int ok2, int *missing,
                        char *err, size_t cap)
{
	struct admin_reply r;
	json_t *j = NULL;
	*missing = 0;
	if (admin_client_get(ac, path, &r, err, cap) < 0) {
		admin_reply_fini(&r);
		return NULL;
	}
	if (r.status == 200 || (ok2 && r.status == ok2)) {
		j = json_loadb(r.body, r.len, 0, NULL);
		if (!json_is_object(j)) {
			json_decref(j);
			j = NULL;
			snprintf(err, cap, "%s%s: the reply is not a JSON object (not an admin endpoint?)",
			         admin_client_url(ac), path);
		}
	} else if (r.status == 404 && !ok2) {
		*missing = 1;
	} else {
		admin_client_status_error(ac, &r, err, cap);
	}
	admin_reply_fini(&r);
	return j;
}

static int fail_out(const struct cli_secrets *sec, int json, const char *err)
{
	if (json) {
		json_t *j = json_pack("{s:s,s:i}", "error", err, "exit", CLI_EXIT_ERROR);
		cli_emit_json(sec, stdout, j);
		json_decref(j);
	}
	cli_emitf(sec, stderr, "mcpwarden status: %s\n", err);
	return CLI_EXIT_ERROR;
}

int status_main(int argc, char **argv)
{
	struct status_opts o;
	struct cli_secrets sec = {0};
	char err[512];
	int missing = 0, rc;

	int prc = parse_status_args(argc, argv, &o, err, sizeof(err));
	if (prc == 1) {
		fputs(status_usage, stdout);
		return CLI_EXIT_PASS;
	}
	if (prc < 0) {
		fprintf(stderr, "mcpwarden status: %s\n", err);
		return CLI_EXIT_ERROR;
	}
	if (o.token)
		cli_secrets_add(&sec, o.token, strlen(o.token));
	struct admin_client_target t = {.url = o.url, .token = o.token, .timeout_s = STATUS_TIMEOUT_S};
	struct admin_client *ac = admin_client_new(&t, err, sizeof(err));
	json_t *ready = NULL, *contract = NULL, *calls = NULL, *s = NULL;
	if (!ac) {
		rc = fail_out(&sec, o.json, err);
		goto out;
	}
	ready = get_json(ac, "/readyz", 503, &missing, err, sizeof(err));
	if (!ready) {
		rc = fail_out(&sec, o.json, err);
		goto out;
	}
	contract = get_json(ac, "/contract", 0, &missing, err, sizeof(err));
	if (!contract && !missing) {
		rc = fail_out(&sec, o.json, err);
		goto out;
	}
	int any_live = 0;
	size_t i;
	const json_t *e;
	json_array_foreach(json_object_get(contract, "upstreams"), i, e)
		any_live |= json_is_object(json_object_get(e, "live"));
	if (!any_live)
		calls = get_json(ac, "/calls", 0, &missing, err, sizeof(err)); /* best effort */
	s = status_summary(ready, contract, calls);
	if (!s) {
		rc = fail_out(&sec, o.json, "out of memory");
		goto out;
	}
	json_object_set_new(s, "url", json_string(admin_client_url(ac)));
	if (o.json)
		cli_emit_json(&sec, stdout, s);
	else
		print_text(&sec, admin_client_url(ac), s);
	rc = (int)json_integer_value(json_object_get(s, "exit"));
out:
	fflush(stdout);
	json_decref(ready);
	json_decref(contract);
	json_decref(calls);
	json_decref(s);
	admin_client_free(ac);
	cli_secrets_free(&sec);
	return rc;
}

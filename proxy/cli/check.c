/* check: see check.h.
 *
 * The options, the report and --tools-file live here; a URL goes to
 * check_client.h, which lists the pages, and comes back to the same
 * report. Every byte printed goes through cli_emit(), which masks the
 * values of --header (and ${ENV} expansions) as ••••.
 */
#include "proxy/cli/check.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "checks/contract.h"
#include "checks/drift.h"
#include "checks/profile.h" /* client profiles (issue 21) */
#include "proxy/base/envx.h"
#include "proxy/base/log.h"
#include "proxy/cli/check_client.h"
#include "proxy/cli/cli_out.h"
#include "proxy/base/version.h"
#include "proxy/cli/report.h"

#define CHECK_MAX_HEADERS    32 /* two secrets each at most: CLI_MAX_SECRETS */
#define CHECK_TIMEOUT_S      30.0

_Static_assert(CHECK_MAX_HEADERS * 2 <= CLI_MAX_SECRETS, "every --header can be masked");

/* ---- options --------------------------------------------------------------- */

struct check_opts {
	const char *url, *tools_file, *transport, *protocol, *baseline, *save_baseline;
	struct check_header headers[CHECK_MAX_HEADERS];
	size_t nheaders;
	double timeout_s;
	int json, lenient, spec_only;
	unsigned profiles; /* client profiles (issue 21): PROFILE_* bits */
	struct cli_secrets sec;
	struct report_outs outs; /* --format; --json adds json on stdout */
	struct report *rep;      /* owned: what every format is written from */
};

static const char check_usage[] =
	"usage: mcpwarden check URL [--transport auto|streamable_http|sse]\n"
	"                           [--header 'Name: value']... [--protocol VERSION]\n"
	"                           [--json] [--lenient] [--spec-only] [--baseline FILE]\n"
	"                           [--save-baseline FILE] [--timeout S]\n"
	"       mcpwarden check --tools-file FILE [--protocol VERSION] [--json] [--lenient]\n"
	"                           [--spec-only] [--baseline FILE] [--save-baseline FILE]\n"
	"       both also [--format text|json|junit|sarif|github|markdown[=FILE]]...\n"
	"       --profile NAME[,NAME]  add the rules of named clients (" PROFILE_NAMES ")\n"
	"\n"
	"Lists the server's tools (every page) and checks their contract; with\n"
	"--baseline also the breaking changes against a saved listing.\n"
	"Header values may name environment variables as ${NAME}: filled in on the\n"
	"wire only, always printed as " CLI_MASK ".\n"
	"Exit status: 0 passed, 1 problems or breaking changes (--lenient: breaking\n"
	"changes only), 2 could not connect or bad usage.\n";

static void opts_free(struct check_opts *o)
{
	for (size_t i = 0; i < o->nheaders; i++) {
		free(o->headers[i].name);
		free(o->headers[i].wire);
	}
	cli_secrets_free(&o->sec);
	report_free(o->rep);
}

/* One --header: parsed, expanded and masked by the parser replay uses too
 * (check_client_header_parse), so both commands take the same headers. */
static int add_header(struct check_opts *o, const char *arg)
{
	if (o->nheaders >= CHECK_MAX_HEADERS) {
		fprintf(stderr, "mcpwarden check: at most %d --header options\n", CHECK_MAX_HEADERS);
		return -1;
	}
	if (check_client_header_parse("check", arg, &o->headers[o->nheaders], &o->sec) < 0)
		return -1;
	o->nheaders++;
	return 0;
}

/* Parses check's argv. Returns 0, 1 for --help, -1 on misuse (reported). */
static int parse_check_args(int argc, char **argv, struct check_opts *o)
{
	o->transport = "auto";
	o->timeout_s = CHECK_TIMEOUT_S;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = NULL;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return 1;
		if (strcmp(a, "--json") == 0) {
			o->json = 1;
			continue;
		}
		if (strcmp(a, "--lenient") == 0) {
			o->lenient = 1;
			continue;
		}
		if (strcmp(a, "--spec-only") == 0) {
			o->spec_only = 1;
			continue;
		}
		/* client profiles (issue 21): --profile NAME[,NAME], repeatable */
		if (strcmp(a, "--profile") == 0) {
			const char *bad;
			size_t badlen;
			if (i + 1 >= argc) {
				fprintf(stderr, "mcpwarden check: --profile needs a value (%s)\n",
				        PROFILE_NAMES);
				return -1;
			}
			if (profile_parse(argv[++i], &o->profiles, &bad, &badlen) < 0) {
				fprintf(stderr, "mcpwarden check: unknown profile \"%.*s\" (known: %s)\n",
				        (int)(badlen > 64 ? 64 : badlen), bad, PROFILE_NAMES);
				return -1;
			}
			continue;
		}
		if (strcmp(a, "--transport") == 0)
			dst = &o->transport;
		else if (strcmp(a, "--protocol") == 0)
			dst = &o->protocol;
		else if (strcmp(a, "--baseline") == 0)
			dst = &o->baseline;
		else if (strcmp(a, "--save-baseline") == 0)
			dst = &o->save_baseline;
		else if (strcmp(a, "--tools-file") == 0)
			dst = &o->tools_file;
		if (dst || strcmp(a, "--header") == 0 || strcmp(a, "--timeout") == 0 ||
		    strcmp(a, "--format") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "mcpwarden check: %s needs a value\n", a);
				return -1;
			}
			const char *v = argv[++i];
			if (dst) {
				*dst = v;
			} else if (strcmp(a, "--header") == 0) {
				if (add_header(o, v) < 0)
					return -1;
			} else if (strcmp(a, "--format") == 0) {
				const char *why;
				if (report_outs_add(&o->outs, v, &why) < 0) {
					fprintf(stderr, "mcpwarden check: %s\n", why);
					return -1;
				}
			} else {
				char *end;
				errno = 0;
				double t = strtod(v, &end);
				if (errno || *end || !(t > 0) || t > 86400) {
					fprintf(stderr, "mcpwarden check: --timeout wants seconds (0 < S <= "
					                "86400), not \"%s\"\n", v);
					return -1;
				}
				o->timeout_s = t;
			}
			continue;
		}
		if (a[0] == '-') {
			fprintf(stderr, "mcpwarden check: unknown option %s\n%s", a, check_usage);
			return -1;
		}
		if (o->url) {
			fprintf(stderr, "mcpwarden check: one URL only (got \"%s\" too)\n", a);
			return -1;
		}
		o->url = a;
	}
	const char *why;
	if (o->json && report_outs_add(&o->outs, "json", &why) < 0) {
		fprintf(stderr, "mcpwarden check: --json: %s\n", why);
		return -1;
	}
	o->json = report_outs_has(&o->outs, REPORT_FMT_JSON);
	if (!!o->url == !!o->tools_file) {
		fprintf(stderr, "mcpwarden check: give a URL or --tools-file FILE\n%s", check_usage);
		return -1;
	}
	if (strcmp(o->transport, "auto") != 0 && strcmp(o->transport, "streamable_http") != 0 &&
	    strcmp(o->transport, "sse") != 0) {
		fprintf(stderr, "mcpwarden check: --transport must be auto, streamable_http or sse\n");
		return -1;
	}
	if (o->tools_file && (o->nheaders || strcmp(o->transport, "auto") != 0)) {
		fprintf(stderr, "mcpwarden check: --header and --transport need a URL, not "
		                "--tools-file\n");
		return -1;
	}
	if (o->protocol && !*o->protocol) {
		fprintf(stderr, "mcpwarden check: --protocol wants a version like 2025-11-25\n");
		return -1;
	}
	return 0;
}

/* ---- listings and the report ------------------------------------------------ */

/* The page inside a saved listing: a JSON-RPC response gives its result, a
 * {"tools":[...]} object or a bare array is the page itself. Borrowed from
 * doc; NULL when doc holds no tool list. */
static json_t *page_of_doc(json_t *doc)
{
	if (json_is_array(doc))
		return doc;
	if (!json_is_object(doc))
		return NULL;
	json_t *result = json_object_get(doc, "result");
	if (json_is_object(result) && json_is_array(json_object_get(result, "tools")))
		return result;
	return json_is_array(json_object_get(doc, "tools")) ? doc : NULL;
}
/* Where a listing came from, for the report's head. */
struct origin_info {
	const char *url;        /* printable (no user, password, query), or NULL */
	const char *file;
	const char *transport;  /* "streamable_http", "sse", or NULL */
	const char *protocol;   /* era, or NULL */
	json_t *notes;          /* borrowed array of strings, or NULL */
	const json_t *doc;      /* borrowed: file's document, or NULL */
};

static json_t *joined_tools(const json_t *pages)
{
	json_t *all = json_array();
	for (size_t i = 0; all && i < json_array_size(pages); i++) {
		json_t *p = json_array_get(pages, i);
		json_t *t = json_is_array(p) ? p : json_object_get(p, "tools");
		if (json_is_array(t))
			json_array_extend(all, t);
	}
	return all;
}

/* ---- the CI formats (report.h) --------------------------------------------- */

/* One case per examined tool (pages in order), failing when it has a
 * problem (not with --lenient) or broke against the baseline; one failing
 * case per tool the baseline had and the listing lacks. */
static int add_cases(struct check_opts *o, const struct contract_report *r, const json_t *changes,
                     const json_t *pages, const char *suite)
{
	size_t seen = 0, ntools = contract_report_ntools(r);
	for (size_t p = 0; p < json_array_size(pages) && p < CONTRACT_MAX_PAGES; p++) {
		const json_t *pg = json_array_get(pages, p);
		const json_t *tools = json_is_array(pg) ? pg : json_object_get(pg, "tools");
		for (size_t i = 0; i < json_array_size(tools) && seen < ntools; i++, seen++) {
			const char *name = json_string_value(json_object_get(json_array_get(tools, i), "name"));
			char label[32];
			snprintf(label, sizeof label, "(tool %zu)", seen);
			int failed = !o->lenient && contract_report_tool_failed(r, p, i);
			for (size_t k = 0; name && !failed && k < json_array_size(changes); k++) {
				const json_t *c = json_array_get(changes, k);
				const char *ct = json_string_value(json_object_get(c, "tool"));
				failed = strcmp(json_string_value(json_object_get(c, "kind")), "breaking") == 0 &&
				         ct && strcmp(ct, name) == 0;
			}
			if (report_add_case(o->rep, suite, name ? name : label,
			                    failed ? REPORT_FAIL : REPORT_PASS, -1, NULL) < 0)
				return -1;
		}
	}
	for (size_t k = 0; k < json_array_size(changes); k++) {
		const json_t *c = json_array_get(changes, k);
		if (strcmp(json_string_value(json_object_get(c, "code")), "tool-removed") == 0 &&
		    report_add_case(o->rep, suite, json_string_value(json_object_get(c, "tool")),
		                    REPORT_FAIL, -1, "removed since the baseline") < 0)
			return -1;
	}
	return 0;
}

/* The cases and findings of a check for the CI formats. Contract findings
 * point into the tools file (a live listing has none to point at);
 * baseline changes into the tools file or, for what the listing lacks and
 * for every change of a live listing, into the baseline file (the same
 * tool there). */
static int add_findings(struct check_opts *o, const struct contract_report *r,
                        const json_t *changes, const json_t *pages, const json_t *baseline,
                        const struct origin_info *oi)
{
	struct cli_listing_text nt = {0}, bt = {0};
	const char *suite = oi->url ? oi->url : oi->file;
	int rc = add_cases(o, r, changes, pages, suite);
	if (oi->doc)
		cli_listing_text_load(&nt, oi->file, oi->doc);
	if (baseline)
		cli_listing_text_load(&bt, o->baseline, baseline);
	for (size_t i = 0; rc == 0 && i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		struct report_finding rf = {
			.code = f->code, .message = f->message, .tool = f->tool, .pointer = f->pointer,
			.level = f->problem && !o->lenient ? REPORT_LEVEL_ERROR : REPORT_LEVEL_WARNING,
		};
		if (oi->doc)
			cli_listing_locate(&nt, f->pointer, NULL, &rf);
		rc = report_add_finding(o->rep, &rf);
	}
	for (size_t i = 0; rc == 0 && i < json_array_size(changes); i++) {
		const json_t *c = json_array_get(changes, i);
		struct report_finding rf = {
			.code = json_string_value(json_object_get(c, "code")),
			.message = json_string_value(json_object_get(c, "message")),
			.tool = json_string_value(json_object_get(c, "tool")),
			.pointer = json_string_value(json_object_get(c, "pointer")),
		};
		rf.breaking = strcmp(json_string_value(json_object_get(c, "kind")), "breaking") == 0;
		rf.level = rf.breaking ? REPORT_LEVEL_ERROR : REPORT_LEVEL_NOTE;
		if (cli_change_in_old(rf.code, rf.message))
			cli_listing_locate(&bt, rf.pointer, NULL, &rf);
		else if (oi->doc)
			cli_listing_locate(&nt, rf.pointer, NULL, &rf);
		else
			cli_listing_locate(&bt, rf.pointer, rf.tool, &rf);
		rc = report_add_finding(o->rep, &rf);
	}
	cli_listing_text_fini(&nt);
	cli_listing_text_fini(&bt);
	return rc;
}

/* Checks the pages, diffs against the baseline, prints, saves. Returns the
 * exit code. */
static int report_listing(struct check_opts *o, const json_t *pages, const struct origin_info *oi)
{
	size_t n = json_array_size(pages);
	const json_t *arr[CONTRACT_MAX_PAGES];
	struct contract_opts copts = {.era = oi->protocol, .spec_only = o->spec_only,
	                              .profiles = o->profiles /* client profiles */};
	json_t *baseline = NULL, *all = NULL, *changes = NULL, *out = NULL;
	struct drift_report *d = NULL;
	struct contract_report *r = NULL;
	int rc = CLI_EXIT_ERROR;

	if (n > CONTRACT_MAX_PAGES)
		n = CONTRACT_MAX_PAGES;
	for (size_t i = 0; i < n; i++)
		arr[i] = json_array_get(pages, i);
	if (o->baseline && !(baseline = cli_load_listing(o->baseline, "--baseline"))) {
		/* Said on stderr only, as ever: nothing on stdout, a reason in the
		 * CI files. */
		report_set_error(o->rep, "cannot read --baseline");
		report_set_text(o->rep, "");
		report_set_json(o->rep, NULL);
		report_outs_write(&o->outs, o->rep, "mcpwarden check");
		goto done;
	}
	r = contract_check(arr, n, &copts);
	all = joined_tools(pages);
	if (!r || !all)
		goto oom;
	int truncated = contract_report_truncated(r);
	size_t nbreaking = 0;
	changes = json_array();
	if (!changes)
		goto oom;
	if (baseline) {
		d = drift_diff(drift_tools_of(baseline), all);
		if (!d)
			goto oom;
		for (size_t i = 0; i < drift_report_nchanges(d); i++) {
			const struct drift_change *c = drift_report_change(d, i);
			/* A cut listing lacks tools that may well exist. */
			if (truncated && strcmp(c->code, "tool-removed") == 0)
				continue;
			nbreaking += c->breaking;
			json_array_append_new(changes, json_pack("{s:s,s:s,s:s?,s:s,s:s}", "code", c->code,
			                                         "kind", c->kind, "tool", c->tool,
			                                         "pointer", c->pointer, "message",
			                                         c->message));
		}
	}
	int cpassed = contract_report_passed(r);
	int passed = cpassed && nbreaking == 0 && !truncated;
	rc = passed ? CLI_EXIT_PASS : (o->lenient && nbreaking == 0) ? CLI_EXIT_PASS : CLI_EXIT_FAIL;

	size_t np = contract_report_nproblems(r);
	char summary[160];
	snprintf(summary, sizeof summary, "%s: %zu problem%s, %zu breaking change%s%s",
	         passed ? "PASSED" : rc == CLI_EXIT_PASS ? "PASSED (lenient)" : "FAILED", np,
	         np == 1 ? "" : "s", nbreaking, nbreaking == 1 ? "" : "s",
	         truncated ? ", listing cut (not every tool was checked)" : "");
	if (o->json) {
		out = contract_report_json(r);
		if (!out)
			goto oom;
		json_object_set(out, "changes", changes);
		json_object_set_new(out, "breaking", json_integer((json_int_t)nbreaking));
		json_object_set_new(out, "passed", json_boolean(passed));
		json_t *src = json_object();
		if (oi->url)
			json_object_set_new(src, "url", json_string(oi->url));
		if (oi->file)
			json_object_set_new(src, "file", json_string(oi->file));
		json_object_set_new(src, "transport",
		                    oi->transport ? json_string(oi->transport) : json_null());
		json_object_set_new(src, "protocol", oi->protocol ? json_string(oi->protocol) : json_null());
		json_object_set_new(src, "pages", json_integer((json_int_t)json_array_size(pages)));
		if (oi->notes)
			json_object_set(src, "notes", oi->notes);
		if (o->nheaders) {
			json_t *h = json_object();
			for (size_t i = 0; i < o->nheaders; i++)
				json_object_set_new(h, o->headers[i].name, json_string(CLI_MASK));
			json_object_set_new(src, "headers", h);
		}
		json_object_set_new(out, "source", src);
		json_object_set_new(out, "baseline", o->baseline ? json_string(o->baseline) : json_null());
		json_object_set_new(out, "lenient", json_boolean(o->lenient));
		json_object_set_new(out, "exit", json_integer(rc));
		report_set_json(o->rep, out);
	}
	if (report_outs_has(&o->outs, REPORT_FMT_TEXT)) {
		char *tbuf = NULL;
		size_t tlen = 0;
		FILE *tf = open_memstream(&tbuf, &tlen);
		if (!tf)
			goto oom;
		if (oi->url)
			cli_emitf(&o->sec, tf, "mcpwarden check %s\n  transport %s, protocol %s, %zu page%s\n",
			      oi->url, oi->transport ? oi->transport : "?",
			      oi->protocol ? oi->protocol : "?", json_array_size(pages),
			      json_array_size(pages) == 1 ? "" : "s");
		else
			cli_emitf(&o->sec, tf, "mcpwarden check --tools-file %s\n  protocol %s\n", oi->file,
			      oi->protocol ? oi->protocol : "(none: era-independent checks only)");
		if (o->nheaders) {
			cli_emit(&o->sec, tf, "  headers:");
			for (size_t i = 0; i < o->nheaders; i++)
				cli_emitf(&o->sec, tf, "%s %s: " CLI_MASK, i ? "," : "", o->headers[i].name);
			cli_emit(&o->sec, tf, "\n");
		}
		for (size_t i = 0; oi->notes && i < json_array_size(oi->notes); i++)
			cli_emitf(&o->sec, tf, "  note: %s\n", json_string_value(json_array_get(oi->notes, i)));
		char *text = contract_report_text(r);
		if (!text) {
			fclose(tf);
			free(tbuf);
			goto oom;
		}
		cli_emit(&o->sec, tf, text);
		free(text);
		if (d) {
			cli_emitf(&o->sec, tf, "baseline %s: %zu change%s, %zu breaking\n", o->baseline,
			      json_array_size(changes), json_array_size(changes) == 1 ? "" : "s", nbreaking);
			for (size_t i = 0; i < json_array_size(changes); i++) {
				const json_t *c = json_array_get(changes, i);
				cli_emitf(&o->sec, tf, "  %-8s %s tool \"%s\" at %s: %s\n",
				      json_string_value(json_object_get(c, "kind")),
				      json_string_value(json_object_get(c, "code")),
				      json_string_value(json_object_get(c, "tool")),
				      json_string_value(json_object_get(c, "pointer")),
				      json_string_value(json_object_get(c, "message")));
			}
			if (truncated)
				cli_emit(&o->sec, tf, "  (the listing is cut: removed tools are not judged)\n");
		}
		cli_emitf(&o->sec, tf, "%s\n", summary);
		int bad = fclose(tf) != 0;
		if (!bad)
			bad = report_set_text(o->rep, tbuf) < 0;
		free(tbuf);
		if (bad)
			goto oom;
	}
	if (report_outs_rich(&o->outs) && add_findings(o, r, changes, pages, baseline, oi) < 0)
		goto oom;
	report_set_result(o->rep, rc, summary);
	if (report_outs_write(&o->outs, o->rep, "mcpwarden check") < 0)
		rc = CLI_EXIT_ERROR;
	if (o->save_baseline) {
		if (truncated) {
			cli_emitf(&o->sec, stderr, "mcpwarden check: baseline NOT saved to %s: the listing is "
			                       "cut, a baseline must hold every tool\n", o->save_baseline);
			rc = CLI_EXIT_ERROR;
		} else {
			json_t *doc = json_pack("{s:O}", "tools", all);
			if (!doc || json_dump_file(doc, o->save_baseline,
			                           JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
				cli_emitf(&o->sec, stderr, "mcpwarden check: cannot write %s: %s\n",
				      o->save_baseline, strerror(errno));
				rc = CLI_EXIT_ERROR;
			} else {
				cli_emitf(&o->sec, stderr, "mcpwarden check: baseline saved to %s (%zu tools)\n",
				      o->save_baseline, json_array_size(all));
			}
			json_decref(doc);
		}
	}
	goto done;
oom:
	fprintf(stderr, "mcpwarden check: out of memory\n");
	rc = CLI_EXIT_ERROR;
done:
	json_decref(out);
	json_decref(changes);
	json_decref(all);
	json_decref(baseline);
	drift_report_free(d);
	contract_report_free(r);
	return rc;
}

/* A failure: text on stderr (when say), with --json also an object on
 * stdout, and the reason in every other format. */
static void report_error(struct check_opts *o, const char *msg, const struct origin_info *oi,
                         int say)
{
	if (say)
		cli_emitf(&o->sec, stderr, "mcpwarden check: %s\n", msg);
	report_set_error(o->rep, msg);
	report_set_text(o->rep, "");
	report_set_json(o->rep, NULL);
	if (o->json) {
		json_t *j = json_pack("{s:s,s:b,s:i}", "error", msg, "passed", 0, "exit", CLI_EXIT_ERROR);
		if (j && oi && oi->url)
			json_object_set_new(j, "url", json_string(oi->url));
		if (j && oi && oi->notes)
			json_object_set(j, "notes", oi->notes);
		if (j)
			report_set_json(o->rep, j);
		json_decref(j);
	}
	report_outs_write(&o->outs, o->rep, "mcpwarden check");
}

static int check_file(struct check_opts *o)
{
	struct origin_info oi = {.file = o->tools_file, .protocol = o->protocol};
	json_t *doc = cli_load_listing(o->tools_file, "--tools-file");
	if (!doc) {
		report_error(o, "cannot read --tools-file", &oi, o->json);
		return CLI_EXIT_ERROR;
	}
	oi.doc = doc;
	json_t *pages = json_array();
	json_array_append(pages, page_of_doc(doc));
	int rc = report_listing(o, pages, &oi);
	json_decref(pages);
	json_decref(doc);
	return rc;
}

static int check_url(struct check_opts *o)
{
	struct check_client_target t = {
		.url = o->url,
		.transport = o->transport,
		.protocol = o->protocol,
		.headers = o->headers,
		.nheaders = o->nheaders,
		.timeout_s = o->timeout_s,
		.sec = &o->sec,
	};
	struct check_client_result r;
	int st = check_client_run(&t, &r);
	struct origin_info oi = {.url = r.url_shown, .notes = r.notes};
	int rc = CLI_EXIT_ERROR;

	if (st == 1) {
		report_error(o, "out of memory", &oi, 1);
	} else if (st == 0) {
		oi.transport = r.transport;
		oi.protocol = r.era;
		if (r.error)
			report_error(o, r.error, &oi, 1);
		else
			rc = report_listing(o, r.pages, &oi);
	}
	check_client_result_fini(&r);
	return rc;
}

int check_main(int argc, char **argv)
{
	struct check_opts o = {0};
	int rc = parse_check_args(argc, argv, &o);

	if (rc != 0) {
		if (rc > 0)
			fputs(check_usage, stdout);
		opts_free(&o);
		return rc > 0 ? CLI_EXIT_PASS : CLI_EXIT_ERROR;
	}
	o.rep = report_new("check", version_get());
	if (!o.rep) {
		fprintf(stderr, "mcpwarden check: out of memory\n");
		opts_free(&o);
		return CLI_EXIT_ERROR;
	}
	report_set_secrets(o.rep, &o.sec);
	log_setup(LOG_WARN, 0);
	signal(SIGPIPE, SIG_IGN);
	rc = o.tools_file ? check_file(&o) : check_url(&o);
	fflush(stdout);
	opts_free(&o);
	return rc;
}

/* contract_time: how long the live contract check takes on a large
 * tools/list reply (issue 10: "checking a 1,000-tool list adds under 2 ms
 * to that reply").
 *
 * Builds a tools/list result of N tools (default 1000) shaped like real
 * servers' (a description, an inputSchema with three described properties,
 * one of them required, annotations), then times, on one core, the median
 * of many runs of:
 *   parse        jparse() of the reply text (done for every reply anyway:
 *                the recorder and the policy read it too)
 *   check first  the contract hook on a list it has not seen (report,
 *                filter and fail modes; one tool's description differs
 *                from run to run, so the kept verdict never applies, and
 *                the other 999 tools are the same text as last time)
 *   check again  the same bytes again (the verdict kept from the last
 *                check is replayed)
 *   check fresh  every tool's text differs from the last list (the first
 *                list after a start or a deploy that touched everything)
 * The reply as the client gets it is the same in every case.
 *
 *   make bench-build
 *   build/bench/contract_time [N] [RUNS] [first|again|fresh]   (the last: only that
 *                                                    case, e.g. under callgrind)
 *
 * A benchmark, not a test: it prints figures and checks nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "proxy/config.h"
#include "proxy/ctx.h"
#include "proxy/hooks/hook_contract.h"
#include "proxy/hooks/inspect.h"
#include "proxy/base/jparse.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/log.h"
#include "proxy/base/clock.h"

static double now_ms(void)
{
	return (double)clock_mono_us() / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* The reply text: {"jsonrpc":"2.0","id":1,"result":{"tools":[...]}}. */
static char *tools_reply(size_t ntools)
{
	json_t *tools = json_array();
	for (size_t i = 0; i < ntools; i++) {
		char name[64], desc[160];
		snprintf(name, sizeof(name), "get_record_%zu", i);
		snprintf(desc, sizeof(desc),
		         "Returns record %zu of the inventory, with its owner, status and history.", i);
		json_t *t = json_pack(
			"{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s, s:i}, s:{s:s, s:s, s:[s,s,s]}},"
			" s:[s]}, s:{s:b, s:b}}",
			"name", name, "description", desc, "inputSchema", "type", "object", "properties",
			"id", "type", "string", "description", "The record's identifier",
			"limit", "type", "integer", "description", "Most history entries to return",
			"minimum", 1,
			"view", "type", "string", "description", "How much to return",
			"enum", "summary", "full", "audit",
			"required", "id", "annotations", "readOnlyHint", 1, "openWorldHint", 0);
		json_array_append_new(tools, t);
	}
	json_t *reply = json_pack("{s:s, s:i, s:{s:o}}", "jsonrpc", "2.0", "id", 1, "result",
	                          "tools", tools);
	char *s = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	return s;
}

struct setup {
	struct px_config cfg;
	struct px_upstream_conf up;
	struct px_proc proc;
	struct px_ctx ctx;
	json_t *request;
	char err[1024];
};

static int setup_init(struct setup *s, const char *mode)
{
	memset(s, 0, sizeof(*s));
	s->cfg.ups = &s->up;
	s->cfg.nups = 1;
	s->up.name = "bench";
	s->up.contract = json_pack("{s:s}", "mode", mode);
	s->ctx.proc = &s->proc;
	s->ctx.cfg = &s->cfg;
	s->ctx.insp = inspect_new();
	s->request = json_loads("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 0, NULL);
	if (hook_contract_setup(&s->ctx, s->err, sizeof(s->err)) != 0) {
		fprintf(stderr, "setup: %s\n", s->err);
		return -1;
	}
	return 0;
}

static void setup_fini(struct setup *s)
{
	hook_contract_free(s->proc.contract);
	inspect_free(s->ctx.insp);
	json_decref(s->up.contract);
	json_decref(s->request);
}

/* One reply through the hook chain, as transport_http hands it over. */
static double run_once(struct setup *s, const char *text, size_t len, const char *session,
                       double *parse_ms)
{
	struct inspect_where w = {.upstream = "bench", .session_id = session, .client = "bench"};
	struct jparse_span result = {.name = "result"};
	double t0 = now_ms();
	json_t *msg = jparse_span(text, len, 1, &result);
	double t1 = now_ms();
	struct inspect_msg m = {
		.dir = INSPECT_FROM_SERVER,
		.kind = jrpc_classify(msg),
		.msg = msg,
		.request = s->request,
		.where = &w,
		.result_raw = result.at,
		.result_raw_len = result.len,
	};
	inspect_message(s->ctx.insp, &m);
	double t2 = now_ms();
	struct inspect_exchange x = {.where = &w, .status = 200};
	inspect_exchange_done(s->ctx.insp, &x);
	json_decref(m.answer);
	json_decref(msg);
	if (parse_ms)
		*parse_ms = t1 - t0;
	return t2 - t1;
}

int main(int argc, char **argv)
{
	size_t ntools = argc > 1 ? (size_t)atol(argv[1]) : 1000;
	size_t runs = argc > 2 ? (size_t)atol(argv[2]) : 41;
	const char *only = argc > 3 ? argv[3] : NULL;
	static const char *const modes[] = {"report", "filter", "fail"};
	char *text = tools_reply(ntools);
	size_t len = strlen(text);
	char *mark = strstr(text, "Returns record 0");
	double *a = calloc(runs, sizeof(double)), *b = calloc(runs, sizeof(double));
	double *p = calloc(runs, sizeof(double)), *c = calloc(runs, sizeof(double));
	/* "Returns" -> "returns" in every tool, and back: all tools new. */
	char **each = calloc(ntools ? ntools : 1, sizeof(char *));
	size_t neach = 0;
	for (char *q = strstr(text, "Returns record "); q && neach < ntools;
	     q = strstr(q + 1, "Returns record "))
		each[neach++] = q;

	log_setup(LOG_ERROR, 0);
	printf("tools/list reply: %zu tools, %zu bytes; median of %zu runs\n", ntools, len, runs);
	for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
		struct setup s;
		if (setup_init(&s, modes[k]) != 0)
			return 1;
		for (size_t i = 0; i < runs; i++) {
			/* "Returns record 0" -> "Returns record A", "B"...: new bytes. */
			mark[15] = (char)('A' + i % 26);
			if (!only || strcmp(only, "first") == 0)
				a[i] = run_once(&s, text, len, "s", &p[i]);
			if (!only || strcmp(only, "again") == 0)
				b[i] = run_once(&s, text, len, "s", NULL);
			if (!only || strcmp(only, "fresh") == 0) {
				for (size_t j = 0; j < neach; j++)
					each[j][0] = (char)(each[j][0] ^ 0x20);
				c[i] = run_once(&s, text, len, "s", NULL);
			}
		}
		printf("mode %-6s  parse %.3f ms  check first %.3f ms  check again %.3f ms  "
		       "check fresh %.3f ms\n", modes[k], median(p, runs), median(a, runs),
		       median(b, runs), median(c, runs));
		setup_fini(&s);
	}
	free(a);
	free(b);
	free(c);
	free(p);
	free(each);
	free(text);
	return 0;
}

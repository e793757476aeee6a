/* Unit tests for proxy/mcp/mirror.c, through the public API only.
 *
 * Request heads are real bytes parsed by http_parse (as the proxy gets
 * them); bodies and tools are JSON written with ' for " (J()). A test
 * names its headers one per line, e.g.
 *
 *   check(H_ALL("tools/call", "echo"), body, tool)
 *
 * and states the outcome: ok, or the failing header and reason (data) and
 * the code, status and one-line message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/net/http_parse.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/mcp/mirror.h"
#include "tests/unit/helpers.h"

/* ---- helpers ---------------------------------------------------------------- */

static struct http_parser *parser; /* of the current test; freed in teardown */
static json_t *owned[16];            /* JSON values freed in teardown */
static size_t nowned;

static int cleanup(void **state)
{
	(void)state;
	http_parser_free(parser);
	parser = NULL;
	for (size_t i = 0; i < nowned; i++)
		json_decref(owned[i]);
	nowned = 0;
	return 0;
}

/* Parse JSON written with ' for "; freed after the test. */
static json_t *J(const char *text)
{
	json_t *v = th_json(text);
	assert_true(nowned < sizeof(owned) / sizeof(owned[0]));
	owned[nowned++] = v;
	return v;
}

static int on_headers(void *arg, const struct http_msg *m)
{
	(void)arg;
	(void)m;
	return 0;
}

static int on_body(void *arg, const char *data, size_t len)
{
	(void)arg;
	(void)data;
	(void)len;
	return 0;
}

static const struct http_parser_cbs cbs = {on_headers, on_body};

/* The head of "POST /mcp" with the given header lines ('\n'-separated;
 * raw bytes, so a test can put control characters in a value). */
static const struct http_msg *head(const char *lines)
{
	char buf[8192];
	size_t o = 0;
	o += (size_t)snprintf(buf, sizeof(buf), "POST /mcp HTTP/1.1\r\nHost: t\r\n");
	for (const char *p = lines; *p; p++) {
		assert_true(o + 4 < sizeof(buf));
		if (*p == '\n') {
			buf[o++] = '\r';
			buf[o++] = '\n';
		} else {
			buf[o++] = *p;
		}
	}
	if (o >= 2 && buf[o - 1] != '\n') {
		buf[o++] = '\r';
		buf[o++] = '\n';
	}
	o += (size_t)snprintf(buf + o, sizeof(buf) - o, "Content-Length: 0\r\n\r\n");
	http_parser_free(parser);
	parser = http_parser_new(HTTP_KIND_REQUEST, 16384, &cbs, NULL);
	assert_non_null(parser);
	size_t used = 0;
	enum http_parse_rc rc = http_parser_feed(parser, buf, o, &used);
	if (rc != HTTP_PARSE_DONE)
		fail_msg("test head did not parse (%s): %.*s", http_parser_reason(parser), (int)o, buf);
	return http_parser_msg(parser);
}

#define V26   "MCP-Protocol-Version: 2026-07-28\n"
#define META  "'_meta':{'io.modelcontextprotocol/protocolVersion':'2026-07-28'," \
              "'io.modelcontextprotocol/clientCapabilities':{}}"

/* A 2026 tools/call body with the given arguments object. */
static json_t *call_body(const char *name, const char *args)
{
	char text[2048];
	snprintf(text, sizeof(text),
	         "{'jsonrpc':'2.0','id':7,'method':'tools/call','params':{'name':'%s',"
	         "'arguments':%s," META "}}", name, args);
	return J(text);
}

static void expect_ok(const char *lines, const json_t *body, const json_t *tool)
{
	struct mirror_result r;
	int rc = mirror_check(head(lines), body, tool, &r);
	if (rc != 0)
		fail_msg("expected ok, got %d %s", r.code, r.message);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.code, 0);
	assert_null(r.data);
	mirror_result_fini(&r);
}

/* Expects a -32020 naming `header` with `reason`; returns nothing, checks
 * the message is one line and mentions the header. */
static void expect_fail(const char *lines, const json_t *body, const json_t *tool,
                        const char *header, enum mirror_reason reason)
{
	struct mirror_result r;
	int rc = mirror_check(head(lines), body, tool, &r);
	if (rc == 0)
		fail_msg("expected %s %s, got ok", header, mirror_reason_str(reason));
	assert_int_equal(r.status, 400);
	assert_int_equal(r.code, reason == MIRROR_BATCH ? JRPC_INVALID_REQUEST : MIRROR_HEADER_MISMATCH);
	if (r.reason != reason)
		fail_msg("expected reason %s, got %s (%s)", mirror_reason_str(reason),
		         mirror_reason_str(r.reason), r.message);
	assert_non_null(r.data);
	assert_string_equal(json_string_value(json_object_get(r.data, "reason")),
	                    mirror_reason_str(reason));
	if (header) {
		assert_string_equal(json_string_value(json_object_get(r.data, "header")), header);
		assert_non_null(strstr(r.message, header));
	}
	assert_null(strchr(r.message, '\n'));
	assert_null(strchr(r.message, '\r'));
	assert_true(strlen(r.message) > 0 && strlen(r.message) < sizeof(r.message));
	for (const char *p = r.message; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
	mirror_result_fini(&r);
	assert_null(r.data);
}

#define H_CALL(name) V26 "Mcp-Method: tools/call\nMcp-Name: " name "\n"

static const char *const weather_tool =
	"{'name':'weather','inputSchema':{'type':'object','properties':{"
	"'region':{'type':'string','x-mcp-header':'Region'},"
	"'days':{'type':'integer','x-mcp-header':'Days'},"
	"'metric':{'type':'boolean','x-mcp-header':'Metric'},"
	"'note':{'type':'string'},"
	"'where':{'type':'object','properties':{'zip':{'type':'string','x-mcp-header':'Zip'}}},"
	"'tags':{'type':'array','items':{'type':'string','x-mcp-header':'Tag'}},"
	"'alt':{'anyOf':[{'type':'string','x-mcp-header':'Alt'}]}"
	"}}}";

/* ---- era ------------------------------------------------------------------ */

static void test_era_none_is_stateful(void **state)
{
	(void)state;
	const char *v = "x";
	json_t *b = J("{'jsonrpc':'2.0','id':1,'method':'tools/list'}");
	assert_int_equal(mirror_era_of(head(""), b, &v), MIRROR_ERA_STATEFUL);
	assert_null(v);
	assert_string_equal(mirror_era_str(MIRROR_ERA_STATEFUL), "stateful");
}

static void test_era_legacy_header_is_stateful(void **state)
{
	(void)state;
	const char *v = NULL;
	json_t *b = J("{'jsonrpc':'2.0','id':1,'method':'tools/list'}");
	assert_int_equal(mirror_era_of(head("MCP-Protocol-Version: 2025-11-25"), b, &v),
	                 MIRROR_ERA_STATEFUL);
	assert_string_equal(v, "2025-11-25");
	assert_int_equal(mirror_era_of(head("MCP-Protocol-Version: DRAFT-2026-v1"), b, NULL),
	                 MIRROR_ERA_STATEFUL);
	assert_int_equal(mirror_era_of(head("MCP-Protocol-Version: 2026-7-28"), b, NULL),
	                 MIRROR_ERA_STATEFUL);
}

static void test_era_envelope_is_2026(void **state)
{
	(void)state;
	const char *v = NULL;
	json_t *b = J("{'jsonrpc':'2.0','id':1,'method':'tools/list','params':{" META "}}");
	assert_int_equal(mirror_era_of(head(""), b, &v), MIRROR_ERA_2026);
	assert_string_equal(v, "2026-07-28");
	/* The envelope decides even when it names an old version: the
	 * upstream answers -32022, and the headers must still agree. */
	json_t *old = J("{'jsonrpc':'2.0','id':1,'method':'tools/list','params':{'_meta':"
	                "{'io.modelcontextprotocol/protocolVersion':'2025-11-25'}}}");
	assert_int_equal(mirror_era_of(head("MCP-Protocol-Version: 2026-07-28"), old, &v),
	                 MIRROR_ERA_2026);
	assert_string_equal(v, "2025-11-25");
	assert_string_equal(mirror_era_str(MIRROR_ERA_2026), "2026");
}

static void test_era_header_alone_is_2026(void **state)
{
	(void)state;
	json_t *b = J("{'jsonrpc':'2.0','id':1,'method':'tools/list'}");
	const char *v = NULL;
	assert_int_equal(mirror_era_of(head(V26), b, &v), MIRROR_ERA_2026);
	assert_string_equal(v, "2026-07-28");
	assert_int_equal(mirror_era_of(head("mcp-protocol-version: 2027-01-15"), b, NULL),
	                 MIRROR_ERA_2026);
	assert_int_equal(mirror_era_of(head(V26), NULL, NULL), MIRROR_ERA_2026);
	assert_int_equal(mirror_era_of(head(""), NULL, NULL), MIRROR_ERA_STATEFUL);
}

static void test_era_initialize_is_stateful(void **state)
{
	(void)state;
	json_t *b = J("{'jsonrpc':'2.0','id':1,'method':'initialize','params':{" META
	              ",'protocolVersion':'2025-11-25','capabilities':{},"
	              "'clientInfo':{'name':'c','version':'1'}}}");
	assert_int_equal(mirror_era_of(head(V26 "Mcp-Method: initialize"), b, NULL),
	                 MIRROR_ERA_STATEFUL);
}

static void test_era_non_string_envelope(void **state)
{
	(void)state;
	json_t *b = J("{'jsonrpc':'2.0','id':1,'method':'tools/list','params':{'_meta':"
	              "{'io.modelcontextprotocol/protocolVersion':20260728}}}");
	assert_int_equal(mirror_era_of(head(""), b, NULL), MIRROR_ERA_STATEFUL);
}

/* ---- stateful requests are never checked ------------------------------------ */

static void test_stateful_never_checked(void **state)
{
	(void)state;
	json_t *b = J("{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'echo'}}");
	expect_ok("MCP-Protocol-Version: 2025-11-25\nMcp-Method: nonsense\nMcp-Name: other\n"
	          "Mcp-Param-Region: =?base64?!!!?=", b, NULL);
	expect_ok("Mcp-Method: tools/list", b, NULL);
	json_t *init = J("{'jsonrpc':'2.0','id':0,'method':'initialize','params':{" META "}}");
	expect_ok(V26 "Mcp-Method: tools/list", init, NULL);
	/* No body: nothing to compare. */
	expect_ok(V26, NULL, NULL);
}

/* ---- the standard headers -------------------------------------------------- */

static void test_ok_all_headers(void **state)
{
	(void)state;
	json_t *b = call_body("echo", "{'message':'hi'}");
	expect_ok(H_CALL("echo"), b, NULL);
	/* Header names are case-insensitive. */
	expect_ok("mcp-protocol-version: 2026-07-28\nMCP-METHOD: tools/call\nmcp-name: echo", b,
	          NULL);
	json_t *list = J("{'jsonrpc':'2.0','id':'a','method':'tools/list','params':{" META "}}");
	expect_ok(V26 "Mcp-Method: tools/list", list, NULL);
	json_t *disc = J("{'jsonrpc':'2.0','id':'server-discover-probe-1','method':'server/discover',"
	                 "'params':{" META "}}");
	expect_ok(V26 "Mcp-Method: server/discover", disc, NULL);
}

static void test_missing_version(void **state)
{
	(void)state;
	json_t *b = call_body("echo", "{}");
	expect_fail("Mcp-Method: tools/call\nMcp-Name: echo", b, NULL, "MCP-Protocol-Version",
	            MIRROR_MISSING);
}

static void test_version_mismatch(void **state)
{
	(void)state;
	json_t *b = call_body("echo", "{}");
	expect_fail("MCP-Protocol-Version: 2025-11-25\nMcp-Method: tools/call\nMcp-Name: echo", b,
	            NULL, "MCP-Protocol-Version", MIRROR_MISMATCH);
	expect_fail("MCP-Protocol-Version: 2027-01-01\nMcp-Method: tools/call\nMcp-Name: echo", b,
	            NULL, "MCP-Protocol-Version", MIRROR_MISMATCH);
}

static void test_missing_method(void **state)
{
	(void)state;
	json_t *b = call_body("echo", "{}");
	expect_fail(V26 "Mcp-Name: echo", b, NULL, "Mcp-Method", MIRROR_MISSING);
}

static void test_method_mismatch(void **state)
{
	(void)state;
	json_t *b = call_body("echo", "{}");
	expect_fail(V26 "Mcp-Method: tools/list\nMcp-Name: echo", b, NULL, "Mcp-Method",
	            MIRROR_MISMATCH);
	/* Values are case-sensitive. */
	expect_fail(V26 "Mcp-Method: Tools/Call\nMcp-Name: echo", b, NULL, "Mcp-Method",
	            MIRROR_MISMATCH);
}

static void test_missing_name(void **state)
{
	(void)state;
	json_t *call = call_body("echo", "{}");
	expect_fail(V26 "Mcp-Method: tools/call", call, NULL, "Mcp-Name", MIRROR_MISSING);
	json_t *read = J("{'jsonrpc':'2.0','id':2,'method':'resources/read','params':{"
	                 "'uri':'test://a'," META "}}");
	expect_fail(V26 "Mcp-Method: resources/read", read, NULL, "Mcp-Name", MIRROR_MISSING);
	json_t *get = J("{'jsonrpc':'2.0','id':3,'method':'prompts/get','params':{"
	                "'name':'greet'," META "}}");
	expect_fail(V26 "Mcp-Method: prompts/get", get, NULL, "Mcp-Name", MIRROR_MISSING);
}

static void test_name_mismatch(void **state)
{
	(void)state;
	json_t *call = call_body("echo", "{}");
	expect_fail(H_CALL("rm_rf"), call, NULL, "Mcp-Name", MIRROR_MISMATCH);
	expect_fail(H_CALL("Echo"), call, NULL, "Mcp-Name", MIRROR_MISMATCH);
	json_t *read = J("{'jsonrpc':'2.0','id':2,'method':'resources/read','params':{"
	                 "'uri':'test://a'," META "}}");
	expect_ok(V26 "Mcp-Method: resources/read\nMcp-Name: test://a", read, NULL);
	expect_fail(V26 "Mcp-Method: resources/read\nMcp-Name: test://b", read, NULL, "Mcp-Name",
	            MIRROR_MISMATCH);
	json_t *get = J("{'jsonrpc':'2.0','id':3,'method':'prompts/get','params':{"
	                "'name':'greet'," META "}}");
	expect_ok(V26 "Mcp-Method: prompts/get\nMcp-Name: greet", get, NULL);
	expect_fail(V26 "Mcp-Method: prompts/get\nMcp-Name: other", get, NULL, "Mcp-Name",
	            MIRROR_MISMATCH);
	/* A header naming something the body does not have. */
	json_t *noname = J("{'jsonrpc':'2.0','id':4,'method':'tools/call','params':{" META "}}");
	expect_fail(H_CALL("echo"), noname, NULL, "Mcp-Name", MIRROR_MISMATCH);
}

static void test_name_only_where_defined(void **state)
{
	(void)state;
	/* tools/list defines no Mcp-Name: neither required nor compared. */
	json_t *list = J("{'jsonrpc':'2.0','id':1,'method':'tools/list','params':{" META "}}");
	expect_ok(V26 "Mcp-Method: tools/list\nMcp-Name: anything", list, NULL);
	expect_ok(V26 "Mcp-Method: tools/list\nMcp-Name: =?base64?***?=", list, NULL);
	/* tasks methods (extension): compared when sent, not demanded. */
	json_t *task = J("{'jsonrpc':'2.0','id':1,'method':'tasks/get','params':{'taskId':'t1',"
	                 META "}}");
	expect_ok(V26 "Mcp-Method: tasks/get", task, NULL);
	expect_ok(V26 "Mcp-Method: tasks/get\nMcp-Name: t1", task, NULL);
	expect_fail(V26 "Mcp-Method: tasks/get\nMcp-Name: t2", task, NULL, "Mcp-Name",
	            MIRROR_MISMATCH);
}

static void test_name_base64(void **state)
{
	(void)state;
	json_t *cafe = call_body("caf\xc3\xa9", "{}");
	expect_ok(H_CALL("=?base64?Y2Fmw6k=?="), cafe, NULL);
	/* Padding may be left out. */
	expect_ok(H_CALL("=?base64?Y2Fmw6k?="), cafe, NULL);
	expect_fail(H_CALL("=?base64?Y2FmZQ==?="), cafe, NULL, "Mcp-Name", MIRROR_MISMATCH);
	/* A plain name may be sent encoded too. */
	json_t *gw = call_body("get_weather", "{}");
	expect_ok(H_CALL("=?base64?Z2V0X3dlYXRoZXI=?="), gw, NULL);
	/* A name shaped like the sentinel must travel encoded. */
	json_t *shaped = call_body("=?base64?x?=", "{}");
	expect_ok(H_CALL("=?base64?PT9iYXNlNjQ/eD89?="), shaped, NULL);
	expect_fail(H_CALL("=?base64?x?="), shaped, NULL, "Mcp-Name", MIRROR_UNDECODABLE);
	/* Markers are lowercase; anything else is a literal value. */
	expect_fail(H_CALL("=?BASE64?Z2V0X3dlYXRoZXI=?="), gw, NULL, "Mcp-Name", MIRROR_MISMATCH);
	/* An empty payload is the empty string. */
	json_t *empty = call_body("", "{}");
	expect_ok(H_CALL("=?base64?\?="), empty, NULL);
}

static void test_name_base64_bad(void **state)
{
	(void)state;
	json_t *b = call_body("get_weather", "{}");
	static const char *const bad[] = {
		H_CALL("=?base64?Z2V0X3dlYXRoZXI*?="),    /* not in the alphabet */
		H_CALL("=?base64?Z2V0X3dlYXRoZXI=x?="),   /* data after padding */
		H_CALL("=?base64?Z2V0X3dlYXRoZ?="),       /* length 4n+1 */
		H_CALL("=?base64?Z2V0X3dlYXRoZXI===?="),  /* too much padding */
		H_CALL("=?base64?Z2V0X3dl YXRoZXI=?="),   /* a space inside */
		H_CALL("=?base64?Z2V0X3dlYXRoZXI_?="),    /* base64url alphabet */
		H_CALL("=?base64?Zg=?="),                 /* padding that does not fill */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_fail(bad[i], b, NULL, "Mcp-Name", MIRROR_UNDECODABLE);
}

/* Whether the parser refuses a head (the proxy answers 400 before any
 * check runs). */
static int head_refused(const char *lines)
{
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "POST /mcp HTTP/1.1\r\nHost: t\r\n%s\r\n"
	                 "Content-Length: 0\r\n\r\n", lines);
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	struct http_parser *p = http_parser_new(HTTP_KIND_REQUEST, 16384, &cbs, NULL);
	assert_non_null(p);
	size_t used = 0;
	enum http_parse_rc rc = http_parser_feed(p, buf, (size_t)n, &used);
	http_parser_free(p);
	return rc == HTTP_PARSE_ERROR;
}

static void test_control_characters(void **state)
{
	(void)state;
	/* llhttp already refuses control characters (but HTAB) in any header
	 * value, so these never reach mirror_check; it would refuse them too.
	 * Asserted here so that a laxer parser would be noticed. */
	assert_true(head_refused("Mcp-Name: ec\x01ho"));
	assert_true(head_refused("Mcp-Method: tools/\x7f" "call"));
	assert_true(head_refused("MCP-Protocol-Version: 2026-07-28\x1b"));
	assert_true(head_refused("Mcp-Param-Other: a\x02z"));
	assert_true(head_refused("Mcp-Param-Other: a\x0b" "z"));
	/* Raw non-ASCII in a mirrored value should have been Base64. */
	json_t *cafe = call_body("caf\xc3\xa9", "{}");
	expect_fail(H_CALL("caf\xc3\xa9"), cafe, NULL, "Mcp-Name", MIRROR_BAD_CHARS);
	expect_fail(V26 "Mcp-Method: tools/call\xff\nMcp-Name: caf\xc3\xa9", cafe, NULL,
	            "Mcp-Method", MIRROR_BAD_CHARS);
	expect_fail("MCP-Protocol-Version: 2026-07-28\x80\nMcp-Method: tools/call\nMcp-Name: x",
	            cafe, NULL, "MCP-Protocol-Version", MIRROR_BAD_CHARS);
	/* HTAB and SP inside a value are header-safe. */
	json_t *sp = call_body("a b\\tc", "{}");
	expect_ok(H_CALL("a b\tc"), sp, NULL);
}

static void test_repeated_header(void **state)
{
	(void)state;
	json_t *b = call_body("echo", "{}");
	expect_fail(H_CALL("echo") "Mcp-Name: rm_rf", b, NULL, "Mcp-Name", MIRROR_REPEATED);
	expect_fail(H_CALL("echo") "mcp-method: tools/call", b, NULL, "Mcp-Method", MIRROR_REPEATED);
	expect_fail(H_CALL("echo") V26, b, NULL, "MCP-Protocol-Version", MIRROR_REPEATED);
}

static void test_notifications_and_responses(void **state)
{
	(void)state;
	/* The SDK posts notifications/cancelled without Mcp-Method: fine. */
	json_t *n = J("{'jsonrpc':'2.0','method':'notifications/cancelled','params':{"
	              "'requestId':'listen:1'," META "}}");
	expect_ok(V26, n, NULL);
	expect_ok("", n, NULL);
	expect_ok(V26 "Mcp-Method: notifications/cancelled", n, NULL);
	expect_fail(V26 "Mcp-Method: tools/call", n, NULL, "Mcp-Method", MIRROR_MISMATCH);
	expect_fail("MCP-Protocol-Version: 2025-06-18", n, NULL, "MCP-Protocol-Version",
	            MIRROR_MISMATCH);
	/* A response POSTed in the 2026 era (the upstream refuses it). */
	json_t *r = J("{'jsonrpc':'2.0','id':5,'result':{}}");
	expect_ok(V26 "Mcp-Method: whatever", r, NULL);
}

static void test_batch_refused(void **state)
{
	(void)state;
	json_t *b = J("[{'jsonrpc':'2.0','id':1,'method':'tools/list','params':{" META "}}]");
	expect_fail(V26 "Mcp-Method: tools/list", b, NULL, NULL, MIRROR_BATCH);
	/* A stateful batch is not this module's business. */
	json_t *old = J("[{'jsonrpc':'2.0','id':1,'method':'tools/list'}]");
	expect_ok("MCP-Protocol-Version: 2025-03-26", old, NULL);
}

/* ---- Mcp-Param-* ----------------------------------------------------------- */

static void test_param_string(void **state)
{
	(void)state;
	json_t *tool = J(weather_tool);
	json_t *b = call_body("weather", "{'region':'us-west1'}");
	expect_ok(H_CALL("weather") "Mcp-Param-Region: us-west1", b, tool);
	expect_ok(H_CALL("weather") "mcp-param-region: us-west1", b, tool);
	expect_ok(H_CALL("weather") "Mcp-Param-Region: =?base64?dXMtd2VzdDE=?=", b, tool);
	expect_fail(H_CALL("weather") "Mcp-Param-Region: eu-west1", b, tool, "Mcp-Param-Region",
	            MIRROR_MISMATCH);
	expect_fail(H_CALL("weather"), b, tool, "Mcp-Param-Region", MIRROR_MISSING);
	expect_fail(H_CALL("weather") "Mcp-Param-Region: =?base64?dXMtd2VzdDE*?=", b, tool,
	            "Mcp-Param-Region", MIRROR_UNDECODABLE);
	expect_fail(H_CALL("weather") "Mcp-Param-Region: us-west1\nMcp-Param-region: eu", b, tool,
	            "Mcp-Param-Region", MIRROR_REPEATED);
	json_t *accent = call_body("weather", "{'region':'R\xc3\xa9gion'}");
	expect_ok(H_CALL("weather") "Mcp-Param-Region: =?base64?UsOpZ2lvbg==?=", accent, tool);
	expect_fail(H_CALL("weather") "Mcp-Param-Region: R\xc3\xa9gion", accent, tool,
	            "Mcp-Param-Region", MIRROR_BAD_CHARS);
	/* A string that looks like a number is still compared as a string. */
	json_t *digits = call_body("weather", "{'region':'007'}");
	expect_fail(H_CALL("weather") "Mcp-Param-Region: 7", digits, tool, "Mcp-Param-Region",
	            MIRROR_MISMATCH);
}

static void test_param_integer(void **state)
{
	(void)state;
	json_t *tool = J(weather_tool);
	json_t *b = call_body("weather", "{'days':42}");
	expect_ok(H_CALL("weather") "Mcp-Param-Days: 42", b, tool);
	expect_ok(H_CALL("weather") "Mcp-Param-Days: 042", b, tool);
	expect_ok(H_CALL("weather") "Mcp-Param-Days: +42", b, tool);
	expect_ok(H_CALL("weather") "Mcp-Param-Days: =?base64?NDI=?=", b, tool);
	expect_fail(H_CALL("weather") "Mcp-Param-Days: 43", b, tool, "Mcp-Param-Days",
	            MIRROR_MISMATCH);
	expect_fail(H_CALL("weather") "Mcp-Param-Days: 42abc", b, tool, "Mcp-Param-Days",
	            MIRROR_MISMATCH);
	expect_fail(H_CALL("weather") "Mcp-Param-Days: 99999999999999999999999", b, tool,
	            "Mcp-Param-Days", MIRROR_MISMATCH);
	expect_fail(H_CALL("weather"), b, tool, "Mcp-Param-Days", MIRROR_MISSING);
	json_t *neg = call_body("weather", "{'days':-9007199254740991}");
	expect_ok(H_CALL("weather") "Mcp-Param-Days: -9007199254740991", neg, tool);
	json_t *zero = call_body("weather", "{'days':0}");
	expect_ok(H_CALL("weather") "Mcp-Param-Days: -0", zero, tool);
	/* 7.0 in a body is the integer 7. */
	json_t *real = call_body("weather", "{'days':7.0}");
	expect_ok(H_CALL("weather") "Mcp-Param-Days: 7", real, tool);
}

static void test_param_non_integral_body(void **state)
{
	(void)state;
	/* Not what an integer parameter should carry, but mirrored all the
	 * same: compared as a number written out in decimal. */
	json_t *tool = J(weather_tool);
	json_t *b = call_body("weather", "{'days':7.5}");
	expect_ok(H_CALL("weather") "Mcp-Param-Days: 7.5", b, tool);
	expect_ok(H_CALL("weather") "Mcp-Param-Days: 75e-1", b, tool);
	expect_fail(H_CALL("weather") "Mcp-Param-Days: 7", b, tool, "Mcp-Param-Days", MIRROR_MISMATCH);
	expect_fail(H_CALL("weather") "Mcp-Param-Days: 0x1.ep2", b, tool, "Mcp-Param-Days",
	            MIRROR_MISMATCH);
	json_t *inf = call_body("weather", "{'days':1.5e300}");
	expect_fail(H_CALL("weather") "Mcp-Param-Days: inf", inf, tool, "Mcp-Param-Days",
	            MIRROR_MISMATCH);
}

static void test_param_boolean(void **state)
{
	(void)state;
	json_t *tool = J(weather_tool);
	json_t *t = call_body("weather", "{'metric':true}");
	expect_ok(H_CALL("weather") "Mcp-Param-Metric: true", t, tool);
	expect_fail(H_CALL("weather") "Mcp-Param-Metric: True", t, tool, "Mcp-Param-Metric",
	            MIRROR_MISMATCH);
	expect_fail(H_CALL("weather") "Mcp-Param-Metric: 1", t, tool, "Mcp-Param-Metric",
	            MIRROR_MISMATCH);
	json_t *f = call_body("weather", "{'metric':false}");
	expect_ok(H_CALL("weather") "Mcp-Param-Metric: false", f, tool);
	expect_fail(H_CALL("weather") "Mcp-Param-Metric: true", f, tool, "Mcp-Param-Metric",
	            MIRROR_MISMATCH);
}

static void test_param_absent_and_null(void **state)
{
	(void)state;
	json_t *tool = J(weather_tool);
	/* No argument, or null: no header. */
	json_t *none = call_body("weather", "{'note':'x'}");
	expect_ok(H_CALL("weather"), none, tool);
	json_t *nul = call_body("weather", "{'region':null}");
	expect_ok(H_CALL("weather"), nul, tool);
	/* A header for a value the body does not carry disagrees with it. */
	expect_fail(H_CALL("weather") "Mcp-Param-Region: us", none, tool, "Mcp-Param-Region",
	            MIRROR_MISMATCH);
	expect_fail(H_CALL("weather") "Mcp-Param-Region: us", nul, tool, "Mcp-Param-Region",
	            MIRROR_MISMATCH);
	/* No arguments member at all. */
	json_t *noargs = J("{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'weather',"
	                   META "}}");
	expect_ok(H_CALL("weather"), noargs, tool);
}

static void test_param_nested(void **state)
{
	(void)state;
	json_t *tool = J(weather_tool);
	json_t *b = call_body("weather", "{'where':{'zip':'94107'}}");
	expect_ok(H_CALL("weather") "Mcp-Param-Zip: 94107", b, tool);
	expect_fail(H_CALL("weather") "Mcp-Param-Zip: 10001", b, tool, "Mcp-Param-Zip",
	            MIRROR_MISMATCH);
	expect_fail(H_CALL("weather"), b, tool, "Mcp-Param-Zip", MIRROR_MISSING);

	struct mirror_result r;
	mirror_check(head(H_CALL("weather")), b, tool, &r);
	assert_string_equal(json_string_value(json_object_get(r.data, "body")),
	                    "params.arguments.where.zip");
	mirror_result_fini(&r);
}

static void test_param_unknown_forwarded(void **state)
{
	(void)state;
	json_t *tool = J(weather_tool);
	json_t *b = call_body("weather", "{'region':'us'}");
	expect_ok(H_CALL("weather") "Mcp-Param-Region: us\nMcp-Param-Other: whatever", b, tool);
	/* Unknown ones may carry what they like, short of control characters. */
	expect_ok(H_CALL("weather") "Mcp-Param-Region: us\nMcp-Param-Other: caf\xc3\xa9", b, tool);
	expect_ok(H_CALL("weather") "Mcp-Param-Region: us\nMcp-Param-Other: =?base64?***?=", b, tool);
	/* Annotations outside a pure properties chain are not annotations. */
	json_t *arr = call_body("weather", "{'tags':['a'],'alt':'x'}");
	expect_ok(H_CALL("weather") "Mcp-Param-Tag: b\nMcp-Param-Alt: y", arr, tool);
}

static void test_param_unknown_tool(void **state)
{
	(void)state;
	json_t *b = call_body("weather", "{'region':'us'}");
	expect_ok(H_CALL("weather") "Mcp-Param-Region: somewhere-else", b, NULL);
	expect_ok(H_CALL("weather"), b, NULL);
	/* A tool without an inputSchema (malformed) checks nothing either. */
	json_t *bare = J("{'name':'weather'}");
	expect_ok(H_CALL("weather") "Mcp-Param-Region: x", b, bare);
}

static void test_param_invalid_annotations_ignored(void **state)
{
	(void)state;
	json_t *tool = J("{'name':'t','inputSchema':{'type':'object','properties':{"
	                 "'n':{'type':'number','x-mcp-header':'N'},"
	                 "'o':{'type':'object','x-mcp-header':'O'},"
	                 "'bad':{'type':'string','x-mcp-header':'Bad Name'},"
	                 "'e':{'type':'string','x-mcp-header':''},"
	                 "'a':{'type':'string','x-mcp-header':'Dup'},"
	                 "'b':{'type':'string','x-mcp-header':'dup'},"
	                 "'ok':{'type':['string','null'],'x-mcp-header':'Ok'},"
	                 "'any':{'x-mcp-header':'Any'}}}}");
	json_t *b = call_body("t", "{'n':1.5,'o':{},'bad':'x','e':'y','a':'1','b':'2','ok':'v',"
	                      "'any':3}");
	expect_ok(H_CALL("t") "Mcp-Param-Ok: v\nMcp-Param-Any: 3", b, tool);
	expect_fail(H_CALL("t") "Mcp-Param-Ok: w\nMcp-Param-Any: 3", b, tool, "Mcp-Param-Ok",
	            MIRROR_MISMATCH);
	expect_fail(H_CALL("t") "Mcp-Param-Ok: v", b, tool, "Mcp-Param-Any", MIRROR_MISSING);
	/* Object values have no header form: nothing to demand. */
	json_t *obj = call_body("t", "{'any':{'k':1}}");
	expect_ok(H_CALL("t"), obj, tool);
}

static void test_param_only_on_tools_call(void **state)
{
	(void)state;
	json_t *tool = J(weather_tool);
	json_t *get = J("{'jsonrpc':'2.0','id':3,'method':'prompts/get','params':{'name':'weather',"
	                "'arguments':{'region':'us'}," META "}}");
	expect_ok(V26 "Mcp-Method: prompts/get\nMcp-Name: weather", get, tool);
}

/* ---- error bodies ------------------------------------------------------------ */

static void test_error_response(void **state)
{
	(void)state;
	json_t *b = call_body("echo", "{}");
	struct mirror_result r;
	assert_int_equal(mirror_check(head(H_CALL("nope")), b, NULL, &r), -1);
	json_t *resp = mirror_error_response(b, &r);
	assert_non_null(resp);
	assert_int_equal(jrpc_classify(resp), JRPC_ERROR);
	assert_int_equal(json_integer_value(jrpc_id(resp)), 7);
	json_t *err = json_object_get(resp, "error");
	assert_int_equal(json_integer_value(json_object_get(err, "code")), -32020);
	assert_string_equal(json_string_value(json_object_get(err, "message")), r.message);
	assert_string_equal(json_string_value(json_object_get(json_object_get(err, "data"), "header")),
	                    "Mcp-Name");
	/* The message never echoes the header's value. */
	assert_null(strstr(r.message, "nope"));
	json_decref(resp);
	mirror_result_fini(&r);

	/* A body without an id gets a null id. */
	json_t *n = J("{'jsonrpc':'2.0','method':'notifications/cancelled','params':{" META "}}");
	assert_int_equal(mirror_check(head(V26 "Mcp-Method: x"), n, NULL, &r), -1);
	resp = mirror_error_response(n, &r);
	assert_true(json_is_null(jrpc_id(resp)));
	json_decref(resp);
	mirror_result_fini(&r);
	mirror_result_fini(NULL);
}

static void test_proxy_codes(void **state)
{
	(void)state;
	/* The stateful era keeps the legacy codes. */
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_STATEFUL, 502, JRPC_UPSTREAM_ERROR), -32000);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_STATEFUL, 504, JRPC_UPSTREAM_ERROR), -32000);
	/* 2026: gateway errors leave the reserved block. */
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 502, JRPC_UPSTREAM_ERROR), -31502);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 504, JRPC_UPSTREAM_ERROR), -31504);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 413, -32001), -31413);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 0, -32010), -31500);
	/* Standard JSON-RPC and the spec's defined codes stay. */
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 400, JRPC_PARSE_ERROR), -32700);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 413, JRPC_INVALID_REQUEST), -32600);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 400, JRPC_INVALID_PARAMS), -32602);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 500, JRPC_INTERNAL_ERROR), -32603);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 400, -32020), -32020);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 400, -32022), -32022);
	/* Undefined spec codes are never emitted. */
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 400, -32050), -31400);
	/* Application codes outside the block are left alone. */
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 403, -1), -1);
	assert_int_equal(mirror_proxy_code(MIRROR_ERA_2026, 403, -40001), -40001);

	json_t *id = json_string("req-1");
	json_t *e = mirror_proxy_error(MIRROR_ERA_2026, id, 504, JRPC_UPSTREAM_ERROR,
	                               "upstream timed out", json_pack("{s:s}", "upstream", "u"));
	assert_int_equal(jrpc_classify(e), JRPC_ERROR);
	assert_string_equal(json_string_value(jrpc_id(e)), "req-1");
	json_t *err = json_object_get(e, "error");
	assert_int_equal(json_integer_value(json_object_get(err, "code")), -31504);
	assert_string_equal(json_string_value(json_object_get(json_object_get(err, "data"), "upstream")),
	                    "u");
	json_decref(e);
	e = mirror_proxy_error(MIRROR_ERA_STATEFUL, NULL, 413, JRPC_INVALID_REQUEST, "too large", NULL);
	assert_true(json_is_null(jrpc_id(e)));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "error"), "code")),
	                 -32600);
	json_decref(e);
	json_decref(id);
}

static void test_reason_strings(void **state)
{
	(void)state;
	assert_string_equal(mirror_reason_str(MIRROR_OK), "ok");
	assert_string_equal(mirror_reason_str(MIRROR_MISSING), "missing");
	assert_string_equal(mirror_reason_str(MIRROR_MISMATCH), "mismatch");
	assert_string_equal(mirror_reason_str(MIRROR_UNDECODABLE), "undecodable");
	assert_string_equal(mirror_reason_str(MIRROR_BAD_CHARS), "invalid_characters");
	assert_string_equal(mirror_reason_str(MIRROR_REPEATED), "repeated");
	assert_string_equal(mirror_reason_str(MIRROR_BATCH), "batch");
}

#define T(f) cmocka_unit_test_teardown(f, cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_era_none_is_stateful),
		T(test_era_legacy_header_is_stateful),
		T(test_era_envelope_is_2026),
		T(test_era_header_alone_is_2026),
		T(test_era_initialize_is_stateful),
		T(test_era_non_string_envelope),
		T(test_stateful_never_checked),
		T(test_ok_all_headers),
		T(test_missing_version),
		T(test_version_mismatch),
		T(test_missing_method),
		T(test_method_mismatch),
		T(test_missing_name),
		T(test_name_mismatch),
		T(test_name_only_where_defined),
		T(test_name_base64),
		T(test_name_base64_bad),
		T(test_control_characters),
		T(test_repeated_header),
		T(test_notifications_and_responses),
		T(test_batch_refused),
		T(test_param_string),
		T(test_param_integer),
		T(test_param_non_integral_body),
		T(test_param_boolean),
		T(test_param_absent_and_null),
		T(test_param_nested),
		T(test_param_unknown_forwarded),
		T(test_param_unknown_tool),
		T(test_param_invalid_annotations_ignored),
		T(test_param_only_on_tools_call),
		T(test_error_response),
		T(test_proxy_codes),
		T(test_reason_strings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

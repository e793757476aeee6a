/* Unit tests for proxy/hooks/redact.c: secret keys at any depth, configured
 * literal values, the cut marker, result previews. Inputs and expected
 * outputs are JSON texts; "M" below stands for the mask "••••".
 *
 * Why this file is long (over 800 lines): every preview path (the tree,
 * the memo of a listing's bytes, a tools/call result read from its text)
 * is checked against the same expected previews and helpers; split, each
 * half would carry those helpers again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/hooks/redact.h"
#include "proxy/base/sbuf.h"
#include "proxy/base/jparse.h"
#include "tests/unit/helpers.h"

#define M REDACT_MASK

/* redact_json(in) serialised (keys in input order) must equal want. */
static void expect_json(const struct redact *rd, const char *in, const char *want)
{
	json_t *j = th_json_text(in, JSON_DECODE_ANY);
	json_t *c = redact_json(rd, j);
	assert_non_null(c);
	assert_ptr_not_equal(c, j);
	char *got = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
	assert_string_equal(got, want);
	free(got);
	/* the input is never touched */
	char *again = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	json_t *orig = th_json_text(in, JSON_DECODE_ANY);
	char *orig_s = json_dumps(orig, JSON_COMPACT | JSON_ENCODE_ANY);
	assert_string_equal(again, orig_s);
	free(again);
	free(orig_s);
	json_decref(orig);
	json_decref(c);
	json_decref(j);
}

static void expect_preview(const struct redact *rd, const char *result, size_t max,
                           const char *want, int want_cut)
{
	json_t *j = th_json_text(result, JSON_DECODE_ANY);
	int cut = -1;
	char *got = redact_result_preview(rd, j, max, &cut);
	assert_non_null(got);
	assert_string_equal(got, want);
	assert_int_equal(cut, want_cut);
	free(got);
	json_decref(j);
}

static void test_default_keys_nested(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	expect_json(rd,
	            "{\"user\":\"ann\",\"password\":\"hunter2\",\"nested\":{\"api_key\":123,"
	            "\"list\":[{\"token\":{\"deep\":[1,2]}},{\"ok\":\"x\"},[{\"secret\":null}]]}}",
	            "{\"user\":\"ann\",\"password\":\"" M "\",\"nested\":{\"api_key\":\"" M "\","
	            "\"list\":[{\"token\":\"" M "\"},{\"ok\":\"x\"},[{\"secret\":\"" M "\"}]]}}");
	redact_free(rd);
}

static void test_key_matching_rules(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	/* case-insensitive substring, '_' and '-' ignored */
	assert_true(redact_key_is_secret(rd, "Authorization"));
	assert_true(redact_key_is_secret(rd, "db_password"));
	assert_true(redact_key_is_secret(rd, "PASSWORD_CONFIRM"));
	assert_true(redact_key_is_secret(rd, "apiKey"));
	assert_true(redact_key_is_secret(rd, "X-Api-Key"));
	assert_true(redact_key_is_secret(rd, "access_token"));
	assert_true(redact_key_is_secret(rd, "clientSecret"));
	assert_false(redact_key_is_secret(rd, "pass"));
	assert_false(redact_key_is_secret(rd, "message"));
	assert_false(redact_key_is_secret(rd, "api"));
	assert_false(redact_key_is_secret(rd, ""));
	assert_false(redact_key_is_secret(rd, NULL));
	/* a very long key still works */
	char longkey[1000];
	memset(longkey, 'a', sizeof(longkey));
	memcpy(longkey + 900, "Secret", 6);
	longkey[sizeof(longkey) - 1] = '\0';
	assert_true(redact_key_is_secret(rd, longkey));
	redact_free(rd);
}

static void test_configured_keys_replace_defaults(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	redact_clear_keys(rd);
	assert_int_equal(redact_add_key(rd, "ssn"), 0);
	assert_int_equal(redact_add_key(rd, ""), -1);
	assert_int_equal(redact_add_key(rd, "-_"), -1);
	expect_json(rd, "{\"max_tokens\":100,\"SSN\":\"123\",\"user_ssn_x\":[1]}",
	            "{\"max_tokens\":100,\"SSN\":\"" M "\",\"user_ssn_x\":\"" M "\"}");
	redact_free(rd);
}

/* The answers for member names are remembered from call to call (per
 * thread): never across a change of the patterns, nor from one redactor
 * to another. */
static void expect_text(const struct redact *rd, const char *in, const char *want)
{
	json_t *j = th_json_text(in, JSON_DECODE_ANY);
	char *t = redact_json_text(rd, j, 1000, NULL);
	assert_non_null(t);
	assert_string_equal(t, want);
	free(t);
	json_decref(j);
}

static void test_key_answers_follow_the_patterns(void **state)
{
	(void)state;
	struct redact *a = redact_new(), *b = redact_new();
	redact_clear_keys(b);
	assert_int_equal(redact_add_key(b, "message"), 0);
	for (int i = 0; i < 3; i++) {
		expect_text(a, "{\"message\":\"hi\",\"password\":\"x\"}",
		            "{\"message\":\"hi\",\"password\":\"" M "\"}");
		expect_text(b, "{\"message\":\"hi\",\"password\":\"x\"}",
		            "{\"message\":\"" M "\",\"password\":\"x\"}");
	}
	/* a's patterns change after its answers were remembered */
	redact_clear_keys(a);
	expect_text(a, "{\"message\":\"hi\",\"password\":\"x\"}",
	            "{\"message\":\"hi\",\"password\":\"x\"}");
	assert_int_equal(redact_add_key(a, "mess"), 0);
	expect_text(a, "{\"message\":\"hi\",\"password\":\"x\"}",
	            "{\"message\":\"" M "\",\"password\":\"x\"}");
	/* a redactor freed and another made: none of the old answers */
	redact_free(b);
	b = redact_new();
	expect_text(b, "{\"message\":\"hi\",\"password\":\"x\"}",
	            "{\"message\":\"hi\",\"password\":\"" M "\"}");
	redact_free(a);
	redact_free(b);
}

/* jparse_member (proxy/base/jparse.h), which the redaction walks use, finds
 * what json_object_get finds: by a walk in a small object, hashed in a
 * large one; a key holding a NUL is not its prefix. */
static void test_member_lookup(void **state)
{
	(void)state;
	json_t *small =
	        th_json_text("{\"type\":\"text\",\"text\":\"hi\",\"t\":1}", JSON_DECODE_ANY);
	assert_ptr_equal(JPARSE_MEMBER(small, "text"), json_object_get(small, "text"));
	assert_ptr_equal(JPARSE_MEMBER(small, "t"), json_object_get(small, "t"));
	assert_null(JPARSE_MEMBER(small, "tex"));
	assert_null(JPARSE_MEMBER(small, "texts"));
	json_object_setn_new(small, "id\0x", 4, json_integer(7));
	assert_null(JPARSE_MEMBER(small, "id"));
	assert_int_equal(json_integer_value(jparse_member(small, "id\0x", 4)), 7);
	json_t *large = json_object();
	char k[16];
	for (int i = 0; i < 3 * JPARSE_MEMBER_WALK; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		json_object_set_new(large, k, json_integer(i));
	}
	assert_int_equal(json_integer_value(JPARSE_MEMBER(large, "k20")), 20);
	assert_null(JPARSE_MEMBER(large, "k99"));
	json_t *arr = th_json_text("[1]", JSON_DECODE_ANY);
	assert_null(JPARSE_MEMBER(arr, "type"));
	assert_null(JPARSE_MEMBER(NULL, "type"));
	json_decref(small);
	json_decref(large);
	json_decref(arr);
}

static void test_configured_values(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	assert_int_equal(redact_add_value(rd, "s3cr3t"), 0);
	assert_int_equal(redact_add_value(rd, "zz"), -1); /* too short */
	assert_int_equal(redact_add_value(rd, NULL), -1);
	expect_json(rd,
	            "{\"q\":\"the s3cr3t and s3cr3ts3cr3t\",\"a\":[\"s3cr3t\",\"no\"],"
	            "\"k-s3cr3t\":1,\"n\":5}",
	            "{\"q\":\"the " M " and " M M "\",\"a\":[\"" M "\",\"no\"],\"k-" M "\":1,"
	            "\"n\":5}");
	char *t = redact_text(rd, "url?key=s3cr3t&x=1");
	assert_string_equal(t, "url?key=" M "&x=1");
	free(t);
	t = redact_text(rd, "nothing here");
	assert_string_equal(t, "nothing here");
	free(t);
	redact_free(rd);
}

static void test_scalars_and_depth(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	expect_json(rd, "42", "42");
	expect_json(rd, "\"text\"", "\"text\"");
	expect_json(rd, "[true,false,null,1.5]", "[true,false,null,1.5]");
	/* nesting past REDACT_MAX_DEPTH is replaced, never recursed into */
	char deep[4 * REDACT_MAX_DEPTH + 16] = "";
	for (int i = 0; i < REDACT_MAX_DEPTH + 2; i++)
		strcat(deep, "[");
	for (int i = 0; i < REDACT_MAX_DEPTH + 2; i++)
		strcat(deep, "]");
	json_t *j = th_json_text(deep, JSON_DECODE_ANY);
	json_t *c = redact_json(rd, j);
	char *s = json_dumps(c, JSON_COMPACT);
	assert_non_null(strstr(s, "\"\xe2\x80\xa6\""));
	free(s);
	json_decref(c);
	json_decref(j);
	assert_null(redact_json(rd, NULL));
	redact_free(rd);
}

static void test_cut(void **state)
{
	(void)state;
	int cut = -1;
	char *s = redact_cut("abcdef", 6, &cut);
	assert_string_equal(s, "abcdef");
	assert_int_equal(cut, 0);
	free(s);
	s = redact_cut("abcdefgh", 3, &cut);
	assert_string_equal(s, "abc\xe2\x80\xa6[cut: 3 of 8 chars]");
	assert_int_equal(cut, 1);
	free(s);
	/* characters, not bytes: é is two bytes, 😀 four; never split */
	s = redact_cut("\xc3\xa9\xc3\xa9\xf0\x9f\x98\x80x", 3, &cut);
	assert_string_equal(s, "\xc3\xa9\xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xa6[cut: 3 of 4 chars]");
	free(s);
	s = redact_cut("\xc3\xa9\xc3\xa9", 2, NULL);
	assert_string_equal(s, "\xc3\xa9\xc3\xa9");
	free(s);
	s = redact_cut("", 0, &cut);
	assert_string_equal(s, "");
	assert_int_equal(cut, 0);
	free(s);
}

static void test_json_text_cut_at_1000(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	json_t *args = json_object();
	char *big = malloc(3001);
	memset(big, 'y', 3000);
	big[3000] = '\0';
	json_object_set_new(args, "text", json_string(big));
	json_object_set_new(args, "password", json_string("pw"));
	int cut = 0;
	char *s = redact_json_text(rd, args, REDACT_ARGS_CHARS, &cut);
	assert_int_equal(cut, 1);
	/* {"text":" (9) + 3000 + ","password":"••••"} (20) characters in all */
	assert_non_null(strstr(s, "\xe2\x80\xa6[cut: 1000 of 3029 chars]"));
	assert_int_equal(strncmp(s, "{\"text\":\"yyyy", 13), 0);
	assert_null(strstr(s, "pw\""));
	free(s);
	s = redact_json_text(rd, json_object_get(args, "password"), 10, &cut);
	assert_string_equal(s, "\"pw\"");
	assert_int_equal(cut, 0);
	free(s);
	free(big);
	json_decref(args);
	redact_free(rd);
}

static void test_preview_tool_result(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	redact_add_value(rd, "topsecret");
	expect_preview(rd,
	               "{\"content\":[{\"type\":\"text\",\"text\":\"Echo: hi\"},"
	               "{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"},"
	               "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///a?k=topsecret\"}},"
	               "{\"type\":\"resource_link\",\"uri\":\"demo://x\",\"name\":\"x\"}],"
	               "\"isError\":false}",
	               REDACT_PREVIEW_CHARS,
	               "Echo: hi\n[image image/png]\n[resource file:///a?k=" M "]\n[resource_link demo://x]",
	               0);
	/* a text that is JSON is redacted as JSON */
	expect_preview(rd,
	               "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"token\\\": \\\"abc\\\", \\\"n\\\": 1}\"}]}",
	               REDACT_PREVIEW_CHARS, "{\"token\":\"" M "\",\"n\":1}", 0);
	/* no content: structuredContent */
	expect_preview(rd, "{\"content\":[],\"structuredContent\":{\"temp\":21,\"api_key\":\"k\"}}",
	               REDACT_PREVIEW_CHARS, "{\"temp\":21,\"api_key\":\"" M "\"}", 0);
	/* not a tool result: its compact JSON */
	expect_preview(rd, "{\"resources\":[{\"uri\":\"a\"}]}", REDACT_PREVIEW_CHARS,
	               "{\"resources\":[{\"uri\":\"a\"}]}", 0);
	expect_preview(rd, "{}", REDACT_PREVIEW_CHARS, "{}", 0);
	redact_free(rd);
}

static void test_preview_cut_at_800(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	json_t *r = json_object(), *content = json_array();
	char *big = malloc(5001);
	memset(big, 'z', 5000);
	big[5000] = '\0';
	json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text", "text", big));
	json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text", "text", "tail"));
	json_object_set_new(r, "content", content);
	int cut = 0;
	char *s = redact_result_preview(rd, r, REDACT_PREVIEW_CHARS, &cut);
	assert_int_equal(cut, 1);
	/* 5000 + "\n" + "tail" = 5005 characters offered */
	char want_tail[64];
	snprintf(want_tail, sizeof(want_tail), "\xe2\x80\xa6[cut: 800 of 5005 chars]");
	assert_int_equal(strlen(s), 800 + strlen(want_tail));
	assert_string_equal(s + 800, want_tail);
	free(s);
	free(big);
	json_decref(r);
	redact_free(rd);
}

/* A large result's text, its tree, and the plain preview of the tree. */
struct big_result {
	char *raw;
	size_t len;
	json_t *tree;
	uint64_t serial; /* names raw's bytes for the memo (0: none) */
};

static struct big_result big_list(int n, const char *secret_key)
{
	struct sbuf b = {0};
	sbuf_puts(&b, "{\"tools\":[");
	for (int i = 0; i < n; i++) {
		char t[160];
		snprintf(t, sizeof(t), "%s{\"name\":\"tool_%04d\",\"%s\":\"v%d\",\"n\":%d}", i ? "," : "", i,
		         secret_key, i, i);
		sbuf_puts(&b, t);
	}
	sbuf_puts(&b, "]}");
	struct big_result r = {b.p, b.len, json_loadb(b.p, b.len, 0, NULL), 0};
	assert_non_null(r.tree);
	return r;
}

static char *preview_of(const struct redact *rd, struct redact_preview_memo *pm,
                        const struct big_result *br, const json_t *tree, int *cut)
{
	struct sbuf out = {0};
	sbuf_putn(&out, "", 0);
	assert_int_equal(redact_result_preview_memo_to(rd, pm, tree, br->raw, br->len, br->serial,
	                                               REDACT_PREVIEW_CHARS, cut, &out), 0);
	return out.p;
}

/* Whether two previews of a large listing show the same text: the
 * recorder's (memo) path counts the marker's total on the raw text
 * (test_preview_big_listing_bounded), redact_result_preview on the
 * redacted one. */
static void assert_same_preview(const char *got, const char *want)
{
	const char *mark = strstr(want, "\xe2\x80\xa6[cut: ");
	size_t keep = mark ? (size_t)(mark - want) : strlen(want);
	assert_int_equal(strncmp(got, want, keep), 0);
	assert_true(mark ? strncmp(got + keep, "\xe2\x80\xa6[cut: ", 8) == 0 : got[keep] == '\0');
}

/* The kept preview is the one the result's own preview gives, is given
 * again for the same bytes, and never for other bytes or patterns. */
static void test_preview_memo(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	struct redact_preview_memo *pm = redact_preview_memo_new();
	struct big_result a = big_list(400, "token"), b = big_list(400, "other");
	assert_true(a.len > 8192 && a.len == b.len);
	a.serial = 1;
	b.serial = 2;

	int cut_plain = 0, cut = 0;
	char *plain = redact_result_preview(rd, a.tree, REDACT_PREVIEW_CHARS, &cut_plain);
	char *first = preview_of(rd, pm, &a, a.tree, &cut);
	assert_same_preview(first, plain);
	assert_int_equal(cut, cut_plain);
	assert_int_equal(cut, 1);
	assert_non_null(strstr(plain, "\"token\":\"" REDACT_MASK "\""));

	/* The same bytes: the kept text, without reading the tree (given
	 * another tree here to show it is not read). */
	cut = 0;
	char *again = preview_of(rd, pm, &a, b.tree, &cut);
	assert_same_preview(again, plain);
	assert_int_equal(cut, 1);

	/* Other bytes of the same length: previewed from their tree. */
	char *other = preview_of(rd, pm, &b, b.tree, &cut);
	char *other_plain = redact_result_preview(rd, b.tree, REDACT_PREVIEW_CHARS, NULL);
	assert_same_preview(other, other_plain);
	assert_string_not_equal(other, plain);

	/* Other patterns (same bytes as last): "other" is secret now. */
	struct redact *rd2 = redact_new();
	assert_int_equal(redact_add_key(rd2, "other"), 0);
	char *masked = preview_of(rd2, pm, &b, b.tree, &cut);
	char *masked_plain = redact_result_preview(rd2, b.tree, REDACT_PREVIEW_CHARS, NULL);
	assert_same_preview(masked, masked_plain);
	assert_non_null(strstr(masked, "\"other\":\"" REDACT_MASK "\""));

	/* A literal added to the same redactor: the kept preview of these
	 * bytes no longer holds (it would show the value unmasked). */
	assert_int_equal(redact_add_value(rd2, "tool_0003"), 0);
	char *lit = preview_of(rd2, pm, &b, b.tree, &cut);
	assert_null(strstr(lit, "\"tool_0003\""));
	assert_non_null(strstr(masked, "\"tool_0003\""));

	/* Asked by number alone: what is kept for it, else nothing. */
	struct sbuf got = {0};
	sbuf_putn(&got, "", 0);
	assert_int_equal(redact_preview_memo_get(rd2, pm, 2, REDACT_PREVIEW_CHARS, &cut, &got), 1);
	assert_string_equal(got.p, lit);
	got.len = 0;
	assert_int_equal(redact_preview_memo_get(rd2, pm, 1, REDACT_PREVIEW_CHARS, &cut, &got), 0);
	assert_int_equal(redact_preview_memo_get(rd2, pm, 2, 10, &cut, &got), 0);
	assert_int_equal(redact_preview_memo_get(rd, pm, 2, REDACT_PREVIEW_CHARS, &cut, &got), 0);
	assert_int_equal(got.len, 0);
	free(got.p);
	free(lit);

	/* Bytes without a number are never kept: with the same bytes and
	 * another tree, its own tree is previewed. */
	struct big_result small = big_list(3, "x");
	char *s1 = preview_of(rd, pm, &small, small.tree, &cut);
	json_t *t2 = json_pack("{s:[]}", "tools");
	char *s2 = preview_of(rd, pm, &small, t2, &cut);
	assert_string_not_equal(s1, s2);

	free(plain); free(first); free(again); free(other); free(other_plain);
	free(masked); free(masked_plain); free(s1); free(s2);
	json_decref(t2);
	struct big_result *all[] = {&a, &b, &small};
	for (size_t i = 0; i < 3; i++) {
		free(all[i]->raw);
		json_decref(all[i]->tree);
	}
	redact_preview_memo_free(pm);
	redact_free(rd);
	redact_free(rd2);
}

/* A listing in the shape of the bench's (tests/bench/README.md: 1,000
 * tools, each with a description, a small inputSchema and annotations),
 * and a member the default patterns mask. */
static struct big_result tool_listing(int n)
{
	struct sbuf b = {0};
	sbuf_puts(&b, "{\"tools\":[");
	for (int i = 0; i < n; i++) {
		char t[512];
		snprintf(t, sizeof(t),
		         "%s{\"name\":\"tool_%04d\",\"description\":\"Looks up records of kind %d in "
		         "the catalogue and returns the matching entries, newest first, with their "
		         "identifiers and a short summary of each.\",\"inputSchema\":{\"type\":\"object\","
		         "\"properties\":{\"query\":{\"type\":\"string\",\"description\":\"What to "
		         "look for\"},\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100}},"
		         "\"required\":[\"query\"]},\"annotations\":{\"readOnlyHint\":true,"
		         "\"destructiveHint\":false,\"openWorldHint\":false},\"token\":\"tk-%04d-secret\"}",
		         i ? "," : "", i, i, i);
		sbuf_puts(&b, t);
	}
	sbuf_puts(&b, "]}");
	struct big_result r = {b.p, b.len, json_loadb(b.p, b.len, 0, NULL), 0};
	assert_non_null(r.tree);
	return r;
}

/* A large listing that changed (nothing kept for its bytes): the preview
 * walks the listing only as far as it keeps (800 characters), not every
 * value. Measured with callgrind on this test (tests/unit/README.md). The
 * text is the full walk's; the marker's total is counted on the result's
 * text as it arrived. */
static void test_preview_big_listing_bounded(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	struct big_result a = tool_listing(1000);
	assert_true(a.len > 400000);
	char *plain = redact_result_preview(rd, a.tree, REDACT_PREVIEW_CHARS, NULL);
	struct redact_preview_memo *pm = redact_preview_memo_new();
	int cut = 0;
	char *got = preview_of(rd, pm, &a, a.tree, &cut);
	assert_int_equal(cut, 1);
	const char *mark = strstr(plain, "\xe2\x80\xa6[cut: 800 of ");
	assert_non_null(mark);
	size_t keep = (size_t)(mark - plain);
	assert_int_equal(strncmp(got, plain, keep), 0);
	assert_null(strstr(got, "-secret"));
	char want[80];
	snprintf(want, sizeof(want), "\xe2\x80\xa6[cut: 800 of %zu chars]", a.len);
	assert_string_equal(got + keep, want);
	free(plain);
	free(got);
	free(a.raw);
	json_decref(a.tree);
	redact_preview_memo_free(pm);
	redact_free(rd);
}

static void test_limits(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	char v[32];
	int added = 0;
	for (int i = 0; i < REDACT_MAX_PATTERNS + 5; i++) {
		snprintf(v, sizeof(v), "key%03d", i);
		added += redact_add_key(rd, v) == 0;
	}
	/* the five defaults are there too */
	assert_int_equal(added, REDACT_MAX_PATTERNS - 5);
	/* values: REDACT_MAX_VALUES in all, in one set */
	size_t n = REDACT_MAX_VALUES + 5;
	char **lits = calloc(n, sizeof(*lits));
	for (size_t i = 0; i < n; i++) {
		lits[i] = malloc(32);
		snprintf(lits[i], 32, "value%05zu", i);
	}
	assert_int_equal(redact_add_secrets(rd, (const char *const *)lits, n), REDACT_MAX_VALUES);
	assert_int_equal(redact_add_value(rd, "one-more"), -1);
	char *t = redact_text(rd, "value00000 value04095 value04096");
	assert_string_equal(t, M " " M " value04096");
	free(t);
	for (size_t i = 0; i < n; i++)
		free(lits[i]);
	free(lits);
	redact_free(rd);
	redact_free(NULL);
}

/* Credentials come as a set (admin/secrets.c: at start, and again at each reload,
 * while workers redact): the new values apply at once, the old ones stay,
 * a kept preview made without them is not given again. */
static void test_secrets_added_live(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	const char *first[] = {"alice", "Basic YWxpY2U6czNjcmV0", "YWxpY2U6czNjcmV0", "zz", NULL,
	                       "alice"};
	assert_int_equal(redact_add_secrets(rd, first, 6), 3); /* short, NULL, twice: skipped */
	assert_int_equal(redact_add_secrets(rd, first, 6), 0); /* nothing new */
	/* leftmost, then longest: the whole Basic value is one mask */
	char *t = redact_text(rd, "authorization: Basic YWxpY2U6czNjcmV0 (alice)");
	assert_string_equal(t, "authorization: " M " (" M ")");
	free(t);

	/* a large result, previewed and kept */
	struct sbuf big = {0};
	sbuf_puts(&big, "{\"content\":[{\"type\":\"text\",\"text\":\"");
	for (int i = 0; i < 600; i++)
		sbuf_puts(&big, "x-api-key: k-12345 ");
	sbuf_puts(&big, "\"}]}");
	json_t *j = th_json_text(big.p, JSON_DECODE_ANY);
	struct redact_preview_memo *pm = redact_preview_memo_new();
	struct sbuf out = {0};
	assert_int_equal(redact_result_preview_memo_to(rd, pm, j, big.p, big.len, 7, 40, NULL, &out), 0);
	assert_non_null(strstr(out.p, "k-12345"));

	const char *second[] = {"k-12345"};
	assert_int_equal(redact_add_secrets(rd, second, 1), 1);
	out.len = 0;
	assert_int_equal(redact_result_preview_memo_to(rd, pm, j, big.p, big.len, 7, 40, NULL, &out), 0);
	assert_null(strstr(out.p, "k-12345"));
	assert_non_null(strstr(out.p, "x-api-key: " M));
	/* the first set still applies */
	t = redact_text(rd, "alice k-12345");
	assert_string_equal(t, M " " M);
	free(t);
	free(out.p);
	free(big.p);
	json_decref(j);
	redact_preview_memo_free(pm);
	redact_free(rd);
}

/* Many values, matched in one pass: the same text as masking each value
 * in turn, whatever their number and their shared first bytes. */
static void test_many_values(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	char v[300][24];
	const char *lits[300];
	for (int i = 0; i < 300; i++) {
		/* many share their first two bytes ("tk"), lengths vary */
		snprintf(v[i], sizeof(v[i]), "tk%d-%.*s", i, i % 7, "abcdefg");
		lits[i] = v[i];
	}
	assert_int_equal(redact_add_secrets(rd, lits, 300), 300);
	/* values: "tk1-a", "tk10-abc", "tk299-abcde", "tk3-abc" (i % 7 letters) */
	char *t = redact_text(rd, "[tk1-a][tk10-abc][tk299-abcdef][tk3-ab][tk]");
	assert_string_equal(t, "[" M "][" M "][" M "f][tk3-ab][tk]");
	free(t);
	/* strings shorter than every value are left as they are */
	t = redact_text(rd, "tk1");
	assert_string_equal(t, "tk1");
	free(t);
	redact_free(rd);
}

/* ---- the serialising path against the copying one ------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
	return (unsigned)(th_xorshift(&rng_state) % n);
}

static json_t *random_string(void)
{
	static const char *const pool[] = {
		"", "plain", "hunter2", "a hunter2 b hunter2", "quote\"back\\slash/",
		"\x01\x1f\x7f tab\t nl\n cr\r ff\f bs\b", "caf\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80",
	};
	if (rnd(4))
		return json_string(pool[rnd(sizeof(pool) / sizeof(pool[0]))]);
	char b[40];
	size_t n = rnd(sizeof(b));
	for (size_t i = 0; i < n; i++)
		b[i] = (char)rnd(0x80); /* ASCII, NUL and control bytes included */
	return json_stringn(b, n);
}

static json_t *random_value(int depth)
{
	static const char *const keys[] = {
		"a", "password", "X-Api-Key", "myToken", "x-hunter2-y", "hunter2", "k\"q", "\n",
		"caf\xc3\xa9", "authorization", "id",
	};
	static const double reals[] = {0.1, 1e300, -2.5e-8, 3.0, 123456789.125, -0.0};
	unsigned kind = depth > 70 ? 2 + rnd(6) : rnd(9);
	switch (kind) {
	case 0:
	case 1: {
		json_t *o = json_object();
		unsigned n = rnd(5);
		for (unsigned i = 0; i < n; i++)
			json_object_set_new(o, keys[rnd(sizeof(keys) / sizeof(keys[0]))],
			                    random_value(depth + 1 + (int)rnd(8)));
		return o;
	}
	case 2:
		return random_string();
	case 3: {
		static const json_int_t ints[] = {0, -1, 42, INT64_MAX, INT64_MIN, 1000000007};
		return json_integer(ints[rnd(6)]);
	}
	case 4:
		return json_real(reals[rnd(6)]);
	case 5:
		return rnd(2) ? json_true() : json_false();
	case 6:
		return json_null();
	default: {
		json_t *a = json_array();
		unsigned n = rnd(4);
		for (unsigned i = 0; i < n; i++)
			json_array_append_new(a, random_value(depth + 1 + (int)rnd(8)));
		return a;
	}
	}
}

/* redact_json_text writes the text without a redacted copy; it must be the
 * copy's text exactly, cut the same way. */
static void test_json_text_matches_copy(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	assert_int_equal(redact_add_value(rd, "hunter2"), 0);
	for (int round = 0; round < 3000; round++) {
		json_t *v = random_value(0);
		size_t max = rnd(3) ? (size_t)-1 : rnd(200);
		json_t *c = redact_json(rd, v);
		char *full = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
		int want_cut = -1, got_cut = -1;
		char *want = redact_cut(full, max, &want_cut);
		char *got = redact_json_text(rd, v, max, &got_cut);
		assert_non_null(got);
		if (strcmp(got, want) != 0)
			fail_msg("round %d:\n got  %s\n want %s", round, got, want);
		assert_int_equal(got_cut, want_cut);
		free(got);
		free(want);
		free(full);
		json_decref(c);
		json_decref(v);
	}
	redact_free(rd);
}

/* A result with no content is previewed as its redacted JSON text, now
 * written straight into the bounded preview (counted, not kept, past the
 * limit): unbounded it is the copy's text; bounded, that text cut. */
static void test_preview_json_matches_copy(void **state)
{
	(void)state;
	struct redact *plain = redact_new(), *lit = redact_new();
	assert_int_equal(redact_add_value(lit, "hunter2"), 0);
	for (int round = 0; round < 2000; round++) {
		json_t *x = random_value(0), *result;
		if (round % 2)
			result = json_pack("{s:O,s:b}", "structuredContent", x, "isError", 0);
		else
			result = json_object_get(x, "content") || !json_is_object(x)
			                 ? json_pack("{s:O}", "value", x)
			                 : json_incref(x);
		const json_t *shown = json_object_get(result, "structuredContent");
		if (!shown)
			shown = result;
		for (int k = 0; k < 2; k++) {
			struct redact *rd = k ? lit : plain;
			json_t *c = redact_json(rd, shown);
			char *full = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
			int cut = -1;
			char *got = redact_result_preview(rd, result, (size_t)-1, &cut);
			if (strcmp(got, full) != 0)
				fail_msg("round %d:\n got  %s\n want %s", round, got, full);
			assert_int_equal(cut, 0);
			free(got);
			if (!k) {
				size_t max = rnd(120);
				int want_cut = -1;
				char *want = redact_cut(full, max, &want_cut);
				got = redact_result_preview(rd, result, max, &cut);
				if (strcmp(got, want) != 0)
					fail_msg("round %d max %zu:\n got  %s\n want %s", round, max, got, want);
				assert_int_equal(cut, want_cut);
				free(got);
				free(want);
			}
			free(full);
			json_decref(c);
		}
		json_decref(result);
		json_decref(x);
	}
	redact_free(plain);
	redact_free(lit);
}

/* The preview of result text r from its text alone, content span given
 * (content, NULL: looked for; at NULL: there is none): bytes into *len,
 * cut into *cut. */
static char *raw_preview(const struct redact *rd, const char *r, const struct jparse_ref *content,
                         size_t max, size_t *len, int *cut)
{
	struct sbuf out = {0};
	sbuf_putn(&out, "", 0);
	*cut = -1;
	int rc = redact_result_preview_raw_to(rd, NULL, r, strlen(r), content, 0, max, cut, &out);
	if (rc != 0)
		print_error("refused: %s\n", r);
	assert_int_equal(rc, 0);
	*len = out.len;
	return out.p;
}

/* The preview from the text is the tree's, byte for byte, cut included,
 * whether the caller names the content span or not. */
static void expect_raw_same(const struct redact *rd, const char *r, size_t max)
{
	json_t *j = th_json_text(r, JSON_DECODE_ANY);
	struct sbuf want = {0};
	sbuf_putn(&want, "", 0);
	int want_cut = -1;
	assert_int_equal(
	        redact_result_preview_memo_to(rd, NULL, j, r, strlen(r), 0, max, &want_cut, &want), 0);
	static const char *const top[] = {"content"};
	struct jparse_ref c = {NULL, 0};
	int picked = jparse_pick(r, strlen(r), top, 1, &c);
	for (int with_span = 0; with_span < 2; with_span++) {
		size_t len;
		int cut;
		char *got = raw_preview(rd, r, with_span && picked == 0 ? &c : NULL, max, &len, &cut);
		if (len != want.len || memcmp(got, want.p, len) != 0)
			print_error("%s\n got  %.*s\n want %.*s\n", r, (int)len, got, (int)want.len,
			            want.p);
		assert_int_equal(len, want.len);
		assert_memory_equal(got, want.p, len);
		assert_int_equal(cut, want_cut);
		free(got);
	}
	free(want.p);
	json_decref(j);
}

static void test_preview_raw_matches_tree(void **state)
{
	(void)state;
	struct redact *rd = redact_new();
	redact_add_value(rd, "topsecret");
	static const char *const same[] = {
	        "{\"content\":[{\"type\":\"text\",\"text\":\"Echo: hi\"}],\"isError\":false}",
	        " { \"isError\" : true , \"content\" : [ {\"text\":\"a\",\"type\":\"text\"} ,"
	        " {\"type\":\"text\",\"text\":\"b\",\"_meta\":{\"type\":1}} ] } ",
	        /* escapes decoded, a secret value masked in any item */
	        "{\"content\":[{\"type\":\"text\",\"text\":\"l1\\nl2 \\\"q\\\" \\u00e9 \\ud83d\\ude00\"},"
	        "{\"type\":\"text\",\"text\":\"key=topsecret\"}]}",
	        /* a text that is JSON is redacted as JSON, escaped or not */
	        "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"token\\\": \\\"abc\\\", \\\"n\\\": 1}\"}]}",
	        "{\"content\":[{\"type\":\"text\",\"text\":\"[1,2\"}]}",
	        /* no text, or not a string */
	        "{\"content\":[{\"type\":\"text\"},{\"type\":\"text\",\"text\":5},{\"type\":\"text\","
	        "\"text\":\"z\"}]}",
	        /* everything else takes the tree path: the same preview anyway */
	        "{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image\",\"data\":\"AAAA\","
	        "\"mimeType\":\"image/png\"}]}",
	        "{\"content\":[{\"type\":\"text\",\"type\":\"image\",\"text\":\"a\"}]}",
	        "{\"content\":[{\"t\\u0065xt\":\"hidden\",\"type\":\"text\",\"text\":\"shown\"}]}",
	        "{\"content\":[{\"type\":\"t\\u0065xt\",\"text\":\"escaped type\"}]}",
	        "{\"content\":[{\"type\":\"text\",\"text\":\"1\"}],\"content\":[{\"type\":\"text\","
	        "\"text\":\"2\"}]}",
	        "{\"content\":[],\"structuredContent\":{\"temp\":21,\"api_key\":\"k\"}}",
	        "{\"content\":{\"type\":\"text\"},\"token\":\"t\"}",
	        "{\"content\":[7]}",
	        "{\"tools\":[{\"name\":\"a\"}]}",
	        "{}",
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		expect_raw_same(rd, same[i], REDACT_PREVIEW_CHARS);
	/* more items than the text path takes, and a cut */
	struct sbuf b = {0};
	sbuf_puts(&b, "{\"content\":[");
	for (int i = 0; i < 20; i++)
		sbuf_puts(&b, i ? ",{\"type\":\"text\",\"text\":\"item\"}" : "{\"type\":\"text\",\"text\":\"item\"}");
	sbuf_puts(&b, "]}");
	expect_raw_same(rd, b.p, REDACT_PREVIEW_CHARS);
	expect_raw_same(rd, b.p, 30);
	free(b.p);
	expect_raw_same(rd, "{\"content\":[{\"type\":\"text\",\"text\":\"0123456789abcdef\"},"
	                    "{\"type\":\"text\",\"text\":\"tail topsecret\"}]}",
	                12);

	/* The text path is the one taken for text items: it reads the span it
	 * is given (here another result's), and the tree path for the rest. */
	const char *r = "{\"content\":[{\"type\":\"text\",\"text\":\"mine\"}]}";
	const char *other = "[{\"type\":\"text\",\"text\":\"other\"}]";
	size_t len;
	int cut;
	struct jparse_ref span = {other, strlen(other)};
	char *got = raw_preview(rd, r, &span, REDACT_PREVIEW_CHARS, &len, &cut);
	assert_string_equal(got, "other");
	free(got);
	const char *image = "[{\"type\":\"image\",\"mimeType\":\"image/png\"}]";
	span = (struct jparse_ref){image, strlen(image)};
	got = raw_preview(rd, r, &span, REDACT_PREVIEW_CHARS, &len, &cut);
	assert_string_equal(got, "mine");
	free(got);
	struct sbuf out = {0};
	assert_int_equal(redact_result_preview_raw_to(rd, NULL, NULL, 0, NULL, 0, 80, NULL, &out), -1);
	assert_int_equal(redact_result_preview_raw_to(rd, NULL, "{", 1, NULL, 0, 80, NULL, &out), -1);
	free(out.p);

	/* Bytes the memo keeps a preview for (serial) are not parsed again:
	 * the same serial answers from the memo whatever the text. */
	struct redact_preview_memo *pm = redact_preview_memo_new();
	const char *list = "{\"tools\":[{\"name\":\"a\"}]}";
	struct sbuf first = {0}, again = {0};
	assert_int_equal(redact_result_preview_raw_to(rd, pm, list, strlen(list), NULL, 7, 80, NULL,
	                                              &first),
	                 0);
	assert_int_equal(redact_result_preview_raw_to(rd, pm, "{", 1, NULL, 7, 80, NULL, &again), 0);
	assert_int_equal(again.len, first.len);
	assert_memory_equal(again.p, first.p, first.len);
	assert_int_equal(redact_result_preview_raw_to(rd, pm, "{", 1, NULL, 8, 80, NULL, &again), -1);
	free(first.p);
	free(again.p);
	redact_preview_memo_free(pm);
	redact_free(rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_keys_nested),
		cmocka_unit_test(test_key_matching_rules),
		cmocka_unit_test(test_configured_keys_replace_defaults),
		cmocka_unit_test(test_configured_values),
		cmocka_unit_test(test_scalars_and_depth),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_json_text_cut_at_1000),
		cmocka_unit_test(test_preview_tool_result),
		cmocka_unit_test(test_preview_cut_at_800),
		cmocka_unit_test(test_preview_memo),
		cmocka_unit_test(test_preview_raw_matches_tree),
		cmocka_unit_test(test_preview_big_listing_bounded),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_secrets_added_live),
		cmocka_unit_test(test_many_values),
		cmocka_unit_test(test_json_text_matches_copy),
		cmocka_unit_test(test_preview_json_matches_copy),
		cmocka_unit_test(test_key_answers_follow_the_patterns),
		cmocka_unit_test(test_member_lookup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

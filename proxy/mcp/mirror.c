/* mirror: see mirror.h.
 *
 * The checks run in the order the spec lists the headers, and the first
 * failure is the answer:
 *
 *   body is a batch ───────────────────────────▶ 400 -32600 (no batches)
 *   MCP-Protocol-Version  repeated │ bad chars │ missing* │ ≠ _meta version
 *   Mcp-Method            repeated │ bad chars │ missing* │ ≠ method
 *   Mcp-Name              repeated │ bad chars │ undecodable │ missing* │ ≠ name/uri/taskId
 *   Mcp-Param-* (any)     control characters
 *   Mcp-Param-<H> for each valid x-mcp-header of the tool:
 *                         repeated │ bad chars │ undecodable │ missing │ ≠ argument
 *
 *   * "missing" only for requests: notification and response POSTs have no
 *     header rules, they only must not contradict their body.
 *
 * Values are compared byte for byte after Base64 sentinel decoding, except
 * that integer arguments compare as numbers ("007" is 7).
 */
#include "proxy/mcp/mirror.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/net/http_parse.h"
#include "proxy/base/jsonrpc.h"
#include "proxy/base/b64.h"

/* Bounds on what is read from a tool definition: x-mcp-header annotations
 * honoured per tool, and how deep a chain of "properties" is followed. */
#define MIRROR_MAX_PARAMS  64
#define MIRROR_MAX_DEPTH   16

#define SENTINEL_HEAD      "=?base64?"
#define SENTINEL_TAIL      "?="
#define PARAM_PREFIX       "mcp-param-"

/* ---- small helpers ------------------------------------------------------- */

const char *mirror_era_str(enum mirror_era era)
{
	return era == MIRROR_ERA_2026 ? "2026" : "stateful";
}

const char *mirror_reason_str(enum mirror_reason r)
{
	switch (r) {
	case MIRROR_OK: return "ok";
	case MIRROR_MISSING: return "missing";
	case MIRROR_MISMATCH: return "mismatch";
	case MIRROR_UNDECODABLE: return "undecodable";
	case MIRROR_BAD_CHARS: return "invalid_characters";
	case MIRROR_REPEATED: return "repeated";
	case MIRROR_BATCH: return "batch";
	}
	return "?";
}

static const json_t *params_of(const json_t *msg)
{
	const json_t *p = json_object_get(msg, "params");
	return json_is_object(p) ? p : NULL;
}

/* params._meta[protocolVersion] when it is a string, else NULL. */
static const char *envelope_version(const json_t *msg)
{
	const json_t *meta = json_object_get(params_of(msg), "_meta");
	return json_string_value(json_object_get(meta, MIRROR_META_VERSION));
}

/* Whether v is a date-shaped version at or after 2026-07-28. Anything not
 * shaped YYYY-MM-DD (a draft name) does not name this era by header alone. */
static int version_is_2026(const char *v)
{
	static const char shape[] = "dddd-dd-dd";
	if (!v || strlen(v) != sizeof(shape) - 1)
		return 0;
	for (size_t i = 0; shape[i]; i++) {
		if (shape[i] == 'd' ? v[i] < '0' || v[i] > '9' : v[i] != shape[i])
			return 0;
	}
	return strcmp(v, MIRROR_VERSION_2026) >= 0;
}

/* Counts the headers named prefix+suffix (case-insensitive); *value and
 * *len receive the first one's. suffix may be NULL. */
static size_t header_count(const struct http_msg *m, const char *prefix, const char *suffix,
                           const char **value, size_t *len)
{
	size_t plen = strlen(prefix), slen = suffix ? strlen(suffix) : 0, n = 0;
	*value = NULL;
	*len = 0;
	for (size_t i = 0;; i++) {
		const char *hn, *hv;
		size_t hnl, hvl;
		if (http_msg_header_at(m, i, &hn, &hnl, &hv, &hvl) < 0)
			break;
		if (hnl != plen + slen || strncasecmp(hn, prefix, plen) != 0 ||
		    (slen && strncasecmp(hn + plen, suffix, slen) != 0))
			continue;
		if (n++ == 0) {
			*value = hv;
			*len = hvl;
		}
	}
	return n;
}

/* Header-safe bytes are VCHAR, SP and HTAB (the parser already trimmed the
 * edges). Anything else in a mirrored value should have been Base64-encoded;
 * high bytes are tolerated only where the value is not ours to judge
 * (allow_high: an unknown Mcp-Param-* is forwarded untouched). */
static int chars_ok(const char *v, size_t n, int allow_high)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return 0;
		if (c >= 0x80 && !allow_high)
			return 0;
	}
	return 1;
}

/* A header value as the client meant it. Plain values are borrowed;
 * sentinel values are decoded into an owned buffer (*owned, free it). */
struct hvalue {
	const char *bytes;
	size_t len;
	unsigned char *owned;
};

/* Returns 0, or -1 when the value has the sentinel's shape but is not
 * Base64 (or memory ran out, which the client cannot tell apart and need
 * not: it is refused either way). */
static int hvalue_decode(const char *v, size_t n, struct hvalue *out)
{
	size_t hl = strlen(SENTINEL_HEAD), tl = strlen(SENTINEL_TAIL);
	out->owned = NULL;
	out->bytes = v;
	out->len = n;
	if (n < hl + tl || memcmp(v, SENTINEL_HEAD, hl) != 0 || memcmp(v + n - tl, SENTINEL_TAIL, tl) != 0)
		return 0;
	size_t inner = n - hl - tl;
	out->owned = malloc(b64_decoded_max(inner));
	if (!out->owned)
		return -1;
	long len = b64_decode(v + hl, inner, out->owned);
	if (len < 0) {
		free(out->owned);
		out->owned = NULL;
		return -1;
	}
	out->bytes = (const char *)out->owned;
	out->len = (size_t)len;
	return 0;
}

static int bytes_eq(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && memcmp(a, b, al) == 0;
}

static int str_eq_json(const struct hvalue *h, const json_t *s)
{
	return json_is_string(s) && bytes_eq(h->bytes, h->len, json_string_value(s), json_string_length(s));
}

/* A decimal integer as the spec mirrors one: [+-]?[0-9]+. Returns 0 and
 * *overflow when it does not fit, -1 when it is not one. */
static int parse_integer(const char *s, size_t n, long long *out, int *overflow)
{
	size_t i = 0;
	int neg = 0;
	unsigned long long acc = 0;
	*overflow = 0;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (i == n)
		return -1;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (acc > (ULLONG_MAX - d) / 10)
			*overflow = 1;
		else
			acc = acc * 10 + d;
	}
	if (*overflow || acc > (unsigned long long)LLONG_MAX + (neg ? 1u : 0u)) {
		*overflow = 1;
		return 0;
	}
	if (neg && acc == (unsigned long long)LLONG_MAX + 1u)
		*out = LLONG_MIN;
	else
		*out = neg ? -(long long)acc : (long long)acc;
	return 0;
}

/* A finite number spelled out in full (for non-integral body values). */
static int parse_number(const char *s, size_t n, double *out)
{
	char buf[64];
	if (n == 0 || n >= sizeof(buf))
		return -1;
	/* Decimal notation only: strtod alone would take "inf", hex, spaces. */
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789+-.eE", s[i]) || s[i] == '\0')
			return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	char *end;
	errno = 0;
	double d = strtod(buf, &end);
	if (*end || errno || !isfinite(d))
		return -1;
	*out = d;
	return 0;
}

/* Whether a header value (decoded) mirrors the body value v: strings byte
 * for byte, integers as numbers, booleans as true/false. */
static int value_matches(const struct hvalue *h, const json_t *v)
{
	long long i;
	double d;
	int overflow;

	switch (json_typeof(v)) {
	case JSON_STRING:
		return str_eq_json(h, v);
	case JSON_TRUE:
		return bytes_eq(h->bytes, h->len, "true", 4);
	case JSON_FALSE:
		return bytes_eq(h->bytes, h->len, "false", 5);
	case JSON_INTEGER:
		if (parse_integer(h->bytes, h->len, &i, &overflow) < 0 || overflow)
			return 0;
		return i == (long long)json_integer_value(v);
	case JSON_REAL:
		/* 7.0 in a body is the integer 7 to most JSON writers. */
		if (parse_integer(h->bytes, h->len, &i, &overflow) == 0 && !overflow)
			return (double)i == json_real_value(v);
		return parse_number(h->bytes, h->len, &d) == 0 && d == json_real_value(v);
	default:
		return 0; /* objects and arrays have no header form */
	}
}

/* Copies s into dst for a one-line message: printable ASCII only. */
static void safe_copy(char *dst, size_t cap, const char *s, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		dst[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	dst[o] = '\0';
}

/* ---- results --------------------------------------------------------------- */

static int fail(struct mirror_result *out, enum mirror_reason reason, const char *header,
                const char *body_path, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Fills out with a -32020 (or, for a batch, -32600) failure. header and
 * body_path are already safe for one line. */
static int fail(struct mirror_result *out, enum mirror_reason reason, const char *header,
                const char *body_path, const char *fmt, ...)
{
	va_list ap;
	char text[200];

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	out->status = 400;
	out->reason = reason;
	if (reason == MIRROR_BATCH) {
		out->code = JRPC_INVALID_REQUEST;
		snprintf(out->message, sizeof(out->message), "Invalid Request: %s", text);
	} else {
		out->code = MIRROR_HEADER_MISMATCH;
		snprintf(out->message, sizeof(out->message), "Header mismatch: %s", text);
	}
	json_decref(out->data);
	out->data = json_object();
	if (out->data) {
		if (header)
			json_object_set_new(out->data, "header", json_string(header));
		json_object_set_new(out->data, "reason", json_string(mirror_reason_str(reason)));
		if (body_path)
			json_object_set_new(out->data, "body", json_string(body_path));
	}
	return -1;
}

void mirror_result_fini(struct mirror_result *out)
{
	if (!out)
		return;
	json_decref(out->data);
	out->data = NULL;
}

/* ---- era ------------------------------------------------------------------- */

enum mirror_era mirror_era_of(const struct http_msg *req, const json_t *body,
                              const char **version)
{
	const char *hv = req ? http_msg_get(req, HH_MCP_PROTOCOL_VERSION) : NULL;
	const char *m = json_is_object(body) ? jrpc_method(body) : NULL;

	if (version)
		*version = hv;
	if (m && strcmp(m, "initialize") == 0)
		return MIRROR_ERA_STATEFUL;
	const char *ev = json_is_object(body) ? envelope_version(body) : NULL;
	if (ev) {
		if (version)
			*version = ev;
		return MIRROR_ERA_2026;
	}
	return version_is_2026(hv) ? MIRROR_ERA_2026 : MIRROR_ERA_STATEFUL;
}

/* ---- the standard headers ---------------------------------------------------- */

/* One of MCP-Protocol-Version, Mcp-Method, Mcp-Name: present at most once,
 * header-safe, and decoded when it mirrors a body value (decode: Mcp-Name
 * of a method that defines it). A header the method does not define is
 * only held to having no control characters. *found says whether it was
 * there. Returns 0 or -1 (out filled). */
static int standard_header(const struct http_msg *req, const char *lname, const char *display,
                           const char *body_path, int decode, int defined, struct hvalue *hv,
                           int *found, struct mirror_result *out)
{
	const char *v;
	size_t vl;
	size_t n = header_count(req, lname, NULL, &v, &vl);

	*found = n > 0;
	hv->owned = NULL;
	hv->bytes = v;
	hv->len = vl;
	if (n > 1)
		return fail(out, MIRROR_REPEATED, display, body_path, "%s header is repeated", display);
	if (n == 0)
		return 0;
	if (!chars_ok(v, vl, !defined))
		return fail(out, MIRROR_BAD_CHARS, display, body_path,
		            "%s header has characters that must be Base64-encoded", display);
	if (decode && hvalue_decode(v, vl, hv) < 0)
		return fail(out, MIRROR_UNDECODABLE, display, body_path,
		            "%s header is not valid Base64 (=?base64?...?=)", display);
	return 0;
}

/* The body member that Mcp-Name mirrors for a method, or NULL; *required
 * says whether the header must be present. */
static const char *name_source(const char *method, int *required)
{
	*required = 1;
	if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
		return "name";
	if (strcmp(method, "resources/read") == 0)
		return "uri";
	/* The tasks extension mirrors taskId too; it is an extension, so the
	 * header is checked when sent but not demanded. */
	*required = 0;
	if (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
	    strcmp(method, "tasks/cancel") == 0)
		return "taskId";
	return NULL;
}

static int check_standard(const struct http_msg *req, const json_t *msg, int is_request,
                          struct mirror_result *out)
{
	struct hvalue hv;
	int found;
	const char *method = jrpc_method(msg);

	/* MCP-Protocol-Version */
	static const char vpath[] = "params._meta." MIRROR_META_VERSION;
	if (standard_header(req, "mcp-protocol-version", "MCP-Protocol-Version", vpath, 0, 1, &hv,
	                    &found, out) < 0)
		return -1;
	const char *ev = envelope_version(msg);
	if (!found && is_request)
		return fail(out, MIRROR_MISSING, "MCP-Protocol-Version", vpath,
		            "MCP-Protocol-Version header is missing");
	if (found && ev && !bytes_eq(hv.bytes, hv.len, ev, strlen(ev)))
		return fail(out, MIRROR_MISMATCH, "MCP-Protocol-Version", vpath,
		            "MCP-Protocol-Version header does not match %s", vpath);
	if (!method)
		return 0; /* a response: nothing else is mirrored */

	/* Mcp-Method */
	if (standard_header(req, "mcp-method", "Mcp-Method", "method", 0, 1, &hv, &found,
	                    out) < 0)
		return -1;
	if (!found && is_request)
		return fail(out, MIRROR_MISSING, "Mcp-Method", "method", "Mcp-Method header is missing");
	if (found && !bytes_eq(hv.bytes, hv.len, method, strlen(method)))
		return fail(out, MIRROR_MISMATCH, "Mcp-Method", "method",
		            "Mcp-Method header does not match the method");

	/* Mcp-Name */
	int required;
	const char *member = name_source(method, &required);
	char npath[32];
	snprintf(npath, sizeof(npath), "params.%s", member ? member : "name");
	if (standard_header(req, "mcp-name", "Mcp-Name", npath, member != NULL, member != NULL, &hv,
	                    &found, out) < 0)
		return -1;
	int rc = 0;
	if (member) {
		const json_t *bv = json_object_get(params_of(msg), member);
		if (!found && required && is_request)
			rc = fail(out, MIRROR_MISSING, "Mcp-Name", npath, "Mcp-Name header is missing");
		else if (found && !str_eq_json(&hv, bv))
			rc = fail(out, MIRROR_MISMATCH, "Mcp-Name", npath,
			          "Mcp-Name header does not match %s", npath);
	}
	free(hv.owned);
	return rc;
}

/* ---- Mcp-Param-* ------------------------------------------------------------- */

struct param {
	const char *header;                  /* borrowed from the tool */
	const char *path[MIRROR_MAX_DEPTH];  /* property names from the root */
	size_t depth;
	int valid;
};

struct params {
	struct param p[MIRROR_MAX_PARAMS];
	size_t n;
};

/* RFC 9110 tchar, in ASCII whatever the locale. */
static int is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int is_token(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)s[i]))
			return 0;
	return 1;
}

/* Whether a property schema's "type" allows a header: string, integer or
 * boolean, possibly nullable; no type at all is left to the body value. */
static int type_allows_header(const json_t *prop)
{
	const json_t *t = json_object_get(prop, "type");
	if (!t)
		return 1;
	size_t n = json_is_array(t) ? json_array_size(t) : 1, prim = 0;
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_is_array(t) ? json_array_get(t, i) : t);
		if (!s)
			return 0;
		if (strcmp(s, "string") == 0 || strcmp(s, "integer") == 0 || strcmp(s, "boolean") == 0)
			prim++;
		else if (strcmp(s, "null") != 0)
			return 0; /* number, object, array: never mirrored */
	}
	return prim > 0;
}

/* Collects the x-mcp-header annotations reached from the root through
 * "properties" alone (annotations anywhere else are invalid and no client
 * sends them). path holds the names so far. */
static void collect(struct params *ps, const json_t *schema, const char **path, size_t depth)
{
	const json_t *props = json_object_get(schema, "properties");
	const char *key;
	const json_t *prop;

	if (!json_is_object(props) || depth >= MIRROR_MAX_DEPTH)
		return;
	json_object_foreach((json_t *)(uintptr_t)props, key, prop) {
		if (!json_is_object(prop))
			continue;
		path[depth] = key;
		const json_t *h = json_object_get(prop, "x-mcp-header");
		if (h && ps->n < MIRROR_MAX_PARAMS) {
			struct param *p = &ps->p[ps->n++];
			p->header = json_string_value(h);
			p->valid = p->header && is_token(p->header, strlen(p->header)) &&
			           type_allows_header(prop);
			p->depth = depth + 1;
			memcpy(p->path, path, p->depth * sizeof(*path));
		}
		collect(ps, prop, path, depth + 1);
	}
}

/* Two annotations naming one header (ignoring case) make the tool invalid
 * for clients; neither is honoured here either. */
static void drop_duplicates(struct params *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		for (size_t j = i + 1; j < ps->n; j++) {
			if (ps->p[i].header && ps->p[j].header &&
			    strcasecmp(ps->p[i].header, ps->p[j].header) == 0)
				ps->p[i].valid = ps->p[j].valid = 0;
		}
	}
}

static const json_t *argument_at(const json_t *args, const struct param *p)
{
	const json_t *v = args;
	for (size_t i = 0; i < p->depth && v; i++)
		v = json_is_object(v) ? json_object_get(v, p->path[i]) : NULL;
	return v;
}

static void param_path(char *dst, size_t cap, const struct param *p)
{
	size_t o = 0;
	int w = snprintf(dst, cap, "params.arguments");
	o = w > 0 ? (size_t)w : 0;
	for (size_t i = 0; i < p->depth && o + 2 < cap; i++) {
		dst[o++] = '.';
		safe_copy(dst + o, cap - o, p->path[i], strlen(p->path[i]));
		o += strlen(dst + o);
	}
}

static int check_param(const struct http_msg *req, const json_t *args, const struct param *p,
                       struct mirror_result *out)
{
	char hname[96], display[112], bpath[160];
	const char *v;
	size_t vl;

	safe_copy(hname, sizeof(hname), p->header, strlen(p->header));
	snprintf(display, sizeof(display), "Mcp-Param-%s", hname);
	param_path(bpath, sizeof(bpath), p);

	size_t n = header_count(req, PARAM_PREFIX, p->header, &v, &vl);
	const json_t *bv = argument_at(args, p);
	if (json_is_null(bv))
		bv = NULL; /* null and absent both mean "no header" */
	if (n > 1)
		return fail(out, MIRROR_REPEATED, display, bpath, "%s header is repeated", display);
	if (n == 0) {
		if (bv && !json_is_object(bv) && !json_is_array(bv))
			return fail(out, MIRROR_MISSING, display, bpath, "%s header is missing for %s",
			            display, bpath);
		return 0;
	}
	if (!chars_ok(v, vl, 0))
		return fail(out, MIRROR_BAD_CHARS, display, bpath,
		            "%s header has characters that must be Base64-encoded", display);
	struct hvalue hv;
	if (hvalue_decode(v, vl, &hv) < 0)
		return fail(out, MIRROR_UNDECODABLE, display, bpath,
		            "%s header is not valid Base64 (=?base64?...?=)", display);
	int ok = bv && value_matches(&hv, bv);
	free(hv.owned);
	if (!ok)
		return fail(out, MIRROR_MISMATCH, display, bpath, "%s header does not match %s",
		            display, bpath);
	return 0;
}

static int check_params(const struct http_msg *req, const json_t *msg, const json_t *tool,
                        struct mirror_result *out)
{
	/* Whatever the tool, no Mcp-Param-* may carry control characters: even
	 * unknown ones are forwarded, and the next hop must not see them. */
	for (size_t i = 0;; i++) {
		const char *hn, *hv;
		size_t hnl, hvl;
		size_t pl = strlen(PARAM_PREFIX);
		if (http_msg_header_at(req, i, &hn, &hnl, &hv, &hvl) < 0)
			break;
		if (hnl > pl && strncasecmp(hn, PARAM_PREFIX, pl) == 0 && !chars_ok(hv, hvl, 1)) {
			char name[112];
			safe_copy(name, sizeof(name), hn, hnl);
			return fail(out, MIRROR_BAD_CHARS, name, NULL, "%s header has control characters",
			            name);
		}
	}
	const char *method = jrpc_method(msg);
	if (!tool || !method || strcmp(method, "tools/call") != 0)
		return 0;
	const json_t *schema = json_object_get(tool, "inputSchema");
	if (!json_is_object(schema))
		return 0;

	struct params ps; /* ~10 KB, bounded by MIRROR_MAX_PARAMS */
	const char *path[MIRROR_MAX_DEPTH];
	ps.n = 0;
	collect(&ps, schema, path, 0);
	drop_duplicates(&ps);
	const json_t *args = json_object_get(params_of(msg), "arguments");
	for (size_t i = 0; i < ps.n; i++)
		if (ps.p[i].valid && check_param(req, args, &ps.p[i], out) < 0)
			return -1;
	return 0;
}

/* ---- the check ------------------------------------------------------------- */

int mirror_check(const struct http_msg *req, const json_t *body, const json_t *tool,
                 struct mirror_result *out)
{
	memset(out, 0, sizeof(*out));
	if (!req || !body || mirror_era_of(req, body, NULL) != MIRROR_ERA_2026)
		return 0;
	if (json_is_array(body))
		return fail(out, MIRROR_BATCH, NULL, NULL,
		            "JSON-RPC batches are not part of protocol version 2026-07-28");
	if (!json_is_object(body))
		return 0;
	enum jrpc_kind kind = jrpc_classify(body);
	if (check_standard(req, body, kind == JRPC_REQUEST, out) < 0)
		return -1;
	if (kind == JRPC_REQUEST && check_params(req, body, tool, out) < 0)
		return -1;
	return 0;
}

json_t *mirror_error_response(const json_t *body, const struct mirror_result *r)
{
	const json_t *id = json_is_object(body) ? jrpc_id(body) : NULL;
	json_t *data = r->data ? json_deep_copy(r->data) : NULL;
	return jrpc_error_new(id, r->code, r->message, data);
}

/* ---- the proxy's own errors ---------------------------------------------- */

int mirror_proxy_code(enum mirror_era era, int status, int legacy_code)
{
	if (era != MIRROR_ERA_2026)
		return legacy_code;
	if (legacy_code < -32768 || legacy_code > -32000)
		return legacy_code; /* already an application code */
	if (legacy_code == JRPC_PARSE_ERROR ||
	    (legacy_code <= JRPC_INVALID_REQUEST && legacy_code >= JRPC_INTERNAL_ERROR))
		return legacy_code;
	if (legacy_code <= MIRROR_HEADER_MISMATCH && legacy_code >= MIRROR_UNSUPPORTED_VERSION)
		return legacy_code;
	if (status < 100 || status > 599)
		status = 500;
	return MIRROR_PROXY_CODE(status);
}

json_t *mirror_proxy_error(enum mirror_era era, const json_t *id, int status, int legacy_code,
                           const char *message, json_t *data)
{
	return jrpc_error_new(id, mirror_proxy_code(era, status, legacy_code), message, data);
}

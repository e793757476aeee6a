/* mirror: the 2026-07-28 mirrored request headers, checked against the body.
 *
 * MCP 2026-07-28 copies parts of every POSTed request into HTTP headers so
 * that intermediaries can route without parsing the body:
 *
 *   MCP-Protocol-Version  = params._meta["io.modelcontextprotocol/protocolVersion"]
 *   Mcp-Method            = method
 *   Mcp-Name              = params.name (tools/call, prompts/get),
 *                           params.uri (resources/read),
 *                           params.taskId (tasks/get|update|cancel, tasks ext.)
 *   Mcp-Param-<H>         = arguments.<path> where the tool's inputSchema
 *                           annotates that property with "x-mcp-header": "<H>"
 *
 * Whoever processes the body must refuse a request whose headers are
 * missing, disagree with the body or carry bad characters, with HTTP 400 and
 * JSON-RPC error -32020 (HeaderMismatch), before anything trusts them.
 * mcpwarden reads every body, so it does that here.
 *
 * This module is pure: no I/O, no state. It decides the era of a request
 * (mirror_era_of), checks the headers of a 2026-era request
 * (mirror_check), and maps the proxy's own errors onto codes the request's
 * era allows (mirror_proxy_code / mirror_proxy_error). It does not look the
 * tool up (the caller passes it: see proxy/hooks/tools.h), rewrite headers, or
 * validate the _meta envelope itself (a missing clientCapabilities is the
 * upstream's -32602 to give).
 */
#ifndef MCPWARDEN_MIRROR_H
#define MCPWARDEN_MIRROR_H

#include <jansson.h>

struct http_msg;

#define MIRROR_HEADER_MISMATCH       (-32020)
#define MIRROR_MISSING_CAPABILITY    (-32021)
#define MIRROR_UNSUPPORTED_VERSION   (-32022)

/* The first protocol version of the stateless era. Versions are dates;
 * any version that sorts at or after it is of this era. */
#define MIRROR_VERSION_2026          "2026-07-28"

/* _meta key carrying the protocol version of a 2026-era request. */
#define MIRROR_META_VERSION          "io.modelcontextprotocol/protocolVersion"

enum mirror_era {
	/* initialize + sessions (2024-11-05 .. 2025-11-25), or nothing says
	 * otherwise: no check applies. */
	MIRROR_ERA_STATEFUL = 0,
	/* per-request metadata (2026-07-28 and later): headers are checked. */
	MIRROR_ERA_2026,
};

const char *mirror_era_str(enum mirror_era era); /* "stateful", "2026" */

/* Which era a POSTed request belongs to. req is the request head; body the
 * parsed POST body, or NULL when there is none (or it could not be parsed).
 * Both borrowed.
 *
 *   - an "initialize" request is of the stateful era, whatever else it says;
 *   - a body whose params._meta names a protocol version (a string) is of
 *     the 2026 era, whatever version it names: the envelope is the era's
 *     mark, and the upstream answers -32022 for versions it does not serve;
 *   - otherwise an MCP-Protocol-Version header naming 2026-07-28 or later
 *     makes it a 2026 request (a batch, or a request missing its envelope);
 *   - anything else is stateful.
 *
 * *version (may be NULL) receives the version that decided, borrowed from
 * body or req (envelope first, then the header), or NULL. */
enum mirror_era mirror_era_of(const struct http_msg *req, const json_t *body,
                              const char **version);

/* Why a check failed, for data.reason and the metrics. */
enum mirror_reason {
	MIRROR_OK = 0,
	MIRROR_MISSING,      /* a header the body calls for is absent */
	MIRROR_MISMATCH,     /* the header (decoded) disagrees with the body */
	MIRROR_UNDECODABLE,  /* a =?base64?…?= value that is not Base64 */
	MIRROR_BAD_CHARS,    /* control characters, or raw non-ASCII bytes */
	MIRROR_REPEATED,     /* the header appears more than once */
	MIRROR_BATCH,        /* a JSON-RPC batch in an era without batches */
};

const char *mirror_reason_str(enum mirror_reason r); /* "missing", … */

struct mirror_result {
	int status;              /* HTTP status to answer with (400), 0 when ok */
	int code;                /* JSON-RPC code (-32020, or -32600), 0 when ok */
	enum mirror_reason reason;
	char message[256];       /* one line, never a header's value */
	/* owned: {"header": "Mcp-Name", "reason": "mismatch",
	 *         "body": "params.name"} or NULL. Free it with
	 * mirror_result_fini(), or steal it (set it to NULL). */
	json_t *data;
};

/* Checks the mirrored headers of one POSTed request against its body.
 * Requests of the stateful era are never checked (returns 0 at once).
 *
 * req, body: the request head and its parsed body (borrowed; body may be
 * NULL: nothing to compare, returns 0). tool: the tool definition named by
 * a tools/call, as the upstream last listed it (borrowed), or NULL when
 * unknown: then Mcp-Param-* headers are not checked (they still must not
 * carry control characters). Unknown Mcp-Param-* headers are fine.
 *
 * Requests must carry MCP-Protocol-Version and Mcp-Method, plus Mcp-Name
 * for tools/call, prompts/get and resources/read; notifications and
 * responses only must not disagree with what they do carry.
 *
 * Returns 0 (out->status == 0, out->data NULL) or -1 with out filled in:
 * the first failure in the order the spec lists the headers. out is
 * always initialised. */
int mirror_check(const struct http_msg *req, const json_t *body, const json_t *tool,
                 struct mirror_result *out);

/* Releases out->data. */
void mirror_result_fini(struct mirror_result *out);

/* The whole JSON-RPC error response for a failed check (owned), with the
 * id of the request in body (null when it has none): send it with
 * r->status. r->data is copied, not stolen. */
json_t *mirror_error_response(const json_t *body, const struct mirror_result *r);

/* ---- errors mcpwarden makes itself ------------------------------------------
 *
 * The JSON-RPC code for an error of mcpwarden's own (502, 504, 413, 400…),
 * given the era of the request it answers and the code the stateful era
 * uses (legacy_code, e.g. JRPC_UPSTREAM_ERROR -32000).
 *
 * 2026-07-28 says nothing about errors an intermediary makes up: the shape
 * is the ordinary JSON-RPC error with the request's id (null when it could
 * not be read), and the codes obey the era's ranges (basic/index "Error
 * Codes"): -32000..-32019 are legacy and new implementations SHOULD NOT
 * use them, -32020..-32099 are the spec's own and MUST NOT be emitted
 * unless defined, and new application codes SHOULD lie outside
 * -32768..-32000. So in the 2026 era:
 *   - the JSON-RPC 2.0 standard codes (-32700, -32600..-32603) stay;
 *   - the spec's defined codes (-32020..-32022) stay;
 *   - anything else in -32768..-32000 becomes MIRROR_PROXY_CODE(status):
 *     -31000 - status (502 -> -31502, 504 -> -31504, 413 -> -31413), an
 *     application code outside the reserved block that still names the
 *     HTTP status the client got.
 * The stateful era keeps legacy_code (its -32000..-32099 are
 * implementation-defined, docs/transports.md "Error codes"). */
#define MIRROR_PROXY_CODE(status)    (-31000 - (status))

int mirror_proxy_code(enum mirror_era era, int status, int legacy_code);

/* A whole error response for an error of the proxy's own (owned): id
 * borrowed and copied (NULL -> null), message borrowed, data stolen (may be
 * NULL), the code mapped by mirror_proxy_code(). */
json_t *mirror_proxy_error(enum mirror_era era, const json_t *id, int status, int legacy_code,
                           const char *message, json_t *data);

#endif

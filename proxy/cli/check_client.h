/* check_client: the network half of `mcpwarden check URL` (check.h): a
 * small MCP client that lists every page of a server's tools, on its own
 * event loop with the upstream module (so https works wherever the proxy's
 * upstreams do). It connects in the newest era the server speaks
 * (server/discover, then initialize; legacy HTTP+SSE as a fallback) and
 * ends the session (DELETE). Nothing blocks: no blocking sockets, one loop.
 *
 * Not here: options, the contract and baseline report (check.c). It
 * prints nothing but a bad URL; the caller prints the result.
 */
#ifndef MCPWARDEN_CHECK_CLIENT_H
#define MCPWARDEN_CHECK_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#include "proxy/cli/cli_out.h"

/* One --header: sent as is, never printed (CLI_MASK instead). */
struct check_header {
	char *name;  /* owned by the caller's options */
	char *wire;  /* owned: the value with ${ENV} filled in */
};

/* What the client needs of check's options (all borrowed for the run). */
struct check_client_target {
	const char *url;
	const char *transport;               /* "auto", "streamable_http" or "sse" */
	const char *protocol;                /* --protocol, or NULL */
	const struct check_header *headers;
	size_t nheaders;
	double timeout_s;
	struct cli_secrets *sec;             /* the URL's password is added */
	/* Sessions with arbitrary requests (replay.h); all NULL/0 for check. */
	const char *cmd;             /* prefix of the bad-URL message; NULL: "check" */
	const json_t *client_info;   /* initialize clientInfo; NULL: mcpwarden-check */
	const json_t *capabilities;  /* the client's capabilities; NULL: {} */
	/* Requests issued in order once the session is up (after the listing
	 * unless skip_list): an array of {"method": M, "params": {...},
	 * "headers"?: {"Mcp-Param-X": "value"...}}. In the 2026-07-28 era each
	 * params._meta gets the per-request envelope, and the headers (encoded
	 * like Mcp-Name when not header-safe) are sent; other eras ignore them. */
	const json_t *calls;
	int skip_list;               /* with calls: no tools/list */
};

/* replies[i] of a run with calls: {"response": <the JSON-RPC response>}
 * or {"error": "why no response came"} (HTTP status, transport, timeout),
 * and "ms": the latency. A call's failure does not stop the session. */

/* What a run found. check_client_result_fini frees it. */
struct check_client_result {
	char *url_shown;        /* owned: printable URL (no user, password, query) */
	json_t *pages;          /* owned: the tools/list results, in order */
	json_t *notes;          /* owned: array of strings (fallbacks, redirects) */
	const char *transport;  /* static: "streamable_http" or "sse" */
	char *era;              /* owned: the negotiated version, or NULL */
	char *error;            /* owned: why the run failed, or NULL */
	json_t *replies;        /* owned: one per target call (see above), or NULL */
};

/* Runs the client on t until the listing is complete or it fails.
 * Returns 0 with *r filled (r->error says whether it failed), 1 when out
 * of memory (r->url_shown and r->notes as far as they got), or -1 after
 * printing on stderr that t->url is not a URL. Call
 * check_client_result_fini(r) in every case. */
int check_client_run(const struct check_client_target *t, struct check_client_result *r);

void check_client_result_fini(struct check_client_result *r);

/* Parses one --header 'Name: value' for command cmd ("replay"): a token
 * name that mcpwarden does not set itself, ${ENV} filled in (each value a
 * secret), no control characters; credential-like values go into sec.
 * Fills *out (owned strings: check_client_header_fini). Returns 0, or -1
 * after printing why on stderr (never the value). */
int check_client_header_parse(const char *cmd, const char *arg, struct check_header *out,
                              struct cli_secrets *sec);
void check_client_header_fini(struct check_header *h);

#endif

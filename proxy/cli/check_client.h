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
};

/* What a run found. check_client_result_fini frees it. */
struct check_client_result {
	char *url_shown;        /* owned: printable URL (no user, password, query) */
	json_t *pages;          /* owned: the tools/list results, in order */
	json_t *notes;          /* owned: array of strings (fallbacks, redirects) */
	const char *transport;  /* static: "streamable_http" or "sse" */
	char *era;              /* owned: the negotiated version, or NULL */
	char *error;            /* owned: why the run failed, or NULL */
};

/* Runs the client on t until the listing is complete or it fails.
 * Returns 0 with *r filled (r->error says whether it failed), 1 when out
 * of memory (r->url_shown and r->notes as far as they got), or -1 after
 * printing on stderr that t->url is not a URL. Call
 * check_client_result_fini(r) in every case. */
int check_client_run(const struct check_client_target *t, struct check_client_result *r);

void check_client_result_fini(struct check_client_result *r);

#endif

/* origin: Host and Origin checks against DNS rebinding and cross-site use.
 *
 * A browser page on evil.example can make a victim's browser POST to
 * http://127.0.0.1:8080/mcp; MCP says servers MUST validate Origin, and a
 * rebinding attack also shows up as a foreign Host. Pure functions over
 * the header values and the configured lists; no I/O.
 */
#ifndef MCPWARDEN_ORIGIN_H
#define MCPWARDEN_ORIGIN_H

#include <stddef.h>

struct origin_policy {
	const char *const *hosts;    /* allowed Host names (no port), or NULL */
	size_t nhosts;
	const char *const *origins;  /* allowed Origins ("https://app.example:8443") */
	size_t norigins;
	int loopback_only;           /* the listener is on loopback and no host
	                              * list is configured: only loopback names */
};

/* Whether a Host header value (NULL: absent) is acceptable. */
int origin_host_allowed(const struct origin_policy *p, const char *host);

/* Whether an Origin header value is acceptable: absent (non-browser
 * clients), listed, or the same host as the request's Host ("same-host":
 * the page was served by whoever answers at this address). */
int origin_origin_allowed(const struct origin_policy *p, const char *origin, const char *host);

#endif

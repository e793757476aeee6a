/* origin: see origin.h. */
#include "proxy/net/origin.h"

#include <string.h>
#include <strings.h>

/* Length of the host part of "host[:port]" or "[v6][:port]", or 0 when
 * the value is malformed. *start receives where it begins. */
static size_t host_part(const char *hp, const char **start)
{
	if (hp[0] == '[') {
		const char *end = strchr(hp, ']');
		if (!end || (end[1] && end[1] != ':'))
			return 0;
		*start = hp + 1;
		return (size_t)(end - hp - 1);
	}
	*start = hp;
	size_t n = strcspn(hp, ":");
	if (hp[n] == ':' && strchr(hp + n + 1, ':'))
		return 0; /* bare IPv6 without brackets is not a valid Host */
	return n;
}

static int name_is(const char *s, size_t n, const char *want)
{
	return strlen(want) == n && strncasecmp(s, want, n) == 0;
}

static int is_loopback_name(const char *s, size_t n)
{
	if (name_is(s, n, "localhost") || name_is(s, n, "::1"))
		return 1;
	/* 127.0.0.0/8, written in dotted decimal. */
	if (n < 9 || strncmp(s, "127.", 4) != 0)
		return 0;
	for (size_t i = 4; i < n; i++)
		if (!(s[i] == '.' || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

int origin_host_allowed(const struct origin_policy *p, const char *host)
{
	const char *h;
	size_t n;

	if (p->nhosts == 0 && !p->loopback_only)
		return 1;
	if (!host || !(n = host_part(host, &h)))
		return 0;
	for (size_t i = 0; i < p->nhosts; i++)
		if (name_is(h, n, p->hosts[i]))
			return 1;
	return p->nhosts == 0 && is_loopback_name(h, n);
}

int origin_origin_allowed(const struct origin_policy *p, const char *origin, const char *host)
{
	if (!origin)
		return 1;
	for (size_t i = 0; i < p->norigins; i++)
		if (strcasecmp(origin, p->origins[i]) == 0)
			return 1;
	/* "null" (sandboxed frames, file: pages) is never same-host. */
	const char *sep = strstr(origin, "://");
	if (!host || !sep)
		return 0;
	const char *o = sep + 3;
	/* Same host and port as the request was sent to. */
	return strcasecmp(o, host) == 0;
}

/* media: see media.h. */
#include "proxy/base/media.h"

#include <string.h>
#include <strings.h>

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* After type/subtype: the end, or the parameters. */
static int rest_ok(const char *p)
{
	p = skip_ows(p);
	return *p == '\0' || *p == ';';
}

int media_is(const char *ct, const char *type)
{
	if (!ct)
		return 0;
	ct = skip_ows(ct);
	size_t n = strlen(type);
	return strncasecmp(ct, type, n) == 0 && rest_ok(ct + n);
}

int media_is_json(const char *ct)
{
	if (!ct)
		return 0;
	ct = skip_ows(ct);
	size_t n = strcspn(ct, "; \t");
	const char *slash = memchr(ct, '/', n);
	if (!slash || slash == ct || !rest_ok(ct + n))
		return 0;
	static const char json[] = "application/json", suffix[] = "+json";
	size_t sl = sizeof(suffix) - 1;
	if (n == sizeof(json) - 1 && strncasecmp(ct, json, n) == 0)
		return 1;
	/* The suffix ends the subtype, which must have more before it. */
	return (size_t)(ct + n - slash - 1) > sl && strncasecmp(ct + n - sl, suffix, sl) == 0;
}

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

int media_is_n(const char *ct, const char *type, size_t n)
{
	if (!ct)
		return 0;
	ct = skip_ows(ct);
	return strncasecmp(ct, type, n) == 0 && rest_ok(ct + n);
}

int media_is_json(const char *ct)
{
	/* application/json first: what nearly every reply says, and the
	 * cheaper test (this runs once per upstream reply). */
	if (!ct || media_is(ct, "application/json"))
		return ct != NULL;
	ct = skip_ows(ct);
	size_t n = 0;
	while (ct[n] && ct[n] != ';' && ct[n] != ' ' && ct[n] != '\t')
		n++;
	const char *slash = memchr(ct, '/', n);
	if (!slash || slash == ct || !rest_ok(ct + n))
		return 0;
	/* The suffix ends the subtype, which must have more before it. */
	static const char suffix[] = "+json";
	size_t sl = sizeof(suffix) - 1;
	return (size_t)(ct + n - slash - 1) > sl && strncasecmp(ct + n - sl, suffix, sl) == 0;
}

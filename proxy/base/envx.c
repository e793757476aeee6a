/* envx: see envx.h. */
#include "proxy/base/envx.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(ENVX_NAME_MAX == 127, "ENVX_RULE spells the maximum out");

static const char *get_env(void *arg, const char *name)
{
	(void)arg;
	return getenv(name);
}

static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n > ENVX_NAME_MAX || isdigit((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

static char *fail_with(char *out, struct envx_fail *fail, enum envx_why why)
{
	free(out);
	fail->why = why;
	return NULL;
}

char *envx_expand(const char *v, envx_get_fn *get, void *arg, struct envx_fail *fail)
{
	fail->why = ENVX_OK;
	fail->name[0] = '\0';
	if (!get)
		get = get_env;
	size_t cap = strlen(v) + 1, used = 0;
	char *out = malloc(cap);
	if (!out)
		return fail_with(NULL, fail, ENVX_NOMEM);
	while (*v) {
		const char *val, *end;
		size_t vl = 1;
		if (v[0] == '$' && v[1] == '{' && (end = strchr(v + 2, '}'))) {
			size_t nl = (size_t)(end - v - 2);
			if (!name_ok(v + 2, nl))
				return fail_with(out, fail, ENVX_BAD_NAME);
			memcpy(fail->name, v + 2, nl);
			fail->name[nl] = '\0';
			val = get(arg, fail->name);
			if (!val)
				return fail_with(out, fail, ENVX_UNSET);
			fail->name[0] = '\0';
			vl = strlen(val);
			v = end + 1;
		} else {
			val = v++;
		}
		if (used + vl + 1 > cap) {
			cap = (used + vl + 1) * 2;
			char *bigger = realloc(out, cap);
			if (!bigger)
				return fail_with(out, fail, ENVX_NOMEM);
			out = bigger;
		}
		memcpy(out + used, val, vl);
		used += vl;
	}
	out[used] = '\0';
	return out;
}

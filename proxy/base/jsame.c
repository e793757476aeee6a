/* jsame: see jsame.h.
 *
 *   jsame ── v[0..n)  one reference each (n == 0 with valid 0: nothing kept)
 */
#include "proxy/base/jsame.h"

#include <stdint.h>
#include <stdlib.h>

struct jsame {
	json_t **v;   /* owned array of cap slots; v[0..n) held */
	size_t n, cap;
	int valid;    /* v[0..n) is an array taken in (n may be 0) */
};

struct jsame *jsame_new(void)
{
	return calloc(1, sizeof(struct jsame));
}

void jsame_clear(struct jsame *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		json_decref(s->v[i]);
	s->n = 0;
	s->valid = 0;
}

void jsame_free(struct jsame *s)
{
	if (!s)
		return;
	jsame_clear(s);
	free(s->v);
	free(s);
}

long jsame_diff(const struct jsame *s, const json_t *array, size_t *pos, size_t max)
{
	if (!s || !s->valid || !json_is_array(array) || json_array_size(array) != s->n)
		return -1;
	long k = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (json_array_get(array, i) == s->v[i])
			continue;
		if ((size_t)k == max)
			return -1;
		pos[k++] = i;
	}
	return k;
}

long jsame_few(const struct jsame *s, const json_t *array, size_t pos[JSAME_FEW])
{
	size_t eighth = json_array_size(array) / 8;
	return jsame_diff(s, array, pos, eighth < JSAME_FEW ? eighth : JSAME_FEW);
}

static int keep_all(struct jsame *s, const json_t *array)
{
	size_t n = json_array_size(array);
	if (n > s->cap) {
		json_t **nv = realloc(s->v, n * sizeof(*nv));
		if (!nv)
			return -1;
		s->v = nv;
		s->cap = n;
	}
	/* The new references first: a value in both arrays is never let go
	 * of in between. */
	for (size_t i = 0; i < n; i++)
		json_incref(json_array_get(array, i));
	for (size_t i = 0; i < s->n; i++)
		json_decref(s->v[i]);
	for (size_t i = 0; i < n; i++)
		s->v[i] = json_array_get(array, i);
	s->n = n;
	s->valid = 1;
	return 0;
}

int jsame_keep(struct jsame *s, const json_t *array, const size_t *pos, long npos)
{
	if (!s)
		return -1;
	if (!json_is_array(array)) {
		jsame_clear(s);
		return -1;
	}
	if (npos < 0 || !s->valid || json_array_size(array) != s->n) {
		if (keep_all(s, array) == 0)
			return 0;
		jsame_clear(s);
		return -1;
	}
	for (long k = 0; k < npos; k++) {
		size_t i = pos[k];
		if (i >= s->n)
			continue;
		json_t *v = json_incref(json_array_get(array, i));
		json_decref(s->v[i]);
		s->v[i] = v;
	}
	return 0;
}

const json_t *jsame_at(const struct jsame *s, size_t i)
{
	return s && i < s->n ? s->v[i] : NULL;
}

size_t jsame_size(const struct jsame *s)
{
	return s ? s->n : 0;
}

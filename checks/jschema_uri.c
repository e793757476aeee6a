/* jschema_uri.c: the URI arithmetic of $id and $ref (RFC 3986): parsing
 * into components, reference resolution (section 5.2) with dot-segment
 * removal, the fragment split and its percent-decoding. Bounded: every
 * result fits JSCHEMA_URI_MAX bytes or the call fails. No normalisation
 * beyond that (case, default ports, percent-encoding of the path are
 * compared as written, as the JSON Schema specs ask).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "checks/jschema_int.h"

/* ---- URIs (RFC 3986) ------------------------------------------------------------ */

struct uri {
	const char *scheme, *auth, *path, *query, *frag;
	size_t lscheme, lauth, lpath, lquery, lfrag;
	int has_scheme, has_auth, has_query, has_frag;
};

static void uri_parse(const char *s, struct uri *u)
{
	memset(u, 0, sizeof *u);
	const char *p = s;
	/* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
	if (isalpha((unsigned char)*p)) {
		const char *q = p + 1;
		while (isalnum((unsigned char)*q) || *q == '+' || *q == '-' || *q == '.')
			q++;
		if (*q == ':') {
			u->has_scheme = 1;
			u->scheme = p;
			u->lscheme = (size_t)(q - p);
			p = q + 1;
		}
	}
	if (p[0] == '/' && p[1] == '/') {
		p += 2;
		u->has_auth = 1;
		u->auth = p;
		while (*p && *p != '/' && *p != '?' && *p != '#')
			p++;
		u->lauth = (size_t)(p - u->auth);
	}
	u->path = p;
	while (*p && *p != '?' && *p != '#')
		p++;
	u->lpath = (size_t)(p - u->path);
	if (*p == '?') {
		u->has_query = 1;
		u->query = ++p;
		while (*p && *p != '#')
			p++;
		u->lquery = (size_t)(p - u->query);
	}
	if (*p == '#') {
		u->has_frag = 1;
		u->frag = p + 1;
		u->lfrag = strlen(u->frag);
	}
}

/* RFC 3986 5.2.4, in place on a NUL-terminated path. */
static void remove_dots(char *in)
{
	char *out = in, *r = in;
	size_t o = 0;

	while (*r) {
		if (strncmp(r, "../", 3) == 0) {
			r += 3;
		} else if (strncmp(r, "./", 2) == 0) {
			r += 2;
		} else if (strncmp(r, "/./", 3) == 0) {
			r += 2;
		} else if (strcmp(r, "/.") == 0) {
			r[1] = '\0';
		} else if (strncmp(r, "/../", 4) == 0 || strcmp(r, "/..") == 0) {
			if (r[3] == '/')
				r += 3;
			else {
				r += 2;
				*r = '/';
			}
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else if (strcmp(r, ".") == 0 || strcmp(r, "..") == 0) {
			break;
		} else {
			do
				out[o++] = *r++;
			while (*r && *r != '/');
		}
	}
	out[o] = '\0';
}

static int cat(char *out, size_t *o, const char *s, size_t n)
{
	if (*o + n >= JSCHEMA_URI_MAX)
		return -1;
	memcpy(out + *o, s, n);
	*o += n;
	out[*o] = '\0';
	return 0;
}

/* The target URI of reference ref against base (both NUL-terminated);
 * -1 when too long. */
int jschema_uri_resolve(const char *base, const char *ref, char *out)
{
	struct uri b, r;
	char path[JSCHEMA_URI_MAX];
	size_t o = 0;
	const struct uri *auth_from, *query_from;

	uri_parse(base, &b);
	uri_parse(ref, &r);
	if (r.lpath >= JSCHEMA_URI_MAX || b.lpath + r.lpath + 2 >= JSCHEMA_URI_MAX)
		return -1;
	if (r.has_scheme || r.has_auth) {
		auth_from = &r;
		query_from = &r;
		memcpy(path, r.path, r.lpath);
		path[r.lpath] = '\0';
		remove_dots(path);
	} else if (r.lpath == 0) {
		auth_from = &b;
		query_from = r.has_query ? &r : &b;
		memcpy(path, b.path, b.lpath);
		path[b.lpath] = '\0';
	} else {
		auth_from = &b;
		query_from = &r;
		if (r.path[0] == '/') {
			memcpy(path, r.path, r.lpath);
			path[r.lpath] = '\0';
		} else if (b.has_auth && b.lpath == 0) {
			path[0] = '/';
			memcpy(path + 1, r.path, r.lpath);
			path[r.lpath + 1] = '\0';
		} else {
			size_t keep = b.lpath;
			while (keep > 0 && b.path[keep - 1] != '/')
				keep--;
			memcpy(path, b.path, keep);
			memcpy(path + keep, r.path, r.lpath);
			path[keep + r.lpath] = '\0';
		}
		remove_dots(path);
	}
	out[0] = '\0';
	const struct uri *sch = r.has_scheme ? &r : &b;
	if (sch->has_scheme && (cat(out, &o, sch->scheme, sch->lscheme) || cat(out, &o, ":", 1)))
		return -1;
	if (auth_from->has_auth &&
	    (cat(out, &o, "//", 2) || cat(out, &o, auth_from->auth, auth_from->lauth)))
		return -1;
	if (cat(out, &o, path, strlen(path)))
		return -1;
	if (query_from->has_query &&
	    (cat(out, &o, "?", 1) || cat(out, &o, query_from->query, query_from->lquery)))
		return -1;
	if (r.has_frag && (cat(out, &o, "#", 1) || cat(out, &o, r.frag, r.lfrag)))
		return -1;
	return 0;
}

/* Splits uri at '#': uri keeps the document, the fragment is returned
 * (NULL when none). */
char *jschema_uri_split_frag(char *uri)
{
	char *h = strchr(uri, '#');
	if (h == NULL)
		return NULL;
	*h = '\0';
	return h + 1;
}

void jschema_uri_percent_decode(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			char hex[3] = {s[1], s[2], 0};
			*o++ = (char)strtol(hex, NULL, 16);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

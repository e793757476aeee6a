/* secrets: see secrets.h. */
#include "admin/secrets.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin/admin_int.h"
#include "proxy/base/b64.h"
#include "proxy/base/log.h"
#include "proxy/config.h"
#include "proxy/hooks/redact.h"

/* A list of strings (owned) for redact_add_secrets. */
struct secrets {
	char **v;
	size_t n, cap;
	int oom;
};

static void sec_add(struct secrets *s, const char *v, size_t len)
{
	if (len < REDACT_MIN_VALUE_LEN || s->oom)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		char **nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv) {
			s->oom = 1;
			return;
		}
		s->v = nv;
		s->cap = cap;
	}
	char *c = strndup(v, len);
	if (!c) {
		s->oom = 1;
		return;
	}
	s->v[s->n++] = c;
}

static void sec_free(struct secrets *s)
{
	for (size_t i = 0; i < s->n; i++) {
		explicit_bzero(s->v[i], strlen(s->v[i]));
		free(s->v[i]);
	}
	free(s->v);
}

/* Credentials beyond this are not re-encoded (they are masked as sent). */
#define SEC_B64_MAX 3072

/* v's base64 (padded, the alphabet of an Authorization: Basic value). */
static void sec_add_b64(struct secrets *s, const char *v, size_t len)
{
	unsigned char out[SEC_B64_MAX / 3 * 4 + 8];
	if (len < REDACT_MIN_VALUE_LEN || len > SEC_B64_MAX)
		return;
	size_t n = b64_encode(v, len, (char *)out);
	if (n > 0)
		sec_add(s, (const char *)out, n);
	explicit_bzero(out, sizeof(out));
}

/* What a Basic credential (b64) encodes: user:password, the user, the
 * password. */
static void sec_add_basic(struct secrets *s, const char *b64, size_t len)
{
	unsigned char out[SEC_B64_MAX + 8];
	if (len == 0 || len % 4 || len / 4 * 3 > SEC_B64_MAX)
		return;
	long n = b64_decode(b64, len, out);
	if (n < 0)
		return;
	sec_add(s, (const char *)out, (size_t)n);
	const unsigned char *colon = memchr(out, ':', (size_t)n);
	if (colon) {
		sec_add(s, (const char *)out, (size_t)(colon - out));
		sec_add(s, (const char *)colon + 1, (size_t)(out + n - colon - 1));
	}
	explicit_bzero(out, sizeof(out));
}

/* A header value mcpwarden sends: as sent and in base64; when it is
 * "<scheme> <credentials>" (an Authorization header, or a Basic or Bearer
 * value in another one), the credentials alone too, and what a Basic
 * one encodes. */
static void sec_add_header(struct secrets *s, const char *name, const char *v)
{
	size_t len = strlen(v);
	sec_add(s, v, len);
	sec_add_b64(s, v, len);
	const char *sp = strchr(v, ' ');
	if (!sp)
		return;
	size_t slen = (size_t)(sp - v);
	int basic = slen == 5 && strncasecmp(v, "basic", 5) == 0;
	int bearer = slen == 6 && strncasecmp(v, "bearer", 6) == 0;
	if (!basic && !bearer && strcasecmp(name, "authorization") != 0 &&
	    strcasecmp(name, "proxy-authorization") != 0)
		return;
	while (*sp == ' ')
		sp++;
	size_t tl = strlen(sp);
	while (tl > 0 && sp[tl - 1] == ' ')
		tl--;
	sec_add(s, sp, tl);
	sec_add_b64(s, sp, tl);
	if (basic)
		sec_add_basic(s, sp, tl);
}

/* The query of an upstream URL (whole, and each value raw and decoded). */
static void sec_add_query(struct secrets *s, const char *q)
{
	char buf[2048];
	sec_add(s, q, strlen(q));
	for (const char *p = q; *p;) {
		size_t n = strcspn(p, "&");
		const char *eq = memchr(p, '=', n);
		if (eq) {
			size_t vl = n - (size_t)(eq + 1 - p);
			admin_pct_decode(eq + 1, vl, buf, sizeof(buf));
			sec_add(s, buf, strlen(buf));
			sec_add(s, eq + 1, vl);
		}
		p += n + (p[n] == '&');
	}
	explicit_bzero(buf, sizeof(buf));
}

void secrets_add_config(struct redact *rd, const struct px_config *cfg)
{
	struct secrets s = {0};

	for (size_t i = 0; i < cfg->nups; i++) {
		const struct px_upstream_conf *u = &cfg->ups[i];
		if (u->basic_auth)
			sec_add_header(&s, "Authorization", u->basic_auth);
		const char *q = u->target ? strchr(u->target, '?') : NULL;
		if (q)
			sec_add_query(&s, q + 1);
		for (size_t h = 0; h < u->nheaders; h++)
			sec_add_header(&s, u->headers[h].name, u->headers[h].value);
	}
	for (size_t i = 0; i < cfg->ntokens; i++)
		sec_add(&s, cfg->tokens[i].token, strlen(cfg->tokens[i].token));
	if (s.oom || redact_add_secrets(rd, (const char *const *)s.v, s.n) < 0)
		log_msg(LOG_ERROR, "admin: out of memory: some credentials are not masked in records");
	else if (redact_nvalues(rd) >= REDACT_MAX_VALUES)
		log_msg(LOG_WARN, "admin: more than %d values to mask: some credentials are not "
		                  "masked in records", REDACT_MAX_VALUES);
	sec_free(&s);
}

/* jsonloc: see jsonloc.h.
 *
 * The walk, for pointer "/tools/1/name" over {"tools":[{..},{"name":..}]}:
 *
 *   value at 0 ('{')  --token "tools"-->  scan members: name, ':', value;
 *                                          match -> value at '['
 *   value at '['      --token "1"------>  skip element 0, value at '{'
 *   value at '{'      --token "name"--->  member found: at = its '"'
 *
 * Every step reads forward only, so the whole walk is one pass at most.
 */
#include "proxy/cli/jsonloc.h"

#include <string.h>

struct scan {
	const char *s;
	size_t len, pos;
};

static void skip_ws(struct scan *sc)
{
	while (sc->pos < sc->len && strchr(" \t\r\n", sc->s[sc->pos]) && sc->s[sc->pos])
		sc->pos++;
}

/* Past a string whose opening quote is at pos. -1 when unterminated. */
static int skip_string(struct scan *sc)
{
	for (sc->pos++; sc->pos < sc->len; sc->pos++) {
		if (sc->s[sc->pos] == '\\')
			sc->pos++;
		else if (sc->s[sc->pos] == '"') {
			sc->pos++;
			return 0;
		}
	}
	return -1;
}

/* Past the value at pos: a string, a nest of brackets (counted outside
 * strings), or a bare word (number, true, false, null). */
static int skip_value(struct scan *sc)
{
	if (sc->pos >= sc->len)
		return -1;
	char c = sc->s[sc->pos];
	if (c == '"')
		return skip_string(sc);
	if (c != '{' && c != '[') {
		size_t start = sc->pos;
		while (sc->pos < sc->len && !strchr(",]}: \t\r\n", sc->s[sc->pos]) && sc->s[sc->pos])
			sc->pos++;
		/* jansson (what parsed the file) swallows one NUL byte right after
		 * a number or a literal ({"a":1<NUL>} loads): step over it too, so
		 * the members after it are found where jansson saw them. */
		if (sc->pos > start && sc->pos < sc->len && sc->s[sc->pos] == '\0')
			sc->pos++;
		return sc->pos > start ? 0 : -1;
	}
	size_t depth = 0;
	while (sc->pos < sc->len) {
		c = sc->s[sc->pos];
		if (c == '"') {
			if (skip_string(sc) < 0)
				return -1;
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0) {
			sc->pos++;
			return 0;
		}
		sc->pos++;
	}
	return -1;
}

static int hex4(const char *p, size_t n, unsigned *v)
{
	if (n < 4)
		return -1;
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
		             : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
		             : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;
		if (d > 15)
			return -1;
		*v = *v * 16 + d;
	}
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* One \-escape at p (after the backslash) decoded into o; *used = the
 * bytes read after the backslash. Returns the bytes written, 0 when bad. */
static size_t unescape(const char *p, size_t n, char *o, size_t *used)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k = n ? strchr(from, p[0]) : NULL;
	if (k && p[0]) {
		o[0] = to[k - from];
		*used = 1;
		return 1;
	}
	unsigned hi, lo;
	if (n < 1 || p[0] != 'u' || hex4(p + 1, n - 1, &hi) < 0)
		return 0;
	*used = 5;
	if (hi >= 0xd800 && hi < 0xdc00 && n >= 11 && p[5] == '\\' && p[6] == 'u' &&
	    hex4(p + 7, n - 7, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
		*used = 11;
		return put_utf8(o, 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00));
	}
	return put_utf8(o, hi);
}

/* Decodes the string at pos (its quote) into key (NUL-terminated) and
 * moves past it. Returns its length, -1 when unterminated or bad, -2 when
 * longer than JSONLOC_MAX_KEY (skipped). */
static long read_key(struct scan *sc, char key[JSONLOC_MAX_KEY + 1])
{
	size_t start = sc->pos, k = 0;
	for (sc->pos++; sc->pos < sc->len; sc->pos++) {
		char c = sc->s[sc->pos];
		if (c == '"') {
			sc->pos++;
			key[k] = '\0';
			return (long)k;
		}
		char tmp[4];
		size_t w = 1, used = 0;
		tmp[0] = c;
		if (c == '\\') {
			w = unescape(sc->s + sc->pos + 1, sc->len - sc->pos - 1, tmp, &used);
			if (w == 0)
				return -1;
			sc->pos += used;
		}
		if (k + w > JSONLOC_MAX_KEY) {
			sc->pos = start;
			return skip_string(sc) < 0 ? -1 : -2;
		}
		memcpy(key + k, tmp, w);
		k += w;
	}
	return -1;
}

/* The next pointer token from *p (after its '/') into tok, ~1 -> '/',
 * ~0 -> '~'. Returns its length, -1 when over the cap or a bad '~'. */
static long next_token(const char **p, char tok[JSONLOC_MAX_KEY + 1])
{
	size_t k = 0;
	const char *s = *p;
	for (; *s && *s != '/'; s++) {
		char c = *s;
		if (c == '~') {
			if (s[1] != '0' && s[1] != '1')
				return -1;
			c = s[1] == '0' ? '~' : '/';
			s++;
		}
		if (k >= JSONLOC_MAX_KEY)
			return -1;
		tok[k++] = c;
	}
	tok[k] = '\0';
	*p = s;
	return (long)k;
}

/* In the object at pos, the last member named tok (tlen bytes): sets
 * *name and *value to its offsets. Returns 1 found, 0 not, -1 bad text. */
static int find_member(struct scan *sc, const char *tok, size_t tlen, size_t *name, size_t *value)
{
	char key[JSONLOC_MAX_KEY + 1];
	int found = 0;
	sc->pos++;
	for (;;) {
		skip_ws(sc);
		if (sc->pos >= sc->len)
			return -1;
		if (sc->s[sc->pos] == '}')
			return found;
		if (sc->s[sc->pos] != '"')
			return -1;
		size_t at = sc->pos;
		long kl = read_key(sc, key);
		if (kl == -1)
			return -1;
		skip_ws(sc);
		if (sc->pos >= sc->len || sc->s[sc->pos] != ':')
			return -1;
		sc->pos++;
		skip_ws(sc);
		if (kl >= 0 && (size_t)kl == tlen && memcmp(key, tok, tlen) == 0) {
			found = 1;
			*name = at;
			*value = sc->pos;
		}
		if (skip_value(sc) < 0)
			return -1;
		skip_ws(sc);
		if (sc->pos < sc->len && sc->s[sc->pos] == ',')
			sc->pos++;
	}
}

/* In the array at pos, element idx: sets *value. 1 found, 0 not, -1 bad. */
static int find_element(struct scan *sc, size_t idx, size_t *value)
{
	sc->pos++;
	for (size_t i = 0;; i++) {
		skip_ws(sc);
		if (sc->pos >= sc->len)
			return -1;
		if (sc->s[sc->pos] == ']')
			return 0;
		if (i == idx) {
			*value = sc->pos;
			return 1;
		}
		if (skip_value(sc) < 0)
			return -1;
		skip_ws(sc);
		if (sc->pos < sc->len && sc->s[sc->pos] == ',')
			sc->pos++;
	}
}

/* A decimal array index without leading zeros; -1 otherwise. */
static long long parse_index(const char *tok, size_t n)
{
	if (n == 0 || n > 18 || (n > 1 && tok[0] == '0'))
		return -1;
	long long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (tok[i] < '0' || tok[i] > '9')
			return -1;
		v = v * 10 + (tok[i] - '0');
	}
	return v;
}

void jsonloc_line_col(const char *text, size_t len, size_t at, int *line, int *column)
{
	int l = 1, c = 1;
	if (at > len)
		at = len;
	for (size_t i = 0; i < at; i++) {
		unsigned char b = (unsigned char)text[i];
		if (b == '\n') {
			l++;
			c = 1;
		} else if ((b & 0xc0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*column = c;
}

int jsonloc_find(const char *text, size_t len, const char *pointer, struct jsonloc *out)
{
	char tok[JSONLOC_MAX_KEY + 1];
	struct scan sc = {.s = text, .len = len, .pos = 0};
	memset(out, 0, sizeof *out);
	if (*pointer && *pointer != '/')
		return -1;
	skip_ws(&sc);
	if (sc.pos >= len)
		return -1;
	size_t at = sc.pos, value = sc.pos;
	int rc = 1;
	const char *p = pointer;
	while (*p == '/') {
		p++;
		long tl = next_token(&p, tok);
		int got = 0;
		size_t nat = 0, nval = 0;
		sc.pos = value;
		if (tl >= 0 && text[value] == '{') {
			got = find_member(&sc, tok, (size_t)tl, &nat, &nval);
		} else if (tl >= 0 && text[value] == '[') {
			long long idx = parse_index(tok, (size_t)tl);
			got = idx < 0 ? 0 : find_element(&sc, (size_t)idx, &nval);
			nat = nval;
		}
		if (got <= 0) {
			rc = 0;
			break;
		}
		at = nat;
		value = nval;
		out->matched++;
	}
	out->at = at;
	out->value = value;
	jsonloc_line_col(text, len, at, &out->line, &out->column);
	return rc;
}

long jsonloc_elements(const char *text, size_t len, const char *pointer, size_t *offs, size_t max)
{
	struct jsonloc l;
	if (jsonloc_find(text, len, pointer, &l) != 1 || text[l.value] != '[')
		return -1;
	struct scan sc = {.s = text, .len = len, .pos = l.value + 1};
	size_t n = 0;
	while (n < max) {
		skip_ws(&sc);
		if (sc.pos >= len || text[sc.pos] == ']')
			break;
		offs[n++] = sc.pos;
		if (skip_value(&sc) < 0)
			break;
		skip_ws(&sc);
		if (sc.pos < len && text[sc.pos] == ',')
			sc.pos++;
	}
	return (long)n;
}

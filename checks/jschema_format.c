/* jschema_format.c: the formats asserted under JSCHEMA_FORMAT_ASSERT.
 *
 * date-time, date, time (RFC 3339 section 5.6, leap second allowed as
 * :60), email (a dot-atom local part or a quoted string, @, a hostname or
 * an IP literal: RFC 5321 mailbox without comments), ipv4 (dotted quad, no
 * leading zeros), ipv6 (RFC 4291 text forms, with an embedded IPv4 tail),
 * uri (RFC 3986 absolute URI: scheme, then only allowed characters and
 * well-formed %XX), uuid (8-4-4-4-12 hex), hostname (RFC 1123 labels of
 * at most 63, total at most 253). Byte-level checks, no allocation.
 */
#include <ctype.h>
#include <string.h>

#include "checks/jschema_int.h"

static int digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

static int num(const char *s, size_t n)
{
	int v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static int leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int date_ok(const char *s, size_t len)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (len != 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4) || !digits(s + 5, 2) ||
	    !digits(s + 8, 2))
		return 0;
	int y = num(s, 4), m = num(s + 5, 2), d = num(s + 8, 2);
	if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		return 0;
	return !(m == 2 && d == 29 && !leap(y));
}

static int time_ok(const char *s, size_t len)
{
	if (len < 9 || s[2] != ':' || s[5] != ':' || !digits(s, 2) || !digits(s + 3, 2) ||
	    !digits(s + 6, 2))
		return 0;
	int h = num(s, 2), m = num(s + 3, 2), sec = num(s + 6, 2);
	size_t i = 8;
	if (i < len && s[i] == '.') {
		size_t st = ++i;
		while (i < len && isdigit((unsigned char)s[i]))
			i++;
		if (i == st)
			return 0;
	}
	if (i >= len)
		return 0;
	int oh = 0, om = 0, sign = 0;
	if (s[i] == 'Z' || s[i] == 'z') {
		if (i + 1 != len)
			return 0;
	} else if (s[i] == '+' || s[i] == '-') {
		if (len - i != 6 || s[i + 3] != ':' || !digits(s + i + 1, 2) || !digits(s + i + 4, 2))
			return 0;
		oh = num(s + i + 1, 2);
		om = num(s + i + 4, 2);
		sign = s[i] == '+' ? 1 : -1;
		if (oh > 23 || om > 59)
			return 0;
	} else {
		return 0;
	}
	if (h > 23 || m > 59 || sec > 60)
		return 0;
	if (sec == 60) {
		/* A leap second happens at 23:59:60 UTC only. */
		int utc = (h * 60 + m) - sign * (oh * 60 + om);
		utc = ((utc % 1440) + 1440) % 1440;
		if (utc != 23 * 60 + 59)
			return 0;
	}
	return 1;
}

static int datetime_ok(const char *s, size_t len)
{
	if (len < 20 || (s[10] != 'T' && s[10] != 't' && s[10] != ' '))
		return 0;
	return date_ok(s, 10) && time_ok(s + 11, len - 11);
}

static int ipv4_ok(const char *s, size_t len)
{
	int parts = 0;
	size_t i = 0;
	while (parts < 4) {
		size_t st = i;
		while (i < len && isdigit((unsigned char)s[i]) && i - st < 4)
			i++;
		size_t n = i - st;
		if (n == 0 || n > 3 || (n > 1 && s[st] == '0') || num(s + st, n) > 255)
			return 0;
		parts++;
		if (parts < 4) {
			if (i >= len || s[i] != '.')
				return 0;
			i++;
		}
	}
	return i == len;
}

static int ipv6_ok(const char *s, size_t len)
{
	int groups = 0, dbl = 0;
	size_t i = 0;
	if (len < 2 || len > 45)
		return 0;
	if (s[0] == ':') {
		if (s[1] != ':')
			return 0;
		dbl = 1;
		i = 2;
		if (i == len)
			return 1;
	}
	while (i < len) {
		size_t st = i;
		while (i < len && isxdigit((unsigned char)s[i]))
			i++;
		if (i < len && s[i] == '.') {
			/* An IPv4 tail counts for two groups. */
			if (!ipv4_ok(s + st, len - st))
				return 0;
			groups += 2;
			i = len;
			break;
		}
		if (i - st == 0 || i - st > 4)
			return 0;
		groups++;
		if (i == len)
			break;
		if (s[i] != ':')
			return 0;
		i++;
		if (i < len && s[i] == ':') {
			if (dbl)
				return 0;
			dbl = 1;
			i++;
			if (i == len)
				break;
		} else if (i == len) {
			return 0;
		}
	}
	return dbl ? groups < 8 : groups == 8;
}

static int hostname_ok(const char *s, size_t len)
{
	if (len == 0 || len > 253)
		return 0;
	size_t label = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!(isalnum(c) || c == '-') || (c == '-' && label == 0) || ++label > 63)
			return 0;
	}
	return label > 0 && s[len - 1] != '-';
}

static int email_ok(const char *s, size_t len)
{
	const char *at = memrchr(s, '@', len);
	if (at == NULL || at == s)
		return 0;
	size_t ll = (size_t)(at - s), dl = len - ll - 1;
	const char *d = at + 1;
	if (s[0] == '"') {
		if (ll < 2 || s[ll - 1] != '"')
			return 0;
	} else {
		if (s[0] == '.' || s[ll - 1] == '.')
			return 0;
		for (size_t i = 0; i < ll; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c == '.' && s[i + 1] == '.')
				return 0;
			if (!(isalnum(c) || strchr("!#$%&'*+-/=?^_`{|}~.", c)) || c == 0)
				return 0;
		}
	}
	if (dl > 2 && d[0] == '[' && d[dl - 1] == ']') {
		if (dl > 7 && strncmp(d + 1, "IPv6:", 5) == 0)
			return ipv6_ok(d + 6, dl - 7);
		return ipv4_ok(d + 1, dl - 2);
	}
	return hostname_ok(d, dl);
}

static int uri_ok(const char *s, size_t len)
{
	size_t i = 0;
	if (len == 0 || !isalpha((unsigned char)s[0]))
		return 0;
	while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
		i++;
	if (i >= len || s[i] != ':')
		return 0;
	for (i++; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= len || !isxdigit((unsigned char)s[i + 1]) ||
			    !isxdigit((unsigned char)s[i + 2]))
				return 0;
			i += 2;
		} else if (!(isalnum(c) || strchr("-._~:/?#[]@!$&'()*+,;=", c)) || c == 0) {
			return 0;
		}
	}
	/* One '#' at most (the fragment holds none), and brackets only around
	 * an IP literal host in the authority. */
	const char *hash = memchr(s, '#', len);
	if (hash && memchr(hash + 1, '#', len - (size_t)(hash + 1 - s)))
		return 0;
	const char *p = memchr(s, ':', len), *end = s + len;
	const char *h = NULL, *e = p + 1;
	if ((size_t)(p - s) + 2 < len && p[1] == '/' && p[2] == '/') {
		const char *a = p + 3;
		e = a;
		while (e < end && *e != '/' && *e != '?' && *e != '#')
			e++;
		h = memrchr(a, '@', (size_t)(e - a));
		h = h ? h + 1 : a;
		if (h < e && *h == '[') {
			const char *rb = memchr(h, ']', (size_t)(e - h));
			if (rb == NULL || memchr(h + 1, '[', (size_t)(rb - h - 1)) ||
			    memchr(rb + 1, ']', (size_t)(e - rb - 1)) || memchr(rb + 1, '[', (size_t)(e - rb - 1)))
				return 0;
			if (rb + 1 < e && rb[1] != ':')
				return 0;
		} else {
			h = NULL;
		}
	}
	for (const char *q = p + 1; q < end; q++) {
		if (*q != '[' && *q != ']')
			continue;
		if (h == NULL || q < h || q >= e)
			return 0;
	}
	return 1;
}

static int uuid_ok(const char *s, size_t len)
{
	if (len != 36)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!isxdigit((unsigned char)s[i])) {
			return 0;
		}
	}
	return 1;
}

int jschema_format_ok(enum jschema_fmt f, const char *s, size_t len)
{
	if (memchr(s, '\0', len))
		return 0;
	switch (f) {
	case JF_DATETIME: return datetime_ok(s, len);
	case JF_DATE: return date_ok(s, len);
	case JF_TIME: return time_ok(s, len);
	case JF_EMAIL: return email_ok(s, len);
	case JF_IPV4: return ipv4_ok(s, len);
	case JF_IPV6: return ipv6_ok(s, len);
	case JF_URI: return uri_ok(s, len);
	case JF_UUID: return uuid_ok(s, len);
	case JF_HOSTNAME: return hostname_ok(s, len);
	default: return 1;
	}
}

enum jschema_fmt jschema_format_of(const char *name)
{
	static const struct {
		const char *name;
		enum jschema_fmt f;
	} t[] = {
		{"date-time", JF_DATETIME}, {"date", JF_DATE}, {"time", JF_TIME},
		{"email", JF_EMAIL},        {"ipv4", JF_IPV4}, {"ipv6", JF_IPV6},
		{"uri", JF_URI},            {"uuid", JF_UUID}, {"hostname", JF_HOSTNAME},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(name, t[i].name) == 0)
			return t[i].f;
	return JF_OTHER;
}

/* jsre.c: temporary: replaced by h6-jsre. A minimal stand-in over POSIX
 * extended regexes (\d \w \s and their negations rewritten), so that the
 * JSON Schema validator links and its tests run until the real engine
 * lands. No step limit, byte (not code point) semantics. */
#include "checks/jsre.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jsre {
	regex_t re;
};

static const char *class_of(char c)
{
	switch (c) {
	case 'd': return "[0-9]";
	case 'D': return "[^0-9]";
	case 'w': return "[A-Za-z0-9_]";
	case 'W': return "[^A-Za-z0-9_]";
	case 's': return "[[:space:]]";
	case 'S': return "[^[:space:]]";
	default: return NULL;
	}
}

struct jsre *jsre_compile(const char *pattern, size_t len, char *err, size_t errlen)
{
	char *buf = malloc(len * 12 + 1);
	size_t o = 0;
	if (buf == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		if (pattern[i] == '\0') {
			free(buf);
			snprintf(err, errlen, "NUL in pattern");
			return NULL;
		}
		if (pattern[i] == '\\' && i + 1 < len && class_of(pattern[i + 1])) {
			const char *c = class_of(pattern[++i]);
			memcpy(buf + o, c, strlen(c));
			o += strlen(c);
			continue;
		}
		buf[o++] = pattern[i];
	}
	buf[o] = '\0';
	struct jsre *re = malloc(sizeof *re);
	if (re == NULL || regcomp(&re->re, buf, REG_EXTENDED | REG_NOSUB) != 0) {
		free(re);
		free(buf);
		snprintf(err, errlen, "unsupported pattern");
		return NULL;
	}
	free(buf);
	return re;
}

int jsre_search(const struct jsre *re, const char *s, size_t len)
{
	char *z = strndup(s, len);
	if (z == NULL)
		return -1;
	int rc = regexec(&re->re, z, 0, NULL, 0) == 0;
	free(z);
	return rc;
}

void jsre_free(struct jsre *re)
{
	if (re == NULL)
		return;
	regfree(&re->re);
	free(re);
}

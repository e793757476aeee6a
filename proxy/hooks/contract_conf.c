/* contract_conf: see contract_conf.h. */
#include "proxy/hooks/contract_conf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "checks/drift.h"
#include "checks/profile.h" /* client profiles (issue 21) */

static const char *const mode_names[] = {"report", "filter", "fail", "off"};

const char *contract_mode_name(enum contract_mode m)
{
	return (unsigned)m < 4 ? mode_names[m] : "?";
}

void contract_conf_error(char *err, size_t errlen, int *nerr, const char *fmt, ...)
{
	size_t used = err && errlen ? strnlen(err, errlen) : 0;
	(*nerr)++;
	if (!err || used + 1 >= errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + used, errlen - used, fmt, ap);
	va_end(ap);
	used = strnlen(err, errlen);
	if (used + 1 < errlen) {
		err[used] = '\n';
		err[used + 1] = '\0';
	}
}

void contract_conf_load(struct contract_conf *cf, const json_t *c, size_t i, char *err,
                        size_t errlen, int *nerr)
{
	const char *key;
	json_t *val;
	char where[64];

	snprintf(where, sizeof(where), "$.upstreams[%zu].contract", i);
	if (!c)
		return;
	if (!json_is_object(c)) {
		contract_conf_error(err, errlen, nerr, "%s: must be an object", where);
		return;
	}
	json_object_foreach((json_t *)(uintptr_t)c, key, val) {
		if (strcmp(key, "mode") == 0) {
			const char *s = json_string_value(val);
			size_t k = 0;
			while (s && k < 4 && strcmp(s, mode_names[k]) != 0)
				k++;
			if (!s || k == 4)
				contract_conf_error(err, errlen, nerr, "%s.mode: must be report, filter, fail or off",
				        where);
			else
				cf->mode = (enum contract_mode)k;
		} else if (strcmp(key, "spec_only") == 0) {
			if (!json_is_boolean(val))
				contract_conf_error(err, errlen, nerr, "%s.spec_only: must be true or false", where);
			else
				cf->spec_only = json_is_true(val);
		} else if (strcmp(key, "profiles") == 0) {
			/* client profiles (issue 21): an array of profile names */
			size_t k;
			json_t *pv;
			unsigned mask = 0;
			int ok = json_is_array(val);
			json_array_foreach(val, k, pv) {
				const char *pn = json_string_value(pv);
				if (!pn || strchr(pn, ',') || profile_parse(pn, &mask, NULL, NULL) < 0) {
					contract_conf_error(err, errlen, nerr, "%s.profiles[%zu]: must be one of %s",
					        where, k, PROFILE_NAMES);
					ok = 0;
				}
			}
			if (!json_is_array(val))
				contract_conf_error(err, errlen, nerr, "%s.profiles: must be an array of %s",
				        where, PROFILE_NAMES);
			else if (ok)
				cf->profiles = mask;
		} else if (strcmp(key, "baseline") == 0) {
			const char *file = json_string_value(val);
			json_error_t jerr;
			if (!file || !*file) {
				contract_conf_error(err, errlen, nerr, "%s.baseline: must be a file name", where);
				continue;
			}
			cf->baseline_file = file;
			cf->baseline = json_load_file(file, 0, &jerr);
			if (!cf->baseline) {
				if (jerr.line > 0)
					contract_conf_error(err, errlen, nerr, "%s.baseline: %s:%d:%d: %s", where, file,
					        jerr.line, jerr.column, jerr.text);
				else
					contract_conf_error(err, errlen, nerr, "%s.baseline: %s", where, jerr.text);
				continue;
			}
			cf->baseline_tools = drift_tools_of(cf->baseline);
			if (!cf->baseline_tools)
				contract_conf_error(err, errlen, nerr,
				        "%s.baseline: %s holds no tool list ({\"tools\":[...]}, a tools/list "
				        "response or an array)",
				        where, file);
		} else {
			contract_conf_error(err, errlen, nerr, "%s.%s: unknown key", where, key);
		}
	}
}

void contract_conf_clear(struct contract_conf *cf)
{
	json_decref(cf->baseline);
	*cf = (struct contract_conf){0};
}

/* ---- live baselines (issue 21) ------------------------------------------- */

void contract_conf_set_baseline(struct contract_conf *cf, json_t *doc)
{
	json_decref(cf->baseline);
	cf->baseline = doc;
	cf->baseline_tools = doc ? drift_tools_of(doc) : NULL;
}

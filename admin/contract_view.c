/* contract_view: see contract_view.h. */
#include "admin/contract_view.h"

#include <stdint.h>
#include <string.h>

json_t *contract_view_upstream(const char *name, const char *updated, json_t *report,
                               json_t *live)
{
	json_t *o = json_object();
	if (live && !json_is_object(live)) {
		json_decref(live);
		live = NULL;
	}
	if (!o || json_object_set_new(o, "upstream", json_string(name)) < 0 ||
	    json_object_set_new(o, "updated", updated ? json_string(updated) : json_null()) < 0) {
		json_decref(o);
		json_decref(report);
		json_decref(live);
		return NULL;
	}
	/* json_object_set_new steals its value even when it fails: both are
	 * handed over whatever happens to the first */
	int bad = json_object_set_new(o, "report", report ? report : json_null()) < 0;
	bad |= json_object_set_new(o, "live", live ? live : json_null()) < 0;
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- live baselines (issue 21) ------------------------------------------- */

/* The changes of kind `kind` (or, kind NULL, of neither known kind) of
 * from, appended to to in their order. Returns how many. */
static size_t append_kind(json_t *to, const json_t *from, const char *kind)
{
	size_t n = 0, i;
	json_t *c;
	json_array_foreach(from, i, c) {
		const char *k = json_string_value(json_object_get(c, "kind"));
		int match = kind ? (k && strcmp(k, kind) == 0)
		                 : !(k && (strcmp(k, "breaking") == 0 || strcmp(k, "notice") == 0));
		if (match && json_array_append(to, c) == 0)
			n++;
	}
	return n;
}

json_t *contract_view_diff(const json_t *report, const struct contract_view_baseline *b)
{
	const json_t *changes = json_object_get(report, "changes");
	const json_t *file = json_object_get(report, "baseline");
	json_t *sorted = json_array();
	/* Breaking first: what a reviewer must look at before accepting. */
	size_t nb = sorted ? append_kind(sorted, changes, "breaking") : 0;
	size_t nn = sorted ? append_kind(sorted, changes, "notice") : 0;
	if (sorted)
		append_kind(sorted, changes, NULL);
	json_t *accepted = b->accepted_time
		? json_pack("{s:s,s:s}", "time", b->accepted_time, "by",
		            b->accepted_by ? b->accepted_by : "")
		: json_null();
	json_t *o = sorted && accepted ? json_object() : NULL;
	if (!o) {
		json_decref(sorted);
		json_decref(accepted);
		return NULL;
	}
	int bad = json_object_set_new(o, "baseline", json_is_string(file) ? json_incref((json_t *)(uintptr_t)file)
	                                                                 : json_null()) < 0;
	bad |= json_object_set_new(o, "has_baseline", json_boolean(b->has_baseline)) < 0;
	bad |= json_object_set_new(o, "baseline_tools", json_integer((json_int_t)b->baseline_tools)) < 0;
	bad |= json_object_set_new(o, "complete",
	                           json_boolean(json_is_true(json_object_get(report, "complete")))) < 0;
	bad |= json_object_set_new(o, "gate", json_string(b->gate ? b->gate : "unknown")) < 0;
	bad |= json_object_set_new(o, "breaking", json_integer((json_int_t)nb)) < 0;
	bad |= json_object_set_new(o, "notices", json_integer((json_int_t)nn)) < 0;
	bad |= json_object_set_new(o, "changes", sorted) < 0;
	bad |= json_object_set_new(o, "can_accept", json_boolean(b->can_accept)) < 0;
	bad |= json_object_set_new(o, "listing_sha256", b->listing_sha256
	                                                    ? json_string(b->listing_sha256)
	                                                    : json_null()) < 0;
	bad |= json_object_set_new(o, "accepted", accepted) < 0;
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int contract_view_add_diff(json_t *entry, json_t *diff)
{
	if (!entry || !diff) {
		json_decref(diff);
		json_decref(entry);
		return -1;
	}
	/* json_object_set_new releases diff itself when it fails */
	if (json_object_set_new(entry, "diff", diff) < 0) {
		json_decref(entry);
		return -1;
	}
	return 0;
}

/* contract_view: see contract_view.h. */
#include "admin/contract_view.h"

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

/* contract_answer: see contract_answer.h. */
#include "proxy/hooks/contract_answer.h"

#include <stdio.h>
#include <string.h>

#include "checks/contract.h"
#include "checks/drift.h"
#include "proxy/hooks/inspect.h"

/* A name made safe for one log or message line: at most 64 bytes, control
 * characters and quotes replaced. */
static const char *safe_name(char *buf, size_t cap, const char *s)
{
	size_t j = 0;
	if (!s)
		return "(no name)";
	for (size_t i = 0; s[i] && j + 4 < cap && i < 64; i++) {
		unsigned char c = (unsigned char)s[i];
		buf[j++] = (c < 0x20 || c == 0x7f || c == '"' || c == '\\') ? '?' : (char)c;
	}
	if (strlen(s) > 64 && j + 4 < cap) {
		memcpy(buf + j, "...", 3);
		j += 3;
	}
	buf[j] = '\0';
	return buf;
}

/* The changes that count now: all of them for a complete listing; before
 * the last page a tool missing from the pages seen so far may still come,
 * so tool-removed waits. Returns a new array; *nbreaking its breaking
 * count. */
json_t *contract_answer_changes(const struct drift_report *d, int complete, size_t *nbreaking)
{
	json_t *arr = json_array();
	*nbreaking = 0;
	for (size_t i = 0; d && arr && i < drift_report_nchanges(d); i++) {
		const struct drift_change *c = drift_report_change(d, i);
		if (!complete && strcmp(c->code, "tool-removed") == 0)
			continue;
		if (c->breaking)
			(*nbreaking)++;
		json_array_append_new(arr, json_pack("{s:s,s:s,s:s?,s:s,s:s}", "code", c->code, "kind",
		                                     c->kind, "tool", c->tool, "pointer", c->pointer,
		                                     "message", c->message));
	}
	return arr;
}

static json_t *finding_json(const struct contract_finding *f)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "code", f->code, "message", f->message,
	                      "pointer", f->pointer, "rule",
	                      contract_finding_rule(f)); /* client profiles: "client" */
	if (o && f->tool)
		json_object_set_new(o, "tool", json_string(f->tool));
	return o;
}

void contract_answer_line(const char *upstream, const char *mode, size_t npages,
                          const struct contract_report *r, const struct contract_verdict *v,
                          char *line, size_t cap)
{
	char codes[512] = "", nb[80];
	size_t used = 0, shown = 0, more = 0;

	for (size_t i = 0; i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		if (!f->problem)
			continue;
		if (shown >= 5) {
			more++;
			continue;
		}
		int w = snprintf(codes + used, sizeof(codes) - used, "%s%s%s%s%s", shown ? ", " : "",
		                 f->code, f->tool ? " \"" : "", f->tool ? safe_name(nb, sizeof(nb), f->tool) : "",
		                 f->tool ? "\"" : "");
		if (w < 0 || (size_t)w >= sizeof(codes) - used)
			break;
		used += (size_t)w;
		shown++;
	}
	if (more && used + 32 < sizeof(codes))
		snprintf(codes + used, sizeof(codes) - used, " and %zu more", more);
	snprintf(line, cap,
	        "contract: upstream %s: tools/list %s, score %.2f, %zu tools on %zu page%s%s, "
	        "%zu problem%s, %zu warning%s, %zu breaking change%s (mode %s: %s)%s%s",
	        upstream, v->passed ? "PASSED" : "FAILED",
	        contract_report_score(r), contract_report_ntools(r), npages,
	        npages == 1 ? "" : "s", v->complete ? "" : " (listing not complete)",
	        contract_report_nproblems(r), contract_report_nproblems(r) == 1 ? "" : "s",
	        contract_report_nwarnings(r), contract_report_nwarnings(r) == 1 ? "" : "s",
	        v->nbreaking, v->nbreaking == 1 ? "" : "s", mode, v->action,
	        *codes ? ": " : "", codes);
}


/* Replaces the response in m->msg by a JSON-RPC error with the same id.
 * data is stolen. */
static void replace_with_error(struct inspect_msg *m, int code, const char *reason,
                               const char *message,
                               json_t *data)
{
	json_t *err = json_object();
	if (!err) {
		json_decref(data);
		return;
	}
	json_object_set_new(err, "code", json_integer(code));
	json_object_set_new(err, "message", json_string(message));
	if (data)
		json_object_set_new(err, "data", data);
	json_object_del(m->msg, "result");
	json_object_set_new(m->msg, "error", err);
	m->modified = 1;
	m->reason = reason;
}

struct msgbuf {
	char s[1024];
	size_t n, items, more;
};

static void mb_item(struct msgbuf *b, const char *code, const char *tool)
{
	char nb[80];
	if (b->items >= 8 || b->n + 120 >= sizeof(b->s)) {
		b->more++;
		return;
	}
	int w = snprintf(b->s + b->n, sizeof(b->s) - b->n, "%s%s%s%s%s", b->items ? "; " : "", code,
	                 tool ? " (tool \"" : "", tool ? safe_name(nb, sizeof(nb), tool) : "",
	                 tool ? "\")" : "");
	if (w > 0 && (size_t)w < sizeof(b->s) - b->n) {
		b->n += (size_t)w;
		b->items++;
	}
}

void contract_answer_failed(struct inspect_msg *m, int code, const char *upstream,
                            const char *reason, const struct contract_report *r,
                            const struct drift_report *d, int complete, const char *extra)
{
	struct msgbuf b = {.n = 0};
	json_t *problems = json_array(), *changes = json_array();
	size_t np = 0, nbk = 0;

	b.n = (size_t)snprintf(b.s, sizeof(b.s), "tools/list from upstream %s failed the contract: ",
	                       upstream);
	if (b.n >= sizeof(b.s))
		b.n = sizeof(b.s) - 1;
	for (size_t i = 0; r && i < contract_report_nfindings(r); i++) {
		const struct contract_finding *f = contract_report_finding(r, i);
		if (!f->problem)
			continue;
		np++;
		mb_item(&b, f->code, f->tool);
		json_array_append_new(problems, finding_json(f));
	}
	for (size_t i = 0; d && i < drift_report_nchanges(d); i++) {
		const struct drift_change *c = drift_report_change(d, i);
		if (!c->breaking || (!complete && strcmp(c->code, "tool-removed") == 0))
			continue;
		nbk++;
		mb_item(&b, c->code, c->tool);
		json_array_append_new(changes, json_pack("{s:s,s:s,s:s?,s:s,s:s}", "code", c->code,
		                                         "kind", c->kind, "tool", c->tool, "pointer",
		                                         c->pointer, "message", c->message));
	}
	if (extra)
		mb_item(&b, extra, NULL);
	if (b.more)
		snprintf(b.s + b.n, sizeof(b.s) - b.n, "; and %zu more", b.more);
	json_t *data = json_pack("{s:s,s:o,s:o,s:I,s:I,s:b}", "upstream", upstream, "problems",
	                         problems, "changes", changes, "nproblems", (json_int_t)np,
	                         "breaking", (json_int_t)nbk, "complete", complete);
	if (data && r)
		json_object_set_new(data, "score", json_real(contract_report_score(r)));
	if (data && extra)
		json_object_set_new(data, "reason", json_string(extra));
	replace_with_error(m, code, reason, b.s, data);
}

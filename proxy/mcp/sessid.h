/* sessid: the Mcp-Session-Id values upstreams issued through the proxy,
 * and which of them have ended.
 *
 * The spec says a request bearing a terminated session id MUST get 404 (so
 * the client re-initializes), but real servers answer 400 (server-everything,
 * the conformance fixture in some modes). The proxy remembers the ids it saw
 * issued and those that ended (DELETE, or an upstream 404), and answers 404
 * itself for an ended one. Bounded: the oldest entries are forgotten first;
 * a forgotten id is simply forwarded, as after a restart.
 */
#ifndef MCPWARDEN_SESSID_H
#define MCPWARDEN_SESSID_H

#include <stddef.h>

enum sessid_state { SESSID_UNKNOWN = 0, SESSID_LIVE, SESSID_ENDED };

struct sessid;

struct sessid *sessid_new(size_t max_entries);
void sessid_free(struct sessid *s);

/* upstream distinguishes equal ids issued by two upstreams. */
void sessid_issued(struct sessid *s, size_t upstream, const char *id);
void sessid_ended(struct sessid *s, size_t upstream, const char *id);
enum sessid_state sessid_lookup(struct sessid *s, size_t upstream, const char *id);
size_t sessid_count(struct sessid *s, enum sessid_state state);

#endif

/* tracehand: the traceparent handed from a translated session's client
 * face (transport_sse.c) to its upstream face (upstream_sse.c), which
 * are joined by session.c (telemetry, issue 23).
 *
 * The client face sets it around session_client_message; every message
 * upstream_sse_send queues meanwhile keeps a copy for its POST. Per
 * thread: each worker's loop sends its own sessions' messages. A module
 * of its own so that the faces stay apart (their unit tests stub each
 * other).
 */
#ifndef MCPWARDEN_TRACEHAND_H
#define MCPWARDEN_TRACEHAND_H

#define TRACEHAND_MAX 56

/* Copies tp ("" or NULL: none). */
void tracehand_set(const char *tp);
/* The value set, "" when none (valid until the next set on this thread). */
const char *tracehand_get(void);

#endif

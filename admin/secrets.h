/* secrets: which strings of the configuration are credentials mcpwarden
 * sends upstream, so that they stay out of whatever it shows (records,
 * /calls/stream, /contract, the call log), even when an upstream echoes
 * one back in a tool result.
 *
 * Every such string is added to the redactor's literal values
 * (proxy/hooks/redact.h redact_add_secrets) in every form an echo may
 * carry it: each upstream's Basic value (from the URL's user and
 * password) and what it encodes, the query of its URL (whole, each value
 * raw and decoded), its configured header values (as config.c expanded
 * them) with their credentials alone and in base64, and the client
 * tokens. Values shorter than REDACT_MIN_VALUE_LEN are not masked: they
 * would mask everything. Values only ever join the set (a token replaced
 * by a reload was sent, and may still come back).
 *
 * Not here: a client's own Authorization, passed through when no client
 * tokens are configured (it is the client's, not known before its
 * request); how values are masked (redact.c).
 */
#ifndef MCPWARDEN_SECRETS_H
#define MCPWARDEN_SECRETS_H

struct redact;
struct px_config;

/* Adds cfg's credentials to rd (both borrowed). Safe while workers redact
 * (redact_add_secrets). Logs when memory runs out or the redactor's value
 * table is full (some credentials are then not masked). */
void secrets_add_config(struct redact *rd, const struct px_config *cfg);

#endif

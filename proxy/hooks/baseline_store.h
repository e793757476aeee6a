/* baseline_store: writes an accepted tool listing as a contract baseline
 * file (issue 21, "Live baselines"), atomically: a reader (a restart, a
 * SIGHUP, `mcpwarden check --baseline`) sees the old file or the new one,
 * never a part.
 *
 *   FILE.tmp-XXXXXX  created in FILE's directory (mkstemp: 0600, ours)
 *     <- {"tools":[...]} (indented, newline-terminated, the shape
 *        `check --save-baseline` writes)
 *     fchmod to the old FILE's mode (0644 when there was none), fsync
 *   rename(tmp, FILE), then fsync of the directory (the rename durable)
 *
 * On any failure the temporary file is removed and FILE is untouched.
 * Blocking I/O: called from the admin endpoint's thread on an explicit
 * accept, never on the data path. Not here: deciding what to accept
 * (hook_contract.c), loading a baseline (contract_conf.c).
 */
#ifndef MCPWARDEN_BASELINE_STORE_H
#define MCPWARDEN_BASELINE_STORE_H

#include <stddef.h>
#include <jansson.h>

/* Mode of a new baseline file when none existed before. */
#define BASELINE_STORE_NEW_MODE 0644

/* Writes {"tools": tools} (tools borrowed: a JSON array) to file as above.
 * Returns 0; 1 when the file is in place but its directory's fsync failed
 * (err says so: worth a warning, nothing to undo); -1 with the reason
 * ("FILE: what failed: strerror") in err, FILE untouched. */
int baseline_store_write(const char *file, const json_t *tools, char *err, size_t errlen);

/* What a reviewer saw (issue 21: accept only the listing reviewed): the
 * SHA-256 of tools' compact JSON (members in order), as 64 lowercase hex
 * digits and a NUL in hex. The same tools give the same digest on every
 * replica. Returns 0, or -1 when memory runs out. */
#define BASELINE_STORE_DIGEST_HEX 65
int baseline_store_digest(const json_t *tools, char hex[BASELINE_STORE_DIGEST_HEX]);

#endif

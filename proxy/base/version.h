/* version: the one version string of the build, and the --version text.
 *
 * The string comes from the build (the Makefile passes -DMCPWARDEN_VERSION
 * from `git describe --tags --always --dirty`, a VERSION file, or
 * "0.2.0-unknown") into version.c alone, so a new commit rebuilds one
 * object and relinks. Every module that names the program's version (the
 * start-up log line, `check`'s clientInfo, --version) asks here, so they
 * cannot disagree.
 */
#ifndef MCPWARDEN_VERSION_H
#define MCPWARDEN_VERSION_H

#include <stdio.h>

/* The version, e.g. "0.2.0-14-gb874b12-dirty"; static storage. */
const char *version_get(void);

/* Writes the --version text to out: "mcpwarden VERSION", then one line per
 * library as it runs (libevent and jansson report their loaded versions,
 * OpenSSL its loaded library; llhttp is compiled in, so its header's
 * version is the one that runs). */
void version_print(FILE *out);

#endif

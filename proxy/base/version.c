/* version: see version.h. The only file compiled with -DMCPWARDEN_VERSION. */
#include "proxy/base/version.h"

#include <event2/event.h>
#include <jansson.h>
#include <llhttp.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>

/* A build outside the Makefile (an IDE, a one-off cc line) still links. */
#ifndef MCPWARDEN_VERSION
#define MCPWARDEN_VERSION "0.2.0-unknown"
#endif

/* Stringify the llhttp header's numbers once, at compile time. */
#define VERSION_STR_(x) #x
#define VERSION_STR(x)  VERSION_STR_(x)
#define VERSION_LLHTTP                                                          \
	VERSION_STR(LLHTTP_VERSION_MAJOR) "." VERSION_STR(LLHTTP_VERSION_MINOR) "." \
	VERSION_STR(LLHTTP_VERSION_PATCH)

const char *version_get(void)
{
	return MCPWARDEN_VERSION;
}

/* OpenSSL 3 gives the bare number ("3.0.19", as pkg-config spells it);
 * 1.1 only the banner ("OpenSSL 1.1.1w  11 Sep 2023"). */
static const char *version_openssl(void)
{
#ifdef OPENSSL_VERSION_STRING
	return OpenSSL_version(OPENSSL_VERSION_STRING);
#else
	return OpenSSL_version(OPENSSL_VERSION);
#endif
}

void version_print(FILE *out)
{
	fprintf(out, "mcpwarden %s\n", version_get());
	fprintf(out, "libevent %s\n", event_get_version());
	fprintf(out, "jansson %s\n", jansson_version_str());
	fprintf(out, "openssl %s\n", version_openssl());
	fprintf(out, "llhttp %s\n", VERSION_LLHTTP);
}

/* tls: OpenSSL contexts for the client listener and for https upstreams.
 *
 * Server side: certificate and key files, TLS 1.2 minimum, modern AEAD
 * ciphers only; a new context is built on SIGHUP and swapped in for new
 * connections. Client side: verification against the system store (or a
 * configured CA file), hostname (or IP) verification and SNI on by default;
 * `insecure_skip_verify` turns verification off and is logged loudly;
 * optional client certificate for mTLS.
 *
 * Error reasons are static strings; OpenSSL's own queue is drained here so
 * one connection's failure never shows up in another's.
 */
#ifndef MCPWARDEN_TLS_H
#define MCPWARDEN_TLS_H

#include <stddef.h>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
struct bufferevent;

/* Returns a new context, or NULL with a reason in err. */
SSL_CTX *tls_server_ctx_new(const char *cert_file, const char *key_file, char *err,
                            size_t errlen);

struct tls_client_opts {
	const char *ca_file;       /* NULL: the system store */
	const char *cert_file;     /* client certificate (mTLS), or NULL */
	const char *key_file;
	int insecure_skip_verify;
};
SSL_CTX *tls_client_ctx_new(const struct tls_client_opts *o, char *err, size_t errlen);

/* A client session for `host`: SNI (names only) and the name or IP the
 * certificate must carry (unless the context skips verification). */
SSL *tls_client_ssl_new(SSL_CTX *ctx, const char *host);

/* What a server context presents, for the log: "subject CN=…, serial 0x…,
 * expires …" into buf (always NUL-terminated). Certificates are public:
 * nothing secret is written. */
void tls_describe(SSL_CTX *ctx, char *buf, size_t len);

/* Why a TLS bufferevent failed, as a static string. */
const char *tls_error_reason(struct bufferevent *bev);

void tls_ctx_free(SSL_CTX *ctx);

#endif

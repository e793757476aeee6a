/* tls: see tls.h. */
#include "proxy/net/tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

/* TLS 1.2 suites with forward secrecy and AEAD only; TLS 1.3 suites are
 * OpenSSL's defaults, all of which qualify. */
static const char cipher_list[] =
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

static void ssl_err(char *err, size_t errlen, const char *what, const char *file)
{
	unsigned long e = ERR_get_error();
	char buf[256] = "unknown error";
	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	snprintf(err, errlen, "%s%s%s: %s", what, file ? " " : "", file ? file : "", buf);
}

static int ctx_common(SSL_CTX *ctx)
{
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
	                             SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	return SSL_CTX_set_cipher_list(ctx, cipher_list) == 1 ? 0 : -1;
}

SSL_CTX *tls_server_ctx_new(const char *cert_file, const char *key_file, char *err,
                            size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx || ctx_common(ctx) < 0) {
		ssl_err(err, errlen, "TLS context", NULL);
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
		ssl_err(err, errlen, "TLS certificate", cert_file);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
		/* OpenSSL checks the pair while loading: say it plainly (a
		 * half-replaced pair is the common mistake on reload). */
		int mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
		ssl_err(err, errlen, mismatch ? "TLS key does not match the certificate:" : "TLS key",
		        key_file);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		ssl_err(err, errlen, "TLS key does not match the certificate", NULL);
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL_CTX *tls_client_ctx_new(const struct tls_client_opts *o, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || ctx_common(ctx) < 0) {
		ssl_err(err, errlen, "TLS context", NULL);
		goto fail;
	}
	if (o->insecure_skip_verify) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		int ok = o->ca_file ? SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL)
		                    : SSL_CTX_set_default_verify_paths(ctx);
		if (ok != 1) {
			ssl_err(err, errlen, "TLS CA file", o->ca_file);
			goto fail;
		}
	}
	if (o->cert_file) {
		if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1) {
			ssl_err(err, errlen, "TLS client certificate", o->cert_file);
			goto fail;
		}
		if (SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(ctx) != 1) {
			ssl_err(err, errlen, "TLS client key", o->key_file);
			goto fail;
		}
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL *tls_client_ssl_new(SSL_CTX *ctx, const char *host)
{
	SSL *ssl = SSL_new(ctx);
	unsigned char addr[16];
	int is_ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;

	if (!ssl)
		return NULL;
	if (SSL_CTX_get_verify_mode(ctx) != SSL_VERIFY_NONE) {
		X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
		X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host)
		               : X509_VERIFY_PARAM_set1_host(param, host, 0);
		if (ok != 1) {
			SSL_free(ssl);
			return NULL;
		}
	}
	/* SNI carries names, never addresses (RFC 6066 §3). */
	/* The macro casts the name to void *: through uintptr_t, so that
	 * dropping const is visible here and not a warning. */
	if (!is_ip && SSL_set_tlsext_host_name(ssl, (char *)(uintptr_t)host) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

void tls_describe(SSL_CTX *ctx, char *buf, size_t len)
{
	X509 *cert = ctx ? SSL_CTX_get0_certificate(ctx) : NULL;
	BIO *b = cert ? BIO_new(BIO_s_mem()) : NULL;
	BIGNUM *serial = cert ? ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL) : NULL;
	char *hex = serial ? BN_bn2hex(serial) : NULL;
	char *text = NULL;
	long n = 0;

	snprintf(buf, len, "no certificate");
	if (b && hex) {
		BIO_puts(b, "subject ");
		X509_NAME_print_ex(b, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
		BIO_printf(b, ", serial 0x%s, expires ", hex);
		ASN1_TIME_print(b, X509_get0_notAfter(cert));
		n = BIO_get_mem_data(b, &text);
	}
	if (text && n > 0)
		snprintf(buf, len, "%.*s", (int)n, text);
	OPENSSL_free(hex);
	BN_free(serial);
	BIO_free(b);
	ERR_clear_error();
}

const char *tls_error_reason(struct bufferevent *bev)
{
	unsigned long e, first = 0;
	/* Drain everything queued for this connection; keep the first. */
	while ((e = bufferevent_get_openssl_error(bev)) != 0)
		if (!first)
			first = e;
	if (!first)
		return "TLS connection failed";
	switch (ERR_GET_REASON(first)) {
	case SSL_R_CERTIFICATE_VERIFY_FAILED:
		return "TLS: the upstream's certificate did not verify (untrusted, expired or for another host)";
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_UNSUPPORTED_PROTOCOL:
		return "TLS: no common protocol version (is it speaking TLS?)";
	case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
	case SSL_R_NO_SHARED_CIPHER:
		return "TLS handshake failed: no common cipher";
	default:
		return "TLS handshake failed";
	}
}

void tls_ctx_free(SSL_CTX *ctx)
{
	SSL_CTX_free(ctx);
}

/*
 * tls.c - keel serve's HTTPS (docs/http.md, "TLS"): the certificate
 * and private key read from their PEM files for libmicrohttpd, which
 * speaks TLS through GnuTLS. libmicrohttpd takes both as text in memory;
 * reading them here lets every message name the file at fault, where
 * libmicrohttpd could only say that "the certificate/key" failed.
 *
 * Every certificate of the file must be valid now: one that has expired
 * or is not valid yet is refused at start, naming it and its dates,
 * rather than served to clients that will all refuse it (GnuTLS, which
 * libmicrohttpd already loads, reads the dates).
 */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <gnutls/x509.h>

/* A certificate chain or a key is a few KiB; anything this large is not
 * one. */
#define PEM_MAX (1u << 20)

/* Reads path whole into a NUL-terminated string (PEM is text, and
 * libmicrohttpd wants it so). */
static int read_pem(const char *what, const char *path, struct keel_buf *out,
		    struct keel_buf *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		/* Lowercase, as every Keel message: "no such file or directory". */
		size_t at = err->len + strlen(what) + strlen(path) + 5;
		keel_buf_addf(err, "%s \"%s\": %s", what, path, strerror(errno));
		if (err->data[at] >= 'A' && err->data[at] <= 'Z')
			err->data[at] = (char)(err->data[at] - 'A' + 'a');
		return KEEL_EIO;
	}
	char chunk[4096];
	size_t got;
	int rc = 0;
	while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
		keel_buf_add(out, chunk, got);
		if (out->len > PEM_MAX) {
			keel_buf_addf(err, "%s \"%s\": larger than 1 MiB, not a PEM file",
				      what, path);
			rc = KEEL_EIO;
			break;
		}
	}
	if (!rc && ferror(f)) {
		keel_buf_addf(err, "%s \"%s\": read error", what, path);
		rc = KEEL_EIO;
	}
	fclose(f);
	if (!rc && out->len && memchr(out->data, 0, out->len)) {
		keel_buf_addf(err, "%s \"%s\": contains a NUL byte, not a PEM file", what,
			      path);
		rc = KEEL_EIO;
	}
	keel_buf_addc(out, 0);
	return rc;
}

/* Whether text holds a PEM block whose label ends with suffix
 * ("-----BEGIN <...suffix>-----"): a file of the wrong kind (a key given
 * as the certificate, a DER file) is named before GnuTLS sees it. */
static bool has_pem_block(const char *text, const char *suffix)
{
	size_t slen = strlen(suffix);
	for (const char *p = strstr(text, "-----BEGIN "); p;
	     p = strstr(p + 1, "-----BEGIN ")) {
		const char *label = p + 11;
		const char *end = strstr(label, "-----");
		if (!end || memchr(label, '\n', (size_t)(end - label)))
			continue;
		size_t llen = (size_t)(end - label);
		if (llen >= slen && memcmp(end - slen, suffix, slen) == 0)
			return true;
	}
	return false;
}

/* t as an RFC 3339 UTC time, for messages. */
static void format_time(time_t t, char out[32])
{
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "(unknown time)");
}

/* The certificate's subject, for messages (e.g. "CN=keel.example"). */
static void subject_of(gnutls_x509_crt_t crt, char *out, size_t size)
{
	size_t n = size;
	if (gnutls_x509_crt_get_dn(crt, out, &n) != GNUTLS_E_SUCCESS || !n)
		snprintf(out, size, "(no subject)");
}

/* Every certificate of the PEM text valid at now: false with the reason
 * in err (which certificate, its dates) when one has expired or is not
 * valid yet. Text GnuTLS cannot read is left to libmicrohttpd, whose
 * start then names both files (keel_server_start). */
static bool certs_valid_now(const char *path, const char *pem, time_t now, struct keel_buf *err)
{
	gnutls_datum_t data = {(unsigned char *)(uintptr_t)pem, (unsigned int)strlen(pem)};
	gnutls_x509_crt_t *crts = NULL;
	unsigned int n = 0;
	if (gnutls_x509_crt_list_import2(&crts, &n, &data, GNUTLS_X509_FMT_PEM, 0) < 0)
		return true;
	bool ok = true;
	for (unsigned int i = 0; ok && i < n; i++) {
		time_t from = gnutls_x509_crt_get_activation_time(crts[i]);
		time_t to = gnutls_x509_crt_get_expiration_time(crts[i]);
		bool early = from != (time_t)-1 && now < from;
		bool late = to != (time_t)-1 && now > to;
		if (!early && !late)
			continue;
		char who[512], f[32], t[32], at[32];
		subject_of(crts[i], who, sizeof who);
		format_time(from, f);
		format_time(to, t);
		format_time(now, at);
		keel_buf_addf(err,
			      "--tls-cert \"%s\": certificate %u of %u (%s) %s: valid from %s "
			      "to %s, and it is %s; clients would refuse it (%s)",
			      path, i + 1, n, who, late ? "has expired" : "is not valid yet", f,
			      t, at, late ? "renew it" : "check this machine's clock");
		ok = false;
	}
	for (unsigned int i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	return ok;
}

int keel_http_tls_load(struct keel_server *srv, struct keel_buf *err)
{
	const char *cert = srv->o.tls_cert, *key = srv->o.tls_key;
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		keel_buf_adds(err, "--tls-cert: this libmicrohttpd was built without TLS "
				   "(Debian's libmicrohttpd12 has it, through GnuTLS)");
		return KEEL_EIO;
	}
	int rc = read_pem("--tls-cert", cert, &srv->tls_cert_pem, err);
	if (!rc && !has_pem_block(srv->tls_cert_pem.data, "CERTIFICATE")) {
		keel_buf_addf(err,
			      "--tls-cert \"%s\": no PEM certificate in it "
			      "(-----BEGIN CERTIFICATE-----)",
			      cert);
		rc = KEEL_EIO;
	}
	if (!rc && !certs_valid_now(cert, srv->tls_cert_pem.data, time(NULL), err))
		rc = KEEL_EIO;
	if (!rc)
		rc = read_pem("--tls-key", key, &srv->tls_key_pem, err);
	if (!rc && !has_pem_block(srv->tls_key_pem.data, "PRIVATE KEY")) {
		keel_buf_addf(err,
			      "--tls-key \"%s\": no PEM private key in it "
			      "(-----BEGIN PRIVATE KEY----- or the like)",
			      key);
		rc = KEEL_EIO;
	}
	return rc;
}

void keel_http_tls_free(struct keel_server *srv)
{
	/* The key's bytes do not outlive the server in freed memory. */
	if (srv->tls_key_pem.data)
		explicit_bzero(srv->tls_key_pem.data, srv->tls_key_pem.len);
	keel_buf_free(&srv->tls_key_pem);
	keel_buf_free(&srv->tls_cert_pem);
}

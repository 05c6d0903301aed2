/*
 * url.c - parsing mysql://user:password@host:port/db[?options] URLs
 * into their parts, and the URL with its password masked for messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <mysql.h>

#include "parts.h"

/* ------------------------------------------------------------------ URL */

/* Percent-decodes p[0..n) into a new string; false on a bad escape or %00
 * (a NUL cannot reach the connector's C strings). */
static bool keel_mysql_pct_decode(const char *p, size_t n, char **out)
{
	char *s = keel_xmalloc(n + 1);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '%') {
			s[k++] = p[i];
			continue;
		}
		int hi = i + 2 < n ? keel_hex_digit(p[i + 1]) : -1;
		int lo = i + 2 < n ? keel_hex_digit(p[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(s);
			return false;
		}
		s[k++] = (char)(hi * 16 + lo);
		i += 2;
	}
	s[k] = 0;
	*out = s;
	return true;
}

static bool keel_mysql_uint(const char *p, size_t n, unsigned long max, unsigned *out)
{
	if (n == 0 || n > 10)
		return false;
	unsigned long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

void keel_mysql_url_free(struct keel_mysql_url *u)
{
	free(u->user);
	free(u->password);
	free(u->host);
	free(u->db);
	free(u->socket);
	free(u->ssl_ca);
	keel_buf_free(&u->shown);
	memset(u, 0, sizeof *u);
}

/* The URL as messages show it: the password replaced by "***". */
static void keel_mysql_url_shown(const char *url, struct keel_buf *out)
{
	keel_buf_reset(out);
	const char *p = url + strlen("mysql://");
	size_t auth = strcspn(p, "/?#");
	const char *at = NULL;
	for (size_t i = 0; i < auth; i++)
		if (p[i] == '@')
			at = p + i;
	const char *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
	if (!colon) {
		keel_buf_adds(out, url);
		return;
	}
	keel_buf_add(out, url, (size_t)(colon - url));
	keel_buf_adds(out, ":***");
	keel_buf_adds(out, at);
}

static int keel_mysql_url_fail(struct keel_mysql_url *u, struct keel_buf *err,
			       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int keel_mysql_url_fail(struct keel_mysql_url *u, struct keel_buf *err,
			       const char *fmt, ...)
{
	keel_buf_addf(err, "store \"%s\": ", u->shown.data);
	va_list ap;
	va_start(ap, fmt);
	keel_buf_vaddf(err, fmt, ap);
	va_end(ap);
	keel_mysql_url_free(u);
	return KEEL_EURL;
}

/* ssl-mode's values, in the order of enum keel_mysql_ssl_mode. */
static const char *const keel_mysql_ssl_modes[] = {
    "preferred", "disabled", "required", "verify-ca", "verify-identity",
};

/* Reads an ssl-mode= value, in either case (MySQL's clients write them in
 * capitals). */
static bool keel_mysql_ssl_mode_parse(const char *v, size_t n, enum keel_mysql_ssl_mode *out)
{
	for (size_t i = 0; i < sizeof keel_mysql_ssl_modes / sizeof keel_mysql_ssl_modes[0];
	     i++) {
		if (strlen(keel_mysql_ssl_modes[i]) == n &&
		    strncasecmp(v, keel_mysql_ssl_modes[i], n) == 0) {
			*out = (enum keel_mysql_ssl_mode)i;
			return true;
		}
	}
	return false;
}

const char *keel_mysql_ssl_mode_name(enum keel_mysql_ssl_mode m)
{
	return keel_mysql_ssl_modes[m];
}

/* mysql://[user[:password]@]host[:port]/db[?socket=PATH&connect_timeout=S
 * &read_timeout=S&ssl-mode=MODE&ssl-ca=FILE]; user, password, db and
 * parameter values are percent-decoded. */
int keel_mysql_url_parse(const char *url, struct keel_mysql_url *u, struct keel_buf *err)
{
	memset(u, 0, sizeof *u);
	keel_buf_init(&u->shown);
	u->port = 3306;
	u->connect_timeout = 10;
	u->read_timeout = 600;
	if (strncmp(url, "mysql://", 8) != 0) {
		keel_buf_adds(&u->shown, url);
		return keel_mysql_url_fail(u, err, "expected " KEEL_MYSQL_URL_FORM);
	}
	keel_mysql_url_shown(url, &u->shown);
	const char *p = url + 8;
	size_t auth = strcspn(p, "/?#");
	const char *host = p;
	size_t host_len = auth;
	const char *at = NULL;
	for (size_t i = 0; i < auth; i++)
		if (p[i] == '@')
			at = p + i;
	if (at) {
		size_t ui = (size_t)(at - p);
		const char *colon = memchr(p, ':', ui);
		size_t ulen = colon ? (size_t)(colon - p) : ui;
		if (ulen && !keel_mysql_pct_decode(p, ulen, &u->user))
			return keel_mysql_url_fail(u, err,
						   "bad percent-escape in the user name");
		if (colon && !keel_mysql_pct_decode(colon + 1, (size_t)(at - colon - 1),
						    &u->password))
			return keel_mysql_url_fail(u, err,
						   "bad percent-escape in the password");
		host = at + 1;
		host_len = auth - ui - 1;
	}
	/* host[:port], host may be an [IPv6] literal */
	const char *port = NULL;
	size_t name_len = host_len;
	if (host_len && host[0] == '[') {
		const char *close = memchr(host, ']', host_len);
		if (!close)
			return keel_mysql_url_fail(u, err, "unterminated [ in the host");
		name_len = (size_t)(close - host) + 1;
		if (name_len < host_len) {
			if (host[name_len] != ':')
				return keel_mysql_url_fail(u, err,
							   "unexpected text after ]");
			port = host + name_len + 1;
		}
		if (name_len > 2)
			u->host = keel_xstrndup(host + 1, name_len - 2);
	} else {
		const char *colon = memchr(host, ':', host_len);
		if (colon) {
			name_len = (size_t)(colon - host);
			port = colon + 1;
		}
		if (name_len)
			u->host = keel_xstrndup(host, name_len);
	}
	if (port &&
	    !keel_mysql_uint(port, (size_t)(host + host_len - port), 65535, &u->port))
		return keel_mysql_url_fail(u, err,
					   "port must be a number from 1 to 65535");
	if (port && u->port == 0)
		return keel_mysql_url_fail(u, err,
					   "port must be a number from 1 to 65535");
	if (u->host && strchr(u->host, '%'))
		return keel_mysql_url_fail(u, err, "bad character %% in the host");

	p += auth;
	if (*p != '/' || p[1] == 0 || p[1] == '?' || p[1] == '#')
		return keel_mysql_url_fail(
		    u, err, "missing database name (" KEEL_MYSQL_URL_FORM ")");
	p++;
	size_t db_len = strcspn(p, "?#");
	if (memchr(p, '/', db_len))
		return keel_mysql_url_fail(u, err, "bad database name: it contains /");
	if (!keel_mysql_pct_decode(p, db_len, &u->db))
		return keel_mysql_url_fail(u, err,
					   "bad percent-escape in the database name");
	p += db_len;
	if (*p == '#')
		return keel_mysql_url_fail(u, err, "unexpected # in the URL");
	if (*p == '?')
		p++;
	while (*p) {
		size_t n = strcspn(p, "&#");
		if (p[n] == '#')
			return keel_mysql_url_fail(u, err, "unexpected # in the URL");
		const char *eq = memchr(p, '=', n);
		size_t klen = eq ? (size_t)(eq - p) : n;
		const char *v = eq ? eq + 1 : p + n;
		size_t vlen = (size_t)(p + n - v);
		if (klen == 6 && !memcmp(p, "socket", 6)) {
			free(u->socket);
			u->socket = NULL;
			if (!vlen || !keel_mysql_pct_decode(v, vlen, &u->socket))
				return keel_mysql_url_fail(u, err, "bad socket path");
		} else if (klen == 15 && !memcmp(p, "connect_timeout", 15)) {
			if (!keel_mysql_uint(v, vlen, 86400, &u->connect_timeout) ||
			    !u->connect_timeout)
				return keel_mysql_url_fail(
				    u, err, "connect_timeout must be 1 to 86400 seconds");
		} else if (klen == 12 && !memcmp(p, "read_timeout", 12)) {
			if (!keel_mysql_uint(v, vlen, 86400, &u->read_timeout) ||
			    !u->read_timeout)
				return keel_mysql_url_fail(
				    u, err, "read_timeout must be 1 to 86400 seconds");
		} else if (klen == 8 && !memcmp(p, "ssl-mode", 8)) {
			if (!keel_mysql_ssl_mode_parse(v, vlen, &u->ssl_mode))
				return keel_mysql_url_fail(
				    u, err,
				    "ssl-mode \"%.*s\": expected disabled, preferred, "
				    "required, verify-ca or verify-identity",
				    (int)(vlen > 40 ? 40 : vlen), v);
		} else if (klen == 6 && !memcmp(p, "ssl-ca", 6)) {
			free(u->ssl_ca);
			u->ssl_ca = NULL;
			if (!vlen || !keel_mysql_pct_decode(v, vlen, &u->ssl_ca))
				return keel_mysql_url_fail(u, err, "bad ssl-ca path");
		} else {
			return keel_mysql_url_fail(
			    u, err,
			    "unknown parameter \"%.*s\" (expected socket, "
			    "connect_timeout, read_timeout, ssl-mode or ssl-ca)",
			    (int)klen, p);
		}
		p += n;
		if (*p == '&')
			p++;
	}
	/* A CA nothing would check against, or a check with nothing to
	 * check against, is a mistake in the URL, not a choice. */
	if (u->ssl_ca && u->ssl_mode == KEEL_MYSQL_SSL_DISABLED)
		return keel_mysql_url_fail(u, err,
					   "ssl-ca with ssl-mode=disabled: no TLS, "
					   "no certificate to check against it");
	if (!u->ssl_ca && u->ssl_mode == KEEL_MYSQL_SSL_VERIFY_CA)
		return keel_mysql_url_fail(u, err,
					   "ssl-mode=verify-ca needs ssl-ca=FILE, the CA "
					   "certificate to check the server's against");
	if (u->socket && u->host && strcmp(u->host, "localhost") != 0)
		return keel_mysql_url_fail(
		    u, err, "socket= needs the host localhost or none, not \"%s\"",
		    u->host);
	return 0;
}

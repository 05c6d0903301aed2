/*
 * url.c - postgres:// (or postgresql://) URLs: parsed by libpq's own
 * parser (PQconninfoParse), so that a URL means what it means to psql and
 * every other libpq program (percent-decoding, [IPv6] hosts, several
 * hosts, ?host=/socket/dir, sslmode=, sslrootcert=, ...), checked here for
 * what Keel needs (a database, a known sslmode) with one-line messages,
 * and shown with its password masked.
 *
 * Nothing of the environment is read here: PQconninfoParse returns only
 * what the URL says. libpq's usual defaults (PGHOST, PGPASSWORD, a
 * ~/.pgpass file) still apply when connecting, as for psql.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* The URL as messages show it: a password (in the user part or as
 * password=) replaced by "***". */
static void keel_pg_url_shown(const char *url, struct keel_buf *out)
{
	keel_buf_reset(out);
	const char *p = strstr(url, "://");
	p = p ? p + 3 : url;
	size_t auth = strcspn(p, "/?#");
	const char *at = NULL;
	for (size_t i = 0; i < auth; i++)
		if (p[i] == '@')
			at = p + i;
	const char *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
	const char *rest = p;
	if (colon) {
		keel_buf_add(out, url, (size_t)(colon - url));
		keel_buf_adds(out, ":***");
		rest = at;
	} else {
		keel_buf_add(out, url, (size_t)(p - url));
	}
	/* the rest, with the value of any password= parameter masked */
	const char *q = strchr(rest, '?');
	if (!q) {
		keel_buf_adds(out, rest);
		return;
	}
	keel_buf_add(out, rest, (size_t)(q - rest));
	while (*q) {
		size_t n = strcspn(q + 1, "&") + 1; /* the separator and the pair */
		if (n >= 10 && !strncmp(q + 1, "password=", 9)) {
			keel_buf_add(out, q, 10);
			keel_buf_adds(out, "***");
		} else {
			keel_buf_add(out, q, n);
		}
		q += n;
	}
}

void keel_pg_url_free(struct keel_pg_url *u)
{
	free(u->keys);
	free(u->values);
	free(u->host);
	if (u->parsed)
		PQconninfoFree(u->parsed);
	keel_buf_free(&u->shown);
	memset(u, 0, sizeof *u);
}

static int keel_pg_url_fail(struct keel_pg_url *u, struct keel_buf *err, const char *fmt,
			    ...) __attribute__((format(printf, 3, 4)));
static int keel_pg_url_fail(struct keel_pg_url *u, struct keel_buf *err, const char *fmt,
			    ...)
{
	keel_buf_addf(err, "store \"%s\": ", u->shown.data);
	va_list ap;
	va_start(ap, fmt);
	keel_buf_vaddf(err, fmt, ap);
	va_end(ap);
	keel_pg_url_free(u);
	return KEEL_EURL;
}

static const char *const keel_pg_sslmodes[] = {"disable", "allow",     "prefer",
					       "require", "verify-ca", "verify-full"};

/* libpq's settings Keel makes unless the URL makes them: a bounded wait
 * for the server, the name the server's pg_stat_activity shows. */
static const char *const keel_pg_defaults[][2] = {
    {"connect_timeout", "10"},
    {"application_name", "keel"},
};

int keel_pg_url_parse(const char *url, struct keel_pg_url *u, struct keel_buf *err)
{
	memset(u, 0, sizeof *u);
	keel_buf_init(&u->shown);
	keel_pg_url_shown(url, &u->shown);
	if (strncmp(url, "postgres://", 11) != 0 &&
	    strncmp(url, "postgresql://", 13) != 0)
		return keel_pg_url_fail(
		    u, err, "expected " KEEL_PG_URL_FORM " (or postgresql://...)");
	char *why = NULL;
	u->parsed = PQconninfoParse(url, &why);
	if (!u->parsed) {
		struct keel_buf m;
		keel_buf_init(&m);
		keel_buf_adds(&m, why ? why : "out of memory");
		while (m.len && (m.data[m.len - 1] == '\n' || m.data[m.len - 1] == ' '))
			m.data[--m.len] = 0;
		PQfreemem(why);
		int rc = keel_pg_url_fail(u, err, "%s", m.data);
		keel_buf_free(&m);
		return rc;
	}
	size_t n = 0;
	for (PQconninfoOption *o = u->parsed; o->keyword; o++)
		n++;
	u->keys = keel_xcalloc(n + KEEL_ARRAY_LEN(keel_pg_defaults) + 2, sizeof *u->keys);
	u->values =
	    keel_xcalloc(n + KEEL_ARRAY_LEN(keel_pg_defaults) + 2, sizeof *u->values);
	bool given[KEEL_ARRAY_LEN(keel_pg_defaults)] = {false};
	for (PQconninfoOption *o = u->parsed; o->keyword; o++) {
		if (!o->val)
			continue;
		const char *k = o->keyword;
		if (!strcmp(k, "host"))
			u->host = keel_xstrdup(o->val);
		else if (!strcmp(k, "hostaddr") && !u->host)
			u->host = keel_xstrdup(o->val);
		else if (!strcmp(k, "port"))
			u->port = o->val;
		else if (!strcmp(k, "dbname"))
			u->db = o->val;
		else if (!strcmp(k, "user"))
			u->user = o->val;
		else if (!strcmp(k, "sslmode"))
			u->sslmode = o->val;
		else if (!strcmp(k, "client_encoding"))
			continue; /* always UTF8, below */
		for (size_t i = 0; i < KEEL_ARRAY_LEN(keel_pg_defaults); i++)
			given[i] |= !strcmp(k, keel_pg_defaults[i][0]);
		u->keys[u->n] = k;
		u->values[u->n++] = o->val;
	}
	for (size_t i = 0; i < KEEL_ARRAY_LEN(keel_pg_defaults); i++) {
		if (given[i])
			continue;
		u->keys[u->n] = keel_pg_defaults[i][0];
		u->values[u->n++] = keel_pg_defaults[i][1];
	}
	/* Keel's strings are UTF-8, and so are the bytes it reads back. */
	u->keys[u->n] = "client_encoding";
	u->values[u->n++] = "UTF8";
	if (!u->db || !*u->db)
		return keel_pg_url_fail(u, err,
					"missing database name (" KEEL_PG_URL_FORM ")");
	if (u->sslmode) {
		bool known = false;
		for (size_t i = 0; i < KEEL_ARRAY_LEN(keel_pg_sslmodes); i++)
			known |= !strcmp(u->sslmode, keel_pg_sslmodes[i]);
		if (!known)
			return keel_pg_url_fail(
			    u, err,
			    "sslmode \"%.40s\": expected disable, allow, "
			    "prefer, require, verify-ca or verify-full",
			    u->sslmode);
	}
	if (!u->host)
		u->host = keel_xstrdup("the default socket");
	return 0;
}

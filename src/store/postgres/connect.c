/*
 * connect.c - connecting to the server (one-line errors for passwords,
 * databases, hosts and TLS), what the session needs, and opening and
 * closing the store.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* The oldest server the store's SQL runs on. */
#define KEEL_PG_MIN_VERSION 120000

static void keel_pg_connect_error(struct keel_pg_store *g, struct keel_buf *err)
{
	const struct keel_pg_url *u = &g->url;
	const char *msg = g->conn ? PQerrorMessage(g->conn) : "out of memory";
	keel_buf_addf(err, "store \"%s\": ", u->shown.data);
	if (strstr(msg, "password authentication failed") ||
	    strstr(msg, "no password supplied")) {
		keel_buf_addf(
		    err, "access denied for user \"%s\" (wrong user name or password)",
		    u->user ? u->user : "");
		return;
	}
	const char *db = strstr(msg, "database \"");
	if (db && strstr(db, "\" does not exist")) {
		keel_buf_addf(err, "database \"%s\" does not exist", u->db);
		return;
	}
	bool tls = strstr(msg, "SSL") || strstr(msg, "certificate");
	if (tls) {
		keel_buf_addf(err, "TLS with the server at %s%s%s failed (sslmode=%s): ",
			      u->host, u->port ? ":" : "", u->port ? u->port : "",
			      u->sslmode ? u->sslmode : "prefer");
		/* libpq's own words name the check that failed */
		const char *reason = strstr(msg, "failed: ");
		keel_pg_one_line(err,
				 reason && reason < strstr(msg, "\n") ? reason + 8 : msg);
		return;
	}
	keel_buf_adds(err, "cannot connect: ");
	keel_pg_one_line(err, msg);
}

/* An sslrootcert that cannot be read is a mistake in the URL: named as
 * such, before anything connects. */
static int keel_pg_check_files(struct keel_pg_store *g, struct keel_buf *err)
{
	for (size_t i = 0; i < g->url.n; i++) {
		const char *k = g->url.keys[i];
		if (strcmp(k, "sslrootcert") && strcmp(k, "sslcert") &&
		    strcmp(k, "sslkey"))
			continue;
		if (!strcmp(k, "sslrootcert") && !strcmp(g->url.values[i], "system"))
			continue;
		FILE *f = fopen(g->url.values[i], "r");
		if (!f) {
			int e = errno;
			keel_buf_addf(err, "store \"%s\": %s \"%s\": %s",
				      g->url.shown.data, k, g->url.values[i],
				      strerror(e));
			return KEEL_ESTORE;
		}
		fclose(f);
	}
	return 0;
}

/* The server's notices (a WARNING as it shuts down, a NOTICE of an
 * object that exists already) are not the user's business: what matters
 * reaches Keel as an error of the statement. */
static void keel_pg_ignore_notice(void *ud, const char *message)
{
	(void)ud;
	(void)message;
}

/* Connects and checks the server; on failure writes a one-line message
 * into err. */
int keel_pg_connect(struct keel_pg_store *g, struct keel_buf *err)
{
	int rc = keel_pg_check_files(g, err);
	if (rc)
		return rc;
	g->conn = PQconnectdbParams(g->url.keys, g->url.values, 0);
	if (!g->conn || PQstatus(g->conn) != CONNECTION_OK) {
		keel_pg_connect_error(g, err);
		return KEEL_ESTORE;
	}
	PQsetNoticeProcessor(g->conn, keel_pg_ignore_notice, NULL);
	int version = PQserverVersion(g->conn);
	if (version < KEEL_PG_MIN_VERSION) {
		keel_buf_addf(err,
			      "store \"%s\": server version %d is not supported "
			      "(PostgreSQL 12 or later)",
			      g->url.shown.data, version);
		return KEEL_ESTORE;
	}
	/* Keel's strings are UTF-8 text: a database of another encoding
	 * would refuse some of them (SQL_ASCII takes any bytes). */
	const char *enc = PQparameterStatus(g->conn, "server_encoding");
	if (enc && strcmp(enc, "UTF8") && strcmp(enc, "SQL_ASCII")) {
		keel_buf_addf(err,
			      "store \"%s\": database \"%s\" has the encoding %s: keel "
			      "needs UTF8 (CREATE DATABASE ... ENCODING 'UTF8')",
			      g->url.shown.data, g->url.db, enc);
		return KEEL_ESTORE;
	}
	return 0;
}

/* A new connection after the old one was lost (g->broken): only between
 * transactions, since the server rolled the open one back. */
int keel_pg_reconnect(struct keel_pg_store *g)
{
	if (g->conn)
		PQfinish(g->conn);
	g->conn = NULL;
	g->broken = false;
	g->streaming = false;
	struct keel_buf err;
	keel_buf_init(&err);
	g->prepared = 0;
	int rc = keel_pg_connect(g, &err);
	if (rc)
		keel_store_fail(&g->base, rc, "reconnecting: %s", err.data);
	keel_buf_free(&err);
	if (rc) {
		g->broken = true;
		return rc;
	}
	g->stats.reconnects++;
	return 0;
}

static void keel_pg_free(struct keel_pg_store *g)
{
	if (g->conn)
		PQfinish(g->conn);
	keel_pg_url_free(&g->url);
	keel_buf_free(&g->sql);
	for (size_t i = 0; i < KEEL_ARRAY_LEN(g->arrays); i++)
		keel_buf_free(&g->arrays[i]);
	keel_buf_free(&g->copy);
	for (int k = 0; k < 2; k++)
		keel_buf_free(&g->pending[k].rows);
	keel_ptrvec_free(&g->rows);
	keel_map_free(&g->ids);
	free(g->blocks);
	keel_store_base_free(&g->base);
	free(g);
}

/* existing changes nothing: the database must exist already (the store
 * creates its tables, never the database). */
int keel_pg_open(const char *url, bool existing, struct keel_store **out,
		 struct keel_buf *err)
{
	(void)existing;
	*out = NULL;
	struct keel_pg_store *g = keel_xcalloc(1, sizeof *g);
	keel_store_base_init(&g->base, &keel_store_postgres_ops, url);
	keel_buf_init(&g->sql);
	for (size_t i = 0; i < KEEL_ARRAY_LEN(g->arrays); i++)
		keel_buf_init(&g->arrays[i]);
	keel_buf_init(&g->copy);
	for (int k = 0; k < 2; k++)
		keel_buf_init(&g->pending[k].rows);
	keel_map_init(&g->ids);
	/* The largest value a text field takes is 1 GB; a row must also
	 * fit a COPY's 1 GB line: half of it, less room for the rest. */
	g->base.max_envelope = (512u << 20) - 8192;
	g->base.max_envelope_why =
	    "the longest postgres text value Keel writes, less room "
	    "for the rest of its row";
	int rc = keel_pg_url_parse(url, &g->url, err);
	if (rc) {
		keel_pg_free(g);
		return rc;
	}
	rc = keel_pg_connect(g, err);
	if (rc == 0)
		rc = keel_pg_schema(g, err);
	if (rc) {
		keel_pg_free(g);
		return rc;
	}
	*out = &g->base;
	return 0;
}

void keel_pg_close(struct keel_store *s)
{
	keel_pg_free(keel_pg_downcast(s));
}

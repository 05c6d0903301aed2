/*
 * connect.c - connecting to the server (with one-line errors for
 * bad URLs, passwords, databases and hosts), the session settings, and
 * opening and closing the store.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "parts.h"

/* ----------------------------------------------------------- connecting */

static pthread_once_t keel_mysql_once = PTHREAD_ONCE_INIT;

static void keel_mysql_library_init(void)
{
	/* Not thread-safe inside mysql_init; done once here instead. */
	mysql_library_init(0, NULL, NULL);
}

static void keel_mysql_add_errno(struct keel_buf *out, int e);

/* The OS error a connector message ends with, "... (111)", as text. */
static void keel_mysql_os_reason(const char *msg, struct keel_buf *out)
{
	size_t n = strlen(msg);
	if (n > 3 && msg[n - 1] == ')') {
		size_t i = n - 1;
		while (i > 0 && msg[i - 1] >= '0' && msg[i - 1] <= '9')
			i--;
		if (i > 0 && msg[i - 1] == '(' && i < n - 1) {
			keel_mysql_add_errno(
			    out,
			    (int)keel_mysql_i64(msg + i, (unsigned long)(n - 1 - i)));
			return;
		}
	}
	keel_buf_adds(out, msg);
}

/* Why a TCP connection to host:port fails, as errno. Connector/C reports
 * EINPROGRESS for a refused non-blocking connect, which says nothing; one
 * plain connect, only on this failure path, finds the real reason. */
static int keel_mysql_probe(const char *host, unsigned port, unsigned timeout)
{
	char service[16];
	snprintf(service, sizeof service, "%u", port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	if (getaddrinfo(host, service, &hints, &ai) != 0 || !ai)
		return 0;
	int e = 0;
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd >= 0) {
		struct timeval tv = {.tv_sec = (time_t)timeout};
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
			e = errno == EINPROGRESS || errno == EAGAIN ? ETIMEDOUT : errno;
		close(fd);
	}
	freeaddrinfo(ai);
	return e;
}

static void keel_mysql_add_errno(struct keel_buf *out, int e)
{
	size_t at = out->len;
	keel_buf_adds(out, strerror(e));
	if (out->data[at] >= 'A' && out->data[at] <= 'Z')
		out->data[at] = (char)(out->data[at] - 'A' + 'a');
}

static void keel_mysql_connect_error(struct keel_mysql_store *m, struct keel_buf *err)
{
	const struct keel_mysql_url *u = &m->url;
	unsigned e = mysql_errno(m->db);
	const char *msg = mysql_error(m->db);
	keel_buf_addf(err, "store \"%s\": ", u->shown.data);
	switch (e) {
	case ER_ACCESS_DENIED_ERROR:
	case ER_ACCESS_DENIED_NO_PASSWORD_ERROR: /* MariaDB: an unknown user */
		keel_buf_addf(
		    err, "access denied for user \"%s\" (wrong user name or password)",
		    u->user ? u->user : "");
		break;
	case ER_DBACCESS_DENIED_ERROR:
		keel_buf_addf(err, "user \"%s\" may not use database \"%s\"",
			      u->user ? u->user : "", u->db);
		break;
	case ER_BAD_DB_ERROR:
		keel_buf_addf(err, "database \"%s\" does not exist", u->db);
		break;
	case CR_UNKNOWN_HOST:
		keel_buf_addf(err, "unknown host \"%s\"", u->host ? u->host : "");
		break;
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
		if (u->socket || !u->host || !strcmp(u->host, "localhost")) {
			keel_buf_addf(err, "cannot connect through socket \"%s\": ",
				      u->socket ? u->socket : "(the default socket)");
			keel_mysql_os_reason(msg, err);
			break;
		}
		keel_buf_addf(err, "cannot connect to %s:%u: ", u->host, u->port);
		{
			int why = keel_mysql_probe(u->host, u->port, u->connect_timeout);
			if (why)
				keel_mysql_add_errno(err, why);
			else
				keel_mysql_os_reason(msg, err);
		}
		break;
	case CR_SSL_CONNECTION_ERROR:
		/* No TLS where the URL requires it, or a certificate that
		 * fails the check ssl-mode asks for. */
		keel_buf_addf(err, "TLS with the server at %s:%u failed (ssl-mode=%s): ",
			      u->host ? u->host : "localhost", u->port,
			      keel_mysql_ssl_mode_name(u->ssl_mode));
		if (!strncmp(msg, "TLS/SSL error: ", 15))
			msg += 15;
		keel_buf_adds(err, msg);
		break;
	case CR_SERVER_LOST:
		/* Connected, but the handshake never came (or broke off). */
		if (u->socket)
			keel_buf_addf(err, "the server at socket \"%s\"", u->socket);
		else
			keel_buf_addf(err, "the server at %s:%u",
				      u->host ? u->host : "localhost", u->port);
		if (strstr(msg, "system error: 110"))
			keel_buf_addf(err, " did not answer within %u s",
				      u->connect_timeout);
		else
			keel_buf_addf(err, " broke off the handshake: %s", msg);
		break;
	default:
		keel_buf_addf(err, "cannot connect: mysql error %u: %s", e, msg);
		break;
	}
}

/* An event's row must fit in one statement, on the text path too, where
 * escaping may double the envelope: half the packet, less room for the
 * row's other columns (each at most a few hundred bytes). One rule for
 * both paths, so that a server accepts the same events whichever path a
 * connection writes by (docs/store-mysql.md, "Large events"). */
void keel_mysql_set_max_envelope(struct keel_mysql_store *m)
{
	m->base.max_envelope = m->packet > 8192 ? (m->packet - 4096) / 2 : m->packet / 4;
	m->base.max_envelope_why = "half the mysql server's max_allowed_packet, less room "
				   "for the rest of its row";
}

static int keel_mysql_settings_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				   const unsigned long *len, unsigned ncols)
{
	(void)ud;
	(void)ncols;
	uint64_t packet = row[0] ? keel_mysql_u64(row[0], len[0]) : 0;
	/* Leave room for the packet header and our own estimate's slack. */
	m->packet = packet > 65536 ? (size_t)packet - 4096 : 16384;
	keel_mysql_set_max_envelope(m);
	m->autoinc_step = row[1] ? keel_mysql_i64(row[1], len[1]) : 1;
	if (m->autoinc_step < 1)
		m->autoinc_step = 1;
	return 0;
}

/* The URL's ssl-mode and ssl-ca as Connector/C options. Connector/C 3.3
 * (Debian 12's) has no ssl-mode of its own: MYSQL_OPT_SSL_ENFORCE asks for
 * TLS but connects in clear to a server without it (keel_mysql_connect
 * checks afterwards); a CA makes it check the server's certificate chain;
 * MYSQL_OPT_SSL_VERIFY_SERVER_CERT adds the host name (against the system's
 * CAs when there is no ssl-ca). */
static int keel_mysql_tls_options(struct keel_mysql_store *m, struct keel_buf *err)
{
	const struct keel_mysql_url *u = &m->url;
	my_bool tls = u->ssl_mode != KEEL_MYSQL_SSL_DISABLED;
	my_bool identity = u->ssl_mode == KEEL_MYSQL_SSL_VERIFY_IDENTITY;
	if (u->ssl_ca) {
		/* Checked here, so that the message names the parameter
		 * rather than a TLS failure. */
		FILE *f = fopen(u->ssl_ca, "r");
		if (!f) {
			keel_buf_addf(err, "store \"%s\": ssl-ca \"%s\": ", u->shown.data,
				      u->ssl_ca);
			keel_mysql_add_errno(err, errno);
			return KEEL_ESTORE;
		}
		fclose(f);
		mysql_optionsv(m->db, MYSQL_OPT_SSL_CA, u->ssl_ca);
	}
	mysql_optionsv(m->db, MYSQL_OPT_SSL_ENFORCE, &tls);
	mysql_optionsv(m->db, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &identity);
	return 0;
}

/* Connects and sets the session up; on failure writes a one-line message
 * into err. */
int keel_mysql_connect(struct keel_mysql_store *m, struct keel_buf *err)
{
	const struct keel_mysql_url *u = &m->url;
	m->db = mysql_init(NULL);
	if (!m->db) {
		keel_buf_addf(err, "store \"%s\": out of memory", u->shown.data);
		return KEEL_ESTORE;
	}
	unsigned timeout = u->connect_timeout, rtimeout = u->read_timeout;
	my_bool off = 0;
	unsigned long max_packet = 1024ul * 1024 * 1024;
	unsigned protocol = u->socket ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_DEFAULT;
	mysql_options(m->db, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(m->db, MYSQL_OPT_READ_TIMEOUT, &rtimeout);
	mysql_options(m->db, MYSQL_OPT_WRITE_TIMEOUT, &rtimeout);
	/* A reconnect inside a transaction would silently lose the batch's
	 * earlier statements; the store reconnects itself, between batches. */
	mysql_options(m->db, MYSQL_OPT_RECONNECT, &off);
	keel_mysql_infile_setup(m); /* replay's LOAD DATA, own file only */
	mysql_options(m->db, MYSQL_OPT_MAX_ALLOWED_PACKET, &max_packet);
	mysql_options(m->db, MYSQL_OPT_PROTOCOL, &protocol);
	mysql_options(m->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (keel_mysql_tls_options(m, err))
		return KEEL_ESTORE;
	if (!mysql_real_connect(m->db, u->socket ? "localhost" : u->host, u->user,
				u->password, u->db, u->port, u->socket, 0)) {
		keel_mysql_connect_error(m, err);
		return KEEL_ESTORE;
	}
	if (u->ssl_mode >= KEEL_MYSQL_SSL_REQUIRED && !mysql_get_ssl_cipher(m->db)) {
		keel_buf_addf(err, "store \"%s\": ssl-mode=%s, but the server ",
			      u->shown.data, keel_mysql_ssl_mode_name(u->ssl_mode));
		if (u->socket)
			keel_buf_addf(err, "at socket \"%s\"", u->socket);
		else
			keel_buf_addf(err, "at %s:%u", u->host ? u->host : "localhost",
				      u->port);
		keel_buf_adds(err, " did not encrypt the connection (it has no TLS)");
		return KEEL_ESTORE;
	}
	const char *info = mysql_get_server_info(m->db);
	m->mariadb = info && strstr(info, "MariaDB");
	m->version = mysql_get_server_version(m->db);
	if (m->mariadb ? m->version < 101100 : m->version < 80000) {
		keel_buf_addf(
		    err,
		    "store \"%s\": server %s is not supported (MySQL 8.0 or later, "
		    "MariaDB 10.11 or later)",
		    u->shown.data, info ? info : "?");
		return KEEL_ESTORE;
	}
	/* The bulk path where the server has it (MariaDB 10.2+), unless
	 * KEEL_MYSQL_BULK=0 asks for the text path that MySQL uses. */
	uint64_t caps = 0;
	const char *want = getenv("KEEL_MYSQL_BULK");
	if (mariadb_get_infov(m->db, MARIADB_CONNECTION_EXTENDED_SERVER_CAPABILITIES,
			      &caps) != 0)
		caps = 0;
	m->bulk = m->mariadb &&
		  (caps & (MARIADB_CLIENT_STMT_BULK_OPERATIONS >> 32)) != 0 &&
		  !(want && !strcmp(want, "0"));
	/* Session only: strict, so that nothing is ever silently truncated,
	 * and no mode that changes how our literals or quotes parse. MariaDB
	 * also rewrites an IN list of 1000 or more scalars (a 4-tuple counts
	 * 4) into a join with a derived table, which it may answer with a full
	 * scan (in_predicate_conversion_threshold); off, the lists stay range
	 * reads on the index. UTC, so that the server's clock read as a
	 * DATETIME is the epoch's (store.c, the writers' gate). */
	int rc = keel_mysql_runs(m,
				 m->mariadb ? "SET SESSION sql_mode = 'STRICT_ALL_TABLES,"
					      "NO_ENGINE_SUBSTITUTION', time_zone = '+00:00', "
					      "in_predicate_conversion_threshold = 0"
					    : "SET SESSION sql_mode = 'STRICT_ALL_TABLES,"
					      "NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'",
				 "setting up the session");
	if (rc == 0) {
		keel_buf_reset(&m->sql);
		keel_buf_adds(&m->sql,
			      "SELECT @@max_allowed_packet, @@auto_increment_increment");
		rc = keel_mysql_select(m, "setting up the session",
				       keel_mysql_settings_row, NULL);
	}
	if (rc)
		keel_buf_addf(err, "store \"%s\": %s", u->shown.data,
			      m->base.errmsg.data);
	return rc;
}

static void keel_mysql_free(struct keel_mysql_store *m)
{
	if (m->profile_print)
		keel_mysql_prof_print(m);
	keel_mysql_bulk_close_stmts(m);
	for (size_t c = 0; m->cols && c < KEEL_MYSQL_BULK_MAX_COLS; c++) {
		free(m->cols[c].ptr);
		free(m->cols[c].len);
		free(m->cols[c].ind);
		free(m->cols[c].num);
	}
	free(m->cols);
	if (m->db)
		mysql_close(m->db);
	keel_mysql_url_free(&m->url);
	keel_buf_free(&m->sql);
	keel_buf_free(&m->part);
	keel_ptrvec_free(&m->rows);
	keel_map_free(&m->ids);
	keel_store_base_free(&m->base);
	free(m);
}

/* existing changes nothing: the database must exist already (the store
 * creates its tables, never the database). */
int keel_mysql_open(const char *url, bool existing, struct keel_store **out,
		    struct keel_buf *err)
{
	(void)existing;
	*out = NULL;
	struct keel_mysql_store *m = keel_xcalloc(1, sizeof *m);
	keel_store_base_init(&m->base, &keel_store_mysql_ops, url);
	keel_buf_init(&m->sql);
	keel_buf_init(&m->part);
	keel_map_init(&m->ids);
	m->packet = 1024 * 1024;
	m->autoinc_step = 1;
	m->profile = m->profile_print = getenv("KEEL_MYSQL_PROFILE") != NULL;
	int rc = keel_mysql_url_parse(url, &m->url, err);
	if (rc) {
		keel_mysql_free(m);
		return rc;
	}
	pthread_once(&keel_mysql_once, keel_mysql_library_init);
	rc = keel_mysql_connect(m, err);
	if (rc == 0)
		rc = keel_mysql_schema(m, err);
	if (rc == 0 && (rc = keel_mysql_bulk_prepare(m)) != 0)
		keel_buf_addf(err, "store \"%s\": %s", m->url.shown.data,
			      m->base.errmsg.data);
	if (rc) {
		keel_mysql_free(m);
		return rc;
	}
	*out = &m->base;
	return 0;
}

void keel_mysql_close(struct keel_store *s)
{
	keel_mysql_free(keel_mysql_downcast(s));
}

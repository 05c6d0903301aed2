/*
 * test_store_mysql.c - the MySQL/MariaDB store on a real server.
 *
 * The suite's server comes from the ctest fixture (scripts/mariadb-test-
 * server, see tests/CMakeLists.txt); each case takes a fresh database from
 * it. The fault cases start private servers, since they kill them.
 *
 * What is proved here, beside the store contract that test_conformance
 * runs on every store (MySQL included: batch sizes, the memory store's
 * dump and answers, arrival order, ingesting twice, dump/load, duplicates
 * and bad events):
 *  - URLs, credentials, missing databases, unreachable servers: one-line
 *    errors, checked word for word, the password never shown;
 *  - the schema: created on first use, versioned, a newer one refused;
 *    strings compare bytewise (trailing spaces, NUL bytes, case);
 *  - the append-only path's promises: a batch is a lookup of its ids and
 *    one insert per table, whatever its size; no UPDATE or DELETE; IN
 *    lists of at most 1000 tuples and no warnings after any read; seq
 *    follows insertion order; a failing batch rolls back alone;
 *  - raw scans: known_at, at a time (two rows a timeline, never its
 *    history), incoming relations, entities aggregated from mentions;
 *  - workers, and replay from the log on MySQL;
 *  - the server killed in the middle of ingestion: a clear error, no
 *    partial batch, and the same command completes once it is back.
 */
#include "support.h"
#include "hand_batch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "store/store.h"
#include "util.h"
#include "write/workers.h"

#ifdef KEEL_WITH_MYSQL
#include "store/mysql/internal.h"

/* ------------------------------------------------------------- helpers */

static const char *script(void)
{
	const char *s = getenv("KEEL_MYSQL_SCRIPT");
	return s && *s ? s : KEEL_SOURCE_DIR "/scripts/mariadb-test-server";
}

/* Why a case that needs a server skips when it has none. */
#define NO_SERVER "no MySQL server: KEEL_TEST_MYSQL_DIR is unset (the mysql_server ctest fixture sets it)"

/* The fixture's server directory, or NULL (then the case is skipped). */
static const char *fixture_dir(void)
{
	const char *d = getenv("KEEL_TEST_MYSQL_DIR");
	return d && *d ? d : NULL;
}

/* Runs a command and returns its first output line (malloc'd), or NULL. */
static char *command_line(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	char buf[4096];
	char *line = fgets(buf, sizeof buf, p) ? strdup(buf) : NULL;
	int st = pclose(p);
	if (!line || st != 0) {
		free(line);
		return NULL;
	}
	line[strcspn(line, "\n")] = 0;
	return line;
}

static char *fresh_url(void)
{
	const char *dir = fixture_dir();
	if (!dir)
		return NULL;
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "'%s' fresh '%s'", script(), dir);
	char *url = command_line(cmd);
	assert_non_null(url);
	return url;
}

static char *file_line(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char *text = keel_test_read_file(path, NULL);
	assert_non_null(text);
	text[strcspn(text, "\n")] = 0;
	return text;
}

/* SQL as root over the server's socket (for what a test sets up). */
static void root_sql(const char *dir, const char *sql)
{
	assert_int_equal(
	    keel_test_sh("'%s' sql '%s' \"%s\" >/dev/null", script(), dir, sql), 0);
}

static struct keel_store *open_url(const char *url)
{
	struct keel_store *s = NULL;
	char *err = NULL;
	if (keel_store_open(url, &s, &err))
		fail_msg("open %s: %s", url, err);
	return s;
}

static const struct keel_cartridge *fleet(void)
{
	static struct keel_cartridge *c;
	if (!c) {
		char *err = NULL;
		if (keel_cartridge_load("fleet", &c, &err))
			fail_msg("fleet: %s", err);
	}
	return c;
}

/* Ingests lines [from, to) (through order[] when given) in batches. */
static int ingest_range(struct keel_store *s, const struct keel_test_lines *t, const size_t *order,
			size_t from, size_t to, size_t batch, struct keel_report *rep)
{
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(), .batch = batch};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	int rc = 0;
	for (size_t i = from; i < to && rc == 0; i++) {
		size_t k = order ? order[i] : i;
		rc = keel_ingest_add(ing, t->lines[k], strlen(t->lines[k]), k + 1);
	}
	if (rc == 0)
		rc = keel_ingest_flush(ing);
	if (rep)
		*rep = *keel_ingest_report(ing);
	keel_ingest_free(ing);
	return rc;
}

static void ingest_all(struct keel_store *s, const struct keel_test_lines *t, size_t batch,
		       struct keel_report *rep)
{
	if (ingest_range(s, t, NULL, 0, t->n, batch, rep))
		fail_msg("ingest: %s", keel_store_errmsg(s));
}

/* The dump of the first n lines ingested into a memory store. */
static char *memory_dump(const struct keel_test_lines *t, const size_t *order, size_t n,
			 size_t batch)
{
	struct keel_store *m = open_url("memory:");
	assert_int_equal(ingest_range(m, t, order, 0, n, batch, NULL), 0);
	char *d = keel_test_dump(m, NULL);
	keel_store_close(m);
	return d;
}

struct u64_ctx {
	uint64_t v;
	bool got;
};

static int u64_row(void *ud, unsigned ncols, char **row)
{
	struct u64_ctx *c = ud;
	assert_true(ncols >= 1);
	c->v = row[0] ? strtoull(row[0], NULL, 10) : 0;
	c->got = true;
	return 0;
}

static uint64_t query_u64(struct keel_store *s, const char *sql)
{
	struct u64_ctx c = {0};
	if (keel_store_mysql_exec(s, sql, u64_row, &c))
		fail_msg("%s: %s", sql, keel_store_errmsg(s));
	assert_true(c.got);
	return c.v;
}

static int sum_row(void *ud, unsigned ncols, char **row)
{
	assert_int_equal(ncols, 2);
	*(uint64_t *)ud += strtoull(row[1], NULL, 10);
	return 0;
}

/* Every Handler_read_* counter of the session, summed: the rows and index
 * entries the server has touched. */
static uint64_t handler_reads(struct keel_store *s)
{
	uint64_t sum = 0;
	assert_int_equal(keel_store_mysql_exec(s,
					       "SHOW SESSION STATUS LIKE 'Handler_read%'",
					       sum_row, &sum),
			 0);
	return sum;
}

/* Both stores dump the same bytes. */
static void assert_same_dumps(struct keel_store *a, struct keel_store *b)
{
	char *da = keel_test_dump(a, NULL), *db = keel_test_dump(b, NULL);
	assert_string_equal(da, db);
	free(da);
	free(db);
}

/* -------------------------------------------------------- private server */

struct server {
	char *dir;
	char *url;
};

static bool server_start(struct server *sv)
{
	if (!fixture_dir())
		return false; /* no MySQL in this run */
	sv->dir = keel_test_tmpdir();
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "'%s' start '%s/srv'", script(), sv->dir);
	sv->url = command_line(cmd);
	assert_non_null(sv->url);
	return true;
}

static void server_cmd(struct server *sv, const char *what)
{
	assert_int_equal(
	    keel_test_sh("'%s' %s '%s/srv' >/dev/null", script(), what, sv->dir), 0);
}

static void server_stop(struct server *sv)
{
	server_cmd(sv, "stop");
	keel_test_rmdir(sv->dir);
	free(sv->dir);
	free(sv->url);
}

/* ------------------------------------------------------------ URL errors */

static void open_fails_with(const char *url, int code, const char *expected)
{
	struct keel_store *s = (struct keel_store *)1;
	char *err = NULL;
	int rc = keel_store_open(url, &s, &err);
	assert_int_equal(rc, code);
	assert_null(s);
	assert_non_null(err);
	assert_string_equal(err, expected);
	assert_null(strchr(err, '\n'));
	free(err);
}

static void bad_urls_give_one_line_errors(void **state)
{
	(void)state;
	static const struct {
		const char *url, *msg;
	} cases[] = {
	    {"mysql:keel",
	     "store \"mysql:keel\": expected mysql://user:password@host:port/db"},
	    {"mysql://u:secret@h:99999/db",
	     "store \"mysql://u:***@h:99999/db\": port must be a number from 1 to 65535"},
	    {"mysql://u:secret@h:0/db",
	     "store \"mysql://u:***@h:0/db\": port must be a number from 1 to 65535"},
	    {"mysql://u:secret@h:33o6/db",
	     "store \"mysql://u:***@h:33o6/db\": port must be a number from 1 to 65535"},
	    {"mysql://u:secret@h:3306",
	     "store \"mysql://u:***@h:3306\": missing database name "
	     "(mysql://user:password@host:port/db)"},
	    {"mysql://u:secret@h/", "store \"mysql://u:***@h/\": missing database name "
				    "(mysql://user:password@host:port/db)"},
	    {"mysql://u:se%zzret@h/db",
	     "store \"mysql://u:***@h/db\": bad percent-escape in the password"},
	    {"mysql://u%2@h/db",
	     "store \"mysql://u%2@h/db\": bad percent-escape in the user name"},
	    {"mysql://u@h/d%00b",
	     "store \"mysql://u@h/d%00b\": bad percent-escape in the database name"},
	    {"mysql://u:secret@h/db?sock=/x",
	     "store \"mysql://u:***@h/db?sock=/x\": unknown parameter \"sock\" (expected "
	     "socket, connect_timeout, read_timeout, ssl-mode or ssl-ca)"},
	    {"mysql://u:secret@h/db?ssl-mode=sometimes",
	     "store \"mysql://u:***@h/db?ssl-mode=sometimes\": ssl-mode \"sometimes\": "
	     "expected disabled, preferred, required, verify-ca or verify-identity"},
	    {"mysql://u:secret@h/db?ssl-mode=",
	     "store \"mysql://u:***@h/db?ssl-mode=\": ssl-mode \"\": expected disabled, "
	     "preferred, required, verify-ca or verify-identity"},
	    {"mysql://u:secret@h/db?ssl-mode=verify-ca",
	     "store \"mysql://u:***@h/db?ssl-mode=verify-ca\": ssl-mode=verify-ca needs "
	     "ssl-ca=FILE, the CA certificate to check the server's against"},
	    {"mysql://u:secret@h/db?ssl-ca=/ca.pem&ssl-mode=DISABLED",
	     "store \"mysql://u:***@h/db?ssl-ca=/ca.pem&ssl-mode=DISABLED\": ssl-ca with "
	     "ssl-mode=disabled: no TLS, no certificate to check against it"},
	    {"mysql://u:secret@h/db?ssl-mode=required&ssl-ca=",
	     "store \"mysql://u:***@h/db?ssl-mode=required&ssl-ca=\": bad ssl-ca path"},
	    {"mysql://u:secret@127.0.0.1/db?socket=/x.sock",
	     "store \"mysql://u:***@127.0.0.1/db?socket=/x.sock\": socket= needs the "
	     "host "
	     "localhost or none, not \"127.0.0.1\""},
	    {"mysql://u:secret@h/db?connect_timeout=0",
	     "store \"mysql://u:***@h/db?connect_timeout=0\": connect_timeout must be 1 "
	     "to "
	     "86400 seconds"},
	    {"mysql://u:secret@[::1/db",
	     "store \"mysql://u:***@[::1/db\": unterminated [ in the host"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		open_fails_with(cases[i].url, KEEL_EURL, cases[i].msg);
}

/* A listening socket that never answers: a server that is there but hangs. */
static int silent_listener(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(fd, 4), 0);
	socklen_t len = sizeof a;
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* A loopback port nothing listens on. */
static int closed_port(void)
{
	int port;
	int fd = silent_listener(&port);
	close(fd);
	return port;
}

static void connection_errors_are_clear(void **state)
{
	(void)state;
	const char *dir = fixture_dir();
	if (!dir)
		keel_test_skip(NO_SERVER);
	char *port = file_line(dir, "port");
	char *password = file_line(dir, "password");
	char url[4096], msg[8192];

	/* wrong password */
	snprintf(url, sizeof url, "mysql://keel:wrong@127.0.0.1:%s/keel", port);
	snprintf(msg, sizeof msg,
		 "store \"mysql://keel:***@127.0.0.1:%s/keel\": access denied for user "
		 "\"keel\" (wrong user name or password)",
		 port);
	open_fails_with(url, KEEL_ESTORE, msg);

	/* unknown user */
	snprintf(url, sizeof url, "mysql://nobody:%s@127.0.0.1:%s/keel", password, port);
	snprintf(msg, sizeof msg,
		 "store \"mysql://nobody:***@127.0.0.1:%s/keel\": access denied for user "
		 "\"nobody\" (wrong user name or password)",
		 port);
	open_fails_with(url, KEEL_ESTORE, msg);

	/* a database that does not exist */
	snprintf(url, sizeof url, "mysql://keel:%s@127.0.0.1:%s/keel_missing", password,
		 port);
	snprintf(msg, sizeof msg,
		 "store \"mysql://keel:***@127.0.0.1:%s/keel_missing\": database "
		 "\"keel_missing\" does not exist",
		 port);
	open_fails_with(url, KEEL_ESTORE, msg);

	/* a database the user may not use */
	snprintf(url, sizeof url, "mysql://keel:%s@127.0.0.1:%s/mysql", password, port);
	snprintf(
	    msg, sizeof msg,
	    "store \"mysql://keel:***@127.0.0.1:%s/mysql\": user \"keel\" may not use "
	    "database \"mysql\"",
	    port);
	open_fails_with(url, KEEL_ESTORE, msg);

	/* nothing listening */
	int closed = closed_port();
	snprintf(url, sizeof url, "mysql://keel:%s@127.0.0.1:%d/keel", password, closed);
	snprintf(msg, sizeof msg,
		 "store \"mysql://keel:***@127.0.0.1:%d/keel\": cannot connect to "
		 "127.0.0.1:%d: connection refused",
		 closed, closed);
	open_fails_with(url, KEEL_ESTORE, msg);

	/* a host name that does not resolve */
	snprintf(url, sizeof url, "mysql://keel:%s@no-such-host.invalid/keel", password);
	open_fails_with(
	    url, KEEL_ESTORE,
	    "store \"mysql://keel:***@no-such-host.invalid/keel\": unknown host "
	    "\"no-such-host.invalid\"");

	/* a socket that is not there */
	snprintf(url, sizeof url,
		 "mysql://keel:%s@localhost/keel?socket=/nonexistent/x.sock", password);
	open_fails_with(
	    url, KEEL_ESTORE,
	    "store \"mysql://keel:***@localhost/keel?socket=/nonexistent/x.sock\": "
	    "cannot connect through socket \"/nonexistent/x.sock\": no such file or "
	    "directory");

	/* a server that accepts the connection and never answers */
	int lport;
	int fd = silent_listener(&lport);
	snprintf(url, sizeof url, "mysql://keel:%s@127.0.0.1:%d/keel?connect_timeout=1",
		 password, lport);
	snprintf(
	    msg, sizeof msg,
	    "store \"mysql://keel:***@127.0.0.1:%d/keel?connect_timeout=1\": the server "
	    "at 127.0.0.1:%d did not answer within 1 s",
	    lport, lport);
	open_fails_with(url, KEEL_ESTORE, msg);
	close(fd);
	free(port);
	free(password);
}

/* ------------------------------------------------------------------ TLS */

static int first_column(void *ud, unsigned ncols, char **row)
{
	char **out = ud;
	free(*out);
	*out = strdup(ncols > 1 && row[1] ? row[1] : "");
	return 0;
}

/* The cipher of the store's connection as the server sees it ("" in
 * clear). */
static char *server_cipher(struct keel_store *s)
{
	char *cipher = NULL;
	assert_int_equal(keel_store_mysql_exec(s, "SHOW SESSION STATUS LIKE 'Ssl_cipher'",
					       first_column, &cipher),
			 0);
	assert_non_null(cipher);
	return cipher;
}

/* Opens url?query (base has no query of its own) and returns the
 * connection's cipher, or NULL with *err when the open failed. */
static char *cipher_with(const char *base, const char *query, char **err)
{
	char url[4096];
	snprintf(url, sizeof url, "%s?%s", base, query);
	struct keel_store *s = NULL;
	*err = NULL;
	if (keel_store_open(url, &s, err) != 0)
		return NULL;
	char *cipher = server_cipher(s);
	keel_store_close(s);
	return cipher;
}

/* ssl-mode and ssl-ca against the fixture's server, which has no TLS, and
 * a private one started with a certificate signed by a CA made here for
 * the name db.example: required demands TLS (and gets it where there is
 * some), verify-ca checks the chain, verify-identity the name too. */
static void tls_modes_are_what_they_say(void **state)
{
	(void)state;
	const char *fdir = fixture_dir();
	if (!fdir)
		keel_test_skip(NO_SERVER);
	char *port = file_line(fdir, "port");
	char *password = file_line(fdir, "password");
	char plain[1024], msg[8192], *err = NULL, *cipher;
	snprintf(plain, sizeof plain, "mysql://keel:%s@127.0.0.1:%s/keel", password, port);

	/* The server without TLS: disabled and preferred (also the default)
	 * connect in clear; required and verify-identity refuse. */
	cipher = cipher_with(plain, "ssl-mode=disabled", &err);
	assert_non_null(cipher);
	assert_string_equal(cipher, "");
	free(cipher);
	cipher = cipher_with(plain, "ssl-mode=preferred", &err);
	assert_non_null(cipher);
	assert_string_equal(cipher, "");
	free(cipher);
	cipher = cipher_with(plain, "ssl-mode=required", &err);
	assert_null(cipher);
	snprintf(msg, sizeof msg,
		 "store \"mysql://keel:***@127.0.0.1:%s/keel?ssl-mode=required\": "
		 "ssl-mode=required, but the server at 127.0.0.1:%s did not encrypt the "
		 "connection (it has no TLS)",
		 port, port);
	assert_string_equal(err, msg);
	free(err);
	cipher = cipher_with(plain, "ssl-mode=verify-identity", &err);
	assert_null(cipher);
	assert_non_null(strstr(err, "TLS with the server at 127.0.0.1:"));
	assert_non_null(strstr(err, "failed (ssl-mode=verify-identity)"));
	free(err);
	cipher = cipher_with(plain, "ssl-mode=required&ssl-ca=/nonexistent/ca.pem", &err);
	assert_null(cipher);
	assert_non_null(
	    strstr(err, ": ssl-ca \"/nonexistent/ca.pem\": no such file or directory"));
	free(err);

	/* A server with TLS. */
	char *dir = keel_test_tmpdir();
	assert_int_equal(
	    keel_test_sh(
		"cd '%s' && printf 'subjectAltName=DNS:db.example\n' >san.ext &&"
		" openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=keel-test-ca"
		" -keyout ca.key -out ca.pem 2>/dev/null &&"
		" openssl req -newkey rsa:2048 -nodes -subj /CN=db.example"
		" -keyout srv.key -out srv.csr 2>/dev/null &&"
		" openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
		" -days 2 -extfile san.ext -out srv.pem 2>/dev/null &&"
		" openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca"
		" -keyout other.key -out other.pem 2>/dev/null",
		dir),
	    0);
	char opts[8192];
	snprintf(opts, sizeof opts, "--ssl-cert=%s/srv.pem --ssl-key=%s/srv.key", dir, dir);
	setenv("KEEL_MARIADB_OPTS", opts, 1);
	struct server sv;
	bool started = server_start(&sv);
	unsetenv("KEEL_MARIADB_OPTS");
	assert_true(started);
	char q[8192];

	/* required: encrypted, whatever the certificate */
	cipher = cipher_with(sv.url, "ssl-mode=required", &err);
	if (!cipher)
		fail_msg("required: %s", err);
	assert_true(strlen(cipher) > 0);
	free(cipher);
	/* preferred takes TLS where there is some; disabled does not */
	cipher = cipher_with(sv.url, "ssl-mode=preferred", &err);
	assert_non_null(cipher);
	assert_true(strlen(cipher) > 0);
	free(cipher);
	cipher = cipher_with(sv.url, "ssl-mode=disabled", &err);
	assert_non_null(cipher);
	assert_string_equal(cipher, "");
	free(cipher);
	/* verify-ca: the chain is checked against ssl-ca, not the name */
	snprintf(q, sizeof q, "ssl-mode=verify-ca&ssl-ca=%s/ca.pem", dir);
	cipher = cipher_with(sv.url, q, &err);
	if (!cipher)
		fail_msg("verify-ca: %s", err);
	assert_true(strlen(cipher) > 0);
	free(cipher);
	snprintf(q, sizeof q, "ssl-mode=verify-ca&ssl-ca=%s/other.pem", dir);
	cipher = cipher_with(sv.url, q, &err);
	assert_null(cipher);
	assert_non_null(strstr(err, "failed (ssl-mode=verify-ca)"));
	free(err);
	/* verify-identity: the right CA, but the certificate names
	 * db.example, not 127.0.0.1 */
	snprintf(q, sizeof q, "ssl-mode=verify-identity&ssl-ca=%s/ca.pem", dir);
	cipher = cipher_with(sv.url, q, &err);
	assert_null(cipher);
	assert_non_null(strstr(err, "failed (ssl-mode=verify-identity)"));
	free(err);

	server_stop(&sv);
	keel_test_rmdir(dir);
	free(dir);
	free(port);
	free(password);
}

/* Percent-encoded credentials reach the server decoded; the socket form of
 * the URL reaches the same server. */
static void credentials_are_percent_decoded_and_sockets_work(void **state)
{
	(void)state;
	const char *dir = fixture_dir();
	if (!dir)
		keel_test_skip(NO_SERVER);
	char *port = file_line(dir, "port");
	char *base = fresh_url();
	const char *db = strrchr(base, '/') + 1;
	char sql[1024];
	snprintf(sql, sizeof sql,
		 "CREATE USER IF NOT EXISTS 'we ird@u'@'127.0.0.1' IDENTIFIED BY "
		 "'p@ss:w/rd%%1?#';"
		 " GRANT ALL ON %s.* TO 'we ird@u'@'127.0.0.1'",
		 db);
	root_sql(dir, sql);
	char url[4096];
	snprintf(url, sizeof url,
		 "mysql://we%%20ird%%40u:p%%40ss%%3Aw%%2Frd%%251%%3F%%23@127.0.0.1:%s/%s",
		 port, db);
	struct keel_store *s = open_url(url);
	assert_int_equal(query_u64(s, "SELECT CURRENT_USER() = 'we ird@u@127.0.0.1'"), 1);
	keel_store_close(s);

	/* the same server through its unix socket */
	char *password = file_line(dir, "password");
	char sock[4096];
	snprintf(sock, sizeof sock, "%s/sockdir", dir);
	if (access(sock, F_OK) == 0) {
		char *real = realpath(sock, NULL);
		snprintf(sock, sizeof sock, "%s/sock", real);
		free(real);
	} else {
		snprintf(sock, sizeof sock, "%s/sock", dir);
	}
	snprintf(url, sizeof url, "mysql://keel:%s@localhost/%s?socket=%s", password, db,
		 sock);
	s = open_url(url);
	assert_int_equal(query_u64(s, "SELECT @@port"), strtoull(port, NULL, 10));
	assert_int_equal(query_u64(s, "SELECT COUNT(*) FROM keel_meta"), 1);
	keel_store_close(s);
	free(password);
	free(port);
	free(base);
}

/* ---------------------------------------------------------------- schema */

static void schema_is_created_versioned_and_newer_refused(void **state)
{
	(void)state;
	const char *dir = fixture_dir();
	if (!dir)
		keel_test_skip(NO_SERVER);
	char *url = fresh_url();
	struct keel_store *s = open_url(url);
	/* 6: events by source; 7: tenants' recorded cartridges */
	assert_true(keel_store_mysql_schema_version() >= 7);
	assert_int_equal(
	    query_u64(s, "SELECT value FROM keel_meta WHERE name = 'schema_version'"),
	    (uint64_t)keel_store_mysql_schema_version());
	int was = -1, now = -1;
	assert_int_equal(s->ops->schema_versions(s, &was, &now), 0);
	assert_int_equal(was, 0); /* created by this open */
	assert_int_equal(now, keel_store_mysql_schema_version());
	assert_int_equal(query_u64(s,
				   "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
				   "TABLE_SCHEMA = DATABASE() AND ENGINE = 'InnoDB' AND "
				   "TABLE_NAME IN ('keel_entity_mentions', 'keel_fact_rows', "
				   "'keel_relation_rows', 'keel_events', 'keel_meta', 'keel_tombstones')"),
			 6);
	/* each tenant's recorded cartridge, by hash, and each distinct
	 * cartridge once */
	assert_int_equal(query_u64(s, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
				      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN "
				      "('keel_tenant_cartridges', 'keel_cartridges')"),
			 2);
	/* the derived rows, under the tables' old names */
	assert_int_equal(query_u64(s,
				   "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
				   "TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'VIEW' AND "
				   "TABLE_NAME IN ('keel_entities', 'keel_facts', "
				   "'keel_relations')"),
			 3);
	/* nothing derived is stored */
	assert_int_equal(query_u64(s,
				   "SELECT COUNT(*) FROM information_schema.COLUMNS c JOIN "
				   "information_schema.TABLES t USING (TABLE_SCHEMA, "
				   "TABLE_NAME) WHERE c.TABLE_SCHEMA = DATABASE() AND "
				   "t.TABLE_TYPE = 'BASE TABLE' AND c.COLUMN_NAME IN "
				   "('valid_to', 'closed_by')"),
			 0);
	/* the secondary indexes: seq of events and mentions, the two
	 * timeline indexes, incoming relations, the two of finding */
	assert_int_equal(query_u64(s,
				   "SELECT COUNT(DISTINCT TABLE_NAME, INDEX_NAME) FROM "
				   "information_schema.STATISTICS WHERE TABLE_SCHEMA = "
				   "DATABASE() AND INDEX_NAME <> 'PRIMARY'"),
			 7);
	/* no string column with a collation: all bytes */
	assert_int_equal(
	    query_u64(s, "SELECT COUNT(*) FROM information_schema.COLUMNS c JOIN "
			 "information_schema.TABLES t USING (TABLE_SCHEMA, TABLE_NAME) "
			 "WHERE c.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE = 'BASE "
			 "TABLE' AND c.COLLATION_NAME IS NOT NULL"),
	    0);
	keel_store_close(s);

	/* opening again finds the schema */
	s = open_url(url);
	assert_int_equal(s->ops->schema_versions(s, &was, &now), 0);
	assert_int_equal(was, keel_store_mysql_schema_version());
	keel_store_close(s);

	/* A version 10 store (views of times in microseconds only: a
	 * stand-in without the text columns) gains today's views. */
	const char *db = strrchr(url, '/') + 1;
	char sql[1024];
	snprintf(sql, sizeof sql,
		 "DROP VIEW %s.keel_facts, %s.keel_relations, %s.keel_entities; CREATE "
		 "VIEW %s.keel_facts AS SELECT seq, valid_from FROM %s.keel_fact_rows; "
		 "CREATE VIEW %s.keel_relations AS SELECT seq FROM %s.keel_relation_rows; "
		 "CREATE VIEW %s.keel_entities AS SELECT tenant FROM "
		 "%s.keel_entity_mentions; UPDATE %s.keel_meta SET value = 10 WHERE name = "
		 "'schema_version'",
		 db, db, db, db, db, db, db, db, db, db);
	root_sql(dir, sql);
	s = open_url(url);
	assert_int_equal(s->ops->schema_versions(s, &was, &now), 0);
	assert_int_equal(was, 10);
	/* 4 of facts (value_text and 3 times), 3 of relations, 3 of entities */
	assert_int_equal(query_u64(s, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "
				      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN "
				      "('keel_facts', 'keel_relations', 'keel_entities') AND "
				      "COLUMN_NAME LIKE '%\\_text'"),
			 10);
	keel_store_close(s);

	/* a schema from a newer keel is refused */
	snprintf(sql, sizeof sql,
		 "UPDATE %s.keel_meta SET value = 99 WHERE name = 'schema_version'", db);
	root_sql(dir, sql);
	char *shown = strdup(url);
	char *colon = strchr(shown + 8, ':');
	char *at = strchr(shown, '@');
	char msg[4096];
	snprintf(
	    msg, sizeof msg,
	    "store \"%.*s:***%s\": schema version 99 is newer than this keel supports "
	    "(%d): upgrade keel",
	    (int)(colon - shown), shown, at, keel_store_mysql_schema_version());
	open_fails_with(url, KEEL_ESCHEMA, msg);
	free(shown);
	free(url);
}

/* A fuel report of vehicle V at second sec, as one NDJSON line. */
static void fuel_line(struct keel_buf *b, const char *id, const char *tenant, int sec,
		      const char *vehicle, int fuel)
{
	keel_buf_addf(b,
		      "{\"id\":\"%s\",\"tenant\":\"%s\",\"type\":"
		      "\"fleet.vehicle.fuel_reported\",\"time\":\"2026-01-01T00:%02d:%02dZ\","
		      "\"data\":{\"vehicle_id\":\"%s\",\"fuel_pct\":%d}}\n",
		      id, tenant, sec / 60, sec % 60, vehicle, fuel);
}

/* An event whose row cannot fit in one statement is rejected alone, with
 * its line and the rule, and everything else goes in: the same limit on
 * the bulk and the text paths (half the packet, less room for the row; the
 * test's envelopes are \" pairs, which escaping doubles), and an event at
 * the limit is stored whole on both. Without the rule an oversized event
 * failed its whole batch with the server's error 1153 and stopped the
 * input there. */
static void large_events_are_rejected_alone(void **state)
{
	(void)state;
	if (!fixture_dir())
		keel_test_skip(NO_SERVER);
	const size_t packet = 65536;
	for (int text = 0; text < 2; text++) {
		if (text)
			setenv("KEEL_MYSQL_BULK", "0", 1);
		char *url = fresh_url();
		struct keel_store *s = open_url(url);
		unsetenv("KEEL_MYSQL_BULK");
		keel_store_mysql_set_packet_limit(s, packet);
		keel_test_large_events(s, (packet - 4096) / 2,
				       "half the mysql server's max_allowed_packet, less "
				       "room for the rest of its row");
		keel_store_close(s);
		free(url);
	}
}

/* Strings that differ only by trailing spaces, a control byte or case are
 * different keys, and sort bytewise, exactly as in the memory store.
 * (U+0000 cannot be part of a subject: docs/cartridges.md, "Limits".) */
static void strings_compare_bytewise(void **state)
{
	(void)state;
	char *url = fresh_url();
	if (!url)
		keel_test_skip(NO_SERVER);
	static const char *const vehicles[] = {"a", "a ", "a\\u0001", "A", "a  ", "b"};
	struct keel_buf in;
	keel_buf_init(&in);
	for (size_t i = 0; i < 6; i++)
		keel_buf_addf(
		    &in,
		    "{\"id\":\"e%zu\",\"tenant\":\"t\",\"type\":"
		    "\"fleet.vehicle.fuel_reported\",\"time\":\"2026-01-01T00:00:0%zuZ\","
		    "\"data\":{\"vehicle_id\":\"%s\",\"fuel_pct\":\"s%zu \"}}\n",
		    i, i, vehicles[i], i);
	/* an id with a trailing space is another event; the same id again is
	 * a duplicate */
	keel_buf_adds(&in,
		      "{\"id\":\"e0 \",\"tenant\":\"t\",\"type\":"
		      "\"fleet.vehicle.fuel_reported\",\"time\":\"2026-01-01T00:00:09Z\","
		      "\"data\":{\"vehicle_id\":\"a\",\"fuel_pct\":\"again\"}}\n");
	keel_buf_adds(&in,
		      "{\"id\":\"e0\",\"tenant\":\"t\",\"type\":"
		      "\"fleet.vehicle.fuel_reported\",\"time\":\"2026-01-01T00:00:00Z\","
		      "\"data\":{\"vehicle_id\":\"a\",\"fuel_pct\":\"s0 \"}}\n");
	struct keel_test_lines *t = keel_test_lines_split(strdup(in.data));
	keel_buf_free(&in);
	struct keel_store *s = open_url(url);
	struct keel_report rep;
	ingest_all(s, t, 500, &rep);
	assert_int_equal(rep.accepted, 7);
	assert_int_equal(rep.duplicates, 1);
	assert_int_equal(rep.conflicting, 0);
	assert_int_equal(query_u64(s, "SELECT COUNT(*) FROM keel_entities"), 6);
	char *mine = keel_test_dump(s, NULL);
	char *mem = memory_dump(t, NULL, t->n, 500);
	assert_string_equal(mine, mem);
	assert_non_null(strstr(mine, "\"subject\":\"vehicle:a \""));
	assert_non_null(strstr(mine, "\"subject\":\"vehicle:a  \""));
	assert_non_null(strstr(mine, ",\"id\":\"e0 \"},\"closed_by\""));
	assert_non_null(strstr(mine, "\"subject\":\"vehicle:a\\u0001\""));
	free(mine);
	free(mem);
	keel_store_close(s);
	keel_test_lines_free(t);
	free(url);
}

/* ------------------------------------------------ the append-only path */

/* Counts the statements of each batch of an ingest: the most any batch
 * took. */
static void batch_statements(struct keel_store *s, const struct keel_test_lines *t, size_t batch,
			     uint64_t *max, uint64_t *batches)
{
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(), .batch = batch};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	uint64_t before = keel_store_statements(s);
	*max = 0;
	*batches = 0;
	for (size_t i = 0; i <= t->n; i++) {
		if (i < t->n)
			assert_int_equal(
			    keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1),
			    0);
		else
			assert_int_equal(keel_ingest_flush(ing), 0);
		uint64_t now = keel_store_statements(s);
		if (now != before) {
			if (now - before > *max)
				*max = now - before;
			(*batches)++;
			before = now;
		}
	}
	keel_ingest_free(ing);
}

/* The server's count of a session statement kind ("Com_update"). */
static uint64_t session_status(struct keel_store *s, const char *name)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SHOW SESSION STATUS LIKE '%s'", name);
	uint64_t sum = 0;
	assert_int_equal(keel_store_mysql_exec(s, sql, sum_row, &sum), 0);
	return sum;
}

/* A batch is a lookup of its ids and one insert per table, whatever its
 * size; the server runs no UPDATE and no DELETE, and the statements that
 * read anything are the lookups and the clock's one-row read when a
 * transaction begins. Each assertion is one row. The dump is the memory
 * store's, late events and duplicates included. */
static void a_batch_appends_and_updates_nothing(void **state)
{
	(void)state;
	char *u1 = fresh_url();
	if (!u1)
		keel_test_skip(NO_SERVER);
	char *u2 = fresh_url();
	struct keel_test_lines *t = keel_test_lines_generate(20000, 3, 5, 0.05, 0.05);
	char *ref = memory_dump(t, NULL, t->n, 500);
	static const size_t sizes[] = {500, 5000};
	char *urls[] = {u1, u2};
	for (size_t k = 0; k < 2; k++) {
		struct keel_store *s = open_url(urls[k]);
		keel_store_mysql_set_profile(s, true);
		keel_store_mysql_reset_stats(s);
		uint64_t updates = session_status(s, "Com_update");
		uint64_t deletes = session_status(s, "Com_delete");
		uint64_t selects = session_status(s, "Com_select");
		uint64_t max, batches;
		batch_statements(s, t, sizes[k], &max, &batches);
		/* lookup, the clock, START TRANSACTION or SAVEPOINT, events,
		 * mentions, facts, relations, COMMIT; and in the first batch,
		 * once per tenant (3), the read of its cartridge, and two
		 * statements recording them (counted below) */
		assert_true(max <= 8 + 2 * 3);
		assert_true(batches >= t->n / sizes[k]);
		assert_int_equal(session_status(s, "Com_update"), updates);
		assert_int_equal(session_status(s, "Com_delete"), deletes);
		const struct keel_mysql_stats *st = keel_store_mysql_stats(s);
		const struct keel_mysql_prof *p;
		size_t np = keel_store_mysql_profile(s, &p);
		uint64_t clock = 0, lookups = 0, cartridge_reads = 0, cartridge_records = 0;
		for (size_t i = 0; i < np; i++) {
			if (!strcmp(p[i].what, "reading the log's clock"))
				clock = p[i].count;
			else if (!strcmp(p[i].what, "looking up event ids"))
				lookups = p[i].count;
			else if (!strcmp(p[i].what, "reading the tenant's cartridge"))
				cartridge_reads = p[i].count;
			else if (!strcmp(p[i].what, "recording the tenant's cartridge"))
				cartridge_records = p[i].count;
		}
		assert_int_equal(lookups, st->lookup_statements);
		/* each of the 3 new tenants: its cartridge read once, whatever
		 * the number of batches; the three recorded together in the
		 * first commit, one statement for their cartridge (stored once)
		 * and one for the three tenants */
		assert_int_equal(cartridge_reads, 3);
		assert_int_equal(cartridge_records, 2);
		/* 4 SHOW STATUS of this test's own (they count as selects on
		 * MariaDB or not at all) */
		uint64_t read = session_status(s, "Com_select") - selects;
		assert_true(read <= lookups + clock + cartridge_reads + 4);
		assert_true(read >= lookups + clock + cartridge_reads);
		assert_int_equal(st->warnings, 0);
		/* one row per assertion: every fleet event asserts something */
		assert_int_equal(query_u64(s, "SELECT (SELECT COUNT(*) FROM keel_fact_rows) "
					      "+ (SELECT COUNT(*) FROM keel_relation_rows)"),
				 st->rows_appended);
		char *d = keel_test_dump(s, NULL);
		assert_string_equal(d, ref);
		free(d);
		keel_store_close(s);
	}
	free(ref);
	keel_test_lines_free(t);
	free(u1);
	free(u2);
}

/* IN lists stay at or under 1000 tuples however large the batch, and no
 * read leaves a warning (on MySQL warning 3170 would mean the range
 * optimizer gave up on a list and scanned). */
static void in_lists_are_short_and_reads_leave_no_warnings(void **state)
{
	(void)state;
	char *url = fresh_url();
	if (!url)
		keel_test_skip(NO_SERVER);
	struct keel_store *s = open_url(url);
	/* the check itself works: a statement with a warning is counted */
	keel_store_mysql_reset_stats(s);
	query_u64(s, "SELECT CAST('x' AS SIGNED)");
	assert_int_equal(keel_store_mysql_stats(s)->warnings, 1);
	assert_int_equal(keel_store_mysql_stats(s)->last_warning, 1292);

	keel_store_mysql_reset_stats(s);
	struct keel_test_lines *t = keel_test_lines_generate(30000, 4, 9, 0.05, 0.05);
	ingest_all(s, t, 5000, NULL);
	/* and again: every id is seen, 5000 to a batch */
	struct keel_report rep;
	ingest_all(s, t, 5000, &rep);
	assert_int_equal(rep.accepted, 0);
	const struct keel_mysql_stats *st = keel_store_mysql_stats(s);
	assert_int_equal(st->warnings, 0);
	assert_int_equal(st->max_in_tuples, KEEL_MYSQL_IN_MAX); /* lists were cut */
	assert_true(st->in_lists > st->lookup_statements);	 /* several per statement */
	keel_store_close(s);
	keel_test_lines_free(t);
	free(url);
}

/* Transaction time at the store's level: scans and counts with known_at
 * see only what was recorded by then, the entities aggregated over those
 * mentions alone; the log's clock is the last logged event's. */
static void scans_known_at_see_what_was_recorded_by_then(void **state)
{
	(void)state;
	char *url = fresh_url();
	if (!url)
		keel_test_skip(NO_SERVER);
	struct keel_store *s = open_url(url);
	int64_t clock = -1;
	assert_int_equal(s->ops->last_recorded_at(s, &clock), 0);
	assert_int_equal(clock, 0);
	struct hbatch a, b;
	hb_init(&a, 100);
	hb_fact(&a, "a1", 10, "v:1", "fuel", "1");
	hb_link(&a, "a1", 10, "v:1", "driven_by", "d:1", true);
	hb_mention(&a, "v:1", "\"car\"", 10, 10, 10);
	hb_mention(&a, "d:1", NULL, 0, 10, 10);
	hb_run(s, &a);
	hb_init(&b, 200);
	hb_fact(&b, "b1", 5, "v:1", "fuel", "2"); /* late */
	hb_fact(&b, "b2", 20, "v:1", "odometer", "7");
	hb_link(&b, "b2", 20, "v:1", "driven_by", "d:1", false);
	hb_mention(&b, "v:1", "\"truck\"", 5, 5, 20);
	hb_run(s, &b);
	assert_int_equal(s->ops->last_recorded_at(s, &clock), 0);
	assert_int_equal(clock, 200);

	struct keel_scan q = {.type = KEEL_REC_FACT, .tenant = keel_str_cstr("t")};
	char *all = raw_scan(s, &q);
	/* as written, in (subject, predicate, valid_from, seq) order: the
	 * late row first */
	assert_string_equal(all, "v:1 fuel - 2 5 b1 200\n"
				 "v:1 fuel - 1 10 a1 100\n"
				 "v:1 odometer - 7 20 b2 200\n");
	q.known_at_set = true;
	q.known_at = 150;
	char *then = raw_scan(s, &q);
	assert_string_equal(then, "v:1 fuel - 1 10 a1 100\n");
	q.known_at = 99;
	char *none = raw_scan(s, &q);
	assert_string_equal(none, "");
	free(all);
	free(then);
	free(none);

	struct keel_scan r = {.type = KEEL_REC_RELATION,
			      .tenant = keel_str_cstr("t"),
			      .object = keel_str_cstr("d:1")};
	char *in = raw_scan(s, &r); /* incoming, by the object's index */
	assert_string_equal(in, "v:1 driven_by d:1 null 10 a1 100\n"
				"v:1 driven_by d:1 null 20 b2 200\n");
	free(in);

	struct keel_scan e = {.type = KEEL_REC_ENTITY, .tenant = keel_str_cstr("t")};
	char *ents = entity_scan(s, &e);
	/* the earliest kind: the truck, given at 5 */
	assert_string_equal(ents, "d:1 null 10 10 100\n"
				  "v:1 \"truck\" 5 20 200\n");
	e.known_at_set = true;
	e.known_at = 150;
	char *ents_then = entity_scan(s, &e);
	assert_string_equal(ents_then, "d:1 null 10 10 100\n"
				       "v:1 \"car\" 10 10 100\n");
	free(ents);
	free(ents_then);

	uint64_t n[4];
	assert_int_equal(keel_store_counts(s, keel_str_cstr("t"), KEEL_TIME_INF, n), 0);
	assert_int_equal(n[0], 2);
	assert_int_equal(n[1], 3);
	assert_int_equal(n[2], 2);
	assert_int_equal(n[3], 3);
	assert_int_equal(keel_store_counts(s, keel_str_cstr("t"), 150, n), 0);
	assert_int_equal(n[0], 2);
	assert_int_equal(n[1], 1);
	assert_int_equal(n[2], 1);
	assert_int_equal(n[3], 1);
	hb_free(&a);
	hb_free(&b);
	keel_store_close(s);
	free(url);
}

/* At a time, of each timeline the last row starting at or before it and
 * the row after it, however long the timeline: on one of 10 000 rows the
 * server reads a handful of index entries and rows. Of rows with equal
 * valid_from the later arrival is the one. */
static void scans_at_a_time_read_two_rows_a_timeline(void **state)
{
	(void)state;
	char *url = fresh_url();
	if (!url)
		keel_test_skip(NO_SERVER);
	struct keel_store *s = open_url(url);
	char id[32];
	for (int k = 0; k < 10000; k += 50) {
		struct hbatch b;
		hb_init(&b, 100 + k);
		for (int i = k; i < k + 50; i++) {
			snprintf(id, sizeof id, "e%d", i);
			hb_fact(&b, id, 1000 + 10 * i, "v:long", "gps", "1");
		}
		hb_run(s, &b);
		hb_free(&b);
	}
	struct hbatch b;
	hb_init(&b, 20000);
	hb_fact(&b, "tie", 1000 + 10 * 5000, "v:long", "gps", "2"); /* = e5000's */
	hb_fact(&b, "other", 1, "v:long", "fuel", "3");
	hb_run(s, &b);
	hb_free(&b);

	struct keel_scan q = {.type = KEEL_REC_FACT,
			      .tenant = keel_str_cstr("t"),
			      .subject = keel_str_cstr("v:long"),
			      .at_set = true,
			      .at = 1000 + 10 * 5000 + 5};
	/* The timelines of a subject are found by a loose scan of the
	 * timeline index (one entry a timeline), which the optimizer takes
	 * knowing the index's statistics; InnoDB recalculates them in the
	 * background once a tenth of a table has changed, which a table
	 * just grown from nothing has not caught up with yet. */
	assert_int_equal(keel_store_mysql_exec(s, "ANALYZE TABLE keel_fact_rows", NULL, NULL),
			 0);
	uint64_t before = handler_reads(s);
	char *got = raw_scan(s, &q);
	uint64_t touched = handler_reads(s) - before;
	assert_string_equal(got, "v:long fuel - 3 1 other 20000\n"
				 "v:long gps - 2 51000 tie 20000\n"
				 "v:long gps - 1 51010 e5001 5100\n");
	assert_true(touched < 100);
	free(got);
	/* known at a moment before the tie: e5000 is the row */
	q.known_at_set = true;
	q.known_at = 19999;
	got = raw_scan(s, &q);
	assert_string_equal(got, "v:long gps - 1 51000 e5000 5100\n"
				 "v:long gps - 1 51010 e5001 5100\n");
	free(got);
	/* before the first row: only the row after */
	q.known_at_set = false;
	q.at = 999;
	got = raw_scan(s, &q);
	assert_string_equal(got, "v:long fuel - 3 1 other 20000\n"
				 "v:long gps - 1 1000 e0 100\n");
	free(got);
	/* after the last: only the last */
	q.at = 1000000;
	q.name = keel_str_cstr("gps");
	got = raw_scan(s, &q);
	assert_string_equal(got, "v:long gps - 1 100990 e9999 10050\n");
	free(got);
	keel_store_close(s);
	free(url);
}

/* Batches within one transaction, each behind its savepoint: a failing
 * batch (an id logged already, which the insert refuses) is rolled back
 * alone and the batches around it are committed, on both write paths, as
 * the transaction's first batch and as a later one. */
static void a_failed_batch_rolls_back_alone(void **state)
{
	(void)state;
	if (!fixture_dir())
		keel_test_skip(NO_SERVER);
	for (int text = 0; text < 2; text++) {
		if (text)
			setenv("KEEL_MYSQL_BULK", "0", 1);
		char *url = fresh_url();
		struct keel_store *s = open_url(url);
		unsetenv("KEEL_MYSQL_BULK");
		struct hbatch b1, bad, b3, bad_first;
		hb_init(&b1, 1);
		hb_fact(&b1, "x1", 10, "v:1", "fuel", "1");
		hb_mention(&b1, "v:1", NULL, 0, 10, 10);
		hb_init(&bad, 1);
		hb_fact(&bad, "x2", 20, "v:1", "fuel", "2");
		hb_mention(&bad, "v:2", NULL, 0, 20, 20);
		hb_fact(&bad, "x1", 30, "v:1", "fuel", "3"); /* logged by b1 */
		hb_init(&b3, 1);
		hb_fact(&b3, "x3", 40, "v:1", "fuel", "4");

		assert_int_equal(keel_store_begin(s), 0);
		assert_int_equal(keel_store_savepoint(s), 0);
		assert_int_equal(hb_append(s, &b1), 0);
		assert_int_equal(keel_store_release(s), 0);
		assert_int_equal(keel_store_savepoint(s), 0);
		assert_int_not_equal(hb_append(s, &bad), 0);
		assert_non_null(strstr(keel_store_errmsg(s), "writing events"));
		assert_int_equal(keel_store_rollback_to_savepoint(s), 0);
		assert_int_equal(keel_store_savepoint(s), 0);
		assert_int_equal(hb_append(s, &b3), 0);
		assert_int_equal(keel_store_release(s), 0);
		assert_int_equal(keel_store_commit(s), 0);

		/* the transaction's first batch fails: nothing before it */
		hb_init(&bad_first, 2);
		hb_fact(&bad_first, "x4", 50, "v:1", "fuel", "5");
		hb_fact(&bad_first, "x3", 60, "v:1", "fuel", "6");
		assert_int_equal(keel_store_begin(s), 0);
		assert_int_equal(keel_store_savepoint(s), 0);
		assert_int_not_equal(hb_append(s, &bad_first), 0);
		assert_int_equal(keel_store_rollback_to_savepoint(s), 0);
		struct hbatch b5;
		hb_init(&b5, 2);
		hb_fact(&b5, "x5", 70, "v:1", "fuel", "7");
		assert_int_equal(keel_store_savepoint(s), 0);
		assert_int_equal(hb_append(s, &b5), 0);
		assert_int_equal(keel_store_release(s), 0);
		assert_int_equal(keel_store_commit(s), 0);

		struct keel_scan q = {.type = KEEL_REC_FACT, .tenant = keel_str_cstr("t")};
		char *got = raw_scan(s, &q);
		assert_string_equal(got, "v:1 fuel - 1 10 x1 1\n"
					 "v:1 fuel - 4 40 x3 1\n"
					 "v:1 fuel - 7 70 x5 2\n");
		free(got);
		assert_int_equal(query_u64(s, "SELECT COUNT(*) FROM keel_events"), 3);
		assert_int_equal(query_u64(s, "SELECT COUNT(*) FROM keel_entity_mentions"), 1);
		hb_free(&b1);
		hb_free(&bad);
		hb_free(&b3);
		hb_free(&bad_first);
		hb_free(&b5);
		keel_store_close(s);
		free(url);
	}
}

/* Rows are given seq in insertion order: the seq of the event behind each
 * row never decreases along the rows' seq; events' seq follow arrival. */
static void check_seq_order(struct keel_store *s, const char *table)
{
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT COUNT(*) FROM (SELECT e.seq AS es, LAG(e.seq) OVER (ORDER BY "
		 "r.seq) AS "
		 "prev FROM %s r JOIN keel_events e ON e.tenant = r.tenant AND e.id = "
		 "r.asserted_by) x WHERE prev > es",
		 table);
	assert_int_equal(query_u64(s, sql), 0);
}

static void seq_follows_insertion_order(void **state)
{
	(void)state;
	struct server sv;
	if (!server_start(&sv))
		keel_test_skip(NO_SERVER);
	/* Galera-style steps and interleaved lock mode (the script's default,
	 * MySQL 8's too): ids must still be exact and ordered. */
	char sql[256];
	snprintf(sql, sizeof sql, "SET GLOBAL auto_increment_increment = 3");
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "'%s' sql '%s/srv' \"%s\" >/dev/null", script(), sv.dir,
		 sql);
	assert_int_equal(keel_test_sh("%s", cmd), 0);
	struct keel_store *s = open_url(sv.url);
	assert_int_equal(query_u64(s, "SELECT @@innodb_autoinc_lock_mode"), 2);

	struct keel_test_lines *t = keel_test_lines_generate(5000, 2, 11, 0.05, 0.05);
	ingest_all(s, t, 700, NULL);
	check_seq_order(s, "keel_fact_rows");
	check_seq_order(s, "keel_relation_rows");
	assert_int_equal(
	    query_u64(s, "SELECT COUNT(*) FROM keel_fact_rows WHERE seq % 3 <> 1"), 0);

	/* the seq handed back is the event's stored seq (the bulk path
	 * numbers a single writer's rows from the first id) */
	struct hbatch b;
	hb_init(&b, 1);
	char id[32];
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof id, "h%d", i);
		hb_fact(&b, id, 1000 + i, i % 2 ? "vehicle:H-1" : "vehicle:H-2",
			"fuel_pct", "7");
	}
	hb_run(s, &b);
	int64_t prev = 0;
	for (size_t i = 0; i < b.events.len; i++) {
		const struct keel_batch_event *ev = b.events.items[i];
		assert_true(ev->seq > prev);
		prev = ev->seq;
		snprintf(sql, sizeof sql, "SELECT seq FROM keel_events WHERE id = '%.*s'",
			 (int)ev->id.len, ev->id.ptr);
		assert_int_equal(query_u64(s, sql), (uint64_t)ev->seq);
	}
	hb_free(&b);
	keel_store_close(s);
	keel_test_lines_free(t);
	server_stop(&sv);
}

/* --------------------------------------------------- the two write paths */

/* The text path (MySQL's; KEEL_MYSQL_BULK=0 forces it on MariaDB) and the
 * bulk path (MariaDB's array binding) both give the memory store's dump
 * at batch sizes 7, 500 and 5000 with late events and duplicates; seq
 * follows insertion order on both; ingesting again changes nothing. */
static void text_and_bulk_paths_give_the_same_dumps(void **state)
{
	(void)state;
	if (!fixture_dir())
		keel_test_skip(NO_SERVER);
	struct keel_test_lines *t = keel_test_lines_generate(2500, 3, 23, 0.05, 0.05);
	char *ref = memory_dump(t, NULL, t->n, 500);
	static const size_t batches[] = {7, 500, 5000};
	for (int text = 0; text < 2; text++) {
		if (text)
			setenv("KEEL_MYSQL_BULK", "0", 1);
		else
			unsetenv("KEEL_MYSQL_BULK");
		for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
			char *url = fresh_url();
			struct keel_store *s = open_url(url);
			keel_store_mysql_reset_stats(s);
			ingest_all(s, t, batches[i], NULL);
			const struct keel_mysql_stats *st = keel_store_mysql_stats(s);
			/* the path asked for is the one taken */
			assert_true(st->insert_statements > 0);
			if (text)
				assert_int_equal(st->bulk_statements, 0);
			else
				assert_true(st->bulk_statements >= st->insert_statements);
			char *d = keel_test_dump(s, NULL);
			assert_string_equal(d, ref);
			free(d);
			check_seq_order(s, "keel_fact_rows");
			check_seq_order(s, "keel_relation_rows");
			struct keel_report rep;
			ingest_all(s, t, batches[i], &rep);
			assert_int_equal(rep.accepted, 0);
			d = keel_test_dump(s, NULL);
			assert_string_equal(d, ref);
			free(d);
			keel_store_close(s);
			free(url);
		}
	}
	unsetenv("KEEL_MYSQL_BULK");
	free(ref);
	keel_test_lines_free(t);
}

/* ------------------------------------------------ invariants on MySQL */

struct envelopes {
	struct keel_buf text;
};

static int collect_envelope(void *ud, const struct keel_record *r)
{
	struct envelopes *e = ud;
	keel_buf_addstr(&e->text, r->envelope);
	keel_buf_addc(&e->text, '\n');
	return 0;
}

/* Rebuilding the store from its log (the logged envelopes in arrival
 * order) gives the dump it had. */
struct reject_positions {
	uint64_t v[64];
	size_t n;
};

static void note_reject(void *ud, uint64_t position, const char *id, const char *message,
			const char *input, size_t input_len)
{
	(void)id;
	(void)message;
	(void)input;
	(void)input_len;
	struct reject_positions *r = ud;
	if (r->n < 64)
		r->v[r->n++] = position;
}

/* KEEL_INGEST_WORKERS: the dump equals one writer's; every tenant goes to
 * exactly one worker and 8 equal tenants are spread 2 a worker over 4; a
 * flush in the middle commits everything offered so far (the report then
 * counts it), and bad lines are rejected, each once. */
static void workers_equal_one_writer_and_never_share_a_tenant(void **state)
{
	(void)state;
	char *u1 = fresh_url();
	if (!u1)
		keel_test_skip(NO_SERVER);
	char *u4 = fresh_url();
	struct keel_test_lines *t = keel_test_lines_generate(4000, 8, 29, 0.1, 0.05);
	struct keel_store *a = open_url(u1);
	ingest_all(a, t, 500, NULL);
	char *want = keel_test_dump(a, NULL);
	keel_store_close(a);

	struct keel_store *b = open_url(u4);
	struct reject_positions rl = {0};
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(),
					      .batch = 53,
					      .on_reject = note_reject,
					      .reject_userdata = &rl,
					      .mode = KEEL_INGEST_WORKERS,
					      .workers = 4};
	struct keel_ingest *ing = NULL;
	if (keel_ingest_new(b, &o, &ing))
		fail_msg("workers: %s", keel_store_errmsg(b));
	const char *bad = "{\"tenant\":\"tenant-01\",\"id\":\"bad\"}";
	size_t half = t->n / 2, bads = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (i % 500 == 7) {
			assert_int_equal(keel_ingest_add(ing, bad, strlen(bad), 100000 + i), 0);
			bads++;
		}
		assert_int_equal(keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1),
				 0);
		if (i + 1 == half) {
			assert_true(keel_ingest_pending(ing) > 0);
			assert_int_equal(keel_ingest_flush(ing), 0);
			assert_int_equal(keel_ingest_pending(ing), 0);
			const struct keel_report *r = keel_ingest_report(ing);
			assert_int_equal(r->accepted + r->duplicates + r->rejected, r->read);
			assert_int_equal(r->read, half + bads);
		}
	}
	assert_int_equal(keel_ingest_finish(ing), 0);
	const struct keel_report *r = keel_ingest_report(ing);
	assert_int_equal(r->read, t->n + bads);
	assert_int_equal(r->rejected, bads);
	assert_int_equal(rl.n, bads);
	assert_int_equal(r->accepted + r->duplicates + r->rejected, r->read);
	assert_non_null(strstr(keel_ingest_method(ing), "4 workers"));
	const struct keel_workers *w = keel_ingest_workers_of(ing);
	assert_non_null(w);
	assert_int_equal(keel_workers_count(w), 4);
	size_t seen = 0;
	for (size_t k = 0; k < 4; k++) {
		const struct keel_ptrvec *tk = keel_workers_tenants_of(w, k);
		assert_int_equal(tk->len, 2);
		for (size_t i = 0; i < tk->len; i++, seen++)
			for (size_t j = 0; j < 4; j++) {
				const struct keel_ptrvec *tj = keel_workers_tenants_of(w, j);
				for (size_t x = 0; j != k && x < tj->len; x++)
					assert_string_not_equal(tk->items[i], tj->items[x]);
			}
	}
	assert_int_equal(seen, 8);
	keel_ingest_free(ing);
	char *got = keel_test_dump(b, NULL);
	assert_string_equal(want, got);
	keel_store_close(b);
	free(want);
	free(got);
	keel_test_lines_free(t);
	free(u1);
	free(u4);
}

static void replay_from_the_log_gives_the_same_dump(void **state)
{
	(void)state;
	char *u1 = fresh_url();
	if (!u1)
		keel_test_skip(NO_SERVER);
	char *u2 = fresh_url();
	struct keel_test_lines *t = keel_test_lines_generate(6000, 2, 21, 0.05, 0.05);
	struct keel_store *a = open_url(u1);
	ingest_all(a, t, 500, NULL);
	char *before = keel_test_dump(a, NULL);
	struct keel_ptrvec tenants = {0};
	assert_int_equal(keel_store_tenants(a, &tenants), 0);
	assert_int_equal(tenants.len, 2);
	struct envelopes log;
	keel_buf_init(&log.text);
	for (size_t i = 0; i < tenants.len; i++) {
		struct keel_scan q = {.type = KEEL_REC_EVENT,
				      .tenant = keel_str_cstr(tenants.items[i])};
		assert_int_equal(keel_store_scan(a, &q, collect_envelope, &log), 0);
		free(tenants.items[i]);
	}
	keel_ptrvec_free(&tenants);
	struct keel_test_lines *replay = keel_test_lines_split(log.text.data);
	struct keel_store *b = open_url(u2);
	struct keel_report rep;
	ingest_all(b, replay, 500, &rep);
	assert_int_equal(rep.duplicates, 0);
	char *after = keel_test_dump(b, NULL);
	assert_string_equal(after, before);
	free(before);
	free(after);
	keel_store_close(a);
	keel_store_close(b);
	keel_test_lines_free(replay);
	keel_test_lines_free(t);
	free(u1);
	free(u2);
}

/* ---------------------------------------------------------------- faults */

static int wait_exit(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		assert_int_equal(errno, EINTR);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* keel ingest through the CLI, stderr into errfile; returns the pid. */
static pid_t spawn_ingest(const char *url, const char *input, const char *errfile)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *e = freopen(errfile, "w", stderr);
		(void)e;
		execl(KEEL_BIN, "keel", "ingest", "--cartridge", "fleet", "--store", url, "--batch", "2000",
		      input, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static uint64_t logged_events(const char *url)
{
	struct keel_store *s = NULL;
	if (keel_store_open(url, &s, NULL))
		return 0;
	uint64_t n = query_u64(s, "SELECT COUNT(*) FROM keel_events");
	keel_store_close(s);
	return n;
}

/* The server killed (kill -9) while keel ingest runs: a clear error naming
 * the batch, exactly the committed batches in the store, and the same
 * command completing once the server is back, with nothing lost or
 * duplicated. */
static void server_killed_mid_ingest_loses_no_batch_and_retry_completes(void **state)
{
	(void)state;
	struct server sv;
	if (!server_start(&sv))
		keel_test_skip(NO_SERVER);
	/* no duplicates in the input: every batch logs exactly 2000 events */
	struct keel_test_lines *t = keel_test_lines_generate(40000, 2, 33, 0.05, 0.0);
	char input[4096], errfile[4096];
	snprintf(input, sizeof input, "%s/in.ndjson", sv.dir);
	snprintf(errfile, sizeof errfile, "%s/err.txt", sv.dir);
	{
		FILE *f = fopen(input, "w");
		for (size_t i = 0; i < t->n; i++)
			fprintf(f, "%s\n", t->lines[i]);
		fclose(f);
	}
	pid_t pid = spawn_ingest(sv.url, input, errfile);
	/* wait for the first committed batch, then kill the server */
	for (int i = 0; i < 3000 && logged_events(sv.url) == 0; i++)
		usleep(10000);
	assert_true(logged_events(sv.url) > 0);
	server_cmd(&sv, "kill");
	assert_int_equal(wait_exit(pid), 1);
	char *err = keel_test_read_file(errfile, NULL);
	assert_non_null(err);
	/* the error is the first line, whole; the report follows it */
	char *nl = strchr(err, '\n');
	assert_non_null(nl);
	*nl = 0;
	assert_true(!strncmp(err, "keel ingest: batch of lines ", 28));
	/* 2013 when the kill lands inside a statement, 2006 when it lands
	 * between two (seen once in CI under load): either way the same
	 * one-line message. */
	if (!strstr(err, ": lost the connection to the mysql server (error 2013: ") &&
	    !strstr(err, ": lost the connection to the mysql server (error 2006: "))
		fail_msg("not a lost connection: %s", err);
	assert_non_null(strstr(err, "); nothing of the batch was committed"));

	server_cmd(&sv, "restart");
	uint64_t n = logged_events(sv.url);
	assert_true(n > 0 && n < t->n);
	assert_int_equal(n % 2000, 0);
	/* the store holds exactly the committed batches, nothing of the next */
	struct keel_store *s = open_url(sv.url);
	char *partial = keel_test_dump(s, NULL);
	char *want = memory_dump(t, NULL, (size_t)n, 2000);
	assert_string_equal(partial, want);
	free(partial);
	free(want);
	keel_store_close(s);

	/* the same command again finishes the job */
	pid = spawn_ingest(sv.url, input, errfile);
	assert_int_equal(wait_exit(pid), 0);
	s = open_url(sv.url);
	char *all = keel_test_dump(s, NULL);
	want = memory_dump(t, NULL, t->n, 2000);
	assert_string_equal(all, want);
	free(all);
	free(want);
	keel_store_close(s);
	free(err);
	keel_test_lines_free(t);
	server_stop(&sv);
}

/* Through the library: the store reports the lost server, rolls nothing
 * half-way, and reconnects at the next batch once the server is back. */
static void store_reconnects_after_the_server_returns(void **state)
{
	(void)state;
	struct server sv;
	if (!server_start(&sv))
		keel_test_skip(NO_SERVER);
	struct keel_test_lines *t = keel_test_lines_generate(3000, 1, 44, 0.05, 0.05);
	struct keel_store *s = open_url(sv.url);
	assert_int_equal(ingest_range(s, t, NULL, 0, 1000, 500, NULL), 0);
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(), .batch = 500};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	/* the batch's first event while the server is up: the ingester
	 * reads its tenant's cartridge then (once), so what fails below is
	 * the batch */
	int rc = keel_ingest_add(ing, t->lines[1000], strlen(t->lines[1000]), 1001);
	assert_int_equal(rc, 0);
	server_cmd(&sv, "kill");
	for (size_t i = 1001; i < 1500 && rc == 0; i++)
		rc = keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1);
	assert_int_equal(rc, KEEL_ESTORE);
	const char *msg = keel_ingest_errmsg(ing);
	assert_non_null(strstr(msg, "batch of lines 1001-1500: "));
	assert_non_null(strstr(msg, "lost the connection to the mysql server"));
	keel_ingest_free(ing);

	/* while it is down, every batch fails the same clear way */
	assert_int_equal(ingest_range(s, t, NULL, 1000, 1500, 500, NULL), KEEL_ESTORE);
	assert_non_null(strstr(keel_store_errmsg(s), "reconnecting: store \""));

	server_cmd(&sv, "restart");
	assert_int_equal(ingest_range(s, t, NULL, 1000, t->n, 500, NULL), 0);
	assert_true(keel_store_mysql_stats(s)->reconnects >= 1);
	char *got = keel_test_dump(s, NULL);
	char *want = memory_dump(t, NULL, t->n, 500);
	assert_string_equal(got, want);
	free(got);
	free(want);
	keel_store_close(s);
	keel_test_lines_free(t);
	server_stop(&sv);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(bad_urls_give_one_line_errors),
    cmocka_unit_test(connection_errors_are_clear),
    cmocka_unit_test(tls_modes_are_what_they_say),
    cmocka_unit_test(credentials_are_percent_decoded_and_sockets_work),
    cmocka_unit_test(schema_is_created_versioned_and_newer_refused),
    cmocka_unit_test(strings_compare_bytewise),
    cmocka_unit_test(a_batch_appends_and_updates_nothing),
    cmocka_unit_test(in_lists_are_short_and_reads_leave_no_warnings),
    cmocka_unit_test(scans_known_at_see_what_was_recorded_by_then),
    cmocka_unit_test(scans_at_a_time_read_two_rows_a_timeline),
    cmocka_unit_test(a_failed_batch_rolls_back_alone),
    cmocka_unit_test(seq_follows_insertion_order),
    cmocka_unit_test(text_and_bulk_paths_give_the_same_dumps),
    cmocka_unit_test(large_events_are_rejected_alone),
    cmocka_unit_test(replay_from_the_log_gives_the_same_dump),
    cmocka_unit_test(workers_equal_one_writer_and_never_share_a_tenant),
    cmocka_unit_test(server_killed_mid_ingest_loses_no_batch_and_retry_completes),
    cmocka_unit_test(store_reconnects_after_the_server_returns),
};

#else /* !KEEL_WITH_MYSQL */

static void built_without_mysql(void **state)
{
	(void)state;
	keel_test_skip("built without the MySQL store (KEEL_WITH_MYSQL=OFF)");
}

/* Written out rather than with cmocka_unit_test(), so that ctest does not
 * register it beside the real cases. */
static const struct CMUnitTest tests[] = {
    {"built_without_mysql", built_without_mysql, NULL, NULL, NULL},
};

#endif

KEEL_TEST_MAIN(tests)


/*
 * test_store_postgres.c - the PostgreSQL store on a real server.
 *
 * The suite's server comes from the ctest fixture (scripts/postgres-test-
 * server, see tests/CMakeLists.txt); each case takes a fresh database from
 * it. The fault case starts a private server, since it kills it.
 *
 * What is proved here, beside the store contract that test_conformance
 * runs on every store (PostgreSQL included):
 *  - URLs, passwords, missing databases, absent servers, certificate
 *    files: one-line errors, the password never shown;
 *  - the schema: created on first use, versioned, a newer one refused;
 *  - the write path's promises: a batch costs the same round trips at
 *    500 events and at 5000 (binary COPY, one lookup of the batch's
 *    identities as arrays); rows only appended; seq follows insertion
 *    order; a failing batch rolls back alone, first in its transaction
 *    or not;
 *  - raw scans at a time read two rows a timeline, never its history;
 *  - workers, and replay from the log;
 *  - the server stopped with pg_ctl stop -m immediate in the middle of
 *    ingestion: a clear error naming the batch's lines, exactly the
 *    committed batches in the store, and the same command completing
 *    once it is back.
 */
#include "support.h"
#include "hand_batch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "util.h"

#ifdef KEEL_WITH_POSTGRES
#include "store/postgres/internal.h"

/* ------------------------------------------------------------- helpers */

static const char *script(void)
{
	const char *s = getenv("KEEL_PG_SCRIPT");
	return s && *s ? s : KEEL_SOURCE_DIR "/scripts/postgres-test-server";
}

#define NO_SERVER "no PostgreSQL server: KEEL_TEST_PG_DIR is unset (the postgres_server ctest fixture sets it)"

static const char *fixture_dir(void)
{
	const char *d = getenv("KEEL_TEST_PG_DIR");
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

/* Ingests lines [from, to) in batches. */
static int ingest_range(struct keel_store *s, const struct keel_test_lines *t, size_t from,
			size_t to, size_t batch)
{
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(), .batch = batch};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	int rc = 0;
	for (size_t i = from; i < to && rc == 0; i++)
		rc = keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1);
	if (rc == 0)
		rc = keel_ingest_flush(ing);
	keel_ingest_free(ing);
	return rc;
}

/* The dump of the first n lines ingested into a memory store. */
static char *memory_dump(const struct keel_test_lines *t, size_t n, size_t batch)
{
	struct keel_store *m = open_url("memory:");
	assert_int_equal(ingest_range(m, t, 0, n, batch), 0);
	char *d = keel_test_dump(m, NULL);
	keel_store_close(m);
	return d;
}

struct u64_ctx {
	uint64_t v;
	bool got;
};

static int u64_row(void *ud, int ncols, char **row)
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
	if (keel_store_postgres_exec(s, sql, u64_row, &c))
		fail_msg("%s: %s", sql, keel_store_errmsg(s));
	assert_true(c.got);
	return c.v;
}

/* The server's socket directory: where DIR/cluster points. */
static char *cluster_dir(const char *dir)
{
	char link[4096], target[4096];
	snprintf(link, sizeof link, "%s/cluster", dir);
	ssize_t n = readlink(link, target, sizeof target - 1);
	assert_true(n > 0);
	target[n] = 0;
	return strdup(target);
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

/* Mistakes in a URL are named before anything connects, the password
 * masked wherever it was given. */
static void bad_urls_give_one_line_errors(void **state)
{
	(void)state;
	static const struct {
		const char *url, *msg;
	} cases[] = {
	    {"postgres:keel", "store \"postgres:keel\": expected "
			      "postgres://user:password@host:port/db (or postgresql://...)"},
	    {"postgres://u:secret@h/", "store \"postgres://u:***@h/\": missing database name "
				       "(postgres://user:password@host:port/db)"},
	    {"postgresql://u:secret@h:5432", "store \"postgresql://u:***@h:5432\": missing "
					     "database name "
					     "(postgres://user:password@host:port/db)"},
	    {"postgres://u:secret@h/db?sslmode=sometimes",
	     "store \"postgres://u:***@h/db?sslmode=sometimes\": sslmode \"sometimes\": "
	     "expected disable, allow, prefer, require, verify-ca or verify-full"},
	    {"postgres://u:secret@h/db?sock=/x",
	     "store \"postgres://u:***@h/db?sock=/x\": invalid URI query parameter: \"sock\""},
	    {"postgres://u@h/db?password=secret&sslmode=x",
	     "store \"postgres://u@h/db?password=***&sslmode=x\": sslmode \"x\": expected "
	     "disable, allow, prefer, require, verify-ca or verify-full"},
	    {"postgres://u:secret@h/db?host=%zz",
	     "store \"postgres://u:***@h/db?host=%zz\": invalid percent-encoded token: "
	     "\"%zz\""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		open_fails_with(cases[i].url, KEEL_EURL, cases[i].msg);
}

static void connection_errors_are_clear(void **state)
{
	(void)state;
	const char *dir = fixture_dir();
	if (!dir)
		keel_test_skip(NO_SERVER);
	char *port = file_line(dir, "port");
	char *password = file_line(dir, "password");
	char *sock = cluster_dir(dir);
	char url[4096], msg[8192];

	/* wrong password */
	snprintf(url, sizeof url, "postgres://keel:wrong@/keel?host=%s&port=%s", sock, port);
	snprintf(msg, sizeof msg,
		 "store \"postgres://keel:***@/keel?host=%s&port=%s\": access denied for "
		 "user \"keel\" (wrong user name or password)",
		 sock, port);
	open_fails_with(url, KEEL_ESTORE, msg);

	/* a database that does not exist */
	snprintf(url, sizeof url, "postgres://keel:%s@/keel_missing?host=%s&port=%s", password,
		 sock, port);
	snprintf(msg, sizeof msg,
		 "store \"postgres://keel:***@/keel_missing?host=%s&port=%s\": database "
		 "\"keel_missing\" does not exist",
		 sock, port);
	open_fails_with(url, KEEL_ESTORE, msg);

	/* no server there: libpq's words, on one line */
	struct keel_store *s = NULL;
	char *err = NULL;
	assert_int_equal(keel_store_open("postgres://keel:pw@/keel?host=/nonexistent&port=5999",
					 &s, &err),
			 KEEL_ESTORE);
	assert_null(strchr(err, '\n'));
	assert_non_null(strstr(err, "store \"postgres://keel:***@/keel?host=/nonexistent&port="
				    "5999\": cannot connect: connection to server on socket "
				    "\"/nonexistent/.s.PGSQL.5999\" failed: No such file or "
				    "directory"));
	free(err);

	/* a certificate file that is not there, named before connecting */
	snprintf(url, sizeof url,
		 "postgres://keel:%s@/keel?host=%s&port=%s&sslrootcert=/nonexistent/ca.pem",
		 password, sock, port);
	snprintf(msg, sizeof msg,
		 "store \"postgres://keel:***@/keel?host=%s&port=%s&sslrootcert=/nonexistent/"
		 "ca.pem\": sslrootcert \"/nonexistent/ca.pem\": No such file or directory",
		 sock, port);
	open_fails_with(url, KEEL_ESTORE, msg);

	/* the right password, as postgresql:// too */
	snprintf(url, sizeof url, "postgresql://keel:%s@/keel?host=%s&port=%s", password, sock,
		 port);
	keel_store_close(open_url(url));
	free(port);
	free(password);
	free(sock);
}

/* The tenants' cartridges as a store before schema 4 held them: each
 * tenant's row with the cartridge's name, version and text. */
#define OLD_CARTRIDGES                                                                   \
	"DROP TABLE keel_cartridges; ALTER TABLE keel_tenant_cartridges ADD COLUMN name "  \
	"text COLLATE \"C\" NOT NULL, ADD COLUMN version text COLLATE \"C\" NOT NULL, " \
	"ADD COLUMN text text COLLATE \"C\"; "
/* The columns of the cartridge tables today: 7 */
#define CARTRIDGE_COLUMNS                                                                \
	"SELECT count(*) FROM information_schema.columns WHERE table_schema = "            \
	"current_schema() AND table_name IN ('keel_cartridges', 'keel_tenant_cartridges')"
/* Views as a store before schema 3 had them, as far as the test needs:
 * without the columns of times as text (X_text) and value_text. */
#define OLD_VIEWS                                                                        \
	"DROP VIEW keel_facts, keel_relations, keel_entities; "                          \
	"CREATE VIEW keel_facts AS SELECT seq, valid_from FROM keel_fact_rows; "         \
	"CREATE VIEW keel_relations AS SELECT seq, valid_from FROM keel_relation_rows; " \
	"CREATE VIEW keel_entities AS SELECT tenant, subject FROM keel_entity_mentions; "
/* The views' columns of strings as text: 4 of facts, 3 of relations, 3
 * of entities. */
#define TEXT_COLUMNS                                                                     \
	"SELECT count(*) FROM information_schema.columns WHERE table_schema = "          \
	"current_schema() AND table_name IN ('keel_facts', 'keel_relations', "           \
	"'keel_entities') AND column_name LIKE '%\\_text'"

/* Created on first use with its version; a newer version is refused with
 * both numbers; a store opened again keeps what it had; an older version
 * is migrated. */
static void schema_is_created_versioned_and_newer_refused(void **state)
{
	(void)state;
	char *url = fresh_url();
	if (!url)
		keel_test_skip(NO_SERVER);
	struct keel_store *s = open_url(url);
	int was = -1, now = -1;
	assert_int_equal(s->ops->schema_versions(s, &was, &now), 0);
	assert_int_equal(was, 0);
	assert_int_equal(now, keel_store_postgres_schema_version());
	assert_int_equal(query_u64(s, "SELECT value FROM keel_meta WHERE name = "
				      "'schema_version'"),
			 (uint64_t)keel_store_postgres_schema_version());
	/* every string column compares bytewise */
	assert_int_equal(query_u64(s, "SELECT count(*) FROM information_schema.columns WHERE "
				      "table_name LIKE 'keel\\_%' AND data_type = 'text' AND "
				      "collation_name IS DISTINCT FROM 'C'"),
			 0);
	keel_store_close(s);
	s = open_url(url);
	assert_int_equal(s->ops->schema_versions(s, &was, &now), 0);
	assert_int_equal(was, keel_store_postgres_schema_version());
	/* A version 1 store (before keel consume's log positions, with each
	 * tenant's cartridge text in its own row, and views without their
	 * columns of times as text: a stand-in for the old ones) gains
	 * keel_log_positions, keel_cartridges and today's views when it
	 * opens. */
	assert_int_equal(keel_store_postgres_exec(s,
						  "DROP TABLE keel_log_positions; " OLD_CARTRIDGES
						  OLD_VIEWS "UPDATE keel_meta SET value = 1 WHERE "
						  "name = 'schema_version'",
						  NULL, NULL),
			 0);
	keel_store_close(s);
	s = open_url(url);
	assert_int_equal(s->ops->schema_versions(s, &was, &now), 0);
	assert_int_equal(was, 1);
	assert_int_equal(now, keel_store_postgres_schema_version());
	assert_int_equal(query_u64(s, "SELECT count(*) FROM pg_catalog.pg_tables WHERE "
				      "schemaname = current_schema() AND tablename = "
				      "'keel_log_positions'"),
			 1);
	assert_int_equal(query_u64(s, TEXT_COLUMNS), 10);
	assert_int_equal(query_u64(s, CARTRIDGE_COLUMNS), 7);
	/* A version 2 store gains today's views and keel_cartridges. */
	assert_int_equal(keel_store_postgres_exec(s,
						  OLD_CARTRIDGES OLD_VIEWS
						  "UPDATE keel_meta SET value = 2 "
						  "WHERE name = 'schema_version'",
						  NULL, NULL),
			 0);
	assert_int_equal(query_u64(s, TEXT_COLUMNS), 0);
	keel_store_close(s);
	s = open_url(url);
	assert_int_equal(s->ops->schema_versions(s, &was, &now), 0);
	assert_int_equal(was, 2);
	assert_int_equal(query_u64(s, TEXT_COLUMNS), 10);
	assert_int_equal(query_u64(s, CARTRIDGE_COLUMNS), 7);
	assert_int_equal(query_u64(s, "SELECT value FROM keel_meta WHERE name = "
				      "'schema_version'"),
			 (uint64_t)keel_store_postgres_schema_version());
	assert_int_equal(keel_store_postgres_exec(s,
						  "UPDATE keel_meta SET value = 99 WHERE "
						  "name = 'schema_version'",
						  NULL, NULL),
			 0);
	keel_store_close(s);
	char *err = NULL;
	assert_int_equal(keel_store_open(url, &s, &err), KEEL_ESCHEMA);
	char want[128];
	snprintf(want, sizeof want,
		 "schema version 99 is newer than this keel supports (%d): upgrade keel",
		 keel_store_postgres_schema_version());
	assert_non_null(strstr(err, want));
	free(err);
	free(url);
}

/* ------------------------------------------------------- the write path */

/* The round trips of each batch of an ingest: the most any took, less
 * those that prepared a statement (once a connection, when first run). */
static void batch_round_trips(struct keel_store *s, const struct keel_test_lines *t,
			      size_t batch, uint64_t *max, uint64_t *batches)
{
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(), .batch = batch};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	const struct keel_pg_stats *st = keel_store_postgres_stats(s);
	uint64_t before = st->round_trips - st->prepares;
	*max = 0;
	*batches = 0;
	for (size_t i = 0; i <= t->n; i++) {
		if (i < t->n)
			assert_int_equal(
			    keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1), 0);
		else
			assert_int_equal(keel_ingest_flush(ing), 0);
		uint64_t now = st->round_trips - st->prepares;
		if (now != before) {
			if (now - before > *max)
				*max = now - before;
			(*batches)++;
			before = now;
		}
	}
	keel_ingest_free(ing);
}

/* A batch costs the same round trips at 500 events and at 5000: one
 * lookup of its identities, every new row through binary COPY, nothing
 * read but the identities and the clock, nothing updated. The dump is
 * the memory store's, late events and duplicates included. */
static void round_trips_do_not_grow_with_the_batch(void **state)
{
	(void)state;
	char *u1 = fresh_url();
	if (!u1)
		keel_test_skip(NO_SERVER);
	char *u2 = fresh_url();
	struct keel_test_lines *t = keel_test_lines_generate(10000, 3, 5, 0.05, 0.05);
	char *ref = memory_dump(t, t->n, 500);
	static const size_t sizes[] = {500, 5000};
	char *urls[] = {u1, u2};
	uint64_t most[2];
	for (size_t k = 0; k < 2; k++) {
		struct keel_store *s = open_url(urls[k]);
		keel_store_postgres_reset_stats(s);
		uint64_t max, batches;
		batch_round_trips(s, t, sizes[k], &max, &batches);
		most[k] = max;
		const struct keel_pg_stats *st = keel_store_postgres_stats(s);
		/* savepoint, lookup, BEGIN, the clock, the seq block, events
		 * (2); at the commit the mentions' seq block, mentions, the
		 * transaction's facts, its relations (2 each), COMMIT: 14; and in
		 * the first batch, for each of the 3 new tenants, the read
		 * and the record of its cartridge */
		if (max > 14 + 2 * 3)
			fail_msg("batch %zu: %llu round trips in a batch", sizes[k], (unsigned long long)max);
		assert_true(batches >= t->n / sizes[k]);
		/* one lookup a batch, of its distinct identities */
		assert_true(st->lookups <= batches);
		assert_true(st->lookup_ids <= t->n);
		/* every row came through COPY: events, rows, mentions */
		assert_int_equal(st->copied_rows,
				 query_u64(s, "SELECT (SELECT count(*) FROM keel_events) + "
					      "(SELECT count(*) FROM keel_fact_rows) + "
					      "(SELECT count(*) FROM keel_relation_rows) + "
					      "(SELECT count(*) FROM keel_entity_mentions)"));
		assert_int_equal(query_u64(s, "SELECT (SELECT count(*) FROM keel_fact_rows) + "
					      "(SELECT count(*) FROM keel_relation_rows)"),
				 st->rows_appended);
		char *d = keel_test_dump(s, NULL);
		assert_string_equal(d, ref);
		free(d);
		keel_store_close(s);
	}
	/* the bound above holds at both sizes: ten times the events a batch
	 * cost no round trip more (the most seen differ by how a commit falls
	 * between batches, not by the batch's size) */
	print_message("most round trips in a batch: %llu at 500, %llu at 5000\n",
		      (unsigned long long)most[0], (unsigned long long)most[1]);
	free(ref);
	keel_test_lines_free(t);
	free(u1);
	free(u2);
}

/* Batches within one transaction, each behind its savepoint: a failing
 * batch (an id logged already, which the COPY refuses) is rolled back
 * alone and the batches around it are committed, as the transaction's
 * first batch and as a later one. */
static void a_failed_batch_rolls_back_alone(void **state)
{
	(void)state;
	char *url = fresh_url();
	if (!url)
		keel_test_skip(NO_SERVER);
	struct keel_store *s = open_url(url);
	struct hbatch b1, bad, b3, bad_first, b5;
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
	assert_non_null(strstr(keel_store_errmsg(s), "writing events: another connection "
						     "logged some of the batch's events"));
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
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_events"), 3);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_entity_mentions"), 1);
	hb_free(&b1);
	hb_free(&bad);
	hb_free(&b3);
	hb_free(&bad_first);
	hb_free(&b5);
	keel_store_close(s);
	free(url);
}

/* A transaction's facts and relations wait for one COPY a table before
 * its commit: a batch rolled back to its savepoint drops its own waiting
 * rows and keeps the earlier batches'; a statement of the same connection
 * sees them (they are written before it); past the store's limit they are
 * written at the end of the batch that passed it, and a batch rolled back
 * after that takes its transaction with it, saying so. */
static void waiting_rows_follow_their_batch(void **state)
{
	(void)state;
	char *url = fresh_url();
	if (!url)
		keel_test_skip(NO_SERVER);
	struct keel_store *s = open_url(url);
	const struct keel_pg_stats *st = keel_store_postgres_stats(s);
	struct hbatch b1, b2, b3;
	hb_init(&b1, 1);
	hb_fact(&b1, "x1", 10, "v:1", "fuel", "1");
	hb_link(&b1, "x1", 10, "v:1", "tows", "v:9", true);
	hb_init(&b2, 1);
	hb_fact(&b2, "x2", 20, "v:1", "fuel", "2");
	hb_link(&b2, "x2", 20, "v:1", "tows", "v:8", true);
	hb_init(&b3, 1);
	hb_fact(&b3, "x3", 30, "v:1", "fuel", "3");

	keel_store_postgres_reset_stats(s);
	assert_int_equal(keel_store_begin(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(hb_append(s, &b1), 0);
	assert_int_equal(keel_store_release(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(hb_append(s, &b2), 0);
	assert_int_equal(keel_store_rollback_to_savepoint(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(hb_append(s, &b3), 0);
	assert_int_equal(keel_store_release(s), 0);
	/* three batches, three COPYs: their events */
	assert_int_equal(st->copies, 3);
	assert_int_equal(keel_store_commit(s), 0);
	/* and one a table at the commit */
	assert_int_equal(st->copies, 5);
	struct keel_scan q = {.type = KEEL_REC_FACT, .tenant = keel_str_cstr("t")};
	char *got = raw_scan(s, &q);
	assert_string_equal(got, "v:1 fuel - 1 10 x1 1\n"
				 "v:1 fuel - 3 30 x3 1\n");
	free(got);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_relation_rows WHERE "
				      "object = 'v:9'"),
			 1);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_relation_rows"), 1);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_events"), 2);

	/* a statement in the transaction reads the rows waiting before it */
	struct hbatch b4;
	hb_init(&b4, 2);
	hb_fact(&b4, "x4", 40, "v:1", "fuel", "4");
	assert_int_equal(keel_store_begin(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(hb_append(s, &b4), 0);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_fact_rows"), 3);
	assert_int_equal(keel_store_release(s), 0);
	assert_int_equal(keel_store_commit(s), 0);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_fact_rows"), 3);

	/* Past the limit: 64 facts of 66 000 bytes are more than 4 MiB. A
	 * small batch waits, the big one after it writes both. */
	char *big = keel_xmalloc(66001);
	memset(big, 'a', 66000);
	big[66000] = 0;
	struct hbatch small, large, bad, after;
	hb_init(&small, 3);
	hb_fact(&small, "s1", 50, "v:2", "fuel", "5");
	hb_init(&large, 3);
	char id[16];
	for (int i = 0; i < 64; i++) {
		snprintf(id, sizeof id, "L%d", i);
		hb_fact(&large, id, 60 + i, "v:3", "note", big);
	}
	uint64_t facts = query_u64(s, "SELECT count(*) FROM keel_fact_rows");
	keel_store_postgres_reset_stats(s);
	assert_int_equal(keel_store_begin(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(hb_append(s, &small), 0);
	assert_int_equal(keel_store_release(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(hb_append(s, &large), 0);
	assert_int_equal(st->copies, 3); /* two of events, one of facts */
	/* rolling the big batch back would take the small one's rows: the
	 * transaction goes, and the message says so */
	assert_int_not_equal(keel_store_rollback_to_savepoint(s), 0);
	assert_non_null(strstr(keel_store_errmsg(s), "rows of the transaction's earlier "
						     "batches went with it"));
	assert_int_equal(keel_store_rollback(s), 0);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_fact_rows"), facts);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_events WHERE id = 's1'"),
			 0);

	/* the same, then a failing batch (an id logged already): it alone
	 * is rolled back */
	hb_init(&bad, 3);
	hb_fact(&bad, "b1", 200, "v:2", "fuel", "6");
	hb_fact(&bad, "x1", 210, "v:2", "fuel", "7");
	hb_init(&after, 3);
	hb_fact(&after, "a1", 220, "v:2", "fuel", "8");
	assert_int_equal(keel_store_begin(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(hb_append(s, &small), 0);
	assert_int_equal(keel_store_release(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(hb_append(s, &large), 0);
	assert_int_equal(keel_store_release(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_not_equal(hb_append(s, &bad), 0);
	assert_int_equal(keel_store_rollback_to_savepoint(s), 0);
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(hb_append(s, &after), 0);
	assert_int_equal(keel_store_release(s), 0);
	assert_int_equal(keel_store_commit(s), 0);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_fact_rows"), facts + 66);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_fact_rows WHERE "
				      "predicate = 'note' AND length(value) = 66000"),
			 64);
	assert_int_equal(query_u64(s, "SELECT count(*) FROM keel_events WHERE id = 'b1'"),
			 0);
	q.subject = keel_str_cstr("v:2");
	got = raw_scan(s, &q);
	assert_string_equal(got, "v:2 fuel - 5 50 s1 3\n"
				 "v:2 fuel - 8 220 a1 3\n");
	free(got);

	free(big);
	hb_free(&b1);
	hb_free(&b2);
	hb_free(&b3);
	hb_free(&b4);
	hb_free(&small);
	hb_free(&large);
	hb_free(&bad);
	hb_free(&after);
	keel_store_close(s);
	free(url);
}

/* seq is the order rows were written in: the event behind each row never
 * goes back along the rows' seq, and the seq an append hands back for an
 * event is the one stored. */
static void seq_follows_insertion_order(void **state)
{
	(void)state;
	char *url = fresh_url();
	if (!url)
		keel_test_skip(NO_SERVER);
	struct keel_store *s = open_url(url);
	struct keel_test_lines *t = keel_test_lines_generate(3000, 2, 11, 0.05, 0.05);
	assert_int_equal(ingest_range(s, t, 0, t->n, 700), 0);
	static const char *const tables[] = {"keel_fact_rows", "keel_relation_rows"};
	char sql[512];
	for (size_t i = 0; i < 2; i++) {
		snprintf(sql, sizeof sql,
			 "SELECT count(*) FROM (SELECT e.seq AS es, lag(e.seq) OVER (ORDER BY "
			 "r.seq) AS prev FROM %s r JOIN keel_events e ON e.tenant = r.tenant "
			 "AND e.source = r.asserted_by_source AND e.id = r.asserted_by) x "
			 "WHERE prev > es",
			 tables[i]);
		assert_int_equal(query_u64(s, sql), 0);
	}
	struct hbatch b;
	hb_init(&b, 1);
	char id[32];
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof id, "h%d", i);
		hb_fact(&b, id, 1000 + i, i % 2 ? "vehicle:H-1" : "vehicle:H-2", "fuel_pct", "7");
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
	free(url);
}

/* Raw scans at a time: of each timeline only the row at the time and the
 * one after it, found by dives, however long its history; with known_at,
 * among what was recorded by then; incoming relations by their object. */
static void scans_at_a_time_read_two_rows_a_timeline(void **state)
{
	(void)state;
	char *url = fresh_url();
	if (!url)
		keel_test_skip(NO_SERVER);
	struct keel_store *s = open_url(url);
	char id[32];
	for (int k = 0; k < 2000; k += 50) {
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
	hb_fact(&b, "tie", 1000 + 10 * 1000, "v:long", "gps", "2"); /* = e1000's */
	hb_fact(&b, "other", 1, "v:long", "fuel", "3");
	hb_link(&b, "other", 5, "v:long", "at", "depot:1", true);
	hb_link(&b, "tie", 50, "v:long", "at", "depot:1", false);
	hb_link(&b, "tie", 7, "v:short", "at", "depot:1", true);
	hb_run(s, &b);
	hb_free(&b);

	struct keel_scan q = {.type = KEEL_REC_FACT,
			      .tenant = keel_str_cstr("t"),
			      .subject = keel_str_cstr("v:long"),
			      .at_set = true,
			      .at = 1000 + 10 * 1000 + 5};
	char *got = raw_scan(s, &q);
	assert_string_equal(got, "v:long fuel - 3 1 other 20000\n"
				 "v:long gps - 2 11000 tie 20000\n"
				 "v:long gps - 1 11010 e1001 1100\n");
	free(got);
	/* known at a moment before the tie: e1000 is the row */
	q.known_at_set = true;
	q.known_at = 19999;
	got = raw_scan(s, &q);
	assert_string_equal(got, "v:long gps - 1 11000 e1000 1100\n"
				 "v:long gps - 1 11010 e1001 1100\n");
	free(got);
	/* before the first row: only the row after */
	q.known_at_set = false;
	q.at = 999;
	got = raw_scan(s, &q);
	assert_string_equal(got, "v:long fuel - 3 1 other 20000\n"
				 "v:long gps - 1 1000 e0 100\n");
	free(got);
	/* after the last, one predicate: only the last */
	q.at = 1000000;
	q.name = keel_str_cstr("gps");
	got = raw_scan(s, &q);
	assert_string_equal(got, "v:long gps - 1 20990 e1999 2050\n");
	free(got);
	/* relations: by subject, and incoming by object */
	struct keel_scan r = {.type = KEEL_REC_RELATION,
			      .tenant = keel_str_cstr("t"),
			      .subject = keel_str_cstr("v:long"),
			      .at_set = true,
			      .at = 10};
	got = raw_scan(s, &r);
	assert_string_equal(got, "v:long at depot:1 null 5 other 20000\n"
				 "v:long at depot:1 null 50 tie 20000\n");
	free(got);
	r.subject = KEEL_STR_NULL;
	r.object = keel_str_cstr("depot:1");
	got = raw_scan(s, &r);
	assert_string_equal(got, "v:long at depot:1 null 5 other 20000\n"
				 "v:long at depot:1 null 50 tie 20000\n"
				 "v:short at depot:1 null 7 tie 20000\n");
	free(got);
	keel_store_close(s);
	free(url);
}

/* KEEL_INGEST_WORKERS on PostgreSQL: the dump equals one writer's. */
static void workers_equal_one_writer(void **state)
{
	(void)state;
	char *u1 = fresh_url();
	if (!u1)
		keel_test_skip(NO_SERVER);
	char *u4 = fresh_url();
	struct keel_test_lines *t = keel_test_lines_generate(4000, 8, 29, 0.1, 0.05);
	struct keel_store *a = open_url(u1);
	assert_int_equal(ingest_range(a, t, 0, t->n, 500), 0);
	char *want = keel_test_dump(a, NULL);
	keel_store_close(a);
	struct keel_store *b = open_url(u4);
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(), .batch = 53,
					      .mode = KEEL_INGEST_WORKERS, .workers = 4};
	struct keel_ingest *ing = NULL;
	if (keel_ingest_new(b, &o, &ing))
		fail_msg("workers: %s", keel_store_errmsg(b));
	for (size_t i = 0; i < t->n; i++)
		assert_int_equal(keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1), 0);
	assert_int_equal(keel_ingest_finish(ing), 0);
	assert_non_null(strstr(keel_ingest_method(ing), "4 workers"));
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

/* ---------------------------------------------------------------- faults */

struct server {
	char *dir;
	char *url;
};

static bool server_start(struct server *sv)
{
	if (!fixture_dir())
		return false; /* no PostgreSQL in this run */
	sv->dir = keel_test_tmpdir();
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "'%s' start '%s/srv'", script(), sv->dir);
	sv->url = command_line(cmd);
	assert_non_null(sv->url);
	return true;
}

static void server_cmd(struct server *sv, const char *what)
{
	assert_int_equal(keel_test_sh("'%s' %s '%s/srv' >/dev/null", script(), what, sv->dir), 0);
}

static void server_stop(struct server *sv)
{
	server_cmd(sv, "stop");
	keel_test_rmdir(sv->dir);
	free(sv->dir);
	free(sv->url);
}

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
		execl(KEEL_BIN, "keel", "ingest", "--cartridge", "fleet", "--store", url, "--batch",
		      "1000", "--commit-interval", "0", input, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static uint64_t logged_events(const char *url)
{
	struct keel_store *s = NULL;
	if (keel_store_open(url, &s, NULL))
		return 0;
	uint64_t n = query_u64(s, "SELECT count(*) FROM keel_events");
	keel_store_close(s);
	return n;
}

/* The server stopped with pg_ctl stop -m immediate (no checkpoint: as a
 * crash, recovered from the WAL at the next start) while keel ingest
 * runs: a clear error naming the batch's lines, exactly the committed
 * batches in the store, and the same command completing once the server
 * is back, with the dump of one clean ingest. */
static void server_stopped_mid_ingest_loses_no_batch_and_retry_completes(void **state)
{
	(void)state;
	struct server sv;
	if (!server_start(&sv))
		keel_test_skip(NO_SERVER);
	/* no duplicates in the input: every batch logs exactly 1000 events */
	struct keel_test_lines *t = keel_test_lines_generate(10000, 2, 33, 0.05, 0.0);
	char input[4096], errfile[4096];
	snprintf(input, sizeof input, "%s/in.ndjson", sv.dir);
	snprintf(errfile, sizeof errfile, "%s/err.txt", sv.dir);
	FILE *f = fopen(input, "w");
	for (size_t i = 0; i < t->n; i++)
		fprintf(f, "%s\n", t->lines[i]);
	fclose(f);
	pid_t pid = spawn_ingest(sv.url, input, errfile);
	/* wait (60 s at most) for the first committed batch, then stop the
	 * server */
	time_t deadline = time(NULL) + 60;
	while (logged_events(sv.url) == 0 && time(NULL) < deadline) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			fail_msg("keel ingest ended before the server was stopped: %s",
				 keel_test_read_file(errfile, NULL));
		usleep(10000);
	}
	assert_true(logged_events(sv.url) > 0);
	server_cmd(&sv, "kill");
	assert_int_equal(wait_exit(pid), 1);
	char *err = keel_test_read_file(errfile, NULL);
	assert_non_null(err);
	/* the error is the first line, whole; the report follows it */
	char *nl = strchr(err, '\n');
	assert_non_null(nl);
	*nl = 0;
	/* The stop lands in a batch's statements ("batch of lines A-B"), or
	 * in its commit (one a batch here): in the mentions written just
	 * before COMMIT, or in COMMIT itself, whose outcome the client
	 * cannot know. Each says which. */
	bool in_batch = !strncmp(err, "keel ingest: batch of lines ", 28);
	bool in_commit = !strncmp(err, "keel ingest: commit of lines ", 29);
	if ((!in_batch && !in_commit) ||
	    !strstr(err, ": lost the connection to the postgres server") ||
	    (!strstr(err, "); nothing of the batch was committed") &&
	     !(in_commit && strstr(err, "; the transaction may or may not have been "
					"committed"))))
		fail_msg("not a lost connection naming the batch: %s", err);

	server_cmd(&sv, "restart");
	uint64_t n = logged_events(sv.url);
	assert_true(n > 0 && n < t->n);
	assert_int_equal(n % 1000, 0);
	/* the store holds exactly the committed batches, nothing of the next */
	struct keel_store *s = open_url(sv.url);
	char *partial = keel_test_dump(s, NULL);
	char *want = memory_dump(t, (size_t)n, 1000);
	assert_string_equal(partial, want);
	free(partial);
	free(want);
	keel_store_close(s);

	/* Through the library: a handle whose server goes away reports the
	 * batch, and reconnects at the next one once the server is back. */
	s = open_url(sv.url);
	server_cmd(&sv, "kill");
	assert_int_equal(ingest_range(s, t, (size_t)n, (size_t)n + 1000, 1000), KEEL_ESTORE);
	assert_non_null(strstr(keel_store_errmsg(s), "the postgres server"));
	server_cmd(&sv, "restart");
	assert_int_equal(ingest_range(s, t, (size_t)n, (size_t)n + 1000, 1000), 0);
	assert_true(keel_store_postgres_stats(s)->reconnects >= 1);
	keel_store_close(s);

	/* the same command again finishes the job */
	pid = spawn_ingest(sv.url, input, errfile);
	assert_int_equal(wait_exit(pid), 0);
	s = open_url(sv.url);
	char *all = keel_test_dump(s, NULL);
	want = memory_dump(t, t->n, 1000);
	assert_string_equal(all, want);
	free(all);
	free(want);
	keel_store_close(s);
	free(err);
	keel_test_lines_free(t);
	server_stop(&sv);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(bad_urls_give_one_line_errors),
    cmocka_unit_test(connection_errors_are_clear),
    cmocka_unit_test(schema_is_created_versioned_and_newer_refused),
    cmocka_unit_test(round_trips_do_not_grow_with_the_batch),
    cmocka_unit_test(a_failed_batch_rolls_back_alone),
    cmocka_unit_test(waiting_rows_follow_their_batch),
    cmocka_unit_test(seq_follows_insertion_order),
    cmocka_unit_test(scans_at_a_time_read_two_rows_a_timeline),
    cmocka_unit_test(workers_equal_one_writer),
    cmocka_unit_test(server_stopped_mid_ingest_loses_no_batch_and_retry_completes),
};

#else /* !KEEL_WITH_POSTGRES */

static void built_without_postgres(void **state)
{
	(void)state;
	keel_test_skip("built without the PostgreSQL store (KEEL_WITH_POSTGRES=OFF)");
}

/* Written out rather than with cmocka_unit_test(), so that ctest does not
 * register it beside the real cases. */
static const struct CMUnitTest tests[] = {
    {"built_without_postgres", built_without_postgres, NULL, NULL, NULL},
};

#endif

KEEL_TEST_MAIN(tests)

/*
 * mysql_schema.c - the MySQL/MariaDB store's tables, created on first
 * use, and the steps that migrate an older version.
 */
#include <stdlib.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "mysql_store.h"

/* --------------------------------------------------------------- schema */

/* Each tenant's last writer: every write of a tenant sets its row to the
 * writing connection's random mark in the same transaction, so a
 * connection that finds its own mark there knows nobody else has written
 * the tenant since (see "The open-row cache"). */
#define KEEL_MYSQL_WRITERS_TABLE                                                         \
	"CREATE TABLE IF NOT EXISTS keel_writers ("                                      \
	"tenant VARBINARY(64) NOT NULL,"                                                 \
	"writer BIGINT UNSIGNED NOT NULL,"                                               \
	"PRIMARY KEY (tenant)"                                                           \
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

static const char *const keel_mysql_tables[] = {
    "CREATE TABLE IF NOT EXISTS keel_entities ("
    "tenant VARBINARY(64) NOT NULL,"
    "subject VARBINARY(255) NOT NULL,"
    "kind MEDIUMBLOB NULL,"
    "kind_time BIGINT NOT NULL,"
    "first_seen BIGINT NOT NULL,"
    "last_seen BIGINT NOT NULL,"
    "PRIMARY KEY (tenant, subject)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    "CREATE TABLE IF NOT EXISTS keel_facts ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "subject VARBINARY(255) NOT NULL,"
    "predicate VARBINARY(128) NOT NULL,"
    "value MEDIUMBLOB NULL,"
    "valid_from BIGINT NOT NULL,"
    "valid_to BIGINT NOT NULL,"
    "asserted_by VARBINARY(256) NOT NULL,"
    "closed_by VARBINARY(256) NULL,"
    "PRIMARY KEY (seq),"
    "KEY keel_facts_from (tenant, subject, predicate, valid_from)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    "CREATE TABLE IF NOT EXISTS keel_relations ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "subject VARBINARY(255) NOT NULL,"
    "relation VARBINARY(128) NOT NULL,"
    "object VARBINARY(255) NOT NULL,"
    "linked TINYINT NOT NULL,"
    "valid_from BIGINT NOT NULL,"
    "valid_to BIGINT NOT NULL,"
    "asserted_by VARBINARY(256) NOT NULL,"
    "closed_by VARBINARY(256) NULL,"
    "PRIMARY KEY (seq),"
    "KEY keel_relations_from (tenant, subject, relation, object, valid_from)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    "CREATE TABLE IF NOT EXISTS keel_events ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "id VARBINARY(256) NOT NULL,"
    "type VARBINARY(256) NOT NULL,"
    "time BIGINT NOT NULL,"
    "hash BIGINT UNSIGNED NOT NULL,"
    "envelope LONGBLOB NOT NULL,"
    "PRIMARY KEY (tenant, id),"
    "UNIQUE KEY keel_events_seq (seq)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    KEEL_MYSQL_WRITERS_TABLE,

    "INSERT IGNORE INTO keel_meta (name, value) VALUES ('schema_version', 4)",
};

/* Steps from schema version v to v + 1, indexed by v: statements run in
 * order, then the version row is updated. DDL is not transactional, so a
 * step must be able to run again after an interruption: a statement with
 * `index` set runs only while that index of `table` still exists.
 *
 * 1 -> 2: open rows may hold a placeholder in closed_by (see
 * keel_mysql_stored_closed_by); version 1's NULLs read the same, so no
 * statement, but a keel that knows only version 1 would show the
 * placeholders and must refuse the store.
 *
 * 2 -> 3: the timeline indexes end in valid_from instead of valid_to, so
 * that closing a row no longer moves its index entry; the open row is then
 * a timeline's last entry by (valid_from, seq). Each ALTER swaps one
 * table's index in one statement.
 *
 * 3 -> 4: keel_writers, each tenant's last writer, which lets the open-row
 * cache hold while other connections write other tenants. A tenant without
 * a row has no known writer, so a store written by version 3 needs no
 * rows; a keel that knows only version 3 would not set them and must
 * refuse the store. */
struct keel_mysql_migration {
	const char *sql;
	const char *table, *index; /* run only while this index exists */
};

static const struct keel_mysql_migration keel_mysql_to_3[] = {
    {"ALTER TABLE keel_facts DROP INDEX keel_facts_timeline, ADD INDEX "
     "keel_facts_from (tenant, subject, predicate, valid_from)",
     "keel_facts", "keel_facts_timeline"},
    {"ALTER TABLE keel_relations DROP INDEX keel_relations_timeline, ADD INDEX "
     "keel_relations_from (tenant, subject, relation, object, valid_from)",
     "keel_relations", "keel_relations_timeline"},
    {NULL, NULL, NULL},
};

static const struct keel_mysql_migration keel_mysql_to_4[] = {
    {KEEL_MYSQL_WRITERS_TABLE, NULL, NULL},
    {NULL, NULL, NULL},
};

static const struct keel_mysql_migration
    *const keel_mysql_migrations[KEEL_MYSQL_SCHEMA_VERSION] = {
	NULL,
	NULL,
	keel_mysql_to_3,
	keel_mysql_to_4,
};

static int keel_mysql_version_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				  const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	*(int64_t *)ud = row[0] ? keel_mysql_i64(row[0], len[0]) : 0;
	return 0;
}

int keel_mysql_schema(struct keel_mysql_store *m, struct keel_buf *err)
{
	int64_t version = -1;
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql,
		      "SELECT value FROM keel_meta WHERE name = 'schema_version'");
	int rc = keel_mysql_select(m, "reading the schema version",
				   keel_mysql_version_row, &version);
	if (rc && mysql_errno(m->db) != ER_NO_SUCH_TABLE)
		goto fail;
	if (rc || version < 0) {
		rc = keel_mysql_runs(m,
				     "CREATE TABLE IF NOT EXISTS keel_meta ("
				     "name VARBINARY(64) NOT NULL PRIMARY KEY,"
				     "value BIGINT NOT NULL) ENGINE=InnoDB",
				     "creating the schema");
		for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(keel_mysql_tables); i++)
			rc = keel_mysql_runs(m, keel_mysql_tables[i],
					     "creating the schema");
		if (rc)
			goto fail;
		version = KEEL_MYSQL_SCHEMA_VERSION;
	}
	if (version > KEEL_MYSQL_SCHEMA_VERSION) {
		keel_buf_addf(err,
			      "store \"%s\": schema version %lld is newer than this keel "
			      "supports (%d): upgrade keel",
			      m->url.shown.data, (long long)version,
			      KEEL_MYSQL_SCHEMA_VERSION);
		return KEEL_ESCHEMA;
	}
	if (version < 1) {
		keel_buf_addf(
		    err, "store \"%s\": keel_meta holds an invalid schema version %lld",
		    m->url.shown.data, (long long)version);
		return KEEL_ESCHEMA;
	}
	for (; version < KEEL_MYSQL_SCHEMA_VERSION; version++) {
		const struct keel_mysql_migration *step = keel_mysql_migrations[version];
		for (size_t i = 0; rc == 0 && step && step[i].sql; i++) {
			int64_t present = 1;
			if (step[i].index) {
				keel_buf_reset(&m->sql);
				keel_buf_addf(
				    &m->sql,
				    "SELECT COUNT(*) FROM information_schema."
				    "STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
				    "AND TABLE_NAME = '%s' AND INDEX_NAME = '%s'",
				    step[i].table, step[i].index);
				rc = keel_mysql_select(m, "migrating the schema",
						       keel_mysql_version_row, &present);
			}
			if (rc == 0 && present)
				rc = keel_mysql_runs(m, step[i].sql,
						     "migrating the schema");
		}
		keel_buf_reset(&m->sql);
		keel_buf_addf(
		    &m->sql,
		    "UPDATE keel_meta SET value = %lld WHERE name = 'schema_version'",
		    (long long)version + 1);
		if (rc == 0)
			rc = keel_mysql_run(m, m->sql.data, m->sql.len,
					    "migrating the schema");
		if (rc)
			goto fail;
	}
	return 0;
fail:
	keel_buf_addf(err, "store \"%s\": %s", m->url.shown.data, m->base.errmsg.data);
	return rc;
}

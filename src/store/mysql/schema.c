/*
 * schema.c - the MySQL/MariaDB store's tables and views, created on
 * first use, and the steps that migrate an older version
 * (docs/store-mysql.md, "Schema").
 */
#include <stdlib.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "internal.h"
#include "parts.h"

/* --------------------------------------------------------------- schema */

/*
 * Version 5: rows are never updated. Every assertion is one row of
 * keel_fact_rows or keel_relation_rows, every entity's mentions in one
 * batch one row of keel_entity_mentions; valid_to and closed_by are
 * derived on read. The timeline indexes end in valid_from, and InnoDB
 * appends the primary key (seq) to a secondary index, so (valid_from,
 * seq), the order the derivation walks, is the index's own order.
 *
 * The columns are in the order a migrated version 4 table has them (a
 * store created new and a store migrated are the same schema; the
 * migration test compares them).
 */
#define KEEL_MYSQL_TENANT_CARTRIDGES                                                     \
	"CREATE TABLE IF NOT EXISTS keel_tenant_cartridges ("                            \
	"tenant VARBINARY(64) NOT NULL,"                                                 \
	"name VARBINARY(255) NOT NULL,"                                                  \
	"version VARBINARY(255) NOT NULL,"                                               \
	"hash VARBINARY(80) NOT NULL,"                                                   \
	"text MEDIUMBLOB NULL,"                                                          \
	"recorded_at BIGINT NOT NULL,"                                                   \
	"PRIMARY KEY (tenant)"                                                           \
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

/* Each distinct cartridge once, under its content hash, which determines
 * its name, version and text (docs/store-mysql.md, "Recorded
 * cartridges"); keel_tenant_cartridges maps a tenant to it. Until
 * keel_mysql_step_shared_cartridges each tenant's row held the whole text
 * (KEEL_MYSQL_TENANT_CARTRIDGES, what that step migrates). */
#define KEEL_MYSQL_CARTRIDGES                                                            \
	"CREATE TABLE IF NOT EXISTS keel_cartridges ("                                   \
	"hash VARBINARY(80) NOT NULL,"                                                   \
	"name VARBINARY(255) NOT NULL,"                                                  \
	"version VARBINARY(255) NOT NULL,"                                               \
	"text MEDIUMBLOB NULL,"                                                          \
	"PRIMARY KEY (hash)"                                                             \
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
/* keel_tenant_cartridges as that step leaves it (the columns in the
 * migrated table's order). */
#define KEEL_MYSQL_TENANT_CARTRIDGE_HASHES                                               \
	"CREATE TABLE IF NOT EXISTS keel_tenant_cartridges ("                            \
	"tenant VARBINARY(64) NOT NULL,"                                                 \
	"hash VARBINARY(80) NOT NULL,"                                                   \
	"recorded_at BIGINT NOT NULL,"                                                   \
	"PRIMARY KEY (tenant)"                                                           \
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

/* keel forget's tombstones (docs/store-mysql.md, "Forgetting"): one row
 * per forgotten subject of a tenant, naming it only by the SHA-256 of its
 * bytes (lowercase hex), with when, by whom and how much went. */
#define KEEL_MYSQL_TOMBSTONES                                                            \
	"CREATE TABLE IF NOT EXISTS keel_tombstones ("                                   \
	"tenant VARBINARY(64) NOT NULL,"                                                 \
	"subject_sha256 VARBINARY(64) NOT NULL,"                                         \
	"forgotten_at BIGINT NOT NULL,"                                                  \
	"forgotten_by VARBINARY(256) NOT NULL,"                                          \
	"events_redacted BIGINT UNSIGNED NOT NULL,"                                      \
	"rows_removed BIGINT UNSIGNED NOT NULL,"                                         \
	"PRIMARY KEY (tenant, subject_sha256)"                                           \
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

/* Log positions (docs/log.md, "Fencing"): one row a partition of a log
 * that keel consume projects into this store, written in the same
 * transaction as the rows it covers: the stream sequence applied up to,
 * and the fencing token (lease revision) of the process that wrote it. */
#define KEEL_MYSQL_LOG_POSITIONS                                                         \
	"CREATE TABLE IF NOT EXISTS keel_log_positions ("                                \
	"log VARBINARY(255) NOT NULL,"                                                   \
	"part INT UNSIGNED NOT NULL,"                                                    \
	"seq BIGINT UNSIGNED NOT NULL,"                                                  \
	"token BIGINT UNSIGNED NOT NULL,"                                                \
	"recorded_at BIGINT NOT NULL,"                                                   \
	"PRIMARY KEY (log, part)"                                                        \
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

static const char *const keel_mysql_tables[] = {
    "CREATE TABLE IF NOT EXISTS keel_entity_mentions ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "subject VARBINARY(255) NOT NULL,"
    "kind MEDIUMBLOB NULL,"
    "kind_time BIGINT NOT NULL,"
    "first_seen BIGINT NOT NULL,"
    "last_seen BIGINT NOT NULL,"
    "recorded_at BIGINT NOT NULL DEFAULT 0,"
    "kind_key VARBINARY(255) AS (LEFT(kind, 255)) VIRTUAL,"
    "PRIMARY KEY (tenant, subject, seq),"
    "UNIQUE KEY keel_entity_mentions_seq (seq),"
    "KEY keel_entity_mentions_kind (tenant, kind_key, subject)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    "CREATE TABLE IF NOT EXISTS keel_fact_rows ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "subject VARBINARY(255) NOT NULL,"
    "predicate VARBINARY(128) NOT NULL,"
    "value MEDIUMBLOB NULL,"
    "valid_from BIGINT NOT NULL,"
    "asserted_by VARBINARY(256) NOT NULL,"
    "recorded_at BIGINT NOT NULL DEFAULT 0,"
    "asserted_by_source VARBINARY(1024) NOT NULL DEFAULT '',"
    "value_key VARBINARY(255) AS (LEFT(value, 255)) VIRTUAL,"
    "PRIMARY KEY (seq),"
    "KEY keel_facts_from (tenant, subject, predicate, valid_from),"
    "KEY keel_facts_value (tenant, predicate, value_key, subject)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    "CREATE TABLE IF NOT EXISTS keel_relation_rows ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "subject VARBINARY(255) NOT NULL,"
    "relation VARBINARY(128) NOT NULL,"
    "object VARBINARY(255) NOT NULL,"
    "linked TINYINT NOT NULL,"
    "valid_from BIGINT NOT NULL,"
    "asserted_by VARBINARY(256) NOT NULL,"
    "recorded_at BIGINT NOT NULL DEFAULT 0,"
    "asserted_by_source VARBINARY(1024) NOT NULL DEFAULT '',"
    "PRIMARY KEY (seq),"
    "KEY keel_relations_from (tenant, subject, relation, object, valid_from),"
    "KEY keel_relations_object (tenant, object, subject, relation, valid_from)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    "CREATE TABLE IF NOT EXISTS keel_events ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "id VARBINARY(256) NOT NULL,"
    "type VARBINARY(256) NOT NULL,"
    "time BIGINT NOT NULL,"
    "hash BIGINT UNSIGNED NOT NULL,"
    "envelope LONGBLOB NOT NULL,"
    "recorded_at BIGINT NOT NULL DEFAULT 0,"
    "source VARBINARY(1024) NOT NULL DEFAULT '',"
    "PRIMARY KEY (tenant, source, id),"
    "UNIQUE KEY keel_events_seq (seq)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    KEEL_MYSQL_TOMBSTONES,
    KEEL_MYSQL_TENANT_CARTRIDGE_HASHES,
    KEEL_MYSQL_LOG_POSITIONS,
    KEEL_MYSQL_CARTRIDGES,
};

/*
 * The views people read with SQL tools: the rows keel dump prints, under
 * the names the tables had until version 4 (so a query or a dashboard
 * written against those tables reads the same rows), with the columns
 * and rows of the SQLite and PostgreSQL stores' views. Each time twice:
 * X, microseconds since the epoch, and X_text, RFC 3339 of fixed width
 * (six fraction digits, always, and Z), so that text compares as the time
 * does; computed on a DATETIME, which knows no time zone, so the session's
 * time_zone does not move it. A fact's value twice: value, its JSON text,
 * and value_text, the string itself (escapes undone) when it is a JSON
 * string without U+0000 (as on the other stores: the one whose JSON text,
 * once each escaped backslash is taken out, still holds the escape
 * \u0000), NULL otherwise; bytes, as every string column. An open row's
 * valid_to and closed_by are NULL. SQL SECURITY INVOKER: whoever may read
 * the tables may read the views. Each is CREATE OR REPLACE, so that a
 * migration may run it again.
 *
 * A row ends where the next assertion of its timeline, in (valid_from,
 * seq) order, begins, and is closed by it (LEAD over the timeline).
 */
#define KEEL_MYSQL_FACT_TIMELINE                                                         \
	" OVER (PARTITION BY tenant, subject, predicate ORDER BY valid_from, seq)"
#define KEEL_MYSQL_RELATION_TIMELINE                                                     \
	" OVER (PARTITION BY tenant, subject, relation, object ORDER BY valid_from, "   \
	"seq)"
#define KEEL_MYSQL_TEXT(x)                                                               \
	"DATE_FORMAT(TIMESTAMPADD(MICROSECOND, " x ", CAST('1970-01-01' AS "             \
	"DATETIME(6))), '%Y-%m-%dT%H:%i:%s.%fZ')"
#define KEEL_MYSQL_VALUE_TEXT                                                            \
	"CASE WHEN LEFT(value, 1) = '\"' AND LOCATE('\\\\u0000', REPLACE(value, "        \
	"'\\\\\\\\', '')) = 0 THEN CAST(JSON_UNQUOTE(CONVERT(value USING utf8mb4)) AS "  \
	"BINARY) END"
/* The columns of a fact or relation row from valid_from on. */
#define KEEL_MYSQL_ROW_TIMES(timeline)                                                   \
	"valid_from, " KEEL_MYSQL_TEXT("valid_from") " AS valid_from_text, "             \
	"LEAD(valid_from)" timeline " AS valid_to, "                                     \
	KEEL_MYSQL_TEXT("LEAD(valid_from)" timeline) " AS valid_to_text, "               \
	"asserted_by_source, asserted_by, LEAD(asserted_by_source)" timeline             \
	" AS closed_by_source, LEAD(asserted_by)" timeline " AS closed_by, "             \
	"recorded_at, " KEEL_MYSQL_TEXT("recorded_at") " AS recorded_at_text"

#define KEEL_MYSQL_VIEWS_SORT_FACTS                                                      \
	"CREATE OR REPLACE SQL SECURITY INVOKER VIEW keel_facts AS "                     \
	"SELECT seq, tenant, subject, predicate, value, " KEEL_MYSQL_VALUE_TEXT          \
	" AS value_text, " KEEL_MYSQL_ROW_TIMES(KEEL_MYSQL_FACT_TIMELINE)                \
	" FROM keel_fact_rows"

#define KEEL_MYSQL_VIEWS_SORT_RELATIONS                                                  \
	"CREATE OR REPLACE SQL SECURITY INVOKER VIEW keel_relations AS "                 \
	"SELECT seq, tenant, subject, relation, object, linked, "                        \
	KEEL_MYSQL_ROW_TIMES(KEEL_MYSQL_RELATION_TIMELINE) " FROM keel_relation_rows"

/* kind: of the mention with the least kind_time that gives one, the later
 * mention on a tie (docs/semantics.md, "Entities") */
#define KEEL_MYSQL_VIEWS_SORT_ENTITIES                                                   \
	"CREATE OR REPLACE SQL SECURITY INVOKER VIEW keel_entities AS "                  \
	"SELECT m.tenant, m.subject, "                                                   \
	"(SELECT k.kind FROM keel_entity_mentions k WHERE k.tenant = m.tenant AND "      \
	"k.subject = m.subject AND k.kind IS NOT NULL ORDER BY k.kind_time, k.seq DESC " \
	"LIMIT 1) AS kind, "                                                             \
	"MIN(m.first_seen) AS first_seen, " KEEL_MYSQL_TEXT("MIN(m.first_seen)")         \
	" AS first_seen_text, MAX(m.last_seen) AS last_seen, "                           \
	KEEL_MYSQL_TEXT("MAX(m.last_seen)") " AS last_seen_text, "                       \
	"MAX(m.recorded_at) AS recorded_at, " KEEL_MYSQL_TEXT("MAX(m.recorded_at)")      \
	" AS recorded_at_text FROM keel_entity_mentions m GROUP BY m.tenant, m.subject"

/* The views of the latest schema: made by a new store, and again after
 * the last step of a migration (they read the latest columns). Today
 * they are version 11's, the texts keel_mysql_step_views_sort runs on a
 * store of version 10: those are never edited once released, so a later
 * change of the views is new texts here and a new step. */
static const char *const keel_mysql_views[] = {
    KEEL_MYSQL_VIEWS_SORT_FACTS,
    KEEL_MYSQL_VIEWS_SORT_RELATIONS,
    KEEL_MYSQL_VIEWS_SORT_ENTITIES,
};

/* Steps from schema version v to v + 1, indexed by v: statements run in
 * order, then the version row is updated. DDL is not transactional, so a
 * step must be able to run again after an interruption: a statement with
 * `guard` runs only while that query counts more than 0 (the old index,
 * table or missing column is still there).
 *
 * 1 -> 2: open rows held a placeholder in closed_by; version 1's NULLs
 * read the same, so no statement, but a keel that knows only version 1
 * would show the placeholders and had to refuse the store.
 *
 * 2 -> 3: the timeline indexes end in valid_from instead of valid_to.
 *
 * 3 -> 4: keel_writers, each tenant's last writer (version 4's open-row
 * cache).
 *
 * 4 -> 5: rows are never updated (see above). Each table becomes its
 * append-only successor in place, one ALTER TABLE each (rows, seq and
 * provenance kept; valid_to and closed_by dropped, since they are derived
 * now; recorded_at 0, "recorded before Keel kept the time"); entities
 * become one mention each; keel_writers goes (nothing reads state to
 * write any more, so writers need not take turns); the views take the
 * tables' old names. */
struct keel_mysql_migration {
	const char *sql;
	const char *guard; /* NULL: always runs */
};

#define KEEL_MYSQL_HAS_INDEX(table, index)                                               \
	"SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = "       \
	"DATABASE() AND TABLE_NAME = '" table "' AND INDEX_NAME = '" index "'"
#define KEEL_MYSQL_HAS_BASE_TABLE(table)                                                 \
	"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "           \
	"DATABASE() AND TABLE_NAME = '" table "' AND TABLE_TYPE = 'BASE TABLE'"
#define KEEL_MYSQL_HAS_COLUMN(table, column)                                              \
	"SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "          \
	"DATABASE() AND TABLE_NAME = '" table "' AND COLUMN_NAME = '" column "'"
#define KEEL_MYSQL_LACKS_COLUMN(table, column)                                           \
	"SELECT COUNT(*) = 0 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "      \
	"DATABASE() AND TABLE_NAME = '" table "' AND COLUMN_NAME = '" column "'"
/* The log's key is still (tenant, id): keel_mysql_step_event_source has
 * not finished. */
#define KEEL_MYSQL_LACKS_SOURCE_KEY                                                      \
	"SELECT COUNT(*) = 0 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = "   \
	"DATABASE() AND TABLE_NAME = 'keel_events' AND INDEX_NAME = 'PRIMARY' AND "      \
	"COLUMN_NAME = 'source'"

static const struct keel_mysql_migration keel_mysql_to_3[] = {
    {"ALTER TABLE keel_facts DROP INDEX keel_facts_timeline, ADD INDEX "
     "keel_facts_from (tenant, subject, predicate, valid_from)",
     KEEL_MYSQL_HAS_INDEX("keel_facts", "keel_facts_timeline")},
    {"ALTER TABLE keel_relations DROP INDEX keel_relations_timeline, ADD INDEX "
     "keel_relations_from (tenant, subject, relation, object, valid_from)",
     KEEL_MYSQL_HAS_INDEX("keel_relations", "keel_relations_timeline")},
    {NULL, NULL},
};

static const struct keel_mysql_migration keel_mysql_to_4[] = {
    {"CREATE TABLE IF NOT EXISTS keel_writers ("
     "tenant VARBINARY(64) NOT NULL,"
     "writer BIGINT UNSIGNED NOT NULL,"
     "PRIMARY KEY (tenant)"
     ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
     NULL},
    {NULL, NULL},
};

static const struct keel_mysql_migration keel_mysql_to_5[] = {
    {"ALTER TABLE keel_events ADD COLUMN recorded_at BIGINT NOT NULL DEFAULT 0",
     KEEL_MYSQL_LACKS_COLUMN("keel_events", "recorded_at")},
    {"ALTER TABLE keel_facts DROP COLUMN valid_to, DROP COLUMN closed_by, ADD COLUMN "
     "recorded_at BIGINT NOT NULL DEFAULT 0, RENAME TO keel_fact_rows",
     KEEL_MYSQL_HAS_BASE_TABLE("keel_facts")},
    {"ALTER TABLE keel_relations DROP COLUMN valid_to, DROP COLUMN closed_by, ADD "
     "COLUMN recorded_at BIGINT NOT NULL DEFAULT 0, ADD INDEX keel_relations_object "
     "(tenant, object, subject, relation, valid_from), RENAME TO keel_relation_rows",
     KEEL_MYSQL_HAS_BASE_TABLE("keel_relations")},
    /* seq numbers the old rows in key order; ties between them cannot
     * arise (one row per entity) */
    {"ALTER TABLE keel_entities DROP PRIMARY KEY, ADD COLUMN seq BIGINT NOT NULL "
     "AUTO_INCREMENT FIRST, ADD COLUMN recorded_at BIGINT NOT NULL DEFAULT 0, ADD "
     "PRIMARY KEY (tenant, subject, seq), ADD UNIQUE KEY keel_entity_mentions_seq "
     "(seq), RENAME TO keel_entity_mentions",
     KEEL_MYSQL_HAS_BASE_TABLE("keel_entities")},
    {"DROP TABLE IF EXISTS keel_writers", NULL},
    {NULL, NULL},
};

/* keel_mysql_step_event_source: an event is (tenant, source, id)
 * (docs/store-mysql.md, "Events by source"). The log gains each event's
 * source from its logged envelope ("" when it has none that is a string),
 * the rows their asserting event's (found by the ids that were unique per
 * tenant until now: before the key changes, while (tenant, id) is its
 * prefix), and the log's key becomes (tenant, source, id). */
#define KEEL_MYSQL_FILL_SOURCE(table)                                                    \
	"UPDATE " table " AS r JOIN keel_events AS e ON e.tenant = r.tenant AND e.id = " \
	"r.asserted_by SET r.asserted_by_source = e.source WHERE e.source <> ''"

static const struct keel_mysql_migration keel_mysql_step_event_source[] = {
    {"ALTER TABLE keel_events ADD COLUMN source VARBINARY(1024) NOT NULL DEFAULT ''",
     KEEL_MYSQL_LACKS_COLUMN("keel_events", "source")},
    {"UPDATE keel_events SET source = JSON_UNQUOTE(JSON_EXTRACT(envelope, '$.source')) "
     "WHERE JSON_TYPE(JSON_EXTRACT(envelope, '$.source')) = 'STRING'",
     KEEL_MYSQL_LACKS_SOURCE_KEY},
    {"ALTER TABLE keel_fact_rows ADD COLUMN asserted_by_source VARBINARY(1024) NOT NULL "
     "DEFAULT ''",
     KEEL_MYSQL_LACKS_COLUMN("keel_fact_rows", "asserted_by_source")},
    {KEEL_MYSQL_FILL_SOURCE("keel_fact_rows"), KEEL_MYSQL_LACKS_SOURCE_KEY},
    {"ALTER TABLE keel_relation_rows ADD COLUMN asserted_by_source VARBINARY(1024) NOT "
     "NULL DEFAULT ''",
     KEEL_MYSQL_LACKS_COLUMN("keel_relation_rows", "asserted_by_source")},
    {KEEL_MYSQL_FILL_SOURCE("keel_relation_rows"), KEEL_MYSQL_LACKS_SOURCE_KEY},
    {"ALTER TABLE keel_events DROP PRIMARY KEY, ADD PRIMARY KEY (tenant, source, id)",
     KEEL_MYSQL_LACKS_SOURCE_KEY},
    {NULL, NULL},
};

/* keel forget's tombstones (KEEL_MYSQL_TOMBSTONES). */
static const struct keel_mysql_migration keel_mysql_step_tombstones[] = {
    {KEEL_MYSQL_TOMBSTONES, NULL},
    {NULL, NULL},
};

static const struct keel_mysql_migration keel_mysql_step_tenant_cartridges[] = {
    {KEEL_MYSQL_TENANT_CARTRIDGES, NULL},
    {NULL, NULL},
};

/* Finding things (docs/store-mysql.md, "Finding"): keel entities --kind
 * and keel search range over an index to the subject. kind and value are
 * BLOBs, indexed through generated columns of their first 255 bytes (a
 * BLOB prefix inside an index would leave the subjects after it out of
 * order); virtual, so they take no room in the rows. */
static const struct keel_mysql_migration keel_mysql_step_find[] = {
    {"ALTER TABLE keel_entity_mentions ADD COLUMN kind_key VARBINARY(255) AS "
     "(LEFT(kind, 255)) VIRTUAL, ADD INDEX keel_entity_mentions_kind "
     "(tenant, kind_key, subject)",
     KEEL_MYSQL_LACKS_COLUMN("keel_entity_mentions", "kind_key")},
    {"ALTER TABLE keel_fact_rows ADD COLUMN value_key VARBINARY(255) AS "
     "(LEFT(value, 255)) VIRTUAL, ADD INDEX keel_facts_value "
     "(tenant, predicate, value_key, subject)",
     KEEL_MYSQL_LACKS_COLUMN("keel_fact_rows", "value_key")},
    {NULL, NULL},
};

static const struct keel_mysql_migration keel_mysql_step_log_positions[] = {
    {KEEL_MYSQL_LOG_POSITIONS, NULL},
    {NULL, NULL},
};

/* The views show times that sort, and strings as text (above). Dropped
 * first: a view's columns change. */
static const struct keel_mysql_migration keel_mysql_step_views_sort[] = {
    {"DROP VIEW IF EXISTS keel_facts, keel_relations, keel_entities", NULL},
    {KEEL_MYSQL_VIEWS_SORT_FACTS, NULL},
    {KEEL_MYSQL_VIEWS_SORT_RELATIONS, NULL},
    {KEEL_MYSQL_VIEWS_SORT_ENTITIES, NULL},
    {NULL, NULL},
};

/* Each distinct cartridge once (KEEL_MYSQL_CARTRIDGES): the texts are
 * copied out under their hashes, then dropped from the tenants' rows.
 * Run again after an interruption, the copy is skipped once the columns
 * are gone (INSERT IGNORE: a hash copied already is the same cartridge). */
static const struct keel_mysql_migration keel_mysql_step_shared_cartridges[] = {
    {KEEL_MYSQL_CARTRIDGES, NULL},
    {"INSERT IGNORE INTO keel_cartridges (hash, name, version, text) SELECT hash, "
     "name, version, text FROM keel_tenant_cartridges ORDER BY tenant",
     KEEL_MYSQL_HAS_COLUMN("keel_tenant_cartridges", "text")},
    {"ALTER TABLE keel_tenant_cartridges DROP COLUMN name, DROP COLUMN version, "
     "DROP COLUMN text",
     KEEL_MYSQL_HAS_COLUMN("keel_tenant_cartridges", "text")},
    {NULL, NULL},
};

static const struct keel_mysql_migration
    *const keel_mysql_migrations[KEEL_MYSQL_SCHEMA_VERSION] = {
	NULL, NULL, keel_mysql_to_3, keel_mysql_to_4, keel_mysql_to_5,
	keel_mysql_step_event_source,
	keel_mysql_step_tombstones,
	keel_mysql_step_tenant_cartridges,
	keel_mysql_step_find,
	keel_mysql_step_log_positions,
	keel_mysql_step_views_sort,
	keel_mysql_step_shared_cartridges,
};

static int keel_mysql_version_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				  const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	*(int64_t *)ud = row[0] ? keel_mysql_i64(row[0], len[0]) : 0;
	return 0;
}

/* The views, created or replaced (they hold no data: running them again
 * costs nothing and repairs a half-finished migration). */
static int keel_mysql_create_views(struct keel_mysql_store *m)
{
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(keel_mysql_views); i++)
		rc = keel_mysql_runs(m, keel_mysql_views[i], "creating the views");
	return rc;
}

/* Today's policy: the schema is created or migrated when the store opens,
 * for reading or writing alike (a MySQL database is shared by its
 * clients, and a reader that left it old would leave it so for all). */
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
		if (rc == 0)
			rc = keel_mysql_create_views(m);
		keel_buf_reset(&m->sql);
		keel_buf_addf(&m->sql,
			      "INSERT IGNORE INTO keel_meta (name, value) VALUES "
			      "('schema_version', %d)",
			      KEEL_MYSQL_SCHEMA_VERSION);
		if (rc == 0)
			rc = keel_mysql_run(m, m->sql.data, m->sql.len,
					    "creating the schema");
		if (rc)
			goto fail;
		m->schema_was = 0;
		return 0;
	}
	m->schema_was = (int)version;
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
			int64_t run = 1;
			if (step[i].guard) {
				keel_buf_reset(&m->sql);
				keel_buf_adds(&m->sql, step[i].guard);
				rc = keel_mysql_select(m, "migrating the schema",
						       keel_mysql_version_row, &run);
			}
			if (rc == 0 && run)
				rc = keel_mysql_runs(m, step[i].sql,
						     "migrating the schema");
		}
		/* The views read the latest columns: made once the last
		 * step has added them. */
		if (rc == 0 && version + 1 == KEEL_MYSQL_SCHEMA_VERSION)
			rc = keel_mysql_create_views(m);
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

/* keel migrate: the version the store had when it opened (0: created by
 * this open) and the one it has now (migrations ran at open). */
int keel_mysql_schema_versions(struct keel_store *s, int *was, int *now)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	*was = m->schema_was;
	*now = KEEL_MYSQL_SCHEMA_VERSION;
	return 0;
}

/* For tests (internal.h). */
int keel_store_mysql_schema_version(void)
{
	return KEEL_MYSQL_SCHEMA_VERSION;
}

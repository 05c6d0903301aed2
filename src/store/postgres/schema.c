/*
 * schema.c - the PostgreSQL store's tables, indexes and views, created on
 * first use in one transaction (DDL is transactional in PostgreSQL: a
 * first use that fails leaves nothing behind), with the schema version in
 * keel_meta (docs/store-postgres.md, "Schema").
 *
 * Strings are text COLLATE "C": compared and ordered byte by byte, as
 * keel_str_cmp and the other stores do (Keel's strings are UTF-8 without
 * NUL, docs/cartridges.md, "Limits"), and readable as they are by any SQL
 * tool. Times are bigint microseconds; an event's hash is its 64 bits as
 * a bigint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

#define KEEL_PG_STR "text COLLATE \"C\" NOT NULL"
#define KEEL_PG_STR_NULL "text COLLATE \"C\""

/* Any number the other writers of the same database agree on: the first
 * use is serialised on it, so that two first users do not both create. */
#define KEEL_PG_SCHEMA_LOCK "7305085470523221356"

/*
 * Version 1. Rows are appended and never updated (docs/semantics.md):
 * every assertion one row of keel_fact_rows or keel_relation_rows, every
 * entity's mentions in one transaction one row of keel_entity_mentions.
 * seq comes from keel_seq in blocks (KEEL_PG_SEQ_BLOCK), the arrival
 * order. The timeline indexes end in (valid_from, seq), the order the
 * derivation walks, so a timeline is one range read with no sort. The
 * row tables have no primary key: nothing looks a row up by seq, and
 * every index is a cost each COPY pays.
 */
/* Version 2: keel consume's log positions (docs/log.md, "Fencing"), one
 * row a partition of a log projected into this store: the sequence
 * applied up to and the fencing token that wrote it. */
#define KEEL_PG_LOG_POSITIONS                                                            \
	"CREATE TABLE IF NOT EXISTS keel_log_positions ("                                \
	"log " KEEL_PG_STR ","                                                           \
	"part bigint NOT NULL,"                                                          \
	"seq bigint NOT NULL,"                                                           \
	"token bigint NOT NULL,"                                                         \
	"recorded_at bigint NOT NULL,"                                                   \
	"PRIMARY KEY (log, part))"

/* Version 4: each distinct cartridge once, under its content hash, which
 * determines its name, version and text; keel_tenant_cartridges maps a
 * tenant to it (until then each tenant's row held the whole text). */
#define KEEL_PG_CARTRIDGES                                                               \
	"CREATE TABLE keel_cartridges ("                                                 \
	"hash " KEEL_PG_STR " PRIMARY KEY,"                                              \
	"name " KEEL_PG_STR ","                                                          \
	"version " KEEL_PG_STR ","                                                       \
	"text " KEEL_PG_STR_NULL ")"

static const char *const keel_pg_tables[] = {
    "CREATE SEQUENCE keel_seq AS bigint INCREMENT BY 65536 START WITH 1",

    "CREATE TABLE keel_events ("
    "seq bigint NOT NULL,"
    "tenant " KEEL_PG_STR ","
    "source " KEEL_PG_STR ","
    "id " KEEL_PG_STR ","
    "type " KEEL_PG_STR ","
    "time bigint NOT NULL,"
    "hash bigint NOT NULL,"
    "envelope " KEEL_PG_STR ","
    "recorded_at bigint NOT NULL,"
    "CONSTRAINT keel_events_key PRIMARY KEY (tenant, source, id))",
    "CREATE UNIQUE INDEX keel_events_seq ON keel_events (seq)",

    "CREATE TABLE keel_entity_mentions ("
    "seq bigint NOT NULL,"
    "tenant " KEEL_PG_STR ","
    "subject " KEEL_PG_STR ","
    "kind " KEEL_PG_STR_NULL ","
    "kind_time bigint NOT NULL,"
    "first_seen bigint NOT NULL,"
    "last_seen bigint NOT NULL,"
    "recorded_at bigint NOT NULL)",
    "CREATE INDEX keel_entity_mentions_key ON keel_entity_mentions (tenant, subject, "
    "seq)",
    /* keel entities --kind: a kind is a name (at most 128 bytes) */
    "CREATE INDEX keel_entity_mentions_kind ON keel_entity_mentions "
    "(tenant, kind, subject) WHERE kind IS NOT NULL",

    "CREATE TABLE keel_fact_rows ("
    "seq bigint NOT NULL,"
    "tenant " KEEL_PG_STR ","
    "subject " KEEL_PG_STR ","
    "predicate " KEEL_PG_STR ","
    "value " KEEL_PG_STR_NULL ","
    "valid_from bigint NOT NULL,"
    "asserted_by_source " KEEL_PG_STR ","
    "asserted_by " KEEL_PG_STR ","
    "recorded_at bigint NOT NULL)",
    "CREATE INDEX keel_facts_from ON keel_fact_rows "
    "(tenant, subject, predicate, valid_from, seq)",
    /* keel search: a value may be 64 KiB, more than an index entry
     * takes, so the index holds its first 200 characters and the
     * search compares the whole value on the rows it finds */
    "CREATE INDEX keel_facts_value ON keel_fact_rows "
    "(tenant, predicate, left(value, 200), subject)",

    "CREATE TABLE keel_relation_rows ("
    "seq bigint NOT NULL,"
    "tenant " KEEL_PG_STR ","
    "subject " KEEL_PG_STR ","
    "relation " KEEL_PG_STR ","
    "object " KEEL_PG_STR ","
    "linked boolean NOT NULL,"
    "valid_from bigint NOT NULL,"
    "asserted_by_source " KEEL_PG_STR ","
    "asserted_by " KEEL_PG_STR ","
    "recorded_at bigint NOT NULL)",
    "CREATE INDEX keel_relations_from ON keel_relation_rows "
    "(tenant, subject, relation, object, valid_from, seq)",
    "CREATE INDEX keel_relations_object ON keel_relation_rows "
    "(tenant, object, subject, relation, valid_from, seq)",

    /* keel forget's tombstones: the subject only as the SHA-256 of its
     * bytes, lowercase hex */
    "CREATE TABLE keel_tombstones ("
    "tenant " KEEL_PG_STR ","
    "subject_sha256 " KEEL_PG_STR ","
    "forgotten_at bigint NOT NULL,"
    "forgotten_by " KEEL_PG_STR ","
    "events_redacted bigint NOT NULL,"
    "rows_removed bigint NOT NULL,"
    "PRIMARY KEY (tenant, subject_sha256))",

    /* Version 4 (KEEL_PG_CARTRIDGES): each tenant's recorded
     * cartridge by its hash, the columns in the migrated table's order */
    "CREATE TABLE keel_tenant_cartridges ("
    "tenant " KEEL_PG_STR " PRIMARY KEY,"
    "hash " KEEL_PG_STR ","
    "recorded_at bigint NOT NULL)",

    KEEL_PG_LOG_POSITIONS,
    KEEL_PG_CARTRIDGES,
};


/*
 * The views people read with SQL tools: the rows keel dump prints, with
 * the columns and rows of the MySQL and SQLite stores' views. Each time
 * twice: X, microseconds since the epoch, and X_text, RFC 3339 of fixed
 * width (six fraction digits, always, and Z), so that text compares as
 * the time does; computed on a timestamp without time zone, so the
 * session's TimeZone does not move it, whole seconds and microseconds
 * apart so that no float rounds a microsecond. A fact's value twice:
 * value, its JSON text, and value_text, the string itself (escapes
 * undone) when it is a JSON string without U+0000 (text cannot hold it:
 * the string whose JSON text, once each escaped backslash is taken out,
 * still holds the escape \u0000), NULL otherwise. Text columns compare
 * bytewise (COLLATE "C"), as the tables'. An open row's valid_to and
 * closed_by are NULL. A row ends where the next assertion of its
 * timeline, in (valid_from, seq) order, begins, and is closed by it.
 * Each name is followed by " WITH (security_invoker = true)" where the
 * server has it (15+): whoever may read the tables may read the views,
 * and nobody else.
 */
#define KEEL_PG_TEXT(x)                                                                  \
	"to_char(timestamp '1970-01-01' + (" x ") / 1000000 * interval '1 second' + "   \
	"(" x ") % 1000000 * interval '1 microsecond', "                                 \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') COLLATE \"C\""
#define KEEL_PG_VALUE_TEXT                                                               \
	"CASE WHEN left(value, 1) = '\"' AND strpos(replace(value, E'\\\\\\\\', ''), "   \
	"E'\\\\u0000') = 0 THEN (value::json #>> '{}') COLLATE \"C\" END"
#define KEEL_PG_ROW_TIMES                                                                \
	"valid_from, " KEEL_PG_TEXT("valid_from") " AS valid_from_text, "                \
	"LEAD(valid_from) OVER w AS valid_to, " KEEL_PG_TEXT("LEAD(valid_from) OVER w")  \
	" AS valid_to_text, asserted_by_source, asserted_by, "                           \
	"LEAD(asserted_by_source) OVER w AS closed_by_source, "                          \
	"LEAD(asserted_by) OVER w AS closed_by, recorded_at, "                           \
	KEEL_PG_TEXT("recorded_at") " AS recorded_at_text"

/* The views of version 3 (keel_pg_step_views_sort): never edited once
 * released, since the step runs them on stores of version 2; a later
 * change of the views is a new list and a new step. Today they are also
 * the latest views, the ones a new store gets. */
static const char *const keel_pg_views_sort[] = {
    "keel_facts AS "
    "SELECT seq, tenant, subject, predicate, value, " KEEL_PG_VALUE_TEXT
    " AS value_text, " KEEL_PG_ROW_TIMES " FROM keel_fact_rows "
    "WINDOW w AS (PARTITION BY tenant, subject, predicate ORDER BY valid_from, seq)",

    "keel_relations AS "
    "SELECT seq, tenant, subject, relation, object, linked, " KEEL_PG_ROW_TIMES
    " FROM keel_relation_rows "
    "WINDOW w AS (PARTITION BY tenant, subject, relation, object ORDER BY "
    "valid_from, seq)",

    /* kind: of the mention with the least kind_time that gives one, the
     * later mention on a tie (docs/semantics.md, "Entities") */
    "keel_entities AS "
    "SELECT m.tenant, m.subject, "
    "(SELECT k.kind FROM keel_entity_mentions k WHERE k.tenant = m.tenant AND "
    "k.subject = m.subject AND k.kind IS NOT NULL ORDER BY k.kind_time, k.seq DESC "
    "LIMIT 1) AS kind, "
    "MIN(m.first_seen) AS first_seen, " KEEL_PG_TEXT("MIN(m.first_seen)")
    " AS first_seen_text, MAX(m.last_seen) AS last_seen, "
    KEEL_PG_TEXT("MAX(m.last_seen)") " AS last_seen_text, "
    "MAX(m.recorded_at) AS recorded_at, " KEEL_PG_TEXT("MAX(m.recorded_at)")
    " AS recorded_at_text FROM keel_entity_mentions m GROUP BY m.tenant, m.subject",
};

/* The version keel_meta holds, -1 when the store has no keel_meta. The
 * catalog is read as a table, with the statement's snapshot: to_regclass
 * would use a catalog snapshot that an advisory lock does not renew, and
 * miss the tables another first user has just committed. */
static int keel_pg_read_version(struct keel_pg_store *g, int64_t *version)
{
	*version = -1;
	PGresult *r = NULL;
	int rc =
	    keel_pg_exec(g,
			 "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE "
			 "schemaname = current_schema() AND tablename = 'keel_meta')",
			 NULL, "reading the schema version", &r);
	if (rc)
		return rc;
	bool has = keel_pg_bool(r, 0, 0);
	PQclear(r);
	if (!has)
		return 0;
	rc = keel_pg_exec(g, "SELECT value FROM keel_meta WHERE name = 'schema_version'",
			  NULL, "reading the schema version", &r);
	if (rc)
		return rc;
	if (PQntuples(r) == 1)
		*version = keel_pg_i64(r, 0, 0);
	else
		*version = 0; /* keel_meta without a version: refused below */
	PQclear(r);
	return 0;
}

/* Creates or replaces the n views of defs (each "name AS SELECT ..."). */
static int keel_pg_create_views(struct keel_pg_store *g, const char *const *defs, size_t n,
				const char *what)
{
	int rc = 0;
	const char *invoker =
	    PQserverVersion(g->conn) >= 150000 ? " WITH (security_invoker = true)" : "";
	for (size_t i = 0; rc == 0 && i < n; i++) {
		keel_buf_reset(&g->sql);
		const char *def = defs[i];
		size_t name = strcspn(def, " ");
		keel_buf_adds(&g->sql, "CREATE OR REPLACE VIEW ");
		keel_buf_add(&g->sql, def, name);
		keel_buf_adds(&g->sql, invoker);
		keel_buf_adds(&g->sql, def + name);
		rc = keel_pg_command(g, g->sql.data, what);
	}
	return rc;
}

static int keel_pg_create(struct keel_pg_store *g)
{
	int rc = keel_pg_command(
	    g,
	    "CREATE TABLE keel_meta (name text COLLATE \"C\" PRIMARY KEY, "
	    "value bigint NOT NULL)",
	    "creating the schema");
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(keel_pg_tables); i++)
		rc = keel_pg_command(g, keel_pg_tables[i], "creating the schema");
	if (rc == 0)
		rc = keel_pg_create_views(g, keel_pg_views_sort,
					  KEEL_ARRAY_LEN(keel_pg_views_sort), "creating the views");
	keel_buf_reset(&g->sql);
	keel_buf_addf(&g->sql,
		      "INSERT INTO keel_meta (name, value) VALUES ('schema_version', %d)",
		      KEEL_PG_SCHEMA_VERSION);
	if (rc == 0)
		rc = keel_pg_command(g, g->sql.data, "creating the schema");
	return rc;
}

/* The steps from an older version: keel_pg_migrations[v - 1] takes a
 * store from version v to v + 1 (a step is never edited once released: a
 * change is a new step). Each runs inside the migration's transaction. */

/* 1 -> 2: keel consume's log positions. */
static int keel_pg_step_log_positions(struct keel_pg_store *g)
{
	return keel_pg_command(g, KEEL_PG_LOG_POSITIONS, "migrating the schema");
}

/* The views show times that sort, and strings as text (keel_pg_views_sort).
 * Dropped first: CREATE OR REPLACE VIEW cannot change a view's columns. */
static int keel_pg_step_views_sort(struct keel_pg_store *g)
{
	int rc = keel_pg_command(g,
				 "DROP VIEW IF EXISTS keel_facts, keel_relations, "
				 "keel_entities",
				 "migrating the schema");
	if (rc == 0)
		rc = keel_pg_create_views(g, keel_pg_views_sort,
					  KEEL_ARRAY_LEN(keel_pg_views_sort), "migrating the views");
	return rc;
}

/* 3 -> 4: each distinct cartridge once (KEEL_PG_CARTRIDGES); the texts
 * are copied out under their hashes, then dropped from the tenants'
 * rows. */
static int keel_pg_step_shared_cartridges(struct keel_pg_store *g)
{
	/* (each text in parentheses: one statement, not two run together) */
	static const char *const sql[] = {
	    KEEL_PG_CARTRIDGES,
	    ("INSERT INTO keel_cartridges (hash, name, version, text) SELECT DISTINCT ON "
	     "(hash) hash, name, version, text FROM keel_tenant_cartridges ORDER BY hash, "
	     "tenant"),
	    ("ALTER TABLE keel_tenant_cartridges DROP COLUMN name, DROP COLUMN version, "
	     "DROP COLUMN text"),
	};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(sql); i++)
		rc = keel_pg_command(g, sql[i], "migrating the schema");
	return rc;
}

static int (*const keel_pg_migrations[])(struct keel_pg_store *) = {
    keel_pg_step_log_positions,
    keel_pg_step_views_sort,
    keel_pg_step_shared_cartridges,
};
_Static_assert(KEEL_ARRAY_LEN(keel_pg_migrations) == KEEL_PG_SCHEMA_VERSION - 1,
	       "a step for each version after the first");

/* Today's policy: the schema is created when the store opens, for reading
 * or writing alike (a database is shared by its clients). The check and
 * the creation are one transaction under an advisory lock, so two first
 * users create it once. */
int keel_pg_schema(struct keel_pg_store *g, struct keel_buf *err)
{
	int64_t version = -1;
	int rc = keel_pg_read_version(g, &version);
	if (rc == 0 && version < 0) {
		rc = keel_pg_command(g, "BEGIN", "creating the schema");
		if (rc == 0)
			rc = keel_pg_command(
			    g, "SELECT pg_advisory_xact_lock(" KEEL_PG_SCHEMA_LOCK ")",
			    "creating the schema");
		if (rc == 0)
			rc = keel_pg_read_version(g, &version);
		if (rc == 0 && version < 0)
			rc = keel_pg_create(g);
		if (rc == 0)
			rc = keel_pg_command(g, "COMMIT", "creating the schema");
		else if (!g->broken)
			keel_pg_command(g, "ROLLBACK", "creating the schema");
		if (rc == 0 && version < 0) {
			g->schema_was = 0;
			return 0;
		}
	}
	if (rc) {
		keel_buf_addf(err, "store \"%s\": %s", g->url.shown.data,
			      g->base.errmsg.data);
		return rc;
	}
	g->schema_was = (int)version;
	if (version > KEEL_PG_SCHEMA_VERSION) {
		keel_buf_addf(err,
			      "store \"%s\": schema version %lld is newer than this keel "
			      "supports (%d): upgrade keel",
			      g->url.shown.data, (long long)version,
			      KEEL_PG_SCHEMA_VERSION);
		return KEEL_ESCHEMA;
	}
	if (version < 1) {
		keel_buf_addf(err,
			      "store \"%s\": keel_meta holds no valid schema version",
			      g->url.shown.data);
		return KEEL_ESCHEMA;
	}
	/* The steps from an older version, in one transaction (DDL is
	 * transactional here) under the creators' lock: one migrator at a
	 * time, and the version read again under it, so that a second one
	 * runs only what the first left. */
	if (version == KEEL_PG_SCHEMA_VERSION)
		return 0;
	rc = keel_pg_command(g, "BEGIN", "migrating the schema");
	if (rc == 0)
		rc = keel_pg_command(g, "SELECT pg_advisory_xact_lock(" KEEL_PG_SCHEMA_LOCK ")",
				     "migrating the schema");
	if (rc == 0)
		rc = keel_pg_read_version(g, &version);
	for (; rc == 0 && version >= 1 && version < KEEL_PG_SCHEMA_VERSION; version++)
		rc = keel_pg_migrations[version - 1](g);
	keel_buf_reset(&g->sql);
	keel_buf_addf(&g->sql,
		      "UPDATE keel_meta SET value = %d WHERE name = 'schema_version' AND "
		      "value < %d",
		      KEEL_PG_SCHEMA_VERSION, KEEL_PG_SCHEMA_VERSION);
	if (rc == 0)
		rc = keel_pg_command(g, g->sql.data, "migrating the schema");
	if (rc == 0)
		rc = keel_pg_command(g, "COMMIT", "migrating the schema");
	else if (!g->broken)
		keel_pg_command(g, "ROLLBACK", "migrating the schema");
	if (rc) {
		keel_buf_addf(err, "store \"%s\": %s", g->url.shown.data,
			      g->base.errmsg.data);
		return rc;
	}
	return 0;
}

/* keel migrate: the version the store had when it opened (0: created by
 * this open) and the one it has now. */
int keel_pg_schema_versions(struct keel_store *s, int *was, int *now)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	*was = g->schema_was;
	*now = KEEL_PG_SCHEMA_VERSION;
	return 0;
}

int keel_store_postgres_schema_version(void)
{
	return KEEL_PG_SCHEMA_VERSION;
}

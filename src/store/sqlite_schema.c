/*
 * sqlite_schema.c - the SQLite store's schema: the list of migration steps
 * (version i to i + 1), and creating, checking and migrating a file.
 */
#include "sqlite_store.h"

/* ----------------------------------------------------------- the schema */

/*
 * Migration i takes a database from schema version i to i + 1; version 0
 * is an empty database. The schema version is the number of steps. A step
 * is never edited once released: a change is a new step.
 */
static const char *const keel_sqlite_migrations[] = {
    /* 0 -> 1: the first schema. Strings are TEXT in the default BINARY
     * collation, so ORDER BY sorts bytewise as the dump requires. */
    "CREATE TABLE meta (\n"
    "	key TEXT PRIMARY KEY,\n"
    "	value\n"
    ");\n"
    "CREATE TABLE events (\n"
    "	seq INTEGER PRIMARY KEY,\n"
    "	tenant TEXT NOT NULL,\n"
    "	id TEXT NOT NULL,\n"
    "	type TEXT NOT NULL,\n"
    "	time INTEGER NOT NULL,\n"
    "	hash INTEGER NOT NULL,\n"
    "	envelope TEXT NOT NULL\n"
    ");\n"
    /* The ids of the log, narrow and clustered on (tenant, id): the
     * seen-ids lookup of every event reads only these pages, not the
     * table pages that also hold the envelopes. It takes the place of a
     * UNIQUE (tenant, id) index on events (same number of b-trees). */
    "CREATE TABLE event_ids (\n"
    "	tenant TEXT NOT NULL,\n"
    "	id TEXT NOT NULL,\n"
    "	hash INTEGER NOT NULL,\n"
    "	seq INTEGER NOT NULL,\n"
    "	PRIMARY KEY (tenant, id)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE entities (\n"
    "	tenant TEXT NOT NULL,\n"
    "	subject TEXT NOT NULL,\n"
    "	kind TEXT,\n"
    "	kind_time INTEGER NOT NULL,\n"
    "	first_seen INTEGER NOT NULL,\n"
    "	last_seen INTEGER NOT NULL,\n"
    "	PRIMARY KEY (tenant, subject)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE facts (\n"
    "	seq INTEGER PRIMARY KEY,\n"
    "	tenant TEXT NOT NULL,\n"
    "	subject TEXT NOT NULL,\n"
    "	predicate TEXT NOT NULL,\n"
    "	value TEXT,\n"
    "	valid_from INTEGER NOT NULL,\n"
    "	valid_to INTEGER NOT NULL,\n"
    "	asserted_by TEXT NOT NULL,\n"
    "	closed_by TEXT\n"
    ");\n"
    "CREATE INDEX facts_key ON facts (tenant, subject, predicate, valid_from);\n"
    "CREATE TABLE relations (\n"
    "	seq INTEGER PRIMARY KEY,\n"
    "	tenant TEXT NOT NULL,\n"
    "	subject TEXT NOT NULL,\n"
    "	relation TEXT NOT NULL,\n"
    "	object TEXT NOT NULL,\n"
    "	linked INTEGER NOT NULL,\n"
    "	valid_from INTEGER NOT NULL,\n"
    "	valid_to INTEGER NOT NULL,\n"
    "	asserted_by TEXT NOT NULL,\n"
    "	closed_by TEXT\n"
    ");\n"
    "CREATE INDEX relations_key ON relations "
    "(tenant, subject, relation, object, valid_from);\n",
};
#define KEEL_SQLITE_SCHEMA_VERSION ((int64_t)KEEL_ARRAY_LEN(keel_sqlite_migrations))

/* -------------------------------------------------------------- schema */

/* Reads the schema version: 0 for an empty database. */
static int keel_sqlite_read_version(struct keel_sqlite_store *s, int64_t *version)
{
	sqlite3_stmt *st;
	static const char tables[] =
	    "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name";
	int rc = keel_sqlite_prepare(s, tables, sizeof tables - 1, &st);
	if (rc)
		return rc;
	s->base.statements++;
	bool meta = false;
	char *other = NULL;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		if (name && !strcmp(name, "meta"))
			meta = true;
		else if (name && !other)
			other = keel_xstrdup(name);
	}
	if (rc != SQLITE_DONE) {
		rc = keel_sqlite_fail(s);
		sqlite3_finalize(st);
		free(other);
		return rc;
	}
	sqlite3_finalize(st);
	if (!meta) {
		*version = 0;
		if (other) {
			rc =
			    keel_store_fail(&s->base, KEEL_ESCHEMA,
					    "store \"%s\": not a keel database (it has a "
					    "table \"%s\" and no meta table)",
					    s->base.url, other);
			free(other);
			return rc;
		}
		return 0;
	}
	free(other);

	static const char get[] = "SELECT value FROM meta WHERE key = 'schema_version'";
	if ((rc = keel_sqlite_prepare(s, get, sizeof get - 1, &st)))
		return rc;
	s->base.statements++;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER) {
		*version = sqlite3_column_int64(st, 0);
		rc = 0;
	} else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
		rc = keel_store_fail(&s->base, KEEL_ESCHEMA,
				     "store \"%s\": the meta table has no integer "
				     "schema_version",
				     s->base.url);
	} else {
		rc = keel_sqlite_fail(s);
	}
	sqlite3_finalize(st);
	return rc;
}

static int keel_sqlite_newer(struct keel_sqlite_store *s, int64_t version)
{
	return keel_store_fail(
	    &s->base, KEEL_ESCHEMA,
	    "store \"%s\": schema version %lld is newer than this keel "
	    "supports (%lld)",
	    s->base.url, (long long)version, (long long)KEEL_SQLITE_SCHEMA_VERSION);
}

int keel_sqlite_exec(struct keel_sqlite_store *s, const char *sql)
{
	s->base.statements++;
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return keel_sqlite_fail(s);
	return 0;
}

/* Brings the schema to the current version, or refuses a newer one. The
 * version is read again under the write lock, so two processes opening a
 * new file at once create the schema once. */
int keel_sqlite_migrate(struct keel_sqlite_store *s)
{
	int64_t version;
	int rc = keel_sqlite_read_version(s, &version);
	if (rc)
		return rc;
	if (version == KEEL_SQLITE_SCHEMA_VERSION)
		return 0;
	if (version > KEEL_SQLITE_SCHEMA_VERSION || version < 0)
		return keel_sqlite_newer(s, version);
	if ((rc = keel_sqlite_exec(s, "BEGIN IMMEDIATE")))
		return rc;
	if ((rc = keel_sqlite_read_version(s, &version)))
		goto fail;
	if (version > KEEL_SQLITE_SCHEMA_VERSION || version < 0) {
		rc = keel_sqlite_newer(s, version);
		goto fail;
	}
	for (; version < KEEL_SQLITE_SCHEMA_VERSION; version++)
		if ((rc = keel_sqlite_exec(s, keel_sqlite_migrations[version])))
			goto fail;
	sqlite3_stmt *st;
	static const char set[] =
	    "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
	    "ON CONFLICT (key) DO UPDATE SET value = excluded.value";
	if ((rc = keel_sqlite_prepare(s, set, sizeof set - 1, &st)))
		goto fail;
	keel_sqlite_bind_i64(s, st, 1, KEEL_SQLITE_SCHEMA_VERSION);
	rc = keel_sqlite_run(s, st);
	sqlite3_finalize(st);
	if (rc)
		goto fail;
	return keel_sqlite_exec(s, "COMMIT");
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* For tests (sqlite_internal.h). */
int keel_store_sqlite_schema_version(void)
{
	return (int)KEEL_SQLITE_SCHEMA_VERSION;
}

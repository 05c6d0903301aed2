/*
 * sqlite.c - the SQLite store (SPEC sections 6 and 7, design A of the note).
 *
 * Organisation:
 *  - open: URL, pragmas (WAL, synchronous=NORMAL, busy timeout), and the
 *    versioned schema kept in the meta table, created or migrated by a list
 *    of steps (keel_sqlite_migrations);
 *  - statements: every statement is prepared once, on first use, with
 *    SQLITE_PREPARE_PERSISTENT and reused for the life of the store; the
 *    SQL text is built only then, never per batch;
 *  - batch path: seen_ids, prefetch and closures run "padded" statements
 *    that join a VALUES list of up to 1000 keys against a table, one
 *    statement per size on a ladder of sizes, the unused tail of the list
 *    bound to NULL (a NULL key matches nothing and costs no seek); new rows,
 *    events and entities go in with multi-row INSERTs of power-of-two sizes;
 *  - reading: scans with ORDER BY in SQL, one cached statement per record
 *    type and combination of filters.
 *
 * Why joins and not row-constructor IN: SQLite 3.40 plans
 * "(a, b, c) IN (VALUES ...)" as a full SCAN of the table (the row-value IN
 * is only used with an index for a single column), while "k CROSS JOIN t ON
 * t.a = k.a AND ..." seeks the index once per key. The join also returns
 * the key's slot, so rows map back to overlay objects without hashing.
 *
 * Why the key index ends in valid_from and not valid_to: closing a row then
 * rewrites only the table row, not an index entry, which measured 10-30%
 * faster write-back (docs/store-sqlite.md). Placement keeps a timeline's
 * non-empty rows tiling time from its first row on, so the open row is the
 * last non-empty row by valid_from and the row containing t is the last
 * non-empty row starting at or before t.
 *
 * A store handle is used by one thread at a time (its transaction state and
 * message are per handle), so the connection is opened without SQLite's
 * own mutex.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "../store.h"
#include "../timeline.h"
#include "open_rows.h"
#include "sqlite_internal.h"

/* ------------------------------------------------------------ constants */

#define KEEL_SQLITE_BUSY_MS 5000
/* Page cache per connection, in KiB (negative cache_size): the hot index
 * leaves of a large store, within the 64 MiB peak RSS of a 1M-event ingest. */
#define KEEL_SQLITE_CACHE_KIB 32768
/* Timelines whose last row the store remembers between batches (about
 * 200 bytes each), and for how many batches one may go unused. */
#define KEEL_SQLITE_OPEN_ROWS 16384
#define KEEL_SQLITE_OPEN_ROWS_AGE 32
/* WAL pages before an automatic checkpoint: fewer, larger checkpoints
 * write a page touched by many batches once (docs/store-sqlite.md). */
#define KEEL_SQLITE_AUTOCHECKPOINT 8192

/* Keys per padded statement: the smallest size that holds what is left is
 * used, the largest for full chunks. At most 1000 keys per statement. */
static const unsigned keel_sqlite_ladder[] = {1,  2,   4,   8,	 16,  32,
					      64, 128, 256, 512, 1000};
#define KEEL_SQLITE_NLADDER KEEL_ARRAY_LEN(keel_sqlite_ladder)
#define KEEL_SQLITE_CHUNK 1000

/* Rows per multi-row INSERT: powers of two up to this. */
#define KEEL_SQLITE_INSERT_LOG2 7
#define KEEL_SQLITE_INSERT_MAX (1u << KEEL_SQLITE_INSERT_LOG2)

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

/* ------------------------------------------------------ padded queries */

enum keel_sqlite_padded {
	KEEL_SQ_SEEN,
	KEEL_SQ_ENTITY,
	KEEL_SQ_FACT_OPEN,
	KEEL_SQ_REL_OPEN,
	KEEL_SQ_FACT_LATE,
	KEEL_SQ_REL_LATE,
	KEEL_SQ_FACT_CLOSE,
	KEEL_SQ_REL_CLOSE,
	KEEL_SQ_NPADDED
};

/* A statement over a VALUES list: head, then the tuples, then tail. A
 * tuple with slot=true starts with its position (a literal) so that result
 * rows say which key they belong to. */
struct keel_sqlite_padded_def {
	const char *head;
	unsigned nparams; /* '?' per tuple */
	bool slot;
	const char *tail;
};

/*
 * The open row of timeline k: its last row by (valid_from, seq). Among rows
 * with equal valid_from the non-empty one has the highest seq (an emptied
 * row [t, t) was inserted before the row that replaced it, and a dump lists
 * it first), so the last entry of the key in the index is the open row and
 * the lookup reads the index alone.
 */
#define KEEL_SQ_LAST_ROW(table, key)                                                     \
	"(SELECT seq FROM " table " WHERE " key                                          \
	" ORDER BY valid_from DESC, seq DESC LIMIT 1)"
/* The row containing k.a (the last one starting at or before it, by the
 * same rule), or else the first non-empty row after it. */
#define KEEL_SQ_LATE_ROW(table, key)                                                     \
	"coalesce((SELECT seq FROM " table " WHERE " key " AND valid_from <= k.a "       \
	"ORDER BY valid_from DESC, seq DESC LIMIT 1), "                                  \
	"(SELECT seq FROM " table " WHERE " key " AND valid_from > k.a "                 \
	"AND valid_from < valid_to ORDER BY valid_from LIMIT 1))"
#define KEEL_SQ_FACT_KEY "tenant = k.t AND subject = k.s AND predicate = k.p"
#define KEEL_SQ_REL_KEY                                                                  \
	"tenant = k.t AND subject = k.s AND relation = k.r AND object = k.o"
#define KEEL_SQ_FACT_COLS                                                                \
	"SELECT k.i, f.seq, f.value, f.valid_from, f.valid_to, f.asserted_by, "          \
	"f.closed_by FROM k CROSS JOIN facts AS f ON f.seq = "
#define KEEL_SQ_REL_COLS                                                                 \
	"SELECT k.i, r.seq, r.linked, r.valid_from, r.valid_to, r.asserted_by, "         \
	"r.closed_by FROM k CROSS JOIN relations AS r ON r.seq = "

static const struct keel_sqlite_padded_def keel_sqlite_padded_defs[] = {
    [KEEL_SQ_SEEN] = {"WITH k(i, t, d) AS (VALUES ", 2, true,
		      ") SELECT k.i, e.hash FROM k CROSS JOIN event_ids AS e "
		      "ON e.tenant = k.t AND e.id = k.d"},
    [KEEL_SQ_ENTITY] = {"WITH k(i, t, s) AS (VALUES ", 2, true,
			") SELECT k.i, e.kind, e.kind_time, e.first_seen, "
			"e.last_seen FROM k CROSS JOIN entities AS e "
			"ON e.tenant = k.t AND e.subject = k.s"},
    [KEEL_SQ_FACT_OPEN] = {"WITH k(i, t, s, p) AS (VALUES ", 3, true,
			   ") " KEEL_SQ_FACT_COLS KEEL_SQ_LAST_ROW("facts",
								   KEEL_SQ_FACT_KEY)},
    [KEEL_SQ_REL_OPEN] = {"WITH k(i, t, s, r, o) AS (VALUES ", 4, true,
			  ") " KEEL_SQ_REL_COLS KEEL_SQ_LAST_ROW("relations",
								 KEEL_SQ_REL_KEY)},
    [KEEL_SQ_FACT_LATE] = {"WITH k(i, t, s, p, a) AS (VALUES ", 4, true,
			   ") " KEEL_SQ_FACT_COLS KEEL_SQ_LATE_ROW("facts",
								   KEEL_SQ_FACT_KEY)},
    [KEEL_SQ_REL_LATE] = {"WITH k(i, t, s, r, o, a) AS (VALUES ", 5, true,
			  ") " KEEL_SQ_REL_COLS KEEL_SQ_LATE_ROW("relations",
								 KEEL_SQ_REL_KEY)},
    /* UPDATE ... FROM a VALUES list is SQLite's form of the note's
     * "UPDATE ... CASE": one statement per chunk, but each row is found by
     * a rowid seek where a CASE with n arms costs n comparisons per row. */
    [KEEL_SQ_FACT_CLOSE] = {"WITH v(q, vt, cb) AS (VALUES ", 3, false,
			    ") UPDATE facts SET valid_to = v.vt, closed_by = v.cb "
			    "FROM v WHERE facts.seq = v.q"},
    [KEEL_SQ_REL_CLOSE] = {"WITH v(q, vt, cb) AS (VALUES ", 3, false,
			   ") UPDATE relations SET valid_to = v.vt, closed_by = v.cb "
			   "FROM v WHERE relations.seq = v.q"},
};

/* ------------------------------------------------------ multi-row inserts */

enum keel_sqlite_insert {
	KEEL_SI_FACT,
	KEEL_SI_REL,
	KEEL_SI_EVENT,
	KEEL_SI_EVENT_ID,
	KEEL_SI_ENTITY,
	KEEL_SI_N
};

static const struct keel_sqlite_padded_def keel_sqlite_insert_defs[] = {
    [KEEL_SI_FACT] = {"INSERT INTO facts (seq, tenant, subject, predicate, value, "
		      "valid_from, valid_to, asserted_by, closed_by) VALUES ",
		      9, false, ""},
    [KEEL_SI_REL] = {"INSERT INTO relations (seq, tenant, subject, relation, object, "
		     "linked, valid_from, valid_to, asserted_by, closed_by) VALUES ",
		     10, false, ""},
    [KEEL_SI_EVENT] = {"INSERT INTO events (seq, tenant, id, type, time, hash, "
		       "envelope) VALUES ",
		       7, false, ""},
    [KEEL_SI_EVENT_ID] = {"INSERT INTO event_ids (tenant, id, hash, seq) VALUES ", 4,
			  false, ""},
    [KEEL_SI_ENTITY] = {"INSERT INTO entities (tenant, subject, kind, kind_time, "
			"first_seen, last_seen) VALUES ",
			6, false,
			" ON CONFLICT (tenant, subject) DO UPDATE SET "
			"kind = excluded.kind, kind_time = excluded.kind_time, "
			"first_seen = excluded.first_seen, "
			"last_seen = excluded.last_seen"},
};

/* ----------------------------------------------------------------- scans */

/* Filters a scan statement was built for. */
enum {
	KEEL_SF_SUBJECT = 1u << 0,
	KEEL_SF_NAME = 1u << 1,
	KEEL_SF_OBJECT = 1u << 2,
	KEEL_SF_AT = 1u << 3,
	KEEL_SF_EVENT_ID = 1u << 4,
	KEEL_SF_N = 1u << 5,
};

/* Parameters of every scan statement, by number. */
enum {
	KEEL_SP_TENANT = 1,
	KEEL_SP_SUBJECT,
	KEEL_SP_NAME,
	KEEL_SP_OBJECT,
	KEEL_SP_AT,
	KEEL_SP_EVENT_ID
};

/* ------------------------------------------------------------- the store */

/* One key of a padded query: an overlay object and, for late lookups, the
 * time to look up. */
struct keel_sqlite_key {
	void *ptr;
	int64_t at;
};

struct keel_sqlite_store {
	struct keel_store base;
	sqlite3 *db;
	char *url;  /* as given, for schema messages */
	char *path; /* for "sqlite \"PATH\": ..." messages */
	sqlite3_stmt *padded[KEEL_SQ_NPADDED][KEEL_SQLITE_NLADDER];
	sqlite3_stmt *insert[KEEL_SI_N][KEEL_SQLITE_INSERT_LOG2 + 1];
	sqlite3_stmt *scan[4][KEEL_SF_N];
	bool scan_busy[4][KEEL_SF_N];
	sqlite3_stmt *begin, *commit, *rollback, *max_seq, *counts, *tenants;
	/* The last rows of recently touched timelines (open_rows.h), valid
	 * while the file's data version is the one this connection's last
	 * commit left. */
	struct keel_open_rows open_rows;
	unsigned data_version;
	int bind_rc; /* first bind failure since the last statement ran */
	int64_t fact_seq, rel_seq, event_seq; /* last seq used, per table */
	/* scratch reused by every batch */
	struct keel_sqlite_key *keys;
	size_t nkeys, keys_cap;
	int64_t *times;
	size_t times_cap;
	struct keel_ptrvec rows;
};

static struct keel_sqlite_store *keel_sqlite_downcast(struct keel_store *s)
{
	if (s->ops != &keel_store_sqlite_ops)
		abort();
	return (struct keel_sqlite_store *)s;
}

/* Sets the store's message from the connection's last error. */
static int keel_sqlite_fail(struct keel_sqlite_store *s)
{
	return keel_store_fail(&s->base, KEEL_ESTORE, "sqlite \"%s\": %s", s->path,
			       sqlite3_errmsg(s->db));
}

/* --------------------------------------------------------- statements */

static int keel_sqlite_prepare(struct keel_sqlite_store *s, const char *sql, size_t len,
			       sqlite3_stmt **out)
{
	if (sqlite3_prepare_v3(s->db, sql, (int)len, SQLITE_PREPARE_PERSISTENT, out,
			       NULL) != SQLITE_OK) {
		*out = NULL;
		return keel_sqlite_fail(s);
	}
	return 0;
}

/* Builds head, n tuples of def->nparams parameters, tail. */
static void keel_sqlite_build(struct keel_buf *b,
			      const struct keel_sqlite_padded_def *def, unsigned n)
{
	keel_buf_adds(b, def->head);
	for (unsigned i = 0; i < n; i++) {
		if (i)
			keel_buf_addc(b, ',');
		keel_buf_addc(b, '(');
		if (def->slot)
			keel_buf_addf(b, "%u,", i);
		for (unsigned k = 0; k < def->nparams; k++)
			keel_buf_adds(b, k ? ",?" : "?");
		keel_buf_addc(b, ')');
	}
	keel_buf_adds(b, def->tail);
}

static int keel_sqlite_prepare_built(struct keel_sqlite_store *s,
				     const struct keel_sqlite_padded_def *def, unsigned n,
				     sqlite3_stmt **out)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_sqlite_build(&b, def, n);
	int rc = keel_sqlite_prepare(s, b.data, b.len, out);
	keel_buf_free(&b);
	return rc;
}

static int keel_sqlite_padded_stmt(struct keel_sqlite_store *s, enum keel_sqlite_padded q,
				   size_t rung, sqlite3_stmt **out)
{
	if (!s->padded[q][rung]) {
		int rc = keel_sqlite_prepare_built(s, &keel_sqlite_padded_defs[q],
						   keel_sqlite_ladder[rung],
						   &s->padded[q][rung]);
		if (rc)
			return rc;
	}
	*out = s->padded[q][rung];
	return 0;
}

static int keel_sqlite_insert_stmt(struct keel_sqlite_store *s, enum keel_sqlite_insert t,
				   unsigned log2, sqlite3_stmt **out)
{
	if (!s->insert[t][log2]) {
		int rc = keel_sqlite_prepare_built(s, &keel_sqlite_insert_defs[t],
						   1u << log2, &s->insert[t][log2]);
		if (rc)
			return rc;
	}
	*out = s->insert[t][log2];
	return 0;
}

static int keel_sqlite_fixed_stmt(struct keel_sqlite_store *s, sqlite3_stmt **slot,
				  const char *sql)
{
	if (*slot)
		return 0;
	return keel_sqlite_prepare(s, sql, strlen(sql), slot);
}

/* Binding. Values are bound SQLITE_STATIC: they live in the overlay or the
 * batch until the statement has run. A failure is kept and reported when
 * the statement is about to run. */
static void keel_sqlite_bind_rc(struct keel_sqlite_store *s, int rc)
{
	if (rc != SQLITE_OK && !s->bind_rc) {
		s->bind_rc = rc;
		keel_store_fail(&s->base, KEEL_ESTORE, "sqlite \"%s\": %s", s->path,
				sqlite3_errstr(rc));
	}
}

static void keel_sqlite_bind_str(struct keel_sqlite_store *s, sqlite3_stmt *st, int i,
				 struct keel_str v)
{
	keel_sqlite_bind_rc(s, v.ptr ? sqlite3_bind_text64(st, i, v.ptr, v.len,
							   SQLITE_STATIC, SQLITE_UTF8)
				     : sqlite3_bind_null(st, i));
}

static void keel_sqlite_bind_i64(struct keel_sqlite_store *s, sqlite3_stmt *st, int i,
				 int64_t v)
{
	keel_sqlite_bind_rc(s, sqlite3_bind_int64(st, i, v));
}

static void keel_sqlite_bind_null(struct keel_sqlite_store *s, sqlite3_stmt *st, int i)
{
	keel_sqlite_bind_rc(s, sqlite3_bind_null(st, i));
}

/* Starts running st: counts it and reports a pending bind failure. */
static int keel_sqlite_start(struct keel_sqlite_store *s, sqlite3_stmt *st)
{
	s->base.statements++;
	if (s->bind_rc) {
		s->bind_rc = 0;
		sqlite3_reset(st);
		return KEEL_ESTORE;
	}
	return 0;
}

/* Ends a statement's run: rc is the last sqlite3_step result. */
static int keel_sqlite_finish(struct keel_sqlite_store *s, sqlite3_stmt *st, int rc)
{
	int ret = 0;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = keel_sqlite_fail(s);
	sqlite3_reset(st);
	return ret;
}

/* Runs a statement that returns no rows (or whose rows are not needed). */
static int keel_sqlite_run(struct keel_sqlite_store *s, sqlite3_stmt *st)
{
	int rc = keel_sqlite_start(s, st);
	if (rc)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	return keel_sqlite_finish(s, st, rc);
}

static struct keel_str keel_sqlite_col_str(sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return KEEL_STR_NULL;
	const char *p = (const char *)sqlite3_column_text(st, i);
	return keel_str_make(p ? p : "", (size_t)sqlite3_column_bytes(st, i));
}

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
					    s->url, other);
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
				     s->url);
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
	    s->url, (long long)version, (long long)KEEL_SQLITE_SCHEMA_VERSION);
}

static int keel_sqlite_exec(struct keel_sqlite_store *s, const char *sql)
{
	s->base.statements++;
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return keel_sqlite_fail(s);
	return 0;
}

/* Brings the schema to the current version, or refuses a newer one. The
 * version is read again under the write lock, so two processes opening a
 * new file at once create the schema once. */
static int keel_sqlite_migrate(struct keel_sqlite_store *s)
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

/* ---------------------------------------------------------- open/close */

static void keel_sqlite_close(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* Finalize every statement, then close: sqlite3_close_v2 would defer
	 * the close while any statement lives. */
	for (size_t q = 0; q < KEEL_SQ_NPADDED; q++)
		for (size_t r = 0; r < KEEL_SQLITE_NLADDER; r++)
			sqlite3_finalize(s->padded[q][r]);
	for (size_t t = 0; t < KEEL_SI_N; t++)
		for (size_t r = 0; r <= KEEL_SQLITE_INSERT_LOG2; r++)
			sqlite3_finalize(s->insert[t][r]);
	for (size_t t = 0; t < 4; t++)
		for (size_t m = 0; m < KEEL_SF_N; m++)
			sqlite3_finalize(s->scan[t][m]);
	sqlite3_finalize(s->begin);
	sqlite3_finalize(s->commit);
	sqlite3_finalize(s->rollback);
	sqlite3_finalize(s->max_seq);
	sqlite3_finalize(s->counts);
	sqlite3_finalize(s->tenants);
	keel_open_rows_free(&s->open_rows);
	sqlite3_close_v2(s->db);
	free(s->keys);
	free(s->times);
	keel_ptrvec_free(&s->rows);
	free(s->url);
	free(s->path);
	keel_store_base_free(&s->base);
	free(s);
}

static int keel_sqlite_open(const char *url, struct keel_store **out,
			    struct keel_buf *err)
{
	static const char scheme[] = "sqlite:";
	*out = NULL;
	if (strncmp(url, scheme, sizeof scheme - 1) != 0) {
		keel_buf_addf(err, "store \"%s\": not a sqlite: url", url);
		return KEEL_EURL;
	}
	const char *path = url + sizeof scheme - 1;
	if (!*path) {
		keel_buf_addf(err,
			      "store \"%s\": missing database path (use sqlite:PATH, "
			      "e.g. sqlite:keel.db)",
			      url);
		return KEEL_EURL;
	}

	struct keel_sqlite_store *s = keel_xcalloc(1, sizeof *s);
	keel_store_base_init(&s->base, &keel_store_sqlite_ops);
	s->url = keel_xstrdup(url);
	s->path = keel_xstrdup(path);
	keel_open_rows_init(&s->open_rows, KEEL_SQLITE_OPEN_ROWS, KEEL_SQLITE_OPEN_ROWS_AGE,
			    false);
	int rc;
	if (sqlite3_open_v2(path, &s->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = s->db ? keel_sqlite_fail(s)
			   : keel_store_fail(&s->base, KEEL_ESTORE, "sqlite \"%s\": %s",
					     s->path, sqlite3_errstr(SQLITE_NOMEM));
		goto fail;
	}
	sqlite3_busy_timeout(s->db, KEEL_SQLITE_BUSY_MS);
	char pragmas[256];
	snprintf(pragmas, sizeof pragmas,
		 "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; "
		 "PRAGMA cache_size = -%d; PRAGMA temp_store = MEMORY; "
		 "PRAGMA wal_autocheckpoint = %d",
		 KEEL_SQLITE_CACHE_KIB, KEEL_SQLITE_AUTOCHECKPOINT);
	if ((rc = keel_sqlite_exec(s, pragmas)) || (rc = keel_sqlite_migrate(s)) ||
	    (rc = keel_sqlite_fixed_stmt(s, &s->begin, "BEGIN IMMEDIATE")) ||
	    (rc = keel_sqlite_fixed_stmt(s, &s->commit, "COMMIT")) ||
	    (rc = keel_sqlite_fixed_stmt(s, &s->rollback, "ROLLBACK")))
		goto fail;
	*out = &s->base;
	return 0;
fail:
	keel_buf_adds(err, keel_store_errmsg(&s->base));
	keel_sqlite_close(&s->base);
	return rc;
}

/* --------------------------------------------------------- transactions */

/* The pager's data version: it moves with every change to the file, this
 * connection's commits and other connections' alike (no statement needed:
 * SQLITE_FCNTL_DATA_VERSION). 0 if it cannot be read, which never matches. */
static unsigned keel_sqlite_data_version(struct keel_sqlite_store *s)
{
	unsigned v = 0;
	if (sqlite3_file_control(s->db, "main", SQLITE_FCNTL_DATA_VERSION, &v) != SQLITE_OK)
		return 0;
	return v;
}

static int keel_sqlite_begin(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_run(s, s->begin);
	/* Under the write lock: a version other than the one this
	 * connection's last commit left means someone else wrote since, and
	 * the remembered last rows may be stale. */
	if (rc == 0 && (s->data_version == 0 || keel_sqlite_data_version(s) != s->data_version))
		keel_open_rows_clear(&s->open_rows);
	return rc;
}

static int keel_sqlite_commit(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_run(s, s->commit);
	s->data_version = rc ? 0 : keel_sqlite_data_version(s);
	if (rc)
		keel_open_rows_clear(&s->open_rows);
	return rc;
}

static int keel_sqlite_rollback(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* What the batch taught the cache may not have been committed. */
	keel_open_rows_clear(&s->open_rows);
	/* After some errors SQLite has already rolled back; that is fine. */
	if (sqlite3_get_autocommit(s->db))
		return 0;
	return keel_sqlite_run(s, s->rollback);
}

/* ------------------------------------------------------ padded running */

static void keel_sqlite_keys_reset(struct keel_sqlite_store *s)
{
	s->nkeys = 0;
}

static void keel_sqlite_keys_push(struct keel_sqlite_store *s, void *ptr, int64_t at)
{
	if (s->nkeys == s->keys_cap) {
		s->keys_cap = s->keys_cap ? 2 * s->keys_cap : 1024;
		s->keys = keel_xrealloc(s->keys, s->keys_cap * sizeof *s->keys);
	}
	s->keys[s->nkeys++] = (struct keel_sqlite_key){ptr, at};
}

/* Binds the parameters of one key of query q. */
typedef void (*keel_sqlite_bind_fn)(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				    const struct keel_sqlite_key *k);
/* Handles one result row of query q for key k. */
typedef void (*keel_sqlite_row_fn)(struct keel_sqlite_store *s, sqlite3_stmt *st,
				   const struct keel_sqlite_key *k, void *ud);

/* Runs q over s->keys in chunks of at most 1000; the last chunk goes to
 * the smallest ladder size that holds it, padded with NULL keys. */
static int keel_sqlite_run_padded(struct keel_sqlite_store *s, enum keel_sqlite_padded q,
				  keel_sqlite_bind_fn bind, keel_sqlite_row_fn row,
				  void *ud)
{
	const unsigned np = keel_sqlite_padded_defs[q].nparams;
	for (size_t base = 0; base < s->nkeys; base += KEEL_SQLITE_CHUNK) {
		size_t m = s->nkeys - base;
		if (m > KEEL_SQLITE_CHUNK)
			m = KEEL_SQLITE_CHUNK;
		size_t rung = 0;
		while (keel_sqlite_ladder[rung] < m)
			rung++;
		sqlite3_stmt *st;
		int rc = keel_sqlite_padded_stmt(s, q, rung, &st);
		if (rc)
			return rc;
		int p = 1;
		for (size_t i = 0; i < m; i++, p += (int)np)
			bind(s, st, p, &s->keys[base + i]);
		for (size_t i = m; i < keel_sqlite_ladder[rung]; i++)
			for (unsigned k = 0; k < np; k++)
				keel_sqlite_bind_null(s, st, p++);
		if ((rc = keel_sqlite_start(s, st)))
			return rc;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t slot = sqlite3_column_int64(st, 0);
			if (slot >= 0 && (size_t)slot < m)
				row(s, st, &s->keys[base + (size_t)slot], ud);
		}
		if ((rc = keel_sqlite_finish(s, st, rc)))
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------ seen ids */

static void keel_sqlite_bind_event_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
				       int p, const struct keel_sqlite_key *k)
{
	const struct keel_batch_event *ev = k->ptr;
	keel_sqlite_bind_str(s, st, p, ev->tenant);
	keel_sqlite_bind_str(s, st, p + 1, ev->id);
}

static void keel_sqlite_seen_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
				 const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	(void)ud;
	struct keel_batch_event *ev = k->ptr;
	ev->status = KEEL_EV_DUPLICATE;
	ev->stored_hash = (uint64_t)sqlite3_column_int64(st, 1);
}

static int keel_sqlite_seen_ids(struct keel_store *bs, struct keel_batch_event **ev,
				size_t n)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < n; i++)
		keel_sqlite_keys_push(s, ev[i], 0);
	return keel_sqlite_run_padded(s, KEEL_SQ_SEEN, keel_sqlite_bind_event_key,
				      keel_sqlite_seen_row, NULL);
}

/* ------------------------------------------------------------ prefetch */

static void keel_sqlite_bind_entity_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
					int p, const struct keel_sqlite_key *k)
{
	const struct keel_entity *e = k->ptr;
	keel_sqlite_bind_str(s, st, p, e->tenant);
	keel_sqlite_bind_str(s, st, p + 1, e->subject);
}

static void keel_sqlite_entity_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
				   const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	keel_overlay_found_entity(
	    ud, k->ptr, keel_sqlite_col_str(st, 1), sqlite3_column_int64(st, 2),
	    sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
}

/* Binds a timeline's key (tenant, subject, name[, object]) and, for late
 * lookups, the time. */
static void keel_sqlite_bind_timeline_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
					  int p, const struct keel_sqlite_key *k, bool at)
{
	const struct keel_timeline *tl = k->ptr;
	keel_sqlite_bind_str(s, st, p++, tl->tenant);
	keel_sqlite_bind_str(s, st, p++, tl->subject);
	keel_sqlite_bind_str(s, st, p++, tl->name);
	if (tl->kind == KEEL_ROW_RELATION)
		keel_sqlite_bind_str(s, st, p++, tl->object);
	if (at)
		keel_sqlite_bind_i64(s, st, p, k->at);
}

static void keel_sqlite_bind_open_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, const struct keel_sqlite_key *k)
{
	keel_sqlite_bind_timeline_key(s, st, p, k, false);
}

static void keel_sqlite_bind_late_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, const struct keel_sqlite_key *k)
{
	keel_sqlite_bind_timeline_key(s, st, p, k, true);
}

/* Columns: slot, seq, value|linked, valid_from, valid_to, asserted_by,
 * closed_by. The overlay copies the strings. */
static void keel_sqlite_timeline_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
				     const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	struct keel_timeline *tl = k->ptr;
	struct keel_row r;
	memset(&r, 0, sizeof r);
	r.seq = sqlite3_column_int64(st, 1);
	if (tl->kind == KEEL_ROW_FACT)
		r.value = keel_sqlite_col_str(st, 2);
	else
		r.linked = sqlite3_column_int64(st, 2) != 0;
	r.valid_from = sqlite3_column_int64(st, 3);
	r.valid_to = sqlite3_column_int64(st, 4);
	r.asserted_by = keel_sqlite_col_str(st, 5);
	r.closed_by = keel_sqlite_col_str(st, 6);
	keel_overlay_add_fetched_row(ud, tl, &r);
}

static int keel_sqlite_prefetch_timelines(struct keel_sqlite_store *s,
					  struct keel_overlay *o, enum keel_row_kind kind)
{
	bool fact = kind == KEEL_ROW_FACT;
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < o->timelines.len; i++) {
		struct keel_timeline *tl = o->timelines.items[i];
		if (tl->kind != kind)
			continue;
		/* A timeline a recent batch touched: its last row is known. */
		const struct keel_row *last = keel_open_rows_get(&s->open_rows, tl);
		if (last)
			keel_overlay_add_fetched_row(o, tl, last);
		else
			keel_sqlite_keys_push(s, tl, 0);
	}
	int rc = s->nkeys ? keel_sqlite_run_padded(
				s, fact ? KEEL_SQ_FACT_OPEN : KEEL_SQ_REL_OPEN,
				keel_sqlite_bind_open_key, keel_sqlite_timeline_row, o)
			  : 0;
	if (rc)
		return rc;

	/* Times before the open row that no fetched row covers: late events. */
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < o->timelines.len; i++) {
		struct keel_timeline *tl = o->timelines.items[i];
		if (tl->kind != kind || !tl->nrows)
			continue;
		if (tl->ntimes > s->times_cap) {
			s->times_cap = tl->ntimes;
			s->times =
			    keel_xrealloc(s->times, s->times_cap * sizeof *s->times);
		}
		size_t n = keel_overlay_uncovered_times(tl, s->times, tl->ntimes);
		for (size_t k = 0; k < n; k++)
			keel_sqlite_keys_push(s, tl, s->times[k]);
	}
	return keel_sqlite_run_padded(s, fact ? KEEL_SQ_FACT_LATE : KEEL_SQ_REL_LATE,
				      keel_sqlite_bind_late_key, keel_sqlite_timeline_row,
				      o);
}

static int keel_sqlite_prefetch(struct keel_store *bs, struct keel_overlay *o)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < o->entities.len; i++) {
		struct keel_entity *e = o->entities.items[i];
		if (!(e->flags & (KEEL_ENTITY_FOUND | KEEL_ENTITY_NEW)))
			keel_sqlite_keys_push(s, e, 0);
	}
	int rc = keel_sqlite_run_padded(s, KEEL_SQ_ENTITY, keel_sqlite_bind_entity_key,
					keel_sqlite_entity_row, o);
	if (rc || (rc = keel_sqlite_prefetch_timelines(s, o, KEEL_ROW_FACT)) ||
	    (rc = keel_sqlite_prefetch_timelines(s, o, KEEL_ROW_RELATION)))
		return rc;
	return 0;
}

/* ---------------------------------------------------------- write-back */

typedef void (*keel_sqlite_bind_item_fn)(struct keel_sqlite_store *s, sqlite3_stmt *st,
					 int p, void *item);

/* Inserts n items with multi-row INSERTs: full statements of
 * KEEL_SQLITE_INSERT_MAX rows, then the remainder by its binary digits. */
static int keel_sqlite_insert_items(struct keel_sqlite_store *s,
				    enum keel_sqlite_insert t, void **items, size_t n,
				    keel_sqlite_bind_item_fn bind)
{
	const int np = (int)keel_sqlite_insert_defs[t].nparams;
	size_t i = 0;
	while (i < n) {
		size_t left = n - i;
		unsigned log2 = KEEL_SQLITE_INSERT_LOG2;
		while ((1u << log2) > left)
			log2--;
		sqlite3_stmt *st;
		int rc = keel_sqlite_insert_stmt(s, t, log2, &st);
		if (rc)
			return rc;
		int p = 1;
		for (size_t k = 0; k < (1u << log2); k++, p += np)
			bind(s, st, p, items[i + k]);
		if ((rc = keel_sqlite_run(s, st)))
			return rc;
		i += 1u << log2;
	}
	return 0;
}

static void keel_sqlite_bind_fact(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				  void *item)
{
	const struct keel_row *r = item;
	const struct keel_timeline *tl = r->timeline;
	keel_sqlite_bind_i64(s, st, p, r->seq);
	keel_sqlite_bind_str(s, st, p + 1, tl->tenant);
	keel_sqlite_bind_str(s, st, p + 2, tl->subject);
	keel_sqlite_bind_str(s, st, p + 3, tl->name);
	keel_sqlite_bind_str(s, st, p + 4, r->value);
	keel_sqlite_bind_i64(s, st, p + 5, r->valid_from);
	keel_sqlite_bind_i64(s, st, p + 6, r->valid_to);
	keel_sqlite_bind_str(s, st, p + 7, r->asserted_by);
	keel_sqlite_bind_str(s, st, p + 8, r->closed_by);
}

static void keel_sqlite_bind_relation(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, void *item)
{
	const struct keel_row *r = item;
	const struct keel_timeline *tl = r->timeline;
	keel_sqlite_bind_i64(s, st, p, r->seq);
	keel_sqlite_bind_str(s, st, p + 1, tl->tenant);
	keel_sqlite_bind_str(s, st, p + 2, tl->subject);
	keel_sqlite_bind_str(s, st, p + 3, tl->name);
	keel_sqlite_bind_str(s, st, p + 4, tl->object);
	keel_sqlite_bind_i64(s, st, p + 5, r->linked);
	keel_sqlite_bind_i64(s, st, p + 6, r->valid_from);
	keel_sqlite_bind_i64(s, st, p + 7, r->valid_to);
	keel_sqlite_bind_str(s, st, p + 8, r->asserted_by);
	keel_sqlite_bind_str(s, st, p + 9, r->closed_by);
}

static void keel_sqlite_bind_event(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				   void *item)
{
	const struct keel_batch_event *ev = item;
	keel_sqlite_bind_i64(s, st, p, ev->seq);
	keel_sqlite_bind_str(s, st, p + 1, ev->tenant);
	keel_sqlite_bind_str(s, st, p + 2, ev->id);
	keel_sqlite_bind_str(s, st, p + 3, ev->type);
	keel_sqlite_bind_i64(s, st, p + 4, ev->time);
	keel_sqlite_bind_i64(s, st, p + 5, (int64_t)ev->hash);
	keel_sqlite_bind_str(s, st, p + 6, ev->envelope);
}

static void keel_sqlite_bind_event_id(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, void *item)
{
	const struct keel_batch_event *ev = item;
	keel_sqlite_bind_str(s, st, p, ev->tenant);
	keel_sqlite_bind_str(s, st, p + 1, ev->id);
	keel_sqlite_bind_i64(s, st, p + 2, (int64_t)ev->hash);
	keel_sqlite_bind_i64(s, st, p + 3, ev->seq);
}

static void keel_sqlite_bind_entity(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				    void *item)
{
	const struct keel_entity *e = item;
	keel_sqlite_bind_str(s, st, p, e->tenant);
	keel_sqlite_bind_str(s, st, p + 1, e->subject);
	keel_sqlite_bind_str(s, st, p + 2, e->kind);
	keel_sqlite_bind_i64(s, st, p + 3, e->kind_time);
	keel_sqlite_bind_i64(s, st, p + 4, e->first_seen);
	keel_sqlite_bind_i64(s, st, p + 5, e->last_seen);
}

static void keel_sqlite_bind_closure(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				     const struct keel_sqlite_key *k)
{
	const struct keel_row *r = k->ptr;
	keel_sqlite_bind_i64(s, st, p, r->seq);
	keel_sqlite_bind_i64(s, st, p + 1, r->valid_to);
	keel_sqlite_bind_str(s, st, p + 2, r->closed_by);
}

static void keel_sqlite_no_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
			       const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	(void)st;
	(void)k;
	(void)ud;
}

/* The last seq of each table, read once per batch under the write lock:
 * rows and events get explicit seqs so that row->seq and ev->seq are known
 * without relying on how SQLite picks rowids. */
static int keel_sqlite_load_seqs(struct keel_sqlite_store *s)
{
	int rc = keel_sqlite_fixed_stmt(
	    s, &s->max_seq,
	    "SELECT (SELECT max(seq) FROM facts), (SELECT max(seq) FROM relations), "
	    "(SELECT max(seq) FROM events)");
	if (rc || (rc = keel_sqlite_start(s, s->max_seq)))
		return rc;
	rc = sqlite3_step(s->max_seq);
	if (rc == SQLITE_ROW) {
		s->fact_seq = sqlite3_column_int64(s->max_seq, 0);
		s->rel_seq = sqlite3_column_int64(s->max_seq, 1);
		s->event_seq = sqlite3_column_int64(s->max_seq, 2);
	}
	return keel_sqlite_finish(s, s->max_seq, rc);
}

static int keel_sqlite_write_rows(struct keel_sqlite_store *s, struct keel_overlay *o,
				  enum keel_row_kind kind)
{
	bool fact = kind == KEEL_ROW_FACT;
	int64_t *seq = fact ? &s->fact_seq : &s->rel_seq;
	s->rows.len = 0;
	for (size_t i = 0; i < o->new_rows.len; i++) {
		struct keel_row *r = o->new_rows.items[i];
		if (r->timeline->kind != kind)
			continue;
		r->seq = ++*seq;
		keel_ptrvec_push(&s->rows, r);
	}
	int rc = keel_sqlite_insert_items(
	    s, fact ? KEEL_SI_FACT : KEEL_SI_REL, s->rows.items, s->rows.len,
	    fact ? keel_sqlite_bind_fact : keel_sqlite_bind_relation);
	if (rc)
		return rc;

	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < o->dirty_rows.len; i++) {
		struct keel_row *r = o->dirty_rows.items[i];
		if (r->timeline->kind == kind)
			keel_sqlite_keys_push(s, r, 0);
	}
	return keel_sqlite_run_padded(s, fact ? KEEL_SQ_FACT_CLOSE : KEEL_SQ_REL_CLOSE,
				      keel_sqlite_bind_closure, keel_sqlite_no_row, NULL);
}

static int keel_sqlite_write_back(struct keel_store *bs, struct keel_overlay *o,
				  struct keel_batch_event **ev, size_t n)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_load_seqs(s);
	if (rc)
		return rc;

	s->rows.len = 0;
	for (size_t i = 0; i < o->entities.len; i++) {
		struct keel_entity *e = o->entities.items[i];
		if (e->flags & (KEEL_ENTITY_NEW | KEEL_ENTITY_DIRTY))
			keel_ptrvec_push(&s->rows, e);
	}
	if ((rc = keel_sqlite_insert_items(s, KEEL_SI_ENTITY, s->rows.items, s->rows.len,
					   keel_sqlite_bind_entity)) ||
	    (rc = keel_sqlite_write_rows(s, o, KEEL_ROW_FACT)) ||
	    (rc = keel_sqlite_write_rows(s, o, KEEL_ROW_RELATION)))
		return rc;

	for (size_t i = 0; i < n; i++)
		ev[i]->seq = ++s->event_seq;
	if ((rc = keel_sqlite_insert_items(s, KEEL_SI_EVENT, (void **)ev, n,
					   keel_sqlite_bind_event)) ||
	    (rc = keel_sqlite_insert_items(s, KEEL_SI_EVENT_ID, (void **)ev, n,
					   keel_sqlite_bind_event_id)))
		return rc;
	/* Every row now has its seq: the last row of each timeline is known
	 * (a rollback forgets it all again). */
	keel_open_rows_learn(&s->open_rows, &o->timelines);
	return 0;
}

/* ------------------------------------------------------------- reading */

/* Drops the filters a record type does not have. */
static unsigned keel_sqlite_scan_mask(const struct keel_scan *q)
{
	unsigned m = 0;
	switch (q->type) {
	case KEEL_REC_ENTITY:
		m = q->subject.ptr ? KEEL_SF_SUBJECT : 0;
		break;
	case KEEL_REC_RELATION:
		m |= q->object.ptr ? KEEL_SF_OBJECT : 0;
		__attribute__((fallthrough));
	case KEEL_REC_FACT:
		m |= q->subject.ptr ? KEEL_SF_SUBJECT : 0;
		m |= q->name.ptr ? KEEL_SF_NAME : 0;
		m |= q->at_set ? KEEL_SF_AT : 0;
		break;
	case KEEL_REC_EVENT:
		m = q->event_id.ptr ? KEEL_SF_EVENT_ID : 0;
		break;
	}
	return m;
}

static void keel_sqlite_scan_sql(struct keel_buf *b, enum keel_record_type type,
				 unsigned m)
{
	static const char *const select[] = {
	    [KEEL_REC_ENTITY] = "SELECT tenant, subject, kind, kind_time, first_seen, "
				"last_seen FROM entities",
	    [KEEL_REC_FACT] = "SELECT tenant, subject, predicate, value, valid_from, "
			      "valid_to, asserted_by, closed_by, seq FROM facts",
	    [KEEL_REC_RELATION] = "SELECT tenant, subject, relation, object, linked, "
				  "valid_from, valid_to, asserted_by, closed_by, seq "
				  "FROM relations",
	    /* The log is read in rowid (arrival) order with no sort; one
	     * event by id is found through event_ids (below). */
	    [KEEL_REC_EVENT] = "SELECT tenant, id, type, time, envelope, hash, seq "
			       "FROM events",
	};
	static const char *const order[] = {
	    [KEEL_REC_ENTITY] = " ORDER BY subject",
	    [KEEL_REC_FACT] = " ORDER BY subject, predicate, valid_from, valid_to, "
			      "asserted_by, seq",
	    [KEEL_REC_RELATION] = " ORDER BY subject, relation, object, valid_from, "
				  "valid_to, asserted_by, seq",
	    [KEEL_REC_EVENT] = " ORDER BY seq",
	};
	keel_buf_adds(b, select[type]);
	if (m & KEEL_SF_EVENT_ID)
		keel_buf_adds(b, " WHERE seq = (SELECT seq FROM event_ids "
				 "WHERE tenant = ?1 AND id = ?6) AND tenant = ?1");
	else
		keel_buf_adds(b, " WHERE tenant = ?1");
	if (m & KEEL_SF_SUBJECT)
		keel_buf_adds(b, " AND subject = ?2");
	if (m & KEEL_SF_NAME)
		keel_buf_adds(b, type == KEEL_REC_FACT ? " AND predicate = ?3"
						       : " AND relation = ?3");
	if (m & KEEL_SF_OBJECT)
		keel_buf_adds(b, " AND object = ?4");
	if (m & KEEL_SF_AT)
		keel_buf_adds(b, " AND valid_from <= ?5 AND valid_to > ?5");
	keel_buf_adds(b, order[type]);
}

static void keel_sqlite_scan_record(sqlite3_stmt *st, enum keel_record_type type,
				    struct keel_record *r)
{
	memset(r, 0, sizeof *r);
	r->type = type;
	r->tenant = keel_sqlite_col_str(st, 0);
	switch (type) {
	case KEEL_REC_ENTITY:
		r->subject = keel_sqlite_col_str(st, 1);
		r->kind = keel_sqlite_col_str(st, 2);
		r->kind_time = sqlite3_column_int64(st, 3);
		r->first_seen = sqlite3_column_int64(st, 4);
		r->last_seen = sqlite3_column_int64(st, 5);
		break;
	case KEEL_REC_FACT:
		r->subject = keel_sqlite_col_str(st, 1);
		r->name = keel_sqlite_col_str(st, 2);
		r->value = keel_sqlite_col_str(st, 3);
		r->valid_from = sqlite3_column_int64(st, 4);
		r->valid_to = sqlite3_column_int64(st, 5);
		r->asserted_by = keel_sqlite_col_str(st, 6);
		r->closed_by = keel_sqlite_col_str(st, 7);
		r->seq = sqlite3_column_int64(st, 8);
		break;
	case KEEL_REC_RELATION:
		r->subject = keel_sqlite_col_str(st, 1);
		r->name = keel_sqlite_col_str(st, 2);
		r->object = keel_sqlite_col_str(st, 3);
		r->linked = sqlite3_column_int64(st, 4) != 0;
		r->valid_from = sqlite3_column_int64(st, 5);
		r->valid_to = sqlite3_column_int64(st, 6);
		r->asserted_by = keel_sqlite_col_str(st, 7);
		r->closed_by = keel_sqlite_col_str(st, 8);
		r->seq = sqlite3_column_int64(st, 9);
		break;
	case KEEL_REC_EVENT:
		r->id = keel_sqlite_col_str(st, 1);
		r->event_type = keel_sqlite_col_str(st, 2);
		r->time = sqlite3_column_int64(st, 3);
		r->envelope = keel_sqlite_col_str(st, 4);
		r->hash = (uint64_t)sqlite3_column_int64(st, 5);
		r->seq = sqlite3_column_int64(st, 6);
		break;
	}
}

static int keel_sqlite_scan(struct keel_store *bs, const struct keel_scan *q,
			    keel_scan_fn fn, void *ud)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	if ((unsigned)q->type > KEEL_REC_EVENT || !q->tenant.ptr)
		return keel_store_fail(bs, KEEL_EINVAL, "scan: no record type or tenant");
	unsigned m = keel_sqlite_scan_mask(q);
	sqlite3_stmt *st = s->scan[q->type][m];
	/* A callback may scan again; a statement already running is not
	 * reset under it: the nested scan gets a statement of its own. */
	bool own = st && s->scan_busy[q->type][m];
	if (!st || own) {
		struct keel_buf b;
		keel_buf_init(&b);
		keel_sqlite_scan_sql(&b, q->type, m);
		int rc = keel_sqlite_prepare(s, b.data, b.len, &st);
		keel_buf_free(&b);
		if (rc)
			return rc;
		if (!own)
			s->scan[q->type][m] = st;
	}
	keel_sqlite_bind_str(s, st, KEEL_SP_TENANT, q->tenant);
	if (m & KEEL_SF_SUBJECT)
		keel_sqlite_bind_str(s, st, KEEL_SP_SUBJECT, q->subject);
	if (m & KEEL_SF_NAME)
		keel_sqlite_bind_str(s, st, KEEL_SP_NAME, q->name);
	if (m & KEEL_SF_OBJECT)
		keel_sqlite_bind_str(s, st, KEEL_SP_OBJECT, q->object);
	if (m & KEEL_SF_AT)
		keel_sqlite_bind_i64(s, st, KEEL_SP_AT, q->at);
	if (m & KEEL_SF_EVENT_ID)
		keel_sqlite_bind_str(s, st, KEEL_SP_EVENT_ID, q->event_id);

	int rc = keel_sqlite_start(s, st), stop = 0;
	if (!rc) {
		if (!own)
			s->scan_busy[q->type][m] = true;
		struct keel_record r;
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			keel_sqlite_scan_record(st, q->type, &r);
			stop = fn(ud, &r);
		}
		rc = stop ? (sqlite3_reset(st), 0) : keel_sqlite_finish(s, st, rc);
		if (!own)
			s->scan_busy[q->type][m] = false;
	}
	sqlite3_clear_bindings(st);
	if (own)
		sqlite3_finalize(st);
	return rc ? rc : stop;
}

/* Tenants of all four tables, each found by hopping through its index
 * with min(tenant) > previous: one seek per tenant, not a scan of rows. */
#define KEEL_SQ_TENANTS_OF(name, table)                                                  \
	name "(x) AS (SELECT (SELECT min(tenant) FROM " table ") UNION ALL "             \
	     "SELECT (SELECT min(tenant) FROM " table " WHERE tenant > " name ".x) "     \
	     "FROM " name " WHERE " name ".x IS NOT NULL)"

/* The log's tenants are those of event_ids (every event has its id row). */
/* clang-format off */
#define KEEL_SQ_TENANTS                                                    \
	"WITH RECURSIVE "                                                  \
	KEEL_SQ_TENANTS_OF("a", "event_ids") ", "                          \
	KEEL_SQ_TENANTS_OF("b", "entities") ", "                           \
	KEEL_SQ_TENANTS_OF("c", "facts") ", "                              \
	KEEL_SQ_TENANTS_OF("d", "relations")                               \
	" SELECT x FROM a WHERE x IS NOT NULL"                             \
	" UNION SELECT x FROM b WHERE x IS NOT NULL"                       \
	" UNION SELECT x FROM c WHERE x IS NOT NULL"                       \
	" UNION SELECT x FROM d WHERE x IS NOT NULL ORDER BY 1"
/* clang-format on */

static int keel_sqlite_tenants(struct keel_store *bs, struct keel_ptrvec *out)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_fixed_stmt(s, &s->tenants, KEEL_SQ_TENANTS);
	if (rc || (rc = keel_sqlite_start(s, s->tenants)))
		return rc;
	while ((rc = sqlite3_step(s->tenants)) == SQLITE_ROW) {
		struct keel_str t = keel_sqlite_col_str(s->tenants, 0);
		keel_ptrvec_push(out, keel_xstrndup(t.ptr ? t.ptr : "", t.len));
	}
	return keel_sqlite_finish(s, s->tenants, rc);
}

static int keel_sqlite_counts(struct keel_store *bs, struct keel_str tenant,
			      uint64_t out[4])
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_fixed_stmt(
	    s, &s->counts,
	    "SELECT (SELECT count(*) FROM entities WHERE tenant = ?1), "
	    "(SELECT count(*) FROM facts WHERE tenant = ?1), "
	    "(SELECT count(*) FROM relations WHERE tenant = ?1), "
	    "(SELECT count(*) FROM event_ids WHERE tenant = ?1)");
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, s->counts, 1, tenant);
	if ((rc = keel_sqlite_start(s, s->counts)))
		return rc;
	memset(out, 0, 4 * sizeof *out);
	rc = sqlite3_step(s->counts);
	if (rc == SQLITE_ROW)
		for (int i = 0; i < 4; i++)
			out[i] = (uint64_t)sqlite3_column_int64(s->counts, i);
	return keel_sqlite_finish(s, s->counts, rc);
}

/* ------------------------------------------- replay (docs/replay.md) */

/* Deletes the tenant's rows of one table. When no other tenant has rows
 * there, a DELETE without WHERE takes SQLite's truncate optimization
 * (pages dropped whole instead of row by row); both forms are one
 * statement inside the open transaction, so a rollback restores either. */
static int keel_sqlite_delete_tenant(struct keel_sqlite_store *s, const char *table,
				     struct keel_str tenant)
{
	struct keel_buf sql;
	keel_buf_init(&sql);
	keel_buf_addf(&sql,
		      "SELECT EXISTS (SELECT 1 FROM %s WHERE tenant < ?1) OR "
		      "EXISTS (SELECT 1 FROM %s WHERE tenant > ?1)",
		      table, table);
	sqlite3_stmt *st = NULL;
	int rc = keel_sqlite_prepare(s, sql.data, sql.len, &st);
	bool others = true;
	if (rc == 0) {
		keel_sqlite_bind_str(s, st, 1, tenant);
		if ((rc = keel_sqlite_start(s, st)) == 0) {
			int step = sqlite3_step(st);
			if (step == SQLITE_ROW)
				others = sqlite3_column_int(st, 0) != 0;
			rc = keel_sqlite_finish(s, st, step);
		}
		sqlite3_finalize(st);
		st = NULL;
	}
	keel_buf_reset(&sql);
	if (others)
		keel_buf_addf(&sql, "DELETE FROM %s WHERE tenant = ?1", table);
	else
		keel_buf_addf(&sql, "DELETE FROM %s", table);
	if (rc == 0)
		rc = keel_sqlite_prepare(s, sql.data, sql.len, &st);
	if (rc == 0) {
		if (others)
			keel_sqlite_bind_str(s, st, 1, tenant);
		rc = keel_sqlite_run(s, st);
		sqlite3_finalize(st);
	}
	keel_buf_free(&sql);
	return rc;
}

/* Deletes the tenant's rows of one predicate or relation (a replay that
 * changed only some of them). */
static int keel_sqlite_delete_named(struct keel_sqlite_store *s, const char *table,
				    const char *column, struct keel_str tenant,
				    struct keel_str name)
{
	struct keel_buf sql;
	keel_buf_init(&sql);
	keel_buf_addf(&sql, "DELETE FROM %s WHERE tenant = ?1 AND %s = ?2", table, column);
	sqlite3_stmt *st = NULL;
	int rc = keel_sqlite_prepare(s, sql.data, sql.len, &st);
	if (rc == 0) {
		keel_sqlite_bind_str(s, st, 1, tenant);
		keel_sqlite_bind_str(s, st, 2, name);
		rc = keel_sqlite_run(s, st);
		sqlite3_finalize(st);
	}
	keel_buf_free(&sql);
	return rc;
}

/* The tenant's rows that scope covers (NULL: all of them). */
static int keel_sqlite_delete_scope(struct keel_sqlite_store *s, struct keel_str tenant,
				    const struct keel_replace_scope *scope)
{
	if (!scope) {
		int rc;
		if ((rc = keel_sqlite_delete_tenant(s, "entities", tenant)) ||
		    (rc = keel_sqlite_delete_tenant(s, "facts", tenant)))
			return rc;
		return keel_sqlite_delete_tenant(s, "relations", tenant);
	}
	int rc = scope->entities ? keel_sqlite_delete_tenant(s, "entities", tenant) : 0;
	for (size_t i = 0; rc == 0 && i < scope->nnames[KEEL_ROW_FACT]; i++)
		rc = keel_sqlite_delete_named(s, "facts", "predicate", tenant,
					      scope->names[KEEL_ROW_FACT][i]);
	for (size_t i = 0; rc == 0 && i < scope->nnames[KEEL_ROW_RELATION]; i++)
		rc = keel_sqlite_delete_named(s, "relations", "relation", tenant,
					      scope->names[KEEL_ROW_RELATION][i]);
	return rc;
}

/* BEGIN IMMEDIATE has held the write lock since the replay read the log,
 * so log_events cannot have changed. The rows arrive in canonical order
 * and are numbered in it, so the table and its index both grow at the
 * end. */
static int keel_sqlite_replace_tenant(struct keel_store *bs, struct keel_str tenant,
				      const struct keel_replace_scope *scope,
				      struct keel_overlay *o,
				      struct keel_batch_event **ev, size_t n,
				      uint64_t log_events, struct keel_buf *note)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	(void)log_events;
	keel_open_rows_clear(&s->open_rows); /* rows renumbered or gone */
	int rc = keel_sqlite_delete_scope(s, tenant, scope);
	if (rc)
		return rc;
	rc = keel_sqlite_write_back(bs, o, ev, n);
	if (rc == 0)
		keel_buf_adds(note,
			      "sqlite: prepared multi-row INSERTs in one transaction");
	return rc;
}

const struct keel_store_ops keel_store_sqlite_ops = {
    .scheme = "sqlite",
    .open = keel_sqlite_open,
    .close = keel_sqlite_close,
    .begin = keel_sqlite_begin,
    .commit = keel_sqlite_commit,
    .rollback = keel_sqlite_rollback,
    .seen_ids = keel_sqlite_seen_ids,
    .prefetch = keel_sqlite_prefetch,
    .write_back = keel_sqlite_write_back,
    .tenants = keel_sqlite_tenants,
    .scan = keel_sqlite_scan,
    .counts = keel_sqlite_counts,
    .replace_tenant = keel_sqlite_replace_tenant,
};

/* ------------------------------------------------- for tests (internal) */

sqlite3 *keel_store_sqlite_db(struct keel_store *bs)
{
	return keel_sqlite_downcast(bs)->db;
}

void keel_store_sqlite_open_rows(struct keel_store *bs, bool forget, uint64_t *hits,
				 uint64_t *misses)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	if (forget)
		keel_open_rows_clear(&s->open_rows);
	if (hits)
		*hits = s->open_rows.hits;
	if (misses)
		*misses = s->open_rows.misses;
}

int keel_store_sqlite_schema_version(void)
{
	return (int)KEEL_SQLITE_SCHEMA_VERSION;
}

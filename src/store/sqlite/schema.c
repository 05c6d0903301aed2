/*
 * schema.c - the SQLite store's schema: the list of migration steps
 * (version i to i + 1), and creating, checking and migrating a file.
 */
#include "parts.h"

/* ----------------------------------------------------------- the schema */

/*
 * Migration i takes a database from schema version i to i + 1; version 0
 * is an empty database. The schema version is the number of steps. A step
 * is never edited once released: a change is a new step.
 */
/*
 * The views that show the derived rows to SQL tools (sqlite3, Datasette,
 * ...), row for row what `keel dump` prints: valid_to and closed_by from
 * the next assertion of the timeline in (valid_from, arrival) order,
 * entities aggregated over their mentions. Times are the dump's canonical
 * text (microseconds shown only when not zero; years 0000-9999);
 * recorded_at is NULL for what was recorded before Keel kept the time.
 */
#define KEEL_SQ_T(x)                                                                    \
	"CASE WHEN " x " IS NULL THEN NULL ELSE strftime('%Y-%m-%dT%H:%M:%S', "         \
	"(" x " - ((" x " % 1000000) + 1000000) % 1000000) / 1000000, "                 \
	"'unixepoch') || CASE WHEN " x " % 1000000 = 0 THEN '' ELSE "                   \
	"printf('.%06d', ((" x " % 1000000) + 1000000) % 1000000) END || 'Z' END"

#define KEEL_SQ_DERIVED(cols, key, table)                                               \
	"SELECT " cols ", valid_from, lead(valid_from) OVER w AS valid_to, "            \
	"asserted_by, lead(asserted_by) OVER w AS closed_by, seq, recorded_at "         \
	"FROM " table " WINDOW w AS (PARTITION BY " key                                 \
	" ORDER BY valid_from, recorded_at, seq)"

#define KEEL_SQ_ROW_TIMES                                                               \
	KEEL_SQ_T("valid_from")                                                         \
	" AS valid_from, " KEEL_SQ_T("valid_to") " AS valid_to, "                       \
	"asserted_by, closed_by, seq, " KEEL_SQ_T("nullif(recorded_at, 0)")             \
	" AS recorded_at"

#define KEEL_SQ_VIEW_FACTS                                                              \
	"CREATE VIEW facts AS SELECT tenant, subject, predicate, value, "               \
	KEEL_SQ_ROW_TIMES " FROM ("                                                     \
	KEEL_SQ_DERIVED("tenant, subject, predicate, value",                            \
			"tenant, subject, predicate", "fact_rows") ");\n"

#define KEEL_SQ_VIEW_RELATIONS                                                          \
	"CREATE VIEW relations AS SELECT tenant, subject, relation, object, "           \
	"linked, " KEEL_SQ_ROW_TIMES " FROM ("                                          \
	KEEL_SQ_DERIVED("tenant, subject, relation, object, linked",                    \
			"tenant, subject, relation, object", "relation_rows") ");\n"

#define KEEL_SQ_VIEW_ENTITIES                                                           \
	"CREATE VIEW entities AS SELECT tenant, subject, "                              \
	"(SELECT k.kind FROM entity_mentions AS k WHERE k.tenant = m.tenant "           \
	"AND k.subject = m.subject AND k.kind IS NOT NULL "                             \
	"ORDER BY k.kind_time, k.seq DESC LIMIT 1) AS kind, "                           \
	KEEL_SQ_T("min(first_seen)") " AS first_seen, "                                 \
	KEEL_SQ_T("max(last_seen)") " AS last_seen, "                                   \
	KEEL_SQ_T("nullif(max(recorded_at), 0)") " AS recorded_at "                     \
	"FROM entity_mentions AS m GROUP BY tenant, subject;\n"

/* Each step is a list of SQL texts run in order (a text longer than 4095
 * bytes is beyond what C compilers must support). */
static const char *const keel_sqlite_step1[] = {
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
    NULL,
};

static const char *const keel_sqlite_step2[] = {
    /* 1 -> 2: history is never rewritten (docs/store-sqlite.md, "Schema
     * version 2"). Each assertion is a row written once; valid_to and
     * closed_by are derived on read, so the old tables' rows become the
     * raw tables' in seq order, keeping seq and dropping both columns.
     * An old entity becomes one mention. What was written before Keel
     * kept the time has recorded_at 0. The old tables' names become
     * views of the derived rows. */
    "ALTER TABLE events ADD COLUMN recorded_at INTEGER NOT NULL DEFAULT 0;\n"
    "ALTER TABLE event_ids ADD COLUMN recorded_at INTEGER NOT NULL DEFAULT 0;\n"
    "CREATE TABLE fact_rows (\n"
    "	seq INTEGER PRIMARY KEY,\n"
    "	tenant TEXT NOT NULL,\n"
    "	subject TEXT NOT NULL,\n"
    "	predicate TEXT NOT NULL,\n"
    "	value TEXT,\n"
    "	valid_from INTEGER NOT NULL,\n"
    "	asserted_by TEXT NOT NULL,\n"
    "	recorded_at INTEGER NOT NULL\n"
    ");\n"
    "INSERT INTO fact_rows (seq, tenant, subject, predicate, value, valid_from, "
    "asserted_by, recorded_at) SELECT seq, tenant, subject, predicate, value, "
    "valid_from, asserted_by, 0 FROM facts ORDER BY seq;\n"
    "DROP TABLE facts;\n",
    /* A timeline's rows in (valid_from, arrival) order: recorded_at never
     * decreases along seq, so (valid_from, recorded_at, seq) is that
     * order, and a known_at filter reads the index alone. */
    "CREATE INDEX fact_rows_key ON fact_rows "
    "(tenant, subject, predicate, valid_from, recorded_at);\n"
    "CREATE TABLE relation_rows (\n"
    "	seq INTEGER PRIMARY KEY,\n"
    "	tenant TEXT NOT NULL,\n"
    "	subject TEXT NOT NULL,\n"
    "	relation TEXT NOT NULL,\n"
    "	object TEXT NOT NULL,\n"
    "	linked INTEGER NOT NULL,\n"
    "	valid_from INTEGER NOT NULL,\n"
    "	asserted_by TEXT NOT NULL,\n"
    "	recorded_at INTEGER NOT NULL\n"
    ");\n"
    "INSERT INTO relation_rows (seq, tenant, subject, relation, object, linked, "
    "valid_from, asserted_by, recorded_at) SELECT seq, tenant, subject, relation, "
    "object, linked, valid_from, asserted_by, 0 FROM relations ORDER BY seq;\n"
    "DROP TABLE relations;\n",
    "CREATE INDEX relation_rows_key ON relation_rows "
    "(tenant, subject, relation, object, valid_from, recorded_at);\n"
    /* The incoming direction (show's relations pointing at a subject). */
    "CREATE INDEX relation_rows_object ON relation_rows "
    "(tenant, object, relation, subject, valid_from, recorded_at);\n"
    /* One row per entity per batch; rowid order is arrival. The index
     * covers every column, so reading an entity never visits the table,
     * and its first entry per subject is the earliest recorded. */
    "CREATE TABLE entity_mentions (\n"
    "	seq INTEGER PRIMARY KEY,\n"
    "	tenant TEXT NOT NULL,\n"
    "	subject TEXT NOT NULL,\n"
    "	kind TEXT,\n"
    "	kind_time INTEGER NOT NULL,\n"
    "	first_seen INTEGER NOT NULL,\n"
    "	last_seen INTEGER NOT NULL,\n"
    "	recorded_at INTEGER NOT NULL\n"
    ");\n"
    "INSERT INTO entity_mentions (tenant, subject, kind, kind_time, first_seen, "
    "last_seen, recorded_at) SELECT tenant, subject, kind, kind_time, first_seen, "
    "last_seen, 0 FROM entities ORDER BY tenant, subject;\n"
    "DROP TABLE entities;\n",
    "CREATE INDEX entity_mentions_key ON entity_mentions "
    "(tenant, subject, recorded_at, kind_time, kind, first_seen, last_seen);\n"
    KEEL_SQ_VIEW_FACTS,
    KEEL_SQ_VIEW_RELATIONS,
    KEEL_SQ_VIEW_ENTITIES,
    NULL,
};

/* The views of keel_sqlite_step_event_source: as step 2's, with each
 * reference to an event in two columns, its source and its id
 * (asserted_by_source, asserted_by; closed_by_source, closed_by). */
#define KEEL_SQ_DERIVED_REFS(cols, key, table)                                          \
	"SELECT " cols ", valid_from, lead(valid_from) OVER w AS valid_to, "            \
	"asserted_by_source, asserted_by, lead(asserted_by_source) OVER w AS "          \
	"closed_by_source, lead(asserted_by) OVER w AS closed_by, seq, recorded_at "    \
	"FROM " table " WINDOW w AS (PARTITION BY " key                                 \
	" ORDER BY valid_from, recorded_at, seq)"

#define KEEL_SQ_ROW_TIMES_REFS                                                          \
	KEEL_SQ_T("valid_from")                                                         \
	" AS valid_from, " KEEL_SQ_T("valid_to") " AS valid_to, "                       \
	"asserted_by_source, asserted_by, closed_by_source, closed_by, seq, "           \
	KEEL_SQ_T("nullif(recorded_at, 0)") " AS recorded_at"

static const char *const keel_sqlite_step_event_source[] = {
    /* An event is (tenant, source, id) (docs/store-sqlite.md, "Events
     * by source"). The log gains each event's source, from its logged
     * envelope ("" when it has none, or none that is a string); the
     * rows gain their asserting event's, found by the ids that were
     * unique per tenant until now; event_ids is keyed by all three. */
    "ALTER TABLE events ADD COLUMN source TEXT NOT NULL DEFAULT '';\n"
    "UPDATE events SET source = json_extract(envelope, '$.source') "
    "WHERE json_type(envelope, '$.source') = 'text';\n"
    "ALTER TABLE fact_rows ADD COLUMN asserted_by_source TEXT NOT NULL DEFAULT '';\n"
    "UPDATE fact_rows SET asserted_by_source = (SELECT e.source FROM event_ids AS k "
    "JOIN events AS e ON e.seq = k.seq WHERE k.tenant = fact_rows.tenant AND "
    "k.id = fact_rows.asserted_by) WHERE EXISTS (SELECT 1 FROM event_ids AS k "
    "JOIN events AS e ON e.seq = k.seq WHERE k.tenant = fact_rows.tenant AND "
    "k.id = fact_rows.asserted_by AND e.source <> '');\n",
    "ALTER TABLE relation_rows ADD COLUMN asserted_by_source TEXT NOT NULL DEFAULT '';\n"
    "UPDATE relation_rows SET asserted_by_source = (SELECT e.source FROM event_ids AS k "
    "JOIN events AS e ON e.seq = k.seq WHERE k.tenant = relation_rows.tenant AND "
    "k.id = relation_rows.asserted_by) WHERE EXISTS (SELECT 1 FROM event_ids AS k "
    "JOIN events AS e ON e.seq = k.seq WHERE k.tenant = relation_rows.tenant AND "
    "k.id = relation_rows.asserted_by AND e.source <> '');\n",
    "CREATE TABLE event_ids_by_source (\n"
    "	tenant TEXT NOT NULL,\n"
    "	source TEXT NOT NULL,\n"
    "	id TEXT NOT NULL,\n"
    "	hash INTEGER NOT NULL,\n"
    "	seq INTEGER NOT NULL,\n"
    "	recorded_at INTEGER NOT NULL DEFAULT 0,\n"
    "	PRIMARY KEY (tenant, source, id)\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO event_ids_by_source (tenant, source, id, hash, seq, recorded_at) "
    "SELECT k.tenant, e.source, k.id, k.hash, k.seq, k.recorded_at FROM event_ids AS k "
    "JOIN events AS e ON e.seq = k.seq;\n"
    "DROP TABLE event_ids;\n"
    "ALTER TABLE event_ids_by_source RENAME TO event_ids;\n"
    "DROP VIEW facts;\n"
    "DROP VIEW relations;\n",
    "CREATE VIEW facts AS SELECT tenant, subject, predicate, value, "
    KEEL_SQ_ROW_TIMES_REFS " FROM ("
    KEEL_SQ_DERIVED_REFS("tenant, subject, predicate, value",
			 "tenant, subject, predicate", "fact_rows") ");\n",
    "CREATE VIEW relations AS SELECT tenant, subject, relation, object, "
    "linked, " KEEL_SQ_ROW_TIMES_REFS " FROM ("
    KEEL_SQ_DERIVED_REFS("tenant, subject, relation, object, linked",
			 "tenant, subject, relation, object", "relation_rows") ");\n",
    NULL,
};

static const char *const keel_sqlite_step_tombstones[] = {
    /* keel forget (docs/store-sqlite.md, "Forgetting"): one row per
     * forgotten subject of a tenant, naming it only by the SHA-256 of its
     * bytes (lowercase hex), with when, by whom and how much went. */
    "CREATE TABLE tombstones (\n"
    "	tenant TEXT NOT NULL,\n"
    "	subject_sha256 TEXT NOT NULL,\n"
    "	forgotten_at INTEGER NOT NULL,\n"
    "	forgotten_by TEXT NOT NULL,\n"
    "	events_redacted INTEGER NOT NULL,\n"
    "	rows_removed INTEGER NOT NULL,\n"
    "	PRIMARY KEY (tenant, subject_sha256)\n"
    ") WITHOUT ROWID;\n",
    NULL,
};

static const char *const keel_sqlite_step_tenant_cartridges[] = {
    /* Each tenant's recorded cartridge (docs/cartridges.md, "The
     * recorded cartridge"): name, version and content hash, and a JSON
     * cartridge's compacted text (NULL for a shared object), written with
     * the tenant's first events. A store migrated from an older schema
     * has no rows: each tenant records the cartridge its next ingestion
     * or replay names. */
    "CREATE TABLE tenant_cartridges (\n"
    "	tenant TEXT PRIMARY KEY,\n"
    "	name TEXT NOT NULL,\n"
    "	version TEXT NOT NULL,\n"
    "	hash TEXT NOT NULL,\n"
    "	text TEXT,\n"
    "	recorded_at INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n",
    NULL,
};

static const char *const keel_sqlite_step_find[] = {
    /* Finding things (docs/store-sqlite.md, "Finding"): keel entities
     * --kind ranges over the mentions that give a kind, keel search over
     * the assertions of a string value, both to the subject. Only what is
     * looked for costs an index entry: a mention without a kind has none,
     * and a fact whose value is not a JSON string (numbers and objects:
     * the telemetry, most rows) has none. string_value is that value, or
     * NULL; virtual, it takes no room in the rows. (Indexing every value
     * cost ingest a third more instructions, this a tenth; a partial
     * index on value itself SQLite 3.40 would range over instead of
     * seeking the value.) */
    "CREATE INDEX entity_mentions_kind ON entity_mentions (tenant, kind, subject) "
    "WHERE kind IS NOT NULL;\n"
    "ALTER TABLE fact_rows ADD COLUMN string_value TEXT GENERATED ALWAYS AS "
    "(CASE WHEN value >= '\"' AND value < '#' THEN value END) VIRTUAL;\n"
    "CREATE INDEX fact_rows_value ON fact_rows (tenant, predicate, string_value, "
    "subject) WHERE string_value IS NOT NULL;\n",
    NULL,
};

static const char *const keel_sqlite_step_ahead[] = {
    /* Rows ahead of their recording (valid_from > recorded_at: an event
     * that carries a time after the store's clock at its commit). A read
     * known at a moment K seeks every other row recorded by K at or
     * before K, and these few here (read.c, keel_sqlite_at_row).
     * Partial: a row recorded after its time, nearly every row, costs no
     * entry. */
    "CREATE INDEX fact_rows_ahead ON fact_rows "
    "(tenant, subject, predicate, valid_from, recorded_at) "
    "WHERE valid_from > recorded_at;\n"
    "CREATE INDEX relation_rows_ahead ON relation_rows "
    "(tenant, subject, relation, object, valid_from, recorded_at) "
    "WHERE valid_from > recorded_at;\n",
    NULL,
};

static const char *const keel_sqlite_step_current[] = {
    /* keel search at the present (docs/store-sqlite.md, "Current rows"):
     * derived data that readers fold from the rows, never written by an
     * ingest. fact_current holds each fact timeline's latest row in
     * (valid_from, recorded_at, seq) order among those whose value a
     * search can be answered from here (a string, an integer, true or
     * false) or that have none (an unset, not indexed); fact_horizon the
     * latest valid_from of each predicate of a tenant among the rows
     * folded, which says when fact_current answers a search at a time
     * alone; the meta row fact_current_seq the highest fact_rows.seq
     * folded. Empty here: the first search at the present folds every
     * row (current.c). */
    "CREATE TABLE fact_current (\n"
    "	tenant TEXT NOT NULL,\n"
    "	subject TEXT NOT NULL,\n"
    "	predicate TEXT NOT NULL,\n"
    "	value TEXT,\n"
    "	valid_from INTEGER NOT NULL,\n"
    "	recorded_at INTEGER NOT NULL,\n"
    "	seq INTEGER NOT NULL,\n"
    "	PRIMARY KEY (tenant, subject, predicate)\n"
    ") WITHOUT ROWID;\n"
    "CREATE INDEX fact_current_value ON fact_current (tenant, predicate, value, subject) "
    "WHERE value IS NOT NULL;\n"
    "CREATE TABLE fact_horizon (\n"
    "	tenant TEXT NOT NULL,\n"
    "	predicate TEXT NOT NULL,\n"
    "	valid_from INTEGER NOT NULL,\n"
    "	PRIMARY KEY (tenant, predicate)\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO meta (key, value) VALUES ('fact_current_seq', 0);\n",
    NULL,
};

static const char *const keel_sqlite_step_spans[] = {
    /* keel search in the past (docs/store-sqlite.md, "Spans"): derived
     * data folded with the current rows (spans.c). An R*Tree of
     * each searchable fact row's span [valid_from, valid_to) under a
     * 24-bit key of (tenant, predicate, value). The fold starts again
     * from the first row, so that the spans and the current rows are
     * folded from the same rows: the next search folds everything. */
    "CREATE VIRTUAL TABLE fact_spans USING rtree(seq, key_lo, key_hi, valid_from, "
    "valid_to);\n"
    "DELETE FROM fact_current;\n"
    "DELETE FROM fact_horizon;\n"
    "UPDATE meta SET value = 0 WHERE key = 'fact_current_seq';\n",
    NULL,
};

/*
 * The views of keel_sqlite_step_views_sort (docs/store-sqlite.md, "Views
 * for SQL tools"): the same columns and rows as the MySQL and PostgreSQL
 * stores' views. Each time twice: X, integer microseconds since the epoch,
 * and X_text, RFC 3339 of fixed width (six fraction digits, always, and
 * Z; years 0001-9999), so that text compares as the time does. A fact's
 * value twice: value, its JSON text, and value_text, the string itself
 * when it is a JSON string (escapes undone), NULL otherwise. A string
 * holding U+0000 has no value_text on any store (PostgreSQL's text cannot
 * hold it, and json_extract stops at it): it is the one whose JSON text,
 * once each escaped backslash is taken out, still holds the escape \u0000.
 */
#define KEEL_SQ_TEXT(x)                                                                 \
	"strftime('%Y-%m-%dT%H:%M:%S', (" x " - ((" x " % 1000000) + 1000000) % "       \
	"1000000) / 1000000, 'unixepoch') || printf('.%06d', ((" x " % 1000000) + "     \
	"1000000) % 1000000) || 'Z'"

#define KEEL_SQ_VALUE_TEXT                                                              \
	"CASE WHEN substr(value, 1, 1) = '\"' AND instr(replace(value, '\\\\', ''), "   \
	"'\\u0000') = 0 THEN json_extract(value, '$') END"

#define KEEL_SQ_ROW_TIMES_SORT                                                          \
	"valid_from, " KEEL_SQ_TEXT("valid_from") " AS valid_from_text, valid_to, "     \
	KEEL_SQ_TEXT("valid_to") " AS valid_to_text, asserted_by_source, asserted_by, " \
	"closed_by_source, closed_by, recorded_at, " KEEL_SQ_TEXT("recorded_at")        \
	" AS recorded_at_text"

static const char *const keel_sqlite_step_views_sort[] = {
    /* The views show times that sort (above); recorded_at is what is
     * stored, 0 for what was recorded before Keel kept the time. */
    "DROP VIEW facts;\n"
    "DROP VIEW relations;\n"
    "DROP VIEW entities;\n",
    "CREATE VIEW facts AS SELECT seq, tenant, subject, predicate, value, "
    KEEL_SQ_VALUE_TEXT " AS value_text, " KEEL_SQ_ROW_TIMES_SORT " FROM ("
    KEEL_SQ_DERIVED_REFS("tenant, subject, predicate, value",
			 "tenant, subject, predicate", "fact_rows") ");\n",
    "CREATE VIEW relations AS SELECT seq, tenant, subject, relation, object, "
    "linked, " KEEL_SQ_ROW_TIMES_SORT " FROM ("
    KEEL_SQ_DERIVED_REFS("tenant, subject, relation, object, linked",
			 "tenant, subject, relation, object", "relation_rows") ");\n",
    "CREATE VIEW entities AS SELECT tenant, subject, "
    "(SELECT k.kind FROM entity_mentions AS k WHERE k.tenant = m.tenant "
    "AND k.subject = m.subject AND k.kind IS NOT NULL "
    "ORDER BY k.kind_time, k.seq DESC LIMIT 1) AS kind, "
    "min(first_seen) AS first_seen, " KEEL_SQ_TEXT("min(first_seen)")
    " AS first_seen_text, max(last_seen) AS last_seen, " KEEL_SQ_TEXT("max(last_seen)")
    " AS last_seen_text, max(recorded_at) AS recorded_at, "
    KEEL_SQ_TEXT("max(recorded_at)") " AS recorded_at_text "
    "FROM entity_mentions AS m GROUP BY tenant, subject;\n",
    NULL,
};

static const char *const keel_sqlite_step_shared_cartridges[] = {
    /* Each distinct cartridge once (docs/store-sqlite.md, "Recorded
     * cartridges"): until here tenant_cartridges held the cartridge's
     * whole text once per tenant (188 MB of a 20 000-tenant store of
     * 200 000 events). cartridges holds name, version and text under
     * the content hash, which determines them (a JSON cartridge's hash
     * is that of its compacted text, a shared object's that of its
     * file); tenant_cartridges keeps what is the tenant's own, the hash
     * and when it was recorded. Rebuilt in one copy rather than three
     * ALTER TABLE ... DROP COLUMN, each of which rewrites the table. */
    "CREATE TABLE cartridges (\n"
    "	hash TEXT PRIMARY KEY,\n"
    "	name TEXT NOT NULL,\n"
    "	version TEXT NOT NULL,\n"
    "	text TEXT\n"
    ");\n"
    "INSERT OR IGNORE INTO cartridges (hash, name, version, text) "
    "SELECT hash, name, version, text FROM tenant_cartridges ORDER BY tenant;\n"
    "CREATE TABLE tenant_cartridges_by_hash (\n"
    "	tenant TEXT PRIMARY KEY,\n"
    "	hash TEXT NOT NULL,\n"
    "	recorded_at INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO tenant_cartridges_by_hash (tenant, hash, recorded_at) "
    "SELECT tenant, hash, recorded_at FROM tenant_cartridges;\n"
    "DROP TABLE tenant_cartridges;\n"
    "ALTER TABLE tenant_cartridges_by_hash RENAME TO tenant_cartridges;\n",
    NULL,
};

/*
 * Names as integers (docs/store-sqlite.md, "Names"). The fact and
 * relation rows name their tenant, predicate or relation, and the source
 * of their asserting event by an integer, the id of that text in names,
 * where each distinct text is once (shared by every tenant and every kind
 * of name). These are the names a row's keys begin with and repeat
 * millions of times; a read gives them as equalities, so that an id
 * serves every lookup. Subjects and objects stay text: the dump, keel
 * entities and keel search walk them in bytewise order, which ids do not
 * have. The event's id stays text too: nearly every event has its own,
 * and a name per event would cost the names table more than the rows
 * save. The views show the same columns and rows as before, the names
 * joined back.
 */
#define KEEL_SQ_FACT_TEXT                                                               \
	"(SELECT r.seq AS seq, t.name AS tenant, r.subject AS subject, p.name AS "      \
	"predicate, r.value AS value, r.valid_from AS valid_from, r.asserted_by AS "    \
	"asserted_by, r.recorded_at AS recorded_at, s.name AS asserted_by_source FROM " \
	"fact_rows AS r JOIN names AS t ON t.id = r.tenant JOIN names AS p ON p.id = "  \
	"r.predicate JOIN names AS s ON s.id = r.asserted_by_source)"

#define KEEL_SQ_RELATION_TEXT                                                           \
	"(SELECT r.seq AS seq, t.name AS tenant, r.subject AS subject, p.name AS "      \
	"relation, r.object AS object, r.linked AS linked, r.valid_from AS valid_from, " \
	"r.asserted_by AS asserted_by, r.recorded_at AS recorded_at, s.name AS "        \
	"asserted_by_source FROM relation_rows AS r JOIN names AS t ON t.id = r.tenant " \
	"JOIN names AS p ON p.id = r.relation JOIN names AS s ON s.id = "               \
	"r.asserted_by_source)"

static const char *const keel_sqlite_step_names[] = {
    "CREATE TABLE names (\n"
    "	id INTEGER PRIMARY KEY,\n"
    "	name TEXT NOT NULL UNIQUE\n"
    ");\n"
    "INSERT OR IGNORE INTO names (name) SELECT DISTINCT tenant FROM fact_rows;\n"
    "INSERT OR IGNORE INTO names (name) SELECT DISTINCT predicate FROM fact_rows;\n"
    "INSERT OR IGNORE INTO names (name) SELECT DISTINCT asserted_by_source FROM fact_rows;\n"
    "INSERT OR IGNORE INTO names (name) SELECT DISTINCT tenant FROM relation_rows;\n"
    "INSERT OR IGNORE INTO names (name) SELECT DISTINCT relation FROM relation_rows;\n"
    "INSERT OR IGNORE INTO names (name) SELECT DISTINCT asserted_by_source FROM "
    "relation_rows;\n"
    "DROP VIEW facts;\n"
    "DROP VIEW relations;\n",
    /* fact_rows again, over ids, in seq order (as an ingest writes it);
     * its indexes are made once the rows are in, each in one sort */
    "CREATE TABLE fact_rows_by_id (\n"
    "	seq INTEGER PRIMARY KEY,\n"
    "	tenant INTEGER NOT NULL,\n"
    "	subject TEXT NOT NULL,\n"
    "	predicate INTEGER NOT NULL,\n"
    "	value TEXT,\n"
    "	valid_from INTEGER NOT NULL,\n"
    "	asserted_by TEXT NOT NULL,\n"
    "	recorded_at INTEGER NOT NULL,\n"
    "	asserted_by_source INTEGER NOT NULL,\n"
    "	string_value TEXT GENERATED ALWAYS AS "
    "(CASE WHEN value >= '\"' AND value < '#' THEN value END) VIRTUAL\n"
    ");\n"
    "INSERT INTO fact_rows_by_id (seq, tenant, subject, predicate, value, valid_from, "
    "asserted_by, recorded_at, asserted_by_source) SELECT r.seq, t.id, r.subject, "
    "p.id, r.value, r.valid_from, r.asserted_by, r.recorded_at, s.id FROM fact_rows "
    "AS r JOIN names AS t ON t.name = r.tenant JOIN names AS p ON p.name = "
    "r.predicate JOIN names AS s ON s.name = r.asserted_by_source ORDER BY r.seq;\n"
    "DROP TABLE fact_rows;\n"
    "ALTER TABLE fact_rows_by_id RENAME TO fact_rows;\n",
    "CREATE INDEX fact_rows_key ON fact_rows "
    "(tenant, subject, predicate, valid_from, recorded_at);\n",
    "CREATE INDEX fact_rows_value ON fact_rows (tenant, predicate, string_value, "
    "subject) WHERE string_value IS NOT NULL;\n"
    "CREATE INDEX fact_rows_ahead ON fact_rows "
    "(tenant, subject, predicate, valid_from, recorded_at) "
    "WHERE valid_from > recorded_at;\n",
    "CREATE TABLE relation_rows_by_id (\n"
    "	seq INTEGER PRIMARY KEY,\n"
    "	tenant INTEGER NOT NULL,\n"
    "	subject TEXT NOT NULL,\n"
    "	relation INTEGER NOT NULL,\n"
    "	object TEXT NOT NULL,\n"
    "	linked INTEGER NOT NULL,\n"
    "	valid_from INTEGER NOT NULL,\n"
    "	asserted_by TEXT NOT NULL,\n"
    "	recorded_at INTEGER NOT NULL,\n"
    "	asserted_by_source INTEGER NOT NULL\n"
    ");\n"
    "INSERT INTO relation_rows_by_id (seq, tenant, subject, relation, object, linked, "
    "valid_from, asserted_by, recorded_at, asserted_by_source) SELECT r.seq, t.id, "
    "r.subject, p.id, r.object, r.linked, r.valid_from, r.asserted_by, r.recorded_at, "
    "s.id FROM relation_rows AS r JOIN names AS t ON t.name = r.tenant JOIN names AS "
    "p ON p.name = r.relation JOIN names AS s ON s.name = r.asserted_by_source ORDER "
    "BY r.seq;\n"
    "DROP TABLE relation_rows;\n"
    "ALTER TABLE relation_rows_by_id RENAME TO relation_rows;\n",
    "CREATE INDEX relation_rows_key ON relation_rows "
    "(tenant, subject, relation, object, valid_from, recorded_at);\n"
    "CREATE INDEX relation_rows_object ON relation_rows "
    "(tenant, object, relation, subject, valid_from, recorded_at);\n"
    "CREATE INDEX relation_rows_ahead ON relation_rows "
    "(tenant, subject, relation, object, valid_from, recorded_at) "
    "WHERE valid_from > recorded_at;\n",
    "CREATE VIEW facts AS SELECT seq, tenant, subject, predicate, value, "
    KEEL_SQ_VALUE_TEXT " AS value_text, " KEEL_SQ_ROW_TIMES_SORT " FROM ("
    KEEL_SQ_DERIVED_REFS("tenant, subject, predicate, value",
			 "tenant, subject, predicate", KEEL_SQ_FACT_TEXT) ");\n",
    "CREATE VIEW relations AS SELECT seq, tenant, subject, relation, object, "
    "linked, " KEEL_SQ_ROW_TIMES_SORT " FROM ("
    KEEL_SQ_DERIVED_REFS("tenant, subject, relation, object, linked",
			 "tenant, subject, relation, object", KEEL_SQ_RELATION_TEXT) ");\n",
    NULL,
};

/* Migration i takes a database from schema version i to i + 1. */
static const char *const *const keel_sqlite_migrations[] = {
    keel_sqlite_step1, keel_sqlite_step2, keel_sqlite_step_event_source,
    keel_sqlite_step_tombstones, keel_sqlite_step_tenant_cartridges,
    keel_sqlite_step_find, keel_sqlite_step_ahead, keel_sqlite_step_current,
    keel_sqlite_step_spans, keel_sqlite_step_views_sort,
    keel_sqlite_step_shared_cartridges, keel_sqlite_step_names};
#define KEEL_SQLITE_SCHEMA_VERSION ((int64_t)KEEL_ARRAY_LEN(keel_sqlite_migrations))

/* -------------------------------------------------------------- schema */

/* Reads the schema version: 0 for an empty database. */
static int keel_sqlite_read_version(struct keel_sqlite_store *s, int64_t *version)
{
	sqlite3_stmt *st;
	/* Every object, not only tables: a file holding only another
	 * application's views or triggers is not empty either. SQLite's own
	 * tables (sqlite_sequence, sqlite_stat1) are made for any schema. */
	static const char objects[] =
	    "SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' "
	    "ESCAPE '\\' ORDER BY type = 'table' DESC, name";
	int rc = keel_sqlite_prepare(s, objects, sizeof objects - 1, &st);
	if (rc)
		return rc;
	s->base.statements++;
	bool meta = false;
	char *other = NULL;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);
		if (name && type && !strcmp(type, "table") && !strcmp(name, "meta"))
			meta = true;
		else if (name && type && !other) {
			struct keel_buf what;
			keel_buf_init(&what);
			keel_buf_addf(&what, "%s \"%s\"", type, name);
			other = what.data;
		}
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
					    "%s and no meta table)",
					    s->base.url, other);
			free(other);
			return rc;
		}
		return 0;
	}
	free(other);

	static const char get[] = "SELECT value FROM meta WHERE key = 'schema_version'";
	if (sqlite3_prepare_v2(s->db, get, (int)sizeof get - 1, &st, NULL) != SQLITE_OK) {
		/* Another application's meta table (Keel's has always had
		 * these columns), or a read error. */
		if (sqlite3_errcode(s->db) != SQLITE_ERROR)
			return keel_sqlite_fail(s);
		return keel_store_fail(&s->base, KEEL_ESCHEMA,
				       "store \"%s\": not a keel database (its meta table "
				       "has no key and value columns)",
				       s->base.url);
	}
	s->base.statements++;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER &&
	    sqlite3_column_int64(st, 0) < 0) {
		rc = keel_store_fail(&s->base, KEEL_ESCHEMA,
				     "store \"%s\": the meta table holds an invalid schema "
				     "version %lld",
				     s->base.url, (long long)sqlite3_column_int64(st, 0));
	} else if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER) {
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
	    "supports (%lld): upgrade keel",
	    s->base.url, (long long)version, (long long)KEEL_SQLITE_SCHEMA_VERSION);
}

int keel_sqlite_exec(struct keel_sqlite_store *s, const char *sql)
{
	s->base.statements++;
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return keel_sqlite_fail(s);
	return 0;
}

/* Refuses a file this Keel must not write: another application's
 * database, or a store of a newer schema. It only reads, so it runs before
 * anything that writes to the file (the journal_mode pragma rewrites the
 * header of a file in rollback-journal mode). */
int keel_sqlite_check_schema(struct keel_sqlite_store *s)
{
	int64_t version;
	int rc = keel_sqlite_read_version(s, &version);
	if (rc && sqlite3_extended_errcode(s->db) == SQLITE_READONLY_DIRECTORY)
		/* A read that SQLite reports as a write: say which. */
		return keel_store_fail(&s->base, KEEL_ESTORE,
				       "sqlite \"%s\": cannot read it: its directory cannot be "
				       "written, and SQLite makes the store's -shm and -wal "
				       "files there (%s)",
				       s->path, sqlite3_errmsg(s->db));
	if (rc)
		return rc;
	if (version > KEEL_SQLITE_SCHEMA_VERSION)
		return keel_sqlite_newer(s, version);
	return 0;
}

/* Says which part of which step runs now (keel_store_migrating): the
 * first statement of the SQL text up to its first parenthesis or line, a
 * step's parts being a handful of long statements (a table copied, an
 * index built). */
static void keel_sqlite_migrating(struct keel_sqlite_store *s, int64_t version,
				  const char *const *sql)
{
	const char *const *first = keel_sqlite_migrations[version];
	size_t parts = 0;
	while (first[parts])
		parts++;
	const char *text = *sql;
	while (*text == ' ' || *text == '\n')
		text++;
	size_t n = strcspn(text, "(\n;");
	while (n && text[n - 1] == ' ')
		n--;
	if (n > 60)
		n = 60;
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_addf(&b, "%s: schema %d to %lld, step %lld, part %zu of %zu: %.*s",
		      s->base.url, s->schema_was, (long long)KEEL_SQLITE_SCHEMA_VERSION,
		      (long long)version + 1, (size_t)(sql - first) + 1, parts, (int)n, text);
	keel_store_migrating(b.data);
	keel_buf_free(&b);
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
	s->schema_was = s->schema_now = (int)version;
	if (version == KEEL_SQLITE_SCHEMA_VERSION)
		return 0;
	if (version > KEEL_SQLITE_SCHEMA_VERSION)
		return keel_sqlite_newer(s, version);
	/* Said plainly, rather than SQLite's "attempt to write a readonly
	 * database" from a command that only meant to read. */
	if (sqlite3_db_readonly(s->db, "main") == 1)
		return keel_store_fail(&s->base, KEEL_ESTORE,
				       "store \"%s\": needs migrating from schema %lld to "
				       "%lld, but the file is read-only",
				       s->base.url, (long long)version,
				       (long long)KEEL_SQLITE_SCHEMA_VERSION);
	/* A step that builds an index over every row sorts them all: in
	 * temporary files, not in memory (temp_store = MEMORY, the store's
	 * setting, held the million-event store's index sorts at 420 MB). */
	if ((rc = keel_sqlite_exec(s, "PRAGMA temp_store = FILE")) ||
	    (rc = keel_sqlite_exec(s, "BEGIN IMMEDIATE")))
		goto done;
	if ((rc = keel_sqlite_read_version(s, &version)))
		goto fail;
	if (version > KEEL_SQLITE_SCHEMA_VERSION) {
		rc = keel_sqlite_newer(s, version);
		goto fail;
	}
	s->schema_was = (int)version;
	for (; version < KEEL_SQLITE_SCHEMA_VERSION; version++)
		for (const char *const *sql = keel_sqlite_migrations[version]; *sql; sql++) {
			keel_sqlite_migrating(s, version, sql);
			if ((rc = keel_sqlite_exec(s, *sql)))
				goto fail;
		}
	sqlite3_stmt *st;
	static const char set[] =
	    "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
	    "ON CONFLICT (key) DO UPDATE SET value = excluded.value";
	if ((rc = keel_sqlite_prepare(s, set, sizeof set - 1, &st)))
		goto fail;
	keel_sqlite_bind_i64(s, st, 1, KEEL_SQLITE_SCHEMA_VERSION);
	rc = keel_sqlite_run(s, st);
	sqlite3_finalize(st);
	if (rc || (rc = keel_sqlite_exec(s, "COMMIT")))
		goto fail;
	s->schema_now = (int)KEEL_SQLITE_SCHEMA_VERSION;
	goto done;
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
done:
	sqlite3_exec(s->db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);
	return rc;
}

/* For tests (internal.h). */
int keel_store_sqlite_schema_version(void)
{
	return (int)KEEL_SQLITE_SCHEMA_VERSION;
}

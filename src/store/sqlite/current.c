/*
 * current.c - the current rows keel search reads at the present
 * (docs/store-sqlite.md, "Current rows"): derived data, folded from the
 * fact rows by the readers that need them, never by an ingest.
 *
 *   fact_current      one row per fact timeline (tenant, subject,
 *                     predicate): its latest row in (valid_from,
 *                     recorded_at, seq) order among the rows folded whose
 *                     value a search can be answered from here (a string,
 *                     an integer, true or false) or that have none (an
 *                     unset), with valid_from, recorded_at and seq. The
 *                     partial index fact_current_value (tenant, predicate,
 *                     value, subject) holds those with a value.
 *   fact_horizon      per (tenant, predicate): the latest valid_from of
 *                     the rows folded
 *   fact_current_seq  (a meta row) the watermark: the highest
 *                     fact_rows.seq folded
 *
 * Why readers and not the write path: rows are written once and an
 * ingest reads nothing but the event ids it looks up (docs/stores.md);
 * keeping these tables with every batch cost ingest a quarter more CPU
 * and made it read and update stored state. seq is fact_rows' rowid and
 * every batch numbers its rows after the last, so the rows not folded yet
 * are one rowid range, seq > watermark: a fold reads only those.
 *
 * The fold runs in write transactions (BEGIN IMMEDIATE), where it reads
 * the watermark again: two readers that both found rows to fold fold them
 * once, the second finding nothing left. Of the new rows (at most
 * KEEL_SQLITE_FOLD_SEQS seqs a transaction) it keeps each timeline's
 * latest and upserts it where it comes after the timeline's current row
 * (a late row, older than the current one, leaves it), raises the
 * horizons to the new rows' latest valid_from, and moves the watermark to
 * the highest seq it read. Folding seq ranges one after the other gives
 * what one fold of them all gives: the latest row and the largest
 * valid_from do not depend on the order they are met in.
 *
 * A search for such a value at a time at or after the predicate's horizon
 * (not as known at a moment) is then answered by fact_current alone:
 * every timeline's latest row began by then and holds from then on, so
 * the subjects that hold the value are those whose current row has it.
 *
 * Numbers with a fraction, objects and arrays are left out: they are the
 * telemetry a stream is mostly made of (positions, odometers, fuel), are
 * not looked up by exact value, and a fold that skips them upserts a
 * quarter of the rows (every upsert dirties a page of fact_current). A
 * timeline whose latest row is one of them keeps an older current row:
 * a candidate that src/read/find.c's ordinary read rejects, never an answer,
 * and no holder is missed, since a holder's latest row has the value.
 * keel serve's writer also folds, a few thousand seqs a step, while no
 * POST waits (the store's fold op, keel_sqlite_fold_some; docs/http.md).
 * A handle that cannot fold (the file is read-only, another connection
 * holds the write lock, or the handle is inside its own transaction)
 * does not wait: its search walks the history as any other search does.
 *
 * Whatever deletes fact rows keeps the fold right in its own transaction
 * (keel_sqlite_current_drop): the current rows and horizons of what it
 * deleted go, and the watermark comes down to the highest seq left, since
 * fact_rows.seq is a rowid without AUTOINCREMENT and the next rows would
 * otherwise take seqs at or below it and never be folded. A batch rolled
 * back to its savepoint deletes only rows of its own transaction, which
 * no fold has seen (a fold needs the write lock that transaction holds).
 */
#include "parts.h"

/* The values fact_current keeps, of the column x (compact JSON text):
 * what keel_sqlite_searchable says of a search's value. */
#define KEEL_SQ_SEARCHABLE(x)                                                           \
	"(substr(" x ", 1, 1) = '\"' OR " x " IN ('true', 'false') OR " x               \
	" NOT GLOB '*[^0-9-]*')"

bool keel_sqlite_searchable(struct keel_str v)
{
	if (v.len && v.ptr[0] == '"')
		return true;
	if (keel_str_eq(v, keel_str_cstr("true")) || keel_str_eq(v, keel_str_cstr("false")))
		return true;
	for (size_t i = 0; i < v.len; i++)
		if (!((v.ptr[i] >= '0' && v.ptr[i] <= '9') || v.ptr[i] == '-'))
			return false;
	return v.len > 0;
}

static const char *const keel_sqlite_current_sql[KEEL_SC_N] = {
    [KEEL_SC_CHECK] = "SELECT (SELECT value FROM meta WHERE key = 'fact_current_seq'), "
		      "(SELECT max(seq) FROM fact_rows)",
    /* Each timeline's latest new row, by a window over the rowid range
     * (NOT INDEXED: SQLite would rather walk all of fact_rows_key, in the
     * window's order, than sort the few new rows). */
    [KEEL_SC_FOLD] =
	"INSERT INTO fact_current (tenant, subject, predicate, value, valid_from, "
	"recorded_at, seq) SELECT " KEEL_SQ_NAME("tenant") ", subject, "
	KEEL_SQ_NAME("predicate") ", value, valid_from, recorded_at, seq FROM (SELECT tenant, subject, predicate, value, valid_from, "
	"recorded_at, seq, row_number() OVER (PARTITION BY tenant, subject, predicate "
	"ORDER BY valid_from DESC, recorded_at DESC, seq DESC) AS n FROM fact_rows NOT "
	"INDEXED WHERE seq > ?1 AND seq <= ?2 AND (value IS NULL OR "
	KEEL_SQ_SEARCHABLE("value") ")) WHERE n = 1 ON CONFLICT (tenant, subject, "
	"predicate) DO UPDATE SET value = excluded.value, valid_from = "
	"excluded.valid_from, recorded_at = excluded.recorded_at, seq = excluded.seq "
	"WHERE (excluded.valid_from, excluded.recorded_at, excluded.seq) > "
	"(fact_current.valid_from, fact_current.recorded_at, fact_current.seq)",
    [KEEL_SC_HORIZONS] =
	"INSERT INTO fact_horizon (tenant, predicate, valid_from) SELECT "
	KEEL_SQ_NAME("fact_rows.tenant") ", " KEEL_SQ_NAME("fact_rows.predicate")
	", max(valid_from) FROM fact_rows NOT INDEXED WHERE seq > ?1 AND "
	"seq <= ?2 GROUP BY fact_rows.tenant, fact_rows.predicate ON CONFLICT (tenant, predicate) DO "
	"UPDATE SET valid_from = excluded.valid_from WHERE excluded.valid_from > "
	"fact_horizon.valid_from",
    [KEEL_SC_MARK] = "UPDATE meta SET value = ?1 WHERE key = 'fact_current_seq'",
    [KEEL_SC_LOWER] = "UPDATE meta SET value = min(value, coalesce((SELECT max(seq) "
		      "FROM fact_rows), 0)) WHERE key = 'fact_current_seq'",
    [KEEL_SC_HORIZON] =
	"SELECT valid_from FROM fact_horizon WHERE tenant = ?1 AND predicate = ?2",
    /* spans.c: the rows the spans know are those fact_current
     * would keep */
    [KEEL_SC_SPAN_NEW] =
	"SELECT seq, " KEEL_SQ_NAME("fact_rows.tenant") ", subject, "
	KEEL_SQ_NAME("fact_rows.predicate") ", value, valid_from, recorded_at FROM "
	"fact_rows NOT INDEXED WHERE seq > ?1 AND seq <= ?2 AND (value IS NULL OR "
	KEEL_SQ_SEARCHABLE("value") ") ORDER BY fact_rows.tenant, subject, "
	"fact_rows.predicate, valid_from, recorded_at, seq",
    [KEEL_SC_SPAN_CURRENT] = "SELECT valid_from, recorded_at, seq, value FROM fact_current "
			     "WHERE tenant = ?1 AND subject = ?2 AND predicate = ?3",
    [KEEL_SC_SPAN_BEFORE] =
	"SELECT valid_from, recorded_at, seq FROM fact_rows INDEXED BY fact_rows_key WHERE "
	"tenant = " KEEL_SQ_ID("?1") " AND subject = ?2 AND predicate = " KEEL_SQ_ID("?3")
	" AND seq <= ?4 AND (value IS NULL "
	"OR " KEEL_SQ_SEARCHABLE("value") ") AND (valid_from, recorded_at, seq) < (?5, ?6, "
	"?7) ORDER BY valid_from DESC, recorded_at DESC, seq DESC LIMIT 1",
    [KEEL_SC_SPAN_FROM] =
	"SELECT seq, value, valid_from FROM fact_rows INDEXED BY fact_rows_key WHERE "
	"tenant = " KEEL_SQ_ID("?1") " AND subject = ?2 AND predicate = " KEEL_SQ_ID("?3")
	" AND seq <= ?4 AND (value IS NULL "
	"OR " KEEL_SQ_SEARCHABLE("value") ") AND (valid_from, recorded_at, seq) >= (?5, "
	"?6, ?7) ORDER BY valid_from, recorded_at, seq",
    [KEEL_SC_SPAN_PUT] = "INSERT OR REPLACE INTO fact_spans (seq, key_lo, key_hi, "
			 "valid_from, valid_to) VALUES (?1, ?2, ?2, ?3, ?4)",
    [KEEL_SC_SPAN_DROP] =
	"DELETE FROM fact_spans WHERE seq IN (SELECT seq FROM fact_rows WHERE tenant = "
	KEEL_SQ_ID("?1") " AND (?2 IS NULL OR predicate = " KEEL_SQ_ID("?2") ") AND seq <= (SELECT value FROM meta WHERE key "
	"= 'fact_current_seq'))",
    /* valid_to >= ?2, not >: the R*Tree reads ?2 as a double, which
     * steps by more than a microsecond beyond 2^53 (spans.c) */
    [KEEL_SC_SPAN_COUNT] = "SELECT count(*) FROM (SELECT 1 FROM fact_spans WHERE key_lo <= ?1 "
			   "AND key_hi >= ?1 AND valid_from <= ?2 AND valid_to >= ?2 LIMIT ?3)",
};

int keel_sqlite_current_stmt(struct keel_sqlite_store *s, enum keel_sqlite_current c,
			     sqlite3_stmt **out)
{
	int rc = keel_sqlite_fixed_stmt(s, &s->current[c], keel_sqlite_current_sql[c]);
	*out = s->current[c];
	return rc;
}

/* Deletes the current rows or horizons (table) of the tenant, or of its
 * predicates the scope names. */
int keel_sqlite_per_predicate(struct keel_sqlite_store *s, sqlite3_stmt *st,
			      struct keel_str tenant, const struct keel_replace_scope *scope)
{
	int rc = 0;
	size_t n = scope ? scope->nnames[KEEL_ROW_FACT] : 1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		keel_sqlite_bind_str(s, st, 1, tenant);
		keel_sqlite_bind_str(s, st, 2,
				     scope ? scope->names[KEEL_ROW_FACT][i] : KEEL_STR_NULL);
		rc = keel_sqlite_run(s, st);
	}
	return rc;
}

static int keel_sqlite_current_delete(struct keel_sqlite_store *s, const char *table,
				      struct keel_str tenant,
				      const struct keel_replace_scope *scope)
{
	struct keel_buf sql;
	keel_buf_init(&sql);
	keel_buf_addf(&sql, "DELETE FROM %s WHERE tenant = ?1 AND (?2 IS NULL OR predicate = ?2)",
		      table);
	sqlite3_stmt *st;
	int rc = keel_sqlite_prepare(s, sql.data, sql.len, &st);
	keel_buf_free(&sql);
	if (rc)
		return rc;
	rc = keel_sqlite_per_predicate(s, st, tenant, scope);
	sqlite3_finalize(st);
	return rc;
}

int keel_sqlite_current_drop(struct keel_sqlite_store *s, struct keel_str tenant,
			     const struct keel_replace_scope *scope)
{
	if (scope && !scope->nnames[KEEL_ROW_FACT])
		return 0;
	int rc;
	if ((rc = keel_sqlite_current_delete(s, "fact_current", tenant, scope)) ||
	    (rc = keel_sqlite_current_delete(s, "fact_horizon", tenant, scope)))
		return rc;
	sqlite3_stmt *st;
	if ((rc = keel_sqlite_current_stmt(s, KEEL_SC_LOWER, &st)))
		return rc;
	return keel_sqlite_run(s, st);
}

int keel_sqlite_horizon(struct keel_sqlite_store *s, struct keel_str tenant,
			struct keel_str predicate, bool *found, int64_t *out)
{
	sqlite3_stmt *st;
	int rc = keel_sqlite_current_stmt(s, KEEL_SC_HORIZON, &st);
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, st, 1, tenant);
	keel_sqlite_bind_str(s, st, 2, predicate);
	return keel_sqlite_ints(s, st, found, out, 1);
}

/*
 * forget.c - keel forget on PostgreSQL (docs/store-postgres.md,
 * "Forgetting"): the redacted envelopes written over the logged ones and
 * the tombstone, in the forget's transaction. What the server keeps of the
 * old bytes outside the live rows (dead tuples until VACUUM, the WAL and
 * its archive, replicas, backups) is the operator's to manage; the docs
 * say so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

int keel_pg_forget(struct keel_store *s, struct keel_str tenant,
		   const struct keel_redaction *r, size_t n,
		   const struct keel_tombstone *t)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	int rc = keel_pg_tx(g);
	if (rc)
		return rc;
	g->tx_writes = true;
	/* The hash column keeps the received envelope's hash: a redelivery
	 * is a plain duplicate. */
	struct keel_pg_params p;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		keel_pg_params_init(&p);
		keel_pg_param_str(&p, r[i].envelope);
		keel_pg_param_str(&p, tenant);
		keel_pg_param_i64(&p, r[i].seq);
		rc = keel_pg_exec(
		    g,
		    "UPDATE keel_events SET envelope = $1 WHERE tenant = $2 AND "
		    "seq = $3",
		    &p, "redacting an event", NULL);
	}
	if (rc || !t)
		return rc;
	keel_pg_params_init(&p);
	keel_pg_param_str(&p, t->tenant);
	keel_pg_param_str(&p, keel_str_cstr(t->subject_hash));
	keel_pg_param_i64(&p, t->forgotten_at);
	keel_pg_param_str(&p, t->forgotten_by);
	keel_pg_param_i64(&p, (int64_t)t->events);
	keel_pg_param_i64(&p, (int64_t)t->rows);
	return keel_pg_exec(
	    g,
	    "INSERT INTO keel_tombstones (tenant, subject_sha256, forgotten_at, "
	    "forgotten_by, events_redacted, rows_removed) VALUES ($1, $2, $3, $4, "
	    "$5, $6) ON CONFLICT (tenant, subject_sha256) DO UPDATE SET "
	    "forgotten_at = EXCLUDED.forgotten_at, forgotten_by = "
	    "EXCLUDED.forgotten_by, events_redacted = EXCLUDED.events_redacted, "
	    "rows_removed = EXCLUDED.rows_removed",
	    &p, "writing the tombstone", NULL);
}

/* ----------------------------------------- forgetting without a rebuild */

/* The tenant's predicates, one seek each through keel_facts_value (a
 * skip-scan), as p(x): a fact naming the subject as its value ($3) is
 * then one seek per predicate, not a scan of the tenant's rows. */
#define KEEL_PG_PREDICATES                                                              \
	"WITH RECURSIVE p(x) AS (SELECT min(predicate) FROM keel_fact_rows WHERE "     \
	"tenant = $1 UNION ALL SELECT (SELECT min(predicate) FROM keel_fact_rows "      \
	"WHERE tenant = $1 AND predicate > p.x) FROM p WHERE p.x IS NOT NULL) "
#define KEEL_PG_VALUE_ROWS                                                              \
	"SELECT r.seq FROM p JOIN keel_fact_rows AS r ON r.tenant = $1 AND r.predicate " \
	"= p.x AND left(r.value, 200) = left($3, 200) AND r.value = $3"
#define KEEL_PG_ASSERTER(table, where)                                                  \
	"SELECT k.seq FROM " table " AS r JOIN keel_events AS k ON k.tenant = r.tenant " \
	"AND k.source = r.asserted_by_source AND k.id = r.asserted_by WHERE " where

/* types as a PostgreSQL array literal, {"a","b"}: one parameter however
 * many types a cartridge has. */
static void keel_pg_text_array(struct keel_buf *b, const struct keel_str *types, size_t n)
{
	keel_buf_addc(b, '{');
	for (size_t i = 0; i < n; i++) {
		keel_buf_adds(b, i ? ",\"" : "\"");
		for (size_t k = 0; k < types[i].len; k++) {
			char c = types[i].ptr[k];
			if (c == '"' || c == '\\')
				keel_buf_addc(b, '\\');
			keel_buf_addc(b, c);
		}
		keel_buf_addc(b, '"');
	}
	keel_buf_addc(b, '}');
	keel_buf_addc(b, '\0');
}

int keel_pg_forget_find(struct keel_store *s, struct keel_str tenant,
			const struct keel_forget_find *f, keel_scan_fn fn, void *ud)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	struct keel_str subject = f->subject, quoted = f->quoted;
	if (!keel_pg_storable(tenant) || !keel_pg_storable(subject))
		return 0; /* nothing stored holds it */
	int rc = keel_pg_tx(g);
	if (rc)
		return rc;
	/* The envelopes are read once, by strpos() in the server: a hit
	 * holds the subject's bytes or a backslash ($4: an escape may spell
	 * them); the caller parses only those. */
	keel_buf_reset(&g->sql);
	keel_buf_adds(
	    &g->sql,
	    KEEL_PG_PREDICATES ", hits(seq) AS ("
	    KEEL_PG_ASSERTER("keel_fact_rows", "r.tenant = $1 AND r.subject = $2")
	    " UNION " KEEL_PG_ASSERTER("keel_fact_rows", "r.seq IN (" KEEL_PG_VALUE_ROWS ")")
	    " UNION " KEEL_PG_ASSERTER("keel_relation_rows", "r.tenant = $1 AND r.subject = $2")
	    " UNION " KEEL_PG_ASSERTER("keel_relation_rows", "r.tenant = $1 AND r.object = $2")
	    " UNION SELECT seq FROM keel_events WHERE tenant = $1 AND (strpos(envelope, $2) "
	    "> 0 OR strpos(envelope, $4) > 0");
	if (f->nalways || f->nredacted)
		keel_buf_adds(&g->sql, " OR (time BETWEEN $5 AND $6 AND (type = ANY ($7::text[]) "
				       "OR (type = ANY ($8::text[]) AND strpos(envelope, "
				       "'keelredacted') > 0)))");
	keel_buf_adds(&g->sql, ")) SELECT seq, id, type, time, hash, envelope, recorded_at, "
			       "source FROM keel_events WHERE seq IN (SELECT seq FROM hits) "
			       "ORDER BY seq");
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	keel_pg_param_str(&p, tenant);
	keel_pg_param_str(&p, subject);
	keel_pg_param_str(&p, quoted);
	keel_pg_param_str(&p, keel_str_cstr("\\"));
	struct keel_buf always, redacted;
	keel_buf_init(&always);
	keel_buf_init(&redacted);
	if (f->nalways || f->nredacted) {
		keel_pg_param_i64(&p, f->from);
		keel_pg_param_i64(&p, f->to);
		keel_pg_text_array(&always, f->always, f->nalways);
		keel_pg_text_array(&redacted, f->redacted, f->nredacted);
		keel_pg_param_str(&p, keel_str_make(always.data, always.len - 1));
		keel_pg_param_str(&p, keel_str_make(redacted.data, redacted.len - 1));
	}
	struct keel_scan q = {.type = KEEL_REC_EVENT, .tenant = tenant};
	rc = keel_pg_scan_query(g, &g->sql, &p, &q, fn, ud);
	keel_buf_free(&always);
	keel_buf_free(&redacted);
	return rc;
}

static int keel_pg_forget_exec(struct keel_pg_store *g, const char *sql,
			       struct keel_pg_params *p, uint64_t *changed)
{
	PGresult *r = NULL;
	int rc = keel_pg_exec(g, sql, p, "deleting what named the subject",
			      changed ? &r : NULL);
	if (rc == 0 && r) {
		*changed += strtoull(PQcmdTuples(r), NULL, 10);
		PQclear(r);
	}
	return rc;
}

int keel_pg_forget_rows(struct keel_store *s, struct keel_str tenant,
			struct keel_str subject, struct keel_str quoted,
			const struct keel_mention_fix *fix, size_t n, uint64_t *removed)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	if (!keel_pg_storable(tenant) || !keel_pg_storable(subject))
		return 0;
	int rc = keel_pg_tx(g);
	if (rc)
		return rc;
	g->tx_writes = true;
	static const char *const drops[] = {
	    KEEL_PG_PREDICATES "DELETE FROM keel_fact_rows WHERE seq IN (" KEEL_PG_VALUE_ROWS
	    ") AND $2::text IS NOT NULL",
	    "DELETE FROM keel_fact_rows WHERE tenant = $1 AND subject = $2",
	    "DELETE FROM keel_relation_rows WHERE tenant = $1 AND subject = $2",
	    "DELETE FROM keel_relation_rows WHERE tenant = $1 AND object = $2",
	    "DELETE FROM keel_entity_mentions WHERE tenant = $1 AND subject = $2",
	};
	struct keel_pg_params p;
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(drops); i++) {
		keel_pg_params_init(&p);
		keel_pg_param_str(&p, tenant);
		keel_pg_param_str(&p, subject);
		if (i == 0)
			keel_pg_param_str(&p, quoted);
		rc = keel_pg_forget_exec(g, drops[i], &p,
					 i < KEEL_ARRAY_LEN(drops) - 1 ? removed : NULL);
	}
	/* The other entities' mentions the forgotten operations made. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (!keel_pg_storable(fix[i].subject))
			continue;
		keel_pg_params_init(&p);
		keel_pg_param_str(&p, tenant);
		keel_pg_param_str(&p, fix[i].subject);
		keel_pg_param_i64(&p, fix[i].recorded_at);
		if (!fix[i].gone) {
			keel_pg_param_i64(&p, fix[i].first_seen);
			keel_pg_param_i64(&p, fix[i].last_seen);
		}
		rc = keel_pg_forget_exec(
		    g,
		    fix[i].gone ? "DELETE FROM keel_entity_mentions WHERE tenant = $1 AND "
				  "subject = $2 AND recorded_at = $3"
				: "UPDATE keel_entity_mentions SET first_seen = $4, last_seen = "
				  "$5 WHERE tenant = $1 AND subject = $2 AND recorded_at = $3",
		    &p, NULL);
	}
	return rc;
}

int keel_pg_tombstone(struct keel_store *s, struct keel_str tenant,
		      const char *subject_hash, struct keel_tombstone *out,
		      struct keel_buf *buf)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	memset(out, 0, sizeof *out);
	out->tenant = tenant;
	snprintf(out->subject_hash, sizeof out->subject_hash, "%s", subject_hash);
	if (!keel_pg_storable(tenant) || !keel_pg_storable(keel_str_cstr(subject_hash)))
		return KEEL_ENOTFOUND;
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	keel_pg_param_str(&p, tenant);
	keel_pg_param_str(&p, keel_str_cstr(subject_hash));
	PGresult *r;
	int rc = keel_pg_exec(
	    g,
	    "SELECT forgotten_at, forgotten_by, events_redacted, rows_removed "
	    "FROM keel_tombstones WHERE tenant = $1 AND subject_sha256 = $2",
	    &p, "reading a tombstone", &r);
	if (rc)
		return rc;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return KEEL_ENOTFOUND;
	}
	out->forgotten_at = keel_pg_i64(r, 0, 0);
	struct keel_str by = keel_pg_str(r, 0, 1);
	keel_buf_reset(buf);
	keel_buf_add(buf, by.ptr ? by.ptr : "", by.len);
	keel_buf_reserve(buf, 0);
	out->forgotten_by = keel_str_make(buf->data ? buf->data : "", by.len);
	out->events = (uint64_t)keel_pg_i64(r, 0, 2);
	out->rows = (uint64_t)keel_pg_i64(r, 0, 3);
	PQclear(r);
	return 0;
}

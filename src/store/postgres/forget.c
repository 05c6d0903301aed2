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

/*
 * replay.c - replacing a tenant's rows in one transaction (keel replay,
 * keel ingest --replay, keel forget's rebuild; docs/replay.md): the rows
 * the scope covers deleted, the rebuilt ones written by binary COPY, the
 * same path a batch takes, streamed a MiB at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* The first part of a replace: locks the log, checks that it is the one
 * the rebuild was made from, deletes the rows the scope covers. */
static int keel_pg_replace_begin(struct keel_pg_store *g, struct keel_str tenant,
				 const struct keel_replace_scope *scope,
				 uint64_t log_events)
{
	struct keel_store *s = &g->base;
	/* The log was read outside this transaction. SHARE ROW EXCLUSIVE
	 * waits for the writers in flight to commit and holds every new one
	 * back until this transaction ends (PostgreSQL has no gap locks to
	 * hold one tenant's log still), and takes turns with another replay
	 * (which SHARE alone would let in, to deadlock on their inserts);
	 * then the count says whether the log is still the one the rebuild
	 * was made from. */
	int rc = keel_pg_command(g, "LOCK TABLE keel_events IN SHARE ROW EXCLUSIVE MODE",
				 "locking the log");
	if (rc)
		return rc;
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	keel_pg_param_str(&p, tenant);
	PGresult *r;
	rc = keel_pg_exec(g, "SELECT count(*) FROM keel_events WHERE tenant = $1", &p,
			  "reading the tenant's log", &r);
	if (rc)
		return rc;
	uint64_t logged = (uint64_t)keel_pg_i64(r, 0, 0);
	PQclear(r);
	if (logged != log_events)
		return keel_store_fail(
		    s, KEEL_ESTORE,
		    "tenant \"%.*s\": the log changed during the replay (%llu "
		    "events read, %llu logged now): run it again",
		    (int)tenant.len, tenant.ptr, (unsigned long long)log_events,
		    (unsigned long long)logged);
	/* The rows the scope covers (all of the tenant's without one): the
	 * entities' mentions, then each predicate's facts and relation's
	 * relations. */
	static const char *const tables[] = {"keel_entity_mentions", "keel_fact_rows",
					     "keel_relation_rows"};
	static const char *const columns[] = {"", "predicate", "relation"};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(tables); i++) {
		enum keel_row_kind kind = i == 1 ? KEEL_ROW_FACT : KEEL_ROW_RELATION;
		size_t parts = 1; /* one DELETE, or one per name */
		if (scope && i == 0 && !scope->entities)
			parts = 0;
		else if (scope && i > 0)
			parts = scope->nnames[kind];
		for (size_t k = 0; rc == 0 && k < parts; k++) {
			keel_pg_params_init(&p);
			keel_pg_param_str(&p, tenant);
			keel_buf_reset(&g->sql);
			keel_buf_addf(&g->sql, "DELETE FROM %s WHERE tenant = $1",
				      tables[i]);
			if (scope && i > 0) {
				keel_pg_param_str(&p, scope->names[kind][k]);
				keel_buf_addf(&g->sql, " AND %s = $2", columns[i]);
			}
			rc = keel_pg_exec(g, g->sql.data, &p,
					  "deleting the tenant's rows", NULL);
		}
		if (rc)
			return rc;
	}
	return 0;
}

int keel_pg_replace_tenant(struct keel_store *s, struct keel_str tenant,
			   const struct keel_replace_scope *scope,
			   const struct keel_append *a, uint64_t log_events,
			   struct keel_buf *note)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	int rc = keel_pg_tx(g);
	if (rc)
		return rc;
	g->tx_writes = true;
	/* a later part: the log is locked and checked, the rows deleted */
	if (!(scope && scope->more) &&
	    (rc = keel_pg_replace_begin(g, tenant, scope, log_events)))
		return rc;
	rc = keel_pg_write_append(g, a, false);
	if (rc == 0)
		keel_buf_adds(note, "postgres: binary COPY in one transaction");
	return rc;
}

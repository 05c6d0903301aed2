/*
 * log.c - log positions, the table keel_log_positions (docs/log.md,
 * "Fencing"; docs/store-postgres.md): how far keel consume has applied
 * each partition of a log, and the fencing token of the process that
 * wrote it.
 *
 * A position is written inside the transaction that holds the rows it
 * covers: SELECT ... FOR UPDATE locks the partition's row (none yet: two
 * first writers race to INSERT and the second fails on the primary key,
 * its commit with it; never ON CONFLICT, which would skip the token's
 * check), the stored token is compared, and the row is written. A process
 * that lost its lease while paused carries a lower token than its
 * successor stored when it took the partition: its late commit fails
 * here, before anything of it is visible.
 */
#include <stdlib.h>

#include "parts.h"

int keel_pg_log_position(struct keel_store *s, const struct keel_log_position *pos,
			 uint64_t *stored)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	if (!keel_pg_storable(pos->log))
		return keel_store_fail(s, KEEL_EINVAL, "log name: not UTF-8 without NUL");
	int rc = keel_pg_tx(g);
	if (rc)
		return rc;
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	keel_pg_param_str(&p, pos->log);
	keel_pg_param_i64(&p, (int64_t)pos->partition);
	PGresult *r;
	rc = keel_pg_exec(g,
			  "SELECT seq, token FROM keel_log_positions WHERE log = $1 AND "
			  "part = $2 FOR UPDATE",
			  &p, "reading the log position", &r);
	if (rc)
		return rc;
	bool found = PQntuples(r) == 1;
	uint64_t seq = found ? (uint64_t)keel_pg_i64(r, 0, 0) : 0;
	uint64_t token = found ? (uint64_t)keel_pg_i64(r, 0, 1) : 0;
	PQclear(r);
	if (found && token > pos->token)
		return keel_store_fail(s, KEEL_EFENCED,
				       "partition %u of log \"%.*s\": fencing token %llu is "
				       "lower than the stored %llu: another process owns the "
				       "partition",
				       (unsigned)pos->partition, (int)pos->log.len,
				       pos->log.ptr, (unsigned long long)pos->token,
				       (unsigned long long)token);
	if (!found || pos->seq > seq)
		seq = pos->seq;
	g->tx_writes = true;
	keel_pg_params_init(&p);
	keel_pg_param_str(&p, pos->log);
	keel_pg_param_i64(&p, (int64_t)pos->partition);
	keel_pg_param_i64(&p, (int64_t)seq);
	keel_pg_param_i64(&p, (int64_t)pos->token);
	keel_pg_param_i64(&p, pos->recorded_at);
	rc = keel_pg_exec(g,
			  found ? "UPDATE keel_log_positions SET seq = $3, token = $4, "
				  "recorded_at = $5 WHERE log = $1 AND part = $2"
				: "INSERT INTO keel_log_positions (log, part, seq, token, "
				  "recorded_at) VALUES ($1, $2, $3, $4, $5)",
			  &p, "writing the log position", NULL);
	if (rc == 0)
		*stored = seq;
	return rc;
}

int keel_pg_log_positions(struct keel_store *s, struct keel_str log,
			  keel_log_position_fn fn, void *ud)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	if (g->broken && !g->tx_open) {
		int rc = keel_pg_reconnect(g);
		if (rc)
			return rc;
	}
	if (!keel_pg_storable(log))
		return 0;
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	keel_pg_param_str(&p, log);
	PGresult *r;
	int rc = keel_pg_exec(g,
			      "SELECT log, part, seq, token, recorded_at FROM "
			      "keel_log_positions WHERE log = $1 ORDER BY part",
			      &p, "reading the log positions", &r);
	if (rc)
		return rc;
	for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
		struct keel_log_position pos = {
		    .log = keel_pg_str(r, i, 0),
		    .partition = (uint32_t)keel_pg_i64(r, i, 1),
		    .seq = (uint64_t)keel_pg_i64(r, i, 2),
		    .token = (uint64_t)keel_pg_i64(r, i, 3),
		    .recorded_at = keel_pg_i64(r, i, 4),
		};
		rc = fn(ud, &pos);
	}
	PQclear(r);
	return rc;
}

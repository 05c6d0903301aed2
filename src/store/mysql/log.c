/*
 * mysql_log.c - log positions, the table keel_log_positions (docs/log.md,
 * "Fencing"): how far keel consume has applied each partition of a log,
 * and the fencing token of the process that wrote it.
 *
 * A position is written inside the transaction that holds the rows it
 * covers: SELECT ... FOR UPDATE locks the partition's row (or, under
 * READ COMMITTED, nothing when there is none yet: two first writers then
 * race to INSERT and the second fails on the primary key, its commit
 * with it), the stored token is compared, and the row is written. A
 * process that lost its lease while paused carries a token lower than its
 * successor's, which the successor stored when it took the partition: its
 * late commit fails here, before anything of it is visible.
 */
#include <stdlib.h>

#include "parts.h"

struct keel_mysql_position_read {
	bool found;
	uint64_t seq, token;
};

static int keel_mysql_position_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				   const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	struct keel_mysql_position_read *rd = ud;
	rd->found = true;
	rd->seq = keel_mysql_u64(row[0], len[0]);
	rd->token = keel_mysql_u64(row[1], len[1]);
	return 0;
}

int keel_mysql_log_position(struct keel_store *s, const struct keel_log_position *p,
			    uint64_t *stored)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	int rc = keel_mysql_tx(m);
	if (rc)
		return rc;
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	keel_buf_adds(b, "SELECT seq, token FROM keel_log_positions WHERE log = ");
	keel_mysql_add_str(m, b, p->log);
	keel_buf_addf(b, " AND part = %u FOR UPDATE", (unsigned)p->partition);
	struct keel_mysql_position_read rd = {0};
	rc = keel_mysql_select(m, "reading the log position", keel_mysql_position_row, &rd);
	if (rc)
		return rc;
	if (rd.found && rd.token > p->token)
		return keel_store_fail(s, KEEL_EFENCED,
				       "partition %u of log \"%.*s\": fencing token %llu is "
				       "lower than the stored %llu: another process owns the "
				       "partition",
				       (unsigned)p->partition, (int)p->log.len, p->log.ptr,
				       (unsigned long long)p->token,
				       (unsigned long long)rd.token);
	uint64_t seq = rd.found && rd.seq > p->seq ? rd.seq : p->seq;
	m->tx_writes = true;
	keel_buf_reset(b);
	if (rd.found) {
		keel_buf_addf(b,
			      "UPDATE keel_log_positions SET seq = %llu, token = %llu, "
			      "recorded_at = %lld WHERE log = ",
			      (unsigned long long)seq, (unsigned long long)p->token,
			      (long long)p->recorded_at);
		keel_mysql_add_str(m, b, p->log);
		keel_buf_addf(b, " AND part = %u", (unsigned)p->partition);
	} else {
		keel_buf_adds(b, "INSERT INTO keel_log_positions (log, part, seq, token, "
				 "recorded_at) VALUES (");
		keel_mysql_add_str(m, b, p->log);
		keel_buf_addf(b, ", %u, %llu, %llu, %lld)", (unsigned)p->partition,
			      (unsigned long long)seq, (unsigned long long)p->token,
			      (long long)p->recorded_at);
	}
	rc = keel_mysql_run(m, b->data, b->len, "writing the log position");
	if (rc == 0)
		*stored = seq;
	return rc;
}

struct keel_mysql_positions_read {
	keel_log_position_fn fn;
	void *ud;
};

static int keel_mysql_positions_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				    const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	struct keel_mysql_positions_read *rd = ud;
	struct keel_log_position p = {
	    .log = keel_mysql_col(row, len, 0),
	    .partition = (uint32_t)keel_mysql_u64(row[1], len[1]),
	    .seq = keel_mysql_u64(row[2], len[2]),
	    .token = keel_mysql_u64(row[3], len[3]),
	    .recorded_at = keel_mysql_i64(row[4], len[4]),
	};
	return rd->fn(rd->ud, &p);
}

int keel_mysql_log_positions(struct keel_store *s, struct keel_str log,
			     keel_log_position_fn fn, void *ud)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	if (m->broken && !m->tx_open) {
		int rc = keel_mysql_reconnect(m);
		if (rc)
			return rc;
	}
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	keel_buf_adds(b, "SELECT log, part, seq, token, recorded_at FROM keel_log_positions "
			 "WHERE log = ");
	keel_mysql_add_str(m, b, log);
	keel_buf_adds(b, " ORDER BY part");
	struct keel_mysql_positions_read rd = {fn, ud};
	return keel_mysql_select(m, "reading the log positions", keel_mysql_positions_row,
				 &rd);
}

/*
 * cartridge.c - each tenant's recorded cartridge, the table
 * keel_tenant_cartridges (docs/cartridges.md, "The recorded cartridge"):
 * read once per tenant an ingester meets, written once per tenant.
 */
#include <stdlib.h>
#include <string.h>

#include "parts.h"

struct keel_mysql_cartridge_read {
	struct keel_cartridge_record *out;
	struct keel_arena *hold;
	bool found;
};

static int keel_mysql_cartridge_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				    const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	struct keel_mysql_cartridge_read *rd = ud;
	rd->out->name = keel_arena_str(rd->hold, keel_mysql_col(row, len, 0));
	rd->out->version = keel_arena_str(rd->hold, keel_mysql_col(row, len, 1));
	rd->out->hash = keel_arena_str(rd->hold, keel_mysql_col(row, len, 2));
	rd->out->text = keel_arena_str(rd->hold, keel_mysql_col(row, len, 3));
	rd->out->recorded_at = row[4] ? keel_mysql_i64(row[4], len[4]) : 0;
	rd->found = true;
	return 0;
}

int keel_mysql_cartridge_get(struct keel_store *s, struct keel_str tenant,
			     struct keel_cartridge_record *out, struct keel_arena *hold)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	/* Read when an ingester meets a tenant, which may be before its
	 * first transaction: a connection lost since is renewed here as a
	 * transaction's begin would (never inside one, whose writes the
	 * server has rolled back: that failure is the batch's to report). */
	if (m->broken && !m->tx_open) {
		int rc = keel_mysql_reconnect(m);
		if (rc)
			return rc;
	}
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	keel_buf_adds(b, "SELECT name, version, hash, text, recorded_at FROM "
			 "keel_tenant_cartridges WHERE tenant = ");
	keel_mysql_add_str(m, b, tenant);
	struct keel_mysql_cartridge_read rd = {out, hold, false};
	int rc = keel_mysql_select(m, "reading the tenant's cartridge",
				   keel_mysql_cartridge_row, &rd);
	if (rc == 0 && !rd.found)
		rc = KEEL_ENOTFOUND;
	return rc;
}

int keel_mysql_cartridge_put(struct keel_store *s, struct keel_str tenant,
			     const struct keel_cartridge_record *r, bool replace)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	int rc = keel_mysql_tx(m);
	if (rc)
		return rc;
	m->tx_writes = true;
	/* Without replace a plain INSERT: a record another writer made since
	 * this one looked fails the batch (duplicate key), whose retry then
	 * sees it. */
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	keel_buf_adds(b, replace ? "REPLACE" : "INSERT");
	keel_buf_adds(b, " INTO keel_tenant_cartridges (tenant, name, version, hash, "
			 "text, recorded_at) VALUES (");
	const struct keel_str v[] = {tenant, r->name, r->version, r->hash, r->text};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(v); i++) {
		keel_mysql_add_str(m, b, v[i]);
		keel_buf_addc(b, ',');
	}
	keel_buf_addi64(b, r->recorded_at);
	keel_buf_addc(b, ')');
	return keel_mysql_run(m, b->data, b->len, "recording the tenant's cartridge");
}

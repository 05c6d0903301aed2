/*
 * cartridge.c - each tenant's recorded cartridge (docs/cartridges.md, "The
 * recorded cartridge"): keel_tenant_cartridges maps a tenant to the hash
 * of its cartridge, keel_cartridges holds each distinct cartridge once
 * (docs/store-mysql.md, "Recorded cartridges"). Read once per tenant an
 * ingester meets; the tenants new in a transaction are written in one
 * statement.
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
	keel_buf_adds(b, "SELECT c.name, c.version, t.hash, c.text, t.recorded_at FROM "
			 "keel_tenant_cartridges AS t JOIN keel_cartridges AS c ON c.hash = "
			 "t.hash WHERE t.tenant = ");
	keel_mysql_add_str(m, b, tenant);
	struct keel_mysql_cartridge_read rd = {out, hold, false};
	int rc = keel_mysql_select(m, "reading the tenant's cartridge",
				   keel_mysql_cartridge_row, &rd);
	if (rc == 0 && !rd.found)
		rc = KEEL_ENOTFOUND;
	return rc;
}

/* Rows per INSERT of tenants: about 100 bytes each, far below any
 * max_allowed_packet. */
#define KEEL_MYSQL_TENANTS_PER_INSERT 1000

int keel_mysql_cartridge_put(struct keel_store *s, const struct keel_str *tenants, size_t n,
			     const struct keel_cartridge_record *r, bool replace)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	int rc = keel_mysql_tx(m);
	if (rc)
		return rc;
	m->tx_writes = true;
	/* The cartridge once: its hash determines the rest, so a row under
	 * the same hash is this cartridge already. */
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	keel_buf_adds(b, "INSERT IGNORE INTO keel_cartridges (hash, name, version, text) "
			 "VALUES (");
	const struct keel_str v[] = {r->hash, r->name, r->version, r->text};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(v); i++) {
		if (i)
			keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, v[i]);
	}
	keel_buf_addc(b, ')');
	rc = keel_mysql_run(m, b->data, b->len, "recording the tenant's cartridge");
	/* Without replace a plain INSERT: a record another writer made since
	 * this one looked fails the batch (duplicate key), whose retry then
	 * sees it. */
	for (size_t at = 0; rc == 0 && at < n; at += KEEL_MYSQL_TENANTS_PER_INSERT) {
		size_t end = n - at < KEEL_MYSQL_TENANTS_PER_INSERT
				 ? n
				 : at + KEEL_MYSQL_TENANTS_PER_INSERT;
		keel_buf_reset(b);
		keel_buf_adds(b, replace ? "REPLACE" : "INSERT");
		keel_buf_adds(b, " INTO keel_tenant_cartridges (tenant, hash, recorded_at) "
				 "VALUES ");
		for (size_t i = at; i < end; i++) {
			keel_buf_adds(b, i > at ? ",(" : "(");
			keel_mysql_add_str(m, b, tenants[i]);
			keel_buf_addc(b, ',');
			keel_mysql_add_str(m, b, r->hash);
			keel_buf_addc(b, ',');
			keel_buf_addi64(b, r->recorded_at);
			keel_buf_addc(b, ')');
		}
		rc = keel_mysql_run(m, b->data, b->len, "recording the tenant's cartridge");
	}
	return rc;
}

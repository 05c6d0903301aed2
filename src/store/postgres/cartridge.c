/*
 * cartridge.c - each tenant's recorded cartridge, the table
 * keel_tenant_cartridges (docs/cartridges.md, "The recorded cartridge"):
 * read once per tenant an ingester meets, written once per tenant.
 */
#include <stdlib.h>
#include <string.h>

#include "parts.h"

int keel_pg_cartridge_get(struct keel_store *s, struct keel_str tenant,
			  struct keel_cartridge_record *out, struct keel_arena *hold)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	/* Read when an ingester meets a tenant, which may be before its
	 * first transaction: a connection lost since is renewed here as a
	 * transaction's begin would (never inside one, whose writes the
	 * server has rolled back: that failure is the batch's to report). */
	if (g->broken && !g->tx_open) {
		int rc = keel_pg_reconnect(g);
		if (rc)
			return rc;
	}
	if (!keel_pg_storable(tenant))
		return KEEL_ENOTFOUND;
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	keel_pg_param_str(&p, tenant);
	PGresult *r;
	int rc = keel_pg_exec(g,
			      "SELECT name, version, hash, text, recorded_at FROM "
			      "keel_tenant_cartridges WHERE tenant = $1",
			      &p, "reading the tenant's cartridge", &r);
	if (rc)
		return rc;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return KEEL_ENOTFOUND;
	}
	out->name = keel_arena_str(hold, keel_pg_str(r, 0, 0));
	out->version = keel_arena_str(hold, keel_pg_str(r, 0, 1));
	out->hash = keel_arena_str(hold, keel_pg_str(r, 0, 2));
	out->text = keel_arena_str(hold, keel_pg_str(r, 0, 3));
	out->recorded_at = keel_pg_i64(r, 0, 4);
	PQclear(r);
	return 0;
}

int keel_pg_cartridge_put(struct keel_store *s, struct keel_str tenant,
			  const struct keel_cartridge_record *r, bool replace)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	int rc = keel_pg_tx(g);
	if (rc)
		return rc;
	g->tx_writes = true;
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	const struct keel_str v[] = {tenant, r->name, r->version, r->hash, r->text};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(v); i++)
		keel_pg_param_str(&p, v[i]);
	keel_pg_param_i64(&p, r->recorded_at);
	/* Without replace a plain INSERT: a record another writer made since
	 * this one looked fails the batch (a duplicate key), whose retry then
	 * sees it. */
	return keel_pg_exec(
	    g,
	    replace ? "INSERT INTO keel_tenant_cartridges (tenant, name, version, "
		      "hash, text, recorded_at) VALUES ($1, $2, $3, $4, $5, $6) "
		      "ON CONFLICT (tenant) DO UPDATE SET name = EXCLUDED.name, "
		      "version = EXCLUDED.version, hash = EXCLUDED.hash, text = "
		      "EXCLUDED.text, recorded_at = EXCLUDED.recorded_at"
		    : "INSERT INTO keel_tenant_cartridges (tenant, name, version, "
		      "hash, text, recorded_at) VALUES ($1, $2, $3, $4, $5, $6)",
	    &p, "recording the tenant's cartridge", NULL);
}

/*
 * cartridge.c - each tenant's recorded cartridge (docs/cartridges.md, "The
 * recorded cartridge"): keel_tenant_cartridges maps a tenant to the hash
 * of its cartridge, keel_cartridges holds each distinct cartridge once
 * (docs/store-postgres.md, "Schema"). Read once per tenant an ingester
 * meets; the tenants new in a transaction are written in one statement.
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
			      "SELECT c.name, c.version, t.hash, c.text, t.recorded_at FROM "
			      "keel_tenant_cartridges AS t JOIN keel_cartridges AS c ON "
			      "c.hash = t.hash WHERE t.tenant = $1",
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

int keel_pg_cartridge_put(struct keel_store *s, const struct keel_str *tenants, size_t n,
			  const struct keel_cartridge_record *r, bool replace)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	int rc = keel_pg_tx(g);
	if (rc)
		return rc;
	g->tx_writes = true;
	/* The cartridge once: its hash determines the rest, so a row under
	 * the same hash is this cartridge already. */
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	const struct keel_str v[] = {r->hash, r->name, r->version, r->text};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(v); i++)
		keel_pg_param_str(&p, v[i]);
	rc = keel_pg_exec(g,
			  "INSERT INTO keel_cartridges (hash, name, version, text) VALUES "
			  "($1, $2, $3, $4) ON CONFLICT (hash) DO NOTHING",
			  &p, "recording the tenant's cartridge", NULL);
	if (rc)
		return rc;
	/* Every tenant in one statement, as a text[] parameter. */
	struct keel_buf names;
	keel_buf_init(&names);
	keel_pg_text_array_begin(&names);
	for (size_t i = 0; i < n; i++)
		keel_pg_text_array_add(&names, tenants[i]);
	keel_pg_text_array_end(&names, (int32_t)n);
	keel_pg_params_init(&p);
	keel_pg_param_bytes(&p, 1009 /* text[] */, names.data, names.len);
	keel_pg_param_str(&p, r->hash);
	keel_pg_param_i64(&p, r->recorded_at);
	/* Without replace a plain INSERT: a record another writer made since
	 * this one looked fails the batch (a duplicate key), whose retry then
	 * sees it. */
	rc = keel_pg_exec(
	    g,
	    replace ? "INSERT INTO keel_tenant_cartridges (tenant, hash, recorded_at) "
		      "SELECT unnest($1::text[]), $2, $3 ON CONFLICT (tenant) DO UPDATE "
		      "SET hash = EXCLUDED.hash, recorded_at = EXCLUDED.recorded_at"
		    : "INSERT INTO keel_tenant_cartridges (tenant, hash, recorded_at) "
		      "SELECT unnest($1::text[]), $2, $3",
	    &p, "recording the tenant's cartridge", NULL);
	keel_buf_free(&names);
	return rc;
}

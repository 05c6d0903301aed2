/*
 * tenant.c - see tenant.h.
 */
#include "tenant.h"
#include "event/json_write.h"

#include <stdlib.h>
#include <string.h>

#include "cartridge.h"

enum keel_tc_state {
	KEEL_TC_READY,	 /* recorded (matching the given one, or compiled) */
	KEEL_TC_NEW,	 /* none recorded: the given one is recorded with its events */
	KEEL_TC_PENDING, /* new, its record due before the open transaction commits */
	KEEL_TC_REFUSED, /* its events are refused: refusal says why (never kept) */
	/* was pending when its transaction failed: whether its record was
	 * committed may be unknown (a connection lost during COMMIT), and
	 * another writer may have recorded one meanwhile, so the store is
	 * asked again at its next event */
	KEEL_TC_RECHECK,
};

struct keel_tc_entry {
	char *name;		/* the tenant, malloc'd */
	struct keel_str tenant; /* a view of name */
	uint64_t hash;
	enum keel_tc_state state;
	const struct keel_cartridge *cartridge;
	char *refusal;
};

void keel_tc_init(struct keel_tenant_cartridges *t, struct keel_store *s,
		  const struct keel_cartridge *given)
{
	memset(t, 0, sizeof *t);
	t->store = s;
	t->given = given;
	keel_map_init(&t->map);
}

void keel_tc_free(struct keel_tenant_cartridges *t)
{
	for (size_t i = 0; i < t->entries.len; i++) {
		struct keel_tc_entry *e = t->entries.items[i];
		free(e->name);
		free(e->refusal);
		free(e);
	}
	for (size_t i = 0; i < t->compiled.len; i++)
		keel_cartridge_free(t->compiled.items[i]);
	keel_ptrvec_free(&t->compiled);
	keel_ptrvec_free(&t->entries);
	keel_ptrvec_free(&t->pending);
	keel_map_free(&t->map);
}

void keel_tc_describe(struct keel_buf *b, struct keel_str name, struct keel_str version,
		      struct keel_str hash)
{
	keel_buf_addstr(b, name);
	if (version.len) {
		keel_buf_addc(b, ' ');
		keel_buf_addstr(b, version);
	}
	/* "sha256:" and 12 of the 64 digits tell cartridges apart */
	if (hash.len)
		keel_buf_addf(b, " (%.*s)", (int)(hash.len < 19 ? hash.len : 19), hash.ptr);
}

struct keel_cartridge_record keel_tc_record_of(const struct keel_cartridge *c,
					       int64_t recorded_at)
{
	return (struct keel_cartridge_record){
	    .name = keel_str_cstr(keel_cartridge_name(c)),
	    .version = keel_str_cstr(keel_cartridge_version(c)),
	    .hash = keel_str_cstr(keel_cartridge_hash(c)),
	    .text = keel_cartridge_text(c),
	    .recorded_at = recorded_at,
	};
}

bool keel_tc_matches(const struct keel_cartridge *c, const struct keel_cartridge_record *r)
{
	struct keel_cartridge_record g = keel_tc_record_of(c, 0);
	return keel_str_eq(g.name, r->name) && keel_str_eq(g.version, r->version) &&
	       keel_str_eq(g.hash, r->hash);
}

static void keel_tc_quote_tenant(struct keel_buf *b, struct keel_str tenant)
{
	keel_buf_adds(b, "tenant ");
	keel_buf_add_json_str(b, tenant);
}

void keel_tc_describe_other(struct keel_buf *b, struct keel_str tenant,
			    const struct keel_cartridge_record *r,
			    const struct keel_cartridge *given)
{
	keel_tc_quote_tenant(b, tenant);
	keel_buf_adds(b, " is recorded with cartridge ");
	keel_tc_describe(b, r->name, r->version, r->hash);
	keel_buf_adds(b, ", not ");
	struct keel_cartridge_record g = keel_tc_record_of(given, 0);
	keel_tc_describe(b, g.name, g.version, g.hash);
}

/* A cartridge compiled already for another tenant recorded with the same
 * one: many tenants share a few cartridges, and compiling one costs more
 * than all its tenants' events of a short stream. */
static const struct keel_cartridge *keel_tc_compiled(struct keel_tenant_cartridges *t,
						     const struct keel_cartridge_record *r)
{
	for (size_t i = 0; i < t->compiled.len; i++)
		if (keel_tc_matches(t->compiled.items[i], r))
			return t->compiled.items[i];
	return NULL;
}

/* Decides what e's events run with, from the store's record (if any). */
static int keel_tc_decide(struct keel_tenant_cartridges *t, struct keel_tc_entry *e,
			  struct keel_buf *msg)
{
	struct keel_arena hold;
	keel_arena_init(&hold);
	struct keel_cartridge_record r;
	int rc = keel_store_cartridge_get(t->store, e->tenant, &r, &hold);
	struct keel_buf why;
	keel_buf_init(&why);
	if (rc == KEEL_ENOTFOUND && t->given) {
		e->state = KEEL_TC_NEW;
		e->cartridge = t->given;
		t->unrecorded++;
		rc = 0;
	} else if (rc == KEEL_ENOTFOUND) {
		keel_tc_quote_tenant(&why, e->tenant);
		keel_buf_adds(&why, " has no recorded cartridge: name one with --cartridge "
				    "(the built-in " KEEL_BUILTIN_CARTRIDGE
				    " runs only when named: --cartridge " KEEL_BUILTIN_CARTRIDGE ")");
	} else if (rc) {
		keel_buf_adds(msg, keel_store_errmsg(t->store));
	} else if (t->given && keel_tc_matches(t->given, &r)) {
		e->state = KEEL_TC_READY;
		e->cartridge = t->given;
	} else if (t->given) {
		keel_tc_describe_other(&why, e->tenant, &r, t->given);
		keel_buf_adds(&why, ": leave --cartridge out to use the recorded one, or "
				    "rebuild the tenant with the new one (keel replay --tenant ");
		keel_buf_addstr(&why, e->tenant);
		keel_buf_adds(&why, " --cartridge ... --change-cartridge)");
	} else if (!r.text.ptr) {
		keel_tc_quote_tenant(&why, e->tenant);
		keel_buf_adds(&why, " is recorded with the shared-object cartridge ");
		keel_tc_describe(&why, r.name, r.version, r.hash);
		keel_buf_adds(&why, ", whose code a store does not keep: name it with "
				    "--cartridge");
	} else if ((e->cartridge = keel_tc_compiled(t, &r))) {
		e->state = KEEL_TC_READY;
	} else {
		char *err = NULL;
		struct keel_cartridge *c;
		if (keel_cartridge_compile(r.text.ptr, r.text.len, &c, &err) == 0) {
			keel_ptrvec_push(&t->compiled, c);
			e->state = KEEL_TC_READY;
			e->cartridge = c;
		} else {
			keel_tc_quote_tenant(&why, e->tenant);
			keel_buf_adds(&why, ": its recorded cartridge ");
			keel_tc_describe(&why, r.name, r.version, r.hash);
			keel_buf_addf(&why, " does not compile (%s): name one with --cartridge",
				      err ? err : "no message");
			free(err);
		}
	}
	if (why.len) {
		e->state = KEEL_TC_REFUSED;
		e->refusal = why.data;
		keel_buf_init(&why);
		rc = 0;
	}
	keel_buf_free(&why);
	keel_arena_free(&hold);
	return rc;
}

static struct keel_tc_entry *keel_tc_find(struct keel_tenant_cartridges *t,
					  struct keel_str tenant, uint64_t h)
{
	for (size_t k = keel_map_first(&t->map, h); k != SIZE_MAX;
	     k = keel_map_next(&t->map, h, k)) {
		struct keel_tc_entry *e = t->map.values[k];
		if (keel_str_eq(e->tenant, tenant))
			return e;
	}
	return NULL;
}

int keel_tc_resolve(struct keel_tenant_cartridges *t, struct keel_str tenant,
		    const struct keel_cartridge **out, struct keel_buf *msg)
{
	*out = NULL;
	struct keel_tc_entry *e = t->last;
	if (!e || !keel_str_eq(e->tenant, tenant)) {
		uint64_t h = keel_hash64(tenant.ptr, tenant.len, 0);
		e = keel_tc_find(t, tenant, h);
		if (!e) {
			e = keel_xcalloc(1, sizeof *e);
			e->name = keel_xstrndup(tenant.ptr, tenant.len);
			e->tenant = keel_str_make(e->name, tenant.len);
			e->hash = h;
			int rc = keel_tc_decide(t, e, msg);
			if (rc == 0 && e->state == KEEL_TC_REFUSED) {
				/* Not kept: the store is asked again at the
				 * tenant's next event, so that a server learns
				 * of a cartridge recorded meanwhile. */
				keel_buf_adds(msg, e->refusal);
				rc = KEEL_ECARTRIDGE;
			}
			if (rc) { /* refused, or the store failed */
				free(e->refusal);
				free(e->name);
				free(e);
				return rc;
			}
			keel_ptrvec_push(&t->entries, e);
			keel_map_put(&t->map, h, e);
		}
		t->last = e;
	}
	if (e->state == KEEL_TC_RECHECK) {
		int rc = keel_tc_decide(t, e, msg);
		if (rc == 0 && e->state == KEEL_TC_REFUSED) {
			keel_buf_adds(msg, e->refusal);
			free(e->refusal);
			e->refusal = NULL;
			rc = KEEL_ECARTRIDGE;
		}
		if (rc) { /* asked again at its next event */
			e->state = KEEL_TC_RECHECK;
			return rc;
		}
	}
	*out = e->cartridge;
	return 0;
}

void keel_tc_logged(struct keel_tenant_cartridges *t, struct keel_batch_event *const *ev,
		    size_t n)
{
	for (size_t i = 0; i < n && t->unrecorded; i++) {
		struct keel_tc_entry *e = t->last;
		if (!e || !keel_str_eq(e->tenant, ev[i]->tenant))
			e = t->last = keel_tc_find(
			    t, ev[i]->tenant, keel_hash64(ev[i]->tenant.ptr, ev[i]->tenant.len, 0));
		if (e && e->state == KEEL_TC_NEW) {
			e->state = KEEL_TC_PENDING;
			keel_ptrvec_push(&t->pending, e);
			t->unrecorded--;
		}
	}
}

int keel_tc_record(struct keel_tenant_cartridges *t, int64_t recorded_at)
{
	if (!t->pending.len)
		return 0;
	/* Only a tenant new to the store is pending, and a new tenant's
	 * events run the given cartridge: one record for them all. */
	struct keel_str *names = keel_xcalloc(t->pending.len, sizeof *names);
	for (size_t i = 0; i < t->pending.len; i++) {
		struct keel_tc_entry *e = t->pending.items[i];
		names[i] = e->tenant;
	}
	struct keel_cartridge_record r = keel_tc_record_of(t->given, recorded_at);
	int rc = keel_store_cartridge_put(t->store, names, t->pending.len, &r, false);
	free(names);
	return rc;
}

void keel_tc_ended(struct keel_tenant_cartridges *t, bool committed)
{
	for (size_t i = 0; i < t->pending.len; i++) {
		struct keel_tc_entry *e = t->pending.items[i];
		e->state = committed ? KEEL_TC_READY : KEEL_TC_RECHECK;
	}
	t->pending.len = 0;
}

int keel_cartridge_recorded(struct keel_store *s, const char *tenant,
			    struct keel_cartridge **out)
{
	if (!out)
		return KEEL_EINVAL;
	*out = NULL;
	if (!s || !tenant)
		return KEEL_EINVAL;
	struct keel_arena hold;
	keel_arena_init(&hold);
	struct keel_cartridge_record r;
	struct keel_str t = keel_str_cstr(tenant);
	int rc = keel_store_cartridge_get(s, t, &r, &hold);
	if (rc == KEEL_ENOTFOUND) {
		rc = keel_store_fail(s, rc, "tenant \"%s\" has no recorded cartridge", tenant);
	} else if (rc == 0 && !r.text.ptr) {
		struct keel_buf b;
		keel_buf_init(&b);
		keel_tc_describe(&b, r.name, r.version, r.hash);
		rc = keel_store_fail(s, KEEL_ECARTRIDGE,
				     "tenant \"%s\" is recorded with the shared-object "
				     "cartridge %s, whose code a store does not keep",
				     tenant, b.data);
		keel_buf_free(&b);
	} else if (rc == 0) {
		char *err = NULL;
		if (keel_cartridge_compile(r.text.ptr, r.text.len, out, &err) != 0)
			rc = keel_store_fail(s, KEEL_ECARTRIDGE,
					     "tenant \"%s\": its recorded cartridge does not "
					     "compile (%s)",
					     tenant, err ? err : "no message");
		free(err);
	}
	keel_arena_free(&hold);
	return rc;
}

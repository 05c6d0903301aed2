/*
 * cartridge.c - the cartridge object: made by keel_cartridge_new (or by
 * the compiler and the loaders, parts.h lists them), its name,
 * version and recorded hash, the map from event type to handler, and
 * keel_cartridge_run, which finds an event's handler and gives it a
 * context to add operations to.
 */
#include "parts.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"

struct keel_cartridge *keel_cartridge_new(const char *name, const char *version)
{
	struct keel_cartridge *c = keel_xcalloc(1, sizeof *c);
	c->name = keel_xstrdup(name ? name : "");
	c->version = keel_xstrdup(version ? version : "");
	keel_arena_init(&c->arena);
	keel_map_init(&c->handlers);
	return c;
}

const char *keel_cartridge_name(const struct keel_cartridge *c)
{
	return c ? c->name : NULL;
}

const char *keel_cartridge_version(const struct keel_cartridge *c)
{
	return c ? c->version : NULL;
}

const char *keel_cartridge_hash(const struct keel_cartridge *c)
{
	return c ? c->hash : NULL;
}

struct keel_str keel_cartridge_text(const struct keel_cartridge *c)
{
	return c->text ? keel_str_make(c->text, c->text_len) : KEEL_STR_NULL;
}

/* hash = "sha256:" and the hex digest of p[0..n). */
void keel_cartridge_set_hash(struct keel_cartridge *c, const void *p, size_t n)
{
	uint8_t d[KEEL_SHA256_LEN];
	keel_sha256(p, n, d);
	static const char hex[] = "0123456789abcdef";
	memcpy(c->hash, "sha256:", 7);
	for (size_t i = 0; i < KEEL_SHA256_LEN; i++) {
		c->hash[7 + 2 * i] = hex[d[i] >> 4];
		c->hash[8 + 2 * i] = hex[d[i] & 15];
	}
	c->hash[7 + 2 * KEEL_SHA256_LEN] = '\0';
}

/* The handler map's hash: a cartridge has a few dozen types at most and
 * every event looks its type up, so a cheap mix of the length and the first
 * and last 8 bytes (types mostly differ at the end: fleet.vehicle.*) does;
 * the map compares the whole type anyway. In memory only. */
static uint64_t handler_hash(const char *type, size_t len)
{
	uint64_t a = 0, b = 0;
	if (len >= 8) {
		memcpy(&a, type, 8);
		memcpy(&b, type + len - 8, 8);
	} else {
		memcpy(&a, type, len);
	}
	uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull) ^ len) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static const struct handler *handler_find(const struct keel_cartridge *c,
					  const char *type, size_t len)
{
	uint64_t h = handler_hash(type, len);
	for (size_t i = keel_map_first(&c->handlers, h); i != SIZE_MAX;
	     i = keel_map_next(&c->handlers, h, i)) {
		const struct handler *hd = c->handlers.values[i];
		if (hd->type.len == len && keel_bytes_eq(hd->type.ptr, type, len))
			return hd;
	}
	return NULL;
}

int keel_cartridge_handler_add(struct keel_cartridge *c, const char *type, size_t len,
			       keel_handler_fn fn, void *userdata)
{
	if (len == 0 || len > KEEL_TYPE_MAX || handler_find(c, type, len))
		return KEEL_EINVAL;
	struct handler *hd = keel_arena_alloc(&c->arena, sizeof *hd);
	hd->type = keel_arena_str(&c->arena, keel_str_make(type, len));
	hd->fn = fn;
	hd->userdata = userdata;
	keel_map_put(&c->handlers, handler_hash(type, len), hd);
	return 0;
}

int keel_cartridge_on(struct keel_cartridge *c, const char *event_type,
		      keel_handler_fn fn, void *userdata)
{
	if (!c || !event_type || !fn)
		return KEEL_EINVAL;
	return keel_cartridge_handler_add(c, event_type, strlen(event_type), fn,
					  userdata);
}

void keel_cartridge_free(struct keel_cartridge *c)
{
	if (!c)
		return;
	if (c->fini)
		c->fini(c);
	keel_map_free(&c->handlers);
	keel_arena_free(&c->arena);
	free(c->name);
	free(c->version);
	free(c->text);
	/* Last: the handlers' code lives in the shared object. */
	if (c->dl)
		dlclose(c->dl);
	free(c);
}

enum keel_run_result keel_cartridge_run(const struct keel_cartridge *c,
					const struct keel_json_doc *doc,
					const struct keel_envelope *env,
					struct keel_arena *arena, struct keel_op **ops,
					size_t *nops, struct keel_buf *msg)
{
	*ops = NULL;
	*nops = 0;
	const struct handler *hd = handler_find(c, env->type.ptr, env->type.len);
	if (!hd)
		return KEEL_RUN_UNHANDLED;
	struct keel_event ev = {doc, env, arena};
	struct keel_ctx ctx = {.ev = &ev, .arena = arena, .msg = msg};
	if (hd->fn == keel_plan_handler) {
		/* A plan knows its count: one array, never regrown. */
		const struct plan *plan = hd->userdata;
		ctx.cap = plan->nops;
		if (ctx.cap)
			ctx.ops = keel_arena_alloc(arena, ctx.cap * sizeof *ctx.ops);
	}
	int rc = hd->fn(&ctx, &ev, hd->userdata);
	if (rc != 0 && !ctx.rejected)
		keel_ctx_reject(&ctx, "handler failed with code %d", rc);
	if (ctx.rejected)
		return KEEL_RUN_REJECTED;
	*ops = ctx.ops;
	*nops = ctx.nops;
	return KEEL_RUN_OK;
}

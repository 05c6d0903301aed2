/*
 * cartridge.h - running a cartridge on one event (internal side of the
 * cartridge API in keel.h).
 *
 * A declarative cartridge is compiled at load into a plan: per event type a
 * list of operations whose templates are pre-split into literal pieces and
 * pre-parsed JSON Pointers, so that handling an event parses nothing of the
 * cartridge. Declarative plans run through the same keel_ctx calls a C
 * handler uses.
 */
#ifndef KEEL_CARTRIDGE_H
#define KEEL_CARTRIDGE_H

#include "keel.h"
#include "event/batch.h"
#include "event/envelope.h"
#include "event/json.h"
#include "util.h"

/* Rendered limits (docs/cartridges.md); the same on every store. */
#define KEEL_SUBJECT_MAX 255
#define KEEL_NAME_MAX 128
#define KEEL_VALUE_MAX (64 * 1024)

enum keel_run_result {
	KEEL_RUN_OK = 0,
	KEEL_RUN_UNHANDLED = 1, /* no handler for the type: log only */
	KEEL_RUN_REJECTED = -1, /* msg says why */
};

/* Runs the handler for env's type. On KEEL_RUN_OK, ops and nops hold the
 * operations (allocated in arena, strings copied there). On rejection the
 * rule broken is appended to msg (no position prefix) and nothing is
 * returned. */
enum keel_run_result keel_cartridge_run(const struct keel_cartridge *c,
					const struct keel_json_doc *doc,
					const struct keel_envelope *env,
					struct keel_arena *arena, struct keel_op **ops,
					size_t *nops, struct keel_buf *msg);

/* How an event of a type may mention an entity (by an entity operation)
 * that no row it asserts names (rowless.c), flags: */
enum keel_rowless {
	KEEL_ROWLESS_HIDDEN = 1,  /* nor the text of its envelope */
	KEEL_ROWLESS_UNROWED = 2, /* (its text may be in the envelope) */
	/* once keel forget has redacted the event: a field a row-making
	 * operation read gone, the entity operation kept */
	KEEL_ROWLESS_REDACTED = 4,
};
/* Calls fn for each type of c that has any of them (how: the flags). */
void keel_cartridge_rowless(const struct keel_cartridge *c,
			    void (*fn)(void *ud, struct keel_str type, unsigned how), void *ud);

/* A JSON cartridge's compacted text (what a store records, so that it can
 * compile it again); absent for a shared object or a C-built one. */
struct keel_str keel_cartridge_text(const struct keel_cartridge *c);

/* The built-in fleet cartridge's JSON text (cartridges/fleet.json, embedded
 * at build time). */
extern const char keel_fleet_cartridge_json[];
extern const size_t keel_fleet_cartridge_json_len;

#endif

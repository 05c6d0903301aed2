/*
 * rowless.c - which event types may mention an entity that neither a row
 * they assert nor their envelope's text names (keel forget,
 * docs/semantics.md, "Forgetting").
 *
 * keel forget finds the events that named a subject through the rows
 * naming it and through the subject's bytes in the envelopes. Every
 * operation but `entity` asserts a row naming its subject (and a
 * relation's object), so only an entity operation can escape both: its
 * subject built from other text ("vehicle:{/data/v}" over "V-1"), from a
 * default, or by C code; and only an entity operation mentions an entity
 * without a row (which keel forget's mending of mentions relies on). Read
 * from the compiled plans, an entity operation of a type is:
 *  - covered when another operation of the type that never skips asserts
 *    a row whose subject (or object) is the same template: whenever the
 *    entity operation runs, so does the row. Except in an event keel
 *    forget redacted, where a pointer found missing skips its operation,
 *    so the covering row may be gone while the entity operation stays
 *    (KEEL_ROWLESS_REDACTED);
 *  - else a lone pointer without a default: no row, but it renders text
 *    the envelope holds (a string's bytes, or an escape, which forget
 *    reads anyway; a number's lexeme; true, false) (KEEL_ROWLESS_UNROWED);
 *  - else neither rows nor text find it (KEEL_ROWLESS_HIDDEN too).
 * A type handled by C code, which Keel cannot read, is all three.
 */
#include "parts.h"

#include <string.h>

static bool tmpl_skips(const struct tmpl *t)
{
	return t->present && t->absent == ABSENT_SKIPS;
}

/* Whether op always runs when the event is accepted and not redacted:
 * none of its pointers may skip it. */
static bool never_skips(const struct plan_op *op)
{
	return !tmpl_skips(&op->subject) && !tmpl_skips(&op->name) &&
	       !tmpl_skips(&op->object) &&
	       !(op->kind == KEEL_OP_FACT && op->value.from &&
		 op->value.absent == ABSENT_SKIPS);
}

/* Whether row (a template of a row-making operation that never skips)
 * renders what entity renders whenever entity runs: the same pieces; a
 * default of entity's must be row's too (otherwise, with the pointer
 * missing, the event is rejected or entity is skipped). */
static bool renders_as(const struct tmpl *row, const struct tmpl *entity)
{
	if (!row->present || !keel_tmpl_same_pieces(row, entity))
		return false;
	if (entity->absent != ABSENT_DEFAULTS)
		return true;
	return row->absent == ABSENT_DEFAULTS &&
	       keel_str_eq(keel_str_make(row->dflt, row->dflt_len),
			   keel_str_make(entity->dflt, entity->dflt_len));
}

static bool covered(const struct plan *plan, const struct tmpl *subject)
{
	for (size_t i = 0; i < plan->nops; i++) {
		const struct plan_op *op = &plan->ops[i];
		if (op->kind == KEEL_OP_ENTITY || !never_skips(op))
			continue;
		if (renders_as(&op->subject, subject))
			return true;
		if ((op->kind == KEEL_OP_LINK || op->kind == KEEL_OP_UNLINK) &&
		    renders_as(&op->object, subject))
			return true;
	}
	return false;
}

static unsigned plan_rowless(const struct plan *plan)
{
	unsigned how = 0;
	for (size_t i = 0; i < plan->nops; i++) {
		const struct tmpl *t = &plan->ops[i].subject;
		if (plan->ops[i].kind != KEEL_OP_ENTITY)
			continue;
		if (covered(plan, t))
			how |= KEEL_ROWLESS_REDACTED;
		else if (t->npieces == 1 && t->pieces[0].ptr &&
			 t->absent != ABSENT_DEFAULTS)
			how |= KEEL_ROWLESS_UNROWED; /* the envelope holds its text */
		else
			how |= KEEL_ROWLESS_HIDDEN | KEEL_ROWLESS_UNROWED;
	}
	return how;
}

void keel_cartridge_rowless(const struct keel_cartridge *c,
			    void (*fn)(void *ud, struct keel_str type, unsigned how),
			    void *ud)
{
	for (size_t i = 0; i < c->handlers.cap; i++) {
		if (!c->handlers.hashes[i])
			continue;
		const struct handler *hd = c->handlers.values[i];
		unsigned how = hd->fn == keel_plan_handler
				   ? plan_rowless(hd->userdata)
				   : KEEL_ROWLESS_HIDDEN | KEEL_ROWLESS_UNROWED |
					 KEEL_ROWLESS_REDACTED;
		if (how)
			fn(ud, hd->type, how);
	}
}

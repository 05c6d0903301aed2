/*
 * plan.c - running a declarative cartridge's plan on one event.
 *
 * keel_plan_handler is an ordinary keel_handler_fn: it renders each
 * operation's templates and value (what an optional or defaulted pointer
 * does when it finds nothing included) and hands the result to
 * keel_ctx_add, as a C handler's keel_ctx_* calls do. Templates render
 * into stack buffers of the limit's size, so handling an event parses
 * nothing of the cartridge and allocates nothing per template.
 */
#include "parts.h"

#include <stdio.h>
#include <string.h>

const char *const keel_unrenderable[] = {
    [KEEL_JSON_NULL] = "null",
    [KEEL_JSON_ARRAY] = "an array",
    [KEEL_JSON_OBJECT] = "an object",
};

/* What tmpl_render and value_render return, beside 0 and a rejection, when
 * a pointer marked optional finds nothing: the operation is skipped. */
enum { OP_SKIPPED = 1 };

static int pointer_fail(struct keel_ctx *ctx, size_t opno, enum keel_op_kind kind,
			const struct ptr *p, const char *what)
{
	return keel_ctx_op_fail(ctx, opno, kind, "pointer \"%.*s\": %s", (int)p->text_len,
				p->text, what);
}

/* The text a template renders for a scalar: a string decoded, a number's
 * lexeme, true or false. False for null, arrays and objects. */
bool keel_scalar_text(const struct keel_json *v, const char **s, size_t *n)
{
	switch (v->type) {
	case KEEL_JSON_STRING:
	case KEEL_JSON_NUMBER:
		*s = v->str;
		*n = v->len;
		return true;
	case KEEL_JSON_TRUE:
		*s = "true";
		*n = 4;
		return true;
	case KEEL_JSON_FALSE:
		*s = "false";
		*n = 5;
		return true;
	case KEEL_JSON_NULL:
	case KEEL_JSON_ARRAY:
	case KEEL_JSON_OBJECT:
		break;
	}
	return false;
}

/* What pointer p of template t renders. A pointer that is missing or null
 * rejects the event, skips the operation (OP_SKIPPED) or renders the
 * template's default, as the template says; an array or object rejects. */
static int pointer_text(struct keel_ctx *ctx, size_t opno, enum keel_op_kind kind,
			const struct tmpl *t, const struct ptr *p, const char **s,
			size_t *n)
{
	const struct keel_json *v = keel_ptr_eval(p, ctx->ev->env);
	bool absent = !v || v->type == KEEL_JSON_NULL;
	if (absent && t->absent == ABSENT_SKIPS)
		return OP_SKIPPED;
	if (absent && t->absent == ABSENT_DEFAULTS) {
		*s = t->dflt;
		*n = t->dflt_len;
		return 0;
	}
	/* In an event keel forget redacted (docs/semantics.md,
	 * "Forgetting"), a field that is not there was removed on purpose:
	 * its operation is skipped rather than the event rejected. */
	if (!v && ctx->ev->env->redacted)
		return OP_SKIPPED;
	if (!v)
		return pointer_fail(ctx, opno, kind, p, "missing");
	if (keel_scalar_text(v, s, n))
		return 0;
	char what[64];
	snprintf(what, sizeof what, "%s, not a string, number or boolean",
		 keel_unrenderable[v->type]);
	return pointer_fail(ctx, opno, kind, p, what);
}

/* Renders t into buf (max bytes); a result longer than max is rejected here
 * with the message keel_ctx_* would give. */
static int tmpl_render(struct keel_ctx *ctx, size_t opno, enum keel_op_kind kind,
		       const char *field, const struct tmpl *t, char *buf, size_t max,
		       size_t *out_len)
{
	size_t len = 0;
	for (size_t i = 0; i < t->npieces; i++) {
		const struct piece *pc = &t->pieces[i];
		const char *s = pc->lit;
		size_t n = pc->lit_len;
		if (pc->ptr) {
			int rc = pointer_text(ctx, opno, kind, t, pc->ptr, &s, &n);
			if (rc)
				return rc;
		}
		if (n > max - len)
			return keel_ctx_op_fail(ctx, opno, kind,
						"field \"%s\": longer than %zu bytes",
						field, max);
		if (n)
			memcpy(buf + len, s, n);
		len += n;
	}
	*out_len = len;
	return 0;
}

static int value_render(struct keel_ctx *ctx, size_t opno, const struct value_src *src,
			const char **json, size_t *len, bool *kept)
{
	*kept = false;
	if (!src->from) {
		*json = src->json;
		*len = src->json_len;
		return 0;
	}
	const struct keel_json *v = keel_ptr_eval(src->from, ctx->ev->env);
	if (!v && src->absent == ABSENT_SKIPS)
		return OP_SKIPPED;
	if (!v && src->absent == ABSENT_DEFAULTS) {
		*json = src->dflt; /* copied by ctx_value, as a constant is */
		*len = src->dflt_len;
		return 0;
	}
	if (!v && ctx->ev->env->redacted)
		return OP_SKIPPED; /* removed by keel forget */
	if (!v)
		return pointer_fail(ctx, opno, KEEL_OP_FACT, src->from, "missing");
	const struct keel_json_doc *doc = ctx->ev->doc;
	const char *text = doc->text + v->raw_off;
	if (v->type == KEEL_JSON_NULL) {
		*json = NULL;
		*len = 0;
	} else if ((v->type == KEEL_JSON_ARRAY || v->type == KEEL_JSON_OBJECT) &&
		   !doc->compact) {
		struct keel_str c = keel_compact_into_arena(ctx->arena, text, v->raw_len);
		*json = c.ptr;
		*len = c.len;
		*kept = true;
	} else { /* a scalar's source text is compact, and so is all of a
		  * document written without blanks (doc->compact) */
		const char *copy = ctx->ev->env->copy;
		*json = copy && doc->compact ? copy + (v->raw_off - doc->root->raw_off)
					     : text;
		*len = v->raw_len;
		*kept = copy && doc->compact;
	}
	return 0;
}

int keel_plan_handler(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
{
	const struct plan *plan = userdata;
	char subject[KEEL_SUBJECT_MAX], name[KEEL_NAME_MAX], object[KEEL_SUBJECT_MAX];
	size_t sl = 0;
	bool prev_added = false; /* the previous operation was added, not skipped */
	(void)ev;
	for (size_t i = 0; i < plan->nops; i++) {
		const struct plan_op *op = &plan->ops[i];
		size_t opno = i + 1;
		struct op_request r = {.kind = op->kind, .trusted = true};
		int rc = 0;
		/* The same template renders the same text: when the previous
		 * operation was added, subject[] still holds its subject and
		 * this one shares its copy. A skipped one may have stopped
		 * half way through rendering, and added nothing to share. */
		bool share = op->same_subject && prev_added;
		if (!share)
			rc = tmpl_render(ctx, opno, op->kind, "subject", &op->subject,
					 subject, sizeof subject, &sl);
		r.subject = subject;
		r.subject_len = sl;
		r.same_subject = share;
		/* A name without pointers (most predicates, relations and
		 * kinds) is its literal, checked against the limit at compile
		 * time: handed over as it is, not rendered. */
		if (!rc && op->name.present && op->name.npieces == 1 &&
		    !op->name.pieces[0].ptr) {
			r.name = op->name.pieces[0].lit;
			r.name_len = op->name.pieces[0].lit_len;
			r.name_kept = true;
		} else if (!rc && op->name.present) {
			rc = tmpl_render(ctx, opno, op->kind,
					 keel_op_name_fields[op->kind], &op->name, name,
					 sizeof name, &r.name_len);
			r.name = name;
		}
		if (!rc && op->object.present) {
			rc = tmpl_render(ctx, opno, op->kind, "object", &op->object,
					 object, sizeof object, &r.object_len);
			r.object = object;
		}
		if (!rc && op->kind == KEEL_OP_FACT)
			rc = value_render(ctx, opno, &op->value, &r.value, &r.value_len,
					  &r.value_kept);
		if (rc == OP_SKIPPED) {
			/* Counted all the same, so that a later operation's
			 * message names its place in the cartridge's list. */
			ctx->calls++;
			prev_added = false;
			continue;
		}
		if (rc || (rc = keel_ctx_add(ctx, &r)))
			return rc;
		prev_added = true;
	}
	return 0;
}

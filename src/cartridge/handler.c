/*
 * handler.c - the C handler API, which declarative plans use too
 * (plan.c): what a handler reads of its event (keel_event_*:
 * the envelope's attributes, any member by JSON Pointer) and the
 * operations it asks for (keel_ctx_entity, _fact, _unset, _link, _unlink,
 * _reject), each field checked against its limit in the order of the
 * arguments, then copied once into the batch arena: both kinds of
 * cartridge share every limit and every message.
 */
#include "parts.h"
#include "event/json_write.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "event/utf8.h"

const char *const keel_op_names[] = {
    [KEEL_OP_ENTITY] = "entity", [KEEL_OP_FACT] = "fact",     [KEEL_OP_UNSET] = "unset",
    [KEEL_OP_LINK] = "link",	 [KEEL_OP_UNLINK] = "unlink",
};

/* The field a kind's name template fills. */
const char *const keel_op_name_fields[] = {
    [KEEL_OP_ENTITY] = "kind",	   [KEEL_OP_FACT] = "predicate",
    [KEEL_OP_UNSET] = "predicate", [KEEL_OP_LINK] = "relation",
    [KEEL_OP_UNLINK] = "relation",
};

static void ctx_prefix(struct keel_ctx *ctx)
{
	keel_buf_adds(ctx->msg, "type ");
	keel_buf_add_json_str(ctx->msg, ctx->ev->env->type);
	keel_buf_adds(ctx->msg, ": ");
}

/* Rejects the event with `type "T": operation N (kind): ...`. */
int keel_ctx_op_fail(struct keel_ctx *ctx, size_t opno, enum keel_op_kind kind,
		     const char *fmt, ...)
{
	if (ctx->rejected)
		return KEEL_EREJECTED;
	ctx->rejected = true;
	ctx_prefix(ctx);
	keel_buf_addf(ctx->msg, "operation %zu (%s): ", opno, keel_op_names[kind]);
	va_list ap;
	va_start(ap, fmt);
	keel_buf_vaddf(ctx->msg, fmt, ap);
	va_end(ap);
	return KEEL_EREJECTED;
}

int keel_ctx_reject(struct keel_ctx *ctx, const char *fmt, ...)
{
	if (!ctx)
		return KEEL_EREJECTED;
	if (ctx->rejected) /* the first reason is the one reported */
		return KEEL_EREJECTED;
	ctx->rejected = true;
	ctx_prefix(ctx);
	va_list ap;
	va_start(ap, fmt);
	keel_buf_vaddf(ctx->msg, fmt, ap);
	va_end(ap);
	return KEEL_EREJECTED;
}

/* Checks one rendered string against its limit (docs/cartridges.md, "Limits"). */
static int ctx_check(struct keel_ctx *ctx, const struct op_request *r, const char *field,
		     const char *s, size_t len, size_t max)
{
	enum keel_op_kind kind = r->kind;
	if (!s)
		return keel_ctx_op_fail(ctx, ctx->calls, kind, "field \"%s\": missing",
					field);
	if (len == 0)
		return keel_ctx_op_fail(ctx, ctx->calls, kind, "field \"%s\": empty",
					field);
	if (len > max)
		return keel_ctx_op_fail(ctx, ctx->calls, kind,
					"field \"%s\": longer than %zu bytes", field,
					max);
	if (!r->trusted && !keel_utf8_valid(s, len))
		return keel_ctx_op_fail(ctx, ctx->calls, kind,
					"field \"%s\": invalid UTF-8", field);
	/* Valid JSON ("\u0000") and valid UTF-8, but names travel as C
	 * strings through show, why, the HTTP path and SQL text: an
	 * identifier holding NUL could be stored and never named again
	 * (docs/cartridges.md, "Limits"). */
	if (memchr(s, 0, len))
		return keel_ctx_op_fail(ctx, ctx->calls, kind,
					"field \"%s\": contains U+0000 (NUL)", field);
	return 0;
}

/* Compacts validated JSON text into the arena through keel_json_compact_text,
 * which reserves exactly len bytes: a buffer of len + 1 arena bytes never
 * grows, so this allocates nothing beyond the arena. */
struct keel_str keel_compact_into_arena(struct keel_arena *a, const char *text,
					size_t len)
{
	struct keel_buf b = {keel_arena_alloc(a, len + 1), 0, len + 1};
	char *mem = b.data;
	keel_json_compact_text(text, len, &b);
	if (b.data != mem)
		abort(); /* keel_json_compact_text broke its contract */
	return keel_str_make(b.data, b.len);
}

static struct keel_op *ctx_push(struct keel_ctx *ctx, enum keel_op_kind kind)
{
	if (ctx->nops == ctx->cap) {
		size_t cap = ctx->cap ? 2 * ctx->cap : 8;
		struct keel_op *ops = keel_arena_alloc(ctx->arena, cap * sizeof *ops);
		if (ctx->nops)
			memcpy(ops, ctx->ops, ctx->nops * sizeof *ops);
		ctx->ops = ops;
		ctx->cap = cap;
	}
	struct keel_op *op = &ctx->ops[ctx->nops++];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	return op;
}

static struct keel_str arena_copy(struct keel_ctx *ctx, const char *s, size_t len)
{
	return keel_arena_str(ctx->arena, keel_str_make(s, len));
}

/* Every operation starts here: a rejected context takes no more. */
static int ctx_begin(struct keel_ctx *ctx)
{
	if (!ctx)
		return KEEL_EINVAL;
	if (ctx->rejected)
		return KEEL_EREJECTED;
	ctx->calls++;
	return 0;
}

/* A value from a C handler: any JSON text, compacted; null means none. */
static int ctx_untrusted_value(struct keel_ctx *ctx, const char *json, size_t len,
			       struct keel_str *out)
{
	struct keel_json_doc doc;
	struct keel_json_error err;
	keel_json_doc_init(&doc);
	if (keel_json_parse(&doc, json, len, &err) != 0) {
		keel_json_doc_free(&doc);
		return keel_ctx_op_fail(ctx, ctx->calls, KEEL_OP_FACT,
					"field \"value\": not JSON: %s at byte %zu",
					err.msg, err.offset);
	}
	bool is_null = doc.root->type == KEEL_JSON_NULL;
	keel_json_doc_free(&doc);
	*out = is_null ? KEEL_STR_NULL : keel_compact_into_arena(ctx->arena, json, len);
	return 0;
}

/* The fact's value as the operation keeps it: a plan's as it is or copied,
 * a C handler's parsed and compacted; then its limit. */
static int ctx_value(struct keel_ctx *ctx, const struct op_request *r,
		     struct keel_str *out)
{
	*out = KEEL_STR_NULL;
	if (r->value && r->trusted) {
		if (r->value_len > KEEL_VALUE_MAX)
			out->len = r->value_len; /* fails below, uncopied */
		else if (r->value_kept)
			*out = keel_str_make(r->value, r->value_len);
		else
			*out = arena_copy(ctx, r->value, r->value_len);
	} else if (r->value) {
		int rc = ctx_untrusted_value(ctx, r->value, r->value_len, out);
		if (rc)
			return rc;
	}
	if (out->len > KEEL_VALUE_MAX)
		return keel_ctx_op_fail(ctx, ctx->calls, KEEL_OP_FACT,
					"field \"value\": longer than %d bytes",
					KEEL_VALUE_MAX);
	return 0;
}

/* Checks an operation's fields in the order of its arguments and adds it.
 * One copy of a subject is shared with the previous operation's. */
int keel_ctx_add(struct keel_ctx *ctx, const struct op_request *r)
{
	int rc = ctx_begin(ctx);
	if (rc)
		return rc;
	bool relation = r->kind == KEEL_OP_LINK || r->kind == KEEL_OP_UNLINK;
	bool name = r->kind != KEEL_OP_ENTITY || r->name;
	struct keel_str value = KEEL_STR_NULL;
	if ((rc = ctx_check(ctx, r, "subject", r->subject, r->subject_len,
			    KEEL_SUBJECT_MAX)) ||
	    (name && (rc = ctx_check(ctx, r, keel_op_name_fields[r->kind], r->name,
				     r->name_len, KEEL_NAME_MAX))) ||
	    (relation && (rc = ctx_check(ctx, r, "object", r->object, r->object_len,
					 KEEL_SUBJECT_MAX))) ||
	    (r->kind == KEEL_OP_FACT && (rc = ctx_value(ctx, r, &value))))
		return rc;
	struct keel_op *op = ctx_push(ctx, r->kind);
	if (r->same_subject && ctx->nops >= 2)
		op->subject = ctx->ops[ctx->nops - 2].subject;
	else
		op->subject = arena_copy(ctx, r->subject, r->subject_len);
	if (name)
		op->name = r->name_kept ? keel_str_make(r->name, r->name_len)
					: arena_copy(ctx, r->name, r->name_len);
	if (relation)
		op->object = arena_copy(ctx, r->object, r->object_len);
	op->value = value;
	return 0;
}

int keel_ctx_entity(struct keel_ctx *ctx, const char *subject, size_t subject_len,
		    const char *kind, size_t kind_len)
{
	const struct op_request r = {.kind = KEEL_OP_ENTITY,
				     .subject = subject,
				     .subject_len = subject_len,
				     .name = kind,
				     .name_len = kind_len};
	return keel_ctx_add(ctx, &r);
}

int keel_ctx_fact(struct keel_ctx *ctx, const char *subject, size_t subject_len,
		  const char *predicate, size_t predicate_len, const char *value_json,
		  size_t value_len)
{
	const struct op_request r = {.kind = KEEL_OP_FACT,
				     .subject = subject,
				     .subject_len = subject_len,
				     .name = predicate,
				     .name_len = predicate_len,
				     .value = value_json,
				     .value_len = value_len};
	return keel_ctx_add(ctx, &r);
}

int keel_ctx_unset(struct keel_ctx *ctx, const char *subject, size_t subject_len,
		   const char *predicate, size_t predicate_len)
{
	const struct op_request r = {.kind = KEEL_OP_UNSET,
				     .subject = subject,
				     .subject_len = subject_len,
				     .name = predicate,
				     .name_len = predicate_len};
	return keel_ctx_add(ctx, &r);
}

static int ctx_relation(struct keel_ctx *ctx, enum keel_op_kind kind, const char *subject,
			size_t subject_len, const char *relation, size_t relation_len,
			const char *object, size_t object_len)
{
	const struct op_request r = {.kind = kind,
				     .subject = subject,
				     .subject_len = subject_len,
				     .name = relation,
				     .name_len = relation_len,
				     .object = object,
				     .object_len = object_len};
	return keel_ctx_add(ctx, &r);
}

int keel_ctx_link(struct keel_ctx *ctx, const char *subject, size_t subject_len,
		  const char *relation, size_t relation_len, const char *object,
		  size_t object_len)
{
	return ctx_relation(ctx, KEEL_OP_LINK, subject, subject_len, relation,
			    relation_len, object, object_len);
}

int keel_ctx_unlink(struct keel_ctx *ctx, const char *subject, size_t subject_len,
		    const char *relation, size_t relation_len, const char *object,
		    size_t object_len)
{
	return ctx_relation(ctx, KEEL_OP_UNLINK, subject, subject_len, relation,
			    relation_len, object, object_len);
}

/* ---------------------------------------------------------- the event */

const char *keel_event_type(const struct keel_event *ev)
{
	return ev->env->type.ptr;
}

const char *keel_event_id(const struct keel_event *ev)
{
	return ev->env->id.ptr;
}

const char *keel_event_tenant(const struct keel_event *ev)
{
	return ev->env->tenant.ptr;
}

int64_t keel_event_time(const struct keel_event *ev)
{
	return ev->env->time;
}

int keel_event_get(const struct keel_event *ev, const char *pointer,
		   struct keel_value *out)
{
	if (!ev || !pointer || !out)
		return KEEL_EINVAL;
	struct ptr p;
	if (keel_ptr_compile(ev->arena, pointer, strlen(pointer), &p))
		return KEEL_EINVAL;
	const struct keel_json *v = keel_ptr_eval(&p, ev->env);
	if (!v)
		return KEEL_ENOTFOUND;
	struct keel_str json;
	if (v->type == KEEL_JSON_ARRAY || v->type == KEEL_JSON_OBJECT)
		json = keel_compact_into_arena(ev->arena, ev->doc->text + v->raw_off,
					       v->raw_len);
	else /* a scalar's source text is already compact */
		json = keel_arena_str(
		    ev->arena, keel_str_make(ev->doc->text + v->raw_off, v->raw_len));
	out->json = json.ptr;
	out->json_len = json.len;
	switch (v->type) {
	case KEEL_JSON_NULL:
		out->type = KEEL_VALUE_NULL;
		out->text = "null";
		out->len = 4;
		break;
	case KEEL_JSON_FALSE:
	case KEEL_JSON_TRUE:
		out->type = KEEL_VALUE_BOOL;
		out->text = v->type == KEEL_JSON_TRUE ? "true" : "false";
		out->len = strlen(out->text);
		break;
	case KEEL_JSON_NUMBER:
	case KEEL_JSON_STRING:
		out->type =
		    v->type == KEEL_JSON_STRING ? KEEL_VALUE_STRING : KEEL_VALUE_NUMBER;
		out->text = v->str;
		out->len = v->len;
		break;
	case KEEL_JSON_ARRAY:
	case KEEL_JSON_OBJECT:
		out->type =
		    v->type == KEEL_JSON_ARRAY ? KEEL_VALUE_ARRAY : KEEL_VALUE_OBJECT;
		out->text = json.ptr;
		out->len = json.len;
		break;
	}
	return 0;
}

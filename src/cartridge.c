/*
 * cartridge.c - cartridges: loading (built-in, JSON file, shared object),
 * compiling the declarative form into a plan, the C handler API
 * (keel_ctx_*, keel_event_*) and running a cartridge on one event.
 *
 * A declarative cartridge becomes, per event type, a plan: an array of
 * operations whose templates are pre-split into literal pieces and
 * pre-parsed JSON Pointer tokens, and whose constants are pre-compacted.
 * A plan is run by plan_handler, an ordinary keel_handler_fn, so declarative
 * and C cartridges share every keel_ctx_* call, limit and message.
 *
 * Handling an event parses nothing of the cartridge and allocates nothing
 * per template: templates render into stack buffers of the limit's size and
 * keel_ctx_* copies the result once into the batch arena.
 *
 * Layout: pointers, templates, the context operations, the plan runner, the
 * compiler, loading, keel_cartridge_run.
 */
#include "cartridge.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "utf8.h"

struct handler {
	struct keel_str type; /* NUL-terminated copy in the cartridge arena */
	keel_handler_fn fn;
	void *userdata;
};

typedef void (*keel_cartridge_fini_fn)(struct keel_cartridge *c);

struct keel_cartridge {
	char *name;
	char *version;
	/* What a store records of it (docs/cartridges.md, "The recorded
	 * cartridge"): "sha256:" and the hex digest of its compacted JSON text,
	 * or of a shared object's file; "" for one built with
	 * keel_cartridge_new. text: the compacted JSON (NULL if not JSON). */
	char hash[KEEL_CARTRIDGE_HASH_BUFSZ];
	char *text;
	size_t text_len;
	struct keel_arena arena;  /* handlers, plans and every string they hold */
	struct keel_map handlers; /* keel_hash64(type) -> struct handler */
	void *dl;		  /* shared-object cartridge: its handle */
	keel_cartridge_fini_fn fini;
};

struct keel_event {
	const struct keel_json_doc *doc;
	const struct keel_envelope *env;
	struct keel_arena *arena; /* where keel_event_get puts its texts */
};

struct keel_ctx {
	const struct keel_event *ev;
	struct keel_arena *arena;
	struct keel_op *ops;
	size_t nops;
	size_t cap;
	size_t calls; /* operations requested so far: numbers them in messages */
	struct keel_buf *msg;
	bool rejected;
};

/* One operation as a handler asks for it: keel_ctx_* (C handlers) and
 * plans (declarative cartridges) both hand one to ctx_add. */
struct op_request {
	enum keel_op_kind kind;
	const char *subject, *name, *object; /* name: kind, predicate, relation */
	size_t subject_len, name_len, object_len;
	const char *value; /* a fact's JSON text; NULL: none */
	size_t value_len;
	/* What a plan knows and a C handler does not. trusted: the texts come
	 * from validated JSON, so UTF-8 and JSON syntax need no second check.
	 * same_subject: the subject is the previous operation's text, and
	 * shares its copy. name_kept, value_kept: the text lives as long as
	 * the operations already (the plan's own literal; the arena or the
	 * envelope's copy, keel_envelope.copy), so it is not copied again. */
	bool trusted, same_subject, name_kept, value_kept;
};

static const char *const op_names[] = {
    [KEEL_OP_ENTITY] = "entity", [KEEL_OP_FACT] = "fact",     [KEEL_OP_UNSET] = "unset",
    [KEEL_OP_LINK] = "link",	 [KEEL_OP_UNLINK] = "unlink",
};

/* The field a kind's name template fills. */
static const char *const name_fields[] = {
    [KEEL_OP_ENTITY] = "kind",	   [KEEL_OP_FACT] = "predicate",
    [KEEL_OP_UNSET] = "predicate", [KEEL_OP_LINK] = "relation",
    [KEEL_OP_UNLINK] = "relation",
};

/* ------------------------------------------------------------- pointers */

struct ptr_tok {
	const char *s; /* unescaped */
	size_t len;
	size_t index; /* when is_index: the array index it names */
	bool is_index;
};

/* An RFC 6901 pointer split once into unescaped tokens. */
struct ptr {
	const char *text; /* as written, for messages */
	size_t text_len;
	struct ptr_tok *toks;
	size_t ntoks;
	bool in_data; /* the first token is "data": start at env->data */
};

/* Parses text into p (tokens allocated in a). Returns NULL, or a static
 * description of the rule broken. */
static const char *ptr_compile(struct keel_arena *a, const char *text, size_t len,
			       struct ptr *p)
{
	p->text = text;
	p->text_len = len;
	p->toks = NULL;
	p->ntoks = 0;
	p->in_data = false;
	if (len == 0)
		return NULL; /* the whole envelope */
	if (text[0] != '/')
		return "must be empty or start with \"/\"";
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '/')
			n++;
		else if (text[i] == '~' &&
			 (i + 1 == len || (text[i + 1] != '0' && text[i + 1] != '1')))
			return "\"~\" not followed by \"0\" or \"1\"";
	}
	p->toks = keel_arena_alloc(a, n * sizeof *p->toks);
	/* Unescaping only shrinks a token, so len bytes hold all of them. */
	char *out = keel_arena_alloc(a, len + 1);
	size_t i = 1;
	for (size_t k = 0; k < n; k++) {
		struct ptr_tok *t = &p->toks[k];
		t->s = out;
		while (i < len && text[i] != '/') {
			char c = text[i++];
			if (c == '~')
				c = text[i++] == '0' ? '~' : '/';
			*out++ = c;
		}
		i++; /* the '/' ending the token */
		t->len = (size_t)(out - t->s);
		*out++ = 0;
		/* RFC 6901 array index: "0" or digits without a leading zero. */
		t->is_index =
		    t->len > 0 && t->len <= 18 && (t->len == 1 || t->s[0] != '0');
		t->index = 0;
		for (size_t j = 0; j < t->len && t->is_index; j++) {
			if (t->s[j] < '0' || t->s[j] > '9')
				t->is_index = false;
			else
				t->index = t->index * 10 + (size_t)(t->s[j] - '0');
		}
	}
	p->ntoks = n;
	p->in_data = n && p->toks[0].len == 4 && memcmp(p->toks[0].s, "data", 4) == 0;
	return NULL;
}

/* Resolves p in the event. Most pointers start with /data, the member the
 * envelope reader has already found: they start there. */
static const struct keel_json *ptr_eval(const struct ptr *p,
					const struct keel_envelope *env)
{
	const struct keel_json *v = env->root;
	size_t k = 0;
	if (p->in_data && env->data) {
		v = env->data;
		k = 1;
	}
	for (; k < p->ntoks && v; k++) {
		const struct ptr_tok *t = &p->toks[k];
		const struct keel_json *m = NULL;
		if (v->type == KEEL_JSON_OBJECT) {
			/* Keys of one length mostly differ in their first
			 * byte: test it before comparing the rest (a parsed key
			 * is NUL-terminated, so key[0] is readable when empty);
			 * keys are short, compared inline, not by memcmp. */
			char t0 = t->len ? t->s[0] : 0;
			for (m = v->child; m; m = m->next)
				if (m->key_len == t->len && m->key[0] == t0 &&
				    keel_bytes_eq(m->key, t->s, t->len))
					break;
		} else if (v->type == KEEL_JSON_ARRAY && t->is_index) {
			size_t i = t->index;
			for (m = v->child; m && i; m = m->next)
				i--;
		}
		v = m;
	}
	return v;
}

/* ------------------------------------------------------------ templates */

/* A template is literal pieces and pointers in order: "vehicle:{/data/id}"
 * is the literal "vehicle:" then the pointer /data/id. */
struct piece {
	const char *lit; /* literal text when ptr is NULL */
	size_t lit_len;
	struct ptr *ptr;
};

/* What a plan does when a pointer finds nothing (docs/cartridges.md,
 * "Fields a producer may leave out"). For a template, a pointer landing on
 * null finds nothing too: null can never render into a name. For a value it
 * does not: null is a value, "no value", and asserted as such. */
enum on_absent {
	ABSENT_REJECTS = 0, /* the event is rejected: the field is required */
	ABSENT_SKIPS,	    /* "optional": true: the operation is skipped */
	ABSENT_DEFAULTS,    /* "default": V: V stands in for what is absent */
};

struct tmpl {
	struct piece *pieces;
	size_t npieces;
	bool present; /* the field was given (entity "kind" is optional) */
	bool has_ptr; /* some piece is a pointer */
	size_t lit_len; /* the literal pieces' bytes */
	enum on_absent absent;
	const char *dflt; /* ABSENT_DEFAULTS: the default, rendered at load */
	size_t dflt_len;
};

/* The value of a fact: a pointer into the event, or a constant. */
struct value_src {
	struct ptr *from; /* NULL: a constant */
	const char *json; /* the constant compacted; NULL for JSON null */
	size_t json_len;
	enum on_absent absent; /* when from finds nothing */
	const char *dflt;      /* ABSENT_DEFAULTS: compacted; NULL for JSON null */
	size_t dflt_len;
};

struct plan_op {
	enum keel_op_kind kind;
	bool same_subject; /* subject template equal to the previous op's */
	struct tmpl subject;
	struct tmpl name; /* kind, predicate or relation */
	struct tmpl object;
	struct value_src value;
};

struct plan {
	struct plan_op *ops;
	size_t nops;
};

/* -------------------------------------------------- context operations */

static void ctx_prefix(struct keel_ctx *ctx)
{
	keel_buf_adds(ctx->msg, "type ");
	keel_buf_add_json_str(ctx->msg, ctx->ev->env->type);
	keel_buf_adds(ctx->msg, ": ");
}

/* Rejects the event with `type "T": operation N (kind): ...`. */
static int ctx_op_fail(struct keel_ctx *ctx, size_t opno, enum keel_op_kind kind,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int ctx_op_fail(struct keel_ctx *ctx, size_t opno, enum keel_op_kind kind,
		       const char *fmt, ...)
{
	if (ctx->rejected)
		return KEEL_EREJECTED;
	ctx->rejected = true;
	ctx_prefix(ctx);
	keel_buf_addf(ctx->msg, "operation %zu (%s): ", opno, op_names[kind]);
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
		return ctx_op_fail(ctx, ctx->calls, kind, "field \"%s\": missing", field);
	if (len == 0)
		return ctx_op_fail(ctx, ctx->calls, kind, "field \"%s\": empty", field);
	if (len > max)
		return ctx_op_fail(ctx, ctx->calls, kind,
				   "field \"%s\": longer than %zu bytes", field, max);
	if (!r->trusted && !keel_utf8_valid(s, len))
		return ctx_op_fail(ctx, ctx->calls, kind, "field \"%s\": invalid UTF-8",
				   field);
	/* Valid JSON ("\u0000") and valid UTF-8, but names travel as C
	 * strings through show, why, the HTTP path and SQL text: an
	 * identifier holding NUL could be stored and never named again
	 * (docs/cartridges.md, "Limits"). */
	if (memchr(s, 0, len))
		return ctx_op_fail(ctx, ctx->calls, kind,
				   "field \"%s\": contains U+0000 (NUL)", field);
	return 0;
}

/* Compacts validated JSON text into the arena through keel_json_compact_text,
 * which reserves exactly len bytes: a buffer of len + 1 arena bytes never
 * grows, so this allocates nothing beyond the arena. */
static struct keel_str compact_into_arena(struct keel_arena *a, const char *text,
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
		return ctx_op_fail(ctx, ctx->calls, KEEL_OP_FACT,
				   "field \"value\": not JSON: %s at byte %zu", err.msg,
				   err.offset);
	}
	bool is_null = doc.root->type == KEEL_JSON_NULL;
	keel_json_doc_free(&doc);
	*out = is_null ? KEEL_STR_NULL : compact_into_arena(ctx->arena, json, len);
	return 0;
}

/* The fact's value as the operation keeps it: a plan's as it is or copied,
 * a C handler's parsed and compacted; then its limit. */
static int ctx_value(struct keel_ctx *ctx, const struct op_request *r, struct keel_str *out)
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
		return ctx_op_fail(ctx, ctx->calls, KEEL_OP_FACT,
				   "field \"value\": longer than %d bytes",
				   KEEL_VALUE_MAX);
	return 0;
}

/* Checks an operation's fields in the order of its arguments and adds it.
 * One copy of a subject is shared with the previous operation's. */
static int ctx_add(struct keel_ctx *ctx, const struct op_request *r)
{
	int rc = ctx_begin(ctx);
	if (rc)
		return rc;
	bool relation = r->kind == KEEL_OP_LINK || r->kind == KEEL_OP_UNLINK;
	bool name = r->kind != KEEL_OP_ENTITY || r->name;
	struct keel_str value = KEEL_STR_NULL;
	if ((rc = ctx_check(ctx, r, "subject", r->subject, r->subject_len,
			    KEEL_SUBJECT_MAX)) ||
	    (name && (rc = ctx_check(ctx, r, name_fields[r->kind], r->name, r->name_len,
				     KEEL_NAME_MAX))) ||
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
	return ctx_add(ctx, &r);
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
	return ctx_add(ctx, &r);
}

int keel_ctx_unset(struct keel_ctx *ctx, const char *subject, size_t subject_len,
		   const char *predicate, size_t predicate_len)
{
	const struct op_request r = {.kind = KEEL_OP_UNSET,
				     .subject = subject,
				     .subject_len = subject_len,
				     .name = predicate,
				     .name_len = predicate_len};
	return ctx_add(ctx, &r);
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
	return ctx_add(ctx, &r);
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

/* --------------------------------------------------------------- events */

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
	if (ptr_compile(ev->arena, pointer, strlen(pointer), &p))
		return KEEL_EINVAL;
	const struct keel_json *v = ptr_eval(&p, ev->env);
	if (!v)
		return KEEL_ENOTFOUND;
	struct keel_str json;
	if (v->type == KEEL_JSON_ARRAY || v->type == KEEL_JSON_OBJECT)
		json =
		    compact_into_arena(ev->arena, ev->doc->text + v->raw_off, v->raw_len);
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

/* ---------------------------------------------------------- plan runner */

static const char *const unrenderable[] = {
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
	return ctx_op_fail(ctx, opno, kind, "pointer \"%.*s\": %s", (int)p->text_len,
			   p->text, what);
}

/* The text a template renders for a scalar: a string decoded, a number's
 * lexeme, true or false. False for null, arrays and objects. */
static bool scalar_text(const struct keel_json *v, const char **s, size_t *n)
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
	const struct keel_json *v = ptr_eval(p, ctx->ev->env);
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
	if (scalar_text(v, s, n))
		return 0;
	char what[64];
	snprintf(what, sizeof what, "%s, not a string, number or boolean",
		 unrenderable[v->type]);
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
			return ctx_op_fail(ctx, opno, kind,
					   "field \"%s\": longer than %zu bytes", field,
					   max);
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
	const struct keel_json *v = ptr_eval(src->from, ctx->ev->env);
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
		struct keel_str c = compact_into_arena(ctx->arena, text, v->raw_len);
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

static int plan_handler(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
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
			rc = tmpl_render(ctx, opno, op->kind, name_fields[op->kind],
					 &op->name, name, sizeof name, &r.name_len);
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
		if (rc || (rc = ctx_add(ctx, &r)))
			return rc;
		prev_added = true;
	}
	return 0;
}

/* -------------------------------------------------------------- handlers */

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
static void cartridge_set_hash(struct keel_cartridge *c, const void *p, size_t n)
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

static int handler_add(struct keel_cartridge *c, const char *type, size_t len,
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
	return handler_add(c, event_type, strlen(event_type), fn, userdata);
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

/* ------------------------------------------------------------- compiler */

struct compiler {
	struct keel_cartridge *c;
	const struct keel_json_doc *doc;
	struct keel_buf err;
	struct keel_str name; /* the cartridge's, once known */
	struct keel_str type; /* the event type being compiled, or absent */
	size_t opno;	      /* 1-based; 0 outside an operation */
	const char *opname;   /* NULL until the "op" field is known */
	struct keel_buf quote; /* scratch for cquote */
};

/* A name from the cartridge's text (a key, an operation, a pointer) as a
 * JSON string, quotes included, as names are written in every message: a
 * control character in it stays escaped and the message one line. Valid
 * until the next call. */
static const char *cquote(struct compiler *cc, const char *prefix, const char *p,
			  size_t n)
{
	struct keel_buf name;
	keel_buf_init(&name);
	keel_buf_adds(&name, prefix);
	keel_buf_add(&name, p, n);
	keel_buf_reset(&cc->quote);
	keel_buf_add_json_str(&cc->quote, keel_str_make(name.data ? name.data : "", name.len));
	keel_buf_free(&name);
	return cc->quote.data;
}

/* Starts the message: `cartridge "N": type "T": operation K (op): `. */
static int cfail(struct compiler *cc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int cfail(struct compiler *cc, const char *fmt, ...)
{
	struct keel_buf *b = &cc->err;
	keel_buf_adds(b, "cartridge");
	if (cc->name.ptr) {
		keel_buf_addc(b, ' ');
		keel_buf_add_json_str(b, cc->name);
	}
	keel_buf_adds(b, ": ");
	if (cc->type.ptr) {
		keel_buf_adds(b, "type ");
		keel_buf_add_json_str(b, cc->type);
		keel_buf_adds(b, ": ");
	}
	if (cc->opno) {
		keel_buf_addf(b, "operation %zu", cc->opno);
		if (cc->opname)
			keel_buf_addf(b, " (%s)", cc->opname);
		keel_buf_adds(b, ": ");
	}
	va_list ap;
	va_start(ap, fmt);
	keel_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return KEEL_ECARTRIDGE;
}

static const char *json_type_name(enum keel_json_type t)
{
	switch (t) {
	case KEEL_JSON_NULL:
		return "null";
	case KEEL_JSON_FALSE:
	case KEEL_JSON_TRUE:
		return "a boolean";
	case KEEL_JSON_NUMBER:
		return "a number";
	case KEEL_JSON_STRING:
		return "a string";
	case KEEL_JSON_ARRAY:
		return "an array";
	case KEEL_JSON_OBJECT:
		return "an object";
	}
	return "?";
}

static const char *str_dup(struct compiler *cc, const char *s, size_t n)
{
	return keel_arena_str(&cc->c->arena, keel_str_make(s, n)).ptr;
}

static struct ptr *pointer_compile(struct compiler *cc, const char *field,
				   const char *text, size_t len)
{
	struct ptr *p = keel_arena_alloc(&cc->c->arena, sizeof *p);
	const char *why = ptr_compile(&cc->c->arena, str_dup(cc, text, len), len, p);
	if (why) {
		cfail(cc, "field \"%s\": pointer %s: %s", field, cquote(cc, "", text, len),
		      why);
		return NULL;
	}
	return p;
}

/* Splits a template's text into pieces. "{" starts a pointer that ends at
 * the next "}"; "{{" and "}}" stand for literal braces. */
static int tmpl_split(struct compiler *cc, const char *field, const char *s, size_t n,
		      size_t max, struct tmpl *t)
{
	/* At most one literal and one pointer per "{": n + 1 pieces bound it. */
	struct piece *pieces = keel_arena_alloc(&cc->c->arena, (n + 1) * sizeof *pieces);
	size_t np = 0, lit_total = 0;
	bool has_ptr = false;
	struct keel_buf lit;
	keel_buf_init(&lit);
	int rc = 0;
	for (size_t i = 0; i < n && !rc;) {
		char c = s[i];
		if ((c == '{' || c == '}') && i + 1 < n && s[i + 1] == c) {
			keel_buf_addc(&lit, c);
			i += 2;
		} else if (c == '}') {
			rc = cfail(cc, "field \"%s\": unbalanced \"}\" in template",
				   field);
		} else if (c == '{') {
			size_t j = i + 1;
			while (j < n && s[j] != '}' && s[j] != '{')
				j++;
			if (j == n || s[j] == '{') {
				rc = cfail(cc,
					   "field \"%s\": unbalanced \"{\" in template",
					   field);
				break;
			}
			if (j == i + 1) {
				rc = cfail(cc, "field \"%s\": empty pointer in template",
					   field);
				break;
			}
			if (lit.len) {
				pieces[np++] = (struct piece){
				    str_dup(cc, lit.data, lit.len), lit.len, NULL};
				lit_total += lit.len;
				keel_buf_reset(&lit);
			}
			struct ptr *p = pointer_compile(cc, field, s + i + 1, j - i - 1);
			if (!p) {
				rc = KEEL_ECARTRIDGE;
				break;
			}
			pieces[np++] = (struct piece){NULL, 0, p};
			has_ptr = true;
			i = j + 1;
		} else {
			keel_buf_addc(&lit, c);
			i++;
		}
	}
	if (!rc && lit.len) {
		pieces[np++] =
		    (struct piece){str_dup(cc, lit.data, lit.len), lit.len, NULL};
		lit_total += lit.len;
	}
	keel_buf_free(&lit);
	if (rc)
		return rc;
	/* What can never render within the limits fails now, not per event. */
	for (size_t i = 0; i < np; i++)
		if (pieces[i].lit && memchr(pieces[i].lit, 0, pieces[i].lit_len))
			return cfail(cc, "field \"%s\": contains U+0000 (NUL)", field);
	if (!has_ptr && lit_total == 0)
		return cfail(cc, "field \"%s\": empty", field);
	if (lit_total > max)
		return cfail(cc, "field \"%s\": longer than %zu bytes", field, max);
	t->pieces = pieces;
	t->npieces = np;
	t->present = true;
	t->lit_len = lit_total;
	t->has_ptr = has_ptr;
	return 0;
}

/* The members of a template or value object that say what happens when a
 * pointer finds nothing: "optional" (a boolean) or "default", not both. */
static int absent_compile(struct compiler *cc, const char *field,
			  const struct keel_json *optional, const struct keel_json *dflt,
			  enum on_absent *out)
{
	*out = ABSENT_REJECTS;
	if (optional && dflt)
		return cfail(cc,
			     "field \"%s\": \"optional\" and \"default\" together (a "
			     "field with a default is never absent)",
			     field);
	if (optional && optional->type != KEEL_JSON_TRUE &&
	    optional->type != KEEL_JSON_FALSE)
		return cfail(cc, "field \"%s.optional\": not a boolean but %s", field,
			     json_type_name(optional->type));
	if (optional && optional->type == KEEL_JSON_TRUE)
		*out = ABSENT_SKIPS;
	if (dflt)
		*out = ABSENT_DEFAULTS;
	return 0;
}

/* Finds the members of object v named in known (a NULL-terminated list):
 * found[k] is known[k]'s, or NULL. Any other member fails the compile,
 * named as FIELD.KEY. */
static int members(struct compiler *cc, const char *field, const struct keel_json *v,
		   const char *const *known, const struct keel_json **found)
{
	char prefix[32];
	snprintf(prefix, sizeof prefix, "%s.", field);
	for (size_t k = 0; known[k]; k++)
		found[k] = NULL;
	for (const struct keel_json *m = v->child; m; m = m->next) {
		size_t k = 0;
		while (known[k] &&
		       !(strlen(known[k]) == m->key_len && strcmp(known[k], m->key) == 0))
			k++;
		if (!known[k])
			return cfail(cc, "field %s: unknown",
				     cquote(cc, prefix, m->key, m->key_len));
		found[k] = m;
	}
	return 0;
}

/* A template field: its text, or an object holding the text under
 * "template" and either "optional": true (a missing or null pointer skips
 * the operation) or "default": V (a scalar rendered, at load, in place of
 * a missing or null pointer's value). */
static int tmpl_compile(struct compiler *cc, const char *field, const struct keel_json *v,
			size_t max, struct tmpl *t)
{
	if (v->type == KEEL_JSON_STRING)
		return tmpl_split(cc, field, v->str, v->len, max, t);
	if (v->type != KEEL_JSON_OBJECT)
		return cfail(cc, "field \"%s\": not a string or an object but %s", field,
			     json_type_name(v->type));
	static const char *const known[] = {"template", "optional", "default", NULL};
	const struct keel_json *m[3];
	int rc = members(cc, field, v, known, m);
	if (rc)
		return rc;
	const struct keel_json *text = m[0], *dflt = m[2];
	if (!text)
		return cfail(cc, "field \"%s.template\": missing", field);
	if (text->type != KEEL_JSON_STRING)
		return cfail(cc, "field \"%s.template\": not a string but %s", field,
			     json_type_name(text->type));
	if ((rc = tmpl_split(cc, field, text->str, text->len, max, t)) ||
	    (rc = absent_compile(cc, field, m[1], dflt, &t->absent)))
		return rc;
	if (t->absent != ABSENT_REJECTS && !t->has_ptr)
		return cfail(cc, "field \"%s\": \"%s\" but no pointer in the template",
			     field, dflt ? "default" : "optional");
	if (!dflt)
		return 0;
	const char *s;
	size_t n;
	if (!scalar_text(dflt, &s, &n))
		return cfail(cc, "field \"%s.default\": %s, not a string, number or boolean",
			     field, unrenderable[dflt->type]);
	if (memchr(s, 0, n))
		return cfail(cc, "field \"%s.default\": contains U+0000 (NUL)", field);
	/* Used, the default renders at least beside the literal text. */
	if (n > max - t->lit_len)
		return cfail(cc, "field \"%s.default\": longer than %zu bytes with the "
				 "template's text",
			     field, max);
	t->dflt = str_dup(cc, s, n);
	t->dflt_len = n;
	return 0;
}

/* A constant (a value's "const" or "default") compacted once, at load;
 * JSON null is "no value", *json NULL. */
static int const_compile(struct compiler *cc, const char *field, const struct keel_json *v,
			 const char **json, size_t *len)
{
	*json = NULL;
	*len = 0;
	if (v->type == KEEL_JSON_NULL)
		return 0;
	struct keel_buf b;
	keel_buf_init(&b);
	keel_json_compact(cc->doc, v, &b);
	int rc = 0;
	if (b.len > KEEL_VALUE_MAX)
		rc = cfail(cc, "field \"%s\": longer than %d bytes", field,
			   KEEL_VALUE_MAX);
	*json = str_dup(cc, b.data, b.len);
	*len = b.len;
	keel_buf_free(&b);
	return rc;
}

/* A fact's value: {"from": POINTER} with at most one of "optional" and
 * "default", or {"const": V}. */
static int value_compile(struct compiler *cc, const struct keel_json *v,
			 struct value_src *out)
{
	if (v->type != KEEL_JSON_OBJECT)
		return cfail(cc, "field \"value\": not an object but %s",
			     json_type_name(v->type));
	static const char *const known[] = {"from", "const", "optional", "default", NULL};
	const struct keel_json *m[4];
	int rc = members(cc, "value", v, known, m);
	if (rc)
		return rc;
	const struct keel_json *from = m[0], *cnst = m[1], *optional = m[2], *dflt = m[3];
	if ((from != NULL) == (cnst != NULL))
		return cfail(cc, "field \"value\": needs exactly one of \"from\" and "
				 "\"const\"");
	if (cnst && (optional || dflt))
		return cfail(cc, "field \"value.%s\": only with \"from\"",
			     optional ? "optional" : "default");
	memset(out, 0, sizeof *out);
	if (cnst)
		return const_compile(cc, "value.const", cnst, &out->json, &out->json_len);
	if (from->type != KEEL_JSON_STRING)
		return cfail(cc, "field \"value.from\": not a string but %s",
			     json_type_name(from->type));
	out->from = pointer_compile(cc, "value.from", from->str, from->len);
	if (!out->from)
		return KEEL_ECARTRIDGE;
	if ((rc = absent_compile(cc, "value", optional, dflt, &out->absent)))
		return rc;
	return dflt ? const_compile(cc, "value.default", dflt, &out->dflt, &out->dflt_len)
		    : 0;
}

static int op_compile(struct compiler *cc, const struct keel_json *v, struct plan_op *op)
{
	static const struct {
		const char *name;
		enum keel_op_kind kind;
	} kinds[] = {
	    {"entity", KEEL_OP_ENTITY}, {"fact", KEEL_OP_FACT},
	    {"unset", KEEL_OP_UNSET},	{"link", KEEL_OP_LINK},
	    {"unlink", KEEL_OP_UNLINK},
	};
	if (v->type != KEEL_JSON_OBJECT)
		return cfail(cc, "not an object but %s", json_type_name(v->type));
	const struct keel_json *f = keel_json_get(v, "op", 2);
	if (!f)
		return cfail(cc, "field \"op\": missing");
	if (f->type != KEEL_JSON_STRING)
		return cfail(cc, "field \"op\": not a string but %s",
			     json_type_name(f->type));
	size_t k = 0;
	while (k < KEEL_ARRAY_LEN(kinds) && strcmp(kinds[k].name, f->str) != 0)
		k++;
	if (k == KEEL_ARRAY_LEN(kinds) || strlen(f->str) != f->len)
		return cfail(cc, "field \"op\": unknown operation %s",
			     cquote(cc, "", f->str, f->len));
	memset(op, 0, sizeof *op);
	op->kind = kinds[k].kind;
	cc->opname = kinds[k].name;

	bool is_rel = op->kind == KEEL_OP_LINK || op->kind == KEEL_OP_UNLINK;
	const char *name_field = name_fields[op->kind];
	for (const struct keel_json *m = v->child; m; m = m->next) {
		const char *key = m->key;
		bool known = strcmp(key, "op") == 0 || strcmp(key, "subject") == 0 ||
			     strcmp(key, name_field) == 0 ||
			     (is_rel && strcmp(key, "object") == 0) ||
			     (op->kind == KEEL_OP_FACT && strcmp(key, "value") == 0);
		if (!known || strlen(key) != m->key_len)
			return cfail(cc, "field %s: unknown", cquote(cc, "", key, m->key_len));
	}

	int rc;
	f = keel_json_get(v, "subject", 7);
	if (!f)
		return cfail(cc, "field \"subject\": missing");
	if ((rc = tmpl_compile(cc, "subject", f, KEEL_SUBJECT_MAX, &op->subject)))
		return rc;
	f = keel_json_get(v, name_field, strlen(name_field));
	if (!f && op->kind != KEEL_OP_ENTITY)
		return cfail(cc, "field \"%s\": missing", name_field);
	if (f && (rc = tmpl_compile(cc, name_field, f, KEEL_NAME_MAX, &op->name)))
		return rc;
	if (is_rel) {
		f = keel_json_get(v, "object", 6);
		if (!f)
			return cfail(cc, "field \"object\": missing");
		if ((rc = tmpl_compile(cc, "object", f, KEEL_SUBJECT_MAX, &op->object)))
			return rc;
	}
	if (op->kind == KEEL_OP_FACT) {
		f = keel_json_get(v, "value", 5);
		if (!f)
			return cfail(cc, "field \"value\": missing");
		if ((rc = value_compile(cc, f, &op->value)))
			return rc;
	}
	return 0;
}

/* Two templates that render the same text for every event: the same
 * pieces, and the same answer to a pointer that finds nothing. */
static bool tmpl_eq(const struct tmpl *a, const struct tmpl *b)
{
	if (a->present != b->present || a->npieces != b->npieces ||
	    a->absent != b->absent ||
	    !keel_str_eq(keel_str_make(a->dflt, a->dflt_len),
			 keel_str_make(b->dflt, b->dflt_len)))
		return false;
	for (size_t i = 0; i < a->npieces; i++) {
		const struct piece *x = &a->pieces[i], *y = &b->pieces[i];
		if ((x->ptr == NULL) != (y->ptr == NULL))
			return false;
		if (!x->ptr && !keel_str_eq(keel_str_make(x->lit, x->lit_len),
					    keel_str_make(y->lit, y->lit_len)))
			return false;
		if (x->ptr && !keel_str_eq(keel_str_make(x->ptr->text, x->ptr->text_len),
					   keel_str_make(y->ptr->text, y->ptr->text_len)))
			return false;
	}
	return true;
}

static int events_compile(struct compiler *cc, const struct keel_json *events)
{
	for (const struct keel_json *t = events->child; t; t = t->next) {
		cc->type = keel_str_make(t->key, t->key_len);
		if (t->key_len == 0 || t->key_len > KEEL_TYPE_MAX)
			return cfail(cc, "not 1-%d bytes", KEEL_TYPE_MAX);
		if (t->type != KEEL_JSON_ARRAY)
			return cfail(cc, "not an array of operations but %s",
				     json_type_name(t->type));
		struct plan *plan = keel_arena_alloc(&cc->c->arena, sizeof *plan);
		plan->nops = t->len;
		plan->ops = keel_arena_alloc(&cc->c->arena,
					     (t->len ? t->len : 1) * sizeof *plan->ops);
		size_t i = 0;
		for (const struct keel_json *o = t->child; o; o = o->next, i++) {
			cc->opno = i + 1;
			cc->opname = NULL;
			int rc = op_compile(cc, o, &plan->ops[i]);
			if (rc)
				return rc;
			plan->ops[i].same_subject =
			    i > 0 &&
			    tmpl_eq(&plan->ops[i].subject, &plan->ops[i - 1].subject);
		}
		cc->opno = 0;
		if (handler_add(cc->c, t->key, t->key_len, plan_handler, plan))
			return cfail(cc, "listed twice");
	}
	cc->type = KEEL_STR_NULL;
	return 0;
}

static int string_field(struct compiler *cc, const struct keel_json *root,
			const char *key, bool required, const struct keel_json **out)
{
	const struct keel_json *f = keel_json_get(root, key, strlen(key));
	*out = NULL;
	if (!f)
		return required ? cfail(cc, "field \"%s\": missing", key) : 0;
	if (f->type != KEEL_JSON_STRING)
		return cfail(cc, "field \"%s\": not a string but %s", key,
			     json_type_name(f->type));
	if (f->len == 0)
		return cfail(cc, "field \"%s\": empty", key);
	*out = f;
	return 0;
}

static int cartridge_compile(struct compiler *cc, const struct keel_json *root)
{
	if (root->type != KEEL_JSON_OBJECT)
		return cfail(cc, "not a JSON object but %s", json_type_name(root->type));
	const struct keel_json *name, *version, *desc;
	int rc = string_field(cc, root, "cartridge", true, &name);
	if (rc)
		return rc;
	cc->name = keel_str_make(name->str, name->len);
	for (const struct keel_json *m = root->child; m; m = m->next) {
		static const char *const known[] = {"cartridge", "version", "description",
						    "events"};
		size_t k = 0;
		while (k < KEEL_ARRAY_LEN(known) &&
		       !(strlen(known[k]) == m->key_len && strcmp(known[k], m->key) == 0))
			k++;
		if (k == KEEL_ARRAY_LEN(known))
			return cfail(cc, "field %s: unknown",
				     cquote(cc, "", m->key, m->key_len));
	}
	if ((rc = string_field(cc, root, "version", true, &version)) ||
	    (rc = string_field(cc, root, "description", false, &desc)))
		return rc;
	const struct keel_json *events = keel_json_get(root, "events", 6);
	if (!events)
		return cfail(cc, "field \"events\": missing");
	if (events->type != KEEL_JSON_OBJECT)
		return cfail(cc, "field \"events\": not an object but %s",
			     json_type_name(events->type));
	cc->c = keel_cartridge_new(name->str, version->str);
	return events_compile(cc, events);
}

static void set_errmsg(char **errmsg, const char *prefix, const char *msg)
{
	if (!errmsg)
		return;
	struct keel_buf b;
	keel_buf_init(&b);
	if (prefix) {
		keel_buf_adds(&b, prefix);
		keel_buf_adds(&b, ": ");
	}
	keel_buf_adds(&b, msg);
	*errmsg = b.data;
}

/* Compiles, prefixing any message with `prefix: ` (a file's path). */
static int compile_named(const char *json, size_t len, const char *prefix,
			 struct keel_cartridge **out, char **errmsg)
{
	struct keel_json_doc doc;
	struct keel_json_error jerr;
	struct compiler cc;
	memset(&cc, 0, sizeof cc);
	keel_buf_init(&cc.err);
	keel_buf_init(&cc.quote);
	keel_json_doc_init(&doc);
	cc.doc = &doc;
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	int rc;
	if (!json || keel_json_parse(&doc, json, len, &jerr) != 0)
		rc = cfail(&cc, "not valid JSON: %s at byte %zu",
			   json ? jerr.msg : "no text", json ? jerr.offset : 0);
	else
		rc = cartridge_compile(&cc, doc.root);
	if (rc) {
		keel_cartridge_free(cc.c);
		set_errmsg(errmsg, prefix, cc.err.data);
	} else {
		/* Identified by its compacted text: reformatting the file
		 * changes nothing a store records. */
		struct keel_buf t;
		keel_buf_init(&t);
		keel_json_compact(&doc, doc.root, &t);
		cartridge_set_hash(cc.c, t.data, t.len);
		cc.c->text = t.data;
		cc.c->text_len = t.len;
		*out = cc.c;
	}
	keel_buf_free(&cc.err);
	keel_buf_free(&cc.quote);
	keel_json_doc_free(&doc);
	return rc;
}

int keel_cartridge_compile(const char *json, size_t len, struct keel_cartridge **out,
			   char **errmsg)
{
	if (!out)
		return KEEL_EINVAL;
	return compile_named(json, len, NULL, out, errmsg);
}

/* -------------------------------------------------------------- loading */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static int fail_load(char **errmsg, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_load(char **errmsg, const char *path, const char *fmt, ...)
{
	if (errmsg) {
		struct keel_buf b;
		keel_buf_init(&b);
		keel_buf_adds(&b, "cartridge ");
		keel_buf_add_json_str(&b, keel_str_cstr(path));
		keel_buf_adds(&b, ": ");
		va_list ap;
		va_start(ap, fmt);
		keel_buf_vaddf(&b, fmt, ap);
		va_end(ap);
		*errmsg = b.data;
	}
	return KEEL_ECARTRIDGE;
}

typedef int (*keel_cartridge_init_fn)(struct keel_cartridge *c);

static int read_file(const char *path, char **text, size_t *len);

static int load_shared(const char *path, struct keel_cartridge **out, char **errmsg)
{
	/* dlopen searches the library path for a bare name; a cartridge is
	 * always a file, so make the path explicit. */
	struct keel_buf p;
	keel_buf_init(&p);
	if (!strchr(path, '/'))
		keel_buf_adds(&p, "./");
	keel_buf_adds(&p, path);
	dlerror();
	void *dl = dlopen(p.data, RTLD_NOW | RTLD_LOCAL);
	keel_buf_free(&p);
	if (!dl)
		return fail_load(errmsg, path, "cannot load: %s", dlerror());
	void *sym = dlsym(dl, "keel_cartridge_init");
	if (!sym) {
		dlclose(dl);
		return fail_load(errmsg, path, "no symbol \"keel_cartridge_init\"");
	}
	/* ISO C has no object-to-function pointer cast; POSIX guarantees the
	 * representations agree, so copy the bits. */
	keel_cartridge_init_fn init;
	memcpy(&init, &sym, sizeof init);
	keel_cartridge_fini_fn fini = NULL;
	if ((sym = dlsym(dl, "keel_cartridge_fini")))
		memcpy(&fini, &sym, sizeof fini);

	/* The cartridge is named after the file: "dir/acme.so" is "acme". */
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	char *name = keel_xstrndup(base, strlen(base) - 3);
	struct keel_cartridge *c = keel_cartridge_new(name, "");
	free(name);
	int rc = init(c);
	if (rc != 0) {
		keel_cartridge_free(c);
		dlclose(dl);
		return fail_load(errmsg, path, "keel_cartridge_init returned %d", rc);
	}
	c->dl = dl;
	c->fini = fini;
	/* Identified by its file's bytes: its code cannot be recorded. */
	char *bytes = NULL;
	size_t nbytes = 0;
	if (read_file(path, &bytes, &nbytes) != 0) {
		keel_cartridge_free(c);
		return fail_load(errmsg, path, "cannot read: %s", strerror(errno));
	}
	cartridge_set_hash(c, bytes ? bytes : "", nbytes);
	free(bytes);
	*out = c;
	return 0;
}

static int read_file(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	struct keel_buf b;
	keel_buf_init(&b);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		keel_buf_add(&b, chunk, n);
	int err = ferror(f) ? EIO : 0;
	fclose(f);
	if (err) {
		keel_buf_free(&b);
		errno = err;
		return -1;
	}
	*text = b.data;
	*len = b.len;
	return 0;
}

int keel_cartridge_load(const char *name_or_path, struct keel_cartridge **out,
			char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	if (!out || !name_or_path)
		return KEEL_EINVAL;
	*out = NULL;
	if (strcmp(name_or_path, KEEL_BUILTIN_CARTRIDGE) == 0)
		return compile_named(keel_fleet_cartridge_json,
				     keel_fleet_cartridge_json_len, NULL, out, errmsg);
	if (ends_with(name_or_path, ".so"))
		return load_shared(name_or_path, out, errmsg);
	char *text = NULL;
	size_t len = 0;
	if (read_file(name_or_path, &text, &len) != 0) {
		if (errno == ENOENT && !strchr(name_or_path, '/') &&
		    !ends_with(name_or_path, ".json"))
			return fail_load(
			    errmsg, name_or_path,
			    "no built-in cartridge of that name and no such file");
		return fail_load(errmsg, name_or_path, "cannot read: %s",
				 strerror(errno));
	}
	int rc = compile_named(text ? text : "", len, name_or_path, out, errmsg);
	free(text);
	return rc;
}

/* ------------------------------------------------------------------ run */

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
	if (hd->fn == plan_handler) {
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

/*
 * compile.c - the declarative cartridge's JSON form compiled
 * into plans: the document's fields, each event type's operations (their
 * template and value fields are template.c's), one plan handler
 * registered a type, the messages that name where a rule was broken, and
 * the hash of the compacted text a store records. Reading the form's
 * fields and the messages are fields.c's, shared with template.c.
 */
#include "parts.h"
#include "event/json_write.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		return keel_compile_fail(cc, "not an object but %s",
					 keel_json_type_name(v->type));
	const struct keel_json *f = keel_json_get(v, "op", 2);
	if (!f)
		return keel_compile_fail(cc, "field \"op\": missing");
	if (f->type != KEEL_JSON_STRING)
		return keel_compile_fail(cc, "field \"op\": not a string but %s",
					 keel_json_type_name(f->type));
	size_t k = 0;
	while (k < KEEL_ARRAY_LEN(kinds) && strcmp(kinds[k].name, f->str) != 0)
		k++;
	if (k == KEEL_ARRAY_LEN(kinds) || strlen(f->str) != f->len)
		return keel_compile_fail(cc, "field \"op\": unknown operation %s",
					 keel_compile_quote(cc, "", f->str, f->len));
	memset(op, 0, sizeof *op);
	op->kind = kinds[k].kind;
	cc->opname = kinds[k].name;

	bool is_rel = op->kind == KEEL_OP_LINK || op->kind == KEEL_OP_UNLINK;
	const char *name_field = keel_op_name_fields[op->kind];
	for (const struct keel_json *m = v->child; m; m = m->next) {
		const char *key = m->key;
		bool known = strcmp(key, "op") == 0 || strcmp(key, "subject") == 0 ||
			     strcmp(key, name_field) == 0 ||
			     (is_rel && strcmp(key, "object") == 0) ||
			     (op->kind == KEEL_OP_FACT && strcmp(key, "value") == 0);
		if (!known || strlen(key) != m->key_len)
			return keel_compile_fail(
			    cc, "field %s: unknown",
			    keel_compile_quote(cc, "", key, m->key_len));
	}

	int rc;
	f = keel_json_get(v, "subject", 7);
	if (!f)
		return keel_compile_fail(cc, "field \"subject\": missing");
	if ((rc = keel_tmpl_compile(cc, "subject", f, KEEL_SUBJECT_MAX, &op->subject)))
		return rc;
	f = keel_json_get(v, name_field, strlen(name_field));
	if (!f && op->kind != KEEL_OP_ENTITY)
		return keel_compile_fail(cc, "field \"%s\": missing", name_field);
	if (f && (rc = keel_tmpl_compile(cc, name_field, f, KEEL_NAME_MAX, &op->name)))
		return rc;
	if (is_rel) {
		f = keel_json_get(v, "object", 6);
		if (!f)
			return keel_compile_fail(cc, "field \"object\": missing");
		if ((rc = keel_tmpl_compile(cc, "object", f, KEEL_SUBJECT_MAX,
					    &op->object)))
			return rc;
	}
	if (op->kind == KEEL_OP_FACT) {
		f = keel_json_get(v, "value", 5);
		if (!f)
			return keel_compile_fail(cc, "field \"value\": missing");
		if ((rc = keel_value_compile(cc, f, &op->value)))
			return rc;
	}
	return 0;
}

static int events_compile(struct compiler *cc, const struct keel_json *events)
{
	for (const struct keel_json *t = events->child; t; t = t->next) {
		cc->type = keel_str_make(t->key, t->key_len);
		if (t->key_len == 0 || t->key_len > KEEL_TYPE_MAX)
			return keel_compile_fail(cc, "not 1-%d bytes", KEEL_TYPE_MAX);
		if (t->type != KEEL_JSON_ARRAY)
			return keel_compile_fail(cc, "not an array of operations but %s",
						 keel_json_type_name(t->type));
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
			    i > 0 && keel_tmpl_eq(&plan->ops[i].subject,
						  &plan->ops[i - 1].subject);
		}
		cc->opno = 0;
		if (keel_cartridge_handler_add(cc->c, t->key, t->key_len,
					       keel_plan_handler, plan))
			return keel_compile_fail(cc, "listed twice");
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
		return required ? keel_compile_fail(cc, "field \"%s\": missing", key) : 0;
	if (f->type != KEEL_JSON_STRING)
		return keel_compile_fail(cc, "field \"%s\": not a string but %s", key,
					 keel_json_type_name(f->type));
	if (f->len == 0)
		return keel_compile_fail(cc, "field \"%s\": empty", key);
	*out = f;
	return 0;
}

static int cartridge_compile(struct compiler *cc, const struct keel_json *root)
{
	if (root->type != KEEL_JSON_OBJECT)
		return keel_compile_fail(cc, "not a JSON object but %s",
					 keel_json_type_name(root->type));
	const struct keel_json *name, *version, *desc;
	int rc = string_field(cc, root, "cartridge", true, &name);
	if (rc || !name) /* required: a name when rc is 0 */
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
			return keel_compile_fail(
			    cc, "field %s: unknown",
			    keel_compile_quote(cc, "", m->key, m->key_len));
	}
	if ((rc = string_field(cc, root, "version", true, &version)) ||
	    (rc = string_field(cc, root, "description", false, &desc)))
		return rc;
	const struct keel_json *events = keel_json_get(root, "events", 6);
	if (!events)
		return keel_compile_fail(cc, "field \"events\": missing");
	if (events->type != KEEL_JSON_OBJECT)
		return keel_compile_fail(cc, "field \"events\": not an object but %s",
					 keel_json_type_name(events->type));
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
int keel_cartridge_compile_named(const char *json, size_t len, const char *prefix,
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
		rc = keel_compile_fail(&cc, "not valid JSON: %s at byte %zu",
				       json ? jerr.msg : "no text",
				       json ? jerr.offset : 0);
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
		keel_cartridge_set_hash(cc.c, t.data, t.len);
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
	return keel_cartridge_compile_named(json, len, NULL, out, errmsg);
}

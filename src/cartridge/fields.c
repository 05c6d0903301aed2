/*
 * fields.c - what the cartridge compiler (compile.c) and its templates
 * (template.c) share to read the cartridge's JSON form: a member list
 * checked against the known fields, names quoted as messages write them,
 * JSON types named, strings kept in the compiler's arena, and the message
 * that names where a rule was broken (docs/cartridges.md).
 */
#include "parts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/json_write.h"

/* A name from the cartridge's text (a key, an operation, a pointer) as a
 * JSON string, quotes included, as names are written in every message: a
 * control character in it stays escaped and the message one line. Valid
 * until the next call. */
const char *keel_compile_quote(struct compiler *cc, const char *prefix, const char *p,
			       size_t n)
{
	struct keel_buf name;
	keel_buf_init(&name);
	keel_buf_adds(&name, prefix);
	keel_buf_add(&name, p, n);
	keel_buf_reset(&cc->quote);
	keel_buf_add_json_str(&cc->quote,
			      keel_str_make(name.data ? name.data : "", name.len));
	keel_buf_free(&name);
	return cc->quote.data;
}

/* Starts the message: `cartridge "N": type "T": operation K (op): `. */
int keel_compile_fail(struct compiler *cc, const char *fmt, ...)
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

const char *keel_json_type_name(enum keel_json_type t)
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

const char *keel_compile_str(struct compiler *cc, const char *s, size_t n)
{
	return keel_arena_str(&cc->c->arena, keel_str_make(s, n)).ptr;
}

/* Finds the members of object v named in known (a NULL-terminated list):
 * found[k] is known[k]'s, or NULL. Any other member fails the compile,
 * named as FIELD.KEY. */
int keel_compile_members(struct compiler *cc, const char *field,
			 const struct keel_json *v, const char *const *known,
			 const struct keel_json **found)
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
			return keel_compile_fail(
			    cc, "field %s: unknown",
			    keel_compile_quote(cc, prefix, m->key, m->key_len));
		found[k] = m;
	}
	return 0;
}

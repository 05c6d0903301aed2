/*
 * template.c - compiling an operation's template and value
 * fields: a template split into literal pieces and pointers, its
 * "optional" or "default" mark, a value's pointer or constant (compacted
 * once, at load); and whether two templates always render the same text.
 * What can never render within the limits fails here, at load, not on
 * every event.
 */
#include "parts.h"

#include <string.h>

static struct ptr *pointer_compile(struct compiler *cc, const char *field,
				   const char *text, size_t len)
{
	struct ptr *p = keel_arena_alloc(&cc->c->arena, sizeof *p);
	const char *why =
	    keel_ptr_compile(&cc->c->arena, keel_compile_str(cc, text, len), len, p);
	if (why) {
		keel_compile_fail(cc, "field \"%s\": pointer %s: %s", field,
				  keel_compile_quote(cc, "", text, len), why);
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
			rc = keel_compile_fail(
			    cc, "field \"%s\": unbalanced \"}\" in template", field);
		} else if (c == '{') {
			size_t j = i + 1;
			while (j < n && s[j] != '}' && s[j] != '{')
				j++;
			if (j == n || s[j] == '{') {
				rc = keel_compile_fail(
				    cc, "field \"%s\": unbalanced \"{\" in template",
				    field);
				break;
			}
			if (j == i + 1) {
				rc = keel_compile_fail(
				    cc, "field \"%s\": empty pointer in template", field);
				break;
			}
			if (lit.len) {
				pieces[np++] = (struct piece){
				    keel_compile_str(cc, lit.data, lit.len), lit.len,
				    NULL};
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
		pieces[np++] = (struct piece){keel_compile_str(cc, lit.data, lit.len),
					      lit.len, NULL};
		lit_total += lit.len;
	}
	keel_buf_free(&lit);
	if (rc)
		return rc;
	/* What can never render within the limits fails now, not per event. */
	for (size_t i = 0; i < np; i++)
		if (pieces[i].lit && memchr(pieces[i].lit, 0, pieces[i].lit_len))
			return keel_compile_fail(
			    cc, "field \"%s\": contains U+0000 (NUL)", field);
	if (!has_ptr && lit_total == 0)
		return keel_compile_fail(cc, "field \"%s\": empty", field);
	if (lit_total > max)
		return keel_compile_fail(cc, "field \"%s\": longer than %zu bytes", field,
					 max);
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
		return keel_compile_fail(
		    cc,
		    "field \"%s\": \"optional\" and \"default\" together (a "
		    "field with a default is never absent)",
		    field);
	if (optional && optional->type != KEEL_JSON_TRUE &&
	    optional->type != KEEL_JSON_FALSE)
		return keel_compile_fail(cc,
					 "field \"%s.optional\": not a boolean but %s",
					 field, keel_json_type_name(optional->type));
	if (optional && optional->type == KEEL_JSON_TRUE)
		*out = ABSENT_SKIPS;
	if (dflt)
		*out = ABSENT_DEFAULTS;
	return 0;
}

/* A template field: its text, or an object holding the text under
 * "template" and either "optional": true (a missing or null pointer skips
 * the operation) or "default": V (a scalar rendered, at load, in place of
 * a missing or null pointer's value). */
int keel_tmpl_compile(struct compiler *cc, const char *field, const struct keel_json *v,
		      size_t max, struct tmpl *t)
{
	if (v->type == KEEL_JSON_STRING)
		return tmpl_split(cc, field, v->str, v->len, max, t);
	if (v->type != KEEL_JSON_OBJECT)
		return keel_compile_fail(cc,
					 "field \"%s\": not a string or an object but %s",
					 field, keel_json_type_name(v->type));
	static const char *const known[] = {"template", "optional", "default", NULL};
	const struct keel_json *m[3];
	int rc = keel_compile_members(cc, field, v, known, m);
	if (rc)
		return rc;
	const struct keel_json *text = m[0], *dflt = m[2];
	if (!text)
		return keel_compile_fail(cc, "field \"%s.template\": missing", field);
	if (text->type != KEEL_JSON_STRING)
		return keel_compile_fail(cc, "field \"%s.template\": not a string but %s",
					 field, keel_json_type_name(text->type));
	if ((rc = tmpl_split(cc, field, text->str, text->len, max, t)) ||
	    (rc = absent_compile(cc, field, m[1], dflt, &t->absent)))
		return rc;
	if (t->absent != ABSENT_REJECTS && !t->has_ptr)
		return keel_compile_fail(
		    cc, "field \"%s\": \"%s\" but no pointer in the template", field,
		    dflt ? "default" : "optional");
	if (!dflt)
		return 0;
	const char *s;
	size_t n;
	if (!keel_scalar_text(dflt, &s, &n))
		return keel_compile_fail(
		    cc, "field \"%s.default\": %s, not a string, number or boolean",
		    field, keel_unrenderable[dflt->type]);
	if (memchr(s, 0, n))
		return keel_compile_fail(
		    cc, "field \"%s.default\": contains U+0000 (NUL)", field);
	/* Used, the default renders at least beside the literal text. */
	if (n > max - t->lit_len)
		return keel_compile_fail(
		    cc,
		    "field \"%s.default\": longer than %zu bytes with the "
		    "template's text",
		    field, max);
	t->dflt = keel_compile_str(cc, s, n);
	t->dflt_len = n;
	return 0;
}

/* A constant (a value's "const" or "default") compacted once, at load;
 * JSON null is "no value", *json NULL. */
static int const_compile(struct compiler *cc, const char *field,
			 const struct keel_json *v, const char **json, size_t *len)
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
		rc = keel_compile_fail(cc, "field \"%s\": longer than %d bytes", field,
				       KEEL_VALUE_MAX);
	*json = keel_compile_str(cc, b.data, b.len);
	*len = b.len;
	keel_buf_free(&b);
	return rc;
}

/* A fact's value: {"from": POINTER} with at most one of "optional" and
 * "default", or {"const": V}. */
int keel_value_compile(struct compiler *cc, const struct keel_json *v,
		       struct value_src *out)
{
	if (v->type != KEEL_JSON_OBJECT)
		return keel_compile_fail(cc, "field \"value\": not an object but %s",
					 keel_json_type_name(v->type));
	static const char *const known[] = {"from", "const", "optional", "default", NULL};
	const struct keel_json *m[4];
	int rc = keel_compile_members(cc, "value", v, known, m);
	if (rc)
		return rc;
	const struct keel_json *from = m[0], *cnst = m[1], *optional = m[2], *dflt = m[3];
	if ((from != NULL) == (cnst != NULL))
		return keel_compile_fail(
		    cc, "field \"value\": needs exactly one of \"from\" and "
			"\"const\"");
	if (cnst && (optional || dflt))
		return keel_compile_fail(cc, "field \"value.%s\": only with \"from\"",
					 optional ? "optional" : "default");
	memset(out, 0, sizeof *out);
	if (cnst)
		return const_compile(cc, "value.const", cnst, &out->json, &out->json_len);
	if (from->type != KEEL_JSON_STRING)
		return keel_compile_fail(cc, "field \"value.from\": not a string but %s",
					 keel_json_type_name(from->type));
	out->from = pointer_compile(cc, "value.from", from->str, from->len);
	if (!out->from)
		return KEEL_ECARTRIDGE;
	if ((rc = absent_compile(cc, "value", optional, dflt, &out->absent)))
		return rc;
	return dflt ? const_compile(cc, "value.default", dflt, &out->dflt, &out->dflt_len)
		    : 0;
}

/* Two templates made of the same pieces: the same literals and the same
 * pointers, in the same order (what each does when a pointer finds
 * nothing aside). */
bool keel_tmpl_same_pieces(const struct tmpl *a, const struct tmpl *b)
{
	if (a->npieces != b->npieces)
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

/* Two templates that render the same text for every event: the same
 * pieces, and the same answer to a pointer that finds nothing. */
bool keel_tmpl_eq(const struct tmpl *a, const struct tmpl *b)
{
	return a->present == b->present && a->absent == b->absent &&
	       keel_str_eq(keel_str_make(a->dflt, a->dflt_len),
			   keel_str_make(b->dflt, b->dflt_len)) &&
	       keel_tmpl_same_pieces(a, b);
}

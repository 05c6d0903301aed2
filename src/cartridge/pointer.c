/*
 * pointer.c - RFC 6901 JSON Pointers as cartridges use them:
 * split into unescaped tokens once, when a cartridge is compiled (or when a
 * C handler calls keel_event_get), then resolved in each event without
 * parsing anything again.
 */
#include "parts.h"

#include <string.h>

/* Parses text into p (tokens allocated in a). Returns NULL, or a static
 * description of the rule broken. */
const char *keel_ptr_compile(struct keel_arena *a, const char *text, size_t len,
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
const struct keel_json *keel_ptr_eval(const struct ptr *p,
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

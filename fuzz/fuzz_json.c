/*
 * fuzz_json.c - libFuzzer target for the JSON parser, pointers and
 * compaction.
 *
 * Each input is parsed; the outcome must agree with a small, slow
 * reference checker written here straight from RFC 8259/3629 (recursive
 * descent, code points decoded arithmetically, duplicate keys by pairwise
 * compare), so the fast parser's shortcuts are checked against an
 * independent reading of the rules. On success the tree's invariants are
 * checked: spans inside the text, NUL-terminated strings, every member
 * found by keel_json_get and by a pointer built for it, compaction equal
 * to compacting the raw text, and the compact text re-parsing to the same
 * tree and compacting to itself.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/json.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------ reference check */

struct ref {
	const unsigned char *s;
	size_t n;
	size_t i;
};

static void ref_ws(struct ref *r)
{
	while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' ||
			       r->s[r->i] == '\n' || r->s[r->i] == '\r'))
		r->i++;
}

static int ref_hex4(struct ref *r, unsigned *out)
{
	if (r->n - r->i < 4)
		return -1;
	unsigned v = 0;
	for (int k = 0; k < 4; k++) {
		unsigned char c = r->s[r->i++];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static void ref_put(unsigned char *out, size_t *len, unsigned cp)
{
	if (cp < 0x80) {
		out[(*len)++] = (unsigned char)cp;
	} else if (cp < 0x800) {
		out[(*len)++] = (unsigned char)(0xc0 | (cp >> 6));
		out[(*len)++] = (unsigned char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*len)++] = (unsigned char)(0xe0 | (cp >> 12));
		out[(*len)++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*len)++] = (unsigned char)(0x80 | (cp & 0x3f));
	} else {
		out[(*len)++] = (unsigned char)(0xf0 | (cp >> 18));
		out[(*len)++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		out[(*len)++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*len)++] = (unsigned char)(0x80 | (cp & 0x3f));
	}
}

/* A string at r->i (the quote), decoded into out (room for r->n bytes). */
static int ref_string(struct ref *r, unsigned char *out, size_t *len)
{
	*len = 0;
	r->i++;
	for (;;) {
		if (r->i >= r->n)
			return -1;
		unsigned char c = r->s[r->i];
		if (c == '"') {
			r->i++;
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c == '\\') {
			if (++r->i >= r->n)
				return -1;
			unsigned char e = r->s[r->i++];
			const char *simple = strchr("\"\\/bfnrt", e);
			if (e && simple) {
				static const char map[] = "\"\\/\b\f\n\r\t";
				out[(*len)++] = (unsigned char)map[simple - "\"\\/bfnrt"];
				continue;
			}
			unsigned cp, lo;
			if (e != 'u' || ref_hex4(r, &cp))
				return -1;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (r->n - r->i < 2 || r->s[r->i] != '\\' ||
				    r->s[r->i + 1] != 'u')
					return -1;
				r->i += 2;
				if (ref_hex4(r, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp <= 0xdfff) {
				return -1;
			}
			ref_put(out, len, cp);
			continue;
		}
		if (c < 0x80) {
			out[(*len)++] = c;
			r->i++;
			continue;
		}
		/* Decode the code point, then judge it by value. */
		int extra;
		unsigned cp;
		if ((c & 0xe0) == 0xc0) {
			extra = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			extra = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			extra = 3;
			cp = c & 0x07;
		} else {
			return -1;
		}
		if (r->n - r->i <= (size_t)extra)
			return -1;
		for (int k = 1; k <= extra; k++) {
			unsigned char cc = r->s[r->i + (size_t)k];
			if ((cc & 0xc0) != 0x80)
				return -1;
			cp = (cp << 6) | (cc & 0x3f);
		}
		static const unsigned min[] = {0, 0x80, 0x800, 0x10000};
		if (cp < min[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return -1;
		for (int k = 0; k <= extra; k++)
			out[(*len)++] = r->s[r->i++];
	}
}

static int ref_number(struct ref *r)
{
	size_t i = r->i;
	const unsigned char *s = r->s;
#define DIG(k) ((k) < r->n && s[k] >= '0' && s[k] <= '9')
	if (i < r->n && s[i] == '-')
		i++;
	if (!DIG(i))
		return -1;
	if (s[i] == '0')
		i++;
	else
		while (DIG(i))
			i++;
	if (i < r->n && s[i] == '.') {
		i++;
		if (!DIG(i))
			return -1;
		while (DIG(i))
			i++;
	}
	if (i < r->n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < r->n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (!DIG(i))
			return -1;
		while (DIG(i))
			i++;
	}
#undef DIG
	r->i = i;
	return 0;
}

static int ref_value(struct ref *r, int depth, unsigned char *buf)
{
	ref_ws(r);
	if (r->i >= r->n)
		return -1;
	unsigned char c = r->s[r->i];
	size_t len;
	if (c == '"')
		return ref_string(r, buf, &len);
	if (c == '-' || (c >= '0' && c <= '9'))
		return ref_number(r);
	static const char *const lits[] = {"true", "false", "null"};
	for (int k = 0; k < 3; k++) {
		size_t l = strlen(lits[k]);
		if (c == (unsigned char)lits[k][0]) {
			if (r->n - r->i < l || memcmp(r->s + r->i, lits[k], l) != 0)
				return -1;
			r->i += l;
			return 0;
		}
	}
	if (c != '[' && c != '{')
		return -1;
	if (depth == KEEL_JSON_MAX_DEPTH)
		return -1;
	bool obj = c == '{';
	r->i++;
	ref_ws(r);
	if (r->i < r->n && r->s[r->i] == (obj ? '}' : ']')) {
		r->i++;
		return 0;
	}
	/* Keys of this object, decoded, for the pairwise duplicate check. */
	unsigned char **keys = NULL;
	size_t *klens = NULL, nkeys = 0;
	int rc = -1;
	for (;;) {
		if (obj) {
			ref_ws(r);
			if (r->i >= r->n || r->s[r->i] != '"')
				goto out;
			size_t kl;
			if (ref_string(r, buf, &kl))
				goto out;
			unsigned char *k = malloc(kl + 1);
			memcpy(k, buf, kl);
			for (size_t j = 0; j < nkeys; j++)
				if (klens[j] == kl && memcmp(keys[j], k, kl) == 0) {
					free(k);
					goto out;
				}
			keys = realloc(keys, (nkeys + 1) * sizeof *keys);
			klens = realloc(klens, (nkeys + 1) * sizeof *klens);
			keys[nkeys] = k;
			klens[nkeys++] = kl;
			ref_ws(r);
			if (r->i >= r->n || r->s[r->i] != ':')
				goto out;
			r->i++;
		}
		if (ref_value(r, depth + 1, buf))
			goto out;
		ref_ws(r);
		if (r->i >= r->n)
			goto out;
		if (r->s[r->i] == ',') {
			r->i++;
			continue;
		}
		if (r->s[r->i] == (obj ? '}' : ']')) {
			r->i++;
			rc = 0;
			goto out;
		}
		goto out;
	}
out:
	for (size_t j = 0; j < nkeys; j++)
		free(keys[j]);
	free(keys);
	free(klens);
	return rc;
}

static bool ref_accepts(const uint8_t *data, size_t size)
{
	struct ref r = {data, size, 0};
	unsigned char *buf = malloc(size + 1);
	bool ok = ref_value(&r, 0, buf) == 0;
	free(buf);
	if (!ok)
		return false;
	ref_ws(&r);
	return r.i == size;
}

/* ------------------------------------------------------- tree checks */

static bool same_tree(const struct keel_json *a, const struct keel_json *b)
{
	if (a->type != b->type || a->len != b->len || a->key_len != b->key_len)
		return false;
	if ((a->key == NULL) != (b->key == NULL))
		return false;
	if (a->key && memcmp(a->key, b->key, a->key_len) != 0)
		return false;
	if (a->type == KEEL_JSON_STRING || a->type == KEEL_JSON_NUMBER)
		return memcmp(a->str, b->str, a->len) == 0;
	const struct keel_json *x = a->child, *y = b->child;
	for (; x && y; x = x->next, y = y->next)
		if (!same_tree(x, y))
			return false;
	return !x && !y;
}

/* Appends the RFC 6901 escape of a key. */
static void add_token(struct keel_buf *p, const char *k, size_t n)
{
	keel_buf_addc(p, '/');
	for (size_t i = 0; i < n; i++) {
		if (k[i] == '~')
			keel_buf_add(p, "~0", 2);
		else if (k[i] == '/')
			keel_buf_add(p, "~1", 2);
		else
			keel_buf_addc(p, k[i]);
	}
}

struct walk {
	const struct keel_json_doc *doc;
	struct keel_buf ptr;
	size_t nodes;
};

static void check_node(struct walk *w, const struct keel_json *v, int depth)
{
	const struct keel_json_doc *doc = w->doc;
	/* depth counts the containers down to v, v included. */
	if (v->type == KEEL_JSON_OBJECT || v->type == KEEL_JSON_ARRAY)
		CHECK(depth <= KEEL_JSON_MAX_DEPTH);
	CHECK(v->raw_off < doc->text_len);
	CHECK(v->raw_len >= 1 && v->raw_off + v->raw_len <= doc->text_len);
	char first = doc->text[v->raw_off];
	char last = doc->text[v->raw_off + v->raw_len - 1];
	switch (v->type) {
	case KEEL_JSON_STRING:
		CHECK(first == '"' && last == '"' && v->raw_len >= 2);
		CHECK(v->len <= v->raw_len - 2);
		CHECK(v->str[v->len] == 0);
		break;
	case KEEL_JSON_NUMBER:
		CHECK(v->len == v->raw_len);
		CHECK(memcmp(v->str, doc->text + v->raw_off, v->len) == 0);
		CHECK(v->str[v->len] == 0);
		break;
	case KEEL_JSON_OBJECT:
		CHECK(first == '{' && last == '}');
		break;
	case KEEL_JSON_ARRAY:
		CHECK(first == '[' && last == ']');
		break;
	case KEEL_JSON_TRUE:
		CHECK(v->raw_len == 4 && memcmp(doc->text + v->raw_off, "true", 4) == 0);
		break;
	case KEEL_JSON_FALSE:
		CHECK(v->raw_len == 5 && memcmp(doc->text + v->raw_off, "false", 5) == 0);
		break;
	case KEEL_JSON_NULL:
		CHECK(v->raw_len == 4 && memcmp(doc->text + v->raw_off, "null", 4) == 0);
		break;
	}
	/* The node is reachable through the pointer built on the way down
	 * (bounded: pointer lookups are linear in the siblings). */
	if (w->nodes++ < 2000)
		CHECK(keel_json_pointer(doc->root, w->ptr.data, w->ptr.len) == v);

	if (v->type != KEEL_JSON_OBJECT && v->type != KEEL_JSON_ARRAY)
		return;
	size_t count = 0, base = w->ptr.len;
	for (const struct keel_json *m = v->child; m; m = m->next, count++) {
		CHECK(m->raw_off > v->raw_off);
		CHECK(m->raw_off + m->raw_len < v->raw_off + v->raw_len);
		if (v->type == KEEL_JSON_OBJECT) {
			CHECK(m->key && m->key[m->key_len] == 0);
			if (count < 200)
				CHECK(keel_json_get(v, m->key, m->key_len) == m);
			add_token(&w->ptr, m->key, m->key_len);
		} else {
			CHECK(!m->key && m->key_len == 0);
			keel_buf_addf(&w->ptr, "/%zu", count);
		}
		check_node(w, m, depth + 1);
		w->ptr.len = base;
		w->ptr.data[base] = 0;
	}
	CHECK(count == v->len);
}

/* ------------------------------------------------------------- target */

static struct keel_json_doc doc, doc2;
static bool inited;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!inited) {
		keel_json_doc_init(&doc);
		keel_json_doc_init(&doc2);
		inited = true;
	}
	const char *text = (const char *)data;
	struct keel_json_error err;
	memset(&err, 0, sizeof err);
	int rc = keel_json_parse(&doc, text, size, &err);
	bool ref = ref_accepts(data, size);
	if ((rc == 0) != ref) {
		fprintf(stderr,
			"fuzz_json: parser says %s (%zu: %s), reference says %s\n",
			rc ? "reject" : "accept", err.offset, err.msg,
			ref ? "accept" : "reject");
		abort();
	}
	if (rc) {
		CHECK(rc == -1);
		CHECK(doc.root == NULL);
		CHECK(err.offset <= size);
		CHECK(err.msg[0] != 0 && strlen(err.msg) < sizeof err.msg);
		/* Stray input as a pointer into some fixed tree: no crash. */
		static const char fixed[] = "{\"a\":[1,{\"b\":2}],\"~/\":3,\"\":[4]}";
		CHECK(keel_json_parse(&doc2, fixed, sizeof fixed - 1, NULL) == 0);
		const struct keel_json *v = keel_json_pointer(doc2.root, text, size);
		if (v)
			CHECK(v->raw_off < sizeof fixed - 1);
		return 0;
	}

	struct walk w = {&doc, {NULL, 0, 0}, 0};
	keel_buf_init(&w.ptr);
	keel_buf_addc(&w.ptr, 0);
	w.ptr.len = 0;
	check_node(&w, doc.root, 1);
	keel_buf_free(&w.ptr);

	struct keel_buf a, b, c;
	keel_buf_init(&a);
	keel_buf_init(&b);
	keel_buf_init(&c);
	keel_json_compact(&doc, doc.root, &a);
	keel_json_compact_text(text, size, &b);
	CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
	CHECK(a.len <= size);

	int rc2 = keel_json_parse(&doc2, a.data, a.len, &err);
	if (rc2)
		fprintf(stderr, "fuzz_json: compact output rejected at %zu: %s\n",
			err.offset, err.msg);
	CHECK(rc2 == 0);
	CHECK(same_tree(doc.root, doc2.root));
	keel_json_compact(&doc2, doc2.root, &c);
	CHECK(c.len == a.len && memcmp(c.data, a.data, a.len) == 0);
	/* Nothing outside strings is whitespace any more: every byte of the
	 * compact text is inside a string or is structural. */
	for (const struct keel_json *m = doc2.root->child; m; m = m->next)
		CHECK(a.data[m->raw_off - 1] == ',' || a.data[m->raw_off - 1] == '[' ||
		      a.data[m->raw_off - 1] == ':');
	keel_buf_free(&a);
	keel_buf_free(&b);
	keel_buf_free(&c);
	return 0;
}

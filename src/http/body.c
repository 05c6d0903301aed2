/*
 * body.c - splitting a POSTed batch into its events. The array is split,
 * not parsed: each element is then parsed once, by the ingester.
 * fuzz/fuzz_http_body.c checks it against the JSON parser.
 */
#include "http.h"

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Moves the array to one of cap elements, both counted while both may
 * be held (keel_xrealloc copies when it cannot grow in place). */
static bool items_resize(struct keel_http_items *it, size_t cap)
{
	if (it->grow && !it->grow(it->ud, cap * sizeof *it->v))
		return false;
	it->v = keel_xrealloc(it->v, cap * sizeof *it->v);
	if (it->give_back && it->cap)
		it->give_back(it->ud, it->cap * sizeof *it->v);
	it->cap = cap;
	return true;
}

bool keel_http_items_reserve(struct keel_http_items *it, size_t n)
{
	return n <= it->cap || items_resize(it, n);
}

bool keel_http_items_push(struct keel_http_items *it, size_t off, size_t len, uint64_t index)
{
	/* one event: 24 bytes; the first array 192 */
	if (it->n == it->cap && !items_resize(it, it->cap ? it->cap * 2 : 8))
		return false;
	it->v[it->n++] = (struct keel_http_item){off, len, index};
	return true;
}

/* See http.h. One pass, no recursion, no allocation but out's. */
int keel_http_split_array(const char *s, size_t n, struct keel_http_items *out,
			  const char **why, size_t *at)
{
	size_t p = 0;
	while (p < n && is_ws(s[p]))
		p++;
	if (p == n || s[p] != '[') {
		*why = "expected '['";
		*at = p;
		return -1;
	}
	p++;
	while (p < n && is_ws(s[p]))
		p++;
	bool empty = p < n && s[p] == ']';
	if (empty)
		p++;
	while (!empty) {
		size_t start = p, depth = 0;
		for (; p < n; p++) {
			char ch = s[p];
			if (ch == '"') {
				for (p++; p < n && s[p] != '"'; p++)
					if (s[p] == '\\')
						p++;
				if (p >= n)
					break;
			} else if (ch == '[' || ch == '{') {
				depth++;
			} else if (ch == ']' || ch == '}') {
				if (depth == 0)
					break;
				depth--;
			} else if (ch == ',' && depth == 0) {
				break;
			}
		}
		if (p >= n || (s[p] == '}' && depth == 0)) {
			*why = p >= n ? "unterminated array" : "unbalanced '}'";
			*at = p < n ? p : n;
			return -1;
		}
		size_t end = p;
		while (end > start && is_ws(s[end - 1]))
			end--;
		if (end == start) {
			*why = "missing array element";
			*at = start;
			return -1;
		}
		if (!keel_http_items_push(out, start, end - start, out->n)) {
			*why = "out of memory for the request's events";
			*at = start;
			return -2;
		}
		if (s[p++] == ']')
			break;
		while (p < n && is_ws(s[p]))
			p++;
	}
	while (p < n && is_ws(s[p]))
		p++;
	if (p != n) {
		*why = "unexpected data after the array";
		*at = p;
		return -1;
	}
	return 0;
}

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

/* See http.h. One pass, no recursion, no allocation but *items. */
int keel_http_split_array(const char *s, size_t n, struct keel_http_item **items,
			  size_t *nitems, size_t *cap, const char **why, size_t *at)
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
		if (*nitems == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			*items = keel_xrealloc(*items, *cap * sizeof **items);
		}
		(*items)[*nitems] = (struct keel_http_item){start, end - start, *nitems};
		(*nitems)++;
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

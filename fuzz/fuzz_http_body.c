/*
 * fuzz_http_body.c - libFuzzer target for splitting a POSTed batch
 * (keel_http_split_array, src/http/body.c), checked against the JSON
 * parser: whenever the parser accepts the input as an array, the splitter
 * must accept it too and find exactly the parser's members, at the same
 * spans. On any input the elements it finds lie inside the input, in order,
 * non-empty and trimmed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "event/json.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct keel_json_doc doc;
	static int ready;
	if (!ready) {
		keel_json_doc_init(&doc);
		ready = 1;
	}
	const char *s = (const char *)data;
	struct keel_http_items found = {0};
	size_t at = 0;
	const char *why = NULL;
	int rc = keel_http_split_array(s, size, &found, &why, &at);
	struct keel_http_item *items = found.v;
	size_t n = found.n;
	if (rc != 0) {
		CHECK(why != NULL);
		CHECK(at <= size);
	}
	size_t prev_end = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		CHECK(items[i].index == i);
		CHECK(items[i].len > 0);
		CHECK(items[i].off >= prev_end);
		CHECK(items[i].off + items[i].len <= size);
		CHECK(!ws(s[items[i].off]) && !ws(s[items[i].off + items[i].len - 1]));
		prev_end = items[i].off + items[i].len;
	}
	struct keel_json_error err;
	if (keel_json_parse(&doc, s, size, &err) == 0 && doc.root->type == KEEL_JSON_ARRAY) {
		CHECK(rc == 0);
		size_t i = 0;
		for (const struct keel_json *e = doc.root->child; e; e = e->next, i++) {
			CHECK(i < n);
			CHECK(items[i].off == e->raw_off);
			CHECK(items[i].len == e->raw_len);
		}
		CHECK(i == n);
	}
	free(items);
	return 0;
}

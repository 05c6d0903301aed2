/*
 * fuzz_ce_binary.c - libFuzzer target for the HTTP binary content mode
 * (src/event/binary_mode.c): headers and a body turned into the envelope
 * Keel logs.
 *
 * The input is a request in small: its first line the Content-Type ("-"
 * for none), then header lines "name:value" up to an empty line, then the
 * body. Either a step refuses with one message naming a header or the
 * body, or the envelope is a JSON object whose members come in strictly
 * increasing byte order of their names, data last; it holds every
 * attribute Keel requires as a string, the tenant read is its "tenant",
 * and its data is the body: the same JSON, or base64 that decodes to the
 * same bytes, or none for an empty body.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/binary_mode.h"
#include "event/media_type.h"
#include "event/json.h"
#include "util.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next line of s[*at..n) as a NUL-terminated copy (a NUL inside ends
 * it, as for a header libmicrohttpd hands over); NULL at the end. */
static char *next_line(const char *s, size_t n, size_t *at)
{
	if (*at >= n)
		return NULL;
	const char *nl = memchr(s + *at, '\n', n - *at);
	size_t end = nl ? (size_t)(nl - s) : n;
	char *line = strndup(s + *at, end - *at);
	*at = nl ? end + 1 : n;
	return line;
}

static int b64_value(char c)
{
	const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(abc, c) : NULL;
	return p ? (int)(p - abc) : -1;
}

static void check_base64(const char *b64, size_t len, const char *body, size_t n)
{
	CHECK(len == (n + 2) / 3 * 4);
	size_t out = 0;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t w = 0;
		int pad = 0;
		for (int k = 0; k < 4; k++) {
			int v = b64[i + k] == '=' ? (pad++, 0) : b64_value(b64[i + k]);
			CHECK(v >= 0);
			w = w << 6 | (uint32_t)v;
		}
		for (int k = 0; k < 3 - pad; k++, out++)
			CHECK(out < n && (unsigned char)body[out] == ((w >> (16 - 8 * k)) & 0xff));
	}
	CHECK(out == n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t at = 0;
	char *ct = next_line(s, size, &at);
	if (!ct)
		return 0;
	struct keel_media_type mt;
	bool json = strcmp(ct, "-") != 0 && keel_media_type_parse(ct, &mt) &&
		    keel_media_type_is_json(&mt);
	struct keel_ce_binary b;
	keel_ce_binary_init(&b);
	bool ok = true;
	char *line;
	while (ok && (line = next_line(s, size, &at)) != NULL) {
		if (!*line) {
			free(line);
			break;
		}
		char *colon = strchr(line, ':');
		if (colon) {
			*colon = 0;
			ok = keel_ce_binary_header(&b, line, colon + 1);
		}
		free(line);
	}
	const char *body = s + (at < size ? at : size);
	size_t blen = size - (size_t)(body - s);
	if (ok)
		ok = keel_ce_binary_attributes(&b, strcmp(ct, "-") ? ct : NULL);
	if (ok)
		ok = keel_ce_binary_data(&b, body, blen, json);
	if (!ok) {
		CHECK(b.err.len > 0 && (strncmp(b.err.data, "header \"", 8) == 0 ||
					strncmp(b.err.data, "body: ", 6) == 0));
		CHECK(memchr(b.err.data, '\n', b.err.len) == NULL);
		keel_ce_binary_free(&b);
		free(ct);
		return 0;
	}
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	struct keel_json_error jerr;
	CHECK(keel_json_parse(&doc, b.json.data, b.json.len, &jerr) == 0);
	CHECK(doc.root->type == KEEL_JSON_OBJECT);
	const struct keel_json *prev = NULL, *d = NULL;
	for (const struct keel_json *m = doc.root->child; m; m = m->next) {
		CHECK(!d); /* data is last */
		if ((m->key_len == 4 && memcmp(m->key, "data", 4) == 0) ||
		    (m->key_len == 11 && memcmp(m->key, "data_base64", 11) == 0)) {
			d = m;
			continue;
		}
		CHECK(m->type == KEEL_JSON_STRING);
		CHECK(!prev || keel_str_cmp(keel_str_make(prev->key, prev->key_len),
					    keel_str_make(m->key, m->key_len)) < 0);
		prev = m;
	}
	static const char *const required[] = {"specversion", "id",   "source",
					       "type",	      "time", "tenant"};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(required); i++) {
		const struct keel_json *v =
		    keel_json_get(doc.root, required[i], strlen(required[i]));
		CHECK(v && v->type == KEEL_JSON_STRING);
	}
	const struct keel_json *t = keel_json_get(doc.root, "tenant", 6);
	CHECK(t->len == b.tenant.len && memcmp(t->str, b.tenant.data, t->len) == 0);
	if (blen == 0) {
		CHECK(!d);
	} else if (json) {
		CHECK(d && d->key_len == 4);
		struct keel_json_doc alone;
		keel_json_doc_init(&alone);
		CHECK(keel_json_parse(&alone, body, blen, &jerr) == 0);
		CHECK(alone.root->type == d->type);
		keel_json_doc_free(&alone);
	} else {
		CHECK(d && d->key_len == 11 && d->type == KEEL_JSON_STRING);
		check_base64(d->str, d->len, body, blen);
	}
	keel_json_doc_free(&doc);
	keel_ce_binary_free(&b);
	free(ct);
	return 0;
}

/*
 * fuzz_tokens.c - libFuzzer target for the token file of keel serve.
 *
 * Whatever the file holds, keel_tokens_parse either takes it or fails with
 * one `line N: ...` message (or "no tokens") and nothing kept. What it takes must say what
 * the file says: every entry has a scope of valid tenant names that it
 * allows (or all tenants), and no hash is given twice.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "util.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct keel_tokens t;
	struct keel_buf err;
	keel_buf_init(&err);
	if (keel_tokens_parse((const char *)data, size, &t, &err) != 0) {
		CHECK(t.n == 0);
		CHECK(err.len > 0 && (strncmp(err.data, "line ", 5) == 0 ||
				      strcmp(err.data, "no tokens in the token file") == 0));
		CHECK(memchr(err.data, '\n', err.len) == NULL);
		keel_buf_free(&err);
		keel_tokens_free(&t);
		return 0;
	}
	CHECK(t.n > 0);
	for (size_t i = 0; i < t.n; i++) {
		const struct keel_token_entry *e = &t.v[i];
		CHECK(e->line >= 1);
		CHECK(e->all || e->ntenants > 0);
		for (size_t k = 0; k < e->ntenants; k++) {
			size_t len = strlen(e->tenants[k]);
			CHECK(keel_tenant_name_ok(e->tenants[k], len));
			CHECK(e->all || keel_token_allows(e, e->tenants[k], len));
		}
		for (size_t j = 0; j < i; j++)
			CHECK(memcmp(t.v[j].hash, e->hash, KEEL_SHA256_LEN) != 0);
	}
	keel_tokens_free(&t);
	keel_buf_free(&err);
	return 0;
}

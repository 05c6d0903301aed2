/*
 * fuzz_envelope.c - libFuzzer target for the envelope rules.
 *
 * Inputs that parse as JSON are read as envelopes. An accepted envelope
 * must satisfy every rule when checked again here, the slow way; a
 * rejected one must carry a message of the documented form, and an id
 * handed out on failure must itself be valid.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/envelope.h"
#include "keel.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_id(struct keel_str id)
{
	CHECK(id.len >= 1 && id.len <= KEEL_ID_MAX);
	for (size_t i = 0; i < id.len; i++)
		CHECK((unsigned char)id.ptr[i] >= 0x20);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct keel_json_doc doc;
	static struct keel_buf msg;
	static int ready;
	if (!ready) {
		keel_json_doc_init(&doc);
		keel_buf_init(&msg);
		ready = 1;
	}
	struct keel_json_error jerr;
	if (keel_json_parse(&doc, (const char *)data, size, &jerr) != 0)
		return 0;
	struct keel_envelope env;
	keel_buf_reset(&msg);
	if (keel_envelope_read(&doc, &env, &msg) == 0) {
		CHECK(msg.len == 0);
		check_id(env.id);
		const struct keel_json *idj = keel_json_get(doc.root, "id", 2);
		CHECK(idj && keel_str_eq(env.id, keel_str_make(idj->str, idj->len)));
		CHECK(env.tenant.len >= 1 && env.tenant.len <= KEEL_TENANT_MAX);
		for (size_t i = 0; i < env.tenant.len; i++)
			CHECK(
			    strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789._-",
				   env.tenant.ptr[i]) != NULL &&
			    env.tenant.ptr[i] != 0);
		CHECK(env.type.len >= 1 && env.type.len <= KEEL_TYPE_MAX);
		const struct keel_json *t = keel_json_get(doc.root, "time", 4);
		int64_t when;
		CHECK(t && keel_time_parse(t->str, t->len, &when, NULL) == 0 &&
		      when == env.time);
		/* data is an object, or absent when binary data_base64
		 * (a string) stands in for it: never both. */
		const struct keel_json *b64 = keel_json_get(doc.root, "data_base64", 11);
		CHECK(env.data == keel_json_get(doc.root, "data", 4));
		CHECK(env.data ? env.data->type == KEEL_JSON_OBJECT && !b64
			       : b64 && b64->type == KEEL_JSON_STRING && b64->len % 4 == 0);
		const struct keel_json *sv = keel_json_get(doc.root, "specversion", 11);
		CHECK(!sv || (sv->type == KEEL_JSON_STRING &&
			      strcmp(sv->str, "1.0") == 0 && sv->len == 3));
	} else {
		CHECK(msg.len > 0);
		CHECK(strncmp(msg.data, "field \"", 7) == 0 ||
		      strcmp(msg.data, "envelope is not a JSON object") == 0);
		if (env.id.ptr)
			check_id(env.id);
		else
			CHECK(strncmp(msg.data, "field \"id\": ", 12) == 0 ||
			      msg.data[0] == 'e');
	}
	return 0;
}

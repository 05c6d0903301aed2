/*
 * fuzz_load.c - libFuzzer target for `keel load` (a dump read back).
 *
 * A dump file is user input: whatever it holds, keel_load must either take
 * it or fail with KEEL_EDUMP and a message naming the line, never crash.
 * What it takes must survive a round trip: dump it, load that dump into a
 * fresh store, dump again - the two dumps are byte-identical.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The dump of s, as a malloc'd buffer. */
static char *dump_of(struct keel_store *s, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	CHECK(f);
	CHECK(keel_dump(s, NULL, NULL, f) == 0);
	CHECK(fclose(f) == 0);
	return text;
}

static int load_from(struct keel_store *s, const char *text, size_t len)
{
	/* fmemopen refuses an empty buffer; an empty dump is an empty file */
	FILE *f = len ? fmemopen((void *)(uintptr_t)text, len, "r") : fopen("/dev/null", "r");
	CHECK(f);
	int rc = keel_load(s, f);
	fclose(f);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct keel_store *s;
	CHECK(keel_store_open("memory:", &s, NULL) == 0);
	int rc = load_from(s, (const char *)data, size);
	if (rc != 0) {
		CHECK(rc == KEEL_EDUMP);
		CHECK(strncmp(keel_store_errmsg(s), "line ", 5) == 0);
		keel_store_close(s);
		return 0;
	}
	size_t len1, len2;
	char *first = dump_of(s, &len1);
	keel_store_close(s);

	CHECK(keel_store_open("memory:", &s, NULL) == 0);
	CHECK(load_from(s, first, len1) == 0);
	char *second = dump_of(s, &len2);
	keel_store_close(s);
	CHECK(len1 == len2 && memcmp(first, second, len1) == 0);
	free(first);
	free(second);
	return 0;
}

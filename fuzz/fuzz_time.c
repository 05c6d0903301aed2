/*
 * fuzz_time.c - libFuzzer target for RFC 3339 parsing and formatting.
 *
 * Every input is parsed as a timestamp. An accepted one must lie in
 * 0001-9999 UTC, format to the canonical form and parse back to the same
 * instant; written with "Z" its date and time of day must survive
 * formatting unchanged (an independent check of the calendar arithmetic).
 * A rejected one must come with a reason. The first eight bytes, read as
 * an int64, are also formatted: any value must fit KEEL_TIME_BUFSZ.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	int64_t t = 0, back = 0;
	const char *why = NULL;
	char buf[KEEL_TIME_BUFSZ + 8];

	if (keel_time_parse(s, size, &t, &why) == 0) {
		CHECK(why == NULL);
		CHECK(t >= INT64_C(-62135596800000000) &&
		      t <= INT64_C(253402300799999999));
		size_t n = keel_time_format(t, buf);
		CHECK(n == 20 || n == 27);
		CHECK(keel_time_parse(buf, n, &back, NULL) == 0 && back == t);
		char last = s[size - 1];
		if (last == 'Z' || last == 'z') {
			for (size_t i = 0; i < 19; i++)
				CHECK(buf[i] == (i == 10 ? 'T' : s[i]));
		}
	} else {
		CHECK(why != NULL && why[0] != 0);
	}

	if (size >= 8) {
		int64_t v;
		memcpy(&v, data, 8);
		memset(buf, 'x', sizeof buf);
		size_t n = keel_time_format(v, buf);
		CHECK(n < KEEL_TIME_BUFSZ && buf[n] == 0 && strlen(buf) == n);
		if (v != KEEL_TIME_INF && v >= INT64_C(-62135596800000000) &&
		    v <= INT64_C(253402300799999999))
			CHECK(keel_time_parse(buf, n, &back, NULL) == 0 && back == v);
	}
	return 0;
}

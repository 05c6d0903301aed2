/*
 * utf8.c - see utf8.h. Whole-string validation: ASCII, by far the common
 * case in subjects and values, is skipped eight bytes at a time; the rest
 * goes through keel_utf8_len one character at a time.
 */
#include "utf8.h"

#include <string.h>

bool keel_utf8_valid(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str, *end = s + n;
	while (s < end) {
		if ((size_t)(end - s) >= 8) {
			uint64_t w;
			memcpy(&w, s, 8);
			if (!(w & UINT64_C(0x8080808080808080))) {
				s += 8;
				continue;
			}
		}
		size_t k = keel_utf8_len(s, end);
		if (!k)
			return false;
		s += k;
	}
	return true;
}
